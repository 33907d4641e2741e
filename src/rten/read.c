/*
 * RTen (.rten) reading: the header, the FlatBuffers verification, the
 * constants (views into the source) and the graph. See docs/formats/rten.md.
 */
#include "core/internal.h"
#include "flatbuf/flatbuf.h"
#include "graph/budget.h"
#include "graph/graph.h"
#include "rten/opmap.h"
#include "rten/rten.h"
#include "rten/schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------- read */

typedef struct rt_reader {
    tio_read_ctx *ctx;
    const uint8_t *buf; /* the FlatBuffers model data */
    size_t len;
    uint64_t base;      /* file offset of buf[0] */
    int version;        /* 1 or 2 */
    uint64_t tensor_data_offset;
    uint64_t objects;   /* nodes/values/attributes decoded so far */
    uint64_t max_objects; /* min(limits.max_objects, model data / 4 + 4096) */
    tio_budget mem;     /* the heap the decode takes, estimated (graph/budget.h) */
} rt_reader;

static int64_t rt_off(const rt_reader *r, size_t pos) { return (int64_t)(r->base + pos); }

/* Counts decoded objects. A table or vector may be referenced from many
 * places, so the total is bounded by the model data's size as well as by
 * max_objects: the work stays linear in the input. */
static int rt_count(rt_reader *r, uint64_t n, size_t pos, tio_error *err) {
    return tio__objects_take(&r->objects, n, r->max_objects, RT_FMT, rt_off(r, pos),
                             "nodes, dims, attributes, operator inputs and outputs",
                             "and one per 4 bytes of model data + 4096", err);
}

/* Charges heap the decode is about to take (see graph/budget.h). */
static int rt_mem(rt_reader *r, uint64_t bytes, size_t pos, tio_error *err) {
    return tio__budget_take(&r->mem, bytes, rt_off(r, pos), err);
}

/* A string field, as a C string: refuses embedded NUL bytes and names longer
 * than the limit. *s is NULL when absent. `copied`: the caller copies it
 * (into the graph), which is charged to the memory budget. */
static int rt_string(rt_reader *r, const tio_fb_ref *t, unsigned id, const char *what,
                     bool copied, const char **s, tio_error *err) {
    uint32_t n = 0;
    *s = NULL;
    if (!tio__fb_string(t, id, s, &n)) return TIO_OK;
    size_t pos = tio__fb_field_pos(t, id);
    if (n > r->ctx->limits.max_name_bytes)
        return tio__err(err, TIO_E_LIMIT, RT_FMT, rt_off(r, pos),
                        "%s: string of %u bytes exceeds the limit of %u (max_name_bytes)", what, n,
                        r->ctx->limits.max_name_bytes);
    if (memchr(*s, 0, n))
        return tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, rt_off(r, pos),
                        "%s: the string contains a NUL byte (tensio keeps strings as C "
                        "strings)",
                        what);
    return copied ? rt_mem(r, tio__cost_str(n), pos, err) : TIO_OK;
}

/* "node I ('NAME')", NAME cut to 48 bytes and "..." when longer; "node I"
 * without a name. By hand, not snprintf: it runs once or twice per node, and
 * snprintf was half of the open of a 10,000-constant model. */
static void rt_label(char buf[96], size_t index, const char *name) {
    char num[TIO__DEC_CAP];
    const char *d = tio__u64_dec(num, index);
    size_t n = 5, dl = strlen(d);
    memcpy(buf, "node ", 5);
    memcpy(buf + n, d, dl);
    n += dl;
    if (name) {
        size_t nl = strnlen(name, 49);
        memcpy(buf + n, " ('", 3);
        n += 3;
        memcpy(buf + n, name, nl > 48 ? 48 : nl);
        n += nl > 48 ? 48 : nl;
        if (nl > 48) {
            memcpy(buf + n, "...", 3);
            n += 3;
        }
        memcpy(buf + n, "')", 2);
        n += 2;
    }
    buf[n] = '\0'; /* at most 5 + 20 + 3 + 48 + 3 + 2 + 1 = 82 bytes */
}

/* lbl followed by sfx into what[128] (lbl is a label of rt_label, < 96). */
static void rt_what(char *what, const char *lbl, const char *sfx) {
    size_t l = strnlen(lbl, 96), k = strlen(sfx);
    memcpy(what, lbl, l);
    memcpy(what + l, sfx, k + 1);
}

/* Fields beyond those the schema knows, in a table outside the attrs tables
 * (a newer writer): a finding, and the graph is marked so that writers refuse
 * to drop them. */
static int rt_unknown_fields(rt_reader *r, const tio_fb_ref *t, const tio_fb_table *schema,
                             tio_graph *g, const char *lbl, tio_error *err) {
    unsigned slots = tio__fb_slot_count(t), unknown = 0;
    for (unsigned id = schema->nfields; id < slots; id++)
        if (tio__fb_has(t, id)) unknown++;
    if (!unknown) return TIO_OK;
    char why[192];
    snprintf(why, sizeof why, "%s: %s has %u field%s beyond the %u tensio knows (a newer schema)",
             lbl, schema->name, unknown, unknown == 1 ? "" : "s", schema->nfields);
    int rc = tio__graph_set_graph_opaque(g, why, err);
    if (!rc) rc = tio__warn(r->ctx, RT_FMT, rt_off(r, t->pos), err, "%s", why);
    return rc;
}

/* A ConstantNode: its data as a view (inline vector or external range) and
 * a container tensor. */
