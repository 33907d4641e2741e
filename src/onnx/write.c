/* Writing a container's graph as an ONNX ModelProto: deterministic, every
 * tensor as raw_data referenced into the sink (not copied). */
#include "graph/graph.h"
#include "graph/types.h"
#include "onnx/onnx.h"
#include "protobuf/pb.h"
#include "tmfile/tmfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
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
    /* opset=N was asked: nodes are written in that opset's form (attributes
     * to inputs and back, Softmax's axis), from src_opset's */
    bool retarget;
    int64_t src_opset;
    /* the graph was read from a tmfile: its tm2_* storage attributes are
     * left out, its other tmfile facts refused */
    bool from_tmfile;
    /* set by ox_put_attr for the graph it writes next: a Loop's body (its
     * signature's types, ox_signature_dtype) */
    bool loop_body;
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
            int64_t since = 0, sub = 0;
            if (ox_default_domain(n)) since = tio__onnx_attr_needs(n->op, at);
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
typedef struct ox_names {
    const char **slot; /* open addressing, NULL = empty */
    size_t cap;
    const struct ox_names *parent;
} ox_names;

static size_t ox_name_hash(const char *s) {
    size_t h = 1469598103934665603u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static bool ox_names_has(const ox_names *ns, const char *name) {
    for (; ns; ns = ns->parent)
        for (size_t i = ox_name_hash(name) & (ns->cap - 1); ns->slot[i]; i = (i + 1) & (ns->cap - 1))
            if (strcmp(ns->slot[i], name) == 0) return true;
    return false;
}

/* Defines `name` in ns (not in its parents); false when it already is. */
static bool ox_names_add(ox_names *ns, const char *name) {
    size_t i = ox_name_hash(name) & (ns->cap - 1);
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

int tio__onnx_put_tensor(tio_pb_writer *pw, tio_write_plan *p, size_t i, const char *name,
                         tio_error *err) {
    const tio_wtensor *t = tio__plan_tensor(p, i);
    if (t->dtype == TIO_STRING) return ox_put_strings(pw, p, i, name ? name : t->name, err);
    int rc = ox_put_tensor_head(pw, t, tio__onnx_code(t->dtype), name ? name : t->name, err);
    const uint8_t *data = NULL;
    if (!rc && !tio__pb_sizing(pw)) rc = tio__plan_data(p, i, &data, NULL, err);
    /* referenced when it is the container's data; the plan's scratch (a
     * converted tensor) is only valid until the next call: copy it */
    bool ref = data && data == tio_tensor_data(t->src);
    if (!rc) rc = tio__pb_put_len(pw, 9, data, t->nbytes, ref, err);
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
    if (!widen && !(initializer && w->ext_name && t->dtype != TIO_STRING)) {
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
    if (!rc) rc = tio__pb_put_len(pw, 9, tio_tensor_data(src), (size_t)nnz * es, true, err);
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
        w->loop_body = ox_default_domain(n) && strcmp(n->op, "Loop") == 0 &&
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
            rc = ox_put_tensor(w, pw, 10, (size_t)a->ints[k], NULL, false, false, err);
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
typedef struct ox_fix {
    uint8_t *widen;  /* an int32 constant whose every use requires int64: written as int64 */
    uint8_t *cast;   /* an int32 value some int64-only input uses (OX_TO_INT64) or a
                        condition (OX_TO_BOOL): a Cast first */
    uint8_t *casted; /* those Casts written (in this pass) */
    uint8_t *nohint; /* its recorded int32 type may not be ONNX's: no value_info */
    int64_t *producer; /* the node that outputs the value, or -1 */
    /* ONNX types it int64 whatever the graph records (int32, or nothing):
     * an always-int64 output (Shape), or one that a type parameter binds
     * to such a value (Gather of a Shape, Add of that, ...) */
    uint8_t *is64;
    /* per node input, from first[j]: an int32 value that a type parameter
     * binds to an int64 one (Add's B when A is a Shape's): int64 there */
    uint8_t *bound64;
    size_t *first;
    /* the graph's value names: the names the writer makes (a Cast's output,
     * an attribute's Constant) are kept clear of them */
    ox_names taken;
    /* per node: a Constant whose every use becomes an attribute at the
     * written opset: not written (NULL: none) */
    uint8_t *drop;
} ox_fix;

/* ox_fix.cast bits: the Casts an int32 value gets */
enum { OX_TO_INT64 = 1, OX_TO_BOOL = 2 };

static bool ox_i64_use(const ox_writer *w, const ox_fix *f, const tio_graph *g, size_t j,
                       size_t k) {
    const tio_gnode *n = &g->nodes[j];
    if (!ox_default_domain(n)) return false;
    return tio__onnx_input_int64(n->op, k, w->opset) || f->bound64[f->first[j] + k];
}

/* Value v's recorded element type. A subgraph's capture has none of its
 * own: it is the type of the enclosing graph's value of that name. */
static tio_dtype ox_dtype(const ox_writer *w, const tio_graph *g, int64_t v) {
    for (;;) { /* up the parents, to the root at most */
        const tio_gvalue *gv = &g->values[v];
        if (gv->tensor >= 0) return tio__plan_tensor(w->plan, (size_t)gv->tensor)->dtype;
        if (gv->dtype != TIO_DTYPE_INVALID || !gv->name || !g->parent) return gv->dtype;
        bool captured = false;
        for (size_t k = 0; k < g->capture_count && !captured; k++) captured = g->captures[k] == v;
        if (!captured) return gv->dtype;
        int64_t outer = tio_graph_find_value(g->parent, gv->name);
        if (outer < 0) return gv->dtype;
        g = g->parent;
        v = outer;
    }
}

static bool ox_is_int32(const ox_writer *w, const tio_graph *g, int64_t v) {
    return ox_dtype(w, g, v) == TIO_INT32;
}

static void ox_fix_free(ox_fix *f) {
    free(f->widen);
    free(f->cast);
    free(f->casted);
    free(f->nohint);
    free(f->producer);
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
    tio_dtype d = ox_dtype(w, g, v);
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
                      (f->is64[v] || ox_dtype(w, g, v) == TIO_INT64);
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
    if (!f->widen || !f->cast || !f->casted || !f->nohint || !f->producer || !f->is64 ||
        !f->first || !f->bound64 || !f->taken.slot || !other) {
        free(other);
        return tio__nomem(err, OX_FMT);
    }
    for (size_t v = 0; v < nv; v++) f->producer[v] = -1;
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
                if (ox_default_domain(n) && tio__onnx_input_bool(n->op, k))
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
static char *ox_cast_name(const ox_fix *f, const char *name, const char *suffix) {
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
    if ((f->cast[v] & OX_TO_BOOL) && ox_default_domain(n) && tio__onnx_input_bool(n->op, k))
        return OX_TO_BOOL;
    return 0;
}

/* Cast(v) -> "<v>:int64", named "<v>:to-int64" (to bool: "<v>:bool",
 * "<v>:to-bool"). */
static int ox_put_cast(const ox_fix *f, tio_pb_writer *pw, const char *name, unsigned to,
                       tio_error *err) {
    bool b = to == OX_TO_BOOL;
    char *out = ox_cast_name(f, name, b ? ":bool" : ":int64");
    char *nm = ox_cast_name(f, name, b ? ":to-bool" : ":to-int64");
    int rc = out && nm ? TIO_OK : tio__nomem(err, OX_FMT);
    if (!rc) rc = tio__pb_begin(pw, 1, err);
    if (!rc) rc = tio__pb_put_string(pw, 1, name, err);
    if (!rc) rc = tio__pb_put_string(pw, 2, out, err);
    if (!rc) rc = tio__pb_put_string(pw, 3, nm, err);
    if (!rc) rc = tio__pb_put_string(pw, 4, "Cast", err);
    if (!rc) rc = tio__pb_begin(pw, 5, err);
    if (!rc) rc = tio__pb_put_string(pw, 1, "to", err);
    if (!rc) rc = tio__pb_put_int64(pw, 3, tio__onnx_code(b ? TIO_BOOL : TIO_INT64), err);
    if (!rc) rc = tio__pb_put_int64(pw, 20, 2, err); /* INT */
    if (!rc) rc = tio__pb_end(pw, err);
    if (!rc) rc = tio__pb_end(pw, err);
    free(out);
    free(nm);
    return rc;
}

/* Whether attribute a of n is left out: the written opset predates it and
 * it is at the value that means what the operator did before (an ONNX graph
 * written at its own opset keeps every attribute). */
static bool ox_drop_attr(const ox_writer *w, const tio_gnode *n, const tio_gattr *a) {
    if (!ox_default_domain(n) || (w->faithful && !w->retarget)) return false;
    bool keep;
    int gone = tio__onnx_attr_gone(n->op, a, &keep);
    if (w->retarget && gone && w->opset >= gone && w->src_opset < gone) return keep;
    return tio__onnx_attr_from(n->op, a->name) > w->opset && tio__onnx_attr_needs(n->op, a) == 0;
}

/* ------------------------------------------- writing at another opset */

/* A node rewritten for the written opset: inputs cut (an attribute now) or
 * added (a Constant node's output), attributes left out or added. */
typedef struct ox_form {
    size_t nin;           /* inputs written */
    uint8_t cut[8];       /* input k (< 8) is an attribute at this opset */
    char *added[8];       /* input k is this Constant's output (owned) */
    uint8_t *skip;        /* per attribute of the node: not written */
    tio_gattr extra[8];   /* attributes written after the node's own */
    size_t nextra;
    bool remap;           /* inputs moved: written input k is source input src[k] */
    int8_t src[8];        /* (-1: none, "" unless added[k]) */
} ox_form;

static void ox_form_free(ox_form *fm) {
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
    if (v < 0) return -1;
    for (size_t i = 0; i < g->input_count; i++)
        if (g->inputs[i] == v) return -1;
    if (g->values[v].tensor >= 0) return g->values[v].tensor;
    int64_t j = f->producer[v];
    if (j < 0 || !ox_default_domain(&g->nodes[j]) || strcmp(g->nodes[j].op, "Constant") != 0)
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

/* Value v's element type: recorded, or followed up through operators that
 * keep their input's type; TIO_DTYPE_INVALID when not known. */
static tio_dtype ox_type_of(const ox_writer *w, const tio_graph *g, const ox_fix *f, int64_t v) {
    for (size_t steps = 0; v >= 0 && steps <= g->node_count; steps++) {
        tio_dtype d = ox_dtype(w, g, v);
        if (d != TIO_DTYPE_INVALID) return d;
        int64_t j = f->producer[v];
        if (j < 0 || !ox_default_domain(&g->nodes[j]) || !ox_keeps_type(g->nodes[j].op) ||
            !g->nodes[j].input_count)
            return TIO_DTYPE_INVALID;
        v = g->nodes[j].inputs[0];
    }
    return TIO_DTYPE_INVALID;
}

/* The rank of value v when known: recorded, or the output of a Flatten (2)
 * or of a Reshape to a constant shape; -1 otherwise. */
static int64_t ox_rank(const ox_writer *w, const tio_graph *g, const ox_fix *f, int64_t v) {
    if (v < 0) return -1;
    if (g->values[v].rank >= 0) return g->values[v].rank;
    int64_t j = f->producer[v];
    if (j < 0 || !ox_default_domain(&g->nodes[j])) return -1;
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
 * - Add, Sub, Mul, Div: int8, uint8, int16 and uint16 came at 14, bfloat16 at
 *   13; onnxruntime refuses them below. */
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
    if (strcmp(op, "Add") == 0 || strcmp(op, "Sub") == 0 || strcmp(op, "Mul") == 0 ||
        strcmp(op, "Div") == 0) {
        tio_dtype d = ox_type_of(w, g, f, n->input_count ? n->inputs[0] : -1);
        bool small = d == TIO_INT8 || d == TIO_UINT8 || d == TIO_INT16 || d == TIO_UINT16;
        if ((small && w->opset < 14) || (d == TIO_BFLOAT16 && w->opset < 13)) {
            char why[160];
            snprintf(why, sizeof why, "%s on %s came at opset %d", op, tio_dtype_name(d),
                     small ? 14 : 13);
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
            fm->added[k] = ox_cast_name(f, ox_node_label(g, n), sfx[k]);
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
            fm->added[1] = ox_cast_name(f, ox_node_label(g, n), ":roi");
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

static int ox_form_plan(ox_writer *w, tio_pb_writer *pw, const tio_graph *g, const ox_fix *f,
                        const tio_gnode *n, ox_form *fm, tio_error *err) {
    memset(fm, 0, sizeof *fm);
    fm->nin = n->input_count;
    fm->skip = calloc(n->attr_count ? n->attr_count : 1, 1);
    if (!fm->skip) return tio__nomem(err, OX_FMT);
    if (!w->retarget || !ox_default_domain(n)) return TIO_OK;
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
            fm->added[e->input] = ox_cast_name(f, ox_node_label(g, n), suffix);
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
    if (!w->retarget || !ox_default_domain(n)) return false;
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
static int ox_plan_drops(const ox_writer *w, const tio_graph *g, ox_fix *f, tio_error *err) {
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
        if (!ox_default_domain(n) || strcmp(n->op, "Constant") != 0 || n->output_count != 1 ||
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
    if (!rc) rc = ox_form_plan(w, pw, g, f, n, &fm, err);
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
            char *nm = ox_cast_name(f, g->values[v].name, b ? ":bool" : ":int64");
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
    ox_form_free(&fm);
    return rc;
}

static int ox_put_graph(ox_writer *w, tio_pb_writer *pw, uint32_t number, const tio_graph *g,
                        tio_error *err) {
    bool loop_body = w->loop_body;
    w->loop_body = false;
    ox_fix f;
    memset(&f, 0, sizeof f);
    int rc = ox_fix_plan(w, g, loop_body, &f, err);
    if (!rc) rc = ox_plan_drops(w, g, &f, err);
    if (!rc) rc = tio__pb_begin(pw, number, err);
    for (size_t j = 0; !rc && j < g->node_count; j++)
        if (!f.drop || !f.drop[j]) rc = ox_put_node(w, pw, g, &f, j, err);
    const char *gname = tio__kv_get(&g->meta, OX_META_GRAPH_NAME);
    if (!rc) rc = tio__pb_put_string(pw, 2, gname ? gname : (g->parent ? "body" : "main"), err);
    /* Initializers in the order of their tensors (the reader's order), not
     * of their values: an initializer that gives a graph input its default
     * has the input's (earlier) value. */
    ox_tv *tv = NULL;
    size_t ntv = 0;
    if (!rc) rc = ox_initializers(g, &tv, &ntv, err);
    for (size_t i = 0; !rc && i < ntv; i++)
        if (!ox_is_coo(w, tv[i].tensor))
            rc = ox_put_tensor(w, pw, 5, (size_t)tv[i].tensor, g->values[tv[i].value].name,
                               true, f.widen[tv[i].value], err);
    const char *gdoc = tio__kv_get(&g->meta, OX_META_GRAPH_DOC);
    if (!rc && gdoc) rc = tio__pb_put_string(pw, 10, gdoc, err);
    /* every graph input, a constant one too: an input whose initializer
     * gives its default (the caller may feed it) stays one */
    for (size_t k = 0; !rc && k < g->input_count + g->output_count; k++) {
        bool in = k < g->input_count;
        const tio_gvalue *src = &g->values[in ? g->inputs[k] : g->outputs[k - g->input_count]];
        tio_gvalue v = *src;
        v.dtype = ox_signature_dtype(w, g, src, loop_body);
        rc = ox_put_value_info(w, pw, in ? 11 : 12, &v, err);
    }
    /* value_info: typed runtime values that are neither inputs nor outputs */
    for (size_t i = 0; !rc && i < g->value_count; i++) {
        const tio_gvalue *v = &g->values[i];
        bool io = f.nohint[i];
        for (size_t k = 0; k < g->input_count && !io; k++) io = g->inputs[k] == (int64_t)i;
        for (size_t k = 0; k < g->output_count && !io; k++) io = g->outputs[k] == (int64_t)i;
        for (size_t k = 0; k < g->capture_count && !io; k++) io = g->captures[k] == (int64_t)i;
        if (!io && v->tensor < 0 && v->name && (v->dtype != TIO_DTYPE_INVALID || v->type))
            rc = ox_put_value_info(w, pw, 13, v, err);
    }
    /* sparse initializers (COO tensors), last: field 15 */
    for (size_t i = 0; !rc && i < ntv; i++)
        if (ox_is_coo(w, tv[i].tensor))
            rc = ox_put_sparse(w, pw, 15, (size_t)tv[i].tensor, g->values[tv[i].value].name,
                               err);
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
        int since = ox_default_domain(n) ? tio__onnx_op_range(n->op, &removed) : 1;
        if (!ox_default_domain(n) || (opset >= since && (!removed || opset < removed))) continue;
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
