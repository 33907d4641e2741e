/* NumPy .npy: versions 1.0-3.0, byte orders, Fortran order, the header as a
 * restricted literal (each refusal), and the writer's bytes as np.save's
 * (the header built here by format.py's rules; tests/formats/test_npy.py
 * compares with NumPy itself). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npylayout.h"
#include "tassert.h"
#include "tensio.h"

/* A .npy file (npy_bytes) opened strictly, from a copy. */
static tio_container *open_ok(unsigned major, const char *dict, const void *data, size_t dlen) {
    size_t len;
    uint8_t *f = npy_bytes(major, dict, data, dlen, &len);
    tio_container *c = NULL;
    tio_error e;
    tio_open_options o = {.flags = TIO_OPEN_STRICT | TIO_OPEN_COPY};
    ASSERT_OK(tio_open_memory(f, len, &o, &c, &e), e, dict);
    assert_string_equal(tio_container_format(c), "npy");
    free(f);
    return c;
}

static void refused(const char *dict, size_t dlen, int code, const char *needle) {
    uint8_t zeros[64] = {0};
    size_t len;
    uint8_t *f = npy_bytes(1, dict, zeros, dlen, &len);
    tio_container *c = NULL;
    tio_error e;
    tio_open_options o = {.format = "npy"};
    int rc = tio_open_memory(f, len, &o, &c, &e);
    free(f);
    if (rc != code || !strstr(e.message, needle) || strncmp(e.message, "npy: ", 5)) {
        fprintf(stderr, "%s\n  -> %s: %s (expected %s, '%s')\n", dict, tio_status_name(rc),
                e.message, tio_status_name(code), needle);
        fail();
    }
    assert_null(c);
}

