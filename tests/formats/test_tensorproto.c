/* A bare ONNX TensorProto (.pb, format onnx-tensor) through the public API:
 * TensorProtos built by hand field by field (raw_data a view into the
 * input, every typed field decoded, the name kept), the writer's bytes
 * against the same message built by hand (what onnx.numpy_helper writes; the
 * byte-for-byte test against onnx itself is in tests/formats/test_tensorproto.py),
 * the .pb extension and the probe, and hostile input: every truncation, bad
 * wire types, unknown fields, dims overflowing, raw_data or typed data of the
 * wrong size, SequenceProtos (read as their tensors; written for several;
 * nested ones and other elem_types refused), external data from memory; every
 * error "onnx-tensor: offset N: ..." with N inside the input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tensio.h"
#include "tpb.h"

#define FMT "onnx-tensor"

/* TensorProto{dims, data_type, name} without data. */
static tpb head(const int64_t *dims, size_t rank, int dtype, const char *name) {
    tpb t = {0};
    for (size_t k = 0; k < rank; k++) tpb_int(&t, 1, (uint64_t)dims[k]);
    tpb_int(&t, 2, (uint64_t)dtype);
    if (name) tpb_str(&t, 8, name);
    return t;
}

/* The failure contract: code, "onnx-tensor: offset N: " with N inside the
 * input (or at its end, for a truncation), no container. */
static void check_error(int rc, const tio_error *e, const tio_container *c, size_t len) {
    assert_null(c);
    assert_int_equal(e->code, rc);
    assert_string_equal(e->format, FMT);
    long long off = -1;
    if (sscanf(e->message, FMT ": offset %lld:", &off) != 1)
        fail_msg("no '" FMT ": offset N:' prefix: %s", e->message);
    size_t lim = rc == TIO_E_TRUNCATED ? len + 1 : len;
    if (off < 0 || (size_t)off >= lim)
        fail_msg("offset %lld outside %zu bytes: %s", off, len, e->message);
}

/* Opens bytes that must read as `count` tensors. */
static tio_container *open_n(const void *b, size_t n, size_t count) {
    tio_open_options o = {0};
    o.format = FMT;
    tio_container *c = NULL;
    tio_error e;
    if (tio_open_memory(b, n, &o, &c, &e) != TIO_OK) fail_msg("open: %s", e.message);
    assert_string_equal(tio_container_format(c), FMT);
    assert_int_equal(tio_container_count(c), count);
    return c;
}

static tio_container *open_ok(const void *b, size_t n) { return open_n(b, n, 1); }

/* Opens bytes that must fail with `code` and a message holding `want`. */
static void open_bad(const void *b, size_t n, int code, const char *want) {
    tio_open_options o = {0};
    o.format = FMT;
    tio_container *c = NULL;
    tio_error e;
    int rc = tio_open_memory(b, n, &o, &c, &e);
    if (rc == TIO_OK) fail_msg("expected %s to fail (%s)", want, tio_status_name(code));
    check_error(rc, &e, c, n);
    if (code >= 0 && rc != code)
        fail_msg("expected %s, got %s: %s", tio_status_name(code), tio_status_name(rc),
                 e.message);
    if (want && !strstr(e.message, want)) fail_msg("'%s' not in: %s", want, e.message);
}

/* SequenceProto{name "seq", elem_type, one float32 [2, 3] element with n
 * bytes of raw_data}. */
static tpb seq1(int elem_type, const int64_t *dims, const void *v, size_t n) {
    tpb s = {0}, el = head(dims, 2, 1, NULL);
    tpb_bytes(&el, 9, v, n);
    tpb_str(&s, 1, "seq");
    tpb_int(&s, 2, (uint64_t)elem_type);
    tpb_msg(&s, 3, &el);
    return s;
}

