/*
 * .tflite -> .tflite: the source model (verified when it was opened, kept by
 * the reader as the container's native state) walked again into the writer's
 * model (src/tflite/write.h), every table through the schema data, with the
 * container's tensors as the buffers' bytes. See docs/formats/tflite.md
 * ("Writing").
 */
#include "tflite/write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TFL "tflite"

typedef struct rw {
    const tfl_native *nat;
    tio_write_plan *plan;
    tfl_wmodel *m;
    tio_error *err;
    const uint8_t *buf;
    size_t len;
    bool cast16; /* DEQUANTIZEs of float16 were added (rw_dequantize) */
} rw;

static void dg_kv(tio_sha256 *h, const tio_kv *kv) {
    uint64_t n = kv ? kv->count : 0;
    tio__sha256_update(h, &n, sizeof n);
    for (size_t i = 0; kv && i < kv->count; i++) {
        uint64_t l[2] = {kv->klens[i], kv->vlens[i]};
        tio__sha256_update(h, l, sizeof l);
        tio__sha256_update(h, kv->keys[i], kv->klens[i]);
        tio__sha256_update(h, kv->values[i], kv->vlens[i]);
    }
}

int tio__tfl_meta_digest(const tio_container *c, uint8_t out[32], tio_error *err) {
    tio_sha256 *h;
    int rc = tio__sha256_new(&h, err);
    if (rc) return rc;
    dg_kv(h, &c->meta);
    dg_kv(h, &c->meta_types);
    for (size_t i = 0; i < c->count; i++) dg_kv(h, c->tensors[i]->meta);
    tio__sha256_final(h, out);
    return TIO_OK;
}

void tio__tfl_native_free(void *p) {
    tfl_native *n = p;
    if (!n) return;
    free(n->ctensor);
    free(n->sgbase);
    tio__fb_blobs_free(&n->blobs);
    free(n);
}

/* Refuses a table holding fields past the schema's (a newer schema's
 * fields would be lost). */
static int rw_newer(rw *r, const tio_fb_ref *t, const tio_fb_table *tab, const char *what) {
    unsigned n = tio__fb_slot_count(t);
    for (unsigned id = tab->nfields; id < n; id++)
        if (tio__fb_has(t, id))
            return tio__err(r->err, TIO_E_UNSUPPORTED, TFL, (int64_t)t->pos,
                            "%s: %s field %u is newer than tensio's TensorFlow Lite schema; "
                            "rewriting the model would drop it",
                            what, tab->name, id);
    return TIO_OK;
}

/* A copy of an [int] vector (NULL when absent; *present says which). */
static int rw_ints(rw *r, const tio_fb_ref *t, unsigned id, const int32_t **out, size_t *n,
                   bool *present) {
    tio_fb_vec v;
    *out = NULL;
    *n = 0;
    bool has = tio__fb_vector(t, id, &v);
    if (present) *present = has;
    if (!has) return TIO_OK;
    int32_t *a = tio__tfl_w_alloc(r->m, ((size_t)v.count + 1) * sizeof *a);
    if (!a) return tio__nomem(r->err, TFL);
    for (uint32_t i = 0; i < v.count; i++) a[i] = tio__fb_vec_i32(&v, i);
    *out = a;
    *n = v.count;
    return TIO_OK;
}

static int rw_floats(rw *r, const tio_fb_ref *t, unsigned id, const float **out, size_t *n) {
    tio_fb_vec v;
    *out = NULL;
    *n = 0;
    if (!tio__fb_vector(t, id, &v) || !v.count) return TIO_OK;
    float *a = tio__tfl_w_alloc(r->m, (size_t)v.count * sizeof *a);
    if (!a) return tio__nomem(r->err, TFL);
    for (uint32_t i = 0; i < v.count; i++) {
        uint32_t u = tio__ld32(tio__fb_vec_data(&v) + 4u * i);
        memcpy(&a[i], &u, 4);
    }
    *out = a;
    *n = v.count;
    return TIO_OK;
}

/* A string field (NUL-terminated in the buffer; checked for NULs where the
 * reader keeps it as a C string). */
static const char *rw_str(const tio_fb_ref *t, unsigned id) {
    const char *s = NULL;
    uint32_t n = 0;
    return tio__fb_string(t, id, &s, &n) ? s : NULL;
}

/* ------------------------------------------------------------ options */

