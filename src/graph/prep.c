/*
 * A graph in ONNX semantics made ready for lowering to another format's
 * operators (the tmfile and tflite writers): see prep.h. It began as the
 * tmfile writer's preparation (what convert_tool's ONNX front end and graph
 * optimiser do, and where they fail, better: docs/formats/tmfile.md); the
 * steps only Tengine needs are the tmfile writer's hooks (src/tmfile/prep.c).
 *
 * Everything runs on a copy: the source graph and container are not changed.
 * New arrays, attributes and tensors live in an arena freed with the result.
 * Shapes are inferred statically (graph inputs of fixed dims, constants) and
 * used only to fold and to choose params; the dims written stay the source's.
 */
#include "graph/prep_impl.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ------------------------------------------------------------ memory */

void *tio__gp_pa(pp *x, size_t n) {
    pp_blk *b = calloc(1, sizeof *b + (n ? n : 1));
    if (!b) return NULL;
    b->next = x->p->arena;
    x->p->arena = b;
    return b->data;
}

static char *pa_str(pp *x, const char *a, const char *b) {
    size_t la = strlen(a), lb = b ? strlen(b) : 0;
    char *s = tio__gp_pa(x, la + lb + 1);
    if (!s) return NULL;
    memcpy(s, a, la);
    if (lb) memcpy(s + la, b, lb);
    s[la + lb] = '\0';
    return s;
}

void tio__gprep_free(tio_gprepped *p) {
    for (pp_blk *b = p->arena, *nx; b; b = nx) {
        nx = b->next;
        free(b);
    }
    free(p->extra);
    free(p->dropped);
    free(p->g.values);
    free(p->g.nodes);
    tio__names_lazy_free(&p->g.names);
    tio__graph_caps_free(&p->g);
    memset(p, 0, sizeof *p);
}

const tio_tensor *tio__gprep_tensor(const tio_gprepped *p, const tio_container *c, int64_t idx) {
    if (idx < 0) return NULL;
    if ((size_t)idx < c->count) return c->tensors[idx];
    size_t k = (size_t)idx - c->count;
    return p && k < p->nextra ? p->extra[k] : NULL;
}

const tio_tensor *tio__gp_pt(const pp *x, int64_t v) {
    if (v < 0 || (size_t)v >= x->nv) return NULL;
    const tio_tensor *t = tio__gprep_tensor(x->p, x->c, x->v[v].tensor);
    return t && t->layout == TIO_LAYOUT_DENSE && (t->data || t->nbytes == 0) ? t : NULL;
}

/* A new tensor (the data copied, or viewed when view is set). Its index, or
 * -1 when out of memory. */
