/* Core: errors, dtypes, cursor, checked sizes, containers, hashing, saves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"
#include "tensio.h"
#include "tvec.h"

static void test_version(void **state) {
    (void)state;
    assert_int_equal(tio_version_number(), TIO_VERSION_NUMBER);
    assert_string_equal(tio_version_string(), TIO_VERSION_STRING);
}

static void test_status_names(void **state) {
    (void)state;
    assert_string_equal(tio_status_name(TIO_OK), "TIO_OK");
    assert_string_equal(tio_status_name(TIO_E_TRUNCATED), "TIO_E_TRUNCATED");
    assert_string_equal(tio_status_name(TIO_E_INVALID), "TIO_E_INVALID");
    assert_string_equal(tio_status_name(999), "TIO_E_UNKNOWN");
    assert_string_equal(tio_status_name(-1), "TIO_E_UNKNOWN");
    /* every code has a distinct name and a description */
    for (int i = 0; i <= TIO_E_TRANSPORT; i++) {
        assert_non_null(tio_status_string(i));
        for (int j = 0; j < i; j++)
            assert_string_not_equal(tio_status_name(i), tio_status_name(j));
    }
    /* stable numbers */
    assert_int_equal(TIO_E_ARGUMENT, 1);
    assert_int_equal(TIO_E_LOSSY, 13);
    assert_int_equal(TIO_E_INVALID, 15);
    assert_int_equal(TIO_E_TIMEOUT, 16);
    assert_int_equal(TIO_E_TRANSPORT, 17);
    assert_string_equal(tio_status_name(TIO_E_TIMEOUT), "TIO_E_TIMEOUT");
    assert_string_equal(tio_status_name(TIO_E_TRANSPORT), "TIO_E_TRANSPORT");
}

static void test_error_format(void **state) {
    (void)state;
    tio_error e;
    tio_error_clear(&e);
    assert_int_equal(e.code, TIO_OK);
    assert_int_equal(e.offset, -1);
    int rc = tio__err(&e, TIO_E_CORRUPT, "btf", 24, "expected %d, found %d", 1, 2);
    assert_int_equal(rc, TIO_E_CORRUPT);
    assert_int_equal(e.code, TIO_E_CORRUPT);
    assert_int_equal(e.offset, 24);
    assert_string_equal(e.format, "btf");
    assert_string_equal(e.message, "btf: offset 24: expected 1, found 2");
    tio__err(&e, TIO_E_IO, NULL, -1, "plain");
    assert_string_equal(e.message, "plain");
    assert_int_equal(tio__err(NULL, TIO_E_NOMEM, "x", 0, "no err object"), TIO_E_NOMEM);
    /* very long messages are cut, never overflow */
    char big[2000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    tio__err(&e, TIO_E_CORRUPT, "tenbin", 1, "%s", big);
    assert_int_equal(strlen(e.message), TIO_ERROR_MESSAGE_MAX - 1);
}

/* String tensors: built from strings, read back element by element, the
 * layout checked on add (hand-made layouts, hostile ones refused), and
 * formats without strings refusing them by name. */
static void test_string_tensor(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    tio_error err;
    const char *strs[] = {"ab", NULL, "x\0y", "hello"};
    size_t lens[] = {2, 0, 3, 5};
    int64_t shape[] = {2, 2};
    tio_tensor *t = NULL;
    assert_int_equal(tio_container_add_strings(c, "s", 2, shape, strs, lens, &t, &err), TIO_OK);
    assert_int_equal(tio_tensor_dtype(t), TIO_STRING);
    assert_int_equal(tio_tensor_numel(t), 4);
    assert_int_equal(tio_tensor_nbytes(t), 8 * 5 + 10);
    const char *p;
    size_t n;
    assert_int_equal(tio_tensor_string_at(t, 2, &p, &n, &err), TIO_OK);
    assert_int_equal(n, 3);
    assert_memory_equal(p, "x\0y", 3);
    assert_int_equal(tio_tensor_string_at(t, 1, &p, &n, &err), TIO_OK);
    assert_int_equal(n, 0);
    assert_int_equal(tio_tensor_string_at(t, 4, &p, &n, &err), TIO_E_ARGUMENT);
    const uint8_t *d = tio_tensor_data(t);
    assert_int_equal(tio__ld64(d + 32), 10);
    assert_true(tio_tensor_is_aligned(t));
    uint8_t dense[64];
    assert_int_equal(tio_tensor_densify(t, dense, sizeof dense, &err), TIO_OK);
    assert_memory_equal(dense, d, tio_tensor_nbytes(t));
    /* the same layout by hand, through tio_container_add */
    uint8_t lay[8 * 3 + 4];
    tio__st64(lay, 0);
    tio__st64(lay + 8, 1);
    tio__st64(lay + 16, 4);
    memcpy(lay + 24, "abcd", 4);
    int64_t two = 2;
    tio_tensor_desc desc = {"h", TIO_STRING, 1, &two, TIO_LAYOUT_DENSE, lay, sizeof lay, 0, NULL};
    assert_int_equal(tio_container_add(c, &desc, 0, &t, &err), TIO_OK);
    assert_int_equal(tio_tensor_string_at(t, 1, &p, &n, &err), TIO_OK);
    assert_int_equal(n, 3);
    assert_memory_equal(p, "bcd", 3);
    /* hostile layouts */
    tio__st64(lay + 8, 5); /* past the bytes */
    assert_int_equal(tio_container_add(c, &desc, 0, NULL, &err), TIO_E_CORRUPT);
    assert_non_null(strstr(err.message, "offset 1 is 5"));
    tio__st64(lay + 8, 1);
    tio__st64(lay, 2); /* not 0 */
    assert_int_equal(tio_container_add(c, &desc, 0, NULL, &err), TIO_E_CORRUPT);
    tio__st64(lay, 0);
    tio__st64(lay + 16, 3); /* does not end at the length */
    assert_int_equal(tio_container_add(c, &desc, 0, NULL, &err), TIO_E_CORRUPT);
    tio__st64(lay + 16, 4);
    tio__st64(lay + 8, UINT64_MAX); /* decreasing after it */
    assert_int_equal(tio_container_add(c, &desc, 0, NULL, &err), TIO_E_CORRUPT);
    tio__st64(lay + 8, 1);
    desc.nbytes = 16; /* fewer bytes than the offsets */
    assert_int_equal(tio_container_add(c, &desc, 0, NULL, &err), TIO_E_CORRUPT);
    int64_t huge = INT64_MAX; /* (numel + 1) × 8 overflows */
    desc.shape = &huge;
    desc.nbytes = sizeof lay;
    assert_int_equal(tio_container_add(c, &desc, 0, NULL, &err), TIO_E_CORRUPT);
    desc.shape = &two;
    desc.layout = TIO_LAYOUT_COO;
    assert_int_equal(tio_container_add(c, &desc, 0, NULL, &err), TIO_E_ARGUMENT);
    assert_int_equal(tio_container_count(c), 2);
    /* a format without strings refuses them by name; the hash is the layout's */
    tio_save_options o = {0};
    o.format = "safetensors";
    assert_int_equal(tio_check_save(c, &o, &err), TIO_E_LOSSY);
    assert_non_null(strstr(err.message, "tensor 0 ('s') is string, which safetensors cannot store"));
    uint8_t h1[32], h2[32];
    assert_int_equal(tio_tensor_sha256(tio_container_tensor(c, 1), TIO_HASH_DENSE, h1, &err),
                     TIO_OK);
    tio_sha256 *h = NULL;
    assert_int_equal(tio__sha256_new(&h, &err), TIO_OK);
    tio__sha256_update(h, tio_tensor_data(tio_container_tensor(c, 1)), sizeof lay);
    tio__sha256_final(h, h2);
    assert_memory_equal(h1, h2, 32);
    tio_container_free(c);
}

static void test_dtypes(void **state) {
    (void)state;
    static const char *names[] = {"bool", "int8", "int16", "int32", "int64",
                                  "uint8", "uint16", "uint32", "uint64", "float16",
                                  "bfloat16", "float32", "float64", "float8_e4m3fn",
                                  "float8_e5m2", "complex64", "complex128", "string"};
    static const size_t sizes[] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8, 1, 1, 8, 16, 0};
    assert_int_equal(sizeof sizes / sizeof sizes[0], TIO_DTYPE_COUNT - 1);
    for (int i = 1; i < TIO_DTYPE_COUNT; i++) {
        assert_string_equal(tio_dtype_name((tio_dtype)i), names[i - 1]);
        assert_int_equal(tio_dtype_size((tio_dtype)i), sizes[i - 1]);
        assert_int_equal(tio_dtype_from_name(names[i - 1]), i);
    }
    assert_null(tio_dtype_name(TIO_DTYPE_INVALID));
    assert_null(tio_dtype_name((tio_dtype)99));
    assert_int_equal(tio_dtype_size((tio_dtype)99), 0);
    assert_int_equal(tio_dtype_from_name("f4"), TIO_DTYPE_INVALID);
    assert_int_equal(tio_dtype_from_name(NULL), TIO_DTYPE_INVALID);
}

