/* mpk_signal.c -- the signal path: the fault reporter.
 *
 * The kernel runs every signal handler with its default PKRU (key 0 only)
 * and restores the interrupted PKRU from the signal frame on sigreturn.  So
 * a handler that returns needs nothing, but a handler that wants to read the
 * interrupted domain's memory (faulthandler walking frames, a crash
 * reporter) and any siglongjmp() recovery must rewrite PKRU first:
 * _PyMPK_RestoreThreadPKRU() (mpk_domain.c) does, through the checked gate.
 *
 * The reporter below is the one handler Faastlane installs itself: on
 * SIGSEGV/SIGBUS it writes one line naming the fault and the domains
 * involved, restores the thread's PKRU, chains to the handler installed
 * before it, or lets the process die of the original signal.  Everything
 * here is async-signal-safe: no stdio, no locks, no allocation.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "faastlane_mpk.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#ifndef SEGV_PKUERR
#define SEGV_PKUERR 4
#endif

static _Atomic int report_fd = -1;
static int reporter_keys;
static int installed;
static struct sigaction previous_segv;
static struct sigaction previous_bus;

/* Bounded text building without stdio. */
typedef struct {
    char data[400];
    size_t len;
} line_t;

static void
put_str(line_t *line, const char *s)
{
    while (*s && line->len < sizeof(line->data)) {
        line->data[line->len++] = *s++;
    }
}

static void
put_dec(line_t *line, long value)
{
    char digits[24];
    int n = 0;
    unsigned long magnitude = value < 0 ? 0UL - (unsigned long)value
                                        : (unsigned long)value;
    if (value < 0) {
        put_str(line, "-");
    }
    do {
        digits[n++] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude);
    while (n > 0 && line->len < sizeof(line->data)) {
        line->data[line->len++] = digits[--n];
    }
}

static void
put_hex(line_t *line, unsigned long value)
{
    char digits[20];
    int n = 0;
    put_str(line, "0x");
    do {
        digits[n++] = "0123456789abcdef"[value & 0xf];
        value >>= 4;
    } while (value);
    while (n > 0 && line->len < sizeof(line->data)) {
        line->data[line->len++] = digits[--n];
    }
}

static void
put_field_dec(line_t *line, const char *name, long value)
{
    put_str(line, " ");
    put_str(line, name);
    put_str(line, "=");
    put_dec(line, value);
}

static void
put_field_hex(line_t *line, const char *name, unsigned long value)
{
    put_str(line, " ");
    put_str(line, name);
    put_str(line, "=");
    put_hex(line, value);
}

static int
fault_pkey(const siginfo_t *si)
{
    if (si->si_code != SEGV_PKUERR) {
        return -1;
    }
#ifdef si_pkey
    return (int)si->si_pkey;
#else
    /* The kernel's layout: si_addr, then 8 bytes of padding, then the key. */
    return (int)*(const uint32_t *)((const char *)&si->si_addr
                                    + 2 * sizeof(void *));
#endif
}

static void
report(int signo, const siginfo_t *si, uint32_t pkru_entry,
       uint32_t pkru_restored)
{
    int fd = atomic_load_explicit(&report_fd, memory_order_relaxed);
    /* The function whose code this thread runs: the domain it is inside, else the
     * one it is sealed to -- a thread a function started is in no domain but born
     * sealed to its creator's (mpk_thread.c), and its faults are that function's. */
    int entered_slot = _PyMPK_CurrentSlot();
    int sealed_slot = _PyMPK_SealedSlot();
    int thread_slot = entered_slot >= 0 ? entered_slot
        : (sealed_slot >= 0 && sealed_slot < _PyMPK_SLOT_COUNT ? sealed_slot : -1);
    int owner_slot = _PyMPK_SlotOf(si->si_addr);
    line_t line;

    if (fd < 0) {
        return;
    }
    line.len = 0;
    put_str(&line, "faastlane-fault:");
    put_field_dec(&line, "signo", signo);
    put_field_dec(&line, "code", si->si_code);
    put_field_hex(&line, "addr", (unsigned long)si->si_addr);
    put_field_dec(&line, "pkey", fault_pkey(si));
    put_field_dec(&line, "owner_slot", owner_slot);
    put_field_dec(&line, "owner_key", _PyMPK_SlotKey(owner_slot));
    put_field_dec(&line, "thread_slot", thread_slot);
    put_field_dec(&line, "thread_key", _PyMPK_SlotKey(thread_slot));
    put_field_dec(&line, "entered_slot", entered_slot);
    if (reporter_keys) {
        put_field_hex(&line, "pkru_at_entry", pkru_entry);
        put_field_hex(&line, "pkru_restored", pkru_restored);
    }
    put_str(&line, "\n");
    for (size_t done = 0; done < line.len;) {
        ssize_t n = write(fd, line.data + done, line.len - done);
        if (n <= 0) {
            if (n < 0 && errno == EINTR) {
                continue;
            }
            break;
        }
        done += (size_t)n;
    }
}

static void
fault_handler(int signo, siginfo_t *si, void *context)
{
    int saved_errno = errno;
    const struct sigaction *previous =
        signo == SIGBUS ? &previous_bus : &previous_segv;
    uint32_t pkru_entry = 0;
    uint32_t pkru_restored = 0;

    if (reporter_keys) {
        pkru_entry = _PyMPK_ReadPKRU();
        _PyMPK_RestoreThreadPKRU();
        /* Read back rather than trust the gate: the report states what the
         * hardware holds. */
        pkru_restored = _PyMPK_ReadPKRU();
    }
    report(signo, si, pkru_entry, pkru_restored);

    if ((previous->sa_flags & SA_SIGINFO) && previous->sa_sigaction != NULL) {
        previous->sa_sigaction(signo, si, context);
    }
    else if (previous->sa_handler != SIG_DFL
             && previous->sa_handler != SIG_IGN)
    {
        previous->sa_handler(signo);
    }
    else {
        /* Die of the original signal: a fault re-executes the access on
         * return (with the frame's PKRU) and meets the default action; a
         * signal sent by kill() is raised again, pending until we return. */
        signal(signo, SIG_DFL);
        if (si->si_code <= 0) {
            raise(signo);
        }
    }
    errno = saved_errno;
}

int
_PyMPK_InstallFaultReporter(int fd)
{
    struct sigaction action;

    if (fd < 0) {
        errno = EBADF;
        return -1;
    }
    atomic_store_explicit(&report_fd, fd, memory_order_relaxed);
    if (installed) {
        return 0;
    }
    reporter_keys = _PyMPK_KeysAvailable();
    memset(&action, 0, sizeof(action));
    action.sa_sigaction = fault_handler;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGSEGV, &action, &previous_segv) != 0) {
        return -1;
    }
    if (sigaction(SIGBUS, &action, &previous_bus) != 0) {
        int err = errno;
        sigaction(SIGSEGV, &previous_segv, NULL);
        errno = err;
        return -1;
    }
    installed = 1;
    return 0;
}
