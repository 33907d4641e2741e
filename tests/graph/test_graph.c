/* Model graphs: building through the public API, reading back, every builder
 * rejection, saving a container with a graph, and freeing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "tensio.h"

/* ------------------------------------------------------------ fixtures */

/* Tensors: 0 "w" float32 [2, 3], 1 unnamed float32 [3], 2 "shape" int64 [2]. */
static tio_container *make_container(void) {
    tio_container *c = tio_container_new();
    assert_non_null(c);
    static const float w[6] = {1, 2, 3, 4, 5, 6};
    static const float b[3] = {0.5f, -1, 2};
    static const int64_t shp[2] = {-1, 3};
    static const int64_t s_w[2] = {2, 3}, s_b[1] = {3}, s_s[1] = {2};
    tio_tensor_desc d;
    tio_error e;
    memset(&d, 0, sizeof d);
    d.name = "w", d.dtype = TIO_FLOAT32, d.rank = 2, d.shape = s_w, d.data = w,
    d.nbytes = sizeof w;
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
    d.name = NULL, d.rank = 1, d.shape = s_b, d.data = b, d.nbytes = sizeof b;
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
    d.name = "shape", d.dtype = TIO_INT64, d.shape = s_s, d.data = shp,
    d.nbytes = sizeof shp;
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
    return c;
}

static size_t add_value(tio_graph *g, const char *name, tio_dtype dt, int64_t rank,
                        const tio_dim *dims, int64_t tensor) {
    tio_value_info v;
    tio_error e;
    memset(&v, 0, sizeof v);
    v.name = name;
    v.dtype = dt;
    v.rank = rank;
    v.dims = dims;
    v.tensor = tensor;
    size_t idx = (size_t)-1;
    int rc = tio_graph_add_value(g, &v, &idx, &e);
    if (rc) fprintf(stderr, "add_value: %s\n", e.message);
    assert_int_equal(rc, TIO_OK);
    return idx;
}

static size_t add_node(tio_graph *g, const char *name, const char *op, const char *native,
                       int64_t id, const int64_t *in, size_t nin, const int64_t *out,
                       size_t nout) {
    tio_node_info n;
    tio_error e;
    memset(&n, 0, sizeof n);
    n.name = name;
    n.op = op;
    n.native_op = native;
    n.native_id = id;
    n.inputs = in;
    n.input_count = nin;
    n.outputs = out;
    n.output_count = nout;
    size_t idx = (size_t)-1;
    int rc = tio_graph_add_node(g, &n, &idx, &e);
    if (rc) fprintf(stderr, "add_node: %s\n", e.message);
    assert_int_equal(rc, TIO_OK);
    return idx;
}

static void add_attr_ok(tio_graph *g, size_t node, const tio_attr *a) {
    tio_error e;
    int rc = tio_graph_add_attr(g, node, a, &e);
    if (rc) fprintf(stderr, "add_attr: %s\n", e.message);
    assert_int_equal(rc, TIO_OK);
}

static tio_attr attr(const char *name, tio_attr_type t) {
    tio_attr a;
    memset(&a, 0, sizeof a);
    a.name = name;
    a.type = t;
    return a;
}

/* Builds the model used by several tests:
 *   values 0 x (float32 [batch, 3, ?]), 1 w (const 0), 2 (const 1, unnamed),
 *          3 y (unknown), 4 z (float32 [batch])
 *   node 0 "gemm": Gemm [FullyConnected, 7] (x, w, #2) -> (y), attributes of
 *          every scalar/list/tensor type
 *   node 1: If (y, -) -> (z), then_branch/else_branch subgraphs
 *   then_branch captures its value 0 (y), outputs value 1 via Identity. */
static tio_graph *build(tio_container *c, tio_graph **then_out, tio_graph **else_out) {
    tio_graph *g = NULL;
    tio_error e;
    assert_int_equal(tio_container_new_graph(c, &g, &e), TIO_OK);
    assert_non_null(g);
    assert_ptr_equal(tio_container_graph(c), g);

    char batch[8] = "batch";
    tio_dim dims[3] = {{0, batch}, {3, NULL}, {-1, NULL}};
    assert_int_equal(add_value(g, "x", TIO_FLOAT32, 3, dims, -1), 0);
    /* Everything is copied: clobber the caller's buffers. */
    strcpy(batch, "XXXX");
    dims[0].value = 99;
    /* dtype/rank/dims of a constant come from the tensor, whatever is passed. */
    assert_int_equal(add_value(g, "w", TIO_INT8, 7, NULL, 0), 1);
    assert_int_equal(add_value(g, "", TIO_DTYPE_INVALID, -1, NULL, 1), 2);
    assert_int_equal(add_value(g, "y", TIO_DTYPE_INVALID, -1, NULL, -1), 3);
    tio_dim zd[1] = {{0, "batch"}};
    assert_int_equal(add_value(g, "z", TIO_FLOAT32, 1, zd, -1), 4);

    int64_t in0[3] = {0, 1, 2}, out0[1] = {3};
    assert_int_equal(add_node(g, "gemm", "Gemm", "FullyConnected", 7, in0, 3, out0, 1), 0);
    in0[0] = 4; /* copied */
    int64_t in1[2] = {3, -1}, out1[1] = {4};
    /* native_op equal to op is stored as NULL; "" name is unnamed */
    assert_int_equal(add_node(g, "", "If", "If", -1, in1, 2, out1, 1), 1);

    tio_attr a = attr("alpha", TIO_ATTR_FLOAT);
    a.f = 1.5;
    add_attr_ok(g, 0, &a);
    a = attr("transB", TIO_ATTR_INT);
    a.i = 1;
    add_attr_ok(g, 0, &a);
    char mode[] = "constant";
    a = attr("mode", TIO_ATTR_STRING);
    a.s = mode;
    add_attr_ok(g, 0, &a);
    mode[0] = 'X';
    int64_t pads[4] = {0, 1, 2, 3};
    a = attr("pads", TIO_ATTR_INTS);
    a.count = 4;
    a.ints = pads;
    add_attr_ok(g, 0, &a);
    pads[0] = 42;
    double scales[2] = {0.5, 2};
    a = attr("scales", TIO_ATTR_FLOATS);
    a.count = 2;
    a.floats = scales;
    add_attr_ok(g, 0, &a);
    scales[0] = 9;
    char s0[] = "a", s1[] = "bc";
    const char *strs[2] = {s0, s1};
    a = attr("names", TIO_ATTR_STRINGS);
    a.count = 2;
    a.strings = strs;
    add_attr_ok(g, 0, &a);
    s1[0] = 'X';
    a = attr("shape", TIO_ATTR_TENSOR);
    a.i = 2;
    add_attr_ok(g, 0, &a);
    a = attr("empty", TIO_ATTR_INTS); /* count 0, NULL array */
    add_attr_ok(g, 0, &a);

    tio_graph *t = NULL, *f = NULL;
    assert_int_equal(tio_graph_new_subgraph(g, &t, &e), TIO_OK);
    assert_int_equal(tio_graph_new_subgraph(g, &f, &e), TIO_OK);
    assert_ptr_equal(tio_graph_parent(t), g);
    assert_ptr_equal(tio_container_graph(c), g);
    /* then_branch: captures y (its value 0), Identity -> value 1 */
    assert_int_equal(add_value(t, "y", TIO_DTYPE_INVALID, -1, NULL, -1), 0);
    assert_int_equal(add_value(t, "then_out", TIO_FLOAT32, 0, NULL, -1), 1);
    int64_t ti[1] = {0}, to[1] = {1};
    add_node(t, "id", "Identity", NULL, -1, ti, 1, to, 1);
    assert_int_equal(tio_graph_set_captures(t, ti, 1, &e), TIO_OK);
    assert_int_equal(tio_graph_set_outputs(t, to, 1, &e), TIO_OK);
    /* else_branch: a constant of the container */
    assert_int_equal(add_value(f, "k", TIO_DTYPE_INVALID, -1, NULL, 1), 0);
    assert_int_equal(tio_graph_set_outputs(f, ti, 1, &e), TIO_OK);

    a = attr("then_branch", TIO_ATTR_GRAPH);
    a.graph = t;
    add_attr_ok(g, 1, &a);
    a = attr("else_branch", TIO_ATTR_GRAPH);
    a.graph = f;
    add_attr_ok(g, 1, &a);

    int64_t gin[1] = {0}, gout[1] = {4};
    assert_int_equal(tio_graph_set_inputs(g, gin, 1, &e), TIO_OK);
    assert_int_equal(tio_graph_set_outputs(g, gout, 1, &e), TIO_OK);
    assert_int_equal(tio_graph_meta_set(g, "description", "a test model", &e), TIO_OK);
    assert_int_equal(tio_graph_meta_set(g, "license", "MIT", &e), TIO_OK);
    assert_int_equal(tio_graph_meta_set(g, "description", "the test model", &e), TIO_OK);
    assert_int_equal(tio_graph_set_native_format(g, "test", &e), TIO_OK);
    if (then_out) *then_out = t;
    if (else_out) *else_out = f;
    return g;
}

