/* Element types. */
#include "internal.h"

#include <string.h>

static const struct {
    const char *name;
    size_t size;
} dtype_table[TIO_DTYPE_COUNT] = {
    [TIO_DTYPE_INVALID] = {NULL, 0}, [TIO_BOOL] = {"bool", 1},
    [TIO_INT8] = {"int8", 1},        [TIO_INT16] = {"int16", 2},
    [TIO_INT32] = {"int32", 4},      [TIO_INT64] = {"int64", 8},
    [TIO_UINT8] = {"uint8", 1},      [TIO_UINT16] = {"uint16", 2},
    [TIO_UINT32] = {"uint32", 4},    [TIO_UINT64] = {"uint64", 8},
    [TIO_FLOAT16] = {"float16", 2},  [TIO_BFLOAT16] = {"bfloat16", 2},
    [TIO_FLOAT32] = {"float32", 4},  [TIO_FLOAT64] = {"float64", 8},
    [TIO_FLOAT8_E4M3FN] = {"float8_e4m3fn", 1},
    [TIO_FLOAT8_E5M2] = {"float8_e5m2", 1},
    [TIO_COMPLEX64] = {"complex64", 8},
    [TIO_COMPLEX128] = {"complex128", 16},
    [TIO_STRING] = {"string", 0}, /* variable: offsets + bytes (include/tensio.h) */
};

const char *tio_dtype_name(tio_dtype d) {
    if ((unsigned)d >= TIO_DTYPE_COUNT) return NULL;
    return dtype_table[d].name;
}

size_t tio_dtype_size(tio_dtype d) {
    if ((unsigned)d >= TIO_DTYPE_COUNT) return 0;
    return dtype_table[d].size;
}

size_t tio__dtype_swap_unit(tio_dtype d) {
    size_t n = tio_dtype_size(d);
    return d == TIO_COMPLEX64 || d == TIO_COMPLEX128 ? n / 2 : n;
}

void tio__swap_units(uint8_t *p, size_t nbytes, size_t unit) {
    if (unit < 2) return;
    /* the common units as whole loads and stores (compilers make them byte
     * swaps, vectorized); any other unit byte by byte */
    if (unit == 2) {
        for (size_t i = 0; i + 2 <= nbytes; i += 2) {
            uint8_t t = p[i];
            p[i] = p[i + 1];
            p[i + 1] = t;
        }
        return;
    }
    if (unit == 4) {
        for (size_t i = 0; i + 4 <= nbytes; i += 4) {
            uint32_t v;
            memcpy(&v, p + i, 4);
            v = (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
            memcpy(p + i, &v, 4);
        }
        return;
    }
    if (unit == 8) {
        for (size_t i = 0; i + 8 <= nbytes; i += 8) {
            uint64_t v;
            memcpy(&v, p + i, 8);
            v = ((v & 0x00000000000000ffull) << 56) | ((v & 0x000000000000ff00ull) << 40) |
                ((v & 0x0000000000ff0000ull) << 24) | ((v & 0x00000000ff000000ull) << 8) |
                ((v & 0x000000ff00000000ull) >> 8) | ((v & 0x0000ff0000000000ull) >> 24) |
                ((v & 0x00ff000000000000ull) >> 40) | ((v & 0xff00000000000000ull) >> 56);
            memcpy(p + i, &v, 8);
        }
        return;
    }
    for (size_t i = 0; i + unit <= nbytes; i += unit)
        for (size_t a = i, b = i + unit - 1; a < b; a++, b--) {
            uint8_t t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

tio_dtype tio_dtype_from_name(const char *name) {
    if (!name) return TIO_DTYPE_INVALID;
    for (unsigned i = 1; i < TIO_DTYPE_COUNT; i++)
        if (strcmp(dtype_table[i].name, name) == 0) return (tio_dtype)i;
    return TIO_DTYPE_INVALID;
}

static float bits_to_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float tio__half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    if (exp == 0) {
        if (mant == 0) return bits_to_float(sign);
        /* subnormal: mant * 2^-24 */
        float f = (float)mant * (1.0f / 16777216.0f);
        return sign ? -f : f;
    }
    if (exp == 31) return bits_to_float(sign | 0x7f800000u | (mant << 13));
    return bits_to_float(sign | ((exp + 112) << 23) | (mant << 13));
}

float tio__bf16_to_float(uint16_t h) { return bits_to_float((uint32_t)h << 16); }

/* E4M3FN: bias 7, no infinities; S.1111.111 is NaN, every other pattern a
 * number (the largest 448); exponent 0 holds the subnormals mant * 2^-9. */
float tio__f8e4m3fn_to_float(uint8_t b) {
    uint32_t sign = (uint32_t)(b >> 7) << 31;
    uint32_t exp = (b >> 3) & 0xfu;
    uint32_t mant = b & 0x7u;
    if (exp == 0xf && mant == 0x7) return bits_to_float(sign | 0x7fc00000u);
    if (exp == 0) {
        float f = (float)mant * (1.0f / 512.0f);
        return sign ? -f : f;
    }
    return bits_to_float(sign | ((exp + 120) << 23) | (mant << 20));
}

/* E5M2 is the upper byte of an IEEE half: same exponent, two mantissa bits. */
float tio__f8e5m2_to_float(uint8_t b) { return tio__half_to_float((uint16_t)(b << 8)); }
