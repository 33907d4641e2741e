/*
 * The zip reader (zip.h): end records, central directory, local headers,
 * data descriptors, zip64, inflate; moved here from the .npz format so that
 * the torch format reads its archives the same way.
 */
#include "zip/zip.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define ZIP_LOCAL TIO_ZIP_LOCAL
#define ZIP_CENTRAL 0x02014b50u
#define ZIP_END TIO_ZIP_END
#define ZIP_END64 0x06064b50u
#define ZIP_LOC64 0x07064b50u
#define ZIP_DESCRIPTOR 0x08074b50u
#define ZIP_LOCAL_SIZE TIO_ZIP_LOCAL_SIZE
#define ZIP_CENTRAL_SIZE 46u
#define ZIP_END_SIZE TIO_ZIP_END_SIZE
#define ZIP_END64_SIZE 56u
#define ZIP_LOC64_SIZE 20u
#define ZIP_STORED TIO_ZIP_STORED
#define ZIP_DEFLATED TIO_ZIP_DEFLATED
#define ZIP_FLAG_ENCRYPTED 0x0001u
#define ZIP_FLAG_DESCRIPTOR 0x0008u
#define ZIP_FLAG_PATCHED 0x0020u
#define ZIP_FLAG_STRONG 0x0040u
#define ZIP_DEFLATE_RATIO 1032u     /* deflate's largest expansion: 258 bytes per 2 bits */

static const char *zip_method_name(unsigned m) {
    switch (m) {
    case 1: return "shrunk";
    case 2: case 3: case 4: case 5: return "reduced";
    case 6: return "imploded";
    case 9: return "deflate64";
    case 10: return "PKWARE DCL imploded";
    case 12: return "bzip2";
    case 14: return "LZMA";
    case 18: return "IBM TERSE";
    case 19: return "IBM LZ77";
    case 93: return "Zstandard";
    case 94: return "MP3";
    case 95: return "xz";
    case 96: return "JPEG";
    case 97: return "WavPack";
    case 98: return "PPMd";
    case 99: return "AES-encrypted";
    default: return "unknown";
    }
}

/* The member's name for messages. */
void tio__zip_name(const tio_zip_member *m, char *out, size_t cap) {
    tio__escape(m->name, m->name_len, out, cap);
}
/* The same as an expression (buf an array), for the arguments of a message:
 * the name is escaped only when a message is written. */
#define ZIP_NM(m, buf) (tio__zip_name((m), (buf), sizeof(buf)), (buf))

/* Finds the end record: the last "PK\5\6" in the final 65,557 bytes whose
 * comment reaches exactly to the end of the data. */
static int zip_find_end(tio_zip *r, uint64_t *at) {
    const uint8_t *d = r->ctx->data;
    size_t size = r->ctx->size;
    if (size < ZIP_END_SIZE)
        return tio__err(r->err, TIO_E_TRUNCATED, r->format, 0,
                        "the data are %zu bytes, shorter than the 22-byte end of central "
                        "directory record every zip archive ends with",
                        size);
    size_t lo = size - ZIP_END_SIZE > 65535 ? size - ZIP_END_SIZE - 65535 : 0;
    size_t found = SIZE_MAX, other = SIZE_MAX;
    for (size_t p = size - ZIP_END_SIZE + 1; p-- > lo;) {
        if (tio__ld32(d + p) != ZIP_END) continue;
        if (tio__ld16(d + p + 20) != size - p - ZIP_END_SIZE) continue;
        if (found == SIZE_MAX)
            found = p;
        else if (other == SIZE_MAX)
            other = p;
    }
    if (found == SIZE_MAX)
        return tio__err(r->err, TIO_E_MAGIC, r->format, tio__zip_off(size - ZIP_END_SIZE),
                        "no end of central directory record (\"PK\\5\\6\" whose comment "
                        "reaches the end of the data): not a zip archive, or a truncated one");
    if (other != SIZE_MAX)
        return tio__err(r->err, TIO_E_CORRUPT, r->format, tio__zip_off(other),
                        "a second end of central directory record (the other at offset %zu): "
                        "which one ends the archive is ambiguous",
                        found);
    *at = found;
    return TIO_OK;
}

/* A u16/u32 field of the end record agrees with the zip64 record's value:
 * equal, or saturated (zipfile.py writes min(value, 0xFFFF...)). */
static int zip_agree(tio_zip *r, uint64_t v32, uint64_t sat, uint64_t v64, uint64_t at,
                     const char *what) {
    if (v32 == v64 || v32 == sat) return TIO_OK;
    return tio__err(r->err, TIO_E_CORRUPT, r->format, tio__zip_off(at),
                    "the end record's %s is %" PRIu64 ", the zip64 end record's %" PRIu64
                    " (expected the same, or 0x%" PRIx64 ")",
                    what, v32, v64, sat);
}

