/*
 * ZIO TENS: the probe and the reader (a .zmsg file, or a message's frames):
 * the prefix, the coordinates, the label (a fast path for the plain labels
 * tensio and ZIO write, jansson for the rest) and the payload views.
 */
#include "core/internal.h"
#include "zio/zio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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


/* ------------------------------------------------------------------ probe */

/* The first part's size field and "ZIO" at the start of that part. */
int tio__zio_probe(const uint8_t *data, size_t size) {
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
    tio_buf text;          /* scratch for metadata values */
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
    if (!tio__json_text(&r->text, v)) return tio__nomem(err, ZIO_FMT);
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
        if (tio__zio_kinds[k].kind == ks[0] && tio__zio_kinds[k].word == wv)
            kind = &tio__zio_kinds[k];
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
        const char **keys = tio__json_sorted_keys(meta, &nk);
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

/* The opening of a plain label, up to its first tensor entry. */
static bool zs_tensors_open(zio_scan *s) {
    return zs_ch(s, '{') && zs_key(s, "TENS") && zs_ch(s, '{') && zs_key(s, "tensors") &&
           zs_ch(s, '[');
}

/* The bytes of entry e's data in words of `word` bytes: false where its
 * element count or its bytes pass INT64_MAX. */
static bool zio_fent_nbytes(const zio_fent *e, uint64_t word, uint64_t *nbytes) {
    uint64_t numel = 1;
    for (size_t d = 0; d < e->rank; d++)
        if (tio__mul64_ovf(numel, (uint64_t)e->dims[d], &numel) || numel > (uint64_t)INT64_MAX)
            return false;
    return !tio__mul64_ovf(numel, word, nbytes) && *nbytes <= (uint64_t)INT64_MAX;
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
    if (!zs_tensors_open(&s)) return ZIO_FAST_NO;
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
            if ((uint8_t)tio__zio_kinds[k].kind == e->dtype && tio__zio_kinds[k].word == e->word)
                e->kind = &tio__zio_kinds[k];
        if (!e->kind) break;
        uint64_t pi = e->has_part ? e->part : i;
        if (pi >= r->npayload || r->used[pi] != SIZE_MAX) break;
        uint64_t nbytes;
        if (!zio_fent_nbytes(e, e->kind->word, &nbytes) ||
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
    if (!tio__json_depth_ok(root, 1, ctx->limits.max_depth))
        return zio_lerr(r, err, TIO_E_LIMIT, "the label nests deeper than the limit of %u (max_depth)",
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
                        "TENS.tensors has %zu entries, more than the limit of %llu (max_tensors)", nt,
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
        const char **keys = tio__json_sorted_keys(tmeta, &nk);
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
    c->native_free = tio__zio_native_free;
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

int tio__zio_read_parts(tio_read_ctx *ctx, const tio_rpart *parts, size_t n, tio_error *err) {
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

/* A .zmsg of many large tensors: each part's size field says where the next
 * part starts, so reading them one after another is a pread() each that the
 * next one waits for (10,000 of them for a 1 GiB file of 10,000 tensors).
 * A plain label (the kind zio_label_fast reads) gives every payload part's
 * size before the first is read: from it, where each payload part's size
 * field should lie, ZIO_AHEAD bytes at each read by a thread
 * (tio__headsrc_ahead, from the last down) while the loop reads from the
 * first. Only a prediction: the loop reads and checks every size field as
 * before, and one the prediction missed (a size in the 5-byte form below
 * 255, a label that does not match its parts) is read by the loop itself.
 * Taken only for at least ZIO_AHEAD_MIN parts that lie a header window
 * apart on average (the thread's reads stay below 1/3,000 of the input);
 * else NULL. The label is scanned here and again by the decoder (zio_label
 * needs the parts split first): a pass over bytes already in memory,
 * against a dependent read per part. *n is the number of offsets; start is where payload part 0's
 * size field lies. */
#define ZIO_AHEAD 5u
#define ZIO_AHEAD_MIN 256u
static uint64_t *zio_ahead(const tio_read_ctx *ctx, const tio_rpart *p0, uint64_t start,
                           size_t size, size_t *n) {
    *n = 0;
    if (p0->size < ZIO_PREFIX_LEN || start >= size || (ctx->flags & TIO__OPEN_GENERAL_ONLY))
        return NULL;
    zio_scan s = {p0->data + ZIO_PREFIX_LEN, p0->data + p0->size};
    if (!zs_tensors_open(&s)) return NULL;
    /* an entry takes over 16 bytes of label, a part at least 1 byte of the
     * rest of the file: the array (8 bytes a part) is at most half the label */
    size_t cap = 0, nent = 0, most = (p0->size - ZIO_PREFIX_LEN) / 16;
    if (most > size - (size_t)start) most = size - (size_t)start;
    uint64_t *sz = NULL; /* by payload index: its size, or UINT64_MAX */
    zio_fent e;
    do {
        if (nent == most || (uint64_t)nent == ctx->limits.max_tensors ||
            !zio_fast_entry(&s, &e))
            break;
        uint64_t nbytes = 0, pi = e.has_part ? e.part : nent;
        if (!zio_fent_nbytes(&e, e.word, &nbytes) || nbytes > UINT32_MAX || pi >= most) break;
        if (pi >= cap) {
            size_t ncap = cap ? cap : 64;
            while (ncap <= pi) ncap = ncap > most / 2 ? most : ncap * 2;
            uint64_t *nsz = realloc(sz, ncap * sizeof *nsz);
            if (!nsz) break;
            for (size_t k = cap; k < ncap; k++) nsz[k] = UINT64_MAX;
            sz = nsz;
            cap = ncap;
        }
        sz[pi] = nbytes;
        nent++;
    } while (zs_ch(&s, ','));
    /* the size fields' offsets, in place of the sizes, up to the first part
     * no entry gave a size or that would pass the end */
    size_t k = 0;
    uint64_t pos = start;
    for (; k < cap && sz[k] != UINT64_MAX && pos < size; k++) {
        uint64_t len = sz[k];
        sz[k] = pos;
        if (tio__add64_ovf(pos, (len < ZIO_BIG_SIZE ? 1u : 5u) + len, &pos)) {
            k++;
            break;
        }
    }
    if (k < ZIO_AHEAD_MIN || (size - (size_t)start) / k < TIO__HEAD_WINDOW) {
        free(sz);
        return NULL;
    }
    *n = k;
    return sz;
}

/* A .zmsg buffer: split into parts (one pass; the array doubles, bounded by
 * the parts present), then decoded as a message. */
int tio__zio_read(tio_read_ctx *ctx, tio_error *err) {
    uint64_t max_parts = ctx->limits.max_tensors;
    if (max_parts > (UINT64_MAX - 2) / 2) max_parts = UINT64_MAX;
    else max_parts = max_parts * 2 + 2;
    size_t count = 0, cap = 0, hdr = 0, len = 0;
    tio_rpart *parts = NULL;
    tio_cursor cur;
    tio__cursor_init(&cur, ctx->data, ctx->size, ZIO_FMT);
    tio__cursor_use_head(&cur, ctx);
    int rc = TIO_OK;
    uint64_t *ahead = NULL;
    while (rc == TIO_OK && tio__cursor_left(&cur) > 0) {
        size_t pos = cur.pos;
        if (count == ZIO_HEADER_PARTS && cur.head) {
            size_t nahead = 0;
            ahead = zio_ahead(ctx, &parts[0], pos, ctx->size, &nahead);
            if (ahead) tio__headsrc_ahead(cur.head, ahead, nahead, ZIO_AHEAD);
        }
        if ((uint64_t)count >= max_parts) {
            rc = tio__err(err, TIO_E_LIMIT, ZIO_FMT, (int64_t)pos,
                          "part %zu: more parts than the limit of %llu (2 per tensor + 2: max_tensors)",
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
    if (ahead) {
        tio__headsrc_ahead_end(cur.head);
        free(ahead);
    }
    if (rc == TIO_OK) rc = zio_decode(ctx, parts, count, err);
    free(parts);
    return rc;
}