static int rt_constant(rt_reader *r, const tio_fb_ref *ct, const char *name, const char *lbl,
                       int64_t *tensor, tio_error *err) {
    tio_read_ctx *ctx = r->ctx;
    tio_fb_vec sv;
    size_t pos = ct->pos;
    if (!tio__fb_vector(ct, RTEN_ConstantNode_shape, &sv))
        return tio__err(err, TIO_E_CORRUPT, RT_FMT, rt_off(r, pos),
                        "%s: ConstantNode has no shape (a required field)", lbl);
    if (sv.count > ctx->limits.max_rank)
        return tio__err(err, TIO_E_LIMIT, RT_FMT, rt_off(r, pos),
                        "%s: rank %u exceeds the limit of %u (max_rank)", lbl, sv.count,
                        ctx->limits.max_rank);
    /* the tensor record (its name and shape), the dims of its graph value,
     * and the shape here */
    int rc = rt_count(r, sv.count, pos, err);
    if (!rc)
        rc = rt_mem(r,
                    tio__cost_tensor(name ? strlen(name) : 0, sv.count) +
                        tio__cost_dims(sv.count) + (sv.count > 8 ? tio__cost_i64s(sv.count) : 0),
                    pos, err);
    if (rc) return rc;
    int64_t small[8];
    int64_t *dims = small;
    if (sv.count > 8) {
        dims = malloc(sv.count * sizeof *dims);
        if (!dims) return tio__nomem(err, RT_FMT);
    }
    for (uint32_t i = 0; i < sv.count; i++) dims[i] = tio__fb_vec_u32(&sv, i);
    tio_tensor_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.name = name;
    desc.rank = sv.count;
    desc.shape = dims;
    desc.layout = TIO_LAYOUT_DENSE;
    uint64_t numel = 0;
    size_t nbytes = 0;
    int64_t src_off = -1;

    bool has_dtype = tio__fb_has(ct, RTEN_ConstantNode_dtype);
    unsigned dcode = tio__fb_u16(ct, RTEN_ConstantNode_dtype, 0);
    bool has_off = tio__fb_has(ct, RTEN_ConstantNode_data_offset);
    unsigned tag = tio__fb_u8(ct, RTEN_ConstantNode_data_type, 0);
    bool has_data = tio__fb_has(ct, RTEN_ConstantNode_data) && tag != 0;

    if (has_off) {
        uint64_t doff = tio__fb_u64(ct, RTEN_ConstantNode_data_offset, 0);
        size_t fpos = tio__fb_field_pos(ct, RTEN_ConstantNode_data_offset);
        if (r->version < 2) {
            rc = tio__err(err, TIO_E_CORRUPT, RT_FMT, rt_off(r, fpos),
                          "%s: the constant has data_offset %llu but a V1 file has no tensor "
                          "data section (external data needs the V2 header)",
                          lbl, (unsigned long long)doff);
            goto out;
        }
        if (!has_dtype) {
            rc = tio__err(err, TIO_E_CORRUPT, RT_FMT, rt_off(r, pos),
                          "%s: an external constant needs ConstantNode.dtype, which is absent",
                          lbl);
            goto out;
        }
        desc.dtype = tio__rten_const_dtype(dcode);
        if (desc.dtype == TIO_DTYPE_INVALID) {
            rc = tio__err(err, TIO_E_UNSUPPORTED, RT_FMT,
                          rt_off(r, tio__fb_field_pos(ct, RTEN_ConstantNode_dtype)),
                          "%s: ConstantDataType %u is unknown (expected 0..3: Int32, Float32, "
                          "Int8, UInt8; a newer schema?)",
                          lbl, dcode);
            goto out;
        }
        rc = tio__shape_size(dims, sv.count, tio_dtype_size(desc.dtype), &numel, &nbytes,
                             RT_FMT, rt_off(r, pos), err);
        if (rc) goto out;
        uint64_t abs, end;
        if (tio__add64_ovf(r->tensor_data_offset, doff, &abs) ||
            tio__add64_ovf(abs, nbytes, &end) || end > ctx->size) {
            rc = tio__err(err, TIO_E_BOUNDS, RT_FMT, rt_off(r, fpos),
                          "%s: external data at tensor_data_offset %llu + data_offset %llu, "
                          "%zu bytes (%s, %llu elements), extends past the end of the file "
                          "(%zu bytes)",
                          lbl, (unsigned long long)r->tensor_data_offset,
                          (unsigned long long)doff, nbytes, tio_dtype_name(desc.dtype),
                          (unsigned long long)numel, ctx->size);
            goto out;
        }
        if (has_data) {
            rc = tio__warn(ctx, RT_FMT, rt_off(r, pos), err,
                           "%s: the constant has both inline data and data_offset; the "
                           "external data is used (as rten does)",
                           lbl);
            if (rc) goto out;
        }
        desc.data = ctx->data + abs;
        desc.nbytes = nbytes;
        src_off = (int64_t)abs;
    } else {
        if (tag == 0 || !has_data) {
            rc = tio__err(err, TIO_E_CORRUPT, RT_FMT, rt_off(r, pos),
                          "%s: the constant has neither inline data nor a data_offset", lbl);
            goto out;
        }
        desc.dtype = tio__rten_tag_dtype(tag);
        if (desc.dtype == TIO_DTYPE_INVALID) {
            rc = tio__err(err, TIO_E_UNSUPPORTED, RT_FMT,
                          rt_off(r, tio__fb_field_pos(ct, RTEN_ConstantNode_data_type)),
                          "%s: ConstantData type %u is unknown (expected 1..4: FloatData, "
                          "Int32Data, Int8Data, UInt8Data; a newer schema?)",
                          lbl, tag);
            goto out;
        }
        if (has_dtype && tio__rten_const_dtype(dcode) != desc.dtype) {
            rc = tio__warn(ctx, RT_FMT, rt_off(r, tio__fb_field_pos(ct, RTEN_ConstantNode_dtype)),
                           err,
                           "%s: ConstantNode.dtype %u disagrees with the inline data (%s); "
                           "the data's type is used (as rten does)",
                           lbl, dcode, tio_dtype_name(desc.dtype));
            if (rc) goto out;
        }
        rc = tio__shape_size(dims, sv.count, tio_dtype_size(desc.dtype), &numel, &nbytes,
                             RT_FMT, rt_off(r, pos), err);
        if (rc) goto out;
        tio_fb_ref dt;
        tio_fb_vec dv;
        if (!tio__fb_table(ct, RTEN_ConstantNode_data, &dt) ||
            !tio__fb_vector(&dt, RTEN_FloatData_data, &dv)) {
            rc = tio__err(err, TIO_E_CORRUPT, RT_FMT, rt_off(r, pos),
                          "%s: the inline data table has no data vector", lbl);
            goto out;
        }
        if ((uint64_t)dv.count != numel) {
            rc = tio__err(err, TIO_E_CORRUPT, RT_FMT, rt_off(r, dv.data),
                          "%s: the inline data holds %u elements but shape has %llu (rten "
                          "would panic here)",
                          lbl, dv.count, (unsigned long long)numel);
            goto out;
        }
        desc.data = tio__fb_vec_data(&dv);
        desc.nbytes = nbytes;
        src_off = rt_off(r, dv.data);
    }
    rc = tio__container_add_view(ctx->c, &desc, src_off, RT_FMT, err);
    if (rc == TIO_OK) *tensor = (int64_t)ctx->c->count - 1;
out:
    if (dims != small) free(dims);
    return rc;
}

