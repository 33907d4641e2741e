/*
 * GGUF — llama.cpp/ggml's model file (ggml docs/gguf.md), versions 2 and 3.
 *
 *   "GGUF" | u32 version | u64 tensor count | u64 KV count
 *   KV: string key | u32 type | value   (string: u64 length + bytes;
 *       array: u32 element type + u64 count + elements)
 *   tensor info: string name | u32 n_dims | n_dims × i64 ne | i32 ggml type |
 *       u64 offset (relative to the data section)
 *   padding to general.alignment (u32, default 32) | tensor data, each
 *   padded to the alignment
 *
 * The reader takes what ggml's gguf_init_from_file takes and refuses what it
 * refuses (counts, strings past the end, empty or duplicate keys, n_dims > 4,
 * a dims product that overflows, unknown types, a row not a whole number of
 * blocks, offsets other than the packed ones, alignment not a power of two),
 * plus tio_limits. Shapes are row-major: ne reversed, as gguf-py reports them.
 * Block-quantized tensors are TIO_LAYOUT_QUANT; the KV pairs become typed
 * container metadata (src/gguf/kv.c). The writer writes what gguf-py's
 * GGUFWriter writes: the same layout, zero padding. docs/formats/gguf.md.
 */
#include "core/internal.h"
#include "gguf/gguf.h"
#include "quant/quant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define G GGUF_NAME
#define GGUF_MAX_DIMS 4u
#define GGUF_MAX_NAME 64u /* ggml's GGML_MAX_NAME: names are shorter */
#define GGUF_DEFAULT_ALIGN 32u

/* ggml's plain element types and the tensio dtypes they are. */
static const struct {
    int32_t ggml;
    tio_dtype dtype;
} plain[] = {
    {0, TIO_FLOAT32}, {1, TIO_FLOAT16}, {24, TIO_INT8},    {25, TIO_INT16},
    {26, TIO_INT32},  {27, TIO_INT64},  {28, TIO_FLOAT64}, {30, TIO_BFLOAT16},
};

static int32_t ggml_of_dtype(tio_dtype d) {
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        if (plain[i].dtype == d) return plain[i].ggml;
    return -1;
}

static int gguf_probe(const uint8_t *data, size_t size) {
    if (size < 8 || memcmp(data, "GGUF", 4) != 0) return 0;
    uint32_t v = tio__ld32(data + 4);
    return v == 2 || v == 3 ? 100 : 60;
}

/* ------------------------------------------------------------------- read */

typedef struct gkey {
    const uint8_t *p;
    size_t n;
    size_t index;
} gkey;

static int gkey_cmp(const void *a, const void *b) {
    const gkey *x = a, *y = b;
    size_t m = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->p, y->p, m);
    if (c) return c;
    if (x->n != y->n) return x->n < y->n ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Refuses a duplicate among keys[0..n) (sorted here): `what` names them,
 * `code` and `why` say why not. */
static int no_duplicates(gkey *keys, size_t n, const char *what, int code, const char *why,
                         tio_error *err) {
    if (n > 1) qsort(keys, n, sizeof *keys, gkey_cmp);
    for (size_t i = 1; i < n; i++) {
        if (keys[i].n != keys[i - 1].n || memcmp(keys[i].p, keys[i - 1].p, keys[i].n)) continue;
        char esc[96];
        tio__escape(keys[i].p, keys[i].n, esc, sizeof esc);
        return tio__err(err, code, G, -1, "%s %zu and %zu are both '%s' (%s)", what,
                        keys[i - 1].index, keys[i].index, esc, why);
    }
    return TIO_OK;
}

/* A key or tensor name: length, bytes; no NUL inside (C strings). A key is
 * never empty; a tensor name may be (gguf-py writes "", ggml reads it). */
