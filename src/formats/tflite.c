/*
 * TensorFlow Lite (.tflite, LiteRT): the format descriptor, the probe and the
 * reader of the constant tensors. The schema is data in src/tflite/schema.c
 * (generated from TensorFlow's schema.fbs by scripts/gen_tflite_schema.py).
 *
 * A .tflite file is a FlatBuffers `Model` with the file identifier "TFL3":
 * subgraphs of tensors and operators, and a list of buffers that tensors
 * refer to by index (buffer 0 is the empty sentinel). A buffer holds its
 * bytes inline (`data`, a [ubyte] vector), or, in models past 2 GiB, as an
 * `offset` from the start of the file (valid when > 1) and a `size`.
 *
 * Reading: the whole buffer goes through the FlatBuffers verifier under
 * tensio's limits, then every index the model holds (buffers, operator codes,
 * tensors of operators, subgraph inputs/outputs, signature defs, metadata) is
 * checked, and every tensor whose buffer holds bytes becomes a container
 * tensor viewing them. See docs/formats/tflite.md.
 */
#include "core/internal.h"
#include "flatbuf/flatbuf.h"
#include "graph/budget.h"
#include "formats/torch_objects.h"
#include "tflite/opmap.h"
#include "tflite/schema.h"
#include "tflite/write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TFL "tflite"

typedef struct tfl_reader {
    tio_read_ctx *ctx;
    tio_error *err;
    const uint8_t *buf;
    size_t len;
    tio_fb_vec buffers;   /* Model.buffers (count 0 when absent) */
    uint32_t ncodes;      /* operator codes */
    int32_t *codes;       /* their BuiltinOperator (max of the two fields) */
    uint32_t *canon;      /* the first code of the same builtin operator (else itself):
                             the per-subgraph operator counts are by operator */
    char *text;           /* scratch for names and props */
    size_t text_cap;
    unsigned forms;       /* 1: inline buffers seen, 2: offset buffers seen */
    uint64_t viewed;      /* bytes the tensors view so far */
    int64_t *ctensor;     /* each subgraph's tensors' container tensor, or -1
                             (subgraph sg's from sgbase[sg]) */
    size_t *sgbase;
    struct tfl_range {
        const uint8_t *data;
        uint64_t n;
        int64_t at;
    } *ranges;            /* each buffer's bytes, from the pass over them all (a
                             length read once: tio__fb_bytes) */
    tio_fb_blobs blobs;   /* the byte vectors the verifier checked, with their lengths */
    /* what the copies and walks of shared tables, vectors and strings cost
     * (graph/budget.h): each reference is charged */
    tio_budget mem;
} tfl_reader;

/* The FlatBuffers model is the whole file: buffer positions are file offsets. */
static int64_t tfl_off(const tfl_reader *r, size_t pos) {
    (void)r;
    return (int64_t)pos;
}

/* ------------------------------------------------------------ dtypes */

/* The tensio dtype of a TensorType, or TIO_DTYPE_INVALID. */
static tio_dtype tfl_dtype(int code) {
    switch (code) {
    case TFL_TensorType_FLOAT32: return TIO_FLOAT32;
    case TFL_TensorType_FLOAT16: return TIO_FLOAT16;
    case TFL_TensorType_INT32: return TIO_INT32;
    case TFL_TensorType_UINT8: return TIO_UINT8;
    case TFL_TensorType_INT64: return TIO_INT64;
    case TFL_TensorType_BOOL: return TIO_BOOL;
    case TFL_TensorType_INT16: return TIO_INT16;
    case TFL_TensorType_COMPLEX64: return TIO_COMPLEX64;
    case TFL_TensorType_INT8: return TIO_INT8;
    case TFL_TensorType_FLOAT64: return TIO_FLOAT64;
    case TFL_TensorType_COMPLEX128: return TIO_COMPLEX128;
    case TFL_TensorType_UINT64: return TIO_UINT64;
    case TFL_TensorType_UINT32: return TIO_UINT32;
    case TFL_TensorType_UINT16: return TIO_UINT16;
    case TFL_TensorType_BFLOAT16: return TIO_BFLOAT16;
    case TFL_TensorType_FLOAT8_E4M3FN: return TIO_FLOAT8_E4M3FN;
    case TFL_TensorType_FLOAT8_E5M2: return TIO_FLOAT8_E5M2;
    default: return TIO_DTYPE_INVALID;
    }
}

/* ----------------------------------------------------------- helpers */

/* Scratch text of at least n bytes. */
static char *tfl_scratch(tfl_reader *r, size_t n) {
    if (n <= r->text_cap) return r->text;
    size_t cap = r->text_cap ? r->text_cap : 256;
    while (cap < n) cap *= 2;
    char *t = realloc(r->text, cap);
    if (!t) return NULL;
    r->text = t;
    r->text_cap = cap;
    return t;
}

/* A string field as a C string (*s NULL when absent): refuses embedded NULs
 * and strings past max_name_bytes. */
static int tfl_string(tfl_reader *r, const tio_fb_ref *t, unsigned id, const char *what,
                      const char **s, uint32_t *n) {
    *s = NULL;
    *n = 0;
    if (!tio__fb_string(t, id, s, n)) return TIO_OK;
    size_t pos = tio__fb_field_pos(t, id);
    if (*n > r->ctx->limits.max_name_bytes)
        return tio__err(r->err, TIO_E_LIMIT, TFL, tfl_off(r, pos),
                        "%s: string of %u bytes exceeds the limit of %u", what, *n,
                        r->ctx->limits.max_name_bytes);
    if (memchr(*s, 0, *n))
        return tio__err(r->err, TIO_E_UNSUPPORTED, TFL, tfl_off(r, pos),
                        "%s: the string contains a NUL byte (tensio keeps strings as C strings)",
                        what);
    return TIO_OK;
}

/* Props are appended: each key is set once (a set would scan them all). */
static int tfl_prop(tfl_reader *r, const char *key, const char *value) {
    return tio__kv_append(&r->ctx->c->props, key, value, r->err);
}

static int tfl_prop_u64(tfl_reader *r, const char *key, uint64_t v) {
    char num[TIO__DEC_CAP];
    return tfl_prop(r, key, tio__u64_dec(num, v));
}

/* Checks that every element of an [int] vector of tensor indices is in
 * [lo, n): lo = -1 admits "absent" (an operator's optional input). */
static int tfl_indices(tfl_reader *r, const tio_fb_vec *v, int32_t lo, uint32_t n,
                       const char *what) {
    /* walked here and by the raise, copied into the graph's index lists */
    int rc = tio__budget_take(&r->mem, tio__cost_i64s(v->count), tfl_off(r, v->data), r->err);
    if (rc) return rc;
    for (uint32_t i = 0; i < v->count; i++) {
        int32_t x = tio__fb_vec_i32(v, i);
        if (x < lo || (x >= 0 && (uint32_t)x >= n))
            return tio__err(r->err, TIO_E_CORRUPT, TFL, tfl_off(r, v->data + 4u * i),
                            "%s[%u] is tensor %d, outside [%d, %u) (the subgraph has %u "
                            "tensors)",
                            what, i, x, lo, n, n);
    }
    return TIO_OK;
}

