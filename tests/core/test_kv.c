/* tio_kv: ordered pairs packed into chunks, replacements in place or loose.
 * Order, lookups, replacement (shorter, longer, self, overlapping), many
 * entries across chunks and array growth, values larger than a chunk, and
 * that replacing a value again and again holds one allocation for it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

static void set_ok(tio_kv *kv, const char *k, const char *v) {
    tio_error e;
    assert_int_equal(tio__kv_set(kv, k, v, &e), TIO_OK);
}

static void test_order_and_replace(void **state) {
    (void)state;
    tio_kv kv;
    memset(&kv, 0, sizeof kv);
    assert_null(tio__kv_get(&kv, "a"));
    set_ok(&kv, "a", "1");
    set_ok(&kv, "b", "22");
    set_ok(&kv, "c", "");
    assert_int_equal(kv.count, 3);
    assert_string_equal(tio__kv_get(&kv, "b"), "22");
    set_ok(&kv, "b", "3");                     /* shorter: in place */
    assert_string_equal(tio__kv_get(&kv, "b"), "3");
    assert_int_equal(kv.loose[1], 0);
    set_ok(&kv, "b", "a longer value than before"); /* its own allocation */
    assert_string_equal(tio__kv_get(&kv, "b"), "a longer value than before");
    assert_int_equal(kv.loose[1], 1);
    set_ok(&kv, "b", tio__kv_get(&kv, "b"));       /* itself */
    set_ok(&kv, "b", tio__kv_get(&kv, "b") + 2);   /* overlapping its old bytes */
    assert_string_equal(tio__kv_get(&kv, "b"), "longer value than before");
    set_ok(&kv, "c", "was empty");
    assert_int_equal(kv.count, 3); /* replacing keeps the order and count */
    assert_string_equal(kv.keys[0], "a");
    assert_string_equal(kv.keys[1], "b");
    assert_string_equal(kv.keys[2], "c");
    assert_string_equal(kv.values[2], "was empty");
    assert_string_equal(tio__kv_get(&kv, "a"), "1");
    tio_error e;
    assert_int_equal(tio__kv_set(&kv, NULL, "x", &e), TIO_E_ARGUMENT);
    assert_int_equal(tio__kv_set(&kv, "x", NULL, &e), TIO_E_ARGUMENT);
    assert_null(tio__kv_get(&kv, NULL));
    tio__kv_free(&kv);
    assert_int_equal(kv.count, 0);
    assert_null(kv.keys);
    tio__kv_free(&kv); /* twice is harmless */
}

/* Keys and values are byte strings: NUL bytes kept, lengths carried, a key
 * found only at its own length; the C-string forms see up to the first NUL. */
static void test_byte_strings(void **state) {
    (void)state;
    tio_kv kv;
    memset(&kv, 0, sizeof kv);
    tio_error e;
    assert_int_equal(tio__kv_set_n(&kv, "a\0b", 3, "x\0y\0", 4, &e), TIO_OK);
    assert_int_equal(tio__kv_set_n(&kv, "a", 1, "plain", 5, &e), TIO_OK); /* another key */
    assert_int_equal(tio__kv_append_n(&kv, "", 0, "", 0, &e), TIO_OK);      /* the empty key */
    assert_int_equal(kv.count, 3);
    size_t n = 0;
    const char *v = tio__kv_get_n(&kv, "a\0b", 3, &n);
    assert_non_null(v);
    assert_int_equal(n, 4);
    assert_memory_equal(v, "x\0y\0", 5); /* and NUL-terminated */
    assert_string_equal(tio__kv_get(&kv, "a"), "plain");
    assert_null(tio__kv_get_n(&kv, "a\0", 2, NULL));
    assert_true(tio__kv_has_nul(&kv, 0, 0) && tio__kv_has_nul(&kv, 0, 1));
    assert_false(tio__kv_has_nul(&kv, 1, 0) || tio__kv_has_nul(&kv, 1, 1));
    assert_non_null(tio__kv_get_n(&kv, "", 0, &n));
    assert_int_equal(n, 0);
    /* replaced shorter (in place) and longer (loose), lengths follow */
    assert_int_equal(tio__kv_set_n(&kv, "a\0b", 3, "\0", 1, &e), TIO_OK);
    assert_non_null(tio__kv_get_n(&kv, "a\0b", 3, &n));
    assert_int_equal(n, 1);
    assert_int_equal(tio__kv_set_n(&kv, "a\0b", 3, "0123456789\0", 11, &e), TIO_OK);
    v = tio__kv_get_n(&kv, "a\0b", 3, &n);
    assert_int_equal(n, 11);
    assert_memory_equal(v, "0123456789\0", 12);
    assert_int_equal(kv.klens[0], 3);
    assert_int_equal(kv.count, 3);
    tio__kv_free(&kv);
}

