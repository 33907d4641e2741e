/* Block-quantized element types: the table (names, elements and bytes per
 * block, as ggml's type traits and ggml-common.h's block structs give them)
 * and the dequantizers, written from ggml's block layouts: the fp16 scales
 * are little-endian halves, the quants packed nibbles/bit planes. */
#include "quant.h"

#include <stdio.h>
#include <string.h>

#define QK_K 256

static float h2f(const uint8_t *p) { return tio__half_to_float(tio__ld16(p)); }

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Q4_0: d, 16 bytes of nibbles; x = (q - 8) d. Low nibbles are elements
 * 0..15, high nibbles 16..31. */
static void dq_q4_0(const uint8_t *b, float *y) {
    float d = h2f(b);
    const uint8_t *qs = b + 2;
    for (int j = 0; j < 16; j++) {
        y[j] = (float)((qs[j] & 0x0F) - 8) * d;
        y[j + 16] = (float)((qs[j] >> 4) - 8) * d;
    }
}

/* Q4_1: d, m, nibbles; x = q d + m. */
static void dq_q4_1(const uint8_t *b, float *y) {
    float d = h2f(b), m = h2f(b + 2);
    const uint8_t *qs = b + 4;
    for (int j = 0; j < 16; j++) {
        y[j] = (float)(qs[j] & 0x0F) * d + m;
        y[j + 16] = (float)(qs[j] >> 4) * d + m;
    }
}

/* Q5_0 / Q5_1: d (, m), 32 high bits (bit j: element j), nibbles. Q5_0
 * adds no m: (q - 16) d alone, so that a zero keeps d's sign as ggml's does
 * (-0 + 0 would be +0). */
static void dq_q5(const uint8_t *qhp, const uint8_t *qs, float d, const float *m, float *y) {
    uint32_t qh = tio__ld32(qhp);
    int off = m ? 0 : 16;
    for (int j = 0; j < 16; j++) {
        int x0 = (qs[j] & 0x0F) | (int)(((qh >> j) << 4) & 0x10);
        int x1 = (qs[j] >> 4) | (int)((qh >> (j + 12)) & 0x10);
        y[j] = (float)(x0 - off) * d;
        y[j + 16] = (float)(x1 - off) * d;
        if (m) {
            y[j] += *m;
            y[j + 16] += *m;
        }
    }
}
static void dq_q5_0(const uint8_t *b, float *y) { dq_q5(b + 2, b + 6, h2f(b), NULL, y); }
static void dq_q5_1(const uint8_t *b, float *y) {
    float m = h2f(b + 2);
    dq_q5(b + 4, b + 8, h2f(b), &m, y);
}

/* Q8_0: d, 32 int8. */
static void dq_q8_0(const uint8_t *b, float *y) {
    float d = h2f(b);
    for (int j = 0; j < 32; j++) y[j] = (float)(int8_t)b[2 + j] * d;
}

/* Q2_K: scales[16] (low nibble scale, high nibble min), qs[64], d, dmin. */
static void dq_q2_k(const uint8_t *b, float *y) {
    const uint8_t *sc = b, *q = b + 16;
    float d = h2f(b + 80), dmin = h2f(b + 82);
    int is = 0;
    for (int n = 0; n < QK_K; n += 128) {
        for (int shift = 0; shift < 8; shift += 2) {
            for (int half = 0; half < 2; half++) {
                uint8_t s = sc[is++];
                float dl = d * (float)(s & 0xF), ml = dmin * (float)(s >> 4);
                for (int l = 0; l < 16; l++)
                    *y++ = dl * (float)((q[l + 16 * half] >> shift) & 3) - ml;
            }
        }
        q += 32;
    }
}

/* Q3_K: hmask[32], qs[64], 12 bytes of 16 packed 6-bit scales, d. */
static void dq_q3_k(const uint8_t *b, float *y) {
    const uint8_t *hm = b, *q = b + 32, *s = b + 96;
    float d = h2f(b + 108);
    int8_t scales[16];
    for (int j = 0; j < 16; j++) {
        int lo = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
        int hi = (s[8 + (j & 3)] >> (2 * (j >> 2))) & 3;
        scales[j] = (int8_t)((lo | (hi << 4)) - 32);
    }
    int is = 0;
    uint8_t m = 1;
    for (int n = 0; n < QK_K; n += 128) {
        for (int shift = 0; shift < 8; shift += 2) {
            for (int half = 0; half < 2; half++) {
                float dl = d * (float)scales[is++];
                for (int l = 0; l < 16; l++) {
                    int k = l + 16 * half;
                    int v = ((q[k] >> shift) & 3) - ((hm[k] & m) ? 0 : 4);
                    *y++ = dl * (float)v;
                }
            }
            m = (uint8_t)(m << 1);
        }
        q += 32;
    }
}

