/*
 * The pickle machine (pickle.h): Python's pickle opcodes (protocols 0-5,
 * Lib/pickletools.py documents each) interpreted as data, never as code.
 */
#include "pickle/pickle.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pk_run {
    tio_pickle *p;
    const uint8_t *d;
    size_t size, pos;
    uint64_t base;       /* source offset of d[0] */
    uint64_t op_at;      /* source offset of the opcode being run */
    uint8_t op;
    const char *fmt;
    tio_error *err;
    uint64_t max_objects;
    uint32_t max_depth;
    uint32_t *stack;
    size_t sn, scap;
    size_t *marks;
    size_t mn, mcap;
    uint32_t *memo;      /* memo[key], TIO_PK_NIL where unset */
    size_t memo_cap, memo_set;
} pk_run;

static const char *pk_opname(uint8_t op) {
    switch (op) {
    case '(': return "MARK";
    case '.': return "STOP";
    case '0': return "POP";
    case '1': return "POP_MARK";
    case '2': return "DUP";
    case 'F': return "FLOAT";
    case 'I': return "INT";
    case 'J': return "BININT";
    case 'K': return "BININT1";
    case 'L': return "LONG";
    case 'M': return "BININT2";
    case 'N': return "NONE";
    case 'P': return "PERSID";
    case 'Q': return "BINPERSID";
    case 'R': return "REDUCE";
    case 'S': return "STRING";
    case 'T': return "BINSTRING";
    case 'U': return "SHORT_BINSTRING";
    case 'V': return "UNICODE";
    case 'X': return "BINUNICODE";
    case 'a': return "APPEND";
    case 'b': return "BUILD";
    case 'c': return "GLOBAL";
    case 'd': return "DICT";
    case '}': return "EMPTY_DICT";
    case 'e': return "APPENDS";
    case 'g': return "GET";
    case 'h': return "BINGET";
    case 'i': return "INST";
    case 'j': return "LONG_BINGET";
    case 'l': return "LIST";
    case ']': return "EMPTY_LIST";
    case 'o': return "OBJ";
    case 'p': return "PUT";
    case 'q': return "BINPUT";
    case 'r': return "LONG_BINPUT";
    case 's': return "SETITEM";
    case 't': return "TUPLE";
    case ')': return "EMPTY_TUPLE";
    case 'u': return "SETITEMS";
    case 'G': return "BINFLOAT";
    case 'B': return "BINBYTES";
    case 'C': return "SHORT_BINBYTES";
    case 0x80: return "PROTO";
    case 0x81: return "NEWOBJ";
    case 0x82: return "EXT1";
    case 0x83: return "EXT2";
    case 0x84: return "EXT4";
    case 0x85: return "TUPLE1";
    case 0x86: return "TUPLE2";
    case 0x87: return "TUPLE3";
    case 0x88: return "NEWTRUE";
    case 0x89: return "NEWFALSE";
    case 0x8a: return "LONG1";
    case 0x8b: return "LONG4";
    case 0x8c: return "SHORT_BINUNICODE";
    case 0x8d: return "BINUNICODE8";
    case 0x8e: return "BINBYTES8";
    case 0x8f: return "EMPTY_SET";
    case 0x90: return "ADDITEMS";
    case 0x91: return "FROZENSET";
    case 0x92: return "NEWOBJ_EX";
    case 0x93: return "STACK_GLOBAL";
    case 0x94: return "MEMOIZE";
    case 0x95: return "FRAME";
    case 0x96: return "BYTEARRAY8";
    case 0x97: return "NEXT_BUFFER";
    case 0x98: return "READONLY_BUFFER";
    default: return NULL;
    }
}

static const char *pk_kind_name(unsigned k) {
    static const char *const names[] = {"?",     "None",  "bool",  "int",       "int",
                                        "float", "str",   "bytes", "tuple",     "list",
                                        "dict",  "set",   "frozenset", "global", "call",
                                        "persistent id"};
    return k < sizeof names / sizeof names[0] ? names[k] : "?";
}

static int64_t pk_off(uint64_t v) { return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v; }

/* An error about the opcode being run: "<OPNAME> at offset N: ..." with the
 * opcode's offset as the error's. */
