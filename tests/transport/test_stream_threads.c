/* Streams and threads (docs/architecture.md, "Threads"), with real threads
 * and fixed message counts, run under ThreadSanitizer by `make test-tsan`:
 * - 8 sender threads and 8 receiver threads, one stream each, opened in
 *   their threads, over ipc:// (a context each) and inproc:// (one shared
 *   context): every container is freed as soon as it is sent;
 * - a container sent zero-copy over TCP and freed at once, 2000 times,
 *   while libzmq's I/O thread still holds its lent frames (the hold count);
 * - one container shared by 4 sender threads at once, each on its stream.
 * Receivers check every byte. Threads never call cmocka's asserts; every
 * receive is bounded by a timeout, so a lost message fails instead of
 * hanging. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "core/internal.h"
#include "tensio.h"

#define PAIRS 8
#define PAIR_MSGS 400    /* per pair: 3200 messages */
#define HELD_SENDS 2000
#define SHARED_SENDERS 4
#define SHARED_MSGS 500  /* per sender */
/* Every receive gives up after this long (a failure, not a measurement). */
#define RECV_TIMEOUT_MS 60000

typedef struct side {
    pthread_t th;
    struct conn *l;
    unsigned long done;
    unsigned long failures;
    char first[400];
} side;

/* A sender and a receiver thread, each with its own stream. */
typedef struct conn {
    int id;
    char ep[300];
    void *ctx;                 /* shared inproc context, or NULL */
    tio_stream *bound_rx;      /* a receiver's stream bound by the test, or NULL */
    int msgs;
    size_t elems;              /* message size (make_message's base) */
    int nformats;              /* framings used in turn: zio, tenbin (, btf) */
    const tio_container *same; /* send this container (shared) instead of fresh ones */
    atomic_int bound;          /* the receiver has bound */
    atomic_ulong held;         /* containers libzmq still held when freed */
    side tx, rx;
} conn;

static void note(side *s, const char *fmt, ...) TIO_PRINTF(2, 3);
static void note(side *s, const char *fmt, ...) {
    if (s->failures++) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->first, sizeof s->first, fmt, ap);
    va_end(ap);
}

/* ----------------------------------------------------------- contents */

/* Element k of message i of conn id. */
static float value_at(int id, int i, size_t k) {
    return (float)id * 1000.0f + (float)(i % 997) + (float)(k % 4093) * 0.25f;
}

static size_t elems_of(int i, size_t base) { return base + (size_t)(i % 7) * 128; }

/* Message i: a float32 tensor of elems_of(i) elements (lent to libzmq) and
 * 16 int8 (copied into a frame). */
static tio_container *make_message(int id, int i, size_t base) {
    size_t n = elems_of(i, base);
    float *v = malloc(n * sizeof *v);
    if (!v) return NULL;
    for (size_t k = 0; k < n; k++) v[k] = value_at(id, i, k);
    int8_t small[16];
    for (int k = 0; k < 16; k++) small[k] = (int8_t)(i + k);
    tio_container *c = tio_container_new();
    const int64_t s1[1] = {(int64_t)n}, s2[1] = {16};
    tio_tensor_desc d1 = {"v", TIO_FLOAT32, 1, s1, TIO_LAYOUT_DENSE, v, n * sizeof *v, 0, NULL};
    tio_tensor_desc d2 = {"s", TIO_INT8, 1, s2, TIO_LAYOUT_DENSE, small, 16, 0, NULL};
    tio_error err;
    if (!c || tio_container_add(c, &d1, 0, NULL, &err) != TIO_OK ||
        tio_container_add(c, &d2, 0, NULL, &err) != TIO_OK) {
        tio_container_free(c);
        c = NULL;
    }
    free(v);
    return c;
}

/* Whether c is message i of conn id, byte for byte. */
static int check_message(const tio_container *c, int id, int i, size_t base, char *why,
                         size_t cap) {
    size_t n = elems_of(i, base);
    const tio_tensor *t = tio_container_tensor(c, 0), *s = tio_container_tensor(c, 1);
    if (tio_container_count(c) != 2 || tio_tensor_dtype(t) != TIO_FLOAT32 ||
        tio_tensor_numel(t) != n || tio_tensor_dtype(s) != TIO_INT8 || tio_tensor_numel(s) != 16) {
        snprintf(why, cap, "message %d: other tensors (%zu)", i, tio_container_count(c));
        return 0;
    }
    const uint8_t *p = tio_tensor_data(t);
    for (size_t k = 0; k < n; k++) {
        float want = value_at(id, i, k), got;
        memcpy(&got, p + k * 4, 4); /* frames may be unaligned */
        if (got != want) {
            snprintf(why, cap, "message %d: element %zu is %g, expected %g", i, k, got, want);
            return 0;
        }
    }
    const int8_t *q = tio_tensor_data(s);
    for (int k = 0; k < 16; k++)
        if (q[k] != (int8_t)(i + k)) {
            snprintf(why, cap, "message %d: small element %d differs", i, k);
            return 0;
        }
    return 1;
}

