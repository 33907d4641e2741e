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
 * inputs and outputs are NHWC (option layout=nchw keeps ONNX's).
 * See docs/formats/tflite.md, "ONNX -> TFLite".
 */
#include "tflite/write.h"

#include "graph/prep.h"
#include "tflite/lowmap.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TFL "tflite"
#define LMAX 8
/* the fused activation the preparation records on a node */
#define ACT_ATTR "tflite.fused_activation_function"

static const int P4[4] = {0, 2, 3, 1}; /* NHWC dim i is NCHW dim P4[i] */
static const int Q4[4] = {0, 3, 1, 2}; /* NCHW dim a is NHWC dim Q4[a] */
/* A 5-D value is a 4-D one with its channels split in two ([N, g, C/g, H,
 * W], as channel shuffles make it): its form 1 is [N, H, W, g, C/g]. */
static const int P5[5] = {0, 3, 4, 1, 2}; /* its own inverse */

/* Form 1's dim order for a value of rank r (NULL: it has none). */
static const int *perm_of(int r) { return r == 4 ? P4 : r == 5 ? P5 : NULL; }

typedef struct tl {
    tio_write_plan *plan;
    const tio_container *c;
    tio_gprepped pr;
    const tio_graph *g;
    tfl_wmodel *m;
    tio_error *err;
    int32_t (*t)[2];  /* per value: its tensor in the ONNX layout, in NHWC (-1: none) */
    uint8_t *nonneg;  /* per value: >= 0 (a Relu, Relu6 or Sigmoid made it) */
    /* per value: a flattened 4-D value [N, C*H*W] read only by fully connected
     * layers (flat_ok), and the 4-D value whose NHWC form it holds flattened
     * instead, the layers' weights permuted to match (nhwc_of; -1: none) */
    uint8_t *flat_ok;
    int64_t *nhwc_of;
    /* per value: the float16 constant it is the float32 Cast of (-1: none):
     * float16 weights, stored as such and DEQUANTIZEd where they are read */
    int64_t *deq;
    bool nchw_io;
    int64_t opset;
    const tio_gnode *n; /* the node being lowered (for messages) */
} tl;

/* ------------------------------------------------------------ helpers */

static int nfail(tl *L, int code, const char *fmt, ...) {
    char msg[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!L->n) return tio__err(L->err, code, TFL, -1, "%s", msg);
    return tio__err(L->err, code, TFL, -1, "node '%s' (%s): %s",
                    L->n->name ? L->n->name : "", L->n->op, msg);
}

static int nomem(tl *L) { return tio__nomem(L->err, TFL); }

static void *al(tl *L, size_t n) { return tio__tfl_w_alloc(L->m, n); }

static const tio_tensor *vconst(const tl *L, int64_t v) {
    if (v < 0 || L->g->values[v].tensor < 0) return NULL;
    const tio_tensor *t = tio__gprep_tensor(&L->pr, L->c, L->g->values[v].tensor);
    return t && t->layout == TIO_LAYOUT_DENSE && (t->data || t->nbytes == 0) ? t : NULL;
}

/* The constant behind value v: its own, or the float16 one it is a Cast of. */
static const tio_tensor *wconst(const tl *L, int64_t v) {
    const tio_tensor *t = vconst(L, v);
    return t || v < 0 || L->deq[v] < 0 ? t : vconst(L, L->deq[v]);
}

/* Whether t holds n float32 or float16 elements (weights). */
static bool wfloat(const tio_tensor *t, uint64_t n) {
    if (!t || t->numel != n) return false;
    size_t es = t->dtype == TIO_FLOAT32 ? 4 : t->dtype == TIO_FLOAT16 ? 2 : 0;
    return es && t->nbytes >= n * es;
}

/* Element i of a float32 or float16 constant, as float. */
static float wat(const tio_tensor *t, size_t i) {
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
static bool vshape(const tl *L, int64_t v, int64_t *d, int *r) {
    if (v < 0) return false;
    const tio_tensor *t = vconst(L, v);
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

static int need_shape(tl *L, int64_t v, int64_t *d, int *r) {
    if (vshape(L, v, d, r)) return TIO_OK;
    return nfail(L, TIO_E_UNSUPPORTED,
                 "value '%s' has no static shape (the TFLite lowering needs fixed dims)",
                 v >= 0 && L->g->values[v].name ? L->g->values[v].name : "");
}

static int vrank(const tl *L, int64_t v) {
    int64_t d[LMAX];
    int r;
    return vshape(L, v, d, &r) ? r : -1;
}

static const tio_gattr *attr(const tio_gnode *n, const char *name) {
    return tio__gp_attr(n, name);
}

static int64_t attr_i(const tio_gnode *n, const char *name, int64_t dflt) {
    return tio__gp_attr_i(n, name, dflt);
}

static double attr_f(const tio_gnode *n, const char *name, double dflt) {
    const tio_gattr *a = attr(n, name);
    return a && a->type == TIO_ATTR_FLOAT ? a->f : dflt;
}

/* An INTS attribute of at most max values (false when absent). */
static bool attr_ints(const tio_gnode *n, const char *name, int64_t *out, size_t max,
                      size_t *cnt) {
    const tio_gattr *a = attr(n, name);
    if (!a || a->type != TIO_ATTR_INTS || a->count > max) return false;
    for (size_t k = 0; k < a->count; k++) out[k] = a->ints[k];
    *cnt = a->count;
    return true;
}

static int64_t in_v(const tio_gnode *n, size_t k) {
    return k < n->input_count ? n->inputs[k] : -1;
}

static void stf32(uint8_t *p, float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    tio__st32(p, u);
}

/* ----------------------------------------------------------- tensors */

static int add_tensor(tl *L, const char *name, int32_t type, int r, const int64_t *d,
                      uint32_t buf, int32_t *idx) {
    int32_t *sh = al(L, (size_t)(r ? r : 1) * sizeof *sh);
    if (!sh) return nomem(L);
    for (int k = 0; k < r; k++) {
        if (d[k] < 0 || d[k] > INT32_MAX)
            return nfail(L, TIO_E_LIMIT, "tensor '%s': dim %lld does not fit int32",
                         name ? name : "", (long long)d[k]);
        sh[k] = (int32_t)d[k];
    }
    tfl_wtensor t = {.name = name, .type = type, .shape = sh, .rank = r, .nsig = -1,
                     .buffer = buf};
    return tio__tfl_w_tensor(L->m, 0, &t, idx, L->err);
}

/* A name for form `lay` of value v: its own for the first form made. */
static const char *form_name(tl *L, int64_t v, int lay) {
    const char *nm = L->g->values[v].name ? L->g->values[v].name : "";
    if (L->t[v][0] < 0 && L->t[v][1] < 0) return nm;
    size_t n = strlen(nm);
    char *s = al(L, n + 6);
    if (!s) return NULL;
    memcpy(s, nm, n);
    memcpy(s + n, lay ? "_nhwc" : "_nchw", 6);
    return s;
}

/* A new tensor for value v in form lay (its dims permuted for NHWC). */
static int new_form(tl *L, int64_t v, int lay, int32_t *idx) {
    int64_t d[LMAX], e[LMAX];
    int r, rc;
    if ((rc = need_shape(L, v, d, &r))) return rc;
    const int *P = perm_of(r);
    if (lay && !P) return nfail(L, TIO_E_ARGUMENT, "NHWC form of a rank-%d value", r);
    for (int k = 0; k < r; k++) e[k] = lay ? d[P[k]] : d[k];
    int32_t type = tio__tfl_type_of(L->g->values[v].dtype);
    if (type < 0 || L->g->values[v].dtype == TIO_DTYPE_INVALID) type = TFL_TensorType_FLOAT32;
    const char *nm = form_name(L, v, lay);
    if (!nm) return nomem(L);
    if ((rc = add_tensor(L, nm, type, r, e, 0, idx))) return rc;
    L->t[v][lay] = *idx;
    return TIO_OK;
}

static int const_i32(tl *L, const char *name, const int64_t *vals, size_t n, bool scalar,
                     int32_t *idx) {
    uint8_t *b = al(L, n ? 4 * n : 1);
    if (!b) return nomem(L);
    for (size_t k = 0; k < n; k++) {
        if (vals[k] < INT32_MIN || vals[k] > INT32_MAX)
            return nfail(L, TIO_E_LIMIT, "'%s': %lld does not fit int32", name,
                         (long long)vals[k]);
        tio__st32(b + 4 * k, (uint32_t)(int32_t)vals[k]);
    }
    uint32_t buf;
    int64_t d = (int64_t)n;
    int rc = tio__tfl_w_buffer(L->m, -1, b, 4 * n, &buf, L->err);
    return rc ? rc : add_tensor(L, name, TFL_TensorType_INT32, scalar ? 0 : 1, &d, buf, idx);
}

static int const_f32(tl *L, const char *name, const float *vals, size_t n, int r,
                     const int64_t *d, int32_t *idx) {
    uint8_t *b = al(L, n ? 4 * n : 1);
    if (!b) return nomem(L);
    for (size_t k = 0; k < n; k++) stf32(b + 4 * k, vals[k]);
    uint32_t buf;
    int rc = tio__tfl_w_buffer(L->m, -1, b, 4 * n, &buf, L->err);
    return rc ? rc : add_tensor(L, name, TFL_TensorType_FLOAT32, r, d, buf, idx);
}

static int emit(tl *L, int32_t builtin, uint8_t opt_type, const int32_t *in, size_t nin,
                const int32_t *out, size_t nout, tfl_wop **op) {
    uint32_t code;
    int rc = tio__tfl_w_code(L->m, builtin, NULL, 1, &code, L->err);
    if (rc) return rc;
    int32_t *i2 = al(L, (nin ? nin : 1) * sizeof *i2), *o2 = al(L, (nout ? nout : 1) * sizeof *o2);
    if (!i2 || !o2) return nomem(L);
    if (nin) memcpy(i2, in, nin * sizeof *i2);
    if (nout) memcpy(o2, out, nout * sizeof *o2);
    tfl_wop w = {.opcode = code, .inputs = i2, .nin = nin, .outputs = o2, .nout = nout,
                 .opt_type = opt_type, .debug_metadata_index = -1};
    tfl_wop *dummy;
    return tio__tfl_w_op(L->m, 0, &w, op ? op : &dummy, L->err);
}

/* A DEQUANTIZE of float16 tensor h into a float32 tensor of its shape. */
static int dequantize(tl *L, int32_t h, const char *name, int32_t *idx) {
    const tfl_wtensor *ht = &L->m->subgraphs[0].tensors[h];
    int64_t d[LMAX];
    int r = ht->rank;
    for (int k = 0; k < r && k < LMAX; k++) d[k] = ht->shape[k];
    int rc = add_tensor(L, name, TFL_TensorType_FLOAT32, r, d, 0, idx);
    return rc ? rc : emit(L, TFL_BuiltinOperator_DEQUANTIZE, 0, &h, 1, idx, 1, NULL);
}

/* Weights the lowering made (n elements of dtype dt, float32 or float16, in
 * b): a constant; float16 ones are kept so, with a DEQUANTIZE to float32
 * (*idx: the float32 tensor). */
static int weights(tl *L, const char *name, tio_dtype dt, const uint8_t *b, size_t n, int r,
                   const int64_t *d, int32_t *idx) {
    size_t es = dt == TIO_FLOAT16 ? 2 : 4;
    uint8_t *c = al(L, n ? n * es : 1);
    if (!c || !name) return nomem(L);
    if (n) memcpy(c, b, n * es);
    uint32_t buf;
    int32_t h;
    int rc = tio__tfl_w_buffer(L->m, -1, c, n * es, &buf, L->err);
    if (rc || (rc = add_tensor(L, name, dt == TIO_FLOAT16 ? TFL_TensorType_FLOAT16
                                                          : TFL_TensorType_FLOAT32,
                               r, d, buf, dt == TIO_FLOAT16 ? &h : idx)))
        return rc;
    if (dt != TIO_FLOAT16) return TIO_OK;
    size_t nl = strlen(name);
    char *fn = al(L, nl + 7);
    if (!fn) return nomem(L);
    memcpy(fn, name, nl);
    memcpy(fn + nl, ":float", 7);
    return dequantize(L, h, fn, idx);
}

/* A name made of the node's and a suffix (arena). */
static const char *sub_name(tl *L, const char *what) {
    const char *nm = L->n && L->n->name ? L->n->name : "";
    size_t n = strlen(nm), w = strlen(what);
    char *s = al(L, n + w + 2);
    if (!s) return NULL;
    memcpy(s, nm, n);
    s[n] = ':';
    memcpy(s + n + 1, what, w + 1);
    return s;
}

/* A scalar float constant named after the node. */
static int scalar_f32(tl *L, const char *what, float f, int32_t *idx) {
    const char *s = sub_name(L, what);
    return s ? const_f32(L, s, &f, 1, 0, NULL, idx) : nomem(L);
}

/* Constant value v in form lay. Form 1 of a constant of rank <= 4 is its
 * numpy broadcast to rank 4 (ones in front) permuted to NHWC; a one-element
 * constant is the same in both forms. int64 becomes int32 (checked). */
static int const_form(tl *L, int64_t v, int lay, int32_t *idx) {
    const tio_tensor *t = vconst(L, v);
    if (t->numel == 1) lay = 0;
    if (L->t[v][lay] >= 0) {
        *idx = L->t[v][lay];
        return TIO_OK;
    }
    if (lay && t->rank > 4)
        return nfail(L, TIO_E_UNSUPPORTED, "constant '%s' of rank %zu in an NHWC operator",
                     t->name ? t->name : "", t->rank);
    int32_t type;
    size_t es;
    switch (t->dtype) {
    case TIO_FLOAT32: type = TFL_TensorType_FLOAT32, es = 4; break;
    case TIO_FLOAT16: type = TFL_TensorType_FLOAT16, es = 2; break;
    case TIO_INT32: type = TFL_TensorType_INT32, es = 4; break;
    case TIO_INT64: type = TFL_TensorType_INT32, es = 4; break;
    default:
        return nfail(L, TIO_E_UNSUPPORTED, "constant '%s' of dtype %s (tensio lowers float32)",
                     t->name ? t->name : "", tio_dtype_name(t->dtype));
    }
    size_t isz = t->dtype == TIO_INT64 ? 8 : es;
    if (t->nbytes < t->numel * isz)
        return nfail(L, TIO_E_CORRUPT, "constant '%s' is short", t->name ? t->name : "");
    int64_t d[LMAX];
    int r = (int)t->rank;
    for (int k = 0; k < r; k++) d[k] = t->shape[k];
    const char *nm = form_name(L, v, lay);
    if (!nm) return nomem(L);
    int rc;
    if (!lay && t->dtype != TIO_INT64 && t->owner == L->c && t->index < L->pr.nc) {
        /* the container's bytes, streamed at write time */
        uint32_t buf;
        const tio_wtensor *wt = tio__plan_tensor(L->plan, t->index);
        size_t nb = wt ? wt->nbytes : t->nbytes;
        if ((rc = tio__tfl_w_buffer(L->m, (int64_t)t->index, NULL, nb, &buf, L->err)) ||
            (rc = add_tensor(L, nm, type, r, d, buf, idx)))
            return rc;
        L->t[v][lay] = *idx;
        return TIO_OK;
    }
    size_t n = (size_t)t->numel;
    uint8_t *b = al(L, n ? n * es : 1);
    if (!b) return nomem(L);
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
                return nfail(L, TIO_E_LIMIT, "constant '%s': %lld does not fit int32",
                             t->name ? t->name : "", (long long)x);
            /* (the permuted copy above took the low 4 bytes of each: LE) */
            if (!lay) tio__st32(b + 4 * k, (uint32_t)(int32_t)x);
        }
    } else if (!lay) {
        memcpy(b, t->data, n * es);
    }
    uint32_t buf;
    if ((rc = tio__tfl_w_buffer(L->m, -1, b, n * es, &buf, L->err)) ||
        (rc = add_tensor(L, nm, type, r, lay ? e : d, buf, idx)))
        return rc;
    L->t[v][lay] = *idx;
    return TIO_OK;
}


/* Whether the elements of a value of dims d (rank r) keep their order in its
 * form 1: the dims other than 1 stay in order (C of 1, or H and W of 1). */
static bool only_ones_move(const int64_t *d, int r) {
    const int *P = perm_of(r);
    int last = -1;
    for (int i = 0; P && i < r; i++)
        if (d[P[i]] != 1) {
            if (P[i] < last) return false;
            last = P[i];
        }
    return P != NULL;
}

/* Reshape tensor `from` to value v's form lay (the same elements in order). */
static int reshape_to(tl *L, int32_t from, int64_t v, int lay, int32_t *idx) {
    int64_t d[LMAX], e[LMAX];
    int r, rc;
    if ((rc = need_shape(L, v, d, &r)) || (rc = new_form(L, v, lay, idx))) return rc;
    const int *P = perm_of(r);
    for (int k = 0; k < r; k++) e[k] = lay && P ? d[P[k]] : d[k];
    int32_t shp;
    const char *nm = sub_name(L, lay ? "nhwc_shape" : "shape");
    if (!nm) return nomem(L);
    if ((rc = const_i32(L, nm, e, (size_t)r, false, &shp))) return rc;
    int32_t in[2] = {from, shp};
    tfl_wop *op;
    if ((rc = emit(L, TFL_BuiltinOperator_RESHAPE, TFL_BuiltinOptions_ReshapeOptions, in, 2, idx,
                   1, &op)))
        return rc;
    return tio__tfl_w_opt_ints(L->m, op, false, "new_shape", e, (size_t)r, L->err);
}

/* Value v in form lay: made from its other form when it has none yet. */
static int get(tl *L, int64_t v, int lay, int32_t *idx) {
    if (v < 0) return nfail(L, TIO_E_UNSUPPORTED, "an absent input is needed");
    if (vconst(L, v)) return const_form(L, v, lay, idx);
    if (L->deq[v] >= 0) {
        /* float16 weights read as float32: the constant (in the form asked
         * for), DEQUANTIZEd */
        if (vconst(L, L->deq[v])->numel == 1) lay = 0;
        if (L->t[v][lay] >= 0) {
            *idx = L->t[v][lay];
            return TIO_OK;
        }
        int32_t h;
        const char *nm = form_name(L, v, lay);
        int rc = nm ? const_form(L, L->deq[v], lay, &h) : nomem(L);
        if (rc || (rc = dequantize(L, h, nm, idx))) return rc;
        L->t[v][lay] = *idx;
        return TIO_OK;
    }
    if (L->t[v][lay] >= 0) {
        *idx = L->t[v][lay];
        return TIO_OK;
    }
    int32_t from = L->t[v][1 - lay];
    if (from < 0)
        return nfail(L, TIO_E_ARGUMENT, "value '%s' is read before it is written",
                     L->g->values[v].name ? L->g->values[v].name : "");
    int64_t d[LMAX];
    int r, rc;
    if ((rc = need_shape(L, v, d, &r))) return rc;
    if (only_ones_move(d, r)) return reshape_to(L, from, v, lay, idx);
    if ((rc = new_form(L, v, lay, idx))) return rc;
    const int *P = perm_of(r);
    int64_t perm[LMAX];
    for (int k = 0; k < r; k++) perm[lay ? k : P[k]] = lay ? P[k] : k;
    int32_t pt;
    const char *nm = sub_name(L, lay ? "to_nhwc" : "to_nchw");
    if (!nm) return nomem(L);
    if ((rc = const_i32(L, nm, perm, (size_t)r, false, &pt))) return rc;
    int32_t in[2] = {from, pt};
    return emit(L, TFL_BuiltinOperator_TRANSPOSE, TFL_BuiltinOptions_TransposeOptions, in, 2,
                idx, 1, NULL);
}

/* The form an elementwise operator runs in: NHWC when a 4-D input has it. */
static int pref_lay(const tl *L, int64_t v) {
    return v >= 0 && L->t[v][1] >= 0 && L->t[v][0] < 0 ? 1 : 0;
}

static int set_act(tl *L, tfl_wop *op, int64_t out) {
    int64_t a = attr_i(L->n, ACT_ATTR, 0);
    if (a == TFL_ActivationFunctionType_RELU || a == TFL_ActivationFunctionType_RELU6)
        L->nonneg[out] = 1;
    if (!a) return TIO_OK;
    return tio__tfl_w_opt_i(L->m, op, false, "fused_activation_function", a, L->err);
}

/* ---------------------------------------------------------- operators */

static int lo_unary(tl *L, const tio_tfl_lowmap *e) {
    int64_t x = in_v(L->n, 0), y = L->n->outputs[0];
    int lay = pref_lay(L, x);
    int32_t in, out;
    int rc;
    if ((rc = get(L, x, lay, &in)) || (rc = new_form(L, y, lay, &out))) return rc;
    if (e->code == TFL_BuiltinOperator_RELU || e->code == TFL_BuiltinOperator_LOGISTIC)
        L->nonneg[y] = 1;
    return emit(L, e->code, e->options, &in, 1, &out, 1, NULL);
}

static int lo_binary(tl *L, const tio_tfl_lowmap *e) {
    if (L->n->input_count != 2) return nfail(L, TIO_E_UNSUPPORTED, "needs two inputs");
    int64_t a = in_v(L->n, 0), b = in_v(L->n, 1), y = L->n->outputs[0];
    int ry = vrank(L, y), lay = 0;
    if (ry == 4) {
        bool ok = true, any = false;
        for (int k = 0; k < 2; k++) {
            int64_t v = k ? b : a;
            if (wconst(L, v)) {
                if (wconst(L, v)->rank > 4) ok = false;
                continue;
            }
            if (vrank(L, v) != 4) ok = false;
            if (L->t[v][1] >= 0) any = true;
        }
        lay = ok && any ? 1 : 0;
    }
    int32_t in[2], out;
    tfl_wop *op;
    int rc;
    if ((rc = get(L, a, lay, &in[0])) || (rc = get(L, b, lay, &in[1])) ||
        (rc = new_form(L, y, lay, &out)) || (rc = emit(L, e->code, e->options, in, 2, &out, 1, &op)))
        return rc;
    if (e->code == TFL_BuiltinOperator_MAXIMUM || e->code == TFL_BuiltinOperator_MINIMUM ||
        e->code == TFL_BuiltinOperator_POW)
        return TIO_OK;
    return set_act(L, op, y);
}

/* y = op(x, c) for a scalar constant c, into tensor out */
static int scalar_op(tl *L, int32_t builtin, uint8_t opt, int32_t x, float c, const char *what,
                     int32_t out, tfl_wop **op) {
    int32_t ct;
    int rc = scalar_f32(L, what, c, &ct);
    if (rc) return rc;
    int32_t in[2] = {x, ct};
    return emit(L, builtin, opt, in, 2, &out, 1, op);
}

/* A tensor like form lay of value v, for an intermediate result. */
static int temp_like(tl *L, int64_t v, int lay, const char *what, int32_t *idx) {
    int64_t d[LMAX], e[LMAX];
    int r, rc;
    if ((rc = need_shape(L, v, d, &r))) return rc;
    const int *P = perm_of(r);
    for (int k = 0; k < r; k++) e[k] = lay && P ? d[P[k]] : d[k];
    const char *nm = sub_name(L, what);
    if (!nm) return nomem(L);
    return add_tensor(L, nm, TFL_TensorType_FLOAT32, r, e, 0, idx);
}

static int lo_clip(tl *L, const tio_tfl_lowmap *e) {
    (void)e;
    if (L->n->input_count != 1)
        return nfail(L, TIO_E_UNSUPPORTED, "bounds that are not constants");
    double lo = attr_f(L->n, "min", -INFINITY), hi = attr_f(L->n, "max", INFINITY);
    int64_t x = in_v(L->n, 0), y = L->n->outputs[0];
    int lay = pref_lay(L, x);
    int32_t in, out;
    int rc;
    if ((rc = get(L, x, lay, &in))) return rc;
    if (lo <= -FLT_MAX && hi >= FLT_MAX) {
        L->t[y][lay] = in; /* no bounds: the input itself */
        L->nonneg[y] = L->nonneg[x];
        return TIO_OK;
    }
    if ((rc = new_form(L, y, lay, &out))) return rc;
    if (lo >= 0) L->nonneg[y] = 1;
    int32_t code = -1;
    if (lo == 0 && hi == 6) code = TFL_BuiltinOperator_RELU6;
    else if (lo == 0 && hi >= FLT_MAX) code = TFL_BuiltinOperator_RELU;
    else if (lo == -1 && hi == 1) code = TFL_BuiltinOperator_RELU_N1_TO_1;
    if (code >= 0) return emit(L, code, 0, &in, 1, &out, 1, NULL);
    int32_t mid = in;
    if (lo > -FLT_MAX) {
        mid = out;
        if (hi < FLT_MAX && (rc = temp_like(L, y, lay, "max", &mid))) return rc;
        if ((rc = scalar_op(L, TFL_BuiltinOperator_MAXIMUM,
                            TFL_BuiltinOptions_MaximumMinimumOptions, in, (float)lo, "min", mid,
                            NULL)))
            return rc;
    }
    if (hi < FLT_MAX)
        return scalar_op(L, TFL_BuiltinOperator_MINIMUM, TFL_BuiltinOptions_MaximumMinimumOptions,
                         mid, (float)hi, "max", out, NULL);
    return TIO_OK;
}

static int lo_leaky(tl *L, const tio_tfl_lowmap *e) {
    int64_t x = in_v(L->n, 0), y = L->n->outputs[0];
    int lay = pref_lay(L, x);
    int32_t in, out;
    tfl_wop *op;
    int rc;
    if ((rc = get(L, x, lay, &in)) || (rc = new_form(L, y, lay, &out)) ||
        (rc = emit(L, e->code, e->options, &in, 1, &out, 1, &op)))
        return rc;
    return tio__tfl_w_opt_f(L->m, op, false, "alpha", attr_f(L->n, "alpha", 0.01), L->err);
}

/* HardSigmoid: clip(a x + b, 0, 1) = relu6(6a x + 6b) / 6: MUL (unless 6a is
 * 1), ADD with RELU6, MUL by 1/6 */
static int lo_hsigmoid(tl *L, const tio_tfl_lowmap *e) {
    (void)e;
    double a = attr_f(L->n, "alpha", 0.2), b = attr_f(L->n, "beta", 0.5);
    int64_t x = in_v(L->n, 0), y = L->n->outputs[0];
    int lay = pref_lay(L, x);
    int32_t in, out, t1 = -1, t2;
    tfl_wop *op;
    int rc;
    if ((rc = get(L, x, lay, &in)) || (rc = new_form(L, y, lay, &out))) return rc;
    L->nonneg[y] = 1;
    float a6 = (float)(6 * a), b6 = (float)(6 * b);
    if (a6 != 1.0f) {
        if ((rc = temp_like(L, y, lay, "scaled", &t1)) ||
            (rc = scalar_op(L, TFL_BuiltinOperator_MUL, TFL_BuiltinOptions_MulOptions, in, a6,
                            "alpha6", t1, NULL)))
            return rc;
        in = t1;
    }
    if ((rc = temp_like(L, y, lay, "relu6", &t2)) ||
        (rc = scalar_op(L, TFL_BuiltinOperator_ADD, TFL_BuiltinOptions_AddOptions, in, b6,
                        "beta6", t2, &op)) ||
        (rc = tio__tfl_w_opt_i(L->m, op, false, "fused_activation_function",
                               TFL_ActivationFunctionType_RELU6, L->err)))
        return rc;
    return scalar_op(L, TFL_BuiltinOperator_MUL, TFL_BuiltinOptions_MulOptions, t2,
                     (float)(1.0 / 6.0), "sixth", out, NULL);
}

/* Spatial attributes of Conv and pooling: kernel, strides, dilations, pads
 * (begin h, w, end h, w), checked. */
typedef struct spat {
    int64_t k[2], s[2], dl[2], pb[2], pe[2], in[2], out[2];
    bool same_attr; /* auto_pad SAME_UPPER */
} spat;

static int get_spat(tl *L, const int64_t *k, const int64_t *xin, const int64_t *yout, spat *sp) {
    size_t cnt;
    int64_t v[4];
    for (int j = 0; j < 2; j++) {
        sp->k[j] = k[j];
        sp->s[j] = 1;
        sp->dl[j] = 1;
        sp->pb[j] = sp->pe[j] = 0;
        sp->in[j] = xin[2 + j];
        sp->out[j] = yout[2 + j];
    }
    if (attr_ints(L->n, "strides", v, 2, &cnt) && cnt == 2) sp->s[0] = v[0], sp->s[1] = v[1];
    if (attr_ints(L->n, "dilations", v, 2, &cnt) && cnt == 2) sp->dl[0] = v[0], sp->dl[1] = v[1];
    if (attr_ints(L->n, "pads", v, 4, &cnt) && cnt == 4)
        sp->pb[0] = v[0], sp->pb[1] = v[1], sp->pe[0] = v[2], sp->pe[1] = v[3];
    const tio_gattr *ap = attr(L->n, "auto_pad");
    sp->same_attr = false;
    if (ap && ap->type == TIO_ATTR_STRING && strcmp(ap->s, "NOTSET") != 0 &&
        strcmp(ap->s, "VALID") != 0) {
        if (strcmp(ap->s, "SAME_UPPER") != 0)
            return nfail(L, TIO_E_UNSUPPORTED, "auto_pad %s (SAME_UPPER, VALID, NOTSET lower)",
                         ap->s);
        sp->same_attr = true;
    }
    for (int j = 0; j < 2; j++)
        if (sp->k[j] < 1 || sp->k[j] > INT32_MAX || sp->s[j] < 1 || sp->s[j] > INT32_MAX ||
            sp->dl[j] < 1 || sp->dl[j] > INT32_MAX || sp->pb[j] < 0 || sp->pe[j] < 0 ||
            sp->pb[j] > INT32_MAX || sp->pe[j] > INT32_MAX)
            return nfail(L, TIO_E_UNSUPPORTED, "kernel, strides, dilations or pads out of range");
    return TIO_OK;
}

/* TensorFlow's SAME padding of one dim: begin, end. */
static void tf_same(const spat *sp, int j, int64_t *b, int64_t *e) {
    int64_t out = (sp->in[j] + sp->s[j] - 1) / sp->s[j];
    int64_t ek = (sp->k[j] - 1) * sp->dl[j] + 1;
    int64_t tot = (out - 1) * sp->s[j] + ek - sp->in[j];
    if (tot < 0) tot = 0;
    *b = tot / 2;
    *e = tot - *b;
}

/* 0 SAME, 1 VALID exactly; 2: an explicit PAD is needed */
static int pad_kind(spat *sp) {
    if (sp->same_attr)
        for (int j = 0; j < 2; j++) tf_same(sp, j, &sp->pb[j], &sp->pe[j]);
    bool same = true, valid = true;
    for (int j = 0; j < 2; j++) {
        int64_t b, e;
        tf_same(sp, j, &b, &e);
        if (b != sp->pb[j] || e != sp->pe[j] || sp->out[j] != (sp->in[j] + sp->s[j] - 1) / sp->s[j])
            same = false;
        if (sp->pb[j] || sp->pe[j]) valid = false;
        int64_t ek = (sp->k[j] - 1) * sp->dl[j] + 1;
        if (sp->in[j] < ek || sp->out[j] != (sp->in[j] - ek) / sp->s[j] + 1) valid = false;
    }
    return valid ? TFL_Padding_VALID : same ? TFL_Padding_SAME : 2;
}

/* An explicit PAD (value: 0, or PADV2's) of NHWC tensor `in` of value x by
 * sp's pads: the padded tensor. */
static int explicit_pad(tl *L, int64_t x, int32_t in, const spat *sp, bool lowest,
                        int32_t *padded) {
    int64_t d[LMAX];
    int r, rc;
    if ((rc = need_shape(L, x, d, &r))) return rc;
    int64_t pads[8] = {0, 0, sp->pb[0], sp->pe[0], sp->pb[1], sp->pe[1], 0, 0};
    int64_t e[4] = {d[0], d[2] + sp->pb[0] + sp->pe[0], d[3] + sp->pb[1] + sp->pe[1], d[1]};
    int32_t pt;
    const char *nm = sub_name(L, "pads"), *pn = sub_name(L, "padded");
    if (!nm || !pn) return nomem(L);
    if ((rc = const_i32(L, nm, pads, 8, false, &pt))) return rc;
    L->m->subgraphs[0].tensors[pt].rank = 2;
    int32_t *s2 = al(L, 2 * sizeof *s2);
    if (!s2) return nomem(L);
    s2[0] = 4;
    s2[1] = 2;
    L->m->subgraphs[0].tensors[pt].shape = s2;
    if ((rc = add_tensor(L, pn, TFL_TensorType_FLOAT32, 4, e, 0, padded))) return rc;
    if (!lowest) {
        int32_t ins[2] = {in, pt};
        return emit(L, TFL_BuiltinOperator_PAD, TFL_BuiltinOptions_PadOptions, ins, 2, padded, 1,
                    NULL);
    }
    int32_t cv;
    if ((rc = scalar_f32(L, "pad_value", -FLT_MAX, &cv))) return rc;
    int32_t ins[3] = {in, pt, cv};
    return emit(L, TFL_BuiltinOperator_PADV2, TFL_BuiltinOptions_PadV2Options, ins, 3, padded, 1,
                NULL);
}

/* A bias of n zeros (where the ONNX node has none, as TensorFlow writes one). */
static int zero_bias(tl *L, int64_t n, int32_t *idx) {
    float *z = calloc((size_t)n ? (size_t)n : 1, sizeof *z);
    const char *bn = sub_name(L, "bias");
    int rc = !z || !bn ? nomem(L) : const_f32(L, bn, z, (size_t)n, 1, &n, idx);
    free(z);
    return rc;
}

static int lo_conv(tl *L, const tio_tfl_lowmap *e) {
    int64_t x = in_v(L->n, 0), wv = in_v(L->n, 1), bv = in_v(L->n, 2), y = L->n->outputs[0];
    const tio_tensor *w = wconst(L, wv), *bt = bv >= 0 ? wconst(L, bv) : NULL;
    int64_t xd[LMAX], yd[LMAX];
    int rx, ry, rc;
    if (!w || w->rank != 4 || !wfloat(w, w->numel))
        return nfail(L, TIO_E_UNSUPPORTED,
                     "the weights must be a 4-D float32 or float16 constant (2-D Conv)");
    if (bv >= 0 && !wfloat(bt, (uint64_t)w->shape[0]))
        return nfail(L, TIO_E_UNSUPPORTED,
                     "the bias must be a float32 or float16 constant of %lld values",
                     (long long)w->shape[0]);
    if ((rc = need_shape(L, x, xd, &rx)) || (rc = need_shape(L, y, yd, &ry))) return rc;
    if (rx != 4 || ry != 4) return nfail(L, TIO_E_UNSUPPORTED, "only 2-D Conv lowers");
    int64_t O = w->shape[0], I = w->shape[1], KH = w->shape[2], KW = w->shape[3], C = xd[1];
    int64_t grp = attr_i(L->n, "group", 1);
    bool dw = grp != 1;
    if (C < 1 || grp < 1 || O < 1)
        return nfail(L, TIO_E_UNSUPPORTED, "%lld input channels, group %lld", (long long)C,
                     (long long)grp);
    if (dw && !(grp == C && I == 1 && O % C == 0))
        return nfail(L, TIO_E_UNSUPPORTED,
                     "group %lld of %lld channels (plain and depthwise Conv lower)",
                     (long long)grp, (long long)C);
    if (!dw && I != C)
        return nfail(L, TIO_E_ARGUMENT, "weights of %lld input channels for %lld", (long long)I,
                     (long long)C);
    spat sp;
    int64_t k[2] = {KH, KW};
    if ((rc = get_spat(L, k, xd, yd, &sp))) return rc;
    int pk = pad_kind(&sp);
    int32_t in;
    if ((rc = get(L, x, 1, &in))) return rc;
    if (pk == 2) {
        int32_t p;
        if ((rc = explicit_pad(L, x, in, &sp, false, &p))) return rc;
        in = p;
        pk = TFL_Padding_VALID;
    }
    /* weights: OHWI, or 1HWO for depthwise */
    size_t n = (size_t)w->numel, es = w->dtype == TIO_FLOAT16 ? 2 : 4;
    uint8_t *nw = malloc((n ? n : 1) * es);
    if (!nw) return nomem(L);
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = 0; i < I; i++)
            for (int64_t yy = 0; yy < KH; yy++)
                for (int64_t xx = 0; xx < KW; xx++) {
                    size_t src = (size_t)(((o * I + i) * KH + yy) * KW + xx);
                    size_t dst = dw ? (size_t)((yy * KW + xx) * O + o)
                                    : (size_t)(((o * KH + yy) * KW + xx) * I + i);
                    memcpy(nw + es * dst, w->data + es * src, es);
                }
    int64_t wsh[4] = {dw ? 1 : O, KH, KW, dw ? O : I};
    int32_t wt, btn, out;
    rc = weights(L, sub_name(L, dw ? "weights_1hwo" : "weights_ohwi"), w->dtype, nw, n, 4, wsh,
                 &wt);
    free(nw);
    if (rc) return rc;
    if ((rc = bt ? get(L, bv, 0, &btn) : zero_bias(L, O, &btn))) return rc;
    if ((rc = new_form(L, y, 1, &out))) return rc;
    int32_t ins[3] = {in, wt, btn};
    tfl_wop *op;
    if ((rc = emit(L, dw ? e->code2 : e->code,
                   dw ? TFL_BuiltinOptions_DepthwiseConv2DOptions : e->options, ins, 3, &out, 1,
                   &op)) ||
        (rc = tio__tfl_w_opt_i(L->m, op, false, "padding", pk, L->err)) ||
        (rc = tio__tfl_w_opt_i(L->m, op, false, "stride_h", sp.s[0], L->err)) ||
        (rc = tio__tfl_w_opt_i(L->m, op, false, "stride_w", sp.s[1], L->err)) ||
        (rc = tio__tfl_w_opt_i(L->m, op, false, "dilation_h_factor", sp.dl[0], L->err)) ||
        (rc = tio__tfl_w_opt_i(L->m, op, false, "dilation_w_factor", sp.dl[1], L->err)))
        return rc;
    if (dw && (rc = tio__tfl_w_opt_i(L->m, op, false, "depth_multiplier", O / C, L->err)))
        return rc;
    return set_act(L, op, y);
}

