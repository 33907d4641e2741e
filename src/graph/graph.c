/* Model graphs: values, operator nodes, attributes, subgraphs, graph
 * inputs/outputs/captures and model metadata. Everything handed in is copied;
 * everything handed out points into the graph. */
#include "graph/graph.h"
#include "graph/types.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- helpers */

static char *dupstr(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

/* ------------------------------------------------------------- arena */

/* The small objects of a graph tree (names, index lists, dims, attribute
 * values) are carved from chunks the root graph owns and frees at once: a
 * model of 10,000 nodes costs a few dozen malloc() calls, not 100,000 (see
 * docs/performance.md). Each chunk is half the size of the ones before it
 * together (so few to search in tio__gfree, and at most a third unused);
 * an object above GARENA_BIG gets a malloc() of its own. */
struct tio_gchunk {
    struct tio_gchunk *next;
    size_t size, used;
    size_t total; /* bytes of this chunk and the older ones */
};
#define GCHUNK_HDR ((sizeof(struct tio_gchunk) + 15u) & ~(size_t)15u)
#define GCHUNK_MIN ((size_t)4096 - GCHUNK_HDR)
#define GCHUNK_MAX (((size_t)16 << 20) - GCHUNK_HDR)
#define GARENA_BIG 1024u

void *tio__galloc(tio_graph *g, size_t n) {
    tio_graph *r = g->root;
    if (n > GARENA_BIG) return malloc(n);
    n = (n + 7u) & ~(size_t)7u;
    if (n == 0) n = 8;
    struct tio_gchunk *c = r->chunks;
    if (!c || c->size - c->used < n) {
        /* half of what the arena holds, between 4 KiB and 16 MiB */
        size_t total = c ? c->total : 0, sz = total / 2;
        if (sz < GCHUNK_MIN) sz = GCHUNK_MIN;
        if (sz > GCHUNK_MAX) sz = GCHUNK_MAX;
        c = malloc(GCHUNK_HDR + sz);
        if (!c) return NULL;
        c->size = sz;
        c->used = 0;
        c->total = total + sz;
        c->next = r->chunks;
        r->chunks = c;
    }
    void *p = (unsigned char *)c + GCHUNK_HDR + c->used;
    c->used += n;
    return p;
}

void tio__gfree(const tio_graph *g, void *p) {
    if (!p) return;
    uintptr_t a = (uintptr_t)p;
    for (const struct tio_gchunk *c = g->root->chunks; c; c = c->next) {
        uintptr_t b = (uintptr_t)c + GCHUNK_HDR;
        if (a >= b && a - b < c->size) return; /* freed with the root */
    }
    free(p);
}

void *tio__grealloc(tio_graph *g, void *p, size_t old, size_t n) {
    void *q = tio__galloc(g, n);
    if (!q) return NULL;
    if (p) memcpy(q, p, old < n ? old : n);
    tio__gfree(g, p);
    return q;
}

char *tio__gstrdup(tio_graph *g, const char *s) {
    size_t n = strlen(s) + 1;
    char *p = tio__galloc(g, n);
    if (p) memcpy(p, s, n);
    return p;
}

/* A copy of s, or NULL for NULL/"" (unnamed). Returns 0, or -1 when out of
 * memory. */
static int dup_opt(tio_graph *g, const char *s, char **out) {
    *out = NULL;
    if (!s || !s[0]) return 0;
    *out = tio__gstrdup(g, s);
    return *out ? 0 : -1;
}

/* Makes room for `need` elements of `elem` bytes in *p (capacity *cap),
 * doubling, so that appends are amortised O(1). */
static int grow(void **p, size_t *cap, size_t need, size_t elem, tio_error *err) {
    if (need <= *cap) return TIO_OK;
    size_t ncap = *cap ? *cap : 4, bytes;
    while (ncap < need) {
        if (tio__mul_ovf(ncap, 2, &ncap))
            return tio__err(err, TIO_E_OVERFLOW, NULL, -1, "graph: too many objects");
    }
    if (tio__mul_ovf(ncap, elem, &bytes))
        return tio__err(err, TIO_E_OVERFLOW, NULL, -1, "graph: too many objects");
    void *np = realloc(*p, bytes);
    if (!np) return tio__nomem(err, NULL);
    *p = np;
    *cap = ncap;
    return TIO_OK;
}

/* A copy of n elements of `elem` bytes from the arena (NULL when n is 0). */
static int dup_arr(tio_graph *g, const void *src, size_t n, size_t elem, void **out,
                   tio_error *err) {
    *out = NULL;
    if (n == 0) return TIO_OK;
    size_t bytes;
    if (tio__mul_ovf(n, elem, &bytes))
        return tio__err(err, TIO_E_OVERFLOW, NULL, -1, "graph: %zu indices overflow", n);
    *out = tio__galloc(g, bytes);
    if (!*out) return tio__nomem(err, NULL);
    memcpy(*out, src, bytes);
    return TIO_OK;
}

/* A copy of n int64s (NULL when n is 0). */
static int dup_i64(tio_graph *g, const int64_t *src, size_t n, int64_t **out, tio_error *err) {
    void *p;
    int rc = dup_arr(g, src, n, sizeof *src, &p, err);
    *out = p;
    return rc;
}

static void value_clear(const tio_graph *g, tio_gvalue *v) {
    tio__gfree(g, v->name);
    tio__gfree(g, v->type);
    if (v->dims && v->rank > 0)
        for (int64_t k = 0; k < v->rank; k++) tio__gfree(g, (char *)v->dims[k].name);
    tio__gfree(g, v->dims);
}

static void attr_clear(const tio_graph *g, tio_gattr *a) {
    tio__gfree(g, a->name);
    tio__gfree(g, a->s);
    tio__gfree(g, a->ints);
    tio__gfree(g, a->floats);
    if (a->strings)
        for (size_t k = 0; k < a->count; k++) tio__gfree(g, a->strings[k]);
    tio__gfree(g, a->strings);
    tio__gfree(g, a->graphs);
    /* a->graph is owned by the graph's subgraph list */
}

void tio__gnode_clear(const tio_graph *g, tio_gnode *n) {
    tio__gfree(g, n->name);
    tio__gfree(g, n->op);
    tio__gfree(g, n->native_op);
    tio__gfree(g, n->inputs);
    tio__gfree(g, n->outputs);
    for (size_t j = 0; j < n->attr_count; j++) attr_clear(g, &n->attrs[j]);
    tio__gfree(g, n->attrs);
    tio__gfree(g, n->opaque);
    tio__gfree(g, n->domain);
}

void tio__gattrs_free(const tio_graph *g, tio_gattr *a, size_t n) {
    for (size_t j = 0; j < n; j++) attr_clear(g, &a[j]);
    tio__gfree(g, a);
}

static tio_graph *graph_new(tio_container *c, tio_graph *parent) {
    tio_graph *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->c = c;
    g->parent = parent;
    g->root = parent ? parent->root : g;
    return g;
}

void tio__graph_free(tio_graph *g) {
    if (!g) return;
    for (size_t i = 0; i < g->value_count; i++) value_clear(g, &g->values[i]);
    free(g->values);
    tio__names_lazy_free(&g->names);
    tio__graph_caps_free(g);
    for (size_t i = 0; i < g->node_count; i++) tio__gnode_clear(g, &g->nodes[i]);
    free(g->nodes);
    free(g->inputs);
    free(g->outputs);
    free(g->captures);
    tio__kv_free(&g->meta);
    for (size_t i = 0; i < g->sub_count; i++) tio__graph_free(g->subgraphs[i]);
    free(g->subgraphs);
    free(g->native_format);
    free(g->opaque);
    for (size_t i = 0; i < g->opset_count; i++) free(g->opset_domains[i]);
    free(g->opset_domains);
    free(g->opset_versions);
    for (struct tio_gchunk *c = g->chunks, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(g);
}

const char *tio__graph_native(const tio_graph *g) {
    while (g && !g->native_format) g = g->parent;
    return g ? g->native_format : NULL;
}

struct tio_gcaps {
    size_t n; /* the values marked */
    uint8_t is[];
};

bool tio__graph_is_capture(const tio_graph *g, int64_t v) {
    if (!g || v < 0 || (size_t)v >= g->value_count) return false;
    /* the marks are not part of the graph's observable state */
    _Atomic(struct tio_gcaps *) *at = &((tio_graph *)(uintptr_t)g)->caps;
    struct tio_gcaps *m = NULL;
    if (g->capture_count > 8 && !(m = atomic_load_explicit(at, memory_order_acquire))) {
        struct tio_gcaps *mine = calloc(1, sizeof *mine + g->value_count), *none = NULL;
        if (mine) {
            mine->n = g->value_count;
            for (size_t k = 0; k < g->capture_count; k++)
                if (g->captures[k] >= 0 && (size_t)g->captures[k] < mine->n)
                    mine->is[g->captures[k]] = 1;
            if (atomic_compare_exchange_strong_explicit(at, &none, mine, memory_order_acq_rel,
                                                        memory_order_acquire)) {
                m = mine;
            } else { /* another thread's came first */
                free(mine);
                m = none;
            }
        }
    }
    /* a value added after the marks is none: captures are set (which drops
     * the marks) from values that exist */
    if (m) return (size_t)v < m->n && m->is[v];
    for (size_t k = 0; k < g->capture_count; k++)
        if (g->captures[k] == v) return true;
    return false;
}

void tio__graph_caps_free(tio_graph *g) {
    free(atomic_load_explicit(&g->caps, memory_order_relaxed));
    atomic_store_explicit(&g->caps, NULL, memory_order_relaxed);
}

bool tio__graph_native_is(const tio_graph *g, const char *format) {
    const char *f = tio__graph_native(g);
    return f && strcmp(f, format) == 0;
}

int tio__graph_set_graph_opaque(tio_graph *g, const char *why, tio_error *err) {
    if (!g || !why) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "graph or reason is NULL");
    if (g->opaque) return TIO_OK;
    g->opaque = dupstr(why);
    return g->opaque ? TIO_OK : tio__nomem(err, NULL);
}

int tio__graph_set_opaque(tio_graph *g, size_t node, const char *why, tio_error *err) {
    if (!g || !why)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "graph or reason is NULL");
    if (node >= g->node_count)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "graph: node %zu does not exist (the graph has %zu nodes)", node,
                        g->node_count);
    char *s = tio__gstrdup(g, why);
    if (!s) return tio__nomem(err, NULL);
    tio__gfree(g, g->nodes[node].opaque);
    g->nodes[node].opaque = s;
    return TIO_OK;
}