/* The 6-bit scale and min j of Q4_K/Q5_K's 12 packed bytes. */
static void scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m) {
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* Q4_K: d, dmin, scales[12], qs[128]. Q5_K: the same with qh[32] before qs. */
static void dq_k45(const uint8_t *b, const uint8_t *qh, const uint8_t *ql, float *y) {
    float d = h2f(b), dmin = h2f(b + 2);
    const uint8_t *sc = b + 4;
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0, is = 0; j < QK_K; j += 64, is += 2) {
        uint8_t s, m;
        scale_min_k4(is, sc, &s, &m);
        float d1 = d * (float)s, m1 = dmin * (float)m;
        scale_min_k4(is + 1, sc, &s, &m);
        float d2 = d * (float)s, m2 = dmin * (float)m;
        for (int l = 0; l < 32; l++)
            *y++ = d1 * (float)((ql[l] & 0xF) + (qh && (qh[l] & u1) ? 16 : 0)) - m1;
        for (int l = 0; l < 32; l++)
            *y++ = d2 * (float)((ql[l] >> 4) + (qh && (qh[l] & u2) ? 16 : 0)) - m2;
        ql += 32;
        u1 = (uint8_t)(u1 << 2);
        u2 = (uint8_t)(u2 << 2);
    }
}
static void dq_q4_k(const uint8_t *b, float *y) { dq_k45(b, NULL, b + 16, y); }
static void dq_q5_k(const uint8_t *b, float *y) { dq_k45(b, b + 16, b + 48, y); }

/* Q6_K: ql[128], qh[64], int8 scales[16], d. */
static void dq_q6_k(const uint8_t *b, float *y) {
    const uint8_t *ql = b, *qh = b + 128;
    const uint8_t *sc = b + 192;
    float d = h2f(b + 208);
    for (int n = 0; n < QK_K; n += 128) {
        for (int l = 0; l < 32; l++) {
            int is = l / 16;
            int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
            int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
            int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l] = d * (float)(int8_t)sc[is] * (float)q1;
            y[l + 32] = d * (float)(int8_t)sc[is + 2] * (float)q2;
            y[l + 64] = d * (float)(int8_t)sc[is + 4] * (float)q3;
            y[l + 96] = d * (float)(int8_t)sc[is + 6] * (float)q4;
        }
        y += 128;
        ql += 64;
        qh += 32;
        sc += 8;
    }
}

/* Q8_K: d as a float32, 256 int8, 16 int16 sums (not needed here). */
static void dq_q8_k(const uint8_t *b, float *y) {
    float d = from_bits(tio__ld32(b));
    for (int j = 0; j < QK_K; j++) y[j] = d * (float)(int8_t)b[4 + j];
}

/* The non-linear 4-bit levels of IQ4_NL and IQ4_XS. */
static const int8_t iq4_levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                      1,    13,   25,  38,  53,  69,  89,  113};

/* Sixteen bytes of nibbles at a scale: low nibbles are elements 0..15, high
 * 16..31, each a level of `lv` times d. */
static void dq_nibbles(const uint8_t *qs, const int8_t *lv, float d, float *y) {
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)lv[qs[j] & 0x0F];
        y[j + 16] = d * (float)lv[qs[j] >> 4];
    }
}

/* IQ4_NL: d, 16 bytes of nibbles indexing iq4_levels. */
static void dq_iq4_nl(const uint8_t *b, float *y) { dq_nibbles(b + 2, iq4_levels, h2f(b), y); }

/* IQ4_XS: d, scales_h (u16: 2 high bits per 32 elements), scales_l[4] (a
 * nibble per 32 elements), 128 bytes: eight IQ4_NL-like groups, each at
 * d (s - 32) for its 6-bit scale s. */
static void dq_iq4_xs(const uint8_t *b, float *y) {
    float d = h2f(b);
    unsigned sh = tio__ld16(b + 2);
    const uint8_t *sl = b + 4, *qs = b + 8;
    for (int g = 0; g < 8; g++) {
        int s = ((sl[g / 2] >> (4 * (g % 2))) & 0x0F) | (int)(((sh >> (2 * g)) & 3) << 4);
        dq_nibbles(qs + 16 * g, iq4_levels, d * (float)(s - 32), y + 32 * g);
    }
}

