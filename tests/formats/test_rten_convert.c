/*
 * ONNX-form graphs lowered to rten as rten-convert lowers them
 * (src/rten/lower.c): int64 constants clamped to int32 (INT64_MAX/MIN become
 * the int32 extremes), bool -> int32, float64 -> float32, Constant operators
 * (TENSOR value, value_ints) as constants, Squeeze's opset-11 axes attribute
 * as a constant input "<node>:rten-axes" equal to the opset-13 form's input,
 * onnx.* metadata dropped; the source container is not modified.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensio.h"

static tio_error e;

static int64_t add_tensor(tio_container *c, const char *name, tio_dtype dt, int64_t n,
                          const void *data) {
    int64_t shape[1] = {n};
    tio_tensor_desc d = {.name = name, .dtype = dt, .rank = 1, .shape = shape, .data = data,
                         .nbytes = (size_t)n * tio_dtype_size(dt)};
    size_t ti = tio_container_count(c);
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
    return (int64_t)ti;
}

static int64_t add_value(tio_graph *g, const char *name, int64_t tensor) {
    tio_value_info v = {.name = name, .dtype = TIO_FLOAT32, .rank = -1, .tensor = tensor};
    if (tensor >= 0) v.dtype = TIO_DTYPE_INVALID;
    size_t i;
    assert_int_equal(tio_graph_add_value(g, &v, &i, &e), TIO_OK);
    return (int64_t)i;
}

static size_t add_node(tio_graph *g, const char *name, const char *op, const int64_t *in,
                       size_t nin, int64_t out) {
    tio_node_info n = {.name = name, .op = op, .native_id = -1, .input_count = nin,
                       .inputs = in, .output_count = 1, .outputs = &out};
    size_t j;
    assert_int_equal(tio_graph_add_node(g, &n, &j, &e), TIO_OK);
    return j;
}

static const int64_t i64v[6] = {INT64_MAX, INT64_MIN, 1, -2, 5000000000LL, -INT64_MAX};
static const uint8_t boolv[3] = {1, 0, 1};
static const double f64v[2] = {0.5, -1.25};
static const float cval[2] = {3.5f, 4.5f};
static const int64_t axes1[1] = {1};
static int64_t big64[40]; /* external in V2: converted while streamed */
static double bigf64[20];

/* An ONNX-form model: Squeeze with the axes attribute (opset 11) or input
 * (opset 13); Constant ops; int64, bool and float64 initializers. */
