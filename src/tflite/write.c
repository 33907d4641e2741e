/*
 * TensorFlow Lite (.tflite) serialiser: a tfl_wmodel (src/tflite/write.h) as
 * FlatBuffers bytes through the sink, over the builder in src/flatbuf/build.c.
 *
 * Layout: the FlatBuffers model with file identifier "TFL3"; every buffer's
 * data is a [ubyte] vector aligned to 16 bytes (as TensorFlow's converter
 * aligns them), laid out in buffer order at the end of the model, and
 * streamed from its container tensor when the model is written (the builder
 * holds only the tables). When the model would pass FlatBuffers' 2 GiB, or
 * when an operator's custom options are to be written in the large form, the
 * buffers use the offset/size form instead: the FlatBuffers model, then each
 * buffer's data (and large custom options) at a 16-byte aligned file offset,
 * as TensorFlow writes models past 2 GiB.
 *
 * The same model gives the same bytes: no field depends on anything but the
 * model (fields equal to the schema default are omitted).
 */
#include "tflite/write.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TFL "tflite"
#define TFL_ALIGN 16u

typedef struct tw {
    const tfl_wmodel *m;
    tio_write_plan *plan;
    tio_fb_builder *b;
    bool offset_form;
    uint64_t *boff;      /* offset form: file offset of each buffer's data */
    uint64_t *coff;      /* offset form: per (subgraph, op) large custom options offset */
    size_t *cbase;       /* first coff index of each subgraph */
} tw;

/* ------------------------------------------------------------ checks */

/* The little-endian bits of value o->i / o->f as kind k. */
static uint64_t scalar_bits(int k, int64_t i, double f) {
    if (k == TIO_FB_F32) {
        float x = (float)f;
        uint32_t u;
        memcpy(&u, &x, 4);
        return u;
    }
    if (k == TIO_FB_F64) {
        uint64_t u;
        memcpy(&u, &f, 8);
        return u;
    }
    return (uint64_t)i & (tio__fb_scalar_size(k) == 8 ? UINT64_MAX
                                                      : ((uint64_t)1 << (8 * tio__fb_scalar_size(k))) - 1);
}

static bool is_float_kind(int k) { return k == TIO_FB_F32 || k == TIO_FB_F64; }
static bool kind_is_scalar(int k) { return k >= TIO_FB_BOOL && k <= TIO_FB_F64; }

/* ------------------------------------------------------------ options */

/* Checks and writes an options table (member `tag` of BuiltinOptions or
 * BuiltinOptions2): one generic path driven by the schema data. */
