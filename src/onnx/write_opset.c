/* The ONNX writer at another opset than the graph's (format option
 * opset=N): attributes that became inputs and back, forms an opset changed,
 * what cannot be said refused by name. */
#include "onnx/write.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------- writing at another opset */

/* A node rewritten for the written opset: inputs cut (an attribute now) or
 * added (a Constant node's output), attributes left out or added. */

void tio__ox_form_free(ox_form *fm) {
    for (size_t k = 0; k < 8; k++) free(fm->added[k]);
    free(fm->skip);
    for (size_t k = 0; k < fm->nextra; k++) {
        free(fm->extra[k].ints);
        free(fm->extra[k].floats);
    }
}

static const char *ox_node_label(const tio_graph *g, const tio_gnode *n) {
    if (n->name && n->name[0]) return n->name;
    if (n->output_count && n->outputs[0] >= 0 && g->values[n->outputs[0]].name)
        return g->values[n->outputs[0]].name;
    return "";
}

/* The plan tensor holding value v's contents when they are fixed: an
 * initializer that is not a graph input, or the `value` of the Constant node
 * that outputs v; -1 when v is computed at run time. */
static int64_t ox_const_tensor(const tio_graph *g, const ox_fix *f, int64_t v) {
    if (v < 0 || f->gin[v]) return -1;
    if (g->values[v].tensor >= 0) return g->values[v].tensor;
    int64_t j = f->producer[v];
    if (j < 0 || !tio__ox_default_domain(&g->nodes[j]) || strcmp(g->nodes[j].op, "Constant") != 0)
        return -1;
    for (size_t a = 0; a < g->nodes[j].attr_count; a++)
        if (g->nodes[j].attrs[a].type == TIO_ATTR_TENSOR &&
            strcmp(g->nodes[j].attrs[a].name, "value") == 0)
            return g->nodes[j].attrs[a].i;
    return -1;
}

static uint64_t ox_le(const uint8_t *b, unsigned w) {
    uint64_t x = 0;
    for (unsigned q = 0; q < w; q++) x |= (uint64_t)b[q] << (8 * q);
    return x;
}

/* Plan tensor t's elements into attribute a (type already set): integers
 * from int32/int64, numbers from float32/float64. */
static int ox_const_attr(ox_writer *w, int64_t t, tio_gattr *a, const char *lbl,
                         tio_error *err) {
    const tio_wtensor *wt = tio__plan_tensor(w->plan, (size_t)t);
    bool want_f = a->type == TIO_ATTR_FLOAT || a->type == TIO_ATTR_FLOATS;
    bool ok = want_f ? wt->dtype == TIO_FLOAT32 || wt->dtype == TIO_FLOAT64
                     : wt->dtype == TIO_INT32 || wt->dtype == TIO_INT64;
    bool one = a->type == TIO_ATTR_FLOAT || a->type == TIO_ATTR_INT;
    if (!ok || (one && wt->numel != 1) || wt->numel > (1u << 20))
        return tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, -1,
                        "%s: the constant (%s, %llu elements) does not make a%s %s attribute",
                        lbl, tio_dtype_name(wt->dtype), (unsigned long long)wt->numel,
                        one ? " one-number" : "n", want_f ? "float" : "integer");
    const uint8_t *data = NULL;
    int rc = tio__plan_data(w->plan, (size_t)t, &data, NULL, err);
    if (rc) return rc;
    size_t n = (size_t)wt->numel;
    unsigned es = wt->dtype == TIO_INT32 || wt->dtype == TIO_FLOAT32 ? 4 : 8;
    if (want_f) a->floats = malloc((n ? n : 1) * sizeof *a->floats);
    else a->ints = malloc((n ? n : 1) * sizeof *a->ints);
    if (!a->floats && !a->ints) return tio__nomem(err, OX_FMT);
    for (size_t k = 0; k < n; k++) {
        uint64_t x = ox_le(data + es * k, es);
        if (!want_f) {
            a->ints[k] = es == 4 ? (int64_t)(int32_t)(uint32_t)x : (int64_t)x;
            continue;
        }
        if (es == 4) {
            float fl;
            uint32_t u = (uint32_t)x;
            memcpy(&fl, &u, 4);
            a->floats[k] = fl;
        } else {
            memcpy(&a->floats[k], &x, 8);
        }
    }
    a->count = n;
    if (one) {
        if (want_f) a->f = a->floats[0];
        else a->i = a->ints[0];
    }
    return TIO_OK;
}

/* A Constant node whose output `out` holds attribute a as the input form
 * wants it: int64 [n] for integers (TopK's K too), a float32 scalar for one
 * number, float32 [n] for numbers. */