/* The bytes of buffer b: inline data, or the offset/size form (offset > 1).
 * *data is NULL (and *n 0) for an empty buffer. *at is the file offset.
 * `first`: the pass over every buffer, which records the findings. */
static int tfl_buffer(tfl_reader *r, uint32_t b, bool first, const uint8_t **data, uint64_t *n,
                      int64_t *at) {
    *data = NULL;
    *n = 0;
    *at = -1;
    if (!first && r->ranges && b < r->buffers.count) {
        *data = r->ranges[b].data;
        *n = r->ranges[b].n;
        *at = r->ranges[b].at;
        return TIO_OK;
    }
    tio_fb_ref bt;
    if (!tio__fb_vec_table(&r->buffers, b, &bt)) return TIO_OK; /* checked by the caller */
    tio_fb_vec dv;
    bool inl = tio__fb_bytes(&bt, TFL_Buffer_data, r->ctx->head, &r->blobs, &dv) && dv.count > 0;
    uint64_t off = tio__fb_u64(&bt, TFL_Buffer_offset, 0);
    uint64_t size = tio__fb_u64(&bt, TFL_Buffer_size, 0);
    if (off > 1) {
        uint64_t end;
        if (tio__add64_ovf(off, size, &end) || end > r->ctx->size)
            return tio__err(r->err, TIO_E_BOUNDS, TFL,
                            tfl_off(r, tio__fb_field_pos(&bt, TFL_Buffer_offset)),
                            "buffer %u: offset %llu + size %llu extends past the end of the "
                            "file (%zu bytes)",
                            b, (unsigned long long)off, (unsigned long long)size,
                            r->ctx->size);
        if (inl && first) {
            int rc = tio__warn(r->ctx, TFL, tfl_off(r, bt.pos), r->err,
                               "buffer %u has both inline data (%u bytes) and an offset "
                               "(%llu); the inline data are used",
                               b, dv.count, (unsigned long long)off);
            if (rc) return rc;
        } else if (!inl) {
            r->forms |= 2;
            if (size) {
                *data = r->ctx->data + off;
                *n = size;
                *at = (int64_t)off;
            }
            return TIO_OK;
        }
    }
    if (inl) {
        r->forms |= 1;
        *data = tio__fb_vec_data(&dv);
        *n = dv.count;
        *at = tfl_off(r, dv.data);
    }
    return TIO_OK;
}

/* A name for tensor `i` of subgraph `sg` into the scratch text: its own,
 * prefixed with "subgraph<sg>/" past the first subgraph; "tensor<i>" when
 * it has none. */
static int tfl_tensor_name(tfl_reader *r, uint32_t sg, uint32_t i, const char *s, uint32_t n,
                           const char **out) {
    char *t = tfl_scratch(r, (size_t)n + 64);
    if (!t) return tio__nomem(r->err, TFL);
    int k = 0;
    if (sg > 0) k = snprintf(t, 64, "subgraph%u/", sg);
    if (n)
        memcpy(t + k, s, n), t[(size_t)k + n] = '\0';
    else
        snprintf(t + k, 32, "tensor%u", i);
    *out = t;
    return TIO_OK;
}

/* "NAME.LEAF", allocated. */
static char *tfl_key(const char *name, const char *leaf) {
    size_t nl = strlen(name), ll = strlen(leaf);
    char *key = malloc(nl + ll + 2);
    if (!key) return NULL;
    memcpy(key, name, nl);
    key[nl] = '.';
    memcpy(key + nl + 1, leaf, ll + 1);
    return key;
}

/* Typed container metadata `name`.`leaf` = value. */
static int tfl_meta(tfl_reader *r, const char *name, const char *leaf, const char *value,
                    const char *type) {
    size_t vn = strlen(value);
    int rc = tio__budget_take(&r->mem,
                              tio__cost_grown(48) + tio__cost_str(strlen(name) + strlen(leaf) + 1) +
                                  tio__cost_str(vn),
                              -1, r->err);
    if (rc) return rc;
    char *key = tfl_key(name, leaf);
    if (!key) return tio__nomem(r->err, TFL);
    rc = tio__meta_append_typed(r->ctx->c, key, value, type, r->err);
    free(key);
    return rc;
}

/* Charges a view of n bytes for tensor `name`: at most max_tensors tensors,
 * and, as for ONNX, the views may not alias the same bytes over and over
 * (many tensors on one buffer would multiply every per-byte operation): at
 * most 2 x the file + 64 KiB in all. */
static int tfl_view_take(tfl_reader *r, uint64_t n, int64_t at, const char *name) {
    /* the container's record of the tensor, its name and shape */
    int rc = tio__budget_take(&r->mem, TIO_DECODE_MEM_PER_TENSOR + tio__cost_str(strlen(name)),
                              at, r->err);
    if (rc) return rc;
    if (r->ctx->c->count >= r->ctx->limits.max_tensors)
        return tio__err(r->err, TIO_E_LIMIT, TFL, at,
                        "tensor '%s': more than %llu tensors (max_tensors)", name,
                        (unsigned long long)r->ctx->limits.max_tensors);
    uint64_t cap = 2 * (uint64_t)r->ctx->size + (64u << 10);
    if (tio__add64_ovf(r->viewed, n, &r->viewed) || r->viewed > cap)
        return tio__err(r->err, TIO_E_LIMIT, TFL, at,
                        "tensor '%s': the tensors view more than %llu bytes (2 x the %zu bytes "
                        "of the file + 64 KiB): their buffers alias the same bytes",
                        name, (unsigned long long)cap, r->ctx->size);
    return TIO_OK;
}

/* A [float] vector (min, max) as metadata: one value, or a JSON array. */
static int tfl_meta_floats(tfl_reader *r, const char *name, const char *leaf,
                           const tio_fb_vec *v) {
    uint64_t cap = 32 * (uint64_t)v->count + 8;
    if (cap > r->ctx->limits.max_name_bytes)
        return tio__err(r->err, TIO_E_LIMIT, TFL, tfl_off(r, v->data),
                        "tensor '%s': quantization %s has %u values, past what one metadata "
                        "string may hold (max_name_bytes %u)",
                        name, leaf, v->count, r->ctx->limits.max_name_bytes);
    int brc = tio__budget_take(&r->mem, tio__cost_block(cap), tfl_off(r, v->data), r->err);
    if (brc) return brc; /* the text made (a table shared by many tensors: each) */
    char *t = malloc((size_t)cap);
    if (!t) return tio__nomem(r->err, TFL);
    size_t k = 0;
    if (v->count != 1) t[k++] = '[';
    for (uint32_t i = 0; i < v->count; i++) {
        float f;
        uint32_t u = tio__ld32(tio__fb_vec_data(v) + 4u * i);
        memcpy(&f, &u, 4);
        char one[32];
        tio__th_float_text((double)f, 1, one, sizeof one);
        size_t l = strlen(one);
        if (i) t[k++] = ',';
        memcpy(t + k, one, l);
        k += l;
    }
    if (v->count != 1) t[k++] = ']';
    t[k] = '\0';
    int rc = tfl_meta(r, name, leaf, t, v->count == 1 ? "float32" : "array[float32]");
    free(t);
    return rc;
}

