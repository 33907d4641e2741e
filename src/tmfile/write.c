/*
 * Tengine tmfile (tm2, .tmfile) writing: the order, numbering and 4-byte
 * alignment of the official writer, zeros in every byte it leaves
 * uninitialised. See docs/formats/tmfile.md.
 */
#include "tmfile/write.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------- write */

/* Tensor idx of the graph written (the container's, or one the prep made). */
const tio_tensor *tw_ctensor(const tw *w, int64_t idx) {
    return tio__gprep_tensor(w->prepped ? &w->prep : NULL, w->c, idx);
}

static void tw_free(tw *w) {
    for (size_t j = 0; w->vnodes && j < w->nvn; j++)
    {
        if (w->vown[j] & 1) tio__tmfile_attrs_free(w->vnodes[j].attrs, w->vnodes[j].attr_count);
        if (w->vown[j] & 2) free(w->vnodes[j].inputs);
    }
    free(w->vnodes);
    tio__names_lazy_free(&w->view.names);
    tio__graph_caps_free(&w->view);
    free(w->vown);
    free(w->ghost);
    for (size_t i = 0; w->nodes && i < w->nn; i++) {
        free(w->nodes[i].own);
        free(w->nodes[i].pv);
        free(w->nodes[i].ins);
        free(w->nodes[i].outs);
    }
    free(w->nodes);
    free(w->t);
    free(w->vmap);
    free(w->innodes);
    free(w->outnodes);
    free(w->offs);
    if (w->prepped) tio__gprep_free(&w->prep);
}

const char *tw_lb_text(tw_lb *l) {
    if (l->done) return l->buf;
    l->done = true;
    if (l->n) {
        const tw_node *n = l->n;
        const char *op = n->gn ? n->gn->op : n->idx == OP_CONST ? "Const" : "InputOp";
        if (n->name)
            snprintf(l->buf, sizeof l->buf, "node %zu ('%.48s', %s)", l->j, n->name, op);
        else
            snprintf(l->buf, sizeof l->buf, "node %zu (%s)", l->j, op);
    } else if (l->gn) {
        snprintf(l->buf, 128, "node %zu ('%.48s', %s)", l->j, l->gn->name ? l->gn->name : "",
                 l->gn->op);
    } else {
        snprintf(l->buf, sizeof l->buf, "value %lld ('%.48s')", (long long)l->j,
                 l->vname ? l->vname : "");
    }
    return l->buf;
}

static const char *tw_vname(const tw *w, int64_t v) {
    const char *s = w->g->values[v].name;
    return s ? s : "";
}

/* Graph metadata: the graph-level fields (tmfile.*); anything else cannot
 * be stored. */
static int tw_int_meta(const char *key, const char *s, const char *const *names, size_t nnames,
                       int64_t lo, int64_t hi, int64_t *out, tio_error *err) {
    for (size_t k = 0; k < nnames; k++)
        if (names[k] && strcmp(names[k], s) == 0) {
            *out = (int64_t)k;
            return TIO_OK;
        }
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*s && !*end && v >= lo && v <= hi) {
        *out = v;
        return TIO_OK;
    }
    return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                    "model metadata %s = '%.64s' is not %s", key, s,
                    names ? "a known name or a number in range" : "a number in range");
}

static int tw_graph_meta(tw *w, unsigned flags, tio_error *err) {
    const tio_kv *m = &w->g->meta;
    const char *v = tio__kv_get(m, "tmfile.variant");
    if (v && strcmp(v, "lite") != 0 && strcmp(v, "old-cpp") != 0)
        return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                        "model metadata tmfile.variant = '%.64s' (expected lite or old-cpp)", v);
    w->old = v && strcmp(v, "old-cpp") == 0;
    w->op_ver = w->old ? 2 : 1; /* TM2_OP_VER of each writer */
    int64_t x;
    static const char *const lay[] = {"NCHW", "NHWC"};
    /* a model converted from ONNX says so, as convert_tool's do (TM2 code 3) */
    if (w->prepped && w->g->native_format && strcmp(w->g->native_format, "onnx") == 0)
        w->orig = 3;
    for (size_t k = 0; k < m->count; k++) {
        const char *key = m->keys[k], *s = m->values[k];
        int rc = TIO_OK;
        if (strcmp(key, "tmfile.variant") == 0) continue;
        if (strcmp(key, "tmfile.orig_format") == 0) {
            rc = w->old ? tw_int_meta(key, s, tio__tmfile_orig_old, NORIG_OLD, INT32_MIN,
                                      INT32_MAX, &x, err)
                        : tw_int_meta(key, s, tio__tmfile_orig_lite, NORIG_LITE, INT32_MIN,
                                      INT32_MAX, &x, err);
            w->orig = (int32_t)x;
        } else if (strcmp(key, "tmfile.graph_layout") == 0) {
            rc = tw_int_meta(key, s, lay, 2, INT32_MIN, INT32_MAX, &x, err);
            w->glayout = (int32_t)x;
        } else if (strcmp(key, "tmfile.model_layout") == 0) {
            rc = tw_int_meta(key, s, lay, 2, INT32_MIN, INT32_MAX, &x, err);
            w->mlayout = (int32_t)x;
        } else if (strcmp(key, "tmfile.sub_format") == 0) {
            rc = tw_int_meta(key, s, NULL, 0, INT32_MIN, INT32_MAX, &x, err);
            w->subf = (int32_t)x;
        } else if (strcmp(key, "tmfile.subgraph_id") == 0) {
            rc = tw_int_meta(key, s, NULL, 0, 0, UINT32_MAX, &x, err);
            w->sid = (uint32_t)x;
        } else if (strcmp(key, "tmfile.op_ver") == 0) {
            rc = tw_int_meta(key, s, NULL, 0, 0, UINT32_MAX, &x, err);
            w->op_ver = (uint32_t)x;
        } else if (strcmp(key, "tmfile.model_name") == 0) {
            w->mname = s;
        } else if (strcmp(key, "tmfile.subgraph_name") == 0) {
            w->sname = s;
        } else if (!(flags & TIO_SAVE_DROP_METADATA) && !tio__graph_meta_foreign(key, "tmfile")) {
            /* another format's own fields (onnx.ir_version ...) are dropped */
            rc = tio__err(err, TIO_E_LOSSY, TM_FMT, -1,
                          "model metadata '%s' has no place in a tmfile (it stores "
                          "tmfile.orig_format, tmfile.graph_layout, tmfile.model_layout, "
                          "tmfile.model_name, tmfile.subgraph_name, tmfile.sub_format, "
                          "tmfile.subgraph_id, tmfile.op_ver, tmfile.variant; "
                          "TIO_SAVE_DROP_METADATA drops the others)",
                          key);
        }
        if (rc) return rc;
    }
    return TIO_OK;
}

/* --- attribute helpers */

const tio_gattr *tw_attr(const tio_gnode *n, const char *name, uint8_t *used) {
    for (size_t k = 0; k < n->attr_count; k++)
        if (strcmp(n->attrs[k].name, name) == 0) {
            if (used) used[k] = 1;
            return &n->attrs[k];
        }
    return NULL;
}

int tw_field(const tw_node *n, const char *name) {
    for (unsigned k = 0; k < n->nf; k++)
        if (strcmp(n->pd->f[k].name, name) == 0) return (int)k;
    return -1;
}
void tw_set_i(tw_node *n, const char *name, int64_t v) {
    int k = tw_field(n, name);
    if (k >= 0) {
        n->pv[k].present = true;
        n->pv[k].i = v;
    }
}
void tw_set_f(tw_node *n, const char *name, double v) {
    int k = tw_field(n, name);
    if (k >= 0) {
        n->pv[k].present = true;
        n->pv[k].f = v;
    }
}
void tw_set_ints(tw_node *n, const char *name, const int64_t *v, size_t cnt) {
    int k = tw_field(n, name);
    if (k >= 0) {
        n->pv[k].present = true;
        n->pv[k].ints = v;
        n->pv[k].count = cnt;
    }
}

