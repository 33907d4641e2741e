/*
 * A zip archive reader over the bounds-checked cursor (PKWARE's APPNOTE.TXT,
 * the layout of Python's zipfile.py and of miniz): shared by the .npz and
 * torch formats. Internal.
 *
 *   per member: local header "PK\3\4" | name | extra (zip64: sizes) | data
 *   (stored or raw deflate) [| data descriptor] ; the central directory: one
 *   "PK\1\2" entry per member ; [zip64 end record "PK\6\6" | its locator
 *   "PK\6\7"] ; the end record "PK\5\6" | comment.
 *
 * Every structure is read through the cursor; zlib only inflates. Errors
 * and findings name the caller's format.
 */
#ifndef TIO_ZIP_H
#define TIO_ZIP_H

#include "core/internal.h"

#define TIO_ZIP_LOCAL 0x04034b50u
#define TIO_ZIP_END 0x06054b50u
#define TIO_ZIP_LOCAL_SIZE 30u
#define TIO_ZIP_END_SIZE 22u
#define TIO_ZIP_STORED 0u
#define TIO_ZIP_DEFLATED 8u
#define TIO_ZIP_FLAG_UTF8 0x0800u

typedef struct tio_zip_member {
    const uint8_t *name; /* a view into the input (not NUL-terminated) */
    size_t name_len;
    uint64_t local;     /* offset of the local header */
    uint64_t csize, usize;
    uint32_t crc;
    unsigned method, flags;
    int zip64;          /* the entry has a zip64 extra field */
    uint64_t data_at;   /* the member's (compressed) data (after tio__zip_each) */
    uint64_t end;       /* past its data and data descriptor */
    uint64_t central;   /* offset of its central directory entry */
} tio_zip_member;

typedef struct tio_zip {
    tio_read_ctx *ctx;
    tio_error *err;
    tio_cursor cur;
    const char *format;  /* the format named in messages ("npz") */
    const char *writer;  /* the writer the findings compare with ("np.savez") */
    tio_zip_member *m;   /* in central directory order */
    size_t n;
    size_t longest;      /* the longest member name */
    uint64_t cd_at, cd_size;
    uint64_t inflated;   /* bytes inflated so far (bounded by max_dense_bytes) */
    size_t locals_done;  /* members [0, locals_done) have data_at/end (tio__zip_locals_end) */
} tio_zip;

/* Reads the end records and the central directory of ctx's input (local
 * headers not yet). z is set up here; free it with tio__zip_free. */
int tio__zip_open(tio_zip *z, tio_read_ctx *ctx, const char *format, const char *writer,
                  tio_error *err);
/* Reads every member's local header (data_at, end), checks that no two
 * members share a name or bytes, and calls each(arg, i) for the members in
 * central directory order, stopping at its first nonzero return. When the
 * members lie in that order each is visited right after its local header
 * (one header window per member). */
int tio__zip_each(tio_zip *z, int (*each)(void *arg, size_t i), void *arg);
/* Many members' local headers read on a thread of the library's own while
 * the caller does other work (the torch reader runs its pickle and walks it): a local
 * header is a pread() of a page far from the last, ~0.7 us of system time
 * per member, and two cores halve an open of 10,000. Started only for a
 * mapped file (ctx->head) of at least TIO_ZIP_LOCALS_MIN members; NULL when
 * not (or pthread_create failed): tio__zip_each then reads them all. The
 * thread reads with its own cursor and header window, writes only the
 * members' data_at and end, and stops at its first failure; the caller must
 * not read the members' data_at and end but through tio__zip_locals_member
 * until tio__zip_locals_end, which joins the thread and sets
 * locals_done to the members read before that failure (tio__zip_each reads
 * the rest itself, in its own order, so that errors are the ones a reader
 * without the thread reports). NULL is fine. */
#define TIO_ZIP_LOCALS_MIN 256u
#define TIO_ZIP_LOCALS_BATCH 128u /* a record this far ahead of the thread is read by the caller */
typedef struct tio_zip_locals tio_zip_locals;
tio_zip_locals *tio__zip_locals_start(tio_zip *z);
void tio__zip_locals_end(tio_zip *z, tio_zip_locals *j);
/* While the thread runs: member i with its local header read (data_at,
 * end) into *out, a copy. The thread's reading when it has got there, or
 * waited for when it is about to; else (a record far ahead, or the thread
 * stopped short of it) read here with the caller's cursor and error. The
 * caller's work started before tio__zip_each must hold its errors until
 * tio__zip_each has checked the archive. j NULL: z->m[i] as it is. */
int tio__zip_locals_member(tio_zip *z, tio_zip_locals *j, size_t i, tio_zip_member *out);
/* The local header of *m, a copy of one of z->m made before the thread
 * above started (z->m is the thread's until it ends): sets m's data_at and
 * end. */
int tio__zip_local_of(tio_zip *z, tio_zip_member *m);
/* A deflated member's bytes inflated into a malloc'ed buffer of its declared
 * size, which must be what the stream produces, with the declared CRC-32;
 * all inflations of one archive bounded by max_dense_bytes together. nm: the
 * member's name for messages. */
int tio__zip_inflate(tio_zip *z, const tio_zip_member *m, const char *nm, uint8_t **out);
/* The member's name escaped for a message. */
void tio__zip_name(const tio_zip_member *m, char *out, size_t cap);
void tio__zip_free(tio_zip *z);

/* ------------------------------------------------------------ writing */

/* What differs between the zip writers tensio follows: Python's zipfile.py
 * (np.savez: versions 20/45, made on Unix, 1980-01-01, mode 0600, zip64
 * fields past ZIP64_LIMIT) and miniz as PyTorch's writer drives it (version
 * 0 for stored records, no date, no attributes, zip64 fields from
 * 0xFFFFFFFF on, the zip64 end records always). */
typedef struct tio_zipw_style {
    uint8_t version, version64; /* "version needed" (and made by) without / with zip64 fields */
    uint8_t made_os;            /* "version made by" high byte: 3 Unix, 0 */
    uint16_t date;              /* DOS date (0x21: 1980-01-01); the time is 0 */
    uint32_t external;          /* external attributes */
    uint64_t limit;             /* a size or offset above this gets zip64 fields */
    int end64_always;           /* the zip64 end record and locator even when not needed */
    uint16_t end64_made, end64_need; /* their "version made by" and "needed" */
} tio_zipw_style;

/* What the central directory needs of a written member. */
typedef struct tio_zipw_member {
    uint64_t local, csize, usize;
    uint32_t crc;
    unsigned method, flags;
} tio_zipw_member;

/* Writes member m's central directory entry named name[0..nlen). */
int tio__zipw_central(tio_sink *s, const tio_zipw_style *st, const tio_zipw_member *m,
                      const char *name, size_t nlen, tio_error *err);
/* Writes the end records of n members whose central directory starts at
 * cd_at and ends at the sink's position. */
int tio__zipw_end(tio_sink *s, const tio_zipw_style *st, uint64_t n, uint64_t cd_at,
                  tio_error *err);

/* An offset for a message (saturated to INT64_MAX). */
static inline int64_t tio__zip_off(uint64_t v) {
    return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
}

#endif
