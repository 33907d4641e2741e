/* FlatBuffers verifier driven by schema data (tio_fb_table).
 *
 * The equivalent of flatcc's verify_as_root / the C++ Verifier: every table
 * reachable through the schema is checked before anything is read. The walk
 * is iterative (an explicit stack on the heap), so neither a deep buffer nor a
 * large max_depth can exhaust the C stack; depth is bounded by
 * lim->max_depth and the total number of tables visited (a DAG may share
 * them) by lim->max_tables, and the vtable slots of the tables visited by
 * lim->max_slots: a reader that looks at every slot of a table (for fields
 * of a newer schema) then does work linear in the buffer, even where one
 * 64 KiB vtable serves every table. uoffsets are unsigned and must be in
 * [1, 2^31), so every reference points strictly forward: there are no
 * cycles, only shared subtrees, which the table budget bounds. */
#include "flatbuf/flatbuf.h"

#include <stdio.h>
#include <stdlib.h>

#define FB_DEFAULT_MAX_DEPTH 64u
#define FB_DEFAULT_MAX_TABLES 1000000u
/* Default slot budget: 2 per byte of buffer + 4096. */
#define FB_DEFAULT_SLOTS_PER_BYTE 2u
#define FB_DEFAULT_SLOTS_SLACK 4096u

/* One table being walked. */
typedef struct fb_frame {
    const tio_fb_table *t;
    size_t pos;          /* table start */
    size_t vt;           /* vtable start */
    unsigned slots;      /* field slots in the vtable */
    uint16_t objsize;
    unsigned next;       /* next field id to check */
    /* a vector of tables whose elements are being walked */
    unsigned vfield;     /* its field id */
    size_t vdata;        /* position of element 0 */
    uint32_t vcount, vnext;
} fb_frame;

typedef struct fb_verifier {
    const uint8_t *buf;
    size_t len;
    const char *format;
    uint64_t base;
    tio_error *err;
    uint32_t max_depth;
    uint64_t max_tables;
    uint64_t tables;
    uint64_t max_slots;
    uint64_t slots;      /* vtable slots of the tables visited */
    fb_frame *stack;
    size_t depth, cap;
    tio_headsrc *head;   /* NULL, or where byte vectors' counts are read from */
    tio_fb_blobs *blobs; /* NULL, or the list of byte vectors checked */
    tio_preads *pre;     /* NULL, or counts read ahead (tio_fb_limits) */
    const tio_fb_ahead *ahead;
    size_t nahead;
} fb_verifier;

/* The count of the byte vector at target into out (4 bytes), when the
 * thread reading ahead has read it. */
static bool ahead_take(const fb_verifier *v, size_t target, uint8_t *out) {
    size_t lo = 0, hi = v->nahead;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v->ahead[mid].pos < target) lo = mid + 1;
        else hi = mid;
    }
    return lo < v->nahead && v->ahead[lo].pos == target &&
           tio__preads_take(v->pre, v->ahead[lo].i, out);
}

/* Lists a byte vector checked; out of memory, the list stops growing (a
 * reader then reads the count again). */
static void note_blob(fb_verifier *v, size_t pos, uint32_t count) {
    tio_fb_blobs *b = v->blobs;
    if (b->n == b->cap) {
        size_t ncap = b->cap ? b->cap * 2 : 64;
        tio_fb_blob *nv = ncap > SIZE_MAX / sizeof *nv ? NULL : realloc(b->v, ncap * sizeof *nv);
        if (!nv) return;
        b->v = nv;
        b->cap = ncap;
    }
    b->v[b->n].pos = pos;
    b->v[b->n].count = count;
    b->n++;
}

static int blob_cmp(const void *a, const void *b) {
    size_t x = ((const tio_fb_blob *)a)->pos, y = ((const tio_fb_blob *)b)->pos;
    return x < y ? -1 : x > y;
}

/* Where a value was reached from, for messages: "Graph.nodes[3]". */
typedef struct fb_where {
    const char *table; /* enclosing table's name, or NULL for the root */
    const char *field; /* field name */
    int64_t index;     /* vector index, or -1 */
    const char *type;  /* type of the value ("Node"), or NULL */
} fb_where;

