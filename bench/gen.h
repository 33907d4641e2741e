/* Data builders shared by the bench commands. */
#ifndef TIO_BENCH_GEN_H
#define TIO_BENCH_GEN_H

#include <stdint.h>
#include <tensio.h>

/* Anonymous private mapping of n bytes (not touched), or NULL. */
void *bn_big_alloc(size_t n);
void bn_big_free(void *p, size_t n);
/* Bytes of tensor data bn_build uses for (size, count). */
uint64_t bn_data_bytes(uint64_t size, uint64_t count);
/* A container of `count` float32 tensors borrowing `data` (bn_data_bytes
 * bytes), with a chain-of-Add graph when the format holds graphs. 0 or 1. */
int bn_build(const char *format, uint64_t size, uint64_t count, const void *data,
             tio_container **out);

/* Save options for the format: names dropped where it has none. */
tio_save_options bn_save_options(const char *format);

#endif
