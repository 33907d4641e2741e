/* WebDataset tar shards: ustar/GNU/pax headers, grouping, lifetimes, every
 * class of malformed header, truncation and bit-flip sweeps. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensio.h"
#include "tvec.h"

/* ------------------------------------------------------ a tar builder */

typedef struct tb {
    uint8_t *p;
    size_t n, cap;
} tb;

static uint8_t *tb_grow(tb *b, size_t k) {
    if (b->n + k > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + k) cap *= 2;
        b->p = realloc(b->p, cap);
        assert_non_null(b->p);
        b->cap = cap;
    }
    uint8_t *at = b->p + b->n;
    memset(at, 0, k);
    b->n += k;
    return at;
}

static void tb_fix_sum(tb *b, size_t h) {
    uint8_t *x = b->p + h;
    memset(x + 148, ' ', 8);
    unsigned sum = 0;
    for (size_t i = 0; i < 512; i++) sum += x[i];
    snprintf((char *)x + 148, 8, "%06o", sum);
    x[155] = ' ';
}

enum { USTAR = 0, GNU = 1 };

/* A header; returns its offset. */
static size_t tb_header(tb *b, const char *name, char type, uint64_t size, int gnu) {
    size_t h = b->n;
    uint8_t *x = tb_grow(b, 512);
    strncpy((char *)x, name, 100);
    memcpy(x + 100, "0000644", 7);
    memcpy(x + 108, "0000000", 7);
    memcpy(x + 116, "0000000", 7);
    snprintf((char *)x + 124, 12, "%011llo", (unsigned long long)size);
    memcpy(x + 136, "00000000000", 11);
    x[156] = (uint8_t)type;
    if (gnu) memcpy(x + 257, "ustar  ", 8);
    else memcpy(x + 257, "ustar\0" "00", 8);
    tb_fix_sum(b, h);
    return h;
}

static void tb_data(tb *b, const void *d, size_t n) {
    uint8_t *x = tb_grow(b, (n + 511) / 512 * 512);
    if (n) memcpy(x, d, n);
}

static void tb_file(tb *b, const char *name, const void *d, size_t n) {
    tb_header(b, name, '0', n, USTAR);
    tb_data(b, d, n);
}

static void tb_end(tb *b) { tb_grow(b, 1024); }

static void tb_pax(tb *b, char type, const char *records) {
    tb_header(b, "PaxHeader", type, strlen(records), USTAR);
    tb_data(b, records, strlen(records));
}

/* --------------------------------------------------------------- helpers */

static uint8_t *ten;
static size_t ten_len;

static int setup(void **state) {
    (void)state;
    ten = tvec_load("tenbin/dtype_float32.ten", &ten_len);
    return ten ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    free(ten);
    return 0;
}

/* Opens b's bytes (an exact-size copy, so that ASan sees a read past them). */
static int open_copy(const tb *b, const tio_limits *lim, tio_shard **s, uint8_t **copy,
                     tio_error *err) {
    *copy = malloc(b->n ? b->n : 1);
    assert_non_null(*copy);
    if (b->n) memcpy(*copy, b->p, b->n);
    return tio_shard_open_memory(*copy, b->n, lim, s, err);
}

static void expect_fail(const tb *b, const tio_limits *lim, int code, const char *needle) {
    tio_shard *s = (tio_shard *)1;
    uint8_t *copy;
    tio_error err;
    int rc = open_copy(b, lim, &s, &copy, &err);
    if (rc != code) fprintf(stderr, "got %s: %s\n", tio_status_name(rc), err.message);
    assert_int_equal(rc, code);
    assert_null(s);
    assert_string_equal(err.format, "tar");
    assert_true(strncmp(err.message, "tar: ", 5) == 0);
    assert_true(err.offset < (int64_t)b->n + 1);
    if (needle && !strstr(err.message, needle)) {
        fprintf(stderr, "message \"%s\" lacks \"%s\"\n", err.message, needle);
        fail();
    }
    free(copy);
}

