/*
 * tenbin (.ten): the WebDataset / tensorcom binary tensor encoding.
 *
 * A file is a sequence of chunks: 8-byte magic "~TenBin~", int64 LE payload
 * length n (padding not counted), n payload bytes, zeros up to a multiple of
 * 64 (none when n = 0). Each array is a header chunk (int64 words: dtype code,
 * info, ndim, dims) followed by a data chunk (raw C-order LE elements).
 * See docs/formats/tenbin.md for what is accepted, reported and written.
 */
#include "core/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TB_FMT "tenbin"
#define TB_ALIGN 64u
#define TB_WORD 8u
#define TB_FIXED_WORDS 3u     /* dtype, info, ndim */
#define TB_WRITER_MAX_RANK 9u /* tenbin.save refuses ndim >= 10 */
#define TB_SMALL_RANK 16u

static const uint8_t tb_magic[8] = {'~', 'T', 'e', 'n', 'B', 'i', 'n', '~'};

static const struct tb_code {
    char code[3];
    tio_dtype dtype;
} tb_codes[] = {
    {"f2", TIO_FLOAT16}, {"f4", TIO_FLOAT32}, {"f8", TIO_FLOAT64}, {"i1", TIO_INT8},
    {"i2", TIO_INT16},   {"i4", TIO_INT32},   {"i8", TIO_INT64},   {"u1", TIO_UINT8},
    {"u2", TIO_UINT16},  {"u4", TIO_UINT32},  {"u8", TIO_UINT64},
};
#define TB_NCODES (sizeof tb_codes / sizeof tb_codes[0])

static const char *tb_code_of(tio_dtype dt) {
    for (size_t i = 0; i < TB_NCODES; i++)
        if (tb_codes[i].dtype == dt) return tb_codes[i].code;
    return NULL;
}

/* ------------------------------------------------------------ helpers */


/* A hint for a value that makes sense only when read big-endian: if the
 * byte-swapped value lies in [lo, hi] and is a multiple of `mult`, says so.
 * Otherwise an empty string. */
static const char *tb_swap_hint(int64_t v, uint64_t lo, uint64_t hi, uint64_t mult,
                                char *buf, size_t cap) {
    uint64_t s = __builtin_bswap64((uint64_t)v);
    buf[0] = '\0';
    if (s == (uint64_t)v || s < lo || s > hi || (mult > 1 && s % mult != 0)) return buf;
    snprintf(buf, cap,
             " (read big-endian it would be %llu: the file looks written on a big-endian "
             "host, which tenbin does not record)",
             (unsigned long long)s);
    return buf;
}

/* The big-endian hint for a chunk length (cursor just after the length
 * field). For a header chunk the hypothesis must also explain the ndim word:
 * read big-endian it equals length/8 - 3. */
static void tb_len_hint(const tio_read_ctx *ctx, const tio_cursor *cur, bool header,
                        int64_t len, char *buf, size_t cap) {
    uint64_t left = tio__cursor_left(cur);
    uint64_t hi = left;
    if (header && hi > ctx->limits.max_header_bytes) hi = ctx->limits.max_header_bytes;
    tb_swap_hint(len, header ? TB_FIXED_WORDS * TB_WORD : 1, hi, header ? TB_WORD : 1, buf,
                 cap);
    if (!header || !buf[0]) return;
    uint64_t swapped = __builtin_bswap64((uint64_t)len), ndim;
    tio_cursor peek = *cur; /* swapped <= left, so the ndim word is in bounds */
    if (tio__cursor_skip(&peek, 2 * TB_WORD, "ndim", NULL) != TIO_OK ||
        tio__cursor_u64(&peek, &ndim, "ndim", NULL) != TIO_OK ||
        __builtin_bswap64(ndim) != swapped / TB_WORD - TB_FIXED_WORDS)
        buf[0] = '\0';
}


/* Like the reference's unstr64: the 8-byte field with NULs stripped at both
 * ends, as [*start, *end). */
static void tb_strip(const uint8_t f[8], size_t *start, size_t *end) {
    size_t s = 0, e = 8;
    while (s < e && f[s] == 0) s++;
    while (e > s && f[e - 1] == 0) e--;
    *start = s;
    *end = e;
}

/* -------------------------------------------------------------- probe */

static int tb_probe(const uint8_t *data, size_t size) {
    if (size < sizeof tb_magic || memcmp(data, tb_magic, sizeof tb_magic) != 0) return 0;
    return 90;
}

