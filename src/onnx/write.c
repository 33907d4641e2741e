/* Writing a container's graph as an ONNX ModelProto: deterministic, every
 * tensor as raw_data referenced into the sink (not copied). */
#include "graph/graph.h"
#include "graph/types.h"
#include "onnx/onnx.h"
#include "protobuf/pb.h"
#include "tmfile/opmap.h"
#include "tmfile/tmfile.h"
#include "onnx/write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>


/* Whether a node is of the default (ONNX) domain, where the rules of
 * src/onnx/constraints.c apply. */
bool tio__ox_default_domain(const tio_gnode *n) {
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
            int64_t since = 0, sub = 0;
            if (tio__ox_default_domain(n)) since = tio__onnx_attr_needs(n->op, at);
            if (since > need) need = since;
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

/* Names as ONNX scopes them: a graph's inputs, initializers and node
 * outputs, each defined once and before its first use; a subgraph also sees
 * what its enclosing graphs defined so far. The writer checks this before
 * it writes, so that it never writes a model its reader refuses. */

/* seeded by the table's address (tio__hash_str) */
static size_t ox_name_hash(const ox_names *ns, const char *s) {
    return (size_t)tio__hash_str(tio__hash_seed(ns), s);
}

static bool ox_names_has(const ox_names *ns, const char *name) {
    for (; ns; ns = ns->parent)
        for (size_t i = ox_name_hash(ns, name) & (ns->cap - 1); ns->slot[i];
             i = (i + 1) & (ns->cap - 1))
            if (strcmp(ns->slot[i], name) == 0) return true;
    return false;
}

/* Defines `name` in ns (not in its parents); false when it already is. */
static bool ox_names_add(ox_names *ns, const char *name) {
    size_t i = ox_name_hash(ns, name) & (ns->cap - 1);
    for (; ns->slot[i]; i = (i + 1) & (ns->cap - 1))
        if (strcmp(ns->slot[i], name) == 0) return false;
    ns->slot[i] = name;
    return true;
}

static int ox_check_graph(const tio_graph *g, const ox_names *parent, tio_error *err);

static int ox_scope_err(tio_error *err, const char *what, const char *name, const char *why) {
    return tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, -1, "%s: value '%.200s' %s", what, name,
                    why);
}

static int ox_check_names(const tio_graph *g, const ox_names *parent, tio_error *err) {
    ox_names ns = {NULL, 16, parent};
    while (ns.cap < 2 * g->value_count + 2) ns.cap *= 2;
    ns.slot = calloc(ns.cap, sizeof *ns.slot);
    if (!ns.slot) return tio__nomem(err, OX_FMT);
    int rc = TIO_OK;
    uint8_t *done = calloc(g->value_count ? g->value_count : 1, 1);
    if (!done) rc = tio__nomem(err, OX_FMT);
    for (size_t i = 0; !rc && i < g->input_count; i++) {
        const tio_gvalue *v = &g->values[g->inputs[i]];
        if (!v->name) rc = ox_scope_err(err, "graph input", "", "has no name");
        else if (!ox_names_add(&ns, v->name))
            rc = ox_scope_err(err, "graph input", v->name, "is defined twice");
        if (!rc) done[g->inputs[i]] = 1;
    }
    for (size_t i = 0; !rc && i < g->capture_count; i++)
        if (g->values[g->captures[i]].name) done[g->captures[i]] = 1; /* the parent's */
    for (size_t i = 0; !rc && i < g->value_count; i++)
        if (g->values[i].tensor >= 0 && !done[i]) {
            if (!ox_names_add(&ns, g->values[i].name))
                rc = ox_scope_err(err, "initializer", g->values[i].name, "is defined twice");
            done[i] = 1;
        }
    char what[96];
    for (size_t j = 0; !rc && j < g->node_count; j++) {
        const tio_gnode *n = &g->nodes[j];
        snprintf(what, sizeof what, "node %zu (%.40s)", j, n->op);
        for (size_t k = 0; !rc && k < n->input_count; k++) {
            int64_t v = n->inputs[k];
            if (v >= 0 && !ox_names_has(&ns, g->values[v].name))
                rc = ox_scope_err(err, what, g->values[v].name,
                                  "is used before anything defines it (a graph input, an "
                                  "initializer or an earlier node's output)");
        }
        for (size_t a = 0; !rc && a < n->attr_count; a++) {
            const tio_gattr *at = &n->attrs[a];
            if (at->type == TIO_ATTR_GRAPH) rc = ox_check_graph(at->graph, &ns, err);
            for (size_t k = 0; !rc && at->type == TIO_ATTR_GRAPHS && k < at->count; k++)
                rc = ox_check_graph(at->graphs[k], &ns, err);
        }
        for (size_t k = 0; !rc && k < n->output_count; k++) {
            int64_t v = n->outputs[k];
            if (v < 0) continue;
            if (done[v] || !ox_names_add(&ns, g->values[v].name))
                rc = ox_scope_err(err, what, g->values[v].name,
                                  done[v] && g->values[v].tensor >= 0
                                      ? "is its output and a constant: ONNX defines a value once"
                                      : "is defined twice (ONNX defines a value once)");
            done[v] = 1;
        }
    }
    for (size_t i = 0; !rc && i < g->output_count; i++) {
        const tio_gvalue *v = &g->values[g->outputs[i]];
        if (!v->name || !ox_names_has(&ns, v->name))
            rc = ox_scope_err(err, "graph output", v->name ? v->name : "",
                              "is not defined (not a graph input, initializer or node output)");
    }
    free(done);
    free(ns.slot);
    return rc;
}

static int ox_check_graph(const tio_graph *g, const ox_names *parent, tio_error *err) {
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
    }
    for (size_t i = 0; i < g->value_count; i++) {
        const tio_gvalue *v = &g->values[i];
        if (v->tensor >= 0 && !v->name)
            return tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, -1,
                            "constant value %zu has no name (an ONNX initializer needs one)",
                            i);
    }
    /* subgraphs are checked in their scope, from ox_check_names */
    return ox_check_names(g, parent, err);
}