static int read_name(tio_cursor *cur, const tio_read_ctx *ctx, const char *what, size_t max,
                     int may_be_empty, const uint8_t **p, uint64_t *n, tio_error *err) {
    size_t at = cur->pos;
    int rc = tio__cursor_u64(cur, n, what, err);
    if (rc) return rc;
    if (*n > ctx->limits.max_name_bytes || *n >= max)
        return tio__err(err, *n >= max ? TIO_E_CORRUPT : TIO_E_LIMIT, G, (int64_t)at,
                        "%s of %llu bytes exceeds %s %zu", what, (unsigned long long)*n,
                        *n >= max ? "ggml's limit" : "max_name_bytes",
                        *n >= max ? max - 1 : (size_t)ctx->limits.max_name_bytes);
    rc = tio__cursor_bytes(cur, *n, p, what, err);
    if (rc) return rc;
    if (*n == 0 && !may_be_empty)
        return tio__err(err, TIO_E_CORRUPT, G, (int64_t)at, "%s is empty", what);
    if (memchr(*p, 0, (size_t)*n))
        return tio__err(err, TIO_E_UNSUPPORTED, G, (int64_t)at + 8,
                        "%s holds a NUL byte (ggml's names are C strings)", what);
    return TIO_OK;
}

/* The header (KV pairs and tensor infos) so far is within max_header_bytes. */
static int header_limit(const tio_cursor *cur, const tio_read_ctx *ctx, tio_error *err) {
    if (cur->pos <= ctx->limits.max_header_bytes) return TIO_OK;
    return tio__err(err, TIO_E_LIMIT, G, (int64_t)cur->pos,
                    "the header passes max_header_bytes %llu",
                    (unsigned long long)ctx->limits.max_header_bytes);
}

static int set_prop(tio_container *c, const char *k, uint64_t v, tio_error *err) {
    char b[TIO__DEC_CAP];
    return tio__kv_append(&c->props, k, tio__u64_dec(b, v), err);
}

/* Reads the KV pairs into typed metadata; *align gets general.alignment. */
static int read_kvs(tio_cursor *cur, tio_read_ctx *ctx, uint64_t n_kv, uint32_t *align,
                    tio_error *err) {
    gkey *keys = n_kv ? malloc((size_t)n_kv * sizeof *keys) : NULL;
    if (n_kv && !keys) return tio__nomem(err, G);
    gguf_buf text = {0}, tname = {0}, key = {0};
    int rc = TIO_OK;
    uint64_t bad_bool = 0;
    for (uint64_t i = 0; i < n_kv && !rc; i++) {
        const uint8_t *kp;
        uint64_t kn;
        size_t at = cur->pos;
        rc = read_name(cur, ctx, "key", SIZE_MAX, 0, &kp, &kn, err);
        uint32_t type = 0;
        if (!rc) rc = tio__cursor_u32(cur, &type, "value type", err);
        if (rc) break;
        keys[i] = (gkey){kp, (size_t)kn, (size_t)i};
        text.len = tname.len = key.len = 0;
        rc = gguf__read_value(cur, ctx, type, 0, &text, &tname, &bad_bool, err);
        if (rc) break;
        gguf__put(&key, kp, (size_t)kn);
        gguf__put(&key, "", 1);
        gguf__put(&text, "", 1);
        gguf__put(&tname, "", 1);
        if (text.oom || tname.oom || key.oom) {
            rc = tio__nomem(err, G);
            break;
        }
        if (strcmp(key.p, "general.alignment") == 0) {
            if (type != GGUF_U32) {
                rc = tio__err(err, TIO_E_CORRUPT, G, (int64_t)at,
                              "general.alignment is %s (expected uint32, as ggml requires)",
                              tname.p);
                break;
            }
            *align = (uint32_t)strtoul(text.p, NULL, 10);
            if (*align == 0 || (*align & (*align - 1))) {
                rc = tio__err(err, TIO_E_CORRUPT, G, (int64_t)at,
                              "general.alignment is %lu (expected a power of two)",
                              (unsigned long)*align);
                break;
            }
        }
        /* a string value may hold NUL bytes: its length goes along */
        rc = tio__meta_append_typed_n(ctx->c, key.p, (size_t)kn, text.p, text.len - 1, tname.p,
                                      err);
        if (!rc) rc = header_limit(cur, ctx, err);
    }
    if (!rc) rc = no_duplicates(keys, (size_t)n_kv, "keys", TIO_E_CORRUPT,
                                "ggml refuses duplicates", err);
    if (!rc && bad_bool)
        rc = tio__warn(ctx, G, -1, err,
                       "%llu bool value%s neither 0 nor 1 (read as true, as ggml does; "
                       "written back as 1)",
                       (unsigned long long)bad_bool, bad_bool == 1 ? " is" : "s are");
    free(keys);
    free(text.p);
    free(tname.p);
    free(key.p);
    return rc;
}

