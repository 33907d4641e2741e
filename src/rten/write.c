/*
 * RTen (.rten) writing: V2 by default (model data at 32, tensor data and every
 * external constant 64-byte aligned, constants of at most 16 elements inline,
 * as rten-convert does), V1 on request. See docs/formats/rten.md.
 */
#include "core/internal.h"
#include "flatbuf/flatbuf.h"
#include "graph/budget.h"
#include "graph/graph.h"
#include "rten/lower.h"
#include "rten/opmap.h"
#include "rten/rten.h"
#include "rten/schema.h"
#include "tmfile/tmfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- write */

/* External data: a container tensor (converted to its rten dtype when
 * written), or a generated constant's bytes (owned). */
typedef struct rt_ext {
    uint64_t off;
    int64_t tensor;
    uint8_t *gen;
    size_t nbytes;
} rt_ext;

typedef struct rt_writer {
    tio_write_plan *plan;
    const tio_container *c;
    tio_fb_builder *b;
    unsigned version;
    /* per container tensor: external data offset (relative to tensor data),
     * or UINT64_MAX when inline / not yet placed */
    uint64_t *ext;
    rt_ext *order;    /* external data, in placement (= offset) order */
    size_t norder, ordercap;
    uint64_t ext_end; /* bytes of tensor data */
} rt_writer;

/* Read from rten (a subgraph: its root was): written as read. */
static bool rt_native(const tio_graph *g) { return tio__graph_native_is(g, RT_FMT); }

/* A lowered node: the attributes under rten's field names, with rten's
 * values (see tio__rten_lower). */
typedef struct rt_lowered {
    tio_gnode node; /* a shallow copy of the node with `attrs` replaced */
    tio_gattr *attrs;
} rt_lowered;

static const int64_t rt_zeros[16] = {0};

static const tio_gattr *rt_find_attr(const tio_gattr *a, size_t n, const char *name) {
    for (size_t k = 0; k < n; k++)
        if (strcmp(a[k].name, name) == 0) return &a[k];
    return NULL;
}

/* The single value of a 1-element container tensor (ConstantOfShape's ONNX
 * `value`), as an INT or FLOAT attribute. int64 is clamped to int32, as
 * rten-convert does. */
static int rt_tensor_scalar(const tio_container *c, const tio_gattr *a, tio_gattr *o,
                            const char *lbl, tio_error *err) {
    const tio_tensor *t =
        a->i >= 0 && (size_t)a->i < c->count ? c->tensors[a->i] : NULL;
    if (!t || t->numel != 1 || !t->data || t->layout != TIO_LAYOUT_DENSE)
        return tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                        "%s: attribute '%s' must be a 1-element tensor", lbl, a->name);
    const uint8_t *d = t->data;
    switch (t->dtype) {
    case TIO_FLOAT32: {
        uint32_t u = tio__ld32(d);
        float x;
        memcpy(&x, &u, sizeof x);
        o->type = TIO_ATTR_FLOAT;
        o->f = x;
        return TIO_OK;
    }
    case TIO_INT32: o->type = TIO_ATTR_INT; o->i = (int32_t)tio__ld32(d); return TIO_OK;
    case TIO_INT64: {
        int64_t v = (int64_t)tio__ld64(d);
        o->type = TIO_ATTR_INT;
        o->i = v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v;
        return TIO_OK;
    }
    case TIO_BOOL:
    case TIO_UINT8: o->type = TIO_ATTR_INT; o->i = d[0]; return TIO_OK;
    case TIO_INT8: o->type = TIO_ATTR_INT; o->i = (int8_t)d[0]; return TIO_OK;
    default:
        return tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                        "%s: attribute '%s' is a %s tensor; rten's ConstantOfShape takes float "
                        "or int values",
                        lbl, a->name, tio_dtype_name(t->dtype));
    }
}

static int rt_enum_index(const tio_rten_fmap *fm, const tio_gattr *a, const char *lbl,
                         const char *op, int64_t *out, tio_error *err) {
    if (a->type != TIO_ATTR_STRING)
        return tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                        "%s: %s attribute '%s' must be a STRING", lbl, op, a->name);
    for (unsigned k = 0; k < fm->nstrs; k++)
        if (strcmp(fm->strs[k], a->s) == 0) {
            *out = k;
            return TIO_OK;
        }
    if (fm->conv == TIO_RTEN_AUTOPAD && strcmp(a->s, "VALID") == 0) {
        *out = TIO_RTEN_AUTOPAD_NOTSET;
        return TIO_OK;
    }
    return tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                    "%s: %s attribute '%s' = \"%s\" has no rten form", lbl, op, a->name, a->s);
}

/* Lowers a node's ONNX attributes to rten's attrs fields through the mapping
 * table (rten/opmap.c): "rten.<field>" attributes go to their field as they
 * are; ONNX attributes are renamed and converted; ONNX attributes rten-convert
 * accepts without a field are checked and dropped; anything else is
 * TIO_E_UNSUPPORTED. A graph not read from rten gets rten-convert's defaults
 * for absent attributes. `t` is the attrs table written (NULL: none). */
