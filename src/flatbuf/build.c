/* FlatBuffers builder, back to front as the official builders do.
 *
 * The content lives at the end of `buf` (buf[cap - size, cap)); a tio_fb_off
 * is an object's distance from the end, which stays valid when the buffer
 * grows (by doubling, content moved to the new end). Vtables are shared only
 * when byte-equal, object size included (google/flatbuffers#8653). Every
 * padding byte is zero, so the same call sequence gives the same bytes.
 * After any error the builder stays failed (every later call returns the
 * same code). */
#include "flatbuf/flatbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FB_MAX_SIZE 0x7FFFFFFFu  /* buffers stay below 2 GiB */
#define FB_MAX_ID 32764u         /* vtable size 4 + 2 * (id + 1) fits in u16 */
#define FB_MAX_ALIGN 4096u

/* A vector whose bytes are not in memory (tio__fb_create_vector_ext): `top` is
 * the distance from the end just past it (its first byte is at size - top
 * from the start of the finished buffer). */
typedef struct fb_hole {
    size_t top, n;
    uint64_t tag;
} fb_hole;

typedef struct fb_bfield {
    unsigned id;
    uint32_t off; /* distance of the field from the end */
} fb_bfield;

struct tio_fb_builder {
    const char *format;
    uint8_t *buf;
    size_t cap, size;  /* size: of the buffer, holes included */
    size_t psize;      /* bytes in memory (size - the holes' bytes) */
    fb_hole *holes;    /* in creation order (= from the end of the buffer) */
    size_t nholes, holecap;
    size_t minalign;
    int failed;
    bool in_table, finished;
    size_t table_start;
    fb_bfield *fields;
    size_t nfields, fcap;
    uint32_t *vtables; /* distances from the end of every vtable written */
    size_t *vtphys;    /* and their distances from the end of the memory */
    size_t nvt, vtcap;
    uint8_t *scratch;  /* vtable being assembled */
    size_t scratch_cap;
};

static int berr(tio_fb_builder *b, tio_error *err, int code, const char *fmt, ...)
    TIO_PRINTF(4, 5);

static int berr(tio_fb_builder *b, tio_error *err, int code, const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    b->failed = code;
    return tio__err(err, code, b->format, -1, "flatbuffers builder: %s", msg);
}

/* Common entry checks. */
static int guard(tio_fb_builder *b, bool want_table, const char *what, tio_error *err) {
    if (!b) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "flatbuffers builder: NULL builder");
    if (b->failed)
        return tio__err(err, b->failed, b->format, -1,
                        "flatbuffers builder: %s after an earlier error", what);
    if (b->finished) /* the finished buffer stays available */
        return tio__err(err, TIO_E_ARGUMENT, b->format, -1,
                        "flatbuffers builder: %s after the buffer was finished", what);
    if (want_table && !b->in_table)
        return berr(b, err, TIO_E_ARGUMENT, "%s outside of a table", what);
    if (!want_table && b->in_table)
        return berr(b, err, TIO_E_ARGUMENT, "%s inside a table (tables do not nest)", what);
    return TIO_OK;
}

tio_fb_builder *tio__fb_builder_new(const char *format) {
    tio_fb_builder *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->format = format;
    b->minalign = 1;
    return b;
}

void tio__fb_builder_free(tio_fb_builder *b) {
    if (!b) return;
    free(b->buf);
    free(b->fields);
    free(b->vtables);
    free(b->vtphys);
    free(b->holes);
    free(b->scratch);
    free(b);
}

/* Room for n more bytes in front of the content. */
static int reserve(tio_fb_builder *b, size_t n, tio_error *err) {
    if (n > FB_MAX_SIZE - b->size)
        return berr(b, err, TIO_E_LIMIT,
                    "buffer of %zu bytes + %zu would exceed the 2 GiB FlatBuffers limit",
                    b->size, n);
    if (b->cap - b->psize >= n) return TIO_OK;
    size_t ncap = b->cap ? b->cap : 256;
    while (ncap - b->psize < n) ncap *= 2; /* ends <= 2^31: psize + n < 2^31 */
    uint8_t *nb = malloc(ncap);
    if (!nb) {
        b->failed = TIO_E_NOMEM;
        return tio__nomem(err, b->format);
    }
    if (b->psize) memcpy(nb + ncap - b->psize, b->buf + b->cap - b->psize, b->psize);
    free(b->buf);
    b->buf = nb;
    b->cap = ncap;
    return TIO_OK;
}

/* Pointer to the byte in memory at distance `poff` from the end of the
 * memory (an object created after every hole so far is at distance
 * off - (size - psize)). */
