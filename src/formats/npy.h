/* The .npy module's parts that the .npz module (a zip of .npy files) reuses:
 * one array read from .npy bytes, and the header np.save writes. */
#ifndef TIO_FORMATS_NPY_H
#define TIO_FORMATS_NPY_H

#include "core/internal.h"

/* The dtypes a .npy file holds (tio_format_desc.dtypes). */
#define TIO__NPY_DTYPES                                                                    \
    (TIO_DTYPE_BIT(TIO_BOOL) | TIO_DTYPE_BIT(TIO_INT8) | TIO_DTYPE_BIT(TIO_INT16) |        \
     TIO_DTYPE_BIT(TIO_INT32) | TIO_DTYPE_BIT(TIO_INT64) | TIO_DTYPE_BIT(TIO_UINT8) |      \
     TIO_DTYPE_BIT(TIO_UINT16) | TIO_DTYPE_BIT(TIO_UINT32) | TIO_DTYPE_BIT(TIO_UINT64) |   \
     TIO_DTYPE_BIT(TIO_FLOAT16) | TIO_DTYPE_BIT(TIO_FLOAT32) | TIO_DTYPE_BIT(TIO_FLOAT64) |  \
     TIO_DTYPE_BIT(TIO_COMPLEX64) | TIO_DTYPE_BIT(TIO_COMPLEX128) | TIO_DTYPE_BIT(TIO_STRING))

/* The dtype of a NumPy kind and item size ('f', 4: float32; 'c', 8:
 * complex64), or TIO_DTYPE_INVALID. */
tio_dtype tio__npy_kind_dtype(char kind, unsigned size);

/* Where the .npy bytes given to tio__npy_read_array come from. */
typedef struct tio__npy_src {
    const char *format;    /* the format named in messages: "npy", "npz" */
    const char *name;      /* the tensor's name, or NULL */
    uint64_t base;         /* the source offset of the first byte (for messages and views) */
    /* NULL: the bytes lie in the source (ctx->data), and the tensor views them.
     * Otherwise a malloc'ed buffer holding them (an inflated member), which the
     * call takes: the tensor keeps it as its data, or it is freed (also on
     * failure). */
    void *owned;
    int64_t source_offset; /* the tensor's source offset when `owned` */
    /* NULL, or a copy of the first head_n bytes of data (read by pread: the
     * header is parsed from it when it holds the whole header, so that the
     * mapping is not touched; data stay views into it) */
    const uint8_t *head;
    size_t head_n;
    int props;             /* set the container's properties (version, descr, …) */
} tio__npy_src;

/* Reads the .npy file data[0..size) as one tensor appended to ctx->c: the
 * header parsed, byte order and Fortran order copied to little-endian C
 * order, unaligned data copied to aligned memory, else a view. */
int tio__npy_read_array(tio_read_ctx *ctx, const uint8_t *data, size_t size,
                        const tio__npy_src *src, tio_error *err);

/* NumPy's dtype.str for a tensio dtype ("<f4", "|b1"), or NULL when none. */
const char *tio__npy_descr(tio_dtype d);

/* The bytes np.save writes before w's data (magic, version, header length,
 * the padded dict) at `version` (0: 1.0, or 2.0 when 1.0 cannot hold it),
 * malloc'ed into *out. `descr`: NULL for w's dtype's (tio__npy_descr), or
 * the one tio__npy_strings chose. */
int tio__npy_header(const tio_wtensor *w, const char *descr, unsigned version,
                    const char *format, uint8_t **out, size_t *out_len, tio_error *err);

/* Plan tensor i, a TIO_STRING tensor, as NumPy fixed-width strings: <U<n>
 * (UTF-32LE, n the most characters of a string) when every string is UTF-8,
 * else |S<n> (bytes, n the longest), NUL-padded, into a malloc'ed *out of
 * numel × the width bytes, and its descr. TIO_E_LOSSY when a string ends
 * with a NUL byte (NumPy strips trailing NULs); TIO_E_LIMIT when the padded
 * array exceeds max_dense_bytes. */
int tio__npy_strings(const tio_write_plan *p, size_t i, const char *format, char descr[32],
                     uint8_t **out, size_t *out_n, tio_error *err);
/* Format option strings: absent (U when every string is UTF-8, else S), S
 * (bytes) or U (UTF-8 required: a string that is not is TIO_E_LOSSY by
 * index); another value is TIO_E_ARGUMENT. */
int tio__npy_strings_option(const tio_write_plan *p, const char *format, tio_error *err);

#endif
