/* Reading an ONNX ModelProto into a container and its graph.
 *
 * The whole message is first checked against onnx.proto's tables
 * (tio__pb_verify: wire types, lengths, nesting), so the walk below only
 * meets fields of the expected wire types. Strings are copied (as the graph
 * API copies what it is given) and charged to the decode memory budget;
 * raw_data stays a view into the input. */
#include "graph/types.h"
#include "onnx/read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* A graph being read and the names it defines (a hash of value indices). */
typedef struct ox_scope {
    tio_graph *g;
    struct ox_scope *parent;
    int64_t *slots; /* value index, or -1 */
    size_t cap;     /* power of two */
    size_t used;
    int64_t *caps;  /* captured values (indices in g) */
    size_t ncaps, caps_cap;
} ox_scope;

/* A string field as a new C string (NUL bytes and over-long strings
 * refused), charged twice: this copy and the graph's. */
int tio__ox_str(ox_reader *r, const tio_pb_reader *rd, const tio_pb_field *f,
                  const char *what, char **out, tio_error *err) {
    *out = NULL;
    size_t n = (size_t)f->u;
    if (n > r->ctx->limits.max_name_bytes)
        return tio__err(err, TIO_E_LIMIT, r->fmt, ox_off(rd, f->data),
                        "%s: a string of %zu bytes exceeds the limit of %u (tio_limits."
                        "max_name_bytes)",
                        what, n, r->ctx->limits.max_name_bytes);
    int rc = ox_mem(r, 2 * tio__cost_str(n) + 32, ox_off(rd, f->at), err);
    if (rc) return rc;
    const uint8_t *p = tio__pb_peek(rd, f); /* by pread: a name beside far weights */
    if (n && memchr(p, 0, n))
        return tio__err(err, TIO_E_UNSUPPORTED, r->fmt, ox_off(rd, f->data),
                        "%s: the string holds a NUL byte (tensio keeps strings as C strings)",
                        what);
    char *s = malloc(n + 1);
    if (!s) return tio__nomem(err, r->fmt);
    memcpy(s, p, n);
    s[n] = 0;
    *out = s;
    return TIO_OK;
}

/* ------------------------------------------------------------ scopes */

/* seeded by the scope's address (tio__hash_str) */
static uint64_t ox_hash(const ox_scope *sc, const char *s) {
    return tio__hash_str(tio__hash_seed(sc), s);
}

static int64_t ox_lookup(const ox_scope *sc, const char *name) {
    if (!sc->cap) return -1;
    for (size_t i = (size_t)ox_hash(sc, name) & (sc->cap - 1);; i = (i + 1) & (sc->cap - 1)) {
        int64_t v = sc->slots[i];
        if (v < 0) return -1;
        if (strcmp(sc->g->values[v].name, name) == 0) return v;
    }
}

static int ox_insert(ox_reader *r, ox_scope *sc, int64_t v, int64_t off, tio_error *err) {
    if (2 * (sc->used + 1) > sc->cap) {
        size_t ncap = sc->cap ? 2 * sc->cap : 64;
        int rc = ox_mem(r, tio__cost_i64s(ncap), off, err);
        if (rc) return rc;
        int64_t *ns = malloc(ncap * sizeof *ns);
        if (!ns) return tio__nomem(err, OX_FMT);
        for (size_t i = 0; i < ncap; i++) ns[i] = -1;
        for (size_t k = 0; k < sc->cap; k++) {
            if (sc->slots[k] < 0) continue;
            size_t i = (size_t)ox_hash(sc, sc->g->values[sc->slots[k]].name) & (ncap - 1);
            while (ns[i] >= 0) i = (i + 1) & (ncap - 1);
            ns[i] = sc->slots[k];
        }
        free(sc->slots);
        sc->slots = ns;
        sc->cap = ncap;
    }
    size_t i = (size_t)ox_hash(sc, sc->g->values[v].name) & (sc->cap - 1);
    while (sc->slots[i] >= 0) i = (i + 1) & (sc->cap - 1);
    sc->slots[i] = v;
    sc->used++;
    return TIO_OK;
}

/* Adds a named value (a runtime value, or a constant when tensor >= 0). */
static int ox_define(ox_reader *r, ox_scope *sc, const char *name, int64_t tensor,
                     int64_t off, const char *what, int64_t *out, tio_error *err) {
    if (!name[0])
        return tio__err(err, TIO_E_CORRUPT, OX_FMT, off, "%s: the value has an empty name",
                        what);
    if (ox_lookup(sc, name) >= 0)
        return tio__err(err, TIO_E_CORRUPT, OX_FMT, off,
                        "%s: value '%.64s' is defined twice in one graph", what, name);
    int rc = ox_count(r, 1, off, err);
    if (!rc) rc = ox_mem(r, tio__cost_value() + tio__cost_str(strlen(name)), off, err);
    if (rc) return rc;
    tio_value_info vi;
    memset(&vi, 0, sizeof vi);
    vi.name = name;
    vi.rank = -1;
    vi.tensor = tensor;
    size_t idx;
    rc = tio_graph_add_value(sc->g, &vi, &idx, err);
    if (rc) return rc;
    *out = (int64_t)idx;
    return ox_insert(r, sc, (int64_t)idx, off, err);
}

/* The value a name refers to: in this graph, else (lexically) in an
 * enclosing one, recorded as a capture of every graph in between. */
static int ox_resolve(ox_reader *r, ox_scope *sc, const char *name, int64_t off,
                      const char *what, int64_t *out, tio_error *err) {
    int64_t v = ox_lookup(sc, name);
    if (v >= 0) {
        *out = v;
        return TIO_OK;
    }
    if (!sc->parent)
        return tio__err(err, TIO_E_CORRUPT, OX_FMT, off,
                        "%s: value '%.64s' is not defined (not a graph input, initializer or "
                        "node output of this graph or an enclosing one)",
                        what, name);
    int64_t outer;
    int rc = ox_resolve(r, sc->parent, name, off, what, &outer, err);
    if (!rc) rc = ox_define(r, sc, name, -1, off, what, &v, err);
    if (rc) return rc;
    void *p = tio__pb_grow(sc->caps, &sc->caps_cap, sc->ncaps + 1, sizeof *sc->caps);
    if (!p) return tio__nomem(err, OX_FMT);
    sc->caps = p;
    sc->caps[sc->ncaps++] = v;
    *out = v;
    return ox_mem(r, 2 * sizeof(int64_t), off, err);
}

/* ------------------------------------------------------------- types */

static void ox_clear_dims(const tio_graph *g, tio_gvalue *v) {
    if (v->dims && v->rank > 0)
        for (int64_t k = 0; k < v->rank; k++) tio__gfree(g, (char *)v->dims[k].name);
    tio__gfree(g, v->dims);
    v->dims = NULL;
    v->rank = -1;
}

