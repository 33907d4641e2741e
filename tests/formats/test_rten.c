/* RTen: every model vector against its manifest (constants, graph,
 * attributes, metadata), V1/V2 write->read round trips and layout, hostile
 * headers and FlatBuffers, graphs built through the API. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flatbuf/flatbuf.h"
#include "rten/opmap.h"
#include "rten/schema.h"
#include "tensio.h"
#include "tvec.h"

static const char *const models[] = {"matmul_add", "small_cnn", "shape_ops", "int_consts",
                                     "big_init"};
#define NMODELS (sizeof models / sizeof models[0])

static tio_container *open_mem(const void *buf, size_t len, unsigned flags, tio_error *e) {
    tio_open_options o = {0};
    o.flags = flags;
    tio_container *c = NULL;
    int rc = tio_open_memory(buf, len, &o, &c, e);
    if (rc) {
        assert_null(c);
        assert_int_equal(e->code, rc);
    }
    return c;
}

static tio_container *open_path(const char *path) {
    tio_container *c = NULL;
    tio_error e;
    int rc = tio_open(path, NULL, &c, &e);
    if (rc) fprintf(stderr, "%s: %s\n", path, e.message);
    assert_int_equal(rc, TIO_OK);
    return c;
}

/* "kernelSize" -> "kernel_size" */
static void snake(const char *camel, char *out, size_t cap) {
    size_t o = 0;
    for (const char *p = camel; *p && o + 2 < cap; p++) {
        if (isupper((unsigned char)*p)) {
            out[o++] = '_';
            out[o++] = (char)tolower((unsigned char)*p);
        } else {
            out[o++] = *p;
        }
    }
    out[o] = 0;
}

static tio_dtype const_dtype(const char *s) {
    if (!strcmp(s, "Float32") || !strcmp(s, "Float")) return TIO_FLOAT32;
    if (!strcmp(s, "Int32")) return TIO_INT32;
    if (!strcmp(s, "Int8")) return TIO_INT8;
    if (!strcmp(s, "UInt8")) return TIO_UINT8;
    return TIO_DTYPE_INVALID;
}

static const char *value_name(const tio_graph *g, int64_t v) {
    if (v < 0) return NULL;
    tio_value_info vi;
    assert_int_equal(tio_graph_value(g, (size_t)v, &vi), TIO_OK);
    return vi.name;
}

/* The container (from either file of a model) matches the manifest. */
static void check_against_manifest(const tio_container *c, json_t *m, int version) {
    json_t *graph = json_object_get(m, "graph");
    json_t *consts = json_object_get(graph, "constants");
    json_t *nodes = json_object_get(graph, "nodes");
    json_t *ops = json_object_get(graph, "operators");
    assert_string_equal(tio_container_format(c), "rten");
    char vbuf[4];
    snprintf(vbuf, sizeof vbuf, "%d", version);
    assert_string_equal(tio_container_prop_get(c, "version"), vbuf);
    assert_string_equal(tio_container_prop_get(c, "schema_version"), "1");
    assert_int_equal(tio_container_warning_count(c), 0);

    /* constants: dtype, shape, sha256 (the stored bytes) */
    assert_int_equal(tio_container_count(c), json_array_size(consts));
    for (size_t i = 0; i < json_array_size(consts); i++) {
        json_t *k = json_array_get(consts, i);
        const tio_tensor *t = tio_container_tensor(c, i);
        assert_string_equal(tio_tensor_name(t), json_string_value(json_object_get(k, "name")));
        assert_int_equal(tio_tensor_dtype(t),
                         const_dtype(json_string_value(json_object_get(k, "dtype"))));
        json_t *shape = json_object_get(k, "shape");
        assert_int_equal(tio_tensor_rank(t), json_array_size(shape));
        for (size_t d = 0; d < json_array_size(shape); d++)
            assert_int_equal(tio_tensor_shape(t)[d], json_integer_value(json_array_get(shape, d)));
        assert_int_equal(tio_tensor_nbytes(t), json_integer_value(json_object_get(k, "nbytes")));
        uint8_t h[32];
        char hex[65];
        assert_int_equal(tio_tensor_sha256(t, TIO_HASH_DENSE, h, NULL), TIO_OK);
        tvec_hex(h, 32, hex);
        assert_string_equal(hex, json_string_value(json_object_get(k, "sha256")));
        assert_true(tio_tensor_is_aligned(t));
    }

    const tio_graph *g = tio_container_graph(c);
    assert_non_null(g);
    assert_null(tio_graph_parent(g));
    assert_string_equal(tio_graph_native_format(g), "rten");
    /* values: every non-operator node, in file order */
    size_t nv = 0;
    for (size_t i = 0; i < json_array_size(nodes); i++) {
        json_t *n = json_array_get(nodes, i);
        const char *kind = json_string_value(json_object_get(n, "kind"));
        if (!strcmp(kind, "OperatorNode")) continue;
        tio_value_info vi;
        assert_int_equal(tio_graph_value(g, nv, &vi), TIO_OK);
        assert_string_equal(vi.name, json_string_value(json_object_get(n, "name")));
        if (!strcmp(kind, "ConstantNode")) {
            assert_true(vi.tensor >= 0);
        } else {
            assert_int_equal(vi.tensor, -1);
            assert_int_equal(vi.dtype, const_dtype(json_string_value(json_object_get(n, "dtype"))));
            json_t *shape = json_object_get(n, "shape");
            assert_int_equal(vi.rank, (int64_t)json_array_size(shape));
            for (size_t d = 0; d < json_array_size(shape); d++) {
                json_t *dj = json_array_get(shape, d);
                if (json_is_string(dj)) {
                    assert_non_null(vi.dims[d].name);
                    assert_string_equal(vi.dims[d].name, json_string_value(dj));
                } else {
                    assert_null(vi.dims[d].name);
                    assert_int_equal(vi.dims[d].value, json_integer_value(dj));
                }
            }
        }
        nv++;
    }
    assert_int_equal(tio_graph_value_count(g), nv);

    /* graph inputs and outputs, by name */
    const char *io[2] = {"inputs", "outputs"};
    for (int k = 0; k < 2; k++) {
        json_t *list = json_object_get(graph, io[k]);
        size_t n = k ? tio_graph_output_count(g) : tio_graph_input_count(g);
        const int64_t *ids = k ? tio_graph_outputs(g) : tio_graph_inputs(g);
        assert_int_equal(n, json_array_size(list));
        for (size_t i = 0; i < n; i++)
            assert_string_equal(value_name(g, ids[i]),
                                json_string_value(json_object_get(json_array_get(list, i), "name")));
    }

    /* operators: type, name, inputs/outputs by name, attributes */
    assert_int_equal(tio_graph_node_count(g), json_array_size(ops));
    for (size_t j = 0; j < json_array_size(ops); j++) {
        json_t *op = json_array_get(ops, j);
        tio_node_info ni;
        assert_int_equal(tio_graph_node(g, j, &ni), TIO_OK);
        assert_string_equal(ni.op, json_string_value(json_object_get(op, "type")));
        assert_int_equal(ni.native_id, json_integer_value(json_object_get(op, "type_id")));
        assert_string_equal(ni.name, json_string_value(json_object_get(op, "name")));
        json_t *ins = json_object_get(op, "inputs"), *outs = json_object_get(op, "outputs");
        assert_int_equal(ni.input_count, json_array_size(ins));
        for (size_t k = 0; k < ni.input_count; k++)
            assert_string_equal(value_name(g, ni.inputs[k]),
                                json_string_value(json_array_get(ins, k)));
        assert_int_equal(ni.output_count, json_array_size(outs));
        for (size_t k = 0; k < ni.output_count; k++)
            assert_string_equal(value_name(g, ni.outputs[k]),
                                json_string_value(json_array_get(outs, k)));
        json_t *attrs = json_object_get(op, "attrs");
        size_t expected = 0;
        const char *key;
        json_t *val;
        json_object_foreach(attrs, key, val) {
            if (json_is_null(val)) continue;
            expected++;
            char name[64], rname[80];
            snake(key, name, sizeof name);
            /* The manifest has rten's fields; the graph has their ONNX form
             * (src/rten/opmap.c): check the raise at the native level. */
            const tio_rten_fmap *fm =
                ni.native_id >= 0 && ni.native_id < TIO_RTEN_OP_COUNT
                    ? tio__rten_fmap_field(&tio__rten_opmap[ni.native_id], name)
                    : NULL;
            const char *gname = name;
            if (fm && fm->onnx) gname = fm->onnx;
            else {
                snprintf(rname, sizeof rname, "rten.%s", name);
                gname = rname;
            }
            tio_attr a;
            if (tio_graph_find_attr(g, j, gname, &a) != TIO_OK) fail_msg("node %zu: no attribute %s", j, gname);
            if (fm && fm->onnx && (fm->conv == TIO_RTEN_ENUM || fm->conv == TIO_RTEN_AUTOPAD)) {
                assert_int_equal(a.type, TIO_ATTR_STRING);
                assert_true(json_integer_value(val) < fm->nstrs);
                assert_string_equal(a.s, fm->strs[json_integer_value(val)]);
            } else if (fm && fm->onnx && fm->conv == TIO_RTEN_DTYPE) {
                assert_int_equal(a.i, tio__rten_dtype_to_onnx(json_integer_value(val)));
            } else if (json_is_boolean(val)) {
                assert_int_equal(a.type, TIO_ATTR_INT);
                assert_int_equal(a.i, json_is_true(val));
            } else if (json_is_integer(val)) {
                assert_int_equal(a.type, TIO_ATTR_INT);
                assert_int_equal(a.i, json_integer_value(val));
            } else if (json_is_real(val)) {
                assert_int_equal(a.type, TIO_ATTR_FLOAT);
                assert_true(a.f == json_real_value(val));
            } else if (json_is_array(val)) {
                assert_int_equal(a.type, TIO_ATTR_INTS);
                assert_int_equal(a.count, json_array_size(val));
                for (size_t q = 0; q < a.count; q++)
                    assert_int_equal(a.ints[q], json_integer_value(json_array_get(val, q)));
            } else {
                fail_msg("unexpected manifest attribute %s", key);
            }
        }
        assert_int_equal(ni.attr_count, expected);
    }

    /* metadata */
    json_t *meta = json_object_get(m, "metadata");
    const char *key;
    json_t *val;
    size_t nmeta = 0;
    json_object_foreach(meta, key, val) {
        if (json_is_null(val)) {
            assert_null(tio_graph_meta_get(g, key));
            continue;
        }
        nmeta++;
        assert_non_null(tio_graph_meta_get(g, key));
        assert_string_equal(tio_graph_meta_get(g, key), json_string_value(val));
    }
    assert_int_equal(tio_graph_meta_count(g), nmeta);
}

