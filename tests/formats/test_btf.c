/* BTF (TFRT Binary Tensor Format): golden vectors, malformed inputs,
 * truncation and mutation sweeps, writer byte-identity, API edge cases. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tensio.h"
#include "tvec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPECT(cond, ...)                 \
    do {                                  \
        if (!(cond)) fail_msg(__VA_ARGS__); \
    } while (0)

static char *str_cat3(const char *a, const char *b, const char *c) {
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
    char *p = malloc(la + lb + lc + 1);
    assert_non_null(p);
    memcpy(p, a, la);
    memcpy(p + la, b, lb);
    memcpy(p + la + lb, c, lc + 1);
    return p;
}

static void sha_hex(const tio_tensor *t, int what, char out[65]) {
    uint8_t md[32];
    tio_error err;
    int rc = tio_tensor_sha256(t, what, md, &err);
    EXPECT(rc == TIO_OK, "tio_tensor_sha256(%d): %s", what, err.message);
    tvec_hex(md, 32, out);
}

/* Compares tensor t with a manifest entry (top-level or upstream). */
static void check_tensor(const tio_tensor *t, json_t *m, const char *label, size_t idx) {
    assert_non_null(t);
    const char *dt = json_string_value(json_object_get(m, "dtype"));
    EXPECT(dt && strcmp(tio_dtype_name(tio_tensor_dtype(t)), dt) == 0,
           "%s[%zu]: dtype %s, expected %s", label, idx, tio_dtype_name(tio_tensor_dtype(t)),
           dt ? dt : "?");
    EXPECT(tio_tensor_name(t) == NULL, "%s[%zu]: has a name", label, idx);
    EXPECT(tio_tensor_meta_count(t) == 0, "%s[%zu]: has metadata", label, idx);
    json_t *shape = json_object_get(m, "shape");
    EXPECT(json_is_array(shape), "%s[%zu]: no shape", label, idx);
    EXPECT(tio_tensor_rank(t) == json_array_size(shape), "%s[%zu]: rank %zu, expected %zu",
           label, idx, tio_tensor_rank(t), json_array_size(shape));
    assert_non_null(tio_tensor_shape(t));
    for (size_t k = 0; k < json_array_size(shape); k++)
        EXPECT(tio_tensor_shape(t)[k] == json_integer_value(json_array_get(shape, k)),
               "%s[%zu]: dim %zu differs", label, idx, k);
    int layout = (int)json_integer_value(json_object_get(m, "layout"));
    EXPECT((int)tio_tensor_layout(t) == (layout == 0 ? TIO_LAYOUT_DENSE : TIO_LAYOUT_COO),
           "%s[%zu]: layout", label, idx);
    json_t *off = json_object_get(m, "record_offset");
    if (!off) off = json_object_get(m, "offset");
    if (off)
        EXPECT(tio_tensor_source_offset(t) == json_integer_value(off),
               "%s[%zu]: source offset %lld, expected %lld", label, idx,
               (long long)tio_tensor_source_offset(t), (long long)json_integer_value(off));
    char hex[65];
    sha_hex(t, TIO_HASH_DENSE, hex);
    EXPECT(strcmp(hex, json_string_value(json_object_get(m, "sha256"))) == 0,
           "%s[%zu]: sha256 %s differs", label, idx, hex);
    if (layout == 0) {
        EXPECT(tio_tensor_nnz(t) == 0 && tio_tensor_indices(t) == NULL,
               "%s[%zu]: dense tensor has nnz/indices", label, idx);
        json_t *nb = json_object_get(m, "nbytes");
        if (nb)
            EXPECT(tio_tensor_nbytes(t) == (size_t)json_integer_value(nb),
                   "%s[%zu]: nbytes %zu", label, idx, tio_tensor_nbytes(t));
    } else {
        EXPECT(tio_tensor_nnz(t) == (uint64_t)json_integer_value(json_object_get(m, "nnz")),
               "%s[%zu]: nnz %llu", label, idx, (unsigned long long)tio_tensor_nnz(t));
        sha_hex(t, TIO_HASH_INDICES, hex);
        EXPECT(strcmp(hex, json_string_value(json_object_get(m, "indices_sha256"))) == 0,
               "%s[%zu]: indices sha256 differs", label, idx);
        sha_hex(t, TIO_HASH_VALUES, hex);
        EXPECT(strcmp(hex, json_string_value(json_object_get(m, "values_sha256"))) == 0,
               "%s[%zu]: values sha256 differs", label, idx);
        /* The flattened INDICES of the manifest, value by value. */
        json_t *ind = json_object_get(m, "indices");
        const uint8_t *ip = tio_tensor_indices(t);
        size_t n = json_array_size(ind);
        EXPECT(n == tio_tensor_nnz(t) * tio_tensor_rank(t), "%s[%zu]: indices count", label,
               idx);
        for (size_t k = 0; k < n; k++) {
            int64_t v;
            memcpy(&v, ip + 8 * k, 8);
            EXPECT(v == json_integer_value(json_array_get(ind, k)), "%s[%zu]: index %zu",
                   label, idx, k);
        }
    }
}

static tio_container *open_ok(const char *path, unsigned flags, const char *label) {
    tio_open_options o;
    memset(&o, 0, sizeof o);
    o.flags = flags;
    tio_container *c = NULL;
    tio_error err;
    tio_error_clear(&err);
    int rc = tio_open(path, &o, &c, &err);
    EXPECT(rc == TIO_OK, "%s: tio_open failed: %s (%s)", label, tio_status_name(rc),
           err.message);
    assert_non_null(c);
    EXPECT(strcmp(tio_container_format(c), "btf") == 0, "%s: format %s", label,
           tio_container_format(c));
    return c;
}