static int w_options(tw *w, unsigned tag, bool second, const tfl_wopt *opts, size_t n,
                     const char *lbl, tio_fb_off *out, tio_error *err) {
    const tio_fb_table *t = tio__tfl_w_opt_table(tag, second);
    const char *un = second ? "BuiltinOptions2" : "BuiltinOptions";
    if (!t)
        return tio__err(err, TIO_E_ARGUMENT, TFL, -1, "%s: %s tag %u is not in the schema", lbl,
                        un, tag);
    tio_fb_off *refs = calloc(n ? n : 1, sizeof *refs);
    if (!refs) return tio__nomem(err, TFL);
    int rc = TIO_OK;
    /* the references first (tables do not nest) */
    for (size_t k = 0; k < n && !rc; k++) {
        const tfl_wopt *o = &opts[k];
        if (o->id >= t->nfields || t->fields[o->id].kind == TIO_FB_NONE ||
            t->fields[o->id].kind != o->kind ||
            (o->kind == TIO_FB_VECTOR && t->fields[o->id].elem != o->elem)) {
            rc = tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                          "%s: %s field %u is not a field of that kind in the schema", lbl,
                          t->name, o->id);
            break;
        }
        const tio_fb_field *f = &t->fields[o->id];
        if (o->kind == TIO_FB_STRING) {
            if (!o->s && o->count)
                rc = tio__err(err, TIO_E_ARGUMENT, TFL, -1, "%s: %s.%s: NULL string", lbl,
                              t->name, f->name);
            else
                rc = tio__fb_create_string(w->b, o->s ? o->s : "", o->count, &refs[k], err);
        } else if (o->kind == TIO_FB_VECTOR) {
            size_t es = tio__fb_scalar_size(o->elem);
            if (!es) {
                rc = tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                              "%s: %s.%s: a vector of tables or strings is not an option", lbl,
                              t->name, f->name);
                break;
            }
            uint8_t *buf = malloc(o->count ? o->count * es : 1);
            if (!buf) {
                rc = tio__nomem(err, TFL);
                break;
            }
            for (size_t i = 0; i < o->count && !rc; i++) {
                uint64_t bits;
                if (is_float_kind(o->elem)) {
                    if (!o->floats) {
                        rc = tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                                      "%s: %s.%s: a vector of floats without values", lbl,
                                      t->name, f->name);
                        break;
                    }
                    bits = scalar_bits(o->elem, 0, o->floats[i]);
                } else {
                    if (!o->ints || !tio__fb_int_fits(o->elem, o->ints[i])) {
                        rc = tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                                      "%s: %s.%s[%zu] = %lld is out of range for its type",
                                      lbl, t->name, f->name, i,
                                      o->ints ? (long long)o->ints[i] : 0LL);
                        break;
                    }
                    bits = scalar_bits(o->elem, o->ints[i], 0);
                }
                for (size_t b = 0; b < es; b++) buf[i * es + b] = (uint8_t)(bits >> (8 * b));
            }
            if (!rc) rc = tio__fb_create_vector(w->b, buf, o->count, es, es, &refs[k], err);
            free(buf);
        } else if (kind_is_scalar(o->kind)) {
            if (!is_float_kind(o->kind) && !tio__fb_int_fits(o->kind, o->i))
                rc = tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                              "%s: %s.%s = %lld is out of range for its type", lbl, t->name,
                              f->name, (long long)o->i);
            else if (o->kind == TIO_FB_F32 && isfinite(o->f) && fabs(o->f) > FLT_MAX)
                rc = tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                              "%s: %s.%s = %g does not fit a float32", lbl, t->name, f->name,
                              o->f);
            else if (f->enum_name && !is_float_kind(o->kind) &&
                     !tio__tfl_enum_name(f->enum_name, o->i))
                rc = tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                              "%s: %s.%s = %lld is not a value of enum %s", lbl, t->name,
                              f->name, (long long)o->i, f->enum_name);
        } else {
            rc = tio__err(err, TIO_E_ARGUMENT, TFL, -1, "%s: %s.%s: kind %d is not an option",
                          lbl, t->name, f->name, o->kind);
        }
    }
    if (!rc) rc = tio__fb_start_table(w->b, err);
    for (size_t k = 0; k < n && !rc; k++) {
        const tfl_wopt *o = &opts[k];
        const tio_fb_field *f = &t->fields[o->id];
        for (size_t j = 0; j < k && !rc; j++)
            if (opts[j].id == o->id)
                rc = tio__err(err, TIO_E_ARGUMENT, TFL, -1, "%s: %s.%s is set twice", lbl,
                              t->name, f->name);
        if (rc) break;
        if (o->kind == TIO_FB_STRING || o->kind == TIO_FB_VECTOR) {
            rc = tio__fb_add_offset(w->b, o->id, refs[k], err);
            continue;
        }
        uint64_t bits = scalar_bits(o->kind, o->i, o->f);
        uint64_t def = scalar_bits(o->kind, (int64_t)f->def, f->def);
        if (bits == def && !f->optional) continue; /* the default: omitted */
        rc = tio__fb_add_scalar(w->b, o->id, bits, tio__fb_scalar_size(o->kind), err);
    }
    if (!rc) rc = tio__fb_end_table(w->b, out, err);
    free(refs);
    return rc;
}

/* ------------------------------------------------------------ tables */

/* An [int] vector (NULL with n 0 and !present: none). */
static int w_ints(tw *w, const int32_t *v, size_t n, bool present, tio_fb_off *out,
                  tio_error *err) {
    *out = 0;
    if (!present) return TIO_OK;
    uint8_t *buf = malloc(n ? 4 * n : 1);
    if (!buf) return tio__nomem(err, TFL);
    for (size_t i = 0; i < n; i++) tio__st32(buf + 4 * i, (uint32_t)v[i]);
    int rc = tio__fb_create_vector(w->b, buf, n, 4, 4, out, err);
    free(buf);
    return rc;
}

static int w_floats(tw *w, const float *v, size_t n, tio_fb_off *out, tio_error *err) {
    *out = 0;
    if (!n) return TIO_OK;
    uint8_t *buf = malloc(4 * n);
    if (!buf) return tio__nomem(err, TFL);
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        tio__st32(buf + 4 * i, u);
    }
    int rc = tio__fb_create_vector(w->b, buf, n, 4, 4, out, err);
    free(buf);
    return rc;
}

static int w_string(tw *w, const char *s, tio_fb_off *out, tio_error *err) {
    *out = 0;
    return s ? tio__fb_create_string(w->b, s, strlen(s), out, err) : TIO_OK;
}

