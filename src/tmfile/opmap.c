/*
 * The tmfile <-> ONNX mapping table (data) and the raise/lower of a node's
 * attributes through it. See src/tmfile/opmap.h and docs/formats/tmfile.md.
 */
#include "tmfile/opmap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------- table */

#define SAME(o, f) {o, TM_M_SAME, {f}, 1, 0, 0.0, 0}
#define PACK2(o, a, b) {o, TM_M_PACK, {a, b}, 2, 0, 0.0, 0}
#define PACK4(o, a, b, c, d) {o, TM_M_PACK, {a, b, c, d}, 4, 0, 0.0, 0}
#define PACK8(o, a, b, c, d, e, f, g, h) {o, TM_M_PACK, {a, b, c, d, e, f, g, h}, 8, 0, 0.0, 0}
#define PACKS1(o, a) {o, TM_M_PACKS, {a}, 1, 0, 0.0, 0}
#define CONST(o, v) {o, TM_M_CONST, {NULL}, 0, v, 0.0, 0}
#define DEFI(f, v) {NULL, TM_M_DEF, {f}, 1, v, 0.0, 0}
#define DEFF(f, v) {NULL, TM_M_DEF, {f}, 1, 0, v, 0}
#define DERIVED(f, d) {NULL, TM_M_DERIVED, {f}, 1, 0, 0.0, d}

static const tio_tm_amap m_conv[] = {
    PACK2("kernel_shape", "kernel_h", "kernel_w"),
    PACK2("strides", "stride_h", "stride_w"),
    PACK2("dilations", "dilation_h", "dilation_w"),
    PACK4("pads", "pad_h0", "pad_w0", "pad_h1", "pad_w1"),
    SAME("group", "group"),
    DERIVED("input_channel", TM_D_CONV_IN),
    DERIVED("output_channel", TM_D_CONV_OUT),
    DEFI("activation", -1)};
static const tio_tm_amap m_deconv[] = {
    PACK2("kernel_shape", "kernel_h", "kernel_w"),
    PACK2("strides", "stride_h", "stride_w"),
    PACK2("dilations", "dilation_h", "dilation_w"),
    PACK4("pads", "pad_h0", "pad_w0", "pad_h1", "pad_w1"),
    PACK2("output_padding", "output_pad_h0", "output_pad_w0"),
    SAME("group", "group"),
    DERIVED("num_output", TM_D_DECONV_OUT),
    DEFI("activation", -1)};
static const tio_tm_amap m_pool[] = {
    PACK2("kernel_shape", "kernel_h", "kernel_w"),
    PACK2("strides", "stride_h", "stride_w"),
    PACK4("pads", "pad_h0", "pad_w0", "pad_h1", "pad_w1"),
    DEFI("caffe_flavor", 0)};
static const tio_tm_amap m_fc[] = {CONST("transB", 1), DERIVED("num_output", TM_D_FC_OUT)};
static const tio_tm_amap m_gemm[] = {SAME("alpha", "alpha"), SAME("beta", "beta"),
                                     SAME("transA", "transA"), SAME("transB", "transB")};
static const tio_tm_amap m_bn[] = {SAME("epsilon", "eps"), DEFF("rescale_factor", 1.0),
                                   DEFI("caffe_flavor", 0)};
static const tio_tm_amap m_axis[] = {SAME("axis", "axis")};
static const tio_tm_amap m_flatten[] = {SAME("axis", "axis"), DERIVED("end_axis", TM_D_RANK_M1)};
static const tio_tm_amap m_reshape[] = {DEFI("is_mxnet", 0), DEFI("reverse", 0),
                                        DERIVED("re_shape", TM_D_SHAPE), DEFI("is_onnx", 1)};
static const tio_tm_amap m_transpose[] = {SAME("perm", "tr_shape")};
static const tio_tm_amap m_alphabeta[] = {SAME("alpha", "alpha"), SAME("beta", "beta")};
static const tio_tm_amap m_elu[] = {SAME("alpha", "alpha")};
static const tio_tm_amap m_selu[] = {SAME("alpha", "alpha"), SAME("gamma", "lambda")};
static const tio_tm_amap m_eps[] = {SAME("epsilon", "eps")};
static const tio_tm_amap m_argmax[] = {SAME("axis", "axis"), SAME("keepdims", "keepdims")};
static const tio_tm_amap m_block[] = {SAME("blocksize", "block_size")};
/* ONNX's Slice on one axis (isonnx); the four become constant inputs in the
 * ONNX form (read.c) and params again on a write (write.c) */
static const tio_tm_amap m_slice[] = {PACKS1("starts", "begin"), PACKS1("ends", "end"),
                                      PACKS1("axes", "axis"),    PACKS1("steps", "step"),
                                      DEFI("iscaffe", 0),        DEFI("ismxnet", 0),
                                      DEFI("isonnx", 1)};
/* ONNX's Pad of a 4-D input: pads in ONNX's order (the begins, then the
 * ends), mode by name (TM_OP_PAD); pads and value become constant inputs in
 * the ONNX form (raise.c) and params again on a write (write.c) */
