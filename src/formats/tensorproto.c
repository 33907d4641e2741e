/* A bare ONNX TensorProto (.pb): one tensor, the file onnx.numpy_helper's
 * from_array(a, name).SerializeToString() writes, and the input_N.pb /
 * output_N.pb of ONNX's backend test data. The decoding and encoding are the
 * ONNX module's (src/onnx: read.c, write.c); this is the descriptor.
 *
 * Nothing in the bytes says that they are a TensorProto, so there is no
 * probe: a file is read as one when its name ends in .pb (and no format
 * recognises its content) or when the format is named, and the read is
 * strict (every field one of TensorProto's, data_type present, the data the
 * size the shape needs). docs/formats/onnx-tensor.md. */
#include "onnx/onnx.h"
#include "protobuf/pb.h"

#define TP_FMT "onnx-tensor"

static int tp_read(tio_read_ctx *ctx, tio_error *err) {
    return tio__onnx_read_tensorproto(ctx, TP_FMT, err);
}

static int tp_check(const tio_write_plan *p, tio_error *err) {
    size_t n = tio__plan_count(p);
    if (n != 1)
        return tio__err(err, TIO_E_UNSUPPORTED, TP_FMT, -1,
                        "a TensorProto file holds one tensor; the container has %zu (write "
                        "each to its own file)",
                        n);
    return TIO_OK;
}

typedef struct tp_writer {
    tio_write_plan *plan;
} tp_writer;

static int tp_emit(tio_pb_writer *pw, void *ctx, tio_error *err) {
    tp_writer *w = ctx;
    return tio__onnx_put_tensor(pw, w->plan, 0, NULL, err);
}

static int tp_write(tio_write_plan *p, tio_sink *s, tio_error *err) {
    int rc = tp_check(p, err);
    if (rc) return rc;
    tp_writer w = {p};
    return tio__pb_write(s, TP_FMT, tp_emit, &w, err);
}

extern const tio_format_desc tio__format_tensorproto;

const tio_format_desc tio__format_tensorproto = {
    .name = TP_FMT,
    .description = "ONNX TensorProto (.pb): one tensor, as onnx.numpy_helper writes it and "
                   "ONNX's backend test data hold their inputs and outputs",
    .extensions = ".pb",
    .caps = TIO_CAP_NAMES,
    .dtypes = TIO__ONNX_DTYPES,
    .probe = NULL, /* not self-identifying: by extension or by name only */
    .read = tp_read,
    .check = tp_check,
    .write = tp_write,
};
