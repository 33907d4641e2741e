/* Sink internals shared by sink.c and save.c. */
#ifndef TIO_SINK_H
#define TIO_SINK_H

#include "internal.h"

#include <sys/uio.h>

#define TIO__SINK_IOV 256

/* A file sink gathers what it is given into iov[]: small writes are copied
 * into buf (an iovec over the copied range), large ones are referenced
 * (tio__sink_write_ref), and one writev() sends them all. */
struct tio_sink {
    int fd;        /* -1: memory sink */
    uint8_t *buf;  /* memory: the output; file: the copy buffer */
    size_t len, cap;
    uint64_t pos;  /* bytes written so far */
    int failed;
    struct iovec iov[TIO__SINK_IOV]; /* file: pending, in order */
    int niov;
    int iov_max;    /* entries one writev() takes */
    size_t pending; /* bytes in iov[] */
};

void tio__sink_init_mem(tio_sink *s);
int tio__sink_init_fd(tio_sink *s, int fd, tio_error *err);
int tio__sink_flush(tio_sink *s, tio_error *err);
void tio__sink_dispose(tio_sink *s);

#endif
