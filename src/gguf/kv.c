/* GGUF metadata values <-> tensio's typed metadata text (see gguf.h and
 * tio_container_meta_set_typed in tensio.h). */
#include "gguf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    uint8_t size; /* of a scalar; 0 for string and array */
} gtypes[GGUF_TYPE_COUNT] = {
    {"uint8", 1},   {"int8", 1},    {"uint16", 2}, {"int16", 2},  {"uint32", 4},
    {"int32", 4},   {"float32", 4}, {"bool", 1},   {"string", 0}, {"array", 0},
    {"uint64", 8},  {"int64", 8},   {"float64", 8},
};

int gguf__scalar_type(const char *name, size_t n) {
    for (int t = 0; t < GGUF_TYPE_COUNT; t++)
        if (t != GGUF_ARRAY && strlen(gtypes[t].name) == n && memcmp(gtypes[t].name, name, n) == 0)
            return t;
    return -1;
}

/* ------------------------------------------------------------------ buffer */

void gguf__put(gguf_buf *b, const void *s, size_t n) { tio__buf_put(b, s, n); }

void gguf__put_u32(gguf_buf *b, uint32_t v) {
    uint8_t x[4];
    tio__st32(x, v);
    gguf__put(b, x, 4);
}

void gguf__put_u64(gguf_buf *b, uint64_t v) {
    uint8_t x[8];
    tio__st64(x, v);
    gguf__put(b, x, 8);
}

static void put_str(gguf_buf *b, const char *s) { gguf__put(b, s, strlen(s)); }

/* ------------------------------------------------------------------- read */

/* The shortest of %.{lo..hi}g that reads back to the same value. */
static void put_float(gguf_buf *b, double v, int is32) {
    char s[40];
    if (isnan(v) || isinf(v)) {
        put_str(b, isnan(v) ? (signbit(v) ? "-nan" : "nan") : (v < 0 ? "-inf" : "inf"));
        return;
    }
    for (int p = is32 ? 6 : 15; p <= (is32 ? 9 : 17); p++) {
        snprintf(s, sizeof s, "%.*g", p, v);
        if (is32 ? strtof(s, NULL) == (float)v : strtod(s, NULL) == v) break;
    }
    put_str(b, s);
}

/* A string as a JSON string: '"', '\\' and control bytes escaped, other
 * bytes as they are. */
static void put_json(gguf_buf *b, const uint8_t *p, size_t n) {
    gguf__put(b, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t ch = p[i];
        if (ch >= 0x20 && ch != '"' && ch != '\\') continue;
        gguf__put(b, p + run, i - run);
        run = i + 1;
        char e[8];
        if (ch == '"' || ch == '\\')
            snprintf(e, sizeof e, "\\%c", ch);
        else if (ch == '\n')
            snprintf(e, sizeof e, "\\n");
        else if (ch == '\t')
            snprintf(e, sizeof e, "\\t");
        else if (ch == '\r')
            snprintf(e, sizeof e, "\\r");
        else
            snprintf(e, sizeof e, "\\u%04x", ch);
        put_str(b, e);
    }
    gguf__put(b, p + run, n - run);
    gguf__put(b, "\"", 1);
}

static int read_string(tio_cursor *cur, const tio_read_ctx *ctx, const uint8_t **p,
                       uint64_t *n, tio_error *err) {
    size_t at = cur->pos;
    int rc = tio__cursor_u64(cur, n, "string length", err);
    if (rc) return rc;
    if (*n > ctx->limits.max_name_bytes)
        return tio__err(err, TIO_E_LIMIT, GGUF_NAME, (int64_t)at,
                        "string of %llu bytes exceeds max_name_bytes %u",
                        (unsigned long long)*n, ctx->limits.max_name_bytes);
    rc = tio__cursor_bytes(cur, *n, p, "string bytes", err);
    if (rc) cur->pos = at;
    return rc;
}

