/*
 * ONNX -> TensorFlow Lite (src/tflite/lower.c) on graphs built with the API:
 * a small CNN written, read back as TFLite (operators, NHWC input, fused
 * activation, deterministic bytes), and what cannot be lowered refused with
 * one error naming the operators and nodes, or naming the node and why.
 * (Arm NN runs the lowered models in tests/formats/test_tflite_lower.py.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tensio.h"
#include "tflite/lower.h"
#include "tflite/schema.h"

typedef struct gb {
    tio_container *c;
    tio_graph *g;
    float buf[4096];
    size_t used;
} gb;

static gb *gb_new(void) {
    gb *b = calloc(1, sizeof *b);
    tio_error e;
    assert_non_null(b);
    b->c = tio_container_new();
    assert_non_null(b->c);
    assert_int_equal(tio_container_new_graph(b->c, &b->g, &e), TIO_OK);
    return b;
}

static void gb_free(gb *b) {
    tio_container_free(b->c);
    free(b);
}

/* A runtime value of the given dims (a NULL name in dims: named "N"). */
static int64_t rv(gb *b, const char *name, size_t rank, const int64_t *d, bool named0) {
    tio_dim dims[8];
    for (size_t k = 0; k < rank; k++) dims[k] = (tio_dim){d[k], k == 0 && named0 ? "N" : NULL};
    tio_value_info v = {.name = name, .dtype = TIO_FLOAT32, .rank = (int64_t)rank,
                        .dims = dims, .tensor = -1};
    size_t ix;
    tio_error e;
    assert_int_equal(tio_graph_add_value(b->g, &v, &ix, &e), TIO_OK);
    return (int64_t)ix;
}

/* n float32 values at p (borrowed) as a constant of the given dims. */
static int64_t add_const(gb *b, const char *name, size_t rank, const int64_t *d, const float *p,
                         size_t n) {
    tio_tensor_desc t = {.name = name, .dtype = TIO_FLOAT32, .rank = rank, .shape = d,
                         .layout = TIO_LAYOUT_DENSE, .data = p, .nbytes = n * 4};
    tio_tensor *tt;
    tio_error e;
    assert_int_equal(tio_container_add(b->c, &t, TIO_ADD_BORROW, &tt, &e), TIO_OK);
    tio_value_info v = {.name = name, .tensor = (int64_t)tio_container_count(b->c) - 1};
    size_t ix;
    assert_int_equal(tio_graph_add_value(b->g, &v, &ix, &e), TIO_OK);
    return (int64_t)ix;
}

/* A float32 constant of the given dims, values 0.01 * (i % 7 - 3). */
static int64_t cv(gb *b, const char *name, size_t rank, const int64_t *d) {
    size_t n = 1;
    for (size_t k = 0; k < rank; k++) n *= (size_t)d[k];
    assert_true(b->used + n <= sizeof b->buf / sizeof b->buf[0]);
    float *p = b->buf + b->used;
    for (size_t i = 0; i < n; i++) p[i] = 0.01f * (float)((int)(i % 7) - 3);
    b->used += n;
    return add_const(b, name, rank, d, p, n);
}

/* A float32 scalar constant. */
static int64_t scalar(gb *b, const char *name, float f) {
    int64_t d[1] = {1};
    int64_t v = cv(b, name, 0, d);
    b->buf[b->used - 1] = f;
    return v;
}

static size_t nd(gb *b, const char *name, const char *op, const char *domain, size_t nin,
                 const int64_t *in, int64_t out) {
    tio_node_info n = {.name = name, .op = op, .native_id = -1, .input_count = nin,
                       .inputs = in, .output_count = 1, .outputs = &out, .domain = domain};
    size_t ix;
    tio_error e;
    assert_int_equal(tio_graph_add_node(b->g, &n, &ix, &e), TIO_OK);
    return ix;
}

static void ints(gb *b, size_t node, const char *name, size_t n, const int64_t *v) {
    tio_attr a = {.name = name, .type = TIO_ATTR_INTS, .count = n, .ints = v};
    tio_error e;
    assert_int_equal(tio_graph_add_attr(b->g, node, &a, &e), TIO_OK);
}

static void one_int(gb *b, size_t node, const char *name, int64_t v) {
    tio_attr a = {.name = name, .type = TIO_ATTR_INT, .i = v};
    tio_error e;
    assert_int_equal(tio_graph_add_attr(b->g, node, &a, &e), TIO_OK);
}

static void io(gb *b, int64_t in, int64_t out) {
    tio_error e;
    assert_int_equal(tio_graph_set_inputs(b->g, &in, 1, &e), TIO_OK);
    assert_int_equal(tio_graph_set_outputs(b->g, &out, 1, &e), TIO_OK);
}

static int save(gb *b, const char *options, void **out, size_t *len, tio_error *e) {
    tio_save_options so = {.format = "tflite", .options = options};
    return tio_save_memory(b->c, &so, out, len, e);
}

/* x [1, 3, 8, 8] -> Conv 3x3 pad 1 -> Relu -> GlobalAveragePool -> Flatten -> Gemm */
static gb *small_cnn(int64_t group) {
    gb *b = gb_new();
    int64_t xd[4] = {1, 4, 8, 8}, wd[4] = {4, group > 1 ? 4 / group : 4, 3, 3}, bd[1] = {4},
            yd[4] = {1, 4, 8, 8}, pd[4] = {1, 4, 1, 1}, fd[2] = {1, 4}, gw[2] = {5, 4},
            gbd[1] = {5}, od[2] = {1, 5};
    int64_t x = rv(b, "x", 4, xd, false), w = cv(b, "w", 4, wd), bi = cv(b, "b", 1, bd),
            y = rv(b, "y", 4, yd, false), r = rv(b, "r", 4, yd, false),
            p = rv(b, "p", 4, pd, false), f = rv(b, "f", 2, fd, false), W = cv(b, "W", 2, gw),
            B = cv(b, "B", 1, gbd), o = rv(b, "out", 2, od, false);
    int64_t ci[3] = {x, w, bi}, gi[3] = {f, W, B};
    size_t conv = nd(b, "conv", "Conv", NULL, 3, ci, y);
    static const int64_t k[2] = {3, 3}, pads[4] = {1, 1, 1, 1};
    ints(b, conv, "kernel_shape", 2, k);
    ints(b, conv, "pads", 4, pads);
    if (group > 1) one_int(b, conv, "group", group);
    nd(b, "relu", "Relu", NULL, 1, &y, r);
    nd(b, "gap", "GlobalAveragePool", NULL, 1, &r, p);
    nd(b, "flat", "Flatten", NULL, 1, &p, f);
    size_t gm = nd(b, "fc", "Gemm", NULL, 3, gi, o);
    one_int(b, gm, "transB", 1);
    io(b, x, o);
    return b;
}

/* A saved .tflite's operators are want[0..n), in order. */
static void expect_ops(const void *out, size_t len, const char *const *want, size_t n) {
    tio_container *c = NULL;
    tio_error e;
    tio_open_options oo = {.format = "tflite", .flags = TIO_OPEN_NATIVE_GRAPH};
    assert_int_equal(tio_open_memory(out, len, &oo, &c, &e), TIO_OK);
    const tio_graph *g = tio_container_graph(c);
    assert_non_null(g);
    assert_int_equal(tio_graph_node_count(g), n);
    for (size_t k = 0; k < n; k++) {
        tio_node_info nd;
        assert_int_equal(tio_graph_node(g, k, &nd), TIO_OK);
        assert_string_equal(nd.native_op ? nd.native_op : nd.op, want[k]);
    }
    tio_container_free(c);
}

