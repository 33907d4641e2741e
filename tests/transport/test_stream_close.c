/* Closing a stream loses nothing silently (include/tensio.h,
 * tio_stream_close): a sender that sends and closes while its receiver has
 * not started reading waits, by default, until every message is written,
 * and the receiver gets them all; a bounded linger that runs out, or a
 * linger < 0, drops what libzmq still queues and says how many; flush waits
 * without dropping. Over tcp:// and ipc://, small (copied) and large (lent)
 * messages. Every receive is bounded by a time limit far above what the
 * machine needs, named when it fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "stream_util.h"
#include "tensio.h"

/* A receive waits at most this long: far above what any message here needs
 * (the failure message says so). */
#define LIMIT_MS 60000
/* How long the receiver waits before it starts reading. */
#define HOLD_MS 500

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* Message i: `elems` float32, element 0 = i, the rest i + k. */
static tio_container *message(uint32_t i, size_t elems) {
    float *data = malloc(elems * sizeof *data);
    assert_non_null(data);
    for (size_t k = 0; k < elems; k++) data[k] = (float)i + (float)(k % 7);
    int64_t shape[1] = {(int64_t)elems};
    tio_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = TIO_FLOAT32;
    d.rank = 1;
    d.shape = shape;
    d.data = data;
    d.nbytes = elems * sizeof *data;
    tio_container *c = tio_container_new();
    assert_non_null(c);
    tio_error err;
    if (tio_container_add(c, &d, 0, NULL, &err) != TIO_OK) fail_msg("add: %s", err.message);
    free(data);
    return c;
}

/* The index of a received message, or -1 when its bytes are not message()'s. */
static long index_of(const tio_container *c, size_t elems) {
    if (tio_container_count(c) != 1) return -1;
    const tio_tensor *t = tio_container_tensor(c, 0);
    const void *p = tio_tensor_data(t);
    if (tio_tensor_numel(t) != elems || !p) return -1;
    float f0;
    memcpy(&f0, p, sizeof f0);
    for (size_t k = 0; k < elems; k++) {
        float v;
        memcpy(&v, (const uint8_t *)p + k * sizeof v, sizeof v);
        if (v != f0 + (float)(k % 7)) return -1;
    }
    return (long)f0;
}

/* A PULL bound on `ep` (tcp://127.0.0.1:* or an ipc:// path) that queues at
 * most `hwm` messages of its own, so the sender's side holds the rest. */
static tio_stream *receiver_hwm(const char *ep, int hwm) {
    tio_stream_options o;
    memset(&o, 0, sizeof o);
    o.socket = TIO_SOCKET_PULL;
    o.flags = TIO_STREAM_BIND;
    o.hwm = hwm;
    o.timeout_ms = LIMIT_MS;
    return xopen(ep, &o);
}

static tio_stream *receiver(const char *ep) { return receiver_hwm(ep, 2); }

/* ------------------------------------------------------- the sender thread */

typedef struct sender {
    char ep[256];
    int linger_ms;
    uint32_t count;
    size_t elems;
    pthread_t th;
    /* results, read after the join */
    int send_rc, close_rc;
    uint32_t sent;
    int64_t close_ms;
    char message[TIO_ERROR_MESSAGE_MAX];
} sender;

static void *sender_main(void *arg) {
    sender *sd = arg;
    tio_stream_options o;
    memset(&o, 0, sizeof o);
    o.socket = TIO_SOCKET_PUSH;
    o.linger_ms = sd->linger_ms;
    o.hwm = (int)sd->count + 16; /* every send returns at once */
    o.timeout_ms = LIMIT_MS;
    tio_stream *s = NULL;
    tio_error err;
    tio_error_clear(&err);
    sd->send_rc = tio_stream_open(sd->ep, &o, &s, &err);
    for (uint32_t i = 0; sd->send_rc == TIO_OK && i < sd->count; i++) {
        tio_container *c = message(i, sd->elems);
        sd->send_rc = tio_stream_send(s, c, NULL, &err);
        tio_container_free(c); /* at once: lent frames hold what they need */
        if (sd->send_rc == TIO_OK) sd->sent++;
    }
    if (sd->send_rc != TIO_OK) snprintf(sd->message, sizeof sd->message, "%s", err.message);
    int64_t t0 = now_ms();
    tio_error_clear(&err);
    sd->close_rc = tio_stream_close(s, &err);
    sd->close_ms = now_ms() - t0;
    if (sd->close_rc != TIO_OK) snprintf(sd->message, sizeof sd->message, "%s", err.message);
    return NULL;
}

