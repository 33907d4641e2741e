/* FlatBuffers runtime (src/flatbuf): the verifier on every real .rten model
 * buffer and on crafted bad buffers, the accessors, the builder, and a
 * random-mutation loop (run under ASan+UBSan in the sanitizer build). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flatbuf/flatbuf.h"
#include "rten/schema.h"
#include "tensio.h"
#include "tvec.h"

/* ------------------------------------------------------------ helpers */

#define OK(expr)                                                                  \
    do {                                                                          \
        int rc_ = (expr);                                                         \
        if (rc_ != TIO_OK) print_message("%s -> %s: %s\n", #expr,                 \
                                         tio_status_name(rc_), e.message);        \
        assert_int_equal(rc_, TIO_OK);                                            \
    } while (0)

/* rc must be `code`, *e must agree, and the message must contain s1 and s2. */
static void expect_err(int rc, const tio_error *e, int code, const char *s1, const char *s2) {
    if (rc != code || (s1 && !strstr(e->message, s1)) || (s2 && !strstr(e->message, s2)))
        print_message("expected %s [%s] [%s], got %s: %s\n", tio_status_name(code),
                      s1 ? s1 : "", s2 ? s2 : "", tio_status_name(rc), e->message);
    assert_int_equal(rc, code);
    assert_int_equal(e->code, code);
    if (s1) assert_non_null(strstr(e->message, s1));
    if (s2) assert_non_null(strstr(e->message, s2));
}

static const tio_fb_limits LIM = {64, 1000000, 0, NULL, NULL, NULL, NULL, 0};

static int verify_model(const uint8_t *buf, size_t len, tio_error *e) {
    tio_error_clear(e);
    return tio__fb_verify(buf, len, tio__rten_Model, &LIM, "rten", 0, e);
}

static uint8_t *dup_bytes(const uint8_t *p, size_t n) {
    uint8_t *q = malloc(n ? n : 1);
    assert_non_null(q);
    if (n) memcpy(q, p, n);
    return q;
}

static void put16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* xorshift64*, fixed seeds */
static uint64_t rnd(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* A model buffer from a vectors file: V1 = whole file, V2 = the model slice.
 * The slice is copied into an exact-size allocation so ASan sees overreads. */
typedef struct model {
    uint8_t *buf;
    size_t len;
    uint64_t base;
} model;

static bool load_model(const char *rel, model *m) {
    char *path = tvec_path_or_skip(rel);
    if (!path) return false;
    uint8_t *file;
    size_t flen;
    assert_int_equal(tvec_read(path, &file, &flen), 0);
    free(path);
    if (strstr(rel, ".v2.rten")) {
        assert_true(flen >= 32);
        assert_memory_equal(file, "RTEN", 4);
        uint64_t off = tio__ld64(file + 8), n = tio__ld64(file + 16);
        assert_int_equal(off, 32);
        assert_true(n <= flen - off);
        m->buf = dup_bytes(file + off, (size_t)n);
        m->len = (size_t)n;
        m->base = off;
        free(file);
    } else {
        m->buf = dup_bytes(file, flen);
        m->len = flen;
        m->base = 0;
        free(file);
    }
    return true;
}

/* ------------------------------------------- a schema-driven tree walk */

/* Reads everything reachable with the accessors. On a verified buffer every
 * present reference must resolve; on any buffer nothing may read out of
 * bounds (ASan) and the walk is bounded by depth and a table budget. */
typedef struct walker {
    bool verified;
    size_t budget;
    size_t tables;
    uint64_t sum;
} walker;

static void walk_table(walker *w, const tio_fb_ref *t, const tio_fb_table *s, unsigned depth);

static void walk_vector(walker *w, const tio_fb_vec *v, const tio_fb_field *f,
                        unsigned depth) {
    int ek = f->elem;
    if (ek == TIO_FB_TABLE) {
        for (uint32_t i = 0; i < v->count && w->budget; i++) {
            tio_fb_ref c;
            bool ok = tio__fb_vec_table(v, i, &c);
            if (w->verified) assert_true(ok);
            if (ok) walk_table(w, &c, f->table, depth + 1);
        }
    } else if (ek == TIO_FB_STRING) {
        for (uint32_t i = 0; i < v->count; i++) {
            const char *s;
            uint32_t n;
            bool ok = tio__fb_vec_string(v, i, &s, &n);
            if (w->verified) assert_true(ok);
            if (ok) {
                for (uint32_t k = 0; k < n; k++) w->sum += (uint8_t)s[k];
                assert_int_equal(s[n], 0);
            }
        }
    } else {
        size_t es = tio__fb_scalar_size(ek);
        assert_true(es > 0);
        bool fits = (uint64_t)v->count * es <= v->len - v->data;
        if (w->verified) assert_true(fits);
        if (fits) {
            const uint8_t *p = tio__fb_vec_data(v);
            for (size_t k = 0; k < (size_t)v->count * es; k++) w->sum += p[k];
        }
        if (es == 4)
            for (uint32_t i = 0; i < v->count && i < 4096; i++)
                w->sum += tio__fb_vec_u32(v, i) + (uint32_t)tio__fb_vec_i32(v, i);
    }
    /* out of range elements are absent */
    tio_fb_ref r;
    assert_false(tio__fb_vec_table(v, v->count, &r));
    assert_int_equal(tio__fb_vec_u32(v, v->count), 0);
}

static void walk_table(walker *w, const tio_fb_ref *t, const tio_fb_table *s, unsigned depth) {
    if (depth > 64 || w->budget == 0) return;
    w->budget--;
    w->tables++;
    for (unsigned id = 0; id < s->nfields; id++) {
        const tio_fb_field *f = &s->fields[id];
        bool has = tio__fb_has(t, id);
        switch (f->kind) {
        case TIO_FB_NONE:
            break;
        case TIO_FB_STRING: {
            const char *str;
            uint32_t n;
            bool ok = tio__fb_string(t, id, &str, &n);
            if (w->verified) assert_true(ok == has);
            if (ok) {
                for (uint32_t k = 0; k < n; k++) w->sum += (uint8_t)str[k];
                assert_int_equal(str[n], 0);
            }
            break;
        }
        case TIO_FB_TABLE: {
            tio_fb_ref c;
            bool ok = tio__fb_table(t, id, &c);
            if (w->verified) assert_true(ok == has);
            if (ok) walk_table(w, &c, f->table, depth + 1);
            break;
        }
        case TIO_FB_VECTOR: {
            tio_fb_vec v;
            bool ok = tio__fb_vector(t, id, &v);
            if (w->verified) assert_true(ok == has);
            if (ok) walk_vector(w, &v, f, depth);
            break;
        }
        case TIO_FB_UNION_TYPE:
            w->sum += tio__fb_u8(t, id, 0);
            break;
        case TIO_FB_UNION: {
            uint8_t tag = tio__fb_u8(t, id - 1, 0);
            tio_fb_ref c;
            bool ok = tio__fb_table(t, id, &c);
            if (tag >= 1 && tag <= f->un->nmembers) {
                if (w->verified) assert_true(ok == has);
                if (ok) walk_table(w, &c, f->un->members[tag - 1], depth + 1);
            }
            break;
        }
        default: {
            int64_t iv = 0;
            double fv = 0;
            bool ok = tio__fb_scalar(t, id, f, &iv, &fv);
            if (!ok) assert_true(f->optional);
            if (w->verified && f->optional) assert_true(ok == has);
            if (!has && ok) assert_true(fv == f->def || (isnan(fv) && isnan(f->def)));
            w->sum += (uint64_t)iv;
            switch (f->kind) {
            case TIO_FB_BOOL: w->sum += tio__fb_bool(t, id, false); break;
            case TIO_FB_I8: w->sum += (uint64_t)tio__fb_i8(t, id, 0); break;
            case TIO_FB_U8: w->sum += tio__fb_u8(t, id, 0); break;
            case TIO_FB_I16: w->sum += (uint64_t)tio__fb_i16(t, id, 0); break;
            case TIO_FB_U16: w->sum += tio__fb_u16(t, id, 0); break;
            case TIO_FB_I32: w->sum += (uint64_t)tio__fb_i32(t, id, 0); break;
            case TIO_FB_U32: w->sum += tio__fb_u32(t, id, 0); break;
            case TIO_FB_I64: w->sum += (uint64_t)tio__fb_i64(t, id, 0); break;
            case TIO_FB_U64: w->sum += tio__fb_u64(t, id, 0); break;
            case TIO_FB_F32: w->sum += (uint64_t)(tio__fb_f32(t, id, 0) != 0); break;
            case TIO_FB_F64: w->sum += (uint64_t)(tio__fb_f64(t, id, 0) != 0); break;
            default: break;
            }
            break;
        }
        }
    }
    /* ids beyond the vtable are absent */
    assert_false(tio__fb_has(t, tio__fb_slot_count(t)));
}

static size_t walk_buffer(const uint8_t *buf, size_t len, const tio_fb_table *root,
                          bool verified) {
    walker w = {verified, 1000000, 0, 0};
    tio_fb_ref r;
    bool ok = tio__fb_root(buf, len, &r);
    if (verified) assert_true(ok);
    if (ok) walk_table(&w, &r, root, 1);
    return w.tables;
}

/* ------------------------------------------------- 1. real rten buffers */

static const char *const MODELS[] = {"big_init", "int_consts", "matmul_add", "shape_ops",
                                     "small_cnn"};

/* Checks the accessors against the facts of the rten-dump.txt next to a
 * vector: node count, kinds, names, constant shapes, external offsets. */
static void check_dump(const model *m, const char *dump_rel) {
    char *path = tvec_path(dump_rel);
    if (!path) return;
    uint8_t *txt;
    size_t n;
    assert_int_equal(tvec_read(path, &txt, &n), 0);
    free(path);
    char *s = malloc(n + 1);
    assert_non_null(s);
    memcpy(s, txt, n);
    s[n] = 0;
    free(txt);

    tio_fb_ref root, graph;
    assert_true(tio__fb_root(m->buf, m->len, &root));
    assert_int_equal(tio__fb_i32(&root, RTEN_Model_schema_version, 0), 1);
    assert_true(tio__fb_table(&root, RTEN_Model_graph, &graph));
    tio_fb_vec nodes;
    assert_true(tio__fb_vector(&graph, RTEN_Graph_nodes, &nodes));
    const char *nl = strstr(s, "\nnodes: ");
    assert_non_null(nl);
    assert_int_equal(nodes.count, strtoul(nl + 8, NULL, 10));

    size_t checked = 0;
    for (char *line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] != '[') continue;
        char *end;
        unsigned long i = strtoul(line + 1, &end, 10);
        assert_true(i < nodes.count);
        char kind[16] = "", name[128] = "";
        assert_int_equal(sscanf(end, "] %15s %127s", kind, name), 2);
        tio_fb_ref node, data;
        assert_true(tio__fb_vec_table(&nodes, i, &node));
        const char *nm;
        uint32_t nlen;
        assert_true(tio__fb_string(&node, RTEN_Node_name, &nm, &nlen));
        assert_int_equal(strlen(nm), nlen);
        uint8_t tag = tio__fb_u8(&node, RTEN_Node_data_type, 0);
        assert_true(tio__fb_table(&node, RTEN_Node_data, &data));
        if (strcmp(kind, "op") == 0) {
            assert_int_equal(tag, RTEN_NodeKind_OperatorNode);
            char want[128];
            assert_int_equal(sscanf(strchr(end, '(') + 1, "%127[^)]", want), 1);
            assert_string_equal(nm, want);
            /* the op type names the dump's op */
            uint8_t ty = tio__fb_u8(&data, RTEN_OperatorNode_type, 0);
            assert_true(ty < TIO_RTEN_OP_COUNT);
            assert_string_equal(tio__rten_ops[ty].name, name);
        } else if (strcmp(kind, "const") == 0) {
            assert_int_equal(tag, 2);
            assert_string_equal(nm, name);
            tio_fb_vec shape;
            assert_true(tio__fb_vector(&data, RTEN_ConstantNode_shape, &shape));
            const char *sh = strstr(end, "shape=[");
            assert_non_null(sh);
            sh += 7;
            for (uint32_t d = 0; d < shape.count; d++) {
                char *e2;
                assert_int_equal(tio__fb_vec_u32(&shape, d), strtoul(sh, &e2, 10));
                sh = e2 + (*e2 == ',' ? 2 : 0);
            }
            assert_int_equal(*sh, ']');
            int64_t off = -1;
            double fv;
            const tio_fb_field *f = &tio__rten_ConstantNode->fields[RTEN_ConstantNode_data_offset];
            const char *ext = strstr(end, "external data_offset=");
            bool has = tio__fb_scalar(&data, RTEN_ConstantNode_data_offset, f, &off, &fv);
            if (ext) {
                assert_true(has);
                assert_int_equal(off, strtoll(ext + 21, NULL, 10));
            } else {
                assert_false(has);
                assert_non_null(strstr(end, "inline"));
            }
        } else {
            assert_string_equal(kind, "value");
            assert_int_equal(tag, 3);
            assert_string_equal(nm, name);
        }
        checked++;
    }
    assert_int_equal(checked, nodes.count);
    free(s);
}

