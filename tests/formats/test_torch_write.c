/* The torch writer (src/formats/torch_write.c) through the public API: a
 * container of every dtype torch takes written to memory and read back by
 * tensio's reader, the same bytes twice, the archive name, what is refused
 * (dtypes torch lacks, metadata, names), tied weights kept tied, and the
 * records' CRCs taken beside the writes (from memory and a mapped file). The
 * comparisons with torch.save and torch.load are in test_torch_write.py. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "tensio.h"
#include "tvec.h"

static const tio_dtype dtypes[] = {TIO_BOOL,    TIO_INT8,     TIO_INT16,   TIO_INT32,
                                   TIO_INT64,   TIO_UINT8,    TIO_FLOAT16, TIO_BFLOAT16,
                                   TIO_FLOAT32, TIO_FLOAT64};
#define NDT (sizeof dtypes / sizeof dtypes[0])

static uint8_t bytes[NDT][48];

static tio_container *every_dtype(void) {
    tio_container *c = tio_container_new();
    assert_non_null(c);
    for (size_t i = 0; i < NDT; i++) {
        int64_t shape[2] = {2, 3};
        size_t n = 6 * tio_dtype_size(dtypes[i]);
        for (size_t k = 0; k < n; k++)
            bytes[i][k] = dtypes[i] == TIO_BOOL ? (uint8_t)(k & 1) : (uint8_t)(7 * k + i);
        char name[32];
        snprintf(name, sizeof name, "layer.%s", tio_dtype_name(dtypes[i]));
        tio_tensor_desc d = {name, dtypes[i], 2, shape, TIO_LAYOUT_DENSE, bytes[i], n, 0, NULL};
        tio_error e;
        assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
    }
    return c;
}

static int save_as(const tio_container *c, const char *format, unsigned flags,
                   const char *options, void **out, size_t *n, tio_error *e) {
    tio_save_options o;
    memset(&o, 0, sizeof o);
    o.format = format;
    o.flags = flags;
    o.options = options;
    return tio_save_memory(c, &o, out, n, e);
}

static int save(const tio_container *c, unsigned flags, const char *options, void **out,
                size_t *n, tio_error *e) {
    return save_as(c, "torch", flags, options, out, n, e);
}

static void test_round_trip(void **state) {
    (void)state;
    assert_true(tio_format_can_write("torch"));
    tio_container *c = every_dtype();
    void *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    tio_error e;
    assert_int_equal(save(c, 0, NULL, &a, &na, &e), TIO_OK);
    assert_int_equal(save(c, 0, NULL, &b, &nb, &e), TIO_OK);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na); /* deterministic */
    /* a memory save's archive is "archive", as torch.save into a BytesIO */
    assert_int_equal(memcmp((const char *)a + 30, "archive/data.pkl", 16), 0);
    tio_container *r = NULL;
    tio_open_options oo;
    memset(&oo, 0, sizeof oo);
    oo.format = "torch";
    assert_int_equal(tio_open_memory(a, na, &oo, &r, &e), TIO_OK);
    assert_int_equal(tio_container_count(r), NDT);
    assert_int_equal(tio_container_warning_count(r), 0);
    for (size_t i = 0; i < NDT; i++) {
        const tio_tensor *t = tio_container_tensor(r, i);
        assert_string_equal(tio_tensor_name(t), tio_tensor_name(tio_container_tensor(c, i)));
        assert_int_equal(tio_tensor_dtype(t), dtypes[i]);
        assert_int_equal(tio_tensor_rank(t), 2);
        assert_int_equal(tio_tensor_shape(t)[1], 3);
        assert_memory_equal(tio_tensor_data(t), bytes[i], tio_tensor_nbytes(t));
        /* storages are 64-byte aligned in the archive */
        assert_int_equal(tio_tensor_source_offset(t) % 64, 0);
        assert_null(tio_tensor_alias(t));
    }
    tio_container_free(r);
    free(a);
    free(b);
    /* archive=NAME names the top directory; a name with '/' is refused */
    assert_int_equal(save(c, 0, "archive=model", &a, &na, &e), TIO_OK);
    assert_int_equal(memcmp((const char *)a + 30, "model/data.pkl", 14), 0);
    free(a);
    assert_int_equal(save(c, 0, "archive=a/b", &a, &na, &e), TIO_E_ARGUMENT);
    assert_non_null(strstr(e.message, "archive=a/b"));
    tio_container_free(c);
}

