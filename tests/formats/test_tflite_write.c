/* TensorFlow Lite (.tflite) writing: the 17 models of TensorFlow Lite Micro in
 * ../shared/vectors/tflite rewritten (read -> write -> read): the rewrite
 * compared with the original field by field through the schema data (every
 * table, scalar, vector, string and union of the model; buffers and custom
 * options by their bytes wherever they lie), every constant by SHA-256, the
 * second rewrite byte-identical to the first; the offset/size form (large
 * custom options) from a model built in the writer's IR; hostile models and
 * edits: options out of range, indices out of range, a container tensor that
 * no longer matches its TFLite tensor, tensors and metadata added after the
 * read; the offset/size form past 2 GiB. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/sink.h"
#include "flatbuf/flatbuf.h"
#include "tensio.h"
#include "tflite/schema.h"
#include "tflite/write.h"
#include "tvec.h"

#define OK_(x) assert_int_equal((x), TIO_OK)

/* ------------------------------------------------ structural comparison */

typedef struct cmp {
    const uint8_t *a, *b;
    size_t al, bl;
    tio_fb_ref ma, mb; /* the two models */
    size_t fields;     /* fields compared */
} cmp;

/* The bytes of buffer idx of a model (inline, or the offset/size form). */
static void buf_bytes(const tio_fb_ref *model, uint32_t idx, const uint8_t **d, size_t *n) {
    tio_fb_vec bv, dv;
    tio_fb_ref bt;
    *d = NULL;
    *n = 0;
    if (!tio__fb_vector(model, TFL_Model_buffers, &bv) || !tio__fb_vec_table(&bv, idx, &bt))
        return;
    if (tio__fb_vector(&bt, TFL_Buffer_data, &dv) && dv.count) {
        *d = tio__fb_vec_data(&dv);
        *n = dv.count;
        return;
    }
    uint64_t off = tio__fb_u64(&bt, TFL_Buffer_offset, 0);
    if (off > 1) {
        *d = model->buf + off;
        *n = (size_t)tio__fb_u64(&bt, TFL_Buffer_size, 0);
    }
}

/* An operator's custom options (inline or large). */
static bool custom_bytes(const tio_fb_ref *op, const uint8_t **d, size_t *n) {
    tio_fb_vec v;
    if (tio__fb_vector(op, TFL_Operator_custom_options, &v)) {
        *d = tio__fb_vec_data(&v);
        *n = v.count;
        return true;
    }
    uint64_t off = tio__fb_u64(op, TFL_Operator_large_custom_options_offset, 0);
    *d = off > 1 ? op->buf + off : NULL;
    *n = (size_t)tio__fb_u64(op, TFL_Operator_large_custom_options_size, 0);
    return off > 1;
}

static void differ(const char *path, const char *what) {
    fprintf(stderr, "rewrite differs at %s: %s\n", path, what);
    fail();
}

static void cmp_table(cmp *c, const tio_fb_ref *a, const tio_fb_ref *b, const tio_fb_table *t,
                      const char *path);

static void cmp_field(cmp *c, const tio_fb_ref *a, const tio_fb_ref *b, const tio_fb_table *t,
                      unsigned k, const char *path) {
    const tio_fb_field *f = &t->fields[k];
    char sub[512];
    snprintf(sub, sizeof sub, "%s.%s", path, f->name);
    c->fields++;
    switch (f->kind) {
    case TIO_FB_NONE: return;
    case TIO_FB_STRING: {
        const char *sa = NULL, *sb = NULL;
        uint32_t na = 0, nb = 0;
        bool ha = tio__fb_string(a, k, &sa, &na), hb = tio__fb_string(b, k, &sb, &nb);
        if (ha != hb || na != nb || (na && memcmp(sa, sb, na) != 0)) differ(sub, "string");
        return;
    }
    case TIO_FB_TABLE: {
        tio_fb_ref ta, tb;
        bool ha = tio__fb_table(a, k, &ta), hb = tio__fb_table(b, k, &tb);
        if (ha != hb) differ(sub, "table presence");
        if (ha) cmp_table(c, &ta, &tb, f->table, sub);
        return;
    }
    case TIO_FB_UNION: {
        unsigned tag = tio__fb_u8(a, k - 1, 0);
        tio_fb_ref ta, tb;
        bool ha = tio__fb_table(a, k, &ta), hb = tio__fb_table(b, k, &tb);
        if (ha != hb) differ(sub, "union value presence");
        if (ha && tag && tag <= f->un->nmembers)
            cmp_table(c, &ta, &tb, f->un->members[tag - 1], sub);
        return;
    }
    case TIO_FB_VECTOR: {
        tio_fb_vec va, vb;
        bool ha = tio__fb_vector(a, k, &va), hb = tio__fb_vector(b, k, &vb);
        if (ha != hb) differ(sub, "vector presence");
        if (!ha) return;
        if (va.count != vb.count) differ(sub, "vector length");
        for (uint32_t i = 0; i < va.count; i++) {
            char el[600];
            snprintf(el, sizeof el, "%s[%u]", sub, i);
            if (f->elem == TIO_FB_TABLE) {
                tio_fb_ref ta, tb;
                assert_true(tio__fb_vec_table(&va, i, &ta) && tio__fb_vec_table(&vb, i, &tb));
                cmp_table(c, &ta, &tb, f->table, el);
            } else if (f->elem == TIO_FB_STRING) {
                const char *sa = NULL, *sb = NULL;
                uint32_t na = 0, nb = 0;
                assert_true(tio__fb_vec_string(&va, i, &sa, &na) &&
                            tio__fb_vec_string(&vb, i, &sb, &nb));
                if (na != nb || memcmp(sa, sb, na) != 0) differ(el, "string");
            }
        }
        size_t es = tio__fb_scalar_size(f->elem);
        if (es && va.count &&
            memcmp(tio__fb_vec_data(&va), tio__fb_vec_data(&vb), es * va.count) != 0)
            differ(sub, "vector elements");
        return;
    }
    default: {
        /* scalars and union tags, defaults applied */
        if (f->kind == TIO_FB_UNION_TYPE) {
            if (tio__fb_u8(a, k, 0) != tio__fb_u8(b, k, 0)) differ(sub, "union tag");
            return;
        }
        int64_t ia = 0, ib = 0;
        double fa = 0, fb = 0;
        bool ha = tio__fb_scalar(a, k, f, &ia, &fa), hb = tio__fb_scalar(b, k, f, &ib, &fb);
        if (ha != hb || ia != ib || (fa != fb && !(isnan(fa) && isnan(fb))))
            differ(sub, "scalar");
    }
    }
}

