/* Containers: ordered tensors, metadata, validation findings, the source. */
#include "internal.h"
#include "source/source.h"
#include "core/object.h"
#include "quant/quant.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* A sanity bound for tensors built through the API (decoders use tio_limits). */
#define API_MAX_RANK 4096u

tio_container *tio_container_new(void) {
    tio_container *c = calloc(1, sizeof *c);
    if (c) {
        atomic_init(&c->refs, 1);
        c->limits = tio__limits_resolve(NULL);
    }
    return c;
}

void tio__container_ref(const tio_container *c) {
    /* The hold count is not part of the container's observable state. */
    atomic_fetch_add_explicit(&((tio_container *)(uintptr_t)c)->refs, 1,
                              memory_order_relaxed);
}

/* ------------------------------------------------- the tensors' memory
 *
 * Tensor structs come from slabs of 4, 8, 16, 32, then 64 (the last slab of a
 * large container wastes at most 63 slots, a small one little); names and
 * shapes of rank > 4 are packed into chunks of up to 4 KiB (a longer one
 * gets a chunk of its own). Nothing is freed before the container is. */
struct tio_slab {
    struct tio_slab *next;
    size_t used, cap;
    _Alignas(max_align_t) unsigned char mem[];
};

#define SLAB_MAX 64u
#define CHUNK_MAX 4096u

static tio_tensor *slab_take(tio_container *c) {
    struct tio_slab *s = c->slabs;
    if (!s || s->used == s->cap) {
        size_t cap = s ? (s->cap < SLAB_MAX ? s->cap * 2 : SLAB_MAX) : 4;
        s = malloc(sizeof *s + cap * sizeof(tio_tensor));
        if (!s) return NULL;
        s->used = 0;
        s->cap = cap;
        s->next = c->slabs;
        c->slabs = s;
    }
    tio_tensor *t = (tio_tensor *)(void *)(s->mem + s->used++ * sizeof(tio_tensor));
    memset(t, 0, sizeof *t);
    return t;
}

/* Gives back the slot slab_take returned last. */
static void slab_untake(tio_container *c) { c->slabs->used--; }

/* n bytes aligned to 8 from the chunks. */
static void *chunk_alloc(tio_container *c, size_t n) {
    n = (n + 7) & ~(size_t)7;
    struct tio_slab *s = c->chunks;
    if (!s || s->cap - s->used < n) {
        size_t cap = s ? (s->cap < CHUNK_MAX ? s->cap * 2 : CHUNK_MAX) : 256;
        if (n > cap / 2) cap = n; /* its own chunk: the current one goes on */
        struct tio_slab *ns = malloc(sizeof *ns + cap);
        if (!ns) return NULL;
        ns->used = 0;
        ns->cap = cap;
        if (cap == n && s) { /* behind the current chunk, which keeps filling */
            ns->next = s->next;
            s->next = ns;
        } else {
            ns->next = s;
            c->chunks = ns;
        }
        s = ns;
    }
    void *p = s->mem + s->used;
    s->used += n;
    return p;
}

void *tio__container_chunk(tio_container *c, size_t n) { return chunk_alloc(c, n); }

static void slabs_free(struct tio_slab *s) {
    while (s) {
        struct tio_slab *next = s->next;
        free(s);
        s = next;
    }
}

const tio_kv *tio__tensor_meta_view(const tio_tensor *t) {
    static const tio_kv none;
    return t->meta ? t->meta : &none;
}

tio_kv *tio__tensor_meta(tio_tensor *t) {
    if (!t->meta) t->meta = calloc(1, sizeof *t->meta);
    return t->meta;
}

/* What a tensor owns besides its slot and chunk bytes. */
static void tensor_release(tio_tensor *t) {
    free(atomic_load(&t->aligned_copy));
    free(t->owned_data);
    free(t->owned_indices);
    if (t->meta) {
        tio__kv_free(t->meta);
        free(t->meta);
    }
}

