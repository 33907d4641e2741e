/*
 * ONNX -> TensorFlow Lite lowering: one routine per kind of operator of the
 * table (src/tflite/lowmap.c), over the helpers of lower.c (lower.h). See
 * lower.c for the layout rules and docs/formats/tflite.md, "ONNX -> TFLite".
 */
#include "tflite/lower.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A Clip bound at least this large is none (the graph layer writes float's
 * largest, 3.402823466e38, for an absent one) */
#define CLIP_NONE 3.4e38

/* ---------------------------------------------------------- operators */

static int lo_unary(tl *L, const tio_tfl_lowmap *e) {
    int64_t x = tio__tl_in_v(L->n, 0), y = L->n->outputs[0];
    int rc = tio__tl_emit_like(L, e->code, e->options, x, y);
    if (!rc && (e->code == TFL_BuiltinOperator_RELU || e->code == TFL_BuiltinOperator_LOGISTIC))
        L->nonneg[y] = 1;
    return rc;
}

static int lo_binary(tl *L, const tio_tfl_lowmap *e) {
    if (L->n->input_count != 2) return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "needs two inputs");
    int64_t a = tio__tl_in_v(L->n, 0), b = tio__tl_in_v(L->n, 1), y = L->n->outputs[0];
    int ry = tio__tl_vrank(L, y), lay = 0;
    if (ry == 4) {
        bool ok = true, any = false;
        for (int k = 0; k < 2; k++) {
            int64_t v = k ? b : a;
            if (v < 0) { /* absent: refused by tio__tl_get below */
                ok = false;
                continue;
            }
            if (tio__tl_wconst(L, v)) {
                if (tio__tl_wconst(L, v)->rank > 4) ok = false;
                continue;
            }
            if (tio__tl_vrank(L, v) != 4) ok = false;
            if (L->t[v][1] >= 0) any = true;
        }
        lay = ok && any ? 1 : 0;
    }
    int32_t in[2], out;
    tfl_wop *op;
    int rc;
    if ((rc = tio__tl_get(L, a, lay, &in[0])) || (rc = tio__tl_get(L, b, lay, &in[1])) ||
        (rc = tio__tl_new_form(L, y, lay, &out)) ||
        (rc = tio__tl_emit(L, e->code, e->options, in, 2, &out, 1, &op)))
        return rc;
    if (e->code == TFL_BuiltinOperator_MAXIMUM || e->code == TFL_BuiltinOperator_MINIMUM ||
        e->code == TFL_BuiltinOperator_POW)
        return TIO_OK;
    return tio__tl_set_act(L, op, y);
}

/* y = op(x, c) for a scalar constant c, into tensor out */
static int scalar_op(tl *L, int32_t builtin, uint8_t opt, int32_t x, float c, const char *what,
                     int32_t out, tfl_wop **op) {
    int32_t ct;
    int rc = tio__tl_scalar_f32(L, what, c, &ct);
    if (rc) return rc;
    int32_t in[2] = {x, ct};
    return tio__tl_emit(L, builtin, opt, in, 2, &out, 1, op);
}

/* A tensor like form lay of value v, for an intermediate result. */
static int temp_like(tl *L, int64_t v, int lay, const char *what, int32_t *idx) {
    int64_t d[LMAX], e[LMAX];
    int r, rc;
    if ((rc = tio__tl_need_shape(L, v, d, &r))) return rc;
    const int *P = tio__tl_perm_of(r);
    for (int k = 0; k < r; k++) e[k] = lay && P ? d[P[k]] : d[k];
    const char *nm = tio__tl_sub_name(L, what);
    if (!nm) return tio__tl_nomem(L);
    return tio__tl_add_tensor(L, nm, TFL_TensorType_FLOAT32, r, e, 0, idx);
}

static int lo_clip(tl *L, const tio_tfl_lowmap *e) {
    (void)e;
    if (L->n->input_count != 1)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "bounds that are not constants");
    double lo = tio__tl_attr_f(L->n, "min", -INFINITY), hi = tio__tl_attr_f(L->n, "max", INFINITY);
    int64_t x = tio__tl_in_v(L->n, 0), y = L->n->outputs[0];
    int lay = tio__tl_pref_lay(L, x);
    int32_t in, out;
    int rc;
    if ((rc = tio__tl_get(L, x, lay, &in))) return rc;
    if (lo <= -CLIP_NONE && hi >= CLIP_NONE) {
        L->t[y][lay] = in; /* no bounds: the input itself */
        L->nonneg[y] = L->nonneg[x];
        return TIO_OK;
    }
    if ((rc = tio__tl_new_form(L, y, lay, &out))) return rc;
    if (lo >= 0) L->nonneg[y] = 1;
    int32_t code = -1;
    if (lo == 0 && hi == 6) code = TFL_BuiltinOperator_RELU6;
    else if (lo == 0 && hi >= CLIP_NONE) code = TFL_BuiltinOperator_RELU;
    else if (lo == -1 && hi == 1) code = TFL_BuiltinOperator_RELU_N1_TO_1;
    if (code >= 0) return tio__tl_emit(L, code, 0, &in, 1, &out, 1, NULL);
    int32_t mid = in;
    if (lo > -CLIP_NONE) {
        mid = out;
        if (hi < CLIP_NONE && (rc = temp_like(L, y, lay, "max", &mid))) return rc;
        if ((rc = scalar_op(L, TFL_BuiltinOperator_MAXIMUM,
                            TFL_BuiltinOptions_MaximumMinimumOptions, in, (float)lo, "min", mid,
                            NULL)))
            return rc;
    }
    if (hi < CLIP_NONE)
        return scalar_op(L, TFL_BuiltinOperator_MINIMUM, TFL_BuiltinOptions_MaximumMinimumOptions,
                         mid, (float)hi, "max", out, NULL);
    return TIO_OK;
}

static int lo_leaky(tl *L, const tio_tfl_lowmap *e) {
    int64_t x = tio__tl_in_v(L->n, 0), y = L->n->outputs[0];
    int lay = tio__tl_pref_lay(L, x);
    int32_t in, out;
    tfl_wop *op;
    int rc;
    if ((rc = tio__tl_get(L, x, lay, &in)) || (rc = tio__tl_new_form(L, y, lay, &out)) ||
        (rc = tio__tl_emit(L, e->code, e->options, &in, 1, &out, 1, &op)))
        return rc;
    return tio__tfl_w_opt_f(L->m, op, false, "alpha", tio__tl_attr_f(L->n, "alpha", 0.01), L->err);
}

/* HardSigmoid: clip(a x + b, 0, 1) = relu6(6a x + 6b) / 6: MUL (unless 6a is
 * 1), ADD with RELU6, MUL by 1/6 */
