/* Messages: containers as ordered lists of parts (ZeroMQ frames), decoded
 * with a format's read_parts and encoded with its write_parts, or as one
 * part holding the file encoding. */
#include "sink.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* A message of a few parts (one or two tensors) needs no allocation beyond
 * the struct: the first parts and owned buffers are listed in it, and small
 * copies (headers, coordinates) are kept in its arena. */
#define MSG_INLINE_PARTS 8u
#define MSG_INLINE_OWNED 4u
#define MSG_ARENA 192u

struct tio_message {
    _Atomic size_t refs;        /* the caller's + one per frame lent to libzmq */
    tio_part *parts;            /* parts_inl or a heap array */
    size_t count, cap;
    void **owned;               /* buffers the message frees (owned_inl or heap) */
    size_t owned_count, owned_cap;
    const tio_container *lent;  /* the container whose data parts point into */
    uint64_t total;
    size_t arena_used;
    tio_part parts_inl[MSG_INLINE_PARTS];
    void *owned_inl[MSG_INLINE_OWNED];
    _Alignas(16) uint8_t arena[MSG_ARENA];
};

/* ------------------------------------------------------------- decoding */

/* The codec for a message when none was named. */
static const tio_format_desc *choose_codec(const tio_rpart *parts, size_t n) {
    if (n == 1) {
        const char *name = tio_format_probe(parts[0].data, parts[0].size);
        return name ? tio__format_find(name) : NULL;
    }
    if (n >= 1 && parts[0].size >= 3 && memcmp(parts[0].data, "ZIO", 3) == 0)
        return tio__format_find("zio");
    return tio__format_find("tenbin");
}

int tio__open_rparts(const tio_format_desc *f, const tio_rpart *parts, size_t n,
                     const tio_open_options *opts, void *backing,
                     void (*backing_free)(void *), tio_container **out, tio_error *err) {
    *out = NULL;
    tio_container *c = tio_container_new();
    if (!c) {
        if (backing_free) backing_free(backing);
        return tio__nomem(err, NULL);
    }
    c->backing = backing;
    c->backing_free = backing_free;
    if (opts && opts->format) {
        f = tio__format_find(opts->format);
        if (!f) {
            tio_container_free(c);
            return tio__err(err, TIO_E_FORMAT, NULL, -1, "unknown format '%s'", opts->format);
        }
    }
    if (!f) f = choose_codec(parts, n);
    if (!f) {
        tio_container_free(c);
        return tio__err(err, TIO_E_FORMAT, NULL, -1,
                        "no format recognises the single %zu-byte part", n ? parts[0].size : 0);
    }
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) total += parts[i].size;
    tio_read_ctx ctx;
    ctx.path = NULL;
    ctx.head = NULL;
    ctx.limits = tio__limits_resolve(opts ? opts->limits : NULL);
    ctx.flags = opts ? opts->flags : 0;
    ctx.c = c;
    c->format = f->name;
    c->source_size = total;
    c->limits = ctx.limits;
    int rc;
    if (n == 1 && f->probe(parts[0].data, parts[0].size) > 0) {
        /* the single-part form: the file encoding */
        static const uint8_t empty[1];
        ctx.data = parts[0].size ? parts[0].data : empty;
        ctx.size = parts[0].size;
        rc = f->read(&ctx, err);
    } else if (f->read_parts) {
        ctx.data = NULL;
        ctx.size = 0;
        rc = f->read_parts(&ctx, parts, n, err);
    } else {
        if (n == 1)
            rc = tio__err(err, TIO_E_CORRUPT, f->name, -1,
                          "the message's one part is not a %s file (%s has no multipart "
                          "message form; its probe does not recognise the part's first "
                          "bytes)",
                          f->name, f->name);
        else
            rc = tio__err(err, TIO_E_UNSUPPORTED, f->name, -1,
                          "%s has no multipart message form (expected one part holding a "
                          "%s file, got %zu parts)",
                          f->name, f->name, n);
    }
    if (rc) {
        tio_container_free(c);
        return rc;
    }
    *out = c;
    return TIO_OK;
}

