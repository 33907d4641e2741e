/*
 * ONNX -> TensorFlow Lite lowering (tio__tfl_lower, see src/tflite/write.h):
 * a graph in ONNX semantics, prepared by the graph layer (src/graph/prep.h:
 * constants inlined, shapes inferred, shape arithmetic folded, BatchNormalization
 * folded and activations fused unless fuse=0), lowered to TFLite builtins by
 * the table in src/tflite/lowmap.c.
 *
 * Layout. TFLite is NHWC, ONNX NCHW. Every ONNX value has up to two TFLite
 * tensors: its ONNX layout (form 0) and, for 4-D values, NHWC (form 1: TFLite
 * dim i is ONNX dim P4[i]). Operators that care (Conv, pooling, Pad, ...) run
 * in NHWC; elementwise ones in whichever form their inputs have; the others
 * (Reshape, Gemm, Softmax on the last axis) in the ONNX layout. A form is
 * made from the other only when a reader needs it: by a TRANSPOSE, or by a
 * RESHAPE when only dims of size 1 move. Transposes in the graph are composed
 * with the forms their input has (none is left when they cancel). 4-D graph
 * inputs and outputs are NHWC (option layout=nchw keeps ONNX's). QDQ models
 * (QuantizeLinear/DequantizeLinear) are lowered to int8/uint8 tensors by
 * src/tflite/lower_q.c: its scan runs before the operators, and a value's
 * quantization (tl.q) gives the tensors made for it their type and
 * parameters. See docs/formats/tflite.md, "ONNX -> TFLite".
 */
#include "tflite/lower.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */

int tio__tl_nfail(tl *L, int code, const char *fmt, ...) {
    char msg[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!L->n) return tio__err(L->err, code, TFL, -1, "%s", msg);
    return tio__err(L->err, code, TFL, -1, "node '%s' (%s): %s",
                    L->n->name ? L->n->name : "", L->n->op, msg);
}

int tio__tl_nomem(tl *L) { return tio__nomem(L->err, TFL); }

void *tio__tl_al(tl *L, size_t n) { return tio__tfl_w_alloc(L->m, n); }

const tio_tensor *tio__tl_vconst(const tl *L, int64_t v) {
    if (v < 0 || L->g->values[v].tensor < 0) return NULL;
    const tio_tensor *t = tio__gprep_tensor(&L->pr, L->c, L->g->values[v].tensor);
    return t && t->layout == TIO_LAYOUT_DENSE && (t->data || t->nbytes == 0) ? t : NULL;
}

/* The constant behind value v: its own, or the float16 one it is a Cast of. */
const tio_tensor *tio__tl_wconst(const tl *L, int64_t v) {
    const tio_tensor *t = tio__tl_vconst(L, v);
    return t || v < 0 || L->deq[v] < 0 ? t : tio__tl_vconst(L, L->deq[v]);
}

/* Whether t holds n float32 or float16 elements (weights). */
bool tio__tl_wfloat(const tio_tensor *t, uint64_t n) {
    if (!t || t->numel != n) return false;
    size_t es = t->dtype == TIO_FLOAT32 ? 4 : t->dtype == TIO_FLOAT16 ? 2 : 0;
    return es && t->nbytes >= n * es;
}