/* The opset Cast needs for dtype d: bfloat16 came at 13, the float8 types
 * at 19; 6 made `to` an int. */
static int64_t ox_cast_opset(tio_dtype d) {
    switch (d) {
    case TIO_BFLOAT16: return 13;
    case TIO_FLOAT8_E4M3FN:
    case TIO_FLOAT8_E5M2: return 19;
    default: return 6;
    }
}

/* The refusal of a cast whose Cast (back from `to` to `from`) the written
 * opset lacks: TIO_E_UNSUPPORTED naming the initializer (`name`), or TIO_OK. */
static int ox_cast_refusal(const char *name, tio_dtype from, tio_dtype to, int64_t opset,
                           tio_error *err) {
    int64_t need = ox_cast_opset(from) > ox_cast_opset(to) ? ox_cast_opset(from)
                                                           : ox_cast_opset(to);
    if (opset >= need) return TIO_OK;
    return tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, -1,
                    "initializer '%s': casting %s weights to %s needs a Cast from %s to %s, "
                    "which ONNX has from opset %lld; the model is written at opset %lld (the "
                    "format option opset=%lld raises it)",
                    name, tio_dtype_name(from), tio_dtype_name(to), tio_dtype_name(to),
                    tio_dtype_name(from), (long long)need, (long long)opset, (long long)need);
}

int tio__onnx_check(const tio_write_plan *p, tio_error *err) {
    const tio_container *c = tio__plan_container(p);
    if (!c->graph)
        return tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, -1,
                        "the container has no graph: an ONNX file is a model (write the "
                        "tensors to a tensor format instead)");
    for (size_t i = 0; i < tio__plan_count(p); i++) {
        const tio_wtensor *t = tio__plan_tensor(p, i);
        if (t->layout != TIO_LAYOUT_DENSE && (t->layout != TIO_LAYOUT_COO || t->rank == 0))
            return tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, -1,
                            "tensor %zu is %s; ONNX holds dense tensors and COO ones of rank "
                            ">= 1 (SparseTensorProto)",
                            i, t->layout == TIO_LAYOUT_COO ? "a COO scalar" : "quantized");
    }
    /* a cast needs Cast at the opset written (opset=N, else the graph's):
     * known here, so tio_check_save predicts the writer's refusal */
    int64_t opset = -1;
    for (size_t i = 0; i < tio__plan_count(p); i++) {
        const tio_wtensor *t = tio__plan_tensor(p, i);
        if (!t->cast) continue;
        if (opset < 0) {
            const char *o = tio__plan_option(p, "opset");
            long long v = o ? strtoll(o, NULL, 10) : 0;
            opset = v > 0 ? v : ox_choose_opset(c->graph);
        }
        int rc = ox_cast_refusal(t->name ? t->name : "", t->src->dtype, t->dtype, opset, err);
        if (rc) return rc;
    }
    return ox_check_graph(c->graph, NULL, err);
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

/* A TensorProto's dims, data_type and name (NULL: none). */
static int ox_put_tensor_head(tio_pb_writer *pw, const tio_wtensor *t, int code,
                              const char *name, tio_error *err) {
    int rc = TIO_OK;
    for (size_t k = 0; !rc && k < t->rank; k++) rc = tio__pb_put_int64(pw, 1, t->shape[k], err);
    if (!rc) rc = tio__pb_put_int64(pw, 2, code, err);
    if (!rc && name) rc = tio__pb_put_string(pw, 8, name, err);
    return rc;
}

/* A STRING tensor: dims, data_type, one string_data (field 6) per element,
 * name: field order, as onnx writes it. The strings are the container's
 * bytes, referenced; their lengths are needed in both passes. */
static int ox_put_strings(tio_pb_writer *pw, tio_write_plan *p, size_t i, const char *name,
                          tio_error *err) {
    const tio_wtensor *t = tio__plan_tensor(p, i);
    int rc = TIO_OK;
    for (size_t k = 0; !rc && k < t->rank; k++) rc = tio__pb_put_int64(pw, 1, t->shape[k], err);
    if (!rc) rc = tio__pb_put_int64(pw, 2, tio__onnx_code(TIO_STRING), err);
    for (uint64_t k = 0; !rc && k < t->numel; k++) {
        const uint8_t *s;
        size_t n;
        tio__string_at(t->src, k, &s, &n);
        rc = tio__pb_put_len(pw, 6, s, n, true, err);
    }
    if (!rc && name) rc = tio__pb_put_string(pw, 8, name, err);
    return rc;
}

typedef struct ox_put_ctx {
    tio_write_plan *p;
    size_t i;
} ox_put_ctx;

/* raw_data: the tensor's bytes as every tensor format's save writes them
 * (tio__plan_sink_tensor: from the source file in the kernel or read in by
 * pread(), not faulted in through its mapping; a converted tensor streamed). */
static int ox_put_raw(void *ctx, tio_sink *s, tio_error *err) {
    const ox_put_ctx *c = ctx;
    return tio__plan_sink_tensor(c->p, s, c->i, err);
}

int tio__onnx_put_tensor(tio_pb_writer *pw, tio_write_plan *p, size_t i, const char *name,
                         tio_error *err) {
    const tio_wtensor *t = tio__plan_tensor(p, i);
    if (t->dtype == TIO_STRING) return ox_put_strings(pw, p, i, name ? name : t->name, err);
    int rc = ox_put_tensor_head(pw, t, tio__onnx_code(t->dtype), name ? name : t->name, err);
    ox_put_ctx c = {p, i};
    if (!rc) rc = tio__pb_put_len_by(pw, 9, t->nbytes, ox_put_raw, &c, err);
    return rc;
}

/* Initializers smaller than this stay inline with external_data=NAME, as
 * onnx.save's size_threshold keeps them: onnxruntime's shape inference reads
 * a Reshape's shape, an Expand's ... only from inline bytes ("Cannot parse
 * data from external tensors"). */
#define OX_EXTERNAL_MIN 1024u

/* TensorProto of plan tensor i, with `name` (NULL: the tensor's);
 * `initializer`: an initializer (its data go external when asked); `widen`:
 * an int32 tensor written as int64 (inline, converted into a buffer of its
 * own: the source is not modified). */
