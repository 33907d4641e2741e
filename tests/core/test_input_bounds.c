/* Work that follows numbers in the input must stay proportional to the bytes
 * present (docs/security.md, "Work bounds"):
 * - tensors that alias the same bytes (many BTF offsets to one record) are
 *   refused once their data add up to more than twice the input + 64 KiB;
 * - ZIO metadata with many keys decodes in linear time (it was quadratic);
 * - a raised max_depth is capped at TIO_MAX_DEPTH_CAP.
 * Time is asserted only as a generous bound on runaway work, in a child
 * process killed by alarm(). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tensio.h"

static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* A BTF file whose n offsets all point at one int8 COO record of rank 2
 * with `nnz` values: 8 bytes of input per alias, 17·nnz bytes of data. */
static uint8_t *aliased_btf(uint64_t n, uint64_t nnz, size_t *size) {
    size_t rec = 8 + 8 * (size_t)n;
    size_t body = 16 + 16 + 16 + 16 * (size_t)nnz + 8 + (size_t)nnz;
    body += (8 - body % 8) % 8;
    uint8_t *b = calloc(rec + body, 1);
    assert_non_null(b);
    put64(b, n);
    for (uint64_t i = 0; i < n; i++) put64(b + 8 + 8 * i, rec);
    uint8_t *r = b + rec;
    put64(r, 2);    /* rank */
    r[8] = 0;       /* int8 */
    r[9] = 1;       /* COO */
    put64(r + 16, 1000);
    put64(r + 24, 1000);
    put64(r + 32, nnz); /* INDICES dims (nnz, 2) */
    put64(r + 40, 2);
    for (uint64_t i = 0; i < nnz; i++) {
        put64(r + 48 + 16 * i, i % 1000);
        put64(r + 56 + 16 * i, (i * 7) % 1000);
    }
    uint8_t *v = r + 48 + 16 * nnz;
    put64(v, nnz); /* VALUES dims (nnz) */
    for (uint64_t i = 0; i < nnz; i++) v[8 + i] = (uint8_t)(i + 1);
    *size = rec + body;
    return b;
}

static void test_aliases_refused(void **state) {
    (void)state;
    tio_container *c = NULL;
    tio_error e;
    size_t n = 0;
    /* A few aliases: readable, each one reported as overlapping. */
    uint8_t *b = aliased_btf(3, 100, &n);
    assert_int_equal(tio_open_memory(b, n, NULL, &c, &e), TIO_OK);
    assert_int_equal(tio_container_count(c), 3);
    assert_true(tio_container_warning_count(c) >= 2);
    tio_container_free(c);
    free(b);
    /* 4,000 aliases of 1,700 bytes: 6.8 MB of views from a 34 KB file. */
    b = aliased_btf(4000, 100, &n);
    assert_int_equal(tio_open_memory(b, n, NULL, &c, &e), TIO_E_LIMIT);
    assert_null(c);
    if (!strstr(e.message, "share their data") || !strstr(e.message, "twice the"))
        fail_msg("unclear message: %s", e.message);
    assert_string_equal(e.format, "btf");
    assert_true(e.offset > 0 && (size_t)e.offset < n);
    /* The check is on the sum: it stops at the first tensor past the cap,
     * which is about (2 x size + 64 KiB) / 1,700 = 80 tensors in. */
    const char *at = strstr(e.message, "tensor ");
    assert_non_null(at);
    long idx = strtol(at + 7, NULL, 10);
    assert_true(idx > 40 && idx < 120);
    free(b);
}

/* Dense aliases too: one 32 KiB record behind 1,000 offsets. */
static void test_dense_aliases_refused(void **state) {
    (void)state;
    const size_t n = 1000, d = 32768;
    size_t rec = 8 + 8 * n, size = rec + 24 + d;
    uint8_t *b = calloc(size, 1);
    assert_non_null(b);
    put64(b, n);
    for (size_t i = 0; i < n; i++) put64(b + 8 + 8 * i, rec);
    put64(b + rec, 1);
    put64(b + rec + 16, d);
    tio_container *c = NULL;
    tio_error e;
    assert_int_equal(tio_open_memory(b, size, NULL, &c, &e), TIO_E_LIMIT);
    free(b);
}

/* Decodes a ZIO message whose label holds `k` metadata keys, in a child
 * that must finish within `seconds`. */
static void zio_meta_child(size_t k, int tensor_meta) {
    size_t cap = 64 + k * 24;
    char *label = malloc(cap);
    assert_non_null(label);
    size_t at = (size_t)snprintf(label, cap, "ZIO0TENS%s",
                                 tensor_meta ? "{\"TENS\":{\"tensors\":[{\"dtype\":\"u\","
                                               "\"word\":1,\"shape\":[1],\"metadata\":{"
                                             : "{\"TENS\":{\"tensors\":[],\"metadata\":{");
    for (size_t i = 0; i < k; i++)
        at += (size_t)snprintf(label + at, cap - at, "%s\"k%zu\":%zu", i ? "," : "", i, i);
    at += (size_t)snprintf(label + at, cap - at, tensor_meta ? "}}]}}" : "}}}");
    uint8_t coords[24] = {0}, payload[1] = {7};
    tio_part parts[3] = {{label, at}, {coords, sizeof coords}, {payload, 1}};
    tio_container *c = NULL;
    tio_error e;
    int rc = tio_open_parts(parts, tensor_meta ? 3 : 2, NULL, &c, &e);
    if (rc != TIO_OK) {
        fprintf(stderr, "%s\n", e.message);
        _exit(3);
    }
    size_t got = tensor_meta ? tio_tensor_meta_count(tio_container_tensor(c, 0))
                             : tio_container_meta_count(c);
    if (got != k) _exit(4);
    const char *key = NULL;
    if (tensor_meta)
        tio_tensor_meta_at(tio_container_tensor(c, 0), 1, &key, NULL);
    else
        tio_container_meta_at(c, 1, &key, NULL);
    if (!key || strcmp(key, "k1") != 0) _exit(5); /* sorted: k0, k1, k10, … */
    tio_container_free(c);
    free(label);
    _exit(0);
}

static void run_bounded(void (*fn)(size_t, int), size_t k, int flag, unsigned seconds) {
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(seconds);
        fn(k, flag);
        _exit(0);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (WIFSIGNALED(st))
        fail_msg("%zu metadata keys: killed by signal %d (SIGALRM = over %u s: quadratic?)", k,
                 WTERMSIG(st), seconds);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

/* 200,000 keys took about 90 s when each insert scanned every key; linear,
 * it is well under a second (a few under ASan). */
static void test_zio_many_metadata_keys(void **state) {
    (void)state;
    run_bounded(zio_meta_child, 200000, 0, 30);
    run_bounded(zio_meta_child, 200000, 1, 30);
}

static void test_depth_cap(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    assert_non_null(c);
    tio_limits l = {0};
    l.max_depth = 1000000;
    assert_int_equal(tio_container_set_limits(c, &l, NULL), TIO_OK);
    tio_limits got;
    tio_container_get_limits(c, &got);
    assert_int_equal(got.max_depth, TIO_MAX_DEPTH_CAP);
    l.max_depth = 100;
    tio_container_set_limits(c, &l, NULL);
    tio_container_get_limits(c, &got);
    assert_int_equal(got.max_depth, 100);
    tio_container_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aliases_refused),
        cmocka_unit_test(test_dense_aliases_refused),
        cmocka_unit_test(test_zio_many_metadata_keys),
        cmocka_unit_test(test_depth_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
