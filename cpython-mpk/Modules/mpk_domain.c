/* mpk_domain.c -- the policy: slots, the domain table, the gates.
 *
 * State of one slot lives in one atomic word (generation, state, number of
 * threads inside), so the gates need no lock: enter is one compare-and-swap
 * that fails for a destroyed domain, exit one subtraction.  Creation,
 * destruction and allocation change more than the word and take the table
 * lock; they never wait for anything else while holding it.
 *
 * The policy is the same with or without protection keys.  What keys add --
 * tagging pages, allocating and freeing keys, parking, the gates' PKRU write
 * -- is behind mpk_keys.h: mpk_keys.c with keys, mpk_nokeys.c without, one
 * of them picked once by detect().
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "faastlane_mpk.h"
#include "mpk_heap.h"
#include "mpk_keys.h"
#include "mpk_table.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Variables read on the signal path use the initial-exec model: no lazy
 * allocation (and no malloc) on first access from a handler. */
#define SIGNAL_SAFE_TLS __attribute__((tls_model("initial-exec")))

/* ====================================================================== */
/* Process-wide state                                                     */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
/* No keys until detection says so: the signal path may run before it. */
static const _PyMPK_KeyOps *keys = &_PyMPK_KeysDisabled;
static char unavailable_reason[256];

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
slot_t _PyMPK_Slots[_PyMPK_SLOT_COUNT];
/* 0 until the first domain reserves the slots; never changes after. */
static _Atomic uintptr_t slots_base;
static int next_slot;       /* round robin: a freed slot rests before reuse */
static uint64_t live;
static uint64_t peak_live;
static _Atomic uint64_t exit_clock;
static uint64_t created;
static uint64_t destroyed;
static uint64_t retired_enters;  /* gate counts of destroyed domains */
static uint64_t retired_exits;
static _Atomic uint64_t misuse;

/* ====================================================================== */
/* Per-thread state                                                       */

static _Thread_local int tls_slot SIGNAL_SAFE_TLS = -1;
static _Thread_local uint32_t tls_generation SIGNAL_SAFE_TLS;
/* The PKRU this thread's last gate wrote: what the signal path restores. */
static _Thread_local uint32_t tls_pkru SIGNAL_SAFE_TLS = _PyMPK_PKRU_SHARED;
/* The slot of the domain whose function code this thread runs, sealed (-1:
 * not sealed).  Set by _PyMPK_EnterSealed, cleared only by _PyMPK_ExitSealed;
 * a thread born sealed (mpk_thread.c) keeps it for life. */
static _Thread_local int tls_sealed_slot SIGNAL_SAFE_TLS = -1;
static _Thread_local int tls_sealed_for_life;

/* The hand-off domain (_PyMPK_SetHandoff): the data in flight between
 * functions lives in its heap.  A thread outside every domain holds its key
 * as well as key 0 (outside_pkru), so the runtime reads that data wherever
 * it runs; function code never holds it (its domains' values are computed
 * from _PyMPK_PKRU_SHARED, and a thread it started leaves a domain with
 * _PyMPK_PKRU_SHARED). */
static _Atomic int handoff_slot = -1;
static _Atomic uint32_t outside_pkru = _PyMPK_PKRU_SHARED;

static _Thread_local char tls_error[320];
static _Thread_local int tls_errno;

void
_PyMPK_SetError(int err, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(tls_error, sizeof(tls_error), fmt, ap);
    va_end(ap);
    if (err && n >= 0 && (size_t)n < sizeof(tls_error)) {
        snprintf(tls_error + n, sizeof(tls_error) - (size_t)n, ": %s",
                 strerror(err));
    }
    tls_errno = err;
}

const char *
_PyMPK_LastError(void)
{
    return tls_error;
}

int
_PyMPK_LastErrno(void)
{
    return tls_errno;
}

static _PyMPK_Status
refuse(_PyMPK_Status status)
{
    atomic_fetch_add_explicit(&misuse, 1, memory_order_relaxed);
    return status;
}

/* ====================================================================== */
/* Detection                                                              */

static void
atfork_prepare(void)
{
    pthread_mutex_lock(&table_lock);
}

static void
atfork_parent(void)
{
    pthread_mutex_unlock(&table_lock);
}

/* Only the forking thread survives in the child: the threads counted inside
 * domains are gone, and their domains must still be destroyable there. */
