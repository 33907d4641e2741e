/*
 * RTen (.rten): the rten engine's model format.
 *
 * V2: a 32-byte header (magic "RTEN", u32 version 2, u64 model_data_offset,
 * u64 model_data_len, u64 tensor_data_offset), a FlatBuffers `Model` (no size
 * prefix, no file identifier), then tensor data that external constants
 * reference relative to tensor_data_offset. V1: the whole file is the
 * FlatBuffers `Model` with every constant inline.
 *
 * Read: the buffer is verified against the schema before anything is read;
 * constants become tensors of the container (views into the source), the
 * nodes become the container's graph. Write: V2 by default (model data at 32,
 * tensor data and every external constant 64-byte aligned, constants of at
 * most 16 elements inline, as rten-convert does), V1 on request.
 * See docs/formats/rten.md and ../shared/specs/notes-rten.md.
 */
#include "core/internal.h"
#include "flatbuf/flatbuf.h"
#include "graph/budget.h"
#include "graph/graph.h"
#include "rten/schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RT_FMT "rten"
#define RT_HEADER_LEN 32u
#define RT_VERSION 2u
#define RT_SCHEMA_VERSION 1
#define RT_INLINE_MAX 16u /* rten-convert: constants with <= 16 elements stay inline */
#define RT_ALIGN 64u

static const uint8_t rt_magic[4] = {'R', 'T', 'E', 'N'};

/* Model metadata fields, in schema order (Metadata table field ids). */
static const char *const rt_meta_keys[] = {"onnx_hash",       "description",      "license",
                                           "commit",          "code_repository",
                                           "model_repository", "run_id",           "run_url"};
#define RT_META_COUNT (sizeof rt_meta_keys / sizeof rt_meta_keys[0])

/* ConstantDataType (ushort) and DataType (ubyte) use different orders. */
static tio_dtype rt_const_dtype(unsigned code) {
    switch (code) {
    case RTEN_ConstantDataType_Int32: return TIO_INT32;
    case RTEN_ConstantDataType_Float32: return TIO_FLOAT32;
    case RTEN_ConstantDataType_Int8: return TIO_INT8;
    case RTEN_ConstantDataType_UInt8: return TIO_UINT8;
    default: return TIO_DTYPE_INVALID;
    }
}
static int rt_const_code(tio_dtype d) {
    switch (d) {
    case TIO_INT32: return RTEN_ConstantDataType_Int32;
    case TIO_FLOAT32: return RTEN_ConstantDataType_Float32;
    case TIO_INT8: return RTEN_ConstantDataType_Int8;
    case TIO_UINT8: return RTEN_ConstantDataType_UInt8;
    default: return -1;
    }
}
static tio_dtype rt_value_dtype(unsigned code) {
    switch (code) {
    case RTEN_DataType_Int32: return TIO_INT32;
    case RTEN_DataType_Float: return TIO_FLOAT32;
    case RTEN_DataType_Int8: return TIO_INT8;
    case RTEN_DataType_UInt8: return TIO_UINT8;
    default: return TIO_DTYPE_INVALID;
    }
}
/* The DataType a value of dtype d is declared with: rten-convert's mapping
 * of ONNX value types (BOOL, INT32, INT64 -> Int32; other floats -> Float). */
static int rt_value_code(tio_dtype d) {
    switch (d) {
    case TIO_FLOAT32:
    case TIO_FLOAT16:
    case TIO_BFLOAT16:
    case TIO_FLOAT64: return RTEN_DataType_Float;
    case TIO_INT8: return RTEN_DataType_Int8;
    case TIO_UINT8: return RTEN_DataType_UInt8;
    case TIO_BOOL:
    case TIO_INT16:
    case TIO_UINT16:
    case TIO_INT32:
    case TIO_UINT32:
    case TIO_INT64:
    case TIO_UINT64: return RTEN_DataType_Int32;
    default: return -1;
    }
}
/* ConstantData union member for a dtype, and back. */
static int rt_data_tag(tio_dtype d) {
    switch (d) {
    case TIO_FLOAT32: return RTEN_ConstantData_FloatData;
    case TIO_INT32: return RTEN_ConstantData_Int32Data;
    case TIO_INT8: return RTEN_ConstantData_Int8Data;
    case TIO_UINT8: return RTEN_ConstantData_UInt8Data;
    default: return 0;
    }
}
static tio_dtype rt_tag_dtype(unsigned tag) {
    switch (tag) {
    case RTEN_ConstantData_FloatData: return TIO_FLOAT32;
    case RTEN_ConstantData_Int32Data: return TIO_INT32;
    case RTEN_ConstantData_Int8Data: return TIO_INT8;
    case RTEN_ConstantData_UInt8Data: return TIO_UINT8;
    default: return TIO_DTYPE_INVALID;
    }
}

