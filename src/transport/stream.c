/* Streams: containers sent and received as messages over ZeroMQ (libzmq 4.3,
 * stable API only). One stream is one socket, but for a fan-out: a sending
 * PUSH on several endpoints has a socket per endpoint (see fanout_ready).
 *
 * Sending encodes the container with tio_message_encode and lends the large
 * parts to libzmq (zmq_msg_init_data): each lent frame holds a reference on
 * the message, which holds the container, until libzmq calls back. Receiving
 * keeps the frames (zmq_msg_t) as the container's backing memory, so tensors
 * are views into them.
 *
 * Nothing is dropped silently at close. libzmq tells no one what its linger
 * time discards, so the stream counts for itself: the last frame of every
 * message sent over tcp:// or ipc:// carries a free function, which libzmq
 * calls once it has written the message to the connection (or dropped it
 * with a peer that went away). Messages sent minus messages released is what
 * libzmq still queues; close (and tio_stream_flush) waits for that to reach
 * 0, up to the linger time, and reports what is left. Over inproc:// a sent
 * message is already in the peer's queue, where it stays readable after the
 * sender closes (libzmq 4.3), so nothing is counted there; a sending stream
 * may not mix inproc:// with the other transports. */
#include "transport/transport.h"
#include "transport/zmq_api.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* libzmq's functions (zmq_api.h): every call below runs after the stream's
 * open loaded them */
#define ZQ (tio__zmq_loaded())

/* Parts at least this large are lent to libzmq; smaller ones are copied. */
#define LEND_MIN 1024u
/* Frames of a message handled without a heap array (send and receive). */
#define FRAMES_INLINE 8u
/* Longest nap while close or tio_stream_flush waits for libzmq to take the
 * queued messages (naps start at 1 ms and double up to this). */
#define FLUSH_NAP_MAX_MS 10
/* ZeroMQ routing ids are 1..255 bytes. */
#define ID_MAX 255u

/* What libzmq has released of the messages sent (see the top of this file).
 * Shared by the stream and by every message libzmq still holds, because a
 * stream on a shared context may be freed before libzmq releases them. */
typedef struct track {
    atomic_uint_least64_t released; /* messages whose last frame libzmq freed */
    atomic_size_t refs;             /* the stream's hold + one per message held */
} track;

struct tio_stream {
    void *ctx;
    int own_ctx;
    void *sock;             /* the socket (the first one of a fan-out) */
    /* Fan-out (a sending PUSH on several endpoints): one socket per endpoint,
     * so that each endpoint's queue is seen on its own (zmq_poll) and a
     * message can be sent to every endpoint (tio_stream_send_all). */
    void **socks;           /* nsocks sockets; socks[0] == sock */
    char **eps;             /* the endpoint of each socket */
    zmq_pollitem_t *items;  /* nsocks poll items */
    size_t nsocks;
    size_t next;            /* fan-out: the socket tried first by the next send */
    tio_socket_type type;
    tio_proto proto;
    const tio_format_desc *codec; /* the receiving codec (proto ZIO/TENSORCOM), or NULL */
    int tensorcom;          /* opened with a tensorcom scheme */
    unsigned flags;         /* TIO_STREAM_* */
    int timeout_ms;         /* 0 = forever */
    char *endpoint;         /* first endpoint, resolved after bind */
    tio_limits limits;      /* resolved */
    unsigned open_flags;
    uint8_t last_peer[ID_MAX]; /* ROUTER: the peer last received from */
    size_t last_peer_len;
    uint8_t peer[ID_MAX];      /* ROUTER: tio_stream_set_peer */
    size_t peer_len;
    uint64_t subscribers;   /* PUB: subscribe messages seen */
    uint64_t seq;           /* messages read, good or bad */
    int linger_ms;          /* as in tio_stream_options */
    track *track;           /* NULL for inproc:// and receive-only streams */
    uint64_t tracked;       /* messages sent with a counted last frame */
    tio_stream_stats stats;
};

/* ------------------------------------------------------------ helpers */

static const char *socket_name(tio_socket_type t) {
    switch (t) {
    case TIO_SOCKET_PUSH: return "PUSH";
    case TIO_SOCKET_PULL: return "PULL";
    case TIO_SOCKET_PUB: return "PUB";
    case TIO_SOCKET_SUB: return "SUB";
    case TIO_SOCKET_DEALER: return "DEALER";
    case TIO_SOCKET_ROUTER: return "ROUTER";
    case TIO_SOCKET_PAIR: return "PAIR";
    default: return "?";
    }
}

static int zmq_type(tio_socket_type t) {
    switch (t) {
    case TIO_SOCKET_PUSH: return ZMQ_PUSH;
    case TIO_SOCKET_PULL: return ZMQ_PULL;
    case TIO_SOCKET_PUB: return ZMQ_XPUB;
    case TIO_SOCKET_SUB: return ZMQ_SUB;
    case TIO_SOCKET_DEALER: return ZMQ_DEALER;
    case TIO_SOCKET_ROUTER: return ZMQ_ROUTER;
    case TIO_SOCKET_PAIR: return ZMQ_PAIR;
    default: return -1;
    }
}

static int can_send(tio_socket_type t) {
    return t != TIO_SOCKET_PULL && t != TIO_SOCKET_SUB;
}

static int can_recv(tio_socket_type t) {
    return t != TIO_SOCKET_PUSH && t != TIO_SOCKET_PUB;
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

/* A libzmq failure (errno e) while doing `what`: EAGAIN is a timeout. */
static int zfail(const tio_stream *s, tio_error *err, const char *what, int e) {
    if (e == EAGAIN)
        return tio__err(err, TIO_E_TIMEOUT, NULL, -1, "%s %s: %s timed out after %d ms",
                        socket_name(s->type), s->endpoint ? s->endpoint : "", what,
                        s->timeout_ms);
    return tio__err(err, TIO_E_TRANSPORT, NULL, -1, "%s %s: %s failed: %s",
                    socket_name(s->type), s->endpoint ? s->endpoint : "", what,
                    ZQ->strerror(e));
}

static int setopt_int(tio_stream *s, int opt, int value, const char *name, tio_error *err) {
    if (ZQ->setsockopt(s->sock, opt, &value, sizeof value) == 0) return TIO_OK;
    return tio__err(err, TIO_E_TRANSPORT, NULL, -1, "%s: cannot set %s = %d: %s",
                    socket_name(s->type), name, value, ZQ->strerror(errno));
}

static void hex(const uint8_t *p, size_t n, char *out) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * n] = 0;
}