static int zip_read_end(tio_zip *r, uint64_t end_at, uint64_t *count) {
    tio_cursor *c = &r->cur;
    const uint8_t *e = r->ctx->data + end_at;
    uint32_t disk = tio__ld16(e + 4), cd_disk = tio__ld16(e + 6);
    uint64_t n_disk = tio__ld16(e + 8), n = tio__ld16(e + 10);
    uint64_t cd_size = tio__ld32(e + 12), cd_at = tio__ld32(e + 16);
    uint64_t cd_end = end_at; /* where the central directory must end */
    if (tio__ld16(e + 20)) {
        int rc = tio__warn(r->ctx, r->format, tio__zip_off(end_at + 20), r->err,
                           "the archive has a %u-byte comment (%s writes none)",
                           (unsigned)tio__ld16(e + 20), r->writer);
        if (rc) return rc;
    }
    if (end_at >= ZIP_LOC64_SIZE &&
        tio__ld32(r->ctx->data + end_at - ZIP_LOC64_SIZE) == ZIP_LOC64) {
        uint64_t loc = end_at - ZIP_LOC64_SIZE;
        const uint8_t *l = r->ctx->data + loc;
        uint64_t rec_at = tio__ld64(l + 8);
        if (tio__ld32(l + 4) != 0 || tio__ld32(l + 16) != 1)
            return tio__err(r->err, TIO_E_UNSUPPORTED, r->format, tio__zip_off(loc),
                            "the zip64 locator names disk %" PRIu32 " of %" PRIu32
                            " (a multi-disk archive; expected disk 0 of 1)",
                            tio__ld32(l + 4), tio__ld32(l + 16));
        if (rec_at > loc || loc - rec_at < ZIP_END64_SIZE)
            return tio__err(r->err, TIO_E_BOUNDS, r->format, tio__zip_off(loc + 8),
                            "the zip64 end record's offset %" PRIu64 " leaves no room for its "
                            "56 bytes before the locator at %" PRIu64,
                            rec_at, loc);
        int rc = tio__cursor_seek(c, rec_at, "the zip64 end record", r->err);
        uint32_t sig = 0;
        uint64_t rec_size = 0;
        const uint8_t *z = NULL;
        if (!rc) rc = tio__cursor_u32(c, &sig, "the zip64 end record", r->err);
        if (rc) return rc;
        if (sig != ZIP_END64)
            return tio__err(r->err, TIO_E_MAGIC, r->format, tio__zip_off(rec_at),
                            "the zip64 locator points at 0x%08" PRIx32 ", not a zip64 end "
                            "record (\"PK\\6\\6\")",
                            sig);
        rc = tio__cursor_u64(c, &rec_size, "the zip64 end record's size", r->err);
        if (!rc) rc = tio__cursor_bytes(c, 44, &z, "the zip64 end record", r->err);
        if (rc) return rc;
        if (rec_size < 44 || rec_size != loc - rec_at - 12)
            return tio__err(r->err, TIO_E_CORRUPT, r->format, tio__zip_off(rec_at + 4),
                            "the zip64 end record says it is %" PRIu64 " bytes after its "
                            "size field, but %" PRIu64 " lie before the locator (expected "
                            "44 or more, and the same)",
                            rec_size, loc - rec_at - 12);
        uint32_t disk64 = tio__ld32(z + 4), cd_disk64 = tio__ld32(z + 8);
        uint64_t nd64 = tio__ld64(z + 12), n64 = tio__ld64(z + 20);
        uint64_t size64 = tio__ld64(z + 28), at64 = tio__ld64(z + 36);
        if (disk64 || cd_disk64 || nd64 != n64)
            return tio__err(r->err, TIO_E_UNSUPPORTED, r->format, tio__zip_off(rec_at + 16),
                            "the zip64 end record names disk %" PRIu32 " (central directory "
                            "on disk %" PRIu32 ", %" PRIu64 " of %" PRIu64
                            " entries on this one): a multi-disk archive",
                            disk64, cd_disk64, nd64, n64);
        rc = zip_agree(r, n, 0xFFFF, n64, end_at + 10, "entry count");
        if (!rc) rc = zip_agree(r, n_disk, 0xFFFF, n64, end_at + 8, "entries on this disk");
        if (!rc) rc = zip_agree(r, cd_size, 0xFFFFFFFF, size64, end_at + 12,
                                "central directory size");
        if (!rc) rc = zip_agree(r, cd_at, 0xFFFFFFFF, at64, end_at + 16,
                                "central directory offset");
        if (rc) return rc;
        n = n_disk = n64;
        cd_size = size64;
        cd_at = at64;
        cd_end = rec_at;
    } else if (disk || cd_disk || n_disk != n) {
        return tio__err(r->err, TIO_E_UNSUPPORTED, r->format, tio__zip_off(end_at + 4),
                        "the end record names disk %" PRIu32 " (central directory on disk %"
                        PRIu32 ", %" PRIu64 " of %" PRIu64 " entries on this one): a "
                        "multi-disk archive",
                        disk, cd_disk, n_disk, n);
    }
    if (cd_at > cd_end || cd_size != cd_end - cd_at)
        return tio__err(r->err, cd_at > cd_end ? TIO_E_BOUNDS : TIO_E_CORRUPT, r->format,
                        tio__zip_off(end_at + 12),
                        "the central directory is %" PRIu64 " bytes at offset %" PRIu64
                        ", but the end records start at %" PRIu64
                        " (expected it to end there: no bytes before the archive or between)",
                        cd_size, cd_at, cd_end);
    if (n > r->ctx->limits.max_tensors)
        return tio__err(r->err, TIO_E_LIMIT, r->format, tio__zip_off(end_at + 10),
                        "%" PRIu64 " members, above the limit (max_tensors %" PRIu64 ")", n,
                        r->ctx->limits.max_tensors);
    if (n > cd_size / ZIP_CENTRAL_SIZE)
        return tio__err(r->err, TIO_E_CORRUPT, r->format, tio__zip_off(end_at + 10),
                        "%" PRIu64 " members cannot fit in a %" PRIu64
                        "-byte central directory (46 bytes each at least)",
                        n, cd_size);
    r->cd_at = cd_at;
    r->cd_size = cd_size;
    *count = n;
    return TIO_OK;
}

