/* mpk_heap.h -- what the domain layer (mpk_domain.c) tells the private heaps.
 *
 * A domain may carry a private heap (PRIVATE_HEAPS.md): then every Python
 * allocation of a thread inside it -- obmalloc's object and mem domains,
 * blocks of every size, GC generations -- lands in the domain's slot.  The
 * heap itself is implemented in mpk_heap.c, against CPython's internals and
 * the hooks of the patch series; this header holds no Python types, so the
 * domain layer stays free of them.
 */
#ifndef FAASTLANE_MPK_HEAP_H
#define FAASTLANE_MPK_HEAP_H

#include "faastlane_mpk.h"

/* Give the live domain `h` a private heap (before any thread enters it for
 * Python work).  Returns 0, or -1 with the reason in *why (static text):
 * the runtime was built without the heap hooks, or out of memory. */
int _PyMPK_HeapEnable(_PyMPK_Handle h, const char **why);
/* 1 when the live domain in `slot` has a private heap. */
int _PyMPK_HeapEnabled(int slot);

/* Entry gate, after PKRU grants the domain: the calling thread allocates in
 * the domain's heap from now on (if it has one). */
void _PyMPK_HeapAttach(_PyMPK_Handle h);
/* Exit gate: the calling thread allocates in the shared heap again. */
void _PyMPK_HeapDetach(void);
/* Destroy, with no thread inside: forget the heap of `slot`, releasing its
 * bookkeeping (which lies outside the slot); the slot itself is zeroed and
 * given back by the domain layer right after. */
void _PyMPK_HeapForget(int slot);

typedef struct {
    size_t arenas;              /* obmalloc arenas in use */
    size_t arenas_free;         /* arenas kept for reuse (zeroed) */
    size_t large_blocks;        /* live obmalloc blocks > 512 bytes */
    size_t large_bytes;         /* their capacity */
    size_t malloc_blocks;       /* live blocks of C malloc() inside */
    size_t malloc_bytes;        /* their capacity */
    size_t huge_extents_free;   /* free page extents kept for reuse */
    size_t huge_extents_lost;   /* free extents the table could not hold */
} _PyMPK_HeapStats;

/* Counters of the heap of the live domain in `slot`; -1 without a heap. */
int _PyMPK_HeapGetStats(int slot, _PyMPK_HeapStats *out);

/* ---------------------------------------------------------------------- */
/* C malloc() inside a domain (mpk_malloc.c routes, mpk_heap.c allocates)  */

struct _PyMPK_Heap;

/* At each private heap's creation.  C malloc is routed by domain only when
 * FAASTLANE_MPK_MALLOC=on (read once): then, the first time, learn which
 * callers of malloc stay shared and keep the raw domain shared.  Returns 1
 * (routed), 0 (not routed: malloc stays glibc's everywhere), or -1 with the
 * reason in *why. */
int _PyMPK_MallocPrepare(const char **why);
/* 1 once C malloc is routed by domain (set by the first private heap). */
int _PyMPK_MallocRouted(void);
/* Code in [start, end) allocates shared (C malloc and PyMem_*) even on a
 * thread inside a domain: extensions' process-wide caches.  0, or -1 and why. */
int _PyMPK_ShareCallerRange(uintptr_t start, uintptr_t end, const char **why);
/* numpy's default data allocator: from now on through malloc(), without
 * its process-wide cache of small blocks (no-op without numpy). */
void _PyMPK_NumpyAdopt(void);

/* The heap's block allocator, for any thread (GIL or not): payloads are
 * 16-aligned; free/realloc/usable-size take a payload (or an aligned
 * pointer into one) of the same heap. */
void *_PyMPK_HeapMalloc(struct _PyMPK_Heap *heap, size_t size, int zero);
void *_PyMPK_HeapMemalign(struct _PyMPK_Heap *heap, size_t align, size_t size);
void _PyMPK_HeapFree(struct _PyMPK_Heap *heap, void *p);
void *_PyMPK_HeapRealloc(struct _PyMPK_Heap *heap, void *p, size_t size);
size_t _PyMPK_HeapUsableSize(void *p);

#endif /* !FAASTLANE_MPK_HEAP_H */
