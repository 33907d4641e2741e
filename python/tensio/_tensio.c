/*
 * tensio._tensio — the CPython extension over libtensio (public API only).
 *
 * One object type does the work: _Owner holds a tio_container and whatever
 * the container's bytes borrow from Python (the buffer given to loads, the
 * arrays given to save). Every ndarray handed out is a read-only view into
 * the container's memory whose base is the _Owner, so the container (and
 * its file mapping) lives until the last view, DLPack capsule or Python
 * Container referring to it is gone. The pure-Python layer (__init__.py)
 * builds the user-facing API on top.
 *
 * NumPy's C API rather than the buffer protocol: PyArray_NewFromDescr makes
 * a view of any dtype (float16, bool, and bfloat16 as uint16 to be re-viewed
 * as ml_dtypes.bfloat16) over the container's pointer in one call, with the
 * owner as its base and the WRITEABLE flag cleared; the buffer protocol has
 * no float16/bfloat16 format codes and would cost a memoryview plus
 * np.frombuffer + reshape per tensor in Python.
 *
 * The only static state: the exception classes created at import (and, in
 * _stream.c, the list of buffers libzmq is done with).
 *
 * This file: errors, _Owner and its methods, DLPack, the module. Graphs are
 * in _graph.c, ZeroMQ streams in _stream.c, shards in _shard.c, checkpoint
 * object trees in _checkpoint.c; _tensio.h is what they share.
 */
#define PY_SSIZE_T_CLEAN
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <Python.h>
#include <numpy/arrayobject.h>

#include <stdlib.h>
#include <string.h>

#include <tensio.h>

#include "_tensio.h"

/* ----------------------------------------------------------------- errors */

#define TIO_NCODES 18 /* TIO_OK .. TIO_E_TRANSPORT */

static PyObject *tio_exc_base;
static PyObject *tio_exc[TIO_NCODES];

/* A C message as str: it may quote bytes of the input that are not UTF-8. */
static PyObject *message_text(const char *msg)
{
    return PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "backslashreplace");
}

/* Raises the tensio.Error subclass of e->code; returns NULL. */
PyObject *tio_py_raise(int rc, const tio_error *e)
{
    int code = e->code != TIO_OK ? e->code : rc;
    PyObject *cls = code > 0 && code < TIO_NCODES ? tio_exc[code] : tio_exc_base;
    const char *msg = e->message[0] ? e->message : tio_status_string(code);
    PyObject *v[5] = {
        PyLong_FromLong(code),
        PyUnicode_FromString(tio_status_name(code)),
        e->format[0] ? PyUnicode_FromString(e->format) : Py_NewRef(Py_None),
        e->offset >= 0 ? PyLong_FromLongLong(e->offset) : Py_NewRef(Py_None),
        message_text(msg),
    };
    static const char *const attrs[5] = {"code", "code_name", "format", "offset", "message"};
    PyObject *exc = NULL;
    int ok = 1;
    for (int k = 0; k < 5; k++)
        ok = ok && v[k] != NULL;
    if (ok)
        exc = PyObject_CallOneArg(cls, v[4]);
    for (int k = 0; k < 5 && exc != NULL; k++)
        if (PyObject_SetAttrString(exc, attrs[k], v[k]) < 0)
            Py_CLEAR(exc);
    for (int k = 0; k < 5; k++)
        Py_XDECREF(v[k]);
    if (exc == NULL)
        return NULL;
    PyErr_SetObject(cls, exc);
    Py_DECREF(exc);
    return NULL;
}

PyObject *tio_py_raise_code(int code, const char *msg)
{
    tio_error e;
    tio_error_clear(&e);
    e.code = code;
    snprintf(e.message, sizeof e.message, "%s", msg);
    return tio_py_raise(code, &e);
}

/* ------------------------------------------------------------------ owner */


static void owner_dealloc(OwnerObject *self)
{
    if (self->fetch)
        PyThread_free_lock(self->fetch);
    tio_container_free(self->c); /* before the buffers it points into */
    self->c = NULL;
    for (size_t i = 0; i < self->nbufs; i++)
        PyBuffer_Release(&self->bufs[i]);
    PyMem_Free(self->bufs);
    tio_py_lent_drain(); /* buffers it lent, if that was the last hold */
    Py_TYPE(self)->tp_free((PyObject *)self);
}

OwnerObject *tio_py_owner_new(size_t nbufs)
{
    OwnerObject *o = PyObject_New(OwnerObject, &tio_py_OwnerType);
    if (o == NULL)
        return NULL;
    o->c = NULL;
    o->nbufs = 0;
    o->bufs = NULL;
    o->fetch = NULL;
    if (nbufs > 0) {
        o->bufs = PyMem_Calloc(nbufs, sizeof(Py_buffer));
        if (o->bufs == NULL) {
            Py_DECREF(o);
            return (OwnerObject *)PyErr_NoMemory();
        }
    }
    return o;
}

static tio_tensor *owner_tensor(OwnerObject *self, Py_ssize_t i)
{
    size_t n = tio_container_count(self->c);
    if (i < 0 || (size_t)i >= n) {
        PyErr_Format(PyExc_IndexError, "tensor index %zd out of range (%zu tensors)", i, n);
        return NULL;
    }
    return tio_container_tensor(self->c, (size_t)i);
}

/* Before tensor i's data are read (i < 0: every tensor's): a container
 * opened lazily from a URL (TIO_OPEN_LAZY) fetches the bytes it does not
 * hold yet, without the GIL (a server in this process keeps running);
 * other threads may read the container meanwhile, and fetches of one
 * container take turns (tio_container_fetch). Others: nothing to do. 0, or
 * -1 with the error set. */
int tio_py_owner_need(OwnerObject *self, Py_ssize_t i)
{
    if (!self->fetch)
        return 0;
    tio_error err;
    tio_error_clear(&err);
    int rc;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->fetch, WAIT_LOCK);
    rc = i < 0 ? tio_container_prefetch(self->c, &err)
               : tio_container_fetch(self->c, (size_t)i, &err);
    PyThread_release_lock(self->fetch);
    Py_END_ALLOW_THREADS
    if (rc != TIO_OK) {
        tio_py_raise(rc, &err);
        return -1;
    }
    return 0;
}

/* The tensor at the index object arg (METH_O methods), or NULL with an error set. */
static tio_tensor *arg_tensor(OwnerObject *self, PyObject *arg)
{
    Py_ssize_t i = PyLong_AsSsize_t(arg);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    return owner_tensor(self, i);
}

int tio_py_limits(PyObject *lim, tio_limits *out)
{
    memset(out, 0, sizeof *out);
    if (lim == NULL || lim == Py_None)
        return 0;
    unsigned long long v[16];
    if (!PyArg_ParseTuple(lim, "KKKKKKKKKKKKKKKK;limits: a tuple of 16 ints", &v[0], &v[1],
                          &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10],
                          &v[11], &v[12], &v[13], &v[14], &v[15]))
        return -1;
    if (v[1] > UINT32_MAX || v[3] > UINT32_MAX || v[4] > UINT32_MAX || v[9] > UINT32_MAX ||
        v[10] > UINT32_MAX || v[12] > UINT32_MAX || v[13] > UINT32_MAX || v[14] > UINT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "limits: max_rank, max_name_bytes, max_depth, "
                                             "max_pickle_depth, max_shards, max_redirects, "
                                             "max_retries and timeout_ms must fit in 32 bits");
        return -1;
    }
    out->max_tensors = v[0];
    out->max_rank = (uint32_t)v[1];
    out->max_header_bytes = v[2];
    out->max_name_bytes = (uint32_t)v[3];
    out->max_depth = (uint32_t)v[4];
    out->max_objects = v[5];
    out->max_dense_bytes = v[6];
    out->max_pickle_bytes = v[7];
    out->max_pickle_objects = v[8];
    out->max_pickle_depth = (uint32_t)v[9];
    out->max_shards = (uint32_t)v[10];
    out->max_remote_bytes = v[11];
    out->max_redirects = (uint32_t)v[12];
    out->max_retries = (uint32_t)v[13];
    out->timeout_ms = (uint32_t)v[14];
    out->max_member_bytes = v[15];
    return 0;
}

