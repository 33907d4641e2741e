/*
 * The graph layer's preparation (prep.h): static shapes inferred (graph
 * inputs of fixed dims, constants), used only to fold and to choose forms
 * (the dims written stay the source's); small constants computed (shape
 * arithmetic folded).
 */
#include "graph/prep_impl.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------- shapes */

bool tio__gp_known(const pp *x, int64_t v) { return v >= 0 && x->srank[v] >= 0; }

/* The largest element count of a shape inference keeps (larger: unknown), so
 * that sums and products of dims and attribute values cannot overflow. */
#define PP_BIG ((int64_t)1 << 40)

void tio__gp_set_shape(pp *x, int64_t v, int rank, const int64_t *d) {
    if (v < 0 || rank < 0 || rank > (int)GP_MAX_DIMS) return;
    /* the product of the nonzero dims: any partial product stays <= 2^40 */
    int64_t n = 1;
    for (int k = 0; k < rank; k++) {
        if (d[k] < 0 || d[k] > PP_BIG) return;
        if (d[k] && n > PP_BIG / d[k]) return; /* checked before it can overflow */
        if (d[k]) n *= d[k];
    }
    x->srank[v] = rank;
    for (int k = 0; k < rank; k++) x->sh[v][k] = d[k];
}

void tio__gp_copy_shape(pp *x, int64_t to, int64_t from) {
    if (tio__gp_known(x, from)) tio__gp_set_shape(x, to, x->srank[from], x->sh[from]);
}

/* numpy broadcasting of two shapes; false when incompatible */
static bool bcast(int ra, const int64_t *a, int rb, const int64_t *b, int *ro, int64_t *o) {
    int r = ra > rb ? ra : rb;
    for (int k = 0; k < r; k++) {
        int64_t da = k < r - ra ? 1 : a[k - (r - ra)], db = k < r - rb ? 1 : b[k - (r - rb)];
        if (da != db && da != 1 && db != 1) return false;
        o[k] = da == 1 ? db : da;
    }
    *ro = r;
    return true;
}

static int64_t norm_axis(int64_t a, int rank) { return a < 0 ? a + rank : a; }

/* The constant ints of input k (attribute `name` first when given). */
bool tio__gp_const_ints(const pp *x, const tio_gnode *n, size_t k, const char *name, int64_t *out,
                       size_t max, size_t *cnt) {
    const tio_gattr *a = name ? tio__gp_ga2(n, name) : NULL;
    if (a && a->type == TIO_ATTR_INTS && a->count <= max) {
        for (size_t j = 0; j < a->count; j++) out[j] = a->ints[j];
        *cnt = a->count;
        return true;
    }
    if (k >= n->input_count || n->inputs[k] < 0) return false;
    return tio__gp_ld_ints(tio__gp_pt(x, n->inputs[k]), out, max, cnt);
}

