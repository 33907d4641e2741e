/*
 * ONNX -> TensorFlow Lite lowering of QDQ models (QuantizeLinear /
 * DequantizeLinear around the operators): the pairs are folded into the
 * tensors' quantization parameters, as TensorFlow's converter writes an int8
 * model (docs/formats/tflite.md, "Quantized (QDQ) models").
 *
 *   - DequantizeLinear of a constant (weights, bias): the constant's integer
 *     bytes with its scales and zero points (per axis: quantized_dimension,
 *     permuted with the weights: 0 for CONV_2D's OHWI and FULLY_CONNECTED,
 *     3 for DEPTHWISE_CONV_2D's 1HWO).
 *   - QuantizeLinear of an operator's result read by nothing else: that
 *     operator writes the quantized tensor; of anything else (a float graph
 *     input, a value also read in float): a QUANTIZE.
 *   - DequantizeLinear of a quantized value: that value's tensor where only
 *     quantized operators read it; a DEQUANTIZE where a float operator or the
 *     graph's outputs do.
 * uint8 activations in a model with int8 weights are written as int8 with
 * the zero point less 128 (the same real values: TFLite's int8 kernels take
 * int8 activations with int8 weights). What TFLite cannot express (a
 * quantized operator TFLite has no int8 form for, weights with a zero point
 * other than 0, a bias whose scale is not input scale x weight scale, a
 * float input into a quantized operator, ...) is refused in one error naming
 * every node and why.
 */
#include "tflite/lower.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_q(const tio_gnode *n) { return tio__gp_op_is(n, "QuantizeLinear"); }
static bool is_dq(const tio_gnode *n) { return tio__gp_op_is(n, "DequantizeLinear"); }

static int32_t ttype(tio_dtype dt) {
    return dt == TIO_INT8    ? TFL_TensorType_INT8
           : dt == TIO_UINT8 ? TFL_TensorType_UINT8
           : dt == TIO_INT32 ? TFL_TensorType_INT32
                             : -1;
}

