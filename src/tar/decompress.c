/*
 * Compressed WebDataset shards (.tar.gz, .tgz, .tar.bz2, .tar.xz, .tar.zst):
 * gzip through zlib, bzip2 through libbz2, xz through liblzma, zstd through
 * libzstd (Debian's). One incremental decoder (tio__tar_zs) serves both
 * readers: a shard read as a stream pulls compressed bytes from its source
 * as it needs them (memory: an input buffer and the decoder's own state,
 * whose window is bounded below), and a mapped shard is decompressed whole
 * into memory, bounded by max_dense_bytes. A stream of several members
 * (gzip, bzip2, xz, zstd frames one after another, as `cat a.gz b.gz` or
 * pigz make) is decompressed whole, as the tools do; bytes after the last
 * member that start no other member are refused.
 */
#include "tar/tar.h"

#include <bzlib.h>
#include <inttypes.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#define FMT "tar"
/* compressed bytes pulled from a source at a time */
#define PULL_BYTES ((size_t)1 << 16)
/* zlib's and libbz2's counters are unsigned int: larger runs go in pieces */
#define CHUNK ((size_t)1 << 30)

const char *tio__tar_compression(const uint8_t *p, size_t n) {
    if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b) return "gzip";
    if (n >= 3 && memcmp(p, "BZh", 3) == 0) return "bzip2";
    if (n >= 6 && memcmp(p, "\xfd" "7zXZ\0", 6) == 0) return "xz";
    if (n >= 4 && memcmp(p, "\x28\xb5\x2f\xfd", 4) == 0) return "zstd";
    return NULL;
}

enum { GZIP, BZIP2, XZ, ZSTD };

struct tio__tar_zs {
    int kind;
    const char *name;  /* "gzip" … */
    const char *label; /* the source, for messages (borrowed), or NULL */
    z_stream gz;
    bz_stream bz;
    lzma_stream xz;
    ZSTD_DStream *zd;
    int live;          /* the decoder is initialised */
    int between;       /* gzip/bzip2: a member ended; another may follow */
    size_t zstd_hint;  /* ZSTD_decompressStream's last answer: 0 at a frame's end */
    uint64_t memlimit; /* xz: the decoder's memory bound */
    tio__tar_pull pull;
    void *ctx;
    uint8_t *buf;      /* pulled bytes (NULL over a caller's buffer) */
    size_t cap;
    const uint8_t *ip; /* input not yet consumed */
    size_t ilen;
    int in_eof;        /* nothing more to pull */
    uint64_t consumed; /* compressed bytes the decoder took: offsets in messages */
    int end;           /* every member decoded, the input at its end */
};

/* The decoders' own memory follows a bound: a stream whose header asks for
 * a window larger than that is refused instead of allocated (a few bytes
 * must not buy 64 MiB). xz: what xz -9 needs (presets use at most 64 MiB of
 * dictionary), no more than twice the bound, 16 MiB at least. */
static uint64_t xz_memlimit(uint64_t limit) {
    uint64_t m = limit < (UINT64_C(64) << 20) ? 2 * limit : UINT64_C(128) << 20;
    return m < (UINT64_C(16) << 20) ? UINT64_C(16) << 20 : m;
}

/* zstd: a window up to 128 MiB (zstd's default maximum for decoding too:
 * frames made with --long=31 need more and are refused), no larger than
 * the bound. */
static int zstd_window_log(uint64_t limit) {
    int lg = 10; /* zstd's smallest window */
    while (lg < 27 && (UINT64_C(1) << lg) < limit) lg++;
    return lg;
}

static int zerr(const tio__tar_zs *z, int code, const char *why, tio_error *err) {
    return tio__err(err, code, FMT, (int64_t)z->consumed,
                    "%s stream: %s, at byte %" PRIu64 " of the compressed data%s%s%s", z->name,
                    why, z->consumed, z->label ? " (in " : "", z->label ? z->label : "",
                    z->label ? ")" : "");
}

static int corrupt(const tio__tar_zs *z, const char *why, tio_error *err) {
    return zerr(z, TIO_E_CORRUPT, why, err);
}

