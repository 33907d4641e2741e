/*
 * Lowering a graph to the node list of an rten file: see rten/lower.h and
 * docs/formats/rten.md ("Converting from ONNX"). Facts from rten-convert
 * (robertknight/rten, rten-convert/rten_convert/converter.py and
 * attr_reader.py): the node order of graph_from_onnx_graph, Constant ops as
 * constants, generate_input_from_attr, the dtype conversions of
 * constant_node_from_onnx_initializer.
 */
#include "rten/lower.h"

#include "rten/opmap.h"
#include "rten/rten.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

tio_dtype tio__rten_store_dtype(tio_dtype d) {
    switch (d) {
    case TIO_FLOAT32:
    case TIO_INT32:
    case TIO_INT8:
    case TIO_UINT8: return d;
    case TIO_BOOL:
    case TIO_INT16:
    case TIO_INT64: return TIO_INT32;
    case TIO_FLOAT16:
    case TIO_BFLOAT16:
    case TIO_FLOAT64: return TIO_FLOAT32;
    default: return TIO_DTYPE_INVALID;
    }
}

static void rt_st_f32(uint8_t *p, float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    tio__st32(p, u);
}

void tio__rten_convert_elems(tio_dtype from, const uint8_t *src, uint8_t *dst, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        uint8_t *o = dst + 4 * i;
        switch (from) {
        case TIO_BOOL: tio__st32(o, src[i] ? 1u : 0u); break;
        case TIO_INT16: {
            int16_t v = (int16_t)tio__ld16(src + 2 * i);
            tio__st32(o, (uint32_t)(int32_t)v);
            break;
        }
        case TIO_INT64: {
            int64_t v = (int64_t)tio__ld64(src + 8 * i);
            int32_t c = v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : (int32_t)v;
            tio__st32(o, (uint32_t)c);
            break;
        }
        case TIO_FLOAT16: rt_st_f32(o, tio__half_to_float(tio__ld16(src + 2 * i))); break;
        case TIO_BFLOAT16: rt_st_f32(o, tio__bf16_to_float(tio__ld16(src + 2 * i))); break;
        case TIO_FLOAT64: {
            uint64_t u = tio__ld64(src + 8 * i);
            double x;
            memcpy(&x, &u, sizeof x);
            rt_st_f32(o, (float)x);
            break;
        }
        default: memcpy(dst + i * tio_dtype_size(from), src + i * tio_dtype_size(from),
                        tio_dtype_size(from));
            break;
        }
    }
}

void tio__rten_lgraph_free(rt_lgraph *lg) {
    for (size_t j = 0; lg->ops && j < lg->nops; j++) {
        free(lg->ops[j].inputs);
        free(lg->ops[j].outputs);
        free(lg->ops[j].attrs);
    }
    for (size_t k = 0; k < lg->nowned; k++) free(lg->owned[k]);
    free(lg->owned);
    free(lg->vals);
    free(lg->ops);
    free(lg->inputs);
    free(lg->outputs);
    free(lg->captures);
    memset(lg, 0, sizeof *lg);
}

/* Gives p (malloc'ed, may be NULL on failure) to the lgraph. */
static void *rt_own(rt_lgraph *lg, void *p) {
    if (!p) return NULL;
    if (lg->nowned == lg->capowned) {
        size_t nc = lg->capowned ? 2 * lg->capowned : 16;
        void **q = realloc(lg->owned, nc * sizeof *q);
        if (!q) {
            free(p);
            return NULL;
        }
        lg->owned = q;
        lg->capowned = nc;
    }
    lg->owned[lg->nowned++] = p;
    return p;
}

static const tio_gattr *rt_attr(const tio_gnode *n, const char *name) {
    for (size_t k = 0; k < n->attr_count; k++)
        if (strcmp(n->attrs[k].name, name) == 0) return &n->attrs[k];
    return NULL;
}