static int lo_hsigmoid(tl *L, const tio_tfl_lowmap *e) {
    (void)e;
    double a = tio__tl_attr_f(L->n, "alpha", 0.2), b = tio__tl_attr_f(L->n, "beta", 0.5);
    int64_t x = tio__tl_in_v(L->n, 0), y = L->n->outputs[0];
    int lay = tio__tl_pref_lay(L, x);
    int32_t in, out, t1 = -1, t2;
    tfl_wop *op;
    int rc;
    if ((rc = tio__tl_get(L, x, lay, &in)) || (rc = tio__tl_new_form(L, y, lay, &out))) return rc;
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
    if (tio__tl_attr_ints(L->n, "strides", v, 2, &cnt) && cnt == 2)
        sp->s[0] = v[0], sp->s[1] = v[1];
    if (tio__tl_attr_ints(L->n, "dilations", v, 2, &cnt) && cnt == 2)
        sp->dl[0] = v[0], sp->dl[1] = v[1];
    if (tio__tl_attr_ints(L->n, "pads", v, 4, &cnt) && cnt == 4)
        sp->pb[0] = v[0], sp->pb[1] = v[1], sp->pe[0] = v[2], sp->pe[1] = v[3];
    const tio_gattr *ap = tio__tl_attr(L->n, "auto_pad");
    sp->same_attr = false;
    if (ap && ap->type == TIO_ATTR_STRING && strcmp(ap->s, "NOTSET") != 0 &&
        strcmp(ap->s, "VALID") != 0) {
        if (strcmp(ap->s, "SAME_UPPER") != 0)
            return tio__tl_nfail(L, TIO_E_UNSUPPORTED,
                                 "auto_pad %s (SAME_UPPER, VALID, NOTSET lower)", ap->s);
        sp->same_attr = true;
    }
    for (int j = 0; j < 2; j++)
        if (sp->k[j] < 1 || sp->k[j] > INT32_MAX || sp->s[j] < 1 || sp->s[j] > INT32_MAX ||
            sp->dl[j] < 1 || sp->dl[j] > INT32_MAX || sp->pb[j] < 0 || sp->pe[j] < 0 ||
            sp->pb[j] > INT32_MAX || sp->pe[j] > INT32_MAX)
            return tio__tl_nfail(L, TIO_E_UNSUPPORTED,
                                 "kernel, strides, dilations or pads out of range");
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
    if ((rc = tio__tl_need_shape(L, x, d, &r))) return rc;
    int64_t pads[8] = {0, 0, sp->pb[0], sp->pe[0], sp->pb[1], sp->pe[1], 0, 0};
    int64_t e[4] = {d[0], d[2] + sp->pb[0] + sp->pe[0], d[3] + sp->pb[1] + sp->pe[1], d[1]};
    int32_t pt;
    const char *nm = tio__tl_sub_name(L, "pads"), *pn = tio__tl_sub_name(L, "padded");
    if (!nm || !pn) return tio__tl_nomem(L);
    if ((rc = tio__tl_const_i32(L, nm, pads, 8, false, &pt))) return rc;
    L->m->subgraphs[0].tensors[pt].rank = 2;
    int32_t *s2 = tio__tl_al(L, 2 * sizeof *s2);
    if (!s2) return tio__tl_nomem(L);
    s2[0] = 4;
    s2[1] = 2;
    L->m->subgraphs[0].tensors[pt].shape = s2;
    if ((rc = tio__tl_add_tensor(L, pn, TFL_TensorType_FLOAT32, 4, e, 0, padded))) return rc;
    tio__tl_like(L, in, *padded); /* quantized: PAD fills with the zero point */
    if (lowest && L->m->subgraphs[0].tensors[in].q)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED,
                             "quantized max pooling with padding that is not SAME or VALID");
    if (!lowest) {
        int32_t ins[2] = {in, pt};
        return tio__tl_emit(L, TFL_BuiltinOperator_PAD, TFL_BuiltinOptions_PadOptions, ins, 2,
                            padded, 1, NULL);
    }
    int32_t cv;
    if ((rc = tio__tl_scalar_f32(L, "pad_value", -FLT_MAX, &cv))) return rc;
    int32_t ins[3] = {in, pt, cv};
    return tio__tl_emit(L, TFL_BuiltinOperator_PADV2, TFL_BuiltinOptions_PadV2Options, ins, 3,
                        padded, 1, NULL);
}

/* A bias of n zeros (where the ONNX node has none, as TensorFlow writes one). */
static int zero_bias(tl *L, int64_t n, int32_t *idx) {
    float *z = calloc((size_t)n ? (size_t)n : 1, sizeof *z);
    const char *bn = tio__tl_sub_name(L, "bias");
    int rc = !z || !bn ? tio__tl_nomem(L) : tio__tl_const_f32(L, bn, z, (size_t)n, 1, &n, idx);
    free(z);
    return rc;
}

/* A CONV_2D's padding, strides and dilations (and, through the node, its
 * fused activation on out). */
static int conv_opts(tl *L, tfl_wop *op, int pk, const spat *sp, int64_t out) {
    int rc;
    if ((rc = tio__tfl_w_opt_i(L->m, op, false, "padding", pk, L->err)) ||
        (rc = tio__tfl_w_opt_i(L->m, op, false, "stride_h", sp->s[0], L->err)) ||
        (rc = tio__tfl_w_opt_i(L->m, op, false, "stride_w", sp->s[1], L->err)) ||
        (rc = tio__tfl_w_opt_i(L->m, op, false, "dilation_h_factor", sp->dl[0], L->err)) ||
        (rc = tio__tfl_w_opt_i(L->m, op, false, "dilation_w_factor", sp->dl[1], L->err)))
        return rc;
    return tio__tl_set_act(L, op, out);
}

/* A grouped Conv (float weights w [O, C/G, KH, KW], bias bt or none) of the
 * NHWC tensor in (padded) as TensorFlow's converters write one: the input
 * SPLIT along its channels, a CONV_2D per group (its slice of the weights,
 * OHWI, and of the bias), the outputs concatenated. */
static int grouped_conv(tl *L, const tio_tfl_lowmap *e, const tio_tensor *w,
                        const tio_tensor *bt, int32_t in, int pk, const spat *sp, int64_t G,
                        int64_t y) {
    int64_t O = w->shape[0], I = w->shape[1], KH = w->shape[2], KW = w->shape[3], OG = O / G,
            yd[LMAX], pd[4], three = 3;
    int ry, rc;
    if ((rc = tio__tl_need_shape(L, y, yd, &ry))) return rc;
    const tfl_wtensor *it = &L->m->subgraphs[0].tensors[in];
    for (int k = 0; k < 4; k++) pd[k] = it->shape[k];
    pd[3] /= G;
    int64_t od[4] = {yd[0], yd[2], yd[3], OG};
    size_t es = w->dtype == TIO_FLOAT16 ? 2 : 4, per = (size_t)(OG * I * KH * KW) * es;
    int32_t at, out, *parts = tio__tl_al(L, (size_t)G * sizeof *parts),
                     *outs = tio__tl_al(L, (size_t)G * sizeof *outs);
    float *bias = tio__tl_al(L, (size_t)OG * sizeof *bias);
    const char *an = tio__tl_sub_name(L, "split_axis");
    if (!parts || !outs || !bias || !an) return tio__tl_nomem(L);
    if ((rc = tio__tl_const_i32(L, an, &three, 1, true, &at))) return rc;
    for (int64_t g = 0; g < G; g++) {
        const char *pn = tio__tl_sub_name(L, "group_in");
        if (!pn) return tio__tl_nomem(L);
        if ((rc = tio__tl_add_tensor(L, pn, TFL_TensorType_FLOAT32, 4, pd, 0, &parts[g])))
            return rc;
    }
    int32_t sin[2] = {at, in};
    tfl_wop *op;
    if ((rc = tio__tl_emit(L, TFL_BuiltinOperator_SPLIT, TFL_BuiltinOptions_SplitOptions, sin, 2,
                           parts, (size_t)G, &op)) ||
        (rc = tio__tfl_w_opt_i(L->m, op, false, "num_splits", G, L->err)))
        return rc;
    for (int64_t g = 0; g < G; g++) {
        /* group g's weights: output channels [g * OG, (g + 1) * OG), OHWI */
        tio_tl_perm pm = {.src = w->data + (size_t)g * per, .es = es, .nd = 4};
        int64_t d4[4] = {OG, KH, KW, I}, s4[4] = {I * KH * KW, KW, 1, KH * KW};
        memcpy(pm.d, d4, sizeof d4);
        memcpy(pm.s, s4, sizeof s4);
        for (int64_t o = 0; o < OG; o++)
            bias[o] = bt ? tio__tl_wat(bt, (size_t)(g * OG + o)) : 0.0f;
        int32_t wt, bn;
        const char *wn = tio__tl_sub_name(L, "weights_ohwi"), *bnm = tio__tl_sub_name(L, "bias"),
                   *on = tio__tl_sub_name(L, "group_out");
        if (!wn || !bnm || !on) return tio__tl_nomem(L);
        if ((rc = tio__tl_pweights(L, wn, w, &pm, 4, d4, &wt)) ||
            (rc = tio__tl_const_f32(L, bnm, bias, (size_t)OG, 1, &OG, &bn)) ||
            (rc = tio__tl_add_tensor(L, on, TFL_TensorType_FLOAT32, 4, od, 0, &outs[g])))
            return rc;
        int32_t ins[3] = {parts[g], wt, bn};
        if ((rc = tio__tl_emit(L, e->code, e->options, ins, 3, &outs[g], 1, &op)) ||
            (rc = conv_opts(L, op, pk, sp, y)))
            return rc;
    }
    if ((rc = tio__tl_new_form(L, y, 1, &out)) ||
        (rc = tio__tl_emit(L, TFL_BuiltinOperator_CONCATENATION,
                           TFL_BuiltinOptions_ConcatenationOptions, outs, (size_t)G, &out, 1,
                           &op)))
        return rc;
    return tio__tfl_w_opt_i(L->m, op, false, "axis", 3, L->err);
}

