/* Protobuf wire runtime (src/protobuf): writer→reader round trips of every
 * wire type and edge value, exact encodings, every class of malformed input
 * (code, format name and absolute offset), packed fields, the writer's
 * errors, truncation / bit-flip / random-bytes sweeps (run under ASan+UBSan
 * in the sanitizer build), schemas as data and the verifier, and against
 * python3-onnx: a model it built walked field by field, one written here read
 * back by it, and the onnx.proto tables (src/onnx/schema.c) compared with its
 * protobuf descriptors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sink.h"
#include "onnx/schema.h"
#include "protobuf/pb.h"
#include "tensio.h"
#include "tvec.h"

#define FMT "pbtest"

/* ------------------------------------------------------------ helpers */

static void ok_(int rc, const tio_error *e, const char *what) {
    if (rc != TIO_OK) print_message("%s -> %s: %s\n", what, tio_status_name(rc), e->message);
    assert_int_equal(rc, TIO_OK);
}
#define OK(expr) ok_((expr), &e, #expr)

/* rc must be `code` at absolute offset `off` (-1: any), the message must start
 * with "pbtest: offset <off>: " and contain `s` (may be NULL). */
static void expect_at(int rc, const tio_error *e, int code, int64_t off, const char *s) {
    char prefix[64];
    snprintf(prefix, sizeof prefix, FMT ": offset %lld: ", (long long)off);
    bool good = rc == code && e->code == code && (off < 0 || e->offset == off) &&
                (off < 0 || strncmp(e->message, prefix, strlen(prefix)) == 0) &&
                (!s || strstr(e->message, s));
    if (!good)
        print_message("expected %s at %lld [%s], got %s at %lld: %s\n",
                      tio_status_name(code), (long long)off, s ? s : "",
                      tio_status_name(rc), (long long)e->offset, e->message);
    assert_true(good);
}

typedef struct outbuf {
    uint8_t *p;
    size_t n;
} outbuf;

/* Runs the writer into a memory sink; returns the code, the bytes in *o
 * (exact-size copy, so that ASan sees overreads). */
static int write_mem(tio_pb_emit_fn emit, void *ctx, outbuf *o, tio_error *e) {
    tio_sink s;
    tio__sink_init_mem(&s);
    tio_error_clear(e);
    int rc = tio__pb_write(&s, FMT, emit, ctx, e);
    o->n = s.len;
    o->p = malloc(s.len ? s.len : 1);
    assert_non_null(o->p);
    if (s.len) memcpy(o->p, s.buf, s.len);
    tio__sink_dispose(&s);
    return rc;
}

static outbuf from_bytes(const void *p, size_t n) {
    outbuf o = {malloc(n ? n : 1), n};
    assert_non_null(o.p);
    if (n) memcpy(o.p, p, n);
    return o;
}

/* The next field must have this number and wire type. */
static void next_is(tio_pb_reader *r, tio_pb_field *f, uint32_t number, tio_pb_wire wire) {
    tio_error e;
    tio_error_clear(&e);
    assert_false(tio__pb_done(r));
    OK(tio__pb_next(r, f, &e));
    assert_int_equal(f->number, number);
    assert_int_equal(f->wire, wire);
}

/* ----------------------------------------------- the test message */

static const uint64_t EDGE_U64[] = {0,     1,          127,         128,
                                    300,   16383,      16384,       UINT32_MAX,
                                    (uint64_t)1 << 63, UINT64_MAX - 1, UINT64_MAX};
static const int32_t EDGE_I32[] = {0, 1, -1, -64, 64, INT32_MIN, INT32_MAX};
static const int64_t EDGE_I64[] = {0, 1, -1, -64, 64, INT64_MIN, INT64_MAX};
static const float FLOATS[] = {0.0f, -1.5f, 3.0e38f};
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Field numbers of the test schema (nested messages are field 14 and have
 * the same schema). */
enum {
    F_VARINT = 1, F_INT32 = 2, F_SINT32 = 3, F_SINT64 = 4, F_FIXED32 = 5, F_FIXED64 = 6,
    F_FLOAT = 7, F_DOUBLE = 8, F_BYTES = 9, F_PACKED_U64 = 10, F_PACKED_I32 = 11,
    F_PACKED_F32 = 12, F_PACKED_F64 = 13, F_MSG = 14, F_BIG = 15, F_PACKED_I64 = 16,
    F_EMPTY_PACKED = 17
};

typedef struct emit_ctx {
    const uint8_t *big; /* F_BIG payload, by reference; NULL = none */
    size_t big_len;
} emit_ctx;

#define TRY(expr)                      \
    do {                               \
        int rc_ = (expr);              \
        if (rc_) return rc_;           \
    } while (0)

static int emit_all(tio_pb_writer *w, void *vctx, tio_error *e) {
    const emit_ctx *c = vctx;
    for (size_t i = 0; i < N(EDGE_U64); i++) TRY(tio__pb_put_varint(w, F_VARINT, EDGE_U64[i], e));
    for (size_t i = 0; i < N(EDGE_I32); i++) TRY(tio__pb_put_int64(w, F_INT32, EDGE_I32[i], e));
    for (size_t i = 0; i < N(EDGE_I32); i++) TRY(tio__pb_put_sint32(w, F_SINT32, EDGE_I32[i], e));
    for (size_t i = 0; i < N(EDGE_I64); i++) TRY(tio__pb_put_sint64(w, F_SINT64, EDGE_I64[i], e));
    TRY(tio__pb_put_fixed32(w, F_FIXED32, 0, e));
    TRY(tio__pb_put_fixed32(w, F_FIXED32, UINT32_MAX, e));
    TRY(tio__pb_put_fixed64(w, F_FIXED64, UINT64_MAX, e));
    TRY(tio__pb_put_float(w, F_FLOAT, -1.5f, e));
    TRY(tio__pb_put_double(w, F_DOUBLE, 3.25, e));
    TRY(tio__pb_put_bytes(w, F_BYTES, "", 0, e));
    TRY(tio__pb_put_string(w, F_BYTES, "hello", e));
    TRY(tio__pb_put_bytes(w, F_BYTES, "\0\xff", 2, e));
    TRY(tio__pb_put_packed_u64(w, F_PACKED_U64, EDGE_U64, N(EDGE_U64), e));
    TRY(tio__pb_put_packed_i32(w, F_PACKED_I32, EDGE_I32, N(EDGE_I32), e));
    TRY(tio__pb_put_packed_fixed(w, F_PACKED_F32, FLOATS, N(FLOATS), 4, e));
    TRY(tio__pb_put_packed_fixed(w, F_PACKED_F64, EDGE_U64, N(EDGE_U64), 8, e));
    TRY(tio__pb_put_packed_i64(w, F_PACKED_I64, EDGE_I64, N(EDGE_I64), e));
    TRY(tio__pb_put_packed_i64(w, F_EMPTY_PACKED, NULL, 0, e)); /* writes nothing */
    TRY(tio__pb_begin(w, F_MSG, e));
    TRY(tio__pb_put_varint(w, F_VARINT, 150, e));
    TRY(tio__pb_begin(w, F_MSG, e));
    TRY(tio__pb_put_string(w, F_BYTES, "deep", e));
    TRY(tio__pb_end(w, e));
    TRY(tio__pb_begin(w, F_MSG, e)); /* empty */
    TRY(tio__pb_end(w, e));
    TRY(tio__pb_end(w, e));
    if (c && c->big) /* the data are not read while sizing: pass NULL then */
        TRY(tio__pb_put_len(w, F_BIG, tio__pb_sizing(w) ? NULL : c->big, c->big_len, true, e));
    TRY(tio__pb_put_varint(w, TIO_PB_MAX_FIELD, 42, e));
    return TIO_OK;
}

/* Reads a packed field's elements into out[] (at most cap), checking that
 * tio__pb_packed_count agrees with the iteration. */
static size_t read_packed(const tio_pb_reader *r, const tio_pb_field *f, tio_pb_wire elem,
                          uint64_t *out, size_t cap) {
    tio_error e;
    tio_error_clear(&e);
    uint64_t count = 0;
    OK(tio__pb_packed_count(r, f, elem, "test", &count, &e));
    tio_pb_packed p;
    OK(tio__pb_packed_init(r, f, elem, "test", &p, &e));
    size_t n = 0;
    while (!tio__pb_packed_done(&p)) {
        uint64_t v;
        OK(tio__pb_packed_next(&p, &v, &e));
        assert_true(n < cap);
        out[n++] = v;
    }
    assert_int_equal(n, count);
    return n;
}

