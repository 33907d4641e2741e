/* ONNX's own typing rules that the writer needs, as data (from the ONNX
 * operator docs, default domain): the inputs whose type constraint is
 * tensor(int64) only, those that are tensor(bool) only, the outputs that
 * are always int64, the inputs and outputs that one type parameter binds,
 * and attributes that an opset introduced (with their default). Inputs typed Tind
 * (int32 or int64: Gather, Slice, GatherElements, ScatterElements, CumSum's
 * axis, Pad's axes, ...) are not listed: int32 is valid there. */
#include "onnx/onnx.h"

#include <string.h>

typedef struct ox_i64_input {
    const char *op;
    unsigned input;
    int since; /* the opset from which this input exists in this form */
} ox_i64_input;

static const ox_i64_input ox_i64_inputs[] = {
    {"Loop", 0, 1},              /* M (the trip count) */
    {"Reshape", 1, 5},           /* shape */
    {"Expand", 1, 8},            /* shape */
    {"ConstantOfShape", 0, 9},   /* input (the shape) */
    {"Tile", 1, 6},              /* repeats */
    {"Squeeze", 1, 13},          /* axes */
    {"Unsqueeze", 1, 13},        /* axes */
    {"Split", 1, 13},            /* split */
    {"TopK", 1, 10},             /* K */
    {"Pad", 1, 11},              /* pads */
    {"Resize", 3, 11},           /* sizes */
    {"ReduceSum", 1, 13},        /* axes */
    {"ReduceMean", 1, 18},       {"ReduceMax", 1, 18},       {"ReduceMin", 1, 18},
    {"ReduceProd", 1, 18},       {"ReduceL1", 1, 18},        {"ReduceL2", 1, 18},
    {"ReduceLogSum", 1, 18},     {"ReduceLogSumExp", 1, 18}, {"ReduceSumSquare", 1, 18},
    {"GatherND", 1, 11},         /* indices */
    {"ScatterND", 1, 11},        /* indices */
    {"NonMaxSuppression", 2, 10}, /* max_output_boxes_per_class */
    {"Trilu", 1, 14},            /* k */
    {"ReverseSequence", 1, 10},  /* sequence_lens */
    {"RoiAlign", 2, 10},         /* batch_indices */
    {"MaxUnpool", 2, 11},        /* output_shape */
    {"Col2Im", 1, 18},           /* image_shape */
    {"Col2Im", 2, 18},           /* block_shape */
};

/* Conditions: tensor(bool) only, in every opset that has the op. */
static const struct {
    const char *op;
    unsigned input;
} ox_bool_inputs[] = {{"If", 0}, {"Loop", 1}, {"Where", 0}};

typedef struct ox_i64_output {
    const char *op;
    int output; /* -1: every output */
} ox_i64_output;

static const ox_i64_output ox_i64_outputs[] = {
    {"Shape", 0},  {"Size", 0},          {"NonZero", 0}, {"ArgMax", 0},
    {"ArgMin", 0}, {"NonMaxSuppression", 0}, {"TopK", 1}, {"Unique", 1},
    {"Unique", 2}, {"Unique", 3},
};

/* Inputs and outputs that one type parameter of op binds to one type (T of
 * Add: A, B and C), for the ops that integer (shape) values go through; an
 * op not listed binds nothing here. Bit k: input (output) k; OX_EVERY:
 * every input (the variadic ones). An op may have several groups (Slice:
 * T for data and output, Tind for starts, ends, axes and steps). */
#define OX_EVERY UINT32_MAX
typedef struct ox_type_group {
    const char *op;
    uint32_t inputs, outputs;
} ox_type_group;

