/* zio (.zmsg, ZIO TENS messages): golden vectors as files and as frames,
 * byte-identical re-encoding, round trips of what the generic model cannot
 * hold, order/ascend, malformed messages, limits, format options. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tassert.h"
#include "tensio.h"
#include "tvec.h"

#ifndef TIO_BUILD_DIR
#define TIO_BUILD_DIR "/tmp"
#endif

static const tio_save_options save_zio = {.format = "zio"};
static const tio_open_options open_zio = {.format = "zio"};
static const tio_open_options open_zio_strict = {.format = "zio", .flags = TIO_OPEN_STRICT};

/* ------------------------------------------------------------- helpers */

static void tensor_sha_hex(const tio_tensor *t, char out[65]) {
    uint8_t raw[32];
    tio_error err;
    ASSERT_OK(tio_tensor_sha256(t, TIO_HASH_DENSE, raw, &err), err, "sha256");
    tvec_hex(raw, 32, out);
}

/* The CZMQ zmsg_encode buffer of parts (an independent encoder). */
static uint8_t *zmsg_encode(const tio_part *parts, size_t n, size_t *len) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += (parts[i].size < 255 ? 1 : 5) + parts[i].size;
    uint8_t *b = malloc(total ? total : 1);
    assert_non_null(b);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        size_t s = parts[i].size;
        if (s < 255) {
            b[o++] = (uint8_t)s;
        } else {
            b[o++] = 0xFF;
            b[o++] = (uint8_t)(s >> 24);
            b[o++] = (uint8_t)(s >> 16);
            b[o++] = (uint8_t)(s >> 8);
            b[o++] = (uint8_t)s;
        }
        if (s) memcpy(b + o, parts[i].data, s);
        o += s;
    }
    *len = total;
    return b;
}

/* A message built by hand: prefix + label, coordinates, payload parts. */
#define MSG_MAX 8
typedef struct msg {
    tio_part parts[MSG_MAX];
    uint8_t *bufs[MSG_MAX];
    size_t n;
} msg;

static void msg_free(msg *m) {
    for (size_t i = 0; i < m->n; i++) free(m->bufs[i]);
    memset(m, 0, sizeof *m);
}

static void msg_add(msg *m, const void *data, size_t size) {
    assert_true(m->n < MSG_MAX);
    uint8_t *b = malloc(size ? size : 1);
    assert_non_null(b);
    if (size) memcpy(b, data, size);
    m->bufs[m->n] = b;
    m->parts[m->n].data = b;
    m->parts[m->n].size = size;
    m->n++;
}

static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* prefix (8 bytes, e.g. "ZIO0TENS") + label; coordinates; payload parts
 * given as (data, size) pairs, NULL data = a byte pattern. */
static void msg_make(msg *m, const char *prefix8, const char *label, uint64_t origin,
                     uint64_t granule, uint64_t seqno) {
    memset(m, 0, sizeof *m);
    size_t ll = strlen(label);
    uint8_t *p0 = malloc(8 + ll + 1);
    assert_non_null(p0);
    memcpy(p0, prefix8, 8);
    memcpy(p0 + 8, label, ll);
    msg_add(m, p0, 8 + ll);
    free(p0);
    uint8_t c[24];
    put64(c, origin);
    put64(c + 8, granule);
    put64(c + 16, seqno);
    msg_add(m, c, 24);
}

static void msg_payload(msg *m, const void *data, size_t size) {
    if (data) {
        msg_add(m, data, size);
        return;
    }
    uint8_t *b = malloc(size ? size : 1);
    assert_non_null(b);
    for (size_t i = 0; i < size; i++) b[i] = (uint8_t)(i * 7 + 3);
    msg_add(m, b, size);
    free(b);
}

/* Checks that a message's parts equal `want` byte for byte. */
static void assert_parts_equal(const tio_message *m, const tio_part *want, size_t n) {
    assert_int_equal(tio_message_part_count(m), n);
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        tio_part p = tio_message_part(m, i);
        if (p.size != want[i].size)
            fprintf(stderr, "part %zu: %zu bytes, expected %zu\n", i, p.size, want[i].size);
        assert_int_equal(p.size, want[i].size);
        if (p.size && memcmp(p.data, want[i].data, p.size) != 0) {
            fprintf(stderr, "part %zu differs:\n got  %.*s\n want %.*s\n", i, (int)p.size,
                    (const char *)p.data, (int)want[i].size, (const char *)want[i].data);
            fail();
        }
        total += p.size;
    }
    assert_int_equal(tio_message_size(m), total);
}

/* Re-encodes c as zio (message and single buffer) and checks both against
 * the message `want`. */
static void assert_reencodes(const tio_container *c, const msg *want) {
    tio_error err;
    tio_message *m = NULL;
    ASSERT_OK(tio_message_encode(c, &save_zio, &m, &err), err, "message_encode");
    assert_parts_equal(m, want->parts, want->n);
    tio_message_free(m);
    size_t zlen;
    uint8_t *z = zmsg_encode(want->parts, want->n, &zlen);
    void *out = NULL;
    size_t out_size = 0;
    ASSERT_OK(tio_save_memory(c, &save_zio, &out, &out_size, &err), err, "save_memory");
    assert_int_equal(out_size, zlen);
    assert_memory_equal(out, z, zlen);
    tio_free(out);
    free(z);
}

static tio_container *open_msg(const msg *m, const tio_open_options *o) {
    tio_container *c = NULL;
    tio_error err;
    ASSERT_OK(tio_open_parts(m->parts, m->n, o, &c, &err), err, "open_parts");
    return c;
}

static tio_tensor *add(tio_container *c, const char *name, tio_dtype dt, size_t rank,
                       const int64_t *shape, const void *data, size_t nbytes) {
    tio_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.dtype = dt;
    d.rank = rank;
    d.shape = shape;
    d.layout = TIO_LAYOUT_DENSE;
    d.data = data;
    d.nbytes = nbytes;
    tio_tensor *t = NULL;
    tio_error err;
    ASSERT_OK(tio_container_add(c, &d, 0, &t, &err), err, "tio_container_add");
    return t;
}

/* The label of part 0 of an encoded message, NUL-terminated (malloc'ed). */
static char *label_of(const tio_container *c, const tio_save_options *so) {
    tio_message *m = NULL;
    tio_error err;
    ASSERT_OK(tio_message_encode(c, so, &m, &err), err, "message_encode");
    tio_part p = tio_message_part(m, 0);
    assert_true(p.size >= 8);
    char *s = malloc(p.size - 8 + 1);
    assert_non_null(s);
    memcpy(s, (const char *)p.data + 8, p.size - 8);
    s[p.size - 8] = 0;
    tio_message_free(m);
    return s;
}

/* ----------------------------------------------------- 1. golden vectors */

static const struct {
    const char *numpy;
    tio_dtype dtype;
} np_dtypes[] = {
    {"f2", TIO_FLOAT16}, {"f4", TIO_FLOAT32}, {"f8", TIO_FLOAT64}, {"i1", TIO_INT8},
    {"i2", TIO_INT16},   {"i4", TIO_INT32},   {"i8", TIO_INT64},   {"u1", TIO_UINT8},
    {"u2", TIO_UINT16},  {"u4", TIO_UINT32},  {"u8", TIO_UINT64},  {"b1", TIO_BOOL},
};

static tio_dtype dtype_of_numpy(const char *s) {
    for (size_t i = 0; i < sizeof np_dtypes / sizeof np_dtypes[0]; i++)
        if (strcmp(np_dtypes[i].numpy, s) == 0) return np_dtypes[i].dtype;
    fail_msg("unknown numpy code %s", s);
    return TIO_DTYPE_INVALID;
}

static void assert_prop_u64(const tio_container *c, const char *key, json_t *v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)json_integer_value(v));
    const char *got = tio_container_prop_get(c, key);
    assert_non_null(got);
    assert_string_equal(got, buf);
}

/* The container matches the manifest entry (tensors, names, meta, props). */
static void compare_vector(const tio_container *c, json_t *v) {
    json_t *dec = json_object_get(v, "decoded");
    json_t *ts = json_object_get(dec, "tensors");
    assert_string_equal(tio_container_format(c), "zio");
    assert_int_equal(tio_container_count(c), json_array_size(ts));
    assert_int_equal(tio_container_warning_count(c), 0);
    for (size_t i = 0; i < json_array_size(ts); i++) {
        json_t *e = json_array_get(ts, i);
        const tio_tensor *t = tio_container_tensor(c, i);
        assert_int_equal(tio_tensor_dtype(t),
                         dtype_of_numpy(json_string_value(json_object_get(e, "numpy"))));
        json_t *shape = json_object_get(e, "shape");
        assert_int_equal(tio_tensor_rank(t), json_array_size(shape));
        for (size_t d = 0; d < json_array_size(shape); d++)
            assert_int_equal(tio_tensor_shape(t)[d], json_integer_value(json_array_get(shape, d)));
        assert_int_equal(tio_tensor_nbytes(t), json_integer_value(json_object_get(e, "nbytes")));
        char got[65];
        tensor_sha_hex(t, got);
        assert_string_equal(got, json_string_value(json_object_get(e, "sha256")));
        json_t *meta = json_object_get(e, "metadata");
        json_t *name = meta ? json_object_get(meta, "name") : NULL;
        if (name)
            assert_string_equal(tio_tensor_name(t), json_string_value(name));
        else
            assert_null(tio_tensor_name(t));
        assert_int_equal(tio_tensor_meta_count(t), json_object_size(meta) - (name ? 1 : 0));
        const char *key;
        json_t *val;
        json_object_foreach(meta, key, val) {
            if (strcmp(key, "name") == 0) continue;
            assert_non_null(tio_tensor_meta_get(t, key));
            assert_string_equal(tio_tensor_meta_get(t, key), json_string_value(val));
        }
    }
    assert_int_equal(tio_container_meta_count(c), 0);
    char lv[8];
    snprintf(lv, sizeof lv, "%lld", (long long)json_integer_value(json_object_get(v, "level")));
    assert_string_equal(tio_container_prop_get(c, "level"), lv);
    assert_string_equal(tio_container_prop_get(c, "form"),
                        json_string_value(json_object_get(v, "form")));
    assert_prop_u64(c, "origin", json_object_get(v, "origin"));
    assert_prop_u64(c, "granule", json_object_get(v, "granule"));
    assert_prop_u64(c, "seqno", json_object_get(v, "seqno"));
    assert_prop_u64(c, "payload_parts", json_object_get(dec, "npayload"));
    assert_prop_u64(c, "label_bytes", json_object_get(v, "label_length"));
}