static int lo_conv(tl *L, const tio_tfl_lowmap *e) {
    int64_t x = tio__tl_in_v(L->n, 0), wv = tio__tl_in_v(L->n, 1), bv = tio__tl_in_v(L->n, 2),
            y = L->n->outputs[0];
    /* quantized (QDQ): the integer constants the scan checked */
    bool qw = wv >= 0 && L->q[wv].ct;
    const tio_tensor *w = qw ? L->q[wv].ct : tio__tl_wconst(L, wv),
                     *bt = bv >= 0 && !qw ? tio__tl_wconst(L, bv) : NULL;
    int64_t xd[LMAX], yd[LMAX];
    int rx, ry, rc;
    if (!w || w->rank != 4 || (!qw && !tio__tl_wfloat(w, w->numel)) ||
        (qw && w->nbytes < w->numel))
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED,
                     "the weights must be a 4-D float32 or float16 constant (2-D Conv)");
    if (bv >= 0 && !qw && !tio__tl_wfloat(bt, (uint64_t)w->shape[0]))
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED,
                     "the bias must be a float32 or float16 constant of %lld values",
                     (long long)w->shape[0]);
    if ((rc = tio__tl_need_shape(L, x, xd, &rx)) || (rc = tio__tl_need_shape(L, y, yd, &ry)))
        return rc;
    if (rx != 4 || ry != 4) return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "only 2-D Conv lowers");
    int64_t O = w->shape[0], I = w->shape[1], KH = w->shape[2], KW = w->shape[3], C = xd[1];
    int64_t grp = tio__tl_attr_i(L->n, "group", 1);
    if (C < 1 || grp < 1 || O < 1)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "%lld input channels, group %lld", (long long)C,
                     (long long)grp);
    /* grouped: neither one group nor groups of one channel (depthwise) */
    bool grouped = grp > 1 && !(grp == C && I == 1 && O % C == 0);
    if (grouped && (C % grp || O % grp || I != C / grp))
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED,
                     "group %lld of %lld channels, %lld outputs, weights of %lld input channels",
                     (long long)grp, (long long)C, (long long)O, (long long)I);
    if (grouped && qw)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "a quantized grouped Conv (group %lld)",
                             (long long)grp);
    /* depthwise: groups of one channel; a quantized Conv of one input
     * channel too (as TensorFlow's converter writes it) */
    bool dw = !grouped && (grp != 1 || (qw && C == 1 && I == 1 && O > 1));
    if (!dw && !grouped && I != C)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "weights of %lld input channels for %lld",
                             (long long)I, (long long)C);
    spat sp;
    int64_t k[2] = {KH, KW};
    if ((rc = get_spat(L, k, xd, yd, &sp))) return rc;
    int pk = pad_kind(&sp);
    int32_t in;
    if ((rc = tio__tl_get(L, x, 1, &in))) return rc;
    if (pk == 2) {
        int32_t p;
        if ((rc = explicit_pad(L, x, in, &sp, false, &p))) return rc;
        in = p;
        pk = TFL_Padding_VALID;
    }
    if (grouped) return grouped_conv(L, e, w, bt, in, pk, &sp, grp, y);
    /* weights: OHWI, or 1HWO for depthwise */
    size_t n = (size_t)w->numel, es = qw ? 1 : w->dtype == TIO_FLOAT16 ? 2 : 4;
    tio_tl_perm pm = {.src = w->data, .es = es, .nd = dw ? 3 : 4};
    if (dw) { /* [O, 1, KH, KW]: (y, x, o) */
        int64_t d3[3] = {KH, KW, O}, s3[3] = {KW, 1, I * KH * KW};
        memcpy(pm.d, d3, sizeof d3);
        memcpy(pm.s, s3, sizeof s3);
    } else { /* (o, y, x, i) */
        int64_t d4[4] = {O, KH, KW, I}, s4[4] = {I * KH * KW, KW, 1, KH * KW};
        memcpy(pm.d, d4, sizeof d4);
        memcpy(pm.s, s4, sizeof s4);
    }
    int64_t wsh[4] = {dw ? 1 : O, KH, KW, dw ? O : I};
    int32_t wt, btn, out;
    const char *wn = tio__tl_sub_name(L, dw ? "weights_1hwo" : "weights_ohwi");
    if (qw) {
        uint8_t *nw = malloc(n ? n : 1);
        if (!nw) return tio__tl_nomem(L);
        tio__tl_perm_copy(&pm, 0, n, nw);
        rc = tio__tl_qweights(L, wv, wn, nw, n, 4, wsh, dw ? 3 : 0, &wt);
        free(nw);
    } else {
        rc = tio__tl_pweights(L, wn, w, &pm, 4, wsh, &wt);
    }
    if (rc) return rc;
    if ((rc = qw   ? tio__tl_qbias(L, x, wv, bv, O, &btn)
              : bt ? tio__tl_get(L, bv, 0, &btn)
                   : zero_bias(L, O, &btn)))
        return rc;
    if ((rc = tio__tl_new_form(L, y, 1, &out))) return rc;
    int32_t ins[3] = {in, wt, btn};
    tfl_wop *op;
    if ((rc = tio__tl_emit(L, dw ? e->code2 : e->code,
                   dw ? TFL_BuiltinOptions_DepthwiseConv2DOptions : e->options, ins, 3, &out, 1,
                   &op)))
        return rc;
    if (dw && (rc = tio__tfl_w_opt_i(L->m, op, false, "depth_multiplier", O / C, L->err)))
        return rc;
    return conv_opts(L, op, pk, &sp, y);
}

/* STRIDED_SLICE of tensor `in` (rank r) from b to e by st (in its layout),
 * into value y's form lay. */
static int strided_slice(tl *L, int32_t in, const int64_t *b, const int64_t *e,
                         const int64_t *st, int r, int64_t y, int lay) {
    int32_t bt, et, stt, out;
    int rc;
    const char *n1 = tio__tl_sub_name(L, "begin"), *n2 = tio__tl_sub_name(L, "end"),
               *n3 = tio__tl_sub_name(L, "strides");
    if (!n1 || !n2 || !n3) return tio__tl_nomem(L);
    if ((rc = tio__tl_const_i32(L, n1, b, (size_t)r, false, &bt)) ||
        (rc = tio__tl_const_i32(L, n2, e, (size_t)r, false, &et)) ||
        (rc = tio__tl_const_i32(L, n3, st, (size_t)r, false, &stt)) ||
        (rc = tio__tl_new_form(L, y, lay, &out)))
        return rc;
    int32_t ins[4] = {in, bt, et, stt};
    return tio__tl_emit(L, TFL_BuiltinOperator_STRIDED_SLICE,
                        TFL_BuiltinOptions_StridedSliceOptions, ins, 4, &out, 1, NULL);
}

/* ConvTranspose (2-D, one group, float weights [C, O, KH, KW], no
 * dilation): TRANSPOSE_CONV with VALID padding to the full size
 * (in - 1) s + k + output_padding, then the bias by ADD, then the pads cut
 * off by STRIDED_SLICE. VALID because TensorFlow Lite takes SAME's begin
 * pad from the output's size and Arm NN 20.08 from the input's, and the
 * bias by ADD because Arm NN 20.08 takes TRANSPOSE_CONV with three inputs
 * only (as older runtimes do). */
