/* faastlane_mpk.h -- the one C API of Faastlane's protection domains.
 *
 * A protection domain is a memory-protection key plus a fixed slot of address
 * space tagged with it.  Threads enter and leave domains through checked PKRU
 * gates; memory inside a slot is readable only by threads that are inside the
 * slot's domain.  See cpython-mpk/MODULE.md for the design essay.
 *
 * Layers (one concern per file, like wasmtime's vm/mpk):
 *   mpk_sys.c     raw pkey_* syscalls through syscall(2)
 *   mpk_pkru.c    CPUID detection, RDPKRU and the checked WRPKRU gate
 *   mpk_domain.c  the policy: slots, domain table, gates, counters
 *   mpk_keys.h    what the policy asks of keys, implemented twice:
 *     mpk_keys.c    with keys: tagging, key allocation, parking, PKRU
 *     mpk_nokeys.c  the same surface unenforced
 *   mpk_signal.c  the signal path: PKRU restore and the fault reporter
 *   _faastlanemodule.c   the Python binding (the only file that includes Python.h)
 *
 * The policy runs with one of two key implementations chosen once at first
 * use: "keys" (hardware protection keys work here) and "no-keys" (the same
 * bookkeeping -- slots, handles, counters, gate misuse checks -- with no
 * PKRU instruction ever executed), like wasmtime's enabled.rs/disabled.rs.
 *
 * This header holds no Python types so that the allocator patch (obmalloc's
 * get_state()/new_arena()) can include it from the core.
 */
#ifndef FAASTLANE_MPK_H
#define FAASTLANE_MPK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------- */
/* Geometry                                                               */

/* One slot per domain: 4 GiB, so the owner of an address is one shift. */
#define _PyMPK_SLOT_SHIFT 32
#define _PyMPK_SLOT_SIZE ((size_t)1 << _PyMPK_SLOT_SHIFT)
/* Slots outnumber keys so that destroyed slots rest (PROT_NONE) before
 * reuse and so that a later design can keep more domains than keys. */
#define _PyMPK_SLOT_COUNT 64
/* x86 has 16 keys and key 0 is everybody's: at most 15 domains hold keys
 * at once.  More may live: idle ones park (mpk_keys.c), one per slot. */
#define _PyMPK_MAX_LIVE 15
#define _PyMPK_MAX_DOMAINS _PyMPK_SLOT_COUNT
/* Memory inside a slot becomes usable (read/write + tagged) in steps of
 * this many bytes, so untouched address space never costs commit charge. */
#define _PyMPK_COMMIT_STEP ((size_t)64 << 10)

/* PKRU holds two bits per key: bit 2k = access disable, 2k+1 = write disable. */
#define _PyMPK_PKRU_AD(key) (1u << (2 * (key)))
#define _PyMPK_PKRU_WD(key) (1u << (2 * (key) + 1))
/* Outside every domain: key 0 read/write, every other key no access. */
#define _PyMPK_PKRU_SHARED 0xFFFFFFFCu
/* Inside the domain holding `key`: key 0 and `key` read/write. */
#define _PyMPK_PKRU_FOR_KEY(key) \
    (_PyMPK_PKRU_SHARED & ~(_PyMPK_PKRU_AD(key) | _PyMPK_PKRU_WD(key)))

/* ---------------------------------------------------------------------- */
/* Results                                                                */

typedef enum {
    _PyMPK_OK = 0,
    _PyMPK_ERR_LIMIT,        /* no key or slot left: too many live domains */
    _PyMPK_ERR_STALE,        /* handle names a destroyed (or never created) domain */
    _PyMPK_ERR_NESTED,       /* enter while this thread is already in a domain */
    _PyMPK_ERR_NOT_ENTERED,  /* exit of a domain this thread is not in */
    _PyMPK_ERR_BUSY,         /* destroy while some thread is inside */
    _PyMPK_ERR_NOSPACE,      /* allocation larger than what is left of the slot */
    _PyMPK_ERR_INVALID,      /* bad argument (size 0, alignment not a power of 2) */
    _PyMPK_ERR_SYSTEM,       /* a system call failed: see _PyMPK_LastError() */
    _PyMPK_ERR_SEALED,       /* this thread is sealed: no domain operation */
} _PyMPK_Status;

