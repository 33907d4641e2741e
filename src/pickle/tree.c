/*
 * What a pickle built, as tensio's object tree (pickle.h: tio__pickle_tree;
 * tio_object in tensio.h). Each pickle object reached becomes one tree
 * object, made once however often the memo hands it out; work and memory
 * are O(objects reached).
 */
#include "core/object.h"
#include "pickle/pickle.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define PT_BIGINT_DIGITS 256u /* a decimal int (protocol 0's LONG) past this: opaque */

typedef struct pt_run {
    const tio_pickle *p;
    const int64_t *tensor_of;
    int offs;
    uint32_t max_depth;
    tio_objtree *t;
    const char *fmt;
    tio_error *err;
    tio_object **made; /* per pickle object: its tree object, or NULL */
    uint8_t *open;     /* per pickle object: being made (on the path from the root) */
} pt_run;

static int pt_nomem(pt_run *r) { return tio__nomem(r->err, r->fmt); }

static tio_object *pt_new(pt_run *r, tio_object_kind kind, const tio_pk_obj *o) {
    return tio__obj_new(r->t, kind, r->offs ? (int64_t)(o->off > INT64_MAX ? INT64_MAX : o->off)
                                            : -1);
}

static int pt_bytes(pt_run *r, tio_object *x, const void *s, size_t n) {
    int rc = tio__obj_set_bytes(r->t, x, s, n);
    if (rc == TIO_E_NOMEM) return pt_nomem(r);
    if (rc) return tio__err(r->err, rc, r->fmt, x->off, "a string of %zu bytes", n);
    return TIO_OK;
}

/* An OPAQUE object named module.name of GLOBAL g, or `what` when g is not one. */
static int pt_opaque(pt_run *r, const tio_pk_obj *o, const tio_pk_obj *g, const char *what,
                     tio_object **out) {
    int named = g && g->kind == TIO_PK_GLOBAL;
    tio_object *x = pt_new(r, TIO_OBJ_OPAQUE, named ? g : o); /* where the file names it */
    if (!x) return pt_nomem(r);
    *out = x;
    if (!named) return pt_bytes(r, x, what, strlen(what));
    size_t ml = g->u.g.mod_len, nl = g->u.g.name_len;
    char *s = tio__obj_alloc(r->t, ml + nl + 2); /* each below 4 GiB */
    if (!s) return pt_nomem(r);
    memcpy(s, g->u.g.mod, ml);
    s[ml] = '.';
    memcpy(s + ml + 1, g->u.g.name, nl);
    s[ml + 1 + nl] = 0;
    if (ml + 1 + nl > UINT32_MAX - 1)
        return tio__err(r->err, TIO_E_LIMIT, r->fmt, x->off, "a global's name of 4 GiB");
    x->s = s;
    x->n = (uint32_t)(ml + 1 + nl);
    return TIO_OK;
}

/* Protocol 0's decimal text of an int past int64 as two's complement,
 * little-endian (as LONG1/LONG4 store it). 0 when it has more than
 * PT_BIGINT_DIGITS digits. */
static size_t pt_decimal_le(const uint8_t *s, size_t n, uint8_t *out, size_t cap) {
    int neg = 0;
    size_t k = 0;
    if (n && s[n - 1] == 'L') n--;
    if (k < n && (s[k] == '-' || s[k] == '+')) neg = s[k++] == '-';
    if (n - k > PT_BIGINT_DIGITS) return 0;
    memset(out, 0, cap);
    for (; k < n; k++) {
        unsigned carry = (unsigned)(s[k] - '0');
        for (size_t j = 0; j < cap; j++) {
            unsigned v = out[j] * 10u + carry;
            out[j] = (uint8_t)v;
            carry = v >> 8;
        }
    }
    if (neg) { /* -x = ~x + 1 */
        unsigned carry = 1;
        for (size_t j = 0; j < cap; j++) {
            unsigned v = (uint8_t)~out[j] + carry;
            out[j] = (uint8_t)v;
            carry = v >> 8;
        }
    }
    size_t len = cap;
    uint8_t pad = neg ? 0xff : 0x00;
    while (len > 1 && out[len - 1] == pad && ((out[len - 2] & 0x80) == (pad & 0x80))) len--;
    return len;
}

/* _codecs.encode(text, "latin1"): the text's code points (each below 256)
 * as bytes; 0 when it holds another code point. */
static int pt_latin1(const uint8_t *s, size_t n, uint8_t *out, size_t *len) {
    size_t o = 0;
    for (size_t k = 0; k < n; k++) {
        if (s[k] < 0x80) {
            out[o++] = s[k];
        } else if ((s[k] == 0xc2 || s[k] == 0xc3) && k + 1 < n && (s[k + 1] & 0xc0) == 0x80) {
            out[o++] = (uint8_t)((s[k] & 0x03) << 6 | (s[k + 1] & 0x3f));
            k++;
        } else {
            return 0;
        }
    }
    *len = o;
    return 1;
}

