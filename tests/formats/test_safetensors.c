/* safetensors: the reader's rules (each a clear error), every dtype, zero-copy
 * and aligned copies, and the writer's layout byte for byte.
 *
 * The expected files are built here by hand from the format's spec (the
 * crate's README "Format" section and safetensors/src/tensor.rs): the u64
 * header size, the compact JSON in the reference writer's order (dtype
 * descending in the crate's Dtype order, then name; __metadata__ first),
 * space padding to 8, then the tensors' bytes in that order. The first three
 * are the byte arrays of the crate's own unit tests (test_serialization,
 * test_serialization_forced_alignement, test_empty). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tassert.h"
#include "tensio.h"

static const tio_save_options save_st = {.format = "safetensors"};

/* A file: u64 LE len(json) + pad, json, `pad` spaces, then the buffer. */
static uint8_t *mk(const char *json, size_t pad, const void *buf, size_t blen, size_t *len) {
    size_t jl = strlen(json), n = jl + pad;
    uint8_t *f = malloc(8 + n + blen + 1);
    assert_non_null(f);
    for (int i = 0; i < 8; i++) f[i] = (uint8_t)((uint64_t)n >> (8 * i));
    memcpy(f + 8, json, jl);
    memset(f + 8 + jl, ' ', pad);
    if (blen) memcpy(f + 8 + n, buf, blen);
    *len = 8 + n + blen;
    return f;
}

/* Opens json + buffer; returns the status, and the error in *e. */
static int open_st(const char *json, const void *buf, size_t blen, unsigned flags,
                   tio_container **out, tio_error *e) {
    size_t len;
    uint8_t *f = mk(json, 0, buf, blen, &len);
    tio_open_options o = {.format = "safetensors", .flags = flags | TIO_OPEN_COPY};
    int rc = tio_open_memory(f, len, &o, out, e);
    free(f);
    return rc;
}

/* The header must be refused with `code`, and the message must hold `needle`. */
static void refused(const char *json, size_t blen, int code, const char *needle) {
    uint8_t zeros[64] = {0};
    assert_true(blen <= sizeof zeros);
    tio_container *c = NULL;
    tio_error e;
    int rc = open_st(json, zeros, blen, 0, &c, &e);
    if (rc != code || !strstr(e.message, needle) || strncmp(e.message, "safetensors: ", 13)) {
        fprintf(stderr, "%s\n  -> %s: %s (expected %s, '%s')\n", json, tio_status_name(rc),
                e.message, tio_status_name(code), needle);
        fail();
    }
    assert_null(c);
}

static const uint8_t crate_serialization[] = {
    64, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 46, 48, 34, 58, 123, 34, 100,
    116, 121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34,
    58, 91, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102, 115,
    101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 0, 0, 0, 0, 0, 0, 128, 63,
    0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0, 160, 64};

static const uint8_t crate_forced_alignment[] = {
    72, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 48, 34, 58, 123, 34, 100, 116,
    121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34, 58,
    91, 49, 44, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102,
    115, 101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 32, 32, 32, 32, 32,
    32, 32, 0, 0, 0, 0, 0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0,
    160, 64};

static const uint8_t crate_empty[] = {8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32};

static const uint8_t crate_empty_meta[] = {
    40, 0, 0, 0, 0, 0, 0, 0, 123, 34, 95, 95, 109, 101, 116, 97, 100, 97, 116, 97, 95,
    95, 34, 58, 123, 34, 102, 114, 97, 109, 101, 119, 111, 114, 107, 34, 58, 34, 112,
    116, 34, 125, 125, 32, 32, 32, 32, 32};

/* What the crate's serialize() writes (hand-made here: the crate is not in
 * Debian) for a tensor named "" (a HashMap key like any other: the crate
 * reads and writes it) holding 1.0f: the header padded with spaces to a
 * multiple of 8, then the buffer. */
static const char crate_empty_name[] =
    "\x38\0\0\0\0\0\0\0{\"\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}   "
    "\0\0\x80\x3f";