static int ox_put_const_node(tio_pb_writer *pw, const char *out, const tio_gattr *a,
                             tio_error *err) {
    bool f = a->type == TIO_ATTR_FLOAT || a->type == TIO_ATTR_FLOATS;
    size_t n = a->type == TIO_ATTR_INTS || a->type == TIO_ATTR_FLOATS ? a->count : 1;
    unsigned es = f ? 4 : 8;
    uint8_t *raw = malloc(n * es + 1);
    if (!raw) return tio__nomem(err, OX_FMT);
    for (size_t k = 0; k < n; k++) {
        uint64_t x;
        if (f) {
            float fl = (float)(a->type == TIO_ATTR_FLOAT ? a->f : a->floats[k]);
            uint32_t u;
            memcpy(&u, &fl, 4);
            x = u;
        } else {
            x = (uint64_t)(a->type == TIO_ATTR_INT ? a->i : a->ints[k]);
        }
        for (unsigned q = 0; q < es; q++) raw[es * k + q] = (uint8_t)(x >> (8 * q));
    }
    int rc = tio__pb_begin(pw, 1, err);
    if (!rc) rc = tio__pb_put_string(pw, 2, out, err);
    if (!rc) rc = tio__pb_put_string(pw, 3, out, err);
    if (!rc) rc = tio__pb_put_string(pw, 4, "Constant", err);
    if (!rc) rc = tio__pb_begin(pw, 5, err);
    if (!rc) rc = tio__pb_put_string(pw, 1, "value", err);
    if (!rc) rc = tio__pb_begin(pw, 5, err); /* t */
    if (!rc && a->type != TIO_ATTR_FLOAT) rc = tio__pb_put_int64(pw, 1, (int64_t)n, err);
    if (!rc) rc = tio__pb_put_int64(pw, 2, tio__onnx_code(f ? TIO_FLOAT32 : TIO_INT64), err);
    if (!rc) rc = tio__pb_put_len(pw, 9, raw, n * es, false, err);
    if (!rc) rc = tio__pb_end(pw, err);
    if (!rc) rc = tio__pb_put_int64(pw, 20, 4, err); /* TENSOR */
    if (!rc) rc = tio__pb_end(pw, err);
    if (!rc) rc = tio__pb_end(pw, err);
    free(raw);
    return rc;
}

static int ox_form_refuse(const ox_writer *w, const tio_graph *g, const tio_gnode *n,
                          tio_error *err, const char *why) {
    return tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, -1, "node '%s' (%s) at opset %lld: %s",
                    ox_node_label(g, n), n->op, (long long)w->opset, why);
}

/* Softmax, LogSoftmax, Hardmax: before opset 13 `axis` (default 1) splits
 * the input into 2-D; from 13 it is one axis (default -1). The two agree on
 * the last axis only: written as axis -1. */
/* Operators whose output 0 has the type of input 0. */
static bool ox_keeps_type(const char *op) {
    static const char *const ops[] = {
        "Abs", "Add", "AveragePool", "BatchNormalization", "Clip", "Concat", "Conv",
        "ConvTranspose", "Div", "Dropout", "Elu", "Erf", "Exp", "Expand", "Flatten", "Gather",
        "Gemm", "GlobalAveragePool", "GlobalMaxPool", "HardSigmoid", "HardSwish", "Identity",
        "InstanceNormalization", "LayerNormalization", "LeakyRelu", "Log", "MatMul", "Max",
        "MaxPool", "Min", "Mul", "Neg", "Pad", "Pow", "PRelu", "ReduceMax", "ReduceMean",
        "ReduceMin", "ReduceSum", "Relu", "Reshape", "Resize", "Selu", "Sigmoid", "Slice",
        "Softmax", "Split", "Sqrt", "Squeeze", "Sub", "Tanh", "Tile", "Transpose", "Unsqueeze",
        "Upsample"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(ops[i], op) == 0) return true;
    return false;
}

/* Value v's element type: recorded, a Cast's `to`, or followed up through
 * operators that keep their input's type; TIO_DTYPE_INVALID when not known. */
static tio_dtype ox_type_of(const ox_writer *w, const tio_graph *g, const ox_fix *f, int64_t v) {
    for (size_t steps = 0; v >= 0 && steps <= g->node_count; steps++) {
        tio_dtype d = tio__ox_dtype(w, g, v);
        if (d != TIO_DTYPE_INVALID) return d;
        int64_t j = f->producer[v];
        if (j < 0 || !tio__ox_default_domain(&g->nodes[j])) return TIO_DTYPE_INVALID;
        const tio_gnode *p = &g->nodes[j];
        if (strcmp(p->op, "Cast") == 0) /* its `to` */
            for (size_t a = 0; a < p->attr_count; a++)
                if (strcmp(p->attrs[a].name, "to") == 0 && p->attrs[a].type == TIO_ATTR_INT)
                    return tio__onnx_dtype(p->attrs[a].i);
        if (!ox_keeps_type(p->op) || !p->input_count) return TIO_DTYPE_INVALID;
        v = p->inputs[0];
    }
    return TIO_DTYPE_INVALID;
}