static void test_real_vectors(void **state) {
    (void)state;
    size_t verified = 0;
    for (size_t k = 0; k < sizeof MODELS / sizeof MODELS[0]; k++) {
        for (int ver = 1; ver <= 2; ver++) {
            char rel[128], dump[160];
            snprintf(rel, sizeof rel, "rten/%s/%s.v%d.rten", MODELS[k], MODELS[k], ver);
            snprintf(dump, sizeof dump, "%s-dump.txt", rel);
            model m;
            if (!load_model(rel, &m)) continue;
            tio_error e;
            tio_error_clear(&e);
            int rc = tio__fb_verify(m.buf, m.len, tio__rten_Model, &LIM, "rten", m.base, &e);
            if (rc) print_message("%s: %s\n", rel, e.message);
            assert_int_equal(rc, TIO_OK);
            assert_int_equal(e.code, TIO_OK);
            assert_true(walk_buffer(m.buf, m.len, tio__rten_Model, true) > 3);
            check_dump(&m, dump);
            free(m.buf);
            verified++;
        }
    }
    /* big_init (4 MiB) lives only in ../shared/vectors */
    assert_int_equal(verified, tvec_have_shared() ? 10 : 8);
}

static void test_small_cnn_facts(void **state) {
    (void)state;
    model m;
    if (!load_model("rten/small_cnn/small_cnn.v1.rten", &m)) skip();
    tio_error e;
    OK(verify_model(m.buf, m.len, &e));
    tio_fb_ref root, graph, node, op, conv, meta;
    assert_true(tio__fb_root(m.buf, m.len, &root));
    assert_int_equal(tio__fb_i32(&root, RTEN_Model_schema_version, 0), 1);
    int64_t iv;
    double fv;
    assert_true(tio__fb_scalar(&root, RTEN_Model_schema_version,
                               &tio__rten_Model->fields[RTEN_Model_schema_version], &iv, &fv));
    assert_int_equal(iv, 1);
    assert_true(fv == 1.0);
    assert_true(tio__fb_table(&root, RTEN_Model_graph, &graph));
    tio_fb_vec nodes, v;
    assert_true(tio__fb_vector(&graph, RTEN_Graph_nodes, &nodes));
    assert_int_equal(nodes.count, 15);
    assert_true(tio__fb_vec_table(&nodes, 10, &node));
    const char *s;
    uint32_t n;
    assert_true(tio__fb_string(&node, RTEN_Node_name, &s, &n));
    assert_string_equal(s, "conv");
    assert_int_equal(n, 4);
    assert_int_equal(tio__fb_u8(&node, RTEN_Node_data_type, 0), RTEN_NodeKind_OperatorNode);
    assert_true(tio__fb_table(&node, RTEN_Node_data, &op));
    assert_int_equal(tio__fb_u8(&op, RTEN_OperatorNode_attrs_type, 0),
                     RTEN_OperatorAttrs_ConvAttrs);
    assert_true(tio__fb_table(&op, RTEN_OperatorNode_attrs, &conv));
    assert_true(tio__fb_vector(&op, RTEN_OperatorNode_inputs, &v));
    assert_int_equal(v.count, 3);
    assert_int_equal(tio__fb_vec_i32(&v, 0), 4); /* x */
    assert_int_equal(tio__fb_vec_i32(&v, 1), 0); /* conv_w */
    assert_int_equal(tio__fb_vec_i32(&v, 2), 1); /* conv_b */
    assert_int_equal(tio__fb_vec_i32(&v, 3), 0); /* out of range */
    assert_true(tio__fb_vector(&graph, RTEN_Graph_inputs, &v));
    assert_int_equal(v.count, 1);
    assert_int_equal(tio__fb_vec_u32(&v, 0), 4);
    assert_true(tio__fb_table(&root, RTEN_Model_metadata, &meta));
    assert_true(tio__fb_string(&meta, RTEN_Metadata_license, &s, &n));
    assert_string_equal(s, "CC0-1.0");
    assert_true(tio__fb_string(&meta, RTEN_Metadata_run_id, &s, &n));
    assert_string_equal(s, "run-42");
    /* constant 0: conv_w, FloatData of 36 floats */
    tio_fb_ref c0, fd;
    assert_true(tio__fb_vec_table(&nodes, 0, &node));
    assert_true(tio__fb_table(&node, RTEN_Node_data, &c0));
    assert_int_equal(tio__fb_u8(&c0, RTEN_ConstantNode_data_type, 0), 1);
    assert_true(tio__fb_table(&c0, RTEN_ConstantNode_data, &fd));
    assert_true(tio__fb_vector(&fd, RTEN_FloatData_data, &v));
    assert_int_equal(v.count, 36);
    assert_int_equal(v.data % 4, 0);
    /* absent fields: defaults / absent */
    assert_false(tio__fb_has(&root, 200));
    assert_int_equal(tio__fb_u32(&root, 200, 77), 77);
    assert_false(tio__fb_table(&root, 200, &node));
    free(m.buf);

    /* the buffer may sit at any address: alignment is relative to its start */
    {
        uint8_t *raw = malloc(m.len + 1);
        assert_non_null(raw);
        if (!load_model("rten/small_cnn/small_cnn.v1.rten", &m)) skip();
        memcpy(raw + 1, m.buf, m.len);
        OK(verify_model(raw + 1, m.len, &e));
        assert_int_equal(walk_buffer(raw + 1, m.len, tio__rten_Model, true),
                         walk_buffer(m.buf, m.len, tio__rten_Model, true));
        free(raw);
        free(m.buf);
    }

    if (!load_model("rten/matmul_add/matmul_add.v1.rten", &m)) return;
    OK(verify_model(m.buf, m.len, &e));
    assert_true(tio__fb_root(m.buf, m.len, &root));
    assert_true(tio__fb_table(&root, RTEN_Model_graph, &graph));
    assert_true(tio__fb_vector(&graph, RTEN_Graph_nodes, &nodes));
    assert_int_equal(nodes.count, 7); /* W, B, x, y, xw, matmul, add */
    assert_true(tio__fb_vec_table(&nodes, 5, &node));
    assert_true(tio__fb_string(&node, RTEN_Node_name, &s, &n));
    assert_string_equal(s, "matmul");
    free(m.buf);
}

/* ------------------------------------------------------- 2. the builder */

static tio_fb_off mkstr(tio_fb_builder *b, const char *s) {
    tio_error e;
    tio_fb_off o = 0;
    OK(tio__fb_create_string(b, s, strlen(s), &o, &e));
    assert_true(o != 0);
    return o;
}

static tio_fb_off mkvec32(tio_fb_builder *b, const void *data, size_t n) {
    tio_error e;
    tio_fb_off o = 0;
    OK(tio__fb_create_vector(b, data, n, 4, 4, &o, &e));
    return o;
}

static tio_fb_off mknode(tio_fb_builder *b, const char *name, uint8_t kind, tio_fb_off data) {
    tio_error e;
    tio_fb_off nm = mkstr(b, name), o;
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_offset(b, RTEN_Node_name, nm, &e));
    OK(tio__fb_add_scalar(b, RTEN_Node_data_type, kind, 1, &e));
    OK(tio__fb_add_offset(b, RTEN_Node_data, data, &e));
    OK(tio__fb_end_table(b, &o, &e));
    return o;
}

static tio_fb_off mkvalue(tio_fb_builder *b, const char *name) {
    tio_error e;
    tio_fb_off dn = mkstr(b, "batch"), d0, d1, dims, vn;
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_offset(b, RTEN_Dim_name, dn, &e));
    OK(tio__fb_end_table(b, &d0, &e));
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_u32_default(b, RTEN_Dim_value, 8, 0, &e));
    OK(tio__fb_end_table(b, &d1, &e));
    tio_fb_off dl[2] = {d0, d1};
    OK(tio__fb_create_offset_vector(b, dl, 2, &dims, &e));
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_offset(b, RTEN_ValueNode_shape, dims, &e));
    OK(tio__fb_add_u8_default(b, RTEN_ValueNode_dtype, 1, 0, &e));
    OK(tio__fb_end_table(b, &vn, &e));
    return mknode(b, name, RTEN_NodeKind_ValueNode, vn);
}

static tio_fb_off mkop(tio_fb_builder *b, const char *name, uint8_t type, uint8_t atag,
                       tio_fb_off attrs, const int32_t *in, size_t nin) {
    tio_error e;
    tio_fb_off ins = 0, op;
    if (nin) ins = mkvec32(b, in, nin);
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_u8_default(b, RTEN_OperatorNode_type, type, 0, &e));
    OK(tio__fb_add_u8_default(b, RTEN_OperatorNode_attrs_type, atag, 0, &e));
    OK(tio__fb_add_offset(b, RTEN_OperatorNode_attrs, attrs, &e));
    OK(tio__fb_add_offset(b, RTEN_OperatorNode_inputs, ins, &e));
    OK(tio__fb_end_table(b, &op, &e));
    return mknode(b, name, RTEN_NodeKind_OperatorNode, op);
}