/* Makes value gv the constant of container tensor t: its dtype and dims
 * become the tensor's (what tio_graph_add_value gives a constant). */
static int ox_take_tensor_type(ox_reader *r, tio_gvalue *gv, int64_t t, int64_t off,
                               tio_error *err) {
    const tio_tensor *ts = tio_container_tensor(r->ctx->c, (size_t)t);
    size_t rank = tio_tensor_rank(ts);
    int rc = ox_count(r, rank, off, err);
    if (!rc) rc = ox_mem(r, tio__cost_dims(rank), off, err);
    if (rc) return rc;
    tio_dim *dims = calloc(rank ? rank : 1, sizeof *dims);
    if (!dims) return tio__nomem(err, OX_FMT);
    ox_clear_dims(tio_container_graph(r->ctx->c), gv);
    const int64_t *shape = tio_tensor_shape(ts);
    for (size_t k = 0; k < rank; k++) dims[k].value = shape[k];
    gv->dims = dims;
    gv->rank = (int32_t)rank;
    gv->dtype = tio_tensor_dtype(ts);
    gv->tensor = t;
    return TIO_OK;
}

/* Applies a ValueInfoProto's type (field 2) to value v of sc->g. */
/* The dims of TensorShapeProto sh, counted and charged (max_rank, the
 * object count, the memory budget). */
static int ox_shape_rank(ox_reader *r, const tio_pb_reader *sh, const char *lbl,
                         const char *vname, size_t *out, tio_error *err) {
    size_t rank = 0;
    tio_pb_reader d = *sh;
    tio_pb_field f;
    int rc;
    while (!tio__pb_done(&d)) {
        if ((rc = tio__pb_next(&d, &f, err))) return rc;
        if (f.number == 1) rank++;
    }
    if (rank > r->ctx->limits.max_rank)
        return tio__err(err, TIO_E_LIMIT, OX_FMT, ox_off(sh, sh->pos),
                        "%s: value '%.64s' has %zu dims, more than the limit of %u "
                        "(tio_limits.max_rank)", lbl, vname, rank, r->ctx->limits.max_rank);
    if ((rc = ox_count(r, rank, ox_off(sh, sh->pos), err)) ||
        (rc = ox_mem(r, tio__cost_dims(rank), ox_off(sh, sh->pos), err)))
        return rc;
    *out = rank;
    return TIO_OK;
}

/* A TypeProto that is not a tensor of a tio dtype, as a type tree (graph/
 * types.h): sequences, optionals, maps, sparse tensors, tensors of elements
 * tensio has no dtype for (string), nested at most TIO_GRAPH_TYPE_MAX_DEPTH
 * deep; an opaque or empty type is refused. */
static int ox_gtype(ox_reader *r, tio_pb_reader tp, const char *lbl, const char *vname,
                    unsigned depth, tio_gtype **out, tio_error *err) {
    *out = NULL;
    if (depth >= TIO_GRAPH_TYPE_MAX_DEPTH)
        return tio__err(err, TIO_E_LIMIT, OX_FMT, ox_off(&tp, tp.pos),
                        "%s: value '%.64s': its type nests deeper than %d", lbl, vname,
                        TIO_GRAPH_TYPE_MAX_DEPTH);
    tio_gtype *t = calloc(1, sizeof *t);
    if (!t) return tio__nomem(err, OX_FMT);
    *out = t;
    t->rank = -1;
    tio_pb_field f;
    tio_pb_reader m, sh;
    int rc;
    bool have_shape = false;
    size_t kind_at = tp.pos;
    while (!tio__pb_done(&tp)) {
        if ((rc = tio__pb_next(&tp, &f, err))) return rc;
        static const int kinds[10] = {0, TIO_GT_TENSOR, 0, 0, TIO_GT_SEQ, TIO_GT_MAP, 0, -1,
                                      TIO_GT_SPARSE, TIO_GT_OPTIONAL};
        if (f.number >= 10 || !kinds[f.number]) continue; /* denotation, unknown */
        if (kinds[f.number] < 0)
            return tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, ox_off(&tp, f.at),
                            "%s: value '%.64s' has an opaque type, which tensio does not "
                            "support", lbl, vname);
        if (t->kind)
            return tio__err(err, TIO_E_CORRUPT, OX_FMT, ox_off(&tp, f.at),
                            "%s: value '%.64s': a TypeProto with two kinds of value", lbl,
                            vname);
        t->kind = kinds[f.number];
        kind_at = f.at;
        if ((rc = tio__pb_sub(&tp, &f, "TypeProto", &m, err))) return rc;
    }
    if (!t->kind)
        return tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, ox_off(&tp, kind_at),
                        "%s: value '%.64s' has no type", lbl, vname);
    while (!tio__pb_done(&m)) {
        if ((rc = tio__pb_next(&m, &f, err))) return rc;
        bool inner = (t->kind == TIO_GT_SEQ || t->kind == TIO_GT_OPTIONAL) ? f.number == 1
                                                                            : t->kind ==
                                                                                      TIO_GT_MAP &&
                                                                                  f.number == 2;
        if (inner) {
            tio_pb_reader sub;
            if ((rc = tio__pb_sub(&m, &f, "TypeProto", &sub, err))) return rc;
            tio__gtype_free(t->inner);
            if ((rc = ox_gtype(r, sub, lbl, vname, depth + 1, &t->inner, err))) return rc;
        } else if (f.number == 1) {
            t->elem = (int)tio__pb_int32(&f);
        } else if (f.number == 2 && (t->kind == TIO_GT_TENSOR || t->kind == TIO_GT_SPARSE)) {
            if ((rc = tio__pb_sub(&m, &f, "TypeProto.Tensor.shape", &sh, err))) return rc;
            have_shape = true;
        }
    }
    bool nests = t->kind == TIO_GT_SEQ || t->kind == TIO_GT_OPTIONAL || t->kind == TIO_GT_MAP;
    if ((nests && !t->inner) || (t->kind != TIO_GT_SEQ && t->kind != TIO_GT_OPTIONAL &&
                                 !tio__gtype_elem_name(t->elem)))
        return tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, ox_off(&tp, kind_at),
                        "%s: value '%.64s': a type without its element type, or element "
                        "type %d, which tensio does not know", lbl, vname, t->elem);
    if (!have_shape) return TIO_OK;
    size_t rank;
    tio_pb_reader d;
    if ((rc = ox_shape_rank(r, &sh, lbl, vname, &rank, err))) return rc;
    t->dims = calloc(rank ? rank : 1, sizeof *t->dims);
    if (!t->dims) return tio__nomem(err, OX_FMT);
    t->rank = (int64_t)rank;
    size_t k = 0;
    for (d = sh; !tio__pb_done(&d) && k < rank;) {
        tio_pb_reader dm;
        if ((rc = tio__pb_next(&d, &f, err))) return rc;
        if (f.number != 1) continue;
        if ((rc = tio__pb_sub(&d, &f, "TensorShapeProto.dim", &dm, err))) return rc;
        tio_gdim *gd = &t->dims[k++];
        gd->value = -1;
        while (!tio__pb_done(&dm)) {
            tio_pb_field g;
            if ((rc = tio__pb_next(&dm, &g, err))) return rc;
            if (g.number == 1) {
                free(gd->name);
                gd->name = NULL;
                gd->value = tio__pb_int64(&g) < 0 ? -1 : tio__pb_int64(&g);
            } else if (g.number == 2) {
                free(gd->name);
                if ((rc = tio__ox_str(r, &dm, &g, lbl, &gd->name, err))) return rc;
                gd->value = -1;
            }
        }
    }
    return TIO_OK;
}