static void save_mem(const tio_container *c, unsigned flags, void **out, size_t *len,
                     const char *label) {
    tio_save_options so = {.format = "btf", .flags = flags};
    tio_error err;
    int rc = tio_save_memory(c, &so, out, len, &err);
    EXPECT(rc == TIO_OK, "%s: tio_save_memory: %s (%s)", label, tio_status_name(rc),
           err.message);
}

/* Saves c to a temporary .btf path (extension picks the format), reopens it
 * and checks that the file has the expected bytes. */
static void save_path_roundtrip(const tio_container *c, const uint8_t *want, size_t want_len,
                                const char *label) {
    char dir[] = "/tmp/tio_btf_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *path = str_cat3(dir, "/", "out.btf");
    tio_error err;
    int rc = tio_save(c, path, NULL, &err);
    EXPECT(rc == TIO_OK, "%s: tio_save: %s", label, err.message);
    uint8_t *got;
    size_t got_len;
    assert_int_equal(tvec_read(path, &got, &got_len), 0);
    EXPECT(got_len == want_len && memcmp(got, want, want_len) == 0,
           "%s: tio_save wrote %zu bytes that differ from the expected %zu", label, got_len,
           want_len);
    free(got);
    tio_container *r = open_ok(path, TIO_OPEN_STRICT, label);
    assert_int_equal(tio_container_count(r), tio_container_count(c));
    for (size_t i = 0; i < tio_container_count(c); i++) {
        char a[65], b[65];
        sha_hex(tio_container_tensor(c, i), TIO_HASH_DENSE, a);
        sha_hex(tio_container_tensor(r, i), TIO_HASH_DENSE, b);
        EXPECT(strcmp(a, b) == 0, "%s[%zu]: reread differs", label, i);
    }
    tio_container_free(r);
    unlink(path);
    rmdir(dir);
    free(path);
}

/* ------------------------------------------------ top-level golden vectors */

static void test_manifests(void **state) {
    (void)state;
    size_t n, checked = 0;
    char **names = tvec_list("btf", ".json", &n);
    for (size_t f = 0; f < n; f++) {
        if (strcmp(names[f], "writer_rejections.json") == 0) continue;
        char *rel = str_cat3("btf/", names[f], "");
        json_t *m = tvec_manifest(rel);
        free(rel);
        if (!m) continue;
        const char *file = json_string_value(json_object_get(m, "file"));
        assert_non_null(file);
        rel = str_cat3("btf/", file, "");
        char *path = tvec_path_or_skip(rel);
        free(rel);
        if (!path) {
            json_decref(m);
            continue;
        }
        uint8_t *bytes;
        size_t len;
        assert_int_equal(tvec_read(path, &bytes, &len), 0);
        assert_int_equal(len, (size_t)json_integer_value(json_object_get(m, "file_size")));
        EXPECT(tio_format_probe(bytes, len) && strcmp(tio_format_probe(bytes, len), "btf") == 0,
               "%s: probe does not say btf", file);

        /* Strict: a golden file has no finding at all. */
        tio_container *c = open_ok(path, TIO_OPEN_STRICT, file);
        json_t *ts = json_object_get(m, "tensors");
        assert_int_equal(tio_container_count(c), json_array_size(ts));
        assert_int_equal(tio_container_warning_count(c), 0);
        assert_int_equal(tio_container_source_size(c), len);
        for (size_t i = 0; i < json_array_size(ts); i++)
            check_tensor(tio_container_tensor(c, i), json_array_get(ts, i), file, i);

        /* Re-encoding gives TFRT's bytes. */
        void *out;
        size_t out_len;
        save_mem(c, 0, &out, &out_len, file);
        EXPECT(out_len == len && memcmp(out, bytes, len) == 0,
               "%s: re-encoded %zu bytes differ from the original %zu", file, out_len, len);
        tio_free(out);
        save_path_roundtrip(c, bytes, len, file);

        /* The same through memory, borrowed and copied, and without mmap. */
        tio_open_options o;
        memset(&o, 0, sizeof o);
        tio_container *c2 = NULL;
        tio_error err;
        o.flags = TIO_OPEN_COPY;
        assert_int_equal(tio_open_memory(bytes, len, &o, &c2, &err), TIO_OK);
        assert_int_equal(tio_container_count(c2), tio_container_count(c));
        tio_container_free(c2);
        o.flags = TIO_OPEN_NO_MMAP;
        assert_int_equal(tio_open(path, &o, &c2, &err), TIO_OK);
        assert_int_equal(tio_container_count(c2), tio_container_count(c));
        tio_container_free(c2);

        tio_container_free(c);
        free(bytes);
        free(path);
        json_decref(m);
        checked++;
    }
    tvec_list_free(names, n);
    assert_true(checked >= 27);
}

/* ------------------------------------------------------ upstream TFRT data */