static int lo_pool(tl *L, const tio_tfl_lowmap *e) {
    int64_t x = in_v(L->n, 0), y = L->n->outputs[0];
    int64_t xd[LMAX], yd[LMAX], k[2];
    int rx, ry, rc;
    size_t cnt;
    if (L->n->output_count > 1 && L->n->outputs[1] >= 0)
        return nfail(L, TIO_E_UNSUPPORTED, "MaxPool's Indices output");
    if ((rc = need_shape(L, x, xd, &rx)) || (rc = need_shape(L, y, yd, &ry))) return rc;
    if (rx != 4 || !attr_ints(L->n, "kernel_shape", k, 2, &cnt) || cnt != 2)
        return nfail(L, TIO_E_UNSUPPORTED, "only 2-D pooling lowers");
    spat sp;
    if ((rc = get_spat(L, k, xd, yd, &sp))) return rc;
    if (sp.dl[0] != 1 || sp.dl[1] != 1) return nfail(L, TIO_E_UNSUPPORTED, "dilated pooling");
    bool avg = e->code == TFL_BuiltinOperator_AVERAGE_POOL_2D;
    bool incl = attr_i(L->n, "count_include_pad", 0) != 0;
    int pk = pad_kind(&sp);
    if (pk == TFL_Padding_SAME && avg && incl && (sp.pb[0] || sp.pb[1] || sp.pe[0] || sp.pe[1]))
        pk = 2; /* TFLite's SAME average leaves the padding out */
    int32_t in;
    if ((rc = get(L, x, 1, &in))) return rc;
    if (pk == 2) {
        /* the end pads a ceil_mode window needs (its window starts inside) */
        for (int j = 0; j < 2; j++) {
            int64_t span = sp.in[j] + sp.pb[j] + sp.pe[j] - sp.k[j];
            if (span < 0) return nfail(L, TIO_E_UNSUPPORTED, "a window larger than the input");
            int64_t need = (sp.out[j] - 1) * sp.s[j] - span;
            if (need > 0) {
                if (avg) return nfail(L, TIO_E_UNSUPPORTED, "ceil_mode average pooling");
                sp.pe[j] += need;
            }
        }
        if (avg && !incl)
            return nfail(L, TIO_E_UNSUPPORTED,
                         "padding that is not SAME without count_include_pad");
        int32_t p;
        if ((rc = explicit_pad(L, x, in, &sp, !avg && !L->nonneg[x], &p))) return rc;
        in = p;
        pk = TFL_Padding_VALID;
    }
    int32_t out;
    tfl_wop *op;
    if ((rc = new_form(L, y, 1, &out)) || (rc = emit(L, e->code, e->options, &in, 1, &out, 1, &op)) ||
        (rc = tio__tfl_w_opt_i(L->m, op, false, "padding", pk, L->err)) ||
        (rc = tio__tfl_w_opt_i(L->m, op, false, "stride_h", sp.s[0], L->err)) ||
        (rc = tio__tfl_w_opt_i(L->m, op, false, "stride_w", sp.s[1], L->err)) ||
        (rc = tio__tfl_w_opt_i(L->m, op, false, "filter_height", sp.k[0], L->err)) ||
        (rc = tio__tfl_w_opt_i(L->m, op, false, "filter_width", sp.k[1], L->err)))
        return rc;
    if (!avg) L->nonneg[y] = L->nonneg[x];
    return set_act(L, op, y);
}

