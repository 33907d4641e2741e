/*
 * The tmfile <-> ONNX mapping table: for every Tengine operator that has an
 * ONNX equivalent, the ONNX op and, for every field of its param struct, the
 * ONNX attribute it is (or how a write recovers it when ONNX has none). Data
 * only (src/tmfile/opmap.c); the reader raises a node's param fields to ONNX
 * attributes through it, the writer lowers them back through the same
 * entries. What ONNX cannot say is kept as "tmfile.<field>". See
 * docs/formats/tmfile.md, "ONNX form".
 */
#ifndef TIO_TMFILE_OPMAP_H
#define TIO_TMFILE_OPMAP_H

#include "core/internal.h"
#include "graph/graph.h"
#include "tmfile/tmfile.h"

/* The default-domain opset the raised attribute forms are those of (14:
 * opset 13's forms, and HardSwish). */
#define TM_ONNX_OPSET 14

/* How a param field becomes an ONNX attribute. */
enum {
    TM_M_SAME = 0, /* one field <-> one attribute of the same value (INT, FLOAT, INTS) */
    TM_M_PACK,     /* nfields INT fields (>= 0) <-> one INTS attribute (kernel_shape = [kh, kw]) */
    TM_M_PACKS,    /* as PACK, the values may be negative (Slice's starts, ends, axes) */
    TM_M_CONST,    /* no field: the ONNX attribute always has the value idef (Gemm transB) */
    TM_M_DEF,      /* no ONNX attribute: omitted at the value idef/fdef, else "tmfile.<field>" */
    TM_M_DERIVED   /* no ONNX attribute: omitted when it equals what the write derives
                      from the graph (derive below), else "tmfile.<field>" */
};

/* What a TM_M_DERIVED field is derived from. */
enum {
    TM_D_CONV_IN = 1, /* Convolution input_channel: weight dim 1 x group */
    TM_D_CONV_OUT,    /* Convolution output_channel: weight dim 0 */
    TM_D_DECONV_OUT,  /* Deconvolution num_output: weight dim 1 x group */
    TM_D_FC_OUT,      /* FullyConnected num_output: weight dim 0 */
    TM_D_RANK_M1,     /* Flatten end_axis: input rank - 1 */
    TM_D_SHAPE        /* Reshape re_shape: the values of the constant shape input */
};

typedef struct tio_tm_amap {
    const char *onnx;       /* the ONNX attribute (SAME, PACK, CONST); NULL otherwise */
    uint8_t conv;           /* TM_M_* */
    const char *fields[8];  /* the param fields (SAME, DEF, DERIVED: one; PACK: nfields) */
    uint8_t nfields;
    int64_t idef;           /* DEF (int field), CONST */
    double fdef;            /* DEF (float field) */
    uint8_t derive;         /* DERIVED: TM_D_* */
} tio_tm_amap;

/* How the ONNX op is chosen. */
enum {
    TM_OP_FIXED = 0, /* the table's op */
    TM_OP_POOL,      /* MaxPool/AveragePool/GlobalMaxPool/GlobalAveragePool from alg, global */
    TM_OP_RELU,      /* Relu (negative_slope 0) or LeakyRelu (alpha = negative_slope) */
    TM_OP_ELTWISE,   /* Add/Sub/Mul/Div/Max/Log/Exp/Sqrt/Floor/Pow from type */
    TM_OP_REDUCE,    /* ReduceMean/Max/Min/Prod/SumSquare/LogSum/LogSumExp from type, axes
                        from dim_0..dim_3 (ReduceSum takes its axes as an input at opset 13:
                        not raised) */
    TM_OP_PAD        /* Pad: mode 0/1/2 <-> "constant"/"edge"/"reflect" */
};

typedef struct tio_tm_opmap {
    int idx;                   /* the Tengine-lite operator index */
    const char *onnx;          /* the ONNX op (TM_OP_FIXED) */
    uint8_t choose;            /* TM_OP_* */
    const tio_tm_amap *attrs;  /* the param fields */
    uint8_t nattrs;
    uint8_t min_inputs;        /* raised only with at least this many inputs */
} tio_tm_opmap;

extern const tio_tm_opmap tio__tmfile_opmap[];
extern const size_t tio__tmfile_opmap_count;

/* The entry of Tengine operator `idx`, or NULL (the node keeps its Tengine
 * fields as attributes). */
const tio_tm_opmap *tio__tmfile_opmap_of(int idx);

/* A copy of a C string (NULL when out of memory). */
char *tio__tmfile_dup(const char *s);

/* Frees n attributes built by the functions below. */
void tio__tmfile_attrs_free(tio_gattr *a, size_t n);

/* Raises node n (Tengine operator idx, its attributes the param fields as
 * the reader decodes them, plus tm2_* attributes) to ONNX form: *out gets
 * the new attributes (tm2_* copied), *op the ONNX op (static storage). When
 * the node has no ONNX form (no entry, a field missing, a value ONNX cannot
 * hold), *out is NULL, *op NULL and TIO_OK is returned. c holds the
 * constants the graph's values refer to. *split_act: a Convolution whose
 * activation is ReLU (0) or ReLU6 (6), else -1; its ONNX form is Conv
 * followed by a Relu or a Clip(0, 6), which the caller adds. The list is
 * allocated in the arena of `arena` (the graph that takes it: release it
 * with tio__gattrs_free), or by malloc() when arena is NULL
 * (tio__tmfile_attrs_free). */
int tio__tmfile_raise(const tio_graph *g, tio_graph *arena, const tio_container *c,
                      const tio_gnode *n, int idx, tio_gattr **out, size_t *nout, const char **op,
                      int *split_act, tio_error *err);

/* Why node n, a Tengine Pad or Clip that the reader left in Tengine's form,
 * has no ONNX form, when a param value or its input is the reason (a
 * negative pad, an unknown mode, a Clip of int8 ...): the text in buf; NULL
 * otherwise. */
const char *tio__tmfile_why_unraised(const tio_graph *g, const tio_gnode *n, char *buf,
                                     size_t cap);

/* Lowers a raised node back to its Tengine param fields: *out gets the
 * field attributes (and the tm2_* ones, copied). `fused_act`: the
 * activation (0 ReLU, 6 ReLU6) of the Relu or Clip fused back into the
 * Convolution, -1 none. An attribute with no
 * field is an error (TIO_E_LOSSY) naming it. */
int tio__tmfile_lower(const tio_graph *g, const tio_container *c, const tio_gnode *n, int idx,
                      int fused_act, tio_gattr **out, size_t *nout, tio_error *err);

/* What convert_tool writes in a global pool's window field (kernel_* 2,
 * stride_* 1, pad_* 0); Tengine replaces them from the input's shape. */
int64_t tio__tmfile_global_field(const char *field);

#endif /* TIO_TMFILE_OPMAP_H */
