/*
 * A small protobuf wire-format runtime: a zero-copy reader that walks the
 * fields of a message held in memory, and a deterministic writer.
 *
 * Internal to tensio. protobuf-c unpacks a whole message onto the heap (a
 * 1 GiB model would cost 1 GiB of heap); this reader allocates nothing: a
 * length-delimited value is a view into the input, a nested message is read
 * with a reader over that view, and the caller decides what to keep.
 *
 * Wire format recap:
 * - a message is a sequence of fields, each a tag then a value; the tag is a
 *   varint holding (field number << 3) | wire type; field numbers are
 *   1..2^29-1;
 * - wire types: 0 varint (int32/int64/uint32/uint64/sint32/sint64/bool/enum),
 *   1 fixed 64 bits (fixed64/sfixed64/double), 2 length-delimited (a varint
 *   length, then that many bytes: string, bytes, a nested message, a packed
 *   repeated field), 5 fixed 32 bits (fixed32/sfixed32/float); 3 and 4 are
 *   the deprecated groups, 6 and 7 do not exist;
 * - a varint is 1..10 bytes, 7 bits each, least significant first, the high
 *   bit set on every byte but the last; negative int32/int64 values are
 *   sign-extended to 64 bits (10 bytes); sint32/sint64 use zigzag;
 * - fixed values are little-endian;
 * - a field may repeat; for a repeated scalar the writer may pack the values
 *   into one length-delimited field, and a reader must accept both forms.
 *
 * Errors follow the project's contract: a TIO_E_* code and a message
 * "<format>: offset <n>: ..." where <n> is the absolute offset in the input
 * (`base` + the index into `buf`), naming what was read, what was expected
 * and what was found. Where a value runs past the end of its message, the
 * code is TIO_E_TRUNCATED when that end is the end of the input (a cut file)
 * and TIO_E_BOUNDS when it is the end of an enclosing length-delimited field
 * (an inner length that disagrees with the outer one).
 */
#ifndef TIO_PROTOBUF_H
#define TIO_PROTOBUF_H

#include "core/internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef enum tio_pb_wire {
    TIO_PB_VARINT = 0,
    TIO_PB_I64 = 1,
    TIO_PB_LEN = 2,
    TIO_PB_I32 = 5
} tio_pb_wire;

#define TIO_PB_MAX_FIELD 0x1FFFFFFFu /* 2^29 - 1 */
#define TIO_PB_MAX_VARINT 10u        /* bytes */

/* "varint", "fixed64", "length-delimited", "start group", "end group",
 * "fixed32", or "invalid" (6, 7 and beyond). */
const char *tio__pb_wire_name(unsigned wire);

/* ------------------------------------------------------------ reader */

/* One message (or packed range) being read. buf and size describe the whole
 * input; [pos, end) is what is left of this message. Copyable: a copy reads
 * on independently. */
typedef struct tio_pb_reader {
    const uint8_t *buf;  /* the whole input */
    size_t size;         /* its size */
    size_t pos;          /* next byte (index into buf) */
    size_t end;          /* end of this message (index into buf) */
    uint64_t base;       /* absolute offset of buf[0] in the file */
    const char *format;  /* names the format in messages ("onnx") */
    uint32_t depth;      /* 1 = the root message */
    uint32_t max_depth;  /* nested messages deeper than this are refused */
    bool inner;          /* [.., end) is a length-delimited value, not the input */
    struct tio_pb_head *head; /* NULL, or how buf is read (tio__pb_use_head) */
} tio_pb_reader;

/* Where a reader over a mapped file (buf its offset 0) reads tags, lengths
 * and scalars: fields far apart (a model's initializers, each beside its
 * weights) by pread() through src, so that walking the model touches none
 * of the weights' pages (a page of a mapping costs a fault, far more than a
 * pread); fields close together (a graph's nodes, small tensors) from the
 * mapping once a run of them is seen, as a pread per pass would cost more
 * than the mapping's faults, each of which maps several pages. Shared by a
 * reader's copies. */
