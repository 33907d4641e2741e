/*
 * TensorFlow Lite writing: the in-memory model (tfl_wmodel, src/tflite/write.h)
 * -- its arena and the functions that fill it, options through the schema
 * data. The serialiser is src/tflite/write.c.
 */
#include "tflite/write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TFL "tflite"

/* Grows array *p of *cap elements of `size` bytes to hold n + 1 (plain heap:
 * the arrays are freed by tio__tfl_w_free). */
static int grow(void **p, size_t *cap, size_t n, size_t size, tio_error *err) {
    if (n < *cap) return TIO_OK;
    size_t nc = *cap ? *cap * 2 : 8, bytes;
    if (tio__mul_ovf(nc, size, &bytes)) return tio__nomem(err, TFL);
    void *q = realloc(*p, bytes);
    if (!q) return tio__nomem(err, TFL);
    memset((uint8_t *)q + *cap * size, 0, (nc - *cap) * size);
    *p = q;
    *cap = nc;
    return TIO_OK;
}

void *tio__tfl_w_alloc(tfl_wmodel *m, size_t n) {
    if (m->nblocks == m->capblocks) {
        size_t nc = m->capblocks ? m->capblocks * 2 : 64;
        void **nb = realloc(m->blocks, nc * sizeof *nb);
        if (!nb) return NULL;
        m->blocks = nb;
        m->capblocks = nc;
    }
    void *p = calloc(1, n ? n : 1);
    if (p) m->blocks[m->nblocks++] = p;
    return p;
}

char *tio__tfl_w_strndup(tfl_wmodel *m, const char *s, size_t n) {
    if (n == SIZE_MAX) return NULL;
    char *d = tio__tfl_w_alloc(m, n + 1);
    if (d && n) memcpy(d, s, n);
    return d;
}

char *tio__tfl_w_join(tfl_wmodel *m, const char *a, const char *b, const char *c) {
    const char *s[3] = {a ? a : "", b ? b : "", c ? c : ""};
    size_t n[3], at = 0;
    for (int k = 0; k < 3; k++) n[k] = strlen(s[k]);
    char *d = tio__tfl_w_alloc(m, n[0] + n[1] + n[2] + 1); /* strings in memory: no overflow */
    if (!d) return NULL;
    for (int k = 0; k < 3; k++) {
        memcpy(d + at, s[k], n[k]);
        at += n[k];
    }
    return d;
}

int tio__tfl_w_init(tfl_wmodel *m, tio_error *err) {
    memset(m, 0, sizeof *m);
    m->version = 3;
    uint32_t idx;
    return tio__tfl_w_buffer(m, -1, NULL, 0, &idx, err);
}

void tio__tfl_w_free(tfl_wmodel *m) {
    if (!m) return;
    for (size_t i = 0; i < m->nsubgraphs; i++) {
        free(m->subgraphs[i].tensors);
        free(m->subgraphs[i].ops);
    }
    free(m->subgraphs);
    free(m->codes);
    free(m->buffers);
    for (size_t i = 0; i < m->nblocks; i++) free(m->blocks[i]);
    free(m->blocks);
    memset(m, 0, sizeof *m);
}

int tio__tfl_w_buffer(tfl_wmodel *m, int64_t tensor, const uint8_t *data, size_t size,
                      uint32_t *idx, tio_error *err) {
    if (m->nbuffers >= UINT32_MAX)
        return tio__err(err, TIO_E_LIMIT, TFL, -1, "more than 2^32 - 1 buffers");
    int rc = grow((void **)&m->buffers, &m->capbuffers, m->nbuffers, sizeof *m->buffers, err);
    if (rc) return rc;
    tfl_wbuffer *b = &m->buffers[m->nbuffers];
    memset(b, 0, sizeof *b);
    b->tensor = tensor;
    b->data = tensor >= 0 ? NULL : data;
    b->size = size;
    *idx = (uint32_t)m->nbuffers++;
    return TIO_OK;
}

