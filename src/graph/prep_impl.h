/*
 * The graph layer's preparation (prep.h): its state and the helpers its two
 * files share (prep.c: the graph edited, the forms, the fusions, the driver;
 * prep_fold.c: static shapes and constant folding). Not for other modules.
 */
#ifndef TIO_GRAPH_PREP_IMPL_H
#define TIO_GRAPH_PREP_IMPL_H

#include "core/internal.h"
#include "graph/prep.h"

#include <stddef.h>

/* at most this many elements are computed when folding a constant */
#define PP_FOLD_MAX 65536u

typedef struct pp_blk {
    struct pp_blk *next;
    max_align_t data[];
} pp_blk;

typedef struct tio_gprep {
    tio_gprepped *p;
    const tio_gprep_opts *o;
    const tio_container *c;
    tio_gvalue *v;
    int *srank;                      /* -1: shape unknown */
    int64_t (*sh)[GP_MAX_DIMS];
    int64_t *before;                 /* a new value: written before this value (-1: end) */
    size_t nv, vcap;
    tio_gnode *n;
    uint8_t *dead;
    size_t nn;
    int64_t *outs;
    size_t nout;
    int64_t *prod;
    size_t *uses;
    uint8_t *idle;                   /* source constants nothing read: kept as they were */
    /* replace_uses in O(1): a value's replacement (-1: none), followed when a
     * node is visited and when the graph is built; whether a value is a graph
     * output; and (for the late fusions) one node reading each value */
    int64_t *alias;
    uint8_t *isout;
    int64_t *cons;
    /* nodes made here (a Slice split into one per axis): xn[k] is emitted
     * right before node xat[k] (nondecreasing) */
    tio_gnode *xn;
    size_t *xat;
    size_t nx, xcap;
    /* the source's value names, sorted once a new name is needed, and the
     * serial number of the last name made */
    const char **names;
    size_t nnames;
    unsigned long serial;
    tio_error *err;
} pp;

/* memory and constants (prep.c) */
void *tio__gp_pa(pp *x, size_t n);
const tio_tensor *tio__gp_pt(const pp *x, int64_t v);
/* A new tensor (the data copied, or viewed when view is set). Its index, or
 * -1 when out of memory. */
int64_t tio__gp_mk_tensor(pp *x, const char *name, tio_dtype dt, int rank, const int64_t *shape,
                          const void *data, size_t nbytes, bool view);
int tio__gp_nomem(pp *x);
/* Value v becomes constant tensor t: its dtype and dims are t's. */
int tio__gp_retensor(pp *x, int64_t v, int64_t t);
const tio_gattr *tio__gp_ga(const tio_gnode *n, const char *name);
const tio_gattr *tio__gp_ga2(const tio_gnode *n, const char *name);
int64_t tio__gp_ga_i(const tio_gnode *n, const char *name, int64_t dflt);
bool tio__gp_is_int(tio_dtype d);
float tio__gp_ldf(const uint8_t *p);
float tio__gp_to_f(double d);
void tio__gp_stf(uint8_t *p, float f);

/* shapes and folding (prep_fold.c) */
bool tio__gp_known(const pp *x, int64_t v);
void tio__gp_set_shape(pp *x, int64_t v, int rank, const int64_t *d);
void tio__gp_copy_shape(pp *x, int64_t to, int64_t from);
/* Static output shapes of node j from its inputs'. */
void tio__gp_infer(pp *x, size_t j);
/* Folds node j when it computes a small constant (shape arithmetic):
 * *folded tells. */
int tio__gp_fold(pp *x, size_t j, bool *folded);
/* A Constant node of value_float(s) / value_int(s) made a constant: *done. */
int tio__gp_const_attr(pp *x, size_t j, bool *done);

#endif /* TIO_GRAPH_PREP_IMPL_H */
