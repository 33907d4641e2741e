/*
 * The object tree (tio_object in tensio.h; object.h): its objects, kid
 * arrays and strings packed into blocks freed with the container, and the
 * public accessors.
 */
#include "core/object.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define OBJ_BLOCK 65536u /* bytes per block, unless one request needs more */

struct tio_objblock {
    struct tio_objblock *next;
    size_t used, cap;
    _Alignas(max_align_t) unsigned char data[];
};

void *tio__obj_alloc(tio_objtree *t, size_t n) {
    size_t need = (n + 7u) & ~(size_t)7u;
    if (need < n) return NULL;
    struct tio_objblock *b = t->blocks;
    if (!b || b->cap - b->used < need) {
        size_t cap = need > OBJ_BLOCK ? need : OBJ_BLOCK;
        if (cap > SIZE_MAX - sizeof *b) return NULL;
        b = malloc(sizeof *b + cap);
        if (!b) return NULL;
        b->used = 0;
        b->cap = cap;
        if (need > OBJ_BLOCK && t->blocks) { /* a big one: behind the block in use */
            b->next = t->blocks->next;
            t->blocks->next = b;
        } else {
            b->next = t->blocks;
            t->blocks = b;
        }
    }
    void *p = b->data + b->used;
    b->used += need;
    return p;
}

tio_object *tio__obj_new(tio_objtree *t, tio_object_kind kind, int64_t off) {
    tio_object *o = tio__obj_alloc(t, sizeof *o);
    if (!o) return NULL;
    memset(o, 0, sizeof *o);
    o->kind = (uint8_t)kind;
    o->off = off;
    o->id = t->count++;
    return o;
}

int tio__obj_set_bytes(tio_objtree *t, tio_object *o, const void *s, size_t n) {
    if (n > UINT32_MAX - 1) return TIO_E_LIMIT;
    char *p = tio__obj_alloc(t, n + 1);
    if (!p) return TIO_E_NOMEM;
    if (n) memcpy(p, s, n);
    p[n] = 0;
    o->s = p;
    o->n = (uint32_t)n;
    return TIO_OK;
}

int tio__obj_set_kids(tio_objtree *t, tio_object *o, size_t slots) {
    size_t bytes = 0;
    if (tio__mul_ovf(slots, sizeof *o->kids, &bytes)) return TIO_E_LIMIT;
    o->kids = slots ? tio__obj_alloc(t, bytes) : NULL;
    return slots && !o->kids ? TIO_E_NOMEM : TIO_OK;
}