static uint8_t *at(tio_fb_builder *b, size_t poff) { return b->buf + b->cap - poff; }

/* The memory distance of the object at distance `off` created last. */
static size_t phys(const tio_fb_builder *b, size_t off) { return off - (b->size - b->psize); }

static void push_bytes(tio_fb_builder *b, const void *p, size_t n) {
    b->size += n;
    b->psize += n;
    if (n) memcpy(at(b, b->psize), p, n);
}

static void push_zeros(tio_fb_builder *b, size_t n) {
    b->size += n;
    b->psize += n;
    if (n) memset(at(b, b->psize), 0, n);
}

static void push_u32(tio_fb_builder *b, uint32_t v) {
    b->size += 4;
    b->psize += 4;
    tio__st32(at(b, b->psize), v);
}

/* Pads so that, after `additional` more bytes, the size is a multiple of
 * `align` (a power of two); reserves padding + additional. */
static int prep(tio_fb_builder *b, size_t align, size_t additional, tio_error *err) {
    if (align > b->minalign) b->minalign = align;
    size_t pad = (size_t)(0u - (b->size + additional)) & (align - 1);
    size_t total;
    if (tio__add_ovf(pad, additional, &total))
        return berr(b, err, TIO_E_LIMIT, "object of %zu bytes is too large", additional);
    int rc = reserve(b, total, err);
    if (rc) return rc;
    push_zeros(b, pad);
    return TIO_OK;
}

/* The uoffset to write at the next 4-byte slot (after prep) for `ref`. */
static uint32_t refer(const tio_fb_builder *b, tio_fb_off ref) {
    return (uint32_t)(b->size + 4 - ref);
}

static int check_ref(tio_fb_builder *b, tio_fb_off ref, tio_error *err) {
    if (ref == 0 || ref > b->size)
        return berr(b, err, TIO_E_ARGUMENT,
                    "reference %lu is not an object of this buffer (size %zu)",
                    (unsigned long)ref, b->size);
    return TIO_OK;
}

int tio__fb_create_string(tio_fb_builder *b, const char *s, size_t n, tio_fb_off *out,
                          tio_error *err) {
    int rc = guard(b, false, "create_string", err);
    if (rc) return rc;
    if (!out || (!s && n > 0)) return berr(b, err, TIO_E_ARGUMENT, "create_string: NULL argument");
    if (n > FB_MAX_SIZE)
        return berr(b, err, TIO_E_LIMIT, "string of %zu bytes exceeds the 2 GiB limit", n);
    if ((rc = prep(b, 4, n + 1, err))) return rc;
    if ((rc = reserve(b, n + 1 + 4, err))) return rc; /* NUL, bytes, length */
    push_zeros(b, 1);
    push_bytes(b, s, n);
    push_u32(b, (uint32_t)n);
    *out = (tio_fb_off)b->size;
    return TIO_OK;
}

int tio__fb_create_vector(tio_fb_builder *b, const void *data, size_t count,
                          size_t elem_size, size_t align, tio_fb_off *out,
                          tio_error *err) {
    int rc = guard(b, false, "create_vector", err);
    if (rc) return rc;
    if (!out || elem_size == 0)
        return berr(b, err, TIO_E_ARGUMENT, "create_vector: NULL output or element size 0");
    if (align == 0) align = 1;
    if ((align & (align - 1)) != 0 || align > FB_MAX_ALIGN)
        return berr(b, err, TIO_E_ARGUMENT,
                    "create_vector: alignment %zu is not a power of two <= %u", align,
                    FB_MAX_ALIGN);
    size_t bytes;
    if (tio__mul_ovf(count, elem_size, &bytes) || bytes > FB_MAX_SIZE)
        return berr(b, err, TIO_E_LIMIT,
                    "vector of %zu elements of %zu bytes exceeds the 2 GiB limit", count,
                    elem_size);
    if (!data && bytes > 0) return berr(b, err, TIO_E_ARGUMENT, "create_vector: NULL data");
    size_t a = align;
    if ((elem_size & (elem_size - 1)) == 0 && elem_size > a && elem_size <= FB_MAX_ALIGN)
        a = elem_size;
    if ((rc = prep(b, 4, bytes, err))) return rc;
    if ((rc = prep(b, a, bytes, err))) return rc;
    if ((rc = reserve(b, bytes + 4, err))) return rc;
    push_bytes(b, data, bytes);
    push_u32(b, (uint32_t)count);
    *out = (tio_fb_off)b->size;
    return TIO_OK;
}

