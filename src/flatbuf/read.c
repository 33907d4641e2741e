/* FlatBuffers accessors: bounds-checked reads that stay memory-safe on any
 * bytes (an unverified buffer yields "absent" or the default, never an
 * out-of-bounds read). All loads are byte loads, so the buffer may sit at
 * any address. */
#include "flatbuf/flatbuf.h"

#include <stdlib.h>
#include <string.h>

size_t tio__fb_scalar_size(int kind) {
    switch (kind) {
    case TIO_FB_BOOL:
    case TIO_FB_I8:
    case TIO_FB_U8:
        return 1;
    case TIO_FB_I16:
    case TIO_FB_U16:
        return 2;
    case TIO_FB_I32:
    case TIO_FB_U32:
    case TIO_FB_F32:
        return 4;
    case TIO_FB_I64:
    case TIO_FB_U64:
    case TIO_FB_F64:
        return 8;
    default:
        return 0;
    }
}

/* A table at `pos`: soffset, vtable and its size in bounds. */
static bool table_at(const uint8_t *buf, size_t len, size_t pos, tio_fb_ref *out) {
    if (!buf || len < 4 || pos > len - 4) return false;
    int32_t so = (int32_t)tio__ld32(buf + pos);
    int64_t vt = (int64_t)pos - (int64_t)so;
    if (vt < 0 || (uint64_t)vt > (uint64_t)(len - 4)) return false;
    size_t v = (size_t)vt;
    uint16_t vtsize = tio__ld16(buf + v);
    if (vtsize < 4 || vtsize > len - v) return false;
    out->buf = buf;
    out->len = len;
    out->pos = pos;
    out->vt = v;
    out->vtsize = vtsize;
    return true;
}

/* Position of a uoffset's target, or false when it is 0, negative as an
 * soffset (>= 2^31) or outside the buffer. `at` is the uoffset's position. */
static bool deref(const uint8_t *buf, size_t len, size_t at, size_t *target) {
    if (!buf || len < 4 || at > len - 4) return false;
    uint32_t u = tio__ld32(buf + at);
    if (u == 0 || u > (uint32_t)INT32_MAX) return false;
    size_t t;
    if (tio__add_ovf(at, (size_t)u, &t) || t >= len) return false;
    *target = t;
    return true;
}

bool tio__fb_root(const uint8_t *buf, size_t len, tio_fb_ref *out) {
    size_t pos;
    if (!out || !deref(buf, len, 0, &pos)) return false;
    return table_at(buf, len, pos, out);
}

unsigned tio__fb_slot_count(const tio_fb_ref *t) {
    if (!t || !t->buf || t->vtsize < 4) return 0;
    return (unsigned)(t->vtsize - 4u) / 2u;
}

/* Field position when the field's `size` bytes lie inside both the object
 * (per the vtable's object size) and the buffer; 0 otherwise. */
static size_t field_pos_sized(const tio_fb_ref *t, unsigned id, size_t size) {
    if (!t || !t->buf || id >= tio__fb_slot_count(t)) return 0;
    /* table_at guaranteed vt + vtsize <= len and vtsize >= 4 */
    if (t->vt > t->len || t->vtsize > t->len - t->vt) return 0;
    size_t slot = t->vt + 4u + 2u * (size_t)id;
    uint16_t off = tio__ld16(t->buf + slot);
    if (off == 0) return 0;
    uint16_t objsize = tio__ld16(t->buf + t->vt + 2);
    if ((size_t)off + size > objsize) return 0;
    size_t fp;
    if (tio__add_ovf(t->pos, off, &fp) || fp > t->len || size > t->len - fp) return 0;
    return fp;
}

size_t tio__fb_field_pos(const tio_fb_ref *t, unsigned id) {
    return field_pos_sized(t, id, 1);
}

bool tio__fb_bool(const tio_fb_ref *t, unsigned id, bool def) {
    size_t p = field_pos_sized(t, id, 1);
    return p ? t->buf[p] != 0 : def;
}

uint8_t tio__fb_u8(const tio_fb_ref *t, unsigned id, uint8_t def) {
    size_t p = field_pos_sized(t, id, 1);
    return p ? t->buf[p] : def;
}

int8_t tio__fb_i8(const tio_fb_ref *t, unsigned id, int8_t def) {
    size_t p = field_pos_sized(t, id, 1);
    return p ? (int8_t)t->buf[p] : def;
}

uint16_t tio__fb_u16(const tio_fb_ref *t, unsigned id, uint16_t def) {
    size_t p = field_pos_sized(t, id, 2);
    return p ? tio__ld16(t->buf + p) : def;
}