static int pk_err(pk_run *r, int code, const char *fmt, ...) TIO_PRINTF(3, 4);
static int pk_err(pk_run *r, int code, const char *fmt, ...) {
    char msg[TIO_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *name = pk_opname(r->op);
    if (name)
        return tio__err(r->err, code, r->fmt, pk_off(r->op_at), "pickle opcode %s: %s", name,
                        msg);
    return tio__err(r->err, code, r->fmt, pk_off(r->op_at), "pickle opcode 0x%02x: %s",
                    (unsigned)r->op, msg);
}

/* The next n operand bytes. */
static int pk_take(pk_run *r, uint64_t n, const uint8_t **out) {
    size_t left = r->size - r->pos;
    if (n > left)
        return pk_err(r, TIO_E_TRUNCATED,
                      "an operand of %" PRIu64 " bytes runs past the end of the pickle "
                      "(%zu bytes left)",
                      n, left);
    *out = r->d + r->pos;
    r->pos += (size_t)n;
    return TIO_OK;
}

/* A text operand: the bytes up to '\n' (not included). */
static int pk_line(pk_run *r, const uint8_t **out, size_t *n) {
    const uint8_t *s = r->d + r->pos;
    const uint8_t *nl = memchr(s, '\n', r->size - r->pos);
    if (!nl) return pk_err(r, TIO_E_TRUNCATED, "its text operand has no '\\n' before the end");
    *out = s;
    *n = (size_t)(nl - s);
    r->pos += *n + 1;
    return TIO_OK;
}

static int pk_new(pk_run *r, tio_pk_kind kind, uint32_t *idx) {
    tio_pickle *p = r->p;
    if (p->count >= r->max_objects)
        return pk_err(r, TIO_E_LIMIT,
                      "the pickle makes more than %" PRIu64
                      " objects (max_pickle_objects)",
                      r->max_objects);
    if (p->count == p->cap) {
        /* First sized from the pickle: a torch.save pickle makes an object
         * per 6 or 7 bytes, so a quarter of its size is rarely outgrown and
         * the pool is seldom copied; pages never reached are never touched. */
        size_t cap = p->cap ? p->cap * 2 : r->size / 4 + 256;
        if (cap > r->max_objects) cap = (size_t)r->max_objects; /* > count: checked above */
        tio_pk_obj *o = realloc(p->obj, cap * sizeof *o);
        if (!o) return tio__nomem(r->err, r->fmt);
        p->obj = o;
        p->cap = cap;
    }
    tio_pk_obj *o = &p->obj[p->count];
    memset(o, 0, sizeof *o);
    o->kind = (uint8_t)kind;
    o->state = TIO_PK_NIL;
    o->off = r->op_at;
    *idx = (uint32_t)p->count++;
    return TIO_OK;
}

static int pk_push(pk_run *r, uint32_t idx) {
    if (r->sn == r->scap) {
        size_t cap = r->scap ? r->scap * 2 : 64;
        uint32_t *s = realloc(r->stack, cap * sizeof *s);
        if (!s) return tio__nomem(r->err, r->fmt);
        r->stack = s;
        r->scap = cap;
    }
    r->stack[r->sn++] = idx;
    return TIO_OK;
}

static size_t pk_floor(const pk_run *r) { return r->mn ? r->marks[r->mn - 1] : 0; }

/* Pops n objects above the current mark into out[0..n) (bottom first). */
static int pk_pop(pk_run *r, size_t n, uint32_t *out) {
    size_t avail = r->sn - pk_floor(r);
    if (avail < n)
        return pk_err(r, TIO_E_CORRUPT, "needs %zu object%s on the stack%s, found %zu", n,
                      n == 1 ? "" : "s", r->mn ? " above the mark" : "", avail);
    r->sn -= n;
    memcpy(out, r->stack + r->sn, n * sizeof *out);
    return TIO_OK;
}

/* The objects above the topmost mark (*items, *n: a view into the stack,
 * valid until the next push), the mark removed. */
static int pk_pop_mark(pk_run *r, const uint32_t **items, size_t *n) {
    if (!r->mn) return pk_err(r, TIO_E_CORRUPT, "no MARK before it (marks unbalanced)");
    size_t m = r->marks[--r->mn];
    *items = r->stack ? r->stack + m : NULL; /* NULL: nothing was ever pushed */
    *n = r->sn - m;
    r->sn = m;
    return TIO_OK;
}

static tio_pk_obj *pk_obj(pk_run *r, uint32_t i) { return &r->p->obj[i]; }

/* Notes that object i's kids are now malloc'ed (tio__pickle_free frees
 * them without a pass over every object). */
static int pk_heap_note(pk_run *r, uint32_t i) {
    tio_pickle *p = r->p;
    if (p->nheap == p->heap_cap) {
        size_t cap = p->heap_cap ? 2 * p->heap_cap : 64;
        uint32_t *h = realloc(p->heap, cap * sizeof *h);
        if (!h) return tio__nomem(r->err, r->fmt);
        p->heap = h;
        p->heap_cap = cap;
    }
    p->heap[p->nheap++] = i;
    return TIO_OK;
}

/* Appends kids[0..n) (n 1, or 2 for a dict's key and value) to a
 * LIST/SET/DICT: one more item. */
static int pk_add(pk_run *r, uint32_t into, const uint32_t *kids, uint32_t n) {
    tio_pk_obj *o = pk_obj(r, into);
    size_t slots = o->kind == TIO_PK_DICT ? 2 * (size_t)o->n : o->n;
    if (slots + n > o->cap) {
        if (o->cap >= UINT32_MAX / 4)
            return pk_err(r, TIO_E_LIMIT, "a container of more than 2^30 items");
        uint32_t cap = o->cap ? o->cap * 2 : 4;
        if (!o->cap && pk_heap_note(r, into)) return TIO_E_NOMEM;
        o = pk_obj(r, into);
        uint32_t *k = realloc(o->u.kids, cap * sizeof *k);
        if (!k) return tio__nomem(r->err, r->fmt);
        o->u.kids = k;
        o->cap = cap;
    }
    memcpy(o->u.kids + slots, kids, n * sizeof *kids);
    o->n++;
    return TIO_OK;
}

/* Tuples and frozensets never grow: their kids are packed into chunks of
 * PK_CHUNK indices (a bigger one gets its own), freed with the pickle. */
#define PK_CHUNK 4096u
struct tio_pk_chunk {
    struct tio_pk_chunk *next;
    size_t used, cap;
    uint32_t kids[];
};

static uint32_t *pk_chunk_take(tio_pickle *p, size_t n) {
    struct tio_pk_chunk *c = p->chunks;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > PK_CHUNK ? n : PK_CHUNK;
        struct tio_pk_chunk *nc = malloc(sizeof *nc + cap * sizeof nc->kids[0]);
        if (!nc) return NULL;
        nc->used = 0;
        nc->cap = cap;
        nc->next = c;
        p->chunks = c = nc;
    }
    uint32_t *k = c->kids + c->used;
    c->used += n;
    return k;
}