static int w_quant(tw *w, const tfl_wquant *q, const char *lbl, tio_fb_off *out,
                   tio_error *err) {
    tio_fb_off mn, mx, sc, zp = 0, cu = 0, dt = 0;
    if (q->nzero_point && q->nzero_point != q->nscale)
        return tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                        "%s: %zu zero points for %zu scales (one per scale)", lbl,
                        q->nzero_point, q->nscale);
    int rc = w_floats(w, q->min, q->nmin, &mn, err);
    if (!rc) rc = w_floats(w, q->max, q->nmax, &mx, err);
    if (!rc) rc = w_floats(w, q->scale, q->nscale, &sc, err);
    if (!rc && q->nzero_point) {
        uint8_t *buf = malloc(8 * q->nzero_point);
        if (!buf) return tio__nomem(err, TFL);
        for (size_t i = 0; i < q->nzero_point; i++)
            tio__st64(buf + 8 * i, (uint64_t)q->zero_point[i]);
        rc = tio__fb_create_vector(w->b, buf, q->nzero_point, 8, 8, &zp, err);
        free(buf);
    }
    if (!rc && q->has_custom) {
        rc = tio__fb_create_vector(w->b, q->custom ? (const void *)q->custom : "", q->ncustom,
                                   1, 1, &cu, err);
        if (!rc) rc = tio__fb_start_table(w->b, err);
        if (!rc) rc = tio__fb_add_offset(w->b, TFL_CustomQuantization_custom, cu, err);
        if (!rc) rc = tio__fb_end_table(w->b, &dt, err);
    }
    if (!rc) rc = tio__fb_start_table(w->b, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_QuantizationParameters_min, mn, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_QuantizationParameters_max, mx, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_QuantizationParameters_scale, sc, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_QuantizationParameters_zero_point, zp, err);
    if (!rc && dt)
        rc = tio__fb_add_scalar(w->b, TFL_QuantizationParameters_details_type,
                                TFL_QuantizationDetails_CustomQuantization, 1, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_QuantizationParameters_details, dt, err);
    if (!rc)
        rc = tio__fb_add_i32_default(w->b, TFL_QuantizationParameters_quantized_dimension,
                                     q->quantized_dimension, 0, err);
    if (!rc) rc = tio__fb_end_table(w->b, out, err);
    return rc;
}

static int w_tensor(tw *w, size_t sg, size_t i, const tfl_wtensor *t, tio_fb_off *out,
                    tio_error *err) {
    const tfl_wmodel *m = w->m;
    char lbl[160];
    snprintf(lbl, sizeof lbl, "subgraph %zu tensor %zu ('%.100s')", sg, i,
             t->name ? t->name : "");
    if (t->type < 0 || t->type > INT8_MAX || !tio__tfl_enum_name("TensorType", t->type))
        return tio__err(err, TIO_E_ARGUMENT, TFL, -1, "%s: TensorType %d is not in the schema",
                        lbl, t->type);
    if (t->buffer >= m->nbuffers && t->buffer != 0) /* 0: none, even without buffers */
        return tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                        "%s: buffer %u is out of range (the model has %zu buffers)", lbl,
                        t->buffer, m->nbuffers);
    if (t->rank < -1 || t->nsig < -1 || (t->rank > 0 && !t->shape) ||
        (t->nsig > 0 && !t->shape_signature))
        return tio__err(err, TIO_E_ARGUMENT, TFL, -1, "%s: a shape without dimensions", lbl);
    for (int32_t k = 0; k < t->rank; k++)
        if (t->shape[k] < -1)
            return tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                            "%s: dimension %d is %d (a size, or -1 for a dynamic one)", lbl, k,
                            t->shape[k]);
    const tfl_wbuffer *bf = t->buffer ? &m->buffers[t->buffer] : NULL;
    if (bf && bf->tensor >= 0) {
        /* a container tensor's bytes: they must be what the shape and type say */
        const tio_wtensor *wt = tio__plan_tensor(w->plan, (size_t)bf->tensor);
        if (!wt)
            return tio__err(err, TIO_E_ARGUMENT, TFL, -1, "%s: container tensor %lld is not in "
                            "the save", lbl, (long long)bf->tensor);
        bool same = t->rank >= 0 && (size_t)t->rank == wt->rank &&
                    tio__tfl_type_of(wt->dtype) == t->type;
        for (size_t k = 0; same && k < wt->rank; k++) same = wt->shape[k] == t->shape[k];
        if (!same) {
            char a[96], b[96];
            tio__shape_str(wt->shape, wt->rank, a, sizeof a);
            if (t->rank >= 0) {
                int64_t d[16];
                size_t r = (size_t)t->rank < 16 ? (size_t)t->rank : 16;
                for (size_t k = 0; k < r; k++) d[k] = t->shape[k];
                tio__shape_str(d, r, b, sizeof b);
            } else {
                snprintf(b, sizeof b, "(no shape)");
            }
            const char *tn = tio__tfl_enum_name("TensorType", t->type);
            return tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                            "%s: its data are container tensor %lld ('%.80s', %s %s), but the "
                            "TFLite tensor is %s %s: a replaced tensor must keep its "
                            "tensor's type and shape",
                            lbl, (long long)bf->tensor, wt->name ? wt->name : "",
                            tio_dtype_name(wt->dtype), a, tn ? tn : "?", b);
        }
    }
    tio_fb_off sh, ss, nm, q = 0;
    int rc = w_ints(w, t->shape, t->rank > 0 ? (size_t)t->rank : 0, t->rank >= 0, &sh, err);
    if (!rc) rc = w_ints(w, t->shape_signature, t->nsig > 0 ? (size_t)t->nsig : 0, t->nsig >= 0,
                         &ss, err);
    if (!rc) rc = w_string(w, t->name, &nm, err);
    if (!rc && t->q) rc = w_quant(w, t->q, lbl, &q, err);
    if (!rc) rc = tio__fb_start_table(w->b, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_Tensor_shape, sh, err);
    if (!rc) rc = tio__fb_add_u8_default(w->b, TFL_Tensor_type, (uint8_t)t->type, 0, err);
    if (!rc) rc = tio__fb_add_u32_default(w->b, TFL_Tensor_buffer, t->buffer, 0, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_Tensor_name, nm, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_Tensor_quantization, q, err);
    if (!rc) rc = tio__fb_add_u8_default(w->b, TFL_Tensor_is_variable, t->is_variable, 0, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_Tensor_shape_signature, ss, err);
    if (!rc) rc = tio__fb_add_u8_default(w->b, TFL_Tensor_has_rank, t->has_rank, 0, err);
    if (!rc) rc = tio__fb_end_table(w->b, out, err);
    return rc;
}