/* The rank of value v when known: recorded, or the output of a Flatten (2)
 * or of a Reshape to a constant shape; -1 otherwise. */
static int64_t ox_rank(const ox_writer *w, const tio_graph *g, const ox_fix *f, int64_t v) {
    if (v < 0) return -1;
    if (g->values[v].rank >= 0) return g->values[v].rank;
    int64_t j = f->producer[v];
    if (j < 0 || !tio__ox_default_domain(&g->nodes[j])) return -1;
    const tio_gnode *p = &g->nodes[j];
    if (strcmp(p->op, "Flatten") == 0) return 2;
    int64_t t = strcmp(p->op, "Reshape") == 0 && p->input_count > 1
                    ? ox_const_tensor(g, f, p->inputs[1])
                    : -1;
    if (t < 0) return -1;
    const tio_wtensor *wt = tio__plan_tensor(w->plan, (size_t)t);
    return wt->rank == 1 ? (int64_t)wt->numel : -1;
}

static int ox_form_axis(ox_writer *w, const tio_graph *g, const ox_fix *f, const tio_gnode *n,
                        ox_form *fm, tio_error *err) {
    int64_t axis = w->src_opset < 13 ? 1 : -1;
    for (size_t a = 0; a < n->attr_count; a++) {
        if (strcmp(n->attrs[a].name, "axis") != 0) continue;
        if (n->attrs[a].type != TIO_ATTR_INT)
            return ox_form_refuse(w, g, n, err, "its axis is not an INT attribute");
        axis = n->attrs[a].i;
        fm->skip[a] = 1;
    }
    int64_t rank = n->input_count ? ox_rank(w, g, f, n->inputs[0]) : -1;
    if (axis != -1 && !(rank >= 0 && axis == rank - 1))
        return ox_form_refuse(w, g, n, err,
                              "the meaning of its axis changed at opset 13 (before: the "
                              "input flattened to 2-D at the axis; from 13: that one axis); "
                              "the two agree only on the last axis, and this axis is not "
                              "known to be the last");
    fm->extra[fm->nextra++] = (tio_gattr){.name = "axis", .type = TIO_ATTR_INT, .i = -1};
    return TIO_OK;
}

static bool ox_has_attr(const tio_gnode *n, const char *name) {
    for (size_t a = 0; a < n->attr_count; a++)
        if (strcmp(n->attrs[a].name, name) == 0) return true;
    return false;
}

/* An elementwise node of before opset 7 with broadcast=1: whether its
 * `axis` (if any) aligns B with A's trailing dimensions, which is what
 * numpy's rules (opset 7 on) do. The ranks must be known. */
static bool ox_legacy_axis_trailing(const tio_graph *g, const tio_gnode *n) {
    const tio_gattr *ax = NULL;
    for (size_t a = 0; a < n->attr_count; a++)
        if (strcmp(n->attrs[a].name, "axis") == 0) ax = &n->attrs[a];
    if (!ax) return true;
    if (ax->type != TIO_ATTR_INT || n->input_count < 2 || n->inputs[0] < 0 || n->inputs[1] < 0)
        return false;
    int64_t ra = g->values[n->inputs[0]].rank, rb = g->values[n->inputs[1]].rank;
    int64_t axis = ax->i < 0 ? ax->i + ra : ax->i;
    return ra >= 0 && rb >= 0 && rb <= ra && axis == ra - rb;
}

/* Whether the written opset is on the other side of `at` from the source's. */
static bool ox_crosses(const ox_writer *w, int64_t at) {
    return (w->src_opset < at) != (w->opset < at);
}

/* Operators whose meaning (not only their form) changed at an opset, where
 * the node cannot just be written at the other one (the ONNX operator docs'
 * version histories):
 * - RoiAlign 16: coordinate_transformation_mode came, and its default,
 *   "half_pixel", is not what the operator did before ("output_half_pixel"):
 *   written from before 16 to 16 or later, the old meaning is spelled out; a
 *   node at the new default cannot be written before 16.
 * - BatchNormalization 14: the outputs past Y changed from the batch's mean
 *   and variance (and saved statistics) to the running ones, in training mode.
 * - Split 18: without sizes it needs num_outputs, which may leave a smaller
 *   last part (below 18 the parts are equal, one per output).
 * - Scan 9: the inputs lost their batch axis.
 * - element types an operator took only from some opset on (Add, Sub, Mul,
 *   Div on int8, uint8, int16, uint16: 14; Max, Min, Clip on integers, MaxPool
 *   on int8/uint8, Pow on integers: 12; bfloat16 anywhere: 13, in TopK and
 *   SplitToSequence: 24; tio__onnx_type_since): onnxruntime refuses them below. */
