/*
 * Operator versions as TensorFlow's converter sets them
 * (tensorflow/lite/tools/versioning: op_version.cc's
 * GetBuiltinOperatorVersion, from the signature op_signature.cc takes of an
 * operator: its options, its tensors' types and ranks, and the scales of
 * their quantization), for the builtins the lowering writes; any other
 * builtin is version 1. A version says which kernel variants a runtime must
 * have (an int8 CONV_2D is 3, a FULLY_CONNECTED keeping its input's
 * dimensions 5, a DEPTHWISE_CONV_2D with dilation 2): a model that declares
 * less than it uses loads in a runtime without the variant and fails or
 * computes wrongly there.
 */
#include "tflite/write.h"

#include "tflite/schema.h"

#define NO_TYPE (-1) /* an absent optional input (index -1) */

typedef struct sig {
    const tfl_wsubgraph *sg;
    const tfl_wop *op;
} sig;

static const tfl_wtensor *tensor(const sig *s, const int32_t *idx, size_t n, size_t k) {
    if (k >= n || idx[k] < 0 || (size_t)idx[k] >= s->sg->ntensors) return NULL;
    return &s->sg->tensors[idx[k]];
}
static const tfl_wtensor *in_t(const sig *s, size_t k) {
    return tensor(s, s->op->inputs, s->op->nin, k);
}
static const tfl_wtensor *out_t(const sig *s, size_t k) {
    return tensor(s, s->op->outputs, s->op->nout, k);
}
static int32_t in_type(const sig *s, size_t k) {
    const tfl_wtensor *t = in_t(s, k);
    return t ? t->type : NO_TYPE;
}
static int32_t out_type(const sig *s, size_t k) {
    const tfl_wtensor *t = out_t(s, k);
    return t ? t->type : NO_TYPE;
}
static int32_t in_rank(const sig *s, size_t k) {
    const tfl_wtensor *t = in_t(s, k);
    return t && t->rank > 0 ? t->rank : 0;
}
/* An integer option of the operator's BuiltinOptions, or its default. */
static int64_t opt(const sig *s, uint16_t id, int64_t def) {
    for (size_t k = 0; k < s->op->nopts; k++)
        if (s->op->opts[k].id == id) return s->op->opts[k].i;
    return def;
}
/* Scales of a tensor's quantization (0: none). */
static size_t scales(const tfl_wtensor *t) { return t && t->q ? t->q->nscale : 0; }
/* Dimension d of a tensor (0 where it has none). */
static int64_t dim(const tfl_wtensor *t, int32_t d) {
    return t && d >= 0 && d < t->rank ? t->shape[d] : 0;
}
static bool types3(const sig *s, int32_t a, int32_t b, int32_t o) {
    return in_type(s, 0) == a && in_type(s, 1) == b && out_type(s, 0) == o;
}
/* Two inputs of different shapes, one of rank above 4. */
static bool broadcast5(const sig *s) {
    const tfl_wtensor *a = in_t(s, 0), *b = in_t(s, 1);
    if (!a || !b || s->op->nin < 2) return false;
    bool same = a->rank == b->rank;
    for (int32_t d = 0; same && d < a->rank; d++) same = a->shape[d] == b->shape[d];
    return !same && (a->rank > 4 || b->rank > 4);
}
/* int16 input: 3; int8: 2; else 1 (SOFTMAX, MEAN, RELU6 ...). */
static int32_t by_int(const sig *s, bool int16) {
    int32_t t = in_type(s, 0);
    return int16 && t == TFL_TensorType_INT16 ? 3 : t == TFL_TensorType_INT8 ? 2 : 1;
}

