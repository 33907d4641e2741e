/* A remote file as a sparse buffer: anonymous memory the size of the file,
 * reserved but not committed, whose 64 KiB chunks are fetched by range
 * requests when first needed. Decoders read it as they read a mapping. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */
#endif
#include "source/source.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define CHUNK_SHIFT 16 /* 64 KiB: also the first request's size */
#define CHUNK ((uint64_t)1 << CHUNK_SHIFT)

struct tio_remote {
    tio_http *h;
    uint8_t *base;  /* the file's bytes: mapped (ranges) or malloc'ed (whole) */
    size_t size;
    int mapped;
    /* a bit per chunk: fetched; NULL when all are. Atomic: a fetch sets a
     * chunk's bit (release) after its bytes are written, so that other
     * threads may read fetched tensors meanwhile (acquire) */
    _Atomic uint8_t *have;
    uint64_t nchunks;
};

static int chunk_has(const tio_remote *r, uint64_t k) {
    return !r->have ||
           (atomic_load_explicit(&r->have[k >> 3], memory_order_acquire) >> (k & 7)) & 1;
}
static void chunk_set(tio_remote *r, uint64_t k) {
    atomic_fetch_or_explicit(&r->have[k >> 3], (uint8_t)(1u << (k & 7)), memory_order_release);
}

/* The chunks [k0, k1) cover bytes [off, off+len). */
static void chunk_span(const tio_remote *r, uint64_t off, uint64_t len, uint64_t *k0,
                       uint64_t *k1) {
    *k0 = off >> CHUNK_SHIFT;
    uint64_t end = off + len; /* <= size: checked by the callers */
    *k1 = len ? ((end - 1) >> CHUNK_SHIFT) + 1 : *k0;
    if (*k1 > r->nchunks) *k1 = r->nchunks;
}

int tio__remote_has(const tio_remote *r, uint64_t off, uint64_t len) {
    if (!r->have) return 1;
    if (off > r->size || len > r->size - off) return 0;
    uint64_t k0, k1;
    chunk_span(r, off, len, &k0, &k1);
    for (uint64_t k = k0; k < k1; k++)
        if (!chunk_has(r, k)) return 0;
    return 1;
}

int tio__remote_need(tio_remote *r, uint64_t off, uint64_t len, tio_error *err) {
    if (off > r->size || len > r->size - off)
        return tio__err(err, TIO_E_BOUNDS, NULL, -1, "%s: bytes %" PRIu64 "+%" PRIu64
                        " are past the end of the file (%zu bytes)", tio__http_name(r->h), off,
                        len, r->size);
    if (!r->have || !len) return TIO_OK;
    uint64_t k0, k1;
    chunk_span(r, off, len, &k0, &k1);
    uint64_t k = k0;
    while (k < k1) { /* each run of missing chunks in one request */
        if (chunk_has(r, k)) {
            k++;
            continue;
        }
        uint64_t e = k;
        while (e < k1 && !chunk_has(r, e)) e++;
        uint64_t from = k << CHUNK_SHIFT, to = e << CHUNK_SHIFT;
        if (to > r->size) to = r->size;
        int rc = tio__http_range(r->h, from, to - from, r->base + from, err);
        if (rc) return rc;
        for (; k < e; k++) chunk_set(r, k);
    }
    return TIO_OK;
}

uint64_t tio__remote_received(const tio_remote *r) { return tio__http_received(r->h); }

void tio__remote_free(tio_remote *r) {
    if (!r) return;
    if (r->mapped)
        munmap(r->base, r->size);
    else
        free(r->base);
    free((void *)r->have);
    tio__http_free(r->h);
    free(r);
}