static void check_vector(json_t *v) {
    tio_error err;
    const char *name = json_string_value(json_object_get(v, "name"));
    json_t *enc = json_object_get(v, "encoded");
    char rel[512];
    snprintf(rel, sizeof rel, "zio/%s", json_string_value(json_object_get(enc, "file")));
    size_t zlen = 0;
    uint8_t *z = tvec_load(rel, &zlen);
    assert_non_null(z);
    assert_int_equal(zlen, json_integer_value(json_object_get(enc, "size")));
    char sha[65];
    tvec_sha256_hex(z, zlen, sha);
    assert_string_equal(sha, json_string_value(json_object_get(enc, "sha256")));

    /* the .zmsg file, probed by content */
    char *path = tvec_path(rel);
    tio_container *c = NULL;
    ASSERT_OK(tio_open(path, NULL, &c, &err), err, rel);
    compare_vector(c, v);
    /* tensors are views at their payload part's offset */
    for (size_t i = 0; i < tio_container_count(c); i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        int64_t off = tio_tensor_source_offset(t);
        assert_true(off > 0 && (uint64_t)off + tio_tensor_nbytes(t) <= zlen);
        if (tio_tensor_nbytes(t))
            assert_memory_equal((const uint8_t *)z + off, tio_tensor_data(t), tio_tensor_nbytes(t));
    }
    tio_container *cs = NULL;
    ASSERT_OK(tio_open_memory(z, zlen, &open_zio_strict, &cs, &err), err, "strict");
    tio_container_free(cs);

    /* writing it reproduces the file */
    void *out = NULL;
    size_t out_size = 0;
    ASSERT_OK(tio_save_memory(c, &save_zio, &out, &out_size, &err), err, "save_memory");
    assert_int_equal(out_size, zlen);
    assert_memory_equal(out, z, zlen);
    tio_free(out);

    /* the frames */
    json_t *frames = json_object_get(v, "frames");
    size_t nf = json_array_size(frames);
    assert_true(nf >= 2 && nf <= MSG_MAX);
    msg m;
    memset(&m, 0, sizeof m);
    size_t lens[MSG_MAX];
    m.n = tvec_load_frames("zio", frames, m.bufs, lens, MSG_MAX);
    for (size_t k = 0; k < m.n; k++) {
        m.parts[k].data = m.bufs[k];
        m.parts[k].size = lens[k];
    }
    tio_container *cf = open_msg(&m, NULL); /* probed: a first part starting "ZIO" */
    compare_vector(cf, v);
    for (size_t i = 0; i < tio_container_count(cf); i++)
        assert_int_equal(tio_tensor_source_offset(tio_container_tensor(cf, i)), -1);
    tio_message *msg_out = NULL;
    ASSERT_OK(tio_message_encode(cf, &save_zio, &msg_out, &err), err, "message_encode");
    assert_parts_equal(msg_out, m.parts, m.n);
    /* zero copy: the tensor parts are the received frames themselves */
    json_t *ts = json_object_get(json_object_get(v, "decoded"), "tensors");
    for (size_t i = 0; i < json_array_size(ts); i++) {
        size_t part = (size_t)json_integer_value(json_object_get(json_array_get(ts, i), "part"));
        if (m.parts[2 + part].size)
            assert_ptr_equal(tio_message_part(msg_out, 2 + part).data, m.parts[2 + part].data);
    }
    tio_container_free(cf); /* the message keeps the data alive */
    assert_parts_equal(msg_out, m.parts, m.n);
    tio_message_free(msg_out);

    /* the file container as a message, and as one part */
    ASSERT_OK(tio_message_encode(c, &save_zio, &msg_out, &err), err, "message_encode file");
    assert_parts_equal(msg_out, m.parts, m.n);
    tio_message_free(msg_out);
    tio_save_options single = {.format = "zio", .flags = TIO_SAVE_SINGLE_PART};
    ASSERT_OK(tio_message_encode(c, &single, &msg_out, &err), err, "single part");
    tio_part whole = {z, zlen};
    assert_parts_equal(msg_out, &whole, 1);
    tio_message_free(msg_out);
    /* one part holding the .zmsg is decoded as the file encoding */
    ASSERT_OK(tio_open_parts(&whole, 1, NULL, &cf, &err), err, "one-part message");
    compare_vector(cf, v);
    tio_container_free(cf);

    /* through a file named .zmsg */
    char tmpl[] = TIO_BUILD_DIR "/zio_test_XXXXXX";
    char *dir = mkdtemp(tmpl);
    assert_non_null(dir);
    char tpath[1024];
    snprintf(tpath, sizeof tpath, "%s/%s.zmsg", dir, name);
    ASSERT_OK(tio_save(c, tpath, NULL, &err), err, tpath);
    uint8_t *back = NULL;
    size_t back_len = 0;
    assert_int_equal(tvec_read(tpath, &back, &back_len), 0);
    assert_int_equal(back_len, zlen);
    assert_memory_equal(back, z, zlen);
    free(back);
    unlink(tpath);
    rmdir(dir);

    msg_free(&m);
    tio_container_free(c);
    free(path);
    free(z);
}

static void test_vectors(void **state) {
    (void)state;
    json_t *man = tvec_manifest("zio/manifest.json");
    if (!man) skip();
    json_t *vs = json_object_get(man, "vectors");
    assert_true(json_array_size(vs) >= 6);
    for (size_t i = 0; i < json_array_size(vs); i++) check_vector(json_array_get(vs, i));
    fprintf(stderr, "zio: %zu golden vectors read (file and frames) and re-encoded "
                    "byte-identically\n", json_array_size(vs));
    json_decref(man);
}

/* --------------------------------------------------- 2. truncation sweep */

/* Every prefix of a .zmsg: a cut inside a part is TIO_E_TRUNCATED; a cut
 * between parts leaves fewer than 2 parts (TIO_E_TRUNCATED) or tensors whose
 * part is missing (TIO_E_CORRUPT: the encoding has no count to tell). */
static void sweep(const char *name) {
    char rel[256];
    snprintf(rel, sizeof rel, "zio/%s.zmsg", name);
    size_t len = 0;
    uint8_t *bytes = tvec_load(rel, &len);
    if (!bytes) return;
    /* part boundaries by an independent walk */
    size_t bounds[16], nb = 0, pos = 0;
    bounds[nb++] = 0;
    while (pos < len) {
        size_t s = bytes[pos], h = 1;
        if (s == 255) {
            s = ((size_t)bytes[pos + 1] << 24) | ((size_t)bytes[pos + 2] << 16) |
                ((size_t)bytes[pos + 3] << 8) | bytes[pos + 4];
            h = 5;
        }
        pos += h + s;
        assert_true(nb < 16);
        bounds[nb++] = pos;
    }
    assert_int_equal(pos, len);
    for (size_t k = 0; k < len; k++) {
        uint8_t *p = malloc(k ? k : 1); /* exactly sized: ASan catches overreads */
        assert_non_null(p);
        memcpy(p, bytes, k);
        int want = TIO_E_TRUNCATED;
        for (size_t b = 0; b < nb; b++)
            if (bounds[b] == k && b >= 2) want = TIO_E_CORRUPT;
        tio_error err;
        tio_container *c = NULL;
        int rc = tio_open_memory(p, k, &open_zio, &c, &err);
        if (rc != want)
            fprintf(stderr, "%s prefix %zu: %s (%s), expected %s\n", name, k,
                    tio_status_name(rc), rc ? err.message : "", tio_status_name(want));
        assert_int_equal(rc, want);
        assert_null(c);
        assert_string_equal(err.format, "zio");
        assert_true(err.offset >= 0);
        assert_non_null(strstr(err.message, "zio: offset "));
        free(p);
    }
    tio_container *c = NULL;
    tio_error err;
    ASSERT_OK(tio_open_memory(bytes, len, &open_zio, &c, &err), err, "whole");
    tio_container_free(c);
    free(bytes);
}

static void test_truncation(void **state) {
    (void)state;
    sweep("tens_nopart_default");
    sweep("tens_zero_size_last");
    sweep("tens_u8_1d_255");
}

/* Single-buffer framing errors. */
static void test_zmsg_framing(void **state) {
    (void)state;
    tio_error err;
    tio_container *c = NULL;
    /* 0xFF and too few bytes for the big-endian size */
    static const uint8_t short_big[3] = {0xFF, 0x00, 0x00};
    assert_int_equal(tio_open_memory(short_big, 3, &open_zio, &c, &err), TIO_E_TRUNCATED);
    assert_non_null(strstr(err.message, "inside its size field"));
    assert_int_equal(err.offset, 0);
    /* 0xFF and a size far beyond the data */
    static const uint8_t huge_big[9] = {0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 'Z', 'I', 'O', '0'};
    assert_int_equal(tio_open_memory(huge_big, 9, &open_zio, &c, &err), TIO_E_TRUNCATED);
    assert_non_null(strstr(err.message, "runs past the end"));
    assert_null(tio_format_probe(huge_big, 9));
    /* a one-byte size beyond the data */
    static const uint8_t short_small[6] = {200, 'Z', 'I', 'O', '0', 'T'};
    assert_int_equal(tio_open_memory(short_small, 6, &open_zio, &c, &err), TIO_E_TRUNCATED);
    /* empty input: no parts */
    assert_int_equal(tio_open_memory(short_small, 0, &open_zio, &c, &err), TIO_E_TRUNCATED);
    assert_non_null(strstr(err.message, "0 parts"));

    /* The coordinates in the 5-byte form (a size < 255 that zmsg_encode
     * writes in one byte): read, with a finding; re-encoding is canonical. */
    msg m;
    msg_make(&m, "ZIO0TENS", "{\"TENS\":{\"tensors\":[{\"dtype\":\"u\",\"part\":0,\"shape\":[2],\"word\":1}]}}", 1, 2, 3);
    msg_payload(&m, NULL, 2);
    size_t zl;
    uint8_t *z = zmsg_encode(m.parts, m.n, &zl);
    size_t p1 = 1 + m.parts[0].size; /* offset of part 1's size byte */
    uint8_t *nc = malloc(zl + 4);
    assert_non_null(nc);
    memcpy(nc, z, p1);
    nc[p1] = 0xFF;
    nc[p1 + 1] = nc[p1 + 2] = nc[p1 + 3] = 0;
    nc[p1 + 4] = 24;
    memcpy(nc + p1 + 5, z + p1 + 1, zl - p1 - 1);
    ASSERT_OK(tio_open_memory(nc, zl + 4, NULL, &c, &err), err, "non-canonical size");
    assert_int_equal(tio_container_count(c), 1);
    assert_int_equal(tio_container_warning_count(c), 1);
    const tio_error *w = tio_container_warning(c, 0);
    assert_int_equal(w->code, TIO_E_INVALID);
    assert_int_equal(w->offset, (int64_t)p1);
    assert_non_null(strstr(w->message, "5-byte form"));
    void *out;
    size_t outn;
    ASSERT_OK(tio_save_memory(c, &save_zio, &out, &outn, &err), err, "save");
    assert_int_equal(outn, zl);
    assert_memory_equal(out, z, zl);
    tio_free(out);
    tio_container_free(c);
    assert_int_equal(tio_open_memory(nc, zl + 4, &open_zio_strict, &c, &err), TIO_E_INVALID);
    assert_null(c);
    free(nc);
    free(z);
    msg_free(&m);
}