/* A reduction over ONNX axes ax (mask) of x into y. */
static int reduce(tl *L, const tio_tfl_lowmap *e, int64_t x, int64_t y, const uint8_t *mask,
                  bool keep) {
    int64_t xd[LMAX];
    int rx, rc;
    if ((rc = need_shape(L, x, xd, &rx))) return rc;
    int lay = rx == 4 ? 1 : 0, ylay = 0;
    if (lay) {
        if (keep) ylay = 1;
        else {
            /* the dims kept, in NHWC order, must be in ONNX order */
            int last = -1;
            for (int i = 0; i < 4; i++)
                if (!mask[P4[i]]) {
                    if (P4[i] < last) lay = 0;
                    last = P4[i];
                }
        }
    }
    int64_t axes[LMAX];
    size_t na = 0;
    for (int i = 0; i < rx; i++)
        if (mask[lay ? P4[i] : i]) axes[na++] = i;
    int32_t in, at, out;
    tfl_wop *op;
    const char *nm = sub_name(L, "axes");
    if (!nm) return nomem(L);
    if ((rc = get(L, x, lay, &in)) || (rc = const_i32(L, nm, axes, na, false, &at)) ||
        (rc = new_form(L, y, ylay, &out)))
        return rc;
    int32_t ins[2] = {in, at};
    if ((rc = emit(L, e->code, e->options, ins, 2, &out, 1, &op))) return rc;
    L->nonneg[y] = e->code != TFL_BuiltinOperator_SUM && L->nonneg[x];
    return keep ? tio__tfl_w_opt_i(L->m, op, false, "keep_dims", 1, L->err) : TIO_OK;
}