static int rt_lower(const rt_writer *w, const tio_graph *g, const tio_gnode *n, unsigned code,
                    unsigned tag, const char *lbl, rt_lowered *out, tio_error *err) {
    out->node = *n;
    out->attrs = NULL;
    const tio_rten_opmap *map =
        code < TIO_RTEN_OP_COUNT && tag && tio__rten_opmap[code].attrs == tag
            ? &tio__rten_opmap[code]
            : NULL;
    size_t cap = n->attr_count + (map ? map->nfields : 0) + 1;
    tio_gattr *o = calloc(cap, sizeof *o);
    if (!o) return tio__nomem(err, RT_FMT);
    size_t m = 0;
    bool valid = false;
    int rc = TIO_OK;
    for (size_t k = 0; rc == TIO_OK && k < n->attr_count; k++) {
        const tio_gattr *a = &n->attrs[k];
        if (tio__tmfile_storage_attr(a->name) || tio__tmfile_idle_attr(n->op, a->name))
            continue; /* how a tmfile stored it; a global pool's window */
        if (strncmp(a->name, "rten.", 5) == 0) {
            o[m] = *a;
            o[m++].name = a->name + 5;
            continue;
        }
        const tio_rten_fmap *fm = map ? tio__rten_fmap_onnx(map, a->name) : NULL;
        if (!fm) {
            if (!map) { /* an unknown operator or table: its fields by name */
                o[m++] = *a;
                continue;
            }
            const tio_rten_extra *x = NULL;
            for (unsigned e = 0; e < map->nextra; e++)
                if (strcmp(map->extra[e].onnx, a->name) == 0) x = &map->extra[e];
            if (!x)
                rc = tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                              "%s: %s attribute '%s' has no rten form", lbl, n->op, a->name);
            else if (x->must) {
                bool ok = a->type == x->type;
                if (ok && a->type == TIO_ATTR_INT) ok = a->i == x->idef;
                if (ok && a->type == TIO_ATTR_FLOAT) ok = a->f == x->fdef;
                if (ok && a->type == TIO_ATTR_STRING) ok = strcmp(a->s, x->sdef) == 0;
                for (size_t v = 0; ok && a->type == TIO_ATTR_INTS && v < a->count; v++)
                    ok = a->ints[v] == x->idef;
                if (!ok)
                    rc = tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                                  "%s: %s attribute '%s': rten supports only its default",
                                  lbl, n->op, a->name);
            }
            continue;
        }
        tio_gattr *d = &o[m++];
        *d = *a;
        d->name = (char *)(uintptr_t)fm->field;
        switch (fm->conv) {
        case TIO_RTEN_ENUM:
        case TIO_RTEN_AUTOPAD:
            rc = rt_enum_index(fm, a, lbl, n->op, &d->i, err);
            d->type = TIO_ATTR_INT;
            d->s = NULL;
            if (!rc && fm->conv == TIO_RTEN_AUTOPAD && strcmp(a->s, "VALID") == 0) valid = true;
            break;
        case TIO_RTEN_DTYPE:
            d->i = a->type == TIO_ATTR_INT ? tio__rten_dtype_from_onnx(a->i) : -1;
            if (d->i < 0)
                rc = tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                              "%s: %s attribute '%s': data type %lld has no rten form", lbl,
                              n->op, a->name, (long long)a->i);
            break;
        case TIO_RTEN_SCALAR:
            if (a->type == TIO_ATTR_TENSOR) rc = rt_tensor_scalar(w->c, a, d, lbl, err);
            break;
        default: break;
        }
    }
    if (!rc && valid) { /* VALID: no padding (rten-convert: zeros, 2 per kernel dim) */
        const tio_gattr *ks = rt_find_attr(n->attrs, n->attr_count, "kernel_shape");
        tio_gattr *p = (tio_gattr *)(uintptr_t)rt_find_attr(o, m, "pads");
        if (!p) p = &o[m++];
        memset(p, 0, sizeof *p);
        p->name = (char *)(uintptr_t) "pads";
        p->type = TIO_ATTR_INTS;
        p->count = ks && ks->count <= 8 ? 2 * ks->count : 4;
        p->ints = (int64_t *)(uintptr_t)rt_zeros;
    }
    if (!rc && map && !rt_native(g)) {
        const tio_gattr *ap = rt_find_attr(o, m, "auto_pad");
        bool same = ap && ap->type == TIO_ATTR_INT && ap->i == TIO_RTEN_AUTOPAD_SAME;
        for (unsigned f = 0; rc == TIO_OK && f < map->nfields; f++) {
            const tio_rten_fmap *fm = &map->fields[f];
            if (!fm->has_def || !fm->onnx || rt_find_attr(o, m, fm->field)) continue;
            if (same && strcmp(fm->field, "pads") == 0) continue; /* Same: no pads */
            tio_gattr *d = &o[m++];
            memset(d, 0, sizeof *d);
            d->name = (char *)(uintptr_t)fm->field;
            d->type = fm->type;
            d->i = fm->idef;
            d->f = fm->fdef;
            if (fm->conv == TIO_RTEN_ENUM || fm->conv == TIO_RTEN_AUTOPAD) {
                d->type = TIO_ATTR_INT;
                for (unsigned e = 0; e < fm->nstrs; e++)
                    if (strcmp(fm->strs[e], fm->sdef) == 0) d->i = e;
            } else if (fm->conv == TIO_RTEN_DTYPE) {
                d->i = tio__rten_dtype_from_onnx(fm->idef);
            } else if (fm->type == TIO_ATTR_INTS) {
                d->count = fm->nvdef;
                d->ints = (int64_t *)(uintptr_t)fm->vdef;
            }
        }
    }
    if (rc) {
        free(o);
        return rc;
    }
    out->attrs = o;
    out->node.attrs = o;
    out->node.attr_count = m;
    out->node.attr_cap = cap;
    return TIO_OK;
}

static const char *rt_node_label(const tio_gnode *n, size_t j, char *buf, size_t cap) {
    if (n->name)
        snprintf(buf, cap, "node %zu ('%.48s', %s)", j, n->name, n->op);
    else
        snprintf(buf, cap, "node %zu (%s)", j, n->op);
    return buf;
}

/* The OperatorType code of a node. */
static int rt_op_code(const tio_graph *g, const tio_gnode *n, const char *lbl, unsigned *out,
                      tio_error *err) {
    for (unsigned k = 0; k < TIO_RTEN_OP_COUNT; k++)
        if (strcmp(tio__rten_ops[k].name, n->op) == 0) {
            *out = k;
            return TIO_OK;
        }
    if (rt_native(g) && n->native_id >= 0 && n->native_id <= 255) {
        *out = (unsigned)n->native_id;
        return TIO_OK;
    }
    return tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                    "%s: rten has no operator '%s' (OperatorType lists %d operators)", lbl,
                    n->op, TIO_RTEN_OP_COUNT);
}

/* The attrs union tag a node is written with (0 = none): the table the
 * source file had (none when it had none: a round trip keeps that, and rten
 * reports it as it did for the source), else the operator's table, except
 * that an optional table (CumSum, Pad, Shape) is written only when used. */
static unsigned rt_attrs_tag(const tio_graph *g, const tio_gnode *n, unsigned code) {
    bool native = rt_native(g);
    if (native && n->native_attrs > 0 && n->native_attrs <= 255) return (unsigned)n->native_attrs;
    if (native && n->native_attrs < 0 && n->attr_count == 0) return 0;
    if (code >= TIO_RTEN_OP_COUNT) return 0;
    const tio_rten_op *op = &tio__rten_ops[code];
    if (native && op->optional && n->attr_count == 0) return 0;
    return op->attrs;
}