static void cmp_table(cmp *c, const tio_fb_ref *a, const tio_fb_ref *b, const tio_fb_table *t,
                      const char *path) {
    bool model = strcmp(t->name, "Model") == 0, code = strcmp(t->name, "OperatorCode") == 0;
    bool op = strcmp(t->name, "Operator") == 0;
    for (unsigned k = 0; k < t->nfields; k++) {
        if (model && k == TFL_Model_buffers) { /* by their bytes, wherever they lie */
            tio_fb_vec va, vb;
            uint32_t na = tio__fb_vector(a, k, &va) ? va.count : 0;
            uint32_t nb = tio__fb_vector(b, k, &vb) ? vb.count : 0;
            if (na != nb) differ(path, "number of buffers");
            for (uint32_t i = 0; i < na; i++) {
                const uint8_t *da, *db;
                size_t la, lb;
                buf_bytes(&c->ma, i, &da, &la);
                buf_bytes(&c->mb, i, &db, &lb);
                if (la != lb || (la && memcmp(da, db, la) != 0)) differ(path, "buffer bytes");
            }
            continue;
        }
        if (code && (k == TFL_OperatorCode_deprecated_builtin_code ||
                     k == TFL_OperatorCode_builtin_code)) {
            /* TensorFlow Lite's rule: the larger of the two */
            int32_t xa = tio__fb_i8(a, TFL_OperatorCode_deprecated_builtin_code, 0);
            int32_t ya = tio__fb_i32(a, TFL_OperatorCode_builtin_code, 0);
            int32_t xb = tio__fb_i8(b, TFL_OperatorCode_deprecated_builtin_code, 0);
            int32_t yb = tio__fb_i32(b, TFL_OperatorCode_builtin_code, 0);
            if ((xa > ya ? xa : ya) != (xb > yb ? xb : yb)) differ(path, "builtin code");
            continue;
        }
        if (op && (k == TFL_Operator_custom_options ||
                   k == TFL_Operator_large_custom_options_offset ||
                   k == TFL_Operator_large_custom_options_size)) {
            if (k != TFL_Operator_custom_options) continue;
            const uint8_t *da, *db;
            size_t la, lb;
            bool ha = custom_bytes(a, &da, &la), hb = custom_bytes(b, &db, &lb);
            if (ha != hb || la != lb || (la && memcmp(da, db, la) != 0))
                differ(path, "custom options");
            continue;
        }
        cmp_field(c, a, b, t, k, path);
    }
}

/* Compares two .tflite models through the schema; returns the fields compared. */
static size_t cmp_models(const uint8_t *a, size_t al, const uint8_t *b, size_t bl) {
    cmp c;
    memset(&c, 0, sizeof c);
    c.a = a;
    c.b = b;
    c.al = al;
    c.bl = bl;
    assert_true(tio__fb_root(a, al, &c.ma));
    assert_true(tio__fb_root(b, bl, &c.mb));
    cmp_table(&c, &c.ma, &c.mb, tio__tfl_root, "Model");
    return c.fields;
}

/* ------------------------------------------------------------ helpers */

/* Adds a borrowed float32 tensor. */
static void add_f32(tio_container *c, const char *name, const int64_t *shape, size_t rank,
                    const void *data, size_t nbytes) {
    tio_tensor_desc d;
    tio_error e;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.dtype = TIO_FLOAT32;
    d.rank = rank;
    d.shape = shape;
    d.data = data;
    d.nbytes = nbytes;
    OK_(tio_container_add(c, &d, TIO_ADD_BORROW, NULL, &e));
}

static int save_tflite(tio_container *c, void **buf, size_t *len, tio_error *e) {
    tio_save_options so = {0};
    so.format = "tflite";
    return tio_save_memory(c, &so, buf, len, e);
}

static void same_tensors(const tio_container *a, const tio_container *b) {
    assert_int_equal(tio_container_count(a), tio_container_count(b));
    for (size_t i = 0; i < tio_container_count(a); i++) {
        const tio_tensor *x = tio_container_tensor(a, i), *y = tio_container_tensor(b, i);
        assert_string_equal(tio_tensor_name(x), tio_tensor_name(y));
        assert_int_equal(tio_tensor_dtype(x), tio_tensor_dtype(y));
        assert_int_equal(tio_tensor_nbytes(x), tio_tensor_nbytes(y));
        assert_memory_equal(tio_tensor_bytes(x), tio_tensor_bytes(y), tio_tensor_nbytes(x));
    }
    assert_int_equal(tio_container_meta_count(a), tio_container_meta_count(b));
    for (size_t i = 0; i < tio_container_meta_count(a); i++) {
        const char *k, *v;
        assert_int_equal(tio_container_meta_at(a, i, &k, &v), TIO_OK);
        const char *w = tio_container_meta_get(b, k);
        assert_non_null(w);
        assert_string_equal(v, w);
    }
    /* the reader's facts (operators, signatures, metadata names, version) */
    for (size_t i = 0; i < tio_container_prop_count(a); i++) {
        const char *k, *v;
        assert_int_equal(tio_container_prop_at(a, i, &k, &v), TIO_OK);
        if (strcmp(k, "buffer_form") == 0) continue;
        const char *w = tio_container_prop_get(b, k);
        if (!w || strcmp(v, w) != 0) fprintf(stderr, "prop %s: '%s' vs '%s'\n", k, v, w);
        assert_non_null(w);
        assert_string_equal(v, w);
    }
}

