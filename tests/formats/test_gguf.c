/* GGUF: every class of bad input the reader refuses (each with its code and
 * a message naming what), the quantized layout through the public API,
 * typed metadata, the writer's layout and every other writer's refusal of
 * quantized tensors. The files are built here by hand from ggml's
 * docs/gguf.md. The values against gguf-py and NumPy: test_gguf.py. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tassert.h"
#include "tensio.h"

/* ------------------------------------------------------------ a builder */

typedef struct gb {
    uint8_t p[8192];
    size_t n;
} gb;

static void put(gb *b, const void *s, size_t n) {
    assert_true(b->n + n <= sizeof b->p);
    memcpy(b->p + b->n, s, n);
    b->n += n;
}
static void u32(gb *b, uint32_t v) {
    for (int i = 0; i < 4; i++) b->p[b->n++] = (uint8_t)(v >> (8 * i));
}
static void u64(gb *b, uint64_t v) {
    for (int i = 0; i < 8; i++) b->p[b->n++] = (uint8_t)(v >> (8 * i));
}
static void str(gb *b, const char *s) {
    u64(b, strlen(s));
    put(b, s, strlen(s));
}
/* A string of n bytes (NUL bytes included). */
static void strn(gb *b, const char *s, size_t n) {
    u64(b, n);
    put(b, s, n);
}
static void pad(gb *b, size_t align) {
    while (b->n % align) b->p[b->n++] = 0;
}
static void head(gb *b, uint32_t version, uint64_t nt, uint64_t nkv) {
    b->n = 0;
    put(b, "GGUF", 4);
    u32(b, version);
    u64(b, nt);
    u64(b, nkv);
}
/* A tensor info: name, ne[0..nd), ggml type, offset. */
static void tinfo(gb *b, const char *name, uint32_t nd, const int64_t *ne, uint32_t type,
                  uint64_t off) {
    str(b, name);
    u32(b, nd);
    for (uint32_t i = 0; i < nd; i++) u64(b, (uint64_t)ne[i]);
    u32(b, type);
    u64(b, off);
}

/* A good file: one KV, two f32 tensors [2] and [3] (ne), aligned 32. */
static void good(gb *b) {
    head(b, 3, 2, 1);
    str(b, "general.architecture");
    u32(b, 8);
    str(b, "x");
    int64_t ne1[] = {2}, ne2[] = {3};
    tinfo(b, "a", 1, ne1, 0, 0);
    tinfo(b, "b", 1, ne2, 0, 32);
    pad(b, 32);
    float v[] = {1, 2, 3, 4, 5};
    put(b, v, 8);
    pad(b, 32);
    put(b, v + 2, 12);
    pad(b, 32);
}

static int open_b(const gb *b, size_t n, const tio_limits *lim, unsigned flags,
                  tio_container **c, tio_error *e) {
    tio_open_options o = {.format = "gguf", .flags = flags, .limits = lim};
    *c = NULL;
    tio_error_clear(e);
    return tio_open_memory(b->p, n, &o, c, e);
}

/* The bytes must be refused with `code` and a message holding `needle`. */
static void refused_lim(const gb *b, const tio_limits *lim, int code, const char *needle) {
    tio_container *c;
    tio_error e;
    int rc = open_b(b, b->n, lim, 0, &c, &e);
    if (rc != code || !strstr(e.message, needle) || strncmp(e.message, "gguf: ", 6) != 0) {
        fprintf(stderr, "expected %s with '%s', got %s: %s\n", tio_status_name(code), needle,
                tio_status_name(rc), e.message);
        fail();
    }
    assert_null(c);
}
static void refused(const gb *b, int code, const char *needle) {
    refused_lim(b, NULL, code, needle);
}

/* --------------------------------------------------------------- reading */

static void test_good(void **state) {
    (void)state;
    gb b;
    good(&b);
    tio_container *c;
    tio_error e;
    ASSERT_OK(open_b(&b, b.n, NULL, TIO_OPEN_STRICT, &c, &e), e, "open");
    assert_int_equal(tio_container_count(c), 2);
    tio_tensor *t = tio_container_tensor(c, 1);
    assert_string_equal(tio_tensor_name(t), "b");
    assert_int_equal(tio_tensor_shape(t)[0], 3);
    assert_int_equal(((const float *)tio_tensor_data(t))[2], 5);
    assert_string_equal(tio_container_meta_get(c, "general.architecture"), "x");
    assert_string_equal(tio_container_meta_type(c, "general.architecture"), "string");
    assert_string_equal(tio_container_prop_get(c, "data_offset"), "160");
    assert_string_equal(tio_format_probe(b.p, b.n), "gguf");
    /* written back: the same bytes */
    void *out;
    size_t on;
    tio_save_options so = {.format = "gguf"};
    ASSERT_OK(tio_save_memory(c, &so, &out, &on, &e), e, "save");
    assert_int_equal(on, b.n);
    assert_memory_equal(out, b.p, b.n);
    tio_free(out);
    tio_container_free(c);
}

