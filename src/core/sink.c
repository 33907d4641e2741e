/* Sinks: a growable memory buffer or a buffered file descriptor. */
/* copy_file_range() (Linux, glibc >= 2.27); everything else is POSIX. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sink.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>


#define FILE_BUF (1u << 20)
/* A referenced write at least this large is not copied. */
#define REF_MIN (32u << 10)
/* Gathered bytes are written once they reach this: large writes let the
 * file system use large folios (ext4 writes 64 KiB pieces ~25% slower). */
#define FLUSH_AT (8u << 20)
#define WRITE_MAX ((size_t)1 << 30)

/* Everything but the first buffer, which needs no clearing. */
#define SINK_HEAD offsetof(tio_sink, first)

void tio__sink_init_mem(tio_sink *s) {
    memset(s, 0, SINK_HEAD);
    s->fd = -1;
}

void tio__sink_init_fixed(tio_sink *s, void *buf, size_t cap) {
    tio__sink_init_mem(s);
    s->fixed = 1;
    s->buf = buf;
    s->cap = buf ? cap : 0;
}

int tio__sink_init_fd(tio_sink *s, int fd, tio_error *err) {
    memset(s, 0, SINK_HEAD);
    s->fd = fd;
    /* writev() takes at most IOV_MAX entries (1024 on Linux; 16 guaranteed) */
    long m = sysconf(_SC_IOV_MAX);
    s->iov_max = m < 16 ? 16 : m > TIO__SINK_IOV ? TIO__SINK_IOV : (int)m;
    s->buf = s->first;
    s->cap = sizeof s->first;
    (void)err;
    return TIO_OK;
}

void tio__sink_dispose(tio_sink *s) {
    if (s->buf != s->first && !s->fixed) free(s->buf);
    s->buf = NULL;
    s->len = s->cap = 0;
    s->niov = 0;
    s->pending = 0;
}

static int write_failed(tio_sink *s, int e, uint64_t done, tio_error *err) {
    s->failed = 1;
    return tio__err(err, TIO_E_IO, NULL, -1, "write failed after %llu bytes: %s",
                    (unsigned long long)done, strerror(e));
}

/* Writes iov[] in order with writev(), resuming after short writes. */
static int write_pending(tio_sink *s, tio_error *err) {
    struct iovec *v = s->iov;
    int n = s->niov;
    uint64_t done = s->pos - s->pending;
    while (n > 0) {
        int k = n > s->iov_max ? s->iov_max : n;
        ssize_t w = writev(s->fd, v, k);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return write_failed(s, w < 0 ? errno : EIO, done, err);
        size_t m = (size_t)w;
        done += m;
        while (n > 0 && m >= v->iov_len) {
            m -= v->iov_len;
            v++;
            n--;
        }
        if (n > 0) {
            v->iov_base = (uint8_t *)v->iov_base + m;
            v->iov_len -= m;
        }
    }
    s->niov = 0;
    s->pending = 0;
    s->len = 0;
    return TIO_OK;
}

int tio__sink_flush(tio_sink *s, tio_error *err) {
    if (s->fd < 0 || s->niov == 0) return TIO_OK;
    return write_pending(s, err);
}

/* Appends p[0..n) to iov[] (n <= WRITE_MAX), extending the last entry when
 * p continues it. */