/* ------------------------------------------------------------ vectors */

static void test_rewrite_vectors(void **state) {
    (void)state;
    json_t *m = tvec_manifest("tflite/manifest.json");
    if (!m) return; /* SKIPPED line printed */
    const char *file;
    json_t *entry;
    size_t files = 0, fields = 0, buffers = 0;
    json_object_foreach(m, file, entry) {
        char rel[256];
        snprintf(rel, sizeof rel, "tflite/%s", file);
        char *path = tvec_path(rel);
        assert_non_null(path);
        tio_container *c = NULL, *r1 = NULL, *r2 = NULL;
        tio_error e;
        OK_(tio_open(path, NULL, &c, &e));
        void *b1 = NULL, *b2 = NULL;
        size_t l1 = 0, l2 = 0;
        int rc = save_tflite(c, &b1, &l1, &e);
        if (rc) fprintf(stderr, "%s: %s\n", file, e.message);
        assert_int_equal(rc, TIO_OK);
        tio_open_options oo = {0};
        oo.format = "tflite";
        rc = tio_open_memory(b1, l1, &oo, &r1, &e);
        if (rc) fprintf(stderr, "%s rewritten: %s\n", file, e.message);
        assert_int_equal(rc, TIO_OK);
        assert_int_equal(tio_container_warning_count(r1), 0);
        same_tensors(c, r1);
        /* the whole model, field by field */
        FILE *fp = fopen(path, "rb");
        assert_non_null(fp);
        fseek(fp, 0, SEEK_END);
        size_t ol = (size_t)ftell(fp);
        fseek(fp, 0, SEEK_SET);
        uint8_t *orig = malloc(ol);
        assert_non_null(orig);
        assert_int_equal(fread(orig, 1, ol, fp), ol);
        fclose(fp);
        fields += cmp_models(orig, ol, b1, l1);
        /* every buffer 16-byte aligned in the rewrite */
        tio_fb_ref mr;
        tio_fb_vec bv;
        assert_true(tio__fb_root(b1, l1, &mr));
        if (tio__fb_vector(&mr, TFL_Model_buffers, &bv))
            for (uint32_t i = 0; i < bv.count; i++) {
                const uint8_t *d;
                size_t n;
                buf_bytes(&mr, i, &d, &n);
                if (n) assert_int_equal((size_t)(d - (const uint8_t *)b1) % 16, 0);
                buffers += n > 0;
            }
        /* tensio's own output is rewritten byte for byte */
        OK_(save_tflite(r1, &b2, &l2, &e));
        assert_int_equal(l1, l2);
        assert_memory_equal(b1, b2, l1);
        OK_(tio_open_memory(b2, l2, &oo, &r2, &e));
        tio_container_free(r2);
        tio_container_free(r1);
        tio_free(b2);
        tio_free(b1);
        free(orig);
        tio_container_free(c);
        free(path);
        files++;
    }
    printf("%zu models rewritten, %zu fields and %zu buffers equal\n", files, fields, buffers);
    assert_int_equal(files, 17);
    json_decref(m);
}

/* Edits through the API: refused by name, never dropped. */
static void test_rewrite_edits(void **state) {
    (void)state;
    char *path = tvec_path_or_skip("tflite/tflm_hello_world_float.tflite");
    if (!path) return; /* SKIPPED line printed */
    tio_container *c = NULL;
    tio_error e;
    void *buf = NULL;
    size_t len = 0;
    /* a tensor added */
    OK_(tio_open(path, NULL, &c, &e));
    float x[2] = {1, 2};
    int64_t dim = 2;
    add_f32(c, "extra", &dim, 1, x, sizeof x);
    assert_int_equal(save_tflite(c, &buf, &len, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "'extra'"));
    tio_container_free(c);
    /* opened with its native graph (one node per TFLite operator): the same rewrite */
    void *b0 = NULL, *b1 = NULL;
    size_t l0 = 0, l1 = 0;
    OK_(tio_open(path, NULL, &c, &e));
    OK_(save_tflite(c, &b0, &l0, &e));
    tio_container_free(c);
    tio_open_options no = {0};
    no.flags = TIO_OPEN_NATIVE_GRAPH;
    OK_(tio_open(path, &no, &c, &e));
    OK_(save_tflite(c, &b1, &l1, &e));
    assert_int_equal(l0, l1);
    assert_memory_equal(b0, b1, l0);
    tio_free(b0);
    tio_free(b1);
    tio_container_free(c);
    /* metadata changed */
    OK_(tio_open(path, NULL, &c, &e));
    OK_(tio_container_meta_set(c, "note", "x", &e));
    assert_int_equal(save_tflite(c, &buf, &len, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "metadata"));
    tio_container_free(c);
    /* a tensor whose shape no longer matches its TFLite tensor */
    OK_(tio_open(path, NULL, &c, &e));
    tio_tensor *t = c->tensors[0];
    t->dtype = TIO_INT32; /* same size, another type */
    assert_int_equal(save_tflite(c, &buf, &len, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "must keep its tensor's type and shape"));
    t->dtype = TIO_FLOAT32;
    int64_t keep = t->shape[0];
    t->shape[0] = 0; /* another shape (and no bytes) */
    t->numel = 0;
    assert_int_equal(save_tflite(c, &buf, &len, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "must keep its tensor's type and shape"));
    t->shape[0] = keep;
    tio_container_free(c);
    /* the graph edited in place: an attribute added to a node, the outputs
     * set anew, a graph metadata entry, an opset (counts unchanged) */
    for (int k = 0; k < 4; k++) {
        OK_(tio_open(path, NULL, &c, &e));
        tio_graph *g = tio_container_graph(c);
        assert_non_null(g);
        size_t nn = tio_graph_node_count(g);
        if (k == 0) {
            tio_attr a;
            memset(&a, 0, sizeof a);
            a.name = "note";
            a.type = TIO_ATTR_INT;
            a.i = 1;
            OK_(tio_graph_add_attr(g, nn - 1, &a, &e));
        } else if (k == 1) {
            OK_(tio_graph_set_outputs(g, tio_graph_outputs(g), tio_graph_output_count(g), &e));
        } else if (k == 2) {
            OK_(tio_graph_meta_set(g, "note", "x", &e));
        } else {
            OK_(tio_graph_set_opset(g, "", 13, &e));
        }
        assert_int_equal(tio_graph_node_count(g), nn);
        assert_int_equal(save_tflite(c, &buf, &len, &e), TIO_E_UNSUPPORTED);
        assert_non_null(strstr(e.message, "graph was edited"));
        tio_container_free(c);
    }
    free(path);
}