static int32_t conv_2d(const sig *s) {
    const int32_t I8 = TFL_TensorType_INT8, I16 = TFL_TensorType_INT16;
    const tfl_wtensor *x = in_t(s, 0), *w = in_t(s, 1);
    if (types3(s, I16, I8, I16) && opt(s, TFL_Conv2DOptions_quantized_bias_type, 0)) return 8;
    if (x && x->rank > 0 && dim(x, 3) != dim(w, 3)) return 6; /* grouped */
    if (in_type(s, 0) == I16 && in_type(s, 1) == I16 && out_type(s, 1) == I16) return 4;
    if (types3(s, I8, I8, I8)) return 3;
    if (types3(s, I8, TFL_TensorType_INT4, I8)) return 7;
    if (types3(s, TFL_TensorType_FLOAT32, I8, TFL_TensorType_FLOAT32))
        return scales(w) && (int64_t)scales(w) == dim(w, 0) ? 5 : 2;
    return 1;
}

static int32_t depthwise(const sig *s) {
    const int32_t I8 = TFL_TensorType_INT8, I16 = TFL_TensorType_INT16;
    const tfl_wtensor *w = in_t(s, 1);
    if (in_type(s, 0) == I16 && in_type(s, 1) == I16 && out_type(s, 1) == I16) return 5;
    if (types3(s, TFL_TensorType_FLOAT32, I8, TFL_TensorType_FLOAT32))
        return scales(w) && (int64_t)scales(w) == dim(w, 3) ? 6 : 4;
    if (types3(s, I8, I8, I8)) return 3;
    if (types3(s, I8, TFL_TensorType_INT4, I8)) return 7;
    if (opt(s, TFL_DepthwiseConv2DOptions_dilation_w_factor, 1) != 1 ||
        opt(s, TFL_DepthwiseConv2DOptions_dilation_h_factor, 1) != 1)
        return 2;
    return 1;
}

static int32_t fully_connected(const sig *s) {
    const int32_t I8 = TFL_TensorType_INT8, I16 = TFL_TensorType_INT16,
                  F32 = TFL_TensorType_FLOAT32;
    const tfl_wtensor *w = in_t(s, 1);
    if (types3(s, F32, I8, F32) && scales(w) > 1 && (int64_t)scales(w) == dim(w, 0)) return 12;
    if (types3(s, I16, I8, I16) && opt(s, TFL_FullyConnectedOptions_quantized_bias_type, 0))
        return 11;
    if (types3(s, I16, I16, I16)) return 7;
    if (s->op->nin == 2) return 6; /* no bias (an absent one is a third input) */
    if (opt(s, TFL_FullyConnectedOptions_keep_num_dims, 0)) return 5;
    if (types3(s, I8, I8, I8)) return 4;
    if (types3(s, I8, TFL_TensorType_INT4, I8)) return 10;
    if (types3(s, F32, I8, F32))
        return opt(s, TFL_FullyConnectedOptions_asymmetric_quantize_inputs, 0) ? 9 : 3;
    if (opt(s, TFL_FullyConnectedOptions_weights_format, 0) == 1) return 2; /* shuffled */
    return 1;
}

static int32_t mul(const sig *s) {
    int32_t t = in_type(s, 0);
    const tfl_wtensor *a = in_t(s, 0), *b = in_t(s, 1), *o = out_t(s, 0);
    bool quantized = (a && a->q) || (b && b->q);
    if ((t == TFL_TensorType_INT16 && !quantized) || t == TFL_TensorType_UINT32) return 7;
    if (t == TFL_TensorType_COMPLEX64) return 6;
    if (t == TFL_TensorType_INT64) return 5;
    if (t == TFL_TensorType_INT16) return 4;
    if (scales(a) && scales(b) && scales(o)) {
        double sa = a->q->scale[0], sb = b->q->scale[0], so = o->q->scale[0];
        if (sa != 0 && sb != 0 && so != 0 && sa * sb / so >= 1.0) return 3;
    }
    return t == TFL_TensorType_INT8 ? 2 : 1;
}