static void test_raw_view(void **state) {
    (void)state;
    const int64_t dims[] = {2, 3};
    float v[6] = {1, 2, 3, 4, 5, -6.5f};
    tpb t = head(dims, 2, 1, "input_0");
    tpb_bytes(&t, 9, v, sizeof v);
    tio_container *c = open_ok(t.b, t.n);
    const tio_tensor *x = tio_container_tensor(c, 0);
    assert_string_equal(tio_tensor_name(x), "input_0");
    assert_int_equal(tio_tensor_dtype(x), TIO_FLOAT32);
    assert_int_equal(tio_tensor_rank(x), 2);
    assert_int_equal(tio_tensor_shape(x)[0], 2);
    assert_int_equal(tio_tensor_shape(x)[1], 3);
    assert_int_equal(tio_tensor_nbytes(x), sizeof v);
    /* a view: the bytes are the input's own */
    const uint8_t *d = tio_tensor_data(x);
    assert_true(d >= t.b && d + sizeof v == t.b + t.n);
    assert_memory_equal(d, v, sizeof v);
    tio_container_free(c);
    free(t.b);
}

/* Every typed field, as onnx's writers use them for each data type. */
static void test_typed(void **state) {
    (void)state;
    const int64_t d3[] = {3};
    {   /* float_data, packed fixed32 */
        float v[3] = {1.5f, -2, 0};
        tpb t = head(d3, 1, 1, NULL);
        tpb_bytes(&t, 4, v, sizeof v);
        tio_container *c = open_ok(t.b, t.n);
        assert_null(tio_tensor_name(tio_container_tensor(c, 0)));
        assert_memory_equal(tio_tensor_data(tio_container_tensor(c, 0)), v, sizeof v);
        tio_container_free(c);
        free(t.b);
    }
    {   /* int32_data for int8 (negative values sign-extended to 10 bytes), unpacked */
        tpb t = head(d3, 1, 3, "i8");
        tpb_int(&t, 5, (uint64_t)(int64_t)-5);
        tpb_int(&t, 5, 7);
        tpb_int(&t, 5, 127);
        tio_container *c = open_ok(t.b, t.n);
        const int8_t want[3] = {-5, 7, 127};
        assert_int_equal(tio_tensor_dtype(tio_container_tensor(c, 0)), TIO_INT8);
        assert_memory_equal(tio_tensor_data(tio_container_tensor(c, 0)), want, 3);
        tio_container_free(c);
        free(t.b);
    }
    {   /* int32_data for float16 (the bits) and bool, packed */
        tpb t = head(d3, 1, 10, NULL), p = {0};
        tpb_varint(&p, 0x3c00);
        tpb_varint(&p, 0xc000);
        tpb_varint(&p, 0);
        tpb_bytes(&t, 5, p.b, p.n);
        tio_container *c = open_ok(t.b, t.n);
        const uint16_t want[3] = {0x3c00, 0xc000, 0};
        assert_memory_equal(tio_tensor_data(tio_container_tensor(c, 0)), want, 6);
        tio_container_free(c);
        free(t.b);
        free(p.b);
    }
    {   /* int64_data, uint64_data, double_data */
        tpb t = head(d3, 1, 7, NULL);
        tpb_int(&t, 7, (uint64_t)INT64_MIN);
        tpb_int(&t, 7, 1);
        tpb_int(&t, 7, (uint64_t)(int64_t)-1);
        tio_container *c = open_ok(t.b, t.n);
        const int64_t want[3] = {INT64_MIN, 1, -1};
        assert_memory_equal(tio_tensor_data(tio_container_tensor(c, 0)), want, sizeof want);
        tio_container_free(c);
        free(t.b);
        tpb u = head(d3, 1, 13, NULL);
        for (int k = 0; k < 3; k++) tpb_int(&u, 11, UINT64_MAX - (uint64_t)k);
        c = open_ok(u.b, u.n);
        const uint64_t uw[3] = {UINT64_MAX, UINT64_MAX - 1, UINT64_MAX - 2};
        assert_memory_equal(tio_tensor_data(tio_container_tensor(c, 0)), uw, sizeof uw);
        tio_container_free(c);
        free(u.b);
        double dv[3] = {1e300, -0.25, 3};
        tpb w = head(d3, 1, 11, NULL);
        tpb_bytes(&w, 10, dv, sizeof dv);
        c = open_ok(w.b, w.n);
        assert_memory_equal(tio_tensor_data(tio_container_tensor(c, 0)), dv, sizeof dv);
        tio_container_free(c);
        free(w.b);
    }
    {   /* complex64 in float_data: real, imaginary, ... */
        float cv[6] = {1, 2, 3, 4, 5, 6};
        tpb t = head(d3, 1, 14, NULL);
        tpb_bytes(&t, 4, cv, sizeof cv);
        tio_container *c = open_ok(t.b, t.n);
        assert_int_equal(tio_tensor_dtype(tio_container_tensor(c, 0)), TIO_COMPLEX64);
        assert_memory_equal(tio_tensor_data(tio_container_tensor(c, 0)), cv, sizeof cv);
        tio_container_free(c);
        free(t.b);
    }
    {   /* a scalar: no dims; doc_string as a property */
        int32_t one = 42;
        tpb t = head(NULL, 0, 6, "s");
        tpb_str(&t, 12, "a scalar");
        tpb_bytes(&t, 9, &one, 4);
        tio_container *c = open_ok(t.b, t.n);
        assert_int_equal(tio_tensor_rank(tio_container_tensor(c, 0)), 0);
        assert_string_equal(tio_container_prop_get(c, "doc_string"), "a scalar");
        tio_container_free(c);
        free(t.b);
    }
}

