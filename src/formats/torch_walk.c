/*
 * PyTorch checkpoints: the walk of the object the pickle built (torch.c runs
 * it): tensors (torch._utils._rebuild_tensor*, numpy arrays, quantized
 * tensors) named by their path in the object ("optimizer.state.0.exp_avg"),
 * other leaves as container metadata. See docs/formats/torch.md.
 */
#include "formats/torch_objects.h"
#include "formats/torch_read.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int th_name_push(th_reader *r, const char *s, size_t n, size_t *mark, uint64_t at) {
    *mark = r->name_len;
    r->name_depth++; /* th_name_pop undoes it, pushed or not */
    size_t need = r->name_len + (r->name_len ? 1 : 0) + n + 1;
    if (need - 1 > r->ctx->limits.max_name_bytes)
        return tio__err(r->err, TIO_E_LIMIT, TH, th_off(at),
                        "a name of %zu bytes, above the limit (max_name_bytes %" PRIu32 ")",
                        need - 1, r->ctx->limits.max_name_bytes);
    if (need > r->name_cap) {
        size_t cap = r->name_cap ? r->name_cap : 64;
        while (cap < need) cap *= 2;
        char *p = realloc(r->name, cap);
        if (!p) return tio__nomem(r->err, TH);
        r->name = p;
        r->name_cap = cap;
    }
    if (r->name_len) r->name[r->name_len++] = '.';
    memcpy(r->name + r->name_len, s, n);
    r->name_len += n;
    r->name[r->name_len] = 0;
    return TIO_OK;
}

static void th_name_pop(th_reader *r, size_t mark) {
    r->name_len = mark;
    r->name_depth--;
    if (r->name) r->name[mark] = 0;
}

const char *th_gname(const tio_pk_obj *g, char *out, size_t cap) {
    char m[96], n[96];
    tio__escape(g->u.g.mod, g->u.g.mod_len, m, sizeof m);
    tio__escape(g->u.g.name, g->u.g.name_len, n, sizeof n);
    snprintf(out, cap, "%s.%s", m, n);
    return out;
}

static int th_name_eq(const void *ctx, size_t i) {
    const th_reader *r = ctx;
    return strcmp(r->given[i], r->probe_s[0]) == 0;
}

/* Whether `name` was given to a tensor or a metadata key already (a dict key
 * repeated, or "a.b" beside {"a": {"b": …}}): a finding, and the later one is
 * dropped. *h gets the name's hash for th_name_add. */
static int th_name_taken(th_reader *r, const char *name, uint64_t *h, int *taken, uint64_t at) {
    size_t len = strlen(name);
    int brc = tio__budget_take(&r->names_mem, (uint64_t)len + 1, th_off(at), r->err);
    if (brc) return brc;
    r->probe_s[0] = name;
    *h = th_hash_of(r->seed, name, len);
    *taken = th_find(&r->names, *h, th_name_eq, r) != SIZE_MAX;
    if (!*taken) return TIO_OK;
    char e[80];
    tio__escape((const uint8_t *)name, strlen(name), e, sizeof e);
    return tio__warn(r->ctx, TH, th_off(at), r->err,
                     "the name '%s' is given twice (a repeated key, or a key holding '.' beside "
                     "a nested one): the later value is dropped",
                     e);
}

/* Records a name the container now holds (stable: its own copy). */
static int th_name_add(th_reader *r, const char *stored, uint64_t h) {
    if (r->ngiven == r->given_cap) {
        size_t cap = r->given_cap ? 2 * r->given_cap : 64;
        const char **g = realloc(r->given, cap * sizeof *g);
        if (!g) return tio__nomem(r->err, TH);
        r->given = g;
        r->given_cap = cap;
    }
    r->given[r->ngiven] = stored;
    if (th_insert(&r->names, h, r->ngiven)) return tio__nomem(r->err, TH);
    r->ngiven++;
    return TIO_OK;
}

/* A non-tensor leaf: container metadata under the name walked (type NULL:
 * a plain string). O(1): keys are unique by th_name_taken. */
static int th_meta_n(th_reader *r, const char *value, size_t len, const char *type,
                     uint64_t at) {
    const char *key = r->name_depth ? r->name : "(root)";
    uint64_t h = 0;
    int taken = 0;
    int rc = tio__budget_take(&r->names_mem, (uint64_t)len + 1, th_off(at), r->err);
    if (!rc) rc = th_name_taken(r, key, &h, &taken, at);
    if (rc || taken) return rc;
    tio_container *c = r->ctx->c;
    rc = tio__meta_append_typed_n(c, key, strlen(key), value, len, type ? type : "", r->err);
    return rc ? rc : th_name_add(r, c->meta.keys[c->meta.count - 1], h);
}

static int th_meta(th_reader *r, const char *value, const char *type, uint64_t at) {
    return th_meta_n(r, value, strlen(value), type, at);
}

/* An int64 argument. */
static int th_int(th_reader *r, const tio_pk_obj *o, const char *what, uint64_t at, int64_t *v) {
    if (!o || (o->kind != TIO_PK_INT && o->kind != TIO_PK_BOOL))
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at), "%s is a %s (expected an int)",
                        what, o ? (o->kind == TIO_PK_BIGINT ? "int past int64" : "non-int") : "missing argument");
    *v = o->u.i;
    return TIO_OK;
}

/* The ints of a tuple (size, stride) into out[0..*n). */
static int th_ints(th_reader *r, const tio_pk_obj *o, const char *what, uint64_t at,
                   int64_t *out, size_t *n) {
    const tio_pickle *p = &r->pk;
    if (o && o->kind == TIO_PK_CALL && tio__pk_callee(p, o) &&
        tio__pk_callee(p, o)->id == TIO_PKV_SIZE) /* torch.Size((…)) */
        o = tio__pk_item(p, tio__pk(p, o->u.call.args), 0);
    if (!o || (o->kind != TIO_PK_TUPLE && o->kind != TIO_PK_LIST))
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at), "the tensor's %s is not a tuple",
                        what);
    if (o->n > r->ctx->limits.max_rank || o->n > TH_MAX_RANK)
        return tio__err(r->err, TIO_E_LIMIT, TH, th_off(at),
                        "the tensor's %s has %" PRIu32 " dims, above the limit (max_rank %" PRIu32
                        ", and at most %u here)",
                        what, o->n, r->ctx->limits.max_rank, TH_MAX_RANK);
    for (size_t k = 0; k < o->n; k++) {
        int rc = th_int(r, tio__pk_item(p, o, k), what, at, &out[k]);
        if (rc) return rc;
        if (out[k] < 0)
            return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                            "the tensor's %s has %" PRId64 " in dim %zu (expected >= 0)", what,
                            out[k], k);
    }
    *n = o->n;
    return TIO_OK;
}

/* Copies a strided view C-contiguously into dst. */
static void th_gather(uint8_t *dst, const uint8_t *base, const int64_t *size,
                      const int64_t *stride, size_t rank, size_t es, uint64_t numel,
                      int64_t *idx) {
    for (size_t k = 0; k < rank; k++) idx[k] = 0;
    uint64_t off = 0; /* elements from base */
    for (uint64_t i = 0; i < numel; i++) {
        memcpy(dst + i * es, base + off * es, es);
        for (size_t k = rank; k-- > 0;) {
            if (++idx[k] < size[k]) {
                off += (uint64_t)stride[k];
                break;
            }
            off -= (uint64_t)stride[k] * (uint64_t)(size[k] - 1);
            idx[k] = 0;
        }
    }
}