/* gv's type text from TypeProto tp (ox_gtype). */
static int ox_set_gtype(ox_reader *r, const tio_pb_reader *tp, const char *lbl, tio_graph *g,
                        tio_gvalue *gv, tio_error *err) {
    tio_gtype *t = NULL;
    int rc = ox_gtype(r, *tp, lbl, gv->name ? gv->name : "", 0, &t, err);
    tio_buf b = {0};
    if (!rc) {
        tio__gtype_text_put(&b, t);
        tio__buf_put(&b, "", 1);
        if (b.oom) rc = tio__nomem(err, OX_FMT);
    }
    tio__gtype_free(t);
    if (!rc) {
        ox_clear_dims(g, gv);
        tio__gfree(g, gv->type);
        gv->type = b.p; /* malloc'd: tio__gfree releases it */
        gv->dtype = TIO_DTYPE_INVALID;
        gv->rank = -1;
        b.p = NULL;
    }
    free(b.p);
    return rc;
}

static int ox_value_type(ox_reader *r, const tio_pb_reader *vi, ox_scope *sc, int64_t v,
                         const char *lbl, tio_error *err) {
    tio_pb_reader it = *vi, tp, tt, sh;
    tio_pb_field f;
    bool have_tp = false;
    int rc;
    while (!tio__pb_done(&it)) {
        if ((rc = tio__pb_next(&it, &f, err))) return rc;
        if (f.number == 2) {
            if ((rc = tio__pb_sub(&it, &f, "ValueInfoProto.type", &tp, err))) return rc;
            have_tp = true;
        }
    }
    tio_gvalue *gv = &sc->g->values[v];
    if (!have_tp || gv->tensor >= 0) return TIO_OK;
    bool have_tt = false, other = false;
    const tio_pb_reader tp0 = tp;
    while (!tio__pb_done(&tp)) {
        if ((rc = tio__pb_next(&tp, &f, err))) return rc;
        if (f.number == 1) {
            if ((rc = tio__pb_sub(&tp, &f, "TypeProto.tensor_type", &tt, err))) return rc;
            have_tt = true;
        } else if (f.number == 4 || f.number == 5 || f.number == 7 || f.number == 8 ||
                   f.number == 9) {
            other = true;
        }
    }
    if (other || !have_tt) /* a sequence, map, optional, sparse tensor (or refused) */
        return ox_set_gtype(r, &tp0, lbl, tio_container_graph(r->ctx->c), gv, err);
    int64_t code = 0;
    bool have_shape = false;
    while (!tio__pb_done(&tt)) {
        if ((rc = tio__pb_next(&tt, &f, err))) return rc;
        if (f.number == 1) code = tio__pb_int32(&f);
        if (f.number == 2) {
            if ((rc = tio__pb_sub(&tt, &f, "TypeProto.Tensor.shape", &sh, err))) return rc;
            have_shape = true;
        }
    }
    tio_dtype dt = tio__onnx_dtype(code);
    if (code != 0 && dt == TIO_DTYPE_INVALID) {
        if (tio__gtype_elem_name((int)code)) /* a string tensor ...: typed by text */
            return ox_set_gtype(r, &tp0, lbl, tio_container_graph(r->ctx->c), gv, err);
        const char *dn = tio__onnx_dtype_name(code);
        return tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, ox_off(&tt, tt.pos),
                        "%s: value '%.64s' has element type %lld (%s), which tensio does not "
                        "support",
                        lbl, gv->name, (long long)code, dn ? dn : "unknown");
    }
    gv->dtype = dt;
    tio__gfree(tio_container_graph(r->ctx->c), gv->type);
    gv->type = NULL;
    ox_clear_dims(tio_container_graph(r->ctx->c), gv);
    if (!have_shape) return TIO_OK;
    size_t rank;
    tio_pb_reader d;
    if ((rc = ox_shape_rank(r, &sh, lbl, gv->name, &rank, err))) return rc;
    tio_dim *dims = calloc(rank ? rank : 1, sizeof *dims);
    if (!dims) return tio__nomem(err, OX_FMT);
    gv->dims = dims;
    gv->rank = (int32_t)rank;
    size_t k = 0;
    d = sh;
    while (!tio__pb_done(&d) && k < rank) {
        tio_pb_reader dm;
        if ((rc = tio__pb_next(&d, &f, err))) return rc;
        if (f.number != 1) continue;
        if ((rc = tio__pb_sub(&d, &f, "TensorShapeProto.dim", &dm, err))) return rc;
        dims[k].value = -1;
        while (!tio__pb_done(&dm)) {
            tio_pb_field g;
            if ((rc = tio__pb_next(&dm, &g, err))) return rc;
            if (g.number == 1) {
                free((char *)dims[k].name);
                dims[k].name = NULL;
                dims[k].value = tio__pb_int64(&g);
                if (dims[k].value < 0) dims[k].value = -1;
            } else if (g.number == 2) {
                char *s;
                if ((rc = tio__ox_str(r, &dm, &g, lbl, &s, err))) return rc;
                free((char *)dims[k].name);
                dims[k].name = s;
                dims[k].value = -1;
            }
        }
        k++;
    }
    return TIO_OK;
}

/* The name (field 1) of a ValueInfoProto, NodeProto input... as a new string. */
static int ox_name_of(ox_reader *r, const tio_pb_reader *m, const char *lbl, char **out,
                      tio_error *err) {
    tio_pb_reader it = *m;
    tio_pb_field f;
    *out = NULL;
    while (!tio__pb_done(&it)) {
        int rc = tio__pb_next(&it, &f, err);
        if (rc) return rc;
        if (f.number == 1) {
            free(*out);
            if ((rc = tio__ox_str(r, &it, &f, lbl, out, err))) return rc;
        }
    }
    if (!*out)
        return tio__err(err, TIO_E_CORRUPT, OX_FMT, ox_off(m, m->pos), "%s: no name", lbl);
    return TIO_OK;
}

static int ox_graph(ox_reader *r, const tio_pb_reader *gr, ox_scope *sc, unsigned depth,
                    tio_error *err);

