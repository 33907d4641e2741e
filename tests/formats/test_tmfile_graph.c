/* Tengine tmfile graphs through the public API: graphs from other formats
 * (fused and not), writer refusals, private attributes, dtypes, rten and ONNX
 * round trips, the op map, the raised vectors, Relu6/Clip, Pad and
 * multi-axis Slice. The vectors, write-back and hostile input: test_tmfile.c. */
#include "tmfile_common.h"

/* ------------------------------------------------ graphs through the API */

static void add_const(tio_container *c, tio_graph *g, const char *name, const int64_t *shape,
                      size_t rank, const float *data, size_t n, size_t *v) {
    tio_tensor_desc d = {0};
    tio_error e;
    d.name = name;
    d.dtype = TIO_FLOAT32;
    d.rank = rank;
    d.shape = shape;
    d.data = data;
    d.nbytes = n * sizeof *data;
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
    tio_value_info vi = {0};
    vi.name = name;
    vi.tensor = (int64_t)tio_container_count(c) - 1;
    assert_int_equal(tio_graph_add_value(g, &vi, v, &e), TIO_OK);
}

static size_t add_value(tio_graph *g, const char *name, const int64_t *dims, int64_t rank) {
    tio_dim d[16];
    for (int64_t k = 0; k < rank; k++) d[k].value = dims[k], d[k].name = NULL;
    tio_value_info vi = {0};
    vi.name = name;
    vi.tensor = -1;
    vi.dtype = TIO_FLOAT32;
    vi.rank = rank;
    vi.dims = rank > 0 ? d : NULL;
    size_t v;
    tio_error e;
    assert_int_equal(tio_graph_add_value(g, &vi, &v, &e), TIO_OK);
    return v;
}

static size_t add_node(tio_graph *g, const char *name, const char *op, const int64_t *in,
                       size_t nin, int64_t out) {
    tio_node_info n = {0};
    n.name = name;
    n.op = op;
    n.native_id = -1;
    n.inputs = in;
    n.input_count = nin;
    n.outputs = &out;
    n.output_count = 1;
    size_t j;
    tio_error e;
    assert_int_equal(tio_graph_add_node(g, &n, &j, &e), TIO_OK);
    return j;
}

static void attr_ints(tio_graph *g, size_t j, const char *name, const int64_t *v, size_t n) {
    tio_attr a = {0};
    tio_error e;
    a.name = name;
    a.type = TIO_ATTR_INTS;
    a.ints = v;
    a.count = n;
    assert_int_equal(tio_graph_add_attr(g, j, &a, &e), TIO_OK);
}
static void attr_int(tio_graph *g, size_t j, const char *name, int64_t v) {
    tio_attr a = {0};
    tio_error e;
    a.name = name;
    a.type = TIO_ATTR_INT;
    a.i = v;
    assert_int_equal(tio_graph_add_attr(g, j, &a, &e), TIO_OK);
}

static int64_t find_int(const tio_graph *g, size_t j, const char *name) {
    tio_attr a;
    if (tio_graph_find_attr(g, j, name, &a) != TIO_OK) fail_msg("node %zu: no %s", j, name);
    assert_int_equal(a.type, TIO_ATTR_INT);
    return a.i;
}

/* An ONNX-named graph (as rten gives them) is mapped onto tmfile operators. */
static tio_container *build_cnn(void) {
    tio_container *c = tio_container_new();
    tio_graph *g;
    tio_error e;
    assert_int_equal(tio_container_new_graph(c, &g, &e), TIO_OK);
    static float w[4 * 3 * 3 * 3], bias[4], fw[10 * 64], fb[10];
    for (size_t k = 0; k < sizeof w / sizeof w[0]; k++) w[k] = (float)k * 0.01f;
    int64_t ws[4] = {4, 3, 3, 3}, bs[1] = {4}, fws[2] = {10, 64}, fbs[1] = {10};
    size_t vw, vb, vfw, vfb;
    add_const(c, g, "w", ws, 4, w, sizeof w / sizeof w[0], &vw);
    add_const(c, g, "b", bs, 1, bias, 4, &vb);
    add_const(c, g, "fw", fws, 2, fw, sizeof fw / sizeof fw[0], &vfw);
    add_const(c, g, "fb", fbs, 1, fb, 10, &vfb);
    int64_t xs[4] = {1, 3, 8, 8}, cs[4] = {1, 4, 8, 8}, ps[4] = {1, 4, 4, 4}, fs[2] = {1, 64},
            os[2] = {1, 10};
    size_t x = add_value(g, "x", xs, 4), cv = add_value(g, "c", cs, 4),
           r = add_value(g, "r", cs, 4), p = add_value(g, "p", ps, 4),
           f = add_value(g, "f", fs, 2), y = add_value(g, "y", os, 2), s = add_value(g, "s", os, 2);
    int64_t in1[3] = {(int64_t)x, (int64_t)vw, (int64_t)vb};
    size_t j = add_node(g, "conv", "Conv", in1, 3, (int64_t)cv);
    int64_t pads[4] = {1, 1, 1, 1}, one2[2] = {1, 1}, two2[2] = {2, 2};
    attr_ints(g, j, "pads", pads, 4);
    attr_ints(g, j, "strides", one2, 2);
    attr_int(g, j, "groups", 1);
    attr_int(g, j, "auto_pad", 1); /* rten's NotSet */
    int64_t in2[1] = {(int64_t)cv};
    add_node(g, "relu", "Relu", in2, 1, (int64_t)r);
    int64_t in3[1] = {(int64_t)r};
    j = add_node(g, "pool", "MaxPool", in3, 1, (int64_t)p);
    attr_ints(g, j, "kernel_size", two2, 2);
    attr_ints(g, j, "strides", two2, 2);
    int64_t in4[1] = {(int64_t)p};
    j = add_node(g, "flat", "Flatten", in4, 1, (int64_t)f);
    attr_int(g, j, "axis", 1);
    int64_t in5[3] = {(int64_t)f, (int64_t)vfw, (int64_t)vfb};
    j = add_node(g, "fc", "Gemm", in5, 3, (int64_t)y);
    attr_int(g, j, "transpose_b", 1);
    int64_t in6[1] = {(int64_t)y};
    j = add_node(g, "sm", "Softmax", in6, 1, (int64_t)s);
    attr_int(g, j, "axis", 1);
    int64_t gi[1] = {(int64_t)x}, go[1] = {(int64_t)s};
    assert_int_equal(tio_graph_set_inputs(g, gi, 1, &e), TIO_OK);
    assert_int_equal(tio_graph_set_outputs(g, go, 1, &e), TIO_OK);
    return c;
}

static uint8_t *save_mem_opt(const tio_container *c, const char *options, size_t *len) {
    tio_save_options so = {0};
    so.format = "tmfile";
    so.options = options;
    void *out = NULL;
    tio_error e;
    if (tio_save_memory(c, &so, &out, len, &e)) fail_msg("save: %s", e.message);
    return out;
}

/* fuse=0: the graph as it is, Relu a node of its own */
static void test_foreign_graph_nofuse(void **state) {
    (void)state;
    tio_container *c = build_cnn();
    size_t len;
    uint8_t *out = save_mem_opt(c, "fuse=0", &len);
    tio_error e;
    tio_container *t = open_mem(out, len, TIO_OPEN_STRICT | TIO_OPEN_NATIVE_GRAPH, &e);
    if (!t) fail_msg("%s", e.message);
    const tio_graph *g = tio_container_graph(t);
    assert_int_equal(tio_graph_node_count(g), 11);
    tio_node_info ni;
    tio_graph_node(g, 6, &ni);
    assert_string_equal(ni.native_op, "ReLu");
    assert_int_equal(find_int(g, 5, "activation"), -1);
    tio_container_free(t);
    tio_free(out);
    tio_save_options so = {0};
    so.format = "tmfile";
    so.options = "fuse=yes";
    void *o2 = NULL;
    assert_int_equal(tio_save_memory(c, &so, &o2, &len, &e), TIO_E_ARGUMENT);
    assert_non_null(strstr(e.message, "fuse=yes"));
    tio_container_free(c);
}