/* The refusals found so far (one error lists them all). */
typedef struct qfail {
    char msg[900];
    size_t len, count;
} qfail;

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void qbad(qfail *f, const tio_gnode *n, const char *fmt, ...) {
    char m[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    if (f->count < 8 && f->len < sizeof f->msg - 1)
        f->len += (size_t)snprintf(f->msg + f->len, sizeof f->msg - f->len,
                                   "%snode '%.60s' (%s): %s", f->count ? "; " : "",
                                   n->name ? n->name : "", n->op, m);
    if (f->len >= sizeof f->msg) f->len = sizeof f->msg - 1;
    f->count++;
}

/* The parameters of Q/DQ node n (scale input 1, zero point input 2, axis);
 * dt: the quantized type when the zero point is absent. NULL: refused (f). */
static tfl_wquant *params(tl *L, const tio_gnode *n, tio_dtype dt, int rank, int32_t *type,
                          qfail *f) {
    const tio_tensor *s = tio__tl_vconst(L, tio__tl_in_v(n, 1));
    int64_t zv = tio__tl_in_v(n, 2);
    const tio_tensor *z = zv >= 0 ? tio__tl_vconst(L, zv) : NULL;
    if (!s || s->dtype != TIO_FLOAT32 || s->rank > 1 || s->numel < 1 ||
        s->nbytes < 4 * s->numel) {
        qbad(f, n, "the scale is not a float32 constant scalar or vector");
        return NULL;
    }
    if (zv >= 0 && (!z || z->rank != s->rank || z->numel != s->numel ||
                    ttype(z->dtype) < 0 || z->nbytes < z->numel * tio_dtype_size(z->dtype))) {
        qbad(f, n, "the zero point is not an int8, uint8 or int32 constant shaped as the scale");
        return NULL;
    }
    if (z) dt = z->dtype;
    *type = ttype(dt);
    if (*type < 0) {
        qbad(f, n, "quantized type %s (int8, uint8 and int32 lower)", tio_dtype_name(dt));
        return NULL;
    }
    size_t ns = (size_t)s->numel;
    int64_t ax = tio__tl_attr_i(n, "axis", 1);
    if (ax < 0) ax += rank;
    if (ns > 1 && (ax < 0 || ax >= rank)) {
        qbad(f, n, "axis %lld of a rank-%d value", (long long)tio__tl_attr_i(n, "axis", 1), rank);
        return NULL;
    }
    tfl_wquant *q = tio__tl_al(L, sizeof *q);
    float *sc = tio__tl_al(L, ns * sizeof *sc);
    int64_t *zp = tio__tl_al(L, ns * sizeof *zp);
    if (!q || !sc || !zp) return NULL;
    for (size_t k = 0; k < ns; k++) {
        sc[k] = tio__tl_wat(s, k);
        if (!(sc[k] > 0) || !isfinite(sc[k])) {
            qbad(f, n, "scale %g (positive and finite lowers)", (double)sc[k]);
            return NULL;
        }
        if (!z) zp[k] = 0;
        else if (z->dtype == TIO_INT8) zp[k] = (int8_t)z->data[k];
        else if (z->dtype == TIO_UINT8) zp[k] = z->data[k];
        else zp[k] = (int32_t)tio__ld32(z->data + 4 * k);
    }
    q->scale = sc;
    q->nscale = ns;
    q->zero_point = zp;
    q->nzero_point = ns;
    q->quantized_dimension = ns > 1 ? (int32_t)ax : 0;
    return q;
}

static bool same_q(const tfl_wquant *a, const tfl_wquant *b) {
    if (a->nscale != b->nscale) return false;
    for (size_t k = 0; k < a->nscale; k++)
        if (a->scale[k] != b->scale[k] || a->zero_point[k] != b->zero_point[k]) return false;
    return a->nscale == 1 || a->quantized_dimension == b->quantized_dimension;
}

/* uint8 activation parameters as int8 (zero point less 128) */
static tfl_wquant *to_s8(tl *L, const tfl_wquant *q) {
    tfl_wquant *c = tio__tl_al(L, sizeof *c);
    int64_t *zp = tio__tl_al(L, q->nzero_point * sizeof *zp + 1);
    if (!c || !zp) return NULL;
    *c = *q;
    for (size_t k = 0; k < q->nzero_point; k++) zp[k] = q->zero_point[k] - 128;
    c->zero_point = zp;
    return c;
}

/* Operators with an int8/uint8 TFLite form, and whether TFLite's kernel
 * keeps the input's quantization on its output. */
static bool q_op(const tio_gnode *n, bool *same) {
    static const char *const keep[] = {"MaxPool", "AveragePool", "Reshape", "Flatten",
                                       "Squeeze", "Unsqueeze", "Transpose", "Pad", "Slice",
                                       "Split"};
    static const char *const any[] = {"Conv",    "Gemm",   "MatMul",  "Add",
                                      "Mul",     "Relu",   "Clip",    "Concat",
                                      "Softmax", "Sigmoid", "GlobalAveragePool", "ReduceMean"};
    for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++)
        if (tio__gp_op_is(n, keep[k])) return (*same = true);
    *same = false;
    for (size_t k = 0; k < sizeof any / sizeof any[0]; k++)
        if (tio__gp_op_is(n, any[k])) return true;
    return false;
}

static bool is_weighted(const tio_gnode *n) {
    return tio__gp_op_is(n, "Conv") || tio__gp_op_is(n, "Gemm") || tio__gp_op_is(n, "MatMul");
}

static bool graph_out(const tl *L, int64_t v) {
    for (size_t k = 0; k < L->g->output_count; k++)
        if (L->g->outputs[k] == v) return true;
    return false;
}

static bool graph_in(const tl *L, int64_t v) {
    for (size_t k = 0; k < L->g->input_count; k++)
        if (L->g->inputs[k] == v) return true;
    return false;
}