int tio__graph_reserve(tio_graph *g, size_t values, size_t nodes, tio_error *err) {
    if (!g) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "graph is NULL");
    void *p = g->values;
    int rc = grow(&p, &g->value_cap, values, sizeof *g->values, err);
    g->values = p;
    if (rc) return rc;
    p = g->nodes;
    rc = grow(&p, &g->node_cap, nodes, sizeof *g->nodes, err);
    g->nodes = p;
    return rc;
}

/* ---------------------------------------------------------- containers */

tio_graph *tio_container_graph(const tio_container *c) { return c ? c->graph : NULL; }

int tio_container_new_graph(tio_container *c, tio_graph **out, tio_error *err) {
    if (out) *out = NULL;
    if (!c) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "container is NULL");
    if (c->graph)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "the container already has a graph (a container holds one root "
                        "graph)");
    tio_graph *g = graph_new(c, NULL);
    if (!g) return tio__nomem(err, NULL);
    c->graph = g;
    c->graph_free = tio__graph_free;
    if (out) *out = g;
    return TIO_OK;
}

/* ------------------------------------------------------------- getters */

tio_graph *tio_graph_parent(const tio_graph *g) { return g ? g->parent : NULL; }
const char *tio_graph_native_format(const tio_graph *g) {
    return g ? g->native_format : NULL;
}

