/* FlatBuffers runtime (src/flatbuf) on hostile buffers: truncations, bad
 * roots and table headers, crafted fields, strings, vectors and unions,
 * depth and budgets, and a random-mutation loop (run under ASan+UBSan in
 * the sanitizer build). Real buffers and the builder: test_flatbuf.c. */
#include "flatbuf_common.h"

/* ------------------------------------------------------- 3. rejections */

static void test_truncations(void **state) {
    (void)state;
    const char *rels[] = {"rten/small_cnn/small_cnn.v1.rten", "rten/matmul_add/matmul_add.v2.rten",
                          "rten/int_consts/int_consts.v1.rten"};
    size_t done = 0;
    for (size_t k = 0; k < 3; k++) {
        model m = {0};
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
    model m = {0};
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
    model m = {0};
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
