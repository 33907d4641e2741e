/* Element values for tensio diff and stats (see cli_values.h). */
#include "cli_values.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cli_num_kind cli_dtype_kind(tio_dtype dt) {
    switch (dt) {
    case TIO_INT8:
    case TIO_INT16:
    case TIO_INT32:
    case TIO_INT64: return CLI_NUM_INT;
    case TIO_BOOL:
    case TIO_UINT8:
    case TIO_UINT16:
    case TIO_UINT32:
    case TIO_UINT64: return CLI_NUM_UINT;
    default: return CLI_NUM_FLOAT;
    }
}

/* n (1..8) little-endian bytes at any alignment. */
static uint64_t le_bytes(const uint8_t *p, size_t n) {
    uint64_t v = 0;
    while (n-- > 0) v = v << 8 | p[n];
    return v;
}

/* binary16: sign, 5 exponent bits (bias 15), 10 mantissa bits. */
static double from_half(unsigned h) {
    unsigned e = (h >> 10) & 31u, m = h & 1023u;
    double v;
    if (e == 31)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp((double)m, -24);
    else
        v = ldexp((double)(m | 1024u), (int)e - 25);
    return (h & 0x8000u) ? -v : v;
}

/* OCP E4M3FN: 4 exponent bits (bias 7), 3 mantissa bits, S.1111.111 NaN. */
static double from_e4m3fn(unsigned b) {
    unsigned e = (b >> 3) & 15u, m = b & 7u;
    double v;
    if (e == 15 && m == 7)
        v = NAN;
    else if (e == 0)
        v = ldexp((double)m, -9);
    else
        v = ldexp((double)(m | 8u), (int)e - 10);
    return (b & 0x80u) ? -v : v;
}

int64_t cli_load_i64(tio_dtype dt, const uint8_t *p) {
    size_t n = tio_dtype_size(dt);
    uint64_t u = le_bytes(p, n);
    if (n < 8 && n > 0 && (u >> (8 * n - 1)) & 1u) u |= ~UINT64_C(0) << (8 * n);
    int64_t v;
    memcpy(&v, &u, sizeof v);
    return v;
}

uint64_t cli_load_u64(tio_dtype dt, const uint8_t *p) {
    if (dt == TIO_BOOL) return p[0] != 0;
    return le_bytes(p, tio_dtype_size(dt));
}

int cli_is_complex(tio_dtype dt) { return dt == TIO_COMPLEX64 || dt == TIO_COMPLEX128; }

void cli_load_complex(tio_dtype dt, const uint8_t *p, double *re, double *im) {
    if (!cli_is_complex(dt)) {
        *re = cli_load_f64(dt, p);
        *im = 0;
        return;
    }
    tio_dtype part = dt == TIO_COMPLEX64 ? TIO_FLOAT32 : TIO_FLOAT64;
    *re = cli_load_f64(part, p);
    *im = cli_load_f64(part, p + tio_dtype_size(part));
}

double cli_load_f64(tio_dtype dt, const uint8_t *p) {
    switch (dt) {
    case TIO_COMPLEX64:
    case TIO_COMPLEX128: {
        double re, im;
        cli_load_complex(dt, p, &re, &im);
        if (isnan(re) || isnan(im)) return NAN; /* hypot(inf, nan) would be inf */
        return hypot(re, im);
    }
    case TIO_FLOAT32: {
        uint32_t u = (uint32_t)le_bytes(p, 4);
        float f;
        memcpy(&f, &u, sizeof f);
        return (double)f;
    }
    case TIO_FLOAT64: {
        uint64_t u = le_bytes(p, 8);
        double d;
        memcpy(&d, &u, sizeof d);
        return d;
    }
    case TIO_FLOAT16: return from_half((unsigned)le_bytes(p, 2));
    case TIO_BFLOAT16: {
        uint32_t u = (uint32_t)le_bytes(p, 2) << 16; /* the upper half of a float */
        float f;
        memcpy(&f, &u, sizeof f);
        return (double)f;
    }
    case TIO_FLOAT8_E5M2: return from_half((unsigned)p[0] << 8); /* the upper byte of a half */
    case TIO_FLOAT8_E4M3FN: return from_e4m3fn(p[0]);
    case TIO_INT8:
    case TIO_INT16:
    case TIO_INT32:
    case TIO_INT64: return (double)cli_load_i64(dt, p);
    case TIO_BOOL:
    case TIO_UINT8:
    case TIO_UINT16:
    case TIO_UINT32:
    case TIO_UINT64: return (double)cli_load_u64(dt, p);
    case TIO_STRING: /* no number: cli_elems_init refuses string tensors */
    case TIO_DTYPE_INVALID: break;
    }
    return NAN;
}