int tio__tfl_w_buffer_gen(tfl_wmodel *m, size_t size,
                          int (*gen)(void *gen_ctx, tio_sink *s, size_t size, tio_error *err),
                          void *gen_ctx, uint32_t *idx, tio_error *err) {
    if (!gen) return tio__err(err, TIO_E_ARGUMENT, TFL, -1, "a generated buffer without gen");
    int rc = tio__tfl_w_buffer(m, -1, NULL, size, idx, err);
    if (rc) return rc;
    m->buffers[*idx].gen = gen;
    m->buffers[*idx].gen_ctx = gen_ctx;
    return TIO_OK;
}

int tio__tfl_w_code(tfl_wmodel *m, int32_t builtin, const char *custom, int32_t version,
                    uint32_t *idx, tio_error *err) {
    for (size_t k = 0; k < m->ncodes; k++) {
        const tfl_wcode *c = &m->codes[k];
        if (c->builtin == builtin && c->version == version &&
            (c->custom == NULL) == (custom == NULL) && (!custom || strcmp(c->custom, custom) == 0)) {
            *idx = (uint32_t)k;
            return TIO_OK;
        }
    }
    int rc = grow((void **)&m->codes, &m->capcodes, m->ncodes, sizeof *m->codes, err);
    if (rc) return rc;
    tfl_wcode *c = &m->codes[m->ncodes];
    c->builtin = builtin;
    c->deprecated = (int8_t)(builtin >= 0 && builtin < 127 ? builtin : 127);
    c->version = version;
    c->custom = NULL;
    if (custom && !(c->custom = tio__tfl_w_strndup(m, custom, strlen(custom))))
        return tio__nomem(err, TFL);
    *idx = (uint32_t)m->ncodes++;
    return TIO_OK;
}

int tio__tfl_w_subgraph(tfl_wmodel *m, tfl_wsubgraph **out, tio_error *err) {
    int rc = grow((void **)&m->subgraphs, &m->capsubgraphs, m->nsubgraphs,
                  sizeof *m->subgraphs, err);
    if (rc) return rc;
    tfl_wsubgraph *s = &m->subgraphs[m->nsubgraphs++];
    memset(s, 0, sizeof *s);
    s->debug_metadata_index = -1;
    *out = s;
    return TIO_OK;
}

int tio__tfl_w_tensor(tfl_wmodel *m, size_t sg, const tfl_wtensor *t, int32_t *idx,
                      tio_error *err) {
    if (sg >= m->nsubgraphs)
        return tio__err(err, TIO_E_ARGUMENT, TFL, -1, "tensor added to subgraph %zu of %zu", sg,
                        m->nsubgraphs);
    tfl_wsubgraph *s = &m->subgraphs[sg];
    if (s->ntensors >= INT32_MAX)
        return tio__err(err, TIO_E_LIMIT, TFL, -1, "subgraph %zu: more than 2^31 - 1 tensors",
                        sg);
    int rc = grow((void **)&s->tensors, &s->captensors, s->ntensors, sizeof *s->tensors, err);
    if (rc) return rc;
    s->tensors[s->ntensors] = *t;
    *idx = (int32_t)s->ntensors++;
    return TIO_OK;
}

int tio__tfl_w_op(tfl_wmodel *m, size_t sg, const tfl_wop *op, tfl_wop **out, tio_error *err) {
    if (sg >= m->nsubgraphs)
        return tio__err(err, TIO_E_ARGUMENT, TFL, -1, "operator added to subgraph %zu of %zu",
                        sg, m->nsubgraphs);
    tfl_wsubgraph *s = &m->subgraphs[sg];
    int rc = grow((void **)&s->ops, &s->capops, s->nops, sizeof *s->ops, err);
    if (rc) return rc;
    tfl_wop *o = &s->ops[s->nops++];
    *o = *op;
    /* the option arrays are the model's: copied when the caller gave some */
    o->opts = NULL;
    o->nopts = o->capopts = 0;
    o->opts2 = NULL;
    o->nopts2 = o->capopts2 = 0;
    for (size_t k = 0; k < op->nopts && !rc; k++) rc = tio__tfl_w_opt_add(m, o, false, &op->opts[k], err);
    for (size_t k = 0; k < op->nopts2 && !rc; k++)
        rc = tio__tfl_w_opt_add(m, o, true, &op->opts2[k], err);
    if (out) *out = o;
    return rc;
}

