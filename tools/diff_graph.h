/* tensio diff: comparing two model graphs node by node (diff_graph.c). */
#ifndef TENSIO_DIFF_GRAPH_H
#define TENSIO_DIFF_GRAPH_H

#include "cli.h"

#include <stddef.h>
#include <stdint.h>

/* The first differences kept as text (the count goes on). */
#define DIFF_GRAPH_KEEP 20

typedef struct diff_graph_result {
    uint64_t count;              /* differences found */
    char *first[DIFF_GRAPH_KEEP]; /* the first min(count, DIFF_GRAPH_KEEP), malloc'ed */
    size_t nfirst;
    uint64_t defaults;           /* attributes only one side writes, holding the ONNX
                                    default (no difference) */
    int nomem;                   /* an allocation failed (a difference may be missing) */
} diff_graph_result;

/* Compares graph a (of container ca) with graph b: inputs and outputs (name,
 * dtype, shape), then node by node (op, domain, inputs and outputs by their
 * source: graph input k, node i's output j, a constant by its tensor's name;
 * attributes by name: type and value, one that only one side has and that
 * holds its ONNX default counted apart; subgraphs recursively). Either
 * graph may be NULL (a missing graph is one difference unless both are). */
void diff_graph_compare(const tio_container *ca, const tio_graph *a,
                        const tio_container *cb, const tio_graph *b, diff_graph_result *r);
void diff_graph_free(diff_graph_result *r);

/* Names with their indices, sorted by name and then index (qsort with
 * diff_named_cmp): tensors paired by name, a node's attributes found by
 * name. diff_named_first: the first of sorted[0..n) named `name`, or n. */
typedef struct diff_named {
    const char *name;
    size_t index;
} diff_named;
int diff_named_cmp(const void *x, const void *y);
size_t diff_named_first(const diff_named *sorted, size_t n, const char *name);

/* Whether attribute x of node n (of graph g) holds the value ONNX takes when
 * it is absent (a table of common operators' defaults; a Conv's kernel_shape
 * when it is its weight's spatial shape). tensio graph leaves such out. */
int diff_graph_is_default(const tio_graph *g, const tio_node_info *n, const tio_attr *x);

#endif /* TENSIO_DIFF_GRAPH_H */
