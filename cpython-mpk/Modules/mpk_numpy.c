/* mpk_numpy.c -- numpy's array data through malloc(), without its cache.
 *
 * numpy's default data allocator keeps up to seven freed blocks of every
 * size below 1024 bytes in a process-wide cache and hands them to the next
 * array of that size, whoever makes it.  With malloc routed by domain
 * (mpk_malloc.c) a small array freed inside function A leaves a block of
 * A's slot in that cache; the next small array -- made by function B or by
 * the orchestrator -- would get it: a protection-key fault on first write
 * with keys, A's stale bytes without them.
 *
 * numpy (1.22+, NEP 49) lets the data allocator be replaced.  Its default
 * handler is one capsule shared by every context and every array made with
 * it (an array keeps its handler to free its data); pointing that capsule
 * at a handler that calls malloc/calloc/realloc/free directly routes every
 * later array by domain and drops the cache.  Arrays made before keep
 * working (their blocks are glibc's, and free() takes them); the blocks
 * already cached stay there, shared, unused.
 *
 * numpy's cache of dimension/stride arrays is fed by PyMem_RawMalloc, which
 * stays shared (mpk_malloc.c): its reuse across domains is harmless.
 *
 * No numpy header is needed: the handler layout and the C-API table slots
 * used here are part of numpy's stable ABI.
 */
#ifdef Py_BUILD_CORE_BUILTIN
#  include "Python.h"
#endif
#include "mpk_heap.h"

#ifdef Py_BUILD_CORE_BUILTIN

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* numpy/ndarraytypes.h: PyDataMemAllocator and PyDataMem_Handler
 * (version 1). */
typedef struct {
    void *ctx;
    void *(*malloc)(void *ctx, size_t size);
    void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
    void *(*realloc)(void *ctx, void *ptr, size_t new_size);
    void (*free)(void *ctx, void *ptr, size_t size);
} np_allocator;

typedef struct {
    char name[127];
    uint8_t version;
    np_allocator allocator;
} np_handler;

/* numpy/__multiarray_api.h: slots of the C-API table. */
#define API_FEATURE_VERSION 211     /* PyArray_GetNDArrayCFeatureVersion */
#define API_DEFAULT_HANDLER 306     /* &PyDataMem_DefaultHandler */
#define NPY_1_22_API_VERSION 0x0000000f
#define HANDLER_CAPSULE "mem_handler"

static void *
np_malloc(void *ctx, size_t size)
{
    (void)ctx;
    return malloc(size);
}

static void *
np_calloc(void *ctx, size_t nelem, size_t elsize)
{
    (void)ctx;
    return calloc(nelem, elsize);
}

static void *
np_realloc(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    return realloc(ptr, size);
}

static void
np_free(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    (void)size;
    free(ptr);
}

static np_handler domain_handler = {
    "faastlane_domain_allocator",
    1,
    {NULL, np_malloc, np_calloc, np_realloc, np_free},
};

/* The C-API table of the imported numpy, or NULL (no exception set). */
static void **
numpy_api(void)
{
    static const char *const modules[] = {
        "numpy._core._multiarray_umath",    /* numpy 2 */
        "numpy.core._multiarray_umath",     /* numpy 1.x */
    };
    for (size_t i = 0; i < sizeof(modules) / sizeof(modules[0]); i++) {
        PyObject *name = PyUnicode_FromString(modules[i]);
        if (name == NULL) {
            PyErr_Clear();
            return NULL;
        }
        /* Only an already imported numpy: importing is not ours to do. */
        PyObject *mod = PyImport_GetModule(name);
        Py_DECREF(name);
        if (mod == NULL) {
            PyErr_Clear();
            continue;
        }
        PyObject *capsule = PyObject_GetAttrString(mod, "_ARRAY_API");
        Py_DECREF(mod);
        if (capsule == NULL || !PyCapsule_CheckExact(capsule)) {
            Py_XDECREF(capsule);
            PyErr_Clear();
            return NULL;
        }
        void **api = PyCapsule_GetPointer(capsule,
                                          PyCapsule_GetName(capsule));
        Py_DECREF(capsule);     /* the module keeps it */
        if (api == NULL) {
            PyErr_Clear();
        }
        return api;
    }
    return NULL;
}

void
_PyMPK_NumpyAdopt(void)
{
    PyObject *exc = PyErr_GetRaisedException();
    void **api = numpy_api();
    if (api == NULL) {
        goto done;
    }
    unsigned int (*feature_version)(void) =
        (unsigned int (*)(void))api[API_FEATURE_VERSION];
    if (feature_version() < NPY_1_22_API_VERSION) {
        goto done;      /* no data handlers before numpy 1.22 */
    }
    PyObject *def = *(PyObject **)api[API_DEFAULT_HANDLER];
    if (def == NULL || !PyCapsule_IsValid(def, HANDLER_CAPSULE)) {
        goto done;
    }
    np_handler *current = PyCapsule_GetPointer(def, HANDLER_CAPSULE);
    if (current == &domain_handler) {
        goto done;
    }
    if (current == NULL || current->version != 1
        || strcmp(current->name, "default_allocator") != 0)
    {
        /* Someone else's policy: leave it alone. */
        PyErr_Clear();
        goto done;
    }
    if (PyCapsule_SetPointer(def, &domain_handler) != 0) {
        PyErr_Clear();
    }
done:
    PyErr_SetRaisedException(exc);
}

#endif /* Py_BUILD_CORE_BUILTIN */
