/* Truncation and bit-flip sweeps over every vector (the local copies and,
 * when it is there, ../shared/vectors, upstream files included):
 *  - every prefix length, decoded by the vector's own format. Files over
 *    1 MiB (upstream BTF files of 2,688 tensors, big models): every prefix
 *    in the first 64 KiB and the last 256 bytes and one in every 4,099 bytes
 *    between (each decode costs O(tensors); every prefix would take hours).
 *  - every byte of the header region flipped (XOR 0xff), and every single
 *    bit of the first 64 bytes, decoded by the own format and by the probe.
 * Under ASan the bytes past the prefix are poisoned (one more byte per step,
 * so the sweep stays linear), so a read past the end of the input is caught
 * as it happens; leaks are caught by LSan at exit. Every failure must keep
 * the error contract: the code returned, a message starting with the format's
 * name, an offset inside the input, no container. Whatever decodes is read
 * (see touch()). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SWEEP_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define SWEEP_ASAN 1
#endif
#ifdef SWEEP_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#include "tensio.h"
#include "tvec.h"

typedef struct sweep_stats {
    size_t files, decodes, ok, failed;
    size_t by_code[32];
} sweep_stats;

static sweep_stats S;

/* Reads what the container hands out: every byte (sha256) for inputs up to
 * 64 KiB, the first and last byte of every view for larger ones (a view
 * past the input's end always covers the input's last byte + 1, so ASan
 * still sees it; hashing megabytes per flipped byte would not finish). */
static volatile uint8_t sink;

static void touch_ends(const void *p, size_t n) {
    if (!n) return;
    const volatile uint8_t *b = p;
    sink = (uint8_t)(b[0] ^ b[n - 1]);
}

static void touch(const tio_container *c, size_t len) {
    for (size_t i = 0; i < tio_container_count(c); i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        int coo = tio_tensor_layout(t) == TIO_LAYOUT_COO;
        if (len > 65536) {
            touch_ends(tio_tensor_data(t), tio_tensor_nbytes(t));
            if (coo)
                touch_ends(tio_tensor_indices(t),
                           (size_t)tio_tensor_nnz(t) * tio_tensor_rank(t) * sizeof(int64_t));
            continue;
        }
        uint8_t h[32];
        tio_error e;
        assert_int_equal(tio_tensor_sha256(t, TIO_HASH_VALUES, h, &e), TIO_OK);
        if (coo) assert_int_equal(tio_tensor_sha256(t, TIO_HASH_INDICES, h, &e), TIO_OK);
    }
}

/* Decodes buf[0..len) as `format` (NULL: probe) and checks the contract. */
static void decode(const uint8_t *buf, size_t len, const char *format, const char *what,
                   size_t at) {
    tio_open_options o = {0};
    o.format = format;
    tio_container *c = NULL;
    tio_error e;
    tio_error_clear(&e);
    int rc = tio_open_memory(buf, len, &o, &c, &e);
    S.decodes++;
    if (rc == TIO_OK) {
        S.ok++;
        touch(c, len);
        tio_container_free(c);
        return;
    }
    S.failed++;
    S.by_code[rc >= 0 && rc < 32 ? rc : 31]++;
    int bad = c != NULL || e.code != rc || !e.message[0] || e.offset < -1 ||
              (e.offset >= 0 && (uint64_t)e.offset > len);
    if (format && !bad) {
        size_t fl = strlen(format);
        bad = strncmp(e.message, format, fl) != 0 || e.message[fl] != ':' ||
              strcmp(e.format, format) != 0;
    }
    if (bad) {
        fprintf(stderr, "%s at %zu (%zu bytes, %s): %s, offset %lld: '%s'\n", what, at, len,
                format ? format : "probe", tio_status_name(rc), (long long)e.offset,
                e.message);
        fail();
    }
}

/* The bytes holding structure: where flipped bits matter most. */
static size_t header_region(const uint8_t *buf, size_t len, const char *format, size_t *start) {
    *start = 0;
    size_t n = len < 4096 ? len : 4096;
    if ((strcmp(format, "tmfile") == 0 || strcmp(format, "tflite") == 0) && len <= 65536) n = len;
    if (strcmp(format, "rten") == 0 && len >= 32 && memcmp(buf, "RTEN", 4) == 0) {
        uint64_t off = 0, ml = 0;
        for (int k = 0; k < 8; k++) off |= (uint64_t)buf[8 + k] << (8 * k);
        for (int k = 0; k < 8; k++) ml |= (uint64_t)buf[16 + k] << (8 * k);
        if (off < len && ml <= len - off) {
            /* the header, then the FlatBuffers model data (up to 64 KiB) */
            *start = 0;
            n = (size_t)(off + (ml < 65536 ? ml : 65536));
        }
    }
    return n;
}

