/* Ordered string key/value metadata. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static char *dupstr(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

void tio__kv_free(tio_kv *kv) {
    for (size_t i = 0; i < kv->count; i++) {
        free(kv->keys[i]);
        free(kv->values[i]);
    }
    free(kv->keys);
    free(kv->values);
    kv->keys = kv->values = NULL;
    kv->count = kv->cap = 0;
}

const char *tio__kv_get(const tio_kv *kv, const char *key) {
    if (!key) return NULL;
    for (size_t i = 0; i < kv->count; i++)
        if (strcmp(kv->keys[i], key) == 0) return kv->values[i];
    return NULL;
}

int tio__kv_set(tio_kv *kv, const char *key, const char *value, tio_error *err) {
    if (!key || !value) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "metadata key and value must not be NULL");
    char *v = dupstr(value);
    if (!v) return tio__nomem(err, NULL);
    for (size_t i = 0; i < kv->count; i++) {
        if (strcmp(kv->keys[i], key) == 0) {
            free(kv->values[i]);
            kv->values[i] = v;
            return TIO_OK;
        }
    }
    char *k = dupstr(key);
    if (!k) {
        free(v);
        return tio__nomem(err, NULL);
    }
    if (kv->count == kv->cap) {
        size_t ncap = kv->cap ? kv->cap * 2 : 4;
        char **nk = realloc(kv->keys, ncap * sizeof *nk);
        if (nk) kv->keys = nk;
        char **nv = nk ? realloc(kv->values, ncap * sizeof *nv) : NULL;
        if (nv) kv->values = nv;
        if (!nk || !nv) {
            free(k);
            free(v);
            return tio__nomem(err, NULL);
        }
        kv->cap = ncap;
    }
    kv->keys[kv->count] = k;
    kv->values[kv->count] = v;
    kv->count++;
    return TIO_OK;
}
