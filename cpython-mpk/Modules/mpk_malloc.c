/* mpk_malloc.c -- C malloc() and friends, routed by protection domain.
 *
 * Memory that C extensions obtain with malloc while a function runs (numpy
 * arrays, Pillow images, any malloc'ed C buffer) must live in the function's
 * private heap, like its Python objects.  The runtime binary therefore
 * defines malloc, free, calloc, realloc, reallocarray, posix_memalign,
 * aligned_alloc, memalign, valloc, pvalloc and malloc_usable_size itself.
 * The interpreter is linked statically against libpython and exports its
 * symbols (-export-dynamic), so these definitions come first in the global
 * lookup scope and win for every shared object: numpy's extension modules,
 * libopenblas, Pillow, libc's own internal calls.
 *
 * Switched on by FAASTLANE_MPK_MALLOC=on in the environment when the first
 * private heap is made (the Orchestrator's mpk mode sets it unless the user
 * chose "off"; malloc_routed() tells).  Off, every entry point below goes to
 * glibc (one more load and compare) and private heaps cover Python
 * allocations only.  On, C libraries' lazily initialised process-wide state
 * (made on first use, inside whichever function used it first) would land in
 * a domain and fault the next function: the Orchestrator warms it outside
 * domains (PRIVATE_HEAPS.md section 7).
 *
 * Routing (PRIVATE_HEAPS.md, "C malloc"):
 *   - allocation on a thread inside a domain with a private heap goes to the
 *     heap's block allocator (mpk_heap.c), unless the caller is glibc or the
 *     dynamic loader (below);
 *   - free / realloc / malloc_usable_size of an address in a slot go to the
 *     slot's heap, whichever thread calls (a destroyed heap: free is a
 *     no-op, its memory went with the domain); realloc keeps a block in its
 *     owner's heap, as obmalloc does;
 *   - everything else is glibc's (__libc_malloc and friends).
 *
 * Outside domains the cost is one thread-local load on allocation and one
 * compare on free: _PyMPK_ThreadHeap is NULL and _PyMPK_HeapsBase is 0 until
 * the first heap exists, so this file works from the process's first malloc
 * on (before the module or the interpreter initialise).  Nothing here calls
 * malloc (no recursion), takes a lock other than the heap's, or depends on
 * the GIL: C code calls malloc without it.
 *
 * glibc and the loader stay shared: what they allocate on a thread's behalf
 * usually outlives the call and serves other threads -- the dynamic TLS and
 * link maps of dlopen, a new thread's DTV, stdio buffers, NSS and resolver
 * state, iconv and locale caches, tz data, atexit and pthread-key tables.
 * In a domain's slot those would fault the next thread that used them.  The
 * caller is told by its return address (text segments of libc.so and
 * ld.so, found once before the first heap).  The price: what libc hands back
 * to its caller (strdup, getline, asprintf, realpath(p, NULL)) is shared.
 *
 * The raw domain (PyMem_RawMalloc) stays shared too: its blocks are, by the
 * C API's contract, the ones used without the GIL and across threads --
 * thread states, TSS keys, the import cache, obmalloc's own arena tables,
 * numpy's process-wide cache of dimension arrays.  _PyMPK_MallocPrepare
 * installs a raw allocator that goes to glibc directly.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#ifdef Py_BUILD_CORE_BUILTIN
#  include "Python.h"             // first: it sets the feature macros
#endif
#include "mpk_heap.h"

#ifdef Py_BUILD_CORE_BUILTIN

#include "pycore_mpk_heap.h"      // _PyMPK_ThreadHeap, _PyMPK_InHeaps()
#include "pycore_pymem_init.h"    // _PyMem_RawMalloc

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

/* glibc's allocator under its exported internal names. */
extern void *__libc_malloc(size_t size);
extern void __libc_free(void *p);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);

/* ====================================================================== */
/* Callers that stay shared                                               */

