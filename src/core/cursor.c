/* The bounds-checked byte cursor every decoder reads through, and the
 * pread() window its header reads can come from. */
#include "internal.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

void tio__headsrc_init(tio_headsrc *h, int fd, const void *base, size_t size) {
    h->fd = fd;
    h->base = (const uint8_t *)base;
    h->size = size;
    h->last = 0;
    h->preads = 0;
    for (unsigned k = 0; k < 2; k++) h->w[k] = (tio_headwin){0, 0};
    h->pre = NULL;
    h->pre_off = NULL;
    h->pre_n = h->pre_len = h->pre_hint = 0;
}

void tio__headsrc_ahead(tio_headsrc *h, const uint64_t *off, size_t n, size_t len) {
    if (h->pre || h->fd < 0) return;
    h->pre = tio__preads_start(h->fd, off, n, len, h->size);
    if (!h->pre) return;
    h->pre_off = off;
    h->pre_n = n;
    h->pre_len = len;
    h->pre_hint = 0;
}

void tio__headsrc_ahead_end(tio_headsrc *h) {
    tio__preads_end(h->pre);
    h->pre = NULL;
    h->pre_off = NULL;
    h->pre_n = 0;
}

/* The entry of the read-ahead whose bytes hold [off, off+n), or SIZE_MAX:
 * the one after the last found first (records are read in order), else a
 * binary search. */
static size_t ahead_find(tio_headsrc *h, uint64_t off, size_t n) {
    const uint64_t *o = h->pre_off;
    size_t i = h->pre_hint;
    if (i >= h->pre_n || o[i] > off) {
        size_t lo = 0, hi = h->pre_n; /* the last o[i] <= off */
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if (o[mid] <= off) lo = mid;
            else hi = mid;
        }
        i = lo;
    } else {
        while (i + 1 < h->pre_n && o[i + 1] <= off) i++;
    }
    if (o[i] > off || off - o[i] > h->pre_len || n > h->pre_len - (size_t)(off - o[i]))
        return SIZE_MAX;
    h->pre_hint = i + 1;
    return i;
}

static int headwin_has(const tio_headwin *w, uint64_t off, size_t n) {
    uint64_t end = w->off + w->len;
    return w->len && off >= w->off && off <= end && n <= end - off;
}

/* Whether off is near w: within a quarter window before or after it. */
static int headwin_near(const tio_headwin *w, uint64_t off) {
    return w->len && off + TIO__HEAD_WINDOW / 4 >= w->off &&
           off < w->off + w->len + TIO__HEAD_WINDOW / 4;
}

size_t tio__pread_full(int fd, void *buf, size_t n, uint64_t off) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (uint8_t *)buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) errno = 0; /* the file ended */
        if (r <= 0) break;
        got += (size_t)r;
    }
    return got;
}

const uint8_t *tio__headsrc_held(tio_headsrc *h, uint64_t off, size_t n) {
    for (unsigned k = 0; k < 2; k++)
        if (headwin_has(&h->w[k], off, n)) {
            h->last = k;
            return h->bytes[k] + (off - h->w[k].off);
        }
    return NULL;
}

const uint8_t *tio__headsrc_get(tio_headsrc *h, uint64_t off, size_t n) {
    if (n > TIO__HEAD_MAX || off > h->size || n > h->size - off) return NULL;
    unsigned a = h->last, o = 1 - a; /* the window used last, the other */
    if (headwin_has(&h->w[a], off, n)) return h->bytes[a] + (off - h->w[a].off);
    if (headwin_has(&h->w[o], off, n)) {
        h->last = o;
        return h->bytes[o] + (off - h->w[o].off);
    }
    if (h->pre && h->pre_n) {
        size_t i = ahead_find(h, off, n);
        if (i != SIZE_MAX && tio__preads_take(h->pre, i, h->bytes[o])) {
            h->w[o] = (tio_headwin){h->pre_off[i], h->pre_len};
            h->last = o;
            return h->bytes[o] + (off - h->pre_off[i]);
        }
    }
    /* Near a window: the headers around it, read ahead (and a little back:
     * structs read in reverse within a record); else this header and a
     * little more, into the window not used last. */
    unsigned k = headwin_near(&h->w[a], off) ? a : o;
    int near = headwin_near(&h->w[k], off);
    uint64_t start = off;
    size_t want = n > TIO__HEAD_NEAR ? n : TIO__HEAD_NEAR;
    if (near) {
        start = off - (off < TIO__HEAD_WINDOW / 4 ? off : TIO__HEAD_WINDOW / 4);
        want = TIO__HEAD_WINDOW; /* >= (off - start) + n: n <= TIO__HEAD_MAX */
    }
    if (want > h->size - start) want = (size_t)(h->size - start);
    tio_headwin *w = &h->w[k];
    uint8_t *b = h->bytes[k];
    w->len = 0;
    size_t got = tio__pread_full(h->fd, b, want, start);
    if (got < (off - start) + n) return NULL; /* the caller reads the mapping */
    h->preads++;
    h->last = k;
    w->off = start;
    w->len = got;
    return b + (off - start);
}