/* ------------------------------------------------------------ attributes */

enum {
    OX_A_FLOAT = 1, OX_A_INT, OX_A_STRING, OX_A_TENSOR, OX_A_GRAPH, OX_A_FLOATS,
    OX_A_INTS, OX_A_STRINGS, OX_A_TENSORS, OX_A_GRAPHS, OX_A_SPARSE_TENSOR,
    OX_A_SPARSE_TENSORS, OX_A_TYPE_PROTO, OX_A_TYPE_PROTOS
};

static const char *const ox_attr_names[] = {
    "UNDEFINED", "FLOAT", "INT", "STRING", "TENSOR", "GRAPH", "FLOATS", "INTS",
    "STRINGS", "TENSORS", "GRAPHS", "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO",
    "TYPE_PROTOS"};

typedef struct ox_attr_parts {
    char *name;
    int64_t type;
    tio_pb_field first[24]; /* the last occurrence of fields 1..23 */
    uint64_t count[24];     /* occurrences (elements for packed ones) */
    bool ref;
} ox_attr_parts;

/* A subgraph (GraphProto field f of reader m) into a new subgraph of sc->g. */
static int ox_subgraph(ox_reader *r, const tio_pb_reader *m, const tio_pb_field *f,
                       ox_scope *sc, unsigned depth, tio_graph **out, tio_error *err) {
    tio_pb_reader gr;
    int rc = tio__pb_sub(m, f, "AttributeProto.g", &gr, err);
    if (!rc) rc = ox_mem(r, tio__cost_graph(), ox_off(m, f->at), err);
    if (!rc) rc = tio_graph_new_subgraph(sc->g, out, err);
    if (rc) return rc;
    ox_scope sub;
    memset(&sub, 0, sizeof sub);
    sub.g = *out;
    sub.parent = sc;
    rc = ox_graph(r, &gr, &sub, depth + 1, err);
    if (!rc && sub.ncaps) rc = tio_graph_set_captures(sub.g, sub.caps, sub.ncaps, err);
    free(sub.slots);
    free(sub.caps);
    return rc;
}

static const char *ox_attr_name(const void *node, size_t i) {
    return ((const tio_gnode *)node)->attrs[i].name;
}

/* Attribute a of node ni, its name looked up in `seen` (the node's names:
 * a node of thousands of attributes is not a search per attribute). */
static int ox_add_attr(ox_scope *sc, size_t ni, const tio_attr *a, tio__names_lazy *seen,
                       tio_error *err) {
    const tio_gnode *n = &sc->g->nodes[ni];
    if (!a->name || tio__names_lazy_find(seen, n->attr_count, a->name, ox_attr_name, n) != SIZE_MAX)
        return tio_graph_add_attr(sc->g, ni, a, err); /* its refusal, by name */
    int rc = tio__graph_add_attr_new(sc->g, ni, a, err);
    n = &sc->g->nodes[ni];
    if (!rc) tio__names_lazy_added(seen, n->attr_count - 1, ox_attr_name, n);
    return rc;
}

