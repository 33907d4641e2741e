/* The pickle emitter (src/pickle/write.c): each opcode's bytes as CPython's
 * pickler writes them at protocol 2 (the expected bytes are what
 * pickle.dumps(v, protocol=2) writes), and what it writes read back by
 * tensio's own pickle machine. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pickle/pickle.h"

static void same(const tio_pkw *w, const char *hex) {
    size_t n = strlen(hex) / 2;
    char got[256] = "";
    for (size_t k = 0; k < w->b.len && 2 * k + 2 < sizeof got; k++)
        snprintf(got + 2 * k, 3, "%02x", (unsigned char)w->b.p[k]);
    if (w->b.len != n || strcmp(got, hex) != 0) {
        fprintf(stderr, "wrote %s, expected %s\n", got, hex);
        fail();
    }
}

static void test_ints(void **state) {
    (void)state;
    static const struct {
        int64_t v;
        const char *hex;
    } cases[] = {
        {0, "4b00"},
        {255, "4bff"},
        {256, "4d0001"},
        {65535, "4dffff"},
        {65536, "4a00000100"},
        {-1, "4affffffff"},
        {INT32_MIN, "4a00000080"},
        {INT32_MAX, "4affffff7f"},
        {INT64_C(2147483648), "8a050000008000"},
        {INT64_C(-2147483649), "8a05ffffff7fff"},
        {INT64_C(4294967296), "8a050000000001"},
        {INT64_C(1099511627776), "8a06000000000001"},
        {INT64_C(-1099511627776), "8a060000000000ff"},
        {INT64_MAX, "8a08ffffffffffffff7f"},
        {INT64_MIN, "8a080000000000000080"},
        {INT64_C(-277025390592), "8a0500000080bf"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tio_pkw w;
        memset(&w, 0, sizeof w);
        tio__pkw_int(&w, cases[i].v);
        same(&w, cases[i].hex);
        free(w.b.p);
    }
}

static void test_memo_and_tuples(void **state) {
    (void)state;
    tio_pkw w;
    memset(&w, 0, sizeof w);
    tio__pkw_str(&w, "\xc3\xa9", 2);
    assert_int_equal(tio__pkw_put(&w), 0);
    same(&w, "5802000000c3a97100"); /* pickle.dumps('é', 2) without PROTO/STOP */
    w.b.len = 0;
    w.memo = 256;
    assert_int_equal(tio__pkw_put(&w), 256);
    tio__pkw_get(&w, 256);
    tio__pkw_get(&w, 7);
    same(&w, "72000100006a000100006807");
    w.b.len = 0;
    for (size_t n = 0; n <= 5; n++) {
        tio__pkw_tuple_begin(&w, n);
        tio__pkw_tuple_end(&w, n);
    }
    same(&w, "2985868728742874");
    free(w.b.p);
}

/* A pickle written with the emitter, run by the machine: ((1, -70000,
 * 2**40, 'ab', 'ab' again by its memo key), {}) as a tuple. */
static void test_read_back(void **state) {
    (void)state;
    tio_pkw w;
    memset(&w, 0, sizeof w);
    tio__pkw_proto(&w, 2);
    tio__pkw_tuple_begin(&w, 5);
    tio__pkw_int(&w, 1);
    tio__pkw_int(&w, -70000);
    tio__pkw_int(&w, INT64_C(1) << 40);
    tio__pkw_str(&w, "ab", 2);
    uint32_t k = tio__pkw_put(&w);
    tio__pkw_get(&w, k);
    tio__pkw_tuple_end(&w, 5);
    tio__pkw_op(&w, TIO_PKO_STOP);
    assert_false(w.b.oom);
    tio_pickle pk;
    tio_error e;
    tio_limits l = tio__limits_resolve(NULL);
    assert_int_equal(tio__pickle_run(&pk, (const uint8_t *)w.b.p, w.b.len, 0, "torch", &l, &e),
                     TIO_OK);
    const tio_pk_obj *t = tio__pk(&pk, pk.root);
    assert_non_null(t);
    assert_int_equal(t->kind, TIO_PK_TUPLE);
    assert_int_equal(t->n, 5);
    assert_int_equal(tio__pk_item(&pk, t, 0)->u.i, 1);
    assert_int_equal(tio__pk_item(&pk, t, 1)->u.i, -70000);
    assert_int_equal(tio__pk_item(&pk, t, 2)->u.i, INT64_C(1) << 40);
    assert_int_equal(tio__pk_item(&pk, t, 3)->kind, TIO_PK_STR);
    assert_ptr_equal(tio__pk_item(&pk, t, 3), tio__pk_item(&pk, t, 4)); /* one object */
    tio__pickle_free(&pk);
    free(w.b.p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ints),
        cmocka_unit_test(test_memo_and_tuples),
        cmocka_unit_test(test_read_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