/* ---------------------------------------------------------- element views */

static int by_flat(const void *x, const void *y) {
    const cli_coo_entry *a = x, *b = y;
    if (a->flat != b->flat) return a->flat < b->flat ? -1 : 1;
    return (a->value > b->value) - (a->value < b->value);
}

static int elems_fail(tio_error *err, int code, const char *msg) {
    tio_error_clear(err);
    err->code = code;
    snprintf(err->message, sizeof err->message, "%s", msg);
    return code;
}

int cli_elems_init(cli_elems *e, const tio_tensor *t, uint64_t max_dense, tio_error *err) {
    memset(e, 0, sizeof *e);
    if (tio_tensor_dtype(t) == TIO_STRING)
        return elems_fail(err, TIO_E_UNSUPPORTED, "a string tensor has no numeric values");
    e->size = tio_dtype_size(tio_tensor_dtype(t));
    e->numel = tio_tensor_numel(t);
    if (tio_tensor_layout(t) == TIO_LAYOUT_QUANT) {
        tio_quant q = tio_tensor_quant(t);
        if (!tio_quant_can_dequantize(q)) {
            char msg[128];
            snprintf(msg, sizeof msg, "%s blocks: tensio cannot dequantize them",
                     tio_quant_name(q) ? tio_quant_name(q) : "quantized");
            return elems_fail(err, TIO_E_UNSUPPORTED, msg);
        }
        e->size = 4;
        if (e->numel > SIZE_MAX / 4)
            return elems_fail(err, TIO_E_LIMIT, "too many elements to dequantize");
        if (e->numel * 4 > max_dense) {
            char msg[160];
            snprintf(msg, sizeof msg,
                     "dequantizing its %" PRIu64 " elements to float32 needs %" PRIu64
                     " bytes, above max_dense_bytes %" PRIu64 " (--max-dense-bytes)",
                     e->numel, e->numel * 4, max_dense);
            return elems_fail(err, TIO_E_LIMIT, msg);
        }
        size_t bytes = (size_t)e->numel * 4;
        e->owned = malloc(bytes ? bytes : 1);
        if (!e->owned) return elems_fail(err, TIO_E_NOMEM, "out of memory");
        int rc = tio_tensor_densify(t, e->owned, bytes, err);
        if (rc != TIO_OK) {
            free(e->owned);
            e->owned = NULL;
            return rc;
        }
        e->dense = e->owned;
        return TIO_OK;
    }
    if (tio_tensor_layout(t) != TIO_LAYOUT_COO) {
        e->dense = tio_tensor_data(t);
        if (!e->dense && e->numel) return elems_fail(err, TIO_E_ARGUMENT, "tensor without data");
        return TIO_OK;
    }
    uint64_t nnz = tio_tensor_nnz(t);
    size_t rank = tio_tensor_rank(t);
    const int64_t *shape = tio_tensor_shape(t);
    const uint8_t *idx = tio_tensor_indices(t);
    e->values = tio_tensor_data(t);
    if (nnz == 0) return TIO_OK;
    /* nnz values of the file's own bytes (size >= 1 each) fit in size_t */
    if (!e->values || (rank && !idx)) return elems_fail(err, TIO_E_ARGUMENT, "tensor without data");
    e->entries = malloc((size_t)nnz * sizeof *e->entries);
    if (!e->entries) return elems_fail(err, TIO_E_NOMEM, "out of memory");
    for (uint64_t k = 0; k < nnz; k++) {
        uint64_t flat = 0;
        for (size_t d = 0; d < rank; d++) {
            int64_t c;
            uint64_t u = le_bytes(idx + (k * rank + d) * 8, 8);
            memcpy(&c, &u, sizeof c);
            if (c < 0 || c >= shape[d]) {
                cli_elems_free(e);
                return elems_fail(err, TIO_E_CORRUPT, "a COO coordinate is out of range");
            }
            flat = flat * (uint64_t)shape[d] + (uint64_t)c; /* < numel: no overflow */
        }
        e->entries[k].flat = flat;
        e->entries[k].value = k;
    }
    qsort(e->entries, (size_t)nnz, sizeof *e->entries, by_flat);
    /* keep the last value of each coordinate */
    size_t n = 0;
    for (size_t k = 0; k < (size_t)nnz; k++) {
        if (n && e->entries[n - 1].flat == e->entries[k].flat)
            e->entries[n - 1] = e->entries[k];
        else
            e->entries[n++] = e->entries[k];
    }
    e->count = n;
    return TIO_OK;
}

