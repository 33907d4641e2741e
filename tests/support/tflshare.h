/* TFLite models whose references share one table, for the tests of what
 * such sharing costs (tests/formats/test_tflite.c: refused by the decode
 * budget; tests/core/test_memory.c: within the memory bound). Built with the
 * library's FlatBuffers builder; a failure aborts: this is test support. */
#ifndef TIO_TESTS_TFLSHARE_H
#define TIO_TESTS_TFLSHARE_H

#include <stddef.h>
#include <stdint.h>

/* kind 0: n operators that are one operator with m inputs (-1, absent);
 * kind 1: n tensors that are one constant whose name has m bytes;
 * kind 2: n tensors that are one constant with one quantization table of m
 * min and m max floats (the verifier visits two tables per reference, at
 * most one per 4 bytes of the file: n <= ~m). The file (malloc'ed), *len
 * its size. */
uint8_t *tfl_shared_model(int kind, uint32_t n, uint32_t m, size_t *len);

/* The model a FlatBuffers builder holds, finished with `root` and laid out
 * as a .tflite (calloc'ed): the root offset, "TFL3" (8 bytes inserted after
 * the root offset keep every alignment), the tables, then `tail` zero bytes
 * from a multiple of 16 (none when 0; the caller may fill them: they end the
 * file). Frees the builder. */
struct tio_fb_builder;
uint8_t *tfl_finish(struct tio_fb_builder *b, uint32_t root, size_t tail, size_t *len);

#endif
