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
 * The only static state: the exception classes created at import.
 */
#define PY_SSIZE_T_CLEAN
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <Python.h>
#include <numpy/arrayobject.h>

#include <stdatomic.h>
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
static PyObject *raise_tio(int rc, const tio_error *e)
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

static PyObject *raise_code(int code, const char *msg)
{
    tio_error e;
    tio_error_clear(&e);
    e.code = code;
    snprintf(e.message, sizeof e.message, "%s", msg);
    return raise_tio(code, &e);
}

/* ------------------------------------------------------------------ owner */

typedef struct {
    PyObject_HEAD
    tio_container *c;
    Py_buffer *bufs; /* buffers the container borrows from */
    size_t nbufs;
    PyThread_type_lock fetch; /* lazily opened (TIO_OPEN_LAZY): fetches one at a time */
} OwnerObject;

static PyTypeObject OwnerType;

static void lent_drain(void);

static void owner_dealloc(OwnerObject *self)
{
    if (self->fetch)
        PyThread_free_lock(self->fetch);
    tio_container_free(self->c); /* before the buffers it points into */
    self->c = NULL;
    for (size_t i = 0; i < self->nbufs; i++)
        PyBuffer_Release(&self->bufs[i]);
    PyMem_Free(self->bufs);
    lent_drain(); /* buffers it lent, if that was the last hold */
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static OwnerObject *owner_new(size_t nbufs)
{
    OwnerObject *o = PyObject_New(OwnerObject, &OwnerType);
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
static int owner_need(OwnerObject *self, Py_ssize_t i)
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
        raise_tio(rc, &err);
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

static int parse_limits(PyObject *lim, tio_limits *out)
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
    return parse_limits(lim, &a->limits);
}

PyObject *tio_py_raise(int rc, const tio_error *e) { return raise_tio(rc, e); }
int tio_py_limits(PyObject *lim, tio_limits *out) { return parse_limits(lim, out); }

PyObject *tio_py_owner_wrap(tio_container *c, PyObject *borrow)
{
    OwnerObject *o = owner_new(borrow != NULL ? 1 : 0);
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
static PyObject *owner_opened(OwnerObject *o, int rc, const tio_error *err)
{
    if (rc != TIO_OK) {
        Py_DECREF(o);
        return raise_tio(rc, err);
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
    if (parse_limits(lim, &limits) < 0) {
        Py_DECREF(path);
        return NULL;
    }
    OwnerObject *o = owner_new(0);
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
    return owner_opened(o, rc, &err);
}

/* open_memory(buffer, format, flags, limits) -> _Owner borrowing the buffer */
static PyObject *mod_open_memory(PyObject *m, PyObject *args)
{
    (void)m;
    open_args a;
    if (parse_open_args(args, &a) < 0)
        return NULL;
    OwnerObject *o = owner_new(1);
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
    return owner_opened(o, rc, &err);
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
    OwnerObject *o = owner_new(n);
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
    return owner_opened(o, rc, &err);
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
            raise_tio(rc, &err);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
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
    OwnerObject *o = owner_new((size_t)n * 2 + 1);
    int64_t *shape = NULL;
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
                raise_code(TIO_E_ARGUMENT, "a tensor name contains a NUL character");
                goto fail;
            }
        }
        d.dtype = tio_dtype_from_name(dtname);
        if (d.dtype == TIO_DTYPE_INVALID) {
            char msg[128];
            snprintf(msg, sizeof msg, "tensor %zd: dtype %.60s has no tensio equivalent", i,
                     dtname);
            raise_code(TIO_E_DTYPE, msg);
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
        if (ind != Py_None) {
            const void *ip;
            size_t ilen;
            if (owner_take_buffer(o, ind, &ip, &ilen) < 0)
                goto fail;
            d.layout = TIO_LAYOUT_COO;
            d.nnz = nnz;
            if (rank > 0 && ilen != nnz * (size_t)rank * sizeof(int64_t)) {
                raise_code(TIO_E_ARGUMENT, "COO indices: expected nnz x rank int64");
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
            raise_tio(rc, &err);
            goto fail;
        }
        if (set_meta_items(tmeta, o->c, t) < 0)
            goto fail;
        while (copy && o->nbufs > 0) /* copied: nothing to hold */
            PyBuffer_Release(&o->bufs[--o->nbufs]);
    }
    PyMem_Free(shape);
    Py_DECREF(seq);
    return (PyObject *)o;
fail:
    PyMem_Free(shape);
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

static PyObject *str_or_none(const char *s)
{
    return s ? PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "surrogateescape")
             : Py_NewRef(Py_None);
}

/* Metadata keys and values are byte strings (a NUL byte is "\0" in the str). */
typedef int (*pair_at_fn)(const void *obj, size_t i, const char **k, size_t *kl, const char **v,
                          size_t *vl);

static PyObject *str_n(const char *s, size_t n)
{
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "surrogateescape");
}

static PyObject *pairs_dict(const void *obj, size_t n, pair_at_fn at)
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
static int text_lens(int rc, const char *const *k, size_t *kl, const char *const *v, size_t *vl)
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
    return text_lens(tio_container_prop_at(o, i, k, v), k, kl, v, vl);
}
static int tmeta_at(const void *o, size_t i, const char **k, size_t *kl, const char **v,
                    size_t *vl)
{
    return tio_tensor_meta_at_n(o, i, k, kl, v, vl);
}