static int lo_convt(tl *L, const tio_tfl_lowmap *e) {
    int64_t x = tio__tl_in_v(L->n, 0), wv = tio__tl_in_v(L->n, 1), bv = tio__tl_in_v(L->n, 2),
            y = L->n->outputs[0], xd[LMAX], yd[LMAX];
    int rx, ry, rc;
    if (wv >= 0 && L->q[wv].ct)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "a quantized ConvTranspose");
    const tio_tensor *w = tio__tl_wconst(L, wv), *bt = bv >= 0 ? tio__tl_wconst(L, bv) : NULL;
    if (!w || w->rank != 4 || !tio__tl_wfloat(w, w->numel))
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED,
                             "the weights must be a 4-D float32 or float16 constant (2-D "
                             "ConvTranspose)");
    int64_t C = w->shape[0], O = w->shape[1], KH = w->shape[2], KW = w->shape[3];
    if (bv >= 0 && !tio__tl_wfloat(bt, (uint64_t)O))
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED,
                             "the bias must be a float32 or float16 constant of %lld values",
                             (long long)O);
    if ((rc = tio__tl_need_shape(L, x, xd, &rx)) || (rc = tio__tl_need_shape(L, y, yd, &ry)))
        return rc;
    if (rx != 4 || ry != 4)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "only 2-D ConvTranspose lowers");
    const tio_gattr *ap = tio__tl_attr(L->n, "auto_pad");
    if (tio__tl_attr_i(L->n, "group", 1) != 1 || xd[1] != C || yd[1] != O ||
        tio__tl_attr(L->n, "output_shape") ||
        (ap && (ap->type != TIO_ATTR_STRING || strcmp(ap->s, "NOTSET") != 0)))
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED,
                             "group, channels, auto_pad or output_shape other than one group "
                             "of the weights' channels with explicit pads");
    int64_t k[2] = {KH, KW}, s[2] = {1, 1}, dl[2] = {1, 1}, op[2] = {0, 0}, pd[4] = {0, 0, 0, 0};
    size_t cnt;
    if ((tio__tl_attr_ints(L->n, "strides", s, 2, &cnt) && cnt != 2) ||
        (tio__tl_attr_ints(L->n, "dilations", dl, 2, &cnt) && cnt != 2) ||
        (tio__tl_attr_ints(L->n, "output_padding", op, 2, &cnt) && cnt != 2) ||
        (tio__tl_attr_ints(L->n, "pads", pd, 4, &cnt) && cnt != 4) || dl[0] != 1 || dl[1] != 1)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "dilations other than 1, or malformed "
                                                   "strides, pads or output_padding");
    int64_t full[2];
    for (int j = 0; j < 2; j++) {
        if (s[j] < 1 || s[j] > INT32_MAX || k[j] < 1 || k[j] > INT32_MAX || op[j] < 0 ||
            op[j] >= s[j] || pd[j] < 0 || pd[j + 2] < 0 || xd[2 + j] > INT32_MAX / s[j])
            return tio__tl_nfail(L, TIO_E_UNSUPPORTED,
                                 "strides, pads or output_padding out of range");
        full[j] = (xd[2 + j] - 1) * s[j] + k[j] + op[j];
        if (full[j] > INT32_MAX || pd[j] + pd[j + 2] >= full[j] ||
            yd[2 + j] != full[j] - pd[j] - pd[j + 2])
            return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "the output's size is not what the pads "
                                                       "leave");
    }
    bool crop = pd[0] || pd[1] || pd[2] || pd[3];
    int64_t fd[4] = {yd[0], full[0], full[1], O}, wsh[4] = {O, KH, KW, C};
    /* weights [C, O, KH, KW] -> OHWI: (o, y, x, c) */
    tio_tl_perm pm = {.src = w->data, .es = w->dtype == TIO_FLOAT16 ? 2u : 4u, .nd = 4};
    int64_t d4[4] = {O, KH, KW, C}, s4[4] = {KH * KW, KW, 1, O * KH * KW};
    memcpy(pm.d, d4, sizeof d4);
    memcpy(pm.s, s4, sizeof s4);
    int32_t in, wt, shp, t;
    const char *wn = tio__tl_sub_name(L, "weights_ohwi"), *sn = tio__tl_sub_name(L, "shape");
    if (!wn || !sn) return tio__tl_nomem(L);
    if ((rc = tio__tl_get(L, x, 1, &in)) || (rc = tio__tl_pweights(L, wn, w, &pm, 4, wsh, &wt)) ||
        (rc = tio__tl_const_i32(L, sn, fd, 4, false, &shp)))
        return rc;
    /* each step's result: the value's NHWC form when it is the last one */
    int steps = 1 + (bt ? 1 : 0) + (crop ? 1 : 0);
    const char *tn = tio__tl_sub_name(L, "full");
    if (!tn) return tio__tl_nomem(L);
    if ((rc = steps == 1 ? tio__tl_new_form(L, y, 1, &t)
                         : tio__tl_add_tensor(L, tn, TFL_TensorType_FLOAT32, 4, fd, 0, &t)))
        return rc;
    int32_t ins[3] = {shp, wt, in};
    tfl_wop *o;
    if ((rc = tio__tl_emit(L, e->code, e->options, ins, 3, &t, 1, &o)) ||
        (rc = tio__tfl_w_opt_i(L->m, o, false, "padding", TFL_Padding_VALID, L->err)) ||
        (rc = tio__tfl_w_opt_i(L->m, o, false, "stride_h", s[0], L->err)) ||
        (rc = tio__tfl_w_opt_i(L->m, o, false, "stride_w", s[1], L->err)))
        return rc;
    if (bt) {
        int32_t bi, sum;
        const char *an = tio__tl_sub_name(L, "biased");
        if (!an) return tio__tl_nomem(L);
        if ((rc = tio__tl_get(L, bv, 0, &bi)) ||
            (rc = crop ? tio__tl_add_tensor(L, an, TFL_TensorType_FLOAT32, 4, fd, 0, &sum)
                       : tio__tl_new_form(L, y, 1, &sum)))
            return rc;
        int32_t ai[2] = {t, bi};
        if ((rc = tio__tl_emit(L, TFL_BuiltinOperator_ADD, TFL_BuiltinOptions_AddOptions, ai, 2,
                               &sum, 1, NULL)))
            return rc;
        t = sum;
    }
    if (!crop) return TIO_OK;
    int64_t b4[4] = {0, pd[0], pd[1], 0}, e4[4] = {yd[0], pd[0] + yd[2], pd[1] + yd[3], O},
            one[4] = {1, 1, 1, 1};
    return strided_slice(L, t, b4, e4, one, 4, y, 1);
}

