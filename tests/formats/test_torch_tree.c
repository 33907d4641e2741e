/* The object tree of a checkpoint (tio_container_object, src/pickle/tree.c)
 * through the public API, on hand-made pickles wrapped in the legacy layout
 * (the magic number, the protocol, the sys info, the object, an empty list
 * of storage keys): every kind, memo sharing (an object reached twice is one
 * object), a list that holds itself, nesting at and past max_pickle_depth,
 * memo bombs, globals kept as opaque objects. The trees of real checkpoints
 * against torch.load are in python/tests/test_checkpoint.py. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensio.h"
#include "tvec.h"

static const char head[] = "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19."
                           "\x80\x02M\xe9\x03."
                           "\x80\x02}.";
static const char keys[] = "\x80\x02].";

/* Opens the pickle p (n bytes, ending with its STOP) as a legacy checkpoint. */
static int open_pickle(const char *p, size_t n, const tio_limits *lim, tio_container **c,
                       tio_error *e) {
    size_t hn = sizeof head - 1, kn = sizeof keys - 1;
    char *b = malloc(hn + n + kn);
    assert_non_null(b);
    memcpy(b, head, hn);
    memcpy(b + hn, p, n);
    memcpy(b + hn + n, keys, kn);
    tio_open_options o = {.format = "torch", .flags = TIO_OPEN_COPY, .limits = lim};
    int rc = tio_open_memory(b, hn + n + kn, &o, c, e);
    free(b);
    return rc;
}
#define OPEN(lit, c, e) open_pickle(lit, sizeof(lit) - 1, NULL, c, e)

static const tio_object *opened(tio_container **c, const char *p, size_t n) {
    tio_error e;
    int rc = open_pickle(p, n, NULL, c, &e);
    if (rc) fprintf(stderr, "open: %s\n", e.message);
    assert_int_equal(rc, TIO_OK);
    const tio_object *root = tio_container_object(*c);
    assert_non_null(root);
    return root;
}

static int str_is(const tio_object *o, const char *s) {
    size_t n = 0;
    const char *b = tio_object_bytes(o, &n);
    return tio_object_kind_of(o) == TIO_OBJ_STR && b && n == strlen(s) && memcmp(b, s, n) == 0;
}

static void test_kinds(void **state) {
    (void)state;
    /* {"a": 1, 2: 2.5, "t": (True, None), "s": "\xc3\xa9", "b": b"\xff" (protocol
     *  2's _codecs.encode), "l": [-3], (1, 2): "key"} */
    static const char p[] = "\x80\x02}(X\x01\x00\x00\x00" "aK\x01"
                            "K\x02G\x40\x04\x00\x00\x00\x00\x00\x00"
                            "X\x01\x00\x00\x00t\x88N\x86"
                            "X\x01\x00\x00\x00sX\x02\x00\x00\x00\xc3\xa9"
                            "X\x01\x00\x00\x00" "bc_codecs\nencode\nX\x02\x00\x00\x00\xc3\xbf"
                            "X\x06\x00\x00\x00latin1\x86R"
                            "X\x01\x00\x00\x00l]J\xfd\xff\xff\xff" "a"
                            "K\x01K\x02\x86X\x03\x00\x00\x00key"
                            "u.";
    tio_container *c = NULL;
    const tio_object *d = opened(&c, p, sizeof p - 1);
    assert_int_equal(tio_object_kind_of(d), TIO_OBJ_DICT);
    assert_string_equal(tio_object_kind_name(TIO_OBJ_DICT), "dict");
    assert_int_equal(tio_object_len(d), 7);
    assert_true(str_is(tio_object_key(d, 0), "a"));
    assert_int_equal(tio_object_int(tio_object_get(d, "a")), 1);
    assert_int_equal(tio_object_kind_of(tio_object_key(d, 1)), TIO_OBJ_INT);
    assert_int_equal(tio_object_int(tio_object_key(d, 1)), 2);
    assert_true(tio_object_float(tio_object_item(d, 1)) == 2.5);
    const tio_object *t = tio_object_get(d, "t");
    assert_int_equal(tio_object_kind_of(t), TIO_OBJ_TUPLE);
    assert_int_equal(tio_object_kind_of(tio_object_item(t, 0)), TIO_OBJ_BOOL);
    assert_int_equal(tio_object_int(tio_object_item(t, 0)), 1);
    assert_int_equal(tio_object_kind_of(tio_object_item(t, 1)), TIO_OBJ_NONE);
    assert_null(tio_object_item(t, 2));
    assert_true(str_is(tio_object_get(d, "s"), "\xc3\xa9"));
    size_t n = 0;
    const tio_object *b = tio_object_get(d, "b");
    assert_int_equal(tio_object_kind_of(b), TIO_OBJ_BYTES);
    assert_memory_equal(tio_object_bytes(b, &n), "\xff", 1);
    assert_int_equal(n, 1);
    const tio_object *l = tio_object_get(d, "l");
    assert_int_equal(tio_object_kind_of(l), TIO_OBJ_LIST);
    assert_int_equal(tio_object_int(tio_object_item(l, 0)), -3);
    const tio_object *tk = tio_object_key(d, 6);
    assert_int_equal(tio_object_kind_of(tk), TIO_OBJ_TUPLE);
    assert_int_equal(tio_object_int(tio_object_item(tk, 1)), 2);
    assert_true(str_is(tio_object_item(d, 6), "key"));
    assert_true(tio_object_offset(d) > 0);
    /* accessors on the wrong kind, and on NULL */
    assert_null(tio_object_get(l, "a"));
    assert_null(tio_object_key(l, 0));
    assert_int_equal(tio_object_tensor(l), -1);
    assert_null(tio_object_bytes(l, &n));
    assert_int_equal(n, 0);
    assert_null(tio_object_state(d));
    assert_int_equal(tio_object_len(NULL), 0);
    assert_null(tio_object_item(NULL, 0));
    assert_int_equal(tio_object_kind_of(NULL), 0);
    assert_int_equal(tio_object_offset(NULL), -1);
    tio_container_free(c);
}

