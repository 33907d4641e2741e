/*
 * tensio.load_checkpoint's structure: a container's object tree
 * (tio_container_object, the public API) as Python data. Each tree object
 * becomes one Python object, so one the file references from several
 * places (a tensor saved twice) is one Python object in all of them.
 */
#define PY_SSIZE_T_CLEAN
#include "_tensio.h"

#include <string.h>

typedef struct {
    PyObject *tensor_fn, *opaque_fn;
    PyObject **made; /* per object id: what it became (a new reference), or NULL */
    size_t n;
} tree_conv;

static PyObject *conv(tree_conv *t, const tio_object *o);

static PyObject *refused(const char *what)
{
    tio_error e;
    tio_error_clear(&e);
    e.code = TIO_E_UNSUPPORTED;
    snprintf(e.message, sizeof e.message, "load_checkpoint: %s", what);
    return tio_py_raise(TIO_E_UNSUPPORTED, &e);
}

static PyObject *bigint(const char *s, size_t n)
{
    PyObject *b = PyBytes_FromStringAndSize(s, (Py_ssize_t)n);
    PyObject *args = b ? Py_BuildValue("(Os)", b, "little") : NULL;
    PyObject *kw = args ? Py_BuildValue("{s:O}", "signed", Py_True) : NULL;
    PyObject *f = kw ? PyObject_GetAttrString((PyObject *)&PyLong_Type, "from_bytes") : NULL;
    PyObject *v = f ? PyObject_Call(f, args, kw) : NULL;
    Py_XDECREF(f);
    Py_XDECREF(kw);
    Py_XDECREF(args);
    Py_XDECREF(b);
    return v;
}

/* The items of a LIST/TUPLE/SET or the pairs of a DICT into v. */
static int fill(tree_conv *t, const tio_object *o, PyObject *v)
{
    tio_object_kind kind = tio_object_kind_of(o);
    size_t n = tio_object_len(o);
    for (size_t k = 0; k < n; k++) {
        PyObject *item = conv(t, tio_object_item(o, k));
        if (item == NULL)
            return -1;
        int rc = 0;
        if (kind == TIO_OBJ_LIST) {
            PyList_SET_ITEM(v, (Py_ssize_t)k, item); /* steals */
            continue;
        }
        if (kind == TIO_OBJ_TUPLE) {
            PyTuple_SET_ITEM(v, (Py_ssize_t)k, item);
            continue;
        }
        if (kind == TIO_OBJ_SET) {
            rc = PySet_Add(v, item);
        } else {
            PyObject *key = conv(t, tio_object_key(o, k));
            rc = key ? PyDict_SetItem(v, key, item) : -1;
            Py_XDECREF(key);
        }
        Py_DECREF(item);
        if (rc < 0) {
            if (PyErr_ExceptionMatches(PyExc_TypeError)) { /* unhashable */
                PyErr_Clear();
                refused(kind == TIO_OBJ_SET ? "a set holding an unhashable object (a list, "
                                              "dict or set)"
                                            : "a dict key that is a list, dict or set "
                                              "(unhashable)");
            }
            return -1;
        }
    }
    return 0;
}

static PyObject *make(tree_conv *t, const tio_object *o)
{
    size_t n = 0;
    const char *s = tio_object_bytes(o, &n);
    Py_ssize_t len = (Py_ssize_t)tio_object_len(o);
    PyObject *v = NULL;
    switch (tio_object_kind_of(o)) {
    case TIO_OBJ_NONE: Py_RETURN_NONE;
    case TIO_OBJ_BOOL: return PyBool_FromLong(tio_object_int(o) != 0);
    case TIO_OBJ_INT: return PyLong_FromLongLong(tio_object_int(o));
    case TIO_OBJ_BIGINT: return bigint(s, n);
    case TIO_OBJ_FLOAT: return PyFloat_FromDouble(tio_object_float(o));
    case TIO_OBJ_STR: return PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "surrogateescape");
    case TIO_OBJ_BYTES: return PyBytes_FromStringAndSize(s, (Py_ssize_t)n);
    case TIO_OBJ_TENSOR: return PyObject_CallFunction(t->tensor_fn, "L", (long long)tio_object_tensor(o));
    case TIO_OBJ_LIST: v = PyList_New(len); break;
    case TIO_OBJ_TUPLE: v = PyTuple_New(len); break;
    case TIO_OBJ_SET: v = PySet_New(NULL); break;
    case TIO_OBJ_DICT: v = PyDict_New(); break;
    case TIO_OBJ_OPAQUE: {
        PyObject *name = PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "surrogateescape");
        const tio_object *st = tio_object_state(o);
        PyObject *state = name == NULL ? NULL : st ? conv(t, st) : Py_NewRef(Py_None);
        int64_t off = tio_object_offset(o);
        if (state != NULL)
            v = off >= 0 ? PyObject_CallFunction(t->opaque_fn, "OLO", name, (long long)off, state)
                         : PyObject_CallFunction(t->opaque_fn, "OOO", name, Py_None, state);
        Py_XDECREF(name);
        Py_XDECREF(state);
        return v;
    }
    default: return refused("an object of an unknown kind");
    }
    if (v != NULL && fill(t, o, v) < 0)
        Py_CLEAR(v);
    return v;
}

static PyObject *conv(tree_conv *t, const tio_object *o)
{
    size_t id = tio_object_id(o);
    if (id >= t->n)
        return refused("an object id past the tree's count");
    if (t->made[id] != NULL)
        return Py_NewRef(t->made[id]);
    if (Py_EnterRecursiveCall(" in load_checkpoint"))
        return NULL;
    PyObject *v = make(t, o);
    Py_LeaveRecursiveCall();
    if (v != NULL && tio_object_shared(o))
        t->made[id] = Py_NewRef(v);
    return v;
}

PyObject *tio_py_object_tree(const tio_container *c, PyObject *tensor_fn, PyObject *opaque_fn)
{
    const tio_object *root = tio_container_object(c);
    if (root == NULL)
        Py_RETURN_NONE;
    tree_conv t = {tensor_fn, opaque_fn, NULL, tio_container_object_count(c)};
    t.made = PyMem_Calloc(t.n ? t.n : 1, sizeof *t.made);
    if (t.made == NULL)
        return PyErr_NoMemory();
    PyObject *v = conv(&t, root);
    for (size_t i = 0; i < t.n; i++)
        Py_XDECREF(t.made[i]);
    PyMem_Free(t.made);
    return v;
}
