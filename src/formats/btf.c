/*
 * BTF — the TFRT Binary Tensor Format (tensorflow/runtime).
 *
 *   u64 NUM_TENSORS, NUM_TENSORS × u64 absolute record offsets, then records:
 *   u64 rank | u8 dtype | u8 layout | 6 reserved | rank × u64 dims | payload |
 *   zero padding to a multiple of 8.
 *   Dense payload: the row-major elements.
 *   COO payload (layout 1; the document's 2 is read too): indices dims (nnz, rank)
 *   as two int64, nnz × rank int64 indices, values dims (nnz) as one int64, the
 *   nnz values. No inner headers, no inner padding.
 *
 * What TFRT really does (and the bugs not copied) is in docs/formats/btf.md.
 * Every read goes through a tio_cursor; every size is overflow-checked before
 * use; nothing is allocated before NUM_TENSORS was checked against the bytes
 * present and the limits.
 */
#include "core/internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BTF "btf"
#define BTF_ALIGN 8u
#define BTF_HEADER_BYTES 16u
#define BTF_LAYOUT_DENSE 0u
#define BTF_LAYOUT_COO 1u     /* TFRT's kCOO_EXPERIMENTAL */
#define BTF_LAYOUT_COO_DOC 2u /* what binary_tensor_format.md says */
#define BTF_PROBE_MAX_RANK 64u

/* Findings of one kind listed one by one; the rest are summarised. */
#define BTF_FINDINGS_LISTED 8u

/* BTF dtype code -> tio_dtype (TFRT `enum class TensorDType : uint8_t`). */
#define BTF_DTYPE_CODES 10u
static const tio_dtype btf_dtypes[BTF_DTYPE_CODES] = {
    TIO_INT8,    TIO_INT16,  TIO_INT32,  TIO_INT64,  TIO_FLOAT32,
    TIO_FLOAT64, TIO_UINT8, TIO_UINT16, TIO_UINT32, TIO_UINT64,
};

static int btf_code_of(tio_dtype d) {
    for (unsigned i = 0; i < BTF_DTYPE_CODES; i++)
        if (btf_dtypes[i] == d) return (int)i;
    return -1;
}

/* An offset for tio__err (offsets we report are always inside the input). */
static int64_t btf_off(uint64_t v) {
    return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* A stored u64 read as TFRT's int64 `Index`. */
static int64_t btf_as_i64(uint64_t u) {
    if (u <= (uint64_t)INT64_MAX) return (int64_t)u;
    return -(int64_t)(~u) - 1;
}

/* ------------------------------------------------------------------ probe */

static int btf_probe(const uint8_t *data, size_t size) {
    if (!data || size < 8) return 0;
    uint64_t n = tio__ld64(data);
    if (n == 0) return size == 8 ? 20 : 0;
    if (n > (size - 8) / 8) return 0;
    uint64_t table_end = 8 + 8 * n;
    uint64_t off = tio__ld64(data + 8);
    if (off < table_end || off > size || size - off < BTF_HEADER_BYTES) return 0;
    const uint8_t *h = data + (size_t)off;
    uint64_t rank = tio__ld64(h);
    if (rank > BTF_PROBE_MAX_RANK || h[8] >= BTF_DTYPE_CODES || h[9] > BTF_LAYOUT_COO_DOC)
        return 0;
    if ((size - (size_t)off - BTF_HEADER_BYTES) / 8 < rank) return 0;
    for (size_t k = 0; k < (size_t)rank; k++)
        if (tio__ld64(h + BTF_HEADER_BYTES + 8 * k) > (uint64_t)INT64_MAX) return 0;
    return off == table_end ? 60 : 40;
}

/* ------------------------------------------------------------------- read */

enum {
    F_UNALIGNED,
    F_RESERVED,
    F_LAYOUT2,
    F_OVERLAP,
    F_GAP,
    F_PADDING,
    F_TRAILING,
    F_KINDS
};

static const char *const btf_finding_names[F_KINDS] = {
    "records at offsets that are not a multiple of 8",
    "records with nonzero reserved bytes",
    "records with layout 2",
    "overlapping records",
    "unreferenced byte ranges between records",
    "records with nonzero padding",
    "trailing byte ranges",
};

typedef struct btf_rec {
    uint64_t start; /* record offset */
    uint64_t end;   /* just after the payload, before padding */
    size_t index;
} btf_rec;

/* A finding is kept until the whole file has been decoded, so that a hard
 * error anywhere wins over a validation finding (also under TIO_OPEN_STRICT). */
typedef struct btf_pending {
    uint64_t offset;
    char msg[TIO_ERROR_MESSAGE_MAX];
} btf_pending;

typedef struct btf_reader {
    tio_read_ctx *ctx;
    tio_cursor cur;
    tio_error *err;
    size_t findings[F_KINDS];
    btf_pending *pending;
    size_t npending, pending_cap;
    int64_t *dims;
    size_t dims_cap;
} btf_reader;

static int btf_finding(btf_reader *r, int kind, uint64_t offset, const char *fmt, ...)
    TIO_PRINTF(4, 5);

/* Notes a validation finding; the first BTF_FINDINGS_LISTED of each kind are
 * kept, the rest only counted (and summarised by btf_flush_findings). */
static int btf_finding(btf_reader *r, int kind, uint64_t offset, const char *fmt, ...) {
    if (r->findings[kind]++ >= BTF_FINDINGS_LISTED) return TIO_OK;
    if (r->npending == r->pending_cap) {
        size_t ncap = r->pending_cap ? r->pending_cap * 2 : 4;
        btf_pending *np = realloc(r->pending, ncap * sizeof *np);
        if (!np) return tio__nomem(r->err, BTF);
        r->pending = np;
        r->pending_cap = ncap;
    }
    btf_pending *f = &r->pending[r->npending++];
    f->offset = offset;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->msg, sizeof f->msg, fmt, ap);
    va_end(ap);
    return TIO_OK;
}