static void test_magic_version(void **state) {
    (void)state;
    gb b;
    good(&b);
    b.p[0] = 'X';
    refused(&b, TIO_E_MAGIC, "expected \"GGUF\"");
    good(&b);
    b.p[4] = 1;
    refused(&b, TIO_E_UNSUPPORTED, "GGUFv1");
    b.p[4] = 4;
    refused(&b, TIO_E_UNSUPPORTED, "version 4");
    b.p[4] = 0;
    refused(&b, TIO_E_UNSUPPORTED, "version 0");
    b.p[4] = 0;
    b.p[7] = 3; /* 0x03000000: a big-endian v3 */
    refused(&b, TIO_E_UNSUPPORTED, "big-endian");
}

static void test_counts(void **state) {
    (void)state;
    gb b;
    good(&b);
    tio_limits lim = {0};
    lim.max_tensors = 1;
    refused_lim(&b, &lim, TIO_E_LIMIT, "max_tensors");
    memset(&lim, 0, sizeof lim);
    lim.max_header_bytes = 64;
    refused_lim(&b, &lim, TIO_E_LIMIT, "max_header_bytes");
    memset(&lim, 0, sizeof lim);
    lim.max_objects = 0;
    head(&b, 3, UINT64_MAX, 0);
    refused(&b, TIO_E_LIMIT, "tensor count");
    head(&b, 3, 1000, 0);
    refused(&b, TIO_E_TRUNCATED, "1000 tensor infos");
    head(&b, 3, 0, UINT64_MAX >> 1);
    refused(&b, TIO_E_LIMIT, "KV count");
    head(&b, 3, 0, 1000);
    refused(&b, TIO_E_TRUNCATED, "1000 KV pairs");
}

static void test_strings(void **state) {
    (void)state;
    gb b;
    head(&b, 3, 0, 1);
    u64(&b, 1000); /* a key past the end */
    put(&b, "abcdefgh", 8);
    put(&b, "abcdefgh", 8);
    refused(&b, TIO_E_TRUNCATED, "key");
    head(&b, 3, 0, 1);
    str(&b, "k");
    u32(&b, 8);
    u64(&b, UINT64_MAX); /* a string value past the end */
    put(&b, "abcdefgh", 8);
    refused(&b, TIO_E_LIMIT, "max_name_bytes");
    head(&b, 3, 0, 1);
    str(&b, "k");
    u32(&b, 8);
    u64(&b, 100); /* past the end, NUL bytes before it (a value may hold them) */
    put(&b, "a\0b\0efgh", 8);
    refused(&b, TIO_E_TRUNCATED, "string bytes");
    tio_limits lim = {0};
    lim.max_name_bytes = 4;
    head(&b, 3, 0, 1);
    str(&b, "long key");
    u32(&b, 0);
    put(&b, "x", 1);
    refused_lim(&b, &lim, TIO_E_LIMIT, "max_name_bytes 4");
    head(&b, 3, 0, 1);
    str(&b, "");
    u32(&b, 0);
    put(&b, "xxxx", 4);
    refused(&b, TIO_E_CORRUPT, "key is empty");
    head(&b, 3, 0, 2);
    str(&b, "k");
    u32(&b, 0);
    put(&b, "x", 1);
    str(&b, "k");
    u32(&b, 0);
    put(&b, "x", 1);
    refused(&b, TIO_E_CORRUPT, "both 'k'");
    head(&b, 3, 0, 1);
    str(&b, "k");
    u32(&b, 13);
    put(&b, "xxxxxxxx", 8);
    refused(&b, TIO_E_CORRUPT, "value type 13");
    /* an array whose count passes the end, one of an unknown type, nesting */
    head(&b, 3, 0, 1);
    str(&b, "k");
    u32(&b, 9);
    u32(&b, 6);
    u64(&b, 1u << 30);
    put(&b, "xxxxxxxx", 8);
    refused(&b, TIO_E_TRUNCATED, "array of 1073741824");
    head(&b, 3, 0, 1);
    str(&b, "k");
    u32(&b, 9);
    u32(&b, 77);
    u64(&b, 0);
    refused(&b, TIO_E_CORRUPT, "element type 77");
    head(&b, 3, 0, 1);
    str(&b, "k");
    u32(&b, 9);
    for (int i = 0; i < 70; i++) {
        u32(&b, 9);
        u64(&b, 1);
    }
    u32(&b, 0);
    u64(&b, 0);
    refused(&b, TIO_E_LIMIT, "max_depth");
    /* nested arrays of two element types */
    head(&b, 3, 0, 1);
    str(&b, "k");
    u32(&b, 9);
    u32(&b, 9);
    u64(&b, 2);
    u32(&b, 0);
    u64(&b, 1);
    put(&b, "x", 1);
    u32(&b, 5);
    u64(&b, 0);
    refused(&b, TIO_E_UNSUPPORTED, "one element type");
    /* a NUL in a tensor name */
    head(&b, 3, 1, 0);
    u64(&b, 3);
    put(&b, "a\0b", 3);
    u32(&b, 0);
    u32(&b, 0);
    u64(&b, 0);
    refused(&b, TIO_E_UNSUPPORTED, "NUL");
    /* a NUL in a key (ggml finds keys with strcmp) */
    head(&b, 3, 0, 1);
    strn(&b, "k\0k", 3);
    u32(&b, 0);
    put(&b, "x", 1);
    refused(&b, TIO_E_UNSUPPORTED, "NUL");
}

