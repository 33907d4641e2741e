/* Sinks: a growable memory buffer or a buffered file descriptor. */
#include "sink.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FILE_BUF (1u << 20)

void tio__sink_init_mem(tio_sink *s) {
    memset(s, 0, sizeof *s);
    s->fd = -1;
}

int tio__sink_init_fd(tio_sink *s, int fd, tio_error *err) {
    memset(s, 0, sizeof *s);
    s->fd = fd;
    s->buf = malloc(FILE_BUF);
    if (!s->buf) return tio__nomem(err, NULL);
    s->cap = FILE_BUF;
    return TIO_OK;
}

void tio__sink_dispose(tio_sink *s) {
    free(s->buf);
    s->buf = NULL;
    s->len = s->cap = 0;
}

static int write_all(tio_sink *s, const uint8_t *p, size_t n, tio_error *err) {
    while (n) {
        ssize_t w = write(s->fd, p, n > (1u << 30) ? (1u << 30) : n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            s->failed = 1;
            return tio__err(err, TIO_E_IO, NULL, -1, "write failed after %llu bytes: %s",
                            (unsigned long long)s->pos, strerror(e));
        }
        p += w;
        n -= (size_t)w;
    }
    return TIO_OK;
}

int tio__sink_flush(tio_sink *s, tio_error *err) {
    if (s->fd < 0 || s->len == 0) return TIO_OK;
    int rc = write_all(s, s->buf, s->len, err);
    s->len = 0;
    return rc;
}

static int mem_reserve(tio_sink *s, size_t add, tio_error *err) {
    size_t need;
    if (tio__add_ovf(s->len, add, &need))
        return tio__err(err, TIO_E_OVERFLOW, NULL, -1, "output size overflows");
    if (need <= s->cap) return TIO_OK;
    size_t ncap = s->cap ? s->cap : 4096;
    while (ncap < need) ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
    uint8_t *nb = realloc(s->buf, ncap);
    if (!nb) {
        s->failed = 1;
        return tio__nomem(err, NULL);
    }
    s->buf = nb;
    s->cap = ncap;
    return TIO_OK;
}

int tio__sink_write(tio_sink *s, const void *p, size_t n, tio_error *err) {
    if (s->failed) return tio__err(err, TIO_E_IO, NULL, -1, "write after a failed write");
    if (n == 0) return TIO_OK;
    if (s->fd < 0) {
        int rc = mem_reserve(s, n, err);
        if (rc) return rc;
        memcpy(s->buf + s->len, p, n);
        s->len += n;
    } else if (n >= s->cap) {
        /* Large payloads go straight to the file, no copy. */
        int rc = tio__sink_flush(s, err);
        if (rc == TIO_OK) rc = write_all(s, p, n, err);
        if (rc) return rc;
    } else {
        if (s->cap - s->len < n) {
            int rc = tio__sink_flush(s, err);
            if (rc) return rc;
        }
        memcpy(s->buf + s->len, p, n);
        s->len += n;
    }
    s->pos += n;
    return TIO_OK;
}

int tio__sink_zeros(tio_sink *s, size_t n, tio_error *err) {
    static const uint8_t zeros[4096];
    while (n) {
        size_t k = n < sizeof zeros ? n : sizeof zeros;
        int rc = tio__sink_write(s, zeros, k, err);
        if (rc) return rc;
        n -= k;
    }
    return TIO_OK;
}

uint64_t tio__sink_pos(const tio_sink *s) { return s->pos; }
