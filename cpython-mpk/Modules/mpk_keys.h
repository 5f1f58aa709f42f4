/* mpk_keys.h -- what the domain policy asks of protection keys.
 *
 * Two implementations of one surface, like wasmtime's vm/mpk/enabled.rs and
 * disabled.rs:
 *   mpk_keys.c    hardware keys: pages tagged with pkey_mprotect, one key per
 *                 entered domain, PKRU written at the gates, idle domains
 *                 parked when the keys run out;
 *   mpk_nokeys.c  the same surface unenforced: plain mprotect, no key ever
 *                 allocated, nothing parked, no PKRU instruction reached (on
 *                 a CPU without pku they raise SIGILL).
 * mpk_domain.c picks one once, in detection, and calls the slow-path
 * operations through its table.  The gates' PKRU write is no table call: it
 * is the one key operation on their fast path, so it is a flag test and a
 * direct call of the checked gate (_PyMPK_KeysWritePKRU, inline below).
 *
 * Operations marked "lock held" run under the domain table's lock.
 */
#ifndef FAASTLANE_MPK_KEYS_H
#define FAASTLANE_MPK_KEYS_H

#include "faastlane_mpk.h"
#include "mpk_table.h"

typedef struct {
    /* 1 for hardware keys: the gates write PKRU and tags are enforced. */
    int enforced;

    /* Give the pages [addr, addr + len) protection `prot` and key `key`
     * (key 0 when key < 0; no keys: plain mprotect, key ignored).  0, or -1
     * with the error set. */
    int (*tag)(uintptr_t addr, size_t len, int prot, int key);

    /* The key pages committed now for a domain holding `key` must carry:
     * `key` itself, the parking key while parked (-1 before any key was
     * given up: nothing may be committed then).  No keys: 0, the key of
     * every page. */
    int (*tag_of)(int key);

    /* Create, lock held: set s->key and s->pkru for a new domain and say in
     * *parked whether it starts parked (keys: every key is taken).  On
     * failure (with the error set, naming `live` domains) s is untouched. */
    _PyMPK_Status (*assign)(slot_t *s, uint64_t live, int *parked);

    /* The slow entry gate, lock held: give the parked domain in `slot` a key
     * (a free one, or one taken from a domain nobody is inside), retag its
     * pages and set its key and pkru.  _PyMPK_ERR_LIMIT when every key is
     * in use right now, _PyMPK_ERR_SYSTEM when a call failed; either way
     * with the error set and the domain still parked.  No keys: nothing
     * ever parks, so it is never called (and would have nothing to do). */
    _PyMPK_Status (*unpark)(int slot);

    /* Destroy, lock held, after the domain's pages were zeroed and retagged
     * key 0: give its key back (key <= 0: none to give).  Never before the
     * retag -- the next pkey_alloc would return the key with the pages
     * still obeying it. */
    _PyMPK_Status (*release)(int key);

    /* Counters, lock held: keys_allocated, keys_freed and parkings (no
     * keys: all 0). */
    void (*count)(_PyMPK_Counters *out);
} _PyMPK_KeyOps;

extern const _PyMPK_KeyOps _PyMPK_KeysEnabled;   /* mpk_keys.c */
extern const _PyMPK_KeyOps _PyMPK_KeysDisabled;  /* mpk_nokeys.c */

/* Detection's own test (mpk_keys.c): 1 when hardware keys work here, else
 * 0 with the reason written into why[size]. */
int _PyMPK_KeysProbe(char *why, size_t size);

/* The gates' PKRU write: write *pkru through the checked gate and return
 * it, or return 0 and write nothing without keys.  Async-signal-safe. */
static inline uint32_t
_PyMPK_KeysWritePKRU(const _PyMPK_KeyOps *ops, const uint32_t *pkru)
{
    if (!ops->enforced) {
        return 0;
    }
    _PyMPK_GateWrite(pkru);
    return *pkru;
}

#endif /* !FAASTLANE_MPK_KEYS_H */