/* Every present field of options table `t` (member `tag`) as (id, value). */
static int rw_options(rw *r, const tio_fb_ref *t, unsigned tag, bool second, tfl_wop *op,
                      const char *what) {
    const tio_fb_table *tab = tio__tfl_w_opt_table(tag, second);
    if (!tab)
        return tio__err(r->err, TIO_E_UNSUPPORTED, TFL, (int64_t)t->pos,
                        "%s: %s member %u is newer than tensio's TensorFlow Lite schema", what,
                        second ? "BuiltinOptions2" : "BuiltinOptions", tag);
    int rc = rw_newer(r, t, tab, what);
    for (uint16_t id = 0; id < tab->nfields && !rc; id++) {
        const tio_fb_field *f = &tab->fields[id];
        if (f->kind == TIO_FB_NONE || !tio__fb_has(t, id)) continue;
        tfl_wopt o;
        memset(&o, 0, sizeof o);
        o.id = id;
        o.kind = f->kind;
        o.elem = f->elem;
        if (f->kind == TIO_FB_STRING) {
            uint32_t n = 0;
            tio__fb_string(t, id, &o.s, &n);
            o.count = n;
        } else if (f->kind == TIO_FB_VECTOR) {
            tio_fb_vec v;
            size_t es = tio__fb_scalar_size(f->elem);
            if (!es || !tio__fb_vector(t, id, &v))
                return tio__err(r->err, TIO_E_UNSUPPORTED, TFL, (int64_t)t->pos,
                                "%s: %s.%s is not a vector of scalars", what, tab->name,
                                f->name);
            o.count = v.count;
            bool fl = f->elem == TIO_FB_F32 || f->elem == TIO_FB_F64;
            void *a = tio__tfl_w_alloc(r->m, ((size_t)v.count + 1) * 8);
            if (!a) return tio__nomem(r->err, TFL);
            const uint8_t *d = tio__fb_vec_data(&v);
            for (uint32_t i = 0; i < v.count; i++) {
                uint64_t bits = 0;
                for (size_t b = 0; b < es; b++) bits |= (uint64_t)d[i * es + b] << (8 * b);
                if (fl) {
                    double x;
                    if (es == 4) {
                        float y;
                        uint32_t u = (uint32_t)bits;
                        memcpy(&y, &u, 4);
                        x = y;
                    } else {
                        memcpy(&x, &bits, 8);
                    }
                    ((double *)a)[i] = x;
                } else {
                    int64_t x;
                    switch (f->elem) {
                    case TIO_FB_I8: x = (int8_t)bits; break;
                    case TIO_FB_I16: x = (int16_t)bits; break;
                    case TIO_FB_I32: x = (int32_t)bits; break;
                    case TIO_FB_BOOL: x = bits != 0; break;
                    default: x = (int64_t)bits; break;
                    }
                    ((int64_t *)a)[i] = x;
                }
            }
            if (fl)
                o.floats = a;
            else
                o.ints = a;
        } else {
            tio__fb_scalar(t, id, f, &o.i, &o.f);
        }
        rc = tio__tfl_w_opt_add(r->m, op, second, &o, r->err);
    }
    return rc;
}

/* ------------------------------------------------------------ tensors */

static int rw_quant(rw *r, const tio_fb_ref *tt, const char *what, const tfl_wquant **out) {
    tio_fb_ref q;
    *out = NULL;
    if (!tio__fb_table(tt, TFL_Tensor_quantization, &q)) return TIO_OK;
    int rc = rw_newer(r, &q, tio__tfl_table("QuantizationParameters"), what);
    if (rc) return rc;
    tfl_wquant *w = tio__tfl_w_alloc(r->m, sizeof *w);
    if (!w) return tio__nomem(r->err, TFL);
    rc = rw_floats(r, &q, TFL_QuantizationParameters_min, &w->min, &w->nmin);
    if (!rc) rc = rw_floats(r, &q, TFL_QuantizationParameters_max, &w->max, &w->nmax);
    if (!rc) rc = rw_floats(r, &q, TFL_QuantizationParameters_scale, &w->scale, &w->nscale);
    if (rc) return rc;
    tio_fb_vec zv;
    if (tio__fb_vector(&q, TFL_QuantizationParameters_zero_point, &zv) && zv.count) {
        if (zv.count != w->nscale)
            return tio__err(r->err, TIO_E_UNSUPPORTED, TFL, (int64_t)zv.data,
                            "%s: %u zero points for %zu scales cannot be written as they are",
                            what, zv.count, w->nscale);
        int64_t *z = tio__tfl_w_alloc(r->m, (size_t)zv.count * sizeof *z);
        if (!z) return tio__nomem(r->err, TFL);
        for (uint32_t i = 0; i < zv.count; i++)
            z[i] = (int64_t)tio__ld64(tio__fb_vec_data(&zv) + 8u * i);
        w->zero_point = z;
        w->nzero_point = zv.count;
    }
    w->quantized_dimension = tio__fb_i32(&q, TFL_QuantizationParameters_quantized_dimension, 0);
    unsigned dt = tio__fb_u8(&q, TFL_QuantizationParameters_details_type, 0);
    if (dt == TFL_QuantizationDetails_CustomQuantization) {
        tio_fb_ref cq;
        tio_fb_vec cv;
        if (tio__fb_table(&q, TFL_QuantizationParameters_details, &cq)) {
            w->has_custom = true;
            if (tio__fb_vector(&cq, TFL_CustomQuantization_custom, &cv)) {
                w->custom = tio__fb_vec_data(&cv);
                w->ncustom = cv.count;
            }
        }
    } else if (dt) {
        const char *dn = tio__tfl_enum_name("QuantizationDetails", dt);
        return tio__err(r->err, TIO_E_UNSUPPORTED, TFL, (int64_t)q.pos,
                        "%s: quantization details %s (%u); the TensorFlow Lite writer keeps "
                        "CustomQuantization only",
                        what, dn ? dn : "of a newer schema", dt);
    }
    *out = w;
    return TIO_OK;
}

