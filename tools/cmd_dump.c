/* tensio dump — print tensor values. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char dump_help[] =
    "Usage: tensio dump [OPTIONS] FILE [TENSOR]\n"
    "\n"
    "Print the values of the tensors of FILE, or only of TENSOR (an index, or a\n"
    "name). Dense tensors print their elements in C (row-major) order; sparse\n"
    "(COO) tensors print one '(i, j, ...) = value' line per stored value.\n"
    "Floats print with 9 (float16, bfloat16, float32) or 17 (float64)\n"
    "significant digits; bool as true/false. A block-quantized tensor (GGUF\n"
    "q4_0, q8_0, q4_K ...) prints its values dequantized to float32, computing\n"
    "only the blocks that hold the elements shown; one of a type tensio cannot\n"
    "dequantize (iq*, tq* ...) prints a note instead of values (\"values\": null\n"
    "with --json), or an error when it is the TENSOR asked for.\n"
    "\n"
    "FILE '-' reads standard input into memory (format probed, or --format);\n"
    "a tar shard on it is read as a shard (a redirected file as a stream).\n"
    "FILE may be an http:// or https:// URL: its header and the bytes of the\n"
    "tensors printed are fetched (range requests), nothing else.\n"
    "A WebDataset tar shard takes a member first: 'tensio dump shard.tar\n"
    "KEY.EXT [TENSOR]' prints the tensors of that member (a shard at a URL or\n"
    "from 'pipe:COMMAND' is read up to it); an LMDB store takes a\n"
    "key: 'tensio dump db.lmdb KEY [TENSOR]'.\n"
    "\n"
    "Options:\n"
    "  -n, --limit N       print at most N elements per tensor (default 100;\n"
    "                      0 = all); the rest is summarised as '... (N more)'\n"
    "      --json          print one JSON object instead (see docs/cli.md)\n"
    "  -f, --format FMT    read FILE as format FMT instead of detecting it\n"
    "  -h, --help          show this help and exit\n";

enum { OPT_HELP = 1, OPT_LIMIT, OPT_JSON, OPT_FORMAT };

static const cli_option dump_opts[] = {
    {"help", 'h', 0, OPT_HELP},
    {"limit", 'n', 1, OPT_LIMIT},
    {"json", 0, 0, OPT_JSON},
    {"format", 'f', 1, OPT_FORMAT},
};

#define DEFAULT_LIMIT 100u
#define TEXT_WIDTH 78u

/* ----------------------------------------------------------- elements */

/* Little-endian unsigned load of n (1..8) bytes; works at any alignment. */
static uint64_t load_le(const uint8_t *p, size_t n) {
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;) v = (v << 8) | p[i];
    return v;
}

