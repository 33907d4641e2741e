/*
 * tensio — read, write, validate and convert binary tensor and model containers.
 *
 * This header is the whole public API. Every symbol is prefixed `tio_`.
 *
 * Conventions
 * - Functions that can fail return an `int` status: TIO_OK (0) or one of the
 *   stable TIO_E_* codes below. They take a `tio_error *err` last; it may be
 *   NULL. On failure it is filled with the code, the format, the byte offset
 *   and a message that says what was expected and what was found.
 * - No function aborts, exits or asserts on bad input. There is no global
 *   mutable state: distinct handles may be used from distinct threads.
 * - Threads: a container, tensor or graph may be shared by any number of
 *   threads through the functions that take it as const (getters, views,
 *   tio_tensor_densify, tio_tensor_sha256, tio_check_save, tio_save,
 *   tio_save_memory, tio_message_encode, tio_stream_send): none of them
 *   changes it. A function that takes it non-const (tio_container_add, the
 *   *_set calls, tio_tensor_materialize, the graph builders) needs it to
 *   itself. Hold counts are atomic: tio_container_free may run while a
 *   message or libzmq still holds the container. A stream is used from one
 *   thread at a time (docs/architecture.md, "Threads").
 * - Tensor data handed out by a container opened from a file are views into
 *   the file's mapping; they stay valid until the container is freed.
 * - All multi-byte numbers in tensor data are little-endian.
 * - Option structs (tio_open_options, tio_save_options, ...) gain fields at
 *   their end while the library is 0.x (tio_save_options.cast is the
 *   newest): zero-initialize them ({0}, designated initializers or memset),
 *   and rebuild a program against the header of the library it runs with.
 */
#ifndef TENSIO_H
#define TENSIO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define TIO_API
#elif defined(__GNUC__)
#define TIO_API __attribute__((visibility("default")))
#else
#define TIO_API
#endif

/* ------------------------------------------------------------------ version */

#define TIO_VERSION_MAJOR 0
#define TIO_VERSION_MINOR 1
#define TIO_VERSION_PATCH 0
#define TIO_VERSION_STRING "0.1.0"
/* MAJOR*10000 + MINOR*100 + PATCH */
#define TIO_VERSION_NUMBER \
    (TIO_VERSION_MAJOR * 10000 + TIO_VERSION_MINOR * 100 + TIO_VERSION_PATCH)

/* The version of the library actually linked (may differ from the macros). */
TIO_API unsigned tio_version_number(void);
TIO_API const char *tio_version_string(void);

/* ------------------------------------------------------------------- errors */

/* Stable numeric codes. Values never change; new codes are only appended. */
typedef enum tio_status {
    TIO_OK = 0,
    TIO_E_ARGUMENT = 1,     /* the caller passed something invalid */
    TIO_E_NOMEM = 2,        /* an allocation failed */
    TIO_E_IO = 3,           /* open/read/write/rename failed (errno in message) */
    TIO_E_FORMAT = 4,       /* no format recognises the data / unknown format name */
    TIO_E_TRUNCATED = 5,    /* the data end before a structure does */
    TIO_E_MAGIC = 6,        /* a magic number or signature is wrong */
    TIO_E_BOUNDS = 7,       /* an offset or length points outside the data */
    TIO_E_LIMIT = 8,        /* a count, rank or size exceeds a tio_limits value */
    TIO_E_OVERFLOW = 9,     /* size arithmetic would overflow */
    TIO_E_DTYPE = 10,       /* unknown or unsupported element type */
    TIO_E_CORRUPT = 11,     /* inconsistent structure (sizes disagree, bad index…) */
    TIO_E_UNSUPPORTED = 12, /* valid, but not something this format/version can do */
    TIO_E_LOSSY = 13,       /* writing would lose information; see tio_save_options */
    TIO_E_NOT_FOUND = 14,   /* no such tensor / key */
    TIO_E_INVALID = 15,     /* readable, but violates the format (validation/strict) */
    TIO_E_TIMEOUT = 16,     /* a stream operation did not complete within its timeout */
    TIO_E_TRANSPORT = 17    /* the message transport (libzmq) failed: bind, connect, send… */
} tio_status;

#define TIO_ERROR_MESSAGE_MAX 384

typedef struct tio_error {
    int code;         /* tio_status */
    char format[16];  /* "btf", "tenbin", … or "" when no format applies */
    int64_t offset;   /* byte offset in the input, or -1 */
    char message[TIO_ERROR_MESSAGE_MAX]; /* complete text, e.g.
        "btf: offset 24: record 0: dtype code 10 is not a BTF dtype (expected 0..9)" */
} tio_error;

/* "TIO_OK", "TIO_E_TRUNCATED", … ; "TIO_E_UNKNOWN" for other values. */
TIO_API const char *tio_status_name(int code);
/* A short English description of a code. */
TIO_API const char *tio_status_string(int code);
/* Clears *err to TIO_OK, offset -1, empty strings. */
TIO_API void tio_error_clear(tio_error *err);

/* ------------------------------------------------------------------- dtypes */

typedef enum tio_dtype {
    TIO_DTYPE_INVALID = 0,
    TIO_BOOL = 1,
    TIO_INT8 = 2,
    TIO_INT16 = 3,
    TIO_INT32 = 4,
    TIO_INT64 = 5,
    TIO_UINT8 = 6,
    TIO_UINT16 = 7,
    TIO_UINT32 = 8,
    TIO_UINT64 = 9,
    TIO_FLOAT16 = 10,
    TIO_BFLOAT16 = 11,
    TIO_FLOAT32 = 12,
    TIO_FLOAT64 = 13,
    TIO_FLOAT8_E4M3FN = 14, /* 8-bit float: 4 exponent bits (bias 7), 3 mantissa
                               bits, no infinities, NaN = S.1111.111 (OCP E4M3;
                               safetensors F8_E4M3, ml_dtypes float8_e4m3fn) */
    TIO_FLOAT8_E5M2 = 15,   /* 8-bit float: 5 exponent bits (bias 15), 2 mantissa
                               bits, IEEE-like infinities and NaNs (the upper byte of
                               a float16; safetensors F8_E5M2) */
    TIO_COMPLEX64 = 16,     /* a float32 real part then a float32 imaginary part
                               (NumPy complex64, C float complex, torch.complex64) */
    TIO_COMPLEX128 = 17,    /* two float64s, real then imaginary (complex128) */
    TIO_STRING = 18         /* byte strings of any length (ONNX STRING, NumPy S/U):
                               see "string tensors" below */
} tio_dtype;
#define TIO_DTYPE_COUNT 19

/* NumPy names ("float32", "bool", "complex64"; "bfloat16", "float8_e4m3fn",
 * "float8_e5m2" as ml_dtypes); NULL if invalid. */
TIO_API const char *tio_dtype_name(tio_dtype dtype);
/* Inverse of tio_dtype_name; TIO_DTYPE_INVALID if unknown. */
TIO_API tio_dtype tio_dtype_from_name(const char *name);
/* Element size in bytes; 0 if invalid, and 0 for TIO_STRING, whose elements
 * have no fixed size. */
TIO_API size_t tio_dtype_size(tio_dtype dtype);

/* String tensors. A TIO_STRING tensor is dense (never COO nor quantized); its
 * numel elements are byte strings of any length (any bytes, NUL included;
 * tensio does not require UTF-8). Its data (tio_tensor_data, nbytes bytes) is
 *   numel + 1 offsets, uint64 little-endian: offsets[0] = 0, non-decreasing,
 *   offsets[numel] = the total length L of the strings; then L bytes,
 *   element i being bytes[offsets[i] .. offsets[i+1]),
 * so nbytes = 8 × (numel + 1) + L: one block that hashes, copies, compares and
 * travels in a message as any tensor's bytes do, and a reader of a format that
 * lays out these same bytes could keep a view. tio_container_add checks this
 * layout (offsets in range, in order, L matching nbytes); readers build it
 * from the strings of the file. The data is 8-byte aligned like a uint64
 * tensor's. Writers that cannot hold strings refuse them by name
 * (TIO_E_LOSSY "tensor 0 'x' is string, which FORMAT cannot store"):
 * onnx and onnx-tensor (STRING, string_data) and npy/npz (NumPy |S and <U)
 * hold them. tio_tensor_string_at reads element i. */

/* ------------------------------------------------------------------- limits */

/* Bounds applied while decoding untrusted bytes, and to the work done later on
 * what was decoded. A zero field means "the default" (TIO_DEFAULT_*). Real
 * files never come near the defaults. A container keeps the limits it was
 * opened with (tio_container_set_limits changes them); work whose cost is not
 * bounded by the input's size, because it expands a sparse tensor whose shape
 * the input only claims, is bounded by max_dense_bytes and fails past it with
 * TIO_E_LIMIT. */
typedef struct tio_limits {
    uint64_t max_tensors;      /* tensors in one container */
    uint32_t max_rank;         /* dims of one tensor */
    uint64_t max_header_bytes; /* one header/record/label structure */
    uint32_t max_name_bytes;   /* one tensor name or metadata string */
    uint32_t max_depth;        /* nesting: FlatBuffers tables, subgraphs (at most
                                  TIO_MAX_DEPTH_CAP: a larger value is taken as it) */
    uint64_t max_objects;      /* graph nodes/values/attributes, FlatBuffers
                                  tables visited while verifying */
    uint64_t max_dense_bytes;  /* bytes one operation may produce by expanding
                                  sparse (COO) tensors: the dense hash of one
                                  tensor, or all the tensors one save or encode
                                  densifies (TIO_SAVE_DENSIFY); one strided view
                                  of a PyTorch checkpoint made C-contiguous;
                                  all a checkpoint's records inflated */
    uint64_t max_pickle_bytes;   /* one pickle (a PyTorch checkpoint's data.pkl) */
    uint64_t max_pickle_objects; /* objects one pickle makes, and its memo keys */
    uint32_t max_pickle_depth;   /* marks open at once in a pickle, and the nesting
                                    of its objects (at most TIO_MAX_PICKLE_DEPTH_CAP:
                                    a larger value is taken as it) */
    uint32_t max_shards;         /* files a Hugging Face index may name (its shards:
                                    each is opened and mapped); names a shard list
                                    expands to (tio_shard_list_expand), lines of a
                                    shard list file */
    /* http:// and https:// sources (docs/sources.md) */
    uint64_t max_remote_bytes;   /* a remote file's size, or the body of a server
                                    that ignores ranges (refused past it) */
    uint32_t max_redirects;      /* redirects followed by one request */
    uint32_t max_retries;        /* times one request is resumed (Range) after the
                                    connection drops, stalls or the body ends early
                                    (a shard read as a stream: times in all) */
    uint32_t timeout_ms;         /* to connect; and a transfer that receives
                                    nothing for this long (rounded to seconds) fails */
    uint64_t max_member_bytes;   /* a shard read as a stream: one member with its
                                    headers, the memory it may take; a compressed
                                    one's decoder window (tio_shard_stream_open) */
} tio_limits;