/* libc's and the loader's text, then ranges the Orchestrator registers. */
#define MAX_SHARED_RANGES 32

static struct {
    uintptr_t start, end;
} shared_text[MAX_SHARED_RANGES];
static int nshared_text;
/* 1 once routing was turned on (FAASTLANE_MPK_MALLOC=on at the first heap). */
static int routing;

static int
collect_text(struct dl_phdr_info *info, size_t size, void *arg)
{
    uintptr_t loader = (uintptr_t)arg;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    (void)size;

    if (!(strncmp(base, "libc.so", 7) == 0
          || (loader != 0 && info->dlpi_addr == loader)))
    {
        return 0;
    }
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)
            && nshared_text < MAX_SHARED_RANGES)
        {
            shared_text[nshared_text].start = info->dlpi_addr + ph->p_vaddr;
            shared_text[nshared_text].end = info->dlpi_addr + ph->p_vaddr
                                            + ph->p_memsz;
            nshared_text++;
        }
    }
    return 0;
}

static inline int
shared_caller(const void *ret)
{
    uintptr_t a = (uintptr_t)ret;
    int n = __atomic_load_n(&nshared_text, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
        if (a - shared_text[i].start < shared_text[i].end - shared_text[i].start) {
            return 1;
        }
    }
    return 0;
}

/* The heap an allocation by `caller` on this thread goes to, or NULL. */
static inline struct _PyMPK_Heap *
alloc_heap(const void *caller)
{
    struct _PyMPK_Heap *heap = _PyMPK_ThreadHeap;
    if (__builtin_expect(heap == NULL, 1) || !routing || shared_caller(caller)) {
        return NULL;
    }
    return heap;
}

/* ====================================================================== */
/* glibc's malloc_usable_size (no __libc_ alias is exported)              */

typedef size_t (*usable_fn)(void *);
static usable_fn glibc_usable;

static usable_fn
resolve_glibc_usable(void)
{
    usable_fn fn = __atomic_load_n(&glibc_usable, __ATOMIC_ACQUIRE);
    if (fn == NULL) {
        /* dlsym may allocate: never from inside this file's malloc, and
         * normally done by the constructor below, before main. */
        fn = (usable_fn)dlsym(RTLD_NEXT, "malloc_usable_size");
        __atomic_store_n(&glibc_usable, fn, __ATOMIC_RELEASE);
    }
    return fn;
}

__attribute__((constructor)) static void
init_glibc_usable(void)
{
    (void)resolve_glibc_usable();
}

/* ====================================================================== */
/* The raw domain: shared                                                 */

static void *
raw_malloc(void *ctx, size_t size)
{
    (void)ctx;
    /* PyMem_RawMalloc(0) means malloc(1), as in obmalloc.c. */
    return __libc_malloc(size == 0 ? 1 : size);
}

static void *
raw_calloc(void *ctx, size_t n, size_t size)
{
    (void)ctx;
    if (n == 0 || size == 0) {
        n = size = 1;
    }
    return __libc_calloc(n, size);
}

static void *
raw_realloc(void *ctx, void *p, size_t size)
{
    (void)ctx;
    if (size == 0) {
        size = 1;
    }
    if (p != NULL && _PyMPK_InHeaps(p)) {
        /* A block malloc'ed inside a domain: it stays in its owner's heap. */
        struct _PyMPK_Heap *heap = _PyMPK_HeapOf(p);
        return heap != NULL ? _PyMPK_HeapRealloc(heap, p, size) : NULL;
    }
    return __libc_realloc(p, size);
}

static void
raw_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);    /* by address: glibc's or a slot's */
}