/* Selects the operator and its param struct. The values of its fields are
 * allocated per node, as many as the struct has (a node of a model with many
 * constants is then small: no page faults on a large array), and kept across
 * a change of operator like the fields of a fixed array. On failure w->nomem
 * is set and the node has no fields. */
void tw_use_op(tw *w, tw_node *n, int idx) {
    n->idx = idx;
    n->pd = tio__tmfile_param_of(idx, w->old, n->op_ver, &n->nf);
    n->has_param = n->pd != NULL;
    if (n->nf > n->npv) {
        tw_pv *pv = realloc(n->pv, n->nf * sizeof *pv);
        if (!pv) {
            w->nomem = true;
            n->nf = 0;
            return;
        }
        memset(pv + n->npv, 0, (n->nf - n->npv) * sizeof *pv);
        n->pv = pv;
        n->npv = n->nf;
    }
}

/* A per-output INTS attribute (tm2_layout, ...): one entry per output. */
static int tw_per_output(const tio_gattr *a, size_t nout, tw_lb *lbl, int64_t lo, int64_t hi,
                         const int64_t **out, tio_error *err) {
    if (a->type != TIO_ATTR_INTS || a->count != nout)
        return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                        "%s: attribute '%s' must be INTS with one entry per output (%zu)",
                        tw_lb_text(lbl), a->name, nout);
    for (size_t k = 0; k < nout; k++)
        if (a->ints[k] < lo || a->ints[k] > hi)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: attribute '%s'[%zu] = %lld is outside [%lld, %lld]",
                            tw_lb_text(lbl), a->name, k, (long long)a->ints[k], (long long)lo,
                            (long long)hi);
    *out = a->ints;
    return TIO_OK;
}

/* The tm2_* attributes of any node. */
static int tw_private_attrs(tw *w, tw_node *n, tw_lb *lbl, uint8_t *used, tio_error *err) {
    const tio_gnode *gn = n->gn;
    int rc = TIO_OK;
    const tio_gattr *a;
    (void)w;
    if ((a = tw_attr(gn, "tm2_op_ver", used)) != NULL) {
        if (a->type != TIO_ATTR_INT || a->i < 0 || a->i > (int64_t)UINT32_MAX)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: attribute 'tm2_op_ver' must be an INT in [0, 2^32)",
                            tw_lb_text(lbl));
        n->op_ver = (uint32_t)a->i;
    }
    if ((a = tw_attr(gn, "tm2_dynamic_shape", used)) != NULL) {
        if (a->type != TIO_ATTR_INT || a->i < 0 || a->i > 255)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: attribute 'tm2_dynamic_shape' must be an INT in [0, 255]",
                            tw_lb_text(lbl));
        n->dyn = (uint8_t)a->i;
    }
    if ((a = tw_attr(gn, "tm2_layout", used)) != NULL)
        rc = tw_per_output(a, gn->output_count, lbl, INT32_MIN, INT32_MAX, &n->layouts, err);
    if (!rc && (a = tw_attr(gn, "tm2_type", used)) != NULL)
        rc = tw_per_output(a, gn->output_count, lbl, INT32_MIN, INT32_MAX, &n->types, err);
    if (!rc && (a = tw_attr(gn, "tm2_buffer_size", used)) != NULL)
        rc = tw_per_output(a, gn->output_count, lbl, -1, UINT32_MAX, &n->bufsizes, err);
    if (!rc && (a = tw_attr(gn, "tm2_param", used)) != NULL) {
        if (a->type != TIO_ATTR_INTS || a->count > TM_RAW_PARAM_MAX / 4)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: attribute 'tm2_param' must be INTS of at most %u words",
                            tw_lb_text(lbl), TM_RAW_PARAM_MAX / 4);
        for (size_t k = 0; k < a->count; k++)
            if (a->ints[k] < INT32_MIN || a->ints[k] > (int64_t)UINT32_MAX)
                return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                "%s: attribute 'tm2_param'[%zu] is not a 32-bit word",
                                tw_lb_text(lbl), k);
        n->raw = a->ints;
        n->nraw = a->count;
    }
    if (rc) return rc;
    const tio_gattr *qc = tw_attr(gn, "tm2_quant_count", used),
                    *qs = tw_attr(gn, "tm2_quant_scale", used),
                    *qz = tw_attr(gn, "tm2_quant_zero_point", used),
                    *qw = tw_attr(gn, "tm2_quant_width", used);
    if (!qc && !qs && !qz && !qw) return TIO_OK;
    if (!qc || !qs || !qz)
        return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                        "%s: quant params need tm2_quant_count, tm2_quant_scale and "
                        "tm2_quant_zero_point together",
                        tw_lb_text(lbl));
    rc = tw_per_output(qc, gn->output_count, lbl, 0, UINT32_MAX, &n->qcount, err);
    if (rc) return rc;
    uint64_t total = 0;
    for (size_t k = 0; k < gn->output_count; k++) total += (uint64_t)n->qcount[k];
    if (qs->type != TIO_ATTR_FLOATS || qs->count != total || qz->type != TIO_ATTR_INTS ||
        qz->count != total || (qw && (qw->type != TIO_ATTR_INTS || qw->count != total)))
        return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                        "%s: tm2_quant_scale (FLOATS), tm2_quant_zero_point (INTS) and "
                        "tm2_quant_width (INTS) need %llu entries (the sum of tm2_quant_count)",
                        tw_lb_text(lbl), (unsigned long long)total);
    for (size_t k = 0; k < total; k++)
        if (qz->ints[k] < INT32_MIN || qz->ints[k] > INT32_MAX ||
            (qw && (qw->ints[k] < INT32_MIN || qw->ints[k] > INT32_MAX)))
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: quant param %zu does not fit int32", tw_lb_text(lbl), k);
    if (qw && !w->old)
        return tio__err(err, TIO_E_LOSSY, TM_FMT, -1,
                        "%s: tm2_quant_width would be lost: Tengine-lite files carry no "
                        "QuantParam.width (write the old-cpp variant)",
                        tw_lb_text(lbl));
    n->qscale = qs->floats;
    n->qzp = qz->ints;
    n->qwidth = qw ? qw->ints : NULL;
    return TIO_OK;
}

/* Attributes of a node from a tmfile graph: its param fields. */
static int tw_native_params(tw_node *n, tw_lb *lbl, uint8_t *used, tio_error *err) {
    const tio_gnode *gn = n->gn;
    for (size_t k = 0; k < gn->attr_count; k++) {
        if (used[k]) continue;
        const tio_gattr *a = &gn->attrs[k];
        int fi = n->pd ? tw_field(n, a->name) : -1;
        if (fi < 0) {
            if (n->pd)
                return tio__err(err, TIO_E_LOSSY, TM_FMT, -1,
                                "%s: attribute '%s' has no field in %s%s", tw_lb_text(lbl), a->name,
                                n->pd->name,
                                n->nf < n->pd->n ? " (the old C++ layout)" : "");
            return tio__err(err, TIO_E_LOSSY, TM_FMT, -1,
                            "%s: attribute '%s' would be lost: %s has no param", tw_lb_text(lbl),
                            a->name, n->idx >= 0 ? tio__tmfile_ops[n->idx].name : "the operator");
        }
        const tm_field *f = &n->pd->f[fi];
        tw_pv *v = &n->pv[fi];
        bool ok = false;
        int64_t lo = INT32_MIN, hi = INT32_MAX;
        switch (f->kind) {
        case TF_U32: lo = 0; hi = UINT32_MAX; /* fall through */
        case TF_I32:
        case TF_BOOL:
            if (f->kind == TF_BOOL) {
                lo = 0;
                hi = 255;
            }
            ok = a->type == TIO_ATTR_INT;
            if (ok && (a->i < lo || a->i > hi))
                return tio__err(err, TIO_E_LOSSY, TM_FMT, -1,
                                "%s: attribute '%s' = %lld does not fit %s.%s", tw_lb_text(lbl),
                                a->name, (long long)a->i, n->pd->name, f->name);
            v->i = a->i;
            break;
        case TF_F32:
            ok = a->type == TIO_ATTR_FLOAT;
            v->f = a->f;
            break;
        case TF_STR:
            ok = a->type == TIO_ATTR_STRING;
            v->s = a->s;
            break;
        case TF_VDIMS:
            ok = a->type == TIO_ATTR_INTS;
            for (size_t m = 0; ok && m < a->count; m++)
                if (a->ints[m] < INT32_MIN || a->ints[m] > INT32_MAX)
                    return tio__err(err, TIO_E_LOSSY, TM_FMT, -1,
                                    "%s: attribute '%s'[%zu] = %lld does not fit int32",
                                    tw_lb_text(lbl), a->name, m, (long long)a->ints[m]);
            v->ints = a->ints;
            v->count = a->count;
            break;
        default:
            ok = a->type == TIO_ATTR_FLOATS && (f->kind != TF_VANCHORS || a->count % 4 == 0);
            v->floats = a->floats;
            v->count = a->count;
            break;
        }
        if (!ok)
            return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                            "%s: attribute '%s' has the wrong type for %s.%s", tw_lb_text(lbl),
                            a->name, n->pd->name, f->name);
        v->present = true;
        used[k] = 1;
    }
    return TIO_OK;
}