static void test_small_cnn(void **state) {
    (void)state;
    gb *b = small_cnn(1);
    void *out = NULL, *out2 = NULL;
    size_t len = 0, len2 = 0;
    tio_error e;
    assert_int_equal(save(b, NULL, &out, &len, &e), TIO_OK);
    assert_int_equal(save(b, NULL, &out2, &len2, &e), TIO_OK);
    assert_int_equal(len, len2);
    assert_memory_equal(out, out2, len); /* deterministic */
    tio_container *t = NULL;
    tio_open_options oo = {.format = "tflite", .flags = TIO_OPEN_NATIVE_GRAPH};
    assert_int_equal(tio_open_memory(out, len, &oo, &t, &e), TIO_OK);
    const tio_graph *g = tio_container_graph(t);
    assert_non_null(g);
    static const char *const want[] = {"CONV_2D", "MEAN", "RESHAPE", "FULLY_CONNECTED"};
    assert_int_equal(tio_graph_node_count(g), 4); /* the Relu fused, no TRANSPOSE */
    for (size_t k = 0; k < 4; k++) {
        tio_node_info n;
        assert_int_equal(tio_graph_node(g, k, &n), TIO_OK);
        assert_string_equal(n.native_op ? n.native_op : n.op, want[k]);
    }
    /* the input is NHWC */
    const int64_t *ins = tio_graph_inputs(g);
    assert_int_equal(tio_graph_input_count(g), 1);
    tio_value_info v;
    assert_int_equal(tio_graph_value(g, (size_t)ins[0], &v), TIO_OK);
    assert_string_equal(v.name, "x");
    assert_int_equal(v.rank, 4);
    assert_int_equal(v.dims[3].value, 4);
    assert_int_equal(v.dims[1].value, 8);
    tio_container_free(t);
    tio_free(out2);
    /* layout=nchw: the input as ONNX has it; fuse=0: the Relu its own */
    tio_free(out);
    assert_int_equal(save(b, "fuse=0,layout=nchw", &out, &len, &e), TIO_OK);
    assert_int_equal(tio_open_memory(out, len, &oo, &t, &e), TIO_OK);
    g = tio_container_graph(t);
    ins = tio_graph_inputs(g);
    assert_int_equal(tio_graph_value(g, (size_t)ins[0], &v), TIO_OK);
    assert_int_equal(v.dims[1].value, 4);
    assert_int_equal(tio_graph_node_count(g), 6); /* TRANSPOSE, CONV_2D, RELU, ... */
    tio_container_free(t);
    tio_free(out);
    /* bad option values */
    assert_int_equal(save(b, "fuse=2", &out, &len, &e), TIO_E_ARGUMENT);
    assert_non_null(strstr(e.message, "fuse=2"));
    assert_int_equal(save(b, "layout=nwhc", &out, &len, &e), TIO_E_ARGUMENT);
    assert_non_null(strstr(e.message, "layout=nwhc"));
    gb_free(b);
}

static void test_refused_node(void **state) {
    (void)state;
    /* a grouped Conv: SPLIT, a CONV_2D per group, CONCATENATION (Arm NN
     * runs it: regnet_x_400mf in tests/formats/test_tflite_lower.py) */
    gb *b = small_cnn(2);
    void *out = NULL;
    size_t len = 0;
    tio_error e;
    assert_int_equal(save(b, NULL, &out, &len, &e), TIO_OK);
    static const char *const want[] = {"SPLIT", "CONV_2D", "CONV_2D", "CONCATENATION", "MEAN",
                                       "RESHAPE", "FULLY_CONNECTED"};
    expect_ops(out, len, want, 7);
    tio_free(out);
    gb_free(b);
    /* groups that do not divide the channels */
    b = small_cnn(3);
    assert_int_equal(save(b, NULL, &out, &len, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "node 'conv' (Conv)"));
    assert_non_null(strstr(e.message, "group 3 of 4 channels"));
    gb_free(b);

    /* weights that are not constants */
    b = gb_new();
    int64_t xd[4] = {1, 2, 4, 4}, wd[4] = {2, 2, 1, 1};
    int64_t x = rv(b, "x", 4, xd, false), w = rv(b, "w", 4, wd, false),
            y = rv(b, "y", 4, xd, false);
    int64_t ci[2] = {x, w};
    size_t conv = nd(b, "c1", "Conv", NULL, 2, ci, y);
    static const int64_t k1[2] = {1, 1};
    ints(b, conv, "kernel_shape", 2, k1);
    tio_error e2;
    int64_t both[2] = {x, w};
    assert_int_equal(tio_graph_set_inputs(b->g, both, 2, &e2), TIO_OK);
    assert_int_equal(tio_graph_set_outputs(b->g, &y, 1, &e2), TIO_OK);
    assert_int_equal(save(b, NULL, &out, &len, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "node 'c1' (Conv): the weights must be"));
    gb_free(b);

    /* ConvTranspose (k 4, s 2, p 1, a bias): TRANSPOSE_CONV (VALID, to the
     * full size), ADD of the bias, STRIDED_SLICE cutting the pads off (Arm
     * NN runs it: the upsampler of tests/formats/test_tflite_lower.py);
     * with its output's size other than the pads leave, dilations 2, or
     * two groups: refused naming the node and why */
    for (int k = 0; k < 4; k++) {
        b = gb_new();
        int64_t td[4] = {1, 3, 5, 6}, twd[4] = {3, 2, 4, 4}, tbd[1] = {2},
                tyd[4] = {1, 2, 10, k == 1 ? 13 : 12};
        int64_t tx = rv(b, "x", 4, td, false), tw = cv(b, "w", 4, twd),
                tb = cv(b, "b", 1, tbd), ty = rv(b, "y", 4, tyd, false);
        int64_t ti[3] = {tx, tw, tb};
        size_t ct = nd(b, "ct", "ConvTranspose", NULL, 3, ti, ty);
        static const int64_t s2[2] = {2, 2}, p1[4] = {1, 1, 1, 1}, d2[2] = {2, 2};
        ints(b, ct, "strides", 2, s2);
        ints(b, ct, "pads", 4, p1);
        if (k == 2) ints(b, ct, "dilations", 2, d2);
        if (k == 3) one_int(b, ct, "group", 3);
        io(b, tx, ty);
        int rc = save(b, NULL, &out, &len, &e);
        if (k == 0) {
            assert_int_equal(rc, TIO_OK);
            static const char *const tw_ops[] = {"TRANSPOSE_CONV", "ADD", "STRIDED_SLICE"};
            expect_ops(out, len, tw_ops, 3);
            tio_free(out);
        } else {
            static const char *const why[4] = {
                NULL, "the output's size is not what the pads leave", "dilations other than 1",
                "group, channels"};
            assert_int_equal(rc, TIO_E_UNSUPPORTED);
            if (!strstr(e.message, "node 'ct' (ConvTranspose): ") || !strstr(e.message, why[k]))
                fail_msg("%d: %s", k, e.message);
        }
        gb_free(b);
    }

    /* (named dims: test_named_dims) */

    /* a dim past int32 */
    b = gb_new();
    int64_t big[2] = {1, (int64_t)1 << 33};
    x = rv(b, "x", 2, big, false);
    y = rv(b, "y", 2, big, false);
    nd(b, "r", "Relu", NULL, 1, &x, y);
    io(b, x, y);
    assert_int_equal(save(b, NULL, &out, &len, &e), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "graph input 'x': a dim past int32"));
    gb_free(b);
}

