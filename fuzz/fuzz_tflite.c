/* libFuzzer target: the TensorFlow Lite reader on one buffer (the
 * FlatBuffers verifier under the TFLite schema, every index checked, the
 * constants viewed); tflite has no writer, so the re-encode is refused and
 * only the decode and the views are exercised. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_roundtrip_file(data, size, "tflite");
    return 0;
}