size_t tio_graph_value_count(const tio_graph *g) { return g ? g->value_count : 0; }

int tio_graph_value(const tio_graph *g, size_t i, tio_value_info *out) {
    if (!g || !out) return TIO_E_ARGUMENT;
    if (i >= g->value_count) return TIO_E_NOT_FOUND;
    const tio_gvalue *v = &g->values[i];
    out->name = v->name;
    out->dtype = v->dtype;
    out->rank = v->rank;
    out->dims = v->rank > 0 ? v->dims : NULL;
    out->tensor = v->tensor;
    out->type = v->type;
    return TIO_OK;
}

static const char *value_name(const void *ctx, size_t i) {
    return ((const tio_graph *)ctx)->values[i].name;
}

int64_t tio_graph_find_value(const tio_graph *g, const char *name) {
    if (!g || !name) return -1;
    /* the index is not part of the graph's observable state */
    size_t i = tio__names_lazy_find(&((tio_graph *)(uintptr_t)g)->names, g->value_count, name,
                                    value_name, g);
    return i == SIZE_MAX ? -1 : (int64_t)i;
}

size_t tio_graph_node_count(const tio_graph *g) { return g ? g->node_count : 0; }

int tio_graph_node(const tio_graph *g, size_t i, tio_node_info *out) {
    if (!g || !out) return TIO_E_ARGUMENT;
    if (i >= g->node_count) return TIO_E_NOT_FOUND;
    const tio_gnode *n = &g->nodes[i];
    out->name = n->name;
    out->op = n->op;
    out->native_op = n->native_op;
    out->native_id = n->native_id;
    out->input_count = n->input_count;
    out->inputs = n->inputs;
    out->output_count = n->output_count;
    out->outputs = n->outputs;
    out->attr_count = n->attr_count;
    out->domain = n->domain;
    return TIO_OK;
}

static void attr_out(const tio_gattr *a, tio_attr *out) {
    memset(out, 0, sizeof *out);
    out->name = a->name;
    out->type = a->type;
    switch (a->type) {
    case TIO_ATTR_INT:
        out->i = a->i;
        out->label = a->s; /* an INT keeps its enum label in s */
        break;
    case TIO_ATTR_TENSOR: out->i = a->i; break;
    case TIO_ATTR_FLOAT: out->f = a->f; break;
    case TIO_ATTR_STRING:
    case TIO_ATTR_TYPE: out->s = a->s; break;
    case TIO_ATTR_INTS:
        out->count = a->count;
        out->ints = a->ints;
        break;
    case TIO_ATTR_FLOATS:
        out->count = a->count;
        out->floats = a->floats;
        break;
    case TIO_ATTR_STRINGS:
        out->count = a->count;
        out->strings = (const char *const *)a->strings;
        break;
    case TIO_ATTR_GRAPH: out->graph = a->graph; break;
    case TIO_ATTR_TENSORS:
        out->count = a->count;
        out->tensors = a->ints;
        break;
    case TIO_ATTR_GRAPHS:
        out->count = a->count;
        out->graphs = (tio_graph *const *)a->graphs;
        break;
    }
}

int tio_graph_attr(const tio_graph *g, size_t node, size_t j, tio_attr *out) {
    if (!g || !out) return TIO_E_ARGUMENT;
    if (node >= g->node_count || j >= g->nodes[node].attr_count) return TIO_E_NOT_FOUND;
    attr_out(&g->nodes[node].attrs[j], out);
    return TIO_OK;
}

int tio_graph_find_attr(const tio_graph *g, size_t node, const char *name, tio_attr *out) {
    if (!g || !name || !out) return TIO_E_ARGUMENT;
    if (node >= g->node_count) return TIO_E_NOT_FOUND;
    const tio_gnode *n = &g->nodes[node];
    for (size_t j = 0; j < n->attr_count; j++) {
        if (strcmp(n->attrs[j].name, name) == 0) {
            attr_out(&n->attrs[j], out);
            return TIO_OK;
        }
    }
    return TIO_E_NOT_FOUND;
}

size_t tio_graph_input_count(const tio_graph *g) { return g ? g->input_count : 0; }
const int64_t *tio_graph_inputs(const tio_graph *g) { return g ? g->inputs : NULL; }
size_t tio_graph_output_count(const tio_graph *g) { return g ? g->output_count : 0; }
const int64_t *tio_graph_outputs(const tio_graph *g) { return g ? g->outputs : NULL; }
size_t tio_graph_capture_count(const tio_graph *g) { return g ? g->capture_count : 0; }
const int64_t *tio_graph_captures(const tio_graph *g) { return g ? g->captures : NULL; }

size_t tio_graph_meta_count(const tio_graph *g) { return g ? g->meta.count : 0; }

int tio_graph_meta_at(const tio_graph *g, size_t i, const char **key, const char **value) {
    if (!g) return TIO_E_ARGUMENT;
    if (i >= g->meta.count) return TIO_E_NOT_FOUND;
    if (key) *key = g->meta.keys[i];
    if (value) *value = g->meta.values[i];
    return TIO_OK;
}