typedef struct tio_pb_head {
    tio_headsrc *src;
    size_t last;   /* index of the last read */
    unsigned mode; /* 0: far reads; 1: one close read since; 2: close reads */
} tio_pb_head;

/* A field as read by tio__pb_next. */
typedef struct tio_pb_field {
    uint32_t number; /* 1..2^29-1 */
    uint8_t wire;    /* tio_pb_wire */
    size_t at;       /* index of the tag in buf (offset base + at) */
    size_t vat;      /* index of the value (after the tag; of the length prefix
                        for TIO_PB_LEN) */
    uint64_t u;      /* VARINT: the value; I32/I64: the bits (LE decoded);
                        LEN: the length */
    size_t data;     /* LEN: index of the first byte of the value in buf */
} tio_pb_field;

/* A reader over buf[0..size), the root message (depth 1). `base` is the
 * absolute offset of buf[0] in the file, for messages. max_depth 0 means 1. */
void tio__pb_init(tio_pb_reader *r, const uint8_t *buf, size_t size, uint64_t base,
                  const char *format, uint32_t max_depth);

/* Reads r's fields through ph (set up here) when src is a window over r's
 * input; else leaves r reading memory. ph must outlive r and its copies. */
void tio__pb_use_head(tio_pb_reader *r, tio_pb_head *ph, tio_headsrc *src);

/* True when the message has no more fields. */
static inline bool tio__pb_done(const tio_pb_reader *r) { return r->pos >= r->end; }

/* Reads the next field: its tag and its value (a varint decoded, fixed bits
 * loaded, a length checked against the bytes left in the message). Unknown
 * fields are skipped by not looking at them. Refuses field number 0, a field
 * number above 2^29-1 (TIO_E_CORRUPT), groups (wire types 3 and 4:
 * TIO_E_UNSUPPORTED), wire types 6 and 7 (TIO_E_CORRUPT). On failure the
 * reader does not move. */
int tio__pb_next(tio_pb_reader *r, tio_pb_field *f, tio_error *err);

/* Decodes a varint at buf[*pos], not past `end`: up to 10 bytes, the 10th at
 * most 1 (no bits beyond 64). Non-minimal encodings (0x80 0x00 for 0) are
 * accepted, as protobuf parsers do. Advances *pos. `what` names the value in
 * messages. Errors: TIO_E_TRUNCATED / TIO_E_BOUNDS (see above), TIO_E_CORRUPT
 * (longer than 10 bytes, or overflowing 64 bits). */
int tio__pb_varint(const tio_pb_reader *r, size_t *pos, size_t end, uint64_t *v,
                   const char *what, tio_error *err);

/* The field must have wire type `wire`, else TIO_E_CORRUPT naming the field
 * (`name`, may be NULL) and both wire types. */
int tio__pb_expect(const tio_pb_reader *r, const tio_pb_field *f, tio_pb_wire wire,
                   const char *name, tio_error *err);

/* A reader over a length-delimited field's value, as a nested message one
 * level deeper. TIO_E_CORRUPT when the field is not length-delimited,
 * TIO_E_LIMIT (at the field's tag) when the depth would exceed max_depth. */
int tio__pb_sub(const tio_pb_reader *r, const tio_pb_field *f, const char *name,
                tio_pb_reader *sub, tio_error *err);

/* The bytes of a length-delimited field (a view into the input). */
static inline const uint8_t *tio__pb_bytes(const tio_pb_reader *r, const tio_pb_field *f) {
    return r->buf + f->data;
}
/* The same bytes to look at now and copy (a name): read through the reader's
 * window when it has one and they fit it, valid until its next read; else
 * the view. */
const uint8_t *tio__pb_peek(const tio_pb_reader *r, const tio_pb_field *f);

/* Scalar views of a field's value, as protobuf defines them. */
static inline int64_t tio__pb_int64(const tio_pb_field *f) { return (int64_t)f->u; }
/* int32/enum: the low 32 bits (a writer sign-extends negatives to 64). */
static inline int32_t tio__pb_int32(const tio_pb_field *f) {
    return (int32_t)(uint32_t)f->u;
}
static inline bool tio__pb_bool(const tio_pb_field *f) { return f->u != 0; }
static inline int64_t tio__pb_unzigzag64(uint64_t u) {
    return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}