/* The storage of a persistent id ('storage', type, key, location, numel
 * [, view_metadata]). */
static int th_persid(th_reader *r, const tio_pk_obj *o, tio_dtype v3_dtype, uint64_t at,
                     th_storage **st, uint64_t *view_off, int *quant) {
    const tio_pickle *p = &r->pk;
    *view_off = 0;
    if (!o || o->kind != TIO_PK_PERSID)
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                        "the tensor's storage is not a persistent id (BINPERSID)");
    const tio_pk_obj *pid = tio__pk(p, o->u.call.args);
    if (!pid || pid->kind != TIO_PK_TUPLE || pid->n < 5 || !th_str_eq(tio__pk_item(p, pid, 0), "storage"))
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(o->off),
                        "a persistent id that is not ('storage', type, key, location, numel)");
    const tio_pk_obj *type = tio__pk_item(p, pid, 1), *key = tio__pk_item(p, pid, 2);
    const tio_pk_vocab_entry *e = type && type->kind == TIO_PK_GLOBAL ? tio__pk_vocab_at(type->vocab) : NULL;
    char gn[200];
    if (!e || (e->id != TIO_PKV_STORAGE && e->id != TIO_PKV_UNTYPED_STORAGE &&
               e->id != TIO_PKV_QSTORAGE))
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(o->off),
                        "the persistent id's storage type is %s (expected a torch storage class)",
                        type && type->kind == TIO_PK_GLOBAL ? th_gname(type, gn, sizeof gn) : "not a global");
    tio_dtype dt = e->id == TIO_PKV_UNTYPED_STORAGE ? v3_dtype : e->dtype;
    *quant = e->id == TIO_PKV_QSTORAGE;
    if (dt == TIO_DTYPE_INVALID)
        return tio__err(r->err, TIO_E_DTYPE, TH, th_off(type->off),
                        "a storage of %s: tensio has no such dtype (yet)",
                        e->id == TIO_PKV_UNTYPED_STORAGE ? "an untyped storage without a dtype"
                                                          : th_gname(type, gn, sizeof gn));
    if (!key || key->kind != TIO_PK_STR)
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(o->off),
                        "the persistent id's key is not a str");
    int64_t numel = 0;
    int rc = th_int(r, tio__pk_item(p, pid, 4), "the storage's size", o->off, &numel);
    if (rc) return rc;
    rc = th_storage_zip(r, key, dt, o->off, st);
    if (rc) return rc;
    uint64_t want = 0, es = th_dtype_size(dt);
    if (numel < 0 || tio__mul64_ovf((uint64_t)numel, e->id == TIO_PKV_UNTYPED_STORAGE ? 1 : es, &want))
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(o->off),
                        "storage size %" PRId64 " is negative or overflows", numel);
    char k[64];
    k[0] = 0;
    if ((*st)->nbytes < want || pid->n >= 6) /* named in the messages below */
        tio__escape(key->u.s, key->n, k, sizeof k);
    if ((*st)->nbytes < want)
        return tio__err(r->err, TIO_E_BOUNDS, TH, th_off((*st)->at),
                        "storage '%s' declares %" PRId64 " elements of %s (%" PRIu64
                        " bytes), its record holds %" PRIu64 " bytes",
                        k, numel, tio_dtype_name(dt), want, (*st)->nbytes);
    /* legacy view_metadata: (view_key, offset, size) */
    const tio_pk_obj *vm = pid->n >= 6 ? tio__pk_item(p, pid, 5) : NULL;
    if (vm && vm->kind == TIO_PK_TUPLE && vm->n == 3) {
        int64_t voff = 0, vsize = 0;
        rc = th_int(r, tio__pk_item(p, vm, 1), "a storage view's offset", o->off, &voff);
        if (!rc) rc = th_int(r, tio__pk_item(p, vm, 2), "a storage view's size", o->off, &vsize);
        if (rc) return rc;
        if (voff < 0 || vsize < 0 || (uint64_t)voff > (*st)->nbytes / es ||
            (uint64_t)vsize > (*st)->nbytes / es - (uint64_t)voff)
            return tio__err(r->err, TIO_E_BOUNDS, TH, th_off(o->off),
                            "a view of %" PRId64 " elements at %" PRId64 " of storage '%s' (%" PRIu64 " elements)",
                            vsize, voff, k, (*st)->nbytes / es);
        *view_off = (uint64_t)voff;
    } else if (vm && vm->kind != TIO_PK_NONE) {
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(o->off),
                        "the persistent id's view metadata is not None or (key, offset, size)");
    }
    return TIO_OK;
}

/* Room for one more tensor named as walked: max_tensors, and a name not
 * given yet (*taken: it was, a finding, and the tensor is dropped). */
static int th_room(th_reader *r, uint64_t at, uint64_t *nh, int *taken) {
    *taken = 0;
    if (r->ctx->c->count >= r->ctx->limits.max_tensors)
        return tio__err(r->err, TIO_E_LIMIT, TH, th_off(at),
                        "more than %" PRIu64 " tensors (max_tensors)", r->ctx->limits.max_tensors);
    return r->name_depth ? th_name_taken(r, r->name, nh, taken, at) : TIO_OK;
}

/* Counts nb more bytes copied (strided views, swaps, NumPy arrays) against
 * max_dense_bytes; the message says what for ("what shape how"). */
static int th_budget(th_reader *r, uint64_t nb, uint64_t at, const char *what,
                     const char *shape, const char *how) {
    uint64_t total = 0;
    if (tio__add64_ovf(r->dense, nb, &total) || total > r->ctx->limits.max_dense_bytes) {
        char before[64] = ","; /* the copies before count too */
        if (r->dense)
            snprintf(before, sizeof before, "; with the %" PRIu64 " copied before,", r->dense);
        return tio__err(r->err, TIO_E_LIMIT, TH, th_off(at),
                        "'%s': %s %s %s needs %" PRIu64 " bytes%s above max_dense_bytes %" PRIu64
                        " (--max-dense-bytes)",
                        r->name_depth ? r->name : "(root)", what, shape, how, nb, before,
                        r->ctx->limits.max_dense_bytes);
    }
    r->dense = total;
    return TIO_OK;
}

/* Appends td, named as walked (th_room said the name is free, its hash nh):
 * its data a view, or `copy`, which the tensor takes (freed on failure). */
static int th_append(th_reader *r, tio_tensor_desc *td, uint8_t *copy, int64_t src_off,
                     uint64_t nh, tio_tensor **out) {
    td->name = r->name_depth ? r->name : NULL;
    int rc = tio__container_add_view(r->ctx->c, td, src_off, TH, r->err);
    if (rc) {
        free(copy);
        return rc;
    }
    tio_tensor *t = r->ctx->c->tensors[r->ctx->c->count - 1];
    t->owned_data = copy;
    *out = t;
    return t->name ? th_name_add(r, t->name, nh) : TIO_OK;
}

