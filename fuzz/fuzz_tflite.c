/* libFuzzer target: the TensorFlow Lite reader on one buffer (the
 * FlatBuffers verifier under the TFLite schema, every index checked, the
 * constants viewed, the graph raised to ONNX form: src/tflite/raise.c), and
 * the raised graph converted to ONNX, rten and tmfile (fz_roundtrip_file's
 * cross_models), and the model rewritten as .tflite (src/tflite/rewrite.c,
 * write.c): the rewrite must reopen and rewrite byte for byte, or be refused
 * as unsupported. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_roundtrip_file(data, size, "tflite");
    return 0;
}