static void test_bigints(void **state) {
    (void)state;
    /* [2**70 (LONG1), -(2**70) (protocol 0's LONG text), 300 digits of LONG text] */
    static const char start[] = "\x80\x02(\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x40"
                                "L-1180591620717411303424L\nL";
    char p[600];
    size_t n = sizeof start - 1;
    memcpy(p, start, n);
    for (int k = 0; k < 300; k++) p[n++] = (char)('1' + k % 9);
    memcpy(p + n, "L\nl.", 4);
    n += 4;
    tio_container *c = NULL;
    const tio_object *l = opened(&c, p, n);
    assert_int_equal(tio_object_len(l), 3);
    size_t bn = 0;
    const tio_object *big = tio_object_item(l, 0), *neg = tio_object_item(l, 1);
    assert_int_equal(tio_object_kind_of(big), TIO_OBJ_BIGINT);
    assert_memory_equal(tio_object_bytes(big, &bn), "\x00\x00\x00\x00\x00\x00\x00\x00\x40", 9);
    assert_int_equal(bn, 9);
    assert_int_equal(tio_object_kind_of(neg), TIO_OBJ_BIGINT);
    assert_memory_equal(tio_object_bytes(neg, &bn), "\x00\x00\x00\x00\x00\x00\x00\x00\xc0", 9);
    assert_int_equal(bn, 9);
    const tio_object *huge = tio_object_item(l, 2); /* past 256 digits: opaque */
    assert_int_equal(tio_object_kind_of(huge), TIO_OBJ_OPAQUE);
    assert_string_equal(tio_object_bytes(huge, NULL), "builtins.int");
    tio_container_free(c);
}

/* A list holding one dict 1,000 times (BINGET): one dict, reached 1,000 times. */
static void test_memo_shared(void **state) {
    (void)state;
    char p[3000];
    size_t n = 0;
    memcpy(p, "\x80\x02}q\x00X\x01\x00\x00\x00xK\x07s0](", 17);
    n = 17;
    for (int k = 0; k < 1000; k++) {
        p[n++] = 'h';
        p[n++] = 0;
    }
    memcpy(p + n, "e.", 2);
    n += 2;
    tio_container *c = NULL;
    const tio_object *l = opened(&c, p, n);
    assert_int_equal(tio_object_len(l), 1000);
    const tio_object *first = tio_object_item(l, 0);
    assert_ptr_equal(first, tio_object_item(l, 999));
    assert_int_equal(tio_object_id(first), tio_object_id(tio_object_item(l, 500)));
    assert_true(tio_object_shared(first));
    assert_false(tio_object_shared(l));
    assert_int_equal(tio_object_int(tio_object_get(first, "x")), 7);
    assert_true(tio_container_object_count(c) <= 5); /* list, dict, key, value */
    tio_container_free(c);
}