/* A metadata leaf under the name walked + "." + `leaf`. */
static int th_meta_leaf(th_reader *r, const char *leaf, const char *value, const char *type,
                        uint64_t at) {
    size_t mark = 0;
    int rc = th_name_push(r, leaf, strlen(leaf), &mark, at);
    if (!rc) rc = th_meta(r, value, type, at);
    th_name_pop(r, mark);
    return rc;
}

static int th_walk_child(th_reader *r, uint32_t kid, const char *s, size_t n, uint64_t at,
                         unsigned depth);

/* A per-channel quantizer's tensor (scales or zero points), walked as NAME.`leaf`: one
 * dim of size[axis] elements. */
static int th_qchannel(th_reader *r, uint32_t obj, const char *leaf, int64_t channels,
                       uint64_t at, unsigned depth) {
    tio_container *c = r->ctx->c;
    size_t before = c->count;
    int rc = th_walk_child(r, obj, leaf, strlen(leaf), at, depth);
    if (rc) return rc;
    const tio_tensor *t = c->count == before + 1 ? c->tensors[before] : NULL;
    if (!t || t->rank != 1 || t->shape[0] != channels)
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                        "quantized tensor '%s': its per-channel %s %s (expected a tensor of "
                        "%" PRId64 " elements, one per channel along the axis)",
                        r->name_depth ? r->name : "(root)", leaf,
                        !t ? "are not a tensor" : "have another shape", channels);
    return TIO_OK;
}

/* A quantized tensor's parameters, beside it: NAME.qscheme, and
 * NAME.q_scale, NAME.q_zero_point (per tensor) or NAME.q_per_channel_axis
 * and the tensors NAME.q_per_channel_scales, NAME.q_per_channel_zero_points
 * (per channel), as torch's accessors name them. */
static int th_quant(th_reader *r, const tio_qparams *q, const int64_t *size, uint64_t at,
                    unsigned depth) {
    char v[64];
    snprintf(v, sizeof v, "torch.%s", q->scheme);
    int rc = th_meta_leaf(r, "qscheme", v, "string", at);
    if (rc) return rc;
    if (!q->per_channel) {
        tio__th_float_text(q->scale, 0, v, sizeof v);
        rc = th_meta_leaf(r, "q_scale", v, "float64", at);
        snprintf(v, sizeof v, "%" PRId64, q->zero_point);
        return rc ? rc : th_meta_leaf(r, "q_zero_point", v, "int64", at);
    }
    snprintf(v, sizeof v, "%" PRId64, q->axis);
    rc = th_meta_leaf(r, "q_per_channel_axis", v, "int64", at);
    if (!rc) rc = th_qchannel(r, q->scales, "q_per_channel_scales", size[q->axis], at, depth);
    if (!rc)
        rc = th_qchannel(r, q->zero_points, "q_per_channel_zero_points", size[q->axis], at, depth);
    return rc;
}

/* A part of a sparse tensor (its indices or values): a tensor rebuilt over
 * a storage, C-contiguous, not listed itself. */
typedef struct th_part {
    tio_dtype dtype;
    size_t rank;
    int64_t size[TH_MAX_RANK];
    uint64_t numel;
    th_storage *st;
    uint64_t start;      /* its first element's index in st */
    const uint8_t *data; /* that element */
} th_part;

/* A tensor: rebuild function `e` applied to `args`, at walk depth `depth`,
 * `nest` rebuilds deep (a Parameter of a tensor: 1). With `part`, the tensor
 * is a sparse tensor's part: checked and described there, not added. */