/* A tensor view over a quantization vector (per-axis scales or zero points). */
static int tfl_qvector(tfl_reader *r, const char *name, const char *leaf, const tio_fb_vec *v,
                       tio_dtype dt) {
    char *key = tfl_key(name, leaf);
    if (!key) return tio__nomem(r->err, TFL);
    int64_t dim = v->count;
    tio_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = key;
    d.dtype = dt;
    d.rank = 1;
    d.shape = &dim;
    d.layout = TIO_LAYOUT_DENSE;
    d.data = tio__fb_vec_data(v);
    d.nbytes = (size_t)v->count * tio_dtype_size(dt);
    int rc = tfl_view_take(r, d.nbytes, tfl_off(r, v->data), key);
    if (!rc) rc = tio__container_add_view(r->ctx->c, &d, tfl_off(r, v->data), TFL, r->err);
    free(key);
    return rc;
}

/* A constant tensor's quantization parameters, beside it (docs/formats/tflite.md):
 * per tensor NAME.q_scale (float32) and NAME.q_zero_point (int64) as metadata;
 * per axis the tensors NAME.q_scales (float32) and NAME.q_zero_points (int64),
 * views into the file, and NAME.q_axis (int32); NAME.q_min / NAME.q_max when
 * present; NAME.q_details names a QuantizationDetails member. */
static int tfl_quant(tfl_reader *r, const tio_fb_ref *tt, const char *name, const int64_t *dims,
                     uint32_t rank) {
    tio_fb_ref q;
    if (!tio__fb_table(tt, TFL_Tensor_quantization, &q)) return TIO_OK;
    tio_fb_vec sv, zv, mv;
    bool hs = tio__fb_vector(&q, TFL_QuantizationParameters_scale, &sv) && sv.count;
    bool hz = tio__fb_vector(&q, TFL_QuantizationParameters_zero_point, &zv) && zv.count;
    int32_t axis = tio__fb_i32(&q, TFL_QuantizationParameters_quantized_dimension, 0);
    char v[64];
    int rc = TIO_OK;
    if (hz && (!hs || zv.count != sv.count)) {
        /* readable, but the zero points cannot be paired: a finding, and they
         * are left out */
        rc = tio__warn(r->ctx, TFL, tfl_off(r, zv.data), r->err,
                       "tensor '%s': %u zero points for %u scales (expected one per scale); "
                       "the zero points are ignored",
                       name, zv.count, hs ? sv.count : 0);
        if (rc) return rc;
        hz = false;
    }
    if (hs && sv.count == 1 && axis == 0) {
        float f;
        uint32_t u = tio__ld32(tio__fb_vec_data(&sv));
        memcpy(&f, &u, 4);
        tio__th_float_text((double)f, 1, v, sizeof v);
        rc = tfl_meta(r, name, "q_scale", v, "float32");
        if (!rc && hz) {
            snprintf(v, sizeof v, "%lld", (long long)(int64_t)tio__ld64(tio__fb_vec_data(&zv)));
            rc = tfl_meta(r, name, "q_zero_point", v, "int64");
        }
    } else if (hs) {
        /* TensorFlow's converter writes per-channel biases with the weights'
         * axis (3 for a rank-1 tensor of one element per channel): accepted,
         * as TensorFlow Lite accepts it. Other disagreements are findings;
         * the parameters are kept as written either way. */
        bool bias = rank == 1 && dims[0] == (int64_t)sv.count;
        if (!bias && (axis < 0 || (uint32_t)axis >= rank || dims[axis] != (int64_t)sv.count))
            rc = tio__warn(r->ctx, TFL,
                           tfl_off(r, tio__fb_field_pos(&q, TFL_QuantizationParameters_scale)),
                           r->err,
                           "tensor '%s': %u per-axis scales along quantized_dimension %d, but "
                           "the tensor has rank %u%s",
                           name, sv.count, axis, rank,
                           axis >= 0 && (uint32_t)axis < rank ? " and another size there" : "");
        if (rc) return rc;
        snprintf(v, sizeof v, "%d", axis);
        rc = tfl_meta(r, name, "q_axis", v, "int32");
        if (!rc) rc = tfl_qvector(r, name, "q_scales", &sv, TIO_FLOAT32);
        if (!rc && hz) rc = tfl_qvector(r, name, "q_zero_points", &zv, TIO_INT64);
    }
    if (!rc && tio__fb_vector(&q, TFL_QuantizationParameters_min, &mv) && mv.count)
        rc = tfl_meta_floats(r, name, "q_min", &mv);
    if (!rc && tio__fb_vector(&q, TFL_QuantizationParameters_max, &mv) && mv.count)
        rc = tfl_meta_floats(r, name, "q_max", &mv);
    unsigned dt = tio__fb_u8(&q, TFL_QuantizationParameters_details_type, 0);
    if (!rc && dt) {
        const char *dn = tio__tfl_enum_name("QuantizationDetails", dt);
        const tio_fb_union *u = tio__tfl_union("QuantizationDetails");
        if (u && dt <= u->nmembers) dn = u->members[dt - 1]->name;
        snprintf(v, sizeof v, "%s", dn ? dn : "unknown");
        rc = tfl_meta(r, name, "q_details", v, "string");
    }
    return rc;
}

/* ----------------------------------------------------------- tensors */

