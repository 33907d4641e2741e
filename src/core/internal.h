/*
 * Internal interface between the core and the format modules.
 * Not installed; nothing here is part of the public API.
 */
#ifndef TIO_INTERNAL_H
#define TIO_INTERNAL_H

#include "tensio.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

#if defined(__GNUC__)
#define TIO_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define TIO_HIDDEN __attribute__((visibility("hidden")))
#else
#define TIO_PRINTF(a, b)
#define TIO_HIDDEN
#endif

struct tio_format_desc;
struct tio_message;

/* ------------------------------------------------------------ errors */

/* Fills *err (if not NULL) and returns code. The message is prefixed with
 * "<format>: offset <n>: " (or "<format>: " when offset < 0). */
int tio__err(tio_error *err, int code, const char *format, int64_t offset,
             const char *fmt, ...) TIO_PRINTF(5, 6);
int tio__verr(tio_error *err, int code, const char *format, int64_t offset,
              const char *fmt, va_list ap);
/* Shortcut for an allocation failure. */
int tio__nomem(tio_error *err, const char *format);
/* Renders bytes for a message: printable ASCII as is (but '"' and '\\'),
 * anything else as \xHH; stops with "..." when `cap` would be exceeded. */
void tio__escape(const uint8_t *p, size_t n, char *out, size_t cap);
/* "[2,3,4]" for a message (truncated with "..." for long shapes). */
void tio__shape_str(const int64_t *dims, size_t rank, char *out, size_t cap);
/* The offset of the first byte of p[0..n) that is not valid UTF-8 (an
 * overlong form, a surrogate, past U+10FFFF, a sequence cut short), or n. */
size_t tio__utf8_bad(const uint8_t *p, size_t n);
/* Writes code point cp (a Unicode scalar value) as UTF-8 at out (room for 4
 * bytes); returns the bytes written. */
size_t tio__utf8_put(uint8_t *out, uint32_t cp);
/* Sorts v[0..n) (strcmp order) and returns a string that occurs twice, or
 * NULL. */
const char *tio__sorted_dup(const char **v, size_t n);
/* v in decimal, NUL-terminated, without snprintf (for per-message paths):
 * written at the end of buf, returns its first digit. */
#define TIO__DEC_CAP 21u /* 20 digits + NUL */
const char *tio__u64_dec(char buf[TIO__DEC_CAP], uint64_t v);

/* ------------------------------------------------- checked arithmetic */

static inline bool tio__add_ovf(size_t a, size_t b, size_t *r) {
    return __builtin_add_overflow(a, b, r);
}
static inline bool tio__mul_ovf(size_t a, size_t b, size_t *r) {
    return __builtin_mul_overflow(a, b, r);
}
static inline bool tio__add64_ovf(uint64_t a, uint64_t b, uint64_t *r) {
    return __builtin_add_overflow(a, b, r);
}
static inline bool tio__mul64_ovf(uint64_t a, uint64_t b, uint64_t *r) {
    return __builtin_mul_overflow(a, b, r);
}
/* Round n up to a multiple of a power of two `align`; false on overflow. */
static inline bool tio__align_up(uint64_t n, uint64_t align, uint64_t *r) {
    uint64_t t;
    if (__builtin_add_overflow(n, align - 1, &t)) return false;
    *r = t & ~(align - 1);
    return true;
}

/* Element count of a shape. Fails (TIO_E_OVERFLOW, TIO_E_CORRUPT for a
 * negative dim) when the product, or product × elem_size, does not fit in
 * int64 / size_t. *numel and *nbytes may be NULL. */
int tio__shape_size(const int64_t *shape, size_t rank, size_t elem_size,
                    uint64_t *numel, size_t *nbytes, const char *format,
                    int64_t offset, tio_error *err);

/* String tensors (src/core/strtensor.c; the layout is TIO_STRING's in
 * include/tensio.h). tio__strings_check: whether nbytes bytes at data are
 * that layout for numel strings (O(numel)). */
int tio__strings_check(const uint8_t *data, size_t nbytes, uint64_t numel, const char *format,
                       int64_t offset, tio_error *err);
/* Builds the layout of `count` strings, appended in order, into buf (len
 * bytes), never past max bytes in all (TIO_E_LIMIT naming max_dense_bytes,
 * the bound a reader passes); finish checks that count strings came. The
 * caller owns buf (tio__strbuild_free) until a tensor takes it. */
typedef struct tio_strbuild {
    uint8_t *buf;
    size_t cap, len;
    uint64_t count, done, max;
    const char *format;
    int64_t offset;
} tio_strbuild;
int tio__strbuild_init(tio_strbuild *b, uint64_t count, uint64_t max_bytes, const char *format,
                       int64_t offset, tio_error *err);
int tio__strbuild_add(tio_strbuild *b, const void *p, size_t n, tio_error *err);
int tio__strbuild_finish(tio_strbuild *b, tio_error *err);
void tio__strbuild_free(tio_strbuild *b);
/* String i (< numel) of a string tensor whose data is present. */
int tio__string_at(const struct tio_tensor *t, uint64_t i, const uint8_t **p, size_t *n);

/* ---------------------------------------------- little-endian loads/stores */

static inline uint16_t tio__ld16(const uint8_t *p) {
    return (uint16_t)(p[0] | (uint16_t)(p[1] << 8));
}
static inline uint32_t tio__ld32be(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint32_t tio__ld32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}
static inline uint64_t tio__ld64(const uint8_t *p) {
    return (uint64_t)tio__ld32(p) | ((uint64_t)tio__ld32(p + 4) << 32);
}
static inline void tio__st16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void tio__st32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}
static inline void tio__st64(uint8_t *p, uint64_t v) {
    tio__st32(p, (uint32_t)v);
    tio__st32(p + 4, (uint32_t)(v >> 32));
}

/* ------------------------------------------------------------- cursor */

/* A bounds-checked reader over untrusted bytes. Every decoder reads through
 * one. Failed reads set *err with the cursor's format name and the absolute
 * offset, naming `what` was being read, and leave the position unchanged. */
/* Where a decoder's header reads come from when the input is a mapped file:
 * pread() of the file into small windows, so that reading a few header
 * bytes per tensor does not fault in a page of the mapping per tensor (a
 * fault costs 0.5 us on bare metal, 5-25 us under a paravirtualised MMU,
 * where a pread of a few hundred bytes stays a plain system call). Data
 * stays a view into the mapping; only bytes read to be decoded go through
 * the windows. There are two, so that a format whose structs live in two
 * places (tmfile: a table of tensor structs, and a small struct beside each
 * buffer) reads each place in its own. A read far from both fetches
 * TIO__HEAD_NEAR bytes (a record header) into the one not used last;
 * one near a window (within a quarter of a window before or after it:
 * headers packed closely, read forwards or a little backwards) refills that
 * window with TIO__HEAD_WINDOW bytes starting a quarter window before the
 * read, so dense headers cost one call per 3/4 window. See
 * docs/performance.md. */
