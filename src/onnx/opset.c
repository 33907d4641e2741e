/* What the default-domain opset changes in an operator's form, as data (from
 * the ONNX operator docs' version histories): the opset an operator first
 * appears in and the one that removed it; the attributes that became inputs
 * (and inputs that only exist from some opset); the ops whose `axis` changed
 * meaning at opset 13. The ONNX writer uses it to write a graph at another
 * opset (`opset=N`, `tensio convert --opset N`). */
#include "onnx/onnx.h"

#include <string.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

typedef struct ox_op_since {
    const char *op;
    int since, removed; /* removed: 0 when still in the latest opset */
} ox_op_since;

/* Operators newer than opset 7 (the lowest written) or removed since; every
 * other default-domain operator exists at every opset tensio writes. */
static const ox_op_since ox_ops[] = {
    {"Upsample", 7, 10},          {"Scatter", 9, 11},
    {"Acosh", 9, 0},              {"Asinh", 9, 0},
    {"Atanh", 9, 0},              {"Compress", 9, 0},
    {"ConstantOfShape", 9, 0},    {"Cosh", 9, 0},
    {"Erf", 9, 0},                {"EyeLike", 9, 0},
    {"IsNaN", 9, 0},              {"MaxUnpool", 9, 0},
    {"MeanVarianceNormalization", 9, 0},
    {"NonZero", 9, 0},            {"OneHot", 9, 0},
    {"Shrink", 9, 0},             {"Sign", 9, 0},
    {"Sinh", 9, 0},               {"TfIdfVectorizer", 9, 0},
    {"Where", 9, 0},              {"Expand", 8, 0},
    {"Max", 1, 0},                {"ConvInteger", 10, 0},
    {"DequantizeLinear", 10, 0},  {"IsInf", 10, 0},
    {"MatMulInteger", 10, 0},     {"Mod", 10, 0},
    {"NonMaxSuppression", 10, 0}, {"QLinearConv", 10, 0},
    {"QLinearMatMul", 10, 0},     {"QuantizeLinear", 10, 0},
    {"Resize", 10, 0},            {"ReverseSequence", 10, 0},
    {"RoiAlign", 10, 0},          {"StringNormalizer", 10, 0},
    {"ThresholdedRelu", 10, 0},   {"BitShift", 11, 0},
    {"ConcatFromSequence", 11, 0}, {"CumSum", 11, 0},
    {"Det", 11, 0},               {"DynamicQuantizeLinear", 11, 0},
    {"GatherElements", 11, 0},    {"GatherND", 11, 0},
    {"Range", 11, 0},             {"Round", 11, 0},
    {"ScatterElements", 11, 0},   {"ScatterND", 11, 0},
    {"SequenceAt", 11, 0},        {"SequenceConstruct", 11, 0},
    {"SequenceEmpty", 11, 0},     {"SequenceErase", 11, 0},
    {"SequenceInsert", 11, 0},    {"SequenceLength", 11, 0},
    {"SplitToSequence", 11, 0},   {"Unique", 11, 0},
    {"Celu", 12, 0},              {"Einsum", 12, 0},
    {"GreaterOrEqual", 12, 0},    {"LessOrEqual", 12, 0},
    {"NegativeLogLikelihoodLoss", 12, 0},
    {"SoftmaxCrossEntropyLoss", 12, 0},
    {"HardSwish", 14, 0},         {"Trilu", 14, 0},
    {"Bernoulli", 15, 0},         {"CastLike", 15, 0},
    {"Optional", 15, 0},          {"OptionalGetElement", 15, 0},
    {"OptionalHasElement", 15, 0}, {"GridSample", 16, 0},
    {"BlackmanWindow", 17, 0},    {"DFT", 17, 0},
    {"HammingWindow", 17, 0},     {"HannWindow", 17, 0},
    {"LayerNormalization", 17, 0}, {"MelWeightMatrix", 17, 0},
    {"STFT", 17, 0},              {"SequenceMap", 17, 0},
    {"BitwiseAnd", 18, 0},        {"BitwiseNot", 18, 0},
    {"BitwiseOr", 18, 0},         {"BitwiseXor", 18, 0},
    {"CenterCropPad", 18, 0},     {"Col2Im", 18, 0},
    {"GroupNormalization", 18, 0}, {"Mish", 18, 0},
    {"DeformConv", 19, 0},        {"AffineGrid", 20, 0},
    {"Gelu", 20, 0},              {"ImageDecoder", 20, 0},
    {"RegexFullMatch", 20, 0},    {"StringConcat", 20, 0},
    {"StringSplit", 20, 0},       {"Attention", 23, 0},
    {"RMSNormalization", 23, 0},  {"RotaryEmbedding", 23, 0},
    {"TensorScatter", 24, 0},     {"Swish", 24, 0},
    {"BitCast", 26, 0},           {"CumProd", 26, 0},
};