/* Clip with a lower bound only (the upper one absent): one RELU */
static void test_clip_relu(void **state) {
    (void)state;
    gb *b = gb_new();
    int64_t d[2] = {1, 4};
    int64_t x = rv(b, "x", 2, d, false), lo = scalar(b, "lo", 0.f), y = rv(b, "y", 2, d, false);
    int64_t in[3] = {x, lo, -1};
    nd(b, "clip", "Clip", NULL, 3, in, y);
    io(b, x, y);
    void *out = NULL;
    size_t len = 0;
    tio_error e;
    assert_int_equal(save(b, NULL, &out, &len, &e), TIO_OK);
    tio_container *t = NULL;
    tio_open_options oo = {.format = "tflite", .flags = TIO_OPEN_NATIVE_GRAPH};
    assert_int_equal(tio_open_memory(out, len, &oo, &t, &e), TIO_OK);
    const tio_graph *g = tio_container_graph(t);
    assert_int_equal(tio_graph_node_count(g), 1);
    tio_node_info n;
    assert_int_equal(tio_graph_node(g, 0, &n), TIO_OK);
    assert_string_equal(n.native_op ? n.native_op : n.op, "RELU");
    tio_container_free(t);
    tio_free(out);
    gb_free(b);
}

/* every operator without a TFLite form, and the nodes, in one error */
static void test_refused_ops(void **state) {
    (void)state;
    gb *b = gb_new();
    int64_t d[2] = {2, 3};
    int64_t x = rv(b, "x", 2, d, false), a = rv(b, "a", 2, d, false),
            c = rv(b, "c", 2, d, false), f = rv(b, "f", 2, d, false),
            h = rv(b, "h", 2, d, false), y = rv(b, "y", 2, d, false);
    nd(b, "erf1", "Erf", NULL, 1, &x, a);
    nd(b, "mine", "Foo", "com.example", 1, &a, c);
    size_t cast = nd(b, "cast", "Cast", NULL, 1, &c, f); /* not of float16 weights */
    one_int(b, cast, "to", 1);
    nd(b, "erf2", "Erf", NULL, 1, &f, h);
    nd(b, "er", "Er", NULL, 1, &h, y); /* a prefix of a type listed: its own */
    io(b, x, y);
    void *out = NULL;
    size_t len = 0;
    tio_error e;
    assert_int_equal(save(b, NULL, &out, &len, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "for Erf, Foo, Cast, Er (5 nodes: 'erf1', 'mine', "
                                      "'cast', 'erf2', 'er'"));
    gb_free(b);
}

/* ---------------------------------------------------------------- QDQ */

/* A constant of any dtype over bytes that outlive the container. */
static int64_t tcv(gb *b, const char *name, tio_dtype dt, size_t rank, const int64_t *d,
                   const void *data, size_t nbytes) {
    tio_tensor_desc t = {.name = name, .dtype = dt, .rank = rank, .shape = d,
                         .layout = TIO_LAYOUT_DENSE, .data = data, .nbytes = nbytes};
    tio_tensor *tt;
    tio_error e;
    assert_int_equal(tio_container_add(b->c, &t, TIO_ADD_BORROW, &tt, &e), TIO_OK);
    tio_value_info v = {.name = name, .tensor = (int64_t)tio_container_count(b->c) - 1};
    size_t ix;
    assert_int_equal(tio_graph_add_value(b->g, &v, &ix, &e), TIO_OK);
    return (int64_t)ix;
}

/* Q then DQ of x with (s, z): the dequantized value. */
static int64_t qdq(gb *b, const char *name, int64_t x, int64_t s, int64_t z, size_t rank,
                   const int64_t *d) {
    char qn[32], dn[32];
    snprintf(qn, sizeof qn, "%s_q", name);
    snprintf(dn, sizeof dn, "%s_dq", name);
    int64_t q = rv(b, qn, rank, d, false), f = rv(b, dn, rank, d, false);
    int64_t qi[3] = {x, s, z}, di[3] = {q, s, z};
    nd(b, qn, "QuantizeLinear", NULL, 3, qi, q);
    nd(b, dn, "DequantizeLinear", NULL, 3, di, f);
    return f;
}

/* Operator versions as TensorFlow's converter sets them (op_version.cc,
 * src/tflite/opversion.c), on operators built by hand, one rule each: the
 * variant a runtime needs (dilation, keep_num_dims, no bias, rank above 4,
 * broadcasting at rank 5, int8 and hybrid kernels, per-channel scales,
 * float16 and int8 DEQUANTIZE, a scale product >= 1), and each operator
 * code raised to the highest version of its operators, never lowered. */
static int32_t vt(tfl_wmodel *m, int32_t type, int32_t rank, const int32_t *shape,
                  const tfl_wquant *q) {
    tfl_wtensor t = {.type = type, .rank = rank, .shape = shape, .nsig = -1, .q = q};
    int32_t idx;
    tio_error e;
    assert_int_equal(tio__tfl_w_tensor(m, 0, &t, &idx, &e), TIO_OK);
    return idx;
}

static tfl_wop *vop(tfl_wmodel *m, int32_t builtin, uint8_t opt, const int32_t *in, size_t nin,
                    int32_t out) {
    uint32_t code;
    tfl_wop w = {.inputs = in, .nin = nin, .outputs = NULL, .nout = 1, .opt_type = opt,
                 .debug_metadata_index = -1};
    tfl_wop *op;
    tio_error e;
    int32_t *o = tio__tfl_w_alloc(m, sizeof *o);
    assert_non_null(o);
    *o = out;
    w.outputs = o;
    assert_int_equal(tio__tfl_w_code(m, builtin, NULL, 1, &code, &e), TIO_OK);
    w.opcode = code;
    assert_int_equal(tio__tfl_w_op(m, 0, &w, &op, &e), TIO_OK);
    return op;
}

static void vopt(tfl_wmodel *m, tfl_wop *op, const char *field, int64_t v) {
    tio_error e;
    assert_int_equal(tio__tfl_w_opt_i(m, op, false, field, v, &e), TIO_OK);
}