/* A string value may hold NUL bytes (gguf-py writes them from a str with
 * "\0", ggml keeps the length): read with its length, shown by the _n API,
 * written back byte for byte; in an array it is the JSON text's \u0000. */
static void test_nul_values(void **state) {
    (void)state;
    gb b;
    head(&b, 3, 0, 3);
    str(&b, "k"); /* string "a\0b\0" */
    u32(&b, 8);
    strn(&b, "a\0b\0", 4);
    str(&b, "arr"); /* array[string] ["\0x", ""] */
    u32(&b, 9);
    u32(&b, 8);
    u64(&b, 2);
    strn(&b, "\0x", 2);
    strn(&b, "", 0);
    str(&b, "z"); /* string "\0" */
    u32(&b, 8);
    strn(&b, "\0", 1);
    tio_container *c;
    tio_error e;
    ASSERT_OK(open_b(&b, b.n, NULL, TIO_OPEN_STRICT, &c, &e), e, "open");
    size_t kl = 0, vl = 0;
    const char *k = NULL, *v = NULL;
    ASSERT_OK(tio_container_meta_at_n(c, 0, &k, &kl, &v, &vl), e, "at_n");
    assert_int_equal(kl, 1);
    assert_int_equal(vl, 4);
    assert_memory_equal(v, "a\0b\0", 5);
    assert_string_equal(tio_container_meta_get(c, "k"), "a"); /* the C-string view */
    assert_string_equal(tio_container_meta_type(c, "k"), "string");
    v = tio_container_meta_get_n(c, "arr", 3, &vl);
    assert_non_null(v);
    assert_int_equal(vl, strlen(v));
    assert_string_equal(v, "[\"\\u0000x\",\"\"]");
    v = tio_container_meta_get_n(c, "z", 1, &vl);
    assert_int_equal(vl, 1);
    void *out = NULL;
    size_t olen = 0;
    tio_save_options so = {.format = "gguf"};
    ASSERT_OK(tio_save_memory(c, &so, &out, &olen, &e), e, "save");
    assert_int_equal(olen, b.n);
    assert_memory_equal(out, b.p, b.n);
    tio_free(out);
    /* set through the API, with lengths */
    ASSERT_OK(tio_container_meta_set_typed_n(c, "k", 1, "\0\0\0", 3, "string", &e), e, "set");
    v = tio_container_meta_get_n(c, "k", 1, &vl);
    assert_int_equal(vl, 3);
    ASSERT_OK(tio_save_memory(c, &so, &out, &olen, &e), e, "save 2");
    static const char kv3[] = "\x01\0\0\0\0\0\0\0k\x08\0\0\0\x03\0\0\0\0\0\0\0\0\0\0";
    int found = 0;
    for (size_t i = 0; i + 24 <= olen && !found; i++)
        found = memcmp((const char *)out + i, kv3, 24) == 0;
    assert_true(found);
    tio_free(out);
    /* a number holding a NUL is no number; raw NUL in an array's text neither */
    ASSERT_OK(tio_container_meta_set_typed_n(c, "n", 1, "12\0x", 4, "uint32", &e), e, "set n");
    assert_int_equal(tio_save_memory(c, &so, &out, &olen, &e), TIO_E_ARGUMENT);
    assert_non_null(strstr(e.message, "'n'"));
    ASSERT_OK(tio_container_meta_set_typed_n(c, "n", 1, "[1]\0", 4, "array[uint32]", &e), e, "set a");
    assert_int_equal(tio_save_memory(c, &so, &out, &olen, &e), TIO_E_ARGUMENT);
    ASSERT_OK(tio_container_meta_set_typed_n(c, "n", 1, "[1]", 3, "array[uint32]", &e), e, "set b");
    ASSERT_OK(tio_save_memory(c, &so, &out, &olen, &e), e, "save 3");
    tio_free(out);
    /* formats whose strings cannot hold NUL refuse it by key; dropped, it goes */
    tio_save_options st = {.format = "safetensors"};
    assert_int_equal(tio_save_memory(c, &st, &out, &olen, &e), TIO_E_LOSSY);
    assert_non_null(strstr(e.message, "metadata \"k\" whose value holds a NUL byte"));
    st.flags = TIO_SAVE_DROP_METADATA;
    ASSERT_OK(tio_save_memory(c, &st, &out, &olen, &e), e, "dropped");
    tio_free(out);
    /* no format takes a key holding NUL, GGUF included */
    ASSERT_OK(tio_container_meta_set_n(c, "a\0b", 3, "v", 1, &e), e, "key");
    assert_null(tio_container_meta_get(c, "a"));
    assert_int_equal(tio_save_memory(c, &so, &out, &olen, &e), TIO_E_LOSSY);
    assert_non_null(strstr(e.message, "\"a\\x00b\" whose key holds a NUL byte"));
    tio_container_free(c);
}

