/* What the two FlatBuffers test programs share (test_flatbuf.c: real rten
 * buffers and the builder; test_flatbuf_hostile.c: crafted and mutated
 * buffers): error checks, limits, byte helpers, the vectors' models, a
 * schema-driven walk of every field, and builders of small rten models. */
#ifndef TIO_TEST_FLATBUF_COMMON_H
#define TIO_TEST_FLATBUF_COMMON_H

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
static inline void expect_err(int rc, const tio_error *e, int code, const char *s1,
                              const char *s2) {
    if (rc != code || (s1 && !strstr(e->message, s1)) || (s2 && !strstr(e->message, s2)))
        print_message("expected %s [%s] [%s], got %s: %s\n", tio_status_name(code),
                      s1 ? s1 : "", s2 ? s2 : "", tio_status_name(rc), e->message);
    assert_int_equal(rc, code);
    assert_int_equal(e->code, code);
    if (s1) assert_non_null(strstr(e->message, s1));
    if (s2) assert_non_null(strstr(e->message, s2));
}

static const tio_fb_limits LIM = {64, 1000000, 0, NULL, NULL, NULL, NULL, 0};

static inline int verify_model(const uint8_t *buf, size_t len, tio_error *e) {
    tio_error_clear(e);
    return tio__fb_verify(buf, len, tio__rten_Model, &LIM, "rten", 0, e);
}

static inline uint8_t *dup_bytes(const uint8_t *p, size_t n) {
    uint8_t *q = malloc(n ? n : 1);
    assert_non_null(q);
    if (n) memcpy(q, p, n);
    return q;
}

static inline void put16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* xorshift64*, fixed seeds */
static inline uint64_t rnd(uint64_t *s) {
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

static inline bool load_model(const char *rel, model *m) {
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

static inline void walk_table(walker *w, const tio_fb_ref *t, const tio_fb_table *s,
                              unsigned depth);

static inline void walk_vector(walker *w, const tio_fb_vec *v, const tio_fb_field *f,
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

static inline void walk_table(walker *w, const tio_fb_ref *t, const tio_fb_table *s,
                              unsigned depth) {
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

static inline size_t walk_buffer(const uint8_t *buf, size_t len, const tio_fb_table *root,
                                 bool verified) {
    walker w = {verified, 1000000, 0, 0};
    tio_fb_ref r;
    bool ok = tio__fb_root(buf, len, &r);
    if (verified) assert_true(ok);
    if (ok) walk_table(&w, &r, root, 1);
    return w.tables;
}


/* ------------------------------------- builders of small rten models */

static inline tio_fb_off mkstr(tio_fb_builder *b, const char *s) {
    tio_error e;
    tio_fb_off o = 0;
    OK(tio__fb_create_string(b, s, strlen(s), &o, &e));
    assert_true(o != 0);
    return o;
}

static inline tio_fb_off mkvec32(tio_fb_builder *b, const void *data, size_t n) {
    tio_error e;
    tio_fb_off o = 0;
    OK(tio__fb_create_vector(b, data, n, 4, 4, &o, &e));
    return o;
}

static inline tio_fb_off mknode(tio_fb_builder *b, const char *name, uint8_t kind,
                                tio_fb_off data) {
    tio_error e;
    tio_fb_off nm = mkstr(b, name), o;
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_offset(b, RTEN_Node_name, nm, &e));
    OK(tio__fb_add_scalar(b, RTEN_Node_data_type, kind, 1, &e));
    OK(tio__fb_add_offset(b, RTEN_Node_data, data, &e));
    OK(tio__fb_end_table(b, &o, &e));
    return o;
}

static inline tio_fb_off mkvalue(tio_fb_builder *b, const char *name) {
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

static inline tio_fb_off mkop(tio_fb_builder *b, const char *name, uint8_t type, uint8_t atag,
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

static inline tio_fb_off mkgraph(tio_fb_builder *b, const tio_fb_off *nodes, size_t n) {
    tio_error e;
    tio_fb_off nv, g;
    OK(tio__fb_create_offset_vector(b, nodes, n, &nv, &e));
    OK(tio__fb_start_table(b, &e));
    OK(tio__fb_add_offset(b, RTEN_Graph_nodes, nv, &e));
    OK(tio__fb_end_table(b, &g, &e));
    return g;
}

static inline tio_fb_off mkmodel(tio_fb_builder *b, tio_fb_off graph, tio_fb_off meta) {
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

static inline tio_fb_off mkleaf(tio_fb_builder *b, uint64_t x, const char *name) {
    tio_error e;
    tio_fb_off nm = name ? mkstr(b, name) : 0, o;
    OK(tio__fb_start_table(b, &e));
    if (x) OK(tio__fb_add_scalar(b, 0, x, 8, &e));
    OK(tio__fb_add_offset(b, 1, nm, &e));
    OK(tio__fb_end_table(b, &o, &e));
    return o;
}

/* Root { a, v:[u32], big:[u64] (align 16), names, leaves, k: Leaf, self: Root{a} } */
static inline uint8_t *build_root(size_t *len) {
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

static inline int verify_root(const uint8_t *buf, size_t len, tio_error *e) {
    tio_error_clear(e);
    return tio__fb_verify(buf, len, &t_root, &LIM, "test", 0, e);
}

#endif