static void test_foreign_graph(void **state) {
    (void)state;
    tio_container *c = build_cnn();
    size_t len;
    uint8_t *out = save_mem(c, 0, &len);
    tio_error e;
    tio_container *t = open_mem(out, len, TIO_OPEN_STRICT | TIO_OPEN_NATIVE_GRAPH, &e);
    if (!t) fail_msg("%s", e.message);
    const tio_graph *g = tio_container_graph(t);
    /* Const x4, InputOp, then the operators, the Relu fused into the Conv as
     * convert_tool fuses it */
    assert_int_equal(tio_graph_node_count(g), 10);
    const char *ops[] = {"Const", "Const", "Const", "Const", "InputOp", "Conv",
                         "MaxPool", "Flatten", "Gemm", "Softmax"};
    const char *native[] = {"Const", "Const", "Const", "Const", "InputOp", "Convolution",
                            "Pooling", "Flatten", "FullyConnected", "Softmax"};
    for (size_t j = 0; j < 10; j++) {
        tio_node_info ni;
        tio_graph_node(g, j, &ni);
        assert_string_equal(ni.op, ops[j]);
        assert_string_equal(ni.native_op ? ni.native_op : ni.op, native[j]);
    }
    assert_int_equal(find_int(g, 5, "kernel_h"), 3);
    assert_int_equal(find_int(g, 5, "output_channel"), 4);
    assert_int_equal(find_int(g, 5, "input_channel"), 3);
    assert_int_equal(find_int(g, 5, "pad_w1"), 1);
    assert_int_equal(find_int(g, 5, "activation"), 0);
    assert_int_equal(find_int(g, 6, "kernel_w"), 2);
    assert_int_equal(find_int(g, 6, "stride_h"), 2);
    assert_int_equal(find_int(g, 7, "end_axis"), 3);
    assert_int_equal(find_int(g, 8, "num_output"), 10); /* Gemm(transB=1) -> FullyConnected */
    /* the weights are the same bytes */
    assert_int_equal(tio_container_count(t), 4);
    for (size_t i = 0; i < 4; i++) {
        uint8_t a[32], b[32];
        tio_tensor_sha256(tio_container_tensor(c, i), TIO_HASH_DENSE, a, NULL);
        tio_tensor_sha256(tio_container_tensor(t, i), TIO_HASH_DENSE, b, NULL);
        assert_memory_equal(a, b, 32);
    }
    assert_int_equal(tio_graph_input_count(g), 1);
    tio_value_info vi;
    tio_graph_value(g, (size_t)tio_graph_inputs(g)[0], &vi);
    assert_string_equal(vi.name, "x");
    tio_graph_value(g, (size_t)tio_graph_outputs(g)[0], &vi);
    assert_string_equal(vi.name, "s");
    /* re-encoding the tmfile graph is a fixed point */
    size_t len2;
    uint8_t *again = save_mem(t, 0, &len2);
    assert_int_equal(len, len2);
    assert_memory_equal(out, again, len);
    tio_free(again);
    tio_container_free(t);
    tio_free(out);
    tio_container_free(c);
}