static int64_t clampi(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ONNX Slice on one axis: the resolved start, the count and the step. */
static bool slice_axis(int64_t dim, int64_t st, int64_t en, int64_t step, int64_t *s0,
                       int64_t *cnt) {
    if (step == 0 || step == INT64_MIN || dim < 0 || dim > PP_BIG) return false;
    if (st < 0) st = st < -PP_BIG ? -PP_BIG : st + dim; /* dim <= 2^40: no overflow */
    if (en < 0) en = en < -PP_BIG ? -PP_BIG : en + dim;
    *s0 = 0;
    *cnt = 0;
    if (dim == 0) return true;
    if (step > 0) {
        st = clampi(st, 0, dim);
        en = clampi(en, 0, dim);
        *cnt = en > st ? (en - st - 1) / step + 1 : 0;
    } else {
        st = clampi(st, 0, dim - 1);
        en = clampi(en, -1, dim - 1);
        *cnt = st > en ? (st - en - 1) / (-step) + 1 : 0;
    }
    *s0 = st;
    return true;
}

/* ConvTranspose without output_shape or auto_pad (what exporters write:
 * pads and output_padding): out = s (in - 1) + output_padding
 * + d (k - 1) + 1 - pads, channels = W's dim 1 x group. */
static void infer_convt(pp *x, const tio_gnode *n, int64_t in, int64_t out) {
    int r = x->srank[in];
    int64_t wv = n->input_count > 1 ? n->inputs[1] : -1, o[GP_MAX_DIMS],
            s[GP_MAX_DIMS - 2], d[GP_MAX_DIMS - 2], op[GP_MAX_DIMS - 2],
            pd[2 * (GP_MAX_DIMS - 2)];
    size_t cnt;
    const tio_gattr *ap = tio__gp_ga(n, "auto_pad");
    if (r < 3 || !tio__gp_known(x, wv) || x->srank[wv] != r || tio__gp_ga(n, "output_shape") ||
        (ap && (ap->type != TIO_ATTR_STRING || strcmp(ap->s, "NOTSET") != 0)))
        return;
    size_t sp = (size_t)r - 2;
    int64_t g = tio__gp_ga_i(n, "group", 1);
    if (g < 1 || g > PP_BIG || x->sh[wv][1] > PP_BIG / g) return;
    o[0] = x->sh[in][0];
    o[1] = x->sh[wv][1] * g;
    for (size_t j = 0; j < sp; j++) s[j] = 1, d[j] = 1, op[j] = 0, pd[j] = pd[j + sp] = 0;
    if (tio__gp_const_ints(x, n, 99, "strides", s, sp, &cnt) && cnt != sp) return;
    if (tio__gp_const_ints(x, n, 99, "dilations", d, sp, &cnt) && cnt != sp) return;
    if (tio__gp_const_ints(x, n, 99, "output_padding", op, sp, &cnt) && cnt != sp) return;
    if (tio__gp_const_ints(x, n, 99, "pads", pd, 2 * sp, &cnt) && cnt != 2 * sp) return;
    for (size_t j = 0; j < sp; j++) {
        int64_t iv = x->sh[in][2 + j], k = x->sh[wv][2 + j];
        if (s[j] < 1 || s[j] > INT32_MAX || d[j] < 1 || d[j] > INT32_MAX || k < 1 ||
            k > INT32_MAX || op[j] < 0 || op[j] > INT32_MAX || pd[j] < 0 || pd[j + sp] < 0 ||
            pd[j] > PP_BIG || pd[j + sp] > PP_BIG || iv < 1 || iv > PP_BIG / s[j])
            return;
        int64_t v = s[j] * (iv - 1) + op[j] + d[j] * (k - 1) + 1 - pd[j] - pd[j + sp];
        if (v < 1) return;
        o[2 + j] = v;
    }
    tio__gp_set_shape(x, out, r, o);
}

static void infer_pool(pp *x, const tio_gnode *n, int64_t in, int64_t out, bool conv) {
    int r = x->srank[in];
    int64_t o[GP_MAX_DIMS], k[GP_MAX_DIMS - 2], s[GP_MAX_DIMS - 2], d[GP_MAX_DIMS - 2],
        pd[2 * (GP_MAX_DIMS - 2)];
    size_t cnt;
    if (r < 3) return;
    size_t sp = (size_t)r - 2;
    o[0] = x->sh[in][0];
    if (conv) {
        const tio_tensor *w = tio__gp_pt(x, n->inputs[1]);
        int64_t wv = n->input_count > 1 ? n->inputs[1] : -1;
        if (!tio__gp_known(x, wv) || x->srank[wv] != r) return;
        o[1] = x->sh[wv][0];
        for (size_t j = 0; j < sp; j++) k[j] = x->sh[wv][2 + j];
        (void)w;
    } else {
        o[1] = x->sh[in][1];
        if (!tio__gp_const_ints(x, n, 99, "kernel_shape", k, sp, &cnt) || cnt != sp) return;
    }
    for (size_t j = 0; j < sp; j++) s[j] = 1, d[j] = 1, pd[j] = pd[j + sp] = 0;
    if (tio__gp_const_ints(x, n, 99, "strides", s, sp, &cnt) && cnt != sp) return;
    if (tio__gp_const_ints(x, n, 99, "dilations", d, sp, &cnt) && cnt != sp) return;
    if (tio__gp_const_ints(x, n, 99, "pads", pd, 2 * sp, &cnt) && cnt != 2 * sp) return;
    const tio_gattr *ap = tio__gp_ga(n, "auto_pad");
    bool same = ap && ((ap->type == TIO_ATTR_STRING && strncmp(ap->s, "SAME", 4) == 0) ||
                       (ap->type == TIO_ATTR_INT && ap->i == 0)); /* rten's AutoPad::Same */
    bool ceil_mode = tio__gp_ga_i(n, "ceil_mode", 0) != 0;
    for (size_t j = 0; j < sp; j++) {
        int64_t iv = x->sh[in][2 + j];
        if (s[j] < 1 || d[j] < 1 || k[j] < 1 || s[j] > PP_BIG || d[j] > INT32_MAX ||
            k[j] > INT32_MAX || pd[j] < 0 || pd[j + sp] < 0 || pd[j] > PP_BIG ||
            pd[j + sp] > PP_BIG)
            return;
        if (same) {
            o[2 + j] = (iv + s[j] - 1) / s[j];
            continue;
        }
        int64_t span = iv + pd[j] + pd[j + sp] - d[j] * (k[j] - 1) - 1;
        if (span < 0) return;
        o[2 + j] = (ceil_mode ? (span + s[j] - 1) / s[j] : span / s[j]) + 1;
        /* the last window starts inside the input or its left padding */
        if (ceil_mode && (o[2 + j] - 1) * s[j] >= iv + pd[j]) o[2 + j]--;
    }
    tio__gp_set_shape(x, out, r, o);
}

/* Static output shapes of node j from its inputs'. */
void tio__gp_infer(pp *x, size_t j) {
    const tio_gnode *n = &x->n[j];
    if (n->output_count < 1 || n->input_count < 1) return;
    int64_t in = n->inputs[0], out = n->outputs[0];
    if (out < 0 || tio__gp_known(x, out)) return;
    const char *op = n->op;
    static const char *const same[] = {
        "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip", "HardSigmoid", "HardSwish", "Elu",
        "Selu", "Erf", "Sqrt", "Exp", "Log", "Abs", "Neg", "Floor", "Ceil", "Round",
        "Reciprocal", "Softplus", "Mish", "Softmax", "LogSoftmax", "BatchNormalization",
        "InstanceNormalization", "Dropout", "Identity", "Cast", "PRelu", "Gelu", "LRN",
        "QuantizeLinear", "DequantizeLinear"};
    for (size_t k = 0; k < sizeof same / sizeof same[0]; k++)
        if (strcmp(op, same[k]) == 0) {
            tio__gp_copy_shape(x, out, in);
            return;
        }
    static const char *const bin[] = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min",
                                      "Equal", "Greater", "Less", "Where"};
    for (size_t k = 0; k < sizeof bin / sizeof bin[0]; k++)
        if (strcmp(op, bin[k]) == 0) {
            int r;
            int64_t o[GP_MAX_DIMS], t[GP_MAX_DIMS];
            if (!tio__gp_known(x, in)) return;
            r = x->srank[in];
            memcpy(o, x->sh[in], (size_t)r * sizeof *o);
            for (size_t q = 1; q < n->input_count; q++) {
                int64_t b = n->inputs[q];
                if (!tio__gp_known(x, b) || !bcast(r, o, x->srank[b], x->sh[b], &r, t)) return;
                memcpy(o, t, (size_t)r * sizeof *o);
            }
            tio__gp_set_shape(x, out, r, o);
            return;
        }
    if (!tio__gp_known(x, in) && strcmp(op, "ConstantOfShape") != 0) return;
    int r = in >= 0 ? x->srank[in] : -1; /* ConstantOfShape: its shape input may be absent */
    int64_t o[GP_MAX_DIMS], a[2 * GP_MAX_DIMS];
    size_t cnt;
    if (strcmp(op, "Conv") == 0 || strcmp(op, "MaxPool") == 0 ||
        strcmp(op, "AveragePool") == 0) {
        infer_pool(x, n, in, out, op[0] == 'C');
    } else if (strcmp(op, "ConvTranspose") == 0) {
        infer_convt(x, n, in, out);
    } else if (strcmp(op, "GlobalAveragePool") == 0 || strcmp(op, "GlobalMaxPool") == 0) {
        for (int k = 0; k < r; k++) o[k] = k < 2 ? x->sh[in][k] : 1;
        tio__gp_set_shape(x, out, r, o);
    } else if (strcmp(op, "Flatten") == 0) {
        int64_t ax = norm_axis(tio__gp_ga_i(n, "axis", 1), r);
        if (ax < 0 || ax > r) return;
        o[0] = o[1] = 1;
        for (int k = 0; k < r; k++) o[k < ax ? 0 : 1] *= x->sh[in][k];
        tio__gp_set_shape(x, out, 2, o);
    } else if (strcmp(op, "Reshape") == 0) {
        if (!tio__gp_const_ints(x, n, 1, NULL, a, GP_MAX_DIMS, &cnt)) return;
        int64_t total = 1, part = 1, neg = -1;
        for (int k = 0; k < r; k++) total *= x->sh[in][k];
        for (size_t k = 0; k < cnt; k++) {
            o[k] = a[k] == 0 && tio__gp_ga_i(n, "allowzero", 0) == 0
                       ? ((int)k < r ? x->sh[in][k] : -2)
                       : a[k];
            if (o[k] == -1 && neg < 0) neg = (int64_t)k;
            else if (o[k] < 0 || o[k] > PP_BIG) return;
            else if (o[k] && part > PP_BIG / o[k]) return;
            else part *= o[k];
        }
        if (neg >= 0) {
            if (part == 0 || total % part) return;
            o[neg] = total / part;
        }
        tio__gp_set_shape(x, out, (int)cnt, o);
    } else if (strcmp(op, "Transpose") == 0) {
        const tio_gattr *pm = tio__gp_ga(n, "perm");
        for (int k = 0; k < r; k++) {
            int64_t q = pm ? (pm->type == TIO_ATTR_INTS && (int)pm->count == r ? pm->ints[k] : -1)
                           : r - 1 - k;
            if (q < 0 || q >= r) return;
            o[k] = x->sh[in][q];
        }
        tio__gp_set_shape(x, out, r, o);
    } else if (strcmp(op, "Gemm") == 0) {
        int64_t b = n->input_count > 1 ? n->inputs[1] : -1;
        if (r != 2 || !tio__gp_known(x, b) || x->srank[b] != 2) return;
        o[0] = x->sh[in][tio__gp_ga_i(n, "transA", 0) ? 1 : 0];
        o[1] = x->sh[b][tio__gp_ga_i(n, "transB", 0) ? 0 : 1];
        tio__gp_set_shape(x, out, 2, o);
    } else if (strcmp(op, "MatMul") == 0) {
        int64_t b = n->input_count > 1 ? n->inputs[1] : -1;
        int rb, ro;
        if (!tio__gp_known(x, b) || r < 2 || (rb = x->srank[b]) < 2) return;
        if (x->sh[in][r - 1] != x->sh[b][rb - 2]) return;
        if (!bcast(r - 2, x->sh[in], rb - 2, x->sh[b], &ro, o)) return;
        o[ro] = x->sh[in][r - 2];
        o[ro + 1] = x->sh[b][rb - 1];
        tio__gp_set_shape(x, out, ro + 2, o);
    } else if (strcmp(op, "Concat") == 0) {
        int64_t ax = norm_axis(tio__gp_ga_i(n, "axis", 0), r);
        if (ax < 0 || ax >= r) return;
        memcpy(o, x->sh[in], (size_t)r * sizeof *o);
        o[ax] = 0;
        for (size_t k = 0; k < n->input_count; k++) {
            int64_t b = n->inputs[k];
            if (!tio__gp_known(x, b) || x->srank[b] != r || (o[ax] += x->sh[b][ax]) > PP_BIG)
                return;
        }
        tio__gp_set_shape(x, out, r, o);
    } else if (strcmp(op, "Shape") == 0) {
        o[0] = r;
        tio__gp_set_shape(x, out, 1, o);
    } else if (strcmp(op, "Gather") == 0) {
        int64_t ix = n->input_count > 1 ? n->inputs[1] : -1,
                ax = norm_axis(tio__gp_ga_i(n, "axis", 0), r);
        if (!tio__gp_known(x, ix) || ax < 0 || ax >= r || r - 1 + x->srank[ix] > (int)GP_MAX_DIMS)
            return;
        int m = 0;
        for (int k = 0; k < r; k++) {
            if (k == ax)
                for (int q = 0; q < x->srank[ix]; q++) o[m++] = x->sh[ix][q];
            else o[m++] = x->sh[in][k];
        }
        tio__gp_set_shape(x, out, m, o);
    } else if (strcmp(op, "Unsqueeze") == 0 || strcmp(op, "Squeeze") == 0) {
        bool un = op[0] == 'U';
        if (!tio__gp_const_ints(x, n, 1, "axes", a, GP_MAX_DIMS, &cnt)) {
            if (un) return;
            cnt = 0;
        }
        int ro = un ? r + (int)cnt : r;
        uint8_t mark[GP_MAX_DIMS] = {0};
        if (ro > (int)GP_MAX_DIMS) return;
        for (size_t k = 0; k < cnt; k++) {
            int64_t q = norm_axis(a[k], ro);
            if (q < 0 || q >= ro || mark[q]) return; /* out of range or repeated */
            mark[q] = 1;
        }
        int m = 0, src = 0;
        if (un) {
            for (int k = 0; k < ro; k++) o[k] = mark[k] ? 1 : x->sh[in][src++];
            m = ro;
        } else {
            for (int k = 0; k < r; k++)
                if (!(cnt ? mark[k] : x->sh[in][k] == 1)) o[m++] = x->sh[in][k];
        }
        tio__gp_set_shape(x, out, m, o);
    } else if (strcmp(op, "Slice") == 0) {
        int64_t st[GP_MAX_DIMS], en[GP_MAX_DIMS], ax[GP_MAX_DIMS], sp[GP_MAX_DIMS];
        size_t ns, ne, na, nsp;
        if (!tio__gp_const_ints(x, n, 1, "starts", st, GP_MAX_DIMS, &ns) ||
            !tio__gp_const_ints(x, n, 2, "ends", en, GP_MAX_DIMS, &ne) || ns != ne)
            return;
        if (!tio__gp_const_ints(x, n, 3, "axes", ax, GP_MAX_DIMS, &na))
            for (na = 0; na < ns; na++) ax[na] = (int64_t)na;
        if (!tio__gp_const_ints(x, n, 4, "steps", sp, GP_MAX_DIMS, &nsp))
            for (nsp = 0; nsp < ns; nsp++) sp[nsp] = 1;
        if (na != ns || nsp != ns) return;
        memcpy(o, x->sh[in], (size_t)r * sizeof *o);
        for (size_t k = 0; k < ns; k++) {
            int64_t q = norm_axis(ax[k], r), s0, c;
            if (q < 0 || q >= r || !slice_axis(x->sh[in][q], st[k], en[k], sp[k], &s0, &c))
                return;
            o[q] = c;
        }
        tio__gp_set_shape(x, out, r, o);
    } else if (strcmp(op, "Pad") == 0) {
        if (!tio__gp_const_ints(x, n, 1, "pads", a, 2 * GP_MAX_DIMS, &cnt) || cnt != 2 * (size_t)r)
            return;
        for (int k = 0; k < r; k++) {
            if (a[k] < -PP_BIG || a[k] > PP_BIG || a[k + r] < -PP_BIG || a[k + r] > PP_BIG) return;
            o[k] = x->sh[in][k] + a[k] + a[k + r];
        }
        tio__gp_set_shape(x, out, r, o);
    } else if (strncmp(op, "Reduce", 6) == 0) {
        bool keep = tio__gp_ga_i(n, "keepdims", 1) != 0;
        uint8_t mark[GP_MAX_DIMS] = {0};
        if (!tio__gp_const_ints(x, n, 1, "axes", a, GP_MAX_DIMS, &cnt)) return;
        for (size_t k = 0; k < cnt; k++) {
            int64_t q = norm_axis(a[k], r);
            if (q < 0 || q >= r) return;
            mark[q] = 1;
        }
        int m = 0;
        for (int k = 0; k < r; k++) {
            if (!mark[k] && cnt) o[m++] = x->sh[in][k];
            else if (keep) o[m++] = 1;
        }
        tio__gp_set_shape(x, out, m, o);
    } else if (strcmp(op, "ConstantOfShape") == 0) {
        if (!tio__gp_const_ints(x, n, 0, NULL, a, GP_MAX_DIMS, &cnt)) return;
        tio__gp_set_shape(x, out, (int)cnt, a);
    }
}