/* The name the reader gave tensor i of subgraph sg (tflite.c tfl_tensor_name). */
static void rw_read_name(uint32_t sg, uint32_t i, const char *s, char *out, size_t cap) {
    int k = sg > 0 ? snprintf(out, cap, "subgraph%u/", sg) : 0;
    if (k < 0) k = 0;
    if (s && *s)
        snprintf(out + k, cap - (size_t)k, "%s", s);
    else
        snprintf(out + k, cap - (size_t)k, "tensor%u", i);
}

/* *cast16: the buffer of a constant the save casts to float16 (the tensor
 * itself is left without one: a DEQUANTIZE of a float16 tensor holding it
 * makes it, rw_subgraphs), else 0. */
static int rw_tensor(rw *r, uint32_t sg, uint32_t i, const tio_fb_ref *tt, tfl_wtensor *t,
                     uint32_t *cast16) {
    *cast16 = 0;
    char what[64];
    snprintf(what, sizeof what, "subgraph %u tensor %u", sg, i);
    int rc = rw_newer(r, tt, tio__tfl_table("Tensor"), what);
    if (rc) return rc;
    memset(t, 0, sizeof *t);
    t->name = rw_str(tt, TFL_Tensor_name);
    t->type = tio__fb_i8(tt, TFL_Tensor_type, 0);
    t->buffer = tio__fb_u32(tt, TFL_Tensor_buffer, 0);
    t->is_variable = tio__fb_bool(tt, TFL_Tensor_is_variable, false);
    t->has_rank = tio__fb_bool(tt, TFL_Tensor_has_rank, false);
    if (tio__fb_has(tt, TFL_Tensor_sparsity))
        return tio__err(r->err, TIO_E_UNSUPPORTED, TFL, (int64_t)tt->pos,
                        "%s ('%s') is sparse (SparsityParameters); the TensorFlow Lite writer "
                        "does not write sparse tensors",
                        what, t->name ? t->name : "");
    if (tio__fb_has(tt, TFL_Tensor_variant_tensors) ||
        tio__fb_u32(tt, TFL_Tensor_external_buffer, 0))
        return tio__err(r->err, TIO_E_UNSUPPORTED, TFL, (int64_t)tt->pos,
                        "%s ('%s') has variant_tensors or an external_buffer, which the "
                        "TensorFlow Lite writer does not write",
                        what, t->name ? t->name : "");
    if (t->buffer >= r->m->nbuffers && t->buffer != 0)
        return tio__err(r->err, TIO_E_CORRUPT, TFL, (int64_t)tt->pos, "%s: buffer %u out of range",
                        what, t->buffer);
    const int32_t *v;
    size_t n;
    bool present;
    rc = rw_ints(r, tt, TFL_Tensor_shape, &v, &n, &present);
    t->shape = v;
    t->rank = present ? (int32_t)n : -1;
    if (!rc) rc = rw_ints(r, tt, TFL_Tensor_shape_signature, &v, &n, &present);
    t->shape_signature = v;
    t->nsig = present ? (int32_t)n : -1;
    if (!rc) rc = rw_quant(r, tt, what, &t->q);
    if (rc) return rc;
    /* the container tensor: its bytes become the buffer's, its name the tensor's */
    int64_t ct = r->nat->ctensor[r->nat->sgbase[sg] + i];
    if (ct < 0) return TIO_OK;
    const tio_wtensor *wt = tio__plan_tensor(r->plan, (size_t)ct);
    if (!wt) return tio__err(r->err, TIO_E_ARGUMENT, TFL, -1, "%s: no container tensor", what);
    char rn[300];
    rw_read_name(sg, i, t->name, rn, sizeof rn);
    if (!wt->name) {
        t->name = NULL;
    } else if (strcmp(wt->name, rn) != 0) {
        const char *nm = wt->name;
        char pre[32];
        int k = snprintf(pre, sizeof pre, "subgraph%u/", sg);
        if (sg > 0 && k > 0 && strncmp(nm, pre, (size_t)k) == 0) nm += k;
        t->name = nm;
    }
    if (t->buffer == 0) return TIO_OK;
    tfl_wbuffer *bf = &r->m->buffers[t->buffer];
    if (wt->cast) {
        if (bf->tensor >= 0)
            return tio__err(r->err, TIO_E_UNSUPPORTED, TFL, -1,
                            "%s ('%s') shares buffer %u with container tensor %lld: a shared "
                            "buffer is not cast (its tensors would need one DEQUANTIZE each)",
                            what, wt->name ? wt->name : "", t->buffer, (long long)bf->tensor);
        /* (TensorFlow writes an empty QuantizationParameters on float
         * tensors: that is no quantization) */
        bool quant = t->q && (t->q->nscale || t->q->nzero_point || t->q->has_custom);
        if (t->type != TFL_TensorType_FLOAT32 || quant || t->is_variable)
            return tio__err(r->err, TIO_E_UNSUPPORTED, TFL, -1,
                            "%s ('%s'): a cast of a %stensor of TensorType %d%s has no "
                            "TensorFlow Lite form (float32 weights become float16 ones, each "
                            "DEQUANTIZEd)",
                            what, wt->name ? wt->name : "", t->is_variable ? "variable " : "",
                            (int)t->type, quant ? " with quantization parameters" : "");
        *cast16 = t->buffer;
        t->buffer = 0;
    }
    if (bf->tensor < 0) {
        bf->tensor = ct;
        bf->data = NULL;
        bf->size = wt->nbytes;
    } else {
        /* a buffer that several tensors share: written once, from the first;
         * the others must still hold the same bytes */
        const uint8_t *a = tio__plan_view(r->plan, (size_t)bf->tensor);
        const uint8_t *b = tio__plan_view(r->plan, (size_t)ct);
        if (!a || !b || wt->nbytes != bf->size || (a != b && memcmp(a, b, bf->size) != 0))
            return tio__err(r->err, TIO_E_UNSUPPORTED, TFL, -1,
                            "%s ('%s') shares buffer %u with container tensor %lld, but their "
                            "bytes now differ; a TensorFlow Lite buffer has one content",
                            what, wt->name ? wt->name : "", t->buffer, (long long)bf->tensor);
    }
    return TIO_OK;
}

