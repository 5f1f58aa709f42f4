/* mpk_twins.h -- twins: a domain's own copy of an object it must not share.
 *
 * Two tables map an object outside a domain to the domain's twin of it, per
 * domain slot: the standard library's caches (mpk_caches.c) and the leaves of
 * the inputs a function was handed (mpk_exit.c).  Both key on the original's
 * address and hold a strong reference to it, so the address is never reused
 * while its entry lives.  Open addressing, linear probing, no deletion: a
 * table is grown or dropped whole.  Everything runs with the GIL held.
 */
#ifndef FAASTLANE_MPK_TWINS_H
#define FAASTLANE_MPK_TWINS_H

#include "Python.h"

#include <stdint.h>

typedef struct {
    PyObject *original;   /* a strong reference; NULL: an empty bucket */
    PyObject *twin;       /* a strong reference, in the domain's heap */
} _PyMPK_TwinEntry;

/* The bucket of `original` among `size` (a power of two, at least 2) buckets: its entry,
 * or the empty bucket where it belongs.  The table must have an empty one. */
static inline _PyMPK_TwinEntry *
_PyMPK_TwinBucket(_PyMPK_TwinEntry *entries, size_t size, PyObject *original)
{
    size_t mask = size - 1;
    /* Fibonacci hashing takes the product's HIGH bits: its low bits depend
     * on the address's low bits only, and obmalloc puts blocks of one size
     * class at the same offsets of every pool. */
    size_t i = (size_t)(((uint64_t)(uintptr_t)original >> 4) * 0x9E3779B97F4A7C15ull
                        >> (64 - __builtin_ctzll((unsigned long long)size)));
    while (entries[i].original != NULL && entries[i].original != original) {
        i = (i + 1) & mask;
    }
    return &entries[i];
}

#endif /* !FAASTLANE_MPK_TWINS_H */