/* ------------------------------------------------------- the IR, direct */

typedef struct irfix {
    tio_container *c;
    tio_write_plan *plan;
    tfl_wmodel m;
} irfix;

static const float w4[4] = {1, 2, 3, 4};

/* A container with one float32 [2,2] tensor "w", a plan over it, and a model
 * of one subgraph: input x [1,2], w (the container tensor) and y, one
 * FULLY_CONNECTED. */
static void ir_setup(irfix *f) {
    tio_error e;
    memset(f, 0, sizeof *f);
    f->c = tio_container_new();
    int64_t dims[2] = {2, 2};
    add_f32(f->c, "w", dims, 2, w4, sizeof w4);
    tio_save_options so = {0};
    so.format = "safetensors"; /* a plan over the tensors (any format: no check runs on them) */
    OK_(tio__plan_create(f->c, &so, tio__format_find("safetensors"), &f->plan, &e));
    OK_(tio__tfl_w_init(&f->m, &e));
    tfl_wsubgraph *s;
    OK_(tio__tfl_w_subgraph(&f->m, &s, &e));
    uint32_t wb, code;
    OK_(tio__tfl_w_buffer(&f->m, 0, NULL, sizeof w4, &wb, &e));
    static const int32_t s12[2] = {1, 2}, s22[2] = {2, 2};
    tfl_wtensor t;
    int32_t ix, iw, iy;
    memset(&t, 0, sizeof t);
    t.type = TFL_TensorType_FLOAT32;
    t.nsig = -1;
    t.name = "x";
    t.shape = s12;
    t.rank = 2;
    OK_(tio__tfl_w_tensor(&f->m, 0, &t, &ix, &e));
    t.name = "w";
    t.shape = s22;
    t.buffer = wb;
    OK_(tio__tfl_w_tensor(&f->m, 0, &t, &iw, &e));
    t.name = "y";
    t.shape = s12;
    t.buffer = 0;
    OK_(tio__tfl_w_tensor(&f->m, 0, &t, &iy, &e));
    OK_(tio__tfl_w_code(&f->m, TFL_BuiltinOperator_FULLY_CONNECTED, NULL, 1, &code, &e));
    static const int32_t ins[3] = {0, 1, -1}, outs[1] = {2}, gin[1] = {0}, gout[1] = {2};
    tfl_wop op;
    memset(&op, 0, sizeof op);
    op.opcode = code;
    op.inputs = ins;
    op.nin = 3;
    op.outputs = outs;
    op.nout = 1;
    op.debug_metadata_index = -1;
    op.opt_type = TFL_BuiltinOptions_FullyConnectedOptions;
    tfl_wop *added;
    OK_(tio__tfl_w_op(&f->m, 0, &op, &added, &e));
    OK_(tio__tfl_w_opt_i(&f->m, added, false, "fused_activation_function",
                         TFL_ActivationFunctionType_RELU, &e));
    s = &f->m.subgraphs[0];
    s->inputs = gin;
    s->ninputs = 1;
    s->outputs = gout;
    s->noutputs = 1;
}

static void ir_teardown(irfix *f) {
    tio__tfl_w_free(&f->m);
    tio__plan_destroy(f->plan);
    tio_container_free(f->c);
}

/* Serialises f's model to memory: rc, and the bytes in *out (malloc'ed). */
static int ir_write(irfix *f, uint8_t **out, size_t *len, tio_error *e) {
    tio_sink s;
    tio__sink_init_mem(&s);
    int rc = tio__tfl_w_serialise(&f->m, f->plan, &s, e);
    *out = NULL;
    *len = 0;
    if (!rc) {
        *out = malloc(s.len ? s.len : 1);
        memcpy(*out, s.buf, s.len);
        *len = s.len;
    }
    tio__sink_dispose(&s);
    return rc;
}

static void test_ir_model(void **state) {
    (void)state;
    irfix f;
    ir_setup(&f);
    tio_error e;
    uint8_t *b = NULL;
    size_t n = 0;
    OK_(ir_write(&f, &b, &n, &e));
    tio_container *c = NULL;
    tio_open_options oo = {0};
    oo.format = "tflite";
    int rc = tio_open_memory(b, n, &oo, &c, &e);
    if (rc) fprintf(stderr, "%s\n", e.message);
    assert_int_equal(rc, TIO_OK);
    assert_int_equal(tio_container_count(c), 1);
    assert_string_equal(tio_tensor_name(tio_container_tensor(c, 0)), "w");
    assert_memory_equal(tio_tensor_bytes(tio_container_tensor(c, 0)), w4, sizeof w4);
    assert_string_equal(tio_container_prop_get(c, "operator_codes"), "FULLY_CONNECTED v1");
    /* the option went through: the raised graph's Gemm is followed by a Relu */
    const tio_graph *g = tio_container_graph(c);
    assert_non_null(g);
    bool relu = false;
    for (size_t i = 0; i < g->node_count; i++) relu |= strcmp(g->nodes[i].op, "Relu") == 0;
    assert_true(relu);
    /* deterministic, and a rewrite gives the same bytes */
    uint8_t *b2 = NULL;
    size_t n2 = 0;
    OK_(ir_write(&f, &b2, &n2, &e));
    assert_int_equal(n, n2);
    assert_memory_equal(b, b2, n);
    void *b3 = NULL;
    size_t n3 = 0;
    OK_(save_tflite(c, &b3, &n3, &e));
    assert_int_equal(n, n3);
    assert_memory_equal(b, b3, n);
    tio_free(b3);
    free(b2);
    tio_container_free(c);
    free(b);
    ir_teardown(&f);
}