static void check_all(const uint8_t *buf, size_t len, uint64_t base, const emit_ctx *c) {
    tio_error e;
    tio_error_clear(&e);
    tio_pb_reader r;
    tio_pb_field f;
    tio__pb_init(&r, buf, len, base, FMT, 8);
    for (size_t i = 0; i < N(EDGE_U64); i++) {
        next_is(&r, &f, F_VARINT, TIO_PB_VARINT);
        assert_true(f.u == EDGE_U64[i]);
    }
    for (size_t i = 0; i < N(EDGE_I32); i++) {
        next_is(&r, &f, F_INT32, TIO_PB_VARINT);
        assert_int_equal(tio__pb_int32(&f), EDGE_I32[i]);
        assert_true(tio__pb_int64(&f) == EDGE_I32[i]);
        if (EDGE_I32[i] < 0) assert_int_equal(f.vat - f.at, 1); /* 10-byte value */
        if (EDGE_I32[i] < 0) assert_int_equal(r.pos - f.vat, 10);
    }
    for (size_t i = 0; i < N(EDGE_I32); i++) {
        next_is(&r, &f, F_SINT32, TIO_PB_VARINT);
        assert_int_equal(tio__pb_unzigzag32(f.u), EDGE_I32[i]);
        assert_true(r.pos - f.vat <= 5);
    }
    for (size_t i = 0; i < N(EDGE_I64); i++) {
        next_is(&r, &f, F_SINT64, TIO_PB_VARINT);
        assert_true(tio__pb_unzigzag64(f.u) == EDGE_I64[i]);
    }
    next_is(&r, &f, F_FIXED32, TIO_PB_I32);
    assert_true(f.u == 0);
    next_is(&r, &f, F_FIXED32, TIO_PB_I32);
    assert_true(f.u == UINT32_MAX);
    next_is(&r, &f, F_FIXED64, TIO_PB_I64);
    assert_true(f.u == UINT64_MAX);
    next_is(&r, &f, F_FLOAT, TIO_PB_I32);
    assert_true(tio__pb_float(&f) == -1.5f);
    next_is(&r, &f, F_DOUBLE, TIO_PB_I64);
    assert_true(tio__pb_double(&f) == 3.25);
    next_is(&r, &f, F_BYTES, TIO_PB_LEN);
    assert_true(f.u == 0);
    next_is(&r, &f, F_BYTES, TIO_PB_LEN);
    assert_true(f.u == 5);
    assert_memory_equal(tio__pb_bytes(&r, &f), "hello", 5);
    assert_true(tio__pb_bytes(&r, &f) == buf + f.data); /* a view, not a copy */
    next_is(&r, &f, F_BYTES, TIO_PB_LEN);
    assert_true(f.u == 2);
    assert_memory_equal(tio__pb_bytes(&r, &f), "\0\xff", 2);

    uint64_t v[32];
    next_is(&r, &f, F_PACKED_U64, TIO_PB_LEN);
    assert_int_equal(read_packed(&r, &f, TIO_PB_VARINT, v, 32), N(EDGE_U64));
    for (size_t i = 0; i < N(EDGE_U64); i++) assert_true(v[i] == EDGE_U64[i]);
    next_is(&r, &f, F_PACKED_I32, TIO_PB_LEN);
    assert_int_equal(read_packed(&r, &f, TIO_PB_VARINT, v, 32), N(EDGE_I32));
    for (size_t i = 0; i < N(EDGE_I32); i++) assert_int_equal((int32_t)(uint32_t)v[i], EDGE_I32[i]);
    next_is(&r, &f, F_PACKED_F32, TIO_PB_LEN);
    assert_int_equal(read_packed(&r, &f, TIO_PB_I32, v, 32), N(FLOATS));
    for (size_t i = 0; i < N(FLOATS); i++) {
        tio_pb_field g = {.u = v[i]};
        assert_true(tio__pb_float(&g) == FLOATS[i]);
    }
    next_is(&r, &f, F_PACKED_F64, TIO_PB_LEN);
    assert_int_equal(read_packed(&r, &f, TIO_PB_I64, v, 32), N(EDGE_U64));
    for (size_t i = 0; i < N(EDGE_U64); i++) assert_true(v[i] == EDGE_U64[i]);
    next_is(&r, &f, F_PACKED_I64, TIO_PB_LEN);
    assert_int_equal(read_packed(&r, &f, TIO_PB_VARINT, v, 32), N(EDGE_I64));
    for (size_t i = 0; i < N(EDGE_I64); i++) assert_true((int64_t)v[i] == EDGE_I64[i]);

    /* nested: {1: 150, 14: {9: "deep"}, 14: {}} */
    tio_pb_reader m, d;
    next_is(&r, &f, F_MSG, TIO_PB_LEN);
    OK(tio__pb_sub(&r, &f, "msg", &m, &e));
    assert_int_equal(m.depth, 2);
    next_is(&m, &f, F_VARINT, TIO_PB_VARINT);
    assert_true(f.u == 150);
    next_is(&m, &f, F_MSG, TIO_PB_LEN);
    OK(tio__pb_sub(&m, &f, "msg", &d, &e));
    assert_int_equal(d.depth, 3);
    next_is(&d, &f, F_BYTES, TIO_PB_LEN);
    assert_memory_equal(tio__pb_bytes(&d, &f), "deep", 4);
    assert_true(tio__pb_done(&d));
    next_is(&m, &f, F_MSG, TIO_PB_LEN);
    OK(tio__pb_sub(&m, &f, "msg", &d, &e));
    assert_true(tio__pb_done(&d));
    assert_true(tio__pb_done(&m));

    if (c && c->big) {
        next_is(&r, &f, F_BIG, TIO_PB_LEN);
        assert_true(f.u == c->big_len);
        assert_memory_equal(tio__pb_bytes(&r, &f), c->big, c->big_len);
    }
    next_is(&r, &f, TIO_PB_MAX_FIELD, TIO_PB_VARINT);
    assert_true(f.u == 42);
    assert_true(tio__pb_done(&r));
    assert_int_equal(r.pos, len);
}

static void test_roundtrip(void **state) {
    (void)state;
    tio_error e;
    outbuf o;
    OK(write_mem(emit_all, NULL, &o, &e));
    check_all(o.p, o.n, 0, NULL);
    check_all(o.p, o.n, 1000, NULL); /* base only changes messages */
    /* deterministic */
    outbuf o2;
    OK(write_mem(emit_all, NULL, &o2, &e));
    assert_int_equal(o.n, o2.n);
    assert_memory_equal(o.p, o2.p, o.n);
    free(o2.p);
    free(o.p);

    /* a large payload by reference, through the memory sink and a file sink
     * (where it is referenced, not copied): the same bytes */
    size_t big_len = 200000;
    uint8_t *big = malloc(big_len);
    assert_non_null(big);
    uint64_t seed = 7;
    for (size_t i = 0; i < big_len; i++) big[i] = (uint8_t)tvec_rand(&seed);
    emit_ctx c = {big, big_len};
    OK(write_mem(emit_all, &c, &o, &e));
    check_all(o.p, o.n, 0, &c);

    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    tio_sink *s = malloc(sizeof *s);
    assert_non_null(s);
    OK(tio__sink_init_fd(s, fileno(tmp), &e));
    OK(tio__pb_write(s, FMT, emit_all, &c, &e));
    OK(tio__sink_flush(s, &e));
    tio__sink_dispose(s);
    free(s);
    assert_int_equal(fseek(tmp, 0, SEEK_END), 0);
    assert_int_equal((size_t)ftell(tmp), o.n);
    rewind(tmp);
    uint8_t *back = malloc(o.n);
    assert_non_null(back);
    assert_int_equal(fread(back, 1, o.n, tmp), o.n);
    assert_memory_equal(back, o.p, o.n);
    fclose(tmp);
    free(back);
    free(o.p);
    free(big);
}

/* ------------------------------------------------------ exact bytes */