static PyObject *owner_metadata(OwnerObject *self, PyObject *noargs)
{
    (void)noargs;
    return pairs_dict(self->c, tio_container_meta_count(self->c), cmeta_at);
}

static PyObject *owner_properties(OwnerObject *self, PyObject *noargs)
{
    (void)noargs;
    return pairs_dict(self->c, tio_container_prop_count(self->c), cprop_at);
}

static PyObject *owner_tensor_metadata(OwnerObject *self, PyObject *arg)
{
    tio_tensor *t = arg_tensor(self, arg);
    if (t == NULL)
        return NULL;
    return pairs_dict(t, tio_tensor_meta_count(t), tmeta_at);
}

/* A new list (or tuple) of n items made by item(ctx, i). */
typedef PyObject *(*item_fn)(const void *ctx, size_t i);

static PyObject *build_seq(size_t n, int tuple, item_fn item, const void *ctx)
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
    return build_seq(tio_container_warning_count(self->c), 0, warning_item, self->c);
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
    size_t n = tio_container_count(self->c);
    for (size_t i = 0; i < n; i++) {
        const char *tn = tio_tensor_name(tio_container_tensor(self->c, i));
        if (tn != NULL && strcmp(tn, name) == 0)
            return PyLong_FromSize_t(i);
    }
    return PyLong_FromLong(-1);
}

static PyObject *name_item(const void *c, size_t i)
{
    return str_or_none(tio_tensor_name(tio_container_tensor(c, i)));
}

/* names() -> [str|None] */
static PyObject *owner_names(OwnerObject *self, PyObject *noargs)
{
    (void)noargs;
    return build_seq(tio_container_count(self->c), 0, name_item, self->c);
}

static PyObject *dim_item(const void *t, size_t k)
{
    return PyLong_FromLongLong(tio_tensor_shape(t)[k]);
}

static PyObject *shape_tuple(const tio_tensor *t)
{
    return build_seq(tio_tensor_rank(t), 1, dim_item, t);
}

/* info(i) -> (name, dtype_name, layout, shape, nnz, nbytes, aligned, source_offset,
 *            quant type name or None, the name of the tensor it aliases or None) */
static PyObject *owner_info(OwnerObject *self, PyObject *arg)
{
    tio_tensor *t = arg_tensor(self, arg);
    if (t == NULL)
        return NULL;
    PyObject *name = str_or_none(tio_tensor_name(t));
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
    if (t == NULL || owner_need(self, PyLong_AsSsize_t(arg)) < 0)
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
        return (tio_tensor *)raise_code(TIO_E_DTYPE, "tensor has no NumPy dtype");
    return t;
}