static const tio_fb_field *rt_find_field(const tio_fb_table *t, const char *name, unsigned *id) {
    for (unsigned k = 0; k < t->nfields; k++)
        if (t->fields[k].kind != TIO_FB_UNION_TYPE && t->fields[k].kind != TIO_FB_NONE &&
            strcmp(t->fields[k].name, name) == 0) {
            *id = k;
            return &t->fields[k];
        }
    return NULL;
}

static const char *rt_kind_name(int kind) {
    switch (kind) {
    case TIO_FB_BOOL: return "bool";
    case TIO_FB_I8: return "byte";
    case TIO_FB_U8: return "ubyte";
    case TIO_FB_I16: return "short";
    case TIO_FB_U16: return "ushort";
    case TIO_FB_I32: return "int";
    case TIO_FB_U32: return "uint";
    case TIO_FB_I64: return "long";
    case TIO_FB_U64: return "ulong";
    case TIO_FB_F32: return "float";
    case TIO_FB_F64: return "double";
    case TIO_FB_STRING: return "string";
    case TIO_FB_VECTOR: return "vector";
    case TIO_FB_TABLE: return "table";
    case TIO_FB_UNION: return "union";
    default: return "?";
    }
}

/* Checks that every attribute of a node has a field of a compatible type in
 * the attrs table, with its value in range. Run before writing anything. */
static int rt_check_attrs(const tio_gnode *n, const tio_fb_table *t, const char *lbl,
                          tio_error *err) {
    for (size_t k = 0; k < n->attr_count; k++) {
        const tio_gattr *a = &n->attrs[k];
        unsigned id;
        const tio_fb_field *f = t ? rt_find_field(t, a->name, &id) : NULL;
        if (!f)
            return tio__err(err, TIO_E_LOSSY, RT_FMT, -1,
                            t ? "%s: attribute '%s' has no field in rten's %s table"
                              : "%s: attribute '%s' would be lost: rten stores no attributes "
                                "for this operator%.0s",
                            lbl, a->name, t ? t->name : "");
        bool ok = false;
        switch (f->kind) {
        case TIO_FB_F32:
        case TIO_FB_F64: ok = a->type == TIO_ATTR_FLOAT; break;
        case TIO_FB_STRING: ok = a->type == TIO_ATTR_STRING; break;
        case TIO_FB_TABLE: ok = a->type == TIO_ATTR_GRAPH && f->table == tio__rten_Graph; break;
        case TIO_FB_UNION:
            ok = (a->type == TIO_ATTR_INT && tio__fb_int_fits(TIO_FB_I32, a->i)) ||
                 a->type == TIO_ATTR_FLOAT;
            break;
        case TIO_FB_VECTOR:
            if (f->elem == TIO_FB_F32) {
                ok = a->type == TIO_ATTR_FLOATS;
            } else if (tio__fb_scalar_size(f->elem) && f->elem != TIO_FB_F64) {
                ok = a->type == TIO_ATTR_INTS;
                for (size_t m = 0; ok && m < a->count; m++)
                    if (!tio__fb_int_fits(f->elem, a->ints[m]))
                        return tio__err(err, TIO_E_LOSSY, RT_FMT, -1,
                                        "%s: attribute '%s'[%zu] = %lld does not fit rten's "
                                        "[%s]",
                                        lbl, a->name, m, (long long)a->ints[m],
                                        rt_kind_name(f->elem));
            }
            break;
        default:
            ok = a->type == TIO_ATTR_INT;
            if (ok && !tio__fb_int_fits(f->kind, a->i))
                return tio__err(err, TIO_E_LOSSY, RT_FMT, -1,
                                "%s: attribute '%s' = %lld does not fit rten's %s", lbl,
                                a->name, (long long)a->i, rt_kind_name(f->kind));
            break;
        }
        if (!ok)
            return tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                            "%s: attribute '%s' has the wrong type for rten's %s.%s (a %s)",
                            lbl, a->name, t->name, f->name, rt_kind_name(f->kind));
    }
    /* Fields the schema requires (MaxPool's kernel_size, ConstantOfShape's value). */
    for (unsigned id = 0; t && id < t->nfields; id++) {
        const tio_fb_field *f = &t->fields[id];
        if (!f->required || f->kind == TIO_FB_UNION_TYPE) continue;
        bool have = false;
        for (size_t k = 0; k < n->attr_count && !have; k++)
            have = strcmp(n->attrs[k].name, f->name) == 0;
        if (!have)
            return tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                            "%s: attribute '%s' is required by rten's %s and is missing", lbl,
                            f->name, t->name);
    }
    return TIO_OK;
}

/* The op names of a graph and its subgraphs that rten has no operator for
 * (appended to *names; duplicates are removed by the caller). */
static int rt_collect_unsupported(const tio_graph *g, const char ***names, size_t *n, size_t *cap,
                                  tio_error *err) {
    for (size_t j = 0; j < g->node_count; j++) {
        const tio_gnode *nd = &g->nodes[j];
        unsigned code;
        if (!rt_native(g) && strcmp(nd->op, "Constant") == 0) continue;
        if (rt_op_code(g, nd, "", &code, NULL) != TIO_OK) {
            if (*n == *cap) {
                size_t nc = *cap ? 2 * *cap : 16;
                const char **p = realloc((void *)*names, nc * sizeof *p);
                if (!p) return tio__nomem(err, RT_FMT);
                *names = p;
                *cap = nc;
            }
            (*names)[(*n)++] = nd->op;
        }
        for (size_t k = 0; k < nd->attr_count; k++)
            if (nd->attrs[k].type == TIO_ATTR_GRAPH && nd->attrs[k].graph) {
                int rc = rt_collect_unsupported(nd->attrs[k].graph, names, n, cap, err);
                if (rc) return rc;
            }
    }
    return TIO_OK;
}

static int rt_cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* One error listing every operator type of the model rten does not have
 * (sorted, each once), as rten-convert's users would otherwise meet them one
 * conversion at a time. */
static int rt_check_ops(const tio_graph *g, tio_error *err) {
    const char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = rt_collect_unsupported(g, &names, &n, &cap, err);
    if (rc || n == 0) {
        free((void *)names);
        return rc;
    }
    qsort((void *)names, n, sizeof *names, rt_cmp_str);
    size_t u = 0;
    for (size_t k = 0; k < n; k++)
        if (u == 0 || strcmp(names[u - 1], names[k]) != 0) names[u++] = names[k];
    char list[512];
    size_t len = 0;
    list[0] = 0;
    for (size_t k = 0; k < u && len < sizeof list - 1; k++) {
        int wr = snprintf(list + len, sizeof list - len, "%s%s", k ? ", " : "", names[k]);
        if (wr < 0) break;
        len += (size_t)wr < sizeof list - len ? (size_t)wr : sizeof list - len - 1;
    }
    rc = tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                  "rten has no operator for %zu operator type%s of the model: %s", u,
                  u == 1 ? "" : "s", list);
    free((void *)names);
    return rc;
}

