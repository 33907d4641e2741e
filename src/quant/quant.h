/* Block-quantized element types (ggml's): the one table of block sizes and
 * names, and the dequantizers. Internal. */
#ifndef TIO_QUANT_H
#define TIO_QUANT_H

#include "../core/internal.h"

typedef struct tio_quant_info {
    const char *name;  /* ggml's type name */
    uint16_t elems;    /* elements per block */
    uint16_t bytes;    /* bytes per block */
    /* one block to `elems` floats, or NULL when tensio cannot dequantize it */
    void (*dequantize)(const uint8_t *block, float *out);
} tio_quant_info;

/* The entry of q, or NULL when q is not a tio_quant. */
const tio_quant_info *tio__quant_info(int q);

/* Dequantizes `nblocks` blocks of q (which must have a dequantizer) to
 * nblocks × elems floats. */
void tio__dequantize(const tio_quant_info *qi, const uint8_t *blocks, size_t nblocks,
                     float *out);

/* The names of the types tensio dequantizes, space-separated, in buf (n
 * bytes; cut after the last name that fits); returns buf. */
const char *tio__quant_dequantizable(char *buf, size_t n);

#endif
