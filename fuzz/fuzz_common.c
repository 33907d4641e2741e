#include "fuzz_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fz_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("fuzz: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

void fz_check_error(int rc, const tio_error *e, const tio_container *c) {
    if (c) fz_fail("a failed call (%s) left a container", tio_status_name(rc));
    if (e->code != rc) fz_fail("error code %d differs from the return value %d", e->code, rc);
    if (!e->message[0]) fz_fail("error %s without a message", tio_status_name(rc));
    if (!tio_status_name(rc)) fz_fail("unknown status code %d", rc);
}

static int same_str(const char *a, const char *b) {
    if (!a || !b) return a == b;
    return strcmp(a, b) == 0;
}

static void hash_or_fail(const tio_tensor *t, int what, uint8_t out[32], const char *where) {
    tio_error e;
    int rc = tio_tensor_sha256(t, what, out, &e);
    if (rc != TIO_OK) fz_fail("%s: sha256 failed: %s", where, e.message);
}

void fz_check_same(const tio_container *c1, const tio_container *c2, const char *what) {
    size_t n = tio_container_count(c1);
    if (tio_container_count(c2) != n)
        fz_fail("%s: %zu tensors, then %zu", what, n, tio_container_count(c2));
    for (size_t i = 0; i < n; i++) {
        const tio_tensor *a = tio_container_tensor(c1, i);
        const tio_tensor *b = tio_container_tensor(c2, i);
        if (!same_str(tio_tensor_name(a), tio_tensor_name(b)))
            fz_fail("%s: tensor %zu: name differs", what, i);
        if (tio_tensor_dtype(a) != tio_tensor_dtype(b))
            fz_fail("%s: tensor %zu: dtype %d, then %d", what, i, (int)tio_tensor_dtype(a),
                    (int)tio_tensor_dtype(b));
        if (tio_tensor_layout(a) != tio_tensor_layout(b))
            fz_fail("%s: tensor %zu: layout differs", what, i);
        size_t r = tio_tensor_rank(a);
        if (tio_tensor_rank(b) != r) fz_fail("%s: tensor %zu: rank differs", what, i);
        if (r && memcmp(tio_tensor_shape(a), tio_tensor_shape(b), r * sizeof(int64_t)) != 0)
            fz_fail("%s: tensor %zu: shape differs", what, i);
        if (tio_tensor_nnz(a) != tio_tensor_nnz(b)) fz_fail("%s: tensor %zu: nnz differs", what, i);
        uint8_t ha[32], hb[32];
        hash_or_fail(a, TIO_HASH_VALUES, ha, what);
        hash_or_fail(b, TIO_HASH_VALUES, hb, what);
        if (memcmp(ha, hb, 32) != 0) fz_fail("%s: tensor %zu: values differ", what, i);
        if (tio_tensor_layout(a) == TIO_LAYOUT_COO) {
            hash_or_fail(a, TIO_HASH_INDICES, ha, what);
            hash_or_fail(b, TIO_HASH_INDICES, hb, what);
            if (memcmp(ha, hb, 32) != 0) fz_fail("%s: tensor %zu: indices differ", what, i);
        }
        size_t m = tio_tensor_meta_count(a);
        if (tio_tensor_meta_count(b) != m)
            fz_fail("%s: tensor %zu: %zu metadata entries, then %zu", what, i, m,
                    tio_tensor_meta_count(b));
        for (size_t k = 0; k < m; k++) {
            const char *ka, *va, *kb, *vb;
            tio_tensor_meta_at(a, k, &ka, &va);
            tio_tensor_meta_at(b, k, &kb, &vb);
            if (!same_str(ka, kb) || !same_str(va, vb))
                fz_fail("%s: tensor %zu: metadata entry %zu differs", what, i, k);
        }
    }
}

/* Every accessor on every tensor, so a view past the input shows up under
 * ASan: the hashes read every byte the container hands out. */
/* Every object of the tree once (seen by id), checking what the API
 * promises: ids below the count, children present, tensors of the
 * container, strings NUL-terminated at their length. */
