/* Block-quantized element types: the table (names, elements and bytes per
 * block, as ggml's type traits and ggml-common.h's block structs give them)
 * and the dequantizers, written from ggml's block layouts: the fp16 scales
 * are little-endian halves, the quants packed nibbles/bit planes. */
#include "quant.h"

#include <string.h>

#define QK_K 256

static float h2f(const uint8_t *p) { return tio__half_to_float(tio__ld16(p)); }

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

/* Q5_0 / Q5_1: d (, m), 32 high bits (bit j: element j), nibbles. */
static void dq_q5(const uint8_t *qhp, const uint8_t *qs, float d, float m, int off, float *y) {
    uint32_t qh = tio__ld32(qhp);
    for (int j = 0; j < 16; j++) {
        int x0 = (qs[j] & 0x0F) | (int)(((qh >> j) << 4) & 0x10);
        int x1 = (qs[j] >> 4) | (int)((qh >> (j + 12)) & 0x10);
        y[j] = (float)(x0 - off) * d + m;
        y[j + 16] = (float)(x1 - off) * d + m;
    }
}
static void dq_q5_0(const uint8_t *b, float *y) { dq_q5(b + 2, b + 6, h2f(b), 0.0f, 16, y); }
static void dq_q5_1(const uint8_t *b, float *y) {
    dq_q5(b + 4, b + 8, h2f(b), h2f(b + 2), 0, y);
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
    [TIO_QUANT_Q8_K] = {"q8_K", QK_K, 292, NULL},
    [TIO_QUANT_IQ2_XXS] = {"iq2_xxs", QK_K, 66, NULL},
    [TIO_QUANT_IQ2_XS] = {"iq2_xs", QK_K, 74, NULL},
    [TIO_QUANT_IQ3_XXS] = {"iq3_xxs", QK_K, 98, NULL},
    [TIO_QUANT_IQ1_S] = {"iq1_s", QK_K, 50, NULL},
    [TIO_QUANT_IQ4_NL] = {"iq4_nl", 32, 18, NULL},
    [TIO_QUANT_IQ3_S] = {"iq3_s", QK_K, 110, NULL},
    [TIO_QUANT_IQ2_S] = {"iq2_s", QK_K, 82, NULL},
    [TIO_QUANT_IQ4_XS] = {"iq4_xs", QK_K, 136, NULL},
    [TIO_QUANT_IQ1_M] = {"iq1_m", QK_K, 56, NULL},
    [TIO_QUANT_TQ1_0] = {"tq1_0", QK_K, 54, NULL},
    [TIO_QUANT_TQ2_0] = {"tq2_0", QK_K, 66, NULL},
    [TIO_QUANT_MXFP4] = {"mxfp4", 32, 17, NULL},
    [TIO_QUANT_NVFP4] = {"nvfp4", 64, 36, NULL},
    [TIO_QUANT_Q1_0] = {"q1_0", 128, 18, NULL},
    [TIO_QUANT_Q2_0] = {"q2_0", 64, 18, NULL},
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

int tio_quant_can_dequantize(tio_quant q) {
    const tio_quant_info *qi = tio__quant_info((int)q);
    return qi && qi->dequantize;
}