static void start(sender *sd, const char *ep, int linger_ms, uint32_t count, size_t elems) {
    memset(sd, 0, sizeof *sd);
    snprintf(sd->ep, sizeof sd->ep, "%s", ep);
    sd->linger_ms = linger_ms;
    sd->count = count;
    sd->elems = elems;
    assert_int_equal(pthread_create(&sd->th, NULL, sender_main, sd), 0);
}

/* Receives until `want` messages or a receive times out after `limit_ms`;
 * every message must be the next index in order (one PUSH, one PULL).
 * Returns how many arrived. */
static uint32_t drain(tio_stream *rx, uint32_t want, size_t elems, int limit_ms) {
    tio_error err;
    assert_int_equal(tio_stream_set_timeout(rx, limit_ms, &err), TIO_OK);
    uint32_t got = 0;
    while (got < want) {
        tio_container *c = NULL;
        int rc = tio_stream_recv(rx, &c, &err);
        if (rc == TIO_E_TIMEOUT) break;
        if (rc != TIO_OK) fail_msg("recv %u: %s", got, err.message);
        long i = index_of(c, elems);
        tio_container_free(c);
        if (i != (long)got) fail_msg("message %u: got index %ld", got, i);
        got++;
    }
    return got;
}

static void ipc_path(char *out, size_t cap, const char *what) {
    snprintf(out, cap, "ipc:///tmp/tio-close-%ld-%s", (long)getpid(), what);
}

/* ------------------------------------------------------------------ tests */

/* The sender sends everything and closes before the receiver reads a
 * message; close (default linger: as long as it takes) returns when libzmq
 * has written the last one, and every message arrives, in order. */
static void close_waits(const char *bind_ep, int hwm, uint32_t count, size_t elems) {
    tio_stream *rx = receiver_hwm(bind_ep, hwm);
    sender sd;
    start(&sd, tio_stream_endpoint(rx), 0, count, elems);
    sleep_ms(HOLD_MS); /* the receiver has not started: the sender is closing */
    int64_t t0 = now_ms();
    uint32_t got = drain(rx, count, elems, LIMIT_MS);
    pthread_join(sd.th, NULL);
    if (got != count)
        fail_msg("%s: %u of %u messages arrived (a receive waited %d ms, far longer than "
                 "needed); sender: %s",
                 bind_ep, got, count, LIMIT_MS, sd.message);
    if (sd.send_rc != TIO_OK || sd.close_rc != TIO_OK)
        fail_msg("%s: sender: %s", bind_ep, sd.message);
    assert_int_equal(sd.sent, count);
    /* close waited for the receiver (which started HOLD_MS after the sends) */
    fprintf(stderr, "%s: %u x %zu B: close took %lld ms, the receive %lld ms\n", bind_ep,
            count, elems * 4, (long long)sd.close_ms, (long long)(now_ms() - t0));
    tio_stream_close(rx, NULL);
}

static void test_close_waits_tcp_large(void **state) {
    (void)state;
    close_waits("tcp://127.0.0.1:*", 2, 500, 16384); /* 32 MiB, lent */
}

static void test_close_waits_tcp_small(void **state) {
    (void)state;
    close_waits("tcp://127.0.0.1:*", 2, 25000, 200); /* 20 MB in 800-byte copies */
}