/* Element i of a float32 or float16 constant, as float. */
float tio__tl_wat(const tio_tensor *t, size_t i) {
    if (t->dtype == TIO_FLOAT16) return tio__half_to_float((uint16_t)tio__ld16(t->data + 2 * i));
    uint32_t u = tio__ld32(t->data + 4 * i);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The largest element count of a value the lowering takes (the graph layer's
 * bound): products of dims cannot overflow. */
#define TL_BIG ((int64_t)1 << 40)

/* Whether dims d hold at most TL_BIG elements, each dim within int32. */
static bool dims_ok(const int64_t *d, int r) {
    int64_t n = 1;
    for (int k = 0; k < r; k++) {
        if (d[k] < 0 || d[k] > INT32_MAX || (d[k] && n > TL_BIG / d[k])) return false;
        if (d[k]) n *= d[k];
    }
    return true;
}

/* Value v's static shape (a constant's, else the graph's or the inferred),
 * within dims_ok. */
bool tio__tl_vshape(const tl *L, int64_t v, int64_t *d, int *r) {
    if (v < 0) return false;
    const tio_tensor *t = tio__tl_vconst(L, v);
    if (t) {
        if (t->rank > LMAX) return false;
        for (size_t k = 0; k < t->rank; k++) d[k] = t->shape[k];
        *r = (int)t->rank;
        return dims_ok(d, *r);
    }
    const tio_gvalue *gv = &L->g->values[v];
    if (gv->rank < 0 || gv->rank > LMAX || (gv->rank && !gv->dims)) return false;
    for (int64_t k = 0; k < gv->rank; k++) {
        if (gv->dims[k].name || gv->dims[k].value < 0) return false;
        d[k] = gv->dims[k].value;
    }
    *r = (int)gv->rank;
    return dims_ok(d, *r);
}

int tio__tl_need_shape(tl *L, int64_t v, int64_t *d, int *r) {
    if (tio__tl_vshape(L, v, d, r)) return TIO_OK;
    return tio__tl_nfail(L, TIO_E_UNSUPPORTED,
                 "value '%s' has no static shape (the TFLite lowering needs fixed dims)",
                 v >= 0 && L->g->values[v].name ? L->g->values[v].name : "");
}

int tio__tl_vrank(const tl *L, int64_t v) {
    int64_t d[LMAX];
    int r;
    return tio__tl_vshape(L, v, d, &r) ? r : -1;
}

const tio_gattr *tio__tl_attr(const tio_gnode *n, const char *name) {
    return tio__gp_attr(n, name);
}

int64_t tio__tl_attr_i(const tio_gnode *n, const char *name, int64_t dflt) {
    return tio__gp_attr_i(n, name, dflt);
}

double tio__tl_attr_f(const tio_gnode *n, const char *name, double dflt) {
    const tio_gattr *a = tio__tl_attr(n, name);
    return a && a->type == TIO_ATTR_FLOAT ? a->f : dflt;
}

/* An INTS attribute of at most max values (false when absent). */
bool tio__tl_attr_ints(const tio_gnode *n, const char *name, int64_t *out, size_t max,
                      size_t *cnt) {
    const tio_gattr *a = tio__tl_attr(n, name);
    if (!a || a->type != TIO_ATTR_INTS || a->count > max) return false;
    for (size_t k = 0; k < a->count; k++) out[k] = a->ints[k];
    *cnt = a->count;
    return true;
}

int64_t tio__tl_in_v(const tio_gnode *n, size_t k) {
    return k < n->input_count ? n->inputs[k] : -1;
}

static void stf32(uint8_t *p, float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    tio__st32(p, u);
}

/* ----------------------------------------------------------- tensors */

int tio__tl_add_tensor(tl *L, const char *name, int32_t type, int r, const int64_t *d,
                      uint32_t buf, int32_t *idx) {
    int32_t *sh = tio__tl_al(L, (size_t)(r ? r : 1) * sizeof *sh);
    if (!sh) return tio__tl_nomem(L);
    for (int k = 0; k < r; k++) {
        if (d[k] < 0 || d[k] > INT32_MAX)
            return tio__tl_nfail(L, TIO_E_LIMIT, "tensor '%s': dim %lld does not fit int32",
                         name ? name : "", (long long)d[k]);
        sh[k] = (int32_t)d[k];
    }
    tfl_wtensor t = {.name = name, .type = type, .shape = sh, .rank = r, .nsig = -1,
                     .buffer = buf};
    return tio__tfl_w_tensor(L->m, 0, &t, idx, L->err);
}

/* A name for form `lay` of value v: its own for the first form made. */
const char *tio__tl_form_name(tl *L, int64_t v, int lay) {
    const char *nm = L->g->values[v].name ? L->g->values[v].name : "";
    if (L->t[v][0] < 0 && L->t[v][1] < 0) return nm;
    size_t n = strlen(nm);
    char *s = tio__tl_al(L, n + 6);
    if (!s) return NULL;
    memcpy(s, nm, n);
    memcpy(s + n, lay ? "_nhwc" : "_nchw", 6);
    return s;
}

/* A new tensor for value v in form lay (its dims permuted for NHWC). */
int tio__tl_new_form(tl *L, int64_t v, int lay, int32_t *idx) {
    int64_t d[LMAX], e[LMAX];
    int r, rc;
    if ((rc = tio__tl_need_shape(L, v, d, &r))) return rc;
    const int *P = tio__tl_perm_of(r);
    if (lay && !P) return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "NHWC form of a rank-%d value", r);
    for (int k = 0; k < r; k++) e[k] = lay ? d[P[k]] : d[k];
    int32_t type = tio__tfl_type_of(L->g->values[v].dtype);
    if (type < 0 || L->g->values[v].dtype == TIO_DTYPE_INVALID) type = TFL_TensorType_FLOAT32;
    const char *nm = tio__tl_form_name(L, v, lay);
    if (!nm) return tio__tl_nomem(L);
    if ((rc = tio__tl_add_tensor(L, nm, type, r, e, 0, idx))) return rc;
    tio__tl_qmark(L, v, *idx);
    L->t[v][lay] = *idx;
    return TIO_OK;
}

int tio__tl_const_i32(tl *L, const char *name, const int64_t *vals, size_t n, bool scalar,
                     int32_t *idx) {
    uint8_t *b = tio__tl_al(L, n ? 4 * n : 1);
    if (!b) return tio__tl_nomem(L);
    for (size_t k = 0; k < n; k++) {
        if (vals[k] < INT32_MIN || vals[k] > INT32_MAX)
            return tio__tl_nfail(L, TIO_E_LIMIT, "'%s': %lld does not fit int32", name,
                         (long long)vals[k]);
        tio__st32(b + 4 * k, (uint32_t)(int32_t)vals[k]);
    }
    uint32_t buf;
    int64_t d = (int64_t)n;
    int rc = tio__tfl_w_buffer(L->m, -1, b, 4 * n, &buf, L->err);
    return rc ? rc
              : tio__tl_add_tensor(L, name, TFL_TensorType_INT32, scalar ? 0 : 1, &d, buf, idx);
}