int tio_open_parts(const tio_part *parts, size_t count, const tio_open_options *opts,
                   tio_container **out, tio_error *err) {
    if (!out || (!parts && count))
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL argument");
    *out = NULL;
    tio_limits lim = tio__limits_resolve(opts ? opts->limits : NULL);
    /* Each part costs at least a descriptor; the count is bounded like tensors. */
    if (count > lim.max_tensors * 2 + 2)
        return tio__err(err, TIO_E_LIMIT, NULL, -1,
                        "%zu parts exceed the limit of %llu (2 per tensor + 2)", count,
                        (unsigned long long)(lim.max_tensors * 2 + 2));
    static const uint8_t empty[1];
    tio_rpart *rp = calloc(count ? count : 1, sizeof *rp);
    if (!rp) return tio__nomem(err, NULL);
    uint8_t *copy = NULL;
    if (opts && (opts->flags & TIO_OPEN_COPY)) {
        size_t total = 0;
        for (size_t i = 0; i < count; i++) {
            if (tio__add_ovf(total, parts[i].size, &total)) {
                free(rp);
                return tio__err(err, TIO_E_OVERFLOW, NULL, -1, "part sizes overflow");
            }
        }
        copy = malloc(total ? total : 1);
        if (!copy) {
            free(rp);
            return tio__nomem(err, NULL);
        }
        size_t at = 0;
        for (size_t i = 0; i < count; i++) {
            if (parts[i].size) memcpy(copy + at, parts[i].data, parts[i].size);
            at += parts[i].size;
        }
    }
    size_t at = 0;
    for (size_t i = 0; i < count; i++) {
        if (!parts[i].data && parts[i].size) {
            free(rp);
            free(copy);
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "part %zu: NULL data", i);
        }
        rp[i].data = copy ? copy + at : (parts[i].data ? parts[i].data : empty);
        rp[i].size = parts[i].size;
        rp[i].offset = -1;
        at += parts[i].size;
    }
    int rc = tio__open_rparts(NULL, rp, count, opts, copy, copy ? free : NULL, out, err);
    free(rp);
    return rc;
}

/* ------------------------------------------------------------- encoding */

static int msg_push(tio_message *m, const void *data, size_t n, tio_error *err) {
    if (m->count == m->cap) {
        size_t cap = m->cap * 2;
        tio_part *np = m->parts == m->parts_inl ? malloc(cap * sizeof *np)
                                                : realloc(m->parts, cap * sizeof *np);
        if (!np) return tio__nomem(err, NULL);
        if (m->parts == m->parts_inl) memcpy(np, m->parts_inl, sizeof m->parts_inl);
        m->parts = np;
        m->cap = cap;
    }
    static const uint8_t empty[1];
    m->parts[m->count].data = n ? data : empty;
    m->parts[m->count].size = n;
    m->count++;
    m->total += n;
    return TIO_OK;
}

int tio__msg_add_owned(tio_message *m, void *buf, size_t n, tio_error *err) {
    if (m->owned_count == m->owned_cap) {
        size_t cap = m->owned_cap * 2;
        void **no = m->owned == m->owned_inl ? malloc(cap * sizeof *no)
                                             : realloc(m->owned, cap * sizeof *no);
        if (!no) {
            free(buf);
            return tio__nomem(err, NULL);
        }
        if (m->owned == m->owned_inl) memcpy(no, m->owned_inl, sizeof m->owned_inl);
        m->owned = no;
        m->owned_cap = cap;
    }
    m->owned[m->owned_count++] = buf;
    return msg_push(m, buf, n, err);
}