void tio_container_free(tio_container *c) {
    if (!c) return;
    if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1) return;
    if (c->native_free) c->native_free(c->native);
    for (size_t i = 0; i < c->count; i++) tensor_release(c->tensors[i]);
    free(c->tensors);
    tio__names_free(c);
    slabs_free(c->slabs);
    slabs_free(c->chunks);
    tio__kv_free(&c->meta);
    tio__kv_free(&c->meta_types);
    tio__kv_free(&c->props);
    if (c->graph) c->graph_free(c->graph);
    tio__objtree_free(c->objects);
    tio__objlater_free(c->objects_later);
    free(c->warnings);
    if (c->map) munmap(c->map, c->map_size);
    free(c->map_path);
    free(c->owned_buf);
    tio__remote_free(c->remote);
    if (c->backing_free) c->backing_free(c->backing);
    for (size_t k = 0; k < c->nparts; k++) tio_container_free((tio_container *)(uintptr_t)c->parts[k]);
    free(c->parts);
    void (*release)(void *) = c->release_fn;
    void *ctx = c->release_ctx;
    free(c);
    if (release) release(ctx);
}

int tio__container_add_part(tio_container *c, const tio_container *part, tio_error *err) {
    if (c->nparts == c->parts_cap) {
        size_t cap = c->parts_cap ? 2 * c->parts_cap : 4;
        const tio_container **p =
            cap <= SIZE_MAX / sizeof *p ? realloc(c->parts, cap * sizeof *p) : NULL;
        if (!p) return tio__nomem(err, NULL);
        c->parts = p;
        c->parts_cap = cap;
    }
    c->parts[c->nparts++] = part;
    return TIO_OK;
}

/* A set of containers by address: open addressing in a table of a power of
 * two slots, at most half full. */
typedef struct ptr_set {
    const tio_container **slot;
    size_t cap, count;
} ptr_set;

static size_t ptr_hash(const tio_container *p, size_t cap) {
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15u;
    return (size_t)(h >> 32) & (cap - 1);
}

/* 1 when p was added, 0 when it was there, -1 out of memory. */
static int ptr_set_add(ptr_set *s, const tio_container *p) {
    if (2 * (s->count + 1) > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        const tio_container **t = cap <= SIZE_MAX / 2 / sizeof *t ? calloc(cap, sizeof *t) : NULL;
        if (!t) return -1;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->slot[i]) continue;
            size_t h = ptr_hash(s->slot[i], cap);
            while (t[h]) h = (h + 1) & (cap - 1);
            t[h] = s->slot[i];
        }
        free(s->slot);
        s->slot = t;
        s->cap = cap;
    }
    size_t h = ptr_hash(p, s->cap);
    for (; s->slot[h]; h = (h + 1) & (s->cap - 1))
        if (s->slot[h] == p) return 0;
    s->slot[h] = p;
    s->count++;
    return 1;
}

const tio_container **tio__container_reach(const tio_container *c, size_t *n) {
    /* breadth first, each container once: out[0..done) have been looked
     * into, out[done..k) are still to be */
    ptr_set seen = {NULL, 0, 0};
    size_t k = 0, cap = 8;
    const tio_container **out = malloc(cap * sizeof *out);
    bool ok = out && ptr_set_add(&seen, c) == 1;
    if (ok) out[k++] = c;
    for (size_t done = 0; ok && done < k; done++) {
        const tio_container *a = out[done];
        for (size_t j = 0; ok && j < a->nparts; j++) {
            int added = ptr_set_add(&seen, a->parts[j]);
            if (added <= 0) {
                ok = added == 0;
                continue;
            }
            if (k == cap) {
                const tio_container **q =
                    cap <= SIZE_MAX / 2 / sizeof *q ? realloc(out, 2 * cap * sizeof *q) : NULL;
                ok = q != NULL;
                if (!ok) break;
                out = q;
                cap *= 2;
            }
            out[k++] = a->parts[j];
        }
    }
    free(seen.slot);
    if (!ok) {
        free(out);
        return NULL;
    }
    *n = k;
    return out;
}