static int ox_put_tensor(ox_writer *w, tio_pb_writer *pw, uint32_t number, size_t i,
                         const char *name, bool initializer, bool widen, tio_error *err) {
    const tio_wtensor *t = tio__plan_tensor(w->plan, i);
    int rc = tio__pb_begin(pw, number, err);
    if (!widen && !(initializer && w->ext_name && t->dtype != TIO_STRING &&
                    t->nbytes >= OX_EXTERNAL_MIN)) {
        if (!rc) rc = tio__onnx_put_tensor(pw, w->plan, i, name, err);
        if (!rc) rc = tio__pb_end(pw, err);
        return rc;
    }
    int code = widen ? tio__onnx_code(TIO_INT64) : tio__onnx_code(t->dtype);
    if (!rc) rc = ox_put_tensor_head(pw, t, code, name ? name : t->name, err);
    if (!widen) {
        if (!rc) rc = ox_put_external(w, pw, i, err);
        if (!rc) rc = tio__pb_end(pw, err);
        return rc;
    }
    const uint8_t *data = NULL;
    if (!rc && !tio__pb_sizing(pw)) rc = tio__plan_data(w->plan, i, &data, NULL, err);
    uint8_t *wide = NULL;
    size_t n = (size_t)t->numel;
    if (!rc && data && n) {
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
    if (!rc) rc = tio__pb_put_len(pw, 9, wide, n * 8, false, err);
    free(wide);
    if (!rc) rc = tio__pb_end(pw, err);
    return rc;
}

/* A SparseTensorProto of COO plan tensor i as field `number`: values (the
 * tensor's name, [NNZ]), indices (int64 [NNZ, rank] coordinates) and dims,
 * each data as raw_data (referenced: the container's bytes). */
static int ox_put_sparse(ox_writer *w, tio_pb_writer *pw, uint32_t number, size_t i,
                         const char *name, tio_error *err) {
    const tio_wtensor *t = tio__plan_tensor(w->plan, i);
    const tio_tensor *src = t->src;
    uint64_t nnz = tio_tensor_nnz(src);
    size_t es = tio_dtype_size(t->dtype);
    int rc = tio__pb_begin(pw, number, err);
    if (!rc) rc = tio__pb_begin(pw, 1, err); /* values */
    if (!rc) rc = tio__pb_put_int64(pw, 1, (int64_t)nnz, err);
    if (!rc) rc = tio__pb_put_int64(pw, 2, tio__onnx_code(t->dtype), err);
    if (!rc) rc = tio__pb_put_string(pw, 8, name ? name : t->name ? t->name : "", err);
    /* the values as the plan converts them (a cast: its scratch, copied),
     * else the container's, referenced */
    const uint8_t *vals = tio_tensor_data(src);
    if (!rc && t->dtype != src->dtype && !tio__pb_sizing(pw))
        rc = tio__plan_data(w->plan, i, &vals, NULL, err);
    if (!rc)
        rc = tio__pb_put_len(pw, 9, vals, (size_t)nnz * es, t->dtype == src->dtype, err);
    if (!rc) rc = tio__pb_end(pw, err);
    if (!rc) rc = tio__pb_begin(pw, 2, err); /* indices */
    if (!rc) rc = tio__pb_put_int64(pw, 1, (int64_t)nnz, err);
    if (!rc) rc = tio__pb_put_int64(pw, 1, (int64_t)t->rank, err);
    if (!rc) rc = tio__pb_put_int64(pw, 2, tio__onnx_code(TIO_INT64), err);
    if (!rc)
        rc = tio__pb_put_len(pw, 9, tio_tensor_indices(src), (size_t)nnz * t->rank * 8, true,
                             err);
    if (!rc) rc = tio__pb_end(pw, err);
    for (size_t k = 0; !rc && k < t->rank; k++) rc = tio__pb_put_int64(pw, 3, t->shape[k], err);
    if (!rc) rc = tio__pb_end(pw, err);
    return rc;
}

static bool ox_is_coo(const ox_writer *w, int64_t i) {
    return i >= 0 && tio__plan_tensor(w->plan, (size_t)i)->layout == TIO_LAYOUT_COO;
}

static int ox_put_graph(ox_writer *w, tio_pb_writer *pw, uint32_t number, const tio_graph *g,
                        tio_error *err);

/* A ValueInfoProto. A constant's type is its tensor's as written (dtype
 * and dims), whatever the value recorded: that is what a reader gives the
 * value back, so a write of what was read is the same bytes. */
/* The dims of a TensorShapeProto (field 2 of a tensor type): a name as
 * dim_param, a size as dim_value, an unknown dim empty. */
static int ox_put_shape(tio_pb_writer *pw, int64_t rank, const int64_t *sizes,
                        const tio_dim *dims, const tio_gdim *gdims, tio_error *err) {
    int rc = tio__pb_begin(pw, 2, err);
    for (int64_t k = 0; !rc && k < rank; k++) {
        const char *name = dims ? dims[k].name : gdims ? gdims[k].name : NULL;
        int64_t value = sizes ? sizes[k] : dims ? dims[k].value : gdims[k].value;
        rc = tio__pb_begin(pw, 1, err);
        if (!rc && name && !sizes) rc = tio__pb_put_string(pw, 2, name, err);
        else if (!rc && value >= 0) rc = tio__pb_put_int64(pw, 1, value, err);
        if (!rc) rc = tio__pb_end(pw, err);
    }
    return rc ? rc : tio__pb_end(pw, err);
}

/* A value type other than a tensor of a tio dtype (graph/types.h) as the
 * TypeProto's one field. */
static int ox_put_gtype(tio_pb_writer *pw, const tio_gtype *t, tio_error *err) {
    static const uint32_t field[] = {0, 1, 8, 4, 9, 5}; /* by TIO_GT_* */
    int rc = tio__pb_begin(pw, field[t->kind], err);
    if (!rc && t->kind != TIO_GT_SEQ && t->kind != TIO_GT_OPTIONAL)
        rc = tio__pb_put_int64(pw, 1, t->elem, err); /* elem_type, or a map's key_type */
    if (!rc && t->inner) {
        rc = tio__pb_begin(pw, t->kind == TIO_GT_MAP ? 2 : 1, err);
        if (!rc) rc = ox_put_gtype(pw, t->inner, err);
        if (!rc) rc = tio__pb_end(pw, err);
    } else if (!rc && t->rank >= 0) {
        rc = ox_put_shape(pw, t->rank, NULL, NULL, t->dims, err);
    }
    return rc ? rc : tio__pb_end(pw, err);
}

/* Type text (graph/types.h) as TypeProto field `number`; what names it in
 * a message. */
static int ox_put_type_text(tio_pb_writer *pw, uint32_t number, const char *text,
                            const char *what, tio_error *err) {
    tio_gtype *gt = NULL;
    const char *why = NULL;
    if (!text || tio__gtype_parse(text, TIO_GRAPH_TYPE_MAX_DEPTH, &gt, &why, NULL) != 0)
        return tio__err(err, TIO_E_ARGUMENT, OX_FMT, -1, "'%s': type '%.80s': %s",
                        what ? what : "", text ? text : "", why ? why : "no text");
    int rc = tio__pb_begin(pw, number, err);
    if (!rc) rc = ox_put_gtype(pw, gt, err);
    if (!rc) rc = tio__pb_end(pw, err);
    tio__gtype_free(gt);
    return rc;
}

static int ox_put_value_info(const ox_writer *w, tio_pb_writer *pw, uint32_t number,
                             const tio_gvalue *v, tio_error *err) {
    const tio_wtensor *t =
        v->tensor >= 0 ? tio__plan_tensor(w->plan, (size_t)v->tensor) : NULL;
    tio_dtype dtype = t ? t->dtype : v->dtype;
    int64_t rank = t ? (int64_t)t->rank : v->rank;
    int rc = tio__pb_begin(pw, number, err);
    if (!rc) rc = tio__pb_put_string(pw, 1, v->name, err);
    if (!rc && !t && v->type) {
        rc = ox_put_type_text(pw, 2, v->type, v->name, err);
    } else if (!rc && dtype != TIO_DTYPE_INVALID) {
        rc = tio__pb_begin(pw, 2, err);                     /* type */
        if (!rc) rc = tio__pb_begin(pw, 1, err);            /* tensor_type */
        if (!rc) rc = tio__pb_put_int64(pw, 1, tio__onnx_code(dtype), err);
        if (!rc && rank >= 0)
            rc = ox_put_shape(pw, rank, t ? t->shape : NULL, t ? NULL : v->dims, NULL, err);
        if (!rc) rc = tio__pb_end(pw, err);
        if (!rc) rc = tio__pb_end(pw, err);
    }
    if (!rc) rc = tio__pb_end(pw, err);
    return rc;
}

static int ox_put_attr(ox_writer *w, tio_pb_writer *pw, const tio_gnode *n, const tio_gattr *a,
                       tio_error *err) {
    static const int codes[] = {0, 2, 1, 3, 7, 6, 8, 4, 5, 9, 10, 13};
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
    case TIO_ATTR_TENSOR:
        if (ox_is_coo(w, a->i)) { /* SPARSE_TENSOR (Constant's sparse_value) */
            if (!rc) rc = ox_put_sparse(w, pw, 22, (size_t)a->i, NULL, err);
            if (!rc) rc = tio__pb_put_int64(pw, 20, 11, err);
            return rc ? rc : tio__pb_end(pw, err);
        }
        if (!rc) rc = ox_put_tensor(w, pw, 5, (size_t)a->i, NULL, false, false, err);
        break;
    case TIO_ATTR_GRAPH:
        w->loop_body = tio__ox_default_domain(n) && strcmp(n->op, "Loop") == 0 &&
                       strcmp(a->name, "body") == 0;
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
            rc = ox_is_coo(w, a->ints[k])
                     ? tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, -1,
                                "attribute '%s' of node '%s' holds a COO tensor among its "
                                "tensors (ONNX's SPARSE_TENSORS, which tensio does not write)",
                                a->name, n->name ? n->name : "")
                     : ox_put_tensor(w, pw, 10, (size_t)a->ints[k], NULL, false, false, err);
        break;
    case TIO_ATTR_GRAPHS:
        for (size_t k = 0; !rc && k < a->count; k++) rc = ox_put_graph(w, pw, 11, a->graphs[k], err);
        break;
    case TIO_ATTR_TYPE:
        if (!rc) rc = ox_put_type_text(pw, 14, a->s, a->name, err); /* tp */
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

/* ox_fix.cast bits: the Casts an int32 value gets */
enum { OX_TO_INT64 = 1, OX_TO_BOOL = 2 };

static bool ox_i64_use(const ox_writer *w, const ox_fix *f, const tio_graph *g, size_t j,
                       size_t k) {
    const tio_gnode *n = &g->nodes[j];
    if (!tio__ox_default_domain(n)) return false;
    return tio__onnx_input_int64(n->op, k, w->opset) || f->bound64[f->first[j] + k];
}

/* Value v's recorded element type. A subgraph's capture has none of its
 * own: it is the type of the enclosing graph's value of that name. */
tio_dtype tio__ox_dtype(const ox_writer *w, const tio_graph *g, int64_t v) {
    for (;;) { /* up the parents, to the root at most */
        const tio_gvalue *gv = &g->values[v];
        if (gv->tensor >= 0) return tio__plan_tensor(w->plan, (size_t)gv->tensor)->dtype;
        if (gv->dtype != TIO_DTYPE_INVALID || !gv->name || !g->parent) return gv->dtype;
        if (!tio__graph_is_capture(g, v)) return gv->dtype;
        int64_t outer = tio_graph_find_value(g->parent, gv->name);
        if (outer < 0) return gv->dtype;
        g = g->parent;
        v = outer;
    }
}

static bool ox_is_int32(const ox_writer *w, const tio_graph *g, int64_t v) {
    return tio__ox_dtype(w, g, v) == TIO_INT32;
}

static void ox_fix_free(ox_fix *f) {
    free(f->widen);
    free(f->cast);
    free(f->casted);
    free(f->nohint);
    free(f->producer);
    free(f->gin);
    free(f->drop);
    free(f->is64);
    free(f->bound64);
    free(f->first);
    free(f->taken.slot);
}

/* Value v is int64 in ONNX: marked when the graph records it
 * int32 or not at all (another dtype is left to ONNX's checker). */
static void ox_mark64(const ox_writer *w, const tio_graph *g, ox_fix *f, int64_t v) {
    if (v < 0) return;
    tio_dtype d = tio__ox_dtype(w, g, v);
    if (d == TIO_INT32 || d == TIO_DTYPE_INVALID) f->is64[v] = 1;
}

/* Which values ONNX types int64 (f->is64) and which int32 inputs a type
 * parameter binds to one (f->bound64): one pass in node order, which ONNX
 * and rten require to be topological (a value used before its node is
 * not followed). */
static void ox_bind64(const ox_writer *w, const tio_graph *g, ox_fix *f) {
    for (size_t j = 0; j < g->node_count; j++) {
        const tio_gnode *n = &g->nodes[j];
        if (!tio__ox_default_domain(n)) continue;
        for (size_t k = 0; k < n->output_count; k++)
            if (tio__onnx_output_int64(n->op, k)) ox_mark64(w, g, f, n->outputs[k]);
        uint32_t ins = 0, outs = 0;
        for (size_t t = 0; tio__onnx_type_group(n->op, t, &ins, &outs); t++) {
            bool any = false;
            for (size_t k = 0; k < n->input_count && !any; k++) {
                int64_t v = n->inputs[k];
                any = v >= 0 && tio__onnx_in_group(ins, k) &&
                      (f->is64[v] || tio__ox_dtype(w, g, v) == TIO_INT64);
            }
            if (!any) continue;
            for (size_t k = 0; k < n->input_count; k++) {
                int64_t v = n->inputs[k];
                if (v >= 0 && tio__onnx_in_group(ins, k) && !f->is64[v] &&
                    ox_is_int32(w, g, v))
                    f->bound64[f->first[j] + k] = 1;
            }
            for (size_t k = 0; k < n->output_count; k++)
                if (tio__onnx_in_group(outs, k)) ox_mark64(w, g, f, n->outputs[k]);
        }
    }
}

/* The type value v is written with in g's signature: a Loop body's
 * (inputs: iteration number, condition, carried values; outputs: condition,
 * ...) iteration number int64 and its conditions bool, where a graph raised
 * from another format recorded int32 (rten has neither type); else v's
 * own. */
static tio_dtype ox_signature_dtype(const ox_writer *w, const tio_graph *g, const tio_gvalue *v,
                                    bool loop_body) {
    if (w->faithful || !loop_body || v->tensor >= 0 || v->dtype != TIO_INT32) return v->dtype;
    if (g->input_count > 0 && v == &g->values[g->inputs[0]]) return TIO_INT64;
    if ((g->input_count > 1 && v == &g->values[g->inputs[1]]) ||
        (g->output_count > 0 && v == &g->values[g->outputs[0]]))
        return TIO_BOOL;
    return v->dtype;
}

static int ox_fix_plan(const ox_writer *w, const tio_graph *g, bool loop_body, ox_fix *f,
                       tio_error *err) {
    size_t nv = g->value_count ? g->value_count : 1;
    f->widen = calloc(nv, 1);
    f->cast = calloc(nv, 1);
    f->casted = calloc(nv, 1);
    f->nohint = calloc(nv, 1);
    f->producer = malloc(nv * sizeof *f->producer);
    f->gin = calloc(nv, 1);
    f->is64 = calloc(nv, 1);
    f->first = calloc(g->node_count + 1, sizeof *f->first);
    size_t ni = 0;
    for (size_t j = 0; f->first && j < g->node_count; j++) {
        f->first[j] = ni;
        ni += g->nodes[j].input_count;
    }
    f->bound64 = calloc(ni ? ni : 1, 1);
    f->taken.cap = 16;
    while (f->taken.cap < 2 * nv + 2) f->taken.cap *= 2;
    f->taken.slot = calloc(f->taken.cap, sizeof *f->taken.slot);
    for (size_t i = 0; f->taken.slot && i < g->value_count; i++)
        if (g->values[i].name) (void)ox_names_add(&f->taken, g->values[i].name);
    uint8_t *other = calloc(nv, 1);
    if (!f->widen || !f->cast || !f->casted || !f->nohint || !f->producer || !f->gin ||
        !f->is64 || !f->first || !f->bound64 || !f->taken.slot || !other) {
        free(other);
        return tio__nomem(err, OX_FMT);
    }
    for (size_t v = 0; v < nv; v++) f->producer[v] = -1;
    for (size_t i = 0; i < g->input_count; i++) f->gin[g->inputs[i]] = 1;
    for (size_t j = 0; j < g->node_count; j++)
        for (size_t k = 0; k < g->nodes[j].output_count; k++)
            if (g->nodes[j].outputs[k] >= 0) f->producer[g->nodes[j].outputs[k]] = (int64_t)j;
    if (w->faithful) {
        free(other);
        return TIO_OK;
    }
    /* a Loop body's iteration number is int64 (ox_signature_dtype) */
    if (g->input_count > 0 && loop_body) ox_mark64(w, g, f, g->inputs[0]);
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
            if (v < 0 || f->is64[v] || !ox_is_int32(w, g, v)) continue;
            if (ox_i64_use(w, f, g, j, k)) {
                f->cast[v] |= OX_TO_INT64;
            } else {
                other[v] = 1;
                /* a condition rten records as int32 (it has no bool) */
                if (tio__ox_default_domain(n) && tio__onnx_input_bool(n->op, k))
                    f->cast[v] |= OX_TO_BOOL;
            }
        }
    }
    for (size_t v = 0; v < g->value_count; v++)
        if ((f->cast[v] & OX_TO_INT64) && g->values[v].tensor >= 0 && !other[v] && !subgraphs) {
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
            if (v >= 0 && ox_is_int32(w, g, v) && (taint || f->is64[v]))
                f->nohint[v] = 1;
        }
    }
    return TIO_OK;
}