const char *tio_graph_meta_get(const tio_graph *g, const char *key) {
    return g ? tio__kv_get(&g->meta, key) : NULL;
}

/* An edit through the API, counted on the root (tio_graph.edits): a writer
 * that rewrites the model as read (tflite) refuses a graph edited since. */
static void note_edit(tio_graph *g) { g->root->edits++; }

static int graph_meta_set_do(tio_graph *g, const char *key, const char *value, tio_error *err) {
    if (!g) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "graph is NULL");
    return tio__kv_set(&g->meta, key, value, err);
}

int tio_graph_meta_set(tio_graph *g, const char *key, const char *value, tio_error *err) {
    int rc = graph_meta_set_do(g, key, value, err);
    if (rc == TIO_OK) note_edit(g);
    return rc;
}

/* ------------------------------------------------------------ building */

static int graph_add_value_do(tio_graph *g, const tio_value_info *v, size_t *index,
                        tio_error *err) {
    if (!g || !v) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "graph or value is NULL");
    if (v->type) {
        tio_gtype *gt = NULL;
        const char *why = NULL;
        size_t at = 0;
        if (v->tensor != -1 || v->dtype != TIO_DTYPE_INVALID || v->rank != -1)
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                            "graph: value %zu: a type is given with a tensor, dtype or rank "
                            "(a typed value has tensor -1, no dtype and rank -1)",
                            g->value_count);
        if (tio__gtype_parse(v->type, TIO_GRAPH_TYPE_MAX_DEPTH, &gt, &why, &at) != 0)
            return why && strcmp(why, "out of memory") == 0
                       ? tio__nomem(err, NULL)
                       : tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                                  "graph: value %zu: type '%.80s': %s at character %zu",
                                  g->value_count, v->type, why ? why : "?", at);
        tio__gtype_free(gt);
    }
    size_t ntensors = tio_container_count(g->c);
    tio_gvalue nv;
    memset(&nv, 0, sizeof nv);
    nv.tensor = -1;
    const tio_tensor *t = NULL;
    if (v->tensor >= 0) {
        if ((uint64_t)v->tensor >= ntensors)
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                            "graph: value %zu: constant tensor index %lld does not exist "
                            "(the container has %zu tensors)",
                            g->value_count, (long long)v->tensor, ntensors);
        t = tio_container_tensor(g->c, (size_t)v->tensor);
        nv.tensor = v->tensor;
        nv.dtype = t->dtype;
        nv.rank = (int32_t)t->rank;
    } else {
        if (v->tensor != -1)
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                            "graph: value %zu: tensor is %lld (expected -1 for a runtime "
                            "value or a container tensor index)",
                            g->value_count, (long long)v->tensor);
        if (v->dtype != TIO_DTYPE_INVALID && v->dtype != TIO_STRING &&
            tio_dtype_size(v->dtype) == 0)
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                            "graph: value %zu: dtype %d is not a tio_dtype", g->value_count,
                            (int)v->dtype);
        if (v->rank < -1 || v->rank > TIO_GRAPH_API_MAX_RANK)
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                            "graph: value %zu: rank %lld (expected -1 for unknown or "
                            "0..%d)",
                            g->value_count, (long long)v->rank, TIO_GRAPH_API_MAX_RANK);
        if (v->rank > 0 && !v->dims)
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                            "graph: value %zu: dims are NULL for rank %lld", g->value_count,
                            (long long)v->rank);
        for (int64_t k = 0; k < v->rank; k++)
            if (v->dims[k].value < -1)
                return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                                "graph: value %zu: dim %lld is %lld (expected a size >= 0, "
                                "or -1 for unknown)",
                                g->value_count, (long long)k, (long long)v->dims[k].value);
        nv.dtype = v->dtype;
        nv.rank = (int32_t)v->rank;
    }
    int rc;
    void *p = g->values;
    rc = grow(&p, &g->value_cap, g->value_count + 1, sizeof *g->values, err);
    g->values = p;
    if (rc) return rc;
    if (dup_opt(g, v->name, &nv.name)) goto nomem;
    if (dup_opt(g, v->type, &nv.type)) goto nomem;
    if (nv.rank > 0) {
        /* rank <= TIO_GRAPH_API_MAX_RANK or a tensor's: no overflow */
        nv.dims = tio__galloc(g, (size_t)nv.rank * sizeof *nv.dims);
        if (!nv.dims) goto nomem;
        memset(nv.dims, 0, (size_t)nv.rank * sizeof *nv.dims);
        for (int64_t k = 0; k < nv.rank; k++) {
            if (t) {
                nv.dims[k].value = t->shape[k];
            } else {
                char *dn;
                nv.dims[k].value = v->dims[k].value;
                if (dup_opt(g, v->dims[k].name, &dn)) goto nomem;
                nv.dims[k].name = dn;
            }
        }
    }
    g->values[g->value_count] = nv;
    if (index) *index = g->value_count;
    g->value_count++;
    tio__names_lazy_added(&g->names, g->value_count - 1, value_name, g);
    return TIO_OK;
nomem:
    value_clear(g, &nv);
    return tio__nomem(err, NULL);
}

int tio_graph_add_value(tio_graph *g, const tio_value_info *v, size_t *index,
                        tio_error *err) {
    int rc = graph_add_value_do(g, v, index, err);
    if (rc == TIO_OK) note_edit(g);
    return rc;
}

