/*
 * tensio._tensio._Stream: ZeroMQ streams of containers (tio_stream_*), and
 * the Python buffers lent to libzmq by send(copy=False).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <tensio.h>

#include "_tensio.h"

/* ---------------------------------------------------------------- streams */

/* ------------------------------------------------- buffers lent to libzmq */

/* Stream.send(copy=False) lends the Python buffers a container borrows to
 * libzmq, which releases the container (tio_container_on_release) when it is
 * done: on its I/O thread, which must neither block on the GIL nor be stopped
 * by a finalizing interpreter. So the release function only pushes the
 * buffers on this lock-free list (push one, take all: no ABA), and the next
 * Stream call of any stream (send, recv, close) releases them with the GIL
 * held, as does the deallocation of an owner (when its free was the last
 * hold, the release ran right then). The extension's one piece of shared
 * state. */
typedef struct lent_node {
    struct lent_node *next;
    Py_buffer *bufs;
    size_t nbufs;
} lent_node;

static _Atomic(lent_node *) lent_released;

static void lent_release(void *ctx)
{
    lent_node *n = ctx;
    lent_node *head = atomic_load(&lent_released);
    do
        n->next = head;
    while (!atomic_compare_exchange_weak(&lent_released, &head, n));
}

/* With the GIL held. */
void tio_py_lent_drain(void)
{
    if (atomic_load_explicit(&lent_released, memory_order_relaxed) == NULL)
        return;
    lent_node *n = atomic_exchange(&lent_released, NULL);
    while (n != NULL) {
        lent_node *next = n->next;
        for (size_t i = 0; i < n->nbufs; i++)
            PyBuffer_Release(&n->bufs[i]);
        PyMem_Free(n->bufs);
        PyMem_Free(n);
        n = next;
    }
}

/* Moves the owner's buffers to a node the container releases when the last
 * hold on it is gone (after libzmq is done): 0, or -1 with an error set. */