/* ------------------------------------------------------------ options */

const tio_fb_table *tio__tfl_w_opt_table(unsigned tag, bool second) {
    const tio_fb_union *u = tio__tfl_union(second ? "BuiltinOptions2" : "BuiltinOptions");
    if (!u || tag == 0 || tag > u->nmembers) return NULL;
    return u->members[tag - 1];
}

int tio__tfl_w_opt_add(tfl_wmodel *m, tfl_wop *op, bool second, const tfl_wopt *o,
                       tio_error *err) {
    tfl_wopt **arr = second ? &op->opts2 : &op->opts;
    size_t *n = second ? &op->nopts2 : &op->nopts;
    size_t *cap = second ? &op->capopts2 : &op->capopts;
    for (size_t k = 0; k < *n; k++)
        if ((*arr)[k].id == o->id) { /* set again: replaced */
            (*arr)[k] = *o;
            return TIO_OK;
        }
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        tfl_wopt *na = tio__tfl_w_alloc(m, nc * sizeof *na);
        if (!na) return tio__nomem(err, TFL);
        if (*n) memcpy(na, *arr, *n * sizeof *na);
        *arr = na;
        *cap = nc;
    }
    (*arr)[(*n)++] = *o;
    return TIO_OK;
}

/* Field `name` of the options member op selects; fills o->id, kind, elem. */
static int opt_field(const tfl_wop *op, bool second, const char *name, tfl_wopt *o,
                     const tio_fb_field **fo, tio_error *err) {
    unsigned tag = second ? op->opt2_type : op->opt_type;
    const tio_fb_table *t = tio__tfl_w_opt_table(tag, second);
    if (!t)
        return tio__err(err, TIO_E_ARGUMENT, TFL, -1,
                        "option '%s': the operator has no %s member (tag %u)", name,
                        second ? "BuiltinOptions2" : "BuiltinOptions", tag);
    for (uint16_t k = 0; k < t->nfields; k++)
        if (t->fields[k].kind != TIO_FB_NONE && strcmp(t->fields[k].name, name) == 0) {
            memset(o, 0, sizeof *o);
            o->id = k;
            o->kind = t->fields[k].kind;
            o->elem = t->fields[k].elem;
            *fo = &t->fields[k];
            return TIO_OK;
        }
    return tio__err(err, TIO_E_ARGUMENT, TFL, -1, "%s has no field '%s'", t->name, name);
}

static bool kind_int(int k) { return k >= TIO_FB_BOOL && k <= TIO_FB_U64; }
static bool kind_float(int k) { return k == TIO_FB_F32 || k == TIO_FB_F64; }

int tio__tfl_w_opt_i(tfl_wmodel *m, tfl_wop *op, bool second, const char *field, int64_t v,
                     tio_error *err) {
    tfl_wopt o;
    const tio_fb_field *f;
    int rc = opt_field(op, second, field, &o, &f, err);
    if (rc) return rc;
    if (kind_float(o.kind)) {
        o.f = (double)v;
    } else if (kind_int(o.kind)) {
        o.i = v;
    } else {
        return tio__err(err, TIO_E_ARGUMENT, TFL, -1, "option '%s' is not a scalar", field);
    }
    return tio__tfl_w_opt_add(m, op, second, &o, err);
}

int tio__tfl_w_opt_f(tfl_wmodel *m, tfl_wop *op, bool second, const char *field, double v,
                     tio_error *err) {
    tfl_wopt o;
    const tio_fb_field *f;
    int rc = opt_field(op, second, field, &o, &f, err);
    if (rc) return rc;
    if (!kind_float(o.kind))
        return tio__err(err, TIO_E_ARGUMENT, TFL, -1, "option '%s' is not a float", field);
    o.f = v;
    return tio__tfl_w_opt_add(m, op, second, &o, err);
}

