/*
 * Value types other than a tensor of a tio_dtype, as text (tio_value_info
 * .type): ONNX's type notation, with shapes.
 *
 *   type   := "tensor(" elem ")" [shape] | "sparse_tensor(" elem ")" [shape]
 *           | "seq(" type ")" | "optional(" type ")" | "map(" elem "," type ")"
 *   shape  := "[" [dim {"," dim}] "]"          (no shape: the rank is unknown)
 *   dim    := digits | "?" | name | '"' quoted '"'
 *
 * elem is an ONNX element type name (float, int64, string, ...; the table
 * below), so that a value can be typed by an element tensio has no dtype
 * for (a string tensor flowing through a graph). A name is a run of
 * [A-Za-z0-9_.:/-] not starting with a digit; any other name is quoted,
 * '\' escaping '"' and '\'. The text is canonical: parsing and printing
 * give it back byte for byte, so two types are equal when their texts are.
 */
#include "graph/types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ONNX's TensorProto.DataType codes and their names in type strings. */
static const char *const gt_elems[] = {
    NULL,           "float",          "uint8",       "int8",          "uint16",
    "int16",        "int32",          "int64",       "string",        "bool",
    "float16",      "double",         "uint32",      "uint64",        "complex64",
    "complex128",   "bfloat16",       "float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
    "float8e5m2fnuz", "uint4",        "int4",        "float4e2m1",
};
#define GT_NELEMS (sizeof gt_elems / sizeof gt_elems[0])

const char *tio__gtype_elem_name(int code) {
    return code > 0 && (size_t)code < GT_NELEMS ? gt_elems[code] : NULL;
}

static int gt_elem_code(const char *s, size_t n) {
    for (size_t i = 1; i < GT_NELEMS; i++)
        if (strlen(gt_elems[i]) == n && memcmp(gt_elems[i], s, n) == 0) return (int)i;
    return 0;
}

typedef struct gt_parser {
    const char *s;
    size_t pos, len;
    unsigned max_depth;
    const char *why; /* the first error */
} gt_parser;

static int gt_fail(gt_parser *p, const char *why) {
    if (!p->why) p->why = why;
    return -1;
}

static int gt_lit(gt_parser *p, const char *lit) {
    size_t n = strlen(lit);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, lit, n) != 0) return 0;
    p->pos += n;
    return 1;
}

static int gt_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == ':' || c == '/' || c == '-';
}

void tio__gtype_free(tio_gtype *t) {
    while (t) {
        tio_gtype *in = t->inner;
        if (t->dims)
            for (int64_t k = 0; k < t->rank; k++) free(t->dims[k].name);
        free(t->dims);
        free(t);
        t = in;
    }
}

static int gt_dim(gt_parser *p, tio_gdim *d) {
    d->value = -1;
    d->name = NULL;
    if (gt_lit(p, "?")) return 0;
    char c = p->pos < p->len ? p->s[p->pos] : 0;
    if (c >= '0' && c <= '9') {
        size_t first = p->pos;
        int64_t v = 0;
        while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
            int dig = p->s[p->pos++] - '0';
            if (v > (INT64_MAX - dig) / 10) return gt_fail(p, "a dim past int64");
            v = v * 10 + dig;
        }
        if (p->s[first] == '0' && p->pos - first > 1)
            return gt_fail(p, "a dim with a leading zero");
        d->value = v;
        return 0;
    }
    size_t start = p->pos, n = 0;
    char *name;
    if (c == '"') {
        p->pos++;
        name = malloc(p->len - p->pos + 1);
        if (!name) return gt_fail(p, "out of memory");
        for (;;) {
            if (p->pos >= p->len) {
                free(name);
                return gt_fail(p, "a quoted dim name without its closing '\"'");
            }
            char q = p->s[p->pos++];
            if (q == '"') break;
            if (q == '\\') {
                if (p->pos >= p->len || (p->s[p->pos] != '"' && p->s[p->pos] != '\\')) {
                    free(name);
                    return gt_fail(p, "'\\' in a quoted dim name escapes only '\"' and '\\'");
                }
                q = p->s[p->pos++];
            }
            name[n++] = q;
        }
        name[n] = 0;
        /* canonical: quoted only when it must be */
        int plain = n > 0 && !(name[0] >= '0' && name[0] <= '9');
        for (size_t k = 0; k < n && plain; k++) plain = gt_name_char(name[k]);
        if (plain) {
            free(name);
            return gt_fail(p, "a quoted dim name that needs no quotes");
        }
    } else {
        while (p->pos < p->len && gt_name_char(p->s[p->pos])) p->pos++;
        n = p->pos - start;
        if (!n) return gt_fail(p, "expected a dim: a size, '?' or a name");
        name = malloc(n + 1);
        if (!name) return gt_fail(p, "out of memory");
        memcpy(name, p->s + start, n);
        name[n] = 0;
    }
    d->name = name;
    return 0;
}