/* A ValueNode: optional dtype and shape (dims fixed or symbolic). */
static int rt_value(rt_reader *r, const tio_fb_ref *vt, tio_graph *g, tio_value_info *v,
                    tio_dim **dims_out, const char *lbl, tio_error *err) {
    tio_read_ctx *ctx = r->ctx;
    v->dtype = TIO_DTYPE_INVALID;
    if (tio__fb_has(vt, RTEN_ValueNode_dtype)) {
        unsigned code = tio__fb_u8(vt, RTEN_ValueNode_dtype, 0);
        v->dtype = tio__rten_value_dtype(code);
        if (v->dtype == TIO_DTYPE_INVALID) {
            int rc = tio__warn(ctx, RT_FMT, rt_off(r, tio__fb_field_pos(vt, RTEN_ValueNode_dtype)),
                               err,
                               "%s: DataType %u is unknown (expected 0..3); the value's dtype "
                               "is left unknown",
                               lbl, code);
            if (rc) return rc;
        }
    }
    tio_fb_vec sv;
    v->rank = -1;
    v->dims = NULL;
    if (!tio__fb_vector(vt, RTEN_ValueNode_shape, &sv)) return TIO_OK;
    if (sv.count > ctx->limits.max_rank)
        return tio__err(err, TIO_E_LIMIT, RT_FMT, rt_off(r, vt->pos),
                        "%s: rank %u exceeds the limit of %u (max_rank)", lbl, sv.count,
                        ctx->limits.max_rank);
    /* the dims here, and the graph's copy */
    int rc = rt_count(r, sv.count, vt->pos, err);
    if (!rc) rc = rt_mem(r, 2 * tio__cost_dims(sv.count), vt->pos, err);
    if (rc) return rc;
    tio_dim *dims = calloc(sv.count ? sv.count : 1, sizeof *dims);
    if (!dims) return tio__nomem(err, RT_FMT);
    for (uint32_t i = 0; i < sv.count; i++) {
        tio_fb_ref dt;
        if (!tio__fb_vec_table(&sv, i, &dt)) {
            free(dims);
            return tio__err(err, TIO_E_CORRUPT, RT_FMT, rt_off(r, sv.data + 4u * i),
                            "%s: shape dim %u is not a Dim table", lbl, i);
        }
        dims[i].value = tio__fb_u32(&dt, RTEN_Dim_value, 0);
        rc = rt_string(r, &dt, RTEN_Dim_name, lbl, true, &dims[i].name, err);
        if (!rc) rc = rt_unknown_fields(r, &dt, tio__rten_Dim, g, lbl, err);
        if (rc) {
            free(dims);
            return rc;
        }
    }
    v->rank = sv.count;
    v->dims = dims;
    *dims_out = dims;
    return TIO_OK;
}

static int rt_graph(rt_reader *r, const tio_fb_ref *gt, tio_graph *g, unsigned depth,
                    tio_error *err);

/* Raises attribute `a`, decoded from rten field `f`, to its ONNX form through
 * the mapping table (rten/opmap.c): the ONNX name, and enum values as ONNX
 * strings, DataType codes as TensorProto.DataType. A field without an ONNX
 * counterpart (or `map` NULL: an unknown operator, an unexpected attrs table)
 * and a value with no ONNX spelling keep the rten value as "rten.<field>".
 * `nbuf` holds that name. */
static void rt_raise(const tio_rten_opmap *map, const tio_fb_field *f, tio_attr *a, char *nbuf,
                     size_t cap) {
    const tio_rten_fmap *fm = map ? tio__rten_fmap_field(map, f->name) : NULL;
    bool keep = !fm || !fm->onnx;
    if (!keep) {
        switch (fm->conv) {
        case TIO_RTEN_ENUM:
        case TIO_RTEN_AUTOPAD:
            if (a->type == TIO_ATTR_INT && a->i >= 0 && a->i < fm->nstrs) {
                a->type = TIO_ATTR_STRING;
                a->s = fm->strs[a->i];
                a->i = 0;
            } else {
                keep = true;
            }
            break;
        case TIO_RTEN_DTYPE: {
            int64_t o = a->type == TIO_ATTR_INT ? tio__rten_dtype_to_onnx(a->i) : -1;
            if (o < 0) keep = true;
            else a->i = o;
            break;
        }
        default: break;
        }
    }
    if (keep) {
        snprintf(nbuf, cap, "rten.%s", f->name);
        a->name = nbuf;
    } else {
        a->name = fm->onnx;
        a->label = NULL;
    }
}