#define TIO_DEFAULT_MAX_TENSORS (1u << 24)
#define TIO_DEFAULT_MAX_RANK 64u
#define TIO_DEFAULT_MAX_HEADER_BYTES (64u << 20)
#define TIO_DEFAULT_MAX_NAME_BYTES 65536u
#define TIO_DEFAULT_MAX_DEPTH 64u
#define TIO_MAX_DEPTH_CAP 256u
#define TIO_DEFAULT_MAX_OBJECTS (1u << 24)
#define TIO_DEFAULT_MAX_DENSE_BYTES (UINT64_C(256) << 20)
#define TIO_DEFAULT_MAX_PICKLE_BYTES (UINT64_C(1) << 30)
#define TIO_DEFAULT_MAX_PICKLE_OBJECTS (1u << 22)
#define TIO_DEFAULT_MAX_PICKLE_DEPTH 256u
#define TIO_MAX_PICKLE_DEPTH_CAP 1024u
#define TIO_DEFAULT_MAX_SHARDS 16384u
#define TIO_DEFAULT_MAX_REMOTE_BYTES (UINT64_C(1) << 40)
#define TIO_DEFAULT_MAX_REDIRECTS 8u
#define TIO_DEFAULT_MAX_RETRIES 4u
#define TIO_DEFAULT_TIMEOUT_MS 30000u
#define TIO_DEFAULT_MAX_MEMBER_BYTES (UINT64_C(4) << 30)

/* ------------------------------------------------------------------ tensors */

typedef enum tio_layout {
    TIO_LAYOUT_DENSE = 0, /* row-major (C order) */
    TIO_LAYOUT_COO = 1,   /* sparse coordinates: nnz × rank int64 indices + nnz values */
    TIO_LAYOUT_QUANT = 2  /* block-quantized (GGUF/ggml): the shape is the logical
                             shape; the data are blocks of tio_quant_block() elements
                             along the last dim, row-major (see "quantized tensors") */
} tio_layout;

/* Block-quantized element types. The numbers are ggml's type numbers (GGUF
 * tensor infos store them); a quantized tensor's dtype is TIO_FLOAT32, what
 * its blocks dequantize to. */
typedef enum tio_quant {
    TIO_QUANT_NONE = 0, /* not quantized */
    TIO_QUANT_Q4_0 = 2,
    TIO_QUANT_Q4_1 = 3,
    TIO_QUANT_Q5_0 = 6,
    TIO_QUANT_Q5_1 = 7,
    TIO_QUANT_Q8_0 = 8,
    TIO_QUANT_Q8_1 = 9,
    TIO_QUANT_Q2_K = 10,
    TIO_QUANT_Q3_K = 11,
    TIO_QUANT_Q4_K = 12,
    TIO_QUANT_Q5_K = 13,
    TIO_QUANT_Q6_K = 14,
    TIO_QUANT_Q8_K = 15,
    TIO_QUANT_IQ2_XXS = 16,
    TIO_QUANT_IQ2_XS = 17,
    TIO_QUANT_IQ3_XXS = 18,
    TIO_QUANT_IQ1_S = 19,
    TIO_QUANT_IQ4_NL = 20,
    TIO_QUANT_IQ3_S = 21,
    TIO_QUANT_IQ2_S = 22,
    TIO_QUANT_IQ4_XS = 23,
    TIO_QUANT_IQ1_M = 29,
    TIO_QUANT_TQ1_0 = 34,
    TIO_QUANT_TQ2_0 = 35,
    TIO_QUANT_MXFP4 = 39,
    TIO_QUANT_NVFP4 = 40,
    TIO_QUANT_Q1_0 = 41,
    TIO_QUANT_Q2_0 = 42
} tio_quant;

/* ggml's name ("q4_0", "q4_K", "iq2_xxs"…), or NULL when q is not a tio_quant. */
TIO_API const char *tio_quant_name(tio_quant q);
/* Inverse of tio_quant_name; TIO_QUANT_NONE if unknown. */
TIO_API tio_quant tio_quant_from_name(const char *name);
/* Elements per block and bytes per block: TIO_OK, or TIO_E_DTYPE when q is
 * not a tio_quant. */
TIO_API int tio_quant_block(tio_quant q, size_t *block_elems, size_t *block_bytes);
/* Whether tensio can dequantize q (tio_tensor_densify, TIO_SAVE_DEQUANTIZE):
 * q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q4_K q5_K q6_K q8_K iq4_nl iq4_xs tq1_0
 * tq2_0 mxfp4 nvfp4 q1_0 q2_0, bit for bit as ggml's dequantize_row_*. */
TIO_API int tio_quant_can_dequantize(tio_quant q);

/* A tensor belongs to its container and lives as long as it. */
typedef struct tio_tensor tio_tensor;

TIO_API const char *tio_tensor_name(const tio_tensor *t); /* NULL when unnamed; "" is the
                                                             empty name, a name */
TIO_API tio_dtype tio_tensor_dtype(const tio_tensor *t);
TIO_API tio_layout tio_tensor_layout(const tio_tensor *t);
TIO_API size_t tio_tensor_rank(const tio_tensor *t);
/* rank dims; valid (and non-NULL) even when rank is 0. */
TIO_API const int64_t *tio_tensor_shape(const tio_tensor *t);
/* Product of the dims (1 for rank 0). Never overflows: containers refuse
 * shapes whose element count or byte size does not fit in int64/size_t. */
TIO_API uint64_t tio_tensor_numel(const tio_tensor *t);
/* Bytes of the stored elements: numel×size for dense, nnz×size for COO,
 * numel / block elements × block bytes for quantized tensors. */
TIO_API size_t tio_tensor_nbytes(const tio_tensor *t);
/* Its position in its container: tio_container_tensor(c, i) is t (0 for
 * NULL). With tio_container_find, the position of a name. */
TIO_API size_t tio_tensor_index(const tio_tensor *t);
/* Dense: the elements. COO: the nnz values. Little-endian, C order.
 * A view into the source when possible. The pointer is aligned to the
 * element size unless tio_tensor_is_aligned() says otherwise (legacy files
 * with unaligned records); tio_tensor_materialize() fixes that. Where a
 * format leaves data at an address the element size does not divide (most
 * .npz members NumPy writes, .npy headers of other lengths, a safetensors
 * header length), the first call makes an aligned copy, which later calls
 * (from any thread) return: opening stays O(tensors) and only the tensors
 * read are copied. */
TIO_API const void *tio_tensor_data(const tio_tensor *t);
/* The same bytes where they lie: always the view (never a copy), aligned or
 * not. For readers that take bytes (hashing, copying, NumPy arrays). */
TIO_API const void *tio_tensor_bytes(const tio_tensor *t);
TIO_API int tio_tensor_is_aligned(const tio_tensor *t);
/* TIO_LAYOUT_QUANT: the block type; TIO_QUANT_NONE for other layouts. */
TIO_API tio_quant tio_tensor_quant(const tio_tensor *t);
/* COO only (0 / NULL for dense): the number of stored values, and the
 * nnz × rank int64 little-endian coordinates, row i = coordinates of value i. */
TIO_API uint64_t tio_tensor_nnz(const tio_tensor *t);
TIO_API const void *tio_tensor_indices(const tio_tensor *t);
/* Byte offset of the tensor's record in the source, or -1. */
TIO_API int64_t tio_tensor_source_offset(const tio_tensor *t);
/* Tied weights. A tensor that is the same view of the same storage as an
 * earlier tensor of its container (a PyTorch checkpoint's lm_head.weight
 * saved tied to embed.weight: one storage, the same offset, shape and
 * strides, so the same elements) is an alias of it: this returns that
 * earlier tensor (the first over the storage, itself no alias), else NULL.
 * Tensors that share a storage without being the same view (slices of one
 * buffer) are no aliases; the torch reader names them in the container's
 * props ("shares_storage.NAME"). Writers: torch keeps an alias tied (one
 * storage, as torch.save writes a state dict's tied weights); safetensors,
 * which refuses shared tensors, writes one copy: an alias is not written
 * (as transformers' save_pretrained drops tied weights; `tensio convert`
 * names each in a warning); the other formats write every tensor (a copy
 * of the same bytes). An alias is the reader's finding: a container built
 * with tio_container_add has none. */
TIO_API const tio_tensor *tio_tensor_alias(const tio_tensor *t);

/* Copies the tensor's data (and indices) into memory the tensor owns, aligned;
 * afterwards its views no longer refer to the source. */
TIO_API int tio_tensor_materialize(tio_tensor *t, tio_error *err);

/* Element i of a TIO_STRING tensor: *data (not NUL-terminated) and *len.
 * TIO_E_ARGUMENT when t is not a string tensor or i >= numel. */
TIO_API int tio_tensor_string_at(const tio_tensor *t, uint64_t i, const char **data,
                                 size_t *len, tio_error *err);

/* Writes the dense row-major bytes (COO: zeros with the values scattered in;
 * a duplicated coordinate takes its last value; quantized: the blocks
 * dequantized to float32, TIO_E_UNSUPPORTED for a type that
 * tio_quant_can_dequantize refuses) to dst, which must hold numel × dtype
 * size bytes (a TIO_STRING tensor: its nbytes, the layout as it is). */
TIO_API int tio_tensor_densify(const tio_tensor *t, void *dst, size_t dst_size,
                               tio_error *err);

/* SHA-256 (32 bytes) of what `what` names, as C-contiguous little-endian bytes:
 * TIO_HASH_DENSE: the dense tensor (COO: densified, streamed, O(nnz) memory;
 * TIO_E_LIMIT when numel × size exceeds the container's max_dense_bytes;
 * quantized: the blocks as stored, as TIO_HASH_VALUES);
 * TIO_HASH_VALUES: the stored values; TIO_HASH_INDICES: the int64 indices. */
enum { TIO_HASH_DENSE = 0, TIO_HASH_VALUES = 1, TIO_HASH_INDICES = 2 };
TIO_API int tio_tensor_sha256(const tio_tensor *t, int what, uint8_t out[32],
                              tio_error *err);

/* Per-tensor metadata: ordered string key/value pairs. */
TIO_API size_t tio_tensor_meta_count(const tio_tensor *t);
TIO_API int tio_tensor_meta_at(const tio_tensor *t, size_t i, const char **key,
                               const char **value);
TIO_API const char *tio_tensor_meta_get(const tio_tensor *t, const char *key);
TIO_API int tio_tensor_meta_set(tio_tensor *t, const char *key, const char *value,
                                tio_error *err);
/* Metadata keys and values are byte strings that carry their length and may
 * hold NUL bytes (a GGUF string value may). The _n forms give and take the
 * lengths; every key and value is also NUL-terminated, so the C-string forms
 * above work unchanged for strings without NUL (for one with NUL they see
 * the bytes up to the first; a C-string key finds only a key of its strlen).
 * *key_len / *value_len may be NULL. Writers store such a value where the
 * format can (GGUF) and refuse it by key otherwise (TIO_E_UNSUPPORTED,
 * unless the metadata is dropped); a key with NUL no format stores. */
