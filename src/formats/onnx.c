/* The ONNX format (.onnx): a ModelProto (protobuf). The module is in
 * src/onnx; this is its descriptor. */
#include "onnx/onnx.h"

extern const tio_format_desc tio__format_onnx;

const tio_format_desc tio__format_onnx = {
    .name = "onnx",
    .description = "ONNX model (.onnx): a protobuf ModelProto, graph and initializers",
    .extensions = ".onnx",
    .caps = TIO_CAP_NAMES | TIO_CAP_GRAPH,
    .dtypes = TIO_DTYPE_BIT(TIO_BOOL) | TIO_DTYPE_BIT(TIO_INT8) | TIO_DTYPE_BIT(TIO_INT16) |
              TIO_DTYPE_BIT(TIO_INT32) | TIO_DTYPE_BIT(TIO_INT64) | TIO_DTYPE_BIT(TIO_UINT8) |
              TIO_DTYPE_BIT(TIO_UINT16) | TIO_DTYPE_BIT(TIO_UINT32) |
              TIO_DTYPE_BIT(TIO_UINT64) | TIO_DTYPE_BIT(TIO_FLOAT16) |
              TIO_DTYPE_BIT(TIO_BFLOAT16) | TIO_DTYPE_BIT(TIO_FLOAT32) |
              TIO_DTYPE_BIT(TIO_FLOAT64) | TIO_DTYPE_BIT(TIO_COMPLEX64) |
              TIO_DTYPE_BIT(TIO_COMPLEX128),
    .probe = tio__onnx_probe,
    .read = tio__onnx_read,
    .check = tio__onnx_check,
    .write = tio__onnx_write,
    .options = "external_data opset",
};