int tio__tl_const_f32(tl *L, const char *name, const float *vals, size_t n, int r,
                     const int64_t *d, int32_t *idx) {
    uint8_t *b = tio__tl_al(L, n ? 4 * n : 1);
    if (!b) return tio__tl_nomem(L);
    for (size_t k = 0; k < n; k++) stf32(b + 4 * k, vals[k]);
    uint32_t buf;
    int rc = tio__tfl_w_buffer(L->m, -1, b, 4 * n, &buf, L->err);
    return rc ? rc : tio__tl_add_tensor(L, name, TFL_TensorType_FLOAT32, r, d, buf, idx);
}

/* An operator of the builtin at `version`. */
static int emit_v(tl *L, int32_t builtin, int32_t version, uint8_t opt_type, const int32_t *in,
                  size_t nin, const int32_t *out, size_t nout, tfl_wop **op) {
    uint32_t code;
    int rc = tio__tfl_w_code(L->m, builtin, NULL, version, &code, L->err);
    if (rc) return rc;
    int32_t *i2 = tio__tl_al(L, (nin ? nin : 1) * sizeof *i2),
            *o2 = tio__tl_al(L, (nout ? nout : 1) * sizeof *o2);
    if (!i2 || !o2) return tio__tl_nomem(L);
    if (nin) memcpy(i2, in, nin * sizeof *i2);
    if (nout) memcpy(o2, out, nout * sizeof *o2);
    tfl_wop w = {.opcode = code, .inputs = i2, .nin = nin, .outputs = o2, .nout = nout,
                 .opt_type = opt_type, .debug_metadata_index = -1};
    tfl_wop *dummy;
    return tio__tfl_w_op(L->m, 0, &w, op ? op : &dummy, L->err);
}

int tio__tl_emit(tl *L, int32_t builtin, uint8_t opt_type, const int32_t *in, size_t nin,
                const int32_t *out, size_t nout, tfl_wop **op) {
    return emit_v(L, builtin, 1, opt_type, in, nin, out, nout, op);
}

int tio__tl_emit_like(tl *L, int32_t code, uint8_t opt, int64_t x, int64_t y) {
    int lay = tio__tl_pref_lay(L, x);
    int32_t in, out;
    int rc;
    if ((rc = tio__tl_get(L, x, lay, &in)) || (rc = tio__tl_new_form(L, y, lay, &out))) return rc;
    return tio__tl_emit(L, code, opt, &in, 1, &out, 1, NULL);
}

/* A DEQUANTIZE of float16 tensor h into a float32 tensor of its shape:
 * version 3, which TensorFlow's converter gives a float16 input (the
 * others are raised to theirs at the end: tio__tfl_w_versions). */
int tio__tl_dequantize(tl *L, int32_t h, const char *name, int32_t *idx) {
    const tfl_wtensor *ht = &L->m->subgraphs[0].tensors[h];
    int64_t d[LMAX];
    int r = ht->rank;
    for (int k = 0; k < r && k < LMAX; k++) d[k] = ht->shape[k];
    int rc = tio__tl_add_tensor(L, name, TFL_TensorType_FLOAT32, r, d, 0, idx);
    return rc ? rc : emit_v(L, TFL_BuiltinOperator_DEQUANTIZE, 3, 0, &h, 1, idx, 1, NULL);
}

/* Weights the lowering made (n elements of dtype dt, float32 or float16, in
 * b): a constant; float16 ones are kept so, with a DEQUANTIZE to float32
 * (*idx: the float32 tensor). */
bool tio__tl_cast16(const tl *L, const tio_tensor *t) {
    if (!L->f16 || t->dtype != TIO_FLOAT32) return false;
    if (t->owner != L->c || t->index >= L->pr.nc) return true;
    const tio_wtensor *wt = tio__plan_tensor(L->plan, t->index);
    return wt && wt->cast;
}

int tio__tl_weights(tl *L, const char *name, tio_dtype dt, const uint8_t *b, size_t n, int r,
                   const int64_t *d, int32_t *idx) {
    bool to16 = L->f16 && dt == TIO_FLOAT32;
    if (to16) dt = TIO_FLOAT16;
    size_t es = dt == TIO_FLOAT16 ? 2 : 4;
    uint8_t *c = tio__tl_al(L, n ? n * es : 1);
    if (!c || !name) return tio__tl_nomem(L);
    if (n && to16) tio__convert_elems(TIO_FLOAT32, TIO_FLOAT16, b, c, n);
    else if (n) memcpy(c, b, n * es);
    uint32_t buf;
    int rc = tio__tfl_w_buffer(L->m, -1, c, n * es, &buf, L->err);
    return rc ? rc : tio__tl_weights_in(L, name, dt, buf, r, d, idx);
}