static int rt_check_graph(rt_writer *w, const tio_graph *g, uint8_t *used, tio_error *err) {
    if (g->opaque)
        return tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                        "the model cannot be re-encoded: %s (convert the weights to a tensor "
                        "format instead)",
                        g->opaque);
    rt_lgraph lg;
    int rc = tio__rten_lower_graph(w->c, g, rt_native(g), &lg, err);
    if (rc) return rc;
    for (size_t i = 0; rc == TIO_OK && i < lg.nv; i++) {
        const rt_lval *v = &lg.vals[i];
        const char *nm = v->name ? v->name : "";
        if (v->is_const) {
            if (v->tensor >= 0) used[v->tensor] = 1;
            if (tio__rten_store_dtype(v->dtype) == TIO_DTYPE_INVALID)
                rc = tio__err(err, TIO_E_LOSSY, RT_FMT, -1,
                              "constant %zu ('%s'): dtype %s is not an rten constant type and "
                              "rten-convert converts it to none",
                              i, nm, tio_dtype_name(v->dtype));
            for (size_t d = 0; rc == TIO_OK && d < v->rank; d++)
                if (v->shape[d] > (int64_t)UINT32_MAX)
                    rc = tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                                  "constant %zu ('%s'): dim %zu = %lld exceeds rten's uint dims",
                                  i, nm, d, (long long)v->shape[d]);
        } else {
            for (int64_t d = 0; rc == TIO_OK && d < v->src->rank; d++)
                if (v->src->dims[d].value > (int64_t)UINT32_MAX)
                    rc = tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                                  "value %zu ('%s'): dim %lld = %lld exceeds rten's uint dims",
                                  i, nm, (long long)d, (long long)v->src->dims[d].value);
        }
    }
    for (size_t j = 0; rc == TIO_OK && j < lg.nops; j++) {
        const tio_gnode *n = &lg.ops[j];
        char lbl[128];
        rt_node_label(n, j, lbl, sizeof lbl);
        if (n->opaque) {
            rc = tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                          "%s: cannot be re-encoded: %s (convert the weights to a tensor "
                          "format instead)",
                          lbl, n->opaque);
            break;
        }
        unsigned code = 0;
        rc = rt_op_code(g, n, lbl, &code, err);
        if (rc) break;
        unsigned tag = rt_attrs_tag(g, n, code);
        if (tag > tio__rten_union_OperatorAttrs->nmembers) {
            rc = tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                          "%s: attrs table type %u is unknown to tensio", lbl, tag);
            break;
        }
        const tio_fb_table *t = tag ? tio__rten_union_OperatorAttrs->members[tag - 1] : NULL;
        rt_lowered lo;
        rc = rt_lower(w, g, n, code, tag, lbl, &lo, err);
        if (rc) break;
        rc = rt_check_attrs(&lo.node, t, lbl, err);
        free(lo.attrs);
        for (size_t k = 0; rc == TIO_OK && k < n->attr_count; k++) {
            const tio_gattr *a = &n->attrs[k];
            if (a->type == TIO_ATTR_GRAPH) rc = rt_check_graph(w, a->graph, used, err);
            /* a TENSOR attribute (ConstantOfShape's value) is lowered into the attrs */
            if (a->type == TIO_ATTR_TENSOR && a->i >= 0 && (size_t)a->i < w->c->count)
                used[a->i] = 1;
        }
    }
    tio__rten_lgraph_free(&lg);
    return rc;
}

int tio__rten_check(const tio_write_plan *p, tio_error *err) {
    const tio_container *c = tio__plan_container(p);
    /* The version (0, 1 or 2) was checked against .versions by the core. */
    if (!c->graph)
        return tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                        "a model needs a graph; this container holds tensors only");
    rt_writer w;
    memset(&w, 0, sizeof w);
    w.c = c;
    uint8_t *used = calloc(c->count ? c->count : 1, 1);
    if (!used) return tio__nomem(err, RT_FMT);
    int rc = rt_check_ops(c->graph, err);
    if (!rc) rc = rt_check_graph(&w, c->graph, used, err);
    for (size_t i = 0; rc == TIO_OK && i < c->count; i++) {
        if (!used[i])
            rc = tio__err(err, TIO_E_LOSSY, RT_FMT, -1,
                          "tensor %zu%s%s%s is not a constant of the graph; rten stores only "
                          "the model's constants",
                          i, c->tensors[i]->name ? " ('" : "",
                          c->tensors[i]->name ? c->tensors[i]->name : "",
                          c->tensors[i]->name ? "')" : "");
    }
    free(used);
    if (rc) return rc;
    const tio_kv *meta = &c->graph->meta;
    for (size_t k = 0; k < meta->count; k++) {
        /* the ONNX and tmfile readers' model fields (onnx.ir_version,
         * tmfile.graph_layout, ...) are facts of their files, not of the
         * model: rten-convert does not keep them either */
        bool known = tio__graph_meta_foreign(meta->keys[k], "rten");
        for (size_t m = 0; m < RT_META_COUNT; m++)
            if (strcmp(meta->keys[k], tio__rten_meta_keys[m]) == 0) known = true;
        if (!known && !(tio__plan_flags(p) & TIO_SAVE_DROP_METADATA))
            return tio__err(err, TIO_E_LOSSY, RT_FMT, -1,
                            "model metadata '%s' has no field in rten's Metadata table (it "
                            "has onnx_hash, description, license, commit, code_repository, "
                            "model_repository, run_id, run_url; TIO_SAVE_DROP_METADATA drops "
                            "the others)",
                            meta->keys[k]);
    }
    return TIO_OK;
}

static int rt_str(rt_writer *w, const char *s, tio_fb_off *out, tio_error *err) {
    *out = 0;
    if (!s) return TIO_OK;
    return tio__fb_create_string(w->b, s, strlen(s), out, err);
}

static int rt_build_graph(rt_writer *w, const tio_graph *g, tio_fb_off *out, tio_error *err);