int tio__onnx_op_range(const char *op, int *removed) {
    for (size_t i = 0; i < N(ox_ops); i++)
        if (strcmp(ox_ops[i].op, op) == 0) {
            *removed = ox_ops[i].removed;
            return ox_ops[i].since;
        }
    *removed = 0;
    return 1;
}

/* Attributes that became inputs at `since` (attr set), and inputs that only
 * exist from `since` (attr NULL: below it the input must be absent, or a
 * constant equal to `dflt` everywhere, then it is left out). */
static const tio_onnx_form ox_forms[] = {
    {"Clip", "min", 1, TIO_ATTR_FLOAT, 11, 0},
    {"Clip", "max", 2, TIO_ATTR_FLOAT, 11, 0},
    {"Dropout", "ratio", 1, TIO_ATTR_FLOAT, 12, 0},
    {"Dropout", NULL, 2, TIO_ATTR_INT, 12, 0}, /* training_mode: false */
    {"Pad", "pads", 1, TIO_ATTR_INTS, 11, 0},
    {"Pad", "value", 2, TIO_ATTR_FLOAT, 11, 0},
    {"Pad", NULL, 3, TIO_ATTR_INTS, 18, 0}, /* axes */
    {"Slice", "starts", 1, TIO_ATTR_INTS, 10, 0},
    {"Slice", "ends", 2, TIO_ATTR_INTS, 10, 0},
    {"Slice", "axes", 3, TIO_ATTR_INTS, 10, 0},
    {"Slice", NULL, 4, TIO_ATTR_INTS, 10, 1}, /* steps: 1 */
    {"Split", "split", 1, TIO_ATTR_INTS, 13, 0},
    {"Squeeze", "axes", 1, TIO_ATTR_INTS, 13, 0},
    {"Unsqueeze", "axes", 1, TIO_ATTR_INTS, 13, 0},
    {"TopK", "k", 1, TIO_ATTR_INT, 10, 0},
    {"Upsample", "scales", 1, TIO_ATTR_FLOATS, 9, 0},
    {"ReduceSum", "axes", 1, TIO_ATTR_INTS, 13, 0},
    {"ReduceMean", "axes", 1, TIO_ATTR_INTS, 18, 0},
    {"ReduceMax", "axes", 1, TIO_ATTR_INTS, 18, 0},
    {"ReduceMin", "axes", 1, TIO_ATTR_INTS, 18, 0},
    {"ReduceProd", "axes", 1, TIO_ATTR_INTS, 18, 0},
    {"ReduceL1", "axes", 1, TIO_ATTR_INTS, 18, 0},
    {"ReduceL2", "axes", 1, TIO_ATTR_INTS, 18, 0},
    {"ReduceLogSum", "axes", 1, TIO_ATTR_INTS, 18, 0},
    {"ReduceLogSumExp", "axes", 1, TIO_ATTR_INTS, 18, 0},
    {"ReduceSumSquare", "axes", 1, TIO_ATTR_INTS, 18, 0},
    /* nonpad_kv_seqlen: no value of it means its absence */
    {"Attention", NULL, 6, TIO_ATTR_INTS, 24, TIO__ONNX_NO_DFLT},
};

const tio_onnx_form *tio__onnx_forms(const char *op, size_t *count) {
    size_t i = 0;
    while (i < N(ox_forms) && strcmp(ox_forms[i].op, op) != 0) i++;
    size_t j = i;
    while (j < N(ox_forms) && strcmp(ox_forms[j].op, op) == 0) j++;
    *count = j - i;
    return i < N(ox_forms) ? &ox_forms[i] : NULL;
}

bool tio__onnx_axis_changed_at_13(const char *op) {
    return strcmp(op, "Softmax") == 0 || strcmp(op, "LogSoftmax") == 0 ||
           strcmp(op, "Hardmax") == 0;
}