int tio_container_hold(tio_container *c, const tio_container *src, tio_error *err) {
    if (!c || !src) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL argument");
    size_t n;
    const tio_container **r = tio__container_reach(src, &n);
    if (!r) return tio__nomem(err, NULL);
    bool cycle = false;
    for (size_t i = 0; i < n && !cycle; i++) cycle = r[i] == c;
    free(r);
    if (cycle)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "the container to hold holds this one (it would never be released)");
    tio__container_ref(src);
    int rc = tio__container_add_part(c, src, err);
    if (rc) tio_container_free((tio_container *)(uintptr_t)src);
    return rc;
}

int tio_container_on_release(tio_container *c, void (*fn)(void *ctx), void *ctx,
                             tio_error *err) {
    if (!c || !fn) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL argument");
    if (c->release_fn)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "the container already has a release function");
    c->release_fn = fn;
    c->release_ctx = ctx;
    return TIO_OK;
}

size_t tio_container_count(const tio_container *c) { return c ? c->count : 0; }

tio_tensor *tio_container_tensor(const tio_container *c, size_t index) {
    if (!c || index >= c->count) return NULL;
    return c->tensors[index];
}

const char *tio_container_format(const tio_container *c) { return c ? c->format : NULL; }
uint64_t tio_container_source_size(const tio_container *c) { return c ? c->source_size : 0; }

void tio_container_get_limits(const tio_container *c, tio_limits *out) {
    if (!out) return;
    *out = c ? c->limits : tio__limits_resolve(NULL);
}

int tio_container_set_limits(tio_container *c, const tio_limits *limits, tio_error *err) {
    if (!c) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "container is NULL");
    c->limits = tio__limits_resolve(limits);
    return TIO_OK;
}

size_t tio_container_meta_count(const tio_container *c) { return c ? c->meta.count : 0; }

int tio_container_meta_at(const tio_container *c, size_t i, const char **key,
                          const char **value) {
    return tio_container_meta_at_n(c, i, key, NULL, value, NULL);
}

int tio_container_meta_at_n(const tio_container *c, size_t i, const char **key,
                            size_t *key_len, const char **value, size_t *value_len) {
    if (!c || i >= c->meta.count) return TIO_E_NOT_FOUND;
    if (key) *key = c->meta.keys[i];
    if (key_len) *key_len = c->meta.klens[i];
    if (value) *value = c->meta.values[i];
    if (value_len) *value_len = c->meta.vlens[i];
    return TIO_OK;
}

const char *tio_container_meta_get(const tio_container *c, const char *key) {
    return c ? tio__kv_get(&c->meta, key) : NULL;
}

const char *tio_container_meta_get_n(const tio_container *c, const char *key, size_t key_len,
                                     size_t *value_len) {
    return c ? tio__kv_get_n(&c->meta, key, key_len, value_len) : NULL;
}

int tio_container_meta_set_n(tio_container *c, const char *key, size_t key_len,
                             const char *value, size_t value_len, tio_error *err) {
    if (!c) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "container is NULL");
    int rc = tio__kv_set_n(&c->meta, key, key_len, value, value_len, err);
    if (rc == TIO_OK && tio__kv_get_n(&c->meta_types, key, key_len, NULL))
        rc = tio__kv_set_n(&c->meta_types, key, key_len, "", 0, err); /* a plain string now */
    return rc;
}

int tio_container_meta_set(tio_container *c, const char *key, const char *value,
                           tio_error *err) {
    if (!key || !value)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "metadata key and value must not be NULL");
    return tio_container_meta_set_n(c, key, strlen(key), value, strlen(value), err);
}

const char *tio_container_meta_type_n(const tio_container *c, const char *key, size_t key_len) {
    const char *t = c ? tio__kv_get_n(&c->meta_types, key, key_len, NULL) : NULL;
    return t && t[0] ? t : NULL;
}

const char *tio__meta_type(const tio_container *c, const char *key) {
    return key ? tio_container_meta_type_n(c, key, strlen(key)) : NULL;
}

const char *tio_container_meta_type(const tio_container *c, const char *key) {
    return tio__meta_type(c, key);
}