static int truncated(const tio__tar_zs *z, tio_error *err) {
    return zerr(z, TIO_E_TRUNCATED, "the data end inside it", err);
}

static int start(tio__tar_zs *z, tio_error *err) {
    int ok = 0;
    switch (z->kind) {
    case GZIP:
        memset(&z->gz, 0, sizeof z->gz);
        ok = inflateInit2(&z->gz, 15 + 16) == Z_OK;
        break;
    case BZIP2:
        memset(&z->bz, 0, sizeof z->bz);
        ok = BZ2_bzDecompressInit(&z->bz, 0, 0) == BZ_OK;
        break;
    case XZ:
        z->xz = (lzma_stream)LZMA_STREAM_INIT;
        ok = lzma_stream_decoder(&z->xz, z->memlimit, LZMA_CONCATENATED) == LZMA_OK;
        break;
    default:
        ok = z->zd != NULL; /* made (and its window bounded) by tio__tar_zs_new */
        z->zstd_hint = 1;
        break;
    }
    z->live = ok;
    return ok ? TIO_OK : tio__nomem(err, FMT);
}

static void stop(tio__tar_zs *z) {
    if (!z->live) return;
    if (z->kind == GZIP) inflateEnd(&z->gz);
    if (z->kind == BZIP2) BZ2_bzDecompressEnd(&z->bz);
    if (z->kind == XZ) lzma_end(&z->xz);
    z->live = 0;
}

void tio__tar_zs_free(tio__tar_zs *z) {
    if (!z) return;
    stop(z);
    ZSTD_freeDStream(z->zd);
    free(z->buf);
    free(z);
}

int tio__tar_zs_new(const char *kind, uint64_t limit, const char *label, tio__tar_pull pull,
                    void *ctx, const uint8_t *pending, size_t npending, tio__tar_zs **out,
                    tio_error *err) {
    *out = NULL;
    tio__tar_zs *z = calloc(1, sizeof *z);
    if (!z) return tio__nomem(err, FMT);
    z->kind = strcmp(kind, "gzip") == 0    ? GZIP
              : strcmp(kind, "bzip2") == 0 ? BZIP2
              : strcmp(kind, "xz") == 0    ? XZ
                                           : ZSTD;
    z->name = kind;
    z->label = label;
    z->pull = pull;
    z->ctx = ctx;
    z->memlimit = xz_memlimit(limit);
    int rc = TIO_OK;
    if (z->kind == ZSTD) {
        z->zd = ZSTD_createDStream();
        if (z->zd) ZSTD_DCtx_setParameter(z->zd, ZSTD_d_windowLogMax, zstd_window_log(limit));
    }
    if (pull) { /* the pending bytes copied: the caller's buffer is reused */
        z->cap = npending > PULL_BYTES ? npending : PULL_BYTES;
        z->buf = malloc(z->cap);
        if (!z->buf) rc = tio__nomem(err, FMT);
        else if (npending) memcpy(z->buf, pending, npending);
        z->ip = z->buf;
    } else { /* the whole input, borrowed */
        z->ip = pending;
        z->in_eof = 1;
    }
    z->ilen = npending;
    if (rc == TIO_OK) rc = start(z, err);
    if (rc) {
        tio__tar_zs_free(z);
        return rc;
    }
    *out = z;
    return TIO_OK;
}

/* More input when all is consumed: TIO_OK (z->in_eof at the source's end). */
static int refill(tio__tar_zs *z, tio_error *err) {
    if (z->ilen || z->in_eof) return TIO_OK;
    size_t got = 0;
    int rc = z->pull(z->ctx, z->buf, z->cap, &got, err);
    if (rc) return rc;
    z->ip = z->buf;
    z->ilen = got;
    if (!got) z->in_eof = 1;
    return TIO_OK;
}

static void took(tio__tar_zs *z, size_t k) {
    z->ip += k;
    z->ilen -= k;
    z->consumed += k;
}