static const char *nz(const char *s) { return s ? s : "?"; }

/* Fills *err with "<format>: offset <base+pos>: <where>: <what>". */
static int fail(fb_verifier *v, int code, size_t pos, const fb_where *w, const char *fmt,
                ...) TIO_PRINTF(5, 6);

static int fail(fb_verifier *v, int code, size_t pos, const fb_where *w, const char *fmt,
                ...) {
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    char idx[32] = "";
    if (w->index >= 0) snprintf(idx, sizeof idx, "[%lld]", (long long)w->index);
    char type[80] = "";
    if (w->type) snprintf(type, sizeof type, " (%s)", w->type);
    uint64_t off = v->base + (uint64_t)pos;
    int64_t o = off > (uint64_t)INT64_MAX ? -1 : (int64_t)off;
    if (w->table)
        return tio__err(v->err, code, v->format, o, "%s.%s%s%s: %s", w->table,
                        nz(w->field), idx, type, what);
    return tio__err(v->err, code, v->format, o, "%s%s%s: %s", nz(w->field), idx, type,
                    what);
}

/* Follows the uoffset at `at` (4 bytes, already known to be in bounds).
 * C++ rules: not 0 (would point at itself), below 2^31, target in bounds. */
static int follow(fb_verifier *v, size_t at, const fb_where *w, size_t *target) {
    uint32_t u = tio__ld32(v->buf + at);
    if (u == 0)
        return fail(v, TIO_E_CORRUPT, at, w, "uoffset is 0 (points to itself)");
    if (u > (uint32_t)INT32_MAX)
        return fail(v, TIO_E_BOUNDS, at, w,
                    "uoffset %lu is beyond the 2 GiB FlatBuffers limit",
                    (unsigned long)u);
    size_t t;
    if (tio__add_ovf(at, u, &t) || t >= v->len)
        return fail(v, TIO_E_BOUNDS, at, w,
                    "uoffset %lu points to %llu, outside the buffer of %llu bytes",
                    (unsigned long)u, (unsigned long long)(v->base + at + u),
                    (unsigned long long)v->len);
    *target = t;
    return TIO_OK;
}

/* Checks that [pos, pos+n) lies in the buffer (pos itself is < len). */
static bool fits(const fb_verifier *v, size_t pos, size_t n) {
    return pos <= v->len && n <= v->len - pos;
}

