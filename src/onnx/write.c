/* Writing a container's graph as an ONNX ModelProto: deterministic, every
 * tensor as raw_data referenced into the sink (not copied). */
#include "graph/graph.h"
#include "onnx/onnx.h"
#include "protobuf/pb.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct ox_writer {
    tio_write_plan *plan;
    const tio_container *c;
    /* external data (format option external_data=NAME): initializers'
     * bytes go to NAME beside the model, at offsets fixed in the sizing pass */
    const char *ext_name;
    FILE *ext;          /* the side file's temporary, in the writing pass */
    uint64_t *ext_off;  /* per tensor: offset, or UINT64_MAX when not placed */
    uint8_t *ext_done;  /* per tensor: written in this pass */
    uint64_t ext_size;
    int64_t opset; /* the default-domain opset written (ox_choose_opset) */
    /* The graph was read from ONNX: it is written as it is (no int64
     * widening or Cast, no attribute left out), so that ONNX -> ONNX keeps
     * every tensor's dtype and every attribute. The fixes below are for
     * graphs raised from other formats (rten's int32 shapes). */
    bool faithful;
} ox_writer;

/* Whether a node is of the default (ONNX) domain, where the rules of
 * src/onnx/constraints.c apply. */
static bool ox_default_domain(const tio_gnode *n) {
    return !n->domain || !n->domain[0] || strcmp(n->domain, "ai.onnx") == 0;
}

/* The highest opset an attribute of g (and its subgraphs) needs: one that an
 * opset introduced and that is not at its default (at its default it is
 * dropped below that opset). */
static int64_t ox_needed_opset(const tio_graph *g) {
    int64_t need = 0;
    for (size_t j = 0; j < g->node_count; j++) {
        const tio_gnode *n = &g->nodes[j];
        for (size_t a = 0; a < n->attr_count; a++) {
            const tio_gattr *at = &n->attrs[a];
            int64_t d = 0, since = 0, sub = 0;
            if (ox_default_domain(n)) since = tio__onnx_attr_since(n->op, at->name, &d);
            if (since > need && !(at->type == TIO_ATTR_INT && at->i == d)) need = since;
            if (at->type == TIO_ATTR_GRAPH) sub = ox_needed_opset(at->graph);
            for (size_t k = 0; at->type == TIO_ATTR_GRAPHS && k < at->count; k++) {
                int64_t x = ox_needed_opset(at->graphs[k]);
                if (x > sub) sub = x;
            }
            if (sub > need) need = sub;
        }
    }
    return need;
}

/* The default-domain opset to write: the graph's recorded one; else
 * OX_DEFAULT_OPSET, raised to what a non-default attribute needs. */
static int64_t ox_choose_opset(const tio_graph *g) {
    for (size_t i = 0; i < g->opset_count; i++)
        if (!g->opset_domains[i][0]) return g->opset_versions[i];
    int64_t need = ox_needed_opset(g);
    return need > OX_DEFAULT_OPSET ? need : OX_DEFAULT_OPSET;
}

static int ox_check_graph(const tio_graph *g, tio_error *err) {
    if (g->opaque)
        return tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, -1,
                        "the graph holds parts its reader could not decode (%s)", g->opaque);
    for (size_t j = 0; j < g->node_count; j++) {
        const tio_gnode *n = &g->nodes[j];
        if (n->opaque)
            return tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, -1, "node %zu: %s", j, n->opaque);
        for (size_t k = 0; k < n->input_count + n->output_count; k++) {
            int64_t v = k < n->input_count ? n->inputs[k] : n->outputs[k - n->input_count];
            if (v >= 0 && !g->values[v].name)
                return tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, -1,
                                "node %zu uses an unnamed value (ONNX connects nodes by "
                                "value names)",
                                j);
        }
        for (size_t a = 0; a < n->attr_count; a++) {
            const tio_gattr *at = &n->attrs[a];
            int rc = TIO_OK;
            if (at->type == TIO_ATTR_GRAPH) rc = ox_check_graph(at->graph, err);
            for (size_t k = 0; !rc && at->type == TIO_ATTR_GRAPHS && k < at->count; k++)
                rc = ox_check_graph(at->graphs[k], err);
            if (rc) return rc;
        }
    }
    for (size_t i = 0; i < g->value_count; i++) {
        const tio_gvalue *v = &g->values[i];
        if (v->tensor >= 0 && !v->name)
            return tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, -1,
                            "constant value %zu has no name (an ONNX initializer needs one)",
                            i);
    }
    return TIO_OK;
}

