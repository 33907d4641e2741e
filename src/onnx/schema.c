/* onnx.proto's messages as data (see schema.h). One row per field:
 * number, name, type, and whether it repeats / is packed / is a message.
 * Only fields declared [packed = true] are packed: the rest of onnx.proto is
 * proto2, whose repeated scalars are written unpacked (readers accept both). */
#include "onnx/schema.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define OPT(n, name, t) {n, name, TIO_PB_T_##t, 0, 0, NULL}
#define REP(n, name, t) {n, name, TIO_PB_T_##t, 1, 0, NULL}
#define PACKED(n, name, t) {n, name, TIO_PB_T_##t, 1, 1, NULL}
#define MSG(n, name, m) {n, name, TIO_PB_T_MESSAGE, 0, 0, &tio__onnx_##m}
#define MSGS(n, name, m) {n, name, TIO_PB_T_MESSAGE, 1, 0, &tio__onnx_##m}
#define UNDESCRIBED_MSGS(n, name) {n, name, TIO_PB_T_MESSAGE, 1, 0, NULL}
#define DESC(m, name) const tio_pb_msgdesc tio__onnx_##m = {name, N(f_##m), f_##m}

static const tio_pb_fielddesc f_StringStringEntryProto[] = {
    OPT(1, "key", STRING),
    OPT(2, "value", STRING),
};
DESC(StringStringEntryProto, "StringStringEntryProto");

static const tio_pb_fielddesc f_OperatorSetIdProto[] = {
    OPT(1, "domain", STRING),
    OPT(2, "version", INT64),
};
DESC(OperatorSetIdProto, "OperatorSetIdProto");

static const tio_pb_fielddesc f_TensorProto_Segment[] = {
    OPT(1, "begin", INT64),
    OPT(2, "end", INT64),
};
DESC(TensorProto_Segment, "TensorProto.Segment");

static const tio_pb_fielddesc f_TensorProto[] = {
    REP(1, "dims", INT64),
    OPT(2, "data_type", INT32),
    MSG(3, "segment", TensorProto_Segment),
    PACKED(4, "float_data", FLOAT),
    PACKED(5, "int32_data", INT32),
    REP(6, "string_data", BYTES),
    PACKED(7, "int64_data", INT64),
    OPT(8, "name", STRING),
    OPT(9, "raw_data", BYTES),
    PACKED(10, "double_data", DOUBLE),
    PACKED(11, "uint64_data", UINT64),
    OPT(12, "doc_string", STRING),
    MSGS(13, "external_data", StringStringEntryProto),
    OPT(14, "data_location", ENUM),
    MSGS(16, "metadata_props", StringStringEntryProto),
};
DESC(TensorProto, "TensorProto");

static const tio_pb_fielddesc f_SparseTensorProto[] = {
    MSG(1, "values", TensorProto),
    MSG(2, "indices", TensorProto),
    REP(3, "dims", INT64),
};
DESC(SparseTensorProto, "SparseTensorProto");

/* A bare SequenceProto or OptionalProto file (onnx-tensor: the backend test
 * data's sequence and optional inputs). OptionalProto has the same fields,
 * each at most once; nested sequences, maps and optionals are not read. */
static const tio_pb_fielddesc f_SequenceProto[] = {
    OPT(1, "name", STRING),
    OPT(2, "elem_type", INT32),
    MSGS(3, "tensor_values", TensorProto),
    MSGS(4, "sparse_tensor_values", SparseTensorProto),
    UNDESCRIBED_MSGS(5, "sequence_values"),
    UNDESCRIBED_MSGS(6, "map_values"),
    UNDESCRIBED_MSGS(7, "optional_values"),
};
DESC(SequenceProto, "SequenceProto");

static const tio_pb_fielddesc f_TensorShapeProto_Dimension[] = {
    OPT(1, "dim_value", INT64),
    OPT(2, "dim_param", STRING),
    OPT(3, "denotation", STRING),
};
DESC(TensorShapeProto_Dimension, "TensorShapeProto.Dimension");

