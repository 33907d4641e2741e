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
#include "tvec.h"

/* ------------------------------------------------ a tiny protobuf writer */

typedef struct pbuf {
    uint8_t *b;
    size_t n, cap;
} pbuf;

static void pb_raw(pbuf *p, const void *d, size_t n) {
    if (p->n + n > p->cap) {
        size_t nc = p->cap ? p->cap : 256;
        while (nc < p->n + n) nc *= 2;
        p->b = realloc(p->b, nc);
        assert_non_null(p->b);
        p->cap = nc;
    }
    if (n) memcpy(p->b + p->n, d, n);
    p->n += n;
}
static void pb_varint(pbuf *p, uint64_t v) {
    uint8_t t[10];
    size_t k = 0;
    do {
        t[k] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) t[k] |= 0x80;
        k++;
    } while (v);
    pb_raw(p, t, k);
}
static void pb_tag(pbuf *p, uint32_t num, unsigned wire) { pb_varint(p, (uint64_t)num << 3 | wire); }
static void pb_int(pbuf *p, uint32_t num, uint64_t v) {
    pb_tag(p, num, 0);
    pb_varint(p, v);
}
static void pb_bytes(pbuf *p, uint32_t num, const void *d, size_t n) {
    pb_tag(p, num, 2);
    pb_varint(p, n);
    pb_raw(p, d, n);
}
static void pb_str(pbuf *p, uint32_t num, const char *s) { pb_bytes(p, num, s, strlen(s)); }
/* Appends sub as field num and frees it. */
static void pb_msg(pbuf *p, uint32_t num, pbuf *sub) {
    pb_bytes(p, num, sub->b, sub->n);
    free(sub->b);
    memset(sub, 0, sizeof *sub);
}

/* ModelProto{ir_version 8, opset_import{"" 17}, graph} */
static pbuf model_of(pbuf *graph) {
    pbuf m = {0}, o = {0};
    pb_int(&m, 1, 8);
    pb_int(&o, 2, 17);
    pb_msg(&m, 8, &o);
    pb_msg(&m, 7, graph);
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

static int open_buf(const pbuf *m, const tio_limits *lim, tio_error *e) {
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
static void node(pbuf *g, const char *op, const char *const *ins, size_t nin,
                 const char *const *outs, size_t nout, pbuf *attrs, size_t nattr) {
    pbuf n = {0};
    for (size_t k = 0; k < nin; k++) pb_str(&n, 1, ins[k]);
    for (size_t k = 0; k < nout; k++) pb_str(&n, 2, outs[k]);
    pb_str(&n, 4, op);
    for (size_t k = 0; k < nattr; k++) pb_msg(&n, 5, &attrs[k]);
    pb_msg(g, 1, &n);
}

/* One Identity node whose STRINGS attribute holds `n` empty strings: 2 input
 * bytes each, a pointer and a heap block each once decoded. */
static void test_budget_empty_strings(void **state) {
    (void)state;
    pbuf g = {0}, a = {0};
    pb_str(&a, 1, "labels");
    pb_int(&a, 20, 8); /* STRINGS */
    for (size_t k = 0; k < 400000; k++) pb_bytes(&a, 9, "", 0);
    const char *in[] = {"x"}, *out[] = {"y"};
    node(&g, "Identity", in, 1, out, 1, &a, 1);
    pb_str(&g, 2, "g");
    pbuf vi = {0};
    pb_str(&vi, 1, "x");
    pb_msg(&g, 11, &vi);
    pbuf m = model_of(&g);
    tio_error e;
    assert_int_equal(open_buf(&m, NULL, &e), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "memory"));
    free(m.b);
}

/* int64_data of one-byte varints: 8 heap bytes per input byte. */
static void test_budget_typed_int64(void **state) {
    (void)state;
    pbuf g = {0}, t = {0}, pk = {0};
    size_t n = 1u << 20;
    pb_int(&t, 1, n); /* dims [n] */
    pb_int(&t, 2, 7); /* INT64 */
    pb_str(&t, 8, "w");
    for (size_t k = 0; k < n; k++) pb_varint(&pk, 1);
    pb_msg(&t, 7, &pk);
    pb_msg(&g, 5, &t);
    pb_str(&g, 2, "g");
    pbuf m = model_of(&g);
    tio_error e;
    assert_int_equal(open_buf(&m, NULL, &e), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "memory"));
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
    pbuf g = {0};
    pbuf vi = {0};
    pb_str(&vi, 1, big);
    pb_msg(&g, 11, &vi);
    for (int k = 0; k < 200; k++) {
        char o[16];
        snprintf(o, sizeof o, "o%d", k);
        const char *in[] = {big}, *out[] = {o};
        node(&g, "Relu", in, 1, out, 1, NULL, 0);
    }
    pbuf m = model_of(&g);
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
static pbuf if_nest(int levels) {
    pbuf g = {0};
    pb_str(&g, 2, "leaf");
    for (int k = 0; k < levels; k++) {
        pbuf a = {0}, outer = {0};
        pb_str(&a, 1, "then_branch");
        pb_int(&a, 20, 5); /* GRAPH */
        pb_msg(&a, 6, &g);
        char o[16];
        snprintf(o, sizeof o, "y%d", k);
        const char *out[] = {o};
        node(&outer, "If", NULL, 0, out, 1, &a, 1);
        pb_str(&outer, 2, "g");
        g = outer;
    }
    return model_of(&g);
}

static void test_depth_bomb(void **state) {
    (void)state;
    tio_error e;
    pbuf ok = if_nest(8);
    assert_int_equal(open_buf(&ok, NULL, &e), TIO_OK);
    free(ok.b);
    pbuf deep = if_nest(100); /* past the default max_depth (64) */
    assert_int_equal(open_buf(&deep, NULL, &e), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "depth"));
    free(deep.b);
    tio_limits lim = {0};
    lim.max_depth = 4;
    pbuf six = if_nest(6);
    assert_int_equal(open_buf(&six, &lim, &e), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "max_depth"));
    free(six.b);
}

