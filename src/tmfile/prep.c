/*
 * Tengine tmfile: a graph from another format (ONNX semantics) made ready for
 * lowering to Tengine's operators (src/tmfile/write.c). What convert_tool's
 * ONNX front end and graph optimiser do, and where they fail, better: see
 * prep.h and docs/formats/tmfile.md ("ONNX -> tmfile").
 *
 * Everything runs on a copy: the source graph and container are not changed.
 * New arrays, attributes and tensors live in an arena freed with the result.
 * Shapes are inferred statically (graph inputs of fixed dims, constants) and
 * used only to fold and to choose params; the dims written stay the source's.
 */
#include "tmfile/prep.h"

#include "core/internal.h"
#include "tmfile/tmfile.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* at most this many elements are computed when folding a constant */
#define PP_FOLD_MAX 65536u

typedef struct pp_blk {
    struct pp_blk *next;
    max_align_t data[];
} pp_blk;

typedef struct pp {
    tm_prep *p;
    const tio_container *c;
    tio_gvalue *v;
    int *srank;                      /* -1: shape unknown */
    int64_t (*sh)[TM_MAX_DIMS];
    int64_t *before;                 /* a new value: written before this value (-1: end) */
    size_t nv, vcap;
    tio_gnode *n;
    uint8_t *dead;
    size_t nn;
    int64_t *outs;
    size_t nout;
    int64_t *prod;
    size_t *uses;
    uint8_t *idle;                   /* source constants nothing read: kept as they were */
    /* replace_uses in O(1): a value's replacement (-1: none), followed when a
     * node is visited and when the graph is built; whether a value is a graph
     * output; and (for the late fusions) one node reading each value */
    int64_t *alias;
    uint8_t *isout;
    int64_t *cons;
    tio_error *err;
} pp;

/* ------------------------------------------------------------ memory */

static void *pa(pp *x, size_t n) {
    pp_blk *b = calloc(1, sizeof *b + (n ? n : 1));
    if (!b) return NULL;
    b->next = x->p->arena;
    x->p->arena = b;
    return b->data;
}

static char *pa_str(pp *x, const char *a, const char *b) {
    size_t la = strlen(a), lb = b ? strlen(b) : 0;
    char *s = pa(x, la + lb + 1);
    if (!s) return NULL;
    memcpy(s, a, la);
    if (lb) memcpy(s + la, b, lb);
    s[la + lb] = '\0';
    return s;
}

void tio__tmfile_prep_free(tm_prep *p) {
    for (pp_blk *b = p->arena, *nx; b; b = nx) {
        nx = b->next;
        free(b);
    }
    free(p->extra);
    free(p->dropped);
    free(p->g.values);
    free(p->g.nodes);
    memset(p, 0, sizeof *p);
}

const tio_tensor *tio__tmfile_prep_tensor(const tm_prep *p, const tio_container *c, int64_t idx) {
    if (idx < 0) return NULL;
    if ((size_t)idx < c->count) return c->tensors[idx];
    size_t k = (size_t)idx - c->count;
    return p && k < p->nextra ? p->extra[k] : NULL;
}

static const tio_tensor *pt(const pp *x, int64_t v) {
    if (v < 0 || (size_t)v >= x->nv) return NULL;
    const tio_tensor *t = tio__tmfile_prep_tensor(x->p, x->c, x->v[v].tensor);
    return t && t->layout == TIO_LAYOUT_DENSE && (t->data || t->nbytes == 0) ? t : NULL;
}

/* A new tensor (the data copied, or viewed when view is set). Its index, or
 * -1 when out of memory. */
static int64_t mk_tensor(pp *x, const char *name, tio_dtype dt, int rank, const int64_t *shape,
                         const void *data, size_t nbytes, bool view) {
    tm_prep *p = x->p;
    if (p->nextra == p->extra_cap) {
        size_t cap = p->extra_cap ? 2 * p->extra_cap : 8;
        tio_tensor **e = realloc(p->extra, cap * sizeof *e);
        if (!e) return -1;
        p->extra = e;
        p->extra_cap = cap;
    }
    tio_tensor *t = pa(x, sizeof *t);
    int64_t *shp = pa(x, (size_t)(rank > 0 ? rank : 1) * sizeof *shp);
    uint8_t *d = view ? NULL : pa(x, nbytes);
    if (!t || !shp || (!view && !d)) return -1;
    uint64_t numel = 1;
    for (int k = 0; k < rank; k++) {
        shp[k] = shape[k];
        numel *= (uint64_t)shape[k];
    }
    if (!view && nbytes) memcpy(d, data, nbytes);
    t->name = (char *)(uintptr_t)name;
    t->dtype = dt;
    t->layout = TIO_LAYOUT_DENSE;
    t->rank = (size_t)rank;
    t->shape = shp;
    t->numel = numel;
    t->data = view ? data : d;
    t->nbytes = nbytes;
    t->source_offset = -1;
    t->owner = x->c;
    t->index = p->nc + p->nextra;
    p->extra[p->nextra++] = t;
    return (int64_t)t->index;
}

static int nomem(pp *x) { return tio__nomem(x->err, TM_FMT); }

static void set_shape(pp *x, int64_t v, int rank, const int64_t *d);
static int retensor(pp *x, int64_t v, int64_t t);

/* A new value (a constant when tensor >= 0), written before value `before`. */
static int64_t new_value(pp *x, const char *name, tio_dtype dt, int64_t tensor, int64_t before) {
    if (x->nv == x->vcap) {
        size_t cap = x->vcap ? 2 * x->vcap : 16;
        tio_gvalue *v = realloc(x->v, cap * sizeof *v);
        if (v) x->v = v;
        int *r = realloc(x->srank, cap * sizeof *r);
        if (r) x->srank = r;
        int64_t(*s)[TM_MAX_DIMS] = realloc(x->sh, cap * sizeof *s);
        if (s) x->sh = s;
        int64_t *b = realloc(x->before, cap * sizeof *b);
        if (b) x->before = b;
        size_t *u = realloc(x->uses, cap * sizeof *u);
        if (u) x->uses = u;
        int64_t *pr = realloc(x->prod, cap * sizeof *pr);
        if (pr) x->prod = pr;
        int64_t *al = realloc(x->alias, cap * sizeof *al);
        if (al) x->alias = al;
        uint8_t *io = realloc(x->isout, cap);
        if (io) x->isout = io;
        int64_t *cs = x->cons ? realloc(x->cons, cap * sizeof *cs) : NULL;
        if (cs) x->cons = cs;
        if (!v || !r || !s || !b || !u || !pr || !al || !io || (x->cons && !cs)) return -1;
        x->vcap = cap;
    }
    size_t i = x->nv++;
    memset(&x->v[i], 0, sizeof x->v[i]);
    x->v[i].name = (char *)(uintptr_t)name;
    x->v[i].dtype = dt;
    x->v[i].rank = -1;
    x->v[i].tensor = tensor;
    x->srank[i] = -1;
    x->before[i] = before;
    x->uses[i] = 0;
    x->prod[i] = -1;
    x->alias[i] = -1;
    x->isout[i] = 0;
    if (x->cons) x->cons[i] = -1;
    if (tensor >= 0 && retensor(x, (int64_t)i, tensor)) return -1;
    return (int64_t)i;
}

/* Value v becomes constant tensor t: its dtype and dims are t's. */
static int retensor(pp *x, int64_t v, int64_t t) {
    const tio_tensor *e = tio__tmfile_prep_tensor(x->p, x->c, t);
    tio_dim *d = pa(x, (e->rank ? e->rank : 1) * sizeof *d);
    if (!d) return nomem(x);
    for (size_t k = 0; k < e->rank; k++) d[k].value = e->shape[k];
    x->v[v].tensor = t;
    x->v[v].dtype = e->dtype;
    x->v[v].rank = (int64_t)e->rank;
    x->v[v].dims = d;
    int64_t sh[TM_MAX_DIMS];
    for (size_t k = 0; k < e->rank && k < TM_MAX_DIMS; k++) sh[k] = e->shape[k];
    if (e->rank <= TM_MAX_DIMS) set_shape(x, v, (int)e->rank, sh);
    return TIO_OK;
}

/* ------------------------------------------------------------ the graph */

static void recount(pp *x) {
    for (size_t i = 0; i < x->nv; i++) x->uses[i] = 0, x->prod[i] = -1;
    for (size_t j = 0; j < x->nn; j++) {
        if (x->dead[j]) continue;
        const tio_gnode *n = &x->n[j];
        for (size_t k = 0; k < n->input_count; k++)
            if (n->inputs[k] >= 0) x->uses[n->inputs[k]]++;
        for (size_t k = 0; k < n->output_count; k++)
            if (n->outputs[k] >= 0) x->prod[n->outputs[k]] = (int64_t)j;
    }
    for (size_t k = 0; k < x->nout; k++) {
        x->uses[x->outs[k]]++;
        x->isout[x->outs[k]] = 1;
    }
}

static bool is_out(const pp *x, int64_t v) { return v >= 0 && x->isout[v]; }

/* The value v stands for now (its replacements followed). */
static int64_t resolve(pp *x, int64_t v) {
    while (v >= 0 && x->alias[v] >= 0) {
        int64_t a = x->alias[v];
        if (x->alias[a] >= 0) x->alias[v] = x->alias[a]; /* halve the chain */
        v = a;
    }
    return v;
}

/* Node j's inputs as they stand (replace_uses is applied lazily). */
static void visit(pp *x, size_t j) {
    tio_gnode *n = &x->n[j];
    for (size_t k = 0; k < n->input_count; k++) n->inputs[k] = resolve(x, n->inputs[k]);
}

/* Every use of value `from` reads `to` instead (applied when its readers
 * are visited, and for the graph's outputs when it is built). */
