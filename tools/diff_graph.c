/* tensio diff: the graph part — two model graphs compared node by node. */
#include "diff_graph.h"

#include "cli_sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Records one difference: "WHERE: what". */
static void note(diff_graph_result *r, const char *where, const char *fmt, ...)
    CLI_PRINTF(3, 4);
static void note(diff_graph_result *r, const char *where, const char *fmt, ...) {
    r->count++;
    if (r->nfirst >= DIFF_GRAPH_KEEP) return;
    va_list ap;
    va_start(ap, fmt);
    char *what = cli_vstrdup_printf(fmt, ap);
    va_end(ap);
    char *line = what ? cli_strdup_printf("%s%s%s", where, *where ? ": " : "", what) : NULL;
    free(what);
    if (!line) {
        r->nomem = 1;
        return;
    }
    r->first[r->nfirst++] = line;
}

void diff_graph_free(diff_graph_result *r) {
    for (size_t i = 0; i < r->nfirst; i++) free(r->first[i]);
    memset(r, 0, sizeof *r);
}

/* --------------------------------------------------------------- text */

/* Where a value comes from, so that two graphs compare by structure, not
 * by the names of their intermediate values (a converter may rename them):
 * graph input k, output j of node i, a constant (by its tensor's name), or
 * else its name. */
typedef struct vsrc {
    int kind; /* 0: by name, 1: graph input, 2: node output */
    size_t i, j;
} vsrc;

static vsrc *value_sources(const tio_graph *g) {
    size_t nv = tio_graph_value_count(g), nn = tio_graph_node_count(g);
    vsrc *s = calloc(nv ? nv : 1, sizeof *s);
    if (!s) return NULL;
    const int64_t *in = tio_graph_inputs(g);
    for (size_t k = tio_graph_input_count(g); k-- > 0;) {
        if (in[k] >= 0 && (size_t)in[k] < nv) {
            s[in[k]].kind = 1;
            s[in[k]].i = k;
        }
    }
    for (size_t i = 0; i < nn; i++) {
        tio_node_info ni;
        if (tio_graph_node(g, i, &ni) != TIO_OK) continue;
        for (size_t j = 0; j < ni.output_count; j++) {
            int64_t v = ni.outputs[j];
            if (v < 0 || (size_t)v >= nv || s[v].kind) continue;
            s[v].kind = 2;
            s[v].i = i;
            s[v].j = j;
        }
    }
    return s;
}

static void gs_value(cli_sbuf *b, const tio_container *c, const tio_graph *g, const vsrc *src,
                     int64_t v) {
    tio_value_info vi;
    if (v < 0) {
        cli_sbuf_printf(b, "-");
        return;
    }
    if (tio_graph_value(g, (size_t)v, &vi) != TIO_OK) {
        cli_sbuf_printf(b, "?");
        return;
    }
    if (vi.tensor >= 0) {
        const char *tn = tio_tensor_name(tio_container_tensor(c, (size_t)vi.tensor));
        if (tn)
            cli_sbuf_printf(b, "const %s", tn);
        else
            cli_sbuf_printf(b, "const #%lld", (long long)vi.tensor);
    } else if (src && src[v].kind == 1) {
        cli_sbuf_printf(b, "input %zu", src[v].i);
    } else if (src && src[v].kind == 2) {
        cli_sbuf_printf(b, "node %zu:%zu", src[v].i, src[v].j);
    } else if (vi.name) {
        cli_sbuf_printf(b, "%s", vi.name);
    } else {
        cli_sbuf_printf(b, "#%lld", (long long)v);
    }
}

/* A graph input's or output's name ("#i" when unnamed). */
static void gs_name(cli_sbuf *b, const tio_graph *g, int64_t v) {
    tio_value_info vi;
    if (v < 0)
        cli_sbuf_printf(b, "-");
    else if (tio_graph_value(g, (size_t)v, &vi) == TIO_OK && vi.name)
        cli_sbuf_printf(b, "%s", vi.name);
    else
        cli_sbuf_printf(b, "#%lld", (long long)v);
}

