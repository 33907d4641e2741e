/*
 * The rten <-> ONNX mapping (src/rten/opmap.c): the table is consistent with
 * the schema; every rten vector reads as the ONNX nodes of the .onnx beside
 * it (python3-onnx's reading); a graph built in ONNX form lowers to rten and
 * reads back equal; unsupported operators are listed in one error; an .rten
 * saved in memory from an .onnx has rten-convert's onnx_hash.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rten/opmap.h"
#include "rten/schema.h"
#include "tvec.h"
#include "tensio.h"

/* Every field of every attrs table is mapped, once, to an ONNX attribute or
 * an rten.* name; ONNX names are unique per op; the types agree. */
static void test_table_consistent(void **state) {
    (void)state;
    for (unsigned k = 0; k < TIO_RTEN_OP_COUNT; k++) {
        const tio_rten_opmap *m = &tio__rten_opmap[k];
        assert_non_null(m->onnx);
        assert_string_equal(m->onnx, tio__rten_ops[k].name);
        assert_int_equal(m->attrs, tio__rten_ops[k].attrs);
        if (!m->attrs) {
            assert_int_equal(m->nfields, 0);
            continue;
        }
        const tio_fb_table *t = tio__rten_union_OperatorAttrs->members[m->attrs - 1];
        unsigned want = 0;
        for (unsigned f = 0; f < t->nfields; f++) {
            const tio_fb_field *fd = &t->fields[f];
            if (fd->kind == TIO_FB_NONE) continue;
            want++;
            const tio_rten_fmap *fm = tio__rten_fmap_field(m, fd->name);
            if (!fm) fail_msg("%s: field %s.%s is not mapped", m->onnx, t->name, fd->name);
            if (!fm->onnx) continue;
            assert_ptr_equal(tio__rten_fmap_onnx(m, fm->onnx), fm); /* unique */
            if (fm->conv == TIO_RTEN_ENUM || fm->conv == TIO_RTEN_AUTOPAD) {
                assert_int_equal(fm->type, TIO_ATTR_STRING);
                assert_non_null(fd->enum_name);
                for (unsigned e = 0; e < fm->nstrs; e++)
                    assert_non_null(tio__rten_enum_name(fd->enum_name, e));
                assert_null(tio__rten_enum_name(fd->enum_name, fm->nstrs));
            } else if (fd->kind == TIO_FB_VECTOR) {
                assert_int_equal(fm->type, TIO_ATTR_INTS);
            } else if (fd->kind == TIO_FB_F32) {
                assert_int_equal(fm->type, TIO_ATTR_FLOAT);
            } else if (fd->kind == TIO_FB_STRING) {
                assert_int_equal(fm->type, TIO_ATTR_STRING);
            } else if (fd->kind == TIO_FB_TABLE) {
                assert_int_equal(fm->type, TIO_ATTR_GRAPH);
            } else if (fd->kind != TIO_FB_UNION) {
                assert_int_equal(fm->type, TIO_ATTR_INT);
            }
        }
        assert_int_equal(m->nfields, want);
    }
    for (int64_t v = 0; v < 4; v++)
        assert_int_equal(tio__rten_dtype_from_onnx(tio__rten_dtype_to_onnx(v)), v);
}

/* An rten attribute the .onnx node does not have must hold ONNX's default
 * (rten-convert writes every field). */
static void check_default(const char *op, const tio_rten_opmap *m, const tio_attr *a) {
    if (strncmp(a->name, "rten.", 5) == 0) return;
    const tio_rten_fmap *fm = tio__rten_fmap_onnx(m, a->name);
    if (!fm || !fm->has_def) fail_msg("%s: attribute %s not in the .onnx and has no default", op, a->name);
    switch (a->type) {
    case TIO_ATTR_INT: assert_int_equal(a->i, fm->idef); break;
    case TIO_ATTR_FLOAT: assert_true((float)a->f == (float)fm->fdef); break;
    case TIO_ATTR_STRING: assert_string_equal(a->s, fm->sdef); break;
    case TIO_ATTR_INTS:
        assert_int_equal(a->count, fm->nvdef);
        for (size_t k = 0; k < a->count; k++) assert_int_equal(a->ints[k], fm->vdef[k]);
        break;
    default: fail_msg("%s: %s", op, a->name);
    }
}