static const char *const formats[3] = {"zio", "tenbin", "btf"};

/* ------------------------------------------------------------- threads */

static tio_stream_options stream_opts(const conn *l, tio_socket_type type, unsigned flags) {
    tio_stream_options o;
    memset(&o, 0, sizeof o);
    o.socket = type;
    o.flags = flags;
    o.timeout_ms = RECV_TIMEOUT_MS;
    o.zmq_context = l->ctx;
    return o;
}

#define BASE_ELEMS 1024 /* 4 KiB and more: lent, not copied */
/* The container test_one_container_many_senders shares: message 3 of conn 7. */
#define SHARED_ID 7
#define SHARED_I 3
#define SHARED_ELEMS (16u << 10)

static void *sender_main(void *arg) {
    side *me = arg;
    conn *l = me->l;
    while (!atomic_load(&l->bound)) sched_yield(); /* inproc needs the bind first */
    tio_stream_options o = stream_opts(l, TIO_SOCKET_PUSH, TIO_STREAM_CONNECT);
    tio_stream *s = NULL;
    tio_error err;
    if (tio_stream_open(l->ep, &o, &s, &err) != TIO_OK) {
        note(me, "open %s: %s", l->ep, err.message);
        return NULL;
    }
    for (int i = 0; i < l->msgs; i++) {
        tio_save_options so = {.format = formats[i % l->nformats], .flags = TIO_SAVE_DROP_NAMES};
        tio_container *c = l->same ? NULL : make_message(l->id, i, l->elems);
        int rc = l->same || c ? tio_stream_send(s, l->same ? l->same : c, &so, &err) : -1;
        if (rc != TIO_OK) {
            note(me, "send %d: %s", i, rc < 0 ? "out of memory" : err.message);
            tio_container_free(c);
            break;
        }
        /* libzmq's I/O thread may still be writing the lent data: then it
         * holds the container, and its free callback releases it */
        if (c && atomic_load(&c->refs) > 1) atomic_fetch_add(&l->held, 1);
        tio_container_free(c); /* at once */
        me->done++;
    }
    /* waits (as long as it takes) until libzmq has written every message;
     * anything it dropped would be an error here */
    if (tio_stream_close(s, &err) != TIO_OK) note(me, "close: %s", err.message);
    return NULL;
}

static void *receiver_main(void *arg) {
    side *me = arg;
    conn *l = me->l;
    tio_stream_options o = stream_opts(l, TIO_SOCKET_PULL, TIO_STREAM_BIND);
    tio_stream *s = l->bound_rx;
    tio_error err;
    int rc = s ? TIO_OK : tio_stream_open(l->ep, &o, &s, &err);
    atomic_store(&l->bound, 1);
    if (rc != TIO_OK) {
        note(me, "open %s: %s", l->ep, err.message);
        return NULL;
    }
    for (int i = 0; i < l->msgs; i++) {
        tio_container *c = NULL;
        if (tio_stream_recv(s, &c, &err) != TIO_OK) {
            note(me, "recv %d: %s", i, err.message);
            break;
        }
        char why[300];
        if (l->same ? !check_message(c, SHARED_ID, SHARED_I, SHARED_ELEMS, why, sizeof why)
                    : !check_message(c, l->id, i, l->elems, why, sizeof why))
            note(me, "%s: %s", l->ep, why);
        tio_container_free(c);
        me->done++;
    }
    if (s != l->bound_rx) tio_stream_close(s, NULL); /* after the containers received */
    return NULL;
}

static void run_links(conn *l, int n) {
    for (int k = 0; k < n; k++) {
        l[k].tx.l = l[k].rx.l = &l[k];
        assert_int_equal(pthread_create(&l[k].rx.th, NULL, receiver_main, &l[k].rx), 0);
        assert_int_equal(pthread_create(&l[k].tx.th, NULL, sender_main, &l[k].tx), 0);
    }
    for (int k = 0; k < n; k++) {
        pthread_join(l[k].tx.th, NULL);
        pthread_join(l[k].rx.th, NULL);
    }
    for (int k = 0; k < n; k++) {
        side *sides[2] = {&l[k].tx, &l[k].rx};
        for (int j = 0; j < 2; j++) {
            if (sides[j]->failures)
                fail_msg("%s %s: %lu failures, first: %s", l[k].ep, j ? "receiver" : "sender",
                         sides[j]->failures, sides[j]->first);
            assert_int_equal(sides[j]->done, (unsigned long)l[k].msgs);
        }
    }
}

