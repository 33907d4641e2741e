/* tio__crc32 (src/core/crc32.c) against zlib's crc32(): every length up to
 * 1024 and a few large odd ones, every start alignment 0..63, continuation
 * from any earlier value and at every split point, on the folding path and
 * on the forced generic (zlib) path and the 128-bit folding beside the
 * wide one; the job's thread, over buffers and
 * over a file's bytes read by pread(). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include "core/internal.h"
#include "tvec.h"

/* Deterministic bytes (xorshift), different for every seed. */
static void fill(uint8_t *p, size_t n, uint32_t seed) {
    uint32_t x = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (uint8_t)(x >> 24);
    }
}

/* zlib's answer (every length here is far below 4 GiB) */
static uint32_t ref(uint32_t crc, const uint8_t *p, size_t n) {
    assert_true(n <= UINT_MAX);
    return (uint32_t)crc32(crc, p, (uInt)n);
}

static void check(uint32_t crc, const uint8_t *p, size_t n) {
    uint32_t want = ref(crc, p, n);
    assert_int_equal(tio__crc32(crc, p, n), want);
    assert_int_equal(tio__crc32_with(crc, p, n, 0), want);
    assert_int_equal(tio__crc32_with(crc, p, n, 1), want);
    assert_int_equal(tio__crc32_with(crc, p, n, 2), want);
}

static void test_known_values(void **state) {
    (void)state;
    /* the CRC-32 check value, and zlib's empty-input identity */
    assert_int_equal(tio__crc32(0, "123456789", 9), 0xCBF43926u);
    assert_int_equal(tio__crc32(0, "", 0), 0);
    assert_int_equal(tio__crc32(0x12345678u, "", 0), 0x12345678u);
    assert_int_equal(tio__crc32(0, NULL, 0), 0);
    static uint8_t zeros[4096];
    check(0, zeros, sizeof zeros);
    uint8_t ones[777];
    memset(ones, 0xFF, sizeof ones);
    check(0, ones, sizeof ones);
    check(0xFFFFFFFFu, ones, sizeof ones);
}

static void test_lengths(void **state) {
    (void)state;
    uint8_t *b = malloc(1024);
    assert_non_null(b);
    fill(b, 1024, 1);
    for (size_t n = 0; n <= 1024; n++) {
        check(0, b, n);
        check(0xDEADBEEFu, b + (1024 - n), n);
    }
    free(b);
}

static void test_large(void **state) {
    (void)state;
    const size_t sizes[] = {(1u << 20) + 1, (1u << 20) + 63, (3u << 20) + 4093};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        uint8_t *b = malloc(sizes[i]);
        assert_non_null(b);
        fill(b, sizes[i], (uint32_t)i + 7);
        check(0, b, sizes[i]);
        check(0x9E3779B9u, b, sizes[i]);
        free(b);
    }
}

static void test_alignments(void **state) {
    (void)state;
    enum { N = 64 + 4096 + 64 };
    uint8_t *b = malloc(N);
    assert_non_null(b);
    fill(b, N, 3);
    /* around the 64-byte steps, the wide path's start (1024) and its
     * 256-byte steps */
    const size_t lens[] = {255, 256, 257, 319, 320, 1000, 1023, 1024, 1025, 1279, 1280, 1343, 2111,
                           4096};
    for (size_t a = 0; a < 64; a++)
        for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) check(0, b + a, lens[i]);
    free(b);
}

