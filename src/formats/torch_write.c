/*
 * Writing PyTorch checkpoints (docs/formats/torch.md, "Writing"): the zip
 * layout of torch.save in torch 1.13, the bytes torch.save writes for an
 * OrderedDict of the same tensors (contiguous, on the CPU, requires_grad
 * False), so that torch.load(..., weights_only=True) gives them back:
 *
 *   <archive>/data.pkl   the pickle (protocol 2): an OrderedDict whose
 *                        values are torch._utils._rebuild_tensor_v2 calls
 *                        over persistent ids ('storage', torch.FloatStorage,
 *                        '<key>', 'cpu', numel)
 *   <archive>/data/<key> each storage's bytes, keys in string order
 *   <archive>/version    "3\n"
 *
 * each record stored, its data 64-byte aligned by a "FB" extra field of 'Z'
 * bytes, followed by a data descriptor, as PyTorch's writer (caffe2's
 * inline_container.cc over miniz) lays it out; then the central directory
 * and the zip64 end records, which that writer always writes (src/zip's
 * writer, in miniz's style). The pickle is src/pickle's emitter, memoized
 * where CPython's pickler memoizes. A tensor that is an alias of another
 * (tio_tensor_alias: tied weights) is written over the same storage. A COO
 * tensor is torch.save's sparse COO tensor: _rebuild_sparse_tensor(layout,
 * (indices, values, size)), its indices [rank, nnz] and its values two
 * storages of their own.
 */
#include "formats/torch_write.h"
#include "pickle/pickle.h"
#include "zip/zip.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TW "torch"
#define TW_ALIGN 64u        /* records' data alignment (kFieldAlignment) */
#define TW_BATCH 1000u      /* the pickler's SETITEMS batch (BATCHSIZE) */
#define TW_ZIP64 0xFFFFFFFEu /* miniz: zip64 fields from 0xFFFFFFFF on */
#define TW_DESCRIPTOR 0x08074b50u
#define TW_ARCHIVE_MAX 255u /* bytes of an archive name (option archive=) */

/* miniz as PyTorchStreamWriter drives it (MZ_ZIP_FLAG_WRITE_ZIP64, no time). */
static const tio_zipw_style tw_style = {
    .version = 0,
    .version64 = 0,
    .made_os = 0,
    .date = 0,
    .external = 0,
    .limit = TW_ZIP64,
    .end64_always = 1,
    .end64_made = 0x031E,
    .end64_need = 45,
};
#define TW_FLAG_UTF8 0x0800u /* the name is UTF-8 */
#define TW_FLAGS 0x0808u     /* ... and a data descriptor follows the data */

/* The storage class torch.save names for a dtype (pickle_storage_type). */
static const char *tw_storage_class(tio_dtype d) {
    switch (d) {
    case TIO_BOOL: return "BoolStorage";
    case TIO_INT8: return "CharStorage";
    case TIO_INT16: return "ShortStorage";
    case TIO_INT32: return "IntStorage";
    case TIO_INT64: return "LongStorage";
    case TIO_UINT8: return "ByteStorage";
    case TIO_FLOAT16: return "HalfStorage";
    case TIO_BFLOAT16: return "BFloat16Storage";
    case TIO_FLOAT32: return "FloatStorage";
    case TIO_FLOAT64: return "DoubleStorage";
    case TIO_COMPLEX64: return "ComplexFloatStorage";
    case TIO_COMPLEX128: return "ComplexDoubleStorage";
    default: return NULL;
    }
}

/* The key tensor i is written under: its name, or its index in decimal. */
static const char *tw_key(const tio_wtensor *w, size_t i, char buf[TIO__DEC_CAP]) {
    return w->name ? w->name : tio__u64_dec(buf, (uint64_t)i);
}

/* Plan tensor i's alias that is written as a tensor of its own (so its
 * storage is there to share), or SIZE_MAX. */
static size_t tw_alias(const tio_write_plan *p, size_t i) {
    const tio_wtensor *w = tio__plan_tensor(p, i);
    const tio_tensor *a = w->src->alias;
    if (!a || a->owner != tio__plan_container(p) || a->index >= i) return SIZE_MAX;
    const tio_wtensor *wa = tio__plan_tensor(p, a->index);
    if (!wa || wa->src != a || wa->dtype != w->dtype || wa->nbytes != w->nbytes ||
        wa->layout != TIO_LAYOUT_DENSE || w->layout != TIO_LAYOUT_DENSE)
        return SIZE_MAX;
    return a->index;
}