/* A domain is named by its slot and the slot's generation at creation: a
 * handle kept after destroy can never reach the slot's next owner. */
typedef struct {
    int slot;
    uint32_t generation;
} _PyMPK_Handle;

typedef struct {
    uint64_t created;
    uint64_t destroyed;
    uint64_t enters;         /* successful entry gates */
    uint64_t exits;          /* successful exit gates */
    uint64_t misuse;         /* gate calls refused with an error */
    uint64_t keys_allocated;
    uint64_t keys_freed;
    uint64_t live;
    uint64_t peak_live;
    uint64_t parked;         /* live domains holding no key right now */
    uint64_t parkings;       /* keys given up by idle domains, in all */
} _PyMPK_Counters;

typedef struct {
    int key;                 /* -1 in the no-keys implementation */
    uint32_t pkru;           /* what the entry gate writes (0 without keys) */
    uintptr_t base;
    size_t committed;        /* bytes from base that are usable */
    size_t used;             /* bytes handed out by _PyMPK_Alloc */
    int entered;             /* threads inside right now */
    uint64_t enters;
    uint64_t exits;
} _PyMPK_DomainInfo;

/* ---------------------------------------------------------------------- */
/* Detection                                                              */

/* Decide the implementation once (thread-safe, idempotent).  Reads the
 * FAASTLANE_MPK environment variable: "off" forces no-keys. */
void _PyMPK_Init(void);
/* 1 when hardware keys are in use, 0 for the no-keys implementation. */
int _PyMPK_KeysAvailable(void);
/* Why keys are not used, or NULL when they are. */
const char *_PyMPK_UnavailableReason(void);

/* ---------------------------------------------------------------------- */
/* Domains (callers need not hold any lock; the table has its own)        */

_PyMPK_Status _PyMPK_Create(_PyMPK_Handle *out);
/* Entry gate: the calling thread gets key 0 and the domain's key, nothing
 * else.  Nested entry is refused. */
_PyMPK_Status _PyMPK_Enter(_PyMPK_Handle h);
/* Exit gate: back to key 0 only (and the hand-off key, once set). */
_PyMPK_Status _PyMPK_Exit(_PyMPK_Handle h);
/* The sealed gates.  A thread that runs function code is *sealed*: while
 * sealed, _PyMPK_Create, _PyMPK_Enter, _PyMPK_Exit and _PyMPK_Destroy return
 * _PyMPK_ERR_SEALED, so code running in the domain cannot leave it or enter
 * another.  Only _PyMPK_ExitSealed lifts the seal, and the Python binding
 * calls it from the one C frame that called _PyMPK_EnterSealed
 * (Domain.run_sealed): no Python code can unseal.  A thread created while
 * sealed (pthread_create, mpk_thread.c) starts sealed for its whole life. */
_PyMPK_Status _PyMPK_EnterSealed(_PyMPK_Handle h);
_PyMPK_Status _PyMPK_ExitSealed(_PyMPK_Handle h);
/* Slot of the domain the calling thread is sealed in, or -1 if not sealed. */
int _PyMPK_SealedSlot(void);
/* The write guard (mpk_guard.c) follows the seal: 1 when a thread starts
 * running sealed function code, 0 when it stops. */
void _PyMPK_GuardSealed(int sealed);
/* Seal the calling thread for the rest of its life (a thread born sealed). */
void _PyMPK_SealForLife(int slot);
/* A thread born sealed inside its creator's domain (mpk_thread.c) leaves it
 * as its start routine returns: unsealed, then the exit gate. */
_PyMPK_Status _PyMPK_ExitBornSealed(_PyMPK_Handle h);
/* The hand-off domain, set once: the heap the data in flight between
 * functions lives in.  From then on a thread outside every domain holds its
 * key as well as key 0 (a runtime thread reads that data wherever it is);
 * function code never does: a domain's value grants key 0 and its own key,
 * and a thread function code started leaves with key 0 only.  It never
 * parks and cannot be destroyed.  Set it before starting other threads: a
 * thread that is running already gets the value at its next exit gate. */