static int ox_form_meaning(ox_writer *w, const tio_graph *g, const ox_fix *f, const tio_gnode *n,
                           ox_form *fm, tio_error *err) {
    const char *op = n->op;
    /* attributes the written opset removed: left out where they mean what
     * the operator does without them (ox_drop_attr), else refused */
    for (size_t a = 0; a < n->attr_count; a++) {
        bool keep;
        int gone = tio__onnx_attr_gone(op, &n->attrs[a], &keep);
        bool legacy_axis = strcmp(n->attrs[a].name, "broadcast") == 0 &&
                           !(n->attrs[a].type == TIO_ATTR_INT && n->attrs[a].i == 0) &&
                           !ox_legacy_axis_trailing(g, n);
        if (gone && w->opset >= gone && w->src_opset < gone && (!keep || legacy_axis)) {
            char why[200];
            snprintf(why, sizeof why, "its attribute '%s'%s was removed at opset %d, and "
                     "without it the operator computes something else",
                     n->attrs[a].name, legacy_axis ? " (with 'axis')" : "", gone);
            return ox_form_refuse(w, g, n, err, why);
        }
    }
    /* GridSample 20 renamed two modes: "bilinear" and "bicubic" (16) are
     * "linear" and "cubic" from 20; "nearest" and the defaults mean the same */
    if (strcmp(op, "GridSample") == 0 && ox_crosses(w, 20)) {
        bool up = w->opset >= 20;
        for (size_t a = 0; a < n->attr_count; a++) {
            const tio_gattr *at = &n->attrs[a];
            if (strcmp(at->name, "mode") != 0 || at->type != TIO_ATTR_STRING || !at->s ||
                fm->nextra >= sizeof fm->extra / sizeof fm->extra[0])
                continue;
            char *to = NULL;
            if (up && strcmp(at->s, "bilinear") == 0) to = "linear";
            if (up && strcmp(at->s, "bicubic") == 0) to = "cubic";
            if (!up && strcmp(at->s, "linear") == 0) to = "bilinear";
            if (!up && strcmp(at->s, "cubic") == 0) to = "bicubic";
            if (!to) continue;
            fm->skip[a] = 1;
            fm->extra[fm->nextra++] = (tio_gattr){.name = "mode", .type = TIO_ATTR_STRING, .s = to};
        }
    }
    if (strcmp(op, "RoiAlign") == 0 && ox_crosses(w, 16)) {
        for (size_t a = 0; a < n->attr_count; a++)
            if (strcmp(n->attrs[a].name, "coordinate_transformation_mode") == 0)
                return TIO_OK; /* tio__onnx_attr_needs decides */
        if (w->opset < 16)
            return ox_form_refuse(w, g, n, err,
                                  "its coordinate_transformation_mode is the default of opset "
                                  "16, \"half_pixel\", which earlier opsets cannot express");
        fm->extra[fm->nextra++] = (tio_gattr){.name = "coordinate_transformation_mode",
                                              .type = TIO_ATTR_STRING,
                                              .s = "output_half_pixel"};
        return TIO_OK;
    }
    if (strcmp(op, "BatchNormalization") == 0 && ox_crosses(w, 14)) {
        for (size_t k = 1; k < n->output_count; k++)
            if (n->outputs[k] >= 0)
                return ox_form_refuse(w, g, n, err,
                                      "its outputs past Y changed meaning at opset 14 (the "
                                      "batch's statistics before, the running ones from 14)");
        return TIO_OK;
    }
    if (strcmp(op, "Split") == 0 && ox_crosses(w, 18)) {
        size_t na = n->attr_count;
        int64_t axis = 0;
        for (size_t a = 0; a < n->attr_count; a++) {
            if (strcmp(n->attrs[a].name, "num_outputs") == 0) na = a;
            if (strcmp(n->attrs[a].name, "axis") == 0) axis = n->attrs[a].i;
        }
        bool sizes = (n->input_count > 1 && n->inputs[1] >= 0) ||
                     ox_has_attr(n, "split"); /* explicit sizes: nothing changes */
        if (sizes) return TIO_OK;
        if (w->opset >= 18) { /* an equal split: 18 wants the count spelled out */
            fm->extra[fm->nextra++] = (tio_gattr){.name = "num_outputs", .type = TIO_ATTR_INT,
                                                  .i = (int64_t)n->output_count};
            return TIO_OK;
        }
        if (na == n->attr_count) return TIO_OK;
        /* below 18 a Split without sizes makes equal parts, one per output:
         * num_outputs means the same when it is that count and the axis
         * divides evenly (from 18 the last part may be smaller) */
        const tio_gvalue *x = n->input_count && n->inputs[0] >= 0 ? &g->values[n->inputs[0]] : NULL;
        int64_t k = n->attrs[na].i, rank = x ? x->rank : -1;
        if (axis < 0) axis += rank;
        int64_t dim = x && rank > 0 && axis >= 0 && axis < rank ? x->dims[axis].value : -1;
        if (k != (int64_t)n->output_count || dim < 0 || x->dims[axis].name || k <= 0 || dim % k)
            return ox_form_refuse(w, g, n, err,
                                  "num_outputs (opset 18) may leave a smaller last part, which "
                                  "earlier opsets cannot express, and the split axis is not "
                                  "known to divide evenly");
        fm->skip[na] = 1;
        return TIO_OK;
    }
    /* sequences and optionals through Identity, If and Loop: typed there
     * from 14 (Identity) or 13 (If, Loop), and from 16 for optionals */
    bool ident = strcmp(op, "Identity") == 0;
    if (ident || strcmp(op, "If") == 0 || strcmp(op, "Loop") == 0) {
        int need = 0;
        const char *what = NULL;
        for (size_t k = 0; k < n->input_count + n->output_count; k++) {
            int64_t v = k < n->input_count ? n->inputs[k] : n->outputs[k - n->input_count];
            const char *t = v >= 0 ? g->values[v].type : NULL;
            int q = !t ? 0 : strstr(t, "optional(") ? 16 : strstr(t, "seq(") ? (ident ? 14 : 13) : 0;
            if (q > need) {
                need = q;
                what = t;
            }
        }
        if (need && w->opset < need) {
            char why[200];
            snprintf(why, sizeof why, "it takes a value of type %.80s, which %s types from "
                     "opset %d", what, op, need);
            return ox_form_refuse(w, g, n, err, why);
        }
    }
    if (strcmp(op, "Scan") == 0 && ox_crosses(w, 9))
        return ox_form_refuse(w, g, n, err,
                              "Scan's inputs lost their batch axis at opset 9 (a Scan of "
                              "opset 8 is another operator)");
    /* element types the written opset does not have for the operator */
    for (size_t k = 0; k < n->input_count + n->output_count; k++) {
        bool in = k < n->input_count;
        int64_t v = in ? n->inputs[k] : n->outputs[k - n->input_count];
        tio_dtype d = v >= 0 ? ox_type_of(w, g, f, v) : TIO_DTYPE_INVALID;
        int need = d == TIO_DTYPE_INVALID ? 0
                   : in                   ? tio__onnx_type_since(op, k, d)
                   : d == TIO_BFLOAT16    ? 13
                                          : 0;
        if (need > w->opset) {
            char why[160];
            snprintf(why, sizeof why, "%s on %s came at opset %d", op, tio_dtype_name(d), need);
            return ox_form_refuse(w, g, n, err, why);
        }
    }
    return TIO_OK;
}