static const char *const scalar_types[] = {"uint8",  "int8",    "uint16",  "int16", "uint32",
                                           "int32",  "uint64",  "int64",   "float32",
                                           "float64", "bool",   "string"};

bool tio__meta_type_ok(const char *type) {
    if (!type) return false;
    size_t depth = 0;
    while (strncmp(type, "array[", 6) == 0) {
        type += 6;
        if (++depth > TIO_MAX_DEPTH_CAP) return false; /* writers recurse per level */
    }
    size_t n = strlen(type);
    if (n < depth) return false;
    for (size_t i = 0; i < depth; i++)
        if (type[n - 1 - i] != ']') return false;
    n -= depth;
    for (size_t i = 0; i < sizeof scalar_types / sizeof scalar_types[0]; i++)
        if (strlen(scalar_types[i]) == n && memcmp(scalar_types[i], type, n) == 0) return true;
    return false;
}

int tio_container_meta_set_typed_n(tio_container *c, const char *key, size_t key_len,
                                   const char *value, size_t value_len, const char *type,
                                   tio_error *err) {
    if (!c) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "container is NULL");
    if (!tio__meta_type_ok(type))
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "'%.64s' is not a metadata type (expected uint8 … float64, bool, "
                        "string or array[T])",
                        type ? type : "(null)");
    int rc = tio__kv_set_n(&c->meta, key, key_len, value, value_len, err);
    if (rc == TIO_OK) rc = tio__kv_set_n(&c->meta_types, key, key_len, type, strlen(type), err);
    return rc;
}

int tio_container_meta_set_typed(tio_container *c, const char *key, const char *value,
                                 const char *type, tio_error *err) {
    if (!key || !value)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "metadata key and value must not be NULL");
    return tio_container_meta_set_typed_n(c, key, strlen(key), value, strlen(value), type, err);
}

int tio__meta_append_typed_n(tio_container *c, const char *key, size_t key_len,
                             const char *value, size_t value_len, const char *type,
                             tio_error *err) {
    int rc = tio__kv_append_n(&c->meta, key, key_len, value, value_len, err);
    if (rc == TIO_OK) rc = tio__kv_append_n(&c->meta_types, key, key_len, type, strlen(type), err);
    return rc;
}

int tio__meta_append_typed(tio_container *c, const char *key, const char *value,
                           const char *type, tio_error *err) {
    return tio__meta_append_typed_n(c, key, strlen(key), value, strlen(value), type, err);
}

size_t tio_container_prop_count(const tio_container *c) { return c ? c->props.count : 0; }

int tio_container_prop_at(const tio_container *c, size_t i, const char **key,
                          const char **value) {
    if (!c || i >= c->props.count) return TIO_E_NOT_FOUND;
    if (key) *key = c->props.keys[i];
    if (value) *value = c->props.values[i];
    return TIO_OK;
}

const char *tio_container_prop_get(const tio_container *c, const char *key) {
    return c ? tio__kv_get(&c->props, key) : NULL;
}

size_t tio_container_warning_count(const tio_container *c) {
    return c ? c->warning_count : 0;
}

const tio_error *tio_container_warning(const tio_container *c, size_t i) {
    if (!c || i >= c->warning_count) return NULL;
    return &c->warnings[i];
}

int tio__warn(tio_read_ctx *ctx, const char *format, int64_t offset, tio_error *err,
              const char *fmt, ...) {
    tio_error w;
    va_list ap;
    va_start(ap, fmt);
    tio__verr(&w, TIO_E_INVALID, format, offset, fmt, ap);
    va_end(ap);
    if (ctx->flags & TIO_OPEN_STRICT) {
        if (err) *err = w;
        return TIO_E_INVALID;
    }
    tio_container *c = ctx->c;
    if (c->warning_count == c->warning_cap) {
        /* Findings are bounded like tensors: never more than the input justifies
         * (4096, and their array at most a quarter of the input + 16 KiB). */
        if (c->warning_cap >= 4096 ||
            (uint64_t)c->warning_cap * sizeof *c->warnings >= ctx->size / 8 + (8u << 10))
            return TIO_OK;
        size_t ncap = c->warning_cap ? c->warning_cap * 2 : 4;
        tio_error *nw = realloc(c->warnings, ncap * sizeof *nw);
        if (!nw) return tio__nomem(err, format);
        c->warnings = nw;
        c->warning_cap = ncap;
    }
    c->warnings[c->warning_count++] = w;
    return TIO_OK;
}