static tio_fb_off mkgraph(tio_fb_builder *b, const tio_fb_off *nodes, size_t n) {
    tio_error e;
    tio_fb_off nv, g;
    OK(tio__fb_create_offset_vector(b, nodes, n, &nv, &e));
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_offset(b, RTEN_Graph_nodes, nv, &e));
    OK(tio__fb_end_table(b, &g, &e));
    return g;
}

static tio_fb_off mkmodel(tio_fb_builder *b, tio_fb_off graph, tio_fb_off meta) {
    tio_error e;
    tio_fb_off mo;
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_i32_default(b, RTEN_Model_schema_version, 1, 0, &e));
    OK(tio__fb_add_offset(b, RTEN_Model_graph, graph, &e));
    OK(tio__fb_add_offset(b, RTEN_Model_metadata, meta, &e));
    OK(tio__fb_end_table(b, &mo, &e));
    return mo;
}

/* The Model-shaped buffer of the round trip; returns a malloc'ed copy. */
static uint8_t *build_model(size_t *len) {
    tio_error e;
    tio_fb_builder *b = tio__fb_builder_new("rten");
    assert_non_null(b);
    tio_fb_off nodes[6];
    nodes[0] = mkvalue(b, "x");
    /* a constant: shape [2,2], FloatData, dtype (u16), data_offset (u64) */
    uint32_t shape[2] = {2, 2};
    float fl[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    tio_fb_off sh = mkvec32(b, shape, 2), fv = mkvec32(b, fl, 4), fd, cn;
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_offset(b, RTEN_FloatData_data, fv, &e));
    OK(tio__fb_end_table(b, &fd, &e));
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_offset(b, RTEN_ConstantNode_shape, sh, &e));
    OK(tio__fb_add_scalar(b, RTEN_ConstantNode_data_type, 1, 1, &e));
    OK(tio__fb_add_offset(b, RTEN_ConstantNode_data, fd, &e));
    OK(tio__fb_add_scalar(b, RTEN_ConstantNode_dtype, 1, 2, &e));
    OK(tio__fb_add_scalar(b, RTEN_ConstantNode_data_offset, 0x1122334455667788ULL, 8, &e));
    OK(tio__fb_end_table(b, &cn, &e));
    nodes[1] = mknode(b, "w", RTEN_NodeKind_ConstantNode, cn);
    /* Conv with attrs (pads + groups) */
    uint32_t pads[4] = {1, 1, 1, 1};
    tio_fb_off pv = mkvec32(b, pads, 4), conv;
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_offset(b, 1, pv, &e));                 /* pads */
    OK(tio__fb_add_u32_default(b, 2, 2, 0, &e));          /* groups */
    OK(tio__fb_end_table(b, &conv, &e));
    int32_t in[3] = {0, 1, -1};
    nodes[2] = mkop(b, "conv", 1, RTEN_OperatorAttrs_ConvAttrs, conv, in, 3);
    /* BatchNormalization: epsilon equal to the default 0.0 is omitted,
     * -0.0 is kept (bitwise comparison) */
    tio_fb_off bn0, bn1;
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_f32_default(b, 0, 0.0f, 0.0f, &e));
    OK(tio__fb_end_table(b, &bn0, &e));
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_f32_default(b, 0, -0.0f, 0.0f, &e));
    OK(tio__fb_end_table(b, &bn1, &e));
    int32_t in2[1] = {2};
    nodes[3] = mkop(b, "bn0", 2, RTEN_OperatorAttrs_BatchNormalizationAttrs, bn0, in2, 1);
    nodes[4] = mkop(b, "bn1", 2, RTEN_OperatorAttrs_BatchNormalizationAttrs, bn1, in2, 1);
    nodes[5] = mkvalue(b, "out");
    uint32_t gin[1] = {0}, gout[1] = {5};
    tio_fb_off nv, gi = mkvec32(b, gin, 1), go = mkvec32(b, gout, 1), g;
    OK(tio__fb_create_offset_vector(b, nodes, 6, &nv, &e));
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_offset(b, RTEN_Graph_nodes, nv, &e));
    OK(tio__fb_add_offset(b, RTEN_Graph_inputs, gi, &e));
    OK(tio__fb_add_offset(b, RTEN_Graph_outputs, go, &e));
    OK(tio__fb_end_table(b, &g, &e));
    tio_fb_off desc = mkstr(b, "built by test_flatbuf"), meta;
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_offset(b, RTEN_Metadata_description, desc, &e));
    OK(tio__fb_end_table(b, &meta, &e));
    tio_fb_off root = mkmodel(b, g, meta);
    assert_null(tio__fb_buffer(b, len)); /* not finished yet */
    OK(tio__fb_finish(b, root, &e));
    const uint8_t *p = tio__fb_buffer(b, len);
    assert_non_null(p);
    uint8_t *copy = dup_bytes(p, *len);
    tio__fb_builder_free(b);
    return copy;
}

static void test_builder_roundtrip(void **state) {
    (void)state;
    size_t len, len2;
    uint8_t *buf = build_model(&len);
    tio_error e;
    OK(verify_model(buf, len, &e));
    assert_int_equal(len % 8, 0); /* padded to minalign (a u64 was added) */
    walk_buffer(buf, len, tio__rten_Model, true);

    tio_fb_ref root, graph, node, data, sub;
    tio_fb_vec nodes, v;
    const char *s;
    uint32_t n;
    assert_true(tio__fb_root(buf, len, &root));
    assert_int_equal(tio__fb_i32(&root, RTEN_Model_schema_version, 0), 1);
    assert_true(tio__fb_table(&root, RTEN_Model_metadata, &sub));
    assert_true(tio__fb_string(&sub, RTEN_Metadata_description, &s, &n));
    assert_string_equal(s, "built by test_flatbuf");
    assert_false(tio__fb_string(&sub, RTEN_Metadata_license, &s, &n));
    assert_true(tio__fb_table(&root, RTEN_Model_graph, &graph));
    assert_true(tio__fb_vector(&graph, RTEN_Graph_nodes, &nodes));
    assert_int_equal(nodes.count, 6);
    assert_false(tio__fb_vector(&graph, RTEN_Graph_captures, &v));
    assert_true(tio__fb_vector(&graph, RTEN_Graph_outputs, &v));
    assert_int_equal(tio__fb_vec_u32(&v, 0), 5);
    assert_int_equal(v.data % 4, 0);

    const char *names[6] = {"x", "w", "conv", "bn0", "bn1", "out"};
    for (size_t i = 0; i < 6; i++) {
        assert_true(tio__fb_vec_table(&nodes, i, &node));
        assert_true(tio__fb_string(&node, RTEN_Node_name, &s, &n));
        assert_string_equal(s, names[i]);
    }
    /* value node x: shape [batch, 8], dtype 1 */
    assert_true(tio__fb_vec_table(&nodes, 0, &node));
    assert_int_equal(tio__fb_u8(&node, RTEN_Node_data_type, 0), RTEN_NodeKind_ValueNode);
    assert_true(tio__fb_table(&node, RTEN_Node_data, &data));
    assert_int_equal(tio__fb_u8(&data, RTEN_ValueNode_dtype, 9), 1);
    assert_true(tio__fb_vector(&data, RTEN_ValueNode_shape, &v));
    assert_int_equal(v.count, 2);
    assert_true(tio__fb_vec_table(&v, 0, &sub));
    assert_true(tio__fb_string(&sub, RTEN_Dim_name, &s, &n));
    assert_string_equal(s, "batch");
    assert_false(tio__fb_has(&sub, RTEN_Dim_value));
    assert_true(tio__fb_vec_table(&v, 1, &sub));
    assert_int_equal(tio__fb_u32(&sub, RTEN_Dim_value, 0), 8);
    /* constant w */
    assert_true(tio__fb_vec_table(&nodes, 1, &node));
    assert_true(tio__fb_table(&node, RTEN_Node_data, &data));
    size_t u64pos = tio__fb_field_pos(&data, RTEN_ConstantNode_data_offset);
    assert_true(u64pos != 0);
    assert_int_equal(u64pos % 8, 0);
    assert_int_equal(tio__fb_u64(&data, RTEN_ConstantNode_data_offset, 0),
                     0x1122334455667788ULL);
    int64_t iv;
    double fv;
    const tio_fb_field *fields = tio__rten_ConstantNode->fields;
    assert_true(tio__fb_scalar(&data, RTEN_ConstantNode_dtype,
                               &fields[RTEN_ConstantNode_dtype], &iv, &fv));
    assert_int_equal(iv, 1);
    assert_true(tio__fb_vector(&data, RTEN_ConstantNode_shape, &v));
    assert_int_equal(v.count, 2);
    assert_int_equal(tio__fb_vec_u32(&v, 1), 2);
    assert_true(tio__fb_table(&data, RTEN_ConstantNode_data, &sub));
    assert_true(tio__fb_vector(&sub, RTEN_FloatData_data, &v));
    assert_int_equal(v.count, 4);
    float f3;
    memcpy(&f3, tio__fb_vec_data(&v) + 12, 4);
    assert_true(f3 == 4.0f);
    /* conv: union + i32 vector with -1 */
    assert_true(tio__fb_vec_table(&nodes, 2, &node));
    assert_true(tio__fb_table(&node, RTEN_Node_data, &data));
    assert_int_equal(tio__fb_u8(&data, RTEN_OperatorNode_attrs_type, 0),
                     RTEN_OperatorAttrs_ConvAttrs);
    assert_true(tio__fb_vector(&data, RTEN_OperatorNode_inputs, &v));
    assert_int_equal(v.count, 3);
    assert_int_equal(tio__fb_vec_i32(&v, 2), -1);
    assert_true(tio__fb_table(&data, RTEN_OperatorNode_attrs, &sub));
    assert_int_equal(tio__fb_u32(&sub, 2, 0), 2);
    assert_false(tio__fb_has(&sub, 0)); /* auto_pad default */
    /* bn0: epsilon omitted (default), bn1: -0.0 stored */
    const tio_fb_field *eps = &tio__rten_BatchNormalizationAttrs->fields[0];
    for (size_t i = 3; i <= 4; i++) {
        assert_true(tio__fb_vec_table(&nodes, i, &node));
        assert_true(tio__fb_table(&node, RTEN_Node_data, &data));
        assert_true(tio__fb_table(&data, RTEN_OperatorNode_attrs, &sub));
        assert_true(tio__fb_scalar(&sub, 0, eps, &iv, &fv));
        assert_true(fv == 0.0);
        assert_int_equal(tio__fb_has(&sub, 0), i == 4);
        assert_int_equal(signbit(fv) != 0, i == 4);
    }

    /* same call sequence, same bytes */
    uint8_t *buf2 = build_model(&len2);
    assert_int_equal(len, len2);
    assert_memory_equal(buf, buf2, len);
    free(buf2);
    free(buf);
}

