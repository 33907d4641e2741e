/*
 * Compressed WebDataset shards (.tar.gz, .tgz, .tar.bz2, .tar.xz, .tar.zst):
 * the whole stream decompressed into memory, bounded by max_dense_bytes,
 * then read as an uncompressed tar. gzip through zlib, bzip2 through
 * libbz2, xz through liblzma, zstd through libzstd (Debian's). A stream of
 * several members (gzip, bzip2, xz, zstd frames one after another, as
 * `cat a.gz b.gz` or pigz make) is decompressed whole, as the tools do.
 */
#include "tar/tar.h"

#include <bzlib.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#define FMT "tar"

const char *tio__tar_compression(const uint8_t *p, size_t n) {
    if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b) return "gzip";
    if (n >= 3 && memcmp(p, "BZh", 3) == 0) return "bzip2";
    if (n >= 6 && memcmp(p, "\xfd" "7zXZ\0", 6) == 0) return "xz";
    if (n >= 4 && memcmp(p, "\x28\xb5\x2f\xfd", 4) == 0) return "zstd";
    return NULL;
}

/* The output buffer: grown by doubling up to the limit. */
typedef struct dbuf {
    uint8_t *p;
    size_t len, cap;
    uint64_t limit;
} dbuf;

/* Room for more output: TIO_OK, or TIO_E_LIMIT when the buffer is at the
 * limit already, TIO_E_NOMEM. */
static int grow(dbuf *b, const char *kind, uint64_t at, tio_error *err) {
    if (b->cap >= b->limit)
        return tio__err(err, TIO_E_LIMIT, FMT, (int64_t)at,
                        "the %s stream decompresses to more than max_dense_bytes (%llu bytes; "
                        "raise the limit: tio_limits, the CLI's --max-dense-bytes)",
                        kind, (unsigned long long)b->limit);
    uint64_t cap = b->cap ? (uint64_t)b->cap * 2 : 1u << 20;
    if (cap > b->limit) cap = b->limit;
    if (cap > SIZE_MAX) cap = SIZE_MAX;
    uint8_t *p = realloc(b->p, (size_t)cap);
    if (!p) return tio__nomem(err, FMT);
    b->p = p;
    b->cap = (size_t)cap;
    return TIO_OK;
}

static int corrupt(const char *kind, uint64_t at, const char *why, tio_error *err) {
    return tio__err(err, TIO_E_CORRUPT, FMT, (int64_t)at,
                    "%s stream: %s (the offset is in the compressed file)", kind, why);
}

static int truncated(const char *kind, uint64_t at, tio_error *err) {
    return tio__err(err, TIO_E_TRUNCATED, FMT, (int64_t)at,
                    "%s stream: the file ends inside it (at byte %llu of the compressed file)",
                    kind, (unsigned long long)at);
}

/* zlib's and libbz2's counters are unsigned int: the input goes in chunks. */
#define CHUNK ((size_t)1 << 30)

static int gunzip(const uint8_t *in, size_t n, dbuf *b, tio_error *err) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 16) != Z_OK) return tio__nomem(err, FMT);
    size_t used = 0; /* input consumed */
    int rc = TIO_OK;
    for (;;) {
        if (b->len == b->cap && (rc = grow(b, "gzip", used, err)) != TIO_OK) break;
        size_t left = n - used, room = b->cap - b->len;
        z.next_in = (Bytef *)(uintptr_t)(in + used);
        z.avail_in = (uInt)(left < CHUNK ? left : CHUNK);
        z.next_out = b->p + b->len;
        z.avail_out = (uInt)(room < CHUNK ? room : CHUNK);
        uInt ain = z.avail_in, aout = z.avail_out;
        int zr = inflate(&z, Z_NO_FLUSH);
        used += ain - z.avail_in;
        b->len += aout - z.avail_out;
        if (zr == Z_STREAM_END) {
            /* another member may follow (concatenated gzip) */
            if (used == n) break;
            if (n - used < 2 || in[used] != 0x1f || in[used + 1] != 0x8b) {
                rc = corrupt("gzip", used, "bytes after the last member that are no gzip member",
                             err);
                break;
            }
            if (inflateReset(&z) != Z_OK) {
                rc = tio__nomem(err, FMT);
                break;
            }
            continue;
        }
        if (zr == Z_MEM_ERROR) {
            rc = tio__nomem(err, FMT);
            break;
        }
        if (zr == Z_DATA_ERROR || zr == Z_NEED_DICT || zr == Z_STREAM_ERROR) {
            rc = corrupt("gzip", used, z.msg ? z.msg : "invalid data", err);
            break;
        }
        if (zr == Z_BUF_ERROR && used == n && z.avail_out) {
            rc = truncated("gzip", used, err);
            break;
        }
    }
    inflateEnd(&z);
    return rc;
}

