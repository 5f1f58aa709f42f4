/* mpk_exit.c -- what a function's exit gate needs from CPython's internals.
 *
 * Promotion: a function's result is made in its private heap; before the exit
 * gate the Orchestrator rebuilds it in the shared heap.  That needs a thread
 * that can still READ the domain (PKRU grants it) but ALLOCATES in the shared
 * heap: _PyMPK_CallShared (mpk_guard.c) detaches the thread's heap for one call.
 *
 * Escapes: a private object that shared state still references after the
 * function returned (re's cache, a library's global list) would be read by
 * the next thread that walks that state -- and fault.  _PyMPK_SharedReferrers
 * lists the shared GC-tracked objects holding a pointer into a slot.  It reads
 * only shared objects (each one's tp_traverse hands over its pointers) and
 * compares addresses; it never dereferences a pointer into the slot, so it is
 * safe on any thread, inside the domain or not.
 *
 * Results are promoted in C when they are plain JSON values (_PyMPK_PromoteJSON):
 * the containers and the private leaves are copied, shared leaves kept.
 *
 * Input copies: a function gets its own copy of its input, made in its heap,
 * so that what it puts into its event stays private and nothing shared
 * changes.  Shared leaves are immutable and stay shared
 * (_PyMPK_CopyContainers); leaves in the hand-off heap, which the function
 * cannot read, are copied once per domain and reused (_PyMPK_CopyIn).
 *
 * Design: PRIVATE_HEAPS.md section 5.
 */
#ifdef Py_BUILD_CORE_BUILTIN
#  include "Python.h"             // first: it sets the feature macros
#endif
#include "mpk_exit.h"

#ifdef Py_BUILD_CORE_BUILTIN

#include "pycore_dict.h"          // DK_UNICODE_ENTRIES()
#include "pycore_gc.h"            // PyGC_Head, struct _gc_runtime_state
#include "pycore_interp.h"        // PyInterpreterState.gc
#include "pycore_list.h"          // _PyList_ITEMS()
#include "pycore_mpk_heap.h"      // _PyMPK_ThreadHeap
#include "faastlane_mpk.h"        // _PyMPK_HandoffSlot(), _PyMPK_OpenHandoff()
#include "mpk_twins.h"            // _PyMPK_TwinBucket()
#include "pycore_pystate.h"       // _PyInterpreterState_GET()
#include "pycore_setobject.h"     // _PySet_NextEntry()
#include "pycore_tuple.h"         // _PyTuple_ITEMS()
#include "pycore_unicodeobject.h" // _PyUnicode_Copy()

#include <string.h>

static int
shared_leaf(PyObject *v)
{
    PyTypeObject *t = Py_TYPE(v);
    return v == Py_None || t == &PyUnicode_Type || t == &PyLong_Type
        || t == &PyFloat_Type || t == &PyBool_Type;
}

typedef PyObject *(*copy_fn)(PyObject *);

/* copy_dict for a compact dict of exact str keys (every JSON object the
 * runtime or a parser made): its table cloned by PyDict_Copy -- one memcpy,
 * no hashing or probing -- then each entry's key and value swapped for their
 * copies in place.  A key's copy has the same text and hash, so the cloned
 * index stays right. */
static PyObject *
clone_dict(PyObject *value, copy_fn copy_key, copy_fn copy_item)
{
    PyObject *copy = PyDict_Copy(value);
    if (copy == NULL) {
        return NULL;
    }
    PyDictKeysObject *keys = ((PyDictObject *)copy)->ma_keys;
    PyDictUnicodeEntry *entries = DK_UNICODE_ENTRIES(keys);
    for (Py_ssize_t i = 0; i < keys->dk_nentries; i++) {
        PyObject *k = copy_key(entries[i].me_key);
        if (k == NULL) {
            Py_DECREF(copy);   /* each entry owns what it holds, copied or not */
            return NULL;
        }
        Py_SETREF(entries[i].me_key, k);
        PyObject *c = copy_item(entries[i].me_value);
        if (c == NULL) {
            Py_DECREF(copy);
            return NULL;
        }
        Py_SETREF(entries[i].me_value, c);
    }
    return copy;
}

