/* Element conversions of a save: the dtypes TIO_SAVE_WIDEN writes for those
 * a format lacks, and tio_save_options.cast between floating-point dtypes
 * (rounded as PyTorch's Tensor.to() rounds). */
#include "internal.h"

#include <string.h>

static inline uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* float32 -> float16, to nearest, ties to even (what c10::Half does): past
 * the largest half (65504) by half an ulp or more is infinity; NaN the quiet
 * NaN 0x7e00 with the sign kept. Without branches, so that a loop of it
 * vectorizes: every case computed, one selected. A normal half: the exponent
 * rebiased (127 -> 15) and the 13 low bits rounded off (adding 0xfff and
 * the lowest kept bit carries exactly when they round up). Under 2^-14 (a
 * subnormal half, or zero): |x| + 0.5 in float arithmetic, whose ulp is
 * 2^-24, the subnormals' step, so the FPU's own rounding to nearest even
 * leaves the half's bits in the sum's low bits (0x400 where it rounds up to
 * the smallest normal, which is that normal's encoding too). */
static inline uint16_t f32_to_f16(uint32_t x) {
    uint32_t sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
    uint32_t r = a - 0x38000000u;
    uint32_t normal = (r + 0xfffu + ((r >> 13) & 1u)) >> 13;
    float fa;
    memcpy(&fa, &a, sizeof fa);
    uint32_t sub = f32_bits(fa + 0.5f) - 0x3f000000u;
    /* selected by masks: gcc does not if-convert the conditional forms */
    uint32_t m_sub = 0u - (uint32_t)(a < 0x38800000u);
    uint32_t m_inf = 0u - (uint32_t)(a >= 0x477ff000u); /* >= 65520 */
    uint32_t m_nan = 0u - (uint32_t)(a > 0x7f800000u);
    uint32_t q = (sub & m_sub) | (normal & ~m_sub);
    q = (0x7c00u & m_inf) | (q & ~m_inf);
    q = (0x7e00u & m_nan) | (q & ~m_nan);
    return (uint16_t)(sign | q);
}

/* float32 -> bfloat16, to nearest, ties to even (c10::BFloat16's
 * round_to_nearest_even): NaN is 0x7fc0. */
static inline uint16_t f32_to_bf16(uint32_t x) {
    if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* Element i of a floating-point dtype as float (exact but for float64,
 * rounded to nearest as a C cast does: PyTorch too goes through float
 * for float64 -> float16 and bfloat16). */
static float load_float(tio_dtype d, const uint8_t *p) {
    switch (d) {
    case TIO_FLOAT32: {
        uint32_t u = tio__ld32(p);
        float f;
        memcpy(&f, &u, sizeof f);
        return f;
    }
    case TIO_FLOAT64: {
        uint64_t u = tio__ld64(p);
        double v;
        memcpy(&v, &u, sizeof v);
        return (float)v;
    }
    case TIO_FLOAT16: return tio__half_to_float(tio__ld16(p));
    case TIO_BFLOAT16: return tio__bf16_to_float(tio__ld16(p));
    case TIO_FLOAT8_E4M3FN: return tio__f8e4m3fn_to_float(p[0]);
    case TIO_FLOAT8_E5M2: return tio__f8e5m2_to_float(p[0]);
    default: return 0.0f;
    }
}

bool tio__cast_source(tio_dtype d) {
    return d == TIO_FLOAT64 || d == TIO_FLOAT32 || d == TIO_FLOAT16 || d == TIO_BFLOAT16 ||
           d == TIO_FLOAT8_E4M3FN || d == TIO_FLOAT8_E5M2;
}

bool tio__cast_target(tio_dtype d) {
    return d == TIO_FLOAT64 || d == TIO_FLOAT32 || d == TIO_FLOAT16 || d == TIO_BFLOAT16;
}

/* n elements of a float dtype at src as float32 at dst (TIO_SAVE_WIDEN's
 * case, and float64's cast): bfloat16 a shift the compiler vectorizes, float8
 * through a table of its 256 values when n is large enough to pay for it. */
static void to_f32(tio_dtype from, const uint8_t *src, uint8_t *dst, uint64_t n) {
    switch (from) {
    case TIO_BFLOAT16: /* the high half of a float32 */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        /* native loads and stores: vectorized (gcc -O3: 0.15 ns an element
         * against 1.8 through the byte-wise ones) */
        for (uint64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, src + i * 2, sizeof h);
            uint32_t u = (uint32_t)h << 16;
            memcpy(dst + i * 4, &u, sizeof u);
        }
#else
        for (uint64_t i = 0; i < n; i++)
            tio__st32(dst + i * 4, (uint32_t)tio__ld16(src + i * 2) << 16);
#endif
        return;
    case TIO_FLOAT8_E4M3FN:
    case TIO_FLOAT8_E5M2: {
        uint32_t table[256];
        size_t built = n >= 1024 ? 256 : 0;
        for (size_t k = 0; k < built; k++) {
            uint8_t b = (uint8_t)k;
            table[k] = f32_bits(load_float(from, &b));
        }
        for (uint64_t i = 0; i < n; i++)
            tio__st32(dst + i * 4, built ? table[src[i]] : f32_bits(load_float(from, src + i)));
        return;
    }
    default: {
        size_t es = tio_dtype_size(from);
        for (uint64_t i = 0; i < n; i++) tio__st32(dst + i * 4, f32_bits(load_float(from, src + i * es)));
        return;
    }
    }
}

void tio__convert_elems(tio_dtype from, tio_dtype to, const uint8_t *src, uint8_t *dst,
                        uint64_t n) {
    size_t es = tio_dtype_size(from);
    if (from == to) {
        memcpy(dst, src, (size_t)(n * es));
        return;
    }
    switch (to) {
    case TIO_UINT8: /* bool, widened */
        memcpy(dst, src, (size_t)n);
        return;
    case TIO_INT32:
        /* an int64 Reshape shape (narrowed for tmfile): as convert_tool
         * stores it, the first 4*n bytes of the little-endian int64 data
         * (the values themselves go to the Reshape's re_shape param) */
        memcpy(dst, src, (size_t)n * 4);
        return;
    case TIO_FLOAT32: to_f32(from, src, dst, n); return;
    case TIO_FLOAT64:
        for (uint64_t i = 0; i < n; i++) {
            double v = (double)load_float(from, src + i * es); /* exact */
            uint64_t u;
            memcpy(&u, &v, sizeof u);
            tio__st64(dst + i * 8, u);
        }
        return;
    case TIO_FLOAT16:
        if (from == TIO_FLOAT32) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            for (uint64_t i = 0; i < n; i++) { /* native: vectorized */
                uint32_t u;
                memcpy(&u, src + i * 4, sizeof u);
                uint16_t h = f32_to_f16(u);
                memcpy(dst + i * 2, &h, sizeof h);
            }
            return;
#endif
        }
        for (uint64_t i = 0; i < n; i++)
            tio__st16(dst + i * 2, f32_to_f16(f32_bits(load_float(from, src + i * es))));
        return;
    case TIO_BFLOAT16:
        if (from == TIO_FLOAT32) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            for (uint64_t i = 0; i < n; i++) { /* native: vectorized */
                uint32_t u;
                memcpy(&u, src + i * 4, sizeof u);
                uint16_t h = f32_to_bf16(u);
                memcpy(dst + i * 2, &h, sizeof h);
            }
            return;
#endif
        }
        for (uint64_t i = 0; i < n; i++)
            tio__st16(dst + i * 2, f32_to_bf16(f32_bits(load_float(from, src + i * es))));
        return;
    default: return;
    }
}

