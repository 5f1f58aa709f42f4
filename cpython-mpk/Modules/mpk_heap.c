/* mpk_heap.c -- private heaps: Python allocation inside a domain's slot.
 *
 * A thread inside a domain that has a private heap allocates there: obmalloc
 * takes its arenas and its blocks larger than 512 bytes from the domain's
 * slot, GC-tracked objects join the heap's own generations, and the
 * heap's own freelists recycle only its objects.  The hooks live in CPython
 * (the patch series, see
 * Include/internal/pycore_mpk_heap.h); this file implements them.
 *
 * The heap's bookkeeping (obmalloc state, GC generation heads, freelist
 * heads, free tables) is shared memory: the destroying thread, which holds no key, must release
 * it.  Everything a Python object is made of lies in the slot.
 *
 * Threading: obmalloc and the GC run with the GIL held, so arenas, pools and
 * generations need no lock of their own.  The block allocator (size classes
 * and page extents) is also what C malloc() inside the domain uses
 * (mpk_malloc.c), and C code calls malloc without the GIL -- numpy releases
 * it around large callocs, several threads may be inside one domain -- so
 * the block allocator has a mutex per heap (taken by the obmalloc path too).
 * Lock order: a heap's lock, then the domain table's (_PyMPK_Alloc).  Slot
 * memory comes from _PyMPK_Alloc.
 *
 * Built as an ordinary extension (tests/mpk/build_extension.py, against a
 * stock CPython without the hooks) the same entry points exist and refuse.
 */
#ifdef Py_BUILD_CORE_BUILTIN
#  include "Python.h"             // first: it sets the feature macros
#endif
#include "mpk_heap.h"

#include <stddef.h>

#ifdef Py_BUILD_CORE_BUILTIN

#include "pycore_freelist.h"      // struct _Py_object_freelists
#include "pycore_gc.h"            // _PyGC_InitState()
#include "pycore_interp.h"        // PyInterpreterState.gc
#include "pycore_mpk_heap.h"
#include "pycore_obmalloc.h"      // struct _obmalloc_state, ARENA_SIZE
#include "pycore_obmalloc_init.h" // _obmalloc_pools_INIT

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

/* Blocks up to LARGE_MAX bytes (header included) come from size classes:
 * 32 to 128 bytes in 16-byte steps (C malloc's small requests), then four
 * per power of two (obmalloc sends only requests above its
 * SMALL_REQUEST_THRESHOLD, 512 bytes).  Larger blocks are page extents of
 * their own.  Every class size is a multiple of 16, so every payload is
 * aligned like malloc's (max_align_t). */
#define HEADER 16
#define MIN_BLOCK 32
#define NSMALL 7                    /* 32, 48, ..., 128 */
#define SMALL_MAX 128
#define LARGE_MAX ((size_t)256 << 10)
#define NCLASSES (NSMALL + (18 - 7) * 4)
#define CHUNK ((size_t)1 << 20)
#define PAGE ((size_t)4096)
#define EXTENT_ROUND _PyMPK_COMMIT_STEP
#define MAX_FREE_EXTENTS 1024
/* Freed extents stay dirty (the next allocation of the same function reuses
 * them without page faults) up to this many bytes; past it they are zeroed
 * and their memory returned at once.  The whole slot is zeroed when the
 * domain is destroyed. */
#define MAX_DIRTY ((size_t)64 << 20)
#define MAX_ARENAS (_PyMPK_SLOT_SIZE / ARENA_SIZE)

#define MAGIC_CLASS ((size_t)0xFA57C1A5u << 8)
#define MAGIC_HUGE ((size_t)0xFA57E47Eu << 8)
/* An over-aligned payload (memalign and friends) inside a block: its header
 * holds the block's own payload address instead of a capacity. */
#define MAGIC_ALIGNED ((size_t)0xFA57A119u << 8)
/* Low bit of a live block's magic: C malloc made it (else obmalloc), for
 * the counters, whichever allocator frees it. */
#define FROM_C ((size_t)1)
/* A class block on a free list: freeing it again is caught, not a corrupt
 * free list. */