int tio__onnx_check(const tio_write_plan *p, tio_error *err) {
    const tio_container *c = tio__plan_container(p);
    if (!c->graph)
        return tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, -1,
                        "the container has no graph: an ONNX file is a model (write the "
                        "tensors to a tensor format instead)");
    for (size_t i = 0; i < tio__plan_count(p); i++)
        if (tio__plan_tensor(p, i)->layout != TIO_LAYOUT_DENSE)
            return tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, -1,
                            "tensor %zu is sparse (COO); ONNX initializers written by tensio "
                            "are dense (use TIO_SAVE_DENSIFY)",
                            i);
    return ox_check_graph(c->graph, err);
}

/* An external_data entry. */
static int ox_put_entry(tio_pb_writer *pw, const char *k, const char *v, tio_error *err) {
    int rc = tio__pb_begin(pw, 13, err);
    if (!rc) rc = tio__pb_put_string(pw, 1, k, err);
    if (!rc) rc = tio__pb_put_string(pw, 2, v, err);
    if (!rc) rc = tio__pb_end(pw, err);
    return rc;
}

/* Tensor i's data as external data: placed in the sizing pass, its bytes
 * appended to the side file in the writing pass (once per tensor). */
static int ox_put_external(ox_writer *w, tio_pb_writer *pw, size_t i, tio_error *err) {
    const tio_wtensor *t = tio__plan_tensor(w->plan, i);
    if (tio__pb_sizing(pw) && w->ext_off[i] == UINT64_MAX) {
        w->ext_off[i] = w->ext_size;
        w->ext_size += t->nbytes;
    }
    if (!tio__pb_sizing(pw) && !w->ext_done[i]) {
        const uint8_t *data = NULL;
        int rc = tio__plan_data(w->plan, i, &data, NULL, err);
        if (rc) return rc;
        if (t->nbytes && fwrite(data, 1, t->nbytes, w->ext) != t->nbytes)
            return tio__err(err, TIO_E_IO, OX_FMT, -1, "external data '%s': write failed",
                            w->ext_name);
        w->ext_done[i] = 1;
    }
    char off[24], len[24];
    snprintf(off, sizeof off, "%llu", (unsigned long long)w->ext_off[i]);
    snprintf(len, sizeof len, "%llu", (unsigned long long)t->nbytes);
    int rc = ox_put_entry(pw, "location", w->ext_name, err);
    if (!rc) rc = ox_put_entry(pw, "offset", off, err);
    if (!rc) rc = ox_put_entry(pw, "length", len, err);
    if (!rc) rc = tio__pb_put_int64(pw, 14, 1, err); /* data_location = EXTERNAL */
    return rc;
}

/* TensorProto of plan tensor i, with `name` (NULL: the tensor's);
 * `initializer`: an initializer (its data go external when asked); `widen`:
 * an int32 tensor written as int64 (inline, converted into a buffer of its
 * own: the source is not modified). */
static int ox_put_tensor(ox_writer *w, tio_pb_writer *pw, uint32_t number, size_t i,
                         const char *name, bool initializer, bool widen, tio_error *err) {
    const tio_wtensor *t = tio__plan_tensor(w->plan, i);
    int rc = tio__pb_begin(pw, number, err);
    for (size_t k = 0; !rc && k < t->rank; k++) rc = tio__pb_put_int64(pw, 1, t->shape[k], err);
    int code = widen ? tio__onnx_code(TIO_INT64) : tio__onnx_code(t->dtype);
    if (!rc) rc = tio__pb_put_int64(pw, 2, code, err);
    if (!rc && (name || t->name)) rc = tio__pb_put_string(pw, 8, name ? name : t->name, err);
    if (initializer && w->ext_name && !widen) {
        if (!rc) rc = ox_put_external(w, pw, i, err);
        if (!rc) rc = tio__pb_end(pw, err);
        return rc;
    }
    const uint8_t *data = NULL;
    if (!rc && !tio__pb_sizing(pw)) rc = tio__plan_data(w->plan, i, &data, NULL, err);
    if (!rc && widen) {
        uint8_t *wide = NULL;
        size_t n = (size_t)t->numel;
        if (data && n) {
            wide = malloc(n * 8);
            if (!wide) return tio__nomem(err, OX_FMT);
            for (size_t k = 0; k < n; k++) {
                const uint8_t *b = data + 4 * k;
                uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                             (uint32_t)b[3] << 24;
                uint64_t x = (uint64_t)(int64_t)(int32_t)u; /* sign-extended */
                for (unsigned q = 0; q < 8; q++) wide[8 * k + q] = (uint8_t)(x >> (8 * q));
            }
        }
        rc = tio__pb_put_len(pw, 9, wide, n * 8, false, err);
        free(wide);
        if (!rc) rc = tio__pb_end(pw, err);
        return rc;
    }
    /* referenced when it is the container's data; the plan's scratch (a
     * converted tensor) is only valid until the next call: copy it */
    bool ref = data && data == tio_tensor_data(t->src);
    if (!rc) rc = tio__pb_put_len(pw, 9, data, t->nbytes, ref, err);
    if (!rc) rc = tio__pb_end(pw, err);
    return rc;
}

