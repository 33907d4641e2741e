/* The file sink's writes: writev() in pieces, and a thread of the sink's
 * own that makes them while the saving thread reads the next bytes into a
 * second buffer (sink.c, AW_MIN; sink.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sink.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

size_t tio__room_to(size_t piece, uint64_t at) { return piece - (size_t)(at % piece); }

/* How many of the k entries at v the next writev() takes so that it ends
 * at a multiple of `piece` of the file (at: the file offset of v's first
 * byte; piece 0: all k); where that falls inside an entry, the entry is
 * cut there and its whole length left in *keep (else *keep is 0). */
static int piece_cut(struct iovec *v, int k, uint64_t at, size_t piece, size_t *keep) {
    *keep = 0;
    if (!piece) return k;
    size_t room = tio__room_to(piece, at), sum = 0;
    int j = 0;
    while (j < k && v[j].iov_len <= room - sum) sum += v[j++].iov_len;
    if (j < k && sum < room) {
        *keep = v[j].iov_len;
        v[j++].iov_len = room - sum;
    }
    return j;
}

struct iovec *tio__iov_skip(struct iovec *v, int *n, size_t m) {
    while (*n > 0 && m >= v->iov_len) {
        m -= v->iov_len;
        v++;
        (*n)--;
    }
    if (*n > 0) {
        v->iov_base = (uint8_t *)v->iov_base + m;
        v->iov_len -= m;
    }
    return v;
}

int tio__writev_pieces(int fd, struct iovec *v, int n, int iov_max, uint64_t at, size_t piece,
                       uint64_t *done) {
    *done = 0;
    while (n > 0) {
        size_t keep;
        int k = piece_cut(v, n > iov_max ? iov_max : n, at + *done, piece, &keep);
        ssize_t w = writev(fd, v, k);
        if (keep) v[k - 1].iov_len = keep;
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return w < 0 ? errno : EIO;
        *done += (size_t)w;
        v = tio__iov_skip(v, &n, (size_t)w);
    }
    return 0;
}

enum { W_IDLE, W_BATCH, W_STOP };

/* Each side spins this many times on the other's state before it sleeps
 * (a batch takes ~0.1 ms to read or to write; a sleep and a wake-up cost
 * two system calls and an interprocessor interrupt, dear on a virtual
 * machine). */
#define SPIN 4096

static void spin_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Spins until *state is not `from` (SPIN at most): whether it changed. */
static bool spin_until(_Atomic int *state, int from) {
    for (int i = 0; i < SPIN; i++) {
        if (atomic_load_explicit(state, memory_order_acquire) != from) return true;
        spin_pause();
    }
    return false;
}

struct tio__sink_writer {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int fd, iov_max;
    _Atomic int state; /* W_*: set under mu, read anywhere */
    /* the batch: given under mu while W_IDLE, the thread's while W_BATCH */
    struct iovec iov[TIO__SINK_IOV];
    int niov;
    uint64_t at; /* the file offset of its first byte */
    size_t piece;
    /* how it went: the bytes written, the errno of the write that failed */
    uint64_t done;
    int err;
};

static void *writer_main(void *arg) {
    tio__sink_writer *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        if (w->state == W_IDLE) {
            pthread_mutex_unlock(&w->mu);
            spin_until(&w->state, W_IDLE);
            pthread_mutex_lock(&w->mu);
        }
        while (w->state == W_IDLE) pthread_cond_wait(&w->cv, &w->mu);
        if (w->state == W_STOP) break;
        pthread_mutex_unlock(&w->mu);
        uint64_t done;
        int e = tio__writev_pieces(w->fd, w->iov, w->niov, w->iov_max, w->at, w->piece, &done);
        pthread_mutex_lock(&w->mu);
        w->done = done;
        w->err = e;
        w->state = W_IDLE;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

tio__sink_writer *tio__sink_writer_start(int fd, int iov_max) {
    tio__sink_writer *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->fd = fd;
    w->iov_max = iov_max;
    bool mu = pthread_mutex_init(&w->mu, NULL) == 0;
    bool cv = mu && pthread_cond_init(&w->cv, NULL) == 0;
    if (cv && tio__spawn(&w->thread, writer_main, w)) return w;
    if (cv) pthread_cond_destroy(&w->cv);
    if (mu) pthread_mutex_destroy(&w->mu);
    free(w);
    return NULL;
}

int tio__sink_writer_wait(tio__sink_writer *w, uint64_t *done) {
    spin_until(&w->state, W_BATCH);
    pthread_mutex_lock(&w->mu);
    while (w->state == W_BATCH) pthread_cond_wait(&w->cv, &w->mu);
    *done = w->done;
    int e = w->err;
    w->err = 0;
    pthread_mutex_unlock(&w->mu);
    return e;
}

void tio__sink_writer_give(tio__sink_writer *w, const struct iovec *v, int n, uint64_t at,
                           size_t piece) {
    pthread_mutex_lock(&w->mu);
    memcpy(w->iov, v, (size_t)n * sizeof *v); /* n <= TIO__SINK_IOV: the sink's */
    w->niov = n;
    w->at = at;
    w->piece = piece;
    w->done = 0;
    w->state = W_BATCH;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void tio__sink_writer_stop(tio__sink_writer *w) {
    if (!w) return;
    uint64_t done;
    (void)tio__sink_writer_wait(w, &done);
    pthread_mutex_lock(&w->mu);
    w->state = W_STOP;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}