/* --------------------------------------------------------------- read */

typedef struct tb_chunk {
    size_t off;        /* offset of the magic */
    size_t payload;    /* offset of the payload */
    size_t len;        /* payload length */
    const uint8_t *p;  /* payload */
    char where[48];    /* "header chunk at offset 64", "header frame 2" */
    bool frame;        /* a ZeroMQ frame (tensorcom multipart): no magic, no length */
} tb_chunk;

/* The offset of a chunk's length field for messages (-1 for a frame). */
static int64_t tb_len_at(const tb_chunk *ch) {
    return ch->frame ? -1 : (int64_t)(ch->off + 8);
}

/* Reads one chunk at the cursor: magic, length, payload, padding. A header
 * chunk must be complete (a data chunk has to follow it); the last data
 * chunk's padding may be cut short (a finding). */
static int tb_read_chunk(tio_read_ctx *ctx, tio_cursor *cur, size_t index, bool header,
                         tb_chunk *ch, tio_error *err) {
    const char *kind = header ? "header" : "data";
    size_t off = cur->pos;
    size_t left = tio__cursor_left(cur);
    const uint8_t *m;
    char esc[40], hint[160];
    int rc;

    ch->off = off;
    ch->frame = false;
    { /* "KIND chunk at offset OFF", without snprintf: this runs twice per array */
        static const char at[] = " chunk at offset ";
        char num[TIO__DEC_CAP];
        const char *d = tio__u64_dec(num, off);
        size_t k = strlen(kind), dl = strlen(d);
        _Static_assert(sizeof ch->where >= sizeof "header" - 1 + sizeof at - 1 + TIO__DEC_CAP,
                       "where holds the longest");
        memcpy(ch->where, kind, k);
        memcpy(ch->where + k, at, sizeof at - 1);
        memcpy(ch->where + k + sizeof at - 1, d, dl + 1);
    }
    if (!header && left == 0)
        return tio__err(err, TIO_E_TRUNCATED, TB_FMT, (int64_t)off,
                        "array %zu: the header chunk is not followed by a data chunk (the "
                        "data end at offset %zu; expected a chunk starting \"~TenBin~\")",
                        index, off);
    if (left < sizeof tb_magic) {
        rc = tio__cursor_head(cur, left, &m, "chunk magic", err);
        if (rc) return rc;
        if (memcmp(m, tb_magic, left) == 0)
            return tio__err(err, TIO_E_TRUNCATED, TB_FMT, (int64_t)off,
                            "array %zu: %s chunk: the data end inside its magic (%zu of 8 "
                            "bytes of \"~TenBin~\")",
                            index, kind, left);
        tio__escape(m, left, esc, sizeof esc);
        return tio__err(err, TIO_E_MAGIC, TB_FMT, (int64_t)off,
                        "array %zu: %s chunk: expected magic \"~TenBin~\", found %zu "
                        "trailing byte%s \"%s\"",
                        index, kind, left, left == 1 ? "" : "s", esc);
    }
    rc = tio__cursor_head(cur, sizeof tb_magic, &m, "chunk magic", err);
    if (rc) return rc;
    if (memcmp(m, tb_magic, sizeof tb_magic) != 0) {
        tio__escape(m, sizeof tb_magic, esc, sizeof esc);
        return tio__err(err, TIO_E_MAGIC, TB_FMT, (int64_t)off,
                        "array %zu: %s chunk: expected magic \"~TenBin~\", found \"%s\"",
                        index, kind, esc);
    }

    left = tio__cursor_left(cur);
    if (left < 8)
        return tio__err(err, TIO_E_TRUNCATED, TB_FMT, (int64_t)cur->pos,
                        "array %zu: %s chunk at offset %zu: the data end inside its length "
                        "field (%zu of 8 bytes)",
                        index, kind, off, left);
    int64_t len;
    rc = tio__cursor_i64(cur, &len, "chunk length", err);
    if (rc) return rc;
    left = tio__cursor_left(cur);
    if (len < 0 || (uint64_t)len > left) tb_len_hint(ctx, cur, header, len, hint, sizeof hint);
    if (len < 0)
        return tio__err(err, TIO_E_CORRUPT, TB_FMT, (int64_t)(off + 8),
                        "array %zu: %s chunk at offset %zu: payload length %lld is negative "
                        "(expected 0..%zu)%s",
                        index, kind, off, (long long)len, left, hint);
    if ((uint64_t)len > left)
        return tio__err(err, TIO_E_TRUNCATED, TB_FMT, (int64_t)(off + 8),
                        "array %zu: %s chunk at offset %zu: payload length %lld runs past the "
                        "end of the data (expected at most %zu, the bytes left)%s",
                        index, kind, off, (long long)len, left, hint);
    ch->payload = cur->pos;
    ch->len = (size_t)len;
    rc = tio__cursor_bytes(cur, ch->len, &ch->p, "chunk payload", err);
    if (rc) return rc;

    /* Padding to a multiple of 64 (len <= size, so this cannot overflow
     * unless size is within 64 of SIZE_MAX). */
    uint64_t padded;
    if (!tio__align_up((uint64_t)len, TB_ALIGN, &padded))
        return tio__err(err, TIO_E_OVERFLOW, TB_FMT, (int64_t)(off + 8),
                        "array %zu: %s chunk at offset %zu: payload length %lld overflows "
                        "when padded to 64",
                        index, kind, off, (long long)len);
    size_t pad = (size_t)(padded - (uint64_t)len);
    left = tio__cursor_left(cur);
    size_t have = pad < left ? pad : left;
    if (header && have < pad)
        return tio__err(err, TIO_E_TRUNCATED, TB_FMT, (int64_t)ctx->size,
                        "array %zu: the data end inside the padding of the header chunk at "
                        "offset %zu (%zu of %zu bytes) and no data chunk follows",
                        index, off, have, pad);
    const uint8_t *pp;
    rc = tio__cursor_head(cur, have, &pp, "chunk padding", err);
    if (rc) return rc;
    size_t nonzero = 0, first = 0;
    for (size_t i = 0; i < have; i++) {
        if (pp[i] != 0) {
            if (nonzero++ == 0) first = i;
        }
    }
    if (nonzero) {
        rc = tio__warn(ctx, TB_FMT, (int64_t)(ch->payload + ch->len + first), err,
                       "array %zu: %s chunk at offset %zu: padding byte is 0x%02x, expected 0 "
                       "(%zu of its %zu padding bytes are nonzero)",
                       index, kind, off, (unsigned)pp[first], nonzero, pad);
        if (rc) return rc;
    }
    if (have < pad) {
        rc = tio__warn(ctx, TB_FMT, (int64_t)ctx->size, err,
                       "array %zu: data chunk at offset %zu: the file ends inside its padding "
                       "(%zu of %zu bytes present; tenbin.save writes them all)",
                       index, off, have, pad);
        if (rc) return rc;
    }
    return TIO_OK;
}