static void test_alignment(void **state) {
    (void)state;
    gb b;
    uint32_t bad[] = {0, 3, 48};
    for (size_t i = 0; i < 3; i++) {
        head(&b, 3, 0, 1);
        str(&b, "general.alignment");
        u32(&b, 4);
        u32(&b, bad[i]);
        refused(&b, TIO_E_CORRUPT, "power of two");
    }
    head(&b, 3, 0, 1);
    str(&b, "general.alignment");
    u32(&b, 10); /* uint64 */
    u64(&b, 32);
    refused(&b, TIO_E_CORRUPT, "expected uint32");
}

static void test_tensor_infos(void **state) {
    (void)state;
    gb b;
    int64_t ne5[] = {1, 1, 1, 1, 1};
    head(&b, 3, 1, 0);
    tinfo(&b, "t", 5, ne5, 0, 0);
    refused(&b, TIO_E_CORRUPT, "n_dims 5");
    int64_t big[] = {INT64_C(1) << 32, INT64_C(1) << 32};
    head(&b, 3, 1, 0);
    tinfo(&b, "t", 2, big, 0, 0);
    refused(&b, TIO_E_OVERFLOW, "overflows");
    int64_t neg[] = {-1};
    head(&b, 3, 1, 0);
    tinfo(&b, "t", 1, neg, 0, 0);
    refused(&b, TIO_E_CORRUPT, "is -1");
    int64_t one[] = {32};
    uint32_t unknown[] = {4, 5, 31, 36, 43, 1000};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        head(&b, 3, 1, 0);
        tinfo(&b, "t", 1, one, unknown[i], 0);
        refused(&b, TIO_E_DTYPE, "ggml type");
    }
    int64_t odd[] = {33};
    head(&b, 3, 1, 0);
    tinfo(&b, "t", 1, odd, 2, 0); /* q4_0 rows of 33 */
    pad(&b, 32);
    refused(&b, TIO_E_CORRUPT, "not whole blocks");
    char longname[80];
    memset(longname, 'n', 64);
    longname[64] = 0;
    head(&b, 3, 1, 0);
    tinfo(&b, longname, 1, one, 0, 0);
    refused(&b, TIO_E_CORRUPT, "ggml's limit");
    head(&b, 3, 2, 0);
    tinfo(&b, "t", 1, one, 0, 0);
    tinfo(&b, "t", 1, one, 0, 128);
    refused(&b, TIO_E_CORRUPT, "both 't'");
}