static const tio_tm_amap m_pad[] = {PACK8("pads", "pad_n_0", "pad_c_0", "pad_h_0", "pad_w_0",
                                          "pad_n_1", "pad_c_1", "pad_h_1", "pad_w_1"),
                                    SAME("value", "value")};
/* min and max become constant inputs in the ONNX form (raise.c) and params
 * again on a write (write.c) */
static const tio_tm_amap m_clip[] = {SAME("min", "min"), SAME("max", "max")};
/* Tengine's kernel ignores alpha and beta (x * relu6(x + 3) / 6) */
static const tio_tm_amap m_hardswish[] = {DEFF("alpha", 1.0), DEFF("beta", 0.0)};

#undef SAME
#undef PACK2
#undef PACK4
#undef PACK8
#undef PACKS1
#undef CONST
#undef DEFI
#undef DEFF
#undef DERIVED

#define NA(a) a, (uint8_t)(sizeof a / sizeof a[0])
#define NOATTR NULL, 0
const tio_tm_opmap tio__tmfile_opmap[] = {
    {1, "BatchNormalization", TM_OP_FIXED, NA(m_bn), 5},
    {3, "Concat", TM_OP_FIXED, NA(m_axis), 1},
    {OP_CONV, "Conv", TM_OP_FIXED, NA(m_conv), 2},
    {6, "ConvTranspose", TM_OP_FIXED, NA(m_deconv), 2},
    {8, "Dropout", TM_OP_FIXED, NOATTR, 1},
    {OP_ELTWISE, NULL, TM_OP_ELTWISE, NOATTR, 1},
    {45, NULL, TM_OP_REDUCE, NOATTR, 1},
    {10, "Flatten", TM_OP_FIXED, NA(m_flatten), 1},
    {11, "Gemm", TM_OP_FIXED, NA(m_fc), 2},
    {OP_POOL, NULL, TM_OP_POOL, NA(m_pool), 1},
    {17, "PRelu", TM_OP_FIXED, NOATTR, 2},
    {OP_RELU, NULL, TM_OP_RELU, NOATTR, 1},
    {OP_RELU6, "Clip", TM_OP_FIXED, NOATTR, 1}, /* + min 0, max 6 as constant inputs (read.c) */
    {OP_RESHAPE, "Reshape", TM_OP_FIXED, NA(m_reshape), 1}, /* one input: read.c adds the shape */
    {OP_SLICE, "Slice", TM_OP_FIXED, NA(m_slice), 1}, /* one input (tensio's); read.c */
    {28, "Softmax", TM_OP_FIXED, NA(m_axis), 1},
    {31, "Gemm", TM_OP_FIXED, NA(m_gemm), 2},
    {36, "Tanh", TM_OP_FIXED, NOATTR, 1},
    {OP_PAD, "Pad", TM_OP_PAD, NA(m_pad), 1}, /* one input: read.c adds pads and value */
    {37, "Sigmoid", TM_OP_FIXED, NOATTR, 1},
    {42, "ArgMax", TM_OP_FIXED, NA(m_argmax), 1},
    {43, "ArgMin", TM_OP_FIXED, NA(m_argmax), 1},
    {46, "Max", TM_OP_FIXED, NOATTR, 1},
    {47, "Min", TM_OP_FIXED, NOATTR, 1},
    {64, "HardSigmoid", TM_OP_FIXED, NA(m_alphabeta), 1},
    {66, "InstanceNormalization", TM_OP_FIXED, NA(m_eps), 3},
    {68, "Abs", TM_OP_FIXED, NOATTR, 1},
    {OP_HARDSWISH, "HardSwish", TM_OP_FIXED, NA(m_hardswish), 1},
    {72, "Selu", TM_OP_FIXED, NA(m_selu), 1},
    {73, "Elu", TM_OP_FIXED, NA(m_elu), 1},
    {77, "Transpose", TM_OP_FIXED, NA(m_transpose), 1},
    {79, "SpaceToDepth", TM_OP_FIXED, NA(m_block), 1},
    {80, "DepthToSpace", TM_OP_FIXED, NA(m_block), 1},
    {83, "Ceil", TM_OP_FIXED, NOATTR, 1},
    {85, "Round", TM_OP_FIXED, NOATTR, 1},
    {OP_CLIP, "Clip", TM_OP_FIXED, NA(m_clip), 1}, /* float32 input: read.c adds min, max */
    {OP_MATMUL, "MatMul", TM_OP_FIXED, NOATTR, 2},
    {94, "Shape", TM_OP_FIXED, NOATTR, 1},
    {95, "Where", TM_OP_FIXED, NOATTR, 3},
    {97, "Mish", TM_OP_FIXED, NOATTR, 1},
    {99, "LogSoftmax", TM_OP_FIXED, NA(m_axis), 1},
    {102, "Softplus", TM_OP_FIXED, NOATTR, 1},
    {103, "Reciprocal", TM_OP_FIXED, NOATTR, 1},
};
#undef NA
#undef NOATTR
const size_t tio__tmfile_opmap_count = sizeof tio__tmfile_opmap / sizeof tio__tmfile_opmap[0];