/* ------------------------------------------------------------------ open */

static void track_release(track *t) {
    if (t && atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) == 1) free(t);
}

/* Messages sent that libzmq has not yet written to a connection. */
static uint64_t queued(const tio_stream *s) {
    if (!s->track) return 0;
    return s->tracked - atomic_load_explicit(&s->track->released, memory_order_acquire);
}

static void stream_destroy(tio_stream *s) {
    if (!s) return;
    if (s->socks) {
        for (size_t i = 0; i < s->nsocks; i++) {
            if (s->socks[i]) ZQ->close(s->socks[i]);
            if (s->eps) free(s->eps[i]);
        }
    } else if (s->sock) {
        ZQ->close(s->sock);
    }
    free(s->socks);
    free(s->eps);
    free(s->items);
    track_release(s->track);
    if (s->ctx && s->own_ctx) {
        while (ZQ->ctx_term(s->ctx) == -1 && errno == EINTR) {
        }
    }
    free(s->endpoint);
    free(s);
}

static int attach(tio_stream *s, const char *ep, int bind, tio_error *err) {
    for (;;) {
        int r = bind ? ZQ->bind(s->sock, ep) : ZQ->connect(s->sock, ep);
        if (r == 0) return TIO_OK;
        if (errno == EINTR) continue;
        return tio__err(err, TIO_E_TRANSPORT, NULL, -1, "%s: cannot %s %s: %s",
                        socket_name(s->type), bind ? "bind" : "connect to", ep,
                        ZQ->strerror(errno));
    }
}

/* The endpoint ep as bound (the port chosen for *) or connected, malloc'ed. */
static char *resolved_endpoint(void *sock, const char *ep, int bind) {
    char buf[TIO_URL_MAX + 64];
    size_t len = sizeof buf;
    if (bind && ZQ->getsockopt(sock, ZMQ_LAST_ENDPOINT, buf, &len) == 0 && len > 1) {
        buf[sizeof buf - 1] = 0;
        return strdup(buf);
    }
    return strdup(ep);
}

/* Socket k of the stream (0 <= k < nsocks). */
static void *sock_at(const tio_stream *s, size_t k) { return s->socks ? s->socks[k] : s->sock; }

static int configure(tio_stream *s, const tio_stream_options *o, const tio_url *u, int bind,
                     tio_error *err) {
    /* libzmq's own linger, for what close does not count (inproc://, and
     * the bytes of a message libzmq has taken but not yet written) */
    int linger = o->linger_ms == 0 ? -1 : o->linger_ms < 0 ? 0 : o->linger_ms;
    int rc = setopt_int(s, ZMQ_LINGER, linger, "ZMQ_LINGER", err);
    if (rc == TIO_OK && o->hwm > 0) {
        rc = setopt_int(s, ZMQ_SNDHWM, o->hwm, "ZMQ_SNDHWM", err);
        if (rc == TIO_OK) rc = setopt_int(s, ZMQ_RCVHWM, o->hwm, "ZMQ_RCVHWM", err);
    }
    int timeout = o->timeout_ms > 0 ? o->timeout_ms : -1;
    if (rc == TIO_OK) rc = setopt_int(s, ZMQ_SNDTIMEO, timeout, "ZMQ_SNDTIMEO", err);
    if (rc == TIO_OK) rc = setopt_int(s, ZMQ_RCVTIMEO, timeout, "ZMQ_RCVTIMEO", err);
    if (rc == TIO_OK && o->identity) {
        if (ZQ->setsockopt(s->sock, ZMQ_ROUTING_ID, o->identity, strlen(o->identity)) != 0)
            rc = tio__err(err, TIO_E_TRANSPORT, NULL, -1, "%s: cannot set routing id: %s",
                          socket_name(s->type), ZQ->strerror(errno));
    }
    if (rc == TIO_OK) {
        uint64_t mf = o->max_frame_bytes ? o->max_frame_bytes : TIO_DEFAULT_MAX_FRAME_BYTES;
        int64_t v = mf >= (uint64_t)INT64_MAX ? -1 : (int64_t)mf;
        if (ZQ->setsockopt(s->sock, ZMQ_MAXMSGSIZE, &v, sizeof v) != 0)
            rc = tio__err(err, TIO_E_TRANSPORT, NULL, -1, "%s: cannot set ZMQ_MAXMSGSIZE: %s",
                          socket_name(s->type), ZQ->strerror(errno));
    }
    if (rc == TIO_OK && s->type == TIO_SOCKET_PUB)
        rc = setopt_int(s, ZMQ_XPUB_VERBOSE, 1, "ZMQ_XPUB_VERBOSE", err);
    /* A connecting sender queues only on completed connections: with no peer
     * there, a send waits (and times out) instead of parking the message on
     * a pipe that is dropped at close. Not for PAIR: with ZMQ_IMMEDIATE a
     * connecting PAIR of libzmq 4.3.4 loses what a bound PAIR sends it
     * (24 of 40 loopback runs under load received nothing). */
    if (rc == TIO_OK && !bind &&
        (s->type == TIO_SOCKET_PUSH || s->type == TIO_SOCKET_DEALER))
        rc = setopt_int(s, ZMQ_IMMEDIATE, 1, "ZMQ_IMMEDIATE", err);
    if (rc == TIO_OK && s->type == TIO_SOCKET_ROUTER)
        rc = setopt_int(s, ZMQ_ROUTER_MANDATORY, 1, "ZMQ_ROUTER_MANDATORY", err);
    if (rc == TIO_OK && s->type == TIO_SOCKET_SUB) {
        const char *topic = o->topic ? o->topic : u->topic ? u->topic : "";
        if (ZQ->setsockopt(s->sock, ZMQ_SUBSCRIBE, topic, strlen(topic)) != 0)
            rc = tio__err(err, TIO_E_TRANSPORT, NULL, -1, "SUB: cannot subscribe to '%.100s': %s",
                          topic, ZQ->strerror(errno));
    }
    /* tcp://[::1]:port needs IPv6 turned on */
    int v6 = 0;
    for (size_t i = 0; i < u->count; i++)
        if (strncmp(u->endpoints[i], "tcp://", 6) == 0 && strchr(u->endpoints[i], '[')) v6 = 1;
    if (rc == TIO_OK && v6) rc = setopt_int(s, ZMQ_IPV6, 1, "ZMQ_IPV6", err);
    return rc;
}

