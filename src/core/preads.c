/* Small reads at scattered offsets of a file, taken by a thread of its own
 * while the opening thread decodes (see internal.h, tio_preads, and
 * docs/performance.md, "Scattered header structs"). */
#include "internal.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { PR_FREE, PR_WORKER, PR_DONE, PR_FAILED, PR_CALLER };

struct tio_preads {
    int fd;
    const uint64_t *off;
    size_t count, len;
    uint64_t size;
    uint8_t *bytes;             /* count × len */
    atomic_uchar *state;        /* PR_* per entry */
    atomic_bool stop;
    pthread_t thread;
};

static void *pr_main(void *arg) {
    tio_preads *j = arg;
    for (size_t i = j->count; i-- > 0;) {
        if (atomic_load_explicit(&j->stop, memory_order_relaxed)) break;
        unsigned char s = PR_FREE;
        if (!atomic_compare_exchange_strong_explicit(&j->state[i], &s, PR_WORKER,
                                                     memory_order_acquire, memory_order_relaxed))
            continue; /* the caller read it already */
        uint64_t o = j->off[i];
        bool ok = false;
        if (o <= j->size && j->len <= j->size - o && o <= (uint64_t)INT64_MAX) {
            ssize_t n;
            do n = pread(j->fd, j->bytes + i * j->len, j->len, (off_t)o);
            while (n < 0 && errno == EINTR);
            ok = n == (ssize_t)j->len;
        }
        atomic_store_explicit(&j->state[i], ok ? PR_DONE : PR_FAILED, memory_order_release);
    }
    return NULL;
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
    /* not begun: the caller reads it (and the thread will skip it) */
    if (atomic_compare_exchange_strong_explicit(&j->state[i], &s, PR_CALLER,
                                                memory_order_acquire, memory_order_acquire))
        return false;
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
    free(j->bytes);
    free((void *)j->state);
    free(j);
}