#define TIO__HEAD_NEAR 256u       /* bytes read for a header far from the last */
#define TIO__HEAD_MAX 4096u       /* larger reads go to the mapping */
#define TIO__HEAD_WINDOW 16384u   /* bytes read when headers follow closely */
typedef struct tio_headwin {
    uint64_t off; /* file offset of its bytes[0] */
    size_t len;   /* valid bytes (0 = empty) */
} tio_headwin;
typedef struct tio_headsrc {
    int fd;              /* the mapped file (read-only) */
    const uint8_t *base; /* the mapping of fd, from offset 0 */
    size_t size;         /* its bytes */
    unsigned last;       /* the window used last (0 or 1) */
    uint64_t preads;     /* windows read (tests, docs) */
    tio_headwin w[2];
    /* tio__headsrc_ahead: pre_len bytes at each of pre_n ascending offsets,
     * read by a thread (NULL: none) */
    struct tio_preads *pre;
    const uint64_t *pre_off;
    size_t pre_n, pre_len, pre_hint;
    uint8_t bytes[2][TIO__HEAD_WINDOW];
} tio_headsrc;

/* pread() of up to n bytes at off, retried on EINTR and short reads: the
 * bytes read (fewer at the end of the file, errno then 0, or on an error,
 * errno the read's). */
size_t tio__pread_full(int fd, void *buf, size_t n, uint64_t off);

/* Sets up h for the mapping base[0..size) of fd (the window starts empty). */
void tio__headsrc_init(tio_headsrc *h, int fd, const void *base, size_t size);
/* A pointer to bytes [off, off+n) of the file as read by pread(), valid until
 * the next call, or NULL when they cannot be had that way (n above
 * TIO__HEAD_MAX, a short read or an error): the caller then reads the mapping. The caller
 * has checked off + n <= h->size. */
const uint8_t *tio__headsrc_get(tio_headsrc *h, uint64_t off, size_t n);
/* Records whose headers lie far apart (at least TIO__HEAD_WINDOW on
 * average): len bytes (<= TIO__PREADS_MAX) at each of n strictly ascending
 * offsets are read by a thread of their own (tio_preads, from the last
 * down) while the caller reads from the first up; a tio__headsrc_get of
 * bytes inside one of them takes them from the thread when it has read
 * them, else reads as before. The caller checks the offsets' order and
 * that n * len is bounded by the input; off must stay valid until
 * tio__headsrc_ahead_end, which the caller calls before it returns (on
 * errors too). No thread (too few, no memory): nothing changes. */
void tio__headsrc_ahead(tio_headsrc *h, const uint64_t *off, size_t n, size_t len);
void tio__headsrc_ahead_end(tio_headsrc *h);
/* The bytes [off, off+n) when a window holds them already (no read), else
 * NULL. */
const uint8_t *tio__headsrc_held(tio_headsrc *h, uint64_t off, size_t n);
/* The same, inline when the window used last holds the bytes (most reads). */
static inline const uint8_t *tio__headsrc_at(tio_headsrc *h, uint64_t off, size_t n) {
    const tio_headwin *w = &h->w[h->last];
    if (off >= w->off && off - w->off <= w->len && n <= w->len - (size_t)(off - w->off))
        return h->bytes[h->last] + (off - w->off);
    return tio__headsrc_get(h, off, n);
}

typedef struct tio_cursor {
    const uint8_t *base; /* start of the whole input */
    size_t size;         /* bytes in the whole input */
    size_t pos;          /* absolute position */
    const char *format;  /* for messages */
    tio_headsrc *head;   /* NULL, or the source of tio__cursor_head (same bytes as base) */
} tio_cursor;

static inline void tio__cursor_init(tio_cursor *c, const void *base, size_t size,
                                    const char *format) {
    c->base = (const uint8_t *)base;
    c->size = size;
    c->pos = 0;
    c->format = format;
    c->head = NULL;
}
static inline size_t tio__cursor_left(const tio_cursor *c) {
    return c->pos <= c->size ? c->size - c->pos : 0;
}
/* Moves to an absolute offset (<= size). */
int tio__cursor_seek(tio_cursor *c, uint64_t pos, const char *what, tio_error *err);
/* Skips n bytes. */
int tio__cursor_skip(tio_cursor *c, uint64_t n, const char *what, tio_error *err);
/* Returns a pointer to the next n bytes and advances: a view into the input,
 * valid as long as the input (tensor data, names kept by pointer). */
int tio__cursor_bytes(tio_cursor *c, uint64_t n, const uint8_t **out, const char *what,
                      tio_error *err);
/* The same for bytes the decoder reads at once and does not keep (a record
 * header, a length field): from c->head's window when the cursor has one and
 * n <= TIO__HEAD_MAX, so the mapping is not touched. *out is valid only
 * until the next read through the cursor. The scalar reads below use it. */
int tio__cursor_head(tio_cursor *c, uint64_t n, const uint8_t **out, const char *what,
                     tio_error *err);
/* Attaches ctx's header source when the cursor reads ctx's input from its
 * start (the whole of it or a prefix); no-op otherwise (memory input). */
struct tio_read_ctx;
void tio__cursor_use_head(tio_cursor *c, const struct tio_read_ctx *ctx);
int tio__cursor_u8(tio_cursor *c, uint8_t *v, const char *what, tio_error *err);
int tio__cursor_u32(tio_cursor *c, uint32_t *v, const char *what, tio_error *err);
int tio__cursor_u64(tio_cursor *c, uint64_t *v, const char *what, tio_error *err);
int tio__cursor_i64(tio_cursor *c, int64_t *v, const char *what, tio_error *err);

/* --------------------------------------------------------------- sink */

/* Where writers put bytes: a growable memory buffer or a buffered file
 * descriptor. Writes are sequential. */
typedef struct tio_sink tio_sink;
int tio__sink_write(tio_sink *s, const void *p, size_t n, tio_error *err);
/* As tio__sink_write, but p[0..n) may be referenced, not copied, until the
 * sink is flushed (at the end of the save): for memory that outlives the
 * save, such as the container's tensor data. */
int tio__sink_write_ref(tio_sink *s, const void *p, size_t n, tio_error *err);
int tio__sink_zeros(tio_sink *s, size_t n, tio_error *err);
uint64_t tio__sink_pos(const tio_sink *s);
/* Overwrites p[0..n) at offset `at` of what was written already (a value
 * known only at the end, in a placeholder of its size). A file sink first
 * writes what it has gathered. */
int tio__sink_patch(tio_sink *s, uint64_t at, const void *p, size_t n, tio_error *err);

/* A file written atomically in pieces, as tio_save writes one (save.c):
 * open creates the temporary file (TIO_SAVE_NO_SYNC and TIO_SAVE_CLEANUP as
 * for tio_save); the caller writes to its fd (a file sink); commit syncs,
 * names it `path` and frees it (on failure the temporary file is removed);
 * abort removes it and frees it. */
typedef struct tio__afile tio__afile;
int tio__afile_open(const char *path, unsigned flags, tio__afile **out, tio_error *err);
int tio__afile_fd(const tio__afile *a);
int tio__afile_commit(tio__afile *a, tio_error *err);
void tio__afile_abort(tio__afile *a);

