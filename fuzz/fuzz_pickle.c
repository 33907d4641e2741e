/* libFuzzer target: the pickle machine alone (src/pickle) on arbitrary
 * bytes, with the default limits and with tight ones.
 *  - Failure is an error value naming "torch" and an offset inside the input.
 *  - Success: every object's references (items, call parts, state) name an
 *    object that exists, every string view lies inside the input, STOP ended
 *    inside it, and a second run gives the same objects.
 *  - Tight limits never accept what the defaults refuse.
 *  - What ran becomes an object tree (src/pickle/tree.c) that is acyclic,
 *    within max_pickle_depth, walked through the public API.
 * Nothing here may crash, leak or read outside the input. */
#include <stdlib.h>
#include <string.h>

#include "core/object.h"
#include "fuzz_common.h"
#include "pickle/pickle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_err(int rc, const tio_error *e, size_t size) {
    fz_check_error(rc, e, NULL);
    if (strncmp(e->message, "torch: ", 7) != 0)
        fz_fail("error without the format prefix: %s", e->message);
    if (e->offset < 0 || (uint64_t)e->offset > size)
        fz_fail("error offset %lld outside the %zu-byte input", (long long)e->offset, size);
}

static void check_ref(const tio_pickle *p, uint32_t i, int nil_ok) {
    if (i == TIO_PK_NIL && nil_ok) return;
    if (i >= p->count) fz_fail("a reference to object %u of %zu", i, p->count);
}

static void check_view(const uint8_t *s, size_t n, const uint8_t *data, size_t size) {
    if (n && (s < data || s > data + size || n > (size_t)(data + size - s)))
        fz_fail("a string view outside the input");
}

static void check_objects(const tio_pickle *p, const uint8_t *data, size_t size) {
    check_ref(p, p->root, 0);
    if (p->end > size) fz_fail("STOP after the end of the input");
    for (size_t i = 0; i < p->count; i++) {
        const tio_pk_obj *o = &p->obj[i];
        if (o->off > size) fz_fail("an object's offset past the input");
        switch (o->kind) {
        case TIO_PK_STR:
        case TIO_PK_BYTES:
        case TIO_PK_BIGINT:
            check_view(o->u.s, o->n, data, size);
            break;
        case TIO_PK_GLOBAL:
            check_view(o->u.g.mod, o->u.g.mod_len, data, size);
            check_view(o->u.g.name, o->u.g.name_len, data, size);
            break;
        case TIO_PK_TUPLE:
        case TIO_PK_LIST:
        case TIO_PK_SET:
        case TIO_PK_FROZENSET:
        case TIO_PK_DICT: {
            size_t slots = o->kind == TIO_PK_DICT ? 2 * (size_t)o->n : o->n;
            if (slots > o->cap) fz_fail("more items than slots");
            for (size_t k = 0; k < slots; k++) check_ref(p, o->u.kids[k], 0);
            check_ref(p, o->state, 1);
            break;
        }
        case TIO_PK_CALL:
            check_ref(p, o->u.call.func, 0);
            check_ref(p, o->u.call.args, 0);
            check_ref(p, o->u.call.kwargs, 1);
            check_ref(p, o->state, 1);
            if (p->obj[o->u.call.args].kind != TIO_PK_TUPLE) fz_fail("a call's args not a tuple");
            break;
        case TIO_PK_PERSID:
            check_ref(p, o->u.call.args, 0);
            break;
        case TIO_PK_NONE:
        case TIO_PK_BOOL:
        case TIO_PK_INT:
        case TIO_PK_FLOAT:
            break;
        default:
            fz_fail("object %zu of kind %u", i, o->kind);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tio_limits loose = tio__limits_resolve(NULL);
    tio_limits tight = loose;
    tight.max_pickle_objects = 64;
    tight.max_pickle_depth = 4;
    tight.max_pickle_bytes = 256;
    tio_pickle p1, p2, p3;
    tio_error e1, e2, e3;
    int r1 = tio__pickle_run(&p1, data, size, 0, "torch", &loose, &e1);
    int r2 = tio__pickle_run(&p2, data, size, 0, "torch", &loose, &e2);
    if (r1 != r2 || (r1 && strcmp(e1.message, e2.message) != 0))
        fz_fail("the pickle machine is not deterministic");
    if (r1) {
        check_err(r1, &e1, size);
    } else {
        check_objects(&p1, data, size);
        if (p1.count != p2.count || p1.root != p2.root || p1.end != p2.end)
            fz_fail("two runs built different objects");
        tio_objtree *t = calloc(1, sizeof *t);
        const tio_object *root = NULL;
        if (!t) fz_fail("out of memory");
        int rt = tio__pickle_tree(&p1, p1.root, NULL, 1, &loose, t, "torch", &e3, &root);
        if (rt) {
            check_err(rt, &e3, size);
        } else {
            fz_check_tree(NULL, root, t->count);
        }
        tio__objtree_free(t);
    }
    int r3 = tio__pickle_run(&p3, data, size, 0, "torch", &tight, &e3);
    if (r3) check_err(r3, &e3, size);
    if (r3 == TIO_OK && r1 != TIO_OK)
        fz_fail("accepted with tight limits, refused with the defaults: %s", e1.message);
    if (r3 == TIO_OK) check_objects(&p3, data, size);
    tio__pickle_free(&p1);
    tio__pickle_free(&p2);
    tio__pickle_free(&p3);
    return 0;
}