/* A buffer made while the file is written (a lowering's permuted weights):
 * written in place, in both forms; a generator that writes another size is
 * an error. */
static int gen_reversed(void *ctx, tio_sink *s, size_t n, tio_error *e) {
    const float *src = ctx;
    for (size_t i = n / 4; i-- > 0;) {
        int rc = tio__sink_write(s, &src[i], 4, e);
        if (rc) return rc;
    }
    return TIO_OK;
}

static int gen_short(void *ctx, tio_sink *s, size_t n, tio_error *e) {
    (void)ctx;
    return tio__sink_zeros(s, n - 1, e);
}

static void test_ir_gen(void **state) {
    (void)state;
    static const float rev[4] = {4, 3, 2, 1};
    tio_error e;
    for (int form = 0; form < 2; form++) {
        irfix f;
        ir_setup(&f);
        uint32_t b;
        OK_(tio__tfl_w_buffer_gen(&f.m, sizeof w4, gen_reversed, (void *)w4, &b, &e));
        f.m.subgraphs[0].tensors[1].buffer = b;
        if (form) { /* the offset/size form, as past 2 GiB */
            static const uint8_t one[1] = {1};
            f.m.subgraphs[0].ops[0].has_custom = true;
            f.m.subgraphs[0].ops[0].large_custom = true;
            f.m.subgraphs[0].ops[0].custom = one;
            f.m.subgraphs[0].ops[0].ncustom = 1;
        }
        uint8_t *out = NULL;
        size_t n = 0;
        OK_(ir_write(&f, &out, &n, &e));
        tio_container *c = NULL;
        tio_open_options oo = {0};
        oo.format = "tflite";
        OK_(tio_open_memory(out, n, &oo, &c, &e));
        assert_int_equal(tio_container_count(c), 1);
        assert_memory_equal(tio_tensor_bytes(tio_container_tensor(c, 0)), rev, sizeof rev);
        assert_int_equal(tio_tensor_source_offset(tio_container_tensor(c, 0)) % 16, 0);
        tio_container_free(c);
        free(out);
        f.m.buffers[b].gen = gen_short;
        assert_int_equal(ir_write(&f, &out, &n, &e), TIO_E_ARGUMENT);
        assert_non_null(strstr(e.message, "its generator wrote 15 bytes, not 16"));
        ir_teardown(&f);
    }
}

/* The offset/size form (written for models past 2 GiB, and when custom
 * options are to be large): buffers and custom options after the model. */
static void test_ir_offset_form(void **state) {
    (void)state;
    irfix f;
    ir_setup(&f);
    tio_error e;
    static const uint8_t opts[5] = {1, 2, 3, 4, 5};
    uint32_t code;
    OK_(tio__tfl_w_code(&f.m, TFL_BuiltinOperator_CUSTOM, "MyOp", 1, &code, &e));
    static const int32_t ins[1] = {2}, outs[1] = {0};
    tfl_wop op;
    memset(&op, 0, sizeof op);
    op.opcode = code;
    op.inputs = ins;
    op.nin = 1;
    op.outputs = outs;
    op.nout = 1;
    op.debug_metadata_index = -1;
    op.has_custom = true;
    op.large_custom = true;
    op.custom = opts;
    op.ncustom = sizeof opts;
    OK_(tio__tfl_w_op(&f.m, 0, &op, NULL, &e));
    uint8_t *b = NULL;
    size_t n = 0;
    OK_(ir_write(&f, &b, &n, &e));
    assert_int_equal(n % 16, 0);
    tio_container *c = NULL;
    tio_open_options oo = {0};
    oo.format = "tflite";
    OK_(tio_open_memory(b, n, &oo, &c, &e));
    assert_string_equal(tio_container_prop_get(c, "buffer_form"), "offset");
    const tio_tensor *t = tio_container_tensor(c, 0);
    assert_memory_equal(tio_tensor_bytes(t), w4, sizeof w4);
    assert_int_equal(tio_tensor_source_offset(t) % 16, 0);
    /* the custom options where the operator says */
    tio_fb_ref mr, sg, ot;
    tio_fb_vec v;
    assert_true(tio__fb_root(b, n, &mr));
    assert_true(tio__fb_vector(&mr, TFL_Model_subgraphs, &v) && tio__fb_vec_table(&v, 0, &sg));
    assert_true(tio__fb_vector(&sg, TFL_SubGraph_operators, &v) && tio__fb_vec_table(&v, 1, &ot));
    const uint8_t *d;
    size_t dn;
    assert_true(custom_bytes(&ot, &d, &dn));
    assert_int_equal(dn, sizeof opts);
    assert_memory_equal(d, opts, sizeof opts);
    /* rewritten byte for byte, still in the offset form */
    void *b2 = NULL;
    size_t n2 = 0;
    OK_(save_tflite(c, &b2, &n2, &e));
    assert_int_equal(n, n2);
    assert_memory_equal(b, b2, n);
    tio_free(b2);
    tio_container_free(c);
    free(b);
    ir_teardown(&f);
}