static void test_vectors_match_manifests(void **state) {
    (void)state;
    size_t checked = 0;
    for (size_t i = 0; i < NMODELS; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "rten/%s/%s.json", models[i], models[i]);
        json_t *m = tvec_manifest(rel);
        if (!m) continue;
        for (int v = 1; v <= 2; v++) {
            snprintf(rel, sizeof rel, "rten/%s/%s.v%d.rten", models[i], models[i], v);
            char *p = tvec_path_or_skip(rel);
            if (!p) continue;
            tio_container *c = open_path(p);
            check_against_manifest(c, m, v);
            /* V2 header facts and where each constant lives */
            json_t *f = json_object_get(json_object_get(m, "files"), v == 2 ? "v2" : "v1");
            assert_int_equal(tio_container_source_size(c),
                             json_integer_value(json_object_get(f, "size")));
            json_t *storage = json_object_get(f, "constant_storage");
            json_t *consts = json_object_get(json_object_get(m, "graph"), "constants");
            uint64_t model_off = v == 2 ? 32 : 0;
            for (size_t k = 0; k < json_array_size(consts); k++) {
                const tio_tensor *t = tio_container_tensor(c, k);
                json_t *s = json_object_get(storage, tio_tensor_name(t));
                if (!strcmp(json_string_value(json_object_get(s, "kind")), "external"))
                    assert_int_equal(tio_tensor_source_offset(t),
                                     json_integer_value(json_object_get(s, "abs_offset")));
                else
                    assert_int_equal(tio_tensor_source_offset(t),
                                     model_off + (uint64_t)json_integer_value(
                                                     json_object_get(s, "pos_in_model_data")));
            }
            tio_container_free(c);
            free(p);
            checked++;
        }
        json_decref(m);
    }
    if (tvec_have_shared()) assert_int_equal(checked, 2 * NMODELS);
    else assert_true(checked >= 8);
}

/* ------------------------------------------------ deep graph comparison */

