/* max_dense_bytes: work that follows a sparse tensor's claimed shape rather
 * than the bytes present (the dense hash, densifying saves and encodes) is
 * bounded by the container's limit, fails past it with TIO_E_LIMIT and a
 * message naming the dense size, the limit and the option that raises it, and
 * fails before anything is written. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tensio.h"
#include "tvec.h"

/* test_save_bomb checks what an allocation failure gives: under ASan and
 * TSan the allocator must return NULL for it rather than stop the process. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }
const char *__tsan_default_options(void);
const char *__tsan_default_options(void) { return "allocator_may_return_null=1"; }

/* The shape of the BTF file found by mutation (issue 15): 167 stored values
 * claiming 4.3e18 dense bytes as float32. */
static const int64_t bomb_shape[4] = {2, 6, 5, INT64_C(18014398509481988)};

/* A COO tensor with nnz values at spread-out coordinates of `shape`. */
static void add_coo(tio_container *c, const int64_t *shape, size_t rank, uint64_t nnz,
                    tio_dtype dtype) {
    int64_t *idx = calloc((size_t)nnz * rank + 1, sizeof *idx);
    uint8_t *val = calloc((size_t)nnz * tio_dtype_size(dtype) + 1, 1);
    assert_non_null(idx);
    assert_non_null(val);
    for (uint64_t i = 0; i < nnz; i++) {
        for (size_t k = 0; k < rank; k++)
            idx[i * rank + k] = (int64_t)(((uint64_t)shape[k] - 1) * i / (nnz ? nnz : 1));
        val[i * tio_dtype_size(dtype)] = (uint8_t)(i + 1);
    }
    tio_tensor_desc d = {0};
    d.dtype = dtype;
    d.rank = rank;
    d.shape = shape;
    d.layout = TIO_LAYOUT_COO;
    d.data = val;
    d.nbytes = (size_t)nnz * tio_dtype_size(dtype);
    d.nnz = nnz;
    d.indices = idx;
    tio_error e;
    int rc = tio_container_add(c, &d, 0, NULL, &e);
    if (rc != TIO_OK) fail_msg("add: %s", e.message);
    free(idx);
    free(val);
}

static void assert_limit_message(const tio_error *e, const char *dense, const char *limit) {
    assert_int_equal(e->code, TIO_E_LIMIT);
    if (!strstr(e->message, dense) || !strstr(e->message, limit) ||
        !strstr(e->message, "max_dense_bytes") || !strstr(e->message, "--max-dense-bytes"))
        fail_msg("message lacks the dense size %s, the limit %s or the option: %s", dense,
                 limit, e->message);
}

static void test_defaults(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    assert_non_null(c);
    tio_limits l;
    tio_container_get_limits(c, &l);
    assert_int_equal(l.max_dense_bytes, TIO_DEFAULT_MAX_DENSE_BYTES);
    assert_int_equal(l.max_tensors, TIO_DEFAULT_MAX_TENSORS);
    tio_limits mine = {0};
    mine.max_dense_bytes = 12345;
    assert_int_equal(tio_container_set_limits(c, &mine, NULL), TIO_OK);
    tio_container_get_limits(c, &l);
    assert_int_equal(l.max_dense_bytes, 12345);
    assert_int_equal(l.max_rank, TIO_DEFAULT_MAX_RANK); /* zero fields: defaults */
    assert_int_equal(tio_container_set_limits(c, NULL, NULL), TIO_OK);
    tio_container_get_limits(c, &l);
    assert_int_equal(l.max_dense_bytes, TIO_DEFAULT_MAX_DENSE_BYTES);
    assert_int_equal(tio_container_set_limits(NULL, NULL, NULL), TIO_E_ARGUMENT);
    tio_container_get_limits(NULL, &l); /* defaults, no crash */
    assert_int_equal(l.max_dense_bytes, TIO_DEFAULT_MAX_DENSE_BYTES);
    tio_container_free(c);
}