/* ------------------------------------------------------- 3. malformed */

#define T3 "{\"dtype\":\"f\",\"part\":0,\"shape\":[3],\"word\":4"
#define LBL(entries) "{\"TENS\":{\"tensors\":[" entries "]}}"

typedef struct mrow {
    const char *what;
    const char *prefix; /* NULL = "ZIO0TENS" */
    size_t prefix_len;  /* with prefix: its length; the label follows */
    const char *label;
    int coord;          /* bytes of part 1; 0 = 24 */
    size_t keep;        /* keep only the first parts (0 = all) */
    size_t npay;
    size_t psize[3];
    int code;
    const char *needle; /* in the message */
} mrow;

static const mrow mrows[] = {
    /* framing and prefix */
    {"fewer than 2 parts", NULL, 0, LBL(T3 "}"), 0, 1, 1, {12}, TIO_E_TRUNCATED, "expected at least 2"},
    {"prefix of 6 bytes", "ZIO0TE", 6, "", 0, 0, 0, {0}, TIO_E_CORRUPT, "expected at least 8"},
    {"prefix of 2 bytes", "ZI", 2, "", 0, 0, 0, {0}, TIO_E_CORRUPT, "expected at least 8"},
    {"empty prefix", "", 0, "", 0, 0, 0, {0}, TIO_E_CORRUPT, "is 0 bytes"},
    {"no ZIO", "ZIP0TENS", 8, "{}", 0, 0, 0, {0}, TIO_E_MAGIC, "expected \"ZIO\""},
    {"lowercase zio", "zio0TENS", 8, "{}", 0, 0, 0, {0}, TIO_E_MAGIC, "expected \"ZIO\""},
    {"level 9", "ZIO9TENS", 8, "{}", 0, 0, 0, {0}, TIO_E_CORRUPT, "expected '0'..'8'"},
    {"level x", "ZIOxTENS", 8, "{}", 0, 0, 0, {0}, TIO_E_CORRUPT, "level \"x\""},
    {"coordinates of 23 bytes", NULL, 0, "{}", 23, 0, 0, {0}, TIO_E_CORRUPT, "part 1 (coordinates) is 23 bytes"},
    {"coordinates of 25 bytes", NULL, 0, "{}", 25, 0, 0, {0}, TIO_E_CORRUPT, "expected 24"},
    {"empty coordinates", NULL, 0, "{}", -1, 0, 0, {0}, TIO_E_CORRUPT, "is 0 bytes"},
    /* the label */
    {"label not JSON", NULL, 0, "{\"TENS\":", 0, 0, 0, {0}, TIO_E_CORRUPT, "not valid JSON"},
    {"label with trailing text", NULL, 0, "{} x", 0, 0, 0, {0}, TIO_E_CORRUPT, "not valid JSON"},
    {"label an array", NULL, 0, "[1,2]", 0, 0, 0, {0}, TIO_E_CORRUPT, "the label is an array, expected a JSON object"},
    {"label a number", NULL, 0, "5", 0, 0, 0, {0}, TIO_E_CORRUPT, "expected a JSON object"},
    {"label a string", NULL, 0, "\"TENS\"", 0, 0, 0, {0}, TIO_E_CORRUPT, "expected a JSON object"},
    {"label not UTF-8", NULL, 0, "{\"a\":\"\xff\"}", 0, 0, 0, {0}, TIO_E_CORRUPT, "not valid JSON"},
    {"duplicate label key", NULL, 0, "{\"TENS\":{\"tensors\":[]},\"TENS\":{}}", 0, 0, 0, {0}, TIO_E_CORRUPT, "duplicate key"},
    {"duplicate entry key", NULL, 0, LBL(T3 ",\"word\":4}"), 0, 0, 1, {12}, TIO_E_CORRUPT, "duplicate key"},
    {"integer beyond int64", NULL, 0, "{\"x\":18446744073709551616}", 0, 0, 0, {0}, TIO_E_UNSUPPORTED, "int64"},
    {"NUL in a string", NULL, 0, "{\"x\":\"a\\u0000b\"}", 0, 0, 0, {0}, TIO_E_UNSUPPORTED, "\\u0000"},
    {"TENS an array", NULL, 0, "{\"TENS\":[]}", 0, 0, 0, {0}, TIO_E_CORRUPT, "\"TENS\" is an array, expected an object"},
    {"TENS a string", NULL, 0, "{\"TENS\":\"x\"}", 0, 0, 0, {0}, TIO_E_CORRUPT, "\"TENS\" is a string"},
    {"tensors an object", NULL, 0, "{\"TENS\":{\"tensors\":{}}}", 0, 0, 0, {0}, TIO_E_CORRUPT, "TENS.tensors is an object, expected an array"},
    {"TENS.metadata an array", NULL, 0, "{\"TENS\":{\"metadata\":[],\"tensors\":[]}}", 0, 0, 0, {0}, TIO_E_CORRUPT, "TENS.metadata is an array"},
    {"more tensors than parts", NULL, 0, LBL("{},{}"), 0, 0, 1, {1}, TIO_E_CORRUPT, "2 entries but the message only 1 payload parts"},
    /* tensor entries */
    {"entry not an object", NULL, 0, LBL("5"), 0, 0, 1, {1}, TIO_E_CORRUPT, "tensor 0: the entry is an integer"},
    {"no shape", NULL, 0, LBL("{\"dtype\":\"f\",\"word\":4}"), 0, 0, 1, {12}, TIO_E_CORRUPT, "no \"shape\""},
    {"shape a string", NULL, 0, LBL("{\"dtype\":\"f\",\"shape\":\"3\",\"word\":4}"), 0, 0, 1, {12}, TIO_E_CORRUPT, "\"shape\" is a string"},
    {"shape entry real", NULL, 0, LBL("{\"dtype\":\"f\",\"shape\":[3.0],\"word\":4}"), 0, 0, 1, {12}, TIO_E_CORRUPT, "entry 0 is a real number"},
    {"negative dim", NULL, 0, LBL("{\"dtype\":\"f\",\"shape\":[2,-3],\"word\":4}"), 0, 0, 1, {12}, TIO_E_CORRUPT, "dim 1 is -3"},
    {"no word", NULL, 0, LBL("{\"dtype\":\"f\",\"shape\":[3]}"), 0, 0, 1, {12}, TIO_E_CORRUPT, "no \"word\""},
    {"word a string", NULL, 0, LBL("{\"dtype\":\"f\",\"shape\":[3],\"word\":\"4\"}"), 0, 0, 1, {12}, TIO_E_CORRUPT, "\"word\" is a string"},
    {"no dtype", NULL, 0, LBL("{\"shape\":[3],\"word\":4}"), 0, 0, 1, {12}, TIO_E_CORRUPT, "no \"dtype\""},
    {"dtype an integer", NULL, 0, LBL("{\"dtype\":4,\"shape\":[3],\"word\":4}"), 0, 0, 1, {12}, TIO_E_CORRUPT, "\"dtype\" is an integer"},
    {"complex", NULL, 0, LBL("{\"dtype\":\"c\",\"shape\":[3],\"word\":32}"), 0, 0, 1, {24}, TIO_E_DTYPE, "complex"},
    {"f3", NULL, 0, LBL("{\"dtype\":\"f\",\"shape\":[3],\"word\":3}"), 0, 0, 1, {9}, TIO_E_DTYPE, "kind \"f\" with word 3"},
    {"long double", NULL, 0, LBL("{\"dtype\":\"f\",\"shape\":[3],\"word\":16}"), 0, 0, 1, {48}, TIO_E_DTYPE, "long double"},
    {"unknown kind ?", NULL, 0, LBL("{\"dtype\":\"?\",\"shape\":[3],\"word\":1}"), 0, 0, 1, {3}, TIO_E_DTYPE, "'?'"},
    {"numpy code as kind", NULL, 0, LBL("{\"dtype\":\"f4\",\"shape\":[3],\"word\":4}"), 0, 0, 1, {12}, TIO_E_DTYPE, "one character"},
    {"bool of 2 bytes", NULL, 0, LBL("{\"dtype\":\"b\",\"shape\":[3],\"word\":2}"), 0, 0, 1, {6}, TIO_E_DTYPE, "kind \"b\" with word 2"},
    {"part out of range", NULL, 0, LBL("{\"dtype\":\"f\",\"part\":1,\"shape\":[3],\"word\":4}"), 0, 0, 1, {12}, TIO_E_CORRUPT, "part 1 is out of range"},
    {"negative part", NULL, 0, LBL("{\"dtype\":\"f\",\"part\":-1,\"shape\":[3],\"word\":4}"), 0, 0, 1, {12}, TIO_E_CORRUPT, "part -1 is out of range"},
    {"part a string", NULL, 0, LBL("{\"dtype\":\"f\",\"part\":\"0\",\"shape\":[3],\"word\":4}"), 0, 0, 1, {12}, TIO_E_CORRUPT, "\"part\" is a string"},
    {"shared part", NULL, 0, LBL(T3 "}," T3 "}"), 0, 0, 2, {12, 12}, TIO_E_CORRUPT, "tensor 1: payload part 0 is already tensor 0's"},
    {"default part shared", NULL, 0, LBL("{\"dtype\":\"f\",\"part\":1,\"shape\":[3],\"word\":4},{\"dtype\":\"f\",\"shape\":[3],\"word\":4}"), 0, 0, 2, {12, 12}, TIO_E_CORRUPT, "already tensor 0's"},
    {"part too short", NULL, 0, LBL(T3 "}"), 0, 0, 1, {8}, TIO_E_CORRUPT, "(expected 12, found 8)"},
    {"part too long", NULL, 0, LBL(T3 "}"), 0, 0, 1, {16}, TIO_E_CORRUPT, "(expected 12, found 16)"},
    {"element count overflow", NULL, 0, LBL("{\"dtype\":\"u\",\"shape\":[4294967296,4294967296],\"word\":1}"), 0, 0, 1, {1}, TIO_E_OVERFLOW, "element count"},
    {"byte size overflow", NULL, 0, LBL("{\"dtype\":\"f\",\"shape\":[2305843009213693952],\"word\":8}"), 0, 0, 1, {8}, TIO_E_OVERFLOW, "byte size"},
    {"packing sparse", NULL, 0, LBL(T3 ",\"packing\":\"sparse\"}"), 0, 0, 1, {12}, TIO_E_UNSUPPORTED, "packing \"sparse\""},
    {"packing a number", NULL, 0, LBL(T3 ",\"packing\":5}"), 0, 0, 1, {12}, TIO_E_UNSUPPORTED, "packing an integer"},
    {"pointer", NULL, 0, LBL(T3 ",\"pointer\":140737488355328}"), 0, 0, 1, {12}, TIO_E_UNSUPPORTED, "\"pointer\""},
    {"order repeated", NULL, 0, LBL("{\"dtype\":\"i\",\"order\":[0,0],\"shape\":[2,3],\"word\":4}"), 0, 0, 1, {24}, TIO_E_CORRUPT, "entry 1 is repeated"},
    {"order too short", NULL, 0, LBL("{\"dtype\":\"i\",\"order\":[0],\"shape\":[2,3],\"word\":4}"), 0, 0, 1, {24}, TIO_E_CORRUPT, "with 1 entries, expected an array of 2"},
    {"order out of range", NULL, 0, LBL("{\"dtype\":\"i\",\"order\":[0,2],\"shape\":[2,3],\"word\":4}"), 0, 0, 1, {24}, TIO_E_CORRUPT, "out of range"},
    {"order a string", NULL, 0, LBL("{\"dtype\":\"i\",\"order\":\"F\",\"shape\":[2,3],\"word\":4}"), 0, 0, 1, {24}, TIO_E_CORRUPT, "\"order\" is a string"},
    {"ascend too short", NULL, 0, LBL("{\"ascend\":[true],\"dtype\":\"i\",\"shape\":[2,3],\"word\":4}"), 0, 0, 1, {24}, TIO_E_CORRUPT, "\"ascend\" is an array with 1 entries"},
    {"ascend integers", NULL, 0, LBL("{\"ascend\":[1,0],\"dtype\":\"i\",\"shape\":[2,3],\"word\":4}"), 0, 0, 1, {24}, TIO_E_CORRUPT, "\"ascend\" entry 0 is an integer"},
    {"tensor metadata a string", NULL, 0, LBL(T3 ",\"metadata\":\"x\"}"), 0, 0, 1, {12}, TIO_E_CORRUPT, "\"metadata\" is a string"},
};
#define N_MROWS (sizeof mrows / sizeof mrows[0])

