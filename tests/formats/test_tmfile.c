/* Tengine tmfile: every vector against its manifest (constants, nodes, params,
 * inputs/outputs), masked byte identity of read->write for the convert_tool
 * files and old C++ files synthesized from them, truncations at every length,
 * corrupted offsets, limits and the probe. Graphs through the API, writer
 * refusals and graphs from other formats: test_tmfile_graph.c. */
#include "tmfile_common.h"


static tio_dtype tm_dtype(const char *s) {
    if (!strcmp(s, "fp32")) return TIO_FLOAT32;
    if (!strcmp(s, "fp16")) return TIO_FLOAT16;
    if (!strcmp(s, "int8")) return TIO_INT8;
    if (!strcmp(s, "uint8")) return TIO_UINT8;
    if (!strcmp(s, "int32")) return TIO_INT32;
    if (!strcmp(s, "int16")) return TIO_INT16;
    return TIO_DTYPE_INVALID;
}

/* The graph op tensio gives a tmfile node. */
static const char *expected_op(const char *tm, json_t *param) {
    if (!strcmp(tm, "Convolution")) return "Conv";
    if (!strcmp(tm, "FullyConnected")) return "Gemm";
    if (!strcmp(tm, "Pooling")) {
        int alg = (int)json_integer_value(json_object_get(param, "alg"));
        int global = (int)json_integer_value(json_object_get(param, "global"));
        if (alg == 0) return global ? "GlobalMaxPool" : "MaxPool";
        return global ? "GlobalAveragePool" : "AveragePool";
    }
    if (!strcmp(tm, "ReLu"))
        return json_real_value(json_object_get(param, "negative_slope")) == 0 ? "Relu"
                                                                              : "LeakyRelu";
    if (!strcmp(tm, "Eltwise")) {
        switch (json_integer_value(json_object_get(param, "type"))) {
        case 0: return "Mul";
        case 2: return "Add";
        case 4: return "Sub";
        default: return "Eltwise";
        }
    }
    if (!strcmp(tm, "Deconvolution")) return "ConvTranspose";
    if (!strcmp(tm, "PReLU")) return "PRelu";
    return tm; /* Concat, Reshape, Softmax, Flatten, MatMul, Const, InputOp, Upsample, ... */
}

/* The node's attributes hold the manifest's param (offset fields aside;
 * vectors under their own names). */
static void check_params(const tio_graph *g, size_t j, json_t *param, const char *tm,
                         int lite) {
    const char *key;
    json_t *val;
    size_t expected = 0;
    json_object_foreach(param, key, val) {
        tio_attr a;
        int rc = tio_graph_find_attr(g, j, key, &a);
        /* offsets of sub-vectors (the vector is under its own name); Crop's
         * offset_c/h/w are plain fields */
        if (!strncmp(key, "offset_", 7) && rc != TIO_OK) continue;
        /* lite Eltwise: caffe_flavor/shift/power/scale are uninitialised bytes */
        if (lite && !strcmp(tm, "Eltwise") && strcmp(key, "type") != 0) {
            assert_int_equal(rc, TIO_E_NOT_FOUND);
            continue;
        }
        if (rc != TIO_OK) fail_msg("node %zu: no attribute %s", j, key);
        expected++;
        if (json_is_integer(val)) {
            assert_int_equal(a.type, TIO_ATTR_INT);
            assert_int_equal(a.i, json_integer_value(val));
        } else if (json_is_real(val)) {
            assert_int_equal(a.type, TIO_ATTR_FLOAT);
            /* the manifest prints floats with 9 significant digits */
            assert_true(fabs(a.f - json_real_value(val)) <= 1e-6 * fabs(a.f) + 1e-30);
        } else if (json_is_array(val)) {
            assert_int_equal(a.count, json_array_size(val));
            for (size_t m = 0; m < a.count; m++) {
                json_t *x = json_array_get(val, m);
                if (a.type == TIO_ATTR_INTS) assert_int_equal(a.ints[m], json_integer_value(x));
                else if (a.type == TIO_ATTR_FLOATS)
                    assert_true(fabs(a.floats[m] - json_number_value(x)) <=
                                1e-6 * fabs(a.floats[m]));
                else fail_msg("node %zu: %s has type %d", j, key, a.type);
            }
        } else {
            fail_msg("unexpected manifest param %s", key);
        }
    }
    /* no param attribute beyond the manifest's (tm2_* are tensio's own) */
    tio_node_info ni;
    assert_int_equal(tio_graph_node(g, j, &ni), TIO_OK);
    size_t own = 0;
    for (size_t k = 0; k < ni.attr_count; k++) {
        tio_attr a;
        tio_graph_attr(g, j, k, &a);
        if (!strncmp(a.name, "tm2_", 4)) own++;
    }
    if (ni.attr_count - own != expected)
        fail_msg("node %zu (%s): %zu attributes, the manifest has %zu", j, tm, ni.attr_count - own,
                 expected);
}

