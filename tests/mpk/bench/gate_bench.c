/* gate_bench.c -- native costs of the _faastlane policy, linked against the
 * module's C layers (not the Python binding).  Build and run it with
 * tests/mpk/bench/run_bench.py.  Without keys the gates do their bookkeeping
 * and no WRPKRU: what is timed here is everything but that instruction. */
#define _GNU_SOURCE
#include "faastlane_mpk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double
now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void
check(_PyMPK_Status status, const char *what)
{
    if (status != _PyMPK_OK) {
        fprintf(stderr, "%s failed: status %d (%s)\n", what, (int)status,
                _PyMPK_LastError());
        exit(1);
    }
}

/* Best of `rounds` runs of `n` iterations, in ns per iteration. */
#define BEST_OF(rounds, n, body)                                    \
    ({                                                              \
        double best = 1e300;                                        \
        for (int r_ = 0; r_ < (rounds); r_++) {                     \
            double t0_ = now_ns();                                  \
            for (long i_ = 0; i_ < (n); i_++) {                     \
                body;                                               \
            }                                                       \
            double per_ = (now_ns() - t0_) / (n);                   \
            best = per_ < best ? per_ : best;                       \
        }                                                           \
        best;                                                       \
    })

int
main(void)
{
    _PyMPK_Handle h;
    void *p;
    size_t touched = (size_t)1 << 20;

    printf("implementation: %s\n", _PyMPK_KeysAvailable() ? "keys" : "no-keys");
    check(_PyMPK_Create(&h), "create");

    double gate = BEST_OF(7, 2000000, {
        _PyMPK_Enter(h);
        _PyMPK_Exit(h);
    });
    printf("enter+exit gate pair (bookkeeping, no WRPKRU): %.1f ns\n", gate);

    double slot = BEST_OF(7, 10000000, {
        __asm__ volatile("" ::: "memory");
        if (_PyMPK_SlotOf((void *)(uintptr_t)i_) != -1) {
            abort();
        }
    });
    printf("_PyMPK_SlotOf (owner lookup): %.2f ns\n", slot);

    double current = BEST_OF(7, 10000000, {
        __asm__ volatile("" ::: "memory");
        if (_PyMPK_CurrentSlot() == 12345) {
            abort();
        }
    });
    printf("_PyMPK_CurrentSlot: %.2f ns\n", current);
    check(_PyMPK_Destroy(h), "destroy");

    double cd = BEST_OF(5, 20000, {
        check(_PyMPK_Create(&h), "create");
        check(_PyMPK_Destroy(h), "destroy");
    });
    printf("create+destroy, nothing committed: %.2f us\n", cd / 1e3);

    double cad = BEST_OF(5, 2000, {
        check(_PyMPK_Create(&h), "create");
        check(_PyMPK_Alloc(h, touched, 16, &p), "alloc");
        memset(p, 0xA5, touched);
        check(_PyMPK_Destroy(h), "destroy");
    });
    printf("create+alloc+touch 1 MiB+destroy (zero, retag): %.2f us\n", cad / 1e3);

    double touch = BEST_OF(5, 2000, {
        void *m = mmap(NULL, touched, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        memset(m, 0xA5, touched);
        munmap(m, touched);
    });
    printf("  of which page faults of 1 MiB (mmap+touch+munmap): %.2f us\n",
           touch / 1e3);
    return 0;
}
