/* tio_bench zmq: ZeroMQ over loopback TCP, PUSH -> PULL, tensio streams
 * against raw libzmq moving the same payload bytes in the same run.
 *
 *   tio_bench [--reps N] [--warmup N] [--check] zmq [--sizes 1K,64K,...]
 *             [--budget BYTES] [--subjects raw,zio,tensorcom,...] [--sessions S]
 *             [--shared-ctx | --pin]
 *
 * For each size and subject: a receiver (PULL, bound to tcp://127.0.0.1:*)
 * runs in a thread of its own, the sender (PUSH, connected) in the main
 * thread. Each socket has its own libzmq context (one I/O thread each, as
 * two processes would have, and as tio_stream_open does by default); with
 * --shared-ctx both ends of every subject share one context instead. With
 * --pin the sender's thread and its context's I/O thread run on CPU 0, the
 * receiver's on CPU 1 (ZMQ_THREAD_AFFINITY_CPU_ADD; tensio's streams then
 * get contexts made here, one each, through tio_stream_options.zmq_context).
 *
 * All subjects of a size are set up together and their rounds run
 * interleaved (round r of every subject in turn, the order rotating), so
 * that changes in the machine's load hit every subject alike. The timed
 * rounds are spread over S sessions (default: one per timed round), each
 * with new contexts, sockets, connections and threads. In each session one
 * untimed message first brings the connections up, then x->warmup untimed
 * rounds and the session's share of the x->reps timed rounds run, of N
 * messages each: N = clamp(budget / size, 64, 100000) (default budget
 * 1 GiB, about 0.1 to 0.5 s a round here). A round is timed from just
 * before the first send to the receiver having the last message
 * (CLOCK_MONOTONIC); the sender starts a round only once the receiver has
 * finished the previous one.
 *
 * Subjects (the payload is `size` bytes of pseudo-random data, sent from
 * one buffer that is reused for every message):
 *   base:libzmq          one frame per message, lent with zmq_msg_init_data
 *                        and a free callback (zero copy, the buffer's users
 *                        counted as a real sender must); zmq_msg_recv into
 *                        one reused zmq_msg_t, no copy
 *   base:libzmq-copy     (--subjects rawcopy) zmq_send: the payload copied
 *   base:libzmq-const    (--subjects rawconst) zmq_msg_init_data with no free
 *                        function: libzmq's constant messages, no allocation
 *   base:libzmq-2frames  (--subjects raw2) tensorcom's framing without tensio:
 *                        a 32-byte header frame (zmq_send, copied), then the
 *                        payload lent as for base:libzmq
 *   base:libzmq-3frames  (--subjects raw3) ZIO's framing without tensio: an
 *                        85-byte prefix frame (tensio's for one 1-D tensor;
 *                        copied), a 24-byte coordinate frame (copied), then
 *                        the payload lent
 *   tensio:zio           tio_stream_send of one container holding one float32
 *                        tensor [size/4] (uint8 [size] if size % 4), built once
 *                        per size; tio_stream_recv, count and nbytes read,
 *                        tio_container_free
 *   tensio:tensorcom     the same with TIO_PROTO_TENSORCOM
 *   tensio:zio-fresh, tensio:tensorcom-fresh   (--subjects zio-fresh,...)
 *                        a new container per message (tio_container_new,
 *                        tio_container_add borrowing the buffer, send, free)
 *
 * With --check every sampled message is verified (frame/tensor count, size,
 * bn_checksum of the data) and a mismatch fails the run. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setaffinity_np, CPU_SET (--pin) */
#endif
#include "bench.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <tensio.h>
#include <unistd.h>
#include <zmq.h>

#define MAX_SIZES 64
#define MIN_MSGS 64u
#define MAX_MSGS 100000u
#define DEFAULT_BUDGET (UINT64_C(1) << 30)
#define TIMEOUT_MS 30000
#define CHECK_BYTES_PER_ROUND (UINT64_C(16) << 20)

enum subject {
    S_RAW, S_RAWCOPY, S_RAWCONST, S_RAW2, S_RAW3,
    S_ZIO, S_TC, S_ZIO_FRESH, S_TC_FRESH, S_COUNT
};

