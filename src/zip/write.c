/*
 * The zip writer's shared half: central directory entries and end records
 * (PKWARE's APPNOTE.TXT), in the style of the writer a format follows
 * (tio_zipw_style: zipfile.py for .npz, miniz for PyTorch checkpoints).
 * Local headers and member data are the formats' own (src/formats/npz.c,
 * src/formats/torch_write.c): they differ in more than fields.
 */
#include "zip/zip.h"

#include <string.h>

#define ZIPW_CENTRAL 0x02014b50u
#define ZIPW_END64 0x06064b50u
#define ZIPW_LOC64 0x07064b50u
#define ZIPW_CENTRAL_SIZE 46u
#define ZIPW_END64_SIZE 56u
#define ZIPW_LOC64_SIZE 20u

static void zipw_st16(uint8_t *p, unsigned v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

int tio__zipw_central(tio_sink *s, const tio_zipw_style *st, const tio_zipw_member *m,
                      const char *name, size_t nlen, tio_error *err) {
    uint8_t h[ZIPW_CENTRAL_SIZE + 28];
    int big = m->usize > st->limit || m->csize > st->limit;
    int far = m->local > st->limit;
    size_t xl = (big ? 16u : 0u) + (far ? 8u : 0u);
    uint8_t ver = big || far ? st->version64 : st->version;
    tio__st32(h, ZIPW_CENTRAL);
    h[4] = ver;
    h[5] = st->made_os;
    zipw_st16(h + 6, ver);
    zipw_st16(h + 8, m->flags);
    zipw_st16(h + 10, m->method);
    zipw_st16(h + 12, 0); /* time 00:00:00 */
    zipw_st16(h + 14, st->date);
    tio__st32(h + 16, m->crc);
    tio__st32(h + 20, big ? 0xFFFFFFFFu : (uint32_t)m->csize);
    tio__st32(h + 24, big ? 0xFFFFFFFFu : (uint32_t)m->usize);
    zipw_st16(h + 28, (unsigned)nlen);
    zipw_st16(h + 30, xl ? (unsigned)xl + 4 : 0);
    memset(h + 32, 0, 6); /* comment length, disk, internal attributes */
    tio__st32(h + 38, st->external);
    tio__st32(h + 42, far ? 0xFFFFFFFFu : (uint32_t)m->local);
    int rc = tio__sink_write(s, h, ZIPW_CENTRAL_SIZE, err);
    if (!rc) rc = tio__sink_write(s, name, nlen, err);
    if (rc || !xl) return rc;
    uint8_t *x = h + ZIPW_CENTRAL_SIZE;
    size_t k = 4;
    zipw_st16(x, 1); /* the zip64 extended information */
    zipw_st16(x + 2, (unsigned)xl);
    if (big) {
        tio__st64(x + k, m->usize);
        tio__st64(x + k + 8, m->csize);
        k += 16;
    }
    if (far) {
        tio__st64(x + k, m->local);
        k += 8;
    }
    return tio__sink_write(s, x, k, err);
}

int tio__zipw_end(tio_sink *s, const tio_zipw_style *st, uint64_t n, uint64_t cd_at,
                  tio_error *err) {
    uint64_t cd_end = tio__sink_pos(s), cd_size = cd_end - cd_at;
    uint8_t e[ZIPW_END64_SIZE + ZIPW_LOC64_SIZE + TIO_ZIP_END_SIZE];
    size_t el = 0;
    if (st->end64_always || n > 0xFFFF || cd_at > st->limit || cd_size > st->limit) {
        tio__st32(e, ZIPW_END64);
        tio__st64(e + 4, ZIPW_END64_SIZE - 12);
        zipw_st16(e + 12, st->end64_made);
        zipw_st16(e + 14, st->end64_need);
        tio__st32(e + 16, 0); /* this disk, the directory's disk */
        tio__st32(e + 20, 0);
        tio__st64(e + 24, n);
        tio__st64(e + 32, n);
        tio__st64(e + 40, cd_size);
        tio__st64(e + 48, cd_at);
        tio__st32(e + 56, ZIPW_LOC64);
        tio__st32(e + 60, 0);
        tio__st64(e + 64, cd_end);
        tio__st32(e + 72, 1); /* disks */
        el = ZIPW_END64_SIZE + ZIPW_LOC64_SIZE;
    }
    uint8_t *q = e + el;
    unsigned nn = n > 0xFFFF ? 0xFFFFu : (unsigned)n;
    tio__st32(q, TIO_ZIP_END);
    tio__st32(q + 4, 0);
    zipw_st16(q + 8, nn);
    zipw_st16(q + 10, nn);
    tio__st32(q + 12, cd_size > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)cd_size);
    tio__st32(q + 16, cd_at > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)cd_at);
    zipw_st16(q + 20, 0); /* comment length */
    return tio__sink_write(s, e, el + TIO_ZIP_END_SIZE, err);
}