static void build_row(const mrow *r, msg *m) {
    memset(m, 0, sizeof *m);
    const char *pre = r->prefix ? r->prefix : "ZIO0TENS";
    size_t pl = r->prefix ? r->prefix_len : 8, ll = strlen(r->label);
    uint8_t *p0 = malloc(pl + ll + 1);
    assert_non_null(p0);
    memcpy(p0, pre, pl);
    memcpy(p0 + pl, r->label, ll);
    msg_add(m, p0, pl + ll);
    free(p0);
    uint8_t c[32] = {0};
    msg_add(m, c, r->coord < 0 ? 0 : r->coord ? (size_t)r->coord : 24);
    for (size_t k = 0; k < r->npay; k++) msg_payload(m, NULL, r->psize[k]);
    if (r->keep)
        while (m->n > r->keep) free(m->bufs[--m->n]);
}

/* Opens as frames and as a .zmsg; both must fail with the row's code. */
static void check_reject(const char *what, const msg *m, const tio_open_options *o, int code,
                         const char *needle) {
    tio_error err;
    tio_container *c = NULL;
    int rc = tio_open_parts(m->parts, m->n, o, &c, &err);
    if (rc != code || (needle && !strstr(err.message, needle)))
        fprintf(stderr, "%s (frames): %s: %s\n", what, tio_status_name(rc), err.message);
    assert_int_equal(rc, code);
    assert_null(c);
    assert_int_equal(err.code, code);
    assert_string_equal(err.format, "zio");
    assert_int_equal(err.offset, -1);
    assert_true(strncmp(err.message, "zio: ", 5) == 0);
    assert_null(strstr(err.message, "offset"));
    if (needle) assert_non_null(strstr(err.message, needle));

    size_t zl;
    uint8_t *z = zmsg_encode(m->parts, m->n, &zl);
    rc = tio_open_memory(z, zl, o, &c, &err);
    if (rc != code || (needle && !strstr(err.message, needle)))
        fprintf(stderr, "%s (zmsg): %s: %s\n", what, tio_status_name(rc), err.message);
    assert_int_equal(rc, code);
    assert_null(c);
    assert_string_equal(err.format, "zio");
    assert_true(err.offset >= 0 && (size_t)err.offset <= zl);
    assert_true(strncmp(err.message, "zio: offset ", 12) == 0);
    if (needle) assert_non_null(strstr(err.message, needle));
    free(z);
}

static void test_malformed(void **state) {
    (void)state;
    for (size_t k = 0; k < N_MROWS; k++) {
        msg m;
        build_row(&mrows[k], &m);
        check_reject(mrows[k].what, &m, &open_zio, mrows[k].code, mrows[k].needle);
        msg_free(&m);
    }
    /* the rows' framing is right: the same message, fixed, opens */
    msg m;
    mrow good = {"good", NULL, 0, LBL(T3 "}"), 0, 0, 1, {12}, 0, NULL};
    build_row(&good, &m);
    tio_container *c = open_msg(&m, &open_zio);
    assert_int_equal(tio_container_count(c), 1);
    tio_container_free(c);
    msg_free(&m);
    fprintf(stderr, "zio: %zu malformed messages refused with their codes\n", N_MROWS);
}

/* Limits: rank, tensor count, label size, nesting, names, parts. */
static void test_limits(void **state) {
    (void)state;
    msg m;
    tio_limits lim = {0};
    tio_open_options o = {.format = "zio", .limits = &lim};

    /* rank 65 > the default 64; rank 3 > max_rank 2 */
    char label[1024];
    size_t n = (size_t)snprintf(label, sizeof label, "{\"TENS\":{\"tensors\":[{\"dtype\":\"u\",\"shape\":[");
    for (int d = 0; d < 65; d++) n += (size_t)snprintf(label + n, sizeof label - n, "%s1", d ? "," : "");
    snprintf(label + n, sizeof label - n, "],\"word\":1}]}}");
    msg_make(&m, "ZIO0TENS", label, 0, 0, 0);
    msg_payload(&m, NULL, 1);
    check_reject("rank 65", &m, &open_zio, TIO_E_LIMIT, "rank 65 exceeds the rank limit 64");
    msg_free(&m);
    msg_make(&m, "ZIO0TENS", LBL("{\"dtype\":\"u\",\"shape\":[1,1,1],\"word\":1}"), 0, 0, 0);
    msg_payload(&m, NULL, 1);
    lim.max_rank = 2;
    check_reject("rank 3", &m, &o, TIO_E_LIMIT, "rank 3 exceeds the rank limit 2");
    lim.max_rank = 3;
    tio_container *c = open_msg(&m, &o);
    assert_int_equal(tio_tensor_rank(tio_container_tensor(c, 0)), 3);
    tio_container_free(c);
    lim.max_rank = 0;
    msg_free(&m);

    /* tensors above max_tensors */
    msg_make(&m, "ZIO0TENS", LBL(T3 "}," "{\"dtype\":\"f\",\"part\":1,\"shape\":[3],\"word\":4}"), 0, 0, 0);
    msg_payload(&m, NULL, 12);
    msg_payload(&m, NULL, 12);
    lim.max_tensors = 1;
    check_reject("2 tensors, limit 1", &m, &o, TIO_E_LIMIT, "more than the limit of 1");
    lim.max_tensors = 2;
    c = open_msg(&m, &o);
    assert_int_equal(tio_container_count(c), 2);
    tio_container_free(c);
    /* parts of a .zmsg above 2 per tensor + 2 */
    msg_payload(&m, NULL, 1);
    size_t zl;
    uint8_t *z = zmsg_encode(m.parts, m.n, &zl);
    lim.max_tensors = 1;
    tio_error err;
    assert_int_equal(tio_open_memory(z, zl, &o, &c, &err), TIO_E_LIMIT);
    assert_non_null(strstr(err.message, "more parts than the limit of 4"));
    free(z);
    lim.max_tensors = 0;
    msg_free(&m);

    /* a label above max_header_bytes; nesting above max_depth */
    msg_make(&m, "ZIO0TENS", "{\"a\":{\"b\":{\"c\":[1]}}}", 0, 0, 0);
    lim.max_header_bytes = 16;
    check_reject("label 21 bytes, limit 16", &m, &o, TIO_E_LIMIT, "header limit of 16 bytes");
    lim.max_header_bytes = 0;
    lim.max_depth = 4; /* object, a, b, c's array, 1: 5 levels */
    check_reject("depth 5, limit 4", &m, &o, TIO_E_LIMIT, "nests deeper than the limit of 4");
    lim.max_depth = 5;
    c = open_msg(&m, &o);
    assert_int_equal(tio_container_count(c), 0);
    tio_container_free(c);
    lim.max_depth = 0;
    msg_free(&m);

    /* names and metadata strings above max_name_bytes */
    msg_make(&m, "ZIO0TENS", LBL(T3 ",\"metadata\":{\"name\":\"abcdef\"}}"), 0, 0, 0);
    msg_payload(&m, NULL, 12);
    lim.max_name_bytes = 4;
    check_reject("name of 6, limit 4", &m, &o, TIO_E_LIMIT, "name of 6 bytes");
    msg_free(&m);
    msg_make(&m, "ZIO0TENS", "{\"TENS\":{\"metadata\":{\"k\":\"abcdef\"},\"tensors\":[]}}", 0, 0, 0);
    check_reject("container metadata of 6, limit 4", &m, &o, TIO_E_LIMIT, "value of 6 bytes");
    lim.max_name_bytes = 0;
    c = open_msg(&m, &o);
    assert_string_equal(tio_container_meta_get(c, "k"), "abcdef");
    tio_container_free(c);
    msg_free(&m);
}