/* ... and for metadata Some(empty map) (safe_open(...).metadata() == {};
 * the Python binding writes it for save_file(t, metadata={})), tensor "a". */
static const char crate_empty_map[] =
    "\x48\0\0\0\0\0\0\0{\"__metadata__\":{},\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
    "\"data_offsets\":[0,4]}}\0\0\x80\x3f";

/* Opens `file` and saves it again: the bytes must be the same. */
static tio_container *roundtrip_same(const uint8_t *file, size_t len) {
    tio_container *c = NULL;
    tio_error e;
    tio_open_options o = {.flags = TIO_OPEN_STRICT}; /* probed */
    ASSERT_OK(tio_open_memory(file, len, &o, &c, &e), e, "open");
    assert_string_equal(tio_container_format(c), "safetensors");
    void *out = NULL;
    size_t olen = 0;
    ASSERT_OK(tio_save_memory(c, &save_st, &out, &olen, &e), e, "save");
    assert_int_equal(olen, len);
    assert_memory_equal(out, file, len);
    tio_free(out);
    return c;
}

static void test_crate_vectors(void **state) {
    (void)state;
    tio_container *c = roundtrip_same(crate_serialization, sizeof crate_serialization);
    const tio_tensor *t = tio_container_find(c, "attn.0");
    assert_non_null(t);
    assert_int_equal(tio_tensor_dtype(t), TIO_FLOAT32);
    assert_int_equal(tio_tensor_rank(t), 3);
    assert_int_equal(tio_tensor_shape(t)[2], 3);
    assert_true(((const float *)tio_tensor_data(t))[5] == 5.0f);
    assert_true(tio_tensor_is_aligned(t));
    tio_container_free(c);
    tio_container_free(roundtrip_same(crate_forced_alignment, sizeof crate_forced_alignment));
    c = roundtrip_same(crate_empty, sizeof crate_empty);
    assert_int_equal(tio_container_count(c), 0);
    tio_container_free(c);
    c = roundtrip_same(crate_empty_meta, sizeof crate_empty_meta);
    assert_string_equal(tio_container_meta_get(c, "framework"), "pt");
    tio_container_free(c);
    /* the empty name is a name: read as "", written back as "" */
    c = roundtrip_same((const uint8_t *)crate_empty_name, sizeof crate_empty_name - 1);
    assert_int_equal(tio_container_count(c), 1);
    assert_string_equal(tio_tensor_name(tio_container_tensor(c, 0)), "");
    assert_ptr_equal(tio_container_find(c, ""), tio_container_tensor(c, 0));
    tio_container_free(c);
    /* an empty __metadata__ map is kept (and said in the props) */
    c = roundtrip_same((const uint8_t *)crate_empty_map, sizeof crate_empty_map - 1);
    assert_int_equal(tio_container_meta_count(c), 0);
    assert_string_equal(tio_container_prop_get(c, "empty_metadata"), "true");
    void *out = NULL;
    size_t olen = 0;
    tio_error e;
    tio_save_options drop = save_st;
    drop.flags = TIO_SAVE_DROP_METADATA; /* dropped: written as the crate's None */
    ASSERT_OK(tio_save_memory(c, &drop, &out, &olen, &e), e, "save dropped");
    assert_int_equal(olen, 8 + 56 + 4);
    assert_memory_equal((const char *)out + 8, "{\"a\":", 5);
    tio_free(out);
    tio_container_free(c);
    /* a tensor named "" added through the API is written under "" (not "0") */
    c = tio_container_new();
    const float one = 1.0f;
    const int64_t dim1[1] = {1};
    tio_tensor_desc d = {"", TIO_FLOAT32, 1, dim1, TIO_LAYOUT_DENSE, &one, 4, 0, NULL};
    ASSERT_OK(tio_container_add(c, &d, 0, NULL, &e), e, "add");
    assert_string_equal(tio_tensor_name(tio_container_tensor(c, 0)), "");
    ASSERT_OK(tio_save_memory(c, &save_st, &out, &olen, &e), e, "save");
    assert_int_equal(olen, sizeof crate_empty_name - 1);
    assert_memory_equal(out, crate_empty_name, olen);
    tio_free(out);
    tio_container_free(c);
}