/* 12 levels of lists holding the list below 1,000 times: 13 lists in the
 * tree, not 10^36 copies. */
static void test_memo_bomb(void **state) {
    (void)state;
    char *p = malloc(40000);
    assert_non_null(p);
    size_t n = tvec_memo_bomb(p);
    tio_container *c = NULL;
    const tio_object *o = opened(&c, p, n);
    assert_int_equal(tio_container_object_count(c), 13);
    for (int lvl = 12; lvl > 0; lvl--) {
        assert_int_equal(tio_object_len(o), 1000);
        assert_ptr_equal(tio_object_item(o, 0), tio_object_item(o, 999));
        o = tio_object_item(o, 0);
    }
    assert_int_equal(tio_object_len(o), 0);
    tio_container_free(c);
    free(p);
}

/* A list that holds itself ("]q\0h\0a"): the tree stays acyclic. */
static void test_recursive(void **state) {
    (void)state;
    static const char p[] = "\x80\x02]q\x00h\x00" "a.";
    tio_container *c = NULL;
    const tio_object *l = opened(&c, p, sizeof p - 1);
    assert_int_equal(tio_object_kind_of(l), TIO_OBJ_LIST);
    const tio_object *back = tio_object_item(l, 0);
    assert_int_equal(tio_object_kind_of(back), TIO_OBJ_OPAQUE);
    assert_string_equal(tio_object_bytes(back, NULL), "(recursive reference)");
    tio_container_free(c);
}

/* N lists nested (APPEND, no marks), None innermost: N deep. */
static char *nested(size_t depth, size_t *n) {
    char *p = malloc(2 * depth + 5);
    assert_non_null(p);
    p[0] = '\x80';
    p[1] = 2;
    memset(p + 2, ']', depth);
    p[2 + depth] = 'N';
    memset(p + 3 + depth, 'a', depth);
    p[3 + 2 * depth] = '.';
    *n = 4 + 2 * depth;
    return p;
}

static void test_depth_limit(void **state) {
    (void)state;
    tio_limits lim = {.max_pickle_depth = 300};
    size_t n = 0;
    char *p = nested(300, &n);
    tio_container *c = NULL;
    tio_error e;
    assert_int_equal(open_pickle(p, n, &lim, &c, &e), TIO_OK);
    const tio_object *o = tio_container_object(c);
    for (int k = 0; k < 300; k++) {
        assert_int_equal(tio_object_kind_of(o), TIO_OBJ_LIST);
        assert_int_equal(tio_object_len(o), 1);
        o = tio_object_item(o, 0);
    }
    assert_int_equal(tio_object_kind_of(o), TIO_OBJ_NONE);
    assert_int_equal(tio_container_object_count(c), 301);
    tio_container_free(c);
    free(p);
    p = nested(301, &n);
    assert_int_equal(open_pickle(p, n, &lim, &c, &e), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "max_pickle_depth"));
    free(p);
    p = nested(100000, &n); /* the default limit */
    assert_int_equal(open_pickle(p, n, NULL, &c, &e), TIO_E_LIMIT);
    free(p);
}

/* A dict whose key is a tuple nested 400 deep: the walk names the value by
 * the key's position and never goes into the key; the tree does, and past
 * max_pickle_depth it makes the rest one OPAQUE object, not an error (the
 * tree is made after the open, when first asked for). */
static void test_depth_in_key(void **state) {
    (void)state;
    enum { D = 400 };
    tio_limits lim = {.max_pickle_depth = 300};
    char *p = malloc(8 + 2 * D);
    assert_non_null(p);
    size_t n = 0;
    p[n++] = '\x80';
    p[n++] = 2;
    p[n++] = '}';
    p[n++] = ')';
    memset(p + n, '\x85', D - 1); /* TUPLE1: ((((),),),) */
    n += D - 1;
    p[n++] = 'N';
    p[n++] = 's';
    p[n++] = '.';
    tio_container *c = NULL;
    tio_error e;
    assert_int_equal(open_pickle(p, n, &lim, &c, &e), TIO_OK);
    const tio_object *d = tio_container_object(c);
    assert_int_equal(tio_object_kind_of(d), TIO_OBJ_DICT);
    const tio_object *k = tio_object_key(d, 0);
    size_t depth = 1;
    while (tio_object_kind_of(k) == TIO_OBJ_TUPLE) {
        k = tio_object_item(k, 0);
        depth++;
    }
    assert_int_equal(depth, 301); /* the dict at 0, tuples at 1 … 300 */
    assert_int_equal(tio_object_kind_of(k), TIO_OBJ_OPAQUE);
    assert_string_equal(tio_object_bytes(k, NULL), "(nested past max_pickle_depth)");
    assert_int_equal(tio_object_kind_of(tio_object_item(d, 0)), TIO_OBJ_NONE);
    tio_container_free(c);
    free(p);
}