/* Decodes one attrs table into attributes of node `ni`, generically from the
 * schema: scalars -> INT/FLOAT (schema defaults applied), vectors -> INTS /
 * FLOATS / STRINGS, strings -> STRING, Graph tables -> GRAPH (subgraph), the
 * Scalar union -> INT or FLOAT. */
static int rt_attrs(rt_reader *r, const tio_fb_ref *at, const tio_fb_table *schema,
                    const tio_rten_opmap *map, tio_graph *g, size_t ni, const char *lbl,
                    unsigned depth, tio_error *err) {
    int rc = rt_count(r, schema->nfields, at->pos, err);
    if (rc) return rc;
    for (unsigned id = 0; id < schema->nfields; id++) {
        const tio_fb_field *f = &schema->fields[id];
        tio_attr a;
        memset(&a, 0, sizeof a);
        a.name = f->name;
        int64_t iv = 0;
        double fv = 0;
        int64_t *ints = NULL;
        double *floats = NULL;
        tio_graph *sub = NULL;
        switch (f->kind) {
        case TIO_FB_NONE:
        case TIO_FB_UNION_TYPE: continue;
        case TIO_FB_BOOL:
        case TIO_FB_I8:
        case TIO_FB_U8:
        case TIO_FB_I16:
        case TIO_FB_U16:
        case TIO_FB_I32:
        case TIO_FB_U32:
        case TIO_FB_I64:
        case TIO_FB_U64:
            if (!tio__fb_scalar(at, id, f, &iv, &fv)) continue;
            a.type = TIO_ATTR_INT;
            a.i = iv;
            a.label = tio__rten_enum_name(f->enum_name, iv);
            break;
        case TIO_FB_F32:
        case TIO_FB_F64:
            if (!tio__fb_scalar(at, id, f, &iv, &fv)) continue;
            a.type = TIO_ATTR_FLOAT;
            a.f = fv;
            break;
        case TIO_FB_STRING:
            rc = rt_string(r, at, id, lbl, true, &a.s, err);
            if (rc) return rc;
            if (!a.s) continue;
            a.type = TIO_ATTR_STRING;
            break;
        case TIO_FB_VECTOR: {
            tio_fb_vec v;
            if (!tio__fb_vector(at, id, &v)) continue;
            /* the elements here, and the graph's copy */
            rc = rt_count(r, v.count, at->pos, err);
            if (!rc) rc = rt_mem(r, 2 * tio__cost_i64s(v.count), at->pos, err);
            if (rc) return rc;
            a.count = v.count;
            size_t esz = tio__fb_scalar_size(f->elem);
            const uint8_t *p = tio__fb_vec_data(&v);
            if (f->elem == TIO_FB_F32) {
                floats = malloc((v.count ? v.count : 1) * sizeof *floats);
                if (!floats) return tio__nomem(err, RT_FMT);
                for (uint32_t k = 0; k < v.count; k++) {
                    uint32_t u = tio__ld32(p + 4u * k);
                    float x;
                    memcpy(&x, &u, sizeof x);
                    floats[k] = x;
                }
                a.type = TIO_ATTR_FLOATS;
                a.floats = floats;
            } else if (esz && f->elem != TIO_FB_F64) {
                ints = malloc((v.count ? v.count : 1) * sizeof *ints);
                if (!ints) return tio__nomem(err, RT_FMT);
                for (uint32_t k = 0; k < v.count; k++) {
                    const uint8_t *e = p + esz * k;
                    switch (f->elem) {
                    case TIO_FB_BOOL:
                    case TIO_FB_U8: ints[k] = e[0]; break;
                    case TIO_FB_I8: ints[k] = (int8_t)e[0]; break;
                    case TIO_FB_U16: ints[k] = tio__ld16(e); break;
                    case TIO_FB_I16: ints[k] = (int16_t)tio__ld16(e); break;
                    case TIO_FB_U32: ints[k] = tio__ld32(e); break;
                    case TIO_FB_I32: ints[k] = (int32_t)tio__ld32(e); break;
                    default: ints[k] = (int64_t)tio__ld64(e); break;
                    }
                }
                a.type = TIO_ATTR_INTS;
                a.ints = ints;
            } else {
                return tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, rt_off(r, at->pos),
                                "%s: %s.%s: vector element type not handled", lbl,
                                schema->name, f->name);
            }
            break;
        }
        case TIO_FB_TABLE: {
            tio_fb_ref sg;
            if (!tio__fb_table(at, id, &sg)) continue;
            if (f->table != tio__rten_Graph)
                return tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, rt_off(r, at->pos),
                                "%s: %s.%s: nested table type not handled", lbl, schema->name,
                                f->name);
            rc = rt_mem(r, tio__cost_graph(), at->pos, err);
            if (!rc) rc = tio_graph_new_subgraph(g, &sub, err);
            if (rc) return rc;
            rc = rt_graph(r, &sg, sub, depth + 1, err);
            if (rc) return rc;
            a.type = TIO_ATTR_GRAPH;
            a.graph = sub;
            break;
        }
        case TIO_FB_UNION: {
            /* The Scalar union of ConstantOfShapeAttrs.value. */
            unsigned tag = tio__fb_u8(at, id - 1, 0);
            tio_fb_ref st;
            if (tag == 0 || !tio__fb_table(at, id, &st)) continue;
            if (f->un == tio__rten_union_Scalar && tag == RTEN_Scalar_IntScalar) {
                a.type = TIO_ATTR_INT;
                a.i = tio__fb_i32(&st, RTEN_IntScalar_value, 0);
            } else if (f->un == tio__rten_union_Scalar && tag == RTEN_Scalar_FloatScalar) {
                a.type = TIO_ATTR_FLOAT;
                a.f = tio__fb_f32(&st, RTEN_FloatScalar_value, 0);
            } else {
                char why[160];
                snprintf(why, sizeof why, "%s.%s holds union member %u of %s, unknown to tensio",
                         schema->name, f->name, tag, f->un->name);
                rc = rt_mem(r, tio__cost_str(strlen(why)), at->pos, err);
                if (!rc) rc = tio__graph_set_opaque(g, ni, why, err);
                if (rc) return rc;
                rc = tio__warn(r->ctx, RT_FMT, rt_off(r, at->pos), err, "%s: %s", lbl, why);
                if (rc) return rc;
                continue;
            }
            break;
        }
        default: continue;
        }
        char nbuf[80];
        rt_raise(map, f, &a, nbuf, sizeof nbuf);
        rc = rt_mem(r, tio__cost_attr(strlen(a.name), a.label ? strlen(a.label) : 0), at->pos,
                    err);
        if (!rc) rc = tio_graph_add_attr(g, ni, &a, err);
        free(ints);
        free(floats);
        if (rc) return rc;
    }
    /* Fields past the ones this schema knows (a newer writer) would be lost. */
    unsigned slots = tio__fb_slot_count(at), unknown = 0;
    for (unsigned id = schema->nfields; id < slots; id++)
        if (tio__fb_has(at, id)) unknown++;
    if (unknown) {
        char why[160];
        snprintf(why, sizeof why, "%s has %u field%s beyond the %u tensio knows (a newer schema)",
                 schema->name, unknown, unknown == 1 ? "" : "s", schema->nfields);
        rc = rt_mem(r, tio__cost_str(strlen(why)), at->pos, err);
        if (!rc) rc = tio__graph_set_opaque(g, ni, why, err);
        if (rc) return rc;
        rc = tio__warn(r->ctx, RT_FMT, rt_off(r, at->pos), err, "%s: %s", lbl, why);
        if (rc) return rc;
    }
    return TIO_OK;
}