/* The zip64 extra field (id 1) of an entry: the values whose 32-bit field is
 * saturated, in the order usize, csize, offset, disk. `local`: a local
 * header's, which holds both sizes whenever present (zipfile.py writes them
 * even when the 32-bit fields hold the values: they must then agree). */
static int zip_zip64(tio_zip *r, const uint8_t *x, size_t xlen, uint64_t x_at, int local,
                     uint64_t *usize, uint64_t *csize, uint64_t *offset, int *has) {
    *has = 0;
    size_t p = 0;
    while (p < xlen) {
        if (xlen - p < 4)
            return tio__err(r->err, TIO_E_CORRUPT, r->format, tio__zip_off(x_at + p),
                            "the extra field ends inside a 4-byte field header (%zu bytes "
                            "left)",
                            xlen - p);
        unsigned id = tio__ld16(x + p);
        size_t len = tio__ld16(x + p + 2);
        if (len > xlen - p - 4)
            return tio__err(r->err, TIO_E_CORRUPT, r->format, tio__zip_off(x_at + p + 2),
                            "extra field 0x%04x claims %zu bytes, %zu are left", id, len,
                            xlen - p - 4);
        if (id == 1) {
            if (*has)
                return tio__err(r->err, TIO_E_CORRUPT, r->format, tio__zip_off(x_at + p),
                                "two zip64 extra fields");
            *has = 1;
            const uint8_t *z = x + p + 4;
            size_t k = 0;
            uint64_t *want[3] = {usize, csize, offset};
            const char *names[3] = {"uncompressed size", "compressed size",
                                    "local header offset"};
            for (int f = 0; f < 3; f++) {
                if (!want[f]) continue;
                int sat = *want[f] == 0xFFFFFFFFu;
                if (!sat && !(local && f < 2)) continue;
                if (len - k < 8) {
                    if (!sat) break; /* a local field without sizes: nothing to compare */
                    return tio__err(r->err, TIO_E_CORRUPT, r->format, tio__zip_off(x_at + p),
                                    "zip64 extra field of %zu bytes lacks the %s (its 32-bit "
                                    "field is 0xFFFFFFFF)",
                                    len, names[f]);
                }
                uint64_t v = tio__ld64(z + k);
                if (!sat && v != *want[f])
                    return tio__err(r->err, TIO_E_CORRUPT, r->format, tio__zip_off(x_at + p + 4 + k),
                                    "the zip64 extra field's %s is %" PRIu64
                                    ", the 32-bit field's %" PRIu64 " (expected the same)",
                                    names[f], v, *want[f]);
                *want[f] = v;
                k += 8;
            }
        }
        p += 4 + len;
    }
    if (!*has && ((usize && *usize == 0xFFFFFFFFu) || (csize && *csize == 0xFFFFFFFFu) ||
                  (offset && *offset == 0xFFFFFFFFu)))
        return tio__err(r->err, TIO_E_CORRUPT, r->format, tio__zip_off(x_at),
                        "a size or offset is 0xFFFFFFFF (a zip64 value), but the entry has no "
                        "zip64 extra field");
    return TIO_OK;
}

/* m's name escaped into nm (80 bytes), for a message. */
static const char *zip_nm(const tio_zip_member *m, char *nm) {
    tio__zip_name(m, nm, 80);
    return nm;
}

static int zip_central(tio_zip *r, tio_zip_member *m) {
    tio_cursor *c = &r->cur;
    uint64_t at = c->pos;
    const uint8_t *h = NULL;
    int rc = tio__cursor_bytes(c, ZIP_CENTRAL_SIZE, &h, "a central directory entry", r->err);
    if (rc) return rc;
    if (tio__ld32(h) != ZIP_CENTRAL)
        return tio__err(r->err, TIO_E_MAGIC, r->format, tio__zip_off(at),
                        "central directory entry %zu starts with 0x%08" PRIx32
                        " (expected \"PK\\1\\2\")",
                        (size_t)(m - r->m), tio__ld32(h));
    m->central = at;
    m->flags = tio__ld16(h + 8);
    m->method = tio__ld16(h + 10);
    m->crc = tio__ld32(h + 16);
    m->csize = tio__ld32(h + 20);
    m->usize = tio__ld32(h + 24);
    size_t nlen = tio__ld16(h + 28), xlen = tio__ld16(h + 30), clen = tio__ld16(h + 32);
    unsigned disk = tio__ld16(h + 34);
    m->local = tio__ld32(h + 42);
    const uint8_t *x = NULL, *cm = NULL;
    rc = tio__cursor_bytes(c, nlen, &m->name, "a member name", r->err);
    if (!rc) rc = tio__cursor_bytes(c, xlen, &x, "a central extra field", r->err);
    if (!rc) rc = tio__cursor_bytes(c, clen, &cm, "a member comment", r->err);
    if (rc) return rc;
    m->name_len = nlen;
    char nm[80]; /* the name escaped, made only for a message (zip_nm) */
    if (nlen == 0 || memchr(m->name, 0, nlen))
        return tio__err(r->err, TIO_E_CORRUPT, r->format, tio__zip_off(at + 46),
                        "member %zu's name '%s' is %s", (size_t)(m - r->m), zip_nm(m, nm),
                        nlen ? "holding a NUL byte" : "empty");
    if (m->flags & (ZIP_FLAG_ENCRYPTED | ZIP_FLAG_STRONG))
        return tio__err(r->err, TIO_E_UNSUPPORTED, r->format, tio__zip_off(at + 8),
                        "member '%s' is encrypted (flags 0x%04x): tensio reads no encrypted "
                        "members",
                        zip_nm(m, nm), m->flags);
    if (m->method != ZIP_STORED && m->method != ZIP_DEFLATED)
        return tio__err(r->err, TIO_E_UNSUPPORTED, r->format, tio__zip_off(at + 10),
                        "member '%s' uses compression method %u (%s); tensio reads stored "
                        "(0) and deflated (8) members, as %s writes",
                        zip_nm(m, nm), m->method, zip_method_name(m->method), r->writer);
    if (m->flags & ZIP_FLAG_PATCHED)
        return tio__err(r->err, TIO_E_UNSUPPORTED, r->format, tio__zip_off(at + 8),
                        "member '%s' is compressed patched data (flag 0x0020)", zip_nm(m, nm));
    int has = 0;
    rc = zip_zip64(r, x, xlen, at + 46 + nlen, 0, &m->usize, &m->csize, &m->local, &has);
    if (rc) return rc;
    m->zip64 = has;
    if (disk != 0)
        return tio__err(r->err, TIO_E_UNSUPPORTED, r->format, tio__zip_off(at + 34),
                        "member '%s' starts on disk %u (a multi-disk archive)", zip_nm(m, nm),
                        disk);
    if (clen) {
        rc = tio__warn(r->ctx, r->format, tio__zip_off(at + 46 + nlen + xlen), r->err,
                       "member '%s' has a %zu-byte comment (%s writes none)", zip_nm(m, nm),
                       clen, r->writer);
        if (rc) return rc;
    }
    return TIO_OK;
}