/* A new dict: each key through copy_key, each value through copy_item (both
 * return a new reference, or NULL with an exception set). */
static PyObject *
copy_dict(PyObject *value, copy_fn copy_key, copy_fn copy_item)
{
    PyDictObject *mp = (PyDictObject *)value;
    PyObject *key, *item;
    Py_ssize_t pos = 0;

    if (mp->ma_values == NULL && mp->ma_used > 0 && DK_IS_UNICODE(mp->ma_keys)
        && mp->ma_used == mp->ma_keys->dk_nentries)
    {
        return clone_dict(value, copy_key, copy_item);
    }
    PyObject *copy = _PyDict_NewPresized(PyDict_GET_SIZE(value));
    while (copy != NULL && PyDict_Next(value, &pos, &key, &item)) {
        PyObject *k = copy_key(key);
        PyObject *c = k == NULL ? NULL : copy_item(item);
        if (c == NULL || PyDict_SetItem(copy, k, c) < 0) {
            Py_XDECREF(k);
            Py_XDECREF(c);
            Py_CLEAR(copy);
            break;
        }
        Py_DECREF(k);
        Py_DECREF(c);
    }
    return copy;
}

/* A new list of copy_item(items[i]).  Nothing below runs Python code: the
 * container the items belong to cannot change size meanwhile. */
static PyObject *
copy_items(PyObject *const *items, Py_ssize_t n, copy_fn copy_item)
{
    PyObject *copy = PyList_New(n);
    for (Py_ssize_t i = 0; copy != NULL && i < n; i++) {
        PyObject *c = copy_item(items[i]);
        if (c == NULL) {
            Py_CLEAR(copy);
            break;
        }
        PyList_SET_ITEM(copy, i, c);
    }
    return copy;
}

static PyObject *
keep_json_key(PyObject *key)
{
    if (!shared_leaf(key)) {
        PyErr_Format(PyExc_TypeError, "not a JSON key: %T", key);
        return NULL;
    }
    return Py_NewRef(key);
}

PyObject *
_PyMPK_CopyContainers(PyObject *value)
{
    PyObject *copy = NULL;

    if (shared_leaf(value)) {
        return Py_NewRef(value);
    }
    if (Py_EnterRecursiveCall(" while copying a function's input")) {
        return NULL;
    }
    if (PyDict_CheckExact(value)) {
        copy = copy_dict(value, keep_json_key, _PyMPK_CopyContainers);
    }
    else if (PyList_CheckExact(value)) {
        copy = copy_items(_PyList_ITEMS(value), PyList_GET_SIZE(value),
                          _PyMPK_CopyContainers);
    }
    else {
        PyErr_Format(PyExc_TypeError, "not a JSON value: %T", value);
    }
    Py_LeaveRecursiveCall();
    return copy;
}

/* A new leaf equal to `v`, made by the calling thread's allocator. */
static PyObject *
fresh_leaf(PyObject *v)
{
    if (PyUnicode_CheckExact(v)) {
        PyObject *copy = _PyUnicode_Copy(v);
        if (copy != NULL) {
            /* Same text, same hash: a dict the copy is a key of need not
             * hash it again (siphash was a tenth of a hand-off's cost). */
            ((PyASCIIObject *)copy)->hash = ((PyASCIIObject *)v)->hash;
        }
        return copy;
    }
    if (PyLong_CheckExact(v)) {
        return _PyLong_Copy((PyLongObject *)v);
    }
    return PyFloat_FromDouble(PyFloat_AS_DOUBLE(v));
}

/* A private leaf's shared twin; a shared one is returned as is. */
static PyObject *
promote_leaf(PyObject *v)
{
    return _PyMPK_InHeaps(v) ? fresh_leaf(v) : Py_NewRef(v);
}

/* Every leaf but the immortal ones (small ints, interned strings): what the
 * value holds is then all in the calling thread's heap. */
static PyObject *
copy_leaf(PyObject *v)
{
    return _Py_IsImmortal(v) ? Py_NewRef(v) : fresh_leaf(v);
}

/* Keys copied so far by the copy running on this thread: the same field name
 * in every record of a list is copied once (a parsed document's records
 * share their key objects; equal text is as good). */