int tio__fb_create_offset_vector(tio_fb_builder *b, const tio_fb_off *refs, size_t count,
                                 tio_fb_off *out, tio_error *err) {
    int rc = guard(b, false, "create_offset_vector", err);
    if (rc) return rc;
    if (!out || (!refs && count > 0))
        return berr(b, err, TIO_E_ARGUMENT, "create_offset_vector: NULL argument");
    size_t bytes;
    if (tio__mul_ovf(count, 4, &bytes) || bytes > FB_MAX_SIZE)
        return berr(b, err, TIO_E_LIMIT, "vector of %zu references exceeds the 2 GiB limit",
                    count);
    for (size_t i = 0; i < count; i++)
        if ((rc = check_ref(b, refs[i], err))) return rc;
    if ((rc = prep(b, 4, bytes, err))) return rc;
    if ((rc = reserve(b, bytes + 4, err))) return rc;
    for (size_t i = count; i-- > 0;) push_u32(b, refer(b, refs[i]));
    push_u32(b, (uint32_t)count);
    *out = (tio_fb_off)b->size;
    return TIO_OK;
}

int tio__fb_start_table(tio_fb_builder *b, tio_error *err) {
    int rc = guard(b, false, "start_table", err);
    if (rc) return rc;
    b->in_table = true;
    b->nfields = 0;
    b->table_start = b->size;
    return TIO_OK;
}

static int record_field(tio_fb_builder *b, unsigned id, tio_error *err) {
    if (b->nfields == b->fcap) {
        size_t ncap = b->fcap ? b->fcap * 2 : 16;
        fb_bfield *nf = realloc(b->fields, ncap * sizeof *nf);
        if (!nf) {
            b->failed = TIO_E_NOMEM;
            return tio__nomem(err, b->format);
        }
        b->fields = nf;
        b->fcap = ncap;
    }
    b->fields[b->nfields].id = id;
    b->fields[b->nfields].off = (uint32_t)b->size;
    b->nfields++;
    return TIO_OK;
}

int tio__fb_add_scalar(tio_fb_builder *b, unsigned id, uint64_t bits, size_t size,
                       tio_error *err) {
    int rc = guard(b, true, "add_scalar", err);
    if (rc) return rc;
    if (size != 1 && size != 2 && size != 4 && size != 8)
        return berr(b, err, TIO_E_ARGUMENT, "add_scalar: size %zu is not 1, 2, 4 or 8", size);
    if (id > FB_MAX_ID)
        return berr(b, err, TIO_E_ARGUMENT, "add_scalar: field id %u exceeds %u", id,
                    FB_MAX_ID);
    if ((rc = prep(b, size, size, err))) return rc;
    uint8_t le[8];
    for (size_t i = 0; i < size; i++) le[i] = (uint8_t)(bits >> (8 * i));
    push_bytes(b, le, size);
    return record_field(b, id, err);
}

int tio__fb_add_offset(tio_fb_builder *b, unsigned id, tio_fb_off ref, tio_error *err) {
    int rc = guard(b, true, "add_offset", err);
    if (rc) return rc;
    if (ref == 0) return TIO_OK;
    if (id > FB_MAX_ID)
        return berr(b, err, TIO_E_ARGUMENT, "add_offset: field id %u exceeds %u", id,
                    FB_MAX_ID);
    if ((rc = check_ref(b, ref, err))) return rc;
    if ((rc = prep(b, 4, 4, err))) return rc;
    push_u32(b, refer(b, ref));
    return record_field(b, id, err);
}