/* Graph inputs/outputs are the output tensors of the listed nodes. */
static void check_io(const tio_graph *g, json_t *nodes, json_t *list, int outputs) {
    size_t n = outputs ? tio_graph_output_count(g) : tio_graph_input_count(g);
    const int64_t *v = outputs ? tio_graph_outputs(g) : tio_graph_inputs(g);
    size_t m = 0;
    for (size_t k = 0; k < json_array_size(list); k++) {
        json_t *nd = json_array_get(nodes, (size_t)json_integer_value(json_array_get(list, k)));
        json_t *outs = json_object_get(nd, "outputs");
        for (size_t i = 0; i < json_array_size(outs); i++, m++) {
            assert_true(m < n);
            assert_int_equal(v[m], json_integer_value(json_array_get(outs, i)));
        }
    }
    assert_int_equal(m, n);
}

static void check_manifest(const tio_container *c, json_t *man, int lite) {
    assert_string_equal(tio_container_format(c), "tmfile");
    assert_string_equal(tio_container_prop_get(c, "variant"), lite ? "lite" : "old-cpp");
    assert_string_equal(tio_container_prop_get(c, "subgraph_size"), lite ? "40" : "36");
    assert_string_equal(tio_container_prop_get(c, "ver_main"), "2");
    json_t *hdr = json_object_get(man, "header");
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(json_object_get(hdr, "offset_root")));
    assert_string_equal(tio_container_prop_get(c, "offset_root"), buf);
    const tio_graph *g = tio_container_graph(c);
    assert_non_null(g);
    assert_string_equal(tio_graph_native_format(g), "tmfile");
    assert_string_equal(tio_graph_meta_get(g, "tmfile.variant"), lite ? "lite" : "old-cpp");
    json_t *model = json_object_get(man, "tm2_model");
    json_t *mname = json_object_get(model, "name");
    if (json_is_string(mname))
        assert_string_equal(tio_graph_meta_get(g, "tmfile.model_name"), json_string_value(mname));
    else
        assert_null(tio_graph_meta_get(g, "tmfile.model_name"));

    /* tensors: one value each; constants with data are container tensors */
    json_t *tensors = json_object_get(man, "tensors"), *nodes = json_object_get(man, "nodes");
    assert_int_equal(tio_graph_value_count(g), json_array_size(tensors));
    size_t ct = 0;
    for (size_t i = 0; i < json_array_size(tensors); i++) {
        json_t *t = json_array_get(tensors, i);
        tio_value_info vi;
        assert_int_equal(tio_graph_value(g, i, &vi), TIO_OK);
        json_t *jn = json_object_get(t, "name");
        if (json_is_string(jn)) assert_string_equal(vi.name, json_string_value(jn));
        json_t *dims = json_object_get(t, "dims");
        json_t *buffer = json_object_get(t, "buffer");
        int has_data = buffer && json_integer_value(json_object_get(buffer, "offset_data")) != 0;
        const char *dts = json_string_value(json_object_get(t, "dtype"));
        if (has_data) {
            assert_int_equal(vi.tensor, (int64_t)ct);
            const tio_tensor *tt = tio_container_tensor(c, ct++);
            assert_int_equal(tio_tensor_dtype(tt), tm_dtype(dts));
            assert_int_equal(tio_tensor_rank(tt), json_array_size(dims));
            for (size_t d = 0; d < json_array_size(dims); d++)
                assert_int_equal(tio_tensor_shape(tt)[d], json_integer_value(json_array_get(dims, d)));
            uint8_t h[32];
            char hex[65];
            assert_int_equal(tio_tensor_sha256(tt, TIO_HASH_DENSE, h, NULL), TIO_OK);
            tvec_hex(h, 32, hex);
            assert_string_equal(hex, json_string_value(json_object_get(buffer, "sha256")));
            assert_int_equal(tio_tensor_source_offset(tt),
                             json_integer_value(json_object_get(buffer, "offset_data")));
            assert_true(tio_tensor_is_aligned(tt));
        } else {
            assert_int_equal(vi.tensor, -1);
            if (dts) assert_int_equal(vi.dtype, tm_dtype(dts));
            if (json_is_array(dims)) {
                assert_int_equal(vi.rank, (int64_t)json_array_size(dims));
                for (size_t d = 0; d < json_array_size(dims); d++)
                    assert_int_equal(vi.dims[d].value, json_integer_value(json_array_get(dims, d)));
            }
        }
    }
    assert_int_equal(tio_container_count(c), ct);

    /* nodes */
    assert_int_equal(tio_graph_node_count(g), json_array_size(nodes));
    for (size_t j = 0; j < json_array_size(nodes); j++) {
        json_t *nd = json_array_get(nodes, j);
        tio_node_info ni;
        assert_int_equal(tio_graph_node(g, j, &ni), TIO_OK);
        const char *tm = json_string_value(json_object_get(nd, "tm2_op_name"));
        json_t *param = json_object_get(nd, "param");
        assert_string_equal(ni.name, json_string_value(json_object_get(nd, "name")));
        assert_int_equal(ni.native_id, json_integer_value(json_object_get(nd, "tm2_op_type")));
        assert_string_equal(ni.native_op ? ni.native_op : ni.op, tm);
        assert_string_equal(ni.op, expected_op(tm, param));
        json_t *ins = json_object_get(nd, "inputs"), *outs = json_object_get(nd, "outputs");
        assert_int_equal(ni.input_count, json_array_size(ins));
        for (size_t k = 0; k < ni.input_count; k++)
            assert_int_equal(ni.inputs[k], json_integer_value(json_array_get(ins, k)));
        assert_int_equal(ni.output_count, json_array_size(outs));
        for (size_t k = 0; k < ni.output_count; k++)
            assert_int_equal(ni.outputs[k], json_integer_value(json_array_get(outs, k)));
        if (json_is_object(param)) check_params(g, j, param, tm, lite);
    }
    json_t *sub = json_object_get(man, "subgraph");
    check_io(g, nodes, json_object_get(sub, "input_nodes"), 0);
    check_io(g, nodes, json_object_get(sub, "output_nodes"), 1);
}