typedef struct tb_header {
    tio_dtype dtype;
    char info[9];
    size_t rank;
    int64_t *dims; /* small or heap */
    int64_t small[TB_SMALL_RANK];
} tb_header;

static void tb_header_free(tb_header *h) {
    if (h->dims != h->small) free(h->dims);
    h->dims = h->small;
}

static int tb_parse_dtype(tio_read_ctx *ctx, size_t index, const tb_chunk *ch,
                          const uint8_t f[8], tb_header *h, tio_error *err) {
    int64_t at = (int64_t)ch->payload;
    char esc[40], extra[192];
    size_t s, e;
    tb_strip(f, &s, &e);
    for (size_t i = 0; i < 8; i++) {
        if (f[i] >= 0x80) {
            tio__escape(f, 8, esc, sizeof esc);
            return tio__err(err, TIO_E_DTYPE, TB_FMT, at,
                            "array %zu: %s: dtype field \"%s\" is not "
                            "ASCII (expected a code such as f4)",
                            index, ch->where, esc);
        }
    }
    for (size_t i = 0; i < TB_NCODES; i++) {
        if (e - s == 2 && memcmp(f + s, tb_codes[i].code, 2) == 0) {
            h->dtype = tb_codes[i].dtype;
            if (s > 0) {
                tio__escape(f, 8, esc, sizeof esc);
                int rc = tio__warn(ctx, TB_FMT, at, err,
                                   "array %zu: %s: dtype field "
                                   "\"%s\" has leading NUL bytes (tenbin.save writes the "
                                   "code first, NUL-padded)",
                                   index, ch->where, esc);
                if (rc) return rc;
            }
            return TIO_OK;
        }
    }
    /* A long NumPy name in place of the code gets a hint. */
    extra[0] = '\0';
    for (size_t i = 0; i < TB_NCODES; i++) {
        const char *ln = tio_dtype_name(tb_codes[i].dtype);
        size_t ll = strlen(ln);
        if (e - s == ll && memcmp(f + s, ln, ll) == 0)
            snprintf(extra, sizeof extra, "; \"%s\" is a NumPy name, tenbin stores its short "
                     "code \"%s\"", ln, tb_codes[i].code);
    }
    if (e - s == 6 && memcmp(f + s, "unit32", 6) == 0)
        snprintf(extra, sizeof extra, "; the reference's misspelling of uint32 is code u4");
    tio__escape(f + s, e - s, esc, sizeof esc);
    return tio__err(err, TIO_E_DTYPE, TB_FMT, at,
                    "array %zu: %s: unknown dtype code \"%s\" "
                    "(expected one of f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8, case-sensitive)%s",
                    index, ch->where, esc, extra);
}