static void test_upstream(void **state) {
    (void)state;
    json_t *index = tvec_manifest("btf/upstream/INDEX.json");
    if (!index) {
        skip();
        return;
    }
    const char *key;
    json_t *entry;
    size_t checked = 0;
    json_object_foreach(index, key, entry) {
        char *rel = str_cat3("btf/upstream/", key, "");
        char *path = tvec_path_or_skip(rel);
        free(rel);
        if (!path) continue;
        size_t kl = strlen(key);
        char *stem = malloc(kl + 1);
        assert_non_null(stem);
        memcpy(stem, key, kl + 1);
        if (kl > 4 && strcmp(stem + kl - 4, ".btf") == 0) stem[kl - 4] = 0;
        rel = str_cat3("btf/upstream/", stem, ".json");
        json_t *m = tvec_manifest(rel);
        free(rel);
        free(stem);
        assert_non_null(m);

        uint8_t *bytes;
        size_t len;
        assert_int_equal(tvec_read(path, &bytes, &len), 0);
        EXPECT(tio_format_probe(bytes, len) && strcmp(tio_format_probe(bytes, len), "btf") == 0,
               "%s: probe does not say btf", key);
        int legacy = !json_is_true(json_object_get(m, "reencode_identical"));
        tio_container *c = open_ok(path, 0, key);
        assert_int_equal(tio_container_count(c),
                         (size_t)json_integer_value(json_object_get(m, "num_tensors")));
        json_t *ts = json_object_get(m, "tensors");
        for (size_t i = 0; i < json_array_size(ts); i++) {
            json_t *t = json_array_get(ts, i);
            json_t *ix = json_object_get(t, "index");
            if (!ix) continue; /* {"...": "N more"} */
            size_t k = (size_t)json_integer_value(ix);
            check_tensor(tio_container_tensor(c, k), t, key, k);
        }
        if (legacy) {
            /* test_tensor.pre_alignment_1bef0ea8: record 2 at offset 124. */
            EXPECT(tio_container_warning_count(c) > 0, "%s: no finding for unaligned records",
                   key);
            const tio_error *w = tio_container_warning(c, 0);
            EXPECT(w->code == TIO_E_INVALID && strstr(w->message, "124") &&
                       strstr(w->message, "multiple of 8"),
                   "%s: finding '%s'", key, w->message);
            tio_open_options o;
            memset(&o, 0, sizeof o);
            o.flags = TIO_OPEN_STRICT;
            tio_container *s = NULL;
            tio_error err;
            assert_int_equal(tio_open(path, &o, &s, &err), TIO_E_INVALID);
            assert_null(s);
        } else {
            EXPECT(tio_container_warning_count(c) == 0, "%s: unexpected finding '%s'", key,
                   tio_container_warning(c, 0)->message);
        }
        void *out;
        size_t out_len;
        save_mem(c, 0, &out, &out_len, key);
        if (!legacy)
            EXPECT(out_len == len && memcmp(out, bytes, len) == 0,
                   "%s: re-encoded bytes differ", key);
        /* Either way the re-encoded file reads back strictly, same tensors. */
        tio_open_options o;
        memset(&o, 0, sizeof o);
        o.flags = TIO_OPEN_STRICT;
        tio_container *r = NULL;
        tio_error err;
        assert_int_equal(tio_open_memory(out, out_len, &o, &r, &err), TIO_OK);
        assert_int_equal(tio_container_count(r), tio_container_count(c));
        if (legacy) {
            for (size_t i = 0; i < tio_container_count(c); i++) {
                char a[65], b[65];
                sha_hex(tio_container_tensor(c, i), TIO_HASH_DENSE, a);
                sha_hex(tio_container_tensor(r, i), TIO_HASH_DENSE, b);
                EXPECT(strcmp(a, b) == 0, "%s[%zu]: re-encoded tensor differs", key, i);
            }
        }
        tio_container_free(r);
        tio_free(out);
        tio_container_free(c);
        free(bytes);
        free(path);
        json_decref(m);
        checked++;
    }
    json_decref(index);
    if (checked == 0) skip();
}

/* ---------------------------------------------------------------- malformed */

enum { REJECT, FINDING, VALID };

static const struct {
    const char *name;
    int verdict;
    int code; /* REJECT: the status */
} malformed[] = {
    {"empty_file", REJECT, TIO_E_TRUNCATED},
    {"short_header_4B", REJECT, TIO_E_TRUNCATED},
    {"num_tensors_exceeds_offsets", REJECT, TIO_E_CORRUPT},
    {"num_tensors_huge", REJECT, TIO_E_TRUNCATED},
    {"offset_past_eof", REJECT, TIO_E_BOUNDS},
    {"truncated_dims", REJECT, TIO_E_TRUNCATED},
    {"truncated_data", REJECT, TIO_E_TRUNCATED},
    {"dtype_code_10", REJECT, TIO_E_DTYPE},
    {"layout_255", REJECT, TIO_E_UNSUPPORTED},
    {"layout_2_doc_coo_value", REJECT, TIO_E_CORRUPT},
    {"coo_index_ge_dim", REJECT, TIO_E_CORRUPT},
    {"coo_negative_index", REJECT, TIO_E_CORRUPT},
    {"coo_nnz_mismatch", REJECT, TIO_E_CORRUPT},
    {"coo_indices_cols_ne_rank", REJECT, TIO_E_CORRUPT},
    {"coo_inner_headers", REJECT, TIO_E_CORRUPT},
    {"offset_unaligned", FINDING, 0},
    {"reserved_nonzero", FINDING, 0},
    {"trailing_garbage", FINDING, 0},
    {"offsets_reversed", VALID, 0},
    {"truncated_in_last_padding", VALID, 0},
    {"index_out_of_range_kernel", VALID, 0},
    {"dtype_mismatch_kernel", VALID, 0},
    {"rank_mismatch_kernel", VALID, 0},
};
#define N_MALFORMED (sizeof malformed / sizeof malformed[0])