static int32_t dequantize(const sig *s) {
    int32_t t = in_type(s, 0);
    const tfl_wtensor *x = in_t(s, 0);
    if (t == TFL_TensorType_INT4) return 6;
    if (t == TFL_TensorType_INT16 || t == TFL_TensorType_FLOAT16) return 3;
    if (t == TFL_TensorType_INT8)
        return scales(x) > 1 && (int64_t)scales(x) == dim(x, x->q->quantized_dimension) ? 5 : 2;
    return 1;
}

static int32_t quantize(const sig *s) {
    const tfl_wtensor *o = out_t(s, 0);
    if (in_type(s, 0) == TFL_TensorType_INT4 || out_type(s, 0) == TFL_TensorType_INT4) return 4;
    if (scales(o) > 1 && (int64_t)scales(o) == dim(o, o->q->quantized_dimension)) return 3;
    return out_type(s, 0) == TFL_TensorType_INT16 ? 2 : 1;
}

static int32_t strided_slice(const sig *s) {
    int32_t t = in_type(s, 0);
    if (opt(s, TFL_StridedSliceOptions_offset, 0)) return 8;
    if (t == TFL_TensorType_UINT32) return 7;
    if (opt(s, TFL_StridedSliceOptions_ellipsis_mask, 0) ||
        opt(s, TFL_StridedSliceOptions_new_axis_mask, 0))
        return 6;
    if (t == TFL_TensorType_STRING) return 5;
    if (in_rank(s, 0) > 4) return 4;
    if (t == TFL_TensorType_BOOL) return 3;
    return t == TFL_TensorType_INT8 ? 2 : 1;
}

static int32_t transpose_conv(const sig *s) {
    if (types3(s, TFL_TensorType_INT16, TFL_TensorType_INT8, TFL_TensorType_INT16) &&
        opt(s, TFL_TransposeConvOptions_quantized_bias_type, 0))
        return 5;
    if (opt(s, TFL_TransposeConvOptions_fused_activation_function, 0)) return 4;
    if (s->op->nin == 4 && in_type(s, 3) != NO_TYPE) return 3; /* a bias */
    return in_type(s, 1) == TFL_TensorType_INT8 ? 2 : 1;
}

static int32_t add_sub(const sig *s, bool add) {
    int32_t t = in_type(s, 0);
    const tfl_wtensor *a = in_t(s, 0);
    uint16_t pot = add ? TFL_AddOptions_pot_scale_int16 : TFL_SubOptions_pot_scale_int16;
    bool i16 = t == TFL_TensorType_INT16 && out_type(s, 0) == TFL_TensorType_INT16;
    if (add && t == TFL_TensorType_INT16 && !(a && a->q)) return 5;
    if (!add && i16 && !opt(s, pot, 1)) return 5;
    if (t == TFL_TensorType_INT64) return 4;
    if (add && i16 && !opt(s, pot, 1)) return 3;
    if (!add && broadcast5(s)) return 3;
    return t == TFL_TensorType_INT8 ? 2 : 1;
}