static int tb_parse_info(tio_read_ctx *ctx, size_t index, const tb_chunk *ch,
                         const uint8_t f[8], tb_header *h, tio_error *err) {
    int64_t at = (int64_t)(ch->payload + TB_WORD);
    char esc[40];
    size_t s, e;
    tb_strip(f, &s, &e);
    for (size_t i = 0; i < 8; i++) {
        if (f[i] >= 0x80) {
            tio__escape(f, 8, esc, sizeof esc);
            return tio__err(err, TIO_E_CORRUPT, TB_FMT, at + (int64_t)i,
                            "array %zu: %s: info (name) \"%s\" is not "
                            "ASCII (byte %zu is 0x%02x; expected 7-bit ASCII)",
                            index, ch->where, esc, i, (unsigned)f[i]);
        }
    }
    for (size_t i = s; i < e; i++) {
        if (f[i] == 0) {
            tio__escape(f, 8, esc, sizeof esc);
            return tio__err(err, TIO_E_CORRUPT, TB_FMT, at + (int64_t)i,
                            "array %zu: %s: info (name) \"%s\" has a "
                            "NUL byte inside it (expected ASCII text, NUL-padded)",
                            index, ch->where, esc);
        }
    }
    memcpy(h->info, f + s, e - s);
    h->info[e - s] = '\0';
    if (s > 0 && e > s) {
        tio__escape(f, 8, esc, sizeof esc);
        int rc = tio__warn(ctx, TB_FMT, at, err,
                           "array %zu: %s: info \"%s\" has leading NUL "
                           "bytes (tenbin.save writes the text first, NUL-padded)",
                           index, ch->where, esc);
        if (rc) return rc;
    }
    return TIO_OK;
}

