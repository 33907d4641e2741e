/*
 * ONNX -> TensorFlow Lite builtins: the table the lowering
 * (src/tflite/lower.c) reads. An operator not listed has no TFLite form in
 * tensio: the conversion is refused, naming every such node
 * (docs/formats/tflite.md, "ONNX -> TFLite").
 */
#include "tflite/lowmap.h"

#include "tflite/schema.h"

#include <string.h>

#define OP(x) TFL_BuiltinOperator_##x
#define OPT(x) TFL_BuiltinOptions_##x##Options

static const tio_tfl_lowmap TFL_LOW[] = {
    {"Relu", TFL_L_UNARY, OP(RELU), 0, 0},
    {"Sigmoid", TFL_L_UNARY, OP(LOGISTIC), 0, 0},
    {"Tanh", TFL_L_UNARY, OP(TANH), 0, 0},
    {"HardSwish", TFL_L_UNARY, OP(HARD_SWISH), OPT(HardSwish), 0},
    {"Gelu", TFL_L_UNARY, OP(GELU), OPT(Gelu), 0},
    {"Exp", TFL_L_UNARY, OP(EXP), OPT(Exp), 0},
    {"Log", TFL_L_UNARY, OP(LOG), 0, 0},
    {"Sqrt", TFL_L_UNARY, OP(SQRT), 0, 0},
    {"Abs", TFL_L_UNARY, OP(ABS), OPT(Abs), 0},
    {"Neg", TFL_L_UNARY, OP(NEG), OPT(Neg), 0},
    {"Floor", TFL_L_UNARY, OP(FLOOR), 0, 0},
    {"Ceil", TFL_L_UNARY, OP(CEIL), 0, 0},
    {"Elu", TFL_L_UNARY, OP(ELU), 0, 0},
    {"Add", TFL_L_BINARY, OP(ADD), OPT(Add), 0},
    {"Sub", TFL_L_BINARY, OP(SUB), OPT(Sub), 0},
    {"Mul", TFL_L_BINARY, OP(MUL), OPT(Mul), 0},
    {"Div", TFL_L_BINARY, OP(DIV), OPT(Div), 0},
    {"Max", TFL_L_BINARY, OP(MAXIMUM), OPT(MaximumMinimum), 0},
    {"Min", TFL_L_BINARY, OP(MINIMUM), OPT(MaximumMinimum), 0},
    {"Pow", TFL_L_BINARY, OP(POW), OPT(Pow), 0},
    {"Clip", TFL_L_CLIP, OP(RELU6), 0, OP(MAXIMUM)},
    {"LeakyRelu", TFL_L_LEAKY, OP(LEAKY_RELU), OPT(LeakyRelu), 0},
    {"HardSigmoid", TFL_L_HSIGMOID, OP(MUL), OPT(Mul), OP(ADD)},
    {"Conv", TFL_L_CONV, OP(CONV_2D), OPT(Conv2D), OP(DEPTHWISE_CONV_2D)},
    {"ConvTranspose", TFL_L_CONVT, OP(TRANSPOSE_CONV), OPT(TransposeConv), OP(STRIDED_SLICE)},
    {"MaxPool", TFL_L_POOL, OP(MAX_POOL_2D), OPT(Pool2D), OP(PAD)},
    {"AveragePool", TFL_L_POOL, OP(AVERAGE_POOL_2D), OPT(Pool2D), OP(PAD)},
    {"GlobalAveragePool", TFL_L_GPOOL, OP(MEAN), OPT(Reducer), 0},
    {"GlobalMaxPool", TFL_L_GPOOL, OP(REDUCE_MAX), OPT(Reducer), 0},
    {"ReduceMean", TFL_L_REDUCE, OP(MEAN), OPT(Reducer), 0},
    {"ReduceMax", TFL_L_REDUCE, OP(REDUCE_MAX), OPT(Reducer), 0},
    {"ReduceSum", TFL_L_REDUCE, OP(SUM), OPT(Reducer), 0},
    {"Gemm", TFL_L_FC, OP(FULLY_CONNECTED), OPT(FullyConnected), OP(RESHAPE)},
    {"MatMul", TFL_L_FC, OP(FULLY_CONNECTED), OPT(FullyConnected), OP(RESHAPE)},
    {"Concat", TFL_L_CONCAT, OP(CONCATENATION), OPT(Concatenation), 0},
    {"Reshape", TFL_L_RESHAPE, OP(RESHAPE), OPT(Reshape), 0},
    {"Flatten", TFL_L_RESHAPE, OP(RESHAPE), OPT(Reshape), 0},
    {"Squeeze", TFL_L_RESHAPE, OP(RESHAPE), OPT(Reshape), 0},
    {"Unsqueeze", TFL_L_RESHAPE, OP(RESHAPE), OPT(Reshape), 0},
    {"Transpose", TFL_L_TRANSPOSE, OP(TRANSPOSE), OPT(Transpose), 0},
    {"Softmax", TFL_L_SOFTMAX, OP(SOFTMAX), OPT(Softmax), 0},
    {"LogSoftmax", TFL_L_SOFTMAX, OP(LOG_SOFTMAX), OPT(LogSoftmax), 0},
    {"Pad", TFL_L_PAD, OP(PAD), OPT(Pad), OP(PADV2)},
    {"BatchNormalization", TFL_L_BN, OP(MUL), OPT(Mul), OP(ADD)},
    {"Slice", TFL_L_SLICE, OP(STRIDED_SLICE), OPT(StridedSlice), 0},
    {"Split", TFL_L_SPLIT, OP(SPLIT_V), OPT(SplitV), 0},
    {"Cast", TFL_L_CAST, OP(DEQUANTIZE), 0, 0},
    {"QuantizeLinear", TFL_L_QUANT, OP(QUANTIZE), 0, 0},
    {"DequantizeLinear", TFL_L_DEQUANT, OP(DEQUANTIZE), 0, 0},
};

const tio_tfl_lowmap *tio__tfl_lowmap(const char *onnx) {
    for (size_t k = 0; k < sizeof TFL_LOW / sizeof TFL_LOW[0]; k++)
        if (strcmp(TFL_LOW[k].onnx, onnx) == 0) return &TFL_LOW[k];
    return NULL;
}