/* The writer: dims unpacked, data_type, name, raw_data, in field order,
 * whatever the source format (here .npy and .npz, built by tensio). */
static void test_write(void **state) {
    (void)state;
    const int64_t dims[] = {2, 2};
    int16_t v[4] = {1, -2, 300, -32768};
    tio_container *c = tio_container_new();
    tio_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = "x";
    d.dtype = TIO_INT16;
    d.rank = 2;
    d.shape = dims;
    d.data = v;
    d.nbytes = sizeof v;
    tio_error e;
    assert_int_equal(tio_container_add(c, &d, TIO_ADD_BORROW, NULL, &e), TIO_OK);
    tio_save_options so = {0};
    so.format = FMT;
    void *out = NULL;
    size_t n = 0;
    if (tio_save_memory(c, &so, &out, &n, &e) != TIO_OK) fail_msg("save: %s", e.message);
    tpb want = head(dims, 2, 5, "x");
    tpb_bytes(&want, 9, v, sizeof v);
    assert_int_equal(n, want.n);
    assert_memory_equal(out, want.b, n);
    tio_free(out);
    free(want.b);
    /* without a name: none written; empty data: an empty raw_data */
    const int64_t zero[] = {0, 3};
    d.name = NULL;
    d.shape = zero;
    d.nbytes = 0;
    d.data = NULL;
    assert_int_equal(tio_container_add(c, &d, TIO_ADD_BORROW, NULL, &e), TIO_OK);
    /* two tensors: a SequenceProto (elem_type 1, each a TensorProto under
     * its name: onnx.helper.make_sequence's bytes without a name) */
    if (tio_save_memory(c, &so, &out, &n, &e) != TIO_OK) fail_msg("save: %s", e.message);
    tpb seq = {0}, e1 = head(dims, 2, 5, "x"), e2 = head(zero, 2, 5, NULL);
    tpb_bytes(&e1, 9, v, sizeof v);
    tpb_bytes(&e2, 9, "", 0);
    tpb_int(&seq, 2, 1);
    tpb_msg(&seq, 3, &e1);
    tpb_msg(&seq, 3, &e2);
    assert_int_equal(n, seq.n);
    assert_memory_equal(out, seq.b, n);
    /* which reads back as the two tensors, in order */
    tio_container *r2 = open_n(out, n, 2);
    assert_string_equal(tio_tensor_name(tio_container_tensor(r2, 0)), "x");
    assert_int_equal(tio_tensor_nbytes(tio_container_tensor(r2, 1)), 0);
    tio_container_free(r2);
    tio_free(out);
    free(seq.b);
    tio_container_free(c);
    /* none: refused */
    c = tio_container_new();
    assert_int_equal(tio_save_memory(c, &so, &out, &n, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "holds no tensor"));
    assert_int_equal(tio_container_add(c, &d, TIO_ADD_BORROW, NULL, &e), TIO_OK);
    if (tio_save_memory(c, &so, &out, &n, &e) != TIO_OK) fail_msg("save: %s", e.message);
    want = head(zero, 2, 5, NULL);
    tpb_bytes(&want, 9, "", 0);
    assert_int_equal(n, want.n);
    assert_memory_equal(out, want.b, n);
    /* and it reads back */
    tio_container *r = open_ok(out, n);
    assert_int_equal(tio_tensor_nbytes(tio_container_tensor(r, 0)), 0);
    tio_container_free(r);
    tio_free(out);
    free(want.b);
    tio_container_free(c);
}

