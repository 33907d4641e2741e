/*
 * NumPy .npy — one array (numpy/lib/format.py is the spec).
 *
 *   "\x93NUMPY" | u8 major | u8 minor | header length (u16 LE in 1.0, u32 LE
 *   in 2.0 and 3.0) | the header: a Python dict literal
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with
 *   spaces and ended by '\n' | the array's bytes.
 *
 * The header is parsed as the restricted literal it is (no eval): a dict of
 * exactly the three keys, string descr of a simple type, bool, tuple of
 * non-negative ints. Big-endian data and Fortran-order arrays are copied at
 * open into little-endian C order; data at an unaligned address are copied
 * to aligned memory. The writer writes what np.save writes, byte for byte.
 * docs/formats/npy.md.
 */
#include "formats/npy.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPY "npy"
#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6u
#define NPY_ALIGN 64u
#define NPY_GROWTH_DIGITS 21u /* format.py's GROWTH_AXIS_MAX_DIGITS */

static int64_t npy_off(uint64_t v) { return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v; }

static int npy_probe(const uint8_t *data, size_t size) {
    if (!data || size < NPY_MAGIC_LEN || memcmp(data, NPY_MAGIC, NPY_MAGIC_LEN) != 0) return 0;
    return 100;
}

/* ------------------------------------------------------------------ dtypes */

typedef struct npy_type {
    char kind; /* b i u f c */
    unsigned size;
    tio_dtype dtype;
} npy_type;

static const npy_type npy_types[] = {
    {'b', 1, TIO_BOOL},    {'i', 1, TIO_INT8},    {'i', 2, TIO_INT16},   {'i', 4, TIO_INT32},
    {'i', 8, TIO_INT64},   {'u', 1, TIO_UINT8},   {'u', 2, TIO_UINT16},  {'u', 4, TIO_UINT32},
    {'u', 8, TIO_UINT64},  {'f', 2, TIO_FLOAT16}, {'f', 4, TIO_FLOAT32}, {'f', 8, TIO_FLOAT64},
    {'c', 8, TIO_COMPLEX64}, {'c', 16, TIO_COMPLEX128},
};
#define NPY_NTYPES (sizeof npy_types / sizeof npy_types[0])

tio_dtype tio__npy_kind_dtype(char kind, unsigned size) {
    for (size_t k = 0; k < NPY_NTYPES; k++)
        if (npy_types[k].kind == kind && npy_types[k].size == size) return npy_types[k].dtype;
    return TIO_DTYPE_INVALID;
}

/* ------------------------------------------------------------- the header */

typedef struct npy_reader {
    tio_read_ctx *ctx;
    tio_error *err;
    const uint8_t *h;
    size_t n, pos;
    uint64_t base; /* file offset of h[0] */
    const char *fmt; /* format name for messages ("npy", or "npz" for a member) */
    int taken;       /* the tensor took src->owned */
    unsigned major;
    char str[64];  /* the last string literal (cut) */
    size_t slen;   /* its full length */
    int64_t *dims;
    size_t rank, dims_cap;
} npy_reader;

static int64_t npy_at(const npy_reader *r, size_t i) { return npy_off(r->base + i); }

