/* Tensor accessors, materialisation, densification and hashing. */
#include "internal.h"

#include <stdatomic.h>
#include "quant/quant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *tio_tensor_name(const tio_tensor *t) { return t ? t->name : NULL; }
tio_dtype tio_tensor_dtype(const tio_tensor *t) { return t ? t->dtype : TIO_DTYPE_INVALID; }
tio_layout tio_tensor_layout(const tio_tensor *t) { return t ? t->layout : TIO_LAYOUT_DENSE; }
size_t tio_tensor_rank(const tio_tensor *t) { return t ? t->rank : 0; }
const int64_t *tio_tensor_shape(const tio_tensor *t) { return t ? t->shape : NULL; }
uint64_t tio_tensor_numel(const tio_tensor *t) { return t ? t->numel : 0; }
size_t tio_tensor_nbytes(const tio_tensor *t) { return t ? t->nbytes : 0; }
size_t tio_tensor_index(const tio_tensor *t) { return t ? t->index : 0; }
/* ------------------------------------------------------------ strided views */

/* Where a strided walk puts its runs: into buf (flushed to fn when full, or
 * buf is the whole destination and fn NULL); runs of at least `big` bytes
 * go to fn directly. */
typedef struct {
    uint8_t *buf;
    size_t cap, used, big;
    int (*fn)(void *ctx, const uint8_t *p, size_t n);
    void *ctx;
    size_t es, swap; /* the element size; the view's swap unit (0: none) */
} sr_out;

static int sr_flush(sr_out *o) {
    int rc = o->used && o->fn ? o->fn(o->ctx, o->buf, o->used) : 0;
    if (o->fn) o->used = 0;
    return rc;
}

/* Bytes copied into buf in whole elements (swapped there for a swapped
 * view): a swapped view's runs, and tiles (whose memory the walk reuses, so
 * fn may not keep a pointer into it as it may into the storage). */
static int sr_put_copied(sr_out *o, const uint8_t *p, size_t n) {
    while (n) {
        size_t room = o->cap - o->used;
        if (room < n && room < o->es) {
            int rc = sr_flush(o);
            if (rc) return rc;
            room = o->cap - o->used;
            if (room < o->es) return TIO_E_ARGUMENT; /* a buffer under one element */
        }
        size_t k = n <= room ? n : room - room % o->es;
        memcpy(o->buf + o->used, p, k);
        if (o->swap) tio__swap_units(o->buf + o->used, k, o->swap);
        o->used += k;
        p += k;
        n -= k;
    }
    return 0;
}

static int sr_put(sr_out *o, const uint8_t *p, size_t n) {
    if (o->swap) return sr_put_copied(o, p, n);
    if (o->fn && n >= o->big) {
        int rc = sr_flush(o);
        return rc ? rc : o->fn(o->ctx, p, n);
    }
    if (o->cap - o->used < n) {
        int rc = sr_flush(o);
        if (rc) return rc;
    }
    memcpy(o->buf + o->used, p, n);
    o->used += n;
    return 0;
}

#define SR_STACK_RANK 16u
/* A view whose innermost runs are shorter than SR_TILE_RUN bytes (a
 * transpose's single elements) and whose last-but-one dim lies closer in
 * the storage than the last (a Fortran-order array, a transposed matrix)
 * is read a tile at a time: up to SR_TILE_BYTES of output rows, column by
 * column, so that each cache line and page of the storage is read once per
 * tile rather than once per element; the column SR_TILE_AHEAD on is
 * prefetched (each column's first bytes lie on a page of their own). A
 * 16,384 x 16,384 float32 transpose to a file (an EPYC of family 26, 1 MiB
 * of L2): element by element 3.6-3.9 s; tiles of 256 KiB 1.31-1.39 s,
 * 512 KiB 1.13-1.19 s, 1 MiB 1.17-1.89 s, 4 MiB 4.3 s (the tile no longer
 * in L2), in one quarter hour; in a slower one, 512 KiB with the prefetch
 * 1.16-1.86 s (median 1.36) against 1.74-2.57 s (1.80) without, 7 paired
 * runs. Fewer than SR_TILE_ROWS_MIN rows to a tile: element by element. */