int64_t tio__gp_mk_tensor(pp *x, const char *name, tio_dtype dt, int rank, const int64_t *shape,
                         const void *data, size_t nbytes, bool view) {
    tio_gprepped *p = x->p;
    if (p->nextra == p->extra_cap) {
        size_t cap = p->extra_cap ? 2 * p->extra_cap : 8;
        tio_tensor **e = realloc(p->extra, cap * sizeof *e);
        if (!e) return -1;
        p->extra = e;
        p->extra_cap = cap;
    }
    tio_tensor *t = tio__gp_pa(x, sizeof *t);
    int64_t *shp = tio__gp_pa(x, (size_t)(rank > 0 ? rank : 1) * sizeof *shp);
    uint8_t *d = view ? NULL : tio__gp_pa(x, nbytes);
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

int tio__gp_nomem(pp *x) { return tio__nomem(x->err, x->o->fmt); }


/* A new value (a constant when tensor >= 0), written before value `before`. */
static int64_t new_value(pp *x, const char *name, tio_dtype dt, int64_t tensor, int64_t before) {
    if (x->nv == x->vcap) {
        size_t cap = x->vcap ? 2 * x->vcap : 16;
        tio_gvalue *v = realloc(x->v, cap * sizeof *v);
        if (v) x->v = v;
        int *r = realloc(x->srank, cap * sizeof *r);
        if (r) x->srank = r;
        int64_t(*s)[GP_MAX_DIMS] = realloc(x->sh, cap * sizeof *s);
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
    if (tensor >= 0 && tio__gp_retensor(x, (int64_t)i, tensor)) return -1;
    return (int64_t)i;
}

/* Value v becomes constant tensor t: its dtype and dims are t's. */
int tio__gp_retensor(pp *x, int64_t v, int64_t t) {
    const tio_tensor *e = tio__gprep_tensor(x->p, x->c, t);
    tio_dim *d = tio__gp_pa(x, (e->rank ? e->rank : 1) * sizeof *d);
    if (!d) return tio__gp_nomem(x);
    for (size_t k = 0; k < e->rank; k++) d[k].value = e->shape[k];
    x->v[v].tensor = t;
    x->v[v].dtype = e->dtype;
    x->v[v].rank = (int32_t)e->rank;
    x->v[v].dims = d;
    int64_t sh[GP_MAX_DIMS];
    for (size_t k = 0; k < e->rank && k < GP_MAX_DIMS; k++) sh[k] = e->shape[k];
    if (e->rank <= GP_MAX_DIMS) tio__gp_set_shape(x, v, (int)e->rank, sh);
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

const tio_gattr *tio__gp_ga(const tio_gnode *n, const char *name) {
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

const tio_gattr *tio__gp_ga2(const tio_gnode *n, const char *name) {
    const tio_gattr *a = tio__gp_ga(n, name);
    const char *alt = a ? NULL : alt_name(name);
    return alt ? tio__gp_ga(n, alt) : a;
}

int64_t tio__gp_ga_i(const tio_gnode *n, const char *name, int64_t dflt) {
    const tio_gattr *a = tio__gp_ga2(n, name);
    return a && a->type == TIO_ATTR_INT ? a->i : dflt;
}

/* A copy of n's attributes without `name` and with room for one more. */
static tio_gattr *attrs_without(pp *x, tio_gnode *n, const char *name) {
    tio_gattr *a = tio__gp_pa(x, (n->attr_count + 1) * sizeof *a);
    if (!a) return NULL;
    size_t m = 0;
    for (size_t k = 0; k < n->attr_count; k++)
        if (!name || strcmp(n->attrs[k].name, name) != 0) a[m++] = n->attrs[k];
    n->attrs = a;
    n->attr_count = n->attr_cap = m;
    return a;
}

static int del_attr(pp *x, tio_gnode *n, const char *name) {
    if (!tio__gp_ga(n, name)) return TIO_OK;
    return attrs_without(x, n, name) ? TIO_OK : tio__gp_nomem(x);
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
    if (!e) return tio__gp_nomem(x);
    e->i = v;
    return TIO_OK;
}

static int set_f(pp *x, tio_gnode *n, const char *name, double v) {
    tio_gattr *e = put_attr(x, n, name, TIO_ATTR_FLOAT);
    if (!e) return tio__gp_nomem(x);
    e->f = v;
    return TIO_OK;
}

static int set_ints(pp *x, tio_gnode *n, const char *name, const int64_t *v, size_t cnt) {
    int64_t *c = tio__gp_pa(x, (cnt ? cnt : 1) * sizeof *c);
    tio_gattr *e = c ? put_attr(x, n, name, TIO_ATTR_INTS) : NULL;
    if (!e) return tio__gp_nomem(x);
    if (cnt) memcpy(c, v, cnt * sizeof *c);
    e->ints = c;
    e->count = cnt;
    return TIO_OK;
}

static int set_inputs(pp *x, tio_gnode *n, const int64_t *in, size_t cnt) {
    int64_t *c = tio__gp_pa(x, (cnt ? cnt : 1) * sizeof *c);
    if (!c) return tio__gp_nomem(x);
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

bool tio__gp_is_int(tio_dtype d) { return d == TIO_INT64 || d == TIO_INT32; }

/* The integers of constant t (int64/int32), at most max. */
bool tio__gp_ld_ints(const tio_tensor *t, int64_t *out, size_t max, size_t *cnt) {
    if (!t || !tio__gp_is_int(t->dtype) || t->numel > max) return false;
    size_t es = t->dtype == TIO_INT64 ? 8 : 4;
    if (t->nbytes < t->numel * es) return false;
    for (size_t k = 0; k < t->numel; k++)
        out[k] = es == 8 ? (int64_t)tio__ld64(t->data + 8 * k)
                         : (int64_t)(int32_t)tio__ld32(t->data + 4 * k);
    *cnt = (size_t)t->numel;
    return true;
}

float tio__gp_ldf(const uint8_t *p) {
    uint32_t u = tio__ld32(p);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* double -> float without C's undefined behaviour past FLT_MAX: +-inf, as
 * float arithmetic would have given */
float tio__gp_to_f(double d) {
    if (d > 3.4028234663852886e38) return HUGE_VALF;
    if (d < -3.4028234663852886e38) return -HUGE_VALF;
    return (float)d; /* NaN converts */
}

void tio__gp_stf(uint8_t *p, float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    tio__st32(p, u);
}

/* The one float of a float32 scalar constant (any rank, one element). */
static bool ld_scalar_f(const tio_tensor *t, double *out) {
    if (!t || t->numel != 1 || t->nbytes < 4) return false;
    if (t->dtype == TIO_FLOAT32) *out = tio__gp_ldf(t->data);
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

/* ----------------------------------------------- forms Tengine takes */

/* Constant inputs from k on that Tengine keeps as params become attributes
 * (their old ONNX form); the node keeps inputs [0, k). */
static int inputs_to_attrs(pp *x, tio_gnode *n, size_t k, const char *const *names, size_t cnt) {
    int64_t vals[2 * GP_MAX_DIMS];
    size_t nv;
    for (size_t q = k; q < n->input_count && q < k + cnt; q++) {
        if (n->inputs[q] < 0) continue;
        if (!tio__gp_ld_ints(tio__gp_pt(x, n->inputs[q]), vals, 2 * GP_MAX_DIMS, &nv))
            return TIO_OK;
    }
    for (size_t q = k; q < n->input_count && q < k + cnt; q++) {
        if (n->inputs[q] < 0) continue;
        tio__gp_ld_ints(tio__gp_pt(x, n->inputs[q]), vals, 2 * GP_MAX_DIMS, &nv);
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
        if (n->inputs[1] >= 0 && !ld_scalar_f(tio__gp_pt(x, n->inputs[1]), &mn)) return TIO_OK;
        if (n->input_count > 2 && n->inputs[2] >= 0 &&
            !ld_scalar_f(tio__gp_pt(x, n->inputs[2]), &mx))
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
            if (!ld_scalar_f(tio__gp_pt(x, n->inputs[2]), &val)) return TIO_OK;
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
        const tio_gattr *p = tio__gp_ga(n, "pads");
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
    if (n->input_count < 2 || n->input_count > 3 || tio__gp_ga_i(n, "transA", 0) != 0)
        return TIO_OK;
    int64_t tb = tio__gp_ga_i(n, "transB", 0);
    const tio_gattr *al = tio__gp_ga(n, "alpha"), *be = tio__gp_ga(n, "beta");
    double alpha = al && al->type == TIO_ATTR_FLOAT ? al->f : 1.0;
    double beta = be && be->type == TIO_ATTR_FLOAT ? be->f : 1.0;
    if (tb == 1 && alpha == 1.0 && beta == 1.0) return TIO_OK;
    int64_t wv = n->inputs[1], bv = n->input_count > 2 ? n->inputs[2] : -1;
    const tio_tensor *w = tio__gp_pt(x, wv);
    if (!w || w->rank != 2 || w->dtype != TIO_FLOAT32) return TIO_OK;
    size_t r0 = (size_t)w->shape[0], r1 = (size_t)w->shape[1];
    const uint8_t *wd = ld_f32(w, w->numel);
    const tio_tensor *b = bv >= 0 ? tio__gp_pt(x, bv) : NULL;
    if (!wd || (bv >= 0 && beta != 1.0 && (!b || !ld_f32(b, b->numel)))) return TIO_OK;
    int64_t nout = tb ? (int64_t)r0 : (int64_t)r1, kin = tb ? (int64_t)r1 : (int64_t)r0;
    uint8_t *nw = tio__gp_pa(x, w->nbytes ? w->nbytes : 1);
    if (!nw) return tio__gp_nomem(x);
    for (size_t i = 0; i < (size_t)nout; i++)
        for (size_t k = 0; k < (size_t)kin; k++) {
            float f = tb ? tio__gp_ldf(wd + 4 * (i * r1 + k)) : tio__gp_ldf(wd + 4 * (k * r1 + i));
            tio__gp_stf(nw + 4 * (i * (size_t)kin + k), alpha == 1.0 ? f : tio__gp_to_f(f * alpha));
        }
    int64_t shape[2] = {nout, kin};
    int64_t t = tio__gp_mk_tensor(x, x->v[wv].name, TIO_FLOAT32, 2, shape, nw, w->nbytes, true);
    if (t < 0) return tio__gp_nomem(x);
    int64_t nv = wv;
    if (x->uses[wv] != 1 || is_out(x, wv)) {
        nv = new_value(x, x->v[wv].name, TIO_FLOAT32, t, wv);
        if (nv < 0) return tio__gp_nomem(x);
    } else if (tio__gp_retensor(x, wv, t)) {
        return TIO_E_NOMEM;
    }
    int64_t in[3] = {n->inputs[0], nv, bv};
    if (b && beta != 1.0) {
        uint8_t *nb = tio__gp_pa(x, b->nbytes ? b->nbytes : 1);
        if (!nb) return tio__gp_nomem(x);
        for (size_t k = 0; k < b->numel; k++)
            tio__gp_stf(nb + 4 * k, tio__gp_to_f(tio__gp_ldf(b->data + 4 * k) * beta));
        int64_t bt = tio__gp_mk_tensor(x, x->v[bv].name, TIO_FLOAT32, (int)b->rank, b->shape, nb,
                               b->nbytes, true);
        int64_t nbv = bt < 0 ? -1 : new_value(x, x->v[bv].name, TIO_FLOAT32, bt, bv);
        if (nbv < 0) return tio__gp_nomem(x);
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
        const tio_tensor *w = tio__gp_pt(x, wv), *b = tio__gp_pt(x, bv);
        int arank = tio__gp_known(x, av) ? x->srank[av] : av >= 0 ? (int)x->v[av].rank : -1;
        if (arank != 2 || !w || w->rank != 2 || !ld_f32(w, w->numel) || !b ||
            !ld_f32(b, b->numel) || b->numel != (uint64_t)w->shape[1] ||
            !(b->rank == 1 || (b->rank == 2 && b->shape[0] == 1)))
            continue;
        int64_t nb = bv;
        if (b->rank != 1) {
            int64_t n1 = w->shape[1];
            int64_t t =
                tio__gp_mk_tensor(x, x->v[bv].name, TIO_FLOAT32, 1, &n1, b->data, b->nbytes, true);
            if (t < 0 || (nb = new_value(x, x->v[bv].name, TIO_FLOAT32, t, bv)) < 0)
                return tio__gp_nomem(x);
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
    int64_t *o = tio__gp_pa(x, p->output_count * sizeof *o);
    if (!o) return tio__gp_nomem(x);
    for (size_t k = 0; k < p->output_count; k++) o[k] = p->outputs[k] == mid ? out : p->outputs[k];
    p->outputs = o;
    x->prod[out] = pj;
    x->prod[mid] = -1;
    tio__gp_copy_shape(x, out, mid);
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
    bool fc = op_is(cv, "Gemm") && tio__gp_ga_i(cv, "transB", 0) == 1 && !tio__gp_ga(cv, "alpha") &&
              !tio__gp_ga(cv, "beta");
    if ((!conv && !fc) || cv->input_count < 2) return TIO_OK;
    const tio_tensor *w = tio__gp_pt(x, cv->inputs[1]);
    if (!w || w->dtype != TIO_FLOAT32 || w->rank < 2 || w->shape[0] < 1) return TIO_OK;
    size_t co = (size_t)w->shape[0], per = (size_t)(w->numel / (uint64_t)co);
    const uint8_t *wd = ld_f32(w, w->numel), *p[4];
    for (int k = 0; k < 4; k++)
        if (!(p[k] = ld_f32(tio__gp_pt(x, bn->inputs[1 + k]), co))) return TIO_OK;
    int64_t bv = cv->input_count > 2 ? cv->inputs[2] : -1;
    const uint8_t *bd = bv >= 0 ? ld_f32(tio__gp_pt(x, bv), co) : NULL;
    if (!wd || (bv >= 0 && !bd)) return TIO_OK;
    const tio_gattr *ea = tio__gp_ga(bn, "epsilon");
    float eps = ea && ea->type == TIO_ATTR_FLOAT ? tio__gp_to_f(ea->f) : 1e-5f;
    uint8_t *nw = tio__gp_pa(x, w->nbytes), *nb = tio__gp_pa(x, co * 4);
    if (!nw || !nb) return tio__gp_nomem(x);
    for (size_t c = 0; c < co; c++) {
        float inv = 1.f / sqrtf(tio__gp_ldf(p[3] + 4 * c) + eps);
        float mean = tio__gp_ldf(p[2] + 4 * c), gamma = tio__gp_ldf(p[0] + 4 * c),
              beta = tio__gp_ldf(p[1] + 4 * c);
        float sm = ((bd ? tio__gp_ldf(bd + 4 * c) : 0.f) - mean) * inv;
        float sc = gamma * inv;
        sm = gamma * sm + beta;
        for (size_t e = 0; e < per; e++)
            tio__gp_stf(nw + 4 * (c * per + e), tio__gp_ldf(wd + 4 * (c * per + e)) * sc);
        tio__gp_stf(nb + 4 * c, sm);
    }
    int64_t wv = cv->inputs[1];
    int64_t wt = tio__gp_mk_tensor(x, x->v[wv].name, TIO_FLOAT32, (int)w->rank, w->shape, nw,
                                   w->nbytes, true);
    int64_t bshape = (int64_t)co;
    const char *bname = bv >= 0 ? x->v[bv].name
                                : pa_str(x, x->v[wv].name ? x->v[wv].name : "bias", ".bias.bn");
    int64_t bt =
        bname ? tio__gp_mk_tensor(x, bname, TIO_FLOAT32, 1, &bshape, nb, co * 4, true) : -1;
    if (wt < 0 || bt < 0) return tio__gp_nomem(x);
    int64_t in[3] = {cv->inputs[0], wv, bv};
    if (x->uses[wv] == 1 && !is_out(x, wv)) {
        if (tio__gp_retensor(x, wv, wt)) return TIO_E_NOMEM;
    } else if ((in[1] = new_value(x, x->v[wv].name, TIO_FLOAT32, wt, wv)) < 0)
        return tio__gp_nomem(x);
    if (bv >= 0 && x->uses[bv] == 1 && !is_out(x, bv)) {
        if (tio__gp_retensor(x, bv, bt)) return TIO_E_NOMEM;
    } else if ((in[2] = new_value(x, bname, TIO_FLOAT32, bt, bv >= 0 ? bv : wv)) < 0)
        return tio__gp_nomem(x);
    int rc = set_inputs(x, cv, in, 3);
    if (rc) return rc;
    return fuse_away(x, j, pj, bn->inputs[0], bn->outputs[0]);
}

/* An operator of o->act_ops then Relu (slope 0) or Clip(0, 6): the
 * activation in the operator's attribute o->act_attr (convert_tool's
 * fuse_conv_relu_common, which also fuses a Clip whose min is 0 or whose max
 * is 6; here both must hold; TensorFlow Lite's fused_activation_function).
 * The operator's output stays. */
static int fuse_act(pp *x, size_t j) {
    tio_gnode *a = &x->n[j];
    static const char *const none[] = {NULL}, *const minmax[] = {"min", "max", NULL};
    int64_t act;
    if (op_is(a, "Relu") && a->input_count == 1 && only_attrs(a, none)) act = x->o->act_relu;
    else if (op_is(a, "Clip") && a->input_count == 1 && only_attrs(a, minmax)) {
        const tio_gattr *mn = tio__gp_ga(a, "min"), *mx = tio__gp_ga(a, "max");
        if (!mn || !mx || mn->type != TIO_ATTR_FLOAT || mx->type != TIO_ATTR_FLOAT ||
            mn->f != 0.0 || mx->f != 6.0)
            return TIO_OK;
        act = x->o->act_relu6;
    } else return TIO_OK;
    if (a->output_count != 1) return TIO_OK;
    int64_t pj = sole_prod(x, a->inputs[0]);
    if (pj < 0 || tio__gp_ga(&x->n[pj], x->o->act_attr)) return TIO_OK;
    bool takes = false;
    for (size_t k = 0; x->o->act_ops[k] && !takes; k++) takes = op_is(&x->n[pj], x->o->act_ops[k]);
    if (!takes) return TIO_OK;
    int rc = set_i(x, &x->n[pj], x->o->act_attr, act);
    if (rc) return rc;
    return fuse_away(x, j, pj, a->inputs[0], a->outputs[0]);
}

static bool scalar_is(const pp *x, int64_t v, double want, double tol) {
    double f;
    return ld_scalar_f(tio__gp_pt(x, v), &f) && fabs(f - want) <= tol;
}

/* The operand of binary node n that is not v (or -1). */
static int64_t other(const tio_gnode *n, int64_t v) {
    if (n->input_count != 2) return -1;
    return n->inputs[0] == v ? n->inputs[1] : n->inputs[1] == v ? n->inputs[0] : -1;
}

/* x->cons: a live node reading each value (inputs resolved first). */
static int index_consumers(pp *x) {
    if (!x->cons && !(x->cons = malloc(x->vcap * sizeof *x->cons))) return tio__gp_nomem(x);
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
    g->outputs = tio__gp_pa(x, sizeof *g->outputs);
    if (!g->outputs) return tio__gp_nomem(x);
    g->outputs[0] = out;
    g->output_count = 1;
    for (int k = 0; k < 5; k++)
        if (gone[k] != keep) kill(x, gone[k]);
    return TIO_OK;
}

/* x * HardSigmoid(x) with alpha 1/6 and beta 1/2 (how torch exports
 * Hardswish below opset 14): one HardSwish, which Tengine runs at any rank
 * (its Eltwise Mul takes only 3-D and 4-D tensors). */
static int fuse_hardswish(pp *x, size_t j) {
    tio_gnode *hs = &x->n[j];
    const tio_gattr *al = tio__gp_ga(hs, "alpha"), *be = tio__gp_ga(hs, "beta");
    static const char *const ab[] = {"alpha", "beta", NULL};
    if (!op_is(hs, "HardSigmoid") || hs->input_count != 1 || hs->output_count != 1 ||
        !only_attrs(hs, ab) || (al && al->type != TIO_ATTR_FLOAT) ||
        (be && be->type != TIO_ATTR_FLOAT))
        return TIO_OK;
    /* ONNX's defaults: alpha 0.2, beta 0.5 */
    if (tio__gp_to_f(al ? al->f : 0.2) != (float)(1.0 / 6.0) || (be ? be->f : 0.5) != 0.5)
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

/* ------------------------------------------ Slice, one axis per node */

static int cmp_name(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A value name "<base>:slice<N>" that no value has: N counts up over the
 * whole preparation, so the names made here differ from each other (the
 * digits end the name, which "<base>:slice" begins), and each is looked up
 * among the names of the values there were before the first (sorted then).
 * NULL when out of memory. */
static const char *fresh_name(pp *x, const char *base) {
    if (!x->names) {
        x->names = malloc((x->nv ? x->nv : 1) * sizeof *x->names);
        if (!x->names) return NULL;
        for (size_t i = 0; i < x->nv; i++)
            if (x->v[i].name) x->names[x->nnames++] = x->v[i].name;
        qsort(x->names, x->nnames, sizeof *x->names, cmp_name);
    }
    char num[32];
    for (;;) {
        snprintf(num, sizeof num, ":slice%lu", ++x->serial);
        char *s = pa_str(x, base, num);
        if (!s) return NULL;
        if (!x->nnames || !bsearch(&s, x->names, x->nnames, sizeof *x->names, cmp_name)) return s;
    }
}

/* A node made here, emitted right before node `at`. */
static int insert_before(pp *x, size_t at, const tio_gnode *n) {
    if (x->nx == x->xcap) {
        size_t cap = x->xcap ? 2 * x->xcap : 8;
        tio_gnode *xn = realloc(x->xn, cap * sizeof *xn);
        if (xn) x->xn = xn;
        size_t *xa = realloc(x->xat, cap * sizeof *xa);
        if (xa) x->xat = xa;
        if (!xn || !xa) return tio__gp_nomem(x);
        x->xcap = cap;
    }
    x->xn[x->nx] = *n;
    x->xat[x->nx++] = at;
    return TIO_OK;
}

static const char *const slice_keys[4] = {"starts", "ends", "axes", "steps"};

/* The attributes of a one-axis Slice (v: start, end, axis, step). */
static tio_gattr *slice_attrs(pp *x, const int64_t *v) {
    tio_gattr *a = tio__gp_pa(x, 4 * sizeof *a);
    int64_t *c = tio__gp_pa(x, 4 * sizeof *c);
    if (!a || !c) return NULL;
    for (int q = 0; q < 4; q++) {
        a[q].name = (char *)(uintptr_t)slice_keys[q];
        a[q].type = TIO_ATTR_INTS;
        c[q] = v[q];
        a[q].ints = &c[q];
        a[q].count = 1;
    }
    return a;
}

/* A Slice over k > 1 axes (its attribute form, attr_forms) as a chain of k
 * one-axis Slices, the axes in the order given: k - 1 new nodes before node
 * j, through new values (their shapes inferred when the input's and the
 * output's are known), and node j the last. Slicing one axis leaves the
 * others as they are, so the chain computes the same. A node whose
 * attributes do not name k distinct axes is left as it is (for the writer
 * to refuse). */
static int split_slice(pp *x, size_t j) {
    tio_gnode *n = &x->n[j];
    const tio_gattr *at[4];
    size_t na = 0;
    for (int q = 0; q < 4; q++)
        if ((at[q] = tio__gp_ga(n, slice_keys[q])) != NULL) na++;
    if (!at[0] || !at[1] || at[0]->type != TIO_ATTR_INTS || na != n->attr_count ||
        n->input_count != 1 || n->inputs[0] < 0 || n->output_count != 1 || n->outputs[0] < 0)
        return TIO_OK;
    size_t k = at[0]->count;
    if (k < 2 || k > GP_MAX_DIMS) return TIO_OK;
    for (int q = 1; q < 4; q++)
        if (at[q] && (at[q]->type != TIO_ATTR_INTS || at[q]->count != k)) return TIO_OK;
    int64_t in = n->inputs[0], out = n->outputs[0], v[GP_MAX_DIMS][4], ax[GP_MAX_DIMS];
    int r = x->srank[in];
    for (size_t i = 0; i < k; i++) {
        v[i][0] = at[0]->ints[i];
        v[i][1] = at[1]->ints[i];
        v[i][2] = at[2] ? at[2]->ints[i] : (int64_t)i;
        v[i][3] = at[3] ? at[3]->ints[i] : 1;
        /* distinct axes: by value once normalised (the rank known), else
         * by value and of one sign */
        ax[i] = v[i][2] < 0 && r >= 0 ? v[i][2] + r : v[i][2];
        if ((r >= 0 && (ax[i] < 0 || ax[i] >= r)) || (r < 0 && (v[i][2] < 0) != (v[0][2] < 0)))
            return TIO_OK;
        for (size_t q = 0; q < i; q++)
            if (ax[q] == ax[i]) return TIO_OK;
    }
    /* each intermediate: the input with the axes so far cut as the output is */
    bool shaped = r >= 0 && tio__gp_known(x, out) && x->srank[out] == r;
    int64_t cur[GP_MAX_DIMS];
    if (shaped) memcpy(cur, x->sh[in], (size_t)r * sizeof *cur);
    const char *base = x->v[out].name ? x->v[out].name : "slice";
    int64_t prev = in;
    for (size_t i = 0; i + 1 < k; i++) {
        const char *vn = fresh_name(x, base);
        int64_t nv = vn ? new_value(x, vn, x->v[in].dtype, -1, out) : -1;
        tio_gnode c = x->n[j];
        c.name = (char *)(uintptr_t)vn;
        c.inputs = tio__gp_pa(x, sizeof *c.inputs);
        c.outputs = tio__gp_pa(x, sizeof *c.outputs);
        c.attrs = slice_attrs(x, v[i]);
        if (nv < 0 || !c.inputs || !c.outputs || !c.attrs) return tio__gp_nomem(x);
        if (shaped) {
            cur[ax[i]] = x->sh[out][ax[i]];
            tio__gp_set_shape(x, nv, r, cur);
        }
        c.inputs[0] = prev;
        c.input_count = 1;
        c.outputs[0] = nv;
        c.output_count = 1;
        c.attr_count = c.attr_cap = 4;
        x->uses[prev]++;
        int rc = insert_before(x, j, &c);
        if (rc) return rc;
        prev = nv;
    }
    n = &x->n[j];
    tio_gattr *last = slice_attrs(x, v[k - 1]);
    if (!last) return tio__gp_nomem(x);
    n->attrs = last;
    n->attr_count = n->attr_cap = 4;
    return set_inputs(x, n, &prev, 1);
}

/* ------------------------------------------------------------- driver */

/* Node src of the preparation as node *dst of the result (values renumbered
 * by map). */
static int put_node(pp *x, tio_gnode *dst, const tio_gnode *src, const int64_t *map) {
    *dst = *src;
    int64_t *in = tio__gp_pa(x, (dst->input_count + 1) * sizeof *in);
    int64_t *ou = tio__gp_pa(x, (dst->output_count + 1) * sizeof *ou);
    if (!in || !ou) return tio__gp_nomem(x);
    for (size_t k = 0; k < dst->input_count; k++)
        in[k] = dst->inputs[k] < 0 ? -1 : map[dst->inputs[k]];
    for (size_t k = 0; k < dst->output_count; k++)
        ou[k] = dst->outputs[k] < 0 ? -1 : map[dst->outputs[k]];
    dst->inputs = in;
    dst->outputs = ou;
    return TIO_OK;
}

static int build(pp *x, const tio_graph *src) {
    tio_gprepped *p = x->p;
    tio_graph *g = &p->g;
    /* live values: produced, read, graph inputs/outputs */
    uint8_t *live = calloc(x->nv ? x->nv : 1, 1);
    int64_t *map = malloc((x->nv ? x->nv : 1) * sizeof *map);
    int64_t *order = malloc((x->nv ? x->nv : 1) * sizeof *order);
    size_t nn = 0;
    int rc = TIO_OK;
    if (!live || !map || !order) {
        rc = tio__gp_nomem(x);
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
    for (size_t q = 0; q < x->nx; q++) {
        nn++;
        for (size_t k = 0; k < x->xn[q].input_count; k++)
            if (x->xn[q].inputs[k] >= 0) live[x->xn[q].inputs[k]] = 1;
        for (size_t k = 0; k < x->xn[q].output_count; k++)
            if (x->xn[q].outputs[k] >= 0) live[x->xn[q].outputs[k]] = 1;
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
        rc = tio__gp_nomem(x);
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
        bool loose = gv->rank < 0 || (gv->rank && !gv->dims);
        for (int64_t k = 0; !loose && k < gv->rank; k++)
            loose = gv->dims[k].name || gv->dims[k].value < 0;
        if (gv->tensor < 0 && loose && x->srank[i] >= 0 &&
            (gv->rank < 0 || gv->rank == x->srank[i])) {
            /* the inferred shape (named dims bound: tio_gprep_opts.dims), as
             * convert_tool's infer_shape saves it */
            tio_dim *d = tio__gp_pa(x, (size_t)(x->srank[i] ? x->srank[i] : 1) * sizeof *d);
            if (!d) {
                rc = tio__gp_nomem(x);
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
    /* the nodes in order, each made here right before its anchor */
    size_t k2 = 0, q = 0;
    for (size_t j = 0; j <= x->nn && !rc; j++) {
        for (; !rc && q < x->nx && (j == x->nn || x->xat[q] == j); q++)
            rc = put_node(x, &g->nodes[k2++], &x->xn[q], map);
        if (!rc && j < x->nn && !x->dead[j]) rc = put_node(x, &g->nodes[k2++], &x->n[j], map);
    }
    if (rc) goto out;
    g->node_count = g->node_cap = nn;
    int64_t *gi = tio__gp_pa(x, (src->input_count + 1) * sizeof *gi);
    int64_t *go = tio__gp_pa(x, (x->nout + 1) * sizeof *go);
    if (!gi || !go) {
        rc = tio__gp_nomem(x);
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

static int run(pp *x, const tio_graph *src) {
    const tio_gprep_opts *o = x->o;
    int rc;
    /* Constant nodes -> constants */
    for (size_t j = 0; j < x->nn; j++) {
        tio_gnode *n = &x->n[j];
        if (!op_is(n, "Constant") || n->output_count != 1 || n->outputs[0] < 0) continue;
        const tio_gattr *a = tio__gp_ga(n, "value");
        if (a && a->type == TIO_ATTR_TENSOR && n->attr_count == 1 &&
            tio__gprep_tensor(x->p, x->c, a->i)) {
            if ((rc = tio__gp_retensor(x, n->outputs[0], a->i))) return rc;
            kill(x, j);
        } else {
            bool done = false;
            if ((rc = tio__gp_const_attr(x, j, &done))) return rc;
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
            tio__gp_copy_shape(x, in, out);
            replace_uses(x, out, in);
            continue;
        }
        tio__gp_infer(x, j);
        bool folded = false;
        if ((rc = tio__gp_fold(x, j, &folded))) return rc;
        if (folded) {
            kill(x, j);
            continue;
        }
        if (op_is(n, "Gemm") && (rc = gemm_form(x, n))) return rc;
        if (o->fuse_matmul_add && op_is(n, "Add") && (rc = fuse_matmul_add(x, j))) return rc;
        if (o->node_hook && !x->dead[j] && (rc = o->node_hook(x, j, o->ctx))) return rc;
    }
    if ((rc = index_consumers(x))) return rc;
    for (size_t j = 0; j < x->nn; j++)
        if (!x->dead[j] && (rc = fuse_gelu(x, j))) return rc;
    if (o->fold_bn)
        for (size_t j = 0; j < x->nn; j++)
            if (!x->dead[j] && (visit(x, j), rc = fuse_bn(x, j))) return rc;
    if (o->act_attr && o->act_ops)
        for (size_t j = 0; j < x->nn; j++)
            if (!x->dead[j] && (visit(x, j), rc = fuse_act(x, j))) return rc;
    if (o->fuse_hardswish) {
        if ((rc = index_consumers(x))) return rc;
        for (size_t j = 0; j < x->nn; j++)
            if (!x->dead[j] && (rc = fuse_hardswish(x, j))) return rc;
    }
    if (o->split_slice)
        for (size_t j = 0; j < x->nn; j++)
            if (!x->dead[j] && op_is(&x->n[j], "Slice") && (visit(x, j), rc = split_slice(x, j)))
                return rc;
    if (o->late_hook)
        for (size_t j = 0; j < x->nn; j++)
            if (!x->dead[j] && (visit(x, j), rc = o->late_hook(x, j, o->ctx))) return rc;
    return build(x, src);
}

/* Named dims bound to sizes (tio_gprep_opts.dims, and a graph input's
 * leading dim as a batch of 1). */
typedef struct dim_bind {
    const char *name;
    size_t len;
    int64_t value;
} dim_bind;

typedef struct dim_binds {
    dim_bind *b;
    size_t n;
    uint8_t *input; /* per value: a graph input */
} dim_binds;

/* The binding of the dim named name[0..len), or NULL. */
static const dim_bind *dim_find(const dim_binds *d, const char *name, size_t len) {
    for (size_t k = 0; k < d->n; k++)
        if (d->b[k].len == len && memcmp(d->b[k].name, name, len) == 0) return &d->b[k];
    return NULL;
}

static int64_t dim_bound(const dim_binds *d, const char *name) {
    const dim_bind *b = dim_find(d, name, strlen(name));
    return b ? b->value : -1;
}

/* o->dims parsed into d (arena), then the graph inputs' leading named dims
 * not given bound to 1. */
static int dim_binds_make(pp *x, const tio_graph *src, dim_binds *d) {
    const char *t = x->o->dims ? x->o->dims : "";
    size_t cap = 1 + src->input_count;
    for (const char *q = t; *q; q++) cap += *q == ';';
    if (!(d->b = tio__gp_pa(x, cap * sizeof *d->b)) ||
        !(d->input = tio__gp_pa(x, src->value_count ? src->value_count : 1)))
        return tio__gp_nomem(x);
    memset(d->input, 0, src->value_count ? src->value_count : 1);
    d->n = 0;
    while (*t) {
        size_t len = strcspn(t, ";");
        const char *colon = memchr(t, ':', len);
        int64_t v = 0;
        const char *q = colon ? colon + 1 : t + len;
        bool ok = colon && colon > t && q < t + len;
        for (; ok && q < t + len; q++) {
            ok = *q >= '0' && *q <= '9' && v <= (INT32_MAX - (*q - '0')) / 10;
            v = v * 10 + (*q - '0');
        }
        if (!ok || v < 1)
            return tio__err(x->err, TIO_E_ARGUMENT, x->o->fmt, -1,
                            "option dims=%s: expected NAME:N[;NAME:N...], each N from 1 to "
                            "2147483647 (found \"%.*s\")",
                            x->o->dims, (int)(len > 64 ? 64 : len), t);
        size_t nl = (size_t)(colon - t);
        if (dim_find(d, t, nl))
            return tio__err(x->err, TIO_E_ARGUMENT, x->o->fmt, -1,
                            "option dims: dim \"%.*s\" is given twice",
                            (int)(nl > 64 ? 64 : nl), t);
        d->b[d->n++] = (dim_bind){t, nl, v};
        t += len + (t[len] == ';');
    }
    /* each dim given names a dim of the graph: a misspelt one is an error,
     * not a batch silently left at 1 */
    for (size_t k = 0; k < d->n; k++) {
        bool found = false;
        for (size_t i = 0; i < src->value_count && !found; i++) {
            const tio_gvalue *gv = &src->values[i];
            for (int64_t j = 0; gv->dims && j < gv->rank && !found; j++)
                found = gv->dims[j].name && strlen(gv->dims[j].name) == d->b[k].len &&
                        memcmp(gv->dims[j].name, d->b[k].name, d->b[k].len) == 0;
        }
        if (!found)
            return tio__err(x->err, TIO_E_ARGUMENT, x->o->fmt, -1,
                            "option dims: no value of the graph has a dim named \"%.*s\"",
                            (int)(d->b[k].len > 64 ? 64 : d->b[k].len), d->b[k].name);
    }
    for (size_t k = 0; k < src->input_count; k++) {
        int64_t v = src->inputs[k];
        if (v < 0 || (size_t)v >= src->value_count) continue;
        const tio_gvalue *gv = &src->values[v];
        d->input[v] = 1;
        if (gv->tensor < 0 && gv->rank > 0 && gv->dims && gv->dims[0].name &&
            dim_bound(d, gv->dims[0].name) < 0)
            d->b[d->n++] = (dim_bind){gv->dims[0].name, strlen(gv->dims[0].name), 1};
    }
    return TIO_OK;
}

/* Value i's declared shape, named dims bound by d (a graph input's leading
 * dim, unknown, as 1): set when every dim is then known. */
static void seed_shape(pp *x, const tio_graph *src, const dim_binds *d, size_t i) {
    const tio_gvalue *v = &src->values[i];
    if (v->rank < 0 || v->rank > (int64_t)GP_MAX_DIMS || (v->rank && !v->dims)) return;
    bool in = d->input[i];
    int64_t sh[GP_MAX_DIMS];
    for (int64_t k = 0; k < v->rank; k++) {
        sh[k] = v->dims[k].name ? dim_bound(d, v->dims[k].name) : v->dims[k].value;
        if (sh[k] < 0 && k == 0 && in && !v->dims[k].name) sh[k] = 1;
        if (sh[k] < 0) return;
    }
    tio__gp_set_shape(x, (int64_t)i, (int)v->rank, sh);
}

int tio__gprep(const tio_container *c, const tio_graph *src, const tio_gprep_opts *o,
               tio_gprepped *p, tio_error *err) {
    memset(p, 0, sizeof *p);
    p->nc = c->count;
    pp x = {.p = p, .o = o, .c = c, .err = err};
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
    x.outs = tio__gp_pa(&x, (x.nout + 1) * sizeof *x.outs);
    if (!x.v || !x.srank || !x.sh || !x.before || !x.uses || !x.prod || !x.n || !x.dead ||
        !x.outs || !x.alias || !x.isout) {
        rc = tio__gp_nomem(&x);
        goto out;
    }
    p->g = *src; /* meta, opaque, opsets: read through; arrays replaced in build */
    p->g.values = NULL;
    atomic_init(&p->g.names, NULL); /* its own, of its own values */
    atomic_init(&p->g.caps, NULL);
    p->g.nodes = NULL;
    p->g.subgraphs = NULL;
    p->g.sub_count = 0;
    x.nv = nv;
    dim_binds binds = {NULL, 0, NULL};
    if ((rc = dim_binds_make(&x, src, &binds))) goto out;
    for (size_t i = 0; i < nv; i++) {
        x.v[i] = src->values[i];
        x.srank[i] = -1;
        x.alias[i] = -1;
        x.before[i] = -1;
        const tio_gvalue *v = &src->values[i];
        int64_t d[GP_MAX_DIMS];
        if (v->tensor >= 0) {
            const tio_tensor *t = tio__gprep_tensor(p, c, v->tensor);
            if (t && t->rank <= GP_MAX_DIMS) {
                for (size_t k = 0; k < t->rank; k++) d[k] = t->shape[k];
                tio__gp_set_shape(&x, (int64_t)i, (int)t->rank, d); /* bounded there */
            }
        } else {
            seed_shape(&x, src, &binds, i);
        }
    }
    for (size_t j = 0; j < x.nn; j++) {
        x.n[j] = src->nodes[j];
        int64_t *in = tio__gp_pa(&x, (x.n[j].input_count + 1) * sizeof *in);
        if (!in) {
            rc = tio__gp_nomem(&x);
            goto out;
        }
        if (x.n[j].input_count) memcpy(in, x.n[j].inputs, x.n[j].input_count * sizeof *in);
        x.n[j].inputs = in;
    }
    for (size_t k = 0; k < x.nout; k++) x.outs[k] = src->outputs[k];
    recount(&x);
    x.idle = tio__gp_pa(&x, nv ? nv : 1);
    if (!x.idle) {
        rc = tio__gp_nomem(&x);
        goto out;
    }
    for (size_t i = 0; i < nv; i++) x.idle[i] = src->values[i].tensor >= 0 && x.uses[i] == 0;
    rc = run(&x, src);
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
    free(x.xn);
    free(x.xat);
    free(x.names);
    if (rc) tio__gprep_free(p);
    return rc;
}

/* ------------------------------------------------------- for the hooks */

tio_gnode *tio__gp_node(tio_gprep *x, size_t j) { return &x->n[j]; }

bool tio__gp_shape(const tio_gprep *x, int64_t v, int *rank, const int64_t **dims) {
    if (!tio__gp_known(x, v)) return false;
    *rank = x->srank[v];
    *dims = x->sh[v];
    return true;
}

const tio_tensor *tio__gp_const(const tio_gprep *x, int64_t v) { return tio__gp_pt(x, v); }

bool tio__gp_op_is(const tio_gnode *n, const char *op) { return op_is(n, op); }

const tio_gattr *tio__gp_attr(const tio_gnode *n, const char *name) { return tio__gp_ga2(n, name); }

int64_t tio__gp_attr_i(const tio_gnode *n, const char *name, int64_t dflt) {
    return tio__gp_ga_i(n, name, dflt);
}

int tio__gp_set_i(tio_gprep *x, tio_gnode *n, const char *name, int64_t v) {
    return set_i(x, n, name, v);
}

int tio__gp_set_ints(tio_gprep *x, tio_gnode *n, const char *name, const int64_t *v,
                     size_t cnt) {
    return set_ints(x, n, name, v, cnt);
}

int tio__gp_del_attr(tio_gprep *x, tio_gnode *n, const char *name) { return del_attr(x, n, name); }

int tio__gp_const_input(tio_gprep *x, tio_gnode *n, size_t k, tio_dtype dt, int rank,
                        const int64_t *shape, const void *data, size_t nbytes) {
    if (k >= n->input_count || n->inputs[k] < 0) return TIO_OK;
    int64_t sv = n->inputs[k];
    int64_t nt = tio__gp_mk_tensor(x, x->v[sv].name, dt, rank, shape, data, nbytes, true);
    if (nt < 0) return tio__gp_nomem(x);
    if (x->uses[sv] == 1 && !is_out(x, sv)) return tio__gp_retensor(x, sv, nt);
    int64_t nv = new_value(x, x->v[sv].name, dt, nt, sv);
    if (nv < 0) return tio__gp_nomem(x);
    int64_t *in = tio__gp_pa(x, n->input_count * sizeof *in);
    if (!in) return tio__gp_nomem(x);
    memcpy(in, n->inputs, n->input_count * sizeof *in);
    in[k] = nv;
    return set_inputs(x, n, in, n->input_count);
}