/* ------------------------------------------------------------ buffer */

/* A growable byte buffer (a writer's header being built). Zeroed = empty;
 * `oom` is set once an allocation failed, and later appends do nothing. */
typedef struct tio_buf {
    char *p;
    size_t len, cap;
    int oom;
} tio_buf;
void tio__buf_put(tio_buf *b, const void *s, size_t n);

/* --------------------------------------------------------- metadata */

/* Ordered string pairs. Keys and first values are packed into chunks (a
 * container read from a message sets ten or so properties: one allocation,
 * not twenty); keys, values and `loose` share one array block. A value that
 * replaces a shorter one gets an allocation of its own (loose[i]), freed when
 * it is replaced in turn, so memory stays bounded by what is held. A value is
 * valid until its key is set again or the kv is freed. Zeroed = empty. */
struct tio_kv_chunk;
typedef struct tio_kv {
    char **keys;          /* each NUL-terminated too; klens[i] bytes, NULs allowed */
    char **values;        /* likewise, vlens[i] bytes */
    size_t *klens, *vlens;
    unsigned char *loose; /* values[i] is its own allocation */
    size_t count, cap;
    struct tio_kv_chunk *chunks; /* newest first */
    /* past a few keys, an index of them (kv.c), kept by the adds, so that a
     * find only reads (a copy of the struct reads it too, and sees only its
     * own count of entries) */
    struct tio_kv_index *index;
} tio_kv;
void tio__kv_free(tio_kv *kv);
/* The C-string forms: key and value of strlen bytes. A key matches only a
 * stored key of the same length (a key holding NUL is not found by its
 * prefix). */
int tio__kv_set(tio_kv *kv, const char *key, const char *value, tio_error *err);
/* Appends a key the caller knows is not there yet (a decoder whose keys are
 * unique by construction, such as a JSON object read with duplicates
 * rejected): O(1), where tio__kv_set looks at every key. */
int tio__kv_append(tio_kv *kv, const char *key, const char *value, tio_error *err);
const char *tio__kv_get(const tio_kv *kv, const char *key);
/* Byte-string forms: klen/vlen bytes, NUL bytes allowed (each is stored
 * NUL-terminated as well). *vlen (may be NULL) gets the value's length. */
int tio__kv_set_n(tio_kv *kv, const char *key, size_t klen, const char *value, size_t vlen,
                  tio_error *err);
int tio__kv_append_n(tio_kv *kv, const char *key, size_t klen, const char *value, size_t vlen,
                     tio_error *err);
const char *tio__kv_get_n(const tio_kv *kv, const char *key, size_t klen, size_t *vlen);
/* Whether entry i's key (value = 0) or value (value = 1) holds a NUL byte. */
bool tio__kv_has_nul(const tio_kv *kv, size_t i, int value);

/* ---------------------------------------------------- tensors, containers */

struct tio_tensor {
    char *name; /* NULL when unnamed */
    tio_dtype dtype;
    tio_layout layout;
    tio_quant quant;        /* TIO_LAYOUT_QUANT: the block type */
    size_t rank;
    int64_t *shape;         /* never NULL (points to shape0 for small ranks) */
    int64_t shape0[4];
    uint64_t numel;
    const uint8_t *data;    /* dense elements or COO values */
    size_t nbytes;
    uint64_t nnz;           /* COO */
    const uint8_t *indices; /* COO: nnz*rank int64 LE */
    void *owned_data;       /* non-NULL when data is ours */
    void *owned_indices;
    int64_t source_offset;
    tio_kv *meta;           /* NULL until a key is set (tio__tensor_meta) */
    /* data is a view the element size does not divide (a .npy or .npz
     * member, a safetensors tensor where the header length leaves it):
     * tio_tensor_data makes an aligned copy on first use (aligned_copy, set
     * once with compare-and-swap: several threads may read), the library's
     * own byte-wise readers use data as it is. */
    unsigned char unaligned;
    _Atomic(uint8_t *) aligned_copy;
    const struct tio_container *owner; /* its limits bound work on the tensor */
    size_t index;                      /* its position in the owner */
    /* tied weights: the earlier tensor of the owner whose view of one
     * storage this one is (tio_tensor_alias), or NULL */
    const struct tio_tensor *alias;
    /* A strided view (a PyTorch tensor transposed, sliced or expanded over
     * a mapped storage; a Fortran-order or big-endian .npy array): data is
     * NULL and nbytes the C-contiguous size; the elements are at
     * strided->base + sum(i_k * stride_k) * element size, byte-swapped
     * where strided->swap says so. tio_tensor_data makes the C-contiguous
     * little-endian copy on first use (aligned_copy, as for unaligned
     * views); hashing, densify and writers walk the runs
     * (tio__strided_runs) without one. */
    const struct tio_strided *strided;
};

typedef struct tio_strided {
    const uint8_t *base; /* element (0, …, 0) */
    size_t swap;         /* the stored bytes are big-endian: the units
                          * (tio__dtype_swap_unit) reversed on the way out;
                          * 0 none */
    int64_t stride[];    /* rank strides, in elements, each >= 0 */
} tio_strided;

/* Calls fn(ctx, bytes, n) for the tensor's dense bytes in C order, stopping
 * at the first non-zero return: runs as long as the view's innermost
 * contiguous dims allow (a row, a block of rows) straight from the storage
 * when they are at least cap / 4 bytes, shorter ones (a transpose's single
 * elements) gathered into buf (cap bytes) first; a swapped view's bytes all
 * go through buf, swapped there, in pieces of whole elements. n is a whole
 * number of elements; p lies in buf or in the storage; buf is reused once
 * fn returns. cap is at least one element. */
int tio__strided_runs(const tio_tensor *t, uint8_t *buf, size_t cap,
                      int (*fn)(void *ctx, const uint8_t *p, size_t n), void *ctx);
/* The dense bytes of t into dst (t->nbytes). */
void tio__strided_gather(const tio_tensor *t, uint8_t *dst);
/* n bytes aligned to 8 that live as long as the container (chunk memory). */
void *tio__container_chunk(tio_container *c, size_t n);