/* Gets a C-contiguous buffer of obj into the owner's next slot. */
static int owner_take_buffer(OwnerObject *o, PyObject *obj, const void **data, size_t *len)
{
    Py_buffer *b = &o->bufs[o->nbufs];
    if (PyObject_GetBuffer(obj, b, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    o->nbufs++;
    *data = b->buf;
    *len = (size_t)b->len;
    return 0;
}

/* The arguments of open_memory and open_parts: (obj, format, flags[, limits]). */
typedef struct {
    PyObject *obj;
    tio_open_options opts;
    tio_limits limits;
} open_args;

static int parse_open_args(PyObject *args, open_args *a)
{
    PyObject *lim = Py_None;
    memset(&a->opts, 0, sizeof a->opts);
    if (!PyArg_ParseTuple(args, "OzI|O", &a->obj, &a->opts.format, &a->opts.flags, &lim))
        return -1;
    a->opts.limits = &a->limits;
    return tio_py_limits(lim, &a->limits);
}


PyObject *tio_py_owner_wrap(tio_container *c, PyObject *borrow)
{
    OwnerObject *o = tio_py_owner_new(borrow != NULL ? 1 : 0);
    if (o == NULL) {
        tio_container_free(c);
        return NULL;
    }
    const void *data;
    size_t len;
    if (borrow != NULL && owner_take_buffer(o, borrow, &data, &len) < 0) {
        tio_container_free(c);
        Py_DECREF(o);
        return NULL;
    }
    o->c = c;
    return (PyObject *)o;
}

/* The result of an open into o: o, or NULL with the error raised (o released). */
PyObject *tio_py_owner_opened(OwnerObject *o, int rc, const tio_error *err)
{
    if (rc != TIO_OK) {
        Py_DECREF(o);
        return tio_py_raise(rc, err);
    }
    return (PyObject *)o;
}

/* open_file(path, format, flags, limits) -> _Owner */
static PyObject *mod_open_file(PyObject *m, PyObject *args)
{
    (void)m;
    PyObject *path = NULL, *lim = Py_None;
    const char *format = NULL;
    unsigned int flags = 0;
    if (!PyArg_ParseTuple(args, "O&zI|O", PyUnicode_FSConverter, &path, &format, &flags, &lim))
        return NULL;
    tio_limits limits;
    if (tio_py_limits(lim, &limits) < 0) {
        Py_DECREF(path);
        return NULL;
    }
    OwnerObject *o = tio_py_owner_new(0);
    if (o == NULL) {
        Py_DECREF(path);
        return NULL;
    }
    tio_open_options opts = {.format = format, .flags = flags, .limits = &limits};
    tio_error err;
    tio_error_clear(&err);
    int rc;
    const char *p = PyBytes_AS_STRING(path);
    if ((flags & TIO_OPEN_LAZY) && (o->fetch = PyThread_allocate_lock()) == NULL) {
        Py_DECREF(path);
        Py_DECREF(o);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS
    rc = tio_open(p, &opts, &o->c, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    return tio_py_owner_opened(o, rc, &err);
}

/* open_memory(buffer, format, flags, limits) -> _Owner borrowing the buffer */
static PyObject *mod_open_memory(PyObject *m, PyObject *args)
{
    (void)m;
    open_args a;
    if (parse_open_args(args, &a) < 0)
        return NULL;
    OwnerObject *o = tio_py_owner_new(1);
    if (o == NULL)
        return NULL;
    const void *data;
    size_t size;
    if (owner_take_buffer(o, a.obj, &data, &size) < 0) {
        Py_DECREF(o);
        return NULL;
    }
    tio_error err;
    tio_error_clear(&err);
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tio_open_memory(data, size, &a.opts, &o->c, &err);
    Py_END_ALLOW_THREADS
    return tio_py_owner_opened(o, rc, &err);
}

/* open_parts(parts, format, flags, limits) -> _Owner borrowing every part */
static PyObject *mod_open_parts(PyObject *m, PyObject *args)
{
    (void)m;
    open_args a;
    if (parse_open_args(args, &a) < 0)
        return NULL;
    PyObject *seq = PySequence_Fast(a.obj, "parts: a sequence of bytes-like objects");
    if (seq == NULL)
        return NULL;
    size_t n = (size_t)PySequence_Fast_GET_SIZE(seq);
    OwnerObject *o = tio_py_owner_new(n);
    tio_part *tp = PyMem_Calloc(n ? n : 1, sizeof *tp);
    if (o == NULL || tp == NULL) {
        if (tp == NULL)
            PyErr_NoMemory();
        goto fail;
    }
    for (size_t i = 0; i < n; i++)
        if (owner_take_buffer(o, PySequence_Fast_GET_ITEM(seq, (Py_ssize_t)i), &tp[i].data,
                              &tp[i].size) < 0)
            goto fail;
    tio_error err;
    tio_error_clear(&err);
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tio_open_parts(tp, n, &a.opts, &o->c, &err);
    Py_END_ALLOW_THREADS
    PyMem_Free(tp);
    Py_DECREF(seq);
    return tio_py_owner_opened(o, rc, &err);
fail:
    PyMem_Free(tp);
    Py_XDECREF(o);
    Py_DECREF(seq);
    return NULL;
}

static int set_meta_items(PyObject *items, tio_container *c, tio_tensor *t)
{
    if (items == Py_None)
        return 0;
    PyObject *seq = PySequence_Fast(items, "metadata: a sequence of (key, value) pairs");
    if (seq == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *k, *v; /* byte strings: "\0" in a key or value is kept */
        Py_ssize_t kl, vl;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "s#s#;metadata: (str, str)", &k,
                              &kl, &v, &vl)) {
            Py_DECREF(seq);
            return -1;
        }
        tio_error err;
        tio_error_clear(&err);
        int rc = t ? tio_tensor_meta_set_n(t, k, (size_t)kl, v, (size_t)vl, &err)
                   : tio_container_meta_set_n(c, k, (size_t)kl, v, (size_t)vl, &err);
        if (rc != TIO_OK) {
            Py_DECREF(seq);
            tio_py_raise(rc, &err);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

/* The container whose memory obj's bytes are, if obj is a view tensio made
 * (an array or memoryview whose base is an _Owner; NumPy's views of views
 * name the first base), else NULL. */
static const tio_container *viewed_container(PyObject *obj)
{
    for (int depth = 0; obj != NULL && depth < 8; depth++) {
        if (PyObject_TypeCheck(obj, &tio_py_OwnerType))
            return ((OwnerObject *)obj)->c;
        if (PyArray_Check(obj))
            obj = PyArray_BASE((PyArrayObject *)obj);
        else if (PyMemoryView_Check(obj))
            obj = PyMemoryView_GET_BUFFER(obj)->obj;
        else
            return NULL;
    }
    return NULL;
}

/* c holds the containers its borrowed views lie in (tio_container_hold),
 * each once: a save then copies their bytes from the files they mapped,
 * as it does for the opened container itself, instead of writing them from
 * the mapping (saving a dict of an opened file's arrays faulted every page
 * of it in). Out of memory, it just does not hold: the bytes are the same. */
typedef struct {
    const tio_container **held;
    size_t n, cap;
} held_set;

static void hold_viewed(tio_container *c, held_set *h, PyObject *obj)
{
    const tio_container *src = viewed_container(obj);
    if (src == NULL || src == c)
        return;
    for (size_t k = h->n; k > 0; k--) /* the last first: items mostly share one */
        if (h->held[k - 1] == src)
            return;
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 4;
        const tio_container **m = PyMem_Realloc(h->held, cap * sizeof *m);
        if (m == NULL)
            return;
        h->held = m;
        h->cap = cap;
    }
    if (tio_container_hold(c, src, NULL) == TIO_OK)
        h->held[h->n++] = src;
}

/* build(items, meta) -> _Owner. items: sequence of
 * (name|None, dtype_name, shape tuple, data, indices|None, nnz, meta|None)
 * where data (and indices) are C-contiguous little-endian bytes-like objects
 * that the container borrows (the owner holds them), or with copy true
 * copies (the buffers are released at once: the owner borrows nothing, so
 * libzmq may keep sending its data after the owner is gone). */
static PyObject *mod_build(PyObject *m, PyObject *args)
{
    (void)m;
    PyObject *items, *meta;
    int copy = 0;
    if (!PyArg_ParseTuple(args, "OO|p", &items, &meta, &copy))
        return NULL;
    PyObject *seq = PySequence_Fast(items, "build: a sequence of tensors");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    OwnerObject *o = tio_py_owner_new((size_t)n * 2 + 1);
    int64_t *shape = NULL;
    held_set held = {NULL, 0, 0};
    if (o == NULL)
        goto fail;
    o->c = tio_container_new();
    if (o->c == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    if (set_meta_items(meta, o->c, NULL) < 0)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name, *shp, *data, *ind, *tmeta;
        const char *dtname;
        unsigned long long nnz;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "OsOOOKO;build: a tensor tuple",
                              &name, &dtname, &shp, &data, &ind, &nnz, &tmeta))
            goto fail;
        tio_tensor_desc d;
        memset(&d, 0, sizeof d);
        if (name != Py_None) {
            Py_ssize_t len;
            d.name = PyUnicode_AsUTF8AndSize(name, &len);
            if (d.name == NULL)
                goto fail;
            if (strlen(d.name) != (size_t)len) {
                tio_py_raise_code(TIO_E_ARGUMENT, "a tensor name contains a NUL character");
                goto fail;
            }
        }
        d.dtype = tio_dtype_from_name(dtname);
        if (d.dtype == TIO_DTYPE_INVALID) {
            char msg[128];
            snprintf(msg, sizeof msg, "tensor %zd: dtype %.60s has no tensio equivalent", i,
                     dtname);
            tio_py_raise_code(TIO_E_DTYPE, msg);
            goto fail;
        }
        PyObject *sseq = PySequence_Fast(shp, "build: shape must be a sequence");
        if (sseq == NULL)
            goto fail;
        Py_ssize_t rank = PySequence_Fast_GET_SIZE(sseq);
        PyMem_Free(shape);
        shape = PyMem_Malloc(((size_t)rank + 1) * sizeof(int64_t));
        if (shape == NULL) {
            Py_DECREF(sseq);
            PyErr_NoMemory();
            goto fail;
        }
        for (Py_ssize_t k = 0; k < rank; k++) {
            shape[k] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(sseq, k));
            if (shape[k] == -1 && PyErr_Occurred()) {
                Py_DECREF(sseq);
                goto fail;
            }
        }
        Py_DECREF(sseq);
        d.rank = (size_t)rank;
        d.shape = shape;
        if (owner_take_buffer(o, data, &d.data, &d.nbytes) < 0)
            goto fail;
        if (!copy)
            hold_viewed(o->c, &held, data);
        if (ind != Py_None) {
            const void *ip;
            size_t ilen;
            if (owner_take_buffer(o, ind, &ip, &ilen) < 0)
                goto fail;
            d.layout = TIO_LAYOUT_COO;
            d.nnz = nnz;
            if (rank > 0 && ilen != nnz * (size_t)rank * sizeof(int64_t)) {
                tio_py_raise_code(TIO_E_ARGUMENT, "COO indices: expected nnz x rank int64");
                goto fail;
            }
            d.indices = ip;
        }
        tio_tensor *t = NULL;
        tio_error err;
        tio_error_clear(&err);
        int rc;
        Py_BEGIN_ALLOW_THREADS /* checks every COO index: O(nnz) */
        rc = tio_container_add(o->c, &d, copy ? 0u : TIO_ADD_BORROW, &t, &err);
        Py_END_ALLOW_THREADS
        if (rc != TIO_OK) {
            tio_py_raise(rc, &err);
            goto fail;
        }
        if (set_meta_items(tmeta, o->c, t) < 0)
            goto fail;
        while (copy && o->nbufs > 0) /* copied: nothing to hold */
            PyBuffer_Release(&o->bufs[--o->nbufs]);
    }
    PyMem_Free(shape);
    PyMem_Free(held.held);
    Py_DECREF(seq);
    return (PyObject *)o;
fail:
    PyMem_Free(shape);
    PyMem_Free(held.held);
    Py_XDECREF(o);
    Py_DECREF(seq);
    return NULL;
}

/* ------------------------------------------------------------ owner methods */

static PyObject *owner_count(OwnerObject *self, PyObject *noargs)
{
    (void)noargs;
    return PyLong_FromSize_t(tio_container_count(self->c));
}

/* borrows() -> whether the container points into memory Python owns */
static PyObject *owner_borrows(OwnerObject *self, PyObject *noargs)
{
    (void)noargs;
    return PyBool_FromLong(self->nbufs > 0);
}

static PyObject *owner_format(OwnerObject *self, PyObject *noargs)
{
    (void)noargs;
    const char *f = tio_container_format(self->c);
    return f ? PyUnicode_FromString(f) : Py_NewRef(Py_None);
}

PyObject *tio_py_str_or_none(const char *s)
{
    return s ? PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "surrogateescape")
             : Py_NewRef(Py_None);
}


