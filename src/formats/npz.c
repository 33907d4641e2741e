/*
 * NumPy .npz — a zip archive of .npy files, as np.savez / np.savez_compressed
 * write it (numpy/lib/npyio.py _savez; the zip layout of Python's zipfile.py
 * and PKWARE's APPNOTE.TXT).
 *
 *   per member: local header "PK\3\4" | name | extra (zip64: sizes) | data
 *   (a .npy file, stored or raw deflate) ; the central directory: one
 *   "PK\1\2" entry per member ; [zip64 end record "PK\6\6" | its locator
 *   "PK\6\7"] ; the end record "PK\5\6" | comment.
 *
 * The zip structure is read by src/zip (through the cursor; zlib only
 * inflates): the end record, the central directory, every local header
 * checked against its entry; then each member's .npy through npy.c here. Stored members are
 * parsed in place (views into the mapping); deflated ones are inflated into
 * a buffer of exactly their declared size, bounded by max_dense_bytes and by
 * what deflate can produce from their compressed size. The writer writes
 * np.savez's bytes. docs/formats/npz.md.
 */
#include "formats/npy.h"
#include "zip/zip.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define NPZ "npz"
#define NPZ_LOCAL 0x04034b50u
#define NPZ_END 0x06054b50u
#define NPZ_DESCRIPTOR 0x08074b50u
#define NPZ_LOCAL_SIZE 30u
#define NPZ_END_SIZE 22u
#define NPZ_STORED 0u
#define NPZ_DEFLATED 8u
#define NPZ_FLAG_ENCRYPTED 0x0001u
#define NPZ_FLAG_DESCRIPTOR 0x0008u
#define NPZ_FLAG_PATCHED 0x0020u
#define NPZ_FLAG_STRONG 0x0040u
#define NPZ_FLAG_UTF8 0x0800u
#define NPZ_ZIP64_LIMIT 0x7fffffffu /* zipfile.py's ZIP64_LIMIT: (1 << 31) - 1 */
#define NPZ_DEFLATE_RATIO 1032u     /* deflate's largest expansion: 258 bytes per 2 bits */

static int64_t npz_off(uint64_t v) { return tio__zip_off(v); }

/* CRC-32 (zlib's) of p[0..n), continuing from crc. */
static uint32_t npz_crc(uint32_t crc, const uint8_t *p, size_t n) {
    return tio__crc32(crc, p, n);
}

static int npz_probe(const uint8_t *data, size_t size) {
    if (!data || size < 4) return 0;
    uint32_t sig = tio__ld32(data);
    if (sig == NPZ_LOCAL) {
        /* a zip whose first member is named *.npy is NumPy's */
        if (size >= NPZ_LOCAL_SIZE) {
            size_t nl = tio__ld16(data + 26);
            if (nl >= 4 && size >= NPZ_LOCAL_SIZE + nl &&
                memcmp(data + NPZ_LOCAL_SIZE + nl - 4, ".npy", 4) == 0)
                return 90;
        }
        return 40;
    }
    /* np.savez with no arrays: an empty archive, the end record alone */
    if (sig == NPZ_END && size == NPZ_END_SIZE) return 40;
    return 0;
}

/* ------------------------------------------------------------------- read */

typedef struct npz_reader {
    tio_read_ctx *ctx;
    tio_error *err;
    tio_zip zip;
    char *tname;       /* scratch: the tensor name */
} npz_reader;

typedef tio_zip_member npz_member;

#define NPZ_NM(m, buf) (tio__zip_name((m), (buf), sizeof(buf)), (buf))

/* An error from the member's .npy, restated as npz's: "npz: offset N:
 * member 'x.npy': <what npy.c said>", with, for a deflated member, where in
 * its inflated bytes. */
