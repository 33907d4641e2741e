/* libFuzzer target: the GGUF decoder on one buffer, then its encoder on
 * whatever decoded (decode → encode → decode must agree, the second encode
 * give the same bytes; the dense work dequantizes what tensio can), and the
 * typed metadata must come back with the same values and types; then
 * encoded again dequantized and cast (TIO_SAVE_DEQUANTIZE into GGUF itself). */
#include <string.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same_types(const tio_container *a, const tio_container *b) {
    if (tio_container_meta_count(a) != tio_container_meta_count(b))
        fz_fail("metadata counts differ after a round trip");
    for (size_t i = 0; i < tio_container_meta_count(a); i++) {
        const char *k, *v, *w, *ta, *tb;
        tio_container_meta_at(a, i, &k, &v);
        w = tio_container_meta_get(b, k);
        ta = tio_container_meta_type(a, k);
        tb = tio_container_meta_type(b, k);
        if (!w || strcmp(v, w) != 0) fz_fail("metadata '%s' differs after a round trip", k);
        if (!ta || !tb || strcmp(ta, tb) != 0) fz_fail("metadata '%s' changed its type", k);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_roundtrip_file(data, size, "gguf");
    tio_open_options o = {.format = "gguf"};
    tio_container *c1 = NULL, *c2 = NULL;
    tio_error e;
    if (tio_open_memory(data, size, &o, &c1, &e) != TIO_OK) return 0;
    tio_save_options so = {.format = "gguf"};
    void *b = NULL;
    size_t n = 0;
    if (tio_save_memory(c1, &so, &b, &n, &e) != TIO_OK)
        fz_fail("re-encoding failed: %s", e.message);
    if (tio_open_memory(b, n, &o, &c2, &e) != TIO_OK)
        fz_fail("our own encoding does not decode: %s", e.message);
    same_types(c1, c2);
    tio_container_free(c2);
    tio_free(b);
    /* dequantized and cast into GGUF itself: the check predicts the save,
     * a refusal keeps the error contract, what is written decodes with no
     * quantized tensor and the same count, and general.file_type (where
     * the source has a uint32 one) is a number */
    so.flags = TIO_SAVE_DEQUANTIZE;
    so.cast = size % 2 ? "float16" : "bfloat16";
    tio_error ec;
    tio_error_clear(&ec);
    tio_error_clear(&e);
    int check = tio_check_save(c1, &so, &ec);
    b = NULL;
    int rc = tio_save_memory(c1, &so, &b, &n, &e);
    if (check != TIO_OK && (rc != check || strcmp(e.message, ec.message) != 0))
        fz_fail("dequantized save: tio_check_save says %s (%s), the save %s (%s)",
                tio_status_name(check), ec.message, tio_status_name(rc), e.message);
    if (rc != TIO_OK) {
        fz_check_error(rc, &e, NULL);
        if (b) fz_fail("a refused save left bytes");
    } else {
        if (tio_open_memory(b, n, &o, &c2, &e) != TIO_OK)
            fz_fail("the dequantized encoding does not decode: %s", e.message);
        if (tio_container_count(c2) != tio_container_count(c1))
            fz_fail("dequantizing changed the tensor count");
        for (size_t i = 0; i < tio_container_count(c2); i++)
            if (tio_tensor_layout(tio_container_tensor(c2, i)) == TIO_LAYOUT_QUANT)
                fz_fail("tensor %zu stayed quantized with TIO_SAVE_DEQUANTIZE", i);
        const char *ft = tio_container_meta_get(c2, "general.file_type");
        const char *tt = tio_container_meta_type(c2, "general.file_type");
        if (ft && tt && strcmp(tt, "uint32") == 0 &&
            (!*ft || strspn(ft, "0123456789") != strlen(ft)))
            fz_fail("general.file_type is '%s'", ft);
        tio_container_free(c2);
    }
    tio_free(b);
    tio_container_free(c1);
    return 0;
}
