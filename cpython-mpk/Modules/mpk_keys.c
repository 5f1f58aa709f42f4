/* mpk_keys.c -- the domain layer with hardware protection keys.
 *
 * Detection's last word (does a real pkey_alloc work here?), tagging pages
 * with pkey_mprotect, a key per domain, and key parking.  The policy that
 * calls these (mpk_domain.c) is the same with or without keys; mpk_nokeys.c
 * is this file's surface unenforced (mpk_keys.h).
 *
 * Key parking (MPK.md, "Domain lifetime"): x86 has 15 keys but a container
 * may hold more functions, each with a domain for its whole life.  A domain
 * nobody is inside may give its key up: its pages are retagged with the
 * "parking" key, which no PKRU value ever grants, and the key goes to the
 * domain being entered (its pages retagged with it).  A parked domain's
 * memory is therefore readable by no thread at all until its entry gate
 * takes a key again (two pkey_mprotect calls, on the slow path only: with 15
 * or fewer domains nothing is ever parked).  The parking key is the first
 * key given up; from then on 14 keys serve the entered domains.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "mpk_keys.h"
#include "mpk_sys.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

/* All under the table lock. */
/* Never granted by any PKRU value: tags the pages of parked domains.  -1
 * until the first domain gives its key up. */
static int parking_key = -1;
static uint64_t parkings;
static uint64_t keys_allocated;
static uint64_t keys_freed;

/* Allocated access-disabled: pkey_alloc changes the calling thread's PKRU,
 * and no thread may reach the key but through the entry gate. */
static int
alloc_key(void)
{
    return _PyMPK_SysPkeyAlloc(0, _PyMPK_PKEY_DISABLE_ACCESS
                                      | _PyMPK_PKEY_DISABLE_WRITE);
}

int
_PyMPK_KeysProbe(char *why, size_t size)
{
    int key;

#if !defined(__x86_64__)
    snprintf(why, size, "protection keys are implemented for x86-64 only");
    return 0;
#endif
    if (!_PyMPK_CPUHasPKU()) {
        snprintf(why, size,
                 "the CPU has no protection keys (CPUID.7.0:ECX.PKU clear, "
                 "no 'pku' in /proc/cpuinfo)");
        return 0;
    }
    if (!_PyMPK_CPUHasOSPKE()) {
        snprintf(why, size,
                 "the kernel did not enable protection keys "
                 "(CPUID.7.0:ECX.OSPKE clear)");
        return 0;
    }
    /* CPUID can be right while the kernel still refuses keys (built without
     * CONFIG_X86_INTEL_MEMORY_PROTECTION_KEYS, or a hypervisor that hides
     * the xsave state): only a real allocation proves they work. */
    key = alloc_key();
    if (key < 0) {
        int err = errno;
        snprintf(why, size, "pkey_alloc failed: %s (errno %d)",
                 strerror(err), err);
        return 0;
    }
    _PyMPK_SysPkeyFree(key);
    return 1;
}

static int
keys_tag(uintptr_t addr, size_t len, int prot, int key)
{
    int k = key < 0 ? 0 : key;
    if (_PyMPK_SysPkeyMprotect((void *)addr, len, prot, k) != 0) {
        _PyMPK_SetError(errno, "pkey_mprotect(addr=%#lx, len=%zu, prot=%d, "
                        "pkey=%d) failed", (unsigned long)addr, len, prot, k);
        return -1;
    }
    return 0;
}

static int
keys_tag_of(int key)
{
    return key >= 0 ? key : parking_key;
}

static _PyMPK_Status
keys_assign(slot_t *s, uint64_t live, int *parked)
{
    int key = alloc_key();
    if (key < 0 && errno != ENOSPC) {
        int err = errno;
        _PyMPK_SetError(err, "pkey_alloc(0, PKEY_DISABLE_ACCESS|"
                        "PKEY_DISABLE_WRITE) failed with %llu domains live",
                        (unsigned long long)live);
        return _PyMPK_ERR_SYSTEM;
    }
    /* Every key is taken: the domain starts parked (it has no pages yet)
     * and its first entry takes a key from a domain nobody is in. */
    if (key >= 0) {
        keys_allocated++;
    }
    *parked = key < 0;
    s->key = key;
    s->pkru = _PyMPK_PKRU_FOR_KEY(key);
    return _PyMPK_OK;
}