/* ------------------------------------------------------------ folding */

/* Values of a constant as int64 or double (per `flt`), at most PP_FOLD_MAX. */
typedef struct num {
    bool flt;
    int rank;
    int64_t sh[GP_MAX_DIMS];
    size_t n;
    int64_t *i;
    double *f;
} num;

static bool num_load(pp *x, int64_t v, num *o) {
    const tio_tensor *t = tio__gp_pt(x, v);
    if (!t || t->numel > PP_FOLD_MAX || t->rank > GP_MAX_DIMS) return false;
    o->rank = (int)t->rank;
    uint64_t nz = 1; /* the product of the nonzero dims bounds every loop over them */
    for (size_t k = 0; k < t->rank; k++) {
        o->sh[k] = t->shape[k];
        if (t->shape[k] < 0 || (uint64_t)t->shape[k] > PP_FOLD_MAX) return false;
        if (t->shape[k] && (nz *= (uint64_t)t->shape[k]) > PP_FOLD_MAX) return false;
    }
    o->n = (size_t)t->numel;
    o->flt = t->dtype == TIO_FLOAT32;
    if (o->flt) {
        o->f = tio__gp_pa(x, (o->n ? o->n : 1) * sizeof *o->f);
        if (!o->f || t->nbytes < o->n * 4) return false;
        for (size_t k = 0; k < o->n; k++) o->f[k] = tio__gp_ldf(t->data + 4 * k);
        return true;
    }
    o->i = tio__gp_pa(x, (o->n ? o->n : 1) * sizeof *o->i);
    size_t cnt;
    return o->i && tio__gp_ld_ints(t, o->i, PP_FOLD_MAX, &cnt);
}