static void touch_object(const tio_container *c, const tio_object *o, uint8_t *seen,
                         size_t count, unsigned depth) {
    if (!o) fz_fail("object tree: a NULL child");
    size_t id = tio_object_id(o), n = 0;
    if (id >= count) fz_fail("object tree: id %zu of %zu", id, count);
    if (depth > TIO_MAX_PICKLE_DEPTH_CAP + 2) fz_fail("object tree: deeper than the cap");
    if (seen[id]) return;
    seen[id] = 1;
    tio_object_kind k = tio_object_kind_of(o);
    if (!tio_object_kind_name(k)) fz_fail("object tree: kind %d", (int)k);
    const char *s = tio_object_bytes(o, &n);
    if (s && s[n] != 0) fz_fail("object tree: bytes not NUL-terminated");
    if (k == TIO_OBJ_TENSOR && (!c || tio_object_tensor(o) < 0 ||
                                (size_t)tio_object_tensor(o) >= tio_container_count(c)))
        fz_fail("object tree: tensor %lld of %zu", (long long)tio_object_tensor(o),
                tio_container_count(c));
    if (k == TIO_OBJ_OPAQUE && tio_object_state(o))
        touch_object(c, tio_object_state(o), seen, count, depth + 1);
    if (k == TIO_OBJ_LIST || k == TIO_OBJ_TUPLE || k == TIO_OBJ_SET || k == TIO_OBJ_DICT) {
        for (size_t i = 0; i < tio_object_len(o); i++) {
            touch_object(c, tio_object_item(o, i), seen, count, depth + 1);
            if (k == TIO_OBJ_DICT) touch_object(c, tio_object_key(o, i), seen, count, depth + 1);
        }
        if (tio_object_item(o, tio_object_len(o))) fz_fail("object tree: an item past the end");
    }
}

void fz_check_tree(const tio_container *c, const tio_object *root, size_t count) {
    uint8_t *seen = calloc(count ? count : 1, 1);
    if (!seen) fz_fail("out of memory");
    touch_object(c, root, seen, count, 0);
    free(seen);
}

static void touch(const tio_container *c) {
    const tio_object *root = tio_container_object(c);
    if (root) fz_check_tree(c, root, tio_container_object_count(c));
    for (size_t i = 0; i < tio_container_count(c); i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        uint8_t h[32];
        hash_or_fail(t, TIO_HASH_VALUES, h, "touch");
        if (tio_tensor_layout(t) == TIO_LAYOUT_COO) hash_or_fail(t, TIO_HASH_INDICES, h, "touch");
        (void)tio_tensor_name(t);
        for (size_t k = 0; k < tio_tensor_meta_count(t); k++) {
            const char *key, *val;
            tio_tensor_meta_at(t, k, &key, &val);
            if (!key || !val) fz_fail("tensor %zu: metadata entry %zu is NULL", i, k);
            (void)strlen(key);
            (void)strlen(val);
        }
    }
    for (size_t k = 0; k < tio_container_meta_count(c); k++) {
        const char *key, *val;
        tio_container_meta_at(c, k, &key, &val);
        if (!key || !val) fz_fail("container metadata entry %zu is NULL", k);
    }
    for (size_t k = 0; k < tio_container_prop_count(c); k++) {
        const char *key, *val;
        tio_container_prop_at(c, k, &key, &val);
        if (!key || !val) fz_fail("prop %zu is NULL", k);
    }
    for (size_t k = 0; k < tio_container_warning_count(c); k++) {
        const tio_error *w = tio_container_warning(c, k);
        if (!w || !w->message[0]) fz_fail("warning %zu has no message", k);
    }
    const tio_graph *g = tio_container_graph(c);
    if (g) {
        for (size_t v = 0; v < tio_graph_value_count(g); v++) {
            tio_value_info vi;
            if (tio_graph_value(g, v, &vi) != TIO_OK) fz_fail("graph value %zu unreadable", v);
        }
        for (size_t nd = 0; nd < tio_graph_node_count(g); nd++) {
            tio_node_info ni;
            if (tio_graph_node(g, nd, &ni) != TIO_OK) fz_fail("graph node %zu unreadable", nd);
            for (size_t j = 0; j < ni.attr_count; j++) {
                tio_attr at;
                if (tio_graph_attr(g, nd, j, &at) != TIO_OK)
                    fz_fail("graph node %zu attr %zu unreadable", nd, j);
            }
        }
    }
}

/* An encoder may refuse what a decoder accepted only for reasons it names:
 * a loss it will not make silently, or something it cannot write. */