static bool rt_moved_attr(const tio_gnode *n, const char *name) {
    for (size_t k = 0; k < tio__rten_attr_input_count; k++)
        if (strcmp(tio__rten_attr_inputs[k].op, n->op) == 0 &&
            strcmp(tio__rten_attr_inputs[k].attr, name) == 0)
            return true;
    return false;
}

/* A generated constant from list/scalar attribute a (INT, INTS, FLOAT,
 * FLOATS): int32 or float32, scalar for INT/FLOAT. */
static int rt_gen_const(rt_lgraph *lg, const tio_gattr *a, const char *name, rt_lval *v,
                        const char *lbl, tio_error *err) {
    bool isf = a->type == TIO_ATTR_FLOAT || a->type == TIO_ATTR_FLOATS;
    bool list = a->type == TIO_ATTR_INTS || a->type == TIO_ATTR_FLOATS;
    if (a->type != TIO_ATTR_INT && a->type != TIO_ATTR_FLOAT && !list)
        return tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                        "%s: attribute '%s' cannot become an rten constant (it is not an int, "
                        "float or list of them)",
                        lbl, a->name);
    size_t n = list ? a->count : 1;
    uint8_t *d = rt_own(lg, malloc(n ? 4 * n : 1));
    int64_t *shape = rt_own(lg, malloc(sizeof *shape));
    if (!d || !shape) return tio__nomem(err, RT_FMT);
    for (size_t k = 0; k < n; k++) {
        if (isf) {
            rt_st_f32(d + 4 * k, (float)(list ? a->floats[k] : a->f));
        } else {
            int64_t x = list ? a->ints[k] : a->i;
            int32_t c = x < INT32_MIN ? INT32_MIN : x > INT32_MAX ? INT32_MAX : (int32_t)x;
            tio__st32(d + 4 * k, (uint32_t)c);
        }
    }
    memset(v, 0, sizeof *v);
    v->name = name;
    v->is_const = true;
    v->tensor = -1;
    v->dtype = isf ? TIO_FLOAT32 : TIO_INT32;
    v->rank = list ? 1 : 0;
    shape[0] = (int64_t)n;
    v->shape = shape;
    v->data = d;
    v->numel = n;
    return TIO_OK;
}

/* A constant holding container tensor ti. */
static void rt_val_tensor(const tio_container *c, int64_t ti, rt_lval *v) {
    const tio_tensor *t = c->tensors[ti];
    v->is_const = true;
    v->tensor = ti;
    v->dtype = t->dtype;
    v->rank = t->rank;
    v->shape = t->shape;
    v->numel = t->numel;
}

static void rt_val_from_graph(const tio_container *c, const tio_gvalue *gv, rt_lval *v) {
    memset(v, 0, sizeof *v);
    v->name = gv->name;
    v->src = gv;
    v->tensor = -1;
    if (gv->tensor >= 0 && (size_t)gv->tensor < c->count) {
        rt_val_tensor(c, gv->tensor, v);
        /* a graph value has no empty name (it is no name there); a tensor
         * named "" (an rten ConstantNode's) keeps it */
        const char *tn = c->tensors[gv->tensor]->name;
        if (!v->name && tn && !tn[0]) v->name = tn;
    }
}

/* The constant a Constant operator defines (rten-convert's
 * constant_node_from_onnx_constant_op). */
static int rt_constant_op(rt_lgraph *lg, const tio_container *c, const tio_gnode *n,
                          const tio_gvalue *out, rt_lval *v, const char *lbl, tio_error *err) {
    const tio_gattr *a = rt_attr(n, "value");
    if (a && a->type == TIO_ATTR_TENSOR && a->i >= 0 && (size_t)a->i < c->count) {
        memset(v, 0, sizeof *v);
        rt_val_tensor(c, a->i, v);
    } else {
        static const char *const names[] = {"value_int", "value_ints", "value_float",
                                            "value_floats"};
        a = NULL;
        for (size_t k = 0; k < 4 && !a; k++) a = rt_attr(n, names[k]);
        if (!a)
            return tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                            "%s: Constant has no value rten can hold (value, value_int(s), "
                            "value_float(s))",
                            lbl);
        int rc = rt_gen_const(lg, a, NULL, v, lbl, err);
        if (rc) return rc;
    }
    v->src = out;
    v->name = out->name;
    return TIO_OK;
}