/* Byte flips over a vector: nothing crashes or leaks; what opens re-encodes. */
static void test_byte_flips(void **state) {
    (void)state;
    size_t len = 0;
    uint8_t *bytes = tvec_load("zio/tens_nopart_default.zmsg", &len);
    if (!bytes) skip();
    static const uint8_t vals[] = {0x00, 0xff, 0x80, 0x7f, 0x01, '"', '{', '0'};
    size_t ok = 0, total = 0;
    for (size_t k = 0; k < len; k++) {
        uint8_t orig = bytes[k];
        for (size_t v = 0; v < sizeof vals; v++) {
            bytes[k] = vals[v];
            tio_container *c = NULL;
            tio_error err;
            int rc = tio_open_memory(bytes, len, &open_zio, &c, &err);
            total++;
            if (rc == TIO_OK) {
                ok++;
                void *out;
                size_t n;
                if (tio_save_memory(c, &save_zio, &out, &n, &err) == TIO_OK) tio_free(out);
                tio_container_free(c);
            } else {
                assert_null(c);
                assert_int_equal(err.code, rc);
                assert_string_equal(err.format, "zio");
            }
        }
        bytes[k] = orig;
    }
    assert_true(ok > 0 && ok < total);
    free(bytes);
}

/* ---------------------------------------------------- 4. round trips */

/* A FLOW message: extra label keys, a TENS extension key, TENS.metadata of
 * several types, an unknown entry key, an unreferenced payload part, a
 * label longer than 254 bytes (the 5-byte size form). */
static void test_roundtrip_extras(void **state) {
    (void)state;
    static const char label[] =
        "{\"TENS\":{\"ext\":{\"b\":[1,2.5,null,true],\"long\":\""
        "0123456789012345678901234567890123456789012345678901234567890123456789"
        "0123456789012345678901234567890123456789\"},"
        "\"metadata\":{\"pi\":3.14,\"run\":7,\"tags\":[\"a\",\"b\"],\"who\":\"me\"},"
        "\"tensors\":[{\"dtype\":\"f\",\"metadata\":{\"gain\":1.5,\"name\":\"adc\",\"nil\":null,"
        "\"ok\":true,\"units\":\"mV\"},\"part\":1,\"shape\":[2],\"word\":4,\"zzz\":\"kept\"}]},"
        "\"flow\":\"DAT\"}";
    assert_true(strlen(label) > 255);
    msg m;
    msg_make(&m, "ZIO3FLOW", label, 42, 1600000000000000ull, 9);
    msg_payload(&m, "not a tensor", 12);
    const float v[2] = {1.5f, -2.0f};
    msg_payload(&m, v, sizeof v);

    tio_container *c = open_msg(&m, NULL);
    assert_int_equal(tio_container_count(c), 1);
    const tio_tensor *t = tio_container_tensor(c, 0);
    assert_string_equal(tio_tensor_name(t), "adc");
    assert_memory_equal(tio_tensor_data(t), v, sizeof v);
    assert_ptr_equal(tio_tensor_data(t), m.parts[3].data);
    assert_int_equal(tio_tensor_meta_count(t), 4);
    assert_string_equal(tio_tensor_meta_get(t, "gain"), "1.5");
    assert_string_equal(tio_tensor_meta_get(t, "nil"), "null");
    assert_string_equal(tio_tensor_meta_get(t, "ok"), "true");
    assert_string_equal(tio_tensor_meta_get(t, "units"), "mV");
    assert_null(tio_tensor_meta_get(t, "name"));
    assert_int_equal(tio_container_meta_count(c), 4);
    assert_string_equal(tio_container_meta_get(c, "pi"), "3.14");
    assert_string_equal(tio_container_meta_get(c, "run"), "7");
    assert_string_equal(tio_container_meta_get(c, "tags"), "[\"a\",\"b\"]");
    assert_string_equal(tio_container_meta_get(c, "who"), "me");
    assert_string_equal(tio_container_prop_get(c, "form"), "FLOW");
    assert_string_equal(tio_container_prop_get(c, "level"), "3");
    assert_string_equal(tio_container_prop_get(c, "origin"), "42");
    assert_string_equal(tio_container_prop_get(c, "granule"), "1600000000000000");
    assert_string_equal(tio_container_prop_get(c, "seqno"), "9");
    assert_string_equal(tio_container_prop_get(c, "payload_parts"), "2");
    /* the unknown key is a finding */
    assert_int_equal(tio_container_warning_count(c), 1);
    assert_non_null(strstr(tio_container_warning(c, 0)->message, "unknown key \"zzz\""));
    assert_non_null(strstr(tio_container_warning(c, 0)->message, "zio: part 0: tensor 0"));
    tio_container *cs = NULL;
    tio_error err;
    assert_int_equal(tio_open_parts(m.parts, m.n, &open_zio_strict, &cs, &err), TIO_E_INVALID);

    assert_reencodes(c, &m);

    /* Changed values: a typed value that no longer matches becomes a string;
     * one that still reads the same keeps its type; new entries are strings. */
    tio_tensor *tw = tio_container_tensor(c, 0);
    ASSERT_OK(tio_tensor_meta_set(tw, "gain", "2", &err), err, "meta_set");
    ASSERT_OK(tio_tensor_meta_set(tw, "ok", "true", &err), err, "meta_set");
    ASSERT_OK(tio_tensor_meta_set(tw, "new", "x\ny", &err), err, "meta_set");
    ASSERT_OK(tio_container_meta_set(c, "run", "8", &err), err, "meta_set");
    char *l = label_of(c, &save_zio);
    assert_non_null(strstr(l, "\"metadata\":{\"gain\":\"2\",\"name\":\"adc\",\"new\":\"x\\ny\",\"nil\":null,\"ok\":true,\"units\":\"mV\"}"));
    assert_non_null(strstr(l, "\"run\":\"8\""));
    assert_non_null(strstr(l, "\"pi\":3.14"));
    assert_non_null(strstr(l, "\"flow\":\"DAT\""));
    assert_non_null(strstr(l, "\"zzz\":\"kept\""));
    free(l);

    /* A tensor added to it: the layout falls back to parts 0..n-1 with
     * explicit parts, then the unreferenced part; the rest is kept. */
    const int64_t s1[1] = {1};
    const uint8_t one = 7;
    add(c, "extra", TIO_UINT8, 1, s1, &one, 1);
    tio_message *mo = NULL;
    ASSERT_OK(tio_message_encode(c, &save_zio, &mo, &err), err, "encode with added");
    assert_int_equal(tio_message_part_count(mo), 5);
    tio_part p0 = tio_message_part(mo, 0);
    assert_memory_equal(p0.data, "ZIO3FLOW", 8);
    assert_memory_equal(tio_message_part(mo, 2).data, v, sizeof v);
    assert_int_equal(tio_message_part(mo, 3).size, 1);
    assert_memory_equal(tio_message_part(mo, 4).data, "not a tensor", 12);
    tio_container *r = NULL;
    tio_part parts[5];
    for (size_t i = 0; i < 5; i++) parts[i] = tio_message_part(mo, i);
    ASSERT_OK(tio_open_parts(parts, 5, NULL, &r, &err), err, "reopen");
    assert_int_equal(tio_container_count(r), 2);
    assert_string_equal(tio_tensor_name(tio_container_tensor(r, 1)), "extra");
    assert_string_equal(tio_container_prop_get(r, "payload_parts"), "3");
    tio_container_free(r);
    tio_message_free(mo);

    tio_container_free(c);
    msg_free(&m);
}

/* The spec's example: tensors in parts 1, 2, 0. */
static void test_permuted_parts(void **state) {
    (void)state;
    msg m;
    msg_make(&m, "ZIO0TENS",
             "{\"TENS\":{\"tensors\":[{\"dtype\":\"f\",\"part\":1,\"shape\":[6,8],\"word\":4},"
             "{\"dtype\":\"f\",\"part\":2,\"shape\":[6,8],\"word\":4},"
             "{\"dtype\":\"f\",\"part\":0,\"shape\":[6,9],\"word\":4}]}}",
             1, 2, 3);
    msg_payload(&m, NULL, 6 * 9 * 4);
    msg_payload(&m, NULL, 6 * 8 * 4);
    msg_payload(&m, NULL, 6 * 8 * 4);
    m.bufs[3][0] ^= 1; /* parts 1 and 2 differ */
    tio_container *c = open_msg(&m, NULL);
    assert_int_equal(tio_container_count(c), 3);
    const size_t want_part[3] = {1, 2, 0};
    for (size_t i = 0; i < 3; i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        assert_ptr_equal(tio_tensor_data(t), m.parts[2 + want_part[i]].data);
        assert_int_equal(tio_tensor_shape(t)[1], i == 2 ? 9 : 8);
    }
    assert_reencodes(c, &m);
    /* and read back from the .zmsg */
    void *out;
    size_t n;
    tio_error err;
    ASSERT_OK(tio_save_memory(c, &save_zio, &out, &n, &err), err, "save");
    tio_container *r = NULL;
    ASSERT_OK(tio_open_memory(out, n, NULL, &r, &err), err, "reopen");
    for (size_t i = 0; i < 3; i++) {
        char a[65], b[65];
        tensor_sha_hex(tio_container_tensor(c, i), a);
        tensor_sha_hex(tio_container_tensor(r, i), b);
        assert_string_equal(a, b);
    }
    assert_reencodes(r, &m);
    tio_container_free(r);
    tio_free(out);
    tio_container_free(c);
    msg_free(&m);
}

