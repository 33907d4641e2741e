#include "tpb.h"

#include <stdlib.h>
#include <string.h>

void tpb_raw(tpb *p, const void *d, size_t n) {
    if (p->n + n > p->cap) {
        size_t nc = p->cap ? p->cap : 256;
        while (nc < p->n + n) nc *= 2;
        uint8_t *b = realloc(p->b, nc);
        if (!b) abort();
        p->b = b;
        p->cap = nc;
    }
    if (n) memcpy(p->b + p->n, d, n);
    p->n += n;
}

void tpb_varint(tpb *p, uint64_t v) {
    uint8_t t[10];
    size_t k = 0;
    do {
        t[k] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) t[k] |= 0x80;
        k++;
    } while (v);
    tpb_raw(p, t, k);
}

void tpb_tag(tpb *p, uint32_t num, unsigned wire) { tpb_varint(p, (uint64_t)num << 3 | wire); }

void tpb_int(tpb *p, uint32_t num, uint64_t v) {
    tpb_tag(p, num, 0);
    tpb_varint(p, v);
}

void tpb_bytes(tpb *p, uint32_t num, const void *d, size_t n) {
    tpb_tag(p, num, 2);
    tpb_varint(p, n);
    tpb_raw(p, d, n);
}

void tpb_str(tpb *p, uint32_t num, const char *s) { tpb_bytes(p, num, s, strlen(s)); }

void tpb_msg(tpb *p, uint32_t num, tpb *sub) {
    tpb_bytes(p, num, sub->b, sub->n);
    free(sub->b);
    memset(sub, 0, sizeof *sub);
}