/* After a gzip or bzip2 member: the end, or the next member begun. */
static int next_member(tio__tar_zs *z, tio_error *err) {
    if (!z->ilen) {
        z->end = z->in_eof;
        return TIO_OK; /* (more to pull first) */
    }
    int ok = z->kind == GZIP ? z->ip[0] == 0x1f : z->ip[0] == 'B';
    if (!ok)
        return corrupt(z, z->kind == GZIP ? "bytes after the last member that are no gzip member"
                                          : "bytes after the last stream that are no bzip2 stream",
                       err);
    z->between = 0;
    if (z->kind == GZIP) return inflateReset(&z->gz) == Z_OK ? TIO_OK : tio__nomem(err, FMT);
    stop(z);
    return start(z, err);
}

/* One run of the decoder over the input at hand into out[0..cap): *made
 * bytes out. Sets z->end at the stream's end; a source that ends before it
 * is TIO_E_TRUNCATED. */
static int step(tio__tar_zs *z, uint8_t *out, size_t cap, size_t *made, tio_error *err) {
    *made = 0;
    if (z->between) return next_member(z, err);
    size_t ain = z->ilen < CHUNK ? z->ilen : CHUNK, aout = cap < CHUNK ? cap : CHUNK;
    size_t left_in = ain, left_out = aout;
    int done = 0, bad = 0, nomem = 0;
    const char *why = "invalid data";
    if (z->kind == GZIP) {
        z->gz.next_in = (Bytef *)(uintptr_t)z->ip;
        z->gz.avail_in = (uInt)ain;
        z->gz.next_out = out;
        z->gz.avail_out = (uInt)aout;
        int r = inflate(&z->gz, Z_NO_FLUSH);
        left_in = z->gz.avail_in;
        left_out = z->gz.avail_out;
        done = r == Z_STREAM_END;
        nomem = r == Z_MEM_ERROR;
        bad = r == Z_DATA_ERROR || r == Z_NEED_DICT || r == Z_STREAM_ERROR;
        if (bad && z->gz.msg) why = z->gz.msg;
    } else if (z->kind == BZIP2) {
        z->bz.next_in = (char *)(uintptr_t)z->ip;
        z->bz.avail_in = (unsigned)ain;
        z->bz.next_out = (char *)out;
        z->bz.avail_out = (unsigned)aout;
        int r = BZ2_bzDecompress(&z->bz);
        left_in = z->bz.avail_in;
        left_out = z->bz.avail_out;
        done = r == BZ_STREAM_END;
        nomem = r == BZ_MEM_ERROR;
        bad = r != BZ_OK && !done && !nomem;
    } else if (z->kind == XZ) {
        z->xz.next_in = z->ip;
        z->xz.avail_in = ain;
        z->xz.next_out = out;
        z->xz.avail_out = aout;
        lzma_ret r = lzma_code(&z->xz, z->in_eof && !ain ? LZMA_FINISH : LZMA_RUN);
        left_in = z->xz.avail_in;
        left_out = z->xz.avail_out;
        done = r == LZMA_STREAM_END;
        nomem = r == LZMA_MEM_ERROR;
        if (r == LZMA_MEMLIMIT_ERROR) {
            took(z, ain - left_in);
            char why2[160];
            snprintf(why2, sizeof why2, "its decoder needs more than %" PRIu64 " MiB (the "
                     "bound the limits allow)", z->memlimit >> 20);
            return zerr(z, TIO_E_LIMIT, why2, err);
        }
        if (r == LZMA_BUF_ERROR && z->in_eof && !ain) {
            took(z, ain - left_in);
            return truncated(z, err);
        }
        bad = r != LZMA_OK && !done && !nomem && r != LZMA_BUF_ERROR;
        if (r == LZMA_FORMAT_ERROR) why = "not an xz stream";
        if (r == LZMA_OPTIONS_ERROR) why = "unsupported options";
    } else {
        ZSTD_inBuffer ib = {z->ip, ain, 0};
        ZSTD_outBuffer ob = {out, aout, 0};
        size_t r = ZSTD_decompressStream(z->zd, &ob, &ib);
        left_in = ain - ib.pos;
        left_out = aout - ob.pos;
        if (ZSTD_isError(r) && ZSTD_getErrorCode(r) == ZSTD_error_frameParameter_windowTooLarge) {
            took(z, ain - left_in);
            return zerr(z, TIO_E_LIMIT, "its frame asks for a window larger than the bound the "
                        "limits allow", err);
        }
        if (ZSTD_isError(r)) {
            bad = 1;
            why = ZSTD_getErrorName(r);
        } else if (ib.pos || ob.pos) { /* (called on nothing after a frame, it asks for
                                          the next frame's header: no news) */
            z->zstd_hint = r;
        }
    }
    took(z, ain - left_in);
    *made = aout - left_out;
    if (nomem) return tio__nomem(err, FMT);
    if (bad) return corrupt(z, why, err);
    if (done && z->kind == XZ) z->end = 1; /* LZMA_CONCATENATED: all streams, at EOF */
    if (done && (z->kind == GZIP || z->kind == BZIP2)) z->between = 1;
    if (z->kind == ZSTD && z->zstd_hint == 0 && !z->ilen && z->in_eof && *made < aout)
        z->end = 1; /* a frame ended, nothing follows, nothing buffered */
    /* no progress with nothing more to come: cut short */
    if (!done && !z->end && !*made && ain == left_in && !z->ilen && z->in_eof)
        return truncated(z, err);
    return TIO_OK;
}