static void replace_uses(pp *x, int64_t from, int64_t to) {
    if (from < 0 || to < 0) return; /* callers check; an absent value has no uses */
    to = resolve(x, to);
    if (to == from) return; /* a node reading its own output (hostile): no cycle */
    x->alias[from] = to;
    x->uses[to] += x->uses[from];
    x->uses[from] = 0;
    if (x->isout[from]) x->isout[to] = 1;
    x->isout[from] = 0;
}

static void kill(pp *x, size_t j) {
    if (x->dead[j]) return;
    x->dead[j] = 1;
    const tio_gnode *n = &x->n[j];
    for (size_t k = 0; k < n->input_count; k++)
        if (n->inputs[k] >= 0 && x->uses[n->inputs[k]]) x->uses[n->inputs[k]]--;
    for (size_t k = 0; k < n->output_count; k++)
        if (n->outputs[k] >= 0) x->prod[n->outputs[k]] = -1;
}

static bool op_is(const tio_gnode *n, const char *op) {
    return n->op && strcmp(n->op, op) == 0 && (!n->domain || !n->domain[0]);
}

static const tio_gattr *ga(const tio_gnode *n, const char *name) {
    for (size_t k = 0; k < n->attr_count; k++)
        if (strcmp(n->attrs[k].name, name) == 0) return &n->attrs[k];
    return NULL;
}

/* ONNX's name or rten's for the same attribute (graphs read from rten keep
 * rten's names: kernel_size, groups, transpose_a/b) */
static const char *alt_name(const char *name) {
    static const char *const pairs[][2] = {{"kernel_shape", "kernel_size"},
                                           {"group", "groups"},
                                           {"transA", "transpose_a"},
                                           {"transB", "transpose_b"},
                                           {"allowzero", "allow_zero"}};
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++)
        if (strcmp(name, pairs[k][0]) == 0) return pairs[k][1];
    return NULL;
}

static const tio_gattr *ga2(const tio_gnode *n, const char *name) {
    const tio_gattr *a = ga(n, name);
    const char *alt = a ? NULL : alt_name(name);
    return alt ? ga(n, alt) : a;
}

static int64_t ga_i(const tio_gnode *n, const char *name, int64_t dflt) {
    const tio_gattr *a = ga2(n, name);
    return a && a->type == TIO_ATTR_INT ? a->i : dflt;
}

/* A copy of n's attributes without `name` and with room for one more. */
static tio_gattr *attrs_without(pp *x, tio_gnode *n, const char *name) {
    tio_gattr *a = pa(x, (n->attr_count + 1) * sizeof *a);
    if (!a) return NULL;
    size_t m = 0;
    for (size_t k = 0; k < n->attr_count; k++)
        if (!name || strcmp(n->attrs[k].name, name) != 0) a[m++] = n->attrs[k];
    n->attrs = a;
    n->attr_count = n->attr_cap = m;
    return a;
}

static int del_attr(pp *x, tio_gnode *n, const char *name) {
    if (!ga(n, name)) return TIO_OK;
    return attrs_without(x, n, name) ? TIO_OK : nomem(x);
}

static tio_gattr *put_attr(pp *x, tio_gnode *n, const char *name, tio_attr_type type) {
    tio_gattr *a = attrs_without(x, n, name);
    if (!a) return NULL;
    tio_gattr *e = &a[n->attr_count++];
    n->attr_cap = n->attr_count;
    memset(e, 0, sizeof *e);
    e->name = (char *)(uintptr_t)name;
    e->type = type;
    return e;
}

static int set_i(pp *x, tio_gnode *n, const char *name, int64_t v) {
    tio_gattr *e = put_attr(x, n, name, TIO_ATTR_INT);
    if (!e) return nomem(x);
    e->i = v;
    return TIO_OK;
}

static int set_f(pp *x, tio_gnode *n, const char *name, double v) {
    tio_gattr *e = put_attr(x, n, name, TIO_ATTR_FLOAT);
    if (!e) return nomem(x);
    e->f = v;
    return TIO_OK;
}

static int set_ints(pp *x, tio_gnode *n, const char *name, const int64_t *v, size_t cnt) {
    int64_t *c = pa(x, (cnt ? cnt : 1) * sizeof *c);
    tio_gattr *e = c ? put_attr(x, n, name, TIO_ATTR_INTS) : NULL;
    if (!e) return nomem(x);
    if (cnt) memcpy(c, v, cnt * sizeof *c);
    e->ints = c;
    e->count = cnt;
    return TIO_OK;
}

static int set_inputs(pp *x, tio_gnode *n, const int64_t *in, size_t cnt) {
    int64_t *c = pa(x, (cnt ? cnt : 1) * sizeof *c);
    if (!c) return nomem(x);
    for (size_t k = 0; k < n->input_count; k++)
        if (n->inputs[k] >= 0 && x->uses[n->inputs[k]]) x->uses[n->inputs[k]]--;
    for (size_t k = 0; k < cnt; k++) {
        c[k] = in[k];
        if (in[k] >= 0) x->uses[in[k]]++;
    }
    n->inputs = c;
    n->input_count = cnt;
    return TIO_OK;
}

/* ------------------------------------------------------- constant data */

static bool is_int(tio_dtype d) { return d == TIO_INT64 || d == TIO_INT32; }

/* The integers of constant t (int64/int32), at most max. */
static bool ld_ints(const tio_tensor *t, int64_t *out, size_t max, size_t *cnt) {
    if (!t || !is_int(t->dtype) || t->numel > max) return false;
    size_t es = t->dtype == TIO_INT64 ? 8 : 4;
    if (t->nbytes < t->numel * es) return false;
    for (size_t k = 0; k < t->numel; k++)
        out[k] = es == 8 ? (int64_t)tio__ld64(t->data + 8 * k)
                         : (int64_t)(int32_t)tio__ld32(t->data + 4 * k);
    *cnt = (size_t)t->numel;
    return true;
}