/* The local header of m: where its data start, checked against the central
 * entry; then its data descriptor when it has one. */
static int zip_local(tio_zip *r, tio_zip_member *m) {
    tio_cursor *c = &r->cur;
    char nm[80]; /* the name for messages, escaped when one is written */
    if (m->local >= r->cd_at)
        return tio__err(r->err, TIO_E_BOUNDS, r->format, tio__zip_off(m->central + 42),
                        "member '%s': local header offset %" PRIu64
                        " is not before the central directory at %" PRIu64,
                        ZIP_NM(m, nm), m->local, r->cd_at);
    int rc = tio__cursor_seek(c, m->local, "a local header", r->err);
    const uint8_t *hp = NULL, *name = NULL, *x = NULL;
    uint8_t h[ZIP_LOCAL_SIZE];
    /* read through the cursor's header window (valid until its next read) */
    if (!rc) rc = tio__cursor_head(c, ZIP_LOCAL_SIZE, &hp, "a local header", r->err);
    if (rc) return rc;
    memcpy(h, hp, sizeof h);
    if (tio__ld32(h) != ZIP_LOCAL)
        return tio__err(r->err, TIO_E_MAGIC, r->format, tio__zip_off(m->local),
                        "member '%s': its local header starts with 0x%08" PRIx32
                        " (expected \"PK\\3\\4\")",
                        ZIP_NM(m, nm), tio__ld32(h));
    unsigned flags = tio__ld16(h + 6), method = tio__ld16(h + 8);
    uint32_t crc = tio__ld32(h + 14);
    uint64_t csize = tio__ld32(h + 18), usize = tio__ld32(h + 22);
    size_t nlen = tio__ld16(h + 26), xlen = tio__ld16(h + 28);
    /* the name and the extra field in one read: both used before the next */
    rc = tio__cursor_head(c, (uint64_t)nlen + xlen, &name, "a local header's name and extra field",
                          r->err);
    if (rc) return rc;
    x = name + nlen;
    if (nlen != m->name_len || memcmp(name, m->name, nlen) != 0) {
        char ln[80];
        tio__escape(name, nlen, ln, sizeof ln);
        return tio__err(r->err, TIO_E_CORRUPT, r->format, tio__zip_off(m->local + 30),
                        "the local header names '%s', its central entry '%s' (expected the "
                        "same)",
                        ln, ZIP_NM(m, nm));
    }
    if (flags != m->flags || method != m->method)
        return tio__err(r->err, TIO_E_CORRUPT, r->format, tio__zip_off(m->local + 6),
                        "member '%s': the local header has flags 0x%04x, method %u, the "
                        "central entry 0x%04x, %u (expected the same)",
                        ZIP_NM(m, nm), flags, method, m->flags, m->method);
    int has = 0;
    rc = zip_zip64(r, x, xlen, m->local + 30 + nlen, !(flags & ZIP_FLAG_DESCRIPTOR), &usize,
                   &csize, NULL, &has);
    if (rc) return rc;
    int desc = (flags & ZIP_FLAG_DESCRIPTOR) != 0;
    if (!desc && (crc != m->crc || csize != m->csize || usize != m->usize))
        return tio__err(r->err, TIO_E_CORRUPT, r->format, tio__zip_off(m->local + 14),
                        "member '%s': the local header has CRC 0x%08" PRIx32 ", sizes %" PRIu64
                        "/%" PRIu64 ", the central entry 0x%08" PRIx32 ", %" PRIu64 "/%" PRIu64
                        " (compressed/uncompressed; expected the same)",
                        ZIP_NM(m, nm), crc, csize, usize, m->crc, m->csize, m->usize);
    m->data_at = c->pos;
    uint64_t end = 0;
    if (tio__add64_ovf(m->data_at, m->csize, &end) || end > r->cd_at)
        return tio__err(r->err, TIO_E_BOUNDS, r->format, tio__zip_off(m->central + 20),
                        "member '%s': %" PRIu64 " bytes of data at offset %" PRIu64
                        " run past the central directory at %" PRIu64,
                        ZIP_NM(m, nm), m->csize, m->data_at, r->cd_at);
    m->end = end;
    if (desc) {
        /* the data descriptor: [signature] crc, sizes (8 bytes each with zip64) */
        rc = tio__cursor_seek(c, end, "a data descriptor", r->err);
        uint32_t v = 0;
        if (!rc) rc = tio__cursor_u32(c, &v, "a data descriptor", r->err);
        if (rc) return rc;
        if (v == ZIP_DESCRIPTOR) /* the optional signature, then the CRC */
            rc = tio__cursor_u32(c, &v, "a data descriptor", r->err);
        uint64_t dc = 0, du = 0;
        uint32_t d32 = 0;
        if (has || m->zip64) {
            if (!rc) rc = tio__cursor_u64(c, &dc, "a data descriptor", r->err);
            if (!rc) rc = tio__cursor_u64(c, &du, "a data descriptor", r->err);
        } else {
            if (!rc) rc = tio__cursor_u32(c, &d32, "a data descriptor", r->err);
            dc = d32;
            if (!rc) rc = tio__cursor_u32(c, &d32, "a data descriptor", r->err);
            du = d32;
        }
        if (rc) return rc;
        if (v != m->crc || dc != m->csize || du != m->usize)
            return tio__err(r->err, TIO_E_CORRUPT, r->format, tio__zip_off(end),
                            "member '%s': the data descriptor has CRC 0x%08" PRIx32
                            ", sizes %" PRIu64 "/%" PRIu64 ", the central entry 0x%08" PRIx32
                            ", %" PRIu64 "/%" PRIu64 " (expected the same)",
                            ZIP_NM(m, nm), v, dc, du, m->crc, m->csize, m->usize);
        if (c->pos > r->cd_at)
            return tio__err(r->err, TIO_E_BOUNDS, r->format, tio__zip_off(end),
                            "member '%s': its data descriptor runs into the central "
                            "directory at %" PRIu64,
                            ZIP_NM(m, nm), r->cd_at);
        m->end = c->pos;
    }
    return TIO_OK;
}

