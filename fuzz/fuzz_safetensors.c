/* libFuzzer target: the safetensors decoder on one buffer, then its encoder
 * on whatever decoded. The writer orders tensors (dtype, then name) and
 * names an unnamed one by its index, so the second decode is compared by
 * name, not by position; encode(decode(encode(x))) must equal encode(x). */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void hash_all(const tio_container *c) {
    for (size_t i = 0; i < tio_container_count(c); i++) {
        uint8_t h[32];
        tio_error e;
        if (tio_tensor_sha256(tio_container_tensor(c, i), TIO_HASH_DENSE, h, &e) != TIO_OK)
            fz_fail("tensor %zu does not hash: %s", i, e.message);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tio_open_options o = {.format = "safetensors"};
    tio_container *c1 = NULL, *c2 = NULL;
    tio_error e;
    int rc = tio_open_memory(data, size, &o, &c1, &e);
    if (rc != TIO_OK) {
        fz_check_error(rc, &e, c1);
        return 0;
    }
    hash_all(c1);
    tio_save_options so = {.format = "safetensors"};
    void *b1 = NULL, *b2 = NULL;
    size_t n1 = 0, n2 = 0;
    rc = tio_save_memory(c1, &so, &b1, &n1, &e);
    if (rc != TIO_OK) {
        /* only names it cannot write again: two unnamed or a taken index */
        if (rc != TIO_E_UNSUPPORTED) fz_fail("re-encoding failed: %s", e.message);
        tio_container_free(c1);
        return 0;
    }
    if (tio_open_memory(b1, n1, &o, &c2, &e) != TIO_OK)
        fz_fail("our own encoding does not decode: %s", e.message);
    if (tio_container_count(c2) != tio_container_count(c1) ||
        tio_container_meta_count(c2) != tio_container_meta_count(c1))
        fz_fail("tensor or metadata counts differ after a round trip");
    for (size_t i = 0; i < tio_container_count(c1); i++) {
        const tio_tensor *a = tio_container_tensor(c1, i), *b;
        char idx[24];
        const char *name = tio_tensor_name(a);
        if (!name) {
            size_t k = sizeof idx - 1, v = i;
            idx[k] = 0;
            do idx[--k] = (char)('0' + v % 10); while ((v /= 10) != 0);
            name = idx + k;
        }
        b = tio_container_find(c2, name);
        if (!b || tio_tensor_dtype(a) != tio_tensor_dtype(b) ||
            tio_tensor_rank(a) != tio_tensor_rank(b) ||
            memcmp(tio_tensor_shape(a), tio_tensor_shape(b),
                   tio_tensor_rank(a) * sizeof(int64_t)) != 0 ||
            tio_tensor_nbytes(a) != tio_tensor_nbytes(b) ||
            (tio_tensor_nbytes(a) &&
             memcmp(tio_tensor_data(a), tio_tensor_data(b), tio_tensor_nbytes(a)) != 0))
            fz_fail("tensor %zu differs after a round trip", i);
    }
    for (size_t i = 0; i < tio_container_meta_count(c1); i++) {
        const char *k, *v, *w;
        tio_container_meta_at(c1, i, &k, &v);
        w = tio_container_meta_get(c2, k);
        if (!w || strcmp(v, w) != 0) fz_fail("metadata entry %zu differs", i);
    }
    if (tio_save_memory(c2, &so, &b2, &n2, &e) != TIO_OK)
        fz_fail("our decoded encoding does not encode: %s", e.message);
    if (n1 != n2 || memcmp(b1, b2, n1) != 0)
        fz_fail("encode(decode(encode(x))) differs from encode(x)");
    /* the file's own layout, when it was the writer's, comes back as it was */
    tio_free(b2);
    tio_free(b1);
    tio_container_free(c2);
    tio_container_free(c1);
    return 0;
}