struct tio_slab;
struct tio_container {
    _Atomic size_t refs;    /* holds: the caller's (1) + messages lending its data */
    tio_tensor **tensors;
    size_t count, cap;
    /* The tensors' own memory: structs in slabs of 4, 8, … 64, and names and
     * long shapes packed into chunks (src/core/container.c). A container
     * of many small tensors costs ~200 bytes a tensor, not three
     * allocations each. Freed with the container. */
    struct tio_slab *slabs;  /* newest first */
    struct tio_slab *chunks; /* newest first */
    tio_kv meta;
    tio_kv meta_types;      /* key -> type of typed metadata ("" = a plain string) */
    tio_kv props;           /* facts about the source's layout (reader-set) */
    struct tio_objtree *objects; /* the object tree (core/object.h), or NULL */
    struct tio_objlater *objects_later; /* how to make it on first use, or NULL */
    /* The root model graph or NULL. The graph layer (src/graph) sits above
     * the core: it attaches its graph with the function that frees it, so
     * that the container never calls into it. */
    struct tio_graph *graph;
    void (*graph_free)(struct tio_graph *);
    const char *format;     /* static string of the format read, or NULL */
    uint64_t source_size;
    tio_limits limits;      /* resolved; bound later work (max_dense_bytes) */
    uint64_t view_bytes;    /* data + index bytes of the tensors viewing the source */
    tio_error *warnings;
    size_t warning_count, warning_cap;
    /* the source the views point into */
    void *map;              /* mmap'ed region or NULL */
    size_t map_size;
    /* the mapped file, so that a save can copy_file_range() from it (it is
     * reopened then, and used only if it is still this file) */
    char *map_path;
    uint64_t map_dev, map_ino;
    int64_t map_mtime_sec, map_mtime_nsec;
    /* the containers it holds, whose data its views may point into (a
     * Hugging Face index's shards; tio_container_hold), released after
     * everything else: a save copies from their files, a prefetch reads
     * them */
    const tio_container **parts;
    size_t nparts, parts_cap;
    /* the tensors by name (src/core/names.c), made by the first
     * tio_container_find, or NULL */
    _Atomic(struct tio__names *) names; /* tio__names_lazy */
    void *owned_buf;        /* malloc'ed copy of the input or NULL */
    /* an http(s) source: the sparse buffer the views point into, its
     * chunks fetched on demand (src/source/remote.c), or NULL */
    struct tio_remote *remote;
    /* other memory the views point into (received frames), released last */
    void *backing;
    void (*backing_free)(void *backing);
    /* What the reader kept that the generic model has no place for (the ZIO
     * label's other keys, unreferenced payload parts…), for the same format's
     * writer: a read→write round trip keeps it. Only `native_format`'s module
     * knows the layout. */
    const char *native_format;
    void *native;
    void (*native_free)(void *native);
    /* the caller's tio_container_on_release, run after everything is freed */
    void (*release_fn)(void *ctx);
    void *release_ctx;
};

/* The tensor's metadata, created empty on first use; NULL when out of
 * memory. */
tio_kv *tio__tensor_meta(tio_tensor *t);
/* The tensor's metadata to read: never NULL (an empty kv when it has none). */
const tio_kv *tio__tensor_meta_view(const tio_tensor *t);

/* Indexes of names (names.c): name_of(ctx, i) is the name at position i
 * (NULL: none). An index of count names with room for as many again (NULL
 * when out of memory); position i put in (if its name is not there yet);
 * whether one more would pass half its slots; the first position of a
 * name, or SIZE_MAX. */
typedef struct tio__names tio__names;
typedef const char *(*tio__name_fn)(const void *ctx, size_t i);
/* The hash of every table of names read from a file: FNV-1a from a seed,
 * its high bits mixed into the low ones a table indexes by. The seed is made
 * from the table's (or its owner's) address, so that names made to collide
 * in one process (FNV's low bits alone are easy to collide) do not in
 * another, and a table is never searched in order through a cluster. */
uint64_t tio__hash_seed(const void *table);
uint64_t tio__hash_str(uint64_t seed, const char *s);
uint64_t tio__hash_bytes(uint64_t seed, const void *p, size_t n);
/* The last step of both, for a hash of the same kind made elsewhere. */
uint64_t tio__hash_mix(uint64_t h);
tio__names *tio__names_build(size_t count, tio__name_fn name_of, const void *ctx);
void tio__names_put(tio__names *ix, size_t i, tio__name_fn name_of, const void *ctx);
int tio__names_full(const tio__names *ix);
size_t tio__names_find(const tio__names *ix, const char *name, tio__name_fn name_of,
                       const void *ctx);
/* An index made by the first find of more than a few names (the names
 * searched in order before that, or when out of memory) and published for
 * other threads reading the same object; kept up to date by the object's
 * writer (a name added at position i), and freed. A copy of the object must
 * not keep it: set the copy's to NULL. */
typedef _Atomic(tio__names *) tio__names_lazy;
size_t tio__names_lazy_find(tio__names_lazy *at, size_t count, const char *name,
                            tio__name_fn name_of, const void *ctx);
void tio__names_lazy_added(tio__names_lazy *at, size_t i, tio__name_fn name_of,
                           const void *ctx);
void tio__names_lazy_free(tio__names_lazy *at);
/* A container's: a tensor just added to c, and its release. */
void tio__names_added(tio_container *c, const tio_tensor *t);
void tio__names_free(tio_container *c);

/* Takes one more hold on c (tio_container_free releases one). */
void tio__container_ref(const tio_container *c);
/* Makes part one of c's parts, taking over one hold the caller has on it
 * (released with c); on failure (out of memory) the caller keeps it. */
int tio__container_add_part(tio_container *c, const tio_container *part, tio_error *err);
/* c and every container it holds, directly or not, each once, c first
 * (malloc'ed, *n of them); NULL when out of memory. */
const tio_container **tio__container_reach(const tio_container *c, size_t *n);

/* Appends a tensor whose data/indices point into the container's source (or
 * other memory that outlives the container). Validates dtype, dims, sizes
 * and, for COO, that each index is in [0, dim). `format`/`offset` name the
 * place for error messages. */
int tio__container_add_view(tio_container *c, const tio_tensor_desc *d,
                            int64_t source_offset, const char *format,
                            tio_error *err);
/* The same for a quantized tensor (d->layout TIO_LAYOUT_QUANT) of type q. */
int tio__container_add_quant_view(tio_container *c, const tio_tensor_desc *d, tio_quant q,
                                  int64_t source_offset, const char *format, tio_error *err);

/* ------------------------------------------------------------ reading */

/* Internal flag bits, for tests only (not in tensio.h): a format with a fast
 * path for common input (ZIO's plain label) takes its general path instead,
 * so a test can check the two agree. */
#define TIO__OPEN_GENERAL_ONLY 0x80000000u /* in tio_open_options.flags */
#define TIO__SAVE_GENERAL_ONLY 0x80000000u /* in tio_save_options.flags */
/* ... or only the fast path: input it does not take is TIO_E_UNSUPPORTED. */
#define TIO__OPEN_FAST_ONLY 0x40000000u
#define TIO__SAVE_FAST_ONLY 0x40000000u

/* tio_container_prefetch telling in *how what it did (TIO_PREFETCH_*), for
 * tests; force_willneed takes the fallback a kernel before 5.14 takes. */
#define TIO_PREFETCH_NONE 0      /* nothing mapped (memory input), or the hint failed */
#define TIO_PREFETCH_POPULATED 1 /* MADV_POPULATE_READ: pages read and mapped */
#define TIO_PREFETCH_HINTED 2    /* MADV_WILLNEED: readahead started, nothing mapped */
int tio__prefetch(tio_container *c, bool force_willneed, int *how, tio_error *err);
/* Whether t's bytes are present: 0 only for a tensor of a container opened
 * from a URL with TIO_OPEN_LAZY whose bytes were not fetched yet. */
int tio__tensor_fetched(const tio_tensor *t);
/* TIO_OK, or TIO_E_ARGUMENT naming the tensor when t (every tensor of c when
 * t is NULL) was not fetched. */