static int pk_grows(unsigned kind) { return kind != TIO_PK_TUPLE && kind != TIO_PK_FROZENSET; }

/* A new TUPLE/LIST/DICT/SET/FROZENSET holding items[0..n) (a copy of the
 * indices: the items were pushed by opcodes, so this is O(bytes)). */
static int pk_seq(pk_run *r, tio_pk_kind kind, const uint32_t *items, size_t n, uint32_t *idx) {
    if (n > UINT32_MAX / 2) return pk_err(r, TIO_E_LIMIT, "a container of %zu items", n);
    /* items may point into the stack, which pk_new does not move */
    int rc = pk_new(r, kind, idx);
    if (rc || !n) return rc;
    if (pk_grows(kind) && (rc = pk_heap_note(r, *idx))) return rc;
    uint32_t *k = pk_grows(kind) ? malloc(n * sizeof *k) : pk_chunk_take(r->p, n);
    if (!k) return tio__nomem(r->err, r->fmt);
    memcpy(k, items, n * sizeof *k);
    tio_pk_obj *o = pk_obj(r, *idx);
    o->u.kids = k;
    o->cap = (uint32_t)n;
    o->n = (uint32_t)(kind == TIO_PK_DICT ? n / 2 : n);
    return TIO_OK;
}

static int pk_scalar(pk_run *r, tio_pk_kind kind, int64_t i) {
    uint32_t idx = 0;
    int rc = pk_new(r, kind, &idx);
    if (rc) return rc;
    pk_obj(r, idx)->u.i = i;
    return pk_push(r, idx);
}

static int pk_bytes(pk_run *r, tio_pk_kind kind, const uint8_t *s, uint64_t n) {
    if (n > UINT32_MAX) return pk_err(r, TIO_E_LIMIT, "a string of %" PRIu64 " bytes", n);
    uint32_t idx = 0;
    int rc = pk_new(r, kind, &idx);
    if (rc) return rc;
    tio_pk_obj *o = pk_obj(r, idx);
    o->u.s = s;
    o->n = (uint32_t)n;
    return pk_push(r, idx);
}

/* A length-prefixed string: a little-endian length of `width` bytes
 * (signed for BINSTRING), then its bytes. */
static int pk_counted(pk_run *r, unsigned width, int is_signed, tio_pk_kind kind) {
    const uint8_t *b = NULL, *s = NULL;
    int rc = pk_take(r, width, &b);
    if (rc) return rc;
    uint64_t n = width == 1 ? b[0] : width == 4 ? tio__ld32(b) : tio__ld64(b);
    if (is_signed && (n & 0x80000000u))
        return pk_err(r, TIO_E_CORRUPT, "a negative length (%" PRId32 ")", (int32_t)(uint32_t)n);
    rc = pk_take(r, n, &s);
    return rc ? rc : pk_bytes(r, kind, s, n);
}

/* A decimal integer of protocol 0 (INT, LONG): int64, else kept as text. */
static int pk_decimal(pk_run *r, const uint8_t *s, size_t n) {
    if (n && s[n - 1] == 'L') n--; /* LONG's suffix */
    size_t k = 0;
    int neg = 0;
    if (k < n && (s[k] == '-' || s[k] == '+')) neg = s[k++] == '-';
    if (k == n) return pk_err(r, TIO_E_CORRUPT, "an integer without digits");
    uint64_t v = 0;
    int big = 0;
    for (size_t j = k; j < n; j++) {
        if (s[j] < '0' || s[j] > '9')
            return pk_err(r, TIO_E_CORRUPT, "'%c' in a decimal integer", s[j] >= 32 && s[j] < 127 ? s[j] : '?');
        if (tio__mul64_ovf(v, 10, &v) || tio__add64_ovf(v, (uint64_t)(s[j] - '0'), &v)) big = 1;
    }
    if (big || v > (uint64_t)INT64_MAX + (uint64_t)neg) {
        int rc = pk_bytes(r, TIO_PK_BIGINT, s, n);
        if (!rc) r->p->obj[r->p->count - 1].how = 'L'; /* decimal text, not two's complement */
        return rc;
    }
    int64_t i = neg ? (int64_t)(0 - v) : (int64_t)v;
    return pk_scalar(r, TIO_PK_INT, i);
}