static void test_lite_vectors(void **state) {
    (void)state;
    size_t checked = 0;
    for (size_t i = 0; i < NLITE; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "tmfile/%s.json", lite_models[i]);
        json_t *m = tvec_manifest(rel);
        if (!m) continue;
        snprintf(rel, sizeof rel, "tmfile/%s.tmfile", lite_models[i]);
        char *p = tvec_path_or_skip(rel);
        if (!p) {
            json_decref(m);
            continue;
        }
        tio_container *c = open_path(p);
        assert_int_equal(tio_container_warning_count(c), 0);
        assert_int_equal(tio_container_source_size(c),
                         json_integer_value(json_object_get(m, "tmfile_size")));
        check_manifest(c, m, 1);
        const tio_graph *g = tio_container_graph(c);
        assert_string_equal(tio_graph_meta_get(g, "tmfile.orig_format"), "onnx");
        assert_string_equal(tio_graph_meta_get(g, "tmfile.graph_layout"), "NCHW");
        /* the same file from memory, strictly (no findings) */
        uint8_t *b;
        size_t len;
        assert_int_equal(tvec_read(p, &b, &len), 0);
        tio_error e;
        tio_container *c2 = open_mem(b, len, TIO_OPEN_STRICT, &e);
        if (!c2) fail_msg("%s: %s", rel, e.message);
        tio_container_free(c2);
        free(b);
        tio_container_free(c);
        free(p);
        json_decref(m);
        checked++;
    }
    if (tvec_have_shared()) assert_int_equal(checked, NLITE);
    else assert_int_equal(checked, 3);
}