static int pt_str_is(const tio_pk_obj *o, const char *s) {
    return o && o->kind == TIO_PK_STR && o->n == strlen(s) && memcmp(o->u.s, s, o->n) == 0;
}

static int pt_global_is(const tio_pk_obj *g, const char *mod, const char *name) {
    return g && g->kind == TIO_PK_GLOBAL && g->u.g.mod_len == strlen(mod) &&
           memcmp(g->u.g.mod, mod, g->u.g.mod_len) == 0 && g->u.g.name_len == strlen(name) &&
           memcmp(g->u.g.name, name, g->u.g.name_len) == 0;
}

static int pt_conv(pt_run *r, uint32_t idx, unsigned depth, const tio_object **out);

/* x's kids: the n items of pickle object `from` (2n for a dict). */
static int pt_kids(pt_run *r, tio_object *x, const tio_pk_obj *from, size_t slots,
                   unsigned depth) {
    if (tio__obj_set_kids(r->t, x, slots)) return pt_nomem(r);
    for (size_t k = 0; k < slots; k++) {
        int rc = pt_conv(r, from->u.kids[k], depth + 1, &x->kids[k]);
        if (rc) return rc;
    }
    x->n = (uint32_t)(x->kind == TIO_OBJ_DICT ? slots / 2 : slots);
    return TIO_OK;
}

/* A CALL: a tensor, data the vocabulary rebuilds, or an opaque object. */
static int pt_call(pt_run *r, uint32_t idx, const tio_pk_obj *o, unsigned depth,
                   tio_object **out) {
    const tio_pickle *p = r->p;
    const tio_pk_vocab_entry *e = tio__pk_callee(p, o);
    const tio_pk_obj *args = tio__pk(p, o->u.call.args), *f = tio__pk(p, o->u.call.func);
    const tio_pk_obj *a0 = tio__pk_item(p, args, 0), *a1 = tio__pk_item(p, args, 1);
    size_t an = args && args->kind == TIO_PK_TUPLE ? args->n : 0;
    if (r->tensor_of && r->tensor_of[idx] >= 0) {
        tio_object *x = pt_new(r, TIO_OBJ_TENSOR, o);
        if (!x) return pt_nomem(r);
        x->u.i = r->tensor_of[idx];
        *out = x;
        return TIO_OK;
    }
    tio_pk_vocab id = e ? e->id : TIO_PKV_NONE;
    if ((id == TIO_PKV_SIZE || id == TIO_PKV_JIT_LIST || id == TIO_PKV_JIT_TYPE_TAG) && an >= 1) {
        *out = NULL;
        const tio_object *v = NULL;
        int rc = pt_conv(r, args->u.kids[0], depth + 1, &v);
        *out = (tio_object *)v; /* the same object as what it wraps */
        return rc;
    }
    if ((id == TIO_PKV_SET || id == TIO_PKV_FROZENSET) && an == 1 &&
        (a0->kind == TIO_PK_LIST || a0->kind == TIO_PK_TUPLE || a0->kind == TIO_PK_SET)) {
        tio_object *x = pt_new(r, TIO_OBJ_SET, o);
        if (!x) return pt_nomem(r);
        *out = x;
        r->made[idx] = x;
        return pt_kids(r, x, a0, a0->n, depth);
    }
    if (id == TIO_PKV_DEVICE && an >= 1 && a0->kind == TIO_PK_STR) { /* "cuda:0" */
        tio_object *x = pt_new(r, TIO_OBJ_STR, o);
        if (!x) return pt_nomem(r);
        *out = x;
        if (an < 2 || a1->kind != TIO_PK_INT) return pt_bytes(r, x, a0->u.s, a0->n);
        char *s = malloc((size_t)a0->n + 24);
        if (!s) return pt_nomem(r);
        memcpy(s, a0->u.s, a0->n);
        s[a0->n] = ':';
        char d[TIO__DEC_CAP];
        const char *ds = tio__u64_dec(d, a1->u.i < 0 ? 0 : (uint64_t)a1->u.i);
        size_t dn = strlen(ds);
        memcpy(s + a0->n + 1, ds, dn);
        int rc = pt_bytes(r, x, s, a0->n + 1 + dn);
        free(s);
        return rc;
    }
    if ((id == TIO_PKV_CODECS_ENCODE && an == 2 && a0->kind == TIO_PK_STR &&
         (pt_str_is(a1, "latin1") || pt_str_is(a1, "latin-1"))) ||
        ((pt_global_is(f, "__builtin__", "bytes") || pt_global_is(f, "builtins", "bytes")) &&
         an == 0)) {
        size_t n = 0;
        uint8_t *b = an ? malloc(a0->n ? a0->n : 1) : NULL;
        if (an && !b) return pt_nomem(r);
        if (!an || pt_latin1(a0->u.s, a0->n, b, &n)) {
            tio_object *x = pt_new(r, TIO_OBJ_BYTES, o);
            int rc = x ? pt_bytes(r, x, b, n) : pt_nomem(r);
            free(b);
            *out = x;
            return rc;
        }
        free(b);
    }
    /* an object tensio does not rebuild: its class (or function) and state */
    tio_object *x = NULL;
    int rc = pt_opaque(r, o, f, "(a computed callable)", &x);
    *out = x;
    if (rc || o->state == TIO_PK_NIL) return rc;
    r->made[idx] = x;
    uint32_t st = o->state;
    const tio_pk_obj *s = tio__pk(p, st);
    if (s && s->kind == TIO_PK_TUPLE && s->n == 2) st = s->u.kids[0]; /* (state, slotstate) */
    return pt_conv(r, st, depth + 1, &x->state);
}