int32_t tio__tfl_op_version(const tfl_wmodel *m, const tfl_wsubgraph *sg, const tfl_wop *op) {
    if (op->opcode >= m->ncodes || m->codes[op->opcode].custom) return 1;
    sig s = {sg, op};
    int32_t t = in_type(&s, 0);
    const int32_t I8 = TFL_TensorType_INT8, I16 = TFL_TensorType_INT16;
    switch (m->codes[op->opcode].builtin) {
    case TFL_BuiltinOperator_CONV_2D: return conv_2d(&s);
    case TFL_BuiltinOperator_DEPTHWISE_CONV_2D: return depthwise(&s);
    case TFL_BuiltinOperator_FULLY_CONNECTED: return fully_connected(&s);
    case TFL_BuiltinOperator_MUL: return mul(&s);
    case TFL_BuiltinOperator_DEQUANTIZE: return dequantize(&s);
    case TFL_BuiltinOperator_QUANTIZE: return quantize(&s);
    case TFL_BuiltinOperator_STRIDED_SLICE: return strided_slice(&s);
    case TFL_BuiltinOperator_TRANSPOSE_CONV: return transpose_conv(&s);
    case TFL_BuiltinOperator_ADD: return add_sub(&s, true);
    case TFL_BuiltinOperator_SUB: return add_sub(&s, false);
    case TFL_BuiltinOperator_MAX_POOL_2D:
    case TFL_BuiltinOperator_AVERAGE_POOL_2D:
        return t == I16 && out_type(&s, 0) == I16 ? 3 : t == I8 ? 2 : 1;
    case TFL_BuiltinOperator_TRANSPOSE:
        return in_rank(&s, 0) > 5 ? 6 : t == I16 ? 5 : in_rank(&s, 0) > 4 ? 4
               : t == TFL_TensorType_BOOL ? 3 : t == I8 ? 2 : 1;
    case TFL_BuiltinOperator_SPLIT: {
        int32_t x = in_type(&s, 1); /* input 0 is the axis */
        return x == I16 ? 4 : x == TFL_TensorType_INT32 ? 3 : x == I8 ? 2 : 1;
    }
    case TFL_BuiltinOperator_ABS: {
        const tfl_wtensor *x = in_t(&s, 0);
        if (t == TFL_TensorType_INT32) return 5;
        if (t == I16) return x && x->q ? 3 : 4;
        return t == I8 || t == TFL_TensorType_UINT8 ? 2 : 1;
    }
    case TFL_BuiltinOperator_RELU:
        return t == I16 ? 3 : t == I8 || t == TFL_TensorType_UINT8 ? 2 : 1;
    case TFL_BuiltinOperator_MAXIMUM:
    case TFL_BuiltinOperator_MINIMUM:
        return t == I16 && out_type(&s, 0) == I16 ? 4 : broadcast5(&s) ? 3 : t == I8 ? 2 : 1;
    case TFL_BuiltinOperator_DIV: return broadcast5(&s) ? 2 : 1;
    case TFL_BuiltinOperator_TANH:
    case TFL_BuiltinOperator_LOGISTIC:
        return t == I16 && out_type(&s, 0) == I16 ? 3 : t == I8 ? 2 : 1;
    case TFL_BuiltinOperator_LEAKY_RELU: return t == I16 ? 2 : 1;
    case TFL_BuiltinOperator_PAD:
    case TFL_BuiltinOperator_PADV2: return in_rank(&s, 0) > 4 ? 4 : by_int(&s, true);
    case TFL_BuiltinOperator_CONCATENATION:
        return t == TFL_TensorType_UINT32 ? 4 : by_int(&s, true);
    case TFL_BuiltinOperator_SOFTMAX:
    case TFL_BuiltinOperator_MEAN:
    case TFL_BuiltinOperator_REDUCE_MAX:
    case TFL_BuiltinOperator_RELU6: return by_int(&s, true);
    case TFL_BuiltinOperator_SPLIT_V:
    case TFL_BuiltinOperator_SUM:
    case TFL_BuiltinOperator_LOG_SOFTMAX: return by_int(&s, false);
    case TFL_BuiltinOperator_EXP:
    case TFL_BuiltinOperator_LOG: return t == I8 || t == I16 ? 2 : 1;
    case TFL_BuiltinOperator_GELU: return t == I8 || t == TFL_TensorType_UINT8 ? 2 : 1;
    default: return 1; /* RESHAPE, SQRT, NEG, FLOOR, CEIL, ELU, POW, HARD_SWISH ... */
    }
}

void tio__tfl_w_versions(tfl_wmodel *m) {
    for (size_t g = 0; g < m->nsubgraphs; g++) {
        const tfl_wsubgraph *sg = &m->subgraphs[g];
        for (size_t k = 0; k < sg->nops; k++) {
            const tfl_wop *op = &sg->ops[k];
            if (op->opcode >= m->ncodes) continue;
            int32_t v = tio__tfl_op_version(m, sg, op);
            if (v > m->codes[op->opcode].version) m->codes[op->opcode].version = v;
        }
    }
}