static int zip_by_offset(const void *a, const void *b) {
    const tio_zip_member *x = *(const tio_zip_member *const *)a, *y = *(const tio_zip_member *const *)b;
    return x->local < y->local ? -1 : x->local > y->local;
}

static int zip_overlap(tio_zip *r, const tio_zip_member *a, const tio_zip_member *b) {
    char an[80], bn[80];
    tio__zip_name(a, an, sizeof an);
    tio__zip_name(b, bn, sizeof bn);
    return tio__err(r->err, TIO_E_CORRUPT, r->format, tio__zip_off(b->local),
                    "members '%s' (offset %" PRIu64 " to %" PRIu64 ") and '%s' (offset %" PRIu64
                    ") overlap (expected each byte in one member)",
                    an, a->local, a->end, bn, b->local);
}


/* No two members share a name (the central directory's names): a hash set
 * of the names, in central directory order, so the entry named is the
 * later of two. O(members), not a sort. */
static int zip_unique(tio_zip *r) {
    if (r->n < 2) return TIO_OK;
    size_t cap = 4;
    while (cap < 2 * r->n) cap *= 2; /* r->n <= max_tensors: no overflow */
    size_t *slot = malloc(cap * sizeof *slot);
    if (!slot) return tio__nomem(r->err, r->format);
    for (size_t k = 0; k < cap; k++) slot[k] = SIZE_MAX;
    uint64_t seed = tio__hash_seed(slot); /* tio__hash_bytes */
    int rc = TIO_OK;
    for (size_t i = 0; i < r->n && !rc; i++) {
        const tio_zip_member *m = &r->m[i];
        size_t k = (size_t)tio__hash_bytes(seed, m->name, m->name_len) & (cap - 1);
        for (; slot[k] != SIZE_MAX; k = (k + 1) & (cap - 1)) {
            const tio_zip_member *o = &r->m[slot[k]];
            if (o->name_len == m->name_len && memcmp(o->name, m->name, m->name_len) == 0) {
                char a[80];
                tio__zip_name(m, a, sizeof a);
                rc = tio__err(r->err, TIO_E_CORRUPT, r->format, tio__zip_off(m->central),
                              "two members are named '%s' (a reader would see only one)", a);
                break;
            }
        }
        slot[k] = i;
    }
    free(slot);
    return rc;
}

/* No two members share bytes (every local header read). */
static int zip_disjoint(tio_zip *r) {
    if (r->n < 2) return TIO_OK;
    tio_zip_member **o = malloc(r->n * sizeof *o);
    if (!o) return tio__nomem(r->err, r->format);
    for (size_t i = 0; i < r->n; i++) o[i] = &r->m[i];
    int rc = TIO_OK;
    qsort(o, r->n, sizeof *o, zip_by_offset);
    for (size_t i = 1; i < r->n && !rc; i++)
        if (o[i]->local < o[i - 1]->end) rc = zip_overlap(r, o[i - 1], o[i]);
    free(o);
    return rc;
}

