/* TensorFlow Lite (.tflite) reading: the 17 models of TensorFlow Lite Micro in
 * ../shared/vectors/tflite against their manifest (every constant's bytes by
 * SHA-256, dtype, shape and quantization; the operators), conversion of their
 * constants to safetensors, and hand-made models (built here with tensio's
 * FlatBuffers builder) for the offset/size buffer form and for hostile input:
 * buffers too short, a buffer offset past the file, shapes that overflow,
 * unknown and unsupported tensor types, sparsity, indices out of range. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flatbuf/flatbuf.h"
#include "tensio.h"
#include "tflite/schema.h"
#include "tflshare.h"
#include "tvec.h"

/* ------------------------------------------------------------ helpers */

static const tio_tensor *find(const tio_container *c, const char *name) {
    for (size_t i = 0; i < tio_container_count(c); i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        if (tio_tensor_name(t) && strcmp(tio_tensor_name(t), name) == 0) return t;
    }
    return NULL;
}

static void sha_hex(const tio_tensor *t, char out[65]) {
    uint8_t h[32];
    tio_error e;
    assert_int_equal(tio_tensor_sha256(t, TIO_HASH_VALUES, h, &e), TIO_OK);
    tvec_hex(h, 32, out);
}

/* float32 equality of a JSON number and a text value */
static void same_f32(double want, const char *text) {
    assert_non_null(text);
    assert_true((float)want == strtof(text, NULL));
}

/* The quantization of one constant against the manifest's "quant". */
static void check_quant(const tio_container *c, const char *name, const tio_tensor *t,
                        json_t *q) {
    char key[1024];
    json_t *sc = json_object_get(q, "scale"), *zp = json_object_get(q, "zero_point");
    size_t n = json_array_size(sc);
    int axis = (int)json_integer_value(json_object_get(q, "quantized_dimension"));
    if (n == 0) return;
    if (n == 1 && axis == 0) {
        snprintf(key, sizeof key, "%s.q_scale", name);
        same_f32(json_number_value(json_array_get(sc, 0)), tio_container_meta_get(c, key));
        assert_string_equal(tio_container_meta_type(c, key), "float32");
        snprintf(key, sizeof key, "%s.q_zero_point", name);
        if (json_array_size(zp)) {
            assert_non_null(tio_container_meta_get(c, key));
            assert_int_equal(strtoll(tio_container_meta_get(c, key), NULL, 10),
                             json_integer_value(json_array_get(zp, 0)));
        }
        return;
    }
    snprintf(key, sizeof key, "%s.q_axis", name);
    assert_non_null(tio_container_meta_get(c, key));
    assert_int_equal(atoi(tio_container_meta_get(c, key)), axis);
    snprintf(key, sizeof key, "%s.q_scales", name);
    const tio_tensor *s = find(c, key);
    assert_non_null(s);
    assert_int_equal(tio_tensor_dtype(s), TIO_FLOAT32);
    assert_int_equal(tio_tensor_numel(s), n);
    const float *f = tio_tensor_data(s);
    for (size_t i = 0; i < n; i++)
        assert_true((float)json_number_value(json_array_get(sc, i)) == f[i]);
    snprintf(key, sizeof key, "%s.q_zero_points", name);
    const tio_tensor *z = find(c, key);
    assert_non_null(z);
    assert_int_equal(tio_tensor_dtype(z), TIO_INT64);
    const int64_t *zv = tio_tensor_data(z);
    for (size_t i = 0; i < n; i++) assert_int_equal(zv[i], json_integer_value(json_array_get(zp, i)));
    /* the views point into the file */
    (void)t;
}

/* "N: A xK, B xM" has K operators of builtin A */
static unsigned op_count(const char *prop, const char *op) {
    char pat[96];
    snprintf(pat, sizeof pat, " %s x", op);
    const char *p = strstr(prop, pat);
    return p ? (unsigned)strtoul(p + strlen(pat), NULL, 10) : 0;
}