static int
install_shared_raw(const char **why)
{
    PyMemAllocatorEx cur, shared = {NULL, raw_malloc, raw_calloc,
                                    raw_realloc, raw_free};

    PyMem_GetAllocator(PYMEM_DOMAIN_RAW, &cur);
    if (cur.malloc == raw_malloc) {
        return 0;
    }
    if (cur.malloc != _PyMem_RawMalloc) {
        /* Debug hooks (PYTHONMALLOC=*debug, -X dev), tracemalloc or an
         * embedder's allocator sit on top of malloc(): the raw domain would
         * follow the calling thread into its domain. */
        *why = "the raw memory allocator is not CPython's default (debug "
               "hooks, -X dev, PYTHONMALLOC or tracemalloc started before the "
               "first private heap): it could not be kept shared";
        return -1;
    }
    /* Blocks allocated before are glibc's: raw_free frees them as well. */
    PyMem_SetAllocator(PYMEM_DOMAIN_RAW, &shared);
    return 0;
}

/* ====================================================================== */
/* The mem domain (PyMem_Malloc & co.) of registered shared code            */

/* Some extensions grow process-wide caches with PyMem_* on whichever thread
 * first needs a new entry: numpy's ufunc dispatch cache (an identity hash of
 * DType tuples) reallocates its bucket table when it fills.  Grown inside a
 * function's domain, the table would become private and the next function's
 * ufunc call would fault reading it.  Code ranges registered here (the
 * Orchestrator finds such functions by symbol) allocate shared even on a
 * thread inside a domain.  PyMem_Malloc/Calloc/Realloc jump to the domain's
 * allocator (a tail call: checked by tests/mpk), so the return address seen
 * here is their caller's. */
static PyMemAllocatorEx mem_next;   /* the allocator wrapped: obmalloc's */
static int mem_wrapped;

#define MEM_CALL(call)                                                      \
    do {                                                                    \
        const void *caller = __builtin_return_address(0);                   \
        struct _PyMPK_Heap *heap = _PyMPK_ThreadHeap;                       \
        if (__builtin_expect(heap != NULL, 0) && shared_caller(caller)) {   \
            void *p;                                                        \
            _PyMPK_ThreadHeap = NULL;                                       \
            p = (call);                                                     \
            _PyMPK_ThreadHeap = heap;                                       \
            return p;                                                       \
        }                                                                   \
        return (call);                                                      \
    } while (0)

static void *
mem_malloc(void *ctx, size_t size)
{
    (void)ctx;
    MEM_CALL(mem_next.malloc(mem_next.ctx, size));
}

static void *
mem_calloc(void *ctx, size_t n, size_t size)
{
    (void)ctx;
    MEM_CALL(mem_next.calloc(mem_next.ctx, n, size));
}

static void *
mem_realloc(void *ctx, void *p, size_t size)
{
    (void)ctx;
    /* Growth stays in the block's owner's heap anyway (obmalloc's rule). */
    MEM_CALL(mem_next.realloc(mem_next.ctx, p, size));
}

static void
mem_free(void *ctx, void *p)
{
    (void)ctx;
    mem_next.free(mem_next.ctx, p);
}

int
_PyMPK_ShareCallerRange(uintptr_t start, uintptr_t end, const char **why)
{
    int n = nshared_text;
    if (end <= start) {
        *why = "the code range is empty";
        return -1;
    }
    if (n >= MAX_SHARED_RANGES) {
        *why = "too many shared code ranges";
        return -1;
    }
    if (!mem_wrapped) {
        /* With the GIL held, as every call of the mem domain is. */
        PyMemAllocatorEx wrapper = {NULL, mem_malloc, mem_calloc, mem_realloc,
                                    mem_free};
        PyMem_GetAllocator(PYMEM_DOMAIN_MEM, &mem_next);
        PyMem_SetAllocator(PYMEM_DOMAIN_MEM, &wrapper);
        mem_wrapped = 1;
    }
    shared_text[n].start = start;
    shared_text[n].end = end;
    __atomic_store_n(&nshared_text, n + 1, __ATOMIC_RELEASE);
    return 0;
}