static void test_refused(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    int64_t shape[1] = {2};
    uint16_t u[2] = {1, 2};
    tio_tensor_desc d = {"u", TIO_UINT16, 1, shape, TIO_LAYOUT_DENSE, u, 4, 0, NULL};
    tio_error e;
    void *out = NULL;
    size_t n = 0;
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
    assert_int_not_equal(save(c, 0, NULL, &out, &n, &e), TIO_OK);
    assert_non_null(strstr(e.message, "uint16"));
    tio_container_free(c);
    /* float8 widens to float32 with TIO_SAVE_WIDEN */
    c = tio_container_new();
    uint8_t f8[2] = {0x38, 0x40}; /* 1.0, 2.0 in e4m3fn */
    tio_tensor_desc d8 = {"f", TIO_FLOAT8_E4M3FN, 1, shape, TIO_LAYOUT_DENSE, f8, 2, 0, NULL};
    assert_int_equal(tio_container_add(c, &d8, 0, NULL, &e), TIO_OK);
    assert_int_equal(save(c, 0, NULL, &out, &n, &e), TIO_E_LOSSY);
    assert_int_equal(save(c, TIO_SAVE_WIDEN, NULL, &out, &n, &e), TIO_OK);
    free(out);
    /* metadata: a state dict holds tensors only */
    assert_int_equal(tio_container_meta_set(c, "format", "pt", &e), TIO_OK);
    assert_int_equal(save(c, TIO_SAVE_WIDEN, NULL, &out, &n, &e), TIO_E_LOSSY);
    assert_non_null(strstr(e.message, "--drop-metadata"));
    assert_int_equal(save(c, TIO_SAVE_WIDEN | TIO_SAVE_DROP_METADATA, NULL, &out, &n, &e),
                     TIO_OK);
    free(out);
    /* a name that is not UTF-8; an unnamed tensor takes its index, which
     * may be taken */
    float v[2] = {1, 2};
    tio_tensor_desc bad = {"\xff", TIO_FLOAT32, 1, shape, TIO_LAYOUT_DENSE, v, 8, 0, NULL};
    tio_container *c2 = tio_container_new();
    assert_int_equal(tio_container_add(c2, &bad, 0, NULL, &e), TIO_OK);
    assert_int_equal(save(c2, 0, NULL, &out, &n, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "UTF-8"));
    tio_container_free(c2);
    c2 = tio_container_new();
    tio_tensor_desc one = {"1", TIO_FLOAT32, 1, shape, TIO_LAYOUT_DENSE, v, 8, 0, NULL};
    tio_tensor_desc anon = {NULL, TIO_FLOAT32, 1, shape, TIO_LAYOUT_DENSE, v, 8, 0, NULL};
    assert_int_equal(tio_container_add(c2, &one, 0, NULL, &e), TIO_OK);
    assert_int_equal(tio_container_add(c2, &anon, 0, NULL, &e), TIO_OK);
    assert_int_equal(save(c2, 0, NULL, &out, &n, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "named '1'"));
    tio_container_free(c2);
    /* an empty tensor whose strides (torch counts a 0 dim as 1) pass int64 */
    c2 = tio_container_new();
    int64_t wide[3] = {0, INT64_C(1) << 40, INT64_C(1) << 40};
    tio_tensor_desc empty = {"e", TIO_FLOAT32, 3, wide, TIO_LAYOUT_DENSE, NULL, 0, 0, NULL};
    assert_int_equal(tio_container_add(c2, &empty, 0, NULL, &e), TIO_OK);
    assert_int_equal(save(c2, 0, NULL, &out, &n, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "strides"));
    tio_container_free(c2);
    tio_container_free(c);
}

/* Tied weights. tio_container_add makes no aliases (a container read from
 * a .pt does): two tensors are written, the pickle's second storage key is
 * patched to the first's, and the file read back has an alias; written
 * again it keeps one storage, and to safetensors one copy. (Checkpoints
 * that torch writes tied are in test_torch_write.py.) */
