/*
 * tensio._tensio: model graphs. _Owner.graph() gives a container's graph
 * as plain Python data (tensio/__init__.py makes objects of it), and
 * build_graph(owner, spec) gives a container a graph built from such data
 * (tio_container_new_graph, tio_graph_add_*).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include <tensio.h>

#include "_tensio.h"

/* ----------------------------------------------------------------- graph */

/* The graph as plain Python data (tensio/__init__.py makes objects of it):
 * {"native_format", "values": [(name, dtype, shape|None, tensor, type|None)],
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
    return tio_py_build_seq(n, 0, i64_item, v);
}

static PyObject *dim_obj(const tio_dim *d)
{
    if (d->name != NULL)
        return tio_py_str_or_none(d->name);
    return d->value >= 0 ? PyLong_FromLongLong(d->value) : Py_NewRef(Py_None);
}

static PyObject *value_item(const void *ctx, size_t i)
{
    const graph_ctx *gc = ctx;
    tio_value_info v;
    if (tio_graph_value(gc->g, i, &v) != TIO_OK)
        return tio_py_raise_code(TIO_E_CORRUPT, "graph: value index out of range");
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
    PyObject *name = tio_py_str_or_none(v.name);
    const char *dt = tio_dtype_name(v.dtype);
    PyObject *r = name ? Py_BuildValue("(OzNLz)", name, dt, shape, (long long)v.tensor, v.type)
                       : NULL;
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
    return tio_py_str_or_none(((const char *const *)v)[i]);
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
    case TIO_ATTR_STRING:
    case TIO_ATTR_TYPE: return tio_py_str_or_none(a->s);
    case TIO_ATTR_INTS: return i64_list(a->ints, a->count);
    case TIO_ATTR_FLOATS: return tio_py_build_seq(a->count, 0, float_item, a->floats);
    case TIO_ATTR_STRINGS: return tio_py_build_seq(a->count, 0, string_item, a->strings);
    case TIO_ATTR_TENSOR: return PyLong_FromLongLong(a->i);
    case TIO_ATTR_GRAPH: return graph_dict(a->graph, depth + 1);
    case TIO_ATTR_TENSORS: return i64_list(a->tensors, a->count);
    case TIO_ATTR_GRAPHS: {
        graphs_ctx c = {a->graphs, depth + 1};
        return tio_py_build_seq(a->count, 0, subgraph_item, &c);
    }
    default: return tio_py_raise_code(TIO_E_UNSUPPORTED, "graph: unknown attribute type");
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
        return tio_py_raise_code(TIO_E_CORRUPT, "graph: attribute index out of range");
    PyObject *v = attr_value(&a, nc->gc->depth);
    if (v == NULL)
        return NULL;
    PyObject *name = tio_py_str_or_none(a.name), *label = tio_py_str_or_none(a.label);
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
        return tio_py_raise_code(TIO_E_CORRUPT, "graph: node index out of range");
    node_ctx nc = {gc, i};
    PyObject *f[8] = {
        tio_py_str_or_none(n.name), tio_py_str_or_none(n.op), tio_py_str_or_none(n.native_op),
        PyLong_FromLongLong(n.native_id), tio_py_str_or_none(n.domain),
        i64_list(n.inputs, n.input_count), i64_list(n.outputs, n.output_count),
        tio_py_build_seq(n.attr_count, 0, attr_item, &nc),
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
    return tio_py_text_lens(tio_graph_meta_at(o, i, k, v), k, kl, v, vl);
}

static PyObject *opset_item(const void *g, size_t i)
{
    const char *domain = NULL;
    int64_t version = 0;
    if (tio_graph_opset_at(g, i, &domain, &version) != TIO_OK)
        return tio_py_raise_code(TIO_E_CORRUPT, "graph: opset index out of range");
    PyObject *d = tio_py_str_or_none(domain);
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
        return tio_py_raise_code(TIO_E_LIMIT, "graph: subgraphs nested too deeply");
    if (Py_EnterRecursiveCall(" while converting a tensio graph"))
        return NULL;
    graph_ctx gc = {g, depth};
    PyObject *d = PyDict_New();
    if (d == NULL ||
        dict_set_steal(d, "native_format", tio_py_str_or_none(tio_graph_native_format(g))) < 0 ||
        dict_set_steal(d, "values",
                       tio_py_build_seq(tio_graph_value_count(g), 0, value_item, &gc)) < 0 ||
        dict_set_steal(d, "nodes",
                       tio_py_build_seq(tio_graph_node_count(g), 0, node_item, &gc)) < 0 ||
        dict_set_steal(d, "inputs", i64_list(tio_graph_inputs(g), tio_graph_input_count(g))) < 0 ||
        dict_set_steal(d, "outputs",
                       i64_list(tio_graph_outputs(g), tio_graph_output_count(g))) < 0 ||
        dict_set_steal(d, "captures",
                       i64_list(tio_graph_captures(g), tio_graph_capture_count(g))) < 0 ||
        dict_set_steal(d, "metadata",
                       tio_py_pairs_dict(g, tio_graph_meta_count(g), gmeta_at)) < 0 ||
        dict_set_steal(d, "opsets",
                       tio_py_build_seq(tio_graph_opset_count(g), 0, opset_item, g)) < 0) {
        Py_XDECREF(d);
        d = NULL;
    }
    Py_LeaveRecursiveCall();
    return d;
}

/* graph() -> the root graph as data, or None for a tensor-only container */
PyObject *tio_py_owner_graph(OwnerObject *self, PyObject *noargs)
{
    (void)noargs;
    const tio_graph *g = tio_container_graph(self->c);
    return g ? graph_dict(g, 0) : Py_NewRef(Py_None);
}