/* Old C++ writer files (36-byte subgraph, model name, old op table),
 * synthesized from each convert_tool vector with tensio's old-variant writer:
 * they read back as old-cpp with the same graph and weights, and re-encode
 * to the same bytes. (Tengine's own old benchmark models are not
 * redistributed here.) */
static void test_old_cpp_vectors(void **state) {
    (void)state;
    size_t checked = 0;
    for (size_t i = 0; i < NLITE; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "tmfile/%s.tmfile", lite_models[i]);
        size_t len;
        uint8_t *ref = tvec_load(rel, &len);
        if (!ref) continue;
        tio_error e;
        tio_container *c = open_mem(ref, len, 0, &e);
        if (!c) fail_msg("%s: %s", rel, e.message);
        tio_graph *g = tio_container_graph(c);
        assert_int_equal(tio_graph_meta_set(g, "tmfile.variant", "old-cpp", &e), TIO_OK);
        assert_int_equal(tio_graph_meta_set(g, "tmfile.model_name", lite_models[i], &e), TIO_OK);
        size_t olen;
        void *out = NULL;
        tio_save_options so = {0};
        so.format = "tmfile";
        if (tio_save_memory(c, &so, &out, &olen, &e) != TIO_OK) {
            /* mlp_matmul_add: Reshape's is_onnx has no old field */
            assert_int_equal(e.code, TIO_E_LOSSY);
            tio_container_free(c);
            free(ref);
            continue;
        }
        tio_container *old = open_mem(out, olen, TIO_OPEN_STRICT, &e);
        if (!old) fail_msg("%s as old-cpp: %s", rel, e.message);
        assert_string_equal(tio_container_prop_get(old, "variant"), "old-cpp");
        assert_string_equal(tio_container_prop_get(old, "subgraph_size"), "36");
        const tio_graph *og = tio_container_graph(old);
        assert_string_equal(tio_graph_meta_get(og, "tmfile.model_name"), lite_models[i]);
        assert_int_equal(tio_graph_node_count(og), tio_graph_node_count(g));
        for (size_t k = 0; k < tio_graph_node_count(g); k++) {
            tio_node_info a, b;
            tio_graph_node(g, k, &a);
            tio_graph_node(og, k, &b);
            assert_string_equal(a.op, b.op);
        }
        assert_int_equal(tio_container_count(old), tio_container_count(c));
        for (size_t k = 0; k < tio_container_count(c); k++) {
            uint8_t h1[32], h2[32];
            tio_tensor_sha256(tio_container_tensor(c, k), TIO_HASH_DENSE, h1, NULL);
            tio_tensor_sha256(tio_container_tensor(old, k), TIO_HASH_DENSE, h2, NULL);
            assert_memory_equal(h1, h2, 32);
        }
        size_t olen2;
        uint8_t *again = save_mem(old, 0, &olen2);
        assert_int_equal(olen, olen2);
        assert_memory_equal(out, again, olen);
        tio_free(again);
        tio_container_free(old);
        tio_free(out);
        tio_container_free(c);
        free(ref);
        checked++;
    }
    assert_true(checked >= (tvec_have_shared() ? 2u : 1u)); /* Reshape is_onnx refuses the others */
}

/* --------------------------------------------------------- write-back */

/* Equal outside the masked ranges (compared as zeros in both). */
static void masked_equal(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen,
                         json_t *masks, const char *what) {
    assert_int_equal(alen, blen);
    uint8_t *x = malloc(alen), *y = malloc(blen);
    memcpy(x, a, alen);
    memcpy(y, b, blen);
    for (size_t k = 0; k < json_array_size(masks); k++) {
        json_t *mk = json_array_get(masks, k);
        size_t s, en;
        if (json_is_array(mk)) {
            s = (size_t)json_integer_value(json_array_get(mk, 0));
            en = (size_t)json_integer_value(json_array_get(mk, 1));
        } else {
            s = (size_t)json_integer_value(json_object_get(mk, "start"));
            en = (size_t)json_integer_value(json_object_get(mk, "end"));
        }
        for (size_t i = s; i < en && i < alen; i++) x[i] = y[i] = 0;
        /* tensio writes zeros there */
        for (size_t i = s; i < en && i < blen; i++) assert_int_equal(b[i], 0);
    }
    for (size_t i = 0; i < alen; i++)
        if (x[i] != y[i]) fail_msg("%s: byte %zu differs: %02x (reference) vs %02x", what, i, x[i], y[i]);
    free(x);
    free(y);
}

