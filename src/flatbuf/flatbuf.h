/*
 * A small FlatBuffers runtime: schema descriptions as C data, a verifier that
 * checks a whole buffer against a schema before anything is read, accessors
 * that apply schema defaults, and a builder.
 *
 * Internal to tensio (no C FlatBuffers library is packaged for Debian).
 *
 * Wire format recap (all little-endian):
 * - a buffer starts with a uoffset (u32) to the root table;
 * - a table starts with an soffset (i32): vtable position = table - soffset;
 * - a vtable is u16 vtable_size, u16 object_size, then one u16 per field id:
 *   the field's offset from the table start, 0 = absent;
 * - reference fields hold a uoffset relative to the field's own position;
 * - a vector or string is a u32 count followed by the elements (strings are
 *   also followed by a NUL byte);
 * - a union is two fields: a u8 type tag (0 = NONE) then the value uoffset.
 */
#ifndef TIO_FLATBUF_H
#define TIO_FLATBUF_H

#include "core/internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------ schema */

typedef enum tio_fb_kind {
    TIO_FB_NONE = 0, /* unused slot (a deprecated field) */
    /* scalars */
    TIO_FB_BOOL,
    TIO_FB_I8,
    TIO_FB_U8,
    TIO_FB_I16,
    TIO_FB_U16,
    TIO_FB_I32,
    TIO_FB_U32,
    TIO_FB_I64,
    TIO_FB_U64,
    TIO_FB_F32,
    TIO_FB_F64,
    /* references */
    TIO_FB_STRING,
    TIO_FB_TABLE,      /* field.table */
    TIO_FB_VECTOR,     /* field.elem: a scalar kind, TIO_FB_STRING or TIO_FB_TABLE */
    TIO_FB_UNION_TYPE, /* u8 tag of the union whose value is the next field id */
    TIO_FB_UNION       /* field.un; tag in the previous field id */
} tio_fb_kind;

typedef struct tio_fb_table tio_fb_table;
typedef struct tio_fb_union tio_fb_union;

typedef struct tio_fb_field {
    const char *name;           /* schema name, e.g. "kernel_size" */
    uint8_t kind;               /* tio_fb_kind */
    uint8_t elem;               /* TIO_FB_VECTOR: element kind */
    uint8_t required;           /* verifier: must be present */
    uint8_t optional;           /* scalar declared "= null": absent means absent */
    double def;                 /* scalar default (exact for every int in the schemas) */
    const tio_fb_table *table;  /* TIO_FB_TABLE, or VECTOR of TIO_FB_TABLE */
    const tio_fb_union *un;     /* TIO_FB_UNION_TYPE and TIO_FB_UNION */
    const char *enum_name;      /* scalars typed by an enum ("AutoPad"), or NULL */
} tio_fb_field;

/* Field id = index in `fields` (declaration order; a union takes two ids). */
struct tio_fb_table {
    const char *name;
    uint16_t nfields;
    const tio_fb_field *fields;
};

/* members[tag - 1] is the table for tag (1..nmembers); 0 = NONE. */
struct tio_fb_union {
    const char *name;
    uint16_t nmembers;
    const tio_fb_table *const *members;
};

/* Size in bytes of a scalar kind (0 for others). */
size_t tio__fb_scalar_size(int kind);

/* ----------------------------------------------------------- verifier */

/* The byte vectors (blobs: a model's weights) a verifier checked: where each
 * count is and its value, so that tio__fb_bytes need not read it again. */
typedef struct tio_fb_blob {
    size_t pos;     /* the count's position */
    uint32_t count;
} tio_fb_blob;
typedef struct tio_fb_blobs {
    tio_fb_blob *v; /* sorted by pos after tio__fb_verify */
    size_t n, cap;
} tio_fb_blobs;
void tio__fb_blobs_free(tio_fb_blobs *b);

/* A byte vector whose count a tio_preads thread reads (tio_fb_limits.pre). */
typedef struct tio_fb_ahead {
    uint64_t pos; /* the vector's position (its count) */
    size_t i;     /* its entry in the tio_preads */
} tio_fb_ahead;

typedef struct tio_fb_limits {
    uint32_t max_depth;  /* nested tables (root table = depth 1) */
    uint64_t max_tables; /* tables visited in total (a DAG may share tables) */
    uint64_t max_slots;  /* vtable slots of the tables visited, in total; 0 = 2 per byte of
                            the buffer + 4096 */
    tio_headsrc *head;   /* NULL, or where the counts of byte vectors are read from
                            (tio__fb_head): see tio__fb_bytes */
    tio_fb_blobs *blobs; /* NULL, or where the byte vectors checked are listed (when
                            memory for the list runs short, the rest are not) */
    /* NULL, or the counts of byte vectors read ahead on a thread of their
     * own (tio_preads of 4 bytes at each vector's position): ahead[k].i is
     * the entry of the vector at ahead[k].pos, sorted by pos (n of them).
     * The verifier takes a count from it where it has been read, else reads
     * it through head. */
    tio_preads *pre;
    const tio_fb_ahead *ahead;
    size_t nahead;
} tio_fb_limits;

