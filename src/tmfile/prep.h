/*
 * Tengine tmfile: an ONNX-semantics graph from another format made ready for
 * lowering to Tengine's operators, as convert_tool's ONNX front end and graph
 * optimiser do (and where they fail, better): constants inlined, static
 * shapes inferred, constant shape arithmetic folded, Identity/Dropout and
 * empty Pads removed, inputs that Tengine keeps as params turned into
 * attributes, Gemm made a FullyConnected's form, and (unless fuse=0)
 * Conv/Gemm+BatchNormalization folded into the weights, Conv+Relu/Clip(0,6)
 * fused; the erf form of GELU becomes one Gelu. See docs/formats/tmfile.md.
 */
#ifndef TIO_TMFILE_PREP_H
#define TIO_TMFILE_PREP_H

#include "graph/graph.h"

typedef struct tm_prep {
    tio_graph g;           /* the prepared graph: arrays owned here, strings borrowed */
    size_t nc;             /* the container's tensor count: extra tensor k is nc + k */
    tio_tensor **extra;    /* tensors computed here (folded weights, constants) */
    size_t nextra, extra_cap;
    uint8_t *dropped;      /* per container tensor: no longer used after folding */
    void *arena;           /* everything else allocated here */
} tm_prep;

/* Prepares graph src of container c (a graph not read from a tmfile). fuse:
 * run the optional fusions. On failure p is freed. */
int tio__tmfile_prep(const tio_container *c, const tio_graph *src, bool fuse, tm_prep *p,
                     tio_error *err);
void tio__tmfile_prep_free(tm_prep *p);

/* Tensor idx of the prepared graph: a container tensor or an extra one. */
const tio_tensor *tio__tmfile_prep_tensor(const tm_prep *p, const tio_container *c, int64_t idx);

#endif /* TIO_TMFILE_PREP_H */
