/* libFuzzer target: a ZIO multipart message (prefix + JSON TENS label,
 * coordinates, payload parts). The input is split into parts (see
 * fz_roundtrip_parts). The same parts also go to the tensorcom codec and to
 * the probe, which pick the codec by the first part. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_roundtrip_parts(data, size, "zio");
    fz_roundtrip_parts(data, size, "tenbin");
    fz_roundtrip_parts(data, size, NULL);
    return 0;
}