/* LONG1/LONG4: n bytes of two's complement, little-endian. */
static int pk_long(pk_run *r, unsigned width) {
    const uint8_t *b = NULL, *s = NULL;
    int rc = pk_take(r, width, &b);
    if (rc) return rc;
    uint64_t n = width == 1 ? b[0] : tio__ld32(b);
    if (width == 4 && (n & 0x80000000u))
        return pk_err(r, TIO_E_CORRUPT, "a negative length (%" PRId32 ")", (int32_t)(uint32_t)n);
    rc = pk_take(r, n, &s);
    if (rc) return rc;
    if (n > 8) return pk_bytes(r, TIO_PK_BIGINT, s, n);
    uint64_t v = 0;
    for (size_t k = 0; k < n; k++) v |= (uint64_t)s[k] << (8 * k);
    if (n && n < 8 && (s[n - 1] & 0x80)) v |= ~(uint64_t)0 << (8 * n); /* sign-extend */
    return pk_scalar(r, TIO_PK_INT, (int64_t)v);
}

static int pk_float_text(pk_run *r, const uint8_t *s, size_t n) {
    char buf[64];
    if (n == 0 || n >= sizeof buf) return pk_err(r, TIO_E_CORRUPT, "a float of %zu characters", n);
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end = NULL;
    double f = strtod(buf, &end);
    if (end != buf + n) return pk_err(r, TIO_E_CORRUPT, "'%s' is not a float", buf);
    uint32_t idx = 0;
    int rc = pk_new(r, TIO_PK_FLOAT, &idx);
    if (rc) return rc;
    pk_obj(r, idx)->u.f = f;
    return pk_push(r, idx);
}

static int pk_global(pk_run *r, const uint8_t *mod, size_t ml, const uint8_t *name, size_t nl,
                     uint32_t *idx) {
    if (ml > UINT32_MAX || nl > UINT32_MAX) return pk_err(r, TIO_E_LIMIT, "a global's name of 4 GiB");
    int rc = pk_new(r, TIO_PK_GLOBAL, idx);
    if (rc) return rc;
    tio_pk_obj *o = pk_obj(r, *idx);
    o->u.g.mod = mod;
    o->u.g.mod_len = (uint32_t)ml;
    o->u.g.name = name;
    o->u.g.name_len = (uint32_t)nl;
    o->vocab = (uint16_t)tio__pk_vocab_find(mod, ml, name, nl);
    if (!o->vocab && r->p->first_unknown == SIZE_MAX) r->p->first_unknown = *idx;
    return TIO_OK;
}

static int pk_call(pk_run *r, uint32_t func, uint32_t args, uint32_t kwargs) {
    const tio_pk_obj *a = pk_obj(r, args);
    if (a->kind != TIO_PK_TUPLE)
        return pk_err(r, TIO_E_CORRUPT, "the arguments are a %s (expected a tuple)",
                      pk_kind_name(a->kind));
    const tio_pk_obj *f = pk_obj(r, func);
    uint32_t idx = 0;
    int rc;
    if (r->op == 'R' && f->kind == TIO_PK_GLOBAL && a->n == 0 &&
        tio__pk_vocab_at(f->vocab) && tio__pk_vocab_at(f->vocab)->id == TIO_PKV_ORDERED_DICT) {
        /* OrderedDict(): a dict that SETITEMS then fills */
        rc = pk_new(r, TIO_PK_DICT, &idx);
        return rc ? rc : pk_push(r, idx);
    }
    rc = pk_new(r, TIO_PK_CALL, &idx);
    if (rc) return rc;
    tio_pk_obj *o = pk_obj(r, idx);
    o->how = r->op;
    o->u.call.func = func;
    o->u.call.args = args;
    o->u.call.kwargs = kwargs;
    return pk_push(r, idx);
}

static int pk_memo_put(pk_run *r, uint64_t key) {
    if (r->sn == pk_floor(r)) return pk_err(r, TIO_E_CORRUPT, "nothing on the stack to memoize");
    /* The memo is an array: keys below max_pickle_objects and below the
     * pickle's size (picklers count keys up from 0, one per PUT of two or
     * more bytes), so that its memory follows the input. */
    if (key >= r->max_objects || key >= r->size)
        return pk_err(r, TIO_E_LIMIT,
                      "memo key %" PRIu64 " (at most max_pickle_objects, %" PRIu64
                      ", and below the pickle's %zu bytes)",
                      key, r->max_objects, r->size);
    if (key >= r->memo_cap) {
        size_t cap = r->memo_cap ? r->memo_cap : 64;
        while (cap <= key) cap *= 2;
        uint32_t *m = realloc(r->memo, cap * sizeof *m);
        if (!m) return tio__nomem(r->err, r->fmt);
        for (size_t k = r->memo_cap; k < cap; k++) m[k] = TIO_PK_NIL;
        r->memo = m;
        r->memo_cap = cap;
    }
    if (r->memo[key] == TIO_PK_NIL) r->memo_set++;
    r->memo[key] = r->stack[r->sn - 1];
    return TIO_OK;
}