static void test_write_refusals(void **state) {
    (void)state;
    tio_error e;
    /* a tensor-only container */
    tio_container *c = tio_container_new();
    float v[2] = {1, 2};
    int64_t s[1] = {2};
    tio_tensor_desc d = {0};
    d.dtype = TIO_FLOAT32;
    d.rank = 1;
    d.shape = s;
    d.data = v;
    d.nbytes = sizeof v;
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
    save_fails(c, TIO_E_UNSUPPORTED, "graph");
    tio_container_free(c);

    /* an operator tmfile does not have */
    c = build_cnn();
    tio_graph *g = tio_container_graph(c);
    int64_t xs[2] = {1, 10};
    size_t z = add_value(g, "z", xs, 2);
    int64_t in[1] = {(int64_t)tio_graph_outputs(g)[0]};
    add_node(g, "es", "Einsum", in, 1, (int64_t)z);
    save_fails(c, TIO_E_UNSUPPORTED, "no operator for Einsum (1 node: 'es';");
    tio_container_free(c);

    /* ceil_mode where it changes the size (8x8, kernel 3, stride 2: 4x4, not
     * 3x3): an AveragePool is refused, a MaxPool rounds up as Tengine's caffe
     * pooling does; where it does not, it is dropped */
    for (int mp = 0; mp < 3; mp++) {
        c = build_cnn();
        g = tio_container_graph(c);
        int64_t ps[4] = {1, 4, 4, 4}, k3[2] = {3, 3}, k2[2] = {2, 2};
        size_t q = add_value(g, "q", ps, 4);
        int64_t rin[1] = {(int64_t)tio_graph_find_value(g, "r")};
        size_t j = add_node(g, "pool3", mp ? "MaxPool" : "AveragePool", rin, 1, (int64_t)q);
        attr_ints(g, j, "kernel_shape", mp == 2 ? k2 : k3, 2);
        attr_ints(g, j, "strides", k2, 2);
        attr_int(g, j, "ceil_mode", 1);
        int64_t go[2] = {tio_graph_outputs(g)[0], (int64_t)q};
        assert_int_equal(tio_graph_set_outputs(g, go, 2, &e), TIO_OK);
        if (mp == 0) {
            save_fails(c, TIO_E_UNSUPPORTED, "ceil_mode");
        } else {
            size_t len;
            uint8_t *out = save_mem(c, 0, &len);
            tio_container *t = open_mem(out, len, TIO_OPEN_STRICT | TIO_OPEN_NATIVE_GRAPH, &e);
            if (!t) fail_msg("%s", e.message);
            const tio_graph *tg = tio_container_graph(t);
            size_t last = tio_graph_node_count(tg) - 1;
            assert_int_equal(find_int(tg, last, "caffe_flavor"), mp == 1 ? 1 : 0);
            tio_container_free(t);
            tio_free(out);
        }
        tio_container_free(c);
    }
    c = build_cnn();
    g = tio_container_graph(c);
    attr_int(g, 1, "storage_order", 0);
    save_fails(c, TIO_E_LOSSY, "storage_order");
    tio_container_free(c);

    /* model metadata tmfile cannot hold, and rank > 8 */
    c = build_cnn();
    g = tio_container_graph(c);
    assert_int_equal(tio_graph_meta_set(g, "description", "x", &e), TIO_OK);
    save_fails(c, TIO_E_LOSSY, "description");
    tio_save_options so = {0};
    so.format = "tmfile";
    so.flags = TIO_SAVE_DROP_METADATA;
    assert_int_equal(tio_check_save(c, &so, &e), TIO_OK);
    int64_t big[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    size_t bv = add_value(g, "big", big, 9);
    int64_t bin[1] = {(int64_t)tio_graph_outputs(g)[0]};
    add_node(g, "r2", "Relu", bin, 1, (int64_t)bv);
    assert_int_equal(tio_check_save(c, &so, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "rank 9"));
    tio_container_free(c);

    /* an int64 constant */
    c = build_cnn();
    g = tio_container_graph(c);
    int64_t iv[2] = {1, 2};
    d.name = "i64";
    d.dtype = TIO_INT64;
    d.data = iv;
    d.nbytes = sizeof iv;
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
    tio_value_info vi = {0};
    vi.name = "i64";
    vi.tensor = 4;
    size_t iv_v;
    assert_int_equal(tio_graph_add_value(g, &vi, &iv_v, &e), TIO_OK);
    so.flags = 0;
    assert_int_not_equal(tio_check_save(c, &so, &e), TIO_OK);
    tio_container_free(c);

    /* an opaque node (a raw param not before its operator) is refused */
    size_t len;
    uint8_t *b = tvec_load("tmfile/concat_reshape_softmax.tmfile", &len);
    if (b) {
        json_t *m = tvec_manifest("tmfile/concat_reshape_softmax.json");
        uint32_t n3 = (uint32_t)json_integer_value(
            json_object_get(json_array_get(json_object_get(m, "nodes"), 3), "struct_offset"));
        uint32_t op = ld32(b + n3 + 12);
        st32(b + op + 4, 104);  /* unknown operator */
        st32(b + op + 8, (uint32_t)len - 4); /* its param after it: size unknown */
        c = open_mem(b, len, 0, &e);
        assert_non_null(c);
        save_fails(c, TIO_E_UNSUPPORTED, "cannot be re-encoded");
        tio_container_free(c);
        json_decref(m);
        free(b);
    }
}

static void attr_floats(tio_graph *g, size_t j, const char *name, const double *v, size_t n) {
    tio_attr a = {0};
    tio_error e;
    a.name = name;
    a.type = TIO_ATTR_FLOATS;
    a.floats = v;
    a.count = n;
    assert_int_equal(tio_graph_add_attr(g, j, &a, &e), TIO_OK);
}

/* tensio's tm2_* attributes (quant params, layout, op_ver, dynamic_shape)
 * are written where the official writer puts them, and read back. */
static void test_private_attrs(void **state) {
    (void)state;
    size_t len;
    uint8_t *b = tvec_load("tmfile/concat_reshape_softmax.tmfile", &len);
    if (!b) return;
    tio_error e;
    tio_container *c = open_mem(b, len, TIO_OPEN_NATIVE_GRAPH, &e);
    tio_graph *g = tio_container_graph(c);
    int64_t one[1] = {1}, two[1] = {2}, zp[3] = {3, -4, 5}, lay[1] = {1};
    double sc[3] = {0.5, 0.25, 0.125};
    attr_ints(g, 1, "tm2_quant_count", one, 1); /* InputOp 'a' */
    attr_floats(g, 1, "tm2_quant_scale", sc, 1);
    attr_ints(g, 1, "tm2_quant_zero_point", zp, 1);
    attr_ints(g, 0, "tm2_quant_count", two, 1); /* Const 'shape' */
    attr_floats(g, 0, "tm2_quant_scale", sc + 1, 2);
    attr_ints(g, 0, "tm2_quant_zero_point", zp + 1, 2);
    attr_ints(g, 3, "tm2_layout", lay, 1);
    attr_int(g, 4, "tm2_dynamic_shape", 1);
    attr_int(g, 5, "tm2_op_ver", 3);
    size_t olen;
    uint8_t *out = save_mem(c, 0, &olen);
    assert_int_equal(olen, len + 2 * 4 + 3 * 12 + 2 * 4 + 4); /* vectors, params, v_num... */
    tio_container *back = open_mem(out, olen, TIO_OPEN_STRICT | TIO_OPEN_NATIVE_GRAPH, &e);
    if (!back) fail_msg("%s", e.message);
    const tio_graph *h = tio_container_graph(back);
    tio_attr a;
    assert_int_equal(tio_graph_find_attr(h, 1, "tm2_quant_scale", &a), TIO_OK);
    assert_int_equal(a.count, 1);
    assert_true(a.floats[0] == 0.5);
    assert_int_equal(tio_graph_find_attr(h, 0, "tm2_quant_zero_point", &a), TIO_OK);
    assert_int_equal(a.count, 2);
    assert_int_equal(a.ints[0], -4);
    assert_int_equal(a.ints[1], 5);
    assert_int_equal(tio_graph_find_attr(h, 3, "tm2_layout", &a), TIO_OK);
    assert_int_equal(a.ints[0], 1);
    assert_int_equal(find_int(h, 4, "tm2_dynamic_shape"), 1);
    assert_int_equal(find_int(h, 5, "tm2_op_ver"), 3);
    /* tensor 1's quant params: one TM2_QuantParam {3, 0.5f, 0} and its vector */
    uint32_t root = ld32(out + 8), sub = ld32(out + ld32(out + root + 8) + 4);
    uint32_t t1 = ld32(out + ld32(out + sub + 24) + 8), qv = ld32(out + t1 + 16);
    assert_int_equal(ld32(out + qv), 1);
    uint32_t q = ld32(out + qv + 4);
    assert_int_equal(q + 12, qv); /* the param right before its vector */
    assert_int_equal(ld32(out + q), 3);
    assert_int_equal(ld32(out + q + 4), 0x3f000000u);
    assert_int_equal(ld32(out + q + 8), 0);
    /* a fixed point */
    size_t olen2;
    uint8_t *again = save_mem(back, 0, &olen2);
    assert_int_equal(olen, olen2);
    assert_memory_equal(out, again, olen);
    tio_free(again);
    /* width is an old C++ field */
    tio_graph *bg = tio_container_graph(back);
    int64_t w[1] = {8};
    attr_ints(bg, 1, "tm2_quant_width", w, 1);
    save_fails(back, TIO_E_LOSSY, "tm2_quant_width");
    size_t clen;
    uint8_t *cb = tvec_load("tmfile/cnn_small.tmfile", &clen);
    tio_container *cc = open_mem(cb, clen, 0, &e);
    tio_graph *cg = tio_container_graph(cc);
    attr_ints(cg, 6, "tm2_quant_count", one, 1); /* InputOp 'input' */
    attr_floats(cg, 6, "tm2_quant_scale", sc, 1);
    attr_ints(cg, 6, "tm2_quant_zero_point", zp, 1);
    attr_ints(cg, 6, "tm2_quant_width", w, 1);
    assert_int_equal(tio_graph_meta_set(cg, "tmfile.variant", "old-cpp", &e), TIO_OK);
    uint8_t *old = save_mem(cc, 0, &olen2);
    tio_container *ob = open_mem(old, olen2, 0, &e);
    if (!ob) fail_msg("%s", e.message);
    assert_int_equal(tio_graph_find_attr(tio_container_graph(ob), 6, "tm2_quant_width", &a),
                     TIO_OK);
    assert_int_equal(a.ints[0], 8);
    tio_container_free(ob);
    tio_free(old);
    tio_container_free(cc);
    free(cb);
    /* malformed private attributes are refused */
    attr_ints(g, 2, "tm2_layout", zp, 3); /* InputOp 'b' has one output */
    save_fails(c, TIO_E_UNSUPPORTED, "one entry per output");
    tio_container_free(back);
    tio_free(out);
    tio_container_free(c);
    free(b);
}

/* Non-float constants, a graph input that is also an output, and a
 * constant a node reads directly. */
static void test_api_dtypes(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    tio_graph *g;
    tio_error e;
    assert_int_equal(tio_container_new_graph(c, &g, &e), TIO_OK);
    int8_t q[6] = {-3, -2, -1, 1, 2, 3};
    int64_t qs[2] = {3, 2};
    tio_tensor_desc d = {0};
    d.name = "q";
    d.dtype = TIO_INT8;
    d.rank = 2;
    d.shape = qs;
    d.data = q;
    d.nbytes = sizeof q;
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
    uint16_t h[3] = {0x3c00, 0x4000, 0xc000};
    int64_t hs[1] = {3};
    d.name = "h";
    d.dtype = TIO_FLOAT16;
    d.rank = 1;
    d.shape = hs;
    d.data = h;
    d.nbytes = sizeof h;
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
    tio_value_info vi = {0};
    size_t vq, vh;
    vi.name = "q";
    vi.tensor = 0;
    assert_int_equal(tio_graph_add_value(g, &vi, &vq, &e), TIO_OK);
    vi.name = "h";
    vi.tensor = 1;
    assert_int_equal(tio_graph_add_value(g, &vi, &vh, &e), TIO_OK);
    int64_t xs[2] = {1, 3}, ys[2] = {1, 2};
    size_t x = add_value(g, "x", xs, 2), y = add_value(g, "y", ys, 2);
    int64_t in[2] = {(int64_t)x, (int64_t)vq};
    add_node(g, "mm", "MatMul", in, 2, (int64_t)y);
    int64_t gi[1] = {(int64_t)x}, go[2] = {(int64_t)y, (int64_t)x};
    assert_int_equal(tio_graph_set_inputs(g, gi, 1, &e), TIO_OK);
    assert_int_equal(tio_graph_set_outputs(g, go, 2, &e), TIO_OK);
    size_t len;
    uint8_t *out = save_mem(c, 0, &len);
    tio_container *t = open_mem(out, len, TIO_OPEN_STRICT | TIO_OPEN_NATIVE_GRAPH, &e);
    if (!t) fail_msg("%s", e.message);
    assert_int_equal(tio_container_count(t), 2);
    assert_int_equal(tio_tensor_dtype(tio_container_tensor(t, 0)), TIO_INT8);
    assert_memory_equal(tio_tensor_data(tio_container_tensor(t, 0)), q, sizeof q);
    assert_int_equal(tio_tensor_dtype(tio_container_tensor(t, 1)), TIO_FLOAT16);
    assert_memory_equal(tio_tensor_data(tio_container_tensor(t, 1)), h, sizeof h);
    const tio_graph *tg = tio_container_graph(t);
    /* Const q, Const h, InputOp x, MatMul */
    assert_int_equal(tio_graph_node_count(tg), 4);
    tio_node_info ni;
    tio_graph_node(tg, 3, &ni);
    assert_string_equal(ni.op, "MatMul");
    assert_int_equal(ni.native_id, 91);
    assert_int_equal(tio_graph_output_count(tg), 2);
    tio_value_info o;
    tio_graph_value(tg, (size_t)tio_graph_outputs(tg)[1], &o);
    assert_string_equal(o.name, "x");
    tio_container_free(t);
    tio_free(out);
    /* the old table numbers MatMul 88 */
    assert_int_equal(tio_graph_meta_set(g, "tmfile.variant", "old-cpp", &e), TIO_OK);
    out = save_mem(c, 0, &len);
    t = open_mem(out, len, TIO_OPEN_NATIVE_GRAPH, &e);
    tio_graph_node(tio_container_graph(t), 3, &ni);
    assert_string_equal(ni.op, "MatMul");
    assert_int_equal(ni.native_id, 88);
    tio_container_free(t);
    tio_free(out);
    tio_container_free(c);
}

/* An rten model converts when tensio maps all its operators, or is refused
 * cleanly naming the one it cannot. */
static void test_from_rten(void **state) {
    (void)state;
    const char *models[] = {"rten/small_cnn/small_cnn.v2.rten", "rten/matmul_add/matmul_add.v2.rten",
                            "rten/shape_ops/shape_ops.v2.rten", "rten/int_consts/int_consts.v2.rten"};
    size_t ok = 0;
    for (size_t i = 0; i < 4; i++) {
        char *p = tvec_path_or_skip(models[i]);
        if (!p) continue;
        tio_container *c = open_path(p);
        tio_save_options so = {0};
        so.format = "tmfile";
        so.flags = TIO_SAVE_DROP_METADATA;
        void *out;
        size_t len;
        tio_error e;
        int rc = tio_save_memory(c, &so, &out, &len, &e);
        if (rc == TIO_OK) {
            tio_container *t = open_mem(out, len, 0, &e);
            if (!t) fail_msg("%s: %s", models[i], e.message);
            assert_int_equal(tio_container_count(t), tio_container_count(c));
            tio_container_free(t);
            tio_free(out);
            ok++;
        } else {
            assert_string_equal(e.format, "tmfile");
            assert_true(rc == TIO_E_UNSUPPORTED || rc == TIO_E_LOSSY);
        }
        tio_container_free(c);
        free(p);
    }
    (void)ok;
}


/* The mapping table (src/tmfile/opmap.c): every entry raises a node with all
 * its param fields to ONNX form and lowers it back to the same fields. Two
 * value sets per entry: generic values (derived and defaulted fields that
 * differ from what a write recovers, so they are kept as tmfile.<field>),
 * and the values a write recovers (nothing kept; a Convolution's ReLU
 * activation split off). */
static void tm_field_value(const tio_tm_opmap *m, const char *f, int canon, tio_attr *a) {
    const tio_tm_amap *hit = NULL;
    for (uint8_t e = 0; e < m->nattrs; e++)
        for (uint8_t k = 0; k < m->attrs[e].nfields; k++)
            if (m->attrs[e].fields[k] && strcmp(m->attrs[e].fields[k], f) == 0) hit = &m->attrs[e];
    a->i = 1;
    a->f = 0.5;
    if (canon && hit && hit->conv == TM_M_DEF) {
        a->i = hit->idef;
        a->f = hit->fdef;
        if (m->idx == 5 && strcmp(f, "activation") == 0) a->i = 0; /* ReLU: split */
    }
    if (canon && hit && hit->conv == TM_M_DERIVED) {
        /* the graph below: input [1, 8, 6, 6], Conv weight [16, 8, 3, 3] (group 1),
         * FC weight [10, 128], shape constant [1, 8, 36] */
        a->i = hit->derive == TM_D_CONV_IN ? 8 : hit->derive == TM_D_CONV_OUT ? 16
             : hit->derive == TM_D_DECONV_OUT ? 8 : hit->derive == TM_D_FC_OUT ? 10 : 3;
    }
    if (m->idx == 16 && (strcmp(f, "alg") == 0 || strcmp(f, "global") == 0)) a->i = 0;
    if (strcmp(f, "type") == 0) a->i = m->idx == 45 ? 1 : 2; /* Eltwise SUM, ReduceMean */
    /* only ONNX's Slice is raised (a caffe or mxnet one is not) */
    if (m->idx == OP_SLICE && (strcmp(f, "iscaffe") == 0 || strcmp(f, "ismxnet") == 0)) a->i = 0;
}

static void test_opmap_round_trip(void **state) {
    (void)state;
    static const int64_t shape_vals[3] = {1, 8, 36};
    for (size_t i = 0; i < tio__tmfile_opmap_count; i++) {
        const tio_tm_opmap *m = &tio__tmfile_opmap[i];
        const tm_op *op = &tio__tmfile_ops[m->idx];
        for (int canon = 0; canon < 2; canon++) {
            tio_container *c = tio_container_new();
            tio_graph *g;
            tio_error e;
            assert_int_equal(tio_container_new_graph(c, &g, &e), TIO_OK);
            int64_t xs[4] = {1, 8, 6, 6}, w4[4] = {16, 8, 3, 3}, w2[2] = {10, 128};
            size_t x = add_value(g, "x", xs, 4), vw4 = add_value(g, "w4", w4, 4),
                   vw2 = add_value(g, "w2", w2, 2), y = add_value(g, "y", xs, 4);
            int32_t sh[3] = {1, 8, 36};
            int64_t sd[1] = {3};
            tio_tensor_desc d = {0};
            d.name = "shape";
            d.dtype = TIO_INT32;
            d.rank = 1;
            d.shape = sd;
            d.data = sh;
            d.nbytes = sizeof sh;
            assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
            tio_value_info vi = {0};
            vi.name = "shape";
            vi.tensor = 0;
            size_t vs;
            assert_int_equal(tio_graph_add_value(g, &vi, &vs, &e), TIO_OK);
            int64_t in[5] = {(int64_t)x, (int64_t)x, (int64_t)x, (int64_t)x, (int64_t)x};
            if (m->idx == 5 || m->idx == 6) in[1] = (int64_t)vw4;
            if (m->idx == 11) in[1] = (int64_t)vw2;
            if (m->idx == 23) in[1] = (int64_t)vs;
            size_t nin = m->min_inputs ? m->min_inputs : 1;
            if (m->idx == 9 || m->idx == 23) nin = 2; /* Eltwise SUM is binary; Reshape's shape */
            tio_node_info ni = {0};
            ni.name = "n";
            ni.op = op->onnx ? op->onnx : op->name;
            ni.native_op = op->name;
            ni.native_id = m->idx;
            ni.inputs = in;
            ni.input_count = nin;
            int64_t out = (int64_t)y;
            ni.outputs = &out;
            ni.output_count = 1;
            size_t j;
            assert_int_equal(tio_graph_add_node(g, &ni, &j, &e), TIO_OK);
            const tm_pdef *pd = op->param;
            for (unsigned k = 0; pd && k < pd->n; k++) {
                if (m->idx == 9 && k > 0) break; /* lite Eltwise: type only */
                /* Slice's caffe/mxnet vectors: absent in ONNX's form */
                if (m->idx == OP_SLICE && pd->f[k].kind == TF_VDIMS) continue;
                tio_attr a = {0};
                a.name = pd->f[k].name;
                tm_field_value(m, a.name, canon, &a);
                switch (pd->f[k].kind) {
                case TF_F32: a.type = TIO_ATTR_FLOAT; break;
                case TF_VDIMS:
                    a.type = TIO_ATTR_INTS;
                    a.ints = shape_vals;
                    a.count = 3;
                    break;
                case TF_VFLOATS:
                case TF_VANCHORS:
                case TF_STR: fail_msg("%s: a field kind the table has no entry with", op->name);
                default: a.type = TIO_ATTR_INT;
                }
                assert_int_equal(tio_graph_add_attr(g, j, &a, &e), TIO_OK);
            }
            const tio_gnode *n = &g->nodes[j];
            tio_gattr *ra = NULL, *la = NULL;
            size_t nr = 0, nl = 0;
            const char *onnx = NULL;
            int split = -1;
            assert_int_equal(tio__tmfile_raise(g, NULL, c, n, m->idx, &ra, &nr, &onnx, &split, &e),
                             TIO_OK);
            if (!onnx) fail_msg("%s (set %d): not raised", op->name, canon);
            assert_int_equal(split, canon && m->idx == 5 ? 0 : -1);
            for (size_t k = 0; k < nr; k++) {
                assert_true(strncmp(ra[k].name, "tm2_", 4) != 0);
                if (canon && strncmp(ra[k].name, "tmfile.", 7) == 0)
                    fail_msg("%s: %s kept although a write recovers it", op->name, ra[k].name);
            }
            tio_gnode rn = *n;
            rn.op = (char *)(uintptr_t)onnx;
            rn.attrs = ra;
            rn.attr_count = nr;
            if (tio__tmfile_lower(g, c, &rn, m->idx, split, &la, &nl, &e) != TIO_OK)
                fail_msg("%s (set %d): %s", op->name, canon, e.message);
            assert_int_equal(nl, n->attr_count);
            for (size_t k = 0; k < n->attr_count; k++) {
                const tio_gattr *w = &n->attrs[k], *got = NULL;
                for (size_t q = 0; q < nl; q++)
                    if (strcmp(la[q].name, w->name) == 0) got = &la[q];
                if (!got) fail_msg("%s (set %d): field %s lost", op->name, canon, w->name);
                assert_int_equal(got->type, w->type);
                if (w->type == TIO_ATTR_INT) assert_int_equal(got->i, w->i);
                if (w->type == TIO_ATTR_FLOAT) assert_true(got->f == w->f);
                if (w->type == TIO_ATTR_INTS) {
                    assert_int_equal(got->count, w->count);
                    assert_memory_equal(got->ints, w->ints, w->count * sizeof *w->ints);
                }
            }
            tio__tmfile_attrs_free(ra, nr);
            tio__tmfile_attrs_free(la, nl);
            tio_container_free(c);
        }
    }
}

/* The ONNX form and the native form of one file write the same bytes. */
static void assert_same_write(const tio_container *raised, const tio_container *native) {
    size_t a, b;
    uint8_t *oa = save_mem(raised, 0, &a), *ob = save_mem(native, 0, &b);
    assert_int_equal(a, b);
    assert_memory_equal(oa, ob, a);
    tio_free(oa);
    tio_free(ob);
}

/* Raised vectors: no Const or InputOp operators, Conv + Relu for a fused
 * activation, and the write is the same file as from the native form. */
static void test_raised_vectors(void **state) {
    (void)state;
    for (size_t i = 0; i < NLITE; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "tmfile/%s.tmfile", lite_models[i]);
        size_t len;
        uint8_t *ref = tvec_load(rel, &len);
        if (!ref) continue;
        tio_error e;
        tio_container *c = open_mem(ref, len, 0, &e), *nat = open_mem(ref, len, TIO_OPEN_NATIVE_GRAPH, &e);
        assert_non_null(c);
        assert_non_null(nat);
        const tio_graph *g = tio_container_graph(c);
        for (size_t j = 0; j < tio_graph_node_count(g); j++) {
            tio_node_info ni;
            assert_int_equal(tio_graph_node(g, j, &ni), TIO_OK);
            assert_true(strcmp(ni.op, "Const") != 0 && strcmp(ni.op, "InputOp") != 0);
            if (ni.native_op && strcmp(ni.native_op, "Convolution") == 0)
                assert_true(strcmp(ni.op, "Conv") == 0 || strcmp(ni.op, "Relu") == 0);
        }
        const char *dom = NULL;
        int64_t ver = 0;
        assert_int_equal(tio_graph_opset_at(g, 0, &dom, &ver), TIO_OK);
        assert_int_equal(ver, TM_ONNX_OPSET);
        assert_same_write(c, nat);
        tio_container_free(c);
        tio_container_free(nat);
        free(ref);
    }
}