static int ox_put_graph(ox_writer *w, tio_pb_writer *pw, uint32_t number, const tio_graph *g,
                        tio_error *err);

/* A ValueInfoProto. A constant's type is its tensor's as written (dtype
 * and dims), whatever the value recorded: that is what a reader gives the
 * value back, so a write of what was read is the same bytes. */
static int ox_put_value_info(const ox_writer *w, tio_pb_writer *pw, uint32_t number,
                             const tio_gvalue *v, tio_error *err) {
    const tio_wtensor *t =
        v->tensor >= 0 ? tio__plan_tensor(w->plan, (size_t)v->tensor) : NULL;
    tio_dtype dtype = t ? t->dtype : v->dtype;
    int64_t rank = t ? (int64_t)t->rank : v->rank;
    int rc = tio__pb_begin(pw, number, err);
    if (!rc) rc = tio__pb_put_string(pw, 1, v->name, err);
    if (!rc && dtype != TIO_DTYPE_INVALID) {
        rc = tio__pb_begin(pw, 2, err);                     /* type */
        if (!rc) rc = tio__pb_begin(pw, 1, err);            /* tensor_type */
        if (!rc) rc = tio__pb_put_int64(pw, 1, tio__onnx_code(dtype), err);
        if (!rc && rank >= 0) {
            rc = tio__pb_begin(pw, 2, err); /* shape */
            for (int64_t k = 0; !rc && k < rank; k++) {
                rc = tio__pb_begin(pw, 1, err);
                if (!rc && t) rc = tio__pb_put_int64(pw, 1, t->shape[k], err);
                else if (!rc && v->dims[k].name)
                    rc = tio__pb_put_string(pw, 2, v->dims[k].name, err);
                else if (!rc && v->dims[k].value >= 0)
                    rc = tio__pb_put_int64(pw, 1, v->dims[k].value, err);
                if (!rc) rc = tio__pb_end(pw, err);
            }
            if (!rc) rc = tio__pb_end(pw, err);
        }
        if (!rc) rc = tio__pb_end(pw, err);
        if (!rc) rc = tio__pb_end(pw, err);
    }
    if (!rc) rc = tio__pb_end(pw, err);
    return rc;
}

static int ox_put_attr(ox_writer *w, tio_pb_writer *pw, const tio_gnode *n, const tio_gattr *a,
                       tio_error *err) {
    static const int codes[] = {0, 2, 1, 3, 7, 6, 8, 4, 5, 9, 10};
    int rc = tio__pb_begin(pw, 5, err);
    if (!rc) rc = tio__pb_put_string(pw, 1, a->name, err);
    switch (a->type) {
    case TIO_ATTR_FLOAT:
        if (!rc) rc = tio__pb_put_float(pw, 2, (float)a->f, err);
        break;
    case TIO_ATTR_INT:
        if (!rc) rc = tio__pb_put_int64(pw, 3, a->i, err);
        break;
    case TIO_ATTR_STRING:
        if (!rc) rc = tio__pb_put_string(pw, 4, a->s, err);
        break;
    case TIO_ATTR_TENSOR: {
        const char *nm = NULL;
        if (strcmp(n->op, "Constant") == 0) nm = NULL;
        if (!rc) rc = ox_put_tensor(w, pw, 5, (size_t)a->i, nm, false, false, err);
        break;
    }
    case TIO_ATTR_GRAPH:
        if (!rc) rc = ox_put_graph(w, pw, 6, a->graph, err);
        break;
    case TIO_ATTR_FLOATS:
        for (size_t k = 0; !rc && k < a->count; k++)
            rc = tio__pb_put_float(pw, 7, (float)a->floats[k], err);
        break;
    case TIO_ATTR_INTS:
        for (size_t k = 0; !rc && k < a->count; k++) rc = tio__pb_put_int64(pw, 8, a->ints[k], err);
        break;
    case TIO_ATTR_STRINGS:
        for (size_t k = 0; !rc && k < a->count; k++)
            rc = tio__pb_put_string(pw, 9, a->strings[k], err);
        break;
    case TIO_ATTR_TENSORS:
        for (size_t k = 0; !rc && k < a->count; k++)
            rc = ox_put_tensor(w, pw, 10, (size_t)a->ints[k], NULL, false, false, err);
        break;
    case TIO_ATTR_GRAPHS:
        for (size_t k = 0; !rc && k < a->count; k++) rc = ox_put_graph(w, pw, 11, a->graphs[k], err);
        break;
    }
    if (!rc) rc = tio__pb_put_int64(pw, 20, codes[a->type], err);
    if (!rc) rc = tio__pb_end(pw, err);
    return rc;
}