/* The archive's name (the zip's top directory): option archive=NAME, else
 * "archive", as torch.save names it writing to a file object. torch.save to
 * a path names it after the file; tio_save does not, so that a file's bytes
 * are the memory encoding's whatever its name (`tensio convert` passes
 * archive=STEM). */
static int tw_archive(const tio_write_plan *p, char *out, size_t cap, tio_error *err) {
    const char *s = tio__plan_option(p, "archive");
    size_t n = s ? strlen(s) : 0;
    if (s && (n == 0 || n > TW_ARCHIVE_MAX || strchr(s, '/') || strchr(s, '\\') ||
              tio__utf8_bad((const uint8_t *)s, n) != n))
        return tio__err(err, TIO_E_ARGUMENT, TW, -1,
                        "option archive=%.64s: expected 1 to %u bytes of UTF-8 without '/' or "
                        "'\\'",
                        s, TW_ARCHIVE_MAX);
    if (!s) {
        s = "archive";
        n = 7;
    }
    if (n >= cap) n = cap - 1;
    memcpy(out, s, n);
    out[n] = 0;
    return TIO_OK;
}

int tio__torch_check(const tio_write_plan *p, tio_error *err) {
    size_t n = tio__plan_count(p);
    const tio_container *c = tio__plan_container(p);
    unsigned flags = tio__plan_flags(p);
    char arch[TW_ARCHIVE_MAX + 1];
    int rc = tw_archive(p, arch, sizeof arch, err);
    if (rc) return rc;
    if (c->meta.count && !(flags & TIO_SAVE_DROP_METADATA))
        return tio__err(err, TIO_E_LOSSY, TW, -1,
                        "the container has %zu metadata entries and a state dict holds "
                        "tensors only (TIO_SAVE_DROP_METADATA / --drop-metadata drops them)",
                        c->meta.count);
    const char **keys = calloc(n ? n : 1, sizeof *keys);
    char(*gen)[TIO__DEC_CAP] = calloc(n ? n : 1, sizeof *gen);
    if (!keys || !gen) rc = tio__nomem(err, TW);
    for (size_t i = 0; i < n && !rc; i++) {
        const tio_wtensor *w = tio__plan_tensor(p, i);
        keys[i] = tw_key(w, i, gen[i]);
        size_t kl = strlen(keys[i]);
        if (!tw_storage_class(w->dtype))
            rc = tio__err(err, TIO_E_DTYPE, TW, -1,
                          "tensor %zu ('%.64s'): torch 1.13 has no %s tensors", i, keys[i],
                          tio_dtype_name(w->dtype) ? tio_dtype_name(w->dtype) : "?");
        else if (tio__utf8_bad((const uint8_t *)keys[i], kl) != kl)
            rc = tio__err(err, TIO_E_UNSUPPORTED, TW, -1,
                          "tensor %zu: its name is not valid UTF-8 (a pickled str is)", i);
        else if (kl > UINT32_MAX)
            rc = tio__err(err, TIO_E_UNSUPPORTED, TW, -1, "tensor %zu: a name of %zu bytes", i,
                          kl);
        else if (tio_tensor_meta_count(w->src) && !(flags & TIO_SAVE_DROP_METADATA))
            rc = tio__err(err, TIO_E_LOSSY, TW, -1,
                          "tensor %zu ('%.64s') has metadata and a state dict holds tensors "
                          "only (TIO_SAVE_DROP_METADATA / --drop-metadata drops it)",
                          i, keys[i]);
    }
    const char *dup = rc ? NULL : tio__sorted_dup(keys, n);
    if (dup)
        rc = tio__err(err, TIO_E_UNSUPPORTED, TW, -1,
                      "two tensors are named '%.64s' (a state dict's keys are unique; an "
                      "unnamed tensor is written under its index)",
                      dup);
    free(keys);
    free(gen);
    return rc;
}

/* ---------------------------------------------------------- the pickle */

/* What the pickler has memoized so far. CPython's memo is by object: the
 * same object again is a BINGET, an equal string that is another object is
 * not (a state dict's keys, the storage keys torch.save makes with str()). */