static void test_continuation(void **state) {
    (void)state;
    enum { N = 300 };
    uint8_t b[N];
    fill(b, N, 5);
    uint32_t whole = ref(0, b, N);
    for (size_t k = 0; k <= N; k++) {
        assert_int_equal(tio__crc32(tio__crc32(0, b, k), b + k, N - k), whole);
        assert_int_equal(tio__crc32_with(tio__crc32_with(0, b, k, 1), b + k, N - k, 1), whole);
    }
    /* large pieces after a small start, both paths mixed */
    enum { L = 70000 };
    uint8_t *big = malloc(L);
    assert_non_null(big);
    fill(big, L, 9);
    uint32_t all = ref(0, big, L);
    for (size_t k = 1; k < L; k = k * 3 + 1) {
        assert_int_equal(tio__crc32(tio__crc32_with(0, big, k, 1), big + k, L - k), all);
        assert_int_equal(tio__crc32_with(tio__crc32(0, big, k), big + k, L - k, 1), all);
    }
    free(big);
}

static void test_which_path(void **state) {
    (void)state;
    int f = tio__crc32_folds();
    assert_true(f >= 0 && f <= 2);
#if defined(__x86_64__) && defined(__GNUC__)
    /* against what the kernel says the processor has (and the OS saves) */
    FILE *ci = fopen("/proc/cpuinfo", "r");
    char line[8192];
    int pclmul = -1, wide = -1;
    while (ci && fgets(line, sizeof line, ci))
        if (strncmp(line, "flags", 5) == 0) {
            pclmul = strstr(line, " pclmulqdq") != NULL;
            wide = strstr(line, " avx512f") && strstr(line, " vpclmulqdq");
            break;
        }
    if (ci) fclose(ci);
    if (pclmul < 0) { /* no /proc: what the compiler's runtime found */
        pclmul = __builtin_cpu_supports("pclmul") != 0;
        wide = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq");
    }
    assert_int_equal(f, pclmul ? 1 + wide : 0);
#else
    assert_int_equal(f, 0);
#endif
}

/* The job: CRC-32s of buffers by a thread, waited for in any order, NULL
 * buffers 0; and joined before all are taken (it stops). */
static void test_job(void **state) {
    (void)state;
    enum { N = 9 };
    size_t sizes[N] = {0, 1, 255, 256, 4096, 1u << 20, 3, (1u << 20) + 17, 70000};
    const uint8_t *bufs[N];
    uint8_t *own[N];
    uint64_t seed = 5;
    for (size_t i = 0; i < N; i++) {
        own[i] = malloc(sizes[i] ? sizes[i] : 1);
        assert_non_null(own[i]);
        for (size_t k = 0; k < sizes[i]; k++) {
            seed = seed * 6364136223846793005u + 1442695040888963407u;
            own[i][k] = (uint8_t)(seed >> 56);
        }
        bufs[i] = i == 6 ? NULL : own[i];
    }
    tio_crc_job *j = tio__crc32_start(bufs, sizes, N, NULL, 0);
    assert_non_null(j);
    static const size_t order[N] = {8, 0, 3, 7, 1, 6, 2, 5, 4};
    for (size_t k = 0; k < N; k++) {
        size_t i = order[k];
        uint32_t want = bufs[i] ? (uint32_t)crc32(0, own[i], (uInt)sizes[i]) : 0;
        assert_int_equal(tio__crc32_wait(j, i), want);
    }
    assert_int_equal(tio__crc32_wait(j, N), 0); /* past the end */
    tio__crc32_join(j);
    /* joined early: the thread stops after its current buffer */
    j = tio__crc32_start(bufs, sizes, N, NULL, 0);
    assert_non_null(j);
    assert_int_equal(tio__crc32_wait(j, 0), 0);
    tio__crc32_join(j);
    tio__crc32_join(NULL);
    for (size_t i = 0; i < N; i++) free(own[i]);
}

/* Which of several mapped files (a Hugging Face index's shards) holds a
 * range: within one, across an end, in the gap between two, before the
 * first, past the last. */
