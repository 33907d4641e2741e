/*
 * JSON text as other libraries print it, so that what tensio writes is byte
 * for byte what the reference writes: strings as serde_json (safetensors'
 * header) and nlohmann/json (ZIO's labels) both escape them; whole values as
 * nlohmann's dump() prints them (object keys sorted, compact, doubles by
 * Grisu2 with nlohmann's parameters). See json.h.
 */
#include "core/internal.h"
#include "json/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tio__json_putc(tio_buf *b, char c) { tio__buf_put(b, &c, 1); }
void tio__json_puts(tio_buf *b, const char *s) { tio__buf_put(b, s, strlen(s)); }

/* A string as nlohmann's dump() (ensure_ascii off) and serde_json write it:
 * `"` and `\` escaped, \b \f \n \r \t, other control characters as \u00xx
 * (lowercase hex), everything else (DEL and UTF-8 included) as is. */
void tio__json_string(tio_buf *b, const char *s, size_t n) {
    static const char hx[] = "0123456789abcdef";
    tio__json_putc(b, '"');
    size_t run = 0; /* start of the pending unescaped run */
    for (size_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)s[i];
        char esc[7];
        size_t el = 2;
        esc[0] = '\\';
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            if (c >= 0x20) continue;
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hx[c >> 4];
            esc[5] = hx[c & 15];
            el = 6;
            break;
        }
        tio__buf_put(b, s + run, i - run);
        tio__buf_put(b, esc, el);
        run = i + 1;
    }
    tio__buf_put(b, s + run, n - run);
    tio__json_putc(b, '"');
}

/* ---- Grisu2, as nlohmann/json prints doubles (Loitsch 2010, "Printing
 * floating-point numbers quickly and accurately with integers"). Its digits
 * are not always the shortest round-trip ones, so a label written by ZIO's
 * C++ is reproduced only by the same algorithm with the same parameters:
 * products scaled into [2^-60, 2^-32), cached powers 10^k for
 * k = -300, -292, ..., 324 as 64-bit significands rounded to nearest.
 * The powers are computed here exactly with a small bignum. */

#define ZBIG_LIMBS 40 /* 1280 bits: 2^1070 / 10^300 needs under 1100 */
typedef struct zbig {
    uint32_t w[ZBIG_LIMBS];
    size_t n; /* limbs in use, no leading zero limb */
} zbig;

static void zbig_mul(zbig *b, uint32_t m) {
    uint64_t carry = 0;
    for (size_t i = 0; i < b->n; i++) {
        uint64_t t = (uint64_t)b->w[i] * m + carry;
        b->w[i] = (uint32_t)t;
        carry = t >> 32;
    }
    if (carry && b->n < ZBIG_LIMBS) b->w[b->n++] = (uint32_t)carry;
}

/* b = floor(b / d) */
static void zbig_div(zbig *b, uint32_t d) {
    uint64_t rem = 0;
    for (size_t i = b->n; i-- > 0;) {
        uint64_t cur = (rem << 32) | b->w[i];
        b->w[i] = (uint32_t)(cur / d);
        rem = cur % d;
    }
    while (b->n && b->w[b->n - 1] == 0) b->n--;
}

static unsigned zbig_bitlen(const zbig *b) {
    if (!b->n) return 0;
    unsigned top = 0;
    for (uint32_t t = b->w[b->n - 1]; t; t >>= 1) top++;
    return (unsigned)(b->n - 1) * 32 + top;
}

static unsigned zbig_bit(const zbig *b, unsigned i) {
    return i / 32 < b->n ? (b->w[i / 32] >> (i % 32)) & 1u : 0;
}

/* Bits [lo, lo + 64) of b. */
static uint64_t zbig_bits64(const zbig *b, unsigned lo) {
    uint64_t v = 0;
    for (unsigned i = 64; i-- > 0;) v = (v << 1) | zbig_bit(b, lo + i);
    return v;
}