static const struct subject_def {
    const char *key;  /* --subjects spelling */
    const char *name; /* output subject */
    int frames;       /* frames per message */
} subjects[S_COUNT] = {
    [S_RAW] = {"raw", "base:libzmq", 1},
    [S_RAWCOPY] = {"rawcopy", "base:libzmq-copy", 1},
    [S_RAWCONST] = {"rawconst", "base:libzmq-const", 1},
    [S_RAW2] = {"raw2", "base:libzmq-2frames", 2},
    [S_RAW3] = {"raw3", "base:libzmq-3frames", 3},
    [S_ZIO] = {"zio", "tensio:zio", 3},
    [S_TC] = {"tensorcom", "tensio:tensorcom", 2},
    [S_ZIO_FRESH] = {"zio-fresh", "tensio:zio-fresh", 3},
    [S_TC_FRESH] = {"tensorcom-fresh", "tensio:tensorcom-fresh", 2},
};

static int is_raw(int s) { return s <= S_RAW3; }
static int is_fresh(int s) { return s == S_ZIO_FRESH || s == S_TC_FRESH; }
static int is_zio(int s) { return s == S_ZIO || s == S_ZIO_FRESH; }

/* How the ends are set up (command-line options). */
typedef struct zopts {
    void *shared; /* --shared-ctx: the one context of every socket, or NULL */
    int pin;      /* --pin: sender side on CPU 0, receiver side on CPU 1 */
    int ncpu;
} zopts;