static tio_container *build(bool v13) {
    tio_container *c = tio_container_new();
    assert_non_null(c);
    tio_graph *g;
    assert_int_equal(tio_container_new_graph(c, &g, &e), TIO_OK);
    assert_int_equal(tio_graph_set_opset(g, "", v13 ? 13 : 11, &e), TIO_OK);
    assert_int_equal(tio_graph_meta_set(g, "onnx.ir_version", "7", &e), TIO_OK);
    assert_int_equal(tio_graph_meta_set(g, "onnx.producer_name", "test", &e), TIO_OK);
    int64_t x = add_value(g, "x", -1);
    int64_t vi64 = add_value(g, "i64", add_tensor(c, "i64", TIO_INT64, 6, i64v));
    int64_t vb = add_value(g, "b", add_tensor(c, "b", TIO_BOOL, 3, boolv));
    int64_t vd = add_value(g, "d", add_tensor(c, "d", TIO_FLOAT64, 2, f64v));
    for (int k = 0; k < 40; k++) big64[k] = (k - 20) * 200000000LL; /* +-4e9 */
    for (int k = 0; k < 20; k++) bigf64[k] = k * 0.25;
    int64_t vbig = add_value(g, "big64", add_tensor(c, "big64", TIO_INT64, 40, big64));
    int64_t vbigf = add_value(g, "bigf64", add_tensor(c, "bigf64", TIO_FLOAT64, 20, bigf64));
    int64_t vax = v13 ? add_value(g, "axes", add_tensor(c, "axes", TIO_INT64, 1, axes1)) : -1;
    int64_t ct = add_tensor(c, "c1", TIO_FLOAT32, 2, cval);
    int64_t c1 = add_value(g, "c1", -1), c2 = add_value(g, "c2", -1);
    size_t k1 = add_node(g, "k1", "Constant", NULL, 0, c1);
    tio_attr a = {.name = "value", .type = TIO_ATTR_TENSOR, .i = ct};
    assert_int_equal(tio_graph_add_attr(g, k1, &a, &e), TIO_OK);
    size_t k2 = add_node(g, "k2", "Constant", NULL, 0, c2);
    static const int64_t ints[3] = {4, 5, 6};
    a = (tio_attr){.name = "value_ints", .type = TIO_ATTR_INTS, .count = 3, .ints = ints};
    assert_int_equal(tio_graph_add_attr(g, k2, &a, &e), TIO_OK);
    int64_t y = add_value(g, "y", -1);
    int64_t in[2] = {x, vax};
    size_t sq = add_node(g, "sq", "Squeeze", in, v13 ? 2 : 1, y);
    if (!v13) {
        a = (tio_attr){.name = "axes", .type = TIO_ATTR_INTS, .count = 1, .ints = axes1};
        assert_int_equal(tio_graph_add_attr(g, sq, &a, &e), TIO_OK);
    }
    int64_t outs[7];
    const int64_t srcs[7] = {y, vi64, vb, vd, c2, vbig, vbigf};
    static const char *const names[7] = {"o0", "o1", "o2", "o3", "o4", "o5", "o6"};
    for (int k = 0; k < 7; k++) {
        outs[k] = add_value(g, names[k], -1);
        int64_t i2[2] = {srcs[k], c1};
        add_node(g, names[k], k == 0 ? "Add" : "Identity", i2, k == 0 ? 2 : 1, outs[k]);
    }
    assert_int_equal(tio_graph_set_inputs(g, &x, 1, &e), TIO_OK);
    assert_int_equal(tio_graph_set_outputs(g, outs, 7, &e), TIO_OK);
    return c;
}

static const tio_tensor *want(const tio_container *c, const char *name, tio_dtype dt,
                              int64_t n) {
    const tio_tensor *t = tio_container_find(c, name);
    if (!t) fail_msg("no constant '%s'", name);
    assert_int_equal(tio_tensor_dtype(t), dt);
    assert_int_equal(tio_tensor_rank(t), 1);
    assert_int_equal(tio_tensor_shape(t)[0], n);
    return t;
}