static void test_vectors_match_manifest(void **state) {
    (void)state;
    json_t *m = tvec_manifest("tflite/manifest.json");
    if (!m) return; /* SKIPPED line printed */
    const char *file;
    json_t *entry;
    size_t files = 0, constants = 0, quantized = 0;
    json_object_foreach(m, file, entry) {
        char rel[256];
        snprintf(rel, sizeof rel, "tflite/%s", file);
        char *path = tvec_path(rel);
        assert_non_null(path);
        tio_container *c = NULL;
        tio_error e;
        int rc = tio_open(path, NULL, &c, &e);
        if (rc) fprintf(stderr, "%s: %s\n", file, e.message);
        assert_int_equal(rc, TIO_OK);
        assert_string_equal(tio_container_format(c), "tflite");
        assert_int_equal(tio_container_warning_count(c), 0);
        char num[32];
        snprintf(num, sizeof num, "%lld",
                 (long long)json_integer_value(json_object_get(entry, "version")));
        assert_string_equal(tio_container_prop_get(c, "version"), num);
        json_t *sgs = json_object_get(entry, "subgraphs");
        snprintf(num, sizeof num, "%zu", json_array_size(sgs));
        assert_string_equal(tio_container_prop_get(c, "subgraphs"), num);
        size_t expect_tensors = 0;
        for (size_t s = 0; s < json_array_size(sgs); s++) {
            json_t *sg = json_array_get(sgs, s), *ts = json_object_get(sg, "tensors");
            for (size_t i = 0; i < json_array_size(ts); i++) {
                json_t *jt = json_array_get(ts, i);
                if (json_integer_value(json_object_get(jt, "data_bytes")) == 0) continue;
                char name[1024];
                const char *own = json_string_value(json_object_get(jt, "name"));
                if (s)
                    snprintf(name, sizeof name, "subgraph%zu/%s", s, own && *own ? own : "");
                else
                    snprintf(name, sizeof name, "%s", own);
                if (!own || !*own) snprintf(name + strlen(name), 32, "tensor%zu", i);
                const tio_tensor *t = find(c, name);
                if (!t) fprintf(stderr, "%s: no tensor '%s'\n", file, name);
                assert_non_null(t);
                expect_tensors++;
                constants++;
                assert_string_equal(tio_dtype_name(tio_tensor_dtype(t)),
                                    json_string_value(json_object_get(jt, "dtype")));
                json_t *shape = json_object_get(jt, "shape");
                assert_int_equal(tio_tensor_rank(t), json_array_size(shape));
                for (size_t k = 0; k < json_array_size(shape); k++)
                    assert_int_equal(tio_tensor_shape(t)[k],
                                     json_integer_value(json_array_get(shape, k)));
                assert_int_equal(tio_tensor_nbytes(t),
                                 json_integer_value(json_object_get(jt, "data_bytes")));
                char hex[65];
                sha_hex(t, hex);
                assert_string_equal(hex, json_string_value(json_object_get(jt, "sha256")));
                json_t *q = json_object_get(jt, "quant");
                if (q && json_array_size(json_object_get(q, "scale"))) {
                    quantized++;
                    check_quant(c, name, t, q);
                    json_t *sc = json_object_get(q, "scale");
                    if (json_array_size(sc) > 1 ||
                        json_integer_value(json_object_get(q, "quantized_dimension")))
                        expect_tensors += json_array_size(json_object_get(q, "zero_point")) ? 2 : 1;
                }
            }
            /* the operators: their number, and per builtin operator its count */
            json_t *ops = json_object_get(sg, "operators");
            char key[48];
            snprintf(key, sizeof key, "subgraph%zu.operators", s);
            const char *prop = tio_container_prop_get(c, key);
            assert_non_null(prop);
            assert_int_equal(strtoul(prop, NULL, 10), json_array_size(ops));
            unsigned per[TIO_TFL_OP_COUNT] = {0};
            for (size_t k = 0; k < json_array_size(ops); k++) {
                json_int_t code = json_integer_value(json_object_get(json_array_get(ops, k), "opcode"));
                assert_true(code >= 0 && code < TIO_TFL_OP_COUNT);
                per[code]++;
            }
            for (int k = 0; k < TIO_TFL_OP_COUNT; k++)
                if (per[k] && k != TFL_BuiltinOperator_CUSTOM)
                    assert_int_equal(op_count(prop, tio__tfl_op_names[k]), per[k]);
        }
        assert_int_equal(tio_container_count(c), expect_tensors);
        tio_container_free(c);
        free(path);
        files++;
    }
    printf("tflite: %zu files, %zu constants (%zu quantized) match the manifest\n", files,
           constants, quantized);
    assert_int_equal(files, 17);
    json_decref(m);
}

/* The constants of every vector convert to safetensors (quantization as its
 * __metadata__) and read back with the same bytes. */
static void test_convert_to_safetensors(void **state) {
    (void)state;
    json_t *m = tvec_manifest("tflite/manifest.json");
    if (!m) return;
    const char *file;
    json_t *entry;
    json_object_foreach(m, file, entry) {
        char rel[256];
        snprintf(rel, sizeof rel, "tflite/%s", file);
        char *path = tvec_path(rel);
        tio_container *c = NULL, *back = NULL;
        tio_error e;
        assert_int_equal(tio_open(path, NULL, &c, &e), TIO_OK);
        tio_save_options so = {0};
        so.format = "safetensors";
        void *buf = NULL;
        size_t len = 0;
        int rc = tio_save_memory(c, &so, &buf, &len, &e);
        if (rc) fprintf(stderr, "%s: %s\n", file, e.message);
        assert_int_equal(rc, TIO_OK);
        tio_open_options oo = {0};
        oo.format = "safetensors";
        assert_int_equal(tio_open_memory(buf, len, &oo, &back, &e), TIO_OK);
        assert_int_equal(tio_container_count(back), tio_container_count(c));
        assert_int_equal(tio_container_meta_count(back), tio_container_meta_count(c));
        for (size_t i = 0; i < tio_container_count(c); i++) {
            const tio_tensor *a = tio_container_tensor(c, i);
            const tio_tensor *b = find(back, tio_tensor_name(a));
            assert_non_null(b);
            char ha[65], hb[65];
            sha_hex(a, ha);
            sha_hex(b, hb);
            assert_string_equal(ha, hb);
        }
        tio_container_free(back);
        tio_free(buf);
        tio_container_free(c);
        free(path);
    }
    json_decref(m);
}