static int lo_gpool(tl *L, const tio_tfl_lowmap *e) {
    uint8_t mask[LMAX] = {0};
    int r = vrank(L, in_v(L->n, 0));
    if (r < 3) return nfail(L, TIO_E_UNSUPPORTED, "input of rank %d", r);
    for (int k = 2; k < r; k++) mask[k] = 1;
    return reduce(L, e, in_v(L->n, 0), L->n->outputs[0], mask, true);
}

static int lo_reduce(tl *L, const tio_tfl_lowmap *e) {
    uint8_t mask[LMAX] = {0};
    int64_t ax[LMAX];
    size_t cnt;
    int r = vrank(L, in_v(L->n, 0));
    if (r < 1) return nfail(L, TIO_E_UNSUPPORTED, "an input without a static shape");
    if (L->n->input_count > 1) return nfail(L, TIO_E_UNSUPPORTED, "axes that are not constant");
    if (!attr_ints(L->n, "axes", ax, LMAX, &cnt)) {
        for (int k = 0; k < r; k++) mask[k] = 1;
    } else {
        for (size_t k = 0; k < cnt; k++) {
            int64_t a = ax[k] < 0 ? ax[k] + r : ax[k];
            if (a < 0 || a >= r) return nfail(L, TIO_E_ARGUMENT, "axis %lld", (long long)ax[k]);
            mask[a] = 1;
        }
    }
    return reduce(L, e, in_v(L->n, 0), L->n->outputs[0], mask, attr_i(L->n, "keepdims", 1) != 0);
}