/* Decodes a header payload: dtype, info, ndim, dims. */
static int tb_parse_header(tio_read_ctx *ctx, size_t index, const tb_chunk *ch, tb_header *h,
                           tio_error *err) {
    char hint[160];
    int rc;
    if (ch->len % TB_WORD != 0)
        return tio__err(err, TIO_E_CORRUPT, TB_FMT, tb_len_at(ch),
                        "array %zu: %s: payload length %zu is not a "
                        "multiple of 8 (expected 8 x (3 + ndim) bytes of int64 words)",
                        index, ch->where, ch->len);
    if (ch->len < TB_FIXED_WORDS * TB_WORD)
        return tio__err(err, TIO_E_CORRUPT, TB_FMT, tb_len_at(ch),
                        "array %zu: %s: payload length %zu is too "
                        "short (expected at least 24: dtype, info, ndim)",
                        index, ch->where, ch->len);
    if (ch->len > ctx->limits.max_header_bytes)
        return tio__err(err, TIO_E_LIMIT, TB_FMT, tb_len_at(ch),
                        "array %zu: %s: payload length %zu exceeds "
                        "the header limit of %llu bytes",
                        index, ch->where, ch->len,
                        (unsigned long long)ctx->limits.max_header_bytes);

    /* A cursor bounded to the header payload. */
    tio_cursor hc;
    tio__cursor_init(&hc, ctx->data, ch->payload + ch->len, TB_FMT);
    tio__cursor_use_head(&hc, ctx);
    rc = tio__cursor_seek(&hc, ch->payload, "header payload", err);
    if (rc) return rc;
    const uint8_t *f;
    rc = tio__cursor_head(&hc, TB_WORD, &f, "dtype field", err);
    if (rc) return rc;
    rc = tb_parse_dtype(ctx, index, ch, f, h, err);
    if (rc) return rc;
    rc = tio__cursor_head(&hc, TB_WORD, &f, "info field", err);
    if (rc) return rc;
    rc = tb_parse_info(ctx, index, ch, f, h, err);
    if (rc) return rc;

    int64_t ndim;
    size_t ndim_at = hc.pos;
    rc = tio__cursor_i64(&hc, &ndim, "ndim", err);
    if (rc) return rc;
    size_t room = ch->len / TB_WORD - TB_FIXED_WORDS; /* dims the payload holds */
    if (ndim < 0)
        return tio__err(err, TIO_E_CORRUPT, TB_FMT, (int64_t)ndim_at,
                        "array %zu: %s: ndim %lld is negative "
                        "(expected 0..%zu)%s",
                        index, ch->where, (long long)ndim, room,
                        tb_swap_hint(ndim, 1, room, 1, hint, sizeof hint));
    if ((uint64_t)ndim > room)
        return tio__err(err, TIO_E_CORRUPT, TB_FMT, (int64_t)ndim_at,
                        "array %zu: %s: ndim %lld, but its %zu-byte "
                        "payload holds only %zu dims (expected ndim <= %zu)%s",
                        index, ch->where, (long long)ndim, ch->len, room, room,
                        tb_swap_hint(ndim, 1, room, 1, hint, sizeof hint));
    if ((uint64_t)ndim > ctx->limits.max_rank)
        return tio__err(err, TIO_E_LIMIT, TB_FMT, (int64_t)ndim_at,
                        "array %zu: %s: ndim %lld exceeds the rank "
                        "limit %u",
                        index, ch->where, (long long)ndim, (unsigned)ctx->limits.max_rank);
    h->rank = (size_t)ndim;
    if (h->rank > TB_WRITER_MAX_RANK) {
        rc = tio__warn(ctx, TB_FMT, (int64_t)ndim_at, err,
                       "array %zu: %s: ndim %zu exceeds 9, the most "
                       "the reference writer (tenbin.save) emits",
                       index, ch->where, h->rank);
        if (rc) return rc;
    }
    if (h->rank > TB_SMALL_RANK) {
        /* Bounded by the header payload (room) and by max_rank. */
        h->dims = malloc(h->rank * sizeof *h->dims);
        if (!h->dims) {
            h->dims = h->small;
            return tio__nomem(err, TB_FMT);
        }
    }
    for (size_t d = 0; d < h->rank; d++) {
        size_t at = hc.pos;
        rc = tio__cursor_i64(&hc, &h->dims[d], "dim", err);
        if (rc) return rc;
        if (h->dims[d] < 0)
            return tio__err(err, TIO_E_CORRUPT, TB_FMT, (int64_t)at,
                            "array %zu: %s: dim %zu is %lld (expected "
                            "a size >= 0)",
                            index, ch->where, d, (long long)h->dims[d]);
    }
    if (room > h->rank) {
        rc = tio__warn(ctx, TB_FMT, (int64_t)hc.pos, err,
                       "array %zu: %s: %zu unused word%s after the "
                       "%zu dims (tenbin.save writes exactly 3 + ndim words; they are ignored)",
                       index, ch->where, room - h->rank, room - h->rank == 1 ? "" : "s",
                       h->rank);
        if (rc) return rc;
    }
    return TIO_OK;
}

/* The byte size of the array a parsed header describes, overflow-checked.
 * (The shape text for messages is made only when there is an error.) */
static int tb_header_nbytes(const tb_header *h, size_t index, const tb_chunk *hch,
                            uint64_t *numel_out, uint64_t *nbytes_out, tio_error *err) {
    int64_t at = hch->frame ? -1 : (int64_t)hch->off;
    size_t esize = tio_dtype_size(h->dtype);
    char shape[96];
    uint64_t numel = 1, nbytes;
    for (size_t d = 0; d < h->rank; d++) {
        if (tio__mul64_ovf(numel, (uint64_t)h->dims[d], &numel) ||
            numel > (uint64_t)INT64_MAX) {
            tio__shape_str(h->dims, h->rank, shape, sizeof shape);
            return tio__err(err, TIO_E_OVERFLOW, TB_FMT, at,
                            "array %zu: %s: the element count of shape %s overflows int64",
                            index, hch->where, shape);
        }
    }
    if (tio__mul64_ovf(numel, esize, &nbytes) || nbytes > (uint64_t)INT64_MAX ||
        nbytes > SIZE_MAX) {
        tio__shape_str(h->dims, h->rank, shape, sizeof shape);
        return tio__err(err, TIO_E_OVERFLOW, TB_FMT, at,
                        "array %zu: %s: the byte size of %s %s overflows", index, hch->where,
                        tio_dtype_name(h->dtype), shape);
    }
    *numel_out = numel;
    *nbytes_out = nbytes;
    return TIO_OK;
}