/* A schema of our own for the builder and crafted-buffer tests. */
static const tio_fb_field f_leaf[] = {
    {"x", TIO_FB_U64, TIO_FB_NONE, 0, 0, 0, NULL, NULL, NULL},
    {"name", TIO_FB_STRING, TIO_FB_NONE, 0, 0, 0, NULL, NULL, NULL},
    {"f", TIO_FB_F32, TIO_FB_NONE, 0, 0, 1.5, NULL, NULL, NULL},
    {"opt", TIO_FB_I16, TIO_FB_NONE, 0, 1, 0, NULL, NULL, NULL},
};
static const tio_fb_table t_leaf = {"Leaf", 4, f_leaf};
static const tio_fb_table *const um_k[] = {&t_leaf};
static const tio_fb_union u_k = {"K", 1, um_k};
static const tio_fb_table t_root;
static const tio_fb_field f_root[] = {
    {"a", TIO_FB_I32, TIO_FB_NONE, 0, 0, 0, NULL, NULL, NULL},
    {"v", TIO_FB_VECTOR, TIO_FB_U32, 0, 0, 0, NULL, NULL, NULL},
    {"big", TIO_FB_VECTOR, TIO_FB_U64, 0, 0, 0, NULL, NULL, NULL},
    {"names", TIO_FB_VECTOR, TIO_FB_STRING, 0, 0, 0, NULL, NULL, NULL},
    {"leaves", TIO_FB_VECTOR, TIO_FB_TABLE, 0, 0, 0, &t_leaf, NULL, NULL},
    {"k_type", TIO_FB_UNION_TYPE, TIO_FB_NONE, 0, 0, 0, NULL, &u_k, NULL},
    {"k", TIO_FB_UNION, TIO_FB_NONE, 0, 0, 0, NULL, &u_k, NULL},
    {"self", TIO_FB_TABLE, TIO_FB_NONE, 0, 0, 0, &t_root, NULL, NULL},
    {"bytes", TIO_FB_VECTOR, TIO_FB_U8, 0, 0, 0, NULL, NULL, NULL},
};
static const tio_fb_table t_root = {"Root", 9, f_root};

static tio_fb_off mkleaf(tio_fb_builder *b, uint64_t x, const char *name) {
    tio_error e;
    tio_fb_off nm = name ? mkstr(b, name) : 0, o;
    OK(tio__fb_start_table(b, &e));
    if (x) OK(tio__fb_add_scalar(b, 0, x, 8, &e));
    OK(tio__fb_add_offset(b, 1, nm, &e));
    OK(tio__fb_end_table(b, &o, &e));
    return o;
}

/* Root { a, v:[u32], big:[u64] (align 16), names, leaves, k: Leaf, self: Root{a} } */
static uint8_t *build_root(size_t *len) {
    tio_error e;
    tio_fb_builder *b = tio__fb_builder_new("test");
    assert_non_null(b);
    tio_fb_off child;
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_scalar(b, 0, 42, 4, &e));
    OK(tio__fb_end_table(b, &child, &e));
    uint8_t bytes[3] = {1, 2, 3};
    tio_fb_off bv;
    OK(tio__fb_create_vector(b, bytes, 3, 1, 1, &bv, &e));
    uint64_t big[3] = {0, 5, 0xFFFFFFFFFFFFFFFFULL};
    tio_fb_off bigv;
    OK(tio__fb_create_vector(b, big, 3, 8, 16, &bigv, &e));
    uint32_t small[3] = {7, 8, 9};
    tio_fb_off sv = mkvec32(b, small, 3);
    tio_fb_off strs[3] = {mkstr(b, "zero"), mkstr(b, ""), mkstr(b, "two")}, nv;
    OK(tio__fb_create_offset_vector(b, strs, 3, &nv, &e));
    tio_fb_off leaves[3] = {mkleaf(b, 1, "l0"), mkleaf(b, 0, "l1"), mkleaf(b, 3, NULL)}, lv;
    OK(tio__fb_create_offset_vector(b, leaves, 3, &lv, &e));
    tio_fb_off k = mkleaf(b, 9, "k"), root;
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_offset(b, 8, bv, &e));
    OK(tio__fb_add_offset(b, 7, child, &e));
    OK(tio__fb_add_offset(b, 6, k, &e));
    OK(tio__fb_add_scalar(b, 5, 1, 1, &e));
    OK(tio__fb_add_offset(b, 4, lv, &e));
    OK(tio__fb_add_offset(b, 3, nv, &e));
    OK(tio__fb_add_offset(b, 2, bigv, &e));
    OK(tio__fb_add_offset(b, 1, sv, &e));
    OK(tio__fb_add_scalar(b, 0, (uint32_t)-5, 4, &e));
    OK(tio__fb_end_table(b, &root, &e));
    OK(tio__fb_finish(b, root, &e));
    const uint8_t *p = tio__fb_buffer(b, len);
    assert_non_null(p);
    uint8_t *copy = dup_bytes(p, *len);
    tio__fb_builder_free(b);
    return copy;
}

static int verify_root(const uint8_t *buf, size_t len, tio_error *e) {
    tio_error_clear(e);
    return tio__fb_verify(buf, len, &t_root, &LIM, "test", 0, e);
}

/* The verifier lists the byte vectors it checked (tio_fb_limits.blobs), and
 * tio__fb_bytes takes a count from that list instead of reading it again:
 * the same vector as tio__fb_vector's; a listed count that does not fit the
 * buffer is refused as a read one is; an unlisted vector is read. */
static void test_blobs(void **state) {
    (void)state;
    size_t len;
    uint8_t *buf = build_root(&len);
    tio_fb_blobs blobs = {0};
    tio_fb_limits lim = LIM;
    lim.blobs = &blobs;
    tio_error e;
    OK(tio__fb_verify(buf, len, &t_root, &lim, "test", 0, &e));
    assert_int_equal(blobs.n, 1); /* Root.bytes, the one vector of bytes */
    tio_fb_ref r;
    tio_fb_vec v, w;
    assert_true(tio__fb_root(buf, len, &r));
    assert_true(tio__fb_vector(&r, 8, &v));
    assert_int_equal(blobs.v[0].pos, v.data - 4);
    assert_int_equal(blobs.v[0].count, 3);
    buf[v.data - 4] = 2; /* the file says 2 now: the listed 3 is what is used */
    assert_true(tio__fb_bytes(&r, 8, NULL, &blobs, &w));
    assert_int_equal(w.count, 3);
    assert_int_equal(w.data, v.data);
    assert_true(tio__fb_bytes(&r, 8, NULL, NULL, &w)); /* no list: read */
    assert_int_equal(w.count, 2);
    blobs.v[0].count = (uint32_t)len; /* past the end */
    assert_false(tio__fb_bytes(&r, 8, NULL, &blobs, &w));
    assert_int_equal(w.count, 0);
    assert_true(tio__fb_bytes(&r, 1, NULL, &blobs, &w)); /* v: [u32], not listed: read */
    assert_int_equal(w.count, 3);
    assert_false(tio__fb_bytes(&r, 9, NULL, &blobs, &w)); /* no such field */
    tio__fb_blobs_free(&blobs);
    assert_null(blobs.v);
    free(buf);
}

static void test_builder_alignment(void **state) {
    (void)state;
    size_t len;
    uint8_t *buf = build_root(&len);
    tio_error e;
    OK(verify_root(buf, len, &e));
    assert_int_equal(len % 16, 0); /* minalign 16 from the big vector */
    walk_buffer(buf, len, &t_root, true);
    tio_fb_ref r, c;
    tio_fb_vec v;
    assert_true(tio__fb_root(buf, len, &r));
    assert_int_equal(r.pos % 4, 0);
    assert_int_equal(tio__fb_i32(&r, 0, 0), -5);
    assert_true(tio__fb_vector(&r, 2, &v));
    assert_int_equal(v.count, 3);
    assert_int_equal(v.data % 16, 0);
    assert_int_equal(tio__ld64(tio__fb_vec_data(&v) + 16), 0xFFFFFFFFFFFFFFFFULL);
    assert_true(tio__fb_vector(&r, 1, &v));
    assert_int_equal(v.data % 4, 0);
    assert_int_equal(tio__fb_vec_u32(&v, 2), 9);
    assert_true(tio__fb_vector(&r, 8, &v));
    assert_int_equal((v.data - 4) % 4, 0);
    assert_int_equal(v.count, 3);
    assert_int_equal(tio__fb_vec_data(&v)[2], 3);
    assert_true(tio__fb_vector(&r, 3, &v));
    const char *s;
    uint32_t n;
    assert_true(tio__fb_vec_string(&v, 1, &s, &n));
    assert_int_equal(n, 0);
    assert_string_equal(s, "");
    assert_true(tio__fb_vec_string(&v, 2, &s, &n));
    assert_string_equal(s, "two");
    assert_false(tio__fb_vec_string(&v, 3, &s, &n));
    assert_true(tio__fb_vector(&r, 4, &v));
    for (uint32_t i = 0; i < 3; i++) {
        assert_true(tio__fb_vec_table(&v, i, &c));
        size_t xp = tio__fb_field_pos(&c, 0);
        if (i != 1) {
            assert_true(xp != 0);
            assert_int_equal(xp % 8, 0);
        } else {
            assert_int_equal(xp, 0);
        }
        /* float default 1.5 and optional i16 */
        int64_t iv;
        double fv;
        assert_true(tio__fb_scalar(&c, 2, &f_leaf[2], &iv, &fv));
        assert_true(fv == 1.5);
        assert_true(tio__fb_f32(&c, 2, 1.5f) == 1.5f);
        assert_false(tio__fb_scalar(&c, 3, &f_leaf[3], &iv, &fv));
        assert_true(tio__fb_scalar(&c, 0, &f_leaf[0], &iv, &fv));
        assert_int_equal(iv, i == 0 ? 1 : i == 1 ? 0 : 3);
    }
    assert_int_equal(tio__fb_u8(&r, 5, 0), 1);
    assert_true(tio__fb_table(&r, 6, &c));
    assert_int_equal(tio__fb_u64(&c, 0, 0), 9);
    assert_true(tio__fb_table(&r, 7, &c));
    assert_int_equal(tio__fb_i32(&c, 0, 0), 42);
    assert_false(tio__fb_table(&c, 7, &r)); /* child's self is absent */
    free(buf);
}

