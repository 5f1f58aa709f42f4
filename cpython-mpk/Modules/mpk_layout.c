/* mpk_layout.c -- padding that moves the runtime's read-only data, when needed.
 *
 * The runtime's code may hold no WRPKRU but its gate and no XRSTOR, at any byte
 * offset -- including inside other instructions, where a rip-relative
 * displacement to .rodata can spell one by chance (0F AE 28 once did, in
 * PySequence_Repeat).  build.sh scans the linked binary (scan_layout.py) and,
 * if it finds such bytes, writes mpk_layout_pad.h with a number of pages and
 * links again: the pages below lengthen .text, which moves the page-aligned
 * .rodata and changes every displacement into it.  A normal build has no
 * mpk_layout_pad.h and no padding.
 */
#if defined(__has_include)
#  if __has_include("mpk_layout_pad.h")
#    include "mpk_layout_pad.h"
#  endif
#endif

#if defined(FAASTLANE_LAYOUT_PAD_PAGES) && FAASTLANE_LAYOUT_PAD_PAGES > 0
/* A section no linker script names is placed after the last one with the same
 * flags: after .text and .fini, so no code moves, only what follows.  Zeros
 * decode as "add %al,(%rax)" at every offset: nothing that writes PKRU. */
#  define LAYOUT_STR_(x) #x
#  define LAYOUT_STR(x) LAYOUT_STR_(x)
__asm__(".pushsection faastlane_layout_pad,\"ax\",@progbits\n"
        "\t.balign 4096\n"
        "\t.fill " LAYOUT_STR(FAASTLANE_LAYOUT_PAD_PAGES) " * 4096, 1, 0\n"
        "\t.popsection\n");
#else
/* ISO C wants a translation unit to declare something. */
typedef int faastlane_layout_unpadded;
#endif