/* "float32 [1, 3, batch, ?]" of a value. */
static void gs_type(cli_sbuf *b, const tio_graph *g, int64_t v) {
    tio_value_info vi;
    if (v < 0 || tio_graph_value(g, (size_t)v, &vi) != TIO_OK) {
        cli_sbuf_printf(b, "-");
        return;
    }
    if (vi.type) { /* canonical text: equal types print equal */
        cli_sbuf_printf(b, "%s", vi.type);
        return;
    }
    const char *dt = tio_dtype_name(vi.dtype);
    cli_sbuf_printf(b, "%s", dt ? dt : "?");
    if (vi.rank < 0) return;
    cli_sbuf_printf(b, " [");
    for (int64_t k = 0; k < vi.rank; k++) {
        const tio_dim *d = &vi.dims[k];
        if (d->name)
            cli_sbuf_printf(b, "%s%s", k ? ", " : "", d->name);
        else if (d->value < 0)
            cli_sbuf_printf(b, "%s?", k ? ", " : "");
        else
            cli_sbuf_printf(b, "%s%lld", k ? ", " : "", (long long)d->value);
    }
    cli_sbuf_printf(b, "]");
}

static void gs_tensor(cli_sbuf *b, const tio_container *c, int64_t index) {
    const tio_tensor *t = index >= 0 ? tio_container_tensor(c, (size_t)index) : NULL;
    char *shape = t ? cli_shape_string(t) : NULL;
    const char *dt = t ? tio_dtype_name(tio_tensor_dtype(t)) : NULL;
    cli_sbuf_printf(b, "tensor %s %s", dt ? dt : "?", shape ? shape : "?");
    free(shape);
}

/* An attribute's type and value as text; subgraphs as their size only (they
 * are compared on their own). */
static char *attr_text(const tio_container *c, const tio_attr *a) {
    cli_sbuf b = {0};
    switch (a->type) {
    case TIO_ATTR_INT:
        cli_sbuf_printf(&b, "%lld", (long long)a->i);
        break;
    case TIO_ATTR_FLOAT: cli_sbuf_printf(&b, "%.9g", a->f); break;
    case TIO_ATTR_STRING: cli_sbuf_printf(&b, "\"%s\"", a->s ? a->s : ""); break;
    case TIO_ATTR_TYPE: cli_sbuf_printf(&b, "%s", a->s ? a->s : ""); break;
    case TIO_ATTR_INTS:
    case TIO_ATTR_FLOATS:
    case TIO_ATTR_STRINGS:
    case TIO_ATTR_TENSORS:
        cli_sbuf_printf(&b, "[");
        for (size_t k = 0; k < a->count; k++) {
            const char *sep = k ? ", " : "";
            if (a->type == TIO_ATTR_INTS)
                cli_sbuf_printf(&b, "%s%lld", sep, (long long)a->ints[k]);
            else if (a->type == TIO_ATTR_FLOATS)
                cli_sbuf_printf(&b, "%s%.9g", sep, a->floats[k]);
            else if (a->type == TIO_ATTR_STRINGS)
                cli_sbuf_printf(&b, "%s\"%s\"", sep, a->strings[k] ? a->strings[k] : "");
            else {
                cli_sbuf_printf(&b, "%s", sep);
                gs_tensor(&b, c, a->tensors[k]);
            }
        }
        cli_sbuf_printf(&b, "]");
        break;
    case TIO_ATTR_TENSOR: gs_tensor(&b, c, a->i); break;
    case TIO_ATTR_GRAPH: cli_sbuf_printf(&b, "graph"); break;
    case TIO_ATTR_GRAPHS: cli_sbuf_printf(&b, "%zu graphs", a->count); break;
    }
    if (!b.s) cli_sbuf_printf(&b, "%s", "");
    return b.s;
}

/* ------------------------------------------------------------ compare */

typedef struct gpair {
    const tio_container *ca, *cb;
    const tio_graph *a, *b;
    const vsrc *sa, *sb; /* value_sources of a and b */
    const char *where; /* "" for the root graph, else "node 3 (If) then_branch" */
} gpair;

/* Two value lists (graph inputs, outputs): names and types. */
static void compare_list(const gpair *p, const char *what, const int64_t *la, size_t na,
                         const int64_t *lb, size_t nb, diff_graph_result *r) {
    if (na != nb) note(r, p->where, "%zu %s vs %zu", na, what, nb);
    for (size_t k = 0; k < na && k < nb; k++) {
        cli_sbuf x = {0}, y = {0};
        gs_name(&x, p->a, la[k]);
        cli_sbuf_printf(&x, " ");
        gs_type(&x, p->a, la[k]);
        gs_name(&y, p->b, lb[k]);
        cli_sbuf_printf(&y, " ");
        gs_type(&y, p->b, lb[k]);
        if (!x.s || !y.s)
            r->nomem = 1;
        else if (strcmp(x.s, y.s) != 0)
            note(r, p->where, "%s %zu: %s vs %s", what, k, x.s, y.s);
        free(x.s);
        free(y.s);
    }
}