static PyObject *str_n(const char *s, size_t n)
{
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "surrogateescape");
}

PyObject *tio_py_pairs_dict(const void *obj, size_t n, pair_at_fn at)
{
    PyObject *d = PyDict_New();
    if (d == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const char *k = NULL, *v = NULL;
        size_t kl = 0, vl = 0;
        if (at(obj, i, &k, &kl, &v, &vl) != TIO_OK || k == NULL || v == NULL)
            continue;
        PyObject *ko = str_n(k, kl), *vo = str_n(v, vl);
        if (ko == NULL || vo == NULL || PyDict_SetItem(d, ko, vo) < 0) {
            Py_XDECREF(ko);
            Py_XDECREF(vo);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(ko);
        Py_DECREF(vo);
    }
    return d;
}

static int cmeta_at(const void *o, size_t i, const char **k, size_t *kl, const char **v,
                    size_t *vl)
{
    return tio_container_meta_at_n(o, i, k, kl, v, vl);
}
/* The lengths of a C-string pair (properties, graph metadata: text). */
int tio_py_text_lens(int rc, const char *const *k, size_t *kl, const char *const *v, size_t *vl)
{
    if (rc == TIO_OK) {
        *kl = *k ? strlen(*k) : 0;
        *vl = *v ? strlen(*v) : 0;
    }
    return rc;
}
static int cprop_at(const void *o, size_t i, const char **k, size_t *kl, const char **v,
                    size_t *vl)
{
    return tio_py_text_lens(tio_container_prop_at(o, i, k, v), k, kl, v, vl);
}
static int tmeta_at(const void *o, size_t i, const char **k, size_t *kl, const char **v,
                    size_t *vl)
{
    return tio_tensor_meta_at_n(o, i, k, kl, v, vl);
}

static PyObject *owner_metadata(OwnerObject *self, PyObject *noargs)
{
    (void)noargs;
    return tio_py_pairs_dict(self->c, tio_container_meta_count(self->c), cmeta_at);
}

static PyObject *owner_properties(OwnerObject *self, PyObject *noargs)
{
    (void)noargs;
    return tio_py_pairs_dict(self->c, tio_container_prop_count(self->c), cprop_at);
}

static PyObject *owner_tensor_metadata(OwnerObject *self, PyObject *arg)
{
    tio_tensor *t = arg_tensor(self, arg);
    if (t == NULL)
        return NULL;
    return tio_py_pairs_dict(t, tio_tensor_meta_count(t), tmeta_at);
}


PyObject *tio_py_build_seq(size_t n, int tuple, item_fn item, const void *ctx)
{
    PyObject *seq = tuple ? PyTuple_New((Py_ssize_t)n) : PyList_New((Py_ssize_t)n);
    if (seq == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        PyObject *v = item(ctx, i);
        if (v == NULL) {
            Py_DECREF(seq);
            return NULL;
        }
        if (tuple)
            PyTuple_SET_ITEM(seq, (Py_ssize_t)i, v);
        else
            PyList_SET_ITEM(seq, (Py_ssize_t)i, v);
    }
    return seq;
}

/* (code, code_name, format|None, offset|None, message) */
static PyObject *warning_item(const void *c, size_t i)
{
    const tio_error *w = tio_container_warning(c, i);
    PyObject *fmt = w->format[0] ? PyUnicode_FromString(w->format) : Py_NewRef(Py_None);
    PyObject *off = w->offset >= 0 ? PyLong_FromLongLong(w->offset) : Py_NewRef(Py_None);
    PyObject *msg = message_text(w->message);
    PyObject *t = fmt && off && msg ? Py_BuildValue("(isOOO)", w->code, tio_status_name(w->code),
                                                    fmt, off, msg)
                                    : NULL;
    Py_XDECREF(fmt);
    Py_XDECREF(off);
    Py_XDECREF(msg);
    return t;
}

static PyObject *owner_warnings(OwnerObject *self, PyObject *noargs)
{
    (void)noargs;
    return tio_py_build_seq(tio_container_warning_count(self->c), 0, warning_item, self->c);
}

static PyObject *owner_limits(OwnerObject *self, PyObject *noargs)
{
    (void)noargs;
    tio_limits l;
    tio_container_get_limits(self->c, &l);
    return Py_BuildValue("(KIKIIKKKKIIKIIIK)", (unsigned long long)l.max_tensors, l.max_rank,
                         (unsigned long long)l.max_header_bytes, l.max_name_bytes, l.max_depth,
                         (unsigned long long)l.max_objects,
                         (unsigned long long)l.max_dense_bytes,
                         (unsigned long long)l.max_pickle_bytes,
                         (unsigned long long)l.max_pickle_objects, l.max_pickle_depth,
                         l.max_shards, (unsigned long long)l.max_remote_bytes, l.max_redirects,
                         l.max_retries, l.timeout_ms, (unsigned long long)l.max_member_bytes);
}

/* find(name) -> index or -1 */
static PyObject *owner_find(OwnerObject *self, PyObject *arg)
{
    const char *name = PyUnicode_AsUTF8(arg);
    if (name == NULL)
        return NULL;
    const tio_tensor *t = tio_container_find(self->c, name); /* by its index of names */
    return t != NULL ? PyLong_FromSize_t(tio_tensor_index(t)) : PyLong_FromLong(-1);
}

static PyObject *name_item(const void *c, size_t i)
{
    return tio_py_str_or_none(tio_tensor_name(tio_container_tensor(c, i)));
}

/* names() -> [str|None] */
static PyObject *owner_names(OwnerObject *self, PyObject *noargs)
{
    (void)noargs;
    return tio_py_build_seq(tio_container_count(self->c), 0, name_item, self->c);
}

static PyObject *dim_item(const void *t, size_t k)
{
    return PyLong_FromLongLong(tio_tensor_shape(t)[k]);
}

static PyObject *shape_tuple(const tio_tensor *t)
{
    return tio_py_build_seq(tio_tensor_rank(t), 1, dim_item, t);
}

/* info(i) -> (name, dtype_name, layout, shape, nnz, nbytes, aligned, source_offset,
 *            quant type name or None, the name of the tensor it aliases or None) */
static PyObject *owner_info(OwnerObject *self, PyObject *arg)
{
    tio_tensor *t = arg_tensor(self, arg);
    if (t == NULL)
        return NULL;
    PyObject *name = tio_py_str_or_none(tio_tensor_name(t));
    PyObject *shape = shape_tuple(t);
    PyObject *r = NULL;
    if (name && shape)
        r = Py_BuildValue("(OsiOKnNLzz)", name, tio_dtype_name(tio_tensor_dtype(t)),
                          (int)tio_tensor_layout(t), shape,
                          (unsigned long long)tio_tensor_nnz(t), (Py_ssize_t)tio_tensor_nbytes(t),
                          PyBool_FromLong(tio_tensor_is_aligned(t)),
                          (long long)tio_tensor_source_offset(t),
                          tio_quant_name(tio_tensor_quant(t)),
                          tio_tensor_alias(t) ? tio_tensor_name(tio_tensor_alias(t)) : NULL);
    Py_XDECREF(name);
    Py_XDECREF(shape);
    return r;
}

static int npy_type(tio_dtype d)
{
    switch (d) {
    case TIO_BOOL: return NPY_BOOL;
    case TIO_INT8: return NPY_INT8;
    case TIO_INT16: return NPY_INT16;
    case TIO_INT32: return NPY_INT32;
    case TIO_INT64: return NPY_INT64;
    case TIO_UINT8: return NPY_UINT8;
    case TIO_UINT16: return NPY_UINT16;
    case TIO_UINT32: return NPY_UINT32;
    case TIO_UINT64: return NPY_UINT64;
    case TIO_FLOAT16: return NPY_FLOAT16;
    case TIO_BFLOAT16: return NPY_UINT16; /* bits; __init__ re-views as ml_dtypes */
    case TIO_FLOAT32: return NPY_FLOAT32;
    case TIO_FLOAT64: return NPY_FLOAT64;
    case TIO_COMPLEX64: return NPY_COMPLEX64;
    case TIO_COMPLEX128: return NPY_COMPLEX128;
    default: return -1;
    }
}

/* arg_tensor for a call that reads its data (fetched first when lazy). */
static tio_tensor *arg_data_tensor(OwnerObject *self, PyObject *arg)
{
    tio_tensor *t = arg_tensor(self, arg);
    if (t == NULL || tio_py_owner_need(self, PyLong_AsSsize_t(arg)) < 0)
        return NULL;
    return t;
}

/* arg_data_tensor, and *tn = the tensor's NumPy type number. */
static tio_tensor *arg_tensor_npy(OwnerObject *self, PyObject *arg, int *tn)
{
    tio_tensor *t = arg_data_tensor(self, arg);
    if (t == NULL)
        return NULL;
    *tn = npy_type(tio_tensor_dtype(t));
    if (*tn < 0)
        return (tio_tensor *)tio_py_raise_code(TIO_E_DTYPE, "tensor has no NumPy dtype");
    return t;
}

/* A read-only ndarray over data whose base is the owner. */
static PyObject *view_array(OwnerObject *self, int typenum, int nd, const int64_t *dims64,
                            const void *data)
{
    if (nd > NPY_MAXDIMS)
        return tio_py_raise_code(TIO_E_UNSUPPORTED, "rank exceeds NumPy's maximum number of dims");
    npy_intp dims[NPY_MAXDIMS];
    for (int k = 0; k < nd; k++)
        dims[k] = (npy_intp)dims64[k];
    PyArray_Descr *descr = PyArray_DescrFromType(typenum);
    if (descr == NULL)
        return NULL;
#if PY_BIG_ENDIAN
    if (descr->elsize > 1) {
        PyArray_Descr *le = PyArray_DescrNewByteorder(descr, NPY_LITTLE);
        Py_DECREF(descr);
        if (le == NULL)
            return NULL;
        descr = le;
    }
#endif
    static const char empty_data[8]; /* data for zero-size views (never read) */
    if (data == NULL)
        data = empty_data;
    /* steals descr; flags 0 with data given: not writeable, contiguity and
     * alignment computed from the pointer */
    PyObject *arr = PyArray_NewFromDescr(&PyArray_Type, descr, nd, dims, NULL, (void *)data, 0,
                                         NULL);
    if (arr == NULL)
        return NULL;
    PyArray_CLEARFLAGS((PyArrayObject *)arr, NPY_ARRAY_WRITEABLE);
    Py_INCREF(self);
    if (PyArray_SetBaseObject((PyArrayObject *)arr, (PyObject *)self) < 0) {
        Py_DECREF(arr);
        return NULL;
    }
    return arr;
}

/* A string tensor as a new NumPy object array of bytes objects, as
 * onnx.numpy_helper.to_array gives one: exact for any bytes (a fixed-width
 * S array would pad them and drop trailing NULs). */
/* A new C-order ndarray of t's shape and NumPy type typenum. */
static PyObject *new_array(const tio_tensor *t, int typenum)
{
    size_t rank = tio_tensor_rank(t);
    if (rank > NPY_MAXDIMS)
        return tio_py_raise_code(TIO_E_UNSUPPORTED, "rank exceeds NumPy's maximum number of dims");
    npy_intp dims[NPY_MAXDIMS];
    const int64_t *s = tio_tensor_shape(t);
    for (size_t k = 0; k < rank; k++)
        dims[k] = (npy_intp)s[k];
    return PyArray_SimpleNew((int)rank, dims, typenum);
}

static PyObject *string_array(const tio_tensor *t)
{
    PyObject *arr = new_array(t, NPY_OBJECT);
    if (arr == NULL)
        return NULL;
    PyObject **items = (PyObject **)PyArray_DATA((PyArrayObject *)arr);
    uint64_t n = tio_tensor_numel(t);
    for (uint64_t i = 0; i < n; i++) {
        const char *p;
        size_t len;
        tio_error err;
        int rc = tio_tensor_string_at(t, i, &p, &len, &err);
        if (rc != TIO_OK) {
            Py_DECREF(arr);
            return tio_py_raise(rc, &err);
        }
        PyObject *b = PyBytes_FromStringAndSize(p, (Py_ssize_t)len);
        if (b == NULL) {
            Py_DECREF(arr);
            return NULL;
        }
        Py_XSETREF(items[i], b); /* the new array holds None */
    }
    return arr;
}

/* array(i) -> dense: the elements; COO: the nnz values (1-D); a string
 * tensor: a new object array of bytes (string_array). */
static PyObject *owner_array(OwnerObject *self, PyObject *arg)
{
    int tn;
    tio_tensor *st = arg_data_tensor(self, arg);
    if (st != NULL && tio_tensor_dtype(st) == TIO_STRING)
        return string_array(st);
    if (st == NULL)
        return NULL;
    tio_tensor *t = arg_tensor_npy(self, arg, &tn);
    if (t == NULL)
        return NULL;
    if (tio_tensor_layout(t) == TIO_LAYOUT_COO) {
        int64_t nnz = (int64_t)tio_tensor_nnz(t);
        return view_array(self, tn, 1, &nnz, tio_tensor_data(t));
    }
    if (tio_tensor_layout(t) == TIO_LAYOUT_QUANT) { /* the blocks, as bytes */
        int64_t nb = (int64_t)tio_tensor_nbytes(t);
        return view_array(self, NPY_UINT8, 1, &nb, tio_tensor_data(t));
    }
    /* the bytes where they lie, aligned or not: NumPy takes unaligned views
     * (an .npz member from NumPy stays zero-copy) */
    return view_array(self, tn, (int)tio_tensor_rank(t), tio_tensor_shape(t),
                      tio_tensor_bytes(t));
}

/* arrays() -> a list of read-only views of every tensor, in one call (the
 * loop of tenbin's decode_buffer over many small arrays), or None when a
 * tensor needs Python's handling (COO, bfloat16, no NumPy dtype). */
static PyObject *owner_arrays(OwnerObject *self, PyObject *unused)
{
    (void)unused;
    if (tio_py_owner_need(self, -1) < 0)
        return NULL;
    size_t n = tio_container_count(self->c);
    for (size_t i = 0; i < n; i++) {
        const tio_tensor *t = tio_container_tensor(self->c, i);
        if (tio_tensor_layout(t) != TIO_LAYOUT_DENSE || tio_tensor_dtype(t) == TIO_BFLOAT16 ||
            npy_type(tio_tensor_dtype(t)) < 0)
            Py_RETURN_NONE;
    }
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (list == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const tio_tensor *t = tio_container_tensor(self->c, i);
        PyObject *a = view_array(self, npy_type(tio_tensor_dtype(t)), (int)tio_tensor_rank(t),
                                 tio_tensor_shape(t), tio_tensor_bytes(t));
        if (a == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, a);
    }
    return list;
}

/* indices(i) -> COO: nnz x rank int64 view. */
static PyObject *owner_indices(OwnerObject *self, PyObject *arg)
{
    tio_tensor *t = arg_data_tensor(self, arg);
    if (t == NULL)
        return NULL;
    if (tio_tensor_layout(t) != TIO_LAYOUT_COO)
        return tio_py_raise_code(TIO_E_ARGUMENT, "not a COO tensor");
    int64_t dims[2] = {(int64_t)tio_tensor_nnz(t), (int64_t)tio_tensor_rank(t)};
    return view_array(self, NPY_INT64, 2, dims, tio_tensor_indices(t));
}

/* densify(i) -> a new writable ndarray (COO expanded). */
static PyObject *owner_densify(OwnerObject *self, PyObject *arg)
{
    int tn;
    tio_tensor *st = arg_data_tensor(self, arg);
    if (st != NULL && tio_tensor_dtype(st) == TIO_STRING)
        return string_array(st);
    if (st == NULL)
        return NULL;
    tio_tensor *t = arg_tensor_npy(self, arg, &tn);
    if (t == NULL)
        return NULL;
    tio_limits lim;
    tio_container_get_limits(self->c, &lim);
    size_t bytes = (size_t)tio_tensor_numel(t) * tio_dtype_size(tio_tensor_dtype(t));
    if (tio_tensor_layout(t) == TIO_LAYOUT_COO && bytes > lim.max_dense_bytes)
        return tio_py_raise_code(TIO_E_LIMIT, "densify: the dense tensor exceeds max_dense_bytes");
    PyObject *arr = new_array(t, tn);
    if (arr == NULL)
        return NULL;
    tio_error err;
    tio_error_clear(&err);
    int rc;
    void *dst = PyArray_DATA((PyArrayObject *)arr);
    Py_BEGIN_ALLOW_THREADS
    rc = tio_tensor_densify(t, dst, bytes, &err);
    Py_END_ALLOW_THREADS
    if (rc != TIO_OK) {
        Py_DECREF(arr);
        return tio_py_raise(rc, &err);
    }
    return arr;
}

/* sha256(i, what) -> bytes */
static PyObject *owner_sha256(OwnerObject *self, PyObject *args)
{
    Py_ssize_t i;
    int what = TIO_HASH_DENSE;
    if (!PyArg_ParseTuple(args, "n|i", &i, &what))
        return NULL;
    tio_tensor *t = owner_tensor(self, i);
    if (t == NULL || tio_py_owner_need(self, i) < 0)
        return NULL;
    uint8_t out[32];
    tio_error err;
    tio_error_clear(&err);
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tio_tensor_sha256(t, what, out, &err);
    Py_END_ALLOW_THREADS
    if (rc != TIO_OK)
        return tio_py_raise(rc, &err);
    return PyBytes_FromStringAndSize((const char *)out, 32);
}

/* save(path, format, flags, version, options, cast[, max_shard_size]): the size an
 * int (bytes) or a str as transformers takes it ("5GB"), None for none */
static PyObject *owner_save(OwnerObject *self, PyObject *args)
{
    PyObject *path, *shard = Py_None;
    tio_save_options o;
    memset(&o, 0, sizeof o);
    if (!PyArg_ParseTuple(args, "O&zIIzz|O", PyUnicode_FSConverter, &path, &o.format, &o.flags,
                          &o.version, &o.options, &o.cast, &shard))
        return NULL;
    if (tio_py_owner_need(self, -1) < 0) {
        Py_DECREF(path);
        return NULL;
    }
    tio_error err;
    tio_error_clear(&err);
    int rc;
    if (PyUnicode_Check(shard)) {
        const char *text = PyUnicode_AsUTF8(shard);
        if (text == NULL || (rc = tio_parse_size(text, &o.max_shard_bytes, &err)) != TIO_OK) {
            Py_DECREF(path);
            return text == NULL ? NULL : tio_py_raise(rc, &err);
        }
    } else if (shard != Py_None) {
        unsigned long long v = PyLong_AsUnsignedLongLong(shard);
        if (v == (unsigned long long)-1 && PyErr_Occurred()) {
            Py_DECREF(path);
            return NULL;
        }
        if (v == 0) {
            Py_DECREF(path);
            return tio_py_raise_code(TIO_E_ARGUMENT, "max_shard_size: expected a positive size");
        }
        o.max_shard_bytes = v;
    }
    const char *p = PyBytes_AS_STRING(path);
    Py_BEGIN_ALLOW_THREADS
    rc = tio_save(self->c, p, &o, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    if (rc != TIO_OK)
        return tio_py_raise(rc, &err);
    Py_RETURN_NONE;
}

/* dumps(format, flags, version, options, cast[, as_bytearray]) -> bytes (or a
 * bytearray: one copy, where bytearray(bytes) would be a second) */
static PyObject *owner_dumps(OwnerObject *self, PyObject *args)
{
    tio_save_options o;
    memset(&o, 0, sizeof o);
    int as_bytearray = 0;
    if (!PyArg_ParseTuple(args, "sIIzz|p", &o.format, &o.flags, &o.version, &o.options,
                          &o.cast, &as_bytearray) ||
        tio_py_owner_need(self, -1) < 0)
        return NULL;
    /* measured first, then written straight into the bytes object: one
     * allocation and one copy of the output (tio_save_buffer) */
    tio_error err;
    tio_error_clear(&err);
    size_t size = 0, wrote = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tio_save_buffer(self->c, &o, NULL, 0, &size, &err);
    Py_END_ALLOW_THREADS
    if (rc != TIO_OK)
        return tio_py_raise(rc, &err);
    if (size > PY_SSIZE_T_MAX)
        return PyErr_NoMemory();
    PyObject *b = as_bytearray ? PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)size)
                               : PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
    if (b == NULL)
        return NULL;
    char *p = as_bytearray ? PyByteArray_AS_STRING(b) : PyBytes_AS_STRING(b);
    Py_BEGIN_ALLOW_THREADS
    rc = tio_save_buffer(self->c, &o, p, size, &wrote, &err);
    Py_END_ALLOW_THREADS
    if (rc == TIO_OK && wrote != size) {
        Py_DECREF(b);
        return tio_py_raise_code(TIO_E_ARGUMENT,
                                 "dumps: the encoding changed size between its passes");
    }
    if (rc != TIO_OK) {
        Py_DECREF(b);
        return tio_py_raise(rc, &err);
    }
    return b;
}

