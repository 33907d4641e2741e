/* NumPy .npz: the zip structure around the .npy members, one test per class
 * of bad input (each with the code and a piece of the message), stored
 * members as views, deflated members bounded, and the writer (names, the
 * option, the layout np.savez writes; tests/formats/test_npz.py compares the
 * bytes with NumPy itself). Archives are built here: by tensio's writer, then
 * edited field by field, or member by member with zlib. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "tassert.h"
#include "tensio.h"

typedef struct zbuf {
    uint8_t *p;
    size_t n;
} zbuf;

static void st16(uint8_t *p, unsigned v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static void st32(uint8_t *p, uint32_t v) {
    st16(p, v & 0xFFFF);
    st16(p + 2, v >> 16);
}
static void st64(uint8_t *p, uint64_t v) {
    st32(p, (uint32_t)v);
    st32(p + 4, (uint32_t)(v >> 32));
}
static uint32_t ld32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static unsigned ld16(const uint8_t *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }

/* tensio's archive of tensors named names[i] (NULL: unnamed), each `count`
 * uint8 values i*16..; `options` as tio_save_options.options. */
static zbuf archive(const char *const *names, size_t n, size_t count, const char *options) {
    tio_container *c = tio_container_new();
    uint8_t *data = malloc(count ? count : 1);
    assert_non_null(data);
    tio_error e;
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < count; k++) data[k] = (uint8_t)(i * 16 + k);
        int64_t shape[1] = {(int64_t)count};
        tio_tensor_desc d = {names[i], TIO_UINT8, 1, shape, TIO_LAYOUT_DENSE, data, count, 0,
                             NULL};
        ASSERT_OK(tio_container_add(c, &d, 0, NULL, &e), e, "add");
    }
    free(data);
    tio_save_options so = {.format = "npz", .options = options};
    void *out = NULL;
    size_t len = 0;
    ASSERT_OK(tio_save_memory(c, &so, &out, &len, &e), e, "save");
    zbuf z = {malloc(len), len};
    assert_non_null(z.p);
    memcpy(z.p, out, len);
    tio_free(out);
    tio_container_free(c);
    return z;
}

static zbuf one(const char *options) {
    const char *names[1] = {"x"};
    return archive(names, 1, 16, options);
}

/* Offsets in a one-member archive with a 5-byte name: local header at 0
 * (its zip64 extra at 35), data at 55, the central entry, the end record. */
static size_t cd_at(const zbuf *z) { return ld32(z->p + z->n - 22 + 16); }
static size_t end_at(const zbuf *z) { return z->n - 22; }

/* Sets a member's sizes everywhere they are (local, its zip64 extra,
 * central). */
static void set_sizes(zbuf *z, size_t cd, uint64_t csize, uint64_t usize) {
    st32(z->p + 18, (uint32_t)csize);
    st32(z->p + 22, (uint32_t)usize);
    st64(z->p + 35 + 4, usize);
    st64(z->p + 35 + 12, csize);
    st32(z->p + cd + 20, (uint32_t)csize);
    st32(z->p + cd + 24, (uint32_t)usize);
}

static int open_z(const zbuf *z, unsigned flags, const tio_limits *lim, tio_container **c,
                  tio_error *e) {
    tio_open_options o = {.format = "npz", .flags = flags, .limits = lim};
    *c = NULL;
    return tio_open_memory(z->p, z->n, &o, c, e);
}

static void refused_with(const zbuf *z, unsigned flags, const tio_limits *lim, int code,
                         const char *needle, const char *what) {
    tio_container *c = NULL;
    tio_error e;
    int rc = open_z(z, flags, lim, &c, &e);
    if (rc != code || !strstr(e.message, needle) || strncmp(e.message, "npz: ", 5) ||
        e.offset < -1 || (e.offset >= 0 && (uint64_t)e.offset > z->n)) {
        fprintf(stderr, "%s\n  -> %s: %s (expected %s, '%s')\n", what, tio_status_name(rc),
                e.message, tio_status_name(code), needle);
        fail();
    }
    assert_null(c);
}

static void refused(const zbuf *z, int code, const char *needle, const char *what) {
    refused_with(z, 0, NULL, code, needle, what);
}

static tio_container *opened(const zbuf *z, unsigned flags) {
    tio_container *c = NULL;
    tio_error e;
    ASSERT_OK(open_z(z, flags, NULL, &c, &e), e, "open");
    assert_string_equal(tio_container_format(c), "npz");
    return c;
}

/* A one-member archive built by hand: `npy` stored or raw-deflated, the
 * declared sizes and CRC as given unless 0 (then the true ones). */