static int emit_one(tio_pb_writer *w, void *vctx, tio_error *e) {
    int which = *(const int *)vctx;
    static const int64_t packed[] = {3, 270, 86942};
    static const uint8_t pad[126];
    switch (which) {
    case 0: return tio__pb_put_varint(w, 1, 150, e);
    case 1: return tio__pb_put_string(w, 2, "testing", e);
    case 2: return tio__pb_put_int64(w, 1, (int32_t)-1, e);
    case 3: return tio__pb_put_sint32(w, 1, -1, e);
    case 4: return tio__pb_put_sint32(w, 1, 1, e);
    case 5: return tio__pb_put_sint64(w, 1, INT64_MIN, e);
    case 6:
        TRY(tio__pb_begin(w, 3, e));
        TRY(tio__pb_put_varint(w, 1, 150, e));
        return tio__pb_end(w, e);
    case 7: return tio__pb_put_packed_i64(w, 4, packed, 3, e);
    case 8: return tio__pb_put_fixed32(w, 5, 1, e);
    case 9: return tio__pb_put_fixed64(w, 6, 0x0102030405060708ull, e);
    case 10: /* a nested message of 127 bytes: a 1-byte prefix; 128: 2 bytes */
    case 11:
        TRY(tio__pb_begin(w, 1, e));
        TRY(tio__pb_put_bytes(w, 2, pad, which == 10 ? 125 : 126, e));
        return tio__pb_end(w, e);
    case 12: return tio__pb_put_varint(w, TIO_PB_MAX_FIELD, 0, e);
    case 13: return tio__pb_put_float(w, 1, 1.0f, e);
    case 14: return tio__pb_put_double(w, 1, 1.0, e);
    case 15: return tio__pb_put_varint(w, 16, UINT64_MAX, e); /* 2-byte tag */
    default: return tio__pb_put_bytes(w, 1, "", 0, e);
    }
}

static void test_exact_bytes(void **state) {
    (void)state;
    static const struct {
        int which;
        size_t n;
        const char *hex;
    } cases[] = {
        {0, 3, "089601"},
        {1, 9, "120774657374696e67"},
        {2, 11, "08ffffffffffffffffff01"},
        {3, 2, "0801"},
        {4, 2, "0802"},
        {5, 11, "08ffffffffffffffffff01"},
        {6, 5, "1a03089601"},
        {7, 8, "2206038e029ea705"},
        {8, 5, "2d01000000"},
        {9, 9, "310807060504030201"},
        {10, 2 + 127, "0a7f127d"},
        {11, 3 + 128, "0a8001127e"},
        {12, 6, "f8ffffff0f00"},
        {13, 5, "0d0000803f"},
        {14, 9, "09000000000000f03f"},
        {15, 12, "8001ffffffffffffffffff01"},
        {16, 2, "0a00"},
    };
    for (size_t i = 0; i < N(cases); i++) {
        tio_error e;
        outbuf o;
        int which = cases[i].which;
        OK(write_mem(emit_one, &which, &o, &e));
        char hex[64];
        size_t shown = o.n < 20 ? o.n : strlen(cases[i].hex) / 2;
        tvec_hex(o.p, shown, hex);
        if (o.n != cases[i].n || strcmp(hex, cases[i].hex) != 0)
            print_message("case %d: %zu bytes %s, expected %zu %s\n", which, o.n, hex,
                          cases[i].n, cases[i].hex);
        assert_int_equal(o.n, cases[i].n);
        assert_string_equal(hex, cases[i].hex);
        free(o.p);
    }
}

/* ------------------------------------------------------------ varints */

