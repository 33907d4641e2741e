/* Streams over ZeroMQ: every socket pair × every framing over loopback TCP,
 * golden wire frames, zero copy over inproc, malformed messages, timeouts,
 * statistics. Every receive is bounded by a timeout. URLs, roles and the
 * protocol's options are test_stream_urls.c. */

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "stream_util.h"
#include "transport/transport.h"
#include "tvec.h"

/* --------------------------------------------------------------- raw zmq */

typedef struct raw_frame {
    uint8_t *p;
    size_t n;
} raw_frame;

/* Receives one whole message on a plain socket (copying the frames). */
static size_t raw_recv(void *sock, raw_frame *out, size_t cap) {
    size_t k = 0;
    int more = 1;
    while (more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        int r = zmq_msg_recv(&m, sock, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            fprintf(stderr, "raw recv: %s\n", zmq_strerror(errno));
            fail();
        }
        assert_true(k < cap);
        out[k].n = zmq_msg_size(&m);
        out[k].p = malloc(out[k].n ? out[k].n : 1);
        memcpy(out[k].p, zmq_msg_data(&m), out[k].n);
        k++;
        more = zmq_msg_more(&m);
        zmq_msg_close(&m);
    }
    return k;
}

static void raw_free(raw_frame *f, size_t n) {
    for (size_t i = 0; i < n; i++) free(f[i].p);
}

/* Sends parts as one message on a plain socket. */
static void raw_send(void *sock, const tio_part *parts, size_t n) {
    for (size_t i = 0; i < n; i++) {
        int r;
        do {
            r = zmq_send(sock, parts[i].data, parts[i].size, i + 1 < n ? ZMQ_SNDMORE : 0);
        } while (r < 0 && errno == EINTR);
        if (r < 0) {
            fprintf(stderr, "raw send: %s\n", zmq_strerror(errno));
            fail();
        }
    }
}

static void *raw_socket(void *ctx, int type, const char *ep, int bind) {
    void *s = zmq_socket(ctx, type);
    assert_non_null(s);
    int v = TMO;
    assert_int_equal(zmq_setsockopt(s, ZMQ_RCVTIMEO, &v, sizeof v), 0);
    assert_int_equal(zmq_setsockopt(s, ZMQ_SNDTIMEO, &v, sizeof v), 0);
    v = 0;
    assert_int_equal(zmq_setsockopt(s, ZMQ_LINGER, &v, sizeof v), 0);
    assert_int_equal(bind ? zmq_bind(s, ep) : zmq_connect(s, ep), 0);
    return s;
}

static char *raw_endpoint(void *sock) {
    char buf[256];
    size_t len = sizeof buf;
    assert_int_equal(zmq_getsockopt(sock, ZMQ_LAST_ENDPOINT, buf, &len), 0);
    return strdup(buf);
}

/* ------------------------------------------------- every pair × framing */

typedef struct framing {
    const char *src;     /* vector sent */
    const char *format;  /* tio_save_options.format */
    unsigned flags;      /* sender's TIO_STREAM_* */
    const char *proto;   /* expected "proto" property */
} framing;

static const framing FR_zio = {"zio/tens_f32_3d.zmsg", "zio", 0, "zio"};
static const framing FR_zio_single = {"zio/tens_f32_3d.zmsg", "zio", TIO_STREAM_SINGLE, "zio"};
static const framing FR_tensorcom = {"zio/tensorcom/tb_infos_f16_u8_i64.ten", "tenbin", 0,
                                     "tensorcom"};
static const framing FR_tensorcom_single = {"zio/tensorcom/tb_infos_f16_u8_i64.ten", "tenbin",
                                            TIO_STREAM_SINGLE, "tenbin"};
static const framing FR_btf = {"btf/cpp_test_BTFWriteAndRead.btf", "btf", 0, "btf"};

typedef enum { K_PUSH_PULL, K_PUB_SUB, K_DEALER_ROUTER, K_ROUTER_DEALER, K_PAIR } pair_kind;

/* Receives on rx and checks it against src, the property set and (on a
 * ROUTER) the peer. */
static void check_received(tio_stream *rx, const tio_container *src, const framing *fr,
                           const char *peer_hex) {
    tio_container *got = xrecv(rx);
    assert_same_tensors(src, got);
    assert_prop(got, "proto", fr->proto);
    /* frames/bytes: what the same encoding gives locally */
    tio_save_options so = {.format = fr->format, .flags = (fr->flags & TIO_STREAM_SINGLE) ? TIO_SAVE_SINGLE_PART : 0};
    tio_message *m = NULL;
    tio_error err;
    ASSERT_OK(tio_message_encode(src, &so, &m, &err), err, "encode");
    char buf[32];
    snprintf(buf, sizeof buf, "%zu", tio_message_part_count(m));
    assert_prop(got, "frames", buf);
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)tio_message_size(m));
    assert_prop(got, "bytes", buf);
    tio_message_free(m);
    if (peer_hex) assert_prop(got, "peer", peer_hex);
    else assert_null(tio_container_prop_get(got, "peer"));
    tio_container_free(got);
}

static void run_case(pair_kind k, const framing *fr) {
    tio_container *src = open_vec(fr->src);
    tio_save_options so = {.format = fr->format};
    tio_stream *b = NULL, *c = NULL;
    tio_error err;
    switch (k) {
    case K_PUSH_PULL: {
        tio_stream_options bo = sopts(TIO_SOCKET_PULL, 0), co = sopts(TIO_SOCKET_PUSH, fr->flags);
        tcp_pair(&bo, &co, &b, &c);
        xsend(c, src, &so);
        check_received(b, src, fr, NULL);
        break;
    }
    case K_PUB_SUB: {
        tio_stream_options bo = sopts(TIO_SOCKET_PUB, fr->flags), co = sopts(TIO_SOCKET_SUB, 0);
        tcp_pair(&bo, &co, &b, &c);
        ASSERT_OK(tio_stream_wait_subscribers(b, 1, TMO, &err), err, "wait_subscribers");
        xsend(b, src, &so);
        check_received(c, src, fr, NULL);
        break;
    }
    case K_DEALER_ROUTER:
    case K_ROUTER_DEALER: {
        tio_stream_options bo = sopts(TIO_SOCKET_ROUTER, fr->flags);
        tio_stream_options co = sopts(TIO_SOCKET_DEALER, fr->flags);
        co.identity = "dealer-7";
        tcp_pair(&bo, &co, &b, &c);
        xsend(c, src, &so);
        check_received(b, src, fr, "6465616c65722d37");
        if (k == K_ROUTER_DEALER) {
            xsend(b, src, &so); /* to the last peer received from */
            check_received(c, src, fr, NULL);
        }
        break;
    }
    case K_PAIR: {
        tio_stream_options bo = sopts(TIO_SOCKET_PAIR, fr->flags), co = sopts(TIO_SOCKET_PAIR, fr->flags);
        tcp_pair(&bo, &co, &b, &c);
        xsend(c, src, &so);
        check_received(b, src, fr, NULL);
        xsend(b, src, &so);
        check_received(c, src, fr, NULL);
        break;
    }
    }
    /* one message each way at most: both sides' counters agree */
    tio_stream_stats sb, sc;
    tio_stream_get_stats(b, &sb);
    tio_stream_get_stats(c, &sc);
    assert_int_equal(sb.sent, sc.received);
    assert_int_equal(sc.sent, sb.received);
    assert_int_equal(sb.bytes_sent, sc.bytes_received);
    assert_int_equal(sc.bytes_sent, sb.bytes_received);
    assert_int_equal(sb.sent + sc.sent, k == K_PAIR || k == K_ROUTER_DEALER ? 2 : 1);
    assert_int_equal(sb.malformed + sc.malformed, 0);
    tio_stream_close(c, NULL);
    tio_stream_close(b, NULL);
    tio_container_free(src);
}