const tio_tm_opmap *tio__tmfile_opmap_of(int idx) {
    for (size_t k = 0; k < tio__tmfile_opmap_count; k++)
        if (tio__tmfile_opmap[k].idx == idx) return &tio__tmfile_opmap[k];
    return NULL;
}

/* ------------------------------------------------------ attribute lists */

/* A list being built: in the arena of `arena` (the reader's graph, whose
 * nodes take the list), or by malloc() (the writer's own node copies). */
typedef struct tm_alist {
    tio_gattr *a;
    size_t n, cap;
    bool nomem;
    tio_graph *arena;
} tm_alist;

static void *tm_alloc(tm_alist *l, size_t n) {
    return l->arena ? tio__galloc(l->arena, n) : malloc(n);
}

static void tm_alist_free(tm_alist *l) {
    if (l->arena) tio__gattrs_free(l->arena, l->a, l->n);
    else tio__tmfile_attrs_free(l->a, l->n);
}

void tio__tmfile_attrs_free(tio_gattr *a, size_t n) {
    for (size_t k = 0; k < n; k++) {
        free(a[k].name);
        free(a[k].s);
        free(a[k].ints);
        free(a[k].floats);
    }
    free(a);
}

char *tio__tmfile_dup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static tio_gattr *tm_push(tm_alist *l, const char *prefix, const char *name) {
    if (l->nomem) return NULL;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        tio_gattr *a = l->arena ? tio__grealloc(l->arena, l->a, l->cap * sizeof *a, cap * sizeof *a)
                                : realloc(l->a, cap * sizeof *a);
        if (!a) {
            l->nomem = true;
            return NULL;
        }
        l->a = a;
        l->cap = cap;
    }
    size_t pl = prefix ? strlen(prefix) : 0, nl = strlen(name);
    char *nm = tm_alloc(l, pl + nl + 1);
    if (!nm) {
        l->nomem = true;
        return NULL;
    }
    if (pl) memcpy(nm, prefix, pl);
    memcpy(nm + pl, name, nl + 1);
    tio_gattr *a = &l->a[l->n++];
    memset(a, 0, sizeof *a);
    a->name = nm;
    return a;
}

static void tm_push_int(tm_alist *l, const char *prefix, const char *name, int64_t v) {
    tio_gattr *a = tm_push(l, prefix, name);
    if (!a) return;
    a->type = TIO_ATTR_INT;
    a->i = v;
}
static void tm_push_float(tm_alist *l, const char *prefix, const char *name, double v) {
    tio_gattr *a = tm_push(l, prefix, name);
    if (!a) return;
    a->type = TIO_ATTR_FLOAT;
    a->f = v;
}
static void tm_push_ints(tm_alist *l, const char *prefix, const char *name, const int64_t *v,
                         size_t n) {
    tio_gattr *a = tm_push(l, prefix, name);
    if (!a) return;
    a->type = TIO_ATTR_INTS;
    a->ints = tm_alloc(l, (n ? n : 1) * sizeof *a->ints);
    if (!a->ints) {
        l->nomem = true;
        return;
    }
    if (n) memcpy(a->ints, v, n * sizeof *v);
    a->count = n;
}
static void tm_push_string(tm_alist *l, const char *name, const char *v) {
    tio_gattr *a = tm_push(l, NULL, name);
    if (!a) return;
    a->type = TIO_ATTR_STRING;
    size_t n = strlen(v) + 1;
    if ((a->s = tm_alloc(l, n)) != NULL) memcpy(a->s, v, n);
    else l->nomem = true;
}
/* A copy of src (INT, FLOAT, STRING, INTS, FLOATS) under a new name. */
static void tm_push_copy(tm_alist *l, const char *prefix, const char *name, const tio_gattr *src) {
    tio_gattr *a = tm_push(l, prefix, name);
    if (!a) return;
    a->type = src->type;
    a->i = src->i;
    a->f = src->f;
    a->count = src->count;
    if (src->s) {
        size_t sn = strlen(src->s) + 1;
        if ((a->s = tm_alloc(l, sn)) != NULL) memcpy(a->s, src->s, sn);
        else l->nomem = true;
    }
    if (src->ints) {
        a->ints = tm_alloc(l, (src->count ? src->count : 1) * sizeof *a->ints);
        if (!a->ints) l->nomem = true;
        else if (src->count) memcpy(a->ints, src->ints, src->count * sizeof *a->ints);
    }
    if (src->floats) {
        a->floats = tm_alloc(l, (src->count ? src->count : 1) * sizeof *a->floats);
        if (!a->floats) l->nomem = true;
        else if (src->count) memcpy(a->floats, src->floats, src->count * sizeof *a->floats);
    }
}

static const tio_gattr *tm_find(const tio_gnode *n, const char *name, uint8_t *used) {
    for (size_t k = 0; k < n->attr_count; k++)
        if (strcmp(n->attrs[k].name, name) == 0) {
            if (used) used[k] = 1;
            return &n->attrs[k];
        }
    return NULL;
}

static const tio_gattr *tm_find_kept(const tio_gnode *n, const char *field, uint8_t *used) {
    char nm[96];
    snprintf(nm, sizeof nm, "tmfile.%s", field);
    return tm_find(n, nm, used);
}