#define SR_TILE_RUN 64u
#define SR_TILE_BYTES ((size_t)512 << 10)
#define SR_TILE_ROWS_MIN 4u
#define SR_TILE_AHEAD 8u

/* A column of a tile: m elements of rb bytes, `step` apart in the source
 * and `row` apart in the tile, by offsets (no pointer is formed past the
 * last element). Inlined where rb is a constant, each copy a fixed-size move. */
static inline void sr_column(uint8_t *q, const uint8_t *p, size_t m, size_t step, size_t row,
                             size_t rb) {
    for (size_t i = 0, pi = 0, qi = 0; i < m; i++, pi += step, qi += row)
        memcpy(q + qi, p + pi, rb);
}

/* Dims a and a + 1 of t (the last two the walk counts) from element offset
 * off, in C order, `rows` rows of dim a at a time: into tile (or straight
 * into a gathering walk's destination), then out. rb: the bytes of a run. */
static int sr_tile(const tio_tensor *t, sr_out *o, size_t a, uint64_t off, size_t rb,
                   uint8_t *tile, size_t rows) {
    const tio_strided *v = t->strided;
    size_t es = o->es, na = (size_t)t->shape[a], nb = (size_t)t->shape[a + 1];
    size_t row = nb * rb, step = (size_t)v->stride[a] * es;
    uint64_t sb = (uint64_t)v->stride[a + 1];
    int direct = !tile; /* gathering, no swap: o->buf is the destination */
    for (size_t a0 = 0; a0 < na; a0 += rows) {
        size_t m = na - a0 < rows ? na - a0 : rows;
        uint8_t *dst = direct ? o->buf + o->used : tile;
        for (size_t b = 0; b < nb; b++) {
            const uint8_t *p = v->base + (off + (uint64_t)a0 * (uint64_t)v->stride[a] +
                                          (uint64_t)b * sb) * es;
            uint8_t *q = dst + b * rb;
#if defined(__GNUC__) || defined(__clang__)
            if (b + SR_TILE_AHEAD < nb) /* the column after next: another page */
                __builtin_prefetch(p + SR_TILE_AHEAD * sb * es);
#endif
            if (rb == 4) /* the common sizes: fixed-size copies */
                sr_column(q, p, m, step, row, 4);
            else if (rb == 2)
                sr_column(q, p, m, step, row, 2);
            else if (rb == 8)
                sr_column(q, p, m, step, row, 8);
            else
                sr_column(q, p, m, step, row, rb);
        }
        if (direct) {
            o->used += m * row;
            continue;
        }
        int rc = sr_put_copied(o, tile, m * row);
        if (rc) return rc;
    }
    return 0;
}

/* The runs of t in C order into o. The innermost dims the view keeps
 * contiguous (stride = the product of the sizes inside them) are one run;
 * the outer ones are counted with an odometer, the last two of them a tile
 * at a time where that pays (SR_TILE_RUN). The reader checked that every
 * element lies inside the storage. */
static int sr_walk(const tio_tensor *t, sr_out *o) {
    const tio_strided *v = t->strided;
    size_t es = tio_dtype_size(t->dtype), rank = t->rank, inner = rank;
    if (!t->numel) return 0;
    o->es = es;
    o->swap = v->swap > 1 ? v->swap : 0;
    uint64_t run = 1;
    while (inner > 0 && (t->shape[inner - 1] == 1 || (uint64_t)v->stride[inner - 1] == run)) {
        run *= (uint64_t)t->shape[inner - 1];
        inner--;
    }
    size_t rb = (size_t)run * es;
    /* tiles: rows of the output (each nb runs; <= nbytes, so it fits) */
    size_t odo = inner, rows = 0;
    uint8_t *tile = NULL;
    int tiled = 0;
    if (inner >= 2 && rb < SR_TILE_RUN && v->stride[inner - 2] < v->stride[inner - 1]) {
        size_t row = (size_t)t->shape[inner - 1] * rb;
        rows = row ? SR_TILE_BYTES / row : 0;
        if (rows > (size_t)t->shape[inner - 2]) rows = (size_t)t->shape[inner - 2];
        if (rows >= SR_TILE_ROWS_MIN) {
            tiled = 1;
            if ((o->fn || o->swap) && !(tile = malloc(rows * row))) tiled = 0; /* by element */
        }
        if (tiled) odo = inner - 2;
    }
    int64_t small[SR_STACK_RANK];
    int64_t *idx = odo <= SR_STACK_RANK ? small : calloc(odo, sizeof *idx);
    if (!idx) {
        free(tile);
        return TIO_E_NOMEM;
    }
    if (odo) memset(idx, 0, odo * sizeof *idx);
    uint64_t off = 0;
    int rc = 0, done = 0;
    while (!done) {
        rc = tiled ? sr_tile(t, o, inner - 2, off, rb, tile, rows)
                   : sr_put(o, v->base + off * es, rb);
        if (rc) break;
        done = 1; /* unless a dim moves on */
        for (size_t k = odo; k-- > 0;) {
            if (++idx[k] < t->shape[k]) {
                off += (uint64_t)v->stride[k];
                done = 0;
                break;
            }
            off -= (uint64_t)v->stride[k] * (uint64_t)(t->shape[k] - 1);
            idx[k] = 0;
        }
    }
    if (idx != small) free(idx);
    free(tile);
    return rc ? rc : sr_flush(o);
}