static int lo_pool(tl *L, const tio_tfl_lowmap *e) {
    int64_t x = tio__tl_in_v(L->n, 0), y = L->n->outputs[0];
    int64_t xd[LMAX], yd[LMAX], k[2];
    int rx, ry, rc;
    size_t cnt;
    if (L->n->output_count > 1 && L->n->outputs[1] >= 0)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "MaxPool's Indices output");
    if ((rc = tio__tl_need_shape(L, x, xd, &rx)) || (rc = tio__tl_need_shape(L, y, yd, &ry)))
        return rc;
    if (rx != 4 || !tio__tl_attr_ints(L->n, "kernel_shape", k, 2, &cnt) || cnt != 2)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "only 2-D pooling lowers");
    spat sp;
    if ((rc = get_spat(L, k, xd, yd, &sp))) return rc;
    if (sp.dl[0] != 1 || sp.dl[1] != 1)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "dilated pooling");
    bool avg = e->code == TFL_BuiltinOperator_AVERAGE_POOL_2D;
    bool incl = tio__tl_attr_i(L->n, "count_include_pad", 0) != 0;
    int pk = pad_kind(&sp);
    if (pk == TFL_Padding_SAME && avg && incl && (sp.pb[0] || sp.pb[1] || sp.pe[0] || sp.pe[1]))
        pk = 2; /* TFLite's SAME average leaves the padding out */
    int32_t in;
    if ((rc = tio__tl_get(L, x, 1, &in))) return rc;
    if (pk == 2) {
        /* the end pads a ceil_mode window needs (its window starts inside) */
        for (int j = 0; j < 2; j++) {
            int64_t span = sp.in[j] + sp.pb[j] + sp.pe[j] - sp.k[j];
            if (span < 0)
                return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "a window larger than the input");
            int64_t need = (sp.out[j] - 1) * sp.s[j] - span;
            if (need > 0) {
                if (avg) return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "ceil_mode average pooling");
                sp.pe[j] += need;
            }
        }
        if (avg && !incl)
            return tio__tl_nfail(L, TIO_E_UNSUPPORTED,
                         "padding that is not SAME without count_include_pad");
        int32_t p;
        if ((rc = explicit_pad(L, x, in, &sp, !avg && !L->nonneg[x], &p))) return rc;
        in = p;
        pk = TFL_Padding_VALID;
    }
    int32_t out;
    tfl_wop *op;
    if ((rc = tio__tl_new_form(L, y, 1, &out)) ||
        (rc = tio__tl_emit(L, e->code, e->options, &in, 1, &out, 1, &op)) ||
        (rc = tio__tfl_w_opt_i(L->m, op, false, "padding", pk, L->err)) ||
        (rc = tio__tfl_w_opt_i(L->m, op, false, "stride_h", sp.s[0], L->err)) ||
        (rc = tio__tfl_w_opt_i(L->m, op, false, "stride_w", sp.s[1], L->err)) ||
        (rc = tio__tfl_w_opt_i(L->m, op, false, "filter_height", sp.k[0], L->err)) ||
        (rc = tio__tfl_w_opt_i(L->m, op, false, "filter_width", sp.k[1], L->err)))
        return rc;
    if (!avg) L->nonneg[y] = L->nonneg[x];
    return tio__tl_set_act(L, op, y);
}

/* A reduction over ONNX axes ax (mask) of x into y. */
static int reduce(tl *L, const tio_tfl_lowmap *e, int64_t x, int64_t y, const uint8_t *mask,
                  bool keep) {
    int64_t xd[LMAX];
    int rx, rc;
    if ((rc = tio__tl_need_shape(L, x, xd, &rx))) return rc;
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
    const char *nm = tio__tl_sub_name(L, "axes");
    if (!nm) return tio__tl_nomem(L);
    if ((rc = tio__tl_get(L, x, lay, &in)) ||
        (rc = tio__tl_const_i32(L, nm, axes, na, false, &at)) ||
        (rc = tio__tl_new_form(L, y, ylay, &out)))
        return rc;
    int32_t ins[2] = {in, at};
    if ((rc = tio__tl_emit(L, e->code, e->options, ins, 2, &out, 1, &op))) return rc;
    L->nonneg[y] = e->code != TFL_BuiltinOperator_SUM && L->nonneg[x];
    return keep ? tio__tfl_w_opt_i(L->m, op, false, "keep_dims", 1, L->err) : TIO_OK;
}

static int lo_gpool(tl *L, const tio_tfl_lowmap *e) {
    uint8_t mask[LMAX] = {0};
    int r = tio__tl_vrank(L, tio__tl_in_v(L->n, 0));
    if (r < 3) return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "input of rank %d", r);
    for (int k = 2; k < r; k++) mask[k] = 1;
    return reduce(L, e, tio__tl_in_v(L->n, 0), L->n->outputs[0], mask, true);
}

static int lo_reduce(tl *L, const tio_tfl_lowmap *e) {
    uint8_t mask[LMAX] = {0};
    int64_t ax[LMAX];
    size_t cnt;
    int r = tio__tl_vrank(L, tio__tl_in_v(L->n, 0));
    if (r < 1) return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "an input without a static shape");
    if (L->n->input_count > 1)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "axes that are not constant");
    if (!tio__tl_attr_ints(L->n, "axes", ax, LMAX, &cnt)) {
        for (int k = 0; k < r; k++) mask[k] = 1;
    } else {
        for (size_t k = 0; k < cnt; k++) {
            int64_t a = ax[k] < 0 ? ax[k] + r : ax[k];
            if (a < 0 || a >= r)
                return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "axis %lld", (long long)ax[k]);
            mask[a] = 1;
        }
    }
    return reduce(L, e, tio__tl_in_v(L->n, 0), L->n->outputs[0], mask,
                  tio__tl_attr_i(L->n, "keepdims", 1) != 0);
}

/* A tensor whose elements in order are value v's in ONNX order. */
static int get_flat(tl *L, int64_t v, int32_t *idx) {
    int64_t d[LMAX];
    int r;
    if (!tio__tl_vconst(L, v) && L->t[v][0] < 0 && L->t[v][1] >= 0 && tio__tl_vshape(L, v, d, &r) &&
        tio__tl_only_ones_move(d, r)) {
        *idx = L->t[v][1];
        return TIO_OK;
    }
    return tio__tl_get(L, v, 0, idx);
}

static int reshape_op(tl *L, int32_t in, int64_t y, int32_t out) {
    int64_t d[LMAX];
    int r, rc;
    if ((rc = tio__tl_need_shape(L, y, d, &r))) return rc;
    int32_t st;
    const char *nm = tio__tl_sub_name(L, "shape");
    if (!nm) return tio__tl_nomem(L);
    if ((rc = tio__tl_const_i32(L, nm, d, (size_t)r, false, &st))) return rc;
    int32_t ins[2] = {in, st};
    tfl_wop *op;
    if ((rc = tio__tl_emit(L, TFL_BuiltinOperator_RESHAPE, TFL_BuiltinOptions_ReshapeOptions, ins,
                           2, &out, 1, &op)))
        return rc;
    return tio__tfl_w_opt_ints(L->m, op, false, "new_shape", d, (size_t)r, L->err);
}

static int lo_reshape(tl *L, const tio_tfl_lowmap *e) {
    (void)e;
    int64_t x = tio__tl_in_v(L->n, 0), y = L->n->outputs[0];
    int32_t in, out;
    int64_t xd[LMAX], yd[LMAX];
    int rx, ry, rc;
    L->nonneg[y] = L->nonneg[x];
    if (L->flat_ok[y] && !tio__tl_vconst(L, x) && L->t[x][1] >= 0 && L->t[x][0] < 0 &&
        tio__tl_vshape(L, x, xd, &rx) && rx == 4 && tio__tl_vshape(L, y, yd, &ry) && ry == 2 &&
        yd[0] == xd[0] && yd[1] == xd[1] * xd[2] * xd[3] && !tio__tl_only_ones_move(xd, 4)) {
        /* the NHWC form flattened: the fully connected layers reading it take
         * their weights' columns in H, W, C order (no TRANSPOSE) */
        if ((rc = tio__tl_new_form(L, y, 0, &out))) return rc;
        L->nhwc_of[y] = x;
        return reshape_op(L, L->t[x][1], y, out);
    }
    if (!tio__tl_vconst(L, x) && L->t[x][1] >= 0 && L->t[x][0] < 0 &&
        tio__tl_vshape(L, x, xd, &rx) && tio__tl_vshape(L, y, yd, &ry) && yd[0] == xd[0] &&
        ((rx == 4 && ry == 5 && yd[1] * yd[2] == xd[1] && yd[3] == xd[2] && yd[4] == xd[3]) ||
         (rx == 5 && ry == 4 && yd[1] == xd[1] * xd[2] && yd[2] == xd[3] && yd[3] == xd[4])))
        /* channels split in two or joined again (a channel shuffle): the
         * same in form 1, [N, H, W, C] <-> [N, H, W, g, C/g] */
        return tio__tl_reshape_to(L, L->t[x][1], y, 1, &out);
    if ((rc = get_flat(L, x, &in)) || (rc = tio__tl_new_form(L, y, 0, &out))) return rc;
    return reshape_op(L, in, y, out);
}