/* A name the writer makes, "<name><suffix>" ("x:int64", "node:axes"),
 * malloc'd: when a value of the graph already has it, ":2", ":3" ... is
 * added until none has. The same arguments give the same name (the Cast's
 * output and its readers agree). */
char *tio__ox_cast_name(const ox_fix *f, const char *name, const char *suffix) {
    size_t n = strlen(name) + strlen(suffix) + 24;
    char *s = malloc(n);
    if (!s) return NULL;
    snprintf(s, n, "%s%s", name, suffix);
    for (unsigned k = 2; ox_names_has(&f->taken, s) && k < UINT_MAX; k++)
        snprintf(s, n, "%s%s:%u", name, suffix, k);
    return s;
}

/* The Cast (OX_TO_*) that input k of node j reads, or 0. */
static unsigned ox_cast_use(const ox_writer *w, const ox_fix *f, const tio_graph *g, size_t j,
                            size_t k) {
    const tio_gnode *n = &g->nodes[j];
    int64_t v = k < n->input_count ? n->inputs[k] : -1;
    if (v < 0) return 0;
    if ((f->cast[v] & OX_TO_INT64) && ox_i64_use(w, f, g, j, k)) return OX_TO_INT64;
    if ((f->cast[v] & OX_TO_BOOL) && tio__ox_default_domain(n) && tio__onnx_input_bool(n->op, k))
        return OX_TO_BOOL;
    return 0;
}