int tio__tl_weights_in(tl *L, const char *name, tio_dtype dt, uint32_t buf, int r,
                       const int64_t *d, int32_t *idx) {
    int32_t h;
    int rc = tio__tl_add_tensor(L, name, dt == TIO_FLOAT16 ? TFL_TensorType_FLOAT16
                                                          : TFL_TensorType_FLOAT32,
                                r, d, buf, dt == TIO_FLOAT16 ? &h : idx);
    if (rc || dt != TIO_FLOAT16) return rc;
    const char *fn = tio__tfl_w_join(L->m, name, ":float", NULL);
    return fn ? tio__tl_dequantize(L, h, fn, idx) : tio__tl_nomem(L);
}

/* A name made of the node's and a suffix (arena). */
const char *tio__tl_sub_name(tl *L, const char *what) {
    return tio__tfl_w_join(L->m, L->n ? L->n->name : NULL, ":", what);
}

/* A scalar float constant named after the node. */
int tio__tl_scalar_f32(tl *L, const char *what, float f, int32_t *idx) {
    const char *s = tio__tl_sub_name(L, what);
    return s ? tio__tl_const_f32(L, s, &f, 1, 0, NULL, idx) : tio__tl_nomem(L);
}

/* Constant value v in form lay. Form 1 of a constant of rank <= 4 is its
 * numpy broadcast to rank 4 (ones in front) permuted to NHWC; a one-element
 * constant is the same in both forms. int64 becomes int32 (checked). */
static int const_form(tl *L, int64_t v, int lay, bool q8, int32_t *idx) {
    const tio_tensor *t = tio__tl_vconst(L, v);
    if (t->numel == 1) lay = 0;
    if (L->t[v][lay] >= 0) {
        *idx = L->t[v][lay];
        return TIO_OK;
    }
    if (lay && t->rank > 4)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "constant '%s' of rank %zu in an NHWC operator",
                     t->name ? t->name : "", t->rank);
    if (t->rank > LMAX)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED,
                             "constant '%s' of rank %zu (the TFLite lowering takes up to %d)",
                             t->name ? t->name : "", t->rank, LMAX);
    int32_t type;
    size_t es;
    switch (t->dtype) {
    case TIO_FLOAT32: type = TFL_TensorType_FLOAT32, es = 4; break;
    case TIO_FLOAT16: type = TFL_TensorType_FLOAT16, es = 2; break;
    case TIO_INT32: type = TFL_TensorType_INT32, es = 4; break;
    case TIO_INT64: type = TFL_TensorType_INT32, es = 4; break;
    case TIO_INT8:
    case TIO_UINT8:
        if (q8) {
            type = t->dtype == TIO_INT8 ? TFL_TensorType_INT8 : TFL_TensorType_UINT8, es = 1;
            break;
        }
        /* fall through */
    default:
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED,
                             "constant '%s' of dtype %s (tensio lowers float32)",
                             t->name ? t->name : "", tio_dtype_name(t->dtype));
    }
    size_t isz = t->dtype == TIO_INT64 ? 8 : es;
    if (t->nbytes < t->numel * isz)
        return tio__tl_nfail(L, TIO_E_CORRUPT, "constant '%s' is short", t->name ? t->name : "");
    int64_t d[LMAX];
    int r = (int)t->rank;
    for (int k = 0; k < r; k++) d[k] = t->shape[k];
    const char *nm = tio__tl_form_name(L, v, lay);
    if (!nm) return tio__tl_nomem(L);
    int rc;
    /* float16 weights (the save's cast): that tensor, DEQUANTIZEd into nm */
    bool to16 = tio__tl_cast16(L, t);
    const char *nm16 = to16 ? tio__tfl_w_join(L->m, nm, ":float16", NULL) : NULL;
    if (to16 && !nm16) return tio__tl_nomem(L);
    int32_t h;
    if (!lay && t->dtype != TIO_INT64 && t->owner == L->c && t->index < L->pr.nc) {
        /* the container's bytes, streamed at write time (as the plan writes
         * them: float16 when it casts the tensor) */
        uint32_t buf;
        const tio_wtensor *wt = tio__plan_tensor(L->plan, t->index);
        size_t nb = wt ? wt->nbytes : t->nbytes;
        if ((rc = tio__tfl_w_buffer(L->m, (int64_t)t->index, NULL, nb, &buf, L->err)) ||
            (rc = tio__tl_add_tensor(L, to16 ? nm16 : nm,
                                     to16 ? TFL_TensorType_FLOAT16 : type, r, d, buf,
                                     to16 ? &h : idx)) ||
            (to16 && (rc = tio__tl_dequantize(L, h, nm, idx))))
            return rc;
        L->t[v][lay] = *idx;
        return TIO_OK;
    }
    size_t n = (size_t)t->numel;
    uint8_t *b = tio__tl_al(L, n ? n * es : 1);
    if (!b) return tio__tl_nomem(L);
    int64_t e[4];
    if (lay) {
        int64_t s4[4] = {1, 1, 1, 1};
        for (int k = 0; k < r; k++) s4[4 - r + k] = d[k];
        for (int k = 0; k < 4; k++) e[k] = s4[P4[k]];
        size_t N = (size_t)s4[0], C = (size_t)s4[1], H = (size_t)s4[2], W = (size_t)s4[3];
        for (size_t a = 0; a < N; a++)
            for (size_t c = 0; c < C; c++)
                for (size_t y = 0; y < H; y++)
                    for (size_t x = 0; x < W; x++) {
                        size_t src = ((a * C + c) * H + y) * W + x,
                               dst = ((a * H + y) * W + x) * C + c;
                        memcpy(b + dst * es, t->data + src * isz, es);
                    }
        r = 4;
    }
    if (t->dtype == TIO_INT64) {
        const uint8_t *s = t->data;
        for (size_t k = 0; k < n; k++) {
            int64_t x = (int64_t)tio__ld64(s + 8 * k);
            if (x < INT32_MIN || x > INT32_MAX)
                return tio__tl_nfail(L, TIO_E_LIMIT, "constant '%s': %lld does not fit int32",
                             t->name ? t->name : "", (long long)x);
            /* (the permuted copy above took the low 4 bytes of each: LE) */
            if (!lay) tio__st32(b + 4 * k, (uint32_t)(int32_t)x);
        }
    } else if (!lay) {
        memcpy(b, t->data, n * es);
    }
    uint32_t buf;
    if (to16) { /* float32 in b, float16 stored */
        uint8_t *b16 = tio__tl_al(L, n ? n * 2 : 1);
        if (!b16) return tio__tl_nomem(L);
        if (n) tio__convert_elems(TIO_FLOAT32, TIO_FLOAT16, b, b16, n);
        if ((rc = tio__tfl_w_buffer(L->m, -1, b16, n * 2, &buf, L->err)) ||
            (rc = tio__tl_add_tensor(L, nm16, TFL_TensorType_FLOAT16, r, lay ? e : d, buf,
                                     &h)) ||
            (rc = tio__tl_dequantize(L, h, nm, idx)))
            return rc;
        L->t[v][lay] = *idx;
        return TIO_OK;
    }
    if ((rc = tio__tfl_w_buffer(L->m, -1, b, n * es, &buf, L->err)) ||
        (rc = tio__tl_add_tensor(L, nm, type, r, lay ? e : d, buf, idx)))
        return rc;
    L->t[v][lay] = *idx;
    return TIO_OK;
}