/* Checks weights, bias and types of a quantized Conv/Gemm/MatMul. */
static void check_weighted(tl *L, const tio_gnode *n, qfail *f) {
    int64_t x = tio__tl_in_v(n, 0), w = tio__tl_in_v(n, 1),
            b = tio__gp_op_is(n, "MatMul") ? -1 : tio__tl_in_v(n, 2);
    if (x < 0 || !L->q[x].q) {
        qbad(f, n, "the input is not quantized");
        return;
    }
    const tl_q *qx = &L->q[x], *qw = w >= 0 ? &L->q[w] : NULL;
    if (!qw || !qw->ct) {
        qbad(f, n, "the weights are not a DequantizeLinear of a constant");
        return;
    }
    if (qw->type != (qx->type == TFL_TensorType_UINT8 ? TFL_TensorType_UINT8
                                                      : TFL_TensorType_INT8)) {
        qbad(f, n, "%s weights with %s activations (TFLite: int8 with int8, uint8 with uint8)",
             qw->type == TFL_TensorType_INT8 ? "int8" : "non-8-bit",
             qx->type == TFL_TensorType_INT8 ? "int8" : "uint8");
        return;
    }
    const tfl_wquant *wq = qw->q;
    /* the weights' axis of the output channels: [K, N]'s 1 (MatMul, a Gemm
     * without transB), [N, K]'s (Gemm transB=1) and Conv's 0 */
    size_t oax = tio__gp_op_is(n, "MatMul") ||
                      (tio__gp_op_is(n, "Gemm") && !tio__tl_attr_i(n, "transB", 0))
                  ? 1
                  : 0;
    if (wq->nscale > 1) {
        int64_t want = (int64_t)oax;
        if (qw->type != TFL_TensorType_INT8 || wq->quantized_dimension != want) {
            qbad(f, n, "weights quantized per axis %d (int8 along the output channels lowers)",
                 (int)wq->quantized_dimension);
            return;
        }
    }
    for (size_t k = 0; qw->type == TFL_TensorType_INT8 && k < wq->nzero_point; k++)
        if (wq->zero_point[k] != 0) {
            qbad(f, n, "int8 weight zero point %lld (TFLite's int8 kernels take 0: symmetric "
                       "weights)",
                 (long long)wq->zero_point[k]);
            return;
        }
    if (b < 0) return;
    const tl_q *qb = &L->q[b];
    if (!qb->ct || qb->type != TFL_TensorType_INT32) {
        qbad(f, n, "the bias is not a DequantizeLinear of an int32 constant");
        return;
    }
    const tfl_wquant *bq = qb->q;
    const tio_tensor *bt = qb->ct, *wt = qw->ct;
    size_t nb = bt ? (size_t)bt->numel : 0;
    if (!bt || bt->rank != 1 || wt->rank <= oax || (int64_t)nb != wt->shape[oax]) {
        qbad(f, n, "a bias that is not a vector of the %lld output channels",
             wt->rank > oax ? (long long)wt->shape[oax] : 0LL);
        return;
    }
    if (bq->nscale != 1 && bq->nscale != nb) {
        qbad(f, n, "%zu bias scales for %zu values", bq->nscale, nb);
        return;
    }
    if (wq->nscale != 1 && wq->nscale != nb) {
        qbad(f, n, "%zu weight scales for %zu output channels", wq->nscale, nb);
        return;
    }
    for (size_t k = 0; k < nb; k++) {
        double want = (double)qx->q->scale[0] * wq->scale[wq->nscale > 1 ? k : 0];
        double got = bq->scale[bq->nscale > 1 ? k : 0];
        if (bq->zero_point[bq->nscale > 1 ? k : 0] != 0 || fabs(got - want) > 1e-5 * want) {
            qbad(f, n, "bias %zu: scale %.9g, zero point %lld (TFLite: input scale x weight "
                       "scale = %.9g, zero point 0)",
                 k, got, (long long)bq->zero_point[bq->nscale > 1 ? k : 0], want);
            return;
        }
    }
}