static void test_versions_and_orders(void **state) {
    (void)state;
    const float v[6] = {0, 1, 2, 3, 4, 5};
    for (unsigned major = 1; major <= 3; major++) {
        tio_container *c =
            open_ok(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", v, 24);
        const tio_tensor *t = tio_container_tensor(c, 0);
        assert_int_equal(tio_tensor_dtype(t), TIO_FLOAT32);
        assert_int_equal(tio_tensor_rank(t), 2);
        assert_memory_equal(tio_tensor_data(t), v, 24);
        char ver[8];
        snprintf(ver, sizeof ver, "%u.0", major);
        assert_string_equal(tio_container_prop_get(c, "version"), ver);
        tio_container_free(c);
    }
    /* big-endian: a byte-swapped copy */
    const uint8_t be[8] = {0, 1, 0, 2, 0x3c, 0, 0xc0, 0};
    tio_container *c = open_ok(1, "{'descr': '>i2', 'fortran_order': False, 'shape': (2,), }", be, 4);
    const int16_t *s = tio_tensor_data(tio_container_tensor(c, 0));
    assert_int_equal(s[0], 1);
    assert_int_equal(s[1], 2);
    tio_container_free(c);
    c = open_ok(1, "{'descr': '>f2', 'fortran_order': False, 'shape': (2,), }", be + 4, 4);
    const uint16_t *h = tio_tensor_data(tio_container_tensor(c, 0));
    assert_int_equal(h[0], 0x3c00);
    assert_int_equal(h[1], 0xc000);
    tio_container_free(c);
    /* Fortran order: transposed into C order. F-order (2,3): columns stored */
    const int32_t f23[6] = {0, 3, 1, 4, 2, 5};
    c = open_ok(1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }", f23, 24);
    const int32_t *x = tio_tensor_data(tio_container_tensor(c, 0));
    for (int i = 0; i < 6; i++) assert_int_equal(x[i], i);
    assert_string_equal(tio_container_prop_get(c, "fortran_order"), "True");
    tio_container_free(c);
    /* rank 3, big-endian and Fortran at once: element (i,j,k) = 100i+10j+k */
    uint8_t f3[2 * 3 * 4 * 4];
    for (int k = 0, n = 0; k < 4; k++)
        for (int j = 0; j < 3; j++)
            for (int i = 0; i < 2; i++, n++) {
                uint32_t val = (uint32_t)(100 * i + 10 * j + k);
                f3[4 * n] = (uint8_t)(val >> 24);
                f3[4 * n + 1] = (uint8_t)(val >> 16);
                f3[4 * n + 2] = (uint8_t)(val >> 8);
                f3[4 * n + 3] = (uint8_t)val;
            }
    c = open_ok(2, "{'descr': '>u4', 'fortran_order': True, 'shape': (2, 3, 4), }", f3,
                sizeof f3);
    const uint32_t *y = tio_tensor_data(tio_container_tensor(c, 0));
    for (int i = 0, n = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++, n++) assert_int_equal(y[n], 100 * i + 10 * j + k);
    tio_container_free(c);
    /* rank 0, empty, bool, '|' and '=' and no order, Python 2's 3L, other spacing */
    const double d = 2.5;
    c = open_ok(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", &d, 8);
    assert_int_equal(tio_tensor_rank(tio_container_tensor(c, 0)), 0);
    tio_container_free(c);
    c = open_ok(3, "{'descr': '<i8', 'fortran_order': True, 'shape': (0, 5), }", NULL, 0);
    assert_int_equal(tio_tensor_numel(tio_container_tensor(c, 0)), 0);
    tio_container_free(c);
    const uint8_t b[3] = {1, 0, 1};
    c = open_ok(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", b, 3);
    assert_int_equal(tio_tensor_dtype(tio_container_tensor(c, 0)), TIO_BOOL);
    tio_container_free(c);
    c = open_ok(1, "{\"shape\":(3L,),\"descr\":\"u1\",\"fortran_order\":False}", b, 3);
    assert_int_equal(tio_tensor_dtype(tio_container_tensor(c, 0)), TIO_UINT8);
    tio_container_free(c);
    c = open_ok(1, "{'descr': '=i1', 'fortran_order': False, 'shape': (\n 3 , ) }", b, 3);
    tio_container_free(c);
}

/* NumPy's fixed-width strings: S stripped of trailing NULs, U (both byte
 * orders) as UTF-8, Fortran order put in C order; a surrogate refused by
 * index; the layout bounded by max_dense_bytes. */
static void test_strings(void **state) {
    (void)state;
    static const char s3[] = "ab\0c\0\0xyz";
    tio_container *c = open_ok(1, "{'descr': '|S3', 'fortran_order': False, 'shape': (3,), }",
                               s3, 9);
    const tio_tensor *t = tio_container_tensor(c, 0);
    assert_int_equal(tio_tensor_dtype(t), TIO_STRING);
    const char *p;
    size_t n;
    tio_error e;
    assert_int_equal(tio_tensor_string_at(t, 0, &p, &n, &e), TIO_OK);
    assert_int_equal(n, 2);
    assert_int_equal(tio_tensor_string_at(t, 1, &p, &n, &e), TIO_OK);
    assert_int_equal(n, 1);
    assert_memory_equal(p, "c", 1);
    assert_int_equal(tio_tensor_string_at(t, 2, &p, &n, &e), TIO_OK);
    assert_memory_equal(p, "xyz", 3);
    tio_container_free(c);
    /* >U2 in Fortran order, shape (2, 2): file order a, b, c, d is [[a, c], [b, d]] */
    static const uint8_t u[] = {0, 0, 0, 'a', 0, 0, 0, 0,    0, 0, 0, 'b', 0, 0, 0, 0xe9,
                                0, 0, 0, 'c', 0, 1, 0xf6, 0x00, 0, 0, 0, 'd', 0, 0, 0, 0};
    c = open_ok(1, "{'descr': '>U2', 'fortran_order': True, 'shape': (2, 2), }", u, sizeof u);
    t = tio_container_tensor(c, 0);
    assert_int_equal(tio_tensor_string_at(t, 1, &p, &n, &e), TIO_OK);
    assert_int_equal(n, 5);
    assert_memory_equal(p, "c\xf0\x9f\x98\x80", 5);
    assert_int_equal(tio_tensor_string_at(t, 2, &p, &n, &e), TIO_OK);
    assert_int_equal(n, 3);
    assert_memory_equal(p, "b\xc3\xa9", 3);
    assert_int_equal(tio_tensor_string_at(t, 3, &p, &n, &e), TIO_OK);
    assert_memory_equal(p, "d", 1);
    tio_container_free(c);
    static const uint8_t sur[] = {'a', 0, 0, 0, 0x00, 0xd8, 0, 0};
    size_t len;
    uint8_t *f =
        npy_bytes(1, "{'descr': '<U1', 'fortran_order': False, 'shape': (2,), }", sur, 8, &len);
    tio_open_options o = {.format = "npy"};
    assert_int_equal(tio_open_memory(f, len, &o, &c, &e), TIO_E_CORRUPT);
    assert_non_null(strstr(e.message, "string 1: code point 0xd800"));
    free(f);
    /* 16 one-byte strings take 8 × 17 bytes of offsets: over a limit of 64 */
    uint8_t ones[16];
    memset(ones, 'x', sizeof ones);
    f = npy_bytes(1, "{'descr': '|S1', 'fortran_order': False, 'shape': (16,), }", ones, 16, &len);
    tio_limits lim = {0};
    lim.max_dense_bytes = 64;
    o.limits = &lim;
    assert_int_equal(tio_open_memory(f, len, &o, &c, &e), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "max_dense_bytes"));
    free(f);
}

static void test_refusals(void **state) {
    (void)state;
    refused("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", 8, TIO_E_UNSUPPORTED,
            "object array");
    refused("{'descr': [('a', '<i4'), ('b', '<f4')], 'fortran_order': False, 'shape': (1,), }", 8,
            TIO_E_UNSUPPORTED, "structured");
    refused("{'descr': '|V8', 'fortran_order': False, 'shape': (1,), }", 8, TIO_E_UNSUPPORTED,
            "void/structured");
    refused("{'descr': '<c32', 'fortran_order': False, 'shape': (1,), }", 32, TIO_E_DTYPE,
            "complex");
    refused("{'descr': '<U0', 'fortran_order': False, 'shape': (1,), }", 12, TIO_E_DTYPE,
            "strings of no width");
    refused("{'descr': '<U4294967296', 'fortran_order': False, 'shape': (1,), }", 12,
            TIO_E_DTYPE, "strings of no width");
    refused("{'descr': '<S3', 'fortran_order': False, 'shape': (1,), }", 12, TIO_E_DTYPE,
            "strings");
    /* string counts and widths past the input, before anything is allocated */
    refused("{'descr': '|S4', 'fortran_order': False, 'shape': (1099511627776,), }", 8,
            TIO_E_TRUNCATED, "need");
    refused("{'descr': '<U536870911', 'fortran_order': False, 'shape': (1,), }", 8,
            TIO_E_TRUNCATED, "need");
    refused("{'descr': '<U536870912', 'fortran_order': False, 'shape': (1,), }", 8,
            TIO_E_DTYPE, "strings of no width");
    refused("{'descr': '<U1', 'fortran_order': False, 'shape': (4611686018427387904,), }", 8,
            TIO_E_OVERFLOW, "overflows");
    refused("{'descr': '<f16', 'fortran_order': False, 'shape': (1,), }", 16, TIO_E_DTYPE,
            "float of that size");
    refused("{'descr': '<M8[ns]', 'fortran_order': False, 'shape': (1,), }", 8, TIO_E_DTYPE,
            "datetime");
    refused("{'descr': '<f4', 'fortran_order': False, }", 0, TIO_E_CORRUPT, "'shape' is missing");
    refused("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", 4, TIO_E_CORRUPT,
            "key 'x'");
    refused("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 4,
            TIO_E_CORRUPT, "twice");
    refused("{'descr': '<f4', 'fortran_order': False, 'shape': [1], }", 4, TIO_E_CORRUPT,
            "a list");
    refused("{'descr': '<f4', 'fortran_order': False, 'shape': (1), }", 4, TIO_E_CORRUPT,
            "not a tuple");
    refused("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", 4, TIO_E_CORRUPT,
            "negative");
    refused("{'descr': '<f4', 'fortran_order': False, 'shape': (1.0,), }", 4, TIO_E_CORRUPT,
            "not a decimal integer");
    refused("{'descr': '<f4', 'fortran_order': 1, 'shape': (1,), }", 4, TIO_E_CORRUPT,
            "True or False");
    refused("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 4,
            TIO_E_OVERFLOW, "int64");
    refused("{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", 4,
            TIO_E_OVERFLOW, "");
    refused("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 4, TIO_E_TRUNCATED,
            "need 8 bytes, found 4");
    refused("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } x", 4, TIO_E_CORRUPT,
            "only whitespace");
    refused("{'descr': '<f4' 'x', 'fortran_order': False, 'shape': (1,), }", 4, TIO_E_UNSUPPORTED,
            "adjacent");
    refused("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), ", 4, TIO_E_CORRUPT,
            "expected a key");
    refused("['descr']", 4, TIO_E_CORRUPT, "expected '{'");
    /* the prefix */
    tio_container *c = NULL;
    tio_error e;
    tio_open_options o = {.format = "npy"};
    assert_int_equal(tio_open_memory("\x93NUMPX\x01\x00\x00\x00", 10, &o, &c, &e), TIO_E_MAGIC);
    assert_int_equal(tio_open_memory("\x93NUMPY\x04\x00\x00\x00", 10, &o, &c, &e),
                     TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "4.0"));
    assert_int_equal(tio_open_memory("\x93NUMPY\x01\x00\x40\x00{}", 12, &o, &c, &e),
                     TIO_E_TRUNCATED);
    assert_int_equal(tio_open_memory("\x93NUMPY\x02\x00\x01", 9, &o, &c, &e), TIO_E_TRUNCATED);
    /* max_rank and max_header_bytes */
    tio_limits l = {0};
    l.max_rank = 2;
    size_t len;
    uint8_t z[8] = {0};
    uint8_t *f = npy_bytes(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (1, 1, 1), }", z, 1,
                    &len);
    tio_open_options lo = {.format = "npy", .limits = &l};
    assert_int_equal(tio_open_memory(f, len, &lo, &c, &e), TIO_E_LIMIT);
    l.max_rank = 0;
    l.max_header_bytes = 32;
    assert_int_equal(tio_open_memory(f, len, &lo, &c, &e), TIO_E_LIMIT);
    free(f);
}