/* A tensor whose elements in order are value v's in ONNX order. */
static int get_flat(tl *L, int64_t v, int32_t *idx) {
    int64_t d[LMAX];
    int r;
    if (!vconst(L, v) && L->t[v][0] < 0 && L->t[v][1] >= 0 && vshape(L, v, d, &r) &&
        only_ones_move(d, r)) {
        *idx = L->t[v][1];
        return TIO_OK;
    }
    return get(L, v, 0, idx);
}

static int reshape_op(tl *L, int32_t in, int64_t y, int32_t out) {
    int64_t d[LMAX];
    int r, rc;
    if ((rc = need_shape(L, y, d, &r))) return rc;
    int32_t st;
    const char *nm = sub_name(L, "shape");
    if (!nm) return nomem(L);
    if ((rc = const_i32(L, nm, d, (size_t)r, false, &st))) return rc;
    int32_t ins[2] = {in, st};
    tfl_wop *op;
    if ((rc = emit(L, TFL_BuiltinOperator_RESHAPE, TFL_BuiltinOptions_ReshapeOptions, ins, 2, &out,
                   1, &op)))
        return rc;
    return tio__tfl_w_opt_ints(L->m, op, false, "new_shape", d, (size_t)r, L->err);
}

static int lo_reshape(tl *L, const tio_tfl_lowmap *e) {
    (void)e;
    int64_t x = in_v(L->n, 0), y = L->n->outputs[0];
    int32_t in, out;
    int64_t xd[LMAX], yd[LMAX];
    int rx, ry, rc;
    L->nonneg[y] = L->nonneg[x];
    if (L->flat_ok[y] && !vconst(L, x) && L->t[x][1] >= 0 && L->t[x][0] < 0 &&
        vshape(L, x, xd, &rx) && rx == 4 && vshape(L, y, yd, &ry) && ry == 2 &&
        yd[0] == xd[0] && yd[1] == xd[1] * xd[2] * xd[3] && !only_ones_move(xd, 4)) {
        /* the NHWC form flattened: the fully connected layers reading it take
         * their weights' columns in H, W, C order (no TRANSPOSE) */
        if ((rc = new_form(L, y, 0, &out))) return rc;
        L->nhwc_of[y] = x;
        return reshape_op(L, L->t[x][1], y, out);
    }
    if (!vconst(L, x) && L->t[x][1] >= 0 && L->t[x][0] < 0 && vshape(L, x, xd, &rx) &&
        vshape(L, y, yd, &ry) && yd[0] == xd[0] &&
        ((rx == 4 && ry == 5 && yd[1] * yd[2] == xd[1] && yd[3] == xd[2] && yd[4] == xd[3]) ||
         (rx == 5 && ry == 4 && yd[1] == xd[1] * xd[2] && yd[2] == xd[3] && yd[3] == xd[4])))
        /* channels split in two or joined again (a channel shuffle): the
         * same in form 1, [N, H, W, C] <-> [N, H, W, g, C/g] */
        return reshape_to(L, L->t[x][1], y, 1, &out);
    if ((rc = get_flat(L, x, &in)) || (rc = new_form(L, y, 0, &out))) return rc;
    return reshape_op(L, in, y, out);
}