#define VIN(...) (const int32_t[]){__VA_ARGS__}, sizeof((const int32_t[]){__VA_ARGS__}) / 4
static void test_op_versions(void **state) {
    (void)state;
    static const int32_t s4[] = {1, 8, 8, 4}, s4g[] = {4, 3, 3, 2}, w4[] = {4, 3, 3, 4},
                         dw[] = {1, 3, 3, 4}, s2[] = {2, 4}, s5[] = {1, 2, 3, 4, 5},
                         s5b[] = {1, 1, 3, 4, 5}, s6[] = {1, 1, 2, 3, 4, 5}, b4[] = {4};
    static const float one[] = {0.5f}, four[] = {0.1f, 0.2f, 0.3f, 0.4f}, big[] = {2.0f};
    static const int64_t z1[] = {0}, z4[] = {0, 0, 0, 0};
    static const tfl_wquant q1 = {.scale = one, .nscale = 1, .zero_point = z1, .nzero_point = 1},
                            q4 = {.scale = four, .nscale = 4, .zero_point = z4, .nzero_point = 4},
                            q4d3 = {.scale = four, .nscale = 4, .zero_point = z4,
                                    .nzero_point = 4, .quantized_dimension = 3},
                            qb = {.scale = big, .nscale = 1, .zero_point = z1, .nzero_point = 1};
    const int32_t F = TFL_TensorType_FLOAT32, I8 = TFL_TensorType_INT8,
                  H = TFL_TensorType_FLOAT16, I32 = TFL_TensorType_INT32;
    tfl_wmodel m;
    tio_error e;
    tfl_wsubgraph *sg;
    assert_int_equal(tio__tfl_w_init(&m, &e), TIO_OK);
    assert_int_equal(tio__tfl_w_subgraph(&m, &sg, &e), TIO_OK);
    int32_t x = vt(&m, F, 4, s4, NULL), w = vt(&m, F, 4, w4, NULL), b = vt(&m, F, 1, b4, NULL),
            y = vt(&m, F, 4, s4, NULL), xq = vt(&m, I8, 4, s4, &q1), wq = vt(&m, I8, 4, w4, &q1),
            wqc = vt(&m, I8, 4, w4, &q4), yq = vt(&m, I8, 4, s4, &q1), bq = vt(&m, I32, 1, b4, &q1),
            wg = vt(&m, F, 4, s4g, NULL), wd = vt(&m, F, 4, dw, NULL),
            wdq = vt(&m, I8, 4, dw, &q4d3), m2 = vt(&m, F, 2, s2, NULL), w2 = vt(&m, F, 2, s2, NULL),
            x5 = vt(&m, F, 5, s5, NULL), x5b = vt(&m, F, 5, s5b, NULL), x6 = vt(&m, F, 6, s6, NULL),
            h = vt(&m, H, 4, w4, NULL), hq = vt(&m, I8, 4, dw, &q4d3), yb = vt(&m, I8, 4, s4, &qb);
    struct {
        size_t op; /* the index: the operators move as more are added */
        int32_t want;
        const char *what;
    } c[32];
    size_t n = 0;
#define V(o, v, s) (void)(o), c[n].op = m.subgraphs[0].nops - 1, c[n].want = (v), c[n++].what = (s)
    V(vop(&m, TFL_BuiltinOperator_CONV_2D, TFL_BuiltinOptions_Conv2DOptions, VIN(x, w, b), y), 1,
      "float CONV_2D");
    V(vop(&m, TFL_BuiltinOperator_CONV_2D, TFL_BuiltinOptions_Conv2DOptions, VIN(xq, wq, bq), yq),
      3, "int8 CONV_2D");
    V(vop(&m, TFL_BuiltinOperator_CONV_2D, TFL_BuiltinOptions_Conv2DOptions, VIN(x, wg, b), y), 6,
      "grouped CONV_2D (2 input channels a filter of 4)");
    V(vop(&m, TFL_BuiltinOperator_CONV_2D, TFL_BuiltinOptions_Conv2DOptions, VIN(x, wqc, b), y),
      5, "hybrid CONV_2D, per-channel");
    V(vop(&m, TFL_BuiltinOperator_CONV_2D, TFL_BuiltinOptions_Conv2DOptions, VIN(x, wq, b), y), 2,
      "hybrid CONV_2D");
    tfl_wop *d = vop(&m, TFL_BuiltinOperator_DEPTHWISE_CONV_2D,
                     TFL_BuiltinOptions_DepthwiseConv2DOptions, VIN(x, wd, b), y);
    V(d, 1, "float DEPTHWISE_CONV_2D");
    tfl_wop *dd = vop(&m, TFL_BuiltinOperator_DEPTHWISE_CONV_2D,
                      TFL_BuiltinOptions_DepthwiseConv2DOptions, VIN(x, wd, b), y);
    vopt(&m, dd, "dilation_h_factor", 2);
    V(dd, 2, "DEPTHWISE_CONV_2D with dilation");
    V(vop(&m, TFL_BuiltinOperator_DEPTHWISE_CONV_2D, TFL_BuiltinOptions_DepthwiseConv2DOptions,
          VIN(x, wdq, b), y),
      6, "hybrid DEPTHWISE_CONV_2D, per-channel");
    V(vop(&m, TFL_BuiltinOperator_FULLY_CONNECTED, TFL_BuiltinOptions_FullyConnectedOptions,
          VIN(m2, w2, -1), m2),
      1, "FULLY_CONNECTED, no bias given as -1");
    V(vop(&m, TFL_BuiltinOperator_FULLY_CONNECTED, TFL_BuiltinOptions_FullyConnectedOptions,
          VIN(m2, w2), m2),
      6, "FULLY_CONNECTED of two inputs");
    tfl_wop *fk = vop(&m, TFL_BuiltinOperator_FULLY_CONNECTED,
                      TFL_BuiltinOptions_FullyConnectedOptions, VIN(m2, w2, -1), m2);
    vopt(&m, fk, "keep_num_dims", 1);
    V(fk, 5, "FULLY_CONNECTED keep_num_dims");
    V(vop(&m, TFL_BuiltinOperator_FULLY_CONNECTED, TFL_BuiltinOptions_FullyConnectedOptions,
          VIN(xq, wq, bq), yq),
      4, "int8 FULLY_CONNECTED");
    V(vop(&m, TFL_BuiltinOperator_TRANSPOSE, 0, VIN(x5, b), x5), 4, "TRANSPOSE of rank 5");
    V(vop(&m, TFL_BuiltinOperator_TRANSPOSE, 0, VIN(x6, b), x6), 6, "TRANSPOSE of rank 6");
    V(vop(&m, TFL_BuiltinOperator_TRANSPOSE, 0, VIN(xq, b), yq), 2, "int8 TRANSPOSE");
    V(vop(&m, TFL_BuiltinOperator_STRIDED_SLICE, TFL_BuiltinOptions_StridedSliceOptions,
          VIN(x5, b, b, b), x5),
      4, "STRIDED_SLICE of rank 5");
    V(vop(&m, TFL_BuiltinOperator_PAD, 0, VIN(x5, b), x5), 4, "PAD of rank 5");
    V(vop(&m, TFL_BuiltinOperator_MAXIMUM, 0, VIN(x5, x5b), x5), 3,
      "MAXIMUM broadcast at rank 5");
    V(vop(&m, TFL_BuiltinOperator_MAXIMUM, 0, VIN(x5, x5), x5), 1, "MAXIMUM, same shapes");
    V(vop(&m, TFL_BuiltinOperator_DIV, 0, VIN(x5, x5b), x5), 2, "DIV broadcast at rank 5");
    V(vop(&m, TFL_BuiltinOperator_SUB, 0, VIN(x5b, x5), x5), 3, "SUB broadcast at rank 5");
    V(vop(&m, TFL_BuiltinOperator_TRANSPOSE_CONV, TFL_BuiltinOptions_TransposeConvOptions,
          VIN(b, w, x, b), y),
      3, "TRANSPOSE_CONV with a bias");
    V(vop(&m, TFL_BuiltinOperator_TRANSPOSE_CONV, TFL_BuiltinOptions_TransposeConvOptions,
          VIN(b, w, x, -1), y),
      1, "TRANSPOSE_CONV without");
    V(vop(&m, TFL_BuiltinOperator_DEQUANTIZE, 0, VIN(h), w), 3, "float16 DEQUANTIZE");
    V(vop(&m, TFL_BuiltinOperator_DEQUANTIZE, 0, VIN(xq), x), 2, "int8 DEQUANTIZE");
    V(vop(&m, TFL_BuiltinOperator_DEQUANTIZE, 0, VIN(hq), wd), 5, "int8 DEQUANTIZE, per-channel");
    V(vop(&m, TFL_BuiltinOperator_MUL, TFL_BuiltinOptions_MulOptions, VIN(xq, yb), yq), 3,
      "int8 MUL, scales 0.5 * 2 / 0.5 >= 1");
    V(vop(&m, TFL_BuiltinOperator_MUL, TFL_BuiltinOptions_MulOptions, VIN(xq, xq), yq), 2,
      "int8 MUL");
    V(vop(&m, TFL_BuiltinOperator_RESHAPE, 0, VIN(xq, b), yq), 1, "RESHAPE");
    V(vop(&m, TFL_BuiltinOperator_SOFTMAX, 0, VIN(xq), yq), 2, "int8 SOFTMAX");
#undef V
    sg = &m.subgraphs[0];
    for (size_t k = 0; k < n; k++) {
        int32_t got = tio__tfl_op_version(&m, sg, &sg->ops[c[k].op]);
        if (got != c[k].want) fail_msg("%s: version %d, expected %d", c[k].what, got, c[k].want);
    }
    /* each code at the highest version of its operators (all were 1) */
    tio__tfl_w_versions(&m);
    int32_t hi[256] = {0};
    for (size_t k = 0; k < n; k++) {
        int32_t bc = m.codes[sg->ops[c[k].op].opcode].builtin;
        if (bc >= 0 && bc < 256 && c[k].want > hi[bc]) hi[bc] = c[k].want;
    }
    for (size_t k = 0; k < m.ncodes; k++)
        assert_int_equal(m.codes[k].version, hi[m.codes[k].builtin]);
    /* never lowered: a code set above its operators keeps its version */
    m.codes[sg->ops[c[0].op].opcode].version = 9;
    tio__tfl_w_versions(&m);
    assert_int_equal(m.codes[sg->ops[c[0].op].opcode].version, 9);
    tio__tfl_w_free(&m);
}

