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
#include <unistd.h>

#include "core/internal.h"
#include "formats/torch_objects.h"
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
    size_t n = tvec_memo_bomb(p);
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

/* A vector of tests/vectors/torch, opened (it must open). */
static tio_container *open_vec(const char *name) {
    char rel[64];
    snprintf(rel, sizeof rel, "torch/%s", name);
    char *path = tvec_path(rel);
    assert_non_null(path);
    tio_container *c = NULL;
    tio_error e;
    assert_int_equal(tio_open(path, NULL, &c, &e), TIO_OK);
    free(path);
    return c;
}

/* sparse.pt (torch 1.13): COO tensors, their indices [rank, nnz] in the
 * file read as nnz x rank; one of them repeats an index (a finding); a CSR
 * matrix read as COO. */
static void test_sparse(void **state) {
    (void)state;
    tio_container *c = open_vec("sparse.pt");
    tio_error e;
    assert_int_equal(tio_container_count(c), 4);
    const tio_tensor *w = tio_container_find(c, "w"), *rep = tio_container_find(c, "rep");
    assert_int_equal(tio_tensor_layout(w), TIO_LAYOUT_COO);
    assert_int_equal(tio_tensor_nnz(w), 3);
    assert_int_equal(tio_tensor_rank(w), 2);
    const int64_t *ix = tio_tensor_indices(w), want[] = {0, 1, 1, 0, 1, 2};
    for (int i = 0; i < 6; i++) assert_int_equal(ix[i], want[i]);
    const float *v = tio_tensor_data(w);
    assert_true(v[0] == 1.5f && v[1] == 2.0f && v[2] == -3.0f);
    float dense[6];
    assert_int_equal(tio_tensor_densify(w, dense, sizeof dense, &e), TIO_OK);
    assert_true(dense[1] == 1.5f && dense[3] == 2.0f && dense[5] == -3.0f && dense[0] == 0.0f);
    assert_int_equal(tio_tensor_nnz(rep), 3);
    assert_int_equal(tio_tensor_layout(tio_container_find(c, "d")), TIO_LAYOUT_DENSE);
    const tio_tensor *csr = tio_container_find(c, "csr"); /* read as COO, row by row */
    assert_int_equal(tio_tensor_layout(csr), TIO_LAYOUT_COO);
    assert_int_equal(tio_tensor_nnz(csr), 3);
    const int64_t *ci = tio_tensor_indices(csr), cwant[] = {0, 1, 1, 0, 1, 1};
    for (int i = 0; i < 6; i++) assert_int_equal(ci[i], cwant[i]);
    assert_true(((const float *)tio_tensor_data(csr))[2] == 0.75f);
    assert_string_equal(tio_container_meta_get(c, "csr.layout"), "torch.sparse_csr");
    assert_int_equal(tio_container_warning_count(c), 1); /* (1, 2) twice */
    const char *msg = tio_container_warning(c, 0)->message;
    assert_non_null(strstr(msg, "'rep': an uncoalesced COO tensor whose index (1, 2) repeats"));
    tio_container_free(c);
}

/* module.pt (torch 1.13): {"model": a pickled nn.Sequential, "epoch": 2}.
 * Its tensors under state_dict()'s names, in its order; the Linear's bias
 * (None) is no name; its attributes are metadata under its name; each class
 * a finding (never called). */
static void test_module(void **state) {
    (void)state;
    tio_container *c = open_vec("module.pt");
    static const char *const names[] = {"model.0.weight",       "model.1.weight",
                                        "model.1.bias",         "model.1.running_mean",
                                        "model.1.running_var",  "model.1.num_batches_tracked"};
    assert_int_equal(tio_container_count(c), 6);
    for (size_t i = 0; i < 6; i++)
        assert_string_equal(tio_tensor_name(tio_container_tensor(c, i)), names[i]);
    assert_int_equal(tio_tensor_dtype(tio_container_tensor(c, 5)), TIO_INT64);
    assert_null(tio_container_meta_get(c, "model.0.bias"));
    assert_string_equal(tio_container_meta_get(c, "model.0.in_features"), "3");
    assert_string_equal(tio_container_meta_get(c, "model.names.1"), "dog");
    assert_string_equal(tio_container_meta_get(c, "epoch"), "2");
    for (size_t i = 0; i < tio_container_meta_count(c); i++) {
        const char *k = NULL, *v = NULL;
        assert_int_equal(tio_container_meta_at(c, i, &k, &v), TIO_OK);
        assert_null(strstr(k, "_parameters"));
        assert_null(strstr(k, "_modules"));
    }
    assert_int_equal(tio_container_warning_count(c), 3);
    assert_non_null(strstr(tio_container_warning(c, 0)->message,
                           "calls torch.nn.modules.container.Sequential"));
    tio_container_free(c);
}