typedef struct ox_tv {
    int64_t tensor;
    size_t value;
} ox_tv;

static int ox_tv_cmp(const void *a, const void *b) {
    const ox_tv *x = a, *y = b;
    return (x->tensor > y->tensor) - (x->tensor < y->tensor);
}

/* The values of g that hold a tensor, by tensor index. */
static int ox_initializers(const tio_graph *g, ox_tv **out, size_t *n, tio_error *err) {
    size_t k = 0;
    for (size_t i = 0; i < g->value_count; i++) k += g->values[i].tensor >= 0;
    *out = NULL;
    *n = 0;
    if (!k) return TIO_OK;
    ox_tv *tv = malloc(k * sizeof *tv);
    if (!tv) return tio__nomem(err, OX_FMT);
    k = 0;
    for (size_t i = 0; i < g->value_count; i++)
        if (g->values[i].tensor >= 0) tv[k++] = (ox_tv){g->values[i].tensor, i};
    qsort(tv, k, sizeof *tv, ox_tv_cmp);
    *out = tv;
    *n = k;
    return TIO_OK;
}

/* How g is written in valid ONNX form (per value): the ONNX type rules of
 * src/onnx/constraints.c applied to a graph whose integers may be int32
 * where ONNX requires int64 (a graph read from rten, whose converter
 * narrowed int64 to int32). */
typedef struct ox_fix {
    uint8_t *widen;  /* an int32 constant whose every use requires int64: written as int64 */
    uint8_t *cast;   /* an int32 value some int64-only input uses: a Cast to int64 first */
    uint8_t *casted; /* that Cast was written (in this pass) */
    uint8_t *nohint; /* its recorded int32 type may not be ONNX's: no value_info */
    /* ONNX types it int64 whatever the graph records (int32, or nothing):
     * an always-int64 output (Shape), or one that a type parameter binds
     * to such a value (Gather of a Shape, Add of that, ...) */
    uint8_t *is64;
    /* per node input, from first[j]: an int32 value that a type parameter
     * binds to an int64 one (Add's B when A is a Shape's): int64 there */
    uint8_t *bound64;
    size_t *first;
} ox_fix;

static bool ox_i64_use(const ox_writer *w, const ox_fix *f, const tio_graph *g, size_t j,
                       size_t k) {
    const tio_gnode *n = &g->nodes[j];
    if (!ox_default_domain(n)) return false;
    return tio__onnx_input_int64(n->op, k, w->opset) || f->bound64[f->first[j] + k];
}

static tio_dtype ox_dtype(const ox_writer *w, const tio_gvalue *v) {
    if (v->tensor >= 0) return tio__plan_tensor(w->plan, (size_t)v->tensor)->dtype;
    return v->dtype;
}

static bool ox_is_int32(const ox_writer *w, const tio_gvalue *v) {
    return ox_dtype(w, v) == TIO_INT32;
}

static void ox_fix_free(ox_fix *f) {
    free(f->widen);
    free(f->cast);
    free(f->casted);
    free(f->nohint);
    free(f->is64);
    free(f->bound64);
    free(f->first);
}

/* Value v is int64 in ONNX: marked when the graph records it
 * int32 or not at all (another dtype is left to ONNX's checker). */
static void ox_mark64(const ox_writer *w, const tio_graph *g, ox_fix *f, int64_t v) {
    if (v < 0) return;
    tio_dtype d = ox_dtype(w, &g->values[v]);
    if (d == TIO_INT32 || d == TIO_DTYPE_INVALID) f->is64[v] = 1;
}

/* Which values ONNX types int64 (f->is64) and which int32 inputs a type
 * parameter binds to one (f->bound64): one pass in node order, which ONNX
 * and rten require to be topological (a value used before its node is
 * not followed). */