int tio__tfl_w_opt_ints(tfl_wmodel *m, tfl_wop *op, bool second, const char *field,
                        const int64_t *v, size_t n, tio_error *err) {
    tfl_wopt o;
    const tio_fb_field *f;
    int rc = opt_field(op, second, field, &o, &f, err);
    if (rc) return rc;
    if (o.kind != TIO_FB_VECTOR || !kind_int(o.elem))
        return tio__err(err, TIO_E_ARGUMENT, TFL, -1, "option '%s' is not a vector of integers",
                        field);
    int64_t *c = tio__tfl_w_alloc(m, (n ? n : 1) * sizeof *c);
    if (!c) return tio__nomem(err, TFL);
    if (n) memcpy(c, v, n * sizeof *c);
    o.ints = c;
    o.count = n;
    return tio__tfl_w_opt_add(m, op, second, &o, err);
}

int tio__tfl_w_opt_floats(tfl_wmodel *m, tfl_wop *op, bool second, const char *field,
                          const double *v, size_t n, tio_error *err) {
    tfl_wopt o;
    const tio_fb_field *f;
    int rc = opt_field(op, second, field, &o, &f, err);
    if (rc) return rc;
    if (o.kind != TIO_FB_VECTOR || !kind_float(o.elem))
        return tio__err(err, TIO_E_ARGUMENT, TFL, -1, "option '%s' is not a vector of floats",
                        field);
    double *c = tio__tfl_w_alloc(m, (n ? n : 1) * sizeof *c);
    if (!c) return tio__nomem(err, TFL);
    if (n) memcpy(c, v, n * sizeof *c);
    o.floats = c;
    o.count = n;
    return tio__tfl_w_opt_add(m, op, second, &o, err);
}

int tio__tfl_w_opt_str(tfl_wmodel *m, tfl_wop *op, bool second, const char *field,
                       const char *s, size_t n, tio_error *err) {
    tfl_wopt o;
    const tio_fb_field *f;
    int rc = opt_field(op, second, field, &o, &f, err);
    if (rc) return rc;
    if (o.kind != TIO_FB_STRING)
        return tio__err(err, TIO_E_ARGUMENT, TFL, -1, "option '%s' is not a string", field);
    if (!(o.s = tio__tfl_w_strndup(m, s ? s : "", s ? n : 0))) return tio__nomem(err, TFL);
    o.count = s ? n : 0;
    return tio__tfl_w_opt_add(m, op, second, &o, err);
}

int tio__tfl_type_of(tio_dtype dt) {
    switch (dt) {
    case TIO_FLOAT32: return TFL_TensorType_FLOAT32;
    case TIO_FLOAT16: return TFL_TensorType_FLOAT16;
    case TIO_INT32: return TFL_TensorType_INT32;
    case TIO_UINT8: return TFL_TensorType_UINT8;
    case TIO_INT64: return TFL_TensorType_INT64;
    case TIO_BOOL: return TFL_TensorType_BOOL;
    case TIO_INT16: return TFL_TensorType_INT16;
    case TIO_COMPLEX64: return TFL_TensorType_COMPLEX64;
    case TIO_INT8: return TFL_TensorType_INT8;
    case TIO_FLOAT64: return TFL_TensorType_FLOAT64;
    case TIO_COMPLEX128: return TFL_TensorType_COMPLEX128;
    case TIO_UINT64: return TFL_TensorType_UINT64;
    case TIO_UINT32: return TFL_TensorType_UINT32;
    case TIO_UINT16: return TFL_TensorType_UINT16;
    case TIO_BFLOAT16: return TFL_TensorType_BFLOAT16;
    case TIO_FLOAT8_E4M3FN: return TFL_TensorType_FLOAT8_E4M3FN;
    case TIO_FLOAT8_E5M2: return TFL_TensorType_FLOAT8_E5M2;
    default: return -1;
    }
}

/* ------------------------------------------------ a model of constants */