static void test_offsets(void **state) {
    (void)state;
    gb b;
    good(&b);
    /* misaligned, overlapping, a gap: every offset but the packed one */
    uint64_t offs[] = {4, 0, 64};
    for (size_t i = 0; i < 3; i++) {
        good(&b);
        /* tensor b's offset: the last u64 of its info, before the padding */
        size_t at = 4 + 4 + 8 + 8 + (8 + 20 + 4 + 8 + 1) + (8 + 1 + 4 + 8 + 4 + 8) +
                    (8 + 1 + 4 + 8 + 4);
        for (int k = 0; k < 8; k++) b.p[at + (size_t)k] = (uint8_t)(offs[i] >> (8 * k));
        refused(&b, TIO_E_CORRUPT, "expected 32");
    }
    /* out of the file: the data cut short */
    good(&b);
    b.n -= 32;
    refused(&b, TIO_E_BOUNDS, "tensor 1");
    /* header padding past the end */
    head(&b, 3, 1, 0);
    int64_t ne[] = {0};
    tinfo(&b, "t", 1, ne, 0, 0);
    refused(&b, TIO_E_TRUNCATED, "data section");
}

static void test_padding_findings(void **state) {
    (void)state;
    gb b;
    good(&b);
    b.p[b.n - 1] = 7; /* the last tensor's padding */
    tio_container *c;
    tio_error e;
    ASSERT_OK(open_b(&b, b.n, NULL, 0, &c, &e), e, "open");
    assert_int_equal(tio_container_warning_count(c), 1);
    assert_non_null(strstr(tio_container_warning(c, 0)->message, "padding"));
    tio_container_free(c);
    assert_int_equal(open_b(&b, b.n, NULL, TIO_OPEN_STRICT, &c, &e), TIO_E_INVALID);
    good(&b);
    b.p[b.n++] = 0; /* a trailing byte */
    ASSERT_OK(open_b(&b, b.n, NULL, 0, &c, &e), e, "open");
    assert_int_equal(tio_container_warning_count(c), 1);
    assert_non_null(strstr(tio_container_warning(c, 0)->message, "trailing"));
    tio_container_free(c);
    /* a bool byte of 2 is true, with a finding */
    head(&b, 3, 0, 1);
    str(&b, "k");
    u32(&b, 7);
    put(&b, "\2", 1);
    ASSERT_OK(open_b(&b, b.n, NULL, 0, &c, &e), e, "open");
    assert_string_equal(tio_container_meta_get(c, "k"), "true");
    assert_int_equal(tio_container_warning_count(c), 1);
    tio_container_free(c);
}

/* Every prefix and every flipped byte: refused cleanly or read. */
static void test_truncation_bitflip(void **state) {
    (void)state;
    gb b;
    good(&b);
    for (size_t n = 0; n < b.n; n++) {
        tio_container *c;
        tio_error e;
        int rc = open_b(&b, n, NULL, 0, &c, &e);
        if (rc == TIO_OK) {
            assert_true(n >= 96 + 32 + 12); /* only the last padding may go */
            tio_container_free(c);
        } else {
            assert_null(c);
            assert_true(e.offset >= -1 && e.offset <= (int64_t)n);
        }
    }
    for (size_t k = 0; k < b.n; k++) {
        for (int bit = 0; bit < 8; bit++) {
            b.p[k] ^= (uint8_t)(1u << bit);
            tio_container *c;
            tio_error e;
            if (open_b(&b, b.n, NULL, 0, &c, &e) == TIO_OK) {
                for (size_t i = 0; i < tio_container_count(c); i++) {
                    uint8_t h[32];
                    assert_int_equal(tio_tensor_sha256(tio_container_tensor(c, i),
                                                       TIO_HASH_DENSE, h, &e),
                                     TIO_OK);
                }
                tio_container_free(c);
            } else {
                assert_null(c);
                assert_true(strncmp(e.message, "gguf: ", 6) == 0);
            }
            b.p[k] ^= (uint8_t)(1u << bit);
        }
    }
}

/* ----------------------------------------------------- quantized, typed */

