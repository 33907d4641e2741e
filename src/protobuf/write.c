/* Protobuf wire writer: two passes over the caller's emit function.
 *
 * Why two passes into the sink rather than a growable buffer: a nested
 * message's length prefix comes before its content and, to be canonical, is
 * the minimal varint of the content's size, so its width is known only once
 * the content is. Building children in a buffer and copying them behind the
 * prefix copies each byte once per enclosing level and holds the whole tree
 * (a model's weights) in memory; reserving a fixed-width prefix and patching
 * it is not canonical. Measuring first costs one call of `emit` that only
 * adds sizes (no data are touched: tensor bytes are not even produced) and
 * one uint64 per nested message; the second pass then streams every byte to
 * the sink exactly once, large payloads by reference (tio__sink_write_ref),
 * so a save keeps the sink's memory bound. */
#include "protobuf/pb.h"

#include "core/sink.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct pb_frame {
    size_t k;       /* index of the message in opening order */
    uint64_t start; /* position of its first content byte */
} pb_frame;

struct tio_pb_writer {
    tio_sink *sink;     /* NULL while sizing */
    const char *format;
    uint64_t pos;       /* bytes emitted in this pass */
    uint64_t *sizes;    /* content size of nested message k */
    size_t nsizes, sizes_cap;
    size_t next;        /* writing pass: the next message to open */
    pb_frame *stack;    /* open nested messages */
    size_t depth, stack_cap;
    int failed;
};

/* Records a failure (*err already filled) and returns its code: every later
 * call returns it too. */
static int fail(tio_pb_writer *w, int code) {
    w->failed = code;
    return code;
}

#define WERR(w, err, code, ...) \
    fail(w, tio__err(err, code, (w)->format, -1, "protobuf writer: " __VA_ARGS__))

static int guard(tio_pb_writer *w, uint32_t number, tio_error *err) {
    if (w->failed)
        return tio__err(err, w->failed, w->format, -1,
                        "protobuf writer: field %lu after an earlier error",
                        (unsigned long)number);
    if (number == 0 || number > TIO_PB_MAX_FIELD)
        return WERR(w, err, TIO_E_ARGUMENT, "field number %lu (expected 1..%u)",
                    (unsigned long)number, TIO_PB_MAX_FIELD);
    return TIO_OK;
}

static size_t venc(uint8_t *out, uint64_t v) {
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80u);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

static size_t vsize(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Emits n bytes: counted while sizing, else written (referenced when ref). */
static int out(tio_pb_writer *w, const void *p, size_t n, bool ref, tio_error *err) {
    uint64_t pos;
    if (tio__add64_ovf(w->pos, n, &pos))
        return WERR(w, err, TIO_E_OVERFLOW, "output size overflows 64 bits");
    if (w->sink && n) {
        int rc = ref ? tio__sink_write_ref(w->sink, p, n, err)
                     : tio__sink_write(w->sink, p, n, err);
        if (rc) return fail(w, rc);
    }
    w->pos = pos;
    return TIO_OK;
}

/* Emits a tag and, unless `has_value` is false, the varint v after it. */
static int tag_varint(tio_pb_writer *w, uint32_t number, unsigned wire, bool has_value,
                      uint64_t v, tio_error *err) {
    int rc = guard(w, number, err);
    if (rc) return rc;
    uint8_t b[2 * TIO_PB_MAX_VARINT];
    size_t n = venc(b, ((uint64_t)number << 3) | wire);
    if (has_value) n += venc(b + n, v);
    return out(w, b, n, false, err);
}

bool tio__pb_sizing(const tio_pb_writer *w) { return w->sink == NULL; }

int tio__pb_put_varint(tio_pb_writer *w, uint32_t number, uint64_t v, tio_error *err) {
    return tag_varint(w, number, TIO_PB_VARINT, true, v, err);
}

int tio__pb_put_fixed32(tio_pb_writer *w, uint32_t number, uint32_t bits, tio_error *err) {
    uint8_t b[4];
    tio__st32(b, bits);
    int rc = tag_varint(w, number, TIO_PB_I32, false, 0, err);
    return rc ? rc : out(w, b, 4, false, err);
}

int tio__pb_put_fixed64(tio_pb_writer *w, uint32_t number, uint64_t bits, tio_error *err) {
    uint8_t b[8];
    tio__st64(b, bits);
    int rc = tag_varint(w, number, TIO_PB_I64, false, 0, err);
    return rc ? rc : out(w, b, 8, false, err);
}

int tio__pb_put_float(tio_pb_writer *w, uint32_t number, float v, tio_error *err) {
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return tio__pb_put_fixed32(w, number, bits, err);
}

int tio__pb_put_double(tio_pb_writer *w, uint32_t number, double v, tio_error *err) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return tio__pb_put_fixed64(w, number, bits, err);
}