/* The ONNX export of a tmfile graph: a node the mapping table did not raise
 * (its attributes are Tengine's fields) and a tmfile.* attribute are refused,
 * naming them; the storage attributes (tm2_layout, ...) are left out. */
static void test_onnx_export(void **state) {
    (void)state;
    tio_container *c = build_cnn();
    tio_graph *g = tio_container_graph(c);
    tio_error e;
    assert_int_equal(tio_graph_set_native_format(g, "tmfile", &e), TIO_OK);
    tio_save_options so = {0};
    so.format = "onnx";
    void *out = NULL;
    size_t len;
    assert_int_not_equal(tio_save_memory(c, &so, &out, &len, &e), TIO_OK);
    assert_non_null(strstr(e.message, "mapping table"));
    tio_container_free(c);

    uint8_t *b = tvec_load("tmfile/cnn_small.tmfile", &len);
    if (!b) return;
    c = open_mem(b, len, 0, &e);
    assert_non_null(c);
    g = tio_container_graph(c);
    /* Flatten carries tm2_layout: left out */
    assert_int_equal(tio_save_memory(c, &so, &out, &len, &e), TIO_OK);
    tio_free(out);
    /* a kept Tengine fact is refused */
    attr_int(g, 0, "tmfile.activation", 6);
    assert_int_equal(tio_save_memory(c, &so, &out, &len, &e), TIO_E_LOSSY);
    assert_non_null(strstr(e.message, "tmfile.activation"));
    tio_container_free(c);
    free(b);
}