int tio__tl_const_form(tl *L, int64_t v, int lay, int32_t *idx) {
    return const_form(L, v, lay, false, idx);
}

/* The integer constant a DequantizeLinear output v views, in form lay, with
 * its quantization (a per-axis one in the ONNX layout only). */
static int qconst_form(tl *L, int64_t v, int lay, int32_t *idx) {
    const tl_q *q = &L->q[v];
    if (q->cv < 0)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED,
                             "a transposed quantized constant ('%s') read as other than weights",
                             L->g->values[v].name ? L->g->values[v].name : "");
    if (lay && q->q->nscale > 1)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED,
                             "constant '%s', quantized per axis, in an NHWC operator",
                             L->g->values[v].name ? L->g->values[v].name : "");
    int rc = const_form(L, q->cv, lay, true, idx);
    if (!rc) L->m->subgraphs[0].tensors[*idx].q = q->q;
    return rc;
}

/* Whether the elements of a value of dims d (rank r) keep their order in its
 * form 1: the dims other than 1 stay in order (C of 1, or H and W of 1). */
bool tio__tl_only_ones_move(const int64_t *d, int r) {
    const int *P = tio__tl_perm_of(r);
    int last = -1;
    for (int i = 0; P && i < r; i++)
        if (d[P[i]] != 1) {
            if (P[i] < last) return false;
            last = P[i];
        }
    return P != NULL;
}

/* Reshape tensor `from` to value v's form lay (the same elements in order). */
int tio__tl_reshape_to(tl *L, int32_t from, int64_t v, int lay, int32_t *idx) {
    int64_t d[LMAX], e[LMAX];
    int r, rc;
    if ((rc = tio__tl_need_shape(L, v, d, &r)) || (rc = tio__tl_new_form(L, v, lay, idx)))
        return rc;
    const int *P = tio__tl_perm_of(r);
    for (int k = 0; k < r; k++) e[k] = lay && P ? d[P[k]] : d[k];
    int32_t shp;
    const char *nm = tio__tl_sub_name(L, lay ? "nhwc_shape" : "shape");
    if (!nm) return tio__tl_nomem(L);
    if ((rc = tio__tl_const_i32(L, nm, e, (size_t)r, false, &shp))) return rc;
    int32_t in[2] = {from, shp};
    tfl_wop *op;
    if ((rc = tio__tl_emit(L, TFL_BuiltinOperator_RESHAPE, TFL_BuiltinOptions_ReshapeOptions, in, 2,
                           idx, 1, &op)))
        return rc;
    return tio__tfl_w_opt_ints(L->m, op, false, "new_shape", e, (size_t)r, L->err);
}