static void add(tio_container *c, const char *name, tio_dtype dt, size_t rank,
                const int64_t *shape, const void *data, size_t nbytes) {
    tio_tensor_desc d = {name, dt, rank, shape, TIO_LAYOUT_DENSE, data, nbytes, 0, NULL};
    tio_error e;
    ASSERT_OK(tio_container_add(c, &d, 0, NULL, &e), e, "add");
}

/* The writer's order and escapes, against a layout computed from the spec. */
static void test_write_layout(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    const int64_t s2[1] = {2}, s1[1] = {1};
    const uint8_t b2[2] = {1, 0};
    const uint16_t h2[2] = {0x3c00, 0x4000};
    const double d1[1] = {1.5};
    const int8_t i2[2] = {-1, 2};
    const uint8_t f8[2] = {0x38, 0x40};
    const uint32_t u1[1] = {7};
    /* added in an order unlike the output's */
    add(c, "b", TIO_BOOL, 1, s2, b2, 2);
    add(c, "z", TIO_FLOAT16, 1, s2, h2, 4);
    add(c, "a", TIO_FLOAT16, 1, s2, h2, 4);
    add(c, "q\"\\\n\x01\x7f\xc3\xa9", TIO_INT8, 1, s2, i2, 2);
    add(c, "d", TIO_FLOAT64, 1, s1, d1, 8);
    add(c, "e4", TIO_FLOAT8_E4M3FN, 1, s2, f8, 2);
    add(c, "e5", TIO_FLOAT8_E5M2, 1, s2, f8, 2);
    add(c, "u", TIO_UINT32, 0, NULL, u1, 4);
    add(c, NULL, TIO_UINT8, 1, s1, b2, 1); /* written as "8" */
    tio_error e;
    ASSERT_OK(tio_container_meta_set(c, "zeta", "1", &e), e, "meta");
    ASSERT_OK(tio_container_meta_set(c, "alpha", "tab\there", &e), e, "meta");

    /* Crate order, descending: F64 > U32 > F16 > F8_E4M3 > F8_E5M2 > I8 > U8 > BOOL. */
    const char *json =
        "{\"__metadata__\":{\"alpha\":\"tab\\there\",\"zeta\":\"1\"},"
        "\"d\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]},"
        "\"u\":{\"dtype\":\"U32\",\"shape\":[],\"data_offsets\":[8,12]},"
        "\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[12,16]},"
        "\"z\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[16,20]},"
        "\"e4\":{\"dtype\":\"F8_E4M3\",\"shape\":[2],\"data_offsets\":[20,22]},"
        "\"e5\":{\"dtype\":\"F8_E5M2\",\"shape\":[2],\"data_offsets\":[22,24]},"
        "\"q\\\"\\\\\\n\\u0001\x7f\xc3\xa9\":{\"dtype\":\"I8\",\"shape\":[2],"
        "\"data_offsets\":[24,26]},"
        "\"8\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[26,27]},"
        "\"b\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[27,29]}}";
    uint8_t buf[29];
    size_t k = 0;
    memcpy(buf + k, d1, 8), k += 8;
    memcpy(buf + k, u1, 4), k += 4;
    memcpy(buf + k, h2, 4), k += 4;
    memcpy(buf + k, h2, 4), k += 4;
    memcpy(buf + k, f8, 2), k += 2;
    memcpy(buf + k, f8, 2), k += 2;
    memcpy(buf + k, i2, 2), k += 2;
    memcpy(buf + k, b2, 1), k += 1;
    memcpy(buf + k, b2, 2), k += 2;
    size_t jl = strlen(json), pad = (8 - jl % 8) % 8, len;
    uint8_t *expect = mk(json, pad, buf, sizeof buf, &len);

    void *out = NULL;
    size_t olen = 0;
    ASSERT_OK(tio_save_memory(c, &save_st, &out, &olen, &e), e, "save");
    assert_int_equal(olen, len);
    assert_memory_equal(out, expect, len);

    /* read back: the same tensors, names and metadata; saved again, the same bytes */
    tio_container *r = NULL;
    tio_open_options o = {.format = "safetensors", .flags = TIO_OPEN_STRICT};
    ASSERT_OK(tio_open_memory(out, olen, &o, &r, &e), e, "reopen");
    assert_int_equal(tio_container_count(r), 9);
    assert_string_equal(tio_container_meta_get(r, "alpha"), "tab\there");
    const tio_tensor *q = tio_container_find(r, "q\"\\\n\x01\x7f\xc3\xa9");
    assert_non_null(q);
    assert_int_equal(tio_tensor_dtype(q), TIO_INT8);
    assert_int_equal(tio_tensor_dtype(tio_container_find(r, "e4")), TIO_FLOAT8_E4M3FN);
    assert_int_equal(tio_tensor_dtype(tio_container_find(r, "e5")), TIO_FLOAT8_E5M2);
    assert_int_equal(tio_tensor_rank(tio_container_find(r, "u")), 0);
    void *again = NULL;
    size_t alen = 0;
    ASSERT_OK(tio_save_memory(r, &save_st, &again, &alen, &e), e, "save again");
    assert_int_equal(alen, len);
    assert_memory_equal(again, expect, len);
    tio_free(again);
    tio_free(out);
    free(expect);
    tio_container_free(r);
    tio_container_free(c);
}