int tio__cast_parse(const char *spec, tio_dtype map[TIO_DTYPE_COUNT], tio_error *err) {
    memset(map, 0, TIO_DTYPE_COUNT * sizeof map[0]);
    if (!spec || !*spec) return TIO_OK;
    const char *q = spec;
    bool pairs = strchr(spec, '=') != NULL;
    while (*q) {
        size_t len = strcspn(q, ",");
        char a[32] = "", b[32] = "";
        const char *eq = memchr(q, '=', len);
        size_t la = eq ? (size_t)(eq - q) : len, lb = eq ? len - la - 1 : 0;
        if (len == 0 || la >= sizeof a || lb >= sizeof b || (pairs && !eq) ||
            (!pairs && q != spec))
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                            "cast \"%s\": expected one dtype (\"bfloat16\": every "
                            "floating-point tensor) or FROM=TO pairs separated by commas "
                            "(\"float32=float16,float64=float32\")",
                            spec);
        memcpy(a, q, la);
        if (eq) memcpy(b, eq + 1, lb);
        tio_dtype from = eq ? tio_dtype_from_name(a) : TIO_DTYPE_INVALID;
        tio_dtype to = tio_dtype_from_name(eq ? b : a);
        if (eq && !tio__cast_source(from))
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                            "cast \"%s\": \"%s\" is not a floating-point dtype tensio casts "
                            "from (float64, float32, float16, bfloat16, float8_e4m3fn, "
                            "float8_e5m2)",
                            spec, a);
        if (!tio__cast_target(to))
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                            "cast \"%s\": \"%s\" is not a dtype tensio casts to (float64, "
                            "float32, float16, bfloat16)",
                            spec, eq ? b : a);
        if (eq && map[from])
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "cast \"%s\": %s is given twice",
                            spec, a);
        if (eq) {
            map[from] = to;
        } else {
            for (unsigned d = 1; d < TIO_DTYPE_COUNT; d++)
                if (tio__cast_source((tio_dtype)d)) map[d] = to;
        }
        q += len;
        if (*q == ',') q++;
    }
    for (unsigned d = 1; d < TIO_DTYPE_COUNT; d++)
        if (map[d] == (tio_dtype)d) map[d] = TIO_DTYPE_INVALID; /* nothing to do */
    return TIO_OK;
}
