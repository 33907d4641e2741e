/*
 * Tengine tmfile: the decoded graph raised to ONNX semantics, so that every
 * other format's writer, `graph`, `diff` and onnxruntime see ONNX operators.
 * See docs/formats/tmfile.md ("ONNX form").
 */
#include "core/internal.h"
#include "graph/graph.h"
#include "tmfile/opmap.h"
#include "tmfile/read.h"
#include "tmfile/tmfile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ ONNX form */

static bool tm_same_name(const char *a, const char *b) {
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* A Const or InputOp node that a write gives back exactly as it synthesizes
 * one (no attributes, named as its value, one output, no inputs): 1 Const,
 * 2 InputOp, 0 neither. */
static int tm_plain(const tio_graph *g, const tio_gnode *n, const uint8_t *isin) {
    if (n->attr_count || n->input_count || n->output_count != 1 || n->opaque) return 0;
    const char *nat = n->native_op ? n->native_op : n->op;
    int64_t v = n->outputs[0];
    if (v < 0 || (size_t)v >= g->value_count) return 0;
    const tio_gvalue *gv = &g->values[v];
    if (!tm_same_name(n->name, gv->name)) return 0;
    if (strcmp(nat, "Const") == 0 && gv->tensor >= 0) return 1;
    if (strcmp(nat, "InputOp") == 0 && gv->tensor < 0 && isin[v]) return 2;
    return 0;
}

/* Which Const and InputOp nodes become graph constants and inputs: all
 * plain ones when a write would give the same nodes in the same order
 * (it synthesizes a Const per unproduced constant in value order, then an
 * InputOp per unproduced graph input, then the graph's nodes), else none. */
static int tm_droppable(const tio_graph *g, uint8_t *drop, tio_error *err) {
    size_t nv = g->value_count, nn = g->node_count;
    uint8_t *isin = calloc(nv ? nv : 1, 1), *prod_now = calloc(nv ? nv : 1, 1),
            *prod_new = calloc(nv ? nv : 1, 1);
    /* sequences of (kind, id): kind 1 Const of value id, 2 InputOp of value id, 3 node id */
    int64_t *t = malloc(2 * (nv + nn + 1) * sizeof *t), *u = malloc(2 * (nv + nn + 1) * sizeof *u);
    int rc = TIO_OK;
    if (!isin || !prod_now || !prod_new || !t || !u) {
        rc = tio__nomem(err, TM_FMT);
        goto out;
    }
    for (size_t k = 0; k < g->input_count; k++) isin[g->inputs[k]] = 1;
    bool any = false;
    for (size_t j = 0; j < nn; j++) {
        const tio_gnode *n = &g->nodes[j];
        drop[j] = (uint8_t)tm_plain(g, n, isin);
        if (drop[j]) any = true;
        for (size_t k = 0; k < n->output_count; k++) {
            int64_t v = n->outputs[k];
            if (v < 0 || (size_t)v >= nv) continue;
            prod_now[v] = 1;
            if (!drop[j]) prod_new[v] = 1;
        }
    }
    if (!any) goto out;
    size_t nt = 0, nu = 0;
    for (int pass = 0; pass < 2; pass++) {
        const uint8_t *prod = pass ? prod_new : prod_now;
        int64_t *s = pass ? u : t;
        size_t m = 0;
        for (size_t i = 0; i < nv; i++)
            if (!prod[i] && g->values[i].tensor >= 0) s[m++] = 1, s[m++] = (int64_t)i;
        uint8_t *once = pass ? prod_new : prod_now; /* marks inputs given an InputOp */
        for (size_t k = 0; k < g->input_count; k++) {
            int64_t v = g->inputs[k];
            if (once[v] || g->values[v].tensor >= 0) continue;
            once[v] = 2;
            s[m++] = 2;
            s[m++] = v;
        }
        for (size_t j = 0; j < nn; j++) {
            if (pass && drop[j]) continue;
            if (drop[j]) {
                s[m++] = drop[j];
                s[m++] = g->nodes[j].outputs[0];
            } else {
                s[m++] = 3;
                s[m++] = (int64_t)j;
            }
        }
        if (pass) nu = m;
        else nt = m;
    }
    if (nt != nu || memcmp(t, u, nt * sizeof *t) != 0) memset(drop, 0, nn ? nn : 1);
out:
    free(isin);
    free(prod_now);
    free(prod_new);
    free(t);
    free(u);
    return rc;
}

static int tm_cmp_name(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The file's value names, sorted when a new name is first made (most
 * models need none: no sort for them); and for each "<base><suffix>" made
 * so far, the counter to go on from. */
typedef struct tm_names {
    const char **v;
    size_t n;
    bool sorted;
    struct tm_made {
        char *stem; /* "<base><suffix>" */
        unsigned next;
    } *made;
    size_t nmade, made_cap;
    tio__names_lazy made_ix; /* the stems by name (names.c) */
} tm_names;

static const char *tm_stem(const void *ctx, size_t i) {
    return ((const tm_names *)ctx)->made[i].stem;
}

static void tm_names_free(tm_names *nm) {
    for (size_t i = 0; i < nm->nmade; i++) free(nm->made[i].stem);
    free(nm->made);
    tio__names_lazy_free(&nm->made_ix);
}

/* A value name "<base><suffix>[N]" that no value of the file has and none
 * made before (a bsearch each in the file's names; a stem made again goes on
 * from its last counter, so that many new names of one stem, or many file
 * names "<stem>N", stay cheap). NULL: no memory. */
static char *tm_fresh_name(tm_names *nm, const char *base, const char *suffix) {
    size_t cap = strlen(base) + strlen(suffix) + 24;
    char *s = malloc(cap);
    if (!s) return NULL;
    if (!nm->sorted) qsort(nm->v, nm->n, sizeof *nm->v, tm_cmp_name);
    nm->sorted = true;
    snprintf(s, cap, "%s%s", base, suffix);
    size_t at = tio__names_lazy_find(&nm->made_ix, nm->nmade, s, tm_stem, nm);
    unsigned k = at == SIZE_MAX ? 0 : nm->made[at].next;
    if (at == SIZE_MAX) { /* a new stem */
        if (nm->nmade == nm->made_cap) {
            size_t nc = nm->made_cap ? 2 * nm->made_cap : 8;
            struct tm_made *p = realloc(nm->made, nc * sizeof *p);
            if (!p) goto nomem;
            nm->made = p;
            nm->made_cap = nc;
        }
        size_t sl = strlen(s) + 1;
        char *stem = malloc(sl); /* not strdup: the library's allocations go through malloc */
        if (!stem) goto nomem;
        memcpy(stem, s, sl);
        nm->made[nm->nmade++] = (struct tm_made){stem, 0};
        tio__names_lazy_added(&nm->made_ix, nm->nmade - 1, tm_stem, nm);
        at = nm->nmade - 1;
    }
    if (k) snprintf(s, cap, "%s%s%u", base, suffix, k);
    for (; k < 1000000u && nm->n && bsearch(&s, nm->v, nm->n, sizeof *nm->v, tm_cmp_name);)
        snprintf(s, cap, "%s%s%u", base, suffix, ++k);
    nm->made[at].next = k + 1;
    return s;
nomem:
    free(s);
    return NULL;
}

/* A new constant of the ONNX form (not in the file): a container tensor
 * and its value, charged to the memory budget. */
static int tm_new_const(tm_reader *r, const char *name, tio_dtype dt, int64_t rank,
                        const int64_t *dims, const void *data, size_t nbytes, size_t *vx,
                        tio_error *err) {
    int rc = tm_mem(r, tio__cost_tensor(strlen(name), (size_t)rank) + tio__cost_value() + 64, -1,
                    err);
    tio_tensor_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.name = name;
    desc.dtype = dt;
    desc.rank = (size_t)rank;
    desc.shape = dims;
    desc.layout = TIO_LAYOUT_DENSE;
    desc.data = data;
    desc.nbytes = nbytes;
    if (!rc) rc = tio_container_add(r->ctx->c, &desc, 0, NULL, err);
    if (rc) return rc;
    tio_dim vd[1] = {{rank > 0 ? dims[0] : 0, NULL}};
    tio_value_info vi;
    memset(&vi, 0, sizeof vi);
    vi.name = name;
    vi.dtype = dt;
    vi.rank = rank;
    vi.dims = rank > 0 ? vd : NULL;
    vi.tensor = (int64_t)r->ctx->c->count - 1;
    return tio_graph_add_value(r->g, &vi, vx, err);
}

/* Clip's bounds as new float32 scalar constants "<base>:min" and
 * "<base>:max" (a write drops them again): 0 and 6 for a ReLU6 (b NULL),
 * else b[0], b[1] (a Tengine Clip's params). */
static int tm_clip_consts(tm_reader *r, const char *base, tm_names *nm, const double *b,
                          int64_t vx[2], tio_error *err) {
    static const char *const sfx[2] = {":min", ":max"};
    int rc = TIO_OK;
    for (int k = 0; !rc && k < 2; k++) {
        char *vn = tm_fresh_name(nm, base, sfx[k]);
        if (!vn) return tio__nomem(err, TM_FMT);
        uint8_t le[4];
        uint32_t u = k ? 0x40c00000u : 0u; /* 6.0f, 0.0f */
        if (b) {
            float f = (float)b[k];
            memcpy(&u, &f, sizeof u);
        }
        tio__st32(le, u);
        size_t v = 0;
        rc = tm_new_const(r, vn, TIO_FLOAT32, 0, NULL, le, 4, &v, err);
        vx[k] = (int64_t)v;
        free(vn);
    }
    return rc;
}

/* ReLu6 as ONNX's Clip(x, 0, 6). */
static int tm_clip_bounds(tm_reader *r, size_t j, tm_names *nm,
                          tio_error *err) {
    int64_t vx[2];
    const char *base = r->g->nodes[j].name ? r->g->nodes[j].name : "relu6";
    int rc = tm_clip_consts(r, base, nm, NULL, vx, err);
    if (rc) return rc;
    tio_gnode *n = &r->g->nodes[j];
    int64_t *ins = tio__grealloc(r->g, n->inputs, n->input_count * sizeof *ins, 3 * sizeof *ins);
    if (!ins) return tio__nomem(err, TM_FMT);
    ins[1] = vx[0];
    ins[2] = vx[1];
    n->inputs = ins;
    n->input_count = 3;
    return TIO_OK;
}

/* The index of n's attribute `key` (the last of that name), or n->attr_count. */
static size_t tm_attr_at(const tio_gnode *n, const char *key) {
    for (size_t k = n->attr_count; k-- > 0;)
        if (strcmp(n->attrs[k].name, key) == 0) return k;
    return n->attr_count;
}

/* Removes n's attributes at the `count` indices in at[] (what became inputs). */
static void tm_attrs_drop(tio_graph *g, tio_gnode *n, const size_t *at, size_t count) {
    size_t m = 0;
    for (size_t k = 0; k < n->attr_count; k++) {
        bool gone = false;
        for (size_t q = 0; q < count; q++) gone = gone || at[q] == k;
        if (gone) {
            tio__gfree(g, n->attrs[k].name);
            tio__gfree(g, n->attrs[k].ints);
        } else {
            n->attrs[m++] = n->attrs[k];
        }
    }
    n->attr_count = m;
}

/* Tengine's Clip keeps min and max as params; the ONNX form (opset 13)
 * takes them as inputs: new float32 scalar constants "<name>:min" and
 * "<name>:max" (the input is float32: checked before the raise). A write
 * makes them params again and drops them. */
static int tm_clip_inputs(tm_reader *r, size_t j, tm_names *nm, tio_error *err) {
    tio_graph *g = r->g;
    tio_gnode *n = &g->nodes[j];
    size_t at[2] = {tm_attr_at(n, "min"), tm_attr_at(n, "max")};
    if (at[0] == n->attr_count || at[1] == n->attr_count || n->input_count != 1 ||
        n->attrs[at[0]].type != TIO_ATTR_FLOAT || n->attrs[at[1]].type != TIO_ATTR_FLOAT)
        return TIO_OK; /* not what tio__tmfile_raise gives: cannot happen */
    double b[2] = {n->attrs[at[0]].f, n->attrs[at[1]].f};
    int64_t vx[2];
    int rc = tm_clip_consts(r, n->name ? n->name : "clip", nm, b, vx, err);
    if (rc) return rc;
    n = &g->nodes[j];
    int64_t *ins = tio__grealloc(g, n->inputs, n->input_count * sizeof *ins, 3 * sizeof *ins);
    if (!ins) return tio__nomem(err, TM_FMT);
    ins[1] = vx[0];
    ins[2] = vx[1];
    n->inputs = ins;
    n->input_count = 3;
    tm_attrs_drop(g, n, at, 2);
    return TIO_OK;
}

/* Tengine's Reshape takes its shape from re_shape and ignores its second
 * input, which convert_tool fills wrongly (an int64 shape's words as int32,
 * cut to the dims count), or which is absent. When the two differ (or there
 * is none: the stand-in is appended), the ONNX form reads a new
 * int32 constant holding re_shape (int32: what tmfile stores) ("<name>:re_shape"); native_attrs keeps
 * 2 + the original input's value, so a write puts that back. */
static int tm_reshape_stand_in(tm_reader *r, size_t j, tm_names *nm,
                               tio_error *err) {
    tio_graph *g = r->g;
    tio_gnode *n = &g->nodes[j];
    size_t at = n->attr_count;
    for (size_t k = 0; k < n->attr_count; k++) {
        if (strcmp(n->attrs[k].name, "tmfile.re_shape") == 0) at = k;
        else if (strncmp(n->attrs[k].name, "tmfile.", 7) == 0) return TIO_OK;
    }
    if (at == n->attr_count || n->input_count < 1 || n->input_count > 2 ||
        (n->input_count == 2 && n->inputs[1] < 0))
        return TIO_OK;
    const tio_gattr *a = &n->attrs[at];
    if (a->type != TIO_ATTR_INTS || a->count > TM_MAX_DIMS) return TIO_OK;
    /* at the tensor limit the node keeps tmfile.re_shape (ONNX refuses it) */
    if ((uint64_t)r->ctx->c->count >= r->ctx->limits.max_tensors) return TIO_OK;
    /* one input: the shape is appended (native_attrs names the stand-in itself) */
    int64_t orig = n->input_count == 2 ? n->inputs[1] : -1;
    const char *on = orig >= 0 ? g->values[orig].name : n->name;
    char *vn = tm_fresh_name(nm, on ? on : "shape", ":re_shape");
    if (!vn) return tio__nomem(err, TM_FMT);
    uint8_t data[4 * TM_MAX_DIMS];
    for (size_t k = 0; k < a->count; k++) {
        /* re_shape entries were int32 in the file */
        uint32_t u = (uint32_t)(int32_t)a->ints[k];
        for (unsigned b = 0; b < 4; b++) data[4 * k + b] = (uint8_t)(u >> (8 * b));
    }
    int64_t dim = (int64_t)a->count;
    size_t vx = 0;
    int rc = tm_new_const(r, vn, TIO_INT32, 1, &dim, data, 4 * a->count, &vx, err);
    free(vn);
    if (rc) return rc;
    n = &g->nodes[j];
    if (orig < 0) {
        int64_t *ins = tio__grealloc(g, n->inputs, n->input_count * sizeof *ins, 2 * sizeof *ins);
        if (!ins) return tio__nomem(err, TM_FMT);
        n->inputs = ins;
        n->input_count = 2;
        orig = (int64_t)vx;
    }
    n->inputs[1] = (int64_t)vx;
    n->native_attrs = 2 + orig;
    /* the attribute now says nothing the graph does not */
    tio__gfree(g, n->attrs[at].name);
    tio__gfree(g, n->attrs[at].ints);
    memmove(&n->attrs[at], &n->attrs[at + 1], (n->attr_count - at - 1) * sizeof *n->attrs);
    n->attr_count--;
    return TIO_OK;
}

/* Tengine's Slice keeps starts/ends/axes/steps as params; the ONNX form
 * (opset 13) takes them as inputs: four new int32 constants
 * "<name>:starts" ... appended (a write makes them params again and drops
 * them). Left as attributes (ONNX refuses them) at the tensor limit. */
static int tm_slice_inputs(tm_reader *r, size_t j, tm_names *nm,
                           tio_error *err) {
    static const char *const key[4] = {"starts", "ends", "axes", "steps"};
    tio_graph *g = r->g;
    tio_gnode *n = &g->nodes[j];
    size_t at[4];
    for (int q = 0; q < 4; q++) {
        at[q] = tm_attr_at(n, key[q]);
        if (at[q] == n->attr_count || n->attrs[at[q]].type != TIO_ATTR_INTS ||
            n->attrs[at[q]].count != 1)
            return TIO_OK;
    }
    if (n->input_count != 1 || (uint64_t)r->ctx->c->count + 4 > r->ctx->limits.max_tensors)
        return TIO_OK;
    int64_t *ins = tio__grealloc(g, n->inputs, n->input_count * sizeof *ins, 5 * sizeof *ins);
    if (!ins) return tio__nomem(err, TM_FMT);
    n->inputs = ins;
    const char *base = n->name ? n->name : "slice";
    for (int q = 0; q < 4; q++) {
        char sfx[16];
        snprintf(sfx, sizeof sfx, ":%s", key[q]);
        char *vn = tm_fresh_name(nm, base, sfx);
        if (!vn) return tio__nomem(err, TM_FMT);
        /* int32, as the params were (ONNX's Slice takes int32 or int64) */
        uint8_t le[4];
        uint32_t u = (uint32_t)(int32_t)g->nodes[j].attrs[at[q]].ints[0];
        for (unsigned b = 0; b < 4; b++) le[b] = (uint8_t)(u >> (8 * b));
        int64_t one = 1;
        size_t vx = 0;
        int rc = tm_new_const(r, vn, TIO_INT32, 1, &one, le, 4, &vx, err);
        free(vn);
        if (rc) return rc;
        n = &g->nodes[j];
        n->inputs[1 + q] = (int64_t)vx;
    }
    n->input_count = 5;
    /* the attributes now say nothing the inputs do not */
    tm_attrs_drop(g, n, at, 4);
    return TIO_OK;
}

/* Whether a Tengine Pad (node n, params still Tengine's) has an ONNX form:
 * one input, 4-D when its rank is known, float32 (the constant value is a
 * float32 scalar) or padding with +0 (the value input left out), and room
 * for its constants (`more`: constants already promised). */
static bool tm_pad_fits(const tm_reader *r, const tio_gnode *n, uint64_t more) {
    const tio_graph *g = r->g;
    if (n->input_count != 1 || n->inputs[0] < 0) return false;
    const tio_gvalue *x = &g->values[n->inputs[0]];
    if (x->rank >= 0 && x->rank != 4) return false;
    bool f32 = x->dtype == TIO_FLOAT32;
    if (!f32) {
        size_t at = tm_attr_at(n, "value");
        const tio_gattr *v = at < n->attr_count ? &n->attrs[at] : NULL;
        if (!v || v->type != TIO_ATTR_FLOAT || v->f != 0.0 || signbit(v->f)) return false;
    }
    return (uint64_t)r->ctx->c->count + (f32 ? 2u : 1u) + more <= r->ctx->limits.max_tensors;
}

/* Tengine's Pad keeps pads and value as params; the ONNX form (opset 13)
 * takes them as inputs: "<name>:pads", an int64 [8] constant in ONNX's order,
 * and "<name>:value", a float32 scalar (left out for an input of another
 * dtype, whose value is then +0: tm_pad_fits). A write makes them params
 * again and drops them. */
static int tm_pad_inputs(tm_reader *r, size_t j, tm_names *nm, tio_error *err) {
    static const char *const key[2] = {"pads", "value"};
    tio_graph *g = r->g;
    tio_gnode *n = &g->nodes[j];
    size_t at[2] = {tm_attr_at(n, key[0]), tm_attr_at(n, key[1])};
    if (at[0] == n->attr_count || at[1] == n->attr_count || n->attrs[at[0]].count != 8 ||
        n->attrs[at[0]].type != TIO_ATTR_INTS || n->attrs[at[1]].type != TIO_ATTR_FLOAT ||
        n->input_count != 1)
        return TIO_OK; /* not what tio__tmfile_raise gives: cannot happen */
    bool f32 = g->values[n->inputs[0]].dtype == TIO_FLOAT32;
    size_t nin = f32 ? 3 : 2;
    int64_t *ins = tio__grealloc(g, n->inputs, n->input_count * sizeof *ins, nin * sizeof *ins);
    if (!ins) return tio__nomem(err, TM_FMT);
    n->inputs = ins;
    const char *base = n->name ? n->name : "pad";
    for (size_t q = 0; q + 1 < nin; q++) {
        char sfx[16];
        snprintf(sfx, sizeof sfx, ":%s", key[q]);
        char *vn = tm_fresh_name(nm, base, sfx);
        if (!vn) return tio__nomem(err, TM_FMT);
        const tio_gattr *a = &g->nodes[j].attrs[at[q]];
        uint8_t le[64];
        int64_t eight = 8;
        size_t vx = 0;
        int rc;
        if (q == 0) {
            for (size_t k = 0; k < 8; k++) tio__st64(le + 8 * k, (uint64_t)a->ints[k]);
            rc = tm_new_const(r, vn, TIO_INT64, 1, &eight, le, 64, &vx, err);
        } else {
            float f = (float)a->f;
            uint32_t u;
            memcpy(&u, &f, sizeof u);
            tio__st32(le, u);
            rc = tm_new_const(r, vn, TIO_FLOAT32, 0, NULL, le, 4, &vx, err);
        }
        free(vn);
        if (rc) return rc;
        n = &g->nodes[j];
        n->inputs[1 + q] = (int64_t)vx;
    }
    n->input_count = nin;
    /* the attributes now say nothing the inputs do not */
    tm_attrs_drop(g, n, at, 2);
    return TIO_OK;
}

/* The graph in ONNX semantics: plain Const nodes become constants and plain
 * InputOp nodes graph inputs (not operators), every node with an entry in
 * the mapping table (tmfile/opmap.c) gets its ONNX op and attributes, and a
 * Convolution with a ReLU activation becomes Conv + Relu. A node the table
 * cannot raise keeps its Tengine fields as attributes. */
int tio__tmfile_raise_graph(tm_reader *r, tio_error *err) {
    tio_graph *g = r->g;
    size_t nn = g->node_count;
    uint8_t *drop = calloc(nn ? nn : 1, 1);
    if (!drop) return tio__nomem(err, TM_FMT);
    int rc = tm_droppable(g, drop, err);
    /* the file's value names: new names avoid them */
    tm_names names = {malloc((g->value_count ? g->value_count : 1) * sizeof(const char *)), 0,
                      false, NULL, 0, 0, NULL};
    tm_names *nm = &names;
    if (!rc && !names.v) rc = tio__nomem(err, TM_FMT);
    for (size_t i = 0; !rc && i < g->value_count; i++)
        if (g->values[i].name) names.v[names.n++] = g->values[i].name;
    /* raise in place, counting the splits */
    size_t nsplit = 0, nsix = 0; /* splits; of them ReLU6 ones (two constants each, added below) */
    uint8_t *split = calloc(nn ? nn : 1, 1);
    if (!rc && !split) rc = tio__nomem(err, TM_FMT);
    for (size_t j = 0; !rc && j < nn; j++) {
        tio_gnode *n = &g->nodes[j];
        if (drop[j]) continue;
        /* the index tm_node found, while the node's op is still that one */
        int idx = r->nop[j];
        if (idx < 0 || !n->native_op || strcmp(n->native_op, tio__tmfile_ops[idx].name) != 0)
            idx = tio__tmfile_find_op(n->native_op ? n->native_op : n->op);
        if (idx < 0) continue;
        /* ReLu6 becomes Clip(x, 0, 6), a Clip takes its bounds as inputs:
         * two new constants, float32 like x */
        if ((idx == OP_RELU6 || idx == OP_CLIP) &&
            (n->input_count != 1 || n->inputs[0] < 0 ||
             g->values[n->inputs[0]].dtype != TIO_FLOAT32 ||
             (uint64_t)r->ctx->c->count + 2 * (nsix + 1) > r->ctx->limits.max_tensors))
            continue;
        /* Pad takes pads (and value) as new constants */
        if (idx == OP_PAD && !tm_pad_fits(r, n, 2 * (uint64_t)nsix)) continue;
        tio_gattr *na = NULL;
        size_t nna = 0;
        const char *op = NULL;
        int act = -1;
        rc = tio__tmfile_raise(g, g, r->ctx->c, n, idx, &na, &nna, &op, &act, err);
        if (rc || !op) continue;
        /* a split activation needs one output; ReLU6's bounds a float32 one
         * and room for two constants */
        bool sr = act >= 0;
        if (sr && (n->output_count != 1 || n->outputs[0] < 0 ||
                   (act == 6 && (g->values[n->outputs[0]].dtype != TIO_FLOAT32 ||
                                 (uint64_t)r->ctx->c->count + 2 * (nsix + 1) >
                                     r->ctx->limits.max_tensors)))) {
            tio__gattrs_free(g, na, nna);
            continue;
        }
        char *nop = tio__gstrdup(g, op);
        if (!nop) {
            tio__gattrs_free(g, na, nna);
            rc = tio__nomem(err, TM_FMT);
            break;
        }
        uint64_t cost = 0;
        for (size_t k = 0; k < nna; k++)
            cost += tio__cost_attr(strlen(na[k].name), 0) + tio__cost_i64s(na[k].count);
        if (sr) cost += tio__cost_grown(sizeof(tio_gnode)) + tio__cost_value() + 64;
        rc = tm_mem(r, cost, -1, err);
        if (rc) {
            tio__gfree(g, nop);
            tio__gattrs_free(g, na, nna);
            break;
        }
        if (!n->native_op && strcmp(n->op, nop) != 0) {
            /* the Tengine name was the op name: keep it as native_op */
            n->native_op = n->op;
            n->op = NULL;
        }
        tio__gfree(g, n->op);
        n->op = nop;
        tio__gattrs_free(g, n->attrs, n->attr_count);
        n->attrs = na;
        n->attr_count = n->attr_cap = nna;
        n->native_attrs = 1;
        if (idx == OP_RESHAPE) rc = tm_reshape_stand_in(r, j, nm, err);
        if (idx == OP_SLICE) rc = tm_slice_inputs(r, j, nm, err);
        if (idx == OP_RELU6) rc = tm_clip_bounds(r, j, nm, err);
        if (idx == OP_PAD) rc = tm_pad_inputs(r, j, nm, err);
        if (idx == OP_CLIP) rc = tm_clip_inputs(r, j, nm, err);
        if (sr) {
            split[j] = (uint8_t)(1 + act); /* 1 ReLU, 7 ReLU6 */
            nsplit++;
            if (act == 6) nsix++;
        }
    }
    /* the values the splits add (before the node array is rebuilt: adding a
     * value may move g->values) */
    int64_t *pre = NULL, *bounds = NULL;
    if (!rc && nsplit) {
        pre = malloc(nn * sizeof *pre);
        bounds = malloc(2 * nn * sizeof *bounds);
        if (!pre || !bounds) rc = tio__nomem(err, TM_FMT);
        for (size_t j = 0; !rc && j < nn; j++) {
            if (!split[j]) continue;
            const tio_gvalue *ov = &g->values[g->nodes[j].outputs[0]];
            char *vn = tm_fresh_name(nm, ov->name ? ov->name : "conv", ":conv");
            if (!vn) {
                rc = tio__nomem(err, TM_FMT);
                break;
            }
            tio_value_info vi;
            memset(&vi, 0, sizeof vi);
            vi.name = vn;
            vi.dtype = ov->dtype;
            vi.rank = ov->rank;
            vi.dims = ov->rank > 0 ? ov->dims : NULL;
            vi.tensor = -1;
            size_t vx;
            rc = tio_graph_add_value(g, &vi, &vx, err);
            free(vn);
            pre[j] = (int64_t)vx;
            if (!rc && split[j] == 7)
                rc = tm_clip_consts(r, g->nodes[j].name ? g->nodes[j].name : "conv", nm, NULL,
                                    bounds + 2 * j, err);
        }
    }
    size_t ndrop = 0;
    for (size_t j = 0; j < nn; j++) ndrop += drop[j] != 0;
    if (!rc && ndrop && !nsplit) {
        /* only drops: the array compacted in place */
        size_t m = 0;
        for (size_t j = 0; j < nn; j++) {
            if (drop[j]) tio__gnode_clear(g, &g->nodes[j]);
            else g->nodes[m++] = g->nodes[j];
        }
        g->node_count = m;
    } else if (!rc && (ndrop || nsplit)) {
        size_t total = nn - ndrop + nsplit, m = 0;
        tio_gnode *nodes = calloc(total ? total : 1, sizeof *nodes);
        if (!nodes) rc = tio__nomem(err, TM_FMT);
        for (size_t j = 0; !rc && j < nn; j++) {
            tio_gnode *n = &g->nodes[j];
            if (drop[j]) {
                tio__gnode_clear(g, n);
                continue;
            }
            nodes[m] = *n;
            if (!split[j]) {
                m++;
                continue;
            }
            bool six = split[j] == 7;
            tio_gnode *relu = &nodes[m + 1];
            memset(relu, 0, sizeof *relu);
            relu->native_id = nodes[m].native_id;
            relu->native_attrs = 1;
            relu->inputs = malloc(3 * sizeof *relu->inputs);
            relu->outputs = malloc(sizeof *relu->outputs);
            relu->op = tio__tmfile_dup(six ? "Clip" : "Relu");
            relu->native_op = tio__tmfile_dup(n->native_op ? n->native_op : "Convolution");
            tm_names none = {NULL, 0, true, NULL, 0, 0, NULL}; /* node names: any */
            relu->name = tm_fresh_name(&none, n->name ? n->name : "conv", six ? ":clip" : ":relu");
            tm_names_free(&none);
            if (!relu->inputs || !relu->outputs || !relu->op || !relu->native_op || !relu->name) {
                rc = tio__nomem(err, TM_FMT);
            } else {
                relu->input_count = six ? 3 : 1;
                relu->output_count = 1;
                relu->outputs[0] = nodes[m].outputs[0];
                relu->inputs[0] = pre[j];
                if (six) {
                    relu->inputs[1] = bounds[2 * j];
                    relu->inputs[2] = bounds[2 * j + 1];
                }
                nodes[m].outputs[0] = pre[j];
            }
            m += 2;
            if (rc) {
                /* free what the new array holds from here on (and the rest below) */
                for (size_t k = 0; k < m; k++) tio__gnode_clear(g, &nodes[k]);
                for (size_t k = j + 1; k < nn; k++) tio__gnode_clear(g, &g->nodes[k]);
                free(nodes);
                free(g->nodes);
                g->nodes = NULL;
                g->node_count = g->node_cap = 0;
                goto out;
            }
        }
        if (!rc) {
            free(g->nodes);
            g->nodes = nodes;
            g->node_count = g->node_cap = m;
        }
    }
    if (!rc) rc = tio_graph_set_opset(g, "", TM_ONNX_OPSET, err);
out:
    free(drop);
    free(split);
    free(pre);
    free(bounds);
    free(names.v);
    tm_names_free(&names);
    return rc;
}