/* The model's min_runtime_version (src/tflite/rtversion.c), as TensorFlow's
 * converter sets it: the latest runtime among its operator codes' versions
 * (runtime_version.cc's table; versions ordered by number, so 1.14.0 comes
 * after 1.6.0 and 2.0.0 after both), a version the table lacks passed over,
 * in 16 NUL-padded bytes; added after the container's metadata, or replacing
 * the value of a container's entry of that name. */
static const uint8_t *mrv(const tfl_wmodel *m, size_t *entry) {
    for (size_t i = 0; i < m->nmetadata; i++)
        if (strcmp(m->metadata[i].name, "min_runtime_version") == 0) {
            const tfl_wbuffer *b = &m->buffers[m->metadata[i].buffer];
            assert_int_equal(b->size, 16);
            assert_non_null(b->data);
            *entry = i;
            return b->data;
        }
    fail_msg("no min_runtime_version entry");
    return NULL;
}

static void test_min_runtime(void **state) {
    (void)state;
    assert_string_equal(tio__tfl_runtime_version(TFL_BuiltinOperator_CONV_2D, 3), "1.14.0");
    assert_string_equal(tio__tfl_runtime_version(TFL_BuiltinOperator_FULLY_CONNECTED, 5),
                        "2.0.0");
    assert_string_equal(tio__tfl_runtime_version(TFL_BuiltinOperator_DEQUANTIZE, 3), "1.15.0");
    assert_string_equal(tio__tfl_runtime_version(TFL_BuiltinOperator_SPLIT_V, 1), "1.13.1");
    assert_null(tio__tfl_runtime_version(TFL_BuiltinOperator_TRANSPOSE, 6)); /* none */
    assert_null(tio__tfl_runtime_version(TFL_BuiltinOperator_EXP, 2));
    assert_null(tio__tfl_runtime_version(TFL_BuiltinOperator_CONV_2D, 0));
    static const int32_t s4[] = {1, 2, 2, 4};
    static const char *const keys[] = {"a", "min_runtime_version"};
    for (int own = 0; own < 2; own++) {
        tfl_wmodel m;
        tio_error e;
        tfl_wsubgraph *sg;
        assert_int_equal(tio__tfl_w_init(&m, &e), TIO_OK);
        assert_int_equal(tio__tfl_w_subgraph(&m, &sg, &e), TIO_OK);
        /* the container's metadata: "a", and with `own` a stale value */
        m.metadata = tio__tfl_w_alloc(&m, 2 * sizeof *m.metadata);
        assert_non_null(m.metadata);
        for (size_t k = 0; k <= (size_t)own; k++) {
            m.metadata[k].name = keys[k];
            assert_int_equal(tio__tfl_w_buffer(&m, -1, (const uint8_t *)"9.9.9", 5,
                                               &m.metadata[k].buffer, &e),
                             TIO_OK);
            m.nmetadata++;
        }
        size_t entry, want_entry = own ? 1 : m.nmetadata;
        /* no operators: an empty text */
        assert_int_equal(tio__tfl_w_min_runtime(&m, &e), TIO_OK);
        assert_memory_equal(mrv(&m, &entry), "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16);
        assert_int_equal(entry, want_entry);
        assert_int_equal(m.nmetadata, 2);
        assert_string_equal(m.metadata[0].name, "a"); /* the container's first */
        int32_t x = vt(&m, TFL_TensorType_FLOAT32, 4, s4, NULL);
        (void)vop(&m, TFL_BuiltinOperator_RESHAPE, 0, VIN(x), x);       /* 1.5.0 */
        (void)vop(&m, TFL_BuiltinOperator_SUB, 0, VIN(x, x), x);        /* 1.6.0 */
        assert_int_equal(tio__tfl_w_min_runtime(&m, &e), TIO_OK);
        assert_memory_equal(mrv(&m, &entry), "1.6.0\0\0\0\0\0\0\0\0\0\0\0", 16);
        (void)vop(&m, TFL_BuiltinOperator_CONV_2D, 0, VIN(x, x), x);
        m.codes[m.ncodes - 1].version = 3; /* 1.14.0: after 1.6.0 */
        (void)vop(&m, TFL_BuiltinOperator_TRANSPOSE, 0, VIN(x, x), x);
        m.codes[m.ncodes - 1].version = 6; /* not in the table: passed over */
        assert_int_equal(tio__tfl_w_min_runtime(&m, &e), TIO_OK);
        assert_memory_equal(mrv(&m, &entry), "1.14.0\0\0\0\0\0\0\0\0\0\0", 16);
        (void)vop(&m, TFL_BuiltinOperator_FULLY_CONNECTED, 0, VIN(x, x), x);
        m.codes[m.ncodes - 1].version = 5; /* 2.0.0 */
        assert_int_equal(tio__tfl_w_min_runtime(&m, &e), TIO_OK);
        assert_memory_equal(mrv(&m, &entry), "2.0.0\0\0\0\0\0\0\0\0\0\0\0", 16);
        assert_int_equal(entry, want_entry);
        assert_int_equal(m.nmetadata, 2); /* one entry, however often set */
        tio__tfl_w_free(&m);
    }
}
#undef VIN


/* x [1, 4, 4, 4] float -> Q/DQ -> Conv 1x1 'qc' (int8 weights, zero point
 * wz) -> Q/DQ -> Sigmoid 'qsig' -> Q/DQ (scale so, zero point -128) */
static gb *qdq_conv(int8_t wz, float so, float bs) {
    static const int8_t w[16] = {1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12, 13, -14, 15, -16};
    static const float xs = 0.05f, ws = 0.01f, ys = 0.1f;
    static int8_t z0 = 0, zm = -128, wzs;
    static float sos;
    wzs = wz;
    sos = so;
    gb *b = gb_new();
    int64_t xd[4] = {1, 4, 4, 4}, wd[4] = {4, 4, 1, 1}, none[1] = {1};
    int64_t x = rv(b, "x", 4, xd, false), y = rv(b, "y", 4, xd, false),
            sg = rv(b, "sg", 4, xd, false), wf = rv(b, "wf", 4, wd, false);
    int64_t s_x = tcv(b, "s_x", TIO_FLOAT32, 0, none, &xs, 4),
            s_w = tcv(b, "s_w", TIO_FLOAT32, 0, none, &ws, 4),
            s_y = tcv(b, "s_y", TIO_FLOAT32, 0, none, &ys, 4),
            s_o = tcv(b, "s_o", TIO_FLOAT32, 0, none, &sos, 4),
            z_0 = tcv(b, "z_0", TIO_INT8, 0, none, &z0, 1),
            z_m = tcv(b, "z_m", TIO_INT8, 0, none, &zm, 1),
            z_w = tcv(b, "z_w", TIO_INT8, 0, none, &wzs, 1),
            wq = tcv(b, "w", TIO_INT8, 4, wd, w, sizeof w);
    int64_t xf = qdq(b, "in", x, s_x, z_0, 4, xd);
    int64_t wi[3] = {wq, s_w, z_w};
    nd(b, "w_dq", "DequantizeLinear", NULL, 3, wi, wf);
    /* a bias of scale bs (0: none) */
    static const int32_t bias[4] = {10, -20, 30, -40};
    static const int32_t bz = 0;
    static float bss;
    bss = bs;
    int64_t bd[1] = {4}, bf = rv(b, "bf", 1, bd, false);
    int64_t bqi[3] = {tcv(b, "bias", TIO_INT32, 1, bd, bias, sizeof bias),
                      tcv(b, "s_b", TIO_FLOAT32, 0, none, &bss, 4),
                      tcv(b, "z_b", TIO_INT32, 0, none, &bz, 4)};
    if (bs > 0) nd(b, "b_dq", "DequantizeLinear", NULL, 3, bqi, bf);
    int64_t ci[3] = {xf, wf, bf};
    size_t conv = nd(b, "qc", "Conv", NULL, bs > 0 ? 3 : 2, ci, y);
    static const int64_t k[2] = {1, 1};
    ints(b, conv, "kernel_shape", 2, k);
    int64_t yf = qdq(b, "y", y, s_y, z_0, 4, xd);
    nd(b, "qsig", "Sigmoid", NULL, 1, &yf, sg);
    int64_t of = qdq(b, "out", sg, s_o, z_m, 4, xd);
    io(b, x, of);
    return b;
}

static void test_qdq(void **state) {
    (void)state;
    void *out = NULL, *out2 = NULL;
    size_t len = 0, len2 = 0;
    tio_error e;
    /* lowered: deterministic, and its operators QUANTIZE, CONV_2D, LOGISTIC,
     * DEQUANTIZE (the Q/DQ pairs folded) */
    gb *b = qdq_conv(0, 1.0f / 256, 0.05f * 0.01f);
    assert_int_equal(save(b, NULL, &out, &len, &e), TIO_OK);
    assert_int_equal(save(b, NULL, &out2, &len2, &e), TIO_OK);
    assert_int_equal(len, len2);
    assert_memory_equal(out, out2, len);
    gb_free(b);
    static const char *const want[] = {"QUANTIZE", "CONV_2D", "LOGISTIC", "DEQUANTIZE"};
    expect_ops(out, len, want, 4);
    tio_free(out);
    tio_free(out2);

    /* refused: every pattern named in one error */
    b = qdq_conv(3, 0.1f, 0);
    assert_int_equal(save(b, NULL, &out, &len, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "the QDQ model has 2 patterns"));
    assert_non_null(strstr(e.message, "node 'qc' (Conv): int8 weight zero point 3"));
    assert_non_null(strstr(e.message, "node 'qsig' (Sigmoid): output scale 0.1"));
    gb_free(b);

    /* a bias whose scale is not input x weight */
    b = qdq_conv(0, 1.0f / 256, 0.125f);
    assert_int_equal(save(b, NULL, &out, &len, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "node 'qc' (Conv): bias 0: scale 0.125"));
    gb_free(b);

    /* a scale of 0, and a DequantizeLinear of a float graph input */
    b = gb_new();
    static const float zero = 0.0f, half = 0.5f;
    static const int8_t z8 = 0;
    int64_t d[2] = {1, 4}, none[1] = {1};
    int64_t x = rv(b, "x", 2, d, false), q = rv(b, "q", 2, d, false),
            f = rv(b, "f", 2, d, false), sum = rv(b, "sum", 2, d, false),
            s0 = tcv(b, "s0", TIO_FLOAT32, 0, none, &zero, 4),
            s1 = tcv(b, "s1", TIO_FLOAT32, 0, none, &half, 4),
            z = tcv(b, "z", TIO_INT8, 0, none, &z8, 1);
    int64_t qi[3] = {x, s0, z}, di[3] = {q, s1, z}, fi[2] = {f, x};
    nd(b, "q0", "QuantizeLinear", NULL, 3, qi, q);
    nd(b, "dq1", "DequantizeLinear", NULL, 3, di, f);
    nd(b, "add", "Add", NULL, 2, fi, sum);
    io(b, x, sum);
    assert_int_equal(save(b, NULL, &out, &len, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "node 'q0' (QuantizeLinear): scale 0 (positive"));
    assert_non_null(strstr(e.message, "node 'dq1' (DequantizeLinear): dequantizes 'q'"));
    gb_free(b);
}

/* The strided reorder behind permuted weights: whole, and in pieces from any
 * element (a generated buffer writes it piece by piece), equals the index
 * formula, for 2-, 3- and 4-D orders and 1-, 2- and 4-byte elements; the
 * transposing orders (MatMul's, FC's from a flattened NHWC input) of 16
 * columns and more go by bands and tiles (lower_w.c perm_rows): tiles cut
 * short on both sides, pieces that start and end inside rows, and more rows
 * than one band (1,024 of 4-byte elements, 2,048 of 2-byte). */
static void test_perm_pieces(void **state) {
    (void)state;
    static const struct {
        int nd;
        int64_t d[4];
        int64_t s[4];
    } cases[] = {
        {4, {5, 3, 3, 7}, {63, 3, 1, 9}},    /* OIHW -> OHWI: O 5, I 7, 3x3 */
        {3, {3, 2, 6}, {2, 1, 6}},           /* depthwise -> 1HWO: O 6, 3x2 */
        {2, {4, 9}, {1, 4}},                 /* MatMul [9, 4] -> [4, 9] */
        {4, {3, 2, 2, 5}, {20, 2, 1, 4}},    /* FC columns H, W, C: C 5, 2x2 */
        {4, {1, 1, 1, 1}, {1, 1, 1, 1}},
        {2, {70, 37}, {1, 70}},              /* MatMul [37, 70] -> [70, 37]: tiles */
        {2, {16, 16}, {1, 16}},              /* one tile */
        {4, {20, 2, 3, 3}, {1, 60, 20, 120}}, /* FC H, W, C from MatMul: C 3, 2x3 */
        {2, {2100, 17}, {1, 2100}},          /* bands: 3 of 4-byte elements, 2 of 2-byte */
    };
    enum { PERM_MAX = 4 * 2100 * 17 };
    uint8_t *src = malloc(PERM_MAX), *whole = malloc(PERM_MAX), *parts = malloc(PERM_MAX),
            *want = malloc(PERM_MAX);
    assert_true(src && whole && parts && want);
    for (size_t i = 0; i < PERM_MAX; i++) src[i] = (uint8_t)(i * 37u + 11u + (i >> 8));
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (size_t es = 1; es <= 4; es *= 2) {
            tio_tl_perm p;
            memset(&p, 0, sizeof p);
            p.src = src;
            p.es = es;
            p.nd = cases[c].nd;
            size_t n = 1;
            for (int k = 0; k < p.nd; k++) {
                p.d[k] = cases[c].d[k];
                p.s[k] = cases[c].s[k];
                n *= (size_t)p.d[k];
            }
            for (size_t j = 0; j < n; j++) {
                size_t rest = j, at = 0;
                for (int k = p.nd - 1; k >= 0; k--) {
                    at += (rest % (size_t)p.d[k]) * (size_t)p.s[k];
                    rest /= (size_t)p.d[k];
                }
                memcpy(want + j * es, src + at * es, es);
            }
            tio__tl_perm_copy(&p, 0, n, whole);
            assert_memory_equal(whole, want, n * es);
            /* every third piece size of the small orders; for the large one
             * pieces about a row, a few rows, a band and a half */
            size_t row = n / (size_t)p.d[0];
            size_t steps[] = {row - 1, row + 1, 3 * row + 5, 1536 * row + 7, n - 1};
            size_t nsteps = n <= 400 ? (n + 2) / 3 : sizeof steps / sizeof steps[0];
            for (size_t q = 0; q < nsteps; q++) {
                size_t step = n <= 400 ? 1 + 3 * q : steps[q];
                memset(parts, 0xee, n * es);
                for (size_t j = 0; j < n; j += step)
                    tio__tl_perm_copy(&p, j, n - j < step ? n - j : step, parts + j * es);
                assert_memory_equal(parts, want, n * es);
            }
        }
    }
    free(src);
    free(whole);
    free(parts);
    free(want);
}