/* The kind of param field `name` of operator idx (-1: none). */
static int tm_kind(int idx, const char *name) {
    const tm_pdef *pd = tio__tmfile_ops[idx].param;
    for (unsigned k = 0; pd && k < pd->n; k++)
        if (strcmp(pd->f[k].name, name) == 0) return pd->f[k].kind;
    return -1;
}

/* ---------------------------------------------------------- derivations */

static const tio_gvalue *tm_in(const tio_graph *g, const tio_gnode *n, size_t k) {
    if (k >= n->input_count || n->inputs[k] < 0 || (size_t)n->inputs[k] >= g->value_count)
        return NULL;
    return &g->values[n->inputs[k]];
}

/* The derived value of a field (ints for TM_D_SHAPE: up to TM_MAX_DIMS in
 * v, *cnt of them); false when the graph does not tell. */
static bool tm_derive(const tio_graph *g, const tio_container *c, const tio_gnode *n,
                      uint8_t d, int64_t group, int64_t *v, size_t *cnt) {
    const tio_gvalue *x;
    *cnt = 1;
    switch (d) {
    case TM_D_CONV_IN:
    case TM_D_CONV_OUT:
    case TM_D_DECONV_OUT:
    case TM_D_FC_OUT: {
        x = tm_in(g, n, 1);
        size_t want = d == TM_D_FC_OUT ? 2 : 4, dim = d == TM_D_CONV_OUT || d == TM_D_FC_OUT ? 0 : 1;
        if (!x || x->rank != (int64_t)want || x->dims[dim].value < 0) return false;
        int64_t m = d == TM_D_CONV_IN || d == TM_D_DECONV_OUT ? group : 1;
        if (m < 1 || x->dims[dim].value > INT32_MAX / m) return false;
        v[0] = x->dims[dim].value * m;
        return true;
    }
    case TM_D_RANK_M1:
        x = tm_in(g, n, 0);
        if (!x || x->rank < 1) return false;
        v[0] = x->rank - 1;
        return true;
    case TM_D_SHAPE: {
        x = tm_in(g, n, 1);
        if (!x || x->tensor < 0 || !c || (size_t)x->tensor >= c->count) return false;
        const tio_tensor *t = c->tensors[x->tensor];
        if ((t->dtype != TIO_INT32 && t->dtype != TIO_INT64) || t->layout != TIO_LAYOUT_DENSE ||
            t->numel > TM_MAX_DIMS || !t->data || t->nbytes < t->numel * tio_dtype_size(t->dtype))
            return false;
        for (size_t k = 0; k < t->numel; k++)
            v[k] = t->dtype == TIO_INT32 ? (int32_t)tio__ld32(t->data + 4 * k)
                                         : (int64_t)tio__ld64(t->data + 8 * k);
        *cnt = (size_t)t->numel;
        return true;
    }
    default: return false;
    }
}

static bool tm_equal_ints(const tio_gattr *a, const int64_t *v, size_t n) {
    if (a->type == TIO_ATTR_INT) return n == 1 && a->i == v[0];
    if (a->type != TIO_ATTR_INTS || a->count != n) return false;
    for (size_t k = 0; k < n; k++)
        if (a->ints[k] != v[k]) return false;
    return true;
}

/* ------------------------------------------------------------------ raise */

/* What convert_tool writes in a global pool's window fields (pooling's
 * init_op kernel 2x2, load_pool's stride 1 and zero pads), which Tengine
 * replaces from the input's shape. */
int64_t tio__tmfile_global_field(const char *field) {
    return strncmp(field, "kernel_", 7) == 0 ? 2 : strncmp(field, "stride_", 7) == 0 ? 1 : 0;
}

/* Tengine's Reduction types with an ONNX op whose axes are an attribute at
 * opset 13 */
static const char *const tm_reduce_ops[11] = {
    NULL, "ReduceMean", NULL, "ReduceSumSquare", "ReduceMax", "ReduceMin", "ReduceProd",
    NULL, NULL, "ReduceLogSum", "ReduceLogSumExp"};
static const char *const tm_reduce_dims[4] = {"dim_0", "dim_1", "dim_2", "dim_3"};

/* Tengine's Pad modes (pad_ref.c: 0 fills with value, 1 repeats the edge, 2
 * mirrors without repeating it): ONNX's names */
static const char *const tm_pad_modes[3] = {"constant", "edge", "reflect"};

static const char *tm_pool_op(int64_t alg, int64_t global) {
    if (alg == 0) return global ? "GlobalMaxPool" : "MaxPool";
    if (alg == 1) return global ? "GlobalAveragePool" : "AveragePool";
    return NULL;
}

