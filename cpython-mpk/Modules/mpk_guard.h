/* mpk_guard.h -- the write guard's module side (mpk_guard.c).
 *
 * The interpreter's side (the checks in dict, list, set, setattr, cells and
 * frames) is Include/internal/pycore_mpk_guard.h, added by patch 0014. */
#ifndef FAASTLANE_MPK_GUARD_H
#define FAASTLANE_MPK_GUARD_H

#include "Python.h"

/* The exception a refused store raises (set by PyInit__faastlane). */
extern PyObject *_PyMPK_SharedWriteError;

/* Mark `op` read-only to function code -- with `code_only`, a namespace
 * dict where only stores binding code are refused; `label` names it in
 * refusals.  0, or -1 with an exception set. */
int _PyMPK_Freeze(PyObject *op, PyObject *label, int code_only);
Py_ssize_t _PyMPK_FrozenCount(void);

/* Let sealed code run `callable` through call_shared. */
int _PyMPK_RegisterBroker(PyObject *callable);

/* The name a sealed slot's refusals give (the function's). */
int _PyMPK_NameSlot(int slot, PyObject *name);

/* Whether the calling thread may `what` (get from, put into) the channel
 * `op`: function code only its own.  0, or -1 with SharedWriteError set. */
int _PyMPK_GuardChannel(PyObject *op, const char *what);

/* queue.SimpleQueue's get/put (and _nowait) ask _PyMPK_GuardChannel first
 * (mpk_channels.c).  0, or -1 with an exception set. */
int _PyMPK_GuardQueueType(PyObject *type);

/* call_shared: `callable(*args)` allocating in the shared heap.  From a
 * sealed thread only a registered callable, brokered (pycore_mpk_guard.h). */
PyObject *_PyMPK_CallShared(PyObject *callable, PyObject *const *args,
                            Py_ssize_t nargs);

#endif /* FAASTLANE_MPK_GUARD_H */