static inline int32_t tio__pb_unzigzag32(uint64_t u) {
    uint32_t w = (uint32_t)u;
    return (int32_t)(w >> 1) ^ -(int32_t)(w & 1);
}
static inline uint64_t tio__pb_zigzag64(int64_t v) {
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}
static inline uint32_t tio__pb_zigzag32(int32_t v) {
    return ((uint32_t)v << 1) ^ (uint32_t)(v >> 31);
}
static inline float tio__pb_float(const tio_pb_field *f) {
    uint32_t b = (uint32_t)f->u;
    float x;
    memcpy(&x, &b, sizeof x);
    return x;
}
static inline double tio__pb_double(const tio_pb_field *f) {
    double x;
    memcpy(&x, &f->u, sizeof x);
    return x;
}

/* ----------------------------------------------------- packed repeated */

/* The elements of a repeated scalar field occurrence: either packed (one
 * length-delimited field holding the values back to back) or one unpacked
 * element (the field has the element's own wire type). */
typedef struct tio_pb_packed {
    tio_pb_reader r;  /* [pos, end) = what is left of the packed range */
    uint8_t elem;     /* tio_pb_wire of the elements: VARINT, I32 or I64 */
    bool single;      /* an unpacked element not yet returned */
    uint64_t value;   /* its value */
} tio_pb_packed;

/* Starts iterating field f's elements of wire type `elem` (TIO_PB_VARINT,
 * TIO_PB_I32 or TIO_PB_I64). TIO_E_CORRUPT when f is neither length-delimited
 * nor of wire type elem, or (fixed elements) when its length is not a
 * multiple of the element size. TIO_E_ARGUMENT for another elem. */
int tio__pb_packed_init(const tio_pb_reader *r, const tio_pb_field *f, tio_pb_wire elem,
                        const char *name, tio_pb_packed *p, tio_error *err);
static inline bool tio__pb_packed_done(const tio_pb_packed *p) {
    return !p->single && tio__pb_done(&p->r);
}
/* The next element (varints decoded, fixed ones as their LE bits). */
int tio__pb_packed_next(tio_pb_packed *p, uint64_t *v, tio_error *err);
/* The number of elements, without decoding them (for sizing an allocation):
 * fixed: len / size; varints: the bytes without the continuation bit (the
 * last byte must be one, else TIO_E_TRUNCATED/TIO_E_BOUNDS at the varint
 * that runs off the end). Overlong varints are found when iterating. */
int tio__pb_packed_count(const tio_pb_reader *r, const tio_pb_field *f, tio_pb_wire elem,
                         const char *name, uint64_t *count, tio_error *err);

/* ------------------------------------------------------------ schema */

/* A message schema as data (onnx.proto's tables live in src/onnx/schema.c).
 * Field types are numbered as in protobuf's descriptor.proto
 * (FieldDescriptorProto.Type), so that they compare directly with what a
 * protobuf library reports. */
typedef enum tio_pb_type {
    TIO_PB_T_DOUBLE = 1,
    TIO_PB_T_FLOAT = 2,
    TIO_PB_T_INT64 = 3,
    TIO_PB_T_UINT64 = 4,
    TIO_PB_T_INT32 = 5,
    TIO_PB_T_FIXED64 = 6,
    TIO_PB_T_FIXED32 = 7,
    TIO_PB_T_BOOL = 8,
    TIO_PB_T_STRING = 9,
    TIO_PB_T_GROUP = 10, /* not supported: never in a table */
    TIO_PB_T_MESSAGE = 11,
    TIO_PB_T_BYTES = 12,
    TIO_PB_T_UINT32 = 13,
    TIO_PB_T_ENUM = 14,
    TIO_PB_T_SFIXED32 = 15,
    TIO_PB_T_SFIXED64 = 16,
    TIO_PB_T_SINT32 = 17,
    TIO_PB_T_SINT64 = 18
} tio_pb_type;

