/* ONNX through the public API: the local .onnx vectors (initializer counts,
 * names, dtypes, shapes; raw_data tensors are views into the input), and
 * hostile models built by hand (memory budget, depth bomb, rank bomb), every
 * error "onnx: offset N: ..." with N inside the input; external data (views
 * into the mapped side file, the location rules, opening from memory). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tensio.h"
#include "tpb.h"
#include "tvec.h"

/* ------------------------------------------------ a tiny protobuf writer */

/* ModelProto{ir_version 8, opset_import{"" 17}, graph} */
static tpb model_of(tpb *graph) {
    tpb m = {0}, o = {0};
    tpb_int(&m, 1, 8);
    tpb_int(&o, 2, 17);
    tpb_msg(&m, 8, &o);
    tpb_msg(&m, 7, graph);
    return m;
}

/* ------------------------------------------------------------ helpers */

/* The failure contract: code, "onnx: offset N: " with N inside the input
 * (or at its end, for a truncation). */
static void check_error(int rc, const tio_error *e, size_t len) {
    assert_int_equal(e->code, rc);
    if (strncmp(e->message, "onnx: ", 6) != 0) fail_msg("no 'onnx: ' prefix: %s", e->message);
    long long off = -1;
    if (sscanf(e->message, "onnx: offset %lld:", &off) != 1)
        fail_msg("no offset in: %s", e->message);
    /* a cut input is reported where the missing byte would be: at its end */
    size_t lim = rc == TIO_E_TRUNCATED ? len + 1 : len;
    if (off < 0 || (size_t)off >= lim)
        fail_msg("offset %lld outside %zu bytes: %s", off, len, e->message);
}

static int open_buf(const tpb *m, const tio_limits *lim, tio_error *e) {
    tio_open_options o = {0};
    o.format = "onnx";
    o.limits = lim;
    tio_container *c = NULL;
    int rc = tio_open_memory(m->b, m->n, &o, &c, e);
    if (rc) {
        assert_null(c);
        check_error(rc, e, m->n);
    }
    tio_container_free(c);
    return rc;
}

/* ------------------------------------------------------------ vectors */

static const struct {
    const char *file;
    size_t count;
    const char *first;
    tio_dtype dtype;
    size_t rank;
} vectors[] = {
    {"onnx/cnn_small.onnx", 6, "conv1_w", TIO_FLOAT32, 4},
    {"onnx/concat_reshape_softmax.onnx", 1, "shape", TIO_INT64, 1},
    {"onnx/int_consts.onnx", 12, "shape_i64", TIO_INT64, 1},
    {"onnx/matmul_add.onnx", 2, "W", TIO_FLOAT32, 2},
    {"onnx/mlp_matmul_add.onnx", 5, "mm_w", TIO_FLOAT32, 2},
    {"onnx/shape_ops.onnx", 2, "new_shape", TIO_INT64, 1},
    {"onnx/small_cnn.onnx", 4, "conv_w", TIO_FLOAT32, 4},
};