static int th_tensor(th_reader *r, const tio_pk_vocab_entry *e, const tio_pk_obj *args,
                     uint64_t at, unsigned depth, unsigned nest, th_part *part) {
    const tio_pickle *p = &r->pk;
    if (nest > 8) /* a Parameter of a tensor: 1; of a subclass: 2 */
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                        "tensors rebuilt from tensors nested %u deep", nest);
    if (!args || args->kind != TIO_PK_TUPLE)
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at), "%s's arguments are not a tuple",
                        e->name);
    switch (e->id) {
    case TIO_PKV_REBUILD_PARAMETER:
    case TIO_PKV_REBUILD_PARAMETER_STATE: {
        const tio_pk_obj *t = tio__pk_item(p, args, 0);
        const tio_pk_vocab_entry *f = tio__pk_callee(p, t);
        if (!f)
            return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                            "a Parameter whose data are not a tensor");
        return th_tensor(r, f, tio__pk(p, t->u.call.args), t->off, depth, nest + 1, part);
    }
    case TIO_PKV_REBUILD_FROM_TYPE: { /* (func, type, args, state) */
        const tio_pk_obj *f = tio__pk_item(p, args, 0);
        const tio_pk_vocab_entry *fe = f && f->kind == TIO_PK_GLOBAL ? tio__pk_vocab_at(f->vocab) : NULL;
        if (!fe || fe->id < TIO_PKV_REBUILD_TENSOR || fe->id > TIO_PKV_REBUILD_FROM_TYPE)
            return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                            "_rebuild_from_type_v2 of a function that rebuilds no tensor");
        return th_tensor(r, fe, tio__pk_item(p, args, 2), at, depth, nest + 1, part);
    }
    default:
        break;
    }
    if (args->n < 4)
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                        "%s with %" PRIu32 " arguments (expected storage, offset, size, stride…)",
                        e->name, args->n);
    tio_dtype v3 = TIO_DTYPE_INVALID;
    if (e->id == TIO_PKV_REBUILD_TENSOR_V3) {
        const tio_pk_obj *d = tio__pk_item(p, args, 6);
        const tio_pk_vocab_entry *de = d && d->kind == TIO_PK_GLOBAL ? tio__pk_vocab_at(d->vocab) : NULL;
        if (!de || de->id != TIO_PKV_DTYPE)
            return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                            "_rebuild_tensor_v3's dtype is not a torch dtype");
        v3 = de->dtype;
    }
    th_storage *st = NULL;
    uint64_t base = 0;
    int quant = 0;
    int rc = th_persid(r, tio__pk_item(p, args, 0), v3, at, &st, &base, &quant);
    if (rc) return rc;
    if (quant != (e->id == TIO_PKV_REBUILD_QTENSOR))
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                        "'%s': %s over a %s storage",
                        r->name_depth ? r->name : "(root)", e->name,
                        quant ? "quantized" : "non-quantized");
    int64_t off = 0, size[TH_MAX_RANK], stride[TH_MAX_RANK];
    size_t rank = 0, srank = 0;
    rc = th_int(r, tio__pk_item(p, args, 1), "the storage offset", at, &off);
    if (!rc) rc = th_ints(r, tio__pk_item(p, args, 2), "size", at, size, &rank);
    if (!rc) rc = th_ints(r, tio__pk_item(p, args, 3), "stride", at, stride, &srank);
    if (rc) return rc;
    if (srank != rank)
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                        "the tensor has %zu sizes and %zu strides (expected the same)", rank, srank);
    if (off < 0)
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                        "the storage offset is %" PRId64 " (expected >= 0)", off);
    size_t es = th_dtype_size(st->dtype);
    uint64_t numel = 1, last = 0, elems = st->nbytes / es, start = 0;
    int contiguous = 1;
    uint64_t want = 1;
    for (size_t k = rank; k-- > 0;) {
        uint64_t span = 0;
        if (tio__mul64_ovf(numel, (uint64_t)size[k], &numel) ||
            (size[k] && tio__mul64_ovf((uint64_t)size[k] - 1, (uint64_t)stride[k], &span)) ||
            tio__add64_ovf(last, span, &last))
            return tio__err(r->err, TIO_E_OVERFLOW, TH, th_off(at),
                            "size x stride overflows 64 bits");
        if (size[k] != 1 && (uint64_t)stride[k] != want) contiguous = 0;
        if (tio__mul64_ovf(want, (uint64_t)size[k], &want)) want = UINT64_MAX;
    }
    char shape[96];
    if (tio__add64_ovf(base, (uint64_t)off, &start) ||
        (numel && (tio__add64_ovf(start, last, &last) || last >= elems)) || start > elems) {
        char k[64];
        tio__escape(st->key, st->key_len, k, sizeof k);
        tio__shape_str(size, rank, shape, sizeof shape);
        return tio__err(r->err, TIO_E_BOUNDS, TH, th_off(at),
                        "'%s': a view of shape %s at offset %" PRId64 " reaches past its storage "
                        "'%s' of %" PRIu64 " %s elements",
                        r->name_depth ? r->name : "(root)", shape, off, k, elems,
                        tio_dtype_name(st->dtype));
    }
    if (part) {
        if (quant || (numel && !contiguous)) {
            tio__shape_str(size, rank, shape, sizeof shape);
            return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                            "'%s': a sparse tensor's part of shape %s is %s (expected a "
                            "contiguous tensor, as torch.save writes them)",
                            r->name_depth ? r->name : "(root)", shape,
                            quant ? "quantized" : "a strided view");
        }
        part->dtype = st->dtype;
        part->rank = rank;
        if (rank) memcpy(part->size, size, rank * sizeof *size);
        part->numel = numel;
        part->st = st;
        part->start = start;
        part->data = st->data ? st->data + start * es : NULL;
        return TIO_OK;
    }
    tio_qparams qp;
    if (quant && (rc = tio__th_qparams(p, tio__pk_item(p, args, 4), rank, TH, r->name, at, &qp,
                                       r->err)))
        return rc;
    tio_container *c = r->ctx->c;
    uint64_t nh = 0;
    int taken = 0;
    if ((rc = th_room(r, at, &nh, &taken)) || taken) return rc;
    tio_tensor_desc td;
    memset(&td, 0, sizeof td);
    td.dtype = st->dtype;
    td.rank = rank;
    td.shape = size;
    td.layout = TIO_LAYOUT_DENSE;
    td.nbytes = (size_t)(numel * es); /* <= storage bytes when contiguous */
    uint8_t *copy = NULL;
    tio_strided *sv = NULL;
    if (numel && (!contiguous || st->swap)) {
        /* numel * es fits: an expanded view (stride 0) may claim more than
         * its storage holds, but numel < 2^64 / es was checked with size */
        uint64_t nb = 0;
        if (tio__mul64_ovf(numel, es, &nb) || nb > SIZE_MAX)
            return tio__err(r->err, TIO_E_OVERFLOW, TH, th_off(at),
                            "numel x element size overflows");
        tio__shape_str(size, rank, shape, sizeof shape);
        if (st->owned) { /* a storage decoded into memory (inflated, swapped): copied now */
            if ((rc = th_budget(r, nb, at, "making the strided view of shape", shape,
                                "contiguous")))
                return rc;
            int64_t idx[TH_MAX_RANK];
            copy = malloc((size_t)nb);
            if (!copy) return tio__nomem(r->err, TH);
            th_gather(copy, st->data + start * es, size, stride, rank, es, numel, idx);
        } else { /* a view of the mapped storage, made contiguous when asked for */
            if (!contiguous && nb > r->ctx->limits.max_dense_bytes)
                return tio__err(r->err, TIO_E_LIMIT, TH, th_off(at),
                                "'%s': making the strided view of shape %s contiguous needs "
                                "%" PRIu64 " bytes, above max_dense_bytes %" PRIu64
                                " (--max-dense-bytes)",
                                r->name_depth ? r->name : "(root)", shape, nb,
                                r->ctx->limits.max_dense_bytes);
            sv = tio__container_chunk(c, sizeof *sv + rank * sizeof sv->stride[0]);
            if (!sv) return tio__nomem(r->err, TH);
            sv->base = st->data + start * es;
            sv->swap = st->swap;
            memcpy(sv->stride, stride, rank * sizeof *stride);
        }
        td.nbytes = (size_t)nb;
    }
    td.data = copy ? copy : numel ? st->data + start * es : st->data;
    if (!copy && numel && !st->data) td.data = NULL;
    int64_t src_off = th_off(st->owned ? st->at : st->at + start * es);
    tio_tensor *t = NULL;
    if ((rc = th_append(r, &td, copy, src_off, nh, &t))) return rc;
    if (sv) {
        t->strided = sv;
        t->data = NULL;
    } else if (!copy && st->owned) {
        t->owned_data = st->owned; /* the first tensor over it frees it */
        st->owned = NULL;
    } else if (numel && es > 1 && (uintptr_t)t->data % es) {
        t->unaligned = 1;
    }
    if (st->tensors++ == 0) {
        st->first = c->count - 1;
    } else { /* tied weights: the tensors share a storage (props "shares_storage.NAME");
              * the same view of it is an alias (tio_tensor_alias) */
        const tio_tensor *f = c->tensors[st->first];
        if (!quant && !copy && !sv && !f->strided && f->data == t->data &&
            f->nbytes == t->nbytes &&
            f->rank == t->rank && (!rank || memcmp(f->shape, t->shape, rank * sizeof *size) == 0))
            t->alias = f;
        const char *first = f->name;
        char *key = malloc(r->name_len + 16);
        if (!key) return tio__nomem(r->err, TH);
        memcpy(key, "shares_storage.", 15);
        memcpy(key + 15, r->name_len ? r->name : "", r->name_len + 1);
        rc = tio__kv_append(&c->props, key, first ? first : "(root)", r->err); /* names are unique */
        free(key);
        if (rc) return rc;
    }
    return quant ? th_quant(r, &qp, size, at, depth) : TIO_OK;
}

/* The name of the layout a sparse tensor's first argument gives: a call of
 * _get_layout("torch.sparse_coo"), as torch.layout pickles; else NULL. */
static const tio_pk_obj *th_layout(const tio_pickle *p, const tio_pk_obj *l) {
    const tio_pk_vocab_entry *e = tio__pk_callee(p, l);
    if (!e || e->id != TIO_PKV_GET_LAYOUT) return NULL;
    const tio_pk_obj *a = tio__pk(p, l->u.call.args);
    const tio_pk_obj *s = a && a->kind == TIO_PK_TUPLE && a->n == 1 ? tio__pk_item(p, a, 0) : NULL;
    return s && s->kind == TIO_PK_STR ? s : NULL;
}

/* Item k of a sparse tensor's data, `what` ("indices", "values"): a tensor
 * rebuilt over a storage, described in *part. */
static int th_sparse_part(th_reader *r, const tio_pk_obj *data, uint32_t k, const char *what,
                          uint64_t at, unsigned depth, th_part *part) {
    const tio_pickle *p = &r->pk;
    const tio_pk_obj *t = tio__pk_item(p, data, k);
    const tio_pk_vocab_entry *f = tio__pk_callee(p, t);
    if (!f || f->id < TIO_PKV_REBUILD_TENSOR || f->id > TIO_PKV_REBUILD_QTENSOR)
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                        "'%s': the sparse tensor's %s are not a tensor",
                        r->name_depth ? r->name : "(root)", what);
    return th_tensor(r, f, tio__pk(p, t->u.call.args), t->off, depth, 1, part);
}