int tio__tfl_w_constants(tio_write_plan *plan, const tio_graph *g, tfl_wmodel *m,
                         tio_error *err) {
    const tio_container *c = tio__plan_container(plan);
    bool drop = (tio__plan_flags(plan) & TIO_SAVE_DROP_METADATA) != 0;
    tfl_wsubgraph *s;
    int rc = tio__tfl_w_subgraph(m, &s, err);
    if (rc) return rc;
    int32_t *tidx = tio__tfl_w_alloc(m, (tio__plan_count(plan) + 1) * sizeof *tidx);
    if (!tidx) return tio__nomem(err, TFL);
    for (size_t i = 0; i < tio__plan_count(plan) && !rc; i++) {
        const tio_wtensor *wt = tio__plan_tensor(plan, i);
        char lb[120];
        snprintf(lb, sizeof lb, "tensor %zu%s%.80s%s", i, wt->name ? " ('" : "",
                 wt->name ? wt->name : "", wt->name ? "')" : "");
        int type = tio__tfl_type_of(wt->dtype);
        if (type < 0 || wt->layout != TIO_LAYOUT_DENSE)
            return tio__err(err, TIO_E_UNSUPPORTED, TFL, -1,
                            "%s: a %s %s tensor has no TensorFlow Lite form", lb,
                            wt->layout == TIO_LAYOUT_DENSE ? "dense" : "sparse or quantized",
                            tio_dtype_name(wt->dtype));
        if (wt->src && tio__tensor_meta_view(wt->src)->count && !drop)
            return tio__err(err, TIO_E_LOSSY, TFL, -1,
                            "%s has metadata, which a TensorFlow Lite tensor cannot hold "
                            "(TIO_SAVE_DROP_METADATA / --drop-metadata drops it)",
                            lb);
        if (wt->rank > INT32_MAX) return tio__err(err, TIO_E_LIMIT, TFL, -1, "%s: rank", lb);
        int32_t *dims = tio__tfl_w_alloc(m, (wt->rank + 1) * sizeof *dims);
        if (!dims) return tio__nomem(err, TFL);
        for (size_t k = 0; k < wt->rank; k++) {
            if (wt->shape[k] > INT32_MAX)
                return tio__err(err, TIO_E_LIMIT, TFL, -1,
                                "%s: dimension %zu is %lld, past TensorFlow Lite's int32 "
                                "dimensions",
                                lb, k, (long long)wt->shape[k]);
            dims[k] = (int32_t)wt->shape[k];
        }
        tfl_wtensor t;
        memset(&t, 0, sizeof t);
        t.name = wt->name;
        t.type = type;
        t.shape = dims;
        t.rank = (int32_t)wt->rank;
        t.nsig = -1;
        if (wt->nbytes) rc = tio__tfl_w_buffer(m, (int64_t)i, NULL, wt->nbytes, &t.buffer, err);
        if (!rc) rc = tio__tfl_w_tensor(m, 0, &t, &tidx[i], err);
    }
    /* the graph's outputs that are constants are the subgraph's outputs */
    if (!rc && g && g->output_count) {
        int32_t *outs = tio__tfl_w_alloc(m, g->output_count * sizeof *outs);
        if (!outs) return tio__nomem(err, TFL);
        size_t n = 0;
        for (size_t k = 0; k < g->output_count; k++) {
            int64_t v = g->outputs[k];
            int64_t t = v >= 0 && (size_t)v < g->value_count ? g->values[v].tensor : -1;
            if (t >= 0 && (size_t)t < tio__plan_count(plan)) outs[n++] = tidx[t];
        }
        s = &m->subgraphs[0];
        s->outputs = outs;
        s->noutputs = n;
    }
    /* the container's metadata: Model.metadata entries (name, buffer of the value) */
    if (!rc && !drop && c->meta.count) {
        m->metadata = tio__tfl_w_alloc(m, c->meta.count * sizeof *m->metadata);
        if (!m->metadata) return tio__nomem(err, TFL);
        for (size_t k = 0; k < c->meta.count && !rc; k++) {
            if (memchr(c->meta.keys[k], 0, c->meta.klens[k]))
                return tio__err(err, TIO_E_UNSUPPORTED, TFL, -1,
                                "metadata key %zu holds a NUL byte (a TensorFlow Lite metadata "
                                "name is a C string)",
                                k);
            m->metadata[k].name = c->meta.keys[k];
            rc = tio__tfl_w_buffer(m, -1, (const uint8_t *)c->meta.values[k], c->meta.vlens[k],
                                   &m->metadata[k].buffer, err);
            m->nmetadata++;
        }
    }
    return rc;
}