/* The quantized operators: what they read and write. */
static void check_op(tl *L, const tio_gnode *n, qfail *f) {
    int64_t y = n->outputs[0];
    if (L->q[y].ct) return; /* a transposed quantized constant */
    bool qin = false, qout = y >= 0 && L->q[y].q;
    for (size_t k = 0; k < n->input_count; k++) {
        int64_t v = n->inputs[k];
        if (v >= 0 && L->q[v].q && (!L->q[v].ct || !is_weighted(n))) qin = true;
    }
    if (!qin && !qout) {
        for (size_t k = 0; k < n->input_count; k++) {
            int64_t v = n->inputs[k];
            if (v >= 0 && L->q[v].ct)
                qbad(f, n, "reads the integer constant of '%s' in float (weight-only "
                           "quantization does not lower)",
                     L->g->values[v].name ? L->g->values[v].name : "");
        }
        return;
    }
    bool same;
    if (!q_op(n, &same)) {
        qbad(f, n, "no int8/uint8 TFLite form in tensio (docs/formats/tflite.md lists them)");
        return;
    }
    if (!qout) {
        qbad(f, n, "quantized inputs but a float output (no QuantizeLinear after it)");
        return;
    }
    for (size_t o = 1; o < n->output_count; o++)
        if (n->outputs[o] >= 0 && !L->q[n->outputs[o]].q) {
            qbad(f, n, "output %zu is not quantized", o);
            return;
        }
    for (size_t k = 0; k < n->input_count; k++) {
        int64_t v = n->inputs[k];
        if (v < 0) continue;
        const tio_tensor *c = tio__tl_vconst(L, v);
        if (c && (c->dtype == TIO_INT64 || c->dtype == TIO_INT32)) continue; /* shapes, axes */
        if (L->q[v].deq) {
            qbad(f, n, "input '%s' is also read in float (or is a graph output)",
                 L->g->values[v].name ? L->g->values[v].name : "");
            return;
        }
        if (!L->q[v].q) {
            qbad(f, n, "float input '%s' into a quantized operator",
                 L->g->values[v].name ? L->g->values[v].name : "");
            return;
        }
        if (!L->q[v].ct && L->q[v].type != L->q[y].type) {
            qbad(f, n, "input '%s' and output of different quantized types",
                 L->g->values[v].name ? L->g->values[v].name : "");
            return;
        }
        if (L->q[v].ct && !is_weighted(n) && L->q[v].q->nscale > 1) {
            qbad(f, n, "a constant quantized per axis");
            return;
        }
    }
    int64_t x0 = tio__tl_in_v(n, 0);
    if (x0 < 0 || !L->q[x0].q) {
        qbad(f, n, "the first input is not quantized");
        return;
    }
    if (same) {
        int64_t x = x0;
        for (size_t o = 0; o < n->output_count; o++)
            if (n->outputs[o] >= 0 && !same_q(L->q[x].q, L->q[n->outputs[o]].q)) {
                qbad(f, n, "the output's scale %.9g, zero point %lld differ from the input's "
                           "%.9g, %lld (TFLite's kernel keeps them)",
                     (double)L->q[n->outputs[o]].q->scale[0],
                     (long long)L->q[n->outputs[o]].q->zero_point[0],
                     (double)L->q[x].q->scale[0], (long long)L->q[x].q->zero_point[0]);
                return;
            }
    }
    if (tio__gp_op_is(n, "Clip")) {
        double lo = tio__tl_attr_f(n, "min", -INFINITY), hi = tio__tl_attr_f(n, "max", INFINITY);
        if (n->input_count != 1 || !(lo == 0 || lo == -1 || lo <= -3.4e38) ||
            !(hi == 6 || hi == 1 || hi >= 3.4e38) || (lo == -1) != (hi == 1))
            qbad(f, n, "bounds other than ReLU, ReLU6 and [-1, 1] on quantized values");
        else if (lo <= -3.4e38 && hi >= 3.4e38 &&
                 !same_q(L->q[x0].q, L->q[y].q))
            qbad(f, n, "a Clip without bounds that requantizes");
    }
    if (tio__gp_op_is(n, "Softmax") || tio__gp_op_is(n, "Sigmoid")) {
        /* TFLite's kernels write [0, 1) on a fixed grid */
        const tfl_wquant *q = L->q[y].q;
        int64_t zp = L->q[y].type == TFL_TensorType_INT8 ? -128 : 0;
        if (q->scale[0] != 1.0f / 256 || q->zero_point[0] != zp)
            qbad(f, n, "output scale %.9g, zero point %lld (TFLite's int8/uint8 kernel writes "
                       "scale 1/256, zero point %lld)",
                 (double)q->scale[0], (long long)q->zero_point[0], (long long)zp);
    }
    if (tio__gp_op_is(n, "Pad") && tio__tl_attr_f(n, "value", 0) != 0)
        qbad(f, n, "a constant other than 0 on quantized values");
    if (is_weighted(n)) check_weighted(L, n, f);
}

/* Layout operators on a quantized value carry its quantization (exact:
 * they move the integers): a Transpose of a quantized constant is that
 * constant transposed (made here, for the weights TFLite -> ONNX writes as
 * DequantizeLinear then Transpose); a Transpose, Reshape, Flatten, Squeeze or
 * Unsqueeze of a quantized runtime value is quantized as it is. */