/* ------------------------------------------------------------ operators */

static int rw_op(rw *r, uint32_t sg, uint32_t k, const tio_fb_ref *ot, tfl_wop *o) {
    char what[64];
    snprintf(what, sizeof what, "subgraph %u operator %u", sg, k);
    int rc = rw_newer(r, ot, tio__tfl_table("Operator"), what);
    if (rc) return rc;
    memset(o, 0, sizeof *o);
    o->opcode = tio__fb_u32(ot, TFL_Operator_opcode_index, 0);
    o->debug_metadata_index = tio__fb_i32(ot, TFL_Operator_debug_metadata_index, -1);
    o->custom_format = tio__fb_i8(ot, TFL_Operator_custom_options_format, 0);
    rc = rw_ints(r, ot, TFL_Operator_inputs, &o->inputs, &o->nin, NULL);
    if (!rc) rc = rw_ints(r, ot, TFL_Operator_outputs, &o->outputs, &o->nout, NULL);
    if (!rc) rc = rw_ints(r, ot, TFL_Operator_intermediates, &o->intermediates, &o->ninter, NULL);
    if (rc) return rc;
    tio_fb_vec v;
    if (tio__fb_vector(ot, TFL_Operator_mutating_variable_inputs, &v)) {
        o->mutating = v.count ? tio__fb_vec_data(&v) : (const uint8_t *)"";
        o->nmutating = v.count;
    }
    if (tio__fb_vector(ot, TFL_Operator_custom_options, &v)) {
        o->has_custom = true;
        o->custom = tio__fb_vec_data(&v);
        o->ncustom = v.count;
    }
    uint64_t lo = tio__fb_u64(ot, TFL_Operator_large_custom_options_offset, 0);
    uint64_t ls = tio__fb_u64(ot, TFL_Operator_large_custom_options_size, 0);
    if (lo > 1 && !o->has_custom) {
        if (lo + ls > r->len || lo + ls < lo) /* checked when read */
            return tio__err(r->err, TIO_E_BOUNDS, TFL, (int64_t)ot->pos,
                            "%s: large custom options past the end of the file", what);
        o->has_custom = true;
        o->large_custom = true;
        o->custom = r->buf + lo;
        o->ncustom = (size_t)ls;
    }
    for (unsigned second = 0; second < 2 && !rc; second++) {
        unsigned tf = second ? TFL_Operator_builtin_options_2_type
                             : TFL_Operator_builtin_options_type;
        unsigned vf = second ? TFL_Operator_builtin_options_2 : TFL_Operator_builtin_options;
        unsigned tag = tio__fb_u8(ot, tf, 0);
        tio_fb_ref opt;
        if (!tag) continue;
        if (second)
            o->opt2_type = (uint8_t)tag;
        else
            o->opt_type = (uint8_t)tag;
        if (!tio__fb_table(ot, vf, &opt)) {
            if (!tio__tfl_w_opt_table(tag, second))
                rc = rw_options(r, ot, tag, second, o, what); /* names the newer member */
            continue; /* a tag without a table: an empty options table */
        }
        rc = rw_options(r, &opt, tag, second, o, what);
    }
    return rc;
}