/* A node's inputs or outputs by value name. */
static void compare_values(const gpair *p, const char *node, const char *what,
                           const int64_t *va, size_t na, const int64_t *vb, size_t nb,
                           diff_graph_result *r) {
    cli_sbuf x = {0}, y = {0};
    for (size_t k = 0; k < na; k++) {
        cli_sbuf_printf(&x, "%s", k ? ", " : "");
        gs_value(&x, p->ca, p->a, p->sa, va[k]);
    }
    for (size_t k = 0; k < nb; k++) {
        cli_sbuf_printf(&y, "%s", k ? ", " : "");
        gs_value(&y, p->cb, p->b, p->sb, vb[k]);
    }
    if (!x.s) cli_sbuf_printf(&x, "%s", "");
    if (!y.s) cli_sbuf_printf(&y, "%s", "");
    if (!x.s || !y.s)
        r->nomem = 1;
    else if (strcmp(x.s, y.s) != 0)
        note(r, node, "%s (%s) vs (%s)", what, x.s, y.s);
    free(x.s);
    free(y.s);
}

static void compare_graphs(const gpair *p, diff_graph_result *r);

/* The subgraphs of one attribute present in both nodes. */
static void compare_subgraphs(const gpair *p, const char *node, const tio_attr *x,
                              const tio_attr *y, diff_graph_result *r) {
    size_t nx = x->type == TIO_ATTR_GRAPH ? 1 : x->count;
    size_t ny = y->type == TIO_ATTR_GRAPH ? 1 : y->count;
    for (size_t k = 0; k < nx && k < ny; k++) {
        char *where = nx > 1 ? cli_strdup_printf("%s %s[%zu]", node, x->name, k)
                             : cli_strdup_printf("%s %s", node, x->name);
        if (!where) {
            r->nomem = 1;
            return;
        }
        gpair sub = {p->ca, p->cb, x->type == TIO_ATTR_GRAPH ? x->graph : x->graphs[k],
                     y->type == TIO_ATTR_GRAPH ? y->graph : y->graphs[k], NULL, NULL, where};
        compare_graphs(&sub, r);
        free(where);
    }
}

/* ONNX defaults: an attribute one side writes and the other leaves out is no
 * difference when it holds the value ONNX takes in its absence (converters
 * differ in which they write). op NULL: any operator. */
typedef struct attr_default {
    const char *op, *name;
    tio_attr_type type;
    double num;        /* INT, FLOAT; INTS: every element */
    const char *str;   /* STRING */
} attr_default;

static const attr_default onnx_defaults[] = {
    {NULL, "auto_pad", TIO_ATTR_STRING, 0, "NOTSET"},
    {NULL, "dilations", TIO_ATTR_INTS, 1, NULL},
    {NULL, "strides", TIO_ATTR_INTS, 1, NULL},
    {NULL, "pads", TIO_ATTR_INTS, 0, NULL},
    {NULL, "group", TIO_ATTR_INT, 1, NULL},
    {NULL, "ceil_mode", TIO_ATTR_INT, 0, NULL},
    {NULL, "storage_order", TIO_ATTR_INT, 0, NULL},
    {NULL, "count_include_pad", TIO_ATTR_INT, 0, NULL},
    {NULL, "allowzero", TIO_ATTR_INT, 0, NULL},
    {NULL, "keepdims", TIO_ATTR_INT, 1, NULL},
    {NULL, "noop_with_empty_axes", TIO_ATTR_INT, 0, NULL},
    {NULL, "select_last_index", TIO_ATTR_INT, 0, NULL},
    {"Gemm", "transA", TIO_ATTR_INT, 0, NULL},
    {"Gemm", "transB", TIO_ATTR_INT, 0, NULL},
    {"Gemm", "alpha", TIO_ATTR_FLOAT, 1.0, NULL},
    {"Gemm", "beta", TIO_ATTR_FLOAT, 1.0, NULL},
    {"QuantizeLinear", "axis", TIO_ATTR_INT, 1, NULL},
    {"DequantizeLinear", "axis", TIO_ATTR_INT, 1, NULL},
    {"Flatten", "axis", TIO_ATTR_INT, 1, NULL},
    {"Gather", "axis", TIO_ATTR_INT, 0, NULL},
    {"Split", "axis", TIO_ATTR_INT, 0, NULL},
    {"LeakyRelu", "alpha", TIO_ATTR_FLOAT, 0.01, NULL},
    {"Elu", "alpha", TIO_ATTR_FLOAT, 1.0, NULL},
    {"BatchNormalization", "epsilon", TIO_ATTR_FLOAT, 1e-5, NULL},
    {"BatchNormalization", "momentum", TIO_ATTR_FLOAT, 0.9, NULL},
    {"InstanceNormalization", "epsilon", TIO_ATTR_FLOAT, 1e-5, NULL},
    {"LayerNormalization", "axis", TIO_ATTR_INT, -1, NULL},
    {"LayerNormalization", "epsilon", TIO_ATTR_FLOAT, 1e-5, NULL},
    {"Pad", "mode", TIO_ATTR_STRING, 0, "constant"},
    {"Resize", "mode", TIO_ATTR_STRING, 0, "nearest"},
    {"TopK", "axis", TIO_ATTR_INT, -1, NULL},
    {"TopK", "largest", TIO_ATTR_INT, 1, NULL},
    {"TopK", "sorted", TIO_ATTR_INT, 1, NULL},
};