/* Value v in form lay: made from its other form when it has none yet. */
int tio__tl_get(tl *L, int64_t v, int lay, int32_t *idx) {
    if (v < 0) return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "an absent input is needed");
    if (L->q[v].ct) return qconst_form(L, v, lay, idx);
    if (tio__tl_vconst(L, v)) return tio__tl_const_form(L, v, lay, idx);
    if (L->deq[v] >= 0) {
        /* float16 weights read as float32: the constant (in the form asked
         * for), DEQUANTIZEd */
        if (tio__tl_vconst(L, L->deq[v])->numel == 1) lay = 0;
        if (L->t[v][lay] >= 0) {
            *idx = L->t[v][lay];
            return TIO_OK;
        }
        int32_t h;
        const char *nm = tio__tl_form_name(L, v, lay);
        int rc = nm ? tio__tl_const_form(L, L->deq[v], lay, &h) : tio__tl_nomem(L);
        if (rc || (rc = tio__tl_dequantize(L, h, nm, idx))) return rc;
        L->t[v][lay] = *idx;
        return TIO_OK;
    }
    if (L->t[v][lay] >= 0) {
        *idx = L->t[v][lay];
        return TIO_OK;
    }
    int32_t from = L->t[v][1 - lay];
    if (from < 0)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "value '%s' is read before it is written",
                     L->g->values[v].name ? L->g->values[v].name : "");
    int64_t d[LMAX];
    int r, rc;
    if ((rc = tio__tl_need_shape(L, v, d, &r))) return rc;
    if (tio__tl_only_ones_move(d, r)) return tio__tl_reshape_to(L, from, v, lay, idx);
    const int *P = tio__tl_perm_of(r);
    if (!P) /* a value whose rank has no NHWC form (inconsistent shapes) */
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "value '%s' of rank %d between NCHW and NHWC",
                             L->g->values[v].name ? L->g->values[v].name : "", r);
    if ((rc = tio__tl_new_form(L, v, lay, idx))) return rc;
    int64_t perm[LMAX];
    for (int k = 0; k < r; k++) perm[lay ? k : P[k]] = lay ? P[k] : k;
    int32_t pt;
    const char *nm = tio__tl_sub_name(L, lay ? "to_nhwc" : "to_nchw");
    if (!nm) return tio__tl_nomem(L);
    if ((rc = tio__tl_const_i32(L, nm, perm, (size_t)r, false, &pt))) return rc;
    int32_t in[2] = {from, pt};
    return tio__tl_emit(L, TFL_BuiltinOperator_TRANSPOSE, TFL_BuiltinOptions_TransposeOptions, in,
                        2, idx, 1, NULL);
}

/* The form an elementwise operator runs in: NHWC when a 4-D input has it. */
int tio__tl_pref_lay(const tl *L, int64_t v) {
    return v >= 0 && L->t[v][1] >= 0 && L->t[v][0] < 0 ? 1 : 0;
}

int tio__tl_set_act(tl *L, tfl_wop *op, int64_t out) {
    int64_t a = tio__tl_attr_i(L->n, ACT_ATTR, 0);
    if (a == TFL_ActivationFunctionType_RELU || a == TFL_ActivationFunctionType_RELU6)
        L->nonneg[out] = 1;
    if (!a) return TIO_OK;
    return tio__tfl_w_opt_i(L->m, op, false, "fused_activation_function", a, L->err);
}

/* ------------------------------------------------------------- driver */

/* Whether node n has a TFLite form (a Cast: of float16 weights only). */
static bool lowers(const tl *L, const tio_gnode *n) {
    const tio_tfl_lowmap *e = n->domain && n->domain[0] ? NULL : tio__tfl_lowmap(n->op);
    return e && (e->kind != TFL_L_CAST || tio__tl_cast_ok(L, n));
}

/* Every node without a TFLite form, in one error (as the tmfile writer
 * lists them). */
static int refusals(tl *L) {
    const tio_graph *g = L->g;
    char types[512] = "", nodes[768] = "";
    size_t bad = 0, tl_ = 0, nl = 0;
    for (size_t j = 0; j < g->node_count; j++) {
        const tio_gnode *n = &g->nodes[j];
        if (lowers(L, n)) continue;
        /* op types once each: looked up in the list made so far (at most
         * 512 bytes), not among the nodes before */
        bool seen = false;
        size_t ol = strlen(n->op);
        for (const char *p = types; !seen && *p;) {
            size_t il = strcspn(p, ",");
            seen = il == ol && memcmp(p, n->op, ol) == 0;
            p += il;
            if (*p) p += 2; /* ", " */
        }
        if (!seen && tl_ < sizeof types - 64)
            tl_ += (size_t)snprintf(types + tl_, sizeof types - tl_, "%s%s", tl_ ? ", " : "",
                                    n->op);
        if (bad < 12 && nl < sizeof nodes - 80)
            nl += (size_t)snprintf(nodes + nl, sizeof nodes - nl, "%s'%.60s'", bad ? ", " : "",
                                   n->name ? n->name : "");
        bad++;
    }
    if (!bad) return TIO_OK;
    return tio__err(L->err, TIO_E_UNSUPPORTED, TFL, -1,
                    "TensorFlow Lite has no operator in tensio for %s (%zu node%s: %s%s; "
                    "docs/formats/tflite.md lists what lowers)",
                    types, bad, bad == 1 ? "" : "s", nodes, bad > 12 ? ", ..." : "");
}

