/* Work ahead of a listing (cli.h, cli_ahead): a command that prints a row
 * per tensor in order (ls --hash, stats) computes each row's costly part on
 * worker threads, which take the tensors in index order, at most `window`
 * ahead of the row being printed, while the listing waits for the one it
 * prints next. What a worker computes goes into a slot of a ring of
 * `window` slots, which the listing reads when it takes that index. */
#ifdef __linux__
#define _GNU_SOURCE /* sched_getaffinity */
#include <sched.h>
#endif
#include "cli.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define AHEAD_MAX_THREADS 8

enum { CLAIMED = 0, DONE = 1, SKIPPED = 2 };

struct cli_ahead {
    size_t n, window, slot_size;
    size_t next;  /* the next index a worker takes */
    size_t held;  /* the index the listing took last (SIZE_MAX: none) */
    int stop;
    cli_ahead_fn fn;
    cli_ahead_skip_fn skip;
    cli_ahead_cleanup_fn cleanup;
    const void *ctx;
    unsigned char *slots;
    unsigned char *state; /* per slot, for the index it holds */
    pthread_mutex_t mu;
    pthread_cond_t done, room;
    unsigned nthreads;
    pthread_t threads[AHEAD_MAX_THREADS];
};

static void *slot_of(cli_ahead *a, size_t k) {
    return a->slots + (k % a->window) * a->slot_size;
}

/* The first index after the held one. */
static size_t after_held(const cli_ahead *a) { return a->held == SIZE_MAX ? 0 : a->held + 1; }

/* Room for index k: its slot is not the held one's (nor one before it). */
static int ahead_room(const cli_ahead *a, size_t k) {
    size_t base = a->held == SIZE_MAX ? 0 : a->held;
    return k < base + a->window && (a->held == SIZE_MAX || k > a->held);
}

static void *ahead_worker(void *arg) {
    cli_ahead *a = arg;
    pthread_mutex_lock(&a->mu);
    for (;;) {
        while (!a->stop && a->next < a->n && !ahead_room(a, a->next))
            pthread_cond_wait(&a->room, &a->mu);
        if (a->stop || a->next >= a->n) break;
        size_t k = a->next++;
        if (a->skip && a->skip(a->ctx, k)) {
            a->state[k % a->window] = SKIPPED;
            pthread_cond_broadcast(&a->done);
            continue;
        }
        a->state[k % a->window] = CLAIMED;
        pthread_mutex_unlock(&a->mu);
        a->fn(a->ctx, k, slot_of(a, k));
        pthread_mutex_lock(&a->mu);
        a->state[k % a->window] = DONE;
        pthread_cond_broadcast(&a->done);
    }
    pthread_mutex_unlock(&a->mu);
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

cli_ahead *cli_ahead_start(size_t n, size_t slot_size, size_t window, cli_ahead_fn fn,
                           cli_ahead_skip_fn skip, cli_ahead_cleanup_fn cleanup, const void *ctx) {
    size_t work = 0; /* the indices workers would compute */
    for (size_t k = 0; k < n && work < 2; k++) work += !skip || !skip(ctx, k);
    unsigned want = ahead_cpus();
    if (want > AHEAD_MAX_THREADS) want = AHEAD_MAX_THREADS;
    if (want < 2 || work < 2 || !slot_size || window < 2) return NULL; /* nothing to overlap */
    cli_ahead *a = malloc(sizeof *a);
    if (!a) return NULL;
    *a = (cli_ahead){.n = n, .window = window, .slot_size = slot_size, .held = SIZE_MAX,
                     .fn = fn, .skip = skip, .cleanup = cleanup, .ctx = ctx};
    a->slots = calloc(window, slot_size);
    a->state = calloc(window, 1);
    int mu = a->slots && a->state && pthread_mutex_init(&a->mu, NULL) == 0;
    int done = mu && pthread_cond_init(&a->done, NULL) == 0;
    if (!done || pthread_cond_init(&a->room, NULL) != 0) {
        if (done) pthread_cond_destroy(&a->done);
        if (mu) pthread_mutex_destroy(&a->mu);
        free(a->slots);
        free(a->state);
        free(a);
        return NULL;
    }
    for (unsigned k = 0; k < want; k++) {
        if (pthread_create(&a->threads[k], NULL, ahead_worker, a) != 0) break;
        a->nthreads++;
    }
    if (!a->nthreads) { /* none started: the listing computes every row */
        cli_ahead_free(a);
        return NULL;
    }
    return a;
}

void *cli_ahead_take(cli_ahead *a, size_t k) {
    if (!a || k >= a->n) return NULL;
    pthread_mutex_lock(&a->mu);
    /* indices passed over (not taken) are released too */
    for (size_t j = after_held(a); a->cleanup && j < k && j < a->next; j++)
        if (a->state[j % a->window] == DONE) a->cleanup(a->ctx, slot_of(a, j));
    a->held = k;
    pthread_cond_broadcast(&a->room);
    if (k >= a->next) { /* no worker took it yet: the listing does it */
        a->next = k + 1;
        pthread_mutex_unlock(&a->mu);
        return NULL;
    }
    while (a->state[k % a->window] == CLAIMED) pthread_cond_wait(&a->done, &a->mu);
    void *slot = a->state[k % a->window] == DONE ? slot_of(a, k) : NULL;
    pthread_mutex_unlock(&a->mu);
    return slot;
}

void *cli_ahead_next(cli_ahead *a, size_t k, cli_ahead_fn fn, const void *ctx, void *mine) {
    void *s = cli_ahead_take(a, k);
    if (s) return s;
    fn(ctx, k, mine);
    return mine;
}

void cli_ahead_free(cli_ahead *a) {
    if (!a) return;
    pthread_mutex_lock(&a->mu);
    a->stop = 1;
    pthread_cond_broadcast(&a->room);
    pthread_mutex_unlock(&a->mu);
    for (unsigned k = 0; k < a->nthreads; k++) pthread_join(a->threads[k], NULL);
    /* what was computed and never taken */
    for (size_t k = after_held(a); a->cleanup && k < a->next; k++)
        if (a->state[k % a->window] == DONE) a->cleanup(a->ctx, slot_of(a, k));
    pthread_cond_destroy(&a->room);
    pthread_cond_destroy(&a->done);
    pthread_mutex_destroy(&a->mu);
    free(a->slots);
    free(a->state);
    free(a);
}
