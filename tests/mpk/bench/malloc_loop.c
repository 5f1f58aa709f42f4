/* malloc_loop.c -- a C extension's allocation churn, for malloc_bench.py.
 *
 * Built as a plain shared object and called through ctypes once per round, so the
 * per-call cost of ctypes does not hide the allocator's: its malloc/free resolve like
 * numpy's do (the process's definitions: the runtime's interposed ones, or glibc's on
 * a stock interpreter).
 */
#include <stddef.h>
#include <stdlib.h>

/* n times: malloc(size), touch the first byte, free. */
void
malloc_free_loop(long n, size_t size)
{
    for (long i = 0; i < n; i++) {
        char *p = malloc(size);
        if (p == NULL) {
            abort();
        }
        p[0] = (char)i;
        __asm__ volatile("" : : "r"(p) : "memory");
        free(p);
    }
}

/* n blocks of mixed sizes alive at once, then freed in allocation order. */
void
malloc_batch(long n, void **blocks)
{
    static const size_t sizes[] = {16, 48, 200, 1000, 4000};
    for (long i = 0; i < n; i++) {
        blocks[i] = malloc(sizes[i % 5]);
        if (blocks[i] == NULL) {
            abort();
        }
        ((char *)blocks[i])[0] = 1;
    }
    for (long i = 0; i < n; i++) {
        free(blocks[i]);
    }
}