/* num_store's "a value does not fit the dtype": the node stays (not a TIO_E_*) */
#define PP_UNREPRESENTABLE (-1)

/* Makes value `out` a constant holding r (dtype dt). */
static double num_at(const num *a, size_t k);

static int num_store(pp *x, int64_t out, const num *r, tio_dtype dt) {
    size_t es = dt == TIO_INT64 ? 8 : dt == TIO_INT8 || dt == TIO_UINT8 ? 1 : 4;
    for (size_t k = 0; r->flt && dt != TIO_FLOAT32 && k < r->n; k++)
        if (!(r->f[k] >= -9.2e18 && r->f[k] <= 9.2e18)) return PP_UNREPRESENTABLE;
    /* 8-bit (a QDQ model's zero points): values in range only */
    for (size_t k = 0; es == 1 && k < r->n; k++) {
        double v = num_at(r, k);
        if (!(dt == TIO_INT8 ? v >= -128 && v <= 127 : v >= 0 && v <= 255) || v != floor(v))
            return PP_UNREPRESENTABLE;
    }
    uint8_t *d = tio__gp_pa(x, (r->n ? r->n : 1) * es);
    if (!d) return tio__gp_nomem(x);
    for (size_t k = 0; k < r->n; k++) {
        if (dt == TIO_FLOAT32)
            tio__gp_stf(d + 4 * k, r->flt ? tio__gp_to_f(r->f[k]) : (float)r->i[k]);
        else {
            int64_t iv = r->flt ? (int64_t)r->f[k] : r->i[k];
            if (es == 1) d[k] = (uint8_t)iv;
            else if (dt == TIO_INT64) tio__st64(d + 8 * k, (uint64_t)iv);
            else tio__st32(d + 4 * k, (uint32_t)(int32_t)iv);
        }
    }
    int64_t t = tio__gp_mk_tensor(x, x->v[out].name, dt, r->rank, r->sh, d, r->n * es, true);
    if (t < 0) return tio__gp_nomem(x);
    return tio__gp_retensor(x, out, t);
}

