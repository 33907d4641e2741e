/* A growable string for the tools that build text piece by piece (tensio
 * graph's labels, tensio diff's graph differences). */
#ifndef TENSIO_CLI_SBUF_H
#define TENSIO_CLI_SBUF_H

#include "cli.h"

#include <stddef.h>

/* Zero-initialise. s stays NULL until something is appended; an allocation
 * failure sets nomem, frees s and makes every later append a no-op. */
typedef struct cli_sbuf {
    char *s;
    size_t len, cap;
    int nomem;
} cli_sbuf;

void cli_sbuf_put(cli_sbuf *b, const char *p, size_t n);
void cli_sbuf_printf(cli_sbuf *b, const char *fmt, ...) CLI_PRINTF(2, 3);

#endif /* TENSIO_CLI_SBUF_H */