static void test_quant_api(void **state) {
    (void)state;
    size_t el, by;
    assert_int_equal(tio_quant_block(TIO_QUANT_Q4_K, &el, &by), TIO_OK);
    assert_int_equal(el, 256);
    assert_int_equal(by, 144);
    assert_int_equal(tio_quant_block(TIO_QUANT_Q8_0, &el, &by), TIO_OK);
    assert_int_equal(by, 34);
    assert_int_equal(tio_quant_block((tio_quant)4, &el, &by), TIO_E_DTYPE);
    assert_string_equal(tio_quant_name(TIO_QUANT_IQ2_XXS), "iq2_xxs");
    assert_int_equal(tio_quant_from_name("q6_K"), TIO_QUANT_Q6_K);
    assert_int_equal(tio_quant_from_name("float32"), TIO_QUANT_NONE);
    assert_true(tio_quant_can_dequantize(TIO_QUANT_Q3_K));
    assert_false(tio_quant_can_dequantize(TIO_QUANT_IQ2_XXS));
    assert_false(tio_quant_can_dequantize(TIO_QUANT_Q8_1)); /* ggml has no dequantizer */
    static const tio_quant more[] = {TIO_QUANT_Q8_K,  TIO_QUANT_IQ4_NL, TIO_QUANT_IQ4_XS,
                                     TIO_QUANT_TQ1_0, TIO_QUANT_TQ2_0,  TIO_QUANT_MXFP4,
                                     TIO_QUANT_NVFP4, TIO_QUANT_Q1_0,   TIO_QUANT_Q2_0};
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
        assert_true(tio_quant_can_dequantize(more[i]));

    tio_container *c = tio_container_new();
    uint8_t blocks[2 * 18] = {0};
    blocks[1] = 0x38; /* d = 0.5 (fp16 0x3800) */
    for (int j = 0; j < 16; j++) blocks[2 + j] = (uint8_t)(j | (j << 4));
    memcpy(blocks + 18, blocks, 18);
    int64_t shape[] = {2, 32};
    tio_tensor_desc d = {"q", TIO_FLOAT32, 2, shape, TIO_LAYOUT_QUANT, blocks, sizeof blocks,
                         0, NULL};
    tio_error e;
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_E_ARGUMENT);
    tio_tensor *t;
    ASSERT_OK(tio_container_add_quantized(c, &d, TIO_QUANT_Q4_0, 0, &t, &e), e, "add");
    assert_int_equal(tio_tensor_quant(t), TIO_QUANT_Q4_0);
    assert_int_equal(tio_tensor_numel(t), 64);
    float f[64];
    ASSERT_OK(tio_tensor_densify(t, f, sizeof f, &e), e, "densify");
    assert_true(f[0] == -4.0f && f[15] == 3.5f && f[16] == -4.0f && f[63] == 3.5f);
    /* MXFP4: E8M0 scale 127 (2^0), FP4 (E2M1) nibbles 0..15 (0 0.5 1 1.5 2 3 4 6,
     * then their negatives), low nibbles elements 0..15, high 16..31 */
    uint8_t mx[17] = {127};
    for (int j = 0; j < 16; j++) mx[1 + j] = (uint8_t)(j | ((15 - j) << 4));
    int64_t mshape[] = {32};
    tio_tensor_desc md = {"m", TIO_FLOAT32, 1, mshape, TIO_LAYOUT_QUANT, mx, sizeof mx, 0, NULL};
    ASSERT_OK(tio_container_add_quantized(c, &md, TIO_QUANT_MXFP4, 0, &t, &e), e, "mxfp4");
    float g[256];
    ASSERT_OK(tio_tensor_densify(t, g, 32 * sizeof(float), &e), e, "densify mxfp4");
    assert_true(g[0] == 0.0f && g[1] == 0.5f && g[5] == 3.0f && g[7] == 6.0f && g[9] == -0.5f &&
                g[15] == -6.0f && g[16] == -6.0f && g[31] == 0.0f);
    assert_true(g[8] == 0.0f && !signbit(g[8])); /* nibble 8, -0 in E2M1: ggml gives +0 */
    /* IQ2_XXS is refused, the message naming what can be */
    int64_t ishape[] = {256};
    uint8_t iq[66] = {0};
    tio_tensor_desc id = {"i", TIO_FLOAT32, 1, ishape, TIO_LAYOUT_QUANT, iq, sizeof iq, 0, NULL};
    ASSERT_OK(tio_container_add_quantized(c, &id, TIO_QUANT_IQ2_XXS, 0, &t, &e), e, "iq2_xxs");
    assert_int_equal(tio_tensor_densify(t, g, sizeof g, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "iq2_xxs blocks"));
    assert_non_null(strstr(e.message, "q4_0 q4_1 q5_0 q5_1 q8_0 q2_K"));
    assert_non_null(strstr(e.message, "mxfp4 nvfp4 q1_0 q2_0)"));
    tio_container_free(c);
    c = tio_container_new();
    ASSERT_OK(tio_container_add_quantized(c, &d, TIO_QUANT_Q4_0, 0, &t, &e), e, "add again");

    /* wrong sizes and rows */
    d.nbytes = 35;
    assert_int_equal(tio_container_add_quantized(c, &d, TIO_QUANT_Q4_0, 0, NULL, &e),
                     TIO_E_CORRUPT);
    d.nbytes = sizeof blocks;
    int64_t odd[] = {4, 16};
    d.shape = odd;
    assert_int_equal(tio_container_add_quantized(c, &d, TIO_QUANT_Q4_0, 0, NULL, &e),
                     TIO_E_CORRUPT);
    d.shape = shape;
    assert_int_equal(tio_container_add_quantized(c, &d, (tio_quant)5, 0, NULL, &e),
                     TIO_E_DTYPE);

    /* every writer without TIO_CAP_QUANT refuses it; --dequantize writes it */
    for (size_t i = 0; i < tio_format_count(); i++) {
        const char *fn = tio_format_name(i);
        if (!tio_format_can_write(fn)) continue; /* read only */
        tio_save_options so = {.format = fn, .flags = TIO_SAVE_DROP_NAMES};
        int rc = tio_check_save(c, &so, &e);
        if (strcmp(fn, "gguf") == 0) {
            ASSERT_OK(rc, e, fn);
            continue;
        }
        if (tio_format_caps(fn) & TIO_CAP_GRAPH) {
            assert_int_equal(rc, TIO_E_UNSUPPORTED); /* needs a graph */
            continue;
        }
        if (rc != TIO_E_LOSSY || !strstr(e.message, "q4_0") || !strstr(e.message, "tensor 0")) {
            fprintf(stderr, "%s: %s: %s\n", fn, tio_status_name(rc), e.message);
            fail();
        }
        so.flags |= TIO_SAVE_DEQUANTIZE;
        ASSERT_OK(tio_check_save(c, &so, &e), e, fn);
    }
    tio_save_options st = {.format = "safetensors", .flags = TIO_SAVE_DEQUANTIZE};
    void *out;
    size_t on;
    ASSERT_OK(tio_save_memory(c, &st, &out, &on, &e), e, "safetensors");
    tio_container *r;
    tio_open_options oo = {.format = "safetensors"};
    ASSERT_OK(tio_open_memory(out, on, &oo, &r, &e), e, "reopen");
    assert_memory_equal(tio_tensor_data(tio_container_tensor(r, 0)), f, sizeof f);
    tio_container_free(r);
    tio_free(out);
    /* and GGUF keeps the blocks */
    tio_save_options gs = {.format = "gguf"};
    ASSERT_OK(tio_save_memory(c, &gs, &out, &on, &e), e, "gguf");
    oo.format = "gguf";
    ASSERT_OK(tio_open_memory(out, on, &oo, &r, &e), e, "reopen gguf");
    t = tio_container_tensor(r, 0);
    assert_int_equal(tio_tensor_layout(t), TIO_LAYOUT_QUANT);
    assert_int_equal(tio_tensor_quant(t), TIO_QUANT_Q4_0);
    assert_memory_equal(tio_tensor_data(t), blocks, sizeof blocks);
    tio_container_free(r);
    tio_free(out);
    /* unless asked to dequantize: float32 values in GGUF too */
    gs.flags = TIO_SAVE_DEQUANTIZE;
    ASSERT_OK(tio_save_memory(c, &gs, &out, &on, &e), e, "gguf dequantized");
    ASSERT_OK(tio_open_memory(out, on, &oo, &r, &e), e, "reopen gguf dequantized");
    t = tio_container_tensor(r, 0);
    assert_int_equal(tio_tensor_layout(t), TIO_LAYOUT_DENSE);
    assert_int_equal(tio_tensor_dtype(t), TIO_FLOAT32);
    assert_memory_equal(tio_tensor_data(t), f, sizeof f);
    tio_container_free(r);
    tio_free(out);
    tio_container_free(c);
}

