/* tensio — main(). The tool is tensio_run() (tensio.c), kept out of main so
 * that tests link the commands as a library (tensio_cli_lib). */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sbrk, MADV_HUGEPAGE */
#endif
#include "cli.h"

#if defined(__linux__) && defined(__GLIBC__)
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

/* The process's heap, set once for what the commands do. A conversion of
 * 10,000 tensors touches ~6 MiB of new memory (the container, the save's
 * plan, twice with the loss check, the copy buffer), and under a
 * paravirtual MMU each first touch of a 4 KiB page costs ~10 us (2 MiB:
 * 5 ms by pages, 0.1 ms as one huge page): 1 GiB BTF of 10,000 tensors ->
 * .ten onto ext4 made 1,530 page faults, now ~450, and takes 15 ms less
 * (docs/performance.md). So allocations up
 * to HEAP_MMAP_MAX come from the heap, whose freed memory is kept up to
 * HEAP_KEEP (the check's plan is the save's), and the heap's first
 * HEAP_STEP are asked of the kernel at once and marked for huge pages
 * (glibc's glibc.malloc.hugetlb=1 does that to every part; a program can set
 * it only from its environment). Advice only: nothing changes where the
 * kernel has no huge pages or the allocator is not glibc's. */
#define HEAP_MMAP_MAX (32 << 20)
#define HEAP_KEEP (64 << 20)
#define HEAP_STEP (16 << 20)
#define HUGE_PAGE ((uintptr_t)2 << 20)

static void heap_setup(void) {
#if defined(__linux__) && defined(__GLIBC__) && defined(MADV_HUGEPAGE)
    mallopt(M_MMAP_THRESHOLD, HEAP_MMAP_MAX);
    mallopt(M_TRIM_THRESHOLD, HEAP_KEEP);
    mallopt(M_TOP_PAD, HEAP_STEP);
    void *a = sbrk(0);
    void *volatile p = malloc(HEAP_STEP / 2); /* grows the heap by that and HEAP_STEP */
    void *b = sbrk(0);
    free(p);
    if (a == (void *)-1 || b == (void *)-1) return;
    uintptr_t lo = ((uintptr_t)a + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    uintptr_t hi = (uintptr_t)b & ~(HUGE_PAGE - 1);
    if (hi > lo) (void)madvise((void *)lo, (size_t)(hi - lo), MADV_HUGEPAGE);
#endif
}

int main(int argc, char **argv) {
    heap_setup();
    return tensio_run(argc, argv);
}