static void round_trip(const char *rel, json_t *masks) {
    size_t len;
    uint8_t *ref = tvec_load(rel, &len);
    if (!ref) return;
    tio_error e;
    tio_container *c = open_mem(ref, len, 0, &e);
    if (!c) fail_msg("%s: %s", rel, e.message);
    size_t olen, olen2;
    uint8_t *out = save_mem(c, 0, &olen);
    masked_equal(ref, len, out, olen, masks, rel);
    /* deterministic, and a fixed point */
    uint8_t *again = save_mem(c, 0, &olen2);
    assert_int_equal(olen, olen2);
    assert_memory_equal(out, again, olen);
    tio_free(again);
    tio_container *back = open_mem(out, olen, 0, &e);
    if (!back) fail_msg("%s re-read: %s", rel, e.message);
    again = save_mem(back, 0, &olen2);
    assert_int_equal(olen, olen2);
    assert_memory_equal(out, again, olen);
    tio_free(again);
    tio_container_free(back);
    tio_free(out);
    tio_container_free(c);
    free(ref);
}

static void test_write_back_lite(void **state) {
    (void)state;
    for (size_t i = 0; i < NLITE; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "tmfile/%s.json", lite_models[i]);
        json_t *m = tvec_manifest(rel);
        if (!m) continue;
        snprintf(rel, sizeof rel, "tmfile/%s.tmfile", lite_models[i]);
        round_trip(rel, json_object_get(json_object_get(m, "nondeterministic_bytes"), "masks"));
        json_decref(m);
    }
}

/* The lite <-> old C++ variants, chosen by the tmfile.variant metadata. */
static void test_variant_switch(void **state) {
    (void)state;
    size_t len;
    uint8_t *ref = tvec_load("tmfile/cnn_small.tmfile", &len);
    if (!ref) return;
    tio_error e;
    tio_container *c = open_mem(ref, len, 0, &e);
    tio_graph *g = tio_container_graph(c);
    assert_int_equal(tio_graph_meta_set(g, "tmfile.variant", "old-cpp", &e), TIO_OK);
    assert_int_equal(tio_graph_meta_set(g, "tmfile.model_name", "cnn", &e), TIO_OK);
    size_t olen;
    uint8_t *out = save_mem(c, 0, &olen);
    tio_container *old = open_mem(out, olen, TIO_OPEN_STRICT, &e);
    if (!old) fail_msg("%s", e.message);
    assert_string_equal(tio_container_prop_get(old, "variant"), "old-cpp");
    assert_string_equal(tio_container_prop_get(old, "subgraph_size"), "36");
    assert_string_equal(tio_graph_meta_get(tio_container_graph(old), "tmfile.model_name"), "cnn");
    /* the same graph, and again the same bytes */
    size_t olen2;
    uint8_t *again = save_mem(old, 0, &olen2);
    assert_int_equal(olen, olen2);
    assert_memory_equal(out, again, olen);
    tio_free(again);
    tio_container_free(old);
    tio_free(out);
    tio_container_free(c);

    /* MatMul is 91 in lite, 88 in the old table; Reshape's is_onnx has no old field */
    uint8_t *mlp = tvec_load("tmfile/mlp_matmul_add.tmfile", &len);
    c = open_mem(mlp, len, 0, &e);
    g = tio_container_graph(c);
    assert_int_equal(tio_graph_meta_set(g, "tmfile.variant", "old-cpp", &e), TIO_OK);
    save_fails(c, TIO_E_LOSSY, "is_onnx");
    /* op_ver 1 selects the old V1 Reshape struct */
    assert_int_equal(tio_graph_meta_set(g, "tmfile.op_ver", "1", &e), TIO_OK);
    save_fails(c, TIO_E_LOSSY, "TM2_ReshapeParam_V1");
    tio_container_free(c);
    free(mlp);

    free(ref);
}

/* ------------------------------------------------------- hostile input */