static void same_graph(const tio_graph *a, const tio_graph *b, const tio_container *ca,
                       const tio_container *cb) {
    assert_int_equal(tio_graph_value_count(a), tio_graph_value_count(b));
    for (size_t i = 0; i < tio_graph_value_count(a); i++) {
        tio_value_info x, y;
        tio_graph_value(a, i, &x);
        tio_graph_value(b, i, &y);
        if (x.name || y.name) assert_string_equal(x.name, y.name);
        assert_int_equal(x.dtype, y.dtype);
        assert_int_equal(x.rank, y.rank);
        assert_int_equal(x.tensor >= 0, y.tensor >= 0);
        for (int64_t d = 0; d < x.rank; d++) {
            assert_int_equal(x.dims[d].name != NULL, y.dims[d].name != NULL);
            if (x.dims[d].name) assert_string_equal(x.dims[d].name, y.dims[d].name);
            else assert_int_equal(x.dims[d].value, y.dims[d].value);
        }
        if (x.tensor >= 0) {
            const tio_tensor *ta = tio_container_tensor(ca, (size_t)x.tensor);
            const tio_tensor *tb = tio_container_tensor(cb, (size_t)y.tensor);
            uint8_t ha[32], hb[32];
            assert_int_equal(tio_tensor_dtype(ta), tio_tensor_dtype(tb));
            assert_int_equal(tio_tensor_sha256(ta, TIO_HASH_DENSE, ha, NULL), TIO_OK);
            assert_int_equal(tio_tensor_sha256(tb, TIO_HASH_DENSE, hb, NULL), TIO_OK);
            assert_memory_equal(ha, hb, 32);
        }
    }
    size_t n[3] = {tio_graph_input_count(a), tio_graph_output_count(a), tio_graph_capture_count(a)};
    assert_int_equal(n[0], tio_graph_input_count(b));
    assert_int_equal(n[1], tio_graph_output_count(b));
    assert_int_equal(n[2], tio_graph_capture_count(b));
    if (n[0]) assert_memory_equal(tio_graph_inputs(a), tio_graph_inputs(b), n[0] * 8);
    if (n[1]) assert_memory_equal(tio_graph_outputs(a), tio_graph_outputs(b), n[1] * 8);
    if (n[2]) assert_memory_equal(tio_graph_captures(a), tio_graph_captures(b), n[2] * 8);
    assert_int_equal(tio_graph_node_count(a), tio_graph_node_count(b));
    for (size_t j = 0; j < tio_graph_node_count(a); j++) {
        tio_node_info x, y;
        tio_graph_node(a, j, &x);
        tio_graph_node(b, j, &y);
        if (x.name || y.name) assert_string_equal(x.name, y.name);
        assert_string_equal(x.op, y.op);
        assert_int_equal(x.input_count, y.input_count);
        assert_int_equal(x.output_count, y.output_count);
        if (x.input_count) assert_memory_equal(x.inputs, y.inputs, x.input_count * 8);
        if (x.output_count) assert_memory_equal(x.outputs, y.outputs, x.output_count * 8);
        assert_int_equal(x.attr_count, y.attr_count);
        for (size_t k = 0; k < x.attr_count; k++) {
            tio_attr p, q;
            tio_graph_attr(a, j, k, &p);
            assert_int_equal(tio_graph_find_attr(b, j, p.name, &q), TIO_OK);
            assert_int_equal(p.type, q.type);
            switch (p.type) {
            case TIO_ATTR_INT: assert_int_equal(p.i, q.i); break;
            case TIO_ATTR_FLOAT: assert_true(p.f == q.f || (isnan(p.f) && isnan(q.f))); break;
            case TIO_ATTR_STRING: assert_string_equal(p.s, q.s); break;
            case TIO_ATTR_INTS:
                assert_int_equal(p.count, q.count);
                if (p.count) assert_memory_equal(p.ints, q.ints, p.count * 8);
                break;
            case TIO_ATTR_FLOATS:
                assert_int_equal(p.count, q.count);
                if (p.count) assert_memory_equal(p.floats, q.floats, p.count * 8);
                break;
            case TIO_ATTR_GRAPH: same_graph(p.graph, q.graph, ca, cb); break;
            default: fail_msg("attribute type %d", p.type);
            }
        }
    }
    assert_int_equal(tio_graph_meta_count(a), tio_graph_meta_count(b));
    for (size_t k = 0; k < tio_graph_meta_count(a); k++) {
        const char *key, *val;
        tio_graph_meta_at(a, k, &key, &val);
        assert_string_equal(tio_graph_meta_get(b, key), val);
    }
}

static uint64_t ld64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static void *save_mem(const tio_container *c, unsigned version, size_t *len) {
    tio_save_options so = {0};
    so.format = "rten";
    so.version = version;
    void *out = NULL;
    tio_error e;
    int rc = tio_save_memory(c, &so, &out, len, &e);
    if (rc) fail_msg("save v%u: %s", version, e.message);
    return out;
}

/* The layout rten-convert gives V2 files. */
static void check_v2_layout(const uint8_t *buf, size_t len, const tio_container *c) {
    assert_memory_equal(buf, "RTEN", 4);
    assert_int_equal(buf[4], 2);
    uint64_t mo = ld64(buf + 8), ml = ld64(buf + 16), to = ld64(buf + 24);
    assert_int_equal(mo, 32);
    assert_int_equal(to % 64, 0);
    assert_true(to >= mo + ml && to < mo + ml + 64);
    for (size_t i = mo + ml; i < to; i++) assert_int_equal(buf[i], 0);
    uint64_t end = to;
    for (size_t i = 0; i < tio_container_count(c); i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        uint64_t off = (uint64_t)tio_tensor_source_offset(t);
        if (tio_tensor_numel(t) > 16) {
            assert_true(off >= to);
            assert_int_equal(off % 64, 0);
            if (off + tio_tensor_nbytes(t) > end) end = off + tio_tensor_nbytes(t);
        } else {
            assert_true(off >= mo && off < mo + ml);
            assert_int_equal(off % 4, 0);
        }
    }
    assert_int_equal(end, len); /* the file ends at the end of the last tensor */
}

static void test_round_trips(void **state) {
    (void)state;
    size_t done = 0;
    for (size_t i = 0; i < NMODELS; i++) {
        for (int v = 1; v <= 2; v++) {
            char rel[256];
            snprintf(rel, sizeof rel, "rten/%s/%s.v%d.rten", models[i], models[i], v);
            char *p = tvec_path_or_skip(rel);
            if (!p) continue;
            tio_container *src = open_path(p);
            free(p);
            for (unsigned wv = 1; wv <= 2; wv++) {
                size_t len = 0, len2 = 0;
                uint8_t *buf = save_mem(src, wv, &len);
                tio_error e;
                tio_container *back = open_mem(buf, len, TIO_OPEN_STRICT, &e);
                if (!back) fail_msg("%s v%d -> v%u: %s", models[i], v, wv, e.message);
                assert_string_equal(tio_container_prop_get(back, "version"), wv == 1 ? "1" : "2");
                same_graph(tio_container_graph(src), tio_container_graph(back), src, back);
                if (wv == 2) check_v2_layout(buf, len, back);
                else
                    for (size_t k = 0; k < tio_container_count(back); k++)
                        assert_true((uint64_t)tio_tensor_source_offset(
                                        tio_container_tensor(back, k)) < len);
                /* deterministic, and a fixed point */
                uint8_t *again = save_mem(src, wv, &len2);
                assert_int_equal(len, len2);
                assert_memory_equal(buf, again, len);
                tio_free(again);
                again = save_mem(back, wv, &len2);
                assert_int_equal(len, len2);
                assert_memory_equal(buf, again, len);
                tio_free(again);
                tio_container_free(back);
                tio_free(buf);
                done++;
            }
            /* the default version is 2 */
            size_t len = 0;
            uint8_t *buf = save_mem(src, 0, &len);
            assert_memory_equal(buf, "RTEN", 4);
            tio_free(buf);
            tio_container_free(src);
        }
    }
    assert_true(done >= 16);
}

/* V2 external constant bytes are exactly the source's. */
static void test_v2_matches_reference_layout(void **state) {
    (void)state;
    char *p = tvec_path_or_skip("rten/small_cnn/small_cnn.v2.rten");
    if (!p) return;
    uint8_t *ref;
    size_t rlen;
    assert_int_equal(tvec_read(p, &ref, &rlen), 0);
    tio_container *c = open_path(p);
    size_t len;
    uint8_t *buf = save_mem(c, 2, &len);
    /* same tensor-data section: same offsets, same bytes, same file end */
    uint64_t rto = ld64(ref + 24), to = ld64(buf + 24);
    assert_int_equal(rlen - rto, len - to);
    assert_memory_equal(ref + rto, buf + to, len - to);
    tio_free(buf);
    tio_container_free(c);
    free(ref);
    free(p);
}

/* --------------------------------------------------- hostile headers */


static void expect_fail(const uint8_t *b, size_t len, int code, const char *needle) {
    tio_error e;
    tio_open_options o = {0};
    o.format = "rten";
    tio_container *c = NULL;
    int rc = tio_open_memory(b, len, &o, &c, &e);
    if (rc != code) fail_msg("expected %s, got %s: %s", tio_status_name(code), tio_status_name(rc), rc ? e.message : "");
    assert_null(c);
    assert_string_equal(e.format, "rten");
    if (needle && !strstr(e.message, needle)) fail_msg("'%s' not in: %s", needle, e.message);
}