/* Every dtype of the spec that tensio has, one element each, read. */
static void test_all_dtypes(void **state) {
    (void)state;
    static const struct {
        const char *name;
        tio_dtype dt;
        size_t size;
    } dts[] = {{"BOOL", TIO_BOOL, 1},    {"U8", TIO_UINT8, 1},     {"I8", TIO_INT8, 1},
               {"I16", TIO_INT16, 2},    {"U16", TIO_UINT16, 2},   {"F16", TIO_FLOAT16, 2},
               {"BF16", TIO_BFLOAT16, 2}, {"I32", TIO_INT32, 4},   {"U32", TIO_UINT32, 4},
               {"F32", TIO_FLOAT32, 4},  {"F64", TIO_FLOAT64, 8},  {"I64", TIO_INT64, 8},
               {"U64", TIO_UINT64, 8},   {"F8_E4M3", TIO_FLOAT8_E4M3FN, 1},
               {"F8_E5M2", TIO_FLOAT8_E5M2, 1}, {"C64", TIO_COMPLEX64, 8}};
    for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
        char json[160];
        snprintf(json, sizeof json,
                 "{\"x\":{\"dtype\":\"%s\",\"shape\":[1],\"data_offsets\":[0,%zu]}}", dts[i].name,
                 dts[i].size);
        const uint8_t one[8] = {1, 0, 0, 0, 0, 0, 0, 0};
        tio_container *c = NULL;
        tio_error e;
        ASSERT_OK(open_st(json, one, dts[i].size, TIO_OPEN_STRICT, &c, &e), e, dts[i].name);
        assert_int_equal(tio_tensor_dtype(tio_container_tensor(c, 0)), dts[i].dt);
        tio_container_free(c);
    }
    /* the spec's other dtypes are refused by name */
    const char *other[] = {"F4", "F6_E2M3", "F6_E3M2", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ"};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        char json[160];
        snprintf(json, sizeof json,
                 "{\"x\":{\"dtype\":\"%s\",\"shape\":[2],\"data_offsets\":[0,2]}}", other[i]);
        refused(json, 2, TIO_E_DTYPE, "has no tensio dtype");
    }
    refused("{\"x\":{\"dtype\":\"F128\",\"shape\":[1],\"data_offsets\":[0,16]}}", 16, TIO_E_DTYPE,
            "is not a safetensors dtype");
}