static int pk_memo_get(pk_run *r, uint64_t key) {
    if (key >= r->memo_cap || r->memo[key] == TIO_PK_NIL)
        return pk_err(r, TIO_E_CORRUPT, "memo key %" PRIu64 " was never set", key);
    return pk_push(r, r->memo[key]);
}

static int pk_text_key(pk_run *r, uint64_t *key) {
    const uint8_t *s = NULL;
    size_t n = 0;
    int rc = pk_line(r, &s, &n);
    if (rc) return rc;
    if (n == 0 || n > 19) return pk_err(r, TIO_E_CORRUPT, "a memo key of %zu characters", n);
    uint64_t v = 0;
    for (size_t k = 0; k < n; k++) {
        if (s[k] < '0' || s[k] > '9') return pk_err(r, TIO_E_CORRUPT, "a memo key that is not decimal");
        v = v * 10 + (uint64_t)(s[k] - '0');
    }
    *key = v;
    return TIO_OK;
}

/* The object below the topmost mark (APPENDS, SETITEMS, ADDITEMS), which
 * must be of kind `want`; then the items above the mark. */
static int pk_fill_target(pk_run *r, tio_pk_kind want, uint32_t *target, const uint32_t **items,
                          size_t *n) {
    if (!r->mn) return pk_err(r, TIO_E_CORRUPT, "no MARK before it (marks unbalanced)");
    size_t m = r->marks[r->mn - 1];
    size_t below = r->mn > 1 ? r->marks[r->mn - 2] : 0;
    if (m <= below) return pk_err(r, TIO_E_CORRUPT, "no object below the mark to fill");
    *target = r->stack[m - 1];
    const tio_pk_obj *t = pk_obj(r, *target);
    if (t->kind != want)
        return pk_err(r, TIO_E_CORRUPT, "fills a %s (expected a %s)", pk_kind_name(t->kind),
                      pk_kind_name(want));
    return pk_pop_mark(r, items, n);
}

/* The object the opcodes below the top `depth` items fill (APPEND, SETITEM). */
static int pk_top_is(pk_run *r, size_t depth, tio_pk_kind want, uint32_t *target) {
    if (r->sn - pk_floor(r) < depth + 1)
        return pk_err(r, TIO_E_CORRUPT, "needs %zu objects on the stack, found %zu", depth + 1,
                      r->sn - pk_floor(r));
    *target = r->stack[r->sn - depth - 1];
    const tio_pk_obj *t = pk_obj(r, *target);
    if (t->kind != want)
        return pk_err(r, TIO_E_CORRUPT, "fills a %s (expected a %s)", pk_kind_name(t->kind),
                      pk_kind_name(want));
    return TIO_OK;
}