int tio__need_fetched(const tio_container *c, const tio_tensor *t, tio_error *err);
/* tio__prefetch of every shard of a Hugging Face index's container (*how:
 * the last shard's); TIO_OK doing nothing for any other container
 * (formats/hfindex.c). */

typedef struct tio_read_ctx {
    const uint8_t *data;
    size_t size;
    tio_limits limits;  /* resolved: no zero fields */
    unsigned flags;     /* TIO_OPEN_* */
    tio_container *c;   /* where tensors and warnings go */
    const char *path;   /* the file opened (tio_open), or NULL (memory, parts):
                           for files a format finds beside it (ONNX external
                           data) */
    tio_headsrc *head;  /* data is a mapped file: header reads by pread (see
                           tio_headsrc), or NULL */
} tio_read_ctx;

/* Records a validation finding (TIO_E_INVALID) in the container. Returns
 * TIO_OK, or TIO_E_INVALID (and fills *err) under TIO_OPEN_STRICT. */
int tio__warn(tio_read_ctx *ctx, const char *format, int64_t offset, tio_error *err,
              const char *fmt, ...) TIO_PRINTF(5, 6);

/* One part of a message being decoded: bytes, and where they sit in the
 * source (a .zmsg file) or -1 (a received frame). */
typedef struct tio_rpart {
    const uint8_t *data;
    size_t size;
    int64_t offset;
} tio_rpart;

/* Decodes a message from parts with format f's read_parts (or, for one part
 * that f's probe accepts, f->read). The container takes `backing` (freed with
 * backing_free when the container goes, or at once on failure). opts may be
 * NULL. f NULL = choose as tio_open_parts does. */
int tio__open_rparts(const struct tio_format_desc *f, const tio_rpart *parts, size_t n,
                     const tio_open_options *opts, void *backing,
                     void (*backing_free)(void *), tio_container **out, tio_error *err);

/* ------------------------------------------------------------ writing */

/* What a writer sees of tensor i after the save options were applied:
 * names dropped, dtypes widened, COO densified, quantized blocks
 * dequantized. */
typedef struct tio_wtensor {
    const char *name; /* NULL when none (or dropped) */
    tio_dtype dtype;
    tio_layout layout; /* TIO_LAYOUT_QUANT only for formats with TIO_CAP_QUANT */
    size_t rank;
    const int64_t *shape;
    uint64_t numel;
    size_t nbytes; /* of the data as it will be written */
    uint64_t nnz;  /* COO */
    const tio_tensor *src;
    /* tio_save_options.cast made dtype another float than src's (a model
     * format with TIO__CAP_CAST_WEIGHTS restores the declared type) */
    bool cast;
} tio_wtensor;

typedef struct tio_write_plan tio_write_plan;
size_t tio__plan_count(const tio_write_plan *p);
const tio_wtensor *tio__plan_tensor(const tio_write_plan *p, size_t i);
/* The bytes to write for tensor i (converted if needed; valid until the
 * next call). For COO also the indices (nnz*rank int64 LE). */
int tio__plan_data(tio_write_plan *p, size_t i, const uint8_t **data,
                   const uint8_t **indices, tio_error *err);
/* Tensor i's bytes when tio__plan_data would hand out the container's own
 * (no conversion): stable for the whole write; else NULL. */
const uint8_t *tio__plan_view(const tio_write_plan *p, size_t i);
/* Writes bytes that tio__plan_data (or the source) gave: referenced when they
 * are the container's, copied when they are the plan's converted scratch. */
int tio__plan_sink_data(const tio_write_plan *p, tio_sink *s, const void *data, size_t n,
                        tio_error *err);
/* The n bytes of the source file that the container's mapping shows at
 * `mapped`, read by pread() into out: 1, or 0 when they cannot be had that
 * way (the source is not a mapped file any more, or not these bytes) and the
 * caller reads the mapping. For bytes read in an order of their own (a
 * permutation): touching a mapping costs more than reading the file where
 * page faults are slow. */
int tio__plan_pread(const tio_write_plan *p, const void *mapped, size_t n, void *out);
/* The source file that the container's mapping shows at `mapped` (n bytes),
 * opened by the plan (valid until it is freed; pread() only), and in *off
 * where they lie; -1 when there is none. */
int tio__plan_source_fd(const tio_write_plan *p, const void *mapped, size_t n, uint64_t *off);
/* tio__plan_sink_data that also continues *crc (tio__crc32) over the bytes
 * in the same pass: each piece's CRC is taken just before it is written,
 * while it is in the cache (a mapped source's bytes are written from the
 * mapping then, not with copy_file_range()). */
int tio__plan_sink_data_crc(const tio_write_plan *p, tio_sink *s, const void *data, size_t n,
                            uint32_t *crc, tio_error *err);
/* Writes tensor i's bytes as the plan has them (tio__plan_data then
 * tio__plan_sink_data), but a converted tensor is streamed, without a buffer
 * of its size: a densified one as zero runs and its values, a dequantized one
 * in blocks, a widened one in pieces, a strided view run by run. For writers
 * that only pass the data through to the sink. */
int tio__plan_sink_tensor(tio_write_plan *p, tio_sink *s, size_t i, tio_error *err);
/* The same, continuing *crc (tio__crc32) over the bytes written: a widened
 * tensor in its pieces; any other as tio__plan_data then
 * tio__plan_sink_data_crc. */
int tio__plan_sink_tensor_crc(tio_write_plan *p, tio_sink *s, size_t i, uint32_t *crc,
                              tio_error *err);
/* A CRC job (tio__crc32_start) over views[0..n) (sizes[i] bytes each, NULL:
 * none), the plan's source file read by pread() where they lie in its
 * mapping; NULL if it could not start (then take the CRCs in one pass). */
struct tio_crc_job;
struct tio_crc_job *tio__plan_crc_start(tio_write_plan *p, const uint8_t *const *views,
                                        const size_t *sizes, size_t n);
/* What a format's check built (a lowered model, its layout) handed to its
 * write on the same plan, so that the work is not done twice: keep stores it
 * (freed with free_fn when the plan goes, or replaced); take returns it (the
 * caller frees it then) or NULL when the check kept nothing. */
void tio__plan_keep(tio_write_plan *p, void *state, void (*free_fn)(void *));
void *tio__plan_take(tio_write_plan *p);
const tio_container *tio__plan_container(const tio_write_plan *p);
unsigned tio__plan_flags(const tio_write_plan *p);
/* tio_save_options.version: the format version to write (0 = the format's
 * default). A writer (or its check) refuses a version it cannot write. */
unsigned tio__plan_version(const tio_write_plan *p);
/* The value of format option `key` (tio_save_options.options), or NULL. The
 * core already checked the syntax and that the format takes the key. */
const char *tio__plan_option(const tio_write_plan *p, const char *key);
/* The path a file save (tio_save) writes, for writers that place files
 * beside it (ONNX external data); NULL for memory saves and messages. */
const char *tio__plan_path(const tio_write_plan *p);
/* A plan on the heap (for message encoding); runs the format's check. */
int tio__plan_create(const tio_container *c, const tio_save_options *opts,
                     const struct tio_format_desc *f, tio_write_plan **out, tio_error *err);