/* A member's bytes inflated into a buffer of its declared size, which must
 * be what the stream produces, with the declared CRC-32. */
int tio__zip_inflate(tio_zip *r, const tio_zip_member *m, const char *nm, uint8_t **out) {
    uint64_t limit = r->ctx->limits.max_dense_bytes, total = 0, bound = 0;
    if (tio__mul64_ovf(m->csize, ZIP_DEFLATE_RATIO, &bound) || m->usize > bound + 64)
        return tio__err(r->err, TIO_E_CORRUPT, r->format, tio__zip_off(m->central + 24),
                        "member '%s' declares %" PRIu64 " bytes inflated from %" PRIu64
                        ", more than deflate can produce (%u to 1)",
                        nm, m->usize, m->csize, ZIP_DEFLATE_RATIO);
    if (tio__add64_ovf(r->inflated, m->usize, &total) || total > limit)
        return tio__err(r->err, TIO_E_LIMIT, r->format, tio__zip_off(m->data_at),
                        "member '%s' inflates to %" PRIu64 " bytes, %" PRIu64
                        " in all with the members before it, above the limit (max_dense_bytes "
                        "%" PRIu64 ", --max-dense-bytes)",
                        nm, m->usize, total, limit);
    if (m->usize > SIZE_MAX - 1)
        return tio__err(r->err, TIO_E_LIMIT, r->format, tio__zip_off(m->data_at),
                        "member '%s' is too large to inflate here", nm);
    /* one byte more than declared, to see a stream that runs past it */
    uint8_t *buf = malloc((size_t)m->usize + 1);
    if (!buf) return tio__nomem(r->err, r->format);
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, -15) != Z_OK) {
        free(buf);
        return tio__nomem(r->err, r->format);
    }
    const uint8_t *src = r->ctx->data + m->data_at;
    uint64_t in_left = m->csize, out_left = m->usize + 1;
    uint8_t *dst = buf;
    int zr;
    do {
        uInt ci = in_left > UINT32_MAX ? UINT32_MAX : (uInt)in_left;
        uInt co = out_left > UINT32_MAX ? UINT32_MAX : (uInt)out_left;
        z.next_in = (Bytef *)(uintptr_t)src;
        z.avail_in = ci;
        z.next_out = dst;
        z.avail_out = co;
        zr = inflate(&z, Z_NO_FLUSH);
        src += ci - z.avail_in;
        in_left -= ci - z.avail_in;
        dst += co - z.avail_out;
        out_left -= co - z.avail_out;
    } while (zr == Z_OK && out_left); /* Z_BUF_ERROR: the input ended inside the stream */
    const char *zmsg = z.msg;
    inflateEnd(&z);
    uint64_t got = (uint64_t)(dst - buf);
    int rc = TIO_OK;
    if (got > m->usize)
        rc = tio__err(r->err, TIO_E_LIMIT, r->format, tio__zip_off(m->data_at),
                      "member '%s' inflates past its declared %" PRIu64
                      " bytes (a zip bomb or a wrong size; stopped there)",
                      nm, m->usize);
    else if (zr == Z_DATA_ERROR || zr == Z_NEED_DICT)
        rc = tio__err(r->err, TIO_E_CORRUPT, r->format, tio__zip_off(m->data_at + m->csize - in_left),
                      "member '%s': not a valid deflate stream (%s)", nm,
                      zmsg ? zmsg : "zlib's inflate refused it");
    else if (zr == Z_MEM_ERROR)
        rc = tio__nomem(r->err, r->format);
    else if (zr != Z_STREAM_END)
        rc = tio__err(r->err, TIO_E_TRUNCATED, r->format, tio__zip_off(m->data_at + m->csize),
                      "member '%s': its deflate stream is cut after %" PRIu64
                      " compressed bytes (%" PRIu64 " bytes inflated)",
                      nm, m->csize, got);
    else if (got != m->usize)
        rc = tio__err(r->err, TIO_E_CORRUPT, r->format, tio__zip_off(m->central + 24),
                      "member '%s' inflates to %" PRIu64 " bytes, its entry declares %" PRIu64,
                      nm, got, m->usize);
    else if (in_left)
        rc = tio__err(r->err, TIO_E_CORRUPT, r->format, tio__zip_off(m->data_at + m->csize - in_left),
                      "member '%s': %" PRIu64 " bytes after its deflate stream (expected it "
                      "to fill the compressed size)",
                      nm, in_left);
    if (!rc) {
        uint32_t crc = tio__crc32(0, buf, (size_t)got);
        if (crc != m->crc)
            rc = tio__err(r->err, TIO_E_CORRUPT, r->format, tio__zip_off(m->central + 16),
                          "member '%s': CRC-32 of the inflated data is 0x%08" PRIx32
                          ", its entry declares 0x%08" PRIx32,
                          nm, crc, m->crc);
    }
    if (rc) {
        free(buf);
        return rc;
    }
    r->inflated = total;
    *out = buf;
    return TIO_OK;
}