static int rt_lower_identity(const tio_container *c, const tio_graph *g, rt_lgraph *lg,
                             tio_error *err) {
    for (size_t i = 0; i < g->value_count; i++) rt_val_from_graph(c, &g->values[i], &lg->vals[i]);
    lg->nv = g->value_count;
    for (size_t j = 0; j < g->node_count; j++) {
        const tio_gnode *n = &g->nodes[j];
        tio_gnode *o = &lg->ops[lg->nops++];
        *o = *n;
        o->inputs = malloc((n->input_count ? n->input_count : 1) * sizeof *o->inputs);
        o->outputs = malloc((n->output_count ? n->output_count : 1) * sizeof *o->outputs);
        o->attrs = malloc((n->attr_count ? n->attr_count : 1) * sizeof *o->attrs);
        if (!o->inputs || !o->outputs || !o->attrs) return tio__nomem(err, RT_FMT);
        if (n->input_count) memcpy(o->inputs, n->inputs, n->input_count * sizeof *o->inputs);
        if (n->output_count)
            memcpy(o->outputs, n->outputs, n->output_count * sizeof *o->outputs);
        if (n->attr_count) memcpy(o->attrs, n->attrs, n->attr_count * sizeof *o->attrs);
    }
    const int64_t *src[3] = {g->inputs, g->outputs, g->captures};
    size_t cnt[3] = {g->input_count, g->output_count, g->capture_count};
    int64_t **dst[3] = {&lg->inputs, &lg->outputs, &lg->captures};
    for (int k = 0; k < 3; k++) {
        *dst[k] = malloc((cnt[k] ? cnt[k] : 1) * sizeof **dst[k]);
        if (!*dst[k]) return tio__nomem(err, RT_FMT);
        if (cnt[k]) memcpy(*dst[k], src[k], cnt[k] * sizeof **dst[k]);
    }
    return TIO_OK;
}

typedef struct rt_pair {
    int64_t a, b;
} rt_pair;

static int rt_cmp_pair(const void *x, const void *y) {
    const rt_pair *p = x, *q = y;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : p->b > q->b;
}