/* encode(format, flags, version, options, cast) -> [bytes]: tio_message_encode,
 * each part copied into a bytes object. */
static PyObject *owner_encode(OwnerObject *self, PyObject *args)
{
    tio_save_options o;
    memset(&o, 0, sizeof o);
    if (!PyArg_ParseTuple(args, "sIIzz", &o.format, &o.flags, &o.version, &o.options,
                          &o.cast) ||
        tio_py_owner_need(self, -1) < 0)
        return NULL;
    tio_error err;
    tio_error_clear(&err);
    tio_message *msg = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tio_message_encode(self->c, &o, &msg, &err);
    Py_END_ALLOW_THREADS
    if (rc != TIO_OK)
        return tio_py_raise(rc, &err);
    size_t n = tio_message_part_count(msg);
    PyObject *l = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; l != NULL && i < n; i++) {
        tio_part p = tio_message_part(msg, i);
        PyObject *b = p.size > PY_SSIZE_T_MAX
                          ? PyErr_NoMemory()
                          : PyBytes_FromStringAndSize(p.data, (Py_ssize_t)p.size);
        if (b == NULL)
            Py_CLEAR(l);
        else
            PyList_SET_ITEM(l, (Py_ssize_t)i, b);
    }
    tio_message_free(msg);
    return l;
}