static void st64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void test_bad_headers(void **state) {
    (void)state;
    size_t len;
    uint8_t *b = tvec_load("rten/small_cnn/small_cnn.v2.rten", &len);
    if (!b) return;
    uint8_t *x = malloc(len);
    memcpy(x, b, len);
    x[4] = 3;
    expect_fail(x, len, TIO_E_UNSUPPORTED, "version 3");
    memcpy(x, b, len);
    st64(x + 8, 16);
    expect_fail(x, len, TIO_E_BOUNDS, "model_data_offset 16");
    memcpy(x, b, len);
    st64(x + 8, len + 1);
    expect_fail(x, len, TIO_E_BOUNDS, "model_data_offset");
    memcpy(x, b, len);
    st64(x + 16, UINT64_MAX - 8);
    expect_fail(x, len, TIO_E_BOUNDS, "model data");
    memcpy(x, b, len);
    st64(x + 24, len + 64);
    expect_fail(x, len, TIO_E_BOUNDS, "tensor_data_offset");
    /* tensor data moved so an external constant runs past the end */
    memcpy(x, b, len);
    st64(x + 24, len - 8);
    expect_fail(x, len, TIO_E_BOUNDS, "extends past the end");
    /* external data missing: the file cut at the tensor data */
    expect_fail(b, (size_t)ld64(b + 24) + 100, TIO_E_BOUNDS, "past the end");
    expect_fail(b, 20, TIO_E_TRUNCATED, "32 bytes");
    expect_fail(b, 6, TIO_E_TRUNCATED, "32 bytes");
    memcpy(x, b, 12);
    x[4] = 1; /* the version is read before the rest of the header, as rten does */
    expect_fail(x, 12, TIO_E_UNSUPPORTED, "version 1");
    expect_fail(b, 2, TIO_E_TRUNCATED, NULL);
    /* every truncation fails cleanly */
    for (size_t n = 0; n < len; n++) {
        tio_open_options o = {0};
        o.format = "rten";
        tio_container *c = NULL;
        tio_error e;
        assert_int_not_equal(tio_open_memory(b, n, &o, &c, &e), TIO_OK);
        assert_null(c);
        assert_string_equal(e.format, "rten");
    }
    free(x);
    free(b);
}

static void test_truncated_v1(void **state) {
    (void)state;
    const char *files[] = {"rten/matmul_add/matmul_add.v1.rten", "rten/shape_ops/shape_ops.v1.rten",
                           "rten/int_consts/int_consts.v2.rten"};
    for (size_t f = 0; f < 3; f++) {
        size_t len;
        uint8_t *b = tvec_load(files[f], &len);
        if (!b) continue;
        for (size_t n = 0; n < len; n++) {
            tio_open_options o = {0};
            o.format = "rten";
            tio_container *c = NULL;
            tio_error e;
            int rc = tio_open_memory(b, n, &o, &c, &e);
            if (rc == TIO_OK) fail_msg("%s cut to %zu bytes opened", files[f], n);
            assert_true(e.message[0]);
        }
        free(b);
    }
}

/* ------------------------------------ graphs built with the public API */