static int ox_attr(ox_reader *r, const tio_pb_reader *ar, ox_scope *sc, size_t ni,
                   const char *op, const char *out0, const char *lbl, unsigned depth,
                   tio__names_lazy *seen, tio_error *err) {
    ox_attr_parts p;
    memset(&p, 0, sizeof p);
    tio_pb_reader it = *ar;
    tio_pb_field f;
    int64_t at = ox_off(ar, ar->pos);
    int rc = TIO_OK;
    while (!rc && !tio__pb_done(&it)) {
        if ((rc = tio__pb_next(&it, &f, err))) break;
        if (f.number == 1) {
            free(p.name);
            rc = tio__ox_str(r, &it, &f, lbl, &p.name, err);
        } else if (f.number == 20) {
            p.type = tio__pb_int32(&f);
        } else if (f.number == 21) {
            p.ref = true;
        } else if (f.number < 24) {
            uint64_t n = 1;
            if ((f.number == 7 || f.number == 8) && f.wire == TIO_PB_LEN)
                rc = tio__pb_packed_count(&it, &f, f.number == 7 ? TIO_PB_I32 : TIO_PB_VARINT,
                                          "AttributeProto", &n, err);
            p.first[f.number] = f;
            p.count[f.number] += n;
        }
    }
    if (rc) goto out;
    if (!p.name) {
        rc = tio__err(err, TIO_E_CORRUPT, OX_FMT, at, "%s: an attribute has no name", lbl);
        goto out;
    }
    if (p.ref) {
        rc = tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, at,
                      "%s: attribute '%.64s' refers to a function attribute (ref_attr_name), "
                      "which only a FunctionProto may use",
                      lbl, p.name);
        goto out;
    }
    if (p.type == 0) { /* IR < 3: the field that is set says */
        static const int64_t infer[][2] = {{2, OX_A_FLOAT}, {3, OX_A_INT}, {4, OX_A_STRING},
                                           {5, OX_A_TENSOR}, {6, OX_A_GRAPH},
                                           {7, OX_A_FLOATS}, {8, OX_A_INTS},
                                           {9, OX_A_STRINGS}, {10, OX_A_TENSORS},
                                           {11, OX_A_GRAPHS}};
        for (size_t k = 0; k < sizeof infer / sizeof infer[0] && !p.type; k++)
            if (p.count[infer[k][0]]) p.type = infer[k][1];
    }
    if (p.type == OX_A_TYPE_PROTO && p.count[14]) { /* Optional's `type`: as type text */
        tio_pb_reader tp;
        tio_gtype *gt = NULL;
        tio_buf b = {0};
        rc = tio__pb_sub(ar, &p.first[14], "AttributeProto.tp", &tp, err);
        if (!rc) rc = ox_gtype(r, tp, lbl, p.name, 0, &gt, err);
        if (!rc) {
            tio__gtype_text_put(&b, gt);
            tio__buf_put(&b, "", 1);
            if (b.oom) rc = tio__nomem(err, OX_FMT);
        }
        tio__gtype_free(gt);
        if (!rc) {
            tio_attr a;
            memset(&a, 0, sizeof a);
            a.name = p.name;
            a.type = TIO_ATTR_TYPE;
            a.s = b.p;
            rc = ox_mem(r, tio__cost_attr(strlen(p.name), b.len), at, err);
            if (!rc) rc = ox_add_attr(sc, ni, &a, seen, err);
        }
        free(b.p);
        goto out;
    }
    if (p.type == OX_A_SPARSE_TENSOR && p.count[22]) {
        /* a COO tensor (Constant's sparse_value): a TENSOR attribute whose
         * tensor is sparse (the writer gives it back as SPARSE_TENSOR) */
        tio_pb_reader tr;
        tio_attr a;
        memset(&a, 0, sizeof a);
        a.name = p.name;
        a.type = TIO_ATTR_TENSOR;
        const char *tn = op && strcmp(op, "Constant") == 0 && out0 ? out0 : NULL;
        rc = ox_count(r, 1, at, err);
        if (!rc) rc = ox_mem(r, tio__cost_attr(strlen(p.name), 0), at, err);
        if (!rc) rc = tio__pb_sub(ar, &p.first[22], "AttributeProto.sparse_tensor", &tr, err);
        if (!rc) rc = tio__ox_sparse(r, &tr, tn, lbl, &a.i, err);
        if (!rc) rc = ox_add_attr(sc, ni, &a, seen, err);
        goto out;
    }
    if (p.type >= OX_A_SPARSE_TENSOR && p.type <= OX_A_TYPE_PROTOS) {
        rc = tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, at,
                      "%s: attribute '%.64s' is of type %s, which tensio does not support",
                      lbl, p.name, ox_attr_names[p.type]);
        goto out;
    }
    if (p.type < OX_A_FLOAT || p.type > OX_A_GRAPHS) {
        rc = tio__err(err, TIO_E_CORRUPT, OX_FMT, at,
                      "%s: attribute '%.64s' has type %lld (expected 1..14)", lbl, p.name,
                      (long long)p.type);
        goto out;
    }
    static const uint32_t field_of[] = {0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    uint32_t fn = field_of[p.type];
    uint64_t n = p.count[fn];
    tio_attr a;
    memset(&a, 0, sizeof a);
    a.name = p.name;
    rc = ox_count(r, 1 + n, at, err);
    if (!rc) rc = ox_mem(r, tio__cost_attr(strlen(p.name), 0) + 2 * tio__cost_i64s(n), at, err);
    if (rc) goto out;
    if (p.type <= OX_A_GRAPH && n == 0 && p.type != OX_A_STRING) {
        if (p.type >= OX_A_TENSOR) {
            rc = tio__err(err, TIO_E_CORRUPT, OX_FMT, at,
                          "%s: attribute '%.64s' of type %s has no value", lbl, p.name,
                          ox_attr_names[p.type]);
            goto out;
        }
    }
    char *str = NULL;
    int64_t *ints = NULL;
    double *floats = NULL;
    char **strs = NULL;
    tio_graph **graphs = NULL;
    size_t got = 0;
    if (n > 1 && p.type <= OX_A_GRAPH) n = 1;
    if (p.type >= OX_A_FLOATS) {
        size_t esz = p.type == OX_A_FLOATS ? sizeof(double)
                     : p.type == OX_A_GRAPHS ? sizeof(tio_graph *)
                     : p.type == OX_A_STRINGS ? sizeof(char *)
                                              : sizeof(int64_t);
        void *m = calloc(n ? (size_t)n : 1, esz);
        if (!m) {
            rc = tio__nomem(err, OX_FMT);
            goto out;
        }
        if (p.type == OX_A_FLOATS) floats = m;
        else if (p.type == OX_A_GRAPHS) graphs = m;
        else if (p.type == OX_A_STRINGS) strs = m;
        else ints = m;
    }
    switch (p.type) {
    case OX_A_FLOAT:
        a.type = TIO_ATTR_FLOAT;
        a.f = n ? (double)tio__pb_float(&p.first[2]) : 0.0;
        break;
    case OX_A_INT:
        a.type = TIO_ATTR_INT;
        a.i = n ? tio__pb_int64(&p.first[3]) : 0;
        break;
    case OX_A_STRING:
        a.type = TIO_ATTR_STRING;
        if (n) rc = tio__ox_str(r, ar, &p.first[4], lbl, &str, err);
        else if (!(str = calloc(1, 1))) rc = tio__nomem(err, OX_FMT);
        a.s = str;
        break;
    case OX_A_TENSOR: {
        tio_pb_reader tr;
        const char *tn = op && strcmp(op, "Constant") == 0 && out0 ? out0 : NULL;
        a.type = TIO_ATTR_TENSOR;
        rc = tio__pb_sub(ar, &p.first[5], "AttributeProto.t", &tr, err);
        if (!rc) rc = tio__ox_tensor(r, &tr, tn, lbl, &a.i, err);
        break;
    }
    case OX_A_GRAPH:
        a.type = TIO_ATTR_GRAPH;
        rc = ox_subgraph(r, ar, &p.first[6], sc, depth, &a.graph, err);
        break;
    default: {
        /* the repeated kinds: walk every occurrence */
        a.type = p.type == OX_A_FLOATS    ? TIO_ATTR_FLOATS
                 : p.type == OX_A_INTS    ? TIO_ATTR_INTS
                 : p.type == OX_A_STRINGS ? TIO_ATTR_STRINGS
                 : p.type == OX_A_TENSORS ? TIO_ATTR_TENSORS
                                          : TIO_ATTR_GRAPHS;
        tio_pb_reader w = *ar;
        while (!rc && !tio__pb_done(&w) && got < n) {
            if ((rc = tio__pb_next(&w, &f, err))) break;
            if (f.number != fn) continue;
            if (p.type == OX_A_FLOATS || p.type == OX_A_INTS) {
                tio_pb_packed pk;
                rc = tio__pb_packed_init(&w, &f,
                                         p.type == OX_A_FLOATS ? TIO_PB_I32 : TIO_PB_VARINT,
                                         "AttributeProto", &pk, err);
                while (!rc && !tio__pb_packed_done(&pk) && got < n) {
                    uint64_t v;
                    if ((rc = tio__pb_packed_next(&pk, &v, err))) break;
                    if (p.type == OX_A_INTS) {
                        ints[got++] = (int64_t)v;
                    } else {
                        tio_pb_field tmp = {.u = v};
                        floats[got++] = (double)tio__pb_float(&tmp);
                    }
                }
            } else if (p.type == OX_A_STRINGS) {
                rc = tio__ox_str(r, &w, &f, lbl, &strs[got], err);
                if (!rc) got++;
            } else if (p.type == OX_A_TENSORS) {
                tio_pb_reader tr;
                rc = tio__pb_sub(&w, &f, "AttributeProto.tensors", &tr, err);
                if (!rc) rc = tio__ox_tensor(r, &tr, NULL, lbl, &ints[got], err);
                if (!rc) got++;
            } else {
                rc = ox_subgraph(r, &w, &f, sc, depth, &graphs[got], err);
                if (!rc) got++;
            }
        }
        a.count = got;
        a.ints = ints;
        a.tensors = ints;
        a.floats = floats;
        a.strings = (const char *const *)strs;
        a.graphs = graphs;
        break;
    }
    }
    if (!rc) rc = ox_add_attr(sc, ni, &a, seen, err);
    free(str);
    free(ints);
    free(floats);
    if (strs)
        for (size_t k = 0; k < got; k++) free(strs[k]);
    free(strs);
    free(graphs);
out:
    free(p.name);
    return rc;
}