static void npy_ws(npy_reader *r) {
    while (r->pos < r->n) {
        uint8_t c = r->h[r->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f') break;
        r->pos++;
    }
}

static int npy_syntax(npy_reader *r, const char *expected) {
    char found[24];
    if (r->pos >= r->n)
        snprintf(found, sizeof found, "the end of the header");
    else if (r->h[r->pos] >= 0x20 && r->h[r->pos] < 0x7f)
        snprintf(found, sizeof found, "'%c'", (char)r->h[r->pos]);
    else
        snprintf(found, sizeof found, "byte 0x%02x", r->h[r->pos]);
    return tio__err(r->err, TIO_E_CORRUPT, r->fmt, npy_at(r, r->pos),
                    "header: expected %s, found %s (the header is a Python dict literal)",
                    expected, found);
}

static int npy_expect(npy_reader *r, uint8_t ch, const char *expected) {
    npy_ws(r);
    if (r->pos < r->n && r->h[r->pos] == ch) {
        r->pos++;
        return TIO_OK;
    }
    return npy_syntax(r, expected);
}

/* A single- or double-quoted Python string without a prefix, into r->str. */
static int npy_string(npy_reader *r, const char *what) {
    npy_ws(r);
    if (r->pos >= r->n || (r->h[r->pos] != '\'' && r->h[r->pos] != '"'))
        return npy_syntax(r, what);
    uint8_t q = r->h[r->pos];
    size_t at = r->pos;
    if (r->n - r->pos >= 3 && r->h[r->pos + 1] == q && r->h[r->pos + 2] == q)
        return tio__err(r->err, TIO_E_UNSUPPORTED, r->fmt, npy_at(r, at),
                        "header: a triple-quoted string (np.save writes '...')");
    r->pos++;
    r->slen = 0;
    for (;;) {
        if (r->pos >= r->n || r->h[r->pos] == '\n')
            return tio__err(r->err, TIO_E_CORRUPT, r->fmt, npy_at(r, at),
                            "header: %s is not terminated", what);
        uint8_t c = r->h[r->pos++];
        if (c == q) break;
        if (c == '\\') {
            if (r->pos >= r->n) continue;
            uint8_t e = r->h[r->pos++];
            switch (e) {
            case '\\': case '\'': case '"': c = e; break;
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            default:
                return tio__err(r->err, TIO_E_UNSUPPORTED, r->fmt, npy_at(r, r->pos - 2),
                                "header: escape '\\%c' in %s (np.save writes none)",
                                e >= 0x20 && e < 0x7f ? (char)e : '?', what);
            }
        }
        if (r->slen + 1 < sizeof r->str) r->str[r->slen] = (char)c;
        r->slen++;
    }
    r->str[r->slen < sizeof r->str ? r->slen : sizeof r->str - 1] = 0;
    npy_ws(r);
    if (r->pos < r->n && (r->h[r->pos] == '\'' || r->h[r->pos] == '"'))
        return tio__err(r->err, TIO_E_UNSUPPORTED, r->fmt, npy_at(r, r->pos),
                        "header: adjacent string literals (np.save writes one)");
    return TIO_OK;
}

/* A Python int >= 0 (decimal; the 'L' of Python 2 headers in 1.0/2.0). */
static int npy_int(npy_reader *r, uint64_t *out) {
    npy_ws(r);
    size_t at = r->pos;
    int neg = 0;
    if (r->pos < r->n && (r->h[r->pos] == '-' || r->h[r->pos] == '+')) {
        neg = r->h[r->pos] == '-';
        r->pos++;
        npy_ws(r);
    }
    size_t d0 = r->pos;
    uint64_t v = 0;
    int ovf = 0;
    while (r->pos < r->n && ((r->h[r->pos] >= '0' && r->h[r->pos] <= '9') ||
                             (r->h[r->pos] == '_' && r->pos > d0))) {
        uint8_t c = r->h[r->pos++];
        if (c == '_') continue;
        if (tio__mul64_ovf(v, 10, &v) || tio__add64_ovf(v, (uint64_t)(c - '0'), &v)) ovf = 1;
    }
    if (r->pos == d0) {
        r->pos = at;
        return npy_syntax(r, "an integer (a dim of the shape)");
    }
    if (r->h[d0] == '0' && v != 0)
        return tio__err(r->err, TIO_E_CORRUPT, r->fmt, npy_at(r, d0),
                        "header: an integer with a leading zero (not a Python literal)");
    if (r->major < 3 && r->pos < r->n && (r->h[r->pos] == 'L' || r->h[r->pos] == 'l'))
        r->pos++; /* Python 2's long, which format.py filters out */
    if (r->pos < r->n && (r->h[r->pos] == '.' || r->h[r->pos] == 'e' || r->h[r->pos] == 'E' ||
                          r->h[r->pos] == 'x' || r->h[r->pos] == 'j'))
        return tio__err(r->err, TIO_E_CORRUPT, r->fmt, npy_at(r, at),
                        "header: shape holds a number that is not a decimal integer");
    if (ovf || v > (uint64_t)INT64_MAX)
        return tio__err(r->err, TIO_E_OVERFLOW, r->fmt, npy_at(r, at),
                        "header: a dim of the shape does not fit in int64");
    if (neg && v)
        return tio__err(r->err, TIO_E_CORRUPT, r->fmt, npy_at(r, at),
                        "header: a dim of the shape is negative (expected sizes >= 0)");
    *out = v;
    return TIO_OK;
}

static int npy_shape(npy_reader *r) {
    npy_ws(r);
    size_t at = r->pos;
    if (r->pos >= r->n || r->h[r->pos] != '(') {
        if (r->pos < r->n && r->h[r->pos] == '[')
            return tio__err(r->err, TIO_E_CORRUPT, r->fmt, npy_at(r, at),
                            "header: shape is a list (expected a tuple of ints, as numpy "
                            "requires)");
        return npy_syntax(r, "'(' (shape is a tuple of ints)");
    }
    r->pos++;
    r->rank = 0;
    int comma = 0;
    for (;;) {
        npy_ws(r);
        if (r->pos < r->n && r->h[r->pos] == ')') {
            r->pos++;
            break;
        }
        if (r->rank && !comma) return npy_syntax(r, "',' or ')'");
        uint64_t d = 0;
        int rc = npy_int(r, &d);
        if (rc) return rc;
        if (r->rank >= r->ctx->limits.max_rank)
            return tio__err(r->err, TIO_E_LIMIT, r->fmt, npy_at(r, at),
                            "header: rank above the limit (max_rank %" PRIu32 ")",
                            r->ctx->limits.max_rank);
        if (r->rank == r->dims_cap) {
            size_t nc = r->dims_cap ? r->dims_cap * 2 : 8;
            int64_t *nd = realloc(r->dims, nc * sizeof *nd);
            if (!nd) return tio__nomem(r->err, r->fmt);
            r->dims = nd;
            r->dims_cap = nc;
        }
        r->dims[r->rank++] = (int64_t)d;
        npy_ws(r);
        comma = r->pos < r->n && r->h[r->pos] == ',';
        if (comma) r->pos++;
    }
    if (r->rank == 1 && !comma)
        return tio__err(r->err, TIO_E_CORRUPT, r->fmt, npy_at(r, at),
                        "header: shape is '(n)', an int, not a tuple (expected '(n,)')");
    return TIO_OK;
}

static int npy_bool(npy_reader *r, int *out) {
    npy_ws(r);
    if (r->n - r->pos >= 4 && memcmp(r->h + r->pos, "True", 4) == 0) {
        r->pos += 4;
        *out = 1;
    } else if (r->n - r->pos >= 5 && memcmp(r->h + r->pos, "False", 5) == 0) {
        r->pos += 5;
        *out = 0;
    } else {
        return npy_syntax(r, "True or False (fortran_order is a bool)");
    }
    return TIO_OK;
}

typedef struct npy_header {
    const npy_type *type;
    char str;        /* 'S' (bytes) or 'U' (UTF-32) strings of str_width units; type NULL */
    uint32_t str_width;
    int big;     /* '>' data */
    int fortran; /* fortran_order True */
    char descr[64];
} npy_header;

static int npy_descr(npy_reader *r, npy_header *hd) {
    npy_ws(r);
    size_t at = r->pos;
    if (r->pos < r->n && r->h[r->pos] == '[')
        return tio__err(r->err, TIO_E_UNSUPPORTED, r->fmt, npy_at(r, at),
                        "header: descr is a list: a structured dtype (record fields), which "
                        "tensio does not read (expected a simple dtype such as '<f4')");
    int rc = npy_string(r, "a string (descr, the dtype)");
    if (rc) return rc;
    char esc[64]; /* the descr for messages, escaped when one is written */
#define NPY_ESC (tio__escape((const uint8_t *)r->str, strlen(r->str), esc, sizeof esc), esc)
    size_t dl = strlen(r->str);
    if (dl >= sizeof hd->descr) dl = sizeof hd->descr - 1; /* as snprintf cut it */
    memcpy(hd->descr, r->str, dl);
    hd->descr[dl] = '\0';
    const char *s = r->str;
    char order = '=';
    if (*s == '<' || *s == '>' || *s == '|' || *s == '=') order = *s++;
    char kind = *s ? *s++ : 0;
    unsigned size = 0;
    int digits = 0;
    while (*s >= '0' && *s <= '9' && size < 1000) {
        size = size * 10 + (unsigned)(*s++ - '0');
        digits++;
    }
    int tail = *s != 0 || r->slen >= sizeof r->str;
    if (kind == 'O')
        return tio__err(r->err, TIO_E_UNSUPPORTED, r->fmt, npy_at(r, at),
                        "header: descr '%s' is an object array (pickled Python objects), which "
                        "tensio refuses to read",
                        NPY_ESC);
    if (kind == 'V' && !tail)
        return tio__err(r->err, TIO_E_UNSUPPORTED, r->fmt, npy_at(r, at),
                        "header: descr '%s' is a void/structured dtype, which tensio does not "
                        "read",
                        NPY_ESC);
    if ((kind == 'S' || kind == 'U') && (order == '<' || order == '>' || order == '|') &&
        r->slen < sizeof r->str) {
        /* fixed-width strings: NumPy's widths go past the loop's 9999 */
        uint64_t width = 0;
        const char *w = r->str + 2;
        while (*w >= '0' && *w <= '9' && width <= UINT32_MAX) width = width * 10 + (uint64_t)(*w++ - '0');
        /* NumPy's item size is an int: S up to 2^31 - 1 bytes, U a quarter */
        uint64_t most = kind == 'U' ? INT32_MAX / 4 : INT32_MAX;
        if (!*w && w > r->str + 2 && width >= 1 && width <= most &&
            (kind == 'U' || order == '|')) {
            hd->str = kind;
            hd->str_width = (uint32_t)width;
            hd->big = order == '>';
            return TIO_OK;
        }
    }
    if (!tail && digits) {
        for (size_t k = 0; k < NPY_NTYPES; k++)
            if (npy_types[k].kind == kind && npy_types[k].size == size) hd->type = &npy_types[k];
    }
    if (!hd->type) {
        const char *what = kind == 'c'   ? "complex numbers of that size"
                           : kind == 'S' || kind == 'U' ? "strings of no width tensio reads"
                           : kind == 'M' || kind == 'm' ? "datetimes"
                           : kind == 'f' ? "a float of that size"
                                         : "not a dtype tensio knows";
        return tio__err(r->err, TIO_E_DTYPE, r->fmt, npy_at(r, at),
                        "header: descr '%s' (%s) has no tensio dtype (expected b1, i1..i8, "
                        "u1..u8, f2, f4, f8, c8, c16, |S<n> or <U<n> with byte order '<', '>' or '|')",
                        NPY_ESC, what);
    }
    hd->big = order == '>' && size > 1;
    return TIO_OK;
#undef NPY_ESC
}

static int npy_dict(npy_reader *r, npy_header *hd) {
    int seen[3] = {0, 0, 0};
    int rc = npy_expect(r, '{', "'{' (the header is a dict)");
    if (rc) return rc;
    for (;;) {
        npy_ws(r);
        if (r->pos < r->n && r->h[r->pos] == '}') {
            r->pos++;
            break;
        }
        size_t kat = r->pos;
        rc = npy_string(r, "a key or '}'");
        if (rc) return rc;
        int k = strcmp(r->str, "descr") == 0           ? 0
                : strcmp(r->str, "fortran_order") == 0 ? 1
                : strcmp(r->str, "shape") == 0         ? 2
                                                       : -1;
        if (k < 0 || r->slen >= sizeof r->str) {
            char esc[64];
            tio__escape((const uint8_t *)r->str, strlen(r->str), esc, sizeof esc);
            return tio__err(r->err, TIO_E_CORRUPT, r->fmt, npy_at(r, kat),
                            "header: key '%s' (numpy requires exactly descr, fortran_order "
                            "and shape)",
                            esc);
        }
        if (seen[k]++)
            return tio__err(r->err, TIO_E_CORRUPT, r->fmt, npy_at(r, kat),
                            "header: key '%s' twice (numpy keeps the last; tensio refuses it)",
                            r->str);
        rc = npy_expect(r, ':', "':'");
        if (rc) return rc;
        if (k == 0) rc = npy_descr(r, hd);
        if (k == 1) rc = npy_bool(r, &hd->fortran);
        if (k == 2) rc = npy_shape(r);
        if (rc) return rc;
        npy_ws(r);
        if (r->pos < r->n && r->h[r->pos] == ',') {
            r->pos++;
            continue;
        }
        rc = npy_expect(r, '}', "',' or '}'");
        if (rc) return rc;
        break;
    }
    if (!seen[0] || !seen[1] || !seen[2])
        return tio__err(r->err, TIO_E_CORRUPT, r->fmt, npy_at(r, 0),
                        "header: key '%s' is missing (numpy requires descr, fortran_order "
                        "and shape)",
                        !seen[0] ? "descr" : !seen[1] ? "fortran_order" : "shape");
    npy_ws(r);
    if (r->pos < r->n) return npy_syntax(r, "only whitespace after the dict");
    return TIO_OK;
}

/* ------------------------------------------------------------------- read */

/* dst (C order, little-endian) from src (the file's order; swap: the bytes
 * reversed for '>' data, 0 for none). */
static void npy_reorder(const uint8_t *src, uint8_t *dst, const int64_t *dims, size_t rank,
                        uint64_t numel, size_t es, int fortran, size_t swap, int64_t *idx,
                        uint64_t *stride) {
    if (fortran && rank > 1) {
        /* F-order strides in elements: dim 0 varies fastest */
        uint64_t s = 1;
        for (size_t k = 0; k < rank; k++) {
            stride[k] = s;
            s *= (uint64_t)dims[k];
            idx[k] = 0;
        }
    }
    uint64_t off = 0; /* element offset in src */
    for (uint64_t e = 0; e < numel; e++) {
        uint64_t from = fortran && rank > 1 ? off : e;
        const uint8_t *p = src + from * es;
        uint8_t *q = dst + e * es;
        memcpy(q, p, es);
        tio__swap_units(q, es, swap); /* '>' data: each part of a complex on its own */
        if (fortran && rank > 1) {
            /* the next C-order index: the last dim varies fastest */
            for (size_t k = rank; k-- > 0;) {
                idx[k]++;
                off += stride[k];
                if (idx[k] < dims[k]) break;
                off -= stride[k] * (uint64_t)dims[k];
                idx[k] = 0;
            }
        }
    }
}

/* A string array (|S<n> bytes, <U<n> / >U<n> UTF-32) of numel elements of
 * es bytes at d into a TIO_STRING tensor: trailing NULs stripped, as NumPy
 * does; UTF-32 code points as UTF-8, one that is no Unicode scalar value
 * (a surrogate, past U+10FFFF) refused. A Fortran-order array is put in C
 * order first. The layout is bounded by max_dense_bytes (its offsets take
 * 8 bytes a string). */
static int npy_strings(npy_reader *r, const npy_header *hd, const uint8_t *d, size_t nbytes,
                       uint64_t numel, size_t es, int64_t at, const tio__npy_src *src) {
    tio_read_ctx *ctx = r->ctx;
    uint8_t *c_order = NULL, *u8 = NULL;
    if (hd->fortran && r->rank > 1 && numel > 1) {
        c_order = malloc(nbytes);
        int64_t *idx = calloc(r->rank, sizeof *idx);
        uint64_t *stride = calloc(r->rank, sizeof *stride);
        if (c_order && idx && stride)
            npy_reorder(d, c_order, r->dims, r->rank, numel, es, 1, 0, idx, stride);
        free(idx);
        free(stride);
        if (!c_order || !idx || !stride) {
            free(c_order);
            return tio__nomem(r->err, r->fmt);
        }
        d = c_order;
    }
    tio_strbuild b;
    int rc = tio__strbuild_init(&b, numel, ctx->limits.max_dense_bytes, r->fmt, at, r->err);
    if (!rc && hd->str == 'U' && !(u8 = malloc((size_t)hd->str_width * 4)))
        rc = tio__nomem(r->err, r->fmt);
    for (uint64_t i = 0; !rc && i < numel; i++) {
        const uint8_t *e = d + i * es;
        size_t n = es;
        if (hd->str == 'S') {
            while (n && !e[n - 1]) n--;
            rc = tio__strbuild_add(&b, e, n, r->err);
            continue;
        }
        size_t units = hd->str_width, o = 0;
        uint32_t cp = 0;
        while (units && !(hd->big ? tio__ld32be(e + 4 * (units - 1)) : tio__ld32(e + 4 * (units - 1))))
            units--;
        for (size_t k = 0; k < units; k++) {
            cp = hd->big ? tio__ld32be(e + 4 * k) : tio__ld32(e + 4 * k);
            if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) break;
            o += tio__utf8_put(u8 + o, cp);
            cp = 0;
        }
        if (cp)
            rc = tio__err(r->err, TIO_E_CORRUPT, r->fmt, at + (int64_t)(i * es),
                          "string %llu: code point 0x%lx is not a Unicode scalar value (a "
                          "surrogate or past U+10FFFF), which UTF-8 cannot hold",
                          (unsigned long long)i, (unsigned long)cp);
        else
            rc = tio__strbuild_add(&b, u8, o, r->err);
    }
    free(u8);
    free(c_order);
    if (!rc) rc = tio__strbuild_finish(&b, r->err);
    tio_tensor *t = NULL;
    if (!rc) {
        tio_tensor_desc td = {src->name, TIO_STRING, r->rank, r->dims, TIO_LAYOUT_DENSE,
                              b.buf, b.len, 0, NULL};
        rc = tio_container_add(ctx->c, &td, TIO_ADD_BORROW, &t, r->err);
    }
    if (rc) {
        tio__strbuild_free(&b);
        return rc;
    }
    t->owned_data = b.buf;
    t->source_offset = src->owned ? src->source_offset : at;
    return TIO_OK;
}