/* objects.pt (torch 1.13, pickle protocol 2): complex, quantized tensors
 * with their parameters, NumPy arrays (big-endian, Fortran order) and a
 * scalar; objects_p4.pt: a NumPy array at protocol 4, viewed in the file. */
static void test_objects(void **state) {
    (void)state;
    char *path = tvec_path("torch/objects.pt");
    assert_non_null(path);
    tio_container *c = NULL;
    tio_error e;
    assert_int_equal(tio_open(path, NULL, &c, &e), TIO_OK);
    const tio_tensor *t = tio_container_find(c, "c");
    assert_int_equal(tio_tensor_dtype(t), TIO_COMPLEX64);
    const float *cv = tio_tensor_data(t);
    assert_true(cv[0] == 1.0f && cv[1] == 2.0f && cv[2] == 0.0f && cv[3] == -3.5f);
    t = tio_container_find(c, "q"); /* round(x / 0.5) + 3 */
    assert_int_equal(tio_tensor_dtype(t), TIO_INT8);
    const int8_t *qv = tio_tensor_data(t);
    assert_true(qv[0] == 4 && qv[1] == 5 && qv[2] == 0);
    assert_string_equal(tio_container_meta_get(c, "q.qscheme"), "torch.per_tensor_affine");
    assert_string_equal(tio_container_meta_get(c, "q.q_scale"), "0.5");
    assert_string_equal(tio_container_meta_get(c, "q.q_zero_point"), "3");
    assert_string_equal(tio_container_meta_type(c, "q.q_zero_point"), "int64");
    assert_int_equal(tio_tensor_dtype(tio_container_find(c, "qc")), TIO_UINT8);
    assert_string_equal(tio_container_meta_get(c, "qc.q_per_channel_axis"), "0");
    const tio_tensor *sc = tio_container_find(c, "qc.q_per_channel_scales");
    assert_int_equal(tio_tensor_dtype(sc), TIO_FLOAT64);
    assert_true(((const double *)tio_tensor_data(sc))[1] == 0.2);
    assert_non_null(tio_container_find(c, "qc.q_per_channel_zero_points"));
    const tio_tensor *a = tio_container_find(c, "a"), *f = tio_container_find(c, "f");
    assert_int_equal(tio_tensor_dtype(a), TIO_INT16);
    assert_int_equal(tio_tensor_dtype(f), TIO_FLOAT32);
    assert_int_equal(tio_tensor_rank(f), 2);
    assert_int_equal(tio_tensor_shape(f)[1], 3);
    for (int i = 0; i < 6; i++) { /* big-endian and Fortran order, both read as C order */
        assert_int_equal(((const int16_t *)tio_tensor_data(a))[i], i);
        assert_true(((const float *)tio_tensor_data(f))[i] == (float)i);
    }
    assert_string_equal(tio_container_meta_get(c, "s"), "1.5");
    assert_string_equal(tio_container_meta_type(c, "s"), "float32");
    assert_int_equal(tio_container_warning_count(c), 0);
    tio_container_free(c);
    free(path);
    /* protocol 4: the array's bytes are BINBYTES in the stored data.pkl, a view */
    path = tvec_path("torch/objects_p4.pt");
    assert_non_null(path);
    assert_int_equal(tio_open(path, NULL, &c, &e), TIO_OK);
    a = tio_container_find(c, "a");
    int64_t at = tio_tensor_source_offset(a);
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    int16_t raw[6];
    assert_int_equal(fseek(fp, (long)at, SEEK_SET), 0);
    assert_int_equal(fread(raw, 2, 6, fp), 6);
    fclose(fp);
    for (int i = 0; i < 6; i++) assert_int_equal(raw[i], i);
    assert_int_equal(((const int16_t *)tio_tensor_data(a))[5], 5);
    assert_string_equal(tio_container_meta_get(c, "z"), "1-2j");
    tio_container_free(c);
    free(path);
}