/* Checks a table header at `pos` and pushes a frame for it. */
static int push_table(fb_verifier *v, size_t pos, const tio_fb_table *t, const fb_where *w) {
    if (v->depth >= v->max_depth)
        return fail(v, TIO_E_LIMIT, pos, w, "table nesting depth %llu exceeds the limit %lu (max_depth)",
                    (unsigned long long)v->depth + 1, (unsigned long)v->max_depth);
    if (v->tables >= v->max_tables)
        return fail(v, TIO_E_LIMIT, pos, w,
                    "more than %llu tables visited (table budget exhausted)",
                    (unsigned long long)v->max_tables);
    v->tables++;
    if (t->nfields > 0 && !t->fields)
        return tio__err(v->err, TIO_E_ARGUMENT, v->format, -1, "schema: %s has no fields",
                        nz(t->name));
    if (pos % 4 != 0)
        return fail(v, TIO_E_CORRUPT, pos, w, "table is not 4-byte aligned");
    if (!fits(v, pos, 4))
        return fail(v, TIO_E_TRUNCATED, pos, w,
                    "table soffset needs 4 bytes, %llu left in the buffer",
                    (unsigned long long)(v->len - pos));
    int32_t so = (int32_t)tio__ld32(v->buf + pos);
    int64_t vt = (int64_t)pos - (int64_t)so;
    if (vt < 0 || (uint64_t)vt >= (uint64_t)v->len)
        return fail(v, TIO_E_BOUNDS, pos, w,
                    "soffset %ld puts the vtable at %lld, outside the buffer of %llu bytes",
                    (long)so, (long long)v->base + vt, (unsigned long long)v->len);
    size_t vtp = (size_t)vt;
    if (vtp % 2 != 0)
        return fail(v, TIO_E_CORRUPT, vtp, w, "vtable is not 2-byte aligned");
    if (!fits(v, vtp, 4))
        return fail(v, TIO_E_TRUNCATED, vtp, w, "vtable header runs past the end of the buffer");
    uint16_t vtsize = tio__ld16(v->buf + vtp);
    uint16_t objsize = tio__ld16(v->buf + vtp + 2);
    if (vtsize % 2 != 0)
        return fail(v, TIO_E_CORRUPT, vtp, w, "vtable size %u is odd", (unsigned)vtsize);
    if (vtsize < 4)
        return fail(v, TIO_E_CORRUPT, vtp, w, "vtable size %u is smaller than 4",
                    (unsigned)vtsize);
    if (!fits(v, vtp, vtsize))
        return fail(v, TIO_E_TRUNCATED, vtp, w,
                    "vtable of %u bytes runs past the end of the buffer (%llu left)",
                    (unsigned)vtsize, (unsigned long long)(v->len - vtp));
    if (objsize < 4)
        return fail(v, TIO_E_CORRUPT, vtp, w, "object size %u is smaller than 4",
                    (unsigned)objsize);
    if (!fits(v, pos, objsize))
        return fail(v, TIO_E_TRUNCATED, pos, w,
                    "table of %u bytes runs past the end of the buffer (%llu left)",
                    (unsigned)objsize, (unsigned long long)(v->len - pos));
    unsigned slots = (unsigned)(vtsize - 4u) / 2u;
    if (tio__add64_ovf(v->slots, slots, &v->slots) || v->slots > v->max_slots)
        return fail(v, TIO_E_LIMIT, vtp, w,
                    "the tables visited so far have more than %llu vtable slots in total "
                    "(this vtable has %u; slot budget exhausted)",
                    (unsigned long long)v->max_slots, slots);
    if (v->depth == v->cap) {
        size_t ncap = v->cap ? v->cap * 2 : 16;
        fb_frame *ns = realloc(v->stack, ncap * sizeof *ns);
        if (!ns) return tio__nomem(v->err, v->format);
        v->stack = ns;
        v->cap = ncap;
    }
    fb_frame *f = &v->stack[v->depth++];
    f->t = t;
    f->pos = pos;
    f->vt = vtp;
    f->slots = slots;
    f->objsize = objsize;
    f->next = 0;
    f->vfield = 0;
    f->vdata = 0;
    f->vcount = 0;
    f->vnext = 0;
    return TIO_OK;
}

/* Offset of field `id` in the table (0 = absent). */
static uint16_t slot(const fb_verifier *v, const fb_frame *f, unsigned id) {
    if (id >= f->slots) return 0;
    return tio__ld16(v->buf + f->vt + 4 + 2 * (size_t)id);
}

/* A string at `target` (inside the buffer). */
static int check_string(fb_verifier *v, size_t target, const fb_where *w) {
    if (target % 4 != 0)
        return fail(v, TIO_E_CORRUPT, target, w, "string is not 4-byte aligned");
    if (!fits(v, target, 4))
        return fail(v, TIO_E_TRUNCATED, target, w,
                    "string length runs past the end of the buffer");
    uint32_t n = tio__ld32(v->buf + target);
    size_t need;
    if (tio__add_ovf(n, 1, &need) || !fits(v, target + 4, need))
        return fail(v, TIO_E_TRUNCATED, target, w,
                    "string of %lu bytes + NUL runs past the end of the buffer (%llu left)",
                    (unsigned long)n, (unsigned long long)(v->len - target - 4));
    if (v->buf[target + 4 + n] != 0)
        return fail(v, TIO_E_CORRUPT, target + 4 + n, w,
                    "string of %lu bytes is not NUL-terminated (found 0x%02x)",
                    (unsigned long)n, (unsigned)v->buf[target + 4 + n]);
    return TIO_OK;
}