int tio__shape_size(const int64_t *shape, size_t rank, size_t elem_size, uint64_t *numel,
                    size_t *nbytes, const char *format, int64_t offset, tio_error *err) {
    uint64_t n = 1;
    for (size_t i = 0; i < rank; i++) {
        if (shape[i] < 0)
            return tio__err(err, TIO_E_CORRUPT, format, offset,
                            "dim %zu is %lld (expected a size >= 0)", i, (long long)shape[i]);
        if (tio__mul64_ovf(n, (uint64_t)shape[i], &n) || n > (uint64_t)INT64_MAX)
            return tio__err(err, TIO_E_OVERFLOW, format, offset,
                            "the element count of the shape overflows int64 at dim %zu", i);
    }
    uint64_t b;
    if (tio__mul64_ovf(n, elem_size, &b) || b > (uint64_t)INT64_MAX || b > SIZE_MAX)
        return tio__err(err, TIO_E_OVERFLOW, format, offset,
                        "the byte size of the shape (%llu elements of %zu bytes) overflows",
                        (unsigned long long)n, elem_size);
    if (numel) *numel = n;
    if (nbytes) *nbytes = (size_t)b;
    return TIO_OK;
}


/* Shared by tio_container_add (copy or borrow) and decoders (views). */
static int add_tensor(tio_container *c, const tio_tensor_desc *d, tio_quant quant, int copy,
                      int64_t source_offset, const char *format, tio_error *err) {
    int64_t off = source_offset;
    if (!c || !d) return tio__err(err, TIO_E_ARGUMENT, format, -1, "container or description is NULL");
    bool str = d->dtype == TIO_STRING;
    size_t esize = str ? 1 : tio_dtype_size(d->dtype); /* strings: sized below */
    if (esize == 0)
        return tio__err(err, TIO_E_DTYPE, format, off, "dtype %d is not a tio_dtype", (int)d->dtype);
    if (str && d->layout != TIO_LAYOUT_DENSE)
        return tio__err(err, TIO_E_ARGUMENT, format, off,
                        "a string tensor is dense (not COO nor quantized)");
    if (d->layout != TIO_LAYOUT_DENSE && d->layout != TIO_LAYOUT_COO &&
        d->layout != TIO_LAYOUT_QUANT)
        return tio__err(err, TIO_E_ARGUMENT, format, off, "layout %d is not a tio_layout", (int)d->layout);
    const tio_quant_info *qi = NULL;
    if (d->layout == TIO_LAYOUT_QUANT) {
        qi = tio__quant_info((int)quant);
        if (!qi)
            return tio__err(err, TIO_E_DTYPE, format, off, "quant type %d is not a tio_quant",
                            (int)quant);
        if (d->dtype != TIO_FLOAT32)
            return tio__err(err, TIO_E_ARGUMENT, format, off,
                            "a quantized tensor's dtype is float32 (found %s)",
                            tio_dtype_name(d->dtype));
    } else if (quant != TIO_QUANT_NONE) {
        return tio__err(err, TIO_E_ARGUMENT, format, off, "quant type given for a %s tensor",
                        d->layout == TIO_LAYOUT_COO ? "COO" : "dense");
    }
    if (d->rank > API_MAX_RANK)
        return tio__err(err, TIO_E_LIMIT, format, off, "rank %zu exceeds %u", d->rank, API_MAX_RANK);
    if (d->rank > 0 && !d->shape)
        return tio__err(err, TIO_E_ARGUMENT, format, off, "shape is NULL for rank %zu", d->rank);
    uint64_t numel;
    size_t dense_bytes;
    int rc = tio__shape_size(d->shape, d->rank, esize, &numel, &dense_bytes, format, off, err);
    if (rc) return rc;
    size_t expect = dense_bytes, ibytes = 0;
    if (d->layout == TIO_LAYOUT_COO) {
        uint64_t vb, ib;
        if (tio__mul64_ovf(d->nnz, esize, &vb) || vb > SIZE_MAX ||
            tio__mul64_ovf(d->nnz, (uint64_t)d->rank, &ib) || tio__mul64_ovf(ib, 8, &ib) ||
            ib > SIZE_MAX)
            return tio__err(err, TIO_E_OVERFLOW, format, off, "nnz %llu overflows the sizes",
                            (unsigned long long)d->nnz);
        expect = (size_t)vb;
        ibytes = (size_t)ib;
        if (ibytes && !d->indices)
            return tio__err(err, TIO_E_ARGUMENT, format, off, "COO indices are NULL");
    } else if (d->nnz || d->indices) {
        return tio__err(err, TIO_E_ARGUMENT, format, off, "nnz/indices given for a dense tensor");
    }
    if (qi) {
        int64_t last = d->rank ? d->shape[d->rank - 1] : 1;
        if (last % qi->elems != 0)
            return tio__err(err, TIO_E_CORRUPT, format, off,
                            "%s: the last dim is %lld, not a multiple of the block's %u "
                            "elements",
                            qi->name, (long long)last, (unsigned)qi->elems);
        /* numel / elems blocks of `bytes` each: no more than the dense size */
        expect = (size_t)(numel / qi->elems) * qi->bytes;
    }
    if (str) {
        rc = tio__strings_check(d->data, d->nbytes, numel, format, off, err);
        if (rc) return rc;
        expect = d->nbytes;
    }
    if (d->nbytes != expect)
        return tio__err(err, TIO_E_CORRUPT, format, off,
                        "data has %zu bytes (expected %zu for this %s and %s)", d->nbytes,
                        expect, qi ? "quant type" : "dtype",
                        d->layout == TIO_LAYOUT_COO ? "nnz" : "shape");
    if (expect && !d->data)
        return tio__err(err, TIO_E_ARGUMENT, format, off, "data is NULL");
    if (d->layout == TIO_LAYOUT_COO) {
        const uint8_t *ip = (const uint8_t *)d->indices;
        for (uint64_t i = 0; i < d->nnz; i++) {
            for (size_t k = 0; k < d->rank; k++) {
                int64_t v = (int64_t)tio__ld64(ip + (i * d->rank + k) * 8);
                if (v < 0 || v >= d->shape[k])
                    return tio__err(err, TIO_E_CORRUPT, format, off,
                                    "COO index %llu, coordinate %zu is %lld (expected 0 <= "
                                    "index < dim %lld)",
                                    (unsigned long long)i, k, (long long)v,
                                    (long long)d->shape[k]);
            }
        }
    }
    if (c->count == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 8;
        tio_tensor **nt = realloc(c->tensors, ncap * sizeof *nt);
        if (!nt) return tio__nomem(err, format);
        c->tensors = nt;
        c->cap = ncap;
    }
    tio_tensor *t = slab_take(c);
    if (!t) return tio__nomem(err, format);
    t->dtype = d->dtype;
    t->layout = d->layout;
    t->quant = quant;
    t->rank = d->rank;
    t->numel = numel;
    t->nbytes = d->nbytes;
    t->nnz = d->layout == TIO_LAYOUT_COO ? d->nnz : 0;
    t->source_offset = source_offset;
    t->owner = c;
    t->index = c->count;
    t->shape = t->shape0;
    if (d->rank > 4) {
        t->shape = chunk_alloc(c, d->rank * sizeof *t->shape);
        if (!t->shape) goto nomem;
    }
    if (d->rank) memcpy(t->shape, d->shape, d->rank * sizeof *t->shape);
    if (d->name) { /* "" is the empty name; NULL = unnamed */
        size_t n = strlen(d->name) + 1;
        t->name = chunk_alloc(c, n);
        if (!t->name) goto nomem;
        memcpy(t->name, d->name, n);
    }
    if (copy) {
        if (d->nbytes) {
            t->owned_data = malloc(d->nbytes);
            if (!t->owned_data) goto nomem;
            memcpy(t->owned_data, d->data, d->nbytes);
        }
        if (ibytes) {
            t->owned_indices = malloc(ibytes);
            if (!t->owned_indices) goto nomem;
            memcpy(t->owned_indices, d->indices, ibytes);
        }
        t->data = t->owned_data;
        t->indices = t->owned_indices;
    } else {
        t->data = (const uint8_t *)d->data;
        t->indices = (const uint8_t *)d->indices;
    }
    c->tensors[c->count++] = t;
    tio__names_added(c, t);
    return TIO_OK;
nomem:
    tensor_release(t);
    slab_untake(c);
    return tio__nomem(err, format);
}