int tio_stream_open(const char *endpoint, const tio_stream_options *opts, tio_stream **out,
                    tio_error *err) {
    if (!out) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL argument");
    *out = NULL;
    if (!endpoint) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL endpoint");
    tio_stream_options o;
    if (opts) o = *opts;
    else memset(&o, 0, sizeof o);
    if ((int)o.socket < 0 || (int)o.socket > TIO_SOCKET_PAIR)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "unknown socket type %d", (int)o.socket);
    if ((int)o.proto < 0 || (int)o.proto > TIO_PROTO_TENSORCOM)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "unknown protocol %d", (int)o.proto);
    const unsigned known = TIO_STREAM_BIND | TIO_STREAM_CONNECT | TIO_STREAM_SINGLE |
                           TIO_STREAM_COPY;
    if (o.flags & ~known)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "unknown stream flags 0x%x",
                        o.flags & ~known);
    if ((o.flags & TIO_STREAM_BIND) && (o.flags & TIO_STREAM_CONNECT))
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "TIO_STREAM_BIND and TIO_STREAM_CONNECT are exclusive");
    if (o.hwm < 0)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "hwm %d is negative", o.hwm);
    if (o.identity && (o.identity[0] == 0 || strlen(o.identity) > ID_MAX))
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "identity must be 1 to %u bytes (got %zu)", ID_MAX,
                        strlen(o.identity));

    tio_url u;
    int rc = tio__url_parse(endpoint, &u, err);
    if (rc) return rc;
    tio_socket_type type = o.socket ? o.socket : u.socket;
    if (o.socket && u.socket && o.socket != u.socket) {
        rc = tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                      "socket type %s contradicts the URL '%.200s', whose scheme means %s",
                      socket_name(o.socket), endpoint, socket_name(u.socket));
    } else if (!type) {
        rc = tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                      "no socket type for '%.200s': set tio_stream_options.socket or use a "
                      "tensorcom scheme (zpush://, zpull://, …)",
                      endpoint);
    }
    size_t inproc = 0;
    for (size_t i = 0; rc == TIO_OK && i < u.count; i++)
        if (strncmp(u.endpoints[i], "inproc://", 9) == 0) inproc++;
    if (rc == TIO_OK && type && can_send(type) && inproc && inproc < u.count)
        rc = tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                      "'%.200s': a %s stream cannot mix inproc:// with other transports "
                      "(close could not tell what it still has to deliver)",
                      endpoint, socket_name(type));
    if (rc) {
        tio__url_free(&u);
        return rc;
    }
    if (!tio__zmq(err)) { /* libzmq, loaded by the first stream */
        tio__url_free(&u);
        return TIO_E_TRANSPORT;
    }
    int bind = (o.flags & TIO_STREAM_BIND) ? 1 : (o.flags & TIO_STREAM_CONNECT) ? 0 : u.bind == 1;

    tio_stream *s = calloc(1, sizeof *s);
    if (!s) {
        tio__url_free(&u);
        return tio__nomem(err, NULL);
    }
    s->type = type;
    s->proto = o.proto;
    if (o.proto == TIO_PROTO_ZIO) s->codec = tio__format_find("zio");
    else if (o.proto == TIO_PROTO_TENSORCOM) s->codec = tio__format_find("tenbin");
    s->tensorcom = u.tensorcom;
    s->flags = o.flags;
    s->timeout_ms = o.timeout_ms > 0 ? o.timeout_ms : 0;
    s->limits = tio__limits_resolve(o.limits);
    s->open_flags = o.open_flags;
    s->linger_ms = o.linger_ms;
    if (can_send(type) && !inproc) {
        s->track = malloc(sizeof *s->track);
        if (!s->track) {
            rc = tio__nomem(err, NULL);
        } else {
            atomic_init(&s->track->released, 0);
            atomic_init(&s->track->refs, 1);
        }
    }
    if (o.zmq_context) {
        s->ctx = o.zmq_context;
    } else {
        s->ctx = ZQ->ctx_new();
        s->own_ctx = 1;
        if (!s->ctx)
            rc = tio__err(err, TIO_E_TRANSPORT, NULL, -1, "cannot create a ZeroMQ context: %s",
                          ZQ->strerror(errno));
    }
    /* a sending PUSH on several endpoints fans out: a socket per endpoint */
    int fanout = type == TIO_SOCKET_PUSH && u.count > 1;
    s->nsocks = fanout ? u.count : 1;
    if (rc == TIO_OK && fanout) {
        s->socks = calloc(u.count, sizeof *s->socks);
        s->eps = calloc(u.count, sizeof *s->eps);
        s->items = calloc(u.count, sizeof *s->items);
        if (!s->socks || !s->eps || !s->items) rc = tio__nomem(err, NULL);
    }
    for (size_t k = 0; rc == TIO_OK && k < s->nsocks; k++) {
        s->sock = ZQ->socket(s->ctx, zmq_type(type));
        if (!s->sock) {
            rc = tio__err(err, TIO_E_TRANSPORT, NULL, -1, "cannot create a %s socket: %s",
                          socket_name(type), ZQ->strerror(errno));
            break;
        }
        if (fanout) s->socks[k] = s->sock;
        rc = configure(s, &o, &u, bind, err);
        /* one socket: every endpoint; a fan-out: endpoint k on socket k */
        size_t from = fanout ? k : 0, to = fanout ? k + 1 : u.count;
        for (size_t i = from; rc == TIO_OK && i < to; i++) {
            rc = attach(s, u.endpoints[i], bind, err);
            if (rc == TIO_OK && (i == 0 || fanout)) {
                char *ep = resolved_endpoint(s->sock, u.endpoints[i], bind);
                if (!ep) rc = tio__nomem(err, NULL);
                else if (fanout) s->eps[k] = ep;
                if (ep && i == 0) {
                    s->endpoint = fanout ? strdup(ep) : ep;
                    if (!s->endpoint) rc = tio__nomem(err, NULL);
                }
            }
        }
    }
    if (fanout) s->sock = s->socks[0];
    tio__url_free(&u);
    if (rc) {
        /* nothing was sent: close at once */
        int zero = 0;
        for (size_t k = 0; k < s->nsocks; k++) {
            void *sk = s->socks ? s->socks[k] : s->sock;
            if (sk) ZQ->setsockopt(sk, ZMQ_LINGER, &zero, sizeof zero);
        }
        stream_destroy(s);
        return rc;
    }
    *out = s;
    return TIO_OK;
}

const char *tio_stream_endpoint(const tio_stream *s) { return s ? s->endpoint : NULL; }