#define MAGIC_FREE ((size_t)0xFA57F4EEu << 8)

typedef struct {
    uintptr_t addr;
    size_t size;
    int zeroed;                 /* its pages read as zeros */
} extent_t;

struct _PyMPK_Heap {
    /* First: obmalloc's state (get_state() hands the heap out as it), the
     * freelists and the slot, read inline by the core. */
    struct _PyMPK_HeapHead head;
    struct _gc_runtime_state gc;
    _PyMPK_Handle handle;
    /* Guards everything below up to `stats` (the block allocator), and
     * stats.large_* / stats.malloc_*. */
    pthread_mutex_t lock;
    /* Large blocks: free list heads per class (links inside the blocks). */
    void *class_free[NCLASSES];
    uintptr_t chunk_next;
    uintptr_t chunk_end;
    /* Free page extents, sorted by address, adjacent ones merged. */
    size_t nextents;
    size_t dirty_bytes;         /* free extent bytes not zeroed */
    extent_t extents[MAX_FREE_EXTENTS];
    /* Arenas obmalloc gave back, zeroed, for reuse. */
    size_t narenas_free;
    uintptr_t arenas_free[MAX_ARENAS];
    _PyMPK_HeapStats stats;
};

_Static_assert(offsetof(struct _PyMPK_Heap, head.om) == 0,
               "obmalloc casts a heap to its state");
_Static_assert(_PyMPK_HEAPS_SPAN
               == ((uintptr_t)_PyMPK_SLOT_COUNT << _PyMPK_SLOT_SHIFT),
               "pycore_mpk_heap.h disagrees with faastlane_mpk.h");
_Static_assert(LARGE_MAX == ((size_t)1 << 18), "NCLASSES ends at LARGE_MAX");
_Static_assert(MIN_BLOCK == 2 * HEADER && SMALL_MAX == (NSMALL + 1) * 16,
               "the small classes are 32..128 in steps of 16");

_Py_thread_local struct _PyMPK_Heap *_PyMPK_ThreadHeap = NULL;
uintptr_t _PyMPK_HeapsBase = 0;

/* The heap of each slot; written with the GIL held, read by free() from any
 * thread (hence the atomic loads).  Exported: the core's free() and GC-track
 * paths look the owner up inline (pycore_mpk_heap.h). */
struct _PyMPK_Heap *_PyMPK_Heaps[_PyMPK_SLOT_COUNT];
/* Generation 0 of each slot's heap, for the core's inline GC track
 * (pycore_object.h, patch 0017): one load instead of three. */
PyGC_Head *_PyMPK_HeapGeneration0[_PyMPK_SLOT_COUNT];
_Static_assert(_PyMPK_SLOT_COUNT == 64 && _PyMPK_SLOT_SHIFT == 32,
               "pycore_mpk_heap.h and pycore_object.h spell the slot tables out");
/* The bookkeeping of forgotten heaps, kept per slot and reused by the slot's
 * next heap: a free() racing with a destroy may still hold the pointer, and
 * must find a valid mutex there, never freed memory. */
static struct _PyMPK_Heap *spare[_PyMPK_SLOT_COUNT];


struct _PyMPK_Heap *
_PyMPK_HeapOfState(const struct _obmalloc_state *state)
{
    for (int i = 0; i < _PyMPK_SLOT_COUNT; i++) {
        if (_PyMPK_Heaps[i] != NULL && &_PyMPK_Heaps[i]->head.om == state) {
            return _PyMPK_Heaps[i];
        }
    }
    return NULL;
}


/* ====================================================================== */
/* Lifetime                                                               */

/* fork() while another thread holds a heap's lock would leave the child's
 * copy locked forever (Parallel branches are forked): hold every heap's lock
 * across the fork.  Registered after the domain table's handlers, so the
 * prepare step takes the heap locks first -- the lock order of the malloc
 * path (heap, then table). */
static void
heaps_prefork(void)
{
    for (int i = 0; i < _PyMPK_SLOT_COUNT; i++) {
        if (spare[i] != NULL) {
            pthread_mutex_lock(&spare[i]->lock);
        }
    }
}