static tio_container *build_model(void) {
    tio_container *c = tio_container_new();
    tio_error e;
    float w[24];
    for (int i = 0; i < 24; i++) w[i] = (float)i * 0.5f - 3.0f;
    int32_t shp[2] = {4, 6};
    int8_t q[3] = {-1, 2, -3};
    int64_t ws[2] = {4, 6}, ss[1] = {2}, qs[1] = {3};
    tio_tensor_desc d = {0};
    d.name = "W";
    d.dtype = TIO_FLOAT32;
    d.rank = 2;
    d.shape = ws;
    d.data = w;
    d.nbytes = sizeof w;
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
    d.name = "shape";
    d.dtype = TIO_INT32;
    d.rank = 1;
    d.shape = ss;
    d.data = shp;
    d.nbytes = sizeof shp;
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
    d.name = "q";
    d.dtype = TIO_INT8;
    d.shape = qs;
    d.data = q;
    d.nbytes = sizeof q;
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);

    tio_graph *g;
    assert_int_equal(tio_container_new_graph(c, &g, &e), TIO_OK);
    size_t vw, vs, vq, vx, vy, vz, vc, vo;
    tio_value_info v = {0};
    v.tensor = 0;
    v.name = "W";
    assert_int_equal(tio_graph_add_value(g, &v, &vw, &e), TIO_OK);
    v.tensor = 1;
    v.name = "shape";
    assert_int_equal(tio_graph_add_value(g, &v, &vs, &e), TIO_OK);
    v.tensor = 2;
    v.name = "q";
    assert_int_equal(tio_graph_add_value(g, &v, &vq, &e), TIO_OK);
    tio_dim dims[2] = {{0, "batch"}, {4, NULL}};
    v.tensor = -1;
    v.name = "x";
    v.dtype = TIO_FLOAT32;
    v.rank = 2;
    v.dims = dims;
    assert_int_equal(tio_graph_add_value(g, &v, &vx, &e), TIO_OK);
    v.name = "y";
    v.rank = -1;
    v.dims = NULL;
    assert_int_equal(tio_graph_add_value(g, &v, &vy, &e), TIO_OK);
    v.name = "z";
    v.dtype = TIO_DTYPE_INVALID;
    assert_int_equal(tio_graph_add_value(g, &v, &vz, &e), TIO_OK);
    v.name = "cond";
    v.dtype = TIO_INT32;
    v.rank = 0;
    assert_int_equal(tio_graph_add_value(g, &v, &vc, &e), TIO_OK);
    v.name = "out";
    v.dtype = TIO_FLOAT32;
    assert_int_equal(tio_graph_add_value(g, &v, &vo, &e), TIO_OK);

    /* MatMul(x, W) -> y; Conv-like attrs on a ConvTranspose; If with subgraphs */
    int64_t in1[2] = {(int64_t)vx, (int64_t)vw}, out1[1] = {(int64_t)vy};
    tio_node_info n = {0};
    n.name = "mm";
    n.op = "MatMul";
    n.native_id = -1;
    n.inputs = in1;
    n.input_count = 2;
    n.outputs = out1;
    n.output_count = 1;
    size_t j;
    assert_int_equal(tio_graph_add_node(g, &n, &j, &e), TIO_OK);

    int64_t in2[3] = {(int64_t)vy, -1, (int64_t)vs}, out2[1] = {(int64_t)vz};
    n.name = "ct";
    n.op = "ConvTranspose";
    n.inputs = in2;
    n.input_count = 3;
    n.outputs = out2;
    assert_int_equal(tio_graph_add_node(g, &n, &j, &e), TIO_OK);
    int64_t strides[2] = {2, 2};
    tio_attr a = {0};
    a.name = "strides";
    a.type = TIO_ATTR_INTS;
    a.ints = strides;
    a.count = 2;
    assert_int_equal(tio_graph_add_attr(g, j, &a, &e), TIO_OK);
    memset(&a, 0, sizeof a);
    a.name = "group";
    a.type = TIO_ATTR_INT;
    a.i = 1; /* the default: omitted on write, restored on read */
    assert_int_equal(tio_graph_add_attr(g, j, &a, &e), TIO_OK);
    a.name = "auto_pad";
    a.type = TIO_ATTR_STRING;
    a.s = "SAME_UPPER"; /* rten's Same: not the default (NotSet) */
    assert_int_equal(tio_graph_add_attr(g, j, &a, &e), TIO_OK);
    a.s = NULL;

    /* Einsum with a string attribute */
    int64_t in3[1] = {(int64_t)vz}, out3[1] = {(int64_t)vc};
    n.name = "es";
    n.op = "Einsum";
    n.inputs = in3;
    n.input_count = 1;
    n.outputs = out3;
    assert_int_equal(tio_graph_add_node(g, &n, &j, &e), TIO_OK);
    memset(&a, 0, sizeof a);
    a.name = "equation";
    a.type = TIO_ATTR_STRING;
    a.s = "ij->ji";
    assert_int_equal(tio_graph_add_attr(g, j, &a, &e), TIO_OK);

    /* ConstantOfShape: the Scalar union */
    int64_t in4[1] = {(int64_t)vs}, out4[1] = {(int64_t)vo};
    n.name = "cos";
    n.op = "ConstantOfShape";
    n.inputs = in4;
    n.outputs = out4;
    assert_int_equal(tio_graph_add_node(g, &n, &j, &e), TIO_OK);
    memset(&a, 0, sizeof a);
    a.name = "value";
    a.type = TIO_ATTR_FLOAT;
    a.f = 0.25;
    assert_int_equal(tio_graph_add_attr(g, j, &a, &e), TIO_OK);

    /* If(cond) with two branches; the then-branch captures W */
    tio_graph *then_g, *else_g;
    assert_int_equal(tio_graph_new_subgraph(g, &then_g, &e), TIO_OK);
    assert_int_equal(tio_graph_new_subgraph(g, &else_g, &e), TIO_OK);
    size_t tw, tq, tr;
    tio_value_info sv = {0};
    sv.name = "W";
    sv.rank = -1;
    sv.tensor = -1;
    assert_int_equal(tio_graph_add_value(then_g, &sv, &tw, &e), TIO_OK);
    sv.name = "q";
    sv.tensor = 2;
    assert_int_equal(tio_graph_add_value(then_g, &sv, &tq, &e), TIO_OK);
    sv.name = "r";
    sv.tensor = -1;
    sv.dtype = TIO_FLOAT32;
    assert_int_equal(tio_graph_add_value(then_g, &sv, &tr, &e), TIO_OK);
    int64_t tin[2] = {(int64_t)tw, (int64_t)tq}, tout[1] = {(int64_t)tr};
    tio_node_info sn = {0};
    sn.name = "inner";
    sn.op = "Mul";
    sn.native_id = -1;
    sn.inputs = tin;
    sn.input_count = 2;
    sn.outputs = tout;
    sn.output_count = 1;
    size_t sj;
    assert_int_equal(tio_graph_add_node(then_g, &sn, &sj, &e), TIO_OK);
    int64_t cap[1] = {(int64_t)tw};
    assert_int_equal(tio_graph_set_captures(then_g, cap, 1, &e), TIO_OK);
    assert_int_equal(tio_graph_set_outputs(then_g, tout, 1, &e), TIO_OK);
    size_t er;
    sv.name = "r2";
    assert_int_equal(tio_graph_add_value(else_g, &sv, &er, &e), TIO_OK);
    int64_t eout[1] = {(int64_t)er};
    assert_int_equal(tio_graph_set_outputs(else_g, eout, 1, &e), TIO_OK);

    int64_t in5[1] = {(int64_t)vc}, out5[1] = {(int64_t)vo};
    n.name = "if";
    n.op = "If";
    n.inputs = in5;
    n.outputs = out5;
    assert_int_equal(tio_graph_add_node(g, &n, &j, &e), TIO_OK);
    memset(&a, 0, sizeof a);
    a.name = "then_branch";
    a.type = TIO_ATTR_GRAPH;
    a.graph = then_g;
    assert_int_equal(tio_graph_add_attr(g, j, &a, &e), TIO_OK);
    a.name = "else_branch";
    a.graph = else_g;
    assert_int_equal(tio_graph_add_attr(g, j, &a, &e), TIO_OK);

    int64_t gin[1] = {(int64_t)vx}, gout[2] = {(int64_t)vz, (int64_t)vo};
    assert_int_equal(tio_graph_set_inputs(g, gin, 1, &e), TIO_OK);
    assert_int_equal(tio_graph_set_outputs(g, gout, 2, &e), TIO_OK);
    assert_int_equal(tio_graph_meta_set(g, "description", "built by test_rten", &e), TIO_OK);
    assert_int_equal(tio_graph_meta_set(g, "license", "CC0-1.0", &e), TIO_OK);
    return c;
}

/* The name of input k of node j of g (NULL: absent or unnamed). */
static const char *sub_input_name(const tio_graph *g, size_t j, size_t k) {
    tio_node_info n;
    tio_value_info v;
    if (tio_graph_node(g, j, &n) != TIO_OK || k >= n.input_count || n.inputs[k] < 0 ||
        tio_graph_value(g, (size_t)n.inputs[k], &v) != TIO_OK)
        return NULL;
    return v.name;
}

static void test_api_model_round_trip(void **state) {
    (void)state;
    tio_container *c = build_model();
    for (unsigned v = 1; v <= 2; v++) {
        size_t len;
        uint8_t *buf = save_mem(c, v, &len);
        tio_error e;
        tio_container *back = open_mem(buf, len, TIO_OPEN_STRICT, &e);
        if (!back) fail_msg("v%u: %s", v, e.message);
        const tio_graph *g = tio_container_graph(back);
        tio_node_info ni;
        /* defaults restored: ConvTranspose groups = 1 (omitted), auto_pad = Same (kept) */
        tio_attr a;
        assert_int_equal(tio_graph_find_attr(g, 1, "group", &a), TIO_OK);
        assert_int_equal(a.i, 1);
        assert_int_equal(tio_graph_find_attr(g, 1, "auto_pad", &a), TIO_OK);
        assert_int_equal(a.type, TIO_ATTR_STRING); /* the ONNX form of rten's Same */
        assert_string_equal(a.s, "SAME_UPPER");
        assert_int_equal(tio_graph_find_attr(g, 1, "group", &a), TIO_OK);
        assert_null(a.label);
        /* If branches are subgraphs with their captures */
        assert_int_equal(tio_graph_find_attr(g, 4, "then_branch", &a), TIO_OK);
        assert_int_equal(a.type, TIO_ATTR_GRAPH);
        assert_ptr_equal(tio_graph_parent(a.graph), g);
        assert_int_equal(tio_graph_capture_count(a.graph), 1);
        /* and its Mul still reads the captured W: an untyped value of the
         * enclosing graph, which the lowering placed after the operators and
         * so wrote as an absent input (-1) */
        assert_non_null(sub_input_name(a.graph, 0, 0));
        assert_string_equal(sub_input_name(a.graph, 0, 0), "W");
        assert_int_equal(tio_graph_node(a.graph, 0, &ni), TIO_OK);
        assert_int_equal(ni.inputs[0], tio_graph_captures(a.graph)[0]);
        /* ConstantOfShape's FloatScalar */
        assert_int_equal(tio_graph_find_attr(g, 3, "value", &a), TIO_OK);
        assert_int_equal(a.type, TIO_ATTR_FLOAT);
        assert_true(a.f == 0.25);
        /* the in-subgraph constant is a container tensor too */
        assert_int_equal(tio_container_count(back), 4);
        /* the graph read back equals the original except for values' defaults
         * filled in (ConvTranspose has more attributes now) */
        tio_graph_node(g, 1, &ni);
        assert_true(ni.attr_count >= 3);
        size_t len2;
        uint8_t *again = save_mem(back, v, &len2);
        assert_int_equal(len, len2);
        assert_memory_equal(buf, again, len);
        tio_free(again);
        tio_container_free(back);
        tio_free(buf);
    }
    tio_container_free(c);
}