static const uint32_t zg_p10[10] = {1,      10,      100,      1000,      10000,
                                    100000, 1000000, 10000000, 100000000, 1000000000};

/* 10^k = *f x 2^*e, *f in [2^63, 2^64) rounded to nearest (|k| <= 340). */
static void zg_pow10(int k, uint64_t *f, int *e) {
    zbig b;
    unsigned n = (unsigned)(k < 0 ? -k : k);
    uint64_t q;
    int qe;
    b.n = 1;
    b.w[0] = 1;
    if (k >= 0) {
        for (unsigned r = n; r; r -= r >= 9 ? 9 : r) zbig_mul(&b, zg_p10[r >= 9 ? 9 : r]);
        unsigned len = zbig_bitlen(&b);
        if (len <= 64) {
            q = zbig_bits64(&b, 0) << (64 - len);
            qe = (int)len - 64;
        } else {
            q = zbig_bits64(&b, len - 64);
            qe = (int)len - 64;
            if (zbig_bit(&b, len - 65)) q++; /* no ties: 5^k never has 65 bits */
        }
    } else {
        /* q2 = floor(2^(N+1) / 10^n) with N = 63 + bitlen(10^n), so that
         * 2^N / 10^n lies in (2^63, 2^64); then round q2 / 2 half up */
        zbig d = b;
        for (unsigned r = n; r; r -= r >= 9 ? 9 : r) zbig_mul(&d, zg_p10[r >= 9 ? 9 : r]);
        unsigned nbits = 63 + zbig_bitlen(&d);
        memset(b.w, 0, sizeof b.w);
        b.w[(nbits + 1) / 32] = 1u << ((nbits + 1) % 32);
        b.n = (nbits + 1) / 32 + 1;
        for (unsigned r = n; r; r -= r >= 9 ? 9 : r) zbig_div(&b, zg_p10[r >= 9 ? 9 : r]);
        /* floor(floor(x / a) / b) = floor(x / ab): the divisions are exact */
        uint64_t hi = zbig_bits64(&b, 1);
        q = hi + zbig_bit(&b, 0);
        qe = -(int)nbits;
    }
    if (q == 0) { /* the rounding carried out: 2^64 */
        q = UINT64_C(1) << 63;
        qe++;
    }
    *f = q;
    *e = qe;
}

/* The upper 64 bits of a x b, rounded to nearest, ties up. */
static uint64_t zg_mulhi(uint64_t a, uint64_t b) {
    uint64_t al = a & 0xFFFFFFFFu, ah = a >> 32, bl = b & 0xFFFFFFFFu, bh = b >> 32;
    uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    /* bits 32..95 of the product, without the carries above bit 63 of it */
    uint64_t mid = (ll >> 32) + (lh & 0xFFFFFFFFu) + (hl & 0xFFFFFFFFu);
    mid += UINT64_C(1) << 31; /* + 2^63 of the whole product */
    return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}

/* Moves the last digit down while that stays inside the (narrowed) interval
 * and brings the number closer to the value. rest = upper bound - number,
 * dist = upper bound - value, delta = interval width, ten = a unit of the
 * last digit, all in the same fixed point. */
static void zg_round(char *digs, int nd, uint64_t dist, uint64_t delta, uint64_t rest,
                     uint64_t ten) {
    while (rest < dist && delta - rest >= ten &&
           (rest + ten < dist || dist - rest > rest + ten - dist) && digs[nd - 1] > '0') {
        digs[nd - 1]--;
        rest += ten;
    }
}