static void test_half(void **state) {
    (void)state;
    assert_true(tio__half_to_float(0x3c00) == 1.0f);
    assert_true(tio__half_to_float(0xc000) == -2.0f);
    assert_true(tio__half_to_float(0x0001) == 5.9604644775390625e-08f);
    assert_true(tio__half_to_float(0x7bff) == 65504.0f);
    assert_true(tio__half_to_float(0x7c00) > 3e38f);
    float nan = tio__half_to_float(0x7e00);
    assert_true(nan != nan);
    assert_true(tio__half_to_float(0x8000) == 0.0f);
    assert_true(tio__bf16_to_float(0x3f80) == 1.0f);
    assert_true(tio__bf16_to_float(0xc040) == -3.0f);
    /* float8: E4M3FN (bias 7, max 448, no inf, 0x7f NaN), E5M2 (a half's top byte) */
    assert_true(tio__f8e4m3fn_to_float(0x38) == 1.0f);
    assert_true(tio__f8e4m3fn_to_float(0xc0) == -2.0f);
    assert_true(tio__f8e4m3fn_to_float(0x7e) == 448.0f);
    assert_true(tio__f8e4m3fn_to_float(0x01) == 0.001953125f); /* 2^-9 */
    assert_true(tio__f8e4m3fn_to_float(0x07) == 0.013671875f); /* 7 * 2^-9 */
    assert_true(tio__f8e4m3fn_to_float(0x08) == 0.015625f);    /* 2^-6 */
    assert_true(tio__f8e4m3fn_to_float(0x80) == 0.0f);
    nan = tio__f8e4m3fn_to_float(0x7f);
    assert_true(nan != nan);
    nan = tio__f8e4m3fn_to_float(0xff);
    assert_true(nan != nan);
    assert_true(tio__f8e5m2_to_float(0x3c) == 1.0f);
    assert_true(tio__f8e5m2_to_float(0x7b) == 57344.0f);
    assert_true(tio__f8e5m2_to_float(0x01) == 1.52587890625e-05f); /* 2^-16 */
    assert_true(tio__f8e5m2_to_float(0x7c) > 3e38f);
    assert_true(tio__f8e5m2_to_float(0xfc) < -3e38f);
    nan = tio__f8e5m2_to_float(0x7e);
    assert_true(nan != nan);
}