/* Checks tensor indices v[0..n) against the subgraph's nt tensors (lo -1
 * admits an absent input). */
static int w_check_idx(const int32_t *v, size_t n, int32_t lo, size_t nt, const char *lbl,
                       const char *what, tio_error *err) {
    if (n && !v) return tio__err(err, TIO_E_ARGUMENT, TFL, -1, "%s: %s without values", lbl, what);
    for (size_t k = 0; k < n; k++)
        if (v[k] < lo || (v[k] >= 0 && (size_t)v[k] >= nt))
            return tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                            "%s: %s[%zu] is tensor %d, outside [%d, %zu)", lbl, what, k, v[k],
                            lo, nt);
    return TIO_OK;
}

static int w_op(tw *w, size_t sg, size_t k, const tfl_wop *o, tio_fb_off *out, tio_error *err) {
    const tfl_wsubgraph *s = &w->m->subgraphs[sg];
    char lbl[96];
    snprintf(lbl, sizeof lbl, "subgraph %zu operator %zu", sg, k);
    if (o->opcode >= w->m->ncodes)
        return tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                        "%s: operator code %u is out of range (the model has %zu)", lbl,
                        o->opcode, w->m->ncodes);
    int rc = w_check_idx(o->inputs, o->nin, -1, s->ntensors, lbl, "inputs", err);
    if (!rc) rc = w_check_idx(o->outputs, o->nout, -1, s->ntensors, lbl, "outputs", err);
    if (!rc) rc = w_check_idx(o->intermediates, o->ninter, 0, s->ntensors, lbl, "intermediates", err);
    if (!rc && o->custom_format != 0)
        rc = tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                      "%s: custom_options_format %d is not in the schema (0 = FLEXBUFFERS)", lbl,
                      o->custom_format);
    if (rc) return rc;
    tio_fb_off in, ou, it = 0, mu = 0, op1 = 0, op2 = 0, cu = 0;
    rc = w_ints(w, o->inputs, o->nin, true, &in, err);
    if (!rc) rc = w_ints(w, o->outputs, o->nout, true, &ou, err);
    if (!rc) rc = w_ints(w, o->intermediates, o->ninter, o->intermediates != NULL, &it, err);
    if (!rc && o->mutating)
        rc = tio__fb_create_vector(w->b, o->mutating, o->nmutating, 1, 1, &mu, err);
    if (!rc && o->opt_type)
        rc = w_options(w, o->opt_type, false, o->opts, o->nopts, lbl, &op1, err);
    else if (!rc && o->nopts)
        rc = tio__err(err, TIO_E_ARGUMENT, TFL, -1, "%s: options without a BuiltinOptions tag",
                      lbl);
    if (!rc && o->opt2_type)
        rc = w_options(w, o->opt2_type, true, o->opts2, o->nopts2, lbl, &op2, err);
    else if (!rc && o->nopts2)
        rc = tio__err(err, TIO_E_ARGUMENT, TFL, -1, "%s: options without a BuiltinOptions2 tag",
                      lbl);
    bool large = o->has_custom && w->offset_form && o->large_custom;
    if (!rc && o->has_custom && !large)
        rc = tio__fb_create_vector(w->b, o->custom ? (const void *)o->custom : "", o->ncustom, 1,
                                   1, &cu, err);
    if (!rc) rc = tio__fb_start_table(w->b, err);
    if (!rc) rc = tio__fb_add_u32_default(w->b, TFL_Operator_opcode_index, o->opcode, 0, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_Operator_inputs, in, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_Operator_outputs, ou, err);
    if (!rc) rc = tio__fb_add_u8_default(w->b, TFL_Operator_builtin_options_type, o->opt_type, 0, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_Operator_builtin_options, op1, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_Operator_custom_options, cu, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_Operator_mutating_variable_inputs, mu, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_Operator_intermediates, it, err);
    if (!rc && large) {
        uint64_t off = w->coff ? w->coff[w->cbase[sg] + k] : 2;
        rc = tio__fb_add_scalar(w->b, TFL_Operator_large_custom_options_offset, off, 8, err);
        if (!rc)
            rc = tio__fb_add_scalar(w->b, TFL_Operator_large_custom_options_size, o->ncustom, 8,
                                    err);
    }
    if (!rc)
        rc = tio__fb_add_u8_default(w->b, TFL_Operator_builtin_options_2_type, o->opt2_type, 0,
                                    err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_Operator_builtin_options_2, op2, err);
    if (!rc)
        rc = tio__fb_add_i32_default(w->b, TFL_Operator_debug_metadata_index,
                                     o->debug_metadata_index, -1, err);
    if (!rc) rc = tio__fb_end_table(w->b, out, err);
    return rc;
}