/* ------------------------------------------------------------- nodes */

/* Pass 1 over a node: defines its outputs. */
static int ox_node_outputs(ox_reader *r, const tio_pb_reader *nr, ox_scope *sc,
                           const char *lbl, tio_error *err) {
    tio_pb_reader it = *nr;
    tio_pb_field f;
    while (!tio__pb_done(&it)) {
        int rc = tio__pb_next(&it, &f, err);
        if (rc) return rc;
        if (f.number != 2 || f.u == 0) continue;
        char *s;
        int64_t v;
        rc = tio__ox_str(r, &it, &f, lbl, &s, err);
        if (!rc) rc = ox_define(r, sc, s, -1, ox_off(&it, f.at), lbl, &v, err);
        free(s);
        if (rc) return rc;
    }
    return TIO_OK;
}

static int ox_node(ox_reader *r, const tio_pb_reader *nr, ox_scope *sc, size_t k,
                   unsigned depth, tio_error *err) {
    char lbl[112];
    snprintf(lbl, sizeof lbl, "node %zu", k);
    tio_pb_reader it = *nr;
    tio_pb_field f;
    char *name = NULL, *op = NULL, *domain = NULL, *out0 = NULL;
    uint64_t nin = 0, nout = 0, nattr = 0;
    int rc = TIO_OK;
    while (!rc && !tio__pb_done(&it)) {
        if ((rc = tio__pb_next(&it, &f, err))) break;
        char **dst = f.number == 3 ? &name : f.number == 4 ? &op : f.number == 7 ? &domain
                                                                                 : NULL;
        if (dst) {
            free(*dst);
            rc = tio__ox_str(r, &it, &f, lbl, dst, err);
        }
        if (f.number == 1) nin++;
        if (f.number == 2) nout++;
        if (f.number == 5) nattr++;
        if (f.number == 8)
            rc = tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, ox_off(&it, f.at),
                          "%s: the node names a function overload, which tensio does not "
                          "support",
                          lbl);
    }
    if (!rc && name) snprintf(lbl, sizeof lbl, "node %zu ('%.64s')", k, name);
    if (!rc && (!op || !op[0]))
        rc = tio__err(err, TIO_E_CORRUPT, OX_FMT, ox_off(nr, nr->pos),
                      "%s: the node has no op_type", lbl);
    int64_t *ins = NULL, *outs = NULL;
    if (!rc) rc = ox_count(r, 1 + nin + nout, ox_off(nr, nr->pos), err);
    if (!rc)
        rc = ox_mem(r, tio__cost_node(strlen(op)) + tio__cost_str(name ? strlen(name) : 0) +
                           tio__cost_str(domain ? strlen(domain) : 0) +
                           2 * tio__cost_i64s(nin) + 2 * tio__cost_i64s(nout),
                    ox_off(nr, nr->pos), err);
    if (!rc) {
        ins = malloc((nin + 1) * sizeof *ins);
        outs = malloc((nout + 1) * sizeof *outs);
        if (!ins || !outs) rc = tio__nomem(err, OX_FMT);
    }
    size_t ki = 0, ko = 0;
    it = *nr;
    while (!rc && !tio__pb_done(&it)) {
        if ((rc = tio__pb_next(&it, &f, err))) break;
        if (f.number != 1 && f.number != 2) continue;
        char *s;
        if ((rc = tio__ox_str(r, &it, &f, lbl, &s, err))) break;
        if (f.number == 1) {
            ins[ki] = -1;
            if (s[0]) rc = ox_resolve(r, sc, s, ox_off(&it, f.at), lbl, &ins[ki], err);
            ki++;
        } else {
            outs[ko] = s[0] ? ox_lookup(sc, s) : -1;
            if (ko == 0 && s[0]) {
                out0 = s;
                s = NULL;
            }
            ko++;
        }
        free(s);
    }
    tio_node_info ni;
    memset(&ni, 0, sizeof ni);
    ni.name = name;
    ni.op = op;
    ni.domain = domain;
    ni.native_id = -1;
    ni.inputs = ins;
    ni.input_count = ki;
    ni.outputs = outs;
    ni.output_count = ko;
    size_t idx = 0;
    if (!rc) rc = tio_graph_add_node(sc->g, &ni, &idx, err);
    it = *nr;
    tio__names_lazy seen; /* the node's attribute names */
    atomic_init(&seen, NULL);
    while (!rc && !tio__pb_done(&it)) {
        tio_pb_reader ar;
        if ((rc = tio__pb_next(&it, &f, err))) break;
        if (f.number != 5) continue;
        rc = tio__pb_sub(&it, &f, "NodeProto.attribute", &ar, err);
        if (!rc) rc = ox_attr(r, &ar, sc, idx, op, out0, lbl, depth, &seen, err);
    }
    tio__names_lazy_free(&seen);
    free(ins);
    free(outs);
    free(name);
    free(op);
    free(domain);
    free(out0);
    (void)nattr;
    return rc;
}

/* ------------------------------------------------------------- graphs */

static int ox_set_meta(ox_reader *r, tio_graph *g, const char *key, const tio_pb_reader *m,
                       const tio_pb_field *f, tio_error *err) {
    char *s;
    int rc = tio__ox_str(r, m, f, key, &s, err);
    if (!rc) rc = ox_mem(r, tio__cost_str(strlen(key)) + 64, ox_off(m, f->at), err);
    if (!rc) rc = tio_graph_meta_set(g, key, s, err);
    free(s);
    return rc;
}

/* Reads the ValueInfoProtos of field `number` (11 inputs, 12 outputs, 13
 * value_info) of a graph: defines (inputs), resolves (outputs) or looks up
 * (value_info) each name, applies its type, lists the values in *list. */
/* A graph's fields, read once: the walks below go through these, not the
 * message, so that the tags beside far initializers are read once (by
 * pread, tio_pb_head) and not once per walk. The index is scratch, freed
 * with the walk, and bounded by the input: past OX_FIELDS_MAX(size) fields
 * (tiny fields by the thousand: a hostile graph) the walks read the message
 * again, as they did before it existed. */
#define OX_FIELDS_MAX(size) (((size) / 4u + (64u << 10)) / sizeof(tio_pb_field))
typedef struct ox_fields {
    const tio_pb_reader *gr; /* the graph */
    tio_pb_field *v;         /* NULL: walk the message */
    size_t n;
} ox_fields;

static int ox_graph_fields(const tio_pb_reader *gr, ox_fields *fs, tio_error *err) {
    tio_pb_reader it = *gr;
    size_t cap = 0, max = OX_FIELDS_MAX(gr->size);
    fs->gr = gr;
    fs->v = NULL;
    fs->n = 0;
    while (!tio__pb_done(&it)) {
        if (fs->n >= max) { /* too many: no index */
            free(fs->v);
            fs->v = NULL;
            fs->n = 0;
            return TIO_OK;
        }
        tio_pb_field *p = tio__pb_grow(fs->v, &cap, fs->n + 1, sizeof *fs->v);
        if (!p) return tio__nomem(err, OX_FMT);
        fs->v = p;
        int rc = tio__pb_next(&it, &fs->v[fs->n], err);
        if (rc) return rc;
        fs->n++;
    }
    return TIO_OK;
}

