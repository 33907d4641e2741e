/*
 * tensio._tensio._Shard — a WebDataset tar shard (tio_shard_*), mapped or
 * over a Python buffer. Members and samples are described by tuples; a
 * member's bytes are copied out (bytes, as WebDataset hands them), a tensor
 * member opens as an _Owner whose views point into the shard's mapping and
 * keep it alive after the _Shard is gone. tensio/shard.py builds the
 * user-facing iteration on top. _ShardStream reads a shard in one pass
 * (tio_shard_stream_*); _ShardWriter writes one (tio_shard_writer_*), under
 * tensio/shard_writer.py's ShardWriter.
 */
#define PY_SSIZE_T_CLEAN
#include "_tensio.h"

typedef struct {
    PyObject_HEAD
    tio_shard *s;
    Py_buffer buf; /* the bytes of a shard opened from memory (buf.obj set) */
} ShardObject;

static void shard_dealloc(ShardObject *self)
{
    /* The containers opened from it hold the mapping (or the bytes: see
     * shard_open_member), not this object. */
    tio_shard_free(self->s);
    self->s = NULL;
    if (self->buf.obj != NULL)
        PyBuffer_Release(&self->buf);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The index argument (args: "n"), checked against n items; -1 with an
 * exception set. */
static Py_ssize_t index_arg(PyObject *args, size_t n, const char *what)
{
    Py_ssize_t i;
    if (!PyArg_ParseTuple(args, "n", &i))
        return -1;
    if (i < 0 || (size_t)i >= n) {
        PyErr_Format(PyExc_IndexError, "%s %zd out of range (%zu %ss)", what, i, n, what);
        return -1;
    }
    return i;
}

static const tio_shard_member *member_arg(ShardObject *self, PyObject *args, Py_ssize_t *out)
{
    *out = index_arg(args, tio_shard_member_count(self->s), "member");
    return *out < 0 ? NULL : tio_shard_member_at(self->s, (size_t)*out);
}

static PyObject *none_or_size(size_t v)
{
    return v == TIO_SHARD_NONE ? Py_NewRef(Py_None) : PyLong_FromSize_t(v);
}

static PyObject *shard_counts(ShardObject *self, PyObject *noargs)
{
    (void)noargs;
    return Py_BuildValue("nn", (Py_ssize_t)tio_shard_member_count(self->s),
                         (Py_ssize_t)tio_shard_sample_count(self->s));
}

/* member(i) -> (name, key, ext, offset, size, sample | None, duplicate, format | None) */
static PyObject *shard_member(ShardObject *self, PyObject *args)
{
    Py_ssize_t i;
    const tio_shard_member *m = member_arg(self, args, &i);
    if (m == NULL)
        return NULL;
    const char *fmt = tio_shard_member_format(self->s, (size_t)i);
    PyObject *sample = none_or_size(m->sample);
    if (sample == NULL)
        return NULL;
    return Py_BuildValue("(sssKKNOz)", m->name, m->key, m->ext, (unsigned long long)m->offset,
                         (unsigned long long)m->size, sample,
                         m->duplicate ? Py_True : Py_False, fmt);
}

/* sample(i) -> (key, (member indices...), duplicate_of | None) */
static PyObject *shard_sample(ShardObject *self, PyObject *args)
{
    Py_ssize_t i = index_arg(args, tio_shard_sample_count(self->s), "sample");
    if (i < 0)
        return NULL;
    const tio_shard_sample *sm = tio_shard_sample_at(self->s, (size_t)i);
    PyObject *idx = PyTuple_New((Py_ssize_t)sm->count);
    if (idx == NULL)
        return NULL;
    for (size_t j = 0; j < sm->count; j++) {
        PyObject *v = PyLong_FromSize_t(tio_shard_sample_member(self->s, (size_t)i, j));
        if (v == NULL) {
            Py_DECREF(idx);
            return NULL;
        }
        PyTuple_SET_ITEM(idx, (Py_ssize_t)j, v);
    }
    PyObject *dup = none_or_size(sm->duplicate_of);
    if (dup == NULL) {
        Py_DECREF(idx);
        return NULL;
    }
    return Py_BuildValue("(sNN)", sm->key, idx, dup);
}

/* find(name) -> member index or -1 */
static PyObject *shard_find(ShardObject *self, PyObject *args)
{
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name))
        return NULL;
    size_t i = tio_shard_find(self->s, name);
    return PyLong_FromSsize_t(i == TIO_SHARD_NONE ? -1 : (Py_ssize_t)i);
}