int tio__zip_open(tio_zip *z, tio_read_ctx *ctx, const char *format, const char *writer,
                  tio_error *err) {
    memset(z, 0, sizeof *z);
    z->ctx = ctx;
    z->err = err;
    z->format = format;
    z->writer = writer;
    tio__cursor_init(&z->cur, ctx->data, ctx->size, format);
    tio__cursor_use_head(&z->cur, ctx); /* local headers by pread, data as views */
    uint64_t end_at = 0, count = 0;
    int rc = zip_find_end(z, &end_at);
    if (!rc) rc = zip_read_end(z, end_at, &count);
    if (rc) return rc;
    z->n = (size_t)count;
    z->m = calloc(z->n ? z->n : 1, sizeof *z->m);
    if (!z->m) return tio__nomem(err, format);
    rc = tio__cursor_seek(&z->cur, z->cd_at, "the central directory", err);
    for (size_t i = 0; i < z->n && !rc; i++) {
        rc = zip_central(z, &z->m[i]);
        if (!rc && z->m[i].name_len > z->longest) z->longest = z->m[i].name_len;
    }
    if (rc) return rc;
    if (z->cur.pos != z->cd_at + z->cd_size)
        return tio__err(err, TIO_E_CORRUPT, format, tio__zip_off(z->cur.pos),
                        "the %zu central directory entries end at %zu, but the directory is "
                        "%" PRIu64 " bytes from %" PRIu64 " (expected them to fill it)",
                        z->n, z->cur.pos, z->cd_size, z->cd_at);
    return TIO_OK;
}