/* A read-only ndarray over data whose base is the owner. */
static PyObject *view_array(OwnerObject *self, int typenum, int nd, const int64_t *dims64,
                            const void *data)
{
    if (nd > NPY_MAXDIMS)
        return raise_code(TIO_E_UNSUPPORTED, "rank exceeds NumPy's maximum number of dims");
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

/* array(i) -> dense: the elements; COO: the nnz values (1-D). */
static PyObject *owner_array(OwnerObject *self, PyObject *arg)
{
    int tn;
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
    if (owner_need(self, -1) < 0)
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
        return raise_code(TIO_E_ARGUMENT, "not a COO tensor");
    int64_t dims[2] = {(int64_t)tio_tensor_nnz(t), (int64_t)tio_tensor_rank(t)};
    return view_array(self, NPY_INT64, 2, dims, tio_tensor_indices(t));
}

/* densify(i) -> a new writable ndarray (COO expanded). */
static PyObject *owner_densify(OwnerObject *self, PyObject *arg)
{
    int tn;
    tio_tensor *t = arg_tensor_npy(self, arg, &tn);
    if (t == NULL)
        return NULL;
    size_t rank = tio_tensor_rank(t);
    if (rank > NPY_MAXDIMS)
        return raise_code(TIO_E_UNSUPPORTED, "rank exceeds NumPy's maximum number of dims");
    tio_limits lim;
    tio_container_get_limits(self->c, &lim);
    size_t bytes = (size_t)tio_tensor_numel(t) * tio_dtype_size(tio_tensor_dtype(t));
    if (tio_tensor_layout(t) == TIO_LAYOUT_COO && bytes > lim.max_dense_bytes)
        return raise_code(TIO_E_LIMIT, "densify: the dense tensor exceeds max_dense_bytes");
    npy_intp dims[NPY_MAXDIMS];
    const int64_t *s = tio_tensor_shape(t);
    for (size_t k = 0; k < rank; k++)
        dims[k] = (npy_intp)s[k];
    PyObject *arr = PyArray_SimpleNew((int)rank, dims, tn);
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
        return raise_tio(rc, &err);
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
    if (t == NULL || owner_need(self, i) < 0)
        return NULL;
    uint8_t out[32];
    tio_error err;
    tio_error_clear(&err);
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tio_tensor_sha256(t, what, out, &err);
    Py_END_ALLOW_THREADS
    if (rc != TIO_OK)
        return raise_tio(rc, &err);
    return PyBytes_FromStringAndSize((const char *)out, 32);
}

/* save(path, format, flags, version, options[, max_shard_size]): the size an
 * int (bytes) or a str as transformers takes it ("5GB"), None for none */
static PyObject *owner_save(OwnerObject *self, PyObject *args)
{
    PyObject *path, *shard = Py_None;
    tio_save_options o;
    memset(&o, 0, sizeof o);
    if (!PyArg_ParseTuple(args, "O&zIIz|O", PyUnicode_FSConverter, &path, &o.format, &o.flags,
                          &o.version, &o.options, &shard))
        return NULL;
    if (owner_need(self, -1) < 0) {
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
            return text == NULL ? NULL : raise_tio(rc, &err);
        }
    } else if (shard != Py_None) {
        unsigned long long v = PyLong_AsUnsignedLongLong(shard);
        if (v == (unsigned long long)-1 && PyErr_Occurred()) {
            Py_DECREF(path);
            return NULL;
        }
        if (v == 0) {
            Py_DECREF(path);
            return raise_code(TIO_E_ARGUMENT, "max_shard_size: expected a positive size");
        }
        o.max_shard_bytes = v;
    }
    const char *p = PyBytes_AS_STRING(path);
    Py_BEGIN_ALLOW_THREADS
    rc = tio_save(self->c, p, &o, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    if (rc != TIO_OK)
        return raise_tio(rc, &err);
    Py_RETURN_NONE;
}

/* dumps(format, flags, version, options[, as_bytearray]) -> bytes (or a
 * bytearray: one copy, where bytearray(bytes) would be a second) */
static PyObject *owner_dumps(OwnerObject *self, PyObject *args)
{
    tio_save_options o;
    memset(&o, 0, sizeof o);
    int as_bytearray = 0;
    if (!PyArg_ParseTuple(args, "sIIz|p", &o.format, &o.flags, &o.version, &o.options,
                          &as_bytearray) ||
        owner_need(self, -1) < 0)
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
        return raise_tio(rc, &err);
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
        return raise_code(TIO_E_ARGUMENT, "dumps: the encoding changed size between its passes");
    }
    if (rc != TIO_OK) {
        Py_DECREF(b);
        return raise_tio(rc, &err);
    }
    return b;
}

/* encode(format, flags, version, options) -> [bytes]: tio_message_encode,
 * each part copied into a bytes object. */