/* v > 0, finite: its digits (no terminator) and v ~ digits x 10^*dexp. */
static int zg_digits(double v, char *digs, int *dexp) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    uint64_t frac = bits & ((UINT64_C(1) << 52) - 1);
    int bexp = (int)(bits >> 52);
    uint64_t f = bexp ? frac | (UINT64_C(1) << 52) : frac; /* v = f x 2^e */
    int e = bexp ? bexp - 1075 : -1074;
    /* the rounding interval's ends, over a common 64-bit exponent */
    uint64_t hi = 2 * f + 1, lo;
    int ehi = e - 1;
    unsigned sh = 0;
    while (!((hi << sh) >> 63)) sh++;
    hi <<= sh;
    int ew = ehi - (int)sh; /* hi = m+ x 2^-ew exactly */
    if (frac == 0 && bexp > 1)
        lo = (4 * f - 1) << (sh - 1); /* the lower neighbour is closer */
    else
        lo = (2 * f - 1) << sh;
    uint64_t w = f << (sh + 1);
    /* a cached power 10^kc bringing the exponent into [-60, -32] */
    int fa = -60 - ew - 1;
    int k = (fa * 78913) / (1 << 18) + (fa > 0);
    int kc = -300 + 8 * ((300 + k + 7) / 8);
    uint64_t cf;
    int ce;
    zg_pow10(kc, &cf, &ce);
    int ex = ew + ce + 64;
    uint64_t W = zg_mulhi(w, cf);
    uint64_t Mlo = zg_mulhi(lo, cf) + 1, Mhi = zg_mulhi(hi, cf) - 1; /* narrowed */
    uint64_t delta = Mhi - Mlo, dist = Mhi - W;
    unsigned shift = (unsigned)-ex;
    uint64_t one = UINT64_C(1) << shift;
    uint32_t p1 = (uint32_t)(Mhi >> shift);
    uint64_t p2 = Mhi & (one - 1);
    int nd = 0, left = 1;
    uint32_t unit = 1;
    while (left < 10 && p1 >= zg_p10[left]) left++;
    unit = zg_p10[left - 1];
    *dexp = -kc;
    /* the integral digits of the upper end, until the rest fits the interval */
    while (left > 0) {
        digs[nd++] = (char)('0' + p1 / unit);
        p1 %= unit;
        left--;
        uint64_t rest = ((uint64_t)p1 << shift) + p2;
        if (rest <= delta) {
            *dexp += left;
            zg_round(digs, nd, dist, delta, rest, (uint64_t)unit << shift);
            return nd;
        }
        unit /= 10;
    }
    /* then fractional ones */
    for (;;) {
        p2 *= 10;
        digs[nd++] = (char)('0' + (p2 >> shift));
        p2 &= one - 1;
        (*dexp)--;
        delta *= 10;
        dist *= 10;
        if (p2 <= delta || nd >= 20) break;
    }
    zg_round(digs, nd, dist, delta, p2, one);
    return nd;
}

/* A double as nlohmann's dump() writes it: Grisu2 digits laid out by its
 * format_buffer rules: fixed notation for decimal exponents -4 < n <= 15
 * (".0" on integers), otherwise d.ddde+XX with at least two exponent
 * digits; -0.0 and 0.0 as such. */
static void zj_real(tio_buf *b, double v) {
    if (!isfinite(v)) { /* nlohmann writes null; jansson never holds one */
        tio__json_puts(b, "null");
        return;
    }
    if (signbit(v)) {
        tio__json_putc(b, '-');
        v = -v;
    }
    if (v == 0) {
        tio__json_puts(b, "0.0");
        return;
    }
    char digs[24];
    int dexp;
    int k = zg_digits(v, digs, &dexp);
    int n = k + dexp; /* v = 0.d1d2...dk x 10^n */
    char out[64];
    size_t o = 0;
    if (k <= n && n <= 15) {
        memcpy(out, digs, (size_t)k);
        o = (size_t)k;
        for (int i = k; i < n; i++) out[o++] = '0';
        out[o++] = '.';
        out[o++] = '0';
    } else if (0 < n && n <= 15) {
        memcpy(out, digs, (size_t)n);
        o = (size_t)n;
        out[o++] = '.';
        memcpy(out + o, digs + n, (size_t)(k - n));
        o += (size_t)(k - n);
    } else if (-4 < n && n <= 0) {
        out[o++] = '0';
        out[o++] = '.';
        for (int i = 0; i < -n; i++) out[o++] = '0';
        memcpy(out + o, digs, (size_t)k);
        o += (size_t)k;
    } else {
        out[o++] = digs[0];
        if (k > 1) {
            out[o++] = '.';
            memcpy(out + o, digs + 1, (size_t)(k - 1));
            o += (size_t)(k - 1);
        }
        int x = n - 1;
        out[o++] = 'e';
        out[o++] = x < 0 ? '-' : '+';
        unsigned ux = (unsigned)(x < 0 ? -x : x);
        if (ux >= 100) out[o++] = (char)('0' + ux / 100);
        out[o++] = (char)('0' + ux / 10 % 10);
        out[o++] = (char)('0' + ux % 10);
    }
    tio__buf_put(b, out, o);
}