/* ------------------------------------------------------------- model */

static int rw_buffers(rw *r, const tio_fb_ref *model) {
    tio_fb_vec bv;
    uint32_t nb = tio__fb_vector(model, TFL_Model_buffers, &bv) ? bv.count : 0;
    /* buffer 0 of tio__tfl_w_init is replaced by the source's */
    r->m->nbuffers = 0;
    for (uint32_t b = 0; b < nb; b++) {
        tio_fb_ref bt;
        tio_fb_vec dv;
        if (!tio__fb_vec_table(&bv, b, &bt))
            return tio__err(r->err, TIO_E_CORRUPT, TFL, -1, "buffer %u is not a table", b);
        const uint8_t *d = NULL;
        size_t n = 0;
        /* the length the open read (not a page fault per buffer) */
        bool has = tio__fb_bytes(&bt, TFL_Buffer_data, NULL, &r->nat->blobs, &dv);
        uint64_t off = tio__fb_u64(&bt, TFL_Buffer_offset, 0);
        uint64_t size = tio__fb_u64(&bt, TFL_Buffer_size, 0);
        if (has && dv.count) {
            d = tio__fb_vec_data(&dv);
            n = dv.count;
        } else if (off > 1) {
            if (off + size > r->len || off + size < off)
                return tio__err(r->err, TIO_E_BOUNDS, TFL, (int64_t)bt.pos,
                                "buffer %u past the end of the file", b);
            d = r->buf + off;
            n = (size_t)size;
        }
        uint32_t idx;
        int rc = tio__tfl_w_buffer(r->m, -1, d, n, &idx, r->err);
        if (rc) return rc;
        r->m->buffers[idx].force_data = has && !dv.count && off <= 1;
    }
    return TIO_OK;
}

/* The save's cast in subgraph sg: for each tensor i with c16[i], a float16
 * tensor "<name>:float16" of its shape holding buffer c16[i] (after the
 * source's tensors, whose indices stay), and a DEQUANTIZE of it into tensor
 * i (version 3: a float16 input, as TensorFlow's converter writes it) before
 * the source's operators: TensorFlow Lite's float16 quantization. */
static int rw_dequantize(rw *r, uint32_t sg, const uint32_t *c16, uint32_t nt) {
    uint32_t code;
    int rc = tio__tfl_w_code(r->m, TFL_BuiltinOperator_DEQUANTIZE, NULL, 3, &code, r->err);
    for (uint32_t i = 0; i < nt && !rc; i++) {
        if (!c16[i]) continue;
        r->cast16 = true;
        const tfl_wtensor *src = &r->m->subgraphs[sg].tensors[i];
        char *hn = tio__tfl_w_join(r->m, src->name, ":float16", NULL);
        int32_t *io = tio__tfl_w_alloc(r->m, 2 * sizeof *io);
        if (!hn || !io) return tio__nomem(r->err, TFL);
        tfl_wtensor h;
        memset(&h, 0, sizeof h);
        h.name = hn;
        h.type = TFL_TensorType_FLOAT16;
        h.shape = src->shape;
        h.rank = src->rank;
        h.shape_signature = src->shape_signature;
        h.nsig = src->nsig;
        h.has_rank = src->has_rank;
        h.buffer = c16[i];
        rc = tio__tfl_w_tensor(r->m, sg, &h, &io[0], r->err);
        io[1] = (int32_t)i;
        tfl_wop op;
        memset(&op, 0, sizeof op);
        op.opcode = code;
        op.inputs = &io[0];
        op.nin = 1;
        op.outputs = &io[1];
        op.nout = 1;
        op.debug_metadata_index = -1;
        if (!rc) rc = tio__tfl_w_op(r->m, sg, &op, NULL, r->err);
    }
    return rc;
}