void tio__strided_gather(const tio_tensor *t, uint8_t *dst) {
    sr_out o = {dst, t->nbytes, 0, 0, NULL, NULL, 0, 0};
    (void)sr_walk(t, &o); /* into dst: nothing fails */
}

int tio__strided_runs(const tio_tensor *t, uint8_t *buf, size_t cap,
                      int (*fn)(void *ctx, const uint8_t *p, size_t n), void *ctx) {
    sr_out o = {buf, cap, 0, cap / 4, fn, ctx, 0, 0};
    return sr_walk(t, &o);
}

/* ------------------------------------------------------------------ access */

const void *tio_tensor_data(const tio_tensor *t) {
    if (!t || !tio__tensor_fetched(t)) return NULL;
    if (!t->unaligned && !t->strided) return t->data;
    tio_tensor *mt = (tio_tensor *)(uintptr_t)t; /* the copy is not observable state */
    uint8_t *p = atomic_load_explicit(&mt->aligned_copy, memory_order_acquire);
    if (p) return p;
    p = malloc(t->nbytes ? t->nbytes : 1);
    if (!p) return t->data; /* out of memory: the view (tio_tensor_is_aligned says so);
                             * NULL for a strided view */
    if (t->strided)
        tio__strided_gather(t, p);
    else
        memcpy(p, t->data, t->nbytes);
    uint8_t *none = NULL;
    if (!atomic_compare_exchange_strong_explicit(&mt->aligned_copy, &none, p,
                                                 memory_order_acq_rel, memory_order_acquire)) {
        free(p); /* another thread's copy won */
        return none;
    }
    return p;
}

const void *tio_tensor_bytes(const tio_tensor *t) {
    if (t && !tio__tensor_fetched(t)) return NULL;
    return t && t->strided ? tio_tensor_data(t) : t ? t->data : NULL;
}
uint64_t tio_tensor_nnz(const tio_tensor *t) { return t ? t->nnz : 0; }
const void *tio_tensor_indices(const tio_tensor *t) { return t ? t->indices : NULL; }
int64_t tio_tensor_source_offset(const tio_tensor *t) { return t ? t->source_offset : -1; }
const tio_tensor *tio_tensor_alias(const tio_tensor *t) { return t ? t->alias : NULL; }
tio_quant tio_tensor_quant(const tio_tensor *t) { return t ? t->quant : TIO_QUANT_NONE; }

int tio_tensor_is_aligned(const tio_tensor *t) {
    if (!t) return 0;
    /* blocks are read bytewise: any address will do */
    size_t a = t->layout == TIO_LAYOUT_QUANT ? 1
               : t->dtype == TIO_STRING       ? 8 /* its uint64 offsets */
                                              : tio_dtype_size(t->dtype);
    const uint8_t *d = t->data;
    if (t->unaligned || t->strided) { /* what tio_tensor_data gives: its copy, once made */
        d = atomic_load_explicit(&((tio_tensor *)(uintptr_t)t)->aligned_copy,
                                 memory_order_acquire);
        if (!d) return 1; /* it will be aligned (malloc) unless memory runs out */
    }
    if (a > 1 && ((uintptr_t)d % a) != 0) return 0;
    if (t->indices && ((uintptr_t)t->indices % 8) != 0) return 0;
    return 1;
}