/* ---------------------------------------------------------------- probe */

static int rt_probe(const uint8_t *d, size_t n) {
    if (n >= 4 && memcmp(d, rt_magic, 4) == 0) return 95;
    /* V1 has no magic: a plausible FlatBuffers root table whose vtable has a
     * `graph` slot pointing inside the buffer. */
    if (n < 24) return 0;
    uint32_t root = tio__ld32(d);
    if (root % 4 || root < 4 || (uint64_t)root + 8 > n) return 0;
    int64_t vt = (int64_t)root - (int32_t)tio__ld32(d + root);
    if (vt < 4 || vt % 2 || (uint64_t)vt + 8 > n) return 0;
    uint16_t vts = tio__ld16(d + vt), objs = tio__ld16(d + vt + 2);
    if (vts < 8 || vts % 2 || (uint64_t)vt + vts > n || objs < 8) return 0;
    uint16_t gslot = tio__ld16(d + vt + 4 + 2 * RTEN_Model_graph);
    if (gslot < 4 || gslot + 4u > objs || (uint64_t)root + gslot + 4 > n) return 0;
    uint64_t g = (uint64_t)root + gslot + tio__ld32(d + root + gslot);
    if (g + 4 > n || g % 4) return 0;
    return 35;
}

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
    if (tio__add64_ovf(r->objects, n, &r->objects) || r->objects > r->max_objects)
        return tio__err(err, TIO_E_LIMIT, RT_FMT, rt_off(r, pos),
                        "the model has more graph objects (nodes, dims, attributes, operator "
                        "inputs and outputs) than the limit of %llu (tio_limits.max_objects, "
                        "and one per 4 bytes of model data + 4096)",
                        (unsigned long long)r->max_objects);
    return TIO_OK;
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
                        "%s: string of %u bytes exceeds the limit of %u", what, n,
                        r->ctx->limits.max_name_bytes);
    if (memchr(*s, 0, n))
        return tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, rt_off(r, pos),
                        "%s: the string contains a NUL byte (tensio keeps strings as C "
                        "strings)",
                        what);
    return copied ? rt_mem(r, tio__cost_str(n), pos, err) : TIO_OK;
}