/* The bomb: the dense hash fails at once, the stored parts still hash. */
static void test_hash_bomb(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    add_coo(c, bomb_shape, 4, 167, TIO_FLOAT32);
    const tio_tensor *t = tio_container_tensor(c, 0);
    uint8_t h[32];
    tio_error e;
    assert_int_equal(tio_tensor_sha256(t, TIO_HASH_DENSE, h, &e), TIO_E_LIMIT);
    assert_limit_message(&e, "4323455642275677120 bytes", "268435456");
    assert_non_null(strstr(e.message, "tensor 0"));
    assert_non_null(strstr(e.message, "[2,6,5,18014398509481988]"));
    assert_int_equal(tio_tensor_sha256(t, TIO_HASH_VALUES, h, &e), TIO_OK);
    assert_int_equal(tio_tensor_sha256(t, TIO_HASH_INDICES, h, &e), TIO_OK);
    /* Raising the limit is the caller's choice; lowering it bounds more. */
    tio_limits l = {0};
    l.max_dense_bytes = 1;
    tio_container_set_limits(c, &l, NULL);
    assert_int_equal(tio_tensor_sha256(t, TIO_HASH_DENSE, h, &e), TIO_E_LIMIT);
    assert_limit_message(&e, "4323455642275677120", "max_dense_bytes 1 ");
    tio_container_free(c);
}

/* At the limit it works, one byte over it does not, and the hash is the
 * hash of tio_tensor_densify's bytes. */
static void test_hash_at_limit(void **state) {
    (void)state;
    const int64_t shape[2] = {256, 1024}; /* 1 MiB of float32 */
    tio_container *c = tio_container_new();
    add_coo(c, shape, 2, 50, TIO_FLOAT32);
    const tio_tensor *t = tio_container_tensor(c, 0);
    const size_t dense = 256u * 1024u * 4u;
    tio_limits l = {0};
    l.max_dense_bytes = dense - 1;
    tio_container_set_limits(c, &l, NULL);
    uint8_t h[32];
    tio_error e;
    assert_int_equal(tio_tensor_sha256(t, TIO_HASH_DENSE, h, &e), TIO_E_LIMIT);
    assert_limit_message(&e, "1048576 bytes", "1048575");
    l.max_dense_bytes = dense;
    tio_container_set_limits(c, &l, NULL);
    assert_int_equal(tio_tensor_sha256(t, TIO_HASH_DENSE, h, &e), TIO_OK);
    /* tio_tensor_densify writes into the caller's buffer: not limited */
    l.max_dense_bytes = 1;
    tio_container_set_limits(c, &l, NULL);
    uint8_t *buf = malloc(dense);
    assert_non_null(buf);
    assert_int_equal(tio_tensor_densify(t, buf, dense, &e), TIO_OK);
    char hex[65], hexw[65];
    tvec_sha256_hex(buf, dense, hexw);
    tvec_hex(h, 32, hex);
    assert_string_equal(hex, hexw);
    free(buf);
    tio_container_free(c);
}