TIO_API int tio_tensor_meta_at_n(const tio_tensor *t, size_t i, const char **key,
                                 size_t *key_len, const char **value, size_t *value_len);
TIO_API const char *tio_tensor_meta_get_n(const tio_tensor *t, const char *key, size_t key_len,
                                          size_t *value_len);
TIO_API int tio_tensor_meta_set_n(tio_tensor *t, const char *key, size_t key_len,
                                  const char *value, size_t value_len, tio_error *err);

/* --------------------------------------------------------------- containers */

/* Ordered tensors, container metadata, the format it came from, the problems
 * that validation found, and an optional model graph (see "graph" below). */
typedef struct tio_container tio_container;

TIO_API tio_container *tio_container_new(void); /* NULL only when out of memory */
/* Releases the caller's hold on the container (NULL is fine). A message or a
 * stream send still using its tensor data keeps it alive until it is done
 * (see tio_message_encode); for the caller it is gone either way. */
TIO_API void tio_container_free(tio_container *c);
/* Registers fn(ctx), called once when c is finally released: after the
 * caller's tio_container_free and after every message and stream send still
 * lending its tensor data is done with them. It tells when memory the
 * container borrows (TIO_ADD_BORROW, tio_open_memory) may be reused or freed.
 * It may run on another thread (libzmq's I/O thread, for a stream send) and
 * after c is gone: it must not use c nor block. One per container: a second
 * call is TIO_E_ARGUMENT. Set it before the container is shared. */
/* c takes a hold on src, released when c is finally released. For a
 * container made of another's tensors (a selection, a join: TIO_ADD_BORROW
 * of src's tensor data): c's tensors that lie in src's mapped file are then
 * saved from that file as from c's own (copy_file_range, pread: not through
 * the mapping), and tio_container_prefetch prefetches src too. Holding a
 * container that holds c, directly or not, is TIO_E_ARGUMENT (neither would
 * ever be released); the same src twice is fine. Call it before c is shared
 * between threads. */
TIO_API int tio_container_hold(tio_container *c, const tio_container *src, tio_error *err);
TIO_API int tio_container_on_release(tio_container *c, void (*fn)(void *ctx), void *ctx,
                                     tio_error *err);

TIO_API size_t tio_container_count(const tio_container *c);
TIO_API tio_tensor *tio_container_tensor(const tio_container *c, size_t index);
/* First tensor with that name, or NULL. O(1) on average: the first call on
 * a container of more than 8 tensors makes an index of their names (kept
 * with the container, up to date through later adds; safe from several
 * threads at once, as every read of a container is). */
TIO_API tio_tensor *tio_container_find(const tio_container *c, const char *name);
/* The format name the container was read from ("btf", …), or NULL if built. */
TIO_API const char *tio_container_format(const tio_container *c);
/* Size in bytes of the source it was read from (0 when built in memory). */
TIO_API uint64_t tio_container_source_size(const tio_container *c);

/* The limits work on the container obeys: those it was opened with (or the
 * defaults for tio_container_new), resolved: no zero fields. */
TIO_API void tio_container_get_limits(const tio_container *c, tio_limits *out);
/* Replaces them (NULL or zero fields = the defaults). They bound later work,
 * such as max_dense_bytes for dense hashes and densifying saves; the tensors
 * already decoded stay as they are. Not thread-safe against concurrent use of
 * the same container. */
TIO_API int tio_container_set_limits(tio_container *c, const tio_limits *limits,
                                     tio_error *err);

TIO_API size_t tio_container_meta_count(const tio_container *c);
TIO_API int tio_container_meta_at(const tio_container *c, size_t i, const char **key,
                                  const char **value);
TIO_API const char *tio_container_meta_get(const tio_container *c, const char *key);
TIO_API int tio_container_meta_set(tio_container *c, const char *key,
                                   const char *value, tio_error *err);
/* Typed metadata (GGUF key/value pairs). The value is text: integers in
 * decimal, floats as the shortest decimal that reads back to the same value
 * ("nan", "inf", "-inf"), bools "true"/"false", a string as it is; an array
 * as a JSON array of such values (strings as JSON strings), nested arrays
 * included. The type: "uint8" "int8" "uint16" "int16" "uint32" "int32"
 * "uint64" "int64" "float32" "float64" "bool" "string", or "array[T]" for an
 * array of T ("array[array[int32]]"; at most TIO_MAX_DEPTH_CAP levels). tio_container_meta_type returns the
 * type of a key, or NULL for a plain string value (one set with
 * tio_container_meta_set, which clears a type). A writer that keeps types
 * (gguf) refuses a value its type cannot read (TIO_E_ARGUMENT); the others
 * store the text. */
TIO_API const char *tio_container_meta_type(const tio_container *c, const char *key);
TIO_API int tio_container_meta_set_typed(tio_container *c, const char *key,
                                         const char *value, const char *type,
                                         tio_error *err);
/* Length-carrying forms (see tio_tensor_meta_at_n): keys and values may hold
 * NUL bytes. A "string" value (or a plain one) holds any bytes; in the text
 * of an array a NUL is the JSON escape \u0000. */
TIO_API int tio_container_meta_at_n(const tio_container *c, size_t i, const char **key,
                                    size_t *key_len, const char **value, size_t *value_len);
TIO_API const char *tio_container_meta_get_n(const tio_container *c, const char *key,
                                             size_t key_len, size_t *value_len);
TIO_API int tio_container_meta_set_n(tio_container *c, const char *key, size_t key_len,
                                     const char *value, size_t value_len, tio_error *err);
TIO_API const char *tio_container_meta_type_n(const tio_container *c, const char *key,
                                              size_t key_len);
TIO_API int tio_container_meta_set_typed_n(tio_container *c, const char *key, size_t key_len,
                                           const char *value, size_t value_len,
                                           const char *type, tio_error *err);

/* Readable-but-invalid findings (unaligned records, nonzero reserved or
 * padding bytes, trailing bytes…), each with code TIO_E_INVALID, offset and
 * message. Open with TIO_OPEN_STRICT to make the first one an error. */
TIO_API size_t tio_container_warning_count(const tio_container *c);
TIO_API const tio_error *tio_container_warning(const tio_container *c, size_t i);

/* Facts about how the source is laid out ("version" = "2",
 * "model_data_offset" = "32", …): ordered string pairs set by the reader,
 * shown by `tensio info`. Not written by any writer. */
TIO_API size_t tio_container_prop_count(const tio_container *c);
TIO_API int tio_container_prop_at(const tio_container *c, size_t i, const char **key,
                                  const char **value);
TIO_API const char *tio_container_prop_get(const tio_container *c, const char *key);

/* ------------------------------------------------------------ object tree */

/* The object a checkpoint stores, as data (a PyTorch checkpoint: the
 * unpickled object, never run): dicts, lists, tuples, sets, scalars,
 * strings, bytes, references to the container's tensors, and opaque
 * objects (a class tensio does not rebuild: its module.name, the byte
 * offset where the file names it, and the state the file gives it).
 *
 * The tree belongs to the container and lives as long as it; nothing in it
 * is global. It is made when first asked for (tio_container_object or
 * tio_container_object_count, from any thread, once), not by the open:
 * listing tensors costs nothing for it; until then the container keeps the
 * pickle's decoded objects (about 50 bytes per object the pickle made). Children are reached by index in O(1). An object the file
 * references from several places (the pickle's memo: a tensor saved twice,
 * an optimizer's param groups) is one object reached twice, never a copy:
 * walking code that follows every reference should stop at objects it has
 * seen (tio_object_id, tio_object_shared). The tree is acyclic: a
 * reference from an object to itself or an ancestor is an OPAQUE object
 * named "(recursive reference)". Its size is bounded by the pickle's
 * limits (max_pickle_objects objects, max_pickle_depth deep: what lies
 * deeper where the open's walk did not go, a tuple used as a dict key, is
 * one OPAQUE object named "(nested past max_pickle_depth)").
 *
 * Formats without such a tree (every format but torch: their structure is
 * the tensor list and the metadata) have none: tio_container_object gives
 * NULL. */
typedef struct tio_object tio_object;

typedef enum tio_object_kind {
    TIO_OBJ_NONE = 1,
    TIO_OBJ_BOOL = 2,   /* tio_object_int: 0 or 1 */
    TIO_OBJ_INT = 3,    /* tio_object_int */
    TIO_OBJ_BIGINT = 4, /* an int past int64: tio_object_bytes gives its two's
                           complement, little-endian (Python's int.from_bytes(b,
                           "little", signed=True)) */
    TIO_OBJ_FLOAT = 5,  /* tio_object_float */
    TIO_OBJ_STR = 6,    /* tio_object_bytes: UTF-8 as stored, NUL-terminated
                           (it may hold NULs: use the length) */
    TIO_OBJ_BYTES = 7,  /* tio_object_bytes */
    TIO_OBJ_LIST = 8,   /* tio_object_len items (tio_object_item) */
    TIO_OBJ_TUPLE = 9,
    TIO_OBJ_SET = 10,   /* set and frozenset */
    TIO_OBJ_DICT = 11,  /* tio_object_len pairs, in the file's order: tio_object_key
                           and tio_object_item (dict and OrderedDict) */
    TIO_OBJ_TENSOR = 12, /* tio_object_tensor: the index of a tensor of the container */
    TIO_OBJ_OPAQUE = 13  /* tio_object_bytes: "module.name" of its class (or of the
                            function that would make it); tio_object_state: what
                            the file sets as its state (an argparse.Namespace's
                            fields), or NULL */
} tio_object_kind;

/* The root object, or NULL when the container has no tree (or memory ran
 * short making it). */
TIO_API const tio_object *tio_container_object(const tio_container *c);
/* The number of distinct objects in the tree (tio_object_id is below it). */
TIO_API size_t tio_container_object_count(const tio_container *c);

TIO_API tio_object_kind tio_object_kind_of(const tio_object *o);
/* "dict", "list", …, "tensor", "opaque" (NULL for an unknown kind). */
TIO_API const char *tio_object_kind_name(tio_object_kind kind);
/* Items of a LIST/TUPLE/SET, pairs of a DICT, bytes of a STR/BYTES/BIGINT/
 * OPAQUE's name; 0 for the others. */
TIO_API size_t tio_object_len(const tio_object *o);
/* Item i of a LIST/TUPLE/SET, the value of pair i of a DICT; NULL past the end. */
TIO_API const tio_object *tio_object_item(const tio_object *o, size_t i);
/* The key of pair i of a DICT (any kind: str, int, tuple…); NULL else. */
TIO_API const tio_object *tio_object_key(const tio_object *o, size_t i);
/* The value of a DICT under the str key `key` (the first pair that has it),
 * or NULL. Linear in the dict's size. */
