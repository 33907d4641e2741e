/* A growable string (see cli_sbuf.h). */
#include "cli_sbuf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void fail(cli_sbuf *b) {
    b->nomem = 1;
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

void cli_sbuf_put(cli_sbuf *b, const char *p, size_t n) {
    if (b->nomem) return;
    if (n >= SIZE_MAX / 4 - b->len) {
        fail(b);
        return;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1) cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            fail(b);
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->len, p, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void cli_sbuf_printf(cli_sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = cli_vstrdup_printf(fmt, ap);
    va_end(ap);
    if (!s) {
        fail(b);
        return;
    }
    cli_sbuf_put(b, s, strlen(s));
    free(s);
}