int tio_stream_set_timeout(tio_stream *s, int timeout_ms, tio_error *err) {
    if (!s) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL stream");
    if (timeout_ms < 0)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "negative timeout %d", timeout_ms);
    int zt = timeout_ms > 0 ? timeout_ms : -1;
    void *first = s->sock;
    int rc = TIO_OK;
    for (size_t k = 0; rc == TIO_OK && k < s->nsocks; k++) {
        s->sock = sock_at(s, k);
        rc = setopt_int(s, ZMQ_SNDTIMEO, zt, "ZMQ_SNDTIMEO", err);
        if (rc == TIO_OK) rc = setopt_int(s, ZMQ_RCVTIMEO, zt, "ZMQ_RCVTIMEO", err);
    }
    s->sock = first;
    if (rc == TIO_OK) s->timeout_ms = timeout_ms;
    return rc;
}

int tio_stream_flush(tio_stream *s, int timeout_ms, tio_error *err) {
    if (!s) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL stream");
    if (timeout_ms < 0)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "negative timeout %d", timeout_ms);
    int64_t deadline = timeout_ms > 0 ? now_ms() + timeout_ms : 0;
    long nap = 1;
    for (;;) {
        uint64_t q = queued(s);
        if (q == 0) return TIO_OK;
        long wait = nap;
        if (timeout_ms > 0) {
            int64_t left = deadline - now_ms();
            if (left <= 0)
                return tio__err(err, TIO_E_TIMEOUT, NULL, -1,
                                "%s %s: %llu of the %llu messages sent are still queued after "
                                "%d ms (the peer has not read them)",
                                socket_name(s->type), s->endpoint ? s->endpoint : "",
                                (unsigned long long)q, (unsigned long long)s->stats.sent,
                                timeout_ms);
            if (left < wait) wait = (long)left;
        }
        sleep_ms(wait);
        if (nap < FLUSH_NAP_MAX_MS) nap *= 2;
    }
}

int tio_stream_close(tio_stream *s, tio_error *err) {
    if (!s) return TIO_OK;
    int64_t start = now_ms();
    if (s->linger_ms >= 0 && queued(s)) {
        tio_error e;
        tio_error_clear(&e);
        tio_stream_flush(s, s->linger_ms, &e); /* what is left is counted below */
    }
    uint64_t lost = queued(s), sent = s->stats.sent;
    /* libzmq's own linger: 0 when messages are dropped anyway; otherwise
     * what is left of the stream's (forever by default), so that libzmq
     * writes the bytes of the last messages it took, which its session waits
     * for before it ends */
    int zl = -1;
    if (lost || s->linger_ms < 0) {
        zl = 0;
    } else if (s->linger_ms > 0) {
        int64_t left = (int64_t)s->linger_ms - (now_ms() - start);
        zl = left < 1 ? 1 : (int)left;
    }
    for (size_t k = 0; k < s->nsocks; k++) ZQ->setsockopt(sock_at(s, k), ZMQ_LINGER, &zl, sizeof zl);
    char what[TIO_URL_MAX + 16];
    snprintf(what, sizeof what, "%s %s", socket_name(s->type), s->endpoint ? s->endpoint : "");
    int own = s->own_ctx, linger = s->linger_ms;
    int64_t t0 = now_ms();
    stream_destroy(s);
    /* An own context's end waits for the sessions: if that took the whole
     * of a bounded linger, a message libzmq had taken (counted as written)
     * may still have had bytes in its buffer when the session ended. */
    int cut = own && zl > 0 && now_ms() - t0 >= zl;
    if (lost)
        return tio__err(err, TIO_E_TIMEOUT, NULL, -1,
                        "%s: close dropped %llu of the %llu messages sent, %s: the peer had "
                        "not read them (give or take the last ones libzmq was writing as it "
                        "closed, up to two, which may or may not reach the peer whole)",
                        what, (unsigned long long)lost, (unsigned long long)sent,
                        linger < 0 ? "at once (linger < 0)" : "when the linger time ran out");
    if (cut)
        return tio__err(err, TIO_E_TIMEOUT, NULL, -1,
                        "%s: the linger time of %d ms ran out while libzmq was still writing: "
                        "the last message sent may be cut short",
                        what, linger);
    return TIO_OK;
}

int tio_stream_set_linger(tio_stream *s, int linger_ms, tio_error *err) {
    if (!s) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL stream");
    s->linger_ms = linger_ms;
    return TIO_OK;
}

void tio_stream_get_stats(const tio_stream *s, tio_stream_stats *out) {
    if (!out) return;
    if (s) {
        *out = s->stats;
        out->queued = queued(s);
    } else {
        memset(out, 0, sizeof *out);
    }
}

/* ------------------------------------------------------------ PUB side */

/* Reads the subscription messages an XPUB has queued, counting subscribes. */
static void drain_subscriptions(tio_stream *s) {
    for (;;) {
        zmq_msg_t m;
        ZQ->msg_init(&m);
        if (ZQ->msg_recv(&m, s->sock, ZMQ_DONTWAIT) < 0) {
            int e = errno;
            ZQ->msg_close(&m);
            if (e == EINTR) continue;
            return;
        }
        const uint8_t *d = ZQ->msg_data(&m);
        if (ZQ->msg_size(&m) >= 1 && d[0] == 1) s->subscribers++;
        ZQ->msg_close(&m);
    }
}

int tio_stream_wait_subscribers(tio_stream *s, unsigned n, int timeout_ms, tio_error *err) {
    if (!s) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL stream");
    if (s->type != TIO_SOCKET_PUB)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "only a PUB stream has subscribers (this is %s)", socket_name(s->type));
    if (timeout_ms < 0)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "negative timeout %d", timeout_ms);
    int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        drain_subscriptions(s);
        if (s->subscribers >= n) return TIO_OK;
        long wait = -1;
        if (timeout_ms > 0) {
            int64_t left = deadline - now_ms();
            if (left <= 0)
                return tio__err(err, TIO_E_TIMEOUT, NULL, -1,
                                "PUB %s: %llu of %u subscribers after %d ms", s->endpoint,
                                (unsigned long long)s->subscribers, n, timeout_ms);
            wait = (long)left;
        }
        zmq_pollitem_t it;
        memset(&it, 0, sizeof it);
        it.socket = s->sock;
        it.events = ZMQ_POLLIN;
        if (ZQ->poll(&it, 1, wait) < 0 && errno != EINTR)
            return zfail(s, err, "waiting for subscribers", errno);
    }
}