/* A pickle of _reconstruct(ndarray, (0,), b'b') with BUILD (1, shape, dtype,
 * fortran, data), its parts given as pickle text: the decoder's answer. */
static int np_try(const char *shape, const char *dtype_code, const char *order,
                  const char *data, size_t data_n, tio_np_array *a, tio_error *e) {
    char buf[512];
    size_t n = 0;
#define PUT(s, len) (memcpy(buf + n, s, len), n += (len))
#define PUTS(s) PUT(s, strlen(s))
#define LIT(s) PUT(s, sizeof(s) - 1) /* a literal holding NUL bytes */
    LIT("\x80\x03" "cnumpy.core.multiarray\n_reconstruct\n" "cnumpy\nndarray\n"
        "K\x00\x85" "C\x01" "b" "\x87R" "(K\x01");
    PUTS(shape);
    LIT("cnumpy\ndtype\n" "X");
    char len4[4] = {(char)strlen(dtype_code), 0, 0, 0};
    PUT(len4, 4);
    PUTS(dtype_code);
    LIT("\x89\x88\x87R" "(K\x03" "X\x01\x00\x00\x00");
    PUTS(order);
    LIT("NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb" "\x89");
    PUT(data, data_n);
    LIT("tb.");
#undef LIT
#undef PUT
#undef PUTS
    tio_pickle pk;
    int rc = run(buf, n, &pk, e, NULL);
    if (rc == TIO_OK) {
        rc = tio__np_array(&pk, tio__pk(&pk, pk.root), "torch", "x", a, e);
        if (rc == TIO_OK) { /* the decoded bytes, while the pickle lives */
            static uint8_t out[64];
            int64_t idx[TIO_NP_MAX_RANK];
            assert_true(a->nbytes <= sizeof out);
            assert_int_equal(tio__np_array_bytes(a, out, idx), TIO_OK);
            a->src = out;
        }
        tio__pickle_free(&pk);
    }
    return rc;
}

static void test_numpy_decoder(void **state) {
    (void)state;
    tio_np_array a;
    tio_error e;
    /* good: int16 (2, 3) little-endian, then big-endian */
    const char le[] = "C\x0c\x00\x00\x01\x00\x02\x00\x03\x00\x04\x00\x05\x00";
    const char be[] = "C\x0c\x00\x00\x00\x01\x00\x02\x00\x03\x00\x04\x00\x05";
    assert_int_equal(np_try("K\x02K\x03\x86", "i2", "<", le, sizeof le - 1, &a, &e), TIO_OK);
    assert_int_equal(a.dtype, TIO_INT16);
    assert_int_equal(a.rank, 2);
    assert_int_equal(np_try("K\x02K\x03\x86", "i2", ">", be, sizeof be - 1, &a, &e), TIO_OK);
    assert_int_equal(a.src[10], 5); /* swapped to little-endian */
    /* shape x item size past the bytes */
    assert_int_equal(np_try("K\x02K\x04\x86", "i2", "<", le, sizeof le - 1, &a, &e),
                     TIO_E_BOUNDS);
    assert_non_null(strstr(e.message, "needs 16 bytes, its data hold 12"));
    /* bad dtype strings, object arrays */
    assert_int_equal(np_try("K\x06\x85", "i3", "<", le, sizeof le - 1, &a, &e), TIO_E_DTYPE);
    assert_non_null(strstr(e.message, "'i3'"));
    assert_int_equal(np_try("K\x06\x85", "x2", "<", le, sizeof le - 1, &a, &e), TIO_E_DTYPE);
    assert_int_equal(np_try("K\x01\x85", "O8", "|", "]K\x01" "a", 4, &a, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "object array"));
    assert_int_equal(np_try("K\x06\x85", "i2", "?", le, sizeof le - 1, &a, &e), TIO_E_CORRUPT);
    assert_non_null(strstr(e.message, "byte order"));
    /* a negative dim, a shape that is not a tuple */
    assert_int_equal(np_try("J\xff\xff\xff\xff\x85", "i2", "<", le, sizeof le - 1, &a, &e),
                     TIO_E_CORRUPT);
    assert_int_equal(np_try("K\x06", "i2", "<", le, sizeof le - 1, &a, &e), TIO_E_CORRUPT);
    assert_non_null(strstr(e.message, "shape is not a tuple"));
    /* latin-1 text (protocol 2's _codecs.encode): U+00FF is the byte 0xFF,
     * U+0100 is refused */
    const char lat[] = "c_codecs\nencode\nX\x04\x00\x00\x00\xc3\xbf\x01" "A"
                       "X\x06\x00\x00\x00latin1\x86R";
    assert_int_equal(np_try("K\x03\x85", "u1", "|", lat, sizeof lat - 1, &a, &e), TIO_OK);
    assert_true(a.src[0] == 0xFF && a.src[1] == 1 && a.src[2] == 'A');
    const char bad[] = "c_codecs\nencode\nX\x02\x00\x00\x00\xc4\x80"
                       "X\x06\x00\x00\x00latin1\x86R";
    assert_int_equal(np_try("K\x01\x85", "u1", "|", bad, sizeof bad - 1, &a, &e), TIO_E_CORRUPT);
    assert_non_null(strstr(e.message, "U+00FF"));
    const char cut[] = "c_codecs\nencode\nX\x01\x00\x00\x00\xc3"
                       "X\x06\x00\x00\x00latin1\x86R";
    assert_int_equal(np_try("K\x01\x85", "u1", "|", cut, sizeof cut - 1, &a, &e), TIO_E_CORRUPT);
}