/* A vector of n tables made by fn(w, i) (references gathered first). */
static int w_subgraph(tw *w, size_t sg, tio_fb_off *out, tio_error *err) {
    const tfl_wsubgraph *s = &w->m->subgraphs[sg];
    char lbl[48];
    snprintf(lbl, sizeof lbl, "subgraph %zu", sg);
    int rc = w_check_idx(s->inputs, s->ninputs, 0, s->ntensors, lbl, "inputs", err);
    if (!rc) rc = w_check_idx(s->outputs, s->noutputs, 0, s->ntensors, lbl, "outputs", err);
    if (rc) return rc;
    size_t n = s->ntensors > s->nops ? s->ntensors : s->nops;
    tio_fb_off *refs = calloc(n ? n : 1, sizeof *refs);
    if (!refs) return tio__nomem(err, TFL);
    tio_fb_off tv = 0, ov = 0, iv, ouv, nm;
    for (size_t i = 0; i < s->ntensors && !rc; i++) rc = w_tensor(w, sg, i, &s->tensors[i], &refs[i], err);
    if (!rc) rc = tio__fb_create_offset_vector(w->b, refs, s->ntensors, &tv, err);
    for (size_t i = 0; i < s->nops && !rc; i++) rc = w_op(w, sg, i, &s->ops[i], &refs[i], err);
    if (!rc) rc = tio__fb_create_offset_vector(w->b, refs, s->nops, &ov, err);
    free(refs);
    if (!rc) rc = w_ints(w, s->inputs, s->ninputs, true, &iv, err);
    if (!rc) rc = w_ints(w, s->outputs, s->noutputs, true, &ouv, err);
    if (!rc) rc = w_string(w, s->name, &nm, err);
    if (!rc) rc = tio__fb_start_table(w->b, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_SubGraph_tensors, tv, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_SubGraph_inputs, iv, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_SubGraph_outputs, ouv, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_SubGraph_operators, ov, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_SubGraph_name, nm, err);
    if (!rc)
        rc = tio__fb_add_i32_default(w->b, TFL_SubGraph_debug_metadata_index,
                                     s->debug_metadata_index, -1, err);
    if (!rc) rc = tio__fb_end_table(w->b, out, err);
    return rc;
}

static int w_tmaps(tw *w, const tfl_wtmap *v, size_t n, size_t nt, const char *lbl,
                   tio_fb_off *out, tio_error *err) {
    tio_fb_off *refs = calloc(n ? n : 1, sizeof *refs);
    if (!refs) return tio__nomem(err, TFL);
    int rc = TIO_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        tio_fb_off nm;
        if (v[i].tensor >= nt) {
            rc = tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                          "%s %zu: tensor %u is out of range (the subgraph has %zu)", lbl, i,
                          v[i].tensor, nt);
            break;
        }
        rc = w_string(w, v[i].name, &nm, err);
        if (!rc) rc = tio__fb_start_table(w->b, err);
        if (!rc) rc = tio__fb_add_offset(w->b, TFL_TensorMap_name, nm, err);
        if (!rc) rc = tio__fb_add_u32_default(w->b, TFL_TensorMap_tensor_index, v[i].tensor, 0, err);
        if (!rc) rc = tio__fb_end_table(w->b, &refs[i], err);
    }
    if (!rc) rc = tio__fb_create_offset_vector(w->b, refs, n, out, err);
    free(refs);
    return rc;
}