/* Hands the findings to the container, in the order they were found (the
 * first one is the error under TIO_OPEN_STRICT). */
static int btf_flush_findings(btf_reader *r) {
    for (size_t k = 0; k < r->npending; k++) {
        int rc = tio__warn(r->ctx, BTF, btf_off(r->pending[k].offset), r->err, "%s",
                           r->pending[k].msg);
        if (rc) return rc;
    }
    for (int k = 0; k < F_KINDS; k++) {
        if (r->findings[k] <= BTF_FINDINGS_LISTED) continue;
        int rc = tio__warn(r->ctx, BTF, -1, r->err, "%zu more %s (only the first %u are listed)",
                           r->findings[k] - BTF_FINDINGS_LISTED, btf_finding_names[k],
                           BTF_FINDINGS_LISTED);
        if (rc) return rc;
    }
    return TIO_OK;
}

/* Fails unless n more bytes are present at the cursor. */
static int btf_need(btf_reader *r, size_t i, uint64_t rec, uint64_t n, const char *what) {
    size_t left = tio__cursor_left(&r->cur);
    if (n <= left) return TIO_OK;
    return tio__err(r->err, TIO_E_TRUNCATED, BTF, btf_off(r->cur.pos),
                    "record %zu at offset %" PRIu64 ": %s needs %" PRIu64
                    " bytes, found %zu before the end of the file (%zu bytes)",
                    i, rec, what, n, left, r->cur.size);
}

/* Reads n stored u64 values as int64 into r->dims[0..n). */
static int btf_read_dims(btf_reader *r, size_t i, uint64_t rec, size_t n) {
    const uint8_t *p;
    int rc = btf_need(r, i, rec, (uint64_t)n * 8, "DIMS");
    if (rc) return rc;
    if (n > r->dims_cap) {
        int64_t *nd = realloc(r->dims, n * sizeof *nd);
        if (!nd) return tio__nomem(r->err, BTF);
        r->dims = nd;
        r->dims_cap = n;
    }
    uint64_t at = r->cur.pos;
    rc = tio__cursor_head(&r->cur, (uint64_t)n * 8, &p, "DIMS", r->err);
    if (rc) return rc;
    for (size_t k = 0; k < n; k++) {
        int64_t v = btf_as_i64(tio__ld64(p + 8 * k));
        if (v < 0)
            return tio__err(r->err, TIO_E_CORRUPT, BTF, btf_off(at + 8 * k),
                            "record %zu at offset %" PRIu64 ": dim %zu is %" PRId64
                            " (expected a size >= 0)",
                            i, rec, k, v);
        r->dims[k] = v;
    }
    return TIO_OK;
}

/* Reads one stored int64 that must be a count >= 0. */
static int btf_read_count(btf_reader *r, size_t i, uint64_t rec, const char *what,
                          int64_t *v) {
    uint64_t u = 0;
    int rc = btf_need(r, i, rec, 8, what);
    if (rc) return rc;
    rc = tio__cursor_u64(&r->cur, &u, what, r->err);
    if (rc) return rc;
    *v = btf_as_i64(u);
    return TIO_OK;
}