static void test_vectors(void **state) {
    (void)state;
    for (size_t v = 0; v < sizeof vectors / sizeof vectors[0]; v++) {
        char *path = tvec_path_or_skip(vectors[v].file);
        if (!path) continue;
        uint8_t *buf;
        size_t len;
        assert_int_equal(tvec_read(path, &buf, &len), 0);
        tio_error e;
        /* from memory: each raw_data tensor is the input's bytes */
        tio_container *c = NULL;
        if (tio_open_memory(buf, len, NULL, &c, &e)) fail_msg("%s: %s", path, e.message);
        assert_string_equal(tio_container_format(c), "onnx");
        assert_int_equal(tio_container_count(c), vectors[v].count);
        const tio_tensor *t0 = tio_container_tensor(c, 0);
        assert_string_equal(tio_tensor_name(t0), vectors[v].first);
        assert_int_equal(tio_tensor_dtype(t0), vectors[v].dtype);
        assert_int_equal(tio_tensor_rank(t0), vectors[v].rank);
        for (size_t i = 0; i < tio_container_count(c); i++) {
            const tio_tensor *t = tio_container_tensor(c, i);
            assert_non_null(tio_tensor_name(t));
            assert_non_null(tio_container_find(c, tio_tensor_name(t)));
            int64_t off = tio_tensor_source_offset(t);
            assert_true(off >= 0 && (uint64_t)off + tio_tensor_nbytes(t) <= len);
            /* zero-copy: the pointer is into the buffer, at its offset */
            assert_ptr_equal(tio_tensor_data(t), buf + off);
        }
        tio_graph *g = tio_container_graph(c);
        assert_non_null(g);
        tio_container_free(c);
        /* from the file (mapped): every view at the same base, same bytes */
        c = NULL;
        if (tio_open(path, NULL, &c, &e)) fail_msg("%s: %s", path, e.message);
        assert_int_equal(tio_container_count(c), vectors[v].count);
        const uint8_t *base = NULL;
        for (size_t i = 0; i < tio_container_count(c); i++) {
            const tio_tensor *t = tio_container_tensor(c, i);
            int64_t off = tio_tensor_source_offset(t);
            const uint8_t *d = tio_tensor_data(t);
            if (!base) base = d - off;
            assert_ptr_equal(d - off, base);
            assert_memory_equal(d, buf + off, tio_tensor_nbytes(t));
        }
        tio_container_free(c);
        free(buf);
        free(path);
    }
}

/* ------------------------------------------------------------ hostile */

/* A node: op, inputs, outputs, then the attribute messages given. */
static void node(tpb *g, const char *op, const char *const *ins, size_t nin,
                 const char *const *outs, size_t nout, tpb *attrs, size_t nattr) {
    tpb n = {0};
    for (size_t k = 0; k < nin; k++) tpb_str(&n, 1, ins[k]);
    for (size_t k = 0; k < nout; k++) tpb_str(&n, 2, outs[k]);
    tpb_str(&n, 4, op);
    for (size_t k = 0; k < nattr; k++) tpb_msg(&n, 5, &attrs[k]);
    tpb_msg(g, 1, &n);
}

/* Graph "g": one Identity node x -> y with the attributes given, its input
 * and output. */
static void identity_graph(tpb *g, tpb *attrs, size_t nattr) {
    tpb vi = {0}, vo = {0};
    const char *in[] = {"x"}, *out[] = {"y"};
    node(g, "Identity", in, 1, out, 1, attrs, nattr);
    tpb_str(g, 2, "g");
    tpb_str(&vi, 1, "x");
    tpb_msg(g, 11, &vi);
    tpb_str(&vo, 1, "y");
    tpb_msg(g, 12, &vo);
}

/* One Identity node whose STRINGS attribute holds `n` empty strings: 2 input
 * bytes each, a pointer and a heap block each once decoded. */
static void test_budget_empty_strings(void **state) {
    (void)state;
    tpb g = {0}, a = {0};
    tpb_str(&a, 1, "labels");
    tpb_int(&a, 20, 8); /* STRINGS */
    for (size_t k = 0; k < 400000; k++) tpb_bytes(&a, 9, "", 0);
    const char *in[] = {"x"}, *out[] = {"y"};
    node(&g, "Identity", in, 1, out, 1, &a, 1);
    tpb_str(&g, 2, "g");
    tpb vi = {0};
    tpb_str(&vi, 1, "x");
    tpb_msg(&g, 11, &vi);
    tpb m = model_of(&g);
    tio_error e;
    assert_int_equal(open_buf(&m, NULL, &e), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "memory"));
    free(m.b);
}

/* int64_data of one-byte varints: 8 heap bytes per input byte, within the
 * budget of 20 x (a model's graph may take that much more than its file:
 * src/graph/budget.h); decoded, every value right. */