/* FULLY_CONNECTED: Gemm in its FC form (transB = 1), MatMul by a constant */
static int lo_fc(tl *L, const tio_tfl_lowmap *e) {
    bool mm = strcmp(L->n->op, "MatMul") == 0;
    int64_t x = tio__tl_in_v(L->n, 0), wv = tio__tl_in_v(L->n, 1),
            bv = mm ? -1 : tio__tl_in_v(L->n, 2), y = L->n->outputs[0];
    bool qw = wv >= 0 && L->q[wv].ct; /* quantized (QDQ) */
    const tio_tensor *w = qw ? L->q[wv].ct : tio__tl_wconst(L, wv),
                     *b = bv >= 0 && !qw ? tio__tl_wconst(L, bv) : NULL;
    int64_t xd[LMAX];
    int rx, rc;
    if ((rc = tio__tl_need_shape(L, x, xd, &rx))) return rc;
    if (!w || w->rank != 2 || (!qw && !tio__tl_wfloat(w, w->numel)) ||
        (qw && w->nbytes < w->numel))
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED,
                             "the weights must be a 2-D float32 or float16 constant");
    /* weights [K, N] (MatMul; a quantized Gemm without transB, whose
     * weights the preparation could not transpose: a DequantizeLinear's
     * output) or [N, K] (an FC-form Gemm) */
    int64_t tb = mm ? 0 : tio__tl_attr_i(L->n, "transB", 0);
    bool kn = mm || (qw && tb == 0);
    if (!mm && (tio__tl_attr_i(L->n, "transA", 0) || (tb != 1 && !kn) ||
                tio__tl_attr_f(L->n, "alpha", 1) != 1 || tio__tl_attr_f(L->n, "beta", 1) != 1 ||
                rx != 2))
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "a Gemm that is not x W^T + b on a 2-D x");
    int64_t N = kn ? w->shape[1] : w->shape[0], K = kn ? w->shape[0] : w->shape[1];
    if (rx < 2 || xd[rx - 1] != K)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "an input of %lld features for weights of %lld",
                     rx > 0 ? (long long)xd[rx - 1] : 0LL, (long long)K);
    if (bv >= 0 && !qw && !tio__tl_wfloat(b, (uint64_t)N))
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED,
                     "the bias must be a float32 or float16 constant of %lld values", (long long)N);
    int32_t in, wt, bt, out;
    if ((rc = get_flat(L, x, &in))) return rc;
    int64_t src4 = L->nhwc_of[x], sd[LMAX];
    int sr = 0;
    if (src4 >= 0 && (!tio__tl_vshape(L, src4, sd, &sr) || sr != 4 || sd[1] * sd[2] * sd[3] != K))
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "a flattened input that is not C*H*W");
    if (mm || src4 >= 0 || qw) {
        /* [N, K]: [K, N] transposed; columns in H, W, C order for a
         * flattened NHWC input (column k = (h * W + w) * C + c is source
         * column (c * H + h) * W + w) */
        size_t n = (size_t)w->numel, es = qw ? 1 : w->dtype == TIO_FLOAT16 ? 2 : 4;
        tio_tl_perm pm = {.src = w->data, .es = es, .nd = src4 >= 0 ? 4 : 2};
        int64_t ks = kn ? N : 1, ns = kn ? 1 : K; /* source strides of a column, a row */
        if (src4 >= 0) {
            int64_t C = sd[1], H = sd[2], W = sd[3];
            int64_t d4[4] = {N, H, W, C}, s4[4] = {ns, W * ks, ks, H * W * ks};
            memcpy(pm.d, d4, sizeof d4);
            memcpy(pm.s, s4, sizeof s4);
        } else {
            int64_t d2[2] = {N, K}, s2[2] = {ns, ks};
            memcpy(pm.d, d2, sizeof d2);
            memcpy(pm.s, s2, sizeof s2);
        }
        int64_t sh[2] = {N, K};
        const char *wn = tio__tl_sub_name(L, src4 >= 0 ? "weights_hwc" : "weights_t");
        if (qw) {
            uint8_t *t = malloc(n ? n : 1);
            if (!t) return tio__tl_nomem(L);
            tio__tl_perm_copy(&pm, 0, n, t);
            rc = tio__tl_qweights(L, wv, wn, t, n, 2, sh, 0, &wt);
            free(t);
        } else {
            rc = tio__tl_pweights(L, wn, w, &pm, 2, sh, &wt);
        }
    } else rc = tio__tl_get(L, wv, 0, &wt);
    if (rc) return rc;
    if (qw) rc = tio__tl_qbias(L, x, wv, bv, N, &bt);
    else if (b && b->rank == 1) rc = tio__tl_get(L, bv, 0, &bt);
    else if (b) /* [1, N] viewed as [N] */
        rc = tio__tl_weights(L, tio__tl_sub_name(L, "bias"), b->dtype, b->data, (size_t)N, 1, &N,
                             &bt);
    else rc = zero_bias(L, N, &bt);
    if (rc) return rc;
    if ((rc = tio__tl_new_form(L, y, 0, &out))) return rc;
    int32_t fin = in, fout = out;
    if (rx != 2) {
        /* [..., K] -> [M, K], and the result back to y's shape */
        int64_t m2[2] = {1, K}, o2[2];
        for (int k = 0; k < rx - 1; k++) m2[0] *= xd[k];
        o2[0] = m2[0];
        o2[1] = N;
        const char *a = tio__tl_sub_name(L, "rows"), *o = tio__tl_sub_name(L, "fc");
        if (!a || !o) return tio__tl_nomem(L);
        int32_t st;
        if ((rc = tio__tl_add_tensor(L, a, TFL_TensorType_FLOAT32, 2, m2, 0, &fin)) ||
            (rc = tio__tl_add_tensor(L, o, TFL_TensorType_FLOAT32, 2, o2, 0, &fout)) ||
            (rc = tio__tl_const_i32(L, tio__tl_sub_name(L, "rows_shape"), m2, 2, false, &st)))
            return rc;
        tio__tl_like(L, in, fin);
        tio__tl_like(L, out, fout);
        int32_t ri[2] = {in, st};
        tfl_wop *rop;
        if ((rc = tio__tl_emit(L, TFL_BuiltinOperator_RESHAPE, TFL_BuiltinOptions_ReshapeOptions,
                               ri, 2, &fin, 1, &rop)) ||
            (rc = tio__tfl_w_opt_ints(L->m, rop, false, "new_shape", m2, 2, L->err)))
            return rc;
    }
    int32_t ins[3] = {fin, wt, bt};
    tfl_wop *op;
    if ((rc = tio__tl_emit(L, e->code, e->options, ins, 3, &fout, 1, &op)) ||
        (rc = tio__tl_set_act(L, op, y)))
        return rc;
    return rx != 2 ? reshape_op(L, fout, y, out) : TIO_OK;
}

static int lo_concat(tl *L, const tio_tfl_lowmap *e) {
    int64_t y = L->n->outputs[0];
    int ry = tio__tl_vrank(L, y), rc;
    if (ry < 1) return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "an output without a static shape");
    int64_t ax = tio__tl_attr_i(L->n, "axis", 0);
    if (ax < 0) ax += ry;
    if (ax < 0 || ax >= ry) return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "axis out of range");
    int lay = 0;
    bool nn = true;
    if (ry == 4) {
        lay = 1;
        for (size_t k = 0; k < L->n->input_count; k++) {
            int64_t v = L->n->inputs[k];
            if (!tio__tl_wconst(L, v) && L->t[v][1] < 0 && L->t[v][0] >= 0) lay = 0;
        }
    }
    int32_t *ins = tio__tl_al(L, (L->n->input_count + 1) * sizeof *ins), out;
    if (!ins) return tio__tl_nomem(L);
    for (size_t k = 0; k < L->n->input_count; k++) {
        if ((rc = tio__tl_get(L, L->n->inputs[k], lay, &ins[k]))) return rc;
        if (L->n->inputs[k] < 0 || !L->nonneg[L->n->inputs[k]]) nn = false;
    }
    tfl_wop *op;
    if ((rc = tio__tl_new_form(L, y, lay, &out)) ||
        (rc = tio__tl_emit(L, e->code, e->options, ins, L->n->input_count, &out, 1, &op)) ||
        (rc = tio__tfl_w_opt_i(L->m, op, false, "axis", lay ? Q4[ax] : ax, L->err)))
        return rc;
    L->nonneg[y] = nn;
    return tio__tl_set_act(L, op, y);
}