static int zj_keycmp(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of an object sorted by byte order, as nlohmann's std::map holds
 * them (free the array, not the keys); NULL when out of memory. Readers
 * hand out metadata in this order too, so that a label read, written (sorted)
 * and read again gives the same order. */
const char **tio__json_sorted_keys(json_t *obj, size_t *count) {
    size_t n = json_object_size(obj), k = 0;
    const char **keys = malloc((n ? n : 1) * sizeof *keys);
    if (!keys) return NULL;
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        if (k < n) keys[k++] = key;
    }
    qsort(keys, k, sizeof *keys, zj_keycmp);
    *count = k;
    return keys;
}

/* Compact JSON with object keys sorted by byte order: nlohmann's dump(). */
void tio__json_dump_sorted(tio_buf *b, json_t *j) {
    if (b->oom) return;
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        size_t k;
        const char **keys = tio__json_sorted_keys(j, &k);
        if (!keys) {
            b->oom = 1;
            return;
        }
        tio__json_putc(b, '{');
        for (size_t i = 0; i < k; i++) {
            if (i) tio__json_putc(b, ',');
            tio__json_string(b, keys[i], strlen(keys[i]));
            tio__json_putc(b, ':');
            tio__json_dump_sorted(b, json_object_get(j, keys[i]));
        }
        tio__json_putc(b, '}');
        free(keys);
        break;
    }
    case JSON_ARRAY:
        tio__json_putc(b, '[');
        for (size_t i = 0; i < json_array_size(j); i++) {
            if (i) tio__json_putc(b, ',');
            tio__json_dump_sorted(b, json_array_get(j, i));
        }
        tio__json_putc(b, ']');
        break;
    case JSON_STRING:
        tio__json_string(b, json_string_value(j), json_string_length(j));
        break;
    case JSON_INTEGER: {
        char tmp[24];
        int n = snprintf(tmp, sizeof tmp, "%lld", (long long)json_integer_value(j));
        tio__buf_put(b, tmp, n > 0 ? (size_t)n : 0);
        break;
    }
    case JSON_REAL: zj_real(b, json_real_value(j)); break;
    case JSON_TRUE: tio__json_puts(b, "true"); break;
    case JSON_FALSE: tio__json_puts(b, "false"); break;
    case JSON_NULL: tio__json_puts(b, "null"); break;
    }
}

/* Whether nesting stays within `max` levels (the label object is level 1). */
bool tio__json_depth_ok(json_t *j, unsigned depth, unsigned max) {
    if (depth > max) return false;
    const char *key;
    json_t *v;
    if (json_is_object(j)) {
        json_object_foreach(j, key, v) {
            if (!tio__json_depth_ok(v, depth + 1, max)) return false;
        }
    } else if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++)
            if (!tio__json_depth_ok(json_array_get(j, i), depth + 1, max)) return false;
    }
    return true;
}

/* A metadata value as a string: a string as is, anything else as compact
 * JSON text. Into *b (reset first); NUL-terminated. */
bool tio__json_text(tio_buf *b, json_t *v) {
    b->len = 0;
    if (json_is_string(v))
        tio__buf_put(b, json_string_value(v), json_string_length(v));
    else
        tio__json_dump_sorted(b, v);
    tio__json_putc(b, '\0');
    return !b->oom;
}