/* Constant's value_float(s) and value_int(s) came at opset 12: below it,
 * `value` holds them (written by ox_put_const_node's tensor). */
/* The string attribute `name` of n, or dflt. */
static const char *ox_sattr(const tio_gnode *n, const char *name, const char *dflt) {
    for (size_t a = 0; a < n->attr_count; a++)
        if (strcmp(n->attrs[a].name, name) == 0 && n->attrs[a].type == TIO_ATTR_STRING)
            return n->attrs[a].s ? n->attrs[a].s : "";
    return dflt;
}

/* Resize across its forms (the ONNX operator docs' version history):
 * - 10: inputs (X, scales); mode nearest or linear; the coordinates are
 *   what "asymmetric" says from 11, and nearest rounds down ("floor").
 * - 11: (X, roi, scales, sizes), roi and scales required (scales empty when
 *   sizes are given); coordinate_transformation_mode (default half_pixel),
 *   nearest_mode (default round_prefer_floor), cubic and extrapolation
 *   attributes.
 * - 13: roi and scales optional; "tf_half_pixel_for_nn" removed.
 * - 19: "half_pixel_symmetric" came.
 * Written at 10, a node must mean what 10 can say (asymmetric, floor for
 * nearest, scales not sizes); written from 10 at 11 or later, it says so. */