/* What the serialiser refuses, by name. */
static void test_ir_hostile(void **state) {
    (void)state;
    tio_error e;
    uint8_t *b = NULL;
    size_t n = 0;
    irfix f;
    tfl_wop *op;
    /* an option out of its field's range, and one not in the enum */
    ir_setup(&f);
    op = &f.m.subgraphs[0].ops[0];
    OK_(tio__tfl_w_opt_i(&f.m, op, false, "fused_activation_function", 300, &e));
    assert_int_equal(ir_write(&f, &b, &n, &e), TIO_E_ARGUMENT);
    assert_non_null(strstr(e.message, "FullyConnectedOptions.fused_activation_function = 300"));
    OK_(tio__tfl_w_opt_i(&f.m, op, false, "fused_activation_function", 9, &e));
    assert_int_equal(ir_write(&f, &b, &n, &e), TIO_E_ARGUMENT);
    assert_non_null(strstr(e.message, "not a value of enum ActivationFunctionType"));
    /* a field the member does not have, and a float for an int field */
    assert_int_equal(tio__tfl_w_opt_i(&f.m, op, false, "stride_w", 1, &e), TIO_E_ARGUMENT);
    assert_non_null(strstr(e.message, "FullyConnectedOptions has no field 'stride_w'"));
    assert_int_equal(tio__tfl_w_opt_f(&f.m, op, false, "keep_num_dims", 1.5, &e),
                     TIO_E_ARGUMENT);
    ir_teardown(&f);
    /* an input out of range; an operator code out of range */
    ir_setup(&f);
    static const int32_t bad[3] = {0, 7, -1};
    f.m.subgraphs[0].ops[0].inputs = bad;
    assert_int_equal(ir_write(&f, &b, &n, &e), TIO_E_ARGUMENT);
    assert_non_null(strstr(e.message, "inputs[1] is tensor 7"));
    ir_teardown(&f);
    ir_setup(&f);
    f.m.subgraphs[0].ops[0].opcode = 5;
    assert_int_equal(ir_write(&f, &b, &n, &e), TIO_E_ARGUMENT);
    assert_non_null(strstr(e.message, "operator code 5 is out of range"));
    ir_teardown(&f);
    /* a container tensor whose shape disagrees with its TFLite tensor */
    ir_setup(&f);
    static const int32_t s4[1] = {4};
    f.m.subgraphs[0].tensors[1].shape = s4;
    f.m.subgraphs[0].tensors[1].rank = 1;
    assert_int_equal(ir_write(&f, &b, &n, &e), TIO_E_ARGUMENT);
    assert_non_null(strstr(e.message, "'w'"));
    assert_non_null(strstr(e.message, "FLOAT32 [4]"));
    ir_teardown(&f);
    /* a buffer index out of range; a buffer size that is not the tensor's */
    ir_setup(&f);
    f.m.subgraphs[0].tensors[1].buffer = 9;
    assert_int_equal(ir_write(&f, &b, &n, &e), TIO_E_ARGUMENT);
    assert_non_null(strstr(e.message, "buffer 9 is out of range"));
    ir_teardown(&f);
    ir_setup(&f);
    f.m.buffers[1].size = 8;
    assert_int_equal(ir_write(&f, &b, &n, &e), TIO_E_ARGUMENT);
    assert_non_null(strstr(e.message, "does not hold 8 bytes"));
    ir_teardown(&f);
    /* zero points that do not pair with the scales; an unknown tensor type */
    ir_setup(&f);
    static const float sc[2] = {0.5f, 0.25f};
    static const int64_t zp[1] = {3};
    tfl_wquant q;
    memset(&q, 0, sizeof q);
    q.scale = sc;
    q.nscale = 2;
    q.zero_point = zp;
    q.nzero_point = 1;
    f.m.subgraphs[0].tensors[0].q = &q;
    assert_int_equal(ir_write(&f, &b, &n, &e), TIO_E_ARGUMENT);
    assert_non_null(strstr(e.message, "1 zero points for 2 scales"));
    f.m.subgraphs[0].tensors[0].q = NULL;
    f.m.subgraphs[0].tensors[0].type = 99;
    assert_int_equal(ir_write(&f, &b, &n, &e), TIO_E_ARGUMENT);
    assert_non_null(strstr(e.message, "TensorType 99"));
    ir_teardown(&f);
    /* no subgraph */
    ir_setup(&f);
    f.m.nsubgraphs = 0;
    assert_int_equal(ir_write(&f, &b, &n, &e), TIO_E_ARGUMENT);
    f.m.nsubgraphs = 1;
    ir_teardown(&f);
}

/* A container of tensors only: a model needs a graph (refused by name);
 * a graph from another format: the lowering (its error until it exists). */
static void test_write_refusals(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    tio_error e;
    int64_t dim = 4;
    add_f32(c, "w", &dim, 1, w4, sizeof w4);
    void *buf = NULL;
    size_t len = 0;
    assert_int_equal(save_tflite(c, &buf, &len, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "a model needs a graph"));
    tio_container_free(c);
    /* an ONNX model with operators TFLite has no form for in tensio: the
     * ONNX -> TFLite lowering's answer, naming them */
    char *path = tvec_path_or_skip("onnx/int_consts.onnx");
    if (!path) return;
    OK_(tio_open(path, NULL, &c, &e));
    assert_int_equal(save_tflite(c, &buf, &len, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "Gather"));
    tio_container_free(c);
    free(path);
}

/* The fuzz contract for the writer, over one bit flipped in each byte of
 * the small vectors (every byte of the first 4 KiB, every 5th after): what
 * opens either rewrites (and the rewrite reopens and rewrites byte for byte)
 * or is refused as unsupported, lossy or past a limit; never anything else. */