/* ------------------------------------------------- hand-made models */

typedef struct hm_tensor {
    const char *name;
    int type;
    int rank; /* -1: no shape field */
    int32_t dims[4];
    uint32_t buffer;
    int sparse;
    uint32_t external;
    int nscales;
    int nzps; /* zero points written (0: one per scale) */
    float scales[4];
    int64_t zps[4];
    int32_t qdim;
} hm_tensor;

typedef struct hm_buffer {
    const uint8_t *data; /* inline bytes (NULL: none) */
    size_t n;
    uint64_t offset, size; /* the offset/size form when offset */
} hm_buffer;

typedef struct hm_model {
    hm_tensor t[4];
    int nt;
    hm_buffer b[4];
    int nb;
    int nops;             /* one operator of code 0 (ADD) when 1 */
    int32_t op_in[3];
    int op_out_set;       /* the operator writes op_out (else tensor 0) */
    int32_t op_out;
    int32_t builtin;      /* the operator code's builtin_code (0: ADD) */
    int graph_io;         /* subgraph input tensor 1, output tensor 2 */
    uint32_t opcode_index;
    size_t tail;          /* zero bytes appended after the FlatBuffers data */
    const uint8_t *tail_data;
    int no_subgraphs;     /* the Model has no subgraphs vector */
    int sigdef;           /* one SignatureDef on subgraph sig_subgraph */
    uint32_t sig_subgraph;
} hm_model;

#define OK_(x) assert_int_equal((x), TIO_OK)

/* Builds the model; the result (malloc'ed) starts with the root offset and
 * "TFL3" (8 bytes inserted after the root offset keep every alignment). */
