/*
 * Tengine tmfile (tm2, .tmfile) reading: the probe and the decode. Every
 * offset, size and count is checked before use; constants with data become
 * tensors of the container (views into the file), the whole model becomes
 * the container's graph (one value per tensor, one node per node, params as
 * attributes). See docs/formats/tmfile.md.
 */
#include "core/internal.h"
#include "graph/budget.h"
#include "graph/graph.h"
#include "tmfile/opmap.h"
#include "tmfile/read.h"
#include "tmfile/tmfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------- probe */

int tio__tmfile_probe(const uint8_t *d, size_t n) {
    if (n < TM_HEADER_LEN + TM_MODEL_LEN) return 0;
    if (tio__ld16(d) != 2) return 0;
    uint64_t root = tio__ld32(d + 8);
    if (root < TM_HEADER_LEN || root + TM_MODEL_LEN > n) return 0;
    uint64_t vs = tio__ld32(d + root + 8);
    if (vs < TM_HEADER_LEN || vs + 8 > n || tio__ld32(d + vs) != 1) return 0;
    uint64_t sub = tio__ld32(d + vs + 4);
    if (sub < TM_HEADER_LEN || sub + TM_SUB_OLD > n) return 0;
    uint64_t nodes = tio__ld32(d + sub + 20), tensors = tio__ld32(d + sub + 24);
    if (nodes < TM_HEADER_LEN || nodes + 4 > n || tensors < TM_HEADER_LEN || tensors + 4 > n)
        return 0;
    return 60;
}

/* ------------------------------------------------------------------ read */

#define TM_LBL_CAP 160

/* Counts decoded objects (nodes, tensors, dims, quant params, attribute
 * values). Vectors may be shared between structs, so the total is bounded
 * both by max_objects and by the input's size: memory stays proportional to
 * the input. */
static int tm_count(tm_reader *r, uint64_t n, int64_t off, tio_error *err) {
    return tio__objects_take(&r->objects, n, r->budget, TM_FMT, off,
                             "nodes, tensors, dims, quant params, attribute values",
                             "and at most 16 per byte of input", err);
}

static const char *tm_cur(const tm_reader *r, char *buf);
/* `what` of the functions below: what is read, for messages, or NULL for
 * the current object's label (tm_cur), made only when a message needs it */
#define TM_WHAT(what, buf) ((what) ? (what) : tm_cur(r, (buf)))

/* A struct of `len` bytes at `off`, which must be set and inside the file. */
static int tm_struct(tm_reader *r, uint32_t off, uint32_t len, const char *what, int64_t ref,
                     const uint8_t **p, tio_error *err) {
    char wb[TM_LBL_CAP];
    if (off == 0)
        return tio__err(err, TIO_E_CORRUPT, TM_FMT, ref, "%s: the offset is 0 (not set)", TM_WHAT(what, wb));
    if ((uint64_t)off + len > r->size)
        return tio__err(err, TIO_E_BOUNDS, TM_FMT, ref,
                        "%s at offset %u (%u bytes) extends past the end of the file (%zu "
                        "bytes)",
                        TM_WHAT(what, wb), off, len, r->size);
    *p = r->d + off;
    return TIO_OK;
}

/* The bytes of a struct tm_struct checked (p, in the mapping) copied into
 * out (len bytes): read by pread() through the header window when the input
 * is a mapped file, so that the structs a tmfile keeps beside each tensor's
 * buffer do not cost a page fault each (docs/performance.md). */
static void tm_fetch(tm_reader *r, uint32_t off, uint32_t len, const uint8_t *p, uint8_t *out) {
    const tio_headsrc *h = r->ctx->head;
    const uint8_t *w = h && h->base == r->d ? tio__headsrc_at(r->ctx->head, off, len) : NULL;
    memcpy(out, w ? w : p, len);
}

/* tm_struct's checks, then tm_fetch. */
static int tm_copy(tm_reader *r, uint32_t off, uint32_t len, const char *what, int64_t ref,
                   uint8_t *out, tio_error *err) {
    const uint8_t *p = NULL;
    int rc = tm_struct(r, off, len, what, ref, &p, err);
    if (!rc) tm_fetch(r, off, len, p, out); /* p: the checked bytes in the mapping */
    return rc;
}

/* A vector (u32 v_num, then v_num elements of `esz` bytes) at `off`; the
 * count is checked against the bytes left before anything else. */
static int tm_vector(tm_reader *r, uint32_t off, uint32_t esz, const char *what, int64_t ref,
                     uint32_t *count, const uint8_t **elems, tio_error *err) {
    char wb[TM_LBL_CAP];
    uint8_t cnt[4];
    int rc = tm_copy(r, off, 4, what, ref, cnt, err); /* the count by pread */
    if (rc) return rc;
    uint32_t n = tio__ld32(cnt);
    uint64_t left = r->size - (uint64_t)off - 4;
    if ((uint64_t)n * esz > left)
        return tio__err(err, TIO_E_BOUNDS, TM_FMT, off,
                        "%s: a vector of %u entries (%llu bytes) extends past the end of the "
                        "file (%llu bytes left)",
                        TM_WHAT(what, wb), n, (unsigned long long)n * esz, (unsigned long long)left);
    *count = n;
    *elems = r->d + off + 4; /* a view: the caller reads what it needs */
    return TIO_OK;
}

/* A TM2_String as a new C string (*s NULL when off is 0). The stored size
 * counts the terminating NUL; a string without one is taken whole. The
 * graph's copy of it is charged to the memory budget. */
static int tm_string_in(tm_reader *r, uint32_t off, const char *what, int64_t ref, char **s,
                        bool scratch, tio_error *err) {
    char wb[TM_LBL_CAP];
    *s = NULL;
    if (off == 0) return TIO_OK;
    uint8_t p[TM_STRING_LEN];
    int rc = tm_copy(r, off, TM_STRING_LEN, what, ref, p, err);
    if (rc) return rc;
    uint32_t n = tio__ld32(p), data = tio__ld32(p + 4);
    if (n > r->ctx->limits.max_name_bytes)
        return tio__err(err, TIO_E_LIMIT, TM_FMT, off,
                        "%s: string of %u bytes exceeds the limit of %u", TM_WHAT(what, wb), n,
                        r->ctx->limits.max_name_bytes);
    if (n && data == 0)
        return tio__err(err, TIO_E_CORRUPT, TM_FMT, off,
                        "%s: a string of %u bytes whose data offset is 0 (not set)", TM_WHAT(what, wb), n);
    if (n && (uint64_t)data + n > r->size)
        return tio__err(err, TIO_E_BOUNDS, TM_FMT, off,
                        "%s: string data at offset %u (%u bytes) extends past the end of the "
                        "file (%zu bytes)",
                        TM_WHAT(what, wb), data, n, r->size);
    /* the bytes by pread too (valid until the window's next read: none
     * before they are copied below) */
    const uint8_t *sp = (const uint8_t *)"";
    if (n) {
        const tio_headsrc *h = r->ctx->head;
        sp = h && h->base == r->d ? tio__headsrc_at(r->ctx->head, data, n) : NULL;
        if (!sp) sp = r->d + data;
    }
    size_t len = n;
    if (len && sp[len - 1] == 0) len--;
    const uint8_t *nul = memchr(sp, 0, len);
    if (nul) {
        rc = tio__warn(r->ctx, TM_FMT, (int64_t)data, err,
                       "%s: the string has a NUL byte at position %zu of %u; Tengine reads it "
                       "as a C string, so the rest is ignored",
                       TM_WHAT(what, wb), (size_t)(nul - sp), n);
        if (rc) return rc;
        len = (size_t)(nul - sp);
    }
    rc = tm_mem(r, tio__cost_str(len), off, err);
    if (rc) return rc;
    if (scratch && len + 1 > r->scratch_cap) {
        size_t cap = len + 1 > 2 * r->scratch_cap ? len + 1 : 2 * r->scratch_cap;
        char *b = realloc(r->scratch, cap);
        if (!b) return tio__nomem(err, TM_FMT);
        r->scratch = b;
        r->scratch_cap = cap;
    }
    *s = scratch ? r->scratch : malloc(len + 1);
    if (!*s) return tio__nomem(err, TM_FMT);
    memcpy(*s, sp, len);
    (*s)[len] = 0;
    return TIO_OK;
}