static void
atfork_child(void)
{
    for (int i = 0; i < _PyMPK_SLOT_COUNT; i++) {
        uint64_t w = atomic_load_explicit(&_PyMPK_Slots[i].word,
                                          memory_order_relaxed);
        uint32_t entered = (i == tls_slot) ? 1 : 0;
        atomic_store_explicit(&_PyMPK_Slots[i].word,
                              word_pack(word_generation(w), word_state(w),
                                        entered) | (w & PARKED_BIT),
                              memory_order_relaxed);
    }
    pthread_mutex_init(&table_lock, NULL);
}

static void
detect(void)
{
    const char *setting = getenv("FAASTLANE_MPK");

    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    if (setting != NULL && strcmp(setting, "off") == 0) {
        snprintf(unavailable_reason, sizeof(unavailable_reason),
                 "protection keys disabled by FAASTLANE_MPK=off");
        return;
    }
    if (!_PyMPK_KeysProbe(unavailable_reason, sizeof(unavailable_reason))) {
        return;
    }
    keys = &_PyMPK_KeysEnabled;
}

void
_PyMPK_Init(void)
{
    pthread_once(&init_once, detect);
}

int
_PyMPK_KeysAvailable(void)
{
    _PyMPK_Init();
    return keys->enforced;
}

const char *
_PyMPK_UnavailableReason(void)
{
    _PyMPK_Init();
    return keys->enforced ? NULL : unavailable_reason;
}

/* ====================================================================== */
/* Slots                                                                  */

uintptr_t
_PyMPK_SlotBase(int slot)
{
    uintptr_t base = atomic_load_explicit(&slots_base, memory_order_acquire);
    if (base == 0 || slot < 0 || slot >= _PyMPK_SLOT_COUNT) {
        return 0;
    }
    return base + ((uintptr_t)slot << _PyMPK_SLOT_SHIFT);
}

int
_PyMPK_SlotOf(const void *p)
{
    uintptr_t base = atomic_load_explicit(&slots_base, memory_order_relaxed);
    uintptr_t a = (uintptr_t)p;
    uintptr_t index;

    if (base == 0 || a < base) {
        return -1;
    }
    index = (a - base) >> _PyMPK_SLOT_SHIFT;
    return index < _PyMPK_SLOT_COUNT ? (int)index : -1;
}

/* Reserve every slot at once, PROT_NONE and without commit charge, aligned
 * to the slot size.  Called with the table lock held. */
static _PyMPK_Status
reserve_slots(void)
{
    size_t total = (size_t)_PyMPK_SLOT_COUNT * _PyMPK_SLOT_SIZE;
    size_t mapped = total + _PyMPK_SLOT_SIZE;
    uintptr_t start, aligned;
    void *p;

    if (atomic_load_explicit(&slots_base, memory_order_relaxed) != 0) {
        return _PyMPK_OK;
    }
    p = mmap(NULL, mapped, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        _PyMPK_SetError(errno, "cannot reserve %zu bytes of address space "
                        "for protection domains (mmap PROT_NONE|"
                        "MAP_NORESERVE)", total);
        return _PyMPK_ERR_SYSTEM;
    }
    start = (uintptr_t)p;
    aligned = (start + _PyMPK_SLOT_SIZE - 1) & ~(uintptr_t)(_PyMPK_SLOT_SIZE - 1);
    if (aligned > start) {
        munmap(p, aligned - start);
    }
    if (start + mapped > aligned + total) {
        munmap((void *)(aligned + total), start + mapped - (aligned + total));
    }
    atomic_store_explicit(&slots_base, aligned, memory_order_release);
    return _PyMPK_OK;
}

static int
valid_slot(int slot)
{
    return slot >= 0 && slot < _PyMPK_SLOT_COUNT;
}

/* Whether `h` names a live domain right now (the caller holds the lock). */
static int
is_live(_PyMPK_Handle h)
{
    uint64_t w;
    if (!valid_slot(h.slot)) {
        return 0;
    }
    w = atomic_load_explicit(&_PyMPK_Slots[h.slot].word, memory_order_acquire);
    return word_generation(w) == h.generation && word_state(w) == STATE_LIVE;
}

/* ====================================================================== */
/* Create and destroy                                                     */

