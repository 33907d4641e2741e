/* libFuzzer target: the FlatBuffers verifier alone, against the rten Model
 * schema, with the default limits and with tight ones. It must be
 * deterministic, every failure must be a value with a message, and a buffer
 * accepted under tight limits must be accepted under loose ones. */
#include <string.h>

#include "flatbuf/flatbuf.h"
#include "fuzz_common.h"
#include "rten/schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tio_fb_limits loose = {TIO_DEFAULT_MAX_DEPTH, TIO_DEFAULT_MAX_OBJECTS, 0, NULL, NULL, NULL,
                           NULL, 0};
    tio_fb_limits tight = {4, 64, 0, NULL, NULL, NULL, NULL, 0};
    tio_error e1, e2, e3;
    int r1 = tio__fb_verify(data, size, tio__rten_Model, &loose, "rten", 0, &e1);
    int r2 = tio__fb_verify(data, size, tio__rten_Model, &loose, "rten", 0, &e2);
    if (r1 != r2 || (r1 && strcmp(e1.message, e2.message) != 0))
        fz_fail("the verifier is not deterministic");
    if (r1) fz_check_error(r1, &e1, NULL);
    int r3 = tio__fb_verify(data, size, tio__rten_Model, &tight, "rten", 0, &e3);
    if (r3) fz_check_error(r3, &e3, NULL);
    if (r3 == TIO_OK && r1 != TIO_OK)
        fz_fail("accepted with tight limits, refused with loose ones: %s", e1.message);
    if (r1 == TIO_OK && r3 != TIO_OK && r3 != TIO_E_LIMIT)
        fz_fail("tight limits gave %s instead of a limit error", tio_status_name(r3));
    return 0;
}