/* A vector with each node of Tengine operator `op` patched by fn (NULL when
 * the vector is missing). */
typedef void (*tm_patch_fn)(uint8_t *b, const json_t *node);
static uint8_t *load_patched(const char *name, const char *op, tm_patch_fn fn, size_t *len) {
    char rel[128];
    snprintf(rel, sizeof rel, "tmfile/%s.tmfile", name);
    uint8_t *b = tvec_load(rel, len);
    if (!b) return NULL;
    snprintf(rel, sizeof rel, "tmfile/%s.json", name);
    json_t *m = tvec_manifest(rel);
    assert_non_null(m);
    json_t *nodes = json_object_get(m, "nodes");
    for (size_t i = 0; i < json_array_size(nodes); i++) {
        const json_t *n = json_array_get(nodes, i);
        if (strcmp(json_string_value(json_object_get(n, "tm2_op_name")), op) == 0) fn(b, n);
    }
    json_decref(m);
    return b;
}
static uint32_t jint(const json_t *n, const char *key) {
    return (uint32_t)json_integer_value(json_object_get(n, key));
}
/* A ReLu made a ReLu6 without a param. */
static void patch_relu6(uint8_t *b, const json_t *n) {
    uint32_t op = ld32(b + jint(n, "struct_offset") + 12);
    st32(b + op + 4, 21);
    st32(b + op + 8, 0);
}
/* A Convolution's ReLU activation made ReLU6. */
static void patch_conv_relu6(uint8_t *b, const json_t *n) {
    uint32_t po = jint(n, "param_offset");
    assert_int_equal(ld32(b + po + 36), 0);
    st32(b + po + 36, 6);
}
/* A Reshape's input vector cut to its first entry. */
static void patch_reshape_one_input(uint8_t *b, const json_t *n) {
    uint32_t vi = ld32(b + jint(n, "struct_offset") + 4);
    assert_int_equal(ld32(b + vi), 2);
    st32(b + vi, 1);
}

/* Opens a patched vector in ONNX form and natively: check(ONNX form), and
 * both forms write the same bytes. */
static void check_patched(const char *name, const char *op, tm_patch_fn fn,
                          void (*check)(const tio_container *c)) {
    size_t len;
    uint8_t *b = load_patched(name, op, fn, &len);
    if (!b) return;
    tio_error e;
    tio_container *c = open_mem(b, len, 0, &e), *nat = open_mem(b, len, TIO_OPEN_NATIVE_GRAPH, &e);
    assert_non_null(c);
    assert_non_null(nat);
    check(c);
    assert_same_write(c, nat);
    tio_container_free(c);
    tio_container_free(nat);
    free(b);
}

/* ReLu6 (mlp_matmul_add's ReLu turned into one, without a param): Clip with
 * min 0 and max 6 as new float32 constants; the write drops them again. */
static void check_relu6_clip(const tio_container *c) {
    const tio_graph *g = tio_container_graph(c);
    size_t found = 0;
    for (size_t j = 0; j < tio_graph_node_count(g); j++) {
        tio_node_info ni;
        tio_graph_node(g, j, &ni);
        if (strcmp(ni.op, "Clip") != 0) continue;
        found++;
        assert_string_equal(ni.native_op, "ReLu6");
        assert_int_equal(ni.input_count, 3);
        for (size_t k = 1; k < 3; k++) {
            tio_value_info vi;
            assert_int_equal(tio_graph_value(g, (size_t)ni.inputs[k], &vi), TIO_OK);
            assert_true(vi.tensor >= 0);
            const tio_tensor *t = tio_container_tensor(c, (size_t)vi.tensor);
            assert_int_equal(tio_tensor_dtype(t), TIO_FLOAT32);
            assert_int_equal(tio_tensor_rank(t), 0);
            float f;
            memcpy(&f, tio_tensor_data(t), 4);
            assert_true(f == (k == 1 ? 0.0f : 6.0f));
        }
    }
    assert_int_equal(found, 1);
}
static void test_relu6_clip(void **state) {
    (void)state;
    check_patched("mlp_matmul_add", "ReLu", patch_relu6, check_relu6_clip);
}


/* Conv + ReLU6 (cnn_small with its Convolutions' activation made 6): each
 * Conv is followed by a Clip(0, 6) whose native_op is Convolution, and the
 * write fuses them back into the same file. */
static void check_conv_relu6(const tio_container *c) {
    const tio_graph *g = tio_container_graph(c);
    size_t clips = 0;
    for (size_t j = 0; j + 1 < tio_graph_node_count(g); j++) {
        tio_node_info a, nb;
        tio_graph_node(g, j, &a);
        if (strcmp(a.op, "Conv") != 0) continue;
        tio_graph_node(g, j + 1, &nb);
        assert_string_equal(nb.op, "Clip");
        assert_string_equal(nb.native_op, "Convolution");
        assert_int_equal(nb.input_count, 3);
        assert_int_equal(nb.inputs[0], a.outputs[0]);
        tio_attr at;
        assert_int_not_equal(tio_graph_find_attr(g, j, "tmfile.activation", &at), TIO_OK);
        clips++;
    }
    assert_int_equal(clips, 2); /* conv1, conv2 */
}
static void test_conv_relu6(void **state) {
    (void)state;
    check_patched("cnn_small", "Convolution", patch_conv_relu6, check_conv_relu6);
}


/* A Reshape with its shape in re_shape only (concat_reshape_softmax's with
 * its second input cut): the ONNX form appends a constant holding re_shape,
 * and the write leaves it out again. */
static void check_reshape_one_input(const tio_container *c) {
    const tio_graph *g = tio_container_graph(c);
    size_t found = 0;
    for (size_t j = 0; j < tio_graph_node_count(g); j++) {
        tio_node_info ni;
        tio_graph_node(g, j, &ni);
        if (strcmp(ni.op, "Reshape") != 0) continue;
        found++;
        assert_int_equal(ni.input_count, 2);
        tio_value_info vi;
        assert_int_equal(tio_graph_value(g, (size_t)ni.inputs[1], &vi), TIO_OK);
        const tio_tensor *t = tio_container_tensor(c, (size_t)vi.tensor);
        const int32_t want[3] = {1, 6, 9};
        assert_int_equal(tio_tensor_dtype(t), TIO_INT32);
        assert_memory_equal(tio_tensor_data(t), want, sizeof want);
        assert_int_equal(ni.attr_count, 0);
    }
    assert_int_equal(found, 1);
}
static void test_reshape_one_input(void **state) {
    (void)state;
    check_patched("concat_reshape_softmax", "Reshape", patch_reshape_one_input, check_reshape_one_input);
}