_PyMPK_Status
_PyMPK_Create(_PyMPK_Handle *out)
{
    _PyMPK_Status status = _PyMPK_OK;
    slot_t *s = NULL;
    int index = -1;
    int parked;

    _PyMPK_Init();
    if (tls_sealed_slot >= 0) {
        return refuse(_PyMPK_ERR_SEALED);
    }
    pthread_mutex_lock(&table_lock);
    if (live >= _PyMPK_MAX_DOMAINS) {
        _PyMPK_SetError(0, "%d protection domains are live, one per address "
                        "slot: destroy one first", _PyMPK_MAX_DOMAINS);
        status = refuse(_PyMPK_ERR_LIMIT);
        goto done;
    }
    status = reserve_slots();
    if (status != _PyMPK_OK) {
        goto done;
    }
    for (int i = 0; i < _PyMPK_SLOT_COUNT; i++) {
        int candidate = (next_slot + i) % _PyMPK_SLOT_COUNT;
        uint64_t w = atomic_load_explicit(&_PyMPK_Slots[candidate].word,
                                          memory_order_relaxed);
        if (word_state(w) == STATE_FREE) {
            index = candidate;
            break;
        }
    }
    if (index < 0) {
        _PyMPK_SetError(0, "all %d address slots are quarantined or in use",
                        _PyMPK_SLOT_COUNT);
        status = refuse(_PyMPK_ERR_LIMIT);
        goto done;
    }
    s = &_PyMPK_Slots[index];
    status = keys->assign(s, live, &parked);
    if (status != _PyMPK_OK) {
        goto done;
    }
    s->committed = 0;
    s->used = 0;
    atomic_store_explicit(&s->enters, 0, memory_order_relaxed);
    atomic_store_explicit(&s->exits, 0, memory_order_relaxed);
    {
        uint64_t w = atomic_load_explicit(&s->word, memory_order_relaxed);
        out->slot = index;
        out->generation = word_generation(w);
        atomic_store_explicit(&s->word,
                              word_pack(out->generation, STATE_LIVE, 0)
                              | (parked ? PARKED_BIT : 0),
                              memory_order_release);
    }
    next_slot = (index + 1) % _PyMPK_SLOT_COUNT;
    live++;
    created++;
    if (live > peak_live) {
        peak_live = live;
    }
done:
    pthread_mutex_unlock(&table_lock);
    return status;
}

/* The order matters: zero while the key still guards the pages, retag so the
 * pages no longer carry the key, and only then give the key back -- a key
 * freed first would come back from the next pkey_alloc with these pages,
 * contents and all, still obeying it. */
static _PyMPK_Status
scrub_and_release(slot_t *s, uintptr_t base)
{
    if (s->committed != 0) {
        /* MADV_DONTNEED drops the pages of a private anonymous mapping: the
         * next touch sees zeros.  The kernel ignores PKRU here, so this
         * thread needs no access to the domain. */
        if (madvise((void *)base, s->committed, MADV_DONTNEED) != 0) {
            _PyMPK_SetError(errno, "madvise(addr=%#lx, len=%zu, "
                            "MADV_DONTNEED) failed while zeroing a domain",
                            (unsigned long)base, s->committed);
            return _PyMPK_ERR_SYSTEM;
        }
        if (keys->tag(base, s->committed, PROT_NONE, 0) != 0) {
            return _PyMPK_ERR_SYSTEM;
        }
    }
    return keys->release(s->key);
}