/* ----------------------------------------------------- 5. order/ascend */

/* Stores logical row-major values under an order/ascend (independent of
 * the reader's odometer): element idx goes to sum stride*(asc ? i : n-1-i). */
static void store(const int32_t *logical, int32_t *stored, size_t rank, const int64_t *dims,
                  const size_t *order, const int *asc) {
    size_t stride[8], numel = 1;
    size_t s = 1;
    for (size_t k = 0; k < rank; k++) {
        stride[order[k]] = s;
        s *= (size_t)dims[order[k]];
    }
    for (size_t d = 0; d < rank; d++) numel *= (size_t)dims[d];
    for (size_t e = 0; e < numel; e++) {
        size_t rem = e, pos = 0;
        for (size_t d = rank; d-- > 0;) {
            size_t i = rem % (size_t)dims[d];
            rem /= (size_t)dims[d];
            pos += stride[d] * (asc[d] ? i : (size_t)dims[d] - 1 - i);
        }
        stored[pos] = logical[e];
    }
}

static void check_layout(size_t rank, const int64_t *dims, const size_t *order, const int *asc,
                         int expect_view) {
    int32_t logical[64], stored[64];
    size_t numel = 1;
    for (size_t d = 0; d < rank; d++) numel *= (size_t)dims[d];
    assert_true(numel <= 64);
    for (size_t e = 0; e < numel; e++) logical[e] = (int32_t)(e * 10 + 1);
    store(logical, stored, rank, dims, order, asc);
    char label[512];
    size_t n = (size_t)snprintf(label, sizeof label, "{\"TENS\":{\"tensors\":[{\"ascend\":[");
    for (size_t d = 0; d < rank; d++)
        n += (size_t)snprintf(label + n, sizeof label - n, "%s%s", d ? "," : "", asc[d] ? "true" : "false");
    n += (size_t)snprintf(label + n, sizeof label - n, "],\"dtype\":\"i\",\"order\":[");
    for (size_t k = 0; k < rank; k++)
        n += (size_t)snprintf(label + n, sizeof label - n, "%s%zu", k ? "," : "", order[k]);
    n += (size_t)snprintf(label + n, sizeof label - n, "],\"part\":0,\"shape\":[");
    for (size_t d = 0; d < rank; d++)
        n += (size_t)snprintf(label + n, sizeof label - n, "%s%lld", d ? "," : "", (long long)dims[d]);
    snprintf(label + n, sizeof label - n, "],\"word\":4}]}}");
    msg m;
    msg_make(&m, "ZIO0TENS", label, 0, 0, 0);
    msg_payload(&m, stored, numel * 4);
    tio_container *c = open_msg(&m, &open_zio_strict);
    const tio_tensor *t = tio_container_tensor(c, 0);
    assert_int_equal(tio_tensor_nbytes(t), numel * 4);
    assert_memory_equal(tio_tensor_data(t), logical, numel * 4);
    assert_true(tio_tensor_is_aligned(t) || expect_view);
    if (expect_view) {
        assert_ptr_equal(tio_tensor_data(t), m.parts[2].data);
        assert_reencodes(c, &m); /* order/ascend kept: they still describe the data */
    } else {
        assert_ptr_not_equal(tio_tensor_data(t), m.parts[2].data);
        /* written row-major, without order/ascend */
        tio_message *mo = NULL;
        tio_error err;
        ASSERT_OK(tio_message_encode(c, &save_zio, &mo, &err), err, "encode");
        tio_part p0 = tio_message_part(mo, 0);
        char *l = label_of(c, &save_zio);
        assert_null(strstr(l, "order"));
        assert_null(strstr(l, "ascend"));
        free(l);
        assert_true(p0.size > 8);
        assert_int_equal(tio_message_part(mo, 2).size, numel * 4);
        assert_memory_equal(tio_message_part(mo, 2).data, logical, numel * 4);
        tio_message_free(mo);
    }
    tio_container_free(c);
    msg_free(&m);
}

static void test_order_ascend(void **state) {
    (void)state;
    const int64_t d23[2] = {2, 3};
    const size_t fortran2[2] = {0, 1}, c2[2] = {1, 0};
    const int up2[2] = {1, 1}, desc1[2] = {1, 0}, desc0[2] = {0, 1};
    /* Fortran order: stored 0,3,1,4,2,5 for logical 0..5 */
    {
        int32_t logical[6] = {0, 1, 2, 3, 4, 5}, stored[6];
        store(logical, stored, 2, d23, fortran2, up2);
        const int32_t want[6] = {0, 3, 1, 4, 2, 5};
        assert_memory_equal(stored, want, sizeof want);
        store(logical, stored, 2, d23, c2, desc1);
        const int32_t want_d[6] = {2, 1, 0, 5, 4, 3}; /* dim 1 descending */
        assert_memory_equal(stored, want_d, sizeof want_d);
    }
    check_layout(2, d23, fortran2, up2, 0);
    check_layout(2, d23, c2, desc1, 0);
    check_layout(2, d23, fortran2, desc0, 0);
    check_layout(2, d23, c2, up2, 1); /* explicit C order: a view */
    const int64_t d234[3] = {2, 3, 4};
    const size_t f3[3] = {0, 1, 2}, mixed[3] = {1, 2, 0};
    const int up3[3] = {1, 1, 1}, some3[3] = {0, 1, 0};
    check_layout(3, d234, f3, up3, 0);
    check_layout(3, d234, mixed, some3, 0);
    /* dims of size 1 may sit anywhere: still row-major, a view */
    const int64_t d1x3[3] = {1, 3, 1};
    const size_t any3[3] = {0, 2, 1};
    const int up3b[3] = {0, 1, 0};
    check_layout(3, d1x3, any3, up3b, 1);
    /* an empty tensor with any order: nothing to copy */
    const int64_t d0[2] = {0, 3};
    check_layout(2, d0, fortran2, desc0, 1);
}

/* ------------------------------------------------ 6. labels and values */

/* Label variants that must round-trip byte for byte. */
static void test_label_roundtrips(void **state) {
    (void)state;
    static const char *const labels[] = {
        /* no TENS: another form, kept as is */
        "{\"credit\":3,\"direction\":\"extract\",\"flow\":\"BOT\"}",
        /* TENS without tensors; TENS with an empty metadata */
        "{\"TENS\":{\"x\":1}}",
        "{\"TENS\":{\"metadata\":{},\"tensors\":[]}}",
        /* reals as nlohmann prints them */
        ("{\"r\":[100.0,0.1,1e-05,1e+16,-0.0,0.0,1e+15,0.001,0.0001,1.5e+300,5e-324,"
         "123456789012345.0,1.234567890123456e+15,3.14,1.7976931348623157e+308,-2.5,12.5,"
         "2.2250738585072014e-308,0.30000000000000004,-1e-07]}"),
        /* nlohmann's Grisu2 output where it is not the shortest round-trip
         * form: a boundary that reads back only by ties-to-even, digits near
         * a boundary, the closer of two candidates by its approximation */
        ("{\"g\":[-4.8638884426327824e+16,2.8646508926815312e+16,19535610905.981392,"
         "10850835739527.312,-2.1759716326015866e-244,2.2448710335019179e+279,"
         "-1.8397515980052834e+242]}"),
        /* integers, escapes, UTF-8, '/' and DEL unescaped */
        ("{\"i\":[0,-1,9223372036854775807,-9223372036854775808],"
         "\"s\":\"\\u0001\\u001f\\b\\f\\n\\r\\t\\\"\\\\/\x7f caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}"),
        /* keys sorted by byte order: uppercase before lowercase, UTF-8 last */
        "{\"A\":1,\"B\":2,\"TENS\":{\"tensors\":[]},\"Z\":{\"\":0,\"a\":1,\"ab\":2,\"b\":3},\"a\":4,\"\xc3\xa9\":5}",
    };
    for (size_t k = 0; k < sizeof labels / sizeof labels[0]; k++) {
        msg m;
        msg_make(&m, "ZIO0    ", labels[k], 0, 0, 0);
        msg_payload(&m, "blob", 4);
        tio_container *c = open_msg(&m, &open_zio_strict);
        assert_int_equal(tio_container_count(c), 0);
        assert_string_equal(tio_container_prop_get(c, "form"), "");
        assert_reencodes(c, &m);
        tio_container_free(c);
        msg_free(&m);
    }
    /* an empty label: 0 tensors, written back empty */
    msg m;
    msg_make(&m, "ZIO8TENS", "", 0, 0, UINT64_MAX);
    tio_container *c = open_msg(&m, &open_zio_strict);
    assert_int_equal(tio_container_count(c), 0);
    assert_string_equal(tio_container_prop_get(c, "seqno"), "18446744073709551615");
    assert_string_equal(tio_container_prop_get(c, "label_bytes"), "0");
    assert_reencodes(c, &m);
    tio_container_free(c);
    msg_free(&m);

    /* metadata values: types, a non-string name, the empty name, kept keys */
    msg_make(&m, "ZIO0TENS",
             "{\"TENS\":{\"metadata\":{\"deep\":{\"a\":[1,{\"b\":null}]},\"x\":1e-05},"
             "\"tensors\":[{\"dtype\":\"u\",\"metadata\":{\"name\":5,\"r\":100.0},\"packing\":\"dense\","
             "\"part\":0,\"pointer\":null,\"shape\":[2],\"word\":1},"
             "{\"dtype\":\"b\",\"metadata\":{\"name\":\"\"},\"part\":1,\"shape\":[],\"word\":1},"
             "{\"dtype\":\"i\",\"metadata\":{\"nested\":{\"k\":[1,2]}},\"part\":2,\"shape\":[1],\"word\":8}]}}",
             0, 0, 0);
    msg_payload(&m, "\x01\x02", 2);
    msg_payload(&m, "\x01", 1);
    msg_payload(&m, NULL, 8);
    c = open_msg(&m, NULL);
    const tio_tensor *t0 = tio_container_tensor(c, 0), *t1 = tio_container_tensor(c, 1),
                     *t2 = tio_container_tensor(c, 2);
    assert_null(tio_tensor_name(t0));
    assert_string_equal(tio_tensor_meta_get(t0, "name"), "5");
    assert_string_equal(tio_tensor_meta_get(t0, "r"), "100.0");
    assert_string_equal(tio_tensor_name(t1), ""); /* the empty name, a name */
    assert_null(tio_tensor_meta_get(t1, "name"));
    assert_int_equal(tio_tensor_dtype(t1), TIO_BOOL);
    assert_int_equal(tio_tensor_rank(t1), 0);
    assert_int_equal(tio_tensor_dtype(t2), TIO_INT64);
    assert_string_equal(tio_tensor_meta_get(t2, "nested"), "{\"k\":[1,2]}");
    assert_string_equal(tio_container_meta_get(c, "deep"), "{\"a\":[1,{\"b\":null}]}");
    assert_string_equal(tio_container_meta_get(c, "x"), "1e-05");
    /* nested per-tensor metadata is a finding */
    assert_int_equal(tio_container_warning_count(c), 1);
    assert_non_null(strstr(tio_container_warning(c, 0)->message, "tensor 2: metadata \"nested\""));
    assert_reencodes(c, &m);
    tio_container_free(c);
    msg_free(&m);

    /* Python's json.dumps form (spaces, insertion order) reads the same and
     * is written in the compact sorted form */
    msg_make(&m, "ZIO0TENS",
             "{\"TENS\": {\"tensors\": [{\"shape\": [2], \"word\": 1, \"dtype\": \"u\"}], "
             "\"metadata\": {}}, \"flow\": \"DAT\"}",
             0, 0, 0);
    msg_payload(&m, "ab", 2);
    c = open_msg(&m, NULL);
    assert_int_equal(tio_container_count(c), 1);
    char *l = label_of(c, &save_zio);
    assert_string_equal(l, "{\"TENS\":{\"metadata\":{},\"tensors\":[{\"dtype\":\"u\",\"shape\":[2],\"word\":1}]},\"flow\":\"DAT\"}");
    free(l);
    tio_container_free(c);
    msg_free(&m);
}