/* ------------------------------------------------ Pad and multi-axis Slice */

/* A container with an empty graph. */
static tio_container *new_graph(tio_graph **g) {
    tio_container *c = tio_container_new();
    tio_error e;
    assert_int_equal(tio_container_new_graph(c, g, &e), TIO_OK);
    return c;
}

/* t written as a tmfile gives `out` again, byte for byte. */
static void assert_writes(const tio_container *t, const uint8_t *out, size_t len) {
    size_t len2;
    uint8_t *again = save_mem(t, 0, &len2);
    assert_int_equal(len2, len);
    assert_memory_equal(again, out, len);
    tio_free(again);
}

/* t written as ONNX: the status (e filled). */
static int save_onnx(const tio_container *t, tio_error *e) {
    tio_save_options so = {0};
    so.format = "onnx";
    void *ox = NULL;
    size_t olen;
    int rc = tio_save_memory(t, &so, &ox, &olen, e);
    if (rc == TIO_OK) tio_free(ox);
    return rc;
}

/* The graph's one input and one output. */
static void set_io(tio_graph *g, size_t x, size_t y) {
    tio_error e;
    int64_t gi[1] = {(int64_t)x}, go[1] = {(int64_t)y};
    assert_int_equal(tio_graph_set_inputs(g, gi, 1, &e), TIO_OK);
    assert_int_equal(tio_graph_set_outputs(g, go, 1, &e), TIO_OK);
}

/* A constant of any dtype (data as given) and its value. */
static size_t add_const_raw(tio_container *c, tio_graph *g, const char *name, tio_dtype dt,
                            const int64_t *shape, size_t rank, const void *data, size_t nbytes) {
    tio_tensor_desc d = {0};
    tio_error e;
    d.name = name;
    d.dtype = dt;
    d.rank = rank;
    d.shape = shape;
    d.data = data;
    d.nbytes = nbytes;
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
    tio_value_info vi = {0};
    vi.name = name;
    vi.tensor = (int64_t)tio_container_count(c) - 1;
    size_t v;
    assert_int_equal(tio_graph_add_value(g, &vi, &v, &e), TIO_OK);
    return v;
}

static void attr_string(tio_graph *g, size_t j, const char *name, const char *v) {
    tio_attr a = {0};
    tio_error e;
    a.name = name;
    a.type = TIO_ATTR_STRING;
    a.s = v;
    assert_int_equal(tio_graph_add_attr(g, j, &a, &e), TIO_OK);
}

/* x [1, 3, 4, 5] -> Pad(x, pads, value) (opset 13's form) -> y, and Relu(y). */
static const int64_t pad_vals[8] = {0, 1, 2, 0, 0, 2, 1, 3}; /* ONNX order */
static tio_container *build_pad(const char *mode, const int64_t *pads) {
    tio_graph *g;
    tio_container *c = new_graph(&g);
    int64_t xs[4] = {1, 3, 4, 5}, ys[4] = {1, 6, 7, 8}, ps[1] = {8};
    static const float val = 0.5f;
    size_t vp = add_const_raw(c, g, "pads", TIO_INT64, ps, 1, pads, 8 * sizeof *pads);
    size_t vv = add_const_raw(c, g, "val", TIO_FLOAT32, NULL, 0, &val, sizeof val);
    size_t x = add_value(g, "x", xs, 4), y = add_value(g, "y", ys, 4), z = add_value(g, "z", ys, 4);
    int64_t in[3] = {(int64_t)x, (int64_t)vp, (int64_t)vv};
    size_t j = add_node(g, "pad", "Pad", in, 3, (int64_t)y);
    if (mode) attr_string(g, j, "mode", mode);
    int64_t in2[1] = {(int64_t)y};
    add_node(g, "relu", "Relu", in2, 1, (int64_t)z);
    set_io(g, x, z);
    return c;
}

/* The index of the only node of op `op` (fails unless there is one). */
static size_t only_node(const tio_graph *g, const char *op, tio_node_info *ni) {
    size_t hit = SIZE_MAX;
    for (size_t j = 0; j < tio_graph_node_count(g); j++) {
        tio_graph_node(g, j, ni);
        if (strcmp(ni->op, op) != 0) continue;
        assert_int_equal(hit, SIZE_MAX);
        hit = j;
    }
    assert_int_not_equal(hit, SIZE_MAX);
    tio_graph_node(g, hit, ni);
    return hit;
}

/* The byte offset of the 8 little-endian words w in b (fails unless found once). */
static size_t find_words(const uint8_t *b, size_t len, const uint32_t *w, size_t n) {
    size_t at = SIZE_MAX;
    for (size_t o = 0; o + 4 * n <= len; o += 4) {
        size_t k = 0;
        while (k < n && ld32(b + o + 4 * k) == w[k]) k++;
        if (k < n) continue;
        assert_int_equal(at, SIZE_MAX);
        at = o;
    }
    assert_int_not_equal(at, SIZE_MAX);
    return at;
}

/* Tengine's Pad raised to ONNX's (opset 13): pads an int64 [8] constant input
 * in ONNX order, value a float32 scalar input, mode by name, for each mode;
 * the file read back writes the same bytes, and the ONNX form is written. */
static void test_pad_raise(void **state) {
    (void)state;
    static const char *const modes[3] = {"constant", "edge", "reflect"};
    for (int m = 0; m < 3; m++) {
        tio_container *c = build_pad(m ? modes[m] : NULL, pad_vals); /* constant: the default */
        size_t len;
        uint8_t *out = save_mem(c, 0, &len);
        tio_container_free(c);
        tio_error e;
        /* native: Tengine's fields */
        tio_container *nat = open_mem(out, len, TIO_OPEN_STRICT | TIO_OPEN_NATIVE_GRAPH, &e);
        if (!nat) fail_msg("%s", e.message);
        const tio_graph *ng = tio_container_graph(nat);
        tio_node_info ni;
        size_t j = only_node(ng, "Pad", &ni);
        static const char *const f[8] = {"pad_n_0", "pad_c_0", "pad_h_0", "pad_w_0",
                                         "pad_n_1", "pad_c_1", "pad_h_1", "pad_w_1"};
        for (int k = 0; k < 8; k++) assert_int_equal(find_int(ng, j, f[k]), pad_vals[k]);
        assert_int_equal(find_int(ng, j, "mode"), m);
        tio_attr a;
        assert_int_equal(tio_graph_find_attr(ng, j, "value", &a), TIO_OK);
        assert_true(a.type == TIO_ATTR_FLOAT && a.f == 0.5);
        /* ONNX form */
        tio_container *t = open_mem(out, len, 0, &e);
        if (!t) fail_msg("%s", e.message);
        const tio_graph *g = tio_container_graph(t);
        j = only_node(g, "Pad", &ni);
        assert_true(ni.native_op == NULL || strcmp(ni.native_op, "Pad") == 0);
        assert_int_equal(ni.input_count, 3);
        assert_int_equal(tio_graph_find_attr(g, j, "mode", &a), TIO_OK);
        assert_int_equal(a.type, TIO_ATTR_STRING);
        assert_string_equal(a.s, modes[m]);
        assert_int_not_equal(tio_graph_find_attr(g, j, "pads", &a), TIO_OK);
        assert_int_not_equal(tio_graph_find_attr(g, j, "value", &a), TIO_OK);
        tio_value_info vi;
        assert_int_equal(tio_graph_value(g, (size_t)ni.inputs[1], &vi), TIO_OK);
        assert_string_equal(vi.name, "pad:pads");
        const tio_tensor *pt = tio_container_tensor(t, (size_t)vi.tensor);
        assert_int_equal(tio_tensor_dtype(pt), TIO_INT64);
        assert_int_equal(tio_tensor_rank(pt), 1);
        assert_int_equal(tio_tensor_shape(pt)[0], 8);
        assert_memory_equal(tio_tensor_data(pt), pad_vals, sizeof pad_vals);
        assert_int_equal(tio_graph_value(g, (size_t)ni.inputs[2], &vi), TIO_OK);
        const tio_tensor *vt = tio_container_tensor(t, (size_t)vi.tensor);
        assert_int_equal(tio_tensor_dtype(vt), TIO_FLOAT32);
        assert_int_equal(tio_tensor_rank(vt), 0);
        float fv;
        memcpy(&fv, tio_tensor_data(vt), 4);
        assert_true(fv == 0.5f);
        /* tmfile -> tmfile: the same bytes, from either form */
        assert_writes(t, out, len);
        assert_same_write(t, nat);
        /* the ONNX form is written as ONNX */
        if (save_onnx(t, &e) != TIO_OK) fail_msg("onnx: %s", e.message);
        tio_container_free(t);
        tio_container_free(nat);
        tio_free(out);
    }
}