static void ox_bind64(const ox_writer *w, const tio_graph *g, ox_fix *f) {
    for (size_t j = 0; j < g->node_count; j++) {
        const tio_gnode *n = &g->nodes[j];
        if (!ox_default_domain(n)) continue;
        for (size_t k = 0; k < n->output_count; k++)
            if (tio__onnx_output_int64(n->op, k)) ox_mark64(w, g, f, n->outputs[k]);
        uint32_t ins = 0, outs = 0;
        for (size_t t = 0; tio__onnx_type_group(n->op, t, &ins, &outs); t++) {
            bool any = false;
            for (size_t k = 0; k < n->input_count && !any; k++) {
                int64_t v = n->inputs[k];
                any = v >= 0 && tio__onnx_in_group(ins, k) &&
                      (f->is64[v] || ox_dtype(w, &g->values[v]) == TIO_INT64);
            }
            if (!any) continue;
            for (size_t k = 0; k < n->input_count; k++) {
                int64_t v = n->inputs[k];
                if (v >= 0 && tio__onnx_in_group(ins, k) && !f->is64[v] &&
                    ox_is_int32(w, &g->values[v]))
                    f->bound64[f->first[j] + k] = 1;
            }
            for (size_t k = 0; k < n->output_count; k++)
                if (tio__onnx_in_group(outs, k)) ox_mark64(w, g, f, n->outputs[k]);
        }
    }
}

static int ox_fix_plan(const ox_writer *w, const tio_graph *g, ox_fix *f, tio_error *err) {
    size_t nv = g->value_count ? g->value_count : 1;
    f->widen = calloc(nv, 1);
    f->cast = calloc(nv, 1);
    f->casted = calloc(nv, 1);
    f->nohint = calloc(nv, 1);
    f->is64 = calloc(nv, 1);
    f->first = calloc(g->node_count + 1, sizeof *f->first);
    size_t ni = 0;
    for (size_t j = 0; f->first && j < g->node_count; j++) {
        f->first[j] = ni;
        ni += g->nodes[j].input_count;
    }
    f->bound64 = calloc(ni ? ni : 1, 1);
    uint8_t *other = calloc(nv, 1);
    if (!f->widen || !f->cast || !f->casted || !f->nohint || !f->is64 || !f->first ||
        !f->bound64 || !other) {
        free(other);
        return tio__nomem(err, OX_FMT);
    }
    if (w->faithful) {
        free(other);
        return TIO_OK;
    }
    ox_bind64(w, g, f);
    /* a subgraph may capture any value by name: then nothing is widened in
     * place (a Cast serves the int64 uses) */
    bool subgraphs = false;
    for (size_t j = 0; j < g->node_count; j++)
        for (size_t a = 0; a < g->nodes[j].attr_count; a++)
            subgraphs |= g->nodes[j].attrs[a].type == TIO_ATTR_GRAPH ||
                         g->nodes[j].attrs[a].type == TIO_ATTR_GRAPHS;
    /* graph inputs and outputs keep their type: never widened in place */
    for (size_t i = 0; i < g->output_count; i++) other[g->outputs[i]] = 1;
    for (size_t i = 0; i < g->input_count; i++) other[g->inputs[i]] = 1;
    for (size_t j = 0; j < g->node_count; j++) {
        const tio_gnode *n = &g->nodes[j];
        for (size_t k = 0; k < n->input_count; k++) {
            int64_t v = n->inputs[k];
            if (v < 0 || f->is64[v] || !ox_is_int32(w, &g->values[v])) continue;
            if (ox_i64_use(w, f, g, j, k)) f->cast[v] = 1;
            else other[v] = 1;
        }
    }
    for (size_t v = 0; v < g->value_count; v++)
        if (f->cast[v] && g->values[v].tensor >= 0 && !other[v] && !subgraphs) {
            f->widen[v] = 1;
            f->cast[v] = 0;
        }
    free(other);
    /* int32 outputs of ONNX's always-int64 outputs, and of nodes fed a
     * widened or cast value (their type may follow it): no value_info */
    for (size_t j = 0; j < g->node_count; j++) {
        const tio_gnode *n = &g->nodes[j];
        bool taint = false;
        for (size_t k = 0; k < n->input_count; k++) {
            int64_t v = n->inputs[k];
            if (v >= 0) taint |= f->widen[v] || f->cast[v] || f->nohint[v];
        }
        for (size_t k = 0; k < n->output_count; k++) {
            int64_t v = n->outputs[k];
            if (v >= 0 && ox_is_int32(w, &g->values[v]) && (taint || f->is64[v]))
                f->nohint[v] = 1;
        }
    }
    return TIO_OK;
}