void tio__plan_destroy(tio_write_plan *p);

/* tio_save with switches for tests: TIO__SAVE_NO_TMPFILE forces the
 * named-temporary-file path that is used where O_TMPFILE is unavailable. */
#define TIO__SAVE_NO_TMPFILE 1u
int tio__save_file(const tio_container *c, const char *path, const tio_save_options *opts,
                   unsigned how, tio_error *err);

/* tio_save with opts->max_shard_bytes: a Hugging Face sharded checkpoint
 * (formats/hfsave.c). */
int tio__save_sharded(const tio_container *c, const char *path, const tio_save_options *opts,
                      tio_error *err);

/* A message being built by a format's write_parts. Parts are appended in
 * order. */
struct tio_message;
/* Appends a copy of n bytes. */
int tio__msg_add_copy(struct tio_message *m, const void *data, size_t n, tio_error *err);
/* Appends a malloc'ed buffer the message takes (freed with it, or at once on
 * failure). */
int tio__msg_add_owned(struct tio_message *m, void *buf, size_t n, tio_error *err);
/* Appends the data of plan tensor i: lent from the container (no copy) when
 * the plan does not convert it, else a copy of the converted bytes. */
int tio__msg_add_tensor(struct tio_message *m, tio_write_plan *p, size_t i, tio_error *err);
/* Holds for the transport: one per frame lent to libzmq. */
void tio__message_ref(struct tio_message *m);
void tio__message_unref(struct tio_message *m);

/* ------------------------------------------------------- format modules */

/* Format-private capability: int64 constants that the graph uses only as a
 * Reshape's shape input are stored as int32 when every value fits (Tengine's
 * convert_tool does the same with ONNX's int64 shapes); and the constants of
 * a graph from another format are passed to the writer in any dtype, since it
 * folds them into params (or refuses what it would have to store). */
#define TIO__CAP_NARROW_SHAPES 0x100u
/* The TIO_CAP_* bits tio_format_caps reports; the format-private ones
 * (TIO__CAP_*) start above them. */
#define TIO__CAP_PUBLIC 0xFFu
/* Format-private capability: a tensor that is an alias of another
 * (tio_tensor_alias) is not written, only the tensor it aliases (tied
 * weights in safetensors: one copy, as transformers' save_pretrained keeps
 * it). The plan leaves such tensors out. */
#define TIO__CAP_ONE_COPY 0x200u
/* Format-private capability: a metadata value may hold NUL bytes (GGUF's
 * length-prefixed strings). Without it a writer is not given such a value:
 * the plan refuses it by key (a key holding NUL no format takes). */
#define TIO__CAP_META_NUL 0x400u
/* Format-private capability: the file is one unnamed array (.npy, as
 * np.save writes it: the file's name names it). The one tensor of a
 * one-tensor container is written without its name and without
 * TIO_SAVE_DROP_NAMES (`tensio convert input_0.pb input_0.npy`); a name
 * among several tensors still needs the flag (the format's check refuses
 * more than one anyway). */
#define TIO__CAP_ONE_ARRAY 0x800u
/* Format-private capability: tio_save_options.cast applies to a model's
 * weights: an initializer is stored as the dtype cast to and the writer
 * restores the type the graph declares (ONNX: a Cast node after it;
 * TensorFlow Lite: a DEQUANTIZE of float16), so the
 * graph computes as before from rounded weights. A Constant node's value (a
 * TENSOR attribute) is not cast. Without it a cast into a model is refused. */
#define TIO__CAP_CAST_WEIGHTS 0x1000u

typedef struct tio_format_desc {
    const char *name;        /* "btf" */
    const char *description; /* one line */
    const char *extensions;  /* ".btf" (space separated) */
    unsigned caps;           /* TIO_CAP_*, TIO__CAP_* */
    uint32_t dtypes;         /* bit (1u << dtype) per storable dtype */
    uint32_t versions;       /* bit (1u << v) per version v the writer can write
                                (tio_save_options.version); 0 = not versioned */
    /* 0 = not this format, otherwise a confidence 1..100. Must be cheap and
     * safe on any bytes (size may be 0). */
    int (*probe)(const uint8_t *data, size_t size);
    /* Decodes ctx->data into ctx->c. */
    int (*read)(tio_read_ctx *ctx, tio_error *err);
    /* Optional, for formats whose header is at the start and whose read()
     * touches no byte past it but tensor data (views): from the first
     * `have` bytes of a `size`-byte file, *need = the bytes from the start
     * read() reads (more than `have` when it cannot tell yet: called again
     * with those). A remote source fetches just those before read(); a
     * format without it is fetched whole. */
    void (*head)(const uint8_t *data, size_t have, uint64_t size, const tio_limits *limits,
                 uint64_t *need);
    /* Optional: format-specific losses beyond caps/dtypes (name length…),
     * called with the plan already built. */
    int (*check)(const tio_write_plan *p, tio_error *err);
    /* Encodes the plan. */
    int (*write)(tio_write_plan *p, tio_sink *sink, tio_error *err);
    /* Format options the writer takes (tio_save_options.options), space
     * separated ("level form seqno"), or NULL for none. */
    const char *options;
    /* Optional: the format as a multipart message (ZeroMQ frames). */
    int (*read_parts)(tio_read_ctx *ctx, const tio_rpart *parts, size_t n, tio_error *err);
    int (*write_parts)(tio_write_plan *p, struct tio_message *m, tio_error *err);
} tio_format_desc;

/* The type of typed container metadata `key`, NULL for a plain string. */
const char *tio__meta_type(const tio_container *c, const char *key);
/* Appends typed metadata the caller knows is new (a decoder). */
int tio__meta_append_typed(tio_container *c, const char *key, const char *value,
                           const char *type, tio_error *err);
/* The same with lengths (a value may hold NUL bytes). */
int tio__meta_append_typed_n(tio_container *c, const char *key, size_t key_len,
                             const char *value, size_t value_len, const char *type,
                             tio_error *err);
/* Whether `type` is a metadata type name (see tio_container_meta_set_typed). */
bool tio__meta_type_ok(const char *type);

/* Opens a Hugging Face model directory: the first of model.safetensors,
 * model.safetensors.index.json, pytorch_model.bin, pytorch_model.bin.index.json
 * it holds, as transformers looks for them (formats/hfindex.c). */
int tio__open_model_dir(const char *dir, const tio_open_options *opts, tio_container **out,
                        tio_error *err);

/* "DIR/NAME", malloc'ed; NULL when out of memory. */
char *tio__path_join(const char *dir, const char *name);

/* Resolves a tio_limits (NULL or zero fields = defaults). */
tio_limits tio__limits_resolve(const tio_limits *l);
/* Walks the dense form of a COO tensor in row-major order without holding
 * it: zeros(ctx, n) for a run of n zero elements, value(ctx, elem) for a
 * stored value (a duplicated coordinate gives its last value). O(nnz) memory,
 * O(nnz log nnz) time plus the callbacks. Stops at the first nonzero return. */