_PyMPK_Status
_PyMPK_Destroy(_PyMPK_Handle h)
{
    _PyMPK_Status status;
    slot_t *s;
    uint64_t w;

    if (tls_sealed_slot >= 0) {
        return refuse(_PyMPK_ERR_SEALED);
    }
    if (h.slot == atomic_load_explicit(&handoff_slot, memory_order_acquire)) {
        _PyMPK_SetError(0, "the hand-off domain lives as long as the process");
        return refuse(_PyMPK_ERR_LIMIT);
    }
    if (!valid_slot(h.slot)) {
        return refuse(_PyMPK_ERR_STALE);
    }
    s = &_PyMPK_Slots[h.slot];
    pthread_mutex_lock(&table_lock);
    w = atomic_load_explicit(&s->word, memory_order_acquire);
    do {
        if (word_generation(w) != h.generation
            || word_state(w) != STATE_LIVE)
        {
            pthread_mutex_unlock(&table_lock);
            return refuse(_PyMPK_ERR_STALE);
        }
        if (word_entered(w) != 0) {
            pthread_mutex_unlock(&table_lock);
            _PyMPK_SetError(0, "%u thread(s) are inside this domain",
                            (unsigned int)word_entered(w));
            return refuse(_PyMPK_ERR_BUSY);
        }
        /* DYING shuts the entry gate before the memory goes away. */
    } while (!atomic_compare_exchange_weak_explicit(
                 &s->word, &w, word_pack(h.generation, STATE_DYING, 0),
                 memory_order_acq_rel, memory_order_acquire));

    /* The heap's bookkeeping lies outside the slot; its memory inside goes
     * with the scrub. */
    _PyMPK_HeapForget(h.slot);
    status = scrub_and_release(s, _PyMPK_SlotBase(h.slot));
    retired_enters += atomic_load_explicit(&s->enters, memory_order_relaxed);
    retired_exits += atomic_load_explicit(&s->exits, memory_order_relaxed);
    atomic_store_explicit(&s->enters, 0, memory_order_relaxed);
    atomic_store_explicit(&s->exits, 0, memory_order_relaxed);
    if (status != _PyMPK_OK) {
        /* Fail closed: half-scrubbed memory and a key that may still tag it
         * are never handed out again.  It still counts as live. */
        atomic_store_explicit(&s->word,
                              word_pack(h.generation + 1, STATE_QUARANTINED, 0),
                              memory_order_release);
        pthread_mutex_unlock(&table_lock);
        return status;
    }
    s->key = -1;
    s->pkru = 0;
    s->committed = 0;
    s->used = 0;
    atomic_store_explicit(&s->word, word_pack(h.generation + 1, STATE_FREE, 0),
                          memory_order_release);
    live--;
    destroyed++;
    pthread_mutex_unlock(&table_lock);
    return _PyMPK_OK;
}

/* The slow entry gate of a parked domain (with keys only: nothing parks
 * without them): the key implementation gives it a key and retags its pages,
 * then this thread counts in -- all under the table lock, so no other gate
 * or park runs. */
static _PyMPK_Status
unpark_and_enter(_PyMPK_Handle h)
{
    slot_t *s = &_PyMPK_Slots[h.slot];
    _PyMPK_Status status;
    uint64_t w;

    pthread_mutex_lock(&table_lock);
    w = atomic_load_explicit(&s->word, memory_order_acquire);
    if (word_generation(w) != h.generation || word_state(w) != STATE_LIVE) {
        pthread_mutex_unlock(&table_lock);
        return refuse(_PyMPK_ERR_STALE);
    }
    if (!(w & PARKED_BIT)) {
        /* Another thread unparked it first: count this one in. */
        atomic_fetch_add_explicit(&s->word, 1, memory_order_acq_rel);
        pthread_mutex_unlock(&table_lock);
        return _PyMPK_OK;
    }
    status = keys->unpark(h.slot);
    if (status != _PyMPK_OK) {
        pthread_mutex_unlock(&table_lock);
        /* No key free right now counts as misuse, like too many domains. */
        return status == _PyMPK_ERR_LIMIT ? refuse(status) : status;
    }
    /* Release: a fast-path gate that sees the bit clear reads the new pkru. */
    atomic_store_explicit(&s->word, (w & ~(uint64_t)PARKED_BIT) + 1,
                          memory_order_release);
    pthread_mutex_unlock(&table_lock);
    return _PyMPK_OK;
}

/* ====================================================================== */
/* Gates                                                                  */

/* What every gate on a handle checks first: the caller is not sealed (its
 * code is a function's) and the handle names a slot. */
static inline _PyMPK_Status
unsealed_and_valid(_PyMPK_Handle h)
{
    if (tls_sealed_slot >= 0) {
        return refuse(_PyMPK_ERR_SEALED);
    }
    if (!valid_slot(h.slot)) {
        return refuse(_PyMPK_ERR_STALE);
    }
    return _PyMPK_OK;
}

/* noinline: _PyMPK_EnterSealed calls this one copy.  -O3 would inline a
 * second one there: 600 bytes more of the interpreter's code to save one
 * call per sealed run. */