static int npz_restate(tio_error *err, int rc, const npz_member *m, const char *nm) {
    if (!err || err->code != rc) return rc;
    const char *msg = err->message, *p;
    if (strncmp(msg, NPZ ": ", 5) == 0) {
        msg += 5;
        if (strncmp(msg, "offset ", 7) == 0 && (p = strstr(msg, ": ")) != NULL) msg = p + 2;
    }
    char rest[sizeof err->message];
    snprintf(rest, sizeof rest, "%s", msg);
    if (m->method == NPZ_DEFLATED) {
        int64_t inner = err->offset;
        return tio__err(err, rc, NPZ, npz_off(m->data_at),
                        "member '%s' (deflated; at byte %lld of its .npy): %s", nm,
                        (long long)inner, rest);
    }
    return tio__err(err, rc, NPZ, err->offset >= 0 ? err->offset : npz_off(m->data_at),
                    "member '%s': %s", nm, rest);
}

static int npz_member_read(npz_reader *r, const npz_member *m) {
    char nm[80]; /* the name for messages, escaped when one is written */
    if (m->name_len < 4 || memcmp(m->name + m->name_len - 4, ".npy", 4) != 0)
        return tio__warn(r->ctx, NPZ, npz_off(m->central + 46), r->err,
                         "member '%s' is not a .npy file (its name does not end in .npy): "
                         "skipped",
                         NPZ_NM(m, nm));
    int ascii = 1;
    for (size_t k = 0; k < m->name_len; k++) ascii &= m->name[k] < 0x80;
    if (!ascii && !(m->flags & NPZ_FLAG_UTF8)) {
        int rc = tio__warn(r->ctx, NPZ, npz_off(m->central + 46), r->err,
                           "member '%s': a name that is not ASCII without the UTF-8 flag "
                           "(0x0800; Python reads it as cp437, tensio keeps the bytes)",
                           NPZ_NM(m, nm));
        if (rc) return rc;
    }
    size_t tl = m->name_len - 4;
    /* tl == 0: member '.npy' (np.savez(**{"": a})), the empty name: NumPy's
     * NpzFile reads it as key "" */
    if (tl > r->ctx->limits.max_name_bytes)
        return tio__err(r->err, TIO_E_LIMIT, NPZ, npz_off(m->central + 46),
                        "member name of %zu bytes, above the limit (max_name_bytes %" PRIu32
                        ")",
                        m->name_len, r->ctx->limits.max_name_bytes);
    memcpy(r->tname, m->name, tl);
    r->tname[tl] = 0;
    tio__npy_src src;
    memset(&src, 0, sizeof src);
    src.format = NPZ;
    src.name = r->tname;
    const uint8_t *data = r->ctx->data + m->data_at;
    size_t size = (size_t)m->csize;
    if (m->method == NPZ_STORED) {
        if (m->csize != m->usize)
            return tio__err(r->err, TIO_E_CORRUPT, NPZ, npz_off(m->central + 20),
                            "member '%s' is stored, but its sizes differ: %" PRIu64
                            " compressed, %" PRIu64 " uncompressed",
                            NPZ_NM(m, nm), m->csize, m->usize);
        if (r->ctx->flags & TIO_OPEN_STRICT) {
            uint32_t crc = npz_crc(0, data, size);
            if (crc != m->crc)
                return tio__err(r->err, TIO_E_INVALID, NPZ, npz_off(m->central + 16),
                                "member '%s': CRC-32 of the stored data is 0x%08" PRIx32
                                ", its entry declares 0x%08" PRIx32,
                                NPZ_NM(m, nm), crc, m->crc);
        }
        src.base = m->data_at;
        if (r->ctx->head && size >= 12) {
            /* the .npy header by pread, not a fault: its length first, then
             * the header (usually both in the window of the local header) */
            const uint8_t *h = tio__headsrc_at(r->ctx->head, m->data_at, 12);
            if (h) {
                uint64_t k = h[6] == 1 ? 10u + (uint64_t)tio__ld16(h + 8)
                                       : 12u + (uint64_t)tio__ld32(h + 8);
                if (k > size) k = size;
                if (k > TIO__HEAD_MAX) k = TIO__HEAD_MAX;
                src.head = tio__headsrc_at(r->ctx->head, m->data_at, (size_t)k);
                src.head_n = src.head ? (size_t)k : 0;
            }
        }
    } else {
        uint8_t *buf = NULL;
        int rc = tio__zip_inflate(&r->zip, m, NPZ_NM(m, nm), &buf);
        if (rc) return rc;
        data = buf;
        size = (size_t)m->usize;
        src.owned = buf;
        src.source_offset = npz_off(m->data_at);
    }
    tio_container *c = r->ctx->c;
    size_t w0 = c->warning_count;
    int rc = tio__npy_read_array(r->ctx, data, size, &src, r->err);
    if (rc) return npz_restate(r->err, rc, m, NPZ_NM(m, nm));
    /* the member's findings, restated as its errors are */
    for (size_t k = w0; k < c->warning_count; k++)
        npz_restate(&c->warnings[k], TIO_E_INVALID, m, NPZ_NM(m, nm));
    return TIO_OK;
}