static void test_budget_typed_int64(void **state) {
    (void)state;
    tpb g = {0}, t = {0}, pk = {0};
    size_t n = 1u << 20;
    tpb_int(&t, 1, n); /* dims [n] */
    tpb_int(&t, 2, 7); /* INT64 */
    tpb_str(&t, 8, "w");
    for (size_t k = 0; k < n; k++) tpb_varint(&pk, k % 100);
    tpb_msg(&t, 7, &pk);
    tpb_msg(&g, 5, &t);
    tpb_str(&g, 2, "g");
    tpb m = model_of(&g);
    tio_container *c = NULL;
    tio_error e;
    if (tio_open_memory(m.b, m.n, NULL, &c, &e)) fail_msg("%s", e.message);
    const tio_tensor *w = tio_container_find(c, "w");
    assert_non_null(w);
    assert_int_equal(tio_tensor_numel(w), n);
    const int64_t *v = tio_tensor_data(w);
    for (size_t k = 0; k < n; k++)
        if (v[k] != (int64_t)(k % 100)) fail_msg("w[%zu] = %lld", k, (long long)v[k]);
    tio_container_free(c);
    free(m.b);
}

/* One 32 KiB value name referred to by 200 nodes (6 MB): protobuf has no
 * references, so every use is paid for by its own bytes; it decodes, and
 * the graph holds the name once per definition, not per use. */
static void test_large_name_many_uses(void **state) {
    (void)state;
    char *big = malloc(32769);
    assert_non_null(big);
    memset(big, 'n', 32768);
    big[32768] = 0;
    tpb g = {0};
    tpb vi = {0};
    tpb_str(&vi, 1, big);
    tpb_msg(&g, 11, &vi);
    for (int k = 0; k < 200; k++) {
        char o[16];
        snprintf(o, sizeof o, "o%d", k);
        const char *in[] = {big}, *out[] = {o};
        node(&g, "Relu", in, 1, out, 1, NULL, 0);
    }
    tpb m = model_of(&g);
    tio_container *c = NULL;
    tio_error e;
    if (tio_open_memory(m.b, m.n, NULL, &c, &e)) fail_msg("%s", e.message);
    tio_graph *gr = tio_container_graph(c);
    assert_int_equal(tio_graph_node_count(gr), 200);
    tio_container_free(c);
    free(m.b);
    free(big);
}

/* If nodes nested `levels` deep through then_branch. */
static tpb if_nest(int levels) {
    tpb g = {0};
    tpb_str(&g, 2, "leaf");
    for (int k = 0; k < levels; k++) {
        tpb a = {0}, outer = {0};
        tpb_str(&a, 1, "then_branch");
        tpb_int(&a, 20, 5); /* GRAPH */
        tpb_msg(&a, 6, &g);
        char o[16];
        snprintf(o, sizeof o, "y%d", k);
        const char *out[] = {o};
        node(&outer, "If", NULL, 0, out, 1, &a, 1);
        tpb_str(&outer, 2, "g");
        g = outer;
    }
    return model_of(&g);
}

static void test_depth_bomb(void **state) {
    (void)state;
    tio_error e;
    tpb ok = if_nest(8);
    assert_int_equal(open_buf(&ok, NULL, &e), TIO_OK);
    free(ok.b);
    tpb deep = if_nest(100); /* past the default max_depth (64) */
    assert_int_equal(open_buf(&deep, NULL, &e), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "depth"));
    free(deep.b);
    tio_limits lim = {0};
    lim.max_depth = 4;
    tpb six = if_nest(6);
    assert_int_equal(open_buf(&six, &lim, &e), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "max_depth"));
    free(six.b);
}

/* A packed dims field claiming a huge rank, in an initializer and in a
 * value's shape. */