static void check_encode_refusal(int rc, const tio_error *e, const char *format) {
    if (rc == TIO_E_LOSSY || rc == TIO_E_UNSUPPORTED || rc == TIO_E_LIMIT) return;
    fz_fail("%s: re-encoding what was decoded failed with %s: %s", format,
            tio_status_name(rc), e->message);
}

/* Opens with this bound on expanding sparse tensors (FZ_MAX_DENSE_BYTES): a
 * COO tensor that claims more is refused with TIO_E_LIMIT (issue 15: a 6 KB
 * BTF whose dense hash streamed 4e18 bytes of zeros). */
static const tio_limits fz_limits = {.max_dense_bytes = FZ_MAX_DENSE_BYTES};

/* The dense hash of a COO tensor is the hash of its densified copy. */
static void check_dense_hash(const tio_tensor *t, const uint8_t want[32], size_t i) {
    size_t need = (size_t)tio_tensor_numel(t) * tio_dtype_size(tio_tensor_dtype(t));
    if (need > (1u << 20)) return; /* the big ones cost more than they tell */
    uint8_t *buf = malloc(need ? need : 1);
    if (!buf) abort();
    tio_error e;
    if (tio_tensor_densify(t, buf, need, &e) != TIO_OK)
        fz_fail("tensor %zu: it hashes dense but does not densify: %s", i, e.message);
    tio_container *c = tio_container_new();
    if (!c) abort();
    tio_tensor_desc d = {.dtype = tio_tensor_dtype(t), .rank = tio_tensor_rank(t),
                         .shape = tio_tensor_shape(t), .layout = TIO_LAYOUT_DENSE,
                         .data = buf, .nbytes = need};
    if (tio_container_add(c, &d, TIO_ADD_BORROW, NULL, &e) != TIO_OK)
        fz_fail("tensor %zu: its densified copy cannot be added: %s", i, e.message);
    uint8_t got[32];
    hash_or_fail(tio_container_tensor(c, 0), TIO_HASH_DENSE, got, "densified copy");
    if (memcmp(got, want, 32) != 0)
        fz_fail("tensor %zu: the dense hash differs from the hash of its densified copy", i);
    tio_container_free(c);
    free(buf);
}

/* c saved to tenbin densifying, widening, dequantizing and dropping what it
 * cannot hold, with the cast (or NULL): tio_check_save must predict the
 * save, a refusal come from the error contract, the bytes written decode.
 * The decoded container (its views point into *bytes: free that after it),
 * with as many tensors as c, or NULL where the save was refused. */
static tio_container *tenbin_save(const tio_container *c, const char *cast, const char *label,
                                  void **bytes) {
    tio_save_options so = {0};
    so.format = "tenbin";
    so.flags = TIO_SAVE_DENSIFY | TIO_SAVE_WIDEN | TIO_SAVE_DROP_NAMES | TIO_SAVE_DROP_METADATA |
               TIO_SAVE_DEQUANTIZE;
    so.cast = cast;
    tio_error ec, e;
    tio_error_clear(&ec);
    int check = tio_check_save(c, &so, &ec);
    size_t nb = 0;
    *bytes = NULL;
    tio_error_clear(&e);
    int rc = tio_save_memory(c, &so, bytes, &nb, &e);
    if (check != TIO_OK && (rc != check || strcmp(e.message, ec.message) != 0))
        fz_fail("%s save: tio_check_save says %s (%s), the save %s (%s)", label,
                tio_status_name(check), ec.message, tio_status_name(rc), e.message);
    if (rc != TIO_OK) {
        fz_check_error(rc, &e, NULL);
        check_encode_refusal(rc, &e, label);
        return NULL;
    }
    tio_open_options o = {0};
    o.format = "tenbin";
    o.limits = &fz_limits;
    tio_container *d = NULL;
    if (tio_open_memory(*bytes, nb, &o, &d, &e) != TIO_OK)
        fz_fail("%s save: what it wrote does not decode: %s", label, e.message);
    if (tio_container_count(d) != tio_container_count(c))
        fz_fail("%s save: %zu tensors, then %zu", label, tio_container_count(c),
                tio_container_count(d));
    return d;
}

