/* mpk_caches.c -- the standard library's process-wide caches, per function.
 *
 * re's pattern caches, struct's format cache, every functools.lru_cache and
 * linecache's lines are process-wide: a function that fills one inside its
 * domain leaves its private object there, and the next caller that hits the
 * entry -- another function running at the same time on another thread --
 * faults on it.  Purging a function's entries at its exit is right only for
 * one function at a time per process.  Here each function gets its own
 * *twin* of such a cache, made in its private heap on first use and kept for
 * the domain's life: its entries are warm across its invocations and
 * unreadable to everybody else, and no function code ever writes the shared
 * cache (the runtime and the library loader, allocating shared, still use
 * it).
 *
 * The caches are redirected where they are used, never copied into the
 * interpreter:
 *   - functools._lru_cache_wrapper: its type's tp_call (and cache_info,
 *     cache_clear) run the calling function's twin wrapper -- the same
 *     function, maxsize and typed, made privately;
 *   - _struct's module functions (pack, unpack, unpack_from, ...): their
 *     method definitions, which every builtin made from them reads at each
 *     call, look the format up in the function's own cache of Struct objects;
 *   - a Python module's cache dict (re._cache, linecache.cache): replaced by
 *     a PerFunctionDict, a mapping that forwards every operation to the
 *     calling function's twin dict (a copy of the shared one made on first
 *     use), or to the shared dict outside every private heap.
 *
 * Twins live in a table per domain slot, keyed by the shared object's address
 * (a strong reference: the address is never reused); a slot's table is dropped
 * unread when the slot's generation changes (its heap is gone with it).
 *
 * Everything here runs with the GIL held. */
#ifdef Py_BUILD_CORE_BUILTIN
#  include "Python.h"             // first: it sets the feature macros
#endif
#include "mpk_caches.h"
#include "faastlane_mpk.h"
#include "mpk_twins.h"

#ifdef Py_BUILD_CORE_BUILTIN

#include "pycore_mpk_guard.h"     // _PyMPK_Owns()
#include "pycore_mpk_heap.h"      // _PyMPK_ThreadHeap

/* ---------------------------------------------------------------------- */
/* Twins: one table per domain slot                                       */

typedef struct {
    uint32_t generation;
    _PyMPK_TwinEntry *entries;
    Py_ssize_t size;       /* a power of two, or 0 */
    Py_ssize_t used;
} twin_table;

static twin_table tables[_PyMPK_SLOT_COUNT];

static int
twin_grow(twin_table *t)
{
    Py_ssize_t size = t->size ? 2 * t->size : 32;
    /* Made by the domain's thread: routed C malloc puts it in its heap. */
    _PyMPK_TwinEntry *entries = PyMem_RawCalloc((size_t)size, sizeof(*entries));
    if (entries == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < t->size; i++) {
        if (t->entries[i].original != NULL) {
            *_PyMPK_TwinBucket(entries, (size_t)size, t->entries[i].original)
                = t->entries[i];
        }
    }
    PyMem_RawFree(t->entries);
    t->entries = entries;
    t->size = size;
    return 0;
}

/* Whether the calling thread allocates in a private heap that does not hold
 * `op`: then it runs function code and must not use `op`'s shared state. */
static inline int
needs_twin(PyObject *op)
{
    return _PyMPK_ThreadHeap != NULL && !_PyMPK_Owns(op);
}

/* The calling function's twin of `shared` (a new reference), made by
 * make(shared) on first use; NULL with an exception set.  Only called when
 * needs_twin(shared). */
static PyObject *
twin_of(PyObject *shared, PyObject *(*make)(PyObject *))
{
    _PyMPK_Handle h;
    if (!_PyMPK_CurrentHandle(&h) || h.slot < 0 || h.slot >= _PyMPK_SLOT_COUNT) {
        PyErr_SetString(PyExc_SystemError, "a private heap outside every domain");
        return NULL;
    }
    twin_table *t = &tables[h.slot];
    if (t->generation != h.generation) {
        /* The slot's earlier domain is gone, and its heap with the table. */
        *t = (twin_table){h.generation, NULL, 0, 0};
    }
    if (t->size != 0) {
        _PyMPK_TwinEntry *e = _PyMPK_TwinBucket(t->entries, (size_t)t->size,
                                                shared);
        if (e->original == shared) {
            return Py_NewRef(e->twin);
        }
    }
    PyObject *twin = make(shared);
    if (twin == NULL) {
        return NULL;
    }
    if (2 * (t->used + 1) > t->size && twin_grow(t) < 0) {
        Py_DECREF(twin);
        return NULL;
    }
    _PyMPK_TwinEntry *e = _PyMPK_TwinBucket(t->entries, (size_t)t->size, shared);
    e->original = Py_NewRef(shared);
    e->twin = Py_NewRef(twin);
    t->used++;
    return twin;
}