/* --------------------------------------------------------------- tests */

static void test_build_and_read(void **state) {
    (void)state;
    tio_container *c = make_container();
    tio_graph *t, *f;
    tio_graph *g = build(c, &t, &f);

    assert_null(tio_graph_parent(g));
    assert_string_equal(tio_graph_native_format(g), "test");
    assert_null(tio_graph_native_format(t));

    /* values */
    assert_int_equal(tio_graph_value_count(g), 5);
    tio_value_info v;
    assert_int_equal(tio_graph_value(g, 0, &v), TIO_OK);
    assert_string_equal(v.name, "x");
    assert_int_equal(v.dtype, TIO_FLOAT32);
    assert_int_equal(v.rank, 3);
    assert_int_equal(v.tensor, -1);
    assert_non_null(v.dims);
    assert_int_equal(v.dims[0].value, 0);
    assert_string_equal(v.dims[0].name, "batch");
    assert_int_equal(v.dims[1].value, 3);
    assert_null(v.dims[1].name);
    assert_int_equal(v.dims[2].value, -1);
    assert_null(v.dims[2].name);

    assert_int_equal(tio_graph_value(g, 1, &v), TIO_OK);
    assert_string_equal(v.name, "w");
    assert_int_equal(v.tensor, 0);
    assert_int_equal(v.dtype, TIO_FLOAT32);
    assert_int_equal(v.rank, 2);
    assert_int_equal(v.dims[0].value, 2);
    assert_int_equal(v.dims[1].value, 3);
    assert_null(v.dims[0].name);

    assert_int_equal(tio_graph_value(g, 2, &v), TIO_OK);
    assert_null(v.name);
    assert_int_equal(v.tensor, 1);
    assert_int_equal(v.rank, 1);
    assert_int_equal(v.dims[0].value, 3);

    assert_int_equal(tio_graph_value(g, 3, &v), TIO_OK);
    assert_string_equal(v.name, "y");
    assert_int_equal(v.dtype, TIO_DTYPE_INVALID);
    assert_int_equal(v.rank, -1);
    assert_null(v.dims);

    assert_int_equal(tio_graph_value(g, 5, &v), TIO_E_NOT_FOUND);
    assert_int_equal(tio_graph_find_value(g, "z"), 4);
    assert_int_equal(tio_graph_find_value(g, "nope"), -1);
    assert_int_equal(tio_graph_find_value(g, NULL), -1);

    /* nodes */
    assert_int_equal(tio_graph_node_count(g), 2);
    tio_node_info n;
    assert_int_equal(tio_graph_node(g, 0, &n), TIO_OK);
    assert_string_equal(n.name, "gemm");
    assert_string_equal(n.op, "Gemm");
    assert_string_equal(n.native_op, "FullyConnected");
    assert_int_equal(n.native_id, 7);
    assert_int_equal(n.input_count, 3);
    assert_int_equal(n.inputs[0], 0);
    assert_int_equal(n.inputs[1], 1);
    assert_int_equal(n.inputs[2], 2);
    assert_int_equal(n.output_count, 1);
    assert_int_equal(n.outputs[0], 3);
    assert_int_equal(n.attr_count, 8);

    assert_int_equal(tio_graph_node(g, 1, &n), TIO_OK);
    assert_null(n.name);
    assert_string_equal(n.op, "If");
    assert_null(n.native_op);
    assert_int_equal(n.native_id, -1);
    assert_int_equal(n.input_count, 2);
    assert_int_equal(n.inputs[1], -1);
    assert_int_equal(n.attr_count, 2);
    assert_int_equal(tio_graph_node(g, 2, &n), TIO_E_NOT_FOUND);

    /* attributes, in order, with unused members zero */
    tio_attr a;
    assert_int_equal(tio_graph_attr(g, 0, 0, &a), TIO_OK);
    assert_string_equal(a.name, "alpha");
    assert_int_equal(a.type, TIO_ATTR_FLOAT);
    assert_true(a.f == 1.5);
    assert_int_equal(a.i, 0);
    assert_null(a.s);
    assert_null(a.ints);
    assert_null(a.graph);
    assert_int_equal(tio_graph_attr(g, 0, 1, &a), TIO_OK);
    assert_string_equal(a.name, "transB");
    assert_int_equal(a.type, TIO_ATTR_INT);
    assert_int_equal(a.i, 1);
    assert_true(a.f == 0);
    assert_int_equal(tio_graph_attr(g, 0, 2, &a), TIO_OK);
    assert_int_equal(a.type, TIO_ATTR_STRING);
    assert_string_equal(a.s, "constant");
    assert_int_equal(tio_graph_find_attr(g, 0, "pads", &a), TIO_OK);
    assert_int_equal(a.type, TIO_ATTR_INTS);
    assert_int_equal(a.count, 4);
    assert_int_equal(a.ints[0], 0);
    assert_int_equal(a.ints[3], 3);
    assert_null(a.floats);
    assert_int_equal(tio_graph_find_attr(g, 0, "scales", &a), TIO_OK);
    assert_int_equal(a.type, TIO_ATTR_FLOATS);
    assert_int_equal(a.count, 2);
    assert_true(a.floats[0] == 0.5 && a.floats[1] == 2);
    assert_int_equal(tio_graph_find_attr(g, 0, "names", &a), TIO_OK);
    assert_int_equal(a.type, TIO_ATTR_STRINGS);
    assert_int_equal(a.count, 2);
    assert_string_equal(a.strings[0], "a");
    assert_string_equal(a.strings[1], "bc");
    assert_int_equal(tio_graph_find_attr(g, 0, "shape", &a), TIO_OK);
    assert_int_equal(a.type, TIO_ATTR_TENSOR);
    assert_int_equal(a.i, 2);
    assert_string_equal(tio_tensor_name(tio_container_tensor(c, (size_t)a.i)), "shape");
    assert_int_equal(tio_graph_find_attr(g, 0, "empty", &a), TIO_OK);
    assert_int_equal(a.type, TIO_ATTR_INTS);
    assert_int_equal(a.count, 0);
    assert_int_equal(tio_graph_find_attr(g, 0, "nope", &a), TIO_E_NOT_FOUND);
    assert_int_equal(tio_graph_find_attr(g, 9, "alpha", &a), TIO_E_NOT_FOUND);
    assert_int_equal(tio_graph_attr(g, 0, 8, &a), TIO_E_NOT_FOUND);
    assert_int_equal(tio_graph_attr(g, 2, 0, &a), TIO_E_NOT_FOUND);

    assert_int_equal(tio_graph_find_attr(g, 1, "then_branch", &a), TIO_OK);
    assert_int_equal(a.type, TIO_ATTR_GRAPH);
    assert_ptr_equal(a.graph, t);
    assert_int_equal(tio_graph_attr(g, 1, 1, &a), TIO_OK);
    assert_string_equal(a.name, "else_branch");
    assert_ptr_equal(a.graph, f);

    /* graph lists and metadata */
    assert_int_equal(tio_graph_input_count(g), 1);
    assert_int_equal(tio_graph_inputs(g)[0], 0);
    assert_int_equal(tio_graph_output_count(g), 1);
    assert_int_equal(tio_graph_outputs(g)[0], 4);
    assert_int_equal(tio_graph_capture_count(g), 0);
    assert_null(tio_graph_captures(g));
    assert_int_equal(tio_graph_meta_count(g), 2);
    const char *k, *val;
    assert_int_equal(tio_graph_meta_at(g, 0, &k, &val), TIO_OK);
    assert_string_equal(k, "description");
    assert_string_equal(val, "the test model");
    assert_string_equal(tio_graph_meta_get(g, "license"), "MIT");
    assert_null(tio_graph_meta_get(g, "nope"));
    assert_int_equal(tio_graph_meta_at(g, 2, &k, &val), TIO_E_NOT_FOUND);
    /* graph metadata is not container metadata */
    assert_int_equal(tio_container_meta_count(c), 0);

    /* subgraph */
    assert_int_equal(tio_graph_value_count(t), 2);
    assert_int_equal(tio_graph_node_count(t), 1);
    assert_int_equal(tio_graph_capture_count(t), 1);
    assert_int_equal(tio_graph_captures(t)[0], 0);
    assert_int_equal(tio_graph_input_count(t), 0);
    assert_int_equal(tio_graph_output_count(t), 1);
    assert_int_equal(tio_graph_value(t, 1, &v), TIO_OK);
    assert_int_equal(v.rank, 0);
    assert_null(v.dims);
    assert_int_equal(tio_graph_node(t, 0, &n), TIO_OK);
    assert_string_equal(n.op, "Identity");
    assert_int_equal(tio_graph_value(f, 0, &v), TIO_OK);
    assert_int_equal(v.tensor, 1);
    assert_int_equal(tio_graph_meta_count(t), 0);

    /* set_* replace the previous list; n = 0 clears it */
    tio_error e;
    int64_t two[2] = {0, 3};
    assert_int_equal(tio_graph_set_inputs(g, two, 2, &e), TIO_OK);
    assert_int_equal(tio_graph_input_count(g), 2);
    assert_int_equal(tio_graph_inputs(g)[1], 3);
    assert_int_equal(tio_graph_set_inputs(g, NULL, 0, &e), TIO_OK);
    assert_int_equal(tio_graph_input_count(g), 0);
    assert_int_equal(tio_graph_set_native_format(g, NULL, &e), TIO_OK);
    assert_null(tio_graph_native_format(g));

    tio_container_free(c);
}