struct tio_zip_locals {
    pthread_t thread;
    tio_zip wz;       /* a copy of the caller's: its own cursor, header window and error */
    tio_headsrc head;
    tio_error err;
    /* Members are claimed from the front by the thread, from the back by the
     * caller while it would wait (tio__zip_locals_member): claim packs the
     * next at the front (low 32 bits) and the first claimed at the back;
     * each member is read by whoever claimed it. */
    atomic_uint_fast64_t claim;
    /* members [0, progress) are read by the thread; finished once it is done,
     * short or not; a waiter is woken once progress reaches want (0: none) */
    atomic_size_t progress, want;
    atomic_int finished, failed; /* failed: a member's local header did not read */
    size_t back_bad;  /* the caller's: the member it failed to read, or SIZE_MAX */
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

static void zip_locals_wake(tio_zip_locals *j) {
    pthread_mutex_lock(&j->mu);
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

/* Claims the next member at the front (back = 0) or the back: its index, or
 * SIZE_MAX when none is left. */
static size_t zip_locals_claim(tio_zip_locals *j, int back) {
    uint_fast64_t c = atomic_load(&j->claim);
    for (;;) {
        uint_fast64_t f = c & 0xffffffffu, b = c >> 32;
        if (f >= b) return SIZE_MAX;
        uint_fast64_t next = back ? f | ((b - 1) << 32) : c + 1;
        if (atomic_compare_exchange_weak(&j->claim, &c, next)) return (size_t)(back ? b - 1 : f);
    }
}

static void *zip_locals_main(void *arg) {
    tio_zip_locals *j = arg;
    tio_zip *z = &j->wz;
    size_t i;
    while ((i = zip_locals_claim(j, 0)) != SIZE_MAX) {
        if (zip_local(z, &z->m[i]) != TIO_OK) {
            atomic_store(&j->failed, 1);
            break;
        }
        atomic_store(&j->progress, i + 1);
        size_t want = atomic_load(&j->want);
        if (want && i + 1 >= want) zip_locals_wake(j);
    }
    atomic_store(&j->finished, 1);
    zip_locals_wake(j);
    return NULL;
}

/* m's central entry, not data_at and end: which the thread may be writing */
static void zip_central_copy(const tio_zip_member *m, tio_zip_member *out) {
    memset(out, 0, sizeof *out);
    out->name = m->name;
    out->name_len = m->name_len;
    out->local = m->local;
    out->csize = m->csize;
    out->usize = m->usize;
    out->crc = m->crc;
    out->method = m->method;
    out->flags = m->flags;
    out->zip64 = m->zip64;
    out->central = m->central;
}

/* Whether member i was claimed at the back (by the caller, read already). */
static int zip_locals_back(tio_zip_locals *j, size_t i) {
    return i >= (size_t)(atomic_load(&j->claim) >> 32);
}

int tio__zip_locals_member(tio_zip *z, tio_zip_locals *j, size_t i, tio_zip_member *out) {
    if (!j) {
        *out = z->m[i];
        return TIO_OK;
    }
    for (;;) {
        size_t p = atomic_load(&j->progress);
        if (p > i || (zip_locals_back(j, i) && i != j->back_bad)) {
            *out = z->m[i];
            return TIO_OK;
        }
        if (zip_locals_back(j, i) || atomic_load(&j->finished) ||
            i - p >= TIO_ZIP_LOCALS_BATCH)
            break; /* read it here: see below */
        /* the thread is about to read it: rather than wait, read members
         * from the back, which the thread then need not */
        size_t b = j->back_bad == SIZE_MAX ? zip_locals_claim(j, 1) : SIZE_MAX;
        if (b != SIZE_MAX) {
            tio_error *err = z->err, scratch;
            z->err = &scratch;
            if (zip_local(z, &z->m[b]) != TIO_OK) {
                j->back_bad = b;
                atomic_store(&j->failed, 1);
            }
            z->err = err;
            continue;
        }
        /* nothing left to claim: the thread is reading it; wait */
        pthread_mutex_lock(&j->mu);
        atomic_store(&j->want, i + 1);
        while (atomic_load(&j->progress) <= i && !atomic_load(&j->finished))
            pthread_cond_wait(&j->cv, &j->mu);
        atomic_store(&j->want, 0);
        pthread_mutex_unlock(&j->mu);
    }
    /* far ahead of the thread (a record at the archive's end), the thread
     * stopped short of it, or it failed here before: read into the copy */
    zip_central_copy(&z->m[i], out);
    return zip_local(z, out);
}

tio_zip_locals *tio__zip_locals_start(tio_zip *z) {
    const tio_read_ctx *ctx = z->ctx;
    if (z->n < TIO_ZIP_LOCALS_MIN || !ctx->head || ctx->head->base != ctx->data) return NULL;
    tio_zip_locals *j = malloc(sizeof *j);
    if (!j) return NULL;
    if (z->n > UINT32_MAX) { /* claim packs two 32-bit indexes */
        free(j);
        return NULL;
    }
    j->wz = *z;
    j->wz.err = &j->err;
    j->back_bad = SIZE_MAX;
    atomic_init(&j->claim, (uint_fast64_t)z->n << 32);
    atomic_init(&j->progress, 0);
    atomic_init(&j->finished, 0);
    atomic_init(&j->failed, 0);
    atomic_init(&j->want, 0);
    if (pthread_mutex_init(&j->mu, NULL)) {
        free(j);
        return NULL;
    }
    if (pthread_cond_init(&j->cv, NULL)) {
        pthread_mutex_destroy(&j->mu);
        free(j);
        return NULL;
    }
    tio_error_clear(&j->err);
    tio__headsrc_init(&j->head, ctx->head->fd, ctx->head->base, ctx->head->size);
    tio__cursor_init(&j->wz.cur, ctx->data, ctx->size, z->format);
    j->wz.cur.head = &j->head;
    if (!tio__spawn(&j->thread, zip_locals_main, j)) {
        pthread_cond_destroy(&j->cv);
        pthread_mutex_destroy(&j->mu);
        free(j);
        return NULL;
    }
    return j;
}

void tio__zip_locals_end(tio_zip *z, tio_zip_locals *j) {
    if (!j) return;
    pthread_join(j->thread, NULL);
    /* every member read, or (a failure) the thread's first ones: the rest,
     * and the failure, read again by tio__zip_each */
    z->locals_done = atomic_load(&j->failed) ? atomic_load(&j->progress) : z->n;
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

int tio__zip_local_of(tio_zip *z, tio_zip_member *m) { return zip_local(z, m); }

/* Members far apart (16 KiB or more on average, from ZIP_AHEAD_MIN of them):
 * ZIP_AHEAD bytes at each one's local header (the header, its name and
 * extra field, and what its data start with: a .npy header) are read by a
 * thread too (tio__headsrc_ahead: from the last member down, in batches
 * through io_uring where the kernel gives a ring), while the caller reads
 * from the first. An npz of 10,000 tensors made a pread() per member,
 * 10,002 in all: its open took 51 ms against 17 ms for a BTF of as many,
 * whose records go that way (docs/performance.md). Members a locals thread
 * read already are left out; the caller's loop checks every header as
 * before, and reads any the thread has not (or could not: past the end). */
#define ZIP_AHEAD 256u
#define ZIP_AHEAD_MIN 256u
static uint64_t *zip_ahead(tio_zip *z) {
    size_t from = z->locals_done < z->n ? z->locals_done : z->n, count = z->n - from;
    if (!z->cur.head || count < ZIP_AHEAD_MIN ||
        (z->m[z->n - 1].local - z->m[from].local) / count < TIO__HEAD_WINDOW)
        return NULL;
    uint64_t *off = malloc(count * sizeof *off);
    if (!off) return NULL;
    for (size_t i = 0; i < count; i++) off[i] = z->m[from + i].local; /* ascending */
    tio__headsrc_ahead(z->cur.head, off, count, ZIP_AHEAD);
    return off;
}

int tio__zip_each(tio_zip *z, int (*each)(void *arg, size_t i), void *arg) {
    /* When the members lie in central directory order (every writer's),
     * each is visited right after its local header, which the header window
     * still holds with the start of its data behind it: one pread per
     * member. Overlap is then a check against the member before, made before
     * a member is visited (members sharing bytes would inflate the same
     * stream twice). Otherwise every local header first, the overlap check
     * over all, then the members. Names are unique either way (checked
     * before any member is visited). */
    int ascending = 1, rc = TIO_OK;
    for (size_t i = 1; i < z->n; i++) ascending &= z->m[i].local > z->m[i - 1].local;
    if (ascending) {
        rc = zip_unique(z);
        uint64_t *ahead = rc ? NULL : zip_ahead(z);
        for (size_t i = 0; i < z->n && !rc; i++) {
            if (i && z->m[i].local < z->m[i - 1].end)
                rc = zip_overlap(z, &z->m[i - 1], &z->m[i]);
            if (!rc && i >= z->locals_done) rc = zip_local(z, &z->m[i]);
            if (!rc) rc = each(arg, i);
        }
        if (ahead) {
            tio__headsrc_ahead_end(z->cur.head);
            free(ahead);
        }
    } else {
        for (size_t i = z->locals_done; i < z->n && !rc; i++) rc = zip_local(z, &z->m[i]);
        if (!rc) rc = zip_disjoint(z);
        if (!rc) rc = zip_unique(z);
        for (size_t i = 0; i < z->n && !rc; i++) rc = each(arg, i);
    }
    return rc;
}

void tio__zip_free(tio_zip *z) {
    free(z->m);
    z->m = NULL;
    z->n = 0;
}