/* Tensor i of subgraph sg: a container tensor when its buffer holds bytes. */
static int tfl_tensor(tfl_reader *r, uint32_t sg, uint32_t i, const tio_fb_ref *tt) {
    tio_read_ctx *ctx = r->ctx;
    const char *s = NULL;
    uint32_t sn = 0;
    char what[64];
    snprintf(what, sizeof what, "subgraph %u tensor %u", sg, i);
    int rc = tfl_string(r, tt, TFL_Tensor_name, what, &s, &sn);
    /* the raise's value and its copies of the name */
    if (!rc)
        rc = tio__budget_take(&r->mem, tio__cost_value() + 2 * tio__cost_str(sn), tfl_off(r, tt->pos),
                              r->err);
    if (rc) return rc;
    uint32_t b = tio__fb_u32(tt, TFL_Tensor_buffer, 0);
    if (b >= r->buffers.count && (b != 0 || r->buffers.count != 0))
        return tio__err(r->err, TIO_E_CORRUPT, TFL,
                        tfl_off(r, tio__fb_field_pos(tt, TFL_Tensor_buffer)),
                        "%s: buffer %u is out of range (the model has %u buffers)", what, b,
                        r->buffers.count);
    uint32_t ext = tio__fb_u32(tt, TFL_Tensor_external_buffer, 0);
    const uint8_t *data = NULL;
    uint64_t n = 0;
    int64_t at = -1;
    if (b != 0) {
        rc = tfl_buffer(r, b, false, &data, &n, &at);
        if (rc) return rc;
    }
    if (!data && ext == 0) return TIO_OK; /* not a constant */
    const char *name = NULL;
    rc = tfl_tensor_name(r, sg, i, s, sn, &name);
    if (rc) return rc;
    if (ext != 0)
        return tio__err(r->err, TIO_E_UNSUPPORTED, TFL,
                        tfl_off(r, tio__fb_field_pos(tt, TFL_Tensor_external_buffer)),
                        "tensor '%s': its data are in an external file (external_buffer %u); "
                        "tensio does not read TensorFlow Lite external buffers",
                        name, ext);
    int code = tio__fb_i8(tt, TFL_Tensor_type, 0);
    tio_dtype dt = tfl_dtype(code);
    if (dt == TIO_DTYPE_INVALID) {
        const char *tn = tio__tfl_enum_name("TensorType", code);
        if (tn)
            return tio__err(r->err, TIO_E_UNSUPPORTED, TFL,
                            tfl_off(r, tio__fb_field_pos(tt, TFL_Tensor_type)),
                            "tensor '%s': constant of type %s, which tensio does not hold as a "
                            "tensor",
                            name, tn);
        return tio__err(r->err, TIO_E_UNSUPPORTED, TFL,
                        tfl_off(r, tio__fb_field_pos(tt, TFL_Tensor_type)),
                        "tensor '%s': TensorType %d is unknown (expected 0..22; a newer "
                        "schema?)",
                        name, code);
    }
    if (tio__fb_has(tt, TFL_Tensor_sparsity))
        return tio__err(r->err, TIO_E_UNSUPPORTED, TFL,
                        tfl_off(r, tio__fb_field_pos(tt, TFL_Tensor_sparsity)),
                        "tensor '%s' is sparse (SparsityParameters); tensio does not read "
                        "TensorFlow Lite sparse tensors",
                        name);
    tio_fb_vec sv;
    uint32_t rank = tio__fb_vector(tt, TFL_Tensor_shape, &sv) ? sv.count : 0;
    if (rank > ctx->limits.max_rank)
        return tio__err(r->err, TIO_E_LIMIT, TFL, tfl_off(r, tt->pos),
                        "tensor '%s': rank %u exceeds the limit of %u", name, rank,
                        ctx->limits.max_rank);
    int64_t small[8];
    int64_t *dims = rank > 8 ? malloc(rank * sizeof *dims) : small;
    if (!dims) return tio__nomem(r->err, TFL);
    for (uint32_t k = 0; k < rank; k++) dims[k] = tio__fb_vec_i32(&sv, k);
    uint64_t numel = 0;
    size_t nbytes = 0;
    rc = tio__shape_size(dims, rank, tio_dtype_size(dt), &numel, &nbytes, TFL,
                         tfl_off(r, tt->pos), r->err);
    if (!rc && nbytes != n)
        rc = tio__err(r->err, TIO_E_CORRUPT, TFL, at,
                      "tensor '%s': buffer %u holds %llu bytes, but shape of %llu elements of "
                      "%s needs %zu",
                      name, b, (unsigned long long)n, (unsigned long long)numel,
                      tio_dtype_name(dt), nbytes);
    if (!rc) rc = tfl_view_take(r, nbytes, at, name);
    if (!rc) {
        tio_tensor_desc d;
        memset(&d, 0, sizeof d);
        d.name = name;
        d.dtype = dt;
        d.rank = rank;
        d.shape = dims;
        d.layout = TIO_LAYOUT_DENSE;
        d.data = data;
        d.nbytes = nbytes;
        rc = tio__container_add_view(ctx->c, &d, at, TFL, r->err);
        if (!rc) r->ctensor[r->sgbase[sg] + i] = (int64_t)ctx->c->count - 1;
    }
    if (!rc) {
        /* the container keeps its own copy of the name: quant keys use it */
        const tio_tensor *t = ctx->c->tensors[ctx->c->count - 1];
        rc = tfl_quant(r, tt, tio_tensor_name(t), dims, rank);
    }
    if (dims != small) free(dims);
    return rc;
}

/* --------------------------------------------------------- subgraphs */

/* Appends text to a growing prop value (text, *len). */
static int tfl_cat(tfl_reader *r, size_t *len, const char *s) {
    size_t l = strlen(s);
    if (!tfl_scratch(r, *len + l + 1)) return tio__nomem(r->err, TFL);
    memcpy(r->text + *len, s, l + 1);
    *len += l;
    return TIO_OK;
}

/* The display name of operator code k ("CONV_2D", "CUSTOM 'ethos-u'",
 * "BUILTIN_250"). */
static void tfl_code_name(const tfl_reader *r, const tio_fb_vec *codes, uint32_t k, char *out,
                          size_t cap) {
    int32_t c = r->codes[k];
    const char *n = c >= 0 && c < TIO_TFL_OP_COUNT ? tio__tfl_op_names[c] : NULL;
    if (c == TFL_BuiltinOperator_CUSTOM) {
        tio_fb_ref ct;
        const char *s = NULL;
        uint32_t sn = 0;
        char esc[48];
        esc[0] = '\0';
        if (tio__fb_vec_table(codes, k, &ct) &&
            tio__fb_string(&ct, TFL_OperatorCode_custom_code, &s, &sn))
            tio__escape((const uint8_t *)s, sn, esc, sizeof esc);
        snprintf(out, cap, "CUSTOM '%s'", esc);
    } else if (n) {
        snprintf(out, cap, "%s", n);
    } else {
        snprintf(out, cap, "BUILTIN_%d", c);
    }
}