#define TW_NONE UINT32_MAX
typedef struct tw_memo {
    uint32_t od, rebuild, storage, cpu; /* OrderedDict, _rebuild_tensor_v2, 'storage', 'cpu' */
    uint32_t cls[TIO_DTYPE_COUNT];      /* torch.<X>Storage */
    uint32_t sparse, layout_fn, layout, size; /* _rebuild_sparse_tensor, _get_layout,
                                               * torch.sparse_coo (one object), torch.Size */
} tw_memo;

/* A str as the pickler saves it: BINGET when *slot holds its memo key,
 * else BINUNICODE and BINPUT (the key kept in *slot, when there is one).
 * Returns its memo key. */
static uint32_t tw_str(tio_pkw *w, const char *s, size_t n, uint32_t *slot) {
    if (slot && *slot != TW_NONE) {
        tio__pkw_get(w, *slot);
        return *slot;
    }
    tio__pkw_str(w, s, n);
    uint32_t k = tio__pkw_put(w);
    if (slot) *slot = k;
    return k;
}

/* A global, memoized on first use. */
static void tw_global(tio_pkw *w, uint32_t *slot, const char *mod, const char *name) {
    if (*slot != TW_NONE) {
        tio__pkw_get(w, *slot);
        return;
    }
    tio__pkw_global(w, mod, name);
    *slot = tio__pkw_put(w);
}

/* The storages: one per tensor that is not an alias, two per COO tensor
 * (its indices, then its values). */
typedef struct tw_storage {
    size_t tensor;     /* plan index of the tensor that owns it */
    int indices;       /* a COO tensor's indices, [rank, nnz] */
    char key[TIO__DEC_CAP];
    uint32_t key_memo; /* the memo key of its key str */
} tw_storage;

/* A C-contiguous tensor's strides as torch computes them (a dim of size 0
 * counts as 1, so an empty tensor's strides may exceed its element count:
 * refused past int64). */
static int tw_strides(const int64_t *shape, size_t rank, int64_t *st, tio_error *err) {
    uint64_t acc = 1;
    for (size_t k = rank; k-- > 0;) {
        if (acc > INT64_MAX)
            return tio__err(err, TIO_E_UNSUPPORTED, TW, -1,
                            "an empty tensor of %zu dims whose strides would overflow int64 "
                            "(torch counts a dim of 0 as 1)",
                            rank);
        st[k] = (int64_t)acc;
        if (shape[k] > 1 && tio__mul64_ovf(acc, (uint64_t)shape[k], &acc)) acc = UINT64_MAX;
    }
    return TIO_OK;
}

static void tw_ints_tuple(tio_pkw *w, const int64_t *v, size_t n) {
    tio__pkw_tuple_begin(w, n);
    for (size_t k = 0; k < n; k++) tio__pkw_int(w, v[k]);
    tio__pkw_tuple_end(w, n);
    if (n) tio__pkw_put(w);
}

/* A dense tensor of `dtype`, numel elements of shape[rank]:
 * _rebuild_tensor_v2((pid), 0, size, stride, False, OrderedDict()). */
static int tw_dense(tio_pkw *w, tw_memo *m, tio_dtype dtype, uint64_t numel,
                    const int64_t *shape, size_t rank, tw_storage *st, int first_use,
                    tio_error *err) {
    tw_global(w, &m->rebuild, "torch._utils", "_rebuild_tensor_v2");
    tio__pkw_tuple_begin(w, 6);
    /* the persistent id ('storage', torch.XStorage, key, 'cpu', numel) */
    tio__pkw_tuple_begin(w, 5);
    tw_str(w, "storage", 7, &m->storage);
    tw_global(w, &m->cls[dtype], "torch", tw_storage_class(dtype));
    if (first_use)
        st->key_memo = tw_str(w, st->key, strlen(st->key), NULL);
    else
        tio__pkw_get(w, st->key_memo);
    tw_str(w, "cpu", 3, &m->cpu);
    if (numel > INT64_MAX)
        return tio__err(err, TIO_E_OVERFLOW, TW, -1, "a tensor of %" PRIu64 " elements", numel);
    tio__pkw_int(w, (int64_t)numel);
    tio__pkw_tuple_end(w, 5);
    tio__pkw_put(w);
    tio__pkw_op(w, TIO_PKO_BINPERSID);
    tio__pkw_int(w, 0); /* storage offset */
    int64_t stride[TIO_DEFAULT_MAX_RANK];
    if (rank > TIO_DEFAULT_MAX_RANK)
        return tio__err(err, TIO_E_LIMIT, TW, -1, "a tensor of %zu dims (torch takes 64)", rank);
    int rc = tw_strides(shape, rank, stride, err);
    if (rc) return rc;
    tw_ints_tuple(w, shape, rank);
    tw_ints_tuple(w, stride, rank);
    tio__pkw_op(w, TIO_PKO_NEWFALSE); /* requires_grad */
    tw_global(w, &m->od, "collections", "OrderedDict"); /* backward hooks: OrderedDict() */
    tio__pkw_tuple_end(w, 0);
    tio__pkw_op(w, TIO_PKO_REDUCE);
    tio__pkw_put(w);
    tio__pkw_tuple_end(w, 6);
    tio__pkw_put(w);
    tio__pkw_op(w, TIO_PKO_REDUCE);
    tio__pkw_put(w);
    return TIO_OK;
}

