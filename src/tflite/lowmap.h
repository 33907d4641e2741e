/*
 * ONNX operators that tensio lowers to TensorFlow Lite builtins: the table
 * (data, src/tflite/lowmap.c) the lowering (src/tflite/lower.c) reads.
 */
#ifndef TIO_TFLITE_LOWMAP_H
#define TIO_TFLITE_LOWMAP_H

#include <stdint.h>

/* How an operator is lowered (lower.c has one routine per kind). */
typedef enum tio_tfl_lkind {
    TFL_L_UNARY = 1, /* elementwise, one input, in whichever layout it has */
    TFL_L_BINARY,    /* elementwise with broadcasting, fused activation */
    TFL_L_CLIP,      /* Clip: RELU / RELU6 / RELU_N1_TO_1, else MAXIMUM + MINIMUM */
    TFL_L_LEAKY,     /* LeakyRelu(alpha) */
    TFL_L_HSIGMOID,  /* HardSigmoid: MUL, ADD with RELU6, MUL */
    TFL_L_CONV,      /* Conv: CONV_2D (OHWI) or DEPTHWISE_CONV_2D (1HWO), NHWC */
    TFL_L_CONVT,     /* ConvTranspose: TRANSPOSE_CONV (OHWI, VALID), ADD, STRIDED_SLICE */
    TFL_L_POOL,      /* MaxPool/AveragePool: *_POOL_2D, NHWC */
    TFL_L_GPOOL,     /* GlobalAveragePool/GlobalMaxPool: MEAN/REDUCE_MAX on H, W */
    TFL_L_REDUCE,    /* ReduceMean/ReduceMax/ReduceSum: axes as an int32 input */
    TFL_L_FC,        /* Gemm (FC form), MatMul by a constant: FULLY_CONNECTED */
    TFL_L_CONCAT,    /* Concat: CONCATENATION */
    TFL_L_RESHAPE,   /* Reshape, Flatten, Squeeze, Unsqueeze: RESHAPE to the static shape */
    TFL_L_TRANSPOSE, /* Transpose: TRANSPOSE, composed with the input's layout */
    TFL_L_SOFTMAX,   /* Softmax/LogSoftmax on the last axis */
    TFL_L_PAD,       /* Pad (constant mode): PAD / PADV2 */
    TFL_L_BN,        /* BatchNormalization not folded: MUL + ADD per channel */
    TFL_L_SLICE,     /* Slice (positive steps): STRIDED_SLICE */
    TFL_L_SPLIT,     /* Split: SPLIT_V */
    TFL_L_CAST,      /* Cast of float16 weights to float32: DEQUANTIZE where read */
    TFL_L_QUANT,     /* QuantizeLinear: folded into a tensor's quantization, or QUANTIZE */
    TFL_L_DEQUANT    /* DequantizeLinear: folded, or DEQUANTIZE where read in float */
} tio_tfl_lkind;

typedef struct tio_tfl_lowmap {
    const char *onnx;   /* the ONNX operator (default domain) */
    tio_tfl_lkind kind;
    int32_t code;       /* the BuiltinOperator written (the first of several) */
    uint8_t options;    /* its BuiltinOptions member (0: none) */
    int32_t code2;      /* a second builtin the kind may write (0: none) */
} tio_tfl_lowmap;

/* The table entry of an ONNX operator, or NULL when it has no TFLite form. */
const tio_tfl_lowmap *tio__tfl_lowmap(const char *onnx);

#endif /* TIO_TFLITE_LOWMAP_H */
