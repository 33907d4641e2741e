/*
 * TensorFlow Lite (.tflite) writing: the in-memory model the serialiser
 * (src/tflite/write.c) writes, filled by one of two paths:
 *   - a .tflite read by tensio (the source model, verified at open, walked
 *     again through the schema data: src/formats/tflite.c), and
 *   - a graph from another format in ONNX semantics, lowered to TFLite's
 *     operators (tio__tfl_lower, src/tflite/lower.c).
 * Not installed.
 *
 * How a lowering fills the model (tfl_wmodel):
 *   1. tio__tfl_w_init(m). Everything the model points to either outlives the
 *      write (the container's bytes, static strings) or is allocated in the
 *      model's arena (tio__tfl_w_alloc / tio__tfl_w_strdup: freed with it).
 *   2. Buffers: tio__tfl_w_buffer() with a container tensor (its bytes are
 *      streamed through the sink at write time, never copied: the plan's
 *      conversion applies) or with bytes the lowering made (arena: small
 *      ones), or tio__tfl_w_buffer_gen() for bytes made while the file is
 *      written (weights permuted to OHWI on the way: never held whole). Buffer 0
 *      is the empty sentinel that TFLite models start with: tio__tfl_w_init
 *      adds it, so a tensor with buffer 0 has no data.
 *   3. Operator codes: tio__tfl_w_code() (finds or adds (builtin, custom,
 *      version); the writer writes deprecated_builtin_code as TensorFlow
 *      does: the code when < 127, else 127).
 *   4. A subgraph: tio__tfl_w_subgraph(); its tensors with tio__tfl_w_tensor()
 *      (returns the tensor index), its operators with tio__tfl_w_op();
 *      inputs/outputs as index arrays (arena) set on the subgraph.
 *   5. Builtin options: op->opt_type is the BuiltinOptions member (tag,
 *      TFL_BuiltinOptions_*) and op->opts the (field id, value) pairs of that
 *      member's table, in any order; tio__tfl_w_opt_i / _f / _ints set one by
 *      field name through the schema data (src/tflite/schema.c), so the kind
 *      and range are the schema's. BuiltinOptions2 likewise (opt2_type,
 *      opts2). A value equal to the schema default is not written (as
 *      TensorFlow's builder omits it).
 *   6. Signature defs, metadata, description, version (3) as wanted.
 * Then tio__tfl_w_serialise() writes it; tio__tfl_w_free() frees it.
 * The format's write (src/formats/tflite.c) calls tio__tfl_lower(plan, g, m)
 * with m initialised, for a container graph that is neither a .tflite read
 * by tensio (rewritten from its source) nor a graph without nodes (a model of
 * constants, tio__tfl_w_constants); it serialises m when the lowering
 * returns TIO_OK. Ops are copied as given: set debug_metadata_index to -1
 * (none) in a zero-initialised tfl_wop, tensors' nsig to -1 (no
 * shape_signature).
 * The serialiser checks the model (indices in range, option values in their
 * field's range, buffer sizes against shapes for container tensors) and
 * fails with TIO_E_ARGUMENT / TIO_E_UNSUPPORTED naming what is wrong.
 */
#ifndef TIO_TFLITE_WRITE_H
#define TIO_TFLITE_WRITE_H

#include "core/internal.h"
#include "flatbuf/flatbuf.h"
#include "graph/graph.h"
#include "tflite/schema.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One field of an options table: field id (index in the schema table's
 * fields), its schema kind, and the value. */
typedef struct tfl_wopt {
    uint16_t id;
    uint8_t kind;          /* tio_fb_kind of the field (a scalar kind, TIO_FB_STRING,
                              TIO_FB_VECTOR) */
    uint8_t elem;          /* TIO_FB_VECTOR: the element kind */
    int64_t i;             /* integer and bool scalars (u64 bit-cast) */
    double f;              /* float scalars */
    const int64_t *ints;   /* vector of integers / bools (count) */
    const double *floats;  /* vector of floats (count) */
    const char *s;         /* string (count bytes) */
    size_t count;
} tfl_wopt;

/* Quantization parameters of a tensor (QuantizationParameters). */
typedef struct tfl_wquant {
    const float *min, *max;
    size_t nmin, nmax;
    const float *scale;
    size_t nscale;
    const int64_t *zero_point;
    size_t nzero_point;
    int32_t quantized_dimension;
    /* details: CustomQuantization bytes (details_type 1), or none */
    const uint8_t *custom;
    size_t ncustom;
    bool has_custom;
} tfl_wquant;

