/* Ordered string key/value metadata (see tio_kv in internal.h). */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define KV_CHUNK 512u /* bytes of strings per chunk, unless one pair needs more */
#define KV_CAP0 16u   /* entries in the first array block */
#define KV_LINEAR 8u  /* at most this many keys are searched in order */

struct tio_kv_chunk {
    struct tio_kv_chunk *next;
    size_t used, cap;
    char data[];
};

/* Copies a (an bytes) then b (bn bytes) into the newest chunk, or a new one,
 * each followed by a NUL (the C-string view of both). */
static char *kv_pack(tio_kv *kv, const char *a, size_t an, const char *b, size_t bn) {
    size_t need = an + bn + 2; /* both below SIZE_MAX / 2: no overflow */
    struct tio_kv_chunk *c = kv->chunks;
    if (!c || c->cap - c->used < need) {
        size_t cap = need > KV_CHUNK ? need : KV_CHUNK;
        if (cap > SIZE_MAX - sizeof *c) return NULL;
        c = malloc(sizeof *c + cap);
        if (!c) return NULL;
        c->next = kv->chunks;
        c->used = 0;
        c->cap = cap;
        kv->chunks = c;
    }
    char *p = c->data + c->used;
    if (an) memcpy(p, a, an);
    p[an] = 0;
    if (bn) memcpy(p + an + 1, b, bn);
    p[an + 1 + bn] = 0;
    c->used += need;
    return p;
}

void tio__kv_free(tio_kv *kv) {
    for (size_t i = 0; i < kv->count; i++)
        if (kv->loose[i]) free(kv->values[i]);
    for (struct tio_kv_chunk *c = kv->chunks, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    free(kv->keys); /* the block holding values, lengths and loose too */
    free(kv->index);
    memset(kv, 0, sizeof *kv);
}

static int kv_is(const tio_kv *kv, size_t i, const char *key, size_t klen) {
    return kv->klens[i] == klen && memcmp(kv->keys[i], key, klen) == 0;
}

/* The index: positions + 1 (0: empty), at most half used, hashed with
 * tio__hash_bytes(seed) (the index's address). */
struct tio_kv_index {
    size_t cap; /* a power of 2 */
    uint64_t seed;
    size_t slot[];
};

/* Index of the key of klen bytes, or count. */
static size_t kv_find(const tio_kv *kv, const char *key, size_t klen) {
    const struct tio_kv_index *x = kv->index;
    if (!x) {
        for (size_t i = 0; i < kv->count; i++)
            if (kv_is(kv, i, key, klen)) return i;
        return kv->count;
    }
    for (size_t h = (size_t)tio__hash_bytes(x->seed, key, klen) & (x->cap - 1); x->slot[h];
         h = (h + 1) & (x->cap - 1)) {
        size_t i = x->slot[h] - 1;
        if (i < kv->count && kv_is(kv, i, key, klen)) return i;
    }
    return kv->count;
}

static void kv_put(struct tio_kv_index *x, const tio_kv *kv, size_t i) {
    size_t h = (size_t)tio__hash_bytes(x->seed, kv->keys[i], kv->klens[i]) & (x->cap - 1);
    while (x->slot[h]) h = (h + 1) & (x->cap - 1);
    x->slot[h] = i + 1;
}

/* Entry i (just appended) into the index: made once there are more than
 * KV_LINEAR keys, made again twice as large when half full. -1: no memory
 * (the index dropped: searched in order). */
static int kv_index(tio_kv *kv, size_t i) {
    if (kv->count <= KV_LINEAR) return 0;
    struct tio_kv_index *x = kv->index;
    if (x && 2 * kv->count <= x->cap) {
        kv_put(x, kv, i);
        return 0;
    }
    size_t cap = 32;
    while (cap < 4 * kv->count) cap *= 2; /* count <= the arrays' cap: no overflow */
    free(x);
    kv->index = x = calloc(1, sizeof *x + cap * sizeof x->slot[0]);
    if (!x) return -1;
    x->cap = cap;
    x->seed = tio__hash_seed(x);
    for (size_t k = 0; k < kv->count; k++) kv_put(x, kv, k);
    return 0;
}

const char *tio__kv_get_n(const tio_kv *kv, const char *key, size_t klen, size_t *vlen) {
    if (!key) return NULL;
    size_t i = kv_find(kv, key, klen);
    if (i == kv->count) return NULL;
    if (vlen) *vlen = kv->vlens[i];
    return kv->values[i];
}

const char *tio__kv_get(const tio_kv *kv, const char *key) {
    return key ? tio__kv_get_n(kv, key, strlen(key), NULL) : NULL;
}

/* Room for one more entry: keys, values, their lengths and loose in one
 * block. */
static int kv_grow(tio_kv *kv) {
    if (kv->count < kv->cap) return 0;
    size_t ncap = kv->cap ? kv->cap * 2 : KV_CAP0;
    size_t per = 2 * sizeof(char *) + 2 * sizeof(size_t) + 1;
    if (ncap > SIZE_MAX / per) return -1;
    char **blk = malloc(ncap * per);
    if (!blk) return -1;
    char **nv = blk + ncap;
    size_t *nkl = (size_t *)(void *)(nv + ncap), *nvl = nkl + ncap;
    unsigned char *nl = (unsigned char *)(nvl + ncap);
    if (kv->count) {
        memcpy(blk, kv->keys, kv->count * sizeof *blk);
        memcpy(nv, kv->values, kv->count * sizeof *nv);
        memcpy(nkl, kv->klens, kv->count * sizeof *nkl);
        memcpy(nvl, kv->vlens, kv->count * sizeof *nvl);
        memcpy(nl, kv->loose, kv->count);
    }
    free(kv->keys);
    kv->keys = blk;
    kv->values = nv;
    kv->klens = nkl;
    kv->vlens = nvl;
    kv->loose = nl;
    kv->cap = ncap;
    return 0;
}

int tio__kv_set_n(tio_kv *kv, const char *key, size_t klen, const char *value, size_t vlen,
                  tio_error *err) {
    if (!key || !value)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "metadata key and value must not be NULL");
    if (vlen == SIZE_MAX) return tio__nomem(err, NULL);
    size_t i = kv_find(kv, key, klen);
    if (i == kv->count) return tio__kv_append_n(kv, key, klen, value, vlen, err);
    char *old = kv->values[i];
    if (old == value && kv->vlens[i] == vlen) return TIO_OK;
    if (kv->vlens[i] >= vlen) { /* fits where the old value is */
        memmove(old, value, vlen);
        old[vlen] = 0;
        kv->vlens[i] = vlen;
        return TIO_OK;
    }
    char *v = malloc(vlen + 1);
    if (!v) return tio__nomem(err, NULL);
    memcpy(v, value, vlen);
    v[vlen] = 0;
    if (kv->loose[i]) free(old);
    kv->values[i] = v;
    kv->vlens[i] = vlen;
    kv->loose[i] = 1;
    return TIO_OK;
}