int tio_stream_set_peer(tio_stream *s, const void *id, size_t size, tio_error *err) {
    if (!s) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL stream");
    if (s->type != TIO_SOCKET_ROUTER)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "only a ROUTER stream has peers (this is %s)", socket_name(s->type));
    if (!id && size == 0) { /* back to the last peer received from */
        s->peer_len = 0;
        return TIO_OK;
    }
    if (!id || size == 0 || size > ID_MAX)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "a peer id is 1 to %u bytes (got %zu%s)", ID_MAX, size,
                        id ? "" : ", NULL");
    memcpy(s->peer, id, size);
    s->peer_len = size;
    return TIO_OK;
}

/* ------------------------------------------------ ThreadSanitizer builds */

/* libzmq (not instrumented) hands a frame from the sending thread to its
 * I/O thread and to the receiving thread through lock-free pipes whose
 * atomics ThreadSanitizer does not see; over inproc:// the receiver gets the
 * sender's very buffer. These annotations state what libzmq guarantees:
 * what was written to a frame before zmq_msg_send happens before what is
 * read from it after zmq_msg_recv, and what the sender did before
 * zmq_msg_send happens before libzmq calls the frame's free function (a
 * lent frame's message: its hold count and its parts). They exist only in
 * ThreadSanitizer builds (make test-tsan). */
#if defined(__SANITIZE_THREAD__)
#define TIO_TSAN_ANNOTATE 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TIO_TSAN_ANNOTATE 1
#endif
#endif
#ifdef TIO_TSAN_ANNOTATE
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
static void frame_sending(zmq_msg_t *f) { __tsan_release(ZQ->msg_data(f)); }
static void frame_received(zmq_msg_t *f) { __tsan_acquire(ZQ->msg_data(f)); }
static void lent_sending(void *m) { __tsan_release(m); }
static void lent_freed(void *m) { __tsan_acquire(m); }
#else
static void frame_sending(zmq_msg_t *f) { (void)f; }
static void frame_received(zmq_msg_t *f) { (void)f; }
static void lent_sending(void *m) { (void)m; }
static void lent_freed(void *m) { (void)m; }
#endif

/* ------------------------------------------------------------------ send */

/* libzmq is done with a lent frame (called from its I/O thread). */
static void lend_free(void *data, void *hint) {
    (void)data;
    lent_freed(hint);
    tio__message_unref((struct tio_message *)hint);
}

/* The last frame of a counted message (tcp://, ipc://): its free function
 * tells the stream's track that libzmq has written the message. Its bytes
 * are lent from the message (m held) or copied into `copy`. */
typedef struct tail {
    track *t;
    tio_message *m; /* held while lent, or NULL */
    unsigned char copy[];
} tail;

static void tail_free(void *data, void *hint) {
    (void)data;
    tail *tl = hint;
    lent_freed(tl);
    if (tl->m) {
        lent_freed(tl->m);
        tio__message_unref(tl->m);
    }
    atomic_fetch_add_explicit(&tl->t->released, 1, memory_order_release);
    track_release(tl->t);
    free(tl);
}

/* Makes the counted last frame f of message m from part p. */
static int frame_tail(tio_stream *s, zmq_msg_t *f, tio_message *m, tio_part p, int lend,
                      tio_error *err) {
    size_t extra = lend ? 0 : p.size;
    tail *tl = malloc(sizeof *tl + extra);
    if (!tl) return tio__nomem(err, NULL);
    tl->t = s->track;
    tl->m = NULL;
    void *data = (void *)(uintptr_t)p.data;
    if (lend) {
        tio__message_ref(m);
        tl->m = m;
    } else {
        if (p.size) memcpy(tl->copy, p.data, p.size);
        data = tl->copy;
    }
    if (ZQ->msg_init_data(f, data, p.size, tail_free, tl) != 0) {
        if (tl->m) tio__message_unref(tl->m);
        free(tl);
        return tio__nomem(err, NULL);
    }
    /* counted now: the free function runs once whether libzmq sends the
     * frame or the send fails and the frame is closed here */
    atomic_fetch_add_explicit(&s->track->refs, 1, memory_order_relaxed);
    s->tracked++;
    lent_sending(tl);
    return TIO_OK;
}

static int frame_copy(zmq_msg_t *f, const void *data, size_t size, tio_error *err) {
    if (ZQ->msg_init_size(f, size) != 0) return tio__nomem(err, NULL);
    if (size) memcpy(ZQ->msg_data(f), data, size);
    return TIO_OK;
}

static const char *default_format(const tio_stream *s) {
    switch (s->proto) {
    case TIO_PROTO_ZIO: return "zio";
    case TIO_PROTO_TENSORCOM: return "tenbin";
    default: return s->tensorcom ? "tenbin" : "zio";
    }
}

/* Where a message goes: the envelope frames before it. */
typedef struct envelope {
    const uint8_t *peer; /* ROUTER: the peer's routing id */
    size_t peer_len;
    size_t n;            /* envelope frames: 0, 1 (DEALER) or 2 (ROUTER) */
    int retry_unknown;   /* ROUTER: a set peer may still be connecting */
} envelope;

/* The envelope of the next send, and (PUB) the subscriptions read. */
static int envelope_for(tio_stream *s, envelope *env, tio_error *err) {
    memset(env, 0, sizeof *env);
    if (s->type == TIO_SOCKET_DEALER) {
        env->n = 1;
    } else if (s->type == TIO_SOCKET_ROUTER) {
        if (s->peer_len) {
            env->peer = s->peer;
            env->peer_len = s->peer_len;
            env->retry_unknown = 1;
        } else if (s->last_peer_len) {
            env->peer = s->last_peer;
            env->peer_len = s->last_peer_len;
        } else {
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                            "ROUTER %s: no peer to send to (receive a message first, or "
                            "call tio_stream_set_peer)",
                            s->endpoint);
        }
        env->n = 2;
    } else if (s->type == TIO_SOCKET_PUB) {
        drain_subscriptions(s);
    }
    return TIO_OK;
}

/* The frames of one copy of message m (n = env->n + its parts) in f; *ready
 * counts those made (closed by the caller when not sent). */