static const tio_pb_fielddesc f_TensorShapeProto[] = {
    MSGS(1, "dim", TensorShapeProto_Dimension),
};
DESC(TensorShapeProto, "TensorShapeProto");

static const tio_pb_fielddesc f_TypeProto_Tensor[] = {
    OPT(1, "elem_type", INT32),
    MSG(2, "shape", TensorShapeProto),
};
DESC(TypeProto_Tensor, "TypeProto.Tensor");

static const tio_pb_fielddesc f_TypeProto_Sequence[] = {
    MSG(1, "elem_type", TypeProto),
};
DESC(TypeProto_Sequence, "TypeProto.Sequence");

static const tio_pb_fielddesc f_TypeProto_Map[] = {
    OPT(1, "key_type", INT32),
    MSG(2, "value_type", TypeProto),
};
DESC(TypeProto_Map, "TypeProto.Map");

static const tio_pb_fielddesc f_TypeProto_Optional[] = {
    MSG(1, "elem_type", TypeProto),
};
DESC(TypeProto_Optional, "TypeProto.Optional");

static const tio_pb_fielddesc f_TypeProto_SparseTensor[] = {
    OPT(1, "elem_type", INT32),
    MSG(2, "shape", TensorShapeProto),
};
DESC(TypeProto_SparseTensor, "TypeProto.SparseTensor");

static const tio_pb_fielddesc f_TypeProto_Opaque[] = {
    OPT(1, "domain", STRING),
    OPT(2, "name", STRING),
};
DESC(TypeProto_Opaque, "TypeProto.Opaque");

/* tensor_type .. optional_type are a oneof */
static const tio_pb_fielddesc f_TypeProto[] = {
    MSG(1, "tensor_type", TypeProto_Tensor),
    MSG(4, "sequence_type", TypeProto_Sequence),
    MSG(5, "map_type", TypeProto_Map),
    OPT(6, "denotation", STRING),
    MSG(7, "opaque_type", TypeProto_Opaque),
    MSG(8, "sparse_tensor_type", TypeProto_SparseTensor),
    MSG(9, "optional_type", TypeProto_Optional),
};
DESC(TypeProto, "TypeProto");

static const tio_pb_fielddesc f_ValueInfoProto[] = {
    OPT(1, "name", STRING),
    MSG(2, "type", TypeProto),
    OPT(3, "doc_string", STRING),
    MSGS(4, "metadata_props", StringStringEntryProto),
};
DESC(ValueInfoProto, "ValueInfoProto");

static const tio_pb_fielddesc f_AttributeProto[] = {
    OPT(1, "name", STRING),
    OPT(2, "f", FLOAT),
    OPT(3, "i", INT64),
    OPT(4, "s", BYTES),
    MSG(5, "t", TensorProto),
    MSG(6, "g", GraphProto),
    REP(7, "floats", FLOAT),
    REP(8, "ints", INT64),
    REP(9, "strings", BYTES),
    MSGS(10, "tensors", TensorProto),
    MSGS(11, "graphs", GraphProto),
    OPT(13, "doc_string", STRING),
    MSG(14, "tp", TypeProto),
    MSGS(15, "type_protos", TypeProto),
    OPT(20, "type", ENUM),
    OPT(21, "ref_attr_name", STRING),
    MSG(22, "sparse_tensor", SparseTensorProto),
    MSGS(23, "sparse_tensors", SparseTensorProto),
};
DESC(AttributeProto, "AttributeProto");

static const tio_pb_fielddesc f_NodeProto[] = {
    REP(1, "input", STRING),
    REP(2, "output", STRING),
    OPT(3, "name", STRING),
    OPT(4, "op_type", STRING),
    MSGS(5, "attribute", AttributeProto),
    OPT(6, "doc_string", STRING),
    OPT(7, "domain", STRING),
    OPT(8, "overload", STRING),
    MSGS(9, "metadata_props", StringStringEntryProto),
    UNDESCRIBED_MSGS(10, "device_configurations"),
};
DESC(NodeProto, "NodeProto");