/* One walk of the graph's fields: from the index, or the message. */
typedef struct ox_walk {
    const ox_fields *fs;
    size_t i;
    tio_pb_reader it;
} ox_walk;

static ox_walk ox_walk_start(const ox_fields *fs) {
    return (ox_walk){fs, 0, *fs->gr};
}

/* The next field into *f: 1, or 0 at the end (*rc TIO_OK) or on an error
 * (*rc set). */
static int ox_walk_next(ox_walk *w, tio_pb_field *f, int *rc, tio_error *err) {
    *rc = TIO_OK;
    if (w->fs->v) {
        if (w->i >= w->fs->n) return 0;
        *f = w->fs->v[w->i++];
        return 1;
    }
    if (tio__pb_done(&w->it)) return 0;
    *rc = tio__pb_next(&w->it, f, err);
    return *rc == TIO_OK;
}

static int ox_value_infos(ox_reader *r, const ox_fields *fs, ox_scope *sc, uint32_t number,
                          int64_t **list, size_t *n, tio_error *err) {
    const tio_pb_reader *gr = fs->gr;
    size_t cap = 0;
    *list = NULL;
    *n = 0;
    const char *what = number == 11 ? "graph input" : number == 12 ? "graph output"
                                                                   : "value_info";
    ox_walk w = ox_walk_start(fs);
    tio_pb_field f;
    int rc;
    while (ox_walk_next(&w, &f, &rc, err)) {
        if (f.number != number) continue;
        tio_pb_reader vr;
        char *name = NULL;
        int64_t v = -1, off = ox_off(gr, f.at);
        rc = tio__pb_sub(gr, &f, "ValueInfoProto", &vr, err);
        if (!rc) rc = ox_name_of(r, &vr, what, &name, err);
        if (!rc) {
            if (number == 11) {
                v = ox_lookup(sc, name);
                if (v < 0) rc = ox_define(r, sc, name, -1, off, what, &v, err);
            } else if (number == 12) {
                rc = ox_resolve(r, sc, name, off, what, &v, err);
            } else {
                v = ox_lookup(sc, name);
            }
        }
        if (!rc && v >= 0) rc = ox_value_type(r, &vr, sc, v, what, err);
        free(name);
        if (!rc && v >= 0 && number != 13) {
            void *p = tio__pb_grow(*list, &cap, *n + 1, sizeof **list);
            if (!p) rc = tio__nomem(err, OX_FMT);
            else (*list = p)[(*n)++] = v;
            if (!rc) rc = ox_mem(r, 3 * sizeof(int64_t), off, err);
        }
        if (rc) return rc;
    }
    return rc;
}

static int ox_graph(ox_reader *r, const tio_pb_reader *gr, ox_scope *sc, unsigned depth,
                    tio_error *err) {
    tio_read_ctx *ctx = r->ctx;
    int64_t gat = ox_off(gr, gr->pos);
    if (depth > ctx->limits.max_depth)
        return tio__err(err, TIO_E_LIMIT, OX_FMT, gat,
                        "subgraphs nest deeper than the limit of %u (tio_limits.max_depth)",
                        ctx->limits.max_depth);
    int rc = TIO_OK;
    int64_t *ins = NULL, *outs = NULL;
    size_t nin = 0, nout = 0;
    ox_fields fs;
    tio_pb_field f;
    ox_walk w;
    rc = ox_graph_fields(gr, &fs, err);
    /* Names and doc strings; initializers (after the inputs they may give
     * defaults to); then the inputs. */
    if (!rc) rc = ox_value_infos(r, &fs, sc, 11, &ins, &nin, err);
    for (w = ox_walk_start(&fs); !rc && ox_walk_next(&w, &f, &rc, err);) {
        if (f.number == 2) rc = ox_set_meta(r, sc->g, OX_META_GRAPH_NAME, gr, &f, err);
        else if (f.number == 10) rc = ox_set_meta(r, sc->g, OX_META_GRAPH_DOC, gr, &f, err);
        else if (f.number == 14)
            rc = tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, ox_off(gr, f.at),
                          "the graph has quantization annotations, which tensio does not "
                          "support");
        else if (f.number == 5 || f.number == 15) {
            tio_pb_reader tr;
            char lbl[64];
            int64_t t, v;
            snprintf(lbl, sizeof lbl, "%s at offset %lld",
                     f.number == 5 ? "initializer" : "sparse initializer",
                     (long long)ox_off(gr, f.at));
            rc = tio__pb_sub(gr, &f,
                             f.number == 5 ? "GraphProto.initializer"
                                           : "GraphProto.sparse_initializer",
                             &tr, err);
            if (!rc) rc = f.number == 5 ? tio__ox_tensor(r, &tr, NULL, lbl, &t, err)
                                        : tio__ox_sparse(r, &tr, NULL, lbl, &t, err);
            if (rc) break;
            const char *tn = tio_tensor_name(tio_container_tensor(ctx->c, (size_t)t));
            if (!tn)
                rc = tio__err(err, TIO_E_CORRUPT, OX_FMT, ox_off(gr, f.at),
                              "%s: the initializer has no name", lbl);
            else if ((v = ox_lookup(sc, tn)) >= 0 && sc->g->values[v].tensor < 0) {
                /* an input with a default (IR < 4): a constant now, whose
                 * dtype and dims are its tensor's, as for any constant */
                rc = ox_take_tensor_type(r, &sc->g->values[v], t, ox_off(gr, f.at), err);
            } else {
                rc = ox_define(r, sc, tn, t, ox_off(gr, f.at), lbl, &v, err);
            }
        }
    }
    /* Nodes: every output first, so that inputs may name any of them. */
    size_t nn = 0;
    for (int pass = 0; pass < 2 && !rc; pass++) {
        nn = 0;
        for (w = ox_walk_start(&fs); !rc && ox_walk_next(&w, &f, &rc, err);) {
            tio_pb_reader nr;
            if (f.number != 1) continue;
            char lbl[48];
            snprintf(lbl, sizeof lbl, "node %zu", nn);
            rc = tio__pb_sub(gr, &f, "GraphProto.node", &nr, err);
            if (!rc) rc = pass ? ox_node(r, &nr, sc, nn, depth, err)
                               : ox_node_outputs(r, &nr, sc, lbl, err);
            nn++;
        }
    }
    if (!rc) rc = ox_value_infos(r, &fs, sc, 12, &outs, &nout, err);
    int64_t *none = NULL;
    size_t nnone = 0;
    if (!rc) rc = ox_value_infos(r, &fs, sc, 13, &none, &nnone, err);
    free(fs.v);
    free(none);
    if (!rc) rc = tio_graph_set_inputs(sc->g, ins, nin, err);
    if (!rc) rc = tio_graph_set_outputs(sc->g, outs, nout, err);
    free(ins);
    free(outs);
    return rc;
}