static void expect_arg(int rc, const tio_error *e, const char *needle) {
    assert_int_equal(rc, TIO_E_ARGUMENT);
    assert_int_equal(e->code, TIO_E_ARGUMENT);
    assert_true(e->message[0] != '\0');
    if (needle && !strstr(e->message, needle)) {
        fprintf(stderr, "message '%s' lacks '%s'\n", e->message, needle);
        fail();
    }
}

/* Values typed by text (tio_value_info.type): canonical text accepted and
 * given back; everything else refused with the reason and where. */
static void test_typed_values(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    tio_graph *g = NULL;
    tio_error e;
    assert_int_equal(tio_container_new_graph(c, &g, &e), TIO_OK);
    static const char *const good[] = {
        "seq(tensor(float)[N,3])", "optional(seq(tensor(int64)[]))",
        "map(string,seq(tensor(float)))", "sparse_tensor(double)[4,4]",
        "tensor(string)[2,?,\"a b\",\"\",\"9x\",\"q\\\"\\\\\"]", "tensor(bfloat16)",
        ("optional(optional(optional(optional(optional(optional(optional(optional(optional("
         "optional(optional(optional(optional(optional(optional(tensor(uint4))))))))))))))))"),
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        tio_value_info v;
        memset(&v, 0, sizeof v);
        v.tensor = -1;
        v.rank = -1;
        v.type = good[i];
        size_t ix = 0;
        if (tio_graph_add_value(g, &v, &ix, &e) != TIO_OK) {
            fprintf(stderr, "%s: %s\n", good[i], e.message);
            fail();
        }
        tio_value_info got;
        assert_int_equal(tio_graph_value(g, ix, &got), TIO_OK);
        assert_string_equal(got.type, good[i]);
        assert_int_equal(got.dtype, TIO_DTYPE_INVALID);
        assert_int_equal(got.rank, -1);
    }
    static const struct {
        const char *text, *why;
    } bad[] = {
        {"", "expected tensor("},
        {"tensor(floaty)", "unknown element type"},
        {"tensor(float", "expected ')'"},
        {"tensor(float)[", "expected a dim"},
        {"tensor(float)[3", "expected ',' or ']'"},
        {"tensor(float)[03]", "leading zero"},
        {"tensor(float)[99999999999999999999]", "past int64"},
        {"tensor(float)[\"ab\"]", "needs no quotes"},
        {"tensor(float)[\"a]", "closing"},
        {"tensor(float)[\"a\\b\"]", "escapes only"},
        {"seq(tensor(float)) ", "text after the type"},
        {"seq()", "expected tensor("},
        {"map(float32,tensor(float))", "unknown element type"},
        {"map(int64 tensor(float))", "expected ','"},
        {("seq(seq(seq(seq(seq(seq(seq(seq(seq(seq(seq(seq(seq(seq(seq(seq(tensor(float)"
          "))))))))))))))))"),
         "deeper than the limit"},
        {" tensor(float)", "expected tensor("},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tio_value_info v;
        memset(&v, 0, sizeof v);
        v.tensor = -1;
        v.rank = -1;
        v.type = bad[i].text;
        expect_arg(tio_graph_add_value(g, &v, NULL, &e), &e, bad[i].why);
    }
    /* a type with a dtype, a rank or a tensor */
    tio_value_info v;
    memset(&v, 0, sizeof v);
    v.tensor = -1;
    v.rank = 1;
    v.type = "seq(tensor(float))";
    expect_arg(tio_graph_add_value(g, &v, NULL, &e), &e, "a type is given with");
    v.rank = -1;
    v.dtype = TIO_FLOAT32;
    expect_arg(tio_graph_add_value(g, &v, NULL, &e), &e, "a type is given with");
    tio_container_free(c);
}

