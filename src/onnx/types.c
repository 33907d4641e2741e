/* ONNX facts the reader and the writer share: TensorProto.DataType codes
 * (onnx.proto) and the metadata keys that carry model fields. */
#include "onnx/onnx.h"

#include <string.h>

static const struct {
    int code;
    tio_dtype dtype;
    const char *name;
} ox_types[] = {
    {1, TIO_FLOAT32, "FLOAT"},         {2, TIO_UINT8, "UINT8"},
    {3, TIO_INT8, "INT8"},             {4, TIO_UINT16, "UINT16"},
    {5, TIO_INT16, "INT16"},           {6, TIO_INT32, "INT32"},
    {7, TIO_INT64, "INT64"},           {8, TIO_STRING, "STRING"},
    {9, TIO_BOOL, "BOOL"},             {10, TIO_FLOAT16, "FLOAT16"},
    {11, TIO_FLOAT64, "DOUBLE"},       {12, TIO_UINT32, "UINT32"},
    {13, TIO_UINT64, "UINT64"},        {14, TIO_COMPLEX64, "COMPLEX64"},
    {15, TIO_COMPLEX128, "COMPLEX128"}, {16, TIO_BFLOAT16, "BFLOAT16"},
    {17, TIO_DTYPE_INVALID, "FLOAT8E4M3FN"}, {18, TIO_DTYPE_INVALID, "FLOAT8E4M3FNUZ"},
    {19, TIO_DTYPE_INVALID, "FLOAT8E5M2"}, {20, TIO_DTYPE_INVALID, "FLOAT8E5M2FNUZ"},
    {21, TIO_DTYPE_INVALID, "UINT4"},  {22, TIO_DTYPE_INVALID, "INT4"},
    {23, TIO_DTYPE_INVALID, "FLOAT4E2M1"},
};
#define OX_NTYPES (sizeof ox_types / sizeof ox_types[0])

tio_dtype tio__onnx_dtype(int64_t code) {
    for (size_t i = 0; i < OX_NTYPES; i++)
        if (ox_types[i].code == code) return ox_types[i].dtype;
    return TIO_DTYPE_INVALID;
}

int tio__onnx_code(tio_dtype d) {
    for (size_t i = 0; i < OX_NTYPES; i++)
        if (d != TIO_DTYPE_INVALID && ox_types[i].dtype == d) return ox_types[i].code;
    return 0;
}

const char *tio__onnx_dtype_name(int64_t code) {
    for (size_t i = 0; i < OX_NTYPES; i++)
        if (ox_types[i].code == code) return ox_types[i].name;
    return NULL;
}

int tio__onnx_is_model_key(const char *key) {
    static const char *const keys[] = {OX_META_IR,       OX_META_PRODUCER,
                                       OX_META_PRODUCER_VERSION, OX_META_DOMAIN,
                                       OX_META_MODEL_VERSION,    OX_META_DOC,
                                       OX_META_GRAPH_NAME,       OX_META_GRAPH_DOC};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(key, keys[i]) == 0) return 1;
    return 0;
}

/* ONNX has no magic. A ModelProto's writers put ir_version (field 1, a
 * varint) first; a version of one varint byte (1..127: every version the
 * reader takes, so that whatever tensio writes probes as ONNX) followed by
 * another ModelProto field with its own wire type is taken as ONNX, with a
 * low score so that any format with a magic wins. */
int tio__onnx_probe(const uint8_t *d, size_t n) {
    if (n < 4 || d[0] != 0x08 || d[1] < 1 || d[1] > TIO__ONNX_MAX_IR) return 0;
    switch (d[2]) {
    case 0x12: /* producer_name */
    case 0x1a: /* producer_version */
    case 0x22: /* domain */
    case 0x28: /* model_version */
    case 0x32: /* doc_string */
    case 0x3a: /* graph */
    case 0x42: /* opset_import */
    case 0x72: /* metadata_props */
        return 20;
    default: return 0;
    }
}