/* Model.signature_defs and Model.metadata. */
static int w_extras(tw *w, tio_fb_off *sigs, tio_fb_off *meta, tio_error *err) {
    const tfl_wmodel *m = w->m;
    size_t n = m->nsigs > m->nmetadata ? m->nsigs : m->nmetadata;
    tio_fb_off *refs = calloc(n ? n : 1, sizeof *refs);
    if (!refs) return tio__nomem(err, TFL);
    int rc = TIO_OK;
    *sigs = *meta = 0;
    for (size_t i = 0; i < m->nsigs && !rc; i++) {
        const tfl_wsig *g = &m->sigs[i];
        char lbl[64];
        if (g->subgraph >= m->nsubgraphs) {
            rc = tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                          "signature def %zu: subgraph %u is out of range (the model has %zu)",
                          i, g->subgraph, m->nsubgraphs);
            break;
        }
        size_t nt = m->subgraphs[g->subgraph].ntensors;
        tio_fb_off iv, ov, key;
        snprintf(lbl, sizeof lbl, "signature def %zu input", i);
        rc = w_tmaps(w, g->inputs, g->ninputs, nt, lbl, &iv, err);
        snprintf(lbl, sizeof lbl, "signature def %zu output", i);
        if (!rc) rc = w_tmaps(w, g->outputs, g->noutputs, nt, lbl, &ov, err);
        if (!rc) rc = w_string(w, g->key, &key, err);
        if (!rc) rc = tio__fb_start_table(w->b, err);
        if (!rc) rc = tio__fb_add_offset(w->b, TFL_SignatureDef_inputs, iv, err);
        if (!rc) rc = tio__fb_add_offset(w->b, TFL_SignatureDef_outputs, ov, err);
        if (!rc) rc = tio__fb_add_offset(w->b, TFL_SignatureDef_signature_key, key, err);
        if (!rc)
            rc = tio__fb_add_u32_default(w->b, TFL_SignatureDef_subgraph_index, g->subgraph, 0,
                                         err);
        if (!rc) rc = tio__fb_end_table(w->b, &refs[i], err);
    }
    if (!rc && m->nsigs) rc = tio__fb_create_offset_vector(w->b, refs, m->nsigs, sigs, err);
    for (size_t i = 0; i < m->nmetadata && !rc; i++) {
        const tfl_wmetadata *d = &m->metadata[i];
        tio_fb_off nm;
        if (d->buffer >= m->nbuffers) {
            rc = tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                          "metadata %zu ('%.80s'): buffer %u is out of range (the model has "
                          "%zu)",
                          i, d->name ? d->name : "", d->buffer, m->nbuffers);
            break;
        }
        rc = w_string(w, d->name, &nm, err);
        if (!rc) rc = tio__fb_start_table(w->b, err);
        if (!rc) rc = tio__fb_add_offset(w->b, TFL_Metadata_name, nm, err);
        if (!rc) rc = tio__fb_add_u32_default(w->b, TFL_Metadata_buffer, d->buffer, 0, err);
        if (!rc) rc = tio__fb_end_table(w->b, &refs[i], err);
    }
    if (!rc && m->nmetadata) rc = tio__fb_create_offset_vector(w->b, refs, m->nmetadata, meta, err);
    free(refs);
    return rc;
}

/* Model.buffers: data vectors created last buffer first, so that they lie in
 * buffer order at the end of the model. */
static int w_buffers(tw *w, tio_fb_off *out, tio_error *err) {
    const tfl_wmodel *m = w->m;
    tio_fb_off *refs = calloc(m->nbuffers ? m->nbuffers : 1, sizeof *refs);
    tio_fb_off *data = calloc(m->nbuffers ? m->nbuffers : 1, sizeof *data);
    int rc = refs && data ? TIO_OK : tio__nomem(err, TFL);
    for (size_t i = m->nbuffers; i-- > 0 && !rc;) {
        const tfl_wbuffer *bf = &m->buffers[i];
        if (bf->tensor >= 0) {
            const tio_wtensor *wt = tio__plan_tensor(w->plan, (size_t)bf->tensor);
            if (!wt || wt->nbytes != bf->size) {
                rc = tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                              "buffer %zu: container tensor %lld %s %zu bytes", i,
                              (long long)bf->tensor,
                              wt ? "does not hold" : "is not in the save; expected",
                              bf->size);
                break;
            }
        } else if (bf->size && !bf->data && !bf->gen) {
            rc = tio__err(err, TIO_E_ARGUMENT, TFL, -1, "buffer %zu: %zu bytes without data", i,
                          bf->size);
            break;
        }
        if (w->offset_form || (!bf->size && !bf->force_data)) continue;
        rc = tio__fb_create_vector_ext(w->b, bf->size, TFL_ALIGN, i, &data[i], err);
    }
    for (size_t i = 0; i < m->nbuffers && !rc; i++) {
        const tfl_wbuffer *bf = &m->buffers[i];
        rc = tio__fb_start_table(w->b, err);
        if (!rc) rc = tio__fb_add_offset(w->b, TFL_Buffer_data, data[i], err);
        if (!rc && w->offset_form && bf->size) {
            uint64_t off = w->boff ? w->boff[i] : 2; /* a placeholder in the first pass */
            rc = tio__fb_add_scalar(w->b, TFL_Buffer_offset, off, 8, err);
            if (!rc) rc = tio__fb_add_scalar(w->b, TFL_Buffer_size, bf->size, 8, err);
        }
        if (!rc) rc = tio__fb_end_table(w->b, &refs[i], err);
    }
    if (!rc) rc = tio__fb_create_offset_vector(w->b, refs, m->nbuffers, out, err);
    free(refs);
    free(data);
    return rc;
}