typedef struct tio_pb_msgdesc tio_pb_msgdesc;

typedef struct tio_pb_fielddesc {
    uint32_t number;
    const char *name;
    uint8_t type;     /* tio_pb_type */
    uint8_t repeated; /* else optional (proto2) / singular */
    uint8_t packed;   /* a repeated scalar that the schema's writers pack */
    const tio_pb_msgdesc *msg; /* TIO_PB_T_MESSAGE: its fields, or NULL when the
                                  table does not describe them */
} tio_pb_fielddesc;

struct tio_pb_msgdesc {
    const char *name; /* "TensorProto.Segment" */
    size_t nfields;
    const tio_pb_fielddesc *fields; /* in ascending field number */
};

/* The wire type a field type is written with (VARINT, I32, I64 or LEN). */
tio_pb_wire tio__pb_type_wire(unsigned type);
/* The description of field `number` in m, or NULL (an unknown field). */
const tio_pb_fielddesc *tio__pb_field_desc(const tio_pb_msgdesc *m, uint32_t number);
/* Looks f up in m (*out = NULL for an unknown field, which is fine) and
 * checks its wire type: the type's own, or length-delimited for a repeated
 * scalar (packed, whatever the schema's writers do). TIO_E_CORRUPT naming
 * "<Message>.<field>" otherwise. */
int tio__pb_check_field(const tio_pb_reader *r, const tio_pb_field *f,
                        const tio_pb_msgdesc *m, const tio_pb_fielddesc **out,
                        tio_error *err);
/* Checks the whole message r holds against m before anything is read: every
 * field as tio__pb_next reads it, known fields' wire types, nested messages
 * (through every described message type; an undescribed one is walked as a
 * message of unknown fields) within r->max_depth, packed ranges (fixed
 * lengths, every varint decoded). Iterative (a heap stack of one frame per
 * level): a deep input costs no C stack. Work is linear in the input.
 * Errors: the reader's, TIO_E_LIMIT for depth, TIO_E_NOMEM. */
int tio__pb_verify(const tio_pb_reader *r, const tio_pb_msgdesc *m, tio_error *err);

/* Grows an array p of *cap elements of `elem` bytes to hold `need` (doubling);
 * returns the new array (*cap updated), or NULL (p untouched) when memory or
 * size_t runs out. */
void *tio__pb_grow(void *p, size_t *cap, size_t need, size_t elem);

/* ------------------------------------------------------------ writer */

/*
 * The writer emits a message tree into a tio_sink in two passes over the same
 * caller function `emit`: the first only measures (every nested message's
 * size, in the order the messages are opened), the second writes, each
 * nested message's length prefix as the minimal varint of the size measured.
 * So output is canonical (minimal varints everywhere), nothing is copied
 * twice and no nested content is held in memory: large bytes go to the sink
 * by reference (tio__pb_put_len with ref). The only memory is one size per
 * nested message. `emit` must emit the same calls in both passes;
 * tio__pb_sizing() tells which pass runs, so that expensive data (a converted
 * tensor) need only be produced in the second one (in the first, the data
 * pointers of put_bytes are not read and may be NULL).
 *
 * Packed repeated fields with no element are omitted (as protobuf writers
 * do); every other put writes its field even when it holds the default.
 * After an error every later call returns that error.
 */
typedef struct tio_pb_writer tio_pb_writer;
typedef int (*tio_pb_emit_fn)(tio_pb_writer *w, void *ctx, tio_error *err);

/* Appends the message `emit` writes to sink s. `format` names the format in
 * messages. Errors: what emit returns, TIO_E_NOMEM, the sink's errors,
 * TIO_E_ARGUMENT when emit's two passes differ or begin/end do not match. */
int tio__pb_write(tio_sink *s, const char *format, tio_pb_emit_fn emit, void *ctx,
                  tio_error *err);

