/* mpk_sys.h -- the raw protection-key system calls, nothing else.
 *
 * Called through syscall(2) rather than glibc's wrappers: the wrappers are
 * missing from older C libraries and from musl, and pkey_mprotect's must be
 * callable where glibc would refuse.  Each returns what the kernel returns
 * (-1 with errno set on failure).
 */
#ifndef FAASTLANE_MPK_SYS_H
#define FAASTLANE_MPK_SYS_H

#include <stddef.h>

/* Access rights for pkey_alloc(2), as in <linux/mman.h>-era kernels. */
#define _PyMPK_PKEY_DISABLE_ACCESS 0x1
#define _PyMPK_PKEY_DISABLE_WRITE 0x2

int _PyMPK_SysPkeyAlloc(unsigned int flags, unsigned int access_rights);
int _PyMPK_SysPkeyFree(int key);
int _PyMPK_SysPkeyMprotect(void *addr, size_t len, int prot, int key);

#endif /* !FAASTLANE_MPK_SYS_H */