/* A float32 constant of malloc'd values (freed with the container's graph
 * builder by the caller): value i of constant `seed` is a hash of both. */
static int64_t big_cv(gb *b, const char *name, size_t rank, const int64_t *d, float **keep,
                      unsigned seed) {
    size_t n = 1;
    for (size_t k = 0; k < rank; k++) n *= (size_t)d[k];
    float *p = malloc(n * sizeof *p);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)(((uint32_t)i * 2654435761u + seed * 40503u) >> 8) * 1e-6f;
    *keep = p;
    return add_const(b, name, rank, d, p, n);
}

/* The TFLite tensor of shape d[0..4), or NULL. */
static const tio_tensor *by_shape(const tio_container *c, const int64_t *d) {
    for (size_t i = 0; i < tio_container_count(c); i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        if (tio_tensor_rank(t) == 4 && !memcmp(tio_tensor_shape(t), d, 4 * sizeof *d)) return t;
    }
    return NULL;
}

/* ONNX -> TFLite from a file: each Conv's weights permuted OIHW -> OHWI (and
 * a depthwise one -> 1HWO) as they are written, read from the source file
 * in pieces (an output channel's 288 B, a piece holding 910 of them), as one
 * output channel larger than a piece (262,800 B), and whole (the depthwise
 * weight, whose output channels are not contiguous in the source); and the
 * same from memory (no file to read: the mapping). The bytes are checked
 * against the index formula. */
