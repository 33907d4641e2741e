/*
 * A ustar/pax tar reader over the bounds-checked cursor (WebDataset shards).
 * Internal: the public face is tio_shard_* in include/tensio.h.
 */
#ifndef TIO_TAR_H
#define TIO_TAR_H

#include "core/internal.h"

#define TIO_TAR_BLOCK 512u

/* One regular-file member: its path (NUL-terminated, owned by the caller of
 * tio__tar_next) and where its data lie in the input. */
typedef struct tio_tar_entry {
    char *name;      /* malloc'd; the caller frees it */
    size_t name_len;
    uint64_t header; /* offset of its (first) header */
    uint64_t offset; /* offset of its data; a multiple of 512 */
    uint64_t size;
} tio_tar_entry;

/* Reads headers from c->pos on until the next regular file (directories,
 * links, devices, global pax headers skipped; GNU 'L' long names and pax 'x'
 * path/size applied): TIO_OK with *e filled and *done = 0, or TIO_OK with
 * *done = 1 at the end-of-archive block. Errors name "tar", the offset and
 * what was wrong; offsets in errors are origin + the cursor's (the cursor
 * over a window of a stream), those in *e the cursor's. */
int tio__tar_next(tio_cursor *c, uint64_t origin, const tio_limits *lim, tio_tar_entry *e,
                  int *done, tio_error *err);

/* A numeric header field (octal, or base-256 when its first byte has the
 * high bit): TIO_OK or TIO_E_CORRUPT / TIO_E_OVERFLOW naming `what`. */
int tio__tar_number(const uint8_t *field, size_t n, uint64_t at, const char *what,
                    uint64_t *out, tio_error *err);

/* Key and extension of member m as WebDataset splits its path (shard.c):
 * m->name (len bytes) must be followed by room for len + 1 more bytes, where
 * the key is written; m->sample is set to TIO_SHARD_NONE for a member of no
 * sample and left alone otherwise. */
void tio__shard_split_name(tio_shard_member *m, size_t len);
/* Extensions compared and hashed as WebDataset sees them: ASCII case ignored. */
int tio__shard_ext_cmp(const char *a, const char *b);
/* seeded as tio__hash_str (the table owner's address: tio__hash_seed) */
uint64_t tio__shard_ext_hash(uint64_t seed, const char *s);

/* src/tar/decompress.c: the compression of a stream from its magic
 * ("gzip", "bzip2", "xz", "zstd"), or NULL. */
const char *tio__tar_compression(const uint8_t *p, size_t n);
/* Decompresses in[0..n) (of that kind) whole into a malloc'ed *out: at most
 * `limit` bytes (TIO_E_LIMIT past it, before more is allocated), concatenated
 * members/frames included. Errors: TIO_E_CORRUPT, TIO_E_TRUNCATED with the
 * offset in the compressed input. */
int tio__tar_decompress(const char *kind, const uint8_t *in, size_t n, uint64_t limit,
                        uint8_t **out, size_t *out_len, tio_error *err);

/* An incremental decoder of one of those kinds. With `pull`, compressed
 * bytes come from pull(ctx, dst, n, &got, err) (got 0 at the source's end)
 * after pending[0..npending) (copied); without, pending is the whole input
 * (borrowed). `limit` bounds the decoder's memory (xz: its memory limit,
 * twice limit within 16..128 MiB; zstd: its window, ≤ limit and 128 MiB);
 * label (borrowed; may be NULL) names the source in messages. */
typedef struct tio__tar_zs tio__tar_zs;
typedef int (*tio__tar_pull)(void *ctx, uint8_t *dst, size_t n, size_t *got, tio_error *err);
int tio__tar_zs_new(const char *kind, uint64_t limit, const char *label, tio__tar_pull pull,
                    void *ctx, const uint8_t *pending, size_t npending, tio__tar_zs **out,
                    tio_error *err);
/* Up to cap decompressed bytes into out: *got 0 only at the end of the
 * compressed stream (every member). Errors: TIO_E_CORRUPT, TIO_E_TRUNCATED
 * (the source ended inside a member), TIO_E_LIMIT (a window past the
 * bound), each with the offset in the compressed data; a pull's own. */
int tio__tar_zs_read(tio__tar_zs *z, uint8_t *out, size_t cap, size_t *got, tio_error *err);
void tio__tar_zs_free(tio__tar_zs *z);

#endif
