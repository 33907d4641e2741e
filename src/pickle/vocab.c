/*
 * The pickle machine's vocabulary: the globals whose meaning the torch
 * reader knows, as data. Anything not listed here is an opaque global,
 * reported with its module.name and offset (docs/formats/torch.md).
 */
#include "pickle/pickle.h"

#include <string.h>

#define T(n) {"torch", n, TIO_PKV_STORAGE, TIO_DTYPE_INVALID}
#define S(n, d) {"torch", n, TIO_PKV_STORAGE, d}, {"torch.cuda", n, TIO_PKV_STORAGE, d}
#define D(n, d) {"torch", n, TIO_PKV_DTYPE, d}

static const tio_pk_vocab_entry vocab[] = {
    {"torch._utils", "_rebuild_tensor", TIO_PKV_REBUILD_TENSOR, TIO_DTYPE_INVALID},
    {"torch._utils", "_rebuild_tensor_v2", TIO_PKV_REBUILD_TENSOR_V2, TIO_DTYPE_INVALID},
    {"torch._utils", "_rebuild_tensor_v3", TIO_PKV_REBUILD_TENSOR_V3, TIO_DTYPE_INVALID},
    {"torch._utils", "_rebuild_parameter", TIO_PKV_REBUILD_PARAMETER, TIO_DTYPE_INVALID},
    {"torch._utils", "_rebuild_parameter_with_state", TIO_PKV_REBUILD_PARAMETER_STATE,
     TIO_DTYPE_INVALID},
    {"torch._tensor", "_rebuild_from_type_v2", TIO_PKV_REBUILD_FROM_TYPE, TIO_DTYPE_INVALID},
    {"torch._utils", "_rebuild_qtensor", TIO_PKV_REBUILD_QTENSOR, TIO_DTYPE_INVALID},
    /* sparse tensors: the layout is torch.layout's copyreg reduction, a
     * call of _get_layout with the layout's name (torch/serialization.py) */
    {"torch._utils", "_rebuild_sparse_tensor", TIO_PKV_REBUILD_SPARSE, TIO_DTYPE_INVALID},
    {"torch._utils", "_rebuild_sparse_csr_tensor", TIO_PKV_REBUILD_SPARSE, TIO_DTYPE_INVALID},
    {"torch.serialization", "_get_layout", TIO_PKV_GET_LAYOUT, TIO_DTYPE_INVALID},
    /* storages: the dtype of their elements (torch/storage.py's
     * _dtype_to_storage_type_map; torch.cuda.* in the legacy layout) */
    S("FloatStorage", TIO_FLOAT32),
    S("DoubleStorage", TIO_FLOAT64),
    S("HalfStorage", TIO_FLOAT16),
    S("BFloat16Storage", TIO_BFLOAT16),
    S("LongStorage", TIO_INT64),
    S("IntStorage", TIO_INT32),
    S("ShortStorage", TIO_INT16),
    S("CharStorage", TIO_INT8),
    S("ByteStorage", TIO_UINT8),
    S("BoolStorage", TIO_BOOL),
    S("UInt16Storage", TIO_UINT16),
    S("UInt32Storage", TIO_UINT32),
    S("UInt64Storage", TIO_UINT64),
    S("Float8_e4m3fnStorage", TIO_FLOAT8_E4M3FN),
    S("Float8_e5m2Storage", TIO_FLOAT8_E5M2),
    S("ComplexFloatStorage", TIO_COMPLEX64),
    S("ComplexDoubleStorage", TIO_COMPLEX128),
    /* known to torch, not (yet) to tensio: refused by name */
    T("QUInt4x2Storage"),
    T("QUInt2x4Storage"),
    /* quantized tensors' storages: the integers (_rebuild_qtensor) */
    {"torch", "QInt8Storage", TIO_PKV_QSTORAGE, TIO_INT8},
    {"torch", "QUInt8Storage", TIO_PKV_QSTORAGE, TIO_UINT8},
    {"torch", "QInt32Storage", TIO_PKV_QSTORAGE, TIO_INT32},
    {"torch", "per_tensor_affine", TIO_PKV_QSCHEME, TIO_DTYPE_INVALID},
    {"torch", "per_channel_affine", TIO_PKV_QSCHEME, TIO_DTYPE_INVALID},
    {"torch", "per_channel_affine_float_qparams", TIO_PKV_QSCHEME, TIO_DTYPE_INVALID},
    {"torch", "per_tensor_symmetric", TIO_PKV_QSCHEME, TIO_DTYPE_INVALID},
    {"torch", "per_channel_symmetric", TIO_PKV_QSCHEME, TIO_DTYPE_INVALID},
    {"torch.storage", "UntypedStorage", TIO_PKV_UNTYPED_STORAGE, TIO_DTYPE_INVALID},
    {"torch", "UntypedStorage", TIO_PKV_UNTYPED_STORAGE, TIO_DTYPE_INVALID},
    {"collections", "OrderedDict", TIO_PKV_ORDERED_DICT, TIO_DTYPE_INVALID},
    {"torch", "Size", TIO_PKV_SIZE, TIO_DTYPE_INVALID},
    {"torch", "device", TIO_PKV_DEVICE, TIO_DTYPE_INVALID},
    D("float32", TIO_FLOAT32),
    D("float64", TIO_FLOAT64),
    D("float16", TIO_FLOAT16),
    D("bfloat16", TIO_BFLOAT16),
    D("int64", TIO_INT64),
    D("int32", TIO_INT32),
    D("int16", TIO_INT16),
    D("int8", TIO_INT8),
    D("uint8", TIO_UINT8),
    D("uint16", TIO_UINT16),
    D("uint32", TIO_UINT32),
    D("uint64", TIO_UINT64),
    D("bool", TIO_BOOL),
    D("float8_e4m3fn", TIO_FLOAT8_E4M3FN),
    D("float8_e5m2", TIO_FLOAT8_E5M2),
    D("complex64", TIO_COMPLEX64),
    D("complex128", TIO_COMPLEX128),
    D("complex32", TIO_DTYPE_INVALID),
    D("qint8", TIO_DTYPE_INVALID),
    D("quint8", TIO_DTYPE_INVALID),
    D("qint32", TIO_DTYPE_INVALID),
    {"builtins", "set", TIO_PKV_SET, TIO_DTYPE_INVALID},
    {"builtins", "frozenset", TIO_PKV_FROZENSET, TIO_DTYPE_INVALID},
    {"builtins", "slice", TIO_PKV_SLICE, TIO_DTYPE_INVALID},
    {"__builtin__", "set", TIO_PKV_SET, TIO_DTYPE_INVALID},
    {"__builtin__", "frozenset", TIO_PKV_FROZENSET, TIO_DTYPE_INVALID},
    {"__builtin__", "slice", TIO_PKV_SLICE, TIO_DTYPE_INVALID},
    {"_codecs", "encode", TIO_PKV_CODECS_ENCODE, TIO_DTYPE_INVALID},
    {"builtins", "bytes", TIO_PKV_BYTES, TIO_DTYPE_INVALID},
    {"__builtin__", "bytes", TIO_PKV_BYTES, TIO_DTYPE_INVALID},
    {"numpy.core.multiarray", "_reconstruct", TIO_PKV_NP_RECONSTRUCT, TIO_DTYPE_INVALID},
    {"numpy._core.multiarray", "_reconstruct", TIO_PKV_NP_RECONSTRUCT, TIO_DTYPE_INVALID},
    {"numpy", "dtype", TIO_PKV_NP_DTYPE, TIO_DTYPE_INVALID},
    {"numpy", "ndarray", TIO_PKV_NP_NDARRAY, TIO_DTYPE_INVALID},
    {"numpy.core.multiarray", "scalar", TIO_PKV_NP_SCALAR, TIO_DTYPE_INVALID},
    {"numpy._core.multiarray", "scalar", TIO_PKV_NP_SCALAR, TIO_DTYPE_INVALID},
    /* TorchScript's pickles (torch/jit/_pickle.py) */
    {"torch.jit._pickle", "build_intlist", TIO_PKV_JIT_LIST, TIO_DTYPE_INVALID},
    {"torch.jit._pickle", "build_doublelist", TIO_PKV_JIT_LIST, TIO_DTYPE_INVALID},
    {"torch.jit._pickle", "build_boollist", TIO_PKV_JIT_LIST, TIO_DTYPE_INVALID},
    {"torch.jit._pickle", "build_tensorlist", TIO_PKV_JIT_LIST, TIO_DTYPE_INVALID},
    {"torch.jit._pickle", "restore_type_tag", TIO_PKV_JIT_TYPE_TAG, TIO_DTYPE_INVALID},
    {"torch.jit._pickle", "build_tensor_from_id", TIO_PKV_JIT_TENSOR_ID, TIO_DTYPE_INVALID},
};

static int vocab_eq(const char *s, const uint8_t *p, size_t n) {
    return strlen(s) == n && memcmp(s, p, n) == 0;
}

unsigned tio__pk_vocab_find(const uint8_t *mod, size_t mod_len, const uint8_t *name,
                            size_t name_len) {
    for (size_t i = 0; i < sizeof vocab / sizeof vocab[0]; i++)
        if (vocab_eq(vocab[i].name, name, name_len) && vocab_eq(vocab[i].module, mod, mod_len))
            return (unsigned)i + 1;
    return 0;
}

const tio_pk_vocab_entry *tio__pk_vocab_at(unsigned v) {
    return v >= 1 && v <= sizeof vocab / sizeof vocab[0] ? &vocab[v - 1] : NULL;
}