/* Checks buf[0..len) as a buffer whose root is a `root` table: the root
 * offset, and for every table reachable through the schema: the soffset,
 * vtable bounds, vtable size (even, >= 4) and object size, each known
 * field's position and alignment inside the table and the buffer, required
 * fields, strings (length in bounds, NUL-terminated), vectors (count ×
 * element size in bounds without overflow, element alignment), union tags
 * and union values, nested tables — with recursion bounded by max_depth and
 * total work by max_tables and max_slots. A union tag beyond the schema's members is
 * accepted (the value is not inspected) as FlatBuffers does for a newer
 * writer; accessors report such tags to the caller.
 *
 * `format` names the format in messages and `base` is the absolute file
 * offset of buf[0], so error offsets are file offsets.
 * Errors: TIO_E_TRUNCATED, TIO_E_BOUNDS, TIO_E_CORRUPT, TIO_E_LIMIT. */
int tio__fb_verify(const uint8_t *buf, size_t len, const tio_fb_table *root,
                   const tio_fb_limits *lim, const char *format, uint64_t base,
                   tio_error *err);

/* ---------------------------------------------------------- accessors */

/* A table inside a verified buffer. All accessors stay memory-safe on an
 * unverified buffer too (they re-check bounds and return "absent"), but
 * only a verified buffer gives meaningful results. */
typedef struct tio_fb_ref {
    const uint8_t *buf;
    size_t len;
    size_t pos;    /* table start */
    size_t vt;     /* vtable start */
    uint16_t vtsize;
} tio_fb_ref;

/* A vector (or string) inside a verified buffer. */
typedef struct tio_fb_vec {
    const uint8_t *buf;
    size_t len;
    size_t data;   /* position of element 0 */
    uint32_t count;
} tio_fb_vec;

/* The root table. false if the root offset or the vtable is out of bounds. */
bool tio__fb_root(const uint8_t *buf, size_t len, tio_fb_ref *out);
/* Position of field `id` in the buffer, or 0 when absent. */
size_t tio__fb_field_pos(const tio_fb_ref *t, unsigned id);
static inline bool tio__fb_has(const tio_fb_ref *t, unsigned id) {
    return tio__fb_field_pos(t, id) != 0;
}
/* Number of field slots in the table's vtable ((vtsize - 4) / 2). */
unsigned tio__fb_slot_count(const tio_fb_ref *t);

/* Scalars: the stored value, else `def`. */
bool tio__fb_bool(const tio_fb_ref *t, unsigned id, bool def);
uint8_t tio__fb_u8(const tio_fb_ref *t, unsigned id, uint8_t def);
int8_t tio__fb_i8(const tio_fb_ref *t, unsigned id, int8_t def);
uint16_t tio__fb_u16(const tio_fb_ref *t, unsigned id, uint16_t def);
int16_t tio__fb_i16(const tio_fb_ref *t, unsigned id, int16_t def);
uint32_t tio__fb_u32(const tio_fb_ref *t, unsigned id, uint32_t def);
int32_t tio__fb_i32(const tio_fb_ref *t, unsigned id, int32_t def);
uint64_t tio__fb_u64(const tio_fb_ref *t, unsigned id, uint64_t def);
int64_t tio__fb_i64(const tio_fb_ref *t, unsigned id, int64_t def);
float tio__fb_f32(const tio_fb_ref *t, unsigned id, float def);
double tio__fb_f64(const tio_fb_ref *t, unsigned id, double def);
/* Any scalar field by schema kind, widened: ints to int64 (u64 above
 * INT64_MAX is returned bit-cast), floats to double. Applies field->def when
 * absent; returns false when absent and field->optional (no value). */
bool tio__fb_scalar(const tio_fb_ref *t, unsigned id, const tio_fb_field *field,
                    int64_t *ival, double *fval);

/* References: false when absent (or out of bounds), and *out is then zeroed
 * (an empty table or vector), so a caller that goes on reads nothing. */
bool tio__fb_table(const tio_fb_ref *t, unsigned id, tio_fb_ref *out);
bool tio__fb_vector(const tio_fb_ref *t, unsigned id, tio_fb_vec *out);
/* A string: pointer to its bytes (NUL-terminated) and length (NULL and 0
 * when absent). */
bool tio__fb_string(const tio_fb_ref *t, unsigned id, const char **s, uint32_t *n);
/* head when buf[0..len) is its mapping from file offset 0, else NULL. */
tio_headsrc *tio__fb_head(tio_headsrc *head, const uint8_t *buf, size_t len);
/* tio__fb_vector for a vector of bytes (a model's weights): its count read
 * through head (tio__fb_head's; NULL: from the buffer). The data follow the
 * count, so in a file of large blobs each count sits on a page of its own,
 * away from the tables: a page fault of the mapping per blob costs more
 * than the read (tio_headsrc), and the blob's bytes stay untouched. A count
 * in `known` (the verifier's list, or NULL) is not read again. */
bool tio__fb_bytes(const tio_fb_ref *t, unsigned id, tio_headsrc *head,
                   const tio_fb_blobs *known, tio_fb_vec *out);