/* The COO payload after DIMS: fills nnz, indices, values, nbytes. */
static int btf_read_coo(btf_reader *r, size_t i, uint64_t rec, unsigned layout, size_t rank,
                        size_t esize, uint64_t *nnz_out, const uint8_t **indices,
                        const uint8_t **values, size_t *nbytes) {
    const char *hint = layout == BTF_LAYOUT_COO_DOC
                           ? " (layout 2, the document's COO code, read as COO)"
                           : "";
    uint64_t at = r->cur.pos;
    int64_t rows = 0, cols = 0, nvals = 0;
    int rc = btf_read_count(r, i, rec, "COO INDICES dims", &rows);
    if (rc) return rc;
    rc = btf_read_count(r, i, rec, "COO INDICES dims", &cols);
    if (rc) return rc;
    if (rows < 0 || cols < 0 || (uint64_t)cols != (uint64_t)rank)
        return tio__err(r->err, TIO_E_CORRUPT, BTF, btf_off(at),
                        "record %zu at offset %" PRIu64 ": COO INDICES dims are (%" PRId64
                        ", %" PRId64 "), expected (nnz, %zu) with nnz >= 0%s",
                        i, rec, rows, cols, rank, hint);
    uint64_t nnz = (uint64_t)rows, ibytes, vbytes;
    if (tio__mul64_ovf(nnz, (uint64_t)rank, &ibytes) || tio__mul64_ovf(ibytes, 8, &ibytes))
        return tio__err(r->err, TIO_E_OVERFLOW, BTF, btf_off(at),
                        "record %zu at offset %" PRIu64 ": COO INDICES of %" PRIu64
                        " x %zu int64 overflow the size arithmetic%s",
                        i, rec, nnz, rank, hint);
    rc = btf_need(r, i, rec, ibytes, "COO INDICES data");
    if (rc) return rc;
    uint64_t idx_at = r->cur.pos;
    rc = tio__cursor_bytes(&r->cur, ibytes, indices, "COO INDICES data", r->err);
    if (rc) return rc;
    at = r->cur.pos;
    rc = btf_read_count(r, i, rec, "COO VALUES dims", &nvals);
    if (rc) return rc;
    if (nvals < 0 || (uint64_t)nvals != nnz)
        return tio__err(r->err, TIO_E_CORRUPT, BTF, btf_off(at),
                        "record %zu at offset %" PRIu64 ": COO VALUES dims are (%" PRId64
                        "), expected (%" PRIu64 ") to match the INDICES rows%s",
                        i, rec, nvals, nnz, hint);
    if (tio__mul64_ovf(nnz, esize, &vbytes) || vbytes > SIZE_MAX)
        return tio__err(r->err, TIO_E_OVERFLOW, BTF, btf_off(at),
                        "record %zu at offset %" PRIu64 ": %" PRIu64
                        " values of %zu bytes overflow the size arithmetic",
                        i, rec, nnz, esize);
    rc = btf_need(r, i, rec, vbytes, "COO VALUES data");
    if (rc) return rc;
    rc = tio__cursor_bytes(&r->cur, vbytes, values, "COO VALUES data", r->err);
    if (rc) return rc;
    /* TFRT compares signed and lets negative indices through; we do not. */
    for (uint64_t e = 0; e < nnz; e++) {
        for (size_t k = 0; k < rank; k++) {
            uint64_t pos = (e * rank + k) * 8;
            int64_t v = btf_as_i64(tio__ld64(*indices + pos));
            if (v < 0 || v >= r->dims[k])
                return tio__err(r->err, TIO_E_CORRUPT, BTF, btf_off(idx_at + pos),
                                "record %zu at offset %" PRIu64 ": COO index %" PRIu64
                                ", coordinate %zu is %" PRId64
                                " (expected 0 <= index < dim %zu = %" PRId64 ")",
                                i, rec, e, k, v, k, r->dims[k]);
        }
    }
    *nnz_out = nnz;
    *nbytes = (size_t)vbytes;
    return TIO_OK;
}

/* Decodes the record of tensor i at `rec` (already checked: table_end <= rec
 * < size) and adds it to the container. */