static zbuf by_hand(const char *name, const uint8_t *npy, size_t len, int deflated,
                    uint64_t usize_decl) {
    size_t nl = strlen(name);
    uint8_t *comp = malloc(len + 1024);
    assert_non_null(comp);
    size_t clen = len;
    if (deflated) {
        z_stream s;
        memset(&s, 0, sizeof s);
        assert_int_equal(deflateInit2(&s, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
        s.next_in = (Bytef *)(uintptr_t)npy;
        s.avail_in = (uInt)len;
        s.next_out = comp;
        s.avail_out = (uInt)(len + 1024);
        assert_int_equal(deflate(&s, Z_FINISH), Z_STREAM_END);
        clen = s.total_out;
        deflateEnd(&s);
    } else {
        memcpy(comp, npy, len);
    }
    uint32_t crc = (uint32_t)crc32(0, npy, (uInt)len);
    uint64_t usize = usize_decl ? usize_decl : len;
    size_t total = 30 + nl + 20 + clen + 46 + nl + 22;
    zbuf z = {calloc(1, total), total};
    assert_non_null(z.p);
    uint8_t *p = z.p;
    st32(p, 0x04034b50);
    st16(p + 4, 20);
    st16(p + 8, deflated ? 8 : 0);
    st16(p + 12, 0x21);
    st32(p + 14, crc);
    st16(p + 26, (unsigned)nl);
    st16(p + 28, 20);
    memcpy(p + 30, name, nl);
    st16(p + 30 + nl, 1);
    st16(p + 32 + nl, 16);
    memcpy(p + 50 + nl, comp, clen);
    size_t cd = 50 + nl + clen;
    st32(p + cd, 0x02014b50);
    st16(p + cd + 4, 0x0314);
    st16(p + cd + 6, 20);
    st16(p + cd + 10, deflated ? 8 : 0);
    st16(p + cd + 14, 0x21);
    st32(p + cd + 16, crc);
    st16(p + cd + 28, (unsigned)nl);
    st32(p + cd + 38, 0600u << 16);
    memcpy(p + cd + 46, name, nl);
    size_t e = cd + 46 + nl;
    st32(p + e, 0x06054b50);
    st16(p + e + 8, 1);
    st16(p + e + 10, 1);
    st32(p + e + 12, (uint32_t)(46 + nl));
    st32(p + e + 16, (uint32_t)cd);
    free(comp);
    /* sizes: the local zip64 extra sits at 30 + nl; set_sizes assumes nl 5 */
    st32(p + 18, (uint32_t)clen);
    st32(p + 22, (uint32_t)usize);
    st64(p + 30 + nl + 4, usize);
    st64(p + 30 + nl + 12, clen);
    st32(p + cd + 20, (uint32_t)clen);
    st32(p + cd + 24, (uint32_t)usize);
    return z;
}

/* A valid .npy of `count` uint8 values. */
static uint8_t *npy_u1(size_t count, size_t *len) {
    char dict[128];
    int dl = snprintf(dict, sizeof dict, "{'descr': '|u1', 'fortran_order': False, 'shape': (%zu,), }",
                      count);
    size_t h = 64 * (((size_t)dl + 1 + 10 + 63) / 64) - 10;
    uint8_t *f = calloc(1, 10 + h + count);
    assert_non_null(f);
    memcpy(f, "\x93NUMPY\x01\x00", 8);
    st16(f + 8, (unsigned)h);
    memset(f + 10, ' ', h);
    memcpy(f + 10, dict, (size_t)dl);
    f[10 + h - 1] = '\n';
    *len = 10 + h + count;
    return f;
}

/* ----------------------------------------------------------------- reading */

static void test_read_views(void **state) {
    (void)state;
    const char *names[3] = {"a", NULL, "c.d"};
    zbuf z = archive(names, 3, 40, NULL);
    tio_container *c = opened(&z, TIO_OPEN_STRICT);
    assert_int_equal(tio_container_count(c), 3);
    assert_string_equal(tio_tensor_name(tio_container_tensor(c, 0)), "a");
    assert_string_equal(tio_tensor_name(tio_container_tensor(c, 1)), "arr_1");
    assert_string_equal(tio_tensor_name(tio_container_tensor(c, 2)), "c.d");
    for (size_t i = 0; i < 3; i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        const uint8_t *d = tio_tensor_data(t);
        /* stored: a view into the archive */
        assert_true(d > z.p && d + 40 <= z.p + z.n);
        assert_int_equal(d[1], (uint8_t)(i * 16 + 1));
    }
    assert_string_equal(tio_container_prop_get(c, "members"), "3");
    assert_string_equal(tio_container_prop_get(c, "deflated_members"), "0");
    tio_container_free(c);
    free(z.p);

    zbuf d = archive(names, 3, 4000, "compress=1");
    c = opened(&d, TIO_OPEN_STRICT);
    assert_string_equal(tio_container_prop_get(c, "deflated_members"), "3");
    const uint8_t *v = tio_tensor_data(tio_container_tensor(c, 2));
    assert_false(v >= d.p && v < d.p + d.n);
    assert_int_equal(v[3999], (uint8_t)(32 + 3999));
    tio_container_free(c);
    free(d.p);

    /* np.savez with no arrays: the end record alone */
    zbuf e = archive(NULL, 0, 0, NULL);
    assert_int_equal(e.n, 22);
    c = opened(&e, TIO_OPEN_STRICT);
    assert_int_equal(tio_container_count(c), 0);
    tio_container_free(c);
    free(e.p);
}

static void test_truncated_and_signatures(void **state) {
    (void)state;
    zbuf z = one(NULL);
    size_t n = z.n;
    z.n = 10;
    refused(&z, TIO_E_TRUNCATED, "shorter than the 22-byte end", "10 bytes");
    z.n = n - 1; /* the end record's comment length no longer reaches the end */
    refused(&z, TIO_E_MAGIC, "no end of central directory", "cut by one");
    z.n = n;
    z.p[0] ^= 0xff;
    refused(&z, TIO_E_MAGIC, "local header starts with", "local signature");
    z.p[0] ^= 0xff;
    size_t cd = cd_at(&z);
    z.p[cd + 1] ^= 0xff;
    refused(&z, TIO_E_MAGIC, "central directory entry 0 starts with", "central signature");
    z.p[cd + 1] ^= 0xff;
    /* the central directory offset past the end record */
    st32(z.p + end_at(&z) + 16, (uint32_t)(z.n + 100));
    refused(&z, TIO_E_BOUNDS, "central directory is", "cd offset");
    st32(z.p + end_at(&z) + 16, (uint32_t)cd);
    /* entry count larger than the directory holds */
    st16(z.p + end_at(&z) + 8, 3);
    st16(z.p + end_at(&z) + 10, 3);
    refused(&z, TIO_E_CORRUPT, "cannot fit", "count");
    st16(z.p + end_at(&z) + 8, 0);
    st16(z.p + end_at(&z) + 10, 0);
    refused(&z, TIO_E_CORRUPT, "expected them to fill it", "count 0");
    st16(z.p + end_at(&z) + 8, 1);
    st16(z.p + end_at(&z) + 10, 1);
    st16(z.p + end_at(&z) + 4, 1);
    refused(&z, TIO_E_UNSUPPORTED, "multi-disk", "disk");
    st16(z.p + end_at(&z) + 4, 0);
    tio_container_free(opened(&z, TIO_OPEN_STRICT));
    free(z.p);
}

static void test_end_record_twice_and_comment(void **state) {
    (void)state;
    zbuf z = one(NULL);
    /* a comment that is itself an end record reaching the end */
    zbuf y = {malloc(z.n + 22), z.n + 22};
    assert_non_null(y.p);
    memcpy(y.p, z.p, z.n);
    st16(y.p + z.n - 2, 22);
    memcpy(y.p + z.n, z.p + z.n - 22, 22);
    refused(&y, TIO_E_CORRUPT, "a second end of central directory record", "two ends");
    /* a plain comment: read, a finding */
    memset(y.p + z.n, 'c', 22);
    tio_container *c = opened(&y, 0);
    assert_int_equal(tio_container_warning_count(c), 1);
    assert_non_null(strstr(tio_container_warning(c, 0)->message, "22-byte comment"));
    tio_container_free(c);
    refused_with(&y, TIO_OPEN_STRICT, NULL, TIO_E_INVALID, "comment", "comment strict");
    free(y.p);
    free(z.p);
}

static void test_local_central_mismatch(void **state) {
    (void)state;
    zbuf z = one(NULL);
    size_t cd = cd_at(&z);
    z.p[30] = 'y';
    refused(&z, TIO_E_CORRUPT, "the local header names 'y.npy', its central entry 'x.npy'",
            "name");
    z.p[30] = 'x';
    z.p[8] = 8;
    refused(&z, TIO_E_CORRUPT, "method 8", "method");
    z.p[8] = 0;
    z.p[14] ^= 1;
    refused(&z, TIO_E_CORRUPT, "CRC 0x", "crc");
    z.p[14] ^= 1;
    z.p[18] ^= 1;
    refused(&z, TIO_E_CORRUPT, "zip64 extra field's compressed size", "local size vs extra");
    z.p[18] ^= 1;
    z.p[35 + 12] ^= 1; /* the local zip64 extra's compressed size */
    refused(&z, TIO_E_CORRUPT, "zip64 extra field's compressed size", "extra vs 32-bit");
    z.p[35 + 12] ^= 1;
    z.p[cd + 24] ^= 1;
    refused(&z, TIO_E_CORRUPT, "expected the same", "central usize");
    z.p[cd + 24] ^= 1;
    z.p[35 + 2] = 40; /* the extra field claims more than the header holds */
    refused(&z, TIO_E_CORRUPT, "extra field 0x0001 claims 40 bytes", "extra overrun");
    z.p[35 + 2] = 16;
    st32(z.p + cd + 42, 7);
    refused(&z, TIO_E_MAGIC, "local header starts with", "local offset");
    st32(z.p + cd + 42, (uint32_t)cd + 4);
    refused(&z, TIO_E_BOUNDS, "is not before the central directory", "local offset past");
    st32(z.p + cd + 42, 0);
    tio_container_free(opened(&z, TIO_OPEN_STRICT));
    free(z.p);
}

static void test_sizes_past_end(void **state) {
    (void)state;
    zbuf z = one(NULL);
    size_t cd = cd_at(&z);
    uint64_t u = ld32(z.p + 22);
    set_sizes(&z, cd, u + 1, u + 1);
    refused(&z, TIO_E_BOUNDS, "run past the central directory", "one byte more");
    set_sizes(&z, cd, 0x7ffffff0, 0x7ffffff0);
    refused(&z, TIO_E_BOUNDS, "run past the central directory", "2 GiB");
    set_sizes(&z, cd, u - 1, u - 1);
    refused(&z, TIO_E_TRUNCATED, "need 16 bytes, found 15", "one byte less");
    set_sizes(&z, cd, u, u + 1);
    refused(&z, TIO_E_CORRUPT, "stored, but its sizes differ", "stored sizes");
    free(z.p);
}

static void test_zip64(void **state) {
    (void)state;
    /* 32-bit sizes saturated: the values in the zip64 extra fields */
    zbuf z = one(NULL);
    size_t cd = cd_at(&z);
    st32(z.p + 18, 0xFFFFFFFF);
    st32(z.p + 22, 0xFFFFFFFF);
    tio_container_free(opened(&z, TIO_OPEN_STRICT));
    st32(z.p + cd + 20, 0xFFFFFFFF);
    refused(&z, TIO_E_CORRUPT, "but the entry has no zip64 extra field", "central lacks zip64");
    st32(z.p + cd + 20, ld32(z.p + 35 + 12));
    st32(z.p + 35 + 12, 0x10000); /* the local extra disagrees with the central size */
    refused(&z, TIO_E_CORRUPT, "expected the same", "local zip64 value");
    free(z.p);

    /* a central zip64 field holding both sizes and the offset (0xFFFFFFFF in
     * the 32-bit fields), as zipfile.py writes for members past 2 GiB */
    z = one(NULL);
    cd = cd_at(&z);
    zbuf x = {calloc(1, z.n + 28), z.n + 28};
    assert_non_null(x.p);
    memcpy(x.p, z.p, cd + 51);
    uint8_t *ce = x.p + cd;
    uint64_t usz = ld32(ce + 24);
    st32(ce + 20, 0xFFFFFFFF);
    st32(ce + 24, 0xFFFFFFFF);
    st32(ce + 42, 0xFFFFFFFF);
    st16(ce + 30, 28);
    st16(ce + 51, 1);
    st16(ce + 53, 24);
    st64(ce + 55, usz);
    st64(ce + 63, usz);
    st64(ce + 71, 0);
    memcpy(x.p + cd + 79, z.p + cd + 51, 22);
    st32(x.p + cd + 79 + 12, 79);
    tio_container_free(opened(&x, TIO_OPEN_STRICT));
    st16(ce + 53, 16); /* the offset missing: the field says 16 bytes, 8 stay as another */
    st16(ce + 71, 0x6375);
    refused(&x, TIO_E_CORRUPT, "lacks the local header offset", "zip64 offset missing");
    free(x.p);
    free(z.p);

    /* a zip64 end record and locator before the end record */
    z = one(NULL);
    cd = cd_at(&z);
    size_t e = end_at(&z);
    zbuf y = {calloc(1, z.n + 76), z.n + 76};
    assert_non_null(y.p);
    memcpy(y.p, z.p, e);
    uint8_t *r = y.p + e;
    st32(r, 0x06064b50);
    st64(r + 4, 44);
    st16(r + 12, 45);
    st16(r + 14, 45);
    st64(r + 24, 1);
    st64(r + 32, 1);
    st64(r + 40, e - cd);
    st64(r + 48, cd);
    st32(r + 56, 0x07064b50);
    st64(r + 64, e);
    st32(r + 72, 1);
    memcpy(r + 76, z.p + e, 22);
    tio_container_free(opened(&y, TIO_OPEN_STRICT));
    /* saturated end-record fields take the zip64 values */
    st32(r + 76 + 16, 0xFFFFFFFF);
    st16(r + 76 + 10, 0xFFFF);
    st16(r + 76 + 8, 0xFFFF);
    tio_container_free(opened(&y, TIO_OPEN_STRICT));
    st64(r + 24, 2);
    st64(r + 32, 2);
    refused(&y, TIO_E_CORRUPT, "cannot fit", "zip64 count");
    st64(r + 24, 1);
    st64(r + 32, 1);
    st16(r + 76 + 10, 2);
    refused(&y, TIO_E_CORRUPT, "the end record's entry count is 2, the zip64 end record's 1",
            "count disagrees");
    st16(r + 76 + 10, 0xFFFF);
    st64(r + 4, 45);
    refused(&y, TIO_E_CORRUPT, "the zip64 end record says it is 45 bytes", "record size");
    st64(r + 4, 44);
    st64(r + 64, e + 40);
    refused(&y, TIO_E_BOUNDS, "leaves no room", "locator offset");
    st64(r + 64, 4);
    refused(&y, TIO_E_MAGIC, "not a zip64 end record", "locator target");
    st64(r + 64, e);
    st32(r + 72, 2);
    refused(&y, TIO_E_UNSUPPORTED, "multi-disk", "disks");
    free(y.p);
    free(z.p);
}

static void test_methods_and_flags(void **state) {
    (void)state;
    zbuf z = one(NULL);
    size_t cd = cd_at(&z);
    z.p[8] = 12;
    z.p[cd + 10] = 12;
    refused(&z, TIO_E_UNSUPPORTED, "compression method 12 (bzip2)", "bzip2");
    z.p[8] = 93;
    z.p[cd + 10] = 93;
    refused(&z, TIO_E_UNSUPPORTED, "(Zstandard)", "zstd");
    z.p[8] = 0;
    z.p[cd + 10] = 0;
    z.p[6] = 1;
    z.p[cd + 8] = 1;
    refused(&z, TIO_E_UNSUPPORTED, "encrypted", "encrypted");
    z.p[6] = 0x40;
    z.p[cd + 8] = 0x40;
    refused(&z, TIO_E_UNSUPPORTED, "encrypted", "strong encryption");
    z.p[6] = 0x20;
    z.p[cd + 8] = 0x20;
    refused(&z, TIO_E_UNSUPPORTED, "patched", "patched");
    z.p[6] = 0;
    z.p[cd + 8] = 0;
    /* a data descriptor announced but missing: the central directory follows */
    z.p[6] = 8;
    z.p[cd + 8] = 8;
    refused(&z, TIO_E_CORRUPT, "data descriptor", "descriptor");
    free(z.p);
}

static void test_crc(void **state) {
    (void)state;
    /* stored: checked under TIO_OPEN_STRICT only (O(bytes), not O(members)) */
    zbuf z = one(NULL);
    size_t cd = cd_at(&z);
    z.p[14] ^= 0x10;
    z.p[cd + 16] ^= 0x10;
    tio_container_free(opened(&z, 0));
    refused_with(&z, TIO_OPEN_STRICT, NULL, TIO_E_INVALID, "CRC-32 of the stored data", "crc");
    free(z.p);
    /* deflated: always */
    zbuf d = one("compress=1");
    cd = cd_at(&d);
    d.p[14] ^= 0x10;
    d.p[cd + 16] ^= 0x10;
    refused(&d, TIO_E_CORRUPT, "CRC-32 of the inflated data", "deflated crc");
    free(d.p);
}

static void test_zip_bomb(void **state) {
    (void)state;
    size_t len;
    uint8_t *npy = npy_u1(1 << 20, &len); /* 1 MiB of zeros: about 1 KiB deflated */
    /* a declared size smaller than the stream: stops at the declared size */
    zbuf z = by_hand("x.npy", npy, len, 1, 200);
    refused(&z, TIO_E_LIMIT, "inflates past its declared 200 bytes", "lying size");
    free(z.p);
    /* a declared size larger: an inflated size that disagrees */
    z = by_hand("x.npy", npy, len, 1, len + 10);
    refused(&z, TIO_E_CORRUPT, "inflates to", "larger size");
    free(z.p);
    /* more than deflate can produce from the compressed size */
    z = by_hand("x.npy", npy, len, 1, 0xFFFFFFF0);
    refused(&z, TIO_E_CORRUPT, "more than deflate can produce", "ratio");
    free(z.p);
    /* within the ratio, but above max_dense_bytes */
    z = by_hand("x.npy", npy, len, 1, 0);
    tio_limits lim;
    memset(&lim, 0, sizeof lim);
    lim.max_dense_bytes = 1 << 19;
    refused_with(&z, 0, &lim, TIO_E_LIMIT, "max_dense_bytes", "limit");
    tio_container *c = opened(&z, TIO_OPEN_STRICT);
    assert_int_equal(tio_tensor_nbytes(tio_container_tensor(c, 0)), 1 << 20);
    tio_container_free(c);
    free(z.p);
    free(npy);
    /* the stream cut short, and garbage */
    npy = npy_u1(4096, &len);
    for (size_t k = 128; k < len; k++) npy[k] = (uint8_t)((k * 2654435761u) >> 13);
    z = by_hand("x.npy", npy, len, 1, 0);
    tio_container_free(opened(&z, TIO_OPEN_STRICT));
    size_t cd = cd_at(&z), clen = ld32(z.p + 18);
    memmove(z.p + 55 + clen / 2, z.p + 55 + clen, z.n - 55 - clen);
    z.n -= clen - clen / 2;
    st32(z.p + 18, (uint32_t)(clen / 2));
    st64(z.p + 35 + 12, clen / 2);
    cd -= clen - clen / 2;
    st32(z.p + cd + 20, (uint32_t)(clen / 2));
    st32(z.p + z.n - 22 + 16, (uint32_t)cd);
    refused(&z, TIO_E_TRUNCATED, "deflate stream is cut", "cut stream");
    memset(z.p + 55, 0xff, 8);
    refused(&z, TIO_E_CORRUPT, "not a valid deflate stream", "garbage");
    free(z.p);
    free(npy);
}

static void test_duplicates_and_overlap(void **state) {
    (void)state;
    const char *names[2] = {"a", "b"};
    zbuf z = archive(names, 2, 8, NULL);
    size_t cd = cd_at(&z);
    size_t second = ld32(z.p + cd + 51 + 42);
    /* rename b.npy to a.npy in its local header and central entry */
    z.p[second + 30] = 'a';
    z.p[cd + 51 + 46] = 'a';
    refused(&z, TIO_E_CORRUPT, "two members are named 'a.npy'", "duplicate");
    /* both entries pointing at the first member */
    memcpy(z.p + cd + 51, z.p + cd, 51);
    refused(&z, TIO_E_CORRUPT, "overlap", "overlap");
    free(z.p);
    /* in ascending order, the second starting inside the first's data:
     * refused before its local header is read */
    z = archive(names, 2, 8, NULL);
    cd = cd_at(&z);
    st32(z.p + cd + 51 + 42, ld32(z.p + cd + 42) + 40);
    refused(&z, TIO_E_CORRUPT, "overlap", "overlap, ascending");
    free(z.p);
}

/* Members whose central entries are not in file order are read all the
 * same, in central directory order (np.load's), through the other path. */
static void test_central_order(void **state) {
    (void)state;
    const char *names[3] = {"a", "b", "c"};
    zbuf z = archive(names, 3, 8, NULL);
    size_t cd = cd_at(&z);
    uint8_t tmp[51];
    memcpy(tmp, z.p + cd, 51); /* swap the entries of a and c (same size) */
    memcpy(z.p + cd, z.p + cd + 102, 51);
    memcpy(z.p + cd + 102, tmp, 51);
    tio_container *c = opened(&z, 0);
    assert_int_equal(tio_container_count(c), 3);
    assert_string_equal(tio_tensor_name(tio_container_tensor(c, 0)), "c");
    assert_string_equal(tio_tensor_name(tio_container_tensor(c, 1)), "b");
    assert_string_equal(tio_tensor_name(tio_container_tensor(c, 2)), "a");
    tio_container_free(c);
    free(z.p);
}

static void test_names_and_members(void **state) {
    (void)state;
    size_t len;
    uint8_t *npy = npy_u1(3, &len);
    zbuf z = by_hand("notes.txt", npy, len, 0, 0);
    tio_container *c = opened(&z, 0);
    assert_int_equal(tio_container_count(c), 0);
    assert_int_equal(tio_container_warning_count(c), 1);
    assert_non_null(strstr(tio_container_warning(c, 0)->message, "not a .npy file"));
    tio_container_free(c);
    refused_with(&z, TIO_OPEN_STRICT, NULL, TIO_E_INVALID, "skipped", "non-npy strict");
    free(z.p);
    z = by_hand("\xc3\xa4.npy", npy, len, 0, 0);
    c = opened(&z, 0);
    assert_string_equal(tio_tensor_name(tio_container_tensor(c, 0)), "\xc3\xa4");
    assert_int_equal(tio_container_warning_count(c), 1); /* no UTF-8 flag */
    tio_container_free(c);
    free(z.p);
    z = by_hand(".npy", npy, len, 0, 0); /* np.savez(**{"": a}): NpzFile's key "" */
    c = opened(&z, 0);
    assert_string_equal(tio_tensor_name(tio_container_tensor(c, 0)), "");
    tio_container_free(c);
    free(z.p);
    z = by_hand("x.npy", npy, len, 0, 0);
    z.p[30 + 1] = 0;
    z.p[cd_at(&z) + 46 + 1] = 0;
    refused(&z, TIO_E_CORRUPT, "holding a NUL byte", "NUL in name");
    free(z.p);
    free(npy);
}

static void test_inner_npy(void **state) {
    (void)state;
    size_t len;
    uint8_t *npy = npy_u1(5, &len);
    npy[3] = 'X';
    zbuf z = by_hand("bad.npy", npy, len, 0, 0);
    refused(&z, TIO_E_MAGIC, "npz: offset 57: member 'bad.npy': the file does not start",
            "stored magic");
    free(z.p);
    z = by_hand("bad.npy", npy, len, 1, 0);
    refused(&z, TIO_E_MAGIC, "member 'bad.npy' (deflated; at byte 0 of its .npy)",
            "deflated magic");
    free(z.p);
    npy[3] = 'M';
    memcpy(npy + 11, "shape", 5); /* 'descr' -> 'shape': a key twice */
    z = by_hand("k.npy", npy, len, 1, 0);
    refused(&z, TIO_E_CORRUPT, "member 'k.npy' (deflated; at byte", "deflated header");
    free(z.p);
    free(npy);
    /* findings inside a member name it once, at an offset inside the archive */
    npy = npy_u1(5, &len);
    uint8_t *longer = calloc(1, len + 1);
    assert_non_null(longer);
    memcpy(longer, npy, len);
    for (int deflated = 0; deflated < 2; deflated++) {
        z = by_hand("t.npy", longer, len + 1, deflated, 0);
        tio_container *c = opened(&z, 0);
        assert_int_equal(tio_container_warning_count(c), 1);
        const tio_error *w = tio_container_warning(c, 0);
        const char *want = deflated ? "member 't.npy' (deflated; at byte 133 of its .npy): 1 "
                                      "trailing bytes"
                                    : "npz: offset 188: member 't.npy': 1 trailing bytes";
        if (!strstr(w->message, want) || w->offset < 0 || (size_t)w->offset > z.n) {
            fprintf(stderr, "%s (%lld)\n", w->message, (long long)w->offset);
            fail();
        }
        tio_container_free(c);
        refused_with(&z, TIO_OPEN_STRICT, NULL, TIO_E_INVALID, want, "strict finding");
        free(z.p);
    }
    free(longer);
    z = by_hand("short.npy", npy, len - 1, 0, 0);
    refused(&z, TIO_E_TRUNCATED, "member 'short.npy': the data of shape [5]", "short data");
    free(z.p);
    free(npy);
}

/* ----------------------------------------------------------------- writing */

/* A write of 32 MiB or more takes the stored members' CRCs on a thread of
 * its own: every CRC right (a strict open checks each against its bytes),
 * the same bytes as a write below the threshold would give (the converted
 * member, bfloat16 widened, beside them takes the CRC in the writer's pass). */
static void test_write_crc_thread(void **state) {
    (void)state;
    size_t big = 17u << 20;
    uint8_t *data = malloc(big);
    assert_non_null(data);
    for (size_t k = 0; k < big; k++) data[k] = (uint8_t)(k * 131 + (k >> 13));
    tio_container *c = tio_container_new();
    tio_error e;
    int64_t s1[1] = {(int64_t)(big / 4)}, s2[1] = {3}, s3[1] = {(int64_t)(big - 2) / 2};
    uint16_t half[3] = {0x3c00, 0x4000, 0xc000};
    tio_tensor_desc d1 = {"a", TIO_FLOAT32, 1, s1, TIO_LAYOUT_DENSE, data, big, 0, NULL};
    tio_tensor_desc d2 = {"h", TIO_BFLOAT16, 1, s2, TIO_LAYOUT_DENSE, half, 6, 0, NULL};
    tio_tensor_desc d3 = {"b", TIO_UINT16, 1, s3, TIO_LAYOUT_DENSE, data + 1, big - 2, 0, NULL};
    ASSERT_OK(tio_container_add(c, &d1, TIO_ADD_BORROW, NULL, &e), e, "add a");
    ASSERT_OK(tio_container_add(c, &d2, 0, NULL, &e), e, "add h");
    ASSERT_OK(tio_container_add(c, &d3, TIO_ADD_BORROW, NULL, &e), e, "add b");
    tio_save_options so = {.format = "npz", .flags = TIO_SAVE_WIDEN};
    void *out = NULL;
    size_t olen = 0;
    ASSERT_OK(tio_save_memory(c, &so, &out, &olen, &e), e, "save");
    tio_open_options oo = {.format = "npz", .flags = TIO_OPEN_STRICT};
    tio_container *back = NULL;
    ASSERT_OK(tio_open_memory(out, olen, &oo, &back, &e), e, "strict open");
    assert_int_equal(tio_container_count(back), 3);
    assert_memory_equal(tio_tensor_bytes(tio_container_find(back, "b")), data + 1, big - 2);
    /* each member's CRC as zlib computes it over its stored bytes */
    size_t cd = cd_at(&(zbuf){out, olen});
    for (int k = 0; k < 3; k++) {
        const uint8_t *ce = (const uint8_t *)out + cd;
        uint64_t local = ld32(ce + 42), size = ld32(ce + 24);
        size_t nlen = ld16(ce + 28), xlen = ld16(ce + 30);
        if (size == 0xFFFFFFFFu || local == 0xFFFFFFFFu) fail_msg("zip64 sizes in this test");
        const uint8_t *lh = (const uint8_t *)out + local;
        const uint8_t *at = lh + 30 + ld16(lh + 26) + ld16(lh + 28);
        uint32_t want = (uint32_t)crc32(0, at, (uInt)size);
        assert_int_equal(ld32(ce + 16), want);
        assert_int_equal(ld32(lh + 14), want);
        cd += 46 + nlen + xlen + ld16(ce + 32);
    }
    tio_container_free(back);
    tio_free(out);
    tio_container_free(c);
    free(data);
}

static void test_write(void **state) {
    (void)state;
    /* the layout np.savez writes (zipfile.py, force_zip64): checked field by field */
    zbuf z = one(NULL);
    size_t cd = cd_at(&z);
    assert_int_equal(ld32(z.p), 0x04034b50);
    assert_int_equal(ld16(z.p + 4), 20);
    assert_int_equal(ld16(z.p + 10), 0);
    assert_int_equal(ld16(z.p + 12), 0x21);
    assert_int_equal(ld16(z.p + 28), 20);
    assert_memory_equal(z.p + 30, "x.npy\x01\x00\x10\x00", 9);
    assert_memory_equal(z.p + 55, "\x93NUMPY\x01\x00", 8);
    assert_int_equal(ld16(z.p + cd + 4), 0x0314);
    assert_int_equal(ld16(z.p + cd + 30), 0);
    assert_int_equal(ld32(z.p + cd + 38), 0600u << 16);
    assert_int_equal(cd, 55 + 128 + 16);
    assert_int_equal(z.n, cd + 51 + 22);
    free(z.p);

    /* names must be unique; arr_<i> is taken by index as np.savez does */
    const char *clash[2] = {"arr_1", NULL};
    tio_container *c = tio_container_new();
    uint8_t v = 1;
    tio_error e;
    for (int i = 0; i < 2; i++) {
        tio_tensor_desc d = {clash[i], TIO_UINT8, 0, NULL, TIO_LAYOUT_DENSE, &v, 1, 0, NULL};
        ASSERT_OK(tio_container_add(c, &d, 0, NULL, &e), e, "add");
    }
    tio_save_options so = {.format = "npz"};
    void *out = NULL;
    size_t olen;
    assert_int_equal(tio_save_memory(c, &so, &out, &olen, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "'arr_1.npy'"));
    so.options = "compress=2";
    assert_int_equal(tio_save_memory(c, &so, &out, &olen, &e), TIO_E_ARGUMENT);
    assert_non_null(strstr(e.message, "compress=2"));
    so.options = "level=1";
    assert_int_equal(tio_save_memory(c, &so, &out, &olen, &e), TIO_E_ARGUMENT);
    tio_container_free(c);

    /* bfloat16 needs --widen; a round trip through every writer path */
    c = tio_container_new();
    uint16_t bf[2] = {0x3f80, 0x4000};
    int64_t two[1] = {2};
    tio_tensor_desc d = {"w", TIO_BFLOAT16, 1, two, TIO_LAYOUT_DENSE, bf, 4, 0, NULL};
    ASSERT_OK(tio_container_add(c, &d, 0, NULL, &e), e, "add");
    so.options = "compress=1";
    assert_int_equal(tio_save_memory(c, &so, &out, &olen, &e), TIO_E_LOSSY);
    so.flags = TIO_SAVE_WIDEN;
    ASSERT_OK(tio_save_memory(c, &so, &out, &olen, &e), e, "widen");
    zbuf w = {out, olen};
    tio_container *back = opened(&w, TIO_OPEN_STRICT);
    const float *f = tio_tensor_data(tio_container_tensor(back, 0));
    assert_true(f[0] == 1.0f && f[1] == 2.0f);
    tio_container_free(back);
    tio_free(out);
    tio_container_free(c);
}

static void test_registry(void **state) {
    (void)state;
    assert_string_equal(tio_format_for_path("a/b.npz"), "npz");
    zbuf z = one(NULL);
    tio_open_options o = {0};
    tio_container *c = NULL;
    tio_error e;
    ASSERT_OK(tio_open_memory(z.p, z.n, &o, &c, &e), e, "probe");
    assert_string_equal(tio_container_format(c), "npz");
    tio_container_free(c);
    free(z.p);
}

/* np.savez leaves float32 data at odd offsets: tio_tensor_bytes is the view
 * where it lies, tio_tensor_data an aligned copy made on first use (once,
 * whichever of several threads asks first), tio_tensor_materialize keeps
 * it; nothing is copied at open. */
typedef struct lazy_arg {
    const tio_tensor *t;
    const void *got;
} lazy_arg;

static void *lazy_data(void *p) {
    lazy_arg *a = p;
    a->got = tio_tensor_data(a->t);
    return NULL;
}

static void test_unaligned_lazy(void **state) {
    (void)state;
    float v[33];
    for (int i = 0; i < 33; i++) v[i] = (float)i * 0.5f;
    int64_t shape[1] = {33};
    tio_container *src = tio_container_new();
    assert_non_null(src);
    tio_tensor_desc d = {0};
    d.name = "a";
    d.dtype = TIO_FLOAT32;
    d.rank = 1;
    d.shape = shape;
    d.data = v;
    d.nbytes = sizeof v;
    tio_error e;
    assert_int_equal(tio_container_add(src, &d, 0, NULL, &e), TIO_OK);
    tio_save_options so = {0};
    so.format = "npz";
    void *buf = NULL;
    size_t n = 0;
    assert_int_equal(tio_save_memory(src, &so, &buf, &n, &e), TIO_OK);
    tio_container_free(src);
    for (int round = 0; round < 2; round++) {
        tio_open_options o = {0};
        o.format = "npz";
        tio_container *c = NULL;
        assert_int_equal(tio_open_memory(buf, n, &o, &c, &e), TIO_OK);
        const tio_tensor *t = tio_container_tensor(c, 0);
        const uint8_t *raw = tio_tensor_bytes(t);
        assert_true(raw > (const uint8_t *)buf && raw + sizeof v <= (const uint8_t *)buf + n);
        assert_true((uintptr_t)raw % 4 != 0); /* the layout np.savez writes */
        assert_true(tio_tensor_is_aligned(t));
        const void *a = NULL;
        if (round == 0) {
            a = tio_tensor_data(t);
            assert_ptr_equal(tio_tensor_data(t), a);
        } else { /* eight threads at once: one copy, the same pointer for all */
            pthread_t th[8];
            lazy_arg args[8];
            for (int k = 0; k < 8; k++) {
                args[k].t = t;
                assert_int_equal(pthread_create(&th[k], NULL, lazy_data, &args[k]), 0);
            }
            for (int k = 0; k < 8; k++) assert_int_equal(pthread_join(th[k], NULL), 0);
            a = args[0].got;
            for (int k = 1; k < 8; k++) assert_ptr_equal(args[k].got, a);
        }
        assert_true((uintptr_t)a % 4 == 0);
        assert_false((const uint8_t *)a >= (const uint8_t *)buf &&
                     (const uint8_t *)a < (const uint8_t *)buf + n);
        assert_memory_equal(a, v, sizeof v);
        assert_memory_equal(raw, v, sizeof v);
        if (round == 1) { /* materialize takes the copy over */
            assert_int_equal(tio_tensor_materialize(tio_container_tensor(c, 0), &e), TIO_OK);
            assert_ptr_equal(tio_tensor_data(t), a);
            assert_ptr_equal(tio_tensor_bytes(t), a);
        }
        tio_container_free(c);
    }
    tio_free(buf);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_views),
        cmocka_unit_test(test_unaligned_lazy),
        cmocka_unit_test(test_truncated_and_signatures),
        cmocka_unit_test(test_end_record_twice_and_comment),
        cmocka_unit_test(test_local_central_mismatch),
        cmocka_unit_test(test_sizes_past_end),
        cmocka_unit_test(test_zip64),
        cmocka_unit_test(test_methods_and_flags),
        cmocka_unit_test(test_crc),
        cmocka_unit_test(test_zip_bomb),
        cmocka_unit_test(test_duplicates_and_overlap),
        cmocka_unit_test(test_central_order),
        cmocka_unit_test(test_names_and_members),
        cmocka_unit_test(test_inner_npy),
        cmocka_unit_test(test_write),
        cmocka_unit_test(test_write_crc_thread),
        cmocka_unit_test(test_registry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