/* ----------------------------------------------------------------- tests */

static void test_samples(void **state) {
    (void)state;
    tb b = {0};
    tb_header(&b, "d/", '5', 0, USTAR);
    tb_file(&b, "d/000.ten", ten, ten_len);
    tb_file(&b, "d/000.cls", "7\n", 2);
    tb_header(&b, "d/000.lnk", '2', 0, USTAR); /* a symlink: not a member */
    tb_file(&b, "d/README", "x", 1);           /* no extension: no sample */
    tb_file(&b, "d/000.seg.ten", ten, ten_len);
    tb_file(&b, "d/001.ten", ten, ten_len);
    tb_file(&b, "d/001.json", "{}", 2);
    tb_end(&b);
    tio_shard *s;
    uint8_t *copy;
    tio_error err;
    assert_int_equal(open_copy(&b, NULL, &s, &copy, &err), TIO_OK);
    assert_int_equal(tio_shard_member_count(s), 6);
    assert_int_equal(tio_shard_sample_count(s), 2);
    const tio_shard_sample *s0 = tio_shard_sample_at(s, 0), *s1 = tio_shard_sample_at(s, 1);
    assert_string_equal(s0->key, "d/000");
    assert_int_equal(s0->count, 3);
    assert_int_equal(s0->duplicate_of, TIO_SHARD_NONE);
    assert_string_equal(s1->key, "d/001");
    assert_int_equal(s1->count, 2);
    assert_null(tio_shard_sample_at(s, 2));
    assert_int_equal(tio_shard_sample_member(s, 0, 2), 3);
    assert_int_equal(tio_shard_sample_member(s, 0, 3), TIO_SHARD_NONE);
    const tio_shard_member *m = tio_shard_member_at(s, 3);
    assert_string_equal(m->name, "d/000.seg.ten");
    assert_string_equal(m->key, "d/000");
    assert_string_equal(m->ext, "seg.ten");
    assert_int_equal(m->sample, 0);
    const tio_shard_member *r = tio_shard_member_at(s, 2);
    assert_string_equal(r->name, "d/README");
    assert_string_equal(r->ext, "");
    assert_int_equal(r->sample, TIO_SHARD_NONE);
    for (size_t i = 0; i < 6; i++) {
        const tio_shard_member *x = tio_shard_member_at(s, i);
        assert_int_equal(x->offset % 512, 0);
        assert_ptr_equal(x->data, copy + x->offset);
        assert_false(x->duplicate);
    }
    assert_memory_equal(tio_shard_member_at(s, 1)->data, "7\n", 2);
    assert_string_equal(tio_shard_member_format(s, 0), "tenbin");
    assert_null(tio_shard_member_format(s, 1));
    assert_int_equal(tio_shard_find(s, "d/001.json"), 5);
    assert_int_equal(tio_shard_find(s, "d/002.json"), TIO_SHARD_NONE);
    /* a member container: a view into the shard, alive after tio_shard_free */
    tio_container *c;
    assert_int_equal(tio_shard_open_member(s, 4, NULL, &c, &err), TIO_OK);
    assert_true(tio_container_count(c) > 0);
    const tio_tensor *t = tio_container_tensor(c, 0);
    const uint8_t *d = tio_tensor_data(t);
    assert_true(d >= copy + tio_shard_member_at(s, 4)->offset &&
                d < copy + tio_shard_member_at(s, 4)->offset + ten_len);
    tio_container *direct;
    assert_int_equal(tio_open_memory(ten, ten_len, NULL, &direct, &err), TIO_OK);
    tio_shard_free(s);
    assert_int_equal(tio_container_count(c), tio_container_count(direct));
    assert_memory_equal(d, tio_tensor_data(tio_container_tensor(direct, 0)),
                        tio_tensor_nbytes(t));
    tio_container_free(direct);
    tio_container_free(c);
    free(copy); /* the last holder of the bytes is gone */
    /* a member that names no format */
    assert_int_equal(open_copy(&b, NULL, &s, &copy, &err), TIO_OK);
    c = (tio_container *)1;
    assert_int_equal(tio_shard_open_member(s, 1, NULL, &c, &err), TIO_E_FORMAT);
    assert_null(c);
    assert_int_equal(tio_shard_open_member(s, 99, NULL, &c, &err), TIO_E_ARGUMENT);
    tio_shard_free(s);
    free(copy);
    free(b.p);
}