static bool num_alloc(pp *x, num *r, bool flt, int rank, const int64_t *sh) {
    uint64_t n = 1;
    r->flt = flt;
    r->rank = rank;
    for (int k = 0; k < rank; k++) {
        r->sh[k] = sh[k];
        if (sh[k] < 0 || tio__mul64_ovf(n, (uint64_t)sh[k], &n) || n > PP_FOLD_MAX) return false;
    }
    r->n = (size_t)n;
    if (flt) r->f = tio__gp_pa(x, (r->n ? r->n : 1) * sizeof *r->f);
    else r->i = tio__gp_pa(x, (r->n ? r->n : 1) * sizeof *r->i);
    return flt ? r->f != NULL : r->i != NULL;
}

static double num_at(const num *a, size_t k) { return a->flt ? a->f[k] : (double)a->i[k]; }

/* The flat index into a (broadcast to shape sh of rank r) of flat index k. */
static size_t bidx(const num *a, int r, const int64_t *sh, size_t k) {
    size_t idx = 0, mul = 1;
    for (int d = r - 1; d >= 0; d--) {
        size_t c = (size_t)(k % (size_t)sh[d]);
        k /= (size_t)sh[d];
        int ad = d - (r - a->rank);
        if (ad >= 0) {
            if (a->sh[ad] != 1) idx += c * mul;
            mul *= (size_t)a->sh[ad];
        }
    }
    return idx;
}

