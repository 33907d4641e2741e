/*
 * Tengine tmfile (tm2, .tmfile) internals shared by the format descriptor
 * (formats/tmfile.c), the schema (tmfile/schema.c), the reader
 * (tmfile/read.c) and the writer (tmfile/write.c). Not installed.
 * See docs/formats/tmfile.md.
 */
#ifndef TIO_TMFILE_TMFILE_H
#define TIO_TMFILE_TMFILE_H

#include "core/internal.h"

#define TM_FMT "tmfile"
#define TM_HEADER_LEN 12u
#define TM_MODEL_LEN 16u
#define TM_SUB_LITE 40u
#define TM_SUB_OLD 36u
#define TM_NODE_LEN 28u
#define TM_OP_LEN 12u
#define TM_TENSOR_LEN 32u
#define TM_BUFFER_LEN 8u
#define TM_STRING_LEN 8u
#define TM_QUANT_LEN 12u
#define TM_MAX_DIMS 8u      /* Tengine's MAX_SHAPE_DIM_NUM */
#define TM_RAW_PARAM_MAX 4096u
#define TM_NOPS 108

/* Tensor types and the element types of TM2_Tensor.data_type. */
enum { TM_T_UNKNOWN = 0, TM_T_VAR = 1, TM_T_CONST = 2, TM_T_INPUT = 3, TM_T_DEP = 4 };

/* ----------------------------------------------------------- param structs */

/* Field kinds of an operator param struct. The offset kinds name a child
 * object (a vector or a string) written before the struct. */
enum {
    TF_I32,
    TF_U32,
    TF_F32,
    TF_BOOL,     /* tm_bool_t: one byte, then struct padding */
    TF_VDIMS,    /* offset of a TM2_Vector_dims -> INTS */
    TF_VFLOATS,  /* offset of a TM2_Vector_floats -> FLOATS */
    TF_VANCHORS, /* offset of a TM2_Vector_anchors -> FLOATS, 4 per anchor */
    TF_STR       /* offset of a TM2_String -> STRING */
};

typedef struct tm_field {
    const char *name; /* the attribute name: the struct field, or for an
                         offset field the name without "offset_..._" */
    int kind;
} tm_field;

typedef struct tm_pdef {
    const char *name; /* "TM2_ConvParam" */
    const tm_field *f;
    unsigned n;     /* fields in Tengine-lite */
    unsigned n_old; /* fields in the old C++ struct (a prefix of lite's) */
} tm_pdef;

/* ----------------------------------------------------------- operator table */

typedef struct tm_op {
    const char *name;    /* the TM2_OPTYPE name (as in notes-tmfile.md) */
    const char *onnx;    /* the ONNX operator, or NULL (Pooling, ReLu and Eltwise
                            are named from their params) */
    const tm_pdef *param; /* NULL: the operator has no param */
} tm_op;

/* Indexed by the Tengine-lite TM2_OPTYPE code (source/serializer/tmfile/tm2_format.h). */
extern const tm_op tio__tmfile_ops[TM_NOPS];

enum {
    OP_CONST = 4,
    OP_CONV = 5,
    OP_ELTWISE = 9,
    OP_FLATTEN = 10,
    OP_INPUT = 12,
    OP_POOL = 16,
    OP_RELU = 20,
    OP_RELU6 = 21,
    OP_RESHAPE = 23,
    OP_SLICE = 27,
    OP_PAD = 40,
    OP_HARDSWISH = 70,
    OP_CLIP = 87,
    OP_UNSQUEEZE = 88,
    OP_REDUCEL2 = 89,
    OP_MATMUL = 91
};

/* TM2_Tensor.data_type codes: the dtype of a code (TIO_DTYPE_INVALID when
 * unknown), the code of a dtype (-1 when tmfile lacks it). */
tio_dtype tio__tmfile_dtype(int32_t code);
int tio__tmfile_dtype_code(tio_dtype d);

/* The lite index of file code `code` (-1 when unknown); the file code of lite
 * index `idx` in a table (-1 when that table lacks it); the lite index of an
 * operator name (-1 when unknown). */
int tio__tmfile_lite_index(int old, uint32_t code);
int64_t tio__tmfile_file_code(int old, int idx);
int tio__tmfile_find_op(const char *name);

/* The param struct of lite index `idx` in a table; *nf = its fields. */
const tm_pdef *tio__tmfile_param_of(int idx, int old, uint32_t op_ver, unsigned *nf);
/* Byte layout of a param struct with natural alignment: offsets of the first
 * nf fields (pos may be NULL); returns the struct size. */
unsigned tio__tmfile_layout(const tm_pdef *pd, unsigned nf, unsigned *pos);
/* The default TM2_Tensor.type of an output of operator `idx`. */
int32_t tio__tmfile_default_type(int idx);

/* Eltwise types (TM2_EltwiseParam.type) and the ONNX operator of each (NULL:
 * none). */
#define TM_NELTWISE 18
#define ELT_POWER 17
extern const char *const tio__tmfile_eltwise_names[TM_NELTWISE];
extern const char *const tio__tmfile_eltwise_onnx[TM_NELTWISE];

/* orig_format names: lite (source/defines.h.in) and old C++ (exec_attr.hpp). */
#define NORIG_LITE 9
#define NORIG_OLD 10
extern const char *const tio__tmfile_orig_lite[NORIG_LITE];
extern const char *const tio__tmfile_orig_old[NORIG_OLD];
const char *tio__tmfile_orig_name(int old, int32_t code);
/* "NCHW", "NHWC" or NULL. */
const char *tio__tmfile_layout_name(int32_t v);
/* The enum label of a param field value, or NULL. */
const char *tio__tmfile_label(int idx, const char *field, int64_t v);

/* The tm2_* attributes that say how a tmfile stores a node and its output
 * tensors (tm2_layout, tm2_type, tm2_buffer_size, tm2_op_ver,
 * tm2_dynamic_shape): not computation, so a write to another model format
 * leaves them out. The other tm2_* (quant params, raw param words) and the
 * tmfile.* attributes are facts another format must refuse to drop. */
bool tio__tmfile_storage_attr(const char *name);
/* Whether an attribute is tmfile's own (tm2_* or tmfile.*). */
bool tio__tmfile_private_attr(const char *name);
/* Whether a raised node's tmfile.* attribute means nothing outside a tmfile:
 * the window fields (kernel_*, stride_*, pad_*) of a global pool, which
 * Tengine replaces from the input's shape (a writer other than convert_tool
 * leaves other values there; the raise keeps them for tmfile -> tmfile).
 * Writers of other formats drop them. */
bool tio__tmfile_idle_attr(const char *op, const char *name);

/* tmfile/read.c */
int tio__tmfile_probe(const uint8_t *d, size_t n);
int tio__tmfile_read(tio_read_ctx *ctx, tio_error *err);
/* tmfile/write.c */
int tio__tmfile_check(const tio_write_plan *p, tio_error *err);
int tio__tmfile_write(tio_write_plan *p, tio_sink *s, tio_error *err);

#endif /* TIO_TMFILE_TMFILE_H */