static void test_rank_bomb(void **state) {
    (void)state;
    tio_error e;
    tpb g = {0}, t = {0}, pk = {0};
    for (size_t k = 0; k < 100000; k++) tpb_varint(&pk, 1);
    tpb_msg(&t, 1, &pk);
    tpb_int(&t, 2, 1);
    tpb_str(&t, 8, "w");
    tpb_bytes(&t, 9, "\0\0\0\0", 4);
    tpb_msg(&g, 5, &t);
    tpb m = model_of(&g);
    assert_int_equal(open_buf(&m, NULL, &e), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "max_rank"));
    free(m.b);

    tpb g2 = {0}, vi = {0}, tp = {0}, tt = {0}, sh = {0};
    for (size_t k = 0; k < 100000; k++) {
        tpb d = {0};
        tpb_int(&d, 1, 1);
        tpb_msg(&sh, 1, &d);
    }
    tpb_int(&tt, 1, 1);
    tpb_msg(&tt, 2, &sh);
    tpb_msg(&tp, 1, &tt);
    tpb_str(&vi, 1, "x");
    tpb_msg(&vi, 2, &tp);
    tpb_msg(&g2, 11, &vi);
    tpb m2 = model_of(&g2);
    assert_int_equal(open_buf(&m2, NULL, &e), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "max_rank"));
    free(m2.b);
}

/* Truncations of a real model: each an error value with an offset inside
 * the input, or (a cut that still parses) a container. */
static void test_truncations(void **state) {
    (void)state;
    size_t len;
    uint8_t *buf = tvec_load("onnx/matmul_add.onnx", &len);
    if (!buf) return;
    for (size_t n = 1; n < len; n++) {
        tpb m = {buf, n, n};
        tio_error e;
        (void)open_buf(&m, NULL, &e);
    }
    free(buf);
}

/* ------------------------------------------------------- external data */

/* A model whose initializer W (float [2]) is external: `loc`, 8 bytes. */
static tpb ext_model(const char *loc) {
    tpb g = {0}, t = {0}, e = {0};
    tpb_int(&t, 1, 2);
    tpb_int(&t, 2, 1);
    tpb_str(&t, 8, "W");
    tpb_str(&e, 1, "location");
    tpb_str(&e, 2, loc);
    tpb_msg(&t, 13, &e);
    tpb_str(&e, 1, "length");
    tpb_str(&e, 2, "8");
    tpb_msg(&t, 13, &e);
    tpb_int(&t, 14, 1); /* EXTERNAL */
    tpb_msg(&g, 5, &t);
    tpb_str(&g, 2, "g");
    return model_of(&g);
}

static void write_file(const char *path, const void *d, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, n, f), n);
    fclose(f);
}

/* From memory there is no directory to look in: refused clearly. */
static void test_external_from_memory(void **state) {
    (void)state;
    tpb m = ext_model("w.bin");
    tio_error e;
    assert_int_equal(open_buf(&m, NULL, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "needs the model's path"));
    free(m.b);
}

/* Beside the model: a view into the mapped file, kept after the open. Out
 * of its directory: refused, unless TIO_OPEN_EXTERNAL_ANYWHERE. */
/* The graph's fields are read once into an index that every walk of the
 * graph goes through (src/onnx/read.c, ox_graph_fields), bounded by the
 * input: a graph of 200,000 unknown 3-byte fields is past the bound, and is
 * walked from the message instead; 1,000 are indexed. Both read the same
 * graph, from memory and from a file (where fields far apart are read by
 * pread). */