/* Checks a node's input or output list. */
static int check_refs(const tio_graph *g, const int64_t *refs, size_t n, const char *what,
                      tio_error *err) {
    if (n && !refs)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "graph: node %zu: %s are NULL for a count of %zu", g->node_count,
                        what, n);
    for (size_t k = 0; k < n; k++)
        if (refs[k] < -1 || (refs[k] >= 0 && (uint64_t)refs[k] >= g->value_count))
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                            "graph: node %zu: %s %zu is value %lld (expected -1 or a value "
                            "index below %zu)",
                            g->node_count, what, k, (long long)refs[k], g->value_count);
    return TIO_OK;
}

static int graph_add_node_do(tio_graph *g, const tio_node_info *n, size_t *index,
                       tio_error *err) {
    if (!g || !n) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "graph or node is NULL");
    if (!n->op || !n->op[0])
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "graph: node %zu: the operator type is %s (expected a name)",
                        g->node_count, n->op ? "empty" : "NULL");
    int rc = check_refs(g, n->inputs, n->input_count, "inputs", err);
    if (rc) return rc;
    rc = check_refs(g, n->outputs, n->output_count, "outputs", err);
    if (rc) return rc;
    void *p = g->nodes;
    rc = grow(&p, &g->node_cap, g->node_count + 1, sizeof *g->nodes, err);
    g->nodes = p;
    if (rc) return rc;
    tio_gnode nn;
    memset(&nn, 0, sizeof nn);
    nn.native_id = n->native_id;
    nn.native_attrs = -1;
    const char *native = n->native_op && strcmp(n->native_op, n->op) != 0 ? n->native_op : NULL;
    const char *dom = n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0
                          ? n->domain
                          : NULL;
    if (dup_opt(g, n->name, &nn.name) || dup_opt(g, n->op, &nn.op) ||
        dup_opt(g, native, &nn.native_op) || dup_opt(g, dom, &nn.domain))
        goto nomem;
    rc = dup_i64(g, n->inputs, n->input_count, &nn.inputs, err);
    if (rc) goto fail;
    nn.input_count = n->input_count;
    rc = dup_i64(g, n->outputs, n->output_count, &nn.outputs, err);
    if (rc) goto fail;
    nn.output_count = n->output_count;
    g->nodes[g->node_count] = nn;
    if (index) *index = g->node_count;
    g->node_count++;
    return TIO_OK;
nomem:
    rc = tio__nomem(err, NULL);
fail:
    tio__gnode_clear(g, &nn);
    return rc;
}

int tio_graph_add_node(tio_graph *g, const tio_node_info *n, size_t *index,
                       tio_error *err) {
    int rc = graph_add_node_do(g, n, index, err);
    if (rc == TIO_OK) note_edit(g);
    return rc;
}

static const char *attr_type_name(tio_attr_type t) {
    switch (t) {
    case TIO_ATTR_INT: return "INT";
    case TIO_ATTR_FLOAT: return "FLOAT";
    case TIO_ATTR_STRING: return "STRING";
    case TIO_ATTR_INTS: return "INTS";
    case TIO_ATTR_FLOATS: return "FLOATS";
    case TIO_ATTR_STRINGS: return "STRINGS";
    case TIO_ATTR_TENSOR: return "TENSOR";
    case TIO_ATTR_GRAPH: return "GRAPH";
    case TIO_ATTR_TENSORS: return "TENSORS";
    case TIO_ATTR_GRAPHS: return "GRAPHS";
    case TIO_ATTR_TYPE: return "TYPE";
    }
    return "?";
}

/* Checks attribute a for node `node` of g; *sub is the subgraph a GRAPH
 * attribute names. */