int tio__kv_set(tio_kv *kv, const char *key, const char *value, tio_error *err) {
    if (!key || !value)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "metadata key and value must not be NULL");
    return tio__kv_set_n(kv, key, strlen(key), value, strlen(value), err);
}

int tio__kv_append_n(tio_kv *kv, const char *key, size_t klen, const char *value, size_t vlen,
                     tio_error *err) {
    if (!key || !value)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "metadata key and value must not be NULL");
    if (klen > SIZE_MAX / 2 - 1 || vlen > SIZE_MAX / 2 - 1) return tio__nomem(err, NULL);
    if (kv_grow(kv)) return tio__nomem(err, NULL);
    char *p = kv_pack(kv, key, klen, value, vlen);
    if (!p) return tio__nomem(err, NULL);
    kv->keys[kv->count] = p;
    kv->values[kv->count] = p + klen + 1;
    kv->klens[kv->count] = klen;
    kv->vlens[kv->count] = vlen;
    kv->loose[kv->count] = 0;
    kv->count++;
    (void)kv_index(kv, kv->count - 1); /* without one, the keys are searched in order */
    return TIO_OK;
}

int tio__kv_append(tio_kv *kv, const char *key, const char *value, tio_error *err) {
    if (!key || !value)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "metadata key and value must not be NULL");
    return tio__kv_append_n(kv, key, strlen(key), value, strlen(value), err);
}

bool tio__kv_has_nul(const tio_kv *kv, size_t i, int value) {
    return value ? strlen(kv->values[i]) != kv->vlens[i] : strlen(kv->keys[i]) != kv->klens[i];
}
