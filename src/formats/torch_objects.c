/*
 * NumPy arrays and scalars inside PyTorch checkpoints, and the quantizer
 * parameters of quantized tensors, decoded from the pickle machine's
 * objects (see torch_objects.h). Nothing here runs NumPy or torch: the
 * objects are calls the machine recorded, read as data.
 *
 * What NumPy pickles (numpy/core/src/multiarray/methods.c, array_reduce
 * and array_setstate; descriptor.c, arraydescr_reduce):
 *   _reconstruct(ndarray, (0,), b'b') then BUILD with
 *     (version 1, shape tuple, dtype, is_fortran bool, data)
 *   data: bytes (protocol >= 3), _codecs.encode(str, 'latin1') (protocol 2;
 *     bytes() when empty), or a list of objects (dtype 'O', refused);
 *   dtype('f4', False, True) then BUILD with
 *     (version 3|4, byteorder '<' '>' '|' '=', subarray, names, fields,
 *      elsize, alignment, flags[, metadata])
 *   scalar(dtype, bytes) for a NumPy scalar (np.float32(1.5)).
 */
#include "formats/torch_objects.h"

#include "formats/npy.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *np_label(const char *name) { return name && *name ? name : "(root)"; }

static int64_t np_off(uint64_t v) { return v > INT64_MAX ? -1 : (int64_t)v; }

/* The callee's vocabulary id, or TIO_PKV_NONE. */
static tio_pk_vocab np_callee(const tio_pickle *p, const tio_pk_obj *o) {
    const tio_pk_vocab_entry *e = o && o->kind == TIO_PK_CALL ? tio__pk_callee(p, o) : NULL;
    return e ? e->id : TIO_PKV_NONE;
}

/* A STR's text is s[0..n) (views into the pickle). */
static int np_str_is(const tio_pk_obj *o, const char *s) {
    return o && o->kind == TIO_PK_STR && o->n == strlen(s) && memcmp(o->u.s, s, o->n) == 0;
}

/* ---------------------------------------------------------------- dtypes */

/* A numpy.dtype call and its BUILD state: the tensio dtype and whether its
 * data are big-endian. */