static void test_cursor(void **state) {
    (void)state;
    uint8_t buf[12] = {1, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0xff, 0xff, 0xff};
    tio_cursor c;
    tio__cursor_init(&c, buf, sizeof buf, "fmt");
    uint64_t u;
    int64_t s;
    uint32_t w;
    tio_error e;
    assert_int_equal(tio__cursor_u64(&c, &u, "a", &e), TIO_OK);
    assert_true(u == 0x8000000000000001ull);
    assert_int_equal(c.pos, 8);
    assert_int_equal(tio__cursor_i64(&c, &s, "count", &e), TIO_E_TRUNCATED);
    assert_int_equal(e.offset, 8);
    assert_int_equal(c.pos, 8); /* unchanged on failure */
    assert_non_null(strstr(e.message, "count"));
    assert_non_null(strstr(e.message, "expected 8 bytes, found 4"));
    assert_int_equal(tio__cursor_u32(&c, &w, "w", &e), TIO_OK);
    assert_int_equal(w, 0xffffffffu);
    assert_int_equal(tio__cursor_left(&c), 0);
    assert_int_equal(tio__cursor_seek(&c, 13, "seek", &e), TIO_E_BOUNDS);
    assert_int_equal(tio__cursor_seek(&c, 12, "seek", &e), TIO_OK);
    assert_int_equal(tio__cursor_seek(&c, 0, "seek", &e), TIO_OK);
    assert_int_equal(tio__cursor_skip(&c, UINT64_MAX, "skip", &e), TIO_E_TRUNCATED);
    const uint8_t *p;
    assert_int_equal(tio__cursor_bytes(&c, (uint64_t)SIZE_MAX, &p, "b", &e), TIO_E_TRUNCATED);
    assert_int_equal(tio__cursor_bytes(&c, 12, &p, "b", &e), TIO_OK);
    assert_ptr_equal(p, buf);
}

static void test_checked_sizes(void **state) {
    (void)state;
    uint64_t n;
    size_t b;
    tio_error e;
    int64_t ok[3] = {3, 0, 2};
    assert_int_equal(tio__shape_size(ok, 3, 4, &n, &b, "t", 0, &e), TIO_OK);
    assert_int_equal(n, 0);
    assert_int_equal(b, 0);
    assert_int_equal(tio__shape_size(NULL, 0, 8, &n, &b, "t", 0, &e), TIO_OK);
    assert_int_equal(n, 1);
    assert_int_equal(b, 8);
    int64_t big[2] = {INT64_C(1) << 32, INT64_C(1) << 32};
    assert_int_equal(tio__shape_size(big, 2, 1, &n, &b, "t", 5, &e), TIO_E_OVERFLOW);
    assert_int_equal(e.offset, 5);
    int64_t bytes_ovf[1] = {INT64_MAX / 2};
    assert_int_equal(tio__shape_size(bytes_ovf, 1, 8, &n, &b, "t", 0, &e), TIO_E_OVERFLOW);
    int64_t neg[2] = {2, -1};
    assert_int_equal(tio__shape_size(neg, 2, 1, &n, &b, "t", 0, &e), TIO_E_CORRUPT);
    uint64_t r;
    assert_true(tio__align_up(9, 8, &r) && r == 16);
    assert_true(tio__align_up(16, 8, &r) && r == 16);
    assert_false(tio__align_up(UINT64_MAX - 2, 8, &r));
}

static tio_tensor_desc dense_desc(tio_dtype dt, size_t rank, const int64_t *shape,
                                  const void *data, size_t nbytes) {
    tio_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = dt;
    d.rank = rank;
    d.shape = shape;
    d.data = data;
    d.nbytes = nbytes;
    return d;
}

static void test_container_add(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    assert_non_null(c);
    tio_error e;
    tio_tensor *t;
    /* rank 0 */
    double scalar = 2.5;
    tio_tensor_desc d = dense_desc(TIO_FLOAT64, 0, NULL, &scalar, 8);
    d.name = "s";
    assert_int_equal(tio_container_add(c, &d, 0, &t, &e), TIO_OK);
    assert_int_equal(tio_tensor_rank(t), 0);
    assert_non_null(tio_tensor_shape(t));
    assert_int_equal(tio_tensor_numel(t), 1);
    assert_string_equal(tio_tensor_name(t), "s");
    assert_ptr_not_equal(tio_tensor_data(t), &scalar); /* copied */
    /* zero dims */
    int64_t z[3] = {3, 0, 2};
    d = dense_desc(TIO_INT16, 3, z, NULL, 0);
    assert_int_equal(tio_container_add(c, &d, 0, &t, &e), TIO_OK);
    assert_int_equal(tio_tensor_numel(t), 0);
    assert_null(tio_tensor_name(t));
    /* borrow */
    uint8_t bytes[6] = {1, 2, 3, 4, 5, 6};
    int64_t s6[5] = {1, 1, 2, 3, 1};
    d = dense_desc(TIO_UINT8, 5, s6, bytes, 6);
    assert_int_equal(tio_container_add(c, &d, TIO_ADD_BORROW, &t, &e), TIO_OK);
    assert_ptr_equal(tio_tensor_data(t), bytes);
    assert_int_equal(tio_tensor_shape(t)[4], 1);
    assert_int_equal(tio_tensor_materialize(t, &e), TIO_OK);
    assert_ptr_not_equal(tio_tensor_data(t), bytes);
    assert_memory_equal(tio_tensor_data(t), bytes, 6);
    /* failures leave the container unchanged */
    size_t before = tio_container_count(c);
    int64_t ovf[3] = {INT64_C(1) << 40, INT64_C(1) << 40, 4};
    d = dense_desc(TIO_UINT8, 3, ovf, bytes, 6);
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_E_OVERFLOW);
    int64_t neg[1] = {-1};
    d = dense_desc(TIO_UINT8, 1, neg, bytes, 0);
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_E_CORRUPT);
    d = dense_desc(TIO_UINT8, 1, s6 + 3, bytes, 2); /* 3 elements, 2 bytes */
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_E_CORRUPT);
    assert_non_null(strstr(e.message, "expected 3"));
    d = dense_desc((tio_dtype)77, 1, s6 + 3, bytes, 3);
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_E_DTYPE);
    d = dense_desc(TIO_UINT8, 2, NULL, bytes, 3);
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_E_ARGUMENT);
    assert_int_equal(tio_container_add(NULL, &d, 0, NULL, &e), TIO_E_ARGUMENT);
    assert_int_equal(tio_container_count(c), before);
    assert_ptr_equal(tio_container_find(c, "s"), tio_container_tensor(c, 0));
    assert_null(tio_container_find(c, "nope"));
    assert_null(tio_container_tensor(c, 99));
    assert_null(tio_container_format(c));
    tio_container_free(c);
    tio_container_free(NULL);
}

