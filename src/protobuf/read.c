/* Protobuf wire reader: fields, varints, fixed values, length-delimited views,
 * packed repeated ranges. Allocates nothing and never recurses: a nested
 * message is another tio_pb_reader over a sub-range of the same input, made
 * by the caller (tio__pb_sub), which bounds the depth.
 *
 * Like the FlatBuffers verifier, the reader keeps its own positions rather
 * than a tio_cursor: a cursor's end is the end of the input and its offsets
 * start at its buffer, while here every read is bounded by the end of the
 * message being read and messages name absolute file offsets (base + index).
 * Every length is compared with the bytes left (end - pos) before any
 * position is computed, so no sum can overflow. */
#include "protobuf/pb.h"

#include <stdarg.h>
#include <stdio.h>

const char *tio__pb_wire_name(unsigned wire) {
    switch (wire) {
    case 0: return "varint";
    case 1: return "fixed64";
    case 2: return "length-delimited";
    case 3: return "start group";
    case 4: return "end group";
    case 5: return "fixed32";
    default: return "invalid";
    }
}

/* ------------------------------------------------------------ errors */

/* Fills *err with "<format>: offset <base+at>: field <n> (<name>): <text>";
 * the field part is left out when number is 0, the name when NULL. */
static int perr(const tio_pb_reader *r, tio_error *err, int code, size_t at,
                uint64_t number, const char *name, const char *fmt, ...) TIO_PRINTF(7, 8);