/* Adds op to w->utypes unless it is there already. */
static void tw_unk_type(tw *w, const char *op) {
    for (const char *p = w->utypes; *p;) {
        size_t len = strcspn(p, ",");
        if (len == strlen(op) && strncmp(p, op, len) == 0) return;
        p += len;
        while (*p == ',' || *p == ' ') p++;
    }
    if (w->ut_full) return;
    size_t room = sizeof w->utypes - w->ut_len;
    int k = snprintf(w->utypes + w->ut_len, room, "%s%.40s", w->ut_len ? ", " : "", op);
    if (k < 0 || (size_t)k >= room) {
        w->utypes[w->ut_len] = '\0';
        w->ut_full = true;
    } else {
        w->ut_len += (size_t)k;
    }
}

/* --- a tmfile graph in ONNX form, lowered through the mapping table */

static bool tw_is(const tio_gnode *n, const char *native) {
    const char *nat = n->native_op ? n->native_op : n->op;
    return strcmp(nat, native) == 0;
}

/* Inputs 1 and 2 of a Clip are the float32 scalar constants 0 and 6 that a
 * read adds for a ReLU6 (no producer). */
static bool tw_clip06(const tw *w, const tio_graph *g, const tio_gnode *n, const int64_t *prod) {
    if (n->input_count != 3) return false;
    for (size_t k = 1; k < 3; k++) {
        int64_t b = n->inputs[k];
        if (b < 0 || (size_t)b >= g->value_count || prod[b] >= 0) return false;
        int64_t t = g->values[b].tensor;
        if (t < 0 || (size_t)t >= w->c->count) return false;
        const tio_tensor *x = w->c->tensors[t];
        if (x->dtype != TIO_FLOAT32 || x->numel != 1 || x->layout != TIO_LAYOUT_DENSE ||
            !x->data || x->nbytes < 4)
            return false;
        uint32_t u = tio__ld32(x->data);
        if (u != (k == 1 ? 0u : 0x40c00000u)) return false;
    }
    return true;
}

/* Constant input b (not a node's output) of the ONNX form: dense, with
 * data, `numel` elements of dtype int32/int64 (ints) or float32 (!ints),
 * read into iv or *fv. */
static bool tw_const_in(const tw *w, const tio_graph *g, const int64_t *prod, int64_t b,
                        bool ints, uint64_t numel, int64_t *iv, double *fv) {
    if (b < 0 || (size_t)b >= g->value_count || prod[b] >= 0) return false;
    int64_t t = g->values[b].tensor;
    const tio_tensor *x = t >= 0 && (size_t)t < w->c->count ? w->c->tensors[t] : NULL;
    if (!x || x->layout != TIO_LAYOUT_DENSE || x->numel != numel || !x->data) return false;
    size_t es = ints && x->dtype == TIO_INT64 ? 8u : 4u;
    if (ints ? x->dtype != TIO_INT64 && x->dtype != TIO_INT32 : x->dtype != TIO_FLOAT32)
        return false;
    if (x->nbytes < numel * es) return false;
    for (uint64_t k = 0; ints && k < numel; k++)
        iv[k] = es == 8 ? (int64_t)tio__ld64(x->data + 8 * k)
                        : (int64_t)(int32_t)tio__ld32(x->data + 4 * k);
    if (!ints) {
        uint32_t u = tio__ld32(x->data);
        float f;
        memcpy(&f, &u, sizeof f);
        *fv = f;
    }
    return true;
}

/* The ONNX form's constant inputs (read.c) back to the params they were:
 * Slice's starts, ends, axes and steps (four one-value inputs), Pad's pads
 * (eight values) and value (a float32 scalar; absent: 0), Clip's min and max
 * (float32 scalars). *ln becomes tmp, a copy of n with them as attributes
 * (in *xa, which the caller frees; the values in iv and fv), vn reads input
 * 0 alone and the constants are not written. When the inputs are not such
 * constants, nothing changes (the lowering then names what is missing). */
static int tw_params_back(const tw *w, const tio_graph *g, const tio_gnode *n, int idx,
                          const int64_t *prod, const size_t *uses, tio_gnode *vn, tio_gnode *tmp,
                          const tio_gnode **ln, tio_gattr **xa, int64_t *iv, double fv[2],
                          tio_error *err) {
    static const char *const skey[4] = {"starts", "ends", "axes", "steps"};
    static const char *const pkey[2] = {"pads", "value"}, *const ckey[2] = {"min", "max"};
    bool slice = idx == OP_SLICE && n->input_count == 5;
    bool pad = idx == OP_PAD && (n->input_count == 2 || n->input_count == 3);
    bool clip = idx == OP_CLIP && n->input_count == 3;
    if (!slice && !pad && !clip) return TIO_OK;
    size_t na = slice ? 4 : 2;
    bool ok = true;
    for (size_t k = 1; ok && k < n->input_count; k++)
        ok = slice ? tw_const_in(w, g, prod, n->inputs[k], true, 1, &iv[k - 1], NULL)
             : pad ? tw_const_in(w, g, prod, n->inputs[k], k == 1, k == 1 ? 8u : 1u, iv, fv)
                   : tw_const_in(w, g, prod, n->inputs[k], false, 1, NULL, &fv[k - 1]);
    if (!ok) return TIO_OK;
    tio_gattr *a = malloc((n->attr_count + na) * sizeof *a);
    if (!a) return tio__nomem(err, TM_FMT);
    if (n->attr_count) memcpy(a, n->attrs, n->attr_count * sizeof *a);
    for (size_t q = 0; q < na; q++) {
        tio_gattr *e = &a[n->attr_count + q];
        memset(e, 0, sizeof *e);
        e->name = (char *)(uintptr_t)(slice ? skey[q] : pad ? pkey[q] : ckey[q]);
        bool flt = clip || (pad && q == 1);
        e->type = flt ? TIO_ATTR_FLOAT : TIO_ATTR_INTS;
        e->ints = slice ? &iv[q] : pad && q == 0 ? iv : NULL;
        e->count = slice ? 1u : pad && q == 0 ? 8u : 0u;
        e->f = clip ? fv[q] : pad && q == 1 ? *fv : 0.0;
    }
    *tmp = *n;
    tmp->attrs = a;
    tmp->attr_count = n->attr_count + na;
    *ln = tmp;
    *xa = a;
    vn->input_count = 1;
    for (size_t k = 1; k < n->input_count; k++)
        if (uses[n->inputs[k]] == 1) w->ghost[n->inputs[k]] = 1;
    return TIO_OK;
}

/* Builds w->view: the graph's nodes with raised attributes (native_attrs 1)
 * lowered to Tengine's fields (tmfile/opmap.c), and each Relu that was a
 * Convolution's activation fused back into its Conv. */
