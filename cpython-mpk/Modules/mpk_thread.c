/* mpk_thread.c -- threads created by sealed function code are born sealed.
 *
 * A new thread inherits its creator's PKRU from the kernel, but not the
 * creator's thread-local state: started from sealed function code
 * (Domain.run_sealed), it would hold the function's key *unsealed*, free to
 * enter another function's domain through the gates.  So the runtime binary
 * defines pthread_create itself: the interpreter is linked statically against
 * libpython and exports its symbols (-export-dynamic), so this definition
 * serves libpython's own thread starts (threading, _thread, concurrent.futures)
 * and every shared object's (C extensions, OpenBLAS) alike.  A thread created
 * while its creator is sealed is sealed for its whole life
 * (_PyMPK_SealForLife): it is function code, wherever it runs.
 *
 * Why inherit rather than refuse: functions start threads (boto3's transfer
 * manager, thread pools, native libraries' workers) and nothing is gained by
 * breaking them -- the child already holds exactly the creator's PKRU, and
 * with the seal it can do no more with the domain API than its creator.  It is
 * not entered into the domain (not counted, its allocations stay shared): that
 * is MODULE.md's known limit on threads started inside a domain, unchanged.
 *
 * Outside sealed code the cost is one thread-local load per thread creation.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "faastlane_mpk.h"

#ifdef Py_BUILD_CORE_BUILTIN

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *,
                         void *(*)(void *), void *);

typedef struct {
    void *(*start)(void *);
    void *arg;
    int slot;
} sealed_start;

static void *
start_sealed(void *p)
{
    sealed_start s = *(sealed_start *)p;
    free(p);
    _PyMPK_SealForLife(s.slot);
    return s.start(s.arg);
}

static create_fn
libc_pthread_create(void)
{
    static _Atomic(create_fn) cached;
    create_fn f = atomic_load_explicit(&cached, memory_order_acquire);
    if (f == NULL) {
        f = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
        atomic_store_explicit(&cached, f, memory_order_release);
    }
    return f;
}

__attribute__((visibility("default"))) int
pthread_create(pthread_t *thread, const pthread_attr_t *attr,
               void *(*start)(void *), void *arg)
{
    create_fn create = libc_pthread_create();
    int slot = _PyMPK_SealedSlot();
    sealed_start *s;
    int rc;

    if (create == NULL) {
        return EAGAIN;
    }
    if (slot < 0) {
        return create(thread, attr, start, arg);
    }
    s = malloc(sizeof(*s));
    if (s == NULL) {
        return EAGAIN;
    }
    s->start = start;
    s->arg = arg;
    s->slot = slot;
    rc = create(thread, attr, start_sealed, s);
    if (rc != 0) {
        free(s);
    }
    return rc;
}

#endif /* Py_BUILD_CORE_BUILTIN */