static int check_attr(const tio_graph *g, size_t node, const tio_attr *a, bool named_new,
                      tio_graph **sub, tio_error *err) {
    *sub = NULL;
    if (!a->name || !a->name[0])
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "graph: node %zu: attribute name is %s (expected a name)", node,
                        a->name ? "empty" : "NULL");
    const tio_gnode *n = &g->nodes[node];
    for (size_t j = 0; !named_new && j < n->attr_count; j++)
        if (strcmp(n->attrs[j].name, a->name) == 0)
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                            "graph: node %zu: attribute '%.64s' is already set", node,
                            a->name);
    switch (a->type) {
    case TIO_ATTR_INT:
    case TIO_ATTR_FLOAT: return TIO_OK;
    case TIO_ATTR_STRING:
        if (!a->s)
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                            "graph: node %zu: STRING attribute '%.64s' has a NULL string",
                            node, a->name);
        return TIO_OK;
    case TIO_ATTR_TYPE: {
        tio_gtype *gt = NULL;
        const char *why = "NULL text";
        size_t at = 0;
        if (!a->s || tio__gtype_parse(a->s, TIO_GRAPH_TYPE_MAX_DEPTH, &gt, &why, &at) != 0)
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                            "graph: node %zu: TYPE attribute '%.64s': %s at character %zu",
                            node, a->name, why ? why : "?", at);
        tio__gtype_free(gt);
        return TIO_OK;
    }
    case TIO_ATTR_INTS:
    case TIO_ATTR_FLOATS:
    case TIO_ATTR_STRINGS: {
        const void *arr = a->type == TIO_ATTR_INTS     ? (const void *)a->ints
                          : a->type == TIO_ATTR_FLOATS ? (const void *)a->floats
                                                       : (const void *)a->strings;
        if (a->count && !arr)
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                            "graph: node %zu: %s attribute '%.64s' has a NULL array for "
                            "%zu elements",
                            node, attr_type_name(a->type), a->name, a->count);
        if (a->type == TIO_ATTR_STRINGS)
            for (size_t k = 0; k < a->count; k++)
                if (!a->strings[k])
                    return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                                    "graph: node %zu: STRINGS attribute '%.64s': string "
                                    "%zu is NULL",
                                    node, a->name, k);
        return TIO_OK;
    }
    case TIO_ATTR_TENSOR: {
        size_t nt = tio_container_count(g->c);
        if (a->i < 0 || (uint64_t)a->i >= nt)
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                            "graph: node %zu: TENSOR attribute '%.64s' names tensor %lld "
                            "(the container has %zu tensors)",
                            node, a->name, (long long)a->i, nt);
        return TIO_OK;
    }
    case TIO_ATTR_TENSORS: {
        size_t nt = tio_container_count(g->c);
        if (a->count && !a->tensors)
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                            "graph: node %zu: TENSORS attribute '%.64s' has a NULL array "
                            "for %zu elements",
                            node, a->name, a->count);
        for (size_t k = 0; k < a->count; k++)
            if (a->tensors[k] < 0 || (uint64_t)a->tensors[k] >= nt)
                return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                                "graph: node %zu: TENSORS attribute '%.64s': element %zu "
                                "names tensor %lld (the container has %zu tensors)",
                                node, a->name, k, (long long)a->tensors[k], nt);
        return TIO_OK;
    }
    case TIO_ATTR_GRAPHS: {
        if (a->count && !a->graphs)
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                            "graph: node %zu: GRAPHS attribute '%.64s' has a NULL array "
                            "for %zu elements",
                            node, a->name, a->count);
        /* each element among g's subgraphs (a decoder's: the newest count, in
         * order, so first where it would be), marked used while the others
         * are checked, so that one named twice is found at once */
        size_t k = 0;
        bool found = true;
        for (; k < a->count; k++) {
            tio_graph *sg = a->graphs[k];
            size_t at = g->sub_count - a->count + k; /* wraps when count > sub_count */
            found = sg && at < g->sub_count && g->subgraphs[at] == sg;
            for (size_t m = g->sub_count; m-- > 0 && sg && !found;)
                found = g->subgraphs[m] == sg;
            if (!found || sg->attached) break;
            sg->attached = true;
        }
        for (size_t m = 0; m < k; m++) a->graphs[m]->attached = false;
        if (k < a->count)
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                            "graph: node %zu: GRAPHS attribute '%.64s': element %zu %s", node,
                            a->name, k,
                            !found ? "is not a subgraph of this graph (create it with "
                                     "tio_graph_new_subgraph on this graph)"
                                   : "is already used by an attribute");
        return TIO_OK;
    }
    case TIO_ATTR_GRAPH: {
        /* Look the pointer up among g's subgraphs before touching it: from
         * the newest, which is the one a decoder has just made (O(1) then,
         * not O(subgraphs) per attribute). */
        for (size_t k = g->sub_count; k-- > 0 && a->graph;) {
            if (g->subgraphs[k] != a->graph) continue;
            if (a->graph->attached)
                return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                                "graph: node %zu: GRAPH attribute '%.64s': the subgraph is "
                                "already used by another attribute",
                                node, a->name);
            *sub = a->graph;
            return TIO_OK;
        }
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "graph: node %zu: GRAPH attribute '%.64s': %s", node, a->name,
                        a->graph ? "the graph is not a subgraph of this graph (create it "
                                   "with tio_graph_new_subgraph on this graph)"
                                 : "the graph is NULL");
    }
    }
    return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                    "graph: node %zu: attribute '%.64s' has type %d (expected a "
                    "tio_attr_type)",
                    node, a->name, (int)a->type);
}

static int graph_add_attr_do(tio_graph *g, size_t node, const tio_attr *a, bool named_new,
                             tio_error *err) {
    if (!g || !a) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "graph or attribute is NULL");
    if (node >= g->node_count)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "graph: node %zu does not exist (the graph has %zu nodes)", node,
                        g->node_count);
    tio_graph *sub;
    int rc = check_attr(g, node, a, named_new, &sub, err);
    if (rc) return rc;
    tio_gnode *n = &g->nodes[node];
    if (n->attr_count == n->attr_cap) {
        /* attr_count < max_objects: no overflow */
        size_t cap = n->attr_cap ? 2 * n->attr_cap : 2;
        tio_gattr *na = tio__grealloc(g, n->attrs, n->attr_count * sizeof *na, cap * sizeof *na);
        if (!na) return tio__nomem(err, NULL);
        n->attrs = na;
        n->attr_cap = cap;
    }
    tio_gattr na;
    memset(&na, 0, sizeof na);
    na.type = a->type;
    na.name = tio__gstrdup(g, a->name);
    if (!na.name) goto nomem;
    size_t bytes;
    switch (a->type) {
    case TIO_ATTR_INT:
        na.i = a->i;
        if (a->label && a->label[0]) {
            na.s = tio__gstrdup(g, a->label);
            if (!na.s) goto nomem;
        }
        break;
    case TIO_ATTR_TENSOR: na.i = a->i; break;
    case TIO_ATTR_FLOAT: na.f = a->f; break;
    case TIO_ATTR_STRING:
    case TIO_ATTR_TYPE:
        na.s = tio__gstrdup(g, a->s);
        if (!na.s) goto nomem;
        break;
    case TIO_ATTR_INTS:
        rc = dup_i64(g, a->ints, a->count, &na.ints, err);
        if (rc) goto fail;
        na.count = a->count;
        break;
    case TIO_ATTR_FLOATS:
        if (a->count) {
            void *q;
            rc = dup_arr(g, a->floats, a->count, sizeof *na.floats, &q, err);
            na.floats = q;
            if (rc) goto fail;
        }
        na.count = a->count;
        break;
    case TIO_ATTR_STRINGS:
        if (a->count) {
            if (tio__mul_ovf(a->count, sizeof *na.strings, &bytes)) goto overflow;
            na.strings = tio__galloc(g, bytes);
            if (!na.strings) goto nomem;
            memset(na.strings, 0, bytes);
            na.count = a->count;
            for (size_t k = 0; k < a->count; k++) {
                na.strings[k] = tio__gstrdup(g, a->strings[k]);
                if (!na.strings[k]) goto nomem;
            }
        }
        break;
    case TIO_ATTR_GRAPH: na.graph = sub; break;
    case TIO_ATTR_TENSORS:
        rc = dup_i64(g, a->tensors, a->count, &na.ints, err);
        if (rc) goto fail;
        na.count = a->count;
        break;
    case TIO_ATTR_GRAPHS:
        if (a->count) {
            void *q;
            rc = dup_arr(g, a->graphs, a->count, sizeof *na.graphs, &q, err);
            na.graphs = q;
            if (rc) goto fail;
        }
        na.count = a->count;
        break;
    }
    n->attrs[n->attr_count++] = na;
    if (sub) sub->attached = true;
    if (na.type == TIO_ATTR_GRAPHS)
        for (size_t k = 0; k < na.count; k++) na.graphs[k]->attached = true;
    return TIO_OK;