int tio_container_add(tio_container *c, const tio_tensor_desc *desc, unsigned flags,
                      tio_tensor **out, tio_error *err) {
    if (desc && desc->layout == TIO_LAYOUT_QUANT)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "a quantized tensor is added with tio_container_add_quantized");
    int rc = add_tensor(c, desc, TIO_QUANT_NONE, !(flags & TIO_ADD_BORROW), -1, NULL, err);
    if (rc == TIO_OK && out) *out = c->tensors[c->count - 1];
    return rc;
}

int tio_container_add_quantized(tio_container *c, const tio_tensor_desc *desc,
                                tio_quant quant, unsigned flags, tio_tensor **out,
                                tio_error *err) {
    if (desc && desc->layout != TIO_LAYOUT_QUANT)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "tio_container_add_quantized: the layout must be TIO_LAYOUT_QUANT");
    int rc = add_tensor(c, desc, quant, !(flags & TIO_ADD_BORROW), -1, NULL, err);
    if (rc == TIO_OK && out) *out = c->tensors[c->count - 1];
    return rc;
}

/* Views into the source: their bytes in all may exceed the source only by
 * what a little sharing needs. Tensors that alias the same bytes (BTF offsets
 * to one record, rten constants with one data offset, tmfile tensors on one
 * buffer) would otherwise make every per-byte operation — the COO index check
 * here, hashing, converting, sending — cost the input's size times the number
 * of aliases. */