static int npz_each(void *arg, size_t i) {
    npz_reader *r = arg;
    return npz_member_read(r, &r->zip.m[i]);
}

static int npz_read_all(npz_reader *r) {
    int rc = tio__zip_open(&r->zip, r->ctx, NPZ, "np.savez", r->err);
    if (rc) return rc;
    r->tname = malloc(r->zip.longest + 1);
    if (!r->tname) return tio__nomem(r->err, NPZ);
    /* the tensors in central directory order (np.load's NpzFile.files) */
    rc = tio__zip_each(&r->zip, npz_each, r);
    if (rc) return rc;
    char v[TIO__DEC_CAP];
    size_t deflated = 0;
    for (size_t i = 0; i < r->zip.n; i++) deflated += r->zip.m[i].method == NPZ_DEFLATED;
    rc = tio__kv_set(&r->ctx->c->props, "members", tio__u64_dec(v, r->zip.n), r->err);
    if (!rc)
        rc = tio__kv_set(&r->ctx->c->props, "deflated_members", tio__u64_dec(v, deflated),
                         r->err);
    return rc;
}

static int npz_read(tio_read_ctx *ctx, tio_error *err) {
    npz_reader r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.err = err;
    int rc = npz_read_all(&r);
    tio__zip_free(&r.zip);
    free(r.tname);
    return rc;
}

/* ------------------------------------------------------------------ write */

/* The member name of plan tensor i: its name + ".npy" (".npy" for the empty
 * name, as np.savez(**{"": a}) writes it), or np.savez's "arr_<i>.npy" for
 * an unnamed one. Malloc'ed. */
static char *npz_member_name(const tio_wtensor *w, size_t i) {
    char buf[40];
    const char *base = w->name;
    if (!base) {
        snprintf(buf, sizeof buf, "arr_%zu", i);
        base = buf;
    }
    size_t n = strlen(base);
    char *s = malloc(n + 5);
    if (s) {
        memcpy(s, base, n);
        memcpy(s + n, ".npy", 5);
    }
    return s;
}

static int npz_cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int npz_check(const tio_write_plan *p, tio_error *err) {
    size_t n = tio__plan_count(p);
    const char *z = tio__plan_option(p, "compress");
    if (z && strcmp(z, "0") != 0 && strcmp(z, "1") != 0)
        return tio__err(err, TIO_E_ARGUMENT, NPZ, -1,
                        "option compress=%s (expected 0, stored as np.savez, or 1, deflated "
                        "as np.savez_compressed)",
                        z);
    int src = tio__npy_strings_option(p, NPZ, err);
    if (src) return src;
    if (n == 0) return TIO_OK;
    char **names = calloc(n, sizeof *names);
    if (!names) return tio__nomem(err, NPZ);
    int rc = TIO_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        const tio_wtensor *w = tio__plan_tensor(p, i);
        if (!tio__npy_descr(w->dtype) && w->dtype != TIO_STRING)
            rc = tio__err(err, TIO_E_DTYPE, NPZ, -1, "tensor %zu: dtype %s has no .npy descr",
                          i, tio_dtype_name(w->dtype) ? tio_dtype_name(w->dtype) : "?");
        else if (!(names[i] = npz_member_name(w, i)))
            rc = tio__nomem(err, NPZ);
        else if (strlen(names[i]) > 65535)
            rc = tio__err(err, TIO_E_UNSUPPORTED, NPZ, -1,
                          "tensor %zu: a member name of %zu bytes (a zip name holds 65535)", i,
                          strlen(names[i]));
    }
    if (!rc) {
        qsort(names, n, sizeof *names, npz_cmp_str);
        for (size_t i = 1; i < n && !rc; i++)
            if (strcmp(names[i - 1], names[i]) == 0) {
                char e[80];
                tio__escape((const uint8_t *)names[i], strlen(names[i]), e, sizeof e);
                rc = tio__err(err, TIO_E_UNSUPPORTED, NPZ, -1,
                              "two tensors would be member '%s' (an unnamed tensor i is "
                              "arr_<i>, as np.savez names them; names must be unique)",
                              e);
            }
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return rc;
}

