/* Small reads at scattered offsets of a file, taken by a thread of its own
 * while the opening thread decodes (see internal.h, tio_preads, and
 * docs/performance.md, "Scattered header structs"); both threads' go in
 * batches through io_uring where the kernel allows (src/core/uring.c). */
#include "internal.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { PR_FREE, PR_WORKER, PR_DONE, PR_FAILED, PR_CALLER };

/* Entries from which the thread asks for a ring (its setup: 0.1-0.4 ms). */
#define PREADS_RING_MIN 256u

struct tio_preads {
    int fd;
    const uint64_t *off;
    size_t count, len;
    uint64_t size;
    uint8_t *bytes;             /* count × len */
    atomic_uchar *state;        /* PR_* per entry */
    atomic_bool stop;
    pthread_t thread;
    /* the caller's own ring (a ring serves one thread), made at the first
     * entry it reads itself; NULL with ring_tried: refused */
    tio_uring *ring;
    bool ring_tried;
};

/* Whether entry i's bytes lie in the file; if not, it is failed at once. */
static bool pr_in_file(tio_preads *j, size_t i) {
    uint64_t o = j->off[i];
    if (o <= j->size && j->len <= j->size - o && o <= (uint64_t)INT64_MAX) return true;
    atomic_store_explicit(&j->state[i], PR_FAILED, memory_order_release);
    return false;
}

/* Claims entry i for a batch (nobody has taken it): whether it did, and
 * its bytes lie in the file. */
static bool pr_claim(tio_preads *j, size_t i) {
    unsigned char s = PR_FREE;
    if (!atomic_compare_exchange_strong_explicit(&j->state[i], &s, PR_WORKER,
                                                 memory_order_acquire, memory_order_relaxed))
        return false; /* taken already */
    return pr_in_file(j, i);
}

/* Reads the k claimed entries at[] (through u where it takes them, in one
 * system call; any it did not make whole, and all without u, by pread())
 * and publishes each: PR_DONE or PR_FAILED. */
static void pr_read(tio_preads *j, tio_uring *u, const size_t *at, size_t k) {
    tio_uring_read r[TIO__URING_DEPTH];
    for (size_t q = 0; q < k; q++)
        r[q] = (tio_uring_read){j->fd, j->bytes + at[q] * j->len, (uint32_t)j->len,
                                j->off[at[q]], 0};
    bool ring = k > 1 && tio__uring_reads(u, r, k);
    for (size_t q = 0; q < k; q++) {
        bool ok = ring && r[q].res == (int32_t)j->len;
        if (!ok) ok = tio__pread_full(j->fd, r[q].buf, j->len, r[q].off) == j->len;
        atomic_store_explicit(&j->state[at[q]], ok ? PR_DONE : PR_FAILED, memory_order_release);
    }
}

/* The thread: entries from the last down, TIO__URING_DEPTH at a time in one
 * system call where the kernel gives it a ring (tio_uring), else one
 * pread() each. */
static void *pr_main(void *arg) {
    tio_preads *j = arg;
    tio_uring *u = j->count >= PREADS_RING_MIN ? tio__uring_new() : NULL;
    size_t at[TIO__URING_DEPTH];
    size_t i = j->count, batch = u ? TIO__URING_DEPTH : 1;
    while (i > 0 && !atomic_load_explicit(&j->stop, memory_order_relaxed)) {
        size_t k = 0;
        while (i > 0 && k < batch) {
            if (!pr_claim(j, --i)) continue;
            at[k++] = i;
        }
        pr_read(j, u, at, k);
    }
    tio__uring_free(u);
    return NULL;
}

/* The caller reached entry i before the thread (i is PR_CALLER): with a ring
 * of its own it reads i and the free entries above it, up to
 * TIO__URING_DEPTH, in one system call (entries the thread has not begun,
 * up to where the two meet: the thread claims from the last down). Whether
 * it did: without a ring (refused, or too few entries to pay for its
 * setup) the caller reads i alone, as before. */
static bool pr_caller_batch(tio_preads *j, size_t i) {
    if (!j->ring_tried) {
        j->ring_tried = true;
        if (j->count >= PREADS_RING_MIN) j->ring = tio__uring_new();
    }
    if (!j->ring) return false;
    size_t at[TIO__URING_DEPTH], k = 0;
    if (pr_in_file(j, i)) at[k++] = i;
    for (size_t n = i + 1; n < j->count && k < TIO__URING_DEPTH; n++) {
        if (atomic_load_explicit(&j->state[n], memory_order_relaxed) != PR_FREE)
            break; /* the thread's from here (or one taken before) */
        if (pr_claim(j, n)) at[k++] = n;
    }
    pr_read(j, j->ring, at, k);
    return true;
}

tio_preads *tio__preads_start(int fd, const uint64_t *off, size_t count, size_t len,
                              uint64_t size) {
    if (fd < 0 || !count || !len || len > TIO__PREADS_MAX || count > SIZE_MAX / len) return NULL;
    tio_preads *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    j->fd = fd;
    j->off = off;
    j->count = count;
    j->len = len;
    j->size = size;
    j->bytes = malloc(count * len);
    j->state = malloc(count * sizeof *j->state);
    if (!j->bytes || !j->state) goto fail;
    for (size_t i = 0; i < count; i++) atomic_init(&j->state[i], PR_FREE);
    atomic_init(&j->stop, false);
    if (tio__spawn(&j->thread, pr_main, j)) return j;
fail:
    free(j->bytes);
    free((void *)j->state);
    free(j);
    return NULL;
}

bool tio__preads_take(tio_preads *j, size_t i, uint8_t *out) {
    if (!j || i >= j->count) return false;
    unsigned char s = PR_FREE;
    /* not begun: the caller reads it, with the free ones above it where it
     * has a ring (and the thread will skip them) */
    if (atomic_compare_exchange_strong_explicit(&j->state[i], &s, PR_CALLER,
                                                memory_order_acquire, memory_order_acquire)) {
        if (!pr_caller_batch(j, i)) return false;
        s = atomic_load_explicit(&j->state[i], memory_order_acquire);
    }
    for (unsigned spins = 0; s == PR_WORKER; spins++) {
        /* one pread under way: a microsecond or so */
        if (spins >= 64) sched_yield();
        s = atomic_load_explicit(&j->state[i], memory_order_acquire);
    }
    if (s != PR_DONE) return false;
    memcpy(out, j->bytes + i * j->len, j->len);
    return true;
}

void tio__preads_end(tio_preads *j) {
    if (!j) return;
    atomic_store_explicit(&j->stop, true, memory_order_relaxed);
    pthread_join(j->thread, NULL);
    tio__uring_free(j->ring);
    free(j->bytes);
    free((void *)j->state);
    free(j);
}