static void test_file_weights(void **state) {
    (void)state;
    enum { CI = 7300, C1 = 8, C2 = 1000 };
    gb *b = gb_new();
    float *wa, *wb, *wc;
    int64_t xd[4] = {1, CI, 4, 4}, ad[4] = {C1, CI, 3, 3}, y1d[4] = {1, C1, 4, 4},
            bd[4] = {C2, C1, 3, 3}, y2d[4] = {1, C2, 4, 4}, cd[4] = {C2, 1, 3, 3};
    int64_t x = rv(b, "x", 4, xd, false), a = big_cv(b, "wa", 4, ad, &wa, 1),
            y1 = rv(b, "y1", 4, y1d, false), bw = big_cv(b, "wb", 4, bd, &wb, 2),
            y2 = rv(b, "y2", 4, y2d, false), cw = big_cv(b, "wc", 4, cd, &wc, 3),
            y3 = rv(b, "y3", 4, y2d, false);
    static const int64_t k[2] = {3, 3}, pads[4] = {1, 1, 1, 1};
    int64_t i1[2] = {x, a}, i2[2] = {y1, bw}, i3[2] = {y2, cw};
    size_t n1 = nd(b, "ca", "Conv", NULL, 2, i1, y1), n2 = nd(b, "cb", "Conv", NULL, 2, i2, y2),
           n3 = nd(b, "cc", "Conv", NULL, 2, i3, y3);
    size_t convs[3] = {n1, n2, n3};
    for (size_t i = 0; i < 3; i++) {
        ints(b, convs[i], "kernel_shape", 2, k);
        ints(b, convs[i], "pads", 4, pads);
    }
    one_int(b, n3, "group", C2);
    io(b, x, y3);
    char dir[] = "/tmp/tio_tl_weights_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char on[64], tf[64];
    snprintf(on, sizeof on, "%s/m.onnx", dir);
    snprintf(tf, sizeof tf, "%s/m.tflite", dir);
    tio_error e;
    tio_save_options so = {.format = "onnx", .flags = TIO_SAVE_NO_SYNC};
    assert_int_equal(tio_save(b->c, on, &so, &e), TIO_OK);
    tio_container *src = NULL, *t = NULL;
    assert_int_equal(tio_open(on, NULL, &src, &e), TIO_OK);
    so.format = "tflite";
    int rc = tio_save(src, tf, &so, &e);
    if (rc) fprintf(stderr, "%s\n", e.message);
    assert_int_equal(rc, TIO_OK);
    void *mem = NULL;
    size_t len = 0;
    assert_int_equal(tio_save_memory(b->c, &so, &mem, &len, &e), TIO_OK);
    const float *w[3] = {wa, wb, wc};
    const int64_t *od[3] = {ad, bd, cd};
    for (int pass = 0; pass < 2; pass++) {
        tio_open_options oo = {.format = "tflite", .flags = TIO_OPEN_NATIVE_GRAPH};
        if (pass == 0) assert_int_equal(tio_open(tf, &oo, &t, &e), TIO_OK);
        else assert_int_equal(tio_open_memory(mem, len, &oo, &t, &e), TIO_OK);
        for (size_t i = 0; i < 3; i++) {
            int64_t O = od[i][0], I = od[i][1], dw = i == 2;
            int64_t want[4] = {dw ? 1 : O, 3, 3, dw ? O : I};
            const tio_tensor *wt = by_shape(t, want);
            assert_non_null(wt);
            const float *got = tio_tensor_data(wt);
            size_t bad = 0;
            for (int64_t o = 0; o < O; o++)
                for (int64_t y = 0; y < 3; y++)
                    for (int64_t xx = 0; xx < 3; xx++)
                        for (int64_t c = 0; c < I; c++) {
                            float v = w[i][((o * I + c) * 3 + y) * 3 + xx];
                            size_t at = dw ? (size_t)((y * 3 + xx) * O + o)
                                           : (size_t)(((o * 3 + y) * 3 + xx) * I + c);
                            bad += memcmp(&got[at], &v, 4) != 0;
                        }
            assert_int_equal(bad, 0);
        }
        tio_container_free(t);
    }
    /* the same bytes both ways */
    FILE *f = fopen(tf, "rb");
    assert_non_null(f);
    uint8_t *fb = malloc(len + 1);
    assert_non_null(fb);
    assert_int_equal(fread(fb, 1, len + 1, f), len);
    fclose(f);
    assert_memory_equal(fb, mem, len);
    free(fb);
    tio_free(mem);
    tio_container_free(src);
    remove(on);
    remove(tf);
    rmdir(dir);
    gb_free(b);
    free(wa);
    free(wb);
    free(wc);
}