static void test_findings(void **state) {
    (void)state;
    size_t len;
    uint8_t z[8] = {0};
    uint8_t *f = npy_bytes(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }", z, 5, &len);
    tio_container *c = NULL;
    tio_error e;
    tio_open_options o = {.format = "npy"};
    ASSERT_OK(tio_open_memory(f, len, &o, &c, &e), e, "trailing");
    assert_int_equal(tio_container_warning_count(c), 1);
    assert_non_null(strstr(tio_container_warning(c, 0)->message, "3 trailing bytes"));
    tio_container_free(c);
    o.flags = TIO_OPEN_STRICT;
    assert_int_equal(tio_open_memory(f, len, &o, &c, &e), TIO_E_INVALID);
    free(f);
    /* a header without the final '\n' */
    f = npy_bytes(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }", z, 2, &len);
    f[len - 3] = ' ';
    assert_int_equal(tio_open_memory(f, len, &o, &c, &e), TIO_E_INVALID);
    assert_non_null(strstr(e.message, "'\\n'"));
    free(f);
    /* a 16-aligned header (older NumPy): the data unaligned for f8 -> a copy */
    static const char hdr[] = "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }    \n";
    uint8_t *g = calloc(1, 128);
    memcpy(g, "\x93NUMPY\x01\x00", 8);
    size_t hl = sizeof hdr - 1; /* 10 + hl is not a multiple of 8 */
    g[8] = (uint8_t)hl;
    memcpy(g + 10, hdr, hl);
    const double one = 1.0;
    memcpy(g + 10 + hl, &one, 8);
    o.flags = 0;
    ASSERT_OK(tio_open_memory(g, 10 + hl + 8, &o, &c, &e), e, "unaligned");
    const tio_tensor *t = tio_container_tensor(c, 0);
    assert_true(tio_tensor_is_aligned(t));
    assert_true(*(const double *)tio_tensor_data(t) == 1.0);
    tio_container_free(c);
    free(g);
}