static PyObject *owner_encode(OwnerObject *self, PyObject *args)
{
    tio_save_options o;
    memset(&o, 0, sizeof o);
    if (!PyArg_ParseTuple(args, "sIIz", &o.format, &o.flags, &o.version, &o.options) ||
        owner_need(self, -1) < 0)
        return NULL;
    tio_error err;
    tio_error_clear(&err);
    tio_message *msg = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tio_message_encode(self->c, &o, &msg, &err);
    Py_END_ALLOW_THREADS
    if (rc != TIO_OK)
        return raise_tio(rc, &err);
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
    if (t == NULL || owner_need(self, i) < 0)
        return NULL;
    if (tio_tensor_layout(t) != TIO_LAYOUT_DENSE)
        return raise_code(TIO_E_UNSUPPORTED, "DLPack: a COO tensor has no dense data to "
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
    default: return raise_code(TIO_E_DTYPE, "DLPack: no DLPack type for this dtype");
    }
    size_t rank = tio_tensor_rank(t);
    if (rank > INT32_MAX)
        return raise_code(TIO_E_LIMIT, "DLPack: rank too large");
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

/* ----------------------------------------------------------------- graph */

/* The graph as plain Python data (tensio/__init__.py makes objects of it):
 * {"native_format", "values": [(name, dtype, shape|None, tensor)],
 *  "nodes": [(name, op, native_op, native_id, domain, inputs, outputs,
 *             [(attr name, type, value, label)])],
 *  "inputs", "outputs", "captures": [value index], "metadata": {},
 *  "opsets": [(domain, version)]}. A shape is a list of int, str (symbolic)
 * or None (unknown); a GRAPH attribute's value is such a dict. */

#define TIO_PY_GRAPH_DEPTH 300 /* above TIO_MAX_DEPTH_CAP: never reached by a valid graph */

typedef struct {
    const tio_graph *g;
    int depth;
} graph_ctx;

static PyObject *graph_dict(const tio_graph *g, int depth);

static PyObject *i64_item(const void *v, size_t i)
{
    return PyLong_FromLongLong(((const int64_t *)v)[i]);
}

static PyObject *i64_list(const int64_t *v, size_t n)
{
    return build_seq(n, 0, i64_item, v);
}

static PyObject *dim_obj(const tio_dim *d)
{
    if (d->name != NULL)
        return str_or_none(d->name);
    return d->value >= 0 ? PyLong_FromLongLong(d->value) : Py_NewRef(Py_None);
}

static PyObject *value_item(const void *ctx, size_t i)
{
    const graph_ctx *gc = ctx;
    tio_value_info v;
    if (tio_graph_value(gc->g, i, &v) != TIO_OK)
        return raise_code(TIO_E_CORRUPT, "graph: value index out of range");
    PyObject *shape = Py_None;
    if (v.rank >= 0) {
        shape = PyList_New((Py_ssize_t)v.rank);
        if (shape == NULL)
            return NULL;
        for (int64_t k = 0; k < v.rank; k++) {
            PyObject *d = dim_obj(&v.dims[k]);
            if (d == NULL) {
                Py_DECREF(shape);
                return NULL;
            }
            PyList_SET_ITEM(shape, (Py_ssize_t)k, d);
        }
    } else {
        Py_INCREF(shape);
    }
    PyObject *name = str_or_none(v.name);
    const char *dt = tio_dtype_name(v.dtype);
    PyObject *r = name ? Py_BuildValue("(OzNL)", name, dt, shape, (long long)v.tensor) : NULL;
    if (r == NULL && name == NULL)
        Py_DECREF(shape);
    Py_XDECREF(name);
    return r;
}

static PyObject *float_item(const void *v, size_t i)
{
    return PyFloat_FromDouble(((const double *)v)[i]);
}

static PyObject *string_item(const void *v, size_t i)
{
    return str_or_none(((const char *const *)v)[i]);
}

typedef struct {
    tio_graph *const *graphs;
    int depth;
} graphs_ctx;

static PyObject *subgraph_item(const void *ctx, size_t i)
{
    const graphs_ctx *c = ctx;
    return graph_dict(c->graphs[i], c->depth);
}

static PyObject *attr_value(const tio_attr *a, int depth)
{
    switch (a->type) {
    case TIO_ATTR_INT: return PyLong_FromLongLong(a->i);
    case TIO_ATTR_FLOAT: return PyFloat_FromDouble(a->f);
    case TIO_ATTR_STRING: return str_or_none(a->s);
    case TIO_ATTR_INTS: return i64_list(a->ints, a->count);
    case TIO_ATTR_FLOATS: return build_seq(a->count, 0, float_item, a->floats);
    case TIO_ATTR_STRINGS: return build_seq(a->count, 0, string_item, a->strings);
    case TIO_ATTR_TENSOR: return PyLong_FromLongLong(a->i);
    case TIO_ATTR_GRAPH: return graph_dict(a->graph, depth + 1);
    case TIO_ATTR_TENSORS: return i64_list(a->tensors, a->count);
    case TIO_ATTR_GRAPHS: {
        graphs_ctx c = {a->graphs, depth + 1};
        return build_seq(a->count, 0, subgraph_item, &c);
    }
    default: return raise_code(TIO_E_UNSUPPORTED, "graph: unknown attribute type");
    }
}

typedef struct {
    const graph_ctx *gc;
    size_t node;
} node_ctx;

static PyObject *attr_item(const void *ctx, size_t j)
{
    const node_ctx *nc = ctx;
    tio_attr a;
    if (tio_graph_attr(nc->gc->g, nc->node, j, &a) != TIO_OK)
        return raise_code(TIO_E_CORRUPT, "graph: attribute index out of range");
    PyObject *v = attr_value(&a, nc->gc->depth);
    if (v == NULL)
        return NULL;
    PyObject *name = str_or_none(a.name), *label = str_or_none(a.label);
    PyObject *r = name && label ? Py_BuildValue("(OiOO)", name, (int)a.type, v, label) : NULL;
    Py_XDECREF(name);
    Py_XDECREF(label);
    Py_DECREF(v);
    return r;
}

static PyObject *node_item(const void *ctx, size_t i)
{
    const graph_ctx *gc = ctx;
    tio_node_info n;
    if (tio_graph_node(gc->g, i, &n) != TIO_OK)
        return raise_code(TIO_E_CORRUPT, "graph: node index out of range");
    node_ctx nc = {gc, i};
    PyObject *f[8] = {
        str_or_none(n.name), str_or_none(n.op), str_or_none(n.native_op),
        PyLong_FromLongLong(n.native_id), str_or_none(n.domain),
        i64_list(n.inputs, n.input_count), i64_list(n.outputs, n.output_count),
        build_seq(n.attr_count, 0, attr_item, &nc),
    };
    PyObject *r = NULL;
    int ok = 1;
    for (int k = 0; k < 8; k++)
        ok = ok && f[k] != NULL;
    if (ok)
        r = PyTuple_Pack(8, f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7]);
    for (int k = 0; k < 8; k++)
        Py_XDECREF(f[k]);
    return r;
}

static int gmeta_at(const void *o, size_t i, const char **k, size_t *kl, const char **v,
                    size_t *vl)
{
    return text_lens(tio_graph_meta_at(o, i, k, v), k, kl, v, vl);
}

static PyObject *opset_item(const void *g, size_t i)
{
    const char *domain = NULL;
    int64_t version = 0;
    if (tio_graph_opset_at(g, i, &domain, &version) != TIO_OK)
        return raise_code(TIO_E_CORRUPT, "graph: opset index out of range");
    PyObject *d = str_or_none(domain);
    PyObject *r = d ? Py_BuildValue("(OL)", d, (long long)version) : NULL;
    Py_XDECREF(d);
    return r;
}