static void test_malformed(void **state) {
    (void)state;
    json_t *index = tvec_manifest("btf/malformed/INDEX.json");
    assert_non_null(index);
    /* Every vector has a verdict here, and every verdict a vector. */
    assert_int_equal(json_object_size(index), N_MALFORMED);
    for (size_t k = 0; k < N_MALFORMED; k++) {
        char *name = str_cat3(malformed[k].name, ".btf", "");
        EXPECT(json_object_get(index, malformed[k].name) || json_object_get(index, name),
               "%s is not in malformed/INDEX.json", malformed[k].name);
        char *rel = str_cat3("btf/malformed/", name, "");
        char *path = tvec_path_or_skip(rel);
        free(rel);
        free(name);
        assert_non_null(path);
        const char *label = malformed[k].name;
        for (int forced = 0; forced < 2; forced++) {
            for (int strict = 0; strict < 2; strict++) {
                tio_open_options o;
                memset(&o, 0, sizeof o);
                o.format = forced ? "btf" : NULL; /* else probe, then the .btf extension */
                o.flags = strict ? TIO_OPEN_STRICT : 0;
                tio_container *c = NULL;
                tio_error err;
                tio_error_clear(&err);
                int rc = tio_open(path, &o, &c, &err);
                switch (malformed[k].verdict) {
                case REJECT:
                    EXPECT(rc == malformed[k].code, "%s: %s, expected %s (%s)", label,
                           tio_status_name(rc), tio_status_name(malformed[k].code),
                           err.message);
                    assert_null(c);
                    EXPECT(err.code == rc && strcmp(err.format, "btf") == 0 &&
                               strncmp(err.message, "btf: offset ", 12) == 0 &&
                               err.offset >= 0,
                           "%s: message '%s'", label, err.message);
                    break;
                case FINDING:
                    if (strict) {
                        EXPECT(rc == TIO_E_INVALID, "%s: strict gave %s", label,
                               tio_status_name(rc));
                        assert_null(c);
                        EXPECT(strncmp(err.message, "btf: offset ", 12) == 0,
                               "%s: message '%s'", label, err.message);
                    } else {
                        EXPECT(rc == TIO_OK, "%s: %s", label, err.message);
                        EXPECT(tio_container_warning_count(c) > 0, "%s: no finding", label);
                        const tio_error *w = tio_container_warning(c, 0);
                        EXPECT(w->code == TIO_E_INVALID && w->offset >= 0 &&
                                   strncmp(w->message, "btf: offset ", 12) == 0,
                               "%s: finding '%s'", label, w->message);
                        assert_int_equal(tio_container_count(c), 2);
                    }
                    break;
                default:
                    EXPECT(rc == TIO_OK, "%s: %s", label, err.message);
                    assert_int_equal(tio_container_warning_count(c), 0);
                    assert_int_equal(tio_container_count(c), 2);
                    break;
                }
                tio_container_free(c);
            }
        }
        free(path);
    }
    json_decref(index);
}

/* Specific messages and the contents of the readable malformed files. */
static void test_malformed_details(void **state) {
    (void)state;
    static const struct {
        const char *name;
        const char *needles[3];
    } msgs[] = {
        {"dtype_code_10", {"record 0 at offset 24", "dtype code 10", "expected 0..9"}},
        {"layout_255", {"record 0 at offset 24", "layout code 255", NULL}},
        {"num_tensors_huge", {"NUM_TENSORS is 2305843009213693952", "104", NULL}},
        {"num_tensors_exceeds_offsets", {"record 0", "offset 24", "expected >= 48"}},
        {"offset_past_eof", {"record 0", "10000", NULL}},
        {"coo_negative_index", {"record 0 at offset 16", "is -1", "expected 0 <= index"}},
        {"coo_index_ge_dim", {"record 0 at offset 16", "is 3", "dim 0 = 3"}},
        {"coo_nnz_mismatch", {"VALUES dims are (2)", "expected (3)", NULL}},
        {"coo_indices_cols_ne_rank", {"INDICES dims are (2, 3)", "expected (nnz, 2)", NULL}},
        {"layout_2_doc_coo_value", {"record 0 at offset 24", "layout 2", NULL}},
        {"truncated_data", {"record 0 at offset 24", "the data needs 24 bytes", NULL}},
        {"reserved_nonzero", {"record 0 at offset 24", "ab 00 00 00 00 cd", NULL}},
        {"trailing_garbage", {"8 trailing bytes", "record 1", NULL}},
        {"offset_unaligned", {"record 1 at offset 84", "multiple of 8", NULL}},
    };
    for (size_t k = 0; k < sizeof msgs / sizeof msgs[0]; k++) {
        char *rel = str_cat3("btf/malformed/", msgs[k].name, ".btf");
        char *path = tvec_path_or_skip(rel);
        free(rel);
        assert_non_null(path);
        tio_open_options o;
        memset(&o, 0, sizeof o);
        o.flags = TIO_OPEN_STRICT;
        tio_container *c = NULL;
        tio_error err;
        tio_error_clear(&err);
        assert_int_not_equal(tio_open(path, &o, &c, &err), TIO_OK);
        for (int j = 0; j < 3 && msgs[k].needles[j]; j++)
            EXPECT(strstr(err.message, msgs[k].needles[j]), "%s: '%s' lacks '%s'",
                   msgs[k].name, err.message, msgs[k].needles[j]);
        free(path);
    }

    /* offsets_reversed: tensor 0 is the f32 [2,3] record at offset 56. */
    char *path = tvec_path_or_skip("btf/malformed/offsets_reversed.btf");
    assert_non_null(path);
    tio_container *c = open_ok(path, TIO_OPEN_STRICT, "offsets_reversed");
    free(path);
    tio_tensor *t0 = tio_container_tensor(c, 0), *t1 = tio_container_tensor(c, 1);
    assert_int_equal(tio_tensor_dtype(t0), TIO_FLOAT32);
    assert_int_equal(tio_tensor_rank(t0), 2);
    assert_int_equal(tio_tensor_source_offset(t0), 56);
    assert_int_equal(tio_tensor_dtype(t1), TIO_INT8);
    assert_int_equal(tio_tensor_source_offset(t1), 24);
    const float *f = tio_tensor_data(t0);
    assert_true(f[5] == 5.0f);
    const int8_t *b = tio_tensor_data(t1);
    assert_int_equal(b[4], 4);
    /* Re-encoding puts the records in index order. */
    void *out;
    size_t out_len;
    save_mem(c, 0, &out, &out_len, "offsets_reversed");
    assert_int_equal(out_len, 112);
    uint64_t o0, o1;
    memcpy(&o0, (uint8_t *)out + 8, 8);
    memcpy(&o1, (uint8_t *)out + 16, 8);
    assert_int_equal(o0, 24);
    assert_int_equal(o1, 24 + 16 + 16 + 24);
    tio_free(out);
    tio_container_free(c);

    /* Unaligned legacy record: readable; the view may be unaligned. */
    path = tvec_path_or_skip("btf/malformed/offset_unaligned.btf");
    assert_non_null(path);
    c = open_ok(path, 0, "offset_unaligned");
    free(path);
    t1 = tio_container_tensor(c, 1);
    assert_int_equal(tio_tensor_source_offset(t1), 84);
    assert_int_equal(((const int8_t *)tio_tensor_data(t1))[3], 3);
    save_mem(c, 0, &out, &out_len, "offset_unaligned");
    assert_int_equal(out_len, 112); /* re-encoded aligned */
    tio_free(out);
    tio_container_free(c);
}