/* Every rule of the reference, each a clear error. */
static void test_rules(void **state) {
    (void)state;
    const char *ok = "\"data_offsets\":[0,4]}}";
    char j[512];
    /* the header: JSON object, UTF-8, size */
    refused("[]", 0, TIO_E_CORRUPT, "expected '{'");
    refused("{", 0, TIO_E_CORRUPT, "expected a key");
    refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}} x", 4, TIO_E_CORRUPT,
            "after the closing '}'");
    refused("{\"a\xff\":{}}", 0, TIO_E_CORRUPT, "not valid UTF-8");
    refused("{\"a\xc0\x80\":{}}", 0, TIO_E_CORRUPT, "not valid UTF-8"); /* overlong */
    refused("{\"a\xed\xa0\x80\":{}}", 0, TIO_E_CORRUPT, "not valid UTF-8"); /* surrogate */
    refused("{\"a\\ud800\":{}}", 0, TIO_E_CORRUPT, "lone leading surrogate");
    refused("{\"a\\udc00\":{}}", 0, TIO_E_CORRUPT, "lone trailing surrogate");
    refused("{\"a\\q\":{}}", 0, TIO_E_CORRUPT, "invalid escape");
    refused("{\"a\x01\":{}}", 0, TIO_E_CORRUPT, "control character");
    refused("{\"a\\u0000b\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}", 0,
            TIO_E_UNSUPPORTED, "\\u0000");
    /* duplicate keys */
    refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
            "\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}}",
            4, TIO_E_CORRUPT, "the tensor \"a\" twice");
    refused("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0, TIO_E_CORRUPT,
            "__metadata__ has the key \"k\" twice");
    refused("{\"__metadata__\":{},\"__metadata__\":{}}", 0, TIO_E_CORRUPT, "__metadata__ twice");
    refused("{\"a\":{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 4,
            TIO_E_CORRUPT, "duplicate field 'dtype'");
    /* metadata is string -> string */
    refused("{\"__metadata__\":{\"k\":1}}", 0, TIO_E_CORRUPT, "expected a string value");
    refused("{\"__metadata__\":[]}", 0, TIO_E_CORRUPT, "must be an object of strings");
    /* fields */
    refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[4]}}", 4, TIO_E_CORRUPT,
            "missing field 'data_offsets'");
    refused("{\"a\":[]}", 0, TIO_E_CORRUPT, "expected an object");
    refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[4.0],\"data_offsets\":[0,4]}}", 4,
            TIO_E_CORRUPT, "not an integer");
    refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[-4],\"data_offsets\":[0,4]}}", 4, TIO_E_CORRUPT,
            "negative");
    refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[04],\"data_offsets\":[0,4]}}", 4, TIO_E_CORRUPT,
            "leading zero");
    refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4,4]}}", 4, TIO_E_CORRUPT,
            "exactly 2");
    refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[18446744073709551616],\"data_offsets\":[0,4]}}",
            4, TIO_E_OVERFLOW, "64 bits");
    /* sizes: shape x dtype = end - begin, overflow-checked */
    refused("{\"a\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0,4]}}", 4, TIO_E_CORRUPT,
            "TensorInvalidInfo");
    refused("{\"a\":{\"dtype\":\"I32\",\"shape\":[2,4611686018427387904],\"data_offsets\":[0,16]}}",
            16, TIO_E_OVERFLOW, "");
    refused("{\"a\":{\"dtype\":\"I32\",\"shape\":[2,9223372036854775807],\"data_offsets\":[0,16]}}",
            16, TIO_E_OVERFLOW, "");
    /* offsets inside the buffer, no holes, no overlaps, covered exactly */
    refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,0]}}", 4, TIO_E_CORRUPT,
            "end before they begin");
    refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 3, TIO_E_BOUNDS,
            "run past the byte buffer");
    refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 5, TIO_E_CORRUPT,
            "MetadataIncompleteBuffer");
    refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}}", 4, TIO_E_CORRUPT,
            "no holes");
    refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[0,3]},"
            "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}}",
            4, TIO_E_CORRUPT, "overlaps tensor 'a'");
    /* limits */
    {
        tio_limits l = {0};
        l.max_rank = 4;
        size_t len;
        uint8_t z[4] = {0};
        snprintf(j, sizeof j, "{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,4],%s", ok);
        uint8_t *f = mk(j, 0, z, 4, &len);
        tio_open_options o = {.format = "safetensors", .limits = &l};
        tio_container *c = NULL;
        tio_error e;
        assert_int_equal(tio_open_memory(f, len, &o, &c, &e), TIO_E_LIMIT);
        assert_non_null(strstr(e.message, "max_rank"));
        l.max_rank = 0;
        l.max_tensors = 1;
        free(f);
        f = mk("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
               "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}}",
               0, z, 4, &len);
        assert_int_equal(tio_open_memory(f, len, &o, &c, &e), TIO_E_LIMIT);
        assert_non_null(strstr(e.message, "max_tensors"));
        free(f);
    }
    /* the header size: 100 MB, and what is present */
    uint8_t big[16] = {0x01, 0xe1, 0xf5, 0x05, 0, 0, 0, 0, '{', '}'}; /* 100000001 */
    tio_container *c = NULL;
    tio_error e;
    tio_open_options o = {.format = "safetensors"};
    assert_int_equal(tio_open_memory(big, sizeof big, &o, &c, &e), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "100000000"));
    uint8_t trunc[12] = {60, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' '};
    assert_int_equal(tio_open_memory(trunc, sizeof trunc, &o, &c, &e), TIO_E_TRUNCATED);
    assert_int_equal(tio_open_memory(trunc, 5, &o, &c, &e), TIO_E_TRUNCATED);
    assert_non_null(strstr(e.message, "8 bytes"));
}

