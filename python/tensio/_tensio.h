/*
 * What the extension's source files share (tensio/_tensio.c defines these).
 * Internal to the extension: not an API.
 */
#ifndef TENSIO_PY_INTERNAL_H
#define TENSIO_PY_INTERNAL_H

#include <Python.h>

#include <tensio.h>

/* _tensio.c: the _Owner type, errors, shared helpers. */

/* Holds a tio_container and the Python buffers its bytes borrow from. */
typedef struct {
    PyObject_HEAD
    tio_container *c;
    Py_buffer *bufs; /* buffers the container borrows from */
    size_t nbufs;
    PyThread_type_lock fetch; /* lazily opened (TIO_OPEN_LAZY): fetches one at a time */
} OwnerObject;

extern PyTypeObject tio_py_OwnerType;
/* A new _Owner with room for nbufs buffers; NULL with an exception set. */
OwnerObject *tio_py_owner_new(size_t nbufs);
/* The owner of an opened container (rc, err: the open's result; the owner
 * is released on failure); NULL with an exception set. */
PyObject *tio_py_owner_opened(OwnerObject *o, int rc, const tio_error *err);
/* Tensor i's bytes fetched when the container was opened lazily; -1 with
 * an exception set. */
int tio_py_owner_need(OwnerObject *self, Py_ssize_t i);
/* Raises the tensio.Error subclass of rc / e; returns NULL. */
PyObject *tio_py_raise(int rc, const tio_error *e);
/* The same with a code and a message of the extension's own. */
PyObject *tio_py_raise_code(int code, const char *msg);
/* A str (undecodable bytes escaped), or None for NULL. */
PyObject *tio_py_str_or_none(const char *s);
/* Metadata keys and values are byte strings (a NUL byte is "\0" in the str). */
typedef int (*pair_at_fn)(const void *obj, size_t i, const char **k, size_t *kl, const char **v,
                          size_t *vl);
/* n pairs of obj as a dict; NULL with an exception set. */
PyObject *tio_py_pairs_dict(const void *obj, size_t n, pair_at_fn at);
/* The lengths of k and v (kl/vl: lengths given, or NULL for C strings)
 * checked after an accessor's rc; -1 with an exception set. */
int tio_py_text_lens(int rc, const char *const *k, size_t *kl, const char *const *v, size_t *vl);
/* A new list (or tuple) of n items made by item(ctx, i). */
typedef PyObject *(*item_fn)(const void *ctx, size_t i);
PyObject *tio_py_build_seq(size_t n, int tuple, item_fn item, const void *ctx);

/* _graph.c: _Owner.graph() and .object_tree(), and build_graph(owner, spec). */
PyObject *tio_py_owner_graph(OwnerObject *self, PyObject *noargs);
PyObject *tio_py_owner_object_tree(OwnerObject *self, PyObject *args);
PyObject *tio_py_build_graph(PyObject *m, PyObject *args);

/* _stream.c: the _Stream type, stream_open(...), and the buffers lent to
 * libzmq released (with the GIL held). */
extern PyTypeObject tio_py_StreamType;
PyObject *tio_py_stream_open(PyObject *m, PyObject *args);
void tio_py_lent_drain(void);
/* The 7-tuple of __init__._limits_tuple (None: defaults) into out; -1 with
 * an exception set. */
int tio_py_limits(PyObject *lim, tio_limits *out);
/* A new _Owner holding c (which it frees) and, when borrow is not NULL, a
 * buffer of borrow (the bytes c's tensors point into); on failure c is freed
 * and NULL returned with an exception set. */
PyObject *tio_py_owner_wrap(tio_container *c, PyObject *borrow);

/* tensio/_checkpoint.c: c's object tree (tio_container_object) as Python
 * data, tensor(index) called for each tensor and opaque(name, offset,
 * state) for each opaque object; None when c has no tree. */
PyObject *tio_py_object_tree(const tio_container *c, PyObject *tensor_fn, PyObject *opaque_fn);

/* tensio/_shard.c: the _Shard type, and shard_open(path | buffer, limits). */
extern PyTypeObject tio_py_ShardType;
PyObject *tio_py_shard_open(PyObject *m, PyObject *args);
extern PyTypeObject tio_py_ShardStreamType;
PyObject *tio_py_shard_stream_open(PyObject *m, PyObject *args);
PyObject *tio_py_shard_list(PyObject *m, PyObject *args);
/* tensio/_shard.c: _ShardWriter (tio_shard_writer_*), shard_check_name. */
extern PyTypeObject tio_py_ShardWriterType;
PyObject *tio_py_shard_writer_open(PyObject *m, PyObject *args);
PyObject *tio_py_shard_check_name(PyObject *m, PyObject *args);
PyObject *tio_py_shard_format(PyObject *m, PyObject *args);

#endif
