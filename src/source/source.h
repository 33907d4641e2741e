/* Remote sources: files read over HTTP(S) by range requests (http.c), held
 * as a sparse buffer filled on demand (remote.c). See docs/sources.md. */
#ifndef TIO_SOURCE_H
#define TIO_SOURCE_H

#include "core/internal.h"

#include <sys/types.h>

/* ------------------------------------------------------------- http.c */

/* One URL read through libcurl: redirects followed (at most
 * limits.max_redirects, http and https only), TLS verified, connect and
 * stall timeouts (limits.timeout_ms), dropped transfers resumed with Range
 * (at most limits.max_retries times per request). */
typedef struct tio_http tio_http;

int tio__http_new(const char *url, const tio_limits *limits, tio_http **out, tio_error *err);
void tio__http_free(tio_http *h);

/* The first request: bytes [0, want) asked for by Range. On TIO_OK the
 * file's size is known (tio__http_size). When the server honours ranges,
 * *buf holds the first min(want, size) bytes (*got of them); when it does
 * not (200 with the whole body), *buf holds the whole file (*got == size,
 * at most limits.max_remote_bytes) and tio__http_ranges() is 0. *buf is
 * malloc'ed (NULL when *got is 0). */
int tio__http_first(tio_http *h, uint64_t want, uint8_t **buf, uint64_t *got, tio_error *err);
uint64_t tio__http_size(const tio_http *h);
int tio__http_ranges(const tio_http *h);
/* Bytes [off, off+len) of the file into dst, by one range request (resumed
 * where a transfer drops). The server must answer with exactly those
 * bytes of a file of the same size (and ETag, when it sends one). */
int tio__http_range(tio_http *h, uint64_t off, uint64_t len, uint8_t *dst, tio_error *err);
/* The file as one streamed GET, handed out in order by
 * tio__http_stream_read: memory is one transfer buffer whatever the size.
 * A drop, a stall or a short body is resumed with Range from the next
 * byte, at most limits.max_retries times in all (a 200 to a resumption:
 * the bytes taken already are dropped again); the size, the ETag and each
 * response are checked as for range requests. Not with tio__http_first. */
int tio__http_stream_start(tio_http *h, tio_error *err);
/* Up to n bytes into dst: at least one, or *got 0 at the end of the file. */
int tio__http_stream_read(tio_http *h, uint8_t *dst, size_t n, size_t *got, tio_error *err);
/* Body bytes received so far (every request, retries included). */
uint64_t tio__http_received(const tio_http *h);
/* The URL as messages show it (user:password@ left out). */
const char *tio__http_name(const tio_http *h);

/* Whether path is an http:// or https:// URL (case-insensitive scheme). */
int tio__is_url(const char *path);

/* ------------------------------------------------------------- pipe.c */

/* Starts COMMAND (/bin/sh -c) with its standard output on *fd (close-on-
 * exec), its process *pid. Messages name label. */
int tio__pipe_start(const char *cmd, const char *label, int *fd, pid_t *pid, tio_error *err);
/* Closes fd and waits for pid (SIGTERM first when stop): TIO_OK for exit
 * status 0, else TIO_E_IO naming label and the status or signal. */
int tio__pipe_finish(int fd, pid_t pid, int stop, const char *label, tio_error *err);

/* ----------------------------------------------------------- remote.c */

/* A remote file: a sparse buffer of its size (anonymous memory, reserved
 * not committed) whose chunks are fetched on demand. */
typedef struct tio_remote tio_remote;

/* Opens url and fetches its first bytes; *base is the buffer, *size the
 * file's size. */
int tio__remote_open(const char *url, const tio_limits *limits, tio_remote **out,
                     const uint8_t **base, size_t *size, size_t *have, tio_error *err);
/* Makes bytes [off, off+len) present (fetching the chunks not yet held). */
int tio__remote_need(tio_remote *r, uint64_t off, uint64_t len, tio_error *err);
/* Whether bytes [off, off+len) are present. */
int tio__remote_has(const tio_remote *r, uint64_t off, uint64_t len);
/* Bytes fetched (body bytes received). */
uint64_t tio__remote_received(const tio_remote *r);
void tio__remote_free(tio_remote *r);
/* Fetches the bytes tensor t of c (every tensor when t is NULL) views in
 * c's remote buffer: ranges sorted and joined where they touch, so that
 * tensors stored one after another come in one request. */
int tio__remote_fetch(tio_container *c, const tio_tensor *t, tio_error *err);

#endif