/* What the central directory needs of a written member. */
typedef tio_zipw_member npz_wmember;

/* zipfile.py's FileHeader(zip64=True): sizes in the 32-bit fields up to
 * ZIP64_LIMIT, and always a zip64 extra field with both; date 1980-01-01
 * 00:00 (ZipInfo's default date_time, which np.savez keeps). */
static size_t npz_local_header(uint8_t *h, const npz_wmember *m, unsigned method,
                               const char *name, size_t nlen) {
    int big = m->usize > NPZ_ZIP64_LIMIT || m->csize > NPZ_ZIP64_LIMIT;
    tio__st32(h, NPZ_LOCAL);
    h[4] = big ? 45 : 20;
    h[5] = 0;
    h[6] = (uint8_t)m->flags;
    h[7] = (uint8_t)(m->flags >> 8);
    h[8] = (uint8_t)method;
    h[9] = 0;
    h[10] = h[11] = 0;  /* time 00:00:00 */
    h[12] = 0x21;       /* date 1980-01-01 */
    h[13] = 0;
    tio__st32(h + 14, m->crc);
    tio__st32(h + 18, big ? 0xFFFFFFFFu : (uint32_t)m->csize);
    tio__st32(h + 22, big ? 0xFFFFFFFFu : (uint32_t)m->usize);
    h[26] = (uint8_t)nlen;
    h[27] = (uint8_t)(nlen >> 8);
    h[28] = 20;
    h[29] = 0;
    memcpy(h + 30, name, nlen);
    uint8_t *x = h + 30 + nlen;
    x[0] = 1;
    x[1] = 0;
    x[2] = 16;
    x[3] = 0;
    tio__st64(x + 4, m->usize);
    tio__st64(x + 12, m->csize);
    return 30 + nlen + 20;
}

/* Deflates p[0..n) into the sink (more input follows unless `last`). */
static int npz_deflate(z_stream *z, tio_sink *s, uint8_t *out, size_t cap, const uint8_t *p,
                       size_t n, int last, uint64_t *written, tio_error *err) {
    int zr;
    do {
        uInt k = n > UINT32_MAX ? UINT32_MAX : (uInt)n;
        z->next_in = (Bytef *)(uintptr_t)p;
        z->avail_in = k;
        int flush = last && k == n ? Z_FINISH : Z_NO_FLUSH;
        do {
            z->next_out = out;
            z->avail_out = (uInt)cap;
            zr = deflate(z, flush);
            if (zr == Z_STREAM_ERROR)
                return tio__err(err, TIO_E_IO, NPZ, -1, "zlib's deflate failed");
            size_t got = cap - z->avail_out;
            if (got) {
                int rc = tio__sink_write(s, out, got, err);
                if (rc) return rc;
                *written += got;
            }
        } while (z->avail_out == 0 || (flush == Z_FINISH && zr != Z_STREAM_END));
        p += k;
        n -= k;
    } while (n);
    return TIO_OK;
}

/* Whether zlib's crc32_combine() takes a length of n bytes. */
static int npz_combinable(size_t n) {
    return sizeof(z_off_t) >= 8 || n <= 0x7fffffffu;
}

