/* Memory bounded by the input: every allocation the library makes while
 * decoding goes through counting wrappers (the test links with
 * -Wl,--wrap=malloc,calloc,realloc,free; jansson's allocations through
 * json_set_alloc_funcs), and the peak of live bytes during tio_open_memory
 * must stay under TIO_MEM_FACTOR × the input size + TIO_MEM_SLACK, for every
 * vector, for every vector with TIO_OPEN_COPY, for thousands of mutated
 * vectors and random buffers, and for multipart messages. Prints the worst
 * ratio seen, per format. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensio.h"
#include "tvec.h"

/* The documented bound (docs/security.md). */
#define TIO_MEM_FACTOR 4
#define TIO_MEM_SLACK (256u << 10)

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t k);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t k);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);

/* Single-threaded test: plain counters. */
static size_t live, peak;

static void *counted(void *p) {
    if (p) {
        live += malloc_usable_size(p);
        if (live > peak) peak = live;
    }
    return p;
}

void *__wrap_malloc(size_t n) { return counted(__real_malloc(n)); }
void *__wrap_calloc(size_t n, size_t k) { return counted(__real_calloc(n, k)); }
void *__wrap_realloc(void *p, size_t n) {
    size_t old = p ? malloc_usable_size(p) : 0;
    void *q = __real_realloc(p, n);
    if (!q) return NULL; /* p still live */
    live -= old;
    return counted(q);
}
void __wrap_free(void *p) {
    if (p) live -= malloc_usable_size(p);
    __real_free(p);
}
static void *json_malloc(size_t n) { return __wrap_malloc(n); }
static void json_free(void *p) { __wrap_free(p); }

/* Per format: the largest ratio peak/input among inputs of 4 KiB or more
 * (below that the container's fixed cost dominates), and the largest peak
 * for a smaller input. */
typedef struct worst {
    const char *format;
    size_t decodes;
    double ratio;
    size_t input, peak;
    char what[160];
    size_t small_peak, small_input;
} worst;

static worst W[8];

static void note(const char *format, size_t input, size_t pk, const char *what) {
    for (size_t i = 0; i < 8; i++) {
        if (W[i].format && strcmp(W[i].format, format) != 0) continue;
        W[i].format = format;
        W[i].decodes++;
        if (input < 4096) {
            if (pk > W[i].small_peak) {
                W[i].small_peak = pk;
                W[i].small_input = input;
            }
            return;
        }
        double r = (double)pk / (double)input;
        if (r > W[i].ratio) {
            W[i].ratio = r;
            W[i].input = input;
            W[i].peak = pk;
            snprintf(W[i].what, sizeof W[i].what, "%s", what);
        }
        return;
    }
}

/* Decodes and checks the bound; returns whether it decoded. */
static int measure(const uint8_t *buf, size_t len, const char *format, unsigned flags,
                   const char *what) {
    tio_open_options o = {0};
    o.format = format;
    o.flags = flags;
    tio_container *c = NULL;
    tio_error e;
    size_t base = live;
    peak = live;
    int rc = tio_open_memory(buf, len, &o, &c, &e);
    size_t pk = peak - base;
    if (rc == TIO_OK) tio_container_free(c);
    if (live != base) {
        fprintf(stderr, "%s: %zd bytes still allocated after free\n", what,
                (ssize_t)(live - base));
        fail();
    }
    note(format ? format : "probe", len, pk, what);
    if (pk > TIO_MEM_FACTOR * len + TIO_MEM_SLACK) {
        fprintf(stderr, "%s (%s, %zu bytes): peak %zu bytes allocated, above %d x input + %u\n",
                what, format ? format : "probe", len, pk, TIO_MEM_FACTOR, TIO_MEM_SLACK);
        fail();
    }
    return rc == TIO_OK;
}

static void vectors(const char *dir, const char *ext, const char *format, uint64_t *seed) {
    size_t n;
    char **names = tvec_list(dir, ext, &n);
    for (size_t i = 0; i < n; i++) {
        char rel[512];
        snprintf(rel, sizeof rel, "%s/%s", dir, names[i]);
        char *p = tvec_path(rel);
        uint8_t *buf = NULL;
        size_t len = 0;
        if (!p || tvec_read(p, &buf, &len) != 0) fail_msg("cannot read %s", rel);
        free(p);
        measure(buf, len, format, 0, rel);
        measure(buf, len, format, TIO_OPEN_COPY, rel);
        measure(buf, len, NULL, 0, rel);
        /* mutations of the structure: counts, sizes and offsets grow */
        size_t lim = len < 1024 ? len : 1024;
        for (int m = 0; m < 200 && lim; m++) {
            size_t at = (size_t)(tvec_rand(seed) % lim);
            uint8_t orig = buf[at];
            static const uint8_t vals[] = {0xff, 0x7f, 0x80, 0x40, 0x01};
            buf[at] = m % 2 ? vals[tvec_rand(seed) % 5] : (uint8_t)tvec_rand(seed);
            char what[600];
            snprintf(what, sizeof what, "%s with byte %zu = 0x%02x", rel, at, buf[at]);
            measure(buf, len, format, 0, what);
            buf[at] = orig;
        }
        free(buf);
    }
    tvec_list_free(names, n);
}

