/*
 * Value types other than a tensor of a tio_dtype (tio_value_info.type): the
 * text notation (src/graph/types.c) and its parsed form, for the readers
 * that make such types (ONNX) and the writers that write them. Not
 * installed.
 */
#ifndef TIO_GRAPH_TYPES_H
#define TIO_GRAPH_TYPES_H

#include "core/internal.h"
#include "graph/graph.h"

enum { TIO_GT_TENSOR = 1, TIO_GT_SPARSE, TIO_GT_SEQ, TIO_GT_OPTIONAL, TIO_GT_MAP };

typedef struct tio_gdim {
    int64_t value; /* -1: unknown or symbolic */
    char *name;    /* symbolic (malloc'd), or NULL */
} tio_gdim;

typedef struct tio_gtype {
    int kind;               /* TIO_GT_* */
    int elem;               /* tensor, sparse: the element; map: the key (ONNX codes) */
    int64_t rank;           /* tensor, sparse: -1 unknown */
    tio_gdim *dims;
    struct tio_gtype *inner; /* seq, optional: the element type; map: the value type */
} tio_gtype;

/* Parses type text s (nested at most max_depth deep) into *out (free with
 * tio__gtype_free); -1 with *why and the byte offset *at on bad text. */
int tio__gtype_parse(const char *s, unsigned max_depth, tio_gtype **out, const char **why,
                     size_t *at);
void tio__gtype_free(tio_gtype *t);
/* Appends t's canonical text. */
void tio__gtype_text_put(tio_buf *b, const tio_gtype *t);
/* The name of ONNX element type code (1 float ... 23 float4e2m1), or NULL. */
const char *tio__gtype_elem_name(int code);

#endif /* TIO_GRAPH_TYPES_H */