/* A strided view (state.pt's "wt", w transposed) is not copied at open:
 * hashing, densify, every writer and a message walk it; tio_tensor_data
 * makes the C-contiguous copy once; materialize owns it. */
static void same_hash(const tio_tensor *a, const tio_tensor *b) {
    uint8_t ha[32], hb[32];
    tio_error e;
    assert_int_equal(tio_tensor_sha256(a, TIO_HASH_DENSE, ha, &e), TIO_OK);
    assert_int_equal(tio_tensor_sha256(b, TIO_HASH_DENSE, hb, &e), TIO_OK);
    assert_memory_equal(ha, hb, 32);
}

static void test_strided_lazy(void **state) {
    (void)state;
    char *path = tvec_path("torch/state.pt");
    assert_non_null(path);
    tio_container *c = NULL;
    tio_error e;
    assert_int_equal(tio_open(path, NULL, &c, &e), TIO_OK);
    tio_tensor *wt = tio_container_find(c, "wt");
    assert_non_null(wt);
    assert_non_null(wt->strided); /* a view, nothing copied */
    assert_null(wt->data);
    assert_null(atomic_load(&wt->aligned_copy));
    assert_int_equal(tio_tensor_nbytes(wt), 48);
    float want[12];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) want[j * 3 + i] = (float)(i * 4 + j);
    /* hashing and densify walk the view: still no copy */
    uint8_t h[32], hw[32];
    assert_int_equal(tio_tensor_sha256(wt, TIO_HASH_DENSE, h, &e), TIO_OK);
    assert_int_equal(tio_tensor_sha256(wt, TIO_HASH_VALUES, hw, &e), TIO_OK);
    assert_memory_equal(h, hw, 32);
    float d[12];
    assert_int_equal(tio_tensor_densify(wt, d, sizeof d, &e), TIO_OK);
    assert_memory_equal(d, want, sizeof want);
    assert_null(atomic_load(&wt->aligned_copy));
    /* every writer, and a message, from the view */
    const char *fmts[] = {"safetensors", "npz", "torch", "gguf", "zio", "tenbin"};
    for (size_t k = 0; k < sizeof fmts / sizeof *fmts; k++) {
        tio_save_options o;
        memset(&o, 0, sizeof o);
        o.format = fmts[k];
        o.flags = TIO_SAVE_DROP_NAMES | TIO_SAVE_DROP_METADATA;
        void *buf = NULL;
        size_t n = 0;
        assert_int_equal(tio_save_memory(c, &o, &buf, &n, &e), TIO_OK);
        tio_container *back = NULL;
        tio_open_options oo;
        memset(&oo, 0, sizeof oo);
        oo.format = fmts[k];
        assert_int_equal(tio_open_memory(buf, n, &oo, &back, &e), TIO_OK);
        const tio_tensor *b = tio_container_find(back, "wt");
        if (!b) b = tio_container_tensor(back, wt->index); /* names dropped */
        assert_non_null(b);
        assert_int_equal(tio_tensor_nbytes(b), 48);
        assert_memory_equal(tio_tensor_data(b), want, sizeof want);
        tio_container_free(back);
        tio_free(buf);
    }
    tio_save_options mo;
    memset(&mo, 0, sizeof mo);
    mo.format = "zio";
    tio_message *m = NULL;
    assert_int_equal(tio_message_encode(c, &mo, &m, &e), TIO_OK);
    tio_container *back = NULL;
    tio_part parts[64];
    size_t np = tio_message_part_count(m);
    assert_true(np <= 64);
    for (size_t i = 0; i < np; i++) parts[i] = tio_message_part(m, i);
    tio_open_options oo;
    memset(&oo, 0, sizeof oo);
    oo.format = "zio";
    assert_int_equal(tio_open_parts(parts, np, &oo, &back, &e), TIO_OK);
    assert_memory_equal(tio_tensor_data(tio_container_find(back, "wt")), want, sizeof want);
    tio_container_free(back);
    tio_message_free(m);
    assert_null(atomic_load(&wt->aligned_copy));
    /* asked for: one copy, the same every time, aligned */
    const float *v = tio_tensor_data(wt);
    assert_non_null(v);
    assert_memory_equal(v, want, sizeof want);
    assert_ptr_equal(tio_tensor_data(wt), v);
    assert_ptr_equal(tio_tensor_bytes(wt), v);
    assert_true(tio_tensor_is_aligned(wt));
    uint8_t h2[32];
    assert_int_equal(tio_tensor_sha256(wt, TIO_HASH_DENSE, h2, &e), TIO_OK);
    assert_memory_equal(h, h2, 32);
    same_hash(wt, wt);
    /* materialized: owned, no longer a view */
    assert_int_equal(tio_tensor_materialize(wt, &e), TIO_OK);
    assert_null(wt->strided);
    assert_memory_equal(tio_tensor_data(wt), want, sizeof want);
    assert_null(tio_tensor_alias(wt));
    tio_container_free(c);
    /* max_dense_bytes bounds each view made contiguous, checked at open */
    tio_open_options lo;
    memset(&lo, 0, sizeof lo);
    tio_limits lim;
    memset(&lim, 0, sizeof lim); /* 0: the default */
    lim.max_dense_bytes = 47;
    lo.limits = &lim;
    assert_int_equal(tio_open(path, &lo, &c, &e), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "'wt'"));
    assert_non_null(strstr(e.message, "max_dense_bytes"));
    free(path);
}

