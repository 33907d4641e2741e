/*
 * Element values for the commands that compute on them (diff, stats):
 * loading one element of any dtype as a number, dense views of tensors
 * (a COO tensor densified within a budget), tensor selection and
 * multi-index formatting. Public API only.
 */
#ifndef TENSIO_CLI_VALUES_H
#define TENSIO_CLI_VALUES_H

#include "cli.h"

#include <stddef.h>
#include <stdint.h>

/* How a dtype's values are compared and summed. */
typedef enum cli_num_kind {
    CLI_NUM_FLOAT = 0, /* float16/bfloat16/float8/float32/float64: as double;
                          complex64/complex128 too (see cli_load_complex) */
    CLI_NUM_INT = 1,   /* int8..int64: exactly as int64 */
    CLI_NUM_UINT = 2   /* bool and uint8..uint64: exactly as uint64 */
} cli_num_kind;

cli_num_kind cli_dtype_kind(tio_dtype dt);

/* The element at p (tio_dtype_size(dt) little-endian bytes, any alignment).
 * cli_load_f64 converts every dtype exactly except 64-bit integers beyond
 * 2^53 (rounded). cli_load_i64 / cli_load_u64 only for their kind. */
double cli_load_f64(tio_dtype dt, const uint8_t *p);
/* A complex element's real and imaginary parts (any other dtype: its value
 * and 0). cli_load_f64 of a complex element is its magnitude |z| (hypot),
 * what stats summarises; cli_is_complex says which dtypes these are. */
void cli_load_complex(tio_dtype dt, const uint8_t *p, double *re, double *im);
int cli_is_complex(tio_dtype dt);
int64_t cli_load_i64(tio_dtype dt, const uint8_t *p);
uint64_t cli_load_u64(tio_dtype dt, const uint8_t *p);

/* The elements of a tensor in C order, without densifying it: a dense
 * tensor's data, or a COO tensor's stored values sorted by flat index (a
 * coordinate stored twice takes its last value, as tio_tensor_densify does;
 * every other element is zero). The sort takes O(nnz) memory: what the file
 * holds, never the dense size its shape claims. */
typedef struct cli_coo_entry {
    uint64_t flat;  /* C-order index of the coordinate */
    uint64_t value; /* which stored value */
} cli_coo_entry;

typedef struct cli_elems {
    size_t size;            /* element size */
    uint64_t numel;
    const uint8_t *dense;   /* dense data, or NULL for COO */
    const uint8_t *values;  /* COO: the stored values */
    cli_coo_entry *entries; /* COO: one per distinct coordinate, by flat index */
    size_t count, cursor;
    void *owned;            /* a quantized tensor's dequantized float32 values */
} cli_elems;

/* TIO_OK, or TIO_E_NOMEM / TIO_E_CORRUPT (a coordinate out of range) in err.
 * A quantized tensor is dequantized to float32 (tio_tensor_densify) when its
 * numel x 4 bytes are at most max_dense (the container's max_dense_bytes),
 * checked before anything is allocated, else TIO_E_LIMIT; a block type
 * tensio cannot dequantize is TIO_E_UNSUPPORTED. */
int cli_elems_init(cli_elems *e, const tio_tensor *t, uint64_t max_dense, tio_error *err);
void cli_elems_free(cli_elems *e);
/* COO: the flat index of the next stored coordinate (UINT64_MAX when none
 * is left); dense: UINT64_MAX. */
uint64_t cli_elems_next(const cli_elems *e);
/* The element at flat index f (a zero element where a COO tensor stores
 * nothing). Calls must not decrease f. */
const uint8_t *cli_elems_at(cli_elems *e, uint64_t f);

/* Which tensor TENSOR names: a decimal index when in range, otherwise a name.
 * CLI_EXIT_OK, or CLI_EXIT_FAIL after "tensio: PATH: no tensor 'X'". */
int cli_select_tensor(const char *path, const tio_container *c, const char *sel,
                      size_t *index);

/* The C-order multi-index of flat element `flat` as "[1, 0, 2]" ("[]" for
 * rank 0) into buf; and the same as a JSON array (NULL when out of memory). */
void cli_multi_index(const int64_t *shape, size_t rank, uint64_t flat, char *buf,
                     size_t size);
json_t *cli_json_multi_index(const int64_t *shape, size_t rank, uint64_t flat);

/* A double for JSON: a number, or the string "nan", "inf", "-inf". */
json_t *cli_json_double(double v);
/* %.*g, or "nan", "inf", "-inf". */
void cli_format_double(char *buf, size_t size, double v, int digits);

#endif /* TENSIO_CLI_VALUES_H */
