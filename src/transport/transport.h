/*
 * Internal interface of the ZeroMQ transport: endpoint URL parsing.
 * Not installed; nothing here is part of the public API.
 */
#ifndef TIO_TRANSPORT_H
#define TIO_TRANSPORT_H

#include "core/internal.h"

/* Longest endpoint URL accepted (before and after brace expansion). */
#define TIO_URL_MAX 4096
/* Most endpoints one URL may expand to. */
#define TIO_URL_MAX_ENDPOINTS 256

/* A parsed endpoint URL. */
typedef struct tio_url {
    tio_socket_type socket; /* from a tensorcom scheme; TIO_SOCKET_DEFAULT otherwise */
    int bind;               /* the scheme's choice: 1 bind, 0 connect, -1 none */
    int tensorcom;          /* a tensorcom scheme (zpush…, zr…) */
    char **endpoints;       /* libzmq endpoints ("tcp://host:port", …) */
    size_t count;           /* >= 1 */
    char *topic;            /* the #fragment, or NULL when there is none */
} tio_url;

/* Parses `url`: tcp://, ipc://, inproc:// or a tensorcom scheme
 * (zpush zpull zpub zsub zrpush zrpull zrpub zrsub, optionally +tcp/+ipc/+inproc).
 * Braces expand first ({a,b} lists, {1..3} / {01..10} / {a..e} ranges with an
 * optional ..step, nested), to at most TIO_URL_MAX_ENDPOINTS endpoints, which
 * must all agree on socket type and role. The #fragment is the topic. Anything
 * else is TIO_E_ARGUMENT. On failure *out is left empty (nothing to free). */
int tio__url_parse(const char *url, tio_url *out, tio_error *err);
void tio__url_free(tio_url *u);

/* Brace expansion alone (exposed for the URL parser). On success *out holds
 * *count malloc'ed strings (free each, then the array). */
int tio__brace_expand(const char *s, size_t max, char ***out, size_t *count,
                      tio_error *err);

#endif /* TIO_TRANSPORT_H */
