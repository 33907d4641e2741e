/*
 * JSON text as other libraries print it (text.c): what writers that must
 * match a reference byte for byte share. Not installed.
 */
#ifndef TIO_JSON_H
#define TIO_JSON_H

#include "core/internal.h"

#include <jansson.h>

void tio__json_putc(tio_buf *b, char c);
void tio__json_puts(tio_buf *b, const char *s);
/* A string of n bytes as serde_json and nlohmann/json (ensure_ascii off)
 * both write it: `"` and `\` escaped, \b \f \n \r \t, other control
 * characters \u00xx (lowercase hex), everything else as is. */
void tio__json_string(tio_buf *b, const char *s, size_t n);
/* The keys of an object sorted by byte order, as nlohmann's std::map holds
 * them (free the array, not the keys); NULL when out of memory. */
const char **tio__json_sorted_keys(json_t *obj, size_t *count);
/* Compact JSON with object keys sorted by byte order: nlohmann's dump(),
 * doubles by its Grisu2. */
void tio__json_dump_sorted(tio_buf *b, json_t *j);
/* Whether nesting stays within `max` levels (the outer value is level 1). */
bool tio__json_depth_ok(json_t *j, unsigned depth, unsigned max);
/* A value as a string: a string as is, anything else as tio__json_dump_sorted
 * text. Into *b, reset first; NUL-terminated; false when out of memory. */
bool tio__json_text(tio_buf *b, json_t *v);

#endif
