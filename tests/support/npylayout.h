/* How NumPy lays out a .npy file, for tests that write one by hand: the
 * magic, version and padded header around a dict, and C-order
 * little-endian elements (the tensor tensio must give back) put into the
 * file's order and byte order. The including file has cmocka.h. */
#ifndef TIO_TEST_NPYLAYOUT_H
#define TIO_TEST_NPYLAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A .npy file of format version `major` (1: a 2-byte header length, else
 * 4) with header `dict`, padded with spaces and a newline to a multiple of
 * 64 bytes, then data[0..dlen); malloc'ed, its size in *len. */
static inline uint8_t *npy_bytes(unsigned major, const char *dict, const void *data, size_t dlen,
                                 size_t *len) {
    size_t pre = major == 1 ? 10 : 12, dl = strlen(dict);
    size_t hl = dl + 1, pad = 64 - (pre + hl) % 64;
    size_t h = dl + pad + 1;
    uint8_t *f = malloc(pre + h + dlen + 1);
    assert_non_null(f);
    memcpy(f, "\x93NUMPY", 6);
    f[6] = (uint8_t)major;
    f[7] = 0;
    for (size_t k = 0; k < pre - 8; k++) f[8 + k] = (uint8_t)(h >> (8 * k));
    memcpy(f + pre, dict, dl);
    memset(f + pre + dl, ' ', pad);
    f[pre + h - 1] = '\n';
    if (dlen) memcpy(f + pre + h, data, dlen);
    *len = pre + h + dlen;
    return f;
}

/* want: n elements of es bytes, C order, little-endian; file gets them in
 * Fortran order where fortran (dim 0 varying fastest), each unit of `unit`
 * bytes reversed where big (a complex number's parts one by one). rank <= 8. */
static inline void npy_layout(const uint8_t *want, uint8_t *file, size_t n, size_t es,
                              const int64_t *shape, size_t rank, int fortran, int big,
                              size_t unit) {
    for (size_t i = 0; i < n; i++) {
        size_t at = i; /* where C-order element i lies in the file */
        if (fortran) {
            size_t rest = i, pos = 0, step = 1, idx[8];
            for (size_t d = rank; d-- > 0;) {
                idx[d] = rest % (size_t)shape[d];
                rest /= (size_t)shape[d];
            }
            for (size_t d = 0; d < rank; d++) {
                pos += idx[d] * step;
                step *= (size_t)shape[d];
            }
            at = pos;
        }
        for (size_t b = 0; b < es; b++) {
            size_t u0 = b - b % unit, ub = b % unit;
            file[at * es + b] = want[i * es + (big ? u0 + unit - 1 - ub : b)];
        }
    }
}

#endif