static int bunzip(const uint8_t *in, size_t n, dbuf *b, tio_error *err) {
    bz_stream z;
    memset(&z, 0, sizeof z);
    if (BZ2_bzDecompressInit(&z, 0, 0) != BZ_OK) return tio__nomem(err, FMT);
    size_t used = 0;
    int rc = TIO_OK;
    for (;;) {
        if (b->len == b->cap && (rc = grow(b, "bzip2", used, err)) != TIO_OK) break;
        size_t left = n - used, room = b->cap - b->len;
        z.next_in = (char *)(uintptr_t)(in + used);
        z.avail_in = (unsigned)(left < CHUNK ? left : CHUNK);
        z.next_out = (char *)(b->p + b->len);
        z.avail_out = (unsigned)(room < CHUNK ? room : CHUNK);
        unsigned ain = z.avail_in, aout = z.avail_out;
        int zr = BZ2_bzDecompress(&z);
        used += ain - z.avail_in;
        b->len += aout - z.avail_out;
        if (zr == BZ_STREAM_END) {
            if (used == n) break;
            if (n - used < 3 || memcmp(in + used, "BZh", 3) != 0) {
                rc = corrupt("bzip2", used, "bytes after the last stream that are no bzip2 "
                             "stream", err);
                break;
            }
            BZ2_bzDecompressEnd(&z);
            memset(&z, 0, sizeof z);
            if (BZ2_bzDecompressInit(&z, 0, 0) != BZ_OK) {
                rc = tio__nomem(err, FMT);
                break;
            }
            continue;
        }
        if (zr == BZ_MEM_ERROR) {
            rc = tio__nomem(err, FMT);
            break;
        }
        if (zr != BZ_OK) {
            rc = corrupt("bzip2", used, "invalid data", err);
            break;
        }
        if (used == n && z.avail_out) {
            rc = truncated("bzip2", used, err);
            break;
        }
    }
    BZ2_bzDecompressEnd(&z);
    return rc;
}

/* The decoders' own memory follows the output's bound: a stream whose
 * header asks for a window larger than all the output allowed could need is
 * refused instead of allocated (a few bytes must not buy 64 MiB). */
static uint64_t xz_memlimit(uint64_t limit) {
    /* what xz -9 needs (presets use at most 64 MiB of dictionary), and no
     * more than twice the output's bound, 16 MiB at least */
    uint64_t m = limit < (UINT64_C(64) << 20) ? 2 * limit : UINT64_C(128) << 20;
    return m < (UINT64_C(16) << 20) ? UINT64_C(16) << 20 : m;
}

static int zstd_window_log(uint64_t limit) {
    int lg = 10; /* zstd's smallest window */
    while (lg < 27 && (UINT64_C(1) << lg) < limit) lg++;
    return lg;
}