static int build_frames(tio_stream *s, tio_message *m, const envelope *env, zmq_msg_t *f,
                        size_t *ready, tio_error *err) {
    size_t np = tio_message_part_count(m);
    int rc = TIO_OK;
    *ready = 0;
    if (s->type == TIO_SOCKET_ROUTER) rc = frame_copy(&f[(*ready)++], env->peer, env->peer_len, err);
    if (rc == TIO_OK && env->n) rc = frame_copy(&f[(*ready)++], NULL, 0, err);
    for (size_t i = 0; rc == TIO_OK && i < np; i++) {
        tio_part p = tio_message_part(m, i);
        int lend = !(s->flags & TIO_STREAM_COPY) && p.size >= LEND_MIN;
        if (s->track && i + 1 == np) {
            rc = frame_tail(s, &f[*ready], m, p, lend, err);
            if (rc == TIO_OK) (*ready)++;
        } else if (lend) {
            tio__message_ref(m);
            if (ZQ->msg_init_data(&f[*ready], (void *)(uintptr_t)p.data, p.size, lend_free, m) !=
                0) {
                tio__message_unref(m);
                rc = tio__nomem(err, NULL);
                break;
            }
            (*ready)++;
        } else {
            rc = frame_copy(&f[*ready], p.data, p.size, err);
            if (rc == TIO_OK) (*ready)++;
        }
    }
    if (rc == TIO_OK) lent_sending(m);
    return rc;
}

/* Not an error: the socket had no room for the first frame (ZMQ_DONTWAIT). */
#define SEND_BUSY 1000

/* Sends frames f[0..n) on socket sk; *sent counts the frames libzmq took.
 * nowait: the first frame with ZMQ_DONTWAIT, SEND_BUSY (nothing taken, the
 * frames still the caller's) when the socket has no room. The frames after
 * the first never wait: a message is taken whole once its first frame is. */
static int send_frames(tio_stream *s, void *sk, zmq_msg_t *f, size_t n, const envelope *env,
                       int nowait, size_t *sent, tio_error *err) {
    int64_t deadline = s->timeout_ms > 0 ? now_ms() + s->timeout_ms : 0;
    long backoff = 1;
    *sent = 0;
    while (*sent < n) {
        int flags = *sent + 1 < n ? ZMQ_SNDMORE : 0;
        if (nowait && *sent == 0) flags |= ZMQ_DONTWAIT;
        frame_sending(&f[*sent]);
        if (ZQ->msg_send(&f[*sent], sk, flags) >= 0) {
            (*sent)++;
            continue;
        }
        int e = errno;
        if (e == EINTR) continue;
        if (e == EAGAIN && nowait && *sent == 0) return SEND_BUSY;
        if (e == EHOSTUNREACH && *sent == 0 && env->retry_unknown &&
            (deadline == 0 || now_ms() < deadline)) {
            sleep_ms(backoff);
            if (backoff < 50) backoff *= 2;
            continue;
        }
        if (e == EHOSTUNREACH) {
            char id[2 * ID_MAX + 1];
            hex(env->peer, env->peer_len, id);
            return tio__err(err, TIO_E_TRANSPORT, NULL, -1,
                            "ROUTER %s: peer %s is not connected%s", s->endpoint, id,
                            env->retry_unknown && s->timeout_ms
                                ? " (waited for the send timeout)"
                                : "");
        }
        return zfail(s, err, *sent ? "send (message partly sent)" : "send", e);
    }
    return TIO_OK;
}

/* Fan-out: waits until one of the sockets not yet done has room (zmq_poll,
 * until the deadline; 0 = forever) and sets *k to it: the first ready one
 * from s->next on, so that sends go round the endpoints with room. */
static int fanout_ready(tio_stream *s, const unsigned char *done, int64_t deadline, size_t *k,
                        tio_error *err) {
    for (;;) {
        for (size_t i = 0; i < s->nsocks; i++) {
            s->items[i].socket = s->socks[i];
            s->items[i].fd = 0;
            s->items[i].events = done && done[i] ? 0 : ZMQ_POLLOUT;
            s->items[i].revents = 0;
        }
        long wait = -1;
        if (deadline) {
            int64_t left = deadline - now_ms();
            if (left <= 0)
                return tio__err(err, TIO_E_TIMEOUT, NULL, -1,
                                "PUSH %s: send timed out after %d ms: no endpoint%s had room "
                                "(every peer's queue full, or not connected)",
                                s->endpoint, s->timeout_ms, done ? " left" : "");
            wait = (long)left;
        }
        if (ZQ->poll(s->items, (int)s->nsocks, wait) < 0) {
            if (errno == EINTR) continue;
            return zfail(s, err, "poll", errno);
        }
        for (size_t j = 0; j < s->nsocks; j++) {
            size_t i = (s->next + j) % s->nsocks;
            if (s->items[i].revents & ZMQ_POLLOUT) {
                *k = i;
                return TIO_OK;
            }
        }
    }
}

/* Sends one copy of m: on the stream's socket, or (fan-out) on the next
 * endpoint with room, of those not yet done (done NULL: any; the one sent
 * to is marked done). */
static int send_copy(tio_stream *s, tio_message *m, const envelope *env, unsigned char *done,
                     int64_t deadline, tio_error *err) {
    size_t n = env->n + tio_message_part_count(m);
    zmq_msg_t fstack[FRAMES_INLINE];
    zmq_msg_t *f = n <= FRAMES_INLINE ? fstack : malloc(n * sizeof *f);
    if (!f) return tio__nomem(err, NULL);
    size_t ready = 0, sent = 0;
    int rc = build_frames(s, m, env, f, &ready, err);
    if (rc == TIO_OK && !s->socks) {
        rc = send_frames(s, s->sock, f, n, env, 0, &sent, err);
    } else if (rc == TIO_OK) {
        for (;;) { /* poll, then send without waiting: another sender may fill it */
            size_t k = 0;
            rc = fanout_ready(s, done, deadline, &k, err);
            if (rc == TIO_OK) rc = send_frames(s, s->socks[k], f, n, env, 1, &sent, err);
            if (rc == SEND_BUSY) continue;
            if (rc == TIO_OK) {
                s->next = (k + 1) % s->nsocks;
                if (done) done[k] = 1;
            }
            break;
        }
    }
    /* frames libzmq did not take are still ours: closing a lent one drops its
     * hold on the message */
    for (size_t i = sent; i < ready; i++) ZQ->msg_close(&f[i]);
    if (f != fstack) free(f);
    if (rc == TIO_OK) {
        s->stats.sent++;
        s->stats.bytes_sent += tio_message_size(m);
    }
    return rc;
}