typedef struct ginfo {
    int64_t shape[GGUF_MAX_DIMS];
    uint32_t rank;
    int32_t type;
    uint64_t offset;
    size_t at; /* of the info */
    const uint8_t *name;
    size_t name_len;
} ginfo;

static int read_info(tio_cursor *cur, tio_read_ctx *ctx, size_t i, ginfo *g, tio_error *err) {
    uint64_t nl;
    g->at = cur->pos;
    int rc = read_name(cur, ctx, "tensor name", GGUF_MAX_NAME, 1, &g->name, &nl, err);
    if (rc) return rc;
    g->name_len = (size_t)nl;
    size_t at = cur->pos;
    rc = tio__cursor_u32(cur, &g->rank, "n_dims", err);
    if (rc) return rc;
    if (g->rank > GGUF_MAX_DIMS || g->rank > ctx->limits.max_rank)
        return tio__err(err, g->rank > GGUF_MAX_DIMS ? TIO_E_CORRUPT : TIO_E_LIMIT, G,
                        (int64_t)at, "tensor %zu: n_dims %lu exceeds %lu", i,
                        (unsigned long)g->rank,
                        (unsigned long)(g->rank > GGUF_MAX_DIMS ? GGUF_MAX_DIMS
                                                                : ctx->limits.max_rank));
    for (uint32_t d = 0; d < g->rank && !rc; d++) {
        at = cur->pos;
        int64_t ne;
        rc = tio__cursor_i64(cur, &ne, "dim", err);
        if (!rc && ne < 0)
            rc = tio__err(err, TIO_E_CORRUPT, G, (int64_t)at, "tensor %zu: ne[%lu] is %lld "
                          "(expected >= 0)", i, (unsigned long)d, (long long)ne);
        g->shape[g->rank - 1 - d] = ne; /* row-major: ne reversed */
    }
    if (!rc) rc = tio__shape_size(g->shape, g->rank, 4, NULL, NULL, G, (int64_t)g->at, err);
    uint32_t t = 0;
    at = cur->pos;
    if (!rc) rc = tio__cursor_u32(cur, &t, "ggml type", err);
    if (!rc) rc = tio__cursor_u64(cur, &g->offset, "data offset", err);
    g->type = (int32_t)t;
    if (rc) return rc;
    int known = tio__quant_info(g->type) != NULL;
    for (size_t k = 0; k < sizeof plain / sizeof plain[0]; k++) known |= plain[k].ggml == g->type;
    if (!known)
        return tio__err(err, TIO_E_DTYPE, G, (int64_t)at,
                        "tensor %zu: ggml type %ld is not one tensio knows (expected a type of "
                        "ggml's enum ggml_type)",
                        i, (long)g->type);
    return TIO_OK;
}

