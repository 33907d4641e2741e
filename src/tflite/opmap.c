/*
 * TensorFlow Lite builtin operators → ONNX: the table the raise
 * (src/tflite/raise.c) reads. An operator not listed has no ONNX form in
 * tensio: a model using it still opens, and a conversion to a graph format
 * is refused naming it (docs/formats/tflite.md).
 */
#include "tflite/opmap.h"
#include "tflite/schema.h"

static const tio_tfl_opmap TFL_OPS[] = {
    {TFL_BuiltinOperator_ADD, TFL_K_BINARY, "Add", TFL_BuiltinOptions_AddOptions, 0, 0},
    {TFL_BuiltinOperator_AVERAGE_POOL_2D, TFL_K_POOL, "AveragePool",
     TFL_BuiltinOptions_Pool2DOptions, 0, 0},
    {TFL_BuiltinOperator_CONCATENATION, TFL_K_CONCAT, "Concat",
     TFL_BuiltinOptions_ConcatenationOptions, 0, 0},
    {TFL_BuiltinOperator_CONV_2D, TFL_K_CONV, "Conv", TFL_BuiltinOptions_Conv2DOptions, 0, 0},
    {TFL_BuiltinOperator_DEPTHWISE_CONV_2D, TFL_K_DWCONV, "Conv",
     TFL_BuiltinOptions_DepthwiseConv2DOptions, 0, 0},
    {TFL_BuiltinOperator_DEQUANTIZE, TFL_K_DEQUANTIZE, "DequantizeLinear", 0, 0, 0},
    {TFL_BuiltinOperator_FULLY_CONNECTED, TFL_K_FC, "Gemm",
     TFL_BuiltinOptions_FullyConnectedOptions, 0, 0},
    {TFL_BuiltinOperator_LOGISTIC, TFL_K_UNARY, "Sigmoid", 0, 0, 0},
    {TFL_BuiltinOperator_MAX_POOL_2D, TFL_K_POOL, "MaxPool", TFL_BuiltinOptions_Pool2DOptions,
     0, 0},
    {TFL_BuiltinOperator_MUL, TFL_K_BINARY, "Mul", TFL_BuiltinOptions_MulOptions, 0, 0},
    {TFL_BuiltinOperator_RELU, TFL_K_UNARY, "Relu", 0, 0, 0},
    {TFL_BuiltinOperator_RELU_N1_TO_1, TFL_K_CLIP, "Clip", 0, -1, 1},
    {TFL_BuiltinOperator_RELU6, TFL_K_CLIP, "Clip", 0, 0, 6},
    {TFL_BuiltinOperator_RESHAPE, TFL_K_RESHAPE, "Reshape", 0, 0, 0},
    {TFL_BuiltinOperator_SOFTMAX, TFL_K_SOFTMAX, "Softmax", TFL_BuiltinOptions_SoftmaxOptions,
     0, 0},
    {TFL_BuiltinOperator_TANH, TFL_K_UNARY, "Tanh", 0, 0, 0},
    {TFL_BuiltinOperator_PAD, TFL_K_PAD, "Pad", 0, 0, 0},
    {TFL_BuiltinOperator_TRANSPOSE, TFL_K_TRANSPOSE, "Transpose", 0, 0, 0},
    {TFL_BuiltinOperator_MEAN, TFL_K_MEAN, "ReduceMean", TFL_BuiltinOptions_ReducerOptions, 0,
     0},
    {TFL_BuiltinOperator_SUB, TFL_K_BINARY, "Sub", TFL_BuiltinOptions_SubOptions, 0, 0},
    {TFL_BuiltinOperator_DIV, TFL_K_BINARY, "Div", TFL_BuiltinOptions_DivOptions, 0, 0},
    {TFL_BuiltinOperator_STRIDED_SLICE, TFL_K_SLICE, "Slice",
     TFL_BuiltinOptions_StridedSliceOptions, 0, 0},
    {TFL_BuiltinOperator_SQUEEZE, TFL_K_RESHAPE, "Reshape", 0, 0, 0},
    {TFL_BuiltinOperator_LEAKY_RELU, TFL_K_LEAKY, "LeakyRelu",
     TFL_BuiltinOptions_LeakyReluOptions, 0, 0},
    {TFL_BuiltinOperator_QUANTIZE, TFL_K_QUANTIZE, "QuantizeLinear", 0, 0, 0},
    {TFL_BuiltinOperator_HARD_SWISH, TFL_K_UNARY, "HardSwish", 0, 0, 0},
    {TFL_BuiltinOperator_TRANSPOSE_CONV, TFL_K_TCONV, "ConvTranspose",
     TFL_BuiltinOptions_TransposeConvOptions, 0, 0},
};

const tio_tfl_opmap *tio__tfl_opmap(int32_t code) {
    for (size_t k = 0; k < sizeof TFL_OPS / sizeof TFL_OPS[0]; k++)
        if (TFL_OPS[k].code == code) return &TFL_OPS[k];
    return NULL;
}