static void test_duplicates(void **state) {
    (void)state;
    tb b = {0};
    tb_file(&b, "a.ten", ten, ten_len);
    tb_file(&b, "a.TEN", ten, ten_len); /* same extension, case aside */
    tb_file(&b, "b.cls", "1", 1);
    tb_file(&b, "a.cls", "2", 1); /* key a again, after b */
    tb_file(&b, "b.cls", "3", 1); /* and b */
    tb_end(&b);
    tio_shard *s;
    uint8_t *copy;
    tio_error err;
    assert_int_equal(open_copy(&b, NULL, &s, &copy, &err), TIO_OK);
    assert_int_equal(tio_shard_sample_count(s), 4);
    assert_int_equal(tio_shard_sample_at(s, 0)->duplicate_of, TIO_SHARD_NONE);
    assert_int_equal(tio_shard_sample_at(s, 1)->duplicate_of, TIO_SHARD_NONE);
    assert_int_equal(tio_shard_sample_at(s, 2)->duplicate_of, 0);
    assert_int_equal(tio_shard_sample_at(s, 3)->duplicate_of, 1);
    assert_false(tio_shard_member_at(s, 0)->duplicate);
    assert_true(tio_shard_member_at(s, 1)->duplicate);
    assert_false(tio_shard_member_at(s, 3)->duplicate);
    tio_shard_free(s);
    free(copy);
    free(b.p);
}

/* tio_shard_find over many members (by an index of their paths past 8):
 * every path found where the search in order finds it, the first of a path
 * that appears twice, none for a path not there; and over a few. */
static void test_find_many(void **state) {
    (void)state;
    for (size_t n = 5; n <= 3000; n += 2995) {
        tb b = {0};
        char name[32];
        for (size_t i = 0; i < n; i++) {
            /* every 7th path repeats the one before it */
            snprintf(name, sizeof name, "s%05zu.cls", i % 7 == 6 ? i - 1 : i);
            tb_file(&b, name, "1", 1);
        }
        tb_end(&b);
        tio_shard *s;
        uint8_t *copy;
        tio_error err;
        assert_int_equal(open_copy(&b, NULL, &s, &copy, &err), TIO_OK);
        assert_int_equal(tio_shard_member_count(s), n);
        for (size_t i = 0; i <= n; i++) {
            snprintf(name, sizeof name, "s%05zu.cls", i);
            size_t want = TIO_SHARD_NONE;
            for (size_t k = 0; k < n && want == TIO_SHARD_NONE; k++)
                if (strcmp(tio_shard_member_at(s, k)->name, name) == 0) want = k;
            assert_int_equal(tio_shard_find(s, name), want);
        }
        if (n > 7) {
            assert_int_equal(tio_shard_find(s, "s00005.cls"), 5); /* and 6 */
            assert_int_equal(tio_shard_find(s, "s00006.cls"), TIO_SHARD_NONE);
        }
        assert_int_equal(tio_shard_find(s, ""), TIO_SHARD_NONE);
        assert_int_equal(tio_shard_find(s, NULL), TIO_SHARD_NONE);
        tio_shard_free(s);
        free(copy);
        free(b.p);
    }
}