/* Bits of a scalar attribute value for field kind `kind`. */
static uint64_t rt_scalar_bits(int kind, const tio_gattr *a) {
    if (kind == TIO_FB_F32) {
        float x = (float)a->f;
        uint32_t u;
        memcpy(&u, &x, sizeof u);
        return u;
    }
    if (kind == TIO_FB_F64) {
        uint64_t u;
        memcpy(&u, &a->f, sizeof u);
        return u;
    }
    return (uint64_t)a->i;
}

/* An attrs table from the node's attributes; fields equal to their schema
 * default are omitted. */
static int rt_build_attrs(rt_writer *w, const tio_gnode *n, const tio_fb_table *t,
                          tio_fb_off *out, tio_error *err) {
    tio_fb_off refs[16];
    uint8_t tags[16];
    memset(refs, 0, sizeof refs);
    memset(tags, 0, sizeof tags);
    if (t->nfields > 16)
        return tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1, "%s: too many fields", t->name);
    int rc = TIO_OK;
    /* Children first: strings, vectors, subgraphs, union tables. */
    for (size_t k = 0; rc == TIO_OK && k < n->attr_count; k++) {
        const tio_gattr *a = &n->attrs[k];
        unsigned id;
        const tio_fb_field *f = rt_find_field(t, a->name, &id);
        if (!f) continue;
        switch (f->kind) {
        case TIO_FB_STRING: rc = rt_str(w, a->s, &refs[id], err); break;
        case TIO_FB_TABLE: rc = rt_build_graph(w, a->graph, &refs[id], err); break;
        case TIO_FB_VECTOR: {
            size_t esz = tio__fb_scalar_size(f->elem);
            uint8_t *tmp = malloc(a->count ? a->count * esz : 1);
            if (!tmp) return tio__nomem(err, RT_FMT);
            for (size_t m = 0; m < a->count; m++) {
                uint8_t *e = tmp + m * esz;
                if (f->elem == TIO_FB_F32) {
                    float x = (float)a->floats[m];
                    uint32_t u;
                    memcpy(&u, &x, sizeof u);
                    tio__st32(e, u);
                } else if (esz == 1) {
                    e[0] = (uint8_t)a->ints[m];
                } else if (esz == 2) {
                    e[0] = (uint8_t)a->ints[m];
                    e[1] = (uint8_t)((uint64_t)a->ints[m] >> 8);
                } else if (esz == 4) {
                    tio__st32(e, (uint32_t)a->ints[m]);
                } else {
                    tio__st64(e, (uint64_t)a->ints[m]);
                }
            }
            rc = tio__fb_create_vector(w->b, tmp, a->count, esz, esz, &refs[id], err);
            free(tmp);
            break;
        }
        case TIO_FB_UNION: {
            /* Scalar union: IntScalar or FloatScalar. */
            bool isint = a->type == TIO_ATTR_INT;
            rc = tio__fb_start_table(w->b, err);
            if (!rc && isint)
                rc = tio__fb_add_scalar(w->b, RTEN_IntScalar_value, (uint64_t)(uint32_t)a->i, 4,
                                        err);
            if (!rc && !isint) {
                float x = (float)a->f;
                uint32_t u;
                memcpy(&u, &x, sizeof u);
                rc = tio__fb_add_scalar(w->b, RTEN_FloatScalar_value, u, 4, err);
            }
            if (!rc) rc = tio__fb_end_table(w->b, &refs[id], err);
            tags[id] = isint ? RTEN_Scalar_IntScalar : RTEN_Scalar_FloatScalar;
            break;
        }
        default: break;
        }
    }
    if (rc) return rc;
    rc = tio__fb_start_table(w->b, err);
    for (size_t k = 0; rc == TIO_OK && k < n->attr_count; k++) {
        const tio_gattr *a = &n->attrs[k];
        unsigned id;
        const tio_fb_field *f = rt_find_field(t, a->name, &id);
        if (!f) continue;
        switch (f->kind) {
        case TIO_FB_STRING:
        case TIO_FB_TABLE:
        case TIO_FB_VECTOR: rc = tio__fb_add_offset(w->b, id, refs[id], err); break;
        case TIO_FB_UNION:
            rc = tio__fb_add_scalar(w->b, id - 1, tags[id], 1, err);
            if (!rc) rc = tio__fb_add_offset(w->b, id, refs[id], err);
            break;
        default: {
            size_t sz = tio__fb_scalar_size(f->kind);
            uint64_t bits = rt_scalar_bits(f->kind, a);
            if (!f->optional) {
                tio_gattr d = *a;
                d.i = (int64_t)f->def;
                d.f = f->def;
                if (bits == rt_scalar_bits(f->kind, &d)) break; /* equal to the default */
            }
            rc = tio__fb_add_scalar(w->b, id, bits, sz, err);
            break;
        }
        }
    }
    if (rc) return rc;
    return tio__fb_end_table(w->b, out, err);
}

static int rt_build_operator(rt_writer *w, const tio_graph *g, const tio_gnode *n, size_t j,
                             tio_fb_off *out, tio_error *err) {
    char lbl[128];
    rt_node_label(n, j, lbl, sizeof lbl);
    unsigned code = 0;
    int rc = rt_op_code(g, n, lbl, &code, err);
    if (rc) return rc;
    unsigned tag = rt_attrs_tag(g, n, code);
    tio_fb_off attrs = 0, ins = 0, outs = 0;
    if (tag) {
        rt_lowered lo;
        rc = rt_lower(w, g, n, code, tag, lbl, &lo, err);
        if (rc) return rc;
        rc = rt_build_attrs(w, &lo.node, tio__rten_union_OperatorAttrs->members[tag - 1],
                            &attrs, err);
        free(lo.attrs);
        if (rc) return rc;
    }
    /* Node indices: values first (index = value index), then operators. */
    int32_t tmp[64];
    int32_t *ids = tmp;
    size_t most = n->input_count > n->output_count ? n->input_count : n->output_count;
    if (most > 64) {
        ids = malloc(most * sizeof *ids);
        if (!ids) return tio__nomem(err, RT_FMT);
    }
    for (size_t k = 0; k < n->input_count; k++) ids[k] = (int32_t)n->inputs[k];
    rc = tio__fb_create_vector(w->b, ids, n->input_count, 4, 4, &ins, err);
    if (!rc) {
        for (size_t k = 0; k < n->output_count; k++) ids[k] = (int32_t)n->outputs[k];
        rc = tio__fb_create_vector(w->b, ids, n->output_count, 4, 4, &outs, err);
    }
    if (ids != tmp) free(ids);
    if (rc) return rc;
    rc = tio__fb_start_table(w->b, err);
    if (!rc) rc = tio__fb_add_u8_default(w->b, RTEN_OperatorNode_type, (uint8_t)code, 0, err);
    if (!rc) rc = tio__fb_add_u8_default(w->b, RTEN_OperatorNode_attrs_type, (uint8_t)tag, 0, err);
    if (!rc) rc = tio__fb_add_offset(w->b, RTEN_OperatorNode_attrs, attrs, err);
    if (!rc) rc = tio__fb_add_offset(w->b, RTEN_OperatorNode_inputs, ins, err);
    if (!rc) rc = tio__fb_add_offset(w->b, RTEN_OperatorNode_outputs, outs, err);
    if (!rc) rc = tio__fb_end_table(w->b, out, err);
    return rc;
}

