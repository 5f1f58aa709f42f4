"""PKRU values and gate bytes as the Intel SDM defines them, for the tests to compare
against (written from the manual, not from the module under test)."""

from __future__ import annotations

NUM_KEYS = 16

# Encodings (Intel SDM vol. 2): what the ERIM-style checked gate must consist of.
XOR_ECX_ECX = bytes.fromhex("31c9")
XOR_EDX_EDX = bytes.fromhex("31d2")
MOV_EAX_FROM_RDI = bytes.fromhex("8b07")  # mov (%rdi), %eax
WRPKRU = bytes.fromhex("0f01ef")
CMP_EAX_WITH_RDI = bytes.fromhex("3b07")  # cmp (%rdi), %eax
JNE_REL8 = 0x75
RET = 0xC3


def pkru_allowing(*keys: int) -> int:
    """PKRU with read/write for key 0 and ``keys``; AD and WD set for every other key.

    PKRU holds two bits per key: bit 2k is Access-Disable, bit 2k+1 Write-Disable.
    """
    value = 0
    for key in range(NUM_KEYS):
        if key != 0 and key not in keys:
            value |= 0b11 << (2 * key)
    return value


def access_disabled(pkru: int, key: int) -> bool:
    """Whether ``pkru`` denies every data access to pages tagged with ``key``."""
    return bool(pkru >> (2 * key) & 1)


CHECKED_PROLOGUE = XOR_ECX_ECX + XOR_EDX_EDX + MOV_EAX_FROM_RDI + WRPKRU + CMP_EAX_WITH_RDI


def is_checked_gate(code: bytes) -> bool:
    """ERIM's rule for the only WRPKRU allowed: ``xor ecx,ecx; xor edx,edx; mov
    (%rdi),%eax; wrpkru; cmp (%rdi),%eax; jne <first xor>; ret`` and nothing else."""
    n = len(CHECKED_PROLOGUE)
    if not code.startswith(CHECKED_PROLOGUE) or len(code) != n + 3:
        return False
    displacement = int.from_bytes(code[n + 1 : n + 2], "little", signed=True)
    return code[n] == JNE_REL8 and n + 2 + displacement == 0 and code[n + 2] == RET