static tio_dtype cast_to(int64_t onnx) {
    switch (onnx) {
    case 1: return TIO_FLOAT32;
    case 2: return TIO_UINT8;
    case 3: return TIO_INT8;
    case 6: return TIO_INT32;
    case 7: return TIO_INT64;
    default: return TIO_DTYPE_INVALID;
    }
}

/* num_store into out, then *folded; a value num_store cannot represent
 * (PP_UNREPRESENTABLE) leaves the node as it is */
#define STORE(r_, dt_)                                                                           \
    do {                                                                                         \
        rc = num_store(x, out, (r_), (dt_));                                                    \
        if (rc == PP_UNREPRESENTABLE) return TIO_OK;                                             \
        if (!rc) *folded = true;                                                                 \
        return rc;                                                                               \
    } while (0)

/* Folds node j when it computes a small constant (shape arithmetic):
 * *folded tells. */
int tio__gp_fold(pp *x, size_t j, bool *folded) {
    tio_gnode *n = &x->n[j];
    const char *op = n->op;
    if (n->output_count != 1 || n->outputs[0] < 0 || (n->domain && n->domain[0])) return TIO_OK;
    int64_t out = n->outputs[0];
    num a = {0}, b = {0}, r = {0};
    size_t cnt;
    int64_t ax[GP_MAX_DIMS];
    int rc;
    if (strcmp(op, "Shape") == 0) {
        int64_t in = n->inputs[0];
        if (n->input_count != 1 || !tio__gp_known(x, in) || n->attr_count) return TIO_OK;
        int64_t one = x->srank[in];
        if (!num_alloc(x, &r, false, 1, &one)) return tio__gp_nomem(x);
        for (size_t k = 0; k < r.n; k++) r.i[k] = x->sh[in][k];
        STORE(&r, TIO_INT64);
    }
    if (strcmp(op, "ConstantOfShape") == 0) {
        int64_t sh[GP_MAX_DIMS];
        if (!tio__gp_const_ints(x, n, 0, NULL, sh, GP_MAX_DIMS, &cnt)) return TIO_OK;
        const tio_gattr *va = tio__gp_ga(n, "value");
        const tio_tensor *vt =
            va && va->type == TIO_ATTR_TENSOR ? tio__gprep_tensor(x->p, x->c, va->i) : NULL;
        tio_dtype dt = vt ? vt->dtype : TIO_FLOAT32;
        double fv = 0;
        int64_t iv = 0;
        if (vt && vt->numel != 1) return TIO_OK;
        if (vt && dt == TIO_FLOAT32) fv = tio__gp_ldf(vt->data);
        else if (vt && tio__gp_is_int(dt)) tio__gp_ld_ints(vt, &iv, 1, &cnt);
        else if (vt) return TIO_OK;
        if (!num_alloc(x, &r, dt == TIO_FLOAT32, (int)cnt, sh)) return TIO_OK;
        for (size_t k = 0; k < r.n; k++) {
            if (r.flt) r.f[k] = fv;
            else r.i[k] = iv;
        }
        STORE(&r, dt);
    }
    for (size_t k = 0; k < n->input_count; k++)
        if (n->inputs[k] < 0 || !tio__gp_pt(x, n->inputs[k])) return TIO_OK;
    if (n->input_count < 1) return TIO_OK;
    const tio_tensor *t0 = tio__gp_pt(x, n->inputs[0]);
    if (t0->dtype != TIO_FLOAT32 && !tio__gp_is_int(t0->dtype)) return TIO_OK;
    if (strcmp(op, "Reshape") == 0 || strcmp(op, "Unsqueeze") == 0 ||
        strcmp(op, "Squeeze") == 0 || strcmp(op, "Flatten") == 0 || strcmp(op, "Identity") == 0) {
        tio__gp_infer(x, j);
        if (!tio__gp_known(x, out)) return TIO_OK;
        /* the shape may be the one the source declared for the output: it must
         * hold the data's elements */
        uint64_t cnt_out = 1;
        for (int k = 0; k < x->srank[out]; k++) cnt_out *= (uint64_t)x->sh[out][k];
        if (cnt_out != t0->numel) return TIO_OK;
        int64_t t = tio__gp_mk_tensor(x, x->v[out].name, t0->dtype, x->srank[out], x->sh[out],
                                      t0->data, t0->nbytes, true);
        if (t < 0) return tio__gp_nomem(x);
        rc = tio__gp_retensor(x, out, t);
        if (!rc) *folded = true;
        return rc;
    }
    if (!num_load(x, n->inputs[0], &a)) return TIO_OK;
    tio_dtype dt = t0->dtype;
    if (strcmp(op, "Cast") == 0) {
        tio_dtype to = cast_to(tio__gp_ga_i(n, "to", 0));
        if (to == TIO_DTYPE_INVALID) return TIO_OK;
        STORE(&a, to);
    }
    static const char *const bin[] = {"Add", "Sub", "Mul", "Div"};
    for (int q = 0; q < 4; q++) {
        if (strcmp(op, bin[q]) != 0) continue;
        const tio_tensor *t1 = tio__gp_pt(x, n->inputs[1]);
        if (n->input_count != 2 || t1->dtype != dt || !num_load(x, n->inputs[1], &b)) return TIO_OK;
        int ro;
        int64_t sh[GP_MAX_DIMS];
        if (!bcast(a.rank, a.sh, b.rank, b.sh, &ro, sh) || !num_alloc(x, &r, a.flt, ro, sh))
            return TIO_OK;
        for (size_t k = 0; k < r.n; k++) {
            size_t ia = bidx(&a, ro, sh, k), ib = bidx(&b, ro, sh, k);
            if (r.flt) {
                double u = a.f[ia], w = b.f[ib];
                r.f[k] = q == 0 ? u + w : q == 1 ? u - w : q == 2 ? u * w : u / w;
            } else {
                int64_t u = a.i[ia], w = b.i[ib];
                if (q == 3 && (w == 0 || (u == INT64_MIN && w == -1))) return TIO_OK;
                /* wrapping arithmetic as the runtimes do, without C's UB */
                r.i[k] = q == 0   ? (int64_t)((uint64_t)u + (uint64_t)w)
                         : q == 1 ? (int64_t)((uint64_t)u - (uint64_t)w)
                         : q == 2 ? (int64_t)((uint64_t)u * (uint64_t)w)
                                  : u / w;
            }
        }
        STORE(&r, dt);
    }
    if (strcmp(op, "Gather") == 0) {
        if (n->input_count != 2 || !num_load(x, n->inputs[1], &b) || b.flt) return TIO_OK;
        int64_t axis = norm_axis(tio__gp_ga_i(n, "axis", 0), a.rank);
        if (axis < 0 || axis >= a.rank || a.rank - 1 + b.rank > (int)GP_MAX_DIMS) return TIO_OK;
        int64_t sh[GP_MAX_DIMS];
        int m = 0;
        for (int k = 0; k < a.rank; k++) {
            if (k == axis)
                for (int q = 0; q < b.rank; q++) sh[m++] = b.sh[q];
            else sh[m++] = a.sh[k];
        }
        if (!num_alloc(x, &r, a.flt, m, sh)) return TIO_OK;
        size_t outer = 1, inner = 1, dim = (size_t)a.sh[axis];
        for (int k = 0; k < axis; k++) outer *= (size_t)a.sh[k];
        for (int k = (int)axis + 1; k < a.rank; k++) inner *= (size_t)a.sh[k];
        size_t at = 0;
        for (size_t o = 0; o < outer; o++)
            for (size_t q = 0; q < b.n; q++) {
                int64_t ix = b.i[q] < 0 ? b.i[q] + (int64_t)dim : b.i[q];
                if (ix < 0 || (size_t)ix >= dim) return TIO_OK;
                for (size_t e = 0; e < inner; e++, at++) {
                    size_t src = (o * dim + (size_t)ix) * inner + e;
                    if (r.flt) r.f[at] = a.f[src];
                    else r.i[at] = a.i[src];
                }
            }
        STORE(&r, dt);
    }
    if (strcmp(op, "Concat") == 0) {
        int64_t axis = norm_axis(tio__gp_ga_i(n, "axis", 0), a.rank);
        if (axis < 0 || axis >= a.rank) return TIO_OK;
        num parts[16];
        if (n->input_count > 16) return TIO_OK;
        int64_t sh[GP_MAX_DIMS];
        memcpy(sh, a.sh, sizeof sh);
        sh[axis] = 0;
        for (size_t k = 0; k < n->input_count; k++) {
            memset(&parts[k], 0, sizeof parts[k]);
            if (!num_load(x, n->inputs[k], &parts[k]) || parts[k].rank != a.rank ||
                parts[k].flt != a.flt || tio__gp_pt(x, n->inputs[k])->dtype != dt)
                return TIO_OK;
            for (int q = 0; q < a.rank; q++)
                if (q != axis && parts[k].sh[q] != a.sh[q]) return TIO_OK;
            sh[axis] += parts[k].sh[axis];
        }
        if (!num_alloc(x, &r, a.flt, a.rank, sh)) return TIO_OK;
        size_t outer = 1, at = 0;
        for (int k = 0; k < axis; k++) outer *= (size_t)a.sh[k];
        for (size_t o = 0; o < outer; o++)
            for (size_t k = 0; k < n->input_count; k++) {
                size_t chunk = parts[k].n / (outer ? outer : 1);
                for (size_t e = 0; e < chunk; e++, at++) {
                    if (r.flt) r.f[at] = parts[k].f[o * chunk + e];
                    else r.i[at] = parts[k].i[o * chunk + e];
                }
            }
        STORE(&r, dt);
    }
    if (strcmp(op, "Slice") == 0 && a.rank == 1) {
        int64_t st[1], en[1], sp[1] = {1};
        size_t ns, ne, na, nsp;
        if (!tio__gp_const_ints(x, n, 1, "starts", st, 1, &ns) ||
            !tio__gp_const_ints(x, n, 2, "ends", en, 1, &ne))
            return TIO_OK;
        if (tio__gp_const_ints(x, n, 3, "axes", ax, 1, &na) && norm_axis(ax[0], 1) != 0)
            return TIO_OK;
        if (!tio__gp_const_ints(x, n, 4, "steps", sp, 1, &nsp)) sp[0] = 1;
        int64_t s0, c;
        if (!slice_axis(a.sh[0], st[0], en[0], sp[0], &s0, &c) || !num_alloc(x, &r, a.flt, 1, &c))
            return TIO_OK;
        for (int64_t k = 0; k < c; k++) {
            size_t src = (size_t)(s0 + k * sp[0]);
            if (r.flt) r.f[k] = a.f[src];
            else r.i[k] = a.i[src];
        }
        STORE(&r, dt);
    }
    (void)num_at;
    return TIO_OK;
}