static int add_tensor(tio_read_ctx *ctx, size_t i, const ginfo *g, uint64_t data_at,
                      uint32_t align, uint64_t *expect, tio_error *err) {
    tio_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.rank = g->rank;
    d.shape = g->shape;
    const tio_quant_info *qi = tio__quant_info(g->type);
    uint64_t numel = 1;
    for (uint32_t k = 0; k < g->rank; k++) numel *= (uint64_t)g->shape[k]; /* checked */
    uint64_t nbytes;
    if (qi) {
        d.layout = TIO_LAYOUT_QUANT;
        d.dtype = TIO_FLOAT32;
        int64_t row = g->rank ? g->shape[g->rank - 1] : 1;
        if (row % qi->elems)
            return tio__err(err, TIO_E_CORRUPT, G, (int64_t)g->at,
                            "tensor %zu: %s rows of %lld elements are not whole blocks of %u",
                            i, qi->name, (long long)row, (unsigned)qi->elems);
        nbytes = numel / qi->elems * qi->bytes;
    } else {
        for (size_t k = 0; k < sizeof plain / sizeof plain[0]; k++)
            if (plain[k].ggml == g->type) d.dtype = plain[k].dtype;
        if (tio__mul64_ovf(numel, tio_dtype_size(d.dtype), &nbytes))
            return tio__err(err, TIO_E_OVERFLOW, G, (int64_t)g->at, "tensor %zu: size "
                            "overflows", i);
    }
    if (g->offset != *expect)
        return tio__err(err, TIO_E_CORRUPT, G, (int64_t)g->at,
                        "tensor %zu: data offset %llu, expected %llu (ggml requires the tensors "
                        "packed in order, each padded to the alignment %lu)",
                        i, (unsigned long long)g->offset, (unsigned long long)*expect,
                        (unsigned long)align);
    uint64_t start, end, padded;
    if (tio__add64_ovf(data_at, g->offset, &start) || tio__add64_ovf(start, nbytes, &end) ||
        !tio__align_up(g->offset + nbytes, align, &padded) || end > ctx->size)
        return tio__err(err, TIO_E_BOUNDS, G, (int64_t)g->at,
                        "tensor %zu: data [%llu, +%llu) pass the end of the data (%zu bytes)",
                        i, (unsigned long long)start, (unsigned long long)nbytes, ctx->size);
    *expect = padded;
    char name[GGUF_MAX_NAME];
    memcpy(name, g->name, g->name_len);
    name[g->name_len] = 0;
    d.name = name;
    d.data = ctx->data + start;
    d.nbytes = (size_t)nbytes;
    return tio__container_add_quant_view(ctx->c, &d, qi ? (tio_quant)g->type : TIO_QUANT_NONE,
                                         (int64_t)start, G, err);
}