/* IEEE 754 binary16 bit pattern to float (exact). */
static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t exp = (uint32_t)(h >> 10) & 0x1Fu;
    uint32_t mant = (uint32_t)h & 0x3FFu;
    uint32_t bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign; /* ±0 */
        } else {
            /* subnormal: normalise the mantissa */
            uint32_t e = 113;
            while ((mant & 0x400u) == 0) {
                mant <<= 1;
                e--;
            }
            bits = sign | (e << 23) | ((mant & 0x3FFu) << 13);
        }
    } else if (exp == 0x1F) {
        bits = sign | 0x7F800000u | (mant << 13); /* inf / NaN (payload kept) */
    } else {
        bits = sign | ((exp + 112) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* bfloat16 bit pattern to float (exact). */
static float bf16_to_float(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* 8-bit float E4M3FN (bias 7, no infinities, S.1111.111 NaN) to float (exact). */
static float f8e4m3fn_to_float(uint8_t b) {
    uint32_t exp = (uint32_t)(b >> 3) & 0xFu, mant = (uint32_t)b & 7u;
    float f;
    if (exp == 0xF && mant == 7) return NAN;
    if (exp == 0)
        f = (float)mant / 512.0f;
    else
        f = ldexpf(1.0f + (float)mant / 8.0f, (int)exp - 7);
    return (b & 0x80u) ? -f : f;
}

/* A float: "nan", "inf", "-inf" (quoted in JSON) or %.<digits>g; in JSON an
 * integral value gets ".0" so that it reads back as a float ("-0.0"). */
static void format_float(char *buf, size_t size, double v, int digits, int json) {
    const char *q = json ? "\"" : "";
    if (isnan(v))
        snprintf(buf, size, "%snan%s", q, q);
    else if (isinf(v))
        snprintf(buf, size, "%s%sinf%s", q, v < 0 ? "-" : "", q);
    else {
        int n = snprintf(buf, size, "%.*g", digits, v);
        /* JSON: keep floats floats ("-0" would read back as the integer 0). */
        if (json && n > 0 && (size_t)n + 2 < size && !strpbrk(buf, ".e"))
            memcpy(buf + n, ".0", 3);
    }
}

/* Formats the element at p (element size bytes, any alignment). */
static void format_value(char *buf, size_t size, tio_dtype dt, const uint8_t *p, int json) {
    switch (dt) {
    case TIO_BOOL: snprintf(buf, size, "%s", p[0] ? "true" : "false"); return;
    case TIO_INT8:
    case TIO_INT16:
    case TIO_INT32:
    case TIO_INT64: {
        /* sign-extend the little-endian two's complement value */
        size_t n = tio_dtype_size(dt);
        uint64_t u = load_le(p, n);
        if (n < 8 && (u >> (8 * n - 1)) & 1) u |= ~UINT64_C(0) << (8 * n);
        int64_t v;
        memcpy(&v, &u, 8);
        snprintf(buf, size, "%lld", (long long)v);
        return;
    }
    case TIO_UINT8:
    case TIO_UINT16:
    case TIO_UINT32:
    case TIO_UINT64:
        snprintf(buf, size, "%llu", (unsigned long long)load_le(p, tio_dtype_size(dt)));
        return;
    case TIO_FLOAT16:
        format_float(buf, size, (double)half_to_float((uint16_t)load_le(p, 2)), 9, json);
        return;
    case TIO_BFLOAT16:
        format_float(buf, size, (double)bf16_to_float((uint16_t)load_le(p, 2)), 9, json);
        return;
    case TIO_FLOAT8_E4M3FN: format_float(buf, size, (double)f8e4m3fn_to_float(p[0]), 9, json); return;
    case TIO_FLOAT8_E5M2:
        /* the upper byte of a half */
        format_float(buf, size, (double)half_to_float((uint16_t)(p[0] << 8)), 9, json);
        return;
    case TIO_FLOAT32: {
        uint32_t u = (uint32_t)load_le(p, 4);
        float f;
        memcpy(&f, &u, 4);
        format_float(buf, size, (double)f, 9, json);
        return;
    }
    case TIO_FLOAT64: {
        uint64_t u = load_le(p, 8);
        double d;
        memcpy(&d, &u, 8);
        format_float(buf, size, d, 17, json);
        return;
    }
    case TIO_COMPLEX64:
    case TIO_COMPLEX128: {
        /* text: re+imj as Python writes complex numbers; JSON: [re, im] */
        int wide = dt == TIO_COMPLEX128;
        double re, im;
        if (wide) {
            uint64_t a = load_le(p, 8), b = load_le(p + 8, 8);
            memcpy(&re, &a, 8);
            memcpy(&im, &b, 8);
        } else {
            uint32_t a = (uint32_t)load_le(p, 4), b = (uint32_t)load_le(p + 4, 4);
            float fr, fi;
            memcpy(&fr, &a, 4);
            memcpy(&fi, &b, 4);
            re = (double)fr;
            im = (double)fi;
        }
        char r[26], i[26]; /* %.17g of a double: 24 characters at most */
        int neg = !json && !isnan(im) && signbit(im);
        format_float(r, sizeof r, re, wide ? 17 : 9, json);
        format_float(i, sizeof i, neg ? -im : im, wide ? 17 : 9, json);
        if (json)
            snprintf(buf, size, "[%s, %s]", r, i);
        else
            snprintf(buf, size, "%s%c%sj", r, neg ? '-' : '+', i);
        return;
    }
    case TIO_STRING: /* string_value */
    case TIO_DTYPE_INVALID: break;
    }
    snprintf(buf, size, json ? "null" : "?");
}

/* One COO coordinate row as "0, 1, 2" (text) — written straight to stdout. */
static void print_coords(const uint8_t *row, size_t rank) {
    for (size_t k = 0; k < rank; k++) {
        uint64_t u = load_le(row + k * 8, 8);
        int64_t v;
        memcpy(&v, &u, 8);
        printf("%s%lld", k ? ", " : "", (long long)v);
    }
}

/* -------------------------------------------------------------- output */

typedef struct dump_view {
    tio_dtype dtype;
    size_t esize;
    int coo;
    size_t rank;
    uint64_t count;     /* elements (dense) or nnz (COO) */
    uint64_t shown;     /* how many of them are printed */
    const uint8_t *data;
    const uint8_t *indices;
    const char *quant;  /* a quantized tensor: its block type (data: deq) */
    int opaque;         /* quantized as tensio cannot dequantize: no values */
    float *deq;         /* the dequantized elements shown, malloc'ed */
    const tio_tensor *t; /* a string tensor: its elements (tio_tensor_string_at) */
} dump_view;

/* String element i as text: quoted, '"' and '\\' escaped with a backslash,
 * the bytes below 0x20, 0x7f (and with `high` those from 0x80) as \xNN;
 * malloc'ed, NULL when out of memory. */
static char *string_text(const char *p, size_t n, int high) {
    char *out = malloc(n * 4 + 3), *o = out;
    if (!out) return NULL;
    static const char hex[] = "0123456789abcdef";
    *o++ = '"';
    for (size_t k = 0; k < n; k++) {
        unsigned char c = (unsigned char)p[k];
        if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = (char)c;
        } else if (c < 0x20 || c == 0x7f || (high && c >= 0x80)) {
            *o++ = '\\';
            *o++ = 'x';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        } else {
            *o++ = (char)c;
        }
    }
    *o++ = '"';
    *o = '\0';
    return out;
}

/* String element i: text (string_text; the bytes from 0x80 escaped too when
 * it is not UTF-8), or in JSON a JSON string: the
 * string itself when it is UTF-8, else its string_text without the quotes,
 * every byte from 0x80 as \xNN (a backslash in the JSON value). */
static char *string_value(const dump_view *v, uint64_t i, int json) {
    const char *p = "";
    size_t n = 0;
    (void)tio_tensor_string_at(v->t, i, &p, &n, NULL); /* i < numel */
    json_t *j = json_stringn(p, n); /* NULL when not UTF-8 */
    if (!json) {
        int utf8 = j != NULL;
        json_decref(j);
        return string_text(p, n, !utf8);
    }
    if (!j) {
        char *t = string_text(p, n, 1);
        if (!t) return NULL;
        t[strlen(t) - 1] = '\0';
        j = json_string(t + 1);
        free(t);
    }
    char *out = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    json_decref(j);
    return out;
}

static void free_view(dump_view *v) {
    free(v->deq);
    v->deq = NULL;
}

/* Dequantizes the blocks that hold the first v->shown elements of t: a
 * borrowed view of those blocks in a container of its own, densified. The
 * blocks run along the last dim, so the first elements in C order are the
 * first blocks. */
static int dequantize_shown(const char *path, size_t index, const tio_tensor *t,
                            dump_view *v) {
    size_t be = 0, bb = 0;
    tio_quant q = tio_tensor_quant(t);
    tio_error err;
    if (tio_quant_block(q, &be, &bb) != TIO_OK || be == 0)
        return cli_error("%s: tensor %zu: unknown quant type", path, index);
    uint64_t blocks = (v->shown + be - 1) / be;
    int64_t n = (int64_t)(blocks * be);
    /* blocks <= the tensor's own blocks: its bytes bound both sizes */
    tio_tensor_desc d = {0};
    d.dtype = TIO_FLOAT32;
    d.layout = TIO_LAYOUT_QUANT;
    d.rank = 1;
    d.shape = &n;
    d.data = tio_tensor_data(t);
    d.nbytes = (size_t)blocks * bb;
    tio_container *tmp = tio_container_new();
    tio_tensor *view = NULL;
    v->deq = malloc(blocks ? (size_t)n * sizeof *v->deq : 1);
    int rc = !tmp || !v->deq ? TIO_E_NOMEM : TIO_OK;
    if (rc == TIO_OK) rc = tio_container_add_quantized(tmp, &d, q, TIO_ADD_BORROW, &view, &err);
    if (rc == TIO_OK && blocks)
        rc = tio_tensor_densify(view, v->deq, (size_t)n * sizeof *v->deq, &err);
    tio_container_free(tmp);
    if (rc != TIO_OK) {
        free_view(v);
        return rc == TIO_E_NOMEM ? cli_error("out of memory")
                                 : cli_error("%s: tensor %zu: %s", path, index,
                                             cli_errmsg(&err));
    }
    v->data = (const uint8_t *)v->deq;
    return CLI_EXIT_OK;
}

/* The quant types tensio dequantizes, by name, space-separated, into buf. */
static const char *dequantizable(char *buf, size_t n) {
    size_t at = 0;
    buf[0] = '\0';
    for (int q = 1; q < 256; q++) {
        const char *name = tio_quant_name((tio_quant)q);
        if (!name || !tio_quant_can_dequantize((tio_quant)q)) continue;
        int k = snprintf(buf + at, n - at, "%s%s", at ? " " : "", name);
        if (k < 0 || (size_t)k >= n - at) break;
        at += (size_t)k;
    }
    return buf;
}

/* Checks that the tensor's buffers hold what its shape says; with `values`,
 * dequantizes what a quantized tensor shows (free_view frees it). With
 * `opaque_ok`, a quant type tensio cannot dequantize is shown without values
 * instead of failing. */
static int make_view(const char *path, size_t index, const tio_tensor *t, uint64_t limit,
                     int values, int opaque_ok, dump_view *v) {
    memset(v, 0, sizeof *v);
    if (tio_tensor_layout(t) == TIO_LAYOUT_QUANT) {
        tio_quant q = tio_tensor_quant(t);
        v->quant = cli_tensor_dtype_name(t);
        v->dtype = TIO_FLOAT32;
        if (!tio_quant_can_dequantize(q)) {
            /* one tensor asked for: an error; in a whole file: a note */
            char can[200];
            if (!opaque_ok)
                return cli_error("%s: tensor %zu is quantized as %s, which tensio cannot "
                                 "dequantize (it can: %s)",
                                 path, index, v->quant, dequantizable(can, sizeof can));
            v->opaque = 1;
            v->rank = tio_tensor_rank(t);
            return CLI_EXIT_OK;
        }
        v->esize = 4;
        v->rank = tio_tensor_rank(t);
        v->count = tio_tensor_numel(t);
        v->shown = limit && v->count > limit ? limit : v->count;
        return values ? dequantize_shown(path, index, t, v) : CLI_EXIT_OK;
    }
    v->dtype = tio_tensor_dtype(t);
    v->esize = tio_dtype_size(v->dtype);
    if (v->dtype == TIO_STRING) { /* elements read one by one, never by size */
        v->t = t;
        v->rank = tio_tensor_rank(t);
        v->count = tio_tensor_numel(t);
        v->shown = limit && v->count > limit ? limit : v->count;
        v->data = tio_tensor_data(t);
        if (v->count && !v->data)
            return cli_error("%s: tensor %zu: no data", path, index);
        return CLI_EXIT_OK;
    }
    v->coo = tio_tensor_layout(t) == TIO_LAYOUT_COO;
    v->rank = tio_tensor_rank(t);
    v->count = v->coo ? tio_tensor_nnz(t) : tio_tensor_numel(t);
    v->shown = limit && v->count > limit ? limit : v->count;
    v->data = tio_tensor_data(t);
    v->indices = v->coo ? tio_tensor_indices(t) : NULL;
    if (v->esize == 0)
        return cli_error("%s: tensor %zu: unsupported dtype", path, index);
    size_t nbytes = tio_tensor_nbytes(t);
    if (v->count > 0 && (!v->data || v->count > nbytes / v->esize))
        return cli_error("%s: tensor %zu: data are smaller than the shape says", path,
                         index);
    if (v->coo && v->count > 0 && v->rank > 0 && !v->indices)
        return cli_error("%s: tensor %zu: sparse tensor without indices", path, index);
    return CLI_EXIT_OK;
}

static void dump_text_tensor(size_t index, const dump_view *v, const char *shape,
                             const char *name) {
    const char *dtype = v->quant ? v->quant : tio_dtype_name(v->dtype);
    printf("[%zu] %s %s %s %s", index, name ? name : "-", dtype ? dtype : "?", shape,
           v->coo       ? "coo"
           : v->opaque  ? "quantized"
           : v->quant ? "quantized, values dequantized to float32"
                        : "dense");
    if (v->coo) printf(" nnz=%llu", (unsigned long long)v->count);
    fputc('\n', stdout);

    char buf[64];
    if (v->opaque) {
        char can[200];
        printf("  (%s blocks: tensio cannot dequantize them; it can %s)\n", v->quant,
               dequantizable(can, sizeof can));
        return;
    }
    if (v->coo) {
        if (v->count == 0) fputs("  (no stored values)\n", stdout);
        for (uint64_t i = 0; i < v->shown; i++) {
            format_value(buf, sizeof buf, v->dtype, v->data + (size_t)i * v->esize, 0);
            fputs("  (", stdout);
            print_coords(v->indices ? v->indices + (size_t)i * v->rank * 8 : NULL, v->rank);
            printf(") = %s\n", buf);
        }
        if (v->shown < v->count)
            printf("  ... (%llu more)\n", (unsigned long long)(v->count - v->shown));
        return;
    }
    fputs("  [", stdout);
    size_t col = 3;
    for (uint64_t i = 0; i < v->shown; i++) {
        char *str = v->t ? string_value(v, i, 0) : NULL;
        if (!v->t) format_value(buf, sizeof buf, v->dtype, v->data + (size_t)i * v->esize, 0);
        const char *text = v->t ? (str ? str : "?") : buf;
        size_t len = strlen(text);
        if (i > 0) {
            if (col + 2 + len > TEXT_WIDTH) {
                fputs(",\n   ", stdout);
                col = 3;
            } else {
                fputs(", ", stdout);
                col += 2;
            }
        }
        fputs(text, stdout);
        free(str);
        col += len;
    }
    if (v->shown < v->count)
        printf("%s...] (%llu more)\n", v->shown ? ", " : "",
               (unsigned long long)(v->count - v->shown));
    else
        fputs("]\n", stdout);
}

static void dump_json_tensor(size_t index, const tio_tensor *t, const dump_view *v) {
    printf("{\"index\": %zu, \"name\": ", index);
    cli_json_write_string(stdout, tio_tensor_name(t));
    fputs(", \"dtype\": ", stdout);
    cli_json_write_string(stdout, tio_dtype_name(v->dtype));
    fputs(", \"shape\": [", stdout);
    const int64_t *shape = tio_tensor_shape(t);
    for (size_t k = 0; k < v->rank; k++)
        printf("%s%lld", k ? ", " : "", (long long)shape[k]);
    printf("], \"layout\": \"%s\"", v->coo ? "coo" : v->quant ? "quant" : "dense");
    if (v->quant) {
        fputs(", \"quant\": ", stdout);
        cli_json_write_string(stdout, v->quant);
    }
    if (v->coo) {
        printf(", \"nnz\": %llu, \"indices\": [", (unsigned long long)v->count);
        for (uint64_t i = 0; i < v->shown; i++) {
            fputs(i ? ", [" : "[", stdout);
            print_coords(v->indices ? v->indices + (size_t)i * v->rank * 8 : NULL, v->rank);
            fputc(']', stdout);
        }
        fputc(']', stdout);
    }
    if (v->opaque) {
        fputs(", \"values\": null, \"truncated\": false}", stdout);
        return;
    }
    fputs(", \"values\": [", stdout);
    char buf[64];
    for (uint64_t i = 0; i < v->shown; i++) {
        char *str = v->t ? string_value(v, i, 1) : NULL;
        if (!v->t) format_value(buf, sizeof buf, v->dtype, v->data + (size_t)i * v->esize, 1);
        printf("%s%s", i ? ", " : "", v->t ? (str ? str : "null") : buf);
        free(str);
    }
    printf("], \"truncated\": %s}", v->shown < v->count ? "true" : "false");
}

/* ------------------------------------------------------------- command */

/* Parses a non-negative decimal count; -1 if malformed. */
static int parse_count(const char *s, uint64_t *out) {
    if (!s || *s < '0' || *s > '9') return -1;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || !end || *end != '\0') return -1;
    *out = (uint64_t)v;
    return 0;
}

/* Which tensor TENSOR names: a decimal index when in range, otherwise a name. */
static int select_tensor(const char *path, const tio_container *c, const char *sel,
                         size_t *index) {
    size_t n = tio_container_count(c);
    uint64_t k;
    if (parse_count(sel, &k) == 0 && k < n) {
        *index = (size_t)k;
        return CLI_EXIT_OK;
    }
    const tio_tensor *want = tio_container_find(c, sel);
    if (want) {
        for (size_t i = 0; i < n; i++) {
            if (tio_container_tensor(c, i) == want) {
                *index = i;
                return CLI_EXIT_OK;
            }
        }
    }
    char *e = cli_text_escape(sel);
    cli_error("%s: no tensor '%s' (the file has %zu tensor%s)", path, e ? e : sel, n,
              n == 1 ? "" : "s");
    free(e);
    return CLI_EXIT_FAIL;
}

int cli_cmd_dump(int argc, char **argv) {
    cli_parser p;
    int rc = cli_parser_init(&p, "dump", argc, argv, dump_opts,
                             sizeof dump_opts / sizeof dump_opts[0]);
    if (rc != CLI_EXIT_OK) return rc;
    int json = 0, id;
    uint64_t limit = DEFAULT_LIMIT;
    const char *format = NULL;
    while ((id = cli_parser_next(&p)) > 0) {
        switch (id) {
        case OPT_HELP:
            fputs(dump_help, stdout);
            cli_parser_free(&p);
            return CLI_EXIT_OK;
        case OPT_JSON: json = 1; break;
        case OPT_FORMAT: format = p.value; break;
        case OPT_LIMIT:
            if (parse_count(p.value, &limit) != 0) {
                rc = cli_usage_error("dump", "--limit: '%s' is not a non-negative integer",
                                     p.value);
                cli_parser_free(&p);
                return rc;
            }
            break;
        default: break;
        }
    }
    if (id == CLI_PARSE_ERROR) {
        rc = CLI_EXIT_USAGE;
    } else if (p.npos == 0) {
        rc = cli_usage_error("dump", "missing FILE");
    } else if (p.npos > (cli_is_shard(p.pos[0], format) ||
                                 (!format && cli_is_lmdb(p.pos[0])) ? 3u : 2u)) {
        rc = cli_usage_error("dump", "too many arguments (expected FILE [TENSOR])");
    } else if (format) {
        rc = cli_check_format("dump", "--format", format);
    }
    if (rc != CLI_EXIT_OK) {
        cli_parser_free(&p);
        return rc;
    }
    const char *path = p.pos[0];
    const char *sel = p.npos > 1 ? p.pos[1] : NULL;
    tio_container *c = NULL;
    if (!format && cli_is_lmdb(path)) { /* STORE KEY [TENSOR] */
        if (!sel) {
            cli_parser_free(&p);
            return cli_usage_error("dump", "an LMDB store needs a KEY");
        }
        rc = cli_lmdb_open_record(path, sel, &c);
        sel = p.npos > 2 ? p.pos[2] : NULL;
    } else if (cli_is_shard(path, format)) { /* FILE KEY.EXT [TENSOR] */
        if (!sel) {
            cli_parser_free(&p);
            return cli_usage_error("dump", "a tar shard needs a member (KEY.EXT)");
        }
        rc = cli_shard_open_member(path, sel, &c);
        sel = p.npos > 2 ? p.pos[2] : NULL;
    } else { /* a URL: the header, then the selected tensors' bytes (below) */
        rc = cli_open_flags(path, format, NULL, TIO_OPEN_LAZY, &c);
    }
    cli_parser_free(&p);
    if (rc != CLI_EXIT_OK) return rc;
    /* --limit 0 of every tensor reads all: map the file in one call (a hint) */
    if (!sel && limit == 0) (void)tio_container_prefetch(c, NULL);

    size_t first = 0, end = tio_container_count(c);
    if (sel) {
        rc = select_tensor(path, c, sel, &first);
        end = first + 1;
    }
    for (size_t i = first; i < end && rc == CLI_EXIT_OK; i++) { /* a no-op but for URLs */
        tio_error ferr;
        tio_error_clear(&ferr);
        if (tio_container_fetch(c, i, &ferr) != TIO_OK) rc = cli_error("%s", cli_errmsg(&ferr));
    }
    /* Check every selected tensor first so that errors never cut the output. */
    for (size_t i = first; i < end && rc == CLI_EXIT_OK; i++) {
        dump_view v;
        rc = make_view(path, i, tio_container_tensor(c, i), limit, 0, !sel, &v);
    }
    if (rc == CLI_EXIT_OK && json) fputs("{\"tensors\": [", stdout);
    for (size_t i = first; i < end && rc == CLI_EXIT_OK; i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        dump_view v;
        rc = make_view(path, i, t, limit, 1, !sel, &v);
        if (rc != CLI_EXIT_OK) break;
        if (json) {
            if (i > first) fputs(", ", stdout);
            dump_json_tensor(i, t, &v);
        } else {
            const char *name = tio_tensor_name(t);
            char *ename = cli_name_escape(name);
            char *shape = cli_shape_string(t);
            if ((name && !ename) || !shape) {
                rc = cli_error("out of memory");
            } else {
                if (i > first) fputc('\n', stdout);
                dump_text_tensor(i, &v, shape, ename);
            }
            free(ename);
            free(shape);
        }
        free_view(&v);
        if (ferror(stdout)) break; /* reported by cli_finish_output */
    }
    if (rc == CLI_EXIT_OK && json) fputs("]}\n", stdout);
    tio_container_free(c);
    return rc;
}