static void compare_with_onnx(const char *name) {
    char rel[256], cmd[2048], srcdir[1024];
    snprintf(srcdir, sizeof srcdir, "%s", __FILE__);
    char *slash = strrchr(srcdir, '/');
    if (slash) *slash = 0;
    snprintf(rel, sizeof rel, "rten/%s/%s.onnx", name, name);
    char *onnx = tvec_path(rel);
    for (int v = 1; v <= 2; v++) {
        snprintf(rel, sizeof rel, "rten/%s/%s.v%d.rten", name, name, v);
        char *path = tvec_path(rel);
        tio_error e;
        tio_container *c = NULL;
        if (tio_open(path, NULL, &c, &e) != TIO_OK) fail_msg("%s: %s", path, e.message);
        const tio_graph *g = tio_container_graph(c);
        /* the script is tests/rten_onnx_attrs.py, beside this file's folder */
        snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/../rten_onnx_attrs.py' '%s'", srcdir,
                 onnx);
        FILE *p = popen(cmd, "r");
        assert_non_null(p);
        char line[65536];
        size_t j = 0;
        while (fgets(line, sizeof line, p)) {
            json_error_t je;
            json_t *n = json_loads(line, 0, &je);
            assert_non_null(n);
            tio_node_info ni;
            /* Expected difference: none of the vectors has a Constant node
             * (rten-convert would make it a constant, not an operator). */
            assert_int_equal(tio_graph_node(g, j, &ni), TIO_OK);
            const char *op = json_string_value(json_object_get(n, "op"));
            assert_string_equal(ni.op, op);
            assert_true(ni.native_id >= 0 && ni.native_id < TIO_RTEN_OP_COUNT);
            const tio_rten_opmap *m = &tio__rten_opmap[ni.native_id];
            json_t *attrs = json_object_get(n, "attrs");
            const char *key;
            json_t *val;
            json_object_foreach(attrs, key, val) {
                tio_attr a;
                /* Expected difference: Conv's kernel_shape is dropped by
                 * rten-convert (rten takes it from the weights). */
                if (!strcmp(op, "Conv") && !strcmp(key, "kernel_shape")) continue;
                if (tio_graph_find_attr(g, j, key, &a) != TIO_OK)
                    fail_msg("%s node %zu (%s): no attribute %s", rel, j, op, key);
                if (json_is_integer(val)) assert_int_equal(a.i, json_integer_value(val));
                else if (json_is_real(val)) assert_true((float)a.f == (float)json_real_value(val));
                else if (json_is_string(val)) assert_string_equal(a.s, json_string_value(val));
                else if (json_is_array(val)) {
                    assert_int_equal(a.count, json_array_size(val));
                    for (size_t k = 0; k < a.count; k++)
                        assert_int_equal(a.ints[k], json_integer_value(json_array_get(val, k)));
                } else fail_msg("%s: attribute %s of an unexpected kind", rel, key);
            }
            for (size_t k = 0; k < ni.attr_count; k++) {
                tio_attr a;
                assert_int_equal(tio_graph_attr(g, j, k, &a), TIO_OK);
                if (!json_object_get(attrs, a.name)) check_default(op, m, &a);
            }
            json_decref(n);
            j++;
        }
        assert_int_equal(pclose(p), 0);
        assert_int_equal(j, tio_graph_node_count(g));
        tio_container_free(c);
        free(path);
    }
    free(onnx);
}

static void test_vectors_as_onnx(void **state) {
    (void)state;
    if (!tvec_have_shared()) {
        tvec_note_shared();
        skip();
    }
    if (system("/usr/bin/python3 -c 'import onnx' 2>/dev/null") != 0) {
        print_message("python3-onnx not installed: skipped\n");
        skip();
    }
    const char *names[] = {"big_init", "int_consts", "matmul_add", "shape_ops", "small_cnn"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) compare_with_onnx(names[k]);
}

/* onnx_hash is hashed on a thread while the rest is written, then patched
 * into its placeholder: in a memory save too (the file saves are compared
 * with the reference .rten by cli_convert_rten). */
static void test_onnx_hash_in_memory(void **state) {
    (void)state;
    if (!tvec_have_shared()) {
        tvec_note_shared();
        skip();
    }
    const char *names[] = {"big_init", "int_consts", "matmul_add", "shape_ops", "small_cnn"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        char rel[128];
        snprintf(rel, sizeof rel, "rten/%s/%s.json", names[k], names[k]);
        json_t *m = tvec_manifest(rel);
        assert_non_null(m);
        const char *want = json_string_value(json_object_get(json_object_get(m, "metadata"),
                                                             "onnx_hash"));
        assert_non_null(want);
        snprintf(rel, sizeof rel, "rten/%s/%s.onnx", names[k], names[k]);
        char *path = tvec_path(rel);
        tio_container *c = NULL, *back = NULL;
        tio_error e;
        if (tio_open(path, NULL, &c, &e) != TIO_OK) fail_msg("%s: %s", path, e.message);
        for (int version = 1; version <= 2; version++) {
            tio_save_options so = {0};
            so.format = "rten";
            so.version = (unsigned)version;
            void *buf = NULL;
            size_t len = 0;
            if (tio_save_memory(c, &so, &buf, &len, &e) != TIO_OK) fail_msg("%s", e.message);
            tio_open_options oo = {0};
            oo.format = "rten";
            if (tio_open_memory(buf, len, &oo, &back, &e) != TIO_OK) fail_msg("%s", e.message);
            const char *got = tio_graph_meta_get(tio_container_graph(back), "onnx_hash");
            assert_non_null(got);
            assert_string_equal(got, want);
            tio_container_free(back);
            tio_free(buf);
        }
        tio_container_free(c);
        free(path);
        json_decref(m);
    }
}