static void test_vectors_and_mutations(void **state) {
    (void)state;
    uint64_t seed = 0x6d656d6f7279ull;
    vectors("btf", ".btf", "btf", &seed);
    vectors("btf/malformed", ".btf", "btf", &seed);
    vectors("btf/upstream", ".btf", "btf", &seed);
    vectors("tenbin", ".ten", "tenbin", &seed);
    vectors("tenbin/malformed", ".ten", "tenbin", &seed);
    vectors("tenbin/quirks", ".ten", "tenbin", &seed);
    vectors("zio/tensorcom", ".ten", "tenbin", &seed);
    static const char *const models[] = {"matmul_add", "small_cnn", "shape_ops", "int_consts",
                                         "big_init"};
    for (size_t i = 0; i < 5; i++) {
        char dir[64];
        snprintf(dir, sizeof dir, "rten/%s", models[i]);
        vectors(dir, ".rten", "rten", &seed);
    }
    vectors("tmfile", ".tmfile", "tmfile", &seed);
    vectors("zio", ".zmsg", "zio", &seed);
}

static void test_random_buffers(void **state) {
    (void)state;
    uint64_t s = 0x72616e646f6dull;
    static uint8_t buf[65536];
    for (int it = 0; it < 4000; it++) {
        size_t len = (size_t)(tvec_rand(&s) % sizeof buf);
        for (size_t i = 0; i < len; i++) buf[i] = (uint8_t)(tvec_rand(&s) % 4 ? tvec_rand(&s) : 0xff);
        if (it % 3 == 0 && len >= 8) memcpy(buf, "~TenBin~", 8);
        if (it % 3 == 1 && len >= 32) memcpy(buf, "RTEN\2\0\0\0", 8);
        for (size_t f = 0; f < tio_format_count(); f++)
            measure(buf, len, tio_format_name(f), 0, "random buffer");
    }
}

/* Messages: the golden frames, each frame's header bytes mutated. */
static void test_messages(void **state) {
    (void)state;
    static const char *const stems[][2] = {{"zio", "tens_f32_3d"},
                                           {"zio", "tens_nopart_default"},
                                           {"zio/tensorcom", "tb_infos_f16_u8_i64"}};
    uint64_t s = 0x6d7367ull;
    for (size_t k = 0; k < 3; k++) {
        uint8_t *bufs[8];
        tio_part parts[8];
        size_t total = 0, n = 0;
        for (; n < 8; n++) {
            char rel[256];
            snprintf(rel, sizeof rel, "%s/%s.frame%zu.bin", stems[k][0], stems[k][1], n);
            char *p = tvec_path(rel);
            if (!p) break;
            free(p);
            bufs[n] = tvec_load(rel, &parts[n].size);
            parts[n].data = bufs[n];
            total += parts[n].size;
        }
        assert_true(n >= 2);
        for (int m = 0; m < 2000; m++) {
            size_t f = (size_t)(tvec_rand(&s) % n);
            size_t at = parts[f].size ? (size_t)(tvec_rand(&s) % (parts[f].size < 512 ? parts[f].size : 512)) : 0;
            uint8_t orig = parts[f].size ? bufs[f][at] : 0;
            if (parts[f].size) bufs[f][at] = (uint8_t)tvec_rand(&s);
            tio_open_options o = {0};
            tio_container *c = NULL;
            tio_error e;
            size_t base = live;
            peak = live;
            if (tio_open_parts(parts, n, &o, &c, &e) == TIO_OK) tio_container_free(c);
            size_t pk = peak - base;
            assert_true(live == base);
            note("message", total, pk, stems[k][1]);
            if (pk > TIO_MEM_FACTOR * total + TIO_MEM_SLACK) {
                fprintf(stderr, "%s mutated: peak %zu for %zu bytes\n", stems[k][1], pk, total);
                fail();
            }
            if (parts[f].size) bufs[f][at] = orig;
        }
        for (size_t i = 0; i < n; i++) free(bufs[i]);
    }
}

static void test_report(void **state) {
    (void)state;
    for (size_t i = 0; i < 8 && W[i].format; i++)
        printf("memory: %-7s %6zu decodes; inputs >= 4 KiB: worst peak %.3f x input (%zu bytes "
               "for %zu: %s); smaller inputs: worst peak %zu bytes (input %zu)\n",
               W[i].format, W[i].decodes, W[i].ratio, W[i].peak, W[i].input,
               W[i].what[0] ? W[i].what : "-", W[i].small_peak, W[i].small_input);
}

int main(void) {
    json_set_alloc_funcs(json_malloc, json_free);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors_and_mutations),
        cmocka_unit_test(test_random_buffers),
        cmocka_unit_test(test_messages),
        cmocka_unit_test(test_report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