void tio__objtree_free(tio_objtree *t) {
    if (!t) return;
    for (struct tio_objblock *b = t->blocks, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(t);
}

tio_objtree *tio__container_objects(tio_container *c) {
    if (!c->objects) c->objects = calloc(1, sizeof *c->objects);
    return c->objects;
}

struct tio_objlater {
    pthread_mutex_t mu;
    int done;
    int (*build)(void *state, tio_objtree *t);
    void (*release)(void *state);
    void *state;
};

int tio__container_objects_later(tio_container *c, int (*build)(void *state, tio_objtree *t),
                                 void (*release)(void *state), void *state) {
    if (c->objects || c->objects_later) { /* one tree, made one way */
        release(state);
        return TIO_E_ARGUMENT;
    }
    struct tio_objlater *l = calloc(1, sizeof *l);
    if (!l || pthread_mutex_init(&l->mu, NULL)) {
        free(l);
        release(state);
        return TIO_E_NOMEM;
    }
    l->build = build;
    l->release = release;
    l->state = state;
    c->objects_later = l;
    return TIO_OK;
}

void tio__objlater_free(struct tio_objlater *l) {
    if (!l) return;
    if (l->state) l->release(l->state);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

/* Makes the tree if it is made on first use and not yet. The container is
 * const to its readers: this is the one change a reader makes, once. */
static const tio_objtree *obj_settled(const tio_container *c) {
    struct tio_objlater *l = c->objects_later;
    if (!l) return c->objects;
    pthread_mutex_lock(&l->mu);
    if (!l->done) {
        tio_container *mc = (tio_container *)(uintptr_t)c;
        tio_objtree *t = tio__container_objects(mc);
        if (t && l->build(l->state, t) != TIO_OK) { /* only memory runs short */
            tio__objtree_free(t);
            mc->objects = NULL;
        }
        l->release(l->state);
        l->state = NULL;
        l->done = 1;
    }
    pthread_mutex_unlock(&l->mu);
    return c->objects;
}

/* ------------------------------------------------------------ the API */

const tio_object *tio_container_object(const tio_container *c) {
    const tio_objtree *t = c ? obj_settled(c) : NULL;
    return t ? t->root : NULL;
}

size_t tio_container_object_count(const tio_container *c) {
    const tio_objtree *t = c ? obj_settled(c) : NULL;
    return t && t->root ? t->count : 0;
}

tio_object_kind tio_object_kind_of(const tio_object *o) {
    return o ? (tio_object_kind)o->kind : (tio_object_kind)0;
}

const char *tio_object_kind_name(tio_object_kind kind) {
    static const char *const names[] = {NULL,    "none",  "bool",  "int",   "bigint",
                                        "float", "str",   "bytes", "list",  "tuple",
                                        "set",   "dict",  "tensor", "opaque"};
    return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : NULL;
}

static int has_kids(const tio_object *o) {
    return o && (o->kind == TIO_OBJ_LIST || o->kind == TIO_OBJ_TUPLE || o->kind == TIO_OBJ_SET ||
                 o->kind == TIO_OBJ_DICT);
}

static int has_bytes(const tio_object *o) {
    return o && (o->kind == TIO_OBJ_STR || o->kind == TIO_OBJ_BYTES ||
                 o->kind == TIO_OBJ_BIGINT || o->kind == TIO_OBJ_OPAQUE);
}

size_t tio_object_len(const tio_object *o) { return has_kids(o) || has_bytes(o) ? o->n : 0; }

const tio_object *tio_object_item(const tio_object *o, size_t i) {
    if (!has_kids(o) || i >= o->n) return NULL;
    return o->kind == TIO_OBJ_DICT ? o->kids[2 * i + 1] : o->kids[i];
}

const tio_object *tio_object_key(const tio_object *o, size_t i) {
    return o && o->kind == TIO_OBJ_DICT && i < o->n ? o->kids[2 * i] : NULL;
}

const tio_object *tio_object_get(const tio_object *o, const char *key) {
    if (!o || o->kind != TIO_OBJ_DICT || !key) return NULL;
    size_t n = strlen(key);
    for (size_t i = 0; i < o->n; i++) {
        const tio_object *k = o->kids[2 * i];
        if (k->kind == TIO_OBJ_STR && k->n == n && memcmp(k->s, key, n) == 0)
            return o->kids[2 * i + 1];
    }
    return NULL;
}

int64_t tio_object_int(const tio_object *o) {
    return o && (o->kind == TIO_OBJ_INT || o->kind == TIO_OBJ_BOOL) ? o->u.i : 0;
}

double tio_object_float(const tio_object *o) {
    if (!o) return 0;
    if (o->kind == TIO_OBJ_FLOAT) return o->u.f;
    return o->kind == TIO_OBJ_INT || o->kind == TIO_OBJ_BOOL ? (double)o->u.i : 0;
}

const char *tio_object_bytes(const tio_object *o, size_t *len) {
    if (!has_bytes(o)) {
        if (len) *len = 0;
        return NULL;
    }
    if (len) *len = o->n;
    return o->s;
}

int64_t tio_object_tensor(const tio_object *o) {
    return o && o->kind == TIO_OBJ_TENSOR ? o->u.i : -1;
}

const tio_object *tio_object_state(const tio_object *o) {
    return o && o->kind == TIO_OBJ_OPAQUE ? o->state : NULL;
}

int64_t tio_object_offset(const tio_object *o) { return o ? o->off : -1; }

size_t tio_object_id(const tio_object *o) { return o ? o->id : 0; }

int tio_object_shared(const tio_object *o) { return o ? o->shared : 0; }