static uint8_t *hm_build(const hm_model *m, size_t *len) {
    tio_error e;
    tio_fb_builder *b = tio__fb_builder_new("test");
    assert_non_null(b);
    tio_fb_off toff[4], boff[4], v;
    for (int i = 0; i < m->nb; i++) {
        tio_fb_off data = 0;
        if (m->b[i].data)
            OK_(tio__fb_create_vector(b, m->b[i].data, m->b[i].n, 1, 16, &data, &e));
        OK_(tio__fb_start_table(b, &e));
        if (data) OK_(tio__fb_add_offset(b, TFL_Buffer_data, data, &e));
        if (m->b[i].offset) {
            OK_(tio__fb_add_scalar(b, TFL_Buffer_offset, m->b[i].offset, 8, &e));
            OK_(tio__fb_add_scalar(b, TFL_Buffer_size, m->b[i].size, 8, &e));
        }
        OK_(tio__fb_end_table(b, &boff[i], &e));
    }
    for (int i = 0; i < m->nt; i++) {
        const hm_tensor *t = &m->t[i];
        tio_fb_off name = 0, shape = 0, q = 0, sp = 0;
        if (t->name) OK_(tio__fb_create_string(b, t->name, strlen(t->name), &name, &e));
        if (t->rank >= 0)
            OK_(tio__fb_create_vector(b, t->dims, (size_t)t->rank, 4, 4, &shape, &e));
        if (t->nscales) {
            tio_fb_off sc, zp;
            OK_(tio__fb_create_vector(b, t->scales, (size_t)t->nscales, 4, 4, &sc, &e));
            OK_(tio__fb_create_vector(b, t->zps, (size_t)(t->nzps ? t->nzps : t->nscales), 8, 8,
                                      &zp, &e));
            OK_(tio__fb_start_table(b, &e));
            OK_(tio__fb_add_offset(b, TFL_QuantizationParameters_scale, sc, &e));
            OK_(tio__fb_add_offset(b, TFL_QuantizationParameters_zero_point, zp, &e));
            OK_(tio__fb_add_scalar(b, TFL_QuantizationParameters_quantized_dimension,
                                   (uint32_t)t->qdim, 4, &e));
            OK_(tio__fb_end_table(b, &q, &e));
        }
        if (t->sparse) {
            OK_(tio__fb_start_table(b, &e));
            OK_(tio__fb_end_table(b, &sp, &e));
        }
        OK_(tio__fb_start_table(b, &e));
        if (shape) OK_(tio__fb_add_offset(b, TFL_Tensor_shape, shape, &e));
        OK_(tio__fb_add_scalar(b, TFL_Tensor_type, (uint8_t)t->type, 1, &e));
        OK_(tio__fb_add_scalar(b, TFL_Tensor_buffer, t->buffer, 4, &e));
        if (name) OK_(tio__fb_add_offset(b, TFL_Tensor_name, name, &e));
        if (q) OK_(tio__fb_add_offset(b, TFL_Tensor_quantization, q, &e));
        if (sp) OK_(tio__fb_add_offset(b, TFL_Tensor_sparsity, sp, &e));
        if (t->external) OK_(tio__fb_add_scalar(b, TFL_Tensor_external_buffer, t->external, 4, &e));
        OK_(tio__fb_end_table(b, &toff[i], &e));
    }
    tio_fb_off tensors, buffers, ops = 0, codes, sg, sgs;
    OK_(tio__fb_create_offset_vector(b, toff, (size_t)m->nt, &tensors, &e));
    OK_(tio__fb_create_offset_vector(b, boff, (size_t)m->nb, &buffers, &e));
    tio_fb_off code;
    OK_(tio__fb_start_table(b, &e));
    OK_(tio__fb_add_scalar(b, TFL_OperatorCode_version, 1, 4, &e));
    if (m->builtin) OK_(tio__fb_add_scalar(b, TFL_OperatorCode_builtin_code,
                                           (uint64_t)(uint32_t)m->builtin, 4, &e));
    OK_(tio__fb_end_table(b, &code, &e));
    OK_(tio__fb_create_offset_vector(b, &code, 1, &codes, &e));
    if (m->nops) {
        tio_fb_off in, out, op;
        int32_t o = m->op_out_set ? m->op_out : 0;
        OK_(tio__fb_create_vector(b, m->op_in, 3, 4, 4, &in, &e));
        OK_(tio__fb_create_vector(b, &o, 1, 4, 4, &out, &e));
        OK_(tio__fb_start_table(b, &e));
        OK_(tio__fb_add_scalar(b, TFL_Operator_opcode_index, m->opcode_index, 4, &e));
        OK_(tio__fb_add_offset(b, TFL_Operator_inputs, in, &e));
        OK_(tio__fb_add_offset(b, TFL_Operator_outputs, out, &e));
        OK_(tio__fb_end_table(b, &op, &e));
        OK_(tio__fb_create_offset_vector(b, &op, 1, &ops, &e));
    }
    tio_fb_off gin = 0, gout = 0;
    if (m->graph_io) {
        int32_t one = 1, two = 2;
        OK_(tio__fb_create_vector(b, &one, 1, 4, 4, &gin, &e));
        OK_(tio__fb_create_vector(b, &two, 1, 4, 4, &gout, &e));
    }
    OK_(tio__fb_start_table(b, &e));
    OK_(tio__fb_add_offset(b, TFL_SubGraph_tensors, tensors, &e));
    if (gin) OK_(tio__fb_add_offset(b, TFL_SubGraph_inputs, gin, &e));
    if (gout) OK_(tio__fb_add_offset(b, TFL_SubGraph_outputs, gout, &e));
    if (ops) OK_(tio__fb_add_offset(b, TFL_SubGraph_operators, ops, &e));
    OK_(tio__fb_end_table(b, &sg, &e));
    OK_(tio__fb_create_offset_vector(b, &sg, 1, &sgs, &e));
    tio_fb_off sigs = 0;
    if (m->sigdef) {
        tio_fb_off key, sd;
        OK_(tio__fb_create_string(b, "serving_default", 15, &key, &e));
        OK_(tio__fb_start_table(b, &e));
        OK_(tio__fb_add_offset(b, TFL_SignatureDef_signature_key, key, &e));
        OK_(tio__fb_add_scalar(b, TFL_SignatureDef_subgraph_index, m->sig_subgraph, 4, &e));
        OK_(tio__fb_end_table(b, &sd, &e));
        OK_(tio__fb_create_offset_vector(b, &sd, 1, &sigs, &e));
    }
    OK_(tio__fb_start_table(b, &e));
    OK_(tio__fb_add_scalar(b, TFL_Model_version, 3, 4, &e));
    OK_(tio__fb_add_offset(b, TFL_Model_operator_codes, codes, &e));
    if (!m->no_subgraphs) OK_(tio__fb_add_offset(b, TFL_Model_subgraphs, sgs, &e));
    if (sigs) OK_(tio__fb_add_offset(b, TFL_Model_signature_defs, sigs, &e));
    OK_(tio__fb_add_offset(b, TFL_Model_buffers, buffers, &e));
    OK_(tio__fb_end_table(b, &v, &e));
    uint8_t *out = tfl_finish(b, v, m->tail, len);
    if (m->tail_data) memcpy(out + *len - m->tail, m->tail_data, m->tail);
    return out;
}

static tio_container *hm_open(const uint8_t *buf, size_t len, int want, const char *needle) {
    tio_open_options o = {0};
    o.format = "tflite";
    tio_container *c = NULL;
    tio_error e;
    tio_error_clear(&e);
    int rc = tio_open_memory(buf, len, &o, &c, &e);
    if (rc != want || (needle && !strstr(e.message, needle)))
        fprintf(stderr, "want %s '%s', got %s: %s\n", tio_status_name(want),
                needle ? needle : "", tio_status_name(rc), e.message);
    assert_int_equal(rc, want);
    if (rc) {
        assert_null(c);
        assert_string_equal(e.format, "tflite");
        assert_true(e.offset >= -1 && e.offset <= (int64_t)len);
        if (needle) assert_non_null(strstr(e.message, needle));
    }
    return c;
}

