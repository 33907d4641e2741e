/* The bounds-checked byte cursor every decoder reads through. */
#include "internal.h"

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

int tio__cursor_u8(tio_cursor *c, uint8_t *v, const char *what, tio_error *err) {
    const uint8_t *p = NULL;
    int rc = tio__cursor_bytes(c, 1, &p, what, err);
    if (rc == TIO_OK) *v = p[0];
    return rc;
}

int tio__cursor_u32(tio_cursor *c, uint32_t *v, const char *what, tio_error *err) {
    const uint8_t *p = NULL;
    int rc = tio__cursor_bytes(c, 4, &p, what, err);
    if (rc == TIO_OK) *v = tio__ld32(p);
    return rc;
}

int tio__cursor_u64(tio_cursor *c, uint64_t *v, const char *what, tio_error *err) {
    const uint8_t *p = NULL;
    int rc = tio__cursor_bytes(c, 8, &p, what, err);
    if (rc == TIO_OK) *v = tio__ld64(p);
    return rc;
}

int tio__cursor_i64(tio_cursor *c, int64_t *v, const char *what, tio_error *err) {
    uint64_t u;
    int rc = tio__cursor_u64(c, &u, what, err);
    if (rc == TIO_OK) *v = (int64_t)u;
    return rc;
}