static int pt_make(pt_run *r, uint32_t idx, const tio_pk_obj *o, unsigned depth,
                   tio_object **out) {
    tio_object *x = NULL;
    *out = NULL;
    switch (o->kind) {
    case TIO_PK_NONE: x = pt_new(r, TIO_OBJ_NONE, o); break;
    case TIO_PK_BOOL:
    case TIO_PK_INT:
        if ((x = pt_new(r, o->kind == TIO_PK_BOOL ? TIO_OBJ_BOOL : TIO_OBJ_INT, o))) x->u.i = o->u.i;
        break;
    case TIO_PK_FLOAT:
        if ((x = pt_new(r, TIO_OBJ_FLOAT, o))) x->u.f = o->u.f;
        break;
    case TIO_PK_STR:
    case TIO_PK_BYTES:
        if (!(x = pt_new(r, o->kind == TIO_PK_STR ? TIO_OBJ_STR : TIO_OBJ_BYTES, o))) break;
        *out = x;
        return pt_bytes(r, x, o->u.s, o->n);
    case TIO_PK_BIGINT: {
        if (o->how != 'L') { /* LONG1/LONG4: two's complement already */
            if (!(x = pt_new(r, TIO_OBJ_BIGINT, o))) break;
            *out = x;
            return pt_bytes(r, x, o->u.s, o->n);
        }
        uint8_t le[PT_BIGINT_DIGITS / 2 + 2];
        size_t n = pt_decimal_le(o->u.s, o->n, le, sizeof le);
        if (!n) return pt_opaque(r, o, NULL, "builtins.int", out); /* past 256 digits */
        if (!(x = pt_new(r, TIO_OBJ_BIGINT, o))) break;
        *out = x;
        return pt_bytes(r, x, le, n);
    }
    case TIO_PK_TUPLE:
    case TIO_PK_LIST:
    case TIO_PK_SET:
    case TIO_PK_FROZENSET:
    case TIO_PK_DICT: {
        tio_object_kind k = o->kind == TIO_PK_TUPLE  ? TIO_OBJ_TUPLE
                            : o->kind == TIO_PK_LIST ? TIO_OBJ_LIST
                            : o->kind == TIO_PK_DICT ? TIO_OBJ_DICT
                                                     : TIO_OBJ_SET;
        if (!(x = pt_new(r, k, o))) break;
        *out = x;
        r->made[idx] = x;
        return pt_kids(r, x, o, o->kind == TIO_PK_DICT ? 2 * (size_t)o->n : o->n, depth);
    }
    case TIO_PK_GLOBAL:
        return pt_opaque(r, o, o, NULL, out);
    case TIO_PK_PERSID: { /* a storage outside a tensor: named by its type */
        const tio_pk_obj *pid = tio__pk(r->p, o->u.call.args);
        return pt_opaque(r, o, tio__pk_item(r->p, pid, 1), "(a persistent id)", out);
    }
    case TIO_PK_CALL:
        return pt_call(r, idx, o, depth, out);
    default:
        return tio__err(r->err, TIO_E_CORRUPT, r->fmt, r->offs ? (int64_t)o->off : -1,
                        "a pickle object of unknown kind %u", (unsigned)o->kind);
    }
    if (!x) return pt_nomem(r);
    *out = x;
    return TIO_OK;
}