static int graph_io(tl *L) {
    const tio_graph *g = L->g;
    tfl_wsubgraph *sg = &L->m->subgraphs[0];
    int32_t *ins = tio__tl_al(L, (g->input_count + 1) * sizeof *ins);
    int32_t *outs = tio__tl_al(L, (g->output_count + 1) * sizeof *outs);
    if (!ins || !outs) return tio__tl_nomem(L);
    size_t ni = 0;
    for (size_t k = 0; k < g->input_count; k++) {
        int64_t v = g->inputs[k];
        if (v < 0 || tio__tl_vconst(L, v)) continue;
        ins[ni++] = L->t[v][tio__tl_vrank(L, v) == 4 && !L->nchw_io ? 1 : 0];
    }
    for (size_t k = 0; k < g->output_count; k++) {
        int64_t v = g->outputs[k];
        int lay = tio__tl_vrank(L, v) == 4 && !L->nchw_io ? 1 : 0;
        int rc = tio__tl_get(L, v, lay, &outs[k]);
        if (rc) return rc;
        /* the output tensor carries the value's own name */
        const char *nm = g->values[v].name;
        if (!nm) continue;
        sg = &L->m->subgraphs[0];
        int32_t other = L->t[v][1 - lay];
        if (other >= 0 && other != outs[k] && sg->tensors[other].name &&
            strcmp(sg->tensors[other].name, nm) == 0) {
            sg->tensors[other].name = sg->tensors[outs[k]].name;
            sg->tensors[outs[k]].name = nm;
        }
    }
    sg->inputs = ins;
    sg->ninputs = ni;
    sg->outputs = outs;
    sg->noutputs = g->output_count;
    return TIO_OK;
}

/* flat_ok: the outputs of Flatten/Reshape that only fully connected layers
 * (as their input, with constant weights) read, and no graph output. */
static void flat_readers(tl *L) {
    const tio_graph *g = L->g;
    for (size_t j = 0; j < g->node_count; j++) {
        const tio_gnode *n = &g->nodes[j];
        if ((tio__gp_op_is(n, "Flatten") || tio__gp_op_is(n, "Reshape")) && n->output_count == 1 &&
            n->outputs[0] >= 0)
            L->flat_ok[n->outputs[0]] = 1;
    }
    for (size_t j = 0; j < g->node_count; j++) {
        const tio_gnode *n = &g->nodes[j];
        bool fc = (tio__gp_op_is(n, "Gemm") || tio__gp_op_is(n, "MatMul")) &&
                  n->input_count >= 2 && n->inputs[1] >= 0;
        for (size_t k = 0; k < n->input_count; k++)
            if (n->inputs[k] >= 0 && (k != 0 || !fc)) L->flat_ok[n->inputs[k]] = 0;
    }
    for (size_t k = 0; k < g->output_count; k++)
        if (g->outputs[k] >= 0) L->flat_ok[g->outputs[k]] = 0;
}

static int lower(tl *L) {
    const tio_graph *g = L->g;
    if (g->opaque)
        return tio__err(L->err, TIO_E_UNSUPPORTED, TFL, -1,
                        "the model cannot be re-encoded: %s (convert the weights to a tensor "
                        "format instead)",
                        g->opaque);
    int rc = refusals(L);
    if (rc || (rc = tio__tl_qscan(L))) return rc;
    tfl_wsubgraph *sg;
    if ((rc = tio__tfl_w_subgraph(L->m, &sg, L->err))) return rc;
    sg->name = "main";
    /* graph inputs: 4-D ones NHWC unless layout=nchw */
    for (size_t k = 0; k < g->input_count; k++) {
        int64_t v = g->inputs[k];
        int32_t idx;
        if (v < 0 || tio__tl_vconst(L, v)) continue;
        int lay = tio__tl_vrank(L, v) == 4 && !L->nchw_io ? 1 : 0;
        if ((rc = tio__tl_new_form(L, v, lay, &idx))) {
            int64_t d[LMAX];
            int r;
            const tio_gvalue *gv = &g->values[v];
            bool fixed = gv->rank >= 0 && gv->rank <= LMAX && (gv->dims || !gv->rank);
            for (int64_t q = 0; fixed && q < gv->rank; q++)
                fixed = !gv->dims[q].name && gv->dims[q].value >= 0;
            if (fixed && !tio__tl_vshape(L, v, d, &r))
                return tio__err(L->err, TIO_E_LIMIT, TFL, -1,
                                "graph input '%s': a dim past int32 or more than 2^40 elements",
                                gv->name ? gv->name : "");
            if (!fixed)
                return tio__err(L->err, TIO_E_UNSUPPORTED, TFL, -1,
                                "graph input '%s' has no static shape (dims named or unknown): "
                                "the TFLite lowering needs fixed dims (fix a named one with the "
                                "write option dims=NAME:N[;NAME:N...]; tensio convert: --dim "
                                "NAME=N)",
                                gv->name ? gv->name : "");
            return rc;
        }
    }
    for (size_t j = 0; j < g->node_count; j++) {
        L->n = &g->nodes[j];
        if (L->n->output_count < 1 || L->n->outputs[0] < 0)
            return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "a node without an output");
        if (L->q[L->n->outputs[0]].ct) continue; /* a quantized constant: read where used */
        /* every kind reads input 0 (a value index of the graph) */
        if (L->n->input_count < 1 || L->n->inputs[0] < 0)
            return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "a %s node without its first input",
                                 L->n->op ? L->n->op : "");
        const tio_tfl_lowmap *e = tio__tfl_lowmap(L->n->op);
        if ((rc = tio__tl_lo_of(e->kind)(L, e))) return rc;
    }
    L->n = NULL;
    return graph_io(L);
}