/* Vector elements (i < count). */
bool tio__fb_vec_table(const tio_fb_vec *v, size_t i, tio_fb_ref *out);
bool tio__fb_vec_string(const tio_fb_vec *v, size_t i, const char **s, uint32_t *n);
uint32_t tio__fb_vec_u32(const tio_fb_vec *v, size_t i);
int32_t tio__fb_vec_i32(const tio_fb_vec *v, size_t i);
/* Pointer to element 0 (for zero-copy scalar vectors). */
static inline const uint8_t *tio__fb_vec_data(const tio_fb_vec *v) { return v->buf + v->data; }

/* ------------------------------------------------------------ builder */

/* Builds a buffer back to front, as FlatBuffers builders do. A reference
 * (tio_fb_off) is the distance of an object from the end of the buffer;
 * 0 means "none". Vtables are deduplicated (byte-equal vtables shared);
 * scalars, vectors and strings are aligned to their size (vectors' count to
 * 4); the finished buffer is padded so that every alignment also holds from
 * its start. Fields equal to their default are omitted by the caller using
 * the *_default helpers or explicitly. */
typedef uint32_t tio_fb_off;

typedef struct tio_fb_builder tio_fb_builder;

/* `format` names the format in error messages (overflow past 2 GiB, NOMEM). */
tio_fb_builder *tio__fb_builder_new(const char *format);
void tio__fb_builder_free(tio_fb_builder *b);

/* Objects (call outside of a table). */
int tio__fb_create_string(tio_fb_builder *b, const char *s, size_t n, tio_fb_off *out,
                          tio_error *err);
/* A vector of `count` scalars of `elem_size` bytes, copied from `data` as they
 * are (little-endian), element data aligned to max(elem_size, align). */
int tio__fb_create_vector(tio_fb_builder *b, const void *data, size_t count,
                          size_t elem_size, size_t align, tio_fb_off *out,
                          tio_error *err);
/* A vector of references (tables or strings). */
int tio__fb_create_offset_vector(tio_fb_builder *b, const tio_fb_off *refs, size_t count,
                                 tio_fb_off *out, tio_error *err);

/* Tables: start, add fields (any order), end. Tables do not nest: create
 * children first. */
int tio__fb_start_table(tio_fb_builder *b, tio_error *err);
/* Adds a scalar of `size` bytes (1, 2, 4, 8) with the given bits. */
int tio__fb_add_scalar(tio_fb_builder *b, unsigned id, uint64_t bits, size_t size,
                       tio_error *err);
/* Adds a reference field (skipped when ref is 0). */
int tio__fb_add_offset(tio_fb_builder *b, unsigned id, tio_fb_off ref, tio_error *err);
int tio__fb_end_table(tio_fb_builder *b, tio_fb_off *out, tio_error *err);

/* Writes the root offset. Afterwards the buffer is complete. */
int tio__fb_finish(tio_fb_builder *b, tio_fb_off root, tio_error *err);
/* The same with a 4-byte file identifier after the root offset (NULL: none). */
int tio__fb_finish_id(tio_fb_builder *b, tio_fb_off root, const char *ident, tio_error *err);
/* The finished buffer (owned by the builder); NULL when it has external
 * vectors (write it with tio__fb_write). */
const uint8_t *tio__fb_buffer(const tio_fb_builder *b, size_t *size);

/* A [ubyte] vector of n bytes whose data stay outside the builder's memory
 * (a model's weights: a builder holds only the tables): the data are
 * aligned to `align` (>= 4) in the finished buffer, and tio__fb_write asks
 * emit(ctx, sink, tag, n) to write them in their place. */
int tio__fb_create_vector_ext(tio_fb_builder *b, size_t n, size_t align, uint64_t tag,
                              tio_fb_off *out, tio_error *err);
/* The finished buffer's size, external vectors included. */
void tio__fb_write_size(const tio_fb_builder *b, size_t *size);
/* Writes the finished buffer through the sink, front to back: the builder's
 * bytes copied, each external vector's data by emit. */
int tio__fb_write(const tio_fb_builder *b, tio_sink *s,
                  int (*emit)(void *ctx, tio_sink *s, uint64_t tag, size_t n, tio_error *err),
                  void *ctx, tio_error *err);

/* Whether integer v fits integer (or bool) kind `kind` (I64/U64: always). */
bool tio__fb_int_fits(int kind, int64_t v);

/* Convenience for scalar fields with schema defaults: adds the value unless
 * it equals the default. */
int tio__fb_add_u8_default(tio_fb_builder *b, unsigned id, uint8_t v, uint8_t def,
                           tio_error *err);
int tio__fb_add_i32_default(tio_fb_builder *b, unsigned id, int32_t v, int32_t def,
                            tio_error *err);
int tio__fb_add_u32_default(tio_fb_builder *b, unsigned id, uint32_t v, uint32_t def,
                            tio_error *err);
int tio__fb_add_f32_default(tio_fb_builder *b, unsigned id, float v, float def,
                            tio_error *err);

#endif /* TIO_FLATBUF_H */