static int perr(const tio_pb_reader *r, tio_error *err, int code, size_t at,
                uint64_t number, const char *name, const char *fmt, ...) {
    char text[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    int64_t off = (int64_t)(r->base + at);
    if (number && name)
        return tio__err(err, code, r->format, off, "field %llu (%s): %s",
                        (unsigned long long)number, name, text);
    if (number)
        return tio__err(err, code, r->format, off, "field %llu: %s",
                        (unsigned long long)number, text);
    return tio__err(err, code, r->format, off, "%s", text);
}

/* A value of `need` bytes (0: a varint) at `at` runs past `end`:
 * TIO_E_TRUNCATED at the end of the input, TIO_E_BOUNDS at the end of a
 * length-delimited value. */
static int overrun(const tio_pb_reader *r, tio_error *err, size_t at, size_t end,
                   uint64_t number, const char *what, uint64_t need) {
    bool eof = !r->inner;
    const char *where = eof ? "the data" : "its message";
    unsigned long long left = (unsigned long long)(end - at);
    unsigned long long endoff = (unsigned long long)(r->base + end);
    int code = eof ? TIO_E_TRUNCATED : TIO_E_BOUNDS;
    if (need == 0)
        return perr(r, err, code, at, number, NULL,
                    "%s: varint runs past the end of %s at offset %llu (expected a final "
                    "byte below 0x80, found %llu bytes with the continuation bit)",
                    what, where, endoff, left);
    return perr(r, err, code, at, number, NULL,
                "%s: expected %llu bytes, found %llu before the end of %s at offset %llu",
                what, (unsigned long long)need, left, where, endoff);
}

/* ------------------------------------------------------------ varints */

enum { VARINT_OK, VARINT_SHORT, VARINT_LONG, VARINT_OVERFLOW };

/* Decodes buf[pos..end) into *v and *next. */
static int vdec(const uint8_t *buf, size_t pos, size_t end, uint64_t *v, size_t *next) {
    if (pos < end && buf[pos] < 0x80) { /* one byte: most tags and small values */
        *v = buf[pos];
        *next = pos + 1;
        return VARINT_OK;
    }
    uint64_t x = 0;
    for (unsigned i = 0; i < TIO_PB_MAX_VARINT; i++) {
        if (end - pos <= i) return VARINT_SHORT;
        uint8_t b = buf[pos + i];
        if (i == TIO_PB_MAX_VARINT - 1) {
            if (b & 0x80) return VARINT_LONG;
            if (b > 1) return VARINT_OVERFLOW;
        }
        x |= (uint64_t)(b & 0x7Fu) << (7u * i);
        if (!(b & 0x80)) {
            *v = x;
            *next = pos + i + 1;
            return VARINT_OK;
        }
    }
    return VARINT_LONG; /* not reached */
}

/* n bytes at buf[pos] (pos + n <= size), as tio_pb_head says: from a pread
 * window that has them; else by a new pread when the read is far from the
 * last, or the first close one after a far one (tio__headsrc_get reads the
 * headers around it); else (a run of close reads) from the mapping. */
static const uint8_t *pb_at(const tio_pb_reader *r, size_t pos, size_t n) {
    tio_pb_head *h = r->head;
    if (!h || !n) return r->buf + pos;
    tio_headsrc *s = h->src;
    size_t last = h->last;
    h->last = pos;
    const uint8_t *held = tio__headsrc_held(s, pos, n);
    if (held) return held;
    bool close = (pos > last ? pos - last : last - pos) <= TIO__HEAD_WINDOW;
    h->mode = !close ? 0 : h->mode < 2 ? h->mode + 1 : 2;
    const uint8_t *p = h->mode < 2 ? tio__headsrc_get(s, pos, n) : NULL;
    return p ? p : r->buf + pos;
}

static int varint_at(const tio_pb_reader *r, size_t *pos, size_t end, uint64_t *v,
                     uint64_t number, const char *what, tio_error *err) {
    size_t next = 0, n = *pos < end ? end - *pos : 0;
    if (n > TIO_PB_MAX_VARINT) n = TIO_PB_MAX_VARINT;
    const uint8_t *b = pb_at(r, *pos, n); /* b[0] is buf[*pos] */
    switch (vdec(b, 0, n, v, &next)) {
    case VARINT_OK:
        *pos += next;
        return TIO_OK;
    case VARINT_SHORT:
        return overrun(r, err, *pos, end, number, what, 0);
    case VARINT_LONG:
        return perr(r, err, TIO_E_CORRUPT, *pos, number, NULL,
                    "%s: varint longer than %u bytes (the 10th byte 0x%02x has the "
                    "continuation bit)",
                    what, TIO_PB_MAX_VARINT, b[TIO_PB_MAX_VARINT - 1]);
    default:
        return perr(r, err, TIO_E_CORRUPT, *pos, number, NULL,
                    "%s: varint overflows 64 bits (10th byte 0x%02x, expected 0x00 or "
                    "0x01)",
                    what, b[TIO_PB_MAX_VARINT - 1]);
    }
}

int tio__pb_varint(const tio_pb_reader *r, size_t *pos, size_t end, uint64_t *v,
                   const char *what, tio_error *err) {
    if (end > r->size || *pos > end)
        return tio__err(err, TIO_E_ARGUMENT, r->format, -1,
                        "protobuf: varint range [%zu, %zu) outside the input (%zu bytes)",
                        *pos, end, r->size);
    return varint_at(r, pos, end, v, 0, what, err);
}

/* ------------------------------------------------------------ fields */

void tio__pb_init(tio_pb_reader *r, const uint8_t *buf, size_t size, uint64_t base,
                  const char *format, uint32_t max_depth) {
    r->buf = buf;
    r->size = buf ? size : 0;
    r->pos = 0;
    r->end = r->size;
    r->base = base;
    r->format = format;
    r->depth = 1;
    r->max_depth = max_depth ? max_depth : 1;
    r->inner = false;
    r->head = NULL;
}

void tio__pb_use_head(tio_pb_reader *r, tio_pb_head *ph, tio_headsrc *src) {
    /* the window's offsets are indices into buf: the same file from 0 */
    bool ok = src && r->buf && src->base == r->buf && r->size <= src->size;
    ph->src = src;
    ph->last = 0;
    ph->mode = 0;
    r->head = ok ? ph : NULL;
}

const uint8_t *tio__pb_peek(const tio_pb_reader *r, const tio_pb_field *f) {
    return pb_at(r, f->data, (size_t)f->u); /* in the input: tio__pb_next */
}

int tio__pb_next(tio_pb_reader *r, tio_pb_field *f, tio_error *err) {
    size_t p = r->pos, end = r->end;
    if (p >= end)
        return tio__err(err, TIO_E_ARGUMENT, r->format, (int64_t)(r->base + p),
                        "protobuf: no field left in the message");
    uint64_t tag;
    int rc = varint_at(r, &p, end, &tag, 0, "field tag", err);
    if (rc) return rc;
    uint64_t number = tag >> 3;
    unsigned wire = (unsigned)(tag & 7u);
    if (number == 0)
        return perr(r, err, TIO_E_CORRUPT, r->pos, 0, NULL,
                    "field tag 0x%llx: field number 0 (expected 1..%u)",
                    (unsigned long long)tag, TIO_PB_MAX_FIELD);
    if (number > TIO_PB_MAX_FIELD)
        return perr(r, err, TIO_E_CORRUPT, r->pos, 0, NULL,
                    "field tag 0x%llx: field number %llu (expected 1..%u)",
                    (unsigned long long)tag, (unsigned long long)number, TIO_PB_MAX_FIELD);
    f->number = (uint32_t)number;
    f->wire = (uint8_t)wire;
    f->at = r->pos;
    f->vat = p;
    f->data = p;
    switch (wire) {
    case TIO_PB_VARINT:
        rc = varint_at(r, &p, end, &f->u, number, "varint value", err);
        if (rc) return rc;
        break;
    case TIO_PB_I64:
    case TIO_PB_I32: {
        size_t n = wire == TIO_PB_I64 ? 8 : 4;
        if (end - p < n)
            return overrun(r, err, p, end, number, tio__pb_wire_name(wire), n);
        const uint8_t *b = pb_at(r, p, n);
        f->u = n == 8 ? tio__ld64(b) : tio__ld32(b);
        p += n;
        break;
    }
    case TIO_PB_LEN:
        rc = varint_at(r, &p, end, &f->u, number, "length", err);
        if (rc) return rc;
        if (f->u > (uint64_t)(end - p))
            return perr(r, err, r->inner ? TIO_E_BOUNDS : TIO_E_TRUNCATED, f->vat, number,
                        NULL,
                        "length %llu exceeds the %llu bytes left in %s (which ends at "
                        "offset %llu)",
                        (unsigned long long)f->u, (unsigned long long)(end - p),
                        r->inner ? "its message" : "the data",
                        (unsigned long long)(r->base + end));
        f->data = p;
        p += (size_t)f->u;
        break;
    case 3:
    case 4:
        return perr(r, err, TIO_E_UNSUPPORTED, r->pos, number, NULL,
                    "wire type %u (%s): groups are not supported (expected 0, 1, 2 or 5)",
                    wire, tio__pb_wire_name(wire));
    default:
        return perr(r, err, TIO_E_CORRUPT, r->pos, number, NULL,
                    "wire type %u is not a protobuf wire type (expected 0, 1, 2 or 5)",
                    wire);
    }
    r->pos = p;
    return TIO_OK;
}

int tio__pb_expect(const tio_pb_reader *r, const tio_pb_field *f, tio_pb_wire wire,
                   const char *name, tio_error *err) {
    if (f->wire == (uint8_t)wire) return TIO_OK;
    return perr(r, err, TIO_E_CORRUPT, f->at, f->number, name,
                "wire type %u (%s), expected %u (%s)", f->wire, tio__pb_wire_name(f->wire),
                (unsigned)wire, tio__pb_wire_name((unsigned)wire));
}

int tio__pb_sub(const tio_pb_reader *r, const tio_pb_field *f, const char *name,
                tio_pb_reader *sub, tio_error *err) {
    int rc = tio__pb_expect(r, f, TIO_PB_LEN, name, err);
    if (rc) return rc;
    if (r->depth >= r->max_depth)
        return perr(r, err, TIO_E_LIMIT, f->at, f->number, name,
                    "nested message at depth %lu exceeds the depth limit (%lu)",
                    (unsigned long)r->depth + 1, (unsigned long)r->max_depth);
    *sub = *r;
    sub->pos = f->data;
    sub->end = f->data + (size_t)f->u; /* checked by tio__pb_next */
    sub->depth = r->depth + 1;
    sub->inner = true;
    return TIO_OK;
}

/* ----------------------------------------------------- packed repeated */

int tio__pb_packed_init(const tio_pb_reader *r, const tio_pb_field *f, tio_pb_wire elem,
                        const char *name, tio_pb_packed *p, tio_error *err) {
    size_t size = elem == TIO_PB_I32 ? 4 : elem == TIO_PB_I64 ? 8 : 0;
    if (elem != TIO_PB_VARINT && size == 0)
        return tio__err(err, TIO_E_ARGUMENT, r->format, -1,
                        "protobuf: wire type %u is not a packable element type",
                        (unsigned)elem);
    p->r = *r;
    p->elem = (uint8_t)elem;
    p->single = false;
    p->value = 0;
    if (f->wire == (uint8_t)elem) { /* one unpacked element */
        p->single = true;
        p->value = f->u;
        p->r.pos = p->r.end = f->data;
        return TIO_OK;
    }
    if (f->wire != TIO_PB_LEN)
        return perr(r, err, TIO_E_CORRUPT, f->at, f->number, name,
                    "wire type %u (%s), expected 2 (packed) or %u (%s)", f->wire,
                    tio__pb_wire_name(f->wire), (unsigned)elem,
                    tio__pb_wire_name((unsigned)elem));
    if (size && f->u % size)
        return perr(r, err, TIO_E_CORRUPT, f->vat, f->number, name,
                    "packed %s length %llu is not a multiple of %zu",
                    tio__pb_wire_name((unsigned)elem), (unsigned long long)f->u, size);
    p->r.pos = f->data;
    p->r.end = f->data + (size_t)f->u;
    p->r.inner = true;
    return TIO_OK;
}

int tio__pb_packed_next(tio_pb_packed *p, uint64_t *v, tio_error *err) {
    tio_pb_reader *r = &p->r;
    if (p->single) {
        p->single = false;
        *v = p->value;
        return TIO_OK;
    }
    if (r->pos >= r->end)
        return tio__err(err, TIO_E_ARGUMENT, r->format, (int64_t)(r->base + r->pos),
                        "protobuf: no element left in the packed field");
    if (p->elem == TIO_PB_VARINT)
        return varint_at(r, &r->pos, r->end, v, 0, "packed element", err);
    size_t n = p->elem == TIO_PB_I64 ? 8 : 4;
    if (r->end - r->pos < n) /* not after tio__pb_packed_init's check */
        return overrun(r, err, r->pos, r->end, 0, "packed element", n);
    const uint8_t *b = pb_at(r, r->pos, n);
    *v = n == 8 ? tio__ld64(b) : tio__ld32(b);
    r->pos += n;
    return TIO_OK;
}

int tio__pb_packed_count(const tio_pb_reader *r, const tio_pb_field *f, tio_pb_wire elem,
                         const char *name, uint64_t *count, tio_error *err) {
    tio_pb_packed p;
    memset(&p, 0, sizeof p); /* set by the init on success; gcc -O2 cannot tell */
    int rc = tio__pb_packed_init(r, f, elem, name, &p, err);
    if (rc) return rc;
    if (p.single) {
        *count = 1;
        return TIO_OK;
    }
    size_t len = p.r.end - p.r.pos;
    if (elem != TIO_PB_VARINT) {
        *count = len / (elem == TIO_PB_I64 ? 8u : 4u);
        return TIO_OK;
    }
    const uint8_t *b = pb_at(r, p.r.pos, len);
    uint64_t n = 0;
    size_t start = 0; /* of the varint being counted */
    for (size_t i = 0; i < len; i++) {
        if (b[i] < 0x80) {
            n++;
            start = i + 1;
        }
    }
    if (start != len)
        return overrun(&p.r, err, p.r.pos + start, p.r.end, f->number, "packed element", 0);
    *count = n;
    return TIO_OK;
}
