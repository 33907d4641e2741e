/* Shared by every fuzz target: decode → encode → decode, and the checks that
 * the two decodes agree and that encoding is deterministic. A broken
 * invariant calls fz_fail(), which aborts with a message: libFuzzer then
 * saves the input as a crash. Only the fuzz targets abort; the library never
 * does. */
#ifndef TIO_FUZZ_COMMON_H
#define TIO_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "tensio.h"

/* Prints "fuzz: <what>" and aborts. */
void fz_fail(const char *fmt, ...);

/* The error contract of a failed call: a code that matches the return value,
 * a non-empty message, and no container. */
void fz_check_error(int rc, const tio_error *e, const tio_container *c);

/* c1 and c2 hold the same tensors: names, dtypes, layouts, shapes, nnz,
 * values, indices and per-tensor metadata. */
void fz_check_same(const tio_container *c1, const tio_container *c2, const char *what);

/* Decodes data as `format` (NULL = probe). On success: hashes every tensor,
 * encodes it again in the format it was read as, decodes that, checks the
 * two agree and that a second encode gives the same bytes. */
void fz_roundtrip_file(const uint8_t *data, size_t size, const char *format);

/* The same for a multipart message (tio_open_parts / tio_message_encode).
 * The input is split into parts: each part is a 2-byte little-endian length
 * and its bytes; the last part takes what is left. */
void fz_roundtrip_parts(const uint8_t *data, size_t size, const char *format);

/* That split: at most FZ_MAX_PARTS parts into parts[]; returns the count. */
#define FZ_MAX_PARTS 64
size_t fz_split_parts(const uint8_t *data, size_t size, tio_part *parts);

#endif