/* One scalar (not an array); `json`: a string as a JSON string. */
static int read_scalar(tio_cursor *cur, const tio_read_ctx *ctx, uint32_t type, int json,
                       gguf_buf *text, uint64_t *bad_bool, tio_error *err) {
    if (type == GGUF_STRING) {
        const uint8_t *p;
        uint64_t n;
        int rc = read_string(cur, ctx, &p, &n, err);
        if (rc) return rc;
        if (json)
            put_json(text, p, (size_t)n); /* a NUL is \\u0000 */
        else
            gguf__put(text, p, (size_t)n); /* any bytes, NUL included: the text has a length */
        return TIO_OK;
    }
    const uint8_t *p;
    int rc = tio__cursor_bytes(cur, gtypes[type].size, &p, gtypes[type].name, err);
    if (rc) return rc;
    char s[32];
    switch (type) {
    case GGUF_U8: snprintf(s, sizeof s, "%u", p[0]); break;
    case GGUF_I8: snprintf(s, sizeof s, "%d", (int8_t)p[0]); break;
    case GGUF_U16: snprintf(s, sizeof s, "%u", tio__ld16(p)); break;
    case GGUF_I16: snprintf(s, sizeof s, "%d", (int16_t)tio__ld16(p)); break;
    case GGUF_U32: snprintf(s, sizeof s, "%lu", (unsigned long)tio__ld32(p)); break;
    case GGUF_I32: snprintf(s, sizeof s, "%ld", (long)(int32_t)tio__ld32(p)); break;
    case GGUF_U64: snprintf(s, sizeof s, "%llu", (unsigned long long)tio__ld64(p)); break;
    case GGUF_I64: snprintf(s, sizeof s, "%lld", (long long)(int64_t)tio__ld64(p)); break;
    case GGUF_BOOL:
        if (p[0] > 1) ++*bad_bool;
        snprintf(s, sizeof s, "%s", p[0] ? "true" : "false");
        break;
    case GGUF_F32: {
        uint32_t u = tio__ld32(p);
        float f;
        memcpy(&f, &u, sizeof f);
        put_float(text, f, 1);
        return TIO_OK;
    }
    default: { /* GGUF_F64 */
        uint64_t u = tio__ld64(p);
        double d;
        memcpy(&d, &u, sizeof d);
        put_float(text, d, 0);
        return TIO_OK;
    }
    }
    put_str(text, s);
    return TIO_OK;
}

int gguf__read_value(tio_cursor *cur, const tio_read_ctx *ctx, uint32_t type, uint32_t depth,
                     gguf_buf *text, gguf_buf *tname, uint64_t *bad_bool, tio_error *err) {
    size_t at = cur->pos;
    if (type >= GGUF_TYPE_COUNT)
        return tio__err(err, TIO_E_CORRUPT, GGUF_NAME, (int64_t)at - 4,
                        "value type %lu is not a GGUF type (expected 0..12)",
                        (unsigned long)type);
    if (type != GGUF_ARRAY) {
        put_str(tname, gtypes[type].name);
        return read_scalar(cur, ctx, type, depth > 0, text, bad_bool, err);
    }
    if (depth >= ctx->limits.max_depth)
        return tio__err(err, TIO_E_LIMIT, GGUF_NAME, (int64_t)at,
                        "arrays nested %lu deep exceed max_depth %lu", (unsigned long)depth + 1,
                        (unsigned long)ctx->limits.max_depth);
    uint32_t et;
    uint64_t n;
    int rc = tio__cursor_u32(cur, &et, "array element type", err);
    if (!rc) rc = tio__cursor_u64(cur, &n, "array length", err);
    if (rc) return rc;
    if (et >= GGUF_TYPE_COUNT)
        return tio__err(err, TIO_E_CORRUPT, GGUF_NAME, (int64_t)at,
                        "array element type %lu is not a GGUF type (expected 0..12)",
                        (unsigned long)et);
    /* each element takes at least this much: no count past the data */
    uint64_t least = et == GGUF_STRING ? 8 : et == GGUF_ARRAY ? 12 : gtypes[et].size;
    if (n > tio__cursor_left(cur) / least)
        return tio__err(err, TIO_E_TRUNCATED, GGUF_NAME, (int64_t)at + 4,
                        "array of %llu %s elements needs at least %llu bytes, %zu are left",
                        (unsigned long long)n, gtypes[et].name,
                        (unsigned long long)n * least, tio__cursor_left(cur));
    put_str(tname, "array[");
    gguf__put(text, "[", 1);
    size_t tn_at = tname->len;
    if (et != GGUF_ARRAY)
        put_str(tname, gtypes[et].name);
    else if (n == 0) /* no element to say which: any array type writes it back */
        put_str(tname, "array[uint8]");
    for (uint64_t i = 0; i < n; i++) {
        if (i) gguf__put(text, ",", 1);
        if (et != GGUF_ARRAY) {
            rc = read_scalar(cur, ctx, et, 1, text, bad_bool, err);
        } else if (i == 0) {
            rc = gguf__read_value(cur, ctx, et, depth + 1, text, tname, bad_bool, err);
        } else { /* the same element type as the first */
            gguf_buf other = {0};
            size_t el_at = cur->pos;
            rc = gguf__read_value(cur, ctx, et, depth + 1, text, &other, bad_bool, err);
            if (!rc && !other.oom && !tname->oom &&
                (other.len != tname->len - tn_at || memcmp(other.p, tname->p + tn_at, other.len)))
                rc = tio__err(err, TIO_E_UNSUPPORTED, GGUF_NAME, (int64_t)el_at,
                              "nested array %llu is %.*s, array 0 %.*s (tensio keeps one type "
                              "per key: nested arrays of one element type)",
                              (unsigned long long)i, (int)(other.len > 64 ? 64 : other.len),
                              other.p ? other.p : "", (int)(tname->len - tn_at > 64 ? 64 : tname->len - tn_at),
                              tname->p + tn_at);
            free(other.p);
        }
        if (rc) return rc;
    }
    gguf__put(text, "]", 1);
    put_str(tname, "]");
    return TIO_OK;
}