int tio__tmfile_raise(const tio_graph *g, tio_graph *arena, const tio_container *c,
                      const tio_gnode *n, int idx, tio_gattr **out, size_t *nout, const char **op,
                      int *split_act, tio_error *err) {
    *out = NULL;
    *nout = 0;
    *op = NULL;
    *split_act = -1;
    const tio_tm_opmap *m = tio__tmfile_opmap_of(idx);
    if (!m || n->input_count < m->min_inputs || n->opaque) return TIO_OK;
    /* convert_tool's Slice keeps its (narrowed) ONNX inputs: not raised; nor
     * a caffe/mxnet Slice, or one whose step ONNX would refuse */
    if (idx == OP_SLICE) {
        static const char *const must[4] = {"isonnx", "iscaffe", "ismxnet", "step"};
        static const int64_t want[3] = {1, 0, 0};
        if (n->input_count != 1) return TIO_OK;
        for (int k = 0; k < 4; k++) {
            const tio_gattr *f = tm_find(n, must[k], NULL);
            if (!f || f->type != TIO_ATTR_INT || (k < 3 ? f->i != want[k] : f->i < 1))
                return TIO_OK;
        }
        static const char *const vecs[3] = {"slice_points", "begins", "sizes"};
        for (int k = 0; k < 3; k++) {
            const tio_gattr *f = tm_find(n, vecs[k], NULL);
            if (f && !(f->type == TIO_ATTR_INTS && f->count == 0)) return TIO_OK;
        }
    }
    uint8_t few[64]; /* most nodes' attributes: no calloc per node */
    uint8_t *used = n->attr_count <= sizeof few ? few : calloc(n->attr_count, 1);
    if (!used) return tio__nomem(err, TM_FMT);
    if (used == few) memset(few, 0, sizeof few);
    tm_alist l = {0};
    l.arena = arena;
    bool ok = true, global = false;
    const char *name = m->onnx;
    const tio_gattr *a;
    if (m->choose == TM_OP_POOL) {
        const tio_gattr *al = tm_find(n, "alg", used), *gl = tm_find(n, "global", used);
        ok = al && gl && al->type == TIO_ATTR_INT && gl->type == TIO_ATTR_INT;
        if (ok) {
            global = gl->i != 0;
            name = tm_pool_op(al->i, gl->i);
            ok = name != NULL && (gl->i == 0 || gl->i == 1);
        }
    } else if (m->choose == TM_OP_RELU) {
        a = tm_find(n, "negative_slope", used);
        ok = a && a->type == TIO_ATTR_FLOAT;
        if (ok && a->f == 0.0 && !signbit(a->f)) name = "Relu";
        else if (ok) {
            name = "LeakyRelu";
            tm_push_float(&l, NULL, "alpha", a->f);
        }
    } else if (m->choose == TM_OP_REDUCE) {
        a = tm_find(n, "type", used);
        ok = a && a->type == TIO_ATTR_INT && a->i >= 0 && a->i < 11 && tm_reduce_ops[a->i];
        if (ok) name = tm_reduce_ops[a->i];
        int64_t ax[4];
        size_t na = 0;
        bool end = false;
        for (int q = 0; ok && q < 4; q++) {
            const tio_gattr *d = tm_find(n, tm_reduce_dims[q], used);
            ok = d && d->type == TIO_ATTR_INT;
            if (ok && d->i == -2) end = true;
            else if (ok) {
                ok = !end && d->i >= 0; /* the axes come first */
                ax[na++] = d->i;
            }
        }
        if (ok && na) tm_push_ints(&l, NULL, "axes", ax, na);
        const tio_gattr *kd = tm_find(n, "keepdim", used);
        ok = ok && kd && kd->type == TIO_ATTR_INT && (kd->i == 0 || kd->i == 1);
        if (ok) tm_push_int(&l, NULL, "keepdims", kd->i);
    } else if (m->choose == TM_OP_PAD) {
        a = tm_find(n, "mode", used);
        ok = a && a->type == TIO_ATTR_INT && a->i >= 0 && a->i < 3;
        if (ok) tm_push_string(&l, "mode", tm_pad_modes[a->i]);
    } else if (m->choose == TM_OP_ELTWISE) {
        /* lite's Eltwise: only type is meaningful (the rest is never set), so
         * a node with more (the old C++ layout, POWER) keeps its fields */
        a = tm_find(n, "type", used);
        ok = a && a->type == TIO_ATTR_INT && a->i >= 0 && a->i < TM_NELTWISE &&
             a->i != ELT_POWER && tio__tmfile_eltwise_onnx[a->i] != NULL;
        if (ok) name = tio__tmfile_eltwise_onnx[a->i];
        for (size_t k = 0; ok && k < n->attr_count; k++)
            if (!used[k] && strncmp(n->attrs[k].name, "tm2_", 4) != 0) ok = false;
        if (ok) {
            /* the unary types take one input, the binary ones two */
            bool unary = a->i == 11 || a->i == 12 || a->i == 13 || a->i == 14;
            ok = n->input_count == (unary ? 1u : 2u);
        }
    }
    int64_t group = 1;
    if (ok && (a = tm_find(n, "group", NULL)) != NULL && a->type == TIO_ATTR_INT) group = a->i;
    for (uint8_t e = 0; ok && e < m->nattrs; e++) {
        const tio_tm_amap *mp = &m->attrs[e];
        int64_t v[TM_MAX_DIMS];
        size_t cnt;
        switch (mp->conv) {
        case TM_M_SAME:
            a = tm_find(n, mp->fields[0], used);
            ok = a && (a->type == TIO_ATTR_INT || a->type == TIO_ATTR_FLOAT ||
                       a->type == TIO_ATTR_INTS);
            if (ok) tm_push_copy(&l, NULL, mp->onnx, a);
            break;
        case TM_M_PACK:
        case TM_M_PACKS:
            for (uint8_t f = 0; ok && f < mp->nfields; f++) {
                a = tm_find(n, mp->fields[f], used);
                ok = a && a->type == TIO_ATTR_INT;
                if (ok) v[f] = a->i;
                if (ok && !global && v[f] < 0 && mp->conv == TM_M_PACK) ok = false;
            }
            if (ok && global) {
                /* Tengine sets a global pool's window from the input; other
                 * values than convert_tool's are kept (tmfile -> tmfile) */
                for (uint8_t f = 0; f < mp->nfields; f++)
                    if (v[f] != tio__tmfile_global_field(mp->fields[f]))
                        tm_push_int(&l, "tmfile.", mp->fields[f], v[f]);
            } else if (ok)
                tm_push_ints(&l, NULL, mp->onnx, v, mp->nfields);
            break;
        case TM_M_CONST: tm_push_int(&l, NULL, mp->onnx, mp->idef); break;
        case TM_M_DEF:
            a = tm_find(n, mp->fields[0], used);
            ok = a != NULL;
            if (!ok) break;
            if (idx == OP_CONV && strcmp(mp->fields[0], "activation") == 0 &&
                a->type == TIO_ATTR_INT && (a->i == 0 || a->i == 6)) {
                *split_act = (int)a->i;
                break;
            }
            if ((a->type == TIO_ATTR_INT && a->i == mp->idef) ||
                (a->type == TIO_ATTR_FLOAT && a->f == mp->fdef))
                break;
            tm_push_copy(&l, "tmfile.", mp->fields[0], a);
            break;
        case TM_M_DERIVED:
            a = tm_find(n, mp->fields[0], used);
            ok = a != NULL;
            if (ok && tm_derive(g, c, n, mp->derive, group, v, &cnt) && tm_equal_ints(a, v, cnt))
                break;
            if (ok) tm_push_copy(&l, "tmfile.", mp->fields[0], a);
            break;
        default: ok = false;
        }
    }
    /* a MaxPool with symmetric pads and caffe_flavor 1 (Tengine's caffe
     * rounding, how a write gives ONNX's ceil_mode): ceil_mode 1 */
    if (ok && name && strcmp(name, "MaxPool") == 0) {
        tio_gattr *cf = NULL, *pd = NULL;
        for (size_t k = 0; k < l.n; k++) {
            if (strcmp(l.a[k].name, "tmfile.caffe_flavor") == 0) cf = &l.a[k];
            if (strcmp(l.a[k].name, "pads") == 0) pd = &l.a[k];
        }
        if (cf && pd && cf->type == TIO_ATTR_INT && cf->i == 1 && pd->count == 4 &&
            pd->ints[0] == pd->ints[2] && pd->ints[1] == pd->ints[3]) {
            char *nm = tm_alloc(&l, sizeof "ceil_mode");
            if (!nm) l.nomem = true;
            else {
                memcpy(nm, "ceil_mode", sizeof "ceil_mode");
                if (l.arena) tio__gfree(l.arena, cf->name);
                else free(cf->name);
                cf->name = nm;
            }
        }
    }
    /* the rest: tm2_* as they are, other fields as tmfile.<field> */
    for (size_t k = 0; ok && k < n->attr_count; k++) {
        if (used[k]) continue;
        const tio_gattr *x = &n->attrs[k];
        if (x->type == TIO_ATTR_GRAPH || x->type == TIO_ATTR_GRAPHS || x->type == TIO_ATTR_STRINGS)
            ok = false;
        else if (strncmp(x->name, "tm2_", 4) == 0) tm_push_copy(&l, NULL, x->name, x);
        else tm_push_copy(&l, "tmfile.", x->name, x);
    }
    if (used != few) free(used);
    if (l.nomem) {
        tm_alist_free(&l);
        return tio__nomem(err, TM_FMT);
    }
    if (!ok || !name) {
        tm_alist_free(&l);
        *split_act = -1;
        return TIO_OK;
    }
    *out = l.a;
    *nout = l.n;
    *op = name;
    return TIO_OK;
}