/* Builds m and expects opening it to fail with `code` and `needle`. */
static void hm_expect(const hm_model *m, int code, const char *needle) {
    size_t len;
    uint8_t *buf = hm_build(m, &len);
    hm_open(buf, len, code, needle);
    free(buf);
}

static const float F4[4] = {1.5f, -2.0f, 0.25f, 8.0f};

/* a float32 [2,2] constant in buffer 1 and an activation */
static hm_model base_model(void) {
    hm_model m;
    memset(&m, 0, sizeof m);
    m.nt = 2;
    m.t[0] = (hm_tensor){.name = "w", .type = TFL_TensorType_FLOAT32, .rank = 2,
                         .dims = {2, 2}, .buffer = 1};
    m.t[1] = (hm_tensor){.name = "x", .type = TFL_TensorType_FLOAT32, .rank = 2,
                         .dims = {2, 2}, .buffer = 0};
    m.nb = 2;
    m.b[1] = (hm_buffer){(const uint8_t *)F4, sizeof F4, 0, 0};
    return m;
}

static void test_handmade_ok(void **state) {
    (void)state;
    hm_model m = base_model();
    size_t len;
    uint8_t *buf = hm_build(&m, &len);
    tio_container *c = hm_open(buf, len, TIO_OK, NULL);
    assert_int_equal(tio_container_count(c), 1);
    const tio_tensor *t = tio_container_tensor(c, 0);
    assert_string_equal(tio_tensor_name(t), "w");
    assert_memory_equal(tio_tensor_data(t), F4, sizeof F4);
    /* zero-copy: a view into the input */
    assert_true((const uint8_t *)tio_tensor_data(t) > buf &&
                (const uint8_t *)tio_tensor_data(t) < buf + len);
    assert_string_equal(tio_container_prop_get(c, "buffer_form"), "inline");
    tio_container_free(c);
    free(buf);

    /* the offset/size form: the bytes after the FlatBuffers data */
    m.b[1] = (hm_buffer){NULL, 0, 2, sizeof F4}; /* offset 2: a placeholder */
    m.tail = sizeof F4;
    m.tail_data = (const uint8_t *)F4;
    buf = hm_build(&m, &len);
    free(buf);
    m.b[1].offset = len - sizeof F4; /* same layout: the size of the offset field is fixed */
    buf = hm_build(&m, &len);
    c = hm_open(buf, len, TIO_OK, NULL);
    t = tio_container_tensor(c, 0);
    assert_ptr_equal(tio_tensor_data(t), buf + len - sizeof F4);
    assert_memory_equal(tio_tensor_data(t), F4, sizeof F4);
    assert_string_equal(tio_container_prop_get(c, "buffer_form"), "offset");
    tio_container_free(c);
    /* its offset past the file, its size past the file, size + offset overflowing */
    uint64_t offs[3][2] = {{len + 1, 0}, {len - sizeof F4, 17}, {UINT64_MAX - 2, 8}};
    free(buf);
    for (int k = 0; k < 3; k++) {
        m.b[1].offset = offs[k][0] ? offs[k][0] : m.b[1].offset;
        m.b[1].size = offs[k][1] ? offs[k][1] : sizeof F4;
        if (k == 0) m.b[1].size = 4;
        hm_expect(&m, TIO_E_BOUNDS, "extends past the end of the file");
    }

    /* per-tensor and per-axis quantization */
    m = base_model();
    m.t[0].type = TFL_TensorType_INT8;
    m.t[0].dims[0] = 4;
    m.t[0].dims[1] = 4;
    m.t[0].nscales = 1;
    m.t[0].scales[0] = 0.5f;
    m.t[0].zps[0] = -3;
    uint8_t q16[16] = {1, 2, 3};
    m.b[1] = (hm_buffer){q16, 16, 0, 0};
    buf = hm_build(&m, &len);
    c = hm_open(buf, len, TIO_OK, NULL);
    assert_string_equal(tio_container_meta_get(c, "w.q_scale"), "0.5");
    assert_string_equal(tio_container_meta_get(c, "w.q_zero_point"), "-3");
    tio_container_free(c);
    free(buf);
    /* zero points that do not pair with the scales: a finding, left out */
    m.t[0].nzps = 2;
    buf = hm_build(&m, &len);
    c = hm_open(buf, len, TIO_OK, NULL);
    assert_int_equal(tio_container_warning_count(c), 1);
    assert_string_equal(tio_container_meta_get(c, "w.q_scale"), "0.5");
    assert_null(tio_container_meta_get(c, "w.q_zero_point"));
    tio_container_free(c);
    free(buf);
    m.t[0].nzps = 0;
    m.t[0].nscales = 4;
    m.t[0].qdim = 1;
    buf = hm_build(&m, &len);
    c = hm_open(buf, len, TIO_OK, NULL);
    assert_string_equal(tio_container_meta_get(c, "w.q_axis"), "1");
    assert_int_equal(tio_container_count(c), 3);
    assert_int_equal(tio_tensor_numel(find(c, "w.q_scales")), 4);
    assert_int_equal(((const int64_t *)tio_tensor_data(find(c, "w.q_zero_points")))[0], -3);
    tio_container_free(c);
    free(buf);
    /* scales that do not fit the axis: a finding (an error when strict) */
    m.t[0].nscales = 3;
    buf = hm_build(&m, &len);
    c = hm_open(buf, len, TIO_OK, NULL);
    assert_int_equal(tio_container_warning_count(c), 1);
    tio_container_free(c);
    free(buf);
}