static _Thread_local PyObject *key_memo;

static PyObject *
str_key(PyObject *key, copy_fn copy)
{
    PyObject *copied;

    if (!PyUnicode_CheckExact(key)) {
        PyErr_Format(PyExc_TypeError, "not a str key: %T", key);
        return NULL;
    }
    if (key_memo == NULL) {
        return copy(key);
    }
    if (PyDict_GetItemRef(key_memo, key, &copied) != 0) {
        return copied;   /* the copy made before, or NULL on error */
    }
    copied = copy(key);
    if (copied != NULL && copied != key
        && PyDict_SetItem(key_memo, key, copied) < 0)
    {
        Py_CLEAR(copied);
    }
    return copied;
}

/* Run a whole copy with a key memo (the outermost call makes and drops it;
 * nested values reuse it). */
static PyObject *
with_key_memo(PyObject *value, copy_fn walk)
{
    PyObject *copy;

    if (key_memo != NULL) {
        return walk(value);
    }
    key_memo = PyDict_New();
    if (key_memo == NULL) {
        return NULL;
    }
    copy = walk(value);
    Py_CLEAR(key_memo);
    return copy;
}

static PyObject *
promote_str_key(PyObject *key)
{
    return str_key(key, promote_leaf);
}

static PyObject *
copy_str_key(PyObject *key)
{
    return str_key(key, copy_leaf);
}

/* A plain JSON value rebuilt: containers (tuples become lists) by this
 * function, leaves by `leaf`, keys by `key`, nested values by `again`. */
static PyObject *
rebuild_json(PyObject *value, copy_fn leaf, copy_fn key, copy_fn again)
{
    PyObject *copy = NULL;

    if (value == Py_None || Py_IS_TYPE(value, &PyBool_Type)) {
        return Py_NewRef(value);  /* immortal singletons */
    }
    if (shared_leaf(value)) {
        return leaf(value);
    }
    if (Py_EnterRecursiveCall(" while copying a JSON value")) {
        return NULL;
    }
    if (PyDict_CheckExact(value)) {
        copy = copy_dict(value, key, again);
    }
    else if (PyList_CheckExact(value)) {
        copy = copy_items(_PyList_ITEMS(value), PyList_GET_SIZE(value), again);
    }
    else if (PyTuple_CheckExact(value)) {
        copy = copy_items(_PyTuple_ITEMS(value), PyTuple_GET_SIZE(value), again);
    }
    else {
        PyErr_Format(PyExc_TypeError, "not a plain JSON value: %T", value);
    }
    Py_LeaveRecursiveCall();
    return copy;
}

static PyObject *
promote_walk(PyObject *value)
{
    return rebuild_json(value, promote_leaf, promote_str_key, promote_walk);
}

static PyObject *
deep_copy_walk(PyObject *value)
{
    return rebuild_json(value, copy_leaf, copy_str_key, deep_copy_walk);
}

PyObject *
_PyMPK_PromoteJSON(PyObject *value)
{
    return with_key_memo(value, promote_walk);
}

/* Leaf twins.  The leaves of a function's input live in the hand-off heap,
 * which the function cannot read: its copy needs its own.  A Map hands the
 * same portfolio to fifty invocations of one function; copying its strings
 * and numbers fifty times was most of what the hand-off cost FINRA.  Leaves
 * are immutable, so each hand-off leaf is copied into a domain's heap once
 * and the twin is reused by the domain's later copies (containers are always
 * new: a function may change its event).  The table of each slot lies in
 * static memory (pages are touched only by the slots that copy in), not in
 * the domain's heap: a domain's successor in the slot must still read it, to
 * release the hand-off leaves the earlier entries hold (their twins went with
 * the earlier heap).  Bounded: when half full it is emptied, so a domain
 * keeps at most LEAF_TWINS / 2 hand-off leaves alive, none longer than
 * LEAF_TWIN_MAX characters. */
#define LEAF_TWINS 8192
#define LEAF_TWIN_MAX 1024

typedef struct {
    uint32_t generation;    /* of the domain whose twins the entries hold */
    uint32_t used;
    _PyMPK_TwinEntry entries[LEAF_TWINS];
} leaf_twins;

