/*
 * Tengine tmfile: the operators of graphs from other formats (ONNX names and
 * semantics, after tmfile/prep.c) lowered to Tengine's operators and param
 * structs, as convert_tool's ONNX front end (onnx2tengine.cpp) maps them.
 * See docs/formats/tmfile.md, "ONNX -> tmfile".
 */
#include "tmfile/write.h"

#include <stdlib.h>
#include <string.h>

/* --- operators of graphs from other formats (ONNX names) */

static const tio_gvalue *tw_in_value(const tw *w, const tio_gnode *gn, size_t k) {
    return k < gn->input_count && gn->inputs[k] >= 0 ? &w->g->values[gn->inputs[k]] : NULL;
}

static int tw_ints2(const tio_gattr *a, tw_lb *lbl, size_t want, int64_t *out,
                    tio_error *err) {
    if (a->type != TIO_ATTR_INTS || a->count != want)
        return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                        "%s: attribute '%s' needs %zu integers (tmfile operators are 2-D)",
                        tw_lb_text(lbl), a->name, want);
    for (size_t k = 0; k < want; k++) {
        if (a->ints[k] < INT32_MIN || a->ints[k] > INT32_MAX)
            return tio__err(err, TIO_E_LOSSY, TM_FMT, -1, "%s: attribute '%s' does not fit int32",
                            tw_lb_text(lbl), a->name);
        out[k] = a->ints[k];
    }
    return TIO_OK;
}

static int tw_int_attr(const tio_gattr *a, tw_lb *lbl, int64_t *out, tio_error *err) {
    if (a->type != TIO_ATTR_INT || a->i < INT32_MIN || a->i > INT32_MAX)
        return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                        "%s: attribute '%s' must be an INT that fits int32", tw_lb_text(lbl),
                        a->name);
    *out = a->i;
    return TIO_OK;
}
static int tw_float_attr(const tio_gattr *a, tw_lb *lbl, double *out, tio_error *err) {
    if (a->type == TIO_ATTR_FLOAT) *out = a->f;
    else if (a->type == TIO_ATTR_INT) *out = (double)a->i;
    else
        return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1, "%s: attribute '%s' must be a FLOAT",
                        tw_lb_text(lbl), a->name);
    return TIO_OK;
}

/* auto_pad: rten's AutoPad enum (0 Same, 1 NotSet) or ONNX's strings. 1 = SAME_UPPER. */
static int tw_auto_pad(const tio_gattr *a, tw_lb *lbl, int *same, tio_error *err) {
    *same = 0;
    if (!a) return TIO_OK;
    if (a->type == TIO_ATTR_INT && (a->i == 0 || a->i == 1)) {
        *same = a->i == 0;
        return TIO_OK;
    }
    if (a->type == TIO_ATTR_STRING) {
        if (strcmp(a->s, "NOTSET") == 0 || strcmp(a->s, "VALID") == 0) return TIO_OK;
        if (strcmp(a->s, "SAME_UPPER") == 0) {
            *same = 1;
            return TIO_OK;
        }
    }
    return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                    "%s: auto_pad value not supported by tmfile (Same/SAME_UPPER, NotSet, VALID)",
                    tw_lb_text(lbl));
}

/* Squeeze's and Reduction's four dim fields */
static const char *const tw_dims[4] = {"dim_0", "dim_1", "dim_2", "dim_3"};

/* tw_foreign2's "not mine" */
#define TW_NO_OP 1000

/* n->own with room for cnt values (freed with the node). */
static int64_t *tw_own(tw_node *n, size_t cnt, tio_error *err) {
    free(n->own);
    n->own = malloc((cnt ? cnt : 1) * sizeof *n->own);
    if (!n->own) tio__nomem(err, TM_FMT);
    return n->own;
}

