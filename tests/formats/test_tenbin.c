/* tenbin (.ten): golden vectors, malformed files, truncation, writer edge cases. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tassert.h"
#include "tensio.h"
#include "tvec.h"

#ifndef TIO_BUILD_DIR
#define TIO_BUILD_DIR "/tmp"
#endif

static const tio_save_options save_tenbin = {.format = "tenbin"};

static void tensor_sha_hex(const tio_tensor *t, char out[65]) {
    uint8_t raw[32];
    tio_error err;
    ASSERT_OK(tio_tensor_sha256(t, TIO_HASH_DENSE, raw, &err), err, "sha256");
    tvec_hex(raw, 32, out);
}

static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Appends a chunk exactly as tenbin.write_chunk does. */
static size_t put_chunk(uint8_t *buf, size_t pos, const void *payload, size_t n) {
    memcpy(buf + pos, "~TenBin~", 8);
    put64(buf + pos + 8, n);
    if (n) memcpy(buf + pos + 16, payload, n);
    size_t padded = (n + 63) / 64 * 64;
    memset(buf + pos + 16 + n, 0, padded - n);
    return pos + 16 + padded;
}

/* A header payload: code, info, ndim, dims, then `extra` zero words. */
static size_t make_header(uint8_t *h, const char *code, const char *info, size_t ndim,
                          const int64_t *dims, size_t extra) {
    memset(h, 0, 8 * (3 + ndim + extra));
    memcpy(h, code, strlen(code));
    memcpy(h + 8, info, strlen(info));
    put64(h + 16, ndim);
    for (size_t i = 0; i < ndim; i++) put64(h + 24 + 8 * i, (uint64_t)dims[i]);
    return 8 * (3 + ndim + extra);
}

static char *make_tmpdir(void) {
    char tmpl[] = TIO_BUILD_DIR "/tenbin_test_XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

/* ------------------------------------------------------------ 1. manifests */

static void compare_with_manifest(const tio_container *c, json_t *arrays, int bigendian,
                                  const char *rel) {
    assert_int_equal(tio_container_count(c), json_array_size(arrays));
    for (size_t i = 0; i < json_array_size(arrays); i++) {
        json_t *a = json_array_get(arrays, i);
        const tio_tensor *t = tio_container_tensor(c, i);
        assert_non_null(t);
        assert_string_equal(tio_dtype_name(tio_tensor_dtype(t)),
                            json_string_value(json_object_get(a, "dtype")));
        assert_int_equal(tio_tensor_layout(t), TIO_LAYOUT_DENSE);
        json_t *shape = json_object_get(a, "shape");
        assert_int_equal(tio_tensor_rank(t), json_array_size(shape));
        for (size_t d = 0; d < json_array_size(shape); d++)
            assert_int_equal(tio_tensor_shape(t)[d],
                             json_integer_value(json_array_get(shape, d)));
        const char *info = json_string_value(json_object_get(a, "info"));
        if (!info || !info[0])
            assert_null(tio_tensor_name(t));
        else
            assert_string_equal(tio_tensor_name(t), info);
        assert_int_equal(tio_tensor_nbytes(t),
                         json_integer_value(json_object_get(a, "nbytes")));
        json_t *hc = json_object_get(a, "header_chunk");
        if (hc)
            assert_int_equal(tio_tensor_source_offset(t),
                             json_integer_value(json_object_get(hc, "chunk_offset")));
        const char *want = json_string_value(json_object_get(a, "sha256"));
        char got[65];
        tensor_sha_hex(t, got);
        if (!bigendian) {
            if (strcmp(got, want) != 0) fprintf(stderr, "%s: array %zu sha256\n", rel, i);
            assert_string_equal(got, want);
        } else {
            /* The data are big-endian; the manifest hashes the intended LE values. */
            assert_string_not_equal(got, want);
            size_t es = tio_dtype_size(tio_tensor_dtype(t)), nb = tio_tensor_nbytes(t);
            uint8_t *sw = malloc(nb ? nb : 1);
            assert_non_null(sw);
            const uint8_t *src = tio_tensor_data(t);
            for (size_t k = 0; k < nb; k += es)
                for (size_t b = 0; b < es; b++) sw[k + b] = src[k + es - 1 - b];
            tvec_sha256_hex(sw, nb, got);
            free(sw);
            assert_string_equal(got, want);
        }
    }
}

/* 1 when the vector was checked, 0 when skipped. */
static int check_manifest(const char *reldir, const char *name) {
    char rel[512], frel[512];
    snprintf(rel, sizeof rel, "%s/%s", reldir, name);
    json_t *m = tvec_manifest(rel);
    if (!m) return 0;
    json_t *arrays = json_object_get(m, "arrays");
    const char *file = json_string_value(json_object_get(m, "file"));
    if (!json_is_array(arrays) || !file) { /* not a per-file manifest */
        json_decref(m);
        return 0;
    }
    snprintf(frel, sizeof frel, "%s/%s", reldir, file);
    char *path = tvec_path_or_skip(frel);
    if (!path) {
        json_decref(m);
        return 0;
    }
    int bigendian = strstr(reldir, "quirks") && strstr(name, "bigendian");
    uint8_t *bytes = NULL;
    size_t len = 0;
    assert_int_equal(tvec_read(path, &bytes, &len), 0);
    assert_int_equal(len, json_integer_value(json_object_get(m, "file_size")));
    char fsha[65];
    tvec_sha256_hex(bytes, len, fsha);
    assert_string_equal(fsha, json_string_value(json_object_get(m, "file_sha256")));

    tio_error err;
    tio_container *c = NULL;
    ASSERT_OK(tio_open(path, NULL, &c, &err), err, rel);
    assert_string_equal(tio_container_format(c), "tenbin");
    assert_int_equal(tio_container_warning_count(c), 0);
    compare_with_manifest(c, arrays, bigendian, rel);
    for (size_t i = 0; i < tio_container_count(c); i++)
        assert_true(tio_tensor_is_aligned(tio_container_tensor(c, i)));

    /* Re-encoding reproduces tenbin.save byte for byte. */
    void *out = NULL;
    size_t out_size = 0;
    ASSERT_OK(tio_save_memory(c, &save_tenbin, &out, &out_size, &err), err, rel);
    assert_int_equal(out_size, len);
    if (len) assert_memory_equal(out, bytes, len);
    tio_free(out);

    /* And through a file (format from the extension), then read back. */
    char *dir = make_tmpdir();
    char tpath[1024];
    snprintf(tpath, sizeof tpath, "%s/out.ten", dir);
    ASSERT_OK(tio_save(c, tpath, NULL, &err), err, tpath);
    uint8_t *back = NULL;
    size_t back_len = 0;
    assert_int_equal(tvec_read(tpath, &back, &back_len), 0);
    assert_int_equal(back_len, len);
    if (len) assert_memory_equal(back, bytes, len);
    free(back);
    tio_container *c2 = NULL;
    ASSERT_OK(tio_open(tpath, NULL, &c2, &err), err, tpath);
    compare_with_manifest(c2, arrays, bigendian, tpath);
    tio_container_free(c2);
    unlink(tpath);
    rmdir(dir);
    free(dir);

    tio_container_free(c);
    free(bytes);
    free(path);
    json_decref(m);
    return 1;
}

static void check_manifest_dir(const char *reldir, size_t *seen) {
    size_t n = 0;
    char **names = tvec_list(reldir, ".json", &n);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(names[i], "writer_rejections.json") == 0 ||
            strcmp(names[i], "INDEX.json") == 0)
            continue;
        *seen += (size_t)check_manifest(reldir, names[i]);
    }
    tvec_list_free(names, n);
}