static int tw_lower_view(tw *w, const tio_graph *g, tio_error *err) {
    size_t nn = g->node_count, nv = g->value_count;
    w->view = *g;
    atomic_init(&w->view.names, NULL); /* its own */
    atomic_init(&w->view.caps, NULL);
    w->vnodes = calloc(nn ? nn : 1, sizeof *w->vnodes);
    w->vown = calloc(nn ? nn : 1, 1);
    w->ghost = calloc(nv ? nv : 1, 1);
    int64_t *prod = malloc((nv ? nv : 1) * sizeof *prod);
    size_t *uses = calloc(nv ? nv : 1, sizeof *uses);
    uint8_t *gone = calloc(nn ? nn : 1, 1);
    size_t *fused = calloc(nn ? nn : 1, sizeof *fused); /* a fused Conv: 1 + its Relu */
    int8_t *fact = calloc(nn ? nn : 1, 1);                  /* and its activation */
    int rc = TIO_OK;
    if (!w->vnodes || !w->vown || !w->ghost || !prod || !uses || !fused || !fact || !gone) {
        rc = tio__nomem(err, TM_FMT);
        goto out;
    }
    for (size_t i = 0; i < nv; i++) prod[i] = -1;
    for (size_t j = 0; j < nn; j++) {
        const tio_gnode *n = &g->nodes[j];
        for (size_t k = 0; k < n->input_count; k++)
            if (n->inputs[k] >= 0 && (size_t)n->inputs[k] < nv) uses[n->inputs[k]]++;
        for (size_t k = 0; k < n->output_count; k++)
            if (n->outputs[k] >= 0 && (size_t)n->outputs[k] < nv && prod[n->outputs[k]] < 0)
                prod[n->outputs[k]] = (int64_t)j;
    }
    for (size_t k = 0; k < g->output_count; k++)
        if (g->outputs[k] >= 0 && (size_t)g->outputs[k] < nv) uses[g->outputs[k]]++;
    /* the Relus and Clips split from a Convolution's activation */
    for (size_t j = 0; j < nn; j++) {
        const tio_gnode *n = &g->nodes[j];
        if (n->native_attrs != 1 || !tw_is(n, "Convolution") || n->output_count != 1 ||
            n->attr_count || n->input_count < 1)
            continue;
        bool relu = strcmp(n->op, "Relu") == 0 && n->input_count == 1;
        bool six = strcmp(n->op, "Clip") == 0 && tw_clip06(w, g, n, prod);
        if (!relu && !six) continue;
        int64_t v = n->inputs[0];
        if (v < 0 || (size_t)v >= nv || prod[v] < 0 || uses[v] != 1) continue;
        const tio_gnode *c = &g->nodes[prod[v]];
        if (c->native_attrs != 1 || strcmp(c->op, "Conv") != 0 || !tw_is(c, "Convolution") ||
            c->output_count != 1 || fused[prod[v]])
            continue;
        fused[prod[v]] = 1 + j;
        fact[prod[v]] = six ? 6 : 0;
        gone[j] = 1;
        w->ghost[v] = 1;
        for (size_t k = 1; six && k < 3; k++)
            if (uses[n->inputs[k]] == 1) w->ghost[n->inputs[k]] = 1;
    }
    size_t m = 0;
    for (size_t j = 0; !rc && j < nn; j++) {
        if (gone[j]) continue;
        const tio_gnode *n = &g->nodes[j];
        tio_gnode *vn = &w->vnodes[m];
        *vn = *n;
        if (fused[j]) vn->outputs = g->nodes[fused[j] - 1].outputs; /* the Relu's output */
        if (n->native_attrs >= 2 && n->input_count == 2 && n->inputs[1] >= 0 &&
            (size_t)n->inputs[1] < nv && (size_t)(n->native_attrs - 2) < nv &&
            g->values[n->inputs[1]].tensor >= 0 && prod[n->inputs[1]] < 0) {
            /* a Reshape reading re_shape's stand-in: its own shape input back,
             * or none when the stand-in was appended (it names itself) */
            int64_t *ins = malloc(2 * sizeof *ins);
            if (!ins) {
                rc = tio__nomem(err, TM_FMT);
                m++;
                break;
            }
            ins[0] = n->inputs[0];
            ins[1] = n->native_attrs - 2;
            if (uses[n->inputs[1]] == 1) w->ghost[n->inputs[1]] = 1;
            vn->inputs = ins;
            if (ins[1] == n->inputs[1]) vn->input_count = 1;
            w->vown[m] |= 2;
        }
        bool clip = n->native_attrs == 1 && strcmp(n->op, "Clip") == 0 &&
                    (tw_is(n, "ReLu6") || tw_is(n, "Convolution"));
        if (clip && !tw_clip06(w, g, n, prod)) {
            rc = tio__err(err, TIO_E_LOSSY, TM_FMT, -1,
                          "node '%s' (Clip, tmfile: %s): Tengine's ReLu6 clips to 0 and 6; "
                          "other bounds have no Tengine form",
                          n->name ? n->name : "", n->native_op ? n->native_op : n->op);
            m++;
            break;
        }
        if (clip) {
            if (tw_is(n, "Convolution")) {
                /* a split ReLU6 no longer after its Conv: a ReLu6 of its own */
                vn->native_op = (char *)(uintptr_t) "ReLu6";
                vn->native_id = OP_RELU6;
            }
            /* Clip(x, 0, 6): Tengine's ReLu6 takes x alone; the bounds the
             * read added are not written */
            vn->input_count = 1;
            for (size_t k = 1; k < 3; k++) {
                int64_t b = n->inputs[k];
                if (b >= 0 && (size_t)b < nv && prod[b] < 0 && g->values[b].tensor >= 0 &&
                    uses[b] == 1)
                    w->ghost[b] = 1;
            }
        }
        if (n->native_attrs >= 1) {
            int idx = tio__tmfile_find_op(n->native_op ? n->native_op : n->op);
            if (idx == OP_CONV && clip) idx = OP_RELU6;
            if (idx == OP_CONV && strcmp(n->op, "Relu") == 0) {
                /* a split activation no longer after its Conv: a ReLu of its own */
                idx = OP_RELU;
                vn->native_op = (char *)(uintptr_t) "ReLu";
                vn->native_id = OP_RELU;
            }
            if (idx >= 0) {
                tio_gattr *la = NULL, *xa = NULL;
                size_t nla = 0;
                tio_gnode tmp;
                const tio_gnode *ln = n;
                int64_t iv[8];
                double fv[2] = {0.0, 0.0};
                rc = tw_params_back(w, g, n, idx, prod, uses, vn, &tmp, &ln, &xa, iv, fv, err);
                if (rc) {
                    m++;
                    break;
                }
                rc = tio__tmfile_lower(g, w->c, ln, idx, fused[j] ? fact[j] : -1, &la, &nla, err);
                free(xa);
                if (rc) {
                    m++; /* what it owns is freed with the rest */
                    break;
                }
                vn->attrs = la;
                vn->attr_count = vn->attr_cap = nla;
                w->vown[m] |= 1;
            }
        }
        m++;
    }
    w->nvn = m;
    w->view.nodes = w->vnodes;
    w->view.node_count = m;
out:
    free(prod);
    free(uses);
    free(fused);
    free(fact);
    free(gone);
    return rc;
}

/* --- the plan of the file */