static void test_many_graph_fields(void **state) {
    (void)state;
    const size_t counts[2] = {1000, 200000};
    for (size_t k = 0; k < 2; k++) {
        tpb g = {0};
        identity_graph(&g, NULL, 0);
        for (size_t i = 0; i < counts[k]; i++) tpb_int(&g, 100, 0); /* unknown */
        tpb m = model_of(&g);
        char tmpl[] = "/tmp/tio_onnx_fieldsXXXXXX";
        int fd = mkstemp(tmpl);
        assert_true(fd >= 0);
        close(fd);
        write_file(tmpl, m.b, m.n);
        tio_open_options o = {0};
        o.format = "onnx";
        for (int from_file = 0; from_file < 2; from_file++) {
            tio_container *c = NULL;
            tio_error e;
            int rc = from_file ? tio_open(tmpl, &o, &c, &e)
                               : tio_open_memory(m.b, m.n, &o, &c, &e);
            if (rc) fail_msg("%zu fields: %s", counts[k], e.message);
            tio_graph *gr = tio_container_graph(c);
            assert_non_null(gr);
            assert_int_equal(tio_graph_node_count(gr), 1);
            tio_node_info ni;
            assert_int_equal(tio_graph_node(gr, 0, &ni), TIO_OK);
            assert_string_equal(ni.op, "Identity");
            assert_int_equal(tio_graph_input_count(gr), 1);
            assert_int_equal(tio_graph_output_count(gr), 1);
            tio_container_free(c);
        }
        unlink(tmpl);
        free(m.b);
    }
}

/* Thousands of opset_import domains and metadata_props, each domain listed
 * twice (the second sets its version again, as tio_graph_set_opset does):
 * the graph's opsets and metadata in order, the later versions. Both were
 * found by a search in order per entry (80,000 metadata_props: 5.6 s). */
static void test_many_opsets_and_props(void **state) {
    (void)state;
    tpb g = {0}, m = {0};
    identity_graph(&g, NULL, 0);
    size_t n = 3000;
    char d[32];
    tpb_int(&m, 1, 8);
    for (size_t pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < n; i++) {
            tpb o = {0}, p = {0};
            snprintf(d, sizeof d, "dom.%zu", i);
            tpb_str(&o, 1, i == 7 ? "ai.onnx" : d); /* "ai.onnx" is "" */
            tpb_int(&o, 2, (uint64_t)(pass ? 1000 + i : i + 1));
            tpb_msg(&m, 8, &o);
            if (pass) continue;
            snprintf(d, sizeof d, "key.%zu", i);
            tpb_str(&p, 1, d);
            tpb_str(&p, 2, d + 4);
            tpb_msg(&m, 14, &p);
        }
    tpb_msg(&m, 7, &g);
    tio_open_options o = {0};
    o.format = "onnx";
    tio_container *c = NULL;
    tio_error e;
    if (tio_open_memory(m.b, m.n, &o, &c, &e)) fail_msg("%s", e.message);
    tio_graph *gr = tio_container_graph(c);
    assert_int_equal(tio_graph_opset_count(gr), n);
    for (size_t i = 0; i < n; i++) {
        const char *dom = NULL;
        int64_t ver = 0;
        assert_int_equal(tio_graph_opset_at(gr, i, &dom, &ver), TIO_OK);
        snprintf(d, sizeof d, "dom.%zu", i);
        assert_string_equal(dom, i == 7 ? "" : d);
        assert_int_equal(ver, (int64_t)(1000 + i));
    }
    for (size_t i = 0; i < n; i += 7) {
        snprintf(d, sizeof d, "key.%zu", i);
        assert_string_equal(tio_graph_meta_get(gr, d), d + 4);
    }
    tio_container_free(c);
    free(m.b);
}

/* A node of 3,000 attributes (an INT each, distinct names): every one kept in
 * order; the same with one name repeated: refused naming it. The reader finds
 * a name among the node's by an index (each add compared it with all). */