static int ox_form_resize(ox_writer *w, tio_pb_writer *pw, const tio_graph *g, const ox_fix *f,
                          const tio_gnode *n, ox_form *fm, tio_error *err) {
    const char *mode = ox_sattr(n, "mode", "nearest");
    bool nearest = strcmp(mode, "nearest") == 0;
    const char *ctm = ox_sattr(n, "coordinate_transformation_mode",
                               w->src_opset < 11 ? "asymmetric" : "half_pixel");
    if (w->src_opset >= 11 && strcmp(ctm, "tf_half_pixel_for_nn") == 0 && w->opset >= 13)
        return ox_form_refuse(w, g, n, err,
                              "coordinate_transformation_mode \"tf_half_pixel_for_nn\" was "
                              "removed at opset 13");
    if (strcmp(ctm, "half_pixel_symmetric") == 0 && w->opset < 19)
        return ox_form_refuse(w, g, n, err,
                              "coordinate_transformation_mode \"half_pixel_symmetric\" came at "
                              "opset 19");
    fm->remap = true;
    for (size_t k = 0; k < 8; k++) fm->src[k] = k < n->input_count ? (int8_t)k : -1;
    if (w->src_opset < 11 && w->opset < 11) return TIO_OK;
    if (w->src_opset < 11) { /* (X, scales) -> (X, roi, scales) */
        fm->nin = 3;
        fm->src[1] = -1;
        fm->src[2] = n->input_count > 1 ? 1 : -1;
        fm->src[3] = -1;
        fm->extra[fm->nextra++] = (tio_gattr){.name = "coordinate_transformation_mode",
                                              .type = TIO_ATTR_STRING, .s = "asymmetric"};
        if (nearest)
            fm->extra[fm->nextra++] = (tio_gattr){.name = "nearest_mode",
                                                  .type = TIO_ATTR_STRING, .s = "floor"};
    } else if (w->opset < 11) { /* (X, roi, scales, sizes) -> (X, scales) */
        char why[240];
        const char *nm = ox_sattr(n, "nearest_mode", "round_prefer_floor");
        bool sizes = n->input_count > 3 && n->inputs[3] >= 0;
        int64_t sv = n->input_count > 2 ? n->inputs[2] : -1;
        int64_t st = ox_const_tensor(g, f, sv);
        bool empty_scales = sv < 0 || (st >= 0 && tio__plan_tensor(w->plan, (size_t)st)->nbytes == 0);
        if (!nearest && strcmp(mode, "linear") != 0)
            snprintf(why, sizeof why, "mode \"%s\" came at opset 11", mode);
        else if (strcmp(ctm, "asymmetric") != 0)
            snprintf(why, sizeof why, "before opset 11 the coordinates are \"asymmetric\", not "
                     "\"%s\"", ctm);
        else if (nearest && strcmp(nm, "floor") != 0)
            snprintf(why, sizeof why, "before opset 11 nearest rounds down (\"floor\"), not "
                     "\"%s\"", nm);
        else if (sizes || empty_scales)
            snprintf(why, sizeof why, "before opset 11 the output is given by scales, not "
                     "sizes");
        else
            why[0] = 0;
        if (why[0]) return ox_form_refuse(w, g, n, err, why);
        fm->nin = 2;
        fm->src[1] = 2;
        fm->src[2] = fm->src[3] = -1;
        for (size_t a = 0; a < n->attr_count; a++)
            if (strcmp(n->attrs[a].name, "mode") != 0) fm->skip[a] = 1;
    } else if (w->opset < 13) { /* 13's absent roi/scales are empty tensors at 11 and 12 */
        for (size_t k = 1; k <= 2; k++) {
            if (k < n->input_count && n->inputs[k] >= 0) continue;
            static const char *const sfx[3] = {"", ":roi", ":scales"};
            fm->added[k] = tio__ox_cast_name(f, ox_node_label(g, n), sfx[k]);
            if (!fm->added[k]) return tio__nomem(err, OX_FMT);
            tio_gattr none = {.name = "", .type = TIO_ATTR_FLOATS};
            int rc = ox_put_const_node(pw, fm->added[k], &none, err);
            if (rc) return rc;
        }
        if (fm->nin < 3) fm->nin = 3;
    }
    if (w->src_opset < 11) {
        /* an empty roi at 11 and 12, where it is required */
        if (w->opset < 13) {
            fm->added[1] = tio__ox_cast_name(f, ox_node_label(g, n), ":roi");
            if (!fm->added[1]) return tio__nomem(err, OX_FMT);
            tio_gattr none = {.name = "", .type = TIO_ATTR_FLOATS};
            return ox_put_const_node(pw, fm->added[1], &none, err);
        }
    }
    return TIO_OK;
}