static void test_rejections(void **state) {
    (void)state;
    tio_container *c = make_container();
    tio_graph *t, *f;
    tio_graph *g = build(c, &t, &f);
    tio_error e;
    tio_graph *g2 = NULL;

    /* a second root graph */
    expect_arg(tio_container_new_graph(c, &g2, &e), &e, "already has a graph");
    assert_null(g2);
    assert_ptr_equal(tio_container_graph(c), g);

    /* values */
    tio_value_info v;
    memset(&v, 0, sizeof v);
    v.tensor = 3; /* the container has 3 tensors */
    expect_arg(tio_graph_add_value(g, &v, NULL, &e), &e, "tensor index 3");
    v.tensor = -2;
    expect_arg(tio_graph_add_value(g, &v, NULL, &e), &e, "tensor is -2");
    v.tensor = -1;
    v.rank = -2;
    expect_arg(tio_graph_add_value(g, &v, NULL, &e), &e, "rank -2");
    v.rank = 4097;
    expect_arg(tio_graph_add_value(g, &v, NULL, &e), &e, "rank 4097");
    v.rank = 2;
    expect_arg(tio_graph_add_value(g, &v, NULL, &e), &e, "dims are NULL");
    tio_dim bad[2] = {{1, NULL}, {-2, "n"}};
    v.dims = bad;
    expect_arg(tio_graph_add_value(g, &v, NULL, &e), &e, "dim 1 is -2");
    bad[1].value = 0;
    v.dtype = (tio_dtype)99;
    expect_arg(tio_graph_add_value(g, &v, NULL, &e), &e, "dtype 99");
    expect_arg(tio_graph_add_value(g, NULL, NULL, &e), &e, NULL);
    expect_arg(tio_graph_add_value(NULL, &v, NULL, &e), &e, NULL);
    assert_int_equal(tio_graph_value_count(g), 5);

    /* nodes */
    tio_node_info n;
    memset(&n, 0, sizeof n);
    n.native_id = -1;
    expect_arg(tio_graph_add_node(g, &n, NULL, &e), &e, "operator type is NULL");
    n.op = "";
    expect_arg(tio_graph_add_node(g, &n, NULL, &e), &e, "operator type is empty");
    n.op = "Relu";
    int64_t refs[2] = {0, 5};
    n.inputs = refs;
    n.input_count = 2;
    expect_arg(tio_graph_add_node(g, &n, NULL, &e), &e, "inputs 1 is value 5");
    refs[1] = -2;
    expect_arg(tio_graph_add_node(g, &n, NULL, &e), &e, "value -2");
    n.inputs = NULL;
    expect_arg(tio_graph_add_node(g, &n, NULL, &e), &e, "NULL");
    n.input_count = 0;
    n.outputs = refs;
    n.output_count = 2;
    refs[1] = 5;
    expect_arg(tio_graph_add_node(g, &n, NULL, &e), &e, "outputs 1");
    assert_int_equal(tio_graph_node_count(g), 2);

    /* attributes */
    tio_attr a = attr("k", TIO_ATTR_INT);
    expect_arg(tio_graph_add_attr(g, 2, &a, &e), &e, "node 2 does not exist");
    a.name = NULL;
    expect_arg(tio_graph_add_attr(g, 0, &a, &e), &e, "name is NULL");
    a.name = "";
    expect_arg(tio_graph_add_attr(g, 0, &a, &e), &e, "name is empty");
    a.name = "alpha"; /* duplicate name, even with another type */
    expect_arg(tio_graph_add_attr(g, 0, &a, &e), &e, "already set");
    a = attr("t", (tio_attr_type)0);
    expect_arg(tio_graph_add_attr(g, 0, &a, &e), &e, "type 0");
    a.type = (tio_attr_type)12;
    expect_arg(tio_graph_add_attr(g, 0, &a, &e), &e, "type 12");
    a = attr("t", TIO_ATTR_TYPE);
    a.s = "seq(tensor(float)";
    expect_arg(tio_graph_add_attr(g, 0, &a, &e), &e, "expected ')' at character 17");
    a.s = NULL;
    expect_arg(tio_graph_add_attr(g, 0, &a, &e), &e, "NULL text");
    a = attr("t", TIO_ATTR_TENSOR);
    a.i = 3;
    expect_arg(tio_graph_add_attr(g, 0, &a, &e), &e, "names tensor 3");
    a.i = -1;
    expect_arg(tio_graph_add_attr(g, 0, &a, &e), &e, "names tensor -1");
    a = attr("s", TIO_ATTR_STRING);
    expect_arg(tio_graph_add_attr(g, 0, &a, &e), &e, "NULL string");
    a = attr("l", TIO_ATTR_INTS);
    a.count = 2;
    expect_arg(tio_graph_add_attr(g, 0, &a, &e), &e, "NULL array");
    a.type = TIO_ATTR_FLOATS;
    expect_arg(tio_graph_add_attr(g, 0, &a, &e), &e, "NULL array");
    const char *strs[2] = {"a", NULL};
    a = attr("l", TIO_ATTR_STRINGS);
    a.count = 2;
    a.strings = strs;
    expect_arg(tio_graph_add_attr(g, 0, &a, &e), &e, "string 1 is NULL");

    /* GRAPH: NULL, already used, not a subgraph of this graph */
    a = attr("body", TIO_ATTR_GRAPH);
    expect_arg(tio_graph_add_attr(g, 0, &a, &e), &e, "NULL");
    a.graph = t; /* used by then_branch */
    expect_arg(tio_graph_add_attr(g, 0, &a, &e), &e, "already used");
    a.graph = g; /* itself */
    expect_arg(tio_graph_add_attr(g, 0, &a, &e), &e, "not a subgraph");
    tio_graph *grand = NULL;
    assert_int_equal(tio_graph_new_subgraph(t, &grand, &e), TIO_OK);
    a.graph = grand; /* a subgraph of a subgraph: not direct */
    expect_arg(tio_graph_add_attr(g, 0, &a, &e), &e, "not a subgraph");
    tio_container *c2 = make_container();
    tio_graph *other = NULL, *osub = NULL;
    assert_int_equal(tio_container_new_graph(c2, &other, &e), TIO_OK);
    assert_int_equal(tio_graph_new_subgraph(other, &osub, &e), TIO_OK);
    a.graph = osub; /* another container's */
    expect_arg(tio_graph_add_attr(g, 0, &a, &e), &e, "not a subgraph");
    /* the subgraph of a subgraph is fine in its own parent, once */
    int64_t ti[1] = {0}, to[1] = {1};
    add_node(t, NULL, "Loop", NULL, -1, ti, 1, to, 1);
    a.graph = grand;
    add_attr_ok(t, 1, &a);
    a.name = "body2";
    expect_arg(tio_graph_add_attr(t, 1, &a, &e), &e, "already used");
    /* GRAPHS: an element twice, one used, one not a subgraph: refused, and
     * the refusal leaves the elements free (checked with marks it clears) */
    tio_graph *s3[3] = {NULL, NULL, NULL};
    for (int k = 0; k < 3; k++) assert_int_equal(tio_graph_new_subgraph(t, &s3[k], &e), TIO_OK);
    tio_graph *twice[3] = {s3[0], s3[1], s3[0]}, *used[2] = {s3[2], grand},
              *foreign[2] = {s3[1], osub};
    a = attr("bodies", TIO_ATTR_GRAPHS);
    a.count = 3;
    a.graphs = twice;
    expect_arg(tio_graph_add_attr(t, 1, &a, &e), &e, "element 2 is already used");
    a.count = 2;
    a.graphs = used;
    expect_arg(tio_graph_add_attr(t, 1, &a, &e), &e, "element 1 is already used");
    a.graphs = foreign;
    expect_arg(tio_graph_add_attr(t, 1, &a, &e), &e, "element 1 is not a subgraph");
    a.count = 3;
    a.graphs = s3; /* in order, the newest three: each where it is first looked for */
    add_attr_ok(t, 1, &a);
    tio_graph *rev[3] = {s3[2], s3[1], s3[0]};
    a.name = "again";
    a.graphs = rev;
    expect_arg(tio_graph_add_attr(t, 1, &a, &e), &e, "element 0 is already used");
    tio_node_info ni;
    assert_int_equal(tio_graph_node(g, 0, &ni), TIO_OK);
    assert_int_equal(ni.attr_count, 8);
    assert_int_equal(tio_graph_node(g, 1, &ni), TIO_OK);
    assert_int_equal(ni.attr_count, 2);
    assert_int_equal(tio_graph_node(t, 1, &ni), TIO_OK);
    assert_int_equal(ni.attr_count, 2); /* body, bodies */

    /* graph lists */
    int64_t l[2] = {0, 5};
    expect_arg(tio_graph_set_inputs(g, l, 2, &e), &e, "entry 1 is value 5");
    l[1] = -1;
    expect_arg(tio_graph_set_outputs(g, l, 2, &e), &e, "entry 1 is value -1");
    expect_arg(tio_graph_set_captures(g, NULL, 1, &e), &e, "NULL");
    expect_arg(tio_graph_set_inputs(NULL, l, 1, &e), &e, NULL);
    /* a failed set leaves the previous list */
    assert_int_equal(tio_graph_input_count(g), 1);
    assert_int_equal(tio_graph_outputs(g)[0], 4);

    /* metadata */
    expect_arg(tio_graph_meta_set(g, NULL, "v", &e), &e, NULL);
    expect_arg(tio_graph_meta_set(NULL, "k", "v", &e), &e, NULL);

    /* NULL-safe getters */
    tio_value_info vi;
    tio_attr at;
    assert_null(tio_container_graph(NULL));
    assert_null(tio_graph_parent(NULL));
    assert_null(tio_graph_native_format(NULL));
    assert_int_equal(tio_graph_value_count(NULL), 0);
    assert_int_equal(tio_graph_node_count(NULL), 0);
    assert_int_equal(tio_graph_input_count(NULL), 0);
    assert_int_equal(tio_graph_output_count(NULL), 0);
    assert_int_equal(tio_graph_capture_count(NULL), 0);
    assert_int_equal(tio_graph_meta_count(NULL), 0);
    assert_null(tio_graph_inputs(NULL));
    assert_null(tio_graph_outputs(NULL));
    assert_null(tio_graph_captures(NULL));
    assert_null(tio_graph_meta_get(NULL, "k"));
    assert_int_equal(tio_graph_find_value(NULL, "x"), -1);
    assert_int_equal(tio_graph_value(NULL, 0, &vi), TIO_E_ARGUMENT);
    assert_int_equal(tio_graph_value(g, 0, NULL), TIO_E_ARGUMENT);
    assert_int_equal(tio_graph_node(NULL, 0, &ni), TIO_E_ARGUMENT);
    assert_int_equal(tio_graph_attr(NULL, 0, 0, &at), TIO_E_ARGUMENT);
    assert_int_equal(tio_graph_find_attr(g, 0, NULL, &at), TIO_E_ARGUMENT);
    assert_int_equal(tio_graph_meta_at(NULL, 0, NULL, NULL), TIO_E_ARGUMENT);
    expect_arg(tio_container_new_graph(NULL, NULL, &e), &e, NULL);
    expect_arg(tio_graph_new_subgraph(NULL, NULL, &e), &e, NULL);
    expect_arg(tio_graph_add_node(NULL, &n, NULL, &e), &e, NULL);
    expect_arg(tio_graph_add_attr(NULL, 0, &a, &e), &e, NULL);
    expect_arg(tio_graph_set_native_format(NULL, "x", &e), &e, NULL);
    /* err may be NULL */
    assert_int_equal(tio_graph_add_value(g, NULL, NULL, NULL), TIO_E_ARGUMENT);

    tio_container_free(c2);
    tio_container_free(c);
}