static void add(tio_container *c, const char *name, tio_dtype dt, size_t rank,
                const int64_t *shape, const void *data, size_t nbytes) {
    tio_tensor_desc d = {name, dt, rank, shape, TIO_LAYOUT_DENSE, data, nbytes, 0, NULL};
    tio_error e;
    ASSERT_OK(tio_container_add(c, &d, 0, NULL, &e), e, "add");
}

/* What np.save writes: keys sorted, 21 - digits(shape[0]) growth spaces,
 * padded with spaces to a multiple of 64 with the '\n' (a full 64 when it
 * already is one). */
static void expect_save(const char *descr, const int64_t *shape, size_t rank, const void *data,
                        size_t dlen, tio_dtype dt) {
    char dict[512];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     descr);
    for (size_t k = 0; k < rank; k++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, "%s%lld", k ? ", " : "",
                      (long long)shape[k]);
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }", rank == 1 ? "," : "");
    if (rank) {
        char first[24];
        int fl = snprintf(first, sizeof first, "%lld", (long long)shape[0]);
        for (int k = 0; k < 21 - fl; k++) dict[n++] = ' ';
        dict[n] = 0;
    }
    size_t len;
    uint8_t *expect = npy_bytes(1, dict, data, dlen, &len);
    tio_container *c = tio_container_new();
    add(c, NULL, dt, rank, shape, data, dlen);
    tio_save_options so = {.format = "npy"};
    void *out = NULL;
    size_t olen;
    tio_error e;
    ASSERT_OK(tio_save_memory(c, &so, &out, &olen, &e), e, "save");
    assert_int_equal(olen, len);
    assert_memory_equal(out, expect, len);
    assert_int_equal(((const uint8_t *)out)[(len - dlen - 1)], '\n');
    assert_int_equal((len - dlen) % 64, 0);
    if (rank == 13) assert_int_equal(len, 192);
    tio_free(out);
    free(expect);
    tio_container_free(c);
}