static int w_codes(tw *w, tio_fb_off *out, tio_error *err) {
    const tfl_wmodel *m = w->m;
    tio_fb_off *refs = calloc(m->ncodes ? m->ncodes : 1, sizeof *refs);
    if (!refs) return tio__nomem(err, TFL);
    int rc = TIO_OK;
    for (size_t k = 0; k < m->ncodes && !rc; k++) {
        const tfl_wcode *c = &m->codes[k];
        tio_fb_off cs;
        if (c->builtin < 0 || c->version < 0 || c->deprecated < 0 ||
            (c->deprecated != c->builtin && c->deprecated != 127))
            rc = tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                          "operator code %zu: builtin %d, deprecated code %d, version %d (a "
                          "builtin >= 0, the deprecated code the builtin or 127, a version "
                          ">= 0)",
                          k, c->builtin, c->deprecated, c->version);
        if (!rc) rc = w_string(w, c->custom, &cs, err);
        if (!rc) rc = tio__fb_start_table(w->b, err);
        if (!rc)
            rc = tio__fb_add_u8_default(w->b, TFL_OperatorCode_deprecated_builtin_code,
                                        (uint8_t)c->deprecated, 0, err);
        if (!rc) rc = tio__fb_add_offset(w->b, TFL_OperatorCode_custom_code, cs, err);
        if (!rc) rc = tio__fb_add_i32_default(w->b, TFL_OperatorCode_version, c->version, 1, err);
        if (!rc)
            rc = tio__fb_add_i32_default(w->b, TFL_OperatorCode_builtin_code, c->builtin, 0, err);
        if (!rc) rc = tio__fb_end_table(w->b, &refs[k], err);
    }
    if (!rc) rc = tio__fb_create_offset_vector(w->b, refs, m->ncodes, out, err);
    free(refs);
    return rc;
}

/* Builds the whole model in w->b (a new builder). */
static int w_build(tw *w, tio_error *err) {
    const tfl_wmodel *m = w->m;
    tio__fb_builder_free(w->b);
    w->b = tio__fb_builder_new(TFL);
    if (!w->b) return tio__nomem(err, TFL);
    tio_fb_off bufs, codes, sgv = 0, desc, sigs, meta, mb = 0, root;
    int rc = w_buffers(w, &bufs, err);
    tio_fb_off *refs = calloc(m->nsubgraphs ? m->nsubgraphs : 1, sizeof *refs);
    if (!refs && !rc) rc = tio__nomem(err, TFL);
    for (size_t i = 0; i < m->nsubgraphs && !rc; i++) rc = w_subgraph(w, i, &refs[i], err);
    if (!rc) rc = tio__fb_create_offset_vector(w->b, refs, m->nsubgraphs, &sgv, err);
    free(refs);
    if (!rc) rc = w_codes(w, &codes, err);
    if (!rc) rc = w_extras(w, &sigs, &meta, err);
    if (!rc) rc = w_string(w, m->description, &desc, err);
    if (!rc && m->metadata_buffer) {
        for (size_t i = 0; i < m->nmetadata_buffer && !rc; i++)
            if (m->metadata_buffer[i] < 0 || (size_t)m->metadata_buffer[i] >= m->nbuffers)
                rc = tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                              "metadata_buffer[%zu] is buffer %d, out of range (the model has "
                              "%zu)",
                              i, m->metadata_buffer[i], m->nbuffers);
        if (!rc) rc = w_ints(w, m->metadata_buffer, m->nmetadata_buffer, true, &mb, err);
    }
    if (!rc) rc = tio__fb_start_table(w->b, err);
    if (!rc) rc = tio__fb_add_u32_default(w->b, TFL_Model_version, m->version, 0, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_Model_operator_codes, codes, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_Model_subgraphs, sgv, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_Model_description, desc, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_Model_buffers, bufs, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_Model_metadata_buffer, mb, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_Model_metadata, meta, err);
    if (!rc) rc = tio__fb_add_offset(w->b, TFL_Model_signature_defs, sigs, err);
    if (!rc) rc = tio__fb_end_table(w->b, &root, err);
    if (!rc) rc = tio__fb_finish_id(w->b, root, TFL_IDENTIFIER, err);
    return rc;
}

/* Writes buffer `tag`'s bytes: the plan's (container tensor) or the model's. */
static int w_emit(void *ctx, tio_sink *s, uint64_t tag, size_t n, tio_error *err) {
    tw *w = ctx;
    const tfl_wbuffer *bf = &w->m->buffers[tag];
    if (bf->tensor >= 0) return tio__plan_sink_tensor(w->plan, s, (size_t)bf->tensor, err);
    if (bf->gen) {
        uint64_t at = tio__sink_pos(s);
        int rc = bf->gen(bf->gen_ctx, s, n, err);
        if (!rc && tio__sink_pos(s) - at != n)
            rc = tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                          "buffer %llu: its generator wrote %llu bytes, not %zu",
                          (unsigned long long)tag, (unsigned long long)(tio__sink_pos(s) - at),
                          n);
        return rc;
    }
    return tio__sink_write(s, bf->data, n, err);
}

static bool w_any_large(const tfl_wmodel *m) {
    for (size_t i = 0; i < m->nsubgraphs; i++)
        for (size_t k = 0; k < m->subgraphs[i].nops; k++)
            if (m->subgraphs[i].ops[k].has_custom && m->subgraphs[i].ops[k].large_custom)
                return true;
    return false;
}

static uint64_t align_up(uint64_t v) { return (v + TFL_ALIGN - 1) & ~(uint64_t)(TFL_ALIGN - 1); }

/* The offset form: the model (built twice: first with placeholder offsets to
 * learn its size, which the offsets do not change), then the data. */