/* What the reference accepts: padding, leading whitespace (a finding),
 * unknown fields, null metadata, empty and rank-0 tensors. */
static void test_accepted(void **state) {
    (void)state;
    tio_container *c = NULL;
    tio_error e;
    uint8_t z[16] = {0};
    size_t len;
    /* padded with spaces: fine, strict too */
    const char *json = "{\"a\":{\"dtype\":\"I32\",\"shape\":[2,0],\"data_offsets\":[0,0]},"
                       "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]},"
                       "\"__metadata__\":null}";
    uint8_t *f = mk(json, 13, z, 4, &len);
    char hs[24];
    snprintf(hs, sizeof hs, "%zu", strlen(json) + 13);
    tio_open_options strict = {.format = "safetensors", .flags = TIO_OPEN_STRICT};
    ASSERT_OK(tio_open_memory(f, len, &strict, &c, &e), e, "padded");
    assert_int_equal(tio_container_count(c), 2);
    assert_int_equal(tio_tensor_numel(tio_container_find(c, "a")), 0);
    assert_int_equal(tio_tensor_rank(tio_container_find(c, "s")), 0);
    assert_int_equal(tio_container_meta_count(c), 0);
    assert_string_equal(tio_container_prop_get(c, "header_size"), hs);
    tio_container_free(c);
    free(f);
    /* leading whitespace: read (as the crate does), reported; strict refuses */
    f = mk("\t\n{}", 0, NULL, 0, &len);
    tio_open_options lax = {.format = "safetensors"};
    ASSERT_OK(tio_open_memory(f, len, &lax, &c, &e), e, "leading ws");
    assert_int_equal(tio_container_warning_count(c), 1);
    assert_non_null(strstr(tio_container_warning(c, 0)->message, "MUST begin with '{'"));
    tio_container_free(c);
    assert_int_equal(tio_open_memory(f, len, &strict, &c, &e), TIO_E_INVALID);
    free(f);
    /* trailing JSON whitespace other than spaces: a finding */
    f = mk("{}\r\n", 0, NULL, 0, &len);
    ASSERT_OK(tio_open_memory(f, len, &lax, &c, &e), e, "trailing ws");
    assert_int_equal(tio_container_warning_count(c), 1);
    tio_container_free(c);
    free(f);
    /* unknown fields of a tensor entry are skipped, whatever they hold */
    ASSERT_OK(open_st("{\"a\":{\"x\":[1,{\"y\":null},true,-1.5e3,\"s\"],\"dtype\":\"U8\","
                      "\"shape\":[4],\"data_offsets\":[0,4]}}",
                      z, 4, TIO_OPEN_STRICT, &c, &e),
              e, "unknown field");
    tio_container_free(c);
    /* escapes in names decode */
    ASSERT_OK(open_st("{\"\\u00e9\\ud83d\\ude00\\/\":{\"dtype\":\"U8\",\"shape\":[4],"
                      "\"data_offsets\":[0,4]}}",
                      z, 4, TIO_OPEN_STRICT, &c, &e),
              e, "escapes");
    assert_non_null(tio_container_find(c, "\xc3\xa9\xf0\x9f\x98\x80/"));
    tio_container_free(c);
    /* tensors listed in any order in the header: offsets decide */
    ASSERT_OK(open_st("{\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]},"
                      "\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}",
                      z, 4, TIO_OPEN_STRICT, &c, &e),
              e, "any order");
    assert_string_equal(tio_tensor_name(tio_container_tensor(c, 0)), "b");
    tio_container_free(c);
}