static int rw_subgraphs(rw *r, const tio_fb_ref *model) {
    tio_fb_vec sgs;
    uint32_t nsg = tio__fb_vector(model, TFL_Model_subgraphs, &sgs) ? sgs.count : 0;
    int rc = TIO_OK;
    for (uint32_t sg = 0; sg < nsg && !rc; sg++) {
        tio_fb_ref st;
        tfl_wsubgraph *s;
        char what[32];
        snprintf(what, sizeof what, "subgraph %u", sg);
        if (!tio__fb_vec_table(&sgs, sg, &st))
            return tio__err(r->err, TIO_E_CORRUPT, TFL, -1, "%s is not a table", what);
        rc = rw_newer(r, &st, tio__tfl_table("SubGraph"), what);
        if (!rc) rc = tio__tfl_w_subgraph(r->m, &s, r->err);
        if (rc) return rc;
        s->name = rw_str(&st, TFL_SubGraph_name);
        s->debug_metadata_index = tio__fb_i32(&st, TFL_SubGraph_debug_metadata_index, -1);
        rc = rw_ints(r, &st, TFL_SubGraph_inputs, &s->inputs, &s->ninputs, NULL);
        if (!rc) rc = rw_ints(r, &st, TFL_SubGraph_outputs, &s->outputs, &s->noutputs, NULL);
        tio_fb_vec tv, ov;
        uint32_t nt = tio__fb_vector(&st, TFL_SubGraph_tensors, &tv) ? tv.count : 0;
        uint32_t no = tio__fb_vector(&st, TFL_SubGraph_operators, &ov) ? ov.count : 0;
        /* per tensor: the buffer of the float16 tensor it is DEQUANTIZEd from
         * (the save's cast), or 0 */
        uint32_t *c16 = tio__tfl_w_alloc(r->m, (nt ? nt : 1) * sizeof *c16);
        if (!c16) return tio__nomem(r->err, TFL);
        size_t ncast = 0;
        for (uint32_t i = 0; i < nt && !rc; i++) {
            tio_fb_ref tt;
            tfl_wtensor t;
            int32_t idx;
            if (!tio__fb_vec_table(&tv, i, &tt))
                return tio__err(r->err, TIO_E_CORRUPT, TFL, -1, "%s tensor %u", what, i);
            rc = rw_tensor(r, sg, i, &tt, &t, &c16[i]);
            if (!rc) rc = tio__tfl_w_tensor(r->m, sg, &t, &idx, r->err);
            ncast += c16[i] != 0;
        }
        if (!rc && ncast) rc = rw_dequantize(r, sg, c16, nt);
        for (uint32_t k = 0; k < no && !rc; k++) {
            tio_fb_ref ot;
            tfl_wop o;
            if (!tio__fb_vec_table(&ov, k, &ot))
                return tio__err(r->err, TIO_E_CORRUPT, TFL, -1, "%s operator %u", what, k);
            rc = rw_op(r, sg, k, &ot, &o);
            if (!rc) rc = tio__tfl_w_op(r->m, sg, &o, NULL, r->err);
        }
    }
    return rc;
}