/* Take the key of the least recently exited domain nobody is inside: park
 * it (retag its pages with the parking key) and return its key, or -1.  The
 * compare-and-swap that sets its PARKED_BIT races only with entry gates'
 * fast paths: a gate that won keeps the domain, and the next one is tried. */
static int
park_one(int except)
{
    for (;;) {
        int victim = -1;
        uint64_t oldest = UINT64_MAX, w;
        slot_t *v;
        int key;
        for (int i = 0; i < _PyMPK_SLOT_COUNT; i++) {
            slot_t *si = &_PyMPK_Slots[i];
            uint64_t wi = atomic_load_explicit(&si->word,
                                               memory_order_acquire);
            uint64_t t = atomic_load_explicit(&si->last_exit,
                                              memory_order_relaxed);
            /* The hand-off domain keeps its key: the runtime's threads
             * hold it outside every domain (mpk_domain.c). */
            if (i != except && i != _PyMPK_HandoffSlot()
                && word_state(wi) == STATE_LIVE
                && !(wi & PARKED_BIT) && word_entered(wi) == 0
                && si->key > 0 && t < oldest)
            {
                victim = i;
                oldest = t;
            }
        }
        if (victim < 0) {
            return -1;
        }
        v = &_PyMPK_Slots[victim];
        w = atomic_load_explicit(&v->word, memory_order_acquire);
        if (word_state(w) != STATE_LIVE || (w & PARKED_BIT)
            || word_entered(w) != 0
            || !atomic_compare_exchange_strong_explicit(
                   &v->word, &w, w | PARKED_BIT,
                   memory_order_acq_rel, memory_order_acquire))
        {
            continue;  /* entered meanwhile: look again */
        }
        key = v->key;
        if (parking_key < 0) {
            /* The first key given up becomes the parking key: the victim's
             * pages already carry it, and no PKRU value will grant it. */
            parking_key = key;
            v->key = -1;
            parkings++;
            continue;
        }
        if (v->committed != 0
            && keys_tag(_PyMPK_SlotBase(victim), v->committed,
                        PROT_READ | PROT_WRITE, parking_key) != 0)
        {
            /* Still tagged with its key: give the domain its key back. */
            atomic_fetch_and_explicit(&v->word, ~(uint64_t)PARKED_BIT,
                                      memory_order_release);
            return -2;
        }
        v->key = -1;
        v->pkru = 0;
        parkings++;
        return key;
    }
}

static _PyMPK_Status
keys_unpark(int slot)
{
    slot_t *s = &_PyMPK_Slots[slot];
    int key = alloc_key();

    if (key >= 0) {
        keys_allocated++;
    }
    else {
        key = park_one(slot);
    }
    if (key == -1) {
        _PyMPK_SetError(0, "every protection key is held by a domain with a "
                        "thread inside (%d at most at once): no key for this "
                        "domain now", _PyMPK_MAX_LIVE - 1);
        return _PyMPK_ERR_LIMIT;
    }
    if (key < 0
        || (s->committed != 0
            && keys_tag(_PyMPK_SlotBase(slot), s->committed,
                        PROT_READ | PROT_WRITE, key) != 0))
    {
        /* The key (if any) goes back unused; the domain stays parked. */
        if (key >= 0 && _PyMPK_SysPkeyFree(key) == 0) {
            keys_freed++;
        }
        return _PyMPK_ERR_SYSTEM;
    }
    s->key = key;
    s->pkru = _PyMPK_PKRU_FOR_KEY(key);
    return _PyMPK_OK;
}

static _PyMPK_Status
keys_release(int key)
{
    if (key > 0) {
        if (_PyMPK_SysPkeyFree(key) != 0) {
            _PyMPK_SetError(errno, "pkey_free(%d) failed", key);
            return _PyMPK_ERR_SYSTEM;
        }
        keys_freed++;
    }
    return _PyMPK_OK;
}

static void
keys_count(_PyMPK_Counters *out)
{
    out->keys_allocated = keys_allocated;
    out->keys_freed = keys_freed;
    out->parkings = parkings;
}

const _PyMPK_KeyOps _PyMPK_KeysEnabled = {
    .enforced = 1,
    .tag = keys_tag,
    .tag_of = keys_tag_of,
    .assign = keys_assign,
    .unpark = keys_unpark,
    .release = keys_release,
    .count = keys_count,
};