overflow:
    rc = tio__err(err, TIO_E_OVERFLOW, NULL, -1, "graph: attribute array size overflows");
    goto fail;
nomem:
    rc = tio__nomem(err, NULL);
fail:
    attr_clear(g, &na);
    return rc;
}

int tio_graph_add_attr(tio_graph *g, size_t node, const tio_attr *a, tio_error *err) {
    int rc = graph_add_attr_do(g, node, a, false, err);
    if (rc == TIO_OK) note_edit(g);
    return rc;
}

int tio__graph_add_attr_new(tio_graph *g, size_t node, const tio_attr *a, tio_error *err) {
    int rc = graph_add_attr_do(g, node, a, true, err);
    if (rc == TIO_OK) note_edit(g);
    return rc;
}

static int graph_new_subgraph_do(tio_graph *g, tio_graph **out, tio_error *err) {
    if (out) *out = NULL;
    if (!g) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "graph is NULL");
    void *p = g->subgraphs;
    int rc = grow(&p, &g->sub_cap, g->sub_count + 1, sizeof *g->subgraphs, err);
    g->subgraphs = p;
    if (rc) return rc;
    tio_graph *s = graph_new(g->c, g);
    if (!s) return tio__nomem(err, NULL);
    g->subgraphs[g->sub_count++] = s;
    if (out) *out = s;
    return TIO_OK;
}

int tio_graph_new_subgraph(tio_graph *g, tio_graph **out, tio_error *err) {
    int rc = graph_new_subgraph_do(g, out, err);
    if (rc == TIO_OK) note_edit(g);
    return rc;
}

/* Replaces one of the graph's value lists. */
static int set_list(tio_graph *g, int64_t **list, size_t *count, const int64_t *values,
                    size_t n, const char *what, tio_error *err) {
    if (!g) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "graph is NULL");
    if (n && !values)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "graph %s: the list is NULL for a count of %zu", what, n);
    for (size_t k = 0; k < n; k++)
        if (values[k] < 0 || (uint64_t)values[k] >= g->value_count)
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                            "graph %s: entry %zu is value %lld (expected a value index "
                            "below %zu)",
                            what, k, (long long)values[k], g->value_count);
    int64_t *copy = NULL;
    if (n) {
        copy = malloc(n * sizeof *copy); /* n <= value_count: no overflow */
        if (!copy) return tio__nomem(err, NULL);
        memcpy(copy, values, n * sizeof *copy);
    }
    free(*list);
    *list = copy;
    *count = n;
    return TIO_OK;
}

static int graph_set_inputs_do(tio_graph *g, const int64_t *values, size_t n, tio_error *err) {
    return g ? set_list(g, &g->inputs, &g->input_count, values, n, "inputs", err)
             : tio__err(err, TIO_E_ARGUMENT, NULL, -1, "graph is NULL");
}

int tio_graph_set_inputs(tio_graph *g, const int64_t *values, size_t n, tio_error *err) {
    int rc = graph_set_inputs_do(g, values, n, err);
    if (rc == TIO_OK) note_edit(g);
    return rc;
}

static int graph_set_outputs_do(tio_graph *g, const int64_t *values, size_t n, tio_error *err) {
    return g ? set_list(g, &g->outputs, &g->output_count, values, n, "outputs", err)
             : tio__err(err, TIO_E_ARGUMENT, NULL, -1, "graph is NULL");
}

int tio_graph_set_outputs(tio_graph *g, const int64_t *values, size_t n, tio_error *err) {
    int rc = graph_set_outputs_do(g, values, n, err);
    if (rc == TIO_OK) note_edit(g);
    return rc;
}

static int graph_set_captures_do(tio_graph *g, const int64_t *values, size_t n, tio_error *err) {
    if (!g) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "graph is NULL");
    tio__graph_caps_free(g);
    return set_list(g, &g->captures, &g->capture_count, values, n, "captures", err);
}

int tio_graph_set_captures(tio_graph *g, const int64_t *values, size_t n, tio_error *err) {
    int rc = graph_set_captures_do(g, values, n, err);
    if (rc == TIO_OK) note_edit(g);
    return rc;
}

static int graph_set_native_format_do(tio_graph *g, const char *format, tio_error *err) {
    if (!g) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "graph is NULL");
    char *s = NULL;
    if (format && format[0] && !(s = dupstr(format))) return tio__nomem(err, NULL);
    free(g->native_format);
    g->native_format = s;
    return TIO_OK;
}