/* Keys as WebDataset's pattern splits them, corner cases included. */
static void test_split(void **state) {
    (void)state;
    static const char *const cases[][3] = {
        /* name, key, extension (key NULL: no sample) */
        {"a.b/c.d.e", "a.b/c", "d.e"}, {"x/.h", "x/", "h"},   {"a.b/.h", NULL, ""},
        {".h", NULL, ""},              {"c.", "c", ""},        {"__m.x__", NULL, ""},
        {"d/__m.x__", "d/__m", "x__"}, {"d//.h", "d//", "h"}, {"/.h", "/", "h"},
    };
    size_t n = sizeof cases / sizeof cases[0];
    tb b = {0};
    for (size_t i = 0; i < n; i++) tb_file(&b, cases[i][0], "1", 1);
    tb_end(&b);
    tio_shard *s;
    uint8_t *copy;
    tio_error err;
    assert_int_equal(open_copy(&b, NULL, &s, &copy, &err), TIO_OK);
    assert_int_equal(tio_shard_member_count(s), n);
    for (size_t i = 0; i < n; i++) {
        const tio_shard_member *m = tio_shard_member_at(s, i);
        assert_string_equal(m->name, cases[i][0]);
        assert_string_equal(m->key, cases[i][1] ? cases[i][1] : "");
        assert_string_equal(m->ext, cases[i][2]);
        assert_true((m->sample == TIO_SHARD_NONE) == (cases[i][1] == NULL));
    }
    tio_shard_free(s);
    free(copy);
    free(b.p);
}

static void test_names(void **state) {
    (void)state;
    tb b = {0};
    /* ustar prefix */
    size_t h = tb_header(&b, "000.cls", '0', 1, USTAR);
    memcpy(b.p + h + 345, "some/dir", 8);
    tb_fix_sum(&b, h);
    tb_data(&b, "1", 1);
    /* GNU long name */
    char longname[300];
    memset(longname, 'x', sizeof longname);
    memcpy(longname + 280, "/000.cls", 9);
    tb_header(&b, "././@LongLink", 'L', strlen(longname) + 1, GNU);
    tb_data(&b, longname, strlen(longname) + 1);
    tb_header(&b, "truncated-name", '0', 1, GNU);
    tb_data(&b, "2", 1);
    /* pax path and size; a global header ignored */
    tb_pax(&b, 'g', "19 comment=ignored\n");
    tb_pax(&b, 'x', "20 path=p/0001.json\n9 size=2\n");
    tb_header(&b, "short", '0', 0, USTAR); /* header size 0, pax says 2 */
    tb_data(&b, "{}", 2);
    tb_end(&b);
    tio_shard *s;
    uint8_t *copy;
    tio_error err;
    int rc = open_copy(&b, NULL, &s, &copy, &err);
    if (rc) fprintf(stderr, "%s\n", err.message);
    assert_int_equal(rc, TIO_OK);
    assert_int_equal(tio_shard_member_count(s), 3);
    assert_string_equal(tio_shard_member_at(s, 0)->name, "some/dir/000.cls");
    assert_string_equal(tio_shard_member_at(s, 1)->name, longname);
    assert_memory_equal(tio_shard_member_at(s, 1)->data, "2", 1);
    const tio_shard_member *p = tio_shard_member_at(s, 2);
    assert_string_equal(p->name, "p/0001.json");
    assert_int_equal(p->size, 2);
    assert_memory_equal(p->data, "{}", 2);
    tio_shard_free(s);
    free(copy);
    /* a long name over max_name_bytes, and a prefixed one */
    tio_limits lim = {.max_name_bytes = 100};
    expect_fail(&b, &lim, TIO_E_LIMIT, "max_name_bytes");
    lim.max_name_bytes = 12;
    expect_fail(&b, &lim, TIO_E_LIMIT, "max_name_bytes");
    free(b.p);
    /* an 'x' path kept across a 'g' header; a pax size on a directory skips its data */
    memset(&b, 0, sizeof b);
    tb_pax(&b, 'x', "9 size=3\n");
    tb_header(&b, "dir/", '5', 0, USTAR);
    tb_data(&b, "abc", 3);
    tb_pax(&b, 'x', "15 path=k.json\n");
    tb_pax(&b, 'g', "19 comment=ignored\n");
    tb_file(&b, "other", "{}", 2);
    tb_end(&b);
    rc = open_copy(&b, NULL, &s, &copy, &err);
    if (rc) fprintf(stderr, "%s\n", err.message);
    assert_int_equal(rc, TIO_OK);
    assert_int_equal(tio_shard_member_count(s), 1);
    assert_string_equal(tio_shard_member_at(s, 0)->name, "k.json");
    assert_memory_equal(tio_shard_member_at(s, 0)->data, "{}", 2);
    tio_shard_free(s);
    free(copy);
    free(b.p);
    /* empty names: in the header, in a pax path */
    memset(&b, 0, sizeof b);
    tb_file(&b, "", "1", 1);
    tb_end(&b);
    expect_fail(&b, NULL, TIO_E_CORRUPT, "empty name");
    free(b.p);
    memset(&b, 0, sizeof b);
    tb_pax(&b, 'x', "8 path=\n");
    tb_file(&b, "a.cls", "1", 1);
    tb_end(&b);
    expect_fail(&b, NULL, TIO_E_CORRUPT, "empty name");
    free(b.p);
}