int tio_tensor_materialize(tio_tensor *t, tio_error *err) {
    if (!t) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "tensor is NULL");
    if (t->strided) { /* the C-contiguous copy, owned; the view is gone */
        uint8_t *p = atomic_exchange(&t->aligned_copy, NULL);
        if (!p) {
            p = malloc(t->nbytes ? t->nbytes : 1);
            if (!p) return tio__nomem(err, NULL);
            tio__strided_gather(t, p);
        }
        free(t->owned_data); /* a strided view owns no storage (the reader's rule) */
        t->owned_data = p;
        t->data = p;
        t->strided = NULL;
    }
    if (t->data && !t->owned_data && t->nbytes) {
        uint8_t *p = atomic_exchange(&t->aligned_copy, NULL); /* a copy made already */
        if (!p) {
            p = malloc(t->nbytes);
            if (!p) return tio__nomem(err, NULL);
            memcpy(p, t->data, t->nbytes);
        }
        t->owned_data = p;
        t->data = p;
        t->unaligned = 0;
    }
    if (t->indices && !t->owned_indices) {
        size_t n = (size_t)t->nnz * t->rank * 8; /* checked when the tensor was added */
        if (n) {
            void *p = malloc(n);
            if (!p) return tio__nomem(err, NULL);
            memcpy(p, t->indices, n);
            t->owned_indices = p;
            t->indices = p;
        }
    }
    return TIO_OK;
}

/* Row-major linear position of COO entry i (indices were range-checked). */
static uint64_t coo_linear(const tio_tensor *t, uint64_t i) {
    uint64_t lin = 0;
    const uint8_t *row = t->indices + (size_t)i * t->rank * 8;
    for (size_t k = 0; k < t->rank; k++)
        lin = lin * (uint64_t)t->shape[k] + tio__ld64(row + k * 8);
    return lin;
}

int tio_tensor_densify(const tio_tensor *t, void *dst, size_t dst_size, tio_error *err) {
    if (!t || (!dst && dst_size)) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL argument");
    int frc = tio__need_fetched(t->owner, t, err);
    if (frc) return frc;
    size_t es = tio_dtype_size(t->dtype);
    size_t need = t->dtype == TIO_STRING ? t->nbytes : (size_t)t->numel * es; /* fits: checked
                                                                                when added */
    if (dst_size < need)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "destination has %zu bytes (expected %zu)", dst_size, need);
    if (t->layout == TIO_LAYOUT_DENSE) {
        if (t->strided)
            tio__strided_gather(t, dst);
        else if (need)
            memcpy(dst, t->data, need);
        return TIO_OK;
    }
    if (t->layout == TIO_LAYOUT_QUANT) {
        const tio_quant_info *qi = tio__quant_info((int)t->quant);
        if (!qi || !qi->dequantize) {
            char can[200];
            return tio__err(err, TIO_E_UNSUPPORTED, t->owner ? t->owner->format : NULL,
                            t->source_offset,
                            "tensor %zu: tensio cannot dequantize %s blocks (it dequantizes "
                            "%s)",
                            t->index, qi ? qi->name : "?",
                            tio__quant_dequantizable(can, sizeof can));
        }
        /* dst may be unaligned for floats: dequantize through a buffer */
        float buf[1024];
        size_t per = sizeof buf / sizeof buf[0] / qi->elems, nb = (size_t)t->numel / qi->elems;
        uint8_t *d = dst;
        for (size_t b = 0; b < nb; b += per) {
            size_t k = nb - b < per ? nb - b : per;
            tio__dequantize(qi, t->data + b * qi->bytes, k, buf);
            memcpy(d + b * qi->elems * 4, buf, k * qi->elems * 4);
        }
        return TIO_OK;
    }
    if (need) memset(dst, 0, need);
    uint8_t *d = dst;
    for (uint64_t i = 0; i < t->nnz; i++)
        memcpy(d + coo_linear(t, i) * es, t->data + (size_t)i * es, es);
    return TIO_OK;
}

