/*
 * What the extension's source files share (tensio/_tensio.c defines these).
 * Internal to the extension: not an API.
 */
#ifndef TENSIO_PY_INTERNAL_H
#define TENSIO_PY_INTERNAL_H

#include <Python.h>

#include <tensio.h>

/* Raises the tensio.Error subclass of rc / e; returns NULL. */
PyObject *tio_py_raise(int rc, const tio_error *e);
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
