/*
 * Lowering a graph to what an rten file holds (src/rten/lower.c): the node
 * list the writer emits, in order, with rten-convert's conversions applied to
 * graphs not read from rten (ONNX or built through the API):
 *  - values in rten-convert's order: initializers, Constant ops' outputs,
 *    graph inputs, outputs, value_info values, then per operator its new
 *    outputs and the constants generated from its attributes;
 *  - `Constant` operators become constants (TENSOR value, value_int(s),
 *    value_float(s));
 *  - attributes that later opsets made inputs become constant inputs
 *    (tio__rten_attr_inputs);
 *  - constants of dtypes rten lacks are converted when written
 *    (tio__rten_store_dtype, tio__rten_convert_elems).
 * A graph read from rten is lowered as it is (same order, same nodes), so
 * rten -> rten stays byte-identical. Nothing of the source container or graph
 * is modified.
 */
#ifndef TIO_RTEN_LOWER_H
#define TIO_RTEN_LOWER_H

#include "core/internal.h"
#include "graph/graph.h"

typedef struct rt_lval {
    const char *name;
    const tio_gvalue *src; /* the graph's value, or NULL for a generated constant */
    bool is_const;
    int64_t tensor;        /* constant: the container tensor with its data, or -1 */
    tio_dtype dtype;       /* constant: the source dtype (of `tensor` or `data`) */
    size_t rank;           /* constant */
    const int64_t *shape;
    const uint8_t *data;   /* generated constant: its bytes (owned by the lgraph) */
    uint64_t numel;
    uint64_t ext;          /* writer: external offset of generated data */
} rt_lval;

typedef struct rt_lgraph {
    const tio_graph *g;
    rt_lval *vals;
    size_t nv;
    tio_gnode *ops; /* shallow copies; inputs, outputs and attrs arrays owned */
    size_t nops;
    int64_t *inputs, *outputs, *captures; /* remapped, owned */
    void **owned;
    size_t nowned, capowned;
} rt_lgraph;

/* Lowers g (see above). `native`: g was read from rten (identity). On failure
 * *lg is freed. */
int tio__rten_lower_graph(const tio_container *c, const tio_graph *g, bool native,
                          rt_lgraph *lg, tio_error *err);
void tio__rten_lgraph_free(rt_lgraph *lg);

/* The rten constant dtype a source dtype is stored as (rten-convert: bool,
 * int16 and int64 -> int32; float16, bfloat16, float64 -> float32), or
 * TIO_DTYPE_INVALID when rten-convert refuses it. */
tio_dtype tio__rten_store_dtype(tio_dtype d);
/* Converts n elements of dtype `from` to tio__rten_store_dtype(from). int64
 * is clamped to the int32 range. */
void tio__rten_convert_elems(tio_dtype from, const uint8_t *src, uint8_t *dst, uint64_t n);

#endif /* TIO_RTEN_LOWER_H */