static void test_mapped_find(void **state) {
    (void)state;
    static uint8_t m[300];
    const tio__mapped files[3] = {{m + 10, 90, 3, NULL}, {m + 100, 50, 4, NULL},
                                  {m + 200, 100, 5, NULL}};
    static const struct {
        size_t at, len;
        int fd; /* of the file found, or 0: none */
        size_t off;
    } cases[] = {{10, 90, 3, 0},  {0, 1, 0, 0},    {9, 2, 0, 0},     {90, 20, 0, 0},
                 {100, 50, 4, 0}, {150, 0, 4, 50}, {160, 1, 0, 0},   {199, 2, 0, 0},
                 {299, 1, 5, 99}, {299, 2, 0, 0},  {120, 10, 4, 20}, {200, 0, 5, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t off = SIZE_MAX;
        const tio__mapped *f = tio__mapped_find(files, 3, m + cases[i].at, cases[i].len, &off);
        if (cases[i].fd == 0 ? f != NULL : !f || f->fd != cases[i].fd || off != cases[i].off)
            fail_msg("case %zu: [%zu, +%zu)", i, cases[i].at, cases[i].len);
    }
    size_t off;
    assert_null(tio__mapped_find(files, 0, m + 10, 1, &off));
}

/* The job over a mapped file: buffers lying in the mapping are read from
 * the file. The "mapping" here is memory holding other bytes than the
 * file, so each CRC says where its bytes came from: the file's for the
 * buffers inside (one of them longer than a read, one ending at the
 * mapping's end), the memory's for one outside it; past the file's end
 * (the file cut short after it was mapped) the rest of a buffer from the
 * mapping; with fd -1 the memory's. */
static void test_job_reads_file(void **state) {
    (void)state;
    size_t size = (600u << 10) + 123;
    uint8_t *file = malloc(size), *map = malloc(size), *other = malloc(5000);
    assert_non_null(file);
    assert_non_null(map);
    assert_non_null(other);
    fill(file, size, 41);
    fill(map, size, 42);
    fill(other, 5000, 43);
    const char *tmp = getenv("TMPDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/tio_crc_job_%ld", tmp && tmp[0] ? tmp : "/tmp",
             (long)getpid());
    assert_int_equal(tvec_write(path, file, size), 0);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    enum { N = 5 };
    size_t at[N] = {0, 17, 300000, 0, size - 9};
    size_t sizes[N] = {0, 70000, (300u << 10) + 5, 5000, 9};
    const uint8_t *bufs[N];
    for (size_t i = 0; i < N; i++) bufs[i] = i == 3 ? other : map + at[i];
    for (int pass = 0; pass < 3; pass++) { /* the file; fd -1; the file cut short */
        if (pass == 2) assert_int_equal(truncate(path, 300000 + 1000), 0);
        tio__mapped f = {map, size, pass == 1 ? -1 : fd, NULL};
        tio_crc_job *j = tio__crc32_start(bufs, sizes, N, &f, 1);
        assert_non_null(j);
        for (size_t i = N; i-- > 0;) {
            uint32_t want;
            if (i == 3)
                want = ref(0, other, 5000);
            else if (pass == 1)
                want = ref(0, map + at[i], sizes[i]);
            else if (pass == 2 && at[i] >= 300000) /* 1000 bytes of the file, then the map */
                want = at[i] == 300000 ? ref(ref(0, file + at[i], 1000), map + at[i] + 1000,
                                             sizes[i] - 1000)
                                       : ref(0, map + at[i], sizes[i]);
            else
                want = ref(0, file + at[i], sizes[i]);
            if (tio__crc32_wait(j, i) != want) fail_msg("pass %d, buffer %zu", pass, i);
        }
        tio__crc32_join(j);
    }
    close(fd);
    unlink(path);
    free(other);
    free(map);
    free(file);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_values), cmocka_unit_test(test_lengths),
        cmocka_unit_test(test_large),        cmocka_unit_test(test_alignments),
        cmocka_unit_test(test_continuation), cmocka_unit_test(test_which_path),
        cmocka_unit_test(test_job),
        cmocka_unit_test(test_job_reads_file),
        cmocka_unit_test(test_mapped_find),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
