/*
 * The tmfile reader's state, shared by read.c (the decode) and raise.c (the
 * decoded graph raised to ONNX operators). Not installed.
 */
#ifndef TIO_TMFILE_READ_H
#define TIO_TMFILE_READ_H

#include "core/internal.h"
#include "graph/budget.h"
#include "graph/graph.h"


typedef struct tm_tinfo {
    uint32_t off;      /* the TM2_Tensor */
    int32_t layout, type, dcode;
    uint32_t qvec;     /* offset of the quant params vector, 0 = none */
    uint32_t qcount;
    int64_t bufsize;   /* a constant without data: its buffer size; else -1 */
    uint32_t bid;      /* a constant's buffer_id */
    bool cst;          /* a constant (its buffer read by tm_buffers) */
    int64_t producer;  /* first node that outputs it, or -1 */
} tm_tinfo;

typedef struct tm_reader {
    tio_read_ctx *ctx;
    const uint8_t *d;
    size_t size;
    int old;           /* the old C++ layout and operator table */
    int32_t graph_layout;
    uint32_t op_ver;   /* the op_ver of node 0: other values become attributes */
    uint64_t objects;
    uint64_t budget;   /* min(max_objects, 16 per input byte + 4096) */
    tio_budget mem;    /* the heap the decode takes, estimated (graph/budget.h) */
    tio_graph *g;
    tm_tinfo *t;
    size_t nt;
    size_t nconst_zero;
    /* The object being decoded, for messages: "KIND I ('NAME'): SFX N". Its
     * label is made only when a message needs it (tm_cur), not for every
     * tensor and node. */
    const char *cur_kind;
    size_t cur_i;
    const char *cur_name; /* or NULL */
    const char *cur_sfx;  /* or NULL */
    int64_t cur_n;        /* or -1 */
    char *scratch;        /* the current tensor's or node's name (tm_name) */
    size_t scratch_cap;
    tio_preads *pre;      /* the TM2_Buffer structs read ahead, or NULL */
    int32_t *nop;         /* each node's operator table index (-1 none), for
                             tm_output_attrs after tm_buffers */
} tm_reader;

/* Charges heap the decode is about to take. Structs, vectors and strings
 * may be shared, and each reference is copied (see graph/budget.h). */
static inline int tm_mem(tm_reader *r, uint64_t bytes, int64_t off, tio_error *err) {
    return tio__budget_take(&r->mem, bytes, off, err);
}

/* The decoded graph raised to ONNX semantics (raise.c; docs/formats/tmfile.md):
 * plain Const / InputOp nodes become constants and graph inputs, every node
 * the mapping table knows gets its ONNX op and attributes. */
int tio__tmfile_raise_graph(tm_reader *r, tio_error *err);

#endif