static void test_truncations(void **state) {
    (void)state;
    const char *files[] = {"tmfile/concat_reshape_softmax.tmfile", "tmfile/cnn_small.tmfile",
                           "tmfile/mlp_matmul_add.tmfile"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        size_t len;
        uint8_t *b = tvec_load(files[f], &len);
        if (!b) continue;
        for (size_t n = 0; n < len; n++) {
            uint8_t *cut = malloc(n ? n : 1); /* exact size: ASan sees any over-read */
            memcpy(cut, b, n);
            tio_error e;
            tio_container *c = open_mem(cut, n, 0, &e);
            if (c) fail_msg("%s cut to %zu bytes opened", files[f], n);
            free(cut);
        }
        free(b);
    }
}

/* Every 32-bit word of a file replaced by hostile values: a clean error or
 * a container that can be hashed and re-encoded (or refused) cleanly. */
static void test_corrupted_words(void **state) {
    (void)state;
    const char *files[] = {"tmfile/concat_reshape_softmax.tmfile", "tmfile/mlp_matmul_add.tmfile"};
    for (size_t f = 0; f < 2; f++) {
        size_t len;
        uint8_t *b = tvec_load(files[f], &len);
        if (!b) continue;
        uint8_t *x = malloc(len);
        const uint32_t vals[] = {0,          1,          4,          0xffffffffu, 0x7fffffffu,
                                 0x80000000u, 0xfffffffcu, (uint32_t)len, (uint32_t)len - 1,
                                 (uint32_t)len - 4, 9,     12,         0x10000};
        for (size_t w = 0; w + 4 <= len; w += 4) {
            uint32_t orig = ld32(b + w);
            for (size_t v = 0; v < sizeof vals / sizeof vals[0] + 2; v++) {
                memcpy(x, b, len);
                uint32_t nv = v < sizeof vals / sizeof vals[0] ? vals[v] : orig + (v & 1 ? 4u : 1u);
                st32(x + w, nv);
                tio_error e;
                tio_container *c = open_mem(x, len, 0, &e);
                if (!c) continue;
                for (size_t i = 0; i < tio_container_count(c); i++) {
                    uint8_t h[32];
                    assert_int_equal(tio_tensor_sha256(tio_container_tensor(c, i), TIO_HASH_DENSE,
                                                       h, &e),
                                     TIO_OK);
                }
                tio_save_options so = {0};
                so.format = "tmfile";
                void *out;
                size_t olen;
                if (tio_save_memory(c, &so, &out, &olen, &e) == TIO_OK) {
                    tio_container *back = open_mem(out, olen, 0, &e);
                    if (!back) fail_msg("word %zu = %u: the re-encoding does not open: %s", w, nv, e.message);
                    tio_container_free(back);
                    tio_free(out);
                } else {
                    assert_string_equal(e.format, "tmfile");
                }
                tio_container_free(c);
            }
        }
        free(x);
        free(b);
    }
}

static void expect_fail(const uint8_t *b, size_t len, int code, const char *needle) {
    tio_error e;
    tio_container *c = open_mem(b, len, 0, &e);
    if (c) fail_msg("expected %s, but it opened", tio_status_name(code));
    if (e.code != code)
        fail_msg("expected %s, got %s: %s", tio_status_name(code), tio_status_name(e.code), e.message);
    if (needle && !strstr(e.message, needle)) fail_msg("'%s' not in: %s", needle, e.message);
}

