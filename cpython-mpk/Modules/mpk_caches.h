/* mpk_caches.h -- the standard library's process-wide caches, per function
 * (mpk_caches.c). */
#ifndef FAASTLANE_MPK_CACHES_H
#define FAASTLANE_MPK_CACHES_H

#include "Python.h"

/* From now on, function code (a thread allocating in a private heap) calling
 * an lru_cache wrapper of `lru_wrapper_type` (functools._lru_cache_wrapper)
 * or a function of `struct_module` (_struct) uses its own twin of the cache.
 * 0, or -1 with an exception set (an unexpected layout changes nothing). */
int _PyMPK_CachesPerFunction(PyObject *lru_wrapper_type, PyObject *struct_module);

/* PerFunctionDict(shared): a mapping forwarding to the calling function's
 * own copy of `shared`, or to `shared` outside every private heap. */
extern PyTypeObject _PyMPK_PerFunctionDictType;

#endif /* FAASTLANE_MPK_CACHES_H */