/* A NodeProto Cast(in) -> out, named nm, to = dtype to. */
static int ox_put_cast_node(tio_pb_writer *pw, const char *in, const char *out, const char *nm,
                            tio_dtype to, tio_error *err) {
    int rc = tio__pb_begin(pw, 1, err);
    if (!rc) rc = tio__pb_put_string(pw, 1, in, err);
    if (!rc) rc = tio__pb_put_string(pw, 2, out, err);
    if (!rc) rc = tio__pb_put_string(pw, 3, nm, err);
    if (!rc) rc = tio__pb_put_string(pw, 4, "Cast", err);
    if (!rc) rc = tio__pb_begin(pw, 5, err);
    if (!rc) rc = tio__pb_put_string(pw, 1, "to", err);
    if (!rc) rc = tio__pb_put_int64(pw, 3, tio__onnx_code(to), err);
    if (!rc) rc = tio__pb_put_int64(pw, 20, 2, err); /* INT */
    if (!rc) rc = tio__pb_end(pw, err);
    if (!rc) rc = tio__pb_end(pw, err);
    return rc;
}

/* Cast(v) -> "<v>:int64", named "<v>:to-int64" (to bool: "<v>:bool",
 * "<v>:to-bool"). */
static int ox_put_cast(const ox_fix *f, tio_pb_writer *pw, const char *name, unsigned to,
                       tio_error *err) {
    bool b = to == OX_TO_BOOL;
    char *out = tio__ox_cast_name(f, name, b ? ":bool" : ":int64");
    char *nm = tio__ox_cast_name(f, name, b ? ":to-bool" : ":to-int64");
    int rc = out && nm ? TIO_OK : tio__nomem(err, OX_FMT);
    if (!rc) rc = ox_put_cast_node(pw, name, out, nm, b ? TIO_BOOL : TIO_INT64, err);
    free(out);
    free(nm);
    return rc;
}