void cli_elems_free(cli_elems *e) {
    free(e->entries);
    free(e->owned);
    memset(e, 0, sizeof *e);
}

uint64_t cli_elems_next(const cli_elems *e) {
    return !e->dense && e->cursor < e->count ? e->entries[e->cursor].flat : UINT64_MAX;
}

const uint8_t *cli_elems_at(cli_elems *e, uint64_t f) {
    static const uint8_t zero[8]; /* the zero of every dtype */
    if (e->dense) return e->dense + f * e->size;
    while (e->cursor < e->count && e->entries[e->cursor].flat < f) e->cursor++;
    if (e->cursor < e->count && e->entries[e->cursor].flat == f)
        return e->values + e->entries[e->cursor].value * e->size;
    return zero;
}

/* ----------------------------------------------------------- selection */

int cli_select_tensor(const char *path, const tio_container *c, const char *sel,
                      size_t *index) {
    size_t n = tio_container_count(c);
    if (sel[0] >= '0' && sel[0] <= '9') {
        errno = 0;
        char *end = NULL;
        unsigned long long k = strtoull(sel, &end, 10);
        if (errno == 0 && end && *end == '\0' && k < n) {
            *index = (size_t)k;
            return CLI_EXIT_OK;
        }
    }
    const tio_tensor *want = tio_container_find(c, sel);
    for (size_t i = 0; want && i < n; i++) {
        if (tio_container_tensor(c, i) == want) {
            *index = i;
            return CLI_EXIT_OK;
        }
    }
    char *e = cli_text_escape(sel);
    cli_error("%s: no tensor '%s' (%zu tensor%s)", path, e ? e : sel, n, n == 1 ? "" : "s");
    free(e);
    return CLI_EXIT_FAIL;
}

/* ------------------------------------------------------------ formatting */

/* The coordinates of flat index `flat` into idx (rank entries). */
static void unravel(const int64_t *shape, size_t rank, uint64_t flat, uint64_t *idx) {
    for (size_t k = rank; k-- > 0;) {
        uint64_t d = shape[k] > 0 ? (uint64_t)shape[k] : 1;
        idx[k] = flat % d;
        flat /= d;
    }
}

void cli_multi_index(const int64_t *shape, size_t rank, uint64_t flat, char *buf,
                     size_t size) {
    uint64_t *idx = calloc(rank ? rank : 1, sizeof *idx);
    if (!idx) {
        snprintf(buf, size, "[?]");
        return;
    }
    unravel(shape, rank, flat, idx);
    size_t used = 0;
    for (size_t k = 0; k <= rank && used < size; k++) {
        int n = k < rank ? snprintf(buf + used, size - used, "%s%llu", k ? ", " : "[",
                                    (unsigned long long)idx[k])
                         : snprintf(buf + used, size - used, "%s]", rank ? "" : "[");
        if (n > 0) used += (size_t)n;
    }
    free(idx);
}

json_t *cli_json_multi_index(const int64_t *shape, size_t rank, uint64_t flat) {
    json_t *a = json_array();
    uint64_t *idx = calloc(rank ? rank : 1, sizeof *idx);
    if (!a || !idx) {
        json_decref(a);
        free(idx);
        return NULL;
    }
    unravel(shape, rank, flat, idx);
    for (size_t k = 0; k < rank; k++) {
        if (json_array_append_new(a, json_integer((json_int_t)idx[k])) != 0) {
            json_decref(a);
            a = NULL;
            break;
        }
    }
    free(idx);
    return a;
}

json_t *cli_json_double(double v) {
    if (isnan(v)) return json_string("nan");
    if (isinf(v)) return json_string(v < 0 ? "-inf" : "inf");
    return json_real(v);
}

void cli_format_double(char *buf, size_t size, double v, int digits) {
    if (isnan(v))
        snprintf(buf, size, "nan");
    else if (isinf(v))
        snprintf(buf, size, "%sinf", v < 0 ? "-" : "");
    else
        snprintf(buf, size, "%.*g", digits, v);
}