static int owner_lend(OwnerObject *o)
{
    if (o->nbufs == 0)
        return 0;
    lent_node *n = PyMem_Malloc(sizeof *n);
    if (n == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    n->next = NULL;
    n->bufs = o->bufs;
    n->nbufs = o->nbufs;
    tio_error err;
    tio_error_clear(&err);
    int rc = tio_container_on_release(o->c, lent_release, n, &err);
    if (rc != TIO_OK) {
        PyMem_Free(n);
        tio_py_raise(rc, &err);
        return -1;
    }
    o->bufs = NULL;
    o->nbufs = 0;
    return 0;
}

/* A tio_stream. Like a ZeroMQ socket it is used from one thread at a time:
 * `busy` (read and set with the GIL held) refuses a second thread instead of
 * letting two calls run on the socket while the GIL is released. */
typedef struct {
    PyObject_HEAD
    tio_stream *s;
    int busy;
    int timeout_ms; /* the default of send/recv; 0 = forever */
    int linger_ms;  /* as tio_stream_options: 0 = close waits as long as it takes */
} StreamObject;

PyTypeObject tio_py_StreamType;

/* Receives wait in slices of this much, checking for signals in between
 * (KeyboardInterrupt), with the GIL released during each slice. */
#define TIO_PY_RECV_SLICE_MS 100

/* Closes the stream: tio_stream_close, which waits up to the linger time
 * for what libzmq still queues. A stream that waits as long as it takes
 * (linger 0) first flushes in slices, checking for signals in between, so
 * Ctrl-C interrupts it: then close drops what is left, and the signal's
 * exception is what is raised. 0, or -1 with an exception set. */
/* tio_stream_flush in slices of TIO_PY_RECV_SLICE_MS with the GIL released,
 * checking for signals in between (timeout_ms 0 = as long as it takes).
 * The tio code, or -1 with the signal's exception set. */
static int flush_in_slices(tio_stream *s, int timeout_ms, tio_error *err)
{
    int left = timeout_ms;
    for (;;) {
        int slice = timeout_ms == 0 || left > TIO_PY_RECV_SLICE_MS ? TIO_PY_RECV_SLICE_MS : left;
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = tio_stream_flush(s, slice, err);
        Py_END_ALLOW_THREADS
        if (rc != TIO_E_TIMEOUT)
            return rc;
        if (timeout_ms != 0) {
            left -= slice;
            if (left <= 0) { /* the whole timeout, named in the message */
                tio_stream_stats st;
                tio_stream_get_stats(s, &st);
                snprintf(err->message, sizeof err->message,
                         "%s: %llu of the %llu messages sent are still queued after %d ms "
                         "(the peer has not read them)",
                         tio_stream_endpoint(s), (unsigned long long)st.queued,
                         (unsigned long long)st.sent, timeout_ms);
                return rc;
            }
        }
        if (PyErr_CheckSignals() < 0)
            return -1;
    }
}

static int stream_close_now(StreamObject *self)
{
    tio_stream *s = self->s;
    self->s = NULL;
    if (s == NULL)
        return 0;
    tio_error err;
    tio_error_clear(&err);
    int rc, interrupted = self->linger_ms == 0 && flush_in_slices(s, 0, &err) < 0;
    if (interrupted) /* drop what is left: the interrupt is the error raised */
        tio_stream_set_linger(s, -1, NULL);
    Py_BEGIN_ALLOW_THREADS /* close waits up to the linger time */
    rc = tio_stream_close(s, interrupted ? NULL : &err);
    Py_END_ALLOW_THREADS
    tio_py_lent_drain(); /* what this stream lent is released by now */
    if (interrupted)
        return -1;
    if (rc != TIO_OK) {
        tio_py_raise(rc, &err);
        return -1;
    }
    return 0;
}

static void stream_dealloc(StreamObject *self)
{
    /* a stream never closed: its close's error has no caller to go to, so
     * it is reported as an unraisable exception (as Python reports one
     * raised in __del__) */
    if (stream_close_now(self) < 0)
        PyErr_WriteUnraisable((PyObject *)self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Takes the stream for one call: 0, or -1 with an error set. */
static int stream_enter(StreamObject *self)
{
    if (self->s == NULL) {
        PyErr_SetString(PyExc_ValueError, "I/O operation on a closed tensio.Stream");
        return -1;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "tensio.Stream: in use by another thread (a "
                                            "stream is one ZeroMQ socket: use one per thread)");
        return -1;
    }
    self->busy = 1;
    return 0;
}

/* stream_open(endpoint, socket, proto, flags, timeout_ms, linger_ms, hwm,
 *             topic, identity, limits, open_flags, max_frame_bytes) -> Stream */
PyObject *tio_py_stream_open(PyObject *m, PyObject *args)
{
    (void)m;
    const char *endpoint;
    tio_stream_options o;
    memset(&o, 0, sizeof o);
    int socket = 0, proto = 0;
    PyObject *lim = Py_None;
    unsigned long long max_frame = 0;
    if (!PyArg_ParseTuple(args, "siiIiiizzOIK", &endpoint, &socket, &proto, &o.flags,
                          &o.timeout_ms, &o.linger_ms, &o.hwm, &o.topic, &o.identity, &lim,
                          &o.open_flags, &max_frame))
        return NULL;
    tio_limits limits;
    if (tio_py_limits(lim, &limits) < 0)
        return NULL;
    o.socket = (tio_socket_type)socket;
    o.proto = (tio_proto)proto;
    o.limits = &limits;
    o.max_frame_bytes = max_frame;
    if (o.timeout_ms < 0)
        return tio_py_raise_code(TIO_E_ARGUMENT, "timeout must be >= 0 (0 = wait forever)");
    StreamObject *so = PyObject_New(StreamObject, &tio_py_StreamType);
    if (so == NULL)
        return NULL;
    so->s = NULL;
    so->busy = 0;
    so->timeout_ms = o.timeout_ms;
    so->linger_ms = o.linger_ms;
    tio_error err;
    tio_error_clear(&err);
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tio_stream_open(endpoint, &o, &so->s, &err);
    Py_END_ALLOW_THREADS
    if (rc != TIO_OK) {
        Py_DECREF(so);
        return tio_py_raise(rc, &err);
    }
    return (PyObject *)so;
}

/* The timeout argument of a call: -1 = the stream's default. */
static int call_timeout(StreamObject *self, int t)
{
    return t < 0 ? self->timeout_ms : t;
}

/* send(owner, format, flags, version, options, timeout_ms, lend, every) —
 * lend: the Python buffers the owner borrows go with the message (no copy);
 * every: to every endpoint (tio_stream_send_all) */
static PyObject *stream_send(StreamObject *self, PyObject *args)
{
    PyObject *owner;
    tio_save_options o;
    memset(&o, 0, sizeof o);
    int timeout = -1, lend = 0, every = 0;
    if (!PyArg_ParseTuple(args, "O!zIIzi|pp", &tio_py_OwnerType, &owner, &o.format, &o.flags,
                          &o.version, &o.options, &timeout, &lend, &every) ||
        tio_py_owner_need((OwnerObject *)owner, -1) < 0)
        return NULL;
    tio_py_lent_drain();
    if (lend && owner_lend((OwnerObject *)owner) < 0)
        return NULL;
    if (stream_enter(self) < 0)
        return NULL;
    const tio_container *c = ((OwnerObject *)owner)->c;
    tio_error err;
    tio_error_clear(&err);
    int rc, t = call_timeout(self, timeout);
    tio_stream *s = self->s;
    Py_BEGIN_ALLOW_THREADS
    rc = tio_stream_set_timeout(s, t, &err);
    if (rc == TIO_OK)
        rc = every ? tio_stream_send_all(s, c, &o, &err) : tio_stream_send(s, c, &o, &err);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    if (rc != TIO_OK)
        return tio_py_raise(rc, &err);
    Py_RETURN_NONE;
}

/* recv(timeout_ms) -> _Owner of the received container (views into the
 * frames, which the container owns). Waits in slices, checking signals. */
static PyObject *stream_recv(StreamObject *self, PyObject *args)
{
    int timeout = -1;
    if (!PyArg_ParseTuple(args, "|i", &timeout))
        return NULL;
    tio_py_lent_drain();
    if (stream_enter(self) < 0)
        return NULL;
    int total = call_timeout(self, timeout);
    OwnerObject *o = tio_py_owner_new(0);
    if (o == NULL) {
        self->busy = 0;
        return NULL;
    }
    tio_stream *s = self->s;
    tio_error err;
    tio_error_clear(&err);
    int rc = TIO_E_TIMEOUT, waited = 0;
    for (;;) {
        int slice = TIO_PY_RECV_SLICE_MS;
        if (total > 0 && total - waited < slice)
            slice = total - waited;
        Py_BEGIN_ALLOW_THREADS
        rc = tio_stream_set_timeout(s, slice, &err);
        if (rc == TIO_OK)
            rc = tio_stream_recv(s, &o->c, &err);
        Py_END_ALLOW_THREADS
        if (rc != TIO_E_TIMEOUT)
            break;
        waited += slice;
        if (total > 0 && waited >= total)
            break;
        if (PyErr_CheckSignals() < 0) { /* KeyboardInterrupt */
            self->busy = 0;
            Py_DECREF(o);
            return NULL;
        }
    }
    self->busy = 0;
    if (rc == TIO_E_TIMEOUT) {
        char msg[160];
        snprintf(msg, sizeof msg, "%.100s: no message within %d ms",
                 tio_stream_endpoint(s), total);
        Py_DECREF(o);
        return tio_py_raise_code(TIO_E_TIMEOUT, msg);
    }
    return tio_py_owner_opened(o, rc, &err);
}

/* wait_subscribers(n, timeout_ms) */
static PyObject *stream_wait_subscribers(StreamObject *self, PyObject *args)
{
    unsigned int n;
    int timeout;
    if (!PyArg_ParseTuple(args, "Ii", &n, &timeout))
        return NULL;
    if (stream_enter(self) < 0)
        return NULL;
    tio_error err;
    tio_error_clear(&err);
    int rc;
    tio_stream *s = self->s;
    Py_BEGIN_ALLOW_THREADS
    rc = tio_stream_wait_subscribers(s, n, timeout, &err);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    if (rc != TIO_OK)
        return tio_py_raise(rc, &err);
    Py_RETURN_NONE;
}

/* flush(timeout_ms): tio_stream_flush in slices, checking for signals in
 * between (0 = as long as it takes) */
static PyObject *stream_flush(StreamObject *self, PyObject *args)
{
    int timeout;
    if (!PyArg_ParseTuple(args, "i", &timeout))
        return NULL;
    if (stream_enter(self) < 0)
        return NULL;
    tio_error err;
    tio_error_clear(&err);
    int rc = flush_in_slices(self->s, timeout, &err);
    self->busy = 0;
    if (rc < 0) /* a signal's exception */
        return NULL;
    if (rc != TIO_OK)
        return tio_py_raise(rc, &err);
    Py_RETURN_NONE;
}

/* set_peer(bytes or None) */
static PyObject *stream_set_peer(StreamObject *self, PyObject *arg)
{
    const char *id = NULL;
    Py_ssize_t len = 0;
    if (arg != Py_None && PyBytes_AsStringAndSize(arg, (char **)&id, &len) < 0)
        return NULL;
    if (stream_enter(self) < 0)
        return NULL;
    tio_error err;
    tio_error_clear(&err);
    int rc = tio_stream_set_peer(self->s, id, (size_t)len, &err);
    self->busy = 0;
    if (rc != TIO_OK)
        return tio_py_raise(rc, &err);
    Py_RETURN_NONE;
}

/* stats() -> (sent, received, malformed, bytes_sent, bytes_received) */
static PyObject *stream_stats(StreamObject *self, PyObject *noargs)
{
    (void)noargs;
    tio_stream_stats st;
    tio_stream_get_stats(self->s, &st);
    return Py_BuildValue("(KKKKKK)", (unsigned long long)st.sent,
                         (unsigned long long)st.received, (unsigned long long)st.malformed,
                         (unsigned long long)st.bytes_sent,
                         (unsigned long long)st.bytes_received, (unsigned long long)st.queued);
}

static PyObject *stream_endpoint(StreamObject *self, PyObject *noargs)
{
    (void)noargs;
    return tio_py_str_or_none(tio_stream_endpoint(self->s));
}

static PyObject *stream_close(StreamObject *self, PyObject *noargs)
{
    (void)noargs;
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "tensio.Stream: close while another thread uses it");
        return NULL;
    }
    if (stream_close_now(self) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef stream_methods[] = {
    {"send", (PyCFunction)stream_send, METH_VARARGS, "tio_stream_send"},
    {"recv", (PyCFunction)stream_recv, METH_VARARGS, "tio_stream_recv -> _Owner"},
    {"flush", (PyCFunction)stream_flush, METH_VARARGS, "tio_stream_flush in slices"},
    {"wait_subscribers", (PyCFunction)stream_wait_subscribers, METH_VARARGS,
     "tio_stream_wait_subscribers"},
    {"set_peer", (PyCFunction)stream_set_peer, METH_O, "tio_stream_set_peer"},
    {"stats", (PyCFunction)stream_stats, METH_NOARGS, "tio_stream_get_stats tuple"},
    {"endpoint", (PyCFunction)stream_endpoint, METH_NOARGS, "tio_stream_endpoint"},
    {"close", (PyCFunction)stream_close, METH_NOARGS, "tio_stream_close"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject tio_py_StreamType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tensio._tensio._Stream",
    .tp_basicsize = sizeof(StreamObject),
    .tp_dealloc = (destructor)stream_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A tio_stream (one ZeroMQ socket).",
    .tp_methods = stream_methods,
};