static void test_save(void **state) {
    (void)state;
    tio_container *c = make_container();
    build(c, NULL, NULL);
    tio_error e;
    tio_save_options so;
    memset(&so, 0, sizeof so);
    so.format = "tenbin";
    /* A format without TIO_CAP_GRAPH writes the constants; the graph is not
     * an obstacle. */
    assert_int_equal(tio_check_save(c, &so, &e), TIO_OK);
    void *buf = NULL;
    size_t len = 0;
    assert_int_equal(tio_save_memory(c, &so, &buf, &len, &e), TIO_OK);
    tio_container *r = NULL;
    assert_int_equal(tio_open_memory(buf, len, NULL, &r, &e), TIO_OK);
    assert_int_equal(tio_container_count(r), 3);
    assert_null(tio_container_graph(r));
    assert_int_equal(tio_container_meta_count(r), 0);
    tio_container_free(r);
    tio_free(buf);
    so.format = "btf";
    so.flags = TIO_SAVE_DROP_NAMES;
    assert_int_equal(tio_check_save(c, &so, &e), TIO_OK);

    /* A format with TIO_CAP_GRAPH refuses a container without a graph, in
     * tio_check_save (and so before writing). */
    tio_container *plain = make_container();
    for (size_t i = 0; i < tio_format_count(); i++) {
        const char *fmt = tio_format_name(i);
        if (!(tio_format_caps(fmt) & TIO_CAP_GRAPH)) continue;
        so.format = fmt;
        so.flags = 0;
        assert_int_equal(tio_check_save(plain, &so, &e), TIO_E_UNSUPPORTED);
        assert_non_null(strstr(e.message, "a model needs a graph"));
        buf = NULL;
        assert_int_equal(tio_save_memory(plain, &so, &buf, &len, &e), TIO_E_UNSUPPORTED);
        assert_null(buf);
    }
    tio_container_free(plain);
    tio_container_free(c);
}