static int btf_read_record(btf_reader *r, size_t i, uint64_t rec, btf_rec *out) {
    tio_read_ctx *ctx = r->ctx;
    const uint8_t *h = NULL;
    int rc = tio__cursor_seek(&r->cur, rec, "record", r->err);
    if (rc) return rc;
    rc = btf_need(r, i, rec, BTF_HEADER_BYTES, "the record header");
    if (rc) return rc;
    rc = tio__cursor_head(&r->cur, BTF_HEADER_BYTES, &h, "record header", r->err);
    if (rc) return rc;
    uint64_t rank = tio__ld64(h);
    unsigned code = h[8], layout = h[9];
    if (rank > ctx->limits.max_rank)
        return tio__err(r->err, TIO_E_LIMIT, BTF, btf_off(rec),
                        "record %zu at offset %" PRIu64 ": rank %" PRIu64
                        " exceeds the limit (max_rank %" PRIu32 ")",
                        i, rec, rank, ctx->limits.max_rank);
    if (code >= BTF_DTYPE_CODES)
        return tio__err(r->err, TIO_E_DTYPE, BTF, btf_off(rec + 8),
                        "record %zu at offset %" PRIu64
                        ": dtype code %u is not a BTF dtype (expected 0..9)",
                        i, rec, code);
    if (layout != BTF_LAYOUT_DENSE && layout != BTF_LAYOUT_COO && layout != BTF_LAYOUT_COO_DOC)
        return tio__err(r->err, TIO_E_UNSUPPORTED, BTF, btf_off(rec + 9),
                        "record %zu at offset %" PRIu64
                        ": layout code %u is not a BTF layout (expected 0 dense, 1 COO, "
                        "or 2, the document's COO code)",
                        i, rec, layout);
    const uint8_t *res = h + 10;
    if (res[0] | res[1] | res[2] | res[3] | res[4] | res[5]) {
        rc = btf_finding(r, F_RESERVED, rec + 10,
                         "record %zu at offset %" PRIu64
                         ": reserved bytes are %02x %02x %02x %02x %02x %02x (expected zeros)",
                         i, rec, res[0], res[1], res[2], res[3], res[4], res[5]);
        if (rc) return rc;
    }
    if (layout == BTF_LAYOUT_COO_DOC) {
        rc = btf_finding(r, F_LAYOUT2, rec + 9,
                         "record %zu at offset %" PRIu64
                         ": layout 2 (the document's COO code) read as COO; TFRT writes "
                         "and reads COO as layout 1 and rejects 2",
                         i, rec);
        if (rc) return rc;
    }
    size_t nrank = (size_t)rank; /* <= max_rank, a uint32_t */
    rc = btf_read_dims(r, i, rec, nrank);
    if (rc) return rc;

    tio_dtype dtype = btf_dtypes[code];
    size_t esize = tio_dtype_size(dtype), dense_bytes = 0;
    tio_error local;
    if (tio__shape_size(r->dims, nrank, esize, NULL, &dense_bytes, BTF, btf_off(rec),
                        &local) != TIO_OK) {
        char shape[96];
        size_t len = 0, k = 0;
        shape[0] = 0;
        for (; k < nrank && len + 24 < sizeof shape; k++) {
            int w = snprintf(shape + len, sizeof shape - len, "%s%" PRId64, k ? ", " : "",
                             r->dims[k]);
            if (w < 0) break;
            len += (size_t)w;
        }
        return tio__err(r->err, local.code, BTF, btf_off(rec + BTF_HEADER_BYTES),
                        "record %zu at offset %" PRIu64 ": shape [%s%s] of %s: the element "
                        "count or byte size does not fit in int64 (expected a product of dims "
                        "x %zu <= %" PRId64 ")",
                        i, rec, shape, k < nrank ? ", ..." : "", tio_dtype_name(dtype), esize,
                        INT64_MAX);
    }

    tio_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = NULL;
    d.dtype = dtype;
    d.rank = nrank;
    d.shape = r->dims;
    if (layout == BTF_LAYOUT_DENSE) {
        const uint8_t *data = NULL;
        rc = btf_need(r, i, rec, dense_bytes, "the data");
        if (rc) return rc;
        rc = tio__cursor_bytes(&r->cur, dense_bytes, &data, "data", r->err);
        if (rc) return rc;
        d.layout = TIO_LAYOUT_DENSE;
        d.data = data;
        d.nbytes = dense_bytes;
    } else {
        const uint8_t *indices = NULL, *values = NULL;
        uint64_t nnz = 0;
        size_t nbytes = 0;
        rc = btf_read_coo(r, i, rec, layout, nrank, esize, &nnz, &indices, &values, &nbytes);
        if (rc) return rc;
        d.layout = TIO_LAYOUT_COO;
        d.data = values;
        d.nbytes = nbytes;
        d.nnz = nnz;
        /* int64 LE in the mapping; the core reads them with tio__ld64. */
        d.indices = (const int64_t *)(const void *)indices;
    }
    out->start = rec;
    out->end = r->cur.pos;
    out->index = i;
    return tio__container_add_view(ctx->c, &d, btf_off(rec), BTF, r->err);
}