/* Encodes c for the stream (its protocol, TIO_STREAM_SINGLE). */
static int encode_for(tio_stream *s, const tio_container *c, const tio_save_options *opts,
                      tio_message **m, tio_error *err) {
    tio_save_options so;
    if (opts) so = *opts;
    else memset(&so, 0, sizeof so);
    if (!so.format) so.format = default_format(s);
    if (s->flags & TIO_STREAM_SINGLE) so.flags |= TIO_SAVE_SINGLE_PART;
    int rc = tio_message_encode(c, &so, m, err);
    if (rc) return rc;
    if (tio_message_part_count(*m) == 0) { /* an empty tensorcom batch */
        tio_message_free(*m);
        *m = NULL;
        return tio__err(err, TIO_E_UNSUPPORTED, so.format, -1,
                        "the container has no tensors, so its multipart %s message has no "
                        "frames, which ZeroMQ cannot send (send it as one frame: "
                        "TIO_STREAM_SINGLE, or in another format)",
                        so.format);
    }
    return TIO_OK;
}

int tio_stream_send(tio_stream *s, const tio_container *c, const tio_save_options *opts,
                    tio_error *err) {
    if (!s || !c) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL argument");
    if (!can_send(s->type))
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "a %s stream cannot send",
                        socket_name(s->type));
    envelope env;
    int rc = envelope_for(s, &env, err);
    tio_message *m = NULL;
    if (rc == TIO_OK) rc = encode_for(s, c, opts, &m, err);
    if (rc) return rc;
    int64_t deadline = s->timeout_ms > 0 ? now_ms() + s->timeout_ms : 0;
    rc = send_copy(s, m, &env, NULL, deadline, err);
    tio_message_free(m);
    return rc;
}

int tio_stream_send_all(tio_stream *s, const tio_container *c, const tio_save_options *opts,
                        tio_error *err) {
    if (!s || !c) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL argument");
    if (!s->socks) return tio_stream_send(s, c, opts, err);
    envelope env;
    int rc = envelope_for(s, &env, err);
    tio_message *m = NULL;
    if (rc == TIO_OK) rc = encode_for(s, c, opts, &m, err);
    if (rc) return rc;
    unsigned char *done = calloc(s->nsocks, 1);
    if (!done) {
        tio_message_free(m);
        return tio__nomem(err, NULL);
    }
    /* each endpoint as soon as it has room: a full one does not hold up the others */
    int64_t deadline = s->timeout_ms > 0 ? now_ms() + s->timeout_ms : 0;
    size_t ndone = 0;
    while (rc == TIO_OK && ndone < s->nsocks) {
        rc = send_copy(s, m, &env, done, deadline, err);
        if (rc == TIO_OK) ndone++;
    }
    if (rc == TIO_E_TIMEOUT) {
        size_t first = 0;
        while (first < s->nsocks && done[first]) first++;
        rc = tio__err(err, TIO_E_TIMEOUT, NULL, -1,
                      "PUSH %s: sending to every endpoint timed out after %d ms: %zu of %zu "
                      "endpoints had no room (the first: %s)",
                      s->endpoint, s->timeout_ms, s->nsocks - ndone, s->nsocks,
                      first < s->nsocks ? s->eps[first] : "?");
    }
    free(done);
    tio_message_free(m);
    return rc;
}

size_t tio_stream_endpoint_count(const tio_stream *s) { return s ? s->nsocks : 0; }

/* --------------------------------------------------------------- receive */

/* The frames of one received message: the container's backing. The first
 * FRAMES_INLINE live in the struct itself (one allocation per message). */
typedef struct frames {
    zmq_msg_t *m; /* inl, or a heap array */
    size_t n, cap;
    zmq_msg_t inl[FRAMES_INLINE];
} frames;

static frames *frames_new(void) {
    frames *fr = malloc(sizeof *fr); /* the frames are initialised as they arrive */
    if (!fr) return NULL;
    fr->m = fr->inl;
    fr->n = 0;
    fr->cap = FRAMES_INLINE;
    return fr;
}

static void frames_free(void *p) {
    frames *fr = p;
    if (!fr) return;
    for (size_t i = 0; i < fr->n; i++) ZQ->msg_close(&fr->m[i]);
    if (fr->m != fr->inl) free(fr->m);
    free(fr);
}

/* Makes room for one more frame. zmq_msg_t may not be copied bytewise, so
 * the frames are moved into the new array with zmq_msg_move. */
static int frames_grow(frames *fr) {
    if (fr->n < fr->cap) return 0;
    size_t cap = fr->cap * 2;
    zmq_msg_t *nm = malloc(cap * sizeof *nm);
    if (!nm) return -1;
    for (size_t i = 0; i < fr->n; i++) {
        ZQ->msg_init(&nm[i]);
        ZQ->msg_move(&nm[i], &fr->m[i]);
        ZQ->msg_close(&fr->m[i]);
    }
    if (fr->m != fr->inl) free(fr->m);
    fr->m = nm;
    fr->cap = cap;
    return 0;
}

/* Receives one frame into *m (initialised here; closed on failure). */
static int recv_frame(tio_stream *s, zmq_msg_t *m, tio_error *err) {
    ZQ->msg_init(m);
    for (;;) {
        if (ZQ->msg_recv(m, s->sock, 0) >= 0) return TIO_OK;
        int e = errno;
        if (e == EINTR) continue;
        ZQ->msg_close(m);
        return zfail(s, err, "receive", e);
    }
}

/* Reads and drops the rest of a multipart message. Returns frames dropped. */
static size_t drain_rest(tio_stream *s) {
    size_t k = 0;
    int more = 1;
    while (more) {
        zmq_msg_t m;
        ZQ->msg_init(&m);
        if (ZQ->msg_recv(&m, s->sock, 0) < 0) {
            int e = errno;
            ZQ->msg_close(&m);
            if (e == EINTR) continue;
            break;
        }
        more = ZQ->msg_more(&m);
        ZQ->msg_close(&m);
        k++;
    }
    return k;
}

/* Counts a bad message and prefixes its error, keeping the code. */
static int bad_message(tio_stream *s, uint64_t index, size_t nframes, int rc, tio_error *e) {
    s->stats.malformed++;
    char pre[64];
    int np = snprintf(pre, sizeof pre, "message %llu (%zu frames): ",
                      (unsigned long long)index, nframes);
    if (np <= 0) return rc;
    size_t p = (size_t)np < sizeof pre ? (size_t)np : sizeof pre - 1;
    size_t len = strnlen(e->message, sizeof e->message - 1);
    if (p + len > sizeof e->message - 1) len = sizeof e->message - 1 - p;
    memmove(e->message + p, e->message, len);
    memcpy(e->message, pre, p);
    e->message[p + len] = 0;
    e->code = rc;
    return rc;
}