/* Tensor i: a dense tensor, or a COO tensor as torch.save (1.13) pickles a
 * torch.sparse_coo tensor: _rebuild_sparse_tensor(torch.sparse_coo,
 * (indices, values, torch.Size(size))), the layout torch.layout's copyreg
 * reduction _get_layout('torch.sparse_coo') (one object: memoized), its
 * indices [rank, nnz] int64 (storage st) and values [nnz] (st + 1). */
static int tw_tensor(tio_pkw *w, tw_memo *m, const tio_wtensor *t, tw_storage *st,
                     int first_use, tio_error *err) {
    if (t->layout != TIO_LAYOUT_COO)
        return tw_dense(w, m, t->dtype, t->numel, t->shape, t->rank, st, first_use, err);
    tw_global(w, &m->sparse, "torch._utils", "_rebuild_sparse_tensor");
    if (m->layout != TW_NONE) {
        tio__pkw_get(w, m->layout);
    } else {
        tw_global(w, &m->layout_fn, "torch.serialization", "_get_layout");
        tw_str(w, "torch.sparse_coo", 16, NULL);
        tio__pkw_tuple_end(w, 1);
        tio__pkw_put(w);
        tio__pkw_op(w, TIO_PKO_REDUCE);
        m->layout = tio__pkw_put(w);
    }
    int64_t ishape[2] = {(int64_t)t->rank, (int64_t)t->nnz}, vshape[1] = {(int64_t)t->nnz};
    uint64_t inum = 0;
    if (t->nnz > INT64_MAX || tio__mul64_ovf(t->nnz, t->rank, &inum))
        return tio__err(err, TIO_E_OVERFLOW, TW, -1, "a COO tensor of %" PRIu64 " values",
                        t->nnz);
    int rc = tw_dense(w, m, TIO_INT64, inum, ishape, 2, st, 1, err);
    if (!rc) rc = tw_dense(w, m, t->dtype, t->nnz, vshape, 1, st + 1, 1, err);
    if (rc) return rc;
    tw_global(w, &m->size, "torch", "Size");
    tw_ints_tuple(w, t->shape, t->rank);
    tio__pkw_tuple_end(w, 1);
    tio__pkw_put(w);
    tio__pkw_op(w, TIO_PKO_REDUCE);
    tio__pkw_put(w);
    tio__pkw_tuple_end(w, 3); /* (indices, values, size) */
    tio__pkw_put(w);
    tio__pkw_tuple_end(w, 2); /* (layout, data) */
    tio__pkw_put(w);
    tio__pkw_op(w, TIO_PKO_REDUCE);
    tio__pkw_put(w);
    return TIO_OK;
}

/* The pickle of the OrderedDict (of the tensor itself when it is the only
 * one and has no name); of[i] the storage of plan tensor i (an alias's is
 * its target's). */
