/* What the two tmfile test programs share (test_tmfile.c: vectors, write-back,
 * hostile input; test_tmfile_graph.c: graphs through the API): the vectors' names,
 * little-endian words, and opening and saving in memory as tmfile. */
#ifndef TIO_TEST_TMFILE_COMMON_H
#define TIO_TEST_TMFILE_COMMON_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "tensio.h"
#include "tmfile/opmap.h"
#include "tvec.h"

static const char *const lite_models[] = {"cnn_small", "concat_reshape_softmax",
                                          "mlp_matmul_add", "big_fc", "mnist_repo"};
#define NLITE (sizeof lite_models / sizeof lite_models[0])

static inline uint32_t ld32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline void st32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static tio_container *open_mem(const void *buf, size_t len, unsigned flags, tio_error *e) {
    tio_open_options o = {0};
    o.flags = flags;
    o.format = "tmfile";
    tio_container *c = NULL;
    int rc = tio_open_memory(buf, len, &o, &c, e);
    if (rc) {
        assert_null(c);
        assert_int_equal(e->code, rc);
        assert_string_equal(e->format, "tmfile");
        assert_true(e->message[0] != 0);
    }
    return c;
}

/* The graph as the file has it (Const and InputOp nodes, Tengine's fields):
 * what the manifests describe. */
static tio_container *open_path(const char *path) {
    tio_container *c = NULL;
    tio_error e;
    tio_open_options o = {0};
    o.flags = TIO_OPEN_NATIVE_GRAPH;
    int rc = tio_open(path, &o, &c, &e);
    if (rc) fail_msg("%s: %s", path, e.message);
    return c;
}


static uint8_t *save_mem(const tio_container *c, unsigned flags, size_t *len) {
    tio_save_options so = {0};
    so.format = "tmfile";
    so.flags = flags;
    void *out = NULL;
    tio_error e;
    int rc = tio_save_memory(c, &so, &out, len, &e);
    if (rc) fail_msg("save: %s", e.message);
    return out;
}

static inline int save_fails(const tio_container *c, int code, const char *needle) {
    tio_save_options so = {0};
    so.format = "tmfile";
    void *out = NULL;
    size_t len;
    tio_error e;
    int rc = tio_save_memory(c, &so, &out, &len, &e);
    if (rc != code)
        fail_msg("expected %s, got %s: %s", tio_status_name(code), tio_status_name(rc),
                 rc ? e.message : "");
    if (needle && !strstr(e.message, needle)) fail_msg("'%s' not in: %s", needle, e.message);
    assert_int_equal(tio_check_save(c, &so, &e), code);
    return rc;
}

#endif
