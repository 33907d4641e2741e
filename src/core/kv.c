/* Ordered string key/value metadata (see tio_kv in internal.h). */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define KV_CHUNK 512u /* bytes of strings per chunk, unless one pair needs more */
#define KV_CAP0 16u   /* entries in the first array block */

struct tio_kv_chunk {
    struct tio_kv_chunk *next;
    size_t used, cap;
    char data[];
};

/* Copies a (an bytes) then b (bn bytes) into the newest chunk, or a new one. */
static char *kv_pack(tio_kv *kv, const char *a, size_t an, const char *b, size_t bn) {
    size_t need = an + bn; /* both are string lengths + 1: no overflow */
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
    memcpy(p, a, an);
    if (bn) memcpy(p + an, b, bn);
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
    free(kv->keys); /* the block holding values and loose too */
    memset(kv, 0, sizeof *kv);
}

const char *tio__kv_get(const tio_kv *kv, const char *key) {
    if (!key) return NULL;
    for (size_t i = 0; i < kv->count; i++)
        if (strcmp(kv->keys[i], key) == 0) return kv->values[i];
    return NULL;
}

/* Room for one more entry: keys, values and loose in one block. */
static int kv_grow(tio_kv *kv) {
    if (kv->count < kv->cap) return 0;
    size_t ncap = kv->cap ? kv->cap * 2 : KV_CAP0;
    size_t per = 2 * sizeof(char *) + 1;
    if (ncap > SIZE_MAX / per) return -1;
    char **blk = malloc(ncap * per);
    if (!blk) return -1;
    char **nv = blk + ncap;
    unsigned char *nl = (unsigned char *)(nv + ncap);
    if (kv->count) {
        memcpy(blk, kv->keys, kv->count * sizeof *blk);
        memcpy(nv, kv->values, kv->count * sizeof *nv);
        memcpy(nl, kv->loose, kv->count);
    }
    free(kv->keys);
    kv->keys = blk;
    kv->values = nv;
    kv->loose = nl;
    kv->cap = ncap;
    return 0;
}

int tio__kv_set(tio_kv *kv, const char *key, const char *value, tio_error *err) {
    if (!key || !value)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "metadata key and value must not be NULL");
    size_t vl = strlen(value) + 1;
    for (size_t i = 0; i < kv->count; i++) {
        if (strcmp(kv->keys[i], key) != 0) continue;
        char *old = kv->values[i];
        if (old == value) return TIO_OK;
        if (strlen(old) + 1 >= vl) { /* fits where the old value is */
            memmove(old, value, vl);
            return TIO_OK;
        }
        char *v = malloc(vl);
        if (!v) return tio__nomem(err, NULL);
        memcpy(v, value, vl);
        if (kv->loose[i]) free(old);
        kv->values[i] = v;
        kv->loose[i] = 1;
        return TIO_OK;
    }
    return tio__kv_append(kv, key, value, err);
}

int tio__kv_append(tio_kv *kv, const char *key, const char *value, tio_error *err) {
    if (!key || !value)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "metadata key and value must not be NULL");
    size_t vl = strlen(value) + 1;
    if (kv_grow(kv)) return tio__nomem(err, NULL);
    size_t kl = strlen(key) + 1;
    char *p = kv_pack(kv, key, kl, value, vl);
    if (!p) return tio__nomem(err, NULL);
    kv->keys[kv->count] = p;
    kv->values[kv->count] = p + kl;
    kv->loose[kv->count] = 0;
    kv->count++;
    return TIO_OK;
}