/* ------------------------------------------------------- 7. writing */

static void test_write_new(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    const uint8_t flags[3] = {1, 0, 1};
    const int64_t s3[1] = {3}, s22[2] = {2, 2};
    const uint16_t half[4] = {0x3C00, 0x4000, 0xC000, 0x0000};
    const double x = 0.25;
    tio_tensor *tf = add(c, "flags", TIO_BOOL, 1, s3, flags, sizeof flags);
    tio_tensor *th = add(c, NULL, TIO_FLOAT16, 2, s22, half, sizeof half);
    add(c, "caf\xc3\xa9", TIO_FLOAT64, 0, NULL, &x, sizeof x);
    tio_error err;
    ASSERT_OK(tio_tensor_meta_set(th, "unit", "V", &err), err, "meta");
    ASSERT_OK(tio_tensor_meta_set(tf, "n", "3", &err), err, "meta");
    ASSERT_OK(tio_container_meta_set(c, "source", "test", &err), err, "meta");

    tio_message *m = NULL;
    ASSERT_OK(tio_message_encode(c, &save_zio, &m, &err), err, "encode");
    assert_int_equal(tio_message_part_count(m), 5);
    static const char want[] =
        "ZIO0TENS{\"TENS\":{\"metadata\":{\"source\":\"test\"},\"tensors\":["
        "{\"dtype\":\"b\",\"metadata\":{\"n\":\"3\",\"name\":\"flags\"},\"part\":0,\"shape\":[3],\"word\":1},"
        "{\"dtype\":\"f\",\"metadata\":{\"unit\":\"V\"},\"part\":1,\"shape\":[2,2],\"word\":2},"
        "{\"dtype\":\"f\",\"metadata\":{\"name\":\"caf\xc3\xa9\"},\"part\":2,\"shape\":[],\"word\":8}]}}";
    tio_part p0 = tio_message_part(m, 0);
    assert_int_equal(p0.size, strlen(want));
    assert_memory_equal(p0.data, want, strlen(want));
    const uint8_t zeros[24] = {0};
    assert_int_equal(tio_message_part(m, 1).size, 24);
    assert_memory_equal(tio_message_part(m, 1).data, zeros, 24);
    /* data parts are lent, not copied; they outlive the container */
    assert_ptr_equal(tio_message_part(m, 2).data, tio_tensor_data(tf));
    assert_ptr_equal(tio_message_part(m, 3).data, tio_tensor_data(th));
    tio_container_free(c);
    assert_memory_equal(tio_message_part(m, 2).data, flags, 3);
    assert_memory_equal(tio_message_part(m, 3).data, half, sizeof half);
    assert_memory_equal(tio_message_part(m, 4).data, &x, 8);

    /* read back */
    tio_part parts[5];
    for (size_t i = 0; i < 5; i++) parts[i] = tio_message_part(m, i);
    tio_container *r = NULL;
    ASSERT_OK(tio_open_parts(parts, 5, &open_zio_strict, &r, &err), err, "reopen");
    assert_int_equal(tio_container_count(r), 3);
    assert_string_equal(tio_tensor_name(tio_container_tensor(r, 0)), "flags");
    assert_int_equal(tio_tensor_dtype(tio_container_tensor(r, 0)), TIO_BOOL);
    assert_int_equal(tio_tensor_dtype(tio_container_tensor(r, 1)), TIO_FLOAT16);
    assert_null(tio_tensor_name(tio_container_tensor(r, 1)));
    assert_string_equal(tio_tensor_meta_get(tio_container_tensor(r, 1), "unit"), "V");
    assert_string_equal(tio_tensor_name(tio_container_tensor(r, 2)), "caf\xc3\xa9");
    assert_string_equal(tio_container_meta_get(r, "source"), "test");
    tio_container_free(r);
    tio_message_free(m);

    /* no tensors at all */
    c = tio_container_new();
    char *l = label_of(c, &save_zio);
    assert_string_equal(l, "{\"TENS\":{\"tensors\":[]}}");
    free(l);
    void *out;
    size_t n;
    ASSERT_OK(tio_save_memory(c, &save_zio, &out, &n, &err), err, "empty");
    assert_int_equal(n, 1 + 8 + 23 + 1 + 24);
    ASSERT_OK(tio_open_memory(out, n, NULL, &r, &err), err, "reopen empty");
    assert_int_equal(tio_container_count(r), 0);
    tio_container_free(r);
    tio_free(out);
    tio_container_free(c);
}

static void test_write_refusals(void **state) {
    (void)state;
    tio_error err;
    tio_container *c;
    void *out = NULL;
    size_t n;
    const int64_t s2[1] = {2};

    /* bfloat16: only widened */
    const uint16_t bf[2] = {0x3F80, 0xC040};
    c = tio_container_new();
    add(c, NULL, TIO_BFLOAT16, 1, s2, bf, sizeof bf);
    assert_int_equal(tio_save_memory(c, &save_zio, &out, &n, &err), TIO_E_LOSSY);
    tio_save_options widen = {.format = "zio", .flags = TIO_SAVE_WIDEN};
    ASSERT_OK(tio_save_memory(c, &widen, &out, &n, &err), err, "widen");
    tio_container *r = NULL;
    ASSERT_OK(tio_open_memory(out, n, NULL, &r, &err), err, "reopen");
    const float f[2] = {1.0f, -3.0f};
    assert_int_equal(tio_tensor_dtype(tio_container_tensor(r, 0)), TIO_FLOAT32);
    assert_memory_equal(tio_tensor_data(tio_container_tensor(r, 0)), f, sizeof f);
    tio_container_free(r);
    tio_free(out);
    tio_container_free(c);

    /* COO: only densified */
    const int64_t shape[2] = {2, 2}, idx[2] = {1, 1};
    const float val = 5;
    tio_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = TIO_FLOAT32;
    d.rank = 2;
    d.shape = shape;
    d.layout = TIO_LAYOUT_COO;
    d.data = &val;
    d.nbytes = sizeof val;
    d.nnz = 1;
    d.indices = idx;
    c = tio_container_new();
    ASSERT_OK(tio_container_add(c, &d, 0, NULL, &err), err, "coo");
    assert_int_equal(tio_save_memory(c, &save_zio, &out, &n, &err), TIO_E_LOSSY);
    tio_save_options dens = {.format = "zio", .flags = TIO_SAVE_DENSIFY};
    tio_message *m = NULL;
    ASSERT_OK(tio_message_encode(c, &dens, &m, &err), err, "densify");
    const float dense[4] = {0, 0, 0, 5};
    assert_memory_equal(tio_message_part(m, 2).data, dense, sizeof dense);
    tio_message_free(m);
    tio_container_free(c);

    /* a name and a different metadata "name" */
    const uint8_t b2[2] = {1, 2};
    c = tio_container_new();
    tio_tensor *t = add(c, "a", TIO_UINT8, 1, s2, b2, 2);
    ASSERT_OK(tio_tensor_meta_set(t, "name", "b", &err), err, "meta");
    assert_int_equal(tio_check_save(c, &save_zio, &err), TIO_E_LOSSY);
    assert_non_null(strstr(err.message, "metadata.name"));
    tio_save_options drop = {.format = "zio", .flags = TIO_SAVE_DROP_NAMES};
    char *l = label_of(c, &drop);
    assert_non_null(strstr(l, "\"metadata\":{\"name\":\"b\"}"));
    free(l);
    drop.flags = TIO_SAVE_DROP_METADATA;
    l = label_of(c, &drop);
    assert_non_null(strstr(l, "\"metadata\":{\"name\":\"a\"}"));
    free(l);
    ASSERT_OK(tio_tensor_meta_set(t, "name", "a", &err), err, "meta"); /* the same: fine */
    ASSERT_OK(tio_check_save(c, &save_zio, &err), err, "same name");
    /* text that is not UTF-8 cannot go into a JSON label */
    ASSERT_OK(tio_tensor_meta_set(t, "bad", "\xff", &err), err, "meta");
    assert_int_equal(tio_check_save(c, &save_zio, &err), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(err.message, "UTF-8"));
    tio_container_free(c);
    c = tio_container_new();
    add(c, "\xc3", TIO_UINT8, 1, s2, b2, 2);
    assert_int_equal(tio_save_memory(c, &save_zio, &out, &n, &err), TIO_E_UNSUPPORTED);
    tio_container_free(c);
    c = tio_container_new();
    ASSERT_OK(tio_container_meta_set(c, "k\xed\xa0\x80", "v", &err), err, "meta"); /* a surrogate */
    assert_int_equal(tio_save_memory(c, &save_zio, &out, &n, &err), TIO_E_UNSUPPORTED);
    tio_container_free(c);

    /* A part over 4 GiB - 1 does not fit the zmsg size field. The tensor
     * borrows a 1-byte buffer and claims 2^32 bytes: every size is checked
     * before any data is read, so nothing reads past the byte. */
    static const uint8_t byte = 0;
    const int64_t big[1] = {INT64_C(1) << 32};
    memset(&d, 0, sizeof d);
    d.dtype = TIO_UINT8;
    d.rank = 1;
    d.shape = big;
    d.data = &byte;
    d.nbytes = (size_t)1 << 32;
    c = tio_container_new();
    ASSERT_OK(tio_container_add(c, &d, TIO_ADD_BORROW, NULL, &err), err, "borrow");
    out = NULL;
    assert_int_equal(tio_save_memory(c, &save_zio, &out, &n, &err), TIO_E_LIMIT);
    assert_null(out);
    assert_non_null(strstr(err.message, "4 GiB"));
    tio_container_free(c);
}