/* ---------------------------------------------------------------- DLPack */

/* The DLPack 0.x ABI (dlpack.h v0.8), declared here: its structs are a
 * stable ABI and the header is not packaged in Debian. */
typedef struct {
    int32_t device_type;
    int32_t device_id;
} DLDevice;
typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} DLDataType;
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

enum { kDLCPU = 1 };
enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLComplex = 5, kDLBool = 6 };

typedef struct {
    DLManagedTensor m;
    PyObject *owner;
    int64_t dims[]; /* shape, then strides */
} tio_dlpack;

/* May run on any thread, with or without the GIL (the consumer frees its
 * tensor whenever it likes). */
static void dlpack_deleter(DLManagedTensor *m)
{
    tio_dlpack *d = (tio_dlpack *)m;
    if (Py_IsInitialized()) {
        PyGILState_STATE g = PyGILState_Ensure();
        Py_XDECREF(d->owner);
        PyGILState_Release(g);
    }
    free(d);
}

static void dlpack_capsule_destructor(PyObject *cap)
{
    /* still named "dltensor": nobody consumed it, so it is ours to delete */
    if (PyCapsule_IsValid(cap, "dltensor")) {
        DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
        if (m != NULL && m->deleter != NULL)
            m->deleter(m);
    } else {
        PyErr_Clear();
    }
}