/* The name of value v's int64 cast ("<name>:int64"), malloc'd. */
static char *ox_cast_name(const char *name, const char *suffix) {
    size_t n = strlen(name) + strlen(suffix) + 1;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s%s", name, suffix);
    return s;
}

/* Cast(v) -> "<v>:int64", named "<v>:to-int64". */
static int ox_put_cast(tio_pb_writer *pw, const char *name, tio_error *err) {
    char *out = ox_cast_name(name, ":int64"), *nm = ox_cast_name(name, ":to-int64");
    int rc = out && nm ? TIO_OK : tio__nomem(err, OX_FMT);
    if (!rc) rc = tio__pb_begin(pw, 1, err);
    if (!rc) rc = tio__pb_put_string(pw, 1, name, err);
    if (!rc) rc = tio__pb_put_string(pw, 2, out, err);
    if (!rc) rc = tio__pb_put_string(pw, 3, nm, err);
    if (!rc) rc = tio__pb_put_string(pw, 4, "Cast", err);
    if (!rc) rc = tio__pb_begin(pw, 5, err);
    if (!rc) rc = tio__pb_put_string(pw, 1, "to", err);
    if (!rc) rc = tio__pb_put_int64(pw, 3, tio__onnx_code(TIO_INT64), err);
    if (!rc) rc = tio__pb_put_int64(pw, 20, 2, err); /* INT */
    if (!rc) rc = tio__pb_end(pw, err);
    if (!rc) rc = tio__pb_end(pw, err);
    free(out);
    free(nm);
    return rc;
}

/* Whether attribute a of n is left out: the written opset predates it and
 * it is at its default. */
static bool ox_drop_attr(const ox_writer *w, const tio_gnode *n, const tio_gattr *a) {
    int64_t d = 0;
    if (!ox_default_domain(n) || a->type != TIO_ATTR_INT) return false;
    int since = tio__onnx_attr_since(n->op, a->name, &d);
    return !w->faithful && since > w->opset && a->i == d;
}

static int ox_put_node(ox_writer *w, tio_pb_writer *pw, const tio_graph *g, ox_fix *f,
                       size_t j, tio_error *err) {
    const tio_gnode *n = &g->nodes[j];
    int rc = TIO_OK;
    for (size_t k = 0; !rc && k < n->input_count; k++) {
        int64_t v = n->inputs[k];
        if (v >= 0 && f->cast[v] && !f->casted[v] && ox_i64_use(w, f, g, j, k)) {
            rc = ox_put_cast(pw, g->values[v].name, err);
            f->casted[v] = 1;
        }
    }
    if (!rc) rc = tio__pb_begin(pw, 1, err);
    for (size_t k = 0; !rc && k < n->input_count; k++) {
        int64_t v = n->inputs[k];
        if (v >= 0 && f->cast[v] && ox_i64_use(w, f, g, j, k)) {
            char *nm = ox_cast_name(g->values[v].name, ":int64");
            rc = nm ? tio__pb_put_string(pw, 1, nm, err) : tio__nomem(err, OX_FMT);
            free(nm);
        } else {
            rc = tio__pb_put_string(pw, 1, v >= 0 ? g->values[v].name : "", err);
        }
    }
    for (size_t k = 0; !rc && k < n->output_count; k++)
        rc = tio__pb_put_string(pw, 2, n->outputs[k] >= 0 ? g->values[n->outputs[k]].name : "",
                                err);
    if (!rc && n->name) rc = tio__pb_put_string(pw, 3, n->name, err);
    if (!rc) rc = tio__pb_put_string(pw, 4, n->op, err);
    for (size_t a = 0; !rc && a < n->attr_count; a++)
        if (!ox_drop_attr(w, n, &n->attrs[a])) rc = ox_put_attr(w, pw, n, &n->attrs[a], err);
    if (!rc && n->domain) rc = tio__pb_put_string(pw, 7, n->domain, err);
    if (!rc) rc = tio__pb_end(pw, err);
    return rc;
}

