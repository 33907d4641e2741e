/*
 * Tengine tmfile: an ONNX-semantics graph from another format made ready for
 * lowering to Tengine's operators, as convert_tool's ONNX front end and graph
 * optimiser do (and where they fail, better): the graph layer's preparation
 * (src/graph/prep.h: constants inlined, static shapes inferred, constant
 * shape arithmetic folded, Identity/Dropout and empty Pads removed, inputs
 * that Tengine keeps as params turned into attributes, Gemm made a
 * FullyConnected's form, the erf form of GELU one Gelu, a Slice over several
 * axes a chain of one-axis Slices; unless fuse=0,
 * MatMul+Add one Gemm, Conv/Gemm+BatchNormalization folded into the weights,
 * Conv+Relu/Clip(0,6) fused, x*HardSigmoid(x) one HardSwish), and Tengine's
 * own steps (src/tmfile/prep.c). See docs/formats/tmfile.md.
 */
#ifndef TIO_TMFILE_PREP_H
#define TIO_TMFILE_PREP_H

#include "graph/prep.h"

typedef tio_gprepped tm_prep;

/* Prepares graph src of container c (a graph not read from a tmfile). fuse:
 * run the optional fusions; dims: named dims fixed (tio_gprep_opts.dims,
 * the write option dims=), or NULL. On failure p is freed. */
int tio__tmfile_prep(const tio_container *c, const tio_graph *src, bool fuse, const char *dims,
                     tm_prep *p, tio_error *err);

#endif /* TIO_TMFILE_PREP_H */
