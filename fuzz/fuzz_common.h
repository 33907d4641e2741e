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
/* Walks an object tree (tio_object) once through the API and checks what
 * it promises: ids below count, children present, tensors of c (none when c
 * is NULL), bytes NUL-terminated. */
void fz_check_tree(const tio_container *c, const tio_object *root, size_t count);

/* c1 and c2 hold the same tensors: names, dtypes, layouts, shapes, nnz,
 * values, indices and per-tensor metadata. */
void fz_check_same(const tio_container *c1, const tio_container *c2, const char *what);

/* The most bytes a fuzz input may expand sparse tensors to (the containers'
 * tio_limits.max_dense_bytes): far more than the real tensors of a 64 KiB
 * input need, and far below -malloc_limit_mb=64 and run.sh's 2 s -timeout.
 * Every path (the refusal, densify, the hashes, widening) runs at any bound;
 * the bound sets the cost of an input that claims a big dense size: with
 * 16 MiB fuzz_btf ran 5.4k inputs/s, with 1 MiB 11.8k (27.5k without the
 * dense work; 30 s from the seeds, one core). */
#define FZ_MAX_DENSE_BYTES (1u << 20)

/* Decodes data as `format` (NULL = probe), with max_dense_bytes at
 * FZ_MAX_DENSE_BYTES. On success: hashes every tensor (stored values and
 * indices, and dense: TIO_OK, or TIO_E_LIMIT for a COO tensor over the
 * bound; a small COO tensor's dense hash is its densified copy's), saves it
 * densified and widened to tenbin (tio_check_save must predict the refusal;
 * what is written must decode to the same shapes and dense hashes), encodes
 * it again in the format it was read as, decodes that, checks the two agree
 * and that a second encode gives the same bytes. */
void fz_roundtrip_file(const uint8_t *data, size_t size, const char *format);

/* The same for a multipart message (tio_open_parts / tio_message_encode),
 * dense work included.
 * The input is split into parts: each part is a 2-byte little-endian length
 * and its bytes; the last part takes what is left. */
void fz_roundtrip_parts(const uint8_t *data, size_t size, const char *format);

/* That split: at most FZ_MAX_PARTS parts into parts[]; returns the count. */
#define FZ_MAX_PARTS 64
size_t fz_split_parts(const uint8_t *data, size_t size, tio_part *parts);

#endif
