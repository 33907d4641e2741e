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
 * The zip structure is read here through the cursor (zlib only inflates):
 * the end record, the central directory, every local header checked against
 * its entry, then each member's .npy through npy.c. Stored members are
 * parsed in place (views into the mapping); deflated ones are inflated into
 * a buffer of exactly their declared size, bounded by max_dense_bytes and by
 * what deflate can produce from their compressed size. The writer writes
 * np.savez's bytes. docs/formats/npz.md.
 */
#include "formats/npy.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define NPZ "npz"
#define NPZ_LOCAL 0x04034b50u
#define NPZ_CENTRAL 0x02014b50u
#define NPZ_END 0x06054b50u
#define NPZ_END64 0x06064b50u
#define NPZ_LOC64 0x07064b50u
#define NPZ_DESCRIPTOR 0x08074b50u
#define NPZ_LOCAL_SIZE 30u
#define NPZ_CENTRAL_SIZE 46u
#define NPZ_END_SIZE 22u
#define NPZ_END64_SIZE 56u
#define NPZ_LOC64_SIZE 20u
#define NPZ_STORED 0u
#define NPZ_DEFLATED 8u
#define NPZ_FLAG_ENCRYPTED 0x0001u
#define NPZ_FLAG_DESCRIPTOR 0x0008u
#define NPZ_FLAG_PATCHED 0x0020u
#define NPZ_FLAG_STRONG 0x0040u
#define NPZ_FLAG_UTF8 0x0800u
#define NPZ_ZIP64_LIMIT 0x7fffffffu /* zipfile.py's ZIP64_LIMIT: (1 << 31) - 1 */
#define NPZ_DEFLATE_RATIO 1032u     /* deflate's largest expansion: 258 bytes per 2 bits */

static int64_t npz_off(uint64_t v) { return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v; }

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

/* CRC-32 (zlib's) of p[0..n), continuing from crc. */
static uint32_t npz_crc(uint32_t crc, const uint8_t *p, size_t n) {
    return tio__crc32(crc, p, n);
}


typedef struct npz_member {
    const uint8_t *name;
    size_t name_len;
    uint64_t local;     /* offset of the local header */
    uint64_t csize, usize;
    uint32_t crc;
    unsigned method, flags;
    int zip64;          /* the entry has a zip64 extra field */
    uint64_t data_at;   /* the member's (compressed) data */
    uint64_t end;       /* past its data and data descriptor */
    uint64_t central;   /* offset of its central directory entry */
} npz_member;

typedef struct npz_reader {
    tio_read_ctx *ctx;
    tio_error *err;
    tio_cursor cur;
    npz_member *m;
    size_t n;
    uint64_t cd_at, cd_size;
    uint64_t inflated; /* bytes inflated so far (bounded by max_dense_bytes) */
    char *tname;       /* scratch: the tensor name */
} npz_reader;