#define VIEW_SLACK (UINT64_C(64) << 10)

int tio__container_add_view(tio_container *c, const tio_tensor_desc *d,
                            int64_t source_offset, const char *format, tio_error *err) {
    return tio__container_add_quant_view(c, d, TIO_QUANT_NONE, source_offset, format, err);
}

int tio__container_add_quant_view(tio_container *c, const tio_tensor_desc *d, tio_quant q,
                                  int64_t source_offset, const char *format, tio_error *err) {
    if (c && d) {
        uint64_t ib = 0, total = 0, cap = 0;
        int over = tio__mul64_ovf(d->nnz, (uint64_t)d->rank, &ib) || tio__mul64_ovf(ib, 8, &ib) ||
                   tio__add64_ovf(c->view_bytes, d->nbytes, &total) ||
                   tio__add64_ovf(total, ib, &total) ||
                   tio__mul64_ovf(c->source_size, 2, &cap) ||
                   tio__add64_ovf(cap, VIEW_SLACK, &cap) || total > cap;
        if (over)
            return tio__err(err, TIO_E_LIMIT, format, source_offset,
                            "tensor %zu: the tensors would view more than %llu bytes of data in "
                            "all, over twice the %llu-byte input plus 64 KiB: they share their "
                            "data (expected each stored byte in one tensor)",
                            c->count, (unsigned long long)cap,
                            (unsigned long long)c->source_size);
    }
    if (d && (d->layout == TIO_LAYOUT_QUANT) != (q != TIO_QUANT_NONE))
        return tio__err(err, TIO_E_ARGUMENT, format, source_offset,
                        "a quant type goes with the quantized layout only");
    int rc = add_tensor(c, d, q, 0, source_offset, format, err);
    if (rc == TIO_OK) c->view_bytes += d->nbytes + (size_t)(d->nnz * d->rank * 8);
    return rc;
}