static int tfl_subgraph(tfl_reader *r, uint32_t sg, const tio_fb_ref *st,
                        const tio_fb_vec *codes, uint32_t *counts) {
    tio_fb_vec tv, ov, iv;
    uint32_t nt = tio__fb_vector(st, TFL_SubGraph_tensors, &tv) ? tv.count : 0;
    char what[96];
    int rc = TIO_OK;
    for (uint32_t i = 0; i < nt && !rc; i++) {
        tio_fb_ref tt;
        if (!tio__fb_vec_table(&tv, i, &tt))
            return tio__err(r->err, TIO_E_CORRUPT, TFL, tfl_off(r, tv.data + 4u * i),
                            "subgraph %u tensor %u is not a table", sg, i);
        rc = tfl_tensor(r, sg, i, &tt);
    }
    if (rc) return rc;
    snprintf(what, sizeof what, "subgraph %u inputs", sg);
    if (tio__fb_vector(st, TFL_SubGraph_inputs, &iv)) rc = tfl_indices(r, &iv, 0, nt, what);
    snprintf(what, sizeof what, "subgraph %u outputs", sg);
    if (!rc && tio__fb_vector(st, TFL_SubGraph_outputs, &iv))
        rc = tfl_indices(r, &iv, 0, nt, what);
    if (rc) return rc;
    uint32_t nops = tio__fb_vector(st, TFL_SubGraph_operators, &ov) ? ov.count : 0;
    /* counts[] is all zero here: the listing below clears what it counted */
    for (uint32_t k = 0; k < nops && !rc; k++) {
        tio_fb_ref ot;
        if (!tio__fb_vec_table(&ov, k, &ot))
            return tio__err(r->err, TIO_E_CORRUPT, TFL, tfl_off(r, ov.data + 4u * k),
                            "subgraph %u operator %u is not a table", sg, k);
        uint32_t oc = tio__fb_u32(&ot, TFL_Operator_opcode_index, 0);
        if (oc >= r->ncodes)
            return tio__err(r->err, TIO_E_CORRUPT, TFL,
                            tfl_off(r, tio__fb_field_pos(&ot, TFL_Operator_opcode_index)),
                            "subgraph %u operator %u: opcode_index %u is out of range (the "
                            "model has %u operator codes)",
                            sg, k, oc, r->ncodes);
        counts[r->canon[oc]]++;
        snprintf(what, sizeof what, "subgraph %u operator %u inputs", sg, k);
        if (tio__fb_vector(&ot, TFL_Operator_inputs, &iv)) rc = tfl_indices(r, &iv, -1, nt, what);
        snprintf(what, sizeof what, "subgraph %u operator %u outputs", sg, k);
        if (!rc && tio__fb_vector(&ot, TFL_Operator_outputs, &iv))
            rc = tfl_indices(r, &iv, -1, nt, what);
        snprintf(what, sizeof what, "subgraph %u operator %u intermediates", sg, k);
        if (!rc && tio__fb_vector(&ot, TFL_Operator_intermediates, &iv))
            rc = tfl_indices(r, &iv, 0, nt, what);
        uint64_t lo = tio__fb_u64(&ot, TFL_Operator_large_custom_options_offset, 0);
        uint64_t ls = tio__fb_u64(&ot, TFL_Operator_large_custom_options_size, 0), end;
        if (!rc && lo > 1 && (tio__add64_ovf(lo, ls, &end) || end > r->ctx->size))
            rc = tio__err(r->err, TIO_E_BOUNDS, TFL,
                          tfl_off(r, tio__fb_field_pos(&ot,
                                                       TFL_Operator_large_custom_options_offset)),
                          "subgraph %u operator %u: custom options at offset %llu + size %llu "
                          "extend past the end of the file (%zu bytes)",
                          sg, k, (unsigned long long)lo, (unsigned long long)ls, r->ctx->size);
    }
    if (rc) return rc;
    /* props: subgraph<k>.name, .tensors, .operators ("CONV_2D x35, ADD x10") */
    char key[48], one[96];
    const char *s = NULL;
    uint32_t sn = 0;
    snprintf(what, sizeof what, "subgraph %u", sg);
    rc = tfl_string(r, st, TFL_SubGraph_name, what, &s, &sn);
    if (!rc && s) {
        snprintf(key, sizeof key, "subgraph%u.name", sg);
        rc = tfl_prop(r, key, s);
    }
    snprintf(key, sizeof key, "subgraph%u.tensors", sg);
    if (!rc) rc = tfl_prop_u64(r, key, nt);
    size_t len = 0;
    unsigned listed = 0;
    snprintf(one, sizeof one, "%u", nops);
    if (!rc) rc = tfl_cat(r, &len, one);
    for (uint32_t k = 0; k < nops && !rc; k++) {
        tio_fb_ref ot;
        tio__fb_vec_table(&ov, k, &ot);
        uint32_t oc = r->canon[tio__fb_u32(&ot, TFL_Operator_opcode_index, 0)];
        if (!counts[oc]) continue;
        char nm[72];
        tfl_code_name(r, codes, oc, nm, sizeof nm);
        snprintf(one, sizeof one, "%s%s x%u", listed++ ? ", " : ": ", nm, counts[oc]);
        counts[oc] = 0; /* listed once, in order of first use */
        rc = tfl_cat(r, &len, one);
    }
    snprintf(key, sizeof key, "subgraph%u.operators", sg);
    return rc ? rc : tfl_prop(r, key, r->text);
}

/* ------------------------------------------------------------- model */

static int tfl_codes(tfl_reader *r, const tio_fb_ref *model, tio_fb_vec *codes) {
    r->ncodes = tio__fb_vector(model, TFL_Model_operator_codes, codes) ? codes->count : 0;
    r->codes = malloc(((size_t)r->ncodes + 1) * sizeof *r->codes);
    r->canon = malloc(((size_t)r->ncodes + 1) * sizeof *r->canon);
    if (!r->codes || !r->canon) return tio__nomem(r->err, TFL);
    uint32_t first[TIO_TFL_OP_COUNT];
    for (unsigned k = 0; k < TIO_TFL_OP_COUNT; k++) first[k] = UINT32_MAX;
    size_t len = 0;
    int rc = TIO_OK;
    for (uint32_t k = 0; k < r->ncodes && !rc; k++) {
        tio_fb_ref ct;
        if (!tio__fb_vec_table(codes, k, &ct))
            return tio__err(r->err, TIO_E_CORRUPT, TFL, tfl_off(r, codes->data + 4u * k),
                            "operator code %u is not a table", k);
        /* TensorFlow Lite's rule: the larger of the two fields */
        int32_t dep = tio__fb_i8(&ct, TFL_OperatorCode_deprecated_builtin_code, 0);
        int32_t bc = tio__fb_i32(&ct, TFL_OperatorCode_builtin_code, 0);
        int32_t c = r->codes[k] = dep > bc ? dep : bc;
        r->canon[k] = k;
        if (c >= 0 && c < TIO_TFL_OP_COUNT && c != TFL_BuiltinOperator_CUSTOM) {
            if (first[c] == UINT32_MAX) first[c] = k;
            r->canon[k] = first[c];
        }
        const char *s;
        uint32_t sn;
        char what[48];
        snprintf(what, sizeof what, "operator code %u custom_code", k);
        rc = tfl_string(r, &ct, TFL_OperatorCode_custom_code, what, &s, &sn);
        char nm[72], one[96];
        tfl_code_name(r, codes, k, nm, sizeof nm);
        snprintf(one, sizeof one, "%s%s v%d", k ? ", " : "", nm,
                 tio__fb_i32(&ct, TFL_OperatorCode_version, 1));
        if (!rc) rc = tfl_cat(r, &len, one);
    }
    if (!rc && len) rc = tfl_prop(r, "operator_codes", r->text);
    return rc;
}