int tio__coo_walk(const tio_tensor *t, int (*zeros)(void *ctx, uint64_t n),
                  int (*value)(void *ctx, const uint8_t *elem), void *ctx, tio_error *err);
/* The dense size of a COO tensor would exceed `limit`: TIO_E_LIMIT with a
 * message naming the tensor, its dense size and shape, the limit and the
 * options that raise it. `what` says which work ("hashing it dense"). */
int tio__dense_limit_err(tio_error *err, const char *format, int64_t offset,
                         const tio_tensor *t, size_t index, uint64_t dense, uint64_t limit,
                         const char *what);

#define TIO_DTYPE_BIT(d) (1u << (unsigned)(d))

size_t tio__format_count(void);
const tio_format_desc *tio__format_at(size_t i);
const tio_format_desc *tio__format_find(const char *name);

/* --------------------------------------------------------- dtype helpers */

/* IEEE half / bfloat16 to float. */
float tio__half_to_float(uint16_t h);
float tio__bf16_to_float(uint16_t h);
/* 8-bit floats (TIO_FLOAT8_E4M3FN, TIO_FLOAT8_E5M2) to float; exact. */
float tio__f8e4m3fn_to_float(uint8_t b);
float tio__f8e5m2_to_float(uint8_t b);
/* Element conversions (cast.c). tio__convert_elems: n elements of `from` at
 * src as `to` at dst (little-endian), for the pairs a save writes: a float
 * dtype to another (tio_save_options.cast: rounded to nearest, ties to even,
 * as PyTorch rounds; float64 through float32 as PyTorch does), bool to
 * uint8, an int64 Reshape shape to int32 (its first 4*n bytes). */
void tio__convert_elems(tio_dtype from, tio_dtype to, const uint8_t *src, uint8_t *dst,
                        uint64_t n);
bool tio__cast_source(tio_dtype d); /* a float dtype a cast converts from */
bool tio__cast_target(tio_dtype d); /* float64, float32, float16, bfloat16 */
/* Parses tio_save_options.cast into map[from] = to (TIO_DTYPE_INVALID: left
 * as it is): "TO" for every float dtype, or "FROM=TO,...". TIO_E_ARGUMENT
 * naming what is wrong. */
int tio__cast_parse(const char *spec, tio_dtype map[TIO_DTYPE_COUNT], tio_error *err);
/* The bytes a byte swap reverses: the element size, or a complex number's
 * part size (each part is swapped on its own). */
size_t tio__dtype_swap_unit(tio_dtype d);
/* Reverses every `unit` bytes of p[0..nbytes) in place (unit < 2: nothing). */
void tio__swap_units(uint8_t *p, size_t nbytes, size_t unit);

/* --------------------------------------------------------- sha256 helper */
/* Through libcrypto, loaded when the first hash is made (sha256.c): new and
 * start give TIO_OK, TIO_E_IO where it cannot be loaded (naming the library
 * and what failed), or TIO_E_NOMEM (then *out is NULL). */
typedef struct tio_sha256 tio_sha256;
int tio__sha256_new(tio_sha256 **out, tio_error *err);
void tio__sha256_update(tio_sha256 *h, const void *p, size_t n);
void tio__sha256_final(tio_sha256 *h, uint8_t out[32]); /* also frees */
/* The SHA-256 of p[0..n) computed on a thread of its own, for a writer that
 * has other work meanwhile (rten's onnx_hash of a whole .onnx costs about as
 * much as writing the file); where no thread can be started, join computes
 * it. p (and fd) must stay valid until the join. With fd >= 0, the same
 * bytes lie at off in that file, and the job reads them by pread() where
 * that costs less than the mapping (sha256.c). */
typedef struct tio_sha256_job tio_sha256_job;
int tio__sha256_start(tio_sha256_job **out, const void *p, size_t n, int fd, uint64_t off,
                      tio_error *err);
/* Waits for the digest, writes it to out and frees j; false: OpenSSL failed. */
bool tio__sha256_join(tio_sha256_job *j, uint8_t out[32]);

/* ---------------------------------------------------------- crc32 helper */
/* zlib's crc32() (zip's CRC-32) of p[0..n), continuing from crc (0 to
 * start), by carry-less multiplies where the processor has them (crc32.c). */
uint32_t tio__crc32(uint32_t crc, const void *p, size_t n);
/* The same by a chosen way (tests): how 0 the best there is, 1 zlib's
 * crc32() alone, 2 the 128-bit folding (never the wide one). */
uint32_t tio__crc32_with(uint32_t crc, const void *p, size_t n, int how);
/* How large inputs are folded here (tests, bench): 0 not (zlib), 1 with
 * PCLMULQDQ, 2 with VPCLMULQDQ on AVX-512 too. */
int tio__crc32_folds(void);
/* CRC-32s of count buffers (p[i], n[i]; p[i] NULL: none, 0) taken in order
 * by a thread of their own, so that a writer computes them while it writes
 * (the .npz writer: a zip member's CRC, 1 GiB in ~75 ms, beside writev()s
 * of ~350 ms). The arrays and the bytes must stay valid until the join.
 * Without a thread (pthread_create failed) each is taken when waited for. */
typedef struct tio_crc_job tio_crc_job;
/* The bytes from which a zip writer's stored members take their CRCs on a
 * job's thread rather than in the writing pass (docs/performance.md). */
#define TIO__CRC_JOB_MIN ((uint64_t)32 << 20)
/* pthread_create with every signal blocked in the new thread (thread.c). */
bool tio__spawn(pthread_t *t, void *(*fn)(void *), void *arg);
/* A mapped source file: its bytes at map[0..size), read by pread() from fd
 * where fd >= 0; c the container that mapped it. */
typedef struct tio__mapped {
    const uint8_t *map;
    size_t size;
    int fd;
    const tio_container *c;
} tio__mapped;
/* The one of files[0..n) (sorted by map, not overlapping) that holds
 * p[0..len), its offset in *off; or NULL. */
const tio__mapped *tio__mapped_find(const tio__mapped *files, size_t n, const void *p,
                                    size_t len, size_t *off);
/* The buffers lying in one of files[0..nfiles) with an fd >= 0 are read from
 * it by pread() rather than through the mapping (the array is copied). */
tio_crc_job *tio__crc32_start(const uint8_t *const *p, const size_t *n, size_t count,
                              const tio__mapped *files, size_t nfiles);
/* The CRC of buffer i, waiting for it if needed. */
uint32_t tio__crc32_wait(tio_crc_job *j, size_t i);
/* Stops the thread after its current buffer, joins it and frees j (NULL ok). */
void tio__crc32_join(tio_crc_job *j);

/* ------------------------------------------------- scattered small reads */
/* `len` bytes (≤ TIO__PREADS_MAX) at each of count offsets of fd (size
 * bytes), read by pread() on a thread of its own from the last offset down,
 * while the caller decodes and takes them from wherever it needs: a format
 * whose per-tensor structs lie far apart in the file (tmfile's TM2_Buffer
 * beside each buffer's data) pays a system call and a cold page-cache
 * lookup per struct, about 1.2 µs here, and two threads halve that. An
 * offset past the end (UINT64_MAX: none) is not read. off must stay valid
 * until the end. NULL: no thread (too few, out of memory, pthread_create
 * failed); the caller reads every struct itself. */