static const ox_type_group ox_type_groups[] = {
    {"Add", 3, 1},        {"Sub", 3, 1},         {"Mul", 3, 1},       {"Div", 3, 1},
    {"Mod", 3, 1},        {"BitShift", 3, 1},    {"MatMul", 3, 1},    {"Pow", 1, 1},
    {"Max", OX_EVERY, 1}, {"Min", OX_EVERY, 1},  {"Sum", OX_EVERY, 1}, {"Mean", OX_EVERY, 1},
    {"Concat", OX_EVERY, 1}, {"Einsum", OX_EVERY, 1},
    {"Equal", 3, 0},      {"Less", 3, 0},        {"Greater", 3, 0},
    {"LessOrEqual", 3, 0}, {"GreaterOrEqual", 3, 0},
    {"Neg", 1, 1},        {"Abs", 1, 1},         {"Sign", 1, 1},      {"Identity", 1, 1},
    {"Clip", 7, 1},       {"Where", 6, 1},       {"Range", 7, 1},     {"CumSum", 1, 1},
    {"Reshape", 1, 1},    {"Expand", 1, 1},      {"Tile", 1, 1},      {"Flatten", 1, 1},
    {"Squeeze", 1, 1},    {"Unsqueeze", 1, 1},   {"Transpose", 1, 1}, {"Trilu", 1, 1},
    {"Gather", 1, 1},     {"GatherElements", 1, 1}, {"GatherND", 1, 1},
    {"ScatterElements", 5, 1}, {"ScatterND", 5, 1},
    {"Slice", 1, 1},      {"Slice", 30, 0},      {"Split", 1, OX_EVERY}, {"Pad", 5, 1},
    {"ReduceMax", 1, 1},  {"ReduceMin", 1, 1},   {"ReduceSum", 1, 1}, {"ReduceProd", 1, 1},
    {"ReduceMean", 1, 1}, {"TopK", 1, 1},        {"Unique", 1, 1},    {"OneHot", 4, 1},
    {"Resize", 1, 1},
};

typedef struct ox_attr_since {
    const char *op, *attr;
    int since;
    int64_t dflt;
} ox_attr_since;

#define OX_NO_DFLT INT64_MIN /* no value of the attribute is left out */

static const ox_attr_since ox_attr_sinces[] = {
    {"Reshape", "allowzero", 14, 0},
    {"Shape", "start", 15, 0},
    {"Shape", "end", 15, OX_NO_DFLT},
    {"BatchNormalization", "training_mode", 14, 0},
    {"GRU", "layout", 14, 0},
    {"LSTM", "layout", 14, 0},
    {"RNN", "layout", 14, 0},
    {"ReduceSum", "noop_with_empty_axes", 13, 0},
    {"ReduceMean", "noop_with_empty_axes", 18, 0},
    {"ReduceMax", "noop_with_empty_axes", 18, 0},
    {"ReduceMin", "noop_with_empty_axes", 18, 0},
    {"ReduceProd", "noop_with_empty_axes", 18, 0},
    {"ReduceL1", "noop_with_empty_axes", 18, 0},
    {"ReduceL2", "noop_with_empty_axes", 18, 0},
    {"ReduceLogSum", "noop_with_empty_axes", 18, 0},
    {"ReduceLogSumExp", "noop_with_empty_axes", 18, 0},
    {"ReduceSumSquare", "noop_with_empty_axes", 18, 0},
    {"Resize", "antialias", 18, 0},
    {"Resize", "keep_aspect_ratio_policy", 18, 0},
    {"ArgMax", "select_last_index", 12, 0},
    {"ArgMin", "select_last_index", 12, 0},
    {"GatherND", "batch_dims", 12, 0},
    {"Dropout", "seed", 12, OX_NO_DFLT},
    {"Attention", "left_window_size", 25, -1},
    {"Attention", "right_window_size", 25, -1},
};

/* Element types an operator takes only from some opset on (the ONNX operator
 * docs' version histories), at the inputs in `inputs` (bit k: input k;
 * OX_EVERY: each): below `since` the operator has no such type there, and
 * onnxruntime refuses the model. bfloat16, which no operator takes before
 * opset 13, is listed only where it came later: tio__onnx_type_since says 13
 * for every other. */
typedef struct ox_type_since {
    const char *op;
    uint32_t inputs;
    uint32_t dtypes; /* bit d: tio_dtype d */
    int since;
} ox_type_since;

#define OX_T(d) (1u << (d))
#define OX_SMALL (OX_T(TIO_INT8) | OX_T(TIO_UINT8) | OX_T(TIO_INT16) | OX_T(TIO_UINT16))
#define OX_SINTS (OX_T(TIO_INT8) | OX_T(TIO_INT16) | OX_T(TIO_INT32) | OX_T(TIO_INT64))
#define OX_UINTS (OX_T(TIO_UINT8) | OX_T(TIO_UINT16) | OX_T(TIO_UINT32) | OX_T(TIO_UINT64))

