/*
 * The object tree a container may carry (tio_object in tensio.h): its
 * representation and the builder the readers use. Internal.
 */
#ifndef TIO_OBJECT_H
#define TIO_OBJECT_H

#include "core/internal.h"

struct tio_object {
    uint8_t kind;   /* tio_object_kind */
    uint8_t shared; /* reached from more than one place */
    uint32_t n;     /* items, pairs (DICT), bytes (STR, BYTES, BIGINT, OPAQUE) */
    int64_t off;    /* source offset, or -1 */
    size_t id;      /* its number in the tree */
    union {
        int64_t i;  /* BOOL, INT; TENSOR: the container index */
        double f;   /* FLOAT */
    } u;
    const char *s;                /* STR, BYTES, BIGINT, OPAQUE (NUL-terminated) */
    const struct tio_object **kids; /* LIST/TUPLE/SET: n items; DICT: 2n (key, value) */
    const struct tio_object *state; /* OPAQUE */
};

struct tio_objblock;
typedef struct tio_objtree {
    const tio_object *root;
    size_t count;                /* objects made */
    struct tio_objblock *blocks; /* newest first: objects, kid arrays, strings */
} tio_objtree;

/* A tree made when first asked for (tio_container_object), not at open:
 * build(state, t) fills the empty tree t, then release(state) frees what it
 * read, as the container does when no one asked. Built once, under a lock,
 * whichever thread asks first; a build that fails leaves no tree. */
int tio__container_objects_later(tio_container *c, int (*build)(void *state, tio_objtree *t),
                                 void (*release)(void *state), void *state);
/* Frees what tio__container_objects_later kept (tio_container_free). */
void tio__objlater_free(struct tio_objlater *l);

/* The container's tree, made empty on first use (NULL: out of memory). */
tio_objtree *tio__container_objects(tio_container *c);
void tio__objtree_free(tio_objtree *t);
/* n bytes (8-aligned) that live as long as the tree, or NULL. */
void *tio__obj_alloc(tio_objtree *t, size_t n);
/* A new object of that kind and offset, its other fields zero; NULL when
 * out of memory. */
tio_object *tio__obj_new(tio_objtree *t, tio_object_kind kind, int64_t off);
/* o->s: a NUL-terminated copy of s[0..n) (TIO_E_NOMEM, or TIO_E_LIMIT past
 * 4 GiB). */
int tio__obj_set_bytes(tio_objtree *t, tio_object *o, const void *s, size_t n);
/* o->kids: room for `slots` pointers (n items, or 2n for a DICT). */
int tio__obj_set_kids(tio_objtree *t, tio_object *o, size_t slots);

#endif