/* The plan tensor of initializer value v of g when tio_save_options.cast
 * changed its dtype (it is stored so, under ox_weight_name, and a Cast node
 * gives v its declared type back), else NULL. */
static const tio_wtensor *ox_cast_weight(const ox_writer *w, const tio_graph *g, size_t v) {
    int64_t t = g->values[v].tensor;
    if (t < 0) return NULL;
    const tio_wtensor *wt = tio__plan_tensor(w->plan, (size_t)t);
    return wt && wt->cast ? wt : NULL;
}

/* The name a cast initializer is stored under: "<name>:<dtype>"
 * ("conv1.weight:float16"), clear of the graph's names. malloc'd. */
static char *ox_weight_name(const ox_fix *f, const tio_graph *g, size_t v, tio_dtype d) {
    char suffix[24];
    snprintf(suffix, sizeof suffix, ":%s", tio_dtype_name(d));
    return tio__ox_cast_name(f, g->values[v].name ? g->values[v].name : "", suffix);
}

/* Cast nodes giving g's cast initializers their declared types, before the
 * graph's own nodes (their inputs are initializers, so the order stays
 * topological): Cast("<w>:float16") -> "<w>", named "<w>:to-float32". */
static int ox_put_weight_casts(const ox_writer *w, tio_pb_writer *pw, const tio_graph *g,
                               const ox_fix *f, const ox_tv *tv, size_t ntv, tio_error *err) {
    int rc = TIO_OK;
    for (size_t i = 0; !rc && i < ntv; i++) {
        const tio_wtensor *wt = ox_cast_weight(w, g, tv[i].value);
        if (!wt) continue;
        tio_dtype from = wt->src->dtype;
        const char *name = g->values[tv[i].value].name ? g->values[tv[i].value].name : "";
        int orc = ox_cast_refusal(name, from, wt->dtype, w->opset, err);
        if (orc) return orc;
        char to[24];
        snprintf(to, sizeof to, ":to-%s", tio_dtype_name(from));
        char *in = ox_weight_name(f, g, tv[i].value, wt->dtype);
        char *nm = tio__ox_cast_name(f, name, to);
        rc = in && nm ? TIO_OK : tio__nomem(err, OX_FMT);
        if (!rc) rc = ox_put_cast_node(pw, in, name, nm, from, err);
        free(in);
        free(nm);
    }
    return rc;
}

/* Whether attribute a of n is left out: the written opset predates it and
 * it is at the value that means what the operator did before (an ONNX graph
 * written at its own opset keeps every attribute). */
static bool ox_drop_attr(const ox_writer *w, const tio_gnode *n, const tio_gattr *a) {
    if (!tio__ox_default_domain(n) || (w->faithful && !w->retarget)) return false;
    bool keep;
    int gone = tio__onnx_attr_gone(n->op, a, &keep);
    if (w->retarget && gone && w->opset >= gone && w->src_opset < gone) return keep;
    return tio__onnx_attr_from(n->op, a->name) > w->opset && tio__onnx_attr_needs(n->op, a) == 0;
}

