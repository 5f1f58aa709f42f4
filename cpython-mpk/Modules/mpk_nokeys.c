/* mpk_nokeys.c -- the domain layer where protection keys do not work.
 *
 * mpk_keys.h's surface, unenforced: the policy (mpk_domain.c) keeps every
 * piece of its bookkeeping -- slots reserved and committed, handles, gate
 * misuse checks, zeroing on destroy -- while pages keep key 0, no key is
 * ever allocated, nothing parks and the gates write no PKRU.
 */
#include "mpk_keys.h"

#include <errno.h>
#include <sys/mman.h>

static int
nokeys_tag(uintptr_t addr, size_t len, int prot, int key)
{
    (void)key;
    if (mprotect((void *)addr, len, prot) != 0) {
        _PyMPK_SetError(errno, "mprotect(addr=%#lx, len=%zu, prot=%d) failed",
                        (unsigned long)addr, len, prot);
        return -1;
    }
    return 0;
}

static int
nokeys_tag_of(int key)
{
    (void)key;
    return 0;
}

static _PyMPK_Status
nokeys_assign(slot_t *s, uint64_t live, int *parked)
{
    (void)live;
    *parked = 0;
    s->key = -1;
    s->pkru = 0;
    return _PyMPK_OK;
}

static _PyMPK_Status
nokeys_unpark(int slot)
{
    (void)slot;
    return _PyMPK_OK;
}

static _PyMPK_Status
nokeys_release(int key)
{
    (void)key;
    return _PyMPK_OK;
}

static void
nokeys_count(_PyMPK_Counters *out)
{
    out->keys_allocated = 0;
    out->keys_freed = 0;
    out->parkings = 0;
}

const _PyMPK_KeyOps _PyMPK_KeysDisabled = {
    .enforced = 0,
    .tag = nokeys_tag,
    .tag_of = nokeys_tag_of,
    .assign = nokeys_assign,
    .unpark = nokeys_unpark,
    .release = nokeys_release,
    .count = nokeys_count,
};