_PyMPK_Status _PyMPK_SetHandoff(_PyMPK_Handle h);
/* Its slot, -1 when unset. */
int _PyMPK_HandoffSlot(void);
/* A new thread outside every domain and unsealed takes the outside value
 * (mpk_thread.c; the kernel copied its creator's PKRU). */
void _PyMPK_StartOutside(void);
/* Inside a domain: grant the hand-off key as well (open=1), or take it back
 * (open=0).  For the entry gate's copy of a function's input only, which
 * runs no Python code in between (Domain.run_sealed_on). */
_PyMPK_Status _PyMPK_OpenHandoff(int open);
/* Zero the slot, retag it key 0 + PROT_NONE, free the key -- in that order.
 * Refused while any thread is inside. */
_PyMPK_Status _PyMPK_Destroy(_PyMPK_Handle h);
/* Bump-allocate `size` bytes (aligned to `align`, a power of two) inside
 * the domain's slot, committing and tagging pages as needed.  Memory is
 * zero-filled and is given back only by _PyMPK_Destroy. */
_PyMPK_Status _PyMPK_Alloc(_PyMPK_Handle h, size_t size, size_t align,
                           void **out);
_PyMPK_Status _PyMPK_Info(_PyMPK_Handle h, _PyMPK_DomainInfo *out);
void _PyMPK_GetCounters(_PyMPK_Counters *out);

/* A human-readable account of the last _PyMPK_ERR_SYSTEM of this thread,
 * naming the call and its arguments. */
const char *_PyMPK_LastError(void);
int _PyMPK_LastErrno(void);

/* ---------------------------------------------------------------------- */
/* For the allocator (async-signal-safe, no locks, no memory of a domain)  */

/* Slot of the domain the calling thread is in, or -1. */
int _PyMPK_CurrentSlot(void);
/* The calling thread's domain handle; returns 0 and leaves *out alone when
 * the thread is in no domain. */
int _PyMPK_CurrentHandle(_PyMPK_Handle *out);
/* Slot whose address range holds `p`, or -1: arithmetic only. */
int _PyMPK_SlotOf(const void *p);
/* First address of slot `slot` (0 before the first domain was created). */
uintptr_t _PyMPK_SlotBase(int slot);
/* Key of the live domain in `slot`, -1 when there is none or keys are off.
 * A lock-free read that may race with a concurrent destroy: for reports. */
int _PyMPK_SlotKey(int slot);

/* ---------------------------------------------------------------------- */
/* Signal path                                                            */

/* A signal handler starts with the kernel's default PKRU (key 0 only) and
 * siglongjmp() out of it keeps that value.  This writes the PKRU of the
 * calling thread's domain (or the shared value) through the checked gate.
 * Async-signal-safe.  Returns the value written (0 without keys). */
uint32_t _PyMPK_RestoreThreadPKRU(void);
/* Install a SIGSEGV/SIGBUS handler that writes one line describing the fault
 * (si_code, si_addr, si_pkey, owner slot, thread's domain, PKRU before and
 * after restore) to `fd`, then chains to the previous handler with the
 * thread's PKRU restored, or dies of the original signal.  Returns 0 or -1
 * with errno set. */
int _PyMPK_InstallFaultReporter(int fd);

/* ---------------------------------------------------------------------- */
/* The hardware layer (mpk_pkru.c)                                        */

/* CPUID.(EAX=7,ECX=0):ECX bit 3 (PKU) and bit 4 (OSPKE). */
int _PyMPK_CPUHasPKU(void);
int _PyMPK_CPUHasOSPKE(void);
/* RDPKRU.  Executing it where the OS has not enabled keys raises SIGILL:
 * callers must check _PyMPK_KeysAvailable() first. */
uint32_t _PyMPK_ReadPKRU(void);
/* The checked gate: writes *pkru into PKRU and loops until PKRU holds it.
 * Same precondition as _PyMPK_ReadPKRU. */
void _PyMPK_GateWrite(const uint32_t *pkru);
/* The machine code of the gate, for inspectors that whitelist WRPKRU. */
const unsigned char *_PyMPK_GateCode(size_t *size);

#ifdef __cplusplus
}
#endif

#endif /* !FAASTLANE_MPK_H */