static int lo_transpose(tl *L, const tio_tfl_lowmap *e) {
    int64_t x = tio__tl_in_v(L->n, 0), y = L->n->outputs[0], d[LMAX], perm[LMAX], q[LMAX];
    int r, rc;
    size_t cnt;
    if ((rc = tio__tl_need_shape(L, x, d, &r))) return rc;
    if (!tio__tl_attr_ints(L->n, "perm", perm, LMAX, &cnt)) {
        for (int k = 0; k < r; k++) perm[k] = r - 1 - k;
        cnt = (size_t)r;
    }
    if ((int)cnt != r)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "perm of %zu axes for rank %d", cnt, r);
    const int *P = tio__tl_perm_of(r);
    int src = tio__tl_vconst(L, x) || !P ? 0 : tio__tl_pref_lay(L, x), ylay = r == 4 ? 1 : src,
        inv[LMAX];
    for (int i = 0; P && i < r; i++) inv[P[i]] = i;
    for (int i = 0; i < r; i++) {
        int64_t a = perm[ylay ? P[i] : i]; /* the input's ONNX axis */
        if (a < 0 || a >= r) return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "perm out of range");
        q[i] = src ? inv[a] : a;
    }
    int32_t in, out, pt;
    if ((rc = tio__tl_get(L, x, src, &in))) return rc;
    L->nonneg[y] = L->nonneg[x];
    bool ident = true;
    for (int i = 0; i < r; i++) ident = ident && q[i] == i;
    if (ident && !tio__tl_vconst(L, x)) {
        L->t[y][ylay] = in; /* the transposes cancel */
        return TIO_OK;
    }
    if ((rc = tio__tl_new_form(L, y, ylay, &out))) return rc;
    const char *nm = tio__tl_sub_name(L, "perm");
    if (!nm) return tio__tl_nomem(L);
    if ((rc = tio__tl_const_i32(L, nm, q, (size_t)r, false, &pt))) return rc;
    int32_t ins[2] = {in, pt};
    return tio__tl_emit(L, e->code, e->options, ins, 2, &out, 1, NULL);
}

static int lo_softmax(tl *L, const tio_tfl_lowmap *e) {
    int64_t x = tio__tl_in_v(L->n, 0), y = L->n->outputs[0];
    int r = tio__tl_vrank(L, x), rc;
    if (r < 1) return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "an input without a static shape");
    int64_t ax = tio__tl_attr_i(L->n, "axis", L->opset >= 13 ? -1 : 1);
    if (ax < 0) ax += r;
    int lay;
    if (ax == r - 1) lay = 0;
    else if (r == 4 && ax == 1 && L->opset >= 13) lay = 1;
    else
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "axis %lld of rank %d (the last axis lowers)",
                     (long long)ax, r);
    int32_t in, out;
    tfl_wop *op;
    if ((rc = tio__tl_get(L, x, lay, &in)) || (rc = tio__tl_new_form(L, y, lay, &out)) ||
        (rc = tio__tl_emit(L, e->code, e->options, &in, 1, &out, 1, &op)))
        return rc;
    L->nonneg[y] = e->code == TFL_BuiltinOperator_SOFTMAX;
    return e->code == TFL_BuiltinOperator_SOFTMAX
               ? tio__tfl_w_opt_f(L->m, op, false, "beta", 1.0, L->err)
               : TIO_OK;
}

static int lo_pad(tl *L, const tio_tfl_lowmap *e) {
    int64_t x = tio__tl_in_v(L->n, 0), y = L->n->outputs[0], pads[2 * LMAX], tp[2 * LMAX];
    size_t cnt;
    int r = tio__tl_vrank(L, x), rc;
    const tio_gattr *mode = tio__tl_attr(L->n, "mode");
    if (mode && mode->type == TIO_ATTR_STRING && strcmp(mode->s, "constant") != 0)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "mode %s (constant lowers)", mode->s);
    if (L->n->input_count > 1 || !tio__tl_attr_ints(L->n, "pads", pads, 2 * LMAX, &cnt) ||
        (int)cnt != 2 * r)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "pads that are not constant");
    for (size_t k = 0; k < cnt; k++)
        if (pads[k] < 0) return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "negative pads");
    double val = tio__tl_attr_f(L->n, "value", 0);
    int lay = r == 4 ? 1 : 0;
    for (int i = 0; i < r; i++) {
        int a = lay ? P4[i] : i;
        tp[2 * i] = pads[a];
        tp[2 * i + 1] = pads[a + r];
    }
    int32_t in, pt, out;
    const char *nm = tio__tl_sub_name(L, "paddings");
    if (!nm) return tio__tl_nomem(L);
    if ((rc = tio__tl_get(L, x, lay, &in)) ||
        (rc = tio__tl_const_i32(L, nm, tp, 2 * (size_t)r, false, &pt)))
        return rc;
    int32_t *s2 = tio__tl_al(L, 2 * sizeof *s2);
    if (!s2) return tio__tl_nomem(L);
    s2[0] = r;
    s2[1] = 2;
    L->m->subgraphs[0].tensors[pt].rank = 2;
    L->m->subgraphs[0].tensors[pt].shape = s2;
    if ((rc = tio__tl_new_form(L, y, lay, &out))) return rc;
    L->nonneg[y] = L->nonneg[x] && val >= 0;
    if (val == 0) {
        int32_t ins[2] = {in, pt};
        return tio__tl_emit(L, e->code, e->options, ins, 2, &out, 1, NULL);
    }
    int32_t cv;
    if ((rc = tio__tl_scalar_f32(L, "value", (float)val, &cv))) return rc;
    int32_t ins[3] = {in, pt, cv};
    return tio__tl_emit(L, e->code2, TFL_BuiltinOptions_PadV2Options, ins, 3, &out, 1, NULL);
}

/* BatchNormalization left (not after a Conv or Gemm, or fuse=0): x * s + t
 * per channel, s = gamma / sqrt(var + eps), t = beta - mean * s */