int tio_graph_set_native_format(tio_graph *g, const char *format, tio_error *err) {
    int rc = graph_set_native_format_do(g, format, err);
    if (rc == TIO_OK) note_edit(g);
    return rc;
}

size_t tio_graph_opset_count(const tio_graph *g) { return g ? g->opset_count : 0; }

int tio_graph_opset_at(const tio_graph *g, size_t i, const char **domain, int64_t *version) {
    if (!g) return TIO_E_ARGUMENT;
    if (i >= g->opset_count) return TIO_E_NOT_FOUND;
    if (domain) *domain = g->opset_domains[i];
    if (version) *version = g->opset_versions[i];
    return TIO_OK;
}

static int graph_set_opset_do(tio_graph *g, const char *domain, int64_t version, tio_error *err) {
    if (!g) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "graph is NULL");
    if (!domain) domain = "";
    for (size_t i = 0; i < g->opset_count; i++)
        if (strcmp(g->opset_domains[i], domain) == 0) {
            g->opset_versions[i] = version;
            return TIO_OK;
        }
    return tio__graph_opset_append(g, domain, version, err);
}

int tio__graph_opset_append(tio_graph *g, const char *domain, int64_t version, tio_error *err) {
    size_t cap = g->opset_count, cap2 = g->opset_count;
    void *p = g->opset_domains;
    int rc = grow(&p, &cap, g->opset_count + 1, sizeof *g->opset_domains, err);
    if (rc) return rc;
    g->opset_domains = p;
    p = g->opset_versions;
    rc = grow(&p, &cap2, g->opset_count + 1, sizeof *g->opset_versions, err);
    if (rc) return rc;
    g->opset_versions = p;
    char *d = dupstr(domain);
    if (!d) return tio__nomem(err, NULL);
    g->opset_domains[g->opset_count] = d;
    g->opset_versions[g->opset_count++] = version;
    return TIO_OK;
}

int tio_graph_set_opset(tio_graph *g, const char *domain, int64_t version, tio_error *err) {
    int rc = graph_set_opset_do(g, domain, version, err);
    if (rc == TIO_OK) note_edit(g);
    return rc;
}

bool tio__graph_meta_foreign(const char *key, const char *own) {
    /* the formats whose readers keep their own fields as model metadata */
    static const char *const formats[] = {"onnx", "tmfile", "rten"};
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        size_t n = strlen(formats[i]);
        if (strncmp(key, formats[i], n) == 0 && key[n] == '.' && key[n + 1] &&
            (!own || strcmp(own, formats[i]) != 0))
            return true;
    }
    return false;
}

int tio__graph_check_tensors(const tio_graph *g, const char *fmt, tio_error *err) {
    if (!g) return TIO_OK;
    for (size_t i = 0; i < g->value_count; i++)
        if (g->values[i].type)
            return tio__err(err, TIO_E_UNSUPPORTED, fmt, -1,
                            "graph value '%.64s' has type %s, which %s has no form for (it "
                            "holds tensors of tensio's dtypes; ONNX writes such values)",
                            g->values[i].name ? g->values[i].name : "", g->values[i].type, fmt);
        else if (g->values[i].dtype == TIO_STRING)
            return tio__err(err, TIO_E_UNSUPPORTED, fmt, -1,
                            "graph value '%.64s' is a string tensor, which %s has no form for "
                            "(ONNX writes string tensors)",
                            g->values[i].name ? g->values[i].name : "", fmt);
    for (size_t j = 0; j < g->node_count; j++)
        for (size_t a = 0; a < g->nodes[j].attr_count; a++) {
            const tio_gattr *at = &g->nodes[j].attrs[a];
            int rc = TIO_OK;
            if (at->type == TIO_ATTR_TYPE)
                return tio__err(err, TIO_E_UNSUPPORTED, fmt, -1,
                                "node '%.64s' (%s): attribute '%s' is a type (%s), which %s has "
                                "no form for",
                                g->nodes[j].name ? g->nodes[j].name : "", g->nodes[j].op,
                                at->name, at->s, fmt);
            if (at->type == TIO_ATTR_GRAPH) rc = tio__graph_check_tensors(at->graph, fmt, err);
            for (size_t k = 0; !rc && at->type == TIO_ATTR_GRAPHS && k < at->count; k++)
                rc = tio__graph_check_tensors(at->graphs[k], fmt, err);
            if (rc) return rc;
        }
    return TIO_OK;
}

void tio__graph_mark_tensors(const tio_graph *g, uint8_t *mark, size_t n) {
    if (!g) return;
    for (size_t i = 0; i < g->value_count; i++) {
        int64_t t = g->values[i].tensor;
        if (t >= 0 && (uint64_t)t < n) mark[t] |= 1;
    }
    for (size_t j = 0; j < g->node_count; j++)
        for (size_t a = 0; a < g->nodes[j].attr_count; a++) {
            const tio_gattr *at = &g->nodes[j].attrs[a];
            if (at->type == TIO_ATTR_TENSOR && at->i >= 0 && (uint64_t)at->i < n)
                mark[at->i] |= 2;
            for (size_t k = 0; at->type == TIO_ATTR_TENSORS && at->ints && k < at->count; k++)
                if (at->ints[k] >= 0 && (uint64_t)at->ints[k] < n) mark[at->ints[k]] |= 2;
            if (at->type == TIO_ATTR_GRAPH) tio__graph_mark_tensors(at->graph, mark, n);
            for (size_t k = 0; at->type == TIO_ATTR_GRAPHS && k < at->count; k++)
                tio__graph_mark_tensors(at->graphs[k], mark, n);
        }
}