static void test_typed_meta(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    tio_error e;
    ASSERT_OK(tio_container_meta_set_typed(c, "a", "7", "uint16", &e), e, "a");
    ASSERT_OK(tio_container_meta_set_typed(c, "b", "[[1,2],[3]]", "array[array[int8]]", &e),
              e, "b");
    ASSERT_OK(tio_container_meta_set_typed(c, "c", "[\"x\\u0000y\",\"\"]", "array[string]", &e),
              e, "c");
    ASSERT_OK(tio_container_meta_set(c, "d", "plain", &e), e, "d");
    assert_int_equal(tio_container_meta_set_typed(c, "e", "1", "uint128", &e), TIO_E_ARGUMENT);
    assert_int_equal(tio_container_meta_set_typed(c, "e", "1", "array[int8", &e),
                     TIO_E_ARGUMENT);
    assert_string_equal(tio_container_meta_type(c, "b"), "array[array[int8]]");
    assert_null(tio_container_meta_type(c, "d"));
    void *out;
    size_t on;
    tio_save_options gs = {.format = "gguf"};
    ASSERT_OK(tio_save_memory(c, &gs, &out, &on, &e), e, "save");
    /* the exact bytes: header, then the four pairs */
    gb b;
    head(&b, 3, 0, 4);
    str(&b, "a");
    u32(&b, 2);
    put(&b, "\7\0", 2);
    str(&b, "b");
    u32(&b, 9);
    u32(&b, 9);
    u64(&b, 2);
    u32(&b, 1);
    u64(&b, 2);
    put(&b, "\1\2", 2);
    u32(&b, 1);
    u64(&b, 1);
    put(&b, "\3", 1);
    str(&b, "c");
    u32(&b, 9);
    u32(&b, 8);
    u64(&b, 2);
    u64(&b, 3);
    put(&b, "x\0y", 3);
    u64(&b, 0);
    str(&b, "d");
    u32(&b, 8);
    str(&b, "plain");
    assert_int_equal(on, b.n);
    assert_memory_equal(out, b.p, b.n);
    tio_free(out);
    /* a plain set clears the type; a value its type cannot read is refused */
    ASSERT_OK(tio_container_meta_set(c, "a", "seven", &e), e, "a");
    assert_null(tio_container_meta_type(c, "a"));
    ASSERT_OK(tio_container_meta_set_typed(c, "a", "70000", "uint16", &e), e, "a");
    assert_int_equal(tio_save_memory(c, &gs, &out, &on, &e), TIO_E_ARGUMENT);
    assert_non_null(strstr(e.message, "'a'"));
    ASSERT_OK(tio_container_meta_set_typed(c, "a", "1", "uint16", &e), e, "a");
    ASSERT_OK(tio_container_meta_set_typed(c, "b", "[[1,2],3]", "array[array[int8]]", &e), e,
              "b");
    assert_int_equal(tio_save_memory(c, &gs, &out, &on, &e), TIO_E_ARGUMENT);
    ASSERT_OK(tio_container_meta_set_typed(c, "b", "[]", "array[array[int8]]", &e), e, "b");
    ASSERT_OK(tio_container_meta_set_typed(c, "general.alignment", "48", "uint32", &e), e, "al");
    assert_int_equal(tio_save_memory(c, &gs, &out, &on, &e), TIO_E_UNSUPPORTED);
    tio_container_free(c);
}