const char *tio__tmfile_why_unraised(const tio_graph *g, const tio_gnode *n, char *buf,
                                     size_t cap) {
    const char *nat = n->native_op ? n->native_op : n->op;
    if (!nat || n->native_attrs >= 1) return NULL;
    const tio_gvalue *x = tm_in(g, n, 0);
    if (strcmp(nat, "Clip") == 0 && x && x->dtype != TIO_FLOAT32 &&
        x->dtype != TIO_DTYPE_INVALID) {
        snprintf(buf, cap,
                 "Tengine's Clip clips %s values (the ONNX form's min and max are float32 "
                 "constants, which ONNX's Clip takes only for float32 values)",
                 tio_dtype_name(x->dtype));
        return buf;
    }
    if (strcmp(nat, "Pad") != 0) return NULL;
    const tio_gattr *a;
    for (uint8_t f = 0; f < m_pad[0].nfields; f++) {
        const char *fn = m_pad[0].fields[f];
        if ((a = tm_find(n, fn, NULL)) != NULL && a->type == TIO_ATTR_INT && a->i < 0) {
            snprintf(buf, cap,
                     "Tengine's Pad field '%s' = %lld is negative (pads are >= 0 in Tengine; "
                     "ONNX's Pad would crop)",
                     fn, (long long)a->i);
            return buf;
        }
    }
    if ((a = tm_find(n, "mode", NULL)) != NULL && a->type == TIO_ATTR_INT &&
        (a->i < 0 || a->i > 2)) {
        snprintf(buf, cap,
                 "Tengine's Pad field 'mode' = %lld is none of 0 (constant), 1 (edge), "
                 "2 (reflect)",
                 (long long)a->i);
        return buf;
    }
    if (x && x->rank >= 0 && x->rank != 4) {
        snprintf(buf, cap, "Tengine's Pad pads a 4-D input; this one has rank %lld",
                 (long long)x->rank);
        return buf;
    }
    if (x && x->dtype != TIO_FLOAT32 && (a = tm_find(n, "value", NULL)) != NULL &&
        a->type == TIO_ATTR_FLOAT && !(a->f == 0.0 && !signbit(a->f))) {
        snprintf(buf, cap,
                 "Tengine's Pad field 'value' = %g pads a %s input (the ONNX form's constant "
                 "value is float32, or absent for 0)",
                 a->f, tio_dtype_name(x->dtype));
        return buf;
    }
    return NULL;
}

