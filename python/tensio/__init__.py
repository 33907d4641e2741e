"""tensio: read, write and convert tensor and model containers (BTF, tenbin,
ZIO TENS, rten, tmfile, ONNX) from Python, with NumPy arrays that are
zero-copy, read-only views into the mapped file.

    import tensio
    with tensio.open("weights.ten") as c:
        w = c[0]                 # numpy.ndarray viewing the mapping
    w.sum()                      # still valid: the view keeps the mapping alive
    tensio.save("out.btf", {"w": w})

See docs/python.md. Every error is a tensio.Error (subclass by C status code)
with .code, .code_name, .format, .offset and .message.
"""

import os as _os

import numpy as _np

from . import _tensio
from ._tensio import (  # noqa: F401  (re-exported)
    Error, ArgumentError, NoMemoryError, IOError, FormatError, TruncatedError,
    MagicError, BoundsError, LimitError, OverflowError, DtypeError, CorruptError,
    UnsupportedError, LossyError, NotFoundError, InvalidError, TimeoutError,
    TransportError, LIB_VERSION,
)

__version__ = LIB_VERSION
__all__ = [
    "Stream", "GraphBuilder", "zio", "Shard", "ShardWriter", "Member", "shard_list", "stream_shards", "open", "loads", "load", "load_checkpoint", "save", "container", "loads_parts", "dumps_parts", "dumps", "convert", "formats", "dtype_name",
    "Container", "Tensor", "Coo", "Opaque", "CheckpointArray", "Typed", "Finding", "Graph", "Node", "Value", "Error", "ArgumentError",
    "NoMemoryError", "IOError", "FormatError", "TruncatedError", "MagicError",
    "BoundsError", "LimitError", "OverflowError", "DtypeError", "CorruptError",
    "UnsupportedError", "LossyError", "NotFoundError", "InvalidError",
    "TimeoutError", "TransportError",
]