static leaf_twins leaf_tables[_PyMPK_SLOT_COUNT];

/* The table the copy running on this thread uses, and the hand-off slot's
 * base address. */
static _Thread_local leaf_twins *copy_in_twins;
static _Thread_local uintptr_t copy_in_from;

/* Release every entry's hand-off leaf; its twin too when it is still alive
 * (the caller runs in the domain that made it). */
static void
leaf_twins_empty(leaf_twins *t, int twins_alive)
{
    for (size_t i = 0; t->used != 0 && i < LEAF_TWINS; i++) {
        _PyMPK_TwinEntry *e = &t->entries[i];
        if (e->original != NULL) {
            Py_DECREF(e->original);
            if (twins_alive) {
                Py_DECREF(e->twin);
            }
            e->original = e->twin = NULL;
            t->used--;
        }
    }
}

static int
leaf_twin_worth_keeping(PyObject *v)
{
    return !PyUnicode_CheckExact(v) || PyUnicode_GET_LENGTH(v) <= LEAF_TWIN_MAX;
}

/* A leaf of a function's input: a hand-off leaf's twin (a new reference),
 * any other leaf as it is (shared and immutable). */
static PyObject *
copy_in_leaf(PyObject *v)
{
    if (!_PyMPK_InHeaps(v)) {
        return Py_NewRef(v);
    }
    if ((uintptr_t)v - copy_in_from >= _PyMPK_SLOT_SIZE) {
        return fresh_leaf(v);
    }
    /* A hit reads the table and the twin only: the hand-off leaf may be in
     * another core's cache. */
    leaf_twins *t = copy_in_twins;
    _PyMPK_TwinEntry *e = _PyMPK_TwinBucket(t->entries, LEAF_TWINS, v);
    if (e->original == v) {
        return Py_NewRef(e->twin);
    }
    PyObject *twin = fresh_leaf(v);
    if (twin == NULL || !leaf_twin_worth_keeping(v)) {
        return twin;
    }
    if (2 * (t->used + 1) > LEAF_TWINS) {
        leaf_twins_empty(t, 1);
        e = _PyMPK_TwinBucket(t->entries, LEAF_TWINS, v);
    }
    e->original = Py_NewRef(v);
    e->twin = Py_NewRef(twin);
    t->used++;
    return twin;
}

static PyObject *
copy_in_key(PyObject *key)
{
    if (!PyUnicode_CheckExact(key)) {
        PyErr_Format(PyExc_TypeError, "not a str key: %T", key);
        return NULL;
    }
    return copy_in_leaf(key);
}

static PyObject *
copy_in_walk(PyObject *value)
{
    return rebuild_json(value, copy_in_leaf, copy_in_key, copy_in_walk);
}

PyObject *
_PyMPK_CopyIn(PyObject *input, int slot, uint32_t generation)
{
    int from = _PyMPK_HandoffSlot();
    PyObject *copy;

    if (from < 0 || slot < 0 || slot >= _PyMPK_SLOT_COUNT) {
        return _PyMPK_PromoteJSON(input);
    }
    leaf_twins *t = &leaf_tables[slot];
    if (t->generation != generation) {
        /* The slot's earlier domain is gone, and its heap with the twins. */
        leaf_twins_empty(t, 0);
        t->generation = generation;
    }
    copy_in_twins = t;
    copy_in_from = _PyMPK_SlotBase(from);
    copy = copy_in_walk(input);
    copy_in_twins = NULL;
    return copy;
}

PyObject *
_PyMPK_DeepCopyJSON(PyObject *value)
{
    return with_key_memo(value, deep_copy_walk);
}

/* The result a sealed invoker handed off (_PyMPK_HandOff), already in the
 * hand-off domain's heap, until the gate that ran it takes it. */
static _Thread_local PyObject *tls_handed_off;