static int gt_shape(gt_parser *p, tio_gtype *t) {
    t->rank = -1;
    if (!gt_lit(p, "[")) return 0;
    t->rank = 0;
    if (gt_lit(p, "]")) return 0;
    size_t cap = 0;
    for (;;) {
        if (t->rank == TIO_GRAPH_API_MAX_RANK) return gt_fail(p, "more dims than 4096");
        if ((size_t)t->rank == cap) {
            size_t nc = cap ? 2 * cap : 4;
            tio_gdim *d = realloc(t->dims, nc * sizeof *d);
            if (!d) return gt_fail(p, "out of memory");
            t->dims = d;
            cap = nc;
        }
        if (gt_dim(p, &t->dims[t->rank])) return -1;
        t->rank++;
        if (gt_lit(p, "]")) return 0;
        if (!gt_lit(p, ",")) return gt_fail(p, "expected ',' or ']' after a dim");
    }
}

static int gt_elem(gt_parser *p, int *code) {
    size_t start = p->pos;
    while (p->pos < p->len && ((p->s[p->pos] >= 'a' && p->s[p->pos] <= 'z') ||
                               (p->s[p->pos] >= '0' && p->s[p->pos] <= '9')))
        p->pos++;
    *code = gt_elem_code(p->s + start, p->pos - start);
    return *code ? 0 : gt_fail(p, "an unknown element type (float, int64, string ...)");
}

static int gt_type(gt_parser *p, unsigned depth, tio_gtype **out) {
    *out = NULL;
    if (depth >= p->max_depth) return gt_fail(p, "types nested deeper than the limit");
    tio_gtype *t = calloc(1, sizeof *t);
    if (!t) return gt_fail(p, "out of memory");
    t->rank = -1;
    *out = t;
    if (gt_lit(p, "sparse_tensor(")) t->kind = TIO_GT_SPARSE;
    else if (gt_lit(p, "tensor(")) t->kind = TIO_GT_TENSOR;
    if (t->kind) {
        if (gt_elem(p, &t->elem)) return -1;
        if (!gt_lit(p, ")")) return gt_fail(p, "expected ')' after the element type");
        return gt_shape(p, t);
    }
    if (gt_lit(p, "seq(")) t->kind = TIO_GT_SEQ;
    else if (gt_lit(p, "optional(")) t->kind = TIO_GT_OPTIONAL;
    else if (gt_lit(p, "map(")) t->kind = TIO_GT_MAP;
    else return gt_fail(p, "expected tensor(, sparse_tensor(, seq(, optional( or map(");
    if (t->kind == TIO_GT_MAP) {
        if (gt_elem(p, &t->elem)) return -1;
        if (!gt_lit(p, ",")) return gt_fail(p, "expected ',' after a map's key type");
    }
    if (gt_type(p, depth + 1, &t->inner)) return -1;
    return gt_lit(p, ")") ? 0 : gt_fail(p, "expected ')'");
}

int tio__gtype_parse(const char *s, unsigned max_depth, tio_gtype **out, const char **why,
                     size_t *at) {
    gt_parser p = {s, 0, strlen(s), max_depth ? max_depth : 1, NULL};
    *out = NULL;
    tio_gtype *t = NULL;
    int rc = gt_type(&p, 0, &t);
    if (!rc && p.pos != p.len) rc = gt_fail(&p, "text after the type");
    if (rc) {
        tio__gtype_free(t);
        if (why) *why = p.why;
        if (at) *at = p.pos;
        return -1;
    }
    *out = t;
    return 0;
}

/* ------------------------------------------------------------ printing */

static void gt_puts(tio_buf *b, const char *s) { tio__buf_put(b, s, strlen(s)); }

void tio__gtype_text_put(tio_buf *b, const tio_gtype *t) {
    static const char *const heads[] = {"", "tensor(", "sparse_tensor(", "seq(", "optional(",
                                        "map("};
    gt_puts(b, heads[t->kind]);
    if (t->kind == TIO_GT_TENSOR || t->kind == TIO_GT_SPARSE || t->kind == TIO_GT_MAP)
        gt_puts(b, gt_elems[t->elem]);
    if (t->kind == TIO_GT_MAP) gt_puts(b, ",");
    if (t->inner) tio__gtype_text_put(b, t->inner);
    gt_puts(b, ")");
    if (t->rank < 0 || t->inner) return;
    gt_puts(b, "[");
    for (int64_t k = 0; k < t->rank; k++) {
        const tio_gdim *d = &t->dims[k];
        if (k) gt_puts(b, ",");
        if (d->name) {
            size_t n = strlen(d->name);
            int plain = n > 0 && !(d->name[0] >= '0' && d->name[0] <= '9');
            for (size_t q = 0; q < n && plain; q++) plain = gt_name_char(d->name[q]);
            if (plain) {
                gt_puts(b, d->name);
                continue;
            }
            gt_puts(b, "\"");
            for (size_t q = 0; q < n; q++) {
                if (d->name[q] == '"' || d->name[q] == '\\') gt_puts(b, "\\");
                tio__buf_put(b, &d->name[q], 1);
            }
            gt_puts(b, "\"");
        } else if (d->value < 0) {
            gt_puts(b, "?");
        } else {
            char num[24];
            snprintf(num, sizeof num, "%lld", (long long)d->value);
            gt_puts(b, num);
        }
    }
    gt_puts(b, "]");
}