TIO_API const tio_object *tio_object_get(const tio_object *o, const char *key);
/* BOOL, INT: the value; 0 for the others. */
TIO_API int64_t tio_object_int(const tio_object *o);
/* FLOAT: the value; INT, BOOL: converted; 0 for the others. */
TIO_API double tio_object_float(const tio_object *o);
/* STR, BYTES, BIGINT, OPAQUE: the bytes (NUL-terminated) and, if len is not
 * NULL, their count; NULL for the others. */
TIO_API const char *tio_object_bytes(const tio_object *o, size_t *len);
/* TENSOR: the container index of the tensor; -1 for the others. */
TIO_API int64_t tio_object_tensor(const tio_object *o);
/* OPAQUE: its state (BUILD's, or the first of a (state, slots) pair), or NULL. */
TIO_API const tio_object *tio_object_state(const tio_object *o);
/* The byte offset in the source of what made the object (the pickle
 * opcode; an OPAQUE object's: the global that names it), or -1 when it has
 * none (made by the reader, or its pickle was inflated from a deflated
 * record). */
TIO_API int64_t tio_object_offset(const tio_object *o);
/* A number unique to the object in its tree, below tio_container_object_count. */
TIO_API size_t tio_object_id(const tio_object *o);
/* Whether the object is reached from more than one place in the tree. */
TIO_API int tio_object_shared(const tio_object *o);

/* Describes a tensor to add. */
typedef struct tio_tensor_desc {
    const char *name;      /* NULL = unnamed; "" is a name (the empty one) */
    tio_dtype dtype;
    size_t rank;
    const int64_t *shape;  /* rank dims, each >= 0; may be NULL when rank is 0 */
    tio_layout layout;
    const void *data;      /* dense: numel×size bytes; COO: nnz×size values */
    size_t nbytes;         /* must equal the size implied above */
    uint64_t nnz;          /* COO only */
    const int64_t *indices; /* COO only: nnz × rank, each 0 <= i < dim */
} tio_tensor_desc;

/* TIO_ADD_BORROW: keep pointers to the caller's data (which must outlive the
 * container) instead of copying them. */
#define TIO_ADD_BORROW 1u

/* Checks the description (dtype, dims >= 0, sizes without overflow, nbytes,
 * COO indices in range) and appends a tensor. On success *out (if not NULL)
 * points to it. */
TIO_API int tio_container_add(tio_container *c, const tio_tensor_desc *desc,
                              unsigned flags, tio_tensor **out, tio_error *err);
/* Appends a block-quantized tensor: desc->layout TIO_LAYOUT_QUANT, dtype
 * TIO_FLOAT32, shape the logical shape (its last dim a multiple of the
 * block's elements), data the blocks: nbytes = numel / block elements ×
 * block bytes (tio_quant_block). tio_container_add refuses that layout. */
TIO_API int tio_container_add_quantized(tio_container *c, const tio_tensor_desc *desc,
                                        tio_quant quant, unsigned flags, tio_tensor **out,
                                        tio_error *err);
/* Appends a TIO_STRING tensor named `name` (NULL = unnamed) of the given
 * shape from its numel strings: strings[i] of lengths[i] bytes (any bytes;
 * strings[i] may be NULL when lengths[i] is 0), copied into the layout
 * described at TIO_STRING. (tio_container_add takes that layout directly.) */
TIO_API int tio_container_add_strings(tio_container *c, const char *name, size_t rank,
                                      const int64_t *shape, const char *const *strings,
                                      const size_t *lengths, tio_tensor **out,
                                      tio_error *err);

/* -------------------------------------------------------------------- graph */

/* A model graph: values (runtime values and constants), operator nodes in
 * topological order, graph inputs/outputs/captures, model metadata, and
 * subgraphs (If/Loop bodies) reachable through GRAPH attributes. A graph
 * belongs to its container; constants are tensors of the container, so
 * listing, hashing and converting a model's weights work as for any tensor
 * file. Indices are stable: value i and node i never move.
 *
 * Strings and arrays handed out stay valid until the graph is modified or
 * the container freed. */
typedef struct tio_graph tio_graph;

/* One dimension of a value's shape. */
typedef struct tio_dim {
    int64_t value;    /* the size (>= 0) when fixed; -1 when unknown */
    const char *name; /* symbolic name ("batch"), or NULL for a fixed/unknown dim.
                         A symbolic dim keeps the value the source stored (often 0). */
} tio_dim;

typedef struct tio_value_info {
    const char *name;    /* NULL when unnamed */
    tio_dtype dtype;     /* TIO_DTYPE_INVALID when unknown */
    int64_t rank;        /* -1 when the shape is unknown */
    const tio_dim *dims; /* rank entries (NULL when rank <= 0) */
    int64_t tensor;      /* a constant: index of its container tensor (dtype and
                            dims then come from the tensor); -1 for a runtime value */
    const char *type;    /* NULL: a tensor of `dtype`. Else a value of another type
                            (dtype TIO_DTYPE_INVALID, rank -1), in ONNX's notation
                            with shapes: "seq(tensor(float)[N,3])",
                            "optional(tensor(int64)[])", "map(string,tensor(float))",
                            "sparse_tensor(float)[4,4]", "tensor(string)[2]" (an element
                            type tensio has no dtype for). docs/graph.md has the
                            grammar; only the ONNX writer writes such values */
} tio_value_info;

typedef struct tio_node_info {
    const char *name;      /* NULL when unnamed */
    const char *op;        /* operator type: the ONNX name where one exists ("Conv") */
    const char *native_op; /* the name in the source format ("Convolution" in a
                              tmfile), or NULL when it is `op` */
    int64_t native_id;     /* the operator code in the source format, or -1 */
    size_t input_count;
    const int64_t *inputs;  /* value indices; -1 = an absent optional input */
    size_t output_count;
    const int64_t *outputs; /* value indices; -1 = an absent optional output */
    size_t attr_count;      /* filled by tio_graph_node; ignored when adding */
    const char *domain;     /* the operator set domain ("com.microsoft"), or NULL for
                               the default ONNX domain ("" and "ai.onnx" count as it) */
} tio_node_info;

typedef enum tio_attr_type {
    TIO_ATTR_INT = 1,     /* integers, booleans (0/1) and enum values */
    TIO_ATTR_FLOAT = 2,
    TIO_ATTR_STRING = 3,
    TIO_ATTR_INTS = 4,
    TIO_ATTR_FLOATS = 5,
    TIO_ATTR_STRINGS = 6,
    TIO_ATTR_TENSOR = 7,  /* a tensor of the container, by index */
    TIO_ATTR_GRAPH = 8,   /* a subgraph of the node's graph */
    TIO_ATTR_TENSORS = 9, /* tensors of the container, by index (count, tensors) */
    TIO_ATTR_GRAPHS = 10, /* subgraphs of the node's graph (count, graphs) */
    TIO_ATTR_TYPE = 11    /* a value type as text in s (tio_value_info.type's
                             notation): ONNX's TYPE_PROTO (Optional's `type`) */
} tio_attr_type;

typedef struct tio_attr {
    const char *name;
    tio_attr_type type;
    int64_t i;                  /* INT; TENSOR: the container tensor index */
    double f;                   /* FLOAT */
    const char *s;              /* STRING (NUL-terminated) */
    size_t count;               /* INTS, FLOATS, STRINGS */
    const int64_t *ints;
    const double *floats;
    const char *const *strings;
    tio_graph *graph;           /* GRAPH */
    const char *label;          /* INT: the name of an enum value in the source
                                   format's schema ("NotSet" for auto_pad 1), or NULL */
    const int64_t *tensors;     /* TENSORS: count container tensor indices */
    tio_graph *const *graphs;   /* GRAPHS: count subgraphs (each created with
                                   tio_graph_new_subgraph and used once) */
} tio_attr;

/* The container's (root) graph, or NULL for a tensor-only container. */
TIO_API tio_graph *tio_container_graph(const tio_container *c);
/* Creates the container's root graph. TIO_E_ARGUMENT if it already has one. */
TIO_API int tio_container_new_graph(tio_container *c, tio_graph **out, tio_error *err);

/* The parent of a subgraph (NULL for the root graph). */
TIO_API tio_graph *tio_graph_parent(const tio_graph *g);
/* The format whose operator codes the graph's native ids are (NULL if built). */
TIO_API const char *tio_graph_native_format(const tio_graph *g);

TIO_API size_t tio_graph_value_count(const tio_graph *g);
TIO_API int tio_graph_value(const tio_graph *g, size_t i, tio_value_info *out);
/* Index of the first value with that name, or -1. */
TIO_API int64_t tio_graph_find_value(const tio_graph *g, const char *name);

TIO_API size_t tio_graph_node_count(const tio_graph *g);
TIO_API int tio_graph_node(const tio_graph *g, size_t i, tio_node_info *out);
TIO_API int tio_graph_attr(const tio_graph *g, size_t node, size_t j, tio_attr *out);
/* The attribute of that name: TIO_OK, or TIO_E_NOT_FOUND. */
TIO_API int tio_graph_find_attr(const tio_graph *g, size_t node, const char *name,
                                tio_attr *out);

TIO_API size_t tio_graph_input_count(const tio_graph *g);
TIO_API const int64_t *tio_graph_inputs(const tio_graph *g);   /* value indices */
TIO_API size_t tio_graph_output_count(const tio_graph *g);
TIO_API const int64_t *tio_graph_outputs(const tio_graph *g);
/* Values of a subgraph that stand for values of an enclosing graph. */
TIO_API size_t tio_graph_capture_count(const tio_graph *g);
TIO_API const int64_t *tio_graph_captures(const tio_graph *g);

/* Model metadata (description, license, …; rten's Metadata fields). */
TIO_API size_t tio_graph_meta_count(const tio_graph *g);
TIO_API int tio_graph_meta_at(const tio_graph *g, size_t i, const char **key,
                              const char **value);
TIO_API const char *tio_graph_meta_get(const tio_graph *g, const char *key);
TIO_API int tio_graph_meta_set(tio_graph *g, const char *key, const char *value,
                               tio_error *err);

/* The operator sets the graph's operators come from (ONNX opset_import): the
 * root graph's; domain "" is the default ONNX domain. Set replaces the
 * version of a domain already listed, else appends. */
TIO_API size_t tio_graph_opset_count(const tio_graph *g);
TIO_API int tio_graph_opset_at(const tio_graph *g, size_t i, const char **domain,
                               int64_t *version);
TIO_API int tio_graph_set_opset(tio_graph *g, const char *domain, int64_t version,
                                tio_error *err);

/* Building. Everything passed in is copied. */
/* Appends a value. With tensor >= 0 it is a constant: the tensor must exist
 * in the container, and dtype/rank/dims are taken from it. */
TIO_API int tio_graph_add_value(tio_graph *g, const tio_value_info *v, size_t *index,
                                tio_error *err);
/* Appends an operator node; inputs/outputs must be -1 or existing values. */
TIO_API int tio_graph_add_node(tio_graph *g, const tio_node_info *n, size_t *index,
                               tio_error *err);
/* Appends an attribute to node `node`. A GRAPH attribute must name a subgraph
 * created with tio_graph_new_subgraph(g) and not yet used by another
 * attribute; a TENSOR attribute an existing container tensor. */
