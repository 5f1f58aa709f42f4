/* mpk_exit.h -- promotion and escape scanning for the exit gate (mpk_exit.c). */
#ifndef FAASTLANE_MPK_EXIT_H
#define FAASTLANE_MPK_EXIT_H

#include "Python.h"

#include <stddef.h>
#include <stdint.h>

/* Inside a domain whose slot is [base, base + size), before the sealed exit
 * gate: `result` if it is shared; else NULL with a shared exception set
 * (error_type for a private result or a private exception of a type that
 * is not built-in), stripped of traceback, context and cause. */
PyObject *_PyMPK_SealedResult(PyObject *result, uintptr_t base, size_t size,
                              PyObject *error_type);

/* A new list of the shared GC-tracked objects that hold a pointer into
 * [base, base + size), or NULL with an exception set. */
PyObject *_PyMPK_SharedReferrers(uintptr_t base, size_t size);

/* A new list of the entries of a dict, list, tuple or set that hold no object
 * of a slot other than [base, base + size) -- dict entries as (key, value)
 * pairs.  Other domains' objects are skipped by address, never read. */
PyObject *_PyMPK_VisibleItems(PyObject *container, uintptr_t base, size_t size);

/* A new copy of a JSON value's containers (exact dicts and lists, made by the
 * calling thread's allocator: inside a domain, its private heap) sharing its
 * immutable leaves (exact str, int, float, bool, None).  NULL with TypeError
 * for anything else: the caller falls back to a slower copy. */
PyObject *_PyMPK_CopyContainers(PyObject *value);

/* A new deep copy of a plain JSON value (exact dict with str keys, list,
 * tuple -- copied as a list, as JSON does --, str, int, float, bool, None),
 * made by the calling thread's allocator: containers always, leaves only
 * when they live in a private heap.  Equal to json.loads(json.dumps(value))
 * for such values.  NULL with TypeError for anything else (a subclass, a
 * Decimal, a non-str key) or RecursionError for a cycle: the caller falls
 * back to the JSON round trip, which converts or names the problem. */
PyObject *_PyMPK_PromoteJSON(PyObject *value);

/* Inside the domain of `slot` (created as `generation`), the hand-off key
 * granted: a function's own copy of its input, as _PyMPK_PromoteJSON, except
 * that a leaf in the hand-off heap is copied once per domain and its twin
 * reused by the domain's later copies (mpk_exit.c, "Leaf twins"). */
PyObject *_PyMPK_CopyIn(PyObject *input, int slot, uint32_t generation);

/* A new deep copy of a plain JSON value in which every container and every
 * leaf but the immortal ones is new, made by the calling thread's allocator:
 * a value moved into the hand-off domain's heap keeps nothing in key 0. */
PyObject *_PyMPK_DeepCopyJSON(PyObject *value);

/* In a sealed invoker inside a function's domain: rebuild the plain JSON
 * `value` (the function's result) straight in the hand-off domain's heap, the
 * hand-off key granted for the copy only, and keep it for the gate
 * (_PyMPK_TakeHandedOff).  1 when handed off; 0 when there is no hand-off
 * domain or the value is not plain JSON (the caller promotes it otherwise);
 * -1 with an exception set. */
int _PyMPK_HandOff(PyObject *value);
/* The value this thread handed off last (a new reference), or NULL; called
 * by the gate once outside the domain, where the hand-off key is held. */
PyObject *_PyMPK_TakeHandedOff(void);

#endif /* !FAASTLANE_MPK_EXIT_H */