int tio__tfl_lower(tio_write_plan *plan, const tio_graph *g, tfl_wmodel *m, tio_error *err) {
    static const char *const act_ops[] = {"Conv", "Gemm", "MatMul", "Add", "Sub", "Mul", "Div",
                                          "Concat", "MaxPool", "AveragePool",
                                          "BatchNormalization", NULL};
    const char *fz = tio__plan_option(plan, "fuse"), *ly = tio__plan_option(plan, "layout");
    if (fz && strcmp(fz, "0") != 0 && strcmp(fz, "1") != 0)
        return tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                        "option fuse=%s: expected 1 (BatchNormalization folded, activations "
                        "fused, the default) or 0 (the graph's nodes as they are)",
                        fz);
    if (ly && strcmp(ly, "nhwc") != 0 && strcmp(ly, "nchw") != 0)
        return tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                        "option layout=%s: expected nhwc (4-D inputs and outputs as TFLite "
                        "keeps images, the default) or nchw (as the ONNX model has them)",
                        ly);
    if (g->sub_count)
        return tio__err(err, TIO_E_UNSUPPORTED, TFL, -1,
                        "a graph with subgraphs (If, Loop) has no TFLite lowering in tensio");
    bool fuse = !fz || strcmp(fz, "0") != 0;
    tl L = {.plan = plan, .c = tio__plan_container(plan), .m = m, .err = err,
            .nchw_io = ly && strcmp(ly, "nchw") == 0, .opset = 13};
    int crc = tio__tfl_cast_check(plan, &L.f16, err);
    if (crc) return crc;
    tio_gprep_opts o = {.fmt = TFL,
                        .fuse_matmul_add = fuse,
                        .fold_bn = fuse,
                        .fuse_hardswish = fuse,
                        .act_attr = fuse ? ACT_ATTR : NULL,
                        .act_ops = act_ops,
                        .act_relu = TFL_ActivationFunctionType_RELU,
                        .act_relu6 = TFL_ActivationFunctionType_RELU6,
                        .dims = tio__plan_option(plan, "dims")};
    for (size_t k = 0; k < g->opset_count; k++)
        if (!g->opset_domains[k] || !g->opset_domains[k][0]) L.opset = g->opset_versions[k];
    int rc = tio__gprep(L.c, g, &o, &L.pr, err);
    if (rc) return rc;
    L.g = &L.pr.g;
    size_t nv = L.g->value_count;
    L.t = malloc((nv ? nv : 1) * sizeof *L.t);
    L.nonneg = calloc(nv ? nv : 1, 1);
    L.flat_ok = calloc(nv ? nv : 1, 1);
    L.nhwc_of = malloc((nv ? nv : 1) * sizeof *L.nhwc_of);
    L.deq = malloc((nv ? nv : 1) * sizeof *L.deq);
    L.q = calloc(nv ? nv : 1, sizeof *L.q);
    if (!L.t || !L.nonneg || !L.flat_ok || !L.nhwc_of || !L.deq || !L.q) rc = tio__tl_nomem(&L);
    else {
        for (size_t i = 0; i < nv; i++)
            L.t[i][0] = L.t[i][1] = -1, L.nhwc_of[i] = -1, L.deq[i] = -1, L.q[i].cv = -1,
            L.q[i].src = -1;
        flat_readers(&L);
        rc = lower(&L);
        if (!rc) tio__tfl_w_versions(m); /* each operator code at its operators' version */
        if (!rc) rc = tio__tfl_w_min_runtime(m, err); /* and the runtime they need */
    }
    free(L.t);
    free(L.nonneg);
    free(L.flat_ok);
    free(L.nhwc_of);
    free(L.deq);
    free(L.q);
    tio__gprep_free(&L.pr);
    return rc;
}