static float ldf(const uint8_t *p) {
    uint32_t u = tio__ld32(p);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* double -> float without C's undefined behaviour past FLT_MAX: +-inf, as
 * float arithmetic would have given */
static float to_f(double d) {
    if (d > 3.4028234663852886e38) return HUGE_VALF;
    if (d < -3.4028234663852886e38) return -HUGE_VALF;
    return (float)d; /* NaN converts */
}

static void stf(uint8_t *p, float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    tio__st32(p, u);
}

/* The one float of a float32 scalar constant (any rank, one element). */
static bool ld_scalar_f(const tio_tensor *t, double *out) {
    if (!t || t->numel != 1 || t->nbytes < 4) return false;
    if (t->dtype == TIO_FLOAT32) *out = ldf(t->data);
    else if (t->dtype == TIO_INT64 && t->nbytes >= 8) *out = (double)(int64_t)tio__ld64(t->data);
    else return false;
    return true;
}

/* A float32 constant's elements (a view of the data, which may be
 * unaligned: read with ldf). */
static const uint8_t *ld_f32(const tio_tensor *t, uint64_t numel) {
    if (!t || t->dtype != TIO_FLOAT32 || t->numel != numel || t->nbytes < numel * 4) return NULL;
    return t->data;
}

/* ------------------------------------------------------------- shapes */

static bool known(const pp *x, int64_t v) { return v >= 0 && x->srank[v] >= 0; }

/* The largest element count of a shape inference keeps (larger: unknown), so
 * that sums and products of dims and attribute values cannot overflow. */
#define PP_BIG ((int64_t)1 << 40)

static void set_shape(pp *x, int64_t v, int rank, const int64_t *d) {
    if (v < 0 || rank < 0 || rank > (int)TM_MAX_DIMS) return;
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

static void copy_shape(pp *x, int64_t to, int64_t from) {
    if (known(x, from)) set_shape(x, to, x->srank[from], x->sh[from]);
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
static bool const_ints(const pp *x, const tio_gnode *n, size_t k, const char *name, int64_t *out,
                       size_t max, size_t *cnt) {
    const tio_gattr *a = name ? ga2(n, name) : NULL;
    if (a && a->type == TIO_ATTR_INTS && a->count <= max) {
        for (size_t j = 0; j < a->count; j++) out[j] = a->ints[j];
        *cnt = a->count;
        return true;
    }
    if (k >= n->input_count || n->inputs[k] < 0) return false;
    return ld_ints(pt(x, n->inputs[k]), out, max, cnt);
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

static void infer_pool(pp *x, const tio_gnode *n, int64_t in, int64_t out, bool conv) {
    int r = x->srank[in];
    int64_t o[TM_MAX_DIMS], k[TM_MAX_DIMS - 2], s[TM_MAX_DIMS - 2], d[TM_MAX_DIMS - 2],
        pd[2 * (TM_MAX_DIMS - 2)];
    size_t cnt;
    if (r < 3) return;
    size_t sp = (size_t)r - 2;
    o[0] = x->sh[in][0];
    if (conv) {
        const tio_tensor *w = pt(x, n->inputs[1]);
        int64_t wv = n->input_count > 1 ? n->inputs[1] : -1;
        if (!known(x, wv) || x->srank[wv] != r) return;
        o[1] = x->sh[wv][0];
        for (size_t j = 0; j < sp; j++) k[j] = x->sh[wv][2 + j];
        (void)w;
    } else {
        o[1] = x->sh[in][1];
        if (!const_ints(x, n, 99, "kernel_shape", k, sp, &cnt) || cnt != sp) return;
    }
    for (size_t j = 0; j < sp; j++) s[j] = 1, d[j] = 1, pd[j] = pd[j + sp] = 0;
    if (const_ints(x, n, 99, "strides", s, sp, &cnt) && cnt != sp) return;
    if (const_ints(x, n, 99, "dilations", d, sp, &cnt) && cnt != sp) return;
    if (const_ints(x, n, 99, "pads", pd, 2 * sp, &cnt) && cnt != 2 * sp) return;
    const tio_gattr *ap = ga(n, "auto_pad");
    bool same = ap && ((ap->type == TIO_ATTR_STRING && strncmp(ap->s, "SAME", 4) == 0) ||
                       (ap->type == TIO_ATTR_INT && ap->i == 0)); /* rten's AutoPad::Same */
    bool ceil_mode = ga_i(n, "ceil_mode", 0) != 0;
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
    set_shape(x, out, r, o);
}

/* Static output shapes of node j from its inputs'. */
static void infer(pp *x, size_t j) {
    const tio_gnode *n = &x->n[j];
    if (n->output_count < 1 || n->input_count < 1) return;
    int64_t in = n->inputs[0], out = n->outputs[0];
    if (out < 0 || known(x, out)) return;
    const char *op = n->op;
    static const char *const same[] = {
        "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip", "HardSigmoid", "HardSwish", "Elu",
        "Selu", "Erf", "Sqrt", "Exp", "Log", "Abs", "Neg", "Floor", "Ceil", "Round",
        "Reciprocal", "Softplus", "Mish", "Softmax", "LogSoftmax", "BatchNormalization",
        "InstanceNormalization", "Dropout", "Identity", "Cast", "PRelu", "Gelu", "LRN"};
    for (size_t k = 0; k < sizeof same / sizeof same[0]; k++)
        if (strcmp(op, same[k]) == 0) {
            copy_shape(x, out, in);
            return;
        }
    static const char *const bin[] = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min",
                                      "Equal", "Greater", "Less", "Where"};
    for (size_t k = 0; k < sizeof bin / sizeof bin[0]; k++)
        if (strcmp(op, bin[k]) == 0) {
            int r;
            int64_t o[TM_MAX_DIMS], t[TM_MAX_DIMS];
            if (!known(x, in)) return;
            r = x->srank[in];
            memcpy(o, x->sh[in], (size_t)r * sizeof *o);
            for (size_t q = 1; q < n->input_count; q++) {
                int64_t b = n->inputs[q];
                if (!known(x, b) || !bcast(r, o, x->srank[b], x->sh[b], &r, t)) return;
                memcpy(o, t, (size_t)r * sizeof *o);
            }
            set_shape(x, out, r, o);
            return;
        }
    if (!known(x, in) && strcmp(op, "ConstantOfShape") != 0) return;
    int r = in >= 0 ? x->srank[in] : -1; /* ConstantOfShape: its shape input may be absent */
    int64_t o[TM_MAX_DIMS], a[2 * TM_MAX_DIMS];
    size_t cnt;
    if (strcmp(op, "Conv") == 0 || strcmp(op, "MaxPool") == 0 ||
        strcmp(op, "AveragePool") == 0) {
        infer_pool(x, n, in, out, op[0] == 'C');
    } else if (strcmp(op, "GlobalAveragePool") == 0 || strcmp(op, "GlobalMaxPool") == 0) {
        for (int k = 0; k < r; k++) o[k] = k < 2 ? x->sh[in][k] : 1;
        set_shape(x, out, r, o);
    } else if (strcmp(op, "Flatten") == 0) {
        int64_t ax = norm_axis(ga_i(n, "axis", 1), r);
        if (ax < 0 || ax > r) return;
        o[0] = o[1] = 1;
        for (int k = 0; k < r; k++) o[k < ax ? 0 : 1] *= x->sh[in][k];
        set_shape(x, out, 2, o);
    } else if (strcmp(op, "Reshape") == 0) {
        if (!const_ints(x, n, 1, NULL, a, TM_MAX_DIMS, &cnt)) return;
        int64_t total = 1, part = 1, neg = -1;
        for (int k = 0; k < r; k++) total *= x->sh[in][k];
        for (size_t k = 0; k < cnt; k++) {
            o[k] = a[k] == 0 && ga_i(n, "allowzero", 0) == 0 ? ((int)k < r ? x->sh[in][k] : -2)
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
        set_shape(x, out, (int)cnt, o);
    } else if (strcmp(op, "Transpose") == 0) {
        const tio_gattr *pm = ga(n, "perm");
        for (int k = 0; k < r; k++) {
            int64_t q = pm ? (pm->type == TIO_ATTR_INTS && (int)pm->count == r ? pm->ints[k] : -1)
                           : r - 1 - k;
            if (q < 0 || q >= r) return;
            o[k] = x->sh[in][q];
        }
        set_shape(x, out, r, o);
    } else if (strcmp(op, "Gemm") == 0) {
        int64_t b = n->input_count > 1 ? n->inputs[1] : -1;
        if (r != 2 || !known(x, b) || x->srank[b] != 2) return;
        o[0] = x->sh[in][ga_i(n, "transA", 0) ? 1 : 0];
        o[1] = x->sh[b][ga_i(n, "transB", 0) ? 0 : 1];
        set_shape(x, out, 2, o);
    } else if (strcmp(op, "MatMul") == 0) {
        int64_t b = n->input_count > 1 ? n->inputs[1] : -1;
        int rb, ro;
        if (!known(x, b) || r < 2 || (rb = x->srank[b]) < 2) return;
        if (x->sh[in][r - 1] != x->sh[b][rb - 2]) return;
        if (!bcast(r - 2, x->sh[in], rb - 2, x->sh[b], &ro, o)) return;
        o[ro] = x->sh[in][r - 2];
        o[ro + 1] = x->sh[b][rb - 1];
        set_shape(x, out, ro + 2, o);
    } else if (strcmp(op, "Concat") == 0) {
        int64_t ax = norm_axis(ga_i(n, "axis", 0), r);
        if (ax < 0 || ax >= r) return;
        memcpy(o, x->sh[in], (size_t)r * sizeof *o);
        o[ax] = 0;
        for (size_t k = 0; k < n->input_count; k++) {
            int64_t b = n->inputs[k];
            if (!known(x, b) || x->srank[b] != r || (o[ax] += x->sh[b][ax]) > PP_BIG) return;
        }
        set_shape(x, out, r, o);
    } else if (strcmp(op, "Shape") == 0) {
        o[0] = r;
        set_shape(x, out, 1, o);
    } else if (strcmp(op, "Gather") == 0) {
        int64_t ix = n->input_count > 1 ? n->inputs[1] : -1, ax = norm_axis(ga_i(n, "axis", 0), r);
        if (!known(x, ix) || ax < 0 || ax >= r || r - 1 + x->srank[ix] > (int)TM_MAX_DIMS) return;
        int m = 0;
        for (int k = 0; k < r; k++) {
            if (k == ax)
                for (int q = 0; q < x->srank[ix]; q++) o[m++] = x->sh[ix][q];
            else o[m++] = x->sh[in][k];
        }
        set_shape(x, out, m, o);
    } else if (strcmp(op, "Unsqueeze") == 0 || strcmp(op, "Squeeze") == 0) {
        bool un = op[0] == 'U';
        if (!const_ints(x, n, 1, "axes", a, TM_MAX_DIMS, &cnt)) {
            if (un) return;
            cnt = 0;
        }
        int ro = un ? r + (int)cnt : r;
        uint8_t mark[TM_MAX_DIMS] = {0};
        if (ro > (int)TM_MAX_DIMS) return;
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
        set_shape(x, out, m, o);
    } else if (strcmp(op, "Slice") == 0) {
        int64_t st[TM_MAX_DIMS], en[TM_MAX_DIMS], ax[TM_MAX_DIMS], sp[TM_MAX_DIMS];
        size_t ns, ne, na, nsp;
        if (!const_ints(x, n, 1, "starts", st, TM_MAX_DIMS, &ns) ||
            !const_ints(x, n, 2, "ends", en, TM_MAX_DIMS, &ne) || ns != ne)
            return;
        if (!const_ints(x, n, 3, "axes", ax, TM_MAX_DIMS, &na))
            for (na = 0; na < ns; na++) ax[na] = (int64_t)na;
        if (!const_ints(x, n, 4, "steps", sp, TM_MAX_DIMS, &nsp))
            for (nsp = 0; nsp < ns; nsp++) sp[nsp] = 1;
        if (na != ns || nsp != ns) return;
        memcpy(o, x->sh[in], (size_t)r * sizeof *o);
        for (size_t k = 0; k < ns; k++) {
            int64_t q = norm_axis(ax[k], r), s0, c;
            if (q < 0 || q >= r || !slice_axis(x->sh[in][q], st[k], en[k], sp[k], &s0, &c))
                return;
            o[q] = c;
        }
        set_shape(x, out, r, o);
    } else if (strcmp(op, "Pad") == 0) {
        if (!const_ints(x, n, 1, "pads", a, 2 * TM_MAX_DIMS, &cnt) || cnt != 2 * (size_t)r)
            return;
        for (int k = 0; k < r; k++) {
            if (a[k] < -PP_BIG || a[k] > PP_BIG || a[k + r] < -PP_BIG || a[k + r] > PP_BIG) return;
            o[k] = x->sh[in][k] + a[k] + a[k + r];
        }
        set_shape(x, out, r, o);
    } else if (strncmp(op, "Reduce", 6) == 0) {
        bool keep = ga_i(n, "keepdims", 1) != 0;
        uint8_t mark[TM_MAX_DIMS] = {0};
        if (!const_ints(x, n, 1, "axes", a, TM_MAX_DIMS, &cnt)) return;
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
        set_shape(x, out, m, o);
    } else if (strcmp(op, "ConstantOfShape") == 0) {
        if (!const_ints(x, n, 0, NULL, a, TM_MAX_DIMS, &cnt)) return;
        set_shape(x, out, (int)cnt, a);
    }
}

/* ------------------------------------------------------------ folding */

/* Values of a constant as int64 or double (per `flt`), at most PP_FOLD_MAX. */
typedef struct num {
    bool flt;
    int rank;
    int64_t sh[TM_MAX_DIMS];
    size_t n;
    int64_t *i;
    double *f;
} num;

static bool num_load(pp *x, int64_t v, num *o) {
    const tio_tensor *t = pt(x, v);
    if (!t || t->numel > PP_FOLD_MAX || t->rank > TM_MAX_DIMS) return false;
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
        o->f = pa(x, (o->n ? o->n : 1) * sizeof *o->f);
        if (!o->f || t->nbytes < o->n * 4) return false;
        for (size_t k = 0; k < o->n; k++) o->f[k] = ldf(t->data + 4 * k);
        return true;
    }
    o->i = pa(x, (o->n ? o->n : 1) * sizeof *o->i);
    size_t cnt;
    return o->i && ld_ints(t, o->i, PP_FOLD_MAX, &cnt);
}

/* num_store's "a value does not fit the dtype": the node stays (not a TIO_E_*) */
#define PP_UNREPRESENTABLE (-1)

/* Makes value `out` a constant holding r (dtype dt). */
static int num_store(pp *x, int64_t out, const num *r, tio_dtype dt) {
    size_t es = dt == TIO_INT64 ? 8 : 4;
    for (size_t k = 0; r->flt && dt != TIO_FLOAT32 && k < r->n; k++)
        if (!(r->f[k] >= -9.2e18 && r->f[k] <= 9.2e18)) return PP_UNREPRESENTABLE;
    uint8_t *d = pa(x, (r->n ? r->n : 1) * es);
    if (!d) return nomem(x);
    for (size_t k = 0; k < r->n; k++) {
        if (dt == TIO_FLOAT32) stf(d + 4 * k, r->flt ? to_f(r->f[k]) : (float)r->i[k]);
        else {
            int64_t iv = r->flt ? (int64_t)r->f[k] : r->i[k];
            if (dt == TIO_INT64) tio__st64(d + 8 * k, (uint64_t)iv);
            else tio__st32(d + 4 * k, (uint32_t)(int32_t)iv);
        }
    }
    int64_t t = mk_tensor(x, x->v[out].name, dt, r->rank, r->sh, d, r->n * es, true);
    if (t < 0) return nomem(x);
    return retensor(x, out, t);
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
    if (flt) r->f = pa(x, (r->n ? r->n : 1) * sizeof *r->f);
    else r->i = pa(x, (r->n ? r->n : 1) * sizeof *r->i);
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
static int fold(pp *x, size_t j, bool *folded) {
    tio_gnode *n = &x->n[j];
    const char *op = n->op;
    if (n->output_count != 1 || n->outputs[0] < 0 || (n->domain && n->domain[0])) return TIO_OK;
    int64_t out = n->outputs[0];
    num a = {0}, b = {0}, r = {0};
    size_t cnt;
    int64_t ax[TM_MAX_DIMS];
    int rc;
    if (strcmp(op, "Shape") == 0) {
        int64_t in = n->inputs[0];
        if (n->input_count != 1 || !known(x, in) || n->attr_count) return TIO_OK;
        int64_t one = x->srank[in];
        if (!num_alloc(x, &r, false, 1, &one)) return nomem(x);
        for (size_t k = 0; k < r.n; k++) r.i[k] = x->sh[in][k];
        STORE(&r, TIO_INT64);
    }
    if (strcmp(op, "ConstantOfShape") == 0) {
        int64_t sh[TM_MAX_DIMS];
        if (!const_ints(x, n, 0, NULL, sh, TM_MAX_DIMS, &cnt)) return TIO_OK;
        const tio_gattr *va = ga(n, "value");
        const tio_tensor *vt =
            va && va->type == TIO_ATTR_TENSOR ? tio__tmfile_prep_tensor(x->p, x->c, va->i) : NULL;
        tio_dtype dt = vt ? vt->dtype : TIO_FLOAT32;
        double fv = 0;
        int64_t iv = 0;
        if (vt && vt->numel != 1) return TIO_OK;
        if (vt && dt == TIO_FLOAT32) fv = ldf(vt->data);
        else if (vt && is_int(dt)) ld_ints(vt, &iv, 1, &cnt);
        else if (vt) return TIO_OK;
        if (!num_alloc(x, &r, dt == TIO_FLOAT32, (int)cnt, sh)) return TIO_OK;
        for (size_t k = 0; k < r.n; k++) {
            if (r.flt) r.f[k] = fv;
            else r.i[k] = iv;
        }
        STORE(&r, dt);
    }
    for (size_t k = 0; k < n->input_count; k++)
        if (n->inputs[k] < 0 || !pt(x, n->inputs[k])) return TIO_OK;
    if (n->input_count < 1) return TIO_OK;
    const tio_tensor *t0 = pt(x, n->inputs[0]);
    if (t0->dtype != TIO_FLOAT32 && !is_int(t0->dtype)) return TIO_OK;
    if (strcmp(op, "Reshape") == 0 || strcmp(op, "Unsqueeze") == 0 ||
        strcmp(op, "Squeeze") == 0 || strcmp(op, "Flatten") == 0 || strcmp(op, "Identity") == 0) {
        infer(x, j);
        if (!known(x, out)) return TIO_OK;
        /* the shape may be the one the source declared for the output: it must
         * hold the data's elements */
        uint64_t cnt_out = 1;
        for (int k = 0; k < x->srank[out]; k++) cnt_out *= (uint64_t)x->sh[out][k];
        if (cnt_out != t0->numel) return TIO_OK;
        int64_t t = mk_tensor(x, x->v[out].name, t0->dtype, x->srank[out], x->sh[out], t0->data,
                              t0->nbytes, true);
        if (t < 0) return nomem(x);
        rc = retensor(x, out, t);
        if (!rc) *folded = true;
        return rc;
    }
    if (!num_load(x, n->inputs[0], &a)) return TIO_OK;
    tio_dtype dt = t0->dtype;
    if (strcmp(op, "Cast") == 0) {
        tio_dtype to = cast_to(ga_i(n, "to", 0));
        if (to == TIO_DTYPE_INVALID) return TIO_OK;
        STORE(&a, to);
    }
    static const char *const bin[] = {"Add", "Sub", "Mul", "Div"};
    for (int q = 0; q < 4; q++) {
        if (strcmp(op, bin[q]) != 0) continue;
        const tio_tensor *t1 = pt(x, n->inputs[1]);
        if (n->input_count != 2 || t1->dtype != dt || !num_load(x, n->inputs[1], &b)) return TIO_OK;
        int ro;
        int64_t sh[TM_MAX_DIMS];
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
        int64_t axis = norm_axis(ga_i(n, "axis", 0), a.rank);
        if (axis < 0 || axis >= a.rank || a.rank - 1 + b.rank > (int)TM_MAX_DIMS) return TIO_OK;
        int64_t sh[TM_MAX_DIMS];
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
        int64_t axis = norm_axis(ga_i(n, "axis", 0), a.rank);
        if (axis < 0 || axis >= a.rank) return TIO_OK;
        num parts[16];
        if (n->input_count > 16) return TIO_OK;
        int64_t sh[TM_MAX_DIMS];
        memcpy(sh, a.sh, sizeof sh);
        sh[axis] = 0;
        for (size_t k = 0; k < n->input_count; k++) {
            memset(&parts[k], 0, sizeof parts[k]);
            if (!num_load(x, n->inputs[k], &parts[k]) || parts[k].rank != a.rank ||
                parts[k].flt != a.flt || pt(x, n->inputs[k])->dtype != dt)
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
        if (!const_ints(x, n, 1, "starts", st, 1, &ns) || !const_ints(x, n, 2, "ends", en, 1, &ne))
            return TIO_OK;
        if (const_ints(x, n, 3, "axes", ax, 1, &na) && norm_axis(ax[0], 1) != 0) return TIO_OK;
        if (!const_ints(x, n, 4, "steps", sp, 1, &nsp)) sp[0] = 1;
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

/* ----------------------------------------------- forms Tengine takes */

/* Constant inputs from k on that Tengine keeps as params become attributes
 * (their old ONNX form); the node keeps inputs [0, k). */
static int inputs_to_attrs(pp *x, tio_gnode *n, size_t k, const char *const *names, size_t cnt) {
    int64_t vals[2 * TM_MAX_DIMS];
    size_t nv;
    for (size_t q = k; q < n->input_count && q < k + cnt; q++) {
        if (n->inputs[q] < 0) continue;
        if (!ld_ints(pt(x, n->inputs[q]), vals, 2 * TM_MAX_DIMS, &nv)) return TIO_OK;
    }
    for (size_t q = k; q < n->input_count && q < k + cnt; q++) {
        if (n->inputs[q] < 0) continue;
        ld_ints(pt(x, n->inputs[q]), vals, 2 * TM_MAX_DIMS, &nv);
        int rc = set_ints(x, n, names[q - k], vals, nv);
        if (rc) return rc;
    }
    return n->input_count > k ? set_inputs(x, n, n->inputs, k) : TIO_OK;
}

static int attr_forms(pp *x, tio_gnode *n) {
    const char *op = n->op;
    int rc = TIO_OK;
    if (strcmp(op, "Clip") == 0 && n->input_count > 1) {
        double mn = -3.402823466e38, mx = 3.402823466e38;
        if (n->inputs[1] >= 0 && !ld_scalar_f(pt(x, n->inputs[1]), &mn)) return TIO_OK;
        if (n->input_count > 2 && n->inputs[2] >= 0 && !ld_scalar_f(pt(x, n->inputs[2]), &mx))
            return TIO_OK;
        if ((rc = set_f(x, n, "min", mn)) || (rc = set_f(x, n, "max", mx))) return rc;
        return set_inputs(x, n, n->inputs, 1);
    }
    if (strcmp(op, "Slice") == 0) {
        static const char *const nm[] = {"starts", "ends", "axes", "steps"};
        return inputs_to_attrs(x, n, 1, nm, 4);
    }
    if (strcmp(op, "Pad") == 0 && n->input_count > 1) {
        static const char *const nm[] = {"pads"};
        double val = 0;
        if (n->input_count > 2 && n->inputs[2] >= 0) {
            if (!ld_scalar_f(pt(x, n->inputs[2]), &val)) return TIO_OK;
            if ((rc = set_f(x, n, "value", val))) return rc;
            if ((rc = set_inputs(x, n, n->inputs, 2))) return rc;
        }
        return inputs_to_attrs(x, n, 1, nm, 1);
    }
    if (strcmp(op, "Unsqueeze") == 0 || strcmp(op, "Squeeze") == 0 ||
        strncmp(op, "Reduce", 6) == 0) {
        static const char *const nm[] = {"axes"};
        return inputs_to_attrs(x, n, 1, nm, 1);
    }
    if (strcmp(op, "Split") == 0) {
        static const char *const nm[] = {"split"};
        return inputs_to_attrs(x, n, 1, nm, 1);
    }
    return TIO_OK;
}

/* Whether n's attributes are among the names given (NULL-terminated): a
 * node fused or removed must not take an attribute with it unseen. */
static bool only_attrs(const tio_gnode *n, const char *const *names) {
    for (size_t k = 0; k < n->attr_count; k++) {
        bool ok = false;
        for (size_t q = 0; names[q] && !ok; q++) ok = strcmp(n->attrs[k].name, names[q]) == 0;
        if (!ok) return false;
    }
    return true;
}

/* A Pad that pads nothing, an Identity, a Dropout in inference: gone. */
static bool passthrough(const pp *x, const tio_gnode *n) {
    static const char *const none[] = {NULL}, *const drop[] = {"ratio", "seed", NULL},
                             *const pad[] = {"pads", "mode", "value", NULL};
    if (n->input_count < 1 || n->inputs[0] < 0 || n->output_count < 1 || n->outputs[0] < 0)
        return false;
    if (op_is(n, "Identity")) return n->output_count == 1 && only_attrs(n, none);
    if (op_is(n, "Dropout") && !only_attrs(n, drop)) return false;
    if (op_is(n, "Pad") && !only_attrs(n, pad)) return false;
    if (op_is(n, "Dropout"))
        return n->output_count == 1 || (n->output_count == 2 && n->outputs[1] >= 0 &&
                                         x->uses[n->outputs[1]] == 0 && !is_out(x, n->outputs[1]));
    if (op_is(n, "Pad") && n->output_count == 1) {
        const tio_gattr *p = ga(n, "pads");
        if (n->input_count != 1 || !p || p->type != TIO_ATTR_INTS) return false;
        for (size_t k = 0; k < p->count; k++)
            if (p->ints[k] != 0) return false;
        return true;
    }
    return false;
}

/* Gemm as FullyConnected: y = x W^T + b with alpha = beta = 1 (convert_tool
 * transposes W and scales W and b into that form). */
static int gemm_form(pp *x, tio_gnode *n) {
    if (n->input_count < 2 || n->input_count > 3 || ga_i(n, "transA", 0) != 0) return TIO_OK;
    int64_t tb = ga_i(n, "transB", 0);
    const tio_gattr *al = ga(n, "alpha"), *be = ga(n, "beta");
    double alpha = al && al->type == TIO_ATTR_FLOAT ? al->f : 1.0;
    double beta = be && be->type == TIO_ATTR_FLOAT ? be->f : 1.0;
    if (tb == 1 && alpha == 1.0 && beta == 1.0) return TIO_OK;
    int64_t wv = n->inputs[1], bv = n->input_count > 2 ? n->inputs[2] : -1;
    const tio_tensor *w = pt(x, wv);
    if (!w || w->rank != 2 || w->dtype != TIO_FLOAT32) return TIO_OK;
    size_t r0 = (size_t)w->shape[0], r1 = (size_t)w->shape[1];
    const uint8_t *wd = ld_f32(w, w->numel);
    const tio_tensor *b = bv >= 0 ? pt(x, bv) : NULL;
    if (!wd || (bv >= 0 && beta != 1.0 && (!b || !ld_f32(b, b->numel)))) return TIO_OK;
    int64_t nout = tb ? (int64_t)r0 : (int64_t)r1, kin = tb ? (int64_t)r1 : (int64_t)r0;
    uint8_t *nw = pa(x, w->nbytes ? w->nbytes : 1);
    if (!nw) return nomem(x);
    for (size_t i = 0; i < (size_t)nout; i++)
        for (size_t k = 0; k < (size_t)kin; k++) {
            float f = tb ? ldf(wd + 4 * (i * r1 + k)) : ldf(wd + 4 * (k * r1 + i));
            stf(nw + 4 * (i * (size_t)kin + k), alpha == 1.0 ? f : to_f(f * alpha));
        }
    int64_t shape[2] = {nout, kin};
    int64_t t = mk_tensor(x, x->v[wv].name, TIO_FLOAT32, 2, shape, nw, w->nbytes, true);
    if (t < 0) return nomem(x);
    int64_t nv = wv;
    if (x->uses[wv] != 1 || is_out(x, wv)) {
        nv = new_value(x, x->v[wv].name, TIO_FLOAT32, t, wv);
        if (nv < 0) return nomem(x);
    } else if (retensor(x, wv, t)) {
        return TIO_E_NOMEM;
    }
    int64_t in[3] = {n->inputs[0], nv, bv};
    if (b && beta != 1.0) {
        uint8_t *nb = pa(x, b->nbytes ? b->nbytes : 1);
        if (!nb) return nomem(x);
        for (size_t k = 0; k < b->numel; k++) stf(nb + 4 * k, to_f(ldf(b->data + 4 * k) * beta));
        int64_t bt = mk_tensor(x, x->v[bv].name, TIO_FLOAT32, (int)b->rank, b->shape, nb,
                               b->nbytes, true);
        int64_t nbv = bt < 0 ? -1 : new_value(x, x->v[bv].name, TIO_FLOAT32, bt, bv);
        if (nbv < 0) return nomem(x);
        in[2] = nbv;
    }
    int rc = set_inputs(x, n, in, n->input_count);
    if (!rc) rc = del_attr(x, n, "transpose_b");
    if (!rc) rc = set_i(x, n, "transB", 1);
    if (!rc) rc = del_attr(x, n, "alpha");
    if (!rc) rc = del_attr(x, n, "beta");
    return rc;
}

static int64_t sole_prod(const pp *x, int64_t v);

/* MatMul(x, W) + b with x of rank 2, W [K, N] and b [N] (or [1, N])
 * constants: one Gemm (then a FullyConnected, as gemm_form makes it).
 * Tengine's Eltwise Add does not run on 2-D tensors; its FullyConnected
 * does. The Add keeps its name and output. */
static int fuse_matmul_add(pp *x, size_t j) {
    tio_gnode *add = &x->n[j];
    static const char *const none[] = {NULL};
    if (!op_is(add, "Add") || add->input_count != 2 || add->output_count != 1 ||
        !only_attrs(add, none))
        return TIO_OK;
    for (int side = 0; side < 2; side++) {
        int64_t mv = add->inputs[side], bv = add->inputs[1 - side], mj = sole_prod(x, mv);
        if (mj < 0 || !op_is(&x->n[mj], "MatMul") || x->n[mj].input_count != 2 ||
            !only_attrs(&x->n[mj], none))
            continue;
        const tio_gnode *mm = &x->n[mj];
        int64_t av = mm->inputs[0], wv = mm->inputs[1];
        const tio_tensor *w = pt(x, wv), *b = pt(x, bv);
        int arank = known(x, av) ? x->srank[av] : av >= 0 ? (int)x->v[av].rank : -1;
        if (arank != 2 || !w || w->rank != 2 || !ld_f32(w, w->numel) || !b ||
            !ld_f32(b, b->numel) || b->numel != (uint64_t)w->shape[1] ||
            !(b->rank == 1 || (b->rank == 2 && b->shape[0] == 1)))
            continue;
        int64_t nb = bv;
        if (b->rank != 1) {
            int64_t n1 = w->shape[1];
            int64_t t = mk_tensor(x, x->v[bv].name, TIO_FLOAT32, 1, &n1, b->data, b->nbytes, true);
            if (t < 0 || (nb = new_value(x, x->v[bv].name, TIO_FLOAT32, t, bv)) < 0)
                return nomem(x);
        }
        int64_t in[3] = {av, wv, nb};
        int rc = set_inputs(x, add, in, 3);
        if (rc) return rc;
        add->op = (char *)(uintptr_t) "Gemm";
        kill(x, (size_t)mj);
        return gemm_form(x, add);
    }
    return TIO_OK;
}

/* MaxPool ceil_mode: dropped where it does not change the output (floor and
 * ceil agree), else Tengine's caffe rounding (caffe_flavor 1) for symmetric
 * pads, which computes the same size. Anything else stays for the writer to
 * refuse. */
static int pool_ceil(pp *x, tio_gnode *n) {
    if (ga_i(n, "ceil_mode", 0) == 0) return TIO_OK;
    int64_t in = n->inputs[0], out = n->outputs[0];
    if (!known(x, in) || !known(x, out) || x->srank[in] != 4) return TIO_OK;
    int64_t k[2], s[2] = {1, 1}, pd[4] = {0, 0, 0, 0};
    size_t cnt;
    if (!const_ints(x, n, 99, "kernel_shape", k, 2, &cnt) || cnt != 2) return TIO_OK;
    if (const_ints(x, n, 99, "strides", s, 2, &cnt) && cnt != 2) return TIO_OK;
    if (const_ints(x, n, 99, "pads", pd, 4, &cnt) && cnt != 4) return TIO_OK;
    if (ga(n, "dilations")) return TIO_OK;
    for (int j = 0; j < 2; j++)
        if (s[j] < 1 || s[j] > PP_BIG || k[j] < 1 || k[j] > PP_BIG || pd[j] < 0 ||
            pd[j] > PP_BIG || pd[j + 2] < 0 || pd[j + 2] > PP_BIG)
            return TIO_OK; /* bounded before the sums below */
    bool floor_same = true;
    for (int j = 0; j < 2; j++) {
        int64_t span = x->sh[in][2 + j] + pd[j] + pd[j + 2] - k[j];
        if (span < 0 || span / s[j] + 1 != x->sh[out][2 + j]) floor_same = false;
    }
    int rc;
    if (floor_same) return set_i(x, n, "ceil_mode", 0);
    if (!op_is(n, "MaxPool") || pd[0] != pd[2] || pd[1] != pd[3]) return TIO_OK;
    /* Tengine's caffe size: 2 + (in - k + 2p - 1) / s, less one when the last
     * window starts past the input and p > 0: ONNX's ceil_mode size */
    for (int j = 0; j < 2; j++) {
        int64_t iv = x->sh[in][2 + j], o = 2 + (iv - k[j] + 2 * pd[j] - 1) / s[j];
        if (pd[j] > 0 && (o - 1) * s[j] >= iv + pd[j]) o--;
        if (o != x->sh[out][2 + j]) return TIO_OK;
    }
    if ((rc = del_attr(x, n, "ceil_mode"))) return rc;
    return set_i(x, n, "tmfile.caffe_flavor", 1);
}

/* ------------------------------------------------------------ fusions */

/* The node producing v when v is read once, by a node, and is no graph output. */
static int64_t sole_prod(const pp *x, int64_t v) {
    if (v < 0 || x->uses[v] != 1 || is_out(x, v)) return -1;
    return x->prod[v];
}

/* Node j (the second of a fused pair, reading mid and writing out) is gone:
 * mid's producer pj writes on. Its value stays, as convert_tool keeps the
 * first node's output, unless out is a graph output: then pj writes out,
 * so that the model's outputs keep their names. */
static int fuse_away(pp *x, size_t j, int64_t pj, int64_t mid, int64_t out) {
    kill(x, j);
    if (!is_out(x, out)) {
        replace_uses(x, out, mid);
        return TIO_OK;
    }
    tio_gnode *p = &x->n[pj];
    int64_t *o = pa(x, p->output_count * sizeof *o);
    if (!o) return nomem(x);
    for (size_t k = 0; k < p->output_count; k++) o[k] = p->outputs[k] == mid ? out : p->outputs[k];
    p->outputs = o;
    x->prod[out] = pj;
    x->prod[mid] = -1;
    copy_shape(x, out, mid);
    return TIO_OK;
}

/* Conv or FullyConnected-form Gemm followed by BatchNormalization: the BN
 * folded into the weights and bias (convert_tool's fuse_conv_bn/fuse_fc_bn).
 * A new bias is named '<weight>.bias.bn' as convert_tool names it. */
static int fuse_bn(pp *x, size_t j) {
    tio_gnode *bn = &x->n[j];
    static const char *const known_bn[] = {"epsilon", "momentum", NULL};
    if (!op_is(bn, "BatchNormalization") || bn->input_count != 5 || bn->output_count != 1 ||
        !only_attrs(bn, known_bn))
        return TIO_OK;
    int64_t pj = sole_prod(x, bn->inputs[0]);
    if (pj < 0) return TIO_OK;
    tio_gnode *cv = &x->n[pj];
    bool conv = op_is(cv, "Conv");
    bool fc = op_is(cv, "Gemm") && ga_i(cv, "transB", 0) == 1 && !ga(cv, "alpha") && !ga(cv, "beta");
    if ((!conv && !fc) || cv->input_count < 2) return TIO_OK;
    const tio_tensor *w = pt(x, cv->inputs[1]);
    if (!w || w->dtype != TIO_FLOAT32 || w->rank < 2 || w->shape[0] < 1) return TIO_OK;
    size_t co = (size_t)w->shape[0], per = (size_t)(w->numel / (uint64_t)co);
    const uint8_t *wd = ld_f32(w, w->numel), *p[4];
    for (int k = 0; k < 4; k++)
        if (!(p[k] = ld_f32(pt(x, bn->inputs[1 + k]), co))) return TIO_OK;
    int64_t bv = cv->input_count > 2 ? cv->inputs[2] : -1;
    const uint8_t *bd = bv >= 0 ? ld_f32(pt(x, bv), co) : NULL;
    if (!wd || (bv >= 0 && !bd)) return TIO_OK;
    const tio_gattr *ea = ga(bn, "epsilon");
    float eps = ea && ea->type == TIO_ATTR_FLOAT ? to_f(ea->f) : 1e-5f;
    uint8_t *nw = pa(x, w->nbytes), *nb = pa(x, co * 4);
    if (!nw || !nb) return nomem(x);
    for (size_t c = 0; c < co; c++) {
        float inv = 1.f / sqrtf(ldf(p[3] + 4 * c) + eps);
        float mean = ldf(p[2] + 4 * c), gamma = ldf(p[0] + 4 * c), beta = ldf(p[1] + 4 * c);
        float sm = ((bd ? ldf(bd + 4 * c) : 0.f) - mean) * inv;
        float sc = gamma * inv;
        sm = gamma * sm + beta;
        for (size_t e = 0; e < per; e++)
            stf(nw + 4 * (c * per + e), ldf(wd + 4 * (c * per + e)) * sc);
        stf(nb + 4 * c, sm);
    }
    int64_t wv = cv->inputs[1];
    int64_t wt = mk_tensor(x, x->v[wv].name, TIO_FLOAT32, (int)w->rank, w->shape, nw, w->nbytes,
                           true);
    int64_t bshape = (int64_t)co;
    const char *bname = bv >= 0 ? x->v[bv].name
                                : pa_str(x, x->v[wv].name ? x->v[wv].name : "bias", ".bias.bn");
    int64_t bt = bname ? mk_tensor(x, bname, TIO_FLOAT32, 1, &bshape, nb, co * 4, true) : -1;
    if (wt < 0 || bt < 0) return nomem(x);
    int64_t in[3] = {cv->inputs[0], wv, bv};
    if (x->uses[wv] == 1 && !is_out(x, wv)) {
        if (retensor(x, wv, wt)) return TIO_E_NOMEM;
    } else if ((in[1] = new_value(x, x->v[wv].name, TIO_FLOAT32, wt, wv)) < 0) return nomem(x);
    if (bv >= 0 && x->uses[bv] == 1 && !is_out(x, bv)) {
        if (retensor(x, bv, bt)) return TIO_E_NOMEM;
    } else if ((in[2] = new_value(x, bname, TIO_FLOAT32, bt, bv >= 0 ? bv : wv)) < 0)
        return nomem(x);
    int rc = set_inputs(x, cv, in, 3);
    if (rc) return rc;
    return fuse_away(x, j, pj, bn->inputs[0], bn->outputs[0]);
}

/* Conv then Relu (slope 0) or Clip(0, 6): the activation in the Conv's param
 * (convert_tool's fuse_conv_relu_common, which also fuses a Clip whose min
 * is 0 or whose max is 6; here both must hold). The Conv's output stays. */
static int fuse_act(pp *x, size_t j) {
    tio_gnode *a = &x->n[j];
    static const char *const none[] = {NULL}, *const minmax[] = {"min", "max", NULL};
    int act;
    if (op_is(a, "Relu") && a->input_count == 1 && only_attrs(a, none)) act = 0;
    else if (op_is(a, "Clip") && a->input_count == 1 && only_attrs(a, minmax)) {
        const tio_gattr *mn = ga(a, "min"), *mx = ga(a, "max");
        if (!mn || !mx || mn->type != TIO_ATTR_FLOAT || mx->type != TIO_ATTR_FLOAT ||
            mn->f != 0.0 || mx->f != 6.0)
            return TIO_OK;
        act = 6;
    } else return TIO_OK;
    if (a->output_count != 1) return TIO_OK;
    int64_t pj = sole_prod(x, a->inputs[0]);
    if (pj < 0 || !op_is(&x->n[pj], "Conv") || ga(&x->n[pj], "tmfile.activation")) return TIO_OK;
    int rc = set_i(x, &x->n[pj], "tmfile.activation", act);
    if (rc) return rc;
    return fuse_away(x, j, pj, a->inputs[0], a->outputs[0]);
}

static bool scalar_is(const pp *x, int64_t v, double want, double tol) {
    double f;
    return ld_scalar_f(pt(x, v), &f) && fabs(f - want) <= tol;
}

/* The operand of binary node n that is not v (or -1). */
static int64_t other(const tio_gnode *n, int64_t v) {
    if (n->input_count != 2) return -1;
    return n->inputs[0] == v ? n->inputs[1] : n->inputs[1] == v ? n->inputs[0] : -1;
}

/* x->cons: a live node reading each value (inputs resolved first). */
static int index_consumers(pp *x) {
    if (!x->cons && !(x->cons = malloc(x->vcap * sizeof *x->cons))) return nomem(x);
    for (size_t i = 0; i < x->nv; i++) x->cons[i] = -1;
    for (size_t j = 0; j < x->nn; j++) {
        if (x->dead[j]) continue;
        visit(x, j);
        for (size_t k = 0; k < x->n[j].input_count; k++)
            if (x->n[j].inputs[k] >= 0) x->cons[x->n[j].inputs[k]] = (int64_t)j;
    }
    return TIO_OK;
}

/* The single node that reads v (or -1), by the index (a stale entry: -1). */
static int64_t sole_user(const pp *x, int64_t v) {
    if (v < 0 || x->uses[v] != 1 || is_out(x, v) || !x->cons) return -1;
    int64_t j = x->cons[v];
    if (j < 0 || x->dead[j]) return -1;
    for (size_t k = 0; k < x->n[j].input_count; k++)
        if (x->n[j].inputs[k] == v) return j;
    return -1;
}

/* GELU as torch exports it, 0.5 x (1 + erf(x / sqrt 2)): Div(x, 1.4142) or
 * Mul(x, 0.7071) -> Erf -> Add(1) -> Mul(x) -> Mul(0.5), or with the 0.5
 * applied to x first. One Gelu (Tengine's is the erf form). */
static int fuse_gelu(pp *x, size_t j) {
    tio_gnode *erf = &x->n[j];
    if (!op_is(erf, "Erf") || erf->input_count != 1 || erf->output_count != 1) return TIO_OK;
    int64_t dj = sole_prod(x, erf->inputs[0]);
    if (dj < 0) return TIO_OK;
    const tio_gnode *dv = &x->n[dj];
    if (dv->input_count != 2) return TIO_OK;
    int64_t xv = dv->inputs[0];
    if (!((op_is(dv, "Div") && scalar_is(x, dv->inputs[1], 1.41421356, 1e-4)) ||
          (op_is(dv, "Mul") && scalar_is(x, dv->inputs[1], 0.70710678, 1e-4))))
        return TIO_OK;
    int64_t aj = sole_user(x, erf->outputs[0]);
    if (aj < 0 || !op_is(&x->n[aj], "Add") || !scalar_is(x, other(&x->n[aj], erf->outputs[0]),
                                                          1.0, 0))
        return TIO_OK;
    int64_t av = x->n[aj].outputs[0], mj = sole_user(x, av);
    if (mj < 0 || !op_is(&x->n[mj], "Mul")) return TIO_OK;
    int64_t xo = other(&x->n[mj], av), hj = -1, out;
    size_t gone[5] = {(size_t)dj, j, (size_t)aj, (size_t)mj, 0};
    if (xo == xv) {
        /* Mul(x, A) then Mul(., 0.5) */
        hj = sole_user(x, x->n[mj].outputs[0]);
        if (hj < 0 || !op_is(&x->n[hj], "Mul") ||
            !scalar_is(x, other(&x->n[hj], x->n[mj].outputs[0]), 0.5, 0))
            return TIO_OK;
        out = x->n[hj].outputs[0];
    } else {
        /* Mul(x, 0.5) then Mul(., A) */
        hj = xo >= 0 ? sole_prod(x, xo) : -1;
        if (hj < 0 || !op_is(&x->n[hj], "Mul") || other(&x->n[hj], xv) < 0 ||
            !scalar_is(x, other(&x->n[hj], xv), 0.5, 0))
            return TIO_OK;
        out = x->n[mj].outputs[0];
    }
    gone[4] = (size_t)hj;
    for (int k = 0; k < 5; k++)
        if (x->n[gone[k]].attr_count) return TIO_OK;
    /* the last node becomes the Gelu, keeping its name and output */
    size_t keep = xo == xv ? (size_t)hj : (size_t)mj;
    tio_gnode *g = &x->n[keep];
    int64_t in[1] = {xv};
    int rc = set_inputs(x, g, in, 1);
    if (rc) return rc;
    g->op = (char *)(uintptr_t) "Gelu";
    g->attrs = NULL;
    g->attr_count = g->attr_cap = 0;
    g->outputs = pa(x, sizeof *g->outputs);
    if (!g->outputs) return nomem(x);
    g->outputs[0] = out;
    g->output_count = 1;
    for (int k = 0; k < 5; k++)
        if (gone[k] != keep) kill(x, gone[k]);
    return TIO_OK;
}

/* A Reshape's int64 shape constant: its values as the attribute
 * tmfile.re_shape (the writer's re_shape param), the constant itself as
 * convert_tool keeps it: int32, the first 4n bytes of the int64 data. */
static int reshape_shape(pp *x, tio_gnode *n) {
    if (n->input_count != 2 || n->inputs[1] < 0) return TIO_OK;
    int64_t sv = n->inputs[1];
    const tio_tensor *t = pt(x, sv);
    int64_t vals[TM_MAX_DIMS];
    size_t cnt;
    if (!t || t->dtype != TIO_INT64 || !ld_ints(t, vals, TM_MAX_DIMS, &cnt)) return TIO_OK;
    for (size_t k = 0; k < cnt; k++)
        if (vals[k] < INT32_MIN || vals[k] > INT32_MAX) return TIO_OK;
    int rc = set_ints(x, n, "tmfile.re_shape", vals, cnt);
    if (rc) return rc;
    int64_t nt = mk_tensor(x, x->v[sv].name, TIO_INT32, (int)t->rank, t->shape, t->data, cnt * 4,
                           true);
    if (nt < 0) return nomem(x);
    if (x->uses[sv] == 1 && !is_out(x, sv)) {
        return retensor(x, sv, nt);
    }
    int64_t nv = new_value(x, x->v[sv].name, TIO_INT32, nt, sv);
    if (nv < 0) return nomem(x);
    int64_t in[2] = {n->inputs[0], nv};
    return set_inputs(x, n, in, 2);
}

/* x * HardSigmoid(x) with alpha 1/6 and beta 1/2 (how torch exports
 * Hardswish below opset 14): one HardSwish, which Tengine runs at any rank
 * (its Eltwise Mul takes only 3-D and 4-D tensors). */
static int fuse_hardswish(pp *x, size_t j) {
    tio_gnode *hs = &x->n[j];
    const tio_gattr *al = ga(hs, "alpha"), *be = ga(hs, "beta");
    static const char *const ab[] = {"alpha", "beta", NULL};
    if (!op_is(hs, "HardSigmoid") || hs->input_count != 1 || hs->output_count != 1 ||
        !only_attrs(hs, ab) || (al && al->type != TIO_ATTR_FLOAT) ||
        (be && be->type != TIO_ATTR_FLOAT))
        return TIO_OK;
    /* ONNX's defaults: alpha 0.2, beta 0.5 */
    if (to_f(al ? al->f : 0.2) != (float)(1.0 / 6.0) || (be ? be->f : 0.5) != 0.5)
        return TIO_OK;
    int64_t xv = hs->inputs[0], mj = sole_user(x, hs->outputs[0]);
    if (mj < 0 || !op_is(&x->n[mj], "Mul") || x->n[mj].attr_count ||
        other(&x->n[mj], hs->outputs[0]) != xv)
        return TIO_OK;
    tio_gnode *m = &x->n[mj];
    int64_t in[1] = {xv};
    int rc = set_inputs(x, m, in, 1);
    if (rc) return rc;
    m->op = (char *)(uintptr_t) "HardSwish";
    kill(x, j);
    return TIO_OK;
}

/* ------------------------------------------------------------- driver */

static int build(pp *x, const tio_graph *src) {
    tm_prep *p = x->p;
    tio_graph *g = &p->g;
    /* live values: produced, read, graph inputs/outputs */
    uint8_t *live = calloc(x->nv ? x->nv : 1, 1);
    int64_t *map = malloc((x->nv ? x->nv : 1) * sizeof *map);
    int64_t *order = malloc((x->nv ? x->nv : 1) * sizeof *order);
    size_t nn = 0;
    int rc = TIO_OK;
    if (!live || !map || !order) {
        rc = nomem(x);
        goto out;
    }
    for (size_t k = 0; k < x->nout; k++) x->outs[k] = resolve(x, x->outs[k]);
    for (size_t j = 0; j < x->nn; j++) {
        if (x->dead[j]) continue;
        visit(x, j);
        nn++;
        for (size_t k = 0; k < x->n[j].input_count; k++)
            if (x->n[j].inputs[k] >= 0) live[x->n[j].inputs[k]] = 1;
        for (size_t k = 0; k < x->n[j].output_count; k++)
            if (x->n[j].outputs[k] >= 0) live[x->n[j].outputs[k]] = 1;
    }
    for (size_t k = 0; k < src->input_count; k++) live[src->inputs[k]] = 1;
    for (size_t k = 0; k < x->nout; k++) live[x->outs[k]] = 1;
    for (size_t i = 0; i < src->value_count; i++)
        if (x->idle[i]) live[i] = 1;
    /* the order: source values in place, each new value before its anchor */
    size_t m = 0;
    size_t nsrc = src->value_count;
    for (size_t i = 0; i <= nsrc; i++) {
        for (size_t q = nsrc; q < x->nv; q++) {
            int64_t b = x->before[q];
            /* chains of anchors: a new value anchored on a new value */
            while (b >= (int64_t)nsrc) b = x->before[b];
            if ((i < nsrc && b == (int64_t)i) || (i == nsrc && b < 0)) order[m++] = (int64_t)q;
        }
        if (i < nsrc) order[m++] = (int64_t)i;
    }
    g->values = calloc(x->nv ? x->nv : 1, sizeof *g->values);
    g->nodes = calloc(nn ? nn : 1, sizeof *g->nodes);
    p->dropped = calloc(x->c->count ? x->c->count : 1, 1);
    if (!g->values || !g->nodes || !p->dropped) {
        rc = nomem(x);
        goto out;
    }
    size_t nv = 0;
    for (size_t q = 0; q < m; q++) {
        int64_t i = order[q];
        map[i] = -1;
        if (!live[i]) continue;
        map[i] = (int64_t)nv;
        tio_gvalue *gv = &g->values[nv++];
        *gv = x->v[i];
        if (gv->tensor < 0 && gv->rank < 0 && x->srank[i] >= 0) {
            /* the inferred shape, as convert_tool's infer_shape saves it */
            tio_dim *d = pa(x, (size_t)(x->srank[i] ? x->srank[i] : 1) * sizeof *d);
            if (!d) {
                rc = nomem(x);
                goto out;
            }
            for (int k = 0; k < x->srank[i]; k++) d[k].value = x->sh[i][k];
            gv->rank = x->srank[i];
            gv->dims = d;
            if (gv->dtype == TIO_DTYPE_INVALID) gv->dtype = TIO_FLOAT32;
        }
    }
    g->value_count = g->value_cap = nv;
    for (size_t i = 0; i < x->c->count; i++) p->dropped[i] = 1;
    for (size_t i = 0; i < nv; i++)
        if (g->values[i].tensor >= 0 && (size_t)g->values[i].tensor < x->c->count)
            p->dropped[g->values[i].tensor] = 0;
    size_t k2 = 0;
    for (size_t j = 0; j < x->nn; j++) {
        if (x->dead[j]) continue;
        tio_gnode *n = &g->nodes[k2++];
        *n = x->n[j];
        int64_t *in = pa(x, (n->input_count + 1) * sizeof *in);
        int64_t *ou = pa(x, (n->output_count + 1) * sizeof *ou);
        if (!in || !ou) {
            rc = nomem(x);
            goto out;
        }
        for (size_t k = 0; k < n->input_count; k++)
            in[k] = n->inputs[k] < 0 ? -1 : map[n->inputs[k]];
        for (size_t k = 0; k < n->output_count; k++)
            ou[k] = n->outputs[k] < 0 ? -1 : map[n->outputs[k]];
        n->inputs = in;
        n->outputs = ou;
    }
    g->node_count = g->node_cap = nn;
    int64_t *gi = pa(x, (src->input_count + 1) * sizeof *gi);
    int64_t *go = pa(x, (x->nout + 1) * sizeof *go);
    if (!gi || !go) {
        rc = nomem(x);
        goto out;
    }
    for (size_t k = 0; k < src->input_count; k++) gi[k] = map[src->inputs[k]];
    for (size_t k = 0; k < x->nout; k++) go[k] = map[x->outs[k]];
    g->inputs = gi;
    g->outputs = go;
    g->output_count = x->nout;
out:
    free(live);
    free(map);
    free(order);
    return rc;
}

/* A Constant node of value_float(s) / value_int(s) (what the TensorFlow
 * Lite raise writes for Clip's bounds, Slice's starts, ...): its value made
 * a constant (float32 or int64), as for a `value` tensor. *done when it
 * was; a value too large to fold leaves the node. */
static int const_attr(pp *x, size_t j, bool *done) {
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

static int run(pp *x, const tio_graph *src, bool fuse) {
    int rc;
    /* Constant nodes -> constants */
    for (size_t j = 0; j < x->nn; j++) {
        tio_gnode *n = &x->n[j];
        if (!op_is(n, "Constant") || n->output_count != 1 || n->outputs[0] < 0) continue;
        const tio_gattr *a = ga(n, "value");
        if (a && a->type == TIO_ATTR_TENSOR && n->attr_count == 1 &&
            tio__tmfile_prep_tensor(x->p, x->c, a->i)) {
            if ((rc = retensor(x, n->outputs[0], a->i))) return rc;
            kill(x, j);
        } else {
            bool done = false;
            if ((rc = const_attr(x, j, &done))) return rc;
            if (done) kill(x, j);
        }
    }
    /* one pass in order: simplify, infer, fold */
    for (size_t j = 0; j < x->nn; j++) {
        tio_gnode *n = &x->n[j];
        if (x->dead[j]) continue;
        visit(x, j);
        if ((rc = attr_forms(x, n))) return rc;
        if (passthrough(x, n)) {
            int64_t out = n->outputs[0], in = n->inputs[0];
            kill(x, j);
            copy_shape(x, in, out);
            replace_uses(x, out, in);
            continue;
        }
        infer(x, j);
        bool folded = false;
        if ((rc = fold(x, j, &folded))) return rc;
        if (folded) {
            kill(x, j);
            continue;
        }
        if (op_is(n, "Gemm") && (rc = gemm_form(x, n))) return rc;
        if (fuse && op_is(n, "Add") && (rc = fuse_matmul_add(x, j))) return rc;
        if ((op_is(n, "MaxPool") || op_is(n, "AveragePool")) && (rc = pool_ceil(x, n))) return rc;
        if (op_is(n, "Flatten") && known(x, n->inputs[0]) &&
            (rc = set_i(x, n, "tmfile.end_axis", x->srank[n->inputs[0]] - 1)))
            return rc;
        if (strncmp(n->op, "Reduce", 6) == 0 && known(x, n->inputs[0]) &&
            (rc = set_i(x, n, "tmfile.rank", x->srank[n->inputs[0]])))
            return rc;
    }
    if ((rc = index_consumers(x))) return rc;
    for (size_t j = 0; j < x->nn; j++)
        if (!x->dead[j] && (rc = fuse_gelu(x, j))) return rc;
    if (fuse) {
        for (size_t j = 0; j < x->nn; j++)
            if (!x->dead[j] && (visit(x, j), rc = fuse_bn(x, j))) return rc;
        for (size_t j = 0; j < x->nn; j++)
            if (!x->dead[j] && (visit(x, j), rc = fuse_act(x, j))) return rc;
        if ((rc = index_consumers(x))) return rc;
        for (size_t j = 0; j < x->nn; j++)
            if (!x->dead[j] && (rc = fuse_hardswish(x, j))) return rc;
    }
    for (size_t j = 0; j < x->nn; j++)
        if (!x->dead[j] && (visit(x, j), op_is(&x->n[j], "Reshape")) &&
            (rc = reshape_shape(x, &x->n[j])))
            return rc;
    return build(x, src);
}

int tio__tmfile_prep(const tio_container *c, const tio_graph *src, bool fuse, tm_prep *p,
                     tio_error *err) {
    memset(p, 0, sizeof *p);
    p->nc = c->count;
    pp x = {.p = p, .c = c, .err = err};
    int rc = TIO_OK;
    size_t nv = src->value_count;
    x.nn = src->node_count;
    x.vcap = nv + 16;
    x.v = malloc(x.vcap * sizeof *x.v);
    x.srank = malloc(x.vcap * sizeof *x.srank);
    x.sh = malloc(x.vcap * sizeof *x.sh);
    x.before = malloc(x.vcap * sizeof *x.before);
    x.uses = calloc(x.vcap, sizeof *x.uses);
    x.prod = malloc(x.vcap * sizeof *x.prod);
    x.n = malloc((x.nn ? x.nn : 1) * sizeof *x.n);
    x.dead = calloc(x.nn ? x.nn : 1, 1);
    x.alias = malloc(x.vcap * sizeof *x.alias);
    x.isout = calloc(x.vcap, 1);
    x.nout = src->output_count;
    x.outs = pa(&x, (x.nout + 1) * sizeof *x.outs);
    if (!x.v || !x.srank || !x.sh || !x.before || !x.uses || !x.prod || !x.n || !x.dead ||
        !x.outs || !x.alias || !x.isout) {
        rc = nomem(&x);
        goto out;
    }
    p->g = *src; /* meta, opaque, opsets: read through; arrays replaced in build */
    p->g.values = NULL;
    p->g.nodes = NULL;
    p->g.subgraphs = NULL;
    p->g.sub_count = 0;
    x.nv = nv;
    for (size_t i = 0; i < nv; i++) {
        x.v[i] = src->values[i];
        x.srank[i] = -1;
        x.alias[i] = -1;
        x.before[i] = -1;
        const tio_gvalue *v = &src->values[i];
        int64_t d[TM_MAX_DIMS];
        if (v->tensor >= 0) {
            const tio_tensor *t = tio__tmfile_prep_tensor(p, c, v->tensor);
            if (t && t->rank <= TM_MAX_DIMS) {
                for (size_t k = 0; k < t->rank; k++) d[k] = t->shape[k];
                set_shape(&x, (int64_t)i, (int)t->rank, d); /* bounded there */
            }
        } else if (v->rank >= 0 && v->rank <= (int64_t)TM_MAX_DIMS && v->dims) {
            bool ok = true;
            for (int64_t k = 0; k < v->rank; k++) {
                if (v->dims[k].value < 0 || v->dims[k].name) ok = false;
                d[k] = v->dims[k].value;
            }
            if (ok) set_shape(&x, (int64_t)i, (int)v->rank, d);
        }
    }
    for (size_t j = 0; j < x.nn; j++) {
        x.n[j] = src->nodes[j];
        int64_t *in = pa(&x, (x.n[j].input_count + 1) * sizeof *in);
        if (!in) {
            rc = nomem(&x);
            goto out;
        }
        if (x.n[j].input_count) memcpy(in, x.n[j].inputs, x.n[j].input_count * sizeof *in);
        x.n[j].inputs = in;
    }
    for (size_t k = 0; k < x.nout; k++) x.outs[k] = src->outputs[k];
    recount(&x);
    x.idle = pa(&x, nv ? nv : 1);
    if (!x.idle) {
        rc = nomem(&x);
        goto out;
    }
    for (size_t i = 0; i < nv; i++) x.idle[i] = src->values[i].tensor >= 0 && x.uses[i] == 0;
    rc = run(&x, src, fuse);
out:
    free(x.v);
    free(x.srank);
    free(x.sh);
    free(x.before);
    free(x.uses);
    free(x.prod);
    free(x.n);
    free(x.dead);
    free(x.alias);
    free(x.isout);
    free(x.cons);
    if (rc) tio__tmfile_prep_free(p);
    return rc;
}