/* Places `nbytes` of external data at the next 64-byte aligned offset. */
static int rt_place(rt_writer *w, int64_t tensor, uint8_t *gen, size_t nbytes, uint64_t *at,
                    tio_error *err) {
    if (!tio__align_up(w->ext_end, RT_ALIGN, at) || tio__add64_ovf(*at, nbytes, &w->ext_end))
        return tio__err(err, TIO_E_OVERFLOW, RT_FMT, -1, "tensor data size overflows");
    if (w->norder == w->ordercap) {
        size_t nc = w->ordercap ? 2 * w->ordercap : 16;
        rt_ext *o = realloc(w->order, nc * sizeof *o);
        if (!o) return tio__nomem(err, RT_FMT);
        w->order = o;
        w->ordercap = nc;
    }
    w->order[w->norder++] = (rt_ext){.off = *at, .tensor = tensor, .gen = gen, .nbytes = nbytes};
    return TIO_OK;
}

/* A constant: a container tensor's data (converted to its rten dtype, see
 * tio__rten_store_dtype) or a generated constant's. */
static int rt_build_constant(rt_writer *w, rt_lval *v, tio_fb_off *out, tio_error *err) {
    size_t ti = v->tensor >= 0 ? (size_t)v->tensor : SIZE_MAX;
    const tio_wtensor *wt = ti != SIZE_MAX ? tio__plan_tensor(w->plan, ti) : NULL;
    size_t rank = wt ? wt->rank : v->rank;
    const int64_t *shp = wt ? wt->shape : v->shape;
    uint64_t numel = wt ? wt->numel : v->numel;
    tio_dtype sdt = wt ? wt->dtype : v->dtype;
    tio_dtype dt = tio__rten_store_dtype(sdt);
    size_t esz = tio_dtype_size(dt);
    uint32_t small[16];
    uint32_t *shape = small;
    if (rank > 16) {
        shape = malloc(rank * sizeof *shape);
        if (!shape) return tio__nomem(err, RT_FMT);
    }
    for (size_t d = 0; d < rank; d++) shape[d] = (uint32_t)shp[d];
    tio_fb_off sref = 0, dref = 0;
    int rc = tio__fb_create_vector(w->b, shape, rank, 4, 4, &sref, err);
    if (shape != small) free(shape);
    if (rc) return rc;
    bool external = w->version == 2 && numel > RT_INLINE_MAX;
    int tag = tio__rten_data_tag(dt);
    uint64_t at = 0;
    if (!external) {
        const uint8_t *data = v->data;
        if (wt) rc = tio__plan_data(w->plan, ti, &data, NULL, err);
        if (rc) return rc;
        uint8_t conv[RT_INLINE_MAX * 4];
        uint8_t *big = NULL;
        if (sdt != dt) { /* V1 writes large constants inline too */
            uint8_t *dst = conv;
            if (numel > RT_INLINE_MAX) {
                if (numel > SIZE_MAX / 4 || !(big = malloc((size_t)numel * 4)))
                    return tio__nomem(err, RT_FMT);
                dst = big;
            }
            tio__rten_convert_elems(sdt, data, dst, numel);
            data = dst;
        }
        tio_fb_off vref;
        rc = tio__fb_create_vector(w->b, data, (size_t)numel, esz, esz, &vref, err);
        free(big);
        if (!rc) rc = tio__fb_start_table(w->b, err);
        if (!rc) rc = tio__fb_add_offset(w->b, RTEN_FloatData_data, vref, err);
        if (!rc) rc = tio__fb_end_table(w->b, &dref, err);
        if (rc) return rc;
    } else if (wt) {
        if (w->ext[ti] == UINT64_MAX) {
            rc = rt_place(w, (int64_t)ti, NULL, (size_t)numel * esz, &w->ext[ti], err);
            if (rc) return rc;
        }
        at = w->ext[ti];
    } else {
        uint8_t *copy = malloc((size_t)numel * esz);
        if (!copy) return tio__nomem(err, RT_FMT);
        memcpy(copy, v->data, (size_t)numel * esz);
        rc = rt_place(w, -1, copy, (size_t)numel * esz, &at, err);
        if (rc) {
            free(copy);
            return rc;
        }
    }
    rc = tio__fb_start_table(w->b, err);
    if (!rc && external) rc = tio__fb_add_scalar(w->b, RTEN_ConstantNode_data_offset, at, 8, err);
    if (!rc) rc = tio__fb_add_offset(w->b, RTEN_ConstantNode_shape, sref, err);
    if (!rc && !external) rc = tio__fb_add_offset(w->b, RTEN_ConstantNode_data, dref, err);
    if (!rc)
        rc = tio__fb_add_scalar(w->b, RTEN_ConstantNode_dtype,
                                (uint64_t)tio__rten_const_code(dt), 2, err);
    if (!rc && !external)
        rc = tio__fb_add_scalar(w->b, RTEN_ConstantNode_data_type, (uint64_t)tag, 1, err);
    if (!rc) rc = tio__fb_end_table(w->b, out, err);
    return rc;
}