/* Appends the tensor view a header and its data describe. */
static int tb_add_array(tio_read_ctx *ctx, const tb_header *h, const uint8_t *data,
                        size_t len, int64_t source_offset, tio_error *err) {
    tio_tensor_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.name = h->info[0] ? h->info : NULL;
    desc.dtype = h->dtype;
    desc.rank = h->rank;
    desc.shape = h->dims;
    desc.layout = TIO_LAYOUT_DENSE;
    desc.data = data;
    desc.nbytes = len;
    return tio__container_add_view(ctx->c, &desc, source_offset, TB_FMT, err);
}

/* One array: header chunk, data chunk, consistency, the tensor view. */
static int tb_read_array(tio_read_ctx *ctx, tio_cursor *cur, size_t index, tb_header *h,
                         tio_error *err) {
    tb_chunk hch, dch;
    int rc = tb_read_chunk(ctx, cur, index, true, &hch, err);
    if (rc) return rc;
    rc = tb_parse_header(ctx, index, &hch, h, err);
    if (rc) return rc;
    char shape[96];
    uint64_t numel, nbytes;
    rc = tb_header_nbytes(h, index, &hch, &numel, &nbytes, err);
    if (rc) return rc;
    rc = tb_read_chunk(ctx, cur, index, false, &dch, err);
    if (rc) return rc;
    if ((uint64_t)dch.len != nbytes) {
        tio__shape_str(h->dims, h->rank, shape, sizeof shape);
        return tio__err(err, TIO_E_CORRUPT, TB_FMT, (int64_t)(dch.off + 8),
                        "array %zu: %s holds %zu bytes, expected %llu (%s %s: %llu elements "
                        "of %zu bytes)",
                        index, dch.where, dch.len, (unsigned long long)nbytes,
                        tio_dtype_name(h->dtype), shape, (unsigned long long)numel,
                        tio_dtype_size(h->dtype));
    }
    return tb_add_array(ctx, h, dch.p, dch.len, (int64_t)hch.off, err);
}

static int tb_read(tio_read_ctx *ctx, tio_error *err) {
    tio_cursor cur;
    tio__cursor_init(&cur, ctx->data, ctx->size, TB_FMT);
    tio__cursor_use_head(&cur, ctx); /* headers by pread, data as views */
    for (size_t index = 0; tio__cursor_left(&cur) > 0; index++) {
        if ((uint64_t)index >= ctx->limits.max_tensors)
            return tio__err(err, TIO_E_LIMIT, TB_FMT, (int64_t)cur.pos,
                            "array %zu: more arrays than the limit of %llu (max_tensors)", index,
                            (unsigned long long)ctx->limits.max_tensors);
        tb_header h;
        memset(&h, 0, sizeof h);
        h.dims = h.small;
        int rc = tb_read_array(ctx, &cur, index, &h, err);
        tb_header_free(&h);
        if (rc) return rc;
    }
    return TIO_OK;
}

/* tensorcom's multipart framing: per array a header frame (the header chunk's
 * payload) and a data frame (the raw elements), no magic, length or padding.
 * Offsets in messages are within the frame. */