/* Hostile Pad params: a negative pad or an unknown mode leave the node in
 * Tengine's form (a tmfile write gives the same bytes), and the ONNX export
 * refuses it naming the field; ONNX's negative pads (a crop) are refused by
 * the tmfile writer. */
static void test_pad_hostile(void **state) {
    (void)state;
    tio_container *c = build_pad("edge", pad_vals);
    size_t len;
    uint8_t *out = save_mem(c, 0, &len);
    tio_container_free(c);
    /* the param: pad_n_0, pad_n_1, pad_c_0, pad_c_1, pad_h_0, pad_h_1, pad_w_0, pad_w_1, mode */
    const uint32_t words[9] = {0, 0, 1, 2, 2, 1, 0, 3, 1};
    size_t at = find_words(out, len, words, 9);
    static const struct {
        unsigned word;
        uint32_t v;
        const char *needle;
    } bad[] = {{4, 0xfffffffdu, "'pad_h_0' = -3 is negative"},
               {0, 0x80000000u, "'pad_n_0' = -2147483648 is negative"},
               {8, 9, "'mode' = 9"},
               {8, 0xffffffffu, "'mode' = -1"}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        uint8_t *b = malloc(len);
        assert_non_null(b);
        memcpy(b, out, len);
        st32(b + at + 4 * bad[k].word, bad[k].v);
        tio_error e;
        tio_container *t = open_mem(b, len, 0, &e);
        if (!t) fail_msg("%s", e.message);
        tio_node_info ni;
        size_t j = only_node(tio_container_graph(t), "Pad", &ni);
        assert_int_equal(ni.input_count, 1); /* not raised */
        (void)j;
        assert_writes(t, b, len);
        assert_int_equal(save_onnx(t, &e), TIO_E_UNSUPPORTED);
        if (!strstr(e.message, bad[k].needle)) fail_msg("'%s' not in: %s", bad[k].needle, e.message);
        tio_container_free(t);
        free(b);
    }
    /* a Pad without a param (offset_t_param 0; the fuzzer's find) reads as
     * the zeroed param a write gives it: raised, with pads of 0 and value 0,
     * so a write and a read back change nothing */
    {
        /* the writer puts the param (9 words, then value) just before its TM2_Operator */
        uint32_t op = (uint32_t)at + 40;
        assert_int_equal(ld32(out + op + 8), (uint32_t)at);
        uint8_t *b = malloc(len);
        assert_non_null(b);
        memcpy(b, out, len);
        st32(b + op + 8, 0);
        tio_error e0;
        tio_container *t = open_mem(b, len, 0, &e0);
        if (!t) fail_msg("%s", e0.message);
        int found = 0;
        for (size_t k = 0; k < tio_container_warning_count(t); k++)
            if (strstr(tio_container_warning(t, k)->message, "Pad has no param")) found = 1;
        assert_true(found);
        tio_node_info ni;
        only_node(tio_container_graph(t), "Pad", &ni);
        assert_int_equal(ni.input_count, 3); /* x, pads, value */
        const tio_tensor *pt = tio_container_find(t, "pad:pads");
        assert_non_null(pt);
        static const int64_t zero8[8];
        assert_memory_equal(tio_tensor_data(pt), zero8, sizeof zero8);
        size_t len2;
        uint8_t *out2 = save_mem(t, 0, &len2);
        tio_container *t2 = open_mem(out2, len2, 0, &e0);
        if (!t2) fail_msg("%s", e0.message);
        assert_int_equal(tio_container_count(t2), tio_container_count(t));
        assert_writes(t2, out2, len2);
        tio_container_free(t2);
        tio_free(out2);
        tio_container_free(t);
        free(b);
    }
    /* the int64 pads constant is dropped only when the Pad alone reads it:
     * as a graph output too, the writer refuses it (tmfile has no int64) */
    tio_error e;
    tio_container *t = open_mem(out, len, 0, &e);
    if (!t) fail_msg("%s", e.message);
    tio_graph *g = tio_container_graph(t);
    int64_t go[2] = {tio_graph_outputs(g)[0], tio_graph_find_value(g, "pad:pads")};
    assert_true(go[1] >= 0);
    assert_int_equal(tio_graph_set_outputs(g, go, 2, &e), TIO_OK);
    save_fails(t, TIO_E_LOSSY, "dtype int64 has no tmfile data type");
    tio_container_free(t);
    tio_free(out);
    /* ONNX's negative pads crop: tmfile's Pad cannot */
    const int64_t crop[8] = {0, 0, -1, 0, 0, 0, 0, 0};
    c = build_pad(NULL, crop);
    save_fails(c, TIO_E_UNSUPPORTED, "pads[2] = -1: tmfile's Pad cannot crop");
    tio_container_free(c);
    /* an unknown mode */
    c = build_pad("wrap", pad_vals);
    save_fails(c, TIO_E_UNSUPPORTED, "Pad mode must be constant, edge or reflect");
    tio_container_free(c);
}

/* Tengine's Clip raised to ONNX's (opset 13): min and max as new float32
 * scalar constant inputs "<node>:min", "<node>:max"; the file read back
 * writes the same bytes. A Clip of an int8 input is not raised (ONNX's Clip
 * takes bounds of the input's type), and its ONNX export names why. */
static tio_container *build_clip(tio_dtype dt) {
    tio_graph *g;
    tio_container *c = new_graph(&g);
    tio_error e;
    static const float lo = -1.0f, hi = 0.75f;
    size_t vl = add_const_raw(c, g, "lo", TIO_FLOAT32, NULL, 0, &lo, sizeof lo);
    size_t vh = add_const_raw(c, g, "hi", TIO_FLOAT32, NULL, 0, &hi, sizeof hi);
    tio_dim d[2] = {{2, NULL}, {3, NULL}};
    tio_value_info vi = {0};
    vi.tensor = -1;
    vi.dtype = dt;
    vi.rank = 2;
    vi.dims = d;
    size_t x, y;
    vi.name = "x";
    assert_int_equal(tio_graph_add_value(g, &vi, &x, &e), TIO_OK);
    vi.name = "y";
    assert_int_equal(tio_graph_add_value(g, &vi, &y, &e), TIO_OK);
    int64_t in[3] = {(int64_t)x, (int64_t)vl, (int64_t)vh};
    add_node(g, "clip", "Clip", in, 3, (int64_t)y);
    set_io(g, x, y);
    return c;
}

static void test_clip_raise(void **state) {
    (void)state;
    tio_container *c = build_clip(TIO_FLOAT32);
    size_t len;
    uint8_t *out = save_mem(c, 0, &len);
    tio_container_free(c);
    tio_error e;
    tio_container *t = open_mem(out, len, 0, &e);
    if (!t) fail_msg("%s", e.message);
    const tio_graph *g = tio_container_graph(t);
    tio_node_info ni;
    size_t j = only_node(g, "Clip", &ni);
    assert_int_equal(ni.input_count, 3);
    assert_int_equal(ni.attr_count, 0);
    static const char *const names[2] = {"clip:min", "clip:max"};
    static const float want[2] = {-1.0f, 0.75f};
    for (size_t k = 1; k < 3; k++) {
        tio_value_info vi;
        assert_int_equal(tio_graph_value(g, (size_t)ni.inputs[k], &vi), TIO_OK);
        assert_string_equal(vi.name, names[k - 1]);
        const tio_tensor *b = tio_container_tensor(t, (size_t)vi.tensor);
        assert_int_equal(tio_tensor_dtype(b), TIO_FLOAT32);
        assert_int_equal(tio_tensor_rank(b), 0);
        float f;
        memcpy(&f, tio_tensor_data(b), 4);
        assert_true(f == want[k - 1]);
    }
    (void)j;
    assert_writes(t, out, len);
    if (save_onnx(t, &e) != TIO_OK) fail_msg("onnx: %s", e.message);
    tio_container_free(t);
    tio_free(out);
    /* int8: Tengine's form kept, the export refused by name */
    c = build_clip(TIO_INT8);
    out = save_mem(c, 0, &len);
    tio_container_free(c);
    t = open_mem(out, len, 0, &e);
    if (!t) fail_msg("%s", e.message);
    only_node(tio_container_graph(t), "Clip", &ni);
    assert_int_equal(ni.input_count, 1);
    assert_writes(t, out, len);
    assert_int_equal(save_onnx(t, &e), TIO_E_UNSUPPORTED);
    if (!strstr(e.message, "Tengine's Clip clips int8 values"))
        fail_msg("not named: %s", e.message);
    tio_container_free(t);
    tio_free(out);
}

/* ONNX's Slice over three axes: a chain of three Tengine Slices (one axis
 * each, in the order given) through new values named clear of the graph's
 * ("y:slice1" is taken), their shapes inferred; read back, the tmfile
 * writes the same bytes. */