/* Node indices of a [uint]/[int] vector -> value indices. */
static int rt_map_ids(rt_reader *r, const tio_fb_vec *v, bool is_signed, const int64_t *map,
                      size_t n, const char *what, int64_t **out, tio_error *err) {
    int64_t *ids = malloc((v->count ? v->count : 1) * sizeof *ids);
    if (!ids) return tio__nomem(err, RT_FMT);
    for (uint32_t k = 0; k < v->count; k++) {
        int64_t x = is_signed ? (int64_t)tio__fb_vec_i32(v, k) : (int64_t)tio__fb_vec_u32(v, k);
        if (is_signed && x == -1) {
            ids[k] = -1;
            continue;
        }
        int rc = TIO_OK;
        if (x < 0 || (uint64_t)x >= n)
            rc = tio__err(err, TIO_E_CORRUPT, RT_FMT, rt_off(r, v->data + 4u * k),
                          "%s[%u] refers to node %lld, but the graph has %zu nodes", what, k,
                          (long long)x, n);
        else if (map[x] < 0)
            rc = tio__err(err, TIO_E_CORRUPT, RT_FMT, rt_off(r, v->data + 4u * k),
                          "%s[%u] refers to node %lld, which is an operator, not a value",
                          what, k, (long long)x);
        if (rc) {
            free(ids);
            return rc;
        }
        ids[k] = map[x];
    }
    *out = ids;
    return TIO_OK;
}