static int rt_lower_onnx(const tio_container *c, const tio_graph *g, rt_lgraph *lg,
                         size_t cap, tio_error *err) {
    size_t nv = g->value_count;
    int64_t *map = malloc((nv ? nv : 1) * sizeof *map);
    int64_t *producer = malloc((nv ? nv : 1) * sizeof *producer);
    if (!map || !producer) {
        free(map);
        free(producer);
        return tio__nomem(err, RT_FMT);
    }
    for (size_t i = 0; i < nv; i++) map[i] = producer[i] = -1;
    for (size_t j = 0; j < g->node_count; j++)
        for (size_t k = 0; k < g->nodes[j].output_count; k++) {
            int64_t o = g->nodes[j].outputs[k];
            if (o >= 0 && (size_t)o < nv) producer[o] = (int64_t)j;
        }
    int rc = TIO_OK;
    char lbl[128];
#define RT_PLACE(i)                                                                            \
    do {                                                                                       \
        map[i] = (int64_t)lg->nv;                                                              \
        rt_val_from_graph(c, &g->values[i], &lg->vals[lg->nv++]);                              \
    } while (0)
    /* 1. initializers, in container order (the order they were read): the
     * (tensor, value) pairs sorted */
    rt_pair *inits = malloc((nv ? nv : 1) * sizeof *inits);
    if (!inits) {
        free(map);
        free(producer);
        return tio__nomem(err, RT_FMT);
    }
    size_t ninit = 0;
    for (size_t i = 0; i < nv; i++)
        if (g->values[i].tensor >= 0 && producer[i] < 0)
            inits[ninit++] = (rt_pair){g->values[i].tensor, (int64_t)i};
    qsort(inits, ninit, sizeof *inits, rt_cmp_pair);
    for (size_t k = 0; k < ninit; k++) RT_PLACE((size_t)inits[k].b);
    free(inits);
    /* 2. Constant operators' outputs */
    for (size_t j = 0; rc == TIO_OK && j < g->node_count; j++) {
        const tio_gnode *n = &g->nodes[j];
        if (strcmp(n->op, "Constant") != 0) continue;
        snprintf(lbl, sizeof lbl, "node %zu ('%.48s', Constant)", j, n->name ? n->name : "");
        int64_t o = n->output_count ? n->outputs[0] : -1;
        if (o < 0 || (size_t)o >= nv || map[o] >= 0) {
            rc = tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1, "%s: no output", lbl);
            break;
        }
        rc = rt_constant_op(lg, c, n, &g->values[o], &lg->vals[lg->nv], lbl, err);
        if (!rc) map[o] = (int64_t)lg->nv++;
    }
    /* 3. graph inputs, outputs, then values with a type (ONNX value_info) */
    for (size_t k = 0; rc == TIO_OK && k < g->input_count; k++)
        if (map[g->inputs[k]] < 0) RT_PLACE((size_t)g->inputs[k]);
    for (size_t k = 0; rc == TIO_OK && k < g->output_count; k++)
        if (map[g->outputs[k]] < 0) RT_PLACE((size_t)g->outputs[k]);
    for (size_t i = 0; rc == TIO_OK && i < nv; i++)
        if (map[i] < 0 && (g->values[i].dtype != TIO_DTYPE_INVALID || g->values[i].rank >= 0))
            RT_PLACE(i);
    /* 4. per operator: the inputs not placed yet (a subgraph's captures: values
     * of an enclosing graph, which have no type here), its new outputs, its
     * generated constants, the operator. rten-convert adds a capture's value
     * node just before the first operator that reads it; an input placed
     * only after its operator would be written as absent (-1). */
    for (size_t j = 0; rc == TIO_OK && j < g->node_count; j++) {
        const tio_gnode *n = &g->nodes[j];
        if (strcmp(n->op, "Constant") == 0) continue;
        snprintf(lbl, sizeof lbl, "node %zu ('%.48s', %s)", j, n->name ? n->name : "", n->op);
        for (size_t k = 0; k < n->input_count; k++)
            if (n->inputs[k] >= 0 && map[n->inputs[k]] < 0) RT_PLACE((size_t)n->inputs[k]);
        for (size_t k = 0; k < n->output_count; k++)
            if (n->outputs[k] >= 0 && map[n->outputs[k]] < 0) RT_PLACE((size_t)n->outputs[k]);
        tio_gnode *o = &lg->ops[lg->nops++];
        *o = *n;
        size_t nin = n->input_count;
        for (size_t k = 0; k < tio__rten_attr_input_count; k++) {
            const tio_rten_attr_input *ai = &tio__rten_attr_inputs[k];
            if (strcmp(ai->op, n->op) == 0 && rt_attr(n, ai->attr) && nin < (size_t)ai->input + 1)
                nin = (size_t)ai->input + 1;
        }
        o->inputs = malloc((nin ? nin : 1) * sizeof *o->inputs);
        o->outputs = malloc((n->output_count ? n->output_count : 1) * sizeof *o->outputs);
        o->attrs = malloc((n->attr_count ? n->attr_count : 1) * sizeof *o->attrs);
        if (!o->inputs || !o->outputs || !o->attrs) {
            rc = tio__nomem(err, RT_FMT);
            break;
        }
        o->input_count = nin;
        for (size_t k = 0; k < nin; k++)
            o->inputs[k] = k < n->input_count && n->inputs[k] >= 0 ? map[n->inputs[k]] : -1;
        for (size_t k = 0; k < n->output_count; k++)
            o->outputs[k] = n->outputs[k] >= 0 ? map[n->outputs[k]] : -1;
        o->attr_count = 0;
        for (size_t k = 0; k < n->attr_count; k++)
            if (!rt_moved_attr(n, n->attrs[k].name)) o->attrs[o->attr_count++] = n->attrs[k];
        o->attr_cap = n->attr_count;
        for (size_t k = 0; rc == TIO_OK && k < tio__rten_attr_input_count; k++) {
            const tio_rten_attr_input *ai = &tio__rten_attr_inputs[k];
            const tio_gattr *a = strcmp(ai->op, n->op) == 0 ? rt_attr(n, ai->attr) : NULL;
            if (!a) continue;
            if (ai->input < n->input_count) {
                rc = tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                              "%s: has both an attribute '%s' and input %u", lbl, ai->attr,
                              ai->input);
                break;
            }
            if (a->type != ai->type) {
                rc = tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                              "%s: attribute '%s' has the wrong type (rten-convert expects %s)",
                              lbl, ai->attr,
                              ai->type == TIO_ATTR_INT     ? "an INT"
                              : ai->type == TIO_ATTR_FLOAT ? "a FLOAT"
                              : ai->type == TIO_ATTR_INTS  ? "INTS"
                                                           : "FLOATS");
                break;
            }
            size_t len = (n->name ? strlen(n->name) : 0) + strlen(ai->attr) + 7;
            char *name = rt_own(lg, malloc(len));
            if (!name) {
                rc = tio__nomem(err, RT_FMT);
                break;
            }
            snprintf(name, len, "%s:rten-%s", n->name ? n->name : "", ai->attr);
            if (lg->nv >= cap) {
                rc = tio__err(err, TIO_E_LIMIT, RT_FMT, -1, "%s: too many constants", lbl);
                break;
            }
            rc = rt_gen_const(lg, a, name, &lg->vals[lg->nv], lbl, err);
            if (!rc) o->inputs[ai->input] = (int64_t)lg->nv++;
        }
    }
    /* values nothing above placed (unused API values) */
    for (size_t i = 0; rc == TIO_OK && i < nv; i++)
        if (map[i] < 0) RT_PLACE(i);