static int ox_put_graph(ox_writer *w, tio_pb_writer *pw, uint32_t number, const tio_graph *g,
                        tio_error *err) {
    ox_fix f;
    memset(&f, 0, sizeof f);
    int rc = ox_fix_plan(w, g, &f, err);
    if (!rc) rc = tio__pb_begin(pw, number, err);
    for (size_t j = 0; !rc && j < g->node_count; j++)
        rc = ox_put_node(w, pw, g, &f, j, err);
    const char *gname = tio__kv_get(&g->meta, OX_META_GRAPH_NAME);
    if (!rc) rc = tio__pb_put_string(pw, 2, gname ? gname : (g->parent ? "body" : "main"), err);
    /* Initializers in the order of their tensors (the reader's order), not
     * of their values: an initializer that gives a graph input its default
     * has the input's (earlier) value. */
    ox_tv *tv = NULL;
    size_t ntv = 0;
    if (!rc) rc = ox_initializers(g, &tv, &ntv, err);
    for (size_t i = 0; !rc && i < ntv; i++)
        rc = ox_put_tensor(w, pw, 5, (size_t)tv[i].tensor, g->values[tv[i].value].name, true,
                           f.widen[tv[i].value], err);
    free(tv);
    const char *gdoc = tio__kv_get(&g->meta, OX_META_GRAPH_DOC);
    if (!rc && gdoc) rc = tio__pb_put_string(pw, 10, gdoc, err);
    /* every graph input, a constant one too: an input whose initializer
     * gives its default (the caller may feed it) stays one */
    for (size_t i = 0; !rc && i < g->input_count; i++)
        rc = ox_put_value_info(w, pw, 11, &g->values[g->inputs[i]], err);
    for (size_t i = 0; !rc && i < g->output_count; i++)
        rc = ox_put_value_info(w, pw, 12, &g->values[g->outputs[i]], err);
    /* value_info: typed runtime values that are neither inputs nor outputs */
    for (size_t i = 0; !rc && i < g->value_count; i++) {
        const tio_gvalue *v = &g->values[i];
        bool io = f.nohint[i];
        for (size_t k = 0; k < g->input_count && !io; k++) io = g->inputs[k] == (int64_t)i;
        for (size_t k = 0; k < g->output_count && !io; k++) io = g->outputs[k] == (int64_t)i;
        for (size_t k = 0; k < g->capture_count && !io; k++) io = g->captures[k] == (int64_t)i;
        if (!io && v->tensor < 0 && v->name && v->dtype != TIO_DTYPE_INVALID)
            rc = ox_put_value_info(w, pw, 13, v, err);
    }
    if (!rc) rc = tio__pb_end(pw, err);
    ox_fix_free(&f);
    return rc;
}

static int ox_emit(tio_pb_writer *pw, void *ctx, tio_error *err) {
    ox_writer *w = ctx;
    const tio_graph *g = w->c->graph;
    const tio_kv *meta = &g->meta;
    const char *ir = tio__kv_get(meta, OX_META_IR);
    long long irv = ir ? strtoll(ir, NULL, 10) : 8;
    if (irv < 3) irv = 8;
    int rc = tio__pb_put_int64(pw, 1, irv, err);
    const char *pn = tio__kv_get(meta, OX_META_PRODUCER);
    const char *pv = tio__kv_get(meta, OX_META_PRODUCER_VERSION);
    const char *dm = tio__kv_get(meta, OX_META_DOMAIN);
    const char *mv = tio__kv_get(meta, OX_META_MODEL_VERSION);
    const char *doc = tio__kv_get(meta, OX_META_DOC);
    if (!rc) rc = tio__pb_put_string(pw, 2, pn ? pn : "tensio", err);
    if (!rc && pv) rc = tio__pb_put_string(pw, 3, pv, err);
    if (!rc && dm) rc = tio__pb_put_string(pw, 4, dm, err);
    if (!rc && mv) rc = tio__pb_put_int64(pw, 5, strtoll(mv, NULL, 10), err);
    if (!rc && doc) rc = tio__pb_put_string(pw, 6, doc, err);
    w->opset = ox_choose_opset(g);
    w->faithful = g->native_format && strcmp(g->native_format, OX_FMT) == 0;
    if (!rc) rc = ox_put_graph(w, pw, 7, g, err);
    bool def = false;
    for (size_t i = 0; !rc && i < g->opset_count; i++) {
        rc = tio__pb_begin(pw, 8, err);
        if (!rc && g->opset_domains[i][0]) rc = tio__pb_put_string(pw, 1, g->opset_domains[i], err);
        if (!g->opset_domains[i][0]) def = true;
        if (!rc) rc = tio__pb_put_int64(pw, 2, g->opset_versions[i], err);
        if (!rc) rc = tio__pb_end(pw, err);
    }
    if (!rc && !def) {
        rc = tio__pb_begin(pw, 8, err);
        if (!rc) rc = tio__pb_put_int64(pw, 2, w->opset, err);
        if (!rc) rc = tio__pb_end(pw, err);
    }
    for (size_t i = 0; !rc && i < meta->count; i++) {
        const char *k, *v;
        tio_graph_meta_at(g, i, &k, &v);
        if (tio__onnx_is_model_key(k)) continue;
        rc = tio__pb_begin(pw, 14, err);
        if (!rc) rc = tio__pb_put_string(pw, 1, k, err);
        if (!rc) rc = tio__pb_put_string(pw, 2, v, err);
        if (!rc) rc = tio__pb_end(pw, err);
    }
    return rc;
}

