/* The ONNX format module's internals (src/onnx): the reader, the writer and
 * the facts both share. Not installed. */
#ifndef TIO_ONNX_H
#define TIO_ONNX_H

#include "core/internal.h"
#include "graph/graph.h"

#define OX_FMT "onnx"

/* Graph metadata keys that hold ModelProto / GraphProto fields (everything
 * else in the graph metadata is a metadata_props entry). */
#define OX_META_IR "onnx.ir_version"
#define OX_META_PRODUCER "onnx.producer_name"
#define OX_META_PRODUCER_VERSION "onnx.producer_version"
#define OX_META_DOMAIN "onnx.domain"
#define OX_META_MODEL_VERSION "onnx.model_version"
#define OX_META_DOC "onnx.doc_string"
#define OX_META_GRAPH_NAME "onnx.graph_name"
#define OX_META_GRAPH_DOC "onnx.graph_doc_string"

/* The dtypes a TensorProto holds (tio_format_desc.dtypes). */
#define TIO__ONNX_DTYPES                                                                   \
    (TIO_DTYPE_BIT(TIO_BOOL) | TIO_DTYPE_BIT(TIO_INT8) | TIO_DTYPE_BIT(TIO_INT16) |        \
     TIO_DTYPE_BIT(TIO_INT32) | TIO_DTYPE_BIT(TIO_INT64) | TIO_DTYPE_BIT(TIO_UINT8) |      \
     TIO_DTYPE_BIT(TIO_UINT16) | TIO_DTYPE_BIT(TIO_UINT32) | TIO_DTYPE_BIT(TIO_UINT64) |   \
     TIO_DTYPE_BIT(TIO_FLOAT16) | TIO_DTYPE_BIT(TIO_BFLOAT16) |                            \
     TIO_DTYPE_BIT(TIO_FLOAT32) | TIO_DTYPE_BIT(TIO_FLOAT64) |                             \
     TIO_DTYPE_BIT(TIO_COMPLEX64) | TIO_DTYPE_BIT(TIO_COMPLEX128) | TIO_DTYPE_BIT(TIO_STRING))

/* TensorProto.DataType -> tio_dtype (TIO_DTYPE_INVALID when tensio has no
 * such dtype); the inverse (0 for none). */
tio_dtype tio__onnx_dtype(int64_t code);
int tio__onnx_code(tio_dtype d);
/* The DataType's name ("STRING", "COMPLEX64"), or NULL when unknown. */
const char *tio__onnx_dtype_name(int64_t code);
/* Whether a graph metadata key is one of OX_META_*. */
int tio__onnx_is_model_key(const char *key);

/* The bytes of an external tensor (src/onnx/external.c): `loc` beside
 * ctx->path, `length` (nbytes when !has_length) bytes at `offset`, mapped
 * and kept by the container; the location rules and errors are there. `fmt`
 * names the format in messages ("onnx", "onnx-tensor"); `at` and `lbl`
 * place them. */
int tio__onnx_external(tio_read_ctx *ctx, const char *fmt, const char *loc, uint64_t offset,
                       bool has_length, uint64_t length, uint64_t nbytes, int64_t at,
                       const char *lbl, const uint8_t **data, tio_error *err);

/* ONNX typing rules as data (src/onnx/constraints.c), default domain only:
 * whether input `input` of `op` is tensor(int64) only at `opset`; whether
 * output `output` of `op` is always int64; the opset that introduced
 * attribute `attr` of `op` (0 when not listed) and its default. */
bool tio__onnx_input_int64(const char *op, size_t input, int64_t opset);
bool tio__onnx_output_int64(const char *op, size_t output);
/* Whether input `input` of `op` is tensor(bool) only (a condition: If's,
 * Loop's, Where's). */
bool tio__onnx_input_bool(const char *op, size_t input);
/* The opset a default-domain attribute came at (0: it exists at every
 * opset tensio writes). */
int tio__onnx_attr_from(const char *op, const char *attr);
/* The opset attribute a of op needs to be written with its value: 0 when
 * it exists at every opset, or is at the value that means what the operator
 * did before the attribute came (it is then left out below that opset). */
int tio__onnx_attr_needs(const char *op, const tio_gattr *a);
/* The opset that removed attribute a of op (0: none did); *keep: at its
 * value it means what the operator does without it (it is left out there). */
int tio__onnx_attr_gone(const char *op, const tio_gattr *a, bool *keep);
/* The i-th group of inputs and outputs of `op` that one type parameter
 * binds to one type (false past the last); tio__onnx_in_group: whether a
 * group's mask holds input (output) k. */
bool tio__onnx_type_group(const char *op, size_t i, uint32_t *inputs, uint32_t *outputs);
bool tio__onnx_in_group(uint32_t mask, size_t k);
/* The opset from which `op` takes element type d at input `input` (an
 * output: the same rule, for bfloat16); 0: at every opset tensio writes. */
int tio__onnx_type_since(const char *op, size_t input, tio_dtype d);
/* The default-domain opset written when the graph records none. */
#define OX_DEFAULT_OPSET 17
/* The opsets the writer converts a graph to (format option opset=N). */
#define TIO__ONNX_MIN_OPSET 7
#define TIO__ONNX_MAX_OPSET 26

/* Opset history as data (src/onnx/opset.c), default domain: the opset that
 * introduced `op` (1 when older than 7 or unknown) and the one that removed
 * it (*removed, 0 when none); the changes of form of `op` (attributes that
 * became inputs); whether `op`'s axis changed meaning at opset 13. */
int tio__onnx_op_range(const char *op, int *removed);
typedef struct tio_onnx_form {
    const char *op;
    const char *attr; /* NULL: an input that only exists from `since` */
    unsigned input;
    tio_attr_type type; /* the attribute's type */
    int since;          /* an input from this opset, an attribute before it */
    int64_t dflt;       /* attr NULL: the value that makes the input removable */
} tio_onnx_form;
#define TIO__ONNX_NO_DFLT INT64_MIN /* dflt: no value does */
const tio_onnx_form *tio__onnx_forms(const char *op, size_t *count);
bool tio__onnx_axis_changed_at_13(const char *op);

/* The largest ir_version read (and probed): one varint byte. */
#define TIO__ONNX_MAX_IR 127
int tio__onnx_probe(const uint8_t *d, size_t n);
int tio__onnx_read(tio_read_ctx *ctx, tio_error *err);
/* A bare TensorProto (a .pb file, src/formats/tensorproto.c): ctx->data is
 * one TensorProto, read strictly (every field one of TensorProto's,
 * data_type present) into one tensor of ctx->c, as a model's initializer is
 * read (raw_data a view, typed fields decoded, external data beside
 * ctx->path); doc_string and metadata_props become container properties.
 * `fmt` names the format in messages. */
int tio__onnx_read_tensorproto(tio_read_ctx *ctx, const char *fmt, tio_error *err);
int tio__onnx_check(const tio_write_plan *p, tio_error *err);
/* The fields of a TensorProto of plan tensor i (src/onnx/write.c): dims
 * (unpacked), data_type, name (`name`, else the tensor's when it has one),
 * raw_data (the container's bytes referenced, not copied), in field order,
 * as onnx.numpy_helper.from_array(a, name).SerializeToString() writes them.
 * A model's initializer is this message nested; a .pb file is it alone. */
struct tio_pb_writer;
int tio__onnx_put_tensor(struct tio_pb_writer *pw, tio_write_plan *p, size_t i,
                         const char *name, tio_error *err);
int tio__onnx_write(tio_write_plan *p, tio_sink *s, tio_error *err);

#endif /* TIO_ONNX_H */
