/*
 * A graph in ONNX semantics made ready for lowering to another format's
 * operators (src/graph/prep.c), shared by the writers that lower (tmfile,
 * tflite): constants inlined (Constant nodes), static shapes inferred,
 * constant shape arithmetic folded, Identity/Dropout and empty Pads removed,
 * constant inputs that older opsets had as attributes (Clip's bounds, Pad's
 * pads, Slice's starts..., axes, split) made attributes again, Gemm in its
 * FullyConnected form (y = x W^T + b), the erf form of GELU one Gelu; and,
 * as the options say, MatMul+Add as one Gemm, Conv/Gemm+BatchNormalization
 * folded into the weights, x*HardSigmoid(x) one HardSwish, a Slice over several
 * axes one Slice per axis, and Relu/Clip(0,6) after an operator that takes an
 * activation fused into it. A format adds its
 * own steps through the hooks, with the helpers below.
 *
 * Everything runs on a copy: the source graph and container are not changed.
 * New arrays, attributes and tensors live in an arena freed with the result.
 */
#ifndef TIO_GRAPH_PREP_H
#define TIO_GRAPH_PREP_H

#include "graph/graph.h"

/* the largest rank shapes are inferred for (Tengine's MAX_SHAPE_DIM_NUM) */
#define GP_MAX_DIMS 8u

typedef struct tio_gprep tio_gprep; /* the preparation in progress */

typedef struct tio_gprep_opts {
    const char *fmt;        /* the format named in errors */
    bool fuse_matmul_add;   /* MatMul(x, W) + b (x of rank 2, W, b constant): one Gemm */
    bool fold_bn;           /* Conv/FC-form Gemm + BatchNormalization: folded */
    bool fuse_hardswish;    /* x * HardSigmoid(x) (1/6, 1/2): one HardSwish */
    bool split_slice;       /* a Slice over k > 1 axes (constant starts, ends, axes, steps):
                               a chain of k one-axis Slices through new values named
                               "<output>:slice<N>" (fresh), their shapes inferred */
    /* Relu (act_relu) or Clip(0, 6) (act_relu6) read only from a node of an
     * op in act_ops (NULL-terminated): the attribute act_attr of that node
     * (NULL: no activation fusion); the node then writes on. */
    const char *act_attr;
    const char *const *act_ops;
    int64_t act_relu, act_relu6;
    /* named dims fixed: "NAME:N[;NAME:N...]" (a writer's option dims=), or
     * NULL; a graph input's leading dim named and not given here, or
     * unknown, is taken as 1 (a batch). Values whose dims were named or
     * unknown get the static shapes inferred from these. */
    const char *dims;
    /* the format's own steps: node_hook on each live node in the first pass
     * (after the shapes are inferred and the generic forms made), late_hook
     * on each live node last (after the fusions). NULL: none. */
    int (*node_hook)(tio_gprep *x, size_t j, void *ctx);
    int (*late_hook)(tio_gprep *x, size_t j, void *ctx);
    void *ctx;
} tio_gprep_opts;

typedef struct tio_gprepped {
    tio_graph g;           /* the prepared graph: arrays owned here, strings borrowed */
    size_t nc;             /* the container's tensor count: extra tensor k is nc + k */
    tio_tensor **extra;    /* tensors computed here (folded weights, constants) */
    size_t nextra, extra_cap;
    uint8_t *dropped;      /* per container tensor: no longer used after folding */
    void *arena;           /* everything else allocated here */
} tio_gprepped;

/* Prepares graph src of container c (a root graph; its subgraphs are not
 * taken). On failure p is freed. */
int tio__gprep(const tio_container *c, const tio_graph *src, const tio_gprep_opts *o,
               tio_gprepped *p, tio_error *err);
void tio__gprep_free(tio_gprepped *p);

/* Tensor idx of the prepared graph: a container tensor or an extra one. */
const tio_tensor *tio__gprep_tensor(const tio_gprepped *p, const tio_container *c, int64_t idx);

/* --- for the hooks (x: the preparation; n: one of its nodes) */

/* Node j (its inputs as they stand). */
tio_gnode *tio__gp_node(tio_gprep *x, size_t j);
/* Value v's inferred static shape: false when unknown. */
bool tio__gp_shape(const tio_gprep *x, int64_t v, int *rank, const int64_t **dims);
/* Value v's constant tensor (dense, with data), or NULL. */
const tio_tensor *tio__gp_const(const tio_gprep *x, int64_t v);
/* The constant ints of input k of n (attribute `name` first when given). */
bool tio__gp_const_ints(const tio_gprep *x, const tio_gnode *n, size_t k, const char *name,
                        int64_t *out, size_t max, size_t *cnt);
/* An int64/int32 tensor's integers, at most max. */
bool tio__gp_ld_ints(const tio_tensor *t, int64_t *out, size_t max, size_t *cnt);
/* Whether n is ONNX's op (default domain). */
bool tio__gp_op_is(const tio_gnode *n, const char *op);
/* Attribute `name` of n (ONNX's name or rten's for the same), or NULL. */
const tio_gattr *tio__gp_attr(const tio_gnode *n, const char *name);
int64_t tio__gp_attr_i(const tio_gnode *n, const char *name, int64_t dflt);
/* Attributes set (replaced) or removed. */
int tio__gp_set_i(tio_gprep *x, tio_gnode *n, const char *name, int64_t v);
int tio__gp_set_ints(tio_gprep *x, tio_gnode *n, const char *name, const int64_t *v, size_t cnt);
int tio__gp_del_attr(tio_gprep *x, tio_gnode *n, const char *name);
/* Input k of n becomes a new constant (dt, shape; data viewed, so it must
 * outlive the result: the source's or the arena's), named as the value it
 * replaces: that value itself when n is its only reader, else a new one. */
int tio__gp_const_input(tio_gprep *x, tio_gnode *n, size_t k, tio_dtype dt, int rank,
                        const int64_t *shape, const void *data, size_t nbytes);

#endif /* TIO_GRAPH_PREP_H */
