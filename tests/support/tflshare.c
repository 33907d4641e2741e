/* TFLite models whose references share one table (tflshare.h). */
#include "tflshare.h"

#include <stdlib.h>
#include <string.h>

#include "flatbuf/flatbuf.h"
#include "tensio.h"
#include "tflite/schema.h"

#define OK_(x)                                                                                 \
    do {                                                                                       \
        if ((x) != TIO_OK) abort();                                                            \
    } while (0)
#define NEED(p)                                                                                \
    do {                                                                                       \
        if (!(p)) abort();                                                                     \
    } while (0)

uint8_t *tfl_finish(struct tio_fb_builder *b, uint32_t root, size_t tail, size_t *len) {
    tio_error e;
    OK_(tio__fb_finish(b, root, &e));
    size_t n;
    const uint8_t *fb = tio__fb_buffer(b, &n);
    size_t pad = tail ? (16 - (n + 8) % 16) % 16 : 0;
    *len = n + 8 + pad + tail;
    uint8_t *out = calloc(*len, 1);
    NEED(out);
    uint32_t r0;
    memcpy(&r0, fb, 4);
    r0 += 8;
    memcpy(out, &r0, 4);
    memcpy(out + 4, "TFL3", 4);
    memcpy(out + 12, fb + 4, n - 4);
    tio__fb_builder_free(b);
    return out;
}

uint8_t *tfl_shared_model(int kind, uint32_t n, uint32_t m, size_t *len) {
    tio_error e;
    tio_fb_builder *b = tio__fb_builder_new("test");
    NEED(b);
    static const uint8_t one = 7;
    tio_fb_off data, buf[2], bufs, tensor, tensors, code, codes, sg, sgs, root, ops = 0;
    OK_(tio__fb_create_vector(b, &one, 1, 1, 16, &data, &e));
    OK_(tio__fb_start_table(b, &e));
    OK_(tio__fb_end_table(b, &buf[0], &e));
    OK_(tio__fb_start_table(b, &e));
    OK_(tio__fb_add_offset(b, TFL_Buffer_data, data, &e));
    OK_(tio__fb_end_table(b, &buf[1], &e));
    OK_(tio__fb_create_offset_vector(b, buf, 2, &bufs, &e));
    char *name = malloc(kind == 1 ? m : 1);
    NEED(name);
    memset(name, 'n', kind == 1 ? m : 1);
    float *q = calloc(kind == 2 ? m : 1, sizeof *q);
    NEED(q);
    tio_fb_off nm, shape, qv = 0, qt = 0;
    int32_t dim = 1;
    OK_(tio__fb_create_string(b, name, kind == 1 ? m : 1, &nm, &e));
    OK_(tio__fb_create_vector(b, &dim, 1, 4, 4, &shape, &e));
    if (kind == 2) {
        OK_(tio__fb_create_vector(b, q, m, 4, 4, &qv, &e));
        OK_(tio__fb_start_table(b, &e));
        OK_(tio__fb_add_offset(b, TFL_QuantizationParameters_min, qv, &e));
        OK_(tio__fb_add_offset(b, TFL_QuantizationParameters_max, qv, &e));
        OK_(tio__fb_end_table(b, &qt, &e));
    }
    OK_(tio__fb_start_table(b, &e));
    OK_(tio__fb_add_offset(b, TFL_Tensor_shape, shape, &e));
    OK_(tio__fb_add_scalar(b, TFL_Tensor_type, TFL_TensorType_UINT8, 1, &e));
    OK_(tio__fb_add_scalar(b, TFL_Tensor_buffer, kind ? 1 : 0, 4, &e));
    OK_(tio__fb_add_offset(b, TFL_Tensor_name, nm, &e));
    if (qt) OK_(tio__fb_add_offset(b, TFL_Tensor_quantization, qt, &e));
    OK_(tio__fb_end_table(b, &tensor, &e));
    uint32_t nt = kind ? n : 1, nref = kind ? 1 : n;
    tio_fb_off *refs = malloc((nt > nref ? nt : nref) * sizeof *refs);
    NEED(refs);
    for (uint32_t i = 0; i < nt; i++) refs[i] = tensor;
    OK_(tio__fb_create_offset_vector(b, refs, nt, &tensors, &e));
    if (!kind) {
        int32_t *in = malloc(m * sizeof *in);
        NEED(in);
        for (uint32_t i = 0; i < m; i++) in[i] = -1;
        tio_fb_off inv, op;
        OK_(tio__fb_create_vector(b, in, m, 4, 4, &inv, &e));
        OK_(tio__fb_start_table(b, &e));
        OK_(tio__fb_add_offset(b, TFL_Operator_inputs, inv, &e));
        OK_(tio__fb_end_table(b, &op, &e));
        for (uint32_t i = 0; i < n; i++) refs[i] = op;
        OK_(tio__fb_create_offset_vector(b, refs, n, &ops, &e));
        free(in);
    }
    OK_(tio__fb_start_table(b, &e));
    OK_(tio__fb_add_scalar(b, TFL_OperatorCode_version, 1, 4, &e));
    OK_(tio__fb_end_table(b, &code, &e));
    OK_(tio__fb_create_offset_vector(b, &code, 1, &codes, &e));
    OK_(tio__fb_start_table(b, &e));
    OK_(tio__fb_add_offset(b, TFL_SubGraph_tensors, tensors, &e));
    if (ops) OK_(tio__fb_add_offset(b, TFL_SubGraph_operators, ops, &e));
    OK_(tio__fb_end_table(b, &sg, &e));
    OK_(tio__fb_create_offset_vector(b, &sg, 1, &sgs, &e));
    OK_(tio__fb_start_table(b, &e));
    OK_(tio__fb_add_scalar(b, TFL_Model_version, 3, 4, &e));
    OK_(tio__fb_add_offset(b, TFL_Model_operator_codes, codes, &e));
    OK_(tio__fb_add_offset(b, TFL_Model_subgraphs, sgs, &e));
    OK_(tio__fb_add_offset(b, TFL_Model_buffers, bufs, &e));
    OK_(tio__fb_end_table(b, &root, &e));
    uint8_t *out = tfl_finish(b, root, 0, len);
    free(refs);
    free(name);
    free(q);
    return out;
}

