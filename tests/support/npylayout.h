/* How NumPy lays out an array's data in a .npy file, for tests that write
 * one by hand: C-order little-endian elements (the tensor tensio must give
 * back) into the file's order and byte order. */
#ifndef TIO_TEST_NPYLAYOUT_H
#define TIO_TEST_NPYLAYOUT_H

#include <stddef.h>
#include <stdint.h>

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
