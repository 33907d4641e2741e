/*
 * TensorFlow Lite → tensio's graph in ONNX semantics (docs/formats/tflite.md,
 * "The graph").
 *
 * Layout. TFLite computes in NHWC with OHWI (depthwise 1HWO) weights; ONNX's
 * Conv and pools take NCHW and OIHW. The graph's inputs and outputs keep
 * TFLite's shapes, so the ONNX model computes the same thing for the same
 * input bytes. Each TFLite tensor may have up to two forms: as TFLite holds
 * it (NHWC) and transposed to NCHW; a form is made (by one Transpose) only
 * when an operator needs it and reused after. Convolutions and pools produce
 * the NCHW form only, and elementwise operators, activations, PAD, MEAN and
 * CONCATENATION work in whichever form their inputs already have, so a
 * chain of convolutions has no Transpose between its operators. A TFLite
 * TRANSPOSE by [0,2,3,1] (an NCHW input made NHWC) gives its output's NCHW
 * form for free: its input. Weights stay the file's zero-copy constants,
 * read through a Transpose node on the constant (which onnxruntime folds).
 *
 * Quantization (QDQ). A quantized tensor's float view is
 * DequantizeLinear(q, scale, zero_point) (per axis: axis =
 * quantized_dimension); an operator runs in float on those views, and a
 * quantized output is QuantizeLinear of the float result with its own scale
 * and zero point. Scales and zero points are Constant nodes (value_float(s),
 * value_int(s) then Cast to the quantized type): the container lists the
 * file's constants only.
 *
 * An operator tensio does not raise (not in src/tflite/opmap.c, options or
 * shapes it does not handle, inputs no earlier operator writes) becomes a
 * node of its TFLite name, and the graph is marked opaque with a list of
 * every such operator: a conversion to a graph format is refused with that
 * list, while the model still opens.
 */
#include "graph/graph.h"
#include "tflite/opmap.h"
#include "tflite/schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TFL "tflite"
#define TR_GAPS_CAP 1536

/* ONNX TensorProto data types (Cast's `to`). */
static int64_t tr_onnx_type(tio_dtype dt) {
    switch (dt) {
    case TIO_FLOAT32: return 1;
    case TIO_UINT8: return 2;
    case TIO_INT8: return 3;
    case TIO_UINT16: return 4;
    case TIO_INT16: return 5;
    case TIO_INT32: return 6;
    case TIO_INT64: return 7;
    default: return 0;
    }
}

typedef struct tr_tensor {
    const char *name;  /* the file's (may be NULL or repeated) */
    tio_dtype dtype;
    uint32_t rank;
    int64_t *dims;     /* rank entries */
    int64_t ctensor;   /* container tensor, or -1 */
    int64_t producer;  /* the first operator writing it, or -1 */
    bool input;        /* a subgraph input */
    bool output;       /* a subgraph output (listed once) */
    bool variable;
    /* quantization (q: a quantized integer tensor) */
    bool q;
    uint32_t nscale;
    tio_fb_vec scales, zps;
    int32_t axis;
    /* forms: v[layout][view]; layout 0 NHWC (as TFLite), 1 NCHW; view 0 as
     * stored, 1 float */
    int64_t v[2][2];
    int64_t qconst[2]; /* scale, zero point values (per tensor) */
    bool named;        /* v[0][0] carries the tensor's own name */
    char *own;         /* its unique value name */
} tr_tensor;

typedef struct tr {
    tio_read_ctx *ctx;
    tio_error *err;
    tio_graph *g;
    tr_tensor *t;
    uint32_t nt;
    int rc;           /* the first hard error (memory, limits) */
    const char *fail; /* why the current operator cannot be raised */
    char failbuf[160];
    /* the names in use: open addressing over malloc'ed strings */
    char **names;
    size_t ncap, nused;
    int64_t opset;
    uint32_t op;      /* the operator being raised */
    /* >= 0: the value a DEQUANTIZE's output is, which the float view its
     * input is about to get is made into (tr_float_tmp) */
    int64_t deq_out;
} tr;

/* ------------------------------------------------------------ names */

/* seeded by the raise's address (tio__hash_str) */
static size_t tr_hash(const tr *r, const char *s) { return (size_t)tio__hash_str(tio__hash_seed(r), s); }

static bool tr_name_has(const tr *r, const char *s) {
    if (!r->ncap) return false;
    for (size_t i = tr_hash(r, s) & (r->ncap - 1);; i = (i + 1) & (r->ncap - 1)) {
        if (!r->names[i]) return false;
        if (strcmp(r->names[i], s) == 0) return true;
    }
}

static int tr_name_put(tr *r, char *s) {
    if (2 * (r->nused + 1) > r->ncap) {
        size_t nc = r->ncap ? 2 * r->ncap : 256;
        char **nn = calloc(nc, sizeof *nn);
        if (!nn) return tio__nomem(r->err, TFL);
        for (size_t k = 0; k < r->ncap; k++) {
            if (!r->names[k]) continue;
            size_t i = tr_hash(r, r->names[k]) & (nc - 1);
            while (nn[i]) i = (i + 1) & (nc - 1);
            nn[i] = r->names[k];
        }
        free(r->names);
        r->names = nn;
        r->ncap = nc;
    }
    size_t i = tr_hash(r, s) & (r->ncap - 1);
    while (r->names[i]) i = (i + 1) & (r->ncap - 1);
    r->names[i] = s;
    r->nused++;
    return TIO_OK;
}

/* A name no value has yet: "<base>:<tag>" (or "<base>"), else with a
 * counter; recorded as used. NULL (r->rc set) on no memory. */
static const char *tr_fresh(tr *r, const char *base, const char *tag) {
    if (r->rc) return NULL;
    size_t cap = strlen(base) + (tag ? strlen(tag) : 0) + 24;
    char *s = malloc(cap);
    if (!s) {
        r->rc = tio__nomem(r->err, TFL);
        return NULL;
    }
    if (tag) snprintf(s, cap, "%s:%s", base, tag);
    else memcpy(s, base, strlen(base) + 1); /* most names: as they are */
    for (unsigned k = 1; tr_name_has(r, s); k++)
        snprintf(s, cap, "%s%s%s_%u", base, tag ? ":" : "", tag ? tag : "", k);
    int rc = tr_name_put(r, s);
    if (rc) {
        free(s);
        r->rc = rc;
        return NULL;
    }
    return s;
}

/* ------------------------------------------------------- graph objects */

static int64_t tr_value(tr *r, const char *name, tio_dtype dt, uint32_t rank,
                        const int64_t *dims, int64_t tensor) {
    if (r->rc || !name) return -1;
    tio_dim dd[8];
    tio_dim *d = rank > 8 ? calloc(rank, sizeof *d) : dd;
    if (!d) {
        r->rc = tio__nomem(r->err, TFL);
        return -1;
    }
    for (uint32_t k = 0; k < rank; k++) {
        d[k].value = dims ? dims[k] : -1;
        d[k].name = NULL;
    }
    tio_value_info vi;
    memset(&vi, 0, sizeof vi);
    vi.name = name;
    vi.dtype = dt;
    vi.rank = dims || !rank ? (int64_t)rank : -1;
    vi.dims = rank && dims ? d : NULL;
    vi.tensor = tensor;
    size_t ix = 0;
    r->rc = tio_graph_add_value(r->g, &vi, &ix, r->err);
    if (d != dd) free(d);
    return r->rc ? -1 : (int64_t)ix;
}

/* A node writing `out` (named after it). Returns the node index or -1. */
static int64_t tr_node(tr *r, const char *op, const int64_t *in, size_t nin, int64_t out) {
    if (r->rc) return -1;
    for (size_t k = 0; k < nin; k++)
        if (in[k] < -1) return -1; /* an input failed (r->rc or r->fail is set) */
    if (out < 0) return -1;
    tio_node_info ni;
    memset(&ni, 0, sizeof ni);
    ni.name = r->g->values[out].name;
    ni.op = op;
    ni.native_id = -1;
    ni.input_count = nin;
    ni.inputs = in;
    ni.output_count = 1;
    ni.outputs = &out;
    size_t ix = 0;
    r->rc = tio_graph_add_node(r->g, &ni, &ix, r->err);
    return r->rc ? -1 : (int64_t)ix;
}

static void tr_attr(tr *r, int64_t node, const tio_attr *a) {
    if (r->rc || node < 0) return;
    r->rc = tio_graph_add_attr(r->g, (size_t)node, a, r->err);
}

/* An INT (or, with is_float, FLOAT) attribute. */
static void tr_attr_num(tr *r, int64_t node, const char *name, bool is_float, int64_t i,
                        double f) {
    tio_attr a;
    memset(&a, 0, sizeof a);
    a.name = name;
    a.type = is_float ? TIO_ATTR_FLOAT : TIO_ATTR_INT;
    a.i = i;
    a.f = f;
    tr_attr(r, node, &a);
}

static void tr_attr_i(tr *r, int64_t node, const char *name, int64_t v) {
    tr_attr_num(r, node, name, false, v, 0);
}

static void tr_attr_f(tr *r, int64_t node, const char *name, double v) {
    tr_attr_num(r, node, name, true, 0, v);
}