/* data(i) -> bytes (a copy of the member's bytes) */
static PyObject *shard_data(ShardObject *self, PyObject *args)
{
    Py_ssize_t i;
    const tio_shard_member *m = member_arg(self, args, &i);
    if (m == NULL)
        return NULL;
    return PyBytes_FromStringAndSize(m->data, (Py_ssize_t)m->size);
}

/* open_member(i, format, flags, limits) -> _Owner */
static PyObject *shard_open_member(ShardObject *self, PyObject *args)
{
    Py_ssize_t i;
    const char *format = NULL;
    unsigned int flags = 0;
    PyObject *lim = Py_None;
    if (!PyArg_ParseTuple(args, "nzI|O", &i, &format, &flags, &lim))
        return NULL;
    if (i < 0 || (size_t)i >= tio_shard_member_count(self->s)) {
        PyErr_Format(PyExc_IndexError, "member %zd out of range (%zu members)", i,
                     tio_shard_member_count(self->s));
        return NULL;
    }
    tio_limits limits;
    if (tio_py_limits(lim, &limits) < 0)
        return NULL;
    tio_open_options opts = {.format = format, .flags = flags, .limits = &limits};
    tio_container *c = NULL;
    tio_error err;
    tio_error_clear(&err);
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tio_shard_open_member(self->s, (size_t)i, &opts, &c, &err);
    Py_END_ALLOW_THREADS
    if (rc != TIO_OK)
        return tio_py_raise(rc, &err);
    /* The mapping of a file shard is kept by the container itself; the
     * Python bytes of a shard in memory by the _Owner, as for loads(). */
    return tio_py_owner_wrap(c, self->buf.obj);
}