static int rw_extras(rw *r, const tio_fb_ref *model) {
    tfl_wmodel *m = r->m;
    tio_fb_vec v;
    int rc = TIO_OK;
    if (tio__fb_vector(model, TFL_Model_metadata, &v) && v.count) {
        m->metadata = tio__tfl_w_alloc(m, (size_t)v.count * sizeof *m->metadata);
        if (!m->metadata) return tio__nomem(r->err, TFL);
        for (uint32_t i = 0; i < v.count; i++) {
            tio_fb_ref mt;
            tio__fb_vec_table(&v, i, &mt);
            m->metadata[i].name = rw_str(&mt, TFL_Metadata_name);
            m->metadata[i].buffer = tio__fb_u32(&mt, TFL_Metadata_buffer, 0);
        }
        m->nmetadata = v.count;
    }
    bool present;
    rc = rw_ints(r, model, TFL_Model_metadata_buffer, &m->metadata_buffer, &m->nmetadata_buffer,
                 &present);
    if (rc) return rc;
    if (tio__fb_vector(model, TFL_Model_signature_defs, &v) && v.count) {
        tfl_wsig *sigs = tio__tfl_w_alloc(m, (size_t)v.count * sizeof *sigs);
        if (!sigs) return tio__nomem(r->err, TFL);
        for (uint32_t i = 0; i < v.count && !rc; i++) {
            tio_fb_ref dt;
            tio__fb_vec_table(&v, i, &dt);
            rc = rw_newer(r, &dt, tio__tfl_table("SignatureDef"), "signature def");
            sigs[i].key = rw_str(&dt, TFL_SignatureDef_signature_key);
            sigs[i].subgraph = tio__fb_u32(&dt, TFL_SignatureDef_subgraph_index, 0);
            for (unsigned side = 0; side < 2 && !rc; side++) {
                tio_fb_vec mv;
                if (!tio__fb_vector(&dt, side ? TFL_SignatureDef_outputs : TFL_SignatureDef_inputs,
                                    &mv))
                    continue;
                tfl_wtmap *maps = tio__tfl_w_alloc(m, ((size_t)mv.count + 1) * sizeof *maps);
                if (!maps) return tio__nomem(r->err, TFL);
                for (uint32_t k = 0; k < mv.count; k++) {
                    tio_fb_ref mt;
                    tio__fb_vec_table(&mv, k, &mt);
                    maps[k].name = rw_str(&mt, TFL_TensorMap_name);
                    maps[k].tensor = tio__fb_u32(&mt, TFL_TensorMap_tensor_index, 0);
                }
                if (side) {
                    sigs[i].outputs = maps;
                    sigs[i].noutputs = mv.count;
                } else {
                    sigs[i].inputs = maps;
                    sigs[i].ninputs = mv.count;
                }
            }
        }
        m->sigs = sigs;
        m->nsigs = v.count;
    }
    if (!rc && (tio__fb_has(model, TFL_Model_external_buffer_groups) ||
                tio__fb_has(model, TFL_Model_external_buffers)))
        rc = tio__err(r->err, TIO_E_UNSUPPORTED, TFL, -1,
                      "the model has external buffers (in other files), which the TensorFlow "
                      "Lite writer does not write");
    return rc;
}

/* A part of a version as a number: digits, an int's worth (as absl's
 * SimpleAtoi reads it into TensorFlow's int; signs and spaces aside). */
static bool rt_part(const char *p, size_t n, uint32_t *v) {
    uint64_t x = 0;
    if (!n || n > 10) return false;
    for (size_t k = 0; k < n; k++) {
        if (p[k] < '0' || p[k] > '9') return false;
        x = x * 10 + (uint64_t)(p[k] - '0');
    }
    if (x > 0x7fffffffu) return false;
    *v = (uint32_t)x;
    return true;
}

bool tio__tfl_runtime_before(const uint8_t *a, size_t an, const char *b) {
    /* as TensorFlow's CompareRuntimeVersion: the parts between dots in
     * turn, numbers compared (a part that is not one is passed over); all
     * equal, the version with parts left over is the later */
    const char *s = (const char *)a, *nul = memchr(a, 0, an);
    if (nul) an = (size_t)(nul - s);
    size_t bn = strlen(b), i = 0, j = 0;
    for (;;) {
        size_t ie = i, je = j;
        while (ie < an && s[ie] != '.') ie++;
        while (je < bn && b[je] != '.') je++;
        uint32_t x, y;
        if (rt_part(s + i, ie - i, &x) && rt_part(b + j, je - j, &y) && x != y) return x < y;
        bool amore = ie < an, bmore = je < bn;
        if (!amore || !bmore) return !amore && bmore;
        i = ie + 1;
        j = je + 1;
    }
}

/* A float16 DEQUANTIZE is version 3, which TensorFlow Lite runs from 1.15.0
 * (its runtime_version.cc, rtversion.c): a model whose `min_runtime_version`
 * metadata says less says 1.15.0 after the cast, NUL-padded to the buffer's
 * length as TensorFlow's converter writes it (left as it is where the buffer
 * is shorter than that, or a tensor holds it too). */
static int rw_min_runtime(rw *r) {
    tfl_wmodel *m = r->m;
    const char *f16 = tio__tfl_runtime_version(TFL_BuiltinOperator_DEQUANTIZE, 3);
    size_t f16n = strlen(f16);
    bool *held = NULL; /* per buffer: a tensor's too (made once, when first asked) */
    for (size_t i = 0; i < m->nmetadata; i++) {
        uint32_t b = m->metadata[i].buffer;
        if (!m->metadata[i].name || strcmp(m->metadata[i].name, "min_runtime_version") != 0 ||
            b >= m->nbuffers || !m->buffers[b].data || m->buffers[b].tensor >= 0)
            continue;
        const tfl_wbuffer *bf = &m->buffers[b];
        if (bf->size < f16n || !tio__tfl_runtime_before(bf->data, bf->size, f16))
            continue;
        if (!held) {
            if (!(held = tio__tfl_w_alloc(m, m->nbuffers * sizeof *held)))
                return tio__nomem(r->err, TFL);
            for (size_t sg = 0; sg < m->nsubgraphs; sg++)
                for (size_t t = 0; t < m->subgraphs[sg].ntensors; t++)
                    if (m->subgraphs[sg].tensors[t].buffer < m->nbuffers)
                        held[m->subgraphs[sg].tensors[t].buffer] = true;
        }
        if (held[b]) continue;
        uint8_t *d = tio__tfl_w_alloc(m, bf->size); /* zeroed */
        if (!d) return tio__nomem(r->err, TFL);
        memcpy(d, f16, f16n);
        m->buffers[b].data = d;
    }
    return TIO_OK;
}