static int rt_build_value(rt_writer *w, const tio_gvalue *v, tio_fb_off *out, tio_error *err) {
    tio_fb_off sref = 0;
    int rc = TIO_OK;
    if (v->rank >= 0) {
        tio_fb_off small[16];
        tio_fb_off *dims = small;
        if (v->rank > 16) {
            dims = malloc((size_t)v->rank * sizeof *dims);
            if (!dims) return tio__nomem(err, RT_FMT);
        }
        for (int64_t d = 0; rc == TIO_OK && d < v->rank; d++) {
            const tio_dim *dm = &v->dims[d];
            tio_fb_off nref = 0;
            /* An unknown dim without a name is written as the symbol "?". */
            const char *sym = dm->name ? dm->name : (dm->value < 0 ? "?" : NULL);
            rc = rt_str(w, sym, &nref, err);
            if (!rc) rc = tio__fb_start_table(w->b, err);
            if (!rc && dm->value > 0)
                rc = tio__fb_add_scalar(w->b, RTEN_Dim_value, (uint64_t)dm->value, 4, err);
            if (!rc) rc = tio__fb_add_offset(w->b, RTEN_Dim_name, nref, err);
            if (!rc) rc = tio__fb_end_table(w->b, &dims[d], err);
        }
        if (!rc) rc = tio__fb_create_offset_vector(w->b, dims, (size_t)v->rank, &sref, err);
        if (dims != small) free(dims);
        if (rc) return rc;
    }
    int code = tio__rten_value_code(v->dtype);
    rc = tio__fb_start_table(w->b, err);
    if (!rc) rc = tio__fb_add_offset(w->b, RTEN_ValueNode_shape, sref, err);
    if (!rc && code >= 0) rc = tio__fb_add_scalar(w->b, RTEN_ValueNode_dtype, (uint64_t)code, 1, err);
    if (!rc) rc = tio__fb_end_table(w->b, out, err);
    return rc;
}

static int rt_build_node(rt_writer *w, const char *name, unsigned kind, tio_fb_off data,
                         tio_fb_off *out, tio_error *err) {
    tio_fb_off nref = 0;
    int rc = rt_str(w, name, &nref, err);
    if (!rc) rc = tio__fb_start_table(w->b, err);
    if (!rc) rc = tio__fb_add_offset(w->b, RTEN_Node_name, nref, err);
    if (!rc) rc = tio__fb_add_scalar(w->b, RTEN_Node_data_type, kind, 1, err);
    if (!rc) rc = tio__fb_add_offset(w->b, RTEN_Node_data, data, err);
    if (!rc) rc = tio__fb_end_table(w->b, out, err);
    return rc;
}

static int rt_build_graph(rt_writer *w, const tio_graph *g, tio_fb_off *out, tio_error *err) {
    rt_lgraph lg;
    int rc = tio__rten_lower_graph(w->c, g, rt_native(g), &lg, err);
    if (rc) return rc;
    size_t nv = lg.nv, total = nv + lg.nops;
    tio_fb_off *nodes = malloc((total ? total : 1) * sizeof *nodes);
    if (!nodes) {
        tio__rten_lgraph_free(&lg);
        return tio__nomem(err, RT_FMT);
    }
    for (size_t i = 0; rc == TIO_OK && i < nv; i++) {
        rt_lval *v = &lg.vals[i];
        tio_fb_off data;
        if (v->is_const) {
            rc = rt_build_constant(w, v, &data, err);
            if (!rc) rc = rt_build_node(w, v->name, RTEN_NodeKind_ConstantNode, data, &nodes[i], err);
        } else {
            rc = rt_build_value(w, v->src, &data, err);
            if (!rc) rc = rt_build_node(w, v->name, RTEN_NodeKind_ValueNode, data, &nodes[i], err);
        }
    }
    for (size_t j = 0; rc == TIO_OK && j < lg.nops; j++) {
        tio_fb_off data;
        rc = rt_build_operator(w, g, &lg.ops[j], j, &data, err);
        if (!rc)
            rc = rt_build_node(w, lg.ops[j].name, RTEN_NodeKind_OperatorNode, data,
                               &nodes[nv + j], err);
    }
    tio_fb_off nref = 0, lists[3] = {0, 0, 0};
    if (!rc) rc = tio__fb_create_offset_vector(w->b, nodes, total, &nref, err);
    free(nodes);
    const int64_t *src[3] = {lg.inputs, lg.outputs, lg.captures};
    size_t cnt[3] = {g->input_count, g->output_count, g->capture_count};
    for (int k = 0; rc == TIO_OK && k < 3; k++) {
        if (k == 2 && cnt[k] == 0) continue; /* captures only when used */
        uint32_t *ids = malloc((cnt[k] ? cnt[k] : 1) * sizeof *ids);
        if (!ids) {
            rc = tio__nomem(err, RT_FMT);
            break;
        }
        for (size_t m = 0; m < cnt[k]; m++) ids[m] = (uint32_t)src[k][m];
        rc = tio__fb_create_vector(w->b, ids, cnt[k], 4, 4, &lists[k], err);
        free(ids);
    }
    tio__rten_lgraph_free(&lg);
    if (!rc) rc = tio__fb_start_table(w->b, err);
    if (!rc) rc = tio__fb_add_offset(w->b, RTEN_Graph_nodes, nref, err);
    if (!rc) rc = tio__fb_add_offset(w->b, RTEN_Graph_inputs, lists[0], err);
    if (!rc) rc = tio__fb_add_offset(w->b, RTEN_Graph_outputs, lists[1], err);
    if (!rc) rc = tio__fb_add_offset(w->b, RTEN_Graph_captures, lists[2], err);
    if (!rc) rc = tio__fb_end_table(w->b, out, err);
    return rc;
}

/* Writes external data: a generated constant's bytes, a container tensor as
 * it is, or converted to its rten dtype in chunks (the source is not
 * modified; the converted bytes go through a bounded scratch buffer). */
static int rt_sink_ext(tio_write_plan *p, tio_sink *s, const rt_ext *e, tio_error *err) {
    if (e->gen) return tio__sink_write(s, e->gen, e->nbytes, err);
    size_t ti = (size_t)e->tensor;
    const tio_wtensor *wt = tio__plan_tensor(p, ti);
    tio_dtype dt = tio__rten_store_dtype(wt->dtype);
    if (dt == wt->dtype) return tio__plan_sink_tensor(p, s, ti, err);
    const uint8_t *data = NULL;
    int rc = tio__plan_data(p, ti, &data, NULL, err);
    if (rc) return rc;
    enum { CHUNK = 16384 };
    uint8_t *buf = malloc(CHUNK * 4);
    if (!buf) return tio__nomem(err, RT_FMT);
    size_t in = tio_dtype_size(wt->dtype);
    for (uint64_t at = 0; rc == TIO_OK && at < wt->numel; at += CHUNK) {
        uint64_t n = wt->numel - at < CHUNK ? wt->numel - at : CHUNK;
        tio__rten_convert_elems(wt->dtype, data + at * in, buf, n);
        rc = tio__sink_write(s, buf, (size_t)n * 4, err);
    }
    free(buf);
    return rc;
}