static int np_dtype(const tio_pickle *p, const tio_pk_obj *d, const char *fmt, const char *name,
                    tio_dtype *dt, int *big, tio_error *err) {
    const char *lbl = np_label(name);
    if (np_callee(p, d) != TIO_PKV_NP_DTYPE)
        return tio__err(err, TIO_E_CORRUPT, fmt, np_off(d ? d->off : 0),
                        "NumPy array '%s': its dtype is not a numpy.dtype(...) call", lbl);
    const tio_pk_obj *args = tio__pk(p, d->u.call.args);
    const tio_pk_obj *ts = args && args->kind == TIO_PK_TUPLE ? tio__pk_item(p, args, 0) : NULL;
    if (!ts || ts->kind != TIO_PK_STR || ts->n < 2 || ts->n > 8)
        return tio__err(err, TIO_E_CORRUPT, fmt, np_off(d->off),
                        "NumPy array '%s': numpy.dtype's first argument is not a type string "
                        "such as 'f4'",
                        lbl);
    char code[16];
    tio__escape(ts->u.s, ts->n, code, sizeof code);
    char kind = (char)ts->u.s[0];
    unsigned size = 0;
    size_t k = 1;
    for (; k < ts->n && ts->u.s[k] >= '0' && ts->u.s[k] <= '9'; k++)
        size = size * 10 + (unsigned)(ts->u.s[k] - '0'); /* n <= 8: no overflow */
    if (kind == 'O')
        return tio__err(err, TIO_E_UNSUPPORTED, fmt, np_off(d->off),
                        "NumPy array '%s' has dtype '%s': an object array (pickled Python "
                        "objects), which tensio refuses to read",
                        lbl, code);
    if (kind == 'V')
        return tio__err(err, TIO_E_UNSUPPORTED, fmt, np_off(d->off),
                        "NumPy array '%s' has dtype '%s': a structured or void dtype, which "
                        "tensio does not read",
                        lbl, code);
    *dt = k == ts->n ? tio__npy_kind_dtype(kind, size) : TIO_DTYPE_INVALID;
    if (*dt == TIO_DTYPE_INVALID)
        return tio__err(err, TIO_E_DTYPE, fmt, np_off(ts->off),
                        "NumPy array '%s' has dtype '%s', which has no tensio dtype (expected "
                        "b1, i1..i8, u1..u8, f2, f4, f8, c8 or c16)",
                        lbl, code);
    /* the state: byte order, and no fields or subarray */
    const tio_pk_obj *st = d->state != TIO_PK_NIL ? tio__pk(p, d->state) : NULL;
    *big = 0;
    if (!st) return TIO_OK; /* NumPy's default: native, which pickles always name */
    if (st->kind != TIO_PK_TUPLE || st->n < 8)
        return tio__err(err, TIO_E_CORRUPT, fmt, np_off(st->off),
                        "NumPy array '%s': the dtype's state is not a tuple of 8 or 9 items "
                        "(version, byteorder, subarray, names, fields, elsize, alignment, "
                        "flags)",
                        lbl);
    const tio_pk_obj *bo = tio__pk_item(p, st, 1);
    if (np_str_is(bo, ">"))
        *big = tio_dtype_size(*dt) > 1;
    else if (!np_str_is(bo, "<") && !np_str_is(bo, "|") && !np_str_is(bo, "="))
        return tio__err(err, TIO_E_CORRUPT, fmt, np_off(st->off),
                        "NumPy array '%s': the dtype's byte order is not '<', '>', '|' or '='",
                        lbl);
    for (size_t i = 2; i <= 4; i++) {
        const tio_pk_obj *x = tio__pk_item(p, st, i);
        if (!x || x->kind != TIO_PK_NONE)
            return tio__err(err, TIO_E_UNSUPPORTED, fmt, np_off(st->off),
                            "NumPy array '%s' has a structured or subarray dtype (its state "
                            "has %s), which tensio does not read",
                            lbl, i == 2 ? "a subarray" : i == 3 ? "field names" : "fields");
    }
    return TIO_OK;
}

/* ----------------------------------------------------------------- bytes */

/* The pickled data of an array or scalar: bytes, or _codecs.encode(str,
 * 'latin1'). *n is the number of bytes they stand for. */
static int np_data(const tio_pickle *p, const tio_pk_obj *o, const char *fmt, const char *lbl,
                   const uint8_t **src, size_t *src_n, int *latin1, uint64_t *n,
                   tio_error *err) {
    *latin1 = 0;
    if (o && o->kind == TIO_PK_BYTES) {
        *src = o->u.s;
        *src_n = *n = o->n;
        return TIO_OK;
    }
    if (np_callee(p, o) == TIO_PKV_BYTES) { /* bytes(): protocol 2's b'' */
        const tio_pk_obj *args = tio__pk(p, o->u.call.args);
        if (args && args->kind == TIO_PK_TUPLE && args->n == 0) {
            *src = NULL;
            *src_n = *n = 0;
            return TIO_OK;
        }
    }
    if (o && o->kind == TIO_PK_LIST)
        return tio__err(err, TIO_E_UNSUPPORTED, fmt, np_off(o->off),
                        "NumPy array '%s' holds Python objects (a list as its data), which "
                        "tensio refuses to read",
                        lbl);
    const tio_pk_obj *args = np_callee(p, o) == TIO_PKV_CODECS_ENCODE ? tio__pk(p, o->u.call.args)
                                                                       : NULL;
    const tio_pk_obj *s = args && args->kind == TIO_PK_TUPLE ? tio__pk_item(p, args, 0) : NULL;
    if (!s || s->kind != TIO_PK_STR || !np_str_is(tio__pk_item(p, args, 1), "latin1"))
        return tio__err(err, TIO_E_CORRUPT, fmt, np_off(o ? o->off : 0),
                        "NumPy array '%s': its data are neither bytes nor "
                        "_codecs.encode(str, 'latin1')",
                        lbl);
    /* count the code points, each < 256 (one byte, or 0xC2/0xC3 and one
     * continuation byte) */
    uint64_t count = 0;
    for (size_t i = 0; i < s->n; count++) {
        uint8_t b = s->u.s[i];
        if (b < 0x80) {
            i++;
            continue;
        }
        if ((b != 0xC2 && b != 0xC3) || i + 1 >= s->n || (s->u.s[i + 1] & 0xC0) != 0x80)
            return tio__err(err, TIO_E_CORRUPT, fmt, np_off(s->off),
                            "NumPy array '%s': its latin-1 text has a character past U+00FF "
                            "or bad UTF-8 at byte %zu",
                            lbl, i);
        i += 2;
    }
    *src = s->u.s;
    *src_n = s->n;
    *latin1 = 1;
    *n = count;
    return TIO_OK;
}