int tio__tfl_rewrite(const tfl_native *nat, tio_write_plan *plan, tfl_wmodel *m,
                     tio_error *err) {
    rw r;
    memset(&r, 0, sizeof r);
    r.nat = nat;
    r.plan = plan;
    r.m = m;
    r.err = err;
    r.buf = nat->buf;
    r.len = nat->len;
    const tio_container *c = tio__plan_container(plan);
    /* edits the source model cannot carry are refused, never dropped */
    if (c->count != nat->ntensors) {
        size_t i = nat->ntensors < c->count ? nat->ntensors : 0;
        const char *nm = i < c->count && c->tensors[i]->name ? c->tensors[i]->name : "";
        return tio__err(err, TIO_E_UNSUPPORTED, TFL, -1,
                        "the container has %zu tensors, the TensorFlow Lite model it was read "
                        "from %zu (tensor %zu '%s' is not one of the model's): tensors added "
                        "to a model are not written into its graph",
                        c->count, nat->ntensors, i, nm);
    }
    if (c->graph != nat->graph ||
        (c->graph && (c->graph->node_count != nat->gnodes ||
                      c->graph->value_count != nat->gvalues ||
                      c->graph->edits != nat->gedits)))
        return tio__err(err, TIO_E_UNSUPPORTED, TFL, -1,
                        "the model's graph was edited after it was read; the TensorFlow Lite "
                        "writer rewrites the model as read (edits to its graph are not "
                        "written)");
    uint8_t dg[32];
    int drc = tio__tfl_meta_digest(c, dg, err);
    if (drc) return drc;
    if (memcmp(dg, nat->meta_digest, 32) != 0)
        return tio__err(err, TIO_E_UNSUPPORTED, TFL, -1,
                        "the container's metadata changed after the model was read; a "
                        "TensorFlow Lite model keeps its quantization and metadata as read "
                        "(edited metadata is not written)");
    tio_fb_ref model;
    if (!tio__fb_root(r.buf, r.len, &model))
        return tio__err(err, TIO_E_CORRUPT, TFL, 0, "the root table is out of bounds");
    int rc = rw_newer(&r, &model, tio__tfl_root, "the model");
    if (rc) return rc;
    m->version = tio__fb_u32(&model, TFL_Model_version, 0);
    m->description = rw_str(&model, TFL_Model_description);
    rc = rw_buffers(&r, &model);
    tio_fb_vec cv;
    uint32_t nc = !rc && tio__fb_vector(&model, TFL_Model_operator_codes, &cv) ? cv.count : 0;
    for (uint32_t k = 0; k < nc && !rc; k++) {
        tio_fb_ref ct;
        tio__fb_vec_table(&cv, k, &ct);
        rc = rw_newer(&r, &ct, tio__tfl_table("OperatorCode"), "operator code");
        if (rc) break;
        int32_t dep = tio__fb_i8(&ct, TFL_OperatorCode_deprecated_builtin_code, 0);
        int32_t bc = tio__fb_i32(&ct, TFL_OperatorCode_builtin_code, 0);
        /* each code kept as its own entry (operators refer to them by index) */
        if (m->ncodes == m->capcodes) {
            size_t ncap = m->capcodes ? m->capcodes * 2 : 16;
            tfl_wcode *nn = realloc(m->codes, ncap * sizeof *nn);
            if (!nn) return tio__nomem(err, TFL);
            m->codes = nn;
            m->capcodes = ncap;
        }
        tfl_wcode *wc = &m->codes[m->ncodes++];
        wc->builtin = dep > bc ? dep : bc;
        wc->deprecated = (int8_t)(wc->builtin < 127 ? wc->builtin : 127);
        wc->custom = rw_str(&ct, TFL_OperatorCode_custom_code);
        wc->version = tio__fb_i32(&ct, TFL_OperatorCode_version, 1);
    }
    if (!rc) rc = rw_subgraphs(&r, &model);
    if (!rc) rc = rw_extras(&r, &model);
    if (!rc && r.cast16) rc = rw_min_runtime(&r);
    return rc;
}