static void test_write(void **state) {
    (void)state;
    const float v[6] = {0, 1, 2, 3, 4, 5};
    const int64_t s23[2] = {2, 3}, s6[1] = {6}, s0[3] = {0, 1234567, 1};
    expect_save("<f4", s23, 2, v, 24, TIO_FLOAT32);
    expect_save("|u1", s6, 1, v, 6, TIO_UINT8);
    expect_save("|b1", s6, 1, "\1\0\1\0\1\0", 6, TIO_BOOL);
    expect_save("<f8", NULL, 0, v, 8, TIO_FLOAT64);
    expect_save("<i8", s0, 3, NULL, 0, TIO_INT64);
    expect_save("<u2", s6, 1, v, 12, TIO_UINT16);
    expect_save("<f2", s6, 1, v, 12, TIO_FLOAT16);
    /* a header whose 10 + dict + '\n' is 128 already gets 64 spaces more */
    const int64_t s13[13] = {1, 100000, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    expect_save("|i1", s13, 13, NULL, 0, TIO_INT8);

    /* version 2.0 and 3.0 on request; 4 refused */
    tio_container *c = tio_container_new();
    add(c, NULL, TIO_FLOAT32, 2, s23, v, 24);
    for (unsigned ver = 2; ver <= 4; ver++) {
        tio_save_options so = {.format = "npy", .version = ver};
        void *out = NULL;
        size_t olen;
        tio_error e;
        int rc = tio_save_memory(c, &so, &out, &olen, &e);
        if (ver == 4) {
            assert_int_equal(rc, TIO_E_UNSUPPORTED);
            continue;
        }
        ASSERT_OK(rc, e, "version");
        assert_int_equal(((uint8_t *)out)[6], ver);
        assert_int_equal(olen % 64, 24 % 64);
        tio_container *r = NULL;
        tio_open_options o = {.flags = TIO_OPEN_STRICT};
        ASSERT_OK(tio_open_memory(out, olen, &o, &r, &e), e, "reopen");
        assert_memory_equal(tio_tensor_data(tio_container_tensor(r, 0)), v, 24);
        tio_container_free(r);
        tio_free(out);
    }
    tio_container_free(c);
}

static void test_write_refusals(void **state) {
    (void)state;
    const int64_t s1[1] = {1};
    const uint8_t b[2] = {0, 0};
    tio_save_options so = {.format = "npy"};
    void *out = NULL;
    size_t olen;
    tio_error e;
    tio_container *c = tio_container_new();
    assert_int_equal(tio_save_memory(c, &so, &out, &olen, &e), TIO_E_UNSUPPORTED);
    add(c, NULL, TIO_UINT8, 1, s1, b, 1);
    add(c, NULL, TIO_UINT8, 1, s1, b, 1);
    assert_int_equal(tio_save_memory(c, &so, &out, &olen, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "exactly one array"));
    assert_non_null(strstr(e.message, "2 tensors"));
    tio_container_free(c);
    /* the one tensor's name is the file's: no flag (np.save takes no name);
     * among two tensors a name still needs --drop-names, before the count */
    c = tio_container_new();
    add(c, "w", TIO_BFLOAT16, 1, s1, b, 2);
    assert_int_equal(tio_save_memory(c, &so, &out, &olen, &e), TIO_E_LOSSY);
    assert_null(strstr(e.message, "--drop-names"));
    assert_non_null(strstr(e.message, "--widen"));
    add(c, "v", TIO_UINT8, 1, s1, b, 1);
    assert_int_equal(tio_save_memory(c, &so, &out, &olen, &e), TIO_E_LOSSY);
    assert_non_null(strstr(e.message, "--drop-names"));
    tio_container_free(c);
    c = tio_container_new();
    add(c, "w", TIO_BFLOAT16, 1, s1, b, 2);
    so.flags = TIO_SAVE_DROP_NAMES;
    assert_int_equal(tio_save_memory(c, &so, &out, &olen, &e), TIO_E_LOSSY);
    assert_non_null(strstr(e.message, "--widen"));
    so.flags |= TIO_SAVE_WIDEN;
    ASSERT_OK(tio_save_memory(c, &so, &out, &olen, &e), e, "widen");
    assert_non_null(strstr((const char *)out + 10, "'<f4'"));
    tio_free(out);
    tio_container_free(c);
}

/* Big-endian and Fortran-order arrays are views read on the way out
 * (tio_strided): walked in tiles of rows where the last two dims are
 * transposed (with a last tile short of the others, an odometer over the
 * dims before them, a copy of 16-byte elements), element by element where a
 * tile would hold under 4 rows, swapped through the walk's buffer. Each way
 * out must give the C-order little-endian array: tio_tensor_data (the walk
 * into the copy), the hash (the walk in pieces) and a save (the plan's
 * pieces, read back). */
static void test_views_walked(void **state) {
    (void)state;
    static const struct {
        const char *descr;
        int fortran;
        size_t es, unit, rank;
        int64_t shape[4];
    } cases[] = {
        {"<f4", 1, 4, 4, 2, {300, 5000}},    /* 26 rows a tile: 11 and a short one */
        {">f4", 1, 4, 4, 2, {300, 5000}},    /* the same, swapped on the way */
        {"<i2", 1, 2, 2, 4, {7, 3, 1000, 9}}, /* tiles of dims 2 and 3, 21 of them */
        {">c16", 1, 16, 8, 2, {5, 6}},       /* 16-byte runs, parts swapped */
        {"|u1", 1, 1, 1, 2, {3, 4000}},      /* 3 rows: element by element */
        {">f8", 0, 8, 8, 1, {1000}},         /* C order: swapped only */
        {"<f4", 1, 4, 4, 2, {1, 5000}},      /* a row: contiguous after all */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t es = cases[k].es, rank = cases[k].rank, n = 1;
        const int64_t *sh = cases[k].shape;
        for (size_t d = 0; d < rank; d++) n *= (size_t)sh[d];
        uint8_t *want = malloc(n * es), *file = malloc(n * es);
        assert_non_null(want);
        assert_non_null(file);
        for (size_t i = 0; i < n * es; i++) want[i] = (uint8_t)((i * 2654435761u) >> 13);
        npy_layout(want, file, n, es, sh, rank, cases[k].fortran, cases[k].descr[0] == '>',
                   cases[k].unit);
        char dict[128], dims[64] = "";
        size_t dl = 0;
        for (size_t d = 0; d < rank; d++)
            dl += (size_t)snprintf(dims + dl, sizeof dims - dl, "%lld, ", (long long)sh[d]);
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }",
                 cases[k].descr, cases[k].fortran ? "True" : "False", dims);
        tio_container *c = open_ok(1, dict, file, n * es);
        free(file);
        const tio_tensor *t = tio_container_tensor(c, 0);
        tio_error e;
        /* the hash, walking the view; against the array's own */
        tio_container *ref = tio_container_new();
        assert_non_null(ref);
        tio_tensor_desc d = {0};
        d.dtype = tio_tensor_dtype(t);
        d.rank = rank;
        d.shape = sh;
        d.data = want;
        d.nbytes = n * es;
        ASSERT_OK(tio_container_add(ref, &d, TIO_ADD_BORROW, NULL, &e), e, "reference");
        uint8_t h1[32], h2[32];
        ASSERT_OK(tio_tensor_sha256(t, TIO_HASH_VALUES, h1, &e), e, dict);
        ASSERT_OK(tio_tensor_sha256(tio_container_tensor(ref, 0), TIO_HASH_VALUES, h2, &e), e,
                  "reference");
        if (memcmp(h1, h2, 32) != 0) fail_msg("%s: the hash differs", dict);
        /* a save, read back */
        tio_save_options so = {.format = "npy"};
        void *out;
        size_t olen;
        ASSERT_OK(tio_save_memory(c, &so, &out, &olen, &e), e, dict);
        tio_container *back = NULL;
        ASSERT_OK(tio_open_memory(out, olen, NULL, &back, &e), e, "saved");
        if (memcmp(tio_tensor_bytes(tio_container_tensor(back, 0)), want, n * es) != 0)
            fail_msg("%s: the saved array differs", dict);
        tio_container_free(back);
        tio_free(out);
        /* the copy on first use */
        if (memcmp(tio_tensor_data(t), want, n * es) != 0)
            fail_msg("%s: tio_tensor_data differs", dict);
        tio_container_free(ref);
        tio_container_free(c);
        free(want);
    }
}

static void test_registry(void **state) {
    (void)state;
    assert_string_equal(tio_format_for_path("x/a.npy"), "npy");
    assert_int_equal(tio_format_caps("npy"), 0);
    assert_false(tio_format_supports_dtype("npy", TIO_BFLOAT16));
    assert_string_equal(tio_format_probe("\x93NUMPY\x01\x00", 8), "npy");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_versions_and_orders), cmocka_unit_test(test_refusals), cmocka_unit_test(test_strings),
        cmocka_unit_test(test_findings),            cmocka_unit_test(test_write),
        cmocka_unit_test(test_write_refusals),      cmocka_unit_test(test_registry),
        cmocka_unit_test(test_views_walked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