/* An INTS attribute of at most max values that fit int32. */
static int tw_ints_attr(const tio_gattr *a, tw_lb *lbl, size_t max, tio_error *err) {
    if (a->type != TIO_ATTR_INTS || a->count > max)
        return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                        "%s: attribute '%s' must hold at most %zu integers", tw_lb_text(lbl),
                        a->name, max);
    for (size_t k = 0; k < a->count; k++)
        if (a->ints[k] < INT32_MIN || a->ints[k] > INT32_MAX)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: %s[%zu] does not fit int32", tw_lb_text(lbl), a->name, k);
    return TIO_OK;
}

/* The operators whose constant inputs the prep made attributes (Clip, Slice,
 * Pad, Unsqueeze, Squeeze, Reduce*), and Gelu. TW_NO_OP when op is none of
 * them. */
static int tw_foreign2(tw *w, tw_node *n, tw_lb *lbl, uint8_t *used, tio_error *err) {
    const tio_gnode *gn = n->gn;
    const char *op = gn->op;
    const tio_gattr *a;
    int rc = TIO_OK;
    if (strcmp(op, "Gelu") == 0 && gn->input_count == 1) {
        tw_use_op(w, n, tio__tmfile_find_op("Gelu"));
        return TIO_OK;
    }
    if (strcmp(op, "HardSwish") == 0 && gn->input_count == 1) {
        /* Tengine's kernel computes x * clamp(x + 3, 0, 6) / 6, ONNX's
         * HardSwish; the param keeps Tengine's defaults */
        tw_use_op(w, n, tio__tmfile_find_op("HardSwish"));
        tw_set_f(n, "alpha", 1.0);
        tw_set_f(n, "beta", 0.0);
        return TIO_OK;
    }
    if (strcmp(op, "Clip") == 0) {
        double mn = -3.402823466e38, mx = 3.402823466e38;
        if (gn->input_count != 1)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: tmfile's Clip keeps min and max as params, and they are not "
                            "constants here",
                            tw_lb_text(lbl));
        if ((a = tw_attr(gn, "min", used)) != NULL) rc = tw_float_attr(a, lbl, &mn, err);
        if (!rc && (a = tw_attr(gn, "max", used)) != NULL) rc = tw_float_attr(a, lbl, &mx, err);
        tw_use_op(w, n, tio__tmfile_find_op("Clip"));
        tw_set_f(n, "min", mn);
        tw_set_f(n, "max", mx);
        return rc;
    }
    if (strcmp(op, "Slice") == 0) {
        const tio_gattr *at[4];
        static const char *const nm[4] = {"starts", "ends", "axes", "steps"};
        int64_t v[4] = {0, -1, 0, 1};
        for (int k = 0; k < 4; k++) {
            at[k] = tw_attr(gn, nm[k], used);
            if (at[k] && (at[k]->type != TIO_ATTR_INTS || at[k]->count != 1))
                return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                "%s: tmfile's Slice cuts one axis, and '%s' does not give "
                                "one Slice per axis (starts, ends and, when given, axes and "
                                "steps of one length, distinct axes)",
                                tw_lb_text(lbl), nm[k]);
            if (at[k]) v[k] = at[k]->ints[0];
        }
        if (gn->input_count != 1 || !at[0] || !at[1])
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: tmfile's Slice keeps starts and ends as params, and they are "
                            "not constants here",
                            tw_lb_text(lbl));
        /* as convert_tool: an end past int32 is INT32_MAX */
        if (v[1] > INT32_MAX) v[1] = INT32_MAX;
        if (v[1] < INT32_MIN) v[1] = INT32_MIN;
        if (v[0] < INT32_MIN || v[0] > INT32_MAX || v[2] < INT32_MIN || v[2] > INT32_MAX ||
            v[3] < 1 || v[3] > INT32_MAX)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: start, axis or step out of tmfile's range (steps >= 1)",
                            tw_lb_text(lbl));
        tw_use_op(w, n, tio__tmfile_find_op("Slice"));
        tw_set_i(n, "axis", v[2]);
        tw_set_i(n, "iscaffe", 0);
        tw_set_i(n, "ismxnet", 0);
        tw_set_i(n, "isonnx", 1);
        tw_set_i(n, "begin", v[0]);
        tw_set_i(n, "end", v[1]);
        tw_set_i(n, "step", v[3]);
        return TIO_OK;
    }
    if (strcmp(op, "Pad") == 0) {
        static const char *const f[8] = {"pad_n_0", "pad_c_0", "pad_h_0", "pad_w_0",
                                         "pad_n_1", "pad_c_1", "pad_h_1", "pad_w_1"};
        int64_t mode = 0;
        double val = 0;
        a = tw_attr(gn, "pads", used);
        if (gn->input_count != 1 || !a || a->type != TIO_ATTR_INTS || a->count != 8)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: tmfile's Pad takes 8 constant pads (a 4-D input)",
                            tw_lb_text(lbl));
        if ((rc = tw_ints_attr(a, lbl, 8, err))) return rc;
        for (size_t k = 0; k < 8; k++)
            if (a->ints[k] < 0)
                return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                "%s: pads[%zu] = %lld: tmfile's Pad cannot crop (its pads are "
                                ">= 0)",
                                tw_lb_text(lbl), k, (long long)a->ints[k]);
        const tio_gattr *pads = a;
        if ((a = tw_attr(gn, "mode", used)) != NULL) {
            if (a->type == TIO_ATTR_STRING && strcmp(a->s, "edge") == 0) mode = 1;
            else if (a->type == TIO_ATTR_STRING && strcmp(a->s, "reflect") == 0) mode = 2;
            else if (!(a->type == TIO_ATTR_STRING && strcmp(a->s, "constant") == 0))
                return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                "%s: Pad mode must be constant, edge or reflect",
                                tw_lb_text(lbl));
        }
        if ((a = tw_attr(gn, "value", used)) != NULL) rc = tw_float_attr(a, lbl, &val, err);
        tw_use_op(w, n, tio__tmfile_find_op("Pad"));
        for (int k = 0; k < 8; k++) tw_set_i(n, f[k], pads->ints[k]);
        tw_set_i(n, "mode", mode);
        tw_set_f(n, "value", val);
        return rc;
    }
    bool unsq = strcmp(op, "Unsqueeze") == 0, sq = strcmp(op, "Squeeze") == 0;
    if ((unsq || sq) && gn->input_count == 1) {
        a = tw_attr(gn, "axes", used);
        if (!a || (rc = tw_ints_attr(a, lbl, TM_MAX_DIMS, err)))
            return rc ? rc
                      : tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                 "%s: tmfile's %s needs constant axes", tw_lb_text(lbl), op);
        int64_t *ax = tw_own(n, a->count, err);
        if (!ax) return TIO_E_NOMEM;
        for (size_t k = 0; k < a->count; k++) ax[k] = a->ints[k];
        for (size_t k = 1; k < a->count; k++) /* sorted, as convert_tool stores them */
            for (size_t q = k; q > 0 && ax[q - 1] > ax[q]; q--) {
                int64_t t = ax[q];
                ax[q] = ax[q - 1];
                ax[q - 1] = t;
            }
        if (unsq) {
            tw_use_op(w, n, tio__tmfile_find_op("Unsqueeze"));
            tw_set_ints(n, "axises", ax, a->count);
            return TIO_OK;
        }
        tw_use_op(w, n, tio__tmfile_find_op("Squeeze"));
        for (size_t k = 0; k < a->count; k++) {
            if (ax[k] < 0 || ax[k] > 3)
                return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                "%s: tmfile's Squeeze takes axes 0..3", tw_lb_text(lbl));
            tw_set_i(n, tw_dims[ax[k]], 1);
        }
        return TIO_OK;
    }
    static const struct {
        const char *onnx;
        int type;
    } red[] = {{"ReduceSum", 0},  {"ReduceMean", 1},      {"ReduceSumSquare", 3},
               {"ReduceMax", 4},  {"ReduceMin", 5},       {"ReduceProd", 6},
               {"ReduceLogSum", 9}, {"ReduceLogSumExp", 10}};
    for (size_t r = 0; r < sizeof red / sizeof red[0]; r++) {
        if (strcmp(op, red[r].onnx) != 0 || gn->input_count != 1) continue;
        int64_t keep = 1, rank = -1, dims[4] = {-2, -2, -2, -2};
        if ((a = tw_attr(gn, "keepdims", used)) != NULL) rc = tw_int_attr(a, lbl, &keep, err);
        if (!rc && (a = tw_attr(gn, "tmfile.rank", used)) != NULL) rc = tw_int_attr(a, lbl, &rank, err);
        if (!rc && (a = tw_attr(gn, "noop_with_empty_axes", used)) != NULL &&
            !(a->type == TIO_ATTR_INT && a->i == 0))
            rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                          "%s: tmfile's Reduction has no noop_with_empty_axes", tw_lb_text(lbl));
        if (rc) return rc;
        if ((a = tw_attr(gn, "axes", used)) != NULL) {
            if ((rc = tw_ints_attr(a, lbl, 4, err))) return rc;
            for (size_t k = 0; k < a->count; k++) {
                int64_t q = a->ints[k] < 0 && rank > 0 ? a->ints[k] + rank : a->ints[k];
                if (q < 0)
                    return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                    "%s: a negative axis needs the input's rank, which is "
                                    "unknown",
                                    tw_lb_text(lbl));
                dims[k] = q;
            }
        }
        tw_use_op(w, n, tio__tmfile_find_op("Reduction"));
        for (int k = 0; k < 4; k++) tw_set_i(n, tw_dims[k], dims[k]);
        tw_set_i(n, "type", red[r].type);
        tw_set_i(n, "keepdim", keep);
        return TIO_OK;
    }
    return TW_NO_OP;
}