typedef struct {
    uint64_t lin, idx;
} coo_pos;

static int cmp_pos(const void *a, const void *b) {
    const coo_pos *x = a, *y = b;
    if (x->lin != y->lin) return x->lin < y->lin ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

int tio__coo_walk(const tio_tensor *t, int (*zeros)(void *ctx, uint64_t n),
                  int (*value)(void *ctx, const uint8_t *elem), void *ctx, tio_error *err) {
    size_t es = tio_dtype_size(t->dtype);
    coo_pos *pos = NULL;
    if (t->nnz) {
        pos = malloc((size_t)t->nnz * sizeof *pos); /* nnz values are present */
        if (!pos) return tio__nomem(err, NULL);
        for (uint64_t i = 0; i < t->nnz; i++) {
            pos[i].lin = coo_linear(t, i);
            pos[i].idx = i;
        }
        qsort(pos, (size_t)t->nnz, sizeof *pos, cmp_pos);
    }
    int rc = TIO_OK;
    uint64_t next = 0;
    for (uint64_t i = 0; i < t->nnz && rc == TIO_OK; i++) {
        if (i + 1 < t->nnz && pos[i + 1].lin == pos[i].lin) continue; /* last wins */
        if (pos[i].lin > next) rc = zeros(ctx, pos[i].lin - next);
        if (rc == TIO_OK) rc = value(ctx, t->data + (size_t)pos[i].idx * es);
        next = pos[i].lin + 1;
    }
    if (rc == TIO_OK && t->numel > next) rc = zeros(ctx, t->numel - next);
    free(pos);
    return rc;
}

static const uint8_t zero_block[65536];

typedef struct {
    tio_sha256 *h;
    size_t es;
} hash_walk;

static int hash_zeros(void *ctx, uint64_t n) {
    hash_walk *w = ctx;
    n *= w->es; /* within the dense size, which fits */
    while (n) {
        size_t k = n > sizeof zero_block ? sizeof zero_block : (size_t)n;
        tio__sha256_update(w->h, zero_block, k);
        n -= k;
    }
    return TIO_OK;
}

static int hash_run(void *ctx, const uint8_t *p, size_t n) {
    tio__sha256_update(ctx, p, n);
    return 0;
}

static int hash_value(void *ctx, const uint8_t *elem) {
    hash_walk *w = ctx;
    tio__sha256_update(w->h, elem, w->es);
    return TIO_OK;
}

/* "3.75 EiB" for a message. */
static void human_bytes(uint64_t n, char *out, size_t cap) {
    static const char units[][4] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)n;
    int u = -1;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    if (u < 0)
        snprintf(out, cap, "%llu B", (unsigned long long)n);
    else
        snprintf(out, cap, "%.2f %s", v, units[u]);
}

int tio__dense_limit_err(tio_error *err, const char *format, int64_t offset,
                         const tio_tensor *t, size_t index, uint64_t dense, uint64_t limit,
                         const char *what) {
    char shape[96], label[96] = "", hd[32], hl[32];
    tio__shape_str(t->shape, t->rank, shape, sizeof shape);
    if (t->name) {
        char esc[64];
        tio__escape((const uint8_t *)t->name, strlen(t->name), esc, sizeof esc);
        snprintf(label, sizeof label, " ('%s')", esc);
    }
    human_bytes(dense, hd, sizeof hd);
    human_bytes(limit, hl, sizeof hl);
    return tio__err(err, TIO_E_LIMIT, format, offset,
                    "tensor %zu%s: %s takes %llu bytes (%s; %s %s, %llu stored values), over "
                    "max_dense_bytes %llu (%s); raise tio_limits.max_dense_bytes "
                    "(CLI: --max-dense-bytes)",
                    index, label, what, (unsigned long long)dense, hd, tio_dtype_name(t->dtype),
                    shape, (unsigned long long)t->nnz, (unsigned long long)limit, hl);
}