static int dict_set_steal(PyObject *d, const char *key, PyObject *v)
{
    if (v == NULL)
        return -1;
    int rc = PyDict_SetItemString(d, key, v);
    Py_DECREF(v);
    return rc;
}

static PyObject *graph_dict(const tio_graph *g, int depth)
{
    if (depth > TIO_PY_GRAPH_DEPTH)
        return raise_code(TIO_E_LIMIT, "graph: subgraphs nested too deeply");
    if (Py_EnterRecursiveCall(" while converting a tensio graph"))
        return NULL;
    graph_ctx gc = {g, depth};
    PyObject *d = PyDict_New();
    if (d == NULL ||
        dict_set_steal(d, "native_format", str_or_none(tio_graph_native_format(g))) < 0 ||
        dict_set_steal(d, "values", build_seq(tio_graph_value_count(g), 0, value_item, &gc)) < 0 ||
        dict_set_steal(d, "nodes", build_seq(tio_graph_node_count(g), 0, node_item, &gc)) < 0 ||
        dict_set_steal(d, "inputs", i64_list(tio_graph_inputs(g), tio_graph_input_count(g))) < 0 ||
        dict_set_steal(d, "outputs",
                       i64_list(tio_graph_outputs(g), tio_graph_output_count(g))) < 0 ||
        dict_set_steal(d, "captures",
                       i64_list(tio_graph_captures(g), tio_graph_capture_count(g))) < 0 ||
        dict_set_steal(d, "metadata", pairs_dict(g, tio_graph_meta_count(g), gmeta_at)) < 0 ||
        dict_set_steal(d, "opsets", build_seq(tio_graph_opset_count(g), 0, opset_item, g)) < 0) {
        Py_XDECREF(d);
        d = NULL;
    }
    Py_LeaveRecursiveCall();
    return d;
}

/* graph() -> the root graph as data, or None for a tensor-only container */
static PyObject *owner_graph(OwnerObject *self, PyObject *noargs)
{
    (void)noargs;
    const tio_graph *g = tio_container_graph(self->c);
    return g ? graph_dict(g, 0) : Py_NewRef(Py_None);
}