int tw_foreign(tw *w, tw_node *n, tw_lb *lbl, uint8_t *used, tio_error *err) {
    const tio_gnode *gn = n->gn;
    const char *op = gn->op;
    const tio_gattr *a;
    int rc = TIO_OK;
    int64_t two[4];
    double f;
    static const struct {
        const char *onnx;
        int idx;
    } simple[] = {{"Sigmoid", 37}, {"Tanh", 36}, {"MatMul", OP_MATMUL}, {"Dropout", 8},
                  {"PRelu", 17},   {"Abs", 68},  {"Ceil", 83},          {"Round", 85},
                  {"Mish", 97},    {"Softplus", 102}, {"Reciprocal", 103}, {"Shape", 94},
                  {"Where", 95},   {"Const", OP_CONST}, {"InputOp", OP_INPUT}};
    for (size_t k = 0; k < sizeof simple / sizeof simple[0]; k++)
        if (strcmp(op, simple[k].onnx) == 0) {
            tw_use_op(w, n, simple[k].idx);
            return TIO_OK;
        }
    static const struct {
        const char *onnx;
        int type;
        size_t nin;
    } elt[] = {{"Mul", 0, 2},  {"Add", 2, 2},  {"Sub", 4, 2},   {"Max", 6, 2},  {"Div", 10, 2},
               {"Log", 11, 1}, {"Exp", 12, 1}, {"Sqrt", 13, 1}, {"Floor", 14, 1}, {"Pow", 16, 2}};
    for (size_t k = 0; k < sizeof elt / sizeof elt[0]; k++)
        if (strcmp(op, elt[k].onnx) == 0) {
            if (gn->input_count != elt[k].nin)
                return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                "%s: tmfile's Eltwise %s takes %zu inputs, the node has %zu",
                                tw_lb_text(lbl), tio__tmfile_eltwise_names[elt[k].type], elt[k].nin,
                                gn->input_count);
            tw_use_op(w, n, OP_ELTWISE);
            tw_set_i(n, "type", elt[k].type);
            return TIO_OK;
        }
    if (strcmp(op, "Relu") == 0 || strcmp(op, "LeakyRelu") == 0) {
        tw_use_op(w, n, OP_RELU);
        f = op[0] == 'L' ? 0.01 : 0.0;
        if (op[0] == 'L' && (a = tw_attr(gn, "alpha", used)) != NULL)
            rc = tw_float_attr(a, lbl, &f, err);
        tw_set_f(n, "negative_slope", f);
        return rc;
    }
    if (strcmp(op, "Softmax") == 0 || strcmp(op, "LogSoftmax") == 0 ||
        strcmp(op, "Concat") == 0) {
        tw_use_op(w, n, op[0] == 'S' ? 28 : op[0] == 'L' ? 99 : 3);
        int64_t axis = op[0] == 'C' ? 0 : -1;
        if ((a = tw_attr(gn, "axis", used)) != NULL) rc = tw_int_attr(a, lbl, &axis, err);
        tw_set_i(n, "axis", axis);
        return rc;
    }
    if (strcmp(op, "Flatten") == 0) {
        tw_use_op(w, n, OP_FLATTEN);
        int64_t axis = 1;
        if ((a = tw_attr(gn, "axis", used)) != NULL) rc = tw_int_attr(a, lbl, &axis, err);
        if (rc) return rc;
        const tio_gvalue *x = tw_in_value(w, gn, 0);
        int64_t end = x && x->rank >= 1 ? x->rank - 1 : -1;
        /* the prep's inferred rank (tmfile/prep.c) */
        if ((a = tw_attr(gn, "tmfile.end_axis", used)) != NULL && a->type == TIO_ATTR_INT)
            end = a->i;
        if (end < 0)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: tmfile's Flatten needs end_axis, and the input's rank is unknown",
                            tw_lb_text(lbl));
        if (axis < 0) axis += end + 1;
        tw_set_i(n, "axis", axis);
        tw_set_i(n, "end_axis", end);
        return TIO_OK;
    }
    if (strcmp(op, "Gemm") == 0) {
        tw_use_op(w, n, 31);
        double al = 1.0, be = 1.0;
        int64_t ta = 0, tb = 0;
        if ((a = tw_attr(gn, "alpha", used)) != NULL) rc = tw_float_attr(a, lbl, &al, err);
        if (!rc && (a = tw_attr(gn, "beta", used)) != NULL) rc = tw_float_attr(a, lbl, &be, err);
        if (!rc && ((a = tw_attr(gn, "transpose_a", used)) != NULL ||
                    (a = tw_attr(gn, "transA", used)) != NULL))
            rc = tw_int_attr(a, lbl, &ta, err);
        if (!rc && ((a = tw_attr(gn, "transpose_b", used)) != NULL ||
                    (a = tw_attr(gn, "transB", used)) != NULL))
            rc = tw_int_attr(a, lbl, &tb, err);
        if (rc) return rc;
        /* Tengine-lite has no kernel for its Gemm: the plain form
         * (y = x W^T + b, W [N, K] of known shape) is a FullyConnected, as
         * convert_tool writes it. Anything else stays a TM2 Gemm. */
        const tio_gvalue *wv = tw_in_value(w, gn, 1);
        if (ta == 0 && tb == 1 && al == 1.0 && be == 1.0 && wv && wv->rank == 2 &&
            wv->dims[0].value >= 0 && wv->dims[0].value <= INT32_MAX &&
            (gn->input_count == 2 || gn->input_count == 3)) {
            tw_use_op(w, n, 11);
            tw_set_i(n, "num_output", wv->dims[0].value);
            return TIO_OK;
        }
        tw_set_f(n, "alpha", al);
        tw_set_f(n, "beta", be);
        tw_set_i(n, "transA", ta);
        tw_set_i(n, "transB", tb);
        return TIO_OK;
    }
    if (strcmp(op, "BatchNormalization") == 0 || strcmp(op, "InstanceNormalization") == 0) {
        tw_use_op(w, n, op[0] == 'B' ? 1 : 66);
        f = 1e-5;
        if ((a = tw_attr(gn, "epsilon", used)) != NULL) rc = tw_float_attr(a, lbl, &f, err);
        (void)tw_attr(gn, "momentum", used); /* training only */
        tw_set_f(n, "eps", (double)(float)f);
        if (op[0] == 'B') {
            tw_set_f(n, "rescale_factor", 1.0);
            tw_set_i(n, "caffe_flavor", 0);
        }
        return rc;
    }
    if (strcmp(op, "HardSigmoid") == 0 || strcmp(op, "Elu") == 0) {
        bool hs = op[0] == 'H';
        tw_use_op(w, n, hs ? 64 : 73);
        double al = hs ? 0.2 : 1.0, be = 0.5;
        if ((a = tw_attr(gn, "alpha", used)) != NULL) rc = tw_float_attr(a, lbl, &al, err);
        if (!rc && hs && (a = tw_attr(gn, "beta", used)) != NULL)
            rc = tw_float_attr(a, lbl, &be, err);
        tw_set_f(n, "alpha", al);
        if (hs) tw_set_f(n, "beta", be);
        return rc;
    }
    if (strcmp(op, "Transpose") == 0) {
        tw_use_op(w, n, 77);
        if ((a = tw_attr(gn, "perm", used)) != NULL) {
            if (a->type != TIO_ATTR_INTS)
                return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                "%s: attribute 'perm' must be INTS", tw_lb_text(lbl));
            for (size_t k = 0; k < a->count; k++)
                if (a->ints[k] < 0 || a->ints[k] > INT32_MAX)
                    return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                    "%s: perm[%zu] is out of range", tw_lb_text(lbl), k);
            tw_set_ints(n, "tr_shape", a->ints, a->count);
        }
        return TIO_OK;
    }
    if (strcmp(op, "Reshape") == 0) {
        tw_use_op(w, n, OP_RESHAPE);
        if (tw_field(n, "re_shape") < 0)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: op_ver %u selects the old C++ TM2_ReshapeParam_V1, which tensio "
                            "does not write for a graph from another format",
                            tw_lb_text(lbl), n->op_ver);
        if (((a = tw_attr(gn, "allow_zero", used)) != NULL ||
             (a = tw_attr(gn, "allowzero", used)) != NULL) &&
            !(a->type == TIO_ATTR_INT && a->i == 0))
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: tmfile's Reshape has no allow_zero", tw_lb_text(lbl));
        if ((a = tw_attr(gn, "tmfile.re_shape", used)) != NULL) {
            /* the shape's values (the prep narrowed the constant as convert_tool does) */
            if (a->type != TIO_ATTR_INTS || a->count > TM_MAX_DIMS)
                return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                "%s: tmfile.re_shape must hold at most %u integers",
                                tw_lb_text(lbl), TM_MAX_DIMS);
            tw_set_i(n, "is_mxnet", 0);
            tw_set_i(n, "reverse", 0);
            if (a->count) tw_set_ints(n, "re_shape", a->ints, a->count);
            tw_set_i(n, "is_onnx", 1);
            return TIO_OK;
        }
        const tio_gvalue *sv = tw_in_value(w, gn, 1);
        if (!sv || sv->tensor < 0)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: tmfile's Reshape stores its shape as a param, and the shape "
                            "input is not a constant",
                            tw_lb_text(lbl));
        const tio_tensor *st = tw_ctensor(w, sv->tensor);
        if ((st->dtype != TIO_INT32 && st->dtype != TIO_INT64) || st->numel > TM_MAX_DIMS ||
            st->layout != TIO_LAYOUT_DENSE)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: the shape constant must hold at most %u int32/int64 values",
                            tw_lb_text(lbl), TM_MAX_DIMS);
        n->own = malloc(TM_MAX_DIMS * sizeof *n->own);
        if (!n->own) return tio__nomem(err, TM_FMT);
        for (size_t k = 0; k < st->numel; k++) {
            int64_t v = st->dtype == TIO_INT32 ? (int32_t)tio__ld32(st->data + 4 * k)
                                               : (int64_t)tio__ld64(st->data + 8 * k);
            if (v < INT32_MIN || v > INT32_MAX)
                return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                "%s: shape[%zu] does not fit int32", tw_lb_text(lbl), k);
            n->own[k] = v;
        }
        tw_set_i(n, "is_mxnet", 0);
        tw_set_i(n, "reverse", 0);
        if (st->numel) tw_set_ints(n, "re_shape", n->own, (size_t)st->numel);
        tw_set_i(n, "is_onnx", 1);
        return TIO_OK;
    }
    if (strcmp(op, "Conv") == 0) {
        tw_use_op(w, n, OP_CONV);
        const tio_gvalue *wv = tw_in_value(w, gn, 1);
        int64_t kd[4];
        if (!wv || wv->rank != 4)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: tmfile's Convolution needs a rank-4 weight of known shape",
                            tw_lb_text(lbl));
        for (int k = 0; k < 4; k++) {
            kd[k] = wv->dims[k].value;
            if (kd[k] < 0 || kd[k] > INT32_MAX)
                return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                "%s: the weight's dim %d is unknown or too large", tw_lb_text(lbl),
                                k);
        }
        int64_t group = 1, st[2] = {1, 1}, dl[2] = {1, 1}, pads[4] = {0, 0, 0, 0};
        if ((a = tw_attr(gn, "groups", used)) != NULL || (a = tw_attr(gn, "group", used)) != NULL)
            rc = tw_int_attr(a, lbl, &group, err);
        if (!rc && (a = tw_attr(gn, "strides", used)) != NULL) rc = tw_ints2(a, lbl, 2, st, err);
        if (!rc && (a = tw_attr(gn, "dilations", used)) != NULL) rc = tw_ints2(a, lbl, 2, dl, err);
        if (!rc && (a = tw_attr(gn, "pads", used)) != NULL) rc = tw_ints2(a, lbl, 4, pads, err);
        if (!rc && (a = tw_attr(gn, "kernel_shape", used)) != NULL) {
            rc = tw_ints2(a, lbl, 2, two, err);
            if (!rc && (two[0] != kd[2] || two[1] != kd[3]))
                rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                              "%s: kernel_shape disagrees with the weight's shape",
                              tw_lb_text(lbl));
        }
        int same = 0;
        int64_t act = -1; /* a fused Relu (0) or Clip(0, 6) (6): tmfile/prep.c */
        if (!rc && (a = tw_attr(gn, "tmfile.activation", used)) != NULL)
            rc = tw_int_attr(a, lbl, &act, err);
        if (!rc) rc = tw_auto_pad(tw_attr(gn, "auto_pad", used), lbl, &same, err);
        if (rc) return rc;
        if (same) pads[0] = pads[1] = pads[2] = pads[3] = -1;
        if (group < 1 || kd[1] * group > INT32_MAX)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1, "%s: group %lld is invalid",
                            tw_lb_text(lbl), (long long)group);
        tw_set_i(n, "kernel_h", kd[2]);
        tw_set_i(n, "kernel_w", kd[3]);
        tw_set_i(n, "stride_h", st[0]);
        tw_set_i(n, "stride_w", st[1]);
        tw_set_i(n, "dilation_h", dl[0]);
        tw_set_i(n, "dilation_w", dl[1]);
        tw_set_i(n, "input_channel", kd[1] * group);
        tw_set_i(n, "output_channel", kd[0]);
        tw_set_i(n, "group", group);
        tw_set_i(n, "activation", act);
        tw_set_i(n, "pad_h0", pads[0]);
        tw_set_i(n, "pad_w0", pads[1]);
        tw_set_i(n, "pad_h1", pads[2]);
        tw_set_i(n, "pad_w1", pads[3]);
        return TIO_OK;
    }
    bool gmax = strcmp(op, "GlobalMaxPool") == 0, gavg = strcmp(op, "GlobalAveragePool") == 0;
    bool mp = strcmp(op, "MaxPool") == 0, ap = strcmp(op, "AveragePool") == 0;
    if (gmax || gavg || mp || ap) {
        tw_use_op(w, n, OP_POOL);
        int64_t k2[2] = {0, 0}, st[2] = {1, 1}, pads[4] = {0, 0, 0, 0}, caffe = -1;
        if (mp || ap) {
            if ((a = tw_attr(gn, "kernel_size", used)) != NULL ||
                (a = tw_attr(gn, "kernel_shape", used)) != NULL)
                rc = tw_ints2(a, lbl, 2, k2, err);
            else
                rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1, "%s: the kernel size is missing",
                              tw_lb_text(lbl));
            if (!rc && (a = tw_attr(gn, "strides", used)) != NULL)
                rc = tw_ints2(a, lbl, 2, st, err);
            if (!rc && (a = tw_attr(gn, "pads", used)) != NULL) rc = tw_ints2(a, lbl, 4, pads, err);
            int same = 0;
            if (!rc) rc = tw_auto_pad(tw_attr(gn, "auto_pad", used), lbl, &same, err);
            if (!rc && same)
                rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                              "%s: tmfile's Pooling has no automatic (Same) padding",
                              tw_lb_text(lbl));
            if (!rc && (a = tw_attr(gn, "tmfile.caffe_flavor", used)) != NULL)
                rc = tw_int_attr(a, lbl, &caffe, err);
            if (!rc && (a = tw_attr(gn, "ceil_mode", used)) != NULL &&
                !(a->type == TIO_ATTR_INT && a->i == 0))
                rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                              "%s: ceil_mode = 1 changes the output size here, and Tengine's "
                              "Pooling rounds up only for a MaxPool with symmetric pads of an "
                              "input of known shape",
                              tw_lb_text(lbl));
            if (!rc && (a = tw_attr(gn, "count_include_pad", used)) != NULL &&
                !(a->type == TIO_ATTR_INT && a->i == 0))
                rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                              "%s: count_include_pad = 1 is not supported by tmfile's Pooling",
                              tw_lb_text(lbl));
            if (rc) return rc;
        }
        if (gmax || gavg) /* convert_tool's values; Tengine takes the window from the input */
            k2[0] = k2[1] = tio__tmfile_global_field("kernel_h");
        tw_set_i(n, "alg", (gmax || mp) ? 0 : 1);
        tw_set_i(n, "kernel_h", k2[0]);
        tw_set_i(n, "kernel_w", k2[1]);
        tw_set_i(n, "stride_h", st[0]);
        tw_set_i(n, "stride_w", st[1]);
        tw_set_i(n, "global", (gmax || gavg) ? 1 : 0);
        /* convert_tool's rule for asymmetric padding; 1 also rounds up (ceil_mode) */
        if (caffe < 0) caffe = pads[0] != pads[2] && pads[1] != pads[3] ? 1 : 0;
        tw_set_i(n, "caffe_flavor", caffe);
        tw_set_i(n, "pad_h0", pads[0]);
        tw_set_i(n, "pad_w0", pads[1]);
        tw_set_i(n, "pad_h1", pads[2]);
        tw_set_i(n, "pad_w1", pads[3]);
        return TIO_OK;
    }
    rc = tw_foreign2(w, n, lbl, used, err);
    if (rc != TW_NO_OP) return rc;
    w->unk_hit = true;
    return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                    "%s: tmfile has no operator for '%s' (tensio maps Conv, Gemm, MatMul, "
                    "MaxPool, AveragePool, Global*Pool, Relu, LeakyRelu, Sigmoid, Tanh, Softmax, "
                    "LogSoftmax, Concat, Flatten, Reshape, Transpose, BatchNormalization, "
                    "InstanceNormalization, Add, Sub, Mul, Div, Max, Pow and a few unary "
                    "operators)",
                    tw_lb_text(lbl), op);
}

