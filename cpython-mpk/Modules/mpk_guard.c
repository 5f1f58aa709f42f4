/* mpk_guard.c -- shared code is read-only to function code.
 *
 * The interpreter asks (Include/internal/pycore_mpk_guard.h, patch 0014)
 * before a guarded thread -- one running sealed function code -- stores into
 * a module, a function, a class, a cell, or an object the runtime froze;
 * this file answers, raising SharedWriteError naming the function and what
 * it tried to change.  It also holds what decides whether function code can
 * make shared objects at all: call_shared, open to sealed code only for the
 * operations the runtime registered, and the trip that ends such an
 * operation's shared allocation as soon as private code starts running in it.
 *
 * A guarded thread with no private heap -- the runtime's library loader (a
 * heapless domain running libraries' module bodies, the imports functions
 * trigger included) -- makes shared objects by design, so "its own"
 * cannot be told by address: to it, only what the runtime froze is read-only
 * (the code of every module loaded before), and what it makes is its own.
 *
 * Why: protection keys stop loads and stores into another domain, but the
 * object graph is shared.  Code a function could plant in a shared module
 * (or a shared object it could make through call_shared) would run in the
 * next function's thread, inside that function's domain.  Design:
 * docs/security.md, "Shared code is read-only to function code".
 *
 * Everything here runs with the GIL held. */
#ifdef Py_BUILD_CORE_BUILTIN
#  include "Python.h"             // first: it sets the feature macros
#endif
#include "mpk_guard.h"
#include "faastlane_mpk.h"

PyObject *_PyMPK_SharedWriteError;

#ifdef Py_BUILD_CORE_BUILTIN

#include "pycore_mpk_guard.h"
#include "pycore_typeobject.h"     // _PyType_GetDict()

#define SIGNAL_SAFE_TLS __attribute__((tls_model("initial-exec")))

_Py_thread_local int _PyMPK_Guarded SIGNAL_SAFE_TLS;
_Py_thread_local int _PyMPK_Brokered SIGNAL_SAFE_TLS;
/* The private heap a brokered thread goes back to when it trips. */
static _Py_thread_local struct _PyMPK_Heap *tls_resume_heap;

/* ---------------------------------------------------------------------- */
/* Identity tables: open addressing on the object's address               */

typedef struct {
    PyObject *key;      /* a strong reference: never freed, never reused */
    PyObject *label;
    int code_only;      /* frozen: a namespace or class, only stores that bind
                           code refused (unused for a broker) */
} entry;

typedef struct {
    entry *slots;
    Py_ssize_t size;    /* a power of two, or 0 */
    Py_ssize_t used;
} table;

static table frozen;
static table brokers;

static Py_ssize_t
probe(const table *t, PyObject *key)
{
    size_t mask = (size_t)t->size - 1;
    size_t i = ((uintptr_t)key >> 4) * 0x9E3779B97F4A7C15ull & mask;
    while (t->slots[i].key != NULL && t->slots[i].key != key) {
        i = (i + 1) & mask;
    }
    return (Py_ssize_t)i;
}

static int
contains(const table *t, PyObject *key)
{
    return t->size != 0 && t->slots[probe(t, key)].key == key;
}

static entry *
find(const table *t, PyObject *key)
{
    if (t->size == 0) {
        return NULL;
    }
    entry *e = &t->slots[probe(t, key)];
    return e->key == key ? e : NULL;
}

