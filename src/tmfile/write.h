/*
 * Tengine tmfile writing, the parts shared by write.c (the file: order,
 * numbering, bytes) and lower.c (the operators of graphs from other formats
 * lowered to Tengine's). Not installed.
 */
#ifndef TIO_TMFILE_WRITE_H
#define TIO_TMFILE_WRITE_H

#include "core/internal.h"
#include "graph/graph.h"
#include "tmfile/opmap.h"
#include "tmfile/prep.h"
#include "tmfile/tmfile.h"

/* internal linkage names: the functions below are shared by the two files */
#define tw_lb_text tio__tmw_lb_text
#define tw_attr tio__tmw_attr
#define tw_field tio__tmw_field
#define tw_set_i tio__tmw_set_i
#define tw_set_f tio__tmw_set_f
#define tw_set_ints tio__tmw_set_ints
#define tw_use_op tio__tmw_use_op
#define tw_ctensor tio__tmw_ctensor
#define tw_foreign tio__tmw_foreign

typedef struct tw_pv {
    bool present;
    int64_t i;
    double f;
    const int64_t *ints;
    const double *floats;
    size_t count;
    const char *s;
} tw_pv;

#define TW_MAXF 32

typedef struct tw_node {
    const tio_gnode *gn;   /* NULL when synthesized */
    int64_t sval;          /* a synthesized node: its output value */
    const char *name;
    int idx;               /* lite operator index; -1: kept by number (code) */
    uint32_t code;         /* the code in the table written */
    uint32_t op_ver;
    uint8_t dyn;
    const tm_pdef *pd;
    unsigned nf;
    tw_pv *pv;             /* nf values (npv allocated), NULL without a param struct */
    unsigned npv;
    const int64_t *raw;    /* tm2_param words */
    size_t nraw;
    bool has_param;
    /* per-output tensor facts (tm2_* attributes), NULL = the defaults */
    const int64_t *layouts, *types, *bufsizes, *qcount, *qzp, *qwidth;
    const double *qscale;
    int64_t *own;          /* converted values this node owns */
    int64_t *ins, *outs;   /* tensor indices */
    size_t nin, nout;
} tw_node;

typedef struct tw_tensor {
    int64_t value;
    const char *name;
    int64_t rank;          /* -1: no dims vector */
    int32_t dims[TM_MAX_DIMS];
    int32_t dcode, layout, type;
    size_t nq;
    const double *qscale;
    const int64_t *qzp, *qwidth;
    int64_t ct;            /* container tensor, or -1 */
    uint32_t bufsize;
} tw_tensor;

typedef struct tw {
    tio_write_plan *plan;
    const tio_container *c;
    const tio_graph *g;
    int old;
    bool native;
    int32_t orig, subf, glayout, mlayout;
    uint32_t sid, op_ver;
    const char *mname, *sname;
    tw_node *nodes;
    size_t nn;
    tw_tensor *t;
    size_t nt;
    int64_t *vmap;         /* value -> tensor index, or -1 */
    uint32_t *innodes, *outnodes;
    size_t nin, nout;
    uint32_t *offs;        /* scratch: node/tensor/buffer offsets */
    bool nomem;            /* an allocation in tw_use_op failed */
    /* a tmfile graph in ONNX form, lowered to Tengine's fields: the graph
     * written is `view` (the source's values, these nodes) */
    tio_graph view;
    tio_gnode *vnodes;     /* shallow copies; attrs owned when vown[j] */
    uint8_t *vown;
    size_t nvn;
    uint8_t *ghost;        /* per value: a Conv's output before its fused Relu */
    /* the nodes whose operator tmfile has no lowering for: one error lists them all */
    bool unk_hit;          /* tw_foreign's last refusal was "no operator" */
    size_t nunk, unk_shown;
    size_t unk_len;
    char unk[150];         /* "'name', ...": fits in a tio_error message */
    size_t ut_len;
    bool ut_full;
    char utypes[110];      /* "Op, Op2": each op type once */
    /* a graph from another format, prepared for lowering (tmfile/prep.c):
     * tensors past the container's are the prep's */
    tm_prep prep;
    bool prepped;
} tw;


/* What a message names: a node of the file, a node of the graph or a value.
 * Formatted on first use, since only a failing check needs it (formatting one
 * for every node and value was a measurable part of writing a model with many
 * constants). */
typedef struct tw_lb {
    const tw_node *n;     /* "node 3 ('conv1', Conv)": a node of the file, j its index */
    const tio_gnode *gn;  /* else a node of the graph, j its index */
    const char *vname;    /* else value j (vname may be NULL) */
    size_t j;
    bool done;
    char buf[160];
} tw_lb;


/* The label's text (formatted on first use). */
const char *tw_lb_text(tw_lb *l);
/* Attribute `name` of n, marking it used. */
const tio_gattr *tw_attr(const tio_gnode *n, const char *name, uint8_t *used);
/* The index of field `name` in n's param struct, or -1. */
int tw_field(const tw_node *n, const char *name);
/* Sets a field of n's param struct (ignored when the struct has none). */
void tw_set_i(tw_node *n, const char *name, int64_t v);
void tw_set_f(tw_node *n, const char *name, double v);
void tw_set_ints(tw_node *n, const char *name, const int64_t *v, size_t cnt);
/* Selects n's operator (lite index) and its param struct. */
void tw_use_op(tw *w, tw_node *n, int idx);
/* Tensor idx of the graph written (the container's, or one the prep made). */
const tio_tensor *tw_ctensor(const tw *w, int64_t idx);
/* Lowers node n of a graph from another format (ONNX names) to a Tengine
 * operator and its params (lower.c); sets w->unk_hit when tmfile has no
 * operator for it. */
int tw_foreign(tw *w, tw_node *n, tw_lb *lbl, uint8_t *used, tio_error *err);

#endif /* TIO_TMFILE_WRITE_H */
