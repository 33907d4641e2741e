/*
 * zio (.zmsg): ZIO TENS messages (brettviren/zio, docs/tensors.org).
 *
 * A ZIO message is multipart: part 0 = "ZIO" + level digit + 4-byte form +
 * JSON label (no length field), part 1 = coordinates (origin, granule, seqno:
 * u64 LE), parts 2.. = payload. In a TENS message the label's "TENS" object
 * says which payload part holds which tensor. A .zmsg file is the CZMQ
 * zmsg_encode single buffer: per part, one size byte (< 255) or 0xFF and a
 * big-endian u32, then the bytes; no count, no total.
 * See docs/formats/zio.md for what is accepted, refused, kept and written.
 */
#include "core/internal.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZIO_FMT "zio"
#define ZIO_PREFIX_LEN 8u   /* "ZIO" + level + form */
#define ZIO_COORD_LEN 24u   /* origin, granule, seqno */
#define ZIO_HEADER_PARTS 2u /* prefix, coordinates */
#define ZIO_MAX_LEVEL 8u
#define ZIO_SMALL_RANK 16u
#define ZIO_BIG_SIZE 0xFFu  /* size byte announcing a 4-byte big-endian size */

static const char zio_default_form[4] = {'T', 'E', 'N', 'S'};

static const struct zio_kind {
    char kind;
    uint8_t word;
    tio_dtype dtype;
} zio_kinds[] = {
    {'f', 2, TIO_FLOAT16}, {'f', 4, TIO_FLOAT32}, {'f', 8, TIO_FLOAT64}, {'i', 1, TIO_INT8},
    {'i', 2, TIO_INT16},   {'i', 4, TIO_INT32},   {'i', 8, TIO_INT64},   {'u', 1, TIO_UINT8},
    {'u', 2, TIO_UINT16},  {'u', 4, TIO_UINT32},  {'u', 8, TIO_UINT64},  {'b', 1, TIO_BOOL},
    {'c', 8, TIO_COMPLEX64}, {'c', 16, TIO_COMPLEX128},
};
#define ZIO_NKINDS (sizeof zio_kinds / sizeof zio_kinds[0])

static const struct zio_kind *zio_kind_of(tio_dtype dt) {
    for (size_t i = 0; i < ZIO_NKINDS; i++)
        if (zio_kinds[i].dtype == dt) return &zio_kinds[i];
    return NULL;
}

/* --------------------------------------------------------- native state */

/* What the reader keeps of one tensor entry for the writer. */
typedef struct zio_tstate {
    const tio_tensor *t; /* the container tensor it describes */
    size_t part;         /* payload index */
    bool part_explicit;  /* the entry had "part" */
    bool keep_layout;    /* its order/ascend (if any) still describe the data */
    json_t *entry;       /* the entry object, borrowed from the label */
    json_t *meta;        /* entry["metadata"] (borrowed) or NULL */
} zio_tstate;

/* A payload part no tensor refers to: a view into the source. */
typedef struct zio_upart {
    size_t index;
    const uint8_t *data;
    size_t size;
} zio_upart;

/* The container's native state (native_format "zio"): everything a
 * read -> write round trip needs that the generic model has no place for. */
typedef struct zio_native {
    unsigned level;
    char form[4];
    uint64_t coord[3];
    bool label_empty;     /* part 0 was exactly 8 bytes */
    json_t *label;        /* the parsed label (owned) or NULL when empty */
    json_t *tens;         /* label["TENS"] (borrowed) or NULL */
    bool tensors_present; /* TENS had "tensors" */
    zio_tstate *ts;       /* one per tensor, in container order */
    size_t nts;
    size_t npayload;
    zio_upart *up;        /* unreferenced payload parts, by index */
    size_t nup;
} zio_native;

static void zio_native_free(void *p) {
    zio_native *st = p;
    if (!st) return;
    json_decref(st->label);
    free(st->ts);
    free(st->up);
    free(st);
}

/* ------------------------------------------------------------- helpers */



/* Where byte `delta` of part `p` sits in the source, or -1 (a frame). */
static int64_t zio_at(const tio_rpart *p, size_t delta) {
    return p->offset < 0 ? -1 : p->offset + (int64_t)delta;
}

static const char *zj_type(const json_t *j) {
    switch (json_typeof(j)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE: return "true";
    case JSON_FALSE: return "false";
    case JSON_NULL: return "null";
    }
    return "a JSON value";
}

/* Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. */
static bool zio_utf8_ok(const char *str, size_t n) {
    const uint8_t *s = (const uint8_t *)str;
    size_t i = 0;
    while (i < n) {
        uint8_t b = s[i];
        size_t len;
        uint32_t cp;
        if (b < 0x80) {
            i++;
            continue;
        } else if (b >= 0xC2 && b <= 0xDF) {
            len = 2;
            cp = b & 0x1Fu;
        } else if (b >= 0xE0 && b <= 0xEF) {
            len = 3;
            cp = b & 0x0Fu;
        } else if (b >= 0xF0 && b <= 0xF4) {
            len = 4;
            cp = b & 0x07u;
        } else {
            return false;
        }
        if (n - i < len) return false;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (s[i + k] & 0x3Fu);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

/* ------------------------------------------------- JSON text (nlohmann) */

/* A growable byte buffer; `failed` after an allocation failure. */
typedef struct zbuf {
    char *p;
    size_t len, cap;
    bool failed;
} zbuf;

static void zb_put(zbuf *b, const void *s, size_t n) {
    if (b->failed || n == 0) return;
    if (b->cap - b->len < n) {
        size_t need;
        if (tio__add_ovf(b->len, n, &need)) {
            b->failed = true;
            return;
        }
        size_t cap = b->cap ? b->cap : 64;
        while (cap < need) {
            if (cap > SIZE_MAX / 2) {
                cap = need;
                break;
            }
            cap *= 2;
        }
        char *np = realloc(b->p, cap);
        if (!np) {
            b->failed = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void zb_putc(zbuf *b, char c) { zb_put(b, &c, 1); }
static void zb_puts(zbuf *b, const char *s) { zb_put(b, s, strlen(s)); }

/* A string as nlohmann's dump() writes it (ensure_ascii off): `"` and `\`
 * escaped, \b \f \n \r \t, other control characters as \u00xx, everything
 * else (UTF-8 included) as is. */
static void zj_string(zbuf *b, const char *s, size_t n) {
    static const char hx[] = "0123456789abcdef";
    zb_putc(b, '"');
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
        zb_put(b, s + run, i - run);
        zb_put(b, esc, el);
        run = i + 1;
    }
    zb_put(b, s + run, n - run);
    zb_putc(b, '"');
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
static void zj_real(zbuf *b, double v) {
    if (!isfinite(v)) { /* nlohmann writes null; jansson never holds one */
        zb_puts(b, "null");
        return;
    }
    if (signbit(v)) {
        zb_putc(b, '-');
        v = -v;
    }
    if (v == 0) {
        zb_puts(b, "0.0");
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
    zb_put(b, out, o);
}

static int zj_keycmp(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of an object sorted by byte order, as nlohmann's std::map holds
 * them (free the array, not the keys); NULL when out of memory. Readers
 * hand out metadata in this order too, so that a label read, written (sorted)
 * and read again gives the same order. */
static const char **zj_sorted_keys(json_t *obj, size_t *count) {
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
static void zj_dump(zbuf *b, json_t *j) {
    if (b->failed) return;
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        size_t k;
        const char **keys = zj_sorted_keys(j, &k);
        if (!keys) {
            b->failed = true;
            return;
        }
        zb_putc(b, '{');
        for (size_t i = 0; i < k; i++) {
            if (i) zb_putc(b, ',');
            zj_string(b, keys[i], strlen(keys[i]));
            zb_putc(b, ':');
            zj_dump(b, json_object_get(j, keys[i]));
        }
        zb_putc(b, '}');
        free(keys);
        break;
    }
    case JSON_ARRAY:
        zb_putc(b, '[');
        for (size_t i = 0; i < json_array_size(j); i++) {
            if (i) zb_putc(b, ',');
            zj_dump(b, json_array_get(j, i));
        }
        zb_putc(b, ']');
        break;
    case JSON_STRING:
        zj_string(b, json_string_value(j), json_string_length(j));
        break;
    case JSON_INTEGER: {
        char tmp[24];
        int n = snprintf(tmp, sizeof tmp, "%lld", (long long)json_integer_value(j));
        zb_put(b, tmp, n > 0 ? (size_t)n : 0);
        break;
    }
    case JSON_REAL: zj_real(b, json_real_value(j)); break;
    case JSON_TRUE: zb_puts(b, "true"); break;
    case JSON_FALSE: zb_puts(b, "false"); break;
    case JSON_NULL: zb_puts(b, "null"); break;
    }
}

/* Whether nesting stays within `max` levels (the label object is level 1). */
static bool zj_depth_ok(json_t *j, unsigned depth, unsigned max) {
    if (depth > max) return false;
    const char *key;
    json_t *v;
    if (json_is_object(j)) {
        json_object_foreach(j, key, v) {
            if (!zj_depth_ok(v, depth + 1, max)) return false;
        }
    } else if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++)
            if (!zj_depth_ok(json_array_get(j, i), depth + 1, max)) return false;
    }
    return true;
}

/* A metadata value as a string: a string as is, anything else as compact
 * JSON text. Into *b (reset first); NUL-terminated. */
static bool zj_text(zbuf *b, json_t *v) {
    b->len = 0;
    if (json_is_string(v))
        zb_put(b, json_string_value(v), json_string_length(v));
    else
        zj_dump(b, v);
    zb_putc(b, '\0');
    return !b->failed;
}

/* ------------------------------------------------------------------ probe */

/* The first part's size field and "ZIO" at the start of that part. */
static int zio_probe(const uint8_t *data, size_t size) {
    if (size < 4) return 0;
    size_t hdr = 1, len = data[0];
    if (data[0] == ZIO_BIG_SIZE) {
        if (size < 8) return 0;
        hdr = 5;
        len = ((size_t)data[1] << 24) | ((size_t)data[2] << 16) | ((size_t)data[3] << 8) |
              data[4];
    }
    if (len < 3 || len > size - hdr || memcmp(data + hdr, "ZIO", 3) != 0) return 0;
    return 80;
}

/* ------------------------------------------------------------------- read */

typedef struct zio_reader {
    tio_read_ctx *ctx;
    const tio_rpart *parts;
    size_t npayload;    /* n - 2 */
    zio_native *st;
    int64_t label_off;  /* offset of the label in the source, or -1 */
    size_t *used;       /* per payload part: the tensor using it, or SIZE_MAX */
    zbuf text;          /* scratch for metadata values */
} zio_reader;

static int zio_lerr(const zio_reader *r, tio_error *err, int code, const char *fmt, ...)
    TIO_PRINTF(4, 5);
static int zio_lerr(const zio_reader *r, tio_error *err, int code, const char *fmt, ...) {
    char msg[TIO_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tio__err(err, code, ZIO_FMT, r->label_off, "part 0: %s", msg);
}

static int zio_lwarn(zio_reader *r, tio_error *err, const char *fmt, ...) TIO_PRINTF(3, 4);
static int zio_lwarn(zio_reader *r, tio_error *err, const char *fmt, ...) {
    char msg[TIO_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tio__warn(r->ctx, ZIO_FMT, r->label_off, err, "part 0: %s", msg);
}

static int zio_prop(tio_container *c, const char *key, const char *value, tio_error *err) {
    if (tio__kv_set(&c->props, key, value, NULL) != TIO_OK) return tio__nomem(err, ZIO_FMT);
    return TIO_OK;
}

static int zio_prop_u64(tio_container *c, const char *key, uint64_t v, tio_error *err) {
    char buf[TIO__DEC_CAP];
    return zio_prop(c, key, tio__u64_dec(buf, v), err);
}

/* Stores a metadata entry (tensor or container) as a string. */
static int zio_meta(zio_reader *r, tio_kv *kv, const char *what, const char *key, json_t *v,
                    tio_error *err) {
    uint32_t maxb = r->ctx->limits.max_name_bytes;
    if (strlen(key) > maxb)
        return zio_lerr(r, err, TIO_E_LIMIT,
                        "%s: metadata key of %zu bytes exceeds the limit of %u bytes", what,
                        strlen(key), (unsigned)maxb);
    if (!zj_text(&r->text, v)) return tio__nomem(err, ZIO_FMT);
    if (r->text.len - 1 > maxb)
        return zio_lerr(r, err, TIO_E_LIMIT,
                        "%s: metadata \"%.64s\": value of %zu bytes exceeds the limit of %u "
                        "bytes",
                        what, key, r->text.len - 1, (unsigned)maxb);
    /* keys of one JSON object: jansson rejected duplicates, and the kv was
     * empty (a tensor's own, or the container's before TENS.metadata) */
    if (tio__kv_append(kv, key, r->text.p, NULL) != TIO_OK) return tio__nomem(err, ZIO_FMT);
    return TIO_OK;
}

/* Parses order/ascend into element strides of the stored layout. Sets
 * *c_order when the data are row-major ascending already (ignoring dims of
 * size <= 1, whose placement does not matter). */
static int zio_layout(zio_reader *r, size_t i, json_t *e, size_t rank, const int64_t *dims,
                      uint64_t *stride, bool *asc, bool *c_order, tio_error *err) {
    json_t *order = json_object_get(e, "order");
    json_t *ascend = json_object_get(e, "ascend");
    /* perm[k] = the dimension that varies k-th fastest; C order by default */
    size_t small_perm[ZIO_SMALL_RANK];
    size_t *perm = small_perm;
    if (rank > ZIO_SMALL_RANK) {
        perm = malloc(rank * sizeof *perm); /* rank <= max_rank */
        if (!perm) return tio__nomem(err, ZIO_FMT);
    }
    int rc = TIO_OK;
    for (size_t k = 0; k < rank; k++) {
        perm[k] = rank - 1 - k;
        asc[k] = true;
    }
    if (order) {
        if (!json_is_array(order) || json_array_size(order) != rank) {
            rc = zio_lerr(r, err, TIO_E_CORRUPT,
                          "tensor %zu: \"order\" is %s with %zu entries, expected an array "
                          "of %zu (a permutation of the dimension indices)",
                          i, zj_type(order), json_is_array(order) ? json_array_size(order) : 0,
                          rank);
            goto done;
        }
        /* stride doubles as the "seen" marks while checking the permutation */
        for (size_t k = 0; k < rank; k++) stride[k] = 0;
        for (size_t k = 0; k < rank; k++) {
            json_t *v = json_array_get(order, k);
            json_int_t d = json_is_integer(v) ? json_integer_value(v) : -1;
            const char *why = !json_is_integer(v)                ? zj_type(v)
                              : (d < 0 || (uint64_t)d >= rank) ? "out of range"
                              : stride[(size_t)d]              ? "repeated"
                                                               : NULL;
            if (why) {
                rc = zio_lerr(r, err, TIO_E_CORRUPT,
                              "tensor %zu: \"order\" entry %zu is %s (expected a permutation "
                              "of 0..%zu)",
                              i, k, why, rank - 1);
                goto done;
            }
            stride[(size_t)d] = 1;
            perm[k] = (size_t)d;
        }
    }
    if (ascend) {
        if (!json_is_array(ascend) || json_array_size(ascend) != rank) {
            rc = zio_lerr(r, err, TIO_E_CORRUPT,
                          "tensor %zu: \"ascend\" is %s with %zu entries, expected an array "
                          "of %zu booleans",
                          i, zj_type(ascend),
                          json_is_array(ascend) ? json_array_size(ascend) : 0, rank);
            goto done;
        }
        for (size_t k = 0; k < rank; k++) {
            json_t *v = json_array_get(ascend, k);
            if (!json_is_boolean(v)) {
                rc = zio_lerr(r, err, TIO_E_CORRUPT,
                              "tensor %zu: \"ascend\" entry %zu is %s, expected a boolean", i,
                              k, zj_type(v));
                goto done;
            }
            asc[k] = json_is_true(v);
        }
    }
    /* Strides in elements (the products stay <= numel when no dim is 0; with
     * a 0 dim nothing is copied and wrapping is harmless). */
    uint64_t s = 1;
    for (size_t k = 0; k < rank; k++) {
        stride[perm[k]] = s;
        s *= (uint64_t)dims[perm[k]];
    }
    *c_order = true;
    uint64_t cs = 1;
    for (size_t d = rank; d-- > 0;) {
        if (dims[d] > 1 && (stride[d] != cs || !asc[d])) *c_order = false;
        cs *= (uint64_t)dims[d];
    }
done:
    if (perm != small_perm) free(perm);
    return rc;
}

/* Copies stored elements into row-major ascending order. */
static int zio_reorder(uint8_t *dst, const uint8_t *src, size_t word, size_t rank,
                       const int64_t *dims, const uint64_t *stride, const bool *asc,
                       uint64_t numel, tio_error *err) {
    size_t small_idx[ZIO_SMALL_RANK];
    size_t *idx = small_idx;
    if (rank > ZIO_SMALL_RANK) {
        idx = calloc(rank, sizeof *idx);
        if (!idx) return tio__nomem(err, ZIO_FMT);
    }
    uint64_t off = 0;
    for (size_t d = 0; d < rank; d++) {
        idx[d] = 0;
        if (!asc[d]) off += stride[d] * (uint64_t)(dims[d] - 1);
    }
    for (uint64_t e = 0; e < numel; e++) {
        memcpy(dst + (size_t)e * word, src + (size_t)off * word, word);
        for (size_t d = rank; d-- > 0;) {
            uint64_t n = (uint64_t)dims[d];
            if (idx[d] + 1 < n) {
                idx[d]++;
                off = asc[d] ? off + stride[d] : off - stride[d];
                break;
            }
            idx[d] = 0;
            off = asc[d] ? off - stride[d] * (n - 1) : off + stride[d] * (n - 1);
        }
    }
    if (idx != small_idx) free(idx);
    return TIO_OK;
}

static bool zio_known_key(const char *k) {
    static const char *const known[] = {"shape", "word",  "dtype",   "part",    "order",
                                        "ascend", "metadata", "packing", "pointer"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(k, known[i]) == 0) return true;
    return false;
}

/* One entry of TENS.tensors: checks it against its payload part and adds
 * the tensor (a view, or a row-major copy when order/ascend say otherwise). */
static int zio_tensor(zio_reader *r, size_t i, json_t *e, int64_t *dims, uint64_t *stride,
                      bool *asc, tio_error *err) {
    tio_read_ctx *ctx = r->ctx;
    char shp[96], esc[40];
    int rc;
    if (!json_is_object(e))
        return zio_lerr(r, err, TIO_E_CORRUPT, "tensor %zu: the entry is %s, expected an object",
                        i, zj_type(e));

    /* required: shape, word, dtype */
    json_t *shape = json_object_get(e, "shape");
    if (!shape)
        return zio_lerr(r, err, TIO_E_CORRUPT,
                        "tensor %zu: no \"shape\" (required: an array of sizes)", i);
    if (!json_is_array(shape))
        return zio_lerr(r, err, TIO_E_CORRUPT,
                        "tensor %zu: \"shape\" is %s, expected an array of sizes", i,
                        zj_type(shape));
    size_t rank = json_array_size(shape);
    if (rank > ctx->limits.max_rank)
        return zio_lerr(r, err, TIO_E_LIMIT, "tensor %zu: rank %zu exceeds the rank limit %u",
                        i, rank, (unsigned)ctx->limits.max_rank);
    for (size_t d = 0; d < rank; d++) {
        json_t *v = json_array_get(shape, d);
        if (!json_is_integer(v))
            return zio_lerr(r, err, TIO_E_CORRUPT,
                            "tensor %zu: \"shape\" entry %zu is %s, expected an integer >= 0",
                            i, d, zj_type(v));
        json_int_t x = json_integer_value(v);
        if (x < 0)
            return zio_lerr(r, err, TIO_E_CORRUPT,
                            "tensor %zu: dim %zu is %lld (expected a size >= 0)", i, d,
                            (long long)x);
        dims[d] = (int64_t)x;
    }
    tio__shape_str(dims, rank, shp, sizeof shp);
    json_t *word = json_object_get(e, "word");
    if (!word)
        return zio_lerr(r, err, TIO_E_CORRUPT,
                        "tensor %zu: no \"word\" (required: bytes per element)", i);
    if (!json_is_integer(word))
        return zio_lerr(r, err, TIO_E_CORRUPT,
                        "tensor %zu: \"word\" is %s, expected an integer (bytes per element)",
                        i, zj_type(word));
    json_t *dtype = json_object_get(e, "dtype");
    if (!dtype)
        return zio_lerr(r, err, TIO_E_CORRUPT,
                        "tensor %zu: no \"dtype\" (required: a kind such as \"f\")", i);
    if (!json_is_string(dtype))
        return zio_lerr(r, err, TIO_E_CORRUPT,
                        "tensor %zu: \"dtype\" is %s, expected a one-character kind string",
                        i, zj_type(dtype));
    json_int_t wv = json_integer_value(word);
    const char *ks = json_string_value(dtype);
    size_t kl = json_string_length(dtype);
    const struct zio_kind *kind = NULL;
    for (size_t k = 0; k < ZIO_NKINDS && kl == 1; k++)
        if (zio_kinds[k].kind == ks[0] && zio_kinds[k].word == wv) kind = &zio_kinds[k];
    if (!kind) {
        tio__escape((const uint8_t *)ks, kl, esc, sizeof esc);
        const char *why = "";
        if (kl == 1 && ks[0] == 'c') why = "; complex numbers of that size are not supported";
        else if (kl == 1 && ks[0] == '?') why = "; kind '?' (unknown) is not supported";
        else if (kl == 1 && ks[0] == 'f' && wv == 16)
            why = "; f16 is a long double, which is not supported";
        else if (kl != 1) why = "; the kind is one character, the size is in \"word\"";
        return zio_lerr(r, err, TIO_E_DTYPE,
                        "tensor %zu: dtype kind \"%s\" with word %lld is not supported "
                        "(expected f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1 c8 c16)%s",
                        i, esc, (long long)wv, why);
    }

    /* reserved */
    json_t *packing = json_object_get(e, "packing");
    if (packing && !(json_is_string(packing) && strcmp(json_string_value(packing), "dense") == 0)) {
        if (json_is_string(packing))
            tio__escape((const uint8_t *)json_string_value(packing),
                       json_string_length(packing), esc, sizeof esc);
        return zio_lerr(r, err, TIO_E_UNSUPPORTED,
                        "tensor %zu: packing %s%s%s is not supported (expected \"dense\")", i,
                        json_is_string(packing) ? "\"" : "",
                        json_is_string(packing) ? esc : zj_type(packing),
                        json_is_string(packing) ? "\"" : "");
    }
    json_t *pointer = json_object_get(e, "pointer");
    if (pointer && !json_is_null(pointer))
        return zio_lerr(r, err, TIO_E_UNSUPPORTED,
                        "tensor %zu: \"pointer\" (a memory location instead of a payload part) "
                        "is not supported (found %s, expected the key absent or null)",
                        i, zj_type(pointer));

    /* part */
    json_t *part = json_object_get(e, "part");
    size_t pi;
    if (part) {
        if (!json_is_integer(part))
            return zio_lerr(r, err, TIO_E_CORRUPT,
                            "tensor %zu: \"part\" is %s, expected a payload part index", i,
                            zj_type(part));
        json_int_t pv = json_integer_value(part);
        if (pv < 0 || (uint64_t)pv >= r->npayload)
            return zio_lerr(r, err, TIO_E_CORRUPT,
                            "tensor %zu: part %lld is out of range (expected 0..%lld: the "
                            "message has %zu payload parts)",
                            i, (long long)pv, (long long)r->npayload - 1, r->npayload);
        pi = (size_t)pv;
    } else {
        if (i >= r->npayload)
            return zio_lerr(r, err, TIO_E_CORRUPT,
                            "tensor %zu: no \"part\", so it is payload part %zu (its index), "
                            "but the message has only %zu payload parts",
                            i, i, r->npayload);
        pi = i;
    }
    if (r->used[pi] != SIZE_MAX)
        return zio_lerr(r, err, TIO_E_CORRUPT,
                        "tensor %zu: payload part %zu is already tensor %zu's (expected each "
                        "tensor in a part of its own)",
                        i, pi, r->used[pi]);
    r->used[pi] = i;

    bool c_order = true;
    rc = zio_layout(r, i, e, rank, dims, stride, asc, &c_order, err);
    if (rc) return rc;

    json_t *meta = json_object_get(e, "metadata");
    if (meta && !json_is_object(meta))
        return zio_lerr(r, err, TIO_E_CORRUPT,
                        "tensor %zu: \"metadata\" is %s, expected an object", i, zj_type(meta));

    /* size: prod(shape) x word == the part's size */
    uint64_t numel = 1, nbytes;
    for (size_t d = 0; d < rank; d++) {
        if (tio__mul64_ovf(numel, (uint64_t)dims[d], &numel) || numel > (uint64_t)INT64_MAX)
            return zio_lerr(r, err, TIO_E_OVERFLOW,
                            "tensor %zu: the element count of shape %s overflows int64", i,
                            shp);
    }
    if (tio__mul64_ovf(numel, kind->word, &nbytes) || nbytes > (uint64_t)INT64_MAX ||
        nbytes > SIZE_MAX)
        return zio_lerr(r, err, TIO_E_OVERFLOW,
                        "tensor %zu: the byte size of %s %s overflows", i,
                        tio_dtype_name(kind->dtype), shp);
    const tio_rpart *dp = &r->parts[ZIO_HEADER_PARTS + pi];
    if ((uint64_t)dp->size != nbytes)
        return tio__err(err, TIO_E_CORRUPT, ZIO_FMT, zio_at(dp, 0),
                        "part %zu: tensor %zu: payload part %zu holds %zu bytes, but %s %s "
                        "needs %llu elements of %u bytes (expected %llu, found %zu)",
                        pi + ZIO_HEADER_PARTS, i, pi, dp->size, tio_dtype_name(kind->dtype),
                        shp, (unsigned long long)numel, (unsigned)kind->word,
                        (unsigned long long)nbytes, dp->size);

    /* unknown keys: kept for writing back, reported */
    const char *key;
    json_t *v;
    json_object_foreach(e, key, v) {
        if (zio_known_key(key)) continue;
        tio__escape((const uint8_t *)key, strlen(key), esc, sizeof esc);
        rc = zio_lwarn(r, err,
                       "tensor %zu: unknown key \"%s\" (kept; the TENS document reserves the "
                       "entries of TENS.tensors)",
                       i, esc);
        if (rc) return rc;
    }

    /* name: metadata.name when a string ("" is the empty name) */
    json_t *mname = meta ? json_object_get(meta, "name") : NULL;
    const char *name = NULL;
    if (mname && json_is_string(mname)) {
        name = json_string_value(mname);
        if (json_string_length(mname) > ctx->limits.max_name_bytes)
            return zio_lerr(r, err, TIO_E_LIMIT,
                            "tensor %zu: name of %zu bytes exceeds the limit of %u bytes", i,
                            json_string_length(mname), (unsigned)ctx->limits.max_name_bytes);
    } else {
        mname = NULL;
    }

    tio_tensor_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.name = name;
    desc.dtype = kind->dtype;
    desc.rank = rank;
    desc.shape = dims;
    desc.layout = TIO_LAYOUT_DENSE;
    desc.data = dp->data;
    desc.nbytes = dp->size;
    rc = tio__container_add_view(ctx->c, &desc, zio_at(dp, 0), ZIO_FMT, err);
    if (rc) return rc;
    tio_tensor *t = ctx->c->tensors[ctx->c->count - 1];
    if (numel == 0) c_order = true; /* nothing stored: any layout describes it */
    if (!c_order) {
        uint8_t *buf = malloc((size_t)nbytes); /* = the part's size */
        if (!buf) return tio__nomem(err, ZIO_FMT);
        rc = zio_reorder(buf, dp->data, kind->word, rank, dims, stride, asc, numel, err);
        if (rc) {
            free(buf);
            return rc;
        }
        t->owned_data = buf;
        t->data = buf;
    }

    if (meta) {
        char what[40];
        snprintf(what, sizeof what, "tensor %zu", i);
        size_t nk;
        const char **keys = zj_sorted_keys(meta, &nk);
        if (!keys) return tio__nomem(err, ZIO_FMT);
        for (size_t k = 0; k < nk && rc == TIO_OK; k++) {
            key = keys[k];
            v = json_object_get(meta, key);
            if (v == mname) continue;
            if (json_is_object(v) || json_is_array(v)) {
                tio__escape((const uint8_t *)key, strlen(key), esc, sizeof esc);
                rc = zio_lwarn(r, err,
                               "tensor %zu: metadata \"%s\" is %s; the TENS document asks for a "
                               "flat object of scalars (kept as JSON text)",
                               i, esc, zj_type(v));
                if (rc) break;
            }
            tio_kv *kv = tio__tensor_meta(t);
            rc = kv ? zio_meta(r, kv, what, key, v, err) : tio__nomem(err, ZIO_FMT);
        }
        free(keys);
        if (rc) return rc;
    }

    zio_tstate *ts = &r->st->ts[r->st->nts++];
    ts->t = t;
    ts->part = pi;
    ts->part_explicit = part != NULL;
    ts->keep_layout = c_order;
    ts->entry = e;
    ts->meta = meta;
    return TIO_OK;
}

/* ------------------------------------------------ label fast path (read) */

/* Most labels are the plain kind tensio and ZIO write:
 * {"TENS":{"tensors":[{"dtype":"f","part":0,"shape":[256],"word":4},...]}}
 * with only those keys, and "metadata":{"name":"..."} for a named tensor.
 * zio_label_fast reads such a label without jansson (which costs more than
 * the rest of receiving a small message). It accepts a subset of what the
 * general path accepts (keys and names without escapes, names of printable
 * ASCII, integers in plain decimal, no metadata but a name, no other keys,
 * tensors of rank <= ZIO_FAST_RANK, everything valid; its entries on the
 * stack for ZIO_FAST_TENSORS tensors, on the heap beyond: a 10,000-tensor
 * .zmsg reads its label ~10x faster than jansson builds and frees a tree),
 * and builds the same container; the native state differs only in holding no
 * parsed JSON, which the writer reads as "no other keys". Anything else,
 * including every error, goes to the general path, which then reports it. */
#define ZIO_FAST_TENSORS 8u
#define ZIO_FAST_RANK 8u
#define ZIO_FAST_NO (-1) /* not a plain label: use the general path */

typedef struct zio_scan {
    const uint8_t *p, *end;
} zio_scan;

typedef struct zio_fent {
    const struct zio_kind *kind;
    size_t rank;
    int64_t dims[ZIO_FAST_RANK];
    bool has_part, has_shape, has_word, has_dtype, has_meta;
    uint64_t part, word;
    uint8_t dtype;
    const uint8_t *name; /* metadata.name, in the label; not NUL-terminated */
    size_t name_len;
    size_t pi; /* its payload part */
} zio_fent;

static void zs_ws(zio_scan *s) {
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static bool zs_ch(zio_scan *s, char c) {
    zs_ws(s);
    if (s->p < s->end && *s->p == (uint8_t)c) {
        s->p++;
        return true;
    }
    return false;
}

/* A string of printable ASCII without escapes: its bytes [*out, *out + *len). */
static bool zs_str(zio_scan *s, const uint8_t **out, size_t *len) {
    if (!zs_ch(s, '"')) return false;
    const uint8_t *q = s->p;
    while (s->p < s->end && *s->p != '"') {
        if (*s->p < 0x20 || *s->p > 0x7e || *s->p == '\\') return false;
        s->p++;
    }
    if (s->p >= s->end) return false;
    *out = q;
    *len = (size_t)(s->p - q);
    s->p++;
    return true;
}

/* "key": */
static bool zs_key(zio_scan *s, const char *key) {
    const uint8_t *k;
    size_t n;
    return zs_str(s, &k, &n) && n == strlen(key) && memcmp(k, key, n) == 0 && zs_ch(s, ':');
}

/* An integer >= 0 that jansson reads as an integer: 0 or [1-9][0-9]*, at
 * most 18 digits (so it fits int64), not followed by a fraction or exponent. */
static bool zs_uint(zio_scan *s, uint64_t *v) {
    zs_ws(s);
    const uint8_t *q = s->p;
    uint64_t x = 0;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9') {
        if (s->p - q >= 18) return false;
        x = x * 10 + (uint64_t)(*s->p - '0');
        s->p++;
    }
    size_t nd = (size_t)(s->p - q);
    if (nd == 0 || (nd > 1 && *q == '0')) return false;
    if (s->p < s->end && (*s->p == '.' || *s->p == 'e' || *s->p == 'E')) return false;
    *v = x;
    return true;
}

/* One entry of TENS.tensors with the keys dtype, word, shape and part only. */
static bool zio_fast_entry(zio_scan *s, zio_fent *e) {
    memset(e, 0, sizeof *e);
    if (!zs_ch(s, '{')) return false;
    do {
        const uint8_t *k;
        size_t n;
        if (!zs_str(s, &k, &n) || !zs_ch(s, ':')) return false;
        if (n == 5 && memcmp(k, "dtype", 5) == 0 && !e->has_dtype) {
            const uint8_t *v;
            size_t vl;
            if (!zs_str(s, &v, &vl) || vl != 1) return false;
            e->dtype = v[0];
            e->has_dtype = true;
        } else if (n == 4 && memcmp(k, "word", 4) == 0 && !e->has_word) {
            if (!zs_uint(s, &e->word)) return false;
            e->has_word = true;
        } else if (n == 4 && memcmp(k, "part", 4) == 0 && !e->has_part) {
            if (!zs_uint(s, &e->part)) return false;
            e->has_part = true;
        } else if (n == 8 && memcmp(k, "metadata", 8) == 0 && !e->has_meta) {
            /* {"name":"..."} and nothing else; the empty name takes the slow path */
            if (!zs_ch(s, '{') || !zs_key(s, "name") || !zs_str(s, &e->name, &e->name_len) ||
                e->name_len == 0 || !zs_ch(s, '}'))
                return false;
            e->has_meta = true;
        } else if (n == 5 && memcmp(k, "shape", 5) == 0 && !e->has_shape) {
            if (!zs_ch(s, '[')) return false;
            if (!zs_ch(s, ']')) {
                do {
                    uint64_t d;
                    if (e->rank == ZIO_FAST_RANK || !zs_uint(s, &d)) return false;
                    e->dims[e->rank++] = (int64_t)d;
                } while (zs_ch(s, ','));
                if (!zs_ch(s, ']')) return false;
            }
            e->has_shape = true;
        } else {
            return false; /* another key, or a repeated one */
        }
    } while (zs_ch(s, ','));
    return zs_ch(s, '}') && e->has_dtype && e->has_word && e->has_shape;
}

/* TIO_OK when the label was read here, ZIO_FAST_NO for the general path, or
 * an allocation failure. */
/* The entries of zio_label_fast: a few on the stack, more on the heap (at
 * most one per payload part: a label listing more is not plain). */
typedef struct zio_fents {
    zio_fent small[ZIO_FAST_TENSORS];
    zio_fent *e;
    size_t n, cap;
} zio_fents;

static void zio_fents_free(zio_fents *f) {
    if (f->e != f->small) free(f->e);
}

static int zio_label_fast_in(zio_reader *r, const uint8_t *label, size_t llen, zio_fents *f,
                             tio_error *err);

static int zio_label_fast(zio_reader *r, const uint8_t *label, size_t llen, tio_error *err) {
    zio_fents f;
    f.e = f.small;
    f.n = 0;
    f.cap = ZIO_FAST_TENSORS;
    int rc = zio_label_fast_in(r, label, llen, &f, err);
    zio_fents_free(&f);
    return rc;
}

static int zio_label_fast_in(zio_reader *r, const uint8_t *label, size_t llen, zio_fents *f,
                             tio_error *err) {
    tio_read_ctx *ctx = r->ctx;
    size_t nt = 0;
    zio_scan s = {label, label + llen};
    /* depth: label 1, TENS 2, tensors 3, entry 4, shape 5, dims 6 */
    if (ctx->limits.max_depth < 6 || (ctx->flags & TIO__OPEN_GENERAL_ONLY)) return ZIO_FAST_NO;
    if (!zs_ch(&s, '{') || !zs_key(&s, "TENS") || !zs_ch(&s, '{') ||
        !zs_key(&s, "tensors") || !zs_ch(&s, '['))
        return ZIO_FAST_NO;
    do {
        if (nt == r->npayload || (uint64_t)nt == ctx->limits.max_tensors) return ZIO_FAST_NO;
        if (nt == f->cap) {
            size_t cap = f->cap * 2 < r->npayload ? f->cap * 2 : r->npayload;
            zio_fent *e = f->e == f->small ? malloc(cap * sizeof *e)
                                           : realloc(f->e, cap * sizeof *e);
            if (!e) return tio__nomem(err, ZIO_FMT);
            if (f->e == f->small) memcpy(e, f->small, sizeof f->small);
            f->e = e;
            f->cap = cap;
        }
        if (!zio_fast_entry(&s, &f->e[nt])) return ZIO_FAST_NO;
        nt++;
    } while (zs_ch(&s, ','));
    if (!zs_ch(&s, ']') || !zs_ch(&s, '}') || !zs_ch(&s, '}')) return ZIO_FAST_NO;
    zs_ws(&s);
    if (s.p != s.end) return ZIO_FAST_NO;
    zio_fent *ent = f->e;
    f->n = nt;

    /* everything the general path checks, without side effects yet (r->used
     * marks the parts taken, and is restored when the path is not taken) */
    size_t i = 0;
    for (; i < nt; i++) {
        zio_fent *e = &ent[i];
        if (e->rank > ctx->limits.max_rank || e->name_len > ctx->limits.max_name_bytes) break;
        for (size_t k = 0; k < ZIO_NKINDS && !e->kind; k++)
            if ((uint8_t)zio_kinds[k].kind == e->dtype && zio_kinds[k].word == e->word)
                e->kind = &zio_kinds[k];
        if (!e->kind) break;
        uint64_t pi = e->has_part ? e->part : i;
        if (pi >= r->npayload || r->used[pi] != SIZE_MAX) break;
        uint64_t numel = 1, nbytes;
        int ovf = 0;
        for (size_t d = 0; d < e->rank && !ovf; d++)
            ovf = tio__mul64_ovf(numel, (uint64_t)e->dims[d], &numel) ||
                  numel > (uint64_t)INT64_MAX;
        if (ovf || tio__mul64_ovf(numel, e->kind->word, &nbytes) ||
            nbytes > (uint64_t)INT64_MAX ||
            (uint64_t)r->parts[ZIO_HEADER_PARTS + pi].size != nbytes)
            break;
        e->pi = (size_t)pi;
        r->used[pi] = i;
    }
    if (i < nt) {
        for (size_t j = 0; j < i; j++) r->used[ent[j].pi] = SIZE_MAX;
        return ZIO_FAST_NO;
    }

    /* the tensors, as zio_tensor adds them */
    zio_native *st = r->st;
    st->tensors_present = true;
    st->ts = calloc(nt, sizeof *st->ts);
    if (!st->ts) return tio__nomem(err, ZIO_FMT);
    for (i = 0; i < nt; i++) {
        const zio_fent *e = &ent[i];
        const tio_rpart *dp = &r->parts[ZIO_HEADER_PARTS + e->pi];
        tio_tensor_desc desc;
        memset(&desc, 0, sizeof desc);
        char small[128], *name = NULL; /* the name, NUL-terminated */
        if (e->name_len) {
            name = e->name_len < sizeof small ? small : malloc(e->name_len + 1);
            if (!name) return tio__nomem(err, ZIO_FMT);
            memcpy(name, e->name, e->name_len);
            name[e->name_len] = '\0';
        }
        desc.name = name;
        desc.dtype = e->kind->dtype;
        desc.rank = e->rank;
        desc.shape = e->dims;
        desc.layout = TIO_LAYOUT_DENSE;
        desc.data = dp->data;
        desc.nbytes = dp->size;
        int rc = tio__container_add_view(ctx->c, &desc, zio_at(dp, 0), ZIO_FMT, err);
        if (name != small) free(name);
        if (rc) return rc;
        zio_tstate *ts = &st->ts[st->nts++];
        ts->t = ctx->c->tensors[ctx->c->count - 1];
        ts->part = e->pi;
        ts->part_explicit = e->has_part;
        ts->keep_layout = true;
        ts->entry = NULL; /* no keys but the standard ones */
        ts->meta = NULL;
    }
    return TIO_OK;
}

/* The label: TENS.tensors and TENS.metadata. */
static int zio_label(zio_reader *r, const uint8_t *label, size_t llen, tio_error *err) {
    tio_read_ctx *ctx = r->ctx;
    zio_native *st = r->st;
    if (llen == 0) {
        st->label_empty = true;
        return TIO_OK;
    }
    if (llen > ctx->limits.max_header_bytes)
        return zio_lerr(r, err, TIO_E_LIMIT,
                        "the label is %zu bytes, more than the header limit of %llu bytes",
                        llen, (unsigned long long)ctx->limits.max_header_bytes);
    int frc = zio_label_fast(r, label, llen, err);
    if (frc != ZIO_FAST_NO) return frc;
    if (ctx->flags & TIO__OPEN_FAST_ONLY)
        return zio_lerr(r, err, TIO_E_UNSUPPORTED, "not a plain label (fast path only)");
    json_error_t je;
    json_t *root = json_loadb((const char *)label, llen, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
                              &je);
    if (!root) {
        enum json_error_code jc = json_error_code(&je);
        int code = TIO_E_CORRUPT;
        const char *why = "the label is not valid JSON";
        if (jc == json_error_duplicate_key) {
            why = "the label has a duplicate key";
        } else if (jc == json_error_numeric_overflow) {
            code = TIO_E_UNSUPPORTED;
            why = "the label holds a number jansson cannot represent (integers must fit int64)";
        } else if (jc == json_error_null_character) {
            code = TIO_E_UNSUPPORTED;
            why = "the label holds a \\u0000 in a string, which is not supported";
        } else if (jc == json_error_out_of_memory) {
            return tio__nomem(err, ZIO_FMT);
        }
        int64_t at = r->label_off;
        if (at >= 0 && je.position >= 0) at += je.position;
        return tio__err(err, code, ZIO_FMT, at, "part 0: label byte %d: %s (%s)", je.position,
                        why, je.text);
    }
    st->label = root;
    if (!json_is_object(root))
        return zio_lerr(r, err, TIO_E_CORRUPT, "the label is %s, expected a JSON object",
                        zj_type(root));
    if (!zj_depth_ok(root, 1, ctx->limits.max_depth))
        return zio_lerr(r, err, TIO_E_LIMIT, "the label nests deeper than the limit of %u",
                        (unsigned)ctx->limits.max_depth);
    json_t *tens = json_object_get(root, "TENS");
    if (!tens) return TIO_OK; /* another form: no tensors, everything kept */
    if (!json_is_object(tens))
        return zio_lerr(r, err, TIO_E_CORRUPT, "\"TENS\" is %s, expected an object",
                        zj_type(tens));
    st->tens = tens;
    json_t *tmeta = json_object_get(tens, "metadata");
    if (tmeta && !json_is_object(tmeta))
        return zio_lerr(r, err, TIO_E_CORRUPT, "TENS.metadata is %s, expected an object",
                        zj_type(tmeta));
    json_t *tensors = json_object_get(tens, "tensors");
    if (tensors && !json_is_array(tensors))
        return zio_lerr(r, err, TIO_E_CORRUPT, "TENS.tensors is %s, expected an array",
                        zj_type(tensors));
    st->tensors_present = tensors != NULL;
    size_t nt = tensors ? json_array_size(tensors) : 0;
    if ((uint64_t)nt > ctx->limits.max_tensors)
        return zio_lerr(r, err, TIO_E_LIMIT,
                        "TENS.tensors has %zu entries, more than the limit of %llu", nt,
                        (unsigned long long)ctx->limits.max_tensors);
    if (nt > r->npayload)
        return zio_lerr(r, err, TIO_E_CORRUPT,
                        "TENS.tensors has %zu entries but the message only %zu payload parts "
                        "(expected one part per tensor)",
                        nt, r->npayload);
    int rc = TIO_OK;
    if (nt) {
        /* scratch for the largest rank present (and allowed): bounded by the label */
        size_t maxr = 0;
        for (size_t i = 0; i < nt; i++) {
            json_t *sh = json_object_get(json_array_get(tensors, i), "shape");
            if (json_is_array(sh) && json_array_size(sh) > maxr) maxr = json_array_size(sh);
        }
        if (maxr > ctx->limits.max_rank) maxr = ctx->limits.max_rank;
        maxr++;
        /* nt <= npayload <= the parts given */
        st->ts = calloc(nt, sizeof *st->ts);
        int64_t *dims = malloc(maxr * sizeof *dims);
        uint64_t *stride = malloc(maxr * sizeof *stride);
        bool *asc = malloc(maxr * sizeof *asc);
        if (!st->ts || !dims || !stride || !asc) rc = tio__nomem(err, ZIO_FMT);
        for (size_t i = 0; i < nt && rc == TIO_OK; i++)
            rc = zio_tensor(r, i, json_array_get(tensors, i), dims, stride, asc, err);
        free(dims);
        free(stride);
        free(asc);
        if (rc) return rc;
    }
    if (tmeta) {
        size_t nk;
        const char **keys = zj_sorted_keys(tmeta, &nk);
        if (!keys) return tio__nomem(err, ZIO_FMT);
        for (size_t k = 0; k < nk && rc == TIO_OK; k++)
            rc = zio_meta(r, &ctx->c->meta, "TENS", keys[k], json_object_get(tmeta, keys[k]),
                          err);
        free(keys);
        if (rc) return rc;
    }
    return TIO_OK;
}

/* Decodes a message from its parts (frames, or the parts of a .zmsg). */
static int zio_decode(tio_read_ctx *ctx, const tio_rpart *parts, size_t n, tio_error *err) {
    tio_container *c = ctx->c;
    char esc[64];
    int rc;
    if (n < ZIO_HEADER_PARTS)
        return tio__err(err, TIO_E_TRUNCATED, ZIO_FMT, n ? zio_at(&parts[0], parts[0].size) : 0,
                        "the message has %zu part%s, expected at least 2 (prefix, coordinates)",
                        n, n == 1 ? "" : "s");
    const tio_rpart *p0 = &parts[0], *p1 = &parts[1];
    if (p0->size < 3 || memcmp(p0->data, "ZIO", 3) != 0) {
        size_t k = p0->size < 3 ? p0->size : 3;
        if (memcmp(p0->data, "ZIO", k) != 0) {
            tio__escape(p0->data, p0->size < 8 ? p0->size : 8, esc, sizeof esc);
            return tio__err(err, TIO_E_MAGIC, ZIO_FMT, zio_at(p0, 0),
                            "part 0 (prefix): expected \"ZIO\", found \"%s\"", esc);
        }
    }
    if (p0->size < ZIO_PREFIX_LEN)
        return tio__err(err, TIO_E_CORRUPT, ZIO_FMT, zio_at(p0, 0),
                        "part 0 (prefix) is %zu bytes, expected at least 8 (\"ZIO\", a level "
                        "digit, a 4-byte form)",
                        p0->size);
    uint8_t lv = p0->data[3];
    if (lv < '0' || lv > '0' + ZIO_MAX_LEVEL) {
        tio__escape(&lv, 1, esc, sizeof esc);
        return tio__err(err, TIO_E_CORRUPT, ZIO_FMT, zio_at(p0, 3),
                        "part 0 (prefix): level \"%s\" (0x%02x) is not a level digit (expected "
                        "'0'..'8')",
                        esc, (unsigned)lv);
    }
    if (p1->size != ZIO_COORD_LEN)
        return tio__err(err, TIO_E_CORRUPT, ZIO_FMT, zio_at(p1, 0),
                        "part 1 (coordinates) is %zu bytes, expected 24 (origin, granule, seqno "
                        "as u64)",
                        p1->size);

    zio_native *st = calloc(1, sizeof *st);
    if (!st) return tio__nomem(err, ZIO_FMT);
    c->native_format = ZIO_FMT;
    c->native = st;
    c->native_free = zio_native_free;
    st->level = (unsigned)(lv - '0');
    memcpy(st->form, p0->data + 4, 4);
    for (int k = 0; k < 3; k++) st->coord[k] = tio__ld64(p1->data + 8 * k);
    st->npayload = n - ZIO_HEADER_PARTS;

    bool printable = true;
    for (int k = 0; k < 4; k++)
        if (st->form[k] < 0x20 || st->form[k] > 0x7e) printable = false;
    if (!printable) {
        tio__escape((const uint8_t *)st->form, 4, esc, sizeof esc);
        rc = tio__warn(ctx, ZIO_FMT, zio_at(p0, 4), err,
                       "part 0 (prefix): form \"%s\" is not printable ASCII", esc);
        if (rc) return rc;
    }

    zio_reader r;
    size_t used_small[ZIO_FAST_TENSORS];
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.parts = parts;
    r.npayload = st->npayload;
    r.st = st;
    r.label_off = zio_at(p0, ZIO_PREFIX_LEN);
    if (r.npayload) {
        /* bounded by the parts given; on the stack for a few */
        r.used = r.npayload <= ZIO_FAST_TENSORS ? used_small : malloc(r.npayload * sizeof *r.used);
        if (!r.used) return tio__nomem(err, ZIO_FMT);
        for (size_t k = 0; k < r.npayload; k++) r.used[k] = SIZE_MAX;
    }
    rc = zio_label(&r, p0->data + ZIO_PREFIX_LEN, p0->size - ZIO_PREFIX_LEN, err);

    /* payload parts no tensor uses: kept as views */
    size_t nup = 0;
    for (size_t k = 0; rc == TIO_OK && k < r.npayload; k++) nup += r.used[k] == SIZE_MAX;
    if (rc == TIO_OK && nup) {
        st->up = malloc(nup * sizeof *st->up);
        if (!st->up) rc = tio__nomem(err, ZIO_FMT);
        for (size_t k = 0; rc == TIO_OK && k < r.npayload; k++) {
            if (r.used[k] != SIZE_MAX) continue;
            zio_upart *u = &st->up[st->nup++];
            u->index = k;
            u->data = parts[ZIO_HEADER_PARTS + k].data;
            u->size = parts[ZIO_HEADER_PARTS + k].size;
        }
    }
    if (r.used != used_small) free(r.used);
    free(r.text.p);
    if (rc) return rc;

    /* props */
    char form[40];
    tio__escape((const uint8_t *)st->form, 4, form, sizeof form);
    size_t fl = strlen(form);
    while (fl && form[fl - 1] == ' ') form[--fl] = '\0';
    char level[2] = {(char)lv, '\0'};
    rc = zio_prop(c, "level", level, err);
    if (!rc) rc = zio_prop(c, "form", form, err);
    if (!rc) rc = zio_prop_u64(c, "origin", st->coord[0], err);
    if (!rc) rc = zio_prop_u64(c, "granule", st->coord[1], err);
    if (!rc) rc = zio_prop_u64(c, "seqno", st->coord[2], err);
    if (!rc) rc = zio_prop_u64(c, "payload_parts", st->npayload, err);
    if (!rc) rc = zio_prop_u64(c, "label_bytes", p0->size - ZIO_PREFIX_LEN, err);
    return rc;
}

static int zio_read_parts(tio_read_ctx *ctx, const tio_rpart *parts, size_t n, tio_error *err) {
    return zio_decode(ctx, parts, n, err);
}

/* Reads the size field of the part at the cursor (not at the end): the
 * size bytes come through the cursor's header window (a .zmsg of 10,000
 * tensors has 20,000 size fields scattered over the file). */
static int zio_part_size(tio_read_ctx *ctx, tio_cursor *cur, size_t index, size_t *hdr,
                         size_t *len, tio_error *err) {
    size_t pos = cur->pos, left = tio__cursor_left(cur);
    const uint8_t *d;
    int rc = tio__cursor_head(cur, left < 5 ? 1 : 5, &d, "part size", err);
    if (rc) return rc;
    if (d[0] != ZIO_BIG_SIZE) {
        *hdr = 1;
        *len = d[0];
    } else {
        if (left < 5)
            return tio__err(err, TIO_E_TRUNCATED, ZIO_FMT, (int64_t)pos,
                            "part %zu: the data end inside its size field (0xff and %zu of the "
                            "4 bytes of a big-endian size)",
                            index, left - 1);
        *hdr = 5;
        *len = ((size_t)d[1] << 24) | ((size_t)d[2] << 16) | ((size_t)d[3] << 8) | d[4];
        if (*len < ZIO_BIG_SIZE) {
            rc = tio__warn(ctx, ZIO_FMT, (int64_t)pos, err,
                           "part %zu: size %zu written in the 5-byte form (zmsg_encode "
                           "uses one byte for sizes below 255; re-encoding changes the "
                           "bytes)",
                           index, *len);
            if (rc) return rc;
        }
    }
    if (*len > left - *hdr)
        return tio__err(err, TIO_E_TRUNCATED, ZIO_FMT, (int64_t)pos,
                        "part %zu: size %zu runs past the end of the data (expected at most "
                        "%zu, the bytes left)",
                        index, *len, left - *hdr);
    /* after the size field (the 5 bytes read may reach into a short part) */
    return tio__cursor_seek(cur, pos + *hdr + *len, "part", err);
}

/* A .zmsg buffer: split into parts (one pass; the array doubles, bounded by
 * the parts present), then decoded as a message. */
static int zio_read(tio_read_ctx *ctx, tio_error *err) {
    uint64_t max_parts = ctx->limits.max_tensors;
    if (max_parts > (UINT64_MAX - 2) / 2) max_parts = UINT64_MAX;
    else max_parts = max_parts * 2 + 2;
    size_t count = 0, cap = 0, hdr = 0, len = 0;
    tio_rpart *parts = NULL;
    tio_cursor cur;
    tio__cursor_init(&cur, ctx->data, ctx->size, ZIO_FMT);
    tio__cursor_use_head(&cur, ctx);
    int rc = TIO_OK;
    while (rc == TIO_OK && tio__cursor_left(&cur) > 0) {
        size_t pos = cur.pos;
        if ((uint64_t)count >= max_parts) {
            rc = tio__err(err, TIO_E_LIMIT, ZIO_FMT, (int64_t)pos,
                          "part %zu: more parts than the limit of %llu (2 per tensor + 2)",
                          count, (unsigned long long)max_parts);
            break;
        }
        rc = zio_part_size(ctx, &cur, count, &hdr, &len, err);
        if (rc) break;
        if (count == cap) {
            size_t ncap = cap ? cap * 2 : 64; /* a part has >= 1 byte: ncap <= 2 * size */
            tio_rpart *np = realloc(parts, ncap * sizeof *np);
            if (!np) {
                rc = tio__nomem(err, ZIO_FMT);
                break;
            }
            parts = np;
            cap = ncap;
        }
        parts[count].data = ctx->data + pos + hdr;
        parts[count].size = len;
        parts[count].offset = (int64_t)(pos + hdr);
        count++;
    }
    if (rc == TIO_OK) rc = zio_decode(ctx, parts, count, err);
    free(parts);
    return rc;
}

/* ------------------------------------------------------------------ write */

static const zio_native *zio_native_of(const tio_container *c) {
    if (c->native && c->native_format && strcmp(c->native_format, ZIO_FMT) == 0)
        return c->native;
    return NULL;
}

/* Header values: the native state's (or TENS, level 0, coordinates 0),
 * overridden by the format options. */
typedef struct zio_head {
    unsigned level;
    char form[4];
    uint64_t coord[3];
} zio_head;

static int zio_parse_u64(const char *s, uint64_t *out) {
    uint64_t v = 0;
    if (!*s) return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        if (tio__mul64_ovf(v, 10, &v) || tio__add64_ovf(v, (uint64_t)(*s - '0'), &v)) return -1;
    }
    *out = v;
    return 0;
}

static int zio_head_of(const tio_write_plan *p, zio_head *h, tio_error *err) {
    const zio_native *nat = zio_native_of(tio__plan_container(p));
    char esc[64];
    if (nat) {
        h->level = nat->level;
        memcpy(h->form, nat->form, 4);
        memcpy(h->coord, nat->coord, sizeof h->coord);
    } else {
        h->level = 0;
        memcpy(h->form, zio_default_form, 4);
        memset(h->coord, 0, sizeof h->coord);
    }
    const char *v = tio__plan_option(p, "level");
    if (v) {
        uint64_t x;
        if (zio_parse_u64(v, &x) || x > ZIO_MAX_LEVEL) {
            tio__escape((const uint8_t *)v, strlen(v), esc, sizeof esc);
            return tio__err(err, TIO_E_ARGUMENT, ZIO_FMT, -1,
                            "format option level=\"%s\" is not a level (expected 0..8)", esc);
        }
        h->level = (unsigned)x;
    }
    v = tio__plan_option(p, "form");
    if (v) {
        size_t n = strlen(v);
        bool ok = n >= 1 && n <= 4;
        for (size_t i = 0; ok && i < n; i++) ok = v[i] >= 0x20 && v[i] <= 0x7e;
        if (!ok) {
            tio__escape((const uint8_t *)v, n, esc, sizeof esc);
            return tio__err(err, TIO_E_ARGUMENT, ZIO_FMT, -1,
                            "format option form=\"%s\" is not a form (expected 1..4 printable "
                            "ASCII characters)",
                            esc);
        }
        memset(h->form, ' ', 4);
        memcpy(h->form, v, n);
    }
    static const char *const ckeys[3] = {"origin", "granule", "seqno"};
    for (int k = 0; k < 3; k++) {
        v = tio__plan_option(p, ckeys[k]);
        if (!v) continue;
        if (zio_parse_u64(v, &h->coord[k])) {
            tio__escape((const uint8_t *)v, strlen(v), esc, sizeof esc);
            return tio__err(err, TIO_E_ARGUMENT, ZIO_FMT, -1,
                            "format option %s=\"%s\" is not a uint64 (expected decimal digits, "
                            "0..18446744073709551615)",
                            ckeys[k], esc);
        }
    }
    return TIO_OK;
}

/* The native state of plan tensor i, or NULL. Containers only append
 * tensors, so tensor i read from a message is still tensor i. */
static const zio_tstate *zio_tstate_of(const zio_native *nat, const tio_wtensor *w, size_t i) {
    if (!nat || i >= nat->nts || nat->ts[i].t != w->src) return NULL;
    return &nat->ts[i];
}

/* Whether a tensor's name and its metadata entry "name" differ: both go to
 * metadata.name. */
static bool zio_name_clash(const tio_wtensor *w) {
    const char *mn = tio__kv_get(tio__tensor_meta_view(w->src), "name");
    return w->name && mn && strcmp(mn, w->name) != 0;
}

static int zio_check(const tio_write_plan *p, tio_error *err) {
    zio_head h;
    int rc = zio_head_of(p, &h, err);
    if (rc) return rc;
    const tio_container *c = tio__plan_container(p);
    for (size_t i = 0; i < c->meta.count; i++) {
        const char *k = c->meta.keys[i], *v = c->meta.values[i];
        if (!zio_utf8_ok(k, strlen(k)) || !zio_utf8_ok(v, strlen(v)))
            return tio__err(err, TIO_E_UNSUPPORTED, ZIO_FMT, -1,
                            "container metadata entry %zu is not valid UTF-8 (a JSON label "
                            "holds UTF-8 text only)",
                            i);
    }
    size_t n = tio__plan_count(p);
    for (size_t i = 0; i < n; i++) {
        const tio_wtensor *w = tio__plan_tensor(p, i);
        if (w->layout != TIO_LAYOUT_DENSE)
            return tio__err(err, TIO_E_LOSSY, ZIO_FMT, -1,
                            "tensor %zu: TENS stores dense arrays only (use TIO_SAVE_DENSIFY)",
                            i);
        if (!zio_kind_of(w->dtype))
            return tio__err(err, TIO_E_LOSSY, ZIO_FMT, -1,
                            "tensor %zu: dtype %s has no TENS kind", i,
                            tio_dtype_name(w->dtype) ? tio_dtype_name(w->dtype) : "?");
        if (w->name && !zio_utf8_ok(w->name, strlen(w->name)))
            return tio__err(err, TIO_E_UNSUPPORTED, ZIO_FMT, -1,
                            "tensor %zu: the name is not valid UTF-8 (it is written as "
                            "metadata.name in the JSON label)",
                            i);
        const tio_kv *m = tio__tensor_meta_view(w->src);
        for (size_t k = 0; k < m->count; k++) {
            if (!zio_utf8_ok(m->keys[k], strlen(m->keys[k])) ||
                !zio_utf8_ok(m->values[k], strlen(m->values[k])))
                return tio__err(err, TIO_E_UNSUPPORTED, ZIO_FMT, -1,
                                "tensor %zu: metadata entry %zu is not valid UTF-8 (a JSON "
                                "label holds UTF-8 text only)",
                                i, k);
        }
        const char *mn = tio__kv_get(m, "name");
        if (zio_name_clash(w) &&
            !(tio__plan_flags(p) & (TIO_SAVE_DROP_NAMES | TIO_SAVE_DROP_METADATA)))
            return tio__err(err, TIO_E_LOSSY, ZIO_FMT, -1,
                            "tensor %zu: it is named '%.64s' and also has a metadata entry "
                            "\"name\" = '%.64s'; TENS keeps the name in metadata.name, so one "
                            "would be lost (TIO_SAVE_DROP_NAMES writes the metadata entry, "
                            "TIO_SAVE_DROP_METADATA the name)",
                            i, w->name, mn);
    }
    return TIO_OK;
}

/* Where each payload part comes from. */
typedef struct zio_slot {
    size_t tensor;        /* plan tensor index, or SIZE_MAX for a kept part */
    const zio_upart *up;
} zio_slot;

typedef struct zio_out {
    zbuf prefix;          /* part 0 */
    uint8_t coord[ZIO_COORD_LEN];
    size_t npayload;
    zio_slot *slots;
} zio_out;

static void zio_out_free(zio_out *o) {
    free(o->prefix.p);
    free(o->slots);
    memset(o, 0, sizeof *o);
}

/* Sets obj[key] to a copy of v, a value of the container's native label.
 * Not a reference (json_object_set): the container may be shared read-only
 * by threads writing it at once, and jansson reads a value's reference count
 * without an atomic before updating it (json_incref, json_decref): a data
 * race between the writers. -1 when out of memory. */
static int zj_set_copy(json_t *obj, const char *key, json_t *v) {
    return json_object_set_new(obj, key, json_deep_copy(v));
}

/* A metadata value to write: (a copy of) the original typed value when it
 * still reads as `value`, else the string. NULL when out of memory. */
static json_t *zio_meta_value(json_t *orig, const char *key, const char *value, zbuf *scratch) {
    json_t *ov = orig ? json_object_get(orig, key) : NULL;
    if (ov && zj_text(scratch, ov) && strcmp(scratch->p, value) == 0) return json_deep_copy(ov);
    return json_string(value);
}

static json_t *zio_meta_object(const tio_kv *kv, const char *name, json_t *orig, zbuf *scratch) {
    json_t *o = json_object();
    if (!o) return NULL;
    for (size_t k = 0; k < kv->count; k++) {
        if (name && strcmp(kv->keys[k], "name") == 0) continue; /* the name wins */
        if (json_object_set_new(o, kv->keys[k],
                                zio_meta_value(orig, kv->keys[k], kv->values[k], scratch))) {
            json_decref(o);
            return NULL;
        }
    }
    if (name && json_object_set_new(o, "name", json_string(name))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *zio_entry(const tio_wtensor *w, const zio_tstate *ts, size_t part,
                         bool part_explicit, unsigned flags, zbuf *scratch) {
    /* a clash allowed by the flags: DROP_NAMES writes the metadata entry,
     * DROP_METADATA (alone) the name */
    const char *name = w->name;
    if (zio_name_clash(w) && (flags & TIO_SAVE_DROP_NAMES)) name = NULL;
    json_t *e = json_object();
    if (!e) return NULL;
    bool ok = true;
    if (ts && ts->entry) { /* NULL when read by zio_label_fast: no other keys */
        const char *key;
        json_t *v;
        json_object_foreach(ts->entry, key, v) {
            bool layout = strcmp(key, "order") == 0 || strcmp(key, "ascend") == 0;
            bool std = layout || strcmp(key, "shape") == 0 || strcmp(key, "word") == 0 ||
                       strcmp(key, "dtype") == 0 || strcmp(key, "part") == 0 ||
                       strcmp(key, "metadata") == 0;
            if (!std || (layout && ts->keep_layout))
                ok = ok && zj_set_copy(e, key, v) == 0;
        }
    }
    const struct zio_kind *kind = zio_kind_of(w->dtype);
    char ks[2] = {kind->kind, '\0'};
    ok = ok && json_object_set_new(e, "dtype", json_string(ks)) == 0;
    ok = ok && json_object_set_new(e, "word", json_integer(kind->word)) == 0;
    json_t *shape = json_array();
    for (size_t d = 0; shape && d < w->rank; d++)
        if (json_array_append_new(shape, json_integer((json_int_t)w->shape[d]))) {
            json_decref(shape);
            shape = NULL;
        }
    ok = ok && json_object_set_new(e, "shape", shape) == 0;
    if (part_explicit) ok = ok && json_object_set_new(e, "part", json_integer((json_int_t)part)) == 0;
    const tio_kv *m = tio__tensor_meta_view(w->src);
    if (m->count || name || (ts && ts->meta))
        ok = ok && json_object_set_new(e, "metadata",
                                       zio_meta_object(m, name, ts ? ts->meta : NULL,
                                                       scratch)) == 0;
    if (!ok) {
        json_decref(e);
        return NULL;
    }
    return e;
}

/* ------------------------------------------------ label fast path (write) */

/* An integer as zj_dump writes it ("%lld"). */
static void zj_int(zbuf *b, int64_t v) {
    char buf[TIO__DEC_CAP];
    if (v < 0) zb_putc(b, '-');
    zb_puts(b, tio__u64_dec(buf, v < 0 ? 0 - (uint64_t)v : (uint64_t)v));
}

/* Whether the label is the plain one: a container without metadata (tensor
 * names are fine), built here or read by zio_label_fast (no JSON kept) with
 * its tensors as read, in payload order with explicit parts and no other
 * payload part: the general writer would write the same label. */
static bool zio_plain(const tio_write_plan *p, const zio_native *nat) {
    const tio_container *c = tio__plan_container(p);
    size_t n = tio__plan_count(p);
    if (c->meta.count) return false;
    if (nat && (nat->label || nat->label_empty || !nat->tensors_present || nat->nup ||
                nat->npayload != n))
        return false;
    for (size_t i = 0; i < n; i++) {
        const tio_wtensor *w = tio__plan_tensor(p, i);
        if (tio_tensor_meta_count(w->src)) return false;
        const zio_tstate *ts = zio_tstate_of(nat, w, i);
        if (nat && (!ts || ts->part != i || !ts->part_explicit)) return false;
    }
    return true;
}

/* The plain label, byte for byte what zio_prepare's JSON gives for it (keys
 * sorted: dtype, metadata, part, shape, word; every part explicit). */
static void zio_label_plain(zbuf *b, const tio_write_plan *p) {
    size_t n = tio__plan_count(p);
    zb_puts(b, "{\"TENS\":{\"tensors\":[");
    for (size_t i = 0; i < n; i++) {
        const tio_wtensor *w = tio__plan_tensor(p, i);
        const struct zio_kind *kind = zio_kind_of(w->dtype);
        char head[16] = "{\"dtype\":\"?\",";
        head[10] = kind->kind;
        if (i) zb_putc(b, ',');
        zb_puts(b, head);
        if (w->name) {
            zb_puts(b, "\"metadata\":{\"name\":");
            zj_string(b, w->name, strlen(w->name));
            zb_puts(b, "},");
        }
        zb_puts(b, "\"part\":");
        zj_int(b, (int64_t)i);
        zb_puts(b, ",\"shape\":[");
        for (size_t d = 0; d < w->rank; d++) {
            if (d) zb_putc(b, ',');
            zj_int(b, w->shape[d]);
        }
        zb_puts(b, "],\"word\":");
        zj_int(b, kind->word);
        zb_putc(b, '}');
    }
    zb_puts(b, "]}}");
}

/* Builds part 0 (prefix + label), part 1 and the payload layout. */
static int zio_prepare(tio_write_plan *p, zio_out *o, tio_error *err) {
    memset(o, 0, sizeof *o);
    const tio_container *c = tio__plan_container(p);
    const zio_native *nat = zio_native_of(c);
    size_t n = tio__plan_count(p);
    zio_head h;
    int rc = zio_head_of(p, &h, err);
    if (rc) return rc;
    for (int k = 0; k < 3; k++) tio__st64(o->coord + 8 * k, h.coord[k]);

    /* payload layout: the source's when every tensor came from it */
    bool reuse = nat != NULL;
    for (size_t i = 0; reuse && i < n; i++)
        reuse = zio_tstate_of(nat, tio__plan_tensor(p, i), i) != NULL;
    size_t nup = nat ? nat->nup : 0;
    o->npayload = reuse ? nat->npayload : n + nup;
    o->slots = calloc(o->npayload ? o->npayload : 1, sizeof *o->slots);
    if (!o->slots) return tio__nomem(err, ZIO_FMT);
    for (size_t k = 0; k < o->npayload; k++) o->slots[k].tensor = SIZE_MAX;
    for (size_t i = 0; i < n; i++) o->slots[reuse ? nat->ts[i].part : i].tensor = i;
    for (size_t u = 0; u < nup; u++) o->slots[reuse ? nat->up[u].index : n + u].up = &nat->up[u];

    if (zio_plain(p, nat) && !(tio__plan_flags(p) & TIO__SAVE_GENERAL_ONLY)) {
        /* no JSON values to build */
        char lv = (char)('0' + h.level);
        o->prefix.p = malloc(256); /* room for a label of a few tensors */
        if (o->prefix.p) o->prefix.cap = 256;
        zb_put(&o->prefix, "ZIO", 3);
        zb_put(&o->prefix, &lv, 1);
        zb_put(&o->prefix, h.form, 4);
        zio_label_plain(&o->prefix, p);
        return o->prefix.failed ? tio__nomem(err, ZIO_FMT) : TIO_OK;
    }
    if (tio__plan_flags(p) & TIO__SAVE_FAST_ONLY)
        return tio__err(err, TIO_E_UNSUPPORTED, ZIO_FMT, -1, "not a plain label (fast path only)");

    /* the label */
    zbuf scratch = {0};
    json_t *root = json_object();
    bool ok = root != NULL;
    if (ok && nat && nat->label) {
        const char *key;
        json_t *v;
        json_object_foreach(nat->label, key, v) {
            if (strcmp(key, "TENS") != 0) ok = ok && zj_set_copy(root, key, v) == 0;
        }
    }
    json_t *otmeta = nat && nat->tens ? json_object_get(nat->tens, "metadata") : NULL;
    if (ok && (!nat || nat->tens || n || c->meta.count)) {
        json_t *tens = json_object();
        ok = tens != NULL;
        if (ok && nat && nat->tens) {
            const char *key;
            json_t *v;
            json_object_foreach(nat->tens, key, v) {
                if (strcmp(key, "tensors") != 0 && strcmp(key, "metadata") != 0)
                    ok = ok && zj_set_copy(tens, key, v) == 0;
            }
        }
        if (ok && (n || !nat || nat->tensors_present)) {
            json_t *arr = json_array();
            ok = arr != NULL;
            for (size_t i = 0; ok && i < n; i++) {
                const tio_wtensor *w = tio__plan_tensor(p, i);
                const zio_tstate *ts = zio_tstate_of(nat, w, i);
                size_t part = reuse ? ts->part : i;
                bool expl = reuse ? ts->part_explicit : true;
                ok = json_array_append_new(
                         arr, zio_entry(w, ts, part, expl, tio__plan_flags(p), &scratch)) == 0;
            }
            ok = json_object_set_new(tens, "tensors", arr) == 0 && ok;
        }
        if (ok && (c->meta.count || otmeta))
            ok = json_object_set_new(tens, "metadata",
                                     zio_meta_object(&c->meta, NULL, otmeta, &scratch)) == 0;
        ok = json_object_set_new(root, "TENS", tens) == 0 && ok;
    }
    if (ok) {
        char lv = (char)('0' + h.level);
        zb_put(&o->prefix, "ZIO", 3);
        zb_put(&o->prefix, &lv, 1);
        zb_put(&o->prefix, h.form, 4);
        if (!(nat && nat->label_empty && json_object_size(root) == 0)) zj_dump(&o->prefix, root);
        ok = !o->prefix.failed && !scratch.failed;
    }
    json_decref(root);
    free(scratch.p);
    if (!ok) return tio__nomem(err, ZIO_FMT);
    return TIO_OK;
}

static int zio_put_size(tio_sink *s, size_t n, tio_error *err) {
    uint8_t h[5];
    if (n < ZIO_BIG_SIZE) {
        h[0] = (uint8_t)n;
        return tio__sink_write(s, h, 1, err);
    }
    h[0] = ZIO_BIG_SIZE;
    h[1] = (uint8_t)(n >> 24);
    h[2] = (uint8_t)(n >> 16);
    h[3] = (uint8_t)(n >> 8);
    h[4] = (uint8_t)n;
    return tio__sink_write(s, h, 5, err);
}

static int zio_check_size(size_t part, size_t n, tio_error *err) {
    if ((uint64_t)n > UINT32_MAX)
        return tio__err(err, TIO_E_LIMIT, ZIO_FMT, -1,
                        "part %zu is %zu bytes; the zmsg size field holds at most 4294967295 "
                        "(4 GiB - 1)",
                        part, n);
    return TIO_OK;
}

/* The .zmsg single buffer: each part with its size field. */
static int zio_write(tio_write_plan *p, tio_sink *s, tio_error *err) {
    zio_out o;
    int rc = zio_prepare(p, &o, err);
    /* every size is checked before the first byte */
    if (!rc) rc = zio_check_size(0, o.prefix.len, err);
    for (size_t k = 0; !rc && k < o.npayload; k++) {
        const zio_slot *sl = &o.slots[k];
        size_t sz = sl->up ? sl->up->size : tio__plan_tensor(p, sl->tensor)->nbytes;
        rc = zio_check_size(k + ZIO_HEADER_PARTS, sz, err);
    }
    if (!rc) rc = zio_put_size(s, o.prefix.len, err);
    if (!rc) rc = tio__sink_write(s, o.prefix.p, o.prefix.len, err);
    if (!rc) rc = zio_put_size(s, ZIO_COORD_LEN, err);
    if (!rc) rc = tio__sink_write(s, o.coord, ZIO_COORD_LEN, err);
    for (size_t k = 0; !rc && k < o.npayload; k++) {
        const zio_slot *sl = &o.slots[k];
        if (sl->up) {
            rc = zio_put_size(s, sl->up->size, err);
            if (!rc && sl->up->size) rc = tio__plan_sink_data(p, s, sl->up->data, sl->up->size, err);
        } else {
            /* streamed: a densified tensor is never held whole */
            rc = zio_put_size(s, tio__plan_tensor(p, sl->tensor)->nbytes, err);
            if (!rc) rc = tio__plan_sink_tensor(p, s, sl->tensor, err);
        }
    }
    zio_out_free(&o);
    return rc;
}

/* The multipart form: prefix, coordinates, payload (tensor data lent). */
static int zio_write_parts(tio_write_plan *p, struct tio_message *m, tio_error *err) {
    zio_out o;
    int rc = zio_prepare(p, &o, err);
    if (!rc) {
        void *pre = o.prefix.p;
        o.prefix.p = NULL;
        rc = tio__msg_add_owned(m, pre ? pre : malloc(1), o.prefix.len, err);
    }
    if (!rc) rc = tio__msg_add_copy(m, o.coord, ZIO_COORD_LEN, err);
    for (size_t k = 0; !rc && k < o.npayload; k++) {
        const zio_slot *sl = &o.slots[k];
        if (sl->up)
            rc = tio__msg_add_copy(m, sl->up->data, sl->up->size, err);
        else
            rc = tio__msg_add_tensor(m, p, sl->tensor, err);
    }
    zio_out_free(&o);
    return rc;
}

/* ------------------------------------------------------------ the format */

extern const tio_format_desc tio__format_zio;

const tio_format_desc tio__format_zio = {
    .name = "zio",
    .description = "ZIO TENS message: prefix with JSON label, coordinates, one payload part "
                   "per tensor (CZMQ zmsg single buffer)",
    .extensions = ".zmsg",
    .caps = TIO_CAP_NAMES | TIO_CAP_METADATA,
    .dtypes = TIO_DTYPE_BIT(TIO_BOOL) | TIO_DTYPE_BIT(TIO_INT8) | TIO_DTYPE_BIT(TIO_INT16) |
              TIO_DTYPE_BIT(TIO_INT32) | TIO_DTYPE_BIT(TIO_INT64) | TIO_DTYPE_BIT(TIO_UINT8) |
              TIO_DTYPE_BIT(TIO_UINT16) | TIO_DTYPE_BIT(TIO_UINT32) |
              TIO_DTYPE_BIT(TIO_UINT64) | TIO_DTYPE_BIT(TIO_FLOAT16) |
              TIO_DTYPE_BIT(TIO_FLOAT32) | TIO_DTYPE_BIT(TIO_FLOAT64) |
              TIO_DTYPE_BIT(TIO_COMPLEX64) | TIO_DTYPE_BIT(TIO_COMPLEX128),
    .probe = zio_probe,
    .read = zio_read,
    .check = zio_check,
    .write = zio_write,
    .options = "level form origin granule seqno",
    .read_parts = zio_read_parts,
    .write_parts = zio_write_parts,
};