/* One OperatorNode. */
static int rt_operator(rt_reader *r, const tio_fb_ref *ot, tio_graph *g, const char *name,
                       const int64_t *map, size_t n, const char *lbl, unsigned depth,
                       tio_error *err) {
    unsigned type = tio__fb_u8(ot, RTEN_OperatorNode_type, 0);
    unsigned tag = tio__fb_u8(ot, RTEN_OperatorNode_attrs_type, 0);
    char opbuf[32];
    tio_node_info ni;
    memset(&ni, 0, sizeof ni);
    ni.name = name;
    if (type < TIO_RTEN_OP_COUNT) {
        ni.op = tio__rten_ops[type].name;
    } else {
        snprintf(opbuf, sizeof opbuf, "OperatorType%u", type);
        ni.op = opbuf;
    }
    ni.native_id = type;
    int64_t *ins = NULL, *outs = NULL;
    tio_fb_vec v;
    char what[128];
    int rc = TIO_OK;
    if (tio__fb_vector(ot, RTEN_OperatorNode_inputs, &v)) {
        rt_what(what, lbl, ": inputs");
        /* the ids here, and the graph's copy */
        rc = rt_count(r, v.count, ot->pos, err);
        if (!rc) rc = rt_mem(r, 2 * tio__cost_i64s(v.count), ot->pos, err);
        if (!rc) rc = rt_map_ids(r, &v, true, map, n, what, &ins, err);
        if (rc) goto out;
        ni.input_count = v.count;
        ni.inputs = ins;
    }
    if (tio__fb_vector(ot, RTEN_OperatorNode_outputs, &v)) {
        rt_what(what, lbl, ": outputs");
        rc = rt_count(r, v.count, ot->pos, err);
        if (!rc) rc = rt_mem(r, 2 * tio__cost_i64s(v.count), ot->pos, err);
        if (!rc) rc = rt_map_ids(r, &v, true, map, n, what, &outs, err);
        if (rc) goto out;
        ni.output_count = v.count;
        ni.outputs = outs;
    }
    size_t idx;
    rc = rt_mem(r, tio__cost_node(strlen(ni.op)), ot->pos, err);
    if (!rc) rc = tio_graph_add_node(g, &ni, &idx, err);
    if (rc) goto out;
    if (type >= TIO_RTEN_OP_COUNT) {
        rc = tio__warn(r->ctx, RT_FMT, rt_off(r, ot->pos), err,
                       "%s: operator type %u is unknown to tensio (expected 0..%d; a newer "
                       "schema?); it is kept by number",
                       lbl, type, TIO_RTEN_OP_COUNT - 1);
        if (rc) goto out;
    }
    const tio_rten_op *op = type < TIO_RTEN_OP_COUNT ? &tio__rten_ops[type] : NULL;
    tio_fb_ref at;
    bool has_attrs = tag != 0 && tio__fb_table(ot, RTEN_OperatorNode_attrs, &at);
    if (!has_attrs) {
        if (op && op->attrs && !op->optional) {
            const tio_fb_table *want = tio__rten_union_OperatorAttrs->members[op->attrs - 1];
            rc = tio__warn(r->ctx, RT_FMT, rt_off(r, ot->pos), err,
                           "%s: %s needs a %s table and has none (rten refuses such a model: "
                           "AttrsMissingError)",
                           lbl, op->name, want->name);
        }
        goto out;
    }
    g->nodes[idx].native_attrs = tag;
    if (tag > tio__rten_union_OperatorAttrs->nmembers) {
        char why[128];
        snprintf(why, sizeof why, "attrs table type %u is unknown to tensio (expected 1..%u; a "
                 "newer schema?)", tag, tio__rten_union_OperatorAttrs->nmembers);
        rc = rt_mem(r, tio__cost_str(strlen(why)), ot->pos, err);
        if (!rc) rc = tio__graph_set_opaque(g, idx, why, err);
        if (!rc) rc = tio__warn(r->ctx, RT_FMT, rt_off(r, ot->pos), err, "%s: %s", lbl, why);
        goto out;
    }
    const tio_fb_table *schema = tio__rten_union_OperatorAttrs->members[tag - 1];
    if (op && op->attrs != tag) {
        rc = tio__warn(r->ctx, RT_FMT, rt_off(r, ot->pos), err,
                       "%s: %s carries a %s table, but rten expects %s", lbl, op->name,
                       schema->name,
                       op->attrs ? tio__rten_union_OperatorAttrs->members[op->attrs - 1]->name
                                 : "none");
        if (rc) goto out;
    }
    /* The ONNX names apply when the table is the one rten expects. */
    const tio_rten_opmap *om = op && op->attrs == tag ? &tio__rten_opmap[type] : NULL;
    rc = rt_attrs(r, &at, schema, om, g, idx, lbl, depth, err);
out:
    free(ins);
    free(outs);
    return rc;
}

