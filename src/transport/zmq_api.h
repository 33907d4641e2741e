/* The libzmq functions streams use, loaded with dlopen() when the first
 * stream opens (core/dl.h). Not installed. */
#ifndef TIO_TRANSPORT_ZMQ_API_H
#define TIO_TRANSPORT_ZMQ_API_H

#include "core/internal.h"

#include <zmq.h>

/* name (after zmq_), return type, parameters */
#define TIO_ZMQ_FUNCS(X)                                                          \
    X(ctx_new, void *, (void))                                                    \
    X(ctx_term, int, (void *))                                                    \
    X(socket, void *, (void *, int))                                              \
    X(close, int, (void *))                                                       \
    X(bind, int, (void *, const char *))                                          \
    X(connect, int, (void *, const char *))                                       \
    X(setsockopt, int, (void *, int, const void *, size_t))                       \
    X(getsockopt, int, (void *, int, void *, size_t *))                           \
    X(poll, int, (zmq_pollitem_t *, int, long))                                   \
    X(strerror, const char *, (int))                                              \
    X(msg_init, int, (zmq_msg_t *))                                               \
    X(msg_init_size, int, (zmq_msg_t *, size_t))                                  \
    X(msg_init_data, int, (zmq_msg_t *, void *, size_t, zmq_free_fn *, void *))   \
    X(msg_send, int, (zmq_msg_t *, void *, int))                                  \
    X(msg_recv, int, (zmq_msg_t *, void *, int))                                  \
    X(msg_close, int, (zmq_msg_t *))                                              \
    X(msg_move, int, (zmq_msg_t *, zmq_msg_t *))                                  \
    X(msg_data, void *, (zmq_msg_t *))                                            \
    X(msg_size, size_t, (const zmq_msg_t *))                                      \
    X(msg_more, int, (const zmq_msg_t *))

#define TIO_ZMQ_FIELD(f, R, A) R(*f) A;
typedef struct tio_zmq_api {
    TIO_ZMQ_FUNCS(TIO_ZMQ_FIELD)
} tio_zmq_api;
#undef TIO_ZMQ_FIELD

/* libzmq's functions, loading it the first time (thread-safe); NULL, with
 * TIO_E_TRANSPORT in err naming the library and what failed, when it cannot
 * be. */
const tio_zmq_api *tio__zmq(tio_error *err);
/* The same once a stream is open (it loaded them): never NULL then. */
const tio_zmq_api *tio__zmq_loaded(void);

#endif /* TIO_TRANSPORT_ZMQ_API_H */