typedef struct tfl_wtensor {
    const char *name;            /* NULL: no name */
    int32_t type;                /* TensorType (TFL_TensorType_*) */
    const int32_t *shape;
    int32_t rank;                /* -1: no shape vector */
    const int32_t *shape_signature;
    int32_t nsig;                /* -1: no shape_signature */
    uint32_t buffer;             /* index into the model's buffers; 0 = no data */
    bool is_variable;
    bool has_rank;               /* Tensor.has_rank (written when true) */
    const tfl_wquant *q;         /* NULL: none */
} tfl_wtensor;

typedef struct tfl_wop {
    uint32_t opcode;             /* index into the model's operator codes */
    const int32_t *inputs;       /* -1 = an absent optional input */
    size_t nin;
    const int32_t *outputs;
    size_t nout;
    const int32_t *intermediates;
    size_t ninter;
    const uint8_t *mutating;     /* mutating_variable_inputs (bools), or NULL */
    size_t nmutating;
    uint8_t opt_type;            /* BuiltinOptions tag, 0 = NONE */
    tfl_wopt *opts;
    size_t nopts, capopts;
    uint8_t opt2_type;           /* BuiltinOptions2 tag, 0 = NONE */
    tfl_wopt *opts2;
    size_t nopts2, capopts2;
    const uint8_t *custom;       /* custom_options bytes, or NULL */
    size_t ncustom;
    bool has_custom;             /* custom options present (may be 0 bytes) */
    bool large_custom;           /* write them as large_custom_options (after the model,
                                    as TensorFlow does for models past 2 GiB) */
    int32_t custom_format;       /* CustomOptionsFormat (0 FLEXBUFFERS) */
    int32_t debug_metadata_index; /* -1: none */
} tfl_wop;

typedef struct tfl_wsubgraph {
    const char *name;
    tfl_wtensor *tensors;
    size_t ntensors, captensors;
    tfl_wop *ops;
    size_t nops, capops;
    const int32_t *inputs;
    size_t ninputs;
    const int32_t *outputs;
    size_t noutputs;
    int32_t debug_metadata_index; /* -1: none */
} tfl_wsubgraph;

typedef struct tfl_wcode {
    int32_t builtin;             /* BuiltinOperator */
    int8_t deprecated;           /* deprecated_builtin_code as written (see
                                    tio__tfl_w_code: min(builtin, 127)) */
    const char *custom;          /* custom_code, or NULL */
    int32_t version;             /* >= 1 */
} tfl_wcode;

typedef struct tfl_wbuffer {
    int64_t tensor;              /* plan/container tensor whose bytes these are, or -1 */
    const uint8_t *data;         /* else these bytes (outlive the write), or NULL */
    size_t size;                 /* bytes (of the tensor as the plan writes it) */
    bool force_data;             /* write an empty `data` vector (as read) */
    /* else bytes made while the file is written (a lowering's weights
     * permuted on the way, never held whole): gen writes exactly `size`
     * bytes through the sink (tio__sink_write); tio__tfl_w_buffer_gen */
    int (*gen)(void *gen_ctx, tio_sink *s, size_t size, tio_error *err);
    void *gen_ctx;
} tfl_wbuffer;

typedef struct tfl_wmetadata {
    const char *name;
    uint32_t buffer;
} tfl_wmetadata;

typedef struct tfl_wtmap {       /* SignatureDef TensorMap */
    const char *name;
    uint32_t tensor;
} tfl_wtmap;

typedef struct tfl_wsig {
    const char *key;
    uint32_t subgraph;
    const tfl_wtmap *inputs, *outputs;
    size_t ninputs, noutputs;
} tfl_wsig;

typedef struct tfl_wmodel {
    uint32_t version;            /* 3 */
    const char *description;     /* NULL: none */
    tfl_wcode *codes;
    size_t ncodes, capcodes;
    tfl_wbuffer *buffers;
    size_t nbuffers, capbuffers;
    tfl_wsubgraph *subgraphs;
    size_t nsubgraphs, capsubgraphs;
    tfl_wmetadata *metadata;
    size_t nmetadata;
    const int32_t *metadata_buffer; /* Model.metadata_buffer (deprecated), or NULL */
    size_t nmetadata_buffer;
    tfl_wsig *sigs;
    size_t nsigs;
    /* the arena: every block the model allocated */
    void **blocks;
    size_t nblocks, capblocks;
} tfl_wmodel;