/* Data views where the address is aligned; an aligned copy where not. */
static void test_alignment(void **state) {
    (void)state;
    /* header of 61 bytes: the buffer starts at 69, odd */
    const char *json = "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    size_t jl = strlen(json);
    const float v[2] = {1.5f, -2.0f};
    size_t len;
    uint8_t *f = mk(json, 0, v, sizeof v, &len);
    /* an 8-aligned copy of the file, so the address is that of the offset */
    uint64_t *mem = calloc((len + 7) / 8 + 1, 8);
    memcpy(mem, f, len);
    tio_container *c = NULL;
    tio_error e;
    tio_open_options o = {.format = "safetensors"};
    ASSERT_OK(tio_open_memory(mem, len, &o, &c, &e), e, "unaligned");
    const tio_tensor *t = tio_container_tensor(c, 0);
    assert_true(tio_tensor_is_aligned(t));
    assert_true((const uint8_t *)tio_tensor_data(t) != (const uint8_t *)mem + 8 + jl);
    assert_memory_equal(tio_tensor_data(t), v, sizeof v);
    tio_container_free(c);
    free(f);
    /* padded to 8 (as the reference writes): a zero-copy view */
    f = mk(json, (8 - jl % 8) % 8, v, sizeof v, &len);
    memcpy(mem, f, len);
    ASSERT_OK(tio_open_memory(mem, len, &o, &c, &e), e, "aligned");
    t = tio_container_tensor(c, 0);
    assert_ptr_equal(tio_tensor_data(t), (const uint8_t *)mem + len - 8);
    tio_container_free(c);
    free(f);
    free(mem);
}

/* What the writer refuses, and what it names. */
static void test_write_refusals(void **state) {
    (void)state;
    const int64_t s1[1] = {1};
    const uint8_t b[1] = {0};
    void *out = NULL;
    size_t olen;
    tio_error e;
    /* two tensors of one name */
    tio_container *c = tio_container_new();
    add(c, "w", TIO_UINT8, 1, s1, b, 1);
    add(c, "w", TIO_UINT8, 1, s1, b, 1);
    assert_int_equal(tio_save_memory(c, &save_st, &out, &olen, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "two tensors are named 'w'"));
    tio_container_free(c);
    /* an unnamed tensor whose index is taken as a name */
    c = tio_container_new();
    add(c, "1", TIO_UINT8, 1, s1, b, 1);
    add(c, NULL, TIO_UINT8, 1, s1, b, 1);
    assert_int_equal(tio_save_memory(c, &save_st, &out, &olen, &e), TIO_E_UNSUPPORTED);
    tio_container_free(c);
    /* the reserved key */
    c = tio_container_new();
    add(c, "__metadata__", TIO_UINT8, 1, s1, b, 1);
    assert_int_equal(tio_save_memory(c, &save_st, &out, &olen, &e), TIO_E_UNSUPPORTED);
    tio_container_free(c);
    /* a name that is not UTF-8 */
    c = tio_container_new();
    add(c, "a\xff", TIO_UINT8, 1, s1, b, 1);
    assert_int_equal(tio_save_memory(c, &save_st, &out, &olen, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "UTF-8"));
    tio_container_free(c);
    /* per-tensor metadata: lossy unless dropped */
    c = tio_container_new();
    add(c, "w", TIO_UINT8, 1, s1, b, 1);
    ASSERT_OK(tio_tensor_meta_set(tio_container_tensor(c, 0), "k", "v", &e), e, "tmeta");
    assert_int_equal(tio_save_memory(c, &save_st, &out, &olen, &e), TIO_E_LOSSY);
    tio_save_options drop = {.format = "safetensors", .flags = TIO_SAVE_DROP_METADATA};
    ASSERT_OK(tio_save_memory(c, &drop, &out, &olen, &e), e, "drop");
    tio_free(out);
    tio_container_free(c);
}