/* Whether two of the nnz rows of rank int64 coordinates at ind are one
 * (an uncoalesced tensor can repeat an index): *rep is then a repeat's row,
 * else nnz. Sorted rows (a coalesced tensor's) take one pass; others a
 * table of 2 x nnz slots, seeded (tio__hash_bytes). -1: no memory. */
static int th_coo_repeats(const uint8_t *ind, uint64_t nnz, size_t rank, uint64_t *rep) {
    size_t row = rank * 8;
    *rep = nnz;
    if (nnz < 2 || rank == 0) {
        if (nnz >= 2) *rep = 1; /* rank 0: every row is the empty index */
        return 0;
    }
    uint64_t i = 1;
    for (; i < nnz; i++) { /* strictly increasing rows cannot repeat */
        const uint8_t *a = ind + (i - 1) * row, *b = a + row;
        size_t k = 0;
        while (k < rank && tio__ld64(a + k * 8) == tio__ld64(b + k * 8)) k++;
        if (k == rank || (int64_t)tio__ld64(a + k * 8) > (int64_t)tio__ld64(b + k * 8)) break;
    }
    if (i == nnz) return 0;
    size_t cap = 2;
    while (cap < nnz * 2) cap *= 2; /* nnz * 2 fits: the rows are in memory */
    uint64_t *slot = calloc(cap, sizeof *slot), seed = tio__hash_seed(&cap);
    if (!slot) return -1;
    for (i = 0; i < nnz; i++) {
        const uint8_t *a = ind + i * row;
        size_t h = (size_t)tio__hash_bytes(seed, a, row) & (cap - 1);
        for (; slot[h]; h = (h + 1) & (cap - 1))
            if (memcmp(ind + (slot[h] - 1) * row, a, row) == 0) break;
        if (slot[h]) break;
        slot[h] = i + 1;
    }
    free(slot);
    *rep = i;
    return 0;
}

/* A sparse tensor left as an opaque object, with a finding saying why. */
static int th_sparse_opaque(th_reader *r, uint64_t at, const char *why, const char *what) {
    int rc = tio__warn(r->ctx, TH, th_off(at), r->err,
                       "'%s': %s (%s; kept as an opaque object)",
                       r->name_depth ? r->name : "(root)", what, why);
    if (rc) return rc;
    snprintf(r->scratch, sizeof r->scratch, "(%.253s)", what);
    return th_meta(r, r->scratch, NULL, at);
}

/* Element i of an index part (int64 or int32, swapped where stored
 * big-endian). */
static int64_t th_index_at(const th_part *pt, uint64_t i) {
    size_t es = pt->dtype == TIO_INT64 ? 8 : 4;
    uint8_t b[8];
    memcpy(b, pt->data + i * es, es);
    if (pt->st->swap)
        for (size_t k = 0; k < es / 2; k++) {
            uint8_t t = b[k];
            b[k] = b[es - 1 - k];
            b[es - 1 - k] = t;
        }
    return es == 8 ? (int64_t)tio__ld64(b) : (int64_t)(int32_t)tio__ld32(b);
}

/* The COO tensor of shape size[rank] whose nnz x rank indices are ind
 * (malloc'd, taken) and whose values are vs: checked for a repeated index
 * (a finding), added under the name walked. */
static int th_sparse_add(th_reader *r, uint64_t at, const int64_t *size, size_t rank,
                         const th_part *vs, uint8_t *ind, uint64_t nnz) {
    const char *nm = r->name_depth ? r->name : "(root)";
    size_t es = th_dtype_size(vs->dtype);
    uint64_t vb = nnz * es, rep = nnz; /* the values' storage holds them */
    uint64_t nh = 0;
    int taken = 0, rc = th_room(r, at, &nh, &taken);
    if (!rc && !taken && th_coo_repeats(ind, nnz, rank, &rep)) rc = tio__nomem(r->err, TH);
    if (!rc && !taken && rep < nnz) {
        /* torch adds the values of a repeated index; densifying keeps the last */
        char c[160];
        size_t n = 0;
        for (size_t k = 0; k < rank && n < sizeof c - 24; k++)
            n += (size_t)snprintf(c + n, sizeof c - n, "%s%" PRId64, k ? ", " : "",
                                  (int64_t)tio__ld64(ind + (rep * rank + k) * 8));
        c[n] = 0;
        rc = tio__warn(r->ctx, TH, th_off(at), r->err,
                       "'%s': an uncoalesced COO tensor whose index (%s) repeats (value %" PRIu64
                       "): torch adds the values of a repeated index, tio_tensor_densify and "
                       "conversions to dense keep the last; kept as stored",
                       nm, c, rep);
    }
    uint8_t *vcopy = NULL;
    if (!rc && !taken && vb && vs->st->swap) {
        vcopy = malloc((size_t)vb);
        if (!vcopy) {
            rc = tio__nomem(r->err, TH);
        } else {
            memcpy(vcopy, vs->data, (size_t)vb);
            tio__swap_units(vcopy, (size_t)vb, vs->st->swap);
        }
    }
    if (rc || taken) {
        free(ind);
        return rc;
    }
    tio_tensor_desc td;
    memset(&td, 0, sizeof td);
    td.dtype = vs->dtype;
    td.rank = rank;
    td.shape = size;
    td.layout = TIO_LAYOUT_COO;
    td.nnz = nnz;
    td.indices = (const int64_t *)(void *)ind; /* malloc: aligned */
    td.nbytes = (size_t)vb;
    td.data = vcopy ? vcopy : vb ? vs->data : NULL;
    int64_t src_off = th_off(vs->st->owned ? vs->st->at : vs->st->at + vs->start * es);
    tio_tensor *t = NULL;
    rc = th_append(r, &td, vcopy, src_off, nh, &t);
    if (!t) {
        free(ind);
        return rc;
    }
    t->owned_indices = ind;
    if (!vcopy && vs->st->owned) {
        t->owned_data = vs->st->owned; /* as a dense tensor over it takes it */
        vs->st->owned = NULL;
    } else if (!vcopy && vb && es > 1 && (uintptr_t)t->data % es) {
        t->unaligned = 1;
    }
    return rc;
}

/* Counts what making a COO tensor of nnz indices of `rank` costs against
 * max_dense_bytes (the indices, the repeat check's table, a swapped copy of
 * the values) and allocates the indices, nnz x rank int64. */
static int th_sparse_indices(th_reader *r, uint64_t at, const char *shape, size_t rank,
                             uint64_t nnz, const th_part *vs, uint8_t **ind) {
    uint64_t ib = 0, tb = 0, vb = 0;
    *ind = NULL;
    if (tio__mul64_ovf(nnz, rank, &ib) || tio__mul64_ovf(ib, 8, &ib) || ib > SIZE_MAX ||
        tio__mul64_ovf(nnz, 16, &tb) || tio__add64_ovf(ib, tb, &tb) ||
        (vs->st->swap && (tio__mul64_ovf(nnz, th_dtype_size(vs->dtype), &vb) ||
                          tio__add64_ovf(tb, vb, &tb))))
        return tio__err(r->err, TIO_E_OVERFLOW, TH, th_off(at), "'%s': nnz x rank overflows",
                        r->name_depth ? r->name : "(root)");
    int rc = th_budget(r, tb, at, "making the indices of the sparse tensor of shape", shape, "");
    if (rc || !ib) return rc;
    *ind = malloc((size_t)ib);
    return *ind ? TIO_OK : tio__nomem(r->err, TH);
}