__attribute__((noinline)) _PyMPK_Status
_PyMPK_Enter(_PyMPK_Handle h)
{
    slot_t *s;
    uint64_t w;
    _PyMPK_Status checked = unsealed_and_valid(h);

    if (checked != _PyMPK_OK) {
        return checked;
    }
    if (tls_slot >= 0) {
        return refuse(_PyMPK_ERR_NESTED);
    }
    s = &_PyMPK_Slots[h.slot];
    w = atomic_load_explicit(&s->word, memory_order_acquire);
    do {
        if (word_generation(w) != h.generation
            || word_state(w) != STATE_LIVE)
        {
            return refuse(_PyMPK_ERR_STALE);
        }
        if (word_entered(w) == ENTERED_MASK) {
            return refuse(_PyMPK_ERR_LIMIT);
        }
        if (w & PARKED_BIT) {
            _PyMPK_Status status = unpark_and_enter(h);
            if (status != _PyMPK_OK) {
                return status;
            }
            break;
        }
    } while (!atomic_compare_exchange_weak_explicit(
                 &s->word, &w, w + 1,
                 memory_order_acq_rel, memory_order_acquire));

    /* tls_pkru first: a signal arriving in between restores the value this
     * gate is about to write anyway. */
    tls_pkru = s->pkru;
    tls_generation = h.generation;
    atomic_signal_fence(memory_order_seq_cst);
    tls_slot = h.slot;
    _PyMPK_KeysWritePKRU(keys, &tls_pkru);
    /* From here on the thread's allocations go to the domain's private
     * heap, if it has one (mpk_heap.c). */
    _PyMPK_HeapAttach(h);
    atomic_fetch_add_explicit(&s->enters, 1, memory_order_relaxed);
    return _PyMPK_OK;
}

/* The exit gate, back to `outside`: the runtime's value (key 0 and the
 * hand-off key) or, for a thread function code started, key 0 only. */
static _PyMPK_Status
exit_to(_PyMPK_Handle h, uint32_t outside)
{
    slot_t *s;

    if (tls_sealed_slot >= 0) {
        return refuse(_PyMPK_ERR_SEALED);
    }
    if (!valid_slot(h.slot) || tls_slot != h.slot
        || tls_generation != h.generation)
    {
        return refuse(_PyMPK_ERR_NOT_ENTERED);
    }
    s = &_PyMPK_Slots[h.slot];
    _PyMPK_HeapDetach();
    tls_pkru = outside;
    atomic_signal_fence(memory_order_seq_cst);
    _PyMPK_KeysWritePKRU(keys, &tls_pkru);
    tls_slot = -1;
    atomic_fetch_add_explicit(&s->exits, 1, memory_order_relaxed);
    atomic_store_explicit(&s->last_exit,
                          atomic_fetch_add_explicit(&exit_clock, 1,
                                                    memory_order_relaxed),
                          memory_order_relaxed);
    /* Last: once the count drops, destroy may run and recycle the key. */
    atomic_fetch_sub_explicit(&s->word, 1, memory_order_release);
    return _PyMPK_OK;
}

_PyMPK_Status
_PyMPK_Exit(_PyMPK_Handle h)
{
    return exit_to(h, atomic_load_explicit(&outside_pkru, memory_order_acquire));
}

/* The seal is what keeps function code in its domain: it can neither leave
 * (exit) nor switch (enter another) through the gates, nor create, destroy or
 * restore.  Entering and sealing happen in one call, unsealing and leaving in
 * another, so no instant exists where the thread is inside and unsealed. */
_PyMPK_Status
_PyMPK_EnterSealed(_PyMPK_Handle h)
{
    _PyMPK_Status status = _PyMPK_Enter(h);   /* refused if already sealed */
    if (status == _PyMPK_OK) {
        tls_sealed_slot = h.slot;
        _PyMPK_GuardSealed(1);
    }
    return status;
}

_PyMPK_Status
_PyMPK_ExitSealed(_PyMPK_Handle h)
{
    _PyMPK_Status status;

    if (tls_sealed_for_life || tls_sealed_slot != h.slot || tls_slot != h.slot
        || tls_generation != h.generation)
    {
        return refuse(_PyMPK_ERR_NOT_ENTERED);
    }
    tls_sealed_slot = -1;
    _PyMPK_GuardSealed(0);
    status = _PyMPK_Exit(h);
    if (status != _PyMPK_OK) {
        tls_sealed_slot = h.slot;   /* still inside: stay sealed */
        _PyMPK_GuardSealed(1);
    }
    return status;
}