/* ------------------------------------------------------------------ write */

typedef struct vparse {
    const char *s;   /* the text being parsed */
    const char *key; /* for messages */
    tio_error *err;
} vparse;

static int bad_value(vparse *v, const char *what, const char *at) {
    return tio__err(v->err, TIO_E_ARGUMENT, GGUF_NAME, -1,
                    "metadata '%.64s': %s at character %zu of its value", v->key, what,
                    (size_t)(at - v->s));
}

/* Encodes scalar text t[0..n) of type `type`. */
static int enc_scalar(gguf_buf *out, vparse *v, int type, const char *t, size_t n) {
    if (type == GGUF_STRING) {
        gguf__put_u64(out, n);
        gguf__put(out, t, n);
        return TIO_OK;
    }
    char s[64];
    if (n == 0 || n >= sizeof s || memchr(t, 0, n)) return bad_value(v, "not a number", t);
    memcpy(s, t, n);
    s[n] = 0;
    char *end = NULL;
    errno = 0;
    uint8_t x[8];
    if (type == GGUF_BOOL) {
        if (strcmp(s, "true") && strcmp(s, "false"))
            return bad_value(v, "expected true or false", t);
        x[0] = s[0] == 't';
    } else if (type == GGUF_F32 || type == GGUF_F64) {
        if (type == GGUF_F32) {
            float f = strtof(s, &end);
            uint32_t u;
            memcpy(&u, &f, sizeof u);
            tio__st32(x, u);
        } else {
            double d = strtod(s, &end);
            uint64_t u;
            memcpy(&u, &d, sizeof u);
            tio__st64(x, u);
        }
        if (*end || end == s) return bad_value(v, "not a float", t);
    } else if (type == GGUF_U8 || type == GGUF_U16 || type == GGUF_U32 || type == GGUF_U64) {
        unsigned long long u = strtoull(s, &end, 10);
        unsigned long long max = type == GGUF_U8    ? 0xffu
                                 : type == GGUF_U16 ? 0xffffu
                                 : type == GGUF_U32 ? 0xffffffffu
                                                    : UINT64_MAX;
        if (*end || s[0] == '-' || s[0] == '+' || s[0] == ' ' || errno || u > max)
            return bad_value(v, "not an unsigned integer of its type", t);
        tio__st64(x, (uint64_t)u);
    } else {
        long long i = strtoll(s, &end, 10);
        long long lim = type == GGUF_I8 ? 0x7f : type == GGUF_I16 ? 0x7fff
                                     : type == GGUF_I32 ? 0x7fffffff : INT64_MAX;
        if (*end || s[0] == '+' || s[0] == ' ' || errno || i > lim || i < -lim - 1)
            return bad_value(v, "not an integer of its type", t);
        tio__st64(x, (uint64_t)i);
    }
    gguf__put(out, x, gtypes[type].size);
    return TIO_OK;
}

static void skip_ws(const char **p) {
    while (**p == ' ' || **p == '\t' || **p == '\n' || **p == '\r') ++*p;
}