/* FULLY_CONNECTED: Gemm in its FC form (transB = 1), MatMul by a constant */
static int lo_fc(tl *L, const tio_tfl_lowmap *e) {
    bool mm = strcmp(L->n->op, "MatMul") == 0;
    int64_t x = in_v(L->n, 0), wv = in_v(L->n, 1), bv = mm ? -1 : in_v(L->n, 2),
            y = L->n->outputs[0];
    const tio_tensor *w = wconst(L, wv), *b = bv >= 0 ? wconst(L, bv) : NULL;
    int64_t xd[LMAX];
    int rx, rc;
    if ((rc = need_shape(L, x, xd, &rx))) return rc;
    if (!w || w->rank != 2 || !wfloat(w, w->numel))
        return nfail(L, TIO_E_UNSUPPORTED, "the weights must be a 2-D float32 or float16 constant");
    if (!mm && (attr_i(L->n, "transA", 0) || attr_i(L->n, "transB", 0) != 1 ||
                attr_f(L->n, "alpha", 1) != 1 || attr_f(L->n, "beta", 1) != 1 || rx != 2))
        return nfail(L, TIO_E_UNSUPPORTED, "a Gemm that is not x W^T + b on a 2-D x");
    int64_t N = mm ? w->shape[1] : w->shape[0], K = mm ? w->shape[0] : w->shape[1];
    if (rx < 2 || xd[rx - 1] != K)
        return nfail(L, TIO_E_ARGUMENT, "an input of %lld features for weights of %lld",
                     rx > 0 ? (long long)xd[rx - 1] : 0LL, (long long)K);
    if (bv >= 0 && !wfloat(b, (uint64_t)N))
        return nfail(L, TIO_E_UNSUPPORTED,
                     "the bias must be a float32 or float16 constant of %lld values", (long long)N);
    int32_t in, wt, bt, out;
    if ((rc = get_flat(L, x, &in))) return rc;
    int64_t src4 = L->nhwc_of[x], sd[LMAX];
    int sr = 0;
    if (src4 >= 0 && (!vshape(L, src4, sd, &sr) || sr != 4 || sd[1] * sd[2] * sd[3] != K))
        return nfail(L, TIO_E_ARGUMENT, "a flattened input that is not C*H*W");
    if (mm || src4 >= 0) {
        /* [N, K]: MatMul's [K, N] transposed; columns in H, W, C order for a
         * flattened NHWC input */
        size_t n = (size_t)w->numel, es = w->dtype == TIO_FLOAT16 ? 2 : 4;
        uint8_t *t = malloc((n ? n : 1) * es);
        if (!t) return nomem(L);
        for (int64_t i = 0; i < N; i++)
            for (int64_t k = 0; k < K; k++) {
                int64_t kk = k; /* the source column of column k */
                if (src4 >= 0) {
                    int64_t C = sd[1], W = sd[3], c = k % C, hw = k / C;
                    kk = (c * sd[2] + hw / W) * W + hw % W;
                }
                memcpy(t + es * (size_t)(i * K + k),
                       w->data + es * (size_t)(mm ? kk * N + i : i * K + kk), es);
            }
        int64_t sh[2] = {N, K};
        rc = weights(L, sub_name(L, src4 >= 0 ? "weights_hwc" : "weights_t"), w->dtype, t, n, 2,
                     sh, &wt);
        free(t);
    } else rc = get(L, wv, 0, &wt);
    if (rc) return rc;
    if (b && b->rank == 1) rc = get(L, bv, 0, &bt);
    else if (b) /* [1, N] viewed as [N] */
        rc = weights(L, sub_name(L, "bias"), b->dtype, b->data, (size_t)N, 1, &N, &bt);
    else rc = zero_bias(L, N, &bt);
    if (rc) return rc;
    if ((rc = new_form(L, y, 0, &out))) return rc;
    int32_t fin = in, fout = out;
    if (rx != 2) {
        /* [..., K] -> [M, K], and the result back to y's shape */
        int64_t m2[2] = {1, K}, o2[2];
        for (int k = 0; k < rx - 1; k++) m2[0] *= xd[k];
        o2[0] = m2[0];
        o2[1] = N;
        const char *a = sub_name(L, "rows"), *o = sub_name(L, "fc");
        if (!a || !o) return nomem(L);
        int32_t st;
        if ((rc = add_tensor(L, a, TFL_TensorType_FLOAT32, 2, m2, 0, &fin)) ||
            (rc = add_tensor(L, o, TFL_TensorType_FLOAT32, 2, o2, 0, &fout)) ||
            (rc = const_i32(L, sub_name(L, "rows_shape"), m2, 2, false, &st)))
            return rc;
        int32_t ri[2] = {in, st};
        tfl_wop *rop;
        if ((rc = emit(L, TFL_BuiltinOperator_RESHAPE, TFL_BuiltinOptions_ReshapeOptions, ri, 2,
                       &fin, 1, &rop)) ||
            (rc = tio__tfl_w_opt_ints(L->m, rop, false, "new_shape", m2, 2, L->err)))
            return rc;
    }
    int32_t ins[3] = {fin, wt, bt};
    tfl_wop *op;
    if ((rc = emit(L, e->code, e->options, ins, 3, &fout, 1, &op)) || (rc = set_act(L, op, y)))
        return rc;
    return rx != 2 ? reshape_op(L, fout, y, out) : TIO_OK;
}

static int lo_concat(tl *L, const tio_tfl_lowmap *e) {
    int64_t y = L->n->outputs[0];
    int ry = vrank(L, y), rc;
    if (ry < 1) return nfail(L, TIO_E_UNSUPPORTED, "an output without a static shape");
    int64_t ax = attr_i(L->n, "axis", 0);
    if (ax < 0) ax += ry;
    if (ax < 0 || ax >= ry) return nfail(L, TIO_E_ARGUMENT, "axis out of range");
    int lay = 0;
    bool nn = true;
    if (ry == 4) {
        lay = 1;
        for (size_t k = 0; k < L->n->input_count; k++) {
            int64_t v = L->n->inputs[k];
            if (!wconst(L, v) && L->t[v][1] < 0 && L->t[v][0] >= 0) lay = 0;
        }
    }
    int32_t *ins = al(L, (L->n->input_count + 1) * sizeof *ins), out;
    if (!ins) return nomem(L);
    for (size_t k = 0; k < L->n->input_count; k++) {
        if ((rc = get(L, L->n->inputs[k], lay, &ins[k]))) return rc;
        if (L->n->inputs[k] < 0 || !L->nonneg[L->n->inputs[k]]) nn = false;
    }
    tfl_wop *op;
    if ((rc = new_form(L, y, lay, &out)) ||
        (rc = emit(L, e->code, e->options, ins, L->n->input_count, &out, 1, &op)) ||
        (rc = tio__tfl_w_opt_i(L->m, op, false, "axis", lay ? Q4[ax] : ax, L->err)))
        return rc;
    L->nonneg[y] = nn;
    return set_act(L, op, y);
}

static int lo_transpose(tl *L, const tio_tfl_lowmap *e) {
    int64_t x = in_v(L->n, 0), y = L->n->outputs[0], d[LMAX], perm[LMAX], q[LMAX];
    int r, rc;
    size_t cnt;
    if ((rc = need_shape(L, x, d, &r))) return rc;
    if (!attr_ints(L->n, "perm", perm, LMAX, &cnt)) {
        for (int k = 0; k < r; k++) perm[k] = r - 1 - k;
        cnt = (size_t)r;
    }
    if ((int)cnt != r) return nfail(L, TIO_E_ARGUMENT, "perm of %zu axes for rank %d", cnt, r);
    const int *P = perm_of(r);
    int src = vconst(L, x) || !P ? 0 : pref_lay(L, x), ylay = r == 4 ? 1 : src, inv[LMAX];
    for (int i = 0; P && i < r; i++) inv[P[i]] = i;
    for (int i = 0; i < r; i++) {
        int64_t a = perm[ylay ? P[i] : i]; /* the input's ONNX axis */
        if (a < 0 || a >= r) return nfail(L, TIO_E_ARGUMENT, "perm out of range");
        q[i] = src ? inv[a] : a;
    }
    int32_t in, out, pt;
    if ((rc = get(L, x, src, &in))) return rc;
    L->nonneg[y] = L->nonneg[x];
    bool ident = true;
    for (int i = 0; i < r; i++) ident = ident && q[i] == i;
    if (ident && !vconst(L, x)) {
        L->t[y][ylay] = in; /* the transposes cancel */
        return TIO_OK;
    }
    if ((rc = new_form(L, y, ylay, &out))) return rc;
    const char *nm = sub_name(L, "perm");
    if (!nm) return nomem(L);
    if ((rc = const_i32(L, nm, q, (size_t)r, false, &pt))) return rc;
    int32_t ins[2] = {in, pt};
    return emit(L, e->code, e->options, ins, 2, &out, 1, NULL);
}

