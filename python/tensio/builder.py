"""tensio.GraphBuilder: a model graph built from Python (tio_container_new_graph,
tio_graph_add_value/node/attr), saved as ONNX or rten like any opened model.

    b = tensio.GraphBuilder(opset=13)
    x = b.input("x", "float32", ["batch", 4])
    w = b.constant("w", np.ones((4, 2), np.float32))
    y, = b.node("MatMul", [x, w], ["y"])
    z, = b.node("Relu", [y], [("z", "float32", ["batch", 2])])
    b.output(z)
    tensio.save("m.onnx", b.container())

See docs/python.md (Building graphs).
"""

import numpy as _np

from . import _tensio, _tensor_tuple, _pairs, Container, ArgumentError, DtypeError

__all__ = ["GraphBuilder"]

_INT, _FLOAT, _STRING, _INTS, _FLOATS, _STRINGS = 1, 2, 3, 4, 5, 6
_TENSOR, _GRAPH, _TENSORS, _GRAPHS = 7, 8, 9, 10


def _dtype_name(dtype):
    if dtype is None:
        return None
    if isinstance(dtype, str) and dtype == "bfloat16":
        return dtype
    try:
        return _np.dtype(dtype).name
    except TypeError:
        raise DtypeError("graph: %r is not a dtype" % (dtype,)) from None