/* A sparse tensor, torch._utils._rebuild_sparse_tensor(layout, data) (and
 * torch 1.13's _rebuild_sparse_csr_tensor), the layout a _get_layout call:
 * - torch.sparse_coo, (indices, values, size[, is_coalesced]): int64
 *   indices [rank, nnz], values [nnz]: a COO tensor, its values a view, its
 *   indices transposed into a copy (nnz x rank, the container's order);
 * - torch.sparse_csr / sparse_csc, (compressed, plain, values, size) of a
 *   matrix: int64 or int32 indices, values [nnz]: the same tensor as a COO
 *   one (row, column) in the stored order, its layout in NAME.layout.
 * Other layouts, batched and hybrid tensors (values of more dims: tensio's
 * COO tensors hold one value per index) are opaque objects with a finding. */
static int th_sparse(th_reader *r, const tio_pk_obj *o, const tio_pk_obj *args,
                     unsigned depth) {
    const tio_pickle *p = &r->pk;
    uint64_t at = o->off;
    const char *nm = r->name_depth ? r->name : "(root)";
    const tio_pk_obj *lay = args && args->kind == TIO_PK_TUPLE && args->n == 2
                                ? th_layout(p, tio__pk_item(p, args, 0))
                                : NULL;
    const tio_pk_obj *data = lay ? tio__pk_item(p, args, 1) : NULL;
    if (!data || data->kind != TIO_PK_TUPLE)
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                        "'%s': the sparse tensor's arguments are not (layout, data), the "
                        "layout a call of torch.serialization._get_layout with its name",
                        nm);
    char what[256], ln[64];
    tio__escape(lay->u.s, lay->n, ln, sizeof ln);
    int coo = th_str_eq(lay, "torch.sparse_coo"), csr = th_str_eq(lay, "torch.sparse_csr");
    int csc = th_str_eq(lay, "torch.sparse_csc");
    if (!coo && !csr && !csc) {
        snprintf(what, sizeof what, "a sparse tensor of layout %s", ln);
        return th_sparse_opaque(r, at, "tensio reads the COO, CSR and CSC layouts", what);
    }
    if (coo ? data->n != 3 && data->n != 4 : data->n != 4)
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                        "'%s': a tensor of layout %s whose data has %" PRIu32 " items "
                        "(expected %s)",
                        nm, ln, data->n,
                        coo ? "indices, values, size, and is_coalesced or not"
                            : "compressed indices, plain indices, values and size");
    int64_t size[TH_MAX_RANK];
    size_t rank = 0;
    th_part ix, px, vs; /* indices (COO) or compressed indices, plain indices, values */
    int rc = th_ints(r, tio__pk_item(p, data, coo ? 2 : 3), "size", at, size, &rank);
    if (!rc)
        rc = th_sparse_part(r, data, 0, coo ? "indices" : "compressed indices", at, depth, &ix);
    if (!rc && !coo) rc = th_sparse_part(r, data, 1, "plain indices", at, depth, &px);
    if (!rc) rc = th_sparse_part(r, data, coo ? 1 : 2, "values", at, depth, &vs);
    if (rc) return rc;
    char shape[96], is[96], vshape[96];
    tio__shape_str(size, rank, shape, sizeof shape);
    tio__shape_str(ix.size, ix.rank, is, sizeof is);
    tio__shape_str(vs.size, vs.rank, vshape, sizeof vshape);
    uint8_t *ind = NULL;
    if (coo) {
        if (ix.dtype != TIO_INT64 || ix.rank != 2 || vs.rank < 1 || ix.size[1] != vs.size[0] ||
            (uint64_t)ix.size[0] + (vs.rank - 1) != rank)
            return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                            "'%s': a COO tensor of shape %s with %s indices of shape %s and "
                            "values of shape %s (expected int64 indices of shape [sparse dims, "
                            "nnz] and values of shape [nnz, dense dims], sparse + dense dims = "
                            "%zu)",
                            nm, shape, tio_dtype_name(ix.dtype), is, vshape, rank);
        if (vs.rank != 1) {
            snprintf(what, sizeof what, "a hybrid COO tensor of shape %s, values of shape %s",
                     shape, vshape);
            return th_sparse_opaque(r, at, "tensio's COO tensors hold one value per index", what);
        }
        uint64_t nnz = (uint64_t)vs.size[0];
        if ((rc = th_sparse_indices(r, at, shape, rank, nnz, &vs, &ind))) return rc;
        for (size_t k = 0; k < rank; k++) /* [rank, nnz] -> [nnz, rank], little-endian */
            for (uint64_t i = 0; i < nnz; i++)
                tio__st64(ind + (i * rank + k) * 8,
                          (uint64_t)th_index_at(&ix, (uint64_t)k * nnz + i));
        return th_sparse_add(r, at, size, rank, &vs, ind, nnz);
    }
    if (rank != 2 || ix.rank != 1 || vs.rank != 1) {
        snprintf(what, sizeof what, "a %s tensor of shape %s, values of shape %s",
                 rank != 2 || ix.rank != 1 ? "batched" : "hybrid", shape, vshape);
        return th_sparse_opaque(r, at,
                                "tensio reads CSR and CSC matrices of one value per index",
                                what);
    }
    int64_t outer = size[csr ? 0 : 1];
    if ((ix.dtype != TIO_INT64 && ix.dtype != TIO_INT32) || px.dtype != ix.dtype ||
        ix.size[0] - 1 != outer || px.rank != 1 || px.size[0] != vs.size[0])
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                        "'%s': a %s tensor of shape %s with %s compressed indices of shape %s, "
                        "plain indices of %" PRId64 " and %" PRId64 " values (expected int64 "
                        "or int32 indices, %" PRIu64 " compressed, one plain per value)",
                        nm, csr ? "CSR" : "CSC", shape, tio_dtype_name(ix.dtype), is,
                        px.rank == 1 ? px.size[0] : -1, vs.size[0], (uint64_t)outer + 1);
    uint64_t nnz = (uint64_t)vs.size[0];
    int64_t prev = 0;
    for (int64_t k = 0; k <= outer; k++) { /* 0, never decreasing, nnz at the end */
        int64_t v = th_index_at(&ix, (uint64_t)k);
        if ((k == 0 && v != 0) || v < prev || (uint64_t)v > nnz ||
            (k == outer && (uint64_t)v != nnz))
            return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                            "'%s': %s compressed index %" PRId64 " is %" PRId64 " after %" PRId64
                            " (expected 0 first, never decreasing, %" PRIu64 " last)",
                            nm, csr ? "CSR" : "CSC", k, v, prev, nnz);
        prev = v;
    }
    if ((rc = th_sparse_indices(r, at, shape, 2, nnz, &vs, &ind))) return rc;
    for (int64_t k = 0; k < outer; k++) { /* (row, column) of each value, in its order */
        int64_t end = th_index_at(&ix, (uint64_t)k + 1);
        for (int64_t j = th_index_at(&ix, (uint64_t)k); j < end; j++) {
            int64_t plain = th_index_at(&px, (uint64_t)j);
            tio__st64(ind + (uint64_t)j * 16 + (csr ? 0 : 8), (uint64_t)k);
            tio__st64(ind + (uint64_t)j * 16 + (csr ? 8 : 0), (uint64_t)plain);
        }
    }
    size_t before = r->ctx->c->count;
    rc = th_sparse_add(r, at, size, rank, &vs, ind, nnz);
    if (!rc && r->ctx->c->count > before) /* not when its name was taken */
        rc = th_meta_leaf(r, "layout", csr ? "torch.sparse_csr" : "torch.sparse_csc", "string",
                          at);
    return rc;
}