/* Model.metadata (name, buffer), metadata_buffer and signature_defs: indices
 * checked, names summarised. */
static int tfl_model_extras(tfl_reader *r, const tio_fb_ref *model, const tio_fb_vec *sgs) {
    tio_fb_vec v;
    int rc = TIO_OK;
    size_t len = 0;
    if (tio__fb_vector(model, TFL_Model_metadata_buffer, &v))
        for (uint32_t i = 0; i < v.count; i++) {
            int32_t b = tio__fb_vec_i32(&v, i);
            if (b < 0 || (uint32_t)b >= r->buffers.count)
                return tio__err(r->err, TIO_E_CORRUPT, TFL, tfl_off(r, v.data + 4u * i),
                                "metadata_buffer[%u] is buffer %d, out of range (the model has "
                                "%u buffers)",
                                i, b, r->buffers.count);
        }
    if (tio__fb_vector(model, TFL_Model_metadata, &v)) {
        for (uint32_t i = 0; i < v.count && !rc; i++) {
            tio_fb_ref mt;
            if (!tio__fb_vec_table(&v, i, &mt))
                return tio__err(r->err, TIO_E_CORRUPT, TFL, tfl_off(r, v.data + 4u * i),
                                "metadata %u is not a table", i);
            uint32_t b = tio__fb_u32(&mt, TFL_Metadata_buffer, 0);
            if (b >= r->buffers.count)
                return tio__err(r->err, TIO_E_CORRUPT, TFL, tfl_off(r, mt.pos),
                                "metadata %u: buffer %u is out of range (the model has %u "
                                "buffers)",
                                i, b, r->buffers.count);
            const char *s = NULL;
            uint32_t sn = 0;
            rc = tfl_string(r, &mt, TFL_Metadata_name, "metadata name", &s, &sn);
            if (rc) return rc;
            char esc[80];
            tio__escape((const uint8_t *)(s ? s : ""), sn, esc, sizeof esc);
            if (s && strcmp(s, "min_runtime_version") == 0) {
                const uint8_t *d;
                uint64_t n;
                int64_t at;
                rc = tfl_buffer(r, b, false, &d, &n, &at);
                if (rc) return rc;
                const uint8_t *z = d ? memchr(d, 0, (size_t)n) : NULL;
                char ver[48];
                tio__escape(d ? d : (const uint8_t *)"", z ? (size_t)(z - d) : (size_t)n, ver,
                            sizeof ver);
                rc = tfl_prop(r, "min_runtime_version", ver);
            }
            if (!rc) rc = tfl_cat(r, &len, i ? ", " : "");
            if (!rc) rc = tfl_cat(r, &len, esc);
        }
        if (!rc && len) rc = tfl_prop(r, "metadata", r->text);
    }
    if (rc) return rc;
    len = 0;
    if (tio__fb_vector(model, TFL_Model_signature_defs, &v)) {
        for (uint32_t i = 0; i < v.count && !rc; i++) {
            tio_fb_ref dt, sgt;
            if (!tio__fb_vec_table(&v, i, &dt))
                return tio__err(r->err, TIO_E_CORRUPT, TFL, tfl_off(r, v.data + 4u * i),
                                "signature def %u is not a table", i);
            uint32_t sg = tio__fb_u32(&dt, TFL_SignatureDef_subgraph_index, 0);
            if (sg >= sgs->count || !tio__fb_vec_table(sgs, sg, &sgt))
                return tio__err(r->err, TIO_E_CORRUPT, TFL, tfl_off(r, dt.pos),
                                "signature def %u: subgraph %u is out of range (the model has "
                                "%u subgraphs)",
                                i, sg, sgs->count);
            tio_fb_vec tv;
            uint32_t nt = tio__fb_vector(&sgt, TFL_SubGraph_tensors, &tv) ? tv.count : 0;
            for (unsigned side = 0; side < 2; side++) {
                tio_fb_vec mv;
                unsigned f = side ? TFL_SignatureDef_outputs : TFL_SignatureDef_inputs;
                if (!tio__fb_vector(&dt, f, &mv)) continue;
                for (uint32_t k = 0; k < mv.count; k++) {
                    tio_fb_ref mt;
                    if (!tio__fb_vec_table(&mv, k, &mt) ||
                        tio__fb_u32(&mt, TFL_TensorMap_tensor_index, 0) >= nt)
                        return tio__err(r->err, TIO_E_CORRUPT, TFL, tfl_off(r, mv.data + 4u * k),
                                        "signature def %u %s %u: tensor %u is out of range "
                                        "(subgraph %u has %u tensors)",
                                        i, side ? "output" : "input", k,
                                        tio__fb_u32(&mt, TFL_TensorMap_tensor_index, 0), sg, nt);
                    const char *s;
                    uint32_t sn;
                    rc = tfl_string(r, &mt, TFL_TensorMap_name, "signature tensor name", &s, &sn);
                    if (rc) return rc;
                }
            }
            const char *s = NULL;
            uint32_t sn = 0;
            rc = tfl_string(r, &dt, TFL_SignatureDef_signature_key, "signature key", &s, &sn);
            char esc[80], one[128];
            tio__escape((const uint8_t *)(s ? s : ""), sn, esc, sizeof esc);
            snprintf(one, sizeof one, "%s%s (subgraph %u)", i ? ", " : "", esc, sg);
            if (!rc) rc = tfl_cat(r, &len, one);
        }
        if (!rc && len) rc = tfl_prop(r, "signatures", r->text);
    }
    return rc;
}

/* Keeps the source model for a .tflite -> .tflite save (tflite/write.h). */
static int tfl_keep_native(tfl_reader *r, uint32_t nsg) {
    tio_container *c = r->ctx->c;
    tfl_native *n = calloc(1, sizeof *n);
    if (!n) return tio__nomem(r->err, TFL);
    n->buf = r->buf;
    n->len = r->len;
    n->ctensor = r->ctensor;
    n->sgbase = r->sgbase;
    n->nsg = nsg;
    n->ntensors = c->count;
    n->graph = c->graph;
    n->gnodes = c->graph ? c->graph->node_count : 0;
    n->gvalues = c->graph ? c->graph->value_count : 0;
    n->gedits = c->graph ? c->graph->edits : 0;
    int drc = tio__tfl_meta_digest(c, n->meta_digest, r->err);
    if (drc) {
        free(n);
        return drc;
    }
    n->blobs = r->blobs;
    r->ctensor = NULL; /* the native state's now */
    r->sgbase = NULL;
    memset(&r->blobs, 0, sizeof r->blobs);
    c->native_format = TFL;
    c->native = n;
    c->native_free = tio__tfl_native_free;
    return TIO_OK;
}