static bool ox_constant_value_attr(const tio_gattr *a) {
    return strcmp(a->name, "value_int") == 0 || strcmp(a->name, "value_ints") == 0 ||
           strcmp(a->name, "value_float") == 0 || strcmp(a->name, "value_floats") == 0;
}

int tio__ox_form_plan(ox_writer *w, tio_pb_writer *pw, const tio_graph *g, const ox_fix *f,
                        const tio_gnode *n, ox_form *fm, tio_error *err) {
    memset(fm, 0, sizeof *fm);
    fm->nin = n->input_count;
    fm->skip = calloc(n->attr_count ? n->attr_count : 1, 1);
    if (!fm->skip) return tio__nomem(err, OX_FMT);
    if (!w->retarget || !tio__ox_default_domain(n)) return TIO_OK;
    int mrc = ox_form_meaning(w, g, f, n, fm, err);
    if (mrc) return mrc;
    if (tio__onnx_axis_changed_at_13(n->op) && (w->src_opset < 13) != (w->opset < 13))
        return ox_form_axis(w, g, f, n, fm, err);
    if (strcmp(n->op, "Resize") == 0 && (ox_crosses(w, 11) || ox_crosses(w, 13) ||
                                         ox_crosses(w, 19)))
        return ox_form_resize(w, pw, g, f, n, fm, err);
    size_t nf;
    const tio_onnx_form *forms = tio__onnx_forms(n->op, &nf);
    char why[400];
    for (size_t i = 0; i < nf; i++) {
        const tio_onnx_form *e = &forms[i];
        bool want_input = w->opset >= e->since;
        int64_t v = e->input < n->input_count ? n->inputs[e->input] : -1;
        size_t ai = n->attr_count;
        for (size_t a = 0; e->attr && a < n->attr_count; a++)
            if (strcmp(n->attrs[a].name, e->attr) == 0) ai = a;
        if (ai < n->attr_count && v >= 0) {
            snprintf(why, sizeof why, "'%s' is both an attribute and input %u", e->attr,
                     e->input);
            return ox_form_refuse(w, g, n, err, why);
        }
        if (want_input && ai < n->attr_count) {
            /* the attribute becomes a Constant node's output */
            const tio_gattr *a = &n->attrs[ai];
            if (a->type != e->type && !(e->type == TIO_ATTR_INTS && a->type == TIO_ATTR_INT))
                return ox_form_refuse(w, g, n, err, "an attribute of an unexpected type");
            int64_t x = n->input_count && n->inputs[0] >= 0 ? n->inputs[0] : -1;
            if (e->type == TIO_ATTR_FLOAT && strcmp(n->op, "Dropout") != 0 &&
                ox_type_of(w, g, f, x) != TIO_FLOAT32) {
                snprintf(why, sizeof why,
                         "'%s' becomes an input of the input's type, which is not known to "
                         "be float32",
                         e->attr);
                return ox_form_refuse(w, g, n, err, why);
            }
            char suffix[64];
            snprintf(suffix, sizeof suffix, ":%s", e->attr);
            fm->added[e->input] = tio__ox_cast_name(f, ox_node_label(g, n), suffix);
            if (!fm->added[e->input]) return tio__nomem(err, OX_FMT);
            tio_gattr as = *a;
            if (a->type == TIO_ATTR_INT && e->type == TIO_ATTR_INTS) {
                as.type = TIO_ATTR_INTS;
                as.ints = &as.i;
                as.count = 1;
            }
            int rc = ox_put_const_node(pw, fm->added[e->input], &as, err);
            if (rc) return rc;
            fm->skip[ai] = 1;
            if (e->input + 1 > fm->nin) fm->nin = e->input + 1;
        } else if (!want_input && v >= 0) {
            if (!e->attr && e->dflt == TIO__ONNX_NO_DFLT) {
                snprintf(why, sizeof why, "input %u ('%.100s') exists from opset %d only",
                         e->input, g->values[v].name ? g->values[v].name : "", e->since);
                return ox_form_refuse(w, g, n, err, why);
            }
            /* the input becomes an attribute: it must be a constant */
            int64_t t = ox_const_tensor(g, f, v);
            if (t < 0) {
                snprintf(why, sizeof why,
                         "input %u ('%.100s') is %s before opset %d, but it is computed at "
                         "run time",
                         e->input, g->values[v].name ? g->values[v].name : "",
                         e->attr ? "an attribute" : "absent", e->since);
                return ox_form_refuse(w, g, n, err, why);
            }
            snprintf(why, sizeof why, "node '%s' (%s) at opset %lld, input %u",
                     ox_node_label(g, n), n->op, (long long)w->opset, e->input);
            tio_gattr a = {.name = (char *)(e->attr ? e->attr : ""), .type = e->type};
            int rc = ox_const_attr(w, t, &a, why, err);
            bool dflt = true;
            for (size_t k = 0; !rc && !e->attr && k < a.count; k++)
                dflt &= a.type == TIO_ATTR_INTS ? a.ints[k] == e->dflt : a.i == e->dflt;
            if (!rc && e->attr) fm->extra[fm->nextra++] = a;
            else {
                free(a.ints);
                free(a.floats);
            }
            if (rc) return rc;
            if (!dflt) {
                snprintf(why, sizeof why, "input %u exists from opset %d only (here not at "
                         "its default, %lld)", e->input, e->since, (long long)e->dflt);
                return ox_form_refuse(w, g, n, err, why);
            }
            fm->cut[e->input] = 1;
        }
    }
    if (strcmp(n->op, "Constant") == 0 && w->opset < 12)
        for (size_t a = 0; a < n->attr_count; a++)
            if (ox_constant_value_attr(&n->attrs[a]))
                return ox_form_refuse(w, g, n, err,
                                      "value_int(s) and value_float(s) came at opset 12");
    /* what is cut must be the tail */
    while (fm->nin && fm->nin <= 8 && fm->cut[fm->nin - 1]) fm->nin--;
    for (size_t k = 0; k < fm->nin && k < 8; k++)
        if (fm->cut[k]) return ox_form_refuse(w, g, n, err, "inputs in an unexpected order");
    return TIO_OK;
}