/* A NumPy array (numpy.core.multiarray._reconstruct + BUILD): a tensor,
 * viewing the pickle's bytes when they are C-ordered little-endian bytes in
 * the mapped file, else decoded into a copy within max_dense_bytes. */
static int th_ndarray(th_reader *r, const tio_pk_obj *o) {
    tio_np_array a;
    int rc = tio__np_array(&r->pk, o, TH, r->name, &a, r->err);
    if (rc) return rc;
    uint64_t nh = 0;
    int taken = 0;
    if ((rc = th_room(r, o->off, &nh, &taken)) || taken) return rc;
    tio_tensor_desc td;
    memset(&td, 0, sizeof td);
    td.dtype = a.dtype;
    td.rank = a.rank;
    td.shape = a.shape;
    td.layout = TIO_LAYOUT_DENSE;
    td.nbytes = (size_t)a.nbytes;
    uint8_t *copy = NULL;
    /* a view only into the mapped file: an inflated pickle is freed after the walk */
    int view = tio__np_array_is_view(&a) && r->pkl_base != 0;
    if (!view && a.nbytes) {
        char shape[96];
        tio__shape_str(a.shape, a.rank, shape, sizeof shape);
        if ((rc = th_budget(r, a.nbytes, o->off, "decoding the NumPy array of shape", shape, "")))
            return rc;
        int64_t idx[TIO_NP_MAX_RANK];
        copy = malloc((size_t)a.nbytes);
        if (!copy || tio__np_array_bytes(&a, copy, idx)) {
            free(copy);
            return tio__nomem(r->err, TH);
        }
    }
    td.data = copy ? copy : a.nbytes ? a.src : NULL;
    int64_t src_off = th_off(r->pkl_base && a.src && !a.latin1
                                 ? r->pkl_base + (uint64_t)(a.src - r->pk_data)
                                 : a.at);
    tio_tensor *t = NULL;
    if ((rc = th_append(r, &td, copy, src_off, nh, &t))) return rc;
    size_t es = tio_dtype_size(a.dtype);
    if (!copy && a.nbytes && es > 1 && (uintptr_t)t->data % es) t->unaligned = 1;
    return TIO_OK;
}

static int th_walk_child(th_reader *r, uint32_t kid, const char *s, size_t n, uint64_t at,
                         unsigned depth) {
    size_t mark = 0;
    int rc = th_name_push(r, s, n, &mark, at);
    if (!rc) rc = th_walk(r, kid, depth + 1);
    th_name_pop(r, mark);
    return rc;
}

static int th_walk_seq(th_reader *r, const tio_pk_obj *o, unsigned depth) {
    for (size_t k = 0; k < o->n; k++) {
        char d[TIO__DEC_CAP];
        const char *s = tio__u64_dec(d, k);
        int rc = th_walk_child(r, o->u.kids[k], s, strlen(s), o->off, depth);
        if (rc) return rc;
    }
    return TIO_OK;
}

/* Entry k of a dict, walked under its key. */
static int th_walk_entry(th_reader *r, const tio_pk_obj *o, size_t k, unsigned depth) {
    const tio_pk_obj *key = tio__pk(&r->pk, o->u.kids[2 * k]);
    char d[40];
    const char *s = d;
    size_t n = 0;
    if (key->kind == TIO_PK_STR) {
        s = (const char *)key->u.s;
        n = key->n;
        if (memchr(s, 0, n))
            return tio__err(r->err, TIO_E_UNSUPPORTED, TH, th_off(key->off),
                            "a key holding a NUL byte");
    } else if (key->kind == TIO_PK_INT) {
        n = (size_t)snprintf(d, sizeof d, "%" PRId64, key->u.i);
    } else if (key->kind == TIO_PK_BOOL || key->kind == TIO_PK_NONE) {
        n = (size_t)snprintf(d, sizeof d, "%s",
                             key->kind == TIO_PK_NONE ? "None" : key->u.i ? "True" : "False");
    } else {
        n = (size_t)snprintf(d, sizeof d, "%zu", k); /* a key of another kind: its position */
    }
    return th_walk_child(r, o->u.kids[2 * k + 1], s, n, o->off, depth);
}

static int th_walk_dict(th_reader *r, const tio_pk_obj *o, unsigned depth) {
    for (size_t k = 0; k < o->n; k++) {
        int rc = th_walk_entry(r, o, k, depth);
        if (rc) return rc;
    }
    return TIO_OK;
}

/* Which of torch.nn.Module's three registries a dict key names (1, 2, 4),
 * or 0. */
static unsigned th_module_part(const tio_pk_obj *key) {
    if (key->kind != TIO_PK_STR) return 0;
    static const char *const part[] = {"_parameters", "_buffers", "_modules"};
    for (unsigned k = 0; k < 3; k++)
        if (key->n == strlen(part[k]) && memcmp(key->u.s, part[k], key->n) == 0) return 1u << k;
    return 0;
}

/* Whether an object's state is a torch.nn.Module's __dict__: it holds all
 * three registries (every Module's __init__ makes them), each a dict. */
static int th_is_module(const tio_pickle *p, const tio_pk_obj *d) {
    if (d->kind != TIO_PK_DICT) return 0;
    unsigned have = 0;
    for (size_t k = 0; k < d->n; k++) {
        unsigned b = th_module_part(tio__pk(p, d->u.kids[2 * k]));
        if (b && tio__pk(p, d->u.kids[2 * k + 1])->kind == TIO_PK_DICT) have |= b;
    }
    return have == 7;
}

/* A pickled torch.nn.Module (torch.save(model)): its parameters, buffers and
 * submodules under the names state_dict() gives them ("layer1.0.conv1.weight",
 * not "_modules.layer1._modules.0._modules.conv1._parameters.weight"), the
 * registries' None entries (a Conv2d's bias=False) left out as state_dict()
 * leaves them; its other attributes (training, in_channels…) as metadata
 * beside them. state_idx is the __dict__. */