/* dlpack(i, bool_as_uint8=False) -> a "dltensor" capsule over tensor i's
 * data, with its tensio dtype (bfloat16 as kDLBfloat, bool as kDLBool, or
 * as kDLUInt 8 for consumers that predate kDLBool: torch 1.13, NumPy 1.24). */
static PyObject *owner_dlpack(OwnerObject *self, PyObject *args)
{
    Py_ssize_t i;
    int bool_as_uint8 = 0;
    if (!PyArg_ParseTuple(args, "n|p", &i, &bool_as_uint8))
        return NULL;
    tio_tensor *t = owner_tensor(self, i);
    if (t == NULL || tio_py_owner_need(self, i) < 0)
        return NULL;
    if (tio_tensor_layout(t) != TIO_LAYOUT_DENSE)
        return tio_py_raise_code(TIO_E_UNSUPPORTED, "DLPack: a COO tensor has no dense data to "
                                             "export (use .values, .indices or .todense())");
    tio_dtype dt = tio_tensor_dtype(t);
    DLDataType dl = {0, (uint8_t)(tio_dtype_size(dt) * 8), 1};
    switch (dt) {
    case TIO_BOOL: dl.code = bool_as_uint8 ? kDLUInt : kDLBool; break;
    case TIO_INT8: case TIO_INT16: case TIO_INT32: case TIO_INT64: dl.code = kDLInt; break;
    case TIO_UINT8: case TIO_UINT16: case TIO_UINT32: case TIO_UINT64: dl.code = kDLUInt; break;
    case TIO_FLOAT16: case TIO_FLOAT32: case TIO_FLOAT64: dl.code = kDLFloat; break;
    case TIO_BFLOAT16: dl.code = kDLBfloat; break;
    case TIO_COMPLEX64: case TIO_COMPLEX128: dl.code = kDLComplex; break; /* bits: both parts */
    default: return tio_py_raise_code(TIO_E_DTYPE, "DLPack: no DLPack type for this dtype");
    }
    size_t rank = tio_tensor_rank(t);
    if (rank > INT32_MAX)
        return tio_py_raise_code(TIO_E_LIMIT, "DLPack: rank too large");
    tio_dlpack *d = malloc(sizeof *d + 2 * (rank + 1) * sizeof(int64_t));
    if (d == NULL)
        return PyErr_NoMemory();
    const int64_t *s = tio_tensor_shape(t);
    int64_t *shape = d->dims, *strides = d->dims + rank + 1;
    int64_t stride = 1;
    for (size_t k = rank; k-- > 0;) {
        shape[k] = s[k];
        strides[k] = stride;
        stride *= s[k] > 0 ? s[k] : 1;
    }
    const void *data = tio_tensor_data(t);
    d->m.dl_tensor.data = data ? (void *)data : (void *)d->dims; /* zero-size: never read */
    d->m.dl_tensor.device.device_type = kDLCPU;
    d->m.dl_tensor.device.device_id = 0;
    d->m.dl_tensor.ndim = (int32_t)rank;
    d->m.dl_tensor.dtype = dl;
    d->m.dl_tensor.shape = shape;
    d->m.dl_tensor.strides = strides;
    d->m.dl_tensor.byte_offset = 0;
    d->m.manager_ctx = d;
    d->m.deleter = dlpack_deleter;
    d->owner = Py_NewRef((PyObject *)self);
    PyObject *cap = PyCapsule_New(&d->m, "dltensor", dlpack_capsule_destructor);
    if (cap == NULL)
        dlpack_deleter(&d->m);
    return cap;
}