static void test_varints(void **state) {
    (void)state;
    tio_error e;
    tio_pb_reader r;
    uint64_t v;
    size_t pos;
    /* every edge value, minimal encoding */
    for (size_t i = 0; i < N(EDGE_U64); i++) {
        uint8_t b[10];
        size_t n = 0;
        uint64_t x = EDGE_U64[i];
        do {
            b[n] = (uint8_t)(x & 0x7F);
            x >>= 7;
            if (x) b[n] |= 0x80;
            n++;
        } while (x);
        outbuf o = from_bytes(b, n);
        tio__pb_init(&r, o.p, o.n, 0, FMT, 1);
        pos = 0;
        OK(tio__pb_varint(&r, &pos, o.n, &v, "v", &e));
        assert_true(v == EDGE_U64[i]);
        assert_int_equal(pos, n);
        free(o.p);
    }
    static const struct {
        size_t n;
        uint8_t b[12];
        int code;
        uint64_t v;
    } cases[] = {
        {2, {0x80, 0x00}, TIO_OK, 0},                    /* non-minimal: accepted */
        {10, {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, TIO_OK,
         (uint64_t)1 << 63},
        {10, {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}, TIO_OK, UINT64_MAX},
        {10, {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02}, TIO_E_CORRUPT, 0},
        {10, {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7F}, TIO_E_CORRUPT, 0},
        {11, {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00},
         TIO_E_CORRUPT, 0},
        {0, {0}, TIO_E_TRUNCATED, 0},
        {1, {0x80}, TIO_E_TRUNCATED, 0},
        {9, {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, TIO_E_TRUNCATED, 0},
    };
    for (size_t i = 0; i < N(cases); i++) {
        outbuf o = from_bytes(cases[i].b, cases[i].n);
        tio__pb_init(&r, o.p, o.n, 50, FMT, 1);
        pos = 0;
        tio_error_clear(&e);
        int rc = tio__pb_varint(&r, &pos, o.n, &v, "value", &e);
        if (cases[i].code == TIO_OK) {
            OK(rc);
            assert_true(v == cases[i].v);
            assert_int_equal(pos, cases[i].n);
        } else {
            expect_at(rc, &e, cases[i].code, 50, "value: varint");
            assert_int_equal(pos, 0);
        }
        free(o.p);
    }
}

/* ------------------------------------------------------ malformed input */

/* Walks a message: every field; F_MSG fields as nested messages (recursing;
 * this is test code), packed fields through count and iteration; `greedy`
 * also tries every other length-delimited field as a message (errors there
 * are the walk's result too). Returns the first error. */
static int walk(const tio_pb_reader *r0, bool greedy, tio_error *e) {
    tio_pb_reader r = *r0;
    while (!tio__pb_done(&r)) {
        tio_pb_field f;
        int rc = tio__pb_next(&r, &f, e);
        if (rc) return rc;
        tio_pb_wire elem = f.number == F_PACKED_F32 ? TIO_PB_I32
                           : f.number == F_PACKED_F64 ? TIO_PB_I64
                                                      : TIO_PB_VARINT;
        if (f.number == F_MSG || (greedy && f.wire == TIO_PB_LEN)) {
            tio_pb_reader sub;
            if ((rc = tio__pb_sub(&r, &f, "msg", &sub, e))) return rc;
            if ((rc = walk(&sub, greedy, e))) return rc;
        } else if (f.number >= F_PACKED_U64 && f.number <= F_PACKED_F64) {
            uint64_t count, n = 0, v;
            if ((rc = tio__pb_packed_count(&r, &f, elem, "packed", &count, e))) return rc;
            tio_pb_packed p;
            if ((rc = tio__pb_packed_init(&r, &f, elem, "packed", &p, e))) return rc;
            while (!tio__pb_packed_done(&p)) {
                if ((rc = tio__pb_packed_next(&p, &v, e))) return rc;
                n++;
            }
            assert_true(n == count);
        }
    }
    return TIO_OK;
}

static int walk_bytes(const uint8_t *p, size_t n, uint64_t base, uint32_t depth, bool greedy,
                      tio_error *e) {
    tio_pb_reader r;
    tio__pb_init(&r, p, n, base, FMT, depth);
    tio_error_clear(e);
    return walk(&r, greedy, e);
}

static void test_malformed(void **state) {
    (void)state;
    static const struct {
        const char *name;
        size_t n;
        uint8_t b[24];
        int code;
        int64_t off; /* relative to the base 1000 */
        const char *text;
    } cases[] = {
        {"truncated tag", 1, {0x96}, TIO_E_TRUNCATED, 0, "field tag: varint runs past"},
        {"truncated varint", 2, {0x08, 0x96}, TIO_E_TRUNCATED, 1,
         "field 1: varint value: varint runs past the end of the data at offset 1002"},
        {"truncated varint after a field", 5, {0x08, 0x01, 0x10, 0xFF, 0xFF},
         TIO_E_TRUNCATED, 3, "field 2: varint value"},
        {"overlong varint", 12,
         {0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00},
         TIO_E_CORRUPT, 1, "longer than 10 bytes"},
        {"overflowing varint", 11,
         {0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02},
         TIO_E_CORRUPT, 1, "overflows 64 bits (10th byte 0x02, expected 0x00 or 0x01)"},
        {"overlong tag", 11, {0x88, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00},
         TIO_E_CORRUPT, 0, "field tag: varint longer"},
        {"length past the end", 4, {0x0A, 0x05, 0x61, 0x62}, TIO_E_TRUNCATED, 1,
         "field 1: length 5 exceeds the 2 bytes left in the data"},
        {"length near UINT64_MAX", 11,
         {0x0A, 0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}, TIO_E_TRUNCATED, 1,
         "length 18446744073709551614 exceeds the 0 bytes left"},
        {"length UINT64_MAX after data", 13,
         {0x08, 0x00, 0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01},
         TIO_E_TRUNCATED, 3, "length 18446744073709551615"},
        {"inner length past its message", 8, {0x72, 0x04, 0x4A, 0x05, 0x61, 0x62, 0x08, 0x01},
         TIO_E_BOUNDS, 3,
         "field 9: length 5 exceeds the 2 bytes left in its message (which ends at offset "
         "1006)"},
        {"inner varint past its message", 6, {0x72, 0x02, 0x08, 0x80, 0x08, 0x01}, TIO_E_BOUNDS,
         3, "varint runs past the end of its message at offset 1004"},
        {"inner fixed32 past its message", 8, {0x72, 0x03, 0x2D, 0x01, 0x02, 0x08, 0x01, 0x00},
         TIO_E_BOUNDS, 3, "field 5: fixed32: expected 4 bytes, found 2 before the end of its "
                          "message at offset 1005"},
        {"start group", 2, {0x0B, 0x00}, TIO_E_UNSUPPORTED, 0,
         "field 1: wire type 3 (start group): groups are not supported"},
        {"end group", 1, {0x0C}, TIO_E_UNSUPPORTED, 0, "wire type 4 (end group)"},
        {"group later", 3, {0x08, 0x01, 0x13}, TIO_E_UNSUPPORTED, 2, "field 2: wire type 3"},
        {"wire type 6", 1, {0x0E}, TIO_E_CORRUPT, 0,
         "field 1: wire type 6 is not a protobuf wire type (expected 0, 1, 2 or 5)"},
        {"wire type 7", 2, {0xFF, 0x01}, TIO_E_CORRUPT, 0, "field 31: wire type 7"},
        {"field 0", 2, {0x00, 0x01}, TIO_E_CORRUPT, 0,
         "field tag 0x0: field number 0 (expected 1..536870911)"},
        {"field 0 length-delimited", 2, {0x02, 0x00}, TIO_E_CORRUPT, 0, "field number 0"},
        {"field 0 nested", 4, {0x72, 0x02, 0x00, 0x00}, TIO_E_CORRUPT, 2, "field number 0"},
        {"field number 2^29", 6, {0x80, 0x80, 0x80, 0x80, 0x10, 0x00}, TIO_E_CORRUPT, 0,
         "field number 536870912 (expected 1..536870911)"},
        {"tag above 32 bits", 7, {0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0x00}, TIO_E_CORRUPT, 0,
         "field number 4294967296"},
        {"truncated fixed32", 3, {0x0D, 0x01, 0x02}, TIO_E_TRUNCATED, 1,
         "field 1: fixed32: expected 4 bytes, found 2 before the end of the data"},
        {"truncated fixed64", 8, {0x09, 1, 2, 3, 4, 5, 6, 7}, TIO_E_TRUNCATED, 1,
         "field 1: fixed64: expected 8 bytes, found 7"},
        {"packed fixed32 length 7", 9, {0x62, 0x07, 1, 2, 3, 4, 5, 6, 7}, TIO_E_CORRUPT, 1,
         "field 12 (packed): packed fixed32 length 7 is not a multiple of 4"},
        {"packed fixed64 length 4", 6, {0x6A, 0x04, 1, 2, 3, 4}, TIO_E_CORRUPT, 1,
         "packed fixed64 length 4 is not a multiple of 8"},
        {"packed varint cut", 6, {0x52, 0x03, 0x01, 0x96, 0x96, 0x08}, TIO_E_BOUNDS, 3,
         "field 10: packed element: varint runs past the end of its message at offset 1005"},
        {"packed overflowing varint", 13,
         {0x52, 0x0B, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F},
         TIO_E_CORRUPT, 3, "packed element: varint overflows 64 bits"},
        {"packed wrong wire type", 9, {0x61, 1, 2, 3, 4, 5, 6, 7, 8}, TIO_E_CORRUPT, 0,
         "field 12 (packed): wire type 1 (fixed64), expected 2 (packed) or 5 (fixed32)"},
        {"packed varint as fixed32", 5, {0x55, 1, 2, 3, 4}, TIO_E_CORRUPT, 0,
         "field 10 (packed): wire type 5 (fixed32), expected 2 (packed) or 0 (varint)"},
        {"message as varint", 2, {0x70, 0x01}, TIO_E_CORRUPT, 0,
         "field 14 (msg): wire type 0 (varint), expected 2 (length-delimited)"},
    };
    for (size_t i = 0; i < N(cases); i++) {
        outbuf o = from_bytes(cases[i].b, cases[i].n);
        tio_error e;
        int rc = walk_bytes(o.p, o.n, 1000, 8, false, &e);
        if (rc != cases[i].code) print_message("case: %s\n", cases[i].name);
        expect_at(rc, &e, cases[i].code, 1000 + cases[i].off, cases[i].text);
        assert_string_equal(e.format, FMT);
        free(o.p);
    }
}

/* A failed read leaves the reader where it was; tio__pb_next on an empty
 * message and packed_next past the end are caller errors. */
static void test_reader_state(void **state) {
    (void)state;
    tio_error e;
    tio_pb_reader r;
    tio_pb_field f;
    static const uint8_t b[] = {0x08, 0x01, 0x0A, 0x09};
    outbuf o = from_bytes(b, sizeof b);
    tio__pb_init(&r, o.p, o.n, 0, FMT, 4);
    OK(tio__pb_next(&r, &f, &e));
    tio_pb_reader before = r;
    expect_at(tio__pb_next(&r, &f, &e), &e, TIO_E_TRUNCATED, 3, "length 9");
    assert_memory_equal(&before, &r, sizeof r);
    free(o.p);

    tio__pb_init(&r, NULL, 0, 0, FMT, 0);
    assert_true(tio__pb_done(&r));
    assert_int_equal(r.max_depth, 1);
    tio_error_clear(&e);
    assert_int_equal(tio__pb_next(&r, &f, &e), TIO_E_ARGUMENT);

    /* an unpacked occurrence of a repeated scalar is one element */
    static const uint8_t u[] = {0x50, 0x96, 0x01, 0x65, 0, 0, 0x80, 0x3F};
    o = from_bytes(u, sizeof u);
    tio__pb_init(&r, o.p, o.n, 0, FMT, 4);
    uint64_t v[4];
    OK(tio__pb_next(&r, &f, &e));
    assert_int_equal(read_packed(&r, &f, TIO_PB_VARINT, v, 4), 1);
    assert_true(v[0] == 150);
    OK(tio__pb_next(&r, &f, &e));
    assert_int_equal(read_packed(&r, &f, TIO_PB_I32, v, 4), 1);
    tio_pb_field g = {.u = v[0]};
    assert_true(tio__pb_float(&g) == 1.0f);
    tio_pb_packed p;
    OK(tio__pb_packed_init(&r, &f, TIO_PB_I32, NULL, &p, &e));
    OK(tio__pb_packed_next(&p, &v[0], &e));
    assert_true(tio__pb_packed_done(&p));
    assert_int_equal(tio__pb_packed_next(&p, &v[0], &e), TIO_E_ARGUMENT);
    assert_int_equal(tio__pb_packed_init(&r, &f, TIO_PB_LEN, NULL, &p, &e), TIO_E_ARGUMENT);
    /* an empty packed range */
    static const uint8_t z[] = {0x52, 0x00};
    free(o.p);
    o = from_bytes(z, sizeof z);
    tio__pb_init(&r, o.p, o.n, 0, FMT, 4);
    OK(tio__pb_next(&r, &f, &e));
    assert_int_equal(read_packed(&r, &f, TIO_PB_VARINT, v, 4), 0);
    assert_int_equal(read_packed(&r, &f, TIO_PB_I64, v, 4), 0);
    free(o.p);
}

/* Messages nested `levels` deep (field 14 each), innermost holding 1: 1. */
static int emit_nested(tio_pb_writer *w, void *vctx, tio_error *e) {
    int levels = *(const int *)vctx;
    for (int i = 0; i < levels; i++) TRY(tio__pb_begin(w, F_MSG, e));
    TRY(tio__pb_put_varint(w, F_VARINT, 1, e));
    for (int i = 0; i < levels; i++) TRY(tio__pb_end(w, e));
    return TIO_OK;
}

static void test_depth(void **state) {
    (void)state;
    tio_error e;
    outbuf o;
    int levels = 5; /* root + 5 nested = depth 6 */
    OK(write_mem(emit_nested, &levels, &o, &e));
    /* 72 0a 72 08 72 06 72 04 72 02 08 01 */
    assert_int_equal(o.n, 12);
    OK(walk_bytes(o.p, o.n, 0, 6, false, &e));
    /* max depth 3: the message opened by the third field-14 tag (offset 4) */
    int rc = walk_bytes(o.p, o.n, 500, 3, false, &e);
    expect_at(rc, &e, TIO_E_LIMIT, 504,
              "field 14 (msg): nested message at depth 4 exceeds the depth limit (3)");
    rc = walk_bytes(o.p, o.n, 0, 1, false, &e);
    expect_at(rc, &e, TIO_E_LIMIT, 0, "depth 2 exceeds the depth limit (1)");
    free(o.p);

    /* a deep chain costs no C stack in the reader: 100000 levels walked with
     * an explicit loop (one sub-reader at a time) */
    levels = 100000;
    OK(write_mem(emit_nested, &levels, &o, &e));
    tio_pb_reader r;
    tio_pb_field f;
    tio__pb_init(&r, o.p, o.n, 0, FMT, (uint32_t)levels + 1);
    for (int i = 0; i < levels; i++) {
        OK(tio__pb_next(&r, &f, &e));
        tio_pb_reader sub;
        OK(tio__pb_sub(&r, &f, "msg", &sub, &e));
        r = sub;
    }
    OK(tio__pb_next(&r, &f, &e));
    assert_true(f.number == F_VARINT && f.u == 1);
    assert_true(tio__pb_done(&r));
    assert_int_equal(r.depth, levels + 1);
    /* and the limit cuts it */
    tio__pb_init(&r, o.p, o.n, 0, FMT, 1000);
    tio_error_clear(&e);
    rc = TIO_OK;
    for (int i = 0; i < levels && rc == TIO_OK; i++) {
        OK(tio__pb_next(&r, &f, &e));
        tio_pb_reader sub;
        rc = tio__pb_sub(&r, &f, "msg", &sub, &e);
        if (rc == TIO_OK) r = sub;
    }
    assert_int_equal(rc, TIO_E_LIMIT);
    assert_int_equal(r.depth, 1000);
    free(o.p);
}

/* ------------------------------------------------------ writer errors */

typedef struct bad_ctx {
    int mode;
    int calls;
} bad_ctx;

static int emit_bad(tio_pb_writer *w, void *vctx, tio_error *e) {
    bad_ctx *c = vctx;
    c->calls++;
    switch (c->mode) {
    case 0: return tio__pb_put_varint(w, 0, 1, e);
    case 1: return tio__pb_put_varint(w, TIO_PB_MAX_FIELD + 1, 1, e);
    case 2: return tio__pb_end(w, e);
    case 3: return tio__pb_begin(w, 1, e); /* never ended */
    case 4: /* the second pass writes more */
        TRY(tio__pb_begin(w, 1, e));
        TRY(tio__pb_put_varint(w, 1, c->calls == 1 ? 1 : 1000, e));
        return tio__pb_end(w, e);
    case 5: /* the second pass opens a message the first did not */
        if (c->calls == 2) TRY(tio__pb_begin(w, 1, e));
        if (c->calls == 2) TRY(tio__pb_end(w, e));
        return TIO_OK;
    case 6: /* the second pass writes another top-level field */
        return tio__pb_put_varint(w, 1, c->calls == 1 ? 1 : 300, e);
    case 7: /* an error ignored by emit: later calls fail, the write fails */
        (void)tio__pb_put_varint(w, 0, 1, e);
        if (tio__pb_put_varint(w, 1, 1, e) != TIO_E_ARGUMENT) return TIO_E_CORRUPT;
        if (tio__pb_begin(w, 1, e) != TIO_E_ARGUMENT) return TIO_E_CORRUPT;
        if (tio__pb_end(w, e) != TIO_E_ARGUMENT) return TIO_E_CORRUPT;
        return TIO_OK;
    case 8: return tio__pb_put_bytes(w, 1, NULL, 3, e);
    case 9: return tio__pb_put_packed_fixed(w, 1, "abcd", 1, 2, e);
    default: return TIO_E_IO; /* emit's own error, passed through */
    }
}

static void test_writer_errors(void **state) {
    (void)state;
    static const struct {
        int mode;
        int code;
        const char *text;
    } cases[] = {
        {0, TIO_E_ARGUMENT, "field number 0 (expected 1..536870911)"},
        {1, TIO_E_ARGUMENT, "field number 536870912"},
        {2, TIO_E_ARGUMENT, "end without a message begun"},
        {3, TIO_E_ARGUMENT, "1 nested message(s) begun and not ended"},
        {4, TIO_E_ARGUMENT, "3 bytes written, 2 measured"},
        {5, TIO_E_ARGUMENT, "nested message 0 was not opened while sizing"},
        {6, TIO_E_ARGUMENT, "3 bytes in 0 nested messages written, 2 in 0 measured"},
        {7, TIO_E_ARGUMENT, "after an earlier error"},
        {8, TIO_E_ARGUMENT, "field 1: NULL data for 3 bytes"},
        {9, TIO_E_ARGUMENT, "packed element size 2"},
        {10, TIO_E_IO, NULL},
    };
    for (size_t i = 0; i < N(cases); i++) {
        bad_ctx c = {cases[i].mode, 0};
        tio_error e;
        outbuf o;
        int rc = write_mem(emit_bad, &c, &o, &e);
        if (rc != cases[i].code || (cases[i].text && !strstr(e.message, cases[i].text)))
            print_message("mode %d: %s: %s\n", cases[i].mode, tio_status_name(rc), e.message);
        assert_int_equal(rc, cases[i].code);
        if (cases[i].text) {
            assert_non_null(strstr(e.message, cases[i].text));
            assert_non_null(strstr(e.message, FMT ": protobuf writer: "));
        }
        free(o.p);
    }
    tio_error e;
    tio_sink s;
    tio__sink_init_mem(&s);
    assert_int_equal(tio__pb_write(&s, FMT, NULL, NULL, &e), TIO_E_ARGUMENT);
    assert_int_equal(tio__pb_write(NULL, FMT, emit_all, NULL, &e), TIO_E_ARGUMENT);
    tio__sink_dispose(&s);
}

/* ------------------------------------------------------------ sweeps */

/* A failed walk of damaged input: one of the reader's codes, the format, and
 * an offset inside the input. */
static void check_failure(int rc, const tio_error *e, size_t n, uint64_t base) {
    if (rc == TIO_OK) return;
    bool good = (rc == TIO_E_TRUNCATED || rc == TIO_E_BOUNDS || rc == TIO_E_CORRUPT ||
                 rc == TIO_E_UNSUPPORTED || rc == TIO_E_LIMIT) &&
                e->code == rc && e->offset >= (int64_t)base &&
                e->offset <= (int64_t)(base + n) && strcmp(e->format, FMT) == 0;
    char prefix[64];
    snprintf(prefix, sizeof prefix, FMT ": offset %lld: ", (long long)e->offset);
    good = good && strncmp(e->message, prefix, strlen(prefix)) == 0;
    if (!good)
        print_message("%s at %lld (n=%zu): %s\n", tio_status_name(rc), (long long)e->offset, n,
                      e->message);
    assert_true(good);
}

static void test_truncation_sweep(void **state) {
    (void)state;
    tio_error e;
    outbuf full;
    OK(write_mem(emit_all, NULL, &full, &e));
    OK(walk_bytes(full.p, full.n, 0, 8, false, &e));
    size_t clean = 0;
    for (size_t n = 0; n < full.n; n++) {
        outbuf o = from_bytes(full.p, n);
        for (int greedy = 0; greedy < 2; greedy++) {
            int rc = walk_bytes(o.p, n, 77, 8, greedy != 0, &e);
            /* a cut top-level field: always TRUNCATED, at or before the cut */
            if (rc != TIO_OK && !greedy) {
                if (rc != TIO_E_TRUNCATED) print_message("n=%zu: %s\n", n, e.message);
                assert_int_equal(rc, TIO_E_TRUNCATED);
            }
            check_failure(rc, &e, n, 77);
            if (rc == TIO_OK && !greedy) clean++;
        }
        free(o.p);
    }
    /* the prefixes ending on a top-level field boundary (and n = 0) */
    tio_pb_reader r;
    tio_pb_field f;
    size_t fields = 0;
    tio__pb_init(&r, full.p, full.n, 0, FMT, 8);
    while (!tio__pb_done(&r)) {
        OK(tio__pb_next(&r, &f, &e));
        fields++;
    }
    assert_int_equal(clean, fields); /* n = 0 .. all but the last field */
    free(full.p);
}

static void test_bitflip_sweep(void **state) {
    (void)state;
    tio_error e;
    outbuf full;
    OK(write_mem(emit_all, NULL, &full, &e));
    size_t ok = 0, failed = 0;
    for (size_t i = 0; i < full.n; i++) {
        for (int bit = 0; bit < 8; bit++) {
            full.p[i] ^= (uint8_t)(1u << bit);
            for (int greedy = 0; greedy < 2; greedy++) {
                int rc = walk_bytes(full.p, full.n, 0, 8, greedy != 0, &e);
                check_failure(rc, &e, full.n, 0);
                if (rc == TIO_OK) ok++;
                else failed++;
            }
            full.p[i] ^= (uint8_t)(1u << bit);
        }
    }
    print_message("bit flips: %zu walks clean, %zu failed\n", ok, failed);
    assert_true(failed > 0 && ok > 0);
    OK(walk_bytes(full.p, full.n, 0, 8, false, &e)); /* restored */
    free(full.p);
}

/* Random short inputs, biased toward protobuf-looking bytes. */
static void test_random_bytes(void **state) {
    (void)state;
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    static const uint8_t common[] = {0x08, 0x0A, 0x0D, 0x09, 0x72, 0x52, 0x62, 0x6A,
                                     0x80, 0xFF, 0x00, 0x01, 0x02, 0x03, 0x7F, 0x0B};
    for (int iter = 0; iter < 200000; iter++) {
        size_t n = (size_t)(tvec_rand(&seed) % 40);
        uint8_t *p = malloc(n ? n : 1);
        assert_non_null(p);
        for (size_t i = 0; i < n; i++) {
            uint64_t x = tvec_rand(&seed);
            p[i] = (x & 1) ? common[(x >> 1) % sizeof common] : (uint8_t)(x >> 8);
        }
        tio_error e;
        int rc = walk_bytes(p, n, 3, 6, (iter & 1) != 0, &e);
        check_failure(rc, &e, n, 3);
        free(p);
    }
}

/* ------------------------------------------- python3-onnx differential */

static const char *python(void) {
    return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
}

/* Runs tests/protobuf/onnx_model.py with `args`; returns its exit status, or
 * skips when python3-onnx is not importable. */
static int run_script(const char *args) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s -c 'import onnx' 2>/dev/null", python());
    if (system(cmd) != 0) {
        print_message("python3-onnx not installed: skipped\n");
        skip();
    }
    snprintf(cmd, sizeof cmd, "%s '%s/../protobuf/onnx_model.py' %s", python(),
             TIO_TEST_VECTORS, args);
    return system(cmd);
}

/* Facts about a ModelProto, read with the wire reader, as text lines in the
 * form the script prints. onnx.proto field numbers used: ModelProto
 * ir_version 1, producer_name 2, graph 7, opset_import 8; OperatorSetIdProto
 * domain 1, version 2; GraphProto node 1, initializer 5; NodeProto op_type 4,
 * attribute 5; AttributeProto name 1, i 3, ints 8; TensorProto dims 1,
 * data_type 2, name 8, raw_data 9. */
typedef struct facts {
    char *out;
    size_t cap, used;
    char domain[64]; /* of the opset_import being read */
} facts;

typedef void (*field_fn)(facts *x, const tio_pb_reader *r, const tio_pb_field *f);

static void add(facts *x, const char *fmt, ...) TIO_PRINTF(2, 3);
static void add(facts *x, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(x->out + x->used, x->cap - x->used, fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < x->cap - x->used);
    x->used += (size_t)n;
}

static void add_str(facts *x, const char *label, const tio_pb_reader *r,
                    const tio_pb_field *f) {
    tio_error e;
    tio_error_clear(&e);
    OK(tio__pb_expect(r, f, TIO_PB_LEN, label, &e));
    add(x, "%s %.*s\n", label, (int)f->u, (const char *)tio__pb_bytes(r, f));
}

/* A repeated int64, packed or not (python writes proto2's unpacked form). */
static void add_ints(facts *x, const char *label, const tio_pb_reader *r,
                     const tio_pb_field *f) {
    uint64_t v[16];
    size_t c = read_packed(r, f, TIO_PB_VARINT, v, 16);
    for (size_t i = 0; i < c; i++) add(x, "%s %lld\n", label, (long long)v[i]);
}

/* Calls fn on every field of the message in f (or of r itself when f is
 * NULL). */
static void each_field(facts *x, const tio_pb_reader *r, const tio_pb_field *f,
                       const char *name, field_fn fn) {
    tio_error e;
    tio_error_clear(&e);
    tio_pb_reader m = *r;
    if (f) OK(tio__pb_sub(r, f, name, &m, &e));
    while (!tio__pb_done(&m)) {
        tio_pb_field g;
        OK(tio__pb_next(&m, &g, &e));
        fn(x, &m, &g);
    }
}

static void attr_field(facts *x, const tio_pb_reader *r, const tio_pb_field *f) {
    if (f->number == 1) add_str(x, "attr", r, f);
    if (f->number == 3) add(x, "i %lld\n", (long long)tio__pb_int64(f));
    if (f->number == 8) add_ints(x, "ints", r, f);
}

static void node_field(facts *x, const tio_pb_reader *r, const tio_pb_field *f) {
    if (f->number == 4) add_str(x, "node", r, f);
    if (f->number == 5) each_field(x, r, f, "attribute", attr_field);
}

static void tensor_field(facts *x, const tio_pb_reader *r, const tio_pb_field *f) {
    if (f->number == 1) add_ints(x, "dim", r, f);
    if (f->number == 2) add(x, "data_type %d\n", tio__pb_int32(f));
    if (f->number == 8) add_str(x, "initializer", r, f);
    if (f->number == 9) {
        char hex[65];
        tvec_sha256_hex(tio__pb_bytes(r, f), (size_t)f->u, hex);
        add(x, "raw_data %llu %s\n", (unsigned long long)f->u, hex);
    }
}

static void graph_field(facts *x, const tio_pb_reader *r, const tio_pb_field *f) {
    if (f->number == 1) each_field(x, r, f, "node", node_field);
    if (f->number == 5) each_field(x, r, f, "initializer", tensor_field);
}

static void opset_field(facts *x, const tio_pb_reader *r, const tio_pb_field *f) {
    if (f->number == 1)
        snprintf(x->domain, sizeof x->domain, "%.*s", (int)f->u,
                 (const char *)tio__pb_bytes(r, f));
    if (f->number == 2) add(x, "opset %s %lld\n", x->domain, (long long)tio__pb_int64(f));
}

static void model_field(facts *x, const tio_pb_reader *r, const tio_pb_field *f) {
    if (f->number == 1) add(x, "ir_version %lld\n", (long long)tio__pb_int64(f));
    if (f->number == 2) add_str(x, "producer_name", r, f);
    if (f->number == 7) each_field(x, r, f, "graph", graph_field);
    if (f->number == 8) {
        x->domain[0] = 0; /* domain (1) comes before version (2) on the wire */
        each_field(x, r, f, "opset_import", opset_field);
    }
}

static void model_facts(const uint8_t *buf, size_t len, char *out, size_t cap) {
    facts x = {out, cap, 0, ""};
    out[0] = 0;
    tio_pb_reader m;
    tio__pb_init(&m, buf, len, 0, "onnx", 32);
    each_field(&x, &m, NULL, NULL, model_field);
}

/* build/tests/<name> */
static void scratch(char *out, size_t cap, const char *name) {
    snprintf(out, cap, "%s/tests/%s", TIO_BUILD_DIR, name);
}

/* The facts the wire reader finds in buf must be those in facts_path (what
 * python3-onnx found). Returns them (the caller frees). */
static char *same_facts(const uint8_t *buf, size_t len, const char *facts_path) {
    char *got = malloc(1 << 16);
    assert_non_null(got);
    model_facts(buf, len, got, 1 << 16);
    uint8_t *want = NULL;
    size_t n = 0;
    assert_int_equal(tvec_read(facts_path, &want, &n), 0);
    if (strlen(got) != n || memcmp(got, want, n) != 0)
        print_message("wire reader:\n%s\npython:\n%.*s\n", got, (int)n, (const char *)want);
    assert_int_equal(strlen(got), n);
    assert_memory_equal(got, want, n);
    free(want);
    return got;
}

/* The model the script builds (its facts in facts_path). */
static uint8_t *python_model(size_t *len, char *facts_path, size_t cap) {
    char path[1024], args[2200];
    scratch(path, sizeof path, "pb_model.onnx");
    scratch(facts_path, cap, "pb_model.txt");
    snprintf(args, sizeof args, "make '%s' '%s'", path, facts_path);
    assert_int_equal(run_script(args), 0);
    uint8_t *buf = NULL;
    assert_int_equal(tvec_read(path, &buf, len), 0);
    return buf;
}

/* The script builds a model with onnx.helper and prints its facts as onnx
 * parsed them; the wire reader must find the same facts in the bytes. */
static void test_onnx_python_model(void **state) {
    (void)state;
    char facts_path[1024];
    size_t len = 0;
    uint8_t *buf = python_model(&len, facts_path, sizeof facts_path);
    char *got = same_facts(buf, len, facts_path);
    assert_non_null(strstr(got, "node Conv\n"));
    free(got);
    free(buf);
}

/* A ModelProto written with the wire writer: python3-onnx parses it and prints
 * the facts the wire reader finds. */
static int emit_model(tio_pb_writer *w, void *vctx, tio_error *e) {
    (void)vctx;
    static const int64_t dims[] = {2, 3};
    static const float weights[] = {1, 2, 3, 4, 5, 6};
    static const int64_t perm[] = {1, 0};
    TRY(tio__pb_put_int64(w, 1, 8, e)); /* ir_version */
    TRY(tio__pb_put_string(w, 2, "tensio-pb", e));
    TRY(tio__pb_begin(w, 7, e)); /* graph */
    TRY(tio__pb_begin(w, 1, e)); /* node */
    TRY(tio__pb_put_string(w, 1, "w", e));
    TRY(tio__pb_put_string(w, 2, "y", e));
    TRY(tio__pb_put_string(w, 4, "Transpose", e));
    TRY(tio__pb_begin(w, 5, e)); /* attribute */
    TRY(tio__pb_put_string(w, 1, "perm", e));
    TRY(tio__pb_put_int64(w, 20, 7, e)); /* type INTS */
    TRY(tio__pb_put_packed_i64(w, 8, perm, 2, e));
    TRY(tio__pb_end(w, e));
    TRY(tio__pb_end(w, e));
    TRY(tio__pb_put_string(w, 2, "g", e));
    TRY(tio__pb_begin(w, 5, e)); /* initializer */
    TRY(tio__pb_put_packed_i64(w, 1, dims, 2, e));
    TRY(tio__pb_put_int64(w, 2, 1, e)); /* FLOAT */
    TRY(tio__pb_put_string(w, 8, "w", e));
    TRY(tio__pb_put_len(w, 9, weights, sizeof weights, true, e));
    TRY(tio__pb_end(w, e));
    TRY(tio__pb_end(w, e));
    TRY(tio__pb_begin(w, 8, e)); /* opset_import */
    TRY(tio__pb_put_string(w, 1, "", e));
    TRY(tio__pb_put_int64(w, 2, 13, e));
    TRY(tio__pb_end(w, e));
    return TIO_OK;
}

static void test_onnx_python_reads_ours(void **state) {
    (void)state;
    tio_error e;
    outbuf o;
    OK(write_mem(emit_model, NULL, &o, &e));
    char path[1024], facts_path[1024], args[2200];
    scratch(path, sizeof path, "pb_written.onnx");
    scratch(facts_path, sizeof facts_path, "pb_written.txt");
    assert_int_equal(tvec_write(path, o.p, o.n), 0);
    snprintf(args, sizeof args, "facts '%s' '%s'", path, facts_path);
    assert_int_equal(run_script(args), 0);
    char *got = same_facts(o.p, o.n, facts_path);
    assert_non_null(strstr(got, "node Transpose\nattr perm\nints 1\nints 0\n"));
    free(got);
    free(o.p);
}

/* ------------------------------------------- schemas and the verifier */

/* "<Message>.<field> <number> <type> <opt|rep> <packed|-> <message|->" */
static void field_line(const tio_pb_msgdesc *m, const tio_pb_fielddesc *d, char *out,
                       size_t cap) {
    snprintf(out, cap, "%s.%s %lu %u %s %s %s", m->name, d->name, (unsigned long)d->number,
             d->type, d->repeated ? "rep" : "opt", d->packed ? "packed" : "-",
             d->msg ? d->msg->name : "-");
}

/* Field numbers ascend (tio__pb_field_desc searches them), names and numbers
 * are unique, every referenced message is in the list, packing only on
 * repeated scalars; lookups find every field and nothing between. */
static void test_onnx_tables(void **state) {
    (void)state;
    size_t fields = 0;
    for (size_t i = 0; i < tio__onnx_message_count; i++) {
        const tio_pb_msgdesc *m = tio__onnx_messages[i];
        for (size_t j = 0; j < tio__onnx_message_count; j++)
            if (j != i) assert_true(strcmp(m->name, tio__onnx_messages[j]->name) != 0);
        for (size_t k = 0; k < m->nfields; k++) {
            const tio_pb_fielddesc *d = &m->fields[k];
            fields++;
            if (k) assert_true(m->fields[k - 1].number < d->number);
            for (size_t l = 0; l < k; l++) assert_true(strcmp(m->fields[l].name, d->name) != 0);
            assert_ptr_equal(tio__pb_field_desc(m, d->number), d);
            assert_null(tio__pb_field_desc(m, d->number + 1000));
            if (k) {
                for (uint32_t n = m->fields[k - 1].number + 1; n < d->number; n++)
                    assert_null(tio__pb_field_desc(m, n));
            }
            assert_true(d->type >= TIO_PB_T_DOUBLE && d->type <= TIO_PB_T_SINT64 &&
                        d->type != TIO_PB_T_GROUP);
            if (d->packed)
                assert_true(d->repeated && tio__pb_type_wire(d->type) != TIO_PB_LEN);
            if (d->msg) {
                assert_int_equal(d->type, TIO_PB_T_MESSAGE);
                bool listed = false;
                for (size_t j = 0; j < tio__onnx_message_count; j++)
                    listed = listed || tio__onnx_messages[j] == d->msg;
                assert_true(listed);
            }
        }
        assert_null(tio__pb_field_desc(m, 0));
    }
    assert_int_equal(tio__onnx_message_count, 22);
    print_message("onnx.proto tables: %zu messages, %zu fields\n", tio__onnx_message_count,
                  fields);
}

/* Every field python3-onnx's descriptors give (all messages reachable from
 * ModelProto) is in the tables with the same number, type, label, packing and
 * message type; the tables' other fields (newer than the installed onnx)
 * take no number python's message uses. */
static void test_onnx_tables_vs_python(void **state) {
    (void)state;
    char path[1024], args[1200];
    scratch(path, sizeof path, "pb_schema.txt");
    snprintf(args, sizeof args, "schema - '%s'", path);
    assert_int_equal(run_script(args), 0);
    uint8_t *text = NULL;
    size_t n = 0;
    assert_int_equal(tvec_read(path, &text, &n), 0);
    char *py = realloc(text, n + 1);
    assert_non_null(py);
    py[n] = 0;
    size_t matched = 0, python_lines = 0, newer = 0;
    for (char *line = py; *line; python_lines++) {
        char *nl = strchr(line, '\n');
        assert_non_null(nl);
        *nl = 0;
        bool found = false;
        for (size_t i = 0; i < tio__onnx_message_count && !found; i++) {
            const tio_pb_msgdesc *m = tio__onnx_messages[i];
            for (size_t k = 0; k < m->nfields && !found; k++) {
                char mine[256];
                field_line(m, &m->fields[k], mine, sizeof mine);
                found = strcmp(mine, line) == 0;
            }
        }
        if (!found) print_message("python3-onnx has %s; the table does not\n", line);
        assert_true(found);
        matched++;
        *nl = '\n';
        line = nl + 1;
    }
    /* the tables' own fields: either python's, or at a number python's
     * message leaves free */
    for (size_t i = 0; i < tio__onnx_message_count; i++) {
        const tio_pb_msgdesc *m = tio__onnx_messages[i];
        for (size_t k = 0; k < m->nfields; k++) {
            char mine[256], num[300];
            field_line(m, &m->fields[k], mine, sizeof mine);
            if (strstr(py, mine)) continue;
            newer++;
            print_message("newer than the installed onnx: %s\n", mine);
            snprintf(num, sizeof num, "\n%s.", m->name);
            for (const char *p = py; (p = strstr(p, num + (p == py ? 1 : 0))) != NULL; p++) {
                const char *sp = strchr(p + 1, ' ');
                assert_non_null(sp);
                assert_true(strtoul(sp + 1, NULL, 10) != m->fields[k].number);
            }
        }
    }
    print_message("%zu fields as python3-onnx has them, %zu newer\n", matched, newer);
    assert_int_equal(matched, python_lines);
    assert_true(matched > 90);
    free(py);
}

static int verify_onnx(const uint8_t *p, size_t n, uint64_t base, uint32_t depth,
                       tio_error *e) {
    tio_pb_reader r;
    tio__pb_init(&r, p, n, base, "onnx", depth);
    tio_error_clear(e);
    return tio__pb_verify(&r, &tio__onnx_ModelProto, e);
}

/* Subgraphs nested `levels` deep: ModelProto.graph, then per level a node
 * with an If-like GRAPH attribute holding the next graph. */
static int emit_deep_model(tio_pb_writer *w, void *vctx, tio_error *e) {
    int levels = *(const int *)vctx;
    TRY(tio__pb_put_int64(w, 1, 8, e));
    TRY(tio__pb_begin(w, 7, e)); /* graph */
    for (int i = 0; i < levels; i++) {
        TRY(tio__pb_begin(w, 1, e)); /* node */
        TRY(tio__pb_put_string(w, 4, "If", e));
        TRY(tio__pb_begin(w, 5, e)); /* attribute */
        TRY(tio__pb_put_string(w, 1, "then_branch", e));
        TRY(tio__pb_put_int64(w, 20, 5, e)); /* GRAPH */
        TRY(tio__pb_begin(w, 6, e));         /* g */
    }
    TRY(tio__pb_put_string(w, 2, "innermost", e));
    for (int i = 0; i < levels; i++) {
        TRY(tio__pb_end(w, e));
        TRY(tio__pb_end(w, e));
        TRY(tio__pb_end(w, e));
    }
    return tio__pb_end(w, e);
}

static void test_verify(void **state) {
    (void)state;
    tio_error e;
    /* model → graph → node → attribute → graph: 4 levels below the model per
     * subgraph level */
    int levels = 3;
    outbuf o;
    OK(write_mem(emit_deep_model, &levels, &o, &e));
    OK(verify_onnx(o.p, o.n, 0, 2 + 3 * (uint32_t)levels, &e));
    int rc = verify_onnx(o.p, o.n, 0, 1 + 3 * (uint32_t)levels, &e);
    expect_at(rc, &e, TIO_E_LIMIT, -1, "(g): nested message at depth 11 exceeds the depth limit (10)");
    free(o.p);
    levels = 20000; /* no C stack in the verifier */
    OK(write_mem(emit_deep_model, &levels, &o, &e));
    OK(verify_onnx(o.p, o.n, 0, 2 + 3 * (uint32_t)levels, &e));
    free(o.p);

    static const struct {
        const char *name;
        size_t n;
        uint8_t b[16];
        int code;
        int64_t off;
        const char *text;
    } cases[] = {
        {"graph as varint", 2, {0x38, 0x01}, TIO_E_CORRUPT, 0,
         "field 7 (ModelProto.graph): wire type 0 (varint), expected 2 (length-delimited)"},
        {"ir_version as bytes", 3, {0x0A, 0x01, 0x00}, TIO_E_CORRUPT, 0,
         "field 1 (ModelProto.ir_version): wire type 2 (length-delimited), expected 0 "
         "(varint)"},
        {"float_data length 6", 12, {0x3A, 0x0A, 0x2A, 0x08, 0x22, 0x06, 1, 2, 3, 4, 5, 6},
         TIO_E_CORRUPT, 5, "field 4 (float_data): packed fixed32 length 6 is not a multiple of 4"},
        {"dims as fixed64", 14, {0x3A, 0x0C, 0x2A, 0x0A, 0x09, 1, 2, 3, 4, 5, 6, 7, 8, 0},
         TIO_E_CORRUPT, 4,
         "field 1 (TensorProto.dims): wire type 1 (fixed64), expected 0 (varint) or 2 "
         "(packed)"},
        {"packed dims overflow", 16,
         {0x3A, 0x0E, 0x2A, 0x0C, 0x0A, 0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
          0xFF, 0x03},
         TIO_E_CORRUPT, 6, "varint overflows 64 bits"},
        {"opset_import inner varint cut", 4, {0x42, 0x02, 0x10, 0x80}, TIO_E_BOUNDS, 3,
         "field 2: varint value: varint runs past the end of its message at offset 4"},
        {"opset_import cut", 4, {0x42, 0x03, 0x10, 0x80}, TIO_E_TRUNCATED, 1,
         "field 8: length 3 exceeds the 2 bytes left in the data"},
        {"undescribed message", 4, {0xD2, 0x01, 0x01, 0x00}, TIO_E_CORRUPT, 3,
         "field number 0"},
        {"unknown field skipped, then a group", 5, {0xF8, 0x07, 0x05, 0x7B, 0x00}, TIO_E_UNSUPPORTED,
         3, "field 15: wire type 3"},
    };
    for (size_t i = 0; i < N(cases); i++) {
        outbuf c = from_bytes(cases[i].b, cases[i].n);
        rc = verify_onnx(c.p, c.n, 0, 16, &e);
        if (rc != cases[i].code) print_message("case: %s\n", cases[i].name);
        char prefix[64];
        snprintf(prefix, sizeof prefix, "onnx: offset %lld: ", (long long)cases[i].off);
        if (rc != cases[i].code || e.offset != cases[i].off || !strstr(e.message, prefix) ||
            !strstr(e.message, cases[i].text))
            print_message("%s: %s at %lld: %s\n", cases[i].name, tio_status_name(rc),
                          (long long)e.offset, e.message);
        assert_int_equal(rc, cases[i].code);
        assert_int_equal(e.offset, cases[i].off);
        assert_non_null(strstr(e.message, prefix));
        assert_non_null(strstr(e.message, cases[i].text));
        free(c.p);
    }
}

/* The python3-onnx model: verified against the tables, then every prefix and
 * every single-bit flip verified (no crash, a reader code, an offset inside
 * the file). */
static void test_verify_python_model_sweeps(void **state) {
    (void)state;
    char facts_path[1024];
    size_t len = 0;
    uint8_t *buf = python_model(&len, facts_path, sizeof facts_path);
    tio_error e;
    OK(verify_onnx(buf, len, 0, 16, &e));
    size_t clean = 0;
    for (size_t n = 0; n < len; n++) {
        outbuf o = from_bytes(buf, n);
        int rc = verify_onnx(o.p, n, 0, 16, &e);
        if (rc == TIO_OK) clean++;
        else if (rc != TIO_E_TRUNCATED) print_message("n=%zu: %s\n", n, e.message);
        if (rc != TIO_OK) assert_int_equal(rc, TIO_E_TRUNCATED);
        assert_true(rc == TIO_OK || (e.offset >= 0 && (size_t)e.offset <= n));
        free(o.p);
    }
    size_t flips_failed = 0;
    for (size_t i = 0; i < len; i++) {
        for (int bit = 0; bit < 8; bit++) {
            buf[i] ^= (uint8_t)(1u << bit);
            int rc = verify_onnx(buf, len, 0, 16, &e);
            bool good = rc == TIO_OK || rc == TIO_E_TRUNCATED || rc == TIO_E_BOUNDS ||
                        rc == TIO_E_CORRUPT || rc == TIO_E_UNSUPPORTED || rc == TIO_E_LIMIT;
            if (rc != TIO_OK) {
                flips_failed++;
                good = good && e.offset >= 0 && (size_t)e.offset <= len &&
                       strncmp(e.message, "onnx: offset ", 13) == 0;
            }
            if (!good) print_message("flip %zu.%d: %s\n", i, bit, e.message);
            assert_true(good);
            buf[i] ^= (uint8_t)(1u << bit);
        }
    }
    print_message("%zu bytes: %zu prefixes verify, %zu of %zu bit flips refused\n", len, clean,
                  flips_failed, len * 8);
    free(buf);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_exact_bytes),
        cmocka_unit_test(test_varints),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_reader_state),
        cmocka_unit_test(test_depth),
        cmocka_unit_test(test_writer_errors),
        cmocka_unit_test(test_truncation_sweep),
        cmocka_unit_test(test_bitflip_sweep),
        cmocka_unit_test(test_random_bytes),
        cmocka_unit_test(test_onnx_python_model),
        cmocka_unit_test(test_onnx_python_reads_ours),
        cmocka_unit_test(test_onnx_tables),
        cmocka_unit_test(test_onnx_tables_vs_python),
        cmocka_unit_test(test_verify),
        cmocka_unit_test(test_verify_python_model_sweeps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
