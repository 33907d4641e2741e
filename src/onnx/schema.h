/* onnx.proto's messages as protobuf schema data (src/protobuf), for the ONNX
 * format module: field numbers, types, labels and packing, written from the
 * published schema (onnx.proto / onnx-ml.proto, IR version 10: the fields of
 * onnx 1.12 plus the later metadata_props, overload, FunctionProto
 * attribute_proto / value_info and device configurations). The device
 * configuration messages are not described (their fields are skipped). */
#ifndef TIO_ONNX_SCHEMA_H
#define TIO_ONNX_SCHEMA_H

#include "protobuf/pb.h"

extern const tio_pb_msgdesc tio__onnx_ModelProto;
extern const tio_pb_msgdesc tio__onnx_GraphProto;
extern const tio_pb_msgdesc tio__onnx_NodeProto;
extern const tio_pb_msgdesc tio__onnx_AttributeProto;
extern const tio_pb_msgdesc tio__onnx_ValueInfoProto;
extern const tio_pb_msgdesc tio__onnx_TensorProto;
extern const tio_pb_msgdesc tio__onnx_SequenceProto;
extern const tio_pb_msgdesc tio__onnx_TensorProto_Segment;
extern const tio_pb_msgdesc tio__onnx_SparseTensorProto;
extern const tio_pb_msgdesc tio__onnx_TensorShapeProto;
extern const tio_pb_msgdesc tio__onnx_TensorShapeProto_Dimension;
extern const tio_pb_msgdesc tio__onnx_TypeProto;
extern const tio_pb_msgdesc tio__onnx_TypeProto_Tensor;
extern const tio_pb_msgdesc tio__onnx_TypeProto_Sequence;
extern const tio_pb_msgdesc tio__onnx_TypeProto_Map;
extern const tio_pb_msgdesc tio__onnx_TypeProto_Optional;
extern const tio_pb_msgdesc tio__onnx_TypeProto_SparseTensor;
extern const tio_pb_msgdesc tio__onnx_TypeProto_Opaque;
extern const tio_pb_msgdesc tio__onnx_StringStringEntryProto;
extern const tio_pb_msgdesc tio__onnx_OperatorSetIdProto;
extern const tio_pb_msgdesc tio__onnx_TensorAnnotation;
extern const tio_pb_msgdesc tio__onnx_TrainingInfoProto;
extern const tio_pb_msgdesc tio__onnx_FunctionProto;

/* Every message above, for tests and tools. */
extern const tio_pb_msgdesc *const tio__onnx_messages[];
extern const size_t tio__onnx_message_count;

#endif /* TIO_ONNX_SCHEMA_H */
