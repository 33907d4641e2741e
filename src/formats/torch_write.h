/* The torch format's writer (torch_write.c), hooked into its descriptor in
 * torch.c. Internal. */
#ifndef TIO_TORCH_WRITE_H
#define TIO_TORCH_WRITE_H

#include "core/internal.h"

/* The dtypes torch 1.13 and tensio both have. */
#define TIO__TORCH_DTYPES                                                                  \
    (TIO_DTYPE_BIT(TIO_BOOL) | TIO_DTYPE_BIT(TIO_INT8) | TIO_DTYPE_BIT(TIO_INT16) |      \
     TIO_DTYPE_BIT(TIO_INT32) | TIO_DTYPE_BIT(TIO_INT64) | TIO_DTYPE_BIT(TIO_UINT8) |    \
     TIO_DTYPE_BIT(TIO_FLOAT16) | TIO_DTYPE_BIT(TIO_BFLOAT16) |                           \
     TIO_DTYPE_BIT(TIO_FLOAT32) | TIO_DTYPE_BIT(TIO_FLOAT64) |                            \
     TIO_DTYPE_BIT(TIO_COMPLEX64) | TIO_DTYPE_BIT(TIO_COMPLEX128))
/* Format options: archive=NAME, the zip's top directory. */
#define TIO__TORCH_OPTIONS "archive"

int tio__torch_check(const tio_write_plan *p, tio_error *err);
int tio__torch_write(tio_write_plan *p, tio_sink *s, tio_error *err);

#endif