int tio__msg_add_copy(tio_message *m, const void *data, size_t n, tio_error *err) {
    if (n <= MSG_ARENA - m->arena_used) { /* small: into the arena */
        uint8_t *a = m->arena + m->arena_used;
        if (n) memcpy(a, data, n);
        m->arena_used += (n + 15) & ~(size_t)15;
        if (m->arena_used > MSG_ARENA) m->arena_used = MSG_ARENA;
        return msg_push(m, a, n, err);
    }
    void *b = malloc(n ? n : 1);
    if (!b) return tio__nomem(err, NULL);
    if (n) memcpy(b, data, n);
    return tio__msg_add_owned(m, b, n, err);
}

int tio__msg_add_tensor(tio_message *m, tio_write_plan *p, size_t i, tio_error *err) {
    const tio_wtensor *w = tio__plan_tensor(p, i);
    if (!w) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "no tensor %zu", i);
    const uint8_t *data = NULL, *indices = NULL;
    int rc = tio__plan_data(p, i, &data, &indices, err);
    if (rc) return rc;
    if (data == w->src->data && w->nbytes == w->src->nbytes) {
        if (!m->lent) {
            m->lent = tio__plan_container(p);
            tio__container_ref(m->lent);
        }
        return msg_push(m, data, w->nbytes, err);
    }
    return tio__msg_add_copy(m, data, w->nbytes, err); /* converted: scratch memory */
}

void tio__message_ref(tio_message *m) {
    atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
}

void tio__message_unref(tio_message *m) {
    if (!m || atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) != 1) return;
    for (size_t i = 0; i < m->owned_count; i++) free(m->owned[i]);
    if (m->owned != m->owned_inl) free(m->owned);
    if (m->parts != m->parts_inl) free(m->parts);
    /* releases the hold taken when data were lent */
    tio_container_free((tio_container *)(uintptr_t)m->lent);
    free(m);
}

void tio_message_free(tio_message *m) { tio__message_unref(m); }

int tio_message_encode(const tio_container *c, const tio_save_options *opts,
                       tio_message **out, tio_error *err) {
    if (!c || !out) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL argument");
    *out = NULL;
    if (!opts || !opts->format)
        return tio__err(err, TIO_E_FORMAT, NULL, -1, "no message format given");
    const tio_format_desc *f = tio__format_find(opts->format);
    if (!f) return tio__err(err, TIO_E_FORMAT, NULL, -1, "unknown format '%s'", opts->format);
    if (!f->write)
        return tio__err(err, TIO_E_UNSUPPORTED, f->name, -1, "%s cannot be written", f->name);
    tio_message *m = malloc(sizeof *m); /* the arena and inline lists need no zeroing */
    if (!m) return tio__nomem(err, f->name);
    atomic_init(&m->refs, 1);
    m->parts = m->parts_inl;
    m->count = 0;
    m->cap = MSG_INLINE_PARTS;
    m->owned = m->owned_inl;
    m->owned_count = 0;
    m->owned_cap = MSG_INLINE_OWNED;
    m->lent = NULL;
    m->total = 0;
    m->arena_used = 0;
    tio_write_plan *p = NULL;
    int rc = tio__plan_create(c, opts, f, &p, err);
    if (rc == TIO_OK) {
        if ((opts->flags & TIO_SAVE_SINGLE_PART) || !f->write_parts) {
            tio_sink s;
            tio__sink_init_mem(&s);
            rc = f->write(p, &s, err);
            if (rc == TIO_OK) {
                rc = tio__msg_add_owned(m, s.buf ? s.buf : malloc(1), s.len, err);
                s.buf = NULL;
            }
            tio__sink_dispose(&s);
        } else {
            rc = f->write_parts(p, m, err);
        }
    }
    tio__plan_destroy(p);
    if (rc) {
        tio__message_unref(m);
        return rc;
    }
    *out = m;
    return TIO_OK;
}

size_t tio_message_part_count(const tio_message *m) { return m ? m->count : 0; }

tio_part tio_message_part(const tio_message *m, size_t i) {
    tio_part none = {NULL, 0};
    if (!m || i >= m->count) return none;
    return m->parts[i];
}

uint64_t tio_message_size(const tio_message *m) { return m ? m->total : 0; }