static int rt_graph(rt_reader *r, const tio_fb_ref *gt, tio_graph *g, unsigned depth,
                    tio_error *err) {
    tio_read_ctx *ctx = r->ctx;
    if (depth > ctx->limits.max_depth)
        return tio__err(err, TIO_E_LIMIT, RT_FMT, rt_off(r, gt->pos),
                        "subgraphs nest deeper than the limit of %u", ctx->limits.max_depth);
    tio_fb_vec nv;
    size_t n = 0;
    if (tio__fb_vector(gt, RTEN_Graph_nodes, &nv)) n = nv.count;
    /* value slots (reserved for every node) and the node -> value map */
    int rc = rt_count(r, n, gt->pos, err);
    if (!rc) rc = rt_mem(r, n * (tio__cost_value() + 8) + tio__cost_block(8), gt->pos, err);
    if (!rc) rc = rt_unknown_fields(r, gt, tio__rten_Graph, g, "Graph", err);
    if (rc) return rc;
    int64_t *map = malloc((n ? n : 1) * sizeof *map);
    if (!map) return tio__nomem(err, RT_FMT);
    rc = tio__graph_reserve(g, n, 0, err);
    /* Pass 1: constants and values get value indices, in file order. */
    for (size_t i = 0; rc == TIO_OK && i < n; i++) {
        tio_fb_ref nt, dt;
        map[i] = -1;
        if (!tio__fb_vec_table(&nv, i, &nt)) {
            rc = tio__err(err, TIO_E_CORRUPT, RT_FMT, rt_off(r, nv.data + 4 * i),
                          "node %zu is not a table", i);
            break;
        }
        const char *name = NULL;
        char lbl[96];
        rt_label(lbl, i, NULL);
        unsigned kind = tio__fb_u8(&nt, RTEN_Node_data_type, 0);
        /* an operator's name is copied in pass 2 */
        rc = rt_string(r, &nt, RTEN_Node_name, lbl, kind != RTEN_NodeKind_OperatorNode, &name,
                       err);
        if (rc) break;
        rt_label(lbl, i, name);
        if (kind == 0 || !tio__fb_table(&nt, RTEN_Node_data, &dt)) {
            rc = tio__err(err, TIO_E_CORRUPT, RT_FMT, rt_off(r, nt.pos),
                          "%s: the node has no data (expected an OperatorNode, ConstantNode or "
                          "ValueNode)",
                          lbl);
            break;
        }
        static const tio_fb_table *const *const kinds[] = {
            NULL, &tio__rten_OperatorNode, &tio__rten_ConstantNode, &tio__rten_ValueNode};
        rc = rt_unknown_fields(r, &nt, tio__rten_Node, g, lbl, err);
        if (!rc && kind < 4) rc = rt_unknown_fields(r, &dt, *kinds[kind], g, lbl, err);
        if (rc) break;
        tio_value_info vi;
        memset(&vi, 0, sizeof vi);
        vi.name = name;
        vi.tensor = -1;
        tio_dim *dims = NULL;
        size_t vidx;
        if (kind == RTEN_NodeKind_ConstantNode) {
            rc = rt_constant(r, &dt, name, lbl, &vi.tensor, err);
            if (rc == TIO_OK) rc = tio_graph_add_value(g, &vi, &vidx, err);
        } else if (kind == RTEN_NodeKind_ValueNode) {
            rc = rt_value(r, &dt, g, &vi, &dims, lbl, err);
            if (rc == TIO_OK) rc = tio_graph_add_value(g, &vi, &vidx, err);
            free(dims);
        } else if (kind == RTEN_NodeKind_OperatorNode) {
            continue;
        } else {
            rc = tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, rt_off(r, nt.pos),
                          "%s: NodeKind %u is unknown to tensio (expected 1..3; a newer "
                          "schema?)",
                          lbl, kind);
        }
        if (rc == TIO_OK) map[i] = (int64_t)vidx;
    }
    /* Pass 2: operators, whose inputs and outputs refer to any node index. */
    for (size_t i = 0; rc == TIO_OK && i < n; i++) {
        tio_fb_ref nt, dt;
        if (map[i] >= 0) continue;
        tio__fb_vec_table(&nv, i, &nt);
        tio__fb_table(&nt, RTEN_Node_data, &dt);
        const char *name = NULL;
        char lbl[96];
        rc = rt_string(r, &nt, RTEN_Node_name, "node", true, &name, err);
        if (rc) break;
        rt_label(lbl, i, name);
        rc = rt_operator(r, &dt, g, name, map, n, lbl, depth, err);
    }
    /* Graph inputs, outputs and captures. */
    static const struct {
        unsigned id;
        const char *what;
    } lists[] = {{RTEN_Graph_inputs, "Graph.inputs"},
                 {RTEN_Graph_outputs, "Graph.outputs"},
                 {RTEN_Graph_captures, "Graph.captures"}};
    for (size_t k = 0; rc == TIO_OK && k < 3; k++) {
        tio_fb_vec lv;
        if (!tio__fb_vector(gt, lists[k].id, &lv)) continue;
        int64_t *ids = NULL;
        rc = rt_count(r, lv.count, gt->pos, err);
        if (!rc) rc = rt_mem(r, 2 * tio__cost_i64s(lv.count), gt->pos, err);
        if (!rc) rc = rt_map_ids(r, &lv, false, map, n, lists[k].what, &ids, err);
        if (rc) break;
        if (k == 0) rc = tio_graph_set_inputs(g, ids, lv.count, err);
        else if (k == 1) rc = tio_graph_set_outputs(g, ids, lv.count, err);
        else rc = tio_graph_set_captures(g, ids, lv.count, err);
        free(ids);
    }
    free(map);
    if (rc) return rc;

    /* Topological order: no operator reads a value a later operator produces. */
    size_t nvals = g->value_count;
    rc = rt_mem(r, tio__cost_i64s(nvals), gt->pos, err);
    if (rc) return rc;
    int64_t *producer = malloc((nvals ? nvals : 1) * sizeof *producer);
    if (!producer) return tio__nomem(err, RT_FMT);
    for (size_t i = 0; i < nvals; i++) producer[i] = -1;
    for (size_t j = 0; j < g->node_count; j++)
        for (size_t k = 0; k < g->nodes[j].output_count; k++) {
            int64_t v = g->nodes[j].outputs[k];
            if (v >= 0 && producer[v] < 0) producer[v] = (int64_t)j;
        }
    for (size_t j = 0; rc == TIO_OK && j < g->node_count; j++)
        for (size_t k = 0; k < g->nodes[j].input_count; k++) {
            int64_t v = g->nodes[j].inputs[k];
            if (v >= 0 && producer[v] > (int64_t)j) {
                const char *vn = g->values[v].name;
                rc = tio__warn(ctx, RT_FMT, rt_off(r, gt->pos), err,
                               "operator %zu ('%s') reads value '%s', which a later operator "
                               "produces: the nodes are not in topological order",
                               j, g->nodes[j].name ? g->nodes[j].name : "", vn ? vn : "");
                break;
            }
        }
    free(producer);
    return rc;
}

static int rt_prop_u64(tio_container *c, const char *key, uint64_t v, tio_error *err) {
    char buf[24];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    return tio__kv_set(&c->props, key, buf, err);
}