static void test_handmade_hostile(void **state) {
    (void)state;
    size_t len;
    uint8_t *buf;
    hm_model m;

    /* a buffer too short for the shape, and too long */
    m = base_model();
    m.b[1].n = 12;
    hm_expect(&m, TIO_E_CORRUPT, "buffer 1 holds 12 bytes, but shape of 4 elements");
    m.t[0].dims[0] = 1;
    m.b[1].n = 16;
    hm_expect(&m, TIO_E_CORRUPT, "holds 16 bytes");

    /* shapes that overflow, negative dims, a rank past the limit */
    m = base_model();
    m.t[0].rank = 4;
    m.t[0].dims[0] = m.t[0].dims[1] = m.t[0].dims[2] = m.t[0].dims[3] = INT32_MAX;
    hm_expect(&m, TIO_E_OVERFLOW, NULL);
    m.t[0].rank = 2;
    m.t[0].dims[0] = -2;
    m.t[0].dims[1] = -2;
    hm_expect(&m, TIO_E_CORRUPT, NULL);

    /* unknown and unsupported tensor types, sparsity, external buffers */
    m = base_model();
    m.t[0].type = 99;
    hm_expect(&m, TIO_E_UNSUPPORTED, "TensorType 99 is unknown");
    m.t[0].type = TFL_TensorType_STRING;
    hm_expect(&m, TIO_E_UNSUPPORTED, "constant of type STRING");
    m.t[0].type = TFL_TensorType_INT4;
    hm_expect(&m, TIO_E_UNSUPPORTED, "constant of type INT4");
    m = base_model();
    m.t[0].sparse = 1;
    hm_expect(&m, TIO_E_UNSUPPORTED, "tensor 'w' is sparse");
    m = base_model();
    m.t[0].external = 1;
    hm_expect(&m, TIO_E_UNSUPPORTED, "external file");

    /* indices out of range: a buffer, an operator's input, an opcode */
    m = base_model();
    m.t[1].buffer = 7;
    hm_expect(&m, TIO_E_CORRUPT, "buffer 7 is out of range");
    m = base_model();
    m.nops = 1;
    m.op_in[0] = 0;
    m.op_in[1] = -1;
    m.op_in[2] = 1;
    buf = hm_build(&m, &len);
    tio_container *c = hm_open(buf, len, TIO_OK, NULL);
    assert_string_equal(tio_container_prop_get(c, "subgraph0.operators"), "1: ADD x1");
    tio_container_free(c);
    free(buf);
    m.op_in[2] = 2;
    hm_expect(&m, TIO_E_CORRUPT, "inputs[2] is tensor 2, outside [-1, 2)");
    m.op_in[2] = -2;
    hm_expect(&m, TIO_E_CORRUPT, "inputs[2] is tensor -2");
    m.op_in[2] = 1;
    m.opcode_index = 5;
    hm_expect(&m, TIO_E_CORRUPT, "opcode_index 5 is out of range");

    /* tensors aliasing one buffer past 2 x the file + 64 KiB */
    m = base_model();
    uint8_t *big = calloc(100000, 1);
    assert_non_null(big);
    m.b[1] = (hm_buffer){big, 100000, 0, 0};
    m.nt = 4;
    for (int k = 0; k < 4; k++)
        m.t[k] = (hm_tensor){.name = "alias", .type = TFL_TensorType_FLOAT32, .rank = 1,
                             .dims = {25000}, .buffer = 1};
    hm_expect(&m, TIO_E_LIMIT, "their buffers alias the same bytes");
    m.nt = 2;
    buf = hm_build(&m, &len);
    c = hm_open(buf, len, TIO_OK, NULL);
    assert_int_equal(tio_container_count(c), 2);
    tio_container_free(c);
    free(buf);
    free(big);

    /* a signature def on a subgraph that is not there: past the one subgraph,
     * and in a model with no subgraphs vector at all (a fuzzer's find: the
     * absent vector was read as if present) */
    m = base_model();
    m.sigdef = 1;
    buf = hm_build(&m, &len);
    c = hm_open(buf, len, TIO_OK, NULL);
    assert_string_equal(tio_container_prop_get(c, "signatures"),
                        "serving_default (subgraph 0)");
    tio_container_free(c);
    free(buf);
    m.sig_subgraph = 1;
    hm_expect(&m, TIO_E_CORRUPT, "signature def 0: subgraph 1 is out of range (the model has 1");
    m.sig_subgraph = 0;
    m.no_subgraphs = 1;
    hm_expect(&m, TIO_E_CORRUPT, "signature def 0: subgraph 0 is out of range (the model has 0");

    /* not TFL3; too short */
    m = base_model();
    buf = hm_build(&m, &len);
    memcpy(buf + 4, "TFL2", 4);
    hm_open(buf, len, TIO_E_CORRUPT, "the file identifier is \"TFL2\"");
    hm_open(buf, 7, TIO_E_TRUNCATED, NULL);
    free(buf);
}