TIO_API int tio_graph_add_attr(tio_graph *g, size_t node, const tio_attr *a,
                               tio_error *err);
/* Creates an empty subgraph owned by g (to be used by one GRAPH attribute). */
TIO_API int tio_graph_new_subgraph(tio_graph *g, tio_graph **out, tio_error *err);
TIO_API int tio_graph_set_inputs(tio_graph *g, const int64_t *values, size_t n,
                                 tio_error *err);
TIO_API int tio_graph_set_outputs(tio_graph *g, const int64_t *values, size_t n,
                                  tio_error *err);
TIO_API int tio_graph_set_captures(tio_graph *g, const int64_t *values, size_t n,
                                   tio_error *err);
TIO_API int tio_graph_set_native_format(tio_graph *g, const char *format,
                                        tio_error *err);

/* ------------------------------------------------------------------ formats */

/* What a format can hold. */
#define TIO_CAP_SPARSE 0x1u   /* COO tensors */
#define TIO_CAP_NAMES 0x2u    /* tensor names */
#define TIO_CAP_METADATA 0x4u /* container/tensor metadata */
#define TIO_CAP_GRAPH 0x8u    /* a model graph */
#define TIO_CAP_QUANT 0x10u   /* block-quantized tensors (TIO_LAYOUT_QUANT) */
#define TIO_CAP_VALUE_TYPES 0x20u /* graph values of other types than tensors of a
                                     tio_dtype (tio_value_info.type): sequences,
                                     optionals, maps, string tensors */

TIO_API size_t tio_format_count(void);
/* Name of format i ("btf", "tenbin"), or NULL past the end. */
TIO_API const char *tio_format_name(size_t i);
TIO_API const char *tio_format_description(const char *format);
/* Space-separated file extensions, e.g. ".ten" */
TIO_API const char *tio_format_extensions(const char *format);
TIO_API unsigned tio_format_caps(const char *format);
/* Whether tensio can write the format (1), or only read it (0: torch). */
TIO_API int tio_format_can_write(const char *format);
/* Whether a format can store a dtype. */
TIO_API int tio_format_supports_dtype(const char *format, tio_dtype dtype);
/* The format whose extension the path has, or NULL. */
TIO_API const char *tio_format_for_path(const char *path);
/* The format the content looks like (probe), or NULL. */
TIO_API const char *tio_format_probe(const void *data, size_t size);

/* --------------------------------------------------------------------- open */

#define TIO_OPEN_STRICT 0x1u  /* a validation finding is an error (TIO_E_INVALID) */
#define TIO_OPEN_NO_MMAP 0x2u /* read the file into memory instead of mapping it */
#define TIO_OPEN_COPY 0x4u    /* tio_open_memory: copy the buffer, do not borrow it */
/* ONNX external data: read a location that is absolute or leaves the model's
 * directory ("..", symbolic links out). Off by default: a model from
 * elsewhere may only read files in its own directory. */
#define TIO_OPEN_EXTERNAL_ANYWHERE 0x8u
/* A model's graph as the source format writes it, not raised to ONNX form
 * (tmfile: Const and InputOp nodes, Tengine's param fields as attributes).
 * Formats that read ONNX-form graphs only (onnx, rten) ignore it. */
#define TIO_OPEN_NATIVE_GRAPH 0x10u
/* The caller will read every tensor: once decoded, the mapping is populated
 * in one call (tio_container_prefetch). Without it, pages are read and mapped
 * on first touch, one fault each (or 16 with the kernel's fault-around). */
#define TIO_OPEN_PREFETCH 0x20u
/* An http:// or https:// source: fetch the header only; a tensor's data are
 * fetched by tio_container_fetch() (or all by tio_container_prefetch()), and
 * until then tio_tensor_data() returns NULL for it and saving or hashing it
 * fails. Without it, open fetches every tensor's bytes (not the rest). No
 * effect on other sources. */
#define TIO_OPEN_LAZY 0x40u

/* Zero-initialise for the defaults. */
typedef struct tio_open_options {
    const char *format;        /* force a format; NULL = probe, then extension */
    unsigned flags;            /* TIO_OPEN_* */
    const tio_limits *limits;  /* NULL = defaults */
    /* Progress of reading the source (on the opening thread): bytes read so
     * far and the source's size (0 while unknown: a pipe). A mapped file is
     * not read at open (decoding costs O(tensors)), so it reports once, at
     * the end; a source read into memory (TIO_OPEN_NO_MMAP, pipes) at most
     * once per MiB. Last call: done == total. NULL: none. */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
} tio_open_options;

/* Opens a file. It is mapped; tensors are views into the mapping. An
 * http:// or https:// URL is read by range requests (libcurl) into a sparse
 * buffer: the header, then the tensors' bytes (see TIO_OPEN_LAZY and the
 * remote limits in tio_limits; docs/sources.md). "pipe:COMMAND" runs the
 * command (/bin/sh -c) and reads its standard output into memory; a
 * non-zero exit status is TIO_E_IO. */
TIO_API int tio_open(const char *path, const tio_open_options *opts,
                     tio_container **out, tio_error *err);
/* Opens bytes in memory. They are borrowed (must outlive the container)
 * unless TIO_OPEN_COPY is set. */
TIO_API int tio_open_memory(const void *data, size_t size, const tio_open_options *opts,
                            tio_container **out, tio_error *err);
/* Makes every byte of a mapped container resident and mapped in one call,
 * for a caller about to read all tensors: madvise(MADV_POPULATE_READ) on
 * Linux >= 5.14 (reads the file and fills the page tables, large folios where
 * the page cache has them), else MADV_WILLNEED (starts readahead; pages are
 * still mapped one fault at a time). Blocks until done with the first.
 * Nothing to do for a container in memory (TIO_OK). Only TIO_E_ARGUMENT or
 * TIO_E_IO (an unexpected madvise error) fail; the tensors are unchanged.
 * A container opened from a URL fetches every tensor's bytes not yet
 * fetched (errors as tio_open's: TIO_E_IO, TIO_E_TIMEOUT naming the URL). */
TIO_API int tio_container_prefetch(tio_container *c, tio_error *err);
/* Fetches the bytes of tensor i (its data, and its indices for COO) of a
 * container opened from a URL with TIO_OPEN_LAZY, by range requests for the
 * 64 KiB chunks not yet held. TIO_OK doing nothing for any other container.
 * Other threads may read the container meanwhile (the tensors fetched
 * already); two fetches (or prefetches) of one container must not run at
 * once. */
TIO_API int tio_container_fetch(tio_container *c, size_t i, tio_error *err);

/* ------------------------------------------------------- WebDataset shards */

/* An uncompressed tar shard (ustar, GNU or pax), mapped: every member's data
 * is a view into the mapping (tar data start on 512-byte boundaries). Members
 * are the regular files in archive order; directories, links and devices are
 * not listed. Samples group members as WebDataset does: key = the member path
 * up to the first dot of its basename, extension = the rest ("a/0001.seg.ten":
 * key "a/0001", extension "seg.ten"); consecutive members with the same key
 * are one sample. The split follows WebDataset's pattern exactly (a basename
 * that starts with a dot: "x/.h" is key "x/", extension "h"); a member it
 * does not split ("README", ".h", "a.b/.h") and a top-level "__X__" member
 * belong to no sample (WebDataset skips them). A compressed shard (gzip,
 * bzip2, xz or zstd, found by its magic: .tar.gz, .tgz, .tar.bz2, .tar.xz,
 * .tar.zst) is read whole and decompressed into memory, not mapped, at most
 * max_dense_bytes of tar (TIO_E_LIMIT past it); members are views into that
 * copy, and error offsets past the decompression are offsets in the tar.
 * Opening is O(members) (O(bytes) when compressed); members ≤ max_tensors, a
 * member name ≤ max_name_bytes, one pax header ≤ max_header_bytes. Not
 * thread-safe against tio_shard_free; reading from several threads is. */
typedef struct tio_shard tio_shard;

/* No such member or sample (and the sample of a member in none). */
#define TIO_SHARD_NONE ((size_t)-1)

typedef struct tio_shard_member {
    const char *name;   /* the member's path in the tar */
    const char *key;    /* its sample key ("" when it has no sample) */
    const char *ext;    /* its extension, without the dot ("" when none) */
    uint64_t offset;    /* of its data in the shard (a multiple of 512) */
    uint64_t size;      /* bytes */
    const void *data;   /* size bytes: a view valid until tio_shard_free */
    size_t sample;      /* its sample, or TIO_SHARD_NONE */
    int duplicate;      /* an earlier member of the same sample has the same
                           extension (ASCII case ignored, as WebDataset
                           lower-cases them): WebDataset fails on it */
} tio_shard_member;

typedef struct tio_shard_sample {
    const char *key;
    size_t count;        /* members; see tio_shard_sample_member */
    size_t duplicate_of; /* an earlier sample with the same key (the key came
                            back after another one: WebDataset yields it as a
                            second sample), else TIO_SHARD_NONE */
} tio_shard_sample;

/* Maps and indexes a shard file. limits: NULL = defaults. */
TIO_API int tio_shard_open(const char *path, const tio_limits *limits, tio_shard **out,
                           tio_error *err);
/* The same over bytes in memory, borrowed: they must outlive the shard and
 * every container opened from it. */
TIO_API int tio_shard_open_memory(const void *data, size_t size, const tio_limits *limits,
                                  tio_shard **out, tio_error *err);
/* Releases the caller's hold (NULL is fine). The mapping stays until every
 * container opened with tio_shard_open_member is freed too; the member and
 * sample pointers and their strings are gone at once. */
TIO_API void tio_shard_free(tio_shard *s);
TIO_API size_t tio_shard_member_count(const tio_shard *s);
/* "gzip", "bzip2", "xz" or "zstd" for a shard that was compressed, else NULL. */
TIO_API const char *tio_shard_compression(const tio_shard *s);
/* Member i in archive order, or NULL past the end. */
TIO_API const tio_shard_member *tio_shard_member_at(const tio_shard *s, size_t i);
TIO_API size_t tio_shard_sample_count(const tio_shard *s);
/* Sample i in archive order, or NULL past the end. */
TIO_API const tio_shard_sample *tio_shard_sample_at(const tio_shard *s, size_t i);
/* Index (for tio_shard_member_at) of member j of sample i, or
 * TIO_SHARD_NONE past the end. */
TIO_API size_t tio_shard_sample_member(const tio_shard *s, size_t i, size_t j);
/* The first member whose path is name ("train/000123.ten" = its key, a dot,
 * its extension), or TIO_SHARD_NONE. O(members). */
TIO_API size_t tio_shard_find(const tio_shard *s, const char *name);
/* The tensio format for member i's extension (tio_shard_format_for_name),
 * or NULL when it is no tensor file (.cls, .json, .jpg …). */
TIO_API const char *tio_shard_member_format(const tio_shard *s, size_t i);
/* The tensio format a shard member's name gives (tio_format_for_path), or
 * NULL: bytes. As WebDataset decodes them, a .bin member is bytes (a
 * checkpoint in a shard is .pth, .pt). For streamed members too. */