static int lo_softmax(tl *L, const tio_tfl_lowmap *e) {
    int64_t x = in_v(L->n, 0), y = L->n->outputs[0];
    int r = vrank(L, x), rc;
    if (r < 1) return nfail(L, TIO_E_UNSUPPORTED, "an input without a static shape");
    int64_t ax = attr_i(L->n, "axis", L->opset >= 13 ? -1 : 1);
    if (ax < 0) ax += r;
    int lay;
    if (ax == r - 1) lay = 0;
    else if (r == 4 && ax == 1 && L->opset >= 13) lay = 1;
    else
        return nfail(L, TIO_E_UNSUPPORTED, "axis %lld of rank %d (the last axis lowers)",
                     (long long)ax, r);
    int32_t in, out;
    tfl_wop *op;
    if ((rc = get(L, x, lay, &in)) || (rc = new_form(L, y, lay, &out)) ||
        (rc = emit(L, e->code, e->options, &in, 1, &out, 1, &op)))
        return rc;
    L->nonneg[y] = e->code == TFL_BuiltinOperator_SOFTMAX;
    return e->code == TFL_BuiltinOperator_SOFTMAX
               ? tio__tfl_w_opt_f(L->m, op, false, "beta", 1.0, L->err)
               : TIO_OK;
}

static int lo_pad(tl *L, const tio_tfl_lowmap *e) {
    int64_t x = in_v(L->n, 0), y = L->n->outputs[0], pads[2 * LMAX], tp[2 * LMAX];
    size_t cnt;
    int r = vrank(L, x), rc;
    const tio_gattr *mode = attr(L->n, "mode");
    if (mode && mode->type == TIO_ATTR_STRING && strcmp(mode->s, "constant") != 0)
        return nfail(L, TIO_E_UNSUPPORTED, "mode %s (constant lowers)", mode->s);
    if (L->n->input_count > 1 || !attr_ints(L->n, "pads", pads, 2 * LMAX, &cnt) ||
        (int)cnt != 2 * r)
        return nfail(L, TIO_E_UNSUPPORTED, "pads that are not constant");
    for (size_t k = 0; k < cnt; k++)
        if (pads[k] < 0) return nfail(L, TIO_E_UNSUPPORTED, "negative pads");
    double val = attr_f(L->n, "value", 0);
    int lay = r == 4 ? 1 : 0;
    for (int i = 0; i < r; i++) {
        int a = lay ? P4[i] : i;
        tp[2 * i] = pads[a];
        tp[2 * i + 1] = pads[a + r];
    }
    int32_t in, pt, out;
    const char *nm = sub_name(L, "paddings");
    if (!nm) return nomem(L);
    if ((rc = get(L, x, lay, &in)) || (rc = const_i32(L, nm, tp, 2 * (size_t)r, false, &pt)))
        return rc;
    int32_t *s2 = al(L, 2 * sizeof *s2);
    if (!s2) return nomem(L);
    s2[0] = r;
    s2[1] = 2;
    L->m->subgraphs[0].tensors[pt].rank = 2;
    L->m->subgraphs[0].tensors[pt].shape = s2;
    if ((rc = new_form(L, y, lay, &out))) return rc;
    L->nonneg[y] = L->nonneg[x] && val >= 0;
    if (val == 0) {
        int32_t ins[2] = {in, pt};
        return emit(L, e->code, e->options, ins, 2, &out, 1, NULL);
    }
    int32_t cv;
    if ((rc = scalar_f32(L, "value", (float)val, &cv))) return rc;
    int32_t ins[3] = {in, pt, cv};
    return emit(L, e->code2, TFL_BuiltinOptions_PadV2Options, ins, 3, &out, 1, NULL);
}

/* BatchNormalization left (not after a Conv or Gemm, or fuse=0): x * s + t
 * per channel, s = gamma / sqrt(var + eps), t = beta - mean * s */
static int lo_bn(tl *L, const tio_tfl_lowmap *e) {
    int64_t x = in_v(L->n, 0), y = L->n->outputs[0];
    int r = vrank(L, x), rc;
    if (L->n->input_count != 5 || (L->n->output_count > 1 && L->n->outputs[1] >= 0))
        return nfail(L, TIO_E_UNSUPPORTED, "training-mode outputs");
    if (r != 4 && r != 2) return nfail(L, TIO_E_UNSUPPORTED, "input of rank %d", r);
    const tio_tensor *p[4];
    int64_t d[LMAX];
    int rx;
    if ((rc = need_shape(L, x, d, &rx))) return rc;
    size_t C = (size_t)d[1];
    for (int k = 0; k < 4; k++) {
        p[k] = wconst(L, in_v(L->n, (size_t)k + 1));
        if (!wfloat(p[k], C))
            return nfail(L, TIO_E_UNSUPPORTED,
                         "parameters that are not float32 or float16 constants of %zu", C);
    }
    float eps = (float)attr_f(L->n, "epsilon", 1e-5);
    float *s = malloc(2 * (C ? C : 1) * sizeof *s), *t = s ? s + C : NULL;
    if (!s) return nomem(L);
    for (size_t c = 0; c < C; c++) {
        float inv = 1.f / sqrtf(wat(p[3], c) + eps);
        s[c] = wat(p[0], c) * inv;
        t[c] = wat(p[1], c) - wat(p[2], c) * s[c];
    }
    int lay = r == 4 ? 1 : 0;
    int64_t cd = (int64_t)C;
    int32_t in, st, tt, mid, out;
    const char *sn = sub_name(L, "scale"), *tn = sub_name(L, "shift");
    rc = !sn || !tn ? nomem(L) : const_f32(L, sn, s, C, 1, &cd, &st);
    if (!rc) rc = const_f32(L, tn, t, C, 1, &cd, &tt);
    free(s);
    if (rc || (rc = get(L, x, lay, &in)) || (rc = temp_like(L, y, lay, "scaled", &mid)) ||
        (rc = new_form(L, y, lay, &out)))
        return rc;
    int32_t i1[2] = {in, st}, i2[2] = {mid, tt};
    tfl_wop *op;
    if ((rc = emit(L, e->code, e->options, i1, 2, &mid, 1, NULL)) ||
        (rc = emit(L, e->code2, TFL_BuiltinOptions_AddOptions, i2, 2, &out, 1, &op)))
        return rc;
    return set_act(L, op, y);
}

static int lo_slice(tl *L, const tio_tfl_lowmap *e) {
    int64_t x = in_v(L->n, 0), y = L->n->outputs[0], xd[LMAX], st[LMAX], en[LMAX], ax[LMAX],
            sp[LMAX];
    size_t ns, ne, na, nsp;
    int r, rc;
    if ((rc = need_shape(L, x, xd, &r))) return rc;
    if (L->n->input_count > 1 || !attr_ints(L->n, "starts", st, LMAX, &ns) ||
        !attr_ints(L->n, "ends", en, LMAX, &ne) || ns != ne)
        return nfail(L, TIO_E_UNSUPPORTED, "starts and ends that are not constant");
    if (!attr_ints(L->n, "axes", ax, LMAX, &na))
        for (na = 0; na < ns; na++) ax[na] = (int64_t)na;
    if (!attr_ints(L->n, "steps", sp, LMAX, &nsp))
        for (nsp = 0; nsp < ns; nsp++) sp[nsp] = 1;
    if (na != ns || nsp != ns) return nfail(L, TIO_E_ARGUMENT, "starts, ends, axes, steps differ");
    int64_t b[LMAX], en2[LMAX], s[LMAX];
    for (int k = 0; k < r; k++) b[k] = 0, en2[k] = xd[k], s[k] = 1;
    for (size_t k = 0; k < ns; k++) {
        int64_t a = ax[k] < 0 ? ax[k] + r : ax[k], dim;
        if (a < 0 || a >= r) return nfail(L, TIO_E_ARGUMENT, "axis out of range");
        if (sp[k] < 1) return nfail(L, TIO_E_UNSUPPORTED, "steps below 1");
        dim = xd[a];
        int64_t s0 = st[k] < 0 ? st[k] + dim : st[k], e0 = en[k] < 0 ? en[k] + dim : en[k];
        s0 = s0 < 0 ? 0 : s0 > dim ? dim : s0;
        e0 = e0 < 0 ? 0 : e0 > dim ? dim : e0;
        b[a] = s0;
        en2[a] = e0 > s0 ? e0 : s0;
        s[a] = sp[k];
    }
    int lay = r == 4 ? pref_lay(L, x) : 0;
    int64_t bb[LMAX], ee[LMAX], ss[LMAX];
    for (int i = 0; i < r; i++) {
        int a = lay ? P4[i] : i;
        bb[i] = b[a], ee[i] = en2[a], ss[i] = s[a];
    }
    int32_t in, bt, et, stt, out;
    const char *n1 = sub_name(L, "begin"), *n2 = sub_name(L, "end"), *n3 = sub_name(L, "strides");
    if (!n1 || !n2 || !n3) return nomem(L);
    if ((rc = get(L, x, lay, &in)) || (rc = const_i32(L, n1, bb, (size_t)r, false, &bt)) ||
        (rc = const_i32(L, n2, ee, (size_t)r, false, &et)) ||
        (rc = const_i32(L, n3, ss, (size_t)r, false, &stt)) || (rc = new_form(L, y, lay, &out)))
        return rc;
    L->nonneg[y] = L->nonneg[x];
    int32_t ins[4] = {in, bt, et, stt};
    return emit(L, e->code, e->options, ins, 4, &out, 1, NULL);
}