#define TIO__PREADS_MAX 256u
typedef struct tio_preads tio_preads;
tio_preads *tio__preads_start(int fd, const uint64_t *off, size_t count, size_t len,
                              uint64_t size);
/* Entry i's bytes into out (len bytes): true when they were read (waiting
 * for the thread's read under way); false when the caller must read them
 * itself (its read failed; i out of range; j NULL; or the thread had not
 * begun it, and now will not, and the caller has no ring). Where the kernel
 * gives the caller a ring of its own (from 256 entries: preads.c), an
 * entry the thread has not begun is read here with the free entries above
 * it, TIO__URING_DEPTH in one system call (the open of a 10,000-tensor BTF:
 * 23 -> 20 ms). The same i may be taken again. Called from one thread. */
bool tio__preads_take(tio_preads *j, size_t i, uint8_t *out);
/* Stops the thread after its current read, joins it and frees j (NULL ok). */
void tio__preads_end(tio_preads *j);

/* ------------------------------------------------- reads in batches */
/* A ring of io_uring (src/core/uring.c), used by one thread: up to
 * TIO__URING_DEPTH reads in one system call. NULL where the kernel or a
 * sandbox refuses it; the caller then pread()s. */
#define TIO__URING_DEPTH 64u
typedef struct tio_uring tio_uring;
typedef struct tio_uring_read {
    int fd;
    void *buf;
    uint32_t len;
    uint64_t off;
    int32_t res; /* after tio__uring_reads: the bytes read, or -errno */
} tio_uring_read;
tio_uring *tio__uring_new(void);
/* Makes the n reads (n <= TIO__URING_DEPTH) and waits for all of them:
 * true with each res set (a read the kernel cannot make, -EINVAL before
 * Linux 5.6, fails alone); false where the ring took none of them (or
 * failed), and the caller reads them itself. */
bool tio__uring_reads(tio_uring *u, tio_uring_read *r, size_t n);
void tio__uring_free(tio_uring *u);

/* ------------------------------------------------------ the host machine */
/* The calling thread's CPU time in nanoseconds (CLOCK_THREAD_CPUTIME_ID: the
 * system time of its writes included, other threads' work and waits not);
 * 0 where there is no such clock. The file sink times its two ways of
 * moving bytes at non-congruent offsets with it (sink.c, TRY_EPOCH). */
uint64_t tio__host_cpu_ns(void);
/* The process's CPU time, all its threads', and the monotonic clock, in
 * nanoseconds (0 where there is no such clock): the file sink asks whether
 * its writer thread runs beside the saving thread (sink.c, AW_MIN). */
uint64_t tio__host_proc_cpu_ns(void);
uint64_t tio__host_wall_ns(void);
/* The calling thread's time on a processor and its time waiting for one
 * while it could run (Linux: /proc/thread-self/schedstat, nanoseconds),
 * into *ran and *waited: 0, or -1 where that cannot be read. The file sink
 * asks it of a window whose threads did not run side by side: whether
 * other work had the processors (sink.c, AW_WAIT_PCT). */
int tio__host_run_wait_ns(uint64_t *ran, uint64_t *waited);
/* The processors this thread may run on (sched_getaffinity; the online
 * ones where that fails), no more than its cgroups' CPU limit allows
 * (tio__host_cpu_quota of /proc/self/cgroup and /proc/self/mountinfo); at
 * least 1. The file sink starts its writer thread only where this is 2 or
 * more (sink.c, AW_MIN). */
unsigned tio__host_cpus(void);
/* The processors' worth of time the cgroups of this process allow it, from
 * the texts of /proc/self/cgroup and /proc/self/mountinfo: for each cgroup
 * hierarchy mounted that limits CPU time (cgroup2; cgroup with the "cpu"
 * controller), the least limit set by the process's cgroup and those above
 * it up to the mount (cgroup v2's cpu.max "QUOTA PERIOD", v1's
 * cpu.cfs_quota_us over cpu.cfs_period_us): QUOTA / PERIOD, at least 1.
 * 0 where none sets a limit or none can be read. */
unsigned tio__host_cpu_quota(const char *cgroup, const char *mountinfo);
/* Whether this machine is a virtual machine whose memory balloon reports
 * free pages to the host (virtio-balloon free page reporting, feature bit
 * 5 in the "features" file of a device under balloon_dir, which is
 * /sys/bus/virtio/drivers/virtio_balloon): the host then takes back free
 * blocks of 2 MiB and more, and the next use of such memory faults in the
 * host. 0 where nothing says so (no balloon, no sysfs, not Linux). The file
 * sink writes in smaller pieces there (sink.c, WRITE_PIECE_HOST). */
#define TIO__BALLOON_DIR "/sys/bus/virtio/drivers/virtio_balloon"
int tio__host_reports_free_pages(const char *balloon_dir);
/* Free memory, in bytes, in blocks of 2^lo pages (of `page` bytes) and more
 * that such a host does not take back: those under the order free page
 * reporting starts at (the file reporting_order, which is
 * /sys/module/page_reporting/parameters/page_reporting_order; 9 where it
 * cannot be read), as the file buddyinfo (/proc/buddyinfo) lists them. 0
 * where buddyinfo cannot be read. The file sink asks it once per save where
 * the host takes memory back (sink.c, host_pieces). */
#define TIO__BUDDYINFO "/proc/buddyinfo"
#define TIO__REPORTING_ORDER "/sys/module/page_reporting/parameters/page_reporting_order"
uint64_t tio__host_kept_free(const char *buddyinfo, const char *reporting_order, unsigned lo,
                             size_t page);
/* The sum tio__host_kept_free makes, of text in /proc/buddyinfo's form,
 * orders lo..hi (saturating; zone DMA not counted). */
uint64_t tio__buddy_free(const char *text, unsigned lo, unsigned hi, size_t page);
/* The part of tio__host_kept_free's bytes in blocks the kernel keeps for
 * movable pages (the page cache's), as the file pagetypeinfo
 * (/proc/pagetypeinfo) lists them; UINT64_MAX where that file cannot be
 * read (only root may) or lists no Movable line. Reading it costs the
 * kernel a walk of its free lists (~4.5 ms with 24 GiB free, against
 * ~30 us for buddyinfo), so the sink asks it only where the answer decides
 * (sink.c, kept_piece). */
#define TIO__PAGETYPEINFO "/proc/pagetypeinfo"
uint64_t tio__host_kept_movable(const char *pagetypeinfo, const char *reporting_order,
                                unsigned lo, size_t page);
/* The sum tio__host_kept_movable makes, of text in /proc/pagetypeinfo's
 * form: the Movable lines' blocks of orders lo..hi (saturating; zone DMA
 * not counted); *lines: the Movable lines seen. */
uint64_t tio__pagetype_movable(const char *text, unsigned lo, unsigned hi, size_t page,
                               unsigned *lines);

#endif /* TIO_INTERNAL_H */
