/*
 * The pickle emitter: opcodes of protocol 2 with their operands, written as
 * CPython's _pickle.c writes them (Lib/pickletools.py documents each). The
 * object graph and what is memoized are the caller's (the torch writer
 * follows the pickler's rules there); this file only encodes.
 */
#include "pickle/pickle.h"

#include <string.h>

#define PKW_PROTO 0x80u
#define PKW_BININT 0x4Au  /* 'J': int32, little-endian */
#define PKW_BININT1 0x4Bu /* 'K' */
#define PKW_BININT2 0x4Du /* 'M' */
#define PKW_LONG1 0x8Au
#define PKW_BINUNICODE 0x58u /* 'X' */
#define PKW_GLOBAL 0x63u     /* 'c' */
#define PKW_BINPUT 0x71u     /* 'q' */
#define PKW_LONG_BINPUT 0x72u
#define PKW_BINGET 0x68u /* 'h' */
#define PKW_LONG_BINGET 0x6Au
#define PKW_EMPTY_TUPLE 0x29u /* ')' */
#define PKW_TUPLE 0x74u       /* 't' */
#define PKW_TUPLE1 0x85u

static void pkw_put(tio_pkw *w, const void *p, size_t n) { tio__buf_put(&w->b, p, n); }

void tio__pkw_op(tio_pkw *w, uint8_t op) { pkw_put(w, &op, 1); }

void tio__pkw_proto(tio_pkw *w, uint8_t proto) {
    uint8_t o[2] = {PKW_PROTO, proto};
    pkw_put(w, o, 2);
}

void tio__pkw_int(tio_pkw *w, int64_t v) {
    uint8_t o[10];
    if (v >= 0 && v <= 0xFF) {
        o[0] = PKW_BININT1;
        o[1] = (uint8_t)v;
        pkw_put(w, o, 2);
    } else if (v >= 0 && v <= 0xFFFF) {
        o[0] = PKW_BININT2;
        o[1] = (uint8_t)v;
        o[2] = (uint8_t)(v >> 8);
        pkw_put(w, o, 3);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        o[0] = PKW_BININT;
        tio__st32(o + 1, (uint32_t)(int32_t)v);
        pkw_put(w, o, 5);
    } else {
        /* LONG1: the fewest little-endian two's-complement bytes that keep
         * the sign (encode_long: bit_length // 8 + 1, one fewer for a
         * negative value whose top byte is then a redundant 0xff) */
        uint64_t u = (uint64_t)v;
        size_t n = 8;
        while (n > 1) {
            uint8_t top = (uint8_t)(u >> (8 * (n - 1)));
            uint8_t next = (uint8_t)(u >> (8 * (n - 2)));
            if ((top == 0 && !(next & 0x80)) || (top == 0xFF && (next & 0x80)))
                n--;
            else
                break;
        }
        o[0] = PKW_LONG1;
        o[1] = (uint8_t)n;
        for (size_t k = 0; k < n; k++) o[2 + k] = (uint8_t)(u >> (8 * k));
        pkw_put(w, o, 2 + n);
    }
}

void tio__pkw_str(tio_pkw *w, const char *s, size_t n) {
    uint8_t o[5];
    o[0] = PKW_BINUNICODE;
    tio__st32(o + 1, (uint32_t)n);
    pkw_put(w, o, 5);
    pkw_put(w, s, n);
}

void tio__pkw_global(tio_pkw *w, const char *module, const char *name) {
    tio__pkw_op(w, PKW_GLOBAL);
    pkw_put(w, module, strlen(module));
    pkw_put(w, "\n", 1);
    pkw_put(w, name, strlen(name));
    pkw_put(w, "\n", 1);
}

/* A memo opcode: the one-byte form for keys below 256, else the 4-byte one. */
static void pkw_memo(tio_pkw *w, uint8_t op1, uint8_t op4, uint32_t key) {
    uint8_t o[5];
    if (key < 256) {
        o[0] = op1;
        o[1] = (uint8_t)key;
        pkw_put(w, o, 2);
    } else {
        o[0] = op4;
        tio__st32(o + 1, key);
        pkw_put(w, o, 5);
    }
}

uint32_t tio__pkw_put(tio_pkw *w) {
    uint32_t k = w->memo++;
    pkw_memo(w, PKW_BINPUT, PKW_LONG_BINPUT, k);
    return k;
}

void tio__pkw_get(tio_pkw *w, uint32_t key) { pkw_memo(w, PKW_BINGET, PKW_LONG_BINGET, key); }

void tio__pkw_tuple_begin(tio_pkw *w, size_t n) {
    if (n > 3) tio__pkw_op(w, TIO_PKO_MARK);
}

void tio__pkw_tuple_end(tio_pkw *w, size_t n) {
    if (n == 0)
        tio__pkw_op(w, PKW_EMPTY_TUPLE);
    else if (n <= 3)
        tio__pkw_op(w, (uint8_t)(PKW_TUPLE1 + n - 1));
    else
        tio__pkw_op(w, PKW_TUPLE);
}