static void check_written(tio_container *src, bool v13, unsigned version) {
    tio_save_options so = {.format = "rten", .version = version};
    void *buf;
    size_t len;
    if (tio_save_memory(src, &so, &buf, &len, &e) != TIO_OK) fail_msg("save: %s", e.message);
    tio_container *r;
    assert_int_equal(tio_open_memory(buf, len, NULL, &r, &e), TIO_OK);
    int32_t i32[6];
    memcpy(i32, tio_tensor_data(want(r, "i64", TIO_INT32, 6)), sizeof i32);
    const int32_t i32w[6] = {INT32_MAX, INT32_MIN, 1, -2, INT32_MAX, INT32_MIN};
    assert_memory_equal(i32, i32w, sizeof i32);
    memcpy(i32, tio_tensor_data(want(r, "b", TIO_INT32, 3)), 3 * sizeof *i32);
    assert_int_equal(i32[0], 1);
    assert_int_equal(i32[1], 0);
    assert_int_equal(i32[2], 1);
    float f[2];
    memcpy(f, tio_tensor_data(want(r, "d", TIO_FLOAT32, 2)), sizeof f);
    assert_true(f[0] == 0.5f && f[1] == -1.25f);
    memcpy(f, tio_tensor_data(want(r, "c1", TIO_FLOAT32, 2)), sizeof f);
    assert_memory_equal(f, cval, sizeof f);
    memcpy(i32, tio_tensor_data(want(r, "c2", TIO_INT32, 3)), 3 * sizeof *i32);
    assert_true(i32[0] == 4 && i32[1] == 5 && i32[2] == 6);
    const char *axn = v13 ? "axes" : "sq:rten-axes";
    memcpy(i32, tio_tensor_data(want(r, axn, TIO_INT32, 1)), sizeof *i32);
    assert_int_equal(i32[0], 1);

    const uint8_t *bp = tio_tensor_data(want(r, "big64", TIO_INT32, 40));
    for (int k = 0; k < 40; k++) {
        int64_t w = big64[k] > INT32_MAX ? INT32_MAX : big64[k] < INT32_MIN ? INT32_MIN : big64[k];
        memcpy(i32, bp + 4 * k, sizeof *i32);
        assert_int_equal(i32[0], w);
    }
    bp = tio_tensor_data(want(r, "bigf64", TIO_FLOAT32, 20));
    for (int k = 0; k < 20; k++) {
        memcpy(f, bp + 4 * k, sizeof *f);
        assert_true(f[0] == (float)bigf64[k]);
    }

    /* constants: initializers, Constant ops' outputs, then the generated one */
    static const char *const order11[] = {"i64", "b", "d", "big64", "bigf64", "c1", "c2",
                                          "sq:rten-axes"};
    static const char *const order13[] = {"i64", "b", "d", "big64", "bigf64", "axes", "c1",
                                          "c2"};
    assert_int_equal(tio_container_count(r), 8);
    for (size_t k = 0; k < 8; k++)
        assert_string_equal(tio_tensor_name(tio_container_tensor(r, k)),
                            (v13 ? order13 : order11)[k]);

    tio_graph *g = tio_container_graph(r);
    assert_int_equal(tio_graph_node_count(g), 8); /* the Constant ops are gone */
    tio_node_info n;
    assert_int_equal(tio_graph_node(g, 0, &n), TIO_OK);
    assert_string_equal(n.op, "Squeeze");
    assert_int_equal(n.attr_count, 0);
    assert_int_equal(n.input_count, 2);
    tio_value_info v;
    assert_int_equal(tio_graph_value(g, (size_t)n.inputs[1], &v), TIO_OK);
    assert_string_equal(v.name, axn);
    assert_int_equal(tio_graph_meta_count(g), 0); /* onnx.* dropped, no onnx_hash */
    tio_container_free(r);
    tio_free(buf);

    /* the source is untouched */
    const tio_tensor *t = tio_container_find(src, "i64");
    assert_int_equal(tio_tensor_dtype(t), TIO_INT64);
    assert_memory_equal(tio_tensor_data(t), i64v, sizeof i64v);
}

static void test_opset11_squeeze_attr(void **state) {
    (void)state;
    tio_container *c = build(false);
    check_written(c, false, 2);
    check_written(c, false, 1); /* V1: every constant inline, converted too */
    tio_container_free(c);
}

static void test_opset13_squeeze_input(void **state) {
    (void)state;
    tio_container *c = build(true);
    check_written(c, true, 2);
    check_written(c, true, 1);
    tio_container_free(c);
}

/* An attribute that moved to an input, given both ways, is refused; so is a
 * Constant without a value rten can hold; metadata other than onnx.* still is. */
static void test_refusals(void **state) {
    (void)state;
    tio_save_options so = {.format = "rten"};
    tio_container *c = build(true);
    tio_graph *g = tio_container_graph(c);
    tio_attr a = {.name = "axes", .type = TIO_ATTR_INTS, .count = 1, .ints = axes1};
    assert_int_equal(tio_graph_add_attr(g, 2, &a, &e), TIO_OK); /* sq */
    assert_int_equal(tio_check_save(c, &so, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "both an attribute 'axes' and input 1"));
    tio_container_free(c);

    c = build(false);
    g = tio_container_graph(c);
    int64_t o = add_value(g, "s", -1);
    size_t k = add_node(g, "ks", "Constant", NULL, 0, o);
    a = (tio_attr){.name = "value_string", .type = TIO_ATTR_STRING, .s = "x"};
    assert_int_equal(tio_graph_add_attr(g, k, &a, &e), TIO_OK);
    assert_int_equal(tio_check_save(c, &so, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "Constant has no value"));
    tio_container_free(c);

    c = build(false);
    assert_int_equal(tio_graph_meta_set(tio_container_graph(c), "author", "me", &e), TIO_OK);
    assert_int_equal(tio_check_save(c, &so, &e), TIO_E_LOSSY);
    tio_container_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_opset11_squeeze_attr),
        cmocka_unit_test(test_opset13_squeeze_input),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