#define CASE(k, fr)                                                                       \
    static void test_##k##__##fr(void **state) {                                          \
        (void)state;                                                                      \
        run_case(k, &FR_##fr);                                                            \
    }
#define CASES(k) CASE(k, zio) CASE(k, zio_single) CASE(k, tensorcom) CASE(k, tensorcom_single) CASE(k, btf)
CASES(K_PUSH_PULL)
CASES(K_PUB_SUB)
CASES(K_DEALER_ROUTER)
CASES(K_ROUTER_DEALER)
CASES(K_PAIR)
#define CASE_ENTRIES(k)                                                                   \
    cmocka_unit_test(test_##k##__zio), cmocka_unit_test(test_##k##__zio_single),          \
        cmocka_unit_test(test_##k##__tensorcom),                                          \
        cmocka_unit_test(test_##k##__tensorcom_single), cmocka_unit_test(test_##k##__btf)

/* --------------------------------------------------------- golden frames */

/* A tio PUSH sends each tensorcom vector to a plain PULL: the frames equal
 * the tensorcom reference's (zsend_multipart), the single frame equals the
 * .ten (zsend_single). Then a plain PUSH sends the reference frames to a tio
 * PULL, which decodes them to the manifest's arrays. */
static void test_tensorcom_golden_frames(void **state) {
    (void)state;
    json_t *man = tvec_manifest("zio/tensorcom/manifest.json");
    assert_non_null(man);
    void *ctx = zmq_ctx_new();
    void *pull = raw_socket(ctx, ZMQ_PULL, "tcp://127.0.0.1:*", 1);
    char *pull_ep = raw_endpoint(pull);
    tio_stream_options o = sopts(TIO_SOCKET_PUSH, 0);
    tio_stream *tx = xopen(pull_ep, &o);
    o.flags = TIO_STREAM_SINGLE;
    tio_stream *tx1 = xopen(pull_ep, &o);

    tio_stream_options ro = sopts(TIO_SOCKET_PULL, TIO_STREAM_BIND);
    tio_stream *rx = xopen("tcp://127.0.0.1:*", &ro);
    void *push = raw_socket(ctx, ZMQ_PUSH, tio_stream_endpoint(rx), 0);

    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(man, "batches"), i, b) {
        const char *name = json_string_value(json_object_get(b, "name"));
        char rel[256];
        snprintf(rel, sizeof rel, "zio/tensorcom/%s",
                 json_string_value(json_object_get(json_object_get(b, "single"), "file")));
        tio_container *src = open_vec(rel);
        json_t *frames = json_object_get(b, "frames");
        size_t nf = json_array_size(frames);
        tio_part parts[16];
        uint8_t *bufs[16];
        size_t lens[16];
        assert_int_equal(tvec_load_frames("zio/tensorcom", frames, bufs, lens, 16), nf);
        for (size_t k = 0; k < nf; k++) {
            parts[k].data = bufs[k];
            parts[k].size = lens[k];
        }

        /* tio → plain: multipart */
        tio_save_options so = {.format = "tenbin"};
        xsend(tx, src, &so);
        raw_frame got[32];
        size_t ng = raw_recv(pull, got, 32);
        if (ng != nf) fprintf(stderr, "%s: %zu frames, expected %zu\n", name, ng, nf);
        assert_int_equal(ng, nf);
        for (size_t k = 0; k < nf; k++) {
            assert_int_equal(got[k].n, parts[k].size);
            assert_memory_equal(got[k].p, parts[k].data, parts[k].size);
        }
        raw_free(got, ng);

        /* tio → plain: single frame = the .ten */
        xsend(tx1, src, &so);
        ng = raw_recv(pull, got, 32);
        assert_int_equal(ng, 1);
        size_t tlen = 0;
        snprintf(rel, sizeof rel, "zio/tensorcom/%s",
                 json_string_value(json_object_get(json_object_get(b, "single"), "file")));
        uint8_t *ten = tvec_load(rel, &tlen);
        assert_int_equal(got[0].n, tlen);
        assert_memory_equal(got[0].p, ten, tlen);
        free(ten);
        raw_free(got, ng);

        /* plain → tio */
        raw_send(push, parts, nf);
        tio_container *c = xrecv(rx);
        assert_prop(c, "proto", "tensorcom");
        json_t *arrays = json_object_get(b, "arrays");
        assert_int_equal(tio_container_count(c), json_array_size(arrays));
        for (size_t k = 0; k < json_array_size(arrays); k++) {
            json_t *a = json_array_get(arrays, k);
            const tio_tensor *t = tio_container_tensor(c, k);
            assert_string_equal(tio_dtype_name(tio_tensor_dtype(t)),
                                json_string_value(json_object_get(a, "dtype")));
            json_t *shape = json_object_get(a, "shape");
            assert_int_equal(tio_tensor_rank(t), json_array_size(shape));
            for (size_t d = 0; d < json_array_size(shape); d++)
                assert_int_equal(tio_tensor_shape(t)[d],
                                 json_integer_value(json_array_get(shape, d)));
            char hx[65];
            sha_hex(t, hx);
            assert_string_equal(hx, json_string_value(json_object_get(a, "sha256")));
        }
        assert_same_tensors(src, c);
        tio_container_free(c);
        for (size_t k = 0; k < nf; k++) free(bufs[k]);
        tio_container_free(src);
    }
    tio_stream_close(tx, NULL);
    tio_stream_close(tx1, NULL);
    tio_stream_close(rx, NULL);
    zmq_close(push);
    zmq_close(pull);
    zmq_ctx_term(ctx);
    free(pull_ep);
    json_decref(man);
}

/* The same for ZIO: frames = zio::Message::toparts(), single = the .zmsg. */
static void test_zio_golden_frames(void **state) {
    (void)state;
    json_t *man = tvec_manifest("zio/manifest.json");
    assert_non_null(man);
    void *ctx = zmq_ctx_new();
    void *pull = raw_socket(ctx, ZMQ_PULL, "tcp://127.0.0.1:*", 1);
    char *pull_ep = raw_endpoint(pull);
    tio_stream_options o = sopts(TIO_SOCKET_PUSH, 0);
    tio_stream *tx = xopen(pull_ep, &o);
    o.flags = TIO_STREAM_SINGLE;
    tio_stream *tx1 = xopen(pull_ep, &o);
    tio_stream_options ro = sopts(TIO_SOCKET_PULL, TIO_STREAM_BIND);
    tio_stream *rx = xopen("tcp://127.0.0.1:*", &ro);
    void *push = raw_socket(ctx, ZMQ_PUSH, tio_stream_endpoint(rx), 0);

    size_t i, tested = 0;
    json_t *v;
    json_array_foreach(json_object_get(man, "vectors"), i, v) {
        const char *zfile = json_string_value(json_object_get(json_object_get(v, "encoded"), "file"));
        char rel[256];
        snprintf(rel, sizeof rel, "zio/%s", zfile);
        char *path = tvec_path(rel);
        if (!path) continue; /* only in the shared vectors */
        free(path);
        tio_container *src = open_vec(rel);
        json_t *frames = json_object_get(v, "frames");
        size_t nf = json_array_size(frames);
        tio_part parts[16];
        uint8_t *bufs[16];
        size_t lens[16];
        assert_int_equal(tvec_load_frames("zio", frames, bufs, lens, 16), nf);
        for (size_t k = 0; k < nf; k++) {
            parts[k].data = bufs[k];
            parts[k].size = lens[k];
        }
        tio_save_options so = {.format = "zio"};
        xsend(tx, src, &so);
        raw_frame got[32];
        size_t ng = raw_recv(pull, got, 32);
        assert_int_equal(ng, nf);
        for (size_t k = 0; k < nf; k++) {
            if (got[k].n != parts[k].size || memcmp(got[k].p, parts[k].data, parts[k].size)) {
                fprintf(stderr, "%s: frame %zu differs (%zu bytes, expected %zu)\n", zfile, k,
                        got[k].n, parts[k].size);
                fail();
            }
        }
        raw_free(got, ng);

        xsend(tx1, src, &so);
        ng = raw_recv(pull, got, 32);
        assert_int_equal(ng, 1);
        snprintf(rel, sizeof rel, "zio/%s", zfile);
        size_t zlen = 0;
        uint8_t *zmsg = tvec_load(rel, &zlen);
        assert_int_equal(got[0].n, zlen);
        assert_memory_equal(got[0].p, zmsg, zlen);
        free(zmsg);
        raw_free(got, ng);

        raw_send(push, parts, nf);
        tio_container *c = xrecv(rx);
        assert_prop(c, "proto", "zio");
        json_t *tens = json_object_get(json_object_get(v, "decoded"), "tensors");
        assert_int_equal(tio_container_count(c), json_array_size(tens));
        for (size_t k = 0; k < json_array_size(tens); k++) {
            char hx[65];
            sha_hex(tio_container_tensor(c, k), hx);
            assert_string_equal(hx, json_string_value(json_object_get(json_array_get(tens, k), "sha256")));
        }
        assert_same_tensors(src, c);
        tio_container_free(c);
        for (size_t k = 0; k < nf; k++) free(bufs[k]);
        tio_container_free(src);
        tested++;
    }
    assert_true(tested >= 5);
    tio_stream_close(tx, NULL);
    tio_stream_close(tx1, NULL);
    tio_stream_close(rx, NULL);
    zmq_close(push);
    zmq_close(pull);
    zmq_ctx_term(ctx);
    free(pull_ep);
    json_decref(man);
}

/* ------------------------------------------------------------ zero copy */

/* A float32 tensor of n elements, data copied into the container. */
static tio_container *big_container(size_t n, float seed) {
    float *data = malloc(n * sizeof *data);
    for (size_t i = 0; i < n; i++) data[i] = seed + (float)(i % 1000) * 0.5f;
    tio_container *c = tio_container_new();
    int64_t shape[2] = {(int64_t)(n / 256), 256};
    tio_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = "big";
    d.dtype = TIO_FLOAT32;
    d.rank = 2;
    d.shape = shape;
    d.data = data;
    d.nbytes = n * sizeof *data;
    tio_error err;
    ASSERT_OK(tio_container_add(c, &d, 0, NULL, &err), err, "add");
    free(data);
    return c;
}

static void zero_copy_case(const char *format, unsigned flags, int expect_same) {
    void *ctx = zmq_ctx_new();
    tio_stream_options ro = sopts(TIO_SOCKET_PULL, TIO_STREAM_BIND);
    ro.zmq_context = ctx;
    tio_stream *rx = xopen("inproc://tio-zero-copy", &ro);
    assert_string_equal(tio_stream_endpoint(rx), "inproc://tio-zero-copy");
    tio_stream_options to = sopts(TIO_SOCKET_PUSH, flags);
    to.zmq_context = ctx;
    tio_stream *tx = xopen("inproc://tio-zero-copy", &to);

    tio_container *c = big_container(256 * 1024, 1.0f); /* 1 MiB */
    const void *sent_ptr = tio_tensor_data(tio_container_tensor(c, 0));
    uint8_t want[32];
    sha_of(tio_container_tensor(c, 0), want);
    tio_save_options so = {.format = format};
    xsend(tx, c, &so);
    tio_container_free(c); /* libzmq still holds the lent frame */

    tio_container *got = xrecv(rx);
    const tio_tensor *t = tio_container_tensor(got, 0);
    assert_non_null(t);
    if (expect_same) assert_ptr_equal(tio_tensor_data(t), sent_ptr);
    else assert_ptr_not_equal(tio_tensor_data(t), sent_ptr);
    uint8_t have[32];
    sha_of(t, have);
    assert_memory_equal(have, want, 32);
    tio_stream_close(tx, NULL); /* the received container outlives both streams */
    tio_stream_close(rx, NULL);
    sha_of(t, have);
    assert_memory_equal(have, want, 32);
    tio_container_free(got);
    zmq_ctx_term(ctx);
}

static void test_zero_copy_inproc_tensorcom(void **state) {
    (void)state;
    zero_copy_case("tenbin", 0, 1);
}

static void test_zero_copy_inproc_zio(void **state) {
    (void)state;
    zero_copy_case("zio", 0, 1);
}

static void test_copy_flag_copies(void **state) {
    (void)state;
    zero_copy_case("tenbin", TIO_STREAM_COPY, 0);
}

/* tio_container_on_release: a container borrowing the caller's buffer is
 * sent without a copy; the release function runs once, only when libzmq and
 * every holder are done with the buffer (here: the receiver's container,
 * whose tensor points straight into it over inproc). */
static void count_release(void *ctx) { atomic_fetch_add((atomic_int *)ctx, 1); }

static void test_release_after_lent_send(void **state) {
    (void)state;
    void *ctx = zmq_ctx_new();
    tio_stream_options ro = sopts(TIO_SOCKET_PULL, TIO_STREAM_BIND);
    ro.zmq_context = ctx;
    tio_stream *rx = xopen("inproc://tio-release", &ro);
    tio_stream_options to = sopts(TIO_SOCKET_PUSH, 0);
    to.zmq_context = ctx;
    tio_stream *tx = xopen("inproc://tio-release", &to);

    size_t n = 64 * 1024;
    float *buf = malloc(n * sizeof *buf);
    assert_non_null(buf);
    for (size_t i = 0; i < n; i++) buf[i] = (float)i;
    int64_t shape[1] = {(int64_t)n};
    tio_tensor_desc d = {.name = "x", .dtype = TIO_FLOAT32, .rank = 1, .shape = shape,
                         .data = buf, .nbytes = n * sizeof *buf};
    tio_container *c = tio_container_new();
    tio_error err;
    assert_int_equal(tio_container_add(c, &d, TIO_ADD_BORROW, NULL, &err), TIO_OK);
    atomic_int released;
    atomic_init(&released, 0);
    assert_int_equal(tio_container_on_release(c, count_release, &released, &err), TIO_OK);
    ASSERT_CODE(tio_container_on_release(c, count_release, &released, &err), TIO_E_ARGUMENT,
                err, "a second release function");
    ASSERT_CODE(tio_container_on_release(NULL, count_release, NULL, &err), TIO_E_ARGUMENT, err,
                "NULL container");
    ASSERT_CODE(tio_container_on_release(c, NULL, NULL, &err), TIO_E_ARGUMENT, err,
                "NULL function");

    tio_save_options so = {.format = "tenbin"};
    xsend(tx, c, &so);
    tio_container_free(c); /* the lent frame still holds it */
    assert_int_equal(atomic_load(&released), 0);
    tio_container *got = xrecv(rx);
    const tio_tensor *t = tio_container_tensor(got, 0);
    assert_ptr_equal(tio_tensor_data(t), buf); /* no copy on either side */
    assert_int_equal(atomic_load(&released), 0);
    tio_container_free(got); /* the last hold: the frame, then the container */
    assert_int_equal(atomic_load(&released), 1);
    free(buf);
    tio_stream_close(tx, NULL);
    tio_stream_close(rx, NULL);
    zmq_ctx_term(ctx);

    /* without a send: released by the caller's free, once */
    c = tio_container_new();
    assert_int_equal(tio_container_on_release(c, count_release, &released, &err), TIO_OK);
    tio_container_free(c);
    assert_int_equal(atomic_load(&released), 2);
}

/* Over TCP: the container is freed right after each send; the frames (lent)
 * keep its data alive until libzmq has written them. */
static void test_free_after_send_tcp(void **state) {
    (void)state;
    const char *formats[] = {"tenbin", "zio", "btf"};
    tio_stream_options bo = sopts(TIO_SOCKET_PULL, 0), co = sopts(TIO_SOCKET_PUSH, 0);
    tio_stream *rx, *tx;
    tcp_pair(&bo, &co, &rx, &tx);
    uint8_t want[8][32];
    for (int i = 0; i < 8; i++) {
        tio_container *c = big_container(64 * 1024, (float)i);
        sha_of(tio_container_tensor(c, 0), want[i]);
        tio_save_options so = {.format = formats[i % 3], .flags = TIO_SAVE_DROP_NAMES};
        xsend(tx, c, &so);
        tio_container_free(c);
    }
    tio_stream_close(tx, NULL); /* lingers until sent */
    for (int i = 0; i < 8; i++) {
        tio_container *got = xrecv(rx);
        uint8_t have[32];
        sha_of(tio_container_tensor(got, 0), have);
        assert_memory_equal(have, want[i], 32);
        tio_container_free(got);
    }
    tio_stream_stats st;
    tio_stream_get_stats(rx, &st);
    assert_int_equal(st.received, 8);
    assert_int_equal(st.malformed, 0);
    tio_stream_close(rx, NULL);
}

/* A send that times out (a PUSH without peers) closes the frames it made:
 * the lent ones give their holds on the container back. */
static void test_send_timeout_releases(void **state) {
    (void)state;
    tio_stream_options o = sopts(TIO_SOCKET_PUSH, TIO_STREAM_BIND);
    o.timeout_ms = 100;
    tio_stream *s = xopen("tcp://127.0.0.1:*", &o);
    tio_container *c = big_container(64 * 1024, 3.0f);
    tio_error err;
    const char *formats[] = {"tenbin", "zio"};
    for (int i = 0; i < 2; i++) {
        tio_save_options so = {.format = formats[i]};
        int64_t t0 = now_ms();
        ASSERT_CODE(tio_stream_send(s, c, &so, &err), TIO_E_TIMEOUT, err, formats[i]);
        assert_true(now_ms() - t0 >= 80);
        assert_int_equal(atomic_load(&c->refs), 1); /* only the caller's hold */
    }
    tio_stream_stats st;
    tio_stream_get_stats(s, &st);
    assert_int_equal(st.sent, 0);
    assert_int_equal(st.bytes_sent, 0);
    tio_container_free(c);
    tio_stream_close(s, NULL);
}

/* ------------------------------------------------------------- malformed */

typedef struct bad_msg {
    const char *what;
    int code;          /* expected; TIO_OK for a valid message */
    tio_part parts[24];
    size_t n;
} bad_msg;

static void test_malformed_interleaved(void **state) {
    (void)state;
    tio_limits lim;
    memset(&lim, 0, sizeof lim);
    lim.max_tensors = 4; /* at most 11 frames */
    tio_stream_options ro = sopts(TIO_SOCKET_PULL, TIO_STREAM_BIND);
    ro.limits = &lim;
    tio_stream *rx = xopen("tcp://127.0.0.1:*", &ro);
    void *ctx = zmq_ctx_new();
    void *push = raw_socket(ctx, ZMQ_PUSH, tio_stream_endpoint(rx), 0);

    /* valid messages */
    size_t zlen[3], tlen[4], blen;
    uint8_t *zf[3], *tf[4];
    const char *zfn[3] = {"zio/tens_f32_3d.frame0.bin", "zio/tens_f32_3d.frame1.bin",
                          "zio/tens_f32_3d.frame2.bin"};
    const char *tfn[4] = {"zio/tensorcom/tb_f32_3d_i16_2d.frame0.bin",
                          "zio/tensorcom/tb_f32_3d_i16_2d.frame1.bin",
                          "zio/tensorcom/tb_f32_3d_i16_2d.frame2.bin",
                          "zio/tensorcom/tb_f32_3d_i16_2d.frame3.bin"};
    for (int i = 0; i < 3; i++) zf[i] = tvec_load(zfn[i], &zlen[i]);
    for (int i = 0; i < 4; i++) tf[i] = tvec_load(tfn[i], &tlen[i]);
    uint8_t *btf = tvec_load("btf/dense_rank3_float32.btf", &blen);
    for (int i = 0; i < 3; i++) assert_non_null(zf[i]);
    for (int i = 0; i < 4; i++) assert_non_null(tf[i]);
    assert_non_null(btf);

    /* broken variants */
    static const char garbage[] = "this is not a tensor container, not at all";
    char badprefix[200];
    memcpy(badprefix, zf[0], zlen[0]);
    memcpy(badprefix, "ZIX", 3); /* not ZIO: probed as tensorcom, 3 frames */
    char badlevel[200];
    memcpy(badlevel, zf[0], zlen[0]);
    badlevel[3] = '9';
    char badjson[200];
    memcpy(badjson, zf[0], 8);
    static const char json_text[] = "{\"TENS\":{\"tensors\":[{\"dtype\":\"f\",";
    memcpy(badjson + 8, json_text, sizeof json_text - 1);
    size_t badjson_len = 8 + sizeof json_text - 1;
    uint8_t badhdr[48];
    memcpy(badhdr, tf[0], 48);
    memcpy(badhdr, "q9\0\0\0\0\0\0", 8); /* no such dtype code */
    uint8_t hugedim[48];
    memcpy(hugedim, tf[0], 48);
    memset(hugedim + 16, 0xff, 8); /* ndim = 2^64-1 */
    static const uint8_t tiny[4] = {1, 2, 3, 4};

#define P(ptr, len) {(ptr), (len)}
    bad_msg msgs[] = {
        {"zio", TIO_OK, {P(zf[0], zlen[0]), P(zf[1], zlen[1]), P(zf[2], zlen[2])}, 3},
        {"garbage single frame", TIO_E_FORMAT, {P(garbage, sizeof garbage)}, 1},
        {"tensorcom", TIO_OK, {P(tf[0], tlen[0]), P(tf[1], tlen[1]), P(tf[2], tlen[2]), P(tf[3], tlen[3])}, 4},
        {"bad ZIO level", TIO_E_CORRUPT, {P(badlevel, zlen[0]), P(zf[1], zlen[1]), P(zf[2], zlen[2])}, 3},
        {"btf", TIO_OK, {P(btf, blen)}, 1},
        {"short coord", TIO_E_CORRUPT, {P(zf[0], zlen[0]), P(zf[1], 16), P(zf[2], zlen[2])}, 3},
        {"bad JSON label", TIO_E_CORRUPT, {P(badjson, badjson_len), P(zf[1], zlen[1]), P(zf[2], zlen[2])}, 3},
        {"zio", TIO_OK, {P(zf[0], zlen[0]), P(zf[1], zlen[1]), P(zf[2], zlen[2])}, 3},
        {"zio payload size mismatch", TIO_E_CORRUPT, {P(zf[0], zlen[0]), P(zf[1], zlen[1]), P(zf[2], zlen[2] - 4)}, 3},
        {"prefix not ZIO, 3 frames", TIO_E_CORRUPT, {P(badprefix, zlen[0]), P(zf[1], zlen[1]), P(zf[2], zlen[2])}, 3},
        {"odd tensorcom frame count", TIO_E_CORRUPT, {P(tf[0], tlen[0]), P(tf[1], tlen[1]), P(tf[2], tlen[2])}, 3},
        {"tensorcom", TIO_OK, {P(tf[0], tlen[0]), P(tf[1], tlen[1]), P(tf[2], tlen[2]), P(tf[3], tlen[3])}, 4},
        {"bad tensorcom dtype", TIO_E_DTYPE, {P(badhdr, 48), P(tf[1], tlen[1])}, 2},
        {"tensorcom ndim huge", TIO_E_CORRUPT, {P(hugedim, 48), P(tf[1], tlen[1])}, 2},
        {"tensorcom data size mismatch", TIO_E_CORRUPT, {P(tf[0], tlen[0]), P(tf[1], tlen[1] - 8)}, 2},
        {"tensorcom header not int64 words", TIO_E_CORRUPT, {P(tiny, 4), P(tiny, 4)}, 2},
        {"too many frames", TIO_E_LIMIT,
         {P(tiny, 4), P(tiny, 4), P(tiny, 4), P(tiny, 4), P(tiny, 4), P(tiny, 4), P(tiny, 4),
          P(tiny, 4), P(tiny, 4), P(tiny, 4), P(tiny, 4), P(tiny, 4), P(tiny, 4), P(tiny, 4)},
         14},
        {"btf", TIO_OK, {P(btf, blen)}, 1},
        {"truncated btf", TIO_E_TRUNCATED, {P(btf, blen - 8)}, 1},
        {"ZIO prefix shorter than 8 bytes", TIO_E_CORRUPT, {P(zf[0], 5), P(zf[1], zlen[1]), P(zf[2], zlen[2])}, 3},
        {"tensorcom header shorter than 3 words", TIO_E_CORRUPT, {P(tf[0], 16), P(tf[1], tlen[1])}, 2},
        {"zio", TIO_OK, {P(zf[0], zlen[0]), P(zf[1], zlen[1]), P(zf[2], zlen[2])}, 3},
    };
#undef P
    size_t nmsgs = sizeof msgs / sizeof msgs[0];
    for (size_t i = 0; i < nmsgs; i++) raw_send(push, msgs[i].parts, msgs[i].n);

    tio_container *ref_zio = open_vec("zio/tens_f32_3d.zmsg");
    tio_container *ref_tc = open_vec("zio/tensorcom/tb_f32_3d_i16_2d.ten");
    tio_container *ref_btf = open_vec("btf/dense_rank3_float32.btf");
    uint64_t bad = 0, good = 0;
    for (size_t i = 0; i < nmsgs; i++) {
        tio_container *c = NULL;
        tio_error err;
        tio_error_clear(&err);
        int rc = tio_stream_recv(rx, &c, &err);
        if (rc != msgs[i].code) {
            fprintf(stderr, "message %zu (%s): got %s (%s), expected %s\n", i, msgs[i].what,
                    tio_status_name(rc), err.message, tio_status_name(msgs[i].code));
            fail();
        }
        if (rc == TIO_OK) {
            good++;
            const tio_container *ref = strcmp(msgs[i].what, "zio") == 0         ? ref_zio
                                       : strcmp(msgs[i].what, "tensorcom") == 0 ? ref_tc
                                                                                : ref_btf;
            assert_same_tensors(ref, c);
            tio_container_free(c);
        } else {
            bad++;
            assert_null(c);
            assert_int_equal(err.code, rc);
            char want[64];
            snprintf(want, sizeof want, "message %zu (", i);
            if (strncmp(err.message, want, strlen(want)) != 0) {
                fprintf(stderr, "message %zu: error text '%s' lacks the prefix '%s'\n", i,
                        err.message, want);
                fail();
            }
        }
    }
    tio_stream_stats st;
    tio_stream_get_stats(rx, &st);
    assert_int_equal(st.malformed, bad);
    assert_int_equal(st.received, good);
    /* nothing left behind: a last message sent now is the next one read */
    tio_part last = {btf, blen};
    raw_send(push, &last, 1);
    tio_container *c = xrecv(rx);
    assert_same_tensors(ref_btf, c);
    tio_container_free(c);

    tio_container_free(ref_zio);
    tio_container_free(ref_tc);
    tio_container_free(ref_btf);
    for (int i = 0; i < 3; i++) free(zf[i]);
    for (int i = 0; i < 4; i++) free(tf[i]);
    free(btf);
    zmq_close(push);
    zmq_ctx_term(ctx);
    tio_stream_close(rx, NULL);
}

/* A DEALER with an empty message ([empty] alone) and a ROUTER with a bare
 * routing id: consumed and reported, the stream goes on. */
static void test_empty_envelope(void **state) {
    (void)state;
    tio_stream_options ro = sopts(TIO_SOCKET_ROUTER, TIO_STREAM_BIND);
    tio_stream *rx = xopen("tcp://127.0.0.1:*", &ro);
    void *ctx = zmq_ctx_new();
    void *dealer = raw_socket(ctx, ZMQ_DEALER, tio_stream_endpoint(rx), 0);
    tio_part empty = {"", 0};
    raw_send(dealer, &empty, 1);
    size_t blen;
    uint8_t *btf = tvec_load("btf/dense_int8.btf", &blen);
    tio_part ok[2] = {{"", 0}, {btf, blen}};
    raw_send(dealer, ok, 2);
    tio_part no_delim = {btf, blen}; /* without the empty delimiter: accepted */
    raw_send(dealer, &no_delim, 1);

    tio_container *c = NULL;
    tio_error err;
    ASSERT_CODE(tio_stream_recv(rx, &c, &err), TIO_E_TRUNCATED, err, "empty");
    assert_true(strstr(err.message, "message 0 (0 frames)") == err.message);
    c = xrecv(rx);
    assert_prop(c, "proto", "btf");
    assert_prop(c, "frames", "1");
    assert_int_equal(strlen(tio_container_prop_get(c, "peer")), 10); /* 5-byte auto id */
    tio_container_free(c);
    c = xrecv(rx);
    assert_prop(c, "proto", "btf");
    tio_container_free(c);
    free(btf);
    zmq_close(dealer);
    zmq_ctx_term(ctx);
    tio_stream_close(rx, NULL);
}

/* --------------------------------------------------------------- timeout */

/* A bound PAIR that sends at once to a PAIR that is still connecting: every
 * message arrives, round after round. (With ZMQ_IMMEDIATE on the connecting
 * PAIR, a `tensio recv --socket pair --connect` lost everything a bound
 * `tensio send` sent in 24 of 40 loaded runs; the CLI stream test's
 * pair<->pair cases cover that process-to-process path.) */
static void test_pair_bound_sender_repeated(void **state) {
    (void)state;
    tio_container *c = open_vec("zio/tens_f32_3d.zmsg");
    for (int round = 0; round < 20; round++) {
        tio_stream_options so = sopts(TIO_SOCKET_PAIR, 0);
        tio_stream_options ro = sopts(TIO_SOCKET_PAIR, TIO_STREAM_CONNECT);
        tio_stream *snd, *rcv;
        tcp_pair(&so, &ro, &snd, &rcv);
        for (int k = 0; k < 4; k++) xsend(snd, c, NULL);
        for (int k = 0; k < 4; k++) {
            tio_container *r = xrecv(rcv);
            assert_same_tensors(c, r);
            tio_container_free(r);
        }
        tio_stream_close(rcv, NULL);
        tio_stream_close(snd, NULL);
    }
    tio_container_free(c);
}

/* A connecting PUSH queues only on live connections (ZMQ_IMMEDIATE): with
 * nobody at the endpoint the send times out instead of "succeeding". */
static void test_push_to_nobody_times_out(void **state) {
    (void)state;
    /* a port that was just free: bind, learn it, close */
    tio_stream_options bo = sopts(TIO_SOCKET_PULL, TIO_STREAM_BIND);
    tio_stream *b = xopen("tcp://127.0.0.1:*", &bo);
    char ep[128];
    snprintf(ep, sizeof ep, "%s", tio_stream_endpoint(b));
    tio_stream_close(b, NULL);
    tio_stream_options o = sopts(TIO_SOCKET_PUSH, 0);
    o.timeout_ms = 200;
    o.linger_ms = -1;
    tio_stream *s = xopen(ep, &o);
    tio_container *c = open_vec("zio/tens_i16_2d.zmsg");
    tio_error err;
    ASSERT_CODE(tio_stream_send(s, c, NULL, &err), TIO_E_TIMEOUT, err, "send to nobody");
    tio_stream_stats st;
    tio_stream_get_stats(s, &st);
    assert_int_equal(st.sent, 0);
    tio_container_free(c);
    tio_stream_close(s, NULL);
}

static void test_recv_timeout(void **state) {
    (void)state;
    tio_stream_options o = sopts(TIO_SOCKET_PULL, TIO_STREAM_BIND);
    o.timeout_ms = 200;
    tio_stream *s = xopen("tcp://127.0.0.1:*", &o);
    tio_container *c = (tio_container *)&o; /* must be reset to NULL */
    tio_error err;
    int64_t t0 = now_ms();
    ASSERT_CODE(tio_stream_recv(s, &c, &err), TIO_E_TIMEOUT, err, "recv");
    int64_t dt = now_ms() - t0;
    assert_null(c);
    assert_int_equal(err.code, TIO_E_TIMEOUT);
    assert_true(dt >= 150 && dt < 60000); /* 60 s: far above what it needs */
    assert_non_null(strstr(err.message, "200 ms"));
    tio_stream_stats st;
    tio_stream_get_stats(s, &st);
    assert_int_equal(st.received + st.malformed, 0);
    tio_stream_close(s, NULL);
}

/* tio_stream_set_timeout: a stream opened without a timeout gets one, and
 * loses it again (a message then waits as long as it takes). */
static void test_set_timeout(void **state) {
    (void)state;
    tio_stream_options o = sopts(TIO_SOCKET_PULL, TIO_STREAM_BIND);
    tio_stream *rx = xopen("tcp://127.0.0.1:*", &o);
    tio_error err;
    ASSERT_CODE(tio_stream_set_timeout(rx, -1, &err), TIO_E_ARGUMENT, err, "negative");
    ASSERT_CODE(tio_stream_set_timeout(NULL, 10, &err), TIO_E_ARGUMENT, err, "NULL");
    assert_int_equal(tio_stream_set_timeout(rx, 100, &err), TIO_OK);
    tio_container *c = NULL;
    int64_t t0 = now_ms();
    ASSERT_CODE(tio_stream_recv(rx, &c, &err), TIO_E_TIMEOUT, err, "recv");
    int64_t dt = now_ms() - t0;
    assert_true(dt >= 70 && dt < 60000);
    assert_non_null(strstr(err.message, "100 ms"));
    tio_stream_options to = sopts(TIO_SOCKET_PUSH, 0);
    tio_stream *tx = xopen(tio_stream_endpoint(rx), &to);
    assert_int_equal(tio_stream_set_timeout(tx, 5000, &err), TIO_OK);
    tio_container *m = open_vec("zio/tens_i16_2d.zmsg");
    assert_int_equal(tio_stream_send(tx, m, NULL, &err), TIO_OK);
    assert_int_equal(tio_stream_set_timeout(rx, 0, &err), TIO_OK); /* forever again */
    assert_int_equal(tio_stream_recv(rx, &c, &err), TIO_OK);
    assert_int_equal(tio_container_count(c), tio_container_count(m));
    tio_container_free(c);
    tio_container_free(m);
    tio_stream_close(tx, NULL);
    tio_stream_close(rx, NULL);
}

/* A frame above max_frame_bytes never reaches the receiver: libzmq drops
 * the peer as soon as the frame's length is announced (nothing allocated);
 * the peer reconnects and its next message arrives. */
static void test_max_frame_bytes(void **state) {
    (void)state;
    tio_stream_options o = sopts(TIO_SOCKET_PULL, TIO_STREAM_BIND);
    o.timeout_ms = 500;
    o.max_frame_bytes = 4096;
    tio_stream *rx = xopen("tcp://127.0.0.1:*", &o);
    void *ctx = zmq_ctx_new();
    void *push = raw_socket(ctx, ZMQ_PUSH, tio_stream_endpoint(rx), 0);
    size_t blen;
    uint8_t *btf = tvec_load("btf/dense_rank3_float32.btf", &blen);
    assert_non_null(btf);
    assert_true(blen < 4096);
    uint8_t *big = calloc(1, 8192);
    assert_non_null(big);
    tio_part p = {big, 8192};
    raw_send(push, &p, 1);
    tio_container *c = NULL;
    tio_error err;
    ASSERT_CODE(tio_stream_recv(rx, &c, &err), TIO_E_TIMEOUT, err, "oversize frame");
    p.data = btf;
    p.size = blen;
    raw_send(push, &p, 1);
    o.timeout_ms = TMO;
    c = NULL;
    ASSERT_OK(tio_stream_recv(rx, &c, &err), err, "the next message");
    tio_container *want = open_vec("btf/dense_rank3_float32.btf");
    assert_same_tensors(want, c);
    tio_container_free(want);
    tio_container_free(c);
    tio_stream_stats st;
    tio_stream_get_stats(rx, &st);
    assert_int_equal(st.received, 1);
    assert_int_equal(st.malformed, 0);
    free(big);
    free(btf);
    zmq_close(push);
    zmq_ctx_term(ctx);
    tio_stream_close(rx, NULL);
}

static void test_wait_subscribers_timeout(void **state) {
    (void)state;
    tio_stream_options o = sopts(TIO_SOCKET_PUB, TIO_STREAM_BIND);
    tio_stream *s = xopen("tcp://127.0.0.1:*", &o);
    tio_error err;
    int64_t t0 = now_ms();
    ASSERT_CODE(tio_stream_wait_subscribers(s, 1, 150, &err), TIO_E_TIMEOUT, err, "wait");
    assert_true(now_ms() - t0 >= 100);
    ASSERT_OK(tio_stream_wait_subscribers(s, 0, 150, &err), err, "wait for 0");
    /* a PUB cannot receive; a SUB has no subscribers to wait for */
    tio_container *c;
    ASSERT_CODE(tio_stream_recv(s, &c, &err), TIO_E_ARGUMENT, err, "recv on PUB");
    tio_stream_close(s, NULL);
}

/* A set peer that is not connected: retried until the send timeout, then
 * TIO_E_TRANSPORT naming the peer. */
static void test_router_unknown_peer(void **state) {
    (void)state;
    tio_stream_options o = sopts(TIO_SOCKET_ROUTER, TIO_STREAM_BIND);
    o.timeout_ms = 200;
    tio_stream *s = xopen("tcp://127.0.0.1:*", &o);
    tio_container *c = open_vec("btf/dense_int8.btf");
    tio_error err;
    tio_save_options so = {.format = "btf"};
    ASSERT_CODE(tio_stream_send(s, c, &so, &err), TIO_E_ARGUMENT, err, "no peer yet");
    ASSERT_OK(tio_stream_set_peer(s, "\x01nobody", 7, &err), err, "set_peer");
    int64_t t0 = now_ms();
    ASSERT_CODE(tio_stream_send(s, c, &so, &err), TIO_E_TRANSPORT, err, "unknown peer");
    assert_true(now_ms() - t0 >= 150);
    assert_non_null(strstr(err.message, "016e6f626f6479"));
    ASSERT_CODE(tio_stream_set_peer(s, NULL, 3, &err), TIO_E_ARGUMENT, err, "NULL id");
    tio_stream_stats st;
    tio_stream_get_stats(s, &st);
    assert_int_equal(st.sent, 0);
    tio_container_free(c);
    tio_stream_close(s, NULL);
}

/* A peer set by id that connects later gets the message; clearing it goes
 * back to the last peer received from. */
static void test_router_set_peer(void **state) {
    (void)state;
    tio_stream_options ro = sopts(TIO_SOCKET_ROUTER, TIO_STREAM_BIND);
    tio_stream *r = xopen("tcp://127.0.0.1:*", &ro);
    tio_error err;
    ASSERT_OK(tio_stream_set_peer(r, "worker-b", 8, &err), err, "set_peer");
    tio_stream_options d = sopts(TIO_SOCKET_DEALER, 0);
    d.identity = "worker-a";
    tio_stream *a = xopen(tio_stream_endpoint(r), &d);
    d.identity = "worker-b";
    tio_stream *b = xopen(tio_stream_endpoint(r), &d);
    tio_container *c16 = open_vec("btf/dense_int16.btf");
    tio_container *c8 = open_vec("btf/dense_int8.btf");
    tio_save_options so = {.format = "btf"};
    xsend(r, c16, &so); /* retried until worker-b has connected */
    tio_container *got = xrecv(b);
    assert_same_tensors(c16, got);
    tio_container_free(got);
    /* a talks; the set peer still wins */
    xsend(a, c8, &so);
    got = xrecv(r);
    assert_prop(got, "peer", "776f726b65722d61");
    tio_container_free(got);
    xsend(r, c16, &so);
    got = xrecv(b);
    assert_same_tensors(c16, got);
    tio_container_free(got);
    /* cleared: replies go to the last peer received from; a's first message
     * is this one, so it got none of b's */
    ASSERT_OK(tio_stream_set_peer(r, NULL, 0, &err), err, "clear");
    xsend(r, c8, &so);
    got = xrecv(a);
    assert_same_tensors(c8, got);
    tio_container_free(got);
    /* and b got nothing in between either */
    ASSERT_OK(tio_stream_set_peer(r, "worker-b", 8, &err), err, "set_peer");
    xsend(r, c8, &so);
    got = xrecv(b);
    assert_same_tensors(c8, got);
    tio_container_free(got);
    tio_container_free(c16);
    tio_container_free(c8);
    tio_stream_close(a, NULL);
    tio_stream_close(b, NULL);
    tio_stream_close(r, NULL);
}

/* ----------------------------------------------------------------- stats */

static void test_stats(void **state) {
    (void)state;
    tio_limits lim;
    memset(&lim, 0, sizeof lim);
    lim.max_tensors = 2;
    tio_stream_options bo = sopts(TIO_SOCKET_PAIR, 0), co = sopts(TIO_SOCKET_PAIR, 0);
    bo.limits = &lim;
    tio_stream *a, *b;
    tcp_pair(&bo, &co, &a, &b);
    tio_container *src = open_vec("btf/dense_int8.btf");
    tio_container *many = open_vec("btf/cpp_test_BTFWriteAndRead.btf");
    assert_true(tio_container_count(many) > 2);
    tio_save_options so = {.format = "btf"};
    tio_message *m = NULL;
    tio_error err;
    ASSERT_OK(tio_message_encode(src, &so, &m, &err), err, "encode");
    uint64_t size = tio_message_size(m);
    tio_message_free(m);
    ASSERT_OK(tio_message_encode(many, &so, &m, &err), err, "encode");
    uint64_t size_many = tio_message_size(m);
    tio_message_free(m);

    for (int i = 0; i < 3; i++) xsend(b, src, &so);
    xsend(b, many, &so); /* too many tensors for a's limits */
    xsend(b, src, &so);
    tio_stream_stats st;
    tio_stream_get_stats(b, &st);
    assert_int_equal(st.sent, 5);
    assert_int_equal(st.bytes_sent, 4 * size + size_many);
    assert_int_equal(st.received + st.malformed + st.bytes_received, 0);
    for (int i = 0; i < 3; i++) tio_container_free(xrecv(a));
    tio_container *got = NULL;
    ASSERT_CODE(tio_stream_recv(a, &got, &err), TIO_E_LIMIT, err, "limit");
    assert_null(got);
    assert_true(strncmp(err.message, "message 3 (1 frames): ", 22) == 0);
    tio_container_free(xrecv(a));
    tio_stream_get_stats(a, &st);
    assert_int_equal(st.received, 4);
    assert_int_equal(st.malformed, 1);
    /* bytes_received counts every message read, decodable or not */
    assert_int_equal(st.bytes_received, 4 * size + size_many);
    assert_int_equal(st.sent + st.bytes_sent, 0);
    /* the other way */
    xsend(a, src, &so);
    tio_container_free(xrecv(b));
    tio_stream_get_stats(a, &st);
    assert_int_equal(st.sent, 1);
    assert_int_equal(st.bytes_sent, size);
    tio_stream_get_stats(b, &st);
    assert_int_equal(st.received, 1);
    assert_int_equal(st.bytes_received, size);

    memset(&st, 0xff, sizeof st);
    tio_stream_get_stats(NULL, &st);
    assert_int_equal(st.sent + st.received + st.malformed + st.bytes_sent + st.bytes_received, 0);
    tio_container_free(src);
    tio_container_free(many);
    tio_stream_close(a, NULL);
    tio_stream_close(b, NULL);
}

/* A container without tensors: a zio message (prefix and coordinates) and a
 * btf file travel; an empty tensorcom batch has no frames and is refused. */
static void test_empty_container(void **state) {
    (void)state;
    tio_stream_options bo = sopts(TIO_SOCKET_PULL, 0), co = sopts(TIO_SOCKET_PUSH, 0);
    tio_stream *rx, *tx;
    tcp_pair(&bo, &co, &rx, &tx);
    tio_container *empty = tio_container_new();
    tio_error err;
    tio_save_options so = {.format = "tenbin"};
    ASSERT_CODE(tio_stream_send(tx, empty, &so, &err), TIO_E_UNSUPPORTED, err, "tensorcom");
    const char *formats[] = {"zio", "btf"};
    for (int i = 0; i < 2; i++) {
        so.format = formats[i];
        xsend(tx, empty, &so);
        tio_container *got = xrecv(rx);
        assert_int_equal(tio_container_count(got), 0);
        assert_prop(got, "proto", formats[i]);
        tio_container_free(got);
    }
    tio_stream_stats st;
    tio_stream_get_stats(tx, &st);
    assert_int_equal(st.sent, 2);
    tio_container_free(empty);
    tio_stream_close(tx, NULL);
    tio_stream_close(rx, NULL);
}

/* Throughput over loopback TCP (printed, not asserted): batches of 200
 * messages sent, then received. */
static void test_throughput(void **state) {
    (void)state;
    tio_stream_options bo = sopts(TIO_SOCKET_PULL, 0), co = sopts(TIO_SOCKET_PUSH, 0);
    tio_stream *rx, *tx;
    tcp_pair(&bo, &co, &rx, &tx);
    tio_container *small = open_vec("zio/tensorcom/tb_f32_3d_i16_2d.ten");
    tio_container *big = big_container(256 * 1024, 2.0f);
    struct {
        const char *what;
        tio_container *c;
        int batches;
    } runs[] = {{"2 small tensors (136 B), tensorcom", small, 25},
                {"1 MiB tensor, tensorcom", big, 2}};
    tio_save_options so = {.format = "tenbin"};
    for (size_t r = 0; r < 2; r++) {
        int64_t t0 = now_ms();
        int n = 0;
        for (int k = 0; k < runs[r].batches; k++) {
            for (int i = 0; i < 200; i++) xsend(tx, runs[r].c, &so);
            for (int i = 0; i < 200; i++) tio_container_free(xrecv(rx));
            n += 200;
        }
        int64_t dt = now_ms() - t0;
        if (dt <= 0) dt = 1;
        fprintf(stderr, "throughput: %s: %d messages in %lld ms = %.0f msg/s\n", runs[r].what,
                n, (long long)dt, n * 1000.0 / (double)dt);
    }
    tio_container_free(small);
    tio_container_free(big);
    tio_stream_close(tx, NULL);
    tio_stream_close(rx, NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recv_timeout),
        cmocka_unit_test(test_set_timeout),
        cmocka_unit_test(test_max_frame_bytes),
        cmocka_unit_test(test_pair_bound_sender_repeated),
        cmocka_unit_test(test_push_to_nobody_times_out),
        cmocka_unit_test(test_wait_subscribers_timeout),
        cmocka_unit_test(test_router_unknown_peer),
        cmocka_unit_test(test_router_set_peer),
        CASE_ENTRIES(K_PUSH_PULL),
        CASE_ENTRIES(K_PUB_SUB),
        CASE_ENTRIES(K_DEALER_ROUTER),
        CASE_ENTRIES(K_ROUTER_DEALER),
        CASE_ENTRIES(K_PAIR),
        cmocka_unit_test(test_tensorcom_golden_frames),
        cmocka_unit_test(test_zio_golden_frames),
        cmocka_unit_test(test_zero_copy_inproc_tensorcom),
        cmocka_unit_test(test_release_after_lent_send),
        cmocka_unit_test(test_zero_copy_inproc_zio),
        cmocka_unit_test(test_copy_flag_copies),
        cmocka_unit_test(test_free_after_send_tcp),
        cmocka_unit_test(test_send_timeout_releases),
        cmocka_unit_test(test_malformed_interleaved),
        cmocka_unit_test(test_empty_envelope),
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_empty_container),
        cmocka_unit_test(test_throughput),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