/* The work that expands sparse tensors: the dense hash of every tensor
 * (TIO_OK, or TIO_E_LIMIT for a COO tensor over max_dense_bytes), and a
 * densifying, widening save to tenbin (dense only), which tio_check_save
 * must predict. What it writes must decode to the same tensors: same
 * shapes, and the same dense hashes where the dtype stayed. */
static void dense_work(const tio_container *c) {
    size_t n = tio_container_count(c);
    uint8_t(*dense)[32] = calloc(n ? n : 1, sizeof *dense);
    unsigned char *hashed = calloc(n ? n : 1, 1);
    if (!dense || !hashed) abort();
    tio_error e;
    for (size_t i = 0; i < n; i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        tio_error_clear(&e);
        int rc = tio_tensor_sha256(t, TIO_HASH_DENSE, dense[i], &e);
        if (rc == TIO_OK) {
            hashed[i] = 1;
            if (tio_tensor_layout(t) == TIO_LAYOUT_COO) check_dense_hash(t, dense[i], i);
        } else if (rc == TIO_E_LIMIT && tio_tensor_layout(t) == TIO_LAYOUT_COO) {
            fz_check_error(rc, &e, NULL);
            if (!strstr(e.message, "max_dense_bytes"))
                fz_fail("tensor %zu: the limit's refusal does not name it: %s", i, e.message);
        } else {
            fz_fail("tensor %zu: the dense hash failed with %s: %s", i, tio_status_name(rc),
                    e.message);
        }
    }
    void *b = NULL;
    tio_container *d = tenbin_save(c, NULL, "densifying", &b);
    if (d) {
        for (size_t i = 0; i < n; i++) {
            const tio_tensor *s = tio_container_tensor(c, i), *t = tio_container_tensor(d, i);
            size_t r = tio_tensor_rank(s);
            if (tio_tensor_layout(t) != TIO_LAYOUT_DENSE || tio_tensor_rank(t) != r ||
                (r && memcmp(tio_tensor_shape(s), tio_tensor_shape(t), r * sizeof(int64_t))))
                fz_fail("densifying save: tensor %zu changed its shape or layout", i);
            if (!hashed[i])
                fz_fail("densifying save: tensor %zu was written dense but cannot hash dense",
                        i);
            uint8_t h[32];
            hash_or_fail(t, TIO_HASH_DENSE, h, "densified");
            /* (a quantized tensor's hash is of its blocks; it is written dequantized) */
            if (tio_tensor_dtype(s) == tio_tensor_dtype(t) &&
                tio_tensor_layout(s) != TIO_LAYOUT_QUANT && memcmp(h, dense[i], 32) != 0)
                fz_fail("densifying save: tensor %zu: the dense hash changed", i);
        }
        tio_container_free(d);
        tio_free(b);
    }
    free(hashed);
    free(dense);
}

/* Whether d is a dtype tio_save_options.cast converts from. */
static int cast_source(tio_dtype d) {
    return d == TIO_FLOAT64 || d == TIO_FLOAT32 || d == TIO_FLOAT16 || d == TIO_BFLOAT16 ||
           d == TIO_FLOAT8_E4M3FN || d == TIO_FLOAT8_E5M2;
}

/* A save with a cast (tio_save_options.cast) of every float tensor, to
 * float16 or float64 as the input's size says, densifying and widening the
 * rest to tenbin: tio_check_save predicts it, what it writes decodes, every
 * tensor keeps its shape, the float ones have the target dtype, and the
 * others the dtype the save without a cast gives them. */
static void cast_work(const tio_container *c, size_t size) {
    const char *to = size % 2 ? "float16" : "float64";
    tio_dtype td = size % 2 ? TIO_FLOAT16 : TIO_FLOAT64;
    void *b = NULL;
    tio_container *d = tenbin_save(c, to, "cast", &b);
    size_t n = tio_container_count(c);
    if (!d) return;
    for (size_t i = 0; i < n; i++) {
        const tio_tensor *s = tio_container_tensor(c, i), *t = tio_container_tensor(d, i);
        size_t r = tio_tensor_rank(s);
        tio_dtype sd = tio_tensor_dtype(s), want = cast_source(sd) ? td : sd;
        if (sd == TIO_BOOL) want = TIO_UINT8; /* widened */
        if (tio_tensor_rank(t) != r ||
            (r && memcmp(tio_tensor_shape(s), tio_tensor_shape(t), r * sizeof(int64_t))))
            fz_fail("cast save: tensor %zu changed its shape", i);
        if (tio_tensor_dtype(t) != want)
            fz_fail("cast save: tensor %zu is %s, expected %s", i,
                    tio_dtype_name(tio_tensor_dtype(t)), tio_dtype_name(want));
    }
    tio_container_free(d);
    tio_free(b);
}