TIO_API const char *tio_shard_format_for_name(const char *name);
/* Opens member i as a container (tio_open_memory on its bytes; format from
 * opts->format, else from the extension: TIO_E_FORMAT when it names none).
 * Tensors are views into the shard's mapping (unless TIO_OPEN_COPY), which
 * the container keeps alive: it may outlive tio_shard_free. The container's
 * release callback (tio_container_on_release) is taken for that. */
TIO_API int tio_shard_open_member(tio_shard *s, size_t i, const tio_open_options *opts,
                                  tio_container **out, tio_error *err);

/* A shard read in one pass, member by member (no index, no mapping, nothing
 * written to disk): from a file path (or file:PATH), standard input ("-"),
 * a command's standard output ("pipe:COMMAND", run by /bin/sh -c; its exit
 * status must be 0), or an http:// or https:// URL (sequential range
 * requests, resumed and checked as for tio_open; docs/sources.md). One
 * buffer holds the member handed out and its headers: memory is bounded by
 * the largest member and limits->max_member_bytes. A gzip, bzip2, xz or
 * zstd shard (found by its magic) is decompressed as it is read, in 64 KiB
 * reads of the source: add the decoder's own memory, its window at most
 * 128 MiB and bounded by max_member_bytes (xz: twice it, 16 MiB at least);
 * a window past that is TIO_E_LIMIT, a corrupt or cut compressed stream
 * TIO_E_CORRUPT / TIO_E_TRUNCATED with the offset in the compressed data;
 * member offsets are in the tar. */
typedef struct tio_shard_stream tio_shard_stream;
TIO_API int tio_shard_stream_open(const char *source, const tio_limits *limits,
                                  tio_shard_stream **out, tio_error *err);
/* The next member (regular files in archive order): TIO_OK with *m, valid
 * until the next call (its data too: tio_open_memory over it, or copy), or
 * TIO_OK with *m NULL at the end of the archive (the command's exit status
 * checked then). m->offset is the data's offset in the stream; m->sample
 * counts runs of one key (TIO_SHARD_NONE for members of no sample);
 * m->duplicate is not computed (0). Errors as tio_shard_open's, offsets in
 * the stream, the source named. */
TIO_API int tio_shard_stream_next(tio_shard_stream *s, const tio_shard_member **m,
                                  tio_error *err);
/* Samples begun so far. */
TIO_API size_t tio_shard_stream_samples(const tio_shard_stream *s);
/* Stops a command not read to its end (SIGTERM), frees everything. */
TIO_API void tio_shard_stream_free(tio_shard_stream *s);

/* WebDataset's notation for shard lists: "https://h/shard-{000..099}.tar"
 * (a range: zero-padded as written, descending when the first is larger),
 * "{train,val}" (a list), several braces in one name (every combination,
 * the last brace varying fastest), "::" between lists. Braces do not nest;
 * text without braces is one name. A list "@PATH" (the spec, or one between
 * "::") is a list file: one name or brace list a line, blank lines and
 * lines starting with '#' skipped, blanks around a name dropped, no "@" and no
 * "pipe:" (a command read from a file is never run: TIO_E_ARGUMENT)
 * inside; the file at most limits->max_header_bytes, a line at most
 * max_name_bytes, no NUL byte (TIO_E_CORRUPT); errors name the file, the
 * line and the offset in the file (docs/formats/webdataset.md, "Shard
 * lists"). *out: a malloc'ed array of *n malloc'ed names
 * (tio_shard_list_free). More than limits->max_shards names is TIO_E_LIMIT
 * before any is made; a malformed brace TIO_E_ARGUMENT with its offset in
 * spec. */
TIO_API int tio_shard_list_expand(const char *spec, const tio_limits *limits, char ***out,
                                  size_t *n, tio_error *err);
TIO_API void tio_shard_list_free(char **list, size_t n);

/* ------------------------------------------------------------- LMDB stores */

/* A store of tensors in an LMDB database (docs/formats/lmdb.md): each key
 * holds one record, a whole container encoded in one tensio format (tenbin
 * by default). The reserved key "__tensio__" holds the store's metadata,
 * JSON {"format": "tenbin", "version": 1}: the store says how to read it.
 * A database without it (written by another program) is read with
 * opts->format, else each record's format is probed.
 * The path is a directory holding data.mdb (and lock.mdb), or a single file
 * (and FILE-lock): an existing directory is a directory; an existing file, or
 * a new path ending ".mdb", is a file; a new path otherwise (".lmdb") is
 * created as a directory.
 * Lifetime: a store is reference counted. tio_lmdb_close releases the
 * caller's hold; every read transaction holds the store, and every container
 * opened from a read transaction holds that transaction: its tensors are
 * views into LMDB's map, valid as long as the container, because the read
 * transaction (the LMDB snapshot that keeps those pages in place) ends only
 * when tio_lmdb_read_end has been called AND every container opened in it is
 * freed. Record views (tio_lmdb_record) are valid until tio_lmdb_read_end.
 * A transaction is used by one thread at a time; its containers may be
 * freed on any thread. Growing the map on a write needs no read transaction
 * of this process open (LMDB's rule): a full map then is TIO_E_LIMIT.
 * Open a store once per process (LMDB's locks are per process): a writer
 * reads through its own tio_lmdb_read_begin. A writable store is used by one
 * thread at a time. LMDB trusts its own pages: see docs/security.md. */
typedef struct tio_lmdb tio_lmdb;
typedef struct tio_lmdb_txn tio_lmdb_txn;

#define TIO_LMDB_WRITE 0x1u  /* open for writing; created when missing */
#define TIO_LMDB_FILE 0x2u   /* create a single-file store even without ".mdb" */

/* Zero-initialise for the defaults. */
typedef struct tio_lmdb_options {
    unsigned flags;          /* TIO_LMDB_* */
    const char *format;      /* creating: the records' format (default "tenbin"); reading a
                                store without metadata: their format (NULL = probe each) */
    size_t batch;            /* writes: records per committed transaction (0 = 1000) */
    uint64_t map_size;       /* writes: initial map size in bytes (0 = 64 MiB); doubled
                                whenever LMDB reports the map full */
    const struct tio_save_options *save; /* writes: how records are encoded (NULL = defaults) */
    const tio_limits *limits;     /* reads: limits for records (NULL = defaults) */
} tio_lmdb_options;

/* A record: views into LMDB's map, valid until tio_lmdb_read_end. Keys are
 * bytes (not NUL-terminated). */
typedef struct tio_lmdb_record {
    const void *key;
    size_t key_size;
    const void *data;
    size_t size;
    const tio_lmdb_txn *txn; /* the transaction it was read in */
} tio_lmdb_record;

/* Opens (and with TIO_LMDB_WRITE creates) a store. Read-only opens use
 * MDB_RDONLY; a data file shorter than its own meta pages say is refused
 * (TIO_E_TRUNCATED) before any page is touched. */
TIO_API int tio_lmdb_open(const char *path, const tio_lmdb_options *opts, tio_lmdb **out,
                          tio_error *err);
/* Commits pending writes (errors are lost: call tio_lmdb_commit first) and
 * releases the caller's hold (NULL is fine). */
TIO_API void tio_lmdb_close(tio_lmdb *db);
/* The records' format ("tenbin"…), or NULL when they are probed. */
TIO_API const char *tio_lmdb_format(const tio_lmdb *db);

/* Encodes c in the store's format and stores it under key (replacing a
 * record there). It is committed with the batch: every opts->batch puts, at
 * tio_lmdb_commit and at tio_lmdb_close. "__tensio__" is TIO_E_ARGUMENT; an
 * empty key, or one longer than LMDB takes (511 bytes), too. */
TIO_API int tio_lmdb_put(tio_lmdb *db, const void *key, size_t key_size,
                         const tio_container *c, tio_error *err);
/* Stores bytes as they are (they must be a record in the store's format:
 * they are decoded once first, TIO_E_* of the decoder otherwise). */
TIO_API int tio_lmdb_put_bytes(tio_lmdb *db, const void *key, size_t key_size,
                               const void *data, size_t size, tio_error *err);
/* Commits the pending batch. */
TIO_API int tio_lmdb_commit(tio_lmdb *db, tio_error *err);

/* Begins a read transaction: a consistent snapshot of the store. */
TIO_API int tio_lmdb_read_begin(tio_lmdb *db, tio_lmdb_txn **out, tio_error *err);
/* Releases the caller's hold (NULL is fine); see the lifetime rule above. */
TIO_API void tio_lmdb_read_end(tio_lmdb_txn *txn);
/* Records in the snapshot (the metadata key not counted). */
TIO_API uint64_t tio_lmdb_count(const tio_lmdb_txn *txn);
/* The record of key: TIO_OK, or TIO_E_NOT_FOUND. */
TIO_API int tio_lmdb_find(tio_lmdb_txn *txn, const void *key, size_t key_size,
                          tio_lmdb_record *rec, tio_error *err);
/* The next record in key order (the first after tio_lmdb_read_begin or
 * tio_lmdb_rewind): TIO_OK, or TIO_E_NOT_FOUND after the last. */
TIO_API int tio_lmdb_next(tio_lmdb_txn *txn, tio_lmdb_record *rec, tio_error *err);
TIO_API void tio_lmdb_rewind(tio_lmdb_txn *txn);
/* Opens the record of key (tio_lmdb_find + tio_lmdb_open_record). */
TIO_API int tio_lmdb_get(tio_lmdb_txn *txn, const void *key, size_t key_size,
                         const tio_open_options *opts, tio_container **out, tio_error *err);
/* Opens a record of this transaction as a container (tio_open_memory on
 * its bytes in the map, without a copy unless TIO_OPEN_COPY; the format is
 * the store's unless opts->format). The container holds the transaction.
 * Errors name the key. A record read in another transaction is
 * TIO_E_ARGUMENT. */
TIO_API int tio_lmdb_open_record(tio_lmdb_txn *txn, const tio_lmdb_record *rec,
                                 const tio_open_options *opts, tio_container **out,
                                 tio_error *err);

/* --------------------------------------------------------------------- save */

#define TIO_SAVE_DENSIFY 0x1u       /* write COO tensors densified to a dense-only format
                                       (at most the container's max_dense_bytes in all,
                                       else TIO_E_LIMIT before anything is written) */
#define TIO_SAVE_DROP_NAMES 0x2u    /* drop names the format cannot hold */
#define TIO_SAVE_DROP_METADATA 0x4u /* drop metadata the format cannot hold */
#define TIO_SAVE_WIDEN 0x8u         /* store a dtype the format lacks in one that holds
                                       every value exactly: bool->uint8,
                                       float16/bfloat16/float8_e4m3fn/float8_e5m2
                                       ->float32 */
#define TIO_SAVE_SINGLE_PART 0x10u  /* tio_message_encode: one part holding the file
                                       encoding (ZIO: the zmsg buffer; tenbin: the
                                       .ten chunks) instead of the multipart form */