static void tr_attr_ints(tr *r, int64_t node, const char *name, const int64_t *v, size_t n) {
    tio_attr a;
    memset(&a, 0, sizeof a);
    a.name = name;
    a.type = TIO_ATTR_INTS;
    a.count = n;
    a.ints = v;
    tr_attr(r, node, &a);
}

/* Constant nodes: value_ints (int64 [n]) and value_float(s). */
static int64_t tr_const_ints(tr *r, const char *base, const char *tag, const int64_t *v,
                             size_t n) {
    int64_t dim = (int64_t)n;
    int64_t out = tr_value(r, tr_fresh(r, base, tag), TIO_INT64, 1, &dim, -1);
    int64_t nd = tr_node(r, "Constant", NULL, 0, out);
    tr_attr_ints(r, nd, "value_ints", v, n);
    return r->rc ? -2 : out;
}

static int64_t tr_const_float(tr *r, const char *base, const char *tag, double f) {
    int64_t out = tr_value(r, tr_fresh(r, base, tag), TIO_FLOAT32, 0, NULL, -1);
    int64_t nd = tr_node(r, "Constant", NULL, 0, out);
    tr_attr_f(r, nd, "value_float", f);
    return r->rc ? -2 : out;
}

/* A new runtime value named "<tensor's name>:<tag>". */
static int64_t tr_tmp(tr *r, uint32_t t, const char *tag, tio_dtype dt, uint32_t rank,
                      const int64_t *dims) {
    return tr_value(r, tr_fresh(r, r->t[t].own, tag), dt, rank, dims, -1);
}

/* The value a float view of tensor t (layout L) is made into: the output
 * of the DEQUANTIZE being raised, when there is one, so that it keeps that
 * tensor's name (TFLite's float16 weights: "w:float16" -> "w"); else a new
 * "<name>:float". */
static int64_t tr_float_tmp(tr *r, uint32_t t, int L, const int64_t *dims) {
    int64_t v = r->deq_out;
    if (v >= 0 && !L) {
        r->deq_out = -1;
        return v;
    }
    return tr_tmp(r, t, L ? "float_nchw" : "float", TIO_FLOAT32, r->t[t].rank, dims);
}

/* --------------------------------------------------------- quantization */