int tio__remote_open(const char *url, const tio_limits *limits, tio_remote **out,
                     const uint8_t **base, size_t *size, size_t *have, tio_error *err) {
    static const uint8_t empty[1];
    *out = NULL;
    tio_remote *r = calloc(1, sizeof *r);
    if (!r) return tio__nomem(err, NULL);
    int rc = tio__http_new(url, limits, &r->h, err);
    uint8_t *first = NULL;
    uint64_t got = 0;
    if (rc == TIO_OK) rc = tio__http_first(r->h, CHUNK, &first, &got, err);
    uint64_t total = rc == TIO_OK ? tio__http_size(r->h) : 0;
    if (rc == TIO_OK && total > SIZE_MAX)
        rc = tio__err(err, TIO_E_LIMIT, NULL, -1, "%s: the file is too large to address",
                      tio__http_name(r->h));
    if (rc) {
        free(first);
        tio__remote_free(r);
        return rc;
    }
    r->size = (size_t)total;
    if (!tio__http_ranges(r->h) || total == 0 || got == total) {
        r->base = first; /* the whole file came with the first answer */
    } else {
        void *m = mmap(NULL, r->size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        r->nchunks = (total + CHUNK - 1) >> CHUNK_SHIFT;
        r->have = calloc((size_t)((r->nchunks + 7) / 8), 1);
        if (m == MAP_FAILED || !r->have) {
            if (m != MAP_FAILED) munmap(m, r->size);
            free(first);
            tio__remote_free(r);
            return tio__err(err, TIO_E_NOMEM, NULL, -1, "%s: cannot reserve %" PRIu64
                            " bytes of address space for the file", url, total);
        }
        r->base = m;
        r->mapped = 1;
        memcpy(r->base, first, (size_t)got);
        free(first);
        for (uint64_t k = 0; (k + 1) << CHUNK_SHIFT <= got; k++) chunk_set(r, k);
    }
    *out = r;
    *base = r->base ? r->base : empty;
    *size = r->size;
    *have = (size_t)got;
    return TIO_OK;
}

typedef struct span {
    uint64_t off, len;
} span;

static int span_cmp(const void *a, const void *b) {
    uint64_t x = ((const span *)a)->off, y = ((const span *)b)->off;
    return x < y ? -1 : x > y;
}

/* The bytes a strided view reads from its base: one element past the last
 * one it reaches (strides >= 0, checked against the storage when the view
 * was made; an overflow here, which that check excludes, takes the rest of
 * the buffer). */
static uint64_t strided_extent(const tio_tensor *t, uint64_t room) {
    uint64_t last = 0, term = 0;
    for (size_t d = 0; d < t->rank; d++) {
        if (t->shape[d] == 0) return 0;
        if (tio__mul64_ovf((uint64_t)(t->shape[d] - 1), (uint64_t)t->strided->stride[d], &term) ||
            tio__add64_ovf(last, term, &last))
            return room;
    }
    uint64_t es = tio_dtype_size(t->dtype), n = 0;
    if (tio__add64_ovf(last, 1, &n) || tio__mul64_ovf(n, es, &n) || n > room) return room;
    return n;
}

/* The ranges of r's buffer t views (its data, or a strided view's storage
 * from its base; its COO indices); a copy made at open (owned) holds its
 * bytes already. */
static size_t tensor_spans(const tio_remote *r, const tio_tensor *t, span out[2]) {
    const uint8_t *ptrs[2] = {t->strided ? t->strided->base : t->data, t->indices};
    uint64_t lens[2] = {t->nbytes, t->indices ? t->nnz * t->rank * 8 : 0};
    size_t n = 0;
    for (int k = 0; k < 2; k++) {
        if (!ptrs[k] || !lens[k] || ptrs[k] < r->base || ptrs[k] >= r->base + r->size) continue;
        uint64_t off = (uint64_t)(ptrs[k] - r->base);
        if (k == 0 && t->strided) lens[k] = strided_extent(t, r->size - off);
        if (lens[k]) out[n++] = (span){off, lens[k]};
    }
    return n;
}

int tio__tensor_fetched(const tio_tensor *t) {
    const tio_remote *r = t->owner ? t->owner->remote : NULL;
    if (!r || !r->have) return 1;
    span s[2];
    size_t n = tensor_spans(r, t, s);
    for (size_t k = 0; k < n; k++)
        if (!tio__remote_has(r, s[k].off, s[k].len)) return 0;
    return 1;
}

int tio__remote_fetch(tio_container *c, const tio_tensor *t, tio_error *err) {
    tio_remote *r = c->remote;
    if (!r || !r->have) return TIO_OK;
    size_t count = t ? 1 : c->count;
    span *s = count ? malloc(2 * count * sizeof *s) : NULL;
    if (count && !s) return tio__nomem(err, NULL);
    size_t n = 0;
    for (size_t i = 0; i < count; i++) n += tensor_spans(r, t ? t : c->tensors[i], s + n);
    if (n) qsort(s, n, sizeof *s, span_cmp);
    int rc = TIO_OK;
    for (size_t i = 0; i < n && rc == TIO_OK;) {
        uint64_t off = s[i].off, end = off + s[i].len;
        for (i++; i < n && s[i].off <= end; i++)
            if (s[i].off + s[i].len > end) end = s[i].off + s[i].len;
        rc = tio__remote_need(r, off, end - off, err);
    }
    free(s);
    return rc;
}