static int th_walk_module(th_reader *r, uint32_t state_idx, unsigned depth) {
    const tio_pickle *p = &r->pk;
    const tio_pk_obj *d = tio__pk(p, state_idx);
    if (r->seen[state_idx]) return TIO_OK; /* depth: th_walk checks it for every entry */
    r->seen[state_idx] = 1;
    for (size_t k = 0; k < d->n; k++) {
        uint32_t kid = d->u.kids[2 * k + 1];
        const tio_pk_obj *reg = tio__pk(p, kid);
        int rc = TIO_OK;
        if (!th_module_part(tio__pk(p, d->u.kids[2 * k])) || reg->kind != TIO_PK_DICT) {
            rc = th_walk_entry(r, d, k, depth); /* an attribute, under its name */
        } else if (!r->seen[kid]) { /* a registry shared: its entries walked once */
            r->seen[kid] = 1;
            for (size_t j = 0; j < reg->n && !rc; j++)
                if (tio__pk(p, reg->u.kids[2 * j + 1])->kind != TIO_PK_NONE)
                    rc = th_walk_entry(r, reg, j, depth + 1);
        }
        if (rc) return rc;
    }
    return TIO_OK;
}

/* rc of reading object idx as a tensor; records the tensor it became (the
 * first, for the object tree) when it became one. */
static int th_tensor_of(th_reader *r, uint32_t idx, size_t before, int rc) {
    if (!rc && r->ctx->c->count > before && r->tensor_of[idx] < 0)
        r->tensor_of[idx] = (int64_t)before;
    return rc;
}

int th_walk(th_reader *r, uint32_t idx, unsigned depth) {
    const tio_pickle *p = &r->pk;
    const tio_pk_obj *o = tio__pk(p, idx);
    if (!o) return tio__err(r->err, TIO_E_CORRUPT, TH, -1, "an object index past the pickle's");
    if (depth > r->ctx->limits.max_pickle_depth)
        return tio__err(r->err, TIO_E_LIMIT, TH, th_off(o->off),
                        "objects nested more than %" PRIu32 " deep (max_pickle_depth)",
                        r->ctx->limits.max_pickle_depth);
    char *v = r->scratch; /* not on the stack: th_walk recurses */
    switch (o->kind) {
    case TIO_PK_NONE: return th_meta(r, "None", NULL, o->off);
    case TIO_PK_BOOL: return th_meta(r, o->u.i ? "true" : "false", "bool", o->off);
    case TIO_PK_INT:
        snprintf(v, sizeof r->scratch, "%" PRId64, o->u.i);
        return th_meta(r, v, "int64", o->off);
    case TIO_PK_FLOAT:
        tio__th_float_text(o->u.f, 0, v, sizeof r->scratch);
        return th_meta(r, v, "float64", o->off);
    case TIO_PK_BIGINT:
        return th_meta(r, "(an integer past int64)", NULL, o->off);
    case TIO_PK_STR: {
        if (o->n > r->ctx->limits.max_name_bytes) {
            snprintf(v, sizeof r->scratch, "(a str of %" PRIu32 " bytes)", o->n);
            return th_meta(r, v, NULL, o->off);
        }
        /* NUL bytes included: metadata values carry their length */
        return th_meta_n(r, (const char *)o->u.s, o->n, "string", o->off);
    }
    case TIO_PK_BYTES:
        snprintf(v, sizeof r->scratch, "(%" PRIu32 " bytes)", o->n);
        return th_meta(r, v, NULL, o->off);
    case TIO_PK_GLOBAL: {
        char *g = r->gscratch;
        const tio_pk_vocab_entry *e = tio__pk_vocab_at(o->vocab);
        if (e && (e->id == TIO_PKV_DTYPE || e->id == TIO_PKV_QSCHEME))
            return th_meta(r, th_gname(o, g, sizeof r->gscratch), NULL, o->off);
        snprintf(v, sizeof r->scratch, "(global %s)", th_gname(o, g, sizeof r->gscratch));
        return th_meta(r, v, NULL, o->off);
    }
    case TIO_PK_PERSID:
        return th_meta(r, "(a storage)", NULL, o->off);
    default:
        break;
    }
    if (r->seen[idx]) return TIO_OK; /* shared: walked once (memo references) */
    r->seen[idx] = 1;
    switch (o->kind) {
    case TIO_PK_TUPLE:
    case TIO_PK_LIST:
    case TIO_PK_SET:
    case TIO_PK_FROZENSET:
        return th_walk_seq(r, o, depth);
    case TIO_PK_DICT:
        return th_walk_dict(r, o, depth); /* an OrderedDict's state (_metadata) is not walked */
    default:
        break;
    }
    /* a CALL */
    const tio_pk_vocab_entry *e = tio__pk_callee(p, o);
    const tio_pk_obj *args = tio__pk(p, o->u.call.args);
    if (e && e->id >= TIO_PKV_REBUILD_TENSOR && e->id <= TIO_PKV_REBUILD_QTENSOR) {
        r->seen[idx] = 0; /* the same tensor under several names: listed under each */
        size_t before = r->ctx->c->count;
        return th_tensor_of(r, idx, before, th_tensor(r, e, args, o->off, depth, 0, NULL));
    }
    if (e && e->id == TIO_PKV_REBUILD_SPARSE) {
        r->seen[idx] = 0; /* as a tensor: listed under each name */
        size_t before = r->ctx->c->count;
        return th_tensor_of(r, idx, before, th_sparse(r, o, args, depth));
    }
    if (e && e->id == TIO_PKV_NP_RECONSTRUCT) {
        r->seen[idx] = 0; /* as a tensor: listed under each name */
        size_t before = r->ctx->c->count;
        return th_tensor_of(r, idx, before, th_ndarray(r, o));
    }
    if (e && e->id == TIO_PKV_NP_SCALAR) {
        const char *type = NULL;
        int rc = tio__np_scalar(p, o, TH, r->name, v, sizeof r->scratch, &type, r->err);
        return rc ? rc : th_meta(r, v, type, o->off);
    }
    if (e && (e->id == TIO_PKV_SIZE || e->id == TIO_PKV_SET || e->id == TIO_PKV_FROZENSET ||
              e->id == TIO_PKV_JIT_LIST || e->id == TIO_PKV_JIT_TYPE_TAG) &&
        args && args->n >= 1)
        return th_walk(r, args->u.kids[0], depth + 1);
    if (e && e->id == TIO_PKV_DEVICE && args && args->n >= 1 &&
        tio__pk_item(p, args, 0)->kind == TIO_PK_STR)
        return th_walk(r, args->u.kids[0], depth + 1);
    uint64_t nbytes = 0; /* protocol 2's bytes: bytes() and _codecs.encode */
    if (tio__th_bytes_len(p, o, &nbytes)) {
        snprintf(v, sizeof r->scratch, "(%" PRIu64 " bytes)", nbytes);
        return th_meta(r, v, NULL, o->off);
    }
    /* an object of a class outside the vocabulary (or a call of one): its
     * state walked when it has one (an argparse.Namespace's fields, a
     * TorchScript module's parameters) */
    if (o->state != TIO_PK_NIL) {
        uint32_t si = o->state;
        const tio_pk_obj *s = tio__pk(p, si);
        if (s->kind == TIO_PK_TUPLE && s->n == 2) /* (state, slotstate) */
            s = tio__pk(p, si = s->u.kids[0]);
        if (th_is_module(p, s)) return th_walk_module(r, si, depth + 1);
        return th_walk(r, si, depth + 1);
    }
    const tio_pk_obj *f = tio__pk(p, o->u.call.func);
    char *g = r->gscratch;
    snprintf(v, sizeof r->scratch, "(object of %s)",
             f->kind == TIO_PK_GLOBAL ? th_gname(f, g, sizeof r->gscratch) : "a computed class");
    return th_meta(r, v, NULL, o->off);
}