static int unxz(const uint8_t *in, size_t n, dbuf *b, tio_error *err) {
    lzma_stream z = LZMA_STREAM_INIT;
    uint64_t mem = xz_memlimit(b->limit);
    if (lzma_stream_decoder(&z, mem, LZMA_CONCATENATED) != LZMA_OK)
        return tio__nomem(err, FMT);
    z.next_in = in;
    z.avail_in = n;
    int rc = TIO_OK;
    for (;;) {
        if (b->len == b->cap && (rc = grow(b, "xz", n - z.avail_in, err)) != TIO_OK) break;
        z.next_out = b->p + b->len;
        z.avail_out = b->cap - b->len;
        size_t aout = z.avail_out;
        lzma_ret zr = lzma_code(&z, z.avail_in ? LZMA_RUN : LZMA_FINISH);
        b->len += aout - z.avail_out;
        uint64_t at = n - z.avail_in;
        if (zr == LZMA_STREAM_END) break;
        if (zr == LZMA_OK) continue;
        if (zr == LZMA_MEM_ERROR) rc = tio__nomem(err, FMT);
        else if (zr == LZMA_MEMLIMIT_ERROR)
            rc = tio__err(err, TIO_E_LIMIT, FMT, (int64_t)at,
                          "xz stream: its decoder needs more than %llu MiB (the output's "
                          "bound, max_dense_bytes, allows no more)",
                          (unsigned long long)(mem >> 20));
        else if (zr == LZMA_BUF_ERROR) rc = truncated("xz", at, err);
        else rc = corrupt("xz", at, zr == LZMA_FORMAT_ERROR ? "not an xz stream"
                                    : zr == LZMA_OPTIONS_ERROR ? "unsupported options"
                                                               : "invalid data", err);
        break;
    }
    lzma_end(&z);
    return rc;
}

static int unzstd(const uint8_t *in, size_t n, dbuf *b, tio_error *err) {
    ZSTD_DStream *z = ZSTD_createDStream();
    if (!z) return tio__nomem(err, FMT);
    /* a window up to 128 MiB (zstd's default maximum for decoding is 128 MiB
     * too: frames made with --long=31 need more and are refused), and no
     * larger than the output's bound */
    ZSTD_DCtx_setParameter(z, ZSTD_d_windowLogMax, zstd_window_log(b->limit));
    ZSTD_inBuffer ib = {in, n, 0};
    size_t last = 1; /* ZSTD_decompressStream's hint: 0 when a frame is complete */
    int rc = TIO_OK;
    while (ib.pos < n || last != 0) {
        if (b->len == b->cap && (rc = grow(b, "zstd", ib.pos, err)) != TIO_OK) break;
        ZSTD_outBuffer ob = {b->p + b->len, b->cap - b->len, 0};
        size_t before = ib.pos;
        last = ZSTD_decompressStream(z, &ob, &ib);
        b->len += ob.pos;
        if (ZSTD_isError(last)) {
            rc = corrupt("zstd", ib.pos, ZSTD_getErrorName(last), err);
            break;
        }
        if (ib.pos == n && last != 0 && ob.pos == 0 && ib.pos == before) {
            rc = truncated("zstd", ib.pos, err);
            break;
        }
    }
    ZSTD_freeDStream(z);
    return rc;
}

int tio__tar_decompress(const char *kind, const uint8_t *in, size_t n, uint64_t limit,
                        uint8_t **out, size_t *out_len, tio_error *err) {
    /* one byte past the limit: a stream of exactly `limit` bytes fits */
    dbuf b = {NULL, 0, 0, limit < UINT64_MAX ? limit + 1 : limit};
    int rc = strcmp(kind, "gzip") == 0    ? gunzip(in, n, &b, err)
             : strcmp(kind, "bzip2") == 0 ? bunzip(in, n, &b, err)
             : strcmp(kind, "xz") == 0    ? unxz(in, n, &b, err)
                                          : unzstd(in, n, &b, err);
    if (rc == TIO_OK && b.len > limit)
        rc = tio__err(err, TIO_E_LIMIT, FMT, -1,
                      "the %s stream decompresses to more than max_dense_bytes (%llu bytes; "
                      "raise the limit: tio_limits, the CLI's --max-dense-bytes)",
                      kind, (unsigned long long)limit);
    if (rc != TIO_OK) {
        free(b.p);
        return rc;
    }
    /* give back what the doubling left unused */
    uint8_t *p = b.len ? realloc(b.p, b.len) : b.p;
    *out = p ? p : b.p;
    *out_len = b.len;
    return TIO_OK;
}