/* The subgraphs of a graph read from rten are written as read, like its root
 * (they were lowered as if built through the API: values reordered). A
 * constant value appended to the then-branch of a read model stays its last
 * value; lowered, it would come first, with the subgraph's constants. */
static void test_read_subgraphs_written_as_read(void **state) {
    (void)state;
    tio_container *c = build_model();
    size_t len;
    uint8_t *buf = save_mem(c, 2, &len);
    tio_container_free(c);
    tio_error e;
    tio_container *back = open_mem(buf, len, TIO_OPEN_STRICT, &e);
    if (!back) fail_msg("%s", e.message);
    tio_attr a;
    assert_int_equal(tio_graph_find_attr(tio_container_graph(back), 4, "then_branch", &a),
                     TIO_OK);
    tio_graph *sub = a.graph;
    tio_value_info q;
    assert_int_equal(tio_graph_value(sub, (size_t)tio_graph_find_value(sub, "q"), &q), TIO_OK);
    assert_true(q.tensor >= 0);
    tio_value_info late = {0};
    late.name = "late";
    late.rank = -1;
    late.tensor = q.tensor;
    size_t at;
    assert_int_equal(tio_graph_add_value(sub, &late, &at, &e), TIO_OK);
    for (unsigned v = 1; v <= 2; v++) {
        size_t len2;
        uint8_t *again = save_mem(back, v, &len2);
        tio_container *c2 = open_mem(again, len2, TIO_OPEN_STRICT, &e);
        if (!c2) fail_msg("v%u: %s", v, e.message);
        assert_int_equal(tio_graph_find_attr(tio_container_graph(c2), 4, "then_branch", &a),
                         TIO_OK);
        assert_int_equal(tio_graph_find_value(a.graph, "late"), (int64_t)at);
        assert_non_null(sub_input_name(a.graph, 0, 0));
        assert_string_equal(sub_input_name(a.graph, 0, 0), "W");
        tio_container_free(c2);
        tio_free(again);
    }
    /* written again unchanged: the same bytes */
    tio_container *c3 = open_mem(buf, len, TIO_OPEN_STRICT, &e);
    if (!c3) fail_msg("%s", e.message);
    size_t len3;
    uint8_t *same = save_mem(c3, 2, &len3);
    assert_int_equal(len3, len);
    assert_memory_equal(same, buf, len);
    tio_free(same);
    tio_container_free(c3);
    tio_container_free(back);
    tio_free(buf);
}

static void test_write_refusals(void **state) {
    (void)state;
    tio_error e;
    tio_save_options so = {0};
    so.format = "rten";
    /* tensors only: a model needs a graph */
    tio_container *c = tio_container_new();
    float x = 1;
    tio_tensor_desc d = {0};
    d.dtype = TIO_FLOAT32;
    d.data = &x;
    d.nbytes = 4;
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
    assert_int_equal(tio_check_save(c, &so, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "graph"));
    tio_container_free(c);

    /* a tensor the graph does not use */
    c = build_model();
    d.name = "stray";
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
    assert_int_equal(tio_check_save(c, &so, &e), TIO_E_LOSSY);
    assert_non_null(strstr(e.message, "stray"));
    tio_container_free(c);

    /* an attribute the table does not have; one of the wrong type; out of range */
    /* (ONNX names: an attribute rten has no form for is TIO_E_UNSUPPORTED) */
    const char *names[] = {"bogus", "strides", "group"};
    tio_attr_type types[] = {TIO_ATTR_INT, TIO_ATTR_FLOAT, TIO_ATTR_INT};
    int codes[] = {TIO_E_UNSUPPORTED, TIO_E_UNSUPPORTED, TIO_E_LOSSY};
    for (int k = 0; k < 3; k++) {
        c = build_model();
        tio_graph *g = tio_container_graph(c);
        tio_node_info n = {0};
        n.op = "Conv";
        n.native_id = -1;
        size_t j;
        assert_int_equal(tio_graph_add_node(g, &n, &j, &e), TIO_OK);
        tio_attr a = {0};
        a.name = names[k];
        a.type = types[k];
        a.i = k == 2 ? -5 : 1;
        a.f = 1.5;
        assert_int_equal(tio_graph_add_attr(g, j, &a, &e), TIO_OK);
        assert_int_equal(tio_check_save(c, &so, &e), codes[k]);
        assert_non_null(strstr(e.message, names[k]));
        tio_container_free(c);
    }

    /* a MaxPool built without its required kernel_size */
    c = build_model();
    {
        tio_node_info mp = {0};
        mp.op = "MaxPool";
        mp.native_id = -1;
        size_t mj;
        assert_int_equal(tio_graph_add_node(tio_container_graph(c), &mp, &mj, &e), TIO_OK);
        assert_int_equal(tio_check_save(c, &so, &e), TIO_E_UNSUPPORTED);
        assert_non_null(strstr(e.message, "kernel_size"));
    }
    tio_container_free(c);

    /* an operator rten does not have; metadata rten has no field for */
    c = build_model();
    tio_graph *g = tio_container_graph(c);
    tio_node_info n = {0};
    n.op = "FancyOp";
    n.native_id = -1;
    size_t j;
    assert_int_equal(tio_graph_add_node(g, &n, &j, &e), TIO_OK);
    assert_int_equal(tio_check_save(c, &so, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "FancyOp"));
    tio_container_free(c);
    c = build_model();
    assert_int_equal(tio_graph_meta_set(tio_container_graph(c), "author", "me", &e), TIO_OK);
    assert_int_equal(tio_check_save(c, &so, &e), TIO_E_LOSSY);
    assert_non_null(strstr(e.message, "author"));
    so.flags = TIO_SAVE_DROP_METADATA;
    assert_int_equal(tio_check_save(c, &so, &e), TIO_OK);
    so.flags = 0;
    so.version = 3;
    assert_int_equal(tio_check_save(c, &so, &e), TIO_E_UNSUPPORTED);
    tio_container_free(c);

    /* a uint64 constant is not an rten type, and rten-convert converts it to
     * none (float64 is converted to float32: test_rten_convert.c) */
    c = build_model();
    uint64_t dd = 1;
    d.name = "u64";
    d.dtype = TIO_UINT64;
    d.data = &dd;
    d.nbytes = 8;
    size_t ti = tio_container_count(c);
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
    tio_value_info v = {0};
    v.tensor = (int64_t)ti;
    size_t vi;
    assert_int_equal(tio_graph_add_value(tio_container_graph(c), &v, &vi, &e), TIO_OK);
    so.version = 0;
    assert_int_equal(tio_check_save(c, &so, &e), TIO_E_LOSSY);
    tio_container_free(c);
}