/* -------------------------------------------------------------- model */

void tio__ox_reader_init(ox_reader *r, tio_read_ctx *ctx, const char *fmt) {
    memset(r, 0, sizeof *r);
    r->ctx = ctx;
    r->fmt = fmt;
    r->max_objects = ctx->size + 4096;
    if (r->max_objects > ctx->limits.max_objects) r->max_objects = ctx->limits.max_objects;
    tio__budget_init(&r->mem, fmt, ctx->size, TIO_ONNX_DECODE_MEM_FACTOR,
                     "the graph is denser than real models are (objects of a few bytes "
                     "each in the file and a record, a string and an array slot each in "
                     "memory)",
                     &ctx->limits);
}

static const char *ox_opset_domain(const void *g, size_t i) {
    return ((const tio_graph *)g)->opset_domains[i];
}

int tio__onnx_read(tio_read_ctx *ctx, tio_error *err) {
    ox_reader r;
    tio__ox_reader_init(&r, ctx, OX_FMT);
    uint32_t pbdepth = 3 * ctx->limits.max_depth + 8;
    tio_pb_reader m;
    tio__pb_init(&m, ctx->data, ctx->size, 0, OX_FMT, pbdepth);
    tio_pb_head ph; /* a mapped file: far fields by pread */
    tio__pb_use_head(&m, &ph, ctx->head);
    int rc = tio__pb_verify(&m, &tio__onnx_ModelProto, err);
    if (rc) return rc;
    tio_graph *g = NULL;
    rc = tio_container_new_graph(ctx->c, &g, err);
    if (!rc) rc = tio_graph_set_native_format(g, OX_FMT, err);
    if (rc) return rc;
    tio_pb_reader it = m, gr;
    tio_pb_field f;
    bool have_graph = false;
    tio__names_lazy opsets; /* g's opset domains by name */
    atomic_init(&opsets, NULL);
    static const struct {
        uint32_t number;
        const char *key;
    } strs[] = {{2, OX_META_PRODUCER}, {3, OX_META_PRODUCER_VERSION}, {4, OX_META_DOMAIN},
                {6, OX_META_DOC}};
    while (!rc && !tio__pb_done(&it)) {
        if ((rc = tio__pb_next(&it, &f, err))) break;
        char num[TIO__DEC_CAP];
        switch (f.number) {
        case 1:
        case 5: {
            const char *key = f.number == 1 ? OX_META_IR : OX_META_MODEL_VERSION;
            if (f.number == 1 &&
                (tio__pb_int64(&f) < 0 || tio__pb_int64(&f) > TIO__ONNX_MAX_IR)) {
                rc = tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, ox_off(&it, f.at),
                              "ir_version is %lld, expected an ONNX IR version (1..%d; "
                              "ONNX is at 10 or so)",
                              (long long)tio__pb_int64(&f), TIO__ONNX_MAX_IR);
                break;
            }
            char buf[24];
            snprintf(buf, sizeof buf, "%lld", (long long)tio__pb_int64(&f));
            rc = tio_graph_meta_set(g, key, buf, err);
            if (!rc && f.number == 1)
                rc = tio__kv_set(&ctx->c->props, "ir_version", buf, err);
            break;
        }
        case 7:
            rc = tio__pb_sub(&it, &f, "ModelProto.graph", &gr, err);
            have_graph = true;
            break;
        case 8: {
            tio_pb_reader o;
            tio_pb_field h;
            char *dom = NULL;
            int64_t ver = 0;
            rc = tio__pb_sub(&it, &f, "ModelProto.opset_import", &o, err);
            while (!rc && !tio__pb_done(&o)) {
                if ((rc = tio__pb_next(&o, &h, err))) break;
                if (h.number == 1) {
                    free(dom);
                    rc = tio__ox_str(&r, &o, &h, "opset_import", &dom, err);
                } else if (h.number == 2) {
                    ver = tio__pb_int64(&h);
                }
            }
            if (!rc) rc = ox_count(&r, 1, ox_off(&it, f.at), err);
            if (!rc) rc = ox_mem(&r, 64 + tio__cost_str(dom ? strlen(dom) : 0), 0, err);
            const char *d = dom && strcmp(dom, "ai.onnx") != 0 ? dom : "";
            /* a domain seen before sets its version again, as tio_graph_set_opset
             * would (an index: thousands of domains) */
            size_t at = rc ? SIZE_MAX
                           : tio__names_lazy_find(&opsets, g->opset_count, d, ox_opset_domain, g);
            if (!rc && at != SIZE_MAX) {
                g->opset_versions[at] = ver;
            } else if (!rc) {
                rc = tio__graph_opset_append(g, d, ver, err);
                if (!rc) tio__names_lazy_added(&opsets, g->opset_count - 1, ox_opset_domain, g);
            }
            free(dom);
            break;
        }
        case 14: {
            char *k = NULL, *v = NULL;
            rc = tio__ox_entry(&r, &it, &f, "ModelProto.metadata_props", &k, &v, err);
            if (!rc) rc = ox_count(&r, 1, ox_off(&it, f.at), err);
            if (!rc && (!k || !k[0]))
                rc = tio__err(err, TIO_E_CORRUPT, OX_FMT, ox_off(&it, f.at),
                              "metadata_props: an entry has no key");
            if (!rc) rc = ox_mem(&r, 64, ox_off(&it, f.at), err);
            if (!rc) rc = tio_graph_meta_set(g, k, v ? v : "", err);
            free(k);
            free(v);
            break;
        }
        case 20:
        case 25:
            rc = tio__err(err, TIO_E_UNSUPPORTED, OX_FMT, ox_off(&it, f.at),
                          "the model has %s, which tensio does not support",
                          f.number == 20 ? "training information" : "model-local functions");
            break;
        default:
            for (size_t k = 0; k < sizeof strs / sizeof strs[0]; k++)
                if (strs[k].number == f.number)
                    rc = ox_set_meta(&r, g, strs[k].key, &it, &f, err);
            break;
        }
        (void)num;
    }
    tio__names_lazy_free(&opsets);
    if (rc) return rc;
    if (!have_graph)
        return tio__err(err, TIO_E_CORRUPT, OX_FMT, 0, "the model has no graph (field 7)");
    ox_scope sc;
    memset(&sc, 0, sizeof sc);
    sc.g = g;
    rc = ox_graph(&r, &gr, &sc, 1, err);
    free(sc.slots);
    free(sc.caps);
    return rc;
}