int
_PyMPK_SealedSlot(void)
{
    return tls_sealed_slot;
}

void
_PyMPK_SealForLife(int slot)
{
    tls_sealed_slot = slot < 0 ? _PyMPK_SLOT_COUNT : slot;
    tls_sealed_for_life = 1;
    _PyMPK_GuardSealed(1);
}

_PyMPK_Status
_PyMPK_ExitBornSealed(_PyMPK_Handle h)
{
    tls_sealed_slot = -1;
    tls_sealed_for_life = 0;
    _PyMPK_GuardSealed(0);
    return exit_to(h, _PyMPK_PKRU_SHARED);   /* never the hand-off key */
}

/* ====================================================================== */
/* The hand-off domain                                                    */

_PyMPK_Status
_PyMPK_SetHandoff(_PyMPK_Handle h)
{
    _PyMPK_Status status = unsealed_and_valid(h);
    slot_t *s;
    uint64_t w;

    if (status != _PyMPK_OK) {
        return status;
    }
    pthread_mutex_lock(&table_lock);
    s = &_PyMPK_Slots[h.slot];
    w = atomic_load_explicit(&s->word, memory_order_acquire);
    if (word_generation(w) != h.generation || word_state(w) != STATE_LIVE) {
        status = refuse(_PyMPK_ERR_STALE);
    }
    else if (atomic_load_explicit(&handoff_slot, memory_order_relaxed) >= 0) {
        _PyMPK_SetError(0, "the hand-off domain is set once per process");
        status = refuse(_PyMPK_ERR_LIMIT);
    }
    else if (w & PARKED_BIT) {
        _PyMPK_SetError(0, "the hand-off domain holds no key: create it "
                        "before the functions' domains");
        status = refuse(_PyMPK_ERR_LIMIT);
    }
    else {
        if (s->key > 0) {
            atomic_store_explicit(&outside_pkru, s->pkru, memory_order_release);
        }
        atomic_store_explicit(&handoff_slot, h.slot, memory_order_release);
    }
    pthread_mutex_unlock(&table_lock);
    if (status == _PyMPK_OK) {
        _PyMPK_StartOutside();
    }
    return status;
}

int
_PyMPK_HandoffSlot(void)
{
    return atomic_load_explicit(&handoff_slot, memory_order_acquire);
}

void
_PyMPK_StartOutside(void)
{
    if (tls_slot < 0 && tls_sealed_slot < 0) {
        tls_pkru = atomic_load_explicit(&outside_pkru, memory_order_acquire);
        _PyMPK_KeysWritePKRU(keys, &tls_pkru);
    }
}

_PyMPK_Status
_PyMPK_OpenHandoff(int open)
{
    int slot = _PyMPK_HandoffSlot();

    if (slot < 0 || tls_slot < 0) {
        return _PyMPK_OK;   /* nothing to open, or already outside */
    }
    if (open) {
        /* A clear bit grants: the union of both values' rights. */
        tls_pkru = _PyMPK_Slots[tls_slot].pkru
                   & atomic_load_explicit(&outside_pkru, memory_order_acquire);
    }
    else {
        tls_pkru = _PyMPK_Slots[tls_slot].pkru;
    }
    atomic_signal_fence(memory_order_seq_cst);
    _PyMPK_KeysWritePKRU(keys, &tls_pkru);
    return _PyMPK_OK;
}

uint32_t
_PyMPK_RestoreThreadPKRU(void)
{
    uint32_t value = tls_pkru;
    return _PyMPK_KeysWritePKRU(keys, &value);
}

int
_PyMPK_CurrentSlot(void)
{
    return tls_slot;
}

int
_PyMPK_CurrentHandle(_PyMPK_Handle *out)
{
    if (tls_slot < 0) {
        return 0;
    }
    out->slot = tls_slot;
    out->generation = tls_generation;
    return 1;
}

/* ====================================================================== */
/* Memory inside a domain                                                 */