static int tm_string(tm_reader *r, uint32_t off, const char *what, int64_t ref, char **s,
                     tio_error *err) {
    return tm_string_in(r, off, what, ref, s, false, err);
}

/* The name of a tensor or node, into the reader's scratch (valid until the
 * next name: the graph and the container keep copies). */
static int tm_name(tm_reader *r, uint32_t off, int64_t ref, char **s, tio_error *err) {
    return tm_string_in(r, off, NULL, ref, s, true, err);
}

static int tm_prop(tio_container *c, const char *key, const char *fmt, ...) TIO_PRINTF(3, 4);
static int tm_prop(tio_container *c, const char *key, const char *fmt, ...) {
    char buf[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return tio__kv_set(&c->props, key, buf, NULL);
}

static int tm_meta(tio_graph *g, const char *key, const char *fmt, ...) TIO_PRINTF(3, 4);
static int tm_meta(tio_graph *g, const char *key, const char *fmt, ...) {
    char buf[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return tio_graph_meta_set(g, key, buf, NULL);
}

/* Labels for messages are made for every tensor and node (and used only by
 * the few that fail): built by appending, not by snprintf, which was half of
 * opening a 10,000-tensor model. buf[cap] stays NUL-terminated, cut like
 * snprintf cuts. */
static void tm_put(char *buf, size_t cap, size_t *len, const char *s, size_t n) {
    if (*len + n >= cap) n = cap - 1 - *len;
    memcpy(buf + *len, s, n);
    *len += n;
    buf[*len] = '\0';
}

static void tm_puts(char *buf, size_t cap, size_t *len, const char *s) {
    tm_put(buf, cap, len, s, strlen(s));
}

static void tm_putu(char *buf, size_t cap, size_t *len, uint64_t v) {
    char d[TIO__DEC_CAP];
    tm_puts(buf, cap, len, tio__u64_dec(d, v));
}

/* "KIND I" or "KIND I ('NAME')", the name cut at 48 bytes with "...". */
static void tm_lbl(char *buf, size_t cap, const char *kind, size_t i, const char *name) {
    size_t len = 0;
    buf[0] = '\0';
    tm_puts(buf, cap, &len, kind);
    tm_put(buf, cap, &len, " ", 1);
    tm_putu(buf, cap, &len, i);
    if (name) {
        size_t n = strlen(name);
        tm_put(buf, cap, &len, " ('", 3);
        tm_put(buf, cap, &len, name, n > 48 ? 48 : n);
        if (n > 48) tm_put(buf, cap, &len, "...", 3);
        tm_put(buf, cap, &len, "')", 2);
    }
}

/* "A: B" or, with c, "A: B.C". */
static void tm_what(char *buf, size_t cap, const char *a, const char *b, const char *c) {
    size_t len = 0;
    buf[0] = '\0';
    tm_puts(buf, cap, &len, a);
    tm_put(buf, cap, &len, ": ", 2);
    tm_puts(buf, cap, &len, b);
    if (c) {
        tm_put(buf, cap, &len, ".", 1);
        tm_puts(buf, cap, &len, c);
    }
}

/* The current object's label (see tm_reader), made into buf
 * (TM_LBL_CAP bytes). */
static const char *tm_cur(const tm_reader *r, char *buf) {
    tm_lbl(buf, TM_LBL_CAP, r->cur_kind ? r->cur_kind : "object", r->cur_i, r->cur_name);
    if (r->cur_sfx) {
        size_t len = strlen(buf);
        tm_put(buf, TM_LBL_CAP, &len, ": ", 2);
        tm_puts(buf, TM_LBL_CAP, &len, r->cur_sfx);
        if (r->cur_n >= 0) {
            tm_put(buf, TM_LBL_CAP, &len, " ", 1);
            tm_putu(buf, TM_LBL_CAP, &len, (uint64_t)r->cur_n);
        }
    }
    return buf;
}

static void tm_begin(tm_reader *r, const char *kind, size_t i) {
    r->cur_kind = kind;
    r->cur_i = i;
    r->cur_name = NULL;
    r->cur_sfx = NULL;
    r->cur_n = -1;
}

static float tm_f32(const uint8_t *p) {
    uint32_t u = tio__ld32(p);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* One tensor: its value in the graph, and for a constant with data a
 * tensor of the container. */
static int tm_tensor(tm_reader *r, size_t i, uint32_t off, int64_t slot, uint32_t nbuf,
                     tio_error *err) {
    tio_read_ctx *ctx = r->ctx;
    tm_tinfo *ti = &r->t[i];
    uint8_t p[TM_TENSOR_LEN];
    char lb[TM_LBL_CAP]; /* the label, when a message needs it */
    tm_begin(r, "tensor", i);
    int rc = tm_copy(r, off, TM_TENSOR_LEN, NULL, slot, p, err);
    if (rc) return rc;
    ti->off = off;
    uint32_t tid = tio__ld32(p), bid = tio__ld32(p + 4), vd = tio__ld32(p + 8),
             sn = tio__ld32(p + 12), vq = tio__ld32(p + 16);
    ti->layout = (int32_t)tio__ld32(p + 20);
    ti->type = (int32_t)tio__ld32(p + 24);
    ti->dcode = (int32_t)tio__ld32(p + 28);
    ti->bufsize = -1;
    char *name = NULL;
    rc = tm_name(r, sn, off, &name, err);
    if (rc) return rc;
    r->cur_name = name;
    tio_dtype dt = tio__tmfile_dtype(ti->dcode);
    tio_dim vdims[TM_MAX_DIMS];
    int64_t rank = -1;
    tio_value_info vi;
    memset(&vi, 0, sizeof vi);
    vi.name = name;
    vi.tensor = -1;
    if (dt == TIO_DTYPE_INVALID) {
        rc = tio__err(err, TIO_E_DTYPE, TM_FMT, (int64_t)off + 28,
                      "%s: data_type %d is not a tmfile data type (expected 0..5: FP32, FP16, "
                      "INT8, UINT8, INT32, INT16)",
                      tm_cur(r, lb), ti->dcode);
        goto out;
    }
    if (tid != i) {
        rc = tio__warn(ctx, TM_FMT, (int64_t)off, err,
                       "%s: tensor_id is %u, not its index %zu (Tengine ignores it; a write "
                       "numbers tensors by position)",
                       tm_cur(r, lb), tid, i);
        if (rc) goto out;
    }
    if (vd) {
        uint32_t n;
        const uint8_t *ev = NULL;
        uint8_t e[4 * TM_MAX_DIMS];
        rc = tm_vector(r, vd, 4, NULL, (int64_t)off + 8, &n, &ev, err); /* checks */
        (void)ev;
        if (rc) goto out;
        uint32_t maxr = ctx->limits.max_rank < TM_MAX_DIMS ? ctx->limits.max_rank : TM_MAX_DIMS;
        if (n > maxr) {
            rc = tio__err(err, TIO_E_LIMIT, TM_FMT, (int64_t)vd,
                          "%s: %u dims exceed the limit of %u (Tengine's tensors hold at most "
                          "%u dims)",
                          tm_cur(r, lb), n, maxr, TM_MAX_DIMS);
            goto out;
        }
        /* the dims by pread (tm_vector checked them inside the file) */
        if (n) rc = tm_copy(r, vd + 4, 4 * n, NULL, (int64_t)off + 8, e, err);
        if (rc) goto out;
        rc = tm_count(r, n, vd, err);
        if (rc) goto out;
        for (uint32_t k = 0; k < n; k++) {
            int32_t v = (int32_t)tio__ld32(e + 4u * k);
            if (v < -1 || (v < 0 && ti->type == TM_T_CONST)) {
                rc = tio__err(err, TIO_E_CORRUPT, TM_FMT, (int64_t)vd + 4 + 4 * k,
                              "%s: dim %u is %d (expected a size >= 0%s)", tm_cur(r, lb), k, v,
                              ti->type == TM_T_CONST ? "" : ", or -1 for unknown");
                goto out;
            }
            vdims[k].value = v;
            vdims[k].name = NULL;
        }
        rank = n;
    }
    if (vq) {
        uint32_t n;
        const uint8_t *e = NULL;
        rc = tm_vector(r, vq, 4, NULL, (int64_t)off + 16, &n, &e, err);
        if (rc) goto out;
        rc = tm_count(r, n, vq, err);
        if (rc) goto out;
        for (uint32_t k = 0; k < n; k++) {
            const uint8_t *q = NULL;
            char what[128];
            snprintf(what, sizeof what, "%s: quant param %u", tm_cur(r, lb), k);
            rc = tm_struct(r, tio__ld32(e + 4u * k), TM_QUANT_LEN, what, (int64_t)vq + 4 + 4 * k,
                           &q, err);
            if (rc) goto out;
        }
        ti->qvec = vq;
        ti->qcount = n;
    }
    if (ti->type == TM_T_CONST) {
        if (bid >= nbuf) {
            rc = tio__err(err, TIO_E_CORRUPT, TM_FMT, (int64_t)off + 4,
                          "%s: a constant with buffer_id %u, but the file has %u buffers", tm_cur(r, lb),
                          bid, nbuf);
            goto out;
        }
        /* its buffer is read after the nodes (tm_buffers): the value holds
         * the dtype and dims meanwhile, as a constant without data keeps */
        ti->cst = true;
        ti->bid = bid;
        rank = rank < 0 ? 0 : rank;
    }
    vi.dtype = dt;
    vi.rank = rank;
    vi.dims = rank > 0 ? vdims : NULL;
    size_t idx;
    rc = tm_mem(r, tio__cost_dims(rank > 0 ? (uint64_t)rank : 0), (int64_t)off, err);
    if (!rc) rc = tio_graph_add_value(r->g, &vi, &idx, err);
out:
    return rc;
}

/* The TM2_Buffer structs lie beside their buffers' data, one per constant,
 * and far apart when the constants are large: each costs a pread() of its
 * own (a system call and a cold page-cache lookup, about 1.2 µs here; a
 * fault of the mapping costs more, docs/performance.md). When there are
 * many and they are sparser than the header window, a thread reads them
 * from the last one down while this one decodes the tensors from the first
 * one up, taking what the thread has read (tio_preads). Nothing is decided
 * by the thread: every struct is checked here as before, and one it has not
 * read (or could not) is read here. Only where every buffer could be a
 * tensor's (nbuf <= nten, counted and limited already), so that the thread
 * reads no more structs than the decode could. */
#define TM_PREFETCH_MIN 256u
static void tm_prefetch(tm_reader *r, const uint8_t *be, uint32_t nbuf, uint32_t nten,
                        uint64_t **boffs) {
    const tio_headsrc *h = r->ctx->head;
    if (!h || h->base != r->d || nbuf < TM_PREFETCH_MIN || nbuf > nten ||
        r->size / nbuf < TIO__HEAD_WINDOW)
        return;
    /* its arrays (offsets, structs, states: at most ~0.1 % of the input, as
     * the buffers are 16 KiB apart) are charged to the decode's memory */
    uint64_t need = (uint64_t)nbuf * (sizeof(uint64_t) + TM_BUFFER_LEN + 1) + 3 * 32;
    if (r->mem.used > r->mem.cap || need > r->mem.cap - r->mem.used) return;
    r->mem.used += need;
    uint64_t *o = malloc((size_t)nbuf * sizeof *o);
    if (!o) return; /* read here, one by one */
    for (uint32_t i = 0; i < nbuf; i++) {
        uint32_t v = tio__ld32(be + 4u * i);
        o[i] = v ? v : UINT64_MAX;
    }
    r->pre = tio__preads_start(h->fd, o, nbuf, TM_BUFFER_LEN, r->size);
    if (r->pre) *boffs = o;
    else free(o);
}

/* The constants' buffers, after the nodes (so that the thread of
 * tm_prefetch reads their structs while the tensors and nodes decode): each
 * TM2_Buffer is checked against its constant's dims, which its value holds;
 * a constant with data becomes a container tensor (a view into the file),
 * in tensor order, one without data (offset_data 0) stays a value. */
static int tm_buffers(tm_reader *r, const uint8_t *buffers, uint32_t vbufs, tio_error *err) {
    tio_read_ctx *ctx = r->ctx;
    tio_graph *g = r->g;
    char lb[TM_LBL_CAP];
    int rc = TIO_OK;
    for (size_t i = 0; !rc && i < r->nt; i++) {
        tm_tinfo *ti = &r->t[i];
        if (!ti->cst) continue;
        tio_gvalue *gv = &g->values[i];
        uint32_t off = ti->off, bid = ti->bid;
        tm_begin(r, "tensor", i);
        r->cur_name = gv->name;
        tio_dtype dt = gv->dtype;
        size_t rk = (size_t)gv->rank;
        int64_t dims[TM_MAX_DIMS];
        for (size_t k = 0; k < rk; k++) dims[k] = gv->dims[k].value;
        uint8_t b[TM_BUFFER_LEN];
        uint32_t boff = tio__ld32(buffers + 4u * bid);
        r->cur_sfx = "buffer";
        r->cur_n = bid;
        int64_t bref = (int64_t)vbufs + 4 + 4 * (int64_t)bid;
        const uint8_t *bp = NULL;
        rc = tm_struct(r, boff, TM_BUFFER_LEN, NULL, bref, &bp, err);
        /* read by the prefetch thread, or here */
        if (!rc && !tio__preads_take(r->pre, bid, b)) tm_fetch(r, boff, TM_BUFFER_LEN, bp, b);
        r->cur_sfx = NULL;
        if (rc) break;
        uint32_t bsize = tio__ld32(b), bdata = tio__ld32(b + 4);
        size_t nbytes = 0;
        uint64_t numel = 0;
        rc = tio__shape_size(dims, rk, tio_dtype_size(dt), &numel, &nbytes, TM_FMT, (int64_t)off,
                             err);
        if (rc) break;
        if (bdata == 0) {
            /* TM_FOR_BENCHMARK files: Tengine allocates zeros. Nothing is
             * materialised here: the value has no container tensor. */
            r->nconst_zero++;
            ti->bufsize = (uint64_t)bsize != nbytes ? (int64_t)bsize : -2;
            continue;
        }
        if (bsize < nbytes) {
            rc = tio__err(err, TIO_E_CORRUPT, TM_FMT, (int64_t)boff,
                          "%s: buffer %u holds %u bytes, but %llu %s elements need %zu",
                          tm_cur(r, lb), bid, bsize, (unsigned long long)numel, tio_dtype_name(dt),
                          nbytes);
            break;
        }
        if ((uint64_t)bdata + bsize > r->size) {
            rc = tio__err(err, TIO_E_BOUNDS, TM_FMT, (int64_t)boff + 4,
                          "%s: buffer %u data at offset %u (%u bytes) extends past the end "
                          "of the file (%zu bytes)",
                          tm_cur(r, lb), bid, bdata, bsize, r->size);
            break;
        }
        if (bsize > nbytes) {
            rc = tio__warn(ctx, TM_FMT, (int64_t)boff, err,
                           "%s: buffer %u holds %u bytes, %zu more than the %zu its dims "
                           "need; the extra bytes are not kept",
                           tm_cur(r, lb), bid, bsize, (size_t)bsize - nbytes, nbytes);
            if (rc) break;
        }
        if (tio_dtype_size(dt) > 1 && bdata % tio_dtype_size(dt)) {
            rc = tio__warn(ctx, TM_FMT, (int64_t)bdata, err,
                           "%s: constant data at offset %u is not aligned to its %zu-byte "
                           "elements (Tengine uses it in place)",
                           tm_cur(r, lb), bdata, tio_dtype_size(dt));
            if (rc) break;
        }
        if ((uint64_t)ctx->c->count >= ctx->limits.max_tensors) {
            rc = tio__err(err, TIO_E_LIMIT, TM_FMT, (int64_t)off,
                          "%s: more constants than the limit of %llu tensors (max_tensors)", tm_cur(r, lb),
                          (unsigned long long)ctx->limits.max_tensors);
            break;
        }
        const char *name = gv->name;
        rc = tm_mem(r, tio__cost_tensor(name ? strlen(name) : 0, rk), (int64_t)off, err);
        if (rc) break;
        tio_tensor_desc desc = {.name = name, .dtype = dt, .rank = rk, .shape = dims,
                                .layout = TIO_LAYOUT_DENSE, .data = r->d + bdata,
                                .nbytes = nbytes};
        rc = tio__container_add_view(ctx->c, &desc, (int64_t)bdata, TM_FMT, err);
        if (rc) break;
        gv->tensor = (int64_t)ctx->c->count - 1; /* dtype and dims as the tensor's */
    }
    r->cur_sfx = NULL;
    return rc;
}

/* Decoded param fields (one per struct field). */
typedef struct tm_pv {
    bool present;
    int64_t i;
    double f;
    int64_t *ints;
    double *floats;
    size_t count;
    char *s;
} tm_pv;

static void tm_pv_free(tm_pv *pv, unsigned n) {
    for (unsigned k = 0; k < n; k++) {
        free(pv[k].ints);
        free(pv[k].floats);
        free(pv[k].s);
    }
}

/* Reads a param struct (and the vectors and strings it names). */
static int tm_read_param(tm_reader *r, const tm_pdef *pd, unsigned nf, uint32_t poff,
                         int64_t ref, tm_pv *pv, tio_error *err) {
    unsigned pos[32];
    unsigned size = tio__tmfile_layout(pd, nf, pos);
    const uint8_t *p = NULL;
    char what[160], lb[TM_LBL_CAP];
    r->cur_sfx = pd->name; /* "LABEL: PARAM" */
    int rc = tm_struct(r, poff, size, NULL, ref, &p, err);
    r->cur_sfx = NULL;
    if (rc) return rc;
    rc = tm_count(r, nf, poff, err);
    if (rc) return rc;
    for (unsigned k = 0; k < nf; k++) {
        const tm_field *f = &pd->f[k];
        const uint8_t *q = p + pos[k];
        tm_pv *v = &pv[k];
        switch (f->kind) {
        case TF_I32: v->i = (int32_t)tio__ld32(q); v->present = true; break;
        case TF_U32: v->i = tio__ld32(q); v->present = true; break;
        case TF_BOOL: v->i = q[0]; v->present = true; break;
        case TF_F32: v->f = tm_f32(q); v->present = true; break;
        case TF_STR: {
            uint32_t so = tio__ld32(q);
            if (!so) break;
            tm_what(what, sizeof what, tm_cur(r, lb), pd->name, f->name);
            rc = tm_string(r, so, what, (int64_t)poff + pos[k], &v->s, err);
            if (rc) return rc;
            v->present = true;
            break;
        }
        default: {
            uint32_t vo = tio__ld32(q), n;
            if (!vo) break;
            const uint8_t *e = NULL;
            uint32_t esz = f->kind == TF_VANCHORS ? 16u : 4u;
            tm_what(what, sizeof what, tm_cur(r, lb), pd->name, f->name);
            rc = tm_vector(r, vo, esz, what, (int64_t)poff + pos[k], &n, &e, err);
            if (rc) return rc;
            size_t cnt = (size_t)n * (esz / 4);
            /* the values here (the graph's copy is charged with the attribute) */
            rc = tm_count(r, cnt, vo, err);
            if (!rc) rc = tm_mem(r, tio__cost_i64s(cnt), vo, err);
            if (rc) return rc;
            if (f->kind == TF_VDIMS) {
                v->ints = malloc((cnt ? cnt : 1) * sizeof *v->ints);
                if (!v->ints) return tio__nomem(err, TM_FMT);
                for (size_t m = 0; m < cnt; m++) v->ints[m] = (int32_t)tio__ld32(e + 4 * m);
            } else {
                v->floats = malloc((cnt ? cnt : 1) * sizeof *v->floats);
                if (!v->floats) return tio__nomem(err, TM_FMT);
                for (size_t m = 0; m < cnt; m++) v->floats[m] = tm_f32(e + 4 * m);
            }
            v->count = cnt;
            v->present = true;
            break;
        }
        }
    }
    return TIO_OK;
}

/* Attributes a reader adds, charged to the memory budget. */
static int tm_add_attr(tm_reader *r, size_t ni, const tio_attr *a, tio_error *err) {
    uint64_t payload = a->type == TIO_ATTR_INTS || a->type == TIO_ATTR_FLOATS
                           ? tio__cost_i64s(a->count)
                           : 0;
    int rc = tm_mem(r,
                    tio__cost_attr(strlen(a->name), a->label ? strlen(a->label) : 0) + payload,
                    -1, err);
    return rc ? rc : tio_graph_add_attr(r->g, ni, a, err);
}
static int tm_add_int(tm_reader *r, size_t ni, const char *name, int64_t v, const char *label,
                      tio_error *err) {
    tio_attr a;
    memset(&a, 0, sizeof a);
    a.name = name;
    a.type = TIO_ATTR_INT;
    a.i = v;
    a.label = label;
    return tm_add_attr(r, ni, &a, err);
}
static int tm_add_ints(tm_reader *r, size_t ni, const char *name, const int64_t *v, size_t n,
                       tio_error *err) {
    tio_attr a;
    memset(&a, 0, sizeof a);
    a.name = name;
    a.type = TIO_ATTR_INTS;
    a.ints = v;
    a.count = n;
    return tm_add_attr(r, ni, &a, err);
}
static int tm_add_floats(tm_reader *r, size_t ni, const char *name, const double *v, size_t n,
                         tio_error *err) {
    tio_attr a;
    memset(&a, 0, sizeof a);
    a.name = name;
    a.type = TIO_ATTR_FLOATS;
    a.floats = v;
    a.count = n;
    return tm_add_attr(r, ni, &a, err);
}

/* The per-output tensor facts that differ from the defaults, as tm2_*
 * attributes of the node that produces them. */
static int tm_output_attrs(tm_reader *r, size_t ni, int idx, const int64_t *outs, size_t n,
                           tio_error *err) {
    bool lay = false, typ = false, buf = false;
    uint64_t nq = 0;
    for (size_t k = 0; k < n; k++) {
        const tm_tinfo *ti = &r->t[outs[k]];
        if (ti->layout != r->graph_layout) lay = true;
        if (ti->type != tio__tmfile_default_type(idx)) typ = true;
        if (ti->bufsize >= 0) buf = true;
        nq += ti->qcount;
    }
    /* the arrays here (the attributes are charged as they are added) */
    int rc = tm_count(r, nq, -1, err);
    if (!rc) rc = tm_mem(r, tio__cost_i64s(n) + 3 * tio__cost_i64s(nq), -1, err);
    if (rc) return rc;
    if (!lay && !typ && !buf && !nq) return TIO_OK; /* nothing to add */
    int64_t *tmp = malloc((n ? n : 1) * sizeof *tmp);
    if (!tmp) return tio__nomem(err, TM_FMT);
    if (lay) {
        for (size_t k = 0; k < n; k++) tmp[k] = r->t[outs[k]].layout;
        rc = tm_add_ints(r, ni, "tm2_layout", tmp, n, err);
    }
    if (!rc && typ) {
        for (size_t k = 0; k < n; k++) tmp[k] = r->t[outs[k]].type;
        rc = tm_add_ints(r, ni, "tm2_type", tmp, n, err);
    }
    if (!rc && buf) {
        for (size_t k = 0; k < n; k++)
            tmp[k] = r->t[outs[k]].bufsize >= 0 ? r->t[outs[k]].bufsize : -1;
        rc = tm_add_ints(r, ni, "tm2_buffer_size", tmp, n, err);
    }
    if (!rc && nq) {
        int64_t *zp = malloc((size_t)nq * sizeof *zp), *wd = malloc((size_t)nq * sizeof *wd);
        double *sc = malloc((size_t)nq * sizeof *sc);
        bool anyw = false;
        if (!zp || !wd || !sc) rc = tio__nomem(err, TM_FMT);
        size_t m = 0;
        for (size_t k = 0; !rc && k < n; k++) {
            const tm_tinfo *ti = &r->t[outs[k]];
            tmp[k] = ti->qcount;
            /* bounds were checked when the tensor was read */
            const uint8_t *e = r->d + ti->qvec + 4;
            for (uint32_t j = 0; j < ti->qcount; j++, m++) {
                const uint8_t *q = r->d + tio__ld32(e + 4u * j);
                zp[m] = (int32_t)tio__ld32(q);
                sc[m] = tm_f32(q + 4);
                wd[m] = (int32_t)tio__ld32(q + 8);
                if (wd[m]) anyw = true;
            }
        }
        if (!rc) rc = tm_add_ints(r, ni, "tm2_quant_count", tmp, n, err);
        if (!rc) rc = tm_add_floats(r, ni, "tm2_quant_scale", sc, (size_t)nq, err);
        if (!rc) rc = tm_add_ints(r, ni, "tm2_quant_zero_point", zp, (size_t)nq, err);
        /* TM2_QuantParam.width: set by the old C++ writer, never by lite's. */
        if (!rc && r->old && anyw)
            rc = tm_add_ints(r, ni, "tm2_quant_width", wd, (size_t)nq, err);
        free(zp);
        free(wd);
        free(sc);
    }
    free(tmp);
    return rc;
}

/* A node's tensor indices (input or output vector). */
#define TM_FEW_IDS 8 /* a node's indices held by the caller, without a malloc */
static int tm_indices(tm_reader *r, uint32_t off, const char *what, int64_t ref,
                      int64_t *few, int64_t **out, size_t *n, tio_error *err) {
    *out = NULL;
    *n = 0;
    if (!off) return TIO_OK;
    uint32_t cnt;
    const uint8_t *e = NULL;
    char lb[TM_LBL_CAP];
    r->cur_sfx = what;
    int rc = tm_vector(r, off, 4, NULL, ref, &cnt, &e, err);
    r->cur_sfx = NULL;
    /* the ids here, and the graph's copy */
    if (!rc) rc = tm_count(r, cnt, off, err);
    if (!rc) rc = tm_mem(r, 2 * tio__cost_i64s(cnt), (int64_t)off, err);
    if (rc) return rc;
    int64_t *ids = cnt <= TM_FEW_IDS ? few : malloc(cnt * sizeof *ids);
    if (!ids) return tio__nomem(err, TM_FMT);
    for (uint32_t k = 0; k < cnt; k++) {
        uint32_t t = tio__ld32(e + 4u * k);
        if (t >= r->nt) {
            if (ids != few) free(ids);
            return tio__err(err, TIO_E_CORRUPT, TM_FMT, (int64_t)off + 4 + 4 * k,
                            "%s: %s %u is tensor %u, but the file has %zu tensors", tm_cur(r, lb), what, k,
                            t, r->nt);
        }
        ids[k] = t;
    }
    *out = ids;
    *n = cnt;
    return TIO_OK;
}

/* The op name a node gets: ONNX's where one exists. */
static const char *tm_onnx_name(int idx, const tm_pv *pv, unsigned nf) {
    if (idx == OP_POOL && nf >= 6) {
        bool global = pv[5].i != 0;
        if (pv[0].i == 0) return global ? "GlobalMaxPool" : "MaxPool";
        if (pv[0].i == 1) return global ? "GlobalAveragePool" : "AveragePool";
        return NULL;
    }
    if (idx == OP_RELU && nf >= 1) return pv[0].f == 0 ? "Relu" : "LeakyRelu";
    if (idx == OP_ELTWISE && nf >= 1) {
        int64_t t = pv[0].i;
        return t >= 0 && t < (int64_t)(sizeof tio__tmfile_eltwise_onnx /
                                       sizeof tio__tmfile_eltwise_onnx[0])
                   ? tio__tmfile_eltwise_onnx[t]
                   : NULL;
    }
    return tio__tmfile_ops[idx].onnx;
}

static int tm_node(tm_reader *r, size_t i, uint32_t off, int64_t slot, tio_error *err) {
    tio_read_ctx *ctx = r->ctx;
    tio_graph *g = r->g;
    const uint8_t *p = NULL;
    char lb[TM_LBL_CAP]; /* the label, when a message needs it */
    tm_begin(r, "node", i);
    int rc = tm_struct(r, off, TM_NODE_LEN, NULL, slot, &p, err);
    if (rc) return rc;
    uint32_t nid = tio__ld32(p), vin = tio__ld32(p + 4), vout = tio__ld32(p + 8),
             top = tio__ld32(p + 12), sn = tio__ld32(p + 16), vattr = tio__ld32(p + 20);
    uint8_t dyn = p[24];
    char *name = NULL;
    int64_t *ins = NULL, *outs = NULL, few_in[TM_FEW_IDS], few_out[TM_FEW_IDS];
    size_t nin = 0, nout = 0;
    tm_pv pv[32];
    unsigned nf = 0; /* pv[0..nf) set below */
    int64_t *raw = NULL;
    size_t nraw = 0;
    char opq[200];
    opq[0] = 0;
    rc = tm_name(r, sn, off + 16, &name, err);
    if (rc) goto out;
    r->cur_name = name;
    rc = tm_indices(r, vin, "input", (int64_t)off + 4, few_in, &ins, &nin, err);
    if (!rc) rc = tm_indices(r, vout, "output", (int64_t)off + 8, few_out, &outs, &nout, err);
    if (rc) goto out;
    if (nout == 0) {
        rc = tio__err(err, TIO_E_CORRUPT, TM_FMT, (int64_t)off + 8,
                      "%s: the node has no outputs (Tengine refuses such a model)", tm_cur(r, lb));
        goto out;
    }
    const uint8_t *op = NULL;
    r->cur_sfx = "TM2_Operator";
    rc = tm_struct(r, top, TM_OP_LEN, NULL, (int64_t)off + 12, &op, err);
    r->cur_sfx = NULL;
    if (rc) goto out;
    uint32_t op_ver = tio__ld32(op), code = tio__ld32(op + 4), poff = tio__ld32(op + 8);
    if (i == 0) r->op_ver = op_ver;
    int idx = tio__tmfile_lite_index(r->old, code);
    const tm_pdef *pd = idx >= 0 ? tio__tmfile_param_of(idx, r->old, op_ver, &nf) : NULL;
    memset(pv, 0, nf * sizeof *pv);
    if (pd && poff) {
        rc = tm_read_param(r, pd, nf, poff, (int64_t)top + 8, pv, err);
        if (rc) goto out;
    } else if (pd) {
        rc = tio__warn(ctx, TM_FMT, (int64_t)top + 8, err,
                       "%s: %s has no param (offset_t_param is 0; Tengine would read the file "
                       "header as its %s); a write gives it a zeroed one",
                       tm_cur(r, lb), tio__tmfile_ops[idx].name, pd->name);
        if (rc) goto out;
        /* read as that zeroed param reads: its numbers are present and 0,
         * its strings and vectors absent (offset 0), so the node means the
         * same before and after a write */
        for (unsigned k = 0; k < nf; k++) {
            int kind = pd->f[k].kind;
            pv[k].present = kind == TF_I32 || kind == TF_U32 || kind == TF_BOOL || kind == TF_F32;
        }
    } else if (poff) {
        /* A param tensio has no struct for: kept as raw 32-bit words. Its size
         * comes from the official writer's layout, which writes a param
         * immediately before its TM2_Operator. */
        if (poff >= top || top - poff > TM_RAW_PARAM_MAX || (top - poff) % 4) {
            snprintf(opq, sizeof opq,
                     "the param of operator type %u at offset %u is not immediately before its "
                     "TM2_Operator, so its size is unknown",
                     code, poff);
            rc = tio__warn(ctx, TM_FMT, (int64_t)top + 8, err, "%s: %s; it cannot be re-encoded",
                           tm_cur(r, lb), opq);
            if (rc) goto out;
        } else {
            nraw = (top - poff) / 4;
            raw = malloc(nraw * sizeof *raw);
            if (!raw) {
                rc = tio__nomem(err, TM_FMT);
                goto out;
            }
            for (size_t k = 0; k < nraw; k++) raw[k] = tio__ld32(r->d + poff + 4 * k);
        }
    }
    tio_node_info ni;
    memset(&ni, 0, sizeof ni);
    char opbuf[32];
    ni.name = name;
    ni.native_id = code;
    if (idx >= 0) {
        ni.native_op = tio__tmfile_ops[idx].name;
        ni.op = tm_onnx_name(idx, pv, nf);
        if (!ni.op) ni.op = ni.native_op;
    } else {
        snprintf(opbuf, sizeof opbuf, "OpType%u", code);
        ni.op = opbuf;
    }
    ni.inputs = ins;
    ni.input_count = nin;
    ni.outputs = outs;
    ni.output_count = nout;
    size_t gi;
    /* the node's op name and the raw words here (its slot was reserved;
     * attributes are charged as they are added) */
    rc = tm_mem(r, tio__cost_str(strlen(ni.op)) + tio__cost_i64s(nraw), (int64_t)off, err);
    if (!rc) rc = tio_graph_add_node(g, &ni, &gi, err);
    if (rc) goto out;
    if (idx < 0) {
        rc = tio__warn(ctx, TM_FMT, (int64_t)top + 4, err,
                       "%s: operator type %u is not in the %s operator table (Tengine refuses "
                       "the model); it is kept by number",
                       tm_cur(r, lb), code, r->old ? "old C++ (0..90)" : "Tengine-lite (0..107)");
        if (rc) goto out;
    }
    if (opq[0]) {
        rc = tm_mem(r, tio__cost_str(strlen(opq)), (int64_t)off, err);
        if (!rc) rc = tio__graph_set_opaque(g, gi, opq, err);
        if (rc) goto out;
    }
    if (nid != i) {
        rc = tio__warn(ctx, TM_FMT, (int64_t)off, err,
                       "%s: node_id is %u, not its index %zu (a write numbers nodes by "
                       "position)",
                       tm_cur(r, lb), nid, i);
        if (rc) goto out;
    }
    /* params -> attributes named after the struct fields */
    rc = tm_count(r, nf + 8, off, err);
    for (unsigned k = 0; !rc && k < nf; k++) {
        const tm_field *f = &pd->f[k];
        const tm_pv *v = &pv[k];
        if (!v->present) continue;
        /* Eltwise caffe_flavor/shift/power/scale: lite's writer never sets
         * them (uninitialised bytes); they mean something only for POWER. */
        if (idx == OP_ELTWISE && !r->old && k > 0 && pv[0].i != ELT_POWER) continue;
        tio_attr a;
        memset(&a, 0, sizeof a);
        a.name = f->name;
        switch (f->kind) {
        case TF_I32:
        case TF_U32:
        case TF_BOOL:
            a.type = TIO_ATTR_INT;
            a.i = v->i;
            a.label = tio__tmfile_label(idx, f->name, v->i);
            break;
        case TF_F32: a.type = TIO_ATTR_FLOAT; a.f = v->f; break;
        case TF_STR: a.type = TIO_ATTR_STRING; a.s = v->s; break;
        case TF_VDIMS: a.type = TIO_ATTR_INTS; a.ints = v->ints; a.count = v->count; break;
        default: a.type = TIO_ATTR_FLOATS; a.floats = v->floats; a.count = v->count; break;
        }
        rc = tm_add_attr(r, gi, &a, err);
    }
    if (!rc && raw) rc = tm_add_ints(r, gi, "tm2_param", raw, nraw, err);
    if (!rc && op_ver != r->op_ver) rc = tm_add_int(r, gi, "tm2_op_ver", op_ver, NULL, err);
    if (!rc && dyn) rc = tm_add_int(r, gi, "tm2_dynamic_shape", dyn, NULL, err);
    r->nop[i] = idx; /* tm_output_attrs, once the buffers are read */
    if (rc) goto out;
    for (size_t k = 0; k < nout; k++) {
        tm_tinfo *ti = &r->t[outs[k]];
        if (ti->producer < 0) {
            ti->producer = (int64_t)i;
        } else {
            rc = tio__warn(ctx, TM_FMT, (int64_t)off + 8, err,
                           "%s: tensor %lld is also an output of node %lld; a write refuses "
                           "a tensor with two producers",
                           tm_cur(r, lb), (long long)outs[k], (long long)ti->producer);
            if (rc) goto out;
        }
    }
    if (vattr) {
        /* TM2_Attr custom attributes (old C++ only): not decoded. */
        char why[160];
        snprintf(why, sizeof why,
                 "the node has custom attributes (TM2_Attr vector at offset %u), which tensio "
                 "does not decode",
                 vattr);
        rc = tm_mem(r, tio__cost_str(strlen(why)), (int64_t)off, err);
        if (!rc) rc = tio__graph_set_opaque(g, gi, why, err);
        if (!rc) rc = tio__warn(ctx, TM_FMT, (int64_t)off + 20, err, "%s: %s", tm_cur(r, lb), why);
    }
out:
    tm_pv_free(pv, nf);
    free(raw);
    if (ins != few_in) free(ins);
    if (outs != few_out) free(outs);
    return rc;
}

/* Graph inputs or outputs from a vector of node indices: the nodes' output
 * tensors, in order. */
static int tm_io(tm_reader *r, uint32_t off, const char *what, int64_t ref, bool inputs,
                 tio_error *err) {
    tio_graph *g = r->g;
    if (!off) return TIO_OK;
    uint32_t n;
    const uint8_t *e = NULL;
    int rc = tm_vector(r, off, 4, what, ref, &n, &e, err);
    if (!rc) rc = tm_count(r, n, off, err);
    if (rc) return rc;
    size_t total = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t ni = tio__ld32(e + 4u * k);
        if (ni >= g->node_count)
            return tio__err(err, TIO_E_CORRUPT, TM_FMT, (int64_t)off + 4 + 4 * k,
                            "%s %u is node %u, but the graph has %zu nodes", what, k, ni,
                            g->node_count);
        total += g->nodes[ni].output_count;
        rc = tm_count(r, g->nodes[ni].output_count, off, err);
        if (rc) return rc;
    }
    rc = tm_mem(r, 2 * tio__cost_i64s(total), (int64_t)off, err); /* here and the graph's */
    if (rc) return rc;
    int64_t *vals = malloc((total ? total : 1) * sizeof *vals);
    if (!vals) return tio__nomem(err, TM_FMT);
    size_t m = 0;
    for (uint32_t k = 0; k < n; k++) {
        const tio_gnode *nd = &g->nodes[tio__ld32(e + 4u * k)];
        for (size_t j = 0; j < nd->output_count; j++) vals[m++] = nd->outputs[j];
    }
    rc = inputs ? tio_graph_set_inputs(g, vals, total, err)
                : tio_graph_set_outputs(g, vals, total, err);
    free(vals);
    return rc;
}

/* Puts the container's tensors in the order a write stores them (and so a
 * read of the written file gives): the constants no node outputs first, in
 * value order, then those that nodes output, in node order. Only files
 * whose constants are outputs of ordinary nodes (not Const) differ from
 * tensor order; for them, read → write → read keeps the order. */
static int tm_writer_order(tio_container *c, tio_graph *g, tio_error *err) {
    size_t n = c->count;
    if (n < 2) return TIO_OK;
    int64_t *val = malloc(n * sizeof *val);          /* container tensor -> value */
    uint8_t *produced = calloc(g->value_count ? g->value_count : 1, 1);
    size_t *order = malloc(n * sizeof *order);
    tio_tensor **nt = malloc(n * sizeof *nt);
    uint8_t *taken = calloc(n, 1);
    int rc = TIO_OK;
    if (!val || !produced || !order || !nt || !taken) {
        rc = tio__nomem(err, TM_FMT);
        goto out;
    }
    for (size_t i = 0; i < n; i++) val[i] = -1;
    for (size_t v = 0; v < g->value_count; v++)
        if (g->values[v].tensor >= 0 && (size_t)g->values[v].tensor < n)
            val[g->values[v].tensor] = (int64_t)v;
    for (size_t j = 0; j < g->node_count; j++)
        for (size_t k = 0; k < g->nodes[j].output_count; k++) {
            int64_t v = g->nodes[j].outputs[k];
            if (v >= 0 && (size_t)v < g->value_count) produced[v] = 1;
        }
    /* order[] must be a permutation whatever the file says: taken[] marks
     * the tensors placed */
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (val[i] < 0 || !produced[val[i]]) {
            order[m++] = i;
            taken[i] = 1;
        }
    for (size_t j = 0; j < g->node_count; j++)
        for (size_t k = 0; k < g->nodes[j].output_count; k++) {
            int64_t v = g->nodes[j].outputs[k];
            if (v < 0 || (size_t)v >= g->value_count) continue;
            int64_t t = g->values[v].tensor;
            if (t < 0 || (size_t)t >= n || taken[t]) continue;
            order[m++] = (size_t)t;
            taken[t] = 1;
        }
    for (size_t i = 0; i < n; i++)
        if (!taken[i]) order[m++] = i;
    bool same = true;
    for (size_t i = 0; same && i < n; i++) same = order[i] == i;
    if (same) goto out;
    for (size_t i = 0; i < n; i++) nt[i] = c->tensors[order[i]];
    for (size_t i = 0; i < n; i++) {
        c->tensors[i] = nt[i];
        nt[i]->index = i;
        if (val[order[i]] >= 0) g->values[val[order[i]]].tensor = (int64_t)i;
    }
out:
    free(val);
    free(produced);
    free(order);
    free(nt);
    free(taken);
    return rc;
}

int tio__tmfile_read(tio_read_ctx *ctx, tio_error *err) {
    tm_reader r;
    memset(&r, 0, sizeof r);
    r.op_ver = 1;
    r.ctx = ctx;
    r.d = ctx->data;
    r.size = ctx->size;
    r.budget = (uint64_t)r.size * 16 + 4096;
    if (r.budget > ctx->limits.max_objects) r.budget = ctx->limits.max_objects;
    tio__budget_init(&r.mem, TM_FMT, r.size, TIO_DECODE_MEM_FACTOR, TIO_BUDGET_SHARED,
                     &ctx->limits);
    const uint8_t *d = r.d;
    int rc;
    if (r.size < TM_HEADER_LEN)
        return tio__err(err, TIO_E_TRUNCATED, TM_FMT, 0,
                        "%zu bytes: too short for the 12-byte TM2_Header", r.size);
    uint16_t vmain = tio__ld16(d), vsub = tio__ld16(d + 2), vcomp = tio__ld16(d + 4);
    uint32_t root = tio__ld32(d + 8);
    if (vmain != 2)
        return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, 0,
                        "ver_main is %u (expected 2: only tm2 files are supported)", vmain);
    const uint8_t *mp = NULL;
    rc = tm_struct(&r, root, TM_MODEL_LEN, "TM2_Model (offset_root)", 8, &mp, err);
    if (rc) return rc;
    int32_t orig = (int32_t)tio__ld32(mp), subf = (int32_t)tio__ld32(mp + 4);
    uint32_t vsubs = tio__ld32(mp + 8), smname = tio__ld32(mp + 12);
    uint32_t nsub;
    const uint8_t *se = NULL;
    rc = tm_vector(&r, vsubs, 4, "TM2_Model.offset_vo_subgraphs", (int64_t)root + 8, &nsub, &se,
                   err);
    if (rc) return rc;
    if (nsub == 0)
        return tio__err(err, TIO_E_CORRUPT, TM_FMT, (int64_t)vsubs, "the model has no subgraph");
    if (nsub > 1)
        return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, (int64_t)vsubs,
                        "the model has %u subgraphs; tensio reads models with one (as Tengine's "
                        "writers produce)",
                        nsub);
    uint32_t soff = tio__ld32(se);
    const uint8_t *sp = NULL;
    rc = tm_struct(&r, soff, TM_SUB_OLD, "TM2_Subgraph", (int64_t)vsubs + 4, &sp, err);
    if (rc) return rc;
    /* Lite's 40-byte subgraph or the old 36-byte one: both writers put the
     * subgraphs vector right after the subgraph; otherwise a subgraph that
     * would run past the end, or a model name (lite writes none), means old. */
    const char *why;
    if ((uint64_t)soff + TM_SUB_LITE == vsubs) {
        r.old = 0;
        why = "the subgraphs vector follows 40 bytes after the subgraph";
    } else if ((uint64_t)soff + TM_SUB_OLD == vsubs) {
        r.old = 1;
        why = "the subgraphs vector follows 36 bytes after the subgraph";
    } else if ((uint64_t)soff + TM_SUB_LITE > r.size) {
        r.old = 1;
        why = "a 40-byte subgraph would extend past the end of the file";
    } else if (smname) {
        r.old = 1;
        why = "the model has a name";
    } else {
        r.old = 0;
        why = "default";
    }
    uint32_t sid = tio__ld32(sp);
    r.graph_layout = (int32_t)tio__ld32(sp + 4);
    int32_t mlayout = (int32_t)tio__ld32(sp + 8);
    uint32_t vin = tio__ld32(sp + 12), vout = tio__ld32(sp + 16), vnodes = tio__ld32(sp + 20),
             vtens = tio__ld32(sp + 24), vbufs = tio__ld32(sp + 28), ssname = tio__ld32(sp + 32);

    tio_container *c = ctx->c;
    const char *on = tio__tmfile_orig_name(r.old, orig);
    rc = tm_prop(c, "ver_main", "%u", vmain);
    if (!rc) rc = tm_prop(c, "ver_sub", "%u", vsub);
    if (!rc) rc = tm_prop(c, "ver_compile", "%u", vcomp);
    if (!rc) rc = tm_prop(c, "offset_root", "%u", root);
    if (!rc)
        rc = tm_prop(c, "orig_format", "%d%s%s%s", orig, on ? " (" : "", on ? on : "",
                     on ? ")" : "");
    if (!rc) rc = tm_prop(c, "sub_format", "%d", subf);
    if (!rc) rc = tm_prop(c, "subgraph_offset", "%u", soff);
    if (!rc) rc = tm_prop(c, "subgraph_size", "%u", r.old ? TM_SUB_OLD : TM_SUB_LITE);
    if (!rc) rc = tm_prop(c, "variant", "%s", r.old ? "old-cpp" : "lite");
    if (!rc) rc = tm_prop(c, "variant_reason", "%s", why);
    if (!rc) rc = tm_prop(c, "graph_layout", "%d", r.graph_layout);
    if (!rc) rc = tm_prop(c, "model_layout", "%d", mlayout);
    if (rc) return tio__nomem(err, TM_FMT);

    tio_graph *g = NULL;
    rc = tio_container_new_graph(c, &g, err);
    if (!rc) rc = tio_graph_set_native_format(g, TM_FMT, err);
    if (rc) return rc;
    r.g = g;
    /* graph-level fields a write needs, as model metadata */
    const char *gl = tio__tmfile_layout_name(r.graph_layout),
               *ml = tio__tmfile_layout_name(mlayout);
    rc = tm_meta(g, "tmfile.variant", "%s", r.old ? "old-cpp" : "lite");
    if (!rc) rc = on ? tm_meta(g, "tmfile.orig_format", "%s", on)
                     : tm_meta(g, "tmfile.orig_format", "%d", orig);
    if (!rc) rc = gl ? tm_meta(g, "tmfile.graph_layout", "%s", gl)
                     : tm_meta(g, "tmfile.graph_layout", "%d", r.graph_layout);
    if (!rc) rc = ml ? tm_meta(g, "tmfile.model_layout", "%s", ml)
                     : tm_meta(g, "tmfile.model_layout", "%d", mlayout);
    if (!rc && subf) rc = tm_meta(g, "tmfile.sub_format", "%d", subf);
    if (!rc && sid) rc = tm_meta(g, "tmfile.subgraph_id", "%u", sid);
    if (rc) return tio__nomem(err, TM_FMT);
    char *s = NULL;
    rc = tm_string(&r, smname, "model name", (int64_t)root + 12, &s, err);
    if (!rc && s) rc = tio_graph_meta_set(g, "tmfile.model_name", s, err);
    free(s);
    if (!rc) rc = tm_string(&r, ssname, "subgraph name", (int64_t)soff + 32, &s, err);
    if (!rc && s) rc = tio_graph_meta_set(g, "tmfile.subgraph_name", s, err);
    free(s);
    if (rc) return rc;

    /* buffers, tensors, nodes */
    uint32_t nbuf = 0, nten, nnode;
    const uint8_t *be = NULL, *te = NULL, *ne = NULL;
    if (vbufs) {
        rc = tm_vector(&r, vbufs, 4, "TM2_Subgraph.offset_vo_buffers", (int64_t)soff + 28, &nbuf,
                       &be, err);
        if (rc) return rc;
    }
    rc = tm_vector(&r, vtens, 4, "TM2_Subgraph.offset_vo_tensors", (int64_t)soff + 24, &nten, &te,
                   err);
    if (!rc)
        rc = tm_vector(&r, vnodes, 4, "TM2_Subgraph.offset_vo_seq_nodes", (int64_t)soff + 20,
                       &nnode, &ne, err);
    if (!rc) rc = tm_count(&r, (uint64_t)nten + nnode, (int64_t)vtens, err);
    /* value and node slots (reserved here) and the per-tensor facts */
    if (!rc)
        rc = tm_mem(&r,
                    (uint64_t)nten * (tio__cost_value() + sizeof *r.t) +
                        (uint64_t)nnode * (tio__cost_grown(sizeof(tio_gnode)) + sizeof(int32_t)),
                    (int64_t)vtens, err);
    if (rc) return rc;
    r.nt = nten;
    r.t = calloc(nten ? nten : 1, sizeof *r.t);
    r.nop = malloc((nnode ? nnode : 1) * sizeof *r.nop);
    if (!r.t || !r.nop) {
        free(r.t);
        free(r.nop);
        return tio__nomem(err, TM_FMT);
    }
    rc = tio__graph_reserve(g, nten, nnode, err);
    for (size_t i = 0; !rc && i < nten; i++) r.t[i].producer = -1;
    uint64_t *boffs = NULL;
    if (!rc) tm_prefetch(&r, be, nbuf, nten, &boffs);
    for (size_t i = 0; !rc && i < nten; i++)
        rc = tm_tensor(&r, i, tio__ld32(te + 4 * i), (int64_t)vtens + 4 + 4 * (int64_t)i, nbuf,
                       err);
    for (size_t i = 0; !rc && i < nnode; i++)
        rc = tm_node(&r, i, tio__ld32(ne + 4 * i), (int64_t)vnodes + 4 + 4 * (int64_t)i, err);
    if (!rc) rc = tm_buffers(&r, be, vbufs, err);
    tio__preads_end(r.pre);
    r.pre = NULL;
    free(boffs);
    /* the per-output facts, the nodes' last attributes (tm2_buffer_size
     * needs the buffers) */
    for (size_t i = 0; !rc && i < nnode; i++) {
        const tio_gnode *n = &g->nodes[i];
        tm_begin(&r, "node", i);
        r.cur_name = n->name;
        rc = tm_output_attrs(&r, i, r.nop[i], n->outputs, n->output_count, err);
    }
    if (!rc)
        rc = tm_io(&r, vin, "TM2_Subgraph input node", (int64_t)soff + 12, true, err);
    if (!rc)
        rc = tm_io(&r, vout, "TM2_Subgraph output node", (int64_t)soff + 16, false, err);
    /* findings about the whole model */
    size_t orphans = 0, first = 0;
    for (size_t i = 0; !rc && i < nten; i++)
        if (r.t[i].producer < 0 && orphans++ == 0) first = i;
    if (!rc && orphans) {
        const char *vn = g->values[first].name;
        rc = tio__warn(ctx, TM_FMT, (int64_t)r.t[first].off, err,
                       "%zu tensor%s no node outputs (the first: tensor %zu '%s'); the official "
                       "writer drops such tensors, tensio's writer gives a constant a Const node "
                       "and a graph input an InputOp node",
                       orphans, orphans == 1 ? " that" : "s that", first, vn ? vn : "");
    }
    if (!rc && r.nconst_zero)
        rc = tio__warn(ctx, TM_FMT, -1, err,
                       "%zu constant%s no data (buffer offset_data 0, as in TM_FOR_BENCHMARK "
                       "files): Tengine fills them with zeros; they are graph values without a "
                       "container tensor",
                       r.nconst_zero, r.nconst_zero == 1 ? " has" : "s have");
    /* the op_ver of node 0, when it is not the writer's (lite 1, old C++ 2) */
    if (!rc && nnode && r.op_ver != (r.old ? 2u : 1u))
        rc = tm_meta(g, "tmfile.op_ver", "%u", r.op_ver);
    if (!rc) rc = tm_prop(c, "nodes", "%u", nnode);
    if (!rc) rc = tm_prop(c, "tensors", "%u", nten);
    if (!rc) rc = tm_prop(c, "buffers", "%u", nbuf);
    if (!rc)
        rc = tm_mem(&r, 4 * tio__cost_i64s(c->count) + tio__cost_block(g->value_count), -1, err);
    if (!rc) rc = tm_writer_order(c, g, err);
    if (!rc && !(ctx->flags & TIO_OPEN_NATIVE_GRAPH)) rc = tio__tmfile_raise_graph(&r, err);
    free(r.t);
    free(r.nop);
    free(r.scratch);
    return rc;
}