static int
add(table *t, PyObject *key, PyObject *label, int code_only)
{
    if (2 * (t->used + 1) > t->size) {
        Py_ssize_t size = t->size ? 2 * t->size : 256;
        /* The raw allocator outside every domain: shared memory. */
        entry *slots = PyMem_RawCalloc((size_t)size, sizeof(entry));
        if (slots == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        table grown = {slots, size, 0};
        for (Py_ssize_t i = 0; i < t->size; i++) {
            if (t->slots[i].key != NULL) {
                grown.slots[probe(&grown, t->slots[i].key)] = t->slots[i];
                grown.used++;
            }
        }
        PyMem_RawFree(t->slots);
        *t = grown;
    }
    entry *e = &t->slots[probe(t, key)];
    if (e->key == NULL) {
        e->key = Py_NewRef(key);
        t->used++;
    }
    Py_XSETREF(e->label, Py_XNewRef(label));
    e->code_only = code_only;
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Refusals                                                               */

/* slot -> the function's name (shared strings, set outside domains). */
static PyObject *slot_names[_PyMPK_SLOT_COUNT + 1];

static PyObject *
function_name(void)
{
    int slot = _PyMPK_SealedSlot();
    if (slot >= 0 && slot <= _PyMPK_SLOT_COUNT && slot_names[slot] != NULL) {
        return Py_NewRef(slot_names[slot]);
    }
    return PyUnicode_FromFormat("<function code, domain slot %d>", slot);
}

static const char *
verb(int kind)
{
    switch (kind) {
    case _PyMPK_STORE_ATTR:
        return "set or delete attribute";
    case _PyMPK_STORE_CELL:
        return "set the contents of";
    default:
        return "change an item of";
    }
}

/* What `op` is, for the message: a label the runtime gave, else its kind. */
static PyObject *
describe(PyObject *op)
{
    entry *e = find(&frozen, op);
    if (e != NULL && e->label != NULL) {
        return Py_NewRef(e->label);
    }
    if (PyModule_Check(op)) {
        PyObject *name = PyModule_GetNameObject(op);
        if (name != NULL) {
            PyObject *text = PyUnicode_FromFormat("module '%U'", name);
            Py_DECREF(name);
            return text;
        }
        PyErr_Clear();
        return PyUnicode_FromString("a module");
    }
    if (PyType_Check(op)) {
        return PyUnicode_FromFormat("class '%s'", ((PyTypeObject *)op)->tp_name);
    }
    if (PyFunction_Check(op)) {
        return PyUnicode_FromFormat(
            "function '%U'", ((PyFunctionObject *)op)->func_qualname);
    }
    return PyUnicode_FromFormat("a shared '%s' object", Py_TYPE(op)->tp_name);
}

static int
refuse(PyObject *op, int kind, PyObject *name)
{
    PyObject *function = function_name();
    PyObject *what = describe(op);
    if (function != NULL && what != NULL) {
        if (kind == _PyMPK_STORE_ATTR && name != NULL && PyUnicode_Check(name)) {
            PyErr_Format(_PyMPK_SharedWriteError,
                         "function '%U' may not %s %R of %U: shared code and "
                         "the runtime's state are read-only to function code",
                         function, verb(kind), name, what);
        }
        else if (kind == _PyMPK_STORE_ITEM && name != NULL
                 && PyUnicode_Check(name)) {
            PyErr_Format(_PyMPK_SharedWriteError,
                         "function '%U' may not change %R in %U: shared code "
                         "and the runtime's state are read-only to function "
                         "code", function, name, what);
        }
        else {
            PyErr_Format(_PyMPK_SharedWriteError,
                         "function '%U' may not %s %U: shared code and the "
                         "runtime's state are read-only to function code",
                         function, verb(kind), what);
        }
    }
    Py_XDECREF(function);
    Py_XDECREF(what);
    return -1;
}

/* Whether `name` is a special attribute (__class__, __bases__, __dict__...):
 * what the interpreter itself looks things up through. */
static int
special(PyObject *name)
{
    if (name == NULL || !PyUnicode_Check(name)) {
        return 0;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(name);
    return n > 4 && PyUnicode_READ_CHAR(name, 0) == '_'
           && PyUnicode_READ_CHAR(name, 1) == '_'
           && PyUnicode_READ_CHAR(name, n - 1) == '_'
           && PyUnicode_READ_CHAR(name, n - 2) == '_';
}

/* Whether the guarded thread has no private heap: sealed code of a heapless
 * domain (the runtime's library loader: the module bodies of the libraries a
 * function imports).  Everything
 * it makes is shared, so "its own" cannot be told by address: what is read-only
 * to it is what the runtime froze -- the code of every module loaded before. */
static inline int
heapless(void)
{
    return _PyMPK_ThreadHeap == NULL;
}

int
_PyMPK_GuardFrozen(PyObject *op, int kind, PyObject *name)
{
    if (_PyMPK_Owns(op)) {
        return 0;
    }
    entry *e = find(&frozen, op);
    /* A list or set frozen code_only (the import system's: sys.meta_path...)
     * is open to libraries as they load (six adds its finder); the runtime
     * checks what they did to it after the import (guard.py). */
    if (e != NULL && e->code_only && heapless()
        && (PyList_Check(op) || PyAnySet_Check(op)))
    {
        return 0;
    }
    /* Any shared object's class is shared code: swapping it swaps every method. */
    if (e != NULL
        || (kind == _PyMPK_STORE_ATTR && name != NULL && PyUnicode_Check(name)
            && PyUnicode_CompareWithASCIIString(name, "__class__") == 0))
    {
        return refuse(op, kind, name);
    }
    return 0;
}

/* Whether a value a name is bound to is code: anything callable, and any
 * descriptor (a property or classmethod runs its function on access). */
static int
binds_code(PyObject *value)
{
    return value != NULL
           && (PyCallable_Check(value) || Py_TYPE(value)->tp_descr_get != NULL);
}

/* Whether `key` is bound to code in `dict` now; -1 with an exception set. */
static int
bound_to_code(PyObject *dict, PyObject *key)
{
    PyObject *old;
    if (dict == NULL || PyDict_GetItemRef(dict, key, &old) < 0) {
        return dict == NULL ? 0 : -1;
    }
    int code = binds_code(old);
    Py_XDECREF(old);
    return code;
}

int
_PyMPK_GuardFrozenItem(PyObject *dict, PyObject *key, PyObject *value)
{
    if (_PyMPK_Owns(dict)) {
        return 0;
    }
    entry *e = find(&frozen, dict);
    if (e == NULL) {
        return 0;
    }
    if (!e->code_only || key == NULL || binds_code(value)) {
        return refuse(dict, _PyMPK_STORE_ITEM, key);
    }
    /* A namespace: rebinding or deleting a function, class or other callable
     * is planting code; a flag or a counter a library keeps is not. */
    int code = bound_to_code(dict, key);
    return code == 0 ? 0 : code < 0 ? -1 : refuse(dict, _PyMPK_STORE_ITEM, key);
}

int
_PyMPK_GuardTypeAttr(PyObject *type, PyObject *name, PyObject *value)
{
    if (_PyMPK_Owns(type)) {
        return 0;
    }
    if (heapless() && !contains(&frozen, type)) {
        return 0;           /* a class this load is making */
    }
    /* __bases__, __class__, __dict__, __getattr__...: how the class finds its
     * code, whatever the value's type. */
    if (special(name) || binds_code(value)) {
        return refuse(type, _PyMPK_STORE_ATTR, name);
    }
    /* The class's own namespace (not its bases'): what this store replaces. */
    int code = bound_to_code(_PyType_GetDict((PyTypeObject *)type), name);
    return code == 0 ? 0 : code < 0 ? -1 : refuse(type, _PyMPK_STORE_ATTR, name);
}

int
_PyMPK_GuardShared(PyObject *op, int kind, PyObject *name)
{
    if (_PyMPK_Owns(op)) {
        return 0;
    }
    /* Heapless: a function of a module loaded before (the runtime froze it
     * with the module) is old shared code; one this load makes -- a closure
     * old code returns too (namedtuple's methods) -- is not. */
    if (heapless() && PyFunction_Check(op) && !contains(&frozen, op)) {
        return 0;
    }
    return refuse(op, kind, name);
}

/* A channel between threads (a queue.SimpleQueue) used by a guarded thread
 * with a private heap: only its own.  The runtime hands a function's input
 * and result between its threads through shared queues; what waits in one
 * is another function's data in flight, readable under any key once taken
 * out.  Heapless code (libraries loading) makes and uses shared queues. */
int
_PyMPK_GuardChannel(PyObject *op, const char *what)
{
    if (!_PyMPK_Guarded || heapless() || _PyMPK_Owns(op)) {
        return 0;
    }
    PyObject *function = function_name();
    if (function != NULL) {
        PyErr_Format(_PyMPK_SharedWriteError,
                     "function '%U' may not %s a shared %s: what other "
                     "threads hand on through it is not the function's",
                     function, what, Py_TYPE(op)->tp_name);
        Py_DECREF(function);
    }
    return -1;
}

/* ---------------------------------------------------------------------- */
/* Brokered calls                                                         */

void
_PyMPK_BrokerTripIfPrivate(const void *func, const void *code)
{
    if (_PyMPK_InHeaps(func) || _PyMPK_InHeaps(code)) {
        /* Private code never runs allocating shared: what it made there
         * (a function, a class) would be shared code it chose. */
        _PyMPK_ThreadHeap = tls_resume_heap;
        _PyMPK_Brokered = 0;
        _PyMPK_Guarded = 1;
    }
}

void
_PyMPK_GuardSealed(int sealed)
{
    _PyMPK_Guarded = sealed;
    _PyMPK_Brokered = 0;
}

PyObject *
_PyMPK_CallShared(PyObject *callable, PyObject *const *args, Py_ssize_t nargs)
{
    int sealed = _PyMPK_SealedSlot() >= 0;
    entry *broker = sealed ? find(&brokers, callable) : NULL;
    if (sealed && broker == NULL) {
        PyObject *function = function_name();
        if (function != NULL) {
            PyErr_Format(_PyMPK_SharedWriteError,
                         "function '%U' may not call_shared(%R): sealed code "
                         "allocates shared only through the runtime's own "
                         "operations", function, callable);
            Py_DECREF(function);
        }
        return NULL;
    }
    struct _PyMPK_Heap *heap = _PyMPK_ThreadHeap;
    struct _PyMPK_Heap *resume = tls_resume_heap;
    int guarded = _PyMPK_Guarded;
    int brokered = _PyMPK_Brokered;
    if (sealed) {
        if (!brokered) {
            tls_resume_heap = heap;
        }
        /* The runtime's own operation: unguarded until private code runs in
         * it (the trip, _PyMPK_BrokerTripIfPrivate). */
        _PyMPK_Guarded = 0;
        _PyMPK_Brokered = 1;
    }
    _PyMPK_ThreadHeap = NULL;
    PyObject *result = PyObject_Vectorcall(callable, args, (size_t)nargs, NULL);
    _PyMPK_ThreadHeap = heap;
    _PyMPK_Guarded = guarded;
    _PyMPK_Brokered = brokered;
    tls_resume_heap = resume;
    return result;
}

/* ---------------------------------------------------------------------- */
/* Registration: outside sealed code only                                 */

static int
refuse_sealed(const char *what)
{
    if (_PyMPK_SealedSlot() >= 0) {
        PyErr_Format(PyExc_PermissionError, "cannot %s: this thread runs "
                     "sealed function code", what);
        return -1;
    }
    return 0;
}

int
_PyMPK_Freeze(PyObject *op, PyObject *label, int code_only)
{
    /* A registered operation may freeze what it made (a module it imported
     * for a function); function code itself never runs brokered. */
    if (!_PyMPK_Brokered && refuse_sealed("freeze an object") < 0) {
        return -1;
    }
    if (_PyMPK_InHeaps(op)) {
        PyErr_SetString(PyExc_ValueError, "only shared objects are frozen: "
                        "this one lives in a domain's private heap");
        return -1;
    }
    if (code_only && !PyDict_Check(op) && !PyType_Check(op)
        && !PyList_Check(op) && !PyAnySet_Check(op))
    {
        PyErr_SetString(PyExc_TypeError, "code_only freezes a namespace (a "
                        "dict), a class, or a list or set libraries extend as "
                        "they load");
        return -1;
    }
    return add(&frozen, op, label, code_only);
}

Py_ssize_t
_PyMPK_FrozenCount(void)
{
    return frozen.used;
}

int
_PyMPK_RegisterBroker(PyObject *callable)
{
    if (refuse_sealed("register a runtime operation") < 0) {
        return -1;
    }
    if (_PyMPK_InHeaps(callable)) {
        PyErr_SetString(PyExc_ValueError, "a runtime operation is shared code: "
                        "this callable lives in a domain's private heap");
        return -1;
    }
    return add(&brokers, callable, NULL, 0);
}

int
_PyMPK_NameSlot(int slot, PyObject *name)
{
    if (refuse_sealed("name a slot") < 0) {
        return -1;
    }
    if (slot < 0 || slot >= _PyMPK_SLOT_COUNT || _PyMPK_InHeaps(name)) {
        PyErr_SetString(PyExc_ValueError, "a slot number and a shared name");
        return -1;
    }
    Py_XSETREF(slot_names[slot], Py_NewRef(name));
    return 0;
}

#else /* !Py_BUILD_CORE_BUILTIN: an ordinary extension for tests */

static int
not_builtin(void)
{
    PyErr_SetString(PyExc_RuntimeError,
                    "this _faastlane was built as an extension module: only the "
                    "cpython-mpk runtime has the write guard");
    return -1;
}

void
_PyMPK_GuardSealed(int sealed)
{
    (void)sealed;
}

PyObject *
_PyMPK_CallShared(PyObject *callable, PyObject *const *args, Py_ssize_t nargs)
{
    (void)callable;
    (void)args;
    (void)nargs;
    not_builtin();
    return NULL;
}

int
_PyMPK_Freeze(PyObject *op, PyObject *label, int code_only)
{
    (void)op;
    (void)label;
    (void)code_only;
    return not_builtin();
}

Py_ssize_t
_PyMPK_FrozenCount(void)
{
    return 0;
}

int
_PyMPK_RegisterBroker(PyObject *callable)
{
    (void)callable;
    return not_builtin();
}

int
_PyMPK_NameSlot(int slot, PyObject *name)
{
    (void)slot;
    (void)name;
    return not_builtin();
}

#endif /* Py_BUILD_CORE_BUILTIN */