static int lo_split(tl *L, const tio_tfl_lowmap *e) {
    int64_t x = in_v(L->n, 0), xd[LMAX], sizes[LMAX * 8];
    int r, rc;
    size_t no = L->n->output_count, cnt;
    if ((rc = need_shape(L, x, xd, &r))) return rc;
    int64_t ax = attr_i(L->n, "axis", 0);
    if (ax < 0) ax += r;
    if (ax < 0 || ax >= r || no < 1 || no > LMAX * 8)
        return nfail(L, TIO_E_UNSUPPORTED, "axis or output count out of range");
    if (L->n->input_count > 1) return nfail(L, TIO_E_UNSUPPORTED, "a split that is not constant");
    if (!attr_ints(L->n, "split", sizes, LMAX * 8, &cnt)) {
        if (xd[ax] % (int64_t)no) return nfail(L, TIO_E_UNSUPPORTED, "an uneven split");
        for (size_t k = 0; k < no; k++) sizes[k] = xd[ax] / (int64_t)no;
        cnt = no;
    }
    if (cnt != no) return nfail(L, TIO_E_ARGUMENT, "%zu sizes for %zu outputs", cnt, no);
    int lay = r == 4 ? pref_lay(L, x) : 0;
    int64_t axv = lay ? Q4[ax] : ax;
    int32_t in, st, at, *outs = al(L, no * sizeof *outs);
    const char *n1 = sub_name(L, "size_splits"), *n2 = sub_name(L, "axis");
    if (!outs || !n1 || !n2) return nomem(L);
    if ((rc = get(L, x, lay, &in)) || (rc = const_i32(L, n1, sizes, no, false, &st)) ||
        (rc = const_i32(L, n2, &axv, 1, true, &at)))
        return rc;
    for (size_t k = 0; k < no; k++) {
        if (L->n->outputs[k] < 0) return nfail(L, TIO_E_UNSUPPORTED, "an absent output");
        if ((rc = new_form(L, L->n->outputs[k], lay, &outs[k]))) return rc;
        L->nonneg[L->n->outputs[k]] = L->nonneg[x];
    }
    int32_t ins[3] = {in, st, at};
    tfl_wop *op;
    if ((rc = emit(L, e->code, e->options, ins, 3, outs, no, &op))) return rc;
    return tio__tfl_w_opt_i(L->m, op, false, "num_splits", (int64_t)no, L->err);
}

/* A float16 constant's Cast to float32: float16 weights, DEQUANTIZEd where
 * an operator reads them (get), or converted where one takes their values
 * (Conv, fully connected, BatchNormalization). */
static bool cast_ok(const tl *L, const tio_gnode *n) {
    const tio_tensor *t = vconst(L, in_v(n, 0));
    return n->input_count == 1 && n->output_count == 1 && n->outputs[0] >= 0 && t &&
           t->dtype == TIO_FLOAT16 && attr_i(n, "to", 0) == 1;
}

static int lo_cast(tl *L, const tio_tfl_lowmap *e) {
    (void)e;
    L->deq[L->n->outputs[0]] = in_v(L->n, 0);
    return TIO_OK;
}

typedef int (*lo_fn)(tl *L, const tio_tfl_lowmap *e);

static lo_fn lo_of(tio_tfl_lkind k) {
    switch (k) {
    case TFL_L_UNARY: return lo_unary;
    case TFL_L_BINARY: return lo_binary;
    case TFL_L_CLIP: return lo_clip;
    case TFL_L_LEAKY: return lo_leaky;
    case TFL_L_HSIGMOID: return lo_hsigmoid;
    case TFL_L_CONV: return lo_conv;
    case TFL_L_POOL: return lo_pool;
    case TFL_L_GPOOL: return lo_gpool;
    case TFL_L_REDUCE: return lo_reduce;
    case TFL_L_FC: return lo_fc;
    case TFL_L_CONCAT: return lo_concat;
    case TFL_L_RESHAPE: return lo_reshape;
    case TFL_L_TRANSPOSE: return lo_transpose;
    case TFL_L_SOFTMAX: return lo_softmax;
    case TFL_L_PAD: return lo_pad;
    case TFL_L_BN: return lo_bn;
    case TFL_L_SLICE: return lo_slice;
    case TFL_L_SPLIT: return lo_split;
    case TFL_L_CAST: return lo_cast;
    }
    return NULL;
}

/* ------------------------------------------------------------- driver */

/* Whether node n has a TFLite form (a Cast: of float16 weights only). */
static bool lowers(const tl *L, const tio_gnode *n) {
    const tio_tfl_lowmap *e = n->domain && n->domain[0] ? NULL : tio__tfl_lowmap(n->op);
    return e && (e->kind != TFL_L_CAST || cast_ok(L, n));
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
        /* op types once each */
        bool seen = false;
        for (size_t q = 0; q < j && !seen; q++) {
            const tio_gnode *o = &g->nodes[q];
            seen = strcmp(o->op, n->op) == 0 && !lowers(L, o);
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
    int32_t *ins = al(L, (g->input_count + 1) * sizeof *ins);
    int32_t *outs = al(L, (g->output_count + 1) * sizeof *outs);
    if (!ins || !outs) return nomem(L);
    size_t ni = 0;
    for (size_t k = 0; k < g->input_count; k++) {
        int64_t v = g->inputs[k];
        if (v < 0 || vconst(L, v)) continue;
        ins[ni++] = L->t[v][vrank(L, v) == 4 && !L->nchw_io ? 1 : 0];
    }
    for (size_t k = 0; k < g->output_count; k++) {
        int64_t v = g->outputs[k];
        int lay = vrank(L, v) == 4 && !L->nchw_io ? 1 : 0;
        int rc = get(L, v, lay, &outs[k]);
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
    if (rc) return rc;
    tfl_wsubgraph *sg;
    if ((rc = tio__tfl_w_subgraph(L->m, &sg, L->err))) return rc;
    sg->name = "main";
    /* graph inputs: 4-D ones NHWC unless layout=nchw */
    for (size_t k = 0; k < g->input_count; k++) {
        int64_t v = g->inputs[k];
        int32_t idx;
        if (v < 0 || vconst(L, v)) continue;
        int lay = vrank(L, v) == 4 && !L->nchw_io ? 1 : 0;
        if ((rc = new_form(L, v, lay, &idx))) {
            int64_t d[LMAX];
            int r;
            const tio_gvalue *gv = &g->values[v];
            bool fixed = gv->rank >= 0 && gv->rank <= LMAX && (gv->dims || !gv->rank);
            for (int64_t q = 0; fixed && q < gv->rank; q++)
                fixed = !gv->dims[q].name && gv->dims[q].value >= 0;
            if (fixed && !vshape(L, v, d, &r))
                return tio__err(L->err, TIO_E_LIMIT, TFL, -1,
                                "graph input '%s': a dim past int32 or more than 2^40 elements",
                                gv->name ? gv->name : "");
            if (!fixed)
                return tio__err(L->err, TIO_E_UNSUPPORTED, TFL, -1,
                                "graph input '%s' has no static shape (dims named or unknown): "
                                "the TFLite lowering needs fixed dims",
                                gv->name ? gv->name : "");
            return rc;
        }
    }
    for (size_t j = 0; j < g->node_count; j++) {
        L->n = &g->nodes[j];
        if (L->n->output_count < 1 || L->n->outputs[0] < 0)
            return nfail(L, TIO_E_UNSUPPORTED, "a node without an output");
        const tio_tfl_lowmap *e = tio__tfl_lowmap(L->n->op);
        if ((rc = lo_of(e->kind)(L, e))) return rc;
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
    tio_gprep_opts o = {.fmt = TFL,
                        .fuse_matmul_add = fuse,
                        .fold_bn = fuse,
                        .fuse_hardswish = fuse,
                        .act_attr = fuse ? ACT_ATTR : NULL,
                        .act_ops = act_ops,
                        .act_relu = TFL_ActivationFunctionType_RELU,
                        .act_relu6 = TFL_ActivationFunctionType_RELU6};
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
    if (!L.t || !L.nonneg || !L.flat_ok || !L.nhwc_of || !L.deq) rc = nomem(&L);
    else {
        for (size_t i = 0; i < nv; i++)
            L.t[i][0] = L.t[i][1] = -1, L.nhwc_of[i] = -1, L.deq[i] = -1;
        flat_readers(&L);
        rc = lower(&L);
    }
    free(L.t);
    free(L.nonneg);
    free(L.flat_ok);
    free(L.nhwc_of);
    free(L.deq);
    tio__gprep_free(&L.pr);
    return rc;
}