static int btf_rec_cmp(const void *a, const void *b) {
    const btf_rec *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->index != y->index) return x->index < y->index ? -1 : 1;
    return 0;
}

/* Reports nonzero bytes in [from, to) as padding of record `index`. */
static int btf_check_padding(btf_reader *r, size_t index, uint64_t from, uint64_t to) {
    if (from >= to) return TIO_OK;
    const uint8_t *p;
    int rc = tio__cursor_seek(&r->cur, from, "padding", r->err);
    if (rc) return rc;
    rc = tio__cursor_head(&r->cur, to - from, &p, "padding", r->err);
    if (rc) return rc;
    for (uint64_t k = 0; k < to - from; k++)
        if (p[k])
            return btf_finding(r, F_PADDING, from + k,
                               "record %zu: padding byte at offset %" PRIu64
                               " is 0x%02x (expected 0)",
                               index, from + k, p[k]);
    return TIO_OK;
}

/* Which bytes the records cover: overlaps, unreferenced gaps, nonzero padding,
 * trailing bytes. The padding of the record that ends the file may be absent. */
static int btf_check_coverage(btf_reader *r, btf_rec *recs, size_t n, uint64_t table_end) {
    int rc;
    size_t size = r->cur.size;
    int sorted = 1;
    for (size_t k = 1; k < n && sorted; k++)
        if (btf_rec_cmp(&recs[k - 1], &recs[k]) > 0) sorted = 0;
    if (!sorted) qsort(recs, n, sizeof *recs, btf_rec_cmp);

    uint64_t end = table_end;  /* furthest payload end so far */
    uint64_t pad_end = table_end;
    size_t owner = SIZE_MAX;   /* record that reaches `end`; SIZE_MAX = the header */
    for (size_t k = 0; k < n; k++) {
        const btf_rec *x = &recs[k];
        if (x->start < end) {
            /* x->start >= table_end was checked, so owner is a record. */
            rc = btf_finding(r, F_OVERLAP, x->start,
                             "record %zu at offset %" PRIu64 " overlaps record %zu, which ends "
                             "at offset %" PRIu64 " (expected records that do not share bytes)",
                             x->index, x->start, owner, end);
            if (rc) return rc;
        } else {
            if (owner != SIZE_MAX) {
                rc = btf_check_padding(r, owner, end, pad_end < x->start ? pad_end : x->start);
                if (rc) return rc;
            }
            if (x->start > pad_end) {
                rc = btf_finding(r, F_GAP, pad_end,
                                 "%" PRIu64 " bytes at offsets %" PRIu64 "..%" PRIu64
                                 " belong to no record (expected record %zu at offset %" PRIu64
                                 ")",
                                 x->start - pad_end, pad_end, x->start - 1, x->index, pad_end);
                if (rc) return rc;
            }
        }
        if (x->end > end) {
            end = x->end;
            owner = x->index;
            if (!tio__align_up(end, BTF_ALIGN, &pad_end)) pad_end = UINT64_MAX;
        }
    }
    if (owner != SIZE_MAX) {
        rc = btf_check_padding(r, owner, end, pad_end < size ? pad_end : size);
        if (rc) return rc;
    }
    if (size > pad_end) {
        if (owner == SIZE_MAX)
            rc = btf_finding(r, F_TRAILING, pad_end,
                             "%zu trailing bytes at offsets %" PRIu64 "..%zu after the offset "
                             "table of %zu records (expected the file to end at %" PRIu64 ")",
                             (size_t)(size - pad_end), pad_end, size - 1, n, pad_end);
        else
            rc = btf_finding(r, F_TRAILING, pad_end,
                             "%zu trailing bytes at offsets %" PRIu64 "..%zu after the padding "
                             "of record %zu, the last in the file (expected the file to end at "
                             "%" PRIu64 ")",
                             (size_t)(size - pad_end), pad_end, size - 1, owner, pad_end);
        if (rc) return rc;
    }
    return TIO_OK;
}