int tio__pb_put_len(tio_pb_writer *w, uint32_t number, const void *p, size_t n, bool ref,
                    tio_error *err) {
    if (!p && n && w->sink)
        return WERR(w, err, TIO_E_ARGUMENT, "field %lu: NULL data for %zu bytes",
                    (unsigned long)number, n);
    int rc = tag_varint(w, number, TIO_PB_LEN, true, n, err);
    return rc ? rc : out(w, p, n, ref, err);
}

int tio__pb_put_len_by(tio_pb_writer *w, uint32_t number, size_t n, tio_pb_put_fn put,
                       void *ctx, tio_error *err) {
    int rc = tag_varint(w, number, TIO_PB_LEN, true, n, err);
    if (rc || !w->sink) return rc ? rc : out(w, NULL, n, false, err);
    uint64_t at = tio__sink_pos(w->sink);
    if ((rc = put(ctx, w->sink, err))) return fail(w, rc);
    uint64_t wrote = tio__sink_pos(w->sink) - at;
    if (wrote != n)
        return WERR(w, err, TIO_E_ARGUMENT, "field %lu: %llu bytes written for %zu",
                    (unsigned long)number, (unsigned long long)wrote, n);
    w->pos += n; /* no overflow: the sink holds it */
    return TIO_OK;
}

/* Packed varints: element i is get(v, i). Sized in one loop, then written in
 * chunks. */
typedef uint64_t (*pb_get)(const void *v, size_t i);
static uint64_t get_u64(const void *v, size_t i) { return ((const uint64_t *)v)[i]; }
static uint64_t get_i32(const void *v, size_t i) {
    return (uint64_t)(int64_t)((const int32_t *)v)[i];
}

static int put_packed_varints(tio_pb_writer *w, uint32_t number, const void *v, size_t n,
                              pb_get get, tio_error *err) {
    if (n == 0) return guard(w, number, err);
    uint64_t len = 0;
    for (size_t i = 0; i < n; i++) len += vsize(get(v, i)); /* <= 10 n: no overflow */
    int rc = tag_varint(w, number, TIO_PB_LEN, true, len, err);
    if (rc) return rc;
    if (!w->sink) return out(w, NULL, (size_t)len, false, err);
    uint8_t chunk[512];
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        if (used > sizeof chunk - TIO_PB_MAX_VARINT) {
            if ((rc = out(w, chunk, used, false, err))) return rc;
            used = 0;
        }
        used += venc(chunk + used, get(v, i));
    }
    return out(w, chunk, used, false, err);
}

int tio__pb_put_packed_u64(tio_pb_writer *w, uint32_t number, const uint64_t *v, size_t n,
                           tio_error *err) {
    return put_packed_varints(w, number, v, n, get_u64, err);
}

int tio__pb_put_packed_i32(tio_pb_writer *w, uint32_t number, const int32_t *v, size_t n,
                           tio_error *err) {
    return put_packed_varints(w, number, v, n, get_i32, err);
}

int tio__pb_put_packed_fixed(tio_pb_writer *w, uint32_t number, const void *le, size_t n,
                             size_t size, tio_error *err) {
    if (size != 4 && size != 8)
        return WERR(w, err, TIO_E_ARGUMENT, "field %lu: packed element size %zu (expected 4 "
                    "or 8)", (unsigned long)number, size);
    if (n == 0) return guard(w, number, err);
    size_t len;
    if (tio__mul_ovf(n, size, &len))
        return WERR(w, err, TIO_E_OVERFLOW, "field %lu: %zu packed elements of %zu bytes",
                    (unsigned long)number, n, size);
    return tio__pb_put_len(w, number, le, len, false, err);
}

/* ------------------------------------------------------ nested messages */