static int npz_write_member(tio_write_plan *p, tio_sink *s, size_t i, int compress,
                            npz_wmember *m, const char *name, uint8_t *buf, size_t cap,
                            z_stream *z, tio_crc_job *job, const uint8_t *view,
                            tio_error *err) {
    const tio_wtensor *w = tio__plan_tensor(p, i);
    uint8_t *hdr = NULL, *strs = NULL;
    size_t hlen = 0, nbytes = w->nbytes;
    char descr[32];
    bool str = w->dtype == TIO_STRING;
    int rc = str ? tio__npy_strings(p, i, NPZ, descr, &strs, &nbytes, err) : TIO_OK;
    if (!rc)
        rc = tio__npy_header(w, str ? descr : NULL, tio__plan_version(p), NPZ, &hdr, &hlen,
                             err);
    /* a stored member's data are written as the plan streams them (a
     * widened tensor in pieces, its CRC taken on the way); a deflated one
     * takes them whole */
    const uint8_t *data = strs;
    if (!rc && !str && compress) rc = tio__plan_data(p, i, &data, NULL, err);
    if (rc) {
        free(hdr);
        free(strs);
        return rc;
    }
    size_t nlen = strlen(name);
    m->local = tio__sink_pos(s);
    m->usize = (uint64_t)hlen + nbytes;
    m->csize = compress ? 0 : m->usize;
    /* stored: the data's CRC is taken as it is written (the local header
     * gets it then); deflated: the CRC of everything now */
    m->crc = npz_crc(0, hdr, hlen);
    if (compress) m->crc = npz_crc(m->crc, data, nbytes);
    m->flags = 0;
    m->method = compress ? NPZ_DEFLATED : NPZ_STORED;
    for (size_t k = 0; k < nlen; k++)
        if ((unsigned char)name[k] >= 0x80) m->flags = NPZ_FLAG_UTF8;
    uint8_t *lh = malloc(30 + nlen + 20);
    if (!lh) {
        free(hdr);
        free(strs);
        return tio__nomem(err, NPZ);
    }
    size_t ll = npz_local_header(lh, m, compress ? NPZ_DEFLATED : NPZ_STORED, name, nlen);
    rc = tio__sink_write(s, lh, ll, err);
    if (!rc && !compress) {
        /* the data's CRC from the job's thread, taken while this one writes,
         * when the bytes are the ones it was given; else in the same pass */
        bool threaded = job && view; /* a view: the tensor's bytes as held */
        rc = tio__sink_write(s, hdr, hlen, err);
        if (!rc) {
            if (str)
                rc = tio__plan_sink_data_crc(p, s, data, nbytes, &m->crc, err);
            else if (threaded)
                rc = tio__plan_sink_data(p, s, view, nbytes, err);
            else
                rc = tio__plan_sink_tensor_crc(p, s, i, &m->crc, err);
        }
        if (!rc && threaded)
            m->crc = (uint32_t)crc32_combine(m->crc, tio__crc32_wait(job, i),
                                             (z_off_t)nbytes);
        if (!rc) {
            uint8_t c[4];
            tio__st32(c, m->crc);
            rc = tio__sink_patch(s, m->local + 14, c, sizeof c, err);
        }
    } else if (!rc) {
        /* zipfile.py's compressor: zlib level -1 (6), raw deflate (-15), memLevel 8 */
        if (deflateReset(z) != Z_OK) rc = tio__err(err, TIO_E_IO, NPZ, -1, "zlib failed");
        uint64_t out = 0;
        if (!rc) rc = npz_deflate(z, s, buf, cap, hdr, hlen, 0, &out, err);
        if (!rc) rc = npz_deflate(z, s, buf, cap, data, nbytes, 1, &out, err);
        if (!rc) {
            m->csize = out;
            ll = npz_local_header(lh, m, NPZ_DEFLATED, name, nlen);
            rc = tio__sink_patch(s, m->local, lh, ll, err);
        }
    }
    free(lh);
    free(hdr);
    free(strs);
    return rc;
}

/* zipfile.py's style (src/zip/write.c writes the central directory and
 * the end records): version 20 (45 with zip64 fields), made on Unix,
 * 1980-01-01, ?rw-------, zip64 fields past ZIP64_LIMIT. */
