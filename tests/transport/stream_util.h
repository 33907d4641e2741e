/* What the stream tests share (stream_util.c): a timeout on every
 * receive, assertions that print the library's message, and streams,
 * containers and comparisons built from the public API. */
#ifndef TIO_TEST_STREAM_UTIL_H
#define TIO_TEST_STREAM_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>

#include "tassert.h"
#include "tensio.h"

/* Every receive gives up after this long. */
#define TMO 5000

#define ASSERT_CODE(rc, want, err, what)                                               \
    do {                                                                                \
        int rc_ = (rc);                                                                 \
        if (rc_ != (want)) {                                                            \
            fprintf(stderr, "%s: got %s (%s), expected %s\n", (what),                   \
                    tio_status_name(rc_), (err).message, tio_status_name(want));        \
            fail();                                                                     \
        }                                                                               \
    } while (0)

int64_t now_ms(void);
/* A vector opened from the vectors' directory (fails the test if missing). */
tio_container *open_vec(const char *rel);
/* SHA-256 of a tensor's dense bytes, raw and as hex. */
void sha_of(const tio_tensor *t, uint8_t out[32]);
void sha_hex(const tio_tensor *t, char out[65]);
/* Same tensors: count, dtype, shape, SHA-256 of the dense data. */
void assert_same_tensors(const tio_container *want, const tio_container *got);
/* Options for a socket type with flags and the TMO timeout. */
tio_stream_options sopts(tio_socket_type type, unsigned flags);
tio_stream *xopen(const char *ep, const tio_stream_options *o);
/* Binds `bo` on an ephemeral loopback port and connects `co` to it. */
void tcp_pair(const tio_stream_options *bo, const tio_stream_options *co, tio_stream **b,
              tio_stream **c);
void xsend(tio_stream *s, const tio_container *c, const tio_save_options *so);
tio_container *xrecv(tio_stream *s);
/* The container's property `key` is `want`. */
void assert_prop(const tio_container *c, const char *key, const char *want);

#endif