class GraphBuilder:
    """Builds a graph: values (inputs, runtime values, constants), operator
    nodes in topological order with typed attributes (ONNX op and attribute
    names), the graph's inputs and outputs, metadata and opsets (the root
    graph's), and subgraphs (If/Loop bodies) for GRAPH attributes.

    Values are referred to by the index the calls return or by name."""

    def __init__(self, opset=None, metadata=None, opsets=None, _root=None):
        self._root = _root or self
        self._values = []   # (name, dtype, shape, tensor index)
        self._names = {}
        self._nodes = []
        self._inputs, self._outputs, self._captures = [], [], []
        self.metadata = dict(metadata or {})
        self.opsets = dict(opsets or {})
        if opset is not None:
            self.opsets[""] = int(opset)
        if _root is None:
            self._tensors = []  # (name, array): the container's tensors, every graph's

    # ------------------------------------------------------------ values
    def _value(self, ref):
        if isinstance(ref, str):
            if ref not in self._names:
                raise ArgumentError("graph: no value named %r" % ref)
            return self._names[ref]
        if ref is None:
            return -1
        i = int(ref)
        if not -1 <= i < len(self._values):
            raise ArgumentError("graph: value index %d out of range" % i)
        return i

    def value(self, name=None, dtype=None, shape=None):
        """A runtime value (dtype a NumPy dtype or tensio name, None when
        unknown; shape a list of int, str (symbolic) or None (unknown dim),
        None when the rank is unknown). Returns its index."""
        if shape is not None:
            shape = [d if d is None or isinstance(d, str) else int(d) for d in shape]
        return self._add(name, _dtype_name(dtype), shape, -1)

    def _add(self, name, dtype, shape, tensor):
        self._values.append((name, dtype, shape, tensor))
        i = len(self._values) - 1
        if name is not None:
            self._names.setdefault(name, i)
        return i

    def input(self, name, dtype, shape):
        """A graph input (a value appended to .inputs). Returns its index."""
        i = self.value(name, dtype, shape)
        self._inputs.append(i)
        return i

    def constant(self, name, array):
        """A constant: the array becomes a tensor of the container (any
        dtype tensio stores; tensio.Typed for bfloat16 bits) and a value
        referring to it. Returns the value's index."""
        return self._add(name, None, None, self._tensor(name, array))

    def _tensor(self, name, array):
        t = self._root._tensors
        t.append((name, array))
        return len(t) - 1

    def output(self, *values):
        """Appends values (index or name) to the graph's outputs."""
        self._outputs += [self._value(v) for v in values]

    def capture(self, *values):
        """A subgraph's captures: its values that stand for values of an
        enclosing graph."""
        self._captures += [self._value(v) for v in values]

    def subgraph(self):
        """An empty GraphBuilder for a GRAPH attribute of a node of this one
        (its constants are tensors of the same container)."""
        return GraphBuilder(_root=self._root)

    # ------------------------------------------------------------- nodes
    def node(self, op, inputs=(), outputs=1, name=None, domain=None, **attributes):
        """Appends an operator node. inputs: value indices or names (None for
        an absent optional input). outputs: a number of new unnamed-dtype
        values named "<name or op>_<node>_<k>", or a list of names (new
        values), (name, dtype, shape) tuples (new typed values: ONNX wants
        the graph outputs typed) or indices (existing values). Attributes as keywords: int and
        bool -> INT, float -> FLOAT, str -> STRING, lists of them -> INTS,
        FLOATS, STRINGS (an empty list is INTS), an ndarray -> TENSOR (added
        to the container), a GraphBuilder from .subgraph() -> GRAPH, lists of
        those -> TENSORS / GRAPHS. Returns the output value indices."""
        ins = [self._value(v) for v in inputs]
        base = name or "%s_%d" % (op, len(self._nodes))
        if isinstance(outputs, int):
            outs = [self.value("%s_%d" % (base, k)) for k in range(outputs)]
        else:
            outs = [self.value(*o) if isinstance(o, tuple) else
                    self.value(o) if isinstance(o, str) and o not in self._names
                    else self._value(o) for o in outputs]
        attrs = [self._attr(base, k, v) for k, v in attributes.items()]
        self._nodes.append((name, str(op), domain, ins, outs, attrs))
        return outs

    def _attr(self, node, key, v):
        if isinstance(v, GraphBuilder):
            return (key, _GRAPH, v._spec())
        if isinstance(v, _np.ndarray):
            return (key, _TENSOR, self._tensor("%s.%s" % (node, key), v))
        if isinstance(v, (bool, int, _np.integer)):
            return (key, _INT, int(v))
        if isinstance(v, (float, _np.floating)):
            return (key, _FLOAT, float(v))
        if isinstance(v, str):
            return (key, _STRING, v)
        if isinstance(v, (list, tuple)):
            v = list(v)
            if all(isinstance(x, (bool, int, _np.integer)) for x in v):
                return (key, _INTS, [int(x) for x in v])
            if all(isinstance(x, (int, float, _np.integer, _np.floating)) for x in v):
                return (key, _FLOATS, [float(x) for x in v])
            if all(isinstance(x, str) for x in v):
                return (key, _STRINGS, v)
            if all(isinstance(x, _np.ndarray) for x in v):
                return (key, _TENSORS, [self._tensor("%s.%s.%d" % (node, key, i), x)
                                        for i, x in enumerate(v)])
            if all(isinstance(x, GraphBuilder) for x in v):
                return (key, _GRAPHS, [x._spec() for x in v])
        raise ArgumentError("graph: attribute %s=%r has no tensio attribute type" % (key, v))

    # ------------------------------------------------------------- build
    def _spec(self):
        return {"values": self._values, "nodes": self._nodes, "inputs": self._inputs,
                "outputs": self._outputs, "captures": self._captures,
                "metadata": _pairs(self.metadata) or [],
                "opsets": sorted(self.opsets.items())}

    def container(self, metadata=None):
        """A Container holding the constants and the graph (root builder
        only), ready for tensio.save("m.onnx" / "m.rten", ...). Its arrays
        share the constants' memory."""
        if self._root is not self:
            raise ArgumentError("graph: container() of a subgraph (call it on the root)")
        items = [_tensor_tuple(n, a) for n, a in self._tensors]
        owner = _tensio.build(items, _pairs(metadata))
        _tensio.build_graph(owner, self._spec())
        return Container(owner)

    def save(self, path, **options):
        """tensio.save(path, self.container(), **options)."""
        from . import save
        save(path, self.container(), **options)
