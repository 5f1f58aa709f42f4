/* mpk_sys.c -- pkey_alloc(2), pkey_free(2), pkey_mprotect(2): the runtime's
 * one `syscall` instruction for protection keys.
 *
 * The calls are not made through glibc's syscall(3) (or its pkey_* wrappers,
 * missing from older libcs and musl) but through _PyMPK_KeySyscall below,
 * whose single `syscall` instruction is the only place in the process the
 * hardening's seccomp filter lets these calls come from: the kernel reports
 * the instruction pointer to the filter (struct seccomp_data), and a call
 * issued anywhere else -- libc's wrappers reached through ctypes, an inline
 * `syscall` in a function's native extension -- gets EPERM.  The filter finds
 * the site by the stub's bytes (see runtime/isolation/seccomp_filter.py), so the stub
 * must stay exactly as written.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "mpk_sys.h"

#include <errno.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* The numbers are fixed by the x86-64 ABI; older headers lack the names. */
#define MPK_NR_PKEY_MPROTECT 329
#define MPK_NR_PKEY_ALLOC 330
#define MPK_NR_PKEY_FREE 331

/*   long _PyMPK_KeySyscall(long nr, long a, long b, long c, long d)
 * returns what the kernel returns (-errno on failure).  File-scope assembly,
 * so the compiler can neither inline nor clone the `syscall`. */
__asm__(
    "    .text\n"
    "    .p2align 4\n"
    "    .globl _PyMPK_KeySyscall\n"
    "    .hidden _PyMPK_KeySyscall\n"
    "    .type _PyMPK_KeySyscall, @function\n"
    "_PyMPK_KeySyscall:\n"
    "    .cfi_startproc\n"
    "    movq %rdi, %rax\n"
    "    movq %rsi, %rdi\n"
    "    movq %rdx, %rsi\n"
    "    movq %rcx, %rdx\n"
    "    movq %r8, %r10\n"
    "    syscall\n"
    "    ret\n"
    "    .cfi_endproc\n"
    "    .size _PyMPK_KeySyscall, . - _PyMPK_KeySyscall\n");

long _PyMPK_KeySyscall(long nr, long a, long b, long c, long d);

static long
key_syscall(long nr, long a, long b, long c, long d)
{
    long result = _PyMPK_KeySyscall(nr, a, b, c, d);
    if (result < 0 && result > -4096) {
        errno = (int)-result;
        return -1;
    }
    return result;
}

int
_PyMPK_SysPkeyAlloc(unsigned int flags, unsigned int access_rights)
{
    return (int)key_syscall(MPK_NR_PKEY_ALLOC, (long)flags,
                            (long)access_rights, 0, 0);
}

int
_PyMPK_SysPkeyFree(int key)
{
    return (int)key_syscall(MPK_NR_PKEY_FREE, (long)key, 0, 0, 0);
}

int
_PyMPK_SysPkeyMprotect(void *addr, size_t len, int prot, int key)
{
    return (int)key_syscall(MPK_NR_PKEY_MPROTECT, (long)addr, (long)len,
                            (long)prot, (long)key);
}

#else /* no x86-64: no protection keys */

int
_PyMPK_SysPkeyAlloc(unsigned int flags, unsigned int access_rights)
{
    (void)flags;
    (void)access_rights;
    errno = ENOSYS;
    return -1;
}

int
_PyMPK_SysPkeyFree(int key)
{
    (void)key;
    errno = ENOSYS;
    return -1;
}

int
_PyMPK_SysPkeyMprotect(void *addr, size_t len, int prot, int key)
{
    (void)addr;
    (void)len;
    (void)prot;
    (void)key;
    errno = ENOSYS;
    return -1;
}

#endif