static void one_member(tb *b) {
    memset(b, 0, sizeof *b);
    tb_file(b, "000.cls", "12345", 5);
}

/* One GNU record claiming `size` bytes (holding "abc"), then the end. */
static void record_case(const char *name, char type, uint64_t size, int code,
                        const char *needle) {
    tb b = {0};
    tb_header(&b, name, type, size, GNU);
    if (size) tb_data(&b, "abc", 4);
    tb_end(&b);
    expect_fail(&b, NULL, code, needle);
    free(b.p);
}

static void test_bad_headers(void **state) {
    (void)state;
    tb b;
    /* bad checksum */
    one_member(&b);
    tb_end(&b);
    b.p[148] ^= 1;
    expect_fail(&b, NULL, TIO_E_CORRUPT, "checksum");
    free(b.p);
    /* non-octal size */
    one_member(&b);
    tb_end(&b);
    b.p[124 + 5] = '9';
    tb_fix_sum(&b, 0);
    expect_fail(&b, NULL, TIO_E_CORRUPT, "octal");
    free(b.p);
    /* size past the end */
    one_member(&b);
    tb_end(&b);
    snprintf((char *)b.p + 124, 12, "%011o", 4096u);
    tb_fix_sum(&b, 0);
    expect_fail(&b, NULL, TIO_E_BOUNDS, "past the end");
    free(b.p);
    /* negative base-256 size */
    one_member(&b);
    tb_end(&b);
    memset(b.p + 124, 0xff, 12);
    tb_fix_sum(&b, 0);
    expect_fail(&b, NULL, TIO_E_CORRUPT, "negative");
    free(b.p);
    /* base-256 size over 63 bits */
    one_member(&b);
    tb_end(&b);
    b.p[124] = 0x80;
    memset(b.p + 125, 0xff, 11);
    tb_fix_sum(&b, 0);
    expect_fail(&b, NULL, TIO_E_OVERFLOW, "63 bits");
    /* huge but representable: past the end */
    memset(b.p + 125, 0, 3);
    b.p[128] = 0x7f; /* 2^63 - 1 */
    tb_fix_sum(&b, 0);
    expect_fail(&b, NULL, TIO_E_BOUNDS, "past the end");
    /* a valid base-256 size reads as the octal one */
    memset(b.p + 124, 0, 12);
    b.p[124] = 0x80;
    b.p[135] = 5;
    tb_fix_sum(&b, 0);
    tio_shard *s;
    uint8_t *copy;
    tio_error err;
    assert_int_equal(open_copy(&b, NULL, &s, &copy, &err), TIO_OK);
    assert_int_equal(tio_shard_member_at(s, 0)->size, 5);
    tio_shard_free(s);
    free(copy);
    free(b.p);
    /* bad magic */
    one_member(&b);
    tb_end(&b);
    memcpy(b.p + 257, "uxtar", 5);
    tb_fix_sum(&b, 0);
    expect_fail(&b, NULL, TIO_E_MAGIC, "ustar");
    free(b.p);
    /* missing end blocks, and a partial header */
    one_member(&b);
    expect_fail(&b, NULL, TIO_E_TRUNCATED, "end-of-archive");
    tb_grow(&b, 100);
    expect_fail(&b, NULL, TIO_E_TRUNCATED, NULL);
    free(b.p);
    /* a long-name record past the end; one followed by the end; GNU sparse */
    record_case("././@LongLink", 'L', 100000, TIO_E_BOUNDS, "past the end");
    record_case("././@LongLink", 'L', 4, TIO_E_CORRUPT, "extended header");
    record_case("000.ten", 'S', 0, TIO_E_UNSUPPORTED, "sparse");
    /* compressed streams that are not (magic, then garbage; cut short) */
    memset(&b, 0, sizeof b);
    tb_grow(&b, 20);
    b.p[0] = 0x1f;
    b.p[1] = 0x8b;
    expect_fail(&b, NULL, TIO_E_CORRUPT, "gzip stream");
    b.p[2] = 8; /* deflate, no flags: a header that then ends */
    expect_fail(&b, NULL, TIO_E_CORRUPT, "gzip stream");
    memcpy(b.p, "BZh9", 4);
    expect_fail(&b, NULL, TIO_E_CORRUPT, "bzip2 stream");
    memcpy(b.p, "\xfd" "7zXZ\0", 6);
    expect_fail(&b, NULL, TIO_E_CORRUPT, "xz stream");
    memcpy(b.p, "\x28\xb5\x2f\xfd", 4);
    expect_fail(&b, NULL, TIO_E_CORRUPT, "zstd stream");
    free(b.p);
    /* empty */
    memset(&b, 0, sizeof b);
    expect_fail(&b, NULL, TIO_E_TRUNCATED, NULL);
}