/* Targeted corruptions of concat_reshape_softmax (offsets from its manifest). */
static void test_bad_fields(void **state) {
    (void)state;
    size_t len;
    uint8_t *b = tvec_load("tmfile/concat_reshape_softmax.tmfile", &len);
    if (!b) return;
    json_t *m = tvec_manifest("tmfile/concat_reshape_softmax.json");
    assert_non_null(m);
    json_t *tensors = json_object_get(m, "tensors"), *nodes = json_object_get(m, "nodes");
    uint32_t root = ld32(b + 8);
    uint32_t sub = (uint32_t)json_integer_value(json_object_get(json_object_get(m, "subgraph"), "offset"));
    uint32_t t0 = (uint32_t)json_integer_value(json_object_get(json_array_get(tensors, 0), "struct_offset"));
    uint32_t t1 = (uint32_t)json_integer_value(json_object_get(json_array_get(tensors, 1), "struct_offset"));
    uint32_t n3 = (uint32_t)json_integer_value(json_object_get(json_array_get(nodes, 3), "struct_offset"));
    uint8_t *x = malloc(len);
#define RESET memcpy(x, b, len)
    RESET; x[0] = 3;
    expect_fail(x, len, TIO_E_UNSUPPORTED, "ver_main is 3");
    RESET; st32(x + 8, 0);
    expect_fail(x, len, TIO_E_CORRUPT, "not set");
    RESET; st32(x + 8, (uint32_t)len - 8);
    expect_fail(x, len, TIO_E_BOUNDS, "past the end");
    RESET; st32(x + ld32(b + root + 8), 2); /* two subgraphs */
    expect_fail(x, len, TIO_E_UNSUPPORTED, "2 subgraphs");
    RESET; st32(x + ld32(b + root + 8), 0);
    expect_fail(x, len, TIO_E_CORRUPT, "no subgraph");
    RESET; st32(x + ld32(b + sub + 20), 0x40000000u); /* node count */
    expect_fail(x, len, TIO_E_BOUNDS, "vector of 1073741824 entries");
    RESET; st32(x + ld32(b + sub + 24), 0xffffffffu); /* tensor count */
    expect_fail(x, len, TIO_E_BOUNDS, "past the end");
    RESET; st32(x + sub + 24, 0);
    expect_fail(x, len, TIO_E_CORRUPT, "offset_vo_tensors: the offset is 0");
    /* node 3 (concat): an input index beyond the tensors */
    RESET; st32(x + ld32(b + n3 + 4) + 4, 6);
    expect_fail(x, len, TIO_E_CORRUPT, "tensor 6, but the file has 6 tensors");
    /* node 3 without outputs */
    RESET; st32(x + n3 + 8, 0);
    expect_fail(x, len, TIO_E_CORRUPT, "no outputs");
    /* node 3: operator offset past the end */
    RESET; st32(x + n3 + 12, (uint32_t)len - 4);
    expect_fail(x, len, TIO_E_BOUNDS, "TM2_Operator");
    /* tensor 1: 9 dims (Tengine's off-by-one accepts 9 into dims[8]) */
    RESET; st32(x + ld32(b + t1 + 8), 9);
    expect_fail(x, len, TIO_E_LIMIT, "9 dims exceed");
    RESET; st32(x + ld32(b + t1 + 8), 9);
    {
        /* a well-formed 9-dim vector at the end of a grown copy */
        uint8_t *y = malloc(len + 40);
        memcpy(y, x, len);
        st32(y + len, 9);
        for (int k = 0; k < 9; k++) st32(y + len + 4 + 4 * k, 1);
        st32(y + t1 + 8, (uint32_t)len);
        expect_fail(y, len + 40, TIO_E_LIMIT, "9 dims exceed");
        free(y);
    }
    /* tensor 1: a data type Tengine does not have */
    RESET; st32(x + t1 + 28, 7);
    expect_fail(x, len, TIO_E_DTYPE, "data_type 7");
    /* tensor 0 (the const): buffer id out of range, buffer too small, data past the end */
    RESET; st32(x + t0 + 4, 5);
    expect_fail(x, len, TIO_E_CORRUPT, "buffer_id 5");
    uint32_t buf0 = ld32(b + ld32(b + sub + 28) + 4);
    RESET; st32(x + buf0, 8);
    expect_fail(x, len, TIO_E_CORRUPT, "holds 8 bytes");
    RESET; st32(x + buf0 + 4, (uint32_t)len - 4);
    expect_fail(x, len, TIO_E_BOUNDS, "past the end");
    /* tensor 1: a negative dim */
    RESET; st32(x + ld32(b + t1 + 8) + 4, (uint32_t)-5);
    expect_fail(x, len, TIO_E_CORRUPT, "dim 0 is -5");
    /* names: a huge size, data past the end, no data offset */
    uint32_t s0 = ld32(b + t0 + 12);
    RESET; st32(x + s0, 0x7fffffff);
    expect_fail(x, len, TIO_E_LIMIT, "exceeds the limit");
    RESET; st32(x + s0 + 4, (uint32_t)len - 2);
    expect_fail(x, len, TIO_E_BOUNDS, "string data");
    RESET; st32(x + s0 + 4, 0);
    expect_fail(x, len, TIO_E_CORRUPT, "data offset is 0");
    /* graph input node index out of range */
    RESET; st32(x + ld32(b + sub + 12) + 4, 99);
    expect_fail(x, len, TIO_E_CORRUPT, "node 99, but the graph has 6 nodes");
    /* an unknown operator type: kept by number, with a finding */
    RESET; st32(x + ld32(b + n3 + 12) + 4, 104);
    {
        tio_error e;
        tio_container *c = open_mem(x, len, TIO_OPEN_NATIVE_GRAPH, &e);
        assert_non_null(c);
        assert_int_equal(tio_container_warning_count(c), 1);
        tio_node_info ni;
        tio_graph_node(tio_container_graph(c), 3, &ni);
        assert_string_equal(ni.op, "OpType104");
        assert_int_equal(ni.native_id, 104);
        /* its param (4 bytes before the operator) is kept raw, and written back */
        size_t olen;
        uint8_t *out = save_mem(c, 0, &olen);
        assert_int_equal(olen, len);
        masked_equal(x, len, out, olen, json_object_get(json_object_get(m, "nondeterministic_bytes"), "masks"), "raw param");
        tio_free(out);
        tio_container_free(c);
        assert_null(open_mem(x, len, TIO_OPEN_STRICT, &e));
        assert_int_equal(e.code, TIO_E_INVALID);
    }
    /* garbage in the fields real files leave uninitialised: no finding */
    RESET; x[6] = 0x12; x[7] = 0x34; st32(x + sub + 36, 0xdeadbeef);
    {
        tio_error e;
        tio_container *c = open_mem(x, len, TIO_OPEN_STRICT, &e);
        if (!c) fail_msg("%s", e.message);
        tio_container_free(c);
    }
#undef RESET
    free(x);
    free(b);
    json_decref(m);
}