int tio__th_bytes_len(const tio_pickle *p, const tio_pk_obj *o, uint64_t *n) {
    tio_pk_vocab v = np_callee(p, o);
    if (!o || (o->kind != TIO_PK_BYTES && v != TIO_PKV_BYTES && v != TIO_PKV_CODECS_ENCODE))
        return 0;
    const uint8_t *src = NULL;
    size_t src_n = 0;
    int latin1 = 0;
    tio_error e;
    return np_data(p, o, "torch", "", &src, &src_n, &latin1, n, &e) == TIO_OK;
}

/* n bytes of what np_data described, decoded, into dst. */
static void np_copy(const uint8_t *src, size_t src_n, int latin1, uint8_t *dst, uint64_t n) {
    if (!latin1) {
        if (n) memcpy(dst, src, (size_t)n);
        return;
    }
    for (size_t i = 0, k = 0; i < src_n && k < n; k++) {
        uint8_t b = src[i];
        if (b < 0x80) {
            dst[k] = b;
            i++;
        } else {
            dst[k] = (uint8_t)(((b & 0x03u) << 6) | (src[i + 1] & 0x3Fu));
            i += 2;
        }
    }
}

/* ---------------------------------------------------------------- arrays */

int tio__np_array(const tio_pickle *p, const tio_pk_obj *o, const char *fmt, const char *name,
                  tio_np_array *a, tio_error *err) {
    const char *lbl = np_label(name);
    memset(a, 0, sizeof *a);
    a->at = o->off;
    const tio_pk_obj *args = tio__pk(p, o->u.call.args);
    const tio_pk_obj *cls = args && args->kind == TIO_PK_TUPLE ? tio__pk_item(p, args, 0) : NULL;
    const tio_pk_vocab_entry *ce =
        cls && cls->kind == TIO_PK_GLOBAL ? tio__pk_vocab_at(cls->vocab) : NULL;
    if (!ce || ce->id != TIO_PKV_NP_NDARRAY)
        return tio__err(err, TIO_E_UNSUPPORTED, fmt, np_off(o->off),
                        "NumPy array '%s': _reconstruct of a class other than numpy.ndarray "
                        "(a subclass such as a masked array), which tensio does not read",
                        lbl);
    const tio_pk_obj *st = o->state != TIO_PK_NIL ? tio__pk(p, o->state) : NULL;
    if (!st || st->kind != TIO_PK_TUPLE || st->n != 5)
        return tio__err(err, TIO_E_CORRUPT, fmt, np_off(st ? st->off : o->off),
                        "NumPy array '%s': %s (expected BUILD with (version, shape, dtype, "
                        "is_fortran, data))",
                        lbl, st ? "its state is not a tuple of 5 items" : "no state");
    const tio_pk_obj *shape = tio__pk_item(p, st, 1), *fo = tio__pk_item(p, st, 3);
    if (!shape || shape->kind != TIO_PK_TUPLE)
        return tio__err(err, TIO_E_CORRUPT, fmt, np_off(st->off),
                        "NumPy array '%s': its shape is not a tuple", lbl);
    if (shape->n > TIO_NP_MAX_RANK)
        return tio__err(err, TIO_E_LIMIT, fmt, np_off(shape->off),
                        "NumPy array '%s' has %" PRIu32 " dims (at most %u)", lbl, shape->n,
                        TIO_NP_MAX_RANK);
    if (!fo || fo->kind != TIO_PK_BOOL)
        return tio__err(err, TIO_E_CORRUPT, fmt, np_off(st->off),
                        "NumPy array '%s': is_fortran is not a bool", lbl);
    int big = 0;
    int rc = np_dtype(p, tio__pk_item(p, st, 2), fmt, name, &a->dtype, &big, err);
    if (rc) return rc;
    size_t es = tio_dtype_size(a->dtype);
    a->rank = shape->n;
    a->numel = 1;
    for (size_t k = 0; k < a->rank; k++) {
        const tio_pk_obj *d = tio__pk_item(p, shape, k);
        if (!d || d->kind != TIO_PK_INT || d->u.i < 0)
            return tio__err(err, TIO_E_CORRUPT, fmt, np_off(shape->off),
                            "NumPy array '%s': dim %zu of its shape is not an int >= 0", lbl, k);
        a->shape[k] = d->u.i;
        if (tio__mul64_ovf(a->numel, (uint64_t)d->u.i, &a->numel))
            return tio__err(err, TIO_E_OVERFLOW, fmt, np_off(shape->off),
                            "NumPy array '%s': its element count overflows 64 bits", lbl);
    }
    if (tio__mul64_ovf(a->numel, es, &a->nbytes) || a->nbytes > SIZE_MAX)
        return tio__err(err, TIO_E_OVERFLOW, fmt, np_off(shape->off),
                        "NumPy array '%s': its byte size overflows", lbl);
    uint64_t have = 0;
    const tio_pk_obj *data = tio__pk_item(p, st, 4);
    rc = np_data(p, data, fmt, lbl, &a->src, &a->src_n, &a->latin1, &have, err);
    if (rc) return rc;
    if (have != a->nbytes) {
        char sh[96];
        tio__shape_str(a->shape, a->rank, sh, sizeof sh);
        return tio__err(err, TIO_E_BOUNDS, fmt, np_off(data->off),
                        "NumPy array '%s' of shape %s and dtype %s needs %" PRIu64
                        " bytes, its data hold %" PRIu64,
                        lbl, sh, tio_dtype_name(a->dtype), a->nbytes, have);
    }
    a->fortran = (int)fo->u.i;
    a->swap = big ? tio__dtype_swap_unit(a->dtype) : 0;
    return TIO_OK;
}