static void test_coo(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    tio_error e;
    tio_tensor *t;
    int64_t shape[2] = {3, 4};
    int64_t idx[8] = {0, 1, 2, 3, 1, 0, 2, 3}; /* (2,3) twice: last wins */
    float vals[4] = {1, 2, 3, 4};
    tio_tensor_desc d = dense_desc(TIO_FLOAT32, 2, shape, vals, sizeof vals);
    d.layout = TIO_LAYOUT_COO;
    d.nnz = 4;
    d.indices = idx;
    assert_int_equal(tio_container_add(c, &d, 0, &t, &e), TIO_OK);
    assert_int_equal(tio_tensor_nnz(t), 4);
    assert_int_equal(tio_tensor_layout(t), TIO_LAYOUT_COO);
    float dense[12];
    assert_int_equal(tio_tensor_densify(t, dense, sizeof dense, &e), TIO_OK);
    float want[12] = {0, 1, 0, 0, 3, 0, 0, 0, 0, 0, 0, 4};
    assert_memory_equal(dense, want, sizeof want);
    assert_int_equal(tio_tensor_densify(t, dense, 8, &e), TIO_E_ARGUMENT);
    uint8_t h[32];
    char hex[65], want_hex[65];
    assert_int_equal(tio_tensor_sha256(t, TIO_HASH_DENSE, h, &e), TIO_OK);
    tvec_hex(h, 32, hex);
    tvec_sha256_hex(want, sizeof want, want_hex);
    assert_string_equal(hex, want_hex);
    assert_int_equal(tio_tensor_sha256(t, TIO_HASH_INDICES, h, &e), TIO_OK);
    tvec_hex(h, 32, hex);
    tvec_sha256_hex(idx, sizeof idx, want_hex);
    assert_string_equal(hex, want_hex);
    assert_int_equal(tio_tensor_sha256(t, 9, h, &e), TIO_E_ARGUMENT);
    /* out of range / negative indices */
    int64_t bad[2] = {3, 0};
    d.nnz = 1;
    d.indices = bad;
    d.nbytes = 4;
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_E_CORRUPT);
    assert_non_null(strstr(e.message, "expected 0 <= index < dim 3"));
    bad[0] = -1;
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_E_CORRUPT);
    /* nnz whose sizes overflow */
    d.nnz = UINT64_MAX / 2;
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_E_OVERFLOW);
    /* nnz 0 on a huge sparse shape hashes without allocating the dense size */
    int64_t huge[2] = {1 << 20, 1 << 8};
    d = dense_desc(TIO_UINT8, 2, huge, NULL, 0);
    d.layout = TIO_LAYOUT_COO;
    assert_int_equal(tio_container_add(c, &d, 0, &t, &e), TIO_OK);
    assert_int_equal(tio_tensor_sha256(t, TIO_HASH_DENSE, h, &e), TIO_OK);
    uint8_t *zeros = calloc(1, 1u << 28);
    assert_non_null(zeros);
    tvec_hex(h, 32, hex);
    tvec_sha256_hex(zeros, 1u << 28, want_hex);
    free(zeros);
    assert_string_equal(hex, want_hex);
    tio_container_free(c);
}

static void test_metadata(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    tio_error e;
    assert_int_equal(tio_container_meta_set(c, "a", "1", &e), TIO_OK);
    assert_int_equal(tio_container_meta_set(c, "b", "2", &e), TIO_OK);
    assert_int_equal(tio_container_meta_set(c, "a", "3", &e), TIO_OK);
    assert_int_equal(tio_container_meta_count(c), 2);
    const char *k, *v;
    assert_int_equal(tio_container_meta_at(c, 0, &k, &v), TIO_OK);
    assert_string_equal(k, "a");
    assert_string_equal(v, "3");
    assert_string_equal(tio_container_meta_get(c, "b"), "2");
    assert_null(tio_container_meta_get(c, "zz"));
    assert_int_equal(tio_container_meta_at(c, 2, &k, &v), TIO_E_NOT_FOUND);
    assert_int_equal(tio_container_meta_set(c, NULL, "x", &e), TIO_E_ARGUMENT);
    int8_t x = 1;
    tio_tensor_desc d = dense_desc(TIO_INT8, 0, NULL, &x, 1);
    tio_tensor *t;
    assert_int_equal(tio_container_add(c, &d, 0, &t, &e), TIO_OK);
    assert_int_equal(tio_tensor_meta_set(t, "unit", "m", &e), TIO_OK);
    assert_string_equal(tio_tensor_meta_get(t, "unit"), "m");
    assert_int_equal(tio_tensor_meta_count(t), 1);
    tio_container_free(c);
}

