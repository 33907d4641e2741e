/*
 * TensorFlow Lite builtin operators that tensio raises to ONNX: the table
 * (data, src/tflite/opmap.c) and the raise (src/tflite/raise.c).
 */
#ifndef TIO_TFLITE_OPMAP_H
#define TIO_TFLITE_OPMAP_H

#include "core/internal.h"
#include "flatbuf/flatbuf.h"

/* How an operator is raised (raise.c has one routine per kind). */
typedef enum tio_tfl_kind {
    TFL_K_BINARY = 1, /* elementwise with broadcasting, fused activation */
    TFL_K_UNARY,      /* elementwise, one input */
    TFL_K_CLIP,       /* Clip(x, lo, hi) */
    TFL_K_LEAKY,      /* LeakyRelu(alpha) */
    TFL_K_CONV,       /* CONV_2D: OHWI weights */
    TFL_K_DWCONV,     /* DEPTHWISE_CONV_2D: 1HWO weights, group = channels */
    TFL_K_TCONV,      /* TRANSPOSE_CONV: ConvTranspose, IOHW weights */
    TFL_K_POOL,       /* AVERAGE/MAX_POOL_2D */
    TFL_K_FC,         /* FULLY_CONNECTED: Gemm transB=1 */
    TFL_K_RESHAPE,    /* RESHAPE, SQUEEZE: Reshape to the output's static shape */
    TFL_K_SOFTMAX,    /* Softmax(beta * x) on the last axis */
    TFL_K_CONCAT,     /* Concat(axis), fused activation */
    TFL_K_PAD,        /* Pad with zeros, pads from a constant */
    TFL_K_MEAN,       /* ReduceMean, axes from a constant */
    TFL_K_TRANSPOSE,  /* Transpose, perm from a constant */
    TFL_K_SLICE,      /* STRIDED_SLICE: Slice (+ Reshape for shrink_axis_mask) */
    TFL_K_QUANTIZE,   /* QuantizeLinear (of the float view of the input) */
    TFL_K_DEQUANTIZE  /* the float view of the input */
} tio_tfl_kind;

typedef struct tio_tfl_opmap {
    int32_t code;       /* BuiltinOperator */
    tio_tfl_kind kind;
    const char *onnx;   /* the ONNX operator */
    uint8_t options;    /* the BuiltinOptions member read (0: none) */
    double lo, hi;      /* TFL_K_CLIP bounds */
} tio_tfl_opmap;

/* The table entry of a builtin operator, or NULL when it has no ONNX form. */
const tio_tfl_opmap *tio__tfl_opmap(int32_t code);

/* Raises subgraph `sg` of a verified model to the container's graph in ONNX
 * semantics. codes[k]: operator code k's builtin operator; ctensor[i]: the
 * container tensor of tensor i, or -1. native: build one node per TFLite
 * operator instead (TIO_OPEN_NATIVE_GRAPH). An operator that has no ONNX
 * form (or one tensio does not raise) does not fail: the graph keeps it as a
 * native node and is marked opaque with every such operator listed, so that
 * a write to a graph format is refused. Errors: memory and limits only. */
int tio__tfl_raise(tio_read_ctx *ctx, const tio_fb_ref *sg, const tio_fb_vec *opcodes,
                   const int32_t *codes, uint32_t ncodes, const int64_t *ctensor, bool native,
                   tio_error *err);

#endif /* TIO_TFLITE_OPMAP_H */