static void test_manifests(void **state) {
    (void)state;
    size_t seen = 0;
    check_manifest_dir("tenbin", &seen);
    assert_true(seen >= 20); /* 25 in the local copy, 26 with ../shared */
    check_manifest_dir("tenbin/upstream", &seen);
    check_manifest_dir("tenbin/quirks", &seen);
    fprintf(stderr, "tenbin: %zu golden vectors read and re-encoded byte-identically\n", seen);
}

/* ------------------------------------------------------------ 2. malformed */

enum { REJECT, FINDING, VALID };

static const struct {
    const char *name;
    int verdict;
    int code; /* for REJECT */
} malformed[] = {
    {"bad_magic", REJECT, TIO_E_MAGIC},
    {"bad_magic_data_chunk", REJECT, TIO_E_MAGIC},
    {"truncated_in_magic", REJECT, TIO_E_TRUNCATED},
    {"truncated_length", REJECT, TIO_E_TRUNCATED},
    {"truncated_header_payload", REJECT, TIO_E_TRUNCATED},
    {"header_only", REJECT, TIO_E_TRUNCATED},
    {"truncated_data", REJECT, TIO_E_TRUNCATED},
    {"trailing_garbage", REJECT, TIO_E_MAGIC},
    {"negative_length", REJECT, TIO_E_CORRUPT},
    {"huge_length", REJECT, TIO_E_TRUNCATED},
    {"data_length_short", REJECT, TIO_E_CORRUPT},
    {"data_length_long", REJECT, TIO_E_CORRUPT},
    {"header_len_not_mult8", REJECT, TIO_E_CORRUPT},
    {"ndim_huge", REJECT, TIO_E_CORRUPT},
    {"ndim_negative", REJECT, TIO_E_CORRUPT},
    {"dim_negative", REJECT, TIO_E_CORRUPT},
    {"dtype_unknown", REJECT, TIO_E_DTYPE},
    {"dtype_lowercase_long", REJECT, TIO_E_DTYPE},
    {"info_nonascii", REJECT, TIO_E_CORRUPT},
    {"nonzero_padding", FINDING, 0},
    {"truncated_in_padding", FINDING, 0},
    {"ndim_10_handmade", FINDING, 0},
    {"dtype_u4", VALID, 0},
    {"empty_file", VALID, 0},
};
#define N_MALFORMED (sizeof malformed / sizeof malformed[0])

static void test_malformed(void **state) {
    (void)state;
    /* Every malformed vector has a verdict here. */
    size_t n = 0;
    char **names = tvec_list("tenbin/malformed", ".ten", &n);
    for (size_t i = 0; i < n; i++) {
        int found = 0;
        for (size_t k = 0; k < N_MALFORMED; k++) {
            size_t l = strlen(malformed[k].name);
            if (strncmp(names[i], malformed[k].name, l) == 0 && strcmp(names[i] + l, ".ten") == 0)
                found = 1;
        }
        if (!found) fprintf(stderr, "malformed/%s has no verdict in this test\n", names[i]);
        assert_true(found);
    }
    tvec_list_free(names, n);

    for (size_t k = 0; k < N_MALFORMED; k++) {
        char rel[256];
        snprintf(rel, sizeof rel, "tenbin/malformed/%s.ten", malformed[k].name);
        char *path = tvec_path_or_skip(rel);
        if (!path) continue;
        tio_error err;
        tio_container *c = NULL;
        int rc = tio_open(path, NULL, &c, &err);
        if (malformed[k].verdict == REJECT) {
            if (rc == TIO_OK) fprintf(stderr, "%s: accepted\n", rel);
            assert_int_not_equal(rc, TIO_OK);
            assert_null(c);
            if (rc != malformed[k].code)
                fprintf(stderr, "%s: got %s: %s\n", rel, tio_status_name(rc), err.message);
            assert_int_equal(rc, malformed[k].code);
            assert_int_equal(err.code, rc);
            assert_string_equal(err.format, "tenbin");
            assert_true(err.offset >= 0);
            assert_non_null(strstr(err.message, "tenbin"));
            assert_non_null(strstr(err.message, "offset "));
            assert_non_null(strstr(err.message, "array "));
        } else if (malformed[k].verdict == FINDING) {
            ASSERT_OK(rc, err, rel);
            assert_true(tio_container_warning_count(c) > 0);
            const tio_error *w = tio_container_warning(c, 0);
            assert_int_equal(w->code, TIO_E_INVALID);
            assert_true(w->offset >= 0);
            assert_non_null(strstr(w->message, "tenbin: offset "));
            tio_container_free(c);
            tio_open_options o = {.flags = TIO_OPEN_STRICT};
            c = NULL;
            rc = tio_open(path, &o, &c, &err);
            assert_int_equal(rc, TIO_E_INVALID);
            assert_null(c);
            assert_non_null(strstr(err.message, "tenbin"));
        } else {
            ASSERT_OK(rc, err, rel);
            assert_int_equal(tio_container_warning_count(c), 0);
            if (strcmp(malformed[k].name, "dtype_u4") == 0) {
                assert_int_equal(tio_container_count(c), 1);
                const tio_tensor *t = tio_container_tensor(c, 0);
                assert_int_equal(tio_tensor_dtype(t), TIO_UINT32);
                assert_int_equal(tio_tensor_rank(t), 1);
                assert_int_equal(tio_tensor_shape(t)[0], 2);
                assert_int_equal(tio_tensor_nbytes(t), 8);
            } else {
                assert_int_equal(tio_container_count(c), 0);
            }
            tio_container_free(c);
        }
        free(path);
    }
}