static PyMethodDef owner_methods[] = {
    {"count", (PyCFunction)owner_count, METH_NOARGS, "number of tensors"},
    {"format", (PyCFunction)owner_format, METH_NOARGS, "source format name or None"},
    {"borrows", (PyCFunction)owner_borrows, METH_NOARGS, "whether it borrows Python memory"},
    {"metadata", (PyCFunction)owner_metadata, METH_NOARGS, "container metadata dict"},
    {"properties", (PyCFunction)owner_properties, METH_NOARGS, "reader properties dict"},
    {"warnings", (PyCFunction)owner_warnings, METH_NOARGS, "validation findings"},
    {"limits", (PyCFunction)owner_limits, METH_NOARGS, "resolved limits tuple"},
    {"names", (PyCFunction)owner_names, METH_NOARGS, "tensor names"},
    {"find", (PyCFunction)owner_find, METH_O, "index of the first tensor named so, or -1"},
    {"info", (PyCFunction)owner_info, METH_O, "tensor description tuple"},
    {"tensor_metadata", (PyCFunction)owner_tensor_metadata, METH_O, "tensor metadata dict"},
    {"array", (PyCFunction)owner_array, METH_O, "read-only view of tensor i"},
    {"arrays", (PyCFunction)owner_arrays, METH_NOARGS,
     "read-only views of every tensor, or None (COO, bfloat16)"},
    {"indices", (PyCFunction)owner_indices, METH_O, "COO indices view of tensor i"},
    {"densify", (PyCFunction)owner_densify, METH_O, "dense copy of tensor i"},
    {"sha256", (PyCFunction)owner_sha256, METH_VARARGS, "SHA-256 of tensor i"},
    {"dlpack", (PyCFunction)owner_dlpack, METH_VARARGS, "DLPack capsule of tensor i"},
    {"save", (PyCFunction)owner_save, METH_VARARGS, "tio_save"},
    {"dumps", (PyCFunction)owner_dumps, METH_VARARGS, "tio_save_memory"},
    {"encode", (PyCFunction)owner_encode, METH_VARARGS, "tio_message_encode"},
    {"graph", (PyCFunction)tio_py_owner_graph, METH_NOARGS, "the model graph as data, or None"},
    {"object_tree", (PyCFunction)tio_py_owner_object_tree, METH_VARARGS,
     "object_tree(tensor, opaque): the object tree as Python data, or None"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject tio_py_OwnerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tensio._tensio._Owner",
    .tp_basicsize = sizeof(OwnerObject),
    .tp_dealloc = (destructor)owner_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Holds a tio_container and the memory it borrows; the base of every view.",
    .tp_methods = owner_methods,
};

/* ---------------------------------------------------------------- module */

static PyObject *mod_formats(PyObject *m, PyObject *noargs)
{
    (void)m;
    (void)noargs;
    size_t n = tio_format_count();
    PyObject *l = PyList_New(0);
    if (l == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const char *f = tio_format_name(i);
        if (f == NULL)
            break;
        PyObject *t = Py_BuildValue("(sssIi)", f, tio_format_description(f),
                                    tio_format_extensions(f), tio_format_caps(f),
                                    tio_format_can_write(f));
        if (t == NULL || PyList_Append(l, t) < 0) {
            Py_XDECREF(t);
            Py_DECREF(l);
            return NULL;
        }
        Py_DECREF(t);
    }
    return l;
}

static PyObject *mod_supports_dtype(PyObject *m, PyObject *args)
{
    (void)m;
    const char *f, *dt;
    if (!PyArg_ParseTuple(args, "ss", &f, &dt))
        return NULL;
    tio_dtype d = tio_dtype_from_name(dt);
    return PyBool_FromLong(d != TIO_DTYPE_INVALID && tio_format_supports_dtype(f, d));
}

static PyMethodDef mod_methods[] = {
    {"open_file", mod_open_file, METH_VARARGS, "open_file(path, format, flags, limits)"},
    {"open_memory", mod_open_memory, METH_VARARGS, "open_memory(buf, format, flags, limits)"},
    {"open_parts", mod_open_parts, METH_VARARGS, "open_parts(parts, format, flags, limits)"},
    {"build", mod_build, METH_VARARGS, "build(items, metadata[, copy]) -> _Owner"},
    {"build_graph", tio_py_build_graph, METH_VARARGS, "build_graph(owner, spec): a new graph"},
    {"stream_open", tio_py_stream_open, METH_VARARGS, "stream_open(endpoint, ...) -> _Stream"},
    {"formats", mod_formats, METH_NOARGS, "[(name, description, extensions, caps)]"},
    {"supports_dtype", mod_supports_dtype, METH_VARARGS, "supports_dtype(format, dtype)"},
    {"shard_open", tio_py_shard_open, METH_VARARGS, "shard_open(path | buffer, limits) -> _Shard"},
    {"shard_stream_open", tio_py_shard_stream_open, METH_VARARGS,
     "shard_stream_open(source, limits) -> _ShardStream"},
    {"shard_list", tio_py_shard_list, METH_VARARGS, "shard_list(spec, limits) -> [names]"},
    {"shard_writer_open", tio_py_shard_writer_open, METH_VARARGS,
     "shard_writer_open(path, flags, mtime) -> _ShardWriter"},
    {"shard_check_name", tio_py_shard_check_name, METH_VARARGS, "shard_check_name(name)"},
    {"shard_format", tio_py_shard_format, METH_VARARGS,
     "shard_format(name) -> the format a shard member's name gives, or None (bytes)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "tensio._tensio", "libtensio bindings (see tensio/__init__.py)", -1,
    mod_methods, NULL, NULL, NULL, NULL,
};

/* Exception class names by code, and the builtin each also derives from. */
static const struct {
    const char *name;
    PyObject **builtin;
} exc_spec[TIO_NCODES] = {
    [TIO_E_ARGUMENT] = {"ArgumentError", &PyExc_ValueError},
    [TIO_E_NOMEM] = {"NoMemoryError", &PyExc_MemoryError},
    [TIO_E_IO] = {"IOError", &PyExc_OSError},
    [TIO_E_FORMAT] = {"FormatError", NULL},
    [TIO_E_TRUNCATED] = {"TruncatedError", NULL},
    [TIO_E_MAGIC] = {"MagicError", NULL},
    [TIO_E_BOUNDS] = {"BoundsError", NULL},
    [TIO_E_LIMIT] = {"LimitError", NULL},
    [TIO_E_OVERFLOW] = {"OverflowError", NULL},
    [TIO_E_DTYPE] = {"DtypeError", &PyExc_TypeError},
    [TIO_E_CORRUPT] = {"CorruptError", NULL},
    [TIO_E_UNSUPPORTED] = {"UnsupportedError", NULL},
    [TIO_E_LOSSY] = {"LossyError", NULL},
    [TIO_E_NOT_FOUND] = {"NotFoundError", &PyExc_KeyError},
    [TIO_E_INVALID] = {"InvalidError", NULL},
    [TIO_E_TIMEOUT] = {"TimeoutError", &PyExc_TimeoutError},
    [TIO_E_TRANSPORT] = {"TransportError", NULL},
};

#define TIO_CONST(n) {#n, TIO_##n}
static const struct {
    const char *name;
    long value;
} int_consts[] = {
    TIO_CONST(OPEN_STRICT),       TIO_CONST(OPEN_NO_MMAP),      TIO_CONST(OPEN_COPY),
    TIO_CONST(OPEN_EXTERNAL_ANYWHERE), TIO_CONST(OPEN_NATIVE_GRAPH), TIO_CONST(OPEN_PREFETCH),
    TIO_CONST(OPEN_LAZY),
    TIO_CONST(SAVE_DENSIFY), TIO_CONST(SAVE_DROP_NAMES),
    TIO_CONST(SAVE_DROP_METADATA), TIO_CONST(SAVE_WIDEN),       TIO_CONST(SAVE_SINGLE_PART),
    TIO_CONST(SAVE_DEQUANTIZE),
    TIO_CONST(SAVE_NO_SYNC),      TIO_CONST(SAVE_CLEANUP),      TIO_CONST(HASH_DENSE),
    TIO_CONST(HASH_VALUES),       TIO_CONST(HASH_INDICES),
    TIO_CONST(STREAM_BIND),       TIO_CONST(STREAM_CONNECT),    TIO_CONST(STREAM_SINGLE),
    TIO_CONST(STREAM_COPY),
};
#undef TIO_CONST

static int add_int(PyObject *m, const char *name, long v)
{
    return PyModule_AddIntConstant(m, name, v);
}

PyMODINIT_FUNC PyInit__tensio(void);
PyMODINIT_FUNC PyInit__tensio(void)
{
    import_array();
    if (PyType_Ready(&tio_py_OwnerType) < 0 || PyType_Ready(&tio_py_StreamType) < 0 ||
        PyType_Ready(&tio_py_ShardType) < 0 || PyType_Ready(&tio_py_ShardStreamType) < 0 ||
        PyType_Ready(&tio_py_ShardWriterType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moddef);
    if (m == NULL)
        return NULL;
    if (tio_exc_base == NULL) {
        tio_exc_base = PyErr_NewExceptionWithDoc(
            "tensio.Error",
            "A libtensio error: .code (tio_status), .code_name, .format, .offset, .message.",
            NULL, NULL);
        if (tio_exc_base == NULL)
            goto fail;
        for (int c = 1; c < TIO_NCODES; c++) {
            char qual[64];
            snprintf(qual, sizeof qual, "tensio.%s", exc_spec[c].name);
            PyObject *bases = exc_spec[c].builtin
                                  ? PyTuple_Pack(2, tio_exc_base, *exc_spec[c].builtin)
                                  : PyTuple_Pack(1, tio_exc_base);
            if (bases == NULL)
                goto fail;
            tio_exc[c] = PyErr_NewExceptionWithDoc(qual, tio_status_string(c), bases, NULL);
            Py_DECREF(bases);
            if (tio_exc[c] == NULL)
                goto fail;
        }
    }
    if (PyModule_AddObjectRef(m, "Error", tio_exc_base) < 0)
        goto fail;
    for (int c = 1; c < TIO_NCODES; c++) {
        char cname[40];
        snprintf(cname, sizeof cname, "%s", tio_status_name(c));
        if (PyModule_AddObjectRef(m, exc_spec[c].name, tio_exc[c]) < 0 ||
            add_int(m, cname, c) < 0)
            goto fail;
    }
    for (size_t k = 0; k < sizeof int_consts / sizeof int_consts[0]; k++)
        if (add_int(m, int_consts[k].name, int_consts[k].value) < 0)
            goto fail;
    if (PyModule_AddStringConstant(m, "LIB_VERSION", tio_version_string()) < 0 ||
        PyModule_AddObjectRef(m, "_Owner", (PyObject *)&tio_py_OwnerType) < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
