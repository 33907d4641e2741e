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
    h->win_off = 0;
    h->win_len = 0;
    h->preads = 0;
}

const uint8_t *tio__headsrc_get(tio_headsrc *h, uint64_t off, size_t n) {
    if (n > TIO__HEAD_MAX || off > h->size || n > h->size - off) return NULL;
    uint64_t end = h->win_off + h->win_len;
    if (off >= h->win_off && off <= end && n <= end - off) return h->win + (off - h->win_off);
    /* Near the end of the last window (or in it, but longer): headers close
     * together, read ahead; else just this header and a little more. */
    size_t want = h->win_len && off >= end && off - end < TIO__HEAD_WINDOW / 4
                      ? TIO__HEAD_WINDOW
                      : (n > TIO__HEAD_NEAR ? n : TIO__HEAD_NEAR);
    if (want > h->size - off) want = (size_t)(h->size - off);
    size_t got = 0;
    h->win_len = 0;
    while (got < want) {
        ssize_t r = pread(h->fd, h->win + got, want - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break; /* error or shrunk file */
        got += (size_t)r;
    }
    if (got < n) return NULL; /* the caller reads the mapping */
    h->preads++;
    h->win_off = off;
    h->win_len = got;
    return h->win;
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
    const uint8_t *p = c->head ? tio__headsrc_get(c->head, c->pos, (size_t)n) : NULL;
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