int tio__tar_zs_read(tio__tar_zs *z, uint8_t *out, size_t cap, size_t *got, tio_error *err) {
    *got = 0;
    while (*got < cap && !z->end) {
        int rc = z->pull ? refill(z, err) : TIO_OK;
        if (rc) return rc;
        uint64_t before = z->consumed;
        int turn = z->between; /* a member's end: no bytes for it */
        size_t made = 0;
        rc = step(z, out + *got, cap - *got, &made, err);
        if (rc) return rc;
        *got += made;
        /* what is at hand goes out before the source is waited on */
        if (*got && !z->ilen && !z->in_eof) break;
        if (!turn && !made && z->consumed == before && z->ilen && !z->end)
            return corrupt(z, "the decoder makes no progress", err);
    }
    return TIO_OK;
}

/* ------------------------------------------------ a whole buffer at once */

int tio__tar_decompress(const char *kind, const uint8_t *in, size_t n, uint64_t limit,
                        uint8_t **out, size_t *out_len, tio_error *err) {
    tio__tar_zs *z;
    int rc = tio__tar_zs_new(kind, limit, NULL, NULL, NULL, in, n, &z, err);
    if (rc) return rc;
    /* one byte past the limit: a stream of exactly `limit` bytes fits */
    uint64_t bound = limit < UINT64_MAX ? limit + 1 : limit;
    if (bound > SIZE_MAX) bound = SIZE_MAX;
    uint8_t *p = NULL;
    size_t len = 0, cap = 0;
    while (rc == TIO_OK && !z->end) {
        if (len == cap) { /* grown by doubling from 1 MiB up to the bound */
            if (cap >= bound) {
                rc = tio__err(err, TIO_E_LIMIT, FMT, (int64_t)z->consumed,
                              "the %s stream decompresses to more than max_dense_bytes (%"
                              PRIu64 " bytes; raise the limit: tio_limits, the CLI's "
                              "--max-dense-bytes)", kind, limit);
                break;
            }
            uint64_t nc = cap ? (uint64_t)cap * 2 : UINT64_C(1) << 20;
            if (nc > bound) nc = bound;
            uint8_t *np = realloc(p, (size_t)nc);
            if (!np) {
                rc = tio__nomem(err, FMT);
                break;
            }
            p = np;
            cap = (size_t)nc;
        }
        size_t got = 0;
        rc = tio__tar_zs_read(z, p + len, cap - len, &got, err);
        len += got;
        if (rc == TIO_OK && !got && !z->end) rc = truncated(z, err);
    }
    tio__tar_zs_free(z);
    if (rc == TIO_OK && len > limit)
        rc = tio__err(err, TIO_E_LIMIT, FMT, -1,
                      "the %s stream decompresses to more than max_dense_bytes (%" PRIu64
                      " bytes; raise the limit: tio_limits, the CLI's --max-dense-bytes)",
                      kind, limit);
    if (rc != TIO_OK) {
        free(p);
        return rc;
    }
    /* give back what the doubling left unused */
    uint8_t *q = len ? realloc(p, len) : p;
    *out = q ? q : p;
    *out_len = len;
    return TIO_OK;
}
