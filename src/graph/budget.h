/*
 * The memory budget of a model decode (rten, tmfile).
 *
 * A model file may reference one table, vector or string from many places
 * (FlatBuffers tables and strings, tmfile structs and vectors are reached by
 * offset), but the graph API copies what it is given: every reference
 * becomes its own node, value, attribute or name. Counting objects alone
 * does not bound the bytes, so a decoder charges each copy it makes, by an
 * estimate of the heap it takes (the graph's arrays, which grow by doubling,
 * the copied strings and index lists, the container's tensor records), to a
 * budget of TIO_DECODE_MEM_FACTOR x the input + TIO_DECODE_MEM_SLACK
 * (ONNX: TIO_ONNX_DECODE_MEM_FACTOR, below).
 * Past it the decode stops with TIO_E_LIMIT. With TIO_OPEN_COPY's copy of
 * the input, that keeps the decode within docs/security.md's 4 x input +
 * 256 KiB (tests/core/test_memory.c). The estimates follow what the graph
 * and container code allocate; they err on the high side (real models come
 * out 1.0-1.4 x their measured heap). A caller that raises
 * tio_limits.max_objects above its default lifts the budget.
 * Internal; not installed.
 */
#ifndef TIO_GRAPH_BUDGET_H
#define TIO_GRAPH_BUDGET_H

#include "graph/graph.h"

#define TIO_DECODE_MEM_FACTOR 3u
#define TIO_DECODE_MEM_SLACK (192u << 10)
/* ONNX shares nothing, so its budget only stops what decodes to far more
 * than it takes on the wire (a node of a few bytes, an empty string), but a
 * graph whose weights lie elsewhere is all such objects: torchvision's
 * models and a transformer exported by torch.onnx and saved with external
 * data come to 8.6-12.8 x their .onnx by this estimate (the transformer:
 * 11.4 x estimated, 8.7 x measured), which 3 x refused past ~100 KB. 20 x
 * keeps them in with room; the dense bombs of tests/core/test_memory.c
 * (20,000 one-letter nodes: ~33 x) stay out. */
#define TIO_ONNX_DECODE_MEM_FACTOR 20u
/* TensorFlow Lite: its weights are in the file, so real models come far
 * under any budget; it stops references to one table, vector or string
 * multiplying the work and the copies (N operators sharing one of M inputs,
 * N tensors sharing one name or one quantization table of 2,047 floats). The
 * factor is ONNX's: a model of many small constants keeps its room. */
#define TIO_TFLITE_DECODE_MEM_FACTOR 20u
/* What a decode of a plain list of tensors (a SequenceProto file) may add to
 * the budget per tensor for its container record, name and shape: within
 * docs/security.md's 768 bytes per tensor. */
#define TIO_DECODE_MEM_PER_TENSOR 512u

typedef struct tio_budget {
    const char *format; /* for messages */
    const char *why;    /* what makes a file of the format exceed it */
    unsigned factor;
    uint64_t input;     /* input bytes the budget derives from */
    uint64_t used, cap;
} tio_budget;

/* factor x input + TIO_DECODE_MEM_SLACK; `why` ends the message past it. */
static inline void tio__budget_init(tio_budget *b, const char *format, uint64_t input,
                                    unsigned factor, const char *why, const tio_limits *lim) {
    b->format = format;
    b->why = why;
    b->factor = factor;
    b->input = input;
    b->used = 0;
    if (lim->max_objects > TIO_DEFAULT_MAX_OBJECTS ||
        tio__mul64_ovf(input, factor, &b->cap) ||
        tio__add64_ovf(b->cap, TIO_DECODE_MEM_SLACK, &b->cap))
        b->cap = UINT64_MAX;
}

/* Why an rten or tmfile model passes its budget. */
#define TIO_BUDGET_SHARED "tables, vectors or strings are shared by too many references"

/* Charges `bytes`; TIO_E_LIMIT at `offset` once the total passes the cap. */
static inline int tio__budget_take(tio_budget *b, uint64_t bytes, int64_t offset,
                                   tio_error *err) {
    if (!tio__add64_ovf(b->used, bytes, &b->used) && b->used <= b->cap) return TIO_OK;
    return tio__err(err, TIO_E_LIMIT, b->format, offset,
                    "the decoded model would take more than %llu bytes of memory (the "
                    "limit: %u x the %llu-byte input + %u KiB; raising tio_limits."
                    "max_objects lifts it): %s",
                    (unsigned long long)b->cap, b->factor, (unsigned long long)b->input,
                    TIO_DECODE_MEM_SLACK >> 10, b->why);
}

/* Counts n more graph objects against `max`; TIO_E_LIMIT at `offset`
 * past it. `what` lists the objects the format counts, `bound` says how
 * its limit follows the input ("and one per byte of input + 4096"). */
static inline int tio__objects_take(uint64_t *objects, uint64_t n, uint64_t max,
                                    const char *format, int64_t offset, const char *what,
                                    const char *bound, tio_error *err) {
    if (!tio__add64_ovf(*objects, n, objects) && *objects <= max) return TIO_OK;
    return tio__err(err, TIO_E_LIMIT, format, offset,
                    "the model has more graph objects (%s) than the limit of %llu "
                    "(tio_limits.max_objects, %s)",
                    what, (unsigned long long)max, bound);
}

/* Estimated heap bytes of one block (glibc: 8 bytes of header, 16-byte
 * rounding, 32 at least). */
static inline uint64_t tio__cost_block(uint64_t n) { return n < 24 ? 32 : (n + 8 + 15) & ~15ull; }
/* A copied string of n bytes (+ NUL); 0 when absent or empty (not copied). */
static inline uint64_t tio__cost_str(uint64_t n) { return n ? tio__cost_block(n + 1) : 0; }
/* n int64s or doubles, copied into a block of their own. */
static inline uint64_t tio__cost_i64s(uint64_t n) { return n ? tio__cost_block(8 * n) : 0; }
/* One element of an array that grows by doubling (its capacity is at most
 * twice its count). */
static inline uint64_t tio__cost_grown(uint64_t elem) { return 2 * elem; }

/* A node (its slot in the node array and its op name). */
static inline uint64_t tio__cost_node(size_t op_len) {
    return tio__cost_grown(sizeof(tio_gnode)) + tio__cost_str(op_len);
}
/* A value's slot in the value array (reserved or grown). */
static inline uint64_t tio__cost_value(void) { return tio__cost_grown(sizeof(tio_gvalue)); }
/* An attribute without its payload (its slot and its name, and an int's
 * enum label). */
static inline uint64_t tio__cost_attr(size_t name_len, size_t label_len) {
    return tio__cost_grown(sizeof(tio_gattr)) + tio__cost_str(name_len) +
           tio__cost_str(label_len);
}
/* The dims of a value (names charged apart). */
static inline uint64_t tio__cost_dims(uint64_t rank) {
    return rank ? tio__cost_block(rank * sizeof(tio_dim)) : 0;
}
/* A subgraph (its record and its slot in the parent's list). */
static inline uint64_t tio__cost_graph(void) {
    return tio__cost_block(sizeof(tio_graph)) + tio__cost_grown(sizeof(tio_graph *));
}
/* A container tensor record (name and shape included). */
static inline uint64_t tio__cost_tensor(size_t name_len, size_t rank) {
    return tio__cost_grown(sizeof(tio_tensor *)) + tio__cost_block(sizeof(tio_tensor)) +
           (rank > 4 ? tio__cost_i64s(rank) : 0) + tio__cost_str(name_len);
}

#endif /* TIO_GRAPH_BUDGET_H */