static int lo_bn(tl *L, const tio_tfl_lowmap *e) {
    int64_t x = tio__tl_in_v(L->n, 0), y = L->n->outputs[0];
    int r = tio__tl_vrank(L, x), rc;
    if (L->n->input_count != 5 || (L->n->output_count > 1 && L->n->outputs[1] >= 0))
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "training-mode outputs");
    if (r != 4 && r != 2) return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "input of rank %d", r);
    const tio_tensor *p[4];
    int64_t d[LMAX];
    int rx;
    if ((rc = tio__tl_need_shape(L, x, d, &rx))) return rc;
    size_t C = (size_t)d[1];
    for (int k = 0; k < 4; k++) {
        p[k] = tio__tl_wconst(L, tio__tl_in_v(L->n, (size_t)k + 1));
        if (!tio__tl_wfloat(p[k], C))
            return tio__tl_nfail(L, TIO_E_UNSUPPORTED,
                         "parameters that are not float32 or float16 constants of %zu", C);
    }
    float eps = (float)tio__tl_attr_f(L->n, "epsilon", 1e-5);
    float *s = malloc(2 * (C ? C : 1) * sizeof *s), *t = s ? s + C : NULL;
    if (!s) return tio__tl_nomem(L);
    for (size_t c = 0; c < C; c++) {
        float inv = 1.f / sqrtf(tio__tl_wat(p[3], c) + eps);
        s[c] = tio__tl_wat(p[0], c) * inv;
        t[c] = tio__tl_wat(p[1], c) - tio__tl_wat(p[2], c) * s[c];
    }
    int lay = r == 4 ? 1 : 0;
    int64_t cd = (int64_t)C;
    int32_t in, st, tt, mid, out;
    const char *sn = tio__tl_sub_name(L, "scale"), *tn = tio__tl_sub_name(L, "shift");
    rc = !sn || !tn ? tio__tl_nomem(L) : tio__tl_const_f32(L, sn, s, C, 1, &cd, &st);
    if (!rc) rc = tio__tl_const_f32(L, tn, t, C, 1, &cd, &tt);
    free(s);
    if (rc || (rc = tio__tl_get(L, x, lay, &in)) || (rc = temp_like(L, y, lay, "scaled", &mid)) ||
        (rc = tio__tl_new_form(L, y, lay, &out)))
        return rc;
    int32_t i1[2] = {in, st}, i2[2] = {mid, tt};
    tfl_wop *op;
    if ((rc = tio__tl_emit(L, e->code, e->options, i1, 2, &mid, 1, NULL)) ||
        (rc = tio__tl_emit(L, e->code2, TFL_BuiltinOptions_AddOptions, i2, 2, &out, 1, &op)))
        return rc;
    return tio__tl_set_act(L, op, y);
}

static int lo_slice(tl *L, const tio_tfl_lowmap *e) {
    int64_t x = tio__tl_in_v(L->n, 0), y = L->n->outputs[0], xd[LMAX], st[LMAX], en[LMAX], ax[LMAX],
            sp[LMAX];
    size_t ns, ne, na, nsp;
    int r, rc;
    if ((rc = tio__tl_need_shape(L, x, xd, &r))) return rc;
    if (L->n->input_count > 1 || !tio__tl_attr_ints(L->n, "starts", st, LMAX, &ns) ||
        !tio__tl_attr_ints(L->n, "ends", en, LMAX, &ne) || ns != ne)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "starts and ends that are not constant");
    if (!tio__tl_attr_ints(L->n, "axes", ax, LMAX, &na))
        for (na = 0; na < ns; na++) ax[na] = (int64_t)na;
    if (!tio__tl_attr_ints(L->n, "steps", sp, LMAX, &nsp))
        for (nsp = 0; nsp < ns; nsp++) sp[nsp] = 1;
    if (na != ns || nsp != ns)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "starts, ends, axes, steps differ");
    int64_t b[LMAX], en2[LMAX], s[LMAX];
    for (int k = 0; k < r; k++) b[k] = 0, en2[k] = xd[k], s[k] = 1;
    for (size_t k = 0; k < ns; k++) {
        int64_t a = ax[k] < 0 ? ax[k] + r : ax[k], dim;
        if (a < 0 || a >= r) return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "axis out of range");
        if (sp[k] < 1) return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "steps below 1");
        dim = xd[a];
        int64_t s0 = st[k] < 0 ? st[k] + dim : st[k], e0 = en[k] < 0 ? en[k] + dim : en[k];
        s0 = s0 < 0 ? 0 : s0 > dim ? dim : s0;
        e0 = e0 < 0 ? 0 : e0 > dim ? dim : e0;
        b[a] = s0;
        en2[a] = e0 > s0 ? e0 : s0;
        s[a] = sp[k];
    }
    int lay = r == 4 ? tio__tl_pref_lay(L, x) : 0;
    int64_t bb[LMAX], ee[LMAX], ss[LMAX];
    for (int i = 0; i < r; i++) {
        int a = lay ? P4[i] : i;
        bb[i] = b[a], ee[i] = en2[a], ss[i] = s[a];
    }
    int32_t in;
    if ((rc = tio__tl_get(L, x, lay, &in))) return rc;
    L->nonneg[y] = L->nonneg[x];
    (void)e; /* STRIDED_SLICE, StridedSliceOptions: the table's entry */
    return strided_slice(L, in, bb, ee, ss, r, y, lay);
}

static int lo_split(tl *L, const tio_tfl_lowmap *e) {
    int64_t x = tio__tl_in_v(L->n, 0), xd[LMAX], sizes[LMAX * 8];
    int r, rc;
    size_t no = L->n->output_count, cnt;
    if ((rc = tio__tl_need_shape(L, x, xd, &r))) return rc;
    int64_t ax = tio__tl_attr_i(L->n, "axis", 0);
    if (ax < 0) ax += r;
    if (ax < 0 || ax >= r || no < 1 || no > LMAX * 8)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "axis or output count out of range");
    if (L->n->input_count > 1)
        return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "a split that is not constant");
    if (!tio__tl_attr_ints(L->n, "split", sizes, LMAX * 8, &cnt)) {
        if (xd[ax] % (int64_t)no) return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "an uneven split");
        for (size_t k = 0; k < no; k++) sizes[k] = xd[ax] / (int64_t)no;
        cnt = no;
    }
    if (cnt != no) return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "%zu sizes for %zu outputs", cnt, no);
    int lay = r == 4 ? tio__tl_pref_lay(L, x) : 0;
    int64_t axv = lay ? Q4[ax] : ax;
    int32_t in, st, at, *outs = tio__tl_al(L, no * sizeof *outs);
    const char *n1 = tio__tl_sub_name(L, "size_splits"), *n2 = tio__tl_sub_name(L, "axis");
    if (!outs || !n1 || !n2) return tio__tl_nomem(L);
    if ((rc = tio__tl_get(L, x, lay, &in)) ||
        (rc = tio__tl_const_i32(L, n1, sizes, no, false, &st)) ||
        (rc = tio__tl_const_i32(L, n2, &axv, 1, true, &at)))
        return rc;
    for (size_t k = 0; k < no; k++) {
        if (L->n->outputs[k] < 0) return tio__tl_nfail(L, TIO_E_UNSUPPORTED, "an absent output");
        if ((rc = tio__tl_new_form(L, L->n->outputs[k], lay, &outs[k]))) return rc;
        L->nonneg[L->n->outputs[k]] = L->nonneg[x];
    }
    int32_t ins[3] = {in, st, at};
    tfl_wop *op;
    if ((rc = tio__tl_emit(L, e->code, e->options, ins, 3, outs, no, &op))) return rc;
    return tio__tfl_w_opt_i(L->m, op, false, "num_splits", (int64_t)no, L->err);
}

/* A float16 constant's Cast to float32: float16 weights, DEQUANTIZEd where
 * an operator reads them (get), or converted where one takes their values
 * (Conv, fully connected, BatchNormalization). */
bool tio__tl_cast_ok(const tl *L, const tio_gnode *n) {
    const tio_tensor *t = tio__tl_vconst(L, tio__tl_in_v(n, 0));
    return n->input_count == 1 && n->output_count == 1 && n->outputs[0] >= 0 && t &&
           t->dtype == TIO_FLOAT16 && tio__tl_attr_i(n, "to", 0) == 1;
}

static int lo_cast(tl *L, const tio_tfl_lowmap *e) {
    (void)e;
    L->deq[L->n->outputs[0]] = tio__tl_in_v(L->n, 0);
    return TIO_OK;
}

lo_fn tio__tl_lo_of(tio_tfl_lkind k) {
    switch (k) {
    case TFL_L_UNARY: return lo_unary;
    case TFL_L_BINARY: return lo_binary;
    case TFL_L_CLIP: return lo_clip;
    case TFL_L_LEAKY: return lo_leaky;
    case TFL_L_HSIGMOID: return lo_hsigmoid;
    case TFL_L_CONV: return lo_conv;
    case TFL_L_CONVT: return lo_convt;
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
    case TFL_L_QUANT: return tio__tl_lo_quant;
    case TFL_L_DEQUANT: return tio__tl_lo_dequant;
    }
    return NULL;
}