static void test_rewrite_sweep(void **state) {
    (void)state;
    static const char *const files[] = {
        "tflite/small/tflm_hello_world_int8.tflite", "tflite/small/tflm_simple_add_model.tflite",
        "tflite/small/tflm_seanet_conv0.tflite", "tflite/small/tflm_trained_lstm_int8.tflite",
        "tflite/small/tflm_audio_preprocessor_int8.tflite"};
    size_t opened = 0, written = 0, refused = 0;
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        size_t len = 0;
        uint8_t *orig = tvec_load(files[f], &len);
        if (!orig) continue;
        uint8_t *buf = malloc(len);
        assert_non_null(buf);
        for (size_t at = 0; at < len; at += at < 4096 ? 1 : 5) {
            memcpy(buf, orig, len);
            buf[at] ^= (uint8_t)(1u << (at % 8));
            tio_open_options oo = {0};
            oo.format = "tflite";
            tio_container *c = NULL, *r = NULL;
            tio_error e;
            if (tio_open_memory(buf, len, &oo, &c, &e) != TIO_OK) continue;
            opened++;
            void *b1 = NULL, *b2 = NULL;
            size_t l1 = 0, l2 = 0;
            int rc = save_tflite(c, &b1, &l1, &e);
            if (rc != TIO_OK) {
                if (rc != TIO_E_UNSUPPORTED && rc != TIO_E_LOSSY && rc != TIO_E_LIMIT) {
                    fprintf(stderr, "%s, bit flipped at %zu: %s: %s\n", files[f], at,
                            tio_status_name(rc), e.message);
                    fail();
                }
                refused++;
                tio_container_free(c);
                continue;
            }
            rc = tio_open_memory(b1, l1, &oo, &r, &e);
            if (rc) fprintf(stderr, "%s at %zu: the rewrite: %s\n", files[f], at, e.message);
            assert_int_equal(rc, TIO_OK);
            OK_(save_tflite(r, &b2, &l2, &e));
            assert_int_equal(l1, l2);
            assert_memory_equal(b1, b2, l1);
            written++;
            tio_free(b2);
            tio_container_free(r);
            tio_free(b1);
            tio_container_free(c);
        }
        free(buf);
        free(orig);
    }
    printf("%zu flipped models opened: %zu rewritten, %zu refused\n", opened, written, refused);
}

/* Past 2 GiB: the offset/size form, written from a container tensor of
 * 2.1 GiB (untouched anonymous pages: zeros, no memory) and a small one
 * after it, to a file; read back (the small tensor's bytes where its offset
 * says) and rewritten byte for byte. */
