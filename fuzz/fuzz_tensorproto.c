/* libFuzzer target: a bare ONNX TensorProto (.pb, format onnx-tensor) on one
 * buffer, then its encoder on whatever decoded (decode → encode → decode must
 * agree). fuzz_onnx reaches the same tensor reader through a model's
 * initializers; this one reaches the format's own strict checks, the
 * SequenceProto naming and the writer. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_roundtrip_file(data, size, "onnx-tensor");
    return 0;
}