static void pax_case(const char *records, int code, const char *needle) {
    tb b = {0};
    tb_pax(&b, 'x', records);
    tb_file(&b, "000.cls", "1", 1);
    tb_end(&b);
    expect_fail(&b, NULL, code, needle);
    free(b.p);
}

static void test_bad_pax(void **state) {
    (void)state;
    pax_case("99 path=a.cls\n", TIO_E_BOUNDS, "pax record length");
    pax_case("2 path=a.cls\n", TIO_E_BOUNDS, "pax record length");
    pax_case("0 x\n", TIO_E_BOUNDS, "pax record length");
    pax_case("abc\n", TIO_E_CORRUPT, "LENGTH");
    pax_case("14 path=a.cls!\n", TIO_E_CORRUPT, "newline");
    pax_case("11 noequal\n", TIO_E_CORRUPT, "KEY=VALUE");
    pax_case("9 size=x\n", TIO_E_CORRUPT, "decimal");
    pax_case("29 size=99999999999999999999\n", TIO_E_CORRUPT, "19");
    pax_case("28 size=9999999999999999999\n", TIO_E_OVERFLOW, "63 bits");
    pax_case("13 size=4096\n", TIO_E_BOUNDS, "past the end");
    pax_case("99999999999999999999999 x\n", TIO_E_OVERFLOW, "overflows");
    pax_case("22 GNU.sparse.major=1\n", TIO_E_UNSUPPORTED, "sparse");
    /* a pax header over max_header_bytes */
    tb b = {0};
    tb_pax(&b, 'x', "20 path=p/0001.json\n");
    tb_file(&b, "000.cls", "1", 1);
    tb_end(&b);
    tio_limits lim = {.max_header_bytes = 8};
    expect_fail(&b, &lim, TIO_E_LIMIT, "max_header_bytes");
    free(b.p);
}

