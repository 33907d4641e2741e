/* libFuzzer target: the torch decoder (the zip structure or the legacy
 * layout, the pickle machine, the walk that turns its objects into tensors,
 * storages, strided views) on one buffer; then what decoded is hashed,
 * densified, saved to the other formats, and written as a .pt again
 * (torch_write.c), which must decode to the same tensors and re-encode to
 * the same bytes. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_roundtrip_file(data, size, "torch");
    return 0;
}