static int tw_prepare(tw *w, tio_write_plan *p, tio_error *err) {
    memset(w, 0, sizeof *w);
    w->plan = p;
    w->c = tio__plan_container(p);
    const tio_graph *g = w->g = w->c->graph;
    unsigned flags = tio__plan_flags(p);
    if (!g)
        return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                        "a model needs a graph; this container holds tensors only");
    if (g->native_format && strcmp(g->native_format, TM_FMT) == 0) {
        int lrc = tw_lower_view(w, g, err);
        if (lrc) return lrc;
        g = w->g = &w->view;
    } else if (!g->opaque) {
        const char *fz = tio__plan_option(p, "fuse");
        bool fuse = !fz || strcmp(fz, "0") != 0;
        if (fz && strcmp(fz, "0") != 0 && strcmp(fz, "1") != 0)
            return tio__err(err, TIO_E_ARGUMENT, TM_FMT, -1,
                            "option fuse=%s: expected 1 (convert_tool's fusions, the default) or "
                            "0 (the graph as it is)",
                            fz);
        int prc = tio__tmfile_prep(w->c, g, fuse, tio__plan_option(p, "dims"), &w->prep, err);
        if (prc) return prc;
        w->prepped = true;
        g = w->g = &w->prep.g;
    }
    if (g->opaque)
        return tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                        "the model cannot be re-encoded: %s (convert the weights to a tensor "
                        "format instead)",
                        g->opaque);
    w->native = g->native_format && strcmp(g->native_format, TM_FMT) == 0;
    int rc = tw_graph_meta(w, flags, err);
    if (rc) return rc;
    size_t nv = g->value_count, ngn = g->node_count;

    /* who produces each value */
    int64_t *prod = malloc((nv ? nv : 1) * sizeof *prod);
    w->vmap = malloc((nv ? nv : 1) * sizeof *w->vmap);
    uint8_t *isin = calloc(nv ? nv : 1, 1), *used = calloc(nv ? nv : 1, 1);
    if (!prod || !w->vmap || !isin || !used) {
        rc = tio__nomem(err, TM_FMT);
        goto out;
    }
    for (size_t i = 0; i < nv; i++) prod[i] = -1, w->vmap[i] = -1;
    for (size_t k = 0; k < g->input_count; k++) isin[g->inputs[k]] = 1;
    for (size_t k = 0; k < g->output_count; k++) used[g->outputs[k]] = 1;
    for (size_t j = 0; j < ngn && !rc; j++) {
        const tio_gnode *n = &g->nodes[j];
        tw_lb lb = {.gn = n, .j = j};
        if (n->opaque) {
            rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                          "%s: cannot be re-encoded: %s (convert the weights to a tensor format "
                          "instead)",
                          tw_lb_text(&lb), n->opaque);
            break;
        }
        for (size_t k = 0; k < n->input_count && !rc; k++) {
            if (n->inputs[k] < 0)
                rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                              "%s: input %zu is absent; tmfile has no optional inputs",
                              tw_lb_text(&lb), k);
            else used[n->inputs[k]] = 1;
        }
        if (n->output_count == 0 && !rc)
            rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                          "%s: the node has no outputs (Tengine refuses such a model)",
                          tw_lb_text(&lb));
        for (size_t k = 0; k < n->output_count && !rc; k++) {
            int64_t v = n->outputs[k];
            if (v < 0)
                rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                              "%s: output %zu is absent; tmfile has no optional outputs",
                              tw_lb_text(&lb), k);
            else if (prod[v] >= 0)
                rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                              "%s: value %lld ('%s') is also an output of node %lld; a tmfile "
                              "tensor has one producer",
                              tw_lb_text(&lb), (long long)v, tw_vname(w, v), (long long)prod[v]);
            else prod[v] = (int64_t)j;
        }
    }
    if (rc) goto out;
    /* nodes: Const for unproduced constants, InputOp for unproduced graph
     * inputs (the order convert_tool gives them), then the graph's nodes */
    size_t nsc = 0, nsi = 0;
    for (size_t i = 0; i < nv && !rc; i++) {
        if (prod[i] >= 0 || (w->ghost && w->ghost[i])) continue;
        if (g->values[i].tensor >= 0) nsc++;
        else if (isin[i]) nsi++;
        else if (used[i])
            rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                          "value %zu ('%s') is read but neither produced by a node, a constant "
                          "nor a graph input",
                          i, tw_vname(w, (int64_t)i));
        else
            rc = tio__err(err, TIO_E_LOSSY, TM_FMT, -1,
                          "value %zu ('%s') would be lost: tmfile keeps only the tensors that "
                          "nodes output",
                          i, tw_vname(w, (int64_t)i));
    }
    if (rc) goto out;
    w->nn = nsc + nsi + ngn;
    w->nodes = calloc(w->nn ? w->nn : 1, sizeof *w->nodes);
    if (!w->nodes) {
        rc = tio__nomem(err, TM_FMT);
        goto out;
    }
    size_t m = 0;
    for (size_t i = 0; i < nv; i++)
        if (prod[i] < 0 && g->values[i].tensor >= 0 && !(w->ghost && w->ghost[i])) {
            w->nodes[m].sval = (int64_t)i;
            w->nodes[m].name = g->values[i].name;
            w->nodes[m].op_ver = w->op_ver;
            tw_use_op(w, &w->nodes[m++], OP_CONST);
        }
    for (size_t k = 0; k < g->input_count; k++) {
        int64_t v = g->inputs[k];
        if (prod[v] != -1 || g->values[v].tensor >= 0) continue;
        prod[v] = -2; /* once (an input listed twice gets one InputOp) */
        w->nodes[m].sval = v;
        w->nodes[m].name = g->values[v].name;
        w->nodes[m].op_ver = w->op_ver;
        tw_use_op(w, &w->nodes[m++], OP_INPUT);
    }
    for (size_t j = 0; j < ngn; j++) {
        tw_node *n = &w->nodes[m++];
        n->gn = &g->nodes[j];
        n->name = n->gn->name;
        n->op_ver = w->op_ver;
    }
    if (w->nomem) {
        rc = tio__nomem(err, TM_FMT);
        goto out;
    }
    /* tensors in node-output order */
    size_t nt = 0;
    for (size_t j = 0; j < w->nn && !rc; j++) {
        tw_node *n = &w->nodes[j];
        n->nout = n->gn ? n->gn->output_count : 1;
        n->nin = n->gn ? n->gn->input_count : 0;
        n->outs = malloc(n->nout * sizeof *n->outs);
        n->ins = malloc((n->nin ? n->nin : 1) * sizeof *n->ins);
        if (!n->outs || !n->ins) rc = tio__nomem(err, TM_FMT);
        for (size_t k = 0; !rc && k < n->nout; k++) {
            int64_t v = n->gn ? n->gn->outputs[k] : n->sval;
            w->vmap[v] = (int64_t)nt;
            n->outs[k] = (int64_t)nt++;
        }
    }
    if (rc) goto out;
    if (nt > UINT32_MAX || w->nn > UINT32_MAX) {
        rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1, "too many tensors or nodes for u32 ids");
        goto out;
    }
    w->nt = nt;
    w->t = calloc(nt ? nt : 1, sizeof *w->t);
    if (!w->t) {
        rc = tio__nomem(err, TM_FMT);
        goto out;
    }
    /* operators */
    for (size_t j = 0; j < w->nn && !rc; j++) {
        tw_node *n = &w->nodes[j];
        tw_lb lb = {.n = n, .j = j};
        if (!n->gn) {
            n->code = (uint32_t)tio__tmfile_file_code(w->old, n->idx);
            continue;
        }
        for (size_t k = 0; k < n->nin; k++) n->ins[k] = w->vmap[n->gn->inputs[k]];
        uint8_t *au = calloc(n->gn->attr_count ? n->gn->attr_count : 1, 1);
        if (!au) {
            rc = tio__nomem(err, TM_FMT);
            break;
        }
        rc = tw_private_attrs(w, n, &lb, au, err);
        const char *tmname = n->gn->native_op ? n->gn->native_op : n->gn->op;
        int idx = w->native ? tio__tmfile_find_op(tmname) : -1;
        if (rc) {
        } else if (idx >= 0) {
            tw_use_op(w, n, idx);
            if (n->raw && n->pd)
                rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                              "%s: tm2_param given for %s, which has a known param struct",
                              tw_lb_text(&lb), tio__tmfile_ops[idx].name);
            if (!rc) rc = tw_native_params(n, &lb, au, err);
            if (!rc && n->raw) n->has_param = true;
        } else if (w->native && strncmp(tmname, "OpType", 6) == 0 && n->gn->native_id >= 0 &&
                   n->gn->native_id <= (int64_t)UINT32_MAX) {
            /* an operator code tensio does not know, kept by number */
            n->idx = -1;
            n->code = (uint32_t)n->gn->native_id;
            n->has_param = n->raw != NULL;
            rc = tw_native_params(n, &lb, au, err);
        } else {
            if (n->raw)
                rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                              "%s: tm2_param is meaningful only in a tmfile graph",
                              tw_lb_text(&lb));
            if (!rc) rc = tw_foreign(w, n, &lb, au, err);
            for (size_t k = 0; !rc && k < n->gn->attr_count; k++)
                if (!au[k])
                    rc = tio__err(err, TIO_E_LOSSY, TM_FMT, -1,
                                  "%s: attribute '%s' has no equivalent in tmfile's %s",
                                  tw_lb_text(&lb), n->gn->attrs[k].name,
                                  tio__tmfile_ops[n->idx].name);
        }
        free(au);
        if (rc && w->unk_hit) {
            /* noted; the other nodes are still lowered, to list every refusal */
            w->unk_hit = false;
            rc = TIO_OK;
            w->nunk++;
            tw_unk_type(w, n->gn->op);
            if (w->unk_shown + 1 == w->nunk) {
                size_t room = sizeof w->unk - w->unk_len;
                int k = snprintf(w->unk + w->unk_len, room, "%s'%.40s'", w->unk_len ? ", " : "",
                                 n->gn->name ? n->gn->name : "");
                if (k < 0 || (size_t)k >= room) {
                    w->unk[w->unk_len] = '\0'; /* full: the count says how many more */
                } else {
                    w->unk_len += (size_t)k;
                    w->unk_shown++;
                }
            }
            continue;
        }
        if (w->nomem) rc = tio__nomem(err, TM_FMT);
        if (rc) break;
        if (n->idx >= 0) {
            int64_t code = tio__tmfile_file_code(w->old, n->idx);
            if (code < 0) {
                rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                              "%s: the old C++ operator table has no %s (write the lite variant)",
                              tw_lb_text(&lb), tio__tmfile_ops[n->idx].name);
                break;
            }
            n->code = (uint32_t)code;
            /* the param struct may depend on op_ver (old Reshape V1): refresh */
            unsigned nf;
            const tm_pdef *pd = tio__tmfile_param_of(n->idx, w->old, n->op_ver, &nf);
            if (pd != n->pd)
                rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                              "%s: op_ver %u selects %s, which the attributes do not describe",
                              tw_lb_text(&lb), n->op_ver, pd ? pd->name : "no param");
        }
    }
    if (!rc && w->nunk)
        rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                      "tmfile has no operator for %s%s (%zu node%s: %s%s; "
                      "docs/formats/tmfile.md lists what maps)",
                      w->utypes, w->ut_full ? ", ..." : "", w->nunk, w->nunk == 1 ? "" : "s",
                      w->unk, w->unk_shown < w->nunk ? ", ..." : "");
    if (rc) goto out;
    /* tensors */
    for (size_t j = 0; j < w->nn && !rc; j++) {
        tw_node *n = &w->nodes[j];
        size_t qat = 0;
        for (size_t k = 0; k < n->nout && !rc; k++) {
            tw_tensor *t = &w->t[n->outs[k]];
            int64_t v = n->gn ? n->gn->outputs[k] : n->sval;
            const tio_gvalue *gv = &g->values[v];
            tw_lb lb = {.vname = gv->name, .j = (size_t)v};
            t->value = v;
            t->name = gv->name;
            t->ct = gv->tensor;
            t->layout = n->layouts ? (int32_t)n->layouts[k] : w->glayout;
            /* Tengine's Flatten marks its output NHWC, and convert_tool saves that */
            if (!n->layouts && w->prepped && n->idx == OP_FLATTEN)
                t->layout = 1;
            t->type = n->types ? (int32_t)n->types[k]
                               : tio__tmfile_default_type(n->idx >= 0 ? n->idx : -1);
            if (!n->gn && n->idx == OP_CONST) t->type = TM_T_CONST;
            if (n->qcount) {
                t->nq = (size_t)n->qcount[k];
                t->qscale = n->qscale + qat;
                t->qzp = n->qzp + qat;
                t->qwidth = n->qwidth ? n->qwidth + qat : NULL;
                qat += t->nq;
            }
            tio_dtype dt;
            const int64_t *shape = NULL;
            int64_t rank;
            tio_wtensor xt;
            if (t->ct >= 0 && (size_t)t->ct >= w->c->count) {
                /* a tensor the prep computed (float32/int32, dense) */
                const tio_tensor *e = tw_ctensor(w, t->ct);
                memset(&xt, 0, sizeof xt);
                xt.dtype = e->dtype;
                xt.rank = e->rank;
                xt.shape = e->shape;
                xt.nbytes = e->nbytes;
            }
            if (t->ct >= 0) {
                const tio_wtensor *wt = (size_t)t->ct >= w->c->count
                                            ? &xt
                                            : tio__plan_tensor(p, (size_t)t->ct);
                dt = wt->dtype;
                rank = (int64_t)wt->rank;
                shape = wt->shape;
                if (t->type != TM_T_CONST)
                    rc = tio__err(err, TIO_E_LOSSY, TM_FMT, -1,
                                  "%s: a constant whose tensor type is %d, not CONST (2): its "
                                  "data would be lost",
                                  tw_lb_text(&lb), t->type);
                else if (wt->nbytes > UINT32_MAX)
                    rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                  "%s: %zu bytes of data exceed tmfile's 32-bit buffer size",
                                  tw_lb_text(&lb), wt->nbytes);
                t->bufsize = (uint32_t)wt->nbytes;
            } else {
                dt = gv->dtype == TIO_DTYPE_INVALID ? TIO_FLOAT32 : gv->dtype;
                rank = gv->rank;
            }
            if (rc) break;
            int code = tio__tmfile_dtype_code(dt);
            if (code < 0) {
                rc = tio__err(err, TIO_E_LOSSY, TM_FMT, -1,
                              "%s: dtype %s has no tmfile data type (FP32, FP16, INT8, UINT8, "
                              "INT32, INT16)",
                              tw_lb_text(&lb), tio_dtype_name(dt));
                break;
            }
            t->dcode = code;
            if (rank > (int64_t)TM_MAX_DIMS) {
                rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                              "%s: rank %lld exceeds tmfile's %u dims", tw_lb_text(&lb),
                              (long long)rank, TM_MAX_DIMS);
                break;
            }
            /* a constant without dims is written without a dims vector */
            t->rank = (t->type == TM_T_CONST && rank == 0) ? -1 : rank;
            uint64_t numel = 1;
            for (int64_t d = 0; d < rank && !rc; d++) {
                int64_t dv = shape ? shape[d] : gv->dims[d].value;
                if (!shape && gv->dims[d].name && !(flags & TIO_SAVE_DROP_METADATA))
                    rc = tio__err(err, TIO_E_LOSSY, TM_FMT, -1,
                                  "%s: dim %lld is symbolic ('%s'); tmfile stores numbers "
                                  "(TIO_SAVE_DROP_METADATA drops dim names)",
                                  tw_lb_text(&lb), (long long)d, gv->dims[d].name);
                else if (dv > INT32_MAX)
                    rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                  "%s: dim %lld = %lld does not fit int32", tw_lb_text(&lb),
                                  (long long)d, (long long)dv);
                t->dims[d] = (int32_t)dv;
                if (dv < 0 || tio__mul64_ovf(numel, (uint64_t)(dv < 0 ? 0 : dv), &numel))
                    numel = UINT64_MAX;
            }
            if (rc) break;
            if (t->type == TM_T_CONST && t->ct < 0) {
                int64_t bs = n->bufsizes ? n->bufsizes[k] : -1;
                uint64_t b;
                if (bs >= 0) {
                    t->bufsize = (uint32_t)bs;
                } else if (numel == UINT64_MAX ||
                           tio__mul64_ovf(numel, tio_dtype_size(dt), &b) || b > UINT32_MAX) {
                    rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                                  "%s: a constant without data whose size (from its dims) is "
                                  "unknown or exceeds 32 bits",
                                  tw_lb_text(&lb));
                } else {
                    t->bufsize = (uint32_t)b;
                }
            }
        }
    }
    if (rc) goto out;
    /* every container tensor must be a constant of the graph */
    uint8_t *isconst = calloc(w->c->count ? w->c->count : 1, 1);
    if (!isconst) {
        rc = tio__nomem(err, TM_FMT);
        goto out;
    }
    for (size_t v = 0; v < nv; v++)
        if (g->values[v].tensor >= 0 && (size_t)g->values[v].tensor < w->c->count)
            isconst[g->values[v].tensor] = 1;
    for (size_t i = 0; i < w->c->count && !rc; i++) {
        if (!isconst[i] && !(w->prepped && w->prep.dropped[i]))
            rc = tio__err(err, TIO_E_LOSSY, TM_FMT, -1,
                          "tensor %zu%s%s%s is not a constant of the graph; a tmfile stores "
                          "only the model's constants",
                          i, w->c->tensors[i]->name ? " ('" : "",
                          w->c->tensors[i]->name ? w->c->tensors[i]->name : "",
                          w->c->tensors[i]->name ? "')" : "");
    }
    free(isconst);
    if (rc) goto out;
    /* graph inputs and outputs -> node indices */
    size_t *wprod = malloc((nt ? nt : 1) * sizeof *wprod);
    size_t *wslot = malloc((nt ? nt : 1) * sizeof *wslot);
    w->innodes = malloc((g->input_count ? g->input_count : 1) * sizeof *w->innodes);
    w->outnodes = malloc((g->output_count ? g->output_count : 1) * sizeof *w->outnodes);
    w->offs = malloc(((w->nn > nt ? w->nn : nt) + 1) * sizeof *w->offs);
    if (!wprod || !wslot || !w->innodes || !w->outnodes || !w->offs) {
        free(wprod);
        free(wslot);
        rc = tio__nomem(err, TM_FMT);
        goto out;
    }
    for (size_t j = 0; j < w->nn; j++)
        for (size_t k = 0; k < w->nodes[j].nout; k++) {
            wprod[w->nodes[j].outs[k]] = j;
            wslot[w->nodes[j].outs[k]] = k;
        }
    for (int side = 0; side < 2; side++) {
        const int64_t *list = side ? g->outputs : g->inputs;
        size_t cnt = side ? g->output_count : g->input_count, out = 0;
        uint32_t *dst = side ? w->outnodes : w->innodes;
        for (size_t k = 0; k < cnt; k++) {
            int64_t t = w->vmap[list[k]];
            /* a node's later outputs continue the entry of its first */
            if (out && dst[out - 1] == wprod[t] && wslot[t] > 0) continue;
            dst[out++] = (uint32_t)wprod[t];
        }
        if (side) w->nout = out;
        else w->nin = out;
    }
    free(wprod);
    free(wslot);
