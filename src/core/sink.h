/* Sink internals shared by sink.c and save.c. */
#ifndef TIO_SINK_H
#define TIO_SINK_H

#include "internal.h"

#include <sys/uio.h>

#define TIO__SINK_IOV 256
#define TIO__SINK_FIRST 8192

/* A file sink gathers what it is given into iov[]: small writes are copied
 * into buf (an iovec over the copied range), large ones are referenced
 * (tio__sink_write_ref), and one writev() sends them all. The copy buffer
 * starts as `first`, inside the sink: a small file costs no allocation (a
 * 1 MiB malloc is an mmap and munmap per save); once that fills up, the
 * pending pieces are written and a 1 MiB buffer takes over. */
struct tio_sink {
    int fd;        /* -1: memory sink */
    uint8_t *buf;  /* memory: the output; file: the copy buffer (first or malloc'ed) */
    size_t len, cap;
    uint64_t pos;  /* bytes written so far */
    int failed;
    int fixed;     /* memory: buf is the caller's, cap bytes; more is counted, not kept */
    struct iovec iov[TIO__SINK_IOV]; /* file: pending, in order */
    int niov;
    int iov_max;    /* entries one writev() takes */
    size_t pending; /* bytes in iov[] */
    /* tio_save_options.progress: called when pos passes progress_next */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
    uint64_t progress_total, progress_next;
    int no_copy; /* copy_file_range() failed once: write the mapped bytes */
    uint8_t first[TIO__SINK_FIRST]; /* file: the first copy buffer */
};

void tio__sink_init_mem(tio_sink *s);
/* A memory sink over the caller's buffer of cap bytes (buf may be NULL when
 * cap is 0): writes past cap only count (len, pos), as snprintf does. */
void tio__sink_init_fixed(tio_sink *s, void *buf, size_t cap);
int tio__sink_init_fd(tio_sink *s, int fd, tio_error *err);
int tio__sink_flush(tio_sink *s, tio_error *err);
void tio__sink_dispose(tio_sink *s);
/* Writes n bytes that are both at offset `off` of file in_fd and mapped at
 * `mapped`: a file sink copies them in the kernel (copy_file_range(), what
 * cp does: the mapping is not touched), falling back to writing the mapped
 * bytes where the file systems cannot (or the source shrank); other sinks
 * write the mapped bytes. Returns TIO_OK or an error. */
static inline int tio__sink_is_file(const tio_sink *s) { return s->fd >= 0; }
int tio__sink_copy_range(tio_sink *s, int in_fd, uint64_t off, const void *mapped, size_t n,
                         tio_error *err);
#define TIO__PROGRESS_STEP (1u << 20)
/* Reports progress if a MiB passed since the last report. */
static inline void tio__sink_progress(tio_sink *s) {
    if (s->progress && s->pos >= s->progress_next) {
        s->progress(s->progress_ctx, s->pos, s->progress_total > s->pos ? s->progress_total : s->pos);
        s->progress_next = s->pos + TIO__PROGRESS_STEP;
    }
}

#endif