static int set_prop_u64(tio_container *c, const char *key, uint64_t v, tio_error *err) {
    char buf[TIO__DEC_CAP];
    return tio__kv_set(&c->props, key, tio__u64_dec(buf, v), err);
}

static int recv_message(tio_stream *s, tio_container **out, tio_error *e) {
    frames *fr = frames_new();
    if (!fr) return tio__nomem(e, NULL);
    /* at most 2 frames per tensor, 2 header frames and 1 for the envelope */
    uint64_t max = s->limits.max_tensors;
    if (max > (UINT64_MAX - 3) / 2) max = UINT64_MAX;
    else max = max * 2 + 3;

    /* all frames of one message */
    int rc = TIO_OK;
    size_t dropped = 0;
    for (;;) {
        if ((uint64_t)fr->n >= max) {
            dropped = drain_rest(s);
            break;
        }
        if (frames_grow(fr) != 0) {
            if (fr->n) drain_rest(s);
            frames_free(fr);
            return tio__nomem(e, NULL);
        }
        rc = recv_frame(s, &fr->m[fr->n], e);
        if (rc) {
            if (fr->n) { /* mid-message: the rest is lost */
                char why[TIO_ERROR_MESSAGE_MAX];
                memcpy(why, e->message, sizeof why);
                s->seq++;
                rc = tio__err(e, TIO_E_TRANSPORT, NULL, -1,
                              "message %llu broke off after %zu frames: %.300s",
                              (unsigned long long)(s->seq - 1), fr->n, why);
            }
            frames_free(fr);
            return rc;
        }
        frame_received(&fr->m[fr->n]);
        fr->n++;
        if (!ZQ->msg_more(&fr->m[fr->n - 1])) break;
    }
    uint64_t index = s->seq++;
    uint64_t bytes = 0;
    for (size_t i = 0; i < fr->n; i++) bytes += ZQ->msg_size(&fr->m[i]);
    if (dropped) {
        size_t total = fr->n + dropped;
        s->stats.bytes_received += bytes; /* of the frames kept before the limit */
        frames_free(fr);
        tio__err(e, TIO_E_LIMIT, NULL, -1,
                 "%zu frames exceed the limit of %llu (2 per tensor + 3: max_tensors)",
                 total,
                 (unsigned long long)max);
        return bad_message(s, index, total, TIO_E_LIMIT, e);
    }

    /* the envelope */
    size_t first = 0;
    char peer_hex[2 * ID_MAX + 1] = "";
    if (s->type == TIO_SOCKET_ROUTER && fr->n >= 1) {
        size_t idlen = ZQ->msg_size(&fr->m[0]);
        if (idlen > ID_MAX) idlen = ID_MAX;
        memcpy(s->last_peer, ZQ->msg_data(&fr->m[0]), idlen);
        s->last_peer_len = idlen;
        hex(s->last_peer, idlen, peer_hex);
        first = 1;
    }
    if ((s->type == TIO_SOCKET_ROUTER || s->type == TIO_SOCKET_DEALER) && first < fr->n &&
        ZQ->msg_size(&fr->m[first]) == 0)
        first++;
    size_t n = fr->n - first;
    uint64_t env_bytes = 0;
    for (size_t i = 0; i < first; i++) env_bytes += ZQ->msg_size(&fr->m[i]);
    bytes -= env_bytes;
    s->stats.bytes_received += bytes;
    if (n == 0) {
        frames_free(fr);
        tio__err(e, TIO_E_TRUNCATED, NULL, -1, "no frames after the %s envelope",
                 socket_name(s->type));
        return bad_message(s, index, 0, TIO_E_TRUNCATED, e);
    }

    tio_rpart rstack[FRAMES_INLINE];
    tio_rpart *rp = n <= FRAMES_INLINE ? rstack : malloc(n * sizeof *rp);
    if (!rp) {
        frames_free(fr);
        return tio__nomem(e, NULL);
    }
    static const uint8_t empty[1];
    for (size_t i = 0; i < n; i++) {
        zmq_msg_t *m = &fr->m[first + i];
        rp[i].size = ZQ->msg_size(m);
        rp[i].data = rp[i].size ? (const uint8_t *)ZQ->msg_data(m) : empty;
        rp[i].offset = -1;
    }
    const tio_format_desc *codec = s->codec; /* found once, at open */
    if (s->proto == TIO_PROTO_ZIO || s->proto == TIO_PROTO_TENSORCOM) {
        const char *name = s->proto == TIO_PROTO_ZIO ? "zio" : "tenbin";
        if (!codec) {
            if (rp != rstack) free(rp);
            frames_free(fr);
            tio__err(e, TIO_E_FORMAT, NULL, -1, "the %s format is not available", name);
            return bad_message(s, index, n, TIO_E_FORMAT, e);
        }
    }
    tio_open_options oo;
    memset(&oo, 0, sizeof oo);
    oo.flags = s->open_flags & ~(unsigned)TIO_OPEN_COPY;
    oo.limits = &s->limits;
    tio_container *c = NULL;
    /* the container takes the frames (or frees them at once on failure) */
    rc = tio__open_rparts(codec, rp, n, &oo, fr, frames_free, &c, e);
    if (rp != rstack) free(rp);
    if (rc) return bad_message(s, index, n, rc, e);

    const char *proto = c->format ? c->format : "";
    if (strcmp(proto, "tenbin") == 0 && n > 1) proto = "tensorcom";
    rc = tio__kv_set(&c->props, "proto", proto, e);
    if (rc == TIO_OK) rc = set_prop_u64(c, "frames", n, e);
    if (rc == TIO_OK) rc = set_prop_u64(c, "bytes", bytes, e);
    if (rc == TIO_OK && s->type == TIO_SOCKET_ROUTER)
        rc = tio__kv_set(&c->props, "peer", peer_hex, e);
    if (rc) {
        tio_container_free(c);
        return rc;
    }
    s->stats.received++;
    *out = c;
    return TIO_OK;
}

int tio_stream_recv(tio_stream *s, tio_container **out, tio_error *err) {
    if (!out) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL argument");
    *out = NULL;
    if (!s) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL stream");
    if (!can_recv(s->type))
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "a %s stream cannot receive",
                        socket_name(s->type));
    tio_error e;
    tio_error_clear(&e);
    int rc = recv_message(s, out, &e);
    if (rc && err) *err = e;
    return rc;
}