int
_PyMPK_HandOff(PyObject *value)
{
    int slot = _PyMPK_HandoffSlot();
    struct _PyMPK_Heap *heap = _PyMPK_ThreadHeap, *target;
    PyObject *copy;

    if (slot < 0 || _PyMPK_SealedSlot() < 0 || _PyMPK_CurrentSlot() < 0) {
        return 0;
    }
    target = __atomic_load_n(&_PyMPK_Heaps[slot], __ATOMIC_ACQUIRE);
    if (target == NULL) {
        return 0;
    }
    /* No Python code runs from here to the close: a plain JSON value is
     * rebuilt in C, its private leaves copied, the shared ones kept. */
    _PyMPK_OpenHandoff(1);
    _PyMPK_ThreadHeap = target;
    copy = _PyMPK_PromoteJSON(value);
    if (copy != NULL) {
        Py_XSETREF(tls_handed_off, copy);
    }
    _PyMPK_ThreadHeap = heap;
    _PyMPK_OpenHandoff(0);
    if (copy == NULL) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)
            || PyErr_ExceptionMatches(PyExc_RecursionError))
        {
            PyErr_Clear();
            return 0;
        }
        return -1;
    }
    return 1;
}

PyObject *
_PyMPK_TakeHandedOff(void)
{
    PyObject *value = tls_handed_off;
    tls_handed_off = NULL;
    return value;
}

static int
in_range(const void *p, uintptr_t base, size_t size)
{
    return (uintptr_t)p - base < size;
}

/* Inside the domain, before the sealed exit gate: what leaves must be shared.
 * A private result is dropped here (where it may be read) and refused; a
 * private exception is replaced by a shared one carrying its text (the same
 * built-in type when it takes one argument, else error_type); and any
 * exception leaves without traceback, context or cause, which were made
 * inside.  Only the top-level object is checked: the caller promotes by
 * value (private_heaps.py) and a private object nested in a shared one still
 * faults whoever reads it outside. */