/* Findings made by patching valid files in memory. */
static tio_container *open_mem(const uint8_t *p, size_t n, unsigned flags, int *rc,
                               tio_error *err) {
    tio_open_options o;
    memset(&o, 0, sizeof o);
    o.format = "btf";
    o.flags = flags | TIO_OPEN_COPY;
    tio_container *c = NULL;
    tio_error_clear(err);
    *rc = tio_open_memory(p, n, &o, &c, err);
    return c;
}

static void expect_finding(const uint8_t *p, size_t n, const char *needle, const char *label) {
    int rc;
    tio_error err;
    tio_container *c = open_mem(p, n, 0, &rc, &err);
    EXPECT(rc == TIO_OK, "%s: %s", label, err.message);
    EXPECT(tio_container_warning_count(c) > 0, "%s: no finding", label);
    EXPECT(strstr(tio_container_warning(c, 0)->message, needle), "%s: finding '%s' lacks '%s'",
           label, tio_container_warning(c, 0)->message, needle);
    tio_container_free(c);
    c = open_mem(p, n, TIO_OPEN_STRICT, &rc, &err);
    EXPECT(rc == TIO_E_INVALID && !c, "%s: strict gave %s", label, tio_status_name(rc));
}

static uint8_t *load(const char *rel, size_t *len) {
    char *path = tvec_path_or_skip(rel);
    assert_non_null(path);
    uint8_t *b;
    assert_int_equal(tvec_read(path, &b, len), 0);
    free(path);
    return b;
}