void tio__cursor_use_head(tio_cursor *c, const tio_read_ctx *ctx) {
    /* a cursor over the file or a prefix of it: the same offsets */
    if (ctx->head && ctx->head->base == c->base && c->size <= ctx->head->size)
        c->head = ctx->head;
}

static int short_read(tio_cursor *c, uint64_t n, const char *what, tio_error *err) {
    return tio__err(err, TIO_E_TRUNCATED, c->format, (int64_t)c->pos,
                    "%s: expected %llu bytes, found %llu before the end of the data",
                    what, (unsigned long long)n, (unsigned long long)tio__cursor_left(c));
}

int tio__cursor_seek(tio_cursor *c, uint64_t pos, const char *what, tio_error *err) {
    if (pos > c->size)
        return tio__err(err, TIO_E_BOUNDS, c->format, (int64_t)c->pos,
                        "%s: offset %llu is past the end of the data (%llu bytes)", what,
                        (unsigned long long)pos, (unsigned long long)c->size);
    c->pos = (size_t)pos;
    return TIO_OK;
}

int tio__cursor_skip(tio_cursor *c, uint64_t n, const char *what, tio_error *err) {
    if (n > tio__cursor_left(c)) return short_read(c, n, what, err);
    c->pos += (size_t)n;
    return TIO_OK;
}

int tio__cursor_bytes(tio_cursor *c, uint64_t n, const uint8_t **out, const char *what,
                      tio_error *err) {
    if (n > tio__cursor_left(c)) return short_read(c, n, what, err);
    *out = c->base + c->pos;
    c->pos += (size_t)n;
    return TIO_OK;
}

int tio__cursor_head(tio_cursor *c, uint64_t n, const uint8_t **out, const char *what,
                     tio_error *err) {
    if (n > tio__cursor_left(c)) return short_read(c, n, what, err);
    const uint8_t *p = c->head ? tio__headsrc_at(c->head, c->pos, (size_t)n) : NULL;
    *out = p ? p : c->base + c->pos;
    c->pos += (size_t)n;
    return TIO_OK;
}

int tio__cursor_u8(tio_cursor *c, uint8_t *v, const char *what, tio_error *err) {
    const uint8_t *p = NULL;
    int rc = tio__cursor_head(c, 1, &p, what, err);
    if (rc == TIO_OK) *v = p[0];
    return rc;
}

int tio__cursor_u32(tio_cursor *c, uint32_t *v, const char *what, tio_error *err) {
    const uint8_t *p = NULL;
    int rc = tio__cursor_head(c, 4, &p, what, err);
    if (rc == TIO_OK) *v = tio__ld32(p);
    return rc;
}

int tio__cursor_u64(tio_cursor *c, uint64_t *v, const char *what, tio_error *err) {
    const uint8_t *p = NULL;
    int rc = tio__cursor_head(c, 8, &p, what, err);
    if (rc == TIO_OK) *v = tio__ld64(p);
    return rc;
}

int tio__cursor_i64(tio_cursor *c, int64_t *v, const char *what, tio_error *err) {
    uint64_t u;
    int rc = tio__cursor_u64(c, &u, what, err);
    if (rc == TIO_OK) *v = (int64_t)u;
    return rc;
}