static const tio_pb_fielddesc f_TensorAnnotation[] = {
    OPT(1, "tensor_name", STRING),
    MSGS(2, "quant_parameter_tensor_names", StringStringEntryProto),
};
DESC(TensorAnnotation, "TensorAnnotation");

static const tio_pb_fielddesc f_GraphProto[] = {
    MSGS(1, "node", NodeProto),
    OPT(2, "name", STRING),
    MSGS(5, "initializer", TensorProto),
    OPT(10, "doc_string", STRING),
    MSGS(11, "input", ValueInfoProto),
    MSGS(12, "output", ValueInfoProto),
    MSGS(13, "value_info", ValueInfoProto),
    MSGS(14, "quantization_annotation", TensorAnnotation),
    MSGS(15, "sparse_initializer", SparseTensorProto),
    MSGS(16, "metadata_props", StringStringEntryProto),
};
DESC(GraphProto, "GraphProto");

static const tio_pb_fielddesc f_TrainingInfoProto[] = {
    MSG(1, "initialization", GraphProto),
    MSG(2, "algorithm", GraphProto),
    MSGS(3, "initialization_binding", StringStringEntryProto),
    MSGS(4, "update_binding", StringStringEntryProto),
};
DESC(TrainingInfoProto, "TrainingInfoProto");

static const tio_pb_fielddesc f_FunctionProto[] = {
    OPT(1, "name", STRING),
    REP(4, "input", STRING),
    REP(5, "output", STRING),
    REP(6, "attribute", STRING),
    MSGS(7, "node", NodeProto),
    OPT(8, "doc_string", STRING),
    MSGS(9, "opset_import", OperatorSetIdProto),
    OPT(10, "domain", STRING),
    MSGS(11, "attribute_proto", AttributeProto),
    MSGS(12, "value_info", ValueInfoProto),
    OPT(13, "overload", STRING),
    MSGS(14, "metadata_props", StringStringEntryProto),
};
DESC(FunctionProto, "FunctionProto");

static const tio_pb_fielddesc f_ModelProto[] = {
    OPT(1, "ir_version", INT64),
    OPT(2, "producer_name", STRING),
    OPT(3, "producer_version", STRING),
    OPT(4, "domain", STRING),
    OPT(5, "model_version", INT64),
    OPT(6, "doc_string", STRING),
    MSG(7, "graph", GraphProto),
    MSGS(8, "opset_import", OperatorSetIdProto),
    MSGS(14, "metadata_props", StringStringEntryProto),
    MSGS(20, "training_info", TrainingInfoProto),
    MSGS(25, "functions", FunctionProto),
    UNDESCRIBED_MSGS(26, "configuration"),
};
DESC(ModelProto, "ModelProto");

const tio_pb_msgdesc *const tio__onnx_messages[] = {
    &tio__onnx_ModelProto,
    &tio__onnx_GraphProto,
    &tio__onnx_NodeProto,
    &tio__onnx_AttributeProto,
    &tio__onnx_ValueInfoProto,
    &tio__onnx_TensorProto,
    &tio__onnx_TensorProto_Segment,
    &tio__onnx_SparseTensorProto,
    &tio__onnx_TensorShapeProto,
    &tio__onnx_TensorShapeProto_Dimension,
    &tio__onnx_TypeProto,
    &tio__onnx_TypeProto_Tensor,
    &tio__onnx_TypeProto_Sequence,
    &tio__onnx_TypeProto_Map,
    &tio__onnx_TypeProto_Optional,
    &tio__onnx_TypeProto_SparseTensor,
    &tio__onnx_TypeProto_Opaque,
    &tio__onnx_StringStringEntryProto,
    &tio__onnx_OperatorSetIdProto,
    &tio__onnx_TensorAnnotation,
    &tio__onnx_TrainingInfoProto,
    &tio__onnx_FunctionProto,
};
const size_t tio__onnx_message_count = N(tio__onnx_messages);