static int gather(tio_sink *s, const void *p, size_t n, tio_error *err) {
    if (s->niov > 0) {
        struct iovec *last = &s->iov[s->niov - 1];
        if ((const uint8_t *)last->iov_base + last->iov_len == (const uint8_t *)p &&
            last->iov_len <= WRITE_MAX - n) {
            last->iov_len += n;
            s->pending += n;
            return TIO_OK;
        }
    }
    if (s->niov == TIO__SINK_IOV) {
        int rc = write_pending(s, err);
        if (rc) return rc;
    }
    s->iov[s->niov].iov_base = (void *)(uintptr_t)p;
    s->iov[s->niov].iov_len = n;
    s->niov++;
    s->pending += n;
    return TIO_OK;
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

static int file_write(tio_sink *s, const uint8_t *p, size_t n, int ref, tio_error *err) {
    while (n) {
        size_t k = n > WRITE_MAX ? WRITE_MAX : n;
        int rc;
        if (ref && k >= REF_MIN) {
            rc = gather(s, p, k, err);
        } else {
            /* Room in the buffer, and in iov[] for the piece: gather() must
             * not write what is pending (which empties the buffer) after the
             * bytes are copied in, or later copies overwrite them before
             * they are written. */
            if (s->cap - s->len < k || s->niov == TIO__SINK_IOV) {
                rc = write_pending(s, err);
                if (rc) return rc;
                if (s->buf == s->first) { /* a large file: the large buffer */
                    uint8_t *b = malloc(FILE_BUF);
                    if (!b) return tio__nomem(err, NULL);
                    s->buf = b;
                    s->cap = FILE_BUF;
                }
            }
            if (k > s->cap) k = s->cap;
            memcpy(s->buf + s->len, p, k);
            rc = gather(s, s->buf + s->len, k, err);
            s->len += k;
        }
        if (rc == TIO_OK && s->pending >= FLUSH_AT) rc = write_pending(s, err);
        if (rc) return rc;
        s->pos += k;
        p += k;
        n -= k;
    }
    return TIO_OK;
}

static int sink_put1(tio_sink *s, const void *p, size_t n, int ref, tio_error *err) {
    if (s->fd >= 0) return file_write(s, p, n, ref, err);
    if (s->fixed) {
        size_t end;
        if (tio__add_ovf(s->len, n, &end))
            return tio__err(err, TIO_E_OVERFLOW, NULL, -1, "output size overflows");
        if (s->len < s->cap) {
            size_t room = s->cap - s->len;
            memcpy(s->buf + s->len, p, n < room ? n : room);
        }
        s->len = end;
        s->pos += n;
        return TIO_OK;
    }
    int rc = mem_reserve(s, n, err);
    if (rc) return rc;
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    s->pos += n;
    return TIO_OK;
}

/* With a progress function, a large write goes in pieces of the progress
 * step, each reported once it is taken (a file sink writes what it gathered
 * every 8 MiB, so the counts follow the real writes). */
static int sink_put(tio_sink *s, const void *p, size_t n, int ref, tio_error *err) {
    if (s->failed) return tio__err(err, TIO_E_IO, NULL, -1, "write after a failed write");
    if (n == 0) return TIO_OK;
    if (!s->progress) return sink_put1(s, p, n, ref, err);
    const uint8_t *q = p;
    while (n) {
        size_t k = n < TIO__PROGRESS_STEP ? n : TIO__PROGRESS_STEP;
        int rc = sink_put1(s, q, k, ref, err);
        if (rc) return rc;
        tio__sink_progress(s);
        q += k;
        n -= k;
    }
    return TIO_OK;
}

int tio__sink_copy_range(tio_sink *s, int in_fd, uint64_t off, const void *mapped, size_t n,
                         tio_error *err) {
    if (s->fd < 0 || s->no_copy || in_fd < 0 || s->failed || off > (uint64_t)INT64_MAX)
        return tio__sink_write_ref(s, mapped, n, err);
    int rc = write_pending(s, err); /* what came before goes first */
    if (rc) return rc;
    size_t done = 0;
    while (done < n) {
        loff_t in_off = (loff_t)(off + done);
        size_t k = n - done > WRITE_MAX ? WRITE_MAX : n - done;
        if (s->progress && k > 16 * TIO__PROGRESS_STEP) k = 16 * TIO__PROGRESS_STEP;
        ssize_t w = copy_file_range(in_fd, &in_off, s->fd, NULL, k, 0);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) { /* not here (EXDEV, ENOSYS, EINVAL…) or the source shrank */
            s->no_copy = 1;
            break;
        }
        done += (size_t)w;
        s->pos += (uint64_t)w;
        if (s->progress) tio__sink_progress(s);
    }
    if (done == n) return TIO_OK;
    return tio__sink_write_ref(s, (const uint8_t *)mapped + done, n - done, err);
}

int tio__sink_write(tio_sink *s, const void *p, size_t n, tio_error *err) {
    return sink_put(s, p, n, 0, err);
}

int tio__sink_write_ref(tio_sink *s, const void *p, size_t n, tio_error *err) {
    return sink_put(s, p, n, 1, err);
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

/* Patches [at, at + n) in place when all of it is still pending in the copy
 * buffer (not written yet, not a caller's referenced bytes): a header
 * patched after its data costs no flush and pwrite(). Checks first (apply
 * 0), then copies (apply 1); returns whether it can / did. */
static int patch_pending(tio_sink *s, uint64_t at, const uint8_t *p, size_t n, int apply) {
    uint64_t o = s->pos - s->pending;
    if (at < o) return 0;
    uintptr_t lo = (uintptr_t)s->buf, hi = lo + s->len; /* the copy buffer's bytes */
    for (int i = 0; i < s->niov && n; i++) {
        const struct iovec *v = &s->iov[i];
        if (at >= o + v->iov_len) {
            o += v->iov_len;
            continue;
        }
        size_t skip = (size_t)(at - o), k = v->iov_len - skip;
        if (k > n) k = n;
        uint8_t *q = (uint8_t *)v->iov_base + skip;
        uintptr_t a = (uintptr_t)q;
        if (a < lo || a > hi || k > hi - a) return 0;
        if (apply) memcpy(q, p, k);
        p += k;
        at += k;
        n -= k;
        o += v->iov_len;
    }
    return n == 0;
}

int tio__sink_patch(tio_sink *s, uint64_t at, const void *p, size_t n, tio_error *err) {
    if (s->failed) return tio__err(err, TIO_E_IO, NULL, -1, "write after a failed write");
    if (at > s->pos || n > s->pos - at)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "patch past the end of the output");
    if (s->fd < 0) {
        if (s->fixed) { /* the part inside the caller's buffer */
            if (at >= s->cap) return TIO_OK;
            if (n > s->cap - at) n = (size_t)(s->cap - at);
        }
        memcpy(s->buf + at, p, n);
        return TIO_OK;
    }
    if (patch_pending(s, at, p, n, 0)) {
        patch_pending(s, at, p, n, 1);
        return TIO_OK;
    }
    int rc = tio__sink_flush(s, err);
    const uint8_t *q = p;
    while (rc == TIO_OK && n) {
        ssize_t w = pwrite(s->fd, q, n, (off_t)at);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return write_failed(s, w < 0 ? errno : EIO, at, err);
        q += (size_t)w;
        at += (uint64_t)w;
        n -= (size_t)w;
    }
    return rc;
}

void tio__buf_put(tio_buf *b, const void *s, size_t n) {
    if (b->oom || n == 0) return;
    if (b->cap - b->len < n) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc - b->len < n) {
            if (nc > SIZE_MAX / 2) {
                b->oom = 1;
                return;
            }
            nc *= 2;
        }
        char *np = realloc(b->p, nc);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}
