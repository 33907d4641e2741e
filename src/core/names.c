/* Indexes of names: a container's tensors by name (tio_container_find) and
 * a shard's members by path (tio_shard_find), O(1) on average.
 *
 * An index's slots hold positions + 1 (0: empty), at most half of them
 * used, probed linearly from a hash seeded by the index's own address, so
 * that names chosen to collide in one process do not in another. A name
 * that appears twice keeps its first position, as a search in order finds.
 * The names themselves stay where they are: the index asks for the name at
 * a position (name_of) and never copies one.
 *
 * A container's index, and a graph's of its values (tio_graph_find_value),
 * is made by the first find of more than a few names (a reader, which may
 * share the container between threads: each builds its own and the first to
 * publish it wins, the others free theirs) and kept up to date by each add
 * after it (a writer, which has the container to itself): tio__names_lazy.
 * The hash of these and of every other table of names read from a file is
 * tio__hash_str/_bytes, below. */
#include "internal.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* At most this many names are searched in order, without an index. */
#define LINEAR_MAX 8u

struct tio__names {
    uint64_t seed;
    size_t cap;  /* a power of 2 */
    size_t used; /* names in it */
    size_t slot[];
};

uint64_t tio__hash_mix(uint64_t h) {
    h ^= h >> 29; /* the low bits choose the slot: mix the high ones in */
    h *= 0xbf58476d1ce4e5b9u;
    h ^= h >> 32;
    return h;
}

uint64_t tio__hash_seed(const void *table) {
    return (uint64_t)(uintptr_t)table * 0x9e3779b97f4a7c15u;
}

uint64_t tio__hash_bytes(uint64_t seed, const void *p, size_t n) {
    const uint8_t *b = p;
    uint64_t h = seed ^ 0xcbf29ce484222325u; /* FNV-1a, seeded */
    for (size_t k = 0; k < n; k++) h = (h ^ b[k]) * 0x100000001b3u;
    return tio__hash_mix(h);
}

uint64_t tio__hash_str(uint64_t seed, const char *s) { return tio__hash_bytes(seed, s, strlen(s)); }

static size_t name_hash(const tio__names *ix, const char *s) {
    return (size_t)tio__hash_str(ix->seed, s) & (ix->cap - 1);
}

void tio__names_put(tio__names *ix, size_t i, tio__name_fn name_of, const void *ctx) {
    const char *name = name_of(ctx, i);
    if (!name) return;
    size_t h = name_hash(ix, name);
    while (ix->slot[h]) {
        if (strcmp(name_of(ctx, ix->slot[h] - 1), name) == 0) return; /* the first */
        h = (h + 1) & (ix->cap - 1);
    }
    ix->slot[h] = i + 1;
    ix->used++;
}

tio__names *tio__names_build(size_t count, tio__name_fn name_of, const void *ctx) {
    size_t cap = 16;
    while (cap / 4 < count) { /* room for as many again */
        if (cap > (SIZE_MAX - sizeof(tio__names)) / sizeof(size_t) / 2) return NULL;
        cap *= 2;
    }
    tio__names *ix = calloc(1, sizeof *ix + cap * sizeof(size_t));
    if (!ix) return NULL;
    ix->seed = tio__hash_seed(ix);
    ix->cap = cap;
    for (size_t i = 0; i < count; i++) tio__names_put(ix, i, name_of, ctx);
    return ix;
}

int tio__names_full(const tio__names *ix) { return (ix->used + 1) * 2 > ix->cap; }

size_t tio__names_find(const tio__names *ix, const char *name, tio__name_fn name_of,
                       const void *ctx) {
    for (size_t h = name_hash(ix, name); ix->slot[h]; h = (h + 1) & (ix->cap - 1))
        if (strcmp(name_of(ctx, ix->slot[h] - 1), name) == 0) return ix->slot[h] - 1;
    return SIZE_MAX;
}

/* ------------------------------------- an index made by the first find */

size_t tio__names_lazy_find(tio__names_lazy *at, size_t count, const char *name,
                            tio__name_fn name_of, const void *ctx) {
    if (count > LINEAR_MAX) {
        tio__names *ix = atomic_load_explicit(at, memory_order_acquire);
        if (!ix) {
            tio__names *mine = tio__names_build(count, name_of, ctx), *none = NULL;
            if (mine && atomic_compare_exchange_strong_explicit(at, &none, mine,
                                                                memory_order_acq_rel,
                                                                memory_order_acquire)) {
                ix = mine;
            } else { /* out of memory (searched in order), or another thread's came first */
                free(mine);
                ix = none;
            }
        }
        if (ix) return tio__names_find(ix, name, name_of, ctx);
    }
    for (size_t i = 0; i < count; i++) {
        const char *s = name_of(ctx, i);
        if (s && strcmp(s, name) == 0) return i;
    }
    return SIZE_MAX;
}

void tio__names_lazy_added(tio__names_lazy *at, size_t i, tio__name_fn name_of,
                           const void *ctx) {
    tio__names *ix = atomic_load_explicit(at, memory_order_relaxed);
    if (!ix) return;
    if (tio__names_full(ix)) { /* the next find makes a larger one */
        atomic_store_explicit(at, NULL, memory_order_relaxed);
        free(ix);
        return;
    }
    tio__names_put(ix, i, name_of, ctx);
}

void tio__names_lazy_free(tio__names_lazy *at) {
    free(atomic_load_explicit(at, memory_order_relaxed));
    atomic_store_explicit(at, NULL, memory_order_relaxed);
}

/* ------------------------------------------------ a container's tensors */

static const char *tensor_name(const void *ctx, size_t i) {
    return ((const tio_container *)ctx)->tensors[i]->name;
}

tio_tensor *tio_container_find(const tio_container *c, const char *name) {
    if (!c || !name) return NULL;
    /* the index is not part of the container's observable state */
    size_t i = tio__names_lazy_find(&((tio_container *)(uintptr_t)c)->names, c->count, name,
                                    tensor_name, c);
    return i == SIZE_MAX ? NULL : c->tensors[i];
}

void tio__names_added(tio_container *c, const tio_tensor *t) {
    tio__names_lazy_added(&c->names, t->index, tensor_name, c);
}

void tio__names_free(tio_container *c) { tio__names_lazy_free(&c->names); }