/* Weights of a model export to a tensor format; the graph is not written. */
static void test_export_weights(void **state) {
    (void)state;
    char *p = tvec_path_or_skip("rten/small_cnn/small_cnn.v2.rten");
    if (!p) return;
    tio_container *c = open_path(p);
    free(p);
    tio_save_options so = {0};
    so.format = "tenbin";
    so.flags = TIO_SAVE_DROP_NAMES; /* "conv_w" fits, but keep the test independent */
    void *out;
    size_t len;
    tio_error e;
    assert_int_equal(tio_save_memory(c, &so, &out, &len, &e), TIO_OK);
    tio_container *t = open_mem(out, len, 0, &e);
    assert_non_null(t);
    assert_int_equal(tio_container_count(t), 4);
    assert_null(tio_container_graph(t));
    for (size_t i = 0; i < 4; i++) {
        uint8_t a[32], b[32];
        tio_tensor_sha256(tio_container_tensor(c, i), TIO_HASH_DENSE, a, NULL);
        tio_tensor_sha256(tio_container_tensor(t, i), TIO_HASH_DENSE, b, NULL);
        assert_memory_equal(a, b, 32);
    }
    /* and the other way: a tensor file cannot become a model */
    so.format = "rten";
    so.flags = 0;
    assert_int_equal(tio_check_save(t, &so, &e), TIO_E_UNSUPPORTED);
    tio_container_free(t);
    tio_free(out);
    tio_container_free(c);
}

/* ---------------------------------- hand-built FlatBuffers (hostile) */

typedef struct mb {
    tio_fb_builder *b;
    int64_t schema_version;
    unsigned op_type, attrs_tag;
    int extra_attr_field;  /* add an unknown field id to the attrs table */
    int bad_input;         /* operator input refers to: 1 out of range, 2 an operator */
    int inline_short;      /* inline data shorter than the shape */
    int nest;              /* If nesting depth */
    int extra_graph_field; /* add an unknown field id to the Graph table */
    const char *op_name;   /* the operator node's name ("op" when NULL) */
} mb;

static tio_fb_off mk_str(tio_fb_builder *b, const char *s) {
    tio_fb_off o;
    assert_int_equal(tio__fb_create_string(b, s, strlen(s), &o, NULL), TIO_OK);
    return o;
}

static tio_fb_off mk_node(tio_fb_builder *b, const char *name, unsigned kind, tio_fb_off data) {
    tio_fb_off n = mk_str(b, name), o;
    tio__fb_start_table(b, NULL);
    tio__fb_add_offset(b, RTEN_Node_name, n, NULL);
    tio__fb_add_scalar(b, RTEN_Node_data_type, kind, 1, NULL);
    tio__fb_add_offset(b, RTEN_Node_data, data, NULL);
    assert_int_equal(tio__fb_end_table(b, &o, NULL), TIO_OK);
    return o;
}

/* Graph: [0] const c (f32 [2] inline), [1] value x, [2] op(x, c) -> x */
static tio_fb_off mk_graph(mb *m, int depth) {
    tio_fb_builder *b = m->b;
    tio_fb_off nodes[3], o;
    float data[2] = {1, 2};
    uint32_t shape[1] = {2};
    tio_fb_off sv, dv, dt, ct;
    tio__fb_create_vector(b, shape, 1, 4, 4, &sv, NULL);
    tio__fb_create_vector(b, data, m->inline_short ? 1 : 2, 4, 4, &dv, NULL);
    tio__fb_start_table(b, NULL);
    tio__fb_add_offset(b, RTEN_FloatData_data, dv, NULL);
    tio__fb_end_table(b, &dt, NULL);
    tio__fb_start_table(b, NULL);
    tio__fb_add_offset(b, RTEN_ConstantNode_shape, sv, NULL);
    tio__fb_add_scalar(b, RTEN_ConstantNode_data_type, RTEN_ConstantData_FloatData, 1, NULL);
    tio__fb_add_offset(b, RTEN_ConstantNode_data, dt, NULL);
    tio__fb_end_table(b, &ct, NULL);
    nodes[0] = mk_node(b, "c", RTEN_NodeKind_ConstantNode, ct);
    tio_fb_off vt;
    tio__fb_start_table(b, NULL);
    tio__fb_add_scalar(b, 1, RTEN_DataType_Float, 1, NULL);
    tio__fb_end_table(b, &vt, NULL);
    nodes[1] = mk_node(b, "x", RTEN_NodeKind_ValueNode, vt);
    int32_t ins[2] = {1, m->bad_input == 1 ? 7 : m->bad_input == 2 ? 2 : 0};
    int32_t outs[1] = {1};
    tio_fb_off iv, ov, at = 0, op;
    tio__fb_create_vector(b, ins, 2, 4, 4, &iv, NULL);
    tio__fb_create_vector(b, outs, 1, 4, 4, &ov, NULL);
    unsigned type = m->op_type, tag = m->attrs_tag;
    if (depth < m->nest) {
        tio_fb_off sub = mk_graph(m, depth + 1);
        tio__fb_start_table(b, NULL);
        tio__fb_add_offset(b, 0, sub, NULL);
        tio__fb_end_table(b, &at, NULL);
        type = 104; /* If */
        tag = RTEN_OperatorAttrs_IfAttrs;
    } else if (tag) {
        tio__fb_start_table(b, NULL);
        tio__fb_add_scalar(b, 0, 3, 4, NULL); /* e.g. axis = 3 */
        if (m->extra_attr_field) tio__fb_add_scalar(b, 9, 42, 4, NULL);
        tio__fb_end_table(b, &at, NULL);
    }
    tio__fb_start_table(b, NULL);
    tio__fb_add_scalar(b, RTEN_OperatorNode_type, type, 1, NULL);
    if (tag) {
        tio__fb_add_scalar(b, RTEN_OperatorNode_attrs_type, tag, 1, NULL);
        tio__fb_add_offset(b, RTEN_OperatorNode_attrs, at, NULL);
    }
    tio__fb_add_offset(b, RTEN_OperatorNode_inputs, iv, NULL);
    tio__fb_add_offset(b, RTEN_OperatorNode_outputs, ov, NULL);
    tio__fb_end_table(b, &op, NULL);
    nodes[2] = mk_node(b, m->op_name ? m->op_name : "op", RTEN_NodeKind_OperatorNode, op);
    tio_fb_off nv;
    tio__fb_create_offset_vector(b, nodes, 3, &nv, NULL);
    tio__fb_start_table(b, NULL);
    tio__fb_add_offset(b, RTEN_Graph_nodes, nv, NULL);
    if (m->extra_graph_field) tio__fb_add_scalar(b, 7, 1, 4, NULL);
    assert_int_equal(tio__fb_end_table(b, &o, NULL), TIO_OK);
    return o;
}

/* A V1 model from the description; *len set; free with free(). */
static uint8_t *mk_model(mb *m, size_t *len) {
    m->b = tio__fb_builder_new("test");
    tio_fb_off g = mk_graph(m, 0), root;
    tio__fb_start_table(m->b, NULL);
    tio__fb_add_scalar(m->b, RTEN_Model_schema_version, (uint64_t)m->schema_version, 4, NULL);
    tio__fb_add_offset(m->b, RTEN_Model_graph, g, NULL);
    tio__fb_end_table(m->b, &root, NULL);
    assert_int_equal(tio__fb_finish(m->b, root, NULL), TIO_OK);
    const uint8_t *p = tio__fb_buffer(m->b, len);
    uint8_t *out = malloc(*len);
    memcpy(out, p, *len);
    tio__fb_builder_free(m->b);
    return out;
}