/* Not self-identifying: the probe never claims one, the .pb extension does. */
static void test_probe_extension(void **state) {
    (void)state;
    const int64_t dims[] = {4};
    uint8_t v[4] = {1, 2, 3, 4};
    tpb t = head(dims, 1, 2, "u");
    tpb_bytes(&t, 9, v, 4);
    assert_null(tio_format_probe(t.b, t.n));
    assert_string_equal(tio_format_for_path("dir/input_0.pb"), FMT);
    char dir[] = "/tmp/tio_tp_XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/input_0.pb", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(t.b, 1, t.n, f), t.n);
    assert_int_equal(fclose(f), 0);
    tio_container *c = NULL;
    tio_error e;
    if (tio_open(path, NULL, &c, &e) != TIO_OK) fail_msg("open %s: %s", path, e.message);
    assert_string_equal(tio_container_format(c), FMT);
    tio_container_free(c);
    unlink(path);
    rmdir(dir);
    free(t.b);
}

static void test_hostile(void **state) {
    (void)state;
    const int64_t dims[] = {2, 3};
    float v[6] = {0};
    /* an empty file, no data_type */
    open_bad("", 0, TIO_E_TRUNCATED, "the file is empty");
    tpb t = {0};
    tpb_int(&t, 1, 3);
    tpb_bytes(&t, 9, v, 12);
    open_bad(t.b, t.n, TIO_E_CORRUPT, "no data_type (field 2)");
    free(t.b);
    /* raw_data shorter and longer than the shape */
    t = head(dims, 2, 1, "x");
    tpb_bytes(&t, 9, v, sizeof v - 4);
    open_bad(t.b, t.n, TIO_E_CORRUPT, "raw_data holds 20 bytes, the float32 shape needs 24");
    free(t.b);
    t = head(dims, 2, 1, "x");
    tpb_bytes(&t, 9, v, 8);
    tpb_bytes(&t, 9, v, sizeof v + 0); /* the last occurrence counts, as in protobuf */
    tio_container *c = open_ok(t.b, t.n);
    tio_container_free(c);
    free(t.b);
    /* typed data of the wrong count, counted before any allocation */
    const int64_t huge[] = {1 << 20, 1 << 20, 1 << 20};
    t = head(huge, 3, 1, NULL);
    tpb_bytes(&t, 4, v, 8);
    open_bad(t.b, t.n, TIO_E_CORRUPT, "the typed data hold 2 values, the shape needs");
    free(t.b);
    /* both raw and typed */
    t = head(dims, 2, 1, NULL);
    tpb_bytes(&t, 9, v, sizeof v);
    tpb_bytes(&t, 4, v, sizeof v);
    open_bad(t.b, t.n, TIO_E_CORRUPT, "both raw_data and typed data");
    free(t.b);
    /* dims overflowing: the element count, the byte size; a negative dim */
    const int64_t over[] = {INT64_C(1) << 32, INT64_C(1) << 32};
    t = head(over, 2, 1, NULL);
    tpb_bytes(&t, 9, v, 4);
    open_bad(t.b, t.n, TIO_E_OVERFLOW, "the element count overflows");
    free(t.b);
    const int64_t over2[] = {INT64_C(1) << 62};
    t = head(over2, 1, 11, NULL);
    tpb_bytes(&t, 9, v, 4);
    open_bad(t.b, t.n, TIO_E_OVERFLOW, "the byte size overflows");
    free(t.b);
    const int64_t neg[] = {-1};
    t = head(neg, 1, 1, NULL);
    open_bad(t.b, t.n, TIO_E_CORRUPT, "dim 0 is -1");
    free(t.b);
    /* bad wire types: data_type length-delimited, raw_data a varint */
    t = (tpb){0};
    tpb_bytes(&t, 2, "ab", 2);
    open_bad(t.b, t.n, TIO_E_CORRUPT, "data_type");
    free(t.b);
    t = head(dims, 2, 1, NULL);
    tpb_int(&t, 9, 5);
    open_bad(t.b, t.n, TIO_E_CORRUPT, "raw_data");
    free(t.b);
    /* wire types 6 and 7, a group, field number 0 */
    static const uint8_t w6[] = {0x10, 0x01, 0x0e}, grp[] = {0x10, 0x01, 0x0b},
                         f0[] = {0x00, 0x01};
    open_bad(w6, sizeof w6, TIO_E_CORRUPT, NULL);
    open_bad(grp, sizeof grp, TIO_E_UNSUPPORTED, NULL);
    open_bad(f0, sizeof f0, TIO_E_CORRUPT, NULL);
    /* a field TensorProto does not have (a TensorFlow GraphDef's library, say) */
    t = head(dims, 2, 1, NULL);
    tpb_str(&t, 15, "x");
    open_bad(t.b, t.n, TIO_E_CORRUPT, "field 15 (length-delimited) is not a field of an ONNX "
                                      "TensorProto");
    free(t.b);
    /* string tensors: string_data, one bytes field per element; hostile ones
     * (too few or too many, in raw_data, as varints, past the input, a
     * shape of 2^62 strings: refused before anything is allocated) */
    t = head(dims, 2, 8, "s");
    static const char *const strs[] = {"a", "", "bc", "d\0e", "\xff", "xyz"};
    for (int k = 0; k < 6; k++) tpb_bytes(&t, 6, strs[k], k == 3 ? 3 : strlen(strs[k]));
    {
        /* onnx's field order puts string_data (6) before name (8): rebuild */
        tpb u = {0};
        for (size_t k = 0; k < 2; k++) tpb_int(&u, 1, (uint64_t)dims[k]);
        tpb_int(&u, 2, 8);
        for (int k = 0; k < 6; k++) tpb_bytes(&u, 6, strs[k], k == 3 ? 3 : strlen(strs[k]));
        tpb_str(&u, 8, "s");
        tio_open_options o = {0};
        o.format = FMT;
        tio_container *sc = NULL;
        tio_error e;
        assert_int_equal(tio_open_memory(u.b, u.n, &o, &sc, &e), TIO_OK);
        const tio_tensor *x = tio_container_tensor(sc, 0);
        assert_int_equal(tio_tensor_dtype(x), TIO_STRING);
        const char *sp;
        size_t sn;
        assert_int_equal(tio_tensor_string_at(x, 3, &sp, &sn, &e), TIO_OK);
        assert_int_equal(sn, 3);
        assert_memory_equal(sp, "d\0e", 3);
        assert_int_equal(tio_tensor_string_at(x, 4, &sp, &sn, &e), TIO_OK);
        assert_int_equal(sn, 1);
        assert_int_equal((unsigned char)sp[0], 0xff);
        void *out = NULL;
        size_t on = 0;
        tio_save_options so = {0};
        so.format = FMT;
        assert_int_equal(tio_save_memory(sc, &so, &out, &on, &e), TIO_OK);
        assert_int_equal(on, u.n); /* byte for byte what was read */
        assert_memory_equal(out, u.b, u.n);
        tio_free(out);
        tio_container_free(sc);
        free(u.b);
    }
    free(t.b);
    t = head(dims, 2, 8, NULL);
    tpb_str(&t, 6, "s");
    open_bad(t.b, t.n, TIO_E_CORRUPT, "string_data holds 1 strings, the shape needs 6");
    free(t.b);
    const int64_t many[] = {INT64_C(1) << 62};
    t = head(many, 1, 8, NULL);
    tpb_str(&t, 6, "s");
    open_bad(t.b, t.n, TIO_E_CORRUPT, "the shape needs 4611686018427387904");
    free(t.b);
    t = head(dims, 1, 8, NULL);
    tpb_bytes(&t, 9, "ab", 2);
    open_bad(t.b, t.n, TIO_E_CORRUPT, "string_data (field 6), not in raw_data");
    free(t.b);
    t = head(dims, 1, 8, NULL);
    tpb_int(&t, 6, 1);
    tpb_int(&t, 6, 1);
    open_bad(t.b, t.n, TIO_E_CORRUPT, "string_data");
    free(t.b);
    t = head(dims, 1, 8, NULL);
    static const uint8_t past[] = {0x32, 0x7f, 'a', 'b'}; /* a length past the input */
    tpb_raw(&t, past, sizeof past);
    open_bad(t.b, t.n, -1, NULL);
    free(t.b);
    /* unknown data types, segments */
    t = head(dims, 2, 99, NULL);
    open_bad(t.b, t.n, TIO_E_UNSUPPORTED, "data type 99 (unknown)");
    free(t.b);
    /* a SequenceProto (name, elem_type TENSOR, tensor_values) is read as
     * its tensors, its name a property */
    tpb s = seq1(1, dims, v, sizeof v);
    tio_container *sc = open_ok(s.b, s.n);
    assert_int_equal(tio_tensor_nbytes(tio_container_tensor(sc, 0)), sizeof v);
    tio_container_free(sc);
    /* ... but not an element that is a sequence, nor another elem_type */
    tpb s2 = {0}, inner = {0};
    tpb_str(&s2, 1, "outer");
    tpb_int(&s2, 2, 3);
    tpb_str(&inner, 1, "inner");
    tpb_msg(&s2, 5, &inner);
    open_bad(s2.b, s2.n, TIO_E_UNSUPPORTED, "element 0 is a sequence (SequenceProto field 5)");
    free(s2.b);
    tpb s3 = seq1(4, dims, v, sizeof v);
    open_bad(s3.b, s3.n, TIO_E_UNSUPPORTED, "elem_type is 4");
    free(s3.b);
    /* an element whose raw_data is short: the element named */
    tpb s4 = seq1(1, dims, v, sizeof v - 4);
    open_bad(s4.b, s4.n, -1, "SequenceProto element 0");
    free(s4.b);
    /* every cut of the sequence: an error with its offset inside the input,
     * or (cut before the element) an empty sequence */
    for (size_t k = 1; k < s.n; k++) {
        tio_open_options o = {0};
        o.format = FMT;
        tio_container *cc = NULL;
        tio_error ce;
        int rc = tio_open_memory(s.b, k, &o, &cc, &ce);
        if (rc == TIO_OK) {
            assert_int_equal(tio_container_count(cc), 0);
            tio_container_free(cc);
        } else {
            check_error(rc, &ce, cc, k);
        }
    }
    free(s.b);
    /* external data from memory: refused by name */
    t = head(dims, 2, 1, NULL);
    tpb e1 = {0};
    tpb_str(&e1, 1, "location");
    tpb_str(&e1, 2, "weights.bin");
    tpb_msg(&t, 13, &e1);
    tpb_int(&t, 14, 1);
    open_bad(t.b, t.n, TIO_E_UNSUPPORTED, "external file ('weights.bin')");
    free(t.b);
    /* nesting past TensorProto's own (a segment holding a message) is fine to
     * verify but a segment is refused by name */
    t = head(dims, 2, 1, NULL);
    tpb seg = {0};
    tpb_int(&seg, 1, 0);
    tpb_msg(&t, 3, &seg);
    open_bad(t.b, t.n, TIO_E_UNSUPPORTED, "segmented tensors");
    free(t.b);
}