static void sweep_file(const char *rel, const char *format) {
    char *p = tvec_path(rel);
    assert_non_null(p);
    uint8_t *disk;
    size_t len;
    assert_int_equal(tvec_read(p, &disk, &len), 0);
    free(p);
    /* an exact-size copy: ASan's redzone starts at buf + len */
    uint8_t *buf = malloc(len ? len : 1);
    assert_non_null(buf);
    memcpy(buf, disk, len);
    free(disk);
    S.files++;

    decode(buf, len, format, rel, len);
    /* truncations, longest first, poisoning one more byte each step */
    const size_t head = 65536, tail = 256, stride = 4099;
    for (size_t L = len; L-- > 0;) {
        POISON(buf + L, 1);
        int every = len <= (1u << 20) || L < head || L >= len - tail || L % stride == 0;
        if (every) decode(buf, L, format, rel, L);
    }
    UNPOISON(buf, len);

    size_t start, n = header_region(buf, len, format, &start);
    for (size_t k = start; k < start + n; k++) {
        uint8_t orig = buf[k];
        buf[k] = (uint8_t)~orig;
        decode(buf, len, format, rel, k);
        decode(buf, len, NULL, rel, k);
        if (k < 64) {
            for (int b = 0; b < 8; b++) {
                buf[k] = (uint8_t)(orig ^ (1u << b));
                decode(buf, len, format, rel, k);
            }
        }
        buf[k] = orig;
    }
    free(buf);
}

static void sweep_dir(const char *dir, const char *ext, const char *format) {
    size_t n;
    char **names = tvec_list(dir, ext, &n);
    for (size_t i = 0; i < n; i++) {
        char rel[512];
        snprintf(rel, sizeof rel, "%s/%s", dir, names[i]);
        sweep_file(rel, format);
    }
    tvec_list_free(names, n);
}

static void report(const char *what) {
    printf("%s: %zu files, %zu decodes: %zu decoded, %zu refused (", what, S.files, S.decodes,
           S.ok, S.failed);
    int first = 1;
    for (int c = 0; c < 32; c++) {
        if (!S.by_code[c]) continue;
        printf("%s%s %zu", first ? "" : ", ", tio_status_name(c), S.by_code[c]);
        first = 0;
    }
    printf(")\n");
    memset(&S, 0, sizeof S);
}

/* Every vector of one format. */
static void sweep_format(const char *format) {
    for (const tvec_dir *d = tvec_dirs; d->dir; d++)
        if (strcmp(d->format, format) == 0) sweep_dir(d->dir, d->ext, format);
}

static void test_sweep_btf(void **state) {
    (void)state;
    sweep_format("btf");
    assert_true(S.files >= 30);
    report("btf");
}

static void test_sweep_tenbin(void **state) {
    (void)state;
    sweep_format("tenbin");
    assert_true(S.files >= 30);
    report("tenbin");
}

static void test_sweep_rten(void **state) {
    (void)state;
    sweep_format("rten");
    assert_true(S.files >= 8);
    report("rten");
}

static void test_sweep_tmfile(void **state) {
    (void)state;
    sweep_format("tmfile");
    assert_true(S.files >= 3);
    report("tmfile");
}

static void test_sweep_zio(void **state) {
    (void)state;
    sweep_format("zio");
    assert_true(S.files >= 6);
    report("zio");
}

static void test_sweep_onnx(void **state) {
    (void)state;
    sweep_format("onnx");
    assert_true(S.files >= 7);
    report("onnx");
}

static void test_sweep_onnx_tensor(void **state) {
    (void)state;
    sweep_format("onnx-tensor");
    assert_true(S.files >= 11);
    report("onnx-tensor");
}

static void test_sweep_safetensors(void **state) {
    (void)state;
    sweep_format("safetensors");
    assert_true(S.files >= 5);
    report("safetensors");
}

static void test_sweep_npy(void **state) {
    (void)state;
    sweep_format("npy");
    assert_true(S.files >= 9);
    report("npy");
}

static void test_sweep_gguf(void **state) {
    (void)state;
    sweep_format("gguf");
    assert_true(S.files >= 4);
    report("gguf");
}

static void test_sweep_npz(void **state) {
    (void)state;
    sweep_format("npz");
    assert_true(S.files >= 5);
    report("npz");
}

static void test_sweep_tflite(void **state) {
    (void)state;
    sweep_format("tflite");
    assert_true(S.files >= 8);
    report("tflite");
}

static void test_sweep_torch(void **state) {
    (void)state;
    sweep_format("torch");
    assert_true(S.files >= 3);
    report("torch");
}

int main(void) {
    tvec_note_shared();
    /* TIO_SWEEP_ONLY=test_sweep_torch runs one format's sweep */
    if (getenv("TIO_SWEEP_ONLY")) cmocka_set_test_filter(getenv("TIO_SWEEP_ONLY"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sweep_btf),    cmocka_unit_test(test_sweep_tenbin),
        cmocka_unit_test(test_sweep_rten),   cmocka_unit_test(test_sweep_tmfile),
        cmocka_unit_test(test_sweep_zio),    cmocka_unit_test(test_sweep_onnx),
        cmocka_unit_test(test_sweep_onnx_tensor),
        cmocka_unit_test(test_sweep_safetensors), cmocka_unit_test(test_sweep_npy),
        cmocka_unit_test(test_sweep_gguf),
        cmocka_unit_test(test_sweep_npz),    cmocka_unit_test(test_sweep_torch),
        cmocka_unit_test(test_sweep_tflite),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
