/* libFuzzer target: the npz decoder (the zip structure, inflate, the .npy
 * members) on one buffer, then its encoder on whatever decoded (decode →
 * encode → decode must agree). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_roundtrip_file(data, size, "npz");
    return 0;
}
