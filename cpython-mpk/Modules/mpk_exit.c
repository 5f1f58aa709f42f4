/* mpk_exit.c -- what a function's exit gate needs from CPython's internals.
 *
 * Promotion: a function's result is made in its private heap; before the exit
 * gate the Orchestrator rebuilds it in the shared heap.  That needs a thread
 * that can still READ the domain (PKRU grants it) but ALLOCATES in the shared
 * heap: _PyMPK_CallShared detaches the thread's heap for one call.
 *
 * Escapes: a private object that shared state still references after the
 * function returned (re's cache, a library's global list) would be read by
 * the next thread that walks that state -- and fault.  _PyMPK_SharedReferrers
 * lists the shared GC-tracked objects holding a pointer into a slot.  It reads
 * only shared objects (each one's tp_traverse hands over its pointers) and
 * compares addresses; it never dereferences a pointer into the slot, so it is
 * safe on any thread, inside the domain or not.
 *
 * Design: PRIVATE_HEAPS.md section 5.
 */
#ifdef Py_BUILD_CORE_BUILTIN
#  include "Python.h"             // first: it sets the feature macros
#endif
#include "mpk_exit.h"

#ifdef Py_BUILD_CORE_BUILTIN

#include "pycore_gc.h"            // PyGC_Head, struct _gc_runtime_state
#include "pycore_interp.h"        // PyInterpreterState.gc
#include "pycore_mpk_heap.h"      // _PyMPK_ThreadHeap
#include "pycore_pystate.h"       // _PyInterpreterState_GET()

PyObject *
_PyMPK_CallShared(PyObject *callable, PyObject *const *args, Py_ssize_t nargs)
{
    struct _PyMPK_Heap *heap = _PyMPK_ThreadHeap;
    _PyMPK_ThreadHeap = NULL;
    PyObject *result = PyObject_Vectorcall(callable, args, nargs, NULL);
    _PyMPK_ThreadHeap = heap;
    return result;
}

typedef struct {
    uintptr_t base;
    uintptr_t size;
    Py_ssize_t hits;
} slot_range;

static int
count_hit(PyObject *referent, void *arg)
{
    slot_range *range = (slot_range *)arg;
    if ((uintptr_t)referent - range->base < range->size) {
        range->hits++;
    }
    return 0;
}

/* Objects that cannot have come to point into a slot since they were made:
 * a shared tuple or frozenset is immutable, and built-in functions and
 * descriptors never change what they refer to.  Skipping them halves the
 * scan of an interpreter that imported numpy and scikit-learn. */
static int
immutable_referrer(PyTypeObject *type)
{
    return type == &PyTuple_Type || type == &PyFrozenSet_Type
        || type == &PyCFunction_Type || type == &PyCMethod_Type
        || type == &PyWrapperDescr_Type || type == &PyGetSetDescr_Type
        || type == &PyMethodDescr_Type || type == &PyMemberDescr_Type
        || type == &PyClassMethodDescr_Type || type == &PyCode_Type;
}

/* A function's assignable fields, read directly: cheaper than its traverse,
 * which also visits what cannot change (globals, builtins, closure tuple). */
static void
check_function(PyFunctionObject *f, slot_range *range)
{
    PyObject *fields[] = {f->func_code, f->func_defaults, f->func_kwdefaults,
                          f->func_dict, f->func_doc, f->func_module,
                          f->func_annotations, f->func_name, f->func_qualname,
                          f->func_typeparams};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        (void)count_hit(fields[i], range);
    }
}

/* Append `op` to `found` if it holds a pointer into the range; -1 on error. */
static int
check_referrer(PyObject *op, slot_range *range, PyObject *found)
{
    PyTypeObject *type = Py_TYPE(op);
    if (type->tp_traverse == NULL || op == found || immutable_referrer(type)) {
        return 0;
    }
    range->hits = 0;
    if (PyDict_Check(op)) {
        /* A dict's traverse reads its keys table: one in a slot is itself a
           pointer into private memory -- this domain's (an escape), or
           another's, which this thread may not read at all. */
        PyDictObject *mp = (PyDictObject *)op;
        const void *tables[] = {mp->ma_keys, mp->ma_values};
        for (size_t i = 0; i < 2; i++) {
            if (_PyMPK_InHeaps(tables[i])) {
                count_hit((PyObject *)tables[i], range);
                return range->hits ? PyList_Append(found, op) : 0;
            }
        }
    }
    if (type == &PyFunction_Type) {
        check_function((PyFunctionObject *)op, range);
    }
    else {
        (void)type->tp_traverse(op, count_hit, range);
    }
    return range->hits ? PyList_Append(found, op) : 0;
}

PyObject *
_PyMPK_SharedReferrers(uintptr_t base, size_t size)
{
    PyInterpreterState *interp = _PyInterpreterState_GET();
    struct _gc_runtime_state *gcstate = &interp->gc;
    slot_range range = {base, size, 0};
    /* Allocated shared even when called inside a domain: the caller may keep it. */
    struct _PyMPK_Heap *heap = _PyMPK_ThreadHeap;
    _PyMPK_ThreadHeap = NULL;
    PyObject *found = PyList_New(0);
    if (found == NULL) {
        goto done;
    }
    /* The interpreter's generations hold only shared objects (patch 0002
     * links by address).  Appending never collects, so the lists stay put. */
    for (int i = 0; i <= NUM_GENERATIONS; i++) {
        PyGC_Head *head = i < NUM_GENERATIONS
            ? &gcstate->generations[i].head
            : &gcstate->permanent_generation.head;
        for (PyGC_Head *gc = _PyGCHead_NEXT(head); gc != head;
             gc = _PyGCHead_NEXT(gc)) {
            if (check_referrer(_Py_FROM_GC(gc), &range, found) < 0) {
                Py_CLEAR(found);
                goto done;
            }
        }
    }
done:
    _PyMPK_ThreadHeap = heap;
    return found;
}

#else /* !Py_BUILD_CORE_BUILTIN: an ordinary extension for tests */

static PyObject *
refuse(void)
{
    PyErr_SetString(PyExc_RuntimeError,
                    "this _faastlane was built as an extension module: only the "
                    "cpython-mpk runtime has private heaps");
    return NULL;
}

PyObject *
_PyMPK_CallShared(PyObject *callable, PyObject *const *args, Py_ssize_t nargs)
{
    (void)callable;
    (void)args;
    (void)nargs;
    return refuse();
}

PyObject *
_PyMPK_SharedReferrers(uintptr_t base, size_t size)
{
    (void)base;
    (void)size;
    return refuse();
}

#endif /* Py_BUILD_CORE_BUILTIN */