static void test_member_limit(void **state) {
    (void)state;
    tb b = {0};
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "%03d.cls", i);
        tb_file(&b, name, "1", 1);
    }
    tb_end(&b);
    tio_limits lim = {.max_tensors = 2};
    expect_fail(&b, &lim, TIO_E_LIMIT, "max_tensors");
    lim.max_tensors = 3;
    tio_shard *s;
    uint8_t *copy;
    tio_error err;
    assert_int_equal(open_copy(&b, &lim, &s, &copy, &err), TIO_OK);
    tio_shard_free(s);
    free(copy);
    free(b.p);
}

/* Whatever opens is read: every member's bytes, every tensor member opened. */
static volatile uint8_t sink;

static void touch(tio_shard *s) {
    for (size_t i = 0; i < tio_shard_member_count(s); i++) {
        const tio_shard_member *m = tio_shard_member_at(s, i);
        const uint8_t *d = m->data;
        for (uint64_t k = 0; k < m->size; k++) sink ^= d[k];
        sink ^= (uint8_t)strlen(m->key) ^ (uint8_t)strlen(m->ext);
        tio_container *c = NULL;
        tio_error err;
        if (tio_shard_open_member(s, i, NULL, &c, &err) == TIO_OK) {
            for (size_t t = 0; t < tio_container_count(c); t++) {
                const tio_tensor *x = tio_container_tensor(c, t);
                const uint8_t *xd = tio_tensor_data(x);
                size_t nb = tio_tensor_nbytes(x);
                if (nb) sink ^= (uint8_t)(xd[0] ^ xd[nb - 1]);
            }
            tio_container_free(c);
        }
    }
}

static void sweep_one(const uint8_t *p, size_t n) {
    uint8_t *copy = malloc(n ? n : 1);
    assert_non_null(copy);
    if (n) memcpy(copy, p, n);
    tio_shard *s = NULL;
    tio_error err;
    int rc = tio_shard_open_memory(copy, n, NULL, &s, &err);
    if (rc == TIO_OK) {
        touch(s);
        tio_shard_free(s);
    } else {
        assert_null(s);
        assert_true(strncmp(err.message, "tar: ", 5) == 0);
        assert_true(err.offset <= (int64_t)n);
    }
    free(copy);
}

static void test_sweeps(void **state) {
    (void)state;
    tb b = {0};
    tb_pax(&b, 'x', "20 path=p/0001.json\n");
    tb_file(&b, "x", "{}", 2);
    tb_file(&b, "p/0001.ten", ten, ten_len);
    char longname[200];
    memset(longname, 'y', sizeof longname);
    memcpy(longname + 190, "/0002.ten", 10);
    tb_header(&b, "././@LongLink", 'L', strlen(longname) + 1, GNU);
    tb_data(&b, longname, strlen(longname) + 1);
    tb_header(&b, "z", '0', ten_len, GNU);
    tb_data(&b, ten, ten_len);
    tb_end(&b);
    size_t ok = 0;
    for (size_t n = 0; n <= b.n; n++) sweep_one(b.p, n);
    for (size_t i = 0; i < b.n; i++) {
        b.p[i] ^= 0xff;
        sweep_one(b.p, b.n);
        b.p[i] ^= 0xff;
        if (i % 512 < 8) { /* single bits of every header's start */
            for (int bit = 0; bit < 8; bit++) {
                b.p[i] ^= (uint8_t)(1u << bit);
                sweep_one(b.p, b.n);
                b.p[i] ^= (uint8_t)(1u << bit);
            }
        }
        ok++;
    }
    assert_int_equal(ok, b.n);
    free(b.p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_samples),     cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_find_many),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_names),       cmocka_unit_test(test_bad_headers),
        cmocka_unit_test(test_bad_pax),     cmocka_unit_test(test_member_limit),
        cmocka_unit_test(test_sweeps),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