/* References to one table multiply the work and the copies, which the
 * decode budget (graph/budget.h) bounds: n operators sharing one of m
 * inputs walked n x m indices (1.6 MB: 65 s), n tensors sharing a 60 KB
 * name or a table of 2,047 floats made n copies (24 KB: 165 MB). Each is
 * TIO_E_LIMIT at once; a few references to each open. */
static void test_shared_tables(void **state) {
    (void)state;
    static const struct {
        int kind;
        uint32_t n, m, few;
    } cases[] = {{0, 20000, 20000, 5}, {1, 3000, 60000, 2}, {2, 2000, 2047, 2}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t len;
        uint8_t *buf = tfl_shared_model(cases[k].kind, cases[k].n, cases[k].m, &len);
        assert_non_null(buf);
        hm_open(buf, len, TIO_E_LIMIT, "shared by too many references");
        free(buf);
        buf = tfl_shared_model(cases[k].kind, cases[k].few, cases[k].m, &len);
        assert_non_null(buf);
        tio_container *c = hm_open(buf, len, TIO_OK, NULL);
        assert_int_equal(tio_container_count(c), cases[k].kind ? cases[k].few : 0);
        tio_container_free(c);
        free(buf);
    }
}

/* Saves c as ONNX: TIO_OK, or a refusal whose message holds `needle`. */
static void expect_onnx(const tio_container *c, int want, const char *needle) {
    tio_save_options so = {.format = "onnx", .flags = TIO_SAVE_DROP_METADATA};
    tio_error e;
    tio_error_clear(&e);
    void *out = NULL;
    size_t n = 0;
    int rc = tio_save_memory(c, &so, &out, &n, &e);
    if (rc != want || (needle && !strstr(e.message, needle)))
        fprintf(stderr, "want %s '%s', got %s: %s\n", tio_status_name(want),
                needle ? needle : "", tio_status_name(rc), e.message);
    assert_int_equal(rc, want);
    if (needle) assert_non_null(strstr(e.message, needle));
    tio_free(out);
}

/* Opens m (it opens: reading never fails because a raise is impossible) and
 * saves it as ONNX: TIO_OK, or a refusal whose message holds `needle`. */
static void hm_to_onnx(const hm_model *m, int want, const char *needle) {
    size_t len;
    uint8_t *buf = hm_build(m, &len);
    tio_container *c = hm_open(buf, len, TIO_OK, NULL);
    assert_non_null(tio_container_graph(c));
    expect_onnx(c, want, needle);
    tio_container_free(c);
    free(buf);
}

/* The graph raise: an ADD of two graph values into a third, then hostile
 * operators (a cycle, an unknown opcode, an output that is a constant):
 * the model opens, and converting it to ONNX is refused naming the
 * operator and why. */
static void test_raise(void **state) {
    (void)state;
    hm_model m = base_model();
    m.nt = 3;
    m.t[2] = (hm_tensor){.name = "y", .type = TFL_TensorType_FLOAT32, .rank = 2,
                         .dims = {2, 2}, .buffer = 0};
    m.graph_io = 1;
    m.nops = 1;
    m.op_in[0] = 0;
    m.op_in[1] = 1;
    m.op_in[2] = -1;
    m.op_out_set = 1;
    m.op_out = 2;
    hm_to_onnx(&m, TIO_OK, NULL);
    size_t len;
    uint8_t *buf = hm_build(&m, &len);
    tio_container *c = hm_open(buf, len, TIO_OK, NULL);
    const tio_graph *g = tio_container_graph(c);
    tio_node_info ni;
    assert_int_equal(tio_graph_node_count(g), 1);
    OK_(tio_graph_node(g, 0, &ni));
    assert_string_equal(ni.op, "Add");
    assert_int_equal(tio_graph_input_count(g), 1);
    assert_int_equal(tio_graph_output_count(g), 1);
    tio_container_free(c);
    free(buf);
    /* a cycle: the operator reads its own output */
    m.op_in[1] = 2;
    hm_to_onnx(&m, TIO_E_UNSUPPORTED, "ADD (operator 0: input 1 (tensor 2) is written by "
                                      "operator 0, not an earlier one (a cycle)");
    /* an input no operator writes (not a graph input, not a constant) */
    m.graph_io = 0;
    m.op_in[1] = 1;
    hm_to_onnx(&m, TIO_E_UNSUPPORTED, "input 1 (tensor 1) is no constant, no graph input");
    m.graph_io = 1;
    /* an unknown opcode and one without an ONNX form */
    m.builtin = 250;
    hm_to_onnx(&m, TIO_E_UNSUPPORTED, "1 TensorFlow Lite operator without an ONNX form in "
                                      "tensio (docs/formats/tflite.md): BUILTIN_250 (operator 0)");
    m.builtin = TFL_BuiltinOperator_SVDF;
    hm_to_onnx(&m, TIO_E_UNSUPPORTED, "SVDF (operator 0)");
    /* the output is a constant */
    m.builtin = 0;
    m.op_out = 0;
    hm_to_onnx(&m, TIO_E_UNSUPPORTED, "its output is written elsewhere too");
}

