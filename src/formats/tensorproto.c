/* A bare ONNX TensorProto (.pb): one tensor, the file onnx.numpy_helper's
 * from_array(a, name).SerializeToString() writes, and the input_N.pb /
 * output_N.pb of ONNX's backend test data. The decoding and encoding are the
 * ONNX module's (src/onnx: read.c, write.c); this is the descriptor.
 *
 * Nothing in the bytes says that they are a TensorProto, so there is no
 * probe: a file is read as one when its name ends in .pb (and no format
 * recognises its content) or when the format is named, and the read is
 * strict (every field one of TensorProto's, data_type present, the data the
 * size the shape needs). A file that is not one but has the form of a
 * SequenceProto or OptionalProto of tensors (the backend test data's sequence
 * and optional values) is read as one: its tensors in order. Several tensors
 * are written as a SequenceProto. docs/formats/onnx-tensor.md. */
#include "onnx/onnx.h"
#include "protobuf/pb.h"

#include <stdlib.h>
#include <string.h>

#define TP_FMT "onnx-tensor"

static int tp_read(tio_read_ctx *ctx, tio_error *err) {
    return tio__onnx_read_tensorproto(ctx, TP_FMT, err);
}

/* The props of a container read from a SequenceProto or OptionalProto file
 * (src/onnx/read_tensor.c), or NULL. */
static const tio_kv *tp_seq_props(const tio_write_plan *p) {
    const tio_container *c = tio__plan_container(p);
    if (!c || !c->format || strcmp(c->format, TP_FMT) != 0 || !tio__kv_get(&c->props, "value"))
        return NULL;
    return &c->props;
}

static int tp_check(const tio_write_plan *p, tio_error *err) {
    size_t n = tio__plan_count(p);
    if (n == 0 && !tp_seq_props(p))
        return tio__err(err, TIO_E_UNSUPPORTED, TP_FMT, -1,
                        "the container holds no tensor (a .pb file holds one, as a "
                        "TensorProto, or a sequence of them, as a SequenceProto)");
    return TIO_OK;
}

typedef struct tp_writer {
    tio_write_plan *plan;
    const tio_kv *seq; /* read from a SequenceProto / OptionalProto, or NULL */
} tp_writer;

/* One tensor: a TensorProto, as onnx.numpy_helper.from_array writes it. Any
 * other count, or a container read from a SequenceProto or OptionalProto: a
 * SequenceProto of TensorProtos (name and elem_type kept from the file read;
 * elem_type 1, a tensor, otherwise), as onnx.helper.make_sequence writes it,
 * which is also the OptionalProto of make_optional for one element. */
static int tp_emit(tio_pb_writer *pw, void *ctx, tio_error *err) {
    tp_writer *w = ctx;
    size_t n = tio__plan_count(w->plan);
    if (n == 1 && !w->seq) return tio__onnx_put_tensor(pw, w->plan, 0, NULL, err);
    const char *name = w->seq ? tio__kv_get(w->seq, "name") : NULL;
    const char *et = w->seq ? tio__kv_get(w->seq, "elem_type") : NULL;
    int rc = name ? tio__pb_put_string(pw, 1, name, err) : TIO_OK;
    if (!rc) rc = tio__pb_put_varint(pw, 2, et ? strtoull(et, NULL, 10) : 1u, err);
    for (size_t i = 0; !rc && i < n; i++) {
        rc = tio__pb_begin(pw, 3, err);
        if (!rc) rc = tio__onnx_put_tensor(pw, w->plan, i, NULL, err);
        if (!rc) rc = tio__pb_end(pw, err);
    }
    return rc;
}

static int tp_write(tio_write_plan *p, tio_sink *s, tio_error *err) {
    int rc = tp_check(p, err);
    if (rc) return rc;
    tp_writer w = {p, tp_seq_props(p)};
    return tio__pb_write(s, TP_FMT, tp_emit, &w, err);
}

extern const tio_format_desc tio__format_tensorproto;

const tio_format_desc tio__format_tensorproto = {
    .name = TP_FMT,
    .description = "ONNX TensorProto (.pb): one tensor, as onnx.numpy_helper writes it and "
                   "ONNX's backend test data hold their inputs and outputs; a SequenceProto "
                   "or OptionalProto of tensors",
    .extensions = ".pb",
    .caps = TIO_CAP_NAMES,
    .dtypes = TIO__ONNX_DTYPES,
    .probe = NULL, /* not self-identifying: by extension or by name only */
    .read = tp_read,
    .check = tp_check,
    .write = tp_write,
};