/* A packed dims field claiming a huge rank, in an initializer and in a
 * value's shape. */
static void test_rank_bomb(void **state) {
    (void)state;
    tio_error e;
    pbuf g = {0}, t = {0}, pk = {0};
    for (size_t k = 0; k < 100000; k++) pb_varint(&pk, 1);
    pb_msg(&t, 1, &pk);
    pb_int(&t, 2, 1);
    pb_str(&t, 8, "w");
    pb_bytes(&t, 9, "\0\0\0\0", 4);
    pb_msg(&g, 5, &t);
    pbuf m = model_of(&g);
    assert_int_equal(open_buf(&m, NULL, &e), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "max_rank"));
    free(m.b);

    pbuf g2 = {0}, vi = {0}, tp = {0}, tt = {0}, sh = {0};
    for (size_t k = 0; k < 100000; k++) {
        pbuf d = {0};
        pb_int(&d, 1, 1);
        pb_msg(&sh, 1, &d);
    }
    pb_int(&tt, 1, 1);
    pb_msg(&tt, 2, &sh);
    pb_msg(&tp, 1, &tt);
    pb_str(&vi, 1, "x");
    pb_msg(&vi, 2, &tp);
    pb_msg(&g2, 11, &vi);
    pbuf m2 = model_of(&g2);
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
        pbuf m = {buf, n, n};
        tio_error e;
        (void)open_buf(&m, NULL, &e);
    }
    free(buf);
}

/* ------------------------------------------------------- external data */

/* A model whose initializer W (float [2]) is external: `loc`, 8 bytes. */
static pbuf ext_model(const char *loc) {
    pbuf g = {0}, t = {0}, e = {0};
    pb_int(&t, 1, 2);
    pb_int(&t, 2, 1);
    pb_str(&t, 8, "W");
    pb_str(&e, 1, "location");
    pb_str(&e, 2, loc);
    pb_msg(&t, 13, &e);
    pb_str(&e, 1, "length");
    pb_str(&e, 2, "8");
    pb_msg(&t, 13, &e);
    pb_int(&t, 14, 1); /* EXTERNAL */
    pb_msg(&g, 5, &t);
    pb_str(&g, 2, "g");
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
    pbuf m = ext_model("w.bin");
    tio_error e;
    assert_int_equal(open_buf(&m, NULL, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "needs the model's path"));
    free(m.b);
}

/* Beside the model: a view into the mapped file, kept after the open. Out
 * of its directory: refused, unless TIO_OPEN_EXTERNAL_ANYWHERE. */
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

    pbuf m = ext_model("w.bin");
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
