/* The stream tests' shared helpers (stream_util.h). */
#include "stream_util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tvec.h"

int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

tio_container *open_vec(const char *rel) {
    char *path = tvec_path(rel);
    if (!path) {
        fprintf(stderr, "vector %s is missing\n", rel);
        fail();
    }
    tio_container *c = NULL;
    tio_error err;
    ASSERT_OK(tio_open(path, NULL, &c, &err), err, rel);
    free(path);
    return c;
}

void sha_of(const tio_tensor *t, uint8_t out[32]) {
    tio_error err;
    ASSERT_OK(tio_tensor_sha256(t, TIO_HASH_DENSE, out, &err), err, "sha256");
}

void sha_hex(const tio_tensor *t, char out[65]) {
    uint8_t raw[32];
    sha_of(t, raw);
    tvec_hex(raw, 32, out);
}

/* Same tensors: count, dtype, shape, SHA-256 of the dense data. */
void assert_same_tensors(const tio_container *want, const tio_container *got) {
    assert_int_equal(tio_container_count(got), tio_container_count(want));
    for (size_t i = 0; i < tio_container_count(want); i++) {
        const tio_tensor *a = tio_container_tensor(want, i);
        const tio_tensor *b = tio_container_tensor(got, i);
        assert_int_equal(tio_tensor_dtype(b), tio_tensor_dtype(a));
        assert_int_equal(tio_tensor_rank(b), tio_tensor_rank(a));
        for (size_t d = 0; d < tio_tensor_rank(a); d++)
            assert_int_equal(tio_tensor_shape(b)[d], tio_tensor_shape(a)[d]);
        uint8_t ha[32], hb[32];
        sha_of(a, ha);
        sha_of(b, hb);
        assert_memory_equal(ha, hb, 32);
    }
}

tio_stream_options sopts(tio_socket_type type, unsigned flags) {
    tio_stream_options o;
    memset(&o, 0, sizeof o);
    o.socket = type;
    o.flags = flags;
    o.timeout_ms = TMO;
    return o;
}

tio_stream *xopen(const char *ep, const tio_stream_options *o) {
    tio_stream *s = NULL;
    tio_error err;
    ASSERT_OK(tio_stream_open(ep, o, &s, &err), err, ep);
    assert_non_null(s);
    return s;
}

/* Binds `bt` on an ephemeral loopback port and connects `ct` to it. */
void tcp_pair(const tio_stream_options *bo, const tio_stream_options *co,
                     tio_stream **b, tio_stream **c) {
    tio_stream_options o = *bo;
    o.flags |= TIO_STREAM_BIND;
    *b = xopen("tcp://127.0.0.1:*", &o);
    const char *ep = tio_stream_endpoint(*b);
    assert_non_null(ep);
    assert_true(strncmp(ep, "tcp://127.0.0.1:", 16) == 0);
    assert_true(atoi(ep + 16) > 0);
    *c = xopen(ep, co);
}

void xsend(tio_stream *s, const tio_container *c, const tio_save_options *so) {
    tio_error err;
    ASSERT_OK(tio_stream_send(s, c, so, &err), err, "send");
}

tio_container *xrecv(tio_stream *s) {
    tio_container *c = NULL;
    tio_error err;
    ASSERT_OK(tio_stream_recv(s, &c, &err), err, "recv");
    assert_non_null(c);
    return c;
}

void assert_prop(const tio_container *c, const char *key, const char *want) {
    const char *v = tio_container_prop_get(c, key);
    if (!v || strcmp(v, want) != 0) {
        fprintf(stderr, "prop %s = %s, expected %s\n", key, v ? v : "(none)", want);
        fail();
    }
}