static void test_many_attributes(void **state) {
    (void)state;
    size_t n = 3000;
    for (int dup = 0; dup < 2; dup++) {
        tpb *attrs = calloc(n, sizeof *attrs);
        assert_non_null(attrs);
        char nm[32];
        for (size_t i = 0; i < n; i++) {
            snprintf(nm, sizeof nm, "attr_%zu", dup && i == 2500 ? (size_t)1234 : i);
            tpb_str(&attrs[i], 1, nm);
            tpb_int(&attrs[i], 3, i);  /* i */
            tpb_int(&attrs[i], 20, 2); /* type INT */
        }
        tpb g = {0};
        identity_graph(&g, attrs, n);
        tpb m = model_of(&g);
        tio_open_options o = {0};
        o.format = "onnx";
        tio_container *c = NULL;
        tio_error e;
        int rc = tio_open_memory(m.b, m.n, &o, &c, &e);
        if (dup) {
            assert_int_equal(rc, TIO_E_ARGUMENT);
            assert_non_null(strstr(e.message, "attribute 'attr_1234' is already set"));
        } else {
            if (rc) fail_msg("%s", e.message);
            tio_node_info ni;
            tio_graph *gr = tio_container_graph(c);
            assert_int_equal(tio_graph_node(gr, 0, &ni), TIO_OK);
            assert_int_equal(ni.attr_count, n);
            for (size_t i = 0; i < n; i += 97) {
                tio_attr a;
                snprintf(nm, sizeof nm, "attr_%zu", i);
                assert_int_equal(tio_graph_find_attr(gr, 0, nm, &a), TIO_OK);
                assert_int_equal(a.i, (int64_t)i);
                assert_int_equal(tio_graph_attr(gr, 0, i, &a), TIO_OK);
                assert_string_equal(a.name, nm);
            }
        }
        tio_container_free(c);
        free(m.b);
        free(attrs);
    }
}

static void test_external_files(void **state) {
    (void)state;
    char tmpl[] = "/tmp/tio_onnx_extXXXXXX";
    char *dir = mkdtemp(tmpl);
    assert_non_null(dir);
    char p[512], q[512], w[512], o[512];
    snprintf(p, sizeof p, "%s/sub", dir);
    assert_int_equal(mkdir(p, 0700), 0);
    const float vals[2] = {1.5f, -2.0f};
    snprintf(w, sizeof w, "%s/sub/w.bin", dir);
    write_file(w, vals, sizeof vals);
    snprintf(o, sizeof o, "%s/out.bin", dir);
    write_file(o, vals, sizeof vals);

    tpb m = ext_model("w.bin");
    snprintf(q, sizeof q, "%s/sub/good.onnx", dir);
    write_file(q, m.b, m.n);
    free(m.b);
    tio_container *c = NULL;
    tio_error e;
    if (tio_open(q, NULL, &c, &e)) fail_msg("%s", e.message);
    const tio_tensor *t = tio_container_find(c, "W");
    assert_non_null(t);
    assert_memory_equal(tio_tensor_data(t), vals, sizeof vals);
    unlink(w); /* the mapping outlives the name */
    assert_memory_equal(tio_tensor_data(t), vals, sizeof vals);
    tio_container_free(c);

    m = ext_model("../out.bin");
    snprintf(q, sizeof q, "%s/sub/up.onnx", dir);
    write_file(q, m.b, m.n);
    free(m.b);
    c = NULL;
    int rc = tio_open(q, NULL, &c, &e);
    assert_int_equal(rc, TIO_E_UNSUPPORTED);
    assert_null(c);
    assert_non_null(strstr(e.message, "'..'"));
    assert_non_null(strstr(e.message, "TIO_OPEN_EXTERNAL_ANYWHERE"));
    tio_open_options oo = {0};
    oo.flags = TIO_OPEN_EXTERNAL_ANYWHERE;
    if (tio_open(q, &oo, &c, &e)) fail_msg("%s", e.message);
    assert_memory_equal(tio_tensor_data(tio_container_find(c, "W")), vals, sizeof vals);
    tio_container_free(c);
    unlink(q);
    snprintf(q, sizeof q, "%s/sub/good.onnx", dir);
    unlink(q);
    unlink(o);
    rmdir(p);
    rmdir(dir);
}

/* A COO tensor among a TENSORS attribute's tensors (only the API can make
 * one): refused by name, never written as a dense tensor. */
