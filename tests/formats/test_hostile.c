/* Hostile input: every byte of every vector's first 512 bytes replaced by
 * several values, and random buffers, decoded by every format. Nothing may
 * crash, leak or hang (run under ASan+UBSan by make test); every failure
 * must come with a message naming the format. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensio.h"
#include "tvec.h"

/* Decodes buf with every format; checks the error contract; returns the
 * number of successful decodes. */
static int decode_all(const uint8_t *buf, size_t len) {
    int ok = 0;
    for (size_t f = 0; f < tio_format_count(); f++) {
        tio_open_options o = {0};
        o.format = tio_format_name(f);
        tio_container *c = NULL;
        tio_error e;
        tio_error_clear(&e);
        int rc = tio_open_memory(buf, len, &o, &c, &e);
        if (rc == TIO_OK) {
            ok++;
            /* whatever decoded must hash and re-encode without trouble */
            for (size_t i = 0; i < tio_container_count(c); i++) {
                uint8_t h[32];
                const tio_tensor *t = tio_container_tensor(c, i);
                if (tio_tensor_numel(t) <= (1u << 24))
                    assert_int_equal(tio_tensor_sha256(t, TIO_HASH_DENSE, h, &e), TIO_OK);
            }
            void *out;
            size_t n;
            tio_save_options so = {0};
            so.format = o.format;
            if (tio_save_memory(c, &so, &out, &n, &e) == TIO_OK) tio_free(out);
            tio_container_free(c);
        } else {
            assert_null(c);
            assert_int_equal(e.code, rc);
            assert_true(e.message[0] != 0);
            assert_string_equal(e.format, o.format);
        }
    }
    return ok;
}

static void sweep_dir(const char *dir, const char *ext, size_t *files) {
    size_t n;
    char **names = tvec_list(dir, ext, &n);
    for (size_t i = 0; i < n; i++) {
        char rel[512];
        snprintf(rel, sizeof rel, "%s/%s", dir, names[i]);
        char *p = tvec_path(rel);
        uint8_t *buf;
        size_t len;
        if (!p || tvec_read(p, &buf, &len) != 0) {
            free(p);
            continue;
        }
        free(p);
        if (len > (1u << 20)) { /* large vectors: the headers are in the first bytes */
            free(buf);
            continue;
        }
        (*files)++;
        decode_all(buf, len);
        size_t lim = len < 512 ? len : 512;
        static const uint8_t vals[] = {0x00, 0xff, 0x80, 0x7f, 0x01};
        for (size_t k = 0; k < lim; k++) {
            uint8_t orig = buf[k];
            for (size_t v = 0; v < sizeof vals; v++) {
                buf[k] = vals[v];
                decode_all(buf, len);
            }
            buf[k] = (uint8_t)(orig ^ 0x40);
            decode_all(buf, len);
            buf[k] = orig;
        }
        free(buf);
    }
    tvec_list_free(names, n);
}

static void test_byte_sweep(void **state) {
    (void)state;
    size_t files = 0;
    sweep_dir("btf", ".btf", &files);
    sweep_dir("btf/malformed", ".btf", &files);
    sweep_dir("tenbin", ".ten", &files);
    sweep_dir("tenbin/malformed", ".ten", &files);
    sweep_dir("tenbin/quirks", ".ten", &files);
    sweep_dir("rten/matmul_add", ".rten", &files);
    sweep_dir("rten/small_cnn", ".rten", &files);
    sweep_dir("rten/shape_ops", ".rten", &files);
    sweep_dir("rten/int_consts", ".rten", &files);
    sweep_dir("tmfile", ".tmfile", &files);
    sweep_dir("zio", ".zmsg", &files);
    sweep_dir("zio/tensorcom", ".ten", &files);
    assert_true(files >= 84);
}

/* Decodes a multipart message with every codec (and the probe); the same
 * contract as decode_all, and a successful decode re-encodes. */
static void decode_parts_all(const tio_part *parts, size_t n) {
    static const char *const codecs[] = {NULL, "zio", "tenbin"};
    for (size_t k = 0; k < sizeof codecs / sizeof codecs[0]; k++) {
        tio_open_options o = {0};
        o.format = codecs[k];
        tio_container *c = NULL;
        tio_error e;
        tio_error_clear(&e);
        int rc = tio_open_parts(parts, n, &o, &c, &e);
        if (rc == TIO_OK) {
            for (size_t i = 0; i < tio_container_count(c); i++) {
                uint8_t h[32];
                const tio_tensor *t = tio_container_tensor(c, i);
                assert_int_equal(tio_tensor_sha256(t, TIO_HASH_DENSE, h, &e), TIO_OK);
            }
            tio_save_options so = {0};
            so.format = tio_container_format(c);
            tio_message *m = NULL;
            if (tio_message_encode(c, &so, &m, &e) == TIO_OK) tio_message_free(m);
            tio_container_free(c);
        } else {
            assert_null(c);
            assert_int_equal(e.code, rc);
            assert_true(e.message[0] != 0);
        }
    }
}

/* The golden messages' frames, each byte of the header frames (ZIO prefix
 * and label, coordinates; tensorcom headers) replaced, frames dropped and
 * duplicated. */
