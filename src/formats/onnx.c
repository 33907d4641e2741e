/* The ONNX format (.onnx): a ModelProto (protobuf). The module is in
 * src/onnx; this is its descriptor. */
#include "onnx/onnx.h"

extern const tio_format_desc tio__format_onnx;

const tio_format_desc tio__format_onnx = {
    .name = "onnx",
    .description = "ONNX model (.onnx): a protobuf ModelProto, graph and initializers",
    .extensions = ".onnx",
    .caps = TIO_CAP_NAMES | TIO_CAP_SPARSE | TIO_CAP_GRAPH | TIO_CAP_VALUE_TYPES |
            TIO__CAP_CAST_WEIGHTS,
    .dtypes = TIO__ONNX_DTYPES,
    .probe = tio__onnx_probe,
    .read = tio__onnx_read,
    .check = tio__onnx_check,
    .write = tio__onnx_write,
    .options = "external_data opset",
};