int diff_graph_is_default(const tio_graph *g, const tio_node_info *n, const tio_attr *x) {
    if (strcmp(x->name, "kernel_shape") == 0 && x->type == TIO_ATTR_INTS && n->input_count > 1 &&
        n->inputs[1] >= 0 && strstr(n->op, "Conv")) {
        tio_value_info w;
        if (tio_graph_value(g, (size_t)n->inputs[1], &w) != TIO_OK || w.rank < 2 ||
            (uint64_t)w.rank - 2 != x->count)
            return 0;
        for (size_t k = 0; k < x->count; k++)
            if (w.dims[k + 2].name || w.dims[k + 2].value != x->ints[k]) return 0;
        return 1;
    }
    for (size_t d = 0; d < sizeof onnx_defaults / sizeof onnx_defaults[0]; d++) {
        const attr_default *e = &onnx_defaults[d];
        if (strcmp(e->name, x->name) != 0 || (e->op && strcmp(e->op, n->op) != 0) ||
            e->type != x->type)
            continue;
        switch (x->type) {
        case TIO_ATTR_INT: return (double)x->i == e->num;
        case TIO_ATTR_FLOAT: return (float)x->f == (float)e->num;
        case TIO_ATTR_STRING: return x->s && strcmp(x->s, e->str) == 0;
        case TIO_ATTR_INTS:
            for (size_t k = 0; k < x->count; k++)
                if ((double)x->ints[k] != e->num) return 0;
            return 1;
        default: return 0;
        }
    }
    return 0;
}

/* An attribute only one node has: a difference unless it is the default. */
static void only_one(const tio_container *c, const tio_graph *g, const tio_node_info *n,
                     const char *node, const tio_attr *x, const char *side,
                     diff_graph_result *r) {
    if (diff_graph_is_default(g, n, x)) {
        r->defaults++;
        return;
    }
    char *tx = attr_text(c, x);
    note(r, node, "attribute %s = %s only in %s", x->name, tx ? tx : "?", side);
    free(tx);
}

int diff_named_cmp(const void *x, const void *y) {
    const diff_named *a = x, *b = y;
    int c = strcmp(a->name, b->name);
    return c ? c : (a->index > b->index) - (a->index < b->index);
}

