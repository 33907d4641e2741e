/*
 * tio__graph_fold_transposes (src/graph/layout.c): Transpose pairs that
 * cancel, directly and across elementwise chains; pairs that do not cancel,
 * graph outputs and shared values are left as they are.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "graph/graph.h"
#include "tensio.h"

static const int64_t TO_NCHW[4] = {0, 3, 1, 2}, TO_NHWC[4] = {0, 2, 3, 1};

static size_t val(tio_graph *g, const char *name, const int64_t *d) {
    tio_dim dims[4];
    for (int k = 0; k < 4; k++) dims[k] = (tio_dim){d[k], NULL};
    tio_value_info v = {.name = name, .dtype = TIO_FLOAT32, .rank = 4, .dims = dims,
                        .tensor = -1};
    size_t ix;
    tio_error e;
    assert_int_equal(tio_graph_add_value(g, &v, &ix, &e), TIO_OK);
    return ix;
}

static void node(tio_graph *g, const char *op, size_t in, size_t out, const int64_t *perm) {
    int64_t i = (int64_t)in, o = (int64_t)out;
    tio_node_info n = {.op = op, .native_id = -1, .input_count = 1, .inputs = &i,
                       .output_count = 1, .outputs = &o};
    size_t ix;
    tio_error e;
    assert_int_equal(tio_graph_add_node(g, &n, &ix, &e), TIO_OK);
    if (perm) {
        tio_attr a = {.name = "perm", .type = TIO_ATTR_INTS, .count = 4, .ints = perm};
        assert_int_equal(tio_graph_add_attr(g, ix, &a, &e), TIO_OK);
    }
}

static const int64_t nhwc[4] = {1, 4, 5, 3}, nchw[4] = {1, 3, 4, 5};

static tio_graph *new_graph(tio_container *c) {
    tio_graph *g = NULL;
    tio_error e;
    assert_non_null(c);
    assert_int_equal(tio_container_new_graph(c, &g, &e), TIO_OK);
    return g;
}

static const char *op_of(const tio_graph *g, size_t i) {
    tio_node_info n;
    assert_int_equal(tio_graph_node(g, i, &n), TIO_OK);
    return n.op;
}

/* x -> T(nchw) -> Relu -> Sigmoid -> T(nhwc) -> y: Relu, Sigmoid on x */
static void test_across_chain(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    tio_graph *g = new_graph(c);
    tio_error e;
    size_t x = val(g, "x", nhwc), a = val(g, "a", nchw), b = val(g, "b", nchw),
           d = val(g, "d", nchw), y = val(g, "y", nhwc);
    node(g, "Transpose", x, a, TO_NCHW);
    node(g, "Relu", a, b, NULL);
    node(g, "Sigmoid", b, d, NULL);
    node(g, "Transpose", d, y, TO_NHWC);
    int64_t xi = (int64_t)x, yi = (int64_t)y;
    assert_int_equal(tio_graph_set_inputs(g, &xi, 1, &e), TIO_OK);
    assert_int_equal(tio_graph_set_outputs(g, &yi, 1, &e), TIO_OK);
    size_t removed = 0;
    assert_int_equal(tio__graph_fold_transposes(g, &removed, &e), TIO_OK);
    assert_int_equal(removed, 2);
    assert_int_equal(tio_graph_node_count(g), 2);
    assert_string_equal(op_of(g, 0), "Relu");
    assert_string_equal(op_of(g, 1), "Sigmoid");
    tio_node_info n;
    tio_graph_node(g, 0, &n);
    assert_int_equal(n.inputs[0], (int64_t)x);
    tio_graph_node(g, 1, &n);
    assert_int_equal(n.outputs[0], (int64_t)y);
    /* the value between now holds x's layout */
    tio_value_info v;
    tio_graph_value(g, b, &v);
    assert_int_equal(v.dims[1].value, 4);
    assert_int_equal(v.dims[3].value, 3);
    /* what is left (the orphaned value "d" too) is a model ONNX writes */
    tio_save_options so = {.format = "onnx"};
    void *out = NULL;
    size_t len = 0;
    assert_int_equal(tio_save_memory(c, &so, &out, &len, &e), TIO_OK);
    tio_container *back = NULL;
    tio_open_options oo = {.format = "onnx"};
    assert_int_equal(tio_open_memory(out, len, &oo, &back, &e), TIO_OK);
    assert_int_equal(tio_graph_node_count(tio_container_graph(back)), 2);
    tio_container_free(back);
    tio_free(out);
    tio_container_free(c);
}

/* direct pairs: readers of the second read x; a graph output, a pair that
 * does not cancel and a value read twice stay */
static void test_direct(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    tio_graph *g = new_graph(c);
    tio_error e;
    size_t x = val(g, "x", nhwc), a = val(g, "a", nchw), b = val(g, "b", nhwc),
           r = val(g, "r", nhwc), a2 = val(g, "a2", nchw), b2 = val(g, "b2", nchw),
           s = val(g, "s", nchw), t = val(g, "t", nchw);
    node(g, "Transpose", x, a, TO_NCHW);
    node(g, "Transpose", a, b, TO_NHWC); /* cancels */
    node(g, "Relu", b, r, NULL);         /* reads x afterwards */
    node(g, "Transpose", x, a2, TO_NCHW);
    node(g, "Transpose", a2, b2, TO_NCHW); /* does not cancel */
    node(g, "Relu", b2, s, NULL);
    node(g, "Relu", a, t, NULL); /* a is read twice: its Transpose stays */
    int64_t xi = (int64_t)x, outs[3] = {(int64_t)r, (int64_t)s, (int64_t)t};
    assert_int_equal(tio_graph_set_inputs(g, &xi, 1, &e), TIO_OK);
    assert_int_equal(tio_graph_set_outputs(g, outs, 3, &e), TIO_OK);
    size_t removed = 0;
    assert_int_equal(tio__graph_fold_transposes(g, &removed, &e), TIO_OK);
    assert_int_equal(removed, 1);
    assert_int_equal(tio_graph_node_count(g), 6);
    tio_node_info n;
    tio_graph_node(g, 1, &n);
    assert_string_equal(n.op, "Relu");
    assert_int_equal(n.inputs[0], (int64_t)x);
    tio_container_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_across_chain),
        cmocka_unit_test(test_direct),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