static void test_format_registry(void **state) {
    (void)state;
    assert_true(tio_format_count() >= 2);
    assert_string_equal(tio_format_for_path("a/b/x.btf"), "btf");
    assert_string_equal(tio_format_for_path("X.BTF"), "btf");
    assert_string_equal(tio_format_for_path("data.ten"), "tenbin");
    assert_null(tio_format_for_path("data.ten.bak"));
    assert_null(tio_format_for_path(".btf/"));
    assert_null(tio_format_for_path("noext"));
    assert_null(tio_format_for_path(NULL));
    assert_null(tio_format_name(tio_format_count()));
    assert_null(tio_format_description("nope"));
    for (size_t i = 0; i < tio_format_count(); i++) {
        const char *n = tio_format_name(i);
        assert_non_null(tio_format_description(n));
        assert_non_null(tio_format_extensions(n));
    }
    assert_true(tio_format_caps("btf") & TIO_CAP_SPARSE);
    assert_true(tio_format_caps("tenbin") & TIO_CAP_NAMES);
    assert_true(tio_format_supports_dtype("tenbin", TIO_UINT32));
    assert_false(tio_format_supports_dtype("btf", TIO_FLOAT16));
    assert_null(tio_format_probe("", 0));
    assert_string_equal(tio_format_probe("~TenBin~\0\0\0\0\0\0\0\0", 16), "tenbin");
}

static void test_open_errors(void **state) {
    (void)state;
    tio_container *c = NULL;
    tio_error e;
    static const uint8_t junk[5] = {'h', 'e', 'l', 'l', 'o'};
    assert_int_equal(tio_open_memory(junk, 5, NULL, &c, &e), TIO_E_FORMAT);
    assert_null(c);
    assert_non_null(strstr(e.message, "68656c6c6f"));
    tio_open_options o = {0};
    o.format = "nope";
    assert_int_equal(tio_open_memory(junk, 5, &o, &c, &e), TIO_E_FORMAT);
    assert_int_equal(tio_open_memory(NULL, 5, NULL, &c, &e), TIO_E_ARGUMENT);
    assert_int_equal(tio_open("/nonexistent/file.btf", NULL, &c, &e), TIO_E_IO);
    assert_non_null(strstr(e.message, "/nonexistent/file.btf"));
    assert_int_equal(tio_open("/", NULL, &c, &e), TIO_E_IO);
    assert_int_equal(tio_open(NULL, NULL, &c, &e), TIO_E_ARGUMENT);
    /* an empty input is a valid tenbin file (zero arrays) when forced */
    o.format = "tenbin";
    assert_int_equal(tio_open_memory(junk, 0, &o, &c, &e), TIO_OK);
    assert_int_equal(tio_container_count(c), 0);
    assert_string_equal(tio_container_format(c), "tenbin");
    tio_container_free(c);
    /* a copied buffer does not depend on the caller's */
    uint8_t ten[] = "~TenBin~";
    o.format = NULL;
    o.flags = TIO_OPEN_COPY;
    assert_int_not_equal(tio_open_memory(ten, 8, &o, &c, &e), TIO_OK); /* truncated */
    assert_string_equal(e.format, "tenbin");
}

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) n++;
    closedir(d);
    return n;
}

static void test_atomic_save(void **state) {
    (void)state;
    char dir[] = "/tmp/tio-core-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/out.ten", dir);
    tio_container *c = tio_container_new();
    tio_error e;
    int32_t v[3] = {1, 2, 3};
    int64_t shape[1] = {3};
    tio_tensor_desc d = dense_desc(TIO_INT32, 1, shape, v, sizeof v);
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
    assert_int_equal(tio_save(c, path, NULL, &e), TIO_OK);
    chmod(path, 0640);
    uint8_t *before;
    size_t before_len;
    assert_int_equal(tvec_read(path, &before, &before_len), 0);
    /* a save that fails (lossy) leaves the file and the directory as they were */
    int64_t s10[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    bool b = 1;
    tio_tensor_desc db = dense_desc(TIO_BOOL, 10, s10, &b, 1);
    assert_int_equal(tio_container_add(c, &db, 0, NULL, &e), TIO_OK);
    assert_int_not_equal(tio_save(c, path, NULL, &e), TIO_OK);
    uint8_t *after;
    size_t after_len;
    assert_int_equal(tvec_read(path, &after, &after_len), 0);
    assert_int_equal(after_len, before_len);
    assert_memory_equal(after, before, before_len);
    assert_int_equal(count_entries(dir), 1);
    free(after);
    /* a successful overwrite keeps the file's permissions */
    tio_container *c2 = tio_container_new();
    assert_int_equal(tio_container_add(c2, &d, 0, NULL, &e), TIO_OK);
    assert_int_equal(tio_save(c2, path, NULL, &e), TIO_OK);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    assert_int_equal(count_entries(dir), 1);
    /* unknown extension, missing directory */
    char bad[300];
    snprintf(bad, sizeof bad, "%s/out.unknown", dir);
    assert_int_equal(tio_save(c2, bad, NULL, &e), TIO_E_FORMAT);
    snprintf(bad, sizeof bad, "%s/missing/out.ten", dir);
    assert_int_equal(tio_save(c2, bad, NULL, &e), TIO_E_IO);
    assert_int_equal(count_entries(dir), 1);
    /* save_memory needs a format */
    void *buf;
    size_t len;
    assert_int_equal(tio_save_memory(c2, NULL, &buf, &len, &e), TIO_E_FORMAT);
    unlink(path);
    rmdir(dir);
    free(before);
    tio_container_free(c);
    tio_container_free(c2);
}