static int carry(tl *L, const tio_gnode *n, qfail *f) {
    int64_t x = tio__tl_in_v(n, 0), y = n->outputs[0];
    if (x < 0 || !L->q[x].q || L->q[y].q) return TIO_OK;
    bool tr = tio__gp_op_is(n, "Transpose");
    if (!tr && !tio__gp_op_is(n, "Reshape") && !tio__gp_op_is(n, "Flatten") &&
        !tio__gp_op_is(n, "Squeeze") && !tio__gp_op_is(n, "Unsqueeze"))
        return TIO_OK;
    const tl_q *qx = &L->q[x];
    if (!qx->ct) {
        if (qx->q->nscale == 1) L->q[y] = (tl_q){.q = qx->q, .type = qx->type, .cv = -1,
                                                  .src = -1};
        return TIO_OK;
    }
    const tio_tensor *c = qx->ct;
    int64_t perm[4];
    size_t cnt, r = c->rank, es = tio_dtype_size(c->dtype);
    if (!tr || r < 1 || r > 4 || es < 1 || c->numel > SIZE_MAX / 8 ||
        c->nbytes < c->numel * es)
        return TIO_OK;
    if (!tio__tl_attr_ints(n, "perm", perm, 4, &cnt)) {
        for (size_t k = 0; k < r; k++) perm[k] = (int64_t)(r - 1 - k);
        cnt = r;
    }
    uint8_t seen[4] = {0};
    for (size_t k = 0; k < cnt; k++)
        if (cnt != r || perm[k] < 0 || perm[k] >= (int64_t)r || seen[perm[k]]++) {
            qbad(f, n, "a perm that is not one of the constant's %zu axes", r);
            return TIO_OK;
        }
    tio_tensor *t = tio__tl_al(L, sizeof *t);
    uint8_t *b = tio__tl_al(L, c->nbytes ? c->nbytes : 1);
    tfl_wquant *q = tio__tl_al(L, sizeof *q);
    if (!t || !b || !q) return tio__tl_nomem(L);
    /* source strides, output dims (padded to 4 with leading ones) */
    int64_t sd[4] = {1, 1, 1, 1}, st[4] = {0, 0, 0, 0}, od[4] = {1, 1, 1, 1}, os[4] = {0, 0, 0, 0};
    int64_t acc = 1;
    for (size_t k = r; k-- > 0;) {
        st[k] = acc;
        acc *= c->shape[k];
    }
    for (size_t k = 0; k < r; k++) {
        od[4 - r + k] = c->shape[perm[k]];
        os[4 - r + k] = st[perm[k]];
        sd[k] = c->shape[perm[k]];
    }
    size_t at = 0;
    for (int64_t i0 = 0; i0 < od[0]; i0++)
        for (int64_t i1 = 0; i1 < od[1]; i1++)
            for (int64_t i2 = 0; i2 < od[2]; i2++)
                for (int64_t i3 = 0; i3 < od[3]; i3++, at++) {
                    size_t src = (size_t)(i0 * os[0] + i1 * os[1] + i2 * os[2] + i3 * os[3]);
                    memcpy(b + at * es, c->data + src * es, es);
                }
    t->name = c->name;
    t->dtype = c->dtype;
    t->layout = TIO_LAYOUT_DENSE;
    t->rank = r;
    t->shape = t->shape0;
    for (size_t k = 0; k < r; k++) t->shape0[k] = sd[k];
    t->numel = c->numel;
    t->data = b;
    t->nbytes = c->numel * es;
    *q = *qx->q;
    for (size_t k = 0; k < r && q->nscale > 1; k++)
        if (perm[k] == q->quantized_dimension) {
            q->quantized_dimension = (int32_t)k;
            break;
        }
    L->q[y] = (tl_q){.q = q, .type = qx->type, .cv = -1, .src = -1, .ct = t};
    return TIO_OK;
}