/* A vector header at `target`; returns its count. */
static int check_vector(fb_verifier *v, size_t target, size_t elem_size, const fb_where *w,
                        uint32_t *count) {
    if (target % 4 != 0)
        return fail(v, TIO_E_CORRUPT, target, w, "vector is not 4-byte aligned");
    if (!fits(v, target, 4))
        return fail(v, TIO_E_TRUNCATED, target, w,
                    "vector count runs past the end of the buffer");
    /* a vector of bytes is a blob (weights): its count sits beside its data,
     * away from the tables, and is read through head (tio__fb_bytes) */
    uint8_t ahead[4];
    const uint8_t *c = NULL;
    if (elem_size == 1 && v->pre && ahead_take(v, target, ahead)) c = ahead;
    else if (elem_size == 1 && v->head) c = tio__headsrc_at(v->head, target, 4);
    uint32_t n = tio__ld32(c ? c : v->buf + target);
    size_t bytes;
    if (tio__mul_ovf(n, elem_size, &bytes) || !fits(v, target + 4, bytes))
        return fail(v, TIO_E_TRUNCATED, target, w,
                    "vector of %lu elements of %zu bytes runs past the end of the buffer "
                    "(%llu bytes left)",
                    (unsigned long)n, elem_size, (unsigned long long)(v->len - target - 4));
    if (elem_size > 4 && (target + 4) % 8 != 0)
        return fail(v, TIO_E_CORRUPT, target + 4, w,
                    "vector data of %zu-byte elements is not 8-byte aligned", elem_size);
    if (elem_size == 1 && v->blobs) note_blob(v, target, n);
    *count = n;
    return TIO_OK;
}

static int schema_error(fb_verifier *v, const fb_where *w, const char *what) {
    return tio__err(v->err, TIO_E_ARGUMENT, v->format, -1, "schema: %s.%s: %s",
                    nz(w->table), nz(w->field), what);
}

/* Checks field `id` of the top frame. May push a child frame (or start a
 * vector-of-tables walk in the frame). */
static int check_field(fb_verifier *v, size_t fi, unsigned id) {
    fb_frame *f = &v->stack[fi];
    const tio_fb_table *t = f->t;
    const tio_fb_field *fd = &t->fields[id];
    fb_where w = {t->name, fd->name, -1, NULL};
    int kind = fd->kind;
    if (kind == TIO_FB_NONE) return TIO_OK;
    uint16_t off = slot(v, f, id);
    if (off == 0) {
        if (fd->required)
            return fail(v, TIO_E_CORRUPT, f->pos, &w, "required field (id %u) is missing", id);
        return TIO_OK;
    }
    size_t size;
    if (kind == TIO_FB_UNION_TYPE)
        size = 1;
    else if (kind >= TIO_FB_STRING)
        size = 4;
    else
        size = tio__fb_scalar_size(kind);
    if (size == 0) return schema_error(v, &w, "unknown field kind");
    if ((size_t)off + size > f->objsize)
        return fail(v, TIO_E_CORRUPT, f->pos, &w,
                    "field at table offset %u of %zu bytes exceeds the object size %u",
                    (unsigned)off, size, (unsigned)f->objsize);
    size_t fp = f->pos + off; /* inside the table, which is in bounds */
    if (fp % size != 0)
        return fail(v, TIO_E_CORRUPT, fp, &w, "field of %zu bytes is not %zu-byte aligned",
                    size, size);
    if (size != 4 || kind < TIO_FB_STRING || kind == TIO_FB_UNION_TYPE) return TIO_OK;

    size_t target;
    int rc;
    switch (kind) {
    case TIO_FB_STRING:
        if ((rc = follow(v, fp, &w, &target))) return rc;
        return check_string(v, target, &w);
    case TIO_FB_TABLE:
        if (!fd->table) return schema_error(v, &w, "table field without a table");
        w.type = fd->table->name;
        if ((rc = follow(v, fp, &w, &target))) return rc;
        return push_table(v, target, fd->table, &w);
    case TIO_FB_UNION: {
        const tio_fb_union *un = fd->un;
        if (!un || id == 0 || t->fields[id - 1].kind != TIO_FB_UNION_TYPE)
            return schema_error(v, &w, "union value without a preceding type field");
        uint16_t toff = slot(v, f, id - 1);
        /* the tag field was checked just before (ids go in order) */
        uint8_t tag = toff ? v->buf[f->pos + toff] : 0;
        if (tag == 0 || tag > un->nmembers) return TIO_OK; /* NONE, or a newer member */
        const tio_fb_table *mt = un->members[tag - 1];
        if (!mt) return schema_error(v, &w, "union member without a table");
        w.type = mt->name;
        if ((rc = follow(v, fp, &w, &target))) return rc;
        return push_table(v, target, mt, &w);
    }
    case TIO_FB_VECTOR: {
        int ek = fd->elem;
        size_t es = (ek == TIO_FB_STRING || ek == TIO_FB_TABLE) ? 4 : tio__fb_scalar_size(ek);
        if (es == 0) return schema_error(v, &w, "vector of an unknown element kind");
        uint32_t n = 0;
        if ((rc = follow(v, fp, &w, &target))) return rc;
        if ((rc = check_vector(v, target, es, &w, &n))) return rc;
        if (ek == TIO_FB_STRING) {
            for (uint32_t i = 0; i < n; i++) {
                size_t ep = target + 4 + 4 * (size_t)i, st;
                w.index = i;
                if ((rc = follow(v, ep, &w, &st))) return rc;
                if ((rc = check_string(v, st, &w))) return rc;
            }
        } else if (ek == TIO_FB_TABLE) {
            if (!fd->table) return schema_error(v, &w, "vector of tables without a table");
            f->vfield = id;
            f->vdata = target + 4;
            f->vcount = n;
            f->vnext = 0;
        }
        return TIO_OK;
    }
    default:
        return schema_error(v, &w, "unknown field kind");
    }
}