static void test_builder_vtables(void **state) {
    (void)state;
    tio_error e;
    tio_fb_builder *b = tio__fb_builder_new("test");
    assert_non_null(b);
    /* Leaf{x} tables built at shifting 8-byte phases: the same fields, but
     * the alignment padding before x changes the object size. */
    enum { N = 12 };
    tio_fb_off leaves[N];
    for (size_t i = 0; i < N; i++) {
        uint32_t w[3] = {1, 2, 3};
        if (i % 3 == 1) mkvec32(b, w, 2); /* 12 bytes: flips the 8-byte phase */
        leaves[i] = mkleaf(b, 100 + i, NULL);
    }
    /* Dim-like tables with identical layouts */
    tio_fb_off lv;
    OK(tio__fb_create_offset_vector(b, leaves, N, &lv, &e));
    tio_fb_off root;
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_offset(b, 4, lv, &e));
    OK(tio__fb_end_table(b, &root, &e));
    OK(tio__fb_finish(b, root, &e));
    size_t len;
    const uint8_t *buf = tio__fb_buffer(b, &len);
    OK(verify_root(buf, len, &e));
    tio_fb_ref r, c[N];
    tio_fb_vec v;
    assert_true(tio__fb_root(buf, len, &r));
    assert_true(tio__fb_vector(&r, 4, &v));
    size_t distinct = 0, objsizes[N], nobj = 0;
    for (size_t i = 0; i < N; i++) {
        assert_true(tio__fb_vec_table(&v, i, &c[i]));
        assert_int_equal(tio__fb_u64(&c[i], 0, 0), 100 + i);
        uint16_t os = tio__ld16(buf + c[i].vt + 2);
        bool seen_os = false;
        for (size_t k = 0; k < nobj; k++) seen_os |= objsizes[k] == os;
        if (!seen_os) objsizes[nobj++] = os;
        bool shared = false;
        for (size_t j = 0; j < i; j++) {
            bool same_vt = c[j].vt == c[i].vt;
            bool same_bytes = c[j].vtsize == c[i].vtsize &&
                              memcmp(buf + c[j].vt, buf + c[i].vt, c[i].vtsize) == 0;
            /* shared exactly when byte-equal, object size included */
            assert_int_equal(same_vt, same_bytes);
            shared |= same_vt;
        }
        if (!shared) distinct++;
    }
    assert_true(nobj >= 2 && nobj < N); /* several object sizes occurred */
    assert_int_equal(distinct, nobj);   /* and exactly one vtable each */
    tio__fb_builder_free(b);

    /* Sharing shows in the size: one more identical Dim {value, name}
     * (an 8-byte vtable, so the alignment phase is kept) adds only the table
     * (soffset + u32 + uoffset = 12 bytes) and its vector slot (4). */
    size_t sizes[3];
    for (int k = 1; k <= 3; k++) {
        b = tio__fb_builder_new("test");
        assert_non_null(b);
        tio_fb_off t[3], nm = mkstr(b, "n");
        for (int i = 0; i < k; i++) {
            OK(tio__fb_start_table(b, &e));
            OK(tio__fb_add_scalar(b, RTEN_Dim_value, (uint64_t)i + 1, 4, &e));
            OK(tio__fb_add_offset(b, RTEN_Dim_name, nm, &e));
            OK(tio__fb_end_table(b, &t[i], &e));
        }
        OK(tio__fb_create_offset_vector(b, t, (size_t)k, &lv, &e));
        OK(tio__fb_start_table(b, &e));
        OK(tio__fb_add_offset(b, RTEN_ValueNode_shape, lv, &e));
        OK(tio__fb_end_table(b, &root, &e));
        OK(tio__fb_finish(b, root, &e));
        buf = tio__fb_buffer(b, &sizes[k - 1]);
        tio_error_clear(&e);
        OK(tio__fb_verify(buf, sizes[k - 1], tio__rten_ValueNode, &LIM, "rten", 0, &e));
        tio__fb_builder_free(b);
    }
    assert_int_equal(sizes[1] - sizes[0], 16);
    assert_int_equal(sizes[2] - sizes[1], 16);
}

static void test_builder_errors(void **state) {
    (void)state;
    tio_error e;
    tio_fb_off o;
    uint8_t dummy[8] = {0};
    /* sizes >= 2 GiB: checked before any data is read */
    tio_fb_builder *b = tio__fb_builder_new("rten");
    assert_non_null(b);
    expect_err(tio__fb_create_vector(b, dummy, (size_t)1 << 31, 1, 1, &o, &e), &e,
               TIO_E_LIMIT, "rten: ", "2 GiB");
    /* the builder stays failed */
    expect_err(tio__fb_create_string(b, "a", 1, &o, &e), &e, TIO_E_LIMIT, "earlier error",
               NULL);
    tio__fb_builder_free(b);
    b = tio__fb_builder_new("rten");
    expect_err(tio__fb_create_vector(b, dummy, SIZE_MAX, 8, 8, &o, &e), &e, TIO_E_LIMIT,
               "2 GiB", NULL);
    tio__fb_builder_free(b);
    b = tio__fb_builder_new("rten");
    expect_err(tio__fb_create_offset_vector(b, (const tio_fb_off *)dummy, SIZE_MAX / 2, &o,
                                            &e),
               &e, TIO_E_LIMIT, "2 GiB", NULL);
    tio__fb_builder_free(b);
    /* misuse */
    b = tio__fb_builder_new("rten");
    expect_err(tio__fb_add_scalar(b, 0, 1, 4, &e), &e, TIO_E_ARGUMENT, "outside of a table",
               NULL);
    tio__fb_builder_free(b);
    b = tio__fb_builder_new("rten");
    OK(tio__fb_start_table(b, &e));
    expect_err(tio__fb_create_string(b, "a", 1, &o, &e), &e, TIO_E_ARGUMENT,
               "inside a table", NULL);
    tio__fb_builder_free(b);
    b = tio__fb_builder_new("rten");
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_scalar(b, 1, 1, 4, &e));
    OK(tio__fb_add_scalar(b, 1, 2, 4, &e));
    expect_err(tio__fb_end_table(b, &o, &e), &e, TIO_E_ARGUMENT, "field id 1 added twice",
               NULL);
    tio__fb_builder_free(b);
    b = tio__fb_builder_new("rten");
    OK(tio__fb_start_table(b, &e));
    expect_err(tio__fb_add_scalar(b, 0, 1, 3, &e), &e, TIO_E_ARGUMENT, "size 3", NULL);
    tio__fb_builder_free(b);
    b = tio__fb_builder_new("rten");
    OK(tio__fb_start_table(b, &e));
    expect_err(tio__fb_add_offset(b, 0, 1000, &e), &e, TIO_E_ARGUMENT, "reference 1000",
               NULL);
    tio__fb_builder_free(b);
    b = tio__fb_builder_new("rten");
    expect_err(tio__fb_finish(b, 0, &e), &e, TIO_E_ARGUMENT, "reference 0", NULL);
    tio__fb_builder_free(b);
    b = tio__fb_builder_new("rten");
    OK(tio__fb_create_vector(b, dummy, 2, 4, 0, &o, &e));
    expect_err(tio__fb_create_vector(b, dummy, 1, 4, 3, &o, &e), &e, TIO_E_ARGUMENT,
               "power of two", NULL);
    tio__fb_builder_free(b);
    /* a finished buffer takes nothing more; growth keeps content */
    b = tio__fb_builder_new("rten");
    tio_fb_off big;
    char s[5000];
    memset(s, 'q', sizeof s);
    OK(tio__fb_create_string(b, s, sizeof s, &big, &e));
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_offset(b, RTEN_Metadata_description, big, &e));
    OK(tio__fb_end_table(b, &o, &e));
    OK(tio__fb_finish(b, o, &e));
    expect_err(tio__fb_start_table(b, &e), &e, TIO_E_ARGUMENT, "finished", NULL);
    size_t len;
    const uint8_t *buf = tio__fb_buffer(b, &len);
    assert_non_null(buf);
    tio_error_clear(&e);
    OK(tio__fb_verify(buf, len, tio__rten_Metadata, &LIM, "rten", 0, &e));
    tio_fb_ref r;
    const char *str;
    uint32_t n;
    assert_true(tio__fb_root(buf, len, &r));
    assert_true(tio__fb_string(&r, RTEN_Metadata_description, &str, &n));
    assert_int_equal(n, sizeof s);
    assert_memory_equal(str, s, sizeof s);
    tio__fb_builder_free(b);
    tio__fb_builder_free(NULL);
}

/* ------------------------------------------------------- 3. rejections */


/* Strings and vectors of every small length, each landing at every
 * position relative to the builder's capacity (the buffer grows by
 * doubling; an object must never be written past the room reserved for it;
 * ASan checks). Each is read back from the finished buffer. */
static void test_builder_growth(void **state) {
    (void)state;
    char text[300];
    for (size_t i = 0; i < sizeof text; i++) text[i] = (char)('a' + i % 26);
    for (size_t first = 0; first < 64; first += 3) {
        tio_fb_builder *b = tio__fb_builder_new("test");
        assert_non_null(b);
        tio_fb_off refs[300];
        size_t n = 0;
        for (size_t len = first; len < sizeof text && n < 300; len += 7) {
            tio_fb_off o;
            if (n % 2)
                assert_int_equal(tio__fb_create_string(b, text, len, &o, NULL), TIO_OK);
            else
                assert_int_equal(tio__fb_create_vector(b, text, len, 1, 1, &o, NULL), TIO_OK);
            refs[n++] = o;
        }
        tio_fb_off vec, root;
        assert_int_equal(tio__fb_create_offset_vector(b, refs, n, &vec, NULL), TIO_OK);
        assert_int_equal(tio__fb_start_table(b, NULL), TIO_OK);
        assert_int_equal(tio__fb_add_offset(b, 0, vec, NULL), TIO_OK);
        assert_int_equal(tio__fb_end_table(b, &root, NULL), TIO_OK);
        assert_int_equal(tio__fb_finish(b, root, NULL), TIO_OK);
        size_t blen;
        const uint8_t *buf = tio__fb_buffer(b, &blen);
        tio_fb_ref r;
        tio_fb_vec v;
        assert_true(tio__fb_root(buf, blen, &r));
        assert_true(tio__fb_vector(&r, 0, &v));
        assert_int_equal(v.count, n);
        for (size_t k = 0; k < n; k++) {
            size_t len = first + 7 * k;
            /* element k of an offset vector: follow it by hand */
            size_t at = v.data + 4 * k;
            uint32_t off = (uint32_t)buf[at] | (uint32_t)buf[at + 1] << 8 |
                           (uint32_t)buf[at + 2] << 16 | (uint32_t)buf[at + 3] << 24;
            size_t obj = at + off;
            uint32_t cnt = (uint32_t)buf[obj] | (uint32_t)buf[obj + 1] << 8 |
                           (uint32_t)buf[obj + 2] << 16 | (uint32_t)buf[obj + 3] << 24;
            assert_int_equal(cnt, len);
            assert_memory_equal(buf + obj + 4, text, len);
            if (k % 2) assert_int_equal(buf[obj + 4 + len], 0);
        }
        tio__fb_builder_free(b);
    }
    /* A string right after a vector that leaves 0..260 bytes of room. */
    for (size_t fill = 0; fill < 260; fill++)
        for (size_t len = 0; len < 12; len++) {
            tio_fb_builder *b = tio__fb_builder_new("test");
            tio_fb_off v, str;
            assert_int_equal(tio__fb_create_vector(b, text, fill, 1, 1, &v, NULL), TIO_OK);
            assert_int_equal(tio__fb_create_string(b, text, len, &str, NULL), TIO_OK);
            tio__fb_builder_free(b);
        }
}