static void test_options(void **state) {
    (void)state;
    tio_error err;
    tio_container *c = tio_container_new();
    const int64_t s1[1] = {1};
    const uint8_t b = 9;
    add(c, NULL, TIO_UINT8, 1, s1, &b, 1);
    tio_save_options so = {
        .format = "zio",
        .options = "level=5,form=FLOW,origin=1,granule=18446744073709551615,seqno=3"};
    tio_message *m = NULL;
    ASSERT_OK(tio_message_encode(c, &so, &m, &err), err, "options");
    assert_memory_equal(tio_message_part(m, 0).data, "ZIO5FLOW{", 9);
    uint8_t coord[24];
    put64(coord, 1);
    put64(coord + 8, UINT64_MAX);
    put64(coord + 16, 3);
    assert_memory_equal(tio_message_part(m, 1).data, coord, 24);
    tio_part parts[3] = {tio_message_part(m, 0), tio_message_part(m, 1), tio_message_part(m, 2)};
    tio_container *r = NULL;
    ASSERT_OK(tio_open_parts(parts, 3, NULL, &r, &err), err, "reopen");
    assert_string_equal(tio_container_prop_get(r, "level"), "5");
    assert_string_equal(tio_container_prop_get(r, "form"), "FLOW");
    assert_string_equal(tio_container_prop_get(r, "granule"), "18446744073709551615");
    tio_message_free(m);

    /* a read message keeps its header; options override it */
    void *out;
    size_t n;
    ASSERT_OK(tio_save_memory(r, &save_zio, &out, &n, &err), err, "keep");
    assert_memory_equal((uint8_t *)out + 1, "ZIO5FLOW", 8);
    tio_free(out);
    tio_save_options so2 = {.format = "zio", .options = "form=AB,seqno=0"};
    ASSERT_OK(tio_message_encode(r, &so2, &m, &err), err, "override");
    assert_memory_equal(tio_message_part(m, 0).data, "ZIO5AB  ", 8);
    put64(coord + 16, 0);
    assert_memory_equal(tio_message_part(m, 1).data, coord, 24);
    tio_message_free(m);
    tio_container_free(r);

    static const char *const bad[] = {
        "level=9", "level=x", "level=", "level=-1", "form=", "form=ABCDE", "form=A\tB",
        "form=caf\xc3\xa9", "origin=-1", "origin=18446744073709551616", "granule=1e3",
        "seqno= 1", "color=red", "level",
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        so.options = bad[k];
        int rc = tio_check_save(c, &so, &err);
        if (rc != TIO_E_ARGUMENT) fprintf(stderr, "option %s: %s\n", bad[k], tio_status_name(rc));
        assert_int_equal(rc, TIO_E_ARGUMENT);
        assert_string_equal(err.format, "zio");
        out = NULL;
        assert_int_equal(tio_save_memory(c, &so, &out, &n, &err), TIO_E_ARGUMENT);
        assert_null(out);
        m = NULL;
        assert_int_equal(tio_message_encode(c, &so, &m, &err), TIO_E_ARGUMENT);
        assert_null(m);
    }
    /* another format takes no zio options */
    tio_save_options ten = {.format = "tenbin", .options = "level=1"};
    assert_int_equal(tio_check_save(c, &ten, &err), TIO_E_ARGUMENT);
    tio_container_free(c);
}

/* tenbin -> zio -> tenbin: the same tensors; names in metadata.name. */
static void test_convert_tenbin(void **state) {
    (void)state;
    static const char *const files[] = {"tenbin/dtype_float32.ten", "tenbin/multi_infos.ten",
                                        "tenbin/empty_mixed.ten", "tenbin/rank0_float32.ten"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        size_t len = 0;
        uint8_t *src = tvec_load(files[f], &len);
        if (!src) continue;
        tio_error err;
        tio_container *c = NULL;
        ASSERT_OK(tio_open_memory(src, len, NULL, &c, &err), err, files[f]);
        void *z;
        size_t zn;
        ASSERT_OK(tio_save_memory(c, &save_zio, &z, &zn, &err), err, "to zio");
        assert_string_equal(tio_format_probe(z, zn), "zio");
        tio_container *zc = NULL;
        ASSERT_OK(tio_open_memory(z, zn, &open_zio_strict, &zc, &err), err, "open zio");
        assert_int_equal(tio_container_count(zc), tio_container_count(c));
        for (size_t i = 0; i < tio_container_count(c); i++) {
            const tio_tensor *a = tio_container_tensor(c, i), *b = tio_container_tensor(zc, i);
            assert_int_equal(tio_tensor_dtype(a), tio_tensor_dtype(b));
            assert_int_equal(tio_tensor_rank(a), tio_tensor_rank(b));
            if (tio_tensor_rank(a))
                assert_memory_equal(tio_tensor_shape(a), tio_tensor_shape(b),
                                    tio_tensor_rank(a) * sizeof(int64_t));
            char ha[65], hb[65];
            tensor_sha_hex(a, ha);
            tensor_sha_hex(b, hb);
            assert_string_equal(ha, hb);
            if (tio_tensor_name(a)) {
                assert_string_equal(tio_tensor_name(a), tio_tensor_name(b));
                char needle[64];
                snprintf(needle, sizeof needle, "\"metadata\":{\"name\":\"%s\"}", tio_tensor_name(a));
                char *l = label_of(zc, &save_zio);
                assert_non_null(strstr(l, needle));
                free(l);
            } else {
                assert_null(tio_tensor_name(b));
            }
            assert_int_equal(tio_tensor_meta_count(b), 0);
        }
        /* and back to tenbin: the original bytes */
        tio_save_options st = {.format = "tenbin"};
        void *t;
        size_t tn;
        ASSERT_OK(tio_save_memory(zc, &st, &t, &tn, &err), err, "to tenbin");
        assert_int_equal(tn, len);
        assert_memory_equal(t, src, len);
        tio_free(t);
        tio_container_free(zc);
        tio_free(z);
        tio_container_free(c);
        free(src);
    }
}

static void test_registry(void **state) {
    (void)state;
    assert_string_equal(tio_format_for_path("a/b.zmsg"), "zio");
    assert_string_equal(tio_format_extensions("zio"), ".zmsg");
    assert_int_equal(tio_format_caps("zio"), TIO_CAP_NAMES | TIO_CAP_METADATA);
    for (int d = 1; d < TIO_DTYPE_COUNT; d++)
        assert_int_equal(tio_format_supports_dtype("zio", (tio_dtype)d),
                         d != TIO_BFLOAT16 && d != TIO_FLOAT8_E4M3FN && d != TIO_FLOAT8_E5M2 &&
                             d != TIO_STRING);
    /* complex as TENS kind 'c', word 8 / 16 */
    assert_true(tio_format_supports_dtype("zio", TIO_COMPLEX64));
    /* probe: the first size field and "ZIO" */
    static const uint8_t small[12] = {11, 'Z', 'I', 'O', '0', 'T', 'E', 'N', 'S', '{', '}', 24};
    assert_string_equal(tio_format_probe(small, sizeof small), "zio");
    static const uint8_t big[9] = {0xFF, 0, 0, 0, 3, 'Z', 'I', 'O', 0};
    assert_string_equal(tio_format_probe(big, sizeof big), "zio");
    static const uint8_t frame[8] = {'Z', 'I', 'O', '0', 'T', 'E', 'N', 'S'};
    assert_null(tio_format_probe(frame, sizeof frame));
    static const uint8_t past[4] = {200, 'Z', 'I', 'O'};
    assert_null(tio_format_probe(past, sizeof past));
    static const uint8_t tiny[4] = {2, 'Z', 'I', 'O'};
    assert_null(tio_format_probe(tiny, sizeof tiny));
    assert_null(tio_format_probe(small, 3));
    /* a tenbin file is not taken for zio, nor the reverse */
    size_t len;
    uint8_t *ten = tvec_load("tenbin/dtype_float32.ten", &len);
    if (ten) {
        assert_string_equal(tio_format_probe(ten, len), "tenbin");
        free(ten);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),          cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_zmsg_framing),     cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_limits),           cmocka_unit_test(test_byte_flips),
        cmocka_unit_test(test_roundtrip_extras), cmocka_unit_test(test_permuted_parts),
        cmocka_unit_test(test_order_ascend),     cmocka_unit_test(test_label_roundtrips),
        cmocka_unit_test(test_write_new),        cmocka_unit_test(test_write_refusals),
        cmocka_unit_test(test_options),          cmocka_unit_test(test_convert_tenbin),
        cmocka_unit_test(test_registry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