static int ox_put_node(ox_writer *w, tio_pb_writer *pw, const tio_graph *g, ox_fix *f,
                       size_t j, tio_error *err) {
    const tio_gnode *n = &g->nodes[j];
    int rc = TIO_OK;
    for (size_t k = 0; !rc && k < n->input_count; k++) {
        int64_t v = n->inputs[k];
        unsigned to = ox_cast_use(w, f, g, j, k);
        if (to && !(f->casted[v] & to)) {
            rc = ox_put_cast(f, pw, g->values[v].name, to, err);
            f->casted[v] |= (uint8_t)to;
        }
    }
    ox_form fm;
    if (!rc) rc = tio__ox_form_plan(w, pw, g, f, n, &fm, err);
    else memset(&fm, 0, sizeof fm);
    if (!rc) rc = tio__pb_begin(pw, 1, err);
    for (size_t k = 0; !rc && k < fm.nin; k++) {
        /* the source input written here */
        int64_t sk = !fm.remap ? (int64_t)k : k < 8 ? fm.src[k] : -1;
        int64_t v = sk >= 0 && (size_t)sk < n->input_count ? n->inputs[sk] : -1;
        if (k < 8 && fm.added[k]) {
            rc = tio__pb_put_string(pw, 1, fm.added[k], err);
        } else if (v >= 0 && ox_cast_use(w, f, g, j, (size_t)sk)) {
            bool b = ox_cast_use(w, f, g, j, (size_t)sk) == OX_TO_BOOL;
            char *nm = tio__ox_cast_name(f, g->values[v].name, b ? ":bool" : ":int64");
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
    char why[200];
    for (size_t a = 0; !rc && a < n->attr_count; a++) {
        const tio_gattr *at = &n->attrs[a];
        if (w->from_tmfile && (tio__tmfile_storage_attr(at->name) ||
                               tio__tmfile_idle_attr(n->op, at->name)))
            continue;
        if (w->from_tmfile && tio__tmfile_private_attr(at->name))
            rc = tio__err(err, TIO_E_LOSSY, OX_FMT, -1,
                          "node '%s' (%s): attribute '%s' is a Tengine fact ONNX has no form "
                          "for; it would be lost",
                          n->name ? n->name : "", n->op, at->name);
        else if (w->from_tmfile && n->native_attrs < 1 &&
                 tio__tmfile_why_unraised(g, n, why, sizeof why))
            /* a param value the mapping table cannot raise: named */
            rc = tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, -1,
                          "node '%s' (%s, tmfile: %s): %s; the node has no ONNX form",
                          n->name ? n->name : "", n->op, n->native_op ? n->native_op : n->op,
                          why);
        else if (w->from_tmfile && n->native_attrs < 1)
            /* a node the mapping table did not raise: its attributes are
             * Tengine's param fields, not ONNX's */
            rc = tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, -1,
                          "node '%s' (%s, tmfile: %s): its Tengine param field '%s' has no ONNX "
                          "form (the node is not in tmfile's mapping table, "
                          "docs/formats/tmfile.md)",
                          n->name ? n->name : "", n->op, n->native_op ? n->native_op : n->op,
                          at->name);
        else if (!fm.skip[a] && !ox_drop_attr(w, n, at)) rc = ox_put_attr(w, pw, n, at, err);
    }
    for (size_t a = 0; !rc && a < fm.nextra; a++) rc = ox_put_attr(w, pw, n, &fm.extra[a], err);
    if (!rc && n->domain) rc = tio__pb_put_string(pw, 7, n->domain, err);
    if (!rc) rc = tio__pb_end(pw, err);
    tio__ox_form_free(&fm);
    return rc;
}