/* ---------------------------------------------------------------------- */
/* functools.lru_cache                                                    */

/* The layout of _functoolsmodule.c's objects (CPython 3.13), checked against
 * the type's basicsize before anything is redirected. */
typedef struct lru_elem {
    PyObject_HEAD
    struct lru_elem *prev, *next;
    Py_hash_t hash;
    PyObject *key, *result;
} lru_elem;

typedef struct {
    lru_elem root;
    void *wrapper;
    int typed;
    PyObject *cache;
    Py_ssize_t hits;
    PyObject *func;
    Py_ssize_t maxsize;
    Py_ssize_t misses;
    PyObject *kwd_mark;
    PyTypeObject *lru_list_elem_type;
    PyObject *cache_info_type;
    PyObject *dict;
    PyObject *weakreflist;
} lru_object;

static ternaryfunc lru_call;
static PyTypeObject *lru_type;

static PyObject *
make_lru_twin(PyObject *shared)
{
    lru_object *lru = (lru_object *)shared;
    PyObject *maxsize = lru->maxsize < 0 ? Py_NewRef(Py_None)
                                         : PyLong_FromSsize_t(lru->maxsize);
    if (maxsize == NULL) {
        return NULL;
    }
    PyObject *twin = PyObject_CallFunction((PyObject *)Py_TYPE(shared), "OOiO",
                                           lru->func, maxsize, lru->typed,
                                           lru->cache_info_type);
    Py_DECREF(maxsize);
    return twin;
}

/* A wrapper that caches nothing (maxsize=0) has no state to keep apart. */
static inline int
lru_needs_twin(PyObject *self)
{
    return needs_twin(self) && ((lru_object *)self)->maxsize != 0;
}

static PyObject *
lru_call_per_function(PyObject *self, PyObject *args, PyObject *kwds)
{
    if (!lru_needs_twin(self)) {
        return lru_call(self, args, kwds);
    }
    PyObject *twin = twin_of(self, make_lru_twin);
    if (twin == NULL) {
        return NULL;
    }
    PyObject *result = lru_call(twin, args, kwds);
    Py_DECREF(twin);
    return result;
}

/* cache_info() and cache_clear() report and clear the caller's own. */
enum { CACHE_INFO, CACHE_CLEAR, LRU_METHODS };
static const char *const lru_method_names[LRU_METHODS] = {"cache_info",
                                                          "cache_clear"};
static PyMethodDef lru_methods[LRU_METHODS];
static PyCFunction lru_original[LRU_METHODS];

#define LRU_METHOD(index)                                                   \
    static PyObject *                                                       \
    lru_method_##index(PyObject *self, PyObject *unused)                    \
    {                                                                       \
        if (!lru_needs_twin(self)) {                                        \
            return lru_original[index](self, unused);                       \
        }                                                                   \
        PyObject *twin = twin_of(self, make_lru_twin);                      \
        if (twin == NULL) {                                                 \
            return NULL;                                                    \
        }                                                                   \
        PyObject *result = lru_original[index](twin, unused);               \
        Py_DECREF(twin);                                                    \
        return result;                                                      \
    }

LRU_METHOD(CACHE_INFO)
LRU_METHOD(CACHE_CLEAR)

static const PyCFunction lru_wrappers[LRU_METHODS] = {
    lru_method_CACHE_INFO, lru_method_CACHE_CLEAR,
};

static int
lru_per_function(PyObject *type)
{
    PyTypeObject *tp = (PyTypeObject *)type;
    PyMethodDescrObject *descr[LRU_METHODS];

    if (lru_type == tp) {
        return 0;                       /* installed before */
    }
    if (lru_type != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "another lru_cache type was redirected");
        return -1;
    }
    if (!PyType_Check(type) || tp->tp_basicsize != (Py_ssize_t)sizeof(lru_object)
        || tp->tp_call == NULL || tp->tp_vectorcall_offset != 0)
    {
        PyErr_SetString(PyExc_TypeError, "not CPython 3.13's _lru_cache_wrapper type");
        return -1;
    }
    for (int i = 0; i < LRU_METHODS; i++) {
        PyObject *d = PyDict_GetItemString(tp->tp_dict, lru_method_names[i]);
        if (d == NULL || !Py_IS_TYPE(d, &PyMethodDescr_Type)
            || ((PyMethodDescrObject *)d)->d_method->ml_flags != METH_NOARGS)
        {
            PyErr_Format(PyExc_TypeError, "%s.%s is not a METH_NOARGS method",
                         tp->tp_name, lru_method_names[i]);
            return -1;
        }
        descr[i] = (PyMethodDescrObject *)d;
    }
    for (int i = 0; i < LRU_METHODS; i++) {
        lru_methods[i] = *descr[i]->d_method;
        lru_original[i] = lru_methods[i].ml_meth;
        lru_methods[i].ml_meth = lru_wrappers[i];
        descr[i]->d_method = &lru_methods[i];
    }
    lru_call = tp->tp_call;
    tp->tp_call = lru_call_per_function;
    lru_type = (PyTypeObject *)Py_NewRef(type);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* struct's format cache                                                  */