/* A Constant node of value_float(s) / value_int(s) (what the TensorFlow
 * Lite raise writes for Clip's bounds, Slice's starts, ...): its value made
 * a constant (float32 or int64), as for a `value` tensor. *done when it
 * was; a value too large to fold leaves the node. */
int tio__gp_const_attr(pp *x, size_t j, bool *done) {
    tio_gnode *n = &x->n[j];
    *done = false;
    if (n->attr_count != 1) return TIO_OK;
    const tio_gattr *a = &n->attrs[0];
    bool flt = a->type == TIO_ATTR_FLOAT || a->type == TIO_ATTR_FLOATS;
    bool many = a->type == TIO_ATTR_FLOATS || a->type == TIO_ATTR_INTS;
    if (!flt && a->type != TIO_ATTR_INT && a->type != TIO_ATTR_INTS) return TIO_OK;
    const char *want =
        flt ? (many ? "value_floats" : "value_float") : (many ? "value_ints" : "value_int");
    if (strcmp(a->name, want) != 0 || (many && a->count > PP_FOLD_MAX)) return TIO_OK;
    int64_t sh[1] = {(int64_t)a->count};
    num r;
    if (!num_alloc(x, &r, flt, many ? 1 : 0, sh)) return TIO_OK;
    for (size_t k = 0; k < r.n; k++) {
        if (flt) r.f[k] = many ? a->floats[k] : a->f;
        else r.i[k] = many ? a->ints[k] : a->i;
    }
    int rc = num_store(x, n->outputs[0], &r, flt ? TIO_FLOAT32 : TIO_INT64);
    if (rc == PP_UNREPRESENTABLE) return TIO_OK;
    if (!rc) *done = true;
    return rc;
}