static int tb_read_parts(tio_read_ctx *ctx, const tio_rpart *parts, size_t n,
                         tio_error *err) {
    if (n % 2 != 0)
        return tio__err(err, TIO_E_CORRUPT, TB_FMT, -1,
                        "tensorcom message: %zu frames, expected an even number (a header "
                        "frame and a data frame per array)",
                        n);
    if ((uint64_t)(n / 2) > ctx->limits.max_tensors)
        return tio__err(err, TIO_E_LIMIT, TB_FMT, -1,
                        "tensorcom message: %zu arrays exceed the limit of %llu", n / 2,
                        (unsigned long long)ctx->limits.max_tensors);
    for (size_t i = 0; i < n / 2; i++) {
        const tio_rpart *hp = &parts[2 * i], *dp = &parts[2 * i + 1];
        tb_chunk hch;
        memset(&hch, 0, sizeof hch);
        hch.len = hp->size;
        hch.p = hp->data;
        hch.frame = true;
        { /* "header frame <2i>", without snprintf: this runs once per array received */
            static const char pre[] = "header frame ";
            char num[TIO__DEC_CAP];
            const char *d = tio__u64_dec(num, 2 * (uint64_t)i);
            memcpy(hch.where, pre, sizeof pre - 1);
            memcpy(hch.where + sizeof pre - 1, d, strlen(d) + 1);
        }
        tio_read_ctx sub = *ctx;
        sub.data = hp->data;
        sub.size = hp->size;
        tb_header h;
        memset(&h, 0, sizeof h);
        h.dims = h.small;
        char shape[96];
        uint64_t numel = 0, nbytes = 0;
        int rc = tb_parse_header(&sub, i, &hch, &h, err);
        if (rc == TIO_OK) rc = tb_header_nbytes(&h, i, &hch, &numel, &nbytes, err);
        if (rc == TIO_OK && (uint64_t)dp->size != nbytes) {
            tio__shape_str(h.dims, h.rank, shape, sizeof shape);
            rc = tio__err(err, TIO_E_CORRUPT, TB_FMT, -1,
                          "array %zu: data frame %zu holds %zu bytes, expected %llu (%s %s: "
                          "%llu elements of %zu bytes)",
                          i, 2 * i + 1, dp->size, (unsigned long long)nbytes,
                          tio_dtype_name(h.dtype), shape, (unsigned long long)numel,
                          tio_dtype_size(h.dtype));
        }
        if (rc == TIO_OK) rc = tb_add_array(ctx, &h, dp->data, dp->size, dp->offset, err);
        tb_header_free(&h);
        if (rc) return rc;
    }
    return TIO_OK;
}

/* -------------------------------------------------------------- write */

/* Whether a name fits the 8-byte info field: 1..8 ASCII bytes, no NUL. */
/* The empty name does not fit: an all-zero info field is no name. */
static bool tb_name_fits(const char *name) {
    size_t n = strlen(name);
    if (n == 0 || n > 8) return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)name[i] >= 0x80) return false;
    return true;
}

static int tb_check(const tio_write_plan *p, tio_error *err) {
    size_t n = tio__plan_count(p);
    unsigned flags = tio__plan_flags(p);
    for (size_t i = 0; i < n; i++) {
        const tio_wtensor *w = tio__plan_tensor(p, i);
        if (w->layout != TIO_LAYOUT_DENSE)
            return tio__err(err, TIO_E_LOSSY, TB_FMT, -1,
                            "tensor %zu: tenbin stores dense arrays only (use "
                            "TIO_SAVE_DENSIFY to write this COO tensor densified)",
                            i);
        if (!tb_code_of(w->dtype))
            return tio__err(err, TIO_E_LOSSY, TB_FMT, -1,
                            "tensor %zu: dtype %s has no tenbin code (expected one of float16 "
                            "float32 float64 int8..int64 uint8..uint64; TIO_SAVE_WIDEN converts "
                            "bool and bfloat16)",
                            i, tio_dtype_name(w->dtype) ? tio_dtype_name(w->dtype) : "?");
        if (w->rank > TB_WRITER_MAX_RANK)
            return tio__err(err, TIO_E_UNSUPPORTED, TB_FMT, -1,
                            "tensor %zu: rank %zu exceeds 9, the most the reference writer "
                            "(tenbin.save) accepts (\"too many dimensions\")",
                            i, w->rank);
        if (w->name && !w->name[0] && !(flags & TIO_SAVE_DROP_NAMES))
            return tio__err(err, TIO_E_LOSSY, TB_FMT, -1,
                            "tensor %zu: the empty name \"\" cannot be told from no name in "
                            "the tenbin info field (all zero bytes; TIO_SAVE_DROP_NAMES writes "
                            "it unnamed)",
                            i);
        if (w->name && !tb_name_fits(w->name) && !(flags & TIO_SAVE_DROP_NAMES)) {
            char esc[72];
            size_t len = strlen(w->name);
            tio__escape((const uint8_t *)w->name, len, esc, sizeof esc);
            return tio__err(err, TIO_E_LOSSY, TB_FMT, -1,
                            "tensor %zu: name \"%s\" (%zu bytes) does not fit the tenbin info "
                            "field (expected at most 8 ASCII characters; TIO_SAVE_DROP_NAMES "
                            "writes it unnamed)",
                            i, esc, len);
        }
    }
    return TIO_OK;
}

/* A chunk is magic, length, payload, zero padding to 64: exactly
 * tenbin.write_chunk. These write what surrounds the payload. */