/* True in the measuring pass. */
bool tio__pb_sizing(const tio_pb_writer *w);

/* Scalars (field number 1..2^29-1). */
int tio__pb_put_varint(tio_pb_writer *w, uint32_t number, uint64_t v, tio_error *err);
/* int64/int32/enum: negative values sign-extended (10 bytes). */
static inline int tio__pb_put_int64(tio_pb_writer *w, uint32_t number, int64_t v,
                                    tio_error *err) {
    return tio__pb_put_varint(w, number, (uint64_t)v, err);
}
static inline int tio__pb_put_sint64(tio_pb_writer *w, uint32_t number, int64_t v,
                                     tio_error *err) {
    return tio__pb_put_varint(w, number, tio__pb_zigzag64(v), err);
}
static inline int tio__pb_put_sint32(tio_pb_writer *w, uint32_t number, int32_t v,
                                     tio_error *err) {
    return tio__pb_put_varint(w, number, tio__pb_zigzag32(v), err);
}
int tio__pb_put_fixed32(tio_pb_writer *w, uint32_t number, uint32_t bits, tio_error *err);
int tio__pb_put_fixed64(tio_pb_writer *w, uint32_t number, uint64_t bits, tio_error *err);
int tio__pb_put_float(tio_pb_writer *w, uint32_t number, float v, tio_error *err);
int tio__pb_put_double(tio_pb_writer *w, uint32_t number, double v, tio_error *err);

/* Length-delimited: n bytes from p, copied into the sink, or (ref) possibly
 * referenced by it until it is flushed (for data that outlive the save, such
 * as a container's tensor data). */
int tio__pb_put_len(tio_pb_writer *w, uint32_t number, const void *p, size_t n, bool ref,
                    tio_error *err);
/* Length-delimited: n bytes that `put` writes to the sink itself in the
 * writing pass (a tensor's bytes by the save's own ways: copied from the
 * source file in the kernel, read in, converted on the way); the measuring
 * pass only counts them. TIO_E_ARGUMENT when put writes other than n. */
typedef int (*tio_pb_put_fn)(void *ctx, tio_sink *s, tio_error *err);
int tio__pb_put_len_by(tio_pb_writer *w, uint32_t number, size_t n, tio_pb_put_fn put,
                       void *ctx, tio_error *err);
static inline int tio__pb_put_bytes(tio_pb_writer *w, uint32_t number, const void *p,
                                    size_t n, tio_error *err) {
    return tio__pb_put_len(w, number, p, n, false, err);
}
static inline int tio__pb_put_string(tio_pb_writer *w, uint32_t number, const char *s,
                                     tio_error *err) {
    return tio__pb_put_len(w, number, s, s ? strlen(s) : 0, false, err);
}

/* Packed repeated fields (omitted when n == 0). */
int tio__pb_put_packed_u64(tio_pb_writer *w, uint32_t number, const uint64_t *v, size_t n,
                           tio_error *err);
/* int64 elements have the bits of their uint64 counterparts (which may alias
 * them). */
static inline int tio__pb_put_packed_i64(tio_pb_writer *w, uint32_t number,
                                         const int64_t *v, size_t n, tio_error *err) {
    return tio__pb_put_packed_u64(w, number, (const uint64_t *)v, n, err);
}
/* int32 elements, negatives sign-extended as for a single int32. */
int tio__pb_put_packed_i32(tio_pb_writer *w, uint32_t number, const int32_t *v, size_t n,
                           tio_error *err);
/* n fixed elements of `size` 4 or 8 bytes, given as little-endian bytes
 * (float, double, fixed32, fixed64 arrays as they are in memory on a
 * little-endian host). */
int tio__pb_put_packed_fixed(tio_pb_writer *w, uint32_t number, const void *le, size_t n,
                             size_t size, tio_error *err);

/* A nested message: begin, its fields, end. */
int tio__pb_begin(tio_pb_writer *w, uint32_t number, tio_error *err);
int tio__pb_end(tio_pb_writer *w, tio_error *err);

#endif /* TIO_PROTOBUF_H */