static void test_writer_refusals(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    tio_error e;
    int64_t s5[] = {1, 1, 1, 1, 2};
    uint8_t bytes[16] = {0};
    tio_tensor_desc d = {"t", TIO_UINT8, 1, s5 + 4, TIO_LAYOUT_DENSE, bytes, 2, 0, NULL};
    ASSERT_OK(tio_container_add(c, &d, 0, NULL, &e), e, "add");
    tio_save_options gs = {.format = "gguf"};
    assert_int_equal(tio_check_save(c, &gs, &e), TIO_E_LOSSY); /* uint8: no ggml type */
    tio_container_free(c);
    c = tio_container_new();
    d.dtype = TIO_FLOAT32;
    d.rank = 5;
    d.shape = s5;
    d.nbytes = 8;
    ASSERT_OK(tio_container_add(c, &d, 0, NULL, &e), e, "add");
    assert_int_equal(tio_check_save(c, &gs, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "at most 4"));
    tio_container_free(c);
    c = tio_container_new();
    d.rank = 1;
    d.shape = s5 + 4;
    d.name = NULL; /* written as "0" */
    ASSERT_OK(tio_container_add(c, &d, 0, NULL, &e), e, "add");
    d.name = "0";
    ASSERT_OK(tio_container_add(c, &d, 0, NULL, &e), e, "add");
    assert_int_equal(tio_check_save(c, &gs, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "both '0'"));
    tio_container_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),         cmocka_unit_test(test_magic_version),
        cmocka_unit_test(test_counts),       cmocka_unit_test(test_strings),
        cmocka_unit_test(test_nul_values),
        cmocka_unit_test(test_alignment),    cmocka_unit_test(test_tensor_infos),
        cmocka_unit_test(test_offsets),      cmocka_unit_test(test_padding_findings),
        cmocka_unit_test(test_truncation_bitflip), cmocka_unit_test(test_quant_api),
        cmocka_unit_test(test_typed_meta),   cmocka_unit_test(test_writer_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