static void test_handmade_models(void **state) {
    (void)state;
    tio_error e;
    size_t len;
    /* baseline: a Concat with ConcatAttrs axis 3 */
    mb m = {0};
    m.schema_version = 1;
    m.op_type = 7;
    m.attrs_tag = RTEN_OperatorAttrs_ConcatAttrs;
    uint8_t *b = mk_model(&m, &len);
    tio_container *c = open_mem(b, len, TIO_OPEN_STRICT, &e);
    if (!c) fail_msg("%s", e.message);
    tio_attr a;
    assert_int_equal(tio_graph_find_attr(tio_container_graph(c), 0, "axis", &a), TIO_OK);
    assert_int_equal(a.i, 3);
    tio_container_free(c);
    free(b);

    /* schema_version 2 */
    m.schema_version = 2;
    b = mk_model(&m, &len);
    expect_fail(b, len, TIO_E_UNSUPPORTED, "schema_version 2");
    free(b);
    m.schema_version = 1;

    /* operator inputs that are not values */
    m.bad_input = 1;
    b = mk_model(&m, &len);
    expect_fail(b, len, TIO_E_CORRUPT, "node 2 ('op'): inputs[1] refers to node 7");
    free(b);
    /* the label names a node by at most 48 bytes of its name, "..." after */
    char name[64];
    memset(name, 'n', 60);
    name[60] = 0;
    m.op_name = name;
    b = mk_model(&m, &len);
    expect_fail(b, len, TIO_E_CORRUPT,
                "node 2 ('nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn...'): inputs[1] refers");
    free(b);
    name[48] = 0; /* exactly 48: whole, no "..." */
    b = mk_model(&m, &len);
    expect_fail(b, len, TIO_E_CORRUPT,
                "node 2 ('nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn'): inputs[1] refers");
    free(b);
    m.op_name = NULL;
    m.bad_input = 2;
    b = mk_model(&m, &len);
    expect_fail(b, len, TIO_E_CORRUPT, "operator");
    free(b);
    m.bad_input = 0;

    /* inline data that does not fill the shape (rten panics) */
    m.inline_short = 1;
    b = mk_model(&m, &len);
    expect_fail(b, len, TIO_E_CORRUPT, "holds 1 elements");
    free(b);
    m.inline_short = 0;

    /* an operator type from a newer schema: kept by number through a round trip */
    m.op_type = 200;
    m.attrs_tag = 0;
    b = mk_model(&m, &len);
    c = open_mem(b, len, 0, &e);
    assert_non_null(c);
    assert_int_equal(tio_container_warning_count(c), 1);
    tio_node_info ni;
    tio_graph_node(tio_container_graph(c), 0, &ni);
    assert_int_equal(ni.native_id, 200);
    size_t olen;
    uint8_t *out = save_mem(c, 1, &olen);
    tio_container *back = open_mem(out, olen, 0, &e);
    assert_non_null(back);
    tio_graph_node(tio_container_graph(back), 0, &ni);
    assert_int_equal(ni.native_id, 200);
    tio_container_free(back);
    tio_free(out);
    tio_container_free(c);
    /* ...and a finding, so STRICT refuses it */
    assert_null(open_mem(b, len, TIO_OPEN_STRICT, &e));
    assert_int_equal(e.code, TIO_E_INVALID);
    free(b);

    /* an operator missing its required attrs table (rten: AttrsMissingError):
     * a finding, and a round trip keeps it without a table (found by fuzzing:
     * the writer used to emit a MaxPoolAttrs without its required kernel_size) */
    m.op_type = 31; /* MaxPool */
    m.attrs_tag = 0;
    b = mk_model(&m, &len);
    c = open_mem(b, len, 0, &e);
    assert_non_null(c);
    assert_int_equal(tio_container_warning_count(c), 1);
    assert_non_null(strstr(tio_container_warning(c, 0)->message, "AttrsMissingError"));
    for (unsigned v = 1; v <= 2; v++) {
        out = save_mem(c, v, &olen);
        back = open_mem(out, olen, 0, &e);
        if (!back) fail_msg("v%u: %s", v, e.message);
        assert_int_equal(tio_container_warning_count(back), 1);
        tio_graph_node(tio_container_graph(back), 0, &ni);
        assert_int_equal(ni.attr_count, 0);
        tio_container_free(back);
        tio_free(out);
    }
    tio_container_free(c);
    free(b);

    /* an attrs table from a newer schema: readable, refused on write */
    m.op_type = 7;
    m.attrs_tag = 99;
    b = mk_model(&m, &len);
    c = open_mem(b, len, 0, &e);
    assert_non_null(c);
    assert_true(tio_container_warning_count(c) >= 1);
    tio_save_options so = {0};
    so.format = "rten";
    assert_int_equal(tio_check_save(c, &so, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "attrs table type 99"));
    tio_container_free(c);
    free(b);

    /* a known table with a field from a newer schema: likewise */
    m.attrs_tag = RTEN_OperatorAttrs_ConcatAttrs;
    m.extra_attr_field = 1;
    b = mk_model(&m, &len);
    c = open_mem(b, len, 0, &e);
    assert_non_null(c);
    assert_int_equal(tio_check_save(c, &so, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "beyond"));
    tio_container_free(c);
    free(b);
    m.extra_attr_field = 0;

    /* a graph-level table with a field from a newer schema: readable, refused on write */
    m.extra_graph_field = 1;
    b = mk_model(&m, &len);
    c = open_mem(b, len, 0, &e);
    assert_non_null(c);
    assert_int_equal(tio_container_warning_count(c), 1);
    assert_non_null(strstr(tio_container_warning(c, 0)->message, "Graph has 1 field beyond"));
    assert_int_equal(tio_check_save(c, &so, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "cannot be re-encoded"));
    so.format = "tenbin"; /* the weights still export */
    assert_int_equal(tio_check_save(c, &so, &e), TIO_OK);
    so.format = "rten";
    tio_container_free(c);
    free(b);
    m.extra_graph_field = 0;

    /* nested If subgraphs: fine at 10, refused past max_depth */
    m.nest = 10;
    b = mk_model(&m, &len);
    c = open_mem(b, len, TIO_OPEN_STRICT, &e);
    if (!c) fail_msg("%s", e.message);
    tio_container_free(c);
    free(b);
    m.nest = 40; /* 4 tables per level: beyond the default depth of 64 */
    b = mk_model(&m, &len);
    expect_fail(b, len, TIO_E_LIMIT, NULL);
    tio_limits lim = {0};
    lim.max_depth = 1000;
    tio_open_options o = {0};
    o.limits = &lim;
    assert_int_equal(tio_open_memory(b, len, &o, &c, &e), TIO_OK);
    tio_container_free(c);
    free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors_match_manifests),
        cmocka_unit_test(test_round_trips),
        cmocka_unit_test(test_v2_matches_reference_layout),
        cmocka_unit_test(test_bad_headers),
        cmocka_unit_test(test_truncated_v1),
        cmocka_unit_test(test_api_model_round_trip),
        cmocka_unit_test(test_read_subgraphs_written_as_read),
        cmocka_unit_test(test_write_refusals),
        cmocka_unit_test(test_export_weights),
        cmocka_unit_test(test_handmade_models),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