/* A base-3 digit of a TQ1_0 byte: the byte holds digits as a fraction of
 * 243 (rounded up), so multiplying by 3^n (mod 256) brings digit n to the
 * top and (q * 3) >> 8 reads it: 0, 1 or 2, for -1, 0, +1. */
static int trit(uint8_t byte, int n) {
    static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
    uint8_t q = (uint8_t)(byte * pow3[n]);
    return ((q * 3) >> 8) - 1;
}

/* TQ1_0: qs[48] (5 trits a byte), qh[4] (4 trits a byte), d. Elements run
 * digit by digit over byte runs: qs[0..31] (5 x 32), qs[32..47] (5 x 16),
 * qh[0..3] (4 x 4). */
static void dq_tq1_0(const uint8_t *b, float *y) {
    const uint8_t *qs = b, *qh = b + 48;
    float d = h2f(b + 52);
    static const struct {
        uint8_t at, len, digits;
    } runs[3] = {{0, 32, 5}, {32, 16, 5}, {48, 4, 4}};
    for (int r = 0; r < 3; r++)
        for (int n = 0; n < runs[r].digits; n++)
            for (int m = 0; m < runs[r].len; m++)
                *y++ = (float)trit(r < 2 ? qs[runs[r].at + m] : qh[m], n) * d;
}

/* TQ2_0: qs[64] (4 two-bit values a byte, 1 meaning 0), d. Per 32 bytes,
 * shift by shift. */
static void dq_tq2_0(const uint8_t *b, float *y) {
    float d = h2f(b + 64);
    for (int j = 0; j < 64; j += 32)
        for (int l = 0; l < 4; l++)
            for (int m = 0; m < 32; m++) *y++ = (float)(((b[j + m] >> (2 * l)) & 3) - 1) * d;
}

/* FP4 (E2M1) values, doubled so that they are integers: 0 0.5 1 1.5 2 3 4 6
 * and their negatives; MXFP4 and NVFP4 halve their scales to match. */
