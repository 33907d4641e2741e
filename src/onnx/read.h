/* What the ONNX reader's two files share (src/onnx/read.c: models, graphs,
 * nodes, attributes; src/onnx/read_tensor.c: TensorProto, SparseTensorProto
 * and a bare TensorProto file). */
#ifndef TIO_ONNX_READ_H
#define TIO_ONNX_READ_H

#include "graph/budget.h"
#include "onnx/onnx.h"
#include "onnx/schema.h"

typedef struct ox_reader {
    tio_read_ctx *ctx;
    const char *fmt; /* the format named in messages: "onnx", or a bare
                        TensorProto's (tio__onnx_read_tensorproto) */
    uint64_t objects, max_objects;
    tio_budget mem;
} ox_reader;

static inline int64_t ox_off(const tio_pb_reader *rd, size_t pos) { return (int64_t)(rd->base + pos); }

static inline int ox_count(ox_reader *r, uint64_t n, int64_t off, tio_error *err) {
    return tio__objects_take(&r->objects, n, r->max_objects, r->fmt, off,
                             "nodes, values, attributes, dims",
                             "and one per byte of input + 4096", err);
}

static inline int ox_mem(ox_reader *r, uint64_t bytes, int64_t off, tio_error *err) {
    return tio__budget_take(&r->mem, bytes, off, err);
}

int tio__ox_str(ox_reader *r, const tio_pb_reader *rd, const tio_pb_field *f,
                const char *what, char **out, tio_error *err);
void tio__ox_reader_init(ox_reader *r, tio_read_ctx *ctx, const char *fmt);
/* A StringStringEntryProto (field f of m): its key and value as new strings
 * (NULL when absent; the caller frees both, on failure too). */
int tio__ox_entry(ox_reader *r, const tio_pb_reader *m, const tio_pb_field *f, const char *what,
                  char **k, char **v, tio_error *err);
/* A TensorProto into a container tensor (*index: its index); `name`
 * overrides the tensor's own (Constant outputs). */
int tio__ox_tensor(ox_reader *r, const tio_pb_reader *rd, const char *name, const char *lbl,
                   int64_t *index, tio_error *err);
/* A SparseTensorProto into a COO container tensor, named `name` or as its
 * values. */
int tio__ox_sparse(ox_reader *r, const tio_pb_reader *sp, const char *name, const char *lbl,
                   int64_t *index, tio_error *err);

#endif