static size_t add_node(tio_graph *g, const char *op, int64_t in, int64_t out) {
    tio_node_info n = {0};
    n.op = op;
    n.native_id = -1;
    n.inputs = &in;
    n.input_count = 1;
    n.outputs = &out;
    n.output_count = 1;
    size_t j;
    tio_error e;
    assert_int_equal(tio_graph_add_node(g, &n, &j, &e), TIO_OK);
    return j;
}

static void add_attr(tio_graph *g, size_t j, tio_attr a) {
    tio_error e;
    assert_int_equal(tio_graph_add_attr(g, j, &a, &e), TIO_OK);
}

static tio_container *onnx_model(const char *extra1, const char *extra2) {
    tio_container *c = tio_container_new();
    tio_graph *g;
    tio_error e;
    assert_int_equal(tio_container_new_graph(c, &g, &e), TIO_OK);
    size_t v[4];
    for (int k = 0; k < 4; k++) {
        tio_value_info vi = {0};
        vi.dtype = TIO_FLOAT32;
        vi.rank = -1;
        vi.tensor = -1;
        assert_int_equal(tio_graph_add_value(g, &vi, &v[k], &e), TIO_OK);
    }
    static const int64_t ks[2] = {3, 3}, st[2] = {2, 2}, pads[4] = {1, 1, 1, 1};
    size_t j = add_node(g, "Conv", (int64_t)v[0], (int64_t)v[1]);
    add_attr(g, j, (tio_attr){.name = "group", .type = TIO_ATTR_INT, .i = 2});
    add_attr(g, j, (tio_attr){.name = "kernel_shape", .type = TIO_ATTR_INTS, .ints = ks, .count = 2});
    add_attr(g, j, (tio_attr){.name = "strides", .type = TIO_ATTR_INTS, .ints = st, .count = 2});
    add_attr(g, j, (tio_attr){.name = "auto_pad", .type = TIO_ATTR_STRING, .s = "SAME_UPPER"});
    j = add_node(g, "MaxPool", (int64_t)v[1], (int64_t)v[2]);
    add_attr(g, j, (tio_attr){.name = "kernel_shape", .type = TIO_ATTR_INTS, .ints = ks, .count = 2});
    add_attr(g, j, (tio_attr){.name = "pads", .type = TIO_ATTR_INTS, .ints = pads, .count = 4});
    j = add_node(g, "Gemm", (int64_t)v[2], (int64_t)v[3]);
    add_attr(g, j, (tio_attr){.name = "transB", .type = TIO_ATTR_INT, .i = 1});
    if (extra1) add_node(g, extra1, (int64_t)v[3], (int64_t)v[3]);
    if (extra2) add_node(g, extra2, (int64_t)v[3], (int64_t)v[3]);
    if (extra1) add_node(g, extra1, (int64_t)v[3], (int64_t)v[3]);
    return c;
}

static void test_lower_api_graph(void **state) {
    (void)state;
    tio_container *c = onnx_model(NULL, NULL);
    tio_save_options so = {0};
    so.format = "rten";
    void *buf = NULL;
    size_t len = 0;
    tio_error e;
    if (tio_save_memory(c, &so, &buf, &len, &e) != TIO_OK) fail_msg("%s", e.message);
    tio_container_free(c);
    tio_open_options oo = {0};
    oo.format = "rten";
    tio_container *back = NULL;
    if (tio_open_memory(buf, len, &oo, &back, &e) != TIO_OK) fail_msg("%s", e.message);
    const tio_graph *g = tio_container_graph(back);
    tio_attr a;
    assert_int_equal(tio_graph_find_attr(g, 0, "group", &a), TIO_OK);
    assert_int_equal(a.i, 2);
    assert_int_equal(tio_graph_find_attr(g, 0, "auto_pad", &a), TIO_OK);
    assert_string_equal(a.s, "SAME_UPPER");
    assert_int_not_equal(tio_graph_find_attr(g, 0, "pads", &a), TIO_OK); /* Same: no pads */
    assert_int_equal(tio_graph_find_attr(g, 0, "dilations", &a), TIO_OK); /* rten-convert's default */
    assert_int_equal(a.count, 2);
    assert_int_equal(tio_graph_find_attr(g, 1, "kernel_shape", &a), TIO_OK);
    assert_int_equal(a.ints[0], 3);
    assert_int_equal(tio_graph_find_attr(g, 1, "auto_pad", &a), TIO_OK);
    assert_string_equal(a.s, "NOTSET");
    assert_int_equal(tio_graph_find_attr(g, 2, "transB", &a), TIO_OK);
    assert_int_equal(a.i, 1);
    assert_int_equal(tio_graph_find_attr(g, 2, "alpha", &a), TIO_OK);
    assert_true(a.f == 1.0); /* ONNX's default, written as rten-convert does */
    tio_container_free(back);
    tio_free(buf);

    /* every unsupported op type, sorted, once */
    c = onnx_model("FooOp", "BarOp");
    assert_int_equal(tio_check_save(c, &so, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "2 operator types of the model: BarOp, FooOp"));
    tio_container_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_consistent),
        cmocka_unit_test(test_vectors_as_onnx),
        cmocka_unit_test(test_lower_api_graph),
        cmocka_unit_test(test_onnx_hash_in_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