static int pt_conv(pt_run *r, uint32_t idx, unsigned depth, const tio_object **out) {
    const tio_pk_obj *o = tio__pk(r->p, idx);
    if (!o) return tio__err(r->err, TIO_E_CORRUPT, r->fmt, -1, "an object index past the pickle's");
    if (r->open[idx]) { /* itself or an ancestor: the tree stays acyclic */
        tio_object *x = NULL;
        int rc = pt_opaque(r, o, NULL, "(recursive reference)", &x);
        *out = x;
        return rc;
    }
    if (r->made[idx]) {
        r->made[idx]->shared = 1;
        *out = r->made[idx];
        return TIO_OK;
    }
    if (depth > r->max_depth) { /* where the walk did not go (a tuple as a dict key) */
        tio_object *x = NULL;
        int rc = pt_opaque(r, o, NULL, "(nested past max_pickle_depth)", &x);
        *out = x;
        return rc;
    }
    r->open[idx] = 1;
    tio_object *x = NULL;
    int rc = pt_make(r, idx, o, depth, &x);
    r->open[idx] = 0;
    if (!rc) r->made[idx] = x;
    *out = x;
    return rc;
}

int tio__pickle_tree(const tio_pickle *p, uint32_t root, const int64_t *tensor_of,
                     int source_offsets, const tio_limits *lim, tio_objtree *t,
                     const char *format, tio_error *err, const tio_object **out) {
    pt_run r;
    memset(&r, 0, sizeof r);
    r.p = p;
    r.tensor_of = tensor_of;
    r.offs = source_offsets;
    r.max_depth = lim->max_pickle_depth;
    r.t = t;
    r.fmt = format;
    r.err = err;
    size_t n = p->count ? p->count : 1;
    r.made = calloc(n, sizeof *r.made);
    r.open = calloc(n, 1);
    int rc = r.made && r.open ? pt_conv(&r, root, 0, out) : tio__nomem(err, format);
    free(r.made);
    free(r.open);
    return rc;
}

/* ------------------------------------------------- the tree made later */

typedef struct pk_later_part {
    tio_pickle pk;
    int64_t *tensor_of;
    uint8_t *owned;
    int offs;
    const char *key;
} pk_later_part;

struct tio_pk_later {
    pk_later_part part[TIO_PK_LATER_PARTS];
    size_t n;
    tio_limits lim;
};

static void pk_later_free(void *state) {
    struct tio_pk_later *l = state;
    for (size_t k = 0; k < l->n; k++) {
        tio__pickle_free(&l->part[k].pk);
        free(l->part[k].tensor_of);
        free(l->part[k].owned);
    }
    free(l);
}

static int pk_later_build(void *state, tio_objtree *t) {
    struct tio_pk_later *l = state;
    tio_error e;
    const tio_object *root[TIO_PK_LATER_PARTS];
    for (size_t k = 0; k < l->n; k++) {
        pk_later_part *p = &l->part[k];
        int rc = tio__pickle_tree(&p->pk, p->pk.root, p->tensor_of, p->offs, &l->lim, t, "pickle",
                                  &e, &root[k]);
        if (rc) return rc;
    }
    if (l->n == 1) {
        t->root = root[0];
        return TIO_OK;
    }
    tio_object *d = tio__obj_new(t, TIO_OBJ_DICT, -1);
    if (!d || tio__obj_set_kids(t, d, 2 * l->n)) return TIO_E_NOMEM;
    for (size_t k = 0; k < l->n; k++) {
        tio_object *key = tio__obj_new(t, TIO_OBJ_STR, -1);
        if (!key || tio__obj_set_bytes(t, key, l->part[k].key, strlen(l->part[k].key)))
            return TIO_E_NOMEM;
        d->kids[2 * k] = key;
        d->kids[2 * k + 1] = root[k];
    }
    d->n = (uint32_t)l->n;
    t->root = d;
    return TIO_OK;
}

int tio__pickle_tree_later(tio_container *c, struct tio_pk_later **later, tio_pickle *p,
                           int64_t *tensor_of, uint8_t *owned, int source_offsets,
                           const char *key, const tio_limits *lim) {
    struct tio_pk_later *l = *later;
    if (!l) {
        if (!(l = calloc(1, sizeof *l))) return TIO_E_NOMEM;
        l->lim = *lim;
        if (tio__container_objects_later(c, pk_later_build, pk_later_free, l))
            return TIO_E_NOMEM; /* l released, no part in it */
        *later = l;
    }
    if (l->n == TIO_PK_LATER_PARTS) return TIO_E_LIMIT;
    pk_later_part *part = &l->part[l->n++];
    part->pk = *p;
    memset(p, 0, sizeof *p);
    part->tensor_of = tensor_of;
    part->owned = owned;
    part->offs = source_offsets;
    part->key = key;
    return TIO_OK;
}