static int ox_put_graph(ox_writer *w, tio_pb_writer *pw, uint32_t number, const tio_graph *g,
                        tio_error *err) {
    bool loop_body = w->loop_body;
    w->loop_body = false;
    ox_fix f;
    memset(&f, 0, sizeof f);
    int rc = ox_fix_plan(w, g, loop_body, &f, err);
    if (!rc) rc = tio__ox_plan_drops(w, g, &f, err);
    /* Initializers in the order of their tensors (the reader's order), not
     * of their values: an initializer that gives a graph input its default
     * has the input's (earlier) value. */
    ox_tv *tv = NULL;
    size_t ntv = 0;
    if (!rc) rc = ox_initializers(g, &tv, &ntv, err);
    if (!rc) rc = tio__pb_begin(pw, number, err);
    if (!rc) rc = ox_put_weight_casts(w, pw, g, &f, tv, ntv, err);
    for (size_t j = 0; !rc && j < g->node_count; j++)
        if (!f.drop || !f.drop[j]) rc = ox_put_node(w, pw, g, &f, j, err);
    const char *gname = tio__kv_get(&g->meta, OX_META_GRAPH_NAME);
    if (!rc) rc = tio__pb_put_string(pw, 2, gname ? gname : (g->parent ? "body" : "main"), err);
    for (size_t i = 0; !rc && i < ntv; i++) {
        if (ox_is_coo(w, tv[i].tensor)) continue;
        const tio_wtensor *cw = ox_cast_weight(w, g, tv[i].value);
        char *cn = cw ? ox_weight_name(&f, g, tv[i].value, cw->dtype) : NULL;
        if (cw && !cn) rc = tio__nomem(err, OX_FMT);
        if (!rc)
            rc = ox_put_tensor(w, pw, 5, (size_t)tv[i].tensor,
                               cn ? cn : g->values[tv[i].value].name, true,
                               f.widen[tv[i].value], err);
        free(cn);
    }
    const char *gdoc = tio__kv_get(&g->meta, OX_META_GRAPH_DOC);
    if (!rc && gdoc) rc = tio__pb_put_string(pw, 10, gdoc, err);
    /* every graph input, a constant one too: an input whose initializer
     * gives its default (the caller may feed it) stays one; but not a cast
     * initializer's, which a Cast node now outputs */
    for (size_t k = 0; !rc && k < g->input_count + g->output_count; k++) {
        bool in = k < g->input_count;
        if (in && ox_cast_weight(w, g, (size_t)g->inputs[k])) continue;
        const tio_gvalue *src = &g->values[in ? g->inputs[k] : g->outputs[k - g->input_count]];
        tio_gvalue v = *src;
        v.dtype = ox_signature_dtype(w, g, src, loop_body);
        rc = ox_put_value_info(w, pw, in ? 11 : 12, &v, err);
    }
    /* value_info: typed runtime values that are neither inputs, outputs nor
     * captures (marked among those without a hint: f.nohint is not used after) */
    for (size_t k = 0; k < g->input_count; k++) f.nohint[g->inputs[k]] = 1;
    for (size_t k = 0; k < g->output_count; k++) f.nohint[g->outputs[k]] = 1;
    for (size_t k = 0; k < g->capture_count; k++) f.nohint[g->captures[k]] = 1;
    for (size_t i = 0; !rc && i < g->value_count; i++) {
        const tio_gvalue *v = &g->values[i];
        bool io = f.nohint[i];
        if (!io && v->tensor < 0 && v->name && (v->dtype != TIO_DTYPE_INVALID || v->type))
            rc = ox_put_value_info(w, pw, 13, v, err);
    }
    /* sparse initializers (COO tensors), last: field 15 */
    for (size_t i = 0; !rc && i < ntv; i++) {
        if (!ox_is_coo(w, tv[i].tensor)) continue;
        const tio_wtensor *cw = ox_cast_weight(w, g, tv[i].value);
        char *cn = cw ? ox_weight_name(&f, g, tv[i].value, cw->dtype) : NULL;
        if (cw && !cn) rc = tio__nomem(err, OX_FMT);
        if (!rc)
            rc = ox_put_sparse(w, pw, 15, (size_t)tv[i].tensor,
                               cn ? cn : g->values[tv[i].value].name, err);
        free(cn);
    }
    free(tv);
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
    /* IR 3 lists every initializer among the graph's inputs; a cast one is
     * stored under a name of its own that is not an input: IR 4 allows it */
    for (size_t i = 0; irv < 4 && i < tio__plan_count(w->plan); i++)
        if (tio__plan_tensor(w->plan, i)->cast) irv = 4;
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
    w->src_opset = ox_choose_opset(g);
    if (!w->retarget) w->opset = w->src_opset;
    w->faithful = g->native_format && strcmp(g->native_format, OX_FMT) == 0;
    w->from_tmfile = g->native_format && strcmp(g->native_format, "tmfile") == 0;
    if (!rc) rc = ox_put_graph(w, pw, 7, g, err);
    bool def = false;
    for (size_t i = 0; !rc && i < g->opset_count; i++) {
        rc = tio__pb_begin(pw, 8, err);
        if (!rc && g->opset_domains[i][0]) rc = tio__pb_put_string(pw, 1, g->opset_domains[i], err);
        if (!g->opset_domains[i][0]) def = true;
        if (!rc)
            rc = tio__pb_put_int64(pw, 2, g->opset_domains[i][0] ? g->opset_versions[i] : w->opset,
                                   err);
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

/* Appends to `list` (", "-separated, deduplicated) the default-domain op
 * types of g and its subgraphs that the opset lacks. */
static void ox_missing_ops(const tio_graph *g, int64_t opset, char *list, size_t size) {
    for (size_t j = 0; j < g->node_count; j++) {
        const tio_gnode *n = &g->nodes[j];
        for (size_t a = 0; a < n->attr_count; a++) {
            if (n->attrs[a].type == TIO_ATTR_GRAPH) ox_missing_ops(n->attrs[a].graph, opset, list, size);
            for (size_t k = 0; n->attrs[a].type == TIO_ATTR_GRAPHS && k < n->attrs[a].count; k++)
                ox_missing_ops(n->attrs[a].graphs[k], opset, list, size);
        }
        int removed;
        int since = tio__ox_default_domain(n) ? tio__onnx_op_range(n->op, &removed) : 1;
        if (!tio__ox_default_domain(n) || (opset >= since && (!removed || opset < removed))) continue;
        char item[160];
        if (opset < since) snprintf(item, sizeof item, "%.100s (from opset %d)", n->op, since);
        else snprintf(item, sizeof item, "%.100s (removed at opset %d)", n->op, removed);
        if (strstr(list, item)) continue;
        size_t len = strlen(list);
        if (len + strlen(item) + 3 < size)
            snprintf(list + len, size - len, "%s%s", len ? ", " : "", item);
    }
}

/* opset=N: in range, every operator and attribute of the graph exists. */
static int ox_opset_option(ox_writer *w, const char *opt, tio_error *err) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(opt, &end, 10);
    if (errno || !opt[0] || *end || v < TIO__ONNX_MIN_OPSET || v > TIO__ONNX_MAX_OPSET)
        return tio__err(err, TIO_E_ARGUMENT, OX_FMT, -1,
                        "opset '%.40s': expected a number from %d to %d", opt,
                        TIO__ONNX_MIN_OPSET, TIO__ONNX_MAX_OPSET);
    w->opset = v;
    w->retarget = true;
    const tio_graph *g = w->c->graph;
    char list[1024] = "";
    ox_missing_ops(g, v, list, sizeof list);
    if (list[0])
        return tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, -1,
                        "opset %lld does not have these operators of the graph: %s", v, list);
    int64_t need = ox_needed_opset(g);
    if (need > v)
        return tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, -1,
                        "the graph sets an attribute that came at opset %lld (not at its "
                        "default): it cannot be written at opset %lld",
                        (long long)need, v);
    return TIO_OK;
}

int tio__onnx_write(tio_write_plan *p, tio_sink *s, tio_error *err) {
    ox_writer w;
    memset(&w, 0, sizeof w);
    w.plan = p;
    w.c = tio__plan_container(p);
    w.ext_name = tio__plan_option(p, "external_data");
    const char *opset = tio__plan_option(p, "opset");
    if (opset) {
        int orc = ox_opset_option(&w, opset, err);
        if (orc) return orc;
    }
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