/* object_tree(tensor, opaque) (tensio/_checkpoint.c) */
static PyObject *owner_object_tree(OwnerObject *self, PyObject *args)
{
    PyObject *tensor_fn, *opaque_fn;
    if (!PyArg_ParseTuple(args, "OO", &tensor_fn, &opaque_fn))
        return NULL;
    return tio_py_object_tree(self->c, tensor_fn, opaque_fn);
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
    {"graph", (PyCFunction)owner_graph, METH_NOARGS, "the model graph as data, or None"},
    {"object_tree", (PyCFunction)owner_object_tree, METH_VARARGS,
     "object_tree(tensor, opaque): the object tree as Python data, or None"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject OwnerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tensio._tensio._Owner",
    .tp_basicsize = sizeof(OwnerObject),
    .tp_dealloc = (destructor)owner_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Holds a tio_container and the memory it borrows; the base of every view.",
    .tp_methods = owner_methods,
};

/* ------------------------------------------------------------ graph building */

/* build_graph(owner, spec): gives the owner's container a graph built from
 * spec (tio_container_new_graph, tio_graph_add_*), a dict:
 *   "values":  [(name|None, dtype|None, shape|None, tensor index or -1)],
 *              a shape item an int, a str (symbolic) or None (unknown)
 *   "nodes":   [(name|None, op, domain|None, [value], [value], [attr])],
 *              an attr (name, TIO_ATTR_* type, value): int, float, str,
 *              lists of them, a tensor index (TENSOR), indices (TENSORS),
 *              a spec dict (GRAPH) or a list of them (GRAPHS)
 *   "inputs", "outputs", "captures": [value index]
 *   "metadata": [(key, value)], "opsets": [(domain, version)] (root only). */

static int fill_graph(tio_graph *g, PyObject *spec, int depth);

/* A fast sequence of spec[key] (an empty tuple when absent), or NULL. */
static PyObject *spec_seq(PyObject *spec, const char *key)
{
    PyObject *v = PyDict_GetItemString(spec, key); /* borrowed */
    if (v == NULL)
        return PyTuple_New(0);
    char msg[80];
    snprintf(msg, sizeof msg, "graph: %s must be a sequence", key);
    return PySequence_Fast(v, msg);
}

/* A new PyMem array of the n int64 of a sequence, or NULL (error set). */
static int64_t *i64_array(PyObject *obj, size_t *n)
{
    PyObject *seq = PySequence_Fast(obj, "graph: expected a sequence of ints");
    if (seq == NULL)
        return NULL;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
    int64_t *a = PyMem_Malloc(((size_t)k + 1) * sizeof *a);
    if (a == NULL) {
        Py_DECREF(seq);
        return (int64_t *)PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        a[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
        if (a[i] == -1 && PyErr_Occurred()) {
            PyMem_Free(a);
            Py_DECREF(seq);
            return NULL;
        }
    }
    Py_DECREF(seq);
    *n = (size_t)k;
    return a;
}

/* A str argument as UTF-8 without NUL characters, or NULL (error set). */
static const char *graph_str(PyObject *o)
{
    Py_ssize_t len;
    const char *s = PyUnicode_AsUTF8AndSize(o, &len);
    if (s != NULL && strlen(s) != (size_t)len) {
        raise_code(TIO_E_ARGUMENT, "graph: a string contains a NUL character");
        return NULL;
    }
    return s;
}

static const char *graph_str_or_null(PyObject *o, int *fail)
{
    if (o == Py_None)
        return NULL;
    const char *s = graph_str(o);
    *fail = s == NULL;
    return s;
}

static int graph_fail(int rc, const tio_error *err)
{
    raise_tio(rc, err);
    return -1;
}

static int add_values(tio_graph *g, PyObject *spec)
{
    PyObject *seq = spec_seq(spec, "values");
    if (seq == NULL)
        return -1;
    tio_dim *dims = NULL;
    int ret = -1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *name, *dtype, *shape;
        long long tensor;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "OOOL;graph: a value tuple",
                              &name, &dtype, &shape, &tensor))
            goto done;
        tio_value_info v;
        memset(&v, 0, sizeof v);
        int fail = 0;
        v.name = graph_str_or_null(name, &fail);
        const char *dt = graph_str_or_null(dtype, &fail);
        if (fail)
            goto done;
        v.dtype = dt ? tio_dtype_from_name(dt) : TIO_DTYPE_INVALID;
        if (dt && v.dtype == TIO_DTYPE_INVALID) {
            raise_code(TIO_E_DTYPE, "graph: a value's dtype is not a tensio dtype name");
            goto done;
        }
        v.tensor = tensor;
        v.rank = -1;
        if (shape != Py_None) {
            PyObject *ss = PySequence_Fast(shape, "graph: a shape must be a sequence");
            if (ss == NULL)
                goto done;
            Py_ssize_t r = PySequence_Fast_GET_SIZE(ss);
            PyMem_Free(dims);
            dims = PyMem_Calloc((size_t)r + 1, sizeof *dims);
            if (dims == NULL) {
                Py_DECREF(ss);
                PyErr_NoMemory();
                goto done;
            }
            for (Py_ssize_t k = 0; k < r && !fail; k++) {
                PyObject *d = PySequence_Fast_GET_ITEM(ss, k);
                dims[k].value = -1;
                if (PyUnicode_Check(d)) {
                    dims[k].name = graph_str(d);
                    fail = dims[k].name == NULL;
                } else if (d != Py_None) {
                    dims[k].value = PyLong_AsLongLong(d);
                    fail = dims[k].value == -1 && PyErr_Occurred();
                }
            }
            /* the names point into str objects the spec keeps alive */
            Py_DECREF(ss);
            if (fail)
                goto done;
            v.rank = r;
            v.dims = dims;
        }
        tio_error err;
        tio_error_clear(&err);
        int rc = tio_graph_add_value(g, &v, NULL, &err);
        if (rc != TIO_OK) {
            graph_fail(rc, &err);
            goto done;
        }
    }
    ret = 0;
done:
    PyMem_Free(dims);
    Py_DECREF(seq);
    return ret;
}

/* The strings of a sequence as a PyMem array of pointers into the str
 * objects (which seq keeps alive). */
static const char **str_array(PyObject *seq, size_t *n)
{
    Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
    const char **a = PyMem_Calloc((size_t)k + 1, sizeof *a);
    if (a == NULL)
        return (const char **)PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < k; i++) {
        a[i] = graph_str(PySequence_Fast_GET_ITEM(seq, i));
        if (a[i] == NULL) {
            PyMem_Free(a);
            return NULL;
        }
    }
    *n = (size_t)k;
    return a;
}