static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void test_patched_findings(void **state) {
    (void)state;
    size_t n;
    /* dense_int8: record at 16, data 48..63, one padding byte at 63. */
    uint8_t *b = load("btf/dense_int8.btf", &n);
    assert_int_equal(n, 64);
    b[63] = 0xee;
    expect_finding(b, n, "padding byte at offset 63 is 0xee", "nonzero padding");
    free(b);

    /* coo_float32_rank1 with layout 2 (the document's COO code): read as COO,
     * reported, and re-encoded as layout 1. */
    b = load("btf/coo_float32_rank1.btf", &n);
    uint8_t *orig = malloc(n);
    assert_non_null(orig);
    memcpy(orig, b, n);
    assert_int_equal(b[16 + 9], 1);
    b[16 + 9] = 2;
    expect_finding(b, n, "layout 2", "layout 2 COO");
    int rc;
    tio_error err;
    tio_container *c = open_mem(b, n, 0, &rc, &err);
    assert_int_equal(rc, TIO_OK);
    assert_int_equal(tio_tensor_layout(tio_container_tensor(c, 0)), TIO_LAYOUT_COO);
    void *out;
    size_t out_len;
    save_mem(c, 0, &out, &out_len, "layout 2 COO");
    assert_true(out_len == n && memcmp(out, orig, n) == 0);
    tio_free(out);
    tio_container_free(c);
    free(orig);
    free(b);

    /* Two offsets to the same record: readable, reported as overlapping. */
    b = load("btf/dense_int8.btf", &n);
    uint8_t two[8 + 16 + 48];
    put64(two, 2);
    put64(two + 8, 24);
    put64(two + 16, 24);
    memcpy(two + 24, b + 16, 48);
    expect_finding(two, sizeof two, "overlaps record 0", "shared record");
    c = open_mem(two, sizeof two, 0, &rc, &err);
    assert_int_equal(tio_container_count(c), 2);
    tio_container_free(c);

    /* A gap of 8 unreferenced bytes between the offset table and the record. */
    uint8_t gap[8 + 8 + 8 + 48];
    put64(gap, 1);
    put64(gap + 8, 24);
    memset(gap + 16, 0, 8);
    memcpy(gap + 24, b + 16, 48);
    expect_finding(gap, sizeof gap, "belong to no record", "gap");

    /* NUM_TENSORS = 0 followed by bytes. */
    uint8_t zero_trail[16] = {0};
    expect_finding(zero_trail, sizeof zero_trail, "trailing", "zero tensors + trailing");
    free(b);

    /* Dims read as int64: a "negative" dim is rejected. */
    b = load("btf/dense_rank1_float32.btf", &n);
    put64(b + 32, UINT64_MAX);
    c = open_mem(b, n, 0, &rc, &err);
    EXPECT(rc == TIO_E_CORRUPT && strstr(err.message, "dim 0 is -1"), "negative dim: %s",
           err.message);
    /* Dims whose product overflows. */
    b[16] = 2; /* rank 2 */
    put64(b + 32, (uint64_t)1 << 62);
    put64(b + 40, 8);
    c = open_mem(b, n, 0, &rc, &err);
    EXPECT(rc == TIO_E_OVERFLOW && strstr(err.message, "record 0 at offset 16"),
           "overflowing dims: %s", err.message);
    free(b);

    /* Rank above the limit, before anything is read for it. */
    b = load("btf/dense_rank1_float32.btf", &n);
    put64(b + 16, (uint64_t)1 << 40);
    c = open_mem(b, n, 0, &rc, &err);
    EXPECT(rc == TIO_E_LIMIT && strstr(err.message, "rank 1099511627776"), "huge rank: %s",
           err.message);
    free(b);

    /* tio_limits. */
    b = load("btf/dense_padding_uint8_1to9.btf", &n);
    tio_limits lim = {.max_tensors = 8};
    tio_open_options o;
    memset(&o, 0, sizeof o);
    o.limits = &lim;
    c = NULL;
    assert_int_equal(tio_open_memory(b, n, &o, &c, &err), TIO_E_LIMIT);
    lim.max_tensors = 9;
    assert_int_equal(tio_open_memory(b, n, &o, &c, &err), TIO_OK);
    tio_container_free(c);
    /* 9 tensors: an 80-byte header (count + 9 offsets) */
    lim.max_header_bytes = 79;
    c = NULL;
    assert_int_equal(tio_open_memory(b, n, &o, &c, &err), TIO_E_LIMIT);
    EXPECT(strstr(err.message, "is 80 bytes") && strstr(err.message, "max_header_bytes 79"),
           "header limit: %s", err.message);
    lim.max_header_bytes = 80;
    assert_int_equal(tio_open_memory(b, n, &o, &c, &err), TIO_OK);
    tio_container_free(c);
    lim.max_header_bytes = 0;
    free(b);
    b = load("btf/dense_rank3_float32.btf", &n);
    lim.max_rank = 2;
    c = NULL;
    assert_int_equal(tio_open_memory(b, n, &o, &c, &err), TIO_E_LIMIT);
    free(b);
}

/* --------------------------------------------------------- truncation sweep */

static void sweep(const char *name) {
    char *rel = str_cat3("btf/", name, ".json");
    json_t *m = tvec_manifest(rel);
    free(rel);
    assert_non_null(m);
    rel = str_cat3("btf/", name, ".btf");
    size_t n;
    uint8_t *b = load(rel, &n);
    free(rel);
    /* The smallest readable prefix ends the payload of the last record. */
    size_t need = 8;
    json_t *ts = json_object_get(m, "tensors");
    for (size_t i = 0; i < json_array_size(ts); i++) {
        size_t e = (size_t)json_integer_value(
            json_object_get(json_array_get(ts, i), "record_end_before_padding"));
        if (e > need) need = e;
    }
    for (size_t len = 0; len <= n; len++) {
        /* An exact-size copy, so that any over-read is caught by ASan. */
        uint8_t *p = malloc(len ? len : 1);
        assert_non_null(p);
        memcpy(p, b, len);
        for (int strict = 0; strict < 2; strict++) {
            tio_open_options o;
            memset(&o, 0, sizeof o);
            o.format = "btf";
            o.flags = strict ? TIO_OPEN_STRICT : 0;
            tio_container *c = NULL;
            tio_error err;
            tio_error_clear(&err);
            int rc = tio_open_memory(p, len, &o, &c, &err);
            if (len >= need) {
                EXPECT(rc == TIO_OK, "%s prefix %zu: %s", name, len, err.message);
                assert_int_equal(tio_container_count(c), json_array_size(ts));
                assert_int_equal(tio_container_warning_count(c), 0);
            } else {
                EXPECT(rc != TIO_OK && !c && err.message[0] && strstr(err.message, "btf"),
                       "%s prefix %zu: %s", name, len, tio_status_name(rc));
            }
            tio_container_free(c);
        }
        free(p);
    }
    free(b);
    json_decref(m);
}

static void test_truncation_sweep(void **state) {
    (void)state;
    sweep("dense_padding_uint8_1to9");
    sweep("cpp_test_BTFWriteAndRead");
    sweep("coo_int16_odd_padding");
    sweep("coo_float32_rank2");
    sweep("coo_rank0");
}