try:  # bfloat16 as a real NumPy dtype when ml_dtypes is installed
    import ml_dtypes as _ml_dtypes
    _BFLOAT16 = _np.dtype(_ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - depends on the system
    _BFLOAT16 = None

_LIMIT_FIELDS = ("max_tensors", "max_rank", "max_header_bytes", "max_name_bytes",
                 "max_depth", "max_objects", "max_dense_bytes", "max_pickle_bytes",
                 "max_pickle_objects", "max_pickle_depth", "max_shards",
                 # http(s) sources and shard streams (docs/sources.md)
                 "max_remote_bytes", "max_redirects", "max_retries", "timeout_ms",
                 "max_member_bytes")
_SAVE_FLAGS = {
    "densify": _tensio.SAVE_DENSIFY,
    "drop_names": _tensio.SAVE_DROP_NAMES,
    "drop_metadata": _tensio.SAVE_DROP_METADATA,
    "widen": _tensio.SAVE_WIDEN,
    "dequantize": _tensio.SAVE_DEQUANTIZE,
    "single_part": _tensio.SAVE_SINGLE_PART,
    "cleanup": _tensio.SAVE_CLEANUP,
}


class Finding(tuple):
    """A validation finding (code, code_name, format, offset, message)."""
    __slots__ = ()
    code = property(lambda self: self[0])
    code_name = property(lambda self: self[1])
    format = property(lambda self: self[2])
    offset = property(lambda self: self[3])
    message = property(lambda self: self[4])

    def __repr__(self):
        return "Finding(%s, %r)" % (self[1], self[4])


def _limits_tuple(limits):
    if limits is None:
        return None
    if not isinstance(limits, dict):
        raise TypeError("limits must be a dict of %s" % ", ".join(_LIMIT_FIELDS))
    unknown = set(limits) - set(_LIMIT_FIELDS)
    if unknown:
        raise ArgumentError("unknown limits: %s" % ", ".join(sorted(unknown)))
    vals = tuple(int(limits.get(k, 0)) for k in _LIMIT_FIELDS)
    if any(v < 0 for v in vals):
        raise ArgumentError("limits must be >= 0 (0 = the default)")
    return vals


def _open_flags(strict, no_mmap=False, external_anywhere=False, native_graph=False,
                prefetch=False, lazy=False):
    flags = 0
    if lazy:
        flags |= _tensio.OPEN_LAZY
    if prefetch:
        flags |= _tensio.OPEN_PREFETCH
    if native_graph:
        flags |= _tensio.OPEN_NATIVE_GRAPH
    if strict:
        flags |= _tensio.OPEN_STRICT
    if no_mmap:
        flags |= _tensio.OPEN_NO_MMAP
    if external_anywhere:
        flags |= _tensio.OPEN_EXTERNAL_ANYWHERE
    return flags


def _view_dtype(arr, dtype_name):
    if dtype_name == "bfloat16" and _BFLOAT16 is not None:
        return arr.view(_BFLOAT16)  # a view of the view: still zero-copy
    return arr


class Coo:
    """A sparse COO tensor: .indices (nnz x rank int64), .values (nnz), .shape,
    .dtype, .dtype_name, .nnz, and .todense() (a new dense array). .indices and
    .values are read-only views into the container's memory."""

    def __init__(self, owner, index, info):
        self._owner = owner
        self._index = index
        self.name, self.dtype_name, _, self.shape, self.nnz = info[:5]
        self.values = _view_dtype(owner.array(index), self.dtype_name)
        self.indices = owner.indices(index)

    dtype = property(lambda self: self.values.dtype)
    ndim = property(lambda self: len(self.shape))

    def todense(self):
        """The dense array (zeros elsewhere; a repeated coordinate takes its
        last value), bounded by the container's max_dense_bytes limit."""
        return _view_dtype(self._owner.densify(self._index), self.dtype_name)

    def __repr__(self):
        return "Coo(shape=%r, dtype=%s, nnz=%d)" % (self.shape, self.dtype_name, self.nnz)


class Tensor:
    """One tensor with its tensio dtype: .name, .dtype_name, .shape, .layout
    ("dense" / "coo"), .alias_of (tied weights), .metadata, .array (the NumPy view, bfloat16 as uint16
    without ml_dtypes), .sha256(), and DLPack: __dlpack__ / __dlpack_device__
    export the data zero-copy with the real type (bfloat16 as kDLBfloat, bool
    as kDLBool), so torch.from_dlpack(t) works where NumPy refuses read-only
    arrays. The memory is read-only: do not write through the consumer's
    tensor (a file mapping is PROT_READ: a write is a SIGSEGV)."""

    def __init__(self, owner, index):
        info = owner.info(index)
        self._owner = owner
        self._index = index
        self.name, self.dtype_name, layout, self.shape, self.nnz, self.nbytes = info[:6]
        self.layout = {1: "coo", 2: "quant"}.get(layout, "dense")
        self.aligned = info[6]
        self.source_offset = None if info[7] < 0 else info[7]
        self.quant = info[8]  # the block type of a quantized tensor ("q4_K"), else None
        # tied weights: the name of the earlier tensor this one is an alias of
        # (the same view of one storage in a PyTorch checkpoint), else None
        self.alias_of = info[9]

    @property
    def array(self):
        """The dense array view, or a Coo for a sparse tensor. A string tensor
        (dtype_name "string") gives a new object array of bytes objects, as
        onnx.numpy_helper gives one: exact for any bytes, where NumPy's S
        would drop trailing NULs."""
        return _item(self._owner, self._index)

    @property
    def metadata(self):
        return self._owner.tensor_metadata(self._index)

    @property
    def blocks(self):
        """A quantized tensor's blocks as stored (a read-only uint8 view);
        .quant names the block type."""
        if self.layout != "quant":
            raise ArgumentError("blocks: not a quantized tensor")
        return self._owner.array(self._index)

    def sha256(self, what="dense"):
        """Hex SHA-256 of the dense tensor ("dense"), of the stored values
        ("values") or of the COO indices ("indices")."""
        code = {"dense": _tensio.HASH_DENSE, "values": _tensio.HASH_VALUES,
                "indices": _tensio.HASH_INDICES}[what]
        return self._owner.sha256(self._index, code).hex()

    def __array__(self, dtype=None):
        a = self.array
        if isinstance(a, Coo):
            a = a.todense()
        return a if dtype is None else a.astype(dtype)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        """A legacy (pre-1.0, unversioned) "dltensor" capsule, which the
        DLPack protocol lets a producer return whatever max_version asks."""
        if stream is not None and stream != -1:
            raise BufferError("tensio tensors are on the CPU: stream must be None")
        if dl_device is not None and tuple(dl_device) != (1, 0):
            raise BufferError("tensio tensors are on the CPU (device (1, 0))")
        if copy:
            raise BufferError("tensio exports views: copy=True is not supported")
        if not self.aligned:
            raise BufferError("tensor %r is not aligned to its element size in its source (a "
                              "legacy file, or loads() of a buffer at an odd address): DLPack "
                              "consumers expect aligned data; export a copy (np.array(view), "
                              "or .to_torch(), which copies then)" % (self.name,))
        return self._owner.dlpack(self._index, False)

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU, device 0

    def to_torch(self):
        """A torch.Tensor sharing this tensor's memory (DLPack), bool included:
        torch 1.13 does not take kDLBool, so bool travels as uint8 and is
        re-viewed as torch.bool (zero-copy). Read-only memory: see the class.
        An unaligned tensor (see .aligned) is copied instead."""
        import torch.utils.dlpack
        if self.layout != "dense":
            raise UnsupportedError("to_torch: a COO tensor (use .array.values/.indices)")
        if not self.aligned:  # an unaligned source: an aligned copy
            a = _np.array(self._owner.array(self._index))  # bfloat16 as uint16 bits
            if self.dtype_name == "bfloat16":
                return torch.from_numpy(a.view(_np.int16)).view(torch.bfloat16)
            return torch.from_numpy(a)
        if self.dtype_name == "bool":
            t = torch.utils.dlpack.from_dlpack(self._owner.dlpack(self._index, True))
            return t.view(torch.bool)
        return torch.utils.dlpack.from_dlpack(self._owner.dlpack(self._index))

    def __repr__(self):
        return "Tensor(%r, %s, shape=%r%s)" % (self.name, self.dtype_name, self.shape,
                                               ", coo" if self.layout == "coo" else "")


_ATTR_TENSOR, _ATTR_GRAPH, _ATTR_TENSORS, _ATTR_GRAPHS = 7, 8, 9, 10


class Value:
    """A graph value: .name, .dtype (name or None when unknown), .shape (a
    list of int, str for a symbolic dim, None for an unknown dim; None when
    the rank is unknown), .index (in its graph), .tensor (the container
    tensor's index for a constant, else None), .array (that tensor) and
    .type: None for a tensor, else the value's type in ONNX's notation
    ("seq(tensor(float)[N])", "optional(tensor(int64)[])", "tensor(string)[2]";
    .dtype and .shape are then None)."""
    __slots__ = ("name", "dtype", "shape", "index", "tensor", "type", "_owner")

    def __init__(self, owner, index, data):
        self._owner = owner
        self.index = index
        self.name, self.dtype, self.shape, t, self.type = data
        self.tensor = None if t < 0 else t

    is_constant = property(lambda self: self.tensor is not None)

    @property
    def array(self):
        return None if self.tensor is None else _item(self._owner, self.tensor)

    def __repr__(self):
        if self.type:
            return "Value(%r, %s)" % (self.name, self.type)
        return "Value(%r, %s, %r%s)" % (self.name, self.dtype, self.shape,
                                        ", constant" if self.is_constant else "")


class Node:
    """An operator: .name, .op (ONNX name where one exists), .native_op,
    .native_id, .domain, .inputs / .outputs (Value, None for an absent
    optional one), .attributes (dict: int, float, str, lists of them, an
    array for a TENSOR attribute, a Graph for a GRAPH one), .attribute_types
    and .attribute_labels (an INT's enum name in the source schema, or None)."""

    def __init__(self, graph, data):
        (self.name, self.op, self.native_op, native_id, self.domain, ins, outs,
         attrs) = data
        self.native_id = None if native_id < 0 else native_id
        v = graph.values
        self.inputs = [v[i] if i >= 0 else None for i in ins]
        self.outputs = [v[i] if i >= 0 else None for i in outs]
        self.attributes, self.attribute_types, self.attribute_labels = {}, {}, {}
        owner = graph._owner
        for name, typ, val, label in attrs:
            if typ == _ATTR_TENSOR:
                val = _item(owner, val)
            elif typ == _ATTR_TENSORS:
                val = [_item(owner, t) for t in val]
            elif typ == _ATTR_GRAPH:
                val = Graph(owner, val, graph)
            elif typ == _ATTR_GRAPHS:
                val = [Graph(owner, g, graph) for g in val]
            self.attributes[name] = val
            self.attribute_types[name] = typ
            self.attribute_labels[name] = label

    def __repr__(self):
        return "Node(%r, %s)" % (self.name, self.op)


class Graph:
    """A model graph (rten, tmfile, ONNX): .nodes in topological order,
    .values, .inputs / .outputs / .captures (Value), .constants (the values
    that are container tensors), .metadata, .opsets [(domain, version)],
    .native_format, .parent (None for the root). Built once from the C graph:
    a snapshot, whose arrays are views like the container's."""

    def __init__(self, owner, data, parent=None):
        self._owner = owner
        self.parent = parent
        self.native_format = data["native_format"]
        self.values = [Value(owner, i, v) for i, v in enumerate(data["values"])]
        self.nodes = [Node(self, n) for n in data["nodes"]]
        self.inputs = [self.values[i] for i in data["inputs"]]
        self.outputs = [self.values[i] for i in data["outputs"]]
        self.captures = [self.values[i] for i in data["captures"]]
        self.metadata = data["metadata"]
        self.opsets = data["opsets"]

    constants = property(lambda self: [v for v in self.values if v.is_constant])

    def __repr__(self):
        return "<tensio.Graph %d nodes, %d values>" % (len(self.nodes), len(self.values))


def _item(owner, i):
    info = owner.info(i)
    if info[2] == 1:
        return Coo(owner, i, info)
    if info[2] == 2:  # quantized (GGUF): the dequantized float32 values, a copy
        return owner.densify(i)
    return _view_dtype(owner.array(i), info[1])


class Container:
    """An opened container (tensio.open / tensio.loads). Indexing by position
    or name gives read-only NumPy views (a Coo for sparse tensors); iteration
    yields them in order. The views stay valid after close() and after the
    Container is gone: the C container lives until the last of them does."""

    def __init__(self, owner):
        self._owner = owner

    def _o(self):
        o = self._owner
        if o is None:
            raise ValueError("I/O operation on a closed tensio.Container")
        return o

    def close(self):
        """Drops this object's hold on the C container. Views handed out stay
        valid (they hold it themselves)."""
        self._owner = None

    closed = property(lambda self: self._owner is None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __len__(self):
        return self._o().count()

    def _index(self, key):
        o = self._o()
        if isinstance(key, str):
            i = o.find(key)
            if i < 0:
                # keys() lists an unnamed tensor as its position: c[k] takes
                # every k it lists (a name, where one is "3", comes first)
                i = int(key) if key.isdigit() and key == str(int(key)) else -1
                if not (0 <= i < o.count() and o.info(i)[0] is None):
                    raise NotFoundError("no tensor named %r" % key)
            return i
        try:
            i = key.__index__()
        except AttributeError:
            raise TypeError("tensor key must be an int or a str, not %s"
                            % type(key).__name__) from None
        n = o.count()
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("tensor index %d out of range (%d tensors)" % (key, n))
        return i

    def __getitem__(self, key):
        return _item(self._o(), self._index(key))

    def __iter__(self):
        o = self._o()
        for i in range(o.count()):
            yield _item(o, i)

    def _list(self):
        """list(self), built in one C call where every tensor is a plain dense
        view (tenbin's decode_buffer over many small arrays)."""
        a = self._o().arrays()
        return a if a is not None else list(self)

    def __contains__(self, name):
        return isinstance(name, str) and self._o().find(name) >= 0

    def keys(self):
        """Tensor names; an unnamed tensor is listed as its position (str),
        which indexing takes as it takes a name."""
        return [str(i) if n is None else n for i, n in enumerate(self.names)]

    def items(self):
        return list(zip(self.keys(), self))

    def tensor(self, key):
        """The Tensor (dtype name, metadata, DLPack) at a position or name."""
        return Tensor(self._o(), self._index(key))

    def dtype_name(self, key):
        """tensio's dtype name ("bfloat16" where the array is uint16)."""
        return self._o().info(self._index(key))[1]

    def sha256(self, key, what="dense"):
        return self.tensor(key).sha256(what)

    def tensor_metadata(self, key):
        return self._o().tensor_metadata(self._index(key))

    format = property(lambda self: self._o().format(),
                      doc="the format the data were read as (\"btf\", \"tenbin\", ...)")
    names = property(lambda self: self._o().names(),
                     doc="tensor names in order (None for an unnamed tensor)")
    metadata = property(lambda self: self._o().metadata(), doc="container metadata (dict)")
    properties = property(lambda self: self._o().properties(),
                          doc="facts about the source's layout (dict of str)")
    warnings = property(lambda self: [Finding(w) for w in self._o().warnings()],
                        doc="validation findings (open with strict=True to make them errors)")
    limits = property(lambda self: dict(zip(_LIMIT_FIELDS, self._o().limits())))

    def object_tree(self):
        """The object the file stores (a PyTorch checkpoint's unpickled
        object) as Python data, its tensors CheckpointArray views and the
        objects tensio does not rebuild Opaque; None when the format has no
        object tree (see load_checkpoint)."""
        o = self._o()
        arrays = {}

        def tensor(i):
            a = arrays.get(i)
            if a is None:
                a = arrays[i] = _checkpoint_item(o, i)
            return a
        return o.object_tree(tensor, Opaque)

    @property
    def graph(self):
        """The model graph (Graph), or None for a tensor-only container."""
        data = self._o().graph()
        return None if data is None else Graph(self._o(), data)

    def __repr__(self):
        if self._owner is None:
            return "<tensio.Container closed>"
        return "<tensio.Container %s, %d tensors>" % (self.format, len(self))


def open(path, format=None, strict=False, limits=None, no_mmap=False,
         external_anywhere=False, native_graph=False, prefetch=False, lazy=False):
    """Opens a file (mapped) -> Container. format forces a format (default:
    probe the content, then the extension); strict makes a validation finding
    an error (InvalidError); limits is a dict of tio_limits fields (0 = the
    default); native_graph gives a model's graph as its file stores it
    (tmfile: Tengine's ops, Const and InputOp nodes) instead of ONNX form;
    prefetch, for a caller that reads every tensor, maps the whole file in one
    call once it is decoded (TIO_OPEN_PREFETCH: MADV_POPULATE_READ, else
    MADV_WILLNEED) instead of one page fault per page touched.
    lazy, for an http(s):// URL: open fetches the header only, and each
    tensor's bytes are fetched (range requests) when its data are first
    read (an array, to_torch, sha256; save/dumps/send fetch every tensor);
    names, dtypes and shapes need no fetch (TIO_OPEN_LAZY; docs/sources.md).
    A fetch holds the interpreter until it is done. No effect on other
    sources."""
    owner = _tensio.open_file(_os.fspath(path), format,
                              _open_flags(strict, no_mmap, external_anywhere, native_graph,
                                          prefetch, lazy),
                              _limits_tuple(limits))
    return Container(owner)


def loads(data, format=None, strict=False, limits=None, copy=False):
    """Opens bytes in memory (any C-contiguous bytes-like object) -> Container.
    Without copy the views point into `data`, which the Container and its
    views keep referenced (and, for a bytearray, locked against resizing);
    with copy=True the bytes are copied first."""
    flags = _open_flags(strict)
    if copy:
        flags |= _tensio.OPEN_COPY
    return Container(_tensio.open_memory(data, format, flags, _limits_tuple(limits)))


def loads_parts(parts, format=None, strict=False, limits=None, copy=False):
    """Decodes a message: a list of parts (ZeroMQ frames, any bytes-like
    objects) -> Container. format "zio" (ZIO TENS multipart), "tenbin"
    (tensorcom's framing), or None to probe (one part holding a file encoding
    of any format, a first part starting "ZIO", else tensorcom). Views point
    into the parts, which the Container and its views keep referenced."""
    flags = _open_flags(strict)
    if copy:
        flags |= _tensio.OPEN_COPY
    return Container(_tensio.open_parts(list(parts), format, flags, _limits_tuple(limits)))


def load(path, as_dict=False, **open_options):
    """All tensors of a file: a list of arrays (Coo for sparse tensors), or
    with as_dict=True a dict name -> array (an unnamed tensor keyed by its
    position; a repeated name keeps its first tensor). Views, as for open()."""
    with open(path, **open_options) as c:
        if not as_dict:
            return list(c)
        d = {}
        for k, v in zip(c.keys(), c):
            d.setdefault(k, v)
        return d


class Opaque:
    """An object of a checkpoint that tensio does not rebuild (and never
    imports or calls): .name is its class's (or function's) "module.name",
    .offset the byte offset in the file where the pickle names it (None when
    unknown: a deflated record), .state what the file sets as its state (an
    argparse.Namespace's fields as a dict), or None."""

    __slots__ = ("name", "offset", "state")

    def __init__(self, name, offset, state):
        self.name = name
        self.offset = offset
        self.state = state

    def __repr__(self):
        at = "" if self.offset is None else " at offset %d" % self.offset
        return "<opaque %s%s>" % (self.name, at)


class CheckpointArray(_np.ndarray):
    """A read-only NumPy view of a checkpoint's tensor (load_checkpoint) that
    also exports DLPack, which NumPy refuses for read-only arrays: so
    torch.from_dlpack(a) shares the file's memory with the real dtype
    (bfloat16 included). An array derived from it (a slice, a sum) is an
    ordinary array of this class with no tie to the file: its DLPack export
    is NumPy's (a read-only slice: a copy's). A tensor stored unaligned (the
    legacy layout) exports the aligned copy the library makes of it."""

    def __array_finalize__(self, obj):
        self._tio = None  # (owner, index) only on the view load_checkpoint made

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        t = self._tio
        if t is not None:
            tensor = Tensor(t[0], t[1])
            if tensor.aligned:
                return tensor.__dlpack__(stream, max_version, dl_device, copy)
        a = self.view(_np.ndarray)
        if not a.flags.writeable:
            a = _np.array(a)
        return a.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU, device 0


def _checkpoint_item(owner, i):
    a = _item(owner, i)
    if not isinstance(a, _np.ndarray):
        return a
    v = a.view(CheckpointArray)
    v._tio = (owner, i)
    return v


def load_checkpoint(path, format=None, strict=False, limits=None, no_mmap=False):
    """The object a checkpoint stores, read without running it: for a
    PyTorch checkpoint (.pt/.pth/.bin/.ckpt) the nested structure torch.load
    would return, as data: dict (and OrderedDict) as dict, list, tuple,
    set, int, float, str, bytes, bool and None as themselves, torch.Size as
    a tuple, torch.device as its str, tensors as CheckpointArray (read-only
    NumPy views into the mapped file where the tensor is contiguous, which
    keep the file alive; torch.from_dlpack works on them), and every other
    object as an Opaque (its module.name, offset and state). An object the
    file stores once and references twice (a tensor under two keys) is one
    Python object in both places. For a format without an object tree
    (safetensors, .npz, …): a dict name -> array, its state dict. Options as
    for open()."""
    with open(path, format=format, strict=strict, limits=limits, no_mmap=no_mmap) as c:
        tree = c.object_tree()
        if tree is not None:
            return tree
        o = c._o()
        d = {}
        for i, k in enumerate(c.keys()):
            if k not in d:
                d[k] = _checkpoint_item(o, i)
        return d


def dtype_name(container, key):
    """tensio's dtype name of a container's tensor ("bfloat16" for the uint16
    views NumPy gets without ml_dtypes)."""
    return container.dtype_name(key)


def formats():
    """{name: {"description", "extensions", "sparse", "names", "metadata",
    "graph", "write"}} for every format libtensio knows ("write": False for a
    format tensio only reads)."""
    out = {}
    for name, desc, exts, caps, write in _tensio.formats():
        out[name] = {"description": desc, "extensions": exts.split(),
                     "sparse": bool(caps & 1), "names": bool(caps & 2),
                     "metadata": bool(caps & 4), "graph": bool(caps & 8),
                     "write": bool(write)}
    return out


# ------------------------------------------------------------------- saving

# The little-endian (native) NumPy dtypes tensio stores, to their names: a
# dict lookup, where dtype.name costs some 1.5 µs per call.
_NATIVE_NAMES = {_np.dtype(c).newbyteorder("<"): _np.dtype(c).name for c in "?bhilqBHILQefdFD"}


def _string_bytes(arr):
    """(shape, bytes) of a U, S or object array of str/bytes in tensio's string
    layout: numel + 1 little-endian uint64 offsets (0, ..., total), then the
    strings' bytes in C order. U and str elements as UTF-8; S elements as
    NumPy gives them (trailing NULs stripped); any other object is refused."""
    shape = arr.shape
    flat = arr.reshape(-1).tolist()  # C order
    kind = arr.dtype.kind
    items = flat
    if kind != "S":
        items = []
        for i, x in enumerate(flat):
            if isinstance(x, str):
                try:
                    x = x.encode("utf-8")
                except UnicodeEncodeError:
                    raise DtypeError("string %d is not valid Unicode (a lone surrogate): "
                                     "it has no UTF-8 form" % i) from None
            elif isinstance(x, (bytearray, memoryview)):
                x = bytes(x)
            elif not isinstance(x, bytes):
                raise DtypeError("element %d of an object array is %s: tensio saves object "
                                 "arrays of str or bytes only" % (i, type(x).__name__))
            items.append(x)
    offs = _np.zeros(len(items) + 1, "<u8")
    if items:
        _np.cumsum(_np.fromiter(map(len, items), "<u8", len(items)), out=offs[1:])
    return shape, _np.frombuffer(offs.tobytes() + b"".join(items), _np.uint8)


def _le_bytes(arr):
    """(dtype_name, shape, C-contiguous little-endian uint8 view) of an array;
    a U, S or object array is a string tensor (_string_bytes, a copy)."""
    name = _NATIVE_NAMES.get(arr.dtype)
    if name is not None:  # the common case, without dtype.name
        shape = arr.shape
        return name, shape, _np.ascontiguousarray(arr).reshape(-1).view(_np.uint8)
    if arr.dtype.kind in "USO":
        return ("string",) + _string_bytes(arr)
    if _BFLOAT16 is not None and arr.dtype == _BFLOAT16:
        name = "bfloat16"
    else:
        if arr.dtype.byteorder == ">":
            arr = arr.astype(arr.dtype.newbyteorder("<"))
        name = arr.dtype.name
        if arr.dtype.kind not in "biufc":
            raise DtypeError("dtype %s has no tensio equivalent" % arr.dtype)
    shape = arr.shape  # before ascontiguousarray, which makes rank 0 rank 1
    arr = _np.ascontiguousarray(arr)
    return name, shape, arr.reshape(-1).view(_np.uint8)


class Typed:
    """An array with an explicit tensio dtype for save/dumps: Typed(u16, "bfloat16")
    stores uint16 bits as bfloat16 where NumPy (without ml_dtypes) has none.
    The array's item size must be the dtype's."""

    def __init__(self, array, dtype_name):
        self.array = _np.asarray(array)
        self.dtype_name = str(dtype_name)

    def __repr__(self):
        return "Typed(%s, shape=%r)" % (self.dtype_name, self.array.shape)


def _tensor_tuple(name, obj, tmeta=None):
    if isinstance(obj, Typed):
        _, shape, raw = _le_bytes(obj.array)
        return (name, obj.dtype_name, shape, raw, None, 0, _pairs(tmeta))
    if isinstance(obj, Tensor):
        if tmeta is None:
            tmeta = obj.metadata or None
        obj_dtype = obj.dtype_name
        obj = obj.array
        if not isinstance(obj, Coo):
            dt, shape, raw = _le_bytes(_np.asarray(obj))
            return (name, obj_dtype, shape, raw, None, 0, _pairs(tmeta))
    if isinstance(obj, Coo):
        dt, _, raw = _le_bytes(obj.values)
        if obj.dtype_name == "bfloat16":
            dt = "bfloat16"
        ind = _np.ascontiguousarray(obj.indices, dtype="<i8")
        return (name, dt, tuple(obj.shape), raw, ind.reshape(-1).view(_np.uint8), int(obj.nnz),
                _pairs(tmeta))
    if type(obj) is _np.ndarray and obj.flags.c_contiguous:
        dt = _NATIVE_NAMES.get(obj.dtype)
        if dt is not None:  # the array itself: its buffer is the bytes
            return (name, dt, obj.shape, obj, None, 0, _pairs(tmeta))
    dt, shape, raw = _le_bytes(_np.asarray(obj))
    return (name, dt, shape, raw, None, 0, _pairs(tmeta))


def _pairs(d):
    if not d:
        return None
    return [(str(k), str(v)) for k, v in d.items()]


def _save_args(format, options):
    flags = 0
    version = 0
    cast = None
    fmt_opts = []
    for k, v in options.items():
        if k == "cast":
            cast = str(v) if v else None
        elif k in _SAVE_FLAGS:
            if v:
                flags |= _SAVE_FLAGS[k]
        elif k == "sync":
            if not v:
                flags |= _tensio.SAVE_NO_SYNC
        elif k == "version":
            version = int(v)
        elif k == "options":
            if v:
                fmt_opts.append(str(v))
        else:
            sv = str(v)
            if "," in sv or "=" in sv:
                raise ArgumentError("format option %s=%r: ',' and '=' are not allowed" % (k, v))
            fmt_opts.append("%s=%s" % (k, sv))
    return format, flags, version, ",".join(fmt_opts) or None, cast


def _owner_for(arrays, names=None, metadata=None, copy=False):
    """An _Owner for what save/dumps got: a Container as it is (graph, COO,
    names, metadata), or a container built over the arrays (borrowed; with
    copy=True, copied into memory the C container owns)."""
    if isinstance(arrays, Container) and names is None and metadata is None and not copy:
        return arrays._o()
    tmetas = None
    if isinstance(arrays, Container):
        if metadata is None:
            metadata = arrays.metadata
        keys = arrays.names
        tmetas = [arrays.tensor_metadata(i) for i in range(len(arrays))]
        values = [arrays.tensor(i) for i in range(len(arrays))]
    elif isinstance(arrays, dict):
        keys = list(arrays.keys())
        values = list(arrays.values())
    else:
        if isinstance(arrays, (_np.ndarray, Tensor, Coo)):
            raise TypeError("save: give a list, dict or Container of arrays, not one array")
        values = list(arrays)
        keys = [v.name if isinstance(v, (Tensor, Coo)) else None for v in values]
    if names is not None:
        keys = list(names)
        if len(keys) != len(values):
            raise ArgumentError("names: %d names for %d arrays" % (len(keys), len(values)))
    items = []
    for i, (k, v) in enumerate(zip(keys, values)):
        if k is not None and not isinstance(k, str):
            raise TypeError("tensor names must be str or None, not %s" % type(k).__name__)
        items.append(_tensor_tuple(k, v, tmetas[i] if tmetas else None))
    return _tensio.build(items, _pairs(metadata), bool(copy))


def container(arrays, names=None, metadata=None):
    """A Container built in memory over arrays (a list, dict or Container, as
    for save), without writing it: its views share the given arrays' memory
    (a contiguous little-endian input is not copied) and are read-only. For
    DLPack export of a dtype NumPy lacks (Typed(bits, "bfloat16")), and to
    hand the same container to several saves."""
    return Container(_owner_for(arrays, names, metadata))


def save(path, arrays, format=None, names=None, metadata=None, **options):
    """Writes arrays (a list, a dict name -> array, or a Container) to path,
    atomically (temporary file, fsync, rename). format defaults to the path's
    extension. Options: densify, drop_names, drop_metadata, widen, cleanup
    (booleans: the TIO_SAVE_* flags), sync=False (TIO_SAVE_NO_SYNC), version
    (int), cast (floating-point tensors written as another float dtype:
    "bfloat16" for all of them, or "float32=float16,float64=float32";
    rounded as torch's Tensor.to() rounds), and format options as keywords
    (zio: level, form, origin, granule, seqno) or options="k=v,...". Without
    the flags, any loss is a LossyError.
    max_shard_size (bytes, or a str as transformers takes it: "5GB", "500MB",
    "2GiB") writes a Hugging Face sharded checkpoint as save_pretrained does:
    path a directory (model.safetensors, or model-00001-of-0000N.safetensors
    and model.safetensors.index.json) or the weights file's name in one."""
    shard = options.pop("max_shard_size", None)
    owner = _owner_for(arrays, names, metadata)
    owner.save(_os.fspath(path), *_save_args(format, options), shard)


def dumps(arrays, format, names=None, metadata=None, as_bytearray=False, **options):
    """The encoding of arrays in a format, as bytes (as_bytearray=True: a
    bytearray, without a second copy); options as for save."""
    if not format:
        raise ArgumentError("dumps: a format is required")
    owner = _owner_for(arrays, names, metadata)
    return owner.dumps(*_save_args(format, options), bool(as_bytearray))


def dumps_parts(arrays, format, names=None, metadata=None, **options):
    """Encodes arrays as a message: a list of bytes parts (ZeroMQ frames) in
    format "zio" or "tenbin" (tensorcom), as tio_message_encode;
    single_part=True gives one part holding the file encoding. Options as
    for save (zio: level, form, origin, granule, seqno). The parts are
    copies (for pyzmq's send_multipart)."""
    if not format:
        raise ArgumentError("dumps_parts: a format is required")
    return _owner_for(arrays, names, metadata).encode(*_save_args(format, options))


def convert(src, dst, format=None, src_format=None, strict=False, limits=None, **options):
    """Converts a file: open(src) then save(dst) with the options of save."""
    with open(src, format=src_format, strict=strict, limits=limits) as c:
        save(dst, c, format=format, **options)


from .stream import Stream  # noqa: E402  (they use the names above)
from .builder import GraphBuilder  # noqa: E402
from . import zio  # noqa: E402
from .shard import Shard, Member, shard_list, stream_shards  # noqa: E402
from .shard_writer import ShardWriter  # noqa: E402
