/*
 * Model graph internals, shared by the graph module and the format modules
 * that read and write graphs. Not installed.
 */
#ifndef TIO_GRAPH_H
#define TIO_GRAPH_H

#include "core/internal.h"

typedef struct tio_gvalue {
    char *name;     /* NULL when unnamed */
    tio_dim *dims;  /* rank entries; dims[i].name owned */
    int64_t tensor; /* container tensor index or -1 */
    char *type;     /* not a tensor of a tio_dtype: its type text (graph/types.h) */
    tio_dtype dtype;
    int32_t rank;   /* -1 unknown (at most TIO_GRAPH_API_MAX_RANK or max_rank) */
} tio_gvalue;

typedef struct tio_gattr {
    char *name;
    tio_attr_type type;
    int64_t i;
    double f;
    char *s;
    size_t count;
    int64_t *ints;
    double *floats;
    char **strings;
    tio_graph *graph;
    tio_graph **graphs; /* GRAPHS: count subgraphs (TENSORS keep indices in ints) */
} tio_gattr;

typedef struct tio_gnode {
    char *name;
    char *op;
    char *native_op;  /* NULL = op */
    int64_t native_id;
    int64_t *inputs;
    size_t input_count;
    int64_t *outputs;
    size_t output_count;
    tio_gattr *attrs;
    size_t attr_count, attr_cap;
    /* Format-private: the attribute-table code the source used (rten: the
     * OperatorAttrs union tag; -1 = none recorded). */
    int64_t native_attrs;
    /* Set by a reader when part of this node could not be decoded (a table or
     * field from a newer schema): writers must refuse to re-encode it rather
     * than drop it. The text says what. */
    char *opaque;
    char *domain; /* NULL = the default ONNX domain */
} tio_gnode;

struct tio_gchunk;
struct tio_graph {
    tio_container *c;    /* owner */
    tio_graph *parent;   /* NULL for the root */
    tio_graph *root;     /* the root (itself for the root) */
    struct tio_gchunk *chunks; /* the root's: the arena of the tree (newest first) */
    char *native_format; /* NULL if built through the API */
    tio_gvalue *values;
    size_t value_count, value_cap;
    /* the values by name (tio_graph_find_value; src/core/names.c), made by
     * its first find, or NULL; a copy of the struct sets its own to NULL */
    tio__names_lazy names;
    /* which values are captures (tio__graph_is_capture), made by its first
     * call, dropped by a change of the captures; a copy of the
     * struct sets its own to NULL */
    _Atomic(struct tio_gcaps *) caps;
    tio_gnode *nodes;
    size_t node_count, node_cap;
    int64_t *inputs, *outputs, *captures;
    size_t input_count, output_count, capture_count;
    tio_kv meta;
    /* Set by a reader when part of the graph outside any node could not be
     * decoded (fields of a newer schema in graph-level tables): writers must
     * refuse to re-encode the graph rather than drop them. */
    char *opaque;
    tio_graph **subgraphs; /* owned */
    size_t sub_count, sub_cap;
    /* A subgraph: whether a GRAPH attribute of the parent refers to it yet
     * (each subgraph is used by at most one attribute). */
    bool attached;
    /* opset_import: domains ("" = ONNX) and versions */
    char **opset_domains;
    int64_t *opset_versions;
    size_t opset_count;
    /* The root's: successful calls of the public mutators (tio_graph_add_*,
     * _set_*, _meta_set, _new_subgraph) on any graph of the tree, so that a
     * writer can tell a graph edited since it was read. */
    uint64_t edits;
};

/* The format the graph was read from (tio_graph.native_format): its own,
 * else its nearest enclosing graph's. Readers set it on the root only, and a
 * subgraph is read by the same reader as its root, so a writer asking about a
 * subgraph gets the tree's answer (asking the subgraph's own field said "built
 * through the API" for every subgraph of a file). NULL if built. */
const char *tio__graph_native(const tio_graph *g);
/* Whether tio__graph_native(g) is `format`. */
bool tio__graph_native_is(const tio_graph *g, const char *format);
/* Appends an opset for `domain`, which the caller knows g does not list yet
 * (a reader with an index of its own: tio_graph_set_opset searches them). */
int tio__graph_opset_append(tio_graph *g, const char *domain, int64_t version, tio_error *err);
/* tio_graph_add_attr for an attribute whose name the caller knows the node
 * does not have yet (a reader with an index of its own: the public call
 * compares it with every attribute the node has). */