static void test_limits(void **state) {
    (void)state;
    size_t len;
    uint8_t *b = tvec_load("tmfile/cnn_small.tmfile", &len);
    if (!b) return;
    tio_limits lim = {0};
    tio_open_options o = {0};
    o.format = "tmfile";
    o.limits = &lim;
    tio_container *c = NULL;
    tio_error e;
    lim.max_rank = 3;
    assert_int_equal(tio_open_memory(b, len, &o, &c, &e), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "4 dims exceed the limit of 3"));
    memset(&lim, 0, sizeof lim);
    lim.max_tensors = 2;
    assert_int_equal(tio_open_memory(b, len, &o, &c, &e), TIO_E_LIMIT);
    memset(&lim, 0, sizeof lim);
    lim.max_objects = 20;
    assert_int_equal(tio_open_memory(b, len, &o, &c, &e), TIO_E_LIMIT);
    memset(&lim, 0, sizeof lim);
    lim.max_name_bytes = 3;
    assert_int_equal(tio_open_memory(b, len, &o, &c, &e), TIO_E_LIMIT);
    assert_null(c);
    free(b);
}

static void test_probe(void **state) {
    (void)state;
    for (size_t i = 0; i < 3; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "tmfile/%s.tmfile", lite_models[i]);
        size_t len;
        uint8_t *b = tvec_load(rel, &len);
        if (!b) continue;
        assert_string_equal(tio_format_probe(b, len), "tmfile");
        tio_container *c = NULL;
        tio_error e;
        assert_int_equal(tio_open_memory(b, len, NULL, &c, &e), TIO_OK);
        assert_string_equal(tio_container_format(c), "tmfile");
        tio_container_free(c);
        free(b);
    }
    assert_string_equal(tio_format_for_path("x/model.tmfile"), "tmfile");
    uint8_t z[64] = {2, 0};
    assert_true(tio_format_probe(z, sizeof z) == NULL ||
                strcmp(tio_format_probe(z, sizeof z), "tmfile") != 0);
}


int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lite_vectors),
        cmocka_unit_test(test_old_cpp_vectors),
        cmocka_unit_test(test_write_back_lite),
        cmocka_unit_test(test_variant_switch),
        cmocka_unit_test(test_truncations),
        cmocka_unit_test(test_corrupted_words),
        cmocka_unit_test(test_bad_fields),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_probe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