int tio__tl_qscan(tl *L) {
    const tio_graph *g = L->g;
    size_t nv = g->value_count;
    bool any = false;
    for (size_t j = 0; j < g->node_count && !any; j++)
        any = is_q(&g->nodes[j]) || is_dq(&g->nodes[j]);
    if (!any) return TIO_OK;
    int64_t *prod = malloc((nv ? nv : 1) * sizeof *prod);
    uint32_t *nread = calloc(nv ? nv : 1, sizeof *nread);
    uint8_t *fl_read = calloc(nv ? nv : 1, 1);
    qfail *f = calloc(1, sizeof *f);
    int rc = TIO_OK;
    if (!prod || !nread || !fl_read || !f) {
        rc = tio__tl_nomem(L);
        goto done;
    }
    for (size_t i = 0; i < nv; i++) prod[i] = -1;
    for (size_t j = 0; j < g->node_count; j++) {
        const tio_gnode *n = &g->nodes[j];
        for (size_t k = 0; k < n->output_count; k++)
            if (n->outputs[k] >= 0) prod[n->outputs[k]] = (int64_t)j;
        for (size_t k = 0; k < n->input_count; k++)
            if (n->inputs[k] >= 0) nread[n->inputs[k]]++;
    }
    /* int8 weights: uint8 activations become int8 */
    for (size_t j = 0; j < g->node_count; j++) {
        const tio_gnode *n = &g->nodes[j];
        const tio_tensor *c = is_dq(n) ? tio__tl_vconst(L, tio__tl_in_v(n, 0)) : NULL;
        if (c && c->dtype == TIO_INT8) L->s8 = true;
    }
    for (size_t j = 0; j < g->node_count; j++) {
        const tio_gnode *n = &g->nodes[j];
        if (n->output_count < 1 || n->outputs[0] < 0) continue;
        if (!is_q(n) && !is_dq(n)) {
            if ((rc = carry(L, n, f))) goto done;
            continue;
        }
        if (n->input_count < 2) continue;
        int64_t x = n->inputs[0], y = n->outputs[0];
        if (x < 0) continue;
        const tio_tensor *c = tio__tl_vconst(L, x);
        int64_t d[LMAX];
        int r = 0;
        if (!tio__tl_vshape(L, x, d, &r)) r = -1;
        int32_t type;
        /* the quantized type where the zero point is absent: a QuantizeLinear's
         * uint8; a DequantizeLinear's, its input's (a QuantizeLinear's output:
         * that node's) */
        tio_dtype dt = is_q(n) ? TIO_UINT8 : c ? c->dtype : g->values[x].dtype;
        if (is_dq(n) && !c && prod[x] >= 0 && is_q(&g->nodes[prod[x]])) {
            const tio_tensor *pz = tio__tl_vconst(L, tio__tl_in_v(&g->nodes[prod[x]], 2));
            dt = pz ? pz->dtype : TIO_UINT8;
        }
        tfl_wquant *q = params(L, n, dt, r, &type, f);
        if (!q) {
            if (f->count) continue;
            rc = tio__tl_nomem(L);
            goto done;
        }
        if (is_dq(n) && c) {
            if (ttype(c->dtype) != type) {
                qbad(f, n, "a %s constant with a %s zero point", tio_dtype_name(c->dtype),
                     type == TFL_TensorType_INT8 ? "int8" : "uint8 or int32");
                continue;
            }
            L->q[y] = (tl_q){.q = q, .type = type, .cv = x, .src = -1, .ct = c};
            continue;
        }
        if (q->nscale > 1) {
            qbad(f, n, "an activation quantized per axis (TFLite quantizes them per tensor)");
            continue;
        }
        if (type == TFL_TensorType_INT32) {
            qbad(f, n, "int32 activations (int8 and uint8 lower)");
            continue;
        }
        if (L->s8 && type == TFL_TensorType_UINT8) {
            if ((is_dq(n) && graph_in(L, x)) || (is_q(n) && graph_out(L, y))) {
                qbad(f, n, "a uint8 graph %s in a model with int8 weights (TFLite's int8 "
                           "kernels take int8 activations)",
                     is_q(n) ? "output" : "input");
                continue;
            }
            if (!(q = to_s8(L, q))) {
                rc = tio__tl_nomem(L);
                goto done;
            }
            type = TFL_TensorType_INT8;
        }
        if (is_dq(n)) {
            if (!L->q[x].q && graph_in(L, x) && ttype(g->values[x].dtype) == type) {
                L->q[x] = (tl_q){.q = q, .type = type, .cv = -1, .src = -1};
            } else if (!L->q[x].q) {
                qbad(f, n, "dequantizes '%s', which is no QuantizeLinear's output or quantized "
                           "graph input",
                     g->values[x].name ? g->values[x].name : "");
                continue;
            } else if (!same_q(L->q[x].q, q) || L->q[x].type != type) {
                qbad(f, n, "dequantizes '%s' with a scale or zero point other than its own",
                     g->values[x].name ? g->values[x].name : "");
                continue;
            }
            L->q[y] = (tl_q){.q = L->q[x].q, .type = type, .cv = -1, .src = x};
            continue;
        }
        /* QuantizeLinear: its input's producer writes the quantized tensor
         * when nothing else reads that input */
        L->q[y] = (tl_q){.q = q, .type = type, .cv = -1, .src = -1};
        int64_t p = prod[x];
        bool mine = false;
        if (L->q[x].q && !L->q[x].ct && same_q(L->q[x].q, q) && L->q[x].type == type) {
            L->q[y].src = x; /* quantized already (a layout operator carried it) */
            continue;
        }
        if (p >= 0 && nread[x] == 1 && !graph_out(L, x) && !L->q[x].q) {
            const tio_gnode *pn = &g->nodes[p];
            bool same;
            mine = !is_q(pn) && !is_dq(pn) && q_op(pn, &same);
            for (size_t k = 0; mine && k < pn->input_count; k++) {
                int64_t v = pn->inputs[k];
                const tio_tensor *ct = v >= 0 ? tio__tl_vconst(L, v) : NULL;
                mine = v < 0 || L->q[v].q ||
                       (ct && (ct->dtype == TIO_INT64 || ct->dtype == TIO_INT32));
            }
        }
        if (mine) {
            L->q[x] = L->q[y];
            L->q[y].src = x;
        }
    }
    /* DequantizeLinear outputs read in float (a float operator, the graph's
     * outputs) get a DEQUANTIZE */
    for (size_t j = 0; j < g->node_count; j++) {
        const tio_gnode *n = &g->nodes[j];
        if (is_q(n) || is_dq(n) || n->output_count < 1 || n->outputs[0] < 0) continue;
        bool qo = L->q[n->outputs[0]].q != NULL;
        for (size_t k = 0; k < n->input_count; k++) {
            int64_t v = n->inputs[k];
            if (v >= 0 && !qo && L->q[v].q && L->q[v].src >= 0 && prod[v] >= 0 &&
                is_dq(&g->nodes[prod[v]]))
                fl_read[v] = 1;
        }
    }
    for (size_t k = 0; k < g->output_count; k++)
        if (g->outputs[k] >= 0 && L->q[g->outputs[k]].q && prod[g->outputs[k]] >= 0 &&
            is_dq(&g->nodes[prod[g->outputs[k]]]))
            fl_read[g->outputs[k]] = 1;
    for (size_t v = 0; v < nv; v++)
        if (fl_read[v]) L->q[v].deq = true;
    for (size_t j = 0; j < g->node_count; j++) {
        const tio_gnode *n = &g->nodes[j];
        if (is_q(n) || is_dq(n) || n->output_count < 1 || n->outputs[0] < 0) continue;
        check_op(L, n, f);
    }
    if (f->count)
        rc = tio__err(L->err, TIO_E_UNSUPPORTED, TFL, -1,
                      "the QDQ model has %zu pattern%s TensorFlow Lite's quantized operators "
                      "cannot express: %s%s",
                      f->count, f->count == 1 ? "" : "s", f->msg, f->count > 8 ? "; ..." : "");
done:
    free(prod);
    free(nread);
    free(fl_read);
    free(f);
    return rc;
}