static int pk_step(pk_run *r, int *stop) {
    uint32_t v[3], idx;
    const uint8_t *b = NULL, *s = NULL;
    const uint32_t *items = NULL;
    size_t n = 0, ml = 0;
    int rc;
    switch (r->op) {
    case 0x80: /* PROTO */
        if ((rc = pk_take(r, 1, &b))) return rc;
        if (b[0] > 5)
            return pk_err(r, TIO_E_UNSUPPORTED, "protocol %u (tensio reads protocols 0 to 5)", b[0]);
        r->p->protocol = b[0];
        return TIO_OK;
    case 0x95: /* FRAME: a hint; its length must lie inside the pickle */
        if ((rc = pk_take(r, 8, &b))) return rc;
        if (tio__ld64(b) > r->size - r->pos)
            return pk_err(r, TIO_E_TRUNCATED, "a frame of %" PRIu64 " bytes, %zu are left",
                          tio__ld64(b), r->size - r->pos);
        return TIO_OK;
    case '.':
        if (r->mn)
            return pk_err(r, TIO_E_CORRUPT, "%zu MARK%s still open (marks unbalanced)", r->mn,
                          r->mn == 1 ? "" : "s");
        if (r->sn != 1)
            return pk_err(r, TIO_E_CORRUPT, "%zu objects on the stack (expected 1, the result)",
                          r->sn);
        r->p->root = r->stack[0];
        *stop = 1;
        return TIO_OK;
    case '(':
        if (r->mn >= r->max_depth)
            return pk_err(r, TIO_E_LIMIT, "more than %" PRIu32 " marks open (max_pickle_depth)",
                          r->max_depth);
        if (r->mn == r->mcap) {
            size_t cap = r->mcap ? r->mcap * 2 : 16;
            size_t *m = realloc(r->marks, cap * sizeof *m);
            if (!m) return tio__nomem(r->err, r->fmt);
            r->marks = m;
            r->mcap = cap;
        }
        r->marks[r->mn++] = r->sn;
        return TIO_OK;
    case '0':
        if (r->sn > pk_floor(r)) {
            r->sn--;
            return TIO_OK;
        }
        return pk_pop_mark(r, &items, &n);
    case '1':
        return pk_pop_mark(r, &items, &n);
    case '2':
        if (r->sn == pk_floor(r)) return pk_err(r, TIO_E_CORRUPT, "nothing on the stack to copy");
        return pk_push(r, r->stack[r->sn - 1]);
    case 'N': return pk_push(r, 0);
    case 0x89: return pk_push(r, 1);
    case 0x88: return pk_push(r, 2);
    case 'I':
        if ((rc = pk_line(r, &s, &n))) return rc;
        if (n == 2 && s[0] == '0' && (s[1] == '0' || s[1] == '1')) return pk_push(r, s[1] == '1' ? 2 : 1);
        return pk_decimal(r, s, n);
    case 'L':
        if ((rc = pk_line(r, &s, &n))) return rc;
        return pk_decimal(r, s, n);
    case 'J':
        if ((rc = pk_take(r, 4, &b))) return rc;
        return pk_scalar(r, TIO_PK_INT, (int32_t)tio__ld32(b));
    case 'K':
        if ((rc = pk_take(r, 1, &b))) return rc;
        return pk_scalar(r, TIO_PK_INT, b[0]);
    case 'M':
        if ((rc = pk_take(r, 2, &b))) return rc;
        return pk_scalar(r, TIO_PK_INT, tio__ld16(b));
    case 0x8a: return pk_long(r, 1);
    case 0x8b: return pk_long(r, 4);
    case 'F':
        if ((rc = pk_line(r, &s, &n))) return rc;
        return pk_float_text(r, s, n);
    case 'G': {
        if ((rc = pk_take(r, 8, &b))) return rc;
        uint64_t u = 0;
        for (int k = 0; k < 8; k++) u = u << 8 | b[k]; /* big-endian */
        double f;
        memcpy(&f, &u, sizeof f);
        if ((rc = pk_new(r, TIO_PK_FLOAT, &idx))) return rc;
        pk_obj(r, idx)->u.f = f;
        return pk_push(r, idx);
    }
    case 'S': case 'V': case 'P': {
        if ((rc = pk_line(r, &s, &n))) return rc;
        if (r->op == 'S') { /* repr() of a str: its quotes dropped, escapes kept */
            if (n < 2 || (s[0] != '\'' && s[0] != '"') || s[n - 1] != s[0])
                return pk_err(r, TIO_E_CORRUPT, "a STRING operand that is not quoted");
            s++;
            n -= 2;
        }
        if ((rc = pk_bytes(r, TIO_PK_STR, s, n))) return rc;
        if (r->op != 'P') return TIO_OK;
        if ((rc = pk_pop(r, 1, v))) return rc;
        if ((rc = pk_new(r, TIO_PK_PERSID, &idx))) return rc;
        pk_obj(r, idx)->u.call.args = v[0];
        return pk_push(r, idx);
    }
    case 'T': return pk_counted(r, 4, 1, TIO_PK_STR);
    case 'U': return pk_counted(r, 1, 0, TIO_PK_STR);
    case 'X': return pk_counted(r, 4, 0, TIO_PK_STR);
    case 0x8c: return pk_counted(r, 1, 0, TIO_PK_STR);
    case 0x8d: return pk_counted(r, 8, 0, TIO_PK_STR);
    case 'B': return pk_counted(r, 4, 0, TIO_PK_BYTES);
    case 'C': return pk_counted(r, 1, 0, TIO_PK_BYTES);
    case 0x8e: return pk_counted(r, 8, 0, TIO_PK_BYTES);
    case 0x96: return pk_counted(r, 8, 0, TIO_PK_BYTES);
    case ')':
        if ((rc = pk_seq(r, TIO_PK_TUPLE, NULL, 0, &idx))) return rc;
        return pk_push(r, idx);
    case ']':
        if ((rc = pk_seq(r, TIO_PK_LIST, NULL, 0, &idx))) return rc;
        return pk_push(r, idx);
    case '}':
        if ((rc = pk_seq(r, TIO_PK_DICT, NULL, 0, &idx))) return rc;
        return pk_push(r, idx);
    case 0x8f:
        if ((rc = pk_seq(r, TIO_PK_SET, NULL, 0, &idx))) return rc;
        return pk_push(r, idx);
    case 't': case 'l': case 'd': case 0x91: {
        if ((rc = pk_pop_mark(r, &items, &n))) return rc;
        tio_pk_kind k = r->op == 't' ? TIO_PK_TUPLE : r->op == 'l' ? TIO_PK_LIST
                        : r->op == 'd' ? TIO_PK_DICT : TIO_PK_FROZENSET;
        if (k == TIO_PK_DICT && n % 2)
            return pk_err(r, TIO_E_CORRUPT, "%zu objects above the mark (expected key/value pairs)", n);
        if ((rc = pk_seq(r, k, items, n, &idx))) return rc;
        return pk_push(r, idx);
    }
    case 0x85: case 0x86: case 0x87:
        n = (size_t)(r->op - 0x84);
        if ((rc = pk_pop(r, n, v))) return rc;
        if ((rc = pk_seq(r, TIO_PK_TUPLE, v, n, &idx))) return rc;
        return pk_push(r, idx);
    case 'a':
        if ((rc = pk_top_is(r, 1, TIO_PK_LIST, &idx))) return rc;
        if ((rc = pk_pop(r, 1, v))) return rc;
        return pk_add(r, idx, v, 1);
    case 's':
        if ((rc = pk_top_is(r, 2, TIO_PK_DICT, &idx))) return rc;
        if ((rc = pk_pop(r, 2, v))) return rc;
        return pk_add(r, idx, v, 2);
    case 'e': case 'u': case 0x90: {
        tio_pk_kind want = r->op == 'e' ? TIO_PK_LIST : r->op == 'u' ? TIO_PK_DICT : TIO_PK_SET;
        if ((rc = pk_fill_target(r, want, &idx, &items, &n))) return rc;
        if (want == TIO_PK_DICT && n % 2)
            return pk_err(r, TIO_E_CORRUPT, "%zu objects above the mark (expected key/value pairs)", n);
        /* items point into the stack above its new top: nothing is pushed here */
        uint32_t step = want == TIO_PK_DICT ? 2 : 1;
        for (size_t k = 0; k < n; k += step)
            if ((rc = pk_add(r, idx, items + k, step))) return rc;
        return TIO_OK;
    }
    case 'c': case 'i': {
        const uint8_t *mod = NULL;
        if ((rc = pk_line(r, &mod, &ml))) return rc;
        if ((rc = pk_line(r, &s, &n))) return rc;
        uint32_t g;
        if ((rc = pk_global(r, mod, ml, s, n, &g))) return rc;
        if (r->op == 'c') return pk_push(r, g);
        if ((rc = pk_pop_mark(r, &items, &n))) return rc;
        if ((rc = pk_seq(r, TIO_PK_TUPLE, items, n, &idx))) return rc;
        return pk_call(r, g, idx, TIO_PK_NIL);
    }
    case 0x93: {
        if ((rc = pk_pop(r, 2, v))) return rc;
        const tio_pk_obj *mo = pk_obj(r, v[0]), *no = pk_obj(r, v[1]);
        if (mo->kind != TIO_PK_STR || no->kind != TIO_PK_STR)
            return pk_err(r, TIO_E_CORRUPT, "module and name are a %s and a %s (expected two str)",
                          pk_kind_name(mo->kind), pk_kind_name(no->kind));
        if ((rc = pk_global(r, mo->u.s, mo->n, no->u.s, no->n, &idx))) return rc;
        return pk_push(r, idx);
    }
    case 'o': {
        if ((rc = pk_pop_mark(r, &items, &n))) return rc;
        if (n == 0) return pk_err(r, TIO_E_CORRUPT, "no class above the mark");
        uint32_t cls = items[0];
        if ((rc = pk_seq(r, TIO_PK_TUPLE, items + 1, n - 1, &idx))) return rc;
        return pk_call(r, cls, idx, TIO_PK_NIL);
    }
    case 'R': case 0x81:
        if ((rc = pk_pop(r, 2, v))) return rc;
        return pk_call(r, v[0], v[1], TIO_PK_NIL);
    case 0x92:
        if ((rc = pk_pop(r, 3, v))) return rc;
        if (pk_obj(r, v[2])->kind != TIO_PK_DICT)
            return pk_err(r, TIO_E_CORRUPT, "keyword arguments are a %s (expected a dict)",
                          pk_kind_name(pk_obj(r, v[2])->kind));
        return pk_call(r, v[0], v[1], v[2]);
    case 'b': {
        if ((rc = pk_pop(r, 1, v))) return rc;
        if (r->sn == pk_floor(r)) return pk_err(r, TIO_E_CORRUPT, "no object to set the state of");
        tio_pk_obj *o = pk_obj(r, r->stack[r->sn - 1]);
        if (o->kind != TIO_PK_CALL && o->kind != TIO_PK_DICT)
            return pk_err(r, TIO_E_CORRUPT, "sets the state of a %s (expected an object)",
                          pk_kind_name(o->kind));
        o->state = v[0];
        return TIO_OK;
    }
    case 'Q':
        if ((rc = pk_pop(r, 1, v))) return rc;
        if ((rc = pk_new(r, TIO_PK_PERSID, &idx))) return rc;
        pk_obj(r, idx)->u.call.args = v[0];
        return pk_push(r, idx);
    case 'p': {
        uint64_t key = 0;
        if ((rc = pk_text_key(r, &key))) return rc;
        return pk_memo_put(r, key);
    }
    case 'q':
        if ((rc = pk_take(r, 1, &b))) return rc;
        return pk_memo_put(r, b[0]);
    case 'r':
        if ((rc = pk_take(r, 4, &b))) return rc;
        return pk_memo_put(r, tio__ld32(b));
    case 0x94:
        return pk_memo_put(r, r->memo_set);
    case 'g': {
        uint64_t key = 0;
        if ((rc = pk_text_key(r, &key))) return rc;
        return pk_memo_get(r, key);
    }
    case 'h':
        if ((rc = pk_take(r, 1, &b))) return rc;
        return pk_memo_get(r, b[0]);
    case 'j':
        if ((rc = pk_take(r, 4, &b))) return rc;
        return pk_memo_get(r, tio__ld32(b));
    case 0x82: case 0x83: case 0x84:
        return pk_err(r, TIO_E_UNSUPPORTED,
                      "an extension code (copyreg's registry names a global tensio cannot see)");
    case 0x97: case 0x98:
        return pk_err(r, TIO_E_UNSUPPORTED, "an out-of-band buffer (protocol 5; a file holds none)");
    default:
        return pk_err(r, TIO_E_CORRUPT, "not a pickle opcode");
    }
}

