/* libFuzzer target: a ZIO multipart message (prefix + JSON TENS label,
 * coordinates, payload parts). The input is split into parts (see
 * fz_roundtrip_parts). The same parts also go to the tensorcom codec and to
 * the probe, which pick the codec by the first part. Then the plain-label
 * fast path against the general (jansson) path: the same result, the same
 * error, and the same bytes when re-encoded. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Encodes c as ZIO; every part's bytes, concatenated with their sizes. */
static uint8_t *encode_all(const tio_container *c, size_t *len) {
    tio_save_options so = {0};
    so.format = "zio";
    tio_message *m = NULL;
    tio_error e;
    *len = 0;
    if (tio_message_encode(c, &so, &m, &e) != TIO_OK) return NULL;
    size_t total = 0;
    for (size_t i = 0; i < tio_message_part_count(m); i++)
        total += sizeof(size_t) + tio_message_part(m, i).size;
    uint8_t *b = malloc(total ? total : 1);
    if (!b) abort();
    for (size_t i = 0; i < tio_message_part_count(m); i++) {
        tio_part p = tio_message_part(m, i);
        memcpy(b + *len, &p.size, sizeof p.size);
        *len += sizeof p.size;
        if (p.size) memcpy(b + *len, p.data, p.size);
        *len += p.size;
    }
    tio_message_free(m);
    return b;
}

static void fast_vs_general(const uint8_t *data, size_t size) {
    tio_part parts[FZ_MAX_PARTS];
    size_t np = fz_split_parts(data, size, parts);
    tio_open_options o = {0};
    o.format = "zio";
    tio_container *c1 = NULL, *c2 = NULL;
    tio_error e1, e2;
    int rc1 = tio_open_parts(parts, np, &o, &c1, &e1);
    o.flags = TIO__OPEN_GENERAL_ONLY;
    int rc2 = tio_open_parts(parts, np, &o, &c2, &e2);
    if (rc1 != rc2) fz_fail("zio fast path: %s, general path: %s", tio_status_name(rc1),
                            tio_status_name(rc2));
    if (rc1 != TIO_OK) {
        if (strcmp(e1.message, e2.message) != 0 || e1.offset != e2.offset)
            fz_fail("zio fast and general paths report different errors: '%s' / '%s'",
                    e1.message, e2.message);
        return;
    }
    fz_check_same(c1, c2, "zio fast path vs general path");
    size_t n1, n2;
    uint8_t *b1 = encode_all(c1, &n1), *b2 = encode_all(c2, &n2);
    if ((b1 == NULL) != (b2 == NULL) || n1 != n2 || (n1 && memcmp(b1, b2, n1) != 0))
        fz_fail("zio: what the fast and the general path read encodes differently");
    free(b1);
    free(b2);
    tio_container_free(c1);
    tio_container_free(c2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_roundtrip_parts(data, size, "zio");
    fz_roundtrip_parts(data, size, "tenbin");
    fz_roundtrip_parts(data, size, NULL);
    fast_vs_general(data, size);
    return 0;
}