PyObject *
_PyMPK_SealedResult(PyObject *result, uintptr_t base, size_t size,
                    PyObject *error_type)
{
    struct _PyMPK_Heap *heap = _PyMPK_ThreadHeap;
    PyObject *exc;

    if (result != NULL && !in_range(result, base, size)) {
        return result;
    }
    _PyMPK_ThreadHeap = NULL;   /* what is made from here on is shared */
    if (result != NULL) {
        PyErr_Format(error_type, "a sealed call returned a private %.100s "
                     "object: only shared objects leave a domain (build the "
                     "result with call_shared)", Py_TYPE(result)->tp_name);
        exc = PyErr_GetRaisedException();
        _PyMPK_ThreadHeap = heap;   /* its finalizers run as the function's */
        Py_DECREF(result);
        _PyMPK_ThreadHeap = NULL;
    }
    else {
        exc = PyErr_GetRaisedException();
    }
    if (exc != NULL && in_range(exc, base, size)) {
        PyTypeObject *type = Py_TYPE(exc);
        PyObject *text = PyObject_Str(exc);
        PyObject *copy = NULL;
        if (text == NULL) {
            PyErr_Clear();
            text = PyUnicode_FromString("");
        }
        if (text != NULL && !in_range(type, base, size)
            && !(type->tp_flags & Py_TPFLAGS_HEAPTYPE))
        {
            copy = PyObject_CallOneArg((PyObject *)type, text);
        }
        else if (text != NULL) {
            PyObject *message = PyUnicode_FromFormat("%.100s: %U", type->tp_name,
                                                     text);
            if (message != NULL) {
                copy = PyObject_CallOneArg(error_type, message);
                Py_DECREF(message);
            }
        }
        Py_XDECREF(text);
        if (copy == NULL) {
            copy = PyErr_GetRaisedException();   /* made shared, too */
        }
        _PyMPK_ThreadHeap = heap;
        Py_SETREF(exc, copy);
        _PyMPK_ThreadHeap = NULL;
    }
    if (exc != NULL) {
        PyException_SetTraceback(exc, Py_None);
        PyException_SetContext(exc, NULL);
        PyException_SetCause(exc, NULL);
    }
    _PyMPK_ThreadHeap = heap;
    PyErr_SetRaisedException(exc);
    return NULL;
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

/* Objects whose traverse follows memory of their own that may lie in a
 * private heap: an lru_cache wrapper walks its linked list, whose links are
 * made wherever the call that cached them ran (seen under QEMU: a function's
 * cached results faulted the next function's scan).  Its cache dict is a
 * tracked object of its own and is scanned as such, so nothing is missed. */
static int
follows_private_links(PyTypeObject *type)
{
    return strcmp(type->tp_name, "functools._lru_cache_wrapper") == 0;
}

/* Append `op` to `found` if it holds a pointer into the range; -1 on error. */
static int
check_referrer(PyObject *op, slot_range *range, PyObject *found)
{
    PyTypeObject *type = Py_TYPE(op);
    if (type->tp_traverse == NULL || op == found || immutable_referrer(type)
        || follows_private_links(type)) {
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

/* Whether p lies in a slot other than [base, base + size). */
static inline int
foreign(const void *p, uintptr_t base, size_t size)
{
    return _PyMPK_InHeaps(p) && (uintptr_t)p - base >= size;
}

static int
append_visible(PyObject *out, PyObject *item)
{
    return PyList_Append(out, item);
}

PyObject *
_PyMPK_VisibleItems(PyObject *container, uintptr_t base, size_t size)
{
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        return NULL;
    }
    int failed = 0;
    if (PyDict_Check(container)) {
        PyDictObject *mp = (PyDictObject *)container;
        if (foreign(mp->ma_keys, base, size) || foreign(mp->ma_values, base, size)) {
            return out;
        }
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        /* Borrowed pointers: PyDict_Next reads the table, not the objects. */
        while (!failed && PyDict_Next(container, &pos, &key, &value)) {
            if (foreign(key, base, size) || foreign(value, base, size)) {
                continue;
            }
            PyObject *pair = PyTuple_Pack(2, key, value);
            failed = pair == NULL || append_visible(out, pair) < 0;
            Py_XDECREF(pair);
        }
    }
    else if (PyList_Check(container) || PyTuple_Check(container)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(container);
        PyObject **items = PySequence_Fast_ITEMS(container);
        for (Py_ssize_t i = 0; !failed && i < n; i++) {
            if (!foreign(items[i], base, size)) {
                failed = append_visible(out, items[i]) < 0;
            }
        }
    }
    else if (PyAnySet_Check(container)) {
        Py_ssize_t pos = 0;
        PyObject *key;
        Py_hash_t hash;
        while (!failed && _PySet_NextEntry(container, &pos, &key, &hash)) {
            if (!foreign(key, base, size)) {
                failed = append_visible(out, key) < 0;
            }
        }
    }
    else {
        PyErr_Format(PyExc_TypeError, "visible_items() takes a dict, list, tuple "
                     "or set, not %.100s", Py_TYPE(container)->tp_name);
        failed = 1;
    }
    if (failed) {
        Py_CLEAR(out);
    }
    return out;
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
_PyMPK_SharedReferrers(uintptr_t base, size_t size)
{
    (void)base;
    (void)size;
    return refuse();
}

/* No private heaps here: nothing a call returns is private. */
PyObject *
_PyMPK_SealedResult(PyObject *result, uintptr_t base, size_t size,
                    PyObject *error_type)
{
    (void)base;
    (void)size;
    (void)error_type;
    return result;
}

PyObject *
_PyMPK_VisibleItems(PyObject *container, uintptr_t base, size_t size)
{
    (void)container;
    (void)base;
    (void)size;
    return refuse();
}

PyObject *
_PyMPK_CopyContainers(PyObject *value)
{
    (void)value;
    return refuse();
}

PyObject *
_PyMPK_PromoteJSON(PyObject *value)
{
    (void)value;
    return refuse();
}

PyObject *
_PyMPK_DeepCopyJSON(PyObject *value)
{
    (void)value;
    return refuse();
}

PyObject *
_PyMPK_CopyIn(PyObject *input, int slot, uint32_t generation)
{
    (void)input;
    (void)slot;
    (void)generation;
    return refuse();
}

int
_PyMPK_HandOff(PyObject *value)
{
    (void)value;
    return 0;
}

PyObject *
_PyMPK_TakeHandedOff(void)
{
    return NULL;
}

#endif /* Py_BUILD_CORE_BUILTIN */
