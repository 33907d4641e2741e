/* Hashing ahead of a listing (cli.h, cli_hash_ahead): `ls --hash` prints
 * tensor after tensor, but their SHA-256s do not depend on each other, so
 * worker threads take the tensors in order and hash them while the listing
 * waits for the one it prints next. A COO tensor is left to the listing:
 * its dense hash counts against the input's budget in order
 * (cli_hash_dense). */
#ifdef __linux__
#define _GNU_SOURCE /* sched_getaffinity */
#include <sched.h>
#endif
#include "cli.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define AHEAD_MAX_THREADS 8 /* SHA-256 is ~2 GB/s a core: 8 are past most memory */

enum { PENDING = 0, DONE = 1 };

typedef struct ahead_item {
    uint8_t digest[32];
    int state, st;
    tio_error *err; /* only when st != TIO_OK */
} ahead_item;

struct cli_hash_ahead {
    const tio_container *c;
    size_t n, next; /* next: the next tensor a worker takes */
    int stop;
    ahead_item *items;
    pthread_mutex_t mu;
    pthread_cond_t done;
    unsigned nthreads;
    pthread_t threads[AHEAD_MAX_THREADS];
};

static int ahead_skips(const tio_tensor *t) { return tio_tensor_layout(t) == TIO_LAYOUT_COO; }

static void *ahead_worker(void *arg) {
    cli_hash_ahead *h = arg;
    pthread_mutex_lock(&h->mu);
    while (!h->stop && h->next < h->n) {
        size_t i = h->next++;
        const tio_tensor *t = tio_container_tensor(h->c, i);
        if (ahead_skips(t)) continue;
        pthread_mutex_unlock(&h->mu);
        uint8_t digest[32];
        tio_error err;
        int st = tio_tensor_sha256(t, TIO_HASH_DENSE, digest, &err);
        tio_error *kept = NULL;
        if (st != TIO_OK && (kept = malloc(sizeof *kept)) != NULL) *kept = err;
        pthread_mutex_lock(&h->mu);
        ahead_item *it = &h->items[i];
        memcpy(it->digest, digest, sizeof digest);
        it->st = st;
        it->err = kept;
        it->state = DONE;
        pthread_cond_broadcast(&h->done);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* The processors this process may run on. */
static unsigned ahead_cpus(void) {
#ifdef __linux__
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int k = CPU_COUNT(&set);
        return k > 0 ? (unsigned)k : 1u;
    }
#endif
    long k = sysconf(_SC_NPROCESSORS_ONLN);
    return k > 0 ? (unsigned)k : 1u;
}

cli_hash_ahead *cli_hash_ahead_start(const tio_container *c) {
    size_t n = tio_container_count(c), hashed = 0;
    for (size_t i = 0; i < n; i++) hashed += !ahead_skips(tio_container_tensor(c, i));
    unsigned want = ahead_cpus();
    if (want > AHEAD_MAX_THREADS) want = AHEAD_MAX_THREADS;
    if (want > hashed) want = (unsigned)hashed;
    if (want < 2) return NULL; /* one tensor, or one processor: hashed in the listing */
    cli_hash_ahead *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->items = calloc(n, sizeof *h->items);
    if (!h->items || pthread_mutex_init(&h->mu, NULL) != 0) {
        free(h->items);
        free(h);
        return NULL;
    }
    if (pthread_cond_init(&h->done, NULL) != 0) {
        pthread_mutex_destroy(&h->mu);
        free(h->items);
        free(h);
        return NULL;
    }
    h->c = c;
    h->n = n;
    for (unsigned k = 0; k < want; k++) {
        if (pthread_create(&h->threads[k], NULL, ahead_worker, h) != 0) break;
        h->nthreads++;
    }
    if (!h->nthreads) { /* none started: the listing hashes every tensor */
        cli_hash_ahead_free(h);
        return NULL;
    }
    return h;
}

int cli_hash_ahead_take(cli_hash_ahead *h, size_t i, uint8_t out[32], tio_error *err, int *st) {
    if (!h || i >= h->n) return 0;
    pthread_mutex_lock(&h->mu);
    if (i >= h->next) { /* no worker took it yet: the listing takes it */
        h->next = i + 1;
        pthread_mutex_unlock(&h->mu);
        return 0;
    }
    ahead_item *it = &h->items[i];
    while (it->state != DONE && !ahead_skips(tio_container_tensor(h->c, i)))
        pthread_cond_wait(&h->done, &h->mu);
    int have = it->state == DONE;
    pthread_mutex_unlock(&h->mu);
    if (!have) return 0;
    *st = it->st;
    if (it->st == TIO_OK) {
        memcpy(out, it->digest, sizeof it->digest);
    } else if (it->err) {
        *err = *it->err;
    } else {
        return 0; /* its error could not be kept: hashed again in the listing */
    }
    return 1;
}

void cli_hash_ahead_free(cli_hash_ahead *h) {
    if (!h) return;
    pthread_mutex_lock(&h->mu);
    h->stop = 1;
    pthread_mutex_unlock(&h->mu);
    for (unsigned k = 0; k < h->nthreads; k++) pthread_join(h->threads[k], NULL);
    for (size_t i = 0; i < h->n; i++) free(h->items[i].err);
    pthread_cond_destroy(&h->done);
    pthread_mutex_destroy(&h->mu);
    free(h->items);
    free(h);
}
