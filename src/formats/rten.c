/*
 * RTen (.rten): the rten engine's model format -- the format descriptor, the
 * probe and the dtype codes. Reading is in src/rten/read.c, writing in
 * src/rten/write.c, the schema as data in src/rten/schema.c.
 *
 * V2: a 32-byte header (magic "RTEN", u32 version 2, u64 model_data_offset,
 * u64 model_data_len, u64 tensor_data_offset), a FlatBuffers `Model` (no size
 * prefix, no file identifier), then tensor data that external constants
 * reference relative to tensor_data_offset. V1: the whole file is the
 * FlatBuffers `Model` with every constant inline.
 * See docs/formats/rten.md and ../shared/specs/notes-rten.md.
 */
#include "core/internal.h"
#include "rten/rten.h"

#include <string.h>

const uint8_t tio__rten_magic[4] = {'R', 'T', 'E', 'N'};

const char *const tio__rten_meta_keys[RT_META_COUNT] = {
    "onnx_hash",        "description", "license", "commit", "code_repository",
    "model_repository", "run_id",      "run_url"};

tio_dtype tio__rten_const_dtype(unsigned code) {
    switch (code) {
    case RTEN_ConstantDataType_Int32: return TIO_INT32;
    case RTEN_ConstantDataType_Float32: return TIO_FLOAT32;
    case RTEN_ConstantDataType_Int8: return TIO_INT8;
    case RTEN_ConstantDataType_UInt8: return TIO_UINT8;
    default: return TIO_DTYPE_INVALID;
    }
}
int tio__rten_const_code(tio_dtype d) {
    switch (d) {
    case TIO_INT32: return RTEN_ConstantDataType_Int32;
    case TIO_FLOAT32: return RTEN_ConstantDataType_Float32;
    case TIO_INT8: return RTEN_ConstantDataType_Int8;
    case TIO_UINT8: return RTEN_ConstantDataType_UInt8;
    default: return -1;
    }
}
tio_dtype tio__rten_value_dtype(unsigned code) {
    switch (code) {
    case RTEN_DataType_Int32: return TIO_INT32;
    case RTEN_DataType_Float: return TIO_FLOAT32;
    case RTEN_DataType_Int8: return TIO_INT8;
    case RTEN_DataType_UInt8: return TIO_UINT8;
    default: return TIO_DTYPE_INVALID;
    }
}
int tio__rten_value_code(tio_dtype d) {
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
int tio__rten_data_tag(tio_dtype d) {
    switch (d) {
    case TIO_FLOAT32: return RTEN_ConstantData_FloatData;
    case TIO_INT32: return RTEN_ConstantData_Int32Data;
    case TIO_INT8: return RTEN_ConstantData_Int8Data;
    case TIO_UINT8: return RTEN_ConstantData_UInt8Data;
    default: return 0;
    }
}
tio_dtype tio__rten_tag_dtype(unsigned tag) {
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
    if (n >= 4 && memcmp(d, tio__rten_magic, 4) == 0) return 95;
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

/* ----------------------------------------------------------- the format */

extern const tio_format_desc tio__format_rten;

const tio_format_desc tio__format_rten = {
    .name = "rten",
    .description = "rten model (.rten): FlatBuffers graph and tensor data, V1 and V2",
    .extensions = ".rten",
    .caps = TIO_CAP_NAMES | TIO_CAP_GRAPH,
    .versions = (1u << 1) | (1u << 2),
    /* rten stores float32, int32, int8 and uint8; the others are converted
     * when written, as rten-convert converts them (rten/lower.h) */
    .dtypes = TIO_DTYPE_BIT(TIO_FLOAT32) | TIO_DTYPE_BIT(TIO_INT32) | TIO_DTYPE_BIT(TIO_INT8) |
              TIO_DTYPE_BIT(TIO_UINT8) | TIO_DTYPE_BIT(TIO_BOOL) | TIO_DTYPE_BIT(TIO_INT16) |
              TIO_DTYPE_BIT(TIO_INT64) | TIO_DTYPE_BIT(TIO_FLOAT16) |
              TIO_DTYPE_BIT(TIO_BFLOAT16) | TIO_DTYPE_BIT(TIO_FLOAT64),
    .probe = rt_probe,
    .read = tio__rten_read,
    .check = tio__rten_check,
    .write = tio__rten_write,
};