int tio__fb_end_table(tio_fb_builder *b, tio_fb_off *out, tio_error *err) {
    int rc = guard(b, true, "end_table", err);
    if (rc) return rc;
    if (!out) return berr(b, err, TIO_E_ARGUMENT, "end_table: NULL output");
    /* the soffset, patched below */
    if ((rc = prep(b, 4, 4, err))) return rc;
    push_u32(b, 0);
    size_t obj = b->size;
    size_t objsize = obj - b->table_start;
    if (objsize > 0xFFFFu)
        return berr(b, err, TIO_E_LIMIT, "table of %zu bytes exceeds 65535 bytes", objsize);
    unsigned nslots = 0;
    for (size_t i = 0; i < b->nfields; i++)
        if (b->fields[i].id + 1 > nslots) nslots = b->fields[i].id + 1;
    size_t vtsize = 4 + 2 * (size_t)nslots;
    if (vtsize > b->scratch_cap) {
        uint8_t *ns = realloc(b->scratch, vtsize);
        if (!ns) {
            b->failed = TIO_E_NOMEM;
            return tio__nomem(err, b->format);
        }
        b->scratch = ns;
        b->scratch_cap = vtsize;
    }
    uint8_t *vt = b->scratch;
    memset(vt, 0, vtsize);
    vt[0] = (uint8_t)vtsize;
    vt[1] = (uint8_t)(vtsize >> 8);
    vt[2] = (uint8_t)objsize;
    vt[3] = (uint8_t)(objsize >> 8);
    for (size_t i = 0; i < b->nfields; i++) {
        size_t s = 4 + 2 * (size_t)b->fields[i].id;
        if (vt[s] || vt[s + 1])
            return berr(b, err, TIO_E_ARGUMENT, "end_table: field id %u added twice",
                        b->fields[i].id);
        size_t fo = obj - b->fields[i].off; /* < objsize <= 0xFFFF, and > 0 */
        vt[s] = (uint8_t)fo;
        vt[s + 1] = (uint8_t)(fo >> 8);
    }
    /* an identical vtable (object size included) already in the buffer? */
    size_t vtoff = 0;
    for (size_t i = 0; i < b->nvt; i++) {
        const uint8_t *p = at(b, b->vtphys[i]);
        if (tio__ld16(p) == vtsize && memcmp(p, vt, vtsize) == 0) {
            vtoff = b->vtables[i];
            break;
        }
    }
    if (vtoff == 0) {
        if (b->nvt == b->vtcap) {
            size_t ncap = b->vtcap ? b->vtcap * 2 : 16;
            uint32_t *nv = realloc(b->vtables, ncap * sizeof *nv);
            if (nv) b->vtables = nv;
            size_t *np = nv ? realloc(b->vtphys, ncap * sizeof *np) : NULL;
            if (!np) {
                b->failed = TIO_E_NOMEM;
                return tio__nomem(err, b->format);
            }
            b->vtphys = np;
            b->vtcap = ncap;
        }
        if ((rc = reserve(b, vtsize, err))) return rc;
        push_bytes(b, vt, vtsize);
        vtoff = b->size;
        b->vtphys[b->nvt] = b->psize;
        b->vtables[b->nvt++] = (uint32_t)vtoff;
    }
    /* vtable = table - soffset; positions from the start are cap - off */
    int64_t so = (int64_t)vtoff - (int64_t)obj;
    tio__st32(at(b, phys(b, obj)), (uint32_t)(int32_t)so);
    b->in_table = false;
    b->nfields = 0;
    *out = (tio_fb_off)obj;
    return TIO_OK;
}

int tio__fb_finish(tio_fb_builder *b, tio_fb_off root, tio_error *err) {
    return tio__fb_finish_id(b, root, NULL, err);
}

int tio__fb_finish_id(tio_fb_builder *b, tio_fb_off root, const char *ident, tio_error *err) {
    int rc = guard(b, false, "finish", err);
    if (rc) return rc;
    if ((rc = check_ref(b, root, err))) return rc;
    if (ident && strlen(ident) != 4)
        return berr(b, err, TIO_E_ARGUMENT, "finish: a file identifier has 4 bytes");
    size_t a = b->minalign > 4 ? b->minalign : 4;
    if ((rc = prep(b, a, ident ? 8 : 4, err))) return rc;
    if (ident) push_bytes(b, ident, 4);
    push_u32(b, refer(b, root));
    b->finished = true;
    return TIO_OK;
}

int tio__fb_create_vector_ext(tio_fb_builder *b, size_t n, size_t align, uint64_t tag,
                              tio_fb_off *out, tio_error *err) {
    int rc = guard(b, false, "create_vector_ext", err);
    if (rc) return rc;
    if (!out) return berr(b, err, TIO_E_ARGUMENT, "create_vector_ext: NULL output");
    if (align < 4) align = 4;
    if ((align & (align - 1)) != 0 || align > FB_MAX_ALIGN)
        return berr(b, err, TIO_E_ARGUMENT,
                    "create_vector_ext: alignment %zu is not a power of two <= %u", align,
                    FB_MAX_ALIGN);
    if (n > FB_MAX_SIZE - b->size)
        return berr(b, err, TIO_E_LIMIT,
                    "buffer of %zu bytes + a vector of %zu would exceed the 2 GiB FlatBuffers "
                    "limit",
                    b->size, n);
    if (b->nholes == b->holecap) {
        size_t ncap = b->holecap ? b->holecap * 2 : 64;
        fb_hole *nh = realloc(b->holes, ncap * sizeof *nh);
        if (!nh) {
            b->failed = TIO_E_NOMEM;
            return tio__nomem(err, b->format);
        }
        b->holes = nh;
        b->holecap = ncap;
    }
    /* the padding after the data (in memory), then the data (not), then the count */
    if (align > b->minalign) b->minalign = align;
    size_t pad = (size_t)(0u - (b->size + n)) & (align - 1);
    if ((rc = reserve(b, pad + 4, err))) return rc;
    if (n > FB_MAX_SIZE - b->size - pad - 4)
        return berr(b, err, TIO_E_LIMIT,
                    "a vector of %zu bytes would exceed the 2 GiB FlatBuffers limit", n);
    push_zeros(b, pad);
    b->size += n;
    b->holes[b->nholes].top = b->size;
    b->holes[b->nholes].n = n;
    b->holes[b->nholes].tag = tag;
    b->nholes++;
    push_u32(b, (uint32_t)n);
    *out = (tio_fb_off)b->size;
    return TIO_OK;
}