static int add_attr(tio_graph *g, size_t node, PyObject *t, int depth)
{
    PyObject *name, *val;
    int type;
    if (!PyArg_ParseTuple(t, "OiO;graph: an attribute tuple", &name, &type, &val))
        return -1;
    tio_attr a;
    memset(&a, 0, sizeof a);
    a.name = graph_str(name);
    if (a.name == NULL)
        return -1;
    a.type = (tio_attr_type)type;
    void *tmp = NULL; /* PyMem arrays to free */
    tio_graph **subs = NULL;
    PyObject *seq = NULL;
    int ret = -1;
    switch (type) {
    case TIO_ATTR_INT:
    case TIO_ATTR_TENSOR:
        a.i = PyLong_AsLongLong(val);
        if (a.i == -1 && PyErr_Occurred())
            goto done;
        break;
    case TIO_ATTR_FLOAT:
        a.f = PyFloat_AsDouble(val);
        if (a.f == -1.0 && PyErr_Occurred())
            goto done;
        break;
    case TIO_ATTR_STRING:
        if ((a.s = graph_str(val)) == NULL)
            goto done;
        break;
    case TIO_ATTR_INTS:
        if ((tmp = i64_array(val, &a.count)) == NULL)
            goto done;
        a.ints = tmp;
        break;
    case TIO_ATTR_TENSORS:
        if ((tmp = i64_array(val, &a.count)) == NULL)
            goto done;
        a.tensors = tmp;
        break;
    case TIO_ATTR_FLOATS: {
        if ((seq = PySequence_Fast(val, "graph: FLOATS must be a sequence")) == NULL)
            goto done;
        Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
        double *f = tmp = PyMem_Malloc(((size_t)k + 1) * sizeof *f);
        if (f == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < k; i++) {
            f[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, i));
            if (f[i] == -1.0 && PyErr_Occurred())
                goto done;
        }
        a.floats = f;
        a.count = (size_t)k;
        break;
    }
    case TIO_ATTR_STRINGS:
        if ((seq = PySequence_Fast(val, "graph: STRINGS must be a sequence")) == NULL ||
            (tmp = str_array(seq, &a.count)) == NULL)
            goto done;
        a.strings = tmp;
        break;
    case TIO_ATTR_GRAPH:
    case TIO_ATTR_GRAPHS: {
        if (type == TIO_ATTR_GRAPH)
            seq = PyTuple_Pack(1, val);
        else
            seq = PySequence_Fast(val, "graph: GRAPHS must be a sequence");
        if (seq == NULL)
            goto done;
        Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
        subs = PyMem_Calloc((size_t)k + 1, sizeof *subs);
        if (subs == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < k; i++) {
            tio_error err;
            tio_error_clear(&err);
            int rc = tio_graph_new_subgraph(g, &subs[i], &err);
            if (rc != TIO_OK) {
                graph_fail(rc, &err);
                goto done;
            }
            if (fill_graph(subs[i], PySequence_Fast_GET_ITEM(seq, i), depth + 1) < 0)
                goto done;
        }
        a.graph = subs[0];
        a.graphs = subs;
        a.count = (size_t)k;
        break;
    }
    default:
        raise_code(TIO_E_ARGUMENT, "graph: unknown attribute type");
        goto done;
    }
    tio_error err;
    tio_error_clear(&err);
    int rc = tio_graph_add_attr(g, node, &a, &err);
    if (rc != TIO_OK) {
        graph_fail(rc, &err);
        goto done;
    }
    ret = 0;
done:
    PyMem_Free(tmp);
    PyMem_Free(subs);
    Py_XDECREF(seq);
    return ret;
}

static int add_nodes(tio_graph *g, PyObject *spec, int depth)
{
    PyObject *seq = spec_seq(spec, "nodes");
    if (seq == NULL)
        return -1;
    int ret = -1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *name, *op, *domain, *ins, *outs, *attrs;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "OOOOOO;graph: a node tuple",
                              &name, &op, &domain, &ins, &outs, &attrs))
            goto done;
        tio_node_info n;
        memset(&n, 0, sizeof n);
        n.native_id = -1;
        int fail = 0;
        n.name = graph_str_or_null(name, &fail);
        n.domain = graph_str_or_null(domain, &fail);
        if (fail || (n.op = graph_str(op)) == NULL)
            goto done;
        int64_t *in = i64_array(ins, &n.input_count);
        int64_t *out = in ? i64_array(outs, &n.output_count) : NULL;
        size_t index = 0;
        int rc = TIO_OK;
        tio_error err;
        tio_error_clear(&err);
        if (out != NULL) {
            n.inputs = in;
            n.outputs = out;
            rc = tio_graph_add_node(g, &n, &index, &err);
        }
        PyMem_Free(in);
        PyMem_Free(out);
        if (out == NULL)
            goto done;
        if (rc != TIO_OK) {
            graph_fail(rc, &err);
            goto done;
        }
        PyObject *as = PySequence_Fast(attrs, "graph: attributes must be a sequence");
        if (as == NULL)
            goto done;
        for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(as) && !fail; k++)
            fail = add_attr(g, index, PySequence_Fast_GET_ITEM(as, k), depth) < 0;
        Py_DECREF(as);
        if (fail)
            goto done;
    }
    ret = 0;
done:
    Py_DECREF(seq);
    return ret;
}

typedef int (*set_list_fn)(tio_graph *g, const int64_t *v, size_t n, tio_error *err);

static int set_list(tio_graph *g, PyObject *spec, const char *key, set_list_fn set)
{
    PyObject *v = PyDict_GetItemString(spec, key);
    if (v == NULL)
        return 0;
    size_t n = 0;
    int64_t *a = i64_array(v, &n);
    if (a == NULL)
        return -1;
    tio_error err;
    tio_error_clear(&err);
    int rc = set(g, a, n, &err);
    PyMem_Free(a);
    return rc == TIO_OK ? 0 : graph_fail(rc, &err);
}