/* onnx_hash as rten-convert writes it, the sha256 (hex) of the .onnx file,
 * when the container was read from ONNX and still has its source bytes.
 * SHA-256 runs at about 1.8 GB/s (with the CPU's SHA instructions): as long
 * as writing the file, so it is computed on a thread of its own while the
 * file is written, and the metadata string, a placeholder of the same 64
 * characters until then, is patched at the end. *hash NULL: no hash (not
 * read from an ONNX file). */
static int rt_onnx_hash_start(const tio_write_plan *p, const tio_container *c,
                              tio_sha256_job **hash, tio_error *err) {
    *hash = NULL;
    const void *src = c->map ? c->map : c->owned_buf;
    if (!c->format || strcmp(c->format, "onnx") != 0 || !src || !c->source_size) return TIO_OK;
    uint64_t off = 0; /* a mapped .onnx is hashed from its file where that costs less */
    int fd = c->map ? tio__plan_source_fd(p, src, (size_t)c->source_size, &off) : -1;
    return tio__sha256_start(hash, src, (size_t)c->source_size, fd, off, err);
}

/* Waits for the hash and writes it over the placeholder at `at`. */
static int rt_onnx_hash_finish(tio_sha256_job *h, tio_sink *s, uint64_t at, tio_error *err) {
    uint8_t d[32];
    char hex[65];
    if (!tio__sha256_join(h, d)) return tio__nomem(err, RT_FMT); /* OpenSSL's allocation */
    for (int k = 0; k < 32; k++) snprintf(hex + 2 * k, 3, "%02x", d[k]);
    return tio__sink_patch(s, at, hex, 64, err);
}

int tio__rten_write(tio_write_plan *p, tio_sink *s, tio_error *err) {
    /* rt_check already ran on this plan (the core calls .check before .write),
     * so nothing below can be refused after the first byte. */
    int rc;
    rt_writer w;
    memset(&w, 0, sizeof w);
    w.plan = p;
    w.c = tio__plan_container(p);
    w.version = tio__plan_version(p) ? tio__plan_version(p) : RT_VERSION;
    size_t nt = tio__plan_count(p);
    w.ext = malloc((nt ? nt : 1) * sizeof *w.ext);
    w.b = tio__fb_builder_new(RT_FMT);
    if (!w.ext || !w.b) {
        free(w.ext);
        tio__fb_builder_free(w.b);
        return tio__nomem(err, RT_FMT);
    }
    for (size_t i = 0; i < nt; i++) w.ext[i] = UINT64_MAX;

    /* Model { schema_version, graph, metadata } */
    tio_fb_off gref = 0, mref = 0, root = 0;
    rc = rt_build_graph(&w, w.c->graph, &gref, err);
    const tio_kv *meta = &w.c->graph->meta;
    tio_fb_off mstr[RT_META_COUNT];
    bool any = false;
    tio_sha256_job *hash = NULL; /* onnx_hash, being computed */
    tio_fb_off hash_ref = 0;
    for (size_t k = 0; rc == TIO_OK && k < RT_META_COUNT; k++) {
        const char *val = tio__kv_get(meta, tio__rten_meta_keys[k]);
        if (!val && strcmp(tio__rten_meta_keys[k], "onnx_hash") == 0) {
            rc = rt_onnx_hash_start(p, w.c, &hash, err);
            if (hash) val = "0000000000000000000000000000000000000000000000000000000000000000";
        }
        if (!rc) rc = rt_str(&w, val, &mstr[k], err);
        if (hash && !hash_ref) hash_ref = mstr[k];
        if (mstr[k]) any = true;
    }
    if (!rc && any) {
        rc = tio__fb_start_table(w.b, err);
        for (unsigned k = 0; rc == TIO_OK && k < RT_META_COUNT; k++)
            rc = tio__fb_add_offset(w.b, k, mstr[k], err);
        if (!rc) rc = tio__fb_end_table(w.b, &mref, err);
    }
    if (!rc) rc = tio__fb_start_table(w.b, err);
    if (!rc) rc = tio__fb_add_scalar(w.b, RTEN_Model_schema_version, RT_SCHEMA_VERSION, 4, err);
    if (!rc) rc = tio__fb_add_offset(w.b, RTEN_Model_graph, gref, err);
    if (!rc) rc = tio__fb_add_offset(w.b, RTEN_Model_metadata, mref, err);
    if (!rc) rc = tio__fb_end_table(w.b, &root, err);
    if (!rc) rc = tio__fb_finish(w.b, root, err);
    size_t mlen = 0;
    const uint8_t *model = rc ? NULL : tio__fb_buffer(w.b, &mlen);
    /* where the model starts in the output (v2: after the header) */
    uint64_t model_at = tio__sink_pos(s) + (w.version == 1 ? 0 : RT_HEADER_LEN);

    if (!rc && w.version == 1) {
        rc = tio__sink_write(s, model, mlen, err);
    } else if (!rc) {
        uint64_t to;
        if (!tio__align_up(RT_HEADER_LEN + (uint64_t)mlen, RT_ALIGN, &to)) to = 0;
        uint8_t hdr[RT_HEADER_LEN];
        memcpy(hdr, tio__rten_magic, 4);
        tio__st32(hdr + 4, RT_VERSION);
        tio__st64(hdr + 8, RT_HEADER_LEN);
        tio__st64(hdr + 16, mlen);
        tio__st64(hdr + 24, to);
        rc = tio__sink_write(s, hdr, sizeof hdr, err);
        if (!rc) rc = tio__sink_write(s, model, mlen, err);
        if (!rc) rc = tio__sink_zeros(s, (size_t)(to - RT_HEADER_LEN - mlen), err);
        /* External data in offset order. */
        uint64_t pos = 0;
        for (size_t k = 0; rc == TIO_OK && k < w.norder; k++) {
            const rt_ext *e = &w.order[k];
            rc = tio__sink_zeros(s, (size_t)(e->off - pos), err);
            if (!rc) rc = rt_sink_ext(p, s, e, err);
            pos = e->off + e->nbytes;
        }
    }
    if (hash && rc) {
        uint8_t unused[32];
        (void)tio__sha256_join(hash, unused);
    } else if (hash) { /* the string's bytes follow its 4-byte length */
        rc = rt_onnx_hash_finish(hash, s, model_at + mlen - hash_ref + 4, err);
    }
    tio__fb_builder_free(w.b);
    free(w.ext);
    for (size_t k = 0; k < w.norder; k++) free(w.order[k].gen);
    free(w.order);
    return rc;
}