/* Many objects: indices stay stable, growth keeps earlier data. */
static void test_growth(void **state) {
    (void)state;
    tio_container *c = make_container();
    tio_graph *g = NULL;
    tio_error e;
    assert_int_equal(tio_container_new_graph(c, &g, &e), TIO_OK);
    char name[32];
    for (size_t i = 0; i < 5000; i++) {
        snprintf(name, sizeof name, "v%zu", i);
        tio_dim d[1] = {{(int64_t)i, NULL}};
        assert_int_equal(add_value(g, name, TIO_INT32, 1, d, -1), i);
    }
    for (size_t i = 0; i < 3000; i++) {
        int64_t in[1] = {(int64_t)i}, out[1] = {(int64_t)i + 1};
        assert_int_equal(add_node(g, NULL, "Relu", NULL, (int64_t)i, in, 1, out, 1), i);
        tio_attr a = attr("n", TIO_ATTR_INT);
        a.i = (int64_t)i;
        add_attr_ok(g, i, &a);
    }
    tio_graph *sub = NULL;
    for (size_t i = 0; i < 100; i++) assert_int_equal(tio_graph_new_subgraph(g, &sub, &e), TIO_OK);
    tio_value_info v;
    assert_int_equal(tio_graph_value(g, 4321, &v), TIO_OK);
    assert_string_equal(v.name, "v4321");
    assert_int_equal(v.dims[0].value, 4321);
    tio_node_info n;
    assert_int_equal(tio_graph_node(g, 2999, &n), TIO_OK);
    assert_int_equal(n.native_id, 2999);
    assert_int_equal(n.outputs[0], 3000);
    tio_attr a;
    assert_int_equal(tio_graph_find_attr(g, 1234, "n", &a), TIO_OK);
    assert_int_equal(a.i, 1234);
    assert_int_equal(tio_graph_find_value(g, "v4999"), 4999);
    tio_container_free(c);
}

/* A value's name in test_find_value: every 7th "dup", every 11th unnamed,
 * every 13th empty (kept as no name), the rest v<i>. */
static const char *fv_name(size_t i, char *buf, size_t size) {
    if (i % 11 == 3) return NULL;
    if (i % 7 == 5) return "dup";
    if (i % 13 == 6) return "";
    snprintf(buf, size, "v%zu", i);
    return buf;
}