static void test_slice_axes(void **state) {
    (void)state;
    tio_graph *g;
    tio_container *c = new_graph(&g);
    tio_error e;
    static const int64_t st[3] = {0, 1, 2}, en[3] = {1, 3, 7}, ax[3] = {1, 2, -1},
                         sp[3] = {1, 1, 2};
    int64_t three[1] = {3};
    size_t vs = add_const_raw(c, g, "starts", TIO_INT64, three, 1, st, sizeof st);
    size_t ve = add_const_raw(c, g, "ends", TIO_INT64, three, 1, en, sizeof en);
    size_t va = add_const_raw(c, g, "axes", TIO_INT64, three, 1, ax, sizeof ax);
    size_t vp = add_const_raw(c, g, "steps", TIO_INT64, three, 1, sp, sizeof sp);
    int64_t xs[4] = {1, 3, 8, 8}, ys[4] = {1, 1, 2, 3};
    size_t x = add_value(g, "x", xs, 4), y = add_value(g, "y", ys, 4),
           taken = add_value(g, "y:slice1", xs, 4);
    int64_t in[5] = {(int64_t)x, (int64_t)vs, (int64_t)ve, (int64_t)va, (int64_t)vp};
    add_node(g, "slice", "Slice", in, 5, (int64_t)y);
    int64_t in2[1] = {(int64_t)x};
    add_node(g, "relu", "Relu", in2, 1, (int64_t)taken);
    int64_t gi[1] = {(int64_t)x}, go[2] = {(int64_t)y, (int64_t)taken};
    assert_int_equal(tio_graph_set_inputs(g, gi, 1, &e), TIO_OK);
    assert_int_equal(tio_graph_set_outputs(g, go, 2, &e), TIO_OK);
    size_t len;
    uint8_t *out = save_mem(c, 0, &len);
    tio_container_free(c);
    tio_container *t = open_mem(out, len, TIO_OPEN_STRICT | TIO_OPEN_NATIVE_GRAPH, &e);
    if (!t) fail_msg("%s", e.message);
    const tio_graph *ng = tio_container_graph(t);
    /* the chain: x -> y:slice2 -> y:slice3 -> y */
    static const char *const outs[3] = {"y:slice2", "y:slice3", "y"};
    static const int64_t dims[3][4] = {{1, 1, 8, 8}, {1, 1, 2, 8}, {1, 1, 2, 3}};
    int64_t prev = tio_graph_find_value(ng, "x");
    size_t found = 0;
    for (size_t j = 0; j < tio_graph_node_count(ng); j++) {
        tio_node_info ni;
        tio_graph_node(ng, j, &ni);
        if (strcmp(ni.native_op ? ni.native_op : ni.op, "Slice") != 0) continue;
        assert_true(found < 3);
        assert_int_equal(ni.input_count, 1);
        assert_int_equal(ni.inputs[0], prev);
        assert_int_equal(find_int(ng, j, "axis"), ax[found]);
        assert_int_equal(find_int(ng, j, "begin"), st[found]);
        assert_int_equal(find_int(ng, j, "end"), en[found]);
        assert_int_equal(find_int(ng, j, "step"), sp[found]);
        assert_int_equal(find_int(ng, j, "isonnx"), 1);
        tio_value_info vi;
        tio_graph_value(ng, (size_t)ni.outputs[0], &vi);
        assert_string_equal(vi.name, outs[found]);
        assert_int_equal(vi.rank, 4);
        for (int k = 0; k < 4; k++) assert_int_equal(vi.dims[k].value, dims[found][k]);
        prev = ni.outputs[0];
        found++;
    }
    assert_int_equal(found, 3);
    /* read back (either form), the same bytes */
    assert_writes(t, out, len);
    tio_container *r = open_mem(out, len, 0, &e);
    assert_non_null(r);
    assert_writes(r, out, len);
    tio_container_free(r);
    tio_container_free(t);
    tio_free(out);
}

/* A Slice whose axes repeat (invalid ONNX) is not split: refused by name. */
static void test_slice_axes_refused(void **state) {
    (void)state;
    tio_graph *g;
    tio_container *c = new_graph(&g);
    int64_t xs[4] = {1, 3, 8, 8}, ys[4] = {1, 3, 8, 2};
    size_t x = add_value(g, "x", xs, 4), y = add_value(g, "y", ys, 4);
    int64_t in[1] = {(int64_t)x};
    size_t j = add_node(g, "slice", "Slice", in, 1, (int64_t)y);
    static const int64_t st[2] = {0, 0}, en[2] = {4, 2}, ax[2] = {3, -1};
    attr_ints(g, j, "starts", st, 2);
    attr_ints(g, j, "ends", en, 2);
    attr_ints(g, j, "axes", ax, 2);
    set_io(g, x, y);
    save_fails(c, TIO_E_UNSUPPORTED, "tmfile's Slice cuts one axis, and 'starts'");
    tio_container_free(c);
}


/* Reshapes whose shape constant becomes re_shape in the tmfile get a stand-in
 * constant each when read ("shp:re_shape[N]"), a name no value of the file
 * has: here K graph inputs take "shp:re_shape", "shp:re_shape1" ... and C
 * Reshapes of one shape ask for the same stem. Each gets its own name past
 * them (they all got "shp:re_shapeK", probing K names each: C x K). */
static void test_fresh_names(void **state) {
    (void)state;
    enum { C = 60, K = 40 };
    tio_graph *g = NULL;
    tio_container *c = new_graph(&g);
    tio_error e;
    const int64_t one[1] = {4}, two[2] = {1, 4}, sh[1] = {2};
    static const int64_t shape[2] = {4, 1};
    int64_t ins[K + 1];
    ins[0] = (int64_t)add_value(g, "x", two, 2);
    char nm[32];
    for (int k = 0; k < K; k++) {
        snprintf(nm, sizeof nm, k ? "shp:re_shape%d" : "shp:re_shape", k);
        ins[k + 1] = (int64_t)add_value(g, nm, one, 1);
    }
    size_t shp = add_const_raw(c, g, "shp", TIO_INT64, sh, 1, shape, sizeof shape);
    int64_t outs[C];
    for (int j = 0; j < C; j++) {
        snprintf(nm, sizeof nm, "y%d", j);
        const int64_t yd[2] = {4, 1};
        outs[j] = (int64_t)add_value(g, nm, yd, 2);
        int64_t in[2] = {ins[0], (int64_t)shp};
        add_node(g, "shape", "Reshape", in, 2, outs[j]);
    }
    assert_int_equal(tio_graph_set_inputs(g, ins, K + 1, &e), TIO_OK);
    assert_int_equal(tio_graph_set_outputs(g, outs, C, &e), TIO_OK);
    size_t len;
    uint8_t *buf = save_mem(c, 0, &len);
    tio_container_free(c);
    tio_open_options o = {0};
    o.format = "tmfile";
    tio_container *r = NULL;
    if (tio_open_memory(buf, len, &o, &r, &e)) fail_msg("open: %s", e.message);
    const tio_graph *rg = tio_container_graph(r);
    const char *names[C];
    size_t found = 0;
    for (size_t j = 0; j < tio_graph_node_count(rg); j++) {
        tio_node_info ni;
        assert_int_equal(tio_graph_node(rg, j, &ni), TIO_OK);
        if (strcmp(ni.op, "Reshape") != 0) continue;
        assert_int_equal(ni.input_count, 2);
        tio_value_info vi;
        assert_int_equal(tio_graph_value(rg, (size_t)ni.inputs[1], &vi), TIO_OK);
        assert_true(vi.tensor >= 0);
        for (size_t m = 0; m < found; m++) assert_string_not_equal(names[m], vi.name);
        for (int k = 0; k < K; k++) {
            snprintf(nm, sizeof nm, k ? "shp:re_shape%d" : "shp:re_shape", k);
            assert_string_not_equal(vi.name, nm);
        }
        names[found++] = vi.name;
    }
    assert_int_equal(found, C);
    tio_container_free(r);
    tio_free(buf);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_foreign_graph),
        cmocka_unit_test(test_foreign_graph_nofuse),
        cmocka_unit_test(test_write_refusals),
        cmocka_unit_test(test_private_attrs),
        cmocka_unit_test(test_api_dtypes),
        cmocka_unit_test(test_from_rten),
        cmocka_unit_test(test_opmap_round_trip),
        cmocka_unit_test(test_raised_vectors),
        cmocka_unit_test(test_onnx_export),
        cmocka_unit_test(test_relu6_clip),
        cmocka_unit_test(test_conv_relu6),
        cmocka_unit_test(test_reshape_one_input),
        cmocka_unit_test(test_fresh_names),
        cmocka_unit_test(test_pad_raise),
        cmocka_unit_test(test_pad_hostile),
        cmocka_unit_test(test_clip_raise),
        cmocka_unit_test(test_slice_axes),
        cmocka_unit_test(test_slice_axes_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