size_t diff_named_first(const diff_named *sorted, size_t n, const char *name) {
    size_t lo = 0, hi = n; /* the first entry not below name */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(sorted[mid].name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && strcmp(sorted[lo].name, name) == 0 ? lo : n;
}

/* Node i's count attributes sorted by name (NULL: none, or no memory: then
 * attr_lookup searches with tio_graph_find_attr, which goes through them in
 * order; a lookup per attribute of the other node that way made a node of
 * 20,000 attributes, 780 KB of ONNX, take 1 s to compare). */
static diff_named *attr_index(const tio_graph *g, size_t i, size_t count) {
    diff_named *k = count ? calloc(count, sizeof *k) : NULL;
    if (!k) return NULL;
    for (size_t j = 0; j < count; j++) {
        tio_attr a;
        k[j].index = j;
        k[j].name = tio_graph_attr(g, i, j, &a) == TIO_OK && a.name ? a.name : "";
    }
    qsort(k, count, sizeof *k, diff_named_cmp);
    return k;
}

/* Node i's attribute `name` (the first of that name, as tio_graph_find_attr). */
static int attr_lookup(const tio_graph *g, size_t i, const diff_named *k, size_t count,
                       const char *name, tio_attr *out) {
    if (!k) return tio_graph_find_attr(g, i, name, out);
    size_t at = diff_named_first(k, count, name);
    return at < count ? tio_graph_attr(g, i, k[at].index, out) : TIO_E_NOT_FOUND;
}

/* Attributes by name: those of a (in b or not), then those only in b. */
static void compare_attrs(const gpair *p, const char *node, size_t i, const tio_node_info *na,
                          const tio_node_info *nb, diff_graph_result *r) {
    diff_named *ka = attr_index(p->a, i, na->attr_count);
    diff_named *kb = attr_index(p->b, i, nb->attr_count);
    for (size_t j = 0; j < na->attr_count; j++) {
        tio_attr x, y;
        if (tio_graph_attr(p->a, i, j, &x) != TIO_OK) continue;
        if (attr_lookup(p->b, i, kb, nb->attr_count, x.name, &y) != TIO_OK) {
            only_one(p->ca, p->a, na, node, &x, "A", r);
            continue;
        }
        char *tx = attr_text(p->ca, &x), *ty = attr_text(p->cb, &y);
        if (!tx || !ty)
            r->nomem = 1;
        else if (x.type != y.type || strcmp(tx, ty) != 0)
            note(r, node, "attribute %s: %s vs %s", x.name, tx, ty);
        else if (x.type == TIO_ATTR_GRAPH || x.type == TIO_ATTR_GRAPHS)
            compare_subgraphs(p, node, &x, &y, r);
        free(tx);
        free(ty);
    }
    for (size_t j = 0; j < nb->attr_count; j++) {
        tio_attr x, y;
        if (tio_graph_attr(p->b, i, j, &y) != TIO_OK ||
            attr_lookup(p->a, i, ka, na->attr_count, y.name, &x) == TIO_OK)
            continue;
        only_one(p->cb, p->b, nb, node, &y, "B", r);
    }
    free(ka);
    free(kb);
}

static int same_str(const char *x, const char *y) {
    if (!x || !*x || strcmp(x, "ai.onnx") == 0) x = "";
    if (!y || !*y || strcmp(y, "ai.onnx") == 0) y = "";
    return strcmp(x, y) == 0;
}

static void compare_node(const gpair *p, size_t i, diff_graph_result *r) {
    tio_node_info na, nb;
    if (tio_graph_node(p->a, i, &na) != TIO_OK || tio_graph_node(p->b, i, &nb) != TIO_OK) return;
    char *node = cli_strdup_printf("%s%snode %zu (%s%s%s)", p->where, *p->where ? " " : "", i,
                                   na.op ? na.op : "?", na.name ? " " : "",
                                   na.name ? na.name : "");
    if (!node) {
        r->nomem = 1;
        return;
    }
    if (!na.op || !nb.op || strcmp(na.op, nb.op) != 0 || !same_str(na.domain, nb.domain)) {
        note(r, node, "op %s%s%s vs %s%s%s", na.domain && *na.domain ? na.domain : "",
             na.domain && *na.domain ? "." : "", na.op ? na.op : "?",
             nb.domain && *nb.domain ? nb.domain : "", nb.domain && *nb.domain ? "." : "",
             nb.op ? nb.op : "?");
    } else {
        compare_values(p, node, "inputs", na.inputs, na.input_count, nb.inputs,
                       nb.input_count, r);
        compare_values(p, node, "outputs", na.outputs, na.output_count, nb.outputs,
                       nb.output_count, r);
        compare_attrs(p, node, i, &na, &nb, r);
    }
    free(node);
}

static void compare_graphs(const gpair *q, diff_graph_result *r) {
    gpair pp = *q, *p = &pp;
    vsrc *sa = value_sources(p->a), *sb = value_sources(p->b);
    if (!sa || !sb) r->nomem = 1;
    p->sa = sa;
    p->sb = sb;
    compare_list(p, "inputs", tio_graph_inputs(p->a), tio_graph_input_count(p->a),
                 tio_graph_inputs(p->b), tio_graph_input_count(p->b), r);
    compare_list(p, "outputs", tio_graph_outputs(p->a), tio_graph_output_count(p->a),
                 tio_graph_outputs(p->b), tio_graph_output_count(p->b), r);
    size_t na = tio_graph_node_count(p->a), nb = tio_graph_node_count(p->b);
    if (na != nb) note(r, p->where, "%zu nodes vs %zu", na, nb);
    for (size_t i = 0; i < na && i < nb; i++) compare_node(p, i, r);
    free(sa);
    free(sb);
}

void diff_graph_compare(const tio_container *ca, const tio_graph *a,
                        const tio_container *cb, const tio_graph *b, diff_graph_result *r) {
    memset(r, 0, sizeof *r);
    if (!a && !b) return;
    if (!a || !b) {
        note(r, "", "a graph only in %s", a ? "A" : "B");
        return;
    }
    gpair p = {ca, cb, a, b, NULL, NULL, ""};
    compare_graphs(&p, r);
}