/* _struct.c keeps at most this many formats (MAXCACHE) and then starts over. */
#define STRUCT_MAXCACHE 100

enum { S_PACK, S_PACK_INTO, S_UNPACK, S_UNPACK_FROM, S_ITER_UNPACK, S_CALCSIZE,
       S_CLEARCACHE, STRUCT_FUNCTIONS };

static const struct {
    const char *name;
    int flags;
} struct_wanted[STRUCT_FUNCTIONS] = {
    [S_PACK] = {"pack", METH_FASTCALL},
    [S_PACK_INTO] = {"pack_into", METH_FASTCALL},
    [S_UNPACK] = {"unpack", METH_FASTCALL},
    [S_UNPACK_FROM] = {"unpack_from", METH_FASTCALL | METH_KEYWORDS},
    [S_ITER_UNPACK] = {"iter_unpack", METH_FASTCALL},
    [S_CALCSIZE] = {"calcsize", METH_O},
    [S_CLEARCACHE] = {"_clearcache", METH_NOARGS},
};

static PyObject *struct_type;          /* _struct.Struct */
static PyObject *struct_method[STRUCT_FUNCTIONS];  /* interned names, shared */
static PyCFunction struct_original[STRUCT_FUNCTIONS];

static PyObject *
make_struct_cache(PyObject *unused)
{
    return PyDict_New();
}

/* The function's own Struct for `format` (a new reference), as _struct.c's
 * cache_struct_converter finds or makes it in the shared cache. */
static PyObject *
own_struct(PyObject *format)
{
    PyObject *cache = twin_of(struct_type, make_struct_cache);
    if (cache == NULL) {
        return NULL;
    }
    PyObject *s;
    if (PyDict_GetItemRef(cache, format, &s) == 0) {
        s = PyObject_CallOneArg(struct_type, format);
        if (s != NULL) {
            if (PyDict_GET_SIZE(cache) >= STRUCT_MAXCACHE) {
                PyDict_Clear(cache);
            }
            if (PyDict_SetItem(cache, format, s) < 0) {
                PyErr_Clear();
            }
        }
    }
    Py_DECREF(cache);
    return s;
}

/* struct.NAME(format, *args, **kwargs) as own_struct(format).NAME(*args,
 * **kwargs). */
static PyObject *
call_own_struct(int index, PyObject *const *args, Py_ssize_t nargs,
                PyObject *kwnames)
{
    Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    PyObject *small[8];
    PyObject **stack = small;
    PyObject *result = NULL;
    if (total > (Py_ssize_t)Py_ARRAY_LENGTH(small)) {
        stack = PyMem_Malloc((size_t)total * sizeof(PyObject *));
        if (stack == NULL) {
            return PyErr_NoMemory();
        }
    }
    stack[0] = own_struct(args[0]);
    if (stack[0] != NULL) {
        for (Py_ssize_t i = 1; i < total; i++) {
            stack[i] = args[i];
        }
        result = PyObject_VectorcallMethod(struct_method[index], stack,
                                           (size_t)nargs, kwnames);
        Py_DECREF(stack[0]);
    }
    if (stack != small) {
        PyMem_Free(stack);
    }
    return result;
}

static inline int
struct_needs_own(PyObject *module)
{
    return needs_twin(module);
}

#define STRUCT_FAST(index)                                                  \
    static PyObject *                                                       \
    struct_##index(PyObject *module, PyObject *const *args, Py_ssize_t n)   \
    {                                                                       \
        if (n < 1 || !struct_needs_own(module)) {                           \
            return ((PyCFunctionFast)(void (*)(void))struct_original[index])( \
                module, args, n);                                           \
        }                                                                   \
        return call_own_struct(index, args, n, NULL);                       \
    }