/* Sets tensor idx's type and quantization to value v's (when quantized). */
void tio__tl_qmark(tl *L, int64_t v, int32_t idx) {
    if (v < 0 || !L->q[v].q || L->q[v].deq) return;
    tfl_wtensor *t = &L->m->subgraphs[0].tensors[idx];
    t->type = L->q[v].type;
    t->q = L->q[v].q;
}

/* Tensor dst takes tensor src's type and quantization (temporaries). */
void tio__tl_like(tl *L, int32_t src, int32_t dst) {
    tfl_wtensor *ts = &L->m->subgraphs[0].tensors[src], *td = &L->m->subgraphs[0].tensors[dst];
    if (!ts->q) return;
    td->type = ts->type;
    td->q = ts->q;
}

/* Weights of a quantized operator: n bytes (already permuted) of the
 * constant that value wv dequantizes, quantized along dim qdim. */
int tio__tl_qweights(tl *L, int64_t wv, const char *name, const uint8_t *b, size_t n, int r,
                     const int64_t *d, int32_t qdim, int32_t *idx) {
    uint8_t *c = tio__tl_al(L, n ? n : 1);
    tfl_wquant *q = tio__tl_al(L, sizeof *q);
    if (!c || !q || !name) return tio__tl_nomem(L);
    if (n) memcpy(c, b, n);
    *q = *L->q[wv].q;
    if (q->nscale > 1) q->quantized_dimension = qdim;
    uint32_t buf;
    int rc = tio__tfl_w_buffer(L->m, -1, c, n, &buf, L->err);
    if (rc || (rc = tio__tl_add_tensor(L, name, L->q[wv].type, r, d, buf, idx))) return rc;
    L->m->subgraphs[0].tensors[*idx].q = q;
    return TIO_OK;
}