/* Many records: their local headers are read on a thread beside the
 * pickle (src/zip: tio__zip_locals_start). Values, and the errors of a
 * reader without the thread: a bad local header is reported for its
 * record, before a bad pickle. Runs under TSan too. */
static void many_path(char *out, size_t cap, const char *tag) {
    const char *dir = getenv("TMPDIR");
    snprintf(out, cap, "%s/tio_torch_many_%s_%ld.pt", dir && dir[0] ? dir : "/tmp", tag,
             (long)getpid());
}

static void test_many_records_thread(void **state) {
    (void)state;
    enum { N = 600 };
    tio_container *c = tio_container_new();
    assert_non_null(c);
    static int32_t vals[N][3];
    tio_error e;
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "layer.%d.w", i);
        for (int k = 0; k < 3; k++) vals[i][k] = i * 3 + k;
        int64_t shape[1] = {3};
        tio_tensor_desc d;
        memset(&d, 0, sizeof d);
        d.name = name;
        d.dtype = TIO_INT32;
        d.rank = 1;
        d.shape = shape;
        d.data = vals[i];
        d.nbytes = sizeof vals[i];
        assert_int_equal(tio_container_add(c, &d, TIO_ADD_BORROW, NULL, &e), TIO_OK);
    }
    tio_save_options o;
    memset(&o, 0, sizeof o);
    o.format = "torch";
    o.flags = TIO_SAVE_NO_SYNC;
    char path[256];
    many_path(path, sizeof path, "ok");
    assert_int_equal(tio_save(c, path, &o, &e), TIO_OK);
    tio_container_free(c);
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(tvec_read(path, &buf, &len), 0);
    for (int round = 0; round < 3; round++) { /* the thread's race, a few times */
        tio_container *r = NULL;
        assert_int_equal(tio_open(path, NULL, &r, &e), TIO_OK);
        assert_int_equal(tio_container_count(r), N);
        for (int i = 0; i < N; i += 37) {
            char name[32];
            snprintf(name, sizeof name, "layer.%d.w", i);
            const tio_tensor *t = tio_container_find(r, name);
            assert_non_null(t);
            assert_memory_equal(tio_tensor_data(t), vals[i], sizeof vals[i]);
        }
        tio_container_free(r);
    }
    uint8_t *bad = malloc(len);
    assert_non_null(bad);
    char bpath[256];
    many_path(bpath, sizeof bpath, "bad");
    tio_container *r = NULL;
    /* one record's local header broken: named, at its offset, whoever read
     * it (the thread from the front, this one from the back while the walk
     * would wait: records near the end), whatever else is wrong */
    static const char *const keys[] = {"/data/5", "/data/590", "/data/599", "/data/300"};
    uint8_t *hit = NULL;
    for (size_t q = 0; q < sizeof keys / sizeof keys[0]; q++) {
        const char *key = keys[q];
        size_t kl = strlen(key);
        hit = NULL; /* its local header: "PK\3\4", a name ending with key */
        for (size_t i = 0; i + 30 < len && !hit; i++) {
            if (tio__ld32(buf + i) != 0x04034b50u) continue;
            size_t nl = tio__ld16(buf + i + 26);
            if (nl >= kl && i + 30 + nl <= len && memcmp(buf + i + 30 + nl - kl, key, kl) == 0)
                hit = buf + i;
        }
        assert_non_null(hit);
        memcpy(bad, buf, len);
        bad[hit - buf] = 'X';
        assert_int_equal(tvec_write(bpath, bad, len), 0);
        for (int round = 0; round < 3; round++) {
            assert_int_equal(tio_open(bpath, NULL, &r, &e), TIO_E_MAGIC);
            assert_non_null(strstr(e.message, key + 1));
            assert_int_equal(e.offset, hit - buf);
        }
    }
    /* and a pickle cut short too: still the archive's error first */
    size_t pk = 0;
    while (pk + 4 < len && memcmp(bad + pk, "data.pkl", 8) != 0) pk++;
    assert_true(pk + 8 < len);
    size_t first = pk + 8 + tio__ld16(bad + 28); /* the pickle's first byte: after the extra */
    bad[first] = 0xff;                           /* not PROTO: an unknown opcode */
    assert_int_equal(tvec_write(bpath, bad, len), 0);
    assert_int_equal(tio_open(bpath, NULL, &r, &e), TIO_E_MAGIC);
    assert_non_null(strstr(e.message, "data/300"));
    /* the pickle alone broken: its error */
    memcpy(bad, buf, len);
    bad[first] = 0xff;
    assert_int_equal(tvec_write(bpath, bad, len), 0);
    int rc = tio_open(bpath, NULL, &r, &e);
    assert_true(rc != TIO_OK);
    assert_non_null(strstr(e.message, "0xff"));
    free(bad);
    free(buf);
    remove(path);
    remove(bpath);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_operands_checked), cmocka_unit_test(test_limits),
        cmocka_unit_test(test_memo_bomb),        cmocka_unit_test(test_globals_kept),
        cmocka_unit_test(test_truncation),       cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_objects),          cmocka_unit_test(test_numpy_decoder),
        cmocka_unit_test(test_sparse),
        cmocka_unit_test(test_module),
        cmocka_unit_test(test_strided_lazy),     cmocka_unit_test(test_many_records_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