/* Starts an empty model (version 3, buffer 0 the empty sentinel). */
int tio__tfl_w_init(tfl_wmodel *m, tio_error *err);
/* Frees the model and its arena. */
void tio__tfl_w_free(tfl_wmodel *m);
/* n zeroed bytes that live as long as the model (NULL: out of memory). */
void *tio__tfl_w_alloc(tfl_wmodel *m, size_t n);
/* A copy of s[0..n) (NUL-terminated) in the arena; NULL: out of memory. */
char *tio__tfl_w_strndup(tfl_wmodel *m, const char *s, size_t n);
/* Whether the version text a[0..an) (to its first NUL) comes before b,
 * as TensorFlow Lite orders runtime versions ("1.5.0" < "1.15.0"). */
bool tio__tfl_runtime_before(const uint8_t *a, size_t an, const char *b);
/* a, b and c (NULL: "") joined, in the arena: the names the writers make
 * ("<name>:float16", "<node>:<what>"); NULL: out of memory. */
char *tio__tfl_w_join(tfl_wmodel *m, const char *a, const char *b, const char *c);

/* Adds a buffer: container tensor `tensor` (>= 0; size = its bytes as the
 * plan writes them), or data[0..size). *idx = its index. */
int tio__tfl_w_buffer(tfl_wmodel *m, int64_t tensor, const uint8_t *data, size_t size,
                      uint32_t *idx, tio_error *err);
/* Adds a buffer of `size` bytes that gen(gen_ctx, sink, size, err) writes when
 * the file is written (checked: exactly size bytes). */
int tio__tfl_w_buffer_gen(tfl_wmodel *m, size_t size,
                          int (*gen)(void *gen_ctx, tio_sink *s, size_t size, tio_error *err),
                          void *gen_ctx, uint32_t *idx, tio_error *err);
/* The index of operator code (builtin, custom, version), added when new.
 * custom is copied. */
/* The version TensorFlow's converter gives operator `op` of subgraph sg
 * (its op_version.cc, for the builtins the lowering writes; others 1), and
 * each operator code raised to the highest version of its operators, never
 * lowered, as the converter's UpdateOpVersion does (src/tflite/opversion.c). */
int32_t tio__tfl_op_version(const tfl_wmodel *m, const tfl_wsubgraph *sg, const tfl_wop *op);
void tio__tfl_w_versions(tfl_wmodel *m);
/* The TensorFlow Lite runtime version that first ran version `version` of
 * builtin `builtin` ("1.14.0"), for the builtins the lowering writes; NULL
 * where TensorFlow's table has none (src/tflite/rtversion.c). */
const char *tio__tfl_runtime_version(int32_t builtin, int32_t version);
/* Sets the model's `min_runtime_version` metadata as TensorFlow's converter
 * does: the latest runtime among its operator codes' versions, in a 16-byte
 * NUL-padded buffer; the entry is added after the container's metadata, or
 * replaces the value of a container's entry of that name. */
int tio__tfl_w_min_runtime(tfl_wmodel *m, tio_error *err);
int tio__tfl_w_code(tfl_wmodel *m, int32_t builtin, const char *custom, int32_t version,
                    uint32_t *idx, tio_error *err);
/* Adds an empty subgraph; *out points to it (valid until the next one). */
int tio__tfl_w_subgraph(tfl_wmodel *m, tfl_wsubgraph **out, tio_error *err);
/* Appends a copy of *t to subgraph sg; *idx = its index. */
int tio__tfl_w_tensor(tfl_wmodel *m, size_t sg, const tfl_wtensor *t, int32_t *idx,
                      tio_error *err);
/* Appends a copy of *op to subgraph sg; *out points to it (valid until the
 * next op of sg), for setting options. */
int tio__tfl_w_op(tfl_wmodel *m, size_t sg, const tfl_wop *op, tfl_wop **out, tio_error *err);

/* Sets builtin option `field` of op (in its opt_type member, or opt2_type
 * when `second`), checked against the schema: the field must exist and take
 * the value's kind (an int for ints, bools and enums; a float; ints/floats
 * arrays for vectors, copied). Errors name the member and the field. */