int tio__graph_add_attr_new(tio_graph *g, size_t node, const tio_attr *a, tio_error *err);
/* Whether value v is one of g's captures, O(1) after the first call (which
 * marks them all); thread-safe for readers. */
bool tio__graph_is_capture(const tio_graph *g, int64_t v);
/* Frees g's marks of its captures (a copy of a graph, tio__graph_free). */
void tio__graph_caps_free(tio_graph *g);

/* Frees a graph and its subgraphs (the root is freed by the container). */
void tio__graph_free(tio_graph *g);

/* The arena of a graph tree. The strings and arrays a value, node or
 * attribute holds (names, op, domain, opaque, inputs, outputs, dims and
 * their names, attribute s/ints/floats/strings/graphs) come from
 * tio__galloc, or from malloc() where a reader builds one itself; either
 * kind is released with tio__gfree (arena memory is freed with the root).
 * So is a node's attrs array (grown with tio__grealloc). The arrays of the
 * graph itself (values, nodes, inputs, outputs, ...) stay malloc()ed. */
void *tio__galloc(tio_graph *g, size_t n);
char *tio__gstrdup(tio_graph *g, const char *s);
void tio__gfree(const tio_graph *g, void *p);
/* A copy of p's first min(old, n) bytes in n bytes of the arena; p released. */
void *tio__grealloc(tio_graph *g, void *p, size_t old, size_t n);
/* Releases what a node holds (not the node). */
void tio__gnode_clear(const tio_graph *g, tio_gnode *n);
/* Releases n attributes and the array a. */
void tio__gattrs_free(const tio_graph *g, tio_gattr *a, size_t n);

/* Marks node i opaque with a message (see tio_gnode.opaque). */
int tio__graph_set_opaque(tio_graph *g, size_t node, const char *why, tio_error *err);

/* A sanity bound on the rank of a value added through the API (decoders
 * apply tio_limits.max_rank first). */
#define TIO_GRAPH_API_MAX_RANK 4096
/* How deep a value's type may nest (seq(optional(seq(...)))). */
#define TIO_GRAPH_TYPE_MAX_DEPTH 16

/* Marks the graph opaque (see tio_graph.opaque); the first reason is kept. */
int tio__graph_set_graph_opaque(tio_graph *g, const char *why, tio_error *err);

/* Creates the graph objects' storage with room for the given counts
 * (a hint; may be 0). */
int tio__graph_reserve(tio_graph *g, size_t values, size_t nodes, tio_error *err);

/* Whether model metadata `key` is another model format's own field: what
 * that format's reader set from the file's structure ("onnx.ir_version",
 * "onnx.producer_name", "tmfile.graph_layout"), not the user's metadata.
 * A writer of format `own` ("rten", "tmfile") drops those of the other
 * formats without TIO_SAVE_DROP_METADATA: converting an ONNX model to a
 * tmfile loses nothing a user wrote. User metadata (ONNX metadata_props,
 * under their own keys) still needs the flag. */
bool tio__graph_meta_foreign(const char *key, const char *own);

/* TIO_E_UNSUPPORTED naming the first value of g (or of a subgraph) whose
 * type is not a tensor of a tio_dtype (tio_gvalue.type), or the first TYPE
 * attribute, which format fmt cannot write; TIO_OK when there is none. */
int tio__graph_check_tensors(const tio_graph *g, const char *fmt, tio_error *err);

/* Marks, for each of the container's n tensors, how g and its subgraphs
 * hold it: mark[t] |= 1 where a value holds it (an initializer), |= 2 where
 * a TENSOR or TENSORS attribute does (a Constant's value). mark is zeroed
 * by the caller. The recursion follows the GRAPH attributes (a tree read
 * within tio_limits.max_depth). */
void tio__graph_mark_tensors(const tio_graph *g, uint8_t *mark, size_t n);

/* Removes Transpose pairs that cancel (src/graph/layout.c): directly, and
 * across a chain of one-input elementwise operators (each read once), which
 * then run in the first Transpose's input layout. A graph output keeps its
 * value. *removed: the nodes removed. Only for a root graph without
 * subgraphs (others are left as they are). Errors: memory. */
int tio__graph_fold_transposes(tio_graph *g, size_t *removed, tio_error *err);

#endif /* TIO_GRAPH_H */