int
_PyMPK_MallocPrepare(const char **why)
{
    static int prepared, wanted = -1;
    if (wanted < 0) {
        const char *env = getenv("FAASTLANE_MPK_MALLOC");
        wanted = env != NULL && strcmp(env, "on") == 0;
    }
    if (!wanted) {
        return 0;
    }
    if (prepared) {
        return 1;
    }
    /* The loader's base comes from the auxiliary vector; libc by name. */
    int registered = nshared_text;
    dl_iterate_phdr(collect_text, (void *)getauxval(AT_BASE));
    if (nshared_text - registered < 2) {
        *why = "could not find the text of libc.so and the dynamic loader";
        return -1;
    }
    (void)resolve_glibc_usable();
    if (install_shared_raw(why) != 0) {
        return -1;
    }
    prepared = 1;
    /* Last: the ranges above are in place before any thread routes. */
    __atomic_store_n(&routing, 1, __ATOMIC_RELEASE);
    return 1;
}

int
_PyMPK_MallocRouted(void)
{
    return __atomic_load_n(&routing, __ATOMIC_ACQUIRE);
}

/* ====================================================================== */
/* Slot addresses: by owner                                               */

static void
slot_free(void *p)
{
    struct _PyMPK_Heap *heap = _PyMPK_HeapOf(p);
    if (heap != NULL) {
        _PyMPK_HeapFree(heap, p);
    }
    /* else its domain was destroyed: the memory went with it. */
}