int tio__tfl_w_opt_i(tfl_wmodel *m, tfl_wop *op, bool second, const char *field, int64_t v,
                     tio_error *err);
int tio__tfl_w_opt_f(tfl_wmodel *m, tfl_wop *op, bool second, const char *field, double v,
                     tio_error *err);
int tio__tfl_w_opt_ints(tfl_wmodel *m, tfl_wop *op, bool second, const char *field,
                        const int64_t *v, size_t n, tio_error *err);
int tio__tfl_w_opt_floats(tfl_wmodel *m, tfl_wop *op, bool second, const char *field,
                          const double *v, size_t n, tio_error *err);
int tio__tfl_w_opt_str(tfl_wmodel *m, tfl_wop *op, bool second, const char *field,
                       const char *s, size_t n, tio_error *err);
/* Appends a raw pair (no lookup): the source-model path. */
int tio__tfl_w_opt_add(tfl_wmodel *m, tfl_wop *op, bool second, const tfl_wopt *o,
                       tio_error *err);

/* The options table of union tag `tag` (second: BuiltinOptions2), or NULL. */
const tio_fb_table *tio__tfl_w_opt_table(unsigned tag, bool second);

/* The TensorType of a tensio dtype, or -1. */
int tio__tfl_type_of(tio_dtype dt);

/* Writes model m as a .tflite through the sink: deterministic bytes; every
 * buffer 16-byte aligned and streamed from its container tensor (the plan's
 * bytes); past 2 GiB of buffers, the Buffer offset/size form after the
 * FlatBuffers model (as TensorFlow writes it). */
int tio__tfl_w_serialise(const tfl_wmodel *m, tio_write_plan *plan, tio_sink *sink,
                         tio_error *err);

/* What the reader keeps of a .tflite (the container's native state, format
 * "tflite"), so that a .tflite -> .tflite save rewrites the source model
 * (src/tflite/rewrite.c): the verified bytes, the container tensor of each
 * subgraph's tensors, and what the container looked like after the read
 * (edits that the model cannot carry are refused). */
typedef struct tfl_native {
    const uint8_t *buf;          /* the model (the container's source: lives as long) */
    size_t len;
    int64_t *ctensor;            /* container tensor of tensor i of subgraph sg
                                    (ctensor[sgbase[sg] + i]), or -1 */
    size_t *sgbase;
    uint32_t nsg;
    size_t ntensors;             /* container tensors after the read */
    const tio_graph *graph;      /* the container's graph after the read and its size */
    size_t gnodes, gvalues;
    uint64_t gedits; /* tio_graph.edits after the raise */
    uint8_t meta_digest[32];     /* tio__tfl_meta_digest after the read */
    tio_fb_blobs blobs;          /* the verifier's byte vectors (buffers' lengths, read
                                    once: tio__fb_bytes) */
} tfl_native;

void tio__tfl_native_free(void *native);
/* SHA-256 over the container's metadata and every tensor's. */
int tio__tfl_meta_digest(const tio_container *c, uint8_t out[32], tio_error *err);
/* Fills m (initialised) from the source model nat and the plan's tensors. */
int tio__tfl_rewrite(const tfl_native *nat, tio_write_plan *plan, tfl_wmodel *m,
                     tio_error *err);

/* A model of constants: one subgraph holding every tensor of the plan (a
 * buffer each, no operators; the graph's outputs that are constants are its
 * outputs), the container's metadata as Model.metadata entries. For a graph
 * without nodes. */
int tio__tfl_w_constants(tio_write_plan *plan, const tio_graph *g, tfl_wmodel *m,
                         tio_error *err);

/* The save's cast (tio_save_options.cast) into TensorFlow Lite: float32
 * weights to float16 only (each DEQUANTIZEd to float32: TensorFlow Lite's
 * float16 quantization); another cast is TIO_E_UNSUPPORTED naming the
 * tensor. *f16: whether the plan casts any tensor. */
int tio__tfl_cast_check(const tio_write_plan *plan, bool *f16, tio_error *err);

/* Lowers graph g (ONNX semantics; not a TFLite native graph) and the plan's
 * tensors to a TFLite model in m (already initialised). src/tflite/lower.c.
 * One error lists every ONNX operator that has no TFLite form. */
int tio__tfl_lower(tio_write_plan *plan, const tio_graph *g, tfl_wmodel *m, tio_error *err);

#endif /* TIO_TFLITE_WRITE_H */