static void test_truncations(void **state) {
    (void)state;
    const char *rels[] = {"rten/small_cnn/small_cnn.v1.rten", "rten/matmul_add/matmul_add.v2.rten",
                          "rten/int_consts/int_consts.v1.rten"};
    size_t done = 0;
    for (size_t k = 0; k < 3; k++) {
        model m;
        if (!load_model(rels[k], &m)) continue;
        tio_fb_ref root;
        assert_true(tio__fb_root(m.buf, m.len, &root));
        size_t root_end = root.pos + tio__ld16(m.buf + root.vt + 2);
        size_t fails = 0;
        for (size_t n = 0; n < m.len; n++) {
            uint8_t *p = dup_bytes(m.buf, n); /* exact size: ASan catches overreads */
            tio_error e;
            tio_error_clear(&e);
            int rc = tio__fb_verify(p, n, tio__rten_Model, &LIM, "rten", m.base, &e);
            if (rc != TIO_OK) {
                fails++;
                assert_true(rc == TIO_E_TRUNCATED || rc == TIO_E_BOUNDS ||
                            rc == TIO_E_CORRUPT);
                assert_int_equal(e.code, rc);
                assert_non_null(strstr(e.message, "rten: offset "));
                assert_true(e.offset >= (int64_t)m.base);
            } else {
                walk_buffer(p, n, tio__rten_Model, true);
            }
            if (n < root_end) assert_int_not_equal(rc, TIO_OK);
            walk_buffer(p, n, tio__rten_Model, false); /* accessors on bad bytes */
            free(p);
        }
        /* every object of these writers is referenced: no prefix is valid */
        assert_int_equal(fails, m.len);
        free(m.buf);
        done++;
    }
    if (!done) skip();
    tio_error e;
    tio_error_clear(&e);
    expect_err(tio__fb_verify(NULL, 0, tio__rten_Model, NULL, "rten", 0, &e), &e,
               TIO_E_TRUNCATED, "root (Model)", "too short");
}

static void test_bad_root_and_table_header(void **state) {
    (void)state;
    model m;
    if (!load_model("rten/small_cnn/small_cnn.v1.rten", &m)) skip();
    tio_error e;
    uint8_t *p = dup_bytes(m.buf, m.len);
    size_t rp = tio__ld32(m.buf);

    put32(p, (uint32_t)m.len + 100);
    expect_err(verify_model(p, m.len, &e), &e, TIO_E_BOUNDS, "rten: offset 0: root (Model)",
               "outside the buffer");
    put32(p, 0);
    expect_err(verify_model(p, m.len, &e), &e, TIO_E_CORRUPT, "root (Model)",
               "uoffset is 0");
    put32(p, 0xFFFFFFFCu); /* would wrap around to 0 in 32 bits */
    expect_err(verify_model(p, m.len, &e), &e, TIO_E_BOUNDS, "root (Model)", "2 GiB");
    tio_fb_ref r;
    assert_false(tio__fb_root(p, m.len, &r));
    put32(p, (uint32_t)rp + 2);
    expect_err(verify_model(p, m.len, &e), &e, TIO_E_CORRUPT, "root (Model)",
               "not 4-byte aligned");
    memcpy(p, m.buf, m.len);

    /* the error offset is a file offset: base is added */
    put32(p, (uint32_t)m.len);
    tio_error_clear(&e);
    expect_err(tio__fb_verify(p, m.len, tio__rten_Model, &LIM, "rten", 32, &e), &e,
               TIO_E_BOUNDS, "rten: offset 32: ", NULL);
    assert_int_equal(e.offset, 32);
    memcpy(p, m.buf, m.len);

    /* soffset pointing outside, both directions */
    put32(p + rp, 0x80000000u); /* vtable = table + 2^31 */
    expect_err(verify_model(p, m.len, &e), &e, TIO_E_BOUNDS, "root (Model)", "soffset");
    assert_false(tio__fb_root(p, m.len, &r));
    put32(p + rp, 0x7FFFFFFFu); /* vtable before the buffer */
    expect_err(verify_model(p, m.len, &e), &e, TIO_E_BOUNDS, "root (Model)", "soffset");
    memcpy(p, m.buf, m.len);

    /* vtable size odd / < 4 / past the end; object size too small */
    assert_true(tio__fb_root(p, m.len, &r));
    size_t vt = r.vt;
    put16(p + vt, 7);
    expect_err(verify_model(p, m.len, &e), &e, TIO_E_CORRUPT, "root (Model)",
               "vtable size 7 is odd");
    put16(p + vt, 2);
    expect_err(verify_model(p, m.len, &e), &e, TIO_E_CORRUPT, "root (Model)",
               "vtable size 2 is smaller than 4");
    assert_false(tio__fb_root(p, m.len, &r));
    put16(p + vt, 0xFFFE);
    expect_err(verify_model(p, m.len, &e), &e, TIO_E_TRUNCATED, "root (Model)",
               "vtable of 65534 bytes runs past the end");
    memcpy(p, m.buf, m.len);
    put16(p + vt + 2, 2);
    expect_err(verify_model(p, m.len, &e), &e, TIO_E_CORRUPT, "root (Model)",
               "object size 2 is smaller than 4");
    put16(p + vt + 2, 4);
    expect_err(verify_model(p, m.len, &e), &e, TIO_E_CORRUPT, "Model.schema_version",
               "exceeds the object size 4");
    /* the accessors agree: a field outside the object is absent */
    assert_true(tio__fb_root(p, m.len, &r));
    assert_int_equal(tio__fb_i32(&r, RTEN_Model_schema_version, -9), -9);
    memcpy(p, m.buf, m.len);

    /* a node's table: the message names the vector element */
    tio_fb_ref graph, node;
    tio_fb_vec nodes;
    assert_true(tio__fb_root(p, m.len, &r));
    assert_true(tio__fb_table(&r, RTEN_Model_graph, &graph));
    assert_true(tio__fb_vector(&graph, RTEN_Graph_nodes, &nodes));
    assert_true(tio__fb_vec_table(&nodes, 3, &node));
    size_t first = 3; /* the first node sharing node 3's vtable fails first */
    for (size_t i = 0; i < 3; i++) {
        tio_fb_ref o;
        assert_true(tio__fb_vec_table(&nodes, i, &o));
        if (o.vt == node.vt) {
            first = i;
            break;
        }
    }
    put16(p + node.vt, 5);
    char where[64];
    snprintf(where, sizeof where, "Graph.nodes[%zu] (Node)", first);
    expect_err(verify_model(p, m.len, &e), &e, TIO_E_CORRUPT, where, "vtable size 5 is odd");
    memcpy(p, m.buf, m.len);
    put32(p + node.pos, (uint32_t)(int32_t)-(int32_t)m.len); /* vtable past the end */
    snprintf(where, sizeof where, "Graph.nodes[3] (Node)");
    expect_err(verify_model(p, m.len, &e), &e, TIO_E_BOUNDS, where, "soffset");
    free(p);
    free(m.buf);
}

/* Hand-made buffers for the Leaf schema:
 *  0: root uoffset 16 | 4: vtable {10, 16, x=8, name=0, f=0} | 16: table
 *  soffset 12, x (u64) at 24. */
static void leaf_buffer(uint8_t p[32]) {
    memset(p, 0, 32);
    put32(p, 16);
    put16(p + 4, 10);
    put16(p + 6, 16);
    put16(p + 8, 8);
    put32(p + 16, 12);
    put32(p + 24, 0xABCD);
}

static int verify_leaf(const uint8_t *p, size_t n, tio_error *e) {
    tio_error_clear(e);
    return tio__fb_verify(p, n, &t_leaf, &LIM, "test", 0, e);
}

static void test_crafted_fields_and_strings(void **state) {
    (void)state;
    tio_error e;
    uint8_t p[32];
    leaf_buffer(p);
    OK(verify_leaf(p, 32, &e));
    tio_fb_ref r;
    assert_true(tio__fb_root(p, 32, &r));
    assert_int_equal(tio__fb_u64(&r, 0, 0), 0xABCD);
    assert_int_equal(tio__fb_slot_count(&r), 3);
    /* field misaligned (u64 at 20) */
    put16(p + 8, 4);
    expect_err(verify_leaf(p, 32, &e), &e, TIO_E_CORRUPT, "offset 20: Leaf.x",
               "not 8-byte aligned");
    /* field past the object size */
    put16(p + 8, 16);
    expect_err(verify_leaf(p, 32, &e), &e, TIO_E_CORRUPT, "Leaf.x",
               "table offset 16 of 8 bytes exceeds the object size 16");
    assert_true(tio__fb_root(p, 32, &r));
    assert_int_equal(tio__fb_u64(&r, 0, 7), 7);
    /* table running past the end */
    leaf_buffer(p);
    put16(p + 6, 20);
    expect_err(verify_leaf(p, 32, &e), &e, TIO_E_TRUNCATED, "root (Leaf)",
               "table of 20 bytes runs past the end");
    /* vtable misaligned */
    leaf_buffer(p);
    put32(p + 16, 11);
    expect_err(verify_leaf(p, 32, &e), &e, TIO_E_CORRUPT, "root (Leaf)",
               "vtable is not 2-byte aligned");
    /* truncated before the table */
    leaf_buffer(p);
    expect_err(verify_leaf(p, 18, &e), &e, TIO_E_TRUNCATED, "root (Leaf)",
               "soffset needs 4 bytes");
    expect_err(verify_leaf(p, 3, &e), &e, TIO_E_TRUNCATED, "root (Leaf)", "too short");
    /* the root table's soffset 0: the vtable is the table itself, whose
     * first u16 (the soffset's low half) is 0 */
    put32(p + 16, 0);
    expect_err(verify_leaf(p, 32, &e), &e, TIO_E_CORRUPT, "root (Leaf)",
               "vtable size 0 is smaller than 4");

    /* strings: vtable {8, 8, x=0, name=4}, table at 12, string at 20 "abc" */
    uint8_t s[28];
    memset(s, 0, sizeof s);
    put32(s, 12);
    put16(s + 4, 8);
    put16(s + 6, 8);
    put16(s + 10, 4);
    put32(s + 12, 8);
    put32(s + 16, 4);
    put32(s + 20, 3);
    memcpy(s + 24, "abc", 4);
    OK(verify_leaf(s, 28, &e));
    assert_true(tio__fb_root(s, 28, &r));
    const char *str;
    uint32_t n;
    assert_true(tio__fb_string(&r, 1, &str, &n));
    assert_string_equal(str, "abc");
    s[27] = 'd';
    expect_err(verify_leaf(s, 28, &e), &e, TIO_E_CORRUPT, "offset 27: Leaf.name",
               "not NUL-terminated (found 0x64)");
    assert_true(tio__fb_root(s, 28, &r));
    assert_false(tio__fb_string(&r, 1, &str, &n));
    s[27] = 0;
    put32(s + 20, 4); /* the NUL would be at 28 = past the end */
    expect_err(verify_leaf(s, 28, &e), &e, TIO_E_TRUNCATED, "Leaf.name",
               "string of 4 bytes + NUL runs past the end");
    assert_false(tio__fb_string(&r, 1, &str, &n));
    put32(s + 20, 0xFFFFFFFFu);
    expect_err(verify_leaf(s, 28, &e), &e, TIO_E_TRUNCATED, "Leaf.name",
               "string of 4294967295 bytes");
    assert_false(tio__fb_string(&r, 1, &str, &n));
    put32(s + 20, 3);
    put32(s + 16, 5); /* string at 21 */
    expect_err(verify_leaf(s, 28, &e), &e, TIO_E_CORRUPT, "Leaf.name",
               "string is not 4-byte aligned");
    put32(s + 16, 12); /* string at 28 = the end */
    expect_err(verify_leaf(s, 28, &e), &e, TIO_E_BOUNDS, "Leaf.name", "outside the buffer");
    assert_false(tio__fb_string(&r, 1, &str, &n));
}