static uint64_t *btf_ahead(btf_reader *r, const uint8_t *table, size_t count,
                           uint64_t table_end, size_t size);
static int btf_read_records(btf_reader *r, const uint8_t *table, size_t count,
                            uint64_t table_end, size_t size, btf_rec *recs);

static int btf_read_all(btf_reader *r, btf_rec **recs_out) {
    tio_read_ctx *ctx = r->ctx;
    size_t size = ctx->size;
    uint64_t n = 0;
    int rc;
    if (size < 8)
        return tio__err(r->err, TIO_E_TRUNCATED, BTF, 0,
                        "NUM_TENSORS needs 8 bytes, found %zu (the file is %zu bytes)", size,
                        size);
    rc = tio__cursor_u64(&r->cur, &n, "NUM_TENSORS", r->err);
    if (rc) return rc;
    size_t room = (size - 8) / 8;
    if (n > room)
        return tio__err(r->err, TIO_E_TRUNCATED, BTF, 0,
                        "NUM_TENSORS is %" PRIu64 ", but the %zu bytes after it hold at most "
                        "%zu record offsets (expected NUM_TENSORS <= %zu)",
                        n, size - 8, room, room);
    if (n > ctx->limits.max_tensors)
        return tio__err(r->err, TIO_E_LIMIT, BTF, 0,
                        "NUM_TENSORS is %" PRIu64 ", above the limit (max_tensors %" PRIu64 ")",
                        n, ctx->limits.max_tensors);
    size_t count = (size_t)n; /* <= room */
    uint64_t table_end = 8 + 8 * n;
    if (table_end > ctx->limits.max_header_bytes)
        return tio__err(r->err, TIO_E_LIMIT, BTF, 0,
                        "the header (NUM_TENSORS and %" PRIu64 " record offsets) is %" PRIu64
                        " bytes, above the limit (max_header_bytes %" PRIu64 ")",
                        n, table_end, ctx->limits.max_header_bytes);
    const uint8_t *table = NULL;
    rc = tio__cursor_bytes(&r->cur, 8 * n, &table, "record offsets", r->err);
    if (rc) return rc;
    btf_rec *recs = NULL;
    if (count) {
        recs = calloc(count, sizeof *recs);
        if (!recs) return tio__nomem(r->err, BTF);
    }
    *recs_out = recs;
    uint64_t *ahead = btf_ahead(r, table, count, table_end, size);
    rc = btf_read_records(r, table, count, table_end, size, recs);
    if (ahead) {
        tio__headsrc_ahead_end(r->cur.head);
        free(ahead);
    }
    if (rc) return rc;
    rc = btf_check_coverage(r, recs, count, table_end);
    if (rc) return rc;
    return btf_flush_findings(r);
}

/* Far-apart records (a file of many large tensors): their headers are read
 * by a thread too (tio__headsrc_ahead), from the last up, while the loop
 * reads from the first: BTF_AHEAD bytes at each, the 16-byte header and
 * the dims of rank up to 6. Only when the offsets ascend, lie in the file,
 * and are at least a header window apart on average (so the thread's
 * BTF_AHEAD bytes per record stay below 1/256 of the input); else NULL and
 * the loop reads every header itself, as it also does for any the thread
 * has not begun. The offsets are checked again, with their messages, by the
 * loop. */
#define BTF_AHEAD 64u
#define BTF_AHEAD_MIN 256u
static uint64_t *btf_ahead(btf_reader *r, const uint8_t *table, size_t count,
                           uint64_t table_end, size_t size) {
    if (!r->cur.head || count < BTF_AHEAD_MIN || size < table_end ||
        (size - table_end) / count < TIO__HEAD_WINDOW)
        return NULL;
    uint64_t *off = malloc(count * sizeof *off);
    if (!off) return NULL;
    for (size_t i = 0; i < count; i++) {
        off[i] = tio__ld64(table + 8 * i);
        if (off[i] < table_end || off[i] >= size || (i && off[i] <= off[i - 1])) {
            free(off);
            return NULL;
        }
    }
    tio__headsrc_ahead(r->cur.head, off, count, BTF_AHEAD);
    return off;
}