static void test_many(void **state) {
    (void)state;
    tio_kv kv;
    memset(&kv, 0, sizeof kv);
    char k[32], v[64];
    for (int i = 0; i < 2000; i++) {
        snprintf(k, sizeof k, "key%d", i);
        snprintf(v, sizeof v, "value %d %s", i, i % 7 ? "" : "with a little more text");
        set_ok(&kv, k, v);
    }
    char *big = malloc(100000); /* larger than a chunk */
    assert_non_null(big);
    memset(big, 'x', 99999);
    big[99999] = 0;
    set_ok(&kv, "big", big);
    set_ok(&kv, "after", "small");
    assert_int_equal(kv.count, 2002);
    for (int i = 0; i < 2000; i++) {
        snprintf(k, sizeof k, "key%d", i);
        snprintf(v, sizeof v, "value %d %s", i, i % 7 ? "" : "with a little more text");
        assert_string_equal(kv.keys[i], k);
        assert_string_equal(tio__kv_get(&kv, k), v);
    }
    assert_string_equal(tio__kv_get(&kv, "big"), big);
    assert_string_equal(tio__kv_get(&kv, "after"), "small");
    free(big);
    tio__kv_free(&kv);
}

/* Growing a value 10,000 times: each replacement frees the loose value it
 * replaces (under ASan, one that is not would be reported as a leak). */
static void test_replace_often(void **state) {
    (void)state;
    tio_kv kv;
    memset(&kv, 0, sizeof kv);
    set_ok(&kv, "k", "");
    char *v = malloc(10002);
    assert_non_null(v);
    for (int i = 1; i <= 10000; i++) {
        memset(v, 'a' + i % 26, (size_t)i);
        v[i] = 0;
        set_ok(&kv, "k", v);
        assert_int_equal(kv.loose[0], 1);
        assert_int_equal(strlen(tio__kv_get(&kv, "k")), (size_t)i);
    }
    set_ok(&kv, "k", "short again");
    assert_string_equal(tio__kv_get(&kv, "k"), "short again");
    free(v);
    tio__kv_free(&kv);
}

/* The first entry whose key is these klen bytes, searched in order. */
static size_t first_of(const tio_kv *kv, const char *key, size_t klen) {
    for (size_t i = 0; i < kv->count; i++)
        if (kv->klens[i] == klen && memcmp(kv->keys[i], key, klen) == 0) return i;
    return kv->count;
}

/* Key i of test_index: byte strings, some holding NUL, some empty-ish
 * ("\0"), prefixes of one another. */
static size_t index_key(size_t i, char *buf) {
    int n = snprintf(buf, 32, "k%zu", i / 3);
    if (i % 3 == 1) buf[n++] = 0;       /* "k7\0" */
    if (i % 3 == 2) buf[n++] = 'x';     /* "k7x" */
    if (i % 97 == 5) return 1;          /* "k": the same key again and again */
    return (size_t)n;
}

/* Lookups by an index of the keys made past a few and kept by the adds
 * (kv.c): as the search in order finds them, between adds, with NUL bytes,
 * prefixes, a key set again, a duplicate appended (the first found), and a
 * copy of the struct that holds fewer entries (it finds its own only). Before
 * the index, ONNX metadata_props of 80,000 keys took 5.6 s to open. */
static void test_index(void **state) {
    (void)state;
    tio_kv kv, early;
    memset(&kv, 0, sizeof kv);
    tio_error e;
    char key[32], val[32];
    size_t n = 3000;
    for (size_t i = 0; i < n; i++) {
        size_t kl = index_key(i, key);
        snprintf(val, sizeof val, "v%zu", i);
        assert_int_equal(tio__kv_set_n(&kv, key, kl, val, strlen(val), &e), TIO_OK);
        if (i < 40 || i % 211 == 0)
            for (size_t j = 0; j <= i + 3; j++) {
                size_t jl = index_key(j, key), want = first_of(&kv, key, jl);
                size_t vl = 0;
                const char *v = tio__kv_get_n(&kv, key, jl, &vl);
                if (want == kv.count) {
                    assert_null(v);
                } else {
                    assert_ptr_equal(v, kv.values[want]);
                    assert_int_equal(vl, kv.vlens[want]);
                }
            }
    }
    /* a duplicate the caller appended: the first is the one found */
    size_t before = kv.count;
    assert_int_equal(tio__kv_append_n(&kv, "k3x", 3, "dup", 3, &e), TIO_OK);
    assert_int_equal(kv.count, before + 1);
    assert_ptr_equal(tio__kv_get_n(&kv, "k3x", 3, NULL), kv.values[first_of(&kv, "k3x", 3)]);
    assert_string_not_equal(tio__kv_get_n(&kv, "k3x", 3, NULL), "dup");
    assert_null(tio__kv_get(&kv, "nope"));
    /* a copy of the struct that holds its first 101 entries (the index's
     * later positions are not its own) */
    early = kv;
    early.count = 101;
    for (size_t j = 0; j < 200; j++) {
        size_t jl = index_key(j, key), want = first_of(&early, key, jl);
        const char *v = tio__kv_get_n(&early, key, jl, NULL);
        if (want == early.count) assert_null(v);
        else assert_ptr_equal(v, early.values[want]);
    }
    tio__kv_free(&kv);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_replace),
        cmocka_unit_test(test_byte_strings),
        cmocka_unit_test(test_many),
        cmocka_unit_test(test_replace_often),
        cmocka_unit_test(test_index),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