/* (key, value) pairs of spec[key] through set(g, k, v) or set_opset. */
static int set_pairs(tio_graph *g, PyObject *spec, int opsets)
{
    PyObject *seq = spec_seq(spec, opsets ? "opsets" : "metadata");
    if (seq == NULL)
        return -1;
    int ret = 0;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq) && ret == 0; i++) {
        const char *k, *v = NULL;
        long long ver = 0;
        PyObject *t = PySequence_Fast_GET_ITEM(seq, i);
        if (opsets ? !PyArg_ParseTuple(t, "sL;graph: an opset (domain, version)", &k, &ver)
                   : !PyArg_ParseTuple(t, "ss;graph: a metadata (key, value)", &k, &v)) {
            ret = -1;
            break;
        }
        tio_error err;
        tio_error_clear(&err);
        int rc = opsets ? tio_graph_set_opset(g, k, ver, &err) : tio_graph_meta_set(g, k, v, &err);
        if (rc != TIO_OK)
            ret = graph_fail(rc, &err);
    }
    Py_DECREF(seq);
    return ret;
}

static int fill_graph(tio_graph *g, PyObject *spec, int depth)
{
    if (!PyDict_Check(spec)) {
        PyErr_SetString(PyExc_TypeError, "graph: a graph spec must be a dict");
        return -1;
    }
    if (depth > TIO_PY_GRAPH_DEPTH) {
        raise_code(TIO_E_LIMIT, "graph: subgraphs nested too deeply");
        return -1;
    }
    if (Py_EnterRecursiveCall(" while building a tensio graph"))
        return -1;
    int rc = add_values(g, spec) < 0 || add_nodes(g, spec, depth) < 0 ||
                     set_list(g, spec, "inputs", tio_graph_set_inputs) < 0 ||
                     set_list(g, spec, "outputs", tio_graph_set_outputs) < 0 ||
                     set_list(g, spec, "captures", tio_graph_set_captures) < 0 ||
                     set_pairs(g, spec, 0) < 0 || (depth == 0 && set_pairs(g, spec, 1) < 0)
                 ? -1
                 : 0;
    Py_LeaveRecursiveCall();
    return rc;
}

static PyObject *mod_build_graph(PyObject *m, PyObject *args)
{
    (void)m;
    PyObject *owner, *spec;
    if (!PyArg_ParseTuple(args, "O!O", &OwnerType, &owner, &spec))
        return NULL;
    tio_graph *g = NULL;
    tio_error err;
    tio_error_clear(&err);
    int rc = tio_container_new_graph(((OwnerObject *)owner)->c, &g, &err);
    if (rc != TIO_OK)
        return raise_tio(rc, &err);
    if (fill_graph(g, spec, 0) < 0)
        return NULL;
    Py_RETURN_NONE;
}

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
static void lent_drain(void)
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
        raise_tio(rc, &err);
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

static PyTypeObject StreamType;

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
    lent_drain(); /* what this stream lent is released by now */
    if (interrupted)
        return -1;
    if (rc != TIO_OK) {
        raise_tio(rc, &err);
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
static PyObject *mod_stream_open(PyObject *m, PyObject *args)
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
    if (parse_limits(lim, &limits) < 0)
        return NULL;
    o.socket = (tio_socket_type)socket;
    o.proto = (tio_proto)proto;
    o.limits = &limits;
    o.max_frame_bytes = max_frame;
    if (o.timeout_ms < 0)
        return raise_code(TIO_E_ARGUMENT, "timeout must be >= 0 (0 = wait forever)");
    StreamObject *so = PyObject_New(StreamObject, &StreamType);
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
        return raise_tio(rc, &err);
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
    if (!PyArg_ParseTuple(args, "O!zIIzi|pp", &OwnerType, &owner, &o.format, &o.flags,
                          &o.version, &o.options, &timeout, &lend, &every) ||
        owner_need((OwnerObject *)owner, -1) < 0)
        return NULL;
    lent_drain();
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
        return raise_tio(rc, &err);
    Py_RETURN_NONE;
}

/* recv(timeout_ms) -> _Owner of the received container (views into the
 * frames, which the container owns). Waits in slices, checking signals. */
static PyObject *stream_recv(StreamObject *self, PyObject *args)
{
    int timeout = -1;
    if (!PyArg_ParseTuple(args, "|i", &timeout))
        return NULL;
    lent_drain();
    if (stream_enter(self) < 0)
        return NULL;
    int total = call_timeout(self, timeout);
    OwnerObject *o = owner_new(0);
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
        return raise_code(TIO_E_TIMEOUT, msg);
    }
    return owner_opened(o, rc, &err);
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
        return raise_tio(rc, &err);
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
        return raise_tio(rc, &err);
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
        return raise_tio(rc, &err);
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
    return str_or_none(tio_stream_endpoint(self->s));
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

static PyTypeObject StreamType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tensio._tensio._Stream",
    .tp_basicsize = sizeof(StreamObject),
    .tp_dealloc = (destructor)stream_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A tio_stream (one ZeroMQ socket).",
    .tp_methods = stream_methods,
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
    {"build_graph", mod_build_graph, METH_VARARGS, "build_graph(owner, spec): a new graph"},
    {"stream_open", mod_stream_open, METH_VARARGS, "stream_open(endpoint, ...) -> _Stream"},
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
    if (PyType_Ready(&OwnerType) < 0 || PyType_Ready(&StreamType) < 0 ||
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
        PyModule_AddObjectRef(m, "_Owner", (PyObject *)&OwnerType) < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