/* external_data=NAME: a plain file name (no directory), beside the model. */
static int ox_ext_open(ox_writer *w, char **tmp, char **final, tio_error *err) {
    const char *nm = w->ext_name, *path = tio__plan_path(w->plan);
    if (!nm[0] || strchr(nm, '/') || strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0)
        return tio__err(err, TIO_E_ARGUMENT, OX_FMT, -1,
                        "external_data '%.200s': expected a file name without a directory "
                        "(the file is written beside the model)",
                        nm);
    if (!path)
        return tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, -1,
                        "external_data needs a file save (tio_save), not a memory save");
    const char *slash = strrchr(path, '/');
    if (strcmp(slash ? slash + 1 : path, nm) == 0)
        return tio__err(err, TIO_E_ARGUMENT, OX_FMT, -1,
                        "external_data '%.200s' is the model's own file name", nm);
    size_t dlen = slash ? (size_t)(slash - path) + 1 : 0, n = dlen + strlen(nm) + 48;
    *final = malloc(n);
    *tmp = malloc(n);
    if (!*final || !*tmp) return tio__nomem(err, OX_FMT);
    snprintf(*final, n, "%.*s%s", (int)dlen, path, nm);
    /* created exclusively with mode 0666 (the umask applies), as the core
     * creates the model's own temporary */
    int fd = -1;
    for (unsigned k = 0; fd < 0 && k < 100; k++) {
        snprintf(*tmp, n, "%s.tmp-%ld-%u", *final, (long)getpid(), k);
        fd = open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        int e = errno;
        (*tmp)[0] = 0;
        return tio__err(err, TIO_E_IO, OX_FMT, -1, "%s: cannot create: %s", *final,
                        strerror(e));
    }
    w->ext = fdopen(fd, "wb");
    if (!w->ext) {
        close(fd);
        return tio__nomem(err, OX_FMT);
    }
    return TIO_OK;
}

int tio__onnx_write(tio_write_plan *p, tio_sink *s, tio_error *err) {
    ox_writer w;
    memset(&w, 0, sizeof w);
    w.plan = p;
    w.c = tio__plan_container(p);
    w.ext_name = tio__plan_option(p, "external_data");
    if (!w.ext_name) return tio__pb_write(s, OX_FMT, ox_emit, &w, err);
    /* the side file: a temporary beside the model, renamed over NAME once
     * the model is written (the model's own rename follows) */
    char *tmp = NULL, *final = NULL;
    size_t n = tio__plan_count(p);
    int rc = ox_ext_open(&w, &tmp, &final, err);
    if (!rc) {
        w.ext_off = malloc((n ? n : 1) * sizeof *w.ext_off);
        w.ext_done = calloc(n ? n : 1, 1);
        if (!w.ext_off || !w.ext_done) rc = tio__nomem(err, OX_FMT);
        for (size_t i = 0; !rc && i < n; i++) w.ext_off[i] = UINT64_MAX;
    }
    if (!rc) rc = tio__pb_write(s, OX_FMT, ox_emit, &w, err);
    if (w.ext) {
        bool sync = !(tio__plan_flags(p) & TIO_SAVE_NO_SYNC);
        if (fflush(w.ext) != 0 || (sync && fsync(fileno(w.ext)) != 0))
            if (!rc) rc = tio__err(err, TIO_E_IO, OX_FMT, -1, "%s: write failed", final);
        if (fclose(w.ext) != 0 && !rc)
            rc = tio__err(err, TIO_E_IO, OX_FMT, -1, "%s: write failed", final);
    }
    if (!rc && rename(tmp, final) != 0)
        rc = tio__err(err, TIO_E_IO, OX_FMT, -1, "%s: cannot rename into place: %s", final,
                      strerror(errno));
    if (rc && tmp && tmp[0]) unlink(tmp);
    free(tmp);
    free(final);
    free(w.ext_off);
    free(w.ext_done);
    return rc;
}
