/*
 * Objects inside PyTorch checkpoints that are data, decoded from what the
 * pickle machine built (src/pickle) without running anything:
 *  - NumPy arrays (numpy.core.multiarray._reconstruct + BUILD) and scalars
 *    (numpy.core.multiarray.scalar), their dtype a numpy.dtype call with its
 *    BUILD state. NumPy never runs; object arrays are refused by name.
 *  - the quantizer parameters of torch._utils._rebuild_qtensor.
 * Internal to the torch reader (docs/formats/torch.md).
 */
#ifndef TIO_FORMATS_TORCH_OBJECTS_H
#define TIO_FORMATS_TORCH_OBJECTS_H

#include "pickle/pickle.h"

#define TIO_NP_MAX_RANK 64u /* NumPy's own limit is 64 dims */

/* A NumPy array as pickled: its bytes are either a view into the pickle
 * (protocol >= 3: BINBYTES) or protocol 2's _codecs.encode(str, 'latin1'),
 * the UTF-8 text of one code point < 256 per byte. */
typedef struct tio_np_array {
    tio_dtype dtype;
    size_t rank;
    int64_t shape[TIO_NP_MAX_RANK];
    uint64_t numel, nbytes; /* numel × item size, checked */
    int fortran;            /* Fortran (column-major) order */
    size_t swap;            /* bytes reversed per unit for big-endian data, 0: none */
    const uint8_t *src;     /* the pickled bytes (a view into the pickle) */
    size_t src_n;
    int latin1;             /* src is UTF-8 text to decode (see above) */
    uint64_t at;            /* source offset of the data's opcode */
} tio_np_array;

/* Decodes the _reconstruct call `o` (its BUILD state: version, shape, dtype,
 * is_fortran, data). Errors name `fmt`, the array's `name` and the offset;
 * everything is checked against the pickled bytes, nothing allocated. */
int tio__np_array(const tio_pickle *p, const tio_pk_obj *o, const char *fmt, const char *name,
                  tio_np_array *a, tio_error *err);

/* Writes the array's elements C-ordered and little-endian into dst
 * (a->nbytes bytes): latin-1 decoded, byte-swapped, transposed as needed.
 * `idx` is scratch for TIO_NP_MAX_RANK indices. TIO_OK or TIO_E_NOMEM. */
int tio__np_array_bytes(const tio_np_array *a, uint8_t *dst, int64_t *idx);

/* Whether the array's bytes can be viewed in place (little-endian, C order,
 * bytes not text). */
static inline int tio__np_array_is_view(const tio_np_array *a) {
    return !a->latin1 && !a->swap && (!a->fortran || a->rank < 2);
}

/* A NumPy scalar (numpy.core.multiarray.scalar(dtype, bytes)) as text
 * ("1.5", "-3", "true", "1+2j") and the metadata type it fits ("float32",
 * "int64", "bool", "string"). */
int tio__np_scalar(const tio_pickle *p, const tio_pk_obj *o, const char *fmt, const char *name,
                   char *text, size_t cap, const char **type, tio_error *err);

/* Whether o is a bytes object as protocol 2 pickles one (bytes() for b'',
 * _codecs.encode(str, 'latin1') otherwise) or a BINBYTES; *n its length. */
int tio__th_bytes_len(const tio_pickle *p, const tio_pk_obj *o, uint64_t *n);

/* A float as the shortest text that reads back to the same value (as a
 * float32 when `single`), "nan", "inf", "-inf". */
void tio__th_float_text(double v, int single, char *s, size_t cap);

/* The quantizer parameters of _rebuild_qtensor (its argument 4), checked
 * against the tensor's rank: per-tensor affine (scale, zero_point) or
 * per-channel affine (tensors of scales and zero points over `axis`). */
typedef struct tio_qparams {
    const char *scheme;  /* "per_tensor_affine", "per_channel_affine", …
                            (torch's qscheme names) */
    int per_channel;
    double scale;        /* per tensor */
    int64_t zero_point;  /* per tensor */
    uint32_t scales, zero_points; /* per channel: their rebuild calls (objects) */
    int64_t axis;        /* per channel */
} tio_qparams;

int tio__th_qparams(const tio_pickle *p, const tio_pk_obj *params, size_t rank,
                    const char *fmt, const char *name, uint64_t at, tio_qparams *q,
                    tio_error *err);

#endif