/* Every byte replaced by a few values: never a crash, an error always says why. */
static void test_mutation_sweep(void **state) {
    (void)state;
    static const char *const files[] = {"btf/coo_int16_odd_padding.btf",
                                        "btf/cpp_test_BTFWriteAndRead.btf",
                                        "btf/coo_int8_rank4.btf"};
    static const uint8_t vals[] = {0x00, 0x01, 0x07, 0x80, 0xff};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        size_t n;
        uint8_t *b = load(files[f], &n);
        uint8_t *p = malloc(n);
        assert_non_null(p);
        for (size_t i = 0; i < n; i++) {
            for (size_t v = 0; v < sizeof vals; v++) {
                memcpy(p, b, n);
                p[i] = vals[v];
                int rc;
                tio_error err;
                tio_container *c = open_mem(p, n, 0, &rc, &err);
                if (rc == TIO_OK) {
                    /* Whatever was accepted can be hashed and written again. */
                    for (size_t k = 0; k < tio_container_count(c); k++) {
                        char hex[65];
                        sha_hex(tio_container_tensor(c, k), TIO_HASH_VALUES, hex);
                    }
                    void *out;
                    size_t out_len;
                    save_mem(c, 0, &out, &out_len, files[f]);
                    tio_free(out);
                } else {
                    EXPECT(!c && strncmp(err.message, "btf: ", 5) == 0,
                           "%s byte %zu = %u: %s", files[f], i, vals[v], err.message);
                }
                tio_container_free(c);
            }
        }
        free(p);
        free(b);
    }
}

/* ---------------------------------------------------------- API edge cases */

static void add_ok(tio_container *c, const tio_tensor_desc *d) {
    tio_error err;
    int rc = tio_container_add(c, d, 0, NULL, &err);
    EXPECT(rc == TIO_OK, "tio_container_add: %s", err.message);
}

static tio_container *reopen(const void *p, size_t n) {
    tio_open_options o;
    memset(&o, 0, sizeof o);
    o.flags = TIO_OPEN_STRICT;
    tio_container *c = NULL;
    tio_error err;
    int rc = tio_open_memory(p, n, &o, &c, &err);
    EXPECT(rc == TIO_OK, "reopen: %s", err.message);
    return c;
}

static void test_api_rank0_and_empty(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    assert_non_null(c);
    float scalar = 3.5f;
    tio_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = TIO_FLOAT32;
    d.rank = 0;
    d.data = &scalar;
    d.nbytes = 4;
    add_ok(c, &d);
    int64_t shape[3] = {3, 0, 2};
    memset(&d, 0, sizeof d);
    d.dtype = TIO_INT16;
    d.rank = 3;
    d.shape = shape;
    d.nbytes = 0;
    add_ok(c, &d);
    void *out;
    size_t n;
    save_mem(c, 0, &out, &n, "rank0+empty");
    /* 8 + 2*8 table; scalar record 16 + 4 + 4 pad; empty record 16 + 24. */
    assert_int_equal(n, 24 + 24 + 40);
    const uint8_t *o = out;
    assert_int_equal(o[0], 2);
    assert_int_equal(o[8], 24);
    assert_int_equal(o[16], 48);
    tio_container *r = reopen(out, n);
    assert_int_equal(tio_container_count(r), 2);
    tio_tensor *t = tio_container_tensor(r, 0);
    assert_int_equal(tio_tensor_rank(t), 0);
    assert_int_equal(tio_tensor_numel(t), 1);
    assert_true(*(const float *)tio_tensor_data(t) == 3.5f);
    t = tio_container_tensor(r, 1);
    assert_int_equal(tio_tensor_rank(t), 3);
    assert_int_equal(tio_tensor_shape(t)[0], 3);
    assert_int_equal(tio_tensor_shape(t)[1], 0);
    assert_int_equal(tio_tensor_shape(t)[2], 2);
    assert_int_equal(tio_tensor_numel(t), 0);
    assert_int_equal(tio_tensor_nbytes(t), 0);
    tio_container_free(r);
    tio_free(out);

    /* An empty container is the 8-byte zero file. */
    tio_container *e = tio_container_new();
    save_mem(e, 0, &out, &n, "empty");
    assert_int_equal(n, 8);
    assert_true(memcmp(out, "\0\0\0\0\0\0\0\0", 8) == 0);
    tio_free(out);
    tio_container_free(e);

    /* Overflowing dims are refused when added. */
    int64_t big[2] = {INT64_MAX, 2};
    memset(&d, 0, sizeof d);
    d.dtype = TIO_INT8;
    d.rank = 2;
    d.shape = big;
    tio_error err;
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &err), TIO_E_OVERFLOW);
    int64_t big2[3] = {(int64_t)1 << 31, (int64_t)1 << 31, (int64_t)1 << 2};
    d.rank = 3;
    d.shape = big2;
    d.dtype = TIO_FLOAT64;
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &err), TIO_E_OVERFLOW);
    assert_int_equal(tio_container_count(c), 2);
    tio_container_free(c);
}