/* A graph whose operator's declared result has another rank than its
 * operands (a Pad from 4-D to 5-D, a ReduceMean with keepdims to 5-D: what
 * a hostile file can say; the fuzzer found the Pad through a tmfile),
 * lowered to TensorFlow Lite in both layouts and read back: the file
 * opens, the operator stays TFLite's own, and the ONNX save is refused
 * naming it and why (before: in the NCHW layout the raise read the 5-D
 * result's dims into a 4-element array). */
static void rank_case(const char *op, const char *options, const char *needle) {
    tio_container *c = tio_container_new();
    assert_non_null(c);
    tio_error e;
    static const int64_t pads[8] = {0, 0, 1, 1, 0, 0, 1, 1}, axes[2] = {2, 3};
    const bool pad = strcmp(op, "Pad") == 0;
    int64_t ps[1] = {pad ? 8 : 2};
    tio_tensor_desc d = {.name = "k", .dtype = TIO_INT64, .rank = 1, .shape = ps,
                         .data = pad ? (const void *)pads : (const void *)axes,
                         .nbytes = pad ? sizeof pads : sizeof axes};
    OK_(tio_container_add(c, &d, 0, NULL, &e));
    tio_graph *g;
    OK_(tio_container_new_graph(c, &g, &e));
    size_t vk, vx, vy, j;
    tio_value_info v;
    memset(&v, 0, sizeof v);
    v.tensor = 0;
    v.name = "k";
    OK_(tio_graph_add_value(g, &v, &vk, &e));
    tio_dim dx[4] = {{1, NULL}, {3, NULL}, {4, NULL}, {4, NULL}};
    tio_dim dy[5] = {{1, NULL}, {3, NULL}, {6, NULL}, {6, NULL}, {1, NULL}};
    if (!pad) dy[2].value = dy[3].value = 1;
    v.tensor = -1;
    v.name = "x";
    v.dtype = TIO_FLOAT32;
    v.rank = 4;
    v.dims = dx;
    OK_(tio_graph_add_value(g, &v, &vx, &e));
    v.name = "y";
    v.rank = 5;
    v.dims = dy;
    OK_(tio_graph_add_value(g, &v, &vy, &e));
    int64_t in[2] = {(int64_t)vx, (int64_t)vk}, out[1] = {(int64_t)vy};
    tio_node_info n;
    memset(&n, 0, sizeof n);
    n.name = "n";
    n.op = op;
    n.native_id = -1;
    n.inputs = in;
    n.input_count = 2;
    n.outputs = out;
    n.output_count = 1;
    OK_(tio_graph_add_node(g, &n, &j, &e));
    if (!pad) {
        tio_attr a;
        memset(&a, 0, sizeof a);
        a.name = "keepdims";
        a.type = TIO_ATTR_INT;
        a.i = 1;
        OK_(tio_graph_add_attr(g, j, &a, &e));
    }
    OK_(tio_graph_set_inputs(g, in, 1, &e));
    OK_(tio_graph_set_outputs(g, out, 1, &e));
    OK_(tio_graph_set_opset(g, "", 18, &e));
    tio_save_options so = {.format = "tflite", .options = options};
    void *b = NULL;
    size_t len = 0;
    int rc = tio_save_memory(c, &so, &b, &len, &e);
    if (rc) fprintf(stderr, "%s\n", e.message);
    OK_(rc);
    tio_container_free(c);
    c = hm_open(b, len, TIO_OK, NULL);
    const tio_graph *rg = tio_container_graph(c);
    assert_non_null(rg);
    tio_node_info ni;
    bool native = false;
    for (size_t i = 0; i < tio_graph_node_count(rg); i++) {
        OK_(tio_graph_node(rg, i, &ni));
        assert_string_not_equal(ni.op, op);
        native |= strstr(ni.op, pad ? "PAD" : "MEAN") != NULL;
    }
    assert_true(native);
    expect_onnx(c, TIO_E_UNSUPPORTED, needle);
    tio_container_free(c);
    tio_free(b);
}

static void test_raise_result_rank(void **state) {
    (void)state;
    static const char *const layouts[2] = {"fuse=0,layout=nchw", NULL};
    for (int k = 0; k < 2; k++) {
        rank_case("Pad", layouts[k], "PAD (operator ");
        rank_case("Pad", layouts[k], "the output's rank is not the input's)");
        rank_case("ReduceMean", layouts[k],
                  "keep_dims, and the output's rank is not the input's)");
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_raise),
        cmocka_unit_test(test_raise_result_rank),
        cmocka_unit_test(test_vectors_match_manifest),
        cmocka_unit_test(test_convert_to_safetensors),
        cmocka_unit_test(test_handmade_ok),
        cmocka_unit_test(test_handmade_hostile),
        cmocka_unit_test(test_shared_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
