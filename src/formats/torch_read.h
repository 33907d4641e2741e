/*
 * PyTorch checkpoints: what the reader's two files share. torch.c opens the
 * file (the zip and legacy layouts, the pickles, the storages, the scan for
 * globals outside the vocabulary); torch_walk.c walks the object the pickle
 * built into tensors and metadata. Not installed.
 */
#ifndef TIO_FORMATS_TORCH_READ_H
#define TIO_FORMATS_TORCH_READ_H

#include "core/object.h"
#include "graph/budget.h"
#include "pickle/pickle.h"
#include "zip/zip.h"

#define TH "torch"
#define TH_MAX_RANK 64u /* dims of a tensor here (torch's own limit is 64 too) */

/* internal linkage names of what the two files share */
#define th_hash_of tio__th_hash_of
#define th_find tio__th_find
#define th_insert tio__th_insert
#define th_storage_zip tio__th_storage_zip
#define th_str_eq tio__th_str_eq
#define th_gname tio__th_gname
#define th_name_push tio__th_name_push
#define th_walk tio__th_walk

/* Open addressing over (hash, index + 1) pairs: the zip members by name, the
 * storages by key, the names given so far. The caller compares the entries
 * whose hash matches (its low 32 bits: 8-byte slots keep a large index in
 * cache). Grows at half full, so every lookup is O(1) expected and the
 * reader stays linear in its input. */
typedef struct th_slot {
    uint32_t h;
    uint32_t idx; /* index + 1; 0 = empty */
} th_slot;
typedef struct th_index {
    th_slot *slot;
    size_t cap, n;
} th_index;

/* The indexes' hash of a name: 8 bytes a step, the same however the name
 * is split among th_hash_add calls (a member's name is looked up in three
 * pieces), keyed by a seed per open so that names chosen to collide cannot
 * be prepared in advance. */
typedef struct th_hash {
    uint64_t h, tail, len;
} th_hash;

typedef struct th_storage {
    const uint8_t *key;  /* the persistent id's key (a view into the pickle) */
    size_t key_len;
    tio_dtype dtype;
    const uint8_t *data; /* its bytes */
    uint64_t nbytes;
    uint64_t at;         /* source offset of its bytes, or of its record when owned */
    uint8_t *owned;      /* inflated bytes (until a tensor takes them), swapped in place */
    size_t swap;         /* mapped big-endian bytes: the unit its tensors' views
                          * reverse on the way out (tio_strided.swap), else 0 */
    size_t tensors;      /* tensors viewing it (tied weights: more than one) */
    size_t first;        /* the first of them (container index) */
} th_storage;

typedef struct th_reader {
    tio_read_ctx *ctx;
    tio_error *err;
    tio_zip zip;
    int is_zip, big_endian, script;
    const char *prefix; /* the archive's directory, e.g. "archive" (not NUL-ended) */
    size_t prefix_len;
    const char *pkl_name; /* "data.pkl" … for messages */
    uint64_t pkl_base;    /* source offset of the pickle's first byte (0: inflated) */
    const uint8_t *pk_data; /* the pickle's first byte */
    tio_pickle pk;
    uint8_t *pk_owned;   /* its bytes when inflated (th_machine), else NULL */
    struct tio_pk_later *later; /* the container's tree to be (th_tree) */
    tio_zip_locals *locals; /* the thread reading local headers (th_early), or NULL */
    uint8_t *seen;       /* per object: a container already walked */
    int64_t *tensor_of;  /* per object: the tensor it was read as (container index), or -1 */
    th_storage *st;
    size_t nst, capst;
    uint64_t dense;      /* bytes copied for strided views and swaps (max_dense_bytes) */
    const char *storage_dir; /* "data/", or "constants/" (TorchScript's constants.pkl) */
    th_index members;    /* zip members by name */
    th_index keys;       /* storages by key */
    uint32_t *key_at;    /* storages by decimal key, index + 1 (th_dec) */
    uint32_t *member_at; /* <prefix>/<member_dir><decimal key> records, index + 1 */
    const char *member_dir; /* the storage_dir member_at is filled for, or NULL */
    th_index names;      /* the tensor and metadata names given (tio_container's) */
    char scratch[256], gscratch[200]; /* th_walk's leaf text */
    const char **given;  /* the names given (r->names indexes them) */
    size_t ngiven, given_cap;
    uint64_t seed;          /* the indexes' hash key (th_hash) */
    const char *probe_s[3]; /* a lookup's pieces (th_member) */
    size_t probe_n[3];
    char *name;          /* the path being walked */
    size_t name_len, name_cap;
    size_t name_depth; /* keys walked into: 0 = the root (unnamed); "" is a name */
    /* the bytes of the names given and the metadata values copied (packed in
     * the container's chunks), each charged: a key or string the pickle
     * memoizes may be referred to along any number of paths, each a copy
     * (TH_NAMES_FACTOR x input + slack) */
    tio_budget names_mem;
} th_reader;

/* Names and metadata values may take this many times the input (real ones
 * take a fraction of it: the file holds every key at least once, and the
 * tensors' bytes). */
#define TH_NAMES_FACTOR 4u

static inline int64_t th_off(uint64_t v) { return tio__zip_off(v); }
static inline size_t th_dtype_size(tio_dtype d) { return tio_dtype_size(d); }

/* torch.c: the indexes' hash of n bytes; the first entry of hash h for which
 * eq(ctx, index) holds, or SIZE_MAX; an entry added (TIO_E_NOMEM) */
uint64_t th_hash_of(uint64_t seed, const void *p, size_t n);
size_t th_find(const th_index *x, uint64_t h, int (*eq)(const void *ctx, size_t i),
               const void *ctx);
int th_insert(th_index *x, uint64_t h, size_t i);
/* torch.c: the storage of persistent-id key `key` (read from its record once,
 * then shared), as dtype; whether pickle string o is s */
int th_storage_zip(th_reader *r, const tio_pk_obj *key, tio_dtype dtype, uint64_t at,
                   th_storage **out);
int th_str_eq(const tio_pk_obj *o, const char *s);
/* torch_walk.c: a global's "module.name" into out; a key appended to the
 * path walked (*mark: where to cut it back); the walk of object idx */
const char *th_gname(const tio_pk_obj *g, char *out, size_t cap);
int th_name_push(th_reader *r, const char *s, size_t n, size_t *mark, uint64_t at);
int th_walk(th_reader *r, uint32_t idx, unsigned depth);

#endif /* TIO_FORMATS_TORCH_READ_H */