static void test_coo_in_tensors_attr(void **state) {
    (void)state;
    tio_error e;
    tio_container *c = tio_container_new();
    assert_non_null(c);
    float vals[2] = {1, 2};
    int64_t idx[4] = {0, 0, 1, 1}, shape[2] = {2, 2};
    tio_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = "s";
    d.dtype = TIO_FLOAT32;
    d.rank = 2;
    d.shape = shape;
    d.layout = TIO_LAYOUT_COO;
    d.data = vals;
    d.nbytes = sizeof vals;
    d.nnz = 2;
    d.indices = idx;
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
    tio_graph *g = NULL;
    assert_int_equal(tio_container_new_graph(c, &g, &e), TIO_OK);
    tio_value_info v;
    memset(&v, 0, sizeof v);
    v.name = "y";
    v.tensor = -1;
    v.rank = -1;
    size_t yi, ni;
    assert_int_equal(tio_graph_add_value(g, &v, &yi, &e), TIO_OK);
    int64_t out = (int64_t)yi;
    tio_node_info n;
    memset(&n, 0, sizeof n);
    n.name = "k";
    n.op = "Constant";
    n.native_id = -1;
    n.outputs = &out;
    n.output_count = 1;
    assert_int_equal(tio_graph_add_node(g, &n, &ni, &e), TIO_OK);
    int64_t t0 = 0;
    tio_attr a;
    memset(&a, 0, sizeof a);
    a.name = "value_tensors";
    a.type = TIO_ATTR_TENSORS;
    a.tensors = &t0;
    a.count = 1;
    assert_int_equal(tio_graph_add_attr(g, ni, &a, &e), TIO_OK);
    assert_int_equal(tio_graph_set_outputs(g, &out, 1, &e), TIO_OK);
    tio_save_options so;
    memset(&so, 0, sizeof so);
    so.format = "onnx";
    void *buf = NULL;
    size_t len = 0;
    assert_int_equal(tio_save_memory(c, &so, &buf, &len, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "COO tensor"));
    assert_null(buf);
    tio_container_free(c);
}

/* tio_save_options.cast into ONNX (the CLI's --cast; tests/onnx/
 * test_cast_weights.py checks the same in onnxruntime): cnn_small.onnx's six
 * float32 initializers are stored as float16 under "<name>:float16", each
 * with a Cast back to float32 (to = 1) as the first nodes; the float16
 * values are the float32 ones rounded to nearest; the model's own nodes, its
 * inputs and outputs follow unchanged. A cast of a dtype the model lacks
 * writes the same bytes as no cast; rten refuses a cast by name. */
