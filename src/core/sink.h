/* Sink internals shared by sink.c and save.c. */
#ifndef TIO_SINK_H
#define TIO_SINK_H

#include "internal.h"

struct tio_sink {
    int fd;        /* -1: memory sink */
    uint8_t *buf;  /* memory: the output; file: the write buffer */
    size_t len, cap;
    uint64_t pos;  /* bytes written so far */
    int failed;
};

void tio__sink_init_mem(tio_sink *s);
int tio__sink_init_fd(tio_sink *s, int fd, tio_error *err);
int tio__sink_flush(tio_sink *s, tio_error *err);
void tio__sink_dispose(tio_sink *s);

#endif