/* Specific messages and findings on handmade files. */
static void test_handmade(void **state) {
    (void)state;
    uint8_t buf[1024], hdr[256];
    const int64_t dims3[1] = {3};
    float vals[3] = {1, 2, 3};
    tio_error err;
    tio_container *c = NULL;
    tio_open_options forced = {.format = "tenbin"};
    tio_open_options strict = {.format = "tenbin", .flags = TIO_OPEN_STRICT};

    /* A header with an extra word after the dims: finding. */
    size_t hl = make_header(hdr, "f4", "x", 1, dims3, 1);
    size_t n = put_chunk(buf, 0, hdr, hl);
    n = put_chunk(buf, n, vals, sizeof vals);
    ASSERT_OK(tio_open_memory(buf, n, &forced, &c, &err), err, "extra word");
    assert_int_equal(tio_container_count(c), 1);
    assert_int_equal(tio_container_warning_count(c), 1);
    assert_non_null(strstr(tio_container_warning(c, 0)->message, "unused word"));
    assert_string_equal(tio_tensor_name(tio_container_tensor(c, 0)), "x");
    tio_container_free(c);
    assert_int_equal(tio_open_memory(buf, n, &strict, &c, &err), TIO_E_INVALID);

    /* A file from a big-endian host (lengths, ndim, dims swapped): the message
     * says so. A merely huge length gets no such hint (huge_length.ten). */
    hl = make_header(hdr, "f4", "", 1, dims3, 0);
    n = put_chunk(buf, 0, hdr, hl);
    n = put_chunk(buf, n, vals, sizeof vals);
    const size_t swap_at[4] = {8, 16 + 16, 16 + 24, 80 + 8}; /* len, ndim, dim, len */
    for (int w = 0; w < 4; w++) {
        uint8_t tmp[8];
        memcpy(tmp, buf + swap_at[w], 8);
        for (int i = 0; i < 8; i++) buf[swap_at[w] + (size_t)i] = tmp[7 - i];
    }
    assert_int_equal(tio_open_memory(buf, n, &forced, &c, &err), TIO_E_TRUNCATED);
    assert_non_null(strstr(err.message, "big-endian"));
    assert_non_null(strstr(err.message, "array 0"));
    char *hpath = tvec_path_or_skip("tenbin/malformed/huge_length.ten");
    if (hpath) {
        assert_int_equal(tio_open(hpath, NULL, &c, &err), TIO_E_TRUNCATED);
        assert_null(strstr(err.message, "big-endian"));
        free(hpath);
    }

    /* A long NumPy name as the dtype gets a hint; a wrong case is unknown. */
    hl = make_header(hdr, "float32", "", 1, dims3, 0);
    n = put_chunk(buf, 0, hdr, hl);
    n = put_chunk(buf, n, vals, sizeof vals);
    assert_int_equal(tio_open_memory(buf, n, &forced, &c, &err), TIO_E_DTYPE);
    assert_non_null(strstr(err.message, "\"f4\""));
    /* the chunk is named by its kind and offset: the second array's header */
    {
        uint8_t two[2048];
        size_t h2 = make_header(hdr, "f4", "", 1, dims3, 0);
        size_t m = put_chunk(two, 0, hdr, h2);
        m = put_chunk(two, m, vals, sizeof vals);
        size_t second = m;
        h2 = make_header(hdr, "F4", "", 1, dims3, 0);
        m = put_chunk(two, m, hdr, h2);
        m = put_chunk(two, m, vals, sizeof vals);
        assert_int_equal(tio_open_memory(two, m, &forced, &c, &err), TIO_E_DTYPE);
        char want[64];
        snprintf(want, sizeof want, "array 1: header chunk at offset %zu: ", second);
        if (!strstr(err.message, want)) fail_msg("'%s' not in: %s", want, err.message);
    }
    hl = make_header(hdr, "F4", "", 1, dims3, 0);
    n = put_chunk(buf, 0, hdr, hl);
    n = put_chunk(buf, n, vals, sizeof vals);
    assert_int_equal(tio_open_memory(buf, n, &forced, &c, &err), TIO_E_DTYPE);

    /* Interior NUL in the info: error. Leading NULs: stripped, a finding. */
    hl = make_header(hdr, "f4", "", 1, dims3, 0);
    memcpy(hdr + 8, "ab\0cd", 5);
    n = put_chunk(buf, 0, hdr, hl);
    n = put_chunk(buf, n, vals, sizeof vals);
    assert_int_equal(tio_open_memory(buf, n, &forced, &c, &err), TIO_E_CORRUPT);
    assert_non_null(strstr(err.message, "NUL"));
    memcpy(hdr + 8, "\0\0abc\0\0\0", 8);
    n = put_chunk(buf, 0, hdr, hl);
    n = put_chunk(buf, n, vals, sizeof vals);
    ASSERT_OK(tio_open_memory(buf, n, &forced, &c, &err), err, "leading NUL info");
    assert_string_equal(tio_tensor_name(tio_container_tensor(c, 0)), "abc");
    assert_int_equal(tio_container_warning_count(c), 1);
    tio_container_free(c);

    /* A dtype code after leading NULs: read (the reference strips them), a finding. */
    hl = make_header(hdr, "", "", 1, dims3, 0);
    memcpy(hdr + 3, "f4", 2);
    n = put_chunk(buf, 0, hdr, hl);
    n = put_chunk(buf, n, vals, sizeof vals);
    ASSERT_OK(tio_open_memory(buf, n, &forced, &c, &err), err, "leading NUL dtype");
    assert_int_equal(tio_tensor_dtype(tio_container_tensor(c, 0)), TIO_FLOAT32);
    assert_int_equal(tio_container_warning_count(c), 1);
    tio_container_free(c);

    /* Limits: rank, tensor count, header bytes. */
    const int64_t ones[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    hl = make_header(hdr, "f4", "", 12, ones, 0);
    n = put_chunk(buf, 0, hdr, hl);
    n = put_chunk(buf, n, vals, 4);
    tio_limits lim = {.max_rank = 4};
    tio_open_options limited = {.format = "tenbin", .limits = &lim};
    assert_int_equal(tio_open_memory(buf, n, &limited, &c, &err), TIO_E_LIMIT);
    ASSERT_OK(tio_open_memory(buf, n, &forced, &c, &err), err, "rank 12");
    assert_int_equal(tio_tensor_rank(tio_container_tensor(c, 0)), 12);
    assert_true(tio_container_warning_count(c) >= 1); /* ndim > 9 */
    tio_container_free(c);
    lim.max_rank = 0;
    lim.max_header_bytes = 64;
    assert_int_equal(tio_open_memory(buf, n, &limited, &c, &err), TIO_E_LIMIT);
    lim.max_header_bytes = 0;
    hl = make_header(hdr, "f4", "", 1, dims3, 0);
    n = 0;
    for (int k = 0; k < 3; k++) {
        n = put_chunk(buf, n, hdr, hl);
        n = put_chunk(buf, n, vals, sizeof vals);
    }
    lim.max_tensors = 2;
    assert_int_equal(tio_open_memory(buf, n, &limited, &c, &err), TIO_E_LIMIT);
    assert_non_null(strstr(err.message, "array 2"));
    lim.max_tensors = 3;
    ASSERT_OK(tio_open_memory(buf, n, &limited, &c, &err), err, "3 arrays");
    assert_int_equal(tio_container_count(c), 3);
    tio_container_free(c);

    /* Shape whose byte size overflows. */
    const int64_t big[2] = {INT64_C(1) << 40, INT64_C(1) << 40};
    hl = make_header(hdr, "f4", "", 2, big, 0);
    n = put_chunk(buf, 0, hdr, hl);
    n = put_chunk(buf, n, vals, 4);
    assert_int_equal(tio_open_memory(buf, n, &forced, &c, &err), TIO_E_OVERFLOW);

    /* Probe and registry. */
    assert_string_equal(tio_format_probe(buf, n), "tenbin");
    assert_null(tio_format_probe(buf, 0));
    assert_string_equal(tio_format_for_path("a/b.ten"), "tenbin");
    assert_int_equal(tio_format_caps("tenbin"), TIO_CAP_NAMES);
    assert_true(tio_format_supports_dtype("tenbin", TIO_UINT32));
    assert_false(tio_format_supports_dtype("tenbin", TIO_BOOL));
    assert_false(tio_format_supports_dtype("tenbin", TIO_BFLOAT16));
    /* An empty buffer, forced: zero arrays. */
    ASSERT_OK(tio_open_memory(buf, 0, &forced, &c, &err), err, "empty");
    assert_int_equal(tio_container_count(c), 0);
    tio_container_free(c);
}

/* ---------------------------------------------------------- 3. truncation */

static void sweep(const char *name) {
    char rel[256], frel[256];
    snprintf(rel, sizeof rel, "tenbin/%s.json", name);
    json_t *m = tvec_manifest(rel);
    if (!m) return;
    snprintf(frel, sizeof frel, "tenbin/%s.ten", name);
    char *path = tvec_path_or_skip(frel);
    if (!path) {
        json_decref(m);
        return;
    }
    uint8_t *bytes;
    size_t len;
    assert_int_equal(tvec_read(path, &bytes, &len), 0);
    json_t *arrays = json_object_get(m, "arrays");
    size_t na = json_array_size(arrays);
    tio_open_options forced = {.format = "tenbin"};
    tio_open_options strict = {.format = "tenbin", .flags = TIO_OPEN_STRICT};
    for (size_t k = 0; k <= len; k++) {
        /* An exactly-sized copy, so that any overread is caught by ASan. */
        uint8_t *p = malloc(k ? k : 1);
        assert_non_null(p);
        memcpy(p, bytes, k);
        size_t complete = 0; /* arrays wholly present (incl. padding) */
        int in_pad = 0;      /* k ends inside the last data chunk's padding */
        for (size_t j = 0; j < na; j++) {
            json_t *dc = json_object_get(json_array_get(arrays, j), "data_chunk");
            size_t dend = (size_t)json_integer_value(json_object_get(dc, "payload_offset")) +
                          (size_t)json_integer_value(json_object_get(dc, "length"));
            size_t cend = dend + (size_t)json_integer_value(json_object_get(dc, "padding"));
            if (k >= cend) complete = j + 1;
            else if (k >= dend) in_pad = 1, complete = j + 1;
        }
        size_t boundary = 0;
        if (complete) {
            json_t *dc = json_object_get(json_array_get(arrays, complete - 1), "data_chunk");
            boundary = (size_t)json_integer_value(json_object_get(dc, "payload_offset")) +
                       (size_t)json_integer_value(json_object_get(dc, "length")) +
                       (size_t)json_integer_value(json_object_get(dc, "padding"));
        }
        int ok = in_pad || k == boundary;
        tio_error err;
        tio_container *c = NULL;
        int rc = tio_open_memory(p, k, &forced, &c, &err);
        if ((rc == TIO_OK) != ok)
            fprintf(stderr, "%s prefix %zu: rc %s (%s), expected %s\n", name, k,
                    tio_status_name(rc), rc ? err.message : "", ok ? "OK" : "an error");
        if (ok) {
            assert_int_equal(rc, TIO_OK);
            assert_int_equal(tio_container_count(c), complete);
            assert_int_equal(tio_container_warning_count(c) > 0, in_pad);
            for (size_t j = 0; j < complete; j++) {
                char got[65];
                tensor_sha_hex(tio_container_tensor(c, j), got);
                assert_string_equal(got, json_string_value(json_object_get(
                                             json_array_get(arrays, j), "sha256")));
            }
            tio_container_free(c);
            c = NULL;
            rc = tio_open_memory(p, k, &strict, &c, &err);
            assert_int_equal(rc, in_pad ? TIO_E_INVALID : TIO_OK);
            tio_container_free(c);
        } else {
            assert_int_equal(rc, TIO_E_TRUNCATED);
            assert_null(c);
            assert_non_null(strstr(err.message, "tenbin: offset "));
        }
        free(p);
    }
    free(bytes);
    free(path);
    json_decref(m);
}

static void test_truncation(void **state) {
    (void)state;
    sweep("multi_infos");
    sweep("rank0_float32");
    sweep("empty_mixed");
}

/* ------------------------------------------------------------ 4. writing */

static tio_tensor *add(tio_container *c, const char *name, tio_dtype dt, size_t rank,
                       const int64_t *shape, const void *data, size_t nbytes) {
    tio_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.dtype = dt;
    d.rank = rank;
    d.shape = shape;
    d.layout = TIO_LAYOUT_DENSE;
    d.data = data;
    d.nbytes = nbytes;
    tio_tensor *t = NULL;
    tio_error err;
    ASSERT_OK(tio_container_add(c, &d, 0, &t, &err), err, "tio_container_add");
    return t;
}

/* Saves with flags and reopens the bytes (the reopened container owns a copy). */
static int save_reopen(const tio_container *c, unsigned flags, tio_container **out,
                       uint8_t **bytes, size_t *len, tio_error *err) {
    tio_save_options so = {.format = "tenbin", .flags = flags};
    void *buf = NULL;
    size_t n = 0;
    *out = NULL;
    int rc = tio_check_save(c, &so, err);
    int rc2 = tio_save_memory(c, &so, &buf, &n, err);
    assert_int_equal(rc, rc2);
    if (rc2) return rc2;
    /* Probed by content; 0 bytes can only be named. */
    tio_open_options oo = {.format = n ? NULL : "tenbin", .flags = TIO_OPEN_COPY | TIO_OPEN_STRICT};
    tio_error e2;
    ASSERT_OK(tio_open_memory(buf, n, &oo, out, &e2), e2, "reopen");
    if (bytes) {
        *bytes = malloc(n ? n : 1);
        memcpy(*bytes, buf, n);
        *len = n;
    }
    tio_free(buf);
    return TIO_OK;
}

static void test_write_uint32(void **state) {
    (void)state;
    tio_container *c = tio_container_new(), *r;
    const uint32_t v[4] = {0, 1, 0xFFFFFFFFu, 0x12345678u};
    const int64_t shape[1] = {4};
    add(c, "u32", TIO_UINT32, 1, shape, v, sizeof v);
    uint8_t *bytes;
    size_t len;
    tio_error err;
    ASSERT_OK(save_reopen(c, 0, &r, &bytes, &len, &err), err, "uint32");
    /* Exactly what a fixed tenbin.save writes. */
    uint8_t want[160], hdr[64];
    size_t hl = make_header(hdr, "u4", "u32", 1, shape, 0);
    uint8_t le[16];
    for (int i = 0; i < 4; i++)
        for (int b = 0; b < 4; b++) le[4 * i + b] = (uint8_t)(v[i] >> (8 * b));
    size_t n = put_chunk(want, 0, hdr, hl);
    n = put_chunk(want, n, le, sizeof le);
    assert_int_equal(len, n);
    assert_memory_equal(bytes, want, n);
    const tio_tensor *t = tio_container_tensor(r, 0);
    assert_int_equal(tio_tensor_dtype(t), TIO_UINT32);
    assert_string_equal(tio_tensor_name(t), "u32");
    assert_memory_equal(tio_tensor_data(t), le, sizeof le);
    free(bytes);
    tio_container_free(r);
    tio_container_free(c);
}

static void test_write_rank0_and_empty(void **state) {
    (void)state;
    tio_container *c = tio_container_new(), *r;
    const double x = 3.5;
    const int64_t eshape[3] = {3, 0, 2};
    add(c, NULL, TIO_FLOAT64, 0, NULL, &x, sizeof x);
    add(c, NULL, TIO_FLOAT32, 3, eshape, NULL, 0);
    uint8_t *bytes;
    size_t len;
    tio_error err;
    ASSERT_OK(save_reopen(c, 0, &r, &bytes, &len, &err), err, "rank0/empty");
    /* rank 0: header 24 bytes + 40 padding, data 8 + 56; empty: header 48 + 16, then a bare 16. */
    assert_int_equal(len, 80 + 80 + 80 + 16);
    assert_int_equal(bytes[8], 24);
    assert_int_equal(bytes[80 + 8], 8);
    assert_int_equal(bytes[160 + 8], 48);
    assert_int_equal(bytes[240 + 8], 0);
    assert_int_equal(tio_container_count(r), 2);
    const tio_tensor *t = tio_container_tensor(r, 0);
    assert_int_equal(tio_tensor_rank(t), 0);
    assert_int_equal(tio_tensor_numel(t), 1);
    assert_int_equal(tio_tensor_nbytes(t), 8);
    assert_null(tio_tensor_name(t));
    assert_memory_equal(tio_tensor_data(t), &x, 8);
    t = tio_container_tensor(r, 1);
    assert_int_equal(tio_tensor_rank(t), 3);
    assert_memory_equal(tio_tensor_shape(t), eshape, sizeof eshape);
    assert_int_equal(tio_tensor_nbytes(t), 0);
    assert_int_equal(tio_tensor_numel(t), 0);
    assert_null(tio_tensor_name(t));
    free(bytes);
    tio_container_free(r);
    tio_container_free(c);

    /* No tensors: 0 bytes, which reads back as zero arrays. */
    c = tio_container_new();
    ASSERT_OK(save_reopen(c, 0, &r, &bytes, &len, &err), err, "zero tensors");
    assert_int_equal(len, 0);
    assert_int_equal(tio_container_count(r), 0);
    free(bytes);
    tio_container_free(r);
    tio_container_free(c);
}

static void test_write_names(void **state) {
    (void)state;
    const int64_t shape[1] = {2};
    const int16_t v[2] = {-1, 2};
    tio_container *c, *r;
    tio_error err;

    c = tio_container_new();
    add(c, "abcdefgh", TIO_INT16, 1, shape, v, sizeof v);
    ASSERT_OK(save_reopen(c, 0, &r, NULL, NULL, &err), err, "8 chars");
    assert_string_equal(tio_tensor_name(tio_container_tensor(r, 0)), "abcdefgh");
    tio_container_free(r);
    tio_container_free(c);

    c = tio_container_new();
    add(c, "ok", TIO_INT16, 1, shape, v, sizeof v);
    add(c, "abcdefghi", TIO_INT16, 1, shape, v, sizeof v);
    assert_int_equal(save_reopen(c, 0, &r, NULL, NULL, &err), TIO_E_LOSSY);
    assert_non_null(strstr(err.message, "tenbin"));
    assert_non_null(strstr(err.message, "tensor 1"));
    ASSERT_OK(save_reopen(c, TIO_SAVE_DROP_NAMES, &r, NULL, NULL, &err), err, "drop");
    assert_string_equal(tio_tensor_name(tio_container_tensor(r, 0)), "ok");
    assert_null(tio_tensor_name(tio_container_tensor(r, 1)));
    tio_container_free(r);
    tio_container_free(c);

    /* the empty name is a name, and an all-zero info field is none */
    c = tio_container_new();
    add(c, "", TIO_INT16, 1, shape, v, sizeof v);
    assert_int_equal(save_reopen(c, 0, &r, NULL, NULL, &err), TIO_E_LOSSY);
    assert_non_null(strstr(err.message, "the empty name"));
    ASSERT_OK(save_reopen(c, TIO_SAVE_DROP_NAMES, &r, NULL, NULL, &err), err, "drop empty");
    assert_null(tio_tensor_name(tio_container_tensor(r, 0)));
    tio_container_free(r);
    tio_container_free(c);

    c = tio_container_new();
    add(c, "caf\xc3\xa9", TIO_INT16, 1, shape, v, sizeof v);
    assert_int_equal(save_reopen(c, 0, &r, NULL, NULL, &err), TIO_E_LOSSY);
    ASSERT_OK(save_reopen(c, TIO_SAVE_DROP_NAMES, &r, NULL, NULL, &err), err, "drop");
    assert_null(tio_tensor_name(tio_container_tensor(r, 0)));
    tio_container_free(r);
    tio_container_free(c);
}

static void test_write_rank_limit(void **state) {
    (void)state;
    const int64_t ones[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    const float v = 1;
    tio_container *c, *r;
    tio_error err;

    c = tio_container_new();
    add(c, NULL, TIO_FLOAT32, 9, ones, &v, sizeof v);
    ASSERT_OK(save_reopen(c, 0, &r, NULL, NULL, &err), err, "rank 9");
    assert_int_equal(tio_tensor_rank(tio_container_tensor(r, 0)), 9);
    tio_container_free(r);
    tio_container_free(c);

    c = tio_container_new();
    add(c, NULL, TIO_FLOAT32, 10, ones, &v, sizeof v);
    assert_int_equal(save_reopen(c, 0, &r, NULL, NULL, &err), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(err.message, "9"));
    assert_int_equal(save_reopen(c, TIO_SAVE_DENSIFY | TIO_SAVE_DROP_NAMES |
                                        TIO_SAVE_DROP_METADATA | TIO_SAVE_WIDEN,
                                 &r, NULL, NULL, &err),
                     TIO_E_UNSUPPORTED);
    tio_container_free(c);
}

static void test_write_widen_densify(void **state) {
    (void)state;
    tio_container *c, *r;
    tio_error err;

    /* bool -> uint8 only with TIO_SAVE_WIDEN. */
    const uint8_t b[3] = {1, 0, 1};
    const int64_t s3[1] = {3};
    c = tio_container_new();
    add(c, "flags", TIO_BOOL, 1, s3, b, sizeof b);
    assert_int_equal(save_reopen(c, 0, &r, NULL, NULL, &err), TIO_E_LOSSY);
    ASSERT_OK(save_reopen(c, TIO_SAVE_WIDEN, &r, NULL, NULL, &err), err, "widen bool");
    const tio_tensor *t = tio_container_tensor(r, 0);
    assert_int_equal(tio_tensor_dtype(t), TIO_UINT8);
    assert_string_equal(tio_tensor_name(t), "flags");
    assert_memory_equal(tio_tensor_data(t), b, 3);
    tio_container_free(r);
    tio_container_free(c);

    /* bfloat16 -> float32 with TIO_SAVE_WIDEN. */
    const uint16_t bf[2] = {0x3F80, 0xC040}; /* 1.0, -3.0 */
    const int64_t s2[1] = {2};
    c = tio_container_new();
    add(c, NULL, TIO_BFLOAT16, 1, s2, bf, sizeof bf);
    assert_int_equal(save_reopen(c, 0, &r, NULL, NULL, &err), TIO_E_LOSSY);
    ASSERT_OK(save_reopen(c, TIO_SAVE_WIDEN, &r, NULL, NULL, &err), err, "widen bf16");
    t = tio_container_tensor(r, 0);
    assert_int_equal(tio_tensor_dtype(t), TIO_FLOAT32);
    const float want_f[2] = {1.0f, -3.0f};
    assert_memory_equal(tio_tensor_data(t), want_f, sizeof want_f);
    tio_container_free(r);
    tio_container_free(c);

    /* COO -> dense only with TIO_SAVE_DENSIFY. */
    const int64_t shape[2] = {2, 3};
    const float vals[2] = {5, 7};
    const int64_t idx[4] = {0, 1, 1, 2};
    tio_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = "sp";
    d.dtype = TIO_FLOAT32;
    d.rank = 2;
    d.shape = shape;
    d.layout = TIO_LAYOUT_COO;
    d.data = vals;
    d.nbytes = sizeof vals;
    d.nnz = 2;
    d.indices = idx;
    c = tio_container_new();
    ASSERT_OK(tio_container_add(c, &d, 0, NULL, &err), err, "add COO");
    assert_int_equal(save_reopen(c, 0, &r, NULL, NULL, &err), TIO_E_LOSSY);
    ASSERT_OK(save_reopen(c, TIO_SAVE_DENSIFY, &r, NULL, NULL, &err), err, "densify");
    t = tio_container_tensor(r, 0);
    assert_int_equal(tio_tensor_layout(t), TIO_LAYOUT_DENSE);
    assert_int_equal(tio_tensor_rank(t), 2);
    assert_memory_equal(tio_tensor_shape(t), shape, sizeof shape);
    const float dense[6] = {0, 5, 0, 0, 0, 7};
    assert_int_equal(tio_tensor_nbytes(t), sizeof dense);
    assert_memory_equal(tio_tensor_data(t), dense, sizeof dense);
    assert_string_equal(tio_tensor_name(t), "sp");
    tio_container_free(r);
    tio_container_free(c);
}


/* ------------------------------------------------- tensorcom over ZeroMQ */

/* Loads the frames of a tensorcom batch from the manifest. */
static size_t load_tc_frames(json_t *batch, uint8_t **bufs, size_t *lens, tio_part *parts,
                             size_t cap) {
    size_t n = tvec_load_frames("zio/tensorcom", json_object_get(batch, "frames"), bufs, lens,
                                cap);
    for (size_t k = 0; k < n; k++) {
        parts[k].data = bufs[k];
        parts[k].size = lens[k];
    }
    return n;
}

static void check_tc_arrays(const tio_container *c, json_t *batch) {
    json_t *arrays = json_object_get(batch, "arrays");
    json_t *infos = json_object_get(batch, "infos");
    assert_int_equal(tio_container_count(c), json_array_size(arrays));
    for (size_t i = 0; i < json_array_size(arrays); i++) {
        json_t *a = json_array_get(arrays, i);
        const tio_tensor *t = tio_container_tensor(c, i);
        assert_string_equal(tio_dtype_name(tio_tensor_dtype(t)),
                            json_string_value(json_object_get(a, "dtype")));
        json_t *shape = json_object_get(a, "shape");
        assert_int_equal(tio_tensor_rank(t), json_array_size(shape));
        for (size_t d = 0; d < json_array_size(shape); d++)
            assert_int_equal(tio_tensor_shape(t)[d],
                             json_integer_value(json_array_get(shape, d)));
        char hex[65];
        tensor_sha_hex(t, hex);
        assert_string_equal(hex, json_string_value(json_object_get(a, "sha256")));
        if (json_is_array(infos))
            assert_string_equal(tio_tensor_name(t),
                                json_string_value(json_array_get(infos, i)));
        else
            assert_null(tio_tensor_name(t));
    }
}

/* Every tensorcom batch: the multipart frames decode to the manifest's
 * arrays and re-encode to the same frames; the single-frame buffer (.ten)
 * decodes as one part and re-encodes identically. */
static void test_tensorcom_frames(void **state) {
    (void)state;
    json_t *m = tvec_manifest("zio/tensorcom/manifest.json");
    if (!m) return;
    json_t *batches = json_object_get(m, "batches");
    assert_true(json_array_size(batches) >= 3);
    for (size_t b = 0; b < json_array_size(batches); b++) {
        json_t *batch = json_array_get(batches, b);
        uint8_t *bufs[16];
        size_t lens[16];
        tio_part parts[16];
        size_t n = load_tc_frames(batch, bufs, lens, parts, 16);
        tio_open_options oo = {.format = "tenbin"};
        tio_container *c = NULL;
        tio_error err;
        ASSERT_OK(tio_open_parts(parts, n, &oo, &c, &err), err, "open_parts");
        check_tc_arrays(c, batch);
        /* no format named: the first frame is not "ZIO", so tensorcom */
        tio_container *c2 = NULL;
        ASSERT_OK(tio_open_parts(parts, n, NULL, &c2, &err), err, "open_parts probe");
        assert_string_equal(tio_container_format(c2), "tenbin");
        check_tc_arrays(c2, batch);
        tio_container_free(c2);

        tio_message *msg = NULL;
        ASSERT_OK(tio_message_encode(c, &save_tenbin, &msg, &err), err, "encode");
        assert_int_equal(tio_message_part_count(msg), n);
        for (size_t k = 0; k < n; k++) {
            tio_part p = tio_message_part(msg, k);
            assert_int_equal(p.size, lens[k]);
            assert_memory_equal(p.data, bufs[k], lens[k]);
            /* data frames are lent from the container, not copied */
            if (k % 2 == 1 && lens[k])
                assert_ptr_equal(p.data, tio_tensor_data(tio_container_tensor(c, k / 2)));
        }
        /* the message keeps the container's data alive after it is freed */
        tio_container_free(c);
        for (size_t k = 1; k < n; k += 2)
            assert_memory_equal(tio_message_part(msg, k).data, bufs[k], lens[k]);
        tio_message_free(msg);

        /* single frame: the .ten buffer */
        char rel[256];
        snprintf(rel, sizeof rel, "zio/tensorcom/%s",
                 json_string_value(json_object_get(json_object_get(batch, "single"), "file")));
        size_t slen;
        uint8_t *single = tvec_load(rel, &slen);
        assert_non_null(single);
        tio_part sp = {single, slen};
        ASSERT_OK(tio_open_parts(&sp, 1, NULL, &c, &err), err, "open single");
        check_tc_arrays(c, batch);
        tio_save_options so = {.format = "tenbin", .flags = TIO_SAVE_SINGLE_PART};
        ASSERT_OK(tio_message_encode(c, &so, &msg, &err), err, "encode single");
        assert_int_equal(tio_message_part_count(msg), 1);
        assert_int_equal(tio_message_part(msg, 0).size, slen);
        assert_memory_equal(tio_message_part(msg, 0).data, single, slen);
        char hex[65];
        tvec_sha256_hex(single, slen, hex);
        assert_string_equal(hex, json_string_value(json_object_get(
                                     json_object_get(batch, "single"), "sha256")));
        tio_message_free(msg);
        tio_container_free(c);
        free(single);
        for (size_t k = 0; k < n; k++) free(bufs[k]);
    }
    json_decref(m);
}

/* Malformed tensorcom messages: each class gets its code. */
static void test_tensorcom_malformed(void **state) {
    (void)state;
    uint8_t hdr[40]; /* f4 [2,3]: dtype, info, ndim, 2 dims */
    memset(hdr, 0, sizeof hdr);
    memcpy(hdr, "f4", 2);
    hdr[16] = 2;
    hdr[24] = 2;
    hdr[32] = 3;
    uint8_t data[24] = {0};
    tio_open_options oo = {.format = "tenbin"};
    tio_error err;
    tio_container *c = NULL;
    struct {
        const char *what;
        int code;
        size_t n;
        size_t sizes[4];
        int mutate; /* which header byte to change, or -1 */
        uint8_t value;
    } cases[] = {
        {"odd frame count", TIO_E_CORRUPT, 3, {40, 24, 40, 0}, -1, 0},
        {"data frame too short", TIO_E_CORRUPT, 2, {40, 20, 0, 0}, -1, 0},
        {"data frame too long", TIO_E_CORRUPT, 2, {40, 24, 0, 0}, 32, 2},
        {"header not a multiple of 8", TIO_E_CORRUPT, 2, {39, 24, 0, 0}, -1, 0},
        {"header too short", TIO_E_CORRUPT, 2, {16, 24, 0, 0}, -1, 0},
        {"unknown dtype", TIO_E_DTYPE, 2, {40, 24, 0, 0}, 0, 'x'},
        {"ndim beyond the frame", TIO_E_CORRUPT, 2, {40, 24, 0, 0}, 16, 9},
        {"negative dim", TIO_E_CORRUPT, 2, {40, 24, 0, 0}, 39, 0x80},
        {"info not ASCII", TIO_E_CORRUPT, 2, {40, 24, 0, 0}, 8, 0xC3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t h[40];
        memcpy(h, hdr, sizeof h);
        if (cases[i].mutate >= 0) h[cases[i].mutate] = cases[i].value;
        tio_part parts[4];
        for (size_t k = 0; k < cases[i].n; k++) {
            parts[k].data = k % 2 ? (const void *)data : (const void *)h;
            parts[k].size = cases[i].sizes[k];
        }
        int rc = tio_open_parts(parts, cases[i].n, &oo, &c, &err);
        if (rc != cases[i].code)
            fprintf(stderr, "%s: got %s (%s)\n", cases[i].what, tio_status_name(rc),
                    err.message);
        assert_int_equal(rc, cases[i].code);
        assert_null(c);
        assert_string_equal(err.format, "tenbin");
    }
    /* the valid one, for contrast */
    tio_part ok[2] = {{hdr, 40}, {data, 24}};
    ASSERT_OK(tio_open_parts(ok, 2, &oo, &c, &err), err, "valid");
    assert_int_equal(tio_container_count(c), 1);
    tio_container_free(c);
    /* more arrays than max_tensors */
    tio_limits lim = {0};
    lim.max_tensors = 1;
    tio_part four[4] = {{hdr, 40}, {data, 24}, {hdr, 40}, {data, 24}};
    tio_open_options lo = {.format = "tenbin", .limits = &lim};
    assert_int_equal(tio_open_parts(four, 4, &lo, &c, &err), TIO_E_LIMIT);
    /* a format without options refuses one */
    tio_container *e = tio_container_new();
    tio_save_options so = {.format = "tenbin", .options = "seqno=1"};
    tio_message *msg = NULL;
    assert_int_equal(tio_message_encode(e, &so, &msg, &err), TIO_E_ARGUMENT);
    assert_null(msg);
    tio_container_free(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifests),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_handmade),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_write_uint32),
        cmocka_unit_test(test_write_rank0_and_empty),
        cmocka_unit_test(test_write_names),
        cmocka_unit_test(test_write_rank_limit),
        cmocka_unit_test(test_write_widen_densify),
        cmocka_unit_test(test_tensorcom_frames),
        cmocka_unit_test(test_tensorcom_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