static void test_save_checks(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    tio_error e;
    uint16_t h[2] = {0x3c00, 0xc000}; /* 1.0, -2.0 */
    int64_t shape[1] = {2};
    tio_tensor_desc d = dense_desc(TIO_FLOAT16, 1, shape, h, sizeof h);
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
    tio_save_options so = {0};
    so.format = "btf";
    assert_int_equal(tio_check_save(c, &so, &e), TIO_E_LOSSY);
    assert_non_null(strstr(e.message, "float16"));
    assert_non_null(strstr(e.message, "--widen"));
    so.flags = TIO_SAVE_WIDEN;
    assert_int_equal(tio_check_save(c, &so, &e), TIO_OK);
    assert_int_equal(tio_container_meta_set(c, "k", "v", &e), TIO_OK);
    assert_int_equal(tio_check_save(c, &so, &e), TIO_E_LOSSY);
    assert_non_null(strstr(e.message, "metadata"));
    so.flags |= TIO_SAVE_DROP_METADATA;
    void *buf;
    size_t len;
    assert_int_equal(tio_save_memory(c, &so, &buf, &len, &e), TIO_OK);
    tio_container *r;
    assert_int_equal(tio_open_memory(buf, len, NULL, &r, &e), TIO_OK);
    assert_int_equal(tio_tensor_dtype(tio_container_tensor(r, 0)), TIO_FLOAT32);
    float f[2];
    memcpy(f, tio_tensor_data(tio_container_tensor(r, 0)), sizeof f);
    assert_true(f[0] == 1.0f && f[1] == -2.0f);
    tio_container_free(r);
    tio_free(buf);
    so.format = "nope";
    assert_int_equal(tio_check_save(c, &so, &e), TIO_E_FORMAT);
    tio_container_free(c);
}

/* Messages: a format without a multipart form travels as one part holding
 * its file encoding; parts are borrowed or copied; the message keeps the
 * container's data alive. */
static void test_messages(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    tio_error e;
    int64_t shape[2] = {64, 64};
    float *data = calloc(64 * 64, sizeof *data);
    assert_non_null(data);
    for (int i = 0; i < 64 * 64; i++) data[i] = (float)i * 0.5f;
    tio_tensor_desc d = dense_desc(TIO_FLOAT32, 2, shape, data, 64 * 64 * sizeof *data);
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
    free(data);

    tio_save_options so = {0};
    tio_message *m = NULL;
    assert_int_equal(tio_message_encode(c, &so, &m, &e), TIO_E_FORMAT); /* no format */
    assert_null(m);
    so.format = "nope";
    assert_int_equal(tio_message_encode(c, &so, &m, &e), TIO_E_FORMAT);
    so.format = "btf";
    assert_int_equal(tio_message_encode(c, &so, &m, &e), TIO_OK);
    assert_int_equal(tio_message_part_count(m), 1);
    void *file;
    size_t flen;
    assert_int_equal(tio_save_memory(c, &so, &file, &flen, &e), TIO_OK);
    tio_part p0 = tio_message_part(m, 0);
    assert_int_equal(p0.size, flen);
    assert_memory_equal(p0.data, file, flen);
    assert_int_equal(tio_message_size(m), flen);
    assert_null(tio_message_part(m, 1).data);
    tio_message_free(m);

    /* one part: decoded by the probe, borrowed or copied */
    tio_part part = {file, flen};
    tio_container *r = NULL;
    assert_int_equal(tio_open_parts(&part, 1, NULL, &r, &e), TIO_OK);
    assert_string_equal(tio_container_format(r), "btf");
    assert_ptr_equal(tio_tensor_data(tio_container_tensor(r, 0)),
                     (const uint8_t *)file + (flen - 64 * 64 * 4));
    tio_container_free(r);
    tio_open_options oo = {0};
    oo.flags = TIO_OPEN_COPY;
    assert_int_equal(tio_open_parts(&part, 1, &oo, &r, &e), TIO_OK);
    const tio_tensor *rt = tio_container_tensor(r, 0);
    assert_true((const uint8_t *)tio_tensor_data(rt) < (const uint8_t *)file ||
                (const uint8_t *)tio_tensor_data(rt) >= (const uint8_t *)file + flen);
    tio_free(file); /* the copy does not depend on it */
    assert_int_equal(tio_tensor_numel(rt), 64 * 64);
    assert_true(((const float *)tio_tensor_data(rt))[4095] == 2047.5f);

    /* btf has no multipart form: two parts are refused */
    tio_part two[2] = {{"a", 1}, {"b", 1}};
    tio_container *bad = NULL;
    oo.flags = 0;
    oo.format = "btf";
    assert_int_equal(tio_open_parts(two, 2, &oo, &bad, &e), TIO_E_UNSUPPORTED);
    assert_null(bad);
    assert_int_equal(tio_open_parts(NULL, 1, NULL, &bad, &e), TIO_E_ARGUMENT);
    tio_part nul = {NULL, 4};
    assert_int_equal(tio_open_parts(&nul, 1, NULL, &bad, &e), TIO_E_ARGUMENT);
    /* more parts than the limits allow */
    tio_limits lim = {0};
    lim.max_tensors = 1;
    tio_part many[5] = {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}, {"e", 1}};
    oo.format = NULL;
    oo.limits = &lim;
    assert_int_equal(tio_open_parts(many, 5, &oo, &bad, &e), TIO_E_LIMIT);

    /* tenbin multipart: the data part is lent; the message outlives the container */
    so.format = "tenbin";
    assert_int_equal(tio_message_encode(r, &so, &m, &e), TIO_OK);
    assert_int_equal(tio_message_part_count(m), 2);
    assert_ptr_equal(tio_message_part(m, 1).data, tio_tensor_data(rt));
    tio_container_free(r);
    tio_container_free(c);
    assert_true(((const float *)tio_message_part(m, 1).data)[4095] == 2047.5f);
    tio_message_free(m);
    tio_message_free(NULL);
}

/* tio_save_options.options: syntax and keys are checked by the core. */
static void test_format_options(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    tio_error e;
    tio_save_options so = {0};
    so.format = "tenbin";
    const char *bad[] = {"seqno=1", "x", "=1", "a=1,b"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        so.options = bad[i];
        assert_int_equal(tio_check_save(c, &so, &e), TIO_E_ARGUMENT);
        assert_true(strstr(e.message, "option") != NULL);
    }
    so.options = "";
    assert_int_equal(tio_check_save(c, &so, &e), TIO_OK);
    if (tio_format_description("zio")) {
        so.format = "zio";
        so.options = "seqno=1,seqno=2";
        assert_int_equal(tio_check_save(c, &so, &e), TIO_E_ARGUMENT);
        assert_non_null(strstr(e.message, "twice"));
        so.options = "nosuch=1";
        assert_int_equal(tio_check_save(c, &so, &e), TIO_E_ARGUMENT);
        so.options = "seqno=1,level=4";
        assert_int_equal(tio_check_save(c, &so, &e), TIO_OK);
    } else {
        fail_msg("the zio format is not registered");
    }
    tio_container_free(c);
}

