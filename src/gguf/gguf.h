/* GGUF key/value pairs: reading a value into tensio's typed metadata text,
 * and writing such text back as GGUF bytes (src/formats/gguf.c uses both).
 * Internal. docs/formats/gguf.md. */
#ifndef TIO_GGUF_H
#define TIO_GGUF_H

#include "../core/internal.h"

#define GGUF_NAME "gguf"

/* GGUF value types (gguf_type). */
enum {
    GGUF_U8 = 0, GGUF_I8 = 1, GGUF_U16 = 2, GGUF_I16 = 3, GGUF_U32 = 4, GGUF_I32 = 5,
    GGUF_F32 = 6, GGUF_BOOL = 7, GGUF_STRING = 8, GGUF_ARRAY = 9, GGUF_U64 = 10,
    GGUF_I64 = 11, GGUF_F64 = 12, GGUF_TYPE_COUNT = 13
};

typedef tio_buf gguf_buf;

void gguf__put(gguf_buf *b, const void *s, size_t n);
void gguf__put_u32(gguf_buf *b, uint32_t v);
void gguf__put_u64(gguf_buf *b, uint64_t v);

/* Reads the value of type `type` at the cursor (an array: its element type
 * and count first), appending its text to `text` and its type name
 * ("uint32", "array[string]") to `tname`. `depth` counts enclosing arrays.
 * Strings longer than ctx->limits.max_name_bytes, arrays nested deeper than
 * max_depth, element counts past the data and nested arrays whose element types differ are refused. *bad_bool
 * counts bool bytes other than 0 and 1 (read as true, as ggml does). */
int gguf__read_value(tio_cursor *cur, const tio_read_ctx *ctx, uint32_t type, uint32_t depth,
                     gguf_buf *text, gguf_buf *tname, uint64_t *bad_bool, tio_error *err);

/* Appends to `out` the GGUF encoding (type, then value) of metadata `key`
 * with text `value` (value_len bytes: a string may hold NUL bytes) and
 * tensio type `type` (NULL: a string). TIO_E_ARGUMENT naming the key when
 * the text is not a value of the type. */
int gguf__write_value(gguf_buf *out, const char *key, const char *value, size_t value_len,
                      const char *type, tio_error *err);

/* The GGUF type of a tensio scalar type name of n bytes, or -1. */
int gguf__scalar_type(const char *name, size_t n);

#endif