/* Every way to open carries the limits into the container. */
static void test_open_carries_limits(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    const int64_t shape[1] = {1000};
    add_coo(c, shape, 1, 3, TIO_FLOAT32);
    void *buf = NULL;
    size_t n = 0;
    tio_save_options so = {0};
    so.format = "btf";
    tio_error e;
    assert_int_equal(tio_save_memory(c, &so, &buf, &n, &e), TIO_OK);
    tio_container_free(c);

    tio_limits l = {0};
    l.max_dense_bytes = 3999; /* the tensor's dense form is 4000 bytes */
    tio_open_options oo = {0};
    oo.limits = &l;
    assert_int_equal(tio_open_memory(buf, n, &oo, &c, &e), TIO_OK);
    tio_limits got;
    tio_container_get_limits(c, &got);
    assert_int_equal(got.max_dense_bytes, 3999);
    uint8_t h[32];
    assert_int_equal(tio_tensor_sha256(tio_container_tensor(c, 0), TIO_HASH_DENSE, h, &e),
                     TIO_E_LIMIT);
    assert_string_equal(e.format, "btf"); /* the source's format and offset */
    assert_true(e.offset >= 0);
    tio_container_free(c);

    /* the default, and a file */
    assert_int_equal(tio_open_memory(buf, n, NULL, &c, &e), TIO_OK);
    assert_int_equal(tio_tensor_sha256(tio_container_tensor(c, 0), TIO_HASH_DENSE, h, &e),
                     TIO_OK);
    tio_container_free(c);
    char path[] = "/tmp/tio-dense-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, buf, n), (ssize_t)n);
    close(fd);
    assert_int_equal(tio_open(path, &oo, &c, &e), TIO_OK);
    tio_container_get_limits(c, &got);
    assert_int_equal(got.max_dense_bytes, 3999);
    tio_container_free(c);
    unlink(path);

    /* a message */
    tio_part part = {buf, n};
    assert_int_equal(tio_open_parts(&part, 1, &oo, &c, &e), TIO_OK);
    tio_container_get_limits(c, &got);
    assert_int_equal(got.max_dense_bytes, 3999);
    assert_int_equal(tio_tensor_sha256(tio_container_tensor(c, 0), TIO_HASH_DENSE, h, &e),
                     TIO_E_LIMIT);
    tio_container_free(c);
    tio_free(buf);
}

static size_t count_entries(const char *dir) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

/* A densifying save past the limit fails in the check, before a byte is
 * written: no file, no temporary, whatever the output. */
static void test_save_bomb(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    add_coo(c, bomb_shape, 4, 167, TIO_FLOAT32);
    tio_save_options so = {0};
    so.format = "tenbin";
    so.flags = TIO_SAVE_DENSIFY;
    tio_error e;
    assert_int_equal(tio_check_save(c, &so, &e), TIO_E_LIMIT);
    assert_limit_message(&e, "4323455642275677120", "268435456");
    assert_string_equal(e.format, "tenbin");
    assert_int_equal(e.offset, -1); /* not an offset of the output */
    void *buf = NULL;
    size_t n = 0;
    assert_int_equal(tio_save_memory(c, &so, &buf, &n, &e), TIO_E_LIMIT);
    assert_null(buf);
    tio_message *m = NULL;
    so.format = "zio";
    assert_int_equal(tio_message_encode(c, &so, &m, &e), TIO_E_LIMIT);
    assert_null(m);
    char dir[] = "/tmp/tio-dense-dir-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/out.ten", dir);
    so.format = NULL;
    assert_int_equal(tio_save(c, path, &so, &e), TIO_E_LIMIT);
    assert_limit_message(&e, "4323455642275677120", "268435456");
    assert_int_equal(count_entries(dir), 0);

    /* Past the limit the caller raised, a message (which holds its tensors
     * whole) runs out of memory: TIO_E_NOMEM with the size, before any part
     * is made. (A file save streams the dense bytes instead, and would write
     * until the disk is full: not tried here.) */
    tio_limits l = {0};
    l.max_dense_bytes = UINT64_MAX;
    tio_container_set_limits(c, &l, NULL);
    so.format = "zio";
    assert_int_equal(tio_message_encode(c, &so, &m, &e), TIO_E_NOMEM);
    assert_null(m);
    if (!strstr(e.message, "4323455642275677120 bytes") || !strstr(e.message, "densifying"))
        fail_msg("unclear out-of-memory message: %s", e.message);
    assert_int_equal(count_entries(dir), 0);
    rmdir(dir);
    tio_container_free(c);
}

