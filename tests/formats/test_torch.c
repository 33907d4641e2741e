/* The pickle machine (src/pickle) opcode by opcode, and the torch format on
 * the vectors (tests/vectors/torch, written by Debian's torch; the
 * comparisons with torch.load itself are in tests/formats/test_torch.py). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pickle/pickle.h"
#include "tvec.h"

static int run(const char *p, size_t n, tio_pickle *pk, tio_error *e, const tio_limits *lim) {
    tio_limits l = tio__limits_resolve(lim);
    return tio__pickle_run(pk, (const uint8_t *)p, n, 0, "torch", &l, e);
}

/* Runs a pickle that must fail with `code`, a message holding `want`, at
 * byte offset `at`. */
static void refused(const char *p, size_t n, int code, const char *want, int64_t at) {
    tio_pickle pk;
    tio_error e;
    int rc = run(p, n, &pk, &e, NULL);
    if (rc != code || !strstr(e.message, want) || e.offset != at || strncmp(e.message, "torch: ", 7)) {
        fprintf(stderr, "got %s at %lld: %s (expected %s, '%s' at %lld)\n", tio_status_name(rc),
                (long long)e.offset, e.message, tio_status_name(code), want, (long long)at);
        fail();
    }
}
#define REFUSED(lit, code, want, at) refused(lit, sizeof(lit) - 1, code, want, at)

static void test_operands_checked(void **state) {
    (void)state;
    REFUSED("\x80\x02]K\x01K\x02s.", TIO_E_CORRUPT, "SETITEM: fills a list (expected a dict)", 7);
    REFUSED("\x80\x02](K\x01K\x02u.", TIO_E_CORRUPT, "SETITEMS: fills a list", 8);
    REFUSED("\x80\x02}K\x01" "a.", TIO_E_CORRUPT, "APPEND: fills a dict (expected a list)", 5);
    REFUSED("\x80\x02}(K\x01" "e.", TIO_E_CORRUPT, "APPENDS: fills a dict", 6);
    REFUSED("\x80\x02]K\x01\x90.", TIO_E_CORRUPT, "ADDITEMS: no MARK", 5);
    REFUSED("\x80\x03" "B\xff\xff\x00\x00" "abc.", TIO_E_TRUNCATED, "BINBYTES: an operand of 65535", 2);
    REFUSED("\x80\x02X\x10\x00\x00\x00" "abc.", TIO_E_TRUNCATED, "BINUNICODE", 2);
    REFUSED("\x80\x02T\xff\xff\xff\xff.", TIO_E_CORRUPT, "negative length", 2);
    REFUSED("\x80\x02h\x05.", TIO_E_CORRUPT, "BINGET: memo key 5 was never set", 2);
    REFUSED("\x80\x02(K\x01.", TIO_E_CORRUPT, "STOP: 1 MARK still open", 5);
    REFUSED("\x80\x02K\x01K\x02.", TIO_E_CORRUPT, "STOP: 2 objects on the stack", 6);
    REFUSED("\x80\x02K\x01", TIO_E_TRUNCATED, "without a STOP", 4);
    REFUSED("\x80\x02(R.", TIO_E_CORRUPT, "REDUCE: needs 2 objects on the stack above the mark", 3);
    REFUSED("\x80\x02" "cos\nsystem\nK\x01R.", TIO_E_CORRUPT, "arguments are a int", 15);
    REFUSED("\x80\x06N.", TIO_E_UNSUPPORTED, "protocol 6", 0);
    REFUSED("\x80\x02\x82\x01.", TIO_E_UNSUPPORTED, "EXT1", 2);
    REFUSED("\x80\x05\x97.", TIO_E_UNSUPPORTED, "out-of-band", 2);
    REFUSED("\x80\x02\xff.", TIO_E_CORRUPT, "0xff: not a pickle opcode", 2);
    REFUSED("\x80\x04K\x01K\x02\x93.", TIO_E_CORRUPT, "STACK_GLOBAL: module and name are a int", 6);
    REFUSED("\x80\x02]Nb.", TIO_E_CORRUPT, "BUILD: sets the state of a list", 4);
    REFUSED("\x80\x02" "ccos\nsystem", TIO_E_TRUNCATED, "GLOBAL: its text operand has no", 2);
}

static void test_limits(void **state) {
    (void)state;
    size_t n = 100000;
    char *p = malloc(n + 3);
    assert_non_null(p);
    p[0] = '\x80';
    p[1] = 2;
    memset(p + 2, '(', n);
    p[n + 2] = '.';
    tio_pickle pk;
    tio_error e;
    assert_int_equal(run(p, n + 3, &pk, &e, NULL), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "max_pickle_depth"));
    memset(p + 2, 'N', n); /* 100,000 objects: more than a limit of 1,000 */
    tio_limits lim = {.max_pickle_objects = 1000};
    assert_int_equal(run(p, n + 3, &pk, &e, &lim), TIO_E_CORRUPT); /* None is shared */
    memset(p + 2, 'K', n); /* BININT1 K: 50,000 ints */
    assert_int_equal(run(p, n + 3, &pk, &e, &lim), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "max_pickle_objects"));
    lim.max_pickle_objects = 0;
    lim.max_pickle_bytes = 64;
    assert_int_equal(run(p, n + 3, &pk, &e, &lim), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "max_pickle_bytes"));
    free(p);
}

/* 12 levels of lists holding the list below 1,000 times: 12,000 references,
 * 13 lists; Python's own unpickler builds the same, a copy would be 10^36. */