static int btf_read_records(btf_reader *r, const uint8_t *table, size_t count,
                            uint64_t table_end, size_t size, btf_rec *recs) {
    int rc;
    for (size_t i = 0; i < count; i++) {
        uint64_t slot = 8 + 8 * (uint64_t)i;
        /* the table is read from the mapping (n / 512 pages), the records
         * through the header window (see tio_headsrc) */
        uint64_t rec = tio__ld64(table + 8 * i);
        if (rec < table_end)
            return tio__err(r->err, TIO_E_CORRUPT, BTF, btf_off(slot),
                            "record %zu: offset %" PRIu64 " points into the file header "
                            "(expected >= %" PRIu64 ", the end of the offset table)",
                            i, rec, table_end);
        if (rec >= size)
            return tio__err(r->err, TIO_E_BOUNDS, BTF, btf_off(slot),
                            "record %zu: offset %" PRIu64 " is past the end of the file "
                            "(expected < %zu, the file size)",
                            i, rec, size);
        if (rec % BTF_ALIGN) {
            rc = btf_finding(r, F_UNALIGNED, rec,
                             "record %zu at offset %" PRIu64 ": offset is not a multiple of 8 "
                             "(%" PRIu64 " mod 8 = %" PRIu64 "; files written before TFRT "
                             "edfdfa85 had no padding)",
                             i, rec, rec, rec % BTF_ALIGN);
            if (rc) return rc;
        }
        rc = btf_read_record(r, i, rec, &recs[i]);
        if (rc) return rc;
    }
    return TIO_OK;
}

static int btf_read(tio_read_ctx *ctx, tio_error *err) {
    btf_reader r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.err = err;
    tio__cursor_init(&r.cur, ctx->data, ctx->size, BTF);
    tio__cursor_use_head(&r.cur, ctx);
    btf_rec *recs = NULL;
    int rc = btf_read_all(&r, &recs);
    free(recs);
    free(r.dims);
    free(r.pending);
    return rc;
}

/* ------------------------------------------------------------------ write */

/* Bytes of tensor w's record: header, DIMS, payload, padding. */
static int btf_record_size(const tio_wtensor *w, size_t i, uint64_t *out, tio_error *err) {
    size_t esize = tio_dtype_size(w->dtype);
    uint64_t dims, payload, expect, t;
    if (tio__mul64_ovf((uint64_t)w->rank, 8, &dims)) goto overflow;
    if (w->layout == TIO_LAYOUT_DENSE) {
        if (tio__mul64_ovf(w->numel, esize, &expect)) goto overflow;
        payload = w->nbytes;
    } else if (w->layout == TIO_LAYOUT_COO) {
        /* (nnz, rank) + indices + (nnz) + values */
        if (tio__mul64_ovf(w->nnz, esize, &expect)) goto overflow;
        if (tio__mul64_ovf(w->nnz, (uint64_t)w->rank, &t) || tio__mul64_ovf(t, 8, &t) ||
            tio__add64_ovf(t, 24, &t) || tio__add64_ovf(t, w->nbytes, &payload))
            goto overflow;
    } else {
        return tio__err(err, TIO_E_UNSUPPORTED, BTF, -1,
                        "tensor %zu: layout %d cannot be stored in BTF (expected dense or COO)",
                        i, (int)w->layout);
    }
    if (expect != w->nbytes)
        return tio__err(err, TIO_E_CORRUPT, BTF, -1,
                        "tensor %zu: %zu data bytes to write, expected %" PRIu64, i, w->nbytes,
                        expect);
    uint64_t size;
    if (tio__add64_ovf(BTF_HEADER_BYTES, dims, &size) || tio__add64_ovf(size, payload, &size) ||
        !tio__align_up(size, BTF_ALIGN, &size))
        goto overflow;
    *out = size;
    return TIO_OK;
overflow:
    return tio__err(err, TIO_E_OVERFLOW, BTF, -1,
                    "tensor %zu: the record size overflows 64-bit arithmetic", i);
}

static int btf_put64(tio_sink *s, uint64_t v, tio_error *err) {
    uint8_t b[8];
    tio__st64(b, v);
    return tio__sink_write(s, b, sizeof b, err);
}