static const ox_type_since ox_type_sinces[] = {
    {"Add", 3, OX_SMALL, 14},
    {"Sub", 3, OX_SMALL, 14},
    {"Mul", 3, OX_SMALL, 14},
    {"Div", 3, OX_SMALL, 14},
    {"Max", OX_EVERY, OX_SINTS | OX_UINTS, 12},
    {"Min", OX_EVERY, OX_SINTS | OX_UINTS, 12},
    {"Clip", 7, OX_SINTS | OX_UINTS, 12},
    {"MaxPool", 1, OX_T(TIO_INT8) | OX_T(TIO_UINT8), 12},
    {"Pow", 1, OX_T(TIO_INT32) | OX_T(TIO_INT64), 12},
    {"Pow", 2, OX_SINTS | OX_UINTS, 12},
    {"Relu", 1, OX_SINTS, 14},
    {"TopK", 1, OX_T(TIO_BFLOAT16), 24},
    {"SplitToSequence", 1, OX_T(TIO_BFLOAT16), 24},
};

int tio__onnx_type_since(const char *op, size_t input, tio_dtype d) {
    if (d <= TIO_DTYPE_INVALID || d >= 32) return 0;
    int need = d == TIO_BFLOAT16 ? 13 : 0;
    for (size_t i = 0; i < sizeof ox_type_sinces / sizeof ox_type_sinces[0]; i++) {
        const ox_type_since *e = &ox_type_sinces[i];
        if ((e->dtypes >> d & 1u) && e->since > need && tio__onnx_in_group(e->inputs, input) &&
            strcmp(e->op, op) == 0)
            need = e->since;
    }
    return need;
}

bool tio__onnx_input_int64(const char *op, size_t input, int64_t opset) {
    for (size_t i = 0; i < sizeof ox_i64_inputs / sizeof ox_i64_inputs[0]; i++)
        if (ox_i64_inputs[i].input == input && opset >= ox_i64_inputs[i].since &&
            strcmp(ox_i64_inputs[i].op, op) == 0)
            return true;
    return false;
}

bool tio__onnx_input_bool(const char *op, size_t input) {
    for (size_t i = 0; i < sizeof ox_bool_inputs / sizeof ox_bool_inputs[0]; i++)
        if (ox_bool_inputs[i].input == input && strcmp(ox_bool_inputs[i].op, op) == 0) return true;
    return false;
}

bool tio__onnx_output_int64(const char *op, size_t output) {
    for (size_t i = 0; i < sizeof ox_i64_outputs / sizeof ox_i64_outputs[0]; i++)
        if ((ox_i64_outputs[i].output < 0 || (size_t)ox_i64_outputs[i].output == output) &&
            strcmp(ox_i64_outputs[i].op, op) == 0)
            return true;
    return false;
}

bool tio__onnx_type_group(const char *op, size_t i, uint32_t *inputs, uint32_t *outputs) {
    for (size_t t = 0; t < sizeof ox_type_groups / sizeof ox_type_groups[0]; t++)
        if (strcmp(ox_type_groups[t].op, op) == 0 && i-- == 0) {
            *inputs = ox_type_groups[t].inputs;
            *outputs = ox_type_groups[t].outputs;
            return true;
        }
    return false;
}

bool tio__onnx_in_group(uint32_t mask, size_t k) {
    return mask == OX_EVERY || (k < 32 && (mask >> k & 1u));
}

/* STRING attributes an opset introduced: at `dflt` (what the operator did
 * before) they are left out below `since`; the values in `late` (space-
 * separated) need `late_since`. */
typedef struct ox_sattr_since {
    const char *op, *attr;
    int since;
    const char *dflt, *late;
    int late_since;
} ox_sattr_since;

static const ox_sattr_since ox_sattr_sinces[] = {
    {"ScatterND", "reduction", 16, "none", "max min", 18},
    {"ScatterElements", "reduction", 16, "none", "max min", 18},
    /* before 16 RoiAlign did what "output_half_pixel" does (the default
     * from 16 is "half_pixel": see write.c's ox_form_plan) */
    {"RoiAlign", "coordinate_transformation_mode", 16, "output_half_pixel", NULL, 0},
    /* how a cast to float8e8m0 (a type tensio has no dtype for) rounds */
    {"Cast", "round_mode", 24, "up", NULL, 0},
    {"CastLike", "round_mode", 24, "up", NULL, 0},
};