/* tio_container_hold: a container keeps the ones it holds alive until it is
 * finally released (with what they hold), however often one is held; a hold
 * that would close a cycle (itself, or a container holding it through
 * others) is refused, and so are NULLs. */
static void count_release(void *ctx) { ++*(int *)ctx; }

/* Tensor i's name in the find tests: "t<i>", but every 11th unnamed, every
 * 7th the name of the one before it (a duplicate), and tensor 5 "". */
static const char *find_name(size_t i, char *buf, size_t cap) {
    if (i % 11 == 10) return NULL;
    if (i == 5) return "";
    snprintf(buf, cap, "t%zu", i % 7 == 6 ? i - 1 : i);
    return buf;
}

static const tio_tensor *find_linear(const tio_container *c, const char *name) {
    for (size_t i = 0; i < tio_container_count(c); i++) {
        const char *n = tio_tensor_name(tio_container_tensor(c, i));
        if (n && strcmp(n, name) == 0) return tio_container_tensor(c, i);
    }
    return NULL;
}

static void add_named(tio_container *c, const char *name) {
    static const uint8_t b[1] = {7};
    tio_tensor_desc d = {0};
    d.name = name;
    d.dtype = TIO_UINT8;
    d.data = b;
    d.nbytes = 1;
    tio_error e;
    assert_int_equal(tio_container_add(c, &d, TIO_ADD_BORROW, NULL, &e), TIO_OK);
}

/* Every name of tensors 0..n-1 (and some that are not there) found as the
 * search in order finds it: the first of duplicates, by position. */
static void check_finds(const tio_container *c, size_t n) {
    char buf[32];
    for (size_t i = 0; i <= n; i++) {
        const char *name = find_name(i, buf, sizeof buf);
        if (!name) name = "t-unnamed";
        const tio_tensor *t = tio_container_find(c, name), *want = find_linear(c, name);
        assert_ptr_equal(t, want);
        if (t) assert_ptr_equal(tio_container_tensor(c, tio_tensor_index(t)), t);
    }
}

typedef struct find_job {
    const tio_container *c;
    size_t n, bad;
} find_job;

static void *find_all(void *arg) {
    find_job *j = arg;
    char buf[32];
    for (size_t i = 0; i < j->n; i++) {
        snprintf(buf, sizeof buf, "t%zu", i);
        const tio_tensor *t = tio_container_find(j->c, buf);
        if (!t || tio_tensor_index(t) != i) j->bad++;
    }
    return NULL;
}

static void test_container_find(void **state) {
    (void)state;
    assert_null(tio_container_find(NULL, "t0"));
    assert_int_equal(tio_tensor_index(NULL), 0);
    /* finds between adds: the index made at 9 tensors, kept up to date by
     * the adds, made again larger when half full */
    tio_container *c = tio_container_new();
    assert_non_null(c);
    assert_null(tio_container_find(c, NULL));
    char buf[32];
    size_t n = 3000;
    for (size_t i = 0; i < n; i++) {
        add_named(c, find_name(i, buf, sizeof buf));
        if (i < 40 || i % 257 == 0) check_finds(c, i + 1);
        else assert_non_null(tio_container_find(c, "t0"));
    }
    check_finds(c, n);
    assert_int_equal(tio_tensor_index(tio_container_find(c, "t12")), 12); /* 13's name too */
    assert_null(tio_container_find(c, "t13"));
    assert_int_equal(tio_tensor_index(tio_container_find(c, "")), 5);
    assert_null(tio_container_find(c, "t10")); /* unnamed */
    tio_container_free(c);
    /* the first finds from four threads at once, on a container no find
     * has indexed yet: each makes an index, one is kept */
    c = tio_container_new();
    assert_non_null(c);
    for (size_t i = 0; i < 5000; i++) {
        snprintf(buf, sizeof buf, "t%zu", i);
        add_named(c, buf);
    }
    find_job jobs[4];
    pthread_t th[4];
    for (int k = 0; k < 4; k++) {
        jobs[k] = (find_job){c, 5000, 0};
        assert_int_equal(pthread_create(&th[k], NULL, find_all, &jobs[k]), 0);
    }
    for (int k = 0; k < 4; k++) {
        pthread_join(th[k], NULL);
        assert_int_equal(jobs[k].bad, 0);
    }
    tio_container_free(c);
}

/* Names that collide in the low 16 bits of unseeded FNV-1a, the hash the
 * readers' tables used: FNV's low bits depend on the low bits alone, so
 * stage by stage two 2-byte blocks that take the low 16 bits of the state to
 * the same value give 2^stages names of one slot (Joux's multicollision). */
