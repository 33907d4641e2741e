/* libFuzzer target: the ZIO decoder on the single-buffer form (CZMQ's
 * zmsg_encode, a .zmsg file), then its encoder on whatever decoded. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_roundtrip_file(data, size, "zio");
    return 0;
}
