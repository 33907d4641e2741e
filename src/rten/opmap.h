/*
 * The rten <-> ONNX mapping table: for every rten OperatorType its ONNX op,
 * and for every field of its attrs table the ONNX attribute it is (name,
 * type, conversion, ONNX default). Data only (src/rten/opmap.c); the reader
 * raises rten attributes to ONNX ones through it, the writer lowers them
 * back through the same entries. See docs/formats/rten.md, "Attributes".
 */
#ifndef TIO_RTEN_OPMAP_H
#define TIO_RTEN_OPMAP_H

#include "core/internal.h"
#include "graph/graph.h"
#include "rten/schema.h"

/* How a field's value becomes the ONNX attribute's value. */
enum {
    TIO_RTEN_SAME = 0, /* the same value (bool/int -> INT, float -> FLOAT, lists, strings, graphs) */
    TIO_RTEN_ENUM,     /* rten enum value v <-> ONNX STRING strs[v] */
    TIO_RTEN_DTYPE,    /* rten DataType <-> ONNX TensorProto.DataType INT */
    TIO_RTEN_SCALAR,   /* ConstantOfShape's Scalar union <-> INT/FLOAT (or a 1-element TENSOR) */
    TIO_RTEN_AUTOPAD   /* AutoPad enum <-> ONNX auto_pad STRING (VALID: NOTSET, zero pads) */
};

/* rten AutoPad values (schema.fbs: Same = 0, NotSet = 1). */
#define TIO_RTEN_AUTOPAD_SAME 0
#define TIO_RTEN_AUTOPAD_NOTSET 1

typedef struct tio_rten_fmap {
    const char *field;          /* the rten attrs table field */
    const char *onnx;           /* the ONNX attribute; NULL: kept as "rten.<field>" */
    uint8_t type;               /* tio_attr_type of the ONNX attribute */
    uint8_t conv;               /* TIO_RTEN_* above */
    const char *const *strs;    /* ENUM/AUTOPAD: ONNX string of each rten enum value */
    uint8_t nstrs;
    /* The default rten-convert applies when the ONNX node omits the attribute
     * (used when lowering a graph that was not read from rten). */
    uint8_t has_def;
    int64_t idef;
    double fdef;
    const char *sdef;
    const int64_t *vdef;
    uint8_t nvdef;
} tio_rten_fmap;

/* An ONNX attribute rten has no field for but rten-convert accepts: ignored
 * (`must` = 0), or accepted only with its ONNX default value. */
typedef struct tio_rten_extra {
    const char *onnx;
    uint8_t type;     /* INT, FLOAT, STRING or INTS (INTS: every entry equal to idef) */
    uint8_t must;     /* 1: the value must equal the default below */
    int64_t idef;
    double fdef;
    const char *sdef;
} tio_rten_extra;

typedef struct tio_rten_opmap {
    const char *onnx;             /* the ONNX op_type (rten's names are ONNX's) */
    uint8_t attrs;                /* the OperatorAttrs tag the fields belong to, 0 = none */
    const tio_rten_fmap *fields;  /* one per field of the attrs table, in field order */
    uint8_t nfields;
    const tio_rten_extra *extra;  /* ONNX attributes accepted without a field */
    uint8_t nextra;
} tio_rten_opmap;

extern const tio_rten_opmap tio__rten_opmap[TIO_RTEN_OP_COUNT];

/* An ONNX attribute that later opsets made an input (or that rten takes as an
 * input only): rten-convert turns it into a constant input `input` named
 * "<node name>:rten-<attr>" (int/ints as int32, float/floats as float32;
 * INT/FLOAT give a scalar, INTS/FLOATS a 1-D tensor). Listed in the order
 * rten-convert generates them, which is the order of the written constants. */
typedef struct tio_rten_attr_input {
    const char *op;
    const char *attr;
    uint8_t type; /* tio_attr_type: INT, FLOAT, INTS or FLOATS */
    uint8_t input;
} tio_rten_attr_input;

extern const tio_rten_attr_input tio__rten_attr_inputs[];
extern const size_t tio__rten_attr_input_count;

/* The entry of `op` for rten attrs field `field`, or NULL. */
const tio_rten_fmap *tio__rten_fmap_field(const tio_rten_opmap *op, const char *field);
/* The entry of `op` for ONNX attribute `name`, or NULL. */
const tio_rten_fmap *tio__rten_fmap_onnx(const tio_rten_opmap *op, const char *name);
/* ONNX TensorProto.DataType of rten DataType `v`, or -1; and back (-1: rten has none). */
int64_t tio__rten_dtype_to_onnx(int64_t v);
int64_t tio__rten_dtype_from_onnx(int64_t onnx);

#endif /* TIO_RTEN_OPMAP_H */