int tio_tensor_sha256(const tio_tensor *t, int what, uint8_t out[32], tio_error *err) {
    if (!t || !out) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL argument");
    int frc = tio__need_fetched(t->owner, t, err);
    if (frc) return frc;
    size_t es = tio_dtype_size(t->dtype);
    if (what == TIO_HASH_DENSE && t->layout == TIO_LAYOUT_COO) {
        /* The dense size is what the input claims, not what it holds. */
        uint64_t dense = t->numel * es; /* fits: checked when added */
        uint64_t limit = t->owner ? t->owner->limits.max_dense_bytes
                                  : TIO_DEFAULT_MAX_DENSE_BYTES;
        if (dense > limit)
            return tio__dense_limit_err(err, t->owner ? t->owner->format : NULL,
                                        t->source_offset, t, t->index, dense, limit,
                                        "hashing it dense");
    }
    tio_sha256 *h;
    int hrc = tio__sha256_new(&h, err);
    if (hrc) return hrc;
    if (t->strided && (what == TIO_HASH_VALUES || what == TIO_HASH_DENSE)) {
        uint8_t buf[16384]; /* element-wide runs (a transpose) hashed in blocks */
        if (tio__strided_runs(t, buf, sizeof buf, hash_run, h)) {
            uint8_t tmp[32];
            tio__sha256_final(h, tmp);
            return tio__nomem(err, NULL);
        }
    } else if (what == TIO_HASH_VALUES) {
        tio__sha256_update(h, t->data, t->nbytes);
    } else if (what == TIO_HASH_INDICES) {
        if (t->indices) tio__sha256_update(h, t->indices, (size_t)t->nnz * t->rank * 8);
    } else if (what != TIO_HASH_DENSE) {
        uint8_t tmp[32];
        tio__sha256_final(h, tmp);
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "unknown hash selector %d", what);
    } else if (t->layout != TIO_LAYOUT_COO) {
        tio__sha256_update(h, t->data, t->nbytes); /* dense, or quantized blocks */
    } else {
        /* Stream the dense bytes: entries sorted by position, zero runs
         * between them. O(nnz) memory whatever the dense size. */
        hash_walk w = {h, es};
        int rc = tio__coo_walk(t, hash_zeros, hash_value, &w, err);
        if (rc) {
            uint8_t tmp[32];
            tio__sha256_final(h, tmp);
            return rc;
        }
    }
    tio__sha256_final(h, out);
    return TIO_OK;
}

size_t tio_tensor_meta_count(const tio_tensor *t) { return t && t->meta ? t->meta->count : 0; }

int tio_tensor_meta_at(const tio_tensor *t, size_t i, const char **key, const char **value) {
    return tio_tensor_meta_at_n(t, i, key, NULL, value, NULL);
}

int tio_tensor_meta_at_n(const tio_tensor *t, size_t i, const char **key, size_t *key_len,
                         const char **value, size_t *value_len) {
    if (!t || !t->meta || i >= t->meta->count) return TIO_E_NOT_FOUND;
    if (key) *key = t->meta->keys[i];
    if (key_len) *key_len = t->meta->klens[i];
    if (value) *value = t->meta->values[i];
    if (value_len) *value_len = t->meta->vlens[i];
    return TIO_OK;
}

const char *tio_tensor_meta_get(const tio_tensor *t, const char *key) {
    return t && t->meta ? tio__kv_get(t->meta, key) : NULL;
}

const char *tio_tensor_meta_get_n(const tio_tensor *t, const char *key, size_t key_len,
                                  size_t *value_len) {
    return t && t->meta ? tio__kv_get_n(t->meta, key, key_len, value_len) : NULL;
}

int tio_tensor_meta_set_n(tio_tensor *t, const char *key, size_t key_len, const char *value,
                          size_t value_len, tio_error *err) {
    if (!t) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "tensor is NULL");
    if (!key || !value)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "metadata key and value must not be NULL");
    tio_kv *kv = tio__tensor_meta(t);
    if (!kv) return tio__nomem(err, NULL);
    return tio__kv_set_n(kv, key, key_len, value, value_len, err);
}

int tio_tensor_meta_set(tio_tensor *t, const char *key, const char *value, tio_error *err) {
    if (!key || !value)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "metadata key and value must not be NULL");
    return tio_tensor_meta_set_n(t, key, strlen(key), value, strlen(value), err);
}