static void test_memo_bomb(void **state) {
    (void)state;
    char p[40000];
    size_t n = 0;
    memcpy(p, "\x80\x02]q\x00" "0", 6);
    n = 6;
    for (int lvl = 1; lvl <= 12; lvl++) {
        p[n++] = ']';
        p[n++] = '(';
        for (int k = 0; k < 1000; k++) {
            p[n++] = 'h';
            p[n++] = (char)(lvl - 1);
        }
        p[n++] = 'e';
        p[n++] = 'q';
        p[n++] = (char)lvl;
        p[n++] = '0';
    }
    p[n++] = 'h';
    p[n++] = 12;
    p[n++] = '.';
    tio_pickle pk;
    tio_error e;
    assert_int_equal(run(p, n, &pk, &e, NULL), TIO_OK);
    assert_true(pk.count <= 3 + 13);
    const tio_pk_obj *root = tio__pk(&pk, pk.root);
    assert_int_equal(root->kind, TIO_PK_LIST);
    assert_int_equal(root->n, 1000);
    assert_ptr_equal(tio__pk_item(&pk, root, 0), tio__pk_item(&pk, root, 999)); /* shared */
    tio__pickle_free(&pk);
}

static void test_globals_kept(void **state) {
    (void)state;
    /* STACK_GLOBAL from strings through the memo; OrderedDict() a dict */
    static const char p[] = "\x80\x04X\x02\x00\x00\x00os\x94" "0X\x06\x00\x00\x00system\x94" "0"
                            "h\x00h\x01\x93X\x02\x00\x00\x00id\x85R.";
    tio_pickle pk;
    tio_error e;
    assert_int_equal(run(p, sizeof p - 1, &pk, &e, NULL), TIO_OK);
    const tio_pk_obj *call = tio__pk(&pk, pk.root);
    assert_int_equal(call->kind, TIO_PK_CALL);
    const tio_pk_obj *g = tio__pk(&pk, call->u.call.func);
    assert_int_equal(g->kind, TIO_PK_GLOBAL);
    assert_int_equal(g->vocab, 0);
    assert_int_equal(g->u.g.mod_len, 2);
    assert_memory_equal(g->u.g.mod, "os", 2);
    assert_memory_equal(g->u.g.name, "system", 6);
    assert_int_equal(g->off, 28);
    assert_null(tio__pk_callee(&pk, call));
    tio__pickle_free(&pk);
    static const char q[] = "\x80\x02" "ccollections\nOrderedDict\n)R(K\x01K\x02u.";
    assert_int_equal(run(q, sizeof q - 1, &pk, &e, NULL), TIO_OK);
    assert_int_equal(tio__pk(&pk, pk.root)->kind, TIO_PK_DICT);
    assert_int_equal(tio__pk(&pk, pk.root)->n, 1);
    tio__pickle_free(&pk);
    const tio_pk_vocab_entry *v = tio__pk_vocab_at(
        tio__pk_vocab_find((const uint8_t *)"torch", 5, (const uint8_t *)"HalfStorage", 11));
    assert_non_null(v);
    assert_int_equal(v->id, TIO_PKV_STORAGE);
    assert_int_equal(v->dtype, TIO_FLOAT16);
}

/* Every prefix of a small pickle fails cleanly. */
static void test_truncation(void **state) {
    (void)state;
    static const char p[] = "\x80\x02}q\x00(X\x01\x00\x00\x00" "aq\x01G?\xf0\x00\x00\x00\x00\x00\x00"
                            "X\x01\x00\x00\x00" "b]q\x02(K\x01\x8a\x02\x00\x01" "eu.";
    tio_pickle pk;
    tio_error e;
    for (size_t n = 0; n + 1 < sizeof p; n++) {
        int rc = run(p, n, &pk, &e, NULL);
        if (rc == TIO_OK || e.offset < 0 || (size_t)e.offset > n) {
            fprintf(stderr, "cut at %zu: %s %s\n", n, tio_status_name(rc), e.message);
            fail();
        }
    }
    assert_int_equal(run(p, sizeof p - 1, &pk, &e, NULL), TIO_OK);
    tio__pickle_free(&pk);
}

/* The vectors: names, shapes, strided views copied, values. */
static void test_vectors(void **state) {
    (void)state;
    const char *files[] = {"torch/state.pt", "torch/legacy.pt"};
    for (size_t f = 0; f < 2; f++) {
        char *path = tvec_path(files[f]);
        assert_non_null(path);
        tio_container *c = NULL;
        tio_error e;
        assert_int_equal(tio_open(path, NULL, &c, &e), TIO_OK);
        assert_string_equal(tio_container_format(c), "torch");
        const tio_tensor *w = tio_container_find(c, "w"), *wt = tio_container_find(c, "wt"),
                         *row = tio_container_find(c, "row");
        assert_non_null(w);
        assert_non_null(wt);
        assert_non_null(row);
        const float *wv = tio_tensor_data(w), *tv = tio_tensor_data(wt), *rv = tio_tensor_data(row);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++) {
                assert_true(wv[i * 4 + j] == (float)(i * 4 + j));
                assert_true(tv[j * 3 + i] == (float)(i * 4 + j));
            }
        for (int j = 0; j < 4; j++) assert_true(rv[j] == (float)(4 + j));
        assert_string_equal(tio_container_meta_get(c, "name"), "tiny");
        assert_string_equal(tio_container_meta_type(c, "step"), "int64");
        assert_string_equal(tio_container_prop_get(c, "shares_storage.wt"), "w");
        assert_int_equal(tio_container_warning_count(c), 0);
        tio_container_free(c);
        free(path);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_operands_checked), cmocka_unit_test(test_limits),
        cmocka_unit_test(test_memo_bomb),        cmocka_unit_test(test_globals_kept),
        cmocka_unit_test(test_truncation),       cmocka_unit_test(test_vectors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