static int tw_pickle(const tio_write_plan *p, tw_storage **of, tio_pkw *w, tio_error *err) {
    size_t n = tio__plan_count(p);
    tw_memo m;
    memset(&m, 0xFF, sizeof m); /* TW_NONE everywhere */
    tio__pkw_proto(w, 2);
    if (n == 1 && !tio__plan_tensor(p, 0)->name) {
        /* one unnamed tensor (a checkpoint of a tensor, not of a dict):
         * torch.save(tensor) */
        int rc = tw_tensor(w, &m, tio__plan_tensor(p, 0), of[0], 1, err);
        tio__pkw_op(w, TIO_PKO_STOP);
        return rc ? rc : w->b.oom ? tio__nomem(err, TW) : TIO_OK;
    }
    tw_global(w, &m.od, "collections", "OrderedDict");
    tio__pkw_tuple_end(w, 0);
    tio__pkw_op(w, TIO_PKO_REDUCE);
    tio__pkw_put(w);
    /* the items as batch_dict writes them: batches of up to 1000 between
     * MARK and SETITEMS, a last batch of one as SETITEM */
    int rc = TIO_OK;
    for (size_t b = 0; b < n && !rc; b += TW_BATCH) {
        size_t k = n - b < TW_BATCH ? n - b : TW_BATCH;
        if (k > 1) tio__pkw_op(w, TIO_PKO_MARK);
        for (size_t i = b; i < b + k && !rc; i++) {
            char g[TIO__DEC_CAP];
            const tio_wtensor *t = tio__plan_tensor(p, i);
            const char *key = tw_key(t, i, g);
            tw_str(w, key, strlen(key), NULL);
            rc = tw_tensor(w, &m, t, of[i], of[i]->tensor == i, err);
        }
        tio__pkw_op(w, k > 1 ? TIO_PKO_SETITEMS : TIO_PKO_SETITEM);
    }
    tio__pkw_op(w, TIO_PKO_STOP);
    if (!rc && w->b.oom) rc = tio__nomem(err, TW);
    return rc;
}

/* ---------------------------------------------------------- the records */

typedef struct tw_rec {
    tio_zipw_member m;
    char *name; /* "<archive>/data/0" … */
} tw_rec;

/* A record's local header, as miniz writes one for PyTorch: version 0,
 * flags 0x0808, no sizes (the descriptor has them), the name, then zip64
 * fields when the size or the offset needs them, then the "FB" field that
 * pads the data to a multiple of 64 (getPadding). */
static int tw_local(tio_sink *s, const tw_rec *r, tio_error *err) {
    size_t nlen = strlen(r->name);
    uint64_t at = r->m.local, size = r->m.usize;
    int big = size > TW_ZIP64, far = at > TW_ZIP64;
    size_t x64 = big || far ? 4u + (big ? 16u : 0u) + (far ? 8u : 0u) : 0u;
    uint64_t start = at + 30 + nlen + 4 + x64;
    size_t pad = (size_t)((TW_ALIGN - start % TW_ALIGN) % TW_ALIGN);
    uint8_t h[30 + 28 + 4 + TW_ALIGN];
    memset(h, 0, 30);
    tio__st32(h, TIO_ZIP_LOCAL);
    h[6] = (uint8_t)r->m.flags;
    h[7] = (uint8_t)(r->m.flags >> 8);
    h[26] = (uint8_t)nlen;
    h[27] = (uint8_t)(nlen >> 8);
    size_t xl = x64 + 4 + pad;
    h[28] = (uint8_t)xl;
    h[29] = (uint8_t)(xl >> 8);
    int rc = tio__sink_write(s, h, 30, err);
    if (!rc) rc = tio__sink_write(s, r->name, nlen, err);
    uint8_t *x = h + 30;
    size_t k = 0;
    if (x64) {
        x[0] = 1;
        x[1] = 0;
        x[2] = (uint8_t)(x64 - 4);
        x[3] = 0;
        k = 4;
        if (big) {
            tio__st64(x + k, size);
            tio__st64(x + k + 8, size);
            k += 16;
        }
        if (far) {
            tio__st64(x + k, at);
            k += 8;
        }
    }
    x[k] = 'F';
    x[k + 1] = 'B';
    x[k + 2] = (uint8_t)pad;
    x[k + 3] = 0;
    memset(x + k + 4, 'Z', pad);
    if (!rc) rc = tio__sink_write(s, x, k + 4 + pad, err);
    return rc;
}

/* The data descriptor after a record's data (64-bit sizes after a record
 * with zip64 fields). */
static int tw_descriptor(tio_sink *s, const tw_rec *r, tio_error *err) {
    uint8_t d[24];
    tio__st32(d, TW_DESCRIPTOR);
    tio__st32(d + 4, r->m.crc);
    if (r->m.usize > TW_ZIP64 || r->m.local > TW_ZIP64) {
        tio__st64(d + 8, r->m.csize);
        tio__st64(d + 16, r->m.usize);
        return tio__sink_write(s, d, 24, err);
    }
    tio__st32(d + 8, (uint32_t)r->m.csize);
    tio__st32(d + 12, (uint32_t)r->m.usize);
    return tio__sink_write(s, d, 16, err);
}