static void test_tied(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    int64_t shape[1] = {4};
    float v[4] = {1, 2, 3, 4};
    tio_tensor_desc a = {"embed.weight", TIO_FLOAT32, 1, shape, TIO_LAYOUT_DENSE, v, 16, 0, NULL};
    tio_tensor_desc b = {"lm_head.weight", TIO_FLOAT32, 1, shape, TIO_LAYOUT_DENSE, v, 16, 0,
                         NULL};
    tio_error e;
    assert_int_equal(tio_container_add(c, &a, 0, NULL, &e), TIO_OK);
    assert_int_equal(tio_container_add(c, &b, 0, NULL, &e), TIO_OK);
    void *out = NULL;
    size_t n = 0;
    assert_int_equal(save(c, 0, NULL, &out, &n, &e), TIO_OK);
    /* in data.pkl (stored, so its bytes are in place): the key '1' (X, len
     * 1, '1') becomes '0'; the record data/1 stays, unused */
    uint8_t *p = out;
    size_t hits = 0;
    for (size_t k = 0; k + 6 < n && k < 600; k++)
        if (memcmp(p + k, "X\x01\x00\x00\x00" "1", 6) == 0) {
            p[k + 5] = '0';
            hits++;
        }
    assert_int_equal(hits, 1);
    /* the pickle's CRC is in its data descriptor and central entry: a
     * reader that checks it would refuse; tensio checks CRCs only with
     * TIO_OPEN_STRICT */
    tio_container *r = NULL;
    assert_int_equal(tio_open_memory(out, n, NULL, &r, &e), TIO_OK);
    assert_int_equal(tio_container_count(r), 2);
    assert_ptr_equal(tio_tensor_alias(tio_container_tensor(r, 1)), tio_container_tensor(r, 0));
    void *again = NULL;
    size_t na = 0;
    assert_int_equal(save(r, 0, NULL, &again, &na, &e), TIO_OK);
    tio_container *r2 = NULL;
    assert_int_equal(tio_open_memory(again, na, NULL, &r2, &e), TIO_OK);
    assert_ptr_equal(tio_tensor_alias(tio_container_tensor(r2, 1)), tio_container_tensor(r2, 0));
    assert_string_equal(tio_container_prop_get(r2, "shares_storage.lm_head.weight"),
                        "embed.weight");
    assert_true(na < n); /* one storage record fewer */
    /* safetensors keeps one copy */
    void *st = NULL;
    size_t ns = 0;
    assert_int_equal(save_as(r2, "safetensors", 0, NULL, &st, &ns, &e), TIO_OK);
    tio_container *rs = NULL;
    assert_int_equal(tio_open_memory(st, ns, NULL, &rs, &e), TIO_OK);
    assert_int_equal(tio_container_count(rs), 1);
    assert_string_equal(tio_tensor_name(tio_container_tensor(rs, 0)), "embed.weight");
    tio_container_free(rs);
    tio_container_free(r2);
    tio_container_free(r);
    tio_container_free(c);
    free(st);
    free(again);
    free(out);
}

static uint32_t ld32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint32_t ld16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }

/* Every record of a zip in memory (no zip64 fields: the test's sizes are
 * small): its central directory's CRC and its descriptor's equal zlib's
 * over its stored bytes. Returns the number of records. */
static size_t check_crcs(const uint8_t *z, size_t n) {
    size_t end = n - 22;
    while (end > 0 && ld32(z + end) != 0x06054b50u) end--;
    assert_int_equal(ld32(z + end), 0x06054b50u);
    size_t count = ld16(z + end + 10), cd = ld32(z + end + 16);
    for (size_t k = 0; k < count; k++) {
        const uint8_t *ce = z + cd;
        assert_int_equal(ld32(ce), 0x02014b50u);
        size_t size = ld32(ce + 24), local = ld32(ce + 42);
        assert_true(size != 0xFFFFFFFFu && local != 0xFFFFFFFFu);
        const uint8_t *lh = z + local;
        const uint8_t *at = lh + 30 + ld16(lh + 26) + ld16(lh + 28);
        assert_true(at + size <= z + n);
        uint32_t want = (uint32_t)crc32(0, at, (uInt)size);
        if (ld32(ce + 16) != want)
            fail_msg("record %zu (%.*s): CRC %08x, zlib %08x", k, (int)ld16(ce + 28),
                     (const char *)ce + 46, ld32(ce + 16), want);
        if (size) { /* the descriptor after the data */
            assert_int_equal(ld32(at + size), 0x08074b50u);
            assert_int_equal(ld32(at + size + 4), want);
        }
        cd += 46 + ld16(ce + 28) + ld16(ce + 30) + ld16(ce + 32);
    }
    return count;
}

