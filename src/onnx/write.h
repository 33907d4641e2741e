/* What the ONNX writer's two files share (src/onnx/write.c: the model,
 * graphs, nodes, tensors; src/onnx/write_opset.c: writing at another opset). */
#ifndef TIO_ONNX_WRITE_H
#define TIO_ONNX_WRITE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "graph/graph.h"
#include "graph/types.h"
#include "onnx/onnx.h"
#include "protobuf/pb.h"
#include "tmfile/tmfile.h"

typedef struct ox_names {
    const char **slot; /* open addressing, NULL = empty */
    size_t cap;
    const struct ox_names *parent;
} ox_names;

typedef struct ox_writer {
    tio_write_plan *plan;
    const tio_container *c;
    /* external data (format option external_data=NAME): initializers'
     * bytes go to NAME beside the model, at offsets fixed in the sizing pass */
    const char *ext_name;
    FILE *ext;          /* the side file's temporary, in the writing pass */
    uint64_t *ext_off;  /* per tensor: offset, or UINT64_MAX when not placed */
    uint8_t *ext_done;  /* per tensor: written in this pass */
    uint64_t ext_size;
    int64_t opset; /* the default-domain opset written (ox_choose_opset) */
    /* The graph was read from ONNX: it is written as it is (no int64
     * widening or Cast, no attribute left out), so that ONNX -> ONNX keeps
     * every tensor's dtype and every attribute. The fixes below are for
     * graphs raised from other formats (rten's int32 shapes). */
    bool faithful;
    /* opset=N was asked: nodes are written in that opset's form (attributes
     * to inputs and back, Softmax's axis), from src_opset's */
    bool retarget;
    int64_t src_opset;
    /* the graph was read from a tmfile: its tm2_* storage attributes are
     * left out, its other tmfile facts refused */
    bool from_tmfile;
    /* set by ox_put_attr for the graph it writes next: a Loop's body (its
     * signature's types, ox_signature_dtype) */
    bool loop_body;
} ox_writer;

typedef struct ox_fix {
    uint8_t *widen;  /* an int32 constant whose every use requires int64: written as int64 */
    uint8_t *cast;   /* an int32 value some int64-only input uses (OX_TO_INT64) or a
                        condition (OX_TO_BOOL): a Cast first */
    uint8_t *casted; /* those Casts written (in this pass) */
    uint8_t *nohint; /* its recorded int32 type may not be ONNX's: no value_info */
    int64_t *producer; /* the node that outputs the value, or -1 */
    uint8_t *gin;      /* a graph input (ox_const_tensor: not fixed) */
    /* ONNX types it int64 whatever the graph records (int32, or nothing):
     * an always-int64 output (Shape), or one that a type parameter binds
     * to such a value (Gather of a Shape, Add of that, ...) */
    uint8_t *is64;
    /* per node input, from first[j]: an int32 value that a type parameter
     * binds to an int64 one (Add's B when A is a Shape's): int64 there */
    uint8_t *bound64;
    size_t *first;
    /* the graph's value names: the names the writer makes (a Cast's output,
     * an attribute's Constant) are kept clear of them */
    ox_names taken;
    /* per node: a Constant whose every use becomes an attribute at the
     * written opset: not written (NULL: none) */
    uint8_t *drop;
} ox_fix;

typedef struct ox_form {
    size_t nin;           /* inputs written */
    uint8_t cut[8];       /* input k (< 8) is an attribute at this opset */
    char *added[8];       /* input k is this Constant's output (owned) */
    uint8_t *skip;        /* per attribute of the node: not written */
    tio_gattr extra[8];   /* attributes written after the node's own */
    size_t nextra;
    bool remap;           /* inputs moved: written input k is source input src[k] */
    int8_t src[8];        /* (-1: none, "" unless added[k]) */
} ox_form;

int tio__ox_form_plan(ox_writer *w, tio_pb_writer *pw, const tio_graph *g, const ox_fix *f,
                        const tio_gnode *n, ox_form *fm, tio_error *err);
void tio__ox_form_free(ox_form *fm);
int tio__ox_plan_drops(const ox_writer *w, const tio_graph *g, ox_fix *f, tio_error *err);
bool tio__ox_default_domain(const tio_gnode *n);
char *tio__ox_cast_name(const ox_fix *f, const char *name, const char *suffix);
tio_dtype tio__ox_dtype(const ox_writer *w, const tio_graph *g, int64_t v);

#endif