/* One step of the walk on the top frame. */
static int step(fb_verifier *v) {
    size_t fi = v->depth - 1;
    fb_frame *f = &v->stack[fi];
    if (f->vnext < f->vcount) {
        uint32_t i = f->vnext++;
        const tio_fb_field *fd = &f->t->fields[f->vfield];
        fb_where w = {f->t->name, fd->name, (int64_t)i, fd->table->name};
        size_t ep = f->vdata + 4 * (size_t)i, target;
        int rc = follow(v, ep, &w, &target);
        if (rc) return rc;
        return push_table(v, target, fd->table, &w);
    }
    if (f->next < f->t->nfields) {
        unsigned id = f->next++;
        return check_field(v, fi, id);
    }
    v->depth--;
    return TIO_OK;
}

int tio__fb_verify(const uint8_t *buf, size_t len, const tio_fb_table *root,
                   const tio_fb_limits *lim, const char *format, uint64_t base,
                   tio_error *err) {
    if (!root || (!buf && len > 0))
        return tio__err(err, TIO_E_ARGUMENT, format, -1, "verify: no buffer or no schema");
    if (root->nfields > 0 && !root->fields)
        return tio__err(err, TIO_E_ARGUMENT, format, -1, "schema: %s has no fields",
                        nz(root->name));
    fb_verifier v = {0};
    v.buf = buf;
    v.len = len;
    v.format = format;
    v.base = base;
    v.err = err;
    v.max_depth = lim && lim->max_depth ? lim->max_depth : FB_DEFAULT_MAX_DEPTH;
    v.max_tables = lim && lim->max_tables ? lim->max_tables : FB_DEFAULT_MAX_TABLES;
    v.head = lim ? tio__fb_head(lim->head, buf, len) : NULL;
    v.blobs = lim ? lim->blobs : NULL;
    if (lim && lim->pre && lim->ahead && v.head) {
        v.pre = lim->pre;
        v.ahead = lim->ahead;
        v.nahead = lim->nahead;
    }
    v.max_slots = lim && lim->max_slots ? lim->max_slots : FB_DEFAULT_SLOTS_PER_BYTE * (uint64_t)len +
                                                              FB_DEFAULT_SLOTS_SLACK;
    fb_where w = {NULL, "root", -1, root->name};
    if (len < 4)
        return fail(&v, TIO_E_TRUNCATED, 0, &w,
                    "buffer of %zu bytes is too short for the root offset", len);
    size_t pos;
    int rc = follow(&v, 0, &w, &pos);
    if (rc == TIO_OK) rc = push_table(&v, pos, root, &w);
    while (rc == TIO_OK && v.depth > 0) rc = step(&v);
    free(v.stack);
    if (v.blobs && v.blobs->n > 1) /* for tio__fb_bytes' lookups */
        qsort(v.blobs->v, v.blobs->n, sizeof *v.blobs->v, blob_cmp);
    return rc;
}