static void test_cast_weights(void **state) {
    (void)state;
    char *path = tvec_path_or_skip("onnx/cnn_small.onnx");
    if (!path) return;
    tio_error e;
    tio_container *c = NULL;
    if (tio_open(path, NULL, &c, &e)) fail_msg("%s: %s", path, e.message);
    tio_save_options so;
    memset(&so, 0, sizeof so);
    so.format = "onnx";
    void *plain = NULL, *buf = NULL;
    size_t plain_len = 0, len = 0;
    assert_int_equal(tio_save_memory(c, &so, &plain, &plain_len, &e), TIO_OK);
    so.cast = "float64=float16";
    assert_int_equal(tio_save_memory(c, &so, &buf, &len, &e), TIO_OK);
    assert_int_equal(len, plain_len);
    assert_memory_equal(buf, plain, len);
    free(buf);
    so.cast = "float16";
    if (tio_save_memory(c, &so, &buf, &len, &e)) fail_msg("cast: %s", e.message);
    tio_container *h = NULL;
    if (tio_open_memory(buf, len, NULL, &h, &e)) fail_msg("reopen: %s", e.message);
    size_t n = tio_container_count(c);
    assert_int_equal(tio_container_count(h), n);
    tio_graph *g0 = tio_container_graph(c), *g = tio_container_graph(h);
    assert_int_equal(tio_graph_node_count(g), tio_graph_node_count(g0) + n);
    for (size_t i = 0; i < n; i++) {
        const tio_tensor *s = tio_container_tensor(c, i);
        char want[96];
        snprintf(want, sizeof want, "%s:float16", tio_tensor_name(s));
        const tio_tensor *t = tio_container_find(h, want);
        if (!t) fail_msg("no initializer %s", want);
        assert_int_equal(tio_tensor_dtype(t), TIO_FLOAT16);
        assert_int_equal(tio_tensor_numel(t), tio_tensor_numel(s));
        uint64_t bad = 0;
        if (!tvec_half_rounds(tio_tensor_data(t), tio_tensor_data(s), tio_tensor_numel(s), &bad))
            fail_msg("%s[%llu]: not the float32 rounded", want, (unsigned long long)bad);
        /* node i: Cast(<name>:float16) -> <name>, to = FLOAT */
        tio_node_info ni;
        assert_int_equal(tio_graph_node(g, i, &ni), TIO_OK);
        assert_string_equal(ni.op, "Cast");
        assert_int_equal(ni.input_count, 1);
        assert_int_equal(ni.output_count, 1);
        tio_value_info vi, vo;
        assert_int_equal(tio_graph_value(g, (size_t)ni.inputs[0], &vi), TIO_OK);
        assert_int_equal(tio_graph_value(g, (size_t)ni.outputs[0], &vo), TIO_OK);
        assert_string_equal(vo.name, tio_tensor_name(s));
        assert_int_equal(vo.tensor, -1);
        assert_true(vi.tensor >= 0);
        assert_string_equal(tio_tensor_name(tio_container_tensor(h, (size_t)vi.tensor)), want);
        tio_attr a;
        assert_int_equal(tio_graph_find_attr(g, i, "to", &a), TIO_OK);
        assert_int_equal(a.i, 1);
    }
    for (size_t j = 0; j < tio_graph_node_count(g0); j++) {
        tio_node_info a, b;
        assert_int_equal(tio_graph_node(g0, j, &a), TIO_OK);
        assert_int_equal(tio_graph_node(g, j + n, &b), TIO_OK);
        assert_string_equal(a.op, b.op);
        assert_string_equal(a.name, b.name);
    }
    assert_int_equal(tio_graph_input_count(g), tio_graph_input_count(g0));
    assert_int_equal(tio_graph_output_count(g), tio_graph_output_count(g0));
    tio_container_free(h);
    free(buf);
    /* bfloat16 needs Cast at opset 13: written at 12, refused, and
     * tio_check_save says so first */
    so.cast = "bfloat16";
    so.options = "opset=12";
    tio_error ec;
    buf = NULL;
    assert_int_equal(tio_check_save(c, &so, &ec), TIO_E_UNSUPPORTED);
    assert_int_equal(tio_save_memory(c, &so, &buf, &len, &e), TIO_E_UNSUPPORTED);
    assert_string_equal(ec.message, e.message);
    assert_non_null(strstr(e.message, "from opset 13"));
    assert_null(buf);
    so.options = NULL;
    so.cast = "float16";
    /* a model format that casts no weights */
    so.format = "rten";
    buf = NULL;
    assert_int_equal(tio_save_memory(c, &so, &buf, &len, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "casts no model's weights"));
    assert_null(buf);
    free(plain);
    tio_container_free(c);
    free(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_budget_empty_strings),
        cmocka_unit_test(test_budget_typed_int64),
        cmocka_unit_test(test_large_name_many_uses),
        cmocka_unit_test(test_depth_bomb),
        cmocka_unit_test(test_rank_bomb),
        cmocka_unit_test(test_truncations),
        cmocka_unit_test(test_external_from_memory),
        cmocka_unit_test(test_external_files),
        cmocka_unit_test(test_coo_in_tensors_attr),
        cmocka_unit_test(test_cast_weights),
        cmocka_unit_test(test_many_graph_fields),
        cmocka_unit_test(test_many_opsets_and_props),
        cmocka_unit_test(test_many_attributes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