/* The buffers' length words on a thread of their own (tio_preads), as
 * tmfile's TM2_Buffer structs: in a model of many large constants each word
 * sits beside its buffer's data, a page of its own, and a pread() of it is
 * most of the open. The thread reads them from the last buffer down while
 * the verifier checks the subgraphs and takes them from the first. Where a
 * model has at least TFL_AHEAD_MIN buffers lying farther apart than the
 * header window, and no more than one per window (which bounds the arrays
 * by the input); the positions are found with the bounds-checked accessors,
 * before the verifier, and are only where to read: the verifier checks
 * every vector as before. Sets lim's fields, or leaves them NULL. */
#define TFL_AHEAD_MIN 256u
static int tfl_ahead_cmp(const void *a, const void *b) {
    uint64_t x = ((const tio_fb_ahead *)a)->pos, y = ((const tio_fb_ahead *)b)->pos;
    return (x > y) - (x < y);
}

static void tfl_ahead(const tfl_reader *r, tio_fb_limits *lim, uint64_t **at_out,
                      tio_fb_ahead **ahead_out) {
    const tio_headsrc *h = r->ctx->head;
    tio_fb_ref model;
    tio_fb_vec bufs;
    *at_out = NULL;
    *ahead_out = NULL;
    if (!h || h->base != r->buf || r->len > h->size || !tio__fb_root(r->buf, r->len, &model) ||
        !tio__fb_vector(&model, TFL_Model_buffers, &bufs))
        return;
    size_t n = bufs.count;
    if (n < TFL_AHEAD_MIN || n > r->len / TIO__HEAD_WINDOW) return;
    uint64_t *at = malloc(n * sizeof *at);
    tio_fb_ahead *ahead = malloc(n * sizeof *ahead);
    size_t k = 0;
    for (size_t i = 0; at && ahead && i < n; i++) {
        tio_fb_ref bt;
        size_t p;
        at[i] = UINT64_MAX; /* none: not read */
        if (!tio__fb_vec_table(&bufs, i, &bt) || !(p = tio__fb_field_pos(&bt, TFL_Buffer_data)) ||
            p > r->len - 4)
            continue;
        uint32_t u = tio__ld32(r->buf + p);
        if (u == 0 || u > r->len - 4 - p) continue;
        at[i] = p + u;
        ahead[k++] = (tio_fb_ahead){at[i], i};
    }
    if (at && ahead && k >= TFL_AHEAD_MIN) {
        qsort(ahead, k, sizeof *ahead, tfl_ahead_cmp);
        lim->pre = tio__preads_start(h->fd, at, n, 4, r->len);
    }
    if (!lim->pre) {
        free(at);
        free(ahead);
        return;
    }
    lim->ahead = *ahead_out = ahead;
    lim->nahead = k;
    *at_out = at;
}

static int tfl_read(tio_read_ctx *ctx, tio_error *err) {
    tfl_reader r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.err = err;
    r.buf = ctx->data;
    r.len = ctx->size;
    tio__budget_init(&r.mem, TFL, ctx->size, TIO_TFLITE_DECODE_MEM_FACTOR, TIO_BUDGET_SHARED,
                     &ctx->limits);
    if (ctx->size < 8)
        return tio__err(err, TIO_E_TRUNCATED, TFL, 0,
                        "%zu bytes: too short for a TensorFlow Lite model (a root offset and "
                        "the file identifier need 8)",
                        ctx->size);
    if (memcmp(ctx->data + 4, TFL_IDENTIFIER, 4) != 0) {
        char esc[24];
        tio__escape(ctx->data + 4, 4, esc, sizeof esc);
        return tio__err(err, TIO_E_CORRUPT, TFL, 4,
                        "the file identifier is \"%s\" (expected \"TFL3\")", esc);
    }
    tio_fb_limits lim = {0};
    lim.max_depth = ctx->limits.max_depth;
    lim.max_tables = r.len / 4 + 16;
    if (lim.max_tables > ctx->limits.max_objects) lim.max_tables = ctx->limits.max_objects;
    lim.max_slots = 0;
    /* the buffers' lengths by pread of the file when it is mapped, once
     * (tio__fb_bytes) */
    lim.head = ctx->head;
    lim.blobs = &r.blobs;
    uint64_t *ahead_at;
    tio_fb_ahead *ahead;
    tfl_ahead(&r, &lim, &ahead_at, &ahead);
    int rc = tio__fb_verify(r.buf, r.len, tio__tfl_root, &lim, TFL, 0, err);
    tio__preads_end(lim.pre);
    free(ahead_at);
    free(ahead);
    if (rc) {
        tio__fb_blobs_free(&r.blobs);
        return rc;
    }
    tio_fb_ref model;
    if (!tio__fb_root(r.buf, r.len, &model)) {
        tio__fb_blobs_free(&r.blobs);
        return tio__err(err, TIO_E_CORRUPT, TFL, 0, "the root table is out of bounds");
    }
    tio_fb_vec sgs, codes;
    memset(&sgs, 0, sizeof sgs); /* a model without subgraphs: an empty vector */
    memset(&codes, 0, sizeof codes);
    if (!tio__fb_vector(&model, TFL_Model_subgraphs, &sgs)) memset(&sgs, 0, sizeof sgs);
    uint32_t nsg = sgs.count;
    if (!tio__fb_vector(&model, TFL_Model_buffers, &r.buffers)) r.buffers.count = 0;
    uint32_t *counts = NULL;
    rc = tfl_prop_u64(&r, "version", tio__fb_u32(&model, TFL_Model_version, 0));
    const char *desc = NULL;
    uint32_t dn = 0;
    if (!rc) rc = tfl_string(&r, &model, TFL_Model_description, "description", &desc, &dn);
    if (!rc && desc) rc = tfl_prop(&r, "description", desc);
    if (!rc) rc = tfl_prop_u64(&r, "subgraphs", nsg);
    if (!rc) rc = tfl_prop_u64(&r, "buffers", r.buffers.count);
    if (!rc) rc = tfl_codes(&r, &model, &codes);
    /* every buffer's range, used by a tensor or not */
    struct tfl_range *ranges = NULL;
    if (!rc && !(ranges = calloc((size_t)r.buffers.count + 1, sizeof *ranges)))
        rc = tio__nomem(err, TFL);
    for (uint32_t b = 0; b < r.buffers.count && !rc; b++) {
        const uint8_t *d;
        uint64_t n;
        int64_t at;
        tio_fb_ref bt;
        if (!tio__fb_vec_table(&r.buffers, b, &bt))
            rc = tio__err(err, TIO_E_CORRUPT, TFL, tfl_off(&r, r.buffers.data + 4u * b),
                          "buffer %u is not a table", b);
        else
            rc = tfl_buffer(&r, b, true, &d, &n, &at);
        if (!rc) ranges[b] = (struct tfl_range){d, n, at};
    }
    r.ranges = ranges;
    if (!rc) {
        counts = calloc((size_t)r.ncodes + 1, sizeof *counts);
        if (!counts) rc = tio__nomem(err, TFL);
    }
    /* every subgraph's tensors' container tensors (for the raise and the rewrite) */
    if (!rc) {
        r.sgbase = calloc((size_t)nsg + 1, sizeof *r.sgbase);
        size_t total = 0;
        for (uint32_t sg = 0; sg < nsg && r.sgbase; sg++) {
            tio_fb_ref st;
            tio_fb_vec tv;
            r.sgbase[sg] = total;
            if (tio__fb_vec_table(&sgs, sg, &st) && tio__fb_vector(&st, TFL_SubGraph_tensors, &tv))
                total += tv.count; /* verified: bounded by the file's size */
        }
        r.ctensor = r.sgbase ? malloc((total + 1) * sizeof *r.ctensor) : NULL;
        if (!r.ctensor) rc = tio__nomem(err, TFL);
        for (size_t i = 0; i < total && !rc; i++) r.ctensor[i] = -1;
    }
    for (uint32_t sg = 0; sg < nsg && !rc; sg++) {
        tio_fb_ref st;
        if (!tio__fb_vec_table(&sgs, sg, &st))
            rc = tio__err(err, TIO_E_CORRUPT, TFL, tfl_off(&r, sgs.data + 4u * sg),
                          "subgraph %u is not a table", sg);
        else
            rc = tfl_subgraph(&r, sg, &st, &codes, counts);
    }
    if (!rc) rc = tfl_model_extras(&r, &model, &sgs);
    /* the graph of the first subgraph (the others are bodies of control
     * flow, which has no ONNX form here) */
    tio_fb_ref sg0;
    if (!rc && nsg && tio__fb_vec_table(&sgs, 0, &sg0))
        rc = tio__tfl_raise(ctx, &sg0, &codes, r.codes, r.ncodes, r.ctensor,
                            (ctx->flags & TIO_OPEN_NATIVE_GRAPH) != 0, err);
    if (!rc && r.forms)
        rc = tfl_prop(&r, "buffer_form",
                      r.forms == 3 ? "inline and offset" : r.forms == 2 ? "offset" : "inline");
    if (!rc) rc = tfl_keep_native(&r, nsg);
    free(counts);
    free(r.codes);
    free(r.canon);
    free(r.text);
    free(r.ctensor);
    free(r.sgbase);
    free(r.ranges);
    tio__fb_blobs_free(&r.blobs);
    return rc;
}