/* The graph input's dims, read back from a saved model. */
static void input_dims(const void *out, size_t len, const char *fmt, int64_t *d, int64_t *rank) {
    tio_container *t = NULL;
    tio_error e;
    tio_open_options oo = {.format = fmt, .flags = TIO_OPEN_NATIVE_GRAPH};
    assert_int_equal(tio_open_memory(out, len, &oo, &t, &e), TIO_OK);
    const tio_graph *g = tio_container_graph(t);
    assert_non_null(g);
    assert_int_equal(tio_graph_input_count(g), 1);
    tio_value_info v;
    assert_int_equal(tio_graph_value(g, (size_t)tio_graph_inputs(g)[0], &v), TIO_OK);
    *rank = v.rank;
    for (int64_t k = 0; k < v.rank; k++) {
        assert_null(v.dims[k].name);
        d[k] = v.dims[k].value;
    }
    tio_container_free(t);
}

/* Named dims (dynamic axes): the graph input's leading one is a batch of 1,
 * others must be given by the write option dims=NAME:N[;NAME:N...] (the
 * error says so), which also overrides the batch; bad values refused; the
 * same for tmfile (the graph layer's preparation both lowerings share). */
static void test_named_dims(void **state) {
    (void)state;
    gb *b = gb_new();
    tio_dim xd[2] = {{-1, "N"}, {-1, "S"}};
    tio_value_info xi = {.name = "x", .dtype = TIO_FLOAT32, .rank = 2, .dims = xd, .tensor = -1};
    tio_value_info yi = {.name = "y", .dtype = TIO_FLOAT32, .rank = 2, .dims = xd, .tensor = -1};
    size_t xv, yv;
    tio_error e;
    assert_int_equal(tio_graph_add_value(b->g, &xi, &xv, &e), TIO_OK);
    assert_int_equal(tio_graph_add_value(b->g, &yi, &yv, &e), TIO_OK);
    int64_t in = (int64_t)xv;
    nd(b, "relu", "Relu", NULL, 1, &in, (int64_t)yv);
    io(b, (int64_t)xv, (int64_t)yv);
    void *out = NULL;
    size_t len = 0;
    /* S has no size: refused, naming the input and the option */
    assert_int_equal(save(b, NULL, &out, &len, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "graph input 'x' has no static shape"));
    assert_non_null(strstr(e.message, "dims=NAME:N"));
    static const struct {
        const char *opt;
        int64_t n, s;
    } ok[] = {{"dims=S:5", 1, 5}, {"dims=S:5;N:3", 3, 5}, {"dims=N:2;S:7;", 2, 7}};
    static const char *const fmts[] = {"tflite", "tmfile"};
    for (size_t f = 0; f < 2; f++)
        for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
            tio_save_options so = {.format = fmts[f], .options = ok[k].opt};
            assert_int_equal(tio_save_memory(b->c, &so, &out, &len, &e), TIO_OK);
            int64_t d[8], r;
            input_dims(out, len, fmts[f], d, &r);
            assert_int_equal(r, 2);
            assert_int_equal(d[0], ok[k].n);
            assert_int_equal(d[1], ok[k].s);
            tio_free(out);
        }
    static const char *const bad[] = {"dims=S",      "dims=:5",   "dims=S:0",
                                      "dims=S:-1",   "dims=S:5x", "dims=S:2147483648",
                                      "dims=;S:5",   "dims=S:"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        assert_int_equal(save(b, bad[k], &out, &len, &e), TIO_E_ARGUMENT);
        assert_non_null(strstr(e.message, "expected NAME:N"));
    }
    /* a misspelt or repeated name: an error, not the batch silently left at 1 */
    for (size_t f = 0; f < 2; f++) {
        tio_save_options so = {.format = fmts[f], .options = "dims=S:5;Nn:2"};
        assert_int_equal(tio_save_memory(b->c, &so, &out, &len, &e), TIO_E_ARGUMENT);
        assert_non_null(strstr(e.message, "no value of the graph has a dim named \"Nn\""));
        so.options = "dims=S:5;N:2;S:6";
        assert_int_equal(tio_save_memory(b->c, &so, &out, &len, &e), TIO_E_ARGUMENT);
        assert_non_null(strstr(e.message, "dim \"S\" is given twice"));
    }
    gb_free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_cnn),
        cmocka_unit_test(test_perm_pieces),
        cmocka_unit_test(test_file_weights),
        cmocka_unit_test(test_named_dims),
        cmocka_unit_test(test_refused_node),
        cmocka_unit_test(test_refused_ops),
        cmocka_unit_test(test_clip_relu),
        cmocka_unit_test(test_qdq),
        cmocka_unit_test(test_op_versions),
        cmocka_unit_test(test_min_runtime),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