STRUCT_FAST(S_PACK)
STRUCT_FAST(S_PACK_INTO)
STRUCT_FAST(S_UNPACK)
STRUCT_FAST(S_ITER_UNPACK)

static PyObject *
struct_S_UNPACK_FROM(PyObject *module, PyObject *const *args, Py_ssize_t n,
                     PyObject *kwnames)
{
    if (n < 1 || !struct_needs_own(module)) {
        return ((PyCFunctionFastWithKeywords)(void (*)(void))
                struct_original[S_UNPACK_FROM])(module, args, n, kwnames);
    }
    return call_own_struct(S_UNPACK_FROM, args, n, kwnames);
}

static PyObject *
struct_S_CALCSIZE(PyObject *module, PyObject *format)
{
    if (!struct_needs_own(module)) {
        return struct_original[S_CALCSIZE](module, format);
    }
    PyObject *s = own_struct(format);
    if (s == NULL) {
        return NULL;
    }
    PyObject *size = PyObject_GetAttrString(s, "size");
    Py_DECREF(s);
    return size;
}

static PyObject *
struct_S_CLEARCACHE(PyObject *module, PyObject *unused)
{
    if (!struct_needs_own(module)) {
        return struct_original[S_CLEARCACHE](module, unused);
    }
    PyObject *cache = twin_of(struct_type, make_struct_cache);
    if (cache == NULL) {
        return NULL;
    }
    PyDict_Clear(cache);
    Py_DECREF(cache);
    Py_RETURN_NONE;
}

static const PyCFunction struct_wrappers[STRUCT_FUNCTIONS] = {
    [S_PACK] = (PyCFunction)(void (*)(void))struct_S_PACK,
    [S_PACK_INTO] = (PyCFunction)(void (*)(void))struct_S_PACK_INTO,
    [S_UNPACK] = (PyCFunction)(void (*)(void))struct_S_UNPACK,
    [S_UNPACK_FROM] = (PyCFunction)(void (*)(void))struct_S_UNPACK_FROM,
    [S_ITER_UNPACK] = (PyCFunction)(void (*)(void))struct_S_ITER_UNPACK,
    [S_CALCSIZE] = struct_S_CALCSIZE,
    [S_CLEARCACHE] = struct_S_CLEARCACHE,
};

/* The functions' definitions are _struct.c's static table: every builtin made
 * from them (struct.pack, a name a library bound early) reads ml_meth at each
 * call, so the table itself is redirected. */
static int
struct_per_function(PyObject *module)
{
    PyMethodDef *defs[STRUCT_FUNCTIONS];
    if (struct_type != NULL) {
        return 0;                       /* installed before */
    }
    for (int i = 0; i < STRUCT_FUNCTIONS; i++) {
        PyObject *f = PyObject_GetAttrString(module, struct_wanted[i].name);
        if (f == NULL) {
            return -1;
        }
        int ok = PyCFunction_Check(f)
                 && ((PyCFunctionObject *)f)->m_ml->ml_flags == struct_wanted[i].flags
                 && ((PyCFunctionObject *)f)->m_self == module;
        defs[i] = ok ? ((PyCFunctionObject *)f)->m_ml : NULL;
        Py_DECREF(f);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "_struct.%s is not CPython 3.13's",
                         struct_wanted[i].name);
            return -1;
        }
    }
    PyObject *type = PyObject_GetAttrString(module, "Struct");
    if (type == NULL) {
        return -1;
    }
    for (int i = 0; i < STRUCT_FUNCTIONS; i++) {
        /* Made outside every domain: shared, and kept for good. */
        struct_method[i] = PyUnicode_InternFromString(struct_wanted[i].name);
        if (struct_method[i] == NULL) {
            Py_DECREF(type);
            return -1;
        }
    }
    for (int i = 0; i < STRUCT_FUNCTIONS; i++) {
        struct_original[i] = defs[i]->ml_meth;
        defs[i]->ml_meth = struct_wrappers[i];
    }
    struct_type = type;
    return 0;
}

int
_PyMPK_CachesPerFunction(PyObject *lru_wrapper_type, PyObject *struct_module)
{
    if (lru_per_function(lru_wrapper_type) < 0) {
        return -1;
    }
    return struct_per_function(struct_module);
}

/* ---------------------------------------------------------------------- */
/* PerFunctionDict: a module's cache dict, per function                   */

typedef struct {
    PyObject_HEAD
    PyObject *shared;      /* the dict code outside every private heap uses */
} per_function_dict;

static PyObject *
copy_shared_dict(PyObject *shared)
{
    return PyDict_Copy(shared);
}