int tio__np_array_bytes(const tio_np_array *a, uint8_t *dst, int64_t *idx) {
    size_t es = tio_dtype_size(a->dtype);
    if (!a->fortran || a->rank < 2) {
        np_copy(a->src, a->src_n, a->latin1, dst, a->nbytes);
        tio__swap_units(dst, (size_t)a->nbytes, a->swap);
        return TIO_OK;
    }
    /* Fortran order: dim 0 varies fastest in the source. Latin-1 text is
     * not addressable by element, so it is decoded into a scratch copy. */
    const uint8_t *src = a->src;
    uint8_t *tmp = NULL;
    if (a->latin1) {
        tmp = malloc(a->nbytes ? (size_t)a->nbytes : 1);
        if (!tmp) return TIO_E_NOMEM;
        np_copy(a->src, a->src_n, 1, tmp, a->nbytes);
        src = tmp;
    }
    uint64_t fstride[TIO_NP_MAX_RANK], s = 1, off = 0;
    for (size_t k = 0; k < a->rank; k++) {
        fstride[k] = s;
        s *= (uint64_t)a->shape[k]; /* <= numel: no overflow */
        idx[k] = 0;
    }
    for (uint64_t e = 0; e < a->numel; e++) {
        memcpy(dst + e * es, src + off * es, es);
        for (size_t k = a->rank; k-- > 0;) { /* the next C-order index */
            off += fstride[k];
            if (++idx[k] < a->shape[k]) break;
            off -= fstride[k] * (uint64_t)a->shape[k];
            idx[k] = 0;
        }
    }
    free(tmp);
    tio__swap_units(dst, (size_t)a->nbytes, a->swap);
    return TIO_OK;
}