static void *
slot_realloc(void *p, size_t size)
{
    struct _PyMPK_Heap *heap = _PyMPK_HeapOf(p);
    void *q;
    if (heap == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    if (size == 0) {
        /* glibc's realloc(p, 0) frees and returns NULL. */
        _PyMPK_HeapFree(heap, p);
        return NULL;
    }
    q = _PyMPK_HeapRealloc(heap, p, size);
    if (q == NULL) {
        errno = ENOMEM;
    }
    return q;
}

static void *
heap_memalign(struct _PyMPK_Heap *heap, size_t align, size_t size)
{
    void *p = _PyMPK_HeapMemalign(heap, align, size);
    if (p == NULL) {
        errno = ENOMEM;
    }
    return p;
}

/* ====================================================================== */
/* The interposed entry points                                            */

#define RETURN_ADDRESS() __builtin_return_address(0)

#pragma GCC visibility push(default)

void *
malloc(size_t size)
{
    struct _PyMPK_Heap *heap = alloc_heap(RETURN_ADDRESS());
    if (heap == NULL) {
        return __libc_malloc(size);
    }
    void *p = _PyMPK_HeapMalloc(heap, size, 0);
    if (p == NULL) {
        errno = ENOMEM;
    }
    return p;
}

void
free(void *p)
{
    if (__builtin_expect(_PyMPK_InHeaps(p), 0)) {
        slot_free(p);
        return;
    }
    __libc_free(p);
}

void *
calloc(size_t n, size_t size)
{
    struct _PyMPK_Heap *heap = alloc_heap(RETURN_ADDRESS());
    size_t total;
    if (heap == NULL) {
        return __libc_calloc(n, size);
    }
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = _PyMPK_HeapMalloc(heap, total, 1);
    if (p == NULL) {
        errno = ENOMEM;
    }
    return p;
}

void *
realloc(void *p, size_t size)
{
    if (p == NULL) {
        struct _PyMPK_Heap *heap = alloc_heap(RETURN_ADDRESS());
        if (heap == NULL) {
            return __libc_malloc(size);
        }
        void *q = _PyMPK_HeapMalloc(heap, size, 0);
        if (q == NULL) {
            errno = ENOMEM;
        }
        return q;
    }
    if (__builtin_expect(_PyMPK_InHeaps(p), 0)) {
        return slot_realloc(p, size);
    }
    /* A shared block stays shared, whichever thread grows it. */
    return __libc_realloc(p, size);
}

void *
reallocarray(void *p, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    if (p == NULL) {
        struct _PyMPK_Heap *heap = alloc_heap(RETURN_ADDRESS());
        if (heap == NULL) {
            return __libc_malloc(total);
        }
        void *q = _PyMPK_HeapMalloc(heap, total, 0);
        if (q == NULL) {
            errno = ENOMEM;
        }
        return q;
    }
    if (__builtin_expect(_PyMPK_InHeaps(p), 0)) {
        return slot_realloc(p, total);
    }
    return __libc_realloc(p, total);
}

int
posix_memalign(void **out, size_t align, size_t size)
{
    struct _PyMPK_Heap *heap = alloc_heap(RETURN_ADDRESS());
    void *p;
    int saved = errno;

    if (align % sizeof(void *) != 0 || (align & (align - 1)) != 0
        || align == 0)
    {
        return EINVAL;
    }
    p = heap == NULL ? __libc_memalign(align, size)
                     : heap_memalign(heap, align, size);
    if (p == NULL) {
        return ENOMEM;
    }
    errno = saved;  /* POSIX: errno is not set */
    *out = p;
    return 0;
}

void *
aligned_alloc(size_t align, size_t size)
{
    struct _PyMPK_Heap *heap = alloc_heap(RETURN_ADDRESS());
    if (align == 0 || (align & (align - 1)) != 0) {
        errno = EINVAL;
        return NULL;
    }
    return heap == NULL ? __libc_memalign(align, size)
                        : heap_memalign(heap, align, size);
}

void *
memalign(size_t align, size_t size)
{
    struct _PyMPK_Heap *heap = alloc_heap(RETURN_ADDRESS());
    if (heap == NULL) {
        return __libc_memalign(align, size);
    }
    /* glibc rounds an alignment that is not a power of two up to one. */
    if (align & (align - 1)) {
        size_t a = 16;
        while (a < align && a != 0) {
            a <<= 1;
        }
        if (a == 0) {
            errno = EINVAL;
            return NULL;
        }
        align = a;
    }
    return heap_memalign(heap, align, size);
}

void *
valloc(size_t size)
{
    struct _PyMPK_Heap *heap = alloc_heap(RETURN_ADDRESS());
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return heap == NULL ? __libc_memalign(page, size)
                        : heap_memalign(heap, page, size);
}

void *
pvalloc(size_t size)
{
    struct _PyMPK_Heap *heap = alloc_heap(RETURN_ADDRESS());
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t rounded = (size + page - 1) & ~(page - 1);
    if (rounded < size) {
        errno = ENOMEM;
        return NULL;
    }
    if (rounded == 0) {
        rounded = page;
    }
    return heap == NULL ? __libc_memalign(page, rounded)
                        : heap_memalign(heap, page, rounded);
}

size_t
malloc_usable_size(void *p)
{
    if (p == NULL) {
        return 0;
    }
    if (__builtin_expect(_PyMPK_InHeaps(p), 0)) {
        return _PyMPK_HeapOf(p) != NULL ? _PyMPK_HeapUsableSize(p) : 0;
    }
    usable_fn fn = resolve_glibc_usable();
    return fn != NULL ? fn(p) : 0;
}

#pragma GCC visibility pop

#else /* !Py_BUILD_CORE_BUILTIN: an ordinary extension for tests */

/* An extension module must not replace the process's malloc. */
int
_PyMPK_ShareCallerRange(uintptr_t start, uintptr_t end, const char **why)
{
    (void)start;
    (void)end;
    *why = "this _faastlane was built as an extension module: only the "
           "cpython-mpk runtime routes allocations";
    return -1;
}

int
_PyMPK_MallocRouted(void)
{
    return 0;
}

int
_PyMPK_MallocPrepare(const char **why)
{
    *why = "this _faastlane was built as an extension module: only the "
           "cpython-mpk runtime routes malloc";
    return -1;
}

#endif /* Py_BUILD_CORE_BUILTIN */