static void rt_label(char *buf, size_t cap, size_t index, const char *name) {
    if (name)
        snprintf(buf, cap, "node %zu ('%.48s%s')", index, name, strlen(name) > 48 ? "..." : "");
    else
        snprintf(buf, cap, "node %zu", index);
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
                        "%s: rank %u exceeds the limit of %u", lbl, sv.count,
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
        desc.dtype = rt_const_dtype(dcode);
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
        desc.dtype = rt_tag_dtype(tag);
        if (desc.dtype == TIO_DTYPE_INVALID) {
            rc = tio__err(err, TIO_E_UNSUPPORTED, RT_FMT,
                          rt_off(r, tio__fb_field_pos(ct, RTEN_ConstantNode_data_type)),
                          "%s: ConstantData type %u is unknown (expected 1..4: FloatData, "
                          "Int32Data, Int8Data, UInt8Data; a newer schema?)",
                          lbl, tag);
            goto out;
        }
        if (has_dtype && rt_const_dtype(dcode) != desc.dtype) {
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
        v->dtype = rt_value_dtype(code);
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
                        "%s: rank %u exceeds the limit of %u", lbl, sv.count,
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

/* Decodes one attrs table into attributes of node `ni`, generically from the
 * schema: scalars -> INT/FLOAT (schema defaults applied), vectors -> INTS /
 * FLOATS / STRINGS, strings -> STRING, Graph tables -> GRAPH (subgraph), the
 * Scalar union -> INT or FLOAT. */
static int rt_attrs(rt_reader *r, const tio_fb_ref *at, const tio_fb_table *schema,
                    tio_graph *g, size_t ni, const char *lbl, unsigned depth, tio_error *err) {
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
        snprintf(what, sizeof what, "%.96s: inputs", lbl);
        /* the ids here, and the graph's copy */
        rc = rt_count(r, v.count, ot->pos, err);
        if (!rc) rc = rt_mem(r, 2 * tio__cost_i64s(v.count), ot->pos, err);
        if (!rc) rc = rt_map_ids(r, &v, true, map, n, what, &ins, err);
        if (rc) goto out;
        ni.input_count = v.count;
        ni.inputs = ins;
    }
    if (tio__fb_vector(ot, RTEN_OperatorNode_outputs, &v)) {
        snprintf(what, sizeof what, "%.96s: outputs", lbl);
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
    rc = rt_attrs(r, &at, schema, g, idx, lbl, depth, err);
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
        rt_label(lbl, sizeof lbl, i, NULL);
        unsigned kind = tio__fb_u8(&nt, RTEN_Node_data_type, 0);
        /* an operator's name is copied in pass 2 */
        rc = rt_string(r, &nt, RTEN_Node_name, lbl, kind != RTEN_NodeKind_OperatorNode, &name,
                       err);
        if (rc) break;
        rt_label(lbl, sizeof lbl, i, name);
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
        rt_label(lbl, sizeof lbl, i, name);
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

static int rt_read(tio_read_ctx *ctx, tio_error *err) {
    rt_reader r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    const uint8_t *d = ctx->data;
    size_t size = ctx->size;
    int rc;
    if (size >= 4 && memcmp(d, rt_magic, 4) == 0) {
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
                            "model_data_len %llu exceeds the limit of %llu bytes",
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
    tio_fb_limits lim;
    lim.max_depth = ctx->limits.max_depth;
    lim.max_tables = r.len / 4 + 16;
    if (lim.max_tables > ctx->limits.max_objects) lim.max_tables = ctx->limits.max_objects;
    lim.max_slots = 0; /* 2 per byte + 4096: bounds rt_unknown_fields' scans */
    r.max_objects = r.len / 4 + 4096;
    if (r.max_objects > ctx->limits.max_objects) r.max_objects = ctx->limits.max_objects;
    tio__budget_init(&r.mem, RT_FMT, size, &ctx->limits);
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
            if (!rc && s) rc = tio_graph_meta_set(g, rt_meta_keys[k], s, err);
            if (rc) return rc;
        }
    }
    return TIO_OK;
}

/* ---------------------------------------------------------------- write */

typedef struct rt_writer {
    tio_write_plan *plan;
    const tio_container *c;
    tio_fb_builder *b;
    unsigned version;
    /* per container tensor: external data offset (relative to tensor data),
     * or UINT64_MAX when inline / not yet placed */
    uint64_t *ext;
    size_t *order;    /* tensors with external data, in placement (= offset) order */
    size_t norder;
    uint64_t ext_end; /* bytes of tensor data */
} rt_writer;

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
    if (g->native_format && strcmp(g->native_format, RT_FMT) == 0 && n->native_id >= 0 &&
        n->native_id <= 255) {
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
    bool native = g->native_format && strcmp(g->native_format, RT_FMT) == 0;
    if (native && n->native_attrs > 0 && n->native_attrs <= 255) return (unsigned)n->native_attrs;
    if (native && n->native_attrs < 0 && n->attr_count == 0) return 0;
    if (code >= TIO_RTEN_OP_COUNT) return 0;
    const tio_rten_op *op = &tio__rten_ops[code];
    if (op->optional && n->attr_count == 0) return 0;
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

static bool rt_int_fits(int kind, int64_t v) {
    switch (kind) {
    case TIO_FB_BOOL: return v == 0 || v == 1;
    case TIO_FB_I8: return v >= INT8_MIN && v <= INT8_MAX;
    case TIO_FB_U8: return v >= 0 && v <= UINT8_MAX;
    case TIO_FB_I16: return v >= INT16_MIN && v <= INT16_MAX;
    case TIO_FB_U16: return v >= 0 && v <= UINT16_MAX;
    case TIO_FB_I32: return v >= INT32_MIN && v <= INT32_MAX;
    case TIO_FB_U32: return v >= 0 && v <= (int64_t)UINT32_MAX;
    case TIO_FB_I64:
    case TIO_FB_U64: return true;
    default: return false;
    }
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
            ok = (a->type == TIO_ATTR_INT && rt_int_fits(TIO_FB_I32, a->i)) ||
                 a->type == TIO_ATTR_FLOAT;
            break;
        case TIO_FB_VECTOR:
            if (f->elem == TIO_FB_F32) {
                ok = a->type == TIO_ATTR_FLOATS;
            } else if (tio__fb_scalar_size(f->elem) && f->elem != TIO_FB_F64) {
                ok = a->type == TIO_ATTR_INTS;
                for (size_t m = 0; ok && m < a->count; m++)
                    if (!rt_int_fits(f->elem, a->ints[m]))
                        return tio__err(err, TIO_E_LOSSY, RT_FMT, -1,
                                        "%s: attribute '%s'[%zu] = %lld does not fit rten's "
                                        "[%s]",
                                        lbl, a->name, m, (long long)a->ints[m],
                                        rt_kind_name(f->elem));
            }
            break;
        default:
            ok = a->type == TIO_ATTR_INT;
            if (ok && !rt_int_fits(f->kind, a->i))
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

static int rt_check_graph(rt_writer *w, const tio_graph *g, uint8_t *used, tio_error *err) {
    if (g->opaque)
        return tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                        "the model cannot be re-encoded: %s (convert the weights to a tensor "
                        "format instead)",
                        g->opaque);
    for (size_t i = 0; i < g->value_count; i++) {
        const tio_gvalue *v = &g->values[i];
        if (v->tensor >= 0) {
            used[v->tensor] = 1;
            const tio_tensor *t = w->c->tensors[v->tensor];
            for (size_t d = 0; d < t->rank; d++)
                if (t->shape[d] > (int64_t)UINT32_MAX)
                    return tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                                    "constant %zu ('%s'): dim %zu = %lld exceeds rten's uint "
                                    "dims",
                                    i, v->name ? v->name : "", d, (long long)t->shape[d]);
        } else {
            for (int64_t d = 0; d < v->rank; d++)
                if (v->dims[d].value > (int64_t)UINT32_MAX)
                    return tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                                    "value %zu ('%s'): dim %lld = %lld exceeds rten's uint dims",
                                    i, v->name ? v->name : "", (long long)d,
                                    (long long)v->dims[d].value);
        }
    }
    for (size_t j = 0; j < g->node_count; j++) {
        const tio_gnode *n = &g->nodes[j];
        char lbl[128];
        rt_node_label(n, j, lbl, sizeof lbl);
        if (n->opaque)
            return tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                            "%s: cannot be re-encoded: %s (convert the weights to a tensor "
                            "format instead)",
                            lbl, n->opaque);
        unsigned code = 0;
        int rc = rt_op_code(g, n, lbl, &code, err);
        if (rc) return rc;
        unsigned tag = rt_attrs_tag(g, n, code);
        if (tag > tio__rten_union_OperatorAttrs->nmembers)
            return tio__err(err, TIO_E_UNSUPPORTED, RT_FMT, -1,
                            "%s: attrs table type %u is unknown to tensio", lbl, tag);
        const tio_fb_table *t = tag ? tio__rten_union_OperatorAttrs->members[tag - 1] : NULL;
        rc = rt_check_attrs(n, t, lbl, err);
        if (rc) return rc;
        for (size_t k = 0; k < n->attr_count; k++)
            if (n->attrs[k].type == TIO_ATTR_GRAPH) {
                rc = rt_check_graph(w, n->attrs[k].graph, used, err);
                if (rc) return rc;
            }
    }
    return TIO_OK;
}