static void sweep_frames(const char *dir, const char *stem, size_t nframes) {
    uint8_t *bufs[8];
    tio_part parts[9];
    for (size_t k = 0; k < nframes; k++) {
        char rel[256];
        snprintf(rel, sizeof rel, "%s/%s.frame%zu.bin", dir, stem, k);
        bufs[k] = tvec_load(rel, &parts[k].size);
        assert_non_null(bufs[k]);
        parts[k].data = bufs[k];
    }
    decode_parts_all(parts, nframes);
    for (size_t k = 0; k < nframes; k++) {
        if (parts[k].size > 4096) continue; /* payload: no structure to break */
        for (size_t b = 0; b < parts[k].size; b++) {
            uint8_t orig = bufs[k][b];
            static const uint8_t vals[] = {0x00, 0xff, 0x80, '"', '9'};
            for (size_t v = 0; v < sizeof vals; v++) {
                bufs[k][b] = vals[v];
                decode_parts_all(parts, nframes);
            }
            bufs[k][b] = orig;
        }
        /* frame k dropped, then duplicated */
        tio_part alt[9];
        size_t m = 0;
        for (size_t j = 0; j < nframes; j++)
            if (j != k) alt[m++] = parts[j];
        decode_parts_all(alt, m);
        m = 0;
        for (size_t j = 0; j < nframes; j++) {
            alt[m++] = parts[j];
            if (j == k) alt[m++] = parts[j];
        }
        decode_parts_all(alt, m);
        /* each truncation of frame k */
        size_t full = parts[k].size;
        for (size_t len = 0; len < full; len += 1 + len / 16) {
            parts[k].size = len;
            decode_parts_all(parts, nframes);
        }
        parts[k].size = full;
    }
    for (size_t k = 0; k < nframes; k++) free(bufs[k]);
}

static void test_frame_sweep(void **state) {
    (void)state;
    if (!tio_format_description("zio")) fail_msg("the zio format is not registered");
    sweep_frames("zio", "tens_f32_3d", 3);
    sweep_frames("zio", "tens_nopart_default", 4);
    sweep_frames("zio", "tens_zero_size_last", 4);
    sweep_frames("zio/tensorcom", "tb_f32_3d_i16_2d", 4);
    sweep_frames("zio/tensorcom", "tb_infos_f16_u8_i64", 6);
}

static void test_random_buffers(void **state) {
    (void)state;
    uint64_t s = 0x9e3779b97f4a7c15ull;
    uint8_t buf[4096];
    for (int iter = 0; iter < 3000; iter++) {
        size_t len = (size_t)(tvec_rand(&s) % sizeof buf);
        for (size_t i = 0; i < len; i++) buf[i] = (uint8_t)tvec_rand(&s);
        /* half of them start like a real file */
        if (iter % 2 && len >= 16) memcpy(buf, "~TenBin~", 8);
        if (iter % 4 == 1 && len >= 8) { memset(buf, 0, 8); buf[0] = (uint8_t)(tvec_rand(&s) % 4); }
        if (iter % 8 == 5 && len >= 64) { /* a tm2 header whose root table is in range */
            memset(buf, 0, 8);
            buf[0] = 2;
            uint32_t root = (uint32_t)(12 + tvec_rand(&s) % (len - 28));
            for (int k = 0; k < 4; k++) buf[8 + k] = (uint8_t)(root >> (8 * k));
            uint32_t vs = (uint32_t)(12 + tvec_rand(&s) % (len - 20));
            for (int k = 0; k < 4; k++) buf[root + 8 + (uint32_t)k] = (uint8_t)(vs >> (8 * k));
            buf[vs] = 1;
            buf[vs + 1] = buf[vs + 2] = buf[vs + 3] = 0;
        }
        if (iter % 8 == 3 && len >= 32) { /* an rten V2 header over random model data */
            memcpy(buf, "RTEN\2\0\0\0\40\0\0\0\0\0\0\0", 16);
            uint64_t ml = tvec_rand(&s) % (len - 32 + 1);
            for (int k = 0; k < 8; k++) buf[16 + k] = (uint8_t)(ml >> (8 * k));
            for (int k = 0; k < 8; k++) buf[24 + k] = (uint8_t)((32 + ml) >> (8 * k));
        }
        decode_all(buf, len);
    }
}

/* Counts in headers that claim far more than the input holds are refused
 * before anything is allocated (the process would die under ASan's
 * allocator otherwise: it refuses allocations > 3 GiB by default). */
static void test_huge_counts(void **state) {
    (void)state;
    uint8_t b[1024];
    memset(b, 0, sizeof b);
    uint64_t huge[] = {UINT64_C(1) << 61, UINT64_MAX, UINT64_C(1) << 32, 127};
    for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
        for (int k = 0; k < 8; k++) b[k] = (uint8_t)(huge[i] >> (8 * k));
        tio_open_options o = {0};
        o.format = "btf";
        tio_container *c = NULL;
        tio_error e;
        assert_int_not_equal(tio_open_memory(b, sizeof b, &o, &c, &e), TIO_OK);
        assert_null(c);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_byte_sweep),
        cmocka_unit_test(test_frame_sweep),
        cmocka_unit_test(test_random_buffers),
        cmocka_unit_test(test_huge_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