/* float8 widened to float32 for a format without it (btf). */
static void test_float8_widen(void **state) {
    (void)state;
    tio_container *c = NULL;
    tio_error e;
    ASSERT_OK(open_st("{\"e4\":{\"dtype\":\"F8_E4M3\",\"shape\":[4],\"data_offsets\":[0,4]},"
                      "\"e5\":{\"dtype\":\"F8_E5M2\",\"shape\":[4],\"data_offsets\":[4,8]}}",
                      (const uint8_t[8]){0x38, 0xc0, 0x7e, 0x01, 0x3c, 0x7b, 0xfc, 0x01}, 8, 0,
                      &c, &e),
              e, "open");
    tio_save_options btf = {.format = "btf", .flags = TIO_SAVE_DROP_NAMES};
    void *out = NULL;
    size_t olen;
    assert_int_equal(tio_save_memory(c, &btf, &out, &olen, &e), TIO_E_LOSSY);
    assert_non_null(strstr(e.message, "--widen"));
    btf.flags |= TIO_SAVE_WIDEN;
    ASSERT_OK(tio_save_memory(c, &btf, &out, &olen, &e), e, "widen");
    tio_container *w = NULL;
    tio_open_options o = {.format = "btf"};
    ASSERT_OK(tio_open_memory(out, olen, &o, &w, &e), e, "reopen");
    const float *a = tio_tensor_data(tio_container_tensor(w, 0));
    const float *b = tio_tensor_data(tio_container_tensor(w, 1));
    assert_true(a[0] == 1.0f && a[1] == -2.0f && a[2] == 448.0f && a[3] == 0.001953125f);
    assert_true(b[0] == 1.0f && b[1] == 57344.0f && b[2] < -3e38f && b[3] == 1.52587890625e-05f);
    tio_container_free(w);
    tio_free(out);
    tio_container_free(c);
}

static void test_registry(void **state) {
    (void)state;
    assert_string_equal(tio_format_for_path("m/model.safetensors"), "safetensors");
    assert_int_equal(tio_format_caps("safetensors"), TIO_CAP_NAMES | TIO_CAP_METADATA);
    assert_true(tio_format_supports_dtype("safetensors", TIO_FLOAT8_E5M2));
    assert_true(tio_format_supports_dtype("safetensors", TIO_BFLOAT16));
    assert_string_equal(tio_format_probe(crate_serialization, sizeof crate_serialization),
                        "safetensors");
    assert_string_equal(tio_format_probe(crate_empty, sizeof crate_empty), "safetensors");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crate_vectors), cmocka_unit_test(test_write_layout),
        cmocka_unit_test(test_all_dtypes),    cmocka_unit_test(test_rules),
        cmocka_unit_test(test_accepted),      cmocka_unit_test(test_alignment),
        cmocka_unit_test(test_write_refusals), cmocka_unit_test(test_float8_widen),
        cmocka_unit_test(test_registry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