static int rt_check(const tio_write_plan *p, tio_error *err) {
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
    int rc = rt_check_graph(&w, c->graph, used, err);
    for (size_t i = 0; rc == TIO_OK && i < c->count; i++) {
        if (!used[i])
            rc = tio__err(err, TIO_E_LOSSY, RT_FMT, -1,
                          "tensor %zu%s%s%s is not a constant of the graph; rten stores only "
                          "the model's constants",
                          i, c->tensors[i]->name ? " ('" : "",
                          c->tensors[i]->name ? c->tensors[i]->name : "",
                          c->tensors[i]->name ? "')" : "");
        else if (rt_const_code(tio__plan_tensor(p, i)->dtype) < 0)
            rc = tio__err(err, TIO_E_LOSSY, RT_FMT, -1, "tensor %zu: dtype %s is not an rten "
                          "constant type", i, tio_dtype_name(tio__plan_tensor(p, i)->dtype));
    }
    free(used);
    if (rc) return rc;
    const tio_kv *meta = &c->graph->meta;
    for (size_t k = 0; k < meta->count; k++) {
        bool known = false;
        for (size_t m = 0; m < RT_META_COUNT; m++)
            if (strcmp(meta->keys[k], rt_meta_keys[m]) == 0) known = true;
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

static int rt_build_operator(rt_writer *w, const tio_graph *g, size_t j, tio_fb_off *out,
                             tio_error *err) {
    const tio_gnode *n = &g->nodes[j];
    char lbl[128];
    rt_node_label(n, j, lbl, sizeof lbl);
    unsigned code = 0;
    int rc = rt_op_code(g, n, lbl, &code, err);
    if (rc) return rc;
    unsigned tag = rt_attrs_tag(g, n, code);
    tio_fb_off attrs = 0, ins = 0, outs = 0;
    if (tag) {
        rc = rt_build_attrs(w, n, tio__rten_union_OperatorAttrs->members[tag - 1], &attrs, err);
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

static int rt_build_constant(rt_writer *w, const tio_gvalue *v, tio_fb_off *out,
                             tio_error *err) {
    size_t ti = (size_t)v->tensor;
    const tio_wtensor *wt = tio__plan_tensor(w->plan, ti);
    uint32_t small[16];
    uint32_t *shape = small;
    if (wt->rank > 16) {
        shape = malloc(wt->rank * sizeof *shape);
        if (!shape) return tio__nomem(err, RT_FMT);
    }
    for (size_t d = 0; d < wt->rank; d++) shape[d] = (uint32_t)wt->shape[d];
    tio_fb_off sref = 0, dref = 0;
    int rc = tio__fb_create_vector(w->b, shape, wt->rank, 4, 4, &sref, err);
    if (shape != small) free(shape);
    if (rc) return rc;
    bool external = w->version == 2 && wt->numel > RT_INLINE_MAX;
    int tag = rt_data_tag(wt->dtype);
    if (!external) {
        const uint8_t *data = NULL;
        rc = tio__plan_data(w->plan, ti, &data, NULL, err);
        if (rc) return rc;
        size_t esz = tio_dtype_size(wt->dtype);
        tio_fb_off vref;
        rc = tio__fb_create_vector(w->b, data, (size_t)wt->numel, esz, esz, &vref, err);
        if (!rc) rc = tio__fb_start_table(w->b, err);
        if (!rc) rc = tio__fb_add_offset(w->b, RTEN_FloatData_data, vref, err);
        if (!rc) rc = tio__fb_end_table(w->b, &dref, err);
        if (rc) return rc;
    } else if (w->ext[ti] == UINT64_MAX) {
        uint64_t at;
        if (!tio__align_up(w->ext_end, RT_ALIGN, &at) ||
            tio__add64_ovf(at, wt->nbytes, &w->ext_end))
            return tio__err(err, TIO_E_OVERFLOW, RT_FMT, -1, "tensor data size overflows");
        w->ext[ti] = at;
        w->order[w->norder++] = ti;
    }
    rc = tio__fb_start_table(w->b, err);
    if (!rc && external)
        rc = tio__fb_add_scalar(w->b, RTEN_ConstantNode_data_offset, w->ext[ti], 8, err);
    if (!rc) rc = tio__fb_add_offset(w->b, RTEN_ConstantNode_shape, sref, err);
    if (!rc && !external) rc = tio__fb_add_offset(w->b, RTEN_ConstantNode_data, dref, err);
    if (!rc)
        rc = tio__fb_add_scalar(w->b, RTEN_ConstantNode_dtype,
                                (uint64_t)rt_const_code(wt->dtype), 2, err);
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
    int code = rt_value_code(v->dtype);
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
    size_t nv = g->value_count, total = nv + g->node_count;
    tio_fb_off *nodes = malloc((total ? total : 1) * sizeof *nodes);
    if (!nodes) return tio__nomem(err, RT_FMT);
    int rc = TIO_OK;
    for (size_t i = 0; rc == TIO_OK && i < nv; i++) {
        const tio_gvalue *v = &g->values[i];
        tio_fb_off data;
        if (v->tensor >= 0) {
            rc = rt_build_constant(w, v, &data, err);
            if (!rc) rc = rt_build_node(w, v->name, RTEN_NodeKind_ConstantNode, data, &nodes[i], err);
        } else {
            rc = rt_build_value(w, v, &data, err);
            if (!rc) rc = rt_build_node(w, v->name, RTEN_NodeKind_ValueNode, data, &nodes[i], err);
        }
    }
    for (size_t j = 0; rc == TIO_OK && j < g->node_count; j++) {
        tio_fb_off data;
        rc = rt_build_operator(w, g, j, &data, err);
        if (!rc)
            rc = rt_build_node(w, g->nodes[j].name, RTEN_NodeKind_OperatorNode, data,
                               &nodes[nv + j], err);
    }
    tio_fb_off nref = 0, lists[3] = {0, 0, 0};
    if (!rc) rc = tio__fb_create_offset_vector(w->b, nodes, total, &nref, err);
    free(nodes);
    const int64_t *src[3] = {g->inputs, g->outputs, g->captures};
    size_t cnt[3] = {g->input_count, g->output_count, g->capture_count};
    for (int k = 0; rc == TIO_OK && k < 3; k++) {
        if (k == 2 && cnt[k] == 0) continue; /* captures only when used */
        uint32_t *ids = malloc((cnt[k] ? cnt[k] : 1) * sizeof *ids);
        if (!ids) return tio__nomem(err, RT_FMT);
        for (size_t m = 0; m < cnt[k]; m++) ids[m] = (uint32_t)src[k][m];
        rc = tio__fb_create_vector(w->b, ids, cnt[k], 4, 4, &lists[k], err);
        free(ids);
    }
    if (!rc) rc = tio__fb_start_table(w->b, err);
    if (!rc) rc = tio__fb_add_offset(w->b, RTEN_Graph_nodes, nref, err);
    if (!rc) rc = tio__fb_add_offset(w->b, RTEN_Graph_inputs, lists[0], err);
    if (!rc) rc = tio__fb_add_offset(w->b, RTEN_Graph_outputs, lists[1], err);
    if (!rc) rc = tio__fb_add_offset(w->b, RTEN_Graph_captures, lists[2], err);
    if (!rc) rc = tio__fb_end_table(w->b, out, err);
    return rc;
}

static int rt_write(tio_write_plan *p, tio_sink *s, tio_error *err) {
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
    w.order = malloc((nt ? nt : 1) * sizeof *w.order);
    w.b = tio__fb_builder_new(RT_FMT);
    if (!w.ext || !w.order || !w.b) {
        free(w.ext);
        free(w.order);
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
    for (size_t k = 0; rc == TIO_OK && k < RT_META_COUNT; k++) {
        rc = rt_str(&w, tio__kv_get(meta, rt_meta_keys[k]), &mstr[k], err);
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

    if (!rc && w.version == 1) {
        rc = tio__sink_write(s, model, mlen, err);
    } else if (!rc) {
        uint64_t to;
        if (!tio__align_up(RT_HEADER_LEN + (uint64_t)mlen, RT_ALIGN, &to)) to = 0;
        uint8_t hdr[RT_HEADER_LEN];
        memcpy(hdr, rt_magic, 4);
        tio__st32(hdr + 4, RT_VERSION);
        tio__st64(hdr + 8, RT_HEADER_LEN);
        tio__st64(hdr + 16, mlen);
        tio__st64(hdr + 24, to);
        rc = tio__sink_write(s, hdr, sizeof hdr, err);
        if (!rc) rc = tio__sink_write(s, model, mlen, err);
        if (!rc) rc = tio__sink_zeros(s, (size_t)(to - RT_HEADER_LEN - mlen), err);
        /* External tensors in offset order. */
        uint64_t pos = 0;
        for (size_t k = 0; rc == TIO_OK && k < w.norder; k++) {
            size_t i = w.order[k];
            rc = tio__sink_zeros(s, (size_t)(w.ext[i] - pos), err);
            if (!rc) rc = tio__plan_sink_tensor(p, s, i, err);
            pos = w.ext[i] + tio__plan_tensor(p, i)->nbytes;
        }
    }
    tio__fb_builder_free(w.b);
    free(w.ext);
    free(w.order);
    return rc;
}

/* ----------------------------------------------------------- the format */

extern const tio_format_desc tio__format_rten;

const tio_format_desc tio__format_rten = {
    .name = "rten",
    .description = "rten model (.rten): FlatBuffers graph and tensor data, V1 and V2",
    .extensions = ".rten",
    .caps = TIO_CAP_NAMES | TIO_CAP_GRAPH,
    .versions = (1u << 1) | (1u << 2),
    .dtypes = TIO_DTYPE_BIT(TIO_FLOAT32) | TIO_DTYPE_BIT(TIO_INT32) | TIO_DTYPE_BIT(TIO_INT8) |
              TIO_DTYPE_BIT(TIO_UINT8),
    .probe = rt_probe,
    .read = rt_read,
    .check = rt_check,
    .write = rt_write,
};