/* p grown to hold `need` elements (*cap updated), or NULL with *err filled
 * and the writer failed. */
static void *grow(tio_pb_writer *w, void *p, size_t *cap, size_t need, size_t elem,
                  tio_error *err) {
    void *q = tio__pb_grow(p, cap, need, elem);
    if (!q) fail(w, tio__nomem(err, w->format));
    return q;
}

int tio__pb_begin(tio_pb_writer *w, uint32_t number, tio_error *err) {
    int rc = guard(w, number, err);
    if (rc) return rc;
    pb_frame *st = grow(w, w->stack, &w->stack_cap, w->depth + 1, sizeof *st, err);
    if (!st) return TIO_E_NOMEM;
    w->stack = st;
    size_t k;
    if (!w->sink) { /* sizing: the size is recorded at the end */
        uint64_t *sz = grow(w, w->sizes, &w->sizes_cap, w->nsizes + 1, sizeof *sz, err);
        if (!sz) return TIO_E_NOMEM;
        w->sizes = sz;
        k = w->nsizes++;
        w->sizes[k] = 0;
        rc = tag_varint(w, number, TIO_PB_LEN, false, 0, err);
    } else {
        if (w->next >= w->nsizes)
            return WERR(w, err, TIO_E_ARGUMENT,
                        "field %lu: nested message %zu was not opened while sizing "
                        "(emit differs between its two passes)",
                        (unsigned long)number, w->next);
        k = w->next++;
        rc = tag_varint(w, number, TIO_PB_LEN, true, w->sizes[k], err);
    }
    if (rc) return rc;
    w->stack[w->depth].k = k;
    w->stack[w->depth].start = w->pos;
    w->depth++;
    return TIO_OK;
}

int tio__pb_end(tio_pb_writer *w, tio_error *err) {
    if (w->failed)
        return tio__err(err, w->failed, w->format, -1,
                        "protobuf writer: end of a message after an earlier error");
    if (w->depth == 0)
        return WERR(w, err, TIO_E_ARGUMENT, "end without a message begun");
    pb_frame fr = w->stack[--w->depth];
    uint64_t size = w->pos - fr.start;
    if (!w->sink) {
        w->sizes[fr.k] = size;
        uint8_t b[TIO_PB_MAX_VARINT];
        return out(w, b, venc(b, size), false, err); /* the prefix, counted */
    }
    if (size != w->sizes[fr.k])
        return WERR(w, err, TIO_E_ARGUMENT,
                    "nested message %zu: %llu bytes written, %llu measured (emit differs "
                    "between its two passes)",
                    fr.k, (unsigned long long)size, (unsigned long long)w->sizes[fr.k]);
    return TIO_OK;
}

/* ------------------------------------------------------------- driver */

static int run_pass(tio_pb_writer *w, tio_pb_emit_fn emit, void *ctx, tio_error *err) {
    int rc = emit(w, ctx, err);
    if (rc) return rc;
    if (w->failed) return w->failed; /* an error emit did not pass on */
    if (w->depth)
        return WERR(w, err, TIO_E_ARGUMENT, "%zu nested message(s) begun and not ended",
                    w->depth);
    return TIO_OK;
}

int tio__pb_write(tio_sink *s, const char *format, tio_pb_emit_fn emit, void *ctx,
                  tio_error *err) {
    if (!s || !emit)
        return tio__err(err, TIO_E_ARGUMENT, format, -1,
                        "protobuf writer: NULL sink or emit function");
    tio_pb_writer w;
    memset(&w, 0, sizeof w);
    w.format = format;
    int rc = run_pass(&w, emit, ctx, err);
    if (rc == TIO_OK) {
        uint64_t measured = w.pos;
        w.sink = s;
        w.pos = 0;
        rc = run_pass(&w, emit, ctx, err);
        if (rc == TIO_OK && (w.next != w.nsizes || w.pos != measured))
            rc = WERR(&w, err, TIO_E_ARGUMENT,
                      "%llu bytes in %zu nested messages written, %llu in %zu measured "
                      "(emit differs between its two passes)",
                      (unsigned long long)w.pos, w.next, (unsigned long long)measured,
                      w.nsizes);
    }
    free(w.sizes);
    free(w.stack);
    return rc;
}
