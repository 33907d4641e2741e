/* FlatBuffers runtime (src/flatbuf): the verifier and the accessors on every
 * real .rten model buffer, and the builder (round trips, alignment, blobs,
 * vtables, errors, growth). Crafted and mutated buffers:
 * test_flatbuf_hostile.c; what both use: flatbuf_common.h. */
#include "flatbuf_common.h"

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
            model m = {0};
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
    model m = {0};
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
