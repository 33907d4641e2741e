/*
 * safetensors — Hugging Face's tensor file (huggingface/safetensors).
 *
 *   u64 LE N | N bytes of UTF-8 JSON | the byte buffer
 *   JSON: {"__metadata__": {"k": "v", ...}, "name": {"dtype": "F32",
 *          "shape": [2, 3], "data_offsets": [BEGIN, END]}, ...}
 *   Offsets are relative to the buffer; the tensors cover it exactly, in
 *   any order, without holes or overlaps.
 *
 * The header is read by a restricted JSON parser of our own, straight from
 * the bytes (no DOM: memory stays in proportion to what is kept), with the
 * rules of the reference crate (safetensors/src/tensor.rs) each a clear
 * error. The writer lays the file out as the crate's serialize() does:
 * tensors by dtype descending in the crate's order, then by name; compact
 * JSON, __metadata__ first (its keys sorted), serde_json's escapes; the
 * header padded with spaces to a multiple of 8. docs/formats/safetensors.md.
 */
#include "core/internal.h"
#include "json/json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ST "safetensors"
#define ST_MAX_HEADER UINT64_C(100000000) /* the crate's MAX_HEADER_SIZE */

/* The crate's Dtype enum in its declaration order (which is its Ord: the
 * writer sorts by it, descending), with tensio's dtype, or INVALID for
 * the dtypes tensio has no type for (refused by name). */
typedef struct st_dtype {
    const char *name;
    tio_dtype dtype;
    const char *why; /* for the refused ones */
} st_dtype;

static const st_dtype st_dtypes[] = {
    {"BOOL", TIO_BOOL, NULL},
    {"F4", TIO_DTYPE_INVALID, "4-bit MXFP4 elements (two per byte)"},
    {"F6_E2M3", TIO_DTYPE_INVALID, "6-bit MXFP6 elements"},
    {"F6_E3M2", TIO_DTYPE_INVALID, "6-bit MXFP6 elements"},
    {"U8", TIO_UINT8, NULL},
    {"I8", TIO_INT8, NULL},
    {"F8_E5M2", TIO_FLOAT8_E5M2, NULL},
    {"F8_E4M3", TIO_FLOAT8_E4M3FN, NULL},
    {"F8_E8M0", TIO_DTYPE_INVALID, "8-bit MX scale exponents"},
    {"F8_E4M3FNUZ", TIO_DTYPE_INVALID, "8-bit floats without negative zero"},
    {"F8_E5M2FNUZ", TIO_DTYPE_INVALID, "8-bit floats without negative zero"},
    {"I16", TIO_INT16, NULL},
    {"U16", TIO_UINT16, NULL},
    {"F16", TIO_FLOAT16, NULL},
    {"BF16", TIO_BFLOAT16, NULL},
    {"I32", TIO_INT32, NULL},
    {"U32", TIO_UINT32, NULL},
    {"F32", TIO_FLOAT32, NULL},
    {"C64", TIO_COMPLEX64, NULL},
    {"F64", TIO_FLOAT64, NULL},
    {"I64", TIO_INT64, NULL},
    {"U64", TIO_UINT64, NULL},
};
#define ST_NDTYPES (sizeof st_dtypes / sizeof st_dtypes[0])

static int st_rank_of(tio_dtype d) {
    for (size_t i = 0; i < ST_NDTYPES; i++)
        if (st_dtypes[i].dtype == d && d != TIO_DTYPE_INVALID) return (int)i;
    return -1;
}

static int64_t st_off(uint64_t v) { return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v; }

/* ------------------------------------------------------------------ probe */