static void test_api_coo(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    int64_t shape[2] = {3, 4};
    int64_t idx[4] = {0, 1, 2, 3};
    int32_t vals[2] = {7, -9};
    tio_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = TIO_INT32;
    d.rank = 2;
    d.shape = shape;
    d.layout = TIO_LAYOUT_COO;
    d.data = vals;
    d.nbytes = sizeof vals;
    d.nnz = 2;
    d.indices = idx;
    add_ok(c, &d);

    /* Out of range and negative indices are refused. */
    tio_error err;
    idx[3] = 4;
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &err), TIO_E_CORRUPT);
    idx[3] = 3;
    idx[0] = -1;
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &err), TIO_E_CORRUPT);
    idx[0] = 0;

    /* nnz 0: the same bytes as the golden coo_empty_nnz0 (float32 [3, 4]). */
    memset(&d, 0, sizeof d);
    d.dtype = TIO_FLOAT32;
    d.rank = 2;
    d.shape = shape;
    d.layout = TIO_LAYOUT_COO;
    tio_container *e = tio_container_new();
    add_ok(e, &d);
    void *out;
    size_t n, gn;
    save_mem(e, 0, &out, &n, "coo nnz0");
    uint8_t *golden = load("btf/coo_empty_nnz0.btf", &gn);
    assert_true(n == gn && memcmp(out, golden, n) == 0);
    free(golden);
    tio_free(out);
    tio_container_free(e);

    save_mem(c, 0, &out, &n, "coo");
    /* 16 table + 16 header + 16 dims + 16 (nnz, rank) + 32 indices + 8 (nnz) + 8 values */
    assert_int_equal(n, 16 + 16 + 16 + 16 + 32 + 8 + 8);
    assert_int_equal(((const uint8_t *)out)[16 + 9], 1); /* layout 1 */
    tio_container *r = reopen(out, n);
    tio_tensor *t = tio_container_tensor(r, 0);
    assert_int_equal(tio_tensor_layout(t), TIO_LAYOUT_COO);
    assert_int_equal(tio_tensor_nnz(t), 2);
    assert_memory_equal(tio_tensor_indices(t), idx, sizeof idx);
    assert_memory_equal(tio_tensor_data(t), vals, sizeof vals);
    int32_t dense[12];
    assert_int_equal(tio_tensor_densify(t, dense, sizeof dense, &err), TIO_OK);
    assert_int_equal(dense[1], 7);
    assert_int_equal(dense[11], -9);
    tio_container_free(r);
    tio_free(out);
    tio_container_free(c);
}

static void test_api_lossy(void **state) {
    (void)state;
    /* float16: refused unless widened to float32. */
    tio_container *c = tio_container_new();
    uint16_t half[4] = {0x3c00, 0xc000, 0x3800, 0x7bff}; /* 1, -2, 0.5, 65504 */
    int64_t shape[1] = {4};
    tio_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = TIO_FLOAT16;
    d.rank = 1;
    d.shape = shape;
    d.data = half;
    d.nbytes = sizeof half;
    add_ok(c, &d);
    tio_save_options so = {.format = "btf"};
    void *out = NULL;
    size_t n;
    tio_error err;
    assert_int_equal(tio_check_save(c, &so, &err), TIO_E_LOSSY);
    assert_int_equal(tio_save_memory(c, &so, &out, &n, &err), TIO_E_LOSSY);
    so.flags = TIO_SAVE_WIDEN;
    assert_int_equal(tio_check_save(c, &so, &err), TIO_OK);
    save_mem(c, TIO_SAVE_WIDEN, &out, &n, "widen");
    tio_container *r = reopen(out, n);
    tio_tensor *t = tio_container_tensor(r, 0);
    assert_int_equal(tio_tensor_dtype(t), TIO_FLOAT32);
    const float *f = tio_tensor_data(t);
    assert_true(f[0] == 1.0f && f[1] == -2.0f && f[2] == 0.5f && f[3] == 65504.0f);
    tio_container_free(r);
    tio_free(out);
    tio_container_free(c);

    /* Names: BTF has none. */
    c = tio_container_new();
    int8_t v[2] = {1, 2};
    memset(&d, 0, sizeof d);
    d.name = "weights";
    d.dtype = TIO_INT8;
    d.rank = 1;
    shape[0] = 2;
    d.shape = shape;
    d.data = v;
    d.nbytes = 2;
    add_ok(c, &d);
    so.flags = 0;
    out = NULL;
    assert_int_equal(tio_save_memory(c, &so, &out, &n, &err), TIO_E_LOSSY);
    assert_null(out);
    save_mem(c, TIO_SAVE_DROP_NAMES, &out, &n, "drop names");
    r = reopen(out, n);
    assert_null(tio_tensor_name(tio_container_tensor(r, 0)));
    tio_container_free(r);
    tio_free(out);
    tio_container_free(c);
}

static void test_format_registry(void **state) {
    (void)state;
    assert_string_equal(tio_format_extensions("btf"), ".btf");
    assert_int_equal(tio_format_caps("btf"), TIO_CAP_SPARSE);
    assert_string_equal(tio_format_for_path("x/model.btf"), "btf");
    static const tio_dtype yes[] = {TIO_INT8,  TIO_INT16,  TIO_INT32,  TIO_INT64,
                                    TIO_UINT8, TIO_UINT16, TIO_UINT32, TIO_UINT64,
                                    TIO_FLOAT32, TIO_FLOAT64};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        assert_true(tio_format_supports_dtype("btf", yes[i]));
    assert_false(tio_format_supports_dtype("btf", TIO_FLOAT16));
    assert_false(tio_format_supports_dtype("btf", TIO_BFLOAT16));
    assert_false(tio_format_supports_dtype("btf", TIO_BOOL));
    /* Probing never claims short or implausible data. */
    static const uint8_t junk[16] = {1, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0};
    for (size_t n = 0; n <= sizeof junk; n++) {
        const char *f = tio_format_probe(junk, n);
        assert_true(f == NULL || strcmp(f, "btf") != 0);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_registry),
        cmocka_unit_test(test_manifests),
        cmocka_unit_test(test_upstream),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_malformed_details),
        cmocka_unit_test(test_patched_findings),
        cmocka_unit_test(test_truncation_sweep),
        cmocka_unit_test(test_mutation_sweep),
        cmocka_unit_test(test_api_rank0_and_empty),
        cmocka_unit_test(test_api_coo),
        cmocka_unit_test(test_api_lossy),
    };
    return cmocka_run_group_tests_name("btf", tests, NULL, NULL);
}