/* Whether p[0..n) is all zero. */
static int all_zero(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

static int gguf_read(tio_read_ctx *ctx, tio_error *err) {
    tio_cursor cur;
    tio__cursor_init(&cur, ctx->data, ctx->size, G);
    const uint8_t *magic;
    int rc = tio__cursor_bytes(&cur, 4, &magic, "magic", err);
    if (rc) return rc;
    if (memcmp(magic, "GGUF", 4) != 0) {
        char esc[32];
        tio__escape(magic, 4, esc, sizeof esc);
        return tio__err(err, TIO_E_MAGIC, G, 0, "magic is \"%s\" (expected \"GGUF\")", esc);
    }
    uint32_t version;
    uint64_t n_tensors, n_kv;
    rc = tio__cursor_u32(&cur, &version, "version", err);
    if (rc) return rc;
    if (version != 2 && version != 3)
        return tio__err(err, TIO_E_UNSUPPORTED, G, 4, "version %lu%s (expected 2 or 3)",
                        (unsigned long)version,
                        version == 1 ? ": GGUFv1 (32-bit counts), which ggml no longer reads"
                        : (version & 0xFFFF) == 0 ? ": a big-endian file" : "");
    rc = tio__cursor_u64(&cur, &n_tensors, "tensor count", err);
    if (!rc) rc = tio__cursor_u64(&cur, &n_kv, "KV count", err);
    if (rc) return rc;
    /* a tensor info takes at least 8+1+4+4+8 bytes, a KV pair 8+1+4+1 */
    if (n_tensors > ctx->limits.max_tensors)
        return tio__err(err, TIO_E_LIMIT, G, 8, "tensor count %llu exceeds max_tensors %llu",
                        (unsigned long long)n_tensors,
                        (unsigned long long)ctx->limits.max_tensors);
    if (n_kv > ctx->limits.max_objects)
        return tio__err(err, TIO_E_LIMIT, G, 16, "KV count %llu exceeds max_objects %llu",
                        (unsigned long long)n_kv, (unsigned long long)ctx->limits.max_objects);
    if (n_tensors > tio__cursor_left(&cur) / 25 || n_kv > tio__cursor_left(&cur) / 14 ||
        n_tensors * 25 + n_kv * 14 > tio__cursor_left(&cur))
        return tio__err(err, TIO_E_TRUNCATED, G, 8,
                        "%llu tensor infos and %llu KV pairs need more than the %zu bytes left",
                        (unsigned long long)n_tensors, (unsigned long long)n_kv,
                        tio__cursor_left(&cur));
    tio_container *c = ctx->c;
    uint32_t align = GGUF_DEFAULT_ALIGN;
    rc = read_kvs(&cur, ctx, n_kv, &align, err);
    if (rc) return rc;
    ginfo *gi = n_tensors ? malloc((size_t)n_tensors * sizeof *gi) : NULL;
    gkey *names = n_tensors ? malloc((size_t)n_tensors * sizeof *names) : NULL;
    if (n_tensors && (!gi || !names)) {
        free(gi);
        free(names);
        return tio__nomem(err, G);
    }
    for (size_t i = 0; i < n_tensors && !rc; i++) {
        rc = read_info(&cur, ctx, i, &gi[i], err);
        if (!rc) rc = header_limit(&cur, ctx, err);
        if (!rc) names[i] = (gkey){gi[i].name, gi[i].name_len, i};
    }
    if (!rc) rc = no_duplicates(names, (size_t)n_tensors, "tensors", TIO_E_CORRUPT,
                                "ggml refuses duplicates", err);
    free(names);
    uint64_t header_end = cur.pos, data_at = header_end, expect = 0;
    if (!rc && n_tensors) {
        if (!tio__align_up(header_end, align, &data_at) || data_at > ctx->size)
            rc = tio__err(err, TIO_E_TRUNCATED, G, (int64_t)header_end,
                          "the data section starts at %llu (the header padded to %lu), past "
                          "the end (%zu bytes)",
                          (unsigned long long)data_at, (unsigned long)align, ctx->size);
        else if (!all_zero(ctx->data + header_end, (size_t)(data_at - header_end)))
            rc = tio__warn(ctx, G, (int64_t)header_end, err,
                           "the padding before the data section is not all zero");
    }
    for (size_t i = 0; i < n_tensors && !rc; i++) {
        rc = add_tensor(ctx, i, &gi[i], data_at, align, &expect, err);
        /* the padding after the tensor, where the file has it */
        if (!rc) {
            const tio_tensor *t = c->tensors[c->count - 1];
            uint64_t pad_at = data_at + gi[i].offset + t->nbytes;
            uint64_t pad_end = data_at + expect < ctx->size ? data_at + expect : ctx->size;
            if (pad_end > pad_at && !all_zero(ctx->data + pad_at, (size_t)(pad_end - pad_at)))
                rc = tio__warn(ctx, G, (int64_t)pad_at, err,
                               "tensor %zu: the padding after its data is not all zero", i);
        }
    }
    free(gi);
    if (rc) return rc;
    uint64_t end = n_tensors ? data_at + expect : header_end;
    if (end < ctx->size)
        rc = tio__warn(ctx, G, (int64_t)end, err,
                       "%llu trailing bytes after the last tensor's padded data",
                       (unsigned long long)(ctx->size - end));
    if (!rc) rc = set_prop(c, "version", version, err);
    if (!rc) rc = set_prop(c, "alignment", align, err);
    if (!rc) rc = set_prop(c, "data_offset", data_at, err);
    if (!rc) rc = set_prop(c, "kv_count", n_kv, err);
    return rc;
}

/* ------------------------------------------------------------------ write */

/* The alignment the file will have: general.alignment, or 32. */
static int write_align(const tio_write_plan *p, uint32_t *align, tio_error *err) {
    const tio_container *c = tio__plan_container(p);
    *align = GGUF_DEFAULT_ALIGN;
    if (tio__plan_flags(p) & TIO_SAVE_DROP_METADATA) return TIO_OK;
    const char *v = tio__kv_get(&c->meta, "general.alignment");
    if (!v) return TIO_OK;
    const char *t = tio__meta_type(c, "general.alignment");
    char *end = NULL;
    unsigned long a = strtoul(v, &end, 10);
    if (!t || strcmp(t, "uint32") != 0 || *end || end == v || a == 0 || a > 0x80000000ul ||
        (a & (a - 1)))
        return tio__err(err, TIO_E_UNSUPPORTED, G, -1,
                        "metadata general.alignment is '%.32s' of type %s (ggml reads only a "
                        "uint32 power of two)",
                        v, t ? t : "string");
    *align = (uint32_t)a;
    return TIO_OK;
}

/* The name tensor i is written under: its own, or its index in decimal. */
static const char *wname(const tio_wtensor *w, size_t i, char buf[TIO__DEC_CAP]) {
    return w->name ? w->name : tio__u64_dec(buf, (uint64_t)i);
}

static int gguf_check(const tio_write_plan *p, tio_error *err) {
    size_t n = tio__plan_count(p);
    unsigned flags = tio__plan_flags(p);
    uint32_t align;
    int rc = write_align(p, &align, err);
    if (rc) return rc;
    gkey *names = n ? malloc(n * sizeof *names) : NULL;
    char (*gen)[TIO__DEC_CAP] = n ? malloc(n * sizeof *gen) : NULL;
    if (n && (!names || !gen)) rc = tio__nomem(err, G);
    for (size_t i = 0; i < n && !rc; i++) {
        const tio_wtensor *w = tio__plan_tensor(p, i);
        const char *nm = wname(w, i, gen[i]);
        names[i] = (gkey){(const uint8_t *)nm, strlen(nm), i};
        if (w->rank > GGUF_MAX_DIMS)
            rc = tio__err(err, TIO_E_UNSUPPORTED, G, -1,
                          "tensor %zu ('%.64s') has %zu dims; GGUF holds at most %u", i, nm,
                          w->rank, GGUF_MAX_DIMS);
        else if (names[i].n >= GGUF_MAX_NAME)
            rc = tio__err(err, TIO_E_UNSUPPORTED, G, -1,
                          "tensor %zu: its name '%.64s...' has %zu bytes; ggml reads names of "
                          "at most %u",
                          i, nm, names[i].n, GGUF_MAX_NAME - 1);
        else if (tio_tensor_meta_count(w->src) && !(flags & TIO_SAVE_DROP_METADATA))
            rc = tio__err(err, TIO_E_LOSSY, G, -1,
                          "tensor %zu ('%s') has metadata and GGUF stores only the file's KV "
                          "pairs (TIO_SAVE_DROP_METADATA / --drop-metadata drops it)",
                          i, nm);
        else if (w->layout != TIO_LAYOUT_QUANT && ggml_of_dtype(w->dtype) < 0)
            rc = tio__err(err, TIO_E_DTYPE, G, -1, "tensor %zu: %s has no ggml type", i,
                          tio_dtype_name(w->dtype));
    }
    if (!rc)
        rc = no_duplicates(names, n, "tensors", TIO_E_UNSUPPORTED,
                           "GGUF names are unique; an unnamed tensor is written under its index",
                           err);
    free(names);
    free(gen);
    return rc;
}

/* general.file_type (a uint32 llama_ftype: "the type of the majority of
 * the tensors", ggml docs/gguf.md) as the tensors are written. Where the
 * save changed a tensor's type (--cast, --dequantize) and every tensor
 * written is F32, F16, BF16 or an integer, the float type that holds the
 * most elements: 0 (ALL_F32), 1 (MOSTLY_F16) or 32 (MOSTLY_BF16). Else the
 * source's value: the types kept, a quantized tensor left (its block type
 * stays the majority's), or a float64 (no llama_ftype names it). */
static const char *file_type(const tio_write_plan *p, const char *v, char buf[TIO__DEC_CAP]) {
    static const struct {
        tio_dtype dtype;
        uint64_t ftype;
    } ft[] = {{TIO_FLOAT32, 0}, {TIO_FLOAT16, 1}, {TIO_BFLOAT16, 32}};
    uint64_t count[3] = {0, 0, 0};
    bool changed = false;
    for (size_t i = 0; i < tio__plan_count(p); i++) {
        const tio_wtensor *w = tio__plan_tensor(p, i);
        if (w->layout == TIO_LAYOUT_QUANT || w->dtype == TIO_FLOAT64) return v;
        if (w->src->layout == TIO_LAYOUT_QUANT || w->src->dtype != w->dtype) changed = true;
        for (size_t k = 0; k < 3; k++)
            if (w->dtype == ft[k].dtype) count[k] += w->numel;
    }
    size_t most = 0;
    for (size_t k = 1; k < 3; k++)
        if (count[k] > count[most]) most = k;
    return changed && count[most] ? tio__u64_dec(buf, ft[most].ftype) : v;
}

static void put_string(gguf_buf *b, const char *s) {
    gguf__put_u64(b, strlen(s));
    gguf__put(b, s, strlen(s));
}

static int gguf_write(tio_write_plan *p, tio_sink *s, tio_error *err) {
    const tio_container *c = tio__plan_container(p);
    size_t n = tio__plan_count(p);
    unsigned flags = tio__plan_flags(p);
    uint32_t align;
    int rc = write_align(p, &align, err);
    if (rc) return rc;
    /* version: the one asked for, else the source's when it was a GGUF, else 3 */
    unsigned version = tio__plan_version(p);
    const char *sv = c->format && strcmp(c->format, G) == 0 ? tio__kv_get(&c->props, "version")
                                                            : NULL;
    if (!version) version = sv && strcmp(sv, "2") == 0 ? 2 : 3;
    size_t n_kv = flags & TIO_SAVE_DROP_METADATA ? 0 : c->meta.count;
    gguf_buf b = {0};
    gguf__put(&b, "GGUF", 4);
    gguf__put_u32(&b, version);
    gguf__put_u64(&b, n);
    gguf__put_u64(&b, n_kv);
    for (size_t i = 0; i < n_kv && !rc; i++) {
        const char *k = c->meta.keys[i], *t = tio__meta_type(c, k), *v = c->meta.values[i];
        size_t vlen = c->meta.vlens[i];
        char ftype[TIO__DEC_CAP];
        if (t && strcmp(t, "uint32") == 0 && strcmp(k, "general.file_type") == 0 &&
            (v = file_type(p, v, ftype)) != c->meta.values[i])
            vlen = strlen(v);
        put_string(&b, k);
        rc = gguf__write_value(&b, k, v, vlen, t, err);
    }
    uint64_t off = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const tio_wtensor *w = tio__plan_tensor(p, i);
        char gen[TIO__DEC_CAP];
        put_string(&b, wname(w, i, gen));
        gguf__put_u32(&b, (uint32_t)w->rank);
        for (size_t d = w->rank; d-- > 0;) gguf__put_u64(&b, (uint64_t)w->shape[d]);
        gguf__put_u32(&b, (uint32_t)(w->layout == TIO_LAYOUT_QUANT ? (int32_t)w->src->quant
                                                                    : ggml_of_dtype(w->dtype)));
        gguf__put_u64(&b, off);
        if (!tio__align_up(off + w->nbytes, align, &off))
            rc = tio__err(err, TIO_E_OVERFLOW, G, -1, "the data section overflows 64 bits");
    }
    if (!rc && n) {
        static const uint8_t zeros[64];
        while (b.len % align) gguf__put(&b, zeros, align - b.len % align > 64 ? 64 : align - b.len % align);
    }
    if (!rc && b.oom) rc = tio__nomem(err, G);
    if (!rc) rc = tio__sink_write(s, b.p, b.len, err);
    free(b.p);
    for (size_t i = 0; i < n && !rc; i++) {
        const tio_wtensor *w = tio__plan_tensor(p, i);
        rc = tio__plan_sink_tensor(p, s, i, err);
        size_t pad = (size_t)((align - w->nbytes % align) % align);
        if (!rc && pad) rc = tio__sink_zeros(s, pad, err);
    }
    return rc;
}