#undef RT_PLACE
    const int64_t *src[3] = {g->inputs, g->outputs, g->captures};
    size_t cnt[3] = {g->input_count, g->output_count, g->capture_count};
    int64_t **dst[3] = {&lg->inputs, &lg->outputs, &lg->captures};
    for (int k = 0; rc == TIO_OK && k < 3; k++) {
        *dst[k] = malloc((cnt[k] ? cnt[k] : 1) * sizeof **dst[k]);
        if (!*dst[k]) rc = tio__nomem(err, RT_FMT);
        for (size_t m = 0; rc == TIO_OK && m < cnt[k]; m++) (*dst[k])[m] = map[src[k][m]];
    }
    free(map);
    free(producer);
    return rc;
}

int tio__rten_lower_graph(const tio_container *c, const tio_graph *g, bool native,
                          rt_lgraph *lg, tio_error *err) {
    memset(lg, 0, sizeof *lg);
    lg->g = g;
    /* generated constants: at most 4 per operator (Slice's three) */
    size_t cap = g->value_count + 4 * g->node_count + 1;
    lg->vals = calloc(cap, sizeof *lg->vals);
    lg->ops = calloc(g->node_count ? g->node_count : 1, sizeof *lg->ops);
    int rc = !lg->vals || !lg->ops ? tio__nomem(err, RT_FMT)
             : native             ? rt_lower_identity(c, g, lg, err)
                                  : rt_lower_onnx(c, g, lg, cap, err);
    if (rc) tio__rten_lgraph_free(lg);
    return rc;
}
