/* A tiny protobuf writer for tests that build ONNX bytes by hand (hostile
 * and edge-case models the real writers never produce). Allocation failure
 * aborts: this is test support. */
#ifndef TIO_TESTS_TPB_H
#define TIO_TESTS_TPB_H

#include <stddef.h>
#include <stdint.h>

typedef struct tpb {
    uint8_t *b;
    size_t n, cap;
} tpb;

void tpb_raw(tpb *p, const void *d, size_t n);
void tpb_varint(tpb *p, uint64_t v);
/* a field's tag: number and wire type */
void tpb_tag(tpb *p, uint32_t num, unsigned wire);
/* field num as a varint, as bytes, as a string */
void tpb_int(tpb *p, uint32_t num, uint64_t v);
void tpb_bytes(tpb *p, uint32_t num, const void *d, size_t n);
void tpb_str(tpb *p, uint32_t num, const char *s);
/* Appends sub as field num (a nested message) and frees it. */
void tpb_msg(tpb *p, uint32_t num, tpb *sub);

#endif
