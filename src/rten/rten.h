/*
 * RTen (.rten) internals shared by the format descriptor (formats/rten.c),
 * the reader (rten/read.c) and the writer (rten/write.c). Not installed.
 * See docs/formats/rten.md.
 */
#ifndef TIO_RTEN_RTEN_H
#define TIO_RTEN_RTEN_H

#include "core/internal.h"
#include "rten/schema.h"

#define RT_FMT "rten"
#define RT_HEADER_LEN 32u
#define RT_VERSION 2u
#define RT_SCHEMA_VERSION 1
#define RT_INLINE_MAX 16u /* rten-convert: constants with <= 16 elements stay inline */
#define RT_ALIGN 64u

/* "RTEN", the V2 magic. */
extern const uint8_t tio__rten_magic[4];

/* Model metadata fields, in schema order (Metadata table field ids). */
#define RT_META_COUNT 8u
extern const char *const tio__rten_meta_keys[RT_META_COUNT];

/* ConstantDataType (ushort) and DataType (ubyte) use different orders. */
tio_dtype tio__rten_const_dtype(unsigned code);
int tio__rten_const_code(tio_dtype d);
tio_dtype tio__rten_value_dtype(unsigned code);
/* The DataType a value of dtype d is declared with: rten-convert's mapping
 * of ONNX value types (BOOL, INT32, INT64 -> Int32; other floats -> Float). */
int tio__rten_value_code(tio_dtype d);
/* ConstantData union member for a dtype, and back. */
int tio__rten_data_tag(tio_dtype d);
tio_dtype tio__rten_tag_dtype(unsigned tag);

/* rten/read.c */
int tio__rten_read(tio_read_ctx *ctx, tio_error *err);
/* rten/write.c */
int tio__rten_check(const tio_write_plan *p, tio_error *err);
int tio__rten_write(tio_write_plan *p, tio_sink *s, tio_error *err);

#endif /* TIO_RTEN_RTEN_H */