int16_t tio__fb_i16(const tio_fb_ref *t, unsigned id, int16_t def) {
    size_t p = field_pos_sized(t, id, 2);
    return p ? (int16_t)tio__ld16(t->buf + p) : def;
}

uint32_t tio__fb_u32(const tio_fb_ref *t, unsigned id, uint32_t def) {
    size_t p = field_pos_sized(t, id, 4);
    return p ? tio__ld32(t->buf + p) : def;
}

int32_t tio__fb_i32(const tio_fb_ref *t, unsigned id, int32_t def) {
    size_t p = field_pos_sized(t, id, 4);
    return p ? (int32_t)tio__ld32(t->buf + p) : def;
}

uint64_t tio__fb_u64(const tio_fb_ref *t, unsigned id, uint64_t def) {
    size_t p = field_pos_sized(t, id, 8);
    return p ? tio__ld64(t->buf + p) : def;
}

int64_t tio__fb_i64(const tio_fb_ref *t, unsigned id, int64_t def) {
    size_t p = field_pos_sized(t, id, 8);
    return p ? (int64_t)tio__ld64(t->buf + p) : def;
}

float tio__fb_f32(const tio_fb_ref *t, unsigned id, float def) {
    size_t p = field_pos_sized(t, id, 4);
    if (!p) return def;
    uint32_t bits = tio__ld32(t->buf + p);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

double tio__fb_f64(const tio_fb_ref *t, unsigned id, double def) {
    size_t p = field_pos_sized(t, id, 8);
    if (!p) return def;
    uint64_t bits = tio__ld64(t->buf + p);
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* A schema default as int64 without undefined conversions: out-of-range
 * values (only possible for u64 defaults) are bit-cast, NaN gives 0. */
static int64_t def_to_i64(double d) {
    if (d >= -9223372036854775808.0 && d < 9223372036854775808.0) return (int64_t)d;
    if (d >= 9223372036854775808.0 && d < 18446744073709551616.0)
        return (int64_t)(uint64_t)d;
    return 0;
}

bool tio__fb_scalar(const tio_fb_ref *t, unsigned id, const tio_fb_field *field,
                    int64_t *ival, double *fval) {
    int64_t iv = 0;
    double fv = 0.0;
    if (!field) return false;
    int kind = field->kind;
    size_t size = kind == TIO_FB_UNION_TYPE ? 1 : tio__fb_scalar_size(kind);
    if (size == 0) return false;
    size_t p = field_pos_sized(t, id, size);
    bool isfloat = kind == TIO_FB_F32 || kind == TIO_FB_F64;
    if (!p) {
        if (field->optional) return false;
        if (isfloat) {
            fv = field->def;
        } else {
            iv = def_to_i64(field->def);
            if (kind == TIO_FB_BOOL) iv = iv != 0;
            fv = (double)iv;
        }
    } else {
        const uint8_t *q = t->buf + p;
        switch (kind) {
        case TIO_FB_BOOL: iv = q[0] != 0; break;
        case TIO_FB_I8: iv = (int8_t)q[0]; break;
        case TIO_FB_U8:
        case TIO_FB_UNION_TYPE: iv = q[0]; break;
        case TIO_FB_I16: iv = (int16_t)tio__ld16(q); break;
        case TIO_FB_U16: iv = tio__ld16(q); break;
        case TIO_FB_I32: iv = (int32_t)tio__ld32(q); break;
        case TIO_FB_U32: iv = tio__ld32(q); break;
        case TIO_FB_I64:
        case TIO_FB_U64: iv = (int64_t)tio__ld64(q); break;
        case TIO_FB_F32: {
            uint32_t bits = tio__ld32(q);
            float f;
            memcpy(&f, &bits, sizeof f);
            fv = (double)f;
            break;
        }
        case TIO_FB_F64: {
            uint64_t bits = tio__ld64(q);
            memcpy(&fv, &bits, sizeof fv);
            break;
        }
        default: return false;
        }
        if (!isfloat) fv = kind == TIO_FB_U64 ? (double)(uint64_t)iv : (double)iv;
    }
    if (ival) *ival = iv;
    if (fval) *fval = fv;
    return true;
}

bool tio__fb_table(const tio_fb_ref *t, unsigned id, tio_fb_ref *out) {
    if (out) memset(out, 0, sizeof *out); /* absent: empty, never stale */
    size_t p = field_pos_sized(t, id, 4), target;
    if (!p || !out || !deref(t->buf, t->len, p, &target)) return false;
    return table_at(t->buf, t->len, target, out);
}

/* A vector or string header at `target`: count in bounds, and at least
 * count (+ extra) bytes of data present. */
static bool vec_at(const uint8_t *buf, size_t len, tio_headsrc *h, size_t target, size_t extra,
                   tio_fb_vec *out) {
    if (target > len || len - target < 4) return false;
    const uint8_t *c = h ? tio__headsrc_at(h, target, 4) : NULL;
    uint32_t count = tio__ld32(c ? c : buf + target);
    size_t data = target + 4;
    size_t need;
    if (tio__add_ovf(count, extra, &need) || need > len - data) return false;
    out->buf = buf;
    out->len = len;
    out->data = data;
    out->count = count;
    return true;
}

bool tio__fb_vector(const tio_fb_ref *t, unsigned id, tio_fb_vec *out) {
    if (out) memset(out, 0, sizeof *out); /* absent: empty, never stale */
    size_t p = field_pos_sized(t, id, 4), target;
    if (!p || !out || !deref(t->buf, t->len, p, &target)) return false;
    return vec_at(t->buf, t->len, NULL, target, 0, out);
}

tio_headsrc *tio__fb_head(tio_headsrc *head, const uint8_t *buf, size_t len) {
    return head && buf && head->base == buf && len <= head->size ? head : NULL;
}

void tio__fb_blobs_free(tio_fb_blobs *b) {
    if (!b) return;
    free(b->v);
    memset(b, 0, sizeof *b);
}

bool tio__fb_bytes(const tio_fb_ref *t, unsigned id, tio_headsrc *head,
                   const tio_fb_blobs *known, tio_fb_vec *out) {
    if (out) memset(out, 0, sizeof *out); /* absent: empty, never stale */
    size_t p = field_pos_sized(t, id, 4), target;
    if (!p || !out || !deref(t->buf, t->len, p, &target)) return false;
    size_t lo = 0, hi = known ? known->n : 0;
    while (lo < hi) { /* the count the verifier read */
        size_t mid = lo + (hi - lo) / 2;
        if (known->v[mid].pos < target) lo = mid + 1;
        else hi = mid;
    }
    if (lo < (known ? known->n : 0) && known->v[lo].pos == target) {
        uint32_t count = known->v[lo].count;
        if (target > t->len || t->len - target < 4 || count > t->len - target - 4) return false;
        out->buf = t->buf;
        out->len = t->len;
        out->data = target + 4;
        out->count = count;
        return true;
    }
    return vec_at(t->buf, t->len, tio__fb_head(head, t->buf, t->len), target, 0, out);
}

static bool string_at(const uint8_t *buf, size_t len, size_t target, const char **s,
                      uint32_t *n) {
    tio_fb_vec v;
    if (!vec_at(buf, len, NULL, target, 1, &v)) return false;
    if (buf[v.data + v.count] != 0) return false;
    if (s) *s = (const char *)(buf + v.data);
    if (n) *n = v.count;
    return true;
}

bool tio__fb_string(const tio_fb_ref *t, unsigned id, const char **s, uint32_t *n) {
    if (s) *s = NULL;
    if (n) *n = 0;
    size_t p = field_pos_sized(t, id, 4), target;
    if (!p || !deref(t->buf, t->len, p, &target)) return false;
    return string_at(t->buf, t->len, target, s, n);
}

/* Position of 4-byte element i, or 0 when out of range / out of bounds. */
static size_t elem4(const tio_fb_vec *v, size_t i) {
    if (!v || !v->buf || i >= v->count) return 0;
    size_t off, p;
    if (tio__mul_ovf(i, 4, &off) || tio__add_ovf(v->data, off, &p)) return 0;
    if (p > v->len || v->len - p < 4) return 0;
    return p;
}

bool tio__fb_vec_table(const tio_fb_vec *v, size_t i, tio_fb_ref *out) {
    if (out) memset(out, 0, sizeof *out); /* absent: empty, never stale */
    size_t p = elem4(v, i), target;
    if (!p || !out || !deref(v->buf, v->len, p, &target)) return false;
    return table_at(v->buf, v->len, target, out);
}

bool tio__fb_vec_string(const tio_fb_vec *v, size_t i, const char **s, uint32_t *n) {
    if (s) *s = NULL;
    if (n) *n = 0;
    size_t p = elem4(v, i), target;
    if (!p || !deref(v->buf, v->len, p, &target)) return false;
    return string_at(v->buf, v->len, target, s, n);
}

uint32_t tio__fb_vec_u32(const tio_fb_vec *v, size_t i) {
    size_t p = elem4(v, i);
    return p ? tio__ld32(v->buf + p) : 0;
}

int32_t tio__fb_vec_i32(const tio_fb_vec *v, size_t i) {
    size_t p = elem4(v, i);
    return p ? (int32_t)tio__ld32(v->buf + p) : 0;
}