/* The header's extent, for a remote source: the KV pairs and tensor infos
 * walked as read() walks them, to the data section's padded start; where
 * the bytes run out, twice as many are asked for. Anything read() refuses
 * (a type it does not know, too many dims) ends the walk: read() names it
 * from the bytes at hand. */
static void gguf_head(const uint8_t *d, size_t have, uint64_t size, const tio_limits *limits,
                      uint64_t *need) {
    static const uint8_t scalar[GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    (void)limits;
    (void)size;
    uint64_t pos = 24, n;
    *need = have; /* read() decides */
    if (have < 24) {
        *need = 24;
        return;
    }
#define GH_HAVE(k) ((k) <= have - pos)
#define GH_MORE()                                                          \
    do {                                                                   \
        *need = have > UINT64_MAX / 2 ? UINT64_MAX : (uint64_t)have * 2;   \
        return;                                                            \
    } while (0)
    uint64_t n_t = tio__ld64(d + 8), n_kv = tio__ld64(d + 16);
    uint64_t align = GGUF_DEFAULT_ALIGN;
    for (uint64_t i = 0; i < n_kv; i++) {
        if (!GH_HAVE(8)) GH_MORE();
        n = tio__ld64(d + pos);
        pos += 8;
        if (!GH_HAVE(n) || 4 > have - pos - n) GH_MORE();
        int is_align = n == 17 && memcmp(d + pos, "general.alignment", 17) == 0;
        pos += n;
        uint32_t type = tio__ld32(d + pos), et = type;
        pos += 4;
        uint64_t count = 1;
        if (type == GGUF_ARRAY) {
            if (!GH_HAVE(12)) GH_MORE();
            et = tio__ld32(d + pos);
            count = tio__ld64(d + pos + 4);
            pos += 12;
        }
        if (et >= GGUF_TYPE_COUNT || et == GGUF_ARRAY) return;
        if (is_align && type == GGUF_U32 && GH_HAVE(4)) align = tio__ld32(d + pos);
        if (et == GGUF_STRING) {
            for (uint64_t k = 0; k < count; k++) {
                if (!GH_HAVE(8)) GH_MORE();
                n = tio__ld64(d + pos);
                pos += 8;
                if (!GH_HAVE(n)) GH_MORE();
                pos += n;
            }
        } else {
            if (count > (have - pos) / scalar[et]) GH_MORE();
            pos += count * scalar[et];
        }
    }
    for (uint64_t i = 0; i < n_t; i++) {
        if (!GH_HAVE(8)) GH_MORE();
        n = tio__ld64(d + pos);
        pos += 8;
        if (!GH_HAVE(n) || 4 > have - pos - n) GH_MORE();
        pos += n;
        uint32_t nd = tio__ld32(d + pos);
        pos += 4;
        if (nd > GGUF_MAX_DIMS) return;
        if (!GH_HAVE(8u * nd + 12)) GH_MORE();
        pos += 8u * nd + 12;
    }
#undef GH_HAVE
#undef GH_MORE
    if (align == 0 || (align & (align - 1))) return;
    uint64_t at;
    *need = n_t && tio__align_up(pos, align, &at) ? at : pos;
}

/* ------------------------------------------------------------- descriptor */

extern const tio_format_desc tio__format_gguf;
const tio_format_desc tio__format_gguf = {
    .name = "gguf",
    .description = "llama.cpp/ggml GGUF (v2, v3; typed KV metadata, block-quantized tensors)",
    .extensions = ".gguf",
    .caps = TIO_CAP_NAMES | TIO_CAP_METADATA | TIO_CAP_QUANT | TIO__CAP_META_NUL,
    .dtypes = TIO_DTYPE_BIT(TIO_INT8) | TIO_DTYPE_BIT(TIO_INT16) | TIO_DTYPE_BIT(TIO_INT32) |
              TIO_DTYPE_BIT(TIO_INT64) | TIO_DTYPE_BIT(TIO_FLOAT16) |
              TIO_DTYPE_BIT(TIO_BFLOAT16) | TIO_DTYPE_BIT(TIO_FLOAT32) |
              TIO_DTYPE_BIT(TIO_FLOAT64),
    .versions = (1u << 2) | (1u << 3),
    .probe = gguf_probe,
    .read = gguf_read,
    .head = gguf_head,
    .check = gguf_check,
    .write = gguf_write,
};