_PyMPK_Status
_PyMPK_Alloc(_PyMPK_Handle h, size_t size, size_t align, void **out)
{
    _PyMPK_Status status = _PyMPK_OK;
    slot_t *s;
    size_t start;
    int tag;

    if (size == 0 || align == 0 || (align & (align - 1)) != 0
        || align > _PyMPK_SLOT_SIZE)
    {
        _PyMPK_SetError(0, "bad allocation request (size=%zu, align=%zu)",
                        size, align);
        return _PyMPK_ERR_INVALID;
    }
    pthread_mutex_lock(&table_lock);
    if (!is_live(h)) {
        status = refuse(_PyMPK_ERR_STALE);
        goto done;
    }
    s = &_PyMPK_Slots[h.slot];
    tag = keys->tag_of(s->key);
    if (tag < 0) {
        /* Parked before any key was given up: pages committed now would
         * carry key 0.  Only a thread inside (which unparks) may grow it. */
        _PyMPK_SetError(0, "the domain is parked: enter it before allocating");
        status = refuse(_PyMPK_ERR_INVALID);
        goto done;
    }
    start = (s->used + align - 1) & ~(align - 1);
    if (start > _PyMPK_SLOT_SIZE || size > _PyMPK_SLOT_SIZE - start) {
        _PyMPK_SetError(0, "a domain slot holds %zu bytes: %zu are used, "
                        "%zu more requested", _PyMPK_SLOT_SIZE, s->used, size);
        status = _PyMPK_ERR_NOSPACE;
        goto done;
    }
    if (start + size > s->committed) {
        size_t end = (start + size + _PyMPK_COMMIT_STEP - 1)
                     & ~(_PyMPK_COMMIT_STEP - 1);
        uintptr_t base = _PyMPK_SlotBase(h.slot);
        if (keys->tag(base + s->committed, end - s->committed,
                      PROT_READ | PROT_WRITE, tag) != 0)
        {
            status = _PyMPK_ERR_SYSTEM;
            goto done;
        }
        s->committed = end;
    }
    s->used = start + size;
    *out = (void *)(_PyMPK_SlotBase(h.slot) + start);
done:
    pthread_mutex_unlock(&table_lock);
    return status;
}

/* ====================================================================== */
/* Introspection                                                          */

_PyMPK_Status
_PyMPK_Info(_PyMPK_Handle h, _PyMPK_DomainInfo *out)
{
    slot_t *s;

    pthread_mutex_lock(&table_lock);
    if (!is_live(h)) {
        pthread_mutex_unlock(&table_lock);
        return _PyMPK_ERR_STALE;
    }
    s = &_PyMPK_Slots[h.slot];
    out->key = s->key;
    out->pkru = s->pkru;
    out->base = _PyMPK_SlotBase(h.slot);
    out->committed = s->committed;
    out->used = s->used;
    out->entered = (int)word_entered(
        atomic_load_explicit(&s->word, memory_order_acquire));
    out->enters = atomic_load_explicit(&s->enters, memory_order_relaxed);
    out->exits = atomic_load_explicit(&s->exits, memory_order_relaxed);
    pthread_mutex_unlock(&table_lock);
    return _PyMPK_OK;
}

void
_PyMPK_GetCounters(_PyMPK_Counters *out)
{
    pthread_mutex_lock(&table_lock);
    out->created = created;
    out->destroyed = destroyed;
    out->enters = retired_enters;
    out->exits = retired_exits;
    out->parked = 0;
    /* The PARKED bit changes only under the lock (create, park, unpark,
     * destroy): counting the bits counts the parked domains. */
    for (int i = 0; i < _PyMPK_SLOT_COUNT; i++) {
        slot_t *s = &_PyMPK_Slots[i];
        uint64_t w = atomic_load_explicit(&s->word, memory_order_relaxed);
        out->enters += atomic_load_explicit(&s->enters, memory_order_relaxed);
        out->exits += atomic_load_explicit(&s->exits, memory_order_relaxed);
        out->parked += (w & PARKED_BIT) != 0;
    }
    out->misuse = atomic_load_explicit(&misuse, memory_order_relaxed);
    out->live = live;
    out->peak_live = peak_live;
    keys->count(out);
    pthread_mutex_unlock(&table_lock);
}

int
_PyMPK_SlotKey(int slot)
{
    uint64_t w;
    if (!valid_slot(slot)) {
        return -1;
    }
    w = atomic_load_explicit(&_PyMPK_Slots[slot].word, memory_order_acquire);
    if (word_state(w) != STATE_LIVE) {
        return -1;
    }
    return _PyMPK_Slots[slot].key;
}