static float tr_f32(const tio_fb_vec *v, uint32_t k) {
    uint32_t u = tio__ld32(tio__fb_vec_data(v) + 4u * k);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static int64_t tr_zp(const tr_tensor *x, uint32_t k) {
    return x->zps.count == x->nscale ? (int64_t)tio__ld64(tio__fb_vec_data(&x->zps) + 8u * k)
                                     : 0;
}

/* Tensor t's scale and zero point values (made once). */
/* The container tensor the reader made for a per-axis constant's
 * parameters ("<name>.q_scales", "<name>.q_zero_points": right after it),
 * or -1. */
static int64_t tr_qtensor(const tr *r, const tr_tensor *x, unsigned k, const char *leaf,
                          tio_dtype dt) {
    const tio_container *c = r->ctx->c;
    if (x->ctensor < 0 || (size_t)x->ctensor + k >= c->count) return -1;
    const char *base = tio_tensor_name(c->tensors[x->ctensor]);
    const tio_tensor *q = c->tensors[x->ctensor + k];
    const char *qn = tio_tensor_name(q);
    size_t bl = base ? strlen(base) : 0;
    if (!base || !qn || strncmp(qn, base, bl) != 0 || strcmp(qn + bl, leaf) != 0 ||
        tio_tensor_dtype(q) != dt || tio_tensor_rank(q) != 1 ||
        tio_tensor_shape(q)[0] != (int64_t)x->nscale)
        return -1;
    return x->ctensor + (int64_t)k;
}

/* A per-axis constant's scales and zero points: the reader's zero-copy
 * tensors (the zero points int64, Cast to the constant's type). */
static bool tr_qconsts_axis(tr *r, uint32_t t) {
    tr_tensor *x = &r->t[t];
    int64_t ks = tr_qtensor(r, x, 1, ".q_scales", TIO_FLOAT32);
    int64_t kz = tr_qtensor(r, x, 2, ".q_zero_points", TIO_INT64);
    if (ks < 0 || kz < 0) return false;
    int64_t n = (int64_t)x->nscale;
    int64_t s = tr_value(r, tr_fresh(r, x->own, "q_scales"), TIO_FLOAT32, 1, &n, ks);
    int64_t z64 = tr_value(r, tr_fresh(r, x->own, "q_zero_points"), TIO_INT64, 1, &n, kz);
    int64_t z = tr_value(r, tr_fresh(r, x->own, "zero_point"), x->dtype, 1, &n, -1);
    int64_t nd = tr_node(r, "Cast", &z64, 1, z);
    tr_attr_i(r, nd, "to", tr_onnx_type(x->dtype));
    x->qconst[0] = s;
    x->qconst[1] = z;
    return true;
}

static void tr_qconsts(tr *r, uint32_t t, int64_t *scale, int64_t *zp) {
    tr_tensor *x = &r->t[t];
    if (x->qconst[0] < 0 && !r->rc && x->nscale > 1 && x->ctensor >= 0) tr_qconsts_axis(r, t);
    if (x->qconst[0] < 0 && !r->rc) {
        int64_t n = (int64_t)x->nscale;
        bool one = x->nscale == 1;
        int64_t s = tr_value(r, tr_fresh(r, x->own, "scale"), TIO_FLOAT32, one ? 0 : 1, &n, -1);
        int64_t nd = tr_node(r, "Constant", NULL, 0, s);
        tio_attr a;
        memset(&a, 0, sizeof a);
        double *fl = NULL;
        int64_t *zi = malloc(x->nscale * sizeof *zi);
        if (!one) fl = malloc(x->nscale * sizeof *fl);
        if (!zi || (!one && !fl)) r->rc = tio__nomem(r->err, TFL);
        for (uint32_t k = 0; !r->rc && k < x->nscale; k++) {
            if (fl) fl[k] = (double)tr_f32(&x->scales, k);
            zi[k] = tr_zp(x, k);
        }
        if (one) {
            a.name = "value_float";
            a.type = TIO_ATTR_FLOAT;
            a.f = (double)tr_f32(&x->scales, 0);
        } else {
            a.name = "value_floats";
            a.type = TIO_ATTR_FLOATS;
            a.count = x->nscale;
            a.floats = fl;
        }
        if (!r->rc) tr_attr(r, nd, &a);
        /* the zero point: int64 constant, Cast to the tensor's type */
        int64_t zi64 = tr_value(r, tr_fresh(r, x->own, "zero_point_i64"), TIO_INT64,
                                one ? 0 : 1, &n, -1);
        nd = tr_node(r, "Constant", NULL, 0, zi64);
        memset(&a, 0, sizeof a);
        a.name = one ? "value_int" : "value_ints";
        a.type = one ? TIO_ATTR_INT : TIO_ATTR_INTS;
        a.i = zi ? zi[0] : 0;
        a.count = one ? 0 : x->nscale;
        a.ints = one ? NULL : zi;
        if (!r->rc) tr_attr(r, nd, &a);
        free(fl);
        free(zi);
        int64_t z = tr_value(r, tr_fresh(r, x->own, "zero_point"), x->dtype, one ? 0 : 1, &n, -1);
        nd = tr_node(r, "Cast", &zi64, 1, z);
        tr_attr_i(r, nd, "to", tr_onnx_type(x->dtype));
        x->qconst[0] = s;
        x->qconst[1] = z;
    }
    *scale = r->rc ? -2 : x->qconst[0];
    *zp = r->rc ? -2 : x->qconst[1];
}

/* --------------------------------------------------------------- forms */

static const int64_t TR_TO_NCHW[4] = {0, 3, 1, 2}, TR_TO_NHWC[4] = {0, 2, 3, 1};

static int tr_fail(tr *r, const char *why) {
    if (!r->fail) r->fail = why;
    return -1;
}

/* Tensor x's dims in NCHW order. Only a rank-4 tensor has that layout; the
 * operators check their results' ranks before they ask for it, and this
 * check stands behind them (a file's declared shapes are not trusted). */
static int tr_dims_nchw(tr *r, const tr_tensor *x, int64_t *d) {
    if (x->rank != 4) return tr_fail(r, "a value needed in the NCHW layout is not of rank 4");
    for (unsigned k = 0; k < 4; k++) d[k] = x->dims[TR_TO_NCHW[k]];
    return 0;
}

static int64_t tr_transpose(tr *r, int64_t in, const int64_t *perm, uint32_t t, const char *tag,
                            tio_dtype dt, uint32_t rank, const int64_t *dims) {
    int64_t out = tr_tmp(r, t, tag, dt, rank, dims);
    int64_t nd = tr_node(r, "Transpose", &in, 1, out);
    tr_attr_ints(r, nd, "perm", perm, rank);
    return r->rc ? -2 : out;
}

/* Tensor t's value `src` in the other layout (L: the one wanted): a
 * Transpose, or a Reshape when only dims of size 1 move (H = W = 1, or
 * C = 1): the bytes are then in the same order, and a Reshape costs
 * nothing. */
static int64_t tr_relayout(tr *r, uint32_t t, int64_t src, int L, const char *tag,
                           tio_dtype dt) {
    const tr_tensor *x = &r->t[t];
    int64_t nchw[4];
    if (tr_dims_nchw(r, x, nchw)) return -2;
    const int64_t *perm = L ? TR_TO_NCHW : TR_TO_NHWC;
    const int64_t *from = L ? x->dims : nchw, *dims = L ? nchw : x->dims;
    int64_t last = -1;
    bool same = true;
    for (unsigned k = 0; k < 4; k++)
        if (from[perm[k]] != 1) {
            if (perm[k] < last) same = false;
            last = perm[k];
        }
    if (!same) return tr_transpose(r, src, perm, t, tag, dt, 4, dims);
    char stag[32];
    snprintf(stag, sizeof stag, "%s_shape", tag);
    int64_t in[2] = {src, tr_const_ints(r, x->own, stag, dims, 4)};
    int64_t out = tr_tmp(r, t, tag, dt, 4, dims);
    tr_node(r, "Reshape", in, 2, out);
    return r->rc ? -2 : out;
}

/* Tensor t in layout L (0 NHWC, 1 NCHW; 1 for rank 4 only), as stored
 * (flt false) or as float. -2 with r->rc or r->fail set on failure; -1 if the tensor
 * has no value yet (the caller checked it does). */
static int64_t tr_get(tr *r, uint32_t t, int L, bool flt) {
    tr_tensor *x = &r->t[t];
    if (r->rc) return -2;
    bool isf = !x->q && x->dtype != TIO_FLOAT16;
    int view = flt && !isf ? 1 : 0;
    if (x->v[L][view] >= 0) return x->v[L][view];
    int64_t nchw[4];
    if (L && tr_dims_nchw(r, x, nchw)) return -2;
    const int64_t *dims = L ? nchw : x->dims;
    if (view == 0) {
        int64_t src = x->v[!L][0];
        if (src < 0) return -1;
        x->v[L][0] = tr_relayout(r, t, src, L, L ? "nchw" : "nhwc", x->dtype);
        return r->rc ? -2 : x->v[L][0];
    }
    int64_t out;
    if (!x->q) {
        /* float16: Cast to float32 */
        int64_t in = tr_get(r, t, L, false);
        out = tr_float_tmp(r, t, L, dims);
        int64_t nd = tr_node(r, "Cast", &in, 1, out);
        tr_attr_i(r, nd, "to", 1);
    } else if (x->dtype == TIO_INT64) {
        /* (q - zero_point) * scale: no DequantizeLinear takes int64 */
        int64_t in[2] = {tr_get(r, t, L, false), -1}, sc;
        tr_qconsts(r, t, &sc, &in[1]);
        int64_t d = tr_tmp(r, t, L ? "centred_nchw" : "centred", TIO_INT64, x->rank, dims);
        tr_node(r, "Sub", in, 2, d);
        int64_t f = tr_tmp(r, t, L ? "unscaled_nchw" : "unscaled", TIO_FLOAT32, x->rank, dims);
        int64_t nd = tr_node(r, "Cast", &d, 1, f);
        tr_attr_i(r, nd, "to", 1);
        int64_t m[2] = {f, sc};
        out = tr_float_tmp(r, t, L, dims);
        tr_node(r, "Mul", m, 2, out);
    } else if (x->nscale > 1 && L == 1) {
        /* per axis: dequantized along the file's axis, then transposed */
        int64_t f = tr_get(r, t, 0, true);
        out = tr_transpose(r, f, TR_TO_NCHW, t, "float_nchw", TIO_FLOAT32, 4, dims);
    } else {
        int64_t in[3];
        in[0] = x->v[L][0] >= 0 || x->nscale > 1 ? tr_get(r, t, L, false) : -1;
        if (in[0] == -1) {
            /* dequantize where the stored form is, transpose the float */
            int64_t f = tr_get(r, t, !L, true);
            out = tr_relayout(r, t, f, L, L ? "float_nchw" : "float", TIO_FLOAT32);
        } else {
            tr_qconsts(r, t, &in[1], &in[2]);
            out = tr_float_tmp(r, t, L, dims);
            int64_t nd = tr_node(r, "DequantizeLinear", in, 3, out);
            if (x->nscale > 1) tr_attr_i(r, nd, "axis", x->rank == 1 ? 0 : x->axis);
        }
    }
    x->v[L][view] = r->rc ? -1 : out;
    return r->rc ? -2 : out;
}

/* Whether tensor t has a value in layout L already. */
static bool tr_has(const tr *r, uint32_t t, int L) {
    return r->t[t].v[L][0] >= 0 || r->t[t].v[L][1] >= 0;
}

/* The float result `f` (layout L) of an operator becomes output tensor t:
 * the fused activation, then QuantizeLinear when t is quantized. */
static void tr_finish(tr *r, uint32_t t, int L, int64_t f, int act) {
    tr_tensor *x = &r->t[t];
    if (r->rc || f < 0) return;
    int64_t nchw[4];
    if (L && tr_dims_nchw(r, x, nchw)) return;
    const int64_t *dims = L ? nchw : x->dims;
    bool last_float = !x->q;
    if (act) {
        static const double lo[4] = {0, 0, -1, 0}, hi[4] = {0, 0, 1, 6};
        int64_t out = last_float && !L ? tr_value(r, x->own, TIO_FLOAT32,
                                                  x->rank, x->dims, -1)
                                       : tr_tmp(r, t, L ? "act_nchw" : "act", TIO_FLOAT32,
                                                x->rank, dims);
        if (act == TFL_ActivationFunctionType_RELU) {
            tr_node(r, "Relu", &f, 1, out);
        } else if (act == TFL_ActivationFunctionType_TANH) {
            tr_node(r, "Tanh", &f, 1, out);
        } else {
            int64_t in[3] = {f, tr_const_float(r, x->own, "min", lo[act]),
                             tr_const_float(r, x->own, "max", hi[act])};
            tr_node(r, "Clip", in, 3, out);
        }
        f = out;
        if (last_float && !L) x->named = true;
    }
    if (!x->q) {
        x->v[L][0] = f;
        return;
    }
    int64_t in[3] = {f, -1, -1};
    tr_qconsts(r, t, &in[1], &in[2]);
    int64_t out = L ? tr_tmp(r, t, "nchw", x->dtype, x->rank, dims)
                    : tr_value(r, x->own, x->dtype, x->rank, x->dims, -1);
    if (!L) x->named = true;
    tr_node(r, "QuantizeLinear", in, 3, out);
    x->v[L][0] = r->rc ? -1 : out;
}

/* The float result of an unfused operator, before tr_finish: named as the
 * tensor when it is the final float NHWC value. */
static int64_t tr_result(tr *r, uint32_t t, int L, bool fused) {
    tr_tensor *x = &r->t[t];
    int64_t nchw[4];
    if (L && tr_dims_nchw(r, x, nchw)) return -1;
    if (!fused && !x->q && !L) {
        x->named = true;
        return tr_value(r, x->own, TIO_FLOAT32, x->rank, x->dims, -1);
    }
    return tr_tmp(r, t, L ? "pre_nchw" : "pre", TIO_FLOAT32, x->rank, L ? nchw : x->dims);
}

/* ----------------------------------------------------------- operators */

typedef struct tr_op {
    const tio_tfl_opmap *m;
    int32_t code;
    tio_fb_ref opt; /* the options table (empty when absent or another member) */
    uint32_t nin, nout;
    int32_t in[8];
    int32_t out[1];
} tr_op;

/* Elements of tensor x, or UINT64_MAX past 2^62. */
static uint64_t tr_numel(const tr_tensor *x) {
    uint64_t n = 1;
    for (uint32_t k = 0; k < x->rank; k++) {
        if (x->dims[k] && n > (UINT64_C(1) << 62) / (uint64_t)x->dims[k]) return UINT64_MAX;
        n *= (uint64_t)x->dims[k];
    }
    return n;
}

/* Reads a small integer constant (int32/int64) of at most cap elements. */
static int tr_ints(tr *r, int32_t t, int64_t *out, size_t cap, size_t *n) {
    if (t < 0 || r->t[t].ctensor < 0) return tr_fail(r, "an operand that must be a constant is not");
    const tr_tensor *x = &r->t[t];
    const tio_tensor *ct = r->ctx->c->tensors[x->ctensor];
    const uint8_t *d = tio_tensor_data(ct);
    size_t esz = x->dtype == TIO_INT32 ? 4 : x->dtype == TIO_INT64 ? 8 : 0;
    uint64_t cnt = tr_numel(x);
    if (!esz || !d || cnt > cap) return tr_fail(r, "a constant operand of an unexpected type or size");
    for (uint64_t k = 0; k < cnt; k++)
        out[k] = esz == 4 ? (int64_t)(int32_t)tio__ld32(d + 4 * k) : (int64_t)tio__ld64(d + 8 * k);
    *n = (size_t)cnt;
    return 0;
}

static int tr_act_ok(tr *r, int act) {
    return act < 0 || act > TFL_ActivationFunctionType_TANH ? tr_fail(r, "a fused activation tensio does not raise (SIGN_BIT or unknown)") : 0;
}

/* SAME padding: explicit pads (begin, end) from static shapes. */
static void tr_same(int64_t in, int64_t k, int64_t s, int64_t dil, int64_t *b, int64_t *e) {
    int64_t out = (in + s - 1) / s;
    int64_t need = (out - 1) * s + (k - 1) * dil + 1 - in;
    if (need < 0) need = 0;
    *b = need / 2;
    *e = need - need / 2;
}

static void tr_conv_pool(tr *r, const tr_op *o) {
    const tio_tfl_opmap *m = o->m;
    bool pool = m->kind == TFL_K_POOL, dw = m->kind == TFL_K_DWCONV;
    /* option ids coincide for padding/stride_w/stride_h in all three tables */
    int pad = tio__fb_i8(&o->opt, TFL_Conv2DOptions_padding, 0);
    int64_t sw = tio__fb_i32(&o->opt, TFL_Conv2DOptions_stride_w, 1);
    int64_t sh = tio__fb_i32(&o->opt, TFL_Conv2DOptions_stride_h, 1);
    int act, dh = 1, dwf = 1;
    int64_t kh, kw;
    const tr_tensor *x = &r->t[o->in[0]], *y = &r->t[o->out[0]];
    if (x->rank != 4 || y->rank != 4) {
        tr_fail(r, "input or output is not rank 4");
        return;
    }
    if (pool) {
        act = tio__fb_i8(&o->opt, TFL_Pool2DOptions_fused_activation_function, 0);
        kw = tio__fb_i32(&o->opt, TFL_Pool2DOptions_filter_width, 1);
        kh = tio__fb_i32(&o->opt, TFL_Pool2DOptions_filter_height, 1);
    } else {
        /* constant weights, or computed ones (float16 weights' DEQUANTIZE,
         * as TensorFlow's float16 quantization writes them) */
        if (o->nin < 2 || o->in[1] < 0 || r->t[o->in[1]].rank != 4) {
            tr_fail(r, "the weights are not of rank 4");
            return;
        }
        const tr_tensor *w = &r->t[o->in[1]];
        kh = w->dims[1];
        kw = w->dims[2];
        if (dw) {
            act = tio__fb_i8(&o->opt, TFL_DepthwiseConv2DOptions_fused_activation_function, 0);
            dwf = tio__fb_i32(&o->opt, TFL_DepthwiseConv2DOptions_dilation_w_factor, 1);
            dh = tio__fb_i32(&o->opt, TFL_DepthwiseConv2DOptions_dilation_h_factor, 1);
        } else {
            act = tio__fb_i8(&o->opt, TFL_Conv2DOptions_fused_activation_function, 0);
            dwf = tio__fb_i32(&o->opt, TFL_Conv2DOptions_dilation_w_factor, 1);
            dh = tio__fb_i32(&o->opt, TFL_Conv2DOptions_dilation_h_factor, 1);
            if (w->dims[3] <= 0 || x->dims[3] % w->dims[3]) {
                tr_fail(r, "the input channels are not a multiple of the weights'");
                return;
            }
        }
    }
    if (sw < 1 || sh < 1 || kw < 1 || kh < 1 || dwf < 1 || dh < 1 || sw > (1 << 20) ||
        sh > (1 << 20) || dwf > (1 << 20) || dh > (1 << 20) || kh > (1 << 20) || kw > (1 << 20)) {
        tr_fail(r, "strides, dilations or kernel sizes out of range");
        return;
    }
    if (tr_act_ok(r, act) || (pad != TFL_Padding_SAME && pad != TFL_Padding_VALID)) {
        tr_fail(r, "an unknown padding");
        return;
    }
    int64_t pads[4] = {0, 0, 0, 0};
    if (pad == TFL_Padding_SAME) {
        tr_same(x->dims[1], kh, sh, dh, &pads[0], &pads[2]);
        tr_same(x->dims[2], kw, sw, dwf, &pads[1], &pads[3]);
    }
    int64_t in[3] = {tr_get(r, (uint32_t)o->in[0], 1, true), -1, -1};
    size_t nin = 1;
    if (!pool) {
        const tr_tensor *w = &r->t[o->in[1]];
        static const int64_t ohwi[4] = {0, 3, 1, 2}, ihwo[4] = {3, 0, 1, 2};
        int64_t wd[4];
        const int64_t *p = dw ? ihwo : ohwi;
        for (unsigned k = 0; k < 4; k++) wd[k] = w->dims[p[k]];
        int64_t wf = tr_get(r, (uint32_t)o->in[1], 0, true);
        in[1] = tr_transpose(r, wf, p, (uint32_t)o->in[1], "oihw", TIO_FLOAT32, 4, wd);
        nin = 2;
        if (o->nin > 2 && o->in[2] >= 0) {
            in[2] = tr_get(r, (uint32_t)o->in[2], 0, true);
            nin = 3;
        }
    }
    int64_t out = tr_result(r, (uint32_t)o->out[0], 1, true);
    int64_t nd = tr_node(r, m->onnx, in, nin, out);
    int64_t k2[2] = {kh, kw}, s2[2] = {sh, sw}, d2[2] = {dh, dwf};
    tr_attr_ints(r, nd, "kernel_shape", k2, 2);
    tr_attr_ints(r, nd, "strides", s2, 2);
    tr_attr_ints(r, nd, "pads", pads, 4);
    if (!pool) tr_attr_ints(r, nd, "dilations", d2, 2);
    if (dw) tr_attr_i(r, nd, "group", x->dims[3]);
    else if (!pool && x->dims[3] != r->t[o->in[1]].dims[3])
        tr_attr_i(r, nd, "group", x->dims[3] / r->t[o->in[1]].dims[3]);
    if (pool && strcmp(m->onnx, "AveragePool") == 0) tr_attr_i(r, nd, "count_include_pad", 0);
    tr_finish(r, (uint32_t)o->out[0], 1, out, act);
}

/* TRANSPOSE_CONV (output_shape, weights OHWI, input NHWC[, bias]):
 * ConvTranspose with weights [in, out, kh, kw] and explicit pads. TFLite
 * places input pixel i at output i * stride - pad_begin, pad_begin being a
 * forward convolution's SAME padding from the output's size (0 for VALID),
 * and keeps the output's static size: the end is cut (pads) or filled with
 * the bias alone (output_padding, less than the stride). The output's
 * shape is the tensor's static one; a constant output_shape must equal it,
 * and one computed at run time (a graph input) is not read. */
static void tr_tconv(tr *r, const tr_op *o) {
    if (o->nin < 3 || o->in[1] < 0 || o->in[2] < 0) {
        tr_fail(r, "not the inputs (output_shape, weights, input)");
        return;
    }
    uint32_t t = (uint32_t)o->out[0];
    const tr_tensor *w = &r->t[o->in[1]], *x = &r->t[o->in[2]], *y = &r->t[t];
    if (x->rank != 4 || y->rank != 4 || w->rank != 4) {
        tr_fail(r, "input, weights or output is not rank 4");
        return;
    }
    if (r->t[o->in[0]].ctensor >= 0) {
        int64_t shp[4];
        size_t n = 0;
        if (tr_ints(r, o->in[0], shp, 4, &n)) return;
        for (size_t k = 0; k < 4; k++)
            if (n != 4 || shp[k] != y->dims[k]) {
                tr_fail(r, "output_shape is not the output tensor's shape");
                return;
            }
    }
    int pad = tio__fb_i8(&o->opt, TFL_TransposeConvOptions_padding, 0);
    int64_t s[2] = {tio__fb_i32(&o->opt, TFL_TransposeConvOptions_stride_h, 1),
                    tio__fb_i32(&o->opt, TFL_TransposeConvOptions_stride_w, 1)};
    int act = tio__fb_i8(&o->opt, TFL_TransposeConvOptions_fused_activation_function, 0);
    int64_t k2[2] = {w->dims[1], w->dims[2]};
    if (tr_act_ok(r, act)) return;
    if (pad != TFL_Padding_SAME && pad != TFL_Padding_VALID) {
        tr_fail(r, "an unknown padding");
        return;
    }
    if (w->dims[0] != y->dims[3] || w->dims[3] != x->dims[3] || x->dims[0] != y->dims[0]) {
        tr_fail(r, "the weights' channels are not the input's and the output's");
        return;
    }
    int64_t pads[4] = {0, 0, 0, 0}, opad[2] = {0, 0};
    for (unsigned a = 0; a < 2; a++) {
        int64_t in = x->dims[1 + a], out = y->dims[1 + a], k = k2[a], st = s[a];
        if (st < 1 || st > (1 << 20) || k < 1 || k > (1 << 20) || in < 1 || out < 1 ||
            in > (INT64_C(1) << 31) || out > (INT64_C(1) << 31)) {
            tr_fail(r, "strides, kernel or spatial sizes out of range");
            return;
        }
        if (pad == TFL_Padding_SAME) {
            int64_t need = ((out + st - 1) / st - 1) * st + k - out;
            pads[a] = need > 0 ? need / 2 : 0;
        }
        pads[2 + a] = (in - 1) * st + k - out - pads[a];
        if (pads[2 + a] < 0) {
            opad[a] = -pads[2 + a];
            pads[2 + a] = 0;
        }
        if (opad[a] >= st) {
            tr_fail(r, "the output is larger than the input covers");
            return;
        }
    }
    static const int64_t iohw[4] = {3, 0, 1, 2};
    int64_t wd[4];
    for (unsigned k = 0; k < 4; k++) wd[k] = w->dims[iohw[k]];
    int64_t wf = tr_get(r, (uint32_t)o->in[1], 0, true);
    int64_t in[3] = {tr_get(r, (uint32_t)o->in[2], 1, true),
                     tr_transpose(r, wf, iohw, (uint32_t)o->in[1], "iohw", TIO_FLOAT32, 4, wd),
                     -1};
    size_t nin = 2;
    if (o->nin > 3 && o->in[3] >= 0) {
        in[2] = tr_get(r, (uint32_t)o->in[3], 0, true);
        nin = 3;
    }
    int64_t out = tr_result(r, t, 1, true);
    int64_t nd = tr_node(r, "ConvTranspose", in, nin, out);
    tr_attr_ints(r, nd, "kernel_shape", k2, 2);
    tr_attr_ints(r, nd, "strides", s, 2);
    tr_attr_ints(r, nd, "pads", pads, 4);
    if (opad[0] || opad[1]) tr_attr_ints(r, nd, "output_padding", opad, 2);
    tr_finish(r, t, 1, out, act);
}

static void tr_fc(tr *r, const tr_op *o) {
    if (o->nin < 2 || o->in[1] < 0 || r->t[o->in[1]].rank != 2) {
        tr_fail(r, "the weights are not rank 2");
        return;
    }
    if (tio__fb_i8(&o->opt, TFL_FullyConnectedOptions_weights_format, 0) != 0) {
        tr_fail(r, "shuffled weights (weights_format) are not raised");
        return;
    }
    int act = tio__fb_i8(&o->opt, TFL_FullyConnectedOptions_fused_activation_function, 0);
    if (tr_act_ok(r, act)) return;
    uint32_t t = (uint32_t)o->out[0];
    const tr_tensor *x = &r->t[o->in[0]], *w = &r->t[o->in[1]], *y = &r->t[t];
    int64_t inner = w->dims[1], units = w->dims[0];
    uint64_t total = tr_numel(x);
    if (inner <= 0 || total == UINT64_MAX || total % (uint64_t)inner) {
        tr_fail(r, "the input's size is not a multiple of the weights' inner dimension");
        return;
    }
    int64_t rows = (int64_t)(total / (uint64_t)inner);
    int64_t a = tr_get(r, (uint32_t)o->in[0], 0, true);
    if (x->rank != 2 || x->dims[0] != rows) {
        int64_t shp[2] = {rows, inner};
        int64_t s = tr_const_ints(r, y->own, "in_shape", shp, 2);
        int64_t in[2] = {a, s};
        a = tr_tmp(r, t, "in2d", TIO_FLOAT32, 2, shp);
        tr_node(r, "Reshape", in, 2, a);
    }
    bool same = y->rank == 2 && y->dims[0] == rows && y->dims[1] == units;
    int64_t in[3] = {a, tr_get(r, (uint32_t)o->in[1], 0, true), -1};
    size_t nin = 2;
    if (o->nin > 2 && o->in[2] >= 0) {
        in[2] = tr_get(r, (uint32_t)o->in[2], 0, true);
        nin = 3;
    }
    int64_t od[2] = {rows, units};
    int64_t out = same ? tr_result(r, t, 0, act != 0)
                       : tr_tmp(r, t, "gemm", TIO_FLOAT32, 2, od);
    int64_t nd = tr_node(r, "Gemm", in, nin, out);
    tr_attr_i(r, nd, "transB", 1);
    if (!same) {
        int64_t s = tr_const_ints(r, y->own, "shape", y->dims, y->rank);
        int64_t rin[2] = {out, s};
        out = tr_result(r, t, 0, act != 0);
        tr_node(r, "Reshape", rin, 2, out);
    }
    tr_finish(r, t, 0, out, act);
}

/* Layout for an elementwise operator: NCHW when every runtime input is rank
 * 4 with an NCHW form and every constant input is a single element. */
static int tr_ew_layout(tr *r, const tr_op *o, uint32_t nin) {
    bool any = false;
    if (r->t[o->out[0]].rank != 4) return 0;
    for (uint32_t k = 0; k < nin; k++) {
        const tr_tensor *x = &r->t[o->in[k]];
        if (x->ctensor >= 0) {
            if (tr_numel(x) != 1) return 0;
            continue;
        }
        if (x->rank != 4 || !tr_has(r, (uint32_t)o->in[k], 1)) return 0;
        any = true;
    }
    return any ? 1 : 0;
}

/* A constant of one element in another layout: its NHWC form (the same
 * element; broadcasting makes rank and layout moot, but a rank-4 constant
 * keeps rank 4 either way). */
static int64_t tr_operand(tr *r, int32_t t, int L) {
    const tr_tensor *x = &r->t[t];
    if (x->ctensor >= 0) return tr_get(r, (uint32_t)t, 0, true);
    return tr_get(r, (uint32_t)t, L, true);
}

static void tr_elementwise(tr *r, const tr_op *o) {
    const tio_tfl_opmap *m = o->m;
    uint32_t nin = m->kind == TFL_K_BINARY ? 2 : 1;
    if (o->nin < nin) {
        tr_fail(r, "too few inputs");
        return;
    }
    for (uint32_t k = 0; k < nin; k++)
        if (o->in[k] < 0) {
            tr_fail(r, "an absent input");
            return;
        }
    int act = m->kind == TFL_K_BINARY
                  ? tio__fb_i8(&o->opt, TFL_AddOptions_fused_activation_function, 0)
                  : 0;
    if (tr_act_ok(r, act)) return;
    int L = tr_ew_layout(r, o, nin);
    uint32_t t = (uint32_t)o->out[0];
    tr_tensor *xi = &r->t[o->in[0]];
    if (m->kind == TFL_K_DEQUANTIZE && !L && !r->t[t].q && !tr_has(r, t, 0) &&
        (xi->q || xi->dtype == TIO_FLOAT16) && xi->v[0][1] < 0)
        r->deq_out = tr_result(r, t, 0, false); /* its own name */
    int64_t in[3] = {tr_operand(r, o->in[0], L), nin > 1 ? tr_operand(r, o->in[1], L) : -1, -1};
    if (r->deq_out >= 0) {
        /* the input's float view was made another way (a relayout) */
        int64_t d = r->deq_out;
        r->deq_out = -1;
        if (in[0] >= 0) {
            tr_node(r, "Identity", in, 1, d);
            in[0] = d;
        }
    }
    size_t n = nin;
    const char *op = m->onnx;
    if (m->kind == TFL_K_CLIP) {
        in[1] = tr_const_float(r, r->t[t].own, "min", m->lo);
        in[2] = tr_const_float(r, r->t[t].own, "max", m->hi);
        n = 3;
    }
    if (m->kind == TFL_K_QUANTIZE || m->kind == TFL_K_DEQUANTIZE) {
        /* the float view of the input is the result */
        if (m->kind == TFL_K_DEQUANTIZE && r->t[t].q) {
            tr_fail(r, "a quantized DEQUANTIZE output");
            return;
        }
        tr_finish(r, t, L, in[0], 0);
        return;
    }
    int64_t out = tr_result(r, t, L, act != 0);
    int64_t nd = tr_node(r, op, in, n, out);
    if (m->kind == TFL_K_LEAKY)
        tr_attr_f(r, nd, "alpha", (double)tio__fb_f32(&o->opt, TFL_LeakyReluOptions_alpha, 0.f));
    tr_finish(r, t, L, out, act);
}

static void tr_reshape(tr *r, const tr_op *o) {
    uint32_t t = (uint32_t)o->out[0];
    const tr_tensor *y = &r->t[t];
    int64_t s = tr_const_ints(r, y->own, "shape", y->dims, y->rank);
    int64_t in[2] = {tr_get(r, (uint32_t)o->in[0], 0, true), s};
    int64_t out = tr_result(r, t, 0, false);
    tr_node(r, "Reshape", in, 2, out);
    tr_finish(r, t, 0, out, 0);
}

static void tr_softmax(tr *r, const tr_op *o) {
    uint32_t t = (uint32_t)o->out[0];
    double beta = (double)tio__fb_f32(&o->opt, TFL_SoftmaxOptions_beta, 1.f);
    int64_t x = tr_get(r, (uint32_t)o->in[0], 0, true);
    const tr_tensor *y = &r->t[t];
    if (beta != 1.0) {
        int64_t in[2] = {x, tr_const_float(r, y->own, "beta", beta)};
        x = tr_tmp(r, t, "scaled", TIO_FLOAT32, y->rank, y->dims);
        tr_node(r, "Mul", in, 2, x);
    }
    int64_t out = tr_result(r, t, 0, false);
    int64_t nd = tr_node(r, "Softmax", &x, 1, out);
    tr_attr_i(r, nd, "axis", -1);
    tr_finish(r, t, 0, out, 0);
}

static int64_t tr_axis_nchw(int64_t a) { return a == 0 ? 0 : a == 3 ? 1 : a + 1; }

static void tr_concat(tr *r, const tr_op *o) {
    uint32_t t = (uint32_t)o->out[0];
    const tr_tensor *y = &r->t[t];
    int64_t axis = tio__fb_i32(&o->opt, TFL_ConcatenationOptions_axis, 0);
    int act = tio__fb_i8(&o->opt, TFL_ConcatenationOptions_fused_activation_function, 0);
    if (tr_act_ok(r, act)) return;
    if (axis < 0) axis += y->rank;
    if (axis < 0 || axis >= (int64_t)y->rank || o->nin < 1) {
        tr_fail(r, "the axis is out of range");
        return;
    }
    int L = y->rank == 4 ? 1 : 0;
    for (uint32_t k = 0; k < o->nin; k++)
        if (o->in[k] < 0 || (L && (r->t[o->in[k]].ctensor >= 0 || !tr_has(r, (uint32_t)o->in[k], 1))))
            L = 0;
    for (uint32_t k = 0; k < o->nin; k++)
        if (o->in[k] < 0) {
            tr_fail(r, "an absent input");
            return;
        }
    int64_t in[8];
    for (uint32_t k = 0; k < o->nin; k++) in[k] = tr_get(r, (uint32_t)o->in[k], L, true);
    int64_t out = tr_result(r, t, L, act != 0);
    int64_t nd = tr_node(r, "Concat", in, o->nin, out);
    tr_attr_i(r, nd, "axis", L ? tr_axis_nchw(axis) : axis);
    tr_finish(r, t, L, out, act);
}

static void tr_pad(tr *r, const tr_op *o) {
    uint32_t t = (uint32_t)o->out[0];
    const tr_tensor *x = &r->t[o->in[0]], *y = &r->t[t];
    int64_t p[16], pads[16];
    size_t n = 0;
    if (o->nin < 2 || tr_ints(r, o->in[1], p, 16, &n)) return;
    if (n != 2 * (size_t)x->rank) {
        tr_fail(r, "the paddings do not match the input's rank");
        return;
    }
    if (y->rank != x->rank) {
        tr_fail(r, "the output's rank is not the input's");
        return;
    }
    int L = x->rank == 4 && tr_has(r, (uint32_t)o->in[0], 1) ? 1 : 0;
    for (uint32_t k = 0; k < x->rank; k++) {
        uint32_t src = L ? (uint32_t)TR_TO_NCHW[k] : k;
        pads[k] = p[2 * src];
        pads[x->rank + k] = p[2 * src + 1];
    }
    int64_t in[2] = {tr_get(r, (uint32_t)o->in[0], L, true),
                     tr_const_ints(r, y->own, "pads", pads, 2 * x->rank)};
    int64_t out = tr_result(r, t, L, false);
    tr_node(r, "Pad", in, 2, out);
    tr_finish(r, t, L, out, 0);
}

static void tr_mean(tr *r, const tr_op *o) {
    uint32_t t = (uint32_t)o->out[0];
    const tr_tensor *x = &r->t[o->in[0]], *y = &r->t[t];
    int64_t ax[16];
    size_t n = 0;
    if (o->nin < 2 || tr_ints(r, o->in[1], ax, 16, &n)) return;
    bool keep = tio__fb_bool(&o->opt, TFL_ReducerOptions_keep_dims, false);
    bool red[16] = {false};
    for (size_t k = 0; k < n; k++) {
        if (ax[k] < 0) ax[k] += x->rank;
        if (ax[k] < 0 || ax[k] >= (int64_t)x->rank || x->rank > 16) {
            tr_fail(r, "an axis is out of range");
            return;
        }
        red[ax[k]] = true;
    }
    if (keep && y->rank != x->rank) {
        tr_fail(r, "keep_dims, and the output's rank is not the input's");
        return;
    }
    /* NCHW when the input has that form and the result's dims keep their
     * order (reducing H and W, or keeping dims) */
    int L = x->rank == 4 && tr_has(r, (uint32_t)o->in[0], 1) &&
            (keep || (red[1] && red[2]) || (!red[1] && !red[2] && !red[3]));
    int OL = L && keep ? 1 : 0;
    int64_t axes[16];
    for (size_t k = 0; k < n; k++) axes[k] = L ? tr_axis_nchw(ax[k]) : ax[k];
    int64_t in[2] = {tr_get(r, (uint32_t)o->in[0], L, true), -1};
    int64_t out = tr_result(r, t, OL, false);
    if (r->opset >= 18) {
        in[1] = tr_const_ints(r, y->own, "axes", axes, n);
        int64_t nd = tr_node(r, "ReduceMean", in, 2, out);
        tr_attr_i(r, nd, "keepdims", keep);
    } else {
        int64_t nd = tr_node(r, "ReduceMean", in, 1, out);
        tr_attr_ints(r, nd, "axes", axes, n);
        tr_attr_i(r, nd, "keepdims", keep);
    }
    tr_finish(r, t, OL, out, 0);
}

/* STRIDED_SLICE as Slice on all axes; masked bounds open, shrunk axes one
 * element wide and dropped by a Reshape to the output's shape. */
static void tr_slice(tr *r, const tr_op *o) {
    uint32_t t = (uint32_t)o->out[0];
    const tr_tensor *x = &r->t[o->in[0]], *y = &r->t[t];
    int64_t b[16], e[16], st[16], ax[16];
    size_t nb = 0, ne = 0, ns = 0;
    if (o->nin < 4 || tr_ints(r, o->in[1], b, 16, &nb) || tr_ints(r, o->in[2], e, 16, &ne) ||
        tr_ints(r, o->in[3], st, 16, &ns))
        return;
    int32_t bm = tio__fb_i32(&o->opt, TFL_StridedSliceOptions_begin_mask, 0);
    int32_t em = tio__fb_i32(&o->opt, TFL_StridedSliceOptions_end_mask, 0);
    int32_t sm = tio__fb_i32(&o->opt, TFL_StridedSliceOptions_shrink_axis_mask, 0);
    bool off = tio__fb_bool(&o->opt, TFL_StridedSliceOptions_offset, false);
    if (tio__fb_i32(&o->opt, TFL_StridedSliceOptions_ellipsis_mask, 0) ||
        tio__fb_i32(&o->opt, TFL_StridedSliceOptions_new_axis_mask, 0)) {
        tr_fail(r, "an ellipsis or new-axis mask");
        return;
    }
    if (nb != x->rank || ne != nb || ns != nb) {
        tr_fail(r, "begin, end and strides do not match the input's rank");
        return;
    }
    for (size_t k = 0; k < nb; k++) {
        if (st[k] == 0) {
            tr_fail(r, "a stride of 0");
            return;
        }
        bool pos = st[k] > 0;
        if (off) e[k] += b[k];
        if (bm & (1 << k)) b[k] = pos ? 0 : INT64_MAX;
        if (em & (1 << k)) e[k] = pos ? INT64_MAX : INT64_MIN;
        if (sm & (1 << k)) {
            e[k] = b[k] == -1 ? INT64_MAX : b[k] + 1;
            st[k] = 1;
        }
    }
    /* only the axes that cut (a Slice of fewer axes: tmfile's cuts one) */
    size_t na = 0;
    for (size_t k = 0; k < nb; k++) {
        if (st[k] == 1 && (b[k] == 0 || b[k] <= -x->dims[k]) && e[k] >= x->dims[k]) continue;
        b[na] = b[k];
        e[na] = e[k];
        st[na] = st[k];
        ax[na++] = (int64_t)k;
    }
    if (!na) { /* nothing cut: axis 0 whole */
        b[0] = 0;
        e[0] = INT64_MAX;
        st[0] = 1;
        ax[0] = 0;
        na = 1;
    }
    const char *own = y->own;
    int64_t in[5] = {tr_get(r, (uint32_t)o->in[0], 0, true), tr_const_ints(r, own, "starts", b, na),
                     tr_const_ints(r, own, "ends", e, na), tr_const_ints(r, own, "axes", ax, na),
                     tr_const_ints(r, own, "steps", st, na)};
    int64_t out = sm ? tr_tmp(r, t, "slice", TIO_FLOAT32, x->rank, NULL) : tr_result(r, t, 0, false);
    tr_node(r, "Slice", in, 5, out);
    if (sm) {
        int64_t rin[2] = {out, tr_const_ints(r, own, "shape", y->dims, y->rank)};
        out = tr_result(r, t, 0, false);
        tr_node(r, "Reshape", rin, 2, out);
    }
    tr_finish(r, t, 0, out, 0);
}

static bool tr_same_q(const tr_tensor *a, const tr_tensor *b) {
    if (a->q != b->q || a->dtype != b->dtype) return false;
    if (!a->q) return true;
    return a->nscale == 1 && b->nscale == 1 && tr_f32(&a->scales, 0) == tr_f32(&b->scales, 0) &&
           tr_zp(a, 0) == tr_zp(b, 0);
}

static void tr_transpose_op(tr *r, const tr_op *o) {
    uint32_t t = (uint32_t)o->out[0];
    tr_tensor *x = &r->t[o->in[0]], *y = &r->t[t];
    int64_t perm[16];
    size_t n = 0;
    if (o->nin < 2 || tr_ints(r, o->in[1], perm, 16, &n)) return;
    if (n != x->rank || n != y->rank) {
        tr_fail(r, "the permutation does not match the rank");
        return;
    }
    if (n == 4 && perm[0] == 0 && perm[1] == 2 && perm[2] == 3 && perm[3] == 1 &&
        tr_same_q(x, y)) {
        /* NCHW made NHWC: the output's NCHW form is the input itself */
        int64_t v = tr_get(r, (uint32_t)o->in[0], 0, false);
        if (v >= 0) y->v[1][0] = v;
        return;
    }
    if (n == 4 && perm[0] == 0 && perm[1] == 3 && perm[2] == 1 && perm[3] == 2 &&
        tr_same_q(x, y)) {
        /* NHWC made NCHW: the output is the input's NCHW form (made once,
         * or already there after a convolution) */
        int64_t v = tr_get(r, (uint32_t)o->in[0], 1, false);
        if (v >= 0) y->v[0][0] = v;
        return;
    }
    int64_t in = tr_get(r, (uint32_t)o->in[0], 0, true);
    int64_t out = tr_result(r, t, 0, false);
    int64_t nd = tr_node(r, "Transpose", &in, 1, out);
    tr_attr_ints(r, nd, "perm", perm, n);
    tr_finish(r, t, 0, out, 0);
}

/* ------------------------------------------------------------- the raise */

typedef struct tr_gaps {
    char text[TR_GAPS_CAP];
    size_t len;
    unsigned count, listed;
} tr_gaps;

static void tr_gap(tr_gaps *gp, const char *fmt, const char *a, uint32_t op, const char *why) {
    gp->count++;
    if (gp->len + 200 >= sizeof gp->text) return;
    int n = snprintf(gp->text + gp->len, sizeof gp->text - gp->len, fmt, gp->listed ? "; " : "",
                     a, op, why ? ": " : "", why ? why : "");
    if (n > 0) gp->len += (size_t)n < sizeof gp->text - gp->len ? (size_t)n : 0;
    gp->listed++;
}

static void tr_opname(const tio_fb_vec *codes, uint32_t oc, int32_t code, char *out, size_t cap) {
    const char *s = NULL;
    uint32_t n = 0;
    tio_fb_ref ct;
    if (code == TFL_BuiltinOperator_CUSTOM && tio__fb_vec_table(codes, oc, &ct) &&
        tio__fb_string(&ct, TFL_OperatorCode_custom_code, &s, &n) && s)
        snprintf(out, cap, "CUSTOM '%.40s'", s);
    else if (code >= 0 && code < TIO_TFL_OP_COUNT)
        snprintf(out, cap, "%s", tio__tfl_op_names[code]);
    else
        snprintf(out, cap, "BUILTIN_%d", code);
}

/* A node of the operator's TFLite name over the stored (NHWC) forms. */
static void tr_native(tr *r, const tr_op *o, const char *name, int32_t code) {
    int64_t in[8], out[1];
    for (uint32_t k = 0; k < o->nin; k++) {
        int32_t t = o->in[k];
        if (t < 0 || (uint32_t)t >= r->nt) { /* absent (the reader checked the range) */
            in[k] = -1;
            continue;
        }
        in[k] = tr_get(r, (uint32_t)t, 0, false);
        if (in[k] == -1) {
            r->t[t].v[0][0] = tr_value(r, r->t[t].own, r->t[t].dtype,
                                       r->t[t].rank, r->t[t].dims, -1);
            r->t[t].named = true;
            in[k] = r->t[t].v[0][0];
        }
    }
    /* an operator without one output (refused for that) keeps none */
    size_t nout = 0;
    if (o->nout == 1 && o->out[0] >= 0 && (uint32_t)o->out[0] < r->nt) {
        tr_tensor *y = &r->t[o->out[0]];
        if (y->v[0][0] < 0) {
            y->v[0][0] = tr_value(r, y->own, y->dtype, y->rank, y->dims, -1);
            y->named = true;
        }
        out[0] = y->v[0][0];
        nout = out[0] >= 0;
    }
    if (r->rc) return;
    tio_node_info ni;
    memset(&ni, 0, sizeof ni);
    ni.name = nout ? r->g->values[out[0]].name : NULL;
    ni.op = name;
    ni.native_id = code;
    ni.domain = "ai.tflite";
    ni.input_count = o->nin;
    ni.inputs = in;
    ni.output_count = nout;
    ni.outputs = out;
    size_t ix;
    r->rc = tio_graph_add_node(r->g, &ni, &ix, r->err);
}

static int tr_read_tensors(tr *r, const tio_fb_ref *sg, const int64_t *ctensor) {
    tio_fb_vec tv;
    r->nt = tio__fb_vector(sg, TFL_SubGraph_tensors, &tv) ? tv.count : 0;
    r->t = calloc(r->nt ? r->nt : 1, sizeof *r->t);
    if (!r->t) return tio__nomem(r->err, TFL);
    for (uint32_t i = 0; i < r->nt; i++) {
        tr_tensor *x = &r->t[i];
        tio_fb_ref tt;
        memset(x->v, 0xff, sizeof x->v);
        x->qconst[0] = x->qconst[1] = -1;
        x->producer = -1;
        x->ctensor = ctensor ? ctensor[i] : -1;
        tio__fb_vec_table(&tv, i, &tt);
        uint32_t sn = 0;
        tio__fb_string(&tt, TFL_Tensor_name, &x->name, &sn);
        int code = tio__fb_i8(&tt, TFL_Tensor_type, 0);
        static const tio_dtype types[] = {TIO_FLOAT32, TIO_FLOAT16, TIO_INT32, TIO_UINT8,
                                          TIO_INT64,   TIO_DTYPE_INVALID, TIO_BOOL, TIO_INT16,
                                          TIO_DTYPE_INVALID, TIO_INT8};
        x->dtype = code >= 0 && code < 10 ? types[code] : TIO_DTYPE_INVALID;
        x->variable = tio__fb_bool(&tt, TFL_Tensor_is_variable, false);
        tio_fb_vec sv;
        x->rank = tio__fb_vector(&tt, TFL_Tensor_shape, &sv) ? sv.count : 0;
        if (x->rank > r->ctx->limits.max_rank) x->rank = 0, x->dtype = TIO_DTYPE_INVALID;
        x->dims = calloc(x->rank ? x->rank : 1, sizeof *x->dims);
        if (!x->dims) return tio__nomem(r->err, TFL);
        for (uint32_t k = 0; k < x->rank; k++) {
            x->dims[k] = tio__fb_vec_i32(&sv, k);
            if (x->dims[k] < 0) x->dims[k] = 1; /* unknown: TFLite's shape holds 1 (batch) */
        }
        tio_fb_ref q;
        if (tio__fb_table(&tt, TFL_Tensor_quantization, &q) &&
            tio__fb_vector(&q, TFL_QuantizationParameters_scale, &x->scales) &&
            x->scales.count &&
            (x->dtype == TIO_INT8 || x->dtype == TIO_UINT8 || x->dtype == TIO_INT16 ||
             x->dtype == TIO_INT32 || x->dtype == TIO_INT64)) {
            x->q = true;
            x->nscale = x->scales.count;
            if (!tio__fb_vector(&q, TFL_QuantizationParameters_zero_point, &x->zps))
                x->zps.count = 0;
            x->axis = tio__fb_i32(&q, TFL_QuantizationParameters_quantized_dimension, 0);
            /* per axis: one scale per channel along quantized_dimension (a
             * rank-1 tensor, TensorFlow's per-channel bias, along its only
             * dimension whatever the axis says) */
            bool ok = x->nscale == 1 ||
                      (x->rank == 1 && x->dims[0] == (int64_t)x->nscale) ||
                      (x->rank > 1 && x->axis >= 0 && (uint32_t)x->axis < x->rank &&
                       x->dims[x->axis] == (int64_t)x->nscale);
            /* int64 (the bias of an int16 operator) has no DequantizeLinear:
             * Cast and Mul, which broadcast one scale or a rank-1 vector's */
            if (x->dtype == TIO_INT64 && x->nscale > 1 && x->rank != 1) ok = false;
            if (!ok)
                x->q = false, x->dtype = TIO_DTYPE_INVALID; /* not raised */
        }
    }
    /* unique value names, the file's first */
    char buf[32];
    for (uint32_t i = 0; i < r->nt; i++) {
        const char *nm = r->t[i].name && r->t[i].name[0] ? r->t[i].name : NULL;
        if (!nm) {
            snprintf(buf, sizeof buf, "tensor%u", i);
            nm = buf;
        }
        /* a repeated name gets the tensor's index ("x:t5"), so that many
         * tensors of one name cost one probe each, not one per earlier one */
        char tag[24];
        bool taken = tr_name_has(r, nm);
        if (taken) snprintf(tag, sizeof tag, "t%u", i);
        const char *own = tr_fresh(r, nm, taken ? tag : NULL);
        if (!own) return r->rc;
        r->t[i].own = (char *)own;
    }
    return TIO_OK;
}

int tio__tfl_raise(tio_read_ctx *ctx, const tio_fb_ref *sg, const tio_fb_vec *opcodes,
                   const int32_t *codes, uint32_t ncodes, const int64_t *ctensor, bool native,
                   tio_error *err) {
    tr r;
    memset(&r, 0, sizeof r);
    r.deq_out = -1;
    r.ctx = ctx;
    r.err = err;
    tio_graph *g = NULL;
    int rc = tio_container_new_graph(ctx->c, &g, err);
    if (!rc) rc = tio_graph_set_native_format(g, TFL, err);
    if (rc) return rc;
    r.g = g;
    tio_fb_vec ov, iv, xv;
    uint32_t nops = tio__fb_vector(sg, TFL_SubGraph_operators, &ov) ? ov.count : 0;
    rc = tr_read_tensors(&r, sg, ctensor);
    r.opset = 14;
    for (uint32_t i = 0; !rc && i < r.nt; i++)
        if (r.t[i].q && r.t[i].dtype == TIO_INT16) r.opset = 21; /* int16 QDQ */
    if (!rc) rc = tio__graph_reserve(g, (size_t)r.nt * 2, (size_t)nops * 2, err);
    /* producers; inputs */
    for (uint32_t k = 0; !rc && k < nops; k++) {
        tio_fb_ref ot;
        tio__fb_vec_table(&ov, k, &ot);
        if (tio__fb_vector(&ot, TFL_Operator_outputs, &xv))
            for (uint32_t j = 0; j < xv.count; j++) {
                int32_t t = tio__fb_vec_i32(&xv, j);
                if (t >= 0 && (uint32_t)t < r.nt && r.t[t].producer < 0) r.t[t].producer = k;
            }
    }
    uint32_t nin = tio__fb_vector(sg, TFL_SubGraph_inputs, &iv) ? iv.count : 0;
    int64_t *gio = malloc(((size_t)nin + 1) * sizeof *gio);
    if (!rc && !gio) rc = tio__nomem(err, TFL);
    size_t gin = 0, gout = 0; /* each listed once (ONNX names a graph input once) */
    for (uint32_t j = 0; !rc && j < nin; j++) {
        int32_t t = tio__fb_vec_i32(&iv, j);
        tr_tensor *x = &r.t[t];
        if (x->input) continue;
        x->input = true;
        if (x->v[0][0] < 0)
            x->v[0][0] = tr_value(&r, x->own, x->dtype, x->rank, x->dims, -1);
        x->named = true;
        gio[gin++] = x->v[0][0];
        rc = r.rc;
    }
    if (!rc) rc = tio_graph_set_inputs(g, gio, gin, err);
    /* constants */
    for (uint32_t i = 0; !rc && i < r.nt; i++) {
        tr_tensor *x = &r.t[i];
        if (x->ctensor < 0 || x->input) continue;
        x->v[0][0] = tr_value(&r, x->own, x->dtype, x->rank, x->dims, x->ctensor);
        x->named = true;
        rc = r.rc;
    }
    tr_gaps gp;
    memset(&gp, 0, sizeof gp);
    for (uint32_t k = 0; !rc && k < nops; k++) {
        tio_fb_ref ot;
        tio__fb_vec_table(&ov, k, &ot);
        uint32_t oc = tio__fb_u32(&ot, TFL_Operator_opcode_index, 0);
        tr_op o;
        memset(&o, 0, sizeof o);
        o.code = oc < ncodes ? codes[oc] : -1;
        o.m = native ? NULL : tio__tfl_opmap(o.code);
        char name[64];
        tr_opname(opcodes, oc, o.code, name, sizeof name);
        r.fail = NULL;
        r.op = k;
        bool hasin = tio__fb_vector(&ot, TFL_Operator_inputs, &xv);
        o.nin = hasin ? xv.count : 0;
        if (o.nin > 8) o.nin = 8, r.fail = "more than 8 inputs";
        for (uint32_t j = 0; j < o.nin; j++) o.in[j] = tio__fb_vec_i32(&xv, j);
        bool hasout = tio__fb_vector(&ot, TFL_Operator_outputs, &xv);
        o.nout = hasout ? xv.count : 0;
        if (o.nout != 1 || tio__fb_vec_i32(&xv, 0) < 0) {
            if (!r.fail) r.fail = "not one output";
            o.nout = 0;
        } else {
            o.out[0] = tio__fb_vec_i32(&xv, 0);
        }
        if (o.m && o.m->options &&
            tio__fb_u8(&ot, TFL_Operator_builtin_options_type, 0) == o.m->options)
            tio__fb_table(&ot, TFL_Operator_builtin_options, &o.opt);
        else
            memset(&o.opt, 0, sizeof o.opt);
        /* every input exists when the operator runs: a constant, a graph
         * input, or the output of an earlier operator */
        for (uint32_t j = 0; o.m && !r.fail && j < o.nin; j++) {
            int32_t t = o.in[j];
            if (t < 0) continue;
            const tr_tensor *x = &r.t[t];
            if (x->ctensor >= 0 || x->input) continue;
            if (x->producer < 0) {
                snprintf(r.failbuf, sizeof r.failbuf,
                         "input %u (tensor %d) is no constant, no graph input and no "
                         "operator's output",
                         j, t);
                r.fail = r.failbuf;
            } else if ((uint32_t)x->producer >= k) {
                snprintf(r.failbuf, sizeof r.failbuf,
                         "input %u (tensor %d) is written by operator %lld, not an earlier "
                         "one (a cycle)",
                         j, t, (long long)x->producer);
                r.fail = r.failbuf;
            } else if (!tr_has(&r, (uint32_t)t, 0) && !tr_has(&r, (uint32_t)t, 1)) {
                r.fail = "an input comes from an operator that was not raised";
            }
        }
        if (o.m && !r.fail && o.nout) {
            const tr_tensor *y = &r.t[o.out[0]];
            if (y->producer != (int64_t)k || y->input || y->ctensor >= 0)
                r.fail = "its output is written elsewhere too (a graph input, a constant or "
                         "another operator's output)";
            else if (y->dtype == TIO_DTYPE_INVALID || (y->q && y->dtype == TIO_INT64))
                r.fail = "an output of a type tensio does not raise";
            for (uint32_t j = 0; !r.fail && j < o.nin; j++)
                if (o.in[j] >= 0 && r.t[o.in[j]].dtype == TIO_DTYPE_INVALID)
                    r.fail = "an input of a type (or quantization) tensio does not raise";
            if (!r.fail && (o.nin < 1 || o.in[0] < 0)) r.fail = "no first input";
        }
        if (o.m && !r.fail) {
            switch (o.m->kind) {
            case TFL_K_CONV:
            case TFL_K_DWCONV:
            case TFL_K_POOL: tr_conv_pool(&r, &o); break;
            case TFL_K_FC: tr_fc(&r, &o); break;
            case TFL_K_TCONV: tr_tconv(&r, &o); break;
            case TFL_K_RESHAPE: tr_reshape(&r, &o); break;
            case TFL_K_SOFTMAX: tr_softmax(&r, &o); break;
            case TFL_K_CONCAT: tr_concat(&r, &o); break;
            case TFL_K_PAD: tr_pad(&r, &o); break;
            case TFL_K_MEAN: tr_mean(&r, &o); break;
            case TFL_K_TRANSPOSE: tr_transpose_op(&r, &o); break;
            case TFL_K_SLICE: tr_slice(&r, &o); break;
            default: tr_elementwise(&r, &o); break;
            }
        }
        rc = r.rc;
        if (rc) break;
        if (!o.m || r.fail) {
            if (!native)
                tr_gap(&gp, "%s%s (operator %u%s%s)", name, k, o.m ? r.fail : NULL);
            tr_native(&r, &o, name, o.code);
            rc = r.rc;
        }
    }
    /* outputs: the stored NHWC form under the tensor's own name */
    uint32_t nout = tio__fb_vector(sg, TFL_SubGraph_outputs, &iv) ? iv.count : 0;
    int64_t *go = malloc(((size_t)nout + 1) * sizeof *go);
    if (!rc && !go) rc = tio__nomem(err, TFL);
    for (uint32_t j = 0; !rc && j < nout; j++) {
        int32_t t = tio__fb_vec_i32(&iv, j);
        tr_tensor *x = &r.t[t];
        if (x->output) continue;
        x->output = true;
        int64_t v = tr_get(&r, (uint32_t)t, 0, false);
        if (v == -1) {
            x->v[0][0] = v = tr_value(&r, x->own, x->dtype, x->rank,
                                      x->dims, -1);
            x->named = true;
            if (!native) tr_gap(&gp, "%s%s%u%s%s", "output tensor ", (uint32_t)t, "no operator writes it");
        } else if (!x->named && v >= 0) {
            int64_t id = tr_value(&r, x->own, x->dtype, x->rank, x->dims, -1);
            tr_node(&r, "Identity", &v, 1, id);
            x->v[0][0] = v = id;
            x->named = true;
        }
        go[gout++] = v;
        rc = r.rc;
    }
    if (!rc) rc = tio_graph_set_outputs(g, go, gout, err);
    if (!rc && !native) rc = tio_graph_set_opset(g, "", r.opset, err);
    /* pairs the on-demand forms leave (an explicit TRANSPOSE of the model
     * meeting one of ours) */
    size_t folded = 0;
    if (!rc && !native && !gp.count) rc = tio__graph_fold_transposes(g, &folded, err);
    if (!rc && gp.count) {
        char why[TR_GAPS_CAP + 160];
        snprintf(why, sizeof why,
                 "%u TensorFlow Lite operator%s without an ONNX form in tensio "
                 "(docs/formats/tflite.md): %s%s",
                 gp.count, gp.count == 1 ? "" : "s", gp.text,
                 gp.listed < gp.count ? "; ..." : "");
        rc = tio__graph_set_graph_opaque(g, why, err);
    }
    free(gio);
    free(go);
    for (uint32_t i = 0; r.t && i < r.nt; i++) free(r.t[i].dims);
    for (size_t k = 0; k < r.ncap; k++) free(r.names[k]);
    free(r.names);
    free(r.t);
    return rc;
}