/* Over ipc:// the receiver may not be at its high-water mark when the
 * sender's close ends the connection: libzmq 4.3 (to this day) then stops
 * the receiving connection at the hang-up and drops what the kernel still
 * holds for it, after the sender had written it (docs/streaming.md,
 * "Closing"). So here the receiver has room for every message: what the
 * sender's close guarantees is still tested, a receiver that starts late. */
static void test_close_waits_ipc(void **state) {
    (void)state;
    char ep[128];
    ipc_path(ep, sizeof ep, "wait");
    close_waits(ep, 416, 400, 16384);
    close_waits(ep, 20016, 20000, 200);
}

/* "close dropped K of the N messages sent": K */
static uint32_t dropped_count(const char *msg, uint32_t sent) {
    const char *p = strstr(msg, "close dropped ");
    if (!p) fail_msg("no count in '%s'", msg);
    unsigned k = 0, n = 0;
    if (sscanf(p, "close dropped %u of the %u messages sent", &k, &n) != 2)
        fail_msg("no count in '%s'", msg);
    assert_int_equal(n, sent);
    return k;
}

/* A bounded linger that runs out while the receiver does not read: close
 * reports how many it dropped, and everything else arrives. */
static void linger_reports(int linger_ms, const char *how) {
    const uint32_t count = 500;
    const size_t elems = 16384; /* 32 MiB: more than the kernel's buffers */
    tio_stream *rx = receiver("tcp://127.0.0.1:*");
    sender sd;
    start(&sd, tio_stream_endpoint(rx), linger_ms, count, elems);
    pthread_join(sd.th, NULL); /* the receiver has not read a message */
    assert_int_equal(sd.send_rc, TIO_OK);
    assert_int_equal(sd.sent, count);
    if (sd.close_rc != TIO_E_TIMEOUT) fail_msg("close: %d (%s)", sd.close_rc, sd.message);
    assert_non_null(strstr(sd.message, how));
    uint32_t k = dropped_count(sd.message, count);
    assert_true(k >= 1 && k <= count);
    if (linger_ms > 0) assert_true(sd.close_ms >= linger_ms - 50);
    /* what libzmq had written arrives; the ones at the edge may or may not:
     * one it wrote but had not let go of, and one its I/O thread wrote
     * before the close reached it, both counted dropped (seen together:
     * dropped 458, received 44 of 500); or one it let go of whose bytes
     * were still in its buffer, counted written (the message says so) */
    assert_non_null(strstr(sd.message, "give or take the last ones libzmq was writing"));
    uint32_t got = drain(rx, count, elems, 2000);
    fprintf(stderr, "linger %d: dropped %u, received %u of %u\n", linger_ms, k, got, count);
    assert_true(got + k + 1 >= count && got + k <= count + 2);
    tio_stream_close(rx, NULL);
}

static void test_bounded_linger_reports(void **state) {
    (void)state;
    linger_reports(300, "when the linger time ran out");
}

static void test_negative_linger_reports(void **state) {
    (void)state;
    linger_reports(-1, "at once (linger < 0)");
}

/* flush waits without dropping: it times out (naming what is queued) while
 * the receiver does not read, and succeeds once it has read everything. */