static const tio_zipw_style npz_style = {
    .version = 20,
    .version64 = 45,
    .made_os = 3,
    .date = 0x21,
    .external = 0600u << 16,
    .limit = NPZ_ZIP64_LIMIT,
    .end64_always = 0,
    .end64_made = 45,
    .end64_need = 45,
};

/* The central directory and end records, as zipfile.py's _write_end_record
 * writes them. */
static int npz_write_end(tio_write_plan *p, tio_sink *s, const npz_wmember *ms,
                         char *const *names, tio_error *err) {
    size_t n = tio__plan_count(p);
    uint64_t cd_at = tio__sink_pos(s);
    int rc = TIO_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        rc = tio__zipw_central(s, &npz_style, &ms[i], names[i], strlen(names[i]), err);
    }
    return rc ? rc : tio__zipw_end(s, &npz_style, n, cd_at, err);
}

static int npz_write(tio_write_plan *p, tio_sink *s, tio_error *err) {
    int rc = npz_check(p, err);
    if (rc) return rc;
    size_t n = tio__plan_count(p);
    const char *zo = tio__plan_option(p, "compress");
    int compress = zo && strcmp(zo, "1") == 0;
    npz_wmember *ms = calloc(n ? n : 1, sizeof *ms);
    char **names = calloc(n ? n : 1, sizeof *names);
    size_t cap = (size_t)1 << 16;
    uint8_t *buf = compress ? malloc(cap) : NULL;
    z_stream z;
    memset(&z, 0, sizeof z);
    int zinit = 0;
    if (!ms || !names || (compress && !buf)) rc = tio__nomem(err, NPZ);
    if (!rc && compress) {
        if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) !=
            Z_OK)
            rc = tio__nomem(err, NPZ);
        else
            zinit = 1;
    }
    /* Stored members' CRCs by a thread of their own, beside the writes, when
     * there is enough data that they cost something (docs/performance.md):
     * the tensors the container holds as they are written. */
    const uint8_t **views = NULL;
    size_t *sizes = NULL;
    tio_crc_job *job = NULL;
    if (!rc && !compress) {
        views = calloc(n ? n : 1, sizeof *views);
        sizes = calloc(n ? n : 1, sizeof *sizes);
        if (!views || !sizes) rc = tio__nomem(err, NPZ);
    }
    uint64_t viewed = 0;
    for (size_t i = 0; !rc && !compress && i < n; i++) {
        sizes[i] = tio__plan_tensor(p, i)->nbytes;
        views[i] = npz_combinable(sizes[i]) && tio__plan_tensor(p, i)->dtype != TIO_STRING
                       ? tio__plan_view(p, i)
                       : NULL; /* strings are written padded, not as held */
        if (views[i]) viewed += sizes[i];
    }
    if (!rc && viewed >= TIO__CRC_JOB_MIN) job = tio__plan_crc_start(p, views, sizes, n); /* NULL: none */
    for (size_t i = 0; i < n && !rc; i++) {
        names[i] = npz_member_name(tio__plan_tensor(p, i), i);
        if (!names[i]) rc = tio__nomem(err, NPZ);
        if (!rc)
            rc = npz_write_member(p, s, i, compress, &ms[i], names[i], buf, cap, &z, job,
                                  views ? views[i] : NULL, err);
    }
    tio__crc32_join(job);
    free(views);
    free(sizes);
    if (!rc) rc = npz_write_end(p, s, ms, names, err);
    if (zinit) deflateEnd(&z);
    for (size_t i = 0; names && i < n; i++) free(names[i]);
    free(names);
    free(ms);
    free(buf);
    return rc;
}

/* ------------------------------------------------------------- descriptor */

extern const tio_format_desc tio__format_npz;
const tio_format_desc tio__format_npz = {
    .name = "npz",
    .description = "NumPy .npz archive (np.savez, np.savez_compressed): named .npy arrays "
                   "in a zip, stored or deflated",
    .extensions = ".npz",
    .caps = TIO_CAP_NAMES,
    .dtypes = TIO__NPY_DTYPES,
    .versions = (1u << 1) | (1u << 2) | (1u << 3),
    .probe = npz_probe,
    .read = npz_read,
    .check = npz_check,
    .write = npz_write,
    .options = "compress strings",
};