/* 32 MiB or more of storages written as held take their CRCs on a thread
 * of the writer's own (src/core/crc32.c's job), a mapped source's bytes
 * read there by pread(); a storage that is converted (float8 widened)
 * takes its CRC as it is written. Saved from memory and from a mapped
 * .safetensors file: every record's CRC is zlib's over its bytes, the file
 * equals the save to memory, and tensio reads it back. */
static void test_crc_thread(void **state) {
    (void)state;
    size_t big = 17u << 20;
    uint8_t *data = malloc(big);
    assert_non_null(data);
    uint64_t seed = 99;
    for (size_t k = 0; k < big; k += 8) {
        uint64_t v = tvec_rand(&seed);
        memcpy(data + k, &v, 8);
    }
    /* a: 17 MiB as held; f: float8, widened; b: 17 MiB at an odd address */
    int64_t shapes[3] = {(int64_t)(big / 4), 2, (int64_t)(big - 2) / 2};
    static const uint8_t f8[2] = {0x38, 0x40};
    tio_tensor_desc d[3] = {
        {"a", TIO_FLOAT32, 1, &shapes[0], TIO_LAYOUT_DENSE, data, big, 0, NULL},
        {"f", TIO_FLOAT8_E4M3FN, 1, &shapes[1], TIO_LAYOUT_DENSE, f8, 2, 0, NULL},
        {"b", TIO_INT16, 1, &shapes[2], TIO_LAYOUT_DENSE, data + 1, big - 2, 0, NULL}};
    tio_container *c = tio_container_new();
    tio_error e;
    for (int k = 0; k < 3; k++)
        assert_int_equal(tio_container_add(c, &d[k], k == 1 ? 0 : TIO_ADD_BORROW, NULL, &e),
                         TIO_OK);
    void *mem = NULL;
    size_t nmem = 0;
    assert_int_equal(save(c, TIO_SAVE_WIDEN, "archive=m", &mem, &nmem, &e), TIO_OK);
    assert_int_equal(check_crcs(mem, nmem), 5); /* data.pkl, 3 storages, version */

    const char *tmp = getenv("TMPDIR");
    char src[512], dst[512];
    snprintf(src, sizeof src, "%s/tio_torch_crc_%ld.safetensors", tmp && tmp[0] ? tmp : "/tmp",
             (long)getpid());
    snprintf(dst, sizeof dst, "%s/tio_torch_crc_%ld.pt", tmp && tmp[0] ? tmp : "/tmp",
             (long)getpid());
    tio_save_options so = {.format = "safetensors", .flags = TIO_SAVE_NO_SYNC};
    assert_int_equal(tio_save(c, src, &so, &e), TIO_OK);
    tio_container *m = NULL;
    assert_int_equal(tio_open(src, NULL, &m, &e), TIO_OK);
    tio_save_options to = {.format = "torch", .flags = TIO_SAVE_WIDEN | TIO_SAVE_NO_SYNC,
                           .options = "archive=m"};
    if (tio_save(m, dst, &to, &e) != TIO_OK) fail_msg("save: %s", e.message);
    size_t nf = 0;
    uint8_t *file = NULL;
    assert_int_equal(tvec_read(dst, &file, &nf), 0);
    assert_int_equal(check_crcs(file, nf), 5);
    /* the same bytes (safetensors sorts the names; the pickle follows) */
    void *mem2 = NULL;
    size_t nmem2 = 0;
    assert_int_equal(save(m, TIO_SAVE_WIDEN, "archive=m", &mem2, &nmem2, &e), TIO_OK);
    assert_int_equal(nf, nmem2);
    assert_memory_equal(file, mem2, nf);
    tio_container *r = NULL;
    assert_int_equal(tio_open_memory(file, nf, NULL, &r, &e), TIO_OK);
    const tio_tensor *b = tio_container_find(r, "b");
    assert_non_null(b);
    assert_memory_equal(tio_tensor_bytes(b), data + 1, big - 2);
    tio_container_free(r);
    tio_container_free(m);
    unlink(src);
    unlink(dst);
    free(file);
    free(mem2);
    free(mem);
    tio_container_free(c);
    free(data);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_tied),
        cmocka_unit_test(test_crc_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