/* The limit bounds the sum over the tensors one save densifies. */
static void test_save_sum(void **state) {
    (void)state;
    const int64_t shape[1] = {150}; /* 600 bytes of float32 each */
    tio_container *c = tio_container_new();
    for (int i = 0; i < 3; i++) add_coo(c, shape, 1, 4, TIO_FLOAT32);
    tio_limits l = {0};
    l.max_dense_bytes = 1500;
    tio_container_set_limits(c, &l, NULL);
    tio_save_options so = {0};
    so.format = "tenbin";
    so.flags = TIO_SAVE_DENSIFY;
    tio_error e;
    assert_int_equal(tio_check_save(c, &so, &e), TIO_E_LIMIT);
    assert_limit_message(&e, "1800 bytes", "1500");
    assert_non_null(strstr(e.message, "tensor 2"));
    assert_non_null(strstr(e.message, "the 2 sparse tensors before it"));
    l.max_dense_bytes = 1800;
    tio_container_set_limits(c, &l, NULL);
    void *buf = NULL;
    size_t n = 0;
    assert_int_equal(tio_save_memory(c, &so, &buf, &n, &e), TIO_OK);
    /* What was written is the dense data: read back, the hashes agree. */
    tio_container *r = NULL;
    assert_int_equal(tio_open_memory(buf, n, NULL, &r, &e), TIO_OK);
    assert_int_equal(tio_container_count(r), 3);
    for (size_t i = 0; i < 3; i++) {
        uint8_t a[32], b[32];
        assert_int_equal(tio_tensor_sha256(tio_container_tensor(c, i), TIO_HASH_DENSE, a, &e),
                         TIO_OK);
        assert_int_equal(tio_tensor_sha256(tio_container_tensor(r, i), TIO_HASH_DENSE, b, &e),
                         TIO_OK);
        assert_memory_equal(a, b, 32);
    }
    tio_container_free(r);
    tio_free(buf);
    /* A format that holds COO does not densify: no limit applies. */
    l.max_dense_bytes = 1;
    tio_container_set_limits(c, &l, NULL);
    so.format = "btf";
    assert_int_equal(tio_check_save(c, &so, &e), TIO_OK);
    tio_container_free(c);
}

/* Widening while densifying counts the bytes written: tenbin has no
 * bfloat16, so 100 of them become 400 bytes of float32. */
static void test_save_widen(void **state) {
    (void)state;
    const int64_t shape[1] = {100};
    tio_container *c = tio_container_new();
    add_coo(c, shape, 1, 5, TIO_BFLOAT16); /* 200 bytes dense, 400 widened */
    tio_limits l = {0};
    l.max_dense_bytes = 399;
    tio_container_set_limits(c, &l, NULL);
    tio_save_options so = {0};
    so.format = "tenbin";
    so.flags = TIO_SAVE_DENSIFY | TIO_SAVE_WIDEN;
    tio_error e;
    void *buf = NULL;
    size_t n = 0;
    assert_int_equal(tio_save_memory(c, &so, &buf, &n, &e), TIO_E_LIMIT);
    assert_limit_message(&e, "400 bytes", "399");
    l.max_dense_bytes = 400;
    tio_container_set_limits(c, &l, NULL);
    assert_int_equal(tio_save_memory(c, &so, &buf, &n, &e), TIO_OK);
    tio_container *r = NULL;
    assert_int_equal(tio_open_memory(buf, n, NULL, &r, &e), TIO_OK);
    const tio_tensor *t = tio_container_tensor(r, 0);
    assert_int_equal(tio_tensor_dtype(t), TIO_FLOAT32);
    assert_int_equal(tio_tensor_nbytes(t), 400);
    tio_container_free(r);
    tio_free(buf);
    tio_container_free(c);
}

/* File saves stream a densified tensor (zero runs and values, no buffer of
 * its dense size): what they write is the dense tensor, for every writer that
 * densifies, with widening too. */