static int w_offset_form(tw *w, tio_sink *sink, tio_error *err) {
    const tfl_wmodel *m = w->m;
    size_t nops = 0;
    for (size_t i = 0; i < m->nsubgraphs; i++) nops += m->subgraphs[i].nops;
    w->cbase = calloc(m->nsubgraphs + 1, sizeof *w->cbase);
    uint64_t *boff = calloc(m->nbuffers + 1, sizeof *boff);
    uint64_t *coff = calloc(nops + 1, sizeof *coff);
    int rc = w->cbase && boff && coff ? TIO_OK : tio__nomem(err, TFL);
    for (size_t i = 0, c = 0; i < m->nsubgraphs && !rc; i++) {
        w->cbase[i] = c;
        c += m->subgraphs[i].nops;
    }
    if (!rc) rc = w_build(w, err);
    size_t first = 0;
    if (!rc) tio__fb_write_size(w->b, &first);
    uint64_t pos = align_up(first);
    for (size_t i = 0; i < m->nbuffers && !rc; i++)
        if (m->buffers[i].size) {
            boff[i] = pos;
            pos = align_up(pos + m->buffers[i].size);
        }
    for (size_t i = 0, c = 0; i < m->nsubgraphs && !rc; i++)
        for (size_t k = 0; k < m->subgraphs[i].nops; k++, c++) {
            const tfl_wop *o = &m->subgraphs[i].ops[k];
            if (!o->has_custom || !o->large_custom) continue;
            coff[c] = pos;
            pos = align_up(pos + o->ncustom);
        }
    if (!rc) {
        w->boff = boff;
        w->coff = coff;
        rc = w_build(w, err);
    }
    size_t second = 0;
    if (!rc) tio__fb_write_size(w->b, &second);
    if (!rc && second != first)
        rc = tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                      "the model's size changed with its buffer offsets (%zu, then %zu bytes)",
                      first, second);
    if (!rc) rc = tio__fb_write(w->b, sink, w_emit, w, err);
    uint64_t at = first;
    for (size_t i = 0; i < m->nbuffers && !rc; i++) {
        if (!m->buffers[i].size) continue;
        rc = tio__sink_zeros(sink, (size_t)(boff[i] - at), err);
        if (!rc) rc = w_emit(w, sink, i, m->buffers[i].size, err);
        at = boff[i] + m->buffers[i].size;
    }
    for (size_t i = 0, c = 0; i < m->nsubgraphs && !rc; i++)
        for (size_t k = 0; k < m->subgraphs[i].nops && !rc; k++, c++) {
            const tfl_wop *o = &m->subgraphs[i].ops[k];
            if (!o->has_custom || !o->large_custom) continue;
            rc = tio__sink_zeros(sink, (size_t)(coff[c] - at), err);
            if (!rc) rc = tio__sink_write(sink, o->custom, o->ncustom, err);
            at = coff[c] + o->ncustom;
        }
    if (!rc && align_up(at) != at) rc = tio__sink_zeros(sink, (size_t)(align_up(at) - at), err);
    w->boff = NULL;
    w->coff = NULL;
    free(boff);
    free(coff);
    return rc;
}

int tio__tfl_w_serialise(const tfl_wmodel *m, tio_write_plan *plan, tio_sink *sink,
                         tio_error *err) {
    tw w;
    memset(&w, 0, sizeof w);
    w.m = m;
    w.plan = plan;
    if (m->nsubgraphs == 0)
        return tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                        "a TensorFlow Lite model needs at least one subgraph");
    int rc;
    if (w_any_large(m)) {
        w.offset_form = true;
        rc = w_offset_form(&w, sink, err);
    } else {
        tio_error e2;
        rc = w_build(&w, &e2);
        if (rc == TIO_E_LIMIT) { /* past 2 GiB: the offset form */
            w.offset_form = true;
            rc = w_offset_form(&w, sink, err);
        } else if (rc) {
            *err = e2;
        } else {
            rc = tio__fb_write(w.b, sink, w_emit, &w, err);
        }
    }
    tio__fb_builder_free(w.b);
    free(w.cbase);
    return rc;
}

int tio__tfl_cast_check(const tio_write_plan *plan, bool *f16, tio_error *err) {
    *f16 = false;
    for (size_t i = 0; i < tio__plan_count(plan); i++) {
        const tio_wtensor *wt = tio__plan_tensor(plan, i);
        if (!wt->cast) continue;
        if (wt->src->dtype != TIO_FLOAT32 || wt->dtype != TIO_FLOAT16)
            return tio__err(err, TIO_E_UNSUPPORTED, TFL, -1,
                            "tensor %zu ('%.80s'): a cast from %s to %s has no TensorFlow Lite "
                            "form (TensorFlow Lite keeps float32 weights as float16, each "
                            "DEQUANTIZEd: --cast float16 or float32=float16)",
                            i, wt->name ? wt->name : "", tio_dtype_name(wt->src->dtype),
                            tio_dtype_name(wt->dtype));
        *f16 = true;
    }
    return TIO_OK;
}