static const char *npz_method_name(unsigned m) {
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
static void npz_name_esc(const npz_member *m, char *out, size_t cap) {
    tio__escape(m->name, m->name_len, out, cap);
}
/* The same as an expression (buf an array), for the arguments of a message:
 * the name is escaped only when a message is written. */
#define NPZ_NM(m, buf) (npz_name_esc((m), (buf), sizeof(buf)), (buf))

/* Finds the end record: the last "PK\5\6" in the final 65,557 bytes whose
 * comment reaches exactly to the end of the data. */
static int npz_find_end(npz_reader *r, uint64_t *at) {
    const uint8_t *d = r->ctx->data;
    size_t size = r->ctx->size;
    if (size < NPZ_END_SIZE)
        return tio__err(r->err, TIO_E_TRUNCATED, NPZ, 0,
                        "the data are %zu bytes, shorter than the 22-byte end of central "
                        "directory record every zip archive ends with",
                        size);
    size_t lo = size - NPZ_END_SIZE > 65535 ? size - NPZ_END_SIZE - 65535 : 0;
    size_t found = SIZE_MAX, other = SIZE_MAX;
    for (size_t p = size - NPZ_END_SIZE + 1; p-- > lo;) {
        if (tio__ld32(d + p) != NPZ_END) continue;
        if (tio__ld16(d + p + 20) != size - p - NPZ_END_SIZE) continue;
        if (found == SIZE_MAX)
            found = p;
        else if (other == SIZE_MAX)
            other = p;
    }
    if (found == SIZE_MAX)
        return tio__err(r->err, TIO_E_MAGIC, NPZ, npz_off(size - NPZ_END_SIZE),
                        "no end of central directory record (\"PK\\5\\6\" whose comment "
                        "reaches the end of the data): not a zip archive, or a truncated one");
    if (other != SIZE_MAX)
        return tio__err(r->err, TIO_E_CORRUPT, NPZ, npz_off(other),
                        "a second end of central directory record (the other at offset %zu): "
                        "which one ends the archive is ambiguous",
                        found);
    *at = found;
    return TIO_OK;
}

/* A u16/u32 field of the end record agrees with the zip64 record's value:
 * equal, or saturated (zipfile.py writes min(value, 0xFFFF...)). */
static int npz_agree(npz_reader *r, uint64_t v32, uint64_t sat, uint64_t v64, uint64_t at,
                     const char *what) {
    if (v32 == v64 || v32 == sat) return TIO_OK;
    return tio__err(r->err, TIO_E_CORRUPT, NPZ, npz_off(at),
                    "the end record's %s is %" PRIu64 ", the zip64 end record's %" PRIu64
                    " (expected the same, or 0x%" PRIx64 ")",
                    what, v32, v64, sat);
}

static int npz_read_end(npz_reader *r, uint64_t end_at, uint64_t *count) {
    tio_cursor *c = &r->cur;
    const uint8_t *e = r->ctx->data + end_at;
    uint32_t disk = tio__ld16(e + 4), cd_disk = tio__ld16(e + 6);
    uint64_t n_disk = tio__ld16(e + 8), n = tio__ld16(e + 10);
    uint64_t cd_size = tio__ld32(e + 12), cd_at = tio__ld32(e + 16);
    uint64_t cd_end = end_at; /* where the central directory must end */
    if (tio__ld16(e + 20)) {
        int rc = tio__warn(r->ctx, NPZ, npz_off(end_at + 20), r->err,
                           "the archive has a %u-byte comment (np.savez writes none)",
                           (unsigned)tio__ld16(e + 20));
        if (rc) return rc;
    }
    if (end_at >= NPZ_LOC64_SIZE &&
        tio__ld32(r->ctx->data + end_at - NPZ_LOC64_SIZE) == NPZ_LOC64) {
        uint64_t loc = end_at - NPZ_LOC64_SIZE;
        const uint8_t *l = r->ctx->data + loc;
        uint64_t rec_at = tio__ld64(l + 8);
        if (tio__ld32(l + 4) != 0 || tio__ld32(l + 16) != 1)
            return tio__err(r->err, TIO_E_UNSUPPORTED, NPZ, npz_off(loc),
                            "the zip64 locator names disk %" PRIu32 " of %" PRIu32
                            " (a multi-disk archive; expected disk 0 of 1)",
                            tio__ld32(l + 4), tio__ld32(l + 16));
        if (rec_at > loc || loc - rec_at < NPZ_END64_SIZE)
            return tio__err(r->err, TIO_E_BOUNDS, NPZ, npz_off(loc + 8),
                            "the zip64 end record's offset %" PRIu64 " leaves no room for its "
                            "56 bytes before the locator at %" PRIu64,
                            rec_at, loc);
        int rc = tio__cursor_seek(c, rec_at, "the zip64 end record", r->err);
        uint32_t sig = 0;
        uint64_t rec_size = 0;
        const uint8_t *z = NULL;
        if (!rc) rc = tio__cursor_u32(c, &sig, "the zip64 end record", r->err);
        if (rc) return rc;
        if (sig != NPZ_END64)
            return tio__err(r->err, TIO_E_MAGIC, NPZ, npz_off(rec_at),
                            "the zip64 locator points at 0x%08" PRIx32 ", not a zip64 end "
                            "record (\"PK\\6\\6\")",
                            sig);
        rc = tio__cursor_u64(c, &rec_size, "the zip64 end record's size", r->err);
        if (!rc) rc = tio__cursor_bytes(c, 44, &z, "the zip64 end record", r->err);
        if (rc) return rc;
        if (rec_size < 44 || rec_size != loc - rec_at - 12)
            return tio__err(r->err, TIO_E_CORRUPT, NPZ, npz_off(rec_at + 4),
                            "the zip64 end record says it is %" PRIu64 " bytes after its "
                            "size field, but %" PRIu64 " lie before the locator (expected "
                            "44 or more, and the same)",
                            rec_size, loc - rec_at - 12);
        uint32_t disk64 = tio__ld32(z + 4), cd_disk64 = tio__ld32(z + 8);
        uint64_t nd64 = tio__ld64(z + 12), n64 = tio__ld64(z + 20);
        uint64_t size64 = tio__ld64(z + 28), at64 = tio__ld64(z + 36);
        if (disk64 || cd_disk64 || nd64 != n64)
            return tio__err(r->err, TIO_E_UNSUPPORTED, NPZ, npz_off(rec_at + 16),
                            "the zip64 end record names disk %" PRIu32 " (central directory "
                            "on disk %" PRIu32 ", %" PRIu64 " of %" PRIu64
                            " entries on this one): a multi-disk archive",
                            disk64, cd_disk64, nd64, n64);
        rc = npz_agree(r, n, 0xFFFF, n64, end_at + 10, "entry count");
        if (!rc) rc = npz_agree(r, n_disk, 0xFFFF, n64, end_at + 8, "entries on this disk");
        if (!rc) rc = npz_agree(r, cd_size, 0xFFFFFFFF, size64, end_at + 12,
                                "central directory size");
        if (!rc) rc = npz_agree(r, cd_at, 0xFFFFFFFF, at64, end_at + 16,
                                "central directory offset");
        if (rc) return rc;
        n = n_disk = n64;
        cd_size = size64;
        cd_at = at64;
        cd_end = rec_at;
    } else if (disk || cd_disk || n_disk != n) {
        return tio__err(r->err, TIO_E_UNSUPPORTED, NPZ, npz_off(end_at + 4),
                        "the end record names disk %" PRIu32 " (central directory on disk %"
                        PRIu32 ", %" PRIu64 " of %" PRIu64 " entries on this one): a "
                        "multi-disk archive",
                        disk, cd_disk, n_disk, n);
    }
    if (cd_at > cd_end || cd_size != cd_end - cd_at)
        return tio__err(r->err, cd_at > cd_end ? TIO_E_BOUNDS : TIO_E_CORRUPT, NPZ,
                        npz_off(end_at + 12),
                        "the central directory is %" PRIu64 " bytes at offset %" PRIu64
                        ", but the end records start at %" PRIu64
                        " (expected it to end there: no bytes before the archive or between)",
                        cd_size, cd_at, cd_end);
    if (n > r->ctx->limits.max_tensors)
        return tio__err(r->err, TIO_E_LIMIT, NPZ, npz_off(end_at + 10),
                        "%" PRIu64 " members, above the limit (max_tensors %" PRIu64 ")", n,
                        r->ctx->limits.max_tensors);
    if (n > cd_size / NPZ_CENTRAL_SIZE)
        return tio__err(r->err, TIO_E_CORRUPT, NPZ, npz_off(end_at + 10),
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
static int npz_zip64(npz_reader *r, const uint8_t *x, size_t xlen, uint64_t x_at, int local,
                     uint64_t *usize, uint64_t *csize, uint64_t *offset, int *has) {
    *has = 0;
    size_t p = 0;
    while (p < xlen) {
        if (xlen - p < 4)
            return tio__err(r->err, TIO_E_CORRUPT, NPZ, npz_off(x_at + p),
                            "the extra field ends inside a 4-byte field header (%zu bytes "
                            "left)",
                            xlen - p);
        unsigned id = tio__ld16(x + p);
        size_t len = tio__ld16(x + p + 2);
        if (len > xlen - p - 4)
            return tio__err(r->err, TIO_E_CORRUPT, NPZ, npz_off(x_at + p + 2),
                            "extra field 0x%04x claims %zu bytes, %zu are left", id, len,
                            xlen - p - 4);
        if (id == 1) {
            if (*has)
                return tio__err(r->err, TIO_E_CORRUPT, NPZ, npz_off(x_at + p),
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
                    return tio__err(r->err, TIO_E_CORRUPT, NPZ, npz_off(x_at + p),
                                    "zip64 extra field of %zu bytes lacks the %s (its 32-bit "
                                    "field is 0xFFFFFFFF)",
                                    len, names[f]);
                }
                uint64_t v = tio__ld64(z + k);
                if (!sat && v != *want[f])
                    return tio__err(r->err, TIO_E_CORRUPT, NPZ, npz_off(x_at + p + 4 + k),
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
        return tio__err(r->err, TIO_E_CORRUPT, NPZ, npz_off(x_at),
                        "a size or offset is 0xFFFFFFFF (a zip64 value), but the entry has no "
                        "zip64 extra field");
    return TIO_OK;
}

static int npz_central(npz_reader *r, npz_member *m) {
    tio_cursor *c = &r->cur;
    uint64_t at = c->pos;
    const uint8_t *h = NULL;
    int rc = tio__cursor_bytes(c, NPZ_CENTRAL_SIZE, &h, "a central directory entry", r->err);
    if (rc) return rc;
    if (tio__ld32(h) != NPZ_CENTRAL)
        return tio__err(r->err, TIO_E_MAGIC, NPZ, npz_off(at),
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
    char nm[80];
    npz_name_esc(m, nm, sizeof nm);
    if (nlen == 0 || memchr(m->name, 0, nlen))
        return tio__err(r->err, TIO_E_CORRUPT, NPZ, npz_off(at + 46),
                        "member %zu's name '%s' is %s", (size_t)(m - r->m), nm,
                        nlen ? "holding a NUL byte" : "empty");
    if (m->flags & (NPZ_FLAG_ENCRYPTED | NPZ_FLAG_STRONG))
        return tio__err(r->err, TIO_E_UNSUPPORTED, NPZ, npz_off(at + 8),
                        "member '%s' is encrypted (flags 0x%04x): tensio reads no encrypted "
                        "members",
                        nm, m->flags);
    if (m->method != NPZ_STORED && m->method != NPZ_DEFLATED)
        return tio__err(r->err, TIO_E_UNSUPPORTED, NPZ, npz_off(at + 10),
                        "member '%s' uses compression method %u (%s); tensio reads stored "
                        "(0) and deflated (8) members, as np.savez writes",
                        nm, m->method, npz_method_name(m->method));
    if (m->flags & NPZ_FLAG_PATCHED)
        return tio__err(r->err, TIO_E_UNSUPPORTED, NPZ, npz_off(at + 8),
                        "member '%s' is compressed patched data (flag 0x0020)", nm);
    int has = 0;
    rc = npz_zip64(r, x, xlen, at + 46 + nlen, 0, &m->usize, &m->csize, &m->local, &has);
    if (rc) return rc;
    m->zip64 = has;
    if (disk != 0)
        return tio__err(r->err, TIO_E_UNSUPPORTED, NPZ, npz_off(at + 34),
                        "member '%s' starts on disk %u (a multi-disk archive)", nm, disk);
    if (clen) {
        rc = tio__warn(r->ctx, NPZ, npz_off(at + 46 + nlen + xlen), r->err,
                       "member '%s' has a %zu-byte comment (np.savez writes none)", nm, clen);
        if (rc) return rc;
    }
    return TIO_OK;
}

/* The local header of m: where its data start, checked against the central
 * entry; then its data descriptor when it has one. */
static int npz_local(npz_reader *r, npz_member *m) {
    tio_cursor *c = &r->cur;
    char nm[80]; /* the name for messages, escaped when one is written */
    if (m->local >= r->cd_at)
        return tio__err(r->err, TIO_E_BOUNDS, NPZ, npz_off(m->central + 42),
                        "member '%s': local header offset %" PRIu64
                        " is not before the central directory at %" PRIu64,
                        NPZ_NM(m, nm), m->local, r->cd_at);
    int rc = tio__cursor_seek(c, m->local, "a local header", r->err);
    const uint8_t *hp = NULL, *name = NULL, *x = NULL;
    uint8_t h[NPZ_LOCAL_SIZE];
    /* read through the cursor's header window (valid until its next read) */
    if (!rc) rc = tio__cursor_head(c, NPZ_LOCAL_SIZE, &hp, "a local header", r->err);
    if (rc) return rc;
    memcpy(h, hp, sizeof h);
    if (tio__ld32(h) != NPZ_LOCAL)
        return tio__err(r->err, TIO_E_MAGIC, NPZ, npz_off(m->local),
                        "member '%s': its local header starts with 0x%08" PRIx32
                        " (expected \"PK\\3\\4\")",
                        NPZ_NM(m, nm), tio__ld32(h));
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
        return tio__err(r->err, TIO_E_CORRUPT, NPZ, npz_off(m->local + 30),
                        "the local header names '%s', its central entry '%s' (expected the "
                        "same)",
                        ln, NPZ_NM(m, nm));
    }
    if (flags != m->flags || method != m->method)
        return tio__err(r->err, TIO_E_CORRUPT, NPZ, npz_off(m->local + 6),
                        "member '%s': the local header has flags 0x%04x, method %u, the "
                        "central entry 0x%04x, %u (expected the same)",
                        NPZ_NM(m, nm), flags, method, m->flags, m->method);
    int has = 0;
    rc = npz_zip64(r, x, xlen, m->local + 30 + nlen, !(flags & NPZ_FLAG_DESCRIPTOR), &usize,
                   &csize, NULL, &has);
    if (rc) return rc;
    int desc = (flags & NPZ_FLAG_DESCRIPTOR) != 0;
    if (!desc && (crc != m->crc || csize != m->csize || usize != m->usize))
        return tio__err(r->err, TIO_E_CORRUPT, NPZ, npz_off(m->local + 14),
                        "member '%s': the local header has CRC 0x%08" PRIx32 ", sizes %" PRIu64
                        "/%" PRIu64 ", the central entry 0x%08" PRIx32 ", %" PRIu64 "/%" PRIu64
                        " (compressed/uncompressed; expected the same)",
                        NPZ_NM(m, nm), crc, csize, usize, m->crc, m->csize, m->usize);
    m->data_at = c->pos;
    uint64_t end = 0;
    if (tio__add64_ovf(m->data_at, m->csize, &end) || end > r->cd_at)
        return tio__err(r->err, TIO_E_BOUNDS, NPZ, npz_off(m->central + 20),
                        "member '%s': %" PRIu64 " bytes of data at offset %" PRIu64
                        " run past the central directory at %" PRIu64,
                        NPZ_NM(m, nm), m->csize, m->data_at, r->cd_at);
    m->end = end;
    if (desc) {
        /* the data descriptor: [signature] crc, sizes (8 bytes each with zip64) */
        rc = tio__cursor_seek(c, end, "a data descriptor", r->err);
        uint32_t v = 0;
        if (!rc) rc = tio__cursor_u32(c, &v, "a data descriptor", r->err);
        if (rc) return rc;
        if (v == NPZ_DESCRIPTOR) /* the optional signature, then the CRC */
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
            return tio__err(r->err, TIO_E_CORRUPT, NPZ, npz_off(end),
                            "member '%s': the data descriptor has CRC 0x%08" PRIx32
                            ", sizes %" PRIu64 "/%" PRIu64 ", the central entry 0x%08" PRIx32
                            ", %" PRIu64 "/%" PRIu64 " (expected the same)",
                            NPZ_NM(m, nm), v, dc, du, m->crc, m->csize, m->usize);
        if (c->pos > r->cd_at)
            return tio__err(r->err, TIO_E_BOUNDS, NPZ, npz_off(end),
                            "member '%s': its data descriptor runs into the central "
                            "directory at %" PRIu64,
                            NPZ_NM(m, nm), r->cd_at);
        m->end = c->pos;
    }
    return TIO_OK;
}

static int npz_by_offset(const void *a, const void *b) {
    const npz_member *x = *(const npz_member *const *)a, *y = *(const npz_member *const *)b;
    return x->local < y->local ? -1 : x->local > y->local;
}

static int npz_overlap(npz_reader *r, const npz_member *a, const npz_member *b) {
    char an[80], bn[80];
    npz_name_esc(a, an, sizeof an);
    npz_name_esc(b, bn, sizeof bn);
    return tio__err(r->err, TIO_E_CORRUPT, NPZ, npz_off(b->local),
                    "members '%s' (offset %" PRIu64 " to %" PRIu64 ") and '%s' (offset %" PRIu64
                    ") overlap (expected each byte in one member)",
                    an, a->local, a->end, bn, b->local);
}

static uint64_t npz_name_hash(const npz_member *m) {
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (size_t k = 0; k < m->name_len; k++) h = (h ^ m->name[k]) * 1099511628211u;
    return h;
}

/* No two members share a name (the central directory's names): a hash set
 * of the names, in central directory order, so the entry named is the
 * later of two. O(members), not a sort. */
static int npz_unique(npz_reader *r) {
    if (r->n < 2) return TIO_OK;
    size_t cap = 4;
    while (cap < 2 * r->n) cap *= 2; /* r->n <= max_tensors: no overflow */
    size_t *slot = malloc(cap * sizeof *slot);
    if (!slot) return tio__nomem(r->err, NPZ);
    for (size_t k = 0; k < cap; k++) slot[k] = SIZE_MAX;
    int rc = TIO_OK;
    for (size_t i = 0; i < r->n && !rc; i++) {
        const npz_member *m = &r->m[i];
        size_t k = (size_t)npz_name_hash(m) & (cap - 1);
        for (; slot[k] != SIZE_MAX; k = (k + 1) & (cap - 1)) {
            const npz_member *o = &r->m[slot[k]];
            if (o->name_len == m->name_len && memcmp(o->name, m->name, m->name_len) == 0) {
                char a[80];
                npz_name_esc(m, a, sizeof a);
                rc = tio__err(r->err, TIO_E_CORRUPT, NPZ, npz_off(m->central),
                              "two members are named '%s' (np.load would see only one)", a);
                break;
            }
        }
        slot[k] = i;
    }
    free(slot);
    return rc;
}

/* No two members share bytes (every local header read). */
static int npz_disjoint(npz_reader *r) {
    if (r->n < 2) return TIO_OK;
    npz_member **o = malloc(r->n * sizeof *o);
    if (!o) return tio__nomem(r->err, NPZ);
    for (size_t i = 0; i < r->n; i++) o[i] = &r->m[i];
    int rc = TIO_OK;
    qsort(o, r->n, sizeof *o, npz_by_offset);
    for (size_t i = 1; i < r->n && !rc; i++)
        if (o[i]->local < o[i - 1]->end) rc = npz_overlap(r, o[i - 1], o[i]);
    free(o);
    return rc;
}

/* A member's bytes inflated into a buffer of its declared size, which must
 * be what the stream produces, with the declared CRC-32. */
static int npz_inflate(npz_reader *r, const npz_member *m, const char *nm, uint8_t **out) {
    uint64_t limit = r->ctx->limits.max_dense_bytes, total = 0, bound = 0;
    if (tio__mul64_ovf(m->csize, NPZ_DEFLATE_RATIO, &bound) || m->usize > bound + 64)
        return tio__err(r->err, TIO_E_CORRUPT, NPZ, npz_off(m->central + 24),
                        "member '%s' declares %" PRIu64 " bytes inflated from %" PRIu64
                        ", more than deflate can produce (%u to 1)",
                        nm, m->usize, m->csize, NPZ_DEFLATE_RATIO);
    if (tio__add64_ovf(r->inflated, m->usize, &total) || total > limit)
        return tio__err(r->err, TIO_E_LIMIT, NPZ, npz_off(m->data_at),
                        "member '%s' inflates to %" PRIu64 " bytes, %" PRIu64
                        " in all with the members before it, above the limit (max_dense_bytes "
                        "%" PRIu64 ", --max-dense-bytes)",
                        nm, m->usize, total, limit);
    if (m->usize > SIZE_MAX - 1)
        return tio__err(r->err, TIO_E_LIMIT, NPZ, npz_off(m->data_at),
                        "member '%s' is too large to inflate here", nm);
    /* one byte more than declared, to see a stream that runs past it */
    uint8_t *buf = malloc((size_t)m->usize + 1);
    if (!buf) return tio__nomem(r->err, NPZ);
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, -15) != Z_OK) {
        free(buf);
        return tio__nomem(r->err, NPZ);
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
        rc = tio__err(r->err, TIO_E_LIMIT, NPZ, npz_off(m->data_at),
                      "member '%s' inflates past its declared %" PRIu64
                      " bytes (a zip bomb or a wrong size; stopped there)",
                      nm, m->usize);
    else if (zr == Z_DATA_ERROR || zr == Z_NEED_DICT)
        rc = tio__err(r->err, TIO_E_CORRUPT, NPZ, npz_off(m->data_at + m->csize - in_left),
                      "member '%s': not a valid deflate stream (%s)", nm,
                      zmsg ? zmsg : "zlib's inflate refused it");
    else if (zr == Z_MEM_ERROR)
        rc = tio__nomem(r->err, NPZ);
    else if (zr != Z_STREAM_END)
        rc = tio__err(r->err, TIO_E_TRUNCATED, NPZ, npz_off(m->data_at + m->csize),
                      "member '%s': its deflate stream is cut after %" PRIu64
                      " compressed bytes (%" PRIu64 " bytes inflated)",
                      nm, m->csize, got);
    else if (got != m->usize)
        rc = tio__err(r->err, TIO_E_CORRUPT, NPZ, npz_off(m->central + 24),
                      "member '%s' inflates to %" PRIu64 " bytes, its entry declares %" PRIu64,
                      nm, got, m->usize);
    else if (in_left)
        rc = tio__err(r->err, TIO_E_CORRUPT, NPZ, npz_off(m->data_at + m->csize - in_left),
                      "member '%s': %" PRIu64 " bytes after its deflate stream (expected it "
                      "to fill the compressed size)",
                      nm, in_left);
    if (!rc) {
        uint32_t crc = npz_crc(0, buf, (size_t)got);
        if (crc != m->crc)
            rc = tio__err(r->err, TIO_E_CORRUPT, NPZ, npz_off(m->central + 16),
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
    if (tl == 0)
        return tio__err(r->err, TIO_E_UNSUPPORTED, NPZ, npz_off(m->central + 46),
                        "member '.npy' would be a tensor with an empty name (tensio's "
                        "tensors are named or unnamed; np.savez names unnamed ones arr_<i>)");
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
        int rc = npz_inflate(r, m, NPZ_NM(m, nm), &buf);
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

static int npz_read_all(npz_reader *r) {
    uint64_t end_at = 0, count = 0;
    int rc = npz_find_end(r, &end_at);
    if (!rc) rc = npz_read_end(r, end_at, &count);
    if (rc) return rc;
    r->n = (size_t)count;
    r->m = calloc(r->n ? r->n : 1, sizeof *r->m);
    if (!r->m) return tio__nomem(r->err, NPZ);
    rc = tio__cursor_seek(&r->cur, r->cd_at, "the central directory", r->err);
    size_t longest = 0;
    for (size_t i = 0; i < r->n && !rc; i++) {
        rc = npz_central(r, &r->m[i]);
        if (!rc && r->m[i].name_len > longest) longest = r->m[i].name_len;
    }
    if (rc) return rc;
    if (r->cur.pos != r->cd_at + r->cd_size)
        return tio__err(r->err, TIO_E_CORRUPT, NPZ, npz_off(r->cur.pos),
                        "the %zu central directory entries end at %zu, but the directory is "
                        "%" PRIu64 " bytes from %" PRIu64 " (expected them to fill it)",
                        r->n, r->cur.pos, r->cd_size, r->cd_at);
    r->tname = malloc(longest + 1);
    if (!r->tname) return tio__nomem(r->err, NPZ);
    /* The tensors in central directory order (np.load's NpzFile.files).
     * When the members lie in that order (every writer's), each is read
     * right after its local header, which the header window still holds
     * with the .npy header behind it: one pread per member. Overlap is
     * then a check against the member before, made before a member is
     * read (members sharing bytes would inflate the same stream twice).
     * Otherwise every local header first, the overlap check over all,
     * then the members. Names are unique either way (checked before any
     * member is read). */
    int ascending = 1;
    for (size_t i = 1; i < r->n; i++) ascending &= r->m[i].local > r->m[i - 1].local;
    if (ascending) {
        rc = npz_unique(r);
        for (size_t i = 0; i < r->n && !rc; i++) {
            if (i && r->m[i].local < r->m[i - 1].end)
                rc = npz_overlap(r, &r->m[i - 1], &r->m[i]);
            if (!rc) rc = npz_local(r, &r->m[i]);
            if (!rc) rc = npz_member_read(r, &r->m[i]);
        }
    } else {
        for (size_t i = 0; i < r->n && !rc; i++) rc = npz_local(r, &r->m[i]);
        if (!rc) rc = npz_disjoint(r);
        if (!rc) rc = npz_unique(r);
        for (size_t i = 0; i < r->n && !rc; i++) rc = npz_member_read(r, &r->m[i]);
    }
    if (rc) return rc;
    char v[TIO__DEC_CAP];
    size_t deflated = 0;
    for (size_t i = 0; i < r->n; i++) deflated += r->m[i].method == NPZ_DEFLATED;
    rc = tio__kv_set(&r->ctx->c->props, "members", tio__u64_dec(v, r->n), r->err);
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
    tio__cursor_init(&r.cur, ctx->data, ctx->size, NPZ);
    tio__cursor_use_head(&r.cur, ctx); /* local headers by pread, data as views */
    int rc = npz_read_all(&r);
    free(r.m);
    free(r.tname);
    return rc;
}

/* ------------------------------------------------------------------ write */

/* The member name of plan tensor i: its name + ".npy", or np.savez's
 * "arr_<i>.npy" for an unnamed one. Malloc'ed. */
static char *npz_member_name(const tio_wtensor *w, size_t i) {
    char buf[40];
    const char *base = w->name;
    if (!base || !base[0]) {
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
    if (n == 0) return TIO_OK;
    char **names = calloc(n, sizeof *names);
    if (!names) return tio__nomem(err, NPZ);
    int rc = TIO_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        const tio_wtensor *w = tio__plan_tensor(p, i);
        if (!tio__npy_descr(w->dtype))
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
typedef struct npz_wmember {
    uint64_t local, csize, usize;
    uint32_t crc;
    unsigned flags;
} npz_wmember;

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
    uint8_t *hdr = NULL;
    size_t hlen = 0;
    int rc = tio__npy_header(w, tio__plan_version(p), NPZ, &hdr, &hlen, err);
    if (rc) return rc;
    const uint8_t *data = NULL;
    rc = tio__plan_data(p, i, &data, NULL, err);
    if (rc) {
        free(hdr);
        return rc;
    }
    size_t nlen = strlen(name);
    m->local = tio__sink_pos(s);
    m->usize = (uint64_t)hlen + w->nbytes;
    m->csize = compress ? 0 : m->usize;
    /* stored: the data's CRC is taken as it is written (the local header
     * gets it then); deflated: the CRC of everything now */
    m->crc = npz_crc(0, hdr, hlen);
    if (compress) m->crc = npz_crc(m->crc, data, w->nbytes);
    m->flags = 0;
    for (size_t k = 0; k < nlen; k++)
        if ((unsigned char)name[k] >= 0x80) m->flags = NPZ_FLAG_UTF8;
    uint8_t *lh = malloc(30 + nlen + 20);
    if (!lh) {
        free(hdr);
        return tio__nomem(err, NPZ);
    }
    size_t ll = npz_local_header(lh, m, compress ? NPZ_DEFLATED : NPZ_STORED, name, nlen);
    rc = tio__sink_write(s, lh, ll, err);
    if (!rc && !compress) {
        /* the data's CRC from the job's thread, taken while this one writes,
         * when the bytes are the ones it was given; else in the same pass */
        bool threaded = job && view && data == view;
        rc = tio__sink_write(s, hdr, hlen, err);
        if (!rc)
            rc = threaded ? tio__plan_sink_data(p, s, data, w->nbytes, err)
                          : tio__plan_sink_data_crc(p, s, data, w->nbytes, &m->crc, err);
        if (!rc && threaded)
            m->crc = (uint32_t)crc32_combine(m->crc, tio__crc32_wait(job, i),
                                             (z_off_t)w->nbytes);
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
        if (!rc) rc = npz_deflate(z, s, buf, cap, data, w->nbytes, 1, &out, err);
        if (!rc) {
            m->csize = out;
            ll = npz_local_header(lh, m, NPZ_DEFLATED, name, nlen);
            rc = tio__sink_patch(s, m->local, lh, ll, err);
        }
    }
    free(lh);
    free(hdr);
    return rc;
}

/* The central directory and end records, as zipfile.py's _write_end_record
 * writes them. */
static int npz_write_end(tio_write_plan *p, tio_sink *s, const npz_wmember *ms,
                         char *const *names, int compress, tio_error *err) {
    size_t n = tio__plan_count(p);
    uint64_t cd_at = tio__sink_pos(s);
    int rc = TIO_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        const npz_wmember *m = &ms[i];
        uint8_t h[46 + 28];
        size_t nlen = strlen(names[i]);
        int big = m->usize > NPZ_ZIP64_LIMIT || m->csize > NPZ_ZIP64_LIMIT;
        int far = m->local > NPZ_ZIP64_LIMIT;
        size_t xl = (big ? 16u : 0u) + (far ? 8u : 0u);
        uint8_t ver = big || far ? 45 : 20;
        tio__st32(h, NPZ_CENTRAL);
        h[4] = ver;
        h[5] = 3; /* made on Unix */
        h[6] = ver;
        h[7] = 0;
        h[8] = (uint8_t)m->flags;
        h[9] = (uint8_t)(m->flags >> 8);
        h[10] = compress ? NPZ_DEFLATED : NPZ_STORED;
        h[11] = 0;
        h[12] = h[13] = 0;
        h[14] = 0x21;
        h[15] = 0;
        tio__st32(h + 16, m->crc);
        tio__st32(h + 20, big ? 0xFFFFFFFFu : (uint32_t)m->csize);
        tio__st32(h + 24, big ? 0xFFFFFFFFu : (uint32_t)m->usize);
        h[28] = (uint8_t)nlen;
        h[29] = (uint8_t)(nlen >> 8);
        h[30] = (uint8_t)(xl ? xl + 4 : 0);
        h[31] = 0;
        memset(h + 32, 0, 6);           /* comment length, disk, internal attributes */
        tio__st32(h + 38, 0600u << 16); /* ?rw------- */
        tio__st32(h + 42, far ? 0xFFFFFFFFu : (uint32_t)m->local);
        rc = tio__sink_write(s, h, 46, err);
        if (!rc) rc = tio__sink_write(s, names[i], nlen, err);
        if (!rc && xl) {
            uint8_t *x = h + 46;
            size_t k = 4;
            x[0] = 1;
            x[1] = 0;
            x[2] = (uint8_t)xl;
            x[3] = 0;
            if (big) {
                tio__st64(x + k, m->usize);
                tio__st64(x + k + 8, m->csize);
                k += 16;
            }
            if (far) {
                tio__st64(x + k, m->local);
                k += 8;
            }
            rc = tio__sink_write(s, x, k, err);
        }
    }
    if (rc) return rc;
    uint64_t cd_end = tio__sink_pos(s), cd_size = cd_end - cd_at;
    uint8_t e[NPZ_END64_SIZE + NPZ_LOC64_SIZE + NPZ_END_SIZE];
    size_t el = 0;
    if (n > 0xFFFF || cd_at > NPZ_ZIP64_LIMIT || cd_size > NPZ_ZIP64_LIMIT) {
        tio__st32(e, NPZ_END64);
        tio__st64(e + 4, 44);
        e[12] = 45;
        e[13] = 0;
        e[14] = 45;
        e[15] = 0;
        tio__st32(e + 16, 0);
        tio__st32(e + 20, 0);
        tio__st64(e + 24, n);
        tio__st64(e + 32, n);
        tio__st64(e + 40, cd_size);
        tio__st64(e + 48, cd_at);
        tio__st32(e + 56, NPZ_LOC64);
        tio__st32(e + 60, 0);
        tio__st64(e + 64, cd_end);
        tio__st32(e + 72, 1);
        el = NPZ_END64_SIZE + NPZ_LOC64_SIZE;
    }
    uint8_t *q = e + el;
    uint64_t nn = n > 0xFFFF ? 0xFFFF : n;
    tio__st32(q, NPZ_END);
    tio__st32(q + 4, 0);
    q[8] = q[10] = (uint8_t)nn;
    q[9] = q[11] = (uint8_t)(nn >> 8);
    tio__st32(q + 12, cd_size > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)cd_size);
    tio__st32(q + 16, cd_at > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)cd_at);
    q[20] = q[21] = 0;
    return tio__sink_write(s, e, el + NPZ_END_SIZE, err);
}

#define NPZ_CRC_JOB_MIN ((uint64_t)32 << 20)

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
        views[i] = npz_combinable(sizes[i]) ? tio__plan_view(p, i) : NULL;
        if (views[i]) viewed += sizes[i];
    }
    if (!rc && viewed >= NPZ_CRC_JOB_MIN) job = tio__crc32_start(views, sizes, n); /* NULL: none */
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
    if (!rc) rc = npz_write_end(p, s, ms, names, compress, err);
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
    .options = "compress",
};
