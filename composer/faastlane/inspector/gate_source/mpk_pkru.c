/* mpk_pkru.c -- the x86 instructions: CPUID detection, RDPKRU, the gate.
 *
 * Nothing here checks whether keys are usable: RDPKRU and WRPKRU raise
 * SIGILL unless the OS set CR4.PKE, so _PyMPK_GateWrite() is called only
 * through mpk_keys.h, once detection (CPUID and a real pkey_alloc) chose
 * keys, and _PyMPK_ReadPKRU() only after _PyMPK_KeysAvailable().
 */
#include "faastlane_mpk.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>

/* CPUID.(EAX=7,ECX=0):ECX */
#define CPUID_7_ECX_PKU (1u << 3)
#define CPUID_7_ECX_OSPKE (1u << 4)

static unsigned int
cpuid_7_ecx(void)
{
    unsigned int eax, ebx, ecx, edx;
    if (__get_cpuid_max(0, NULL) < 7) {
        return 0;
    }
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    return ecx;
}

int
_PyMPK_CPUHasPKU(void)
{
    return (cpuid_7_ecx() & CPUID_7_ECX_PKU) != 0;
}

int
_PyMPK_CPUHasOSPKE(void)
{
    return (cpuid_7_ecx() & CPUID_7_ECX_OSPKE) != 0;
}

uint32_t
_PyMPK_ReadPKRU(void)
{
    uint32_t eax, edx;
    /* RDPKRU (0f 01 ee) requires ECX = 0; it loads PKRU into EAX and
     * zeroes EDX.  Spelled as bytes so old assemblers accept it. */
    __asm__ volatile(".byte 0x0f, 0x01, 0xee"
                     : "=a"(eax), "=d"(edx)
                     : "c"(0));
    (void)edx;
    return eax;
}

/* The gate, defined once, at file scope so the compiler can neither inline
 * nor clone it: the bytes between _PyMPK_GateWrite and _PyMPK_GateWriteEnd
 * are the only WRPKRU of the program.
 *
 *   void _PyMPK_GateWrite(const uint32_t *pkru)      -- pkru in %rdi
 *
 *   0: xor  %ecx, %ecx     WRPKRU faults (#GP) unless ECX = 0 ...
 *      xor  %edx, %edx     ... and EDX = 0.
 *      mov  (%rdi), %eax   the wanted value
 *      wrpkru              0f 01 ef
 *      cmp  (%rdi), %eax   ERIM's check: a jump straight to wrpkru with a
 *      jne  0b             forged EAX lands here and is sent back to load
 *      ret                 the wanted value; only it can leave the gate.
 */
__asm__(
    "    .text\n"
    "    .p2align 4\n"
    "    .globl _PyMPK_GateWrite\n"
    "    .hidden _PyMPK_GateWrite\n"
    "    .type _PyMPK_GateWrite, @function\n"
    "_PyMPK_GateWrite:\n"
    "    .cfi_startproc\n"
    "0:  xorl %ecx, %ecx\n"
    "    xorl %edx, %edx\n"
    "    movl (%rdi), %eax\n"
    "    .byte 0x0f, 0x01, 0xef\n"
    "    cmpl (%rdi), %eax\n"
    "    jne 0b\n"
    "    ret\n"
    "    .cfi_endproc\n"
    "    .globl _PyMPK_GateWriteEnd\n"
    "    .hidden _PyMPK_GateWriteEnd\n"
    "_PyMPK_GateWriteEnd:\n"
    "    .size _PyMPK_GateWrite, _PyMPK_GateWriteEnd - _PyMPK_GateWrite\n");

extern const unsigned char _PyMPK_GateWriteEnd[];

const unsigned char *
_PyMPK_GateCode(size_t *size)
{
    const unsigned char *start = (const unsigned char *)&_PyMPK_GateWrite;
    *size = (size_t)(_PyMPK_GateWriteEnd - start);
    return start;
}

#else /* !x86-64 */

/* No protection keys on this architecture: detection says so and the
 * instructions are never reached (the policy checks detection first). */
int
_PyMPK_CPUHasPKU(void)
{
    return 0;
}

int
_PyMPK_CPUHasOSPKE(void)
{
    return 0;
}

uint32_t
_PyMPK_ReadPKRU(void)
{
    return 0;
}

void
_PyMPK_GateWrite(const uint32_t *pkru)
{
    (void)pkru;
}

const unsigned char *
_PyMPK_GateCode(size_t *size)
{
    *size = 0;
    return NULL;
}

#endif /* x86-64 */