/* --------------------------------------------------------------- scalars */

void tio__th_float_text(double v, int single, char *s, size_t cap) {
    if (v != v) {
        snprintf(s, cap, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(s, cap, "%s", v < 0 ? "-inf" : "inf");
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(s, cap, "%.*g", prec, v);
        double back = strtod(s, NULL);
        if (single ? (float)back == (float)v : back == v) return;
    }
}

/* A little-endian value of a dtype's element (n bytes at p) as float64. */
static double np_float(tio_dtype dt, const uint8_t *p) {
    switch (dt) {
    case TIO_FLOAT16: return (double)tio__half_to_float(tio__ld16(p));
    case TIO_FLOAT32: {
        uint32_t u = tio__ld32(p);
        float f;
        memcpy(&f, &u, 4);
        return (double)f;
    }
    default: {
        uint64_t u = tio__ld64(p);
        double d;
        memcpy(&d, &u, 8);
        return d;
    }
    }
}

int tio__np_scalar(const tio_pickle *p, const tio_pk_obj *o, const char *fmt, const char *name,
                   char *text, size_t cap, const char **type, tio_error *err) {
    const char *lbl = np_label(name);
    const tio_pk_obj *args = tio__pk(p, o->u.call.args);
    if (!args || args->kind != TIO_PK_TUPLE || args->n != 2)
        return tio__err(err, TIO_E_CORRUPT, fmt, np_off(o->off),
                        "NumPy scalar '%s': scalar's arguments are not (dtype, data)", lbl);
    tio_dtype dt = TIO_DTYPE_INVALID;
    int big = 0;
    int rc = np_dtype(p, tio__pk_item(p, args, 0), fmt, name, &dt, &big, err);
    if (rc) return rc;
    const uint8_t *src = NULL;
    size_t src_n = 0;
    int latin1 = 0;
    uint64_t n = 0;
    const tio_pk_obj *data = tio__pk_item(p, args, 1);
    rc = np_data(p, data, fmt, lbl, &src, &src_n, &latin1, &n, err);
    if (rc) return rc;
    size_t es = tio_dtype_size(dt);
    if (n != es)
        return tio__err(err, TIO_E_BOUNDS, fmt, np_off(data->off),
                        "NumPy scalar '%s' of dtype %s needs %zu bytes, its data hold %" PRIu64,
                        lbl, tio_dtype_name(dt), es, n);
    uint8_t v[16];
    np_copy(src, src_n, latin1, v, es);
    if (big) tio__swap_units(v, es, tio__dtype_swap_unit(dt));
    char re[40], im[40];
    uint64_t u = 0; /* an integer's bits, little-endian */
    for (size_t k = es > 8 ? 0 : es; k-- > 0;) u = u << 8 | v[k];
    switch (dt) {
    case TIO_BOOL:
        snprintf(text, cap, "%s", v[0] ? "true" : "false");
        *type = "bool";
        return TIO_OK;
    case TIO_INT8:
    case TIO_INT16:
    case TIO_INT32:
    case TIO_INT64: {
        if (es < 8 && (u >> (8 * es - 1)) & 1u) u |= ~UINT64_C(0) << (8 * es);
        int64_t i;
        memcpy(&i, &u, 8);
        snprintf(text, cap, "%" PRId64, i);
        *type = tio_dtype_name(dt);
        return TIO_OK;
    }
    case TIO_UINT8:
    case TIO_UINT16:
    case TIO_UINT32:
    case TIO_UINT64:
        snprintf(text, cap, "%" PRIu64, u);
        *type = tio_dtype_name(dt);
        return TIO_OK;
    case TIO_COMPLEX64:
    case TIO_COMPLEX128: {
        tio_dtype part = dt == TIO_COMPLEX64 ? TIO_FLOAT32 : TIO_FLOAT64;
        double r = np_float(part, v), i = np_float(part, v + es / 2);
        int neg = !isnan(i) && signbit(i);
        tio__th_float_text(r, part == TIO_FLOAT32, re, sizeof re);
        tio__th_float_text(neg ? -i : i, part == TIO_FLOAT32, im, sizeof im);
        snprintf(text, cap, "%s%c%sj", re, neg ? '-' : '+', im);
        *type = "string";
        return TIO_OK;
    }
    default: /* float16, float32, float64 */
        tio__th_float_text(np_float(dt, v), dt != TIO_FLOAT64, text, cap);
        *type = dt == TIO_FLOAT64 ? "float64" : "float32";
        return TIO_OK;
    }
}

/* ------------------------------------------------------ quantized tensors */

int tio__th_qparams(const tio_pickle *p, const tio_pk_obj *params, size_t rank,
                    const char *fmt, const char *name, uint64_t at, tio_qparams *q,
                    tio_error *err) {
    const char *lbl = np_label(name);
    memset(q, 0, sizeof *q);
    const tio_pk_obj *qs = params && params->kind == TIO_PK_TUPLE && params->n >= 1
                               ? tio__pk_item(p, params, 0)
                               : NULL;
    const tio_pk_vocab_entry *e = qs && qs->kind == TIO_PK_GLOBAL ? tio__pk_vocab_at(qs->vocab)
                                                                  : NULL;
    if (!e || e->id != TIO_PKV_QSCHEME)
        return tio__err(err, TIO_E_CORRUPT, fmt, np_off(at),
                        "quantized tensor '%s': its quantizer parameters do not start with a "
                        "torch qscheme (torch.per_tensor_affine …)",
                        lbl);
    q->scheme = e->name;
    if (strcmp(e->name, "per_tensor_affine") == 0) {
        const tio_pk_obj *s = tio__pk_item(p, params, 1), *z = tio__pk_item(p, params, 2);
        if (params->n != 3 || !s || (s->kind != TIO_PK_FLOAT && s->kind != TIO_PK_INT) || !z ||
            z->kind != TIO_PK_INT)
            return tio__err(err, TIO_E_CORRUPT, fmt, np_off(params->off),
                            "quantized tensor '%s' (per_tensor_affine): its parameters are not "
                            "(qscheme, scale, zero_point)",
                            lbl);
        q->scale = s->kind == TIO_PK_FLOAT ? s->u.f : (double)s->u.i;
        q->zero_point = z->u.i;
        return TIO_OK;
    }
    if (strcmp(e->name, "per_channel_affine") != 0 &&
        strcmp(e->name, "per_channel_affine_float_qparams") != 0)
        return tio__err(err, TIO_E_UNSUPPORTED, fmt, np_off(qs->off),
                        "quantized tensor '%s' has qscheme torch.%s, which torch itself does "
                        "not serialize and tensio does not read",
                        lbl, e->name);
    const tio_pk_obj *ax = params->n == 4 ? tio__pk_item(p, params, 3) : NULL;
    if (!ax || ax->kind != TIO_PK_INT)
        return tio__err(err, TIO_E_CORRUPT, fmt, np_off(params->off),
                        "quantized tensor '%s' (%s): its parameters are not (qscheme, scales, "
                        "zero_points, axis)",
                        lbl, e->name);
    if (ax->u.i < 0 || (uint64_t)ax->u.i >= rank)
        return tio__err(err, TIO_E_CORRUPT, fmt, np_off(ax->off),
                        "quantized tensor '%s' (%s): axis %" PRId64
                        " is outside its %zu dims",
                        lbl, e->name, ax->u.i, rank);
    q->per_channel = 1;
    q->axis = ax->u.i;
    q->scales = params->u.kids[1];
    q->zero_points = params->u.kids[2];
    return TIO_OK;
}