#define TIO_SAVE_NO_SYNC 0x20u      /* tio_save: skip the fsync of the file and of its
                                       directory. Still atomic for readers and if the
                                       process dies; not durable if the machine does
                                       (scratch files, streams saved to disk) */
#define TIO_SAVE_CLEANUP 0x40u      /* tio_save: first remove the target's temporary
                                       files left by processes that are gone. This lists
                                       the target's directory (O(its entries)); a caller
                                       saving many files there calls tio_save_cleanup()
                                       once instead */
#define TIO_SAVE_DEQUANTIZE 0x80u   /* write quantized tensors as float32 (their
                                       dequantized values), also into a format with
                                       TIO_CAP_QUANT (GGUF, which keeps the blocks
                                       without it); without it a save into a format
                                       without TIO_CAP_QUANT is TIO_E_LOSSY */

typedef struct tio_save_options {
    const char *format; /* NULL = from the path's extension (tio_save) */
    unsigned flags;     /* TIO_SAVE_* ; without them, any loss is TIO_E_LOSSY */
    unsigned version;   /* format version to write; 0 = the format's default
                           (rten: 2; 1 = the V1 layout) */
    const char *options; /* format options, "key=value,key=value", or NULL.
                           zio: level (0..8), form (1..4 printable ASCII),
                           origin, granule, seqno (uint64). A key the format
                           does not take is TIO_E_ARGUMENT. */
    /* Progress of a save (tio_save, tio_save_memory, tio_save_buffer), on the
     * saving thread: bytes written so far, and the total expected (the
     * tensors' sizes as written plus the bytes before them; the format's
     * headers after them are not known yet, so done may pass it). At most
     * once per MiB, then once more at the end with done == total == the
     * output's size. NULL: none. */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
    /* tio_save: > 0 writes a Hugging Face sharded checkpoint, as transformers'
     * save_pretrained writes one, of files of at most this many tensor bytes
     * (a tensor larger than that gets a file of its own). The path is a
     * directory (an existing one, or one ending in '/': the files are named
     * model.safetensors, or pytorch_model.bin for format "torch") or the
     * weights file's name in one (DIR/model.safetensors). One file is written
     * as WEIGHTS alone; more as STEM-00001-of-0000N.EXT and WEIGHTS.index.json
     * (docs/formats/hf.md: packing, the index, the files of an earlier save
     * that are removed). Formats: safetensors, torch (when tensio writes it).
     * Each file is atomic; the index is written last. tio_parse_size reads
     * "5GB" as transformers does. tio_save_memory/tio_save_buffer ignore it. */
    uint64_t max_shard_bytes;
    /* Floating-point tensors written as another floating-point dtype: "TO"
     * for every float tensor ("bfloat16"), or "FROM=TO" pairs separated by
     * commas ("float32=float16,float64=float32"); dtype names as
     * tio_dtype_name gives them. FROM: float64, float32, float16, bfloat16,
     * float8_e4m3fn, float8_e5m2; TO: float64, float32, float16, bfloat16.
     * Rounded as PyTorch's Tensor.to() rounds: to nearest, ties to even;
     * past the target's largest value by half an ulp or more is infinity;
     * float64 goes through float32 (as PyTorch does); NaN stays NaN (float16
     * 0x7e00 with its sign, bfloat16 0x7fc0). Sparse tensors' values are
     * cast, quantized ones when TIO_SAVE_DEQUANTIZE dequantizes them (their
     * float32), other dtypes are left as they are. Narrowing is what the
     * caller asked for, not a loss TIO_E_LOSSY reports. A format that cannot
     * store the target is TIO_E_UNSUPPORTED; a malformed cast TIO_E_ARGUMENT.
     * Into a model: onnx stores each float initializer cast, under
     * "<name>:<dtype>", with a Cast node back to its declared type before the
     * graph's nodes (a Constant node's value is not cast; Cast needs opset 6,
     * 13 for bfloat16, 19 for float8); tflite stores float32 weights as
     * float16 only, each DEQUANTIZEd to float32 (TensorFlow Lite's float16
     * quantization); rten and tmfile (their graphs declare the constants'
     * types) are TIO_E_UNSUPPORTED. NULL or "": none. */
    const char *cast;
} tio_save_options;

/* A container with a graph saved to a format without TIO_CAP_GRAPH writes its
 * constants (the weights) only: the graph and the model metadata are not
 * written, and that is not an error. A format with TIO_CAP_GRAPH refuses a
 * container without a graph (TIO_E_UNSUPPORTED). */

/* Checks that the container can be written without loss (or with only the
 * losses the flags allow). TIO_OK or TIO_E_LOSSY / TIO_E_UNSUPPORTED naming
 * the first tensor and what would be lost. Nothing is written. */
TIO_API int tio_check_save(const tio_container *c, const tio_save_options *opts,
                           tio_error *err);
/* Atomic: writes a temporary file in the target's directory, syncs it and
 * renames it over the target, then syncs the directory (TIO_SAVE_NO_SYNC
 * skips both syncs). On any failure the target is untouched and the
 * temporary file is removed. Its cost does not grow with the number of files
 * in the directory: it does not list it (unless TIO_SAVE_CLEANUP).
 * On Linux the data go to an unnamed file (O_TMPFILE) that gets its name
 * ".<name>.tio-<pid>-<16 hex>.tmp" only between link and rename (elsewhere
 * it has it from the start): a process killed there leaves that file behind.
 * TIO_SAVE_CLEANUP or tio_save_cleanup() removes such files of dead
 * processes. A target that is a device, FIFO or socket (not a symlink to
 * one, which is replaced like any symlink) is refused with TIO_E_ARGUMENT
 * before anything is renamed: write into those with tio_save_memory. */
TIO_API int tio_save(const tio_container *c, const char *path,
                     const tio_save_options *opts, tio_error *err);
/* A size as transformers' max_shard_size takes it: digits, then KB, MB, GB,
 * TB (powers of 1000; "Gb" with a lowercase b is gigabits, divided by 8),
 * KiB, MiB, GiB, TiB (powers of 1024), any case; or digits alone, or with
 * "B" (bytes). TIO_OK, or TIO_E_ARGUMENT for anything else, 0 or an
 * overflow. */
TIO_API int tio_parse_size(const char *text, uint64_t *out, tio_error *err);
/* Removes from directory `dir` the temporary files that saves of processes
 * no longer running left behind (".<name>.tio-<pid>-<16 hex>.tmp", any
 * target): regular files only, never through a symlink, never a live
 * process's or this process's own. One listing of the directory: call it
 * once before saving many files there (a process cleans a directory once).
 * *removed (may be NULL) gets the count. TIO_E_IO when the directory cannot
 * be listed or a file not removed (the others still are). Pids are this PID
 * namespace's: do not use it on a directory that processes of other hosts or
 * containers save into (NFS), whose live writers may look dead from here. */
TIO_API int tio_save_cleanup(const char *dir, size_t *removed, tio_error *err);
/* Writes to a new buffer (release it with tio_free). opts->format required. */
TIO_API int tio_save_memory(const tio_container *c, const tio_save_options *opts,
                            void **out, size_t *out_size, tio_error *err);
TIO_API void tio_free(void *p);
/* Writes into the caller's buffer of cap bytes, as snprintf does: *out_size
 * gets the encoding's full size, and only when it is <= cap is buf the whole
 * encoding (else its first cap bytes hold a prefix). buf may be NULL when cap
 * is 0: a call with cap 0 measures, a second one writes into a buffer of that
 * size, with no copy of the output in between. opts->format required. */
TIO_API int tio_save_buffer(const tio_container *c, const tio_save_options *opts, void *buf,
                            size_t cap, size_t *out_size, tio_error *err);

/* ------------------------------------------------- writing WebDataset shards */

/* Writing a shard: a plain POSIX ustar archive, members in the order they
 * are added, each a regular file with mode 0644, uid/gid 0, empty
 * uname/gname and mtime opts->mtime (0 by default): the same members give the
 * same bytes. A pax extended header ('x', path and/or size) comes before a
 * member only when its name does not fit ustar's name/prefix fields or its
 * size is 8 GiB or more. The archive ends with two zero blocks and is padded
 * with zeros to a multiple of record_size (10240 by default, as GNU tar and
 * Python's tarfile write). The file is written as tio_save writes one: a
 * temporary file beside it, renamed over it by tio_shard_writer_close;
 * tio_shard_writer_abort (or a failed close) removes it and leaves the
 * target as it was. A writer is used by one thread at a time. */
typedef struct tio_shard_writer tio_shard_writer;

typedef struct tio_shard_writer_options {
    unsigned flags;       /* TIO_SAVE_NO_SYNC, TIO_SAVE_CLEANUP: as for tio_save */
    uint64_t mtime;       /* every header's modification time (seconds since
                             1970; below 8^11); 0 by default */
    uint32_t record_size; /* pad the archive to a multiple of this many bytes:
                             a multiple of 512; 0 = 10240 (20 blocks) */
} tio_shard_writer_options;

/* Checks a member name a shard may hold and a reader may extract safely:
 * not empty, relative (no leading '/'), no ".." component, not ending in
 * '/' or a "." component (a directory), at most TIO_DEFAULT_MAX_NAME_BYTES
 * bytes (what a reader takes by default). "." and empty components inside
 * are kept ("./000001.ten", as `tar -cf x.tar .` writes names). TIO_OK or
 * TIO_E_ARGUMENT naming the rule. (A C string holds no NUL.) */
TIO_API int tio_shard_check_name(const char *name, tio_error *err);
/* opts: NULL = the defaults. */
TIO_API int tio_shard_writer_open(const char *path, const tio_shard_writer_options *opts,
                                  tio_shard_writer **out, tio_error *err);
/* Adds member `name` (tio_shard_check_name) holding data[0..size). A refused
 * name or argument writes nothing and the writer stays usable; after a
 * failed write (TIO_E_IO) every call fails and close removes the file. */
TIO_API int tio_shard_writer_add_bytes(tio_shard_writer *w, const char *name, const void *data,
                                       uint64_t size, tio_error *err);
/* Adds c encoded in save_opts->format (required; flags, version, options as
 * for tio_save_memory) as member "KEY.EXT", EXT the format's first
 * extension without the dot ("ten", "npy"). A refused encoding
 * (TIO_E_LOSSY …) writes nothing. *name_out (may be NULL) gets the member
 * name, malloc'ed (tio_free). */
TIO_API int tio_shard_writer_add_container(tio_shard_writer *w, const char *key,
                                           const tio_container *c,
                                           const tio_save_options *save_opts, char **name_out,
                                           tio_error *err);
/* Members added so far, and bytes written so far. */
TIO_API uint64_t tio_shard_writer_count(const tio_shard_writer *w);
TIO_API uint64_t tio_shard_writer_bytes(const tio_shard_writer *w);
/* Ends the archive, syncs it (unless TIO_SAVE_NO_SYNC) and renames it over
 * the target; frees w in every case. On failure the target is untouched. */
