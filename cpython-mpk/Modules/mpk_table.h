/* mpk_table.h -- the domain table: one slot per domain, its state in one word.
 *
 * Owned by the policy (mpk_domain.c).  Declared here because parking
 * (mpk_keys.c) must also read slots and claim idle ones, under the table
 * lock its caller holds.
 */
#ifndef FAASTLANE_MPK_TABLE_H
#define FAASTLANE_MPK_TABLE_H

#include "faastlane_mpk.h"

#include <stdatomic.h>

/* The slot word: generation (32 bits) | state (2) | PARKED (1) | threads
 * inside (29).  The gates change it with one atomic operation each. */
#define STATE_FREE 0u
#define STATE_LIVE 1u
#define STATE_DYING 2u
/* Destroy failed half way: the slot (and perhaps its key) is never reused. */
#define STATE_QUARANTINED 3u
/* A LIVE domain that gave its key up: the entry gate's fast path refuses it
 * (the compare-and-swap expects the bit clear) and takes the table lock. */
#define PARKED_BIT (1u << 29)
#define ENTERED_MASK (PARKED_BIT - 1)

static inline uint64_t
word_pack(uint32_t generation, unsigned int state, uint32_t entered)
{
    return ((uint64_t)generation << 32) | ((uint64_t)state << 30) | entered;
}

static inline uint32_t
word_generation(uint64_t w)
{
    return (uint32_t)(w >> 32);
}

static inline unsigned int
word_state(uint64_t w)
{
    return (unsigned int)(w >> 30) & 3u;
}

static inline uint32_t
word_entered(uint64_t w)
{
    return (uint32_t)w & ENTERED_MASK;
}

typedef struct {
    _Atomic uint64_t word;
    /* Written under the table lock before the word turns LIVE (release),
     * read by the gates after they see LIVE (acquire).  key is -1 without
     * keys and while parked. */
    int key;
    uint32_t pkru;
    size_t committed;
    size_t used;
    _Atomic uint64_t enters;
    _Atomic uint64_t exits;
    _Atomic uint64_t last_exit;  /* the exit clock's value: parking is LRU */
} slot_t;

/* Everything but the word changes only under the table lock. */
extern slot_t _PyMPK_Slots[_PyMPK_SLOT_COUNT];

/* Record the calling thread's error (_PyMPK_LastError): the message, then
 * ": strerror(err)" when err is not 0. */
void _PyMPK_SetError(int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif /* !FAASTLANE_MPK_TABLE_H */