void tio__fb_write_size(const tio_fb_builder *b, size_t *size) {
    *size = b && b->finished && !b->failed ? b->size : 0;
}

int tio__fb_write(const tio_fb_builder *b, tio_sink *s,
                  int (*emit)(void *ctx, tio_sink *s, uint64_t tag, size_t n, tio_error *err),
                  void *ctx, tio_error *err) {
    if (!b || !b->finished || b->failed)
        return tio__err(err, TIO_E_ARGUMENT, b ? b->format : NULL, -1,
                        "flatbuffers builder: write of an unfinished buffer");
    const uint8_t *mem = b->buf + b->cap - b->psize;
    size_t pos = 0; /* in the buffer */
    for (size_t k = b->nholes; k-- > 0;) {
        const fb_hole *h = &b->holes[k];
        size_t start = b->size - h->top, len = start - pos;
        int rc = tio__sink_write(s, mem, len, err);
        if (!rc) rc = emit(ctx, s, h->tag, h->n, err);
        if (rc) return rc;
        mem += len;
        pos = start + h->n;
    }
    return tio__sink_write(s, mem, b->size - pos, err);
}

const uint8_t *tio__fb_buffer(const tio_fb_builder *b, size_t *size) {
    if (!b || !b->finished || b->failed) {
        if (size) *size = 0;
        return NULL;
    }
    if (b->nholes) { /* not contiguous: tio__fb_write */
        if (size) *size = 0;
        return NULL;
    }
    if (size) *size = b->size;
    return b->buf + b->cap - b->size;
}

bool tio__fb_int_fits(int kind, int64_t v) {
    switch (kind) {
    case TIO_FB_BOOL: return v == 0 || v == 1;
    case TIO_FB_I8: return v >= INT8_MIN && v <= INT8_MAX;
    case TIO_FB_U8: return v >= 0 && v <= UINT8_MAX;
    case TIO_FB_I16: return v >= INT16_MIN && v <= INT16_MAX;
    case TIO_FB_U16: return v >= 0 && v <= UINT16_MAX;
    case TIO_FB_I32: return v >= INT32_MIN && v <= INT32_MAX;
    case TIO_FB_U32: return v >= 0 && v <= (int64_t)UINT32_MAX;
    case TIO_FB_I64:
    case TIO_FB_U64: return true;
    default: return false;
    }
}

int tio__fb_add_u8_default(tio_fb_builder *b, unsigned id, uint8_t v, uint8_t def,
                           tio_error *err) {
    if (v == def) return guard(b, true, "add_u8_default", err);
    return tio__fb_add_scalar(b, id, v, 1, err);
}

int tio__fb_add_i32_default(tio_fb_builder *b, unsigned id, int32_t v, int32_t def,
                            tio_error *err) {
    if (v == def) return guard(b, true, "add_i32_default", err);
    return tio__fb_add_scalar(b, id, (uint32_t)v, 4, err);
}

int tio__fb_add_u32_default(tio_fb_builder *b, unsigned id, uint32_t v, uint32_t def,
                            tio_error *err) {
    if (v == def) return guard(b, true, "add_u32_default", err);
    return tio__fb_add_scalar(b, id, v, 4, err);
}

int tio__fb_add_f32_default(tio_fb_builder *b, unsigned id, float v, float def,
                            tio_error *err) {
    uint32_t vb, db;
    memcpy(&vb, &v, sizeof vb);
    memcpy(&db, &def, sizeof db);
    if (vb == db) return guard(b, true, "add_f32_default", err);
    return tio__fb_add_scalar(b, id, vb, 4, err);
}