/* The dict the calling thread uses (a new reference). */
static PyObject *
target(PyObject *op)
{
    PyObject *shared = ((per_function_dict *)op)->shared;
    if (!needs_twin(shared)) {
        return Py_NewRef(shared);
    }
    return twin_of(shared, copy_shared_dict);
}

#define WITH_TARGET(op, expression, failed)                                 \
    PyObject *d = target(op);                                               \
    if (d == NULL) {                                                        \
        return failed;                                                      \
    }                                                                       \
    __typeof__(expression) result = expression;                             \
    Py_DECREF(d);                                                           \
    return result;

static Py_ssize_t
pfd_length(PyObject *op)
{
    WITH_TARGET(op, PyObject_Length(d), -1)
}

static PyObject *
pfd_subscript(PyObject *op, PyObject *key)
{
    WITH_TARGET(op, PyObject_GetItem(d, key), NULL)
}

static int
pfd_ass_subscript(PyObject *op, PyObject *key, PyObject *value)
{
    WITH_TARGET(op, value == NULL ? PyObject_DelItem(d, key)
                                  : PyObject_SetItem(d, key, value), -1)
}

static int
pfd_contains(PyObject *op, PyObject *key)
{
    WITH_TARGET(op, PySequence_Contains(d, key), -1)
}

static PyObject *
pfd_iter(PyObject *op)
{
    WITH_TARGET(op, PyObject_GetIter(d), NULL)
}

static PyObject *
pfd_repr(PyObject *op)
{
    WITH_TARGET(op, PyObject_Repr(d), NULL)
}

static PyObject *
pfd_richcompare(PyObject *op, PyObject *other, int how)
{
    WITH_TARGET(op, PyObject_RichCompare(d, other, how), NULL)
}

/* Every other attribute (get, pop, clear, keys, ...) is the target dict's. */
static PyObject *
pfd_getattro(PyObject *op, PyObject *name)
{
    WITH_TARGET(op, PyObject_GetAttr(d, name), NULL)
}

static PyObject *
pfd_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *shared;
    if (kwds != NULL && PyDict_GET_SIZE(kwds) != 0) {
        PyErr_SetString(PyExc_TypeError, "PerFunctionDict() takes no keywords");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!:PerFunctionDict", &PyDict_Type, &shared)) {
        return NULL;
    }
    per_function_dict *self = (per_function_dict *)type->tp_alloc(type, 0);
    if (self != NULL) {
        self->shared = Py_NewRef(shared);
    }
    return (PyObject *)self;
}

/* Not GC-tracked: the shared dict never refers back to it, and function code
 * gets no way to the shared dict (gc.get_referents finds nothing). */
static void
pfd_dealloc(PyObject *op)
{
    Py_CLEAR(((per_function_dict *)op)->shared);
    Py_TYPE(op)->tp_free(op);
}

static PyMappingMethods pfd_as_mapping = {
    .mp_length = pfd_length,
    .mp_subscript = pfd_subscript,
    .mp_ass_subscript = pfd_ass_subscript,
};

static PySequenceMethods pfd_as_sequence = {
    .sq_contains = pfd_contains,
};

PyTypeObject _PyMPK_PerFunctionDictType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_faastlane.PerFunctionDict",
    .tp_basicsize = sizeof(per_function_dict),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_MAPPING,
    .tp_doc = "PerFunctionDict(shared)\n--\n\nA module's cache dict, kept per "
              "function: inside a private heap every operation goes to the "
              "function's own copy of `shared` (made on first use), elsewhere "
              "to `shared` itself.",
    .tp_new = pfd_new,
    .tp_dealloc = pfd_dealloc,
    .tp_repr = pfd_repr,
    .tp_richcompare = pfd_richcompare,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_iter = pfd_iter,
    .tp_getattro = pfd_getattro,
    .tp_as_mapping = &pfd_as_mapping,
    .tp_as_sequence = &pfd_as_sequence,
};

#else /* !Py_BUILD_CORE_BUILTIN: an ordinary extension for tests */

int
_PyMPK_CachesPerFunction(PyObject *lru_wrapper_type, PyObject *struct_module)
{
    (void)lru_wrapper_type;
    (void)struct_module;
    PyErr_SetString(PyExc_RuntimeError,
                    "this _faastlane was built as an extension module: only the "
                    "cpython-mpk runtime has private heaps");
    return -1;
}

PyTypeObject _PyMPK_PerFunctionDictType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_faastlane.PerFunctionDict",
    .tp_basicsize = sizeof(PyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Only in the cpython-mpk runtime.",
};

#endif /* Py_BUILD_CORE_BUILTIN */