static int st_is_ws(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static int st_probe(const uint8_t *data, size_t size) {
    if (!data || size < 10) return 0;
    uint64_t n = tio__ld64(data);
    if (n < 2 || n > ST_MAX_HEADER || n > size - 8) return 0;
    size_t i = 8, end = 8 + (size_t)n;
    while (i < end && i < 8 + 64 && st_is_ws(data[i])) i++;
    if (i >= end || data[i] != '{') return 0;
    i++;
    while (i < end && i < 8 + 128 && st_is_ws(data[i])) i++;
    if (i >= end || (data[i] != '"' && data[i] != '}')) return 0;
    return 70;
}

/* ------------------------------------------------------------- JSON input */

typedef struct st_reader {
    tio_read_ctx *ctx;
    tio_error *err;
    const uint8_t *h; /* the header bytes */
    size_t n;         /* their count */
    size_t pos;       /* position in h */
    char *s;          /* the last string decoded (NUL-terminated) */
    size_t slen, scap;
    int snul;         /* it holds a \u0000 */
    int64_t *dims;
    size_t dims_cap;
} st_reader;

/* The absolute file offset of header position i. */
static int64_t st_at(const st_reader *r, size_t i) {
    (void)r;
    return st_off((uint64_t)i + 8);
}

static void st_ws(st_reader *r) {
    while (r->pos < r->n && st_is_ws(r->h[r->pos])) r->pos++;
}

/* "'x'", "the end of the header" for messages. */
static const char *st_found(const st_reader *r, char *buf, size_t cap) {
    if (r->pos >= r->n) return "the end of the header";
    uint8_t c = r->h[r->pos];
    if (c >= 0x20 && c < 0x7f)
        snprintf(buf, cap, "'%c'", (char)c);
    else
        snprintf(buf, cap, "byte 0x%02x", c);
    return buf;
}

static int st_syntax(st_reader *r, const char *expected) {
    char b[16];
    return tio__err(r->err, TIO_E_CORRUPT, ST, st_at(r, r->pos),
                    "header JSON: expected %s, found %s", expected, st_found(r, b, sizeof b));
}

static int st_expect(st_reader *r, uint8_t ch, const char *expected) {
    st_ws(r);
    if (r->pos < r->n && r->h[r->pos] == ch) {
        r->pos++;
        return TIO_OK;
    }
    return st_syntax(r, expected);
}

/* After a member or element: ',' (*more = 1) or the closing bracket. */
static int st_next(st_reader *r, uint8_t close, int *more) {
    st_ws(r);
    *more = r->pos < r->n && r->h[r->pos] == ',';
    if (*more) {
        r->pos++;
        return TIO_OK;
    }
    return st_expect(r, close, close == '}' ? "',' or '}'" : "',' or ']'");
}

static int st_sput(st_reader *r, const uint8_t *p, size_t k) {
    if (r->slen + k + 1 > r->scap) {
        size_t ncap = r->scap ? r->scap : 64;
        while (ncap < r->slen + k + 1) ncap *= 2; /* <= 2 * header size */
        char *ns = realloc(r->s, ncap);
        if (!ns) return tio__nomem(r->err, ST);
        r->s = ns;
        r->scap = ncap;
    }
    memcpy(r->s + r->slen, p, k);
    r->slen += k;
    r->s[r->slen] = 0;
    return TIO_OK;
}

static int st_hex4(st_reader *r, size_t at, unsigned *v) {
    if (r->n - at < 4)
        return tio__err(r->err, TIO_E_CORRUPT, ST, st_at(r, at),
                        "header JSON: expected 4 hex digits after \\u, found the end of the "
                        "header");
    unsigned x = 0;
    for (size_t k = 0; k < 4; k++) {
        uint8_t c = r->h[at + k];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return tio__err(r->err, TIO_E_CORRUPT, ST, st_at(r, at + k),
                            "header JSON: expected a hex digit in a \\u escape, found byte "
                            "0x%02x",
                            c);
        x = x * 16 + d;
    }
    *v = x;
    return TIO_OK;
}

/* Decodes a JSON string at the position (after whitespace) into r->s. The
 * header was checked to be UTF-8 already. `what` names it for messages. */
static int st_string(st_reader *r, const char *what) {
    st_ws(r);
    if (r->pos >= r->n || r->h[r->pos] != '"') return st_syntax(r, what);
    r->pos++;
    r->slen = 0;
    r->snul = 0;
    int rc = st_sput(r, (const uint8_t *)"", 0);
    if (rc) return rc;
    for (;;) {
        size_t run = r->pos;
        while (run < r->n && r->h[run] != '"' && r->h[run] != '\\' && r->h[run] >= 0x20) run++;
        if (run > r->pos) {
            rc = st_sput(r, r->h + r->pos, run - r->pos);
            if (rc) return rc;
            r->pos = run;
        }
        if (r->pos >= r->n)
            return tio__err(r->err, TIO_E_CORRUPT, ST, st_at(r, r->pos),
                            "header JSON: %s is not terminated (expected '\"' before the end "
                            "of the header)",
                            what);
        uint8_t c = r->h[r->pos];
        if (c == '"') {
            r->pos++;
            return TIO_OK;
        }
        if (c < 0x20)
            return tio__err(r->err, TIO_E_CORRUPT, ST, st_at(r, r->pos),
                            "header JSON: control character 0x%02x inside %s (expected it "
                            "escaped)",
                            c, what);
        /* an escape */
        size_t at = r->pos;
        if (r->n - at < 2)
            return tio__err(r->err, TIO_E_CORRUPT, ST, st_at(r, at),
                            "header JSON: %s ends inside an escape", what);
        uint8_t e = r->h[at + 1], out[4];
        size_t k = 1;
        r->pos = at + 2;
        switch (e) {
        case '"': out[0] = '"'; break;
        case '\\': out[0] = '\\'; break;
        case '/': out[0] = '/'; break;
        case 'b': out[0] = '\b'; break;
        case 'f': out[0] = '\f'; break;
        case 'n': out[0] = '\n'; break;
        case 'r': out[0] = '\r'; break;
        case 't': out[0] = '\t'; break;
        case 'u': {
            unsigned u, lo;
            rc = st_hex4(r, at + 2, &u);
            if (rc) return rc;
            r->pos = at + 6;
            if (u >= 0xDC00 && u <= 0xDFFF)
                return tio__err(r->err, TIO_E_CORRUPT, ST, st_at(r, at),
                                "header JSON: lone trailing surrogate \\u%04X in %s", u, what);
            if (u >= 0xD800 && u <= 0xDBFF) {
                if (r->n - r->pos < 6 || r->h[r->pos] != '\\' || r->h[r->pos + 1] != 'u')
                    return tio__err(r->err, TIO_E_CORRUPT, ST, st_at(r, at),
                                    "header JSON: lone leading surrogate \\u%04X in %s "
                                    "(expected a \\uDC00..\\uDFFF escape after it)",
                                    u, what);
                rc = st_hex4(r, r->pos + 2, &lo);
                if (rc) return rc;
                if (lo < 0xDC00 || lo > 0xDFFF)
                    return tio__err(r->err, TIO_E_CORRUPT, ST, st_at(r, r->pos),
                                    "header JSON: \\u%04X after the leading surrogate \\u%04X "
                                    "in %s (expected \\uDC00..\\uDFFF)",
                                    lo, u, what);
                r->pos += 6;
                u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (u == 0) r->snul = 1;
            if (u < 0x80) {
                out[0] = (uint8_t)u;
            } else if (u < 0x800) {
                out[0] = (uint8_t)(0xC0 | (u >> 6));
                out[1] = (uint8_t)(0x80 | (u & 0x3F));
                k = 2;
            } else if (u < 0x10000) {
                out[0] = (uint8_t)(0xE0 | (u >> 12));
                out[1] = (uint8_t)(0x80 | ((u >> 6) & 0x3F));
                out[2] = (uint8_t)(0x80 | (u & 0x3F));
                k = 3;
            } else {
                out[0] = (uint8_t)(0xF0 | (u >> 18));
                out[1] = (uint8_t)(0x80 | ((u >> 12) & 0x3F));
                out[2] = (uint8_t)(0x80 | ((u >> 6) & 0x3F));
                out[3] = (uint8_t)(0x80 | (u & 0x3F));
                k = 4;
            }
            break;
        }
        default:
            return tio__err(r->err, TIO_E_CORRUPT, ST, st_at(r, at),
                            "header JSON: invalid escape '\\%c' in %s", e >= 0x20 && e < 0x7f ? (char)e : '?',
                            what);
        }
        rc = st_sput(r, out, k);
        if (rc) return rc;
    }
}

/* A JSON number that must be an integer in [0, 2^64) (serde's usize). */
static int st_uint(st_reader *r, const char *what, uint64_t *out) {
    st_ws(r);
    size_t at = r->pos;
    int neg = 0;
    if (r->pos < r->n && r->h[r->pos] == '-') {
        neg = 1;
        r->pos++;
    }
    if (r->pos >= r->n || r->h[r->pos] < '0' || r->h[r->pos] > '9') {
        r->pos = at;
        return st_syntax(r, what);
    }
    uint64_t v = 0;
    int ovf = 0;
    size_t first = r->pos;
    while (r->pos < r->n && r->h[r->pos] >= '0' && r->h[r->pos] <= '9') {
        if (tio__mul64_ovf(v, 10, &v) || tio__add64_ovf(v, (uint64_t)(r->h[r->pos] - '0'), &v))
            ovf = 1;
        r->pos++;
    }
    if (r->h[first] == '0' && r->pos - first > 1)
        return tio__err(r->err, TIO_E_CORRUPT, ST, st_at(r, first),
                        "header JSON: %s has a leading zero (not JSON)", what);
    if (r->pos < r->n && (r->h[r->pos] == '.' || r->h[r->pos] == 'e' || r->h[r->pos] == 'E'))
        return tio__err(r->err, TIO_E_CORRUPT, ST, st_at(r, at),
                        "%s is not an integer (expected a whole number >= 0 without a "
                        "fraction or exponent)",
                        what);
    if (ovf)
        return tio__err(r->err, TIO_E_OVERFLOW, ST, st_at(r, at),
                        "%s does not fit in 64 bits (expected an integer < 2^64)", what);
    if (neg && v != 0)
        return tio__err(r->err, TIO_E_CORRUPT, ST, st_at(r, at),
                        "%s is negative (expected an integer >= 0)", what);
    *out = v;
    return TIO_OK;
}

/* Skips any JSON value (fields of a tensor entry the crate ignores). */
static int st_skip(st_reader *r, uint32_t depth) {
    st_ws(r);
    if (r->pos >= r->n) return st_syntax(r, "a JSON value");
    uint8_t c = r->h[r->pos];
    if (c == '"') return st_string(r, "a string");
    if (c == '{' || c == '[') {
        if (depth >= r->ctx->limits.max_depth)
            return tio__err(r->err, TIO_E_LIMIT, ST, st_at(r, r->pos),
                            "header JSON: nesting deeper than %" PRIu32 " (max_depth)",
                            r->ctx->limits.max_depth);
        uint8_t close = c == '{' ? '}' : ']';
        r->pos++;
        st_ws(r);
        if (r->pos < r->n && r->h[r->pos] == close) {
            r->pos++;
            return TIO_OK;
        }
        for (;;) {
            int rc;
            if (c == '{') {
                rc = st_string(r, "an object key");
                if (!rc) rc = st_expect(r, ':', "':'");
                if (rc) return rc;
            }
            int more;
            rc = st_skip(r, depth + 1);
            if (!rc) rc = st_next(r, close, &more);
            if (rc || !more) return rc;
        }
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        if (c == '-') r->pos++;
        size_t d0 = r->pos;
        while (r->pos < r->n && r->h[r->pos] >= '0' && r->h[r->pos] <= '9') r->pos++;
        if (r->pos == d0) return st_syntax(r, "a digit");
        if (r->h[d0] == '0' && r->pos - d0 > 1) {
            r->pos = d0;
            return st_syntax(r, "a number without a leading zero");
        }
        if (r->pos < r->n && r->h[r->pos] == '.') {
            r->pos++;
            d0 = r->pos;
            while (r->pos < r->n && r->h[r->pos] >= '0' && r->h[r->pos] <= '9') r->pos++;
            if (r->pos == d0) return st_syntax(r, "a digit after '.'");
        }
        if (r->pos < r->n && (r->h[r->pos] == 'e' || r->h[r->pos] == 'E')) {
            r->pos++;
            if (r->pos < r->n && (r->h[r->pos] == '+' || r->h[r->pos] == '-')) r->pos++;
            d0 = r->pos;
            while (r->pos < r->n && r->h[r->pos] >= '0' && r->h[r->pos] <= '9') r->pos++;
            if (r->pos == d0) return st_syntax(r, "a digit in the exponent");
        }
        return TIO_OK;
    }
    static const char *const words[] = {"true", "false", "null"};
    for (size_t k = 0; k < 3; k++) {
        size_t L = strlen(words[k]);
        if (r->n - r->pos >= L && memcmp(r->h + r->pos, words[k], L) == 0) {
            r->pos += L;
            return TIO_OK;
        }
    }
    return st_syntax(r, "a JSON value");
}

/* ------------------------------------------------------------------- read */

typedef struct st_range {
    uint64_t begin, end;
    size_t index;      /* container tensor */
    size_t key_at;     /* header position of its key */
} st_range;

typedef struct st_entry {
    const st_dtype *dt;
    size_t dt_at;
    size_t rank;
    uint64_t begin, end;
} st_entry;

static int st_dup_field(st_reader *r, const char *name, size_t at, const char *field) {
    return tio__err(r->err, TIO_E_CORRUPT, ST, st_at(r, at),
                    "tensor '%s': duplicate field '%s' (serde rejects it)", name, field);
}

/* The value of tensor `name`'s entry: {"dtype", "shape", "data_offsets"}. */
static int st_entry_parse(st_reader *r, const char *name, size_t key_at, st_entry *e) {
    int have_dt = 0, have_shape = 0, have_off = 0, rc;
    memset(e, 0, sizeof *e);
    st_ws(r);
    if (r->pos >= r->n || r->h[r->pos] != '{') {
        char b[16];
        return tio__err(r->err, TIO_E_CORRUPT, ST, st_at(r, r->pos),
                        "tensor '%s': expected an object {\"dtype\", \"shape\", "
                        "\"data_offsets\"}, found %s",
                        name, st_found(r, b, sizeof b));
    }
    r->pos++;
    st_ws(r);
    if (r->pos < r->n && r->h[r->pos] == '}') {
        r->pos++;
    } else {
        for (;;) {
            st_ws(r);
            size_t fat = r->pos;
            char field[16];
            rc = st_string(r, "a field name");
            if (rc) return rc;
            snprintf(field, sizeof field, "%s", r->slen < sizeof field ? r->s : "");
            if (r->slen >= sizeof field) field[0] = 0;
            rc = st_expect(r, ':', "':'");
            if (rc) return rc;
            if (strcmp(field, "dtype") == 0) {
                if (have_dt++) return st_dup_field(r, name, fat, field);
                st_ws(r);
                e->dt_at = r->pos;
                rc = st_string(r, "the dtype (a string)");
                if (rc) return rc;
                for (size_t k = 0; k < ST_NDTYPES && !e->dt; k++)
                    if (strcmp(r->s, st_dtypes[k].name) == 0) e->dt = &st_dtypes[k];
                if (!e->dt) {
                    char esc[64];
                    tio__escape((const uint8_t *)r->s, r->slen, esc, sizeof esc);
                    return tio__err(r->err, TIO_E_DTYPE, ST, st_at(r, e->dt_at),
                                    "tensor '%s': dtype \"%s\" is not a safetensors dtype "
                                    "(expected BOOL, U8, I8, I16, U16, F16, BF16, I32, U32, "
                                    "F32, F64, I64, U64, C64, F8_E4M3, F8_E5M2, ...)",
                                    name, esc);
                }
            } else if (strcmp(field, "shape") == 0) {
                if (have_shape++) return st_dup_field(r, name, fat, field);
                rc = st_expect(r, '[', "'[' (the shape is an array)");
                if (rc) return rc;
                st_ws(r);
                size_t rank = 0;
                if (r->pos < r->n && r->h[r->pos] == ']') {
                    r->pos++;
                } else {
                    for (;;) {
                        uint64_t d;
                        st_ws(r);
                        size_t dat = r->pos;
                        rc = st_uint(r, "a dim of the shape", &d);
                        if (rc) return rc;
                        if (rank >= r->ctx->limits.max_rank)
                            return tio__err(r->err, TIO_E_LIMIT, ST, st_at(r, dat),
                                            "tensor '%s': rank above the limit (max_rank %" PRIu32
                                            ")",
                                            name, r->ctx->limits.max_rank);
                        if (d > (uint64_t)INT64_MAX)
                            return tio__err(r->err, TIO_E_OVERFLOW, ST, st_at(r, dat),
                                            "tensor '%s': dim %zu is %" PRIu64
                                            " (expected <= %" PRId64 ")",
                                            name, rank, d, INT64_MAX);
                        if (rank == r->dims_cap) {
                            size_t nc = r->dims_cap ? r->dims_cap * 2 : 8;
                            int64_t *nd = realloc(r->dims, nc * sizeof *nd);
                            if (!nd) return tio__nomem(r->err, ST);
                            r->dims = nd;
                            r->dims_cap = nc;
                        }
                        r->dims[rank++] = (int64_t)d;
                        int more;
                        rc = st_next(r, ']', &more);
                        if (rc) return rc;
                        if (!more) break;
                    }
                }
                e->rank = rank;
            } else if (strcmp(field, "data_offsets") == 0) {
                if (have_off++) return st_dup_field(r, name, fat, field);
                rc = st_expect(r, '[', "'[' (data_offsets is [BEGIN, END])");
                if (!rc) rc = st_uint(r, "BEGIN of data_offsets", &e->begin);
                if (!rc) rc = st_expect(r, ',', "',' (data_offsets is [BEGIN, END])");
                if (!rc) rc = st_uint(r, "END of data_offsets", &e->end);
                if (!rc) rc = st_expect(r, ']', "']' (data_offsets has exactly 2 numbers)");
                if (rc) return rc;
            } else {
                rc = st_skip(r, 2); /* the crate ignores unknown fields */
                if (rc) return rc;
            }
            int more;
            rc = st_next(r, '}', &more);
            if (rc) return rc;
            if (!more) break;
        }
    }
    if (!have_dt || !have_shape || !have_off)
        return tio__err(r->err, TIO_E_CORRUPT, ST, st_at(r, key_at),
                        "tensor '%s': missing field '%s' (expected dtype, shape and "
                        "data_offsets)",
                        name, !have_dt ? "dtype" : !have_shape ? "shape" : "data_offsets");
    return TIO_OK;
}

/* The name of a key for messages (escaped, cut). */
static void st_name(const st_reader *r, char *out, size_t cap) {
    tio__escape((const uint8_t *)r->s, r->slen, out, cap);
}

static int st_check_cstr(st_reader *r, size_t at, const char *what) {
    if (r->snul)
        return tio__err(r->err, TIO_E_UNSUPPORTED, ST, st_at(r, at),
                        "%s contains \\u0000 (tensio's names and metadata are C strings)",
                        what);
    if (r->slen > r->ctx->limits.max_name_bytes)
        return tio__err(r->err, TIO_E_LIMIT, ST, st_at(r, at),
                        "%s is %zu bytes, above the limit (max_name_bytes %" PRIu32 ")", what,
                        r->slen, r->ctx->limits.max_name_bytes);
    return TIO_OK;
}

static int st_metadata(st_reader *r, size_t key_at) {
    tio_container *c = r->ctx->c;
    st_ws(r);
    if (r->n - r->pos >= 4 && memcmp(r->h + r->pos, "null", 4) == 0) {
        r->pos += 4; /* Option::None */
        return TIO_OK;
    }
    if (r->pos >= r->n || r->h[r->pos] != '{') {
        char b[16];
        return tio__err(r->err, TIO_E_CORRUPT, ST, st_at(r, key_at),
                        "__metadata__ must be an object of strings, found %s",
                        st_found(r, b, sizeof b));
    }
    r->pos++;
    st_ws(r);
    if (r->pos < r->n && r->h[r->pos] == '}') {
        r->pos++; /* Some(empty map): kept, so that a rewrite writes it again */
        return tio__kv_set(&c->props, "empty_metadata", "true", r->err);
    }
    for (;;) {
        st_ws(r);
        size_t kat = r->pos;
        int rc = st_string(r, "a __metadata__ key");
        if (!rc) rc = st_check_cstr(r, kat, "a __metadata__ key");
        if (rc) return rc;
        char *key = malloc(r->slen + 1);
        if (!key) return tio__nomem(r->err, ST);
        memcpy(key, r->s, r->slen + 1);
        rc = st_expect(r, ':', "':'");
        st_ws(r);
        size_t vat = r->pos;
        if (!rc && (r->pos >= r->n || r->h[r->pos] != '"')) {
            char b[16], k[64];
            tio__escape((const uint8_t *)key, strlen(key), k, sizeof k);
            rc = tio__err(r->err, TIO_E_CORRUPT, ST, st_at(r, vat),
                          "__metadata__ \"%s\": expected a string value, found %s "
                          "(metadata is a string-to-string map)",
                          k, st_found(r, b, sizeof b));
        }
        if (!rc) rc = st_string(r, "a __metadata__ value");
        if (!rc) rc = st_check_cstr(r, vat, "a __metadata__ value");
        if (!rc) rc = tio__kv_append(&c->meta, key, r->s, r->err);
        free(key);
        int more;
        if (!rc) rc = st_next(r, '}', &more);
        if (rc || !more) return rc;
    }
}

static int st_strcmp_p(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int st_range_cmp(const void *a, const void *b) {
    const st_range *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static const char *st_tname(const tio_container *c, size_t i) {
    const char *s = c->tensors[i]->name;
    return s ? s : "";
}

/* No two keys alike: tensor names, and metadata keys. */
static int st_unique(st_reader *r, const st_range *ranges, size_t nt) {
    tio_container *c = r->ctx->c;
    size_t n = nt > c->meta.count ? nt : c->meta.count;
    if (n < 2) return TIO_OK;
    const char **v = malloc(n * sizeof *v);
    if (!v) return tio__nomem(r->err, ST);
    int rc = TIO_OK;
    for (int pass = 0; pass < 2 && !rc; pass++) {
        size_t m = pass ? c->meta.count : nt;
        for (size_t i = 0; i < m; i++) v[i] = pass ? c->meta.keys[i] : st_tname(c, i);
        qsort(v, m, sizeof *v, st_strcmp_p);
        for (size_t i = 1; i < m && !rc; i++) {
            if (strcmp(v[i - 1], v[i]) != 0) continue;
            char esc[96];
            tio__escape((const uint8_t *)v[i], strlen(v[i]), esc, sizeof esc);
            int64_t at = -1;
            for (size_t k = 0; !pass && k < nt; k++)
                if (strcmp(st_tname(c, ranges[k].index), v[i]) == 0) at = st_at(r, ranges[k].key_at);
            rc = tio__err(r->err, TIO_E_CORRUPT, ST, at,
                          pass ? "__metadata__ has the key \"%s\" twice (duplicate keys are "
                                 "not allowed)"
                               : "the header has the tensor \"%s\" twice (duplicate keys are "
                                 "not allowed)",
                          esc);
        }
    }
    free(v);
    return rc;
}

static int st_read_all(st_reader *r, st_range **ranges_out) {
    tio_read_ctx *ctx = r->ctx;
    tio_container *c = ctx->c;
    int rc;
    if (ctx->size < 8)
        return tio__err(r->err, TIO_E_TRUNCATED, ST, 0,
                        "the header size needs 8 bytes, found %zu", ctx->size);
    uint64_t n = tio__ld64(ctx->data);
    if (n > ST_MAX_HEADER)
        return tio__err(r->err, TIO_E_LIMIT, ST, 0,
                        "the header size is %" PRIu64 " bytes, above safetensors' limit of "
                        "%" PRIu64 " (the reference refuses it: HeaderTooLarge)",
                        n, ST_MAX_HEADER);
    if (n > ctx->limits.max_header_bytes)
        return tio__err(r->err, TIO_E_LIMIT, ST, 0,
                        "the header size is %" PRIu64 " bytes, above the limit "
                        "(max_header_bytes %" PRIu64 ")",
                        n, ctx->limits.max_header_bytes);
    if (n > ctx->size - 8)
        return tio__err(r->err, TIO_E_TRUNCATED, ST, 0,
                        "the header size is %" PRIu64 " bytes, but only %zu follow the size "
                        "field",
                        n, ctx->size - 8);
    r->h = ctx->data + 8;
    r->n = (size_t)n;
    const uint8_t *buf = r->h + r->n;
    uint64_t bufsize = ctx->size - 8 - r->n;

    /* valid UTF-8, as from_utf8 (no overlongs, surrogates, > U+10FFFF) */
    size_t bad = tio__utf8_bad(r->h, r->n);
    if (bad < r->n)
        return tio__err(r->err, TIO_E_CORRUPT, ST, st_at(r, bad),
                        "the header is not valid UTF-8 (byte 0x%02x)", r->h[bad]);

    st_ws(r);
    if (r->pos > 0) {
        rc = tio__warn(ctx, ST, 8, r->err,
                       "the header starts with %zu whitespace bytes (the format says it MUST "
                       "begin with '{'; the reference reads it)",
                       r->pos);
        if (rc) return rc;
    }
    rc = st_expect(r, '{', "'{' (the header is a JSON object)");
    if (rc) return rc;

    st_range *ranges = NULL;
    size_t nr = 0, rcap = 0;
    int have_meta = 0;
    st_ws(r);
    if (r->pos < r->n && r->h[r->pos] == '}') {
        r->pos++;
    } else {
        for (;;) {
            st_ws(r);
            size_t key_at = r->pos;
            rc = st_string(r, "a key (a tensor name or __metadata__)");
            if (rc) return rc;
            if (strcmp(r->s, "__metadata__") == 0 && !r->snul) {
                if (have_meta++)
                    return tio__err(r->err, TIO_E_CORRUPT, ST, st_at(r, key_at),
                                    "the header has __metadata__ twice (duplicate keys are not "
                                    "allowed)");
                rc = st_expect(r, ':', "':'");
                if (!rc) rc = st_metadata(r, key_at);
                if (rc) return rc;
            } else {
                char name[80];
                st_name(r, name, sizeof name);
                rc = st_check_cstr(r, key_at, "a tensor name");
                if (rc) return rc;
                if (nr >= ctx->limits.max_tensors)
                    return tio__err(r->err, TIO_E_LIMIT, ST, st_at(r, key_at),
                                    "more than %" PRIu64 " tensors (max_tensors)",
                                    ctx->limits.max_tensors);
                if (nr == rcap) {
                    size_t nc = rcap ? rcap * 2 : 16;
                    st_range *nrg = realloc(ranges, nc * sizeof *nrg);
                    if (!nrg) return tio__nomem(r->err, ST);
                    ranges = nrg;
                    *ranges_out = ranges;
                    rcap = nc;
                }
                char *tname = malloc(r->slen + 1);
                if (!tname) return tio__nomem(r->err, ST);
                memcpy(tname, r->s, r->slen + 1);
                st_entry e;
                rc = st_expect(r, ':', "':'");
                if (!rc) rc = st_entry_parse(r, name, key_at, &e);
                if (!rc && e.dt->dtype == TIO_DTYPE_INVALID)
                    rc = tio__err(r->err, TIO_E_DTYPE, ST, st_at(r, e.dt_at),
                                  "tensor '%s': dtype %s (%s) has no tensio dtype (expected "
                                  "BOOL, U8, I8, I16, U16, F16, BF16, I32, U32, F32, F64, I64, "
                                  "U64, C64, F8_E4M3 or F8_E5M2)",
                                  name, e.dt->name, e.dt->why);
                size_t nbytes = 0;
                if (!rc)
                    rc = tio__shape_size(r->dims, e.rank, tio_dtype_size(e.dt->dtype), NULL,
                                         &nbytes, ST, st_at(r, key_at), r->err);
                if (!rc && e.end < e.begin)
                    rc = tio__err(r->err, TIO_E_CORRUPT, ST, st_at(r, key_at),
                                  "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                                  "] end before they begin (the reference: InvalidOffset)",
                                  name, e.begin, e.end);
                if (!rc && e.end > bufsize)
                    rc = tio__err(r->err, TIO_E_BOUNDS, ST, st_at(r, key_at),
                                  "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                                  "] run past the byte buffer (%" PRIu64 " bytes at offset %" PRIu64
                                  ")",
                                  name, e.begin, e.end, bufsize, (uint64_t)n + 8);
                if (!rc && e.end - e.begin != nbytes) {
                    char shape[96];
                    tio__shape_str(r->dims, e.rank, shape, sizeof shape);
                    rc = tio__err(r->err, TIO_E_CORRUPT, ST, st_at(r, key_at),
                                  "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                                  "] hold %" PRIu64 " bytes, but shape %s of %s needs %zu (the "
                                  "reference: TensorInvalidInfo)",
                                  name, e.begin, e.end, e.end - e.begin, shape, e.dt->name,
                                  nbytes);
                }
                if (!rc) {
                    tio_tensor_desc d;
                    memset(&d, 0, sizeof d);
                    d.name = tname;
                    d.dtype = e.dt->dtype;
                    d.rank = e.rank;
                    d.shape = r->dims;
                    d.layout = TIO_LAYOUT_DENSE;
                    d.data = buf + e.begin;
                    d.nbytes = nbytes;
                    ranges[nr].begin = e.begin;
                    ranges[nr].end = e.end;
                    ranges[nr].index = c->count;
                    ranges[nr].key_at = key_at;
                    rc = tio__container_add_view(c, &d, st_off(8 + n + e.begin), ST, r->err);
                    if (!rc) nr++;
                }
                free(tname);
                if (rc) return rc;
            }
            int more;
            rc = st_next(r, '}', &more);
            if (rc) return rc;
            if (!more) break;
        }
    }
    size_t pad_at = r->pos;
    st_ws(r);
    if (r->pos < r->n) {
        char b[16];
        return tio__err(r->err, TIO_E_CORRUPT, ST, st_at(r, r->pos),
                        "header JSON: %s after the closing '}' (expected only padding "
                        "whitespace up to the header end at offset %" PRIu64 ")",
                        st_found(r, b, sizeof b), (uint64_t)n + 8);
    }
    for (size_t i = pad_at; i < r->n; i++)
        if (r->h[i] != ' ') {
            rc = tio__warn(ctx, ST, st_at(r, i), r->err,
                           "the header is padded with byte 0x%02x (the format pads with "
                           "spaces; the reference reads any JSON whitespace)",
                           r->h[i]);
            if (rc) return rc;
            break;
        }

    rc = st_unique(r, ranges, nr);
    if (rc) return rc;

    /* the tensors cover the buffer exactly, in offset order */
    if (nr) qsort(ranges, nr, sizeof *ranges, st_range_cmp);
    uint64_t at = 0;
    for (size_t k = 0; k < nr; k++) {
        const st_range *x = &ranges[k];
        char a[80], b[80];
        const char *an = st_tname(c, x->index);
        tio__escape((const uint8_t *)an, strlen(an), a, sizeof a);
        if (x->begin > at)
            return tio__err(r->err, TIO_E_CORRUPT, ST, st_at(r, x->key_at),
                            "tensor '%s' begins at buffer offset %" PRIu64 ", leaving bytes %"
                            PRIu64 "..%" PRIu64 " to no tensor (the buffer may have no holes)",
                            a, x->begin, at, x->begin - 1);
        if (x->begin < at) {
            const char *bn = st_tname(c, ranges[k - 1].index);
            tio__escape((const uint8_t *)bn, strlen(bn), b, sizeof b);
            return tio__err(r->err, TIO_E_CORRUPT, ST, st_at(r, x->key_at),
                            "tensor '%s' at buffer offsets [%" PRIu64 ", %" PRIu64
                            "] overlaps tensor '%s', which ends at %" PRIu64
                            " (tensors may not share bytes)",
                            a, x->begin, x->end, b, at);
        }
        at = x->end;
    }
    if (at != bufsize)
        return tio__err(r->err, TIO_E_CORRUPT, ST, st_off(8 + n + at),
                        "the byte buffer has %" PRIu64 " bytes, the tensors cover %" PRIu64
                        " (%" PRIu64 " bytes after the last tensor; the tensors must cover it "
                        "exactly: the reference's MetadataIncompleteBuffer)",
                        bufsize, at, bufsize - at);

    /* data at an address not aligned to the element size get an aligned
     * copy when tio_tensor_data asks for them (at most the buffer once: the
     * tensors do not overlap), not at open */
    for (size_t i = 0; i < c->count; i++) {
        tio_tensor *t = c->tensors[i];
        size_t es = tio_dtype_size(t->dtype);
        if (t->nbytes && es > 1 && ((uintptr_t)t->data % es) != 0) t->unaligned = 1;
    }
    char v[24];
    snprintf(v, sizeof v, "%" PRIu64, n);
    return tio__kv_set(&c->props, "header_size", v, r->err);
}

static int st_read(tio_read_ctx *ctx, tio_error *err) {
    st_reader r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.err = err;
    st_range *ranges = NULL;
    int rc = st_read_all(&r, &ranges);
    free(ranges);
    free(r.s);
    free(r.dims);
    return rc;
}

/* ------------------------------------------------------------------ write */

/* A growable text buffer for the header. */
typedef tio_buf st_buf;

static void sb_put(st_buf *b, const char *s, size_t n) { tio__buf_put(b, s, n); }

static void sb_str(st_buf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_u64(st_buf *b, uint64_t v) {
    char d[TIO__DEC_CAP];
    sb_str(b, tio__u64_dec(d, v));
}

/* A JSON string as serde_json writes it (src/json/text.c). */
static void sb_json(st_buf *b, const char *s) { tio__json_string(b, s, strlen(s)); }

static int st_utf8_ok(const char *s) { return tio__utf8_bad((const uint8_t *)s, strlen(s)) == strlen(s); }

/* The name tensor i is written under: its own, or its index in decimal
 * when it has none. */
static const char *st_wname(const tio_wtensor *w, size_t i, char buf[TIO__DEC_CAP]) {
    return w->name ? w->name : tio__u64_dec(buf, (uint64_t)i);
}

typedef struct st_wsort {
    size_t index;
    int rank;
    const char *name; /* the tensor's, or in gen[index] */
} st_wsort;

/* The write order, and the names generated for unnamed tensors. */
typedef struct st_order {
    st_wsort *ws;
    char (*gen)[TIO__DEC_CAP];
} st_order;

static void st_order_free(st_order *o) {
    free(o->ws);
    free(o->gen);
}

static int st_wsort_cmp(const void *a, const void *b) {
    const st_wsort *x = a, *y = b;
    if (x->rank != y->rank) return x->rank > y->rank ? -1 : 1; /* dtype descending */
    return strcmp(x->name, y->name);                           /* then name, as bytes */
}

/* Builds the order (ws, sorted) and checks what safetensors cannot hold. */
static int st_prepare(const tio_write_plan *p, st_order *o, tio_error *err) {
    size_t n = tio__plan_count(p);
    const tio_container *c = tio__plan_container(p);
    unsigned flags = tio__plan_flags(p);
    o->ws = calloc(n ? n : 1, sizeof *o->ws);
    o->gen = calloc(n ? n : 1, sizeof *o->gen);
    if (!o->ws || !o->gen) {
        st_order_free(o);
        return tio__nomem(err, ST);
    }
    st_wsort *ws = o->ws;
    int rc = TIO_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        const tio_wtensor *w = tio__plan_tensor(p, i);
        ws[i].index = i;
        ws[i].rank = st_rank_of(w->dtype);
        if (ws[i].rank < 0)
            rc = tio__err(err, TIO_E_DTYPE, ST, -1, "tensor %zu: dtype %s has no safetensors dtype",
                          i, tio_dtype_name(w->dtype) ? tio_dtype_name(w->dtype) : "?");
        ws[i].name = st_wname(w, i, o->gen[i]);
        if (!rc && !st_utf8_ok(ws[i].name))
            rc = tio__err(err, TIO_E_UNSUPPORTED, ST, -1,
                          "tensor %zu: its name is not valid UTF-8 (safetensors names are JSON "
                          "strings)",
                          i);
        if (!rc && strcmp(ws[i].name, "__metadata__") == 0)
            rc = tio__err(err, TIO_E_UNSUPPORTED, ST, -1,
                          "tensor %zu is named '__metadata__', the key safetensors reserves for "
                          "the metadata",
                          i);
        if (!rc && tio_tensor_meta_count(w->src) && !(flags & TIO_SAVE_DROP_METADATA))
            rc = tio__err(err, TIO_E_LOSSY, ST, -1,
                          "tensor %zu ('%s') has metadata and safetensors stores only the "
                          "file's __metadata__ (TIO_SAVE_DROP_METADATA / --drop-metadata drops "
                          "it)",
                          i, ws[i].name);
    }
    if (!rc && n) {
        qsort(ws, n, sizeof *ws, st_wsort_cmp);
        /* a duplicate (or a generated name taken) is adjacent once sorted by
         * (dtype, name)? Not across dtypes: check names alone. */
        const char **v = malloc(n * sizeof *v);
        if (!v) {
            rc = tio__nomem(err, ST);
        } else {
            for (size_t i = 0; i < n; i++) v[i] = ws[i].name;
            qsort(v, n, sizeof *v, st_strcmp_p);
            for (size_t i = 1; i < n && !rc; i++)
                if (strcmp(v[i - 1], v[i]) == 0)
                    rc = tio__err(err, TIO_E_UNSUPPORTED, ST, -1,
                                  "two tensors are named '%s' (safetensors keys are unique; "
                                  "an unnamed tensor is written under its index)",
                                  v[i]);
            free(v);
        }
    }
    for (size_t i = 0; !rc && !(flags & TIO_SAVE_DROP_METADATA) && i < c->meta.count; i++)
        if (!st_utf8_ok(c->meta.keys[i]) || !st_utf8_ok(c->meta.values[i]))
            rc = tio__err(err, TIO_E_UNSUPPORTED, ST, -1,
                          "metadata entry %zu is not valid UTF-8 (safetensors metadata are "
                          "JSON strings)",
                          i);
    if (rc) st_order_free(o);
    return rc;
}

static int st_check(const tio_write_plan *p, tio_error *err) {
    st_order o;
    int rc = st_prepare(p, &o, err);
    if (!rc) st_order_free(&o);
    return rc;
}

static int st_keycmp(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int st_write(tio_write_plan *p, tio_sink *s, tio_error *err) {
    size_t n = tio__plan_count(p);
    const tio_container *c = tio__plan_container(p);
    st_order o;
    int rc = st_prepare(p, &o, err);
    if (rc) return rc;
    const st_wsort *ws = o.ws;
    st_buf b = {0};
    sb_put(&b, "{", 1);
    int first = 1;
    if (!c->meta.count && !(tio__plan_flags(p) & TIO_SAVE_DROP_METADATA) && c->format &&
        strcmp(c->format, ST) == 0 && tio__kv_get(&c->props, "empty_metadata")) {
        sb_str(&b, "\"__metadata__\":{}"); /* the source's Some(empty map) */
        first = 0;
    }
    if (c->meta.count && !(tio__plan_flags(p) & TIO_SAVE_DROP_METADATA)) {
        /* the reference writes a HashMap in random order; sorted here */
        const char **keys = malloc(c->meta.count * sizeof *keys);
        if (!keys) {
            st_order_free(&o);
            return tio__nomem(err, ST);
        }
        for (size_t i = 0; i < c->meta.count; i++) keys[i] = c->meta.keys[i];
        qsort(keys, c->meta.count, sizeof *keys, st_keycmp);
        sb_str(&b, "\"__metadata__\":{");
        for (size_t i = 0; i < c->meta.count; i++) {
            if (i) sb_put(&b, ",", 1);
            sb_json(&b, keys[i]);
            sb_put(&b, ":", 1);
            sb_json(&b, tio__kv_get(&c->meta, keys[i]));
        }
        sb_put(&b, "}", 1);
        free(keys);
        first = 0;
    }
    uint64_t off = 0;
    for (size_t k = 0; k < n; k++) {
        const tio_wtensor *w = tio__plan_tensor(p, ws[k].index);
        if (!first) sb_put(&b, ",", 1);
        first = 0;
        sb_json(&b, ws[k].name);
        sb_str(&b, ":{\"dtype\":\"");
        sb_str(&b, st_dtypes[ws[k].rank].name);
        sb_str(&b, "\",\"shape\":[");
        for (size_t d = 0; d < w->rank; d++) {
            if (d) sb_put(&b, ",", 1);
            sb_u64(&b, (uint64_t)w->shape[d]);
        }
        sb_str(&b, "],\"data_offsets\":[");
        sb_u64(&b, off);
        sb_put(&b, ",", 1);
        if (tio__add64_ovf(off, w->nbytes, &off)) {
            free(b.p);
            st_order_free(&o);
            return tio__err(err, TIO_E_OVERFLOW, ST, -1, "the byte buffer overflows 64 bits");
        }
        sb_u64(&b, off);
        sb_str(&b, "]}");
    }
    sb_put(&b, "}", 1);
    while (!b.oom && b.len % 8) sb_put(&b, " ", 1);
    if (b.oom) rc = tio__nomem(err, ST);
    if (!rc && b.len > ST_MAX_HEADER)
        rc = tio__err(err, TIO_E_LIMIT, ST, -1,
                      "the header would be %zu bytes, above safetensors' limit of %" PRIu64
                      " (the reference refuses to write it: HeaderTooLarge)",
                      b.len, ST_MAX_HEADER);
    uint8_t hs[8];
    tio__st64(hs, (uint64_t)b.len);
    if (!rc) rc = tio__sink_write(s, hs, sizeof hs, err);
    if (!rc) rc = tio__sink_write(s, b.p, b.len, err);
    free(b.p);
    for (size_t k = 0; k < n && !rc; k++) rc = tio__plan_sink_tensor(p, s, ws[k].index, err);
    st_order_free(&o);
    return rc;
}

/* The header's extent, for a remote source: the size field and the JSON
 * after it (the tensors' bytes are only viewed). */
static void st_head(const uint8_t *data, size_t have, uint64_t size, const tio_limits *limits,
                    uint64_t *need) {
    if (have < 8) {
        *need = 8;
        return;
    }
    uint64_t n = tio__ld64(data);
    /* past the limits read() fails on the size field alone */
    *need = n > size - 8 || n > ST_MAX_HEADER || n > limits->max_header_bytes ? have : 8 + n;
}

/* ------------------------------------------------------------- descriptor */

extern const tio_format_desc tio__format_safetensors;
const tio_format_desc tio__format_safetensors = {
    .name = "safetensors",
    .description = "Hugging Face safetensors (JSON header + byte buffer)",
    .extensions = ".safetensors",
    .caps = TIO_CAP_NAMES | TIO_CAP_METADATA | TIO__CAP_ONE_COPY,
    .dtypes = TIO_DTYPE_BIT(TIO_BOOL) | TIO_DTYPE_BIT(TIO_INT8) | TIO_DTYPE_BIT(TIO_INT16) |
              TIO_DTYPE_BIT(TIO_INT32) | TIO_DTYPE_BIT(TIO_INT64) | TIO_DTYPE_BIT(TIO_UINT8) |
              TIO_DTYPE_BIT(TIO_UINT16) | TIO_DTYPE_BIT(TIO_UINT32) |
              TIO_DTYPE_BIT(TIO_UINT64) | TIO_DTYPE_BIT(TIO_FLOAT16) |
              TIO_DTYPE_BIT(TIO_BFLOAT16) | TIO_DTYPE_BIT(TIO_FLOAT32) |
              TIO_DTYPE_BIT(TIO_FLOAT64) | TIO_DTYPE_BIT(TIO_FLOAT8_E4M3FN) |
              TIO_DTYPE_BIT(TIO_FLOAT8_E5M2) | TIO_DTYPE_BIT(TIO_COMPLEX64),
    .probe = st_probe,
    .read = st_read,
    .head = st_head,
    .check = st_check,
    .write = st_write,
};