/* A model converted to the other model formats (ONNX at an opset the input
 * picks, opset conversions included; rten): refused by the error contract
 * or written as bytes that decode. */
/* Saves c as target (with options) and decodes the result: a refusal must
 * come from the error contract, a file written must decode. The decoded
 * container (its views point into *bytes: free that after it), or NULL. */
static tio_container *cross_one(const tio_container *c, const char *target, const char *options,
                                const char *cast, const char *label, void **bytes) {
    *bytes = NULL;
    tio_save_options so = {0};
    so.format = target;
    so.options = options;
    so.cast = cast;
    void *b = NULL;
    size_t n = 0;
    tio_error e;
    int rc = tio_save_memory(c, &so, &b, &n, &e);
    if (rc != TIO_OK) {
        fz_check_error(rc, &e, NULL);
        check_encode_refusal(rc, &e, label);
        return NULL;
    }
    tio_open_options o = {0};
    o.format = target;
    o.limits = &fz_limits;
    tio_container *d = NULL;
    if (tio_open_memory(b, n, &o, &d, &e) != TIO_OK)
        fz_fail("%s written from %s does not decode: %s", label, tio_container_format(c),
                e.message);
    *bytes = b;
    return d;
}

/* A model converts to every model format (ONNX at an opset the input picks,
 * ONNX with its weights cast to float16 or bfloat16, rten, tmfile with and
 * without convert_tool's fusions, tflite with and without its fusions and in
 * both layouts and with its weights cast to float16), and what ONNX and rten give back converts on to tmfile (the
 * graph layer's preparation and the tmfile lowering on graphs that came from
 * anywhere). */
static void cross_models(const tio_container *c, const uint8_t *data, size_t size) {
    if (!tio_container_graph(c)) return;
    char opt[32];
    snprintf(opt, sizeof opt, "opset=%u", 7u + (size ? data[size - 1] : 0u) % 20u);
    /* cast: 1 = float16 or bfloat16 as the input's size says, 2 = float16 */
    static const struct {
        const char *format, *options;
        int cast;
    } targets[] = {{"onnx", NULL, 0},   {"onnx", "", 0},       {"rten", NULL, 0},
                   {"onnx", NULL, 1},   {"tmfile", NULL, 0},   {"tmfile", "fuse=0", 0},
                   {"tflite", NULL, 0}, {"tflite", "fuse=0,layout=nchw", 0},
                   {"tflite", NULL, 2}};
    for (size_t k = 0; k < sizeof targets / sizeof targets[0]; k++) {
        const char *options = k == 1 ? opt : targets[k].options;
        const char *cast = !targets[k].cast                     ? NULL
                           : targets[k].cast == 1 && !(size % 2) ? "bfloat16"
                                                                 : "float16";
        void *b1, *b2;
        tio_container *d = cross_one(c, targets[k].format, options, cast,
                                     cast ? cast : options ? options : targets[k].format, &b1);
        if (d && k < 4) {
            tio_container_free(cross_one(d, "tmfile", NULL, NULL, "tmfile (second hop)", &b2));
            tio_free(b2);
        }
        tio_container_free(d);
        tio_free(b1);
    }
}

