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
 * with the seal it can do no more with the domain API than its creator.
 *
 * Started inside a domain, the thread also *enters* it before its start
 * routine runs and leaves it when the routine returns: it is counted (the
 * domain cannot be destroyed under it) and it allocates in the function's
 * private heap.  Left in the shared heap, its objects would be shared: code
 * it compiled would be shared code, plantable where other functions run it
 * (docs/security.md, "Shared code is read-only to function code").
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
    int inside;                 /* the creator was inside `domain` */
    _PyMPK_Handle domain;
} sealed_start;

static void *
start_sealed(void *p)
{
    sealed_start s = *(sealed_start *)p;
    void *result;
    free(p);
    /* Entered before sealing: the seal refuses the gate. */
    int entered = s.inside && _PyMPK_Enter(s.domain) == _PyMPK_OK;
    _PyMPK_SealForLife(s.slot);
    result = s.start(s.arg);
    if (entered) {
        _PyMPK_ExitBornSealed(s.domain);
    }
    return result;
}

typedef struct {
    void *(*start)(void *);
    void *arg;
} outside_start;

/* A runtime thread's child: the outside value, hand-off key included, and
 * recorded, so that the signal path restores that value. */
static void *
start_outside(void *p)
{
    outside_start s = *(outside_start *)p;
    free(p);
    _PyMPK_StartOutside();
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
        outside_start *o;
        if (_PyMPK_HandoffSlot() < 0 || (o = malloc(sizeof(*o))) == NULL) {
            return create(thread, attr, start, arg);
        }
        o->start = start;
        o->arg = arg;
        rc = create(thread, attr, start_outside, o);
        if (rc != 0) {
            free(o);
        }
        return rc;
    }
    s = malloc(sizeof(*s));
    if (s == NULL) {
        return EAGAIN;
    }
    s->start = start;
    s->arg = arg;
    s->slot = slot;
    s->inside = _PyMPK_CurrentHandle(&s->domain);
    rc = create(thread, attr, start_sealed, s);
    if (rc != 0) {
        free(s);
    }
    return rc;
}

#endif /* Py_BUILD_CORE_BUILTIN */