out:
    free(prod);
    free(isin);
    free(used);
    return rc;
}

/* --- emitting bytes (a dry run computes the layout) */

typedef struct tw_out {
    tio_sink *s; /* NULL: dry run */
    uint64_t pos;
} tw_out;

/* Small pieces go to the sink as they come: it gathers them into its buffer. */
static int o_bytes(tw_out *o, const void *p, size_t n, tio_error *err) {
    int rc = o->s ? tio__sink_write(o->s, p, n, err) : TIO_OK;
    o->pos += n;
    return rc;
}
static int o_align(tw_out *o, tio_error *err) {
    size_t pad = (size_t)((4 - o->pos % 4) % 4);
    int rc = pad && o->s ? tio__sink_zeros(o->s, pad, err) : TIO_OK;
    o->pos += pad;
    return rc;
}
static uint32_t o_at(const tw_out *o) { return o->pos > UINT32_MAX ? 0 : (uint32_t)o->pos; }
static int o_u32(tw_out *o, uint32_t v, tio_error *err) {
    uint8_t b[4];
    tio__st32(b, v);
    return o_bytes(o, b, 4, err);
}
/* An aligned object of 32-bit words; *off = where it starts. */
static int o_words(tw_out *o, const uint32_t *w, size_t n, uint32_t *off, tio_error *err) {
    int rc = o_align(o, err);
    *off = o_at(o);
    if (!o->s) { /* dry run: only the position */
        o->pos += 4 * (uint64_t)n;
        return rc;
    }
    /* one sink write per 64 words, not per word (a struct, a vector of
     * 10,000 offsets) */
    uint8_t b[256];
    for (size_t k = 0; !rc && k < n;) {
        size_t m = n - k < sizeof b / 4 ? n - k : sizeof b / 4;
        for (size_t j = 0; j < m; j++) tio__st32(b + 4 * j, w[k + j]);
        rc = o_bytes(o, b, 4 * m, err);
        k += m;
    }
    return rc;
}
static uint32_t f2u(double d) {
    float f = (float)d;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
/* A TM2_String (chars + NUL, then the struct); *off = 0 for NULL. */
static int o_string(tw_out *o, const char *s, uint32_t *off, tio_error *err) {
    *off = 0;
    if (!s) return TIO_OK;
    size_t n = strlen(s) + 1;
    uint32_t data = o_at(o);
    int rc = o_bytes(o, s, n, err);
    uint32_t st[2] = {(uint32_t)n, data};
    if (!rc) rc = o_words(o, st, 2, off, err);
    return rc;
}
/* A vector of int64 values stored as 32-bit words. */
static int o_vec_i(tw_out *o, const int64_t *v, size_t n, uint32_t *off, tio_error *err) {
    int rc = o_align(o, err);
    *off = o_at(o);
    if (!rc) rc = o_u32(o, (uint32_t)n, err);
    for (size_t k = 0; !rc && k < n; k++) rc = o_u32(o, (uint32_t)v[k], err);
    return rc;
}
static int o_vec_u(tw_out *o, const uint32_t *v, size_t n, uint32_t *off, tio_error *err) {
    int rc = o_align(o, err);
    *off = o_at(o);
    if (!rc) rc = o_u32(o, (uint32_t)n, err);
    for (size_t k = 0; !rc && k < n; k++) rc = o_u32(o, v[k], err);
    return rc;
}

static int tw_emit_param(tw *w, tw_out *o, const tw_node *n, uint32_t *poff, tio_error *err) {
    (void)w;
    *poff = 0;
    if (!n->has_param) return TIO_OK;
    if (!n->pd) {
        int rc = o_align(o, err);
        *poff = o_at(o);
        for (size_t k = 0; !rc && k < n->nraw; k++) rc = o_u32(o, (uint32_t)n->raw[k], err);
        return rc;
    }
    const tm_pdef *pd = n->pd;
    uint32_t sub[TW_MAXF];
    unsigned pos[TW_MAXF];
    unsigned size = tio__tmfile_layout(pd, n->nf, pos);
    int rc = TIO_OK;
    /* children in field order */
    for (unsigned k = 0; k < n->nf && !rc; k++) {
        const tw_pv *v = &n->pv[k];
        sub[k] = 0;
        if (!v->present) continue;
        switch (pd->f[k].kind) {
        case TF_STR: rc = o_string(o, v->s, &sub[k], err); break;
        case TF_VDIMS: rc = o_vec_i(o, v->ints, v->count, &sub[k], err); break;
        case TF_VFLOATS:
        case TF_VANCHORS: {
            rc = o_align(o, err);
            sub[k] = o_at(o);
            size_t cnt = pd->f[k].kind == TF_VANCHORS ? v->count / 4 : v->count;
            if (!rc) rc = o_u32(o, (uint32_t)cnt, err);
            for (size_t m = 0; !rc && m < v->count; m++) rc = o_u32(o, f2u(v->floats[m]), err);
            break;
        }
        default: break;
        }
    }
    if (rc) return rc;
    uint8_t buf[TW_MAXF * 4 + 4];
    memset(buf, 0, sizeof buf);
    for (unsigned k = 0; k < n->nf; k++) {
        const tw_pv *v = &n->pv[k];
        uint8_t *q = buf + pos[k];
        switch (pd->f[k].kind) {
        case TF_I32:
        case TF_U32: tio__st32(q, (uint32_t)v->i); break;
        case TF_BOOL: q[0] = (uint8_t)v->i; break;
        case TF_F32: tio__st32(q, v->present ? f2u(v->f) : 0); break;
        default: tio__st32(q, sub[k]); break;
        }
    }
    rc = o_align(o, err);
    *poff = o_at(o);
    if (!rc) rc = o_bytes(o, buf, size, err);
    return rc;
}

static int tw_emit(tw *w, tw_out *o, uint32_t root, uint32_t *root_out, tio_error *err) {
    const tio_write_plan *p = w->plan;
    uint8_t hdr[TM_HEADER_LEN];
    memset(hdr, 0, sizeof hdr);
    hdr[0] = 2; /* ver_main 2, ver_sub 0, ver_compile 0, padding 0 */
    tio__st32(hdr + 8, root);
    int rc = o_bytes(o, hdr, sizeof hdr, err);
    uint32_t mname = 0;
    if (!rc) rc = o_string(o, w->mname, &mname, err);
    /* nodes */
    for (size_t j = 0; j < w->nn && !rc; j++) {
        const tw_node *n = &w->nodes[j];
        uint32_t sn = 0, vin = 0, vout = 0, poff = 0, opoff = 0;
        rc = o_string(o, n->name, &sn, err);
        if (!rc && n->nin) rc = o_vec_i(o, n->ins, n->nin, &vin, err);
        if (!rc && n->nout) rc = o_vec_i(o, n->outs, n->nout, &vout, err);
        if (!rc) rc = tw_emit_param(w, o, n, &poff, err);
        uint32_t op[3] = {n->op_ver, n->code, poff};
        if (!rc) rc = o_words(o, op, 3, &opoff, err);
        uint32_t nd[7] = {(uint32_t)j, vin, vout, opoff, sn, 0, n->dyn};
        if (!rc) rc = o_words(o, nd, 7, &w->offs[j], err);
    }
    uint32_t vnodes = 0, vtens = 0, vbufs = 0, vin = 0, vout = 0, soff = 0, vsubs = 0;
    if (!rc) rc = o_vec_u(o, w->offs, w->nn, &vnodes, err);
    /* tensors */
    uint32_t nbuf = 0;
    for (size_t i = 0; i < w->nt && !rc; i++) {
        const tw_tensor *t = &w->t[i];
        uint32_t sn = 0, vd = 0, vq = 0, toff = 0;
        rc = o_string(o, t->name, &sn, err);
        if (!rc && t->rank >= 0) {
            rc = o_align(o, err);
            vd = o_at(o);
            if (!rc) rc = o_u32(o, (uint32_t)t->rank, err);
            for (int64_t d = 0; !rc && d < t->rank; d++) rc = o_u32(o, (uint32_t)t->dims[d], err);
        }
        if (!rc && t->nq) {
            /* the params, then the vector of their offsets */
            uint32_t first = 0;
            for (size_t k = 0; !rc && k < t->nq; k++) {
                uint32_t q[3] = {(uint32_t)t->qzp[k], f2u(t->qscale[k]),
                                 t->qwidth ? (uint32_t)t->qwidth[k] : 0};
                uint32_t at;
                rc = o_words(o, q, 3, &at, err);
                if (k == 0) first = at;
            }
            if (!rc) rc = o_align(o, err);
            vq = o_at(o);
            if (!rc) rc = o_u32(o, (uint32_t)t->nq, err);
            for (size_t k = 0; !rc && k < t->nq; k++)
                rc = o_u32(o, first + (uint32_t)(k * TM_QUANT_LEN), err);
        }
        if (t->type == TM_T_CONST) nbuf++;
        uint32_t ts[8] = {(uint32_t)i, nbuf - 1, vd, sn, vq, (uint32_t)t->layout,
                          (uint32_t)t->type, (uint32_t)t->dcode};
        if (!rc) rc = o_words(o, ts, 8, &toff, err);
        w->offs[i] = toff;
    }
    if (!rc) rc = o_vec_u(o, w->offs, w->nt, &vtens, err);
    /* buffers: data (where the previous object ends), then the TM2_Buffer */
    size_t b = 0;
    for (size_t i = 0; i < w->nt && !rc; i++) {
        const tw_tensor *t = &w->t[i];
        if (t->type != TM_T_CONST) continue;
        uint32_t data = 0;
        if (t->ct >= 0) {
            /* no alignment: the data follows the previous (4-aligned) object */
            data = o_at(o);
            if (o->s && t->bufsize && (size_t)t->ct >= w->c->count)
                /* the prep's data: copied, since the prep goes before the sink flushes */
                rc = tio__sink_write(o->s, tw_ctensor(w, t->ct)->data, t->bufsize, err);
            else if (o->s && t->bufsize)
                rc = tio__plan_sink_tensor((tio_write_plan *)(uintptr_t)p, o->s, (size_t)t->ct,
                                           err);
            o->pos += t->bufsize;
        }
        uint32_t bs[2] = {t->bufsize, data};
        if (!rc) rc = o_words(o, bs, 2, &w->offs[b++], err);
    }
    if (!rc) rc = o_vec_u(o, w->offs, b, &vbufs, err);
    if (!rc) rc = o_vec_u(o, w->innodes, w->nin, &vin, err);
    if (!rc) rc = o_vec_u(o, w->outnodes, w->nout, &vout, err);
    uint32_t sname = 0;
    if (!rc) rc = o_string(o, w->sname, &sname, err);
    uint32_t sg[10] = {w->sid, (uint32_t)w->glayout, (uint32_t)w->mlayout, vin, vout, vnodes,
                       vtens, vbufs, sname, 0};
    if (!rc) rc = o_words(o, sg, w->old ? 9 : 10, &soff, err);
    uint32_t vs[2] = {1, soff};
    if (!rc) rc = o_words(o, vs, 2, &vsubs, err);
    uint32_t model[4] = {(uint32_t)w->orig, (uint32_t)w->subf, vsubs, mname};
    if (!rc) rc = o_words(o, model, 4, root_out, err);
    if (!rc && o->pos > UINT32_MAX)
        rc = tio__err(err, TIO_E_UNSUPPORTED, TM_FMT, -1,
                      "the model needs %llu bytes; tmfile offsets are 32-bit",
                      (unsigned long long)o->pos);
    return rc;
}

/* The lowered model and its layout (a dry run), as the check leaves them
 * for the write: lowering and laying out 10,000 tensors is most of the
 * writer's own work, done once. */
typedef struct tw_laid {
    tw w;
    uint32_t root; /* offset of the header's root */
    uint64_t size; /* bytes of the file */
} tw_laid;

static void tw_laid_free(void *p) {
    tw_laid *l = p;
    tw_free(&l->w);
    free(l);
}

static int tw_lay_out(tio_write_plan *p, tw_laid *l, tio_error *err) {
    tw_out dry = {NULL, 0};
    l->root = 0;
    int rc = tw_prepare(&l->w, p, err);
    if (!rc) rc = tw_emit(&l->w, &dry, 0, &l->root, err);
    l->size = dry.pos;
    return rc;
}

int tio__tmfile_check(const tio_write_plan *cp, tio_error *err) {
    tio_write_plan *p = (tio_write_plan *)(uintptr_t)cp;
    tw_laid *l = malloc(sizeof *l);
    if (!l) return tio__nomem(err, TM_FMT);
    int rc = tw_lay_out(p, l, err);
    if (rc) {
        tw_laid_free(l);
        return rc;
    }
    tio__plan_keep(p, l, tw_laid_free);
    return TIO_OK;
}

int tio__tmfile_write(tio_write_plan *p, tio_sink *s, tio_error *err) {
    tw_laid local, *l = tio__plan_take(p);
    int rc = TIO_OK;
    if (!l) {
        l = &local;
        rc = tw_lay_out(p, l, err);
    }
    tw_out real = {.s = s};
    uint32_t root2 = 0;
    if (!rc) rc = tw_emit(&l->w, &real, l->root, &root2, err);
    if (!rc && (root2 != l->root || real.pos != l->size))
        rc = tio__err(err, TIO_E_CORRUPT, TM_FMT, -1, "internal error: the layout changed");
    if (l == &local) tw_free(&local.w);
    else tw_laid_free(l);
    return rc;
}