static int npy_read_all(npy_reader *r, const uint8_t *d, size_t size, const tio__npy_src *src) {
    tio_read_ctx *ctx = r->ctx;
    uint64_t fb = src->base; /* file offset of d[0] */
    const uint8_t *data = d; /* the views: into the input */
    if (src->head && src->head_n >= 12 && src->head_n <= size) {
        /* the header from the copy when the copy holds all of it */
        const uint8_t *h = src->head;
        uint64_t end = h[6] == 1 ? 10u + (uint64_t)tio__ld16(h + 8) : 12u + tio__ld32(h + 8);
        if (end <= src->head_n) d = h;
    }
#define AT(x) npy_off(fb + (uint64_t)(x))
    if (size < NPY_MAGIC_LEN + 2)
        return tio__err(r->err, TIO_E_TRUNCATED, r->fmt, AT(0),
                        "the magic and version need 8 bytes, found %zu", size);
    if (memcmp(d, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
        return tio__err(r->err, TIO_E_MAGIC, r->fmt, AT(0),
                        "the file does not start with \\x93NUMPY (expected the .npy magic)");
    unsigned major = d[6], minor = d[7];
    if ((major != 1 && major != 2 && major != 3) || minor != 0)
        return tio__err(r->err, TIO_E_UNSUPPORTED, r->fmt, AT(6),
                        "format version %u.%u (expected 1.0, 2.0 or 3.0)", major, minor);
    r->major = major;
    size_t lenbytes = major == 1 ? 2 : 4;
    if (size < 8 + lenbytes)
        return tio__err(r->err, TIO_E_TRUNCATED, r->fmt, AT(8),
                        "the header length needs %zu bytes, found %zu", lenbytes, size - 8);
    uint64_t hlen = major == 1 ? tio__ld16(d + 8) : tio__ld32(d + 8);
    if (hlen > ctx->limits.max_header_bytes)
        return tio__err(r->err, TIO_E_LIMIT, r->fmt, AT(8),
                        "the header is %" PRIu64 " bytes, above the limit (max_header_bytes %"
                        PRIu64 ")",
                        hlen, ctx->limits.max_header_bytes);
    uint64_t hstart = 8 + lenbytes;
    if (hlen > size - hstart)
        return tio__err(r->err, TIO_E_TRUNCATED, r->fmt, AT(hstart),
                        "the header is %" PRIu64 " bytes, but only %zu follow its length field",
                        hlen, size - (size_t)hstart);
    r->h = d + hstart;
    r->n = (size_t)hlen;
    r->base = fb + hstart;
    if (major == 3) {
        /* UTF-8 in 3.0; the dict itself is ASCII (checked as parsed) */
        for (size_t i = 0; i < r->n; i++)
            if (r->h[i] >= 0x80) {
                size_t k = r->h[i] >= 0xF0 ? 4 : r->h[i] >= 0xE0 ? 3 : r->h[i] >= 0xC0 ? 2 : 0;
                int ok = k && r->n - i >= k;
                for (size_t j = 1; ok && j < k; j++) ok = (r->h[i + j] & 0xC0) == 0x80;
                if (!ok)
                    return tio__err(r->err, TIO_E_CORRUPT, r->fmt, npy_at(r, i),
                                    "header: not valid UTF-8 (format 3.0 headers are UTF-8)");
                i += k - 1;
            }
    }
    npy_header hd;
    memset(&hd, 0, sizeof hd);
    int rc = npy_dict(r, &hd);
    if (rc) return rc;
    if (r->n == 0 || r->h[r->n - 1] != '\n') {
        rc = tio__warn(ctx, r->fmt, AT(hstart + hlen), r->err,
                       "the header does not end with '\\n' (np.save ends it so)");
        if (rc) return rc;
    }

    size_t es = hd.str ? (size_t)hd.str_width * (hd.str == 'U' ? 4u : 1u) : hd.type->size;
    size_t nbytes = 0;
    uint64_t numel = 0;
    rc = tio__shape_size(r->dims, r->rank, es, &numel, &nbytes, r->fmt, AT(hstart), r->err);
    if (rc) return rc;
    uint64_t data_at = hstart + hlen, avail = size - data_at;
    if (avail < nbytes) {
        char shape[96];
        tio__shape_str(r->dims, r->rank, shape, sizeof shape);
        return tio__err(r->err, TIO_E_TRUNCATED, r->fmt, AT(data_at),
                        "the data of shape %s '%s' need %zu bytes, found %" PRIu64, shape,
                        hd.descr, nbytes, avail);
    }
    if (avail > nbytes) {
        rc = tio__warn(ctx, r->fmt, AT(data_at + nbytes), r->err,
                       "%" PRIu64 " trailing bytes after the array's %zu (np.load ignores "
                       "them)",
                       avail - nbytes, nbytes);
        if (rc) return rc;
    }
    if (hd.str) {
        rc = npy_strings(r, &hd, data + data_at, nbytes, numel, es, AT(data_at), src);
        if (rc || !src->props) return rc;
        goto props;
    }
    tio_tensor_desc td;
    memset(&td, 0, sizeof td);
    td.name = src->name;
    td.dtype = hd.type->dtype;
    td.rank = r->rank;
    td.shape = r->dims;
    td.layout = TIO_LAYOUT_DENSE;
    td.data = data + data_at;
    td.nbytes = nbytes;
    tio_tensor *t = NULL;
    if (src->owned) {
        /* the data lie in the caller's buffer, which the tensor takes below */
        rc = tio_container_add(ctx->c, &td, TIO_ADD_BORROW, &t, r->err);
        if (rc) return rc;
        t->source_offset = src->source_offset;
    } else {
        rc = tio__container_add_view(ctx->c, &td, AT(data_at), r->fmt, r->err);
        if (rc) return rc;
        t = ctx->c->tensors[ctx->c->count - 1];
    }
#undef AT
    int transpose = hd.fortran && r->rank > 1 && numel > 1;
    if (nbytes && (hd.big || transpose) && !src->owned) {
        /* a view of the file's bytes read in C order, little-endian, on the
         * way out (tio_strided): open stays O(1) in the array's size */
        size_t rank = r->rank;
        tio_strided *sv =
            tio__container_chunk(ctx->c, sizeof *sv + (rank ? rank : 1) * sizeof sv->stride[0]);
        if (!sv) return tio__nomem(r->err, r->fmt);
        sv->base = t->data;
        sv->swap = hd.big ? tio__dtype_swap_unit(hd.type->dtype) : 0;
        uint64_t step = 1; /* <= numel: the products of the dims fit */
        for (size_t k = 0; k < rank; k++) {
            size_t j = transpose ? k : rank - 1 - k; /* F order: dim 0 varies fastest */
            sv->stride[j] = (int64_t)step;
            step *= (uint64_t)r->dims[j];
        }
        t->strided = sv;
        t->data = NULL;
        t->unaligned = 0;
    } else if (nbytes && (hd.big || transpose)) {
        /* decoded into memory already (a deflated .npz member): a C-order
         * little-endian copy, made once at open */
        uint8_t *buf = malloc(nbytes);
        int64_t *idx = calloc(r->rank ? r->rank : 1, sizeof *idx);
        uint64_t *stride = calloc(r->rank ? r->rank : 1, sizeof *stride);
        if (!buf || !idx || !stride) {
            free(buf);
            free(idx);
            free(stride);
            return tio__nomem(r->err, r->fmt);
        }
        npy_reorder(data + data_at, buf, r->dims, r->rank, numel, es, transpose,
                    hd.big ? tio__dtype_swap_unit(hd.type->dtype) : 0, idx,
                    stride);
        free(idx);
        free(stride);
        t->owned_data = buf;
        t->data = buf;
    } else if (nbytes && es > 1 && (uintptr_t)t->data % es) {
        t->unaligned = 1; /* an aligned copy when tio_tensor_data asks, not at open */
    } else if (src->owned) {
        t->owned_data = src->owned; /* the view into it stays valid */
        r->taken = 1;
    }
    if (!src->props) return TIO_OK;
props:;
    char v[24];
    tio_kv *props = &ctx->c->props;
    snprintf(v, sizeof v, "%u.0", major);
    rc = tio__kv_set(props, "version", v, r->err);
    if (!rc) rc = tio__kv_set(props, "descr", hd.descr, r->err);
    if (!rc) rc = tio__kv_set(props, "fortran_order", hd.fortran ? "True" : "False", r->err);
    snprintf(v, sizeof v, "%" PRIu64, data_at);
    if (!rc) rc = tio__kv_set(props, "data_offset", v, r->err);
    return rc;
}

int tio__npy_read_array(tio_read_ctx *ctx, const uint8_t *data, size_t size,
                        const tio__npy_src *src, tio_error *err) {
    npy_reader r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.err = err;
    r.fmt = src->format;
    int rc = npy_read_all(&r, data, size, src);
    free(r.dims);
    if (src->owned && !r.taken) free(src->owned);
    return rc;
}

static int npy_read(tio_read_ctx *ctx, tio_error *err) {
    tio__npy_src src;
    memset(&src, 0, sizeof src);
    src.format = NPY;
    src.props = 1;
    return tio__npy_read_array(ctx, ctx->data, ctx->size, &src, err);
}

/* ------------------------------------------------------------------ write */

const char *tio__npy_descr(tio_dtype d) {
    switch (d) {
    case TIO_BOOL: return "|b1";
    case TIO_INT8: return "|i1";
    case TIO_UINT8: return "|u1";
    case TIO_INT16: return "<i2";
    case TIO_UINT16: return "<u2";
    case TIO_INT32: return "<i4";
    case TIO_UINT32: return "<u4";
    case TIO_INT64: return "<i8";
    case TIO_UINT64: return "<u8";
    case TIO_FLOAT16: return "<f2";
    case TIO_FLOAT32: return "<f4";
    case TIO_FLOAT64: return "<f8";
    case TIO_COMPLEX64: return "<c8";
    case TIO_COMPLEX128: return "<c16";
    default: return NULL;
    }
}

/* Whether string s (n bytes) can be a NumPy U element: UTF-8, its last
 * character not U+0000 (which NumPy strips); *chars: its characters. */
static int npy_u_fits(const uint8_t *s, size_t n, uint64_t *chars) {
    if (tio__utf8_bad(s, n) != n || (n && !s[n - 1])) return 0;
    uint64_t c = 0;
    for (size_t k = 0; k < n; k++) c += (s[k] & 0xC0) != 0x80;
    *chars = c;
    return 1;
}

int tio__npy_strings(const tio_write_plan *p, size_t i, const char *format, char descr[32],
                     uint8_t **out, size_t *out_n, tio_error *err) {
    const tio_wtensor *w = tio__plan_tensor(p, i);
    const tio_tensor *t = w->src;
    uint64_t width = 1, bwidth = 1, lossy = UINT64_MAX;
    const char *want = tio__plan_option(p, "strings");
    int u = !want || strcmp(want, "U") == 0;
    for (uint64_t k = 0; k < t->numel; k++) {
        const uint8_t *e;
        size_t n;
        uint64_t chars = 0;
        tio__string_at(t, k, &e, &n);
        if (u && !npy_u_fits(e, n, &chars)) {
            if (want) /* asked for U */
                return tio__err(err, TIO_E_LOSSY, format, -1,
                                "tensor %zu: string %llu is not UTF-8 text, which NumPy's U "
                                "strings cannot hold (strings=S writes bytes)",
                                i, (unsigned long long)k);
            u = 0;
        }
        if (chars > width) width = chars;
        if (n > bwidth) bwidth = n;
        if (n && !e[n - 1] && lossy == UINT64_MAX) lossy = k;
    }
    if (lossy != UINT64_MAX)
        return tio__err(err, TIO_E_LOSSY, format, -1,
                        "tensor %zu: string %llu ends with a NUL byte, which NumPy's "
                        "fixed-width strings (S, U) strip",
                        i, (unsigned long long)lossy);
    uint64_t es = u ? width * 4 : bwidth, total;
    uint64_t limit = tio__plan_container(p)->limits.max_dense_bytes;
    if (tio__mul64_ovf(es, t->numel, &total) || total > limit || total > SIZE_MAX)
        return tio__err(err, TIO_E_LIMIT, format, -1,
                        "tensor %zu: %llu strings padded to the longest (%llu bytes each) "
                        "take more than max_dense_bytes %llu",
                        i, (unsigned long long)t->numel, (unsigned long long)es,
                        (unsigned long long)limit);
    snprintf(descr, 32, "%s%llu", u ? "<U" : "|S", (unsigned long long)(u ? width : bwidth));
    uint8_t *buf = calloc(total ? (size_t)total : 1, 1); /* NUL padded */
    if (!buf) return tio__nomem(err, format);
    for (uint64_t k = 0; k < t->numel; k++) {
        const uint8_t *e;
        size_t n, pos = 0;
        tio__string_at(t, k, &e, &n);
        uint8_t *o = buf + k * es;
        if (!u) {
            if (n) memcpy(o, e, n);
            continue;
        }
        while (pos < n) { /* valid UTF-8: checked above */
            uint32_t cp = e[pos];
            size_t len = cp < 0x80 ? 1 : cp < 0xE0 ? 2 : cp < 0xF0 ? 3 : 4;
            cp = len == 1 ? cp : len == 2 ? cp & 0x1F : len == 3 ? cp & 0x0F : cp & 0x07;
            for (size_t q = 1; q < len; q++) cp = cp << 6 | (e[pos + q] & 0x3Fu);
            tio__st32(o, cp);
            o += 4;
            pos += len;
        }
    }
    *out = buf;
    *out_n = (size_t)total;
    return TIO_OK;
}

/* Format option strings=S|U (tio__npy_strings), checked. */
int tio__npy_strings_option(const tio_write_plan *p, const char *format, tio_error *err) {
    const char *v = tio__plan_option(p, "strings");
    if (v && strcmp(v, "S") != 0 && strcmp(v, "U") != 0)
        return tio__err(err, TIO_E_ARGUMENT, format, -1,
                        "option strings=%s (expected S, bytes, or U, UTF-32 text)", v);
    return TIO_OK;
}

static int npy_check(const tio_write_plan *p, tio_error *err) {
    size_t n = tio__plan_count(p);
    if (n != 1)
        return tio__err(err, TIO_E_UNSUPPORTED, NPY, -1,
                        "a .npy file holds exactly one array; the container has %zu tensors "
                        "(write each to its own file)",
                        n);
    const tio_wtensor *w = tio__plan_tensor(p, 0);
    if (!tio__npy_descr(w->dtype) && w->dtype != TIO_STRING)
        return tio__err(err, TIO_E_DTYPE, NPY, -1, "tensor 0: dtype %s has no .npy descr",
                        tio_dtype_name(w->dtype) ? tio_dtype_name(w->dtype) : "?");
    return tio__npy_strings_option(p, NPY, err);
}

/* The header np.save writes: the dict with its keys sorted, the growth
 * spaces for dim 0, then spaces and '\n' up to a multiple of 64 (a full 64
 * when already aligned, as format.py's _wrap_header does). */
int tio__npy_header(const tio_wtensor *w, const char *descr, unsigned version,
                    const char *format, uint8_t **out, size_t *out_len, tio_error *err) {
    if (!descr) descr = tio__npy_descr(w->dtype);
    if (!descr)
        return tio__err(err, TIO_E_DTYPE, format, -1, "dtype %s has no .npy descr",
                        tio_dtype_name(w->dtype) ? tio_dtype_name(w->dtype) : "?");
    size_t cap = 12 + 96 + w->rank * 24 + NPY_GROWTH_DIGITS + NPY_ALIGN + 2;
    uint8_t *buf = malloc(cap);
    if (!buf) return tio__nomem(err, format);
    char *h = (char *)buf + 12; /* the dict; the prefix goes before it */
    size_t len = (size_t)snprintf(h, cap - 12,
                                  "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    char dec[TIO__DEC_CAP];
    size_t first_digits = 0;
    for (size_t k = 0; k < w->rank; k++) {
        const char *v = tio__u64_dec(dec, (uint64_t)w->shape[k]);
        size_t vl = strlen(v);
        if (k == 0) first_digits = vl;
        if (k) {
            memcpy(h + len, ", ", 2);
            len += 2;
        }
        memcpy(h + len, v, vl);
        len += vl;
    }
    if (w->rank == 1) h[len++] = ',';
    memcpy(h + len, "), }", 4);
    len += 4;
    if (w->rank) {
        memset(h + len, ' ', NPY_GROWTH_DIGITS - first_digits);
        len += NPY_GROWTH_DIGITS - first_digits;
    }
    size_t hlen = len + 1; /* with the '\n' */
    if (!version) version = 8 + 2 + hlen + NPY_ALIGN <= 65535 ? 1 : 2;
    size_t prefix = 8 + (version == 1 ? 2u : 4u);
    size_t pad = NPY_ALIGN - (prefix + hlen) % NPY_ALIGN;
    if (version == 1 && hlen + pad > 65535) {
        free(buf);
        return tio__err(err, TIO_E_UNSUPPORTED, format, -1,
                        "the header needs %zu bytes, more than format 1.0's 65535 (write 2.0)",
                        hlen + pad);
    }
    memset(h + len, ' ', pad);
    len += pad;
    h[len++] = '\n';
    uint8_t *pre = buf + 12 - prefix;
    memcpy(pre, NPY_MAGIC, NPY_MAGIC_LEN);
    pre[6] = (uint8_t)version;
    pre[7] = 0;
    if (version == 1) {
        pre[8] = (uint8_t)len;
        pre[9] = (uint8_t)(len >> 8);
    } else {
        tio__st32(pre + 8, (uint32_t)len);
    }
    if (pre != buf) memmove(buf, pre, prefix + len);
    *out = buf;
    *out_len = prefix + len;
    return TIO_OK;
}

static int npy_write(tio_write_plan *p, tio_sink *s, tio_error *err) {
    int rc = npy_check(p, err);
    if (rc) return rc;
    uint8_t *h = NULL, *strs = NULL;
    size_t len = 0, slen = 0;
    char descr[32];
    bool str = tio__plan_tensor(p, 0)->dtype == TIO_STRING;
    if (str) rc = tio__npy_strings(p, 0, NPY, descr, &strs, &slen, err);
    if (!rc)
        rc = tio__npy_header(tio__plan_tensor(p, 0), str ? descr : NULL, tio__plan_version(p),
                             NPY, &h, &len, err);
    if (!rc) rc = tio__sink_write(s, h, len, err);
    free(h);
    if (!rc) rc = str ? tio__sink_write(s, strs, slen, err) : tio__plan_sink_tensor(p, s, 0, err);
    free(strs);
    return rc;
}

/* The header's extent, for a remote source: magic, version, length and the
 * dict. (A big-endian or Fortran-order array is a strided view, whose
 * storage a lazy fetch takes from its base: src/source/remote.c.) */
static void npy_head(const uint8_t *data, size_t have, uint64_t size, const tio_limits *limits,
                     uint64_t *need) {
    (void)limits;
    if (have < 12) {
        *need = 12;
        return;
    }
    uint64_t end = data[6] == 1 ? 10u + (uint64_t)tio__ld16(data + 8) : 12u + tio__ld32(data + 8);
    *need = end > size ? have : end; /* past the size: read() says it is cut */
}

/* ------------------------------------------------------------- descriptor */

extern const tio_format_desc tio__format_npy;
const tio_format_desc tio__format_npy = {
    .name = "npy",
    .description = "NumPy .npy array file (one array), format versions 1.0, 2.0, 3.0",
    .extensions = ".npy",
    .caps = TIO__CAP_ONE_ARRAY, /* the name of a lone tensor is the file's */
    .dtypes = TIO__NPY_DTYPES,
    .versions = (1u << 1) | (1u << 2) | (1u << 3),
    .probe = npy_probe,
    .read = npy_read,
    .head = npy_head,
    .check = npy_check,
    .options = "strings",
    .write = npy_write,
};