void fz_roundtrip_file(const uint8_t *data, size_t size, const char *format) {
    tio_open_options o = {0};
    o.format = format;
    o.limits = &fz_limits;
    tio_container *c1 = NULL;
    tio_error e;
    int rc = tio_open_memory(data, size, &o, &c1, &e);
    if (rc != TIO_OK) {
        fz_check_error(rc, &e, c1);
        return;
    }
    touch(c1);
    dense_work(c1);
    cast_work(c1, size);
    cross_models(c1, data, size);
    const char *fmt = tio_container_format(c1);
    if (!fmt) fz_fail("a decoded container has no format");
    tio_save_options so = {0};
    so.format = fmt;
    void *b1 = NULL;
    size_t n1 = 0;
    rc = tio_save_memory(c1, &so, &b1, &n1, &e);
    if (rc != TIO_OK) {
        check_encode_refusal(rc, &e, fmt);
        tio_container_free(c1);
        return;
    }
    o.format = fmt;
    tio_container *c2 = NULL;
    rc = tio_open_memory(b1, n1, &o, &c2, &e);
    if (rc != TIO_OK) fz_fail("%s: our own encoding does not decode: %s", fmt, e.message);
    fz_check_same(c1, c2, fmt);
    void *b2 = NULL;
    size_t n2 = 0;
    rc = tio_save_memory(c2, &so, &b2, &n2, &e);
    if (rc != TIO_OK) fz_fail("%s: our own decoded encoding does not encode: %s", fmt, e.message);
    if (n1 != n2 || memcmp(b1, b2, n1) != 0)
        fz_fail("%s: encode(decode(encode(x))) differs from encode(x) (%zu vs %zu bytes)", fmt,
                n1, n2);
    tio_free(b2);
    tio_container_free(c2);
    tio_free(b1);
    tio_container_free(c1);
}

size_t fz_split_parts(const uint8_t *data, size_t size, tio_part *parts) {
    size_t n = 0, pos = 0;
    while (n < FZ_MAX_PARTS - 1 && size - pos >= 2) {
        size_t len = (size_t)data[pos] | (size_t)data[pos + 1] << 8;
        pos += 2;
        if (len > size - pos) break;
        parts[n].data = data + pos;
        parts[n].size = len;
        n++;
        pos += len;
    }
    if (pos < size || n == 0) {
        parts[n].data = data + pos;
        parts[n].size = size - pos;
        n++;
    }
    return n;
}

void fz_roundtrip_parts(const uint8_t *data, size_t size, const char *format) {
    tio_part parts[FZ_MAX_PARTS];
    size_t np = fz_split_parts(data, size, parts);
    tio_open_options o = {0};
    o.format = format;
    o.limits = &fz_limits;
    tio_container *c1 = NULL;
    tio_error e;
    int rc = tio_open_parts(parts, np, &o, &c1, &e);
    if (rc != TIO_OK) {
        fz_check_error(rc, &e, c1);
        return;
    }
    touch(c1);
    dense_work(c1);
    const char *fmt = tio_container_format(c1);
    if (!fmt) fz_fail("a decoded message has no format");
    tio_save_options so = {0};
    so.format = fmt;
    tio_message *m1 = NULL;
    rc = tio_message_encode(c1, &so, &m1, &e);
    if (rc != TIO_OK) {
        check_encode_refusal(rc, &e, fmt);
        tio_container_free(c1);
        return;
    }
    size_t n1 = tio_message_part_count(m1);
    if (n1 > FZ_MAX_PARTS * 4) fz_fail("%s: %zu parts from %zu", fmt, n1, np);
    tio_part *p1 = calloc(n1 ? n1 : 1, sizeof *p1);
    if (!p1) abort();
    for (size_t i = 0; i < n1; i++) p1[i] = tio_message_part(m1, i);
    o.format = fmt;
    tio_container *c2 = NULL;
    rc = tio_open_parts(p1, n1, &o, &c2, &e);
    if (rc != TIO_OK) fz_fail("%s: our own message does not decode: %s", fmt, e.message);
    fz_check_same(c1, c2, fmt);
    /* The message keeps what it lends alive: p1 stays valid without c1. */
    tio_container_free(c1);
    tio_message *m2 = NULL;
    rc = tio_message_encode(c2, &so, &m2, &e);
    if (rc != TIO_OK) fz_fail("%s: our own decoded message does not encode: %s", fmt, e.message);
    if (tio_message_part_count(m2) != n1) fz_fail("%s: re-encoding changed the part count", fmt);
    for (size_t i = 0; i < n1; i++) {
        tio_part a = p1[i], b = tio_message_part(m2, i);
        if (a.size != b.size || (a.size && memcmp(a.data, b.data, a.size) != 0))
            fz_fail("%s: re-encoding changed part %zu", fmt, i);
    }
    tio_message_free(m2);
    tio_container_free(c2);
    free(p1);
    tio_message_free(m1);
}