static PyMethodDef shard_methods[] = {
    {"counts", (PyCFunction)shard_counts, METH_NOARGS, "counts() -> (members, samples)"},
    {"member", (PyCFunction)shard_member, METH_VARARGS,
     "member(i) -> (name, key, ext, offset, size, sample, duplicate, format)"},
    {"sample", (PyCFunction)shard_sample, METH_VARARGS,
     "sample(i) -> (key, member indices, duplicate_of)"},
    {"find", (PyCFunction)shard_find, METH_VARARGS, "find(name) -> member index or -1"},
    {"data", (PyCFunction)shard_data, METH_VARARGS, "data(i) -> bytes"},
    {"open_member", (PyCFunction)shard_open_member, METH_VARARGS,
     "open_member(i, format, flags, limits) -> _Owner"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject tio_py_ShardType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tensio._tensio._Shard",
    .tp_basicsize = sizeof(ShardObject),
    .tp_dealloc = (destructor)shard_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A WebDataset tar shard (see tensio.Shard).",
    .tp_methods = shard_methods,
};

/* shard_open(path | bytes-like, limits) -> _Shard. A str or os.PathLike is
 * a file (mapped); anything else a C-contiguous buffer, borrowed. */
PyObject *tio_py_shard_open(PyObject *m, PyObject *args)
{
    (void)m;
    PyObject *src, *lim = Py_None;
    if (!PyArg_ParseTuple(args, "O|O", &src, &lim))
        return NULL;
    tio_limits limits;
    if (tio_py_limits(lim, &limits) < 0)
        return NULL;
    ShardObject *self = PyObject_New(ShardObject, &tio_py_ShardType);
    if (self == NULL)
        return NULL;
    self->s = NULL;
    memset(&self->buf, 0, sizeof self->buf);
    tio_error err;
    tio_error_clear(&err);
    int rc;
    if (PyUnicode_Check(src) || PyObject_HasAttrString(src, "__fspath__")) {
        PyObject *path = NULL;
        if (!PyUnicode_FSConverter(src, &path)) {
            Py_DECREF(self);
            return NULL;
        }
        const char *p = PyBytes_AS_STRING(path);
        Py_BEGIN_ALLOW_THREADS
        rc = tio_shard_open(p, &limits, &self->s, &err);
        Py_END_ALLOW_THREADS
        Py_DECREF(path);
    } else {
        if (PyObject_GetBuffer(src, &self->buf, PyBUF_C_CONTIGUOUS) < 0) {
            self->buf.obj = NULL;
            Py_DECREF(self);
            return NULL;
        }
        Py_BEGIN_ALLOW_THREADS
        rc = tio_shard_open_memory(self->buf.buf, (size_t)self->buf.len, &limits, &self->s,
                                   &err);
        Py_END_ALLOW_THREADS
    }
    if (rc != TIO_OK) {
        Py_DECREF(self);
        return tio_py_raise(rc, &err);
    }
    return (PyObject *)self;
}

/* ------------------------------------------------------ shards as streams */

typedef struct {
    PyObject_HEAD
    tio_shard_stream *s;
} StreamShardObject;

/* next() -> (name, key, ext, offset, size, sample, data bytes), or None at
 * the end. The bytes are copied out: the stream's buffer is reused. */
static PyObject *sstream_next(StreamShardObject *self, PyObject *noargs)
{
    (void)noargs;
    if (self->s == NULL) {
        PyErr_SetString(PyExc_ValueError, "the shard stream is closed");
        return NULL;
    }
    const tio_shard_member *m = NULL;
    tio_error err;
    tio_error_clear(&err);
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tio_shard_stream_next(self->s, &m, &err);
    Py_END_ALLOW_THREADS
    if (rc != TIO_OK)
        return tio_py_raise(rc, &err);
    if (m == NULL)
        Py_RETURN_NONE;
    PyObject *sample = none_or_size(m->sample);
    if (sample == NULL)
        return NULL;
    return Py_BuildValue("(sssKKNy#)", m->name, m->key, m->ext, (unsigned long long)m->offset,
                         (unsigned long long)m->size, sample, (const char *)m->data,
                         (Py_ssize_t)m->size);
}

static PyObject *sstream_close(StreamShardObject *self, PyObject *noargs)
{
    (void)noargs;
    tio_shard_stream *s = self->s;
    self->s = NULL;
    if (s) {
        Py_BEGIN_ALLOW_THREADS
        tio_shard_stream_free(s);
        Py_END_ALLOW_THREADS
    }
    Py_RETURN_NONE;
}

static void sstream_dealloc(StreamShardObject *self)
{
    Py_XDECREF(sstream_close(self, NULL));
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef sstream_methods[] = {
    {"next", (PyCFunction)sstream_next, METH_NOARGS,
     "next() -> (name, key, ext, offset, size, sample, data) or None at the end"},
    {"close", (PyCFunction)sstream_close, METH_NOARGS, "close(): stops and frees the stream"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject tio_py_ShardStreamType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tensio._tensio._ShardStream",
    .tp_basicsize = sizeof(StreamShardObject),
    .tp_dealloc = (destructor)sstream_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A shard read as a stream (see tensio.stream_shards).",
    .tp_methods = sstream_methods,
};

/* The end of an open over a path (PyUnicode_FSConverter's bytes, released
 * here): self, or self dropped and the error raised. */
static PyObject *opened(PyObject *self, PyObject *path, int rc, const tio_error *err)
{
    Py_DECREF(path);
    if (rc != TIO_OK) {
        Py_DECREF(self);
        return tio_py_raise(rc, err);
    }
    return self;
}

/* shard_stream_open(source, limits) -> _ShardStream */
PyObject *tio_py_shard_stream_open(PyObject *m, PyObject *args)
{
    (void)m;
    PyObject *lim = Py_None, *path = NULL;
    if (!PyArg_ParseTuple(args, "O&|O", PyUnicode_FSConverter, &path, &lim))
        return NULL;
    tio_limits limits;
    if (tio_py_limits(lim, &limits) < 0) {
        Py_DECREF(path);
        return NULL;
    }
    StreamShardObject *self = PyObject_New(StreamShardObject, &tio_py_ShardStreamType);
    if (self == NULL) {
        Py_DECREF(path);
        return NULL;
    }
    self->s = NULL;
    tio_error err;
    tio_error_clear(&err);
    int rc;
    const char *p = PyBytes_AS_STRING(path);
    Py_BEGIN_ALLOW_THREADS
    rc = tio_shard_stream_open(p, &limits, &self->s, &err);
    Py_END_ALLOW_THREADS
    return opened((PyObject *)self, path, rc, &err);
}

/* shard_list(spec, limits) -> [names] (tio_shard_list_expand) */
PyObject *tio_py_shard_list(PyObject *m, PyObject *args)
{
    (void)m;
    const char *spec;
    PyObject *lim = Py_None;
    if (!PyArg_ParseTuple(args, "s|O", &spec, &lim))
        return NULL;
    tio_limits limits;
    if (tio_py_limits(lim, &limits) < 0)
        return NULL;
    char **list = NULL;
    size_t n = 0;
    tio_error err;
    tio_error_clear(&err);
    int rc = tio_shard_list_expand(spec, &limits, &list, &n, &err);
    if (rc != TIO_OK)
        return tio_py_raise(rc, &err);
    PyObject *out = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; out != NULL && i < n; i++) {
        PyObject *s = PyUnicode_DecodeFSDefault(list[i]);
        if (s == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)i, s);
    }
    tio_shard_list_free(list, n);
    return out;
}

/* -------------------------------------------------------- writing shards */

typedef struct {
    PyObject_HEAD
    tio_shard_writer *w; /* NULL once closed or aborted */
} ShardWriterObject;

/* Members this large are written without the GIL. */
#define WRITER_NOGIL_BYTES ((Py_ssize_t)1 << 16)

static tio_shard_writer *swriter_get(ShardWriterObject *self)
{
    if (self->w == NULL)
        PyErr_SetString(PyExc_ValueError, "the shard writer is closed");
    return self->w;
}

/* add(name, bytes-like): tio_shard_writer_add_bytes */
static PyObject *swriter_add(ShardWriterObject *self, PyObject *args)
{
    const char *name;
    Py_buffer b;
    if (!PyArg_ParseTuple(args, "sy*", &name, &b))
        return NULL;
    tio_shard_writer *w = swriter_get(self);
    if (w == NULL) {
        PyBuffer_Release(&b);
        return NULL;
    }
    tio_error err;
    tio_error_clear(&err);
    int rc;
    if (b.len >= WRITER_NOGIL_BYTES) {
        Py_BEGIN_ALLOW_THREADS
        rc = tio_shard_writer_add_bytes(w, name, b.buf, (uint64_t)b.len, &err);
        Py_END_ALLOW_THREADS
    } else {
        rc = tio_shard_writer_add_bytes(w, name, b.buf, (uint64_t)b.len, &err);
    }
    PyBuffer_Release(&b);
    if (rc != TIO_OK)
        return tio_py_raise(rc, &err);
    Py_RETURN_NONE;
}

/* counts() -> (members, bytes written so far) */
static PyObject *swriter_counts(ShardWriterObject *self, PyObject *noargs)
{
    (void)noargs;
    tio_shard_writer *w = swriter_get(self);
    if (w == NULL)
        return NULL;
    return Py_BuildValue("KK", (unsigned long long)tio_shard_writer_count(w),
                         (unsigned long long)tio_shard_writer_bytes(w));
}

/* close(): ends the archive and renames it over the target */
static PyObject *swriter_close(ShardWriterObject *self, PyObject *noargs)
{
    (void)noargs;
    tio_shard_writer *w = swriter_get(self);
    if (w == NULL)
        return NULL;
    self->w = NULL;
    tio_error err;
    tio_error_clear(&err);
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tio_shard_writer_close(w, &err);
    Py_END_ALLOW_THREADS
    if (rc != TIO_OK)
        return tio_py_raise(rc, &err);
    Py_RETURN_NONE;
}

/* abort(): removes the temporary file (nothing of the shard is left) */
static PyObject *swriter_abort(ShardWriterObject *self, PyObject *noargs)
{
    (void)noargs;
    tio_shard_writer *w = self->w;
    self->w = NULL;
    tio_shard_writer_abort(w);
    Py_RETURN_NONE;
}

static void swriter_dealloc(ShardWriterObject *self)
{
    tio_shard_writer_abort(self->w); /* never closed: no shard */
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef swriter_methods[] = {
    {"add", (PyCFunction)swriter_add, METH_VARARGS, "add(name, data): one member"},
    {"counts", (PyCFunction)swriter_counts, METH_NOARGS, "counts() -> (members, bytes)"},
    {"close", (PyCFunction)swriter_close, METH_NOARGS, "close(): the shard, in place"},
    {"abort", (PyCFunction)swriter_abort, METH_NOARGS, "abort(): no shard, no file left"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject tio_py_ShardWriterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tensio._tensio._ShardWriter",
    .tp_basicsize = sizeof(ShardWriterObject),
    .tp_dealloc = (destructor)swriter_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One shard being written (see tensio.ShardWriter).",
    .tp_methods = swriter_methods,
};

/* shard_writer_open(path, flags, mtime) -> _ShardWriter */
PyObject *tio_py_shard_writer_open(PyObject *m, PyObject *args)
{
    (void)m;
    PyObject *path = NULL;
    unsigned int flags = 0;
    unsigned long long mtime = 0;
    if (!PyArg_ParseTuple(args, "O&IK", PyUnicode_FSConverter, &path, &flags, &mtime))
        return NULL;
    ShardWriterObject *self = PyObject_New(ShardWriterObject, &tio_py_ShardWriterType);
    if (self == NULL) {
        Py_DECREF(path);
        return NULL;
    }
    self->w = NULL;
    tio_shard_writer_options o = {.flags = flags, .mtime = mtime, .record_size = 0};
    tio_error err;
    tio_error_clear(&err);
    int rc;
    const char *p = PyBytes_AS_STRING(path);
    Py_BEGIN_ALLOW_THREADS
    rc = tio_shard_writer_open(p, &o, &self->w, &err);
    Py_END_ALLOW_THREADS
    return opened((PyObject *)self, path, rc, &err);
}

/* shard_check_name(name): tio_shard_check_name, raising */
PyObject *tio_py_shard_check_name(PyObject *m, PyObject *args)
{
    (void)m;
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name))
        return NULL;
    tio_error err;
    tio_error_clear(&err);
    int rc = tio_shard_check_name(name, &err);
    if (rc != TIO_OK)
        return tio_py_raise(rc, &err);
    Py_RETURN_NONE;
}

/* shard_format(name) -> tio_shard_format_for_name(name): a format, or None */
PyObject *tio_py_shard_format(PyObject *m, PyObject *args)
{
    (void)m;
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name))
        return NULL;
    const char *f = tio_shard_format_for_name(name);
    if (f == NULL)
        Py_RETURN_NONE;
    return PyUnicode_FromString(f);
}