/* Every prefix of a valid file fails cleanly (or, at a field boundary where
 * what is left is still a whole TensorProto, reads). */
static void test_truncations(void **state) {
    (void)state;
    const int64_t dims[] = {2, 3};
    float v[6] = {1, 2, 3, 4, 5, 6};
    tpb t = head(dims, 2, 1, "a_name");
    tpb_str(&t, 12, "doc");
    tpb_bytes(&t, 9, v, sizeof v);
    size_t ok = 0;
    for (size_t L = 0; L < t.n; L++) {
        uint8_t *cut = malloc(L ? L : 1);
        memcpy(cut, t.b, L);
        tio_open_options o = {0};
        o.format = FMT;
        tio_container *c = NULL;
        tio_error e;
        int rc = tio_open_memory(cut, L, &o, &c, &e);
        if (rc == TIO_OK) ok++;
        else check_error(rc, &e, c, L);
        tio_container_free(c);
        free(cut);
    }
    assert_int_equal(ok, 0); /* without raw_data, no prefix has the data the shape needs */
    free(t.b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_raw_view),        cmocka_unit_test(test_typed),
        cmocka_unit_test(test_write),           cmocka_unit_test(test_probe_extension),
        cmocka_unit_test(test_hostile),         cmocka_unit_test(test_truncations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