static int hexval(char c) {
    return c >= '0' && c <= '9' ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* A JSON string at *p into `s` (unescaped). */
static int parse_jstring(vparse *v, const char **p, gguf_buf *s) {
    const char *q = *p;
    if (*q != '"') return bad_value(v, "expected a JSON string", q);
    q++;
    for (;;) {
        char c = *q;
        if (c == 0) return bad_value(v, "unterminated string", q);
        if (c == '"') break;
        if (c != '\\') {
            gguf__put(s, q++, 1);
            continue;
        }
        char e = q[1], o = 0;
        q += 2;
        switch (e) {
        case '"': o = '"'; break;
        case '\\': o = '\\'; break;
        case '/': o = '/'; break;
        case 'b': o = '\b'; break;
        case 'f': o = '\f'; break;
        case 'n': o = '\n'; break;
        case 'r': o = '\r'; break;
        case 't': o = '\t'; break;
        case 'u': {
            unsigned cp = 0;
            for (int k = 0; k < 4; k++) {
                int h = hexval(q[k]);
                if (h < 0) return bad_value(v, "bad \\u escape", q);
                cp = cp * 16 + (unsigned)h;
            }
            q += 4;
            if (cp >= 0xD800 && cp < 0xE000) return bad_value(v, "surrogate \\u escape", q);
            unsigned char u[3];
            size_t k = 0;
            if (cp < 0x80) {
                u[k++] = (unsigned char)cp;
            } else if (cp < 0x800) {
                u[k++] = (unsigned char)(0xC0 | (cp >> 6));
                u[k++] = (unsigned char)(0x80 | (cp & 0x3F));
            } else {
                u[k++] = (unsigned char)(0xE0 | (cp >> 12));
                u[k++] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                u[k++] = (unsigned char)(0x80 | (cp & 0x3F));
            }
            gguf__put(s, u, k);
            continue;
        }
        default: return bad_value(v, "bad escape", q - 2);
        }
        gguf__put(s, &o, 1);
    }
    *p = q + 1;
    return TIO_OK;
}

/* A JSON array at *p of `depth` levels over `base`: element type, count,
 * elements (the array's GGUF value without its ARRAY tag). */
static int enc_array(gguf_buf *out, vparse *v, const char **p, unsigned depth, int base) {
    const char *q = *p;
    skip_ws(&q);
    if (*q != '[') return bad_value(v, "expected '['", q);
    q++;
    gguf__put_u32(out, depth > 1 ? GGUF_ARRAY : (uint32_t)base);
    size_t count_at = out->len;
    gguf__put_u64(out, 0);
    uint64_t n = 0;
    skip_ws(&q);
    if (*q == ']') {
        q++;
    } else {
        for (;;) {
            skip_ws(&q);
            int rc;
            if (depth > 1) {
                rc = enc_array(out, v, &q, depth - 1, base);
            } else if (base == GGUF_STRING) {
                gguf_buf s = {0};
                rc = parse_jstring(v, &q, &s);
                if (!rc) rc = enc_scalar(out, v, base, s.p ? s.p : "", s.len);
                if (s.oom) out->oom = 1;
                free(s.p);
            } else {
                size_t k = strcspn(q, ",] \t\n\r");
                rc = enc_scalar(out, v, base, q, k);
                q += k;
            }
            if (rc) return rc;
            n++;
            skip_ws(&q);
            if (*q == ',') {
                q++;
                continue;
            }
            if (*q != ']') return bad_value(v, "expected ',' or ']'", q);
            q++;
            break;
        }
    }
    if (!out->oom) tio__st64((uint8_t *)out->p + count_at, n);
    *p = q;
    return TIO_OK;
}

int gguf__write_value(gguf_buf *out, const char *key, const char *value, size_t value_len,
                      const char *type, tio_error *err) {
    vparse v = {value, key, err};
    if (!type) type = "string";
    unsigned depth = 0;
    while (strncmp(type, "array[", 6) == 0) {
        type += 6;
        depth++;
    }
    int base = gguf__scalar_type(type, strlen(type) - depth);
    if (base < 0)
        return tio__err(err, TIO_E_ARGUMENT, GGUF_NAME, -1,
                        "metadata '%.64s': type '%.64s' has no GGUF type", key, type);
    if (depth == 0) {
        gguf__put_u32(out, (uint32_t)base);
        return enc_scalar(out, &v, base, value, value_len);
    }
    gguf__put_u32(out, GGUF_ARRAY);
    const char *q = value;
    int rc = enc_array(out, &v, &q, depth, base);
    if (rc) return rc;
    skip_ws(&q);
    return (size_t)(q - value) != value_len ? bad_value(&v, "text after the array", q) : TIO_OK;
}