/* ---------------------------------------------------------------- probe */

static int tfl_probe(const uint8_t *d, size_t n) {
    if (n < 8 || memcmp(d + 4, TFL_IDENTIFIER, 4) != 0) return 0;
    uint32_t root = tio__ld32(d);
    if (root < 8 || root % 4 || (uint64_t)root + 4 > n) return 40;
    return 95;
}

/* ---------------------------------------------------------------- write */

/* What the plan alone tells about a save (tio_check_save sees it too): the
 * cast (float32 -> float16 only; not for a graph without operators, whose
 * constants are its outputs). */
static int tfl_check(const tio_write_plan *p, tio_error *err) {
    const tio_container *c = tio__plan_container(p);
    bool f16 = false, nat = c->native && c->native_format && strcmp(c->native_format, TFL) == 0;
    int rc = tio__tfl_cast_check(p, &f16, err);
    if (!rc && f16 && !nat && c->graph && c->graph->node_count == 0)
        rc = tio__err(err, TIO_E_UNSUPPORTED, TFL, -1,
                      "a graph without operators: its constants are its outputs, whose types "
                      "a cast would change (write them to a tensor format instead)");
    return rc;
}

/* A .tflite read by tensio is rewritten from its source model (tflite/rewrite.c);
 * a graph without nodes is a model of constants (tflite/wmodel.c); a graph
 * from another format is lowered (tflite/lower.c). A container of tensors
 * only is refused by the core (TIO_CAP_GRAPH: a model needs a graph). */
static int tfl_write(tio_write_plan *p, tio_sink *sink, tio_error *err) {
    const tio_container *c = tio__plan_container(p);
    tfl_wmodel m;
    int rc = tio__tfl_w_init(&m, err);
    const tfl_native *nat = c->native && c->native_format && strcmp(c->native_format, TFL) == 0
                                ? c->native
                                : NULL;
    bool rewrite = nat != NULL;
    if (!rc && nat)
        rc = tio__tfl_rewrite(nat, p, &m, err);
    else if (!rc && c->graph && c->graph->node_count == 0)
        rc = tio__tfl_w_constants(p, c->graph, &m, err);
    else if (!rc && c->graph)
        rc = tio__tfl_lower(p, c->graph, &m, err);
    else if (!rc)
        rc = tio__err(err, TIO_E_UNSUPPORTED, TFL, -1,
                      "a model needs a graph; this container holds tensors only");
    if (!rc) rc = tio__tfl_w_serialise(&m, p, sink, err);
    /* what the serialiser refuses in a model that was read (a value out of
     * its field's range, a container tensor that changed) is not the
     * caller's argument: the model cannot be rewritten as it is */
    if (rc == TIO_E_ARGUMENT && rewrite && err) err->code = rc = TIO_E_UNSUPPORTED;
    tio__tfl_w_free(&m);
    return rc;
}

/* ----------------------------------------------------------- the format */

extern const tio_format_desc tio__format_tflite;

const tio_format_desc tio__format_tflite = {
    .name = "tflite",
    .description = "TensorFlow Lite model (.tflite): graph and constant tensors",
    .extensions = ".tflite",
    .caps = TIO_CAP_NAMES | TIO_CAP_METADATA | TIO_CAP_GRAPH | TIO__CAP_CAST_WEIGHTS,
    /* the TensorTypes tensio holds as tensors */
    .dtypes = TIO_DTYPE_BIT(TIO_FLOAT32) | TIO_DTYPE_BIT(TIO_FLOAT16) | TIO_DTYPE_BIT(TIO_INT32) |
              TIO_DTYPE_BIT(TIO_UINT8) | TIO_DTYPE_BIT(TIO_INT64) | TIO_DTYPE_BIT(TIO_BOOL) |
              TIO_DTYPE_BIT(TIO_INT16) | TIO_DTYPE_BIT(TIO_COMPLEX64) | TIO_DTYPE_BIT(TIO_INT8) |
              TIO_DTYPE_BIT(TIO_FLOAT64) | TIO_DTYPE_BIT(TIO_COMPLEX128) |
              TIO_DTYPE_BIT(TIO_UINT64) | TIO_DTYPE_BIT(TIO_UINT32) | TIO_DTYPE_BIT(TIO_UINT16) |
              TIO_DTYPE_BIT(TIO_BFLOAT16) | TIO_DTYPE_BIT(TIO_FLOAT8_E4M3FN) |
              TIO_DTYPE_BIT(TIO_FLOAT8_E5M2),
    .probe = tfl_probe,
    .read = tfl_read,
    .check = tfl_check,
    .write = tfl_write,
    .options = "fuse layout dims", /* the ONNX -> TFLite lowering (tflite/lower.c) */
};