static void
heaps_postfork(void)
{
    for (int i = _PyMPK_SLOT_COUNT - 1; i >= 0; i--) {
        if (spare[i] != NULL) {
            pthread_mutex_unlock(&spare[i]->lock);
        }
    }
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void
install_atfork(void)
{
    (void)pthread_atfork(heaps_prefork, heaps_postfork, heaps_postfork);
}

int
_PyMPK_HeapEnable(_PyMPK_Handle h, const char **why)
{
    _PyMPK_DomainInfo info;
    PyInterpreterState *interp = PyInterpreterState_Main();
    struct _PyMPK_Heap *heap;

    if (_PyMPK_Info(h, &info) != _PyMPK_OK) {
        *why = "the domain was destroyed";
        return -1;
    }
    if (_PyMPK_Heaps[h.slot] != NULL) {
        return 0;
    }
    if (info.entered != 0) {
        *why = "threads are inside the domain: enable its heap first";
        return -1;
    }
    /* Before the first heap exists: when C malloc() is routed (opt-in,
     * FAASTLANE_MPK_MALLOC=on), it must know which callers stay shared,
     * and the raw domain must stay shared (mpk_malloc.c, PRIVATE_HEAPS.md
     * section 7). */
    int routed = _PyMPK_MallocPrepare(why);
    if (routed < 0) {
        return -1;
    }
    pthread_once(&atfork_once, install_atfork);
    heap = spare[h.slot];
    if (heap == NULL) {
        heap = PyMem_RawCalloc(1, sizeof(*heap));
        if (heap == NULL) {
            *why = "out of memory for the heap's bookkeeping";
            return -1;
        }
        pthread_mutex_init(&heap->lock, NULL);
    }
    else {
        /* Reset all but the lock (nobody holds it: the slot has no heap). */
        pthread_mutex_lock(&heap->lock);
        memset(&heap->head, 0, offsetof(struct _PyMPK_Heap, lock));
        memset((char *)heap + offsetof(struct _PyMPK_Heap, class_free), 0,
               sizeof(*heap) - offsetof(struct _PyMPK_Heap, class_free));
        pthread_mutex_unlock(&heap->lock);
    }
    {
        poolp temp[OBMALLOC_USED_POOLS_SIZE] =
            _obmalloc_pools_INIT(heap->head.om.pools);
        memcpy(&heap->head.om.pools.used, temp, sizeof(temp));
    }
    _PyGC_InitState(&heap->gc);
    /* The heap's generations follow the interpreter's settings; the
     * garbage and callbacks lists are the interpreter's (shared). */
    heap->gc.enabled = interp->gc.enabled;
    heap->gc.debug = interp->gc.debug;
    for (int i = 0; i < NUM_GENERATIONS; i++) {
        heap->gc.generations[i].threshold = interp->gc.generations[i].threshold;
    }
    heap->gc.garbage = interp->gc.garbage;
    heap->gc.callbacks = interp->gc.callbacks;
    heap->handle = h;
    heap->head.slot = h.slot;
    heap->head.gc = &heap->gc;
    _PyMPK_HeapGeneration0[h.slot] = heap->gc.generation0;
    _PyMPK_HeapsBase = _PyMPK_SlotBase(0);
    spare[h.slot] = heap;
    __atomic_store_n(&_PyMPK_Heaps[h.slot], heap, __ATOMIC_RELEASE);
    /* numpy's default data allocator caches small blocks process-wide: with
     * malloc routed, one domain's freed block would serve the next domain
     * (mpk_numpy.c). */
    if (routed) {
        _PyMPK_NumpyAdopt();
    }
    return 0;
}

int
_PyMPK_HeapEnabled(int slot)
{
    return slot >= 0 && slot < _PyMPK_SLOT_COUNT && _PyMPK_Heaps[slot] != NULL;
}

void
_PyMPK_HeapAttach(_PyMPK_Handle h)
{
    struct _PyMPK_Heap *heap = _PyMPK_Heaps[h.slot];
    assert(heap == NULL || heap->handle.generation == h.generation);
    _PyMPK_ThreadHeap = heap;
}

void
_PyMPK_HeapDetach(void)
{
    _PyMPK_ThreadHeap = NULL;
}

void
_PyMPK_HeapForget(int slot)
{
    struct _PyMPK_Heap *heap = _PyMPK_Heaps[slot];
    if (heap == NULL) {
        return;
    }
    /* No lock taken: the caller holds the domain table's lock, which the
     * block allocator takes under a heap's lock.  A free() racing with the
     * destroy (only possible without keys: with keys a thread outside the
     * domain faults on the block's header) may still hold the pointer: the
     * bookkeeping stays valid in spare[slot] until the slot's next heap,
     * and the slot memory it could ask for is refused (stale handle). */
    __atomic_store_n(&_PyMPK_Heaps[slot], NULL, __ATOMIC_RELEASE);
    _PyMPK_HeapGeneration0[slot] = NULL;
    _PyObject_FiniHeapState(&heap->head.om);
}

int
_PyMPK_HeapGetStats(int slot, _PyMPK_HeapStats *out)
{
    if (!_PyMPK_HeapEnabled(slot)) {
        return -1;
    }
    struct _PyMPK_Heap *heap = _PyMPK_Heaps[slot];
    pthread_mutex_lock(&heap->lock);
    *out = heap->stats;
    out->huge_extents_free = heap->nextents;
    pthread_mutex_unlock(&heap->lock);
    out->arenas_free = heap->narenas_free;
    return 0;
}

/* ====================================================================== */
/* Slot memory                                                            */

/* Fresh, zeroed, tagged memory from the domain's slot. */
static void *
slot_alloc(struct _PyMPK_Heap *heap, size_t size, size_t align)
{
    void *p;
    if (_PyMPK_Alloc(heap->handle, size, align, &p) != _PyMPK_OK) {
        return NULL;
    }
    return p;
}

/* Drop the pages' contents (they read back as zeros) and their memory;
 * the range keeps its protection and key. */
static void
zero_pages(uintptr_t addr, size_t size)
{
    int rc = madvise((void *)addr, size, MADV_DONTNEED);
    assert(rc == 0);
    (void)rc;
}

void *
_PyMPK_HeapArenaAlloc(struct _PyMPK_Heap *heap, size_t size)
{
    void *arena;
    assert(size == ARENA_SIZE);
    if (heap->narenas_free > 0) {
        arena = (void *)heap->arenas_free[--heap->narenas_free];
    }
    else {
        arena = slot_alloc(heap, size, POOL_SIZE);
    }
    if (arena != NULL) {
        heap->stats.arenas++;
    }
    return arena;
}

void
_PyMPK_HeapArenaFree(struct _PyMPK_Heap *heap, void *arena, size_t size)
{
    assert(size == ARENA_SIZE);
    /* Every arena is distinct and inside the slot: the table cannot
     * overflow. */
    assert(heap->narenas_free < MAX_ARENAS);
    zero_pages((uintptr_t)arena, size);
    heap->arenas_free[heap->narenas_free++] = (uintptr_t)arena;
    heap->stats.arenas--;
}

/* ====================================================================== */
/* Blocks: a 16-byte header {capacity, magic} before the payload          */
/*                                                                        */
/* Used by obmalloc for requests above 512 bytes (with the GIL) and by C  */
/* malloc() inside the domain for every size (with or without it): every */
/* entry point below takes the heap's lock.                               */

static int
class_of(size_t need)
{
    assert(need >= MIN_BLOCK && need <= LARGE_MAX && need % 16 == 0);
    if (need <= SMALL_MAX) {
        return (int)(need / 16) - 2;
    }
    size_t n = need - 1;
    int k = 63 - __builtin_clzll((unsigned long long)n);
    size_t step = (size_t)1 << (k - 2);
    return NSMALL + (k - 7) * 4 + (int)((n - ((size_t)1 << k)) / step);
}

static size_t
class_size(int c)
{
    if (c < NSMALL) {
        return (size_t)(c + 2) * 16;
    }
    c -= NSMALL;
    int k = c / 4 + 7;
    return ((size_t)1 << k) + (size_t)(c % 4 + 1) * ((size_t)1 << (k - 2));
}

static void *
finish_block(uintptr_t block, size_t capacity, size_t magic)
{
    ((size_t *)block)[0] = capacity;
    ((size_t *)block)[1] = magic;
    return (void *)(block + HEADER);
}

/* Carve what is left of the current chunk into free blocks of the largest
 * classes that fit, so no chunk tail is wasted. */
static void
retire_chunk(struct _PyMPK_Heap *heap)
{
    while (heap->chunk_end - heap->chunk_next >= MIN_BLOCK) {
        size_t left = heap->chunk_end - heap->chunk_next;
        int c = class_of(left < LARGE_MAX ? left : LARGE_MAX);
        if (class_size(c) > left) {
            c--;
        }
        void **block = (void **)(heap->chunk_next + HEADER);
        ((size_t *)heap->chunk_next)[0] = class_size(c);
        ((size_t *)heap->chunk_next)[1] = MAGIC_FREE;
        *block = heap->class_free[c];
        heap->class_free[c] = block;
        heap->chunk_next += class_size(c);
    }
    heap->chunk_next = heap->chunk_end = 0;
}

static void *
class_alloc(struct _PyMPK_Heap *heap, size_t need)
{
    int c = class_of(need);
    size_t size = class_size(c);
    void **free_block = heap->class_free[c];

    if (free_block != NULL) {
        heap->class_free[c] = *free_block;
        *free_block = NULL;
        ((size_t *)free_block)[-1] = MAGIC_CLASS;
        return free_block;
    }
    if (heap->chunk_end - heap->chunk_next < size) {
        retire_chunk(heap);
        void *chunk = slot_alloc(heap, CHUNK, PAGE);
        if (chunk == NULL) {
            return NULL;
        }
        heap->chunk_next = (uintptr_t)chunk;
        heap->chunk_end = (uintptr_t)chunk + CHUNK;
    }
    uintptr_t block = heap->chunk_next;
    heap->chunk_next += size;
    return finish_block(block, size, MAGIC_CLASS);
}

/* Take `size` bytes from the front of free extent i. */
static void
extent_take(struct _PyMPK_Heap *heap, size_t i, size_t size)
{
    extent_t *e = &heap->extents[i];
    if (!e->zeroed) {
        heap->dirty_bytes -= size;
    }
    e->addr += size;
    e->size -= size;
    if (e->size == 0) {
        memmove(e, e + 1, (heap->nextents - i - 1) * sizeof(*e));
        heap->nextents--;
    }
}

/* First fit among the free extents, else fresh slot memory (zeroed). */
static void *
huge_alloc(struct _PyMPK_Heap *heap, size_t need, int *zeroed)
{
    size_t size = (need + EXTENT_ROUND - 1) & ~(EXTENT_ROUND - 1);
    uintptr_t addr = 0;

    if (size < need) {
        return NULL;
    }
    *zeroed = 1;
    for (size_t i = 0; i < heap->nextents; i++) {
        extent_t *e = &heap->extents[i];
        if (e->size >= size) {
            addr = e->addr;
            *zeroed = e->zeroed;
            extent_take(heap, i, size);
            break;
        }
    }
    if (addr == 0) {
        void *p = slot_alloc(heap, size, PAGE);
        if (p == NULL) {
            return NULL;
        }
        addr = (uintptr_t)p;
    }
    return finish_block(addr, size, MAGIC_HUGE);
}

/* Record a free extent, merged with free neighbours (a dirty one is
 * already counted in dirty_bytes). */
static void
extent_insert(struct _PyMPK_Heap *heap, uintptr_t addr, size_t size, int zeroed)
{
    size_t i = 0;
    while (i < heap->nextents && heap->extents[i].addr < addr) {
        i++;
    }
    if (i > 0 && heap->extents[i - 1].addr + heap->extents[i - 1].size == addr) {
        heap->extents[i - 1].size += size;
        heap->extents[i - 1].zeroed &= zeroed;
        if (i < heap->nextents && addr + size == heap->extents[i].addr) {
            heap->extents[i - 1].zeroed &= heap->extents[i].zeroed;
            heap->extents[i - 1].size += heap->extents[i].size;
            memmove(&heap->extents[i], &heap->extents[i + 1],
                    (heap->nextents - i - 1) * sizeof(extent_t));
            heap->nextents--;
        }
        return;
    }
    if (i < heap->nextents && addr + size == heap->extents[i].addr) {
        heap->extents[i].addr = addr;
        heap->extents[i].size += size;
        heap->extents[i].zeroed &= zeroed;
        return;
    }
    if (heap->nextents == MAX_FREE_EXTENTS) {
        /* Zeroed, they hold no memory; only their addresses are lost to
         * this heap. */
        if (!zeroed) {
            zero_pages(addr, size);
            heap->dirty_bytes -= size;
        }
        heap->stats.huge_extents_lost++;
        return;
    }
    memmove(&heap->extents[i + 1], &heap->extents[i],
            (heap->nextents - i) * sizeof(extent_t));
    heap->extents[i].addr = addr;
    heap->extents[i].size = size;
    heap->extents[i].zeroed = zeroed;
    heap->nextents++;
}

/* Give an extent back; it stays dirty for reuse while the heap holds less
 * than MAX_DIRTY such bytes. */
static void
huge_free(struct _PyMPK_Heap *heap, uintptr_t addr, size_t size)
{
    int zeroed = 0;
    if (heap->dirty_bytes + size > MAX_DIRTY) {
        zero_pages(addr, size);
        zeroed = 1;
    }
    else {
        heap->dirty_bytes += size;
    }
    extent_insert(heap, addr, size, zeroed);
}

/* Grow a page-extent block in place to hold `size` payload bytes, from the
 * free extent right after it or from fresh slot memory that happens to
 * follow it (a growing list or buffer allocated last); 0 if neither. */
static int
huge_grow(struct _PyMPK_Heap *heap, void *p, size_t size)
{
    size_t *header = (size_t *)((uintptr_t)p - HEADER);
    size_t capacity = header[0];
    size_t need = (size + HEADER + EXTENT_ROUND - 1) & ~(EXTENT_ROUND - 1);
    uintptr_t end = (uintptr_t)header + capacity;
    size_t more;

    if ((header[1] & ~FROM_C) != MAGIC_HUGE || need <= size || need <= capacity) {
        return 0;
    }
    more = need - capacity;
    for (size_t i = 0; i < heap->nextents && heap->extents[i].addr <= end; i++) {
        if (heap->extents[i].addr == end && heap->extents[i].size >= more) {
            extent_take(heap, i, more);
            goto grown;
        }
    }
    void *fresh = slot_alloc(heap, more, PAGE);
    if (fresh == NULL) {
        return 0;
    }
    if ((uintptr_t)fresh != end) {
        extent_insert(heap, (uintptr_t)fresh, more, 1);  /* fresh: zeroed */
        return 0;
    }
grown:
    header[0] = need;
    if (header[1] & FROM_C) {
        heap->stats.malloc_bytes += more;
    }
    else {
        heap->stats.large_bytes += more;
    }
    return 1;
}

/* A block with at least `size` payload bytes; the lock is held.  `from_c`
 * says which counters it goes to (C malloc or obmalloc). */
static void *
block_alloc(struct _PyMPK_Heap *heap, size_t size, int zero, int from_c)
{
    size_t need = (size == 0 ? 1 : size) + HEADER;
    int zeroed = 0;
    void *p;

    if (need < size || need > _PyMPK_SLOT_SIZE) {
        return NULL;
    }
    need = (need + 15) & ~(size_t)15;
    if (need < MIN_BLOCK) {
        need = MIN_BLOCK;
    }
    p = need <= LARGE_MAX ? class_alloc(heap, need)
                          : huge_alloc(heap, need, &zeroed);
    if (p == NULL) {
        return NULL;
    }
    if (from_c) {
        ((size_t *)p)[-1] |= FROM_C;
        heap->stats.malloc_blocks++;
        heap->stats.malloc_bytes += ((size_t *)p)[-2];
    }
    else {
        heap->stats.large_blocks++;
        heap->stats.large_bytes += ((size_t *)p)[-2];
    }
    if (zero && !zeroed) {
        memset(p, 0, size);
    }
    return p;
}

_Py_NO_RETURN static void
bad_block(const char *what)
{
    Py_FatalError(what);
}

/* The header of payload p: its capacity (block size, header included). */
static size_t
block_capacity(void *p, size_t *magic)
{
    size_t *header = (size_t *)((uintptr_t)p - HEADER);
    *magic = header[1];
    if ((*magic & ~FROM_C) != MAGIC_CLASS && (*magic & ~FROM_C) != MAGIC_HUGE) {
        bad_block(*magic == MAGIC_FREE
                  ? "private heap: double free (or use after free) of a block"
                  : "private heap: free or realloc of a pointer that no "
                    "allocator of this domain handed out");
    }
    return header[0];
}

/* The payload a (possibly over-aligned) pointer p belongs to. */
static void *
block_of(void *p)
{
    size_t *header = (size_t *)((uintptr_t)p - HEADER);
    if (header[1] == MAGIC_ALIGNED) {
        void *base = (void *)header[0];
        if ((uintptr_t)base >= (uintptr_t)p
            || (uintptr_t)p - (uintptr_t)base > _PyMPK_SLOT_SIZE / 2)
        {
            bad_block("private heap: corrupt header of an aligned block");
        }
        return base;
    }
    return p;
}

static void
block_free(struct _PyMPK_Heap *heap, void *p)
{
    size_t magic;
    size_t capacity = block_capacity(p, &magic);
    uintptr_t block = (uintptr_t)p - HEADER;

    if (magic & FROM_C) {
        heap->stats.malloc_blocks--;
        heap->stats.malloc_bytes -= capacity;
    }
    else {
        heap->stats.large_blocks--;
        heap->stats.large_bytes -= capacity;
    }
    if ((magic & ~FROM_C) == MAGIC_HUGE) {
        ((size_t *)block)[1] = MAGIC_FREE;
        huge_free(heap, block, capacity);
        return;
    }
    int c = class_of(capacity);
    if (class_size(c) != capacity) {
        bad_block("private heap: corrupt block header (no such class)");
    }
    ((size_t *)block)[1] = MAGIC_FREE;
    *(void **)p = heap->class_free[c];
    heap->class_free[c] = p;
}

/* Usable bytes at p (an aligned pointer's own share of its block). */
static size_t
block_usable(void *p)
{
    size_t magic;
    void *base = block_of(p);
    size_t capacity = block_capacity(base, &magic);
    return capacity - HEADER - ((uintptr_t)p - (uintptr_t)base);
}

static void *
block_realloc(struct _PyMPK_Heap *heap, void *p, size_t size, int from_c)
{
    void *base = block_of(p);
    size_t usable = block_usable(p);
    void *q;

    /* Grow in place when it fits; shrink in place unless more than half
     * would be wasted.  An aligned pointer moves to a plain block (realloc
     * keeps malloc's alignment only). */
    if (base == p && size <= usable && (size >= usable / 2 || usable <= 1024)) {
        return p;
    }
    if (base == p && size > usable && huge_grow(heap, p, size)) {
        return p;
    }
    /* A block that grows tends to grow again (a list being appended to, a
     * buffer being filled): a quarter more room lets the next growths happen
     * in place, as glibc's realloc extends a chunk into free space. */
    size_t want = size;
    if (size > usable && size + size / 4 > size) {
        want = size + size / 4;
    }
    q = block_alloc(heap, want, 0, from_c);
    if (q == NULL) {
        return NULL;
    }
    memcpy(q, p, size < usable ? size : usable);
    block_free(heap, base);
    return q;
}

/* --- obmalloc's entry points (GIL held) -------------------------------- */

void *
_PyMPK_HeapLargeAlloc(struct _PyMPK_Heap *heap, size_t size)
{
    pthread_mutex_lock(&heap->lock);
    void *p = block_alloc(heap, size, 0, 0);
    pthread_mutex_unlock(&heap->lock);
    return p;
}

void *
_PyMPK_HeapLargeCalloc(struct _PyMPK_Heap *heap, size_t size)
{
    pthread_mutex_lock(&heap->lock);
    void *p = block_alloc(heap, size, 1, 0);
    pthread_mutex_unlock(&heap->lock);
    return p;
}

void
_PyMPK_HeapLargeFree(struct _PyMPK_Heap *heap, void *p)
{
    pthread_mutex_lock(&heap->lock);
    block_free(heap, block_of(p));
    pthread_mutex_unlock(&heap->lock);
}

void *
_PyMPK_HeapLargeRealloc(struct _PyMPK_Heap *heap, void *p, size_t size)
{
    pthread_mutex_lock(&heap->lock);
    void *q = block_realloc(heap, p, size, 0);
    pthread_mutex_unlock(&heap->lock);
    return q;
}

/* --- C malloc's entry points (mpk_malloc.c; any thread, GIL or not) ---- */

void *
_PyMPK_HeapMalloc(struct _PyMPK_Heap *heap, size_t size, int zero)
{
    pthread_mutex_lock(&heap->lock);
    void *p = block_alloc(heap, size, zero, 1);
    pthread_mutex_unlock(&heap->lock);
    return p;
}

void *
_PyMPK_HeapMemalign(struct _PyMPK_Heap *heap, size_t align, size_t size)
{
    void *base, *p;

    if (align <= 16) {
        return _PyMPK_HeapMalloc(heap, size, 0);
    }
    if (size > _PyMPK_SLOT_SIZE || align > _PyMPK_SLOT_SIZE / 2) {
        return NULL;
    }
    pthread_mutex_lock(&heap->lock);
    /* The payload is 16-aligned: the aligned pointer lies at most
     * align - 16 bytes past payload + 16, which leaves room for its own
     * header. */
    base = block_alloc(heap, size + align, 0, 1);
    pthread_mutex_unlock(&heap->lock);
    if (base == NULL || ((uintptr_t)base & (align - 1)) == 0) {
        return base;
    }
    p = (void *)(((uintptr_t)base + HEADER + align - 1) & ~(uintptr_t)(align - 1));
    ((size_t *)p)[-2] = (size_t)base;
    ((size_t *)p)[-1] = MAGIC_ALIGNED;
    return p;
}

void
_PyMPK_HeapFree(struct _PyMPK_Heap *heap, void *p)
{
    pthread_mutex_lock(&heap->lock);
    block_free(heap, block_of(p));
    pthread_mutex_unlock(&heap->lock);
}

void *
_PyMPK_HeapRealloc(struct _PyMPK_Heap *heap, void *p, size_t size)
{
    pthread_mutex_lock(&heap->lock);
    void *q = block_realloc(heap, p, size, 1);
    pthread_mutex_unlock(&heap->lock);
    return q;
}

size_t
_PyMPK_HeapUsableSize(void *p)
{
    /* Reads only the block's own headers: no lock. */
    return block_usable(p);
}

#else /* !Py_BUILD_CORE_BUILTIN: an ordinary extension for tests */

int
_PyMPK_HeapEnable(_PyMPK_Handle h, const char **why)
{
    (void)h;
    *why = "this _faastlane was built as an extension module: only the "
           "cpython-mpk runtime has the allocator hooks for private heaps";
    return -1;
}

int
_PyMPK_HeapEnabled(int slot)
{
    (void)slot;
    return 0;
}

void
_PyMPK_HeapAttach(_PyMPK_Handle h)
{
    (void)h;
}

void
_PyMPK_HeapDetach(void)
{
}

void
_PyMPK_HeapForget(int slot)
{
    (void)slot;
}

int
_PyMPK_HeapGetStats(int slot, _PyMPK_HeapStats *out)
{
    (void)slot;
    (void)out;
    return -1;
}

#endif /* Py_BUILD_CORE_BUILTIN */