/* What a search in order finds: the first value of that name. */
static int64_t fv_first(const tio_graph *g, const char *name) {
    for (size_t i = 0; i < tio_graph_value_count(g); i++) {
        tio_value_info v;
        assert_int_equal(tio_graph_value(g, i, &v), TIO_OK);
        if (v.name && strcmp(v.name, name) == 0) return (int64_t)i;
    }
    return -1;
}

static void fv_check(const tio_graph *g, size_t n) {
    char buf[32];
    for (size_t i = 0; i < n + 3; i++) {
        const char *name = fv_name(i, buf, sizeof buf);
        if (name) assert_int_equal(tio_graph_find_value(g, name), fv_first(g, name));
    }
    assert_int_equal(tio_graph_find_value(g, "nope"), -1);
}

typedef struct fv_job {
    const tio_graph *g;
    size_t n, bad;
} fv_job;

static void *fv_all(void *arg) {
    fv_job *j = arg;
    char buf[32];
    for (size_t i = 0; i < j->n; i++) {
        snprintf(buf, sizeof buf, "v%zu", i);
        j->bad += tio_graph_find_value(j->g, buf) != (int64_t)i;
    }
    return NULL;
}

/* tio_graph_find_value by an index made by the first find (names.c), kept
 * up to date by adds: what a search in order finds; and which values are
 * captures (tio__graph_is_capture), through changes of both. */
static void test_find_value(void **state) {
    (void)state;
    tio_container *c = make_container();
    tio_graph *g = NULL, *sub = NULL;
    tio_error e;
    assert_int_equal(tio_container_new_graph(c, &g, &e), TIO_OK);
    char buf[32];
    size_t n = 3000;
    for (size_t i = 0; i < n; i++) {
        add_value(g, fv_name(i, buf, sizeof buf), TIO_FLOAT32, -1, NULL, -1);
        if (i < 40 || i % 263 == 0) fv_check(g, i + 1);
    }
    fv_check(g, n);
    assert_int_equal(tio_graph_find_value(g, "dup"), 5);
    assert_int_equal(tio_graph_find_value(g, ""), -1); /* an empty name is none */
    assert_int_equal(tio_graph_find_value(g, "v3"), -1); /* unnamed */
    /* captures: few (searched), many (marked), changed, values added after */
    assert_int_equal(tio_graph_new_subgraph(g, &sub, &e), TIO_OK);
    for (size_t i = 0; i < 2000; i++) add_value(sub, NULL, TIO_FLOAT32, -1, NULL, -1);
    int64_t few[3] = {4, 1999, 0}, many[700];
    assert_int_equal(tio_graph_set_captures(sub, few, 3, &e), TIO_OK);
    for (int64_t v = -1; v <= 2000; v++)
        assert_int_equal(tio__graph_is_capture(sub, v), v == 4 || v == 1999 || v == 0);
    for (size_t k = 0; k < 700; k++) many[k] = (int64_t)(1999 - 2 * k);
    for (int round = 0; round < 2; round++) {
        assert_int_equal(tio_graph_set_captures(sub, many, 700, &e), TIO_OK);
        for (int64_t v = -1; v <= 2001; v++)
            assert_int_equal(tio__graph_is_capture(sub, v), v >= 600 && v < 2000 && v % 2 == 1);
        /* a value added after the marks: its own capture once listed */
        size_t at = add_value(sub, NULL, TIO_FLOAT32, -1, NULL, -1);
        assert_false(tio__graph_is_capture(sub, (int64_t)at));
        many[699] = (int64_t)at;
        assert_int_equal(tio_graph_set_captures(sub, many, 700, &e), TIO_OK);
        assert_true(tio__graph_is_capture(sub, (int64_t)at));
        assert_false(tio__graph_is_capture(sub, 601));
        many[699] = 601;
    }
    tio_container_free(c);
    /* the first finds from four threads at once, on a graph no find has
     * indexed yet: each makes an index, one is kept */
    c = make_container();
    assert_int_equal(tio_container_new_graph(c, &g, &e), TIO_OK);
    for (size_t i = 0; i < 5000; i++) {
        snprintf(buf, sizeof buf, "v%zu", i);
        add_value(g, buf, TIO_FLOAT32, -1, NULL, -1);
    }
    fv_job jobs[4];
    pthread_t th[4];
    for (int k = 0; k < 4; k++) {
        jobs[k] = (fv_job){g, 5000, 0};
        assert_int_equal(pthread_create(&th[k], NULL, fv_all, &jobs[k]), 0);
    }
    for (int k = 0; k < 4; k++) {
        pthread_join(th[k], NULL);
        assert_int_equal(jobs[k].bad, 0);
    }
    tio_container_free(c);
}

/* Internal helpers used by readers, and freeing with everything set. */
static void test_internals_and_free(void **state) {
    (void)state;
    tio_container *c = make_container();
    tio_graph *t, *f;
    tio_graph *g = build(c, &t, &f);
    tio_error e;
    assert_int_equal(tio__graph_reserve(g, 1000, 500, &e), TIO_OK);
    assert_true(g->value_cap >= 1000 && g->node_cap >= 500);
    assert_int_equal(g->value_count, 5);
    assert_int_equal(tio__graph_reserve(t, 0, 0, &e), TIO_OK);
    assert_int_equal(g->nodes[0].native_attrs, -1);
    assert_null(g->nodes[0].opaque);
    assert_int_equal(tio__graph_set_opaque(g, 0, "a table from a newer schema", &e), TIO_OK);
    assert_int_equal(tio__graph_set_opaque(g, 0, "replaced", &e), TIO_OK);
    assert_string_equal(g->nodes[0].opaque, "replaced");
    assert_int_equal(tio__graph_set_opaque(g, 7, "x", &e), TIO_E_ARGUMENT);
    assert_true(t->attached && f->attached);

    /* container props (reader-set facts) */
    assert_int_equal(tio_container_prop_count(c), 0);
    assert_int_equal(tio__kv_set(&c->props, "version", "2", &e), TIO_OK);
    assert_int_equal(tio__kv_set(&c->props, "model_data_offset", "32", &e), TIO_OK);
    assert_int_equal(tio_container_prop_count(c), 2);
    const char *k, *v;
    assert_int_equal(tio_container_prop_at(c, 1, &k, &v), TIO_OK);
    assert_string_equal(k, "model_data_offset");
    assert_string_equal(v, "32");
    assert_string_equal(tio_container_prop_get(c, "version"), "2");
    assert_null(tio_container_prop_get(c, "nope"));
    assert_int_equal(tio_container_prop_at(c, 2, &k, &v), TIO_E_NOT_FOUND);
    assert_int_equal(tio_container_prop_count(NULL), 0);
    assert_null(tio_container_prop_get(NULL, "version"));

    /* a deep chain of subgraphs, and unattached ones, are freed too */
    tio_graph *cur = t;
    for (int i = 0; i < 50; i++) {
        tio_graph *s = NULL;
        assert_int_equal(tio_graph_new_subgraph(cur, &s, &e), TIO_OK);
        add_value(s, "q", TIO_FLOAT32, -1, NULL, 0);
        assert_int_equal(tio_graph_meta_set(s, "k", "v", &e), TIO_OK);
        cur = s;
    }
    tio_container_free(c); /* ASan (detect_leaks=1) checks nothing is left */
    tio_container_free(NULL);
}