int tio__rten_read(tio_read_ctx *ctx, tio_error *err) {
    rt_reader r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    const uint8_t *d = ctx->data;
    size_t size = ctx->size;
    int rc;
    if (size >= 4 && memcmp(d, tio__rten_magic, 4) == 0) {
        /* V2 header, checked in the order rten's Header::from_buf reads it:
         * magic, version, then the offsets. */
        if (size < 8)
            return tio__err(err, TIO_E_TRUNCATED, RT_FMT, 4,
                            "the V2 header needs 32 bytes, the file has %zu", size);
        uint32_t version = tio__ld32(d + 4);
        if (version != RT_VERSION)
            return tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, 4,
                            "format version %u is not supported (expected 2; V1 files have no "
                            "header)",
                            version);
        if (size < RT_HEADER_LEN)
            return tio__err(err, TIO_E_TRUNCATED, RT_FMT, (int64_t)size,
                            "the V2 header needs 32 bytes, the file has %zu", size);
        uint64_t mo = tio__ld64(d + 8), ml = tio__ld64(d + 16), to = tio__ld64(d + 24);
        if (mo < RT_HEADER_LEN || mo > size)
            return tio__err(err, TIO_E_BOUNDS, RT_FMT, 8,
                            "model_data_offset %llu is outside [32, %zu] (the file size)",
                            (unsigned long long)mo, size);
        uint64_t mend;
        if (tio__add64_ovf(mo, ml, &mend) || mend > size)
            return tio__err(err, TIO_E_BOUNDS, RT_FMT, 16,
                            "model data [%llu, +%llu) extends past the end of the file (%zu "
                            "bytes)",
                            (unsigned long long)mo, (unsigned long long)ml, size);
        if (to < RT_HEADER_LEN || to > size)
            return tio__err(err, TIO_E_BOUNDS, RT_FMT, 24,
                            "tensor_data_offset %llu is outside [32, %zu] (the file size)",
                            (unsigned long long)to, size);
        if (ml > ctx->limits.max_header_bytes)
            return tio__err(err, TIO_E_LIMIT, RT_FMT, 16,
                            "model_data_len %llu exceeds the limit of %llu bytes (max_header_bytes)",
                            (unsigned long long)ml,
                            (unsigned long long)ctx->limits.max_header_bytes);
        r.version = 2;
        r.buf = d + mo;
        r.len = (size_t)ml;
        r.base = mo;
        r.tensor_data_offset = to;
        rc = rt_prop_u64(ctx->c, "version", 2, err);
        if (!rc) rc = rt_prop_u64(ctx->c, "model_data_offset", mo, err);
        if (!rc) rc = rt_prop_u64(ctx->c, "model_data_len", ml, err);
        if (!rc) rc = rt_prop_u64(ctx->c, "tensor_data_offset", to, err);
        if (rc) return rc;
        if (ml > 0 && to < mend && to < size) {
            rc = tio__warn(ctx, RT_FMT, 24, err,
                           "tensor data at %llu starts inside the model data [%llu, %llu)",
                           (unsigned long long)to, (unsigned long long)mo,
                           (unsigned long long)mend);
            if (rc) return rc;
        }
    } else {
        if (size < 4)
            return tio__err(err, TIO_E_TRUNCATED, RT_FMT, 0,
                            "%zu bytes: too short for a V1 model (a FlatBuffers root offset "
                            "needs 4)",
                            size);
        /* No max_header_bytes here: a V1 buffer holds every weight inline (up to
         * FlatBuffers' 2 GiB); the work is bounded by the table budget instead. */
        r.version = 1;
        r.buf = d;
        r.len = size;
        r.base = 0;
        rc = rt_prop_u64(ctx->c, "version", 1, err);
        if (rc) return rc;
    }
    tio_fb_limits lim = {0};
    lim.max_depth = ctx->limits.max_depth;
    lim.max_tables = r.len / 4 + 16;
    if (lim.max_tables > ctx->limits.max_objects) lim.max_tables = ctx->limits.max_objects;
    lim.max_slots = 0; /* 2 per byte + 4096: bounds rt_unknown_fields' scans */
    lim.head = NULL;
    lim.blobs = NULL;
    r.max_objects = r.len / 4 + 4096;
    if (r.max_objects > ctx->limits.max_objects) r.max_objects = ctx->limits.max_objects;
    tio__budget_init(&r.mem, RT_FMT, size, TIO_DECODE_MEM_FACTOR, TIO_BUDGET_SHARED,
                     &ctx->limits);
    rc = tio__fb_verify(r.buf, r.len, tio__rten_Model, &lim, RT_FMT, r.base, err);
    if (rc) return rc;

    tio_fb_ref model, gt, mt;
    if (!tio__fb_root(r.buf, r.len, &model) || !tio__fb_table(&model, RTEN_Model_graph, &gt))
        return tio__err(err, TIO_E_CORRUPT, RT_FMT, (int64_t)r.base, "the model has no graph");
    int32_t sv = tio__fb_i32(&model, RTEN_Model_schema_version, 0);
    rc = rt_prop_u64(ctx->c, "schema_version", (uint64_t)(uint32_t)sv, err);
    if (rc) return rc;
    if (sv != RT_SCHEMA_VERSION)
        return tio__err(err, TIO_E_UNSUPPORTED, RT_FMT,
                        rt_off(&r, tio__fb_field_pos(&model, RTEN_Model_schema_version)),
                        "schema_version %d is not supported (expected 1, as rten requires)",
                        sv);
    tio_graph *g = NULL;
    rc = tio_container_new_graph(ctx->c, &g, err);
    if (!rc) rc = tio_graph_set_native_format(g, RT_FMT, err);
    if (!rc) rc = rt_unknown_fields(&r, &model, tio__rten_Model, g, "Model", err);
    if (!rc) rc = rt_graph(&r, &gt, g, 1, err);
    if (rc) return rc;
    if (tio__fb_table(&model, RTEN_Model_metadata, &mt)) {
        rc = rt_unknown_fields(&r, &mt, tio__rten_Metadata, g, "Metadata", err);
        if (rc) return rc;
        for (unsigned k = 0; k < RT_META_COUNT; k++) {
            const char *s = NULL;
            rc = rt_string(&r, &mt, k, "Metadata", true, &s, err);
            if (!rc && s) rc = tio_graph_meta_set(g, tio__rten_meta_keys[k], s, err);
            if (rc) return rc;
        }
    }
    return TIO_OK;
}