TIO_API int tio_shard_writer_close(tio_shard_writer *w, tio_error *err);
/* Removes the temporary file and frees w (NULL is fine). */
TIO_API void tio_shard_writer_abort(tio_shard_writer *w);

/* ----------------------------------------------------------------- messages */

/* A message is an ordered list of byte parts (ZeroMQ frames). Two formats
 * have a multipart form:
 *  - "zio": a ZIO message: prefix ("ZIO", level, form, JSON label),
 *    coordinates (origin, granule, seqno), then payload parts; the TENS label
 *    says which payload part holds which tensor.
 *  - "tenbin": tensorcom's framing: a header part and a data part per array.
 * Any format also travels as a single part holding its file encoding
 * (TIO_SAVE_SINGLE_PART; ZIO's is the CZMQ zmsg_encode buffer, a .zmsg file). */
typedef struct tio_part {
    const void *data;
    size_t size;
} tio_part;

/* Decodes a message. opts->format names the codec ("zio", "tenbin"); when it
 * is NULL the parts are probed: one part is a file encoding of any format, a
 * first part starting "ZIO" is ZIO, anything else tensorcom. The parts are
 * borrowed (they must outlive the container) unless TIO_OPEN_COPY is set. */
TIO_API int tio_open_parts(const tio_part *parts, size_t count,
                           const tio_open_options *opts, tio_container **out,
                           tio_error *err);

typedef struct tio_message tio_message;
/* Encodes a container as a message (opts->format required). Parts holding
 * tensor data point into the container's memory: nothing is copied unless a
 * save option converts it. The message keeps what it points to alive, so the
 * container may be freed before the message. Deterministic. */
TIO_API int tio_message_encode(const tio_container *c, const tio_save_options *opts,
                               tio_message **out, tio_error *err);
TIO_API size_t tio_message_part_count(const tio_message *m);
/* Part i ({NULL, 0} past the end). Valid until tio_message_free. */
TIO_API tio_part tio_message_part(const tio_message *m, size_t i);
/* Total bytes of all parts. */
TIO_API uint64_t tio_message_size(const tio_message *m);
TIO_API void tio_message_free(tio_message *m); /* NULL is fine */

/* ------------------------------------------------------------------ streams */

/* Containers sent and received as messages over ZeroMQ (libzmq). One stream
 * is one socket (a sending PUSH on several endpoints: one per endpoint, see
 * tio_stream_send_all); like a socket it is used from one thread at a time (it may
 * move between threads between calls); distinct streams are independent. */
typedef struct tio_stream tio_stream;

typedef enum tio_socket_type {
    TIO_SOCKET_DEFAULT = 0, /* from the endpoint's tensorcom scheme (zpush:// …) */
    TIO_SOCKET_PUSH = 1,
    TIO_SOCKET_PULL = 2,
    TIO_SOCKET_PUB = 3,     /* an XPUB underneath, so it can count subscribers */
    TIO_SOCKET_SUB = 4,
    TIO_SOCKET_DEALER = 5,  /* sends [empty][message], as ZIO's DEALER does */
    TIO_SOCKET_ROUTER = 6,  /* receives [peer-id][empty][message]; replies to a peer */
    TIO_SOCKET_PAIR = 7
} tio_socket_type;

typedef enum tio_proto {
    TIO_PROTO_AUTO = 0,      /* send: ZIO (tensorcom for a tensorcom scheme);
                                receive: decided per message (tio_open_parts) */
    TIO_PROTO_ZIO = 1,       /* ZIO TENS messages */
    TIO_PROTO_TENSORCOM = 2  /* tensorcom's tenbin framing */
} tio_proto;

#define TIO_STREAM_BIND 0x1u    /* bind (default: connect, or the scheme's choice) */
#define TIO_STREAM_CONNECT 0x2u /* connect even where the scheme binds */
#define TIO_STREAM_SINGLE 0x4u  /* send each message as one frame (TIO_SAVE_SINGLE_PART) */
#define TIO_STREAM_COPY 0x8u    /* copy tensor data into frames instead of lending it */

/* Zero-initialise for the defaults. */
typedef struct tio_stream_options {
    tio_socket_type socket;
    tio_proto proto;
    unsigned flags;          /* TIO_STREAM_* */
    int timeout_ms;          /* send/receive timeout; 0 = wait forever */
    int linger_ms;           /* how long tio_stream_close waits for the messages
                                libzmq still queues: 0 = as long as it takes (the
                                default, as libzmq's own); > 0 = that many ms; < 0 =
                                not at all. What it drops, it reports. */
    int hwm;                 /* high-water mark in messages; 0 = libzmq's default */
    const char *topic;       /* SUB: subscription prefix (NULL = the URL's #fragment,
                                or everything) */
    const char *identity;    /* routing id to announce (DEALER, ROUTER), or NULL */
    const tio_limits *limits;   /* for received messages; NULL = defaults */
    unsigned open_flags;     /* TIO_OPEN_STRICT for received messages */
    void *zmq_context;       /* a libzmq context to share (inproc://); NULL = own */
    uint64_t max_frame_bytes; /* largest frame accepted from a peer (ZMQ_MAXMSGSIZE;
                                 libzmq drops a peer that announces more, before
                                 allocating it); 0 = TIO_DEFAULT_MAX_FRAME_BYTES,
                                 UINT64_MAX = no limit */
} tio_stream_options;

#define TIO_DEFAULT_MAX_FRAME_BYTES (UINT64_C(4) << 30)

typedef struct tio_stream_stats {
    uint64_t sent, received;  /* messages */
    uint64_t malformed;       /* received messages that could not be decoded */
    uint64_t bytes_sent, bytes_received;
    uint64_t queued;          /* messages sent that libzmq has not yet written to a
                                 connection (always 0 over inproc://) */
} tio_stream_stats;

/* Opens a socket on an endpoint: tcp://host:port, ipc://path, inproc://name,
 * or a tensorcom URL (zpush zpull zpub zsub, zr* with bind and connect
 * swapped, +ipc for ipc; the #fragment is the SUB topic; {a,b} and {1..3}
 * braces expand to several endpoints). Binding to port * or 0 picks a free
 * port: tio_stream_endpoint() tells which. */
TIO_API int tio_stream_open(const char *endpoint, const tio_stream_options *opts,
                            tio_stream **out, tio_error *err);
/* The (first) endpoint as bound or connected, e.g. "tcp://127.0.0.1:41237". */
TIO_API const char *tio_stream_endpoint(const tio_stream *s);
/* Sends a container as one message. opts as for tio_message_encode; its
 * format comes from the stream's protocol when NULL. Tensor data are lent to
 * libzmq without copying and kept alive until it has sent them, so the
 * container may be freed as soon as this returns. */
TIO_API int tio_stream_send(tio_stream *s, const tio_container *c,
                            const tio_save_options *opts, tio_error *err);
/* Sends c as one message to every endpoint of a fan-out stream (a PUSH on
 * several endpoints, which has a socket per endpoint: tio_stream_send hands
 * each message to the next endpoint whose queue has room, so a peer that
 * has fallen behind does not hold up the others). Each endpoint gets its
 * copy as soon as it has room; TIO_E_TIMEOUT (after the send timeout) names
 * how many had none, the others have had theirs. On any other stream, the
 * same as tio_stream_send. Used for end-of-epoch markers (docs/streaming.md,
 * "Serving batches to trainers"): ZeroMQ keeps each connection's messages in
 * order, so a receiver that has the marker has every message sent to it
 * before. */
TIO_API int tio_stream_send_all(tio_stream *s, const tio_container *c,
                                const tio_save_options *opts, tio_error *err);
/* The number of sockets: the endpoints of a fan-out stream, else 1. */
TIO_API size_t tio_stream_endpoint_count(const tio_stream *s);
/* Receives one message. A message that cannot be decoded is consumed,
 * counted (stats.malformed) and reported as the error; the stream stays
 * usable and the next call reads the next message. TIO_E_TIMEOUT when none
 * arrived in time. Tensors are views into the received frames (they may be
 * unaligned: tio_tensor_is_aligned). Properties: "proto", "frames", "bytes",
 * and "peer" (hex routing id) on a ROUTER. */
TIO_API int tio_stream_recv(tio_stream *s, tio_container **out, tio_error *err);
/* Changes the send/receive timeout of the stream's next calls (timeout_ms
 * as in tio_stream_options; 0 = wait forever). The linger time at close is
 * not changed. TIO_E_ARGUMENT for a negative timeout. */
TIO_API int tio_stream_set_timeout(tio_stream *s, int timeout_ms, tio_error *err);
/* Changes how long tio_stream_close waits (linger_ms as in
 * tio_stream_options: 0 = as long as it takes, < 0 = not at all). */
TIO_API int tio_stream_set_linger(tio_stream *s, int linger_ms, tio_error *err);
/* PUB: waits until n subscribers have subscribed (TIO_E_TIMEOUT otherwise;
 * timeout_ms 0 = forever). Messages published before that are dropped by
 * ZeroMQ, so a publisher that must not lose any waits first. */
TIO_API int tio_stream_wait_subscribers(tio_stream *s, unsigned n, int timeout_ms,
                                        tio_error *err);
/* ROUTER: the peer the next sends go to (default: the last peer received from).
 * id NULL with size 0 goes back to that default. A set peer that is not
 * connected yet is waited for until the send timeout; then, as for a peer
 * that has gone, the send fails with TIO_E_TRANSPORT. */
TIO_API int tio_stream_set_peer(tio_stream *s, const void *id, size_t size,
                                tio_error *err);
TIO_API void tio_stream_get_stats(const tio_stream *s, tio_stream_stats *out);
/* Waits until libzmq has written every message sent so far to its
 * connection (timeout_ms 0 = as long as it takes). TIO_E_TIMEOUT, naming how
 * many are still queued, when it has not in time; nothing is dropped. */
TIO_API int tio_stream_flush(tio_stream *s, int timeout_ms, tio_error *err);
/* Closes the stream and frees it (always, whatever it returns; NULL is fine).
 * First it waits, up to the linger time (tio_stream_options.linger_ms; by
 * default as long as it takes), until libzmq has written every message sent
 * to its connection. Messages still queued then are dropped, and close says
 * so: TIO_E_TIMEOUT with their number. TIO_OK means nothing was dropped.
 *
 * What is and is not guaranteed: "written" means handed to the connection
 * (the kernel's socket for tcp:// and ipc://): a peer that crashes or
 * disconnects loses what it had not read, as with any socket, and a peer
 * that is slow is waited for. Over inproc:// a message is in the peer's
 * queue as soon as tio_stream_send returns and stays readable after the
 * sender closes, so close has nothing to wait for; a sending stream cannot
 * mix inproc:// with other transports. A PUB drops messages for subscribers
 * that are not there or past their high-water mark (ZeroMQ's rule): those
 * are not counted as queued. */
TIO_API int tio_stream_close(tio_stream *s, tio_error *err);

#ifdef __cplusplus
}
#endif
#endif /* TENSIO_H */