static const int8_t fp4_twice[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* MXFP4: e (E8M0: 2^(e-127), halved: 2^(e-128), every e finite as ggml
 * reads it), 16 bytes of FP4 nibbles. */
static void dq_mxfp4(const uint8_t *b, float *y) {
    unsigned e = b[0];
    float d = from_bits(e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23);
    dq_nibbles(b + 1, fp4_twice, d, y);
}

/* NVFP4: four UE4M3 scales (4 exponent bits, bias 7, 3 mantissa bits; the
 * top bit ignored, 0x7F read as 0 as ggml reads it), then 4 x 8 bytes of FP4
 * nibbles, one group of 16 elements per scale (low nibbles 0..7, high
 * 8..15). */
static void dq_nvfp4(const uint8_t *b, float *y) {
    for (int s = 0; s < 4; s++) {
        uint8_t x = b[s];
        int ex = (x >> 3) & 0x0F, man = x & 7;
        float d = 0.0f; /* halved, as the levels are doubled */
        if (x != 0 && x != 0x7F)
            d = ex ? (float)(8 + man) * from_bits((uint32_t)(ex - 11 + 127) << 23)
                   : (float)man * from_bits((uint32_t)(127 - 10) << 23);
        const uint8_t *qs = b + 4 + 8 * s;
        for (int j = 0; j < 8; j++) {
            y[16 * s + j] = d * (float)fp4_twice[qs[j] & 0x0F];
            y[16 * s + j + 8] = d * (float)fp4_twice[qs[j] >> 4];
        }
    }
}

/* Q1_0: d, 16 bytes: bit j (LSB first) of the 128 is +d when set, -d when
 * not. */
static void dq_q1_0(const uint8_t *b, float *y) {
    float d = h2f(b);
    for (int j = 0; j < 128; j++) y[j] = (b[2 + j / 8] >> (j % 8)) & 1 ? d : -d;
}

/* Q2_0: d, 16 bytes of 2-bit values (LSB first), 0..3 meaning -1..+2. */
static void dq_q2_0(const uint8_t *b, float *y) {
    float d = h2f(b);
    for (int j = 0; j < 64; j++) y[j] = (float)(((b[2 + j / 4] >> (2 * (j % 4))) & 3) - 1) * d;
}

/* Indexed by ggml type number; NULL names are gaps (removed types and the
 * plain element types, which are dtypes). */
static const tio_quant_info table[] = {
    [TIO_QUANT_Q4_0] = {"q4_0", 32, 18, dq_q4_0},
    [TIO_QUANT_Q4_1] = {"q4_1", 32, 20, dq_q4_1},
    [TIO_QUANT_Q5_0] = {"q5_0", 32, 22, dq_q5_0},
    [TIO_QUANT_Q5_1] = {"q5_1", 32, 24, dq_q5_1},
    [TIO_QUANT_Q8_0] = {"q8_0", 32, 34, dq_q8_0},
    [TIO_QUANT_Q8_1] = {"q8_1", 32, 36, NULL},
    [TIO_QUANT_Q2_K] = {"q2_K", QK_K, 84, dq_q2_k},
    [TIO_QUANT_Q3_K] = {"q3_K", QK_K, 110, dq_q3_k},
    [TIO_QUANT_Q4_K] = {"q4_K", QK_K, 144, dq_q4_k},
    [TIO_QUANT_Q5_K] = {"q5_K", QK_K, 176, dq_q5_k},
    [TIO_QUANT_Q6_K] = {"q6_K", QK_K, 210, dq_q6_k},
    [TIO_QUANT_Q8_K] = {"q8_K", QK_K, 292, dq_q8_k},
    [TIO_QUANT_IQ2_XXS] = {"iq2_xxs", QK_K, 66, NULL},
    [TIO_QUANT_IQ2_XS] = {"iq2_xs", QK_K, 74, NULL},
    [TIO_QUANT_IQ3_XXS] = {"iq3_xxs", QK_K, 98, NULL},
    [TIO_QUANT_IQ1_S] = {"iq1_s", QK_K, 50, NULL},
    [TIO_QUANT_IQ4_NL] = {"iq4_nl", 32, 18, dq_iq4_nl},
    [TIO_QUANT_IQ3_S] = {"iq3_s", QK_K, 110, NULL},
    [TIO_QUANT_IQ2_S] = {"iq2_s", QK_K, 82, NULL},
    [TIO_QUANT_IQ4_XS] = {"iq4_xs", QK_K, 136, dq_iq4_xs},
    [TIO_QUANT_IQ1_M] = {"iq1_m", QK_K, 56, NULL},
    [TIO_QUANT_TQ1_0] = {"tq1_0", QK_K, 54, dq_tq1_0},
    [TIO_QUANT_TQ2_0] = {"tq2_0", QK_K, 66, dq_tq2_0},
    [TIO_QUANT_MXFP4] = {"mxfp4", 32, 17, dq_mxfp4},
    [TIO_QUANT_NVFP4] = {"nvfp4", 64, 36, dq_nvfp4},
    [TIO_QUANT_Q1_0] = {"q1_0", 128, 18, dq_q1_0},
    [TIO_QUANT_Q2_0] = {"q2_0", 64, 18, dq_q2_0},
};

const tio_quant_info *tio__quant_info(int q) {
    if (q <= 0 || (size_t)q >= sizeof table / sizeof table[0] || !table[q].name) return NULL;
    return &table[q];
}

void tio__dequantize(const tio_quant_info *qi, const uint8_t *blocks, size_t nblocks,
                     float *out) {
    for (size_t i = 0; i < nblocks; i++)
        qi->dequantize(blocks + i * qi->bytes, out + i * qi->elems);
}

const char *tio_quant_name(tio_quant q) {
    const tio_quant_info *qi = tio__quant_info((int)q);
    return qi ? qi->name : NULL;
}

tio_quant tio_quant_from_name(const char *name) {
    if (!name) return TIO_QUANT_NONE;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].name && strcmp(table[i].name, name) == 0) return (tio_quant)i;
    return TIO_QUANT_NONE;
}

int tio_quant_block(tio_quant q, size_t *block_elems, size_t *block_bytes) {
    const tio_quant_info *qi = tio__quant_info((int)q);
    if (!qi) return TIO_E_DTYPE;
    if (block_elems) *block_elems = qi->elems;
    if (block_bytes) *block_bytes = qi->bytes;
    return TIO_OK;
}

const char *tio__quant_dequantizable(char *buf, size_t n) {
    size_t at = 0;
    if (n) buf[0] = '\0';
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (!table[i].name || !table[i].dequantize) continue;
        int k = snprintf(buf + at, n - at, "%s%s", at ? " " : "", table[i].name);
        if (k < 0 || (size_t)k >= n - at) break; /* cut at a whole name */
        at += (size_t)k;
    }
    return buf;
}

int tio_quant_can_dequantize(tio_quant q) {
    const tio_quant_info *qi = tio__quant_info((int)q);
    return qi && qi->dequantize;
}