/* ------------------------------------------------------------------ lower */

static int tm_lower_err(tio_error *err, const tio_gnode *n, const char *what, const char *name) {
    return tio__err(err, TIO_E_LOSSY, TM_FMT, -1, "node '%s' (%s, tmfile: %s): %s '%s'",
                    n->name ? n->name : "", n->op, n->native_op ? n->native_op : n->op, what,
                    name);
}

/* Pushes field `f` of operator idx with integer value v (as FLOAT for a
 * float field). */
static void tm_push_field(tm_alist *l, int idx, const char *f, int64_t v, double fv) {
    if (tm_kind(idx, f) == TF_F32) tm_push_float(l, NULL, f, fv);
    else tm_push_int(l, NULL, f, v);
}

int tio__tmfile_lower(const tio_graph *g, const tio_container *c, const tio_gnode *n, int idx,
                      int fused_act, tio_gattr **out, size_t *nout, tio_error *err) {
    *out = NULL;
    *nout = 0;
    const tio_tm_opmap *m = tio__tmfile_opmap_of(idx);
    if (!m)
        return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                        "node '%s': Tengine operator %d has no ONNX form", n->name ? n->name : "",
                        idx);
    uint8_t *used = calloc(n->attr_count ? n->attr_count : 1, 1);
    if (!used) return tio__nomem(err, TM_FMT);
    tm_alist l = {0};
    int rc = TIO_OK;
    const tio_gattr *a;
    bool global = false;
    if (m->choose == TM_OP_POOL) {
        bool mx = strcmp(n->op, "MaxPool") == 0, av = strcmp(n->op, "AveragePool") == 0,
             gm = strcmp(n->op, "GlobalMaxPool") == 0, ga = strcmp(n->op, "GlobalAveragePool") == 0;
        if (!mx && !av && !gm && !ga) rc = tm_lower_err(err, n, "Pooling cannot be", n->op);
        global = gm || ga;
        tm_push_int(&l, NULL, "alg", (mx || gm) ? 0 : 1);
        tm_push_int(&l, NULL, "global", global ? 1 : 0);
    } else if (m->choose == TM_OP_RELU) {
        double s = 0.0;
        if (strcmp(n->op, "LeakyRelu") == 0) {
            s = 0.01;
            if ((a = tm_find(n, "alpha", used)) != NULL && a->type == TIO_ATTR_FLOAT) s = a->f;
        } else if (strcmp(n->op, "Relu") != 0)
            rc = tm_lower_err(err, n, "ReLu cannot be", n->op);
        tm_push_float(&l, NULL, "negative_slope", s);
    } else if (m->choose == TM_OP_REDUCE) {
        int64_t t = -1, keep = 1, dims[4] = {-2, -2, -2, -2};
        for (int k = 0; k < 11; k++)
            if (tm_reduce_ops[k] && strcmp(tm_reduce_ops[k], n->op) == 0) t = k;
        if (t < 0) rc = tm_lower_err(err, n, "Reduction has no type for", n->op);
        if ((a = tm_find(n, "keepdims", used)) != NULL && a->type == TIO_ATTR_INT) keep = a->i;
        if ((a = tm_find(n, "axes", used)) != NULL) {
            if (a->type != TIO_ATTR_INTS || a->count > 4)
                rc = tm_lower_err(err, n, "Reduction takes at most 4 axes:", "axes");
            for (size_t k = 0; !rc && k < a->count; k++) {
                if (a->ints[k] < 0 || a->ints[k] > INT32_MAX)
                    rc = tm_lower_err(err, n, "Reduction takes axes >= 0:", "axes");
                dims[k] = a->ints[k];
            }
        }
        for (int q = 0; q < 4; q++) tm_push_int(&l, NULL, tm_reduce_dims[q], dims[q]);
        tm_push_int(&l, NULL, "type", t);
        tm_push_int(&l, NULL, "keepdim", keep);
    } else if (m->choose == TM_OP_PAD) {
        int64_t mode = 0; /* ONNX's default: constant */
        if ((a = tm_find(n, "mode", used)) != NULL) {
            mode = -1;
            for (int k = 0; k < 3; k++)
                if (a->type == TIO_ATTR_STRING && a->s && strcmp(a->s, tm_pad_modes[k]) == 0)
                    mode = k;
            if (mode < 0)
                rc = tm_lower_err(err, n, "Pad has modes constant, edge and reflect, not",
                                  a->type == TIO_ATTR_STRING && a->s ? a->s : "(not a string)");
        }
        tm_push_int(&l, NULL, "mode", mode);
    } else if (m->choose == TM_OP_ELTWISE) {
        int64_t t = -1;
        for (int k = 0; k < TM_NELTWISE; k++)
            if (tio__tmfile_eltwise_onnx[k] && strcmp(tio__tmfile_eltwise_onnx[k], n->op) == 0)
                t = k;
        if (t < 0) rc = tm_lower_err(err, n, "Eltwise has no type for", n->op);
        tm_push_int(&l, NULL, "type", t);
    }
    int64_t group = 1;
    if ((a = tm_find(n, "group", NULL)) != NULL && a->type == TIO_ATTR_INT) group = a->i;
    for (uint8_t e = 0; !rc && e < m->nattrs; e++) {
        const tio_tm_amap *mp = &m->attrs[e];
        const char *f0 = mp->fields[0];
        int64_t v[TM_MAX_DIMS];
        size_t cnt;
        switch (mp->conv) {
        case TM_M_SAME:
            a = tm_find(n, mp->onnx, used);
            if (!a) rc = tm_lower_err(err, n, "the attribute is missing:", mp->onnx);
            else tm_push_copy(&l, NULL, f0, a);
            break;
        case TM_M_PACK:
        case TM_M_PACKS:
            if (global) {
                for (uint8_t f = 0; f < mp->nfields; f++) {
                    a = tm_find_kept(n, mp->fields[f], used);
                    tm_push_int(&l, NULL, mp->fields[f],
                                a && a->type == TIO_ATTR_INT ? a->i
                                                             : tio__tmfile_global_field(mp->fields[f]));
                }
                break;
            }
            a = tm_find(n, mp->onnx, used);
            if (!a || a->type != TIO_ATTR_INTS || a->count != mp->nfields) {
                rc = tm_lower_err(err, n, "expected an INTS attribute of the right length:",
                                  mp->onnx);
                break;
            }
            for (uint8_t f = 0; f < mp->nfields; f++)
                tm_push_int(&l, NULL, mp->fields[f], a->ints[f]);
            break;
        case TM_M_CONST:
            a = tm_find(n, mp->onnx, used);
            if (a && !(a->type == TIO_ATTR_INT && a->i == mp->idef))
                rc = tm_lower_err(err, n, "Tengine's operator has a fixed", mp->onnx);
            break;
        case TM_M_DEF:
            if ((a = tm_find_kept(n, f0, used)) != NULL) tm_push_copy(&l, NULL, f0, a);
            else if (m->choose == TM_OP_POOL && strcmp(f0, "caffe_flavor") == 0 &&
                     (a = tm_find(n, "ceil_mode", used)) != NULL)
                /* ceil_mode 1 (raised from caffe_flavor 1): Tengine's caffe rounding */
                tm_push_int(&l, NULL, f0, a->type == TIO_ATTR_INT && a->i ? 1 : 0);
            else if (idx == OP_CONV && fused_act >= 0 && strcmp(f0, "activation") == 0)
                tm_push_int(&l, NULL, f0, fused_act);
            else tm_push_field(&l, idx, f0, mp->idef, mp->fdef);
            break;
        case TM_M_DERIVED:
            if ((a = tm_find_kept(n, f0, used)) != NULL) tm_push_copy(&l, NULL, f0, a);
            else if (!tm_derive(g, c, n, mp->derive, group, v, &cnt))
                rc = tm_lower_err(err, n, "the graph does not tell Tengine's field", f0);
            else if (mp->derive == TM_D_SHAPE) tm_push_ints(&l, NULL, f0, v, cnt);
            else tm_push_int(&l, NULL, f0, v[0]);
            break;
        default: break;
        }
    }
    for (size_t k = 0; !rc && k < n->attr_count; k++) {
        if (used[k]) continue;
        const tio_gattr *x = &n->attrs[k];
        if (strncmp(x->name, "tm2_", 4) == 0) tm_push_copy(&l, NULL, x->name, x);
        else if (strncmp(x->name, "tmfile.", 7) == 0 && x->name[7])
            tm_push_copy(&l, NULL, x->name + 7, x);
        else
            rc = tm_lower_err(err, n, "no Tengine field for the attribute", x->name);
    }
    free(used);
    if (!rc && l.nomem) rc = tio__nomem(err, TM_FMT);
    if (rc) {
        tio__tmfile_attrs_free(l.a, l.n);
        return rc;
    }
    *out = l.a;
    *nout = l.n;
    return TIO_OK;
}