/* The int32 bias of a quantized operator reading x with weights wv: value
 * bv's constant (checked by the scan), or N zeros of scale input x weight. */
int tio__tl_qbias(tl *L, int64_t x, int64_t wv, int64_t bv, int64_t N, int32_t *idx) {
    if (bv >= 0) {
        return tio__tl_get(L, bv, 0, idx);
    }
    const tfl_wquant *wq = L->q[wv].q;
    size_t ns = wq->nscale;
    uint8_t *z = tio__tl_al(L, 4 * (size_t)N + 1);
    tfl_wquant *q = tio__tl_al(L, sizeof *q);
    float *sc = tio__tl_al(L, ns * sizeof *sc);
    int64_t *zp = tio__tl_al(L, ns * sizeof *zp);
    const char *nm = tio__tl_sub_name(L, "bias");
    if (!z || !q || !sc || !zp || !nm) return tio__tl_nomem(L);
    for (size_t k = 0; k < ns; k++) sc[k] = L->q[x].q->scale[0] * wq->scale[k];
    *q = (tfl_wquant){.scale = sc, .nscale = ns, .zero_point = zp, .nzero_point = ns};
    uint32_t buf;
    int rc = tio__tfl_w_buffer(L->m, -1, z, 4 * (size_t)N, &buf, L->err);
    if (rc || (rc = tio__tl_add_tensor(L, nm, TFL_TensorType_INT32, 1, &N, buf, idx))) return rc;
    L->m->subgraphs[0].tensors[*idx].q = q;
    return TIO_OK;
}

/* Whether value v is an operator's result (not a graph input). */
static bool prod_is_op(const tl *L, int64_t v) { return !graph_in(L, v); }

/* QuantizeLinear: the producer's tensor, or a QUANTIZE. */
int tio__tl_lo_quant(tl *L, const tio_tfl_lowmap *e) {
    int64_t x = tio__tl_in_v(L->n, 0), y = L->n->outputs[0];
    if (!L->q[y].q)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "a QuantizeLinear tensio cannot place");
    if (L->q[y].src >= 0) {
        /* the tensor is the quantized value: it takes that value's name */
        const char *xn = L->g->values[x].name, *yn = L->g->values[y].name;
        for (int lay = 0; lay < 2; lay++) {
            L->t[y][lay] = L->t[x][lay];
            tfl_wtensor *t = L->t[x][lay] >= 0 ? &L->m->subgraphs[0].tensors[L->t[x][lay]] : NULL;
            if (t && xn && yn && t->name && strcmp(t->name, xn) == 0 && prod_is_op(L, x))
                t->name = yn;
        }
        return TIO_OK;
    }
    return tio__tl_emit_like(L, e->code, 0, x, y);
}

/* DequantizeLinear: a constant's is read where used; else the quantized
 * value's tensor, or a DEQUANTIZE where read in float. */
int tio__tl_lo_dequant(tl *L, const tio_tfl_lowmap *e) {
    int64_t x = tio__tl_in_v(L->n, 0), y = L->n->outputs[0];
    const tl_q *q = &L->q[y];
    if (!q->q) return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "a DequantizeLinear tensio cannot place");
    if (q->ct) return TIO_OK;
    if (!q->deq) {
        L->t[y][0] = L->t[x][0];
        L->t[y][1] = L->t[x][1];
        return TIO_OK;
    }
    return tio__tl_emit_like(L, e->code, 0, x, y);
}