static void test_save_streams(void **state) {
    (void)state;
    const int64_t shape[2] = {4096, 4096}; /* 32 MiB of bfloat16, 64 MiB widened */
    static const char *fmts[] = {"tenbin", "zio"};
    char dir[] = "/tmp/tio-dense-stream-XXXXXX";
    assert_non_null(mkdtemp(dir));
    for (size_t k = 0; k < 2; k++) {
        tio_container *c = tio_container_new();
        add_coo(c, shape, 2, 1000, k ? TIO_FLOAT32 : TIO_BFLOAT16);
        tio_save_options so = {0};
        so.format = fmts[k];
        so.flags = TIO_SAVE_DENSIFY | TIO_SAVE_WIDEN | TIO_SAVE_NO_SYNC;
        char path[256];
        snprintf(path, sizeof path, "%s/out", dir);
        tio_error e;
        assert_int_equal(tio_save(c, path, &so, &e), TIO_OK);
        tio_container *r = NULL;
        tio_open_options oo = {0};
        oo.format = fmts[k];
        assert_int_equal(tio_open(path, &oo, &r, &e), TIO_OK);
        const tio_tensor *t = tio_container_tensor(r, 0);
        assert_int_equal(tio_tensor_layout(t), TIO_LAYOUT_DENSE);
        assert_int_equal(tio_tensor_dtype(t), TIO_FLOAT32);
        if (k == 0) {
            /* widened: compare with the widened dense bytes made here */
            const tio_tensor *s = tio_container_tensor(c, 0);
            size_t n = 4096u * 4096u;
            uint16_t *half = malloc(n * 2);
            float *want = malloc(n * 4);
            assert_non_null(half);
            assert_non_null(want);
            assert_int_equal(tio_tensor_densify(s, half, n * 2, &e), TIO_OK);
            for (size_t i = 0; i < n; i++) {
                uint32_t u = (uint32_t)half[i] << 16;
                memcpy(&want[i], &u, 4);
            }
            assert_int_equal(tio_tensor_nbytes(t), n * 4);
            assert_memory_equal(tio_tensor_data(t), want, n * 4);
            free(half);
            free(want);
        } else {
            uint8_t a[32], b[32];
            assert_int_equal(tio_tensor_sha256(tio_container_tensor(c, 0), TIO_HASH_DENSE, a, &e),
                             TIO_OK);
            assert_int_equal(tio_tensor_sha256(t, TIO_HASH_DENSE, b, &e), TIO_OK);
            assert_memory_equal(a, b, 32);
        }
        tio_container_free(r);
        tio_container_free(c);
        unlink(path);
    }
    rmdir(dir);
}

/* The real sparse vectors hash within the default limit, as their manifests
 * say, and each fails under a limit one byte below its dense size. */
static void test_vectors(void **state) {
    (void)state;
    static const char *names[] = {"btf/coo_float32_rank1.btf", "btf/coo_float32_rank2.btf",
                                  "btf/coo_int32_rank3.btf",   "btf/coo_int8_rank4.btf",
                                  "btf/coo_int16_odd_padding.btf", "btf/coo_btf_info_test.btf"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        size_t len = 0;
        uint8_t *buf = tvec_load(names[k], &len);
        if (!buf) continue; /* reported as skipped by tvec */
        tio_container *c = NULL;
        tio_error e;
        assert_int_equal(tio_open_memory(buf, len, NULL, &c, &e), TIO_OK);
        size_t coo = 0;
        for (size_t i = 0; i < tio_container_count(c); i++) {
            const tio_tensor *t = tio_container_tensor(c, i);
            if (tio_tensor_layout(t) != TIO_LAYOUT_COO) continue;
            coo++;
            uint8_t h[32];
            assert_int_equal(tio_tensor_sha256(t, TIO_HASH_DENSE, h, &e), TIO_OK);
            uint64_t dense = tio_tensor_numel(t) * tio_dtype_size(tio_tensor_dtype(t));
            if (dense == 0) continue;
            tio_limits l = {0};
            l.max_dense_bytes = dense - 1 ? dense - 1 : 1;
            tio_container_set_limits(c, &l, NULL);
            assert_int_equal(tio_tensor_sha256(t, TIO_HASH_DENSE, h, &e),
                             dense > 1 ? TIO_E_LIMIT : TIO_OK);
            tio_container_set_limits(c, NULL, NULL);
        }
        assert_true(coo > 0);
        tio_container_free(c);
        free(buf);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),          cmocka_unit_test(test_hash_bomb),
        cmocka_unit_test(test_hash_at_limit),     cmocka_unit_test(test_open_carries_limits),
        cmocka_unit_test(test_save_bomb),         cmocka_unit_test(test_save_sum),
        cmocka_unit_test(test_save_widen),        cmocka_unit_test(test_save_streams),
        cmocka_unit_test(test_vectors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