static void test_crafted_vectors(void **state) {
    (void)state;
    size_t len;
    uint8_t *good = build_root(&len);
    tio_error e;
    tio_fb_ref r;
    tio_fb_vec v;
    assert_true(tio__fb_root(good, len, &r));
    uint8_t *p = dup_bytes(good, len);

    /* count x size: 0xFFFFFFFF u32 and u64 elements */
    assert_true(tio__fb_vector(&r, 1, &v));
    put32(p + v.data - 4, 0xFFFFFFFFu);
    expect_err(verify_root(p, len, &e), &e, TIO_E_TRUNCATED, "Root.v",
               "vector of 4294967295 elements of 4 bytes runs past the end");
    tio_fb_ref pr;
    assert_true(tio__fb_root(p, len, &pr));
    assert_false(tio__fb_vector(&pr, 1, &v)); /* more elements than bytes */
    memcpy(p, good, len);
    assert_true(tio__fb_vector(&r, 2, &v));
    put32(p + v.data - 4, 0xFFFFFFFFu);
    expect_err(verify_root(p, len, &e), &e, TIO_E_TRUNCATED, "Root.big",
               "of 8 bytes runs past the end");
    memcpy(p, good, len);
    put32(p + v.data - 4, 0x20000000u); /* x 8 = 2^32 */
    expect_err(verify_root(p, len, &e), &e, TIO_E_TRUNCATED, "Root.big", "536870912");
    memcpy(p, good, len);

    /* vector misaligned: the field's uoffset + 2 */
    size_t fp = tio__fb_field_pos(&r, 1);
    put32(p + fp, tio__ld32(good + fp) + 2);
    expect_err(verify_root(p, len, &e), &e, TIO_E_CORRUPT, "Root.v",
               "vector is not 4-byte aligned");
    memcpy(p, good, len);
    /* u64 data not 8-aligned: start the vector at its old data (element 0 is
     * 0, so the count reads 0 and the data sits at +4 mod 8) */
    fp = tio__fb_field_pos(&r, 2);
    put32(p + fp, tio__ld32(good + fp) + 4);
    expect_err(verify_root(p, len, &e), &e, TIO_E_CORRUPT, "Root.big",
               "not 8-byte aligned");
    memcpy(p, good, len);

    /* element of a string vector: uoffset 0, then outside */
    assert_true(tio__fb_vector(&r, 3, &v));
    put32(p + v.data + 4, 0);
    expect_err(verify_root(p, len, &e), &e, TIO_E_CORRUPT, "Root.names[1]", "uoffset is 0");
    put32(p + v.data + 4, (uint32_t)len);
    expect_err(verify_root(p, len, &e), &e, TIO_E_BOUNDS, "Root.names[1]",
               "outside the buffer");
    memcpy(p, good, len);
    /* element of a table vector */
    assert_true(tio__fb_vector(&r, 4, &v));
    put32(p + v.data + 8, 0x80000000u);
    expect_err(verify_root(p, len, &e), &e, TIO_E_BOUNDS, "Root.leaves[2] (Leaf)", "2 GiB");
    memcpy(p, good, len);

    /* "cycles": Root.self pointing to itself (0) or back to the root table
     * or the buffer start through 32-bit wrap-around */
    fp = tio__fb_field_pos(&r, 7);
    put32(p + fp, 0);
    expect_err(verify_root(p, len, &e), &e, TIO_E_CORRUPT, "Root.self (Root)",
               "uoffset is 0 (points to itself)");
    assert_true(tio__fb_root(p, len, &pr));
    tio_fb_ref c;
    assert_false(tio__fb_table(&pr, 7, &c));
    put32(p + fp, (uint32_t)(0u - (uint32_t)(fp - r.pos)));
    expect_err(verify_root(p, len, &e), &e, TIO_E_BOUNDS, "Root.self (Root)", "2 GiB");
    assert_false(tio__fb_table(&pr, 7, &c));
    put32(p + fp, (uint32_t)(0u - (uint32_t)fp));
    expect_err(verify_root(p, len, &e), &e, TIO_E_BOUNDS, "Root.self (Root)", "2 GiB");
    assert_false(tio__fb_table(&pr, 7, &c));
    memcpy(p, good, len);

    /* union: tag beyond the members is accepted without looking at the
     * value; tag 0 with a value too; the member table is verified */
    size_t tp = tio__fb_field_pos(&r, 5);
    fp = tio__fb_field_pos(&r, 6);
    put32(p + fp, 0x7FFFFFF0u); /* a value that would fail if inspected */
    p[tp] = 2;
    OK(verify_root(p, len, &e));
    p[tp] = 0;
    OK(verify_root(p, len, &e));
    p[tp] = 1;
    expect_err(verify_root(p, len, &e), &e, TIO_E_BOUNDS, "Root.k (Leaf)",
               "outside the buffer");
    free(p);
    free(good);
}

static tio_fb_off mkconv_model(tio_fb_builder *b, bool shape) {
    tio_error e;
    uint32_t pads[4] = {0, 0, 0, 0};
    tio_fb_off pv = mkvec32(b, pads, 4), conv, fdv, fd, cn, nodes[2];
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_offset(b, 1, pv, &e));
    OK(tio__fb_add_scalar(b, 2, 3, 4, &e));
    OK(tio__fb_end_table(b, &conv, &e));
    nodes[0] = mkop(b, "conv", 1, RTEN_OperatorAttrs_ConvAttrs, conv, NULL, 0);
    float one = 1.0f;
    fdv = mkvec32(b, &one, 1);
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_offset(b, 0, fdv, &e));
    OK(tio__fb_end_table(b, &fd, &e));
    uint32_t dims[1] = {1};
    tio_fb_off sh = shape ? mkvec32(b, dims, 1) : 0;
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_offset(b, RTEN_ConstantNode_shape, sh, &e));
    OK(tio__fb_add_scalar(b, RTEN_ConstantNode_data_type, 1, 1, &e));
    OK(tio__fb_add_offset(b, RTEN_ConstantNode_data, fd, &e));
    OK(tio__fb_end_table(b, &cn, &e));
    nodes[1] = mknode(b, "c", RTEN_NodeKind_ConstantNode, cn);
    return mkmodel(b, mkgraph(b, nodes, 2), 0);
}

static void test_unions_and_required(void **state) {
    (void)state;
    tio_error e;
    tio_fb_builder *b = tio__fb_builder_new("rten");
    assert_non_null(b);
    OK(tio__fb_finish(b, mkconv_model(b, true), &e));
    size_t len;
    const uint8_t *built = tio__fb_buffer(b, &len);
    uint8_t *good = dup_bytes(built, len);
    tio__fb_builder_free(b);
    OK(verify_model(good, len, &e));
    uint8_t *p = dup_bytes(good, len);
    tio_fb_ref r, g, node, op, conv;
    tio_fb_vec nodes;
    assert_true(tio__fb_root(good, len, &r));
    assert_true(tio__fb_table(&r, RTEN_Model_graph, &g));
    assert_true(tio__fb_vector(&g, RTEN_Graph_nodes, &nodes));
    assert_true(tio__fb_vec_table(&nodes, 0, &node));
    assert_true(tio__fb_table(&node, RTEN_Node_data, &op));
    assert_true(tio__fb_table(&op, RTEN_OperatorNode_attrs, &conv));
    size_t tag = tio__fb_field_pos(&op, RTEN_OperatorNode_attrs_type);
    assert_int_equal(good[tag], RTEN_OperatorAttrs_ConvAttrs);

    /* a known member whose table is bad */
    put16(p + conv.vt, 11);
    expect_err(verify_model(p, len, &e), &e, TIO_E_CORRUPT, "OperatorNode.attrs (ConvAttrs)",
               "vtable size 11 is odd");
    /* a newer writer's member: not inspected; accessor reports the tag */
    p[tag] = 200;
    OK(verify_model(p, len, &e));
    tio_fb_ref pr, pg, pn, po;
    assert_true(tio__fb_root(p, len, &pr));
    assert_true(tio__fb_table(&pr, RTEN_Model_graph, &pg));
    assert_true(tio__fb_vector(&pg, RTEN_Graph_nodes, &nodes));
    assert_true(tio__fb_vec_table(&nodes, 0, &pn));
    assert_true(tio__fb_table(&pn, RTEN_Node_data, &po));
    assert_int_equal(tio__fb_u8(&po, RTEN_OperatorNode_attrs_type, 0), 200);
    p[tag] = 0;
    OK(verify_model(p, len, &e));
    memcpy(p, good, len);
    /* a member whose required field is missing: AveragePoolAttrs.kernel_size */
    p[tag] = RTEN_OperatorAttrs_AveragePoolAttrs;
    expect_err(verify_model(p, len, &e), &e, TIO_E_CORRUPT, "AveragePoolAttrs.kernel_size",
               "required field (id 0) is missing");
    free(p);
    free(good);

    /* ConstantNode.shape and Model.graph are required */
    b = tio__fb_builder_new("rten");
    OK(tio__fb_finish(b, mkconv_model(b, false), &e));
    const uint8_t *buf = tio__fb_buffer(b, &len);
    expect_err(verify_model(buf, len, &e), &e, TIO_E_CORRUPT, "ConstantNode.shape",
               "required field");
    tio__fb_builder_free(b);
    b = tio__fb_builder_new("rten");
    OK(tio__fb_finish(b, mkmodel(b, 0, 0), &e));
    buf = tio__fb_buffer(b, &len);
    expect_err(verify_model(buf, len, &e), &e, TIO_E_CORRUPT, "Model.graph",
               "required field (id 1) is missing");
    tio__fb_builder_free(b);
}

/* Graph nested through If: Model -> Graph -> Node -> OperatorNode ->
 * IfAttrs -> Graph ... `levels` times; with `fanout` 2 every level points
 * to the inner graph twice (then and else, and two node entries). */
static uint8_t *build_nested(unsigned levels, bool fanout, size_t *len) {
    tio_error e;
    tio_fb_builder *b = tio__fb_builder_new("rten");
    assert_non_null(b);
    tio_fb_off g = mkgraph(b, NULL, 0);
    for (unsigned i = 0; i < levels; i++) {
        tio_fb_off ia, node;
        OK(tio__fb_start_table(b, &e));
        OK(tio__fb_add_offset(b, RTEN_IfAttrs_then_branch, g, &e));
        if (fanout) OK(tio__fb_add_offset(b, RTEN_IfAttrs_else_branch, g, &e));
        OK(tio__fb_end_table(b, &ia, &e));
        node = mkop(b, "if", 50, RTEN_OperatorAttrs_IfAttrs, ia, NULL, 0);
        tio_fb_off nl[2] = {node, node};
        g = mkgraph(b, nl, fanout ? 2 : 1);
    }
    OK(tio__fb_finish(b, mkmodel(b, g, 0), &e));
    const uint8_t *p = tio__fb_buffer(b, len);
    uint8_t *copy = dup_bytes(p, *len);
    tio__fb_builder_free(b);
    return copy;
}