/* Whether input k of n is written as an attribute (ox_form_plan's forms
 * loop: an input the written opset does not have yet). */
static bool ox_input_cut(const ox_writer *w, const tio_gnode *n, size_t k) {
    if (!w->retarget || !tio__ox_default_domain(n)) return false;
    if (tio__onnx_axis_changed_at_13(n->op) && ox_crosses(w, 13)) return false;
    if (strcmp(n->op, "Resize") == 0) /* roi is not written before 11 (ox_form_resize) */
        return k == 1 && w->opset < 11 && w->src_opset >= 11;
    size_t nf;
    const tio_onnx_form *forms = tio__onnx_forms(n->op, &nf);
    for (size_t i = 0; i < nf; i++)
        if (forms[i].input == k && w->opset < forms[i].since) return true;
    return false;
}

/* Constant nodes that a conversion leaves unused: every use of the output
 * becomes an attribute (Split's `split`, ReduceSum's `axes` ... taken down
 * below the opset that made them inputs). Not written, and their output gets
 * no value_info. A Constant that nothing used in the source is kept (the
 * model as it was), and none is dropped from a graph with subgraphs, which
 * may use any outer value by name. */
int tio__ox_plan_drops(const ox_writer *w, const tio_graph *g, ox_fix *f, tio_error *err) {
    if (!w->retarget) return TIO_OK;
    for (size_t j = 0; j < g->node_count; j++)
        for (size_t a = 0; a < g->nodes[j].attr_count; a++)
            if (g->nodes[j].attrs[a].type == TIO_ATTR_GRAPH ||
                g->nodes[j].attrs[a].type == TIO_ATTR_GRAPHS)
                return TIO_OK;
    size_t nv = g->value_count ? g->value_count : 1;
    uint32_t *uses = calloc(nv, sizeof *uses), *cut = calloc(nv, sizeof *cut);
    if (!uses || !cut) {
        free(uses);
        free(cut);
        return tio__nomem(err, OX_FMT);
    }
    for (size_t j = 0; j < g->node_count; j++)
        for (size_t k = 0; k < g->nodes[j].input_count; k++) {
            int64_t v = g->nodes[j].inputs[k];
            if (v < 0) continue;
            if (uses[v] < UINT32_MAX) uses[v]++;
            if (cut[v] < UINT32_MAX && ox_input_cut(w, &g->nodes[j], k)) cut[v]++;
        }
    for (size_t i = 0; i < g->output_count; i++) uses[g->outputs[i]] = UINT32_MAX;
    int rc = TIO_OK;
    for (size_t j = 0; j < g->node_count && !rc; j++) {
        const tio_gnode *n = &g->nodes[j];
        if (!tio__ox_default_domain(n) || strcmp(n->op, "Constant") != 0 || n->output_count != 1 ||
            n->outputs[0] < 0)
            continue;
        int64_t v = n->outputs[0];
        if (!uses[v] || uses[v] == UINT32_MAX || cut[v] != uses[v]) continue;
        if (!f->drop && !(f->drop = calloc(g->node_count, 1))) {
            rc = tio__nomem(err, OX_FMT);
            break;
        }
        f->drop[j] = 1;
        f->nohint[v] = 1;
    }
    free(uses);
    free(cut);
    return rc;
}