/* Writes a record: plan tensor `tensor`'s bytes, or bytes[0..n) when
 * tensor is SIZE_MAX. With a job, the tensor's bytes as held are written
 * and their CRC is the job's item k (taken beside the writes). */
static int tw_record(tio_write_plan *p, tio_sink *s, tw_rec *r, size_t tensor,
                     const void *bytes, size_t n, tio_crc_job *job, size_t k, tio_error *err) {
    r->m.local = tio__sink_pos(s);
    r->m.method = TIO_ZIP_STORED;
    r->m.crc = 0;
    const uint8_t *data = bytes;
    if (tensor != SIZE_MAX && job) {
        data = tio__plan_view(p, tensor);
        n = tio__plan_tensor(p, tensor)->nbytes;
    } else if (tensor != SIZE_MAX) {
        int rc = tio__plan_data(p, tensor, &data, NULL, err);
        if (rc) return rc;
        n = tio__plan_tensor(p, tensor)->nbytes;
    }
    r->m.usize = r->m.csize = n;
    /* an empty record has no data descriptor (and no flag saying one follows) */
    r->m.flags = n ? TW_FLAGS : TW_FLAG_UTF8;
    int rc = tw_local(s, r, err);
    if (!rc && n) {
        if (tensor != SIZE_MAX && job) {
            if (!(rc = tio__plan_sink_data(p, s, data, n, err)))
                r->m.crc = tio__crc32_wait(job, k);
        } else if (tensor != SIZE_MAX)
            rc = tio__plan_sink_data_crc(p, s, data, n, &r->m.crc, err);
        else if (!(rc = tio__sink_write(s, data, n, err)))
            r->m.crc = tio__crc32(0, data, n);
    }
    return rc || !n ? rc : tw_descriptor(s, r, err);
}

/* Writes a record of COO tensor `tensor`'s indices as torch holds them,
 * [rank, nnz] int64 (the container's are nnz x rank), transposed through a
 * buffer a piece at a time, its CRC taken as it goes. */
static int tw_indices(tio_write_plan *p, tio_sink *s, tw_rec *r, size_t tensor,
                      tio_error *err) {
    const tio_wtensor *t = tio__plan_tensor(p, tensor);
    const uint8_t *values = NULL, *ind = NULL;
    int rc = tio__plan_data(p, tensor, &values, &ind, err);
    if (rc) return rc;
    size_t n = (size_t)t->nnz * t->rank * 8; /* the container holds them */
    r->m.local = tio__sink_pos(s);
    r->m.method = TIO_ZIP_STORED;
    r->m.crc = 0;
    r->m.usize = r->m.csize = n;
    r->m.flags = n ? TW_FLAGS : TW_FLAG_UTF8;
    if ((rc = tw_local(s, r, err)) || !n) return rc;
    uint8_t buf[8192];
    for (size_t k = 0; k < t->rank && !rc; k++) {
        for (uint64_t i = 0; i < t->nnz && !rc;) {
            size_t m = 0;
            for (; m < sizeof buf / 8 && i < t->nnz; m++, i++)
                memcpy(buf + m * 8, ind + ((size_t)i * t->rank + k) * 8, 8);
            r->m.crc = tio__crc32(r->m.crc, buf, m * 8);
            rc = tio__sink_write(s, buf, m * 8, err);
        }
    }
    return rc ? rc : tw_descriptor(s, r, err);
}

static char *tw_join(const char *a, const char *b, const char *c) {
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
    char *s = malloc(la + lb + lc + 1);
    if (s) {
        memcpy(s, a, la);
        memcpy(s + la, b, lb);
        memcpy(s + la + lb, c, lc + 1);
    }
    return s;
}

static int tw_storage_cmp(const void *a, const void *b) {
    return strcmp(((const tw_storage *)a)->key, ((const tw_storage *)b)->key);
}