static int tb_chunk_head(tio_sink *s, size_t n, tio_error *err) {
    uint8_t head[16];
    memcpy(head, tb_magic, sizeof tb_magic);
    tio__st64(head + 8, (uint64_t)n);
    return tio__sink_write(s, head, sizeof head, err);
}

static int tb_chunk_pad(tio_sink *s, size_t n, tio_error *err) {
    size_t pad = (TB_ALIGN - n % TB_ALIGN) % TB_ALIGN;
    return pad ? tio__sink_zeros(s, pad, err) : TIO_OK;
}

#define TB_HEADER_MAX (TB_WORD * (TB_FIXED_WORDS + TB_WRITER_MAX_RANK))

/* The header payload of a (checked) plan tensor: dtype code, info, ndim,
 * dims. Returns its length. */
static size_t tb_build_header(const tio_wtensor *w, uint8_t hdr[TB_HEADER_MAX]) {
    memset(hdr, 0, TB_HEADER_MAX);
    memcpy(hdr, tb_code_of(w->dtype), 2);
    if (w->name && tb_name_fits(w->name)) memcpy(hdr + TB_WORD, w->name, strlen(w->name));
    tio__st64(hdr + 2 * TB_WORD, (uint64_t)w->rank);
    for (size_t d = 0; d < w->rank; d++)
        tio__st64(hdr + TB_WORD * (TB_FIXED_WORDS + d), (uint64_t)w->shape[d]);
    return TB_WORD * (TB_FIXED_WORDS + w->rank);
}

static int tb_write(tio_write_plan *p, tio_sink *s, tio_error *err) {
    /* tb_check already ran on this plan (the core calls .check before .write),
     * so everything was checked before the first byte. */
    int rc;
    size_t n = tio__plan_count(p);
    for (size_t i = 0; i < n; i++) {
        const tio_wtensor *w = tio__plan_tensor(p, i);
        uint8_t hdr[TB_HEADER_MAX];
        size_t hlen = tb_build_header(w, hdr);
        rc = tb_chunk_head(s, hlen, err);
        if (!rc) rc = tio__sink_write(s, hdr, hlen, err);
        if (!rc) rc = tb_chunk_pad(s, hlen, err);
        /* the data chunk, streamed: a densified tensor is never held whole */
        if (!rc) rc = tb_chunk_head(s, w->nbytes, err);
        if (!rc) rc = tio__plan_sink_tensor(p, s, i, err);
        if (!rc) rc = tb_chunk_pad(s, w->nbytes, err);
        if (rc) return rc;
    }
    return TIO_OK;
}

/* tensorcom multipart: a header frame and a data frame (lent, not copied)
 * per array. */
static int tb_write_parts(tio_write_plan *p, struct tio_message *m, tio_error *err) {
    size_t n = tio__plan_count(p);
    for (size_t i = 0; i < n; i++) {
        uint8_t hdr[TB_HEADER_MAX];
        size_t hlen = tb_build_header(tio__plan_tensor(p, i), hdr);
        int rc = tio__msg_add_copy(m, hdr, hlen, err);
        if (rc) return rc;
        rc = tio__msg_add_tensor(m, p, i, err);
        if (rc) return rc;
    }
    return TIO_OK;
}

/* ------------------------------------------------------------ the format */

extern const tio_format_desc tio__format_tenbin;

const tio_format_desc tio__format_tenbin = {
    .name = "tenbin",
    .description = "WebDataset/tensorcom tenbin: a header and a data chunk per array, "
                   "64-byte padded",
    .extensions = ".ten",
    .caps = TIO_CAP_NAMES,
    .dtypes = TIO_DTYPE_BIT(TIO_FLOAT16) | TIO_DTYPE_BIT(TIO_FLOAT32) |
              TIO_DTYPE_BIT(TIO_FLOAT64) | TIO_DTYPE_BIT(TIO_INT8) | TIO_DTYPE_BIT(TIO_INT16) |
              TIO_DTYPE_BIT(TIO_INT32) | TIO_DTYPE_BIT(TIO_INT64) | TIO_DTYPE_BIT(TIO_UINT8) |
              TIO_DTYPE_BIT(TIO_UINT16) | TIO_DTYPE_BIT(TIO_UINT32) |
              TIO_DTYPE_BIT(TIO_UINT64),
    .probe = tb_probe,
    .read = tb_read,
    .check = tb_check,
    .write = tb_write,
    .read_parts = tb_read_parts,
    .write_parts = tb_write_parts,
};