static conn *new_links(int n) {
    conn *l = calloc((size_t)n, sizeof *l);
    assert_non_null(l);
    for (int k = 0; k < n; k++) {
        l[k].id = k;
        l[k].elems = BASE_ELEMS;
        l[k].nformats = 3;
        atomic_init(&l[k].bound, 0);
        atomic_init(&l[k].held, 0);
    }
    return l;
}

/* 8 pairs of threads, a stream each: 4 over ipc:// (each stream with its own
 * libzmq context), 4 over inproc:// in one shared context, 400 messages a
 * pair in three framings; each container freed as soon as it is sent. */
static void test_stream_per_thread(void **state) {
    (void)state;
    char dir[] = "/tmp/tio-stream-threads-XXXXXX";
    assert_non_null(mkdtemp(dir));
    void *ctx = zmq_ctx_new();
    assert_non_null(ctx);
    conn *l = new_links(PAIRS);
    for (int k = 0; k < PAIRS; k++) {
        l[k].msgs = PAIR_MSGS;
        if (k % 2) {
            snprintf(l[k].ep, sizeof l[k].ep, "inproc://tio-threads-%d", k);
            l[k].ctx = ctx;
        } else {
            snprintf(l[k].ep, sizeof l[k].ep, "ipc://%s/s%d", dir, k);
        }
    }
    run_links(l, PAIRS);
    unsigned long held = 0;
    for (int k = 0; k < PAIRS; k++) held += atomic_load(&l[k].held);
    fprintf(stderr, "streams: %d pairs of threads, %d messages, %lu containers still held "
                    "by libzmq when freed\n", PAIRS, PAIRS * PAIR_MSGS, held);
    free(l);
    assert_int_equal(zmq_ctx_term(ctx), 0);
    for (int k = 0; k < PAIRS; k += 2) {
        char p[400];
        snprintf(p, sizeof p, "%s/s%d", dir, k);
        unlink(p);
    }
    rmdir(dir);
}

/* ------------------------------------------- lent frames and the hold count */

#define HELD_ELEMS (64u << 10) /* 256 KiB: libzmq's I/O thread writes it a while */

/* A sender thread sends 2000 containers of 256 KiB over TCP, lending their
 * data to libzmq, and frees each as soon as tio_stream_send returns; libzmq's
 * I/O thread releases the last hold when it has written the frames. A
 * receiver thread checks every byte. */
static void test_free_while_io_thread_holds(void **state) {
    (void)state;
    conn *l = new_links(1);
    l->msgs = HELD_SENDS;
    l->elems = HELD_ELEMS;
    l->nformats = 2;
    tio_stream_options o = stream_opts(l, TIO_SOCKET_PULL, TIO_STREAM_BIND);
    tio_error err;
    assert_int_equal(tio_stream_open("tcp://127.0.0.1:*", &o, &l->bound_rx, &err), TIO_OK);
    snprintf(l->ep, sizeof l->ep, "%s", tio_stream_endpoint(l->bound_rx));
    run_links(l, 1);
    tio_stream_close(l->bound_rx, NULL);
    fprintf(stderr, "held: %d containers of 256 KiB sent and freed at once; libzmq still "
                    "held %lu of them\n", HELD_SENDS, atomic_load(&l->held));
    free(l);
}

/* ------------------------------------------------ one container, 4 senders */

/* One container, shared read-only by 4 sender threads that send it at once
 * on their own streams (ipc://), 500 times each: its hold count goes up and
 * down from 4 application threads and 4 libzmq I/O threads. Once the
 * senders' streams are closed (their contexts terminated: every frame
 * released), only the test's own hold is left. */
static void test_one_container_many_senders(void **state) {
    (void)state;
    char dir[] = "/tmp/tio-stream-shared-XXXXXX";
    assert_non_null(mkdtemp(dir));
    tio_container *c = make_message(SHARED_ID, SHARED_I, SHARED_ELEMS); /* 64 KiB + */
    assert_non_null(c);
    conn *l = new_links(SHARED_SENDERS);
    for (int k = 0; k < SHARED_SENDERS; k++) {
        l[k].msgs = SHARED_MSGS;
        l[k].same = c;
        snprintf(l[k].ep, sizeof l[k].ep, "ipc://%s/s%d", dir, k);
    }
    run_links(l, SHARED_SENDERS);
    assert_int_equal(atomic_load(&c->refs), 1);
    tio_container_free(c);
    free(l);
    for (int k = 0; k < SHARED_SENDERS; k++) {
        char p[400];
        snprintf(p, sizeof p, "%s/s%d", dir, k);
        unlink(p);
    }
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_per_thread),
        cmocka_unit_test(test_free_while_io_thread_holds),
        cmocka_unit_test(test_one_container_many_senders),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