/* The arena: objects of the tree from it, from malloc() (a reader's own, or
 * above the small-object size), released either way with tio__gfree; many
 * chunks; a node's attributes grown past their capacity keep earlier ones;
 * a subgraph shares the root's arena. ASan checks each release. */
static void test_arena(void **state) {
    (void)state;
    tio_container *c = make_container();
    tio_graph *g = NULL, *sub = NULL;
    tio_error e;
    assert_int_equal(tio_container_new_graph(c, &g, &e), TIO_OK);
    assert_int_equal(tio_graph_new_subgraph(g, &sub, &e), TIO_OK);
    assert_ptr_equal(g->root, g);
    assert_ptr_equal(sub->root, g);
    /* 1 MiB of small objects: many chunks, each distinct and intact */
    enum { N = 20000 };
    char **p = calloc(N, sizeof *p);
    assert_non_null(p);
    for (size_t i = 0; i < N; i++) {
        char name[48];
        snprintf(name, sizeof name, "object %zu of the arena", i);
        p[i] = tio__gstrdup(i % 2 ? sub : g, name);
        assert_non_null(p[i]);
        assert_int_equal((uintptr_t)p[i] % 8, 0);
    }
    for (size_t i = 0; i < N; i += 997) {
        char name[48];
        snprintf(name, sizeof name, "object %zu of the arena", i);
        assert_string_equal(p[i], name);
        tio__gfree(g, p[i]); /* arena: nothing to do, no crash */
    }
    free(p);
    /* malloc()ed memory handed to the graph, and a large object */
    char *own = malloc(16);
    assert_non_null(own);
    tio__gfree(sub, own);
    uint8_t *big = tio__galloc(g, 100000);
    assert_non_null(big);
    memset(big, 7, 100000);
    big = tio__grealloc(g, big, 100000, 16); /* into the arena; the big one freed */
    assert_non_null(big);
    assert_int_equal(big[15], 7);
    int64_t *few = malloc(2 * sizeof *few);
    assert_non_null(few);
    few[0] = 5;
    few[1] = 6;
    few = tio__grealloc(g, few, 2 * sizeof *few, 5 * sizeof *few);
    assert_non_null(few);
    assert_int_equal(few[1], 6);
    tio__gfree(g, few);
    /* a node with many attributes and a value with named dims */
    size_t j = add_node(g, "n", "Custom", NULL, -1, NULL, 0, NULL, 0);
    for (int k = 0; k < 40; k++) {
        char an[16];
        snprintf(an, sizeof an, "a%d", k);
        tio_attr a = attr(an, TIO_ATTR_INTS);
        int64_t v[3] = {k, k + 1, k + 2};
        a.ints = v;
        a.count = 3;
        add_attr_ok(g, j, &a);
    }
    tio_attr out;
    assert_int_equal(tio_graph_find_attr(g, j, "a0", &out), TIO_OK);
    assert_int_equal(out.ints[2], 2);
    assert_int_equal(tio_graph_find_attr(g, j, "a39", &out), TIO_OK);
    assert_int_equal(out.ints[0], 39);
    tio_dim d[2] = {{-1, "batch"}, {3, NULL}};
    size_t v = add_value(sub, "x", TIO_FLOAT32, 2, d, -1);
    tio_value_info vi;
    assert_int_equal(tio_graph_value(sub, v, &vi), TIO_OK);
    assert_string_equal(vi.dims[0].name, "batch");
    /* a node cleared by a reader, then the whole tree freed */
    tio__gnode_clear(g, &g->nodes[j]);
    memset(&g->nodes[j], 0, sizeof g->nodes[j]);
    g->nodes[j].op = tio__gstrdup(g, "Dropped");
    tio_container_free(c);
}

/* An INT attribute keeps its enum label (copied); other types have none. */
static void test_enum_labels(void **state) {
    (void)state;
    tio_container *c = make_container();
    tio_graph *g;
    tio_error e;
    assert_int_equal(tio_container_new_graph(c, &g, &e), TIO_OK);
    size_t j = add_node(g, "conv", "Conv", NULL, -1, NULL, 0, NULL, 0);
    char label[8] = "NotSet";
    tio_attr a = attr("auto_pad", TIO_ATTR_INT);
    a.i = 1;
    a.label = label;
    add_attr_ok(g, j, &a);
    a = attr("groups", TIO_ATTR_INT);
    a.i = 1;
    add_attr_ok(g, j, &a);
    a = attr("alpha", TIO_ATTR_FLOAT);
    a.label = "ignored";
    add_attr_ok(g, j, &a);
    label[0] = 'X'; /* the graph holds its own copy */
    tio_attr out;
    assert_int_equal(tio_graph_find_attr(g, j, "auto_pad", &out), TIO_OK);
    assert_string_equal(out.label, "NotSet");
    assert_int_equal(tio_graph_find_attr(g, j, "groups", &out), TIO_OK);
    assert_null(out.label);
    assert_int_equal(tio_graph_find_attr(g, j, "alpha", &out), TIO_OK);
    assert_null(out.label);
    tio_container_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_and_read),
        cmocka_unit_test(test_rejections),
        cmocka_unit_test(test_typed_values),
        cmocka_unit_test(test_save),
        cmocka_unit_test(test_growth),
        cmocka_unit_test(test_find_value),
        cmocka_unit_test(test_internals_and_free),
        cmocka_unit_test(test_enum_labels),
        cmocka_unit_test(test_arena),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