static void test_depth_and_budget(void **state) {
    (void)state;
    tio_error e;
    size_t len;
    uint8_t *buf = build_nested(100, false, &len);
    /* depth: Model 1, Graph 2, then 4 per level: 402 */
    expect_err(verify_model(buf, len, &e), &e, TIO_E_LIMIT, "OperatorNode.attrs (IfAttrs)",
               "nesting depth 65 exceeds the limit 64");
    tio_fb_limits lim = {402, 1000000, 0, NULL, NULL, NULL, NULL, 0};
    tio_error_clear(&e);
    OK(tio__fb_verify(buf, len, tio__rten_Model, &lim, "rten", 0, &e));
    lim.max_depth = 401;
    expect_err(tio__fb_verify(buf, len, tio__rten_Model, &lim, "rten", 0, &e), &e,
               TIO_E_LIMIT, "IfAttrs.then_branch (Graph)", "depth 402 exceeds the limit 401");
    lim.max_depth = 100000;
    tio_error_clear(&e);
    OK(tio__fb_verify(buf, len, tio__rten_Model, &lim, "rten", 0, &e));
    free(buf);

    /* a DAG: 40 levels of shared subgraphs = 4^40 paths; the budget stops it */
    buf = build_nested(40, true, &len);
    lim.max_depth = 1000;
    lim.max_tables = 100000;
    lim.max_slots = UINT64_MAX; /* the table budget, not the slot budget */
    expect_err(tio__fb_verify(buf, len, tio__rten_Model, &lim, "rten", 0, &e), &e,
               TIO_E_LIMIT, "more than 100000 tables visited", NULL);
    expect_err(tio__fb_verify(buf, len, tio__rten_Model, NULL, "rten", 0, &e), &e,
               TIO_E_LIMIT, NULL, NULL); /* defaults (64 deep, 10^6 tables) */
    free(buf);

    /* many vector entries pointing to one table */
    tio_fb_builder *b = tio__fb_builder_new("rten");
    assert_non_null(b);
    tio_fb_off one = mkvalue(b, "v");
    enum { N = 10000 };
    tio_fb_off *refs = malloc(N * sizeof *refs);
    assert_non_null(refs);
    for (size_t i = 0; i < N; i++) refs[i] = one;
    OK(tio__fb_finish(b, mkmodel(b, mkgraph(b, refs, N), 0), &e));
    free(refs);
    const uint8_t *p = tio__fb_buffer(b, &len);
    /* tables: Model + Graph + N x (Node + ValueNode + 2 Dims) */
    uint64_t total = 2 + 4ull * N;
    lim.max_depth = 64;
    lim.max_tables = total;
    tio_error_clear(&e);
    OK(tio__fb_verify(p, len, tio__rten_Model, &lim, "rten", 0, &e));
    lim.max_tables = total - 1;
    expect_err(tio__fb_verify(p, len, tio__rten_Model, &lim, "rten", 0, &e), &e,
               TIO_E_LIMIT, "table budget", NULL);
    lim.max_tables = 102; /* the 103rd table is node 25 */
    expect_err(tio__fb_verify(p, len, tio__rten_Model, &lim, "rten", 0, &e), &e,
               TIO_E_LIMIT, "Graph.nodes[25] (Node)", "more than 102 tables");
    tio__fb_builder_free(b);
}

/* One ValueNode whose tables (Node, ValueNode) have vtables of `slots`
 * slots (an unknown field at the last id), referenced n times. */
static uint8_t *build_wide_shared(unsigned slots, size_t n, size_t *len) {
    tio_error e;
    tio_fb_builder *b = tio__fb_builder_new("rten");
    assert_non_null(b);
    tio_fb_off vn, node;
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_u8_default(b, RTEN_ValueNode_dtype, 1, 0, &e));
    OK(tio__fb_add_scalar(b, slots - 1, 1, 1, &e));
    OK(tio__fb_end_table(b, &vn, &e));
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_scalar(b, RTEN_Node_data_type, RTEN_NodeKind_ValueNode, 1, &e));
    OK(tio__fb_add_offset(b, RTEN_Node_data, vn, &e));
    OK(tio__fb_add_scalar(b, slots - 1, 1, 1, &e));
    OK(tio__fb_end_table(b, &node, &e));
    tio_fb_off *refs = malloc(n * sizeof *refs);
    assert_non_null(refs);
    for (size_t i = 0; i < n; i++) refs[i] = node;
    OK(tio__fb_finish(b, mkmodel(b, mkgraph(b, refs, n), 0), &e));
    free(refs);
    const uint8_t *p = tio__fb_buffer(b, len);
    uint8_t *copy = malloc(*len);
    assert_non_null(copy);
    memcpy(copy, p, *len);
    tio__fb_builder_free(b);
    return copy;
}

/* The slot budget: a reader that scans every vtable slot of every table it
 * visits (rten looks for fields of a newer schema) must do work linear in
 * the buffer even when one wide vtable serves many tables. */
static void test_slot_budget(void **state) {
    (void)state;
    tio_error e;
    size_t len;
    /* 2 vtables of 16,000 slots (64 KB), 2,000 references: 64 M slots
     * visited for a ~72 KB buffer before the budget existed */
    uint8_t *buf = build_wide_shared(16000, 2000, &len);
    assert_true(len < 80000);
    expect_err(tio__fb_verify(buf, len, tio__rten_Model, NULL, "rten", 0, &e), &e,
               TIO_E_LIMIT, "vtable slots in total", "slot budget exhausted");
    /* the default is 2 per byte + 4096 */
    char want[64];
    snprintf(want, sizeof want, "more than %llu vtable slots",
             (unsigned long long)(2 * (uint64_t)len + 4096));
    assert_non_null(strstr(e.message, want));
    /* an explicit budget: exactly what the walk needs passes, one less fails.
     * Model (2 slots: schema_version, graph) + Graph (1) + 2,000 x (Node +
     * ValueNode) */
    tio_fb_limits lim = {64, 1000000, 0, NULL, NULL, NULL, NULL, 0};
    lim.max_slots = 2 + 1 + 2000ull * 2 * 16000;
    OK(tio__fb_verify(buf, len, tio__rten_Model, &lim, "rten", 0, &e));
    lim.max_slots--;
    expect_err(tio__fb_verify(buf, len, tio__rten_Model, &lim, "rten", 0, &e), &e,
               TIO_E_LIMIT, "slot budget exhausted", NULL);
    free(buf);
    /* narrow vtables, the same references: well inside the default */
    buf = build_wide_shared(4, 2000, &len);
    OK(tio__fb_verify(buf, len, tio__rten_Model, NULL, "rten", 0, &e));
    free(buf);
    /* through the reader: TIO_E_LIMIT, not 64 M slot scans */
    buf = build_wide_shared(16000, 2000, &len);
    tio_open_options o = {0};
    o.format = "rten";
    tio_container *c = NULL;
    expect_err(tio_open_memory(buf, len, &o, &c, &e), &e, TIO_E_LIMIT, "slot budget", NULL);
    assert_null(c);
    free(buf);
}

/* ---------------------------------------------------- 4. random mutation */

static void test_mutations(void **state) {
    (void)state;
    model m;
    if (!load_model("rten/small_cnn/small_cnn.v1.rten", &m)) skip();
    uint64_t seed = 0x9E3779B97F4A7C15ULL;
    size_t oks = 0, codes[16] = {0};
    /* the structure (everything but the big float vectors) is at both ends
     * of the buffer; half the mutations hit the first/last 1 KiB */
    for (int it = 0; it < 20000; it++) {
        uint8_t *p = dup_bytes(m.buf, m.len);
        int nmut = 1 + (int)(rnd(&seed) % 4);
        for (int k = 0; k < nmut; k++) {
            uint64_t r = rnd(&seed);
            size_t pos;
            if (r & 1) {
                size_t span = m.len < 1024 ? m.len : 1024;
                pos = (size_t)((r >> 8) % span);
                if (r & 2) pos = m.len - 1 - pos;
            } else {
                pos = (size_t)((r >> 8) % m.len);
            }
            switch ((r >> 40) % 6) {
            case 0: p[pos] = (uint8_t)(r >> 48); break;
            case 1: p[pos] ^= (uint8_t)(1u << ((r >> 48) % 8)); break;
            case 2: p[pos] = 0; break;
            case 3: p[pos] = 0xFF; break;
            case 4: p[pos] = (uint8_t)(p[pos] + 4); break;
            default:
                pos &= ~(size_t)3;
                if (pos + 4 <= m.len) put32(p + pos, (uint32_t)(r >> 32) % 5000);
                break;
            }
        }
        tio_error e;
        tio_error_clear(&e);
        int rc = tio__fb_verify(p, m.len, tio__rten_Model, &LIM, "rten", 0, &e);
        assert_true(rc == TIO_OK || rc == TIO_E_TRUNCATED || rc == TIO_E_BOUNDS ||
                    rc == TIO_E_CORRUPT || rc == TIO_E_LIMIT);
        codes[rc]++;
        if (rc == TIO_OK) {
            oks++;
            walk_buffer(p, m.len, tio__rten_Model, true);
        } else {
            assert_int_equal(e.code, rc);
            assert_non_null(strstr(e.message, "rten: offset "));
            walk_buffer(p, m.len, tio__rten_Model, false);
        }
        free(p);
    }
    print_message("mutations: %zu ok, %zu truncated, %zu bounds, %zu corrupt, %zu limit\n",
                  oks, codes[TIO_E_TRUNCATED], codes[TIO_E_BOUNDS], codes[TIO_E_CORRUPT],
                  codes[TIO_E_LIMIT]);
    assert_true(oks > 0 && oks < 20000);
    free(m.buf);

    /* the builder's Root buffer: string vectors, u64 vectors, a union */
    size_t len;
    uint8_t *good = build_root(&len);
    oks = 0;
    for (int it = 0; it < 5000; it++) {
        uint8_t *p = dup_bytes(good, len);
        int nmut = 1 + (int)(rnd(&seed) % 3);
        for (int k = 0; k < nmut; k++) {
            uint64_t r = rnd(&seed);
            size_t pos = (size_t)(r % len);
            if ((r >> 32) & 1)
                p[pos] = (uint8_t)(r >> 40);
            else
                p[pos] = (uint8_t)(p[pos] + 1 + ((r >> 40) % 8));
        }
        tio_error e;
        int rc = verify_root(p, len, &e);
        if (rc == TIO_OK) oks++;
        else assert_int_equal(e.code, rc);
        walk_buffer(p, len, &t_root, rc == TIO_OK);
        free(p);
    }
    assert_true(oks > 0 && oks < 5000);
    free(good);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_vectors),
        cmocka_unit_test(test_small_cnn_facts),
        cmocka_unit_test(test_builder_roundtrip),
        cmocka_unit_test(test_builder_alignment),
        cmocka_unit_test(test_blobs),
        cmocka_unit_test(test_builder_vtables),
        cmocka_unit_test(test_builder_errors),
        cmocka_unit_test(test_builder_growth),
        cmocka_unit_test(test_truncations),
        cmocka_unit_test(test_bad_root_and_table_header),
        cmocka_unit_test(test_crafted_fields_and_strings),
        cmocka_unit_test(test_crafted_vectors),
        cmocka_unit_test(test_unions_and_required),
        cmocka_unit_test(test_depth_and_budget),
        cmocka_unit_test(test_slot_budget),
        cmocka_unit_test(test_mutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