/* object_tree(tensor, opaque) (tensio/_checkpoint.c) */
PyObject *tio_py_owner_object_tree(OwnerObject *self, PyObject *args)
{
    PyObject *tensor_fn, *opaque_fn;
    if (!PyArg_ParseTuple(args, "OO", &tensor_fn, &opaque_fn))
        return NULL;
    return tio_py_object_tree(self->c, tensor_fn, opaque_fn);
}


/* ------------------------------------------------------------ graph building */

/* build_graph(owner, spec): gives the owner's container a graph built from
 * spec (tio_container_new_graph, tio_graph_add_*), a dict:
 *   "values":  [(name|None, dtype|None, shape|None, tensor index or -1[, type|None])],
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
        tio_py_raise_code(TIO_E_ARGUMENT, "graph: a string contains a NUL character");
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
    tio_py_raise(rc, err);
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
        PyObject *name, *dtype, *shape, *type = Py_None;
        long long tensor;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "OOOL|O;graph: a value tuple",
                              &name, &dtype, &shape, &tensor, &type))
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
            tio_py_raise_code(TIO_E_DTYPE, "graph: a value's dtype is not a tensio dtype name");
            goto done;
        }
        v.tensor = tensor;
        v.rank = -1;
        v.type = graph_str_or_null(type, &fail);
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
    case TIO_ATTR_TYPE:
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
        tio_py_raise_code(TIO_E_ARGUMENT, "graph: unknown attribute type");
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
        tio_py_raise_code(TIO_E_LIMIT, "graph: subgraphs nested too deeply");
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

PyObject *tio_py_build_graph(PyObject *m, PyObject *args)
{
    (void)m;
    PyObject *owner, *spec;
    if (!PyArg_ParseTuple(args, "O!O", &tio_py_OwnerType, &owner, &spec))
        return NULL;
    tio_graph *g = NULL;
    tio_error err;
    tio_error_clear(&err);
    int rc = tio_container_new_graph(((OwnerObject *)owner)->c, &g, &err);
    if (rc != TIO_OK)
        return tio_py_raise(rc, &err);
    if (fill_graph(g, spec, 0) < 0)
        return NULL;
    Py_RETURN_NONE;
}