#define FLOOD_STAGES 12
static void flood_names(char (*names)[2 * FLOOD_STAGES + 1]) {
    uint16_t low = (uint16_t)0xcbf29ce484222325u;
    uint16_t pair[FLOOD_STAGES][2];
    uint32_t *seen = malloc(65536 * sizeof *seen);
    assert_non_null(seen);
    for (int st = 0; st < FLOOD_STAGES; st++) {
        for (size_t k = 0; k < 65536; k++) seen[k] = UINT32_MAX;
        int found = 0;
        for (uint32_t x = 0x0101; x <= 0xffff && !found; x++) {
            uint8_t b0 = (uint8_t)(x >> 8), b1 = (uint8_t)x;
            if (!b0 || !b1) continue;
            uint64_t h = ((uint64_t)low ^ b0) * 0x100000001b3u;
            h = (h ^ b1) * 0x100000001b3u;
            uint16_t to = (uint16_t)h;
            if (seen[to] != UINT32_MAX) {
                pair[st][0] = (uint16_t)seen[to];
                pair[st][1] = (uint16_t)x;
                low = to;
                found = 1;
            }
            seen[to] = x;
        }
        assert_true(found);
    }
    free(seen);
    for (uint32_t i = 0; i < (1u << FLOOD_STAGES); i++) {
        for (int st = 0; st < FLOOD_STAGES; st++) {
            uint16_t x = pair[st][(i >> st) & 1];
            names[i][2 * st] = (char)(x >> 8);
            names[i][2 * st + 1] = (char)(x & 0xff);
        }
        names[i][2 * FLOOD_STAGES] = 0;
    }
}

/* The tables of names read from files hash with tio__hash_str (seeded, its
 * high bits mixed in): names made to share one slot of unseeded FNV-1a
 * spread over the slots, whatever the seed (a reader's table: its address).
 * ONNX's scopes, the TFLite raise's names, the ONNX writer's scopes, zip
 * member names and a streamed shard's extensions took O(n^2) on them. */
static void test_hash_flood(void **state) {
    (void)state;
    size_t n = 1u << FLOOD_STAGES;
    char(*names)[2 * FLOOD_STAGES + 1] = malloc(n * sizeof *names);
    assert_non_null(names);
    flood_names(names);
    uint8_t *hit = calloc(65536, 1);
    assert_non_null(hit);
    for (int round = 0; round < 3; round++) {
        uint64_t seed = round ? tio__hash_seed(&names[round]) : 0;
        size_t distinct = 0, unseeded = 0;
        uint64_t slot0 = 0;
        memset(hit, 0, 65536);
        for (size_t i = 0; i < n; i++) {
            uint64_t f = 0xcbf29ce484222325u; /* the old hash: one slot for all */
            for (const char *c = names[i]; *c; c++) f = (f ^ (uint8_t)*c) * 0x100000001b3u;
            if (!i) slot0 = f & 0xffff;
            unseeded += (f & 0xffff) == slot0;
            size_t k = (size_t)tio__hash_str(seed, names[i]) & 0xffff;
            distinct += !hit[k];
            hit[k] = 1;
            assert_int_equal(tio__hash_bytes(seed, names[i], strlen(names[i])),
                             tio__hash_str(seed, names[i]));
        }
        assert_int_equal(unseeded, n);
        /* 4,096 names in 65,536 slots at random: ~3,970 distinct */
        assert_true(distinct > 3800);
    }
    free(hit);
    free(names);
}

static void test_container_hold(void **state) {
    (void)state;
    tio_container *a = tio_container_new(), *b = tio_container_new(), *c = tio_container_new();
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    int rel_a = 0, rel_b = 0;
    tio_error e;
    assert_int_equal(tio_container_on_release(a, count_release, &rel_a, &e), TIO_OK);
    assert_int_equal(tio_container_on_release(b, count_release, &rel_b, &e), TIO_OK);
    static const float v[3] = {1, 2, 3};
    int64_t shape[1] = {3};
    tio_tensor_desc d = {0};
    d.name = "v";
    d.dtype = TIO_FLOAT32;
    d.rank = 1;
    d.shape = shape;
    d.data = v;
    d.nbytes = sizeof v;
    assert_int_equal(tio_container_add(b, &d, TIO_ADD_BORROW, NULL, &e), TIO_OK);
    assert_int_equal(tio_container_hold(NULL, b, &e), TIO_E_ARGUMENT);
    assert_int_equal(tio_container_hold(a, NULL, &e), TIO_E_ARGUMENT);
    assert_int_equal(tio_container_hold(a, a, &e), TIO_E_ARGUMENT);
    assert_int_equal(tio_container_hold(a, b, &e), TIO_OK);
    assert_int_equal(tio_container_hold(a, b, &e), TIO_OK); /* twice */
    assert_int_equal(tio_container_hold(b, a, &e), TIO_E_ARGUMENT);
    assert_non_null(strstr(e.message, "holds this one"));
    assert_int_equal(tio_container_hold(c, a, &e), TIO_OK);
    assert_int_equal(tio_container_hold(b, c, &e), TIO_E_ARGUMENT); /* c -> a -> b */
    size_t n = 0;
    const tio_container **r = tio__container_reach(c, &n);
    assert_non_null(r);
    assert_int_equal(n, 3); /* c, a, b: b once */
    assert_ptr_equal(r[0], c);
    assert_ptr_equal(r[1], a);
    assert_ptr_equal(r[2], b);
    free(r);
    /* the callers' holds go; c's keeps a, a's keep b */
    const tio_tensor *t = tio_container_tensor(b, 0);
    tio_container_free(b);
    tio_container_free(a);
    assert_int_equal(rel_a + rel_b, 0);
    assert_int_equal(memcmp(tio_tensor_data(t), v, sizeof v), 0);
    tio_container_free(c);
    assert_int_equal(rel_a, 1);
    assert_int_equal(rel_b, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),       cmocka_unit_test(test_status_names),
        cmocka_unit_test(test_error_format),  cmocka_unit_test(test_dtypes), cmocka_unit_test(test_string_tensor),
        cmocka_unit_test(test_half),          cmocka_unit_test(test_cursor),
        cmocka_unit_test(test_checked_sizes), cmocka_unit_test(test_container_add),
        cmocka_unit_test(test_coo),           cmocka_unit_test(test_metadata),
        cmocka_unit_test(test_format_registry), cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_atomic_save),   cmocka_unit_test(test_save_checks),
        cmocka_unit_test(test_messages),      cmocka_unit_test(test_format_options),
        cmocka_unit_test(test_container_hold), cmocka_unit_test(test_container_find),
        cmocka_unit_test(test_hash_flood),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