/* The tree is made once, when first asked for, by whichever of several
 * threads asks first: every one sees the same objects. */
typedef struct tree_ask {
    const tio_container *c;
    const tio_object *root;
    size_t count;
} tree_ask;

static void *ask_tree(void *arg) {
    tree_ask *a = arg;
    a->root = tio_container_object(a->c);
    a->count = tio_container_object_count(a->c);
    return NULL;
}

static void test_tree_made_once(void **state) {
    (void)state;
    char *path = tvec_path("torch/objects.pt");
    tio_container *c = NULL;
    tio_error e;
    assert_int_equal(tio_open(path, NULL, &c, &e), TIO_OK);
    enum { T = 4 };
    pthread_t th[T];
    tree_ask a[T];
    for (int i = 0; i < T; i++) {
        a[i] = (tree_ask){c, NULL, 0};
        assert_int_equal(pthread_create(&th[i], NULL, ask_tree, &a[i]), 0);
    }
    for (int i = 0; i < T; i++) pthread_join(th[i], NULL);
    assert_non_null(a[0].root);
    assert_true(a[0].count > 10);
    for (int i = 1; i < T; i++) {
        assert_ptr_equal(a[i].root, a[0].root);
        assert_int_equal(a[i].count, a[0].count);
    }
    assert_ptr_equal(tio_container_object(c), a[0].root);
    tio_container_free(c);
    /* never asked for: freed with the container (the sanitizers check) */
    assert_int_equal(tio_open(path, NULL, &c, &e), TIO_OK);
    assert_true(tio_container_count(c) > 0);
    tio_container_free(c);
    free(path);
}

/* argparse.Namespace(lr=0.5) (NEWOBJ + BUILD), and os.system("x") (REDUCE):
 * opaque objects with their names and offsets, the first with its state. */
static void test_opaque(void **state) {
    (void)state;
    static const char p[] = "\x80\x02(cargparse\nNamespace\n)\x81}X\x02\x00\x00\x00lr"
                            "G\x3f\xe0\x00\x00\x00\x00\x00\x00sb"
                            "cos\nsystem\nX\x01\x00\x00\x00x\x85R"
                            "ctorch\nfloat32\nl.";
    tio_container *c = NULL;
    const tio_object *l = opened(&c, p, sizeof p - 1);
    size_t hn = sizeof head - 1;
    const tio_object *ns = tio_object_item(l, 0), *sys = tio_object_item(l, 1);
    assert_int_equal(tio_object_kind_of(ns), TIO_OBJ_OPAQUE);
    assert_string_equal(tio_object_bytes(ns, NULL), "argparse.Namespace");
    assert_int_equal(tio_object_offset(ns), (int64_t)hn + 3); /* its GLOBAL */
    const tio_object *st = tio_object_state(ns);
    assert_int_equal(tio_object_kind_of(st), TIO_OBJ_DICT);
    assert_true(tio_object_float(tio_object_get(st, "lr")) == 0.5);
    assert_string_equal(tio_object_bytes(sys, NULL), "os.system");
    assert_null(tio_object_state(sys));
    assert_true(tio_object_offset(sys) > tio_object_offset(ns));
    assert_string_equal(tio_object_bytes(tio_object_item(l, 2), NULL), "torch.float32");
    assert_true(tio_container_warning_count(c) >= 2); /* the findings stay */
    tio_container_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kinds),        cmocka_unit_test(test_bigints),
        cmocka_unit_test(test_memo_shared),  cmocka_unit_test(test_memo_bomb),
        cmocka_unit_test(test_recursive),    cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_opaque),       cmocka_unit_test(test_depth_in_key),
        cmocka_unit_test(test_tree_made_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