int tio__pickle_run(tio_pickle *p, const uint8_t *data, size_t size, uint64_t base,
                    const char *format, const tio_limits *lim, tio_error *err) {
    memset(p, 0, sizeof *p);
    p->first_unknown = SIZE_MAX;
    pk_run r;
    memset(&r, 0, sizeof r);
    r.p = p;
    r.d = data;
    r.size = size;
    r.base = base;
    r.fmt = format;
    r.err = err;
    r.max_objects = lim->max_pickle_objects;
    r.max_depth = lim->max_pickle_depth;
    int limited = 0;
    if (r.size > lim->max_pickle_bytes) {
        r.size = (size_t)lim->max_pickle_bytes;
        limited = 1;
    }
    /* 0 None, 1 False, 2 True: shared by every NONE/NEWFALSE/NEWTRUE */
    uint32_t idx = 0;
    int rc = pk_new(&r, TIO_PK_NONE, &idx);
    if (!rc) rc = pk_new(&r, TIO_PK_BOOL, &idx);
    if (!rc) rc = pk_new(&r, TIO_PK_BOOL, &idx);
    if (!rc) {
        p->obj[0].off = p->obj[1].off = p->obj[2].off = base;
        p->obj[2].u.i = 1;
    }
    int stop = 0;
    while (!rc && !stop) {
        if (r.pos >= r.size) {
            rc = limited ? tio__err(err, TIO_E_LIMIT, format, pk_off(base + r.pos),
                                    "the pickle has no STOP in its first %" PRIu64
                                    " bytes (max_pickle_bytes)",
                                    lim->max_pickle_bytes)
                         : tio__err(err, TIO_E_TRUNCATED, format, pk_off(base + r.pos),
                                    "the pickle ends without a STOP opcode");
            break;
        }
        r.op_at = base + r.pos;
        r.op = data[r.pos++];
        rc = pk_step(&r, &stop);
    }
    if (rc == TIO_E_TRUNCATED && limited) { /* the pickle goes on past the limit */
        char was[sizeof err->message], pre[96];
        const char *m = err->message;
        int pn = snprintf(pre, sizeof pre, "%s: offset %lld: ", format, (long long)err->offset);
        size_t skip = pn > 0 && strncmp(m, pre, (size_t)pn) == 0 ? (size_t)pn : 0; /* said again */
        snprintf(was, sizeof was, "%s", m + skip);
        rc = tio__err(err, TIO_E_LIMIT, format, err->offset,
                      "the pickle is larger than max_pickle_bytes (%" PRIu64
                      "), which it is read within: %s",
                      lim->max_pickle_bytes, was);
    }
    if (!rc) p->end = base + r.pos;
    if (p->first_unknown == SIZE_MAX) p->first_unknown = p->count;
    free(r.stack);
    free(r.marks);
    free(r.memo);
    if (rc) tio__pickle_free(p);
    return rc;
}

void tio__pickle_free(tio_pickle *p) {
    for (size_t i = 0; i < p->nheap; i++) free(p->obj[p->heap[i]].u.kids);
    free(p->heap);
    for (struct tio_pk_chunk *c = p->chunks, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(p->obj);
    memset(p, 0, sizeof *p);
}

const tio_pk_obj *tio__pk_item(const tio_pickle *p, const tio_pk_obj *o, size_t k) {
    if (!o) return NULL;
    size_t slots = o->kind == TIO_PK_DICT ? 2 * (size_t)o->n : o->n;
    if ((o->kind != TIO_PK_TUPLE && o->kind != TIO_PK_LIST && o->kind != TIO_PK_DICT &&
         o->kind != TIO_PK_SET && o->kind != TIO_PK_FROZENSET) ||
        k >= slots)
        return NULL;
    return tio__pk(p, o->u.kids[k]);
}

const tio_pk_vocab_entry *tio__pk_callee(const tio_pickle *p, const tio_pk_obj *o) {
    if (!o || o->kind != TIO_PK_CALL) return NULL;
    const tio_pk_obj *f = tio__pk(p, o->u.call.func);
    return f && f->kind == TIO_PK_GLOBAL ? tio__pk_vocab_at(f->vocab) : NULL;
}
