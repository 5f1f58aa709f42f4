/* mpk_sys.c -- pkey_alloc(2), pkey_free(2), pkey_mprotect(2) via syscall(2). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "mpk_sys.h"

#include <errno.h>
#include <unistd.h>
#include <sys/syscall.h>

/* The numbers are fixed by the x86-64 ABI; older headers lack the names. */
#if defined(__x86_64__)
#  ifndef SYS_pkey_mprotect
#    define SYS_pkey_mprotect 329
#  endif
#  ifndef SYS_pkey_alloc
#    define SYS_pkey_alloc 330
#  endif
#  ifndef SYS_pkey_free
#    define SYS_pkey_free 331
#  endif
#endif

int
_PyMPK_SysPkeyAlloc(unsigned int flags, unsigned int access_rights)
{
#ifdef SYS_pkey_alloc
    return (int)syscall(SYS_pkey_alloc, flags, access_rights);
#else
    (void)flags;
    (void)access_rights;
    errno = ENOSYS;
    return -1;
#endif
}

int
_PyMPK_SysPkeyFree(int key)
{
#ifdef SYS_pkey_free
    return (int)syscall(SYS_pkey_free, key);
#else
    (void)key;
    errno = ENOSYS;
    return -1;
#endif
}

int
_PyMPK_SysPkeyMprotect(void *addr, size_t len, int prot, int key)
{
#ifdef SYS_pkey_mprotect
    return (int)syscall(SYS_pkey_mprotect, addr, len, prot, key);
#else
    (void)addr;
    (void)len;
    (void)prot;
    (void)key;
    errno = ENOSYS;
    return -1;
#endif
}