static void test_flush(void **state) {
    (void)state;
    const uint32_t count = 300;
    const size_t elems = 16384;
    tio_stream *rx = receiver("tcp://127.0.0.1:*");
    tio_stream_options o;
    memset(&o, 0, sizeof o);
    o.socket = TIO_SOCKET_PUSH;
    o.hwm = (int)count + 16;
    tio_stream *tx = xopen(tio_stream_endpoint(rx), &o);
    tio_error err;
    for (uint32_t i = 0; i < count; i++) {
        tio_container *c = message(i, elems);
        if (tio_stream_send(tx, c, NULL, &err) != TIO_OK) fail_msg("send: %s", err.message);
        tio_container_free(c);
    }
    assert_int_equal(tio_stream_flush(tx, 200, &err), TIO_E_TIMEOUT);
    assert_non_null(strstr(err.message, "still queued after 200 ms"));
    tio_stream_stats st;
    tio_stream_get_stats(tx, &st);
    assert_true(st.queued > 0 && st.queued <= count);
    assert_int_equal(st.sent, count);
    /* nothing was dropped: the receiver gets all of them */
    assert_int_equal(drain(rx, count, elems, LIMIT_MS), count);
    assert_int_equal(tio_stream_flush(tx, 0, &err), TIO_OK);
    tio_stream_get_stats(tx, &st);
    assert_int_equal(st.queued, 0);
    assert_int_equal(tio_stream_close(tx, &err), TIO_OK);
    assert_int_equal(tio_stream_flush(rx, 10, &err), TIO_OK); /* a receiver queues nothing */
    assert_int_equal(tio_stream_flush(NULL, 0, &err), TIO_E_ARGUMENT);
    assert_int_equal(tio_stream_set_linger(NULL, 0, &err), TIO_E_ARGUMENT);
    assert_int_equal(tio_stream_close(rx, &err), TIO_OK);
    assert_int_equal(tio_stream_close(NULL, &err), TIO_OK);
}

/* inproc://: a message sent is in the peer's queue, and stays readable after
 * the sender closes (close has nothing to wait for); a sending stream cannot
 * mix inproc:// with other transports. */
static void test_inproc(void **state) {
    (void)state;
    void *ctx = zmq_ctx_new(); /* inproc:// needs one context for both */
    assert_non_null(ctx);
    tio_stream_options o;
    memset(&o, 0, sizeof o);
    o.socket = TIO_SOCKET_PULL;
    o.flags = TIO_STREAM_BIND;
    o.timeout_ms = LIMIT_MS;
    o.zmq_context = ctx;
    tio_stream *rx = xopen("inproc://close-test", &o);
    o.socket = TIO_SOCKET_PUSH;
    o.flags = 0;
    tio_stream *tx = xopen("inproc://close-test", &o);
    tio_error err;
    for (uint32_t i = 0; i < 50; i++) {
        tio_container *c = message(i, 16384);
        if (tio_stream_send(tx, c, NULL, &err) != TIO_OK) fail_msg("send: %s", err.message);
        tio_container_free(c);
    }
    tio_stream_stats st;
    tio_stream_get_stats(tx, &st);
    assert_int_equal(st.queued, 0);
    assert_int_equal(tio_stream_close(tx, &err), TIO_OK);
    assert_int_equal(drain(rx, 50, 16384, LIMIT_MS), 50);
    assert_int_equal(tio_stream_close(rx, &err), TIO_OK);
    assert_int_equal(zmq_ctx_term(ctx), 0);
}

static void test_inproc_mix_refused(void **state) {
    (void)state;
    tio_stream_options o;
    memset(&o, 0, sizeof o);
    o.socket = TIO_SOCKET_PUSH;
    tio_stream *s = NULL;
    tio_error err;
    assert_int_equal(tio_stream_open("{inproc://a,tcp://127.0.0.1:1}", &o, &s, &err),
                     TIO_E_ARGUMENT);
    assert_null(s);
    assert_non_null(strstr(err.message, "cannot mix inproc://"));
    /* a receiver may */
    o.socket = TIO_SOCKET_PULL;
    s = xopen("{inproc://a,tcp://127.0.0.1:1}", &o);
    assert_int_equal(tio_stream_close(s, &err), TIO_OK);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_close_waits_tcp_large),
        cmocka_unit_test(test_close_waits_tcp_small),
        cmocka_unit_test(test_close_waits_ipc),
        cmocka_unit_test(test_bounded_linger_reports),
        cmocka_unit_test(test_negative_linger_reports),
        cmocka_unit_test(test_flush),
        cmocka_unit_test(test_inproc),
        cmocka_unit_test(test_inproc_mix_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