static void test_offset_form_past_2gib(void **state) {
    (void)state;
    const size_t big = ((size_t)2150u << 20);
    void *z = mmap(NULL, big, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    assert_true(z != MAP_FAILED);
    static const float tail[3] = {7, 8, 9};
    tio_container *c = tio_container_new();
    tio_error e;
    int64_t d1 = (int64_t)(big / 4), d2 = 3;
    add_f32(c, "zeros", &d1, 1, z, big);
    add_f32(c, "tail", &d2, 1, tail, sizeof tail);
    tio_graph *g;
    OK_(tio_container_new_graph(c, &g, &e));
    for (size_t i = 0; i < 2; i++) {
        tio_value_info v = {0};
        size_t idx;
        v.tensor = (int64_t)i;
        v.name = tio_tensor_name(tio_container_tensor(c, i));
        OK_(tio_graph_add_value(g, &v, &idx, &e));
    }
    char dir[] = "/tmp/tio_tflite_2g_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char p1[64], p2[64];
    snprintf(p1, sizeof p1, "%s/a.tflite", dir);
    snprintf(p2, sizeof p2, "%s/b.tflite", dir);
    tio_save_options so = {0};
    so.format = "tflite";
    so.flags = TIO_SAVE_NO_SYNC;
    int rc = tio_save(c, p1, &so, &e);
    if (rc) fprintf(stderr, "%s\n", e.message);
    assert_int_equal(rc, TIO_OK);
    tio_container_free(c);
    munmap(z, big);
    tio_container *r = NULL;
    OK_(tio_open(p1, NULL, &r, &e));
    assert_string_equal(tio_container_prop_get(r, "buffer_form"), "offset");
    assert_int_equal(tio_container_count(r), 2);
    const tio_tensor *t0 = tio_container_tensor(r, 0), *t1 = tio_container_tensor(r, 1);
    assert_int_equal(tio_tensor_nbytes(t0), big);
    assert_int_equal(tio_tensor_source_offset(t0) % 16, 0);
    assert_true(tio_tensor_source_offset(t1) > (int64_t)big);
    assert_memory_equal(tio_tensor_bytes(t1), tail, sizeof tail);
    const uint8_t *b0 = tio_tensor_bytes(t0);
    assert_int_equal(b0[0] | b0[big / 2] | b0[big - 1], 0);
    OK_(tio_save(r, p2, &so, &e));
    tio_container_free(r);
    /* the rewrite is the same file */
    uint8_t *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    FILE *fa = fopen(p1, "rb"), *fb = fopen(p2, "rb");
    assert_non_null(fa);
    assert_non_null(fb);
    x = malloc(1u << 20);
    y = malloc(1u << 20);
    for (;;) {
        nx = fread(x, 1, 1u << 20, fa);
        ny = fread(y, 1, 1u << 20, fb);
        assert_int_equal(nx, ny);
        if (!nx) break;
        assert_memory_equal(x, y, nx);
    }
    fclose(fa);
    fclose(fb);
    free(x);
    free(y);
    unlink(p1);
    unlink(p2);
    rmdir(dir);
}

/* tio_save_options.cast into TensorFlow Lite (tests/onnx/test_cast_weights.py
 * runs the results in onnxruntime): TensorFlow's hello_world rewritten with
 * its six float32 weights float16 under "<name>:float16", each DEQUANTIZEd
 * (version 3) by the first operators, the values the float32 ones rounded;
 * ONNX -> TFLite (cnn_small.onnx) with no float32 constant left; a cast to
 * bfloat16 refused, naming the form TensorFlow Lite has. */
static void test_cast_float16(void **state) {
    (void)state;
    char *path = tvec_path_or_skip("tflite/small/tflm_hello_world_float.tflite");
    if (!path) return;
    tio_container *c = NULL, *h = NULL;
    tio_error e;
    OK_(tio_open(path, NULL, &c, &e));
    tio_save_options so = {0};
    so.format = "tflite";
    so.cast = "float16";
    void *b = NULL;
    size_t len = 0;
    if (tio_save_memory(c, &so, &b, &len, &e)) fail_msg("cast: %s", e.message);
    tio_open_options oo = {0};
    oo.format = "tflite";
    OK_(tio_open_memory(b, len, &oo, &h, &e));
    size_t n = tio_container_count(c);
    assert_int_equal(n, 6);
    assert_int_equal(tio_container_count(h), n);
    for (size_t i = 0; i < n; i++) {
        const tio_tensor *s = tio_container_tensor(c, i);
        char want[160];
        snprintf(want, sizeof want, "%s:float16", tio_tensor_name(s));
        const tio_tensor *t = tio_container_find(h, want);
        if (!t) fail_msg("no tensor %s", want);
        assert_int_equal(tio_tensor_dtype(t), TIO_FLOAT16);
        uint64_t bad = 0;
        if (!tvec_half_rounds(tio_tensor_data(t), tio_tensor_data(s), tio_tensor_numel(s), &bad))
            fail_msg("%s[%llu]: not the float32 rounded", want, (unsigned long long)bad);
    }
    const char *codes = tio_container_prop_get(h, "operator_codes");
    assert_non_null(codes);
    assert_non_null(strstr(codes, "DEQUANTIZE v3"));
    /* DEQUANTIZE v3 runs from TensorFlow Lite 1.15.0: the model said 1.5.0 */
    assert_string_equal(tio_container_prop_get(c, "min_runtime_version"), "1.5.0");
    assert_string_equal(tio_container_prop_get(h, "min_runtime_version"), "1.15.0");
    const char *ops = tio_container_prop_get(h, "subgraph0.operators");
    assert_non_null(ops);
    assert_non_null(strstr(ops, "DEQUANTIZE x6"));
    /* raised, each DEQUANTIZE is a Cast from "<name>:float16" to the float32
     * tensor's own name (not "<name>:float16:float") */
    tio_graph *g = tio_container_graph(h);
    assert_non_null(g);
    size_t casts = 0;
    for (size_t i = 0; i < tio_graph_node_count(g); i++) {
        tio_node_info ni;
        tio_value_info vin, vout;
        OK_(tio_graph_node(g, i, &ni));
        if (strcmp(ni.op, "Cast") != 0) continue;
        assert_int_equal(ni.input_count, 1);
        assert_int_equal(ni.output_count, 1);
        OK_(tio_graph_value(g, (size_t)ni.inputs[0], &vin));
        OK_(tio_graph_value(g, (size_t)ni.outputs[0], &vout));
        char want[160];
        snprintf(want, sizeof want, "%s:float16", vout.name);
        assert_string_equal(vin.name, want);
        assert_non_null(tio_container_find(c, vout.name));
        casts++;
    }
    assert_int_equal(casts, 6);
    tio_container_free(h);
    free(b);
    so.cast = "bfloat16";
    b = NULL;
    assert_int_equal(tio_save_memory(c, &so, &b, &len, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "has no TensorFlow Lite form"));
    assert_null(b);
    /* the check says so before anything is written */
    tio_error ec;
    assert_int_equal(tio_check_save(c, &so, &ec), TIO_E_UNSUPPORTED);
    assert_string_equal(ec.message, e.message);
    tio_container_free(c);
    free(path);
    /* lowered from ONNX: every float32 weight float16 */
    path = tvec_path_or_skip("onnx/cnn_small.onnx");
    if (!path) return;
    OK_(tio_open(path, NULL, &c, &e));
    so.cast = "float16";
    if (tio_save_memory(c, &so, &b, &len, &e)) fail_msg("lowered cast: %s", e.message);
    OK_(tio_open_memory(b, len, &oo, &h, &e));
    size_t f16 = 0;
    for (size_t i = 0; i < tio_container_count(h); i++) {
        tio_dtype d = tio_tensor_dtype(tio_container_tensor(h, i));
        assert_int_not_equal(d, TIO_FLOAT32);
        f16 += d == TIO_FLOAT16;
    }
    assert_int_equal(f16, 6);
    assert_non_null(strstr(tio_container_prop_get(h, "operator_codes"), "DEQUANTIZE v3"));
    tio_container_free(h);
    free(b);
    tio_container_free(c);
    free(path);
}

/* Runtime versions ordered as TensorFlow's CompareRuntimeVersion orders
 * them: numbers part by part (not text), a part that is not a number passed
 * over, the version with parts left over the later; the text ends at a NUL
 * (the metadata buffer's padding) or its length. */
static void test_runtime_before(void **state) {
    (void)state;
    static const struct {
        const char *a;
        const char *b;
        bool before;
    } cases[] = {
        {"1.5.0", "1.15.0", true},  {"1.13.1", "1.15.0", true}, {"1.15.0", "1.15.0", false},
        {"2.7.0", "1.15.0", false}, {"1.15", "1.15.0", true},   {"1.15.0.1", "1.15.0", false},
        {"x.16.0", "1.15.0", false}, {"", "1.15.0", true},      {"1.15.0abc", "1.15.0", false},
        {"1.9999999999.0", "1.15.0", false}, /* past an int: passed over, then 0 = 0 */
        {"1.2147483647.0", "1.15.0", false}, {"10.0", "9.99", false}, {"1..0", "1.15.0", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const uint8_t *a = (const uint8_t *)cases[i].a;
        if (tio__tfl_runtime_before(a, strlen(cases[i].a), cases[i].b) != cases[i].before)
            fail_msg("'%s' before '%s': expected %d", cases[i].a, cases[i].b, cases[i].before);
    }
    static const uint8_t padded[16] = "1.13.1";
    assert_true(tio__tfl_runtime_before(padded, sizeof padded, "1.15.0"));
    static const uint8_t cut[6] = {'2', '.', '0', '.', '1', '5'}; /* no NUL: its length */
    assert_false(tio__tfl_runtime_before(cut, sizeof cut, "1.15.0"));
    assert_true(tio__tfl_runtime_before(cut, 3, "2.0.1"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runtime_before),
        cmocka_unit_test(test_ir_model),
        cmocka_unit_test(test_ir_offset_form),
        cmocka_unit_test(test_ir_gen),
        cmocka_unit_test(test_ir_hostile),
        cmocka_unit_test(test_write_refusals),
        cmocka_unit_test(test_cast_float16),
        cmocka_unit_test(test_rewrite_vectors),
        cmocka_unit_test(test_rewrite_edits),
        cmocka_unit_test(test_rewrite_sweep),
        cmocka_unit_test(test_offset_form_past_2gib),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