static int btf_write(tio_write_plan *p, tio_sink *s, tio_error *err) {
    size_t n = tio__plan_count(p);
    uint64_t off, rsize = 0;
    int rc;

    /* Everything is checked and every offset computed before the first byte
     * (TFRT fails on an unsupported dtype after writing the offset table). */
    if ((uint64_t)n > (UINT64_MAX - 8) / 8)
        return tio__err(err, TIO_E_OVERFLOW, BTF, -1, "%zu tensors overflow the offset table", n);
    off = 8 + 8 * (uint64_t)n;
    for (size_t i = 0; i < n; i++) {
        const tio_wtensor *w = tio__plan_tensor(p, i);
        if (btf_code_of(w->dtype) < 0)
            return tio__err(err, TIO_E_DTYPE, BTF, -1,
                            "tensor %zu: dtype %s cannot be stored in BTF (expected int8..int64, "
                            "uint8..uint64, float32 or float64)",
                            i, tio_dtype_name(w->dtype) ? tio_dtype_name(w->dtype) : "?");
        rc = btf_record_size(w, i, &rsize, err);
        if (rc) return rc;
        if (tio__add64_ovf(off, rsize, &off))
            return tio__err(err, TIO_E_OVERFLOW, BTF, -1,
                            "tensor %zu: the file size overflows 64-bit arithmetic", i);
    }

    rc = btf_put64(s, (uint64_t)n, err);
    if (rc) return rc;
    off = 8 + 8 * (uint64_t)n;
    for (size_t i = 0; i < n; i++) {
        rc = btf_put64(s, off, err);
        if (rc) return rc;
        rc = btf_record_size(tio__plan_tensor(p, i), i, &rsize, err);
        if (rc) return rc;
        off += rsize;
    }

    for (size_t i = 0; i < n; i++) {
        const tio_wtensor *w = tio__plan_tensor(p, i);
        const uint8_t *data = NULL, *indices = NULL;
        uint8_t h[BTF_HEADER_BYTES];
        int coo = w->layout == TIO_LAYOUT_COO;
        memset(h, 0, sizeof h);
        tio__st64(h, (uint64_t)w->rank);
        h[8] = (uint8_t)btf_code_of(w->dtype);
        h[9] = (uint8_t)(coo ? BTF_LAYOUT_COO : BTF_LAYOUT_DENSE);
        rc = tio__sink_write(s, h, sizeof h, err);
        if (rc) return rc;
        for (size_t k = 0; k < w->rank; k++) {
            rc = btf_put64(s, (uint64_t)w->shape[k], err);
            if (rc) return rc;
        }
        size_t payload = w->nbytes;
        if (coo) {
            rc = tio__plan_data(p, i, &data, &indices, err);
            if (rc) return rc;
            /* Sizes were checked by btf_record_size; they fit in size_t
             * because the plan holds these bytes in memory. */
            size_t ibytes = (size_t)(w->nnz * (uint64_t)w->rank * 8);
            rc = btf_put64(s, w->nnz, err);
            if (!rc) rc = btf_put64(s, (uint64_t)w->rank, err);
            if (!rc && ibytes) rc = tio__plan_sink_data(p, s, indices, ibytes, err);
            if (!rc) rc = btf_put64(s, w->nnz, err);
            if (rc) return rc;
            payload = 24 + ibytes + w->nbytes;
        }
        /* dense: streamed (a widened, densified or strided tensor a piece at
         * a time, no buffer of its size) */
        rc = coo ? (w->nbytes ? tio__plan_sink_data(p, s, data, w->nbytes, err) : TIO_OK)
                 : tio__plan_sink_tensor(p, s, i, err);
        if (rc) return rc;
        /* header and DIMS are multiples of 8: only the payload needs padding */
        size_t pad = (BTF_ALIGN - payload % BTF_ALIGN) % BTF_ALIGN;
        if (pad) {
            rc = tio__sink_zeros(s, pad, err);
            if (rc) return rc;
        }
    }
    return TIO_OK;
}

/* ------------------------------------------------------------- descriptor */

extern const tio_format_desc tio__format_btf;
const tio_format_desc tio__format_btf = {
    .name = "btf",
    .description = "TFRT Binary Tensor Format (tensorflow/runtime)",
    .extensions = ".btf",
    .caps = TIO_CAP_SPARSE,
    .dtypes = TIO_DTYPE_BIT(TIO_INT8) | TIO_DTYPE_BIT(TIO_INT16) | TIO_DTYPE_BIT(TIO_INT32) |
              TIO_DTYPE_BIT(TIO_INT64) | TIO_DTYPE_BIT(TIO_FLOAT32) |
              TIO_DTYPE_BIT(TIO_FLOAT64) | TIO_DTYPE_BIT(TIO_UINT8) |
              TIO_DTYPE_BIT(TIO_UINT16) | TIO_DTYPE_BIT(TIO_UINT32) | TIO_DTYPE_BIT(TIO_UINT64),
    .probe = btf_probe,
    .read = btf_read,
    .check = NULL,
    .write = btf_write,
};