/* Pins the calling thread to one CPU (best effort). */
static void pin_self(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((size_t)cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* A context of our own; pinned, its I/O thread runs on `cpu`. */
static void *ctx_new(const zopts *zo, int cpu) {
    void *c = zmq_ctx_new();
    if (c && zo->pin) zmq_ctx_set(c, ZMQ_THREAD_AFFINITY_CPU_ADD, cpu);
    return c;
}

/* One size × subject: the two ends and what the receiver reports back. */
typedef struct pair {
    int subject;
    size_t size;
    uint64_t n;        /* messages per round */
    int rounds;        /* 1 (connect) + warmup + reps */
    int check;
    uint64_t want_sum; /* bn_checksum of the payload */
    uint64_t step;     /* check every step-th message (and the last) */
    const unsigned char *buf;
    /* sockets */
    void *rctx, *sctx; /* contexts we made (raw; tensio with --pin), or NULL */
    int rcpu;          /* --pin: the receiver's CPU, or -1 */
    void *rsock, *ssock;
    tio_stream *rs, *ss;
    tio_container *c;  /* the container sent (not for the -fresh subjects) */
    atomic_uint_fast64_t lent; /* raw: frames libzmq still holds */
    /* receiver -> sender */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int go;            /* rounds the receiver may start (sender -> receiver) */
    int stop;          /* the receiver is to end (sender -> receiver) */
    int done;          /* rounds the receiver has finished */
    int failed;
    double *t_start, *t_end; /* per round */
    pthread_t thread;
    int started;
    char why[512];
} pair;

static void pair_fail(pair *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pair_fail(pair *p, const char *fmt, ...) {
    va_list ap;
    pthread_mutex_lock(&p->mu);
    if (!p->failed) {
        va_start(ap, fmt);
        vsnprintf(p->why, sizeof p->why, fmt, ap);
        va_end(ap);
        p->failed = 1;
    }
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static uint64_t round_count(const pair *p, int r) { return r == 0 ? 1 : p->n; }

static int sampled(const pair *p, uint64_t i, uint64_t cnt) {
    return p->check && (i % p->step == 0 || i + 1 == cnt);
}

/* ------------------------------------------------------------- receiver */

static int recv_raw(pair *p, zmq_msg_t *m, uint64_t i, uint64_t cnt) {
    int frames = 0;
    do { /* the payload is the last frame */
        while (zmq_msg_recv(m, p->rsock, 0) < 0) {
            if (errno == EINTR) continue;
            pair_fail(p, "%s: receive: %s", subjects[p->subject].name, zmq_strerror(errno));
            return -1;
        }
        frames++;
    } while (zmq_msg_more(m));
    if (frames != subjects[p->subject].frames) {
        pair_fail(p, "%s: message %" PRIu64 " has %d frames, expected %d",
                  subjects[p->subject].name, i, frames, subjects[p->subject].frames);
        return -1;
    }
    size_t got = zmq_msg_size(m);
    if (got != p->size) {
        pair_fail(p, "%s: message %" PRIu64 " is %zu bytes, expected %zu",
                  subjects[p->subject].name, i, got, p->size);
        return -1;
    }
    if (sampled(p, i, cnt) && bn_checksum(zmq_msg_data(m), got, 0) != p->want_sum) {
        pair_fail(p, "%s: message %" PRIu64 ": checksum mismatch", subjects[p->subject].name,
                  i);
        return -1;
    }
    return 0;
}

static int recv_tensio(pair *p, uint64_t i, uint64_t cnt) {
    tio_container *c = NULL;
    tio_error err;
    if (tio_stream_recv(p->rs, &c, &err) != TIO_OK) {
        pair_fail(p, "%s: message %" PRIu64 ": %s", subjects[p->subject].name, i, err.message);
        return -1;
    }
    int rc = 0;
    size_t count = tio_container_count(c);
    const tio_tensor *t = count ? tio_container_tensor(c, 0) : NULL;
    if (count != 1 || tio_tensor_nbytes(t) != p->size) {
        pair_fail(p, "%s: message %" PRIu64 ": %zu tensors of %zu bytes, expected 1 of %zu",
                  subjects[p->subject].name, i, count, t ? tio_tensor_nbytes(t) : 0, p->size);
        rc = -1;
    } else if (sampled(p, i, cnt) &&
               bn_checksum(tio_tensor_data(t), p->size, 0) != p->want_sum) {
        pair_fail(p, "%s: message %" PRIu64 ": checksum mismatch", subjects[p->subject].name,
                  i);
        rc = -1;
    }
    tio_container_free(c);
    return rc;
}

static void *receiver(void *arg) {
    pair *p = arg;
    if (p->rcpu >= 0) pin_self(p->rcpu);
    zmq_msg_t m;
    zmq_msg_init(&m);
    for (int r = 0; r < p->rounds; r++) {
        /* idle between rounds here, not in a receive */
        pthread_mutex_lock(&p->mu);
        while (p->go <= r && !p->stop) pthread_cond_wait(&p->cv, &p->mu);
        int stop = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (stop) break;
        uint64_t cnt = round_count(p, r);
        for (uint64_t i = 0; i < cnt; i++) {
            int rc = is_raw(p->subject) ? recv_raw(p, &m, i, cnt) : recv_tensio(p, i, cnt);
            if (rc) goto out;
        }
        double t = bn_now();
        pthread_mutex_lock(&p->mu);
        p->t_end[r] = t;
        p->done = r + 1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
out:
    zmq_msg_close(&m);
    return NULL;
}

/* --------------------------------------------------------------- sender */

/* libzmq is done with a lent frame (called from its I/O thread). */
static void raw_free(void *data, void *hint) {
    (void)data;
    atomic_fetch_sub_explicit((atomic_uint_fast64_t *)hint, 1, memory_order_release);
}

/* The head frames of base:libzmq-2frames / -3frames (their sizes are those of
 * tensorcom's header and of a ZIO prefix with a one-tensor label). */
static const unsigned char raw_head[128];
#define RAW_TC_HEADER 32u
#define RAW_ZIO_PREFIX 85u
#define RAW_ZIO_COORD 24u

static int send_head(pair *p, size_t n) {
    int rc = zmq_send(p->ssock, raw_head, n, ZMQ_SNDMORE);
    while (rc < 0 && errno == EINTR) rc = zmq_send(p->ssock, raw_head, n, ZMQ_SNDMORE);
    if (rc < 0) pair_fail(p, "%s: send: %s", subjects[p->subject].name, zmq_strerror(errno));
    return rc < 0 ? -1 : 0;
}

static int send_raw(pair *p) {
    int rc;
    if (p->subject == S_RAW2 && send_head(p, RAW_TC_HEADER)) return -1;
    if (p->subject == S_RAW3 && (send_head(p, RAW_ZIO_PREFIX) || send_head(p, RAW_ZIO_COORD)))
        return -1;
    if (p->subject == S_RAWCOPY) {
        rc = zmq_send(p->ssock, p->buf, p->size, 0);
        while (rc < 0 && errno == EINTR) rc = zmq_send(p->ssock, p->buf, p->size, 0);
    } else {
        zmq_msg_t m;
        if (p->subject == S_RAWCONST) {
            rc = zmq_msg_init_data(&m, (void *)(uintptr_t)p->buf, p->size, NULL, NULL);
        } else {
            atomic_fetch_add_explicit(&p->lent, 1, memory_order_relaxed);
            rc = zmq_msg_init_data(&m, (void *)(uintptr_t)p->buf, p->size, raw_free, &p->lent);
        }
        if (rc != 0) {
            pair_fail(p, "zmq_msg_init_data: %s", zmq_strerror(errno));
            return -1;
        }
        rc = zmq_msg_send(&m, p->ssock, 0);
        while (rc < 0 && errno == EINTR) rc = zmq_msg_send(&m, p->ssock, 0);
        if (rc < 0) zmq_msg_close(&m);
    }
    if (rc < 0) {
        pair_fail(p, "%s: send: %s", subjects[p->subject].name, zmq_strerror(errno));
        return -1;
    }
    return 0;
}

/* A container with one tensor of `size` bytes borrowing buf. */
static tio_container *make_container(const unsigned char *buf, size_t size, tio_error *err) {
    tio_container *c = tio_container_new();
    if (!c) return NULL;
    int64_t dim = size % 4 == 0 ? (int64_t)(size / 4) : (int64_t)size;
    tio_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = size % 4 == 0 ? TIO_FLOAT32 : TIO_UINT8;
    d.rank = 1;
    d.shape = &dim;
    d.data = buf;
    d.nbytes = size;
    if (tio_container_add(c, &d, TIO_ADD_BORROW, NULL, err) != TIO_OK) {
        tio_container_free(c);
        return NULL;
    }
    return c;
}

static int send_tensio(pair *p) {
    tio_error err;
    tio_container *c = p->c;
    if (is_fresh(p->subject)) {
        c = make_container(p->buf, p->size, &err);
        if (!c) {
            pair_fail(p, "building a container: %s", err.message);
            return -1;
        }
    }
    int rc = tio_stream_send(p->ss, c, NULL, &err);
    if (is_fresh(p->subject)) tio_container_free(c);
    if (rc != TIO_OK) {
        pair_fail(p, "%s: send: %s", subjects[p->subject].name, err.message);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ set-up */

static int raw_setopt(void *sock, int opt, int v) {
    return zmq_setsockopt(sock, opt, &v, sizeof v);
}

static int open_raw(pair *p, const zopts *zo) {
    void *shared = zo->shared;
    p->rctx = shared ? shared : ctx_new(zo, p->rcpu);
    p->sctx = shared ? shared : ctx_new(zo, 0);
    if (!p->rctx || !p->sctx) return bn_fail("zmq_ctx_new: %s", zmq_strerror(errno));
    p->rsock = zmq_socket(p->rctx, ZMQ_PULL);
    p->ssock = zmq_socket(p->sctx, ZMQ_PUSH);
    if (!p->rsock || !p->ssock) return bn_fail("zmq_socket: %s", zmq_strerror(errno));
    /* the same timeouts and linger as the tensio ends */
    if (raw_setopt(p->rsock, ZMQ_RCVTIMEO, TIMEOUT_MS) || raw_setopt(p->ssock, ZMQ_SNDTIMEO,
                                                                     TIMEOUT_MS) ||
        raw_setopt(p->rsock, ZMQ_LINGER, 0) || raw_setopt(p->ssock, ZMQ_LINGER, TIMEOUT_MS))
        return bn_fail("zmq_setsockopt: %s", zmq_strerror(errno));
    if (zmq_bind(p->rsock, "tcp://127.0.0.1:*") != 0)
        return bn_fail("bind tcp://127.0.0.1:*: %s", zmq_strerror(errno));
    char ep[256];
    size_t len = sizeof ep;
    if (zmq_getsockopt(p->rsock, ZMQ_LAST_ENDPOINT, ep, &len) != 0)
        return bn_fail("ZMQ_LAST_ENDPOINT: %s", zmq_strerror(errno));
    if (zmq_connect(p->ssock, ep) != 0) return bn_fail("connect %s: %s", ep, zmq_strerror(errno));
    return 0;
}

static int open_tensio(pair *p, const zopts *zo) {
    tio_error err;
    tio_stream_options o;
    memset(&o, 0, sizeof o);
    o.socket = TIO_SOCKET_PULL;
    o.proto = is_zio(p->subject) ? TIO_PROTO_ZIO : TIO_PROTO_TENSORCOM;
    o.flags = TIO_STREAM_BIND;
    o.timeout_ms = TIMEOUT_MS;
    o.linger_ms = -1;
    if (zo->pin) { /* contexts of our own, to pin their I/O threads */
        p->rctx = ctx_new(zo, p->rcpu);
        p->sctx = ctx_new(zo, 0);
        if (!p->rctx || !p->sctx) return bn_fail("zmq_ctx_new: %s", zmq_strerror(errno));
    }
    o.zmq_context = zo->shared ? zo->shared : p->rctx;
    if (tio_stream_open("tcp://127.0.0.1:*", &o, &p->rs, &err) != TIO_OK)
        return bn_fail("%s: receiver: %s", subjects[p->subject].name, err.message);
    o.socket = TIO_SOCKET_PUSH;
    o.flags = 0;
    o.linger_ms = TIMEOUT_MS;
    o.zmq_context = zo->shared ? zo->shared : p->sctx;
    if (tio_stream_open(tio_stream_endpoint(p->rs), &o, &p->ss, &err) != TIO_OK)
        return bn_fail("%s: sender: %s", subjects[p->subject].name, err.message);
    if (!is_fresh(p->subject)) {
        p->c = make_container(p->buf, p->size, &err);
        if (!p->c) return bn_fail("building a container: %s", err.message);
    }
    return 0;
}

/* Closes everything: the sender first (it lingers until its frames are out),
 * so the buffer is no longer lent when this returns. */
static void close_pair(pair *p, const zopts *zo) {
    if (p->ssock) zmq_close(p->ssock);
    if (p->rsock) zmq_close(p->rsock);
    tio_stream_close(p->ss, NULL);
    tio_stream_close(p->rs, NULL);
    if (!zo->shared) { /* after the sockets: zmq_ctx_term waits for them */
        if (p->sctx) zmq_ctx_term(p->sctx);
        if (p->rctx) zmq_ctx_term(p->rctx);
    }
    tio_container_free(p->c);
}

/* Sets up one size × subject: sockets, container, the receiver thread. */
static int pair_start(bn_ctx *x, pair *p, int subject, size_t size, uint64_t budget,
                      int reps, uint64_t want_sum, const unsigned char *buf,
                      const zopts *zo) {
    memset(p, 0, sizeof *p);
    p->rcpu = zo->pin ? 1 % zo->ncpu : -1;
    p->subject = subject;
    p->size = size;
    uint64_t n = budget / size;
    p->n = n < MIN_MSGS ? MIN_MSGS : n > MAX_MSGS ? MAX_MSGS : n;
    p->rounds = 1 + x->warmup + reps;
    p->check = x->check;
    p->want_sum = want_sum;
    uint64_t per = CHECK_BYTES_PER_ROUND / size;
    p->step = per >= p->n ? 1 : p->n / (per ? per : 1);
    p->buf = buf;
    atomic_init(&p->lent, 0);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->t_start = calloc((size_t)p->rounds, sizeof *p->t_start);
    p->t_end = calloc((size_t)p->rounds, sizeof *p->t_end);
    if (!p->t_start || !p->t_end) return bn_fail("out of memory");
    int rc = is_raw(subject) ? open_raw(p, zo) : open_tensio(p, zo);
    if (rc) return rc;
    if (pthread_create(&p->thread, NULL, receiver, p) != 0)
        return bn_fail("pthread_create failed");
    p->started = 1;
    return 0;
}

/* Round r of a pair: sends its messages and waits for the receiver. */
static int pair_round(pair *p, int r) {
    uint64_t cnt = round_count(p, r);
    pthread_mutex_lock(&p->mu);
    p->go = r + 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    p->t_start[r] = bn_now();
    for (uint64_t i = 0; i < cnt; i++)
        if ((is_raw(p->subject) ? send_raw(p) : send_tensio(p)) != 0) break;
    pthread_mutex_lock(&p->mu);
    while (p->done <= r && !p->failed) pthread_cond_wait(&p->cv, &p->mu);
    int failed = p->failed;
    pthread_mutex_unlock(&p->mu);
    return failed ? bn_fail("%s", p->why) : 0;
}

/* Stops the receiver, closes everything, reports the rounds (when ok). */
static int pair_finish(bn_ctx *x, pair *p, int ok, int facts, const zopts *zo) {
    int rc = 0;
    if (p->started) {
        /* an idle receiver ends at once; one inside a round whose sender
         * failed ends with its receive timeout */
        pthread_mutex_lock(&p->mu);
        p->stop = 1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->thread, NULL);
    }
    char label[32];
    bn_size_label(p->size, label, sizeof label);
    const char *name = subjects[p->subject].name;
    if (ok) {
        for (int r = 1 + x->warmup; r < p->rounds; r++)
            bn_emit("zmq", label, name, p->t_end[r] - p->t_start[r], p->n * p->size, p->n);
    }
    if (ok && facts) {
        bn_fact("zmq", label, name, "frames_per_message", "%d", subjects[p->subject].frames);
        uint64_t wire = p->size;
        if (p->ss) {
            tio_stream_stats st;
            tio_stream_get_stats(p->ss, &st);
            wire = st.sent ? st.bytes_sent / st.sent : 0;
        }
        bn_fact("zmq", label, name, "wire_bytes_per_message", "%" PRIu64, wire);
    }
    close_pair(p, zo);
    if (atomic_load(&p->lent) != 0)
        rc = bn_fail("%s: libzmq still holds %" PRIuFAST64 " lent frames after close", name,
                     (uint_fast64_t)atomic_load(&p->lent));
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p->t_start);
    free(p->t_end);
    return rc;
}

/* One size, in `sessions` sessions. A session sets up every subject's pair
 * (new contexts, sockets, connections, threads), runs the rounds
 * interleaved (round r of each subject in turn, the order rotating by
 * round), so that a change in the machine's load hits all subjects alike,
 * and closes them. The timed rounds are spread over the sessions: what a
 * connection happens to get (its threads' placement on the CPUs, its TCP
 * buffers) lasts as long as the connection, so fresh connections sample it. */
static int run_size(bn_ctx *x, const int *on, size_t size, uint64_t budget, int sessions,
                    const zopts *zo) {
    unsigned char *buf = aligned_alloc(64, (size + 63) / 64 * 64);
    if (!buf) return bn_fail("cannot allocate %zu bytes", size);
    bn_fill(buf, size, 0x7e57 + size);
    uint64_t sum = bn_checksum(buf, size, 0);
    int rc = 0;
    for (int k = 0; rc == 0 && k < sessions; k++) {
        int reps = x->reps / sessions + (k < x->reps % sessions);
        pair ps[S_COUNT];
        int np = 0;
        for (int s = 0; rc == 0 && s < S_COUNT; s++)
            if (on[s]) rc = pair_start(x, &ps[np++], s, size, budget, reps, sum, buf, zo);
        int rounds = 1 + x->warmup + reps;
        for (int r = 0; rc == 0 && r < rounds; r++)
            for (int j = 0; rc == 0 && j < np; j++) rc = pair_round(&ps[(j + r + k) % np], r);
        for (int j = 0; j < np; j++) {
            int f = pair_finish(x, &ps[j], rc == 0, k == 0, zo);
            if (rc == 0) rc = f;
        }
    }
    free(buf);
    return rc;
}

/* ------------------------------------------------------------- options */

static int parse_sizes(const char *s, uint64_t *out, size_t *n) {
    *n = 0;
    while (*s) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        char tok[32];
        if (len == 0 || len >= sizeof tok || *n >= MAX_SIZES) return -1;
        memcpy(tok, s, len);
        tok[len] = 0;
        uint64_t v = bn_parse_size(tok);
        if (v == 0 || v > (UINT64_C(1) << 32)) return -1;
        out[(*n)++] = v;
        s += len;
        if (*s == ',') s++;
    }
    return *n ? 0 : -1;
}

static int parse_subjects(const char *s, int *on) {
    memset(on, 0, S_COUNT * sizeof *on);
    while (*s) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        int found = 0;
        for (int k = 0; k < S_COUNT; k++) {
            if (strlen(subjects[k].key) == len && strncmp(s, subjects[k].key, len) == 0) {
                on[k] = 1;
                found = 1;
            }
        }
        if (!found) return -1;
        s += len;
        if (*s == ',') s++;
    }
    return 0;
}

int bn_cmd_zmq(bn_ctx *x, int argc, char **argv) {
    uint64_t sizes[MAX_SIZES];
    size_t nsizes;
    const char *ss = bn_opt(argc, argv, "--sizes", "1K,4K,16K,64K,256K,1M,4M,16M");
    if (parse_sizes(ss, sizes, &nsizes) != 0)
        return bn_fail("zmq: bad --sizes '%s' (expected e.g. 1K,64K,16M)", ss);
    const char *bs = bn_opt(argc, argv, "--budget", NULL);
    uint64_t budget = bs ? bn_parse_size(bs) : DEFAULT_BUDGET;
    if (budget == 0) return bn_fail("zmq: bad --budget '%s'", bs);
    int on[S_COUNT];
    const char *subj = bn_opt(argc, argv, "--subjects", "raw,zio,tensorcom");
    if (parse_subjects(subj, on) != 0)
        return bn_fail("zmq: bad --subjects '%s' (expected a list of raw rawcopy rawconst zio "
                       "tensorcom zio-fresh tensorcom-fresh)",
                       subj);
    for (int i = 1; i < argc; i++) {
        int known = strcmp(argv[i], "--shared-ctx") == 0 || strcmp(argv[i], "--pin") == 0;
        if (!known && i + 1 < argc &&
            (strcmp(argv[i], "--sizes") == 0 || strcmp(argv[i], "--budget") == 0 ||
             strcmp(argv[i], "--subjects") == 0 || strcmp(argv[i], "--sessions") == 0)) {
            i++;
            known = 1;
        }
        if (!known) return bn_fail("zmq: unknown argument '%s'", argv[i]);
    }
    zopts zo;
    memset(&zo, 0, sizeof zo);
    zo.pin = bn_flag(argc, argv, "--pin");
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    zo.ncpu = ncpu < 1 ? 1 : ncpu > 1024 ? 1024 : (int)ncpu;
    if (bn_flag(argc, argv, "--shared-ctx")) {
        if (zo.pin) return bn_fail("zmq: --pin and --shared-ctx exclude each other");
        zo.shared = zmq_ctx_new();
        if (!zo.shared) return bn_fail("zmq_ctx_new: %s", zmq_strerror(errno));
    }
    if (zo.pin) pin_self(0); /* the sender (this thread) */

    const char *sess = bn_opt(argc, argv, "--sessions", NULL);
    int sessions = sess ? atoi(sess) : x->reps;
    if (sessions < 1 || sessions > x->reps)
        return bn_fail("zmq: --sessions must be 1..reps (%d)", x->reps);
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < nsizes; k++)
        rc = run_size(x, on, (size_t)sizes[k], budget, sessions, &zo);
    if (zo.shared) zmq_ctx_term(zo.shared);
    return rc;
}