int tio__torch_write(tio_write_plan *p, tio_sink *s, tio_error *err) {
    /* the plan ran tio__torch_check */
    size_t n = tio__plan_count(p);
    char arch[TW_ARCHIVE_MAX + 1];
    int rc = tw_archive(p, arch, sizeof arch, err);
    if (rc) return rc;
    tw_storage *sts = calloc(n ? 2 * n : 1, sizeof *sts); /* two per COO tensor */
    tw_storage **of = calloc(n ? n : 1, sizeof *of);
    tw_rec *recs = calloc(2 * n + 2, sizeof *recs); /* data.pkl, the storages, version */
    tio_pkw w;
    memset(&w, 0, sizeof w);
    size_t nst = 0, nrec = 0;
    if (!sts || !of || !recs) rc = tio__nomem(err, TW);
    /* storage keys in the order the pickler meets them ("0", "1", …);
     * an alias shares its target's */
    for (size_t i = 0; i < n && !rc; i++) {
        size_t a = tw_alias(p, i);
        if (a != SIZE_MAX) {
            of[i] = of[a];
            continue;
        }
        of[i] = &sts[nst];
        int coo = tio__plan_tensor(p, i)->layout == TIO_LAYOUT_COO;
        for (int k = 0; k <= coo; k++) { /* a COO tensor: its indices, then its values */
            tw_storage *st = &sts[nst];
            st->tensor = i;
            st->indices = coo && k == 0;
            const char *d = tio__u64_dec(st->key, (uint64_t)nst);
            memmove(st->key, d, strlen(d) + 1);
            nst++;
        }
    }
    if (!rc) rc = tw_pickle(p, of, &w, err);
    if (!rc) {
        recs[nrec].name = tw_join(arch, "/data.pkl", "");
        rc = recs[nrec].name ? tw_record(p, s, &recs[nrec], SIZE_MAX, w.b.p, w.b.len, NULL, 0, err)
                             : tio__nomem(err, TW);
        nrec++;
    }
    free(w.b.p);
    /* the storages in the order of their keys as strings (torch.save sorts
     * them: "10" before "2"); `of` points into sts, so sort a copy */
    tw_storage *sorted = rc ? NULL : malloc((nst ? nst : 1) * sizeof *sorted);
    if (!rc && !sorted) rc = tio__nomem(err, TW);
    if (!rc) {
        memcpy(sorted, sts, nst * sizeof *sorted);
        qsort(sorted, nst, sizeof *sorted, tw_storage_cmp);
    }
    /* the CRCs of the storages written as held by a thread of their own,
     * beside the writes, when there is enough of them that they cost
     * something (as the .npz writer does; docs/performance.md); a storage
     * that is converted takes its CRC as it is written */
    const uint8_t **views = rc ? NULL : calloc(nst ? nst : 1, sizeof *views);
    size_t *sizes = rc ? NULL : calloc(nst ? nst : 1, sizeof *sizes);
    tio_crc_job *job = NULL;
    if (!rc && (!views || !sizes)) rc = tio__nomem(err, TW);
    uint64_t viewed = 0;
    for (size_t k = 0; k < nst && !rc; k++) {
        if (sorted[k].indices) continue; /* written by tw_indices, its CRC as it goes */
        sizes[k] = tio__plan_tensor(p, sorted[k].tensor)->nbytes;
        views[k] = tio__plan_view(p, sorted[k].tensor);
        if (views[k]) viewed += sizes[k];
    }
    if (!rc && viewed >= TIO__CRC_JOB_MIN)
        job = tio__plan_crc_start(p, views, sizes, nst); /* NULL: one pass */
    for (size_t k = 0; k < nst && !rc; k++) {
        recs[nrec].name = tw_join(arch, "/data/", sorted[k].key);
        if (!recs[nrec].name)
            rc = tio__nomem(err, TW);
        else if (sorted[k].indices)
            rc = tw_indices(p, s, &recs[nrec], sorted[k].tensor, err);
        else
            rc = tw_record(p, s, &recs[nrec], sorted[k].tensor, NULL, 0,
                           views[k] ? job : NULL, k, err);
        nrec++;
    }
    tio__crc32_join(job);
    free(views);
    free(sizes);
    free(sorted);
    if (!rc) {
        recs[nrec].name = tw_join(arch, "/version", "");
        rc = recs[nrec].name ? tw_record(p, s, &recs[nrec], SIZE_MAX, "3\n", 2, NULL, 0, err)
                             : tio__nomem(err, TW);
        nrec++;
    }
    uint64_t cd_at = tio__sink_pos(s);
    for (size_t k = 0; k < nrec && !rc; k++)
        rc = tio__zipw_central(s, &tw_style, &recs[k].m, recs[k].name, strlen(recs[k].name),
                               err);
    if (!rc) rc = tio__zipw_end(s, &tw_style, nrec, cd_at, err);
    for (size_t k = 0; recs && k < nrec; k++) free(recs[k].name);
    free(recs);
    free(of);
    free(sts);
    return rc;
}