static const ox_attr_since *ox_int_since(const char *op, const char *attr) {
    for (size_t i = 0; i < sizeof ox_attr_sinces / sizeof ox_attr_sinces[0]; i++)
        if (strcmp(ox_attr_sinces[i].op, op) == 0 && strcmp(ox_attr_sinces[i].attr, attr) == 0)
            return &ox_attr_sinces[i];
    return NULL;
}

static const ox_sattr_since *ox_str_since(const char *op, const char *attr) {
    for (size_t i = 0; i < sizeof ox_sattr_sinces / sizeof ox_sattr_sinces[0]; i++)
        if (strcmp(ox_sattr_sinces[i].op, op) == 0 && strcmp(ox_sattr_sinces[i].attr, attr) == 0)
            return &ox_sattr_sinces[i];
    return NULL;
}

/* Attributes an opset removed: from `removed` on, one at `keep` (an INT; any
 * value when any) means what the operator does without it and is left out;
 * another value has no form there. */
typedef struct ox_attr_gone {
    const char *op, *attr; /* op NULL: every operator */
    int removed;
    int64_t keep;
    bool any;
} ox_attr_gone;

static const ox_attr_gone ox_attr_gones[] = {
    {NULL, "consumed_inputs", 6, 0, true}, /* an in-place hint */
    /* legacy broadcasting: without `axis`, the trailing alignment numpy's
     * rules give (with broadcast=0 the shapes are equal anyway) */
    {"Add", "broadcast", 7, 0, true},  {"Sub", "broadcast", 7, 0, true},
    {"Mul", "broadcast", 7, 0, true},  {"Div", "broadcast", 7, 0, true},
    {"Pow", "broadcast", 7, 0, true},  {"Gemm", "broadcast", 7, 0, true},
    {"And", "broadcast", 7, 0, true},  {"Or", "broadcast", 7, 0, true},
    {"Xor", "broadcast", 7, 0, true},  {"Equal", "broadcast", 7, 0, true},
    {"Greater", "broadcast", 7, 0, true}, {"Less", "broadcast", 7, 0, true},
    /* their `axis` (with broadcast=1: refused, write.c) */
    {"Add", "axis", 7, 0, true},  {"Sub", "axis", 7, 0, true},  {"Mul", "axis", 7, 0, true},
    {"Div", "axis", 7, 0, true},  {"Pow", "axis", 7, 0, true},  {"And", "axis", 7, 0, true},
    {"Or", "axis", 7, 0, true},   {"Xor", "axis", 7, 0, true},  {"Equal", "axis", 7, 0, true},
    {"Greater", "axis", 7, 0, true}, {"Less", "axis", 7, 0, true},
    {"BatchNormalization", "is_test", 7, 1, false}, /* 0: the batch's statistics */
    {"BatchNormalization", "spatial", 9, 1, false},
    {"Dropout", "is_test", 7, 0, true}, /* inference either way from 7 */
};

int tio__onnx_attr_gone(const char *op, const tio_gattr *a, bool *keep) {
    for (size_t i = 0; i < sizeof ox_attr_gones / sizeof ox_attr_gones[0]; i++) {
        const ox_attr_gone *e = &ox_attr_gones[i];
        if ((e->op && strcmp(e->op, op) != 0) || strcmp(e->attr, a->name) != 0) continue;
        *keep = e->any || (a->type == TIO_ATTR_INT && a->i == e->keep);
        return e->removed;
    }
    *keep = false;
    return 0;
}

int tio__onnx_attr_from(const char *op, const char *attr) {
    const ox_attr_since *e = ox_int_since(op, attr);
    const ox_sattr_since *se = e ? NULL : ox_str_since(op, attr);
    return e ? e->since : se ? se->since : 0;
}

int tio__onnx_attr_needs(const char *op, const tio_gattr *a) {
    if (a->type == TIO_ATTR_INT) {
        const ox_attr_since *e = ox_int_since(op, a->name);
        return !e || (e->dflt != OX_NO_DFLT && a->i == e->dflt) ? 0 : e->since;
    }
    const ox_sattr_since *e = a->type == TIO_ATTR_STRING ? ox_str_since(op, a->name) : NULL;
    if (!e) return 0;
    const char *v = a->s ? a->s : "";
    if (strcmp(v, e->dflt) == 0) return 0;
    size_t n = strlen(v);
    for (const char *p = e->late; n && p && (p = strstr(p, v)) != NULL; p += n)
        if ((p == e->late || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return e->late_since;
    return e->since;
}
