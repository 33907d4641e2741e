"""The Container API, views' lifetime and zero-copy, errors, saving."""

import gc
import os
import weakref

import numpy as np
import pytest

import tensio
from conftest import sha256, vec

F32 = vec("btf/dense_float32.btf")
MULTI = vec("tenbin/multi_infos.ten")
COO = vec("btf/coo_float32_rank2.btf")
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "bfloat16", "float32", "float64"]


def same(a, b):
    """Equal shape, dtype and bytes (NaN payloads included)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def owner_of(arr):
    """The first non-ndarray object down arr's .base chain."""
    b = arr.base
    while isinstance(b, np.ndarray):
        b = b.base
    return b


def sample(dtype, shape=(3, 4)):
    rng = np.random.default_rng(7)
    n = int(np.prod(shape))
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dtype == "bfloat16":
        return rng.integers(0, 1 << 16, n, dtype=np.uint16).reshape(shape)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(n).astype(dt).reshape(shape)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True).reshape(shape)


# ---------------------------------------------------------------- containers

def test_container_basics():
    with tensio.open(MULTI) as c:
        assert c.format == "tenbin" and len(c) >= 2
        names = c.names
        assert all(isinstance(n, str) for n in names)
        assert c.keys() == names
        for name, arr in c.items():
            assert same(c[name], arr)
        assert [a.shape for a in c] == [c[i].shape for i in range(len(c))]
        assert same(c[-1], c[len(c) - 1])
        assert names[0] in c and "no such" not in c
        with pytest.raises(IndexError):
            c[len(c)]
        with pytest.raises(KeyError):
            c["no such"]
        with pytest.raises(tensio.NotFoundError) as e:
            c["no such"]
        assert isinstance(e.value, tensio.Error)
        with pytest.raises(TypeError):
            c[1.5]
        assert isinstance(c.metadata, dict) and isinstance(c.properties, dict)
        assert c.limits["max_rank"] == 64
        assert "tenbin" in repr(c)
    assert c.closed and "closed" in repr(c)
    with pytest.raises(ValueError):
        len(c)


def test_views_are_readonly_zero_copy():
    c = tensio.open(F32)
    a, b = c[0], c[0]
    assert not a.flags.writeable and not b.flags.writeable
    with pytest.raises(ValueError):
        a[0, 0] = 1
    assert np.shares_memory(a, b)  # two views of the same bytes
    assert owner_of(a) is owner_of(b)
    assert type(owner_of(a)).__name__ == "_Owner"
    # the data pointer is inside the file's bytes: equal to them in place
    with open(F32, "rb") as f:
        raw = f.read()
    assert raw.find(a.tobytes()) >= 0


def test_views_outlive_container():
    c = tensio.open(F32)
    a = c[0]
    want = a.copy()
    ref = weakref.ref(c)
    c.close()
    del c
    gc.collect()
    assert ref() is None
    assert np.array_equal(a, want, equal_nan=True)  # the mapping is still there
    with tensio.open(COO) as c:
        x = c[0]
    del c
    gc.collect()
    assert x.todense().shape == x.shape and x.indices.shape == (x.nnz, 2)


def test_views_outlive_loads_buffer():
    with open(F32, "rb") as f:
        buf = bytearray(f.read())
    c = tensio.loads(buf)
    a = c[0]
    want = a.copy()
    del c
    gc.collect()
    with pytest.raises(BufferError):  # the view holds the buffer: no resizing under it
        buf.extend(b"x")
    assert np.shares_memory(a, np.frombuffer(buf, np.uint8))
    assert np.array_equal(a, want, equal_nan=True)
    del a
    gc.collect()
    buf.extend(b"x")  # released with the last view
    # copy=True: no reference to the caller's buffer
    c = tensio.loads(bytes(buf[:-1]), copy=True)
    assert not np.shares_memory(c[0], np.frombuffer(buf, np.uint8))


def test_coo():
    with tensio.open(COO) as c:
        x = c[0]
        assert isinstance(x, tensio.Coo)
        assert x.dtype == np.float32 and x.dtype_name == "float32" and x.ndim == 2
        assert not x.values.flags.writeable and not x.indices.flags.writeable
        d = x.todense()
        assert d.flags.writeable
        for (i, j), v in zip(x.indices, x.values):
            assert d[i, j] == v or (np.isnan(v) and np.isnan(d[i, j]))
        t = c.tensor(0)
        assert t.layout == "coo" and t.nnz == x.nnz
        assert t.sha256() == sha256(d)
        assert t.sha256("values") == sha256(x.values)
        assert np.array_equal(np.asarray(t), d, equal_nan=True)


def test_tensor_wrapper():
    with tensio.open(MULTI) as c:
        t = c.tensor(0)
        assert t.name == c.names[0] and t.layout == "dense"
        assert t.dtype_name == str(c[0].dtype) and t.shape == c[0].shape
        assert t.sha256() == sha256(c[0])
        assert same(np.asarray(t), c[0])
        assert isinstance(t.metadata, dict)
        assert "Tensor(" in repr(t)


def test_warnings_and_strict():
    path = vec("btf/malformed/trailing_garbage.btf")
    with tensio.open(path) as c:
        w = c.warnings
        assert w and w[0].code == tensio._tensio.TIO_E_INVALID and w[0].message
        assert w[0].code_name == "TIO_E_INVALID"
    with pytest.raises(tensio.InvalidError):
        tensio.open(path, strict=True)


# -------------------------------------------------------------------- errors

def test_error_attributes():
    with pytest.raises(tensio.TruncatedError) as e:
        tensio.loads(b"\x01\x00\x00", format="btf")
    err = e.value
    assert isinstance(err, tensio.Error)
    assert err.code == 5 and err.code_name == "TIO_E_TRUNCATED"
    assert err.format == "btf" and err.offset == 0
    assert "btf" in str(err) and err.message == str(err)
    with pytest.raises(tensio.IOError) as e:
        tensio.open("/nonexistent/x.btf")
    assert isinstance(e.value, OSError) and e.value.offset is None
    with pytest.raises(tensio.FormatError):
        tensio.open(F32, format="nosuchformat")
    with pytest.raises(tensio.LimitError):
        tensio.open(MULTI, limits={"max_tensors": 1})
    with pytest.raises(tensio.ArgumentError):
        tensio.open(MULTI, limits={"max_nothing": 1})


ERROR_CLASSES = {
    "TIO_E_ARGUMENT": ("ArgumentError", ValueError), "TIO_E_NOMEM": ("NoMemoryError", MemoryError),
    "TIO_E_IO": ("IOError", OSError), "TIO_E_FORMAT": ("FormatError", None),
    "TIO_E_TRUNCATED": ("TruncatedError", None), "TIO_E_MAGIC": ("MagicError", None),
    "TIO_E_BOUNDS": ("BoundsError", None), "TIO_E_LIMIT": ("LimitError", None),
    "TIO_E_OVERFLOW": ("OverflowError", None), "TIO_E_DTYPE": ("DtypeError", TypeError),
    "TIO_E_CORRUPT": ("CorruptError", None), "TIO_E_UNSUPPORTED": ("UnsupportedError", None),
    "TIO_E_LOSSY": ("LossyError", None), "TIO_E_NOT_FOUND": ("NotFoundError", KeyError),
    "TIO_E_INVALID": ("InvalidError", None), "TIO_E_TIMEOUT": ("TimeoutError", TimeoutError),
    "TIO_E_TRANSPORT": ("TransportError", None),
}


def test_every_code_has_a_class():
    codes = {n: getattr(tensio._tensio, n) for n in dir(tensio._tensio) if n.startswith("TIO_E_")}
    assert sorted(codes.values()) == list(range(1, 18))
    assert set(codes) == set(ERROR_CLASSES)
    for code_name, (cls_name, builtin) in ERROR_CLASSES.items():
        cls = getattr(tensio, cls_name)
        assert issubclass(cls, tensio.Error) and cls.__module__ == "tensio"
        assert builtin is None or issubclass(cls, builtin)
        assert cls_name in tensio.__all__


# ------------------------------------------------------------------- saving

def writable_formats():
    return [f for f, caps in tensio.formats().items() if not caps["graph"] and caps["write"]]


@pytest.mark.parametrize("fmt", writable_formats())
@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip(tmp_path, fmt, dtype):
    if not tensio._tensio.supports_dtype(fmt, dtype):
        pytest.skip(f"{fmt} has no {dtype}")
    every = [sample(dtype), sample(dtype, ()), sample(dtype, (0, 3))]
    # .npy and a TensorProto .pb hold one array: each of them in a file of its own
    one = fmt in ("npy", "onnx-tensor")
    for k, arrays in enumerate([[a] for a in every] if one else [every]):
        round_trip_one(tmp_path / str(k), fmt, dtype, arrays)


def round_trip_one(tmp_path, fmt, dtype, arrays):
    tmp_path.mkdir()
    objs = [tensio.Typed(a, dtype) for a in arrays] if dtype == "bfloat16" else arrays
    ext = tensio.formats()[fmt]["extensions"][0]
    path = tmp_path / ("x" + ext)
    tensio.save(path, objs, sync=False)
    with tensio.open(path) as c:
        assert c.format == fmt and len(c) == len(arrays)
        for i, a in enumerate(arrays):
            assert c.dtype_name(i) == dtype
            got = c[i]
            if dtype == "bfloat16":
                got = got.view(np.uint16)
            assert got.shape == a.shape and got.tobytes() == a.tobytes()
    # the same bytes in memory
    data = tensio.dumps(objs, fmt)
    with open(path, "rb") as f:
        assert f.read() == data
    # a TensorProto is not self-identifying (no probe): by name
    c = tensio.loads(data, format=fmt if fmt == "onnx-tensor" else None)
    assert [sha256(x.view(np.uint16) if dtype == "bfloat16" else x) for x in c] == \
        [sha256(a) for a in arrays]


def test_save_dict_names_metadata(tmp_path):
    p = tmp_path / "a.zmsg"
    arrays = {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "y": np.arange(3, dtype="<i2")}
    tensio.save(p, arrays, metadata={"k": "v"})
    d = tensio.load(p, as_dict=True)
    assert list(d) == ["x", "y"] and all(np.array_equal(d[k], arrays[k]) for k in d)
    with tensio.open(p) as c:
        assert c.names == ["x", "y"]
    lst = tensio.load(p)
    assert isinstance(lst, list) and np.array_equal(lst[1], arrays["y"])
    # names= for a list; a big-endian and a non-contiguous input
    q = tmp_path / "b.ten"
    be = np.arange(4, dtype=">f8")
    nc = np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]
    tensio.save(q, [be, nc], names=["be", "nc"])
    with tensio.open(q) as c:
        assert c.names == ["be", "nc"]
        assert np.array_equal(c["be"], be) and c["be"].dtype == np.dtype("<f8")
        assert np.array_equal(c["nc"], nc)


def test_empty_name_is_a_name(tmp_path):
    # "" is the empty name (safetensors, .npz, GGUF and .pt hold it); None = unnamed
    p = tmp_path / "e.safetensors"
    tensio.save(p, {"": np.arange(3, dtype=np.float32), "b": np.ones(2, np.int8)})
    with tensio.open(p) as c:
        assert sorted(c.names) == ["", "b"]
        i = c.names.index("")
        assert c.tensor(i).name == "" and "" in c and "0" not in c
        assert np.array_equal(c[""], np.arange(3, dtype=np.float32))
        assert sorted(c.keys()) == ["", "b"]
    assert sorted(tensio.load(p, as_dict=True)) == ["", "b"]
    q = tmp_path / "u.safetensors"
    tensio.save(q, [np.zeros(1, np.float32)])  # unnamed: written under its index
    with tensio.open(q) as c:
        assert c.names == ["0"]
    tensio.save(tmp_path / "n.btf", [np.zeros(1, np.float32)])  # BTF has no names
    with tensio.open(tmp_path / "n.btf") as c:
        assert c.names == [None] and c.tensor(0).name is None
    with pytest.raises(tensio.LossyError, match="empty name"):  # tenbin cannot hold it
        tensio.save(tmp_path / "e.ten", {"": np.zeros(1, np.float32)})


def test_metadata_with_nul(tmp_path):
    # a GGUF string value may hold NUL bytes: kept, as str, both ways
    p = tmp_path / "n.gguf"
    meta = {"general.architecture": "x", "k": "a\0b\0", "empty": ""}
    tensio.save(p, {"w": np.ones(2, np.float32)}, metadata=meta)
    with tensio.open(p) as c:
        assert c.metadata == meta
    # key "k", type string (8), length 4, the bytes
    assert b"k\x08\x00\x00\x00\x04" + b"\x00" * 7 + b"a\x00b\x00" in p.read_bytes()
    q = tmp_path / "m.gguf"
    with tensio.open(p) as c:
        tensio.save(q, c)
    assert q.read_bytes() == p.read_bytes()
    # zio's JSON text holds no NUL here: refused by key, unless dropped
    with pytest.raises(tensio.LossyError, match='the container has metadata "t" whose value'):
        tensio.save(tmp_path / "t.zmsg", {"w": np.ones(1)}, metadata={"t": "\0"})
    tensio.save(tmp_path / "t.zmsg", {"w": np.ones(1)}, metadata={"t": "\0"},
                drop_metadata=True)


def test_save_lossy_and_options(tmp_path):
    arrays = {"x": np.ones(3, np.float32)}
    with pytest.raises(tensio.LossyError) as e:
        tensio.save(tmp_path / "a.btf", arrays)  # BTF has no names
    assert e.value.code == 13
    assert not os.path.exists(tmp_path / "a.btf")  # nothing written
    tensio.save(tmp_path / "a.btf", arrays, drop_names=True)
    assert np.array_equal(tensio.load(tmp_path / "a.btf")[0], arrays["x"])
    with pytest.raises(tensio.LossyError):
        tensio.save(tmp_path / "b.btf", [np.zeros(2, np.float16)])
    tensio.save(tmp_path / "b.btf", [np.array([1.5, -2], np.float16)], widen=True)
    w = tensio.load(tmp_path / "b.btf")[0]
    assert w.dtype == np.float32 and w.tolist() == [1.5, -2.0]
    with pytest.raises(tensio.ArgumentError):
        tensio.save(tmp_path / "c.btf", [np.zeros(1)], nosuchoption=1)
    with pytest.raises(tensio.DtypeError):
        tensio.save(tmp_path / "c.ten", [np.zeros(2, np.clongdouble)])
    with pytest.raises(tensio.LossyError, match="complex64"):  # a tensio dtype tenbin lacks
        tensio.save(tmp_path / "c.ten", [np.zeros(2, np.complex64)])
    with pytest.raises(TypeError):
        tensio.save(tmp_path / "c.ten", np.zeros(2))
    with pytest.raises(tensio.ArgumentError):
        tensio.save(tmp_path / "c.ten", {"a\0b": np.zeros(2)})
    # metadata keys and values are byte strings: "\0" is kept, and refused by
    # name where the format cannot hold it
    with pytest.raises(tensio.LossyError, match=r'"a\\x00b" whose key holds a NUL'):
        tensio.save(tmp_path / "c.safetensors", [np.zeros(2)], metadata={"a\0b": "v"})
    with pytest.raises(tensio.LossyError, match=r'"k" whose value holds a NUL'):
        tensio.save(tmp_path / "c.safetensors", [np.zeros(2)], metadata={"k": "v\0w"})
    # zio format options as keywords
    data = tensio.dumps([np.zeros(2, np.float32)], "zio", seqno=42, level=3)
    c = tensio.loads(data)
    assert c.format == "zio" and c[0].tolist() == [0, 0]


def test_save_cast(tmp_path):
    x = np.array([1.0, 1 + 2.0 ** -11, 65520.0, 2.0 ** -25, -np.nan], np.float32)
    d = np.array([1 + 2.0 ** -11 + 2.0 ** -40, 0.1])
    tensio.save(tmp_path / "a.safetensors", {"x": x, "d": d, "i": np.arange(2)}, cast="float16")
    c = tensio.load(tmp_path / "a.safetensors", as_dict=True)
    assert c["x"].dtype == np.float16 and c["d"].dtype == np.float16 and c["i"].dtype == np.int64
    assert c["x"].view(np.uint16).tolist() == [0x3c00, 0x3c00, 0x7c00, 0, 0xfe00]
    assert c["d"].view(np.uint16).tolist() == [0x3c00, 0x2e66]  # float64 through float32
    b = tensio.dumps({"x": x, "d": d}, "safetensors", cast="float64=float32")
    c = tensio.loads(b)
    assert c["x"].dtype == np.float32 and c["d"].dtype == np.float32 and same(c["x"], x)
    bf = tensio.loads(tensio.dumps([x], "safetensors", cast="bfloat16"))[0]
    assert bf.nbytes == 10
    with pytest.raises(tensio.ArgumentError, match="is not a dtype tensio casts to"):
        tensio.save(tmp_path / "b.safetensors", [x], cast="int8")
    with pytest.raises(tensio.UnsupportedError, match="npz cannot store"):
        tensio.save(tmp_path / "b.npz", [x], cast="bfloat16")
    assert not os.path.exists(tmp_path / "b.npz")


def test_save_coo_and_densify(tmp_path):
    with tensio.open(COO) as c:
        x = c[0]
        tensio.save(tmp_path / "a.btf", c)  # a Container as it is: COO stays COO
        with pytest.raises(tensio.LossyError):
            tensio.save(tmp_path / "a.ten", c)
        tensio.save(tmp_path / "a.ten", c, densify=True)
        tensio.save(tmp_path / "b.btf", [x])  # a Coo object
    for p in ("a.btf", "b.btf"):
        y = tensio.load(tmp_path / p)[0]
        assert isinstance(y, tensio.Coo) and np.array_equal(y.indices, x.indices)
    d = tensio.load(tmp_path / "a.ten")[0]
    assert np.array_equal(d, x.todense(), equal_nan=True)


def test_save_container_with_overrides(tmp_path):
    with tensio.open(MULTI) as c:
        tensio.save(tmp_path / "a.ten", c, names=[f"n{i}" for i in range(len(c))])
        src = [a.copy() for a in c]
    with tensio.open(tmp_path / "a.ten") as c:
        assert c.names == [f"n{i}" for i in range(len(c))]
        assert all(same(a, b) for a, b in zip(c, src))


def _mapped_kib(path):
    """KiB of this process's mappings of path in memory (/proc/self/smaps)."""
    total, mine, path = 0, False, os.path.realpath(path)
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split(None, 5)
            if "-" in head[0] and len(head) >= 5 and ":" in head[3]:  # a mapping's line
                mine = len(head) == 6 and head[5].strip() == path
            elif mine and line.startswith("Rss:"):
                total += int(line.split()[1])
    return total


def test_save_views_of_opened_files(tmp_path):
    """A dict of an opened file's arrays saves by copying from the file, as
    the Container itself does: the new container holds the opened one (its
    views are of that mapping), so the save never faults the mapping in
    (it did: RSS the size of the file). The bytes are those of a save from
    memory; keys() are the keys indexing takes, unnamed tensors too."""
    rng = np.random.default_rng(7)
    src = [rng.standard_normal(32768, dtype=np.float32) for _ in range(48)]  # 128 KiB each
    np.savez(tmp_path / "a.npz", *src)
    tensio.save(tmp_path / "b.btf", src[:24])  # unnamed tensors
    with tensio.open(tmp_path / "a.npz") as a, tensio.open(tmp_path / "b.btf") as b:
        before = _mapped_kib(tmp_path / "a.npz"), _mapped_kib(tmp_path / "b.btf")
        assert b.keys() == [str(i) for i in range(24)]
        picked = {k: a[k] for k in a.keys()[::2]}
        picked.update({"b" + k: b[k] for k in b.keys()})
        tensio.save(tmp_path / "o.safetensors", picked, sync=False)
        tensio.save(tmp_path / "m.safetensors", a, metadata={"k": "v"}, sync=False)
        after = _mapped_kib(tmp_path / "a.npz"), _mapped_kib(tmp_path / "b.btf")
        assert after[0] - before[0] < 256 and after[1] - before[1] < 256, (before, after)
        # below 32 MiB a zip writer takes its CRCs from the mapping as it writes
        tensio.save(tmp_path / "o.npz", picked, sync=False)
        with pytest.raises(tensio.NotFoundError):
            b["24"]
        with pytest.raises(tensio.NotFoundError):
            b["01"]
    mem = {k: v.copy() for k, v in picked.items()}
    for fmt in ("safetensors", "npz"):
        assert (tmp_path / ("o." + fmt)).read_bytes() == tensio.dumps(mem, fmt)
    with tensio.open(tmp_path / "m.safetensors") as o:
        assert o.metadata == {"k": "v"} and len(o) == len(src)
        assert all(np.array_equal(o["arr_%d" % i], x) for i, x in enumerate(src))
    del picked
    gc.collect()


def test_convert(tmp_path):
    src = vec("rten/small_cnn/small_cnn.v2.rten")
    tensio.convert(src, tmp_path / "m.onnx")
    tensio.convert(tmp_path / "m.onnx", tmp_path / "m.ten", sync=False)
    with tensio.open(src) as a, tensio.open(tmp_path / "m.onnx") as b, \
            tensio.open(tmp_path / "m.ten") as t:
        assert b.format == "onnx" and t.format == "tenbin"
        for name in a.names:
            assert sha256(a[name]) == sha256(b[name]) == sha256(t[name])
    with pytest.raises(tensio.UnsupportedError):
        tensio.save(tmp_path / "x.rten", [np.zeros(2, np.float32)])  # no graph
    # a model's weights cast: stored as float16 under "<name>:float16", a
    # Cast back to float32 before the model's own nodes
    tensio.convert(src, tmp_path / "h.onnx", cast="float16")
    with tensio.open(tmp_path / "m.onnx") as b, tensio.open(tmp_path / "h.onnx") as h:
        assert h.names == [n + ":float16" for n in b.names]
        for name in b.names:
            assert h[name + ":float16"].dtype == np.float16
            assert np.array_equal(h[name + ":float16"], b[name].astype(np.float16))
        ops = [n.op for n in h.graph.nodes]
        k = len(b.names)
        assert ops[:k] == ["Cast"] * k and ops[k:] == [n.op for n in b.graph.nodes]
        assert [n.outputs[0].name for n in h.graph.nodes[:k]] == b.names
    with pytest.raises(tensio.UnsupportedError, match="casts no model's weights"):
        tensio.convert(src, tmp_path / "h.rten", cast="float16")


def test_formats_and_dtype_name():
    f = tensio.formats()
    assert {"btf", "tenbin", "zio", "rten", "tmfile", "onnx"} <= set(f)
    assert ".ten" in f["tenbin"]["extensions"] and f["btf"]["sparse"]
    with tensio.open(F32) as c:
        assert tensio.dtype_name(c, 0) == "float32"
    assert tensio.__version__ == tensio.LIB_VERSION


def test_bfloat16(tmp_path):
    """No tensor-only format stores bfloat16 (rten and ONNX do, with a graph):
    a container built in memory holds it, and widen=True saves it as float32."""
    bits = np.array([0x3F80, 0xC000, 0x7F80], np.uint16)  # 1, -2, inf
    c = tensio.container([tensio.Typed(bits, "bfloat16")], names=["b"])
    a = c[0]
    assert c.dtype_name(0) == "bfloat16" and not a.flags.writeable
    assert np.shares_memory(a, bits)
    assert a.view(np.uint16).tolist() == bits.tolist()
    if tensio._BFLOAT16 is not None:
        assert a.dtype == tensio._BFLOAT16
    else:
        assert a.dtype == np.uint16
    with pytest.raises(tensio.LossyError):
        tensio.save(tmp_path / "a.zmsg", c)
    tensio.save(tmp_path / "a.zmsg", c, widen=True)
    w = tensio.load(tmp_path / "a.zmsg")[0]
    assert w.dtype == np.float32 and w.tolist() == [1, -2, np.inf]


def test_gil_released_threads():
    """Opening and hashing from threads at once gives the same answers."""
    import concurrent.futures
    with tensio.open(MULTI) as c:
        want = [c.sha256(i) for i in range(len(c))]

    def work(_):
        with tensio.open(MULTI) as c:
            return [c.sha256(i) for i in range(len(c))]
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        assert all(r == want for r in ex.map(work, range(32)))


def test_open_prefetch_same_arrays():
    # prefetch=True maps the file in one call after decoding; the views are
    # the same bytes (and still zero-copy views of the file)
    for path in (F32, MULTI, COO):
        with tensio.open(path) as a, tensio.open(path, prefetch=True) as b:
            assert len(a) == len(b) > 0
            for x, y in zip(a, b):
                assert same(x.todense() if hasattr(x, "todense") else x,
                            y.todense() if hasattr(y, "todense") else y)
    with tensio.open(F32, no_mmap=True, prefetch=True) as c:
        assert len(c) > 0


def test_tied_weights(tmp_path):
    """A PyTorch checkpoint's tied weights (Debian's torch writes it): the
    alias says which tensor it is; a .pt written by tensio keeps them tied."""
    import collections
    import torch
    e = torch.arange(6.0).reshape(2, 3)
    torch.save(collections.OrderedDict([("embed.weight", e), ("lm_head.weight", e.detach())]),
               tmp_path / "t.pt")
    with tensio.open(tmp_path / "t.pt") as c:
        assert c.tensor("embed.weight").alias_of is None
        assert c.tensor("lm_head.weight").alias_of == "embed.weight"
    tensio.convert(tmp_path / "t.pt", tmp_path / "u.pt")
    d = torch.load(tmp_path / "u.pt", weights_only=True)
    assert list(d) == ["embed.weight", "lm_head.weight"]
    assert d["lm_head.weight"].data_ptr() == d["embed.weight"].data_ptr()
    assert torch.equal(d["embed.weight"], e)


def test_complex(tmp_path):
    """complex64/complex128: NumPy views, .npz round trip, DLPack (kDLComplex)."""
    a = np.array([[1 + 2j, 3 - 4j]], np.complex64)
    b = (np.arange(3) * (0.5 - 1j)).astype(">c16")  # big-endian: swapped part by part
    tensio.save(tmp_path / "c.npz", {"a": a, "b": b})
    with tensio.open(tmp_path / "c.npz") as c:
        assert c["a"].dtype == np.complex64 and np.array_equal(c["a"], a)
        assert c["b"].dtype == np.complex128 and np.array_equal(c["b"], b)
        assert c.tensor("a").dtype_name == "complex64"
        import torch  # Debian python3-torch, a test dependency
        t = torch.from_dlpack(c.tensor("b"))
        assert t.dtype == torch.complex128 and np.array_equal(t.numpy(), b)


def test_string_tensor(tmp_path):
    """A string tensor (NumPy U/S in .npy, ONNX STRING) reads as an object
    array of bytes, exact (NULs inside and at the end kept)."""
    p = tmp_path / "u.npy"
    np.save(p, np.array([["h\u00e9", ""], ["a\U0001f600", "xyz"]]))
    with tensio.open(p) as c:
        assert c.dtype_name(0) == "string"
        a = c[0]
        assert a.dtype == object and a.shape == (2, 2)
        assert a.tolist() == [["h\u00e9".encode(), b""], ["a\U0001f600".encode(), b"xyz"]]
        t = c.tensor(0)
        assert t.dtype_name == "string"
        assert np.asarray(t).tolist() == a.tolist()
        with pytest.raises(tensio.DtypeError):
            t.__dlpack__()
    p = tmp_path / "s.npy"
    np.save(p, np.array([b"a\x00b", b"c"]))
    with tensio.open(p) as c:
        assert c[0].tolist() == [b"a\x00b", b"c"]


def test_save_strings(tmp_path):
    """U, S and object arrays of str/bytes are saved as string tensors: read
    back by NumPy (.npy, .npz) and onnx (.pb) as they were given; a lone
    surrogate, an object that is not a string, and a format without strings
    are refused by name."""
    u = np.array([["h\u00e9", ""], ["a\U0001f600", "xyz"]])
    tensio.save(tmp_path / "u.npy", [u])
    back = np.load(tmp_path / "u.npy")
    assert back.dtype.kind == "U" and back.tolist() == u.tolist()
    sb = np.array([b"a\x00b", b"\xff", b""])
    o = np.array([b"\x00x\x00", "t\u00e9xt", bytearray(b"\x80")], dtype=object)
    tensio.save(tmp_path / "m.npz", {"u": u, "s": sb})
    z = np.load(tmp_path / "m.npz")
    assert z["u"].tolist() == u.tolist()
    assert z["s"].dtype.kind == "S" and z["s"].tolist() == sb.tolist()
    # NumPy's S would strip a trailing NUL: refused for .npy, kept by ONNX
    with pytest.raises(tensio.LossyError, match="NUL"):
        tensio.save(tmp_path / "o.npy", [o])
    tensio.save(tmp_path / "o.pb", [o], format="onnx-tensor")
    import onnx  # Debian's python3-onnx (its to_array decodes strings as UTF-8)
    t = onnx.TensorProto()
    t.ParseFromString((tmp_path / "o.pb").read_bytes())
    assert t.data_type == onnx.TensorProto.STRING and list(t.dims) == [3]
    assert list(t.string_data) == [b"\x00x\x00", "t\u00e9xt".encode(), b"\x80"]
    with tensio.open(tmp_path / "o.pb") as c:
        assert c[0].tolist() == [b"\x00x\x00", "t\u00e9xt".encode(), b"\x80"]
        assert c.dtype_name(0) == "string"
    # rank 0 and empty
    tensio.save(tmp_path / "e.npz", {"scalar": np.array("x"), "empty": np.zeros((0, 3), "U2")})
    z = np.load(tmp_path / "e.npz")
    assert z["scalar"].shape == () and z["scalar"].item() == "x"
    assert z["empty"].shape == (0, 3)
    with pytest.raises(tensio.DtypeError, match="element 1 .* int"):
        tensio.save(tmp_path / "x.npy", [np.array([b"a", 3], dtype=object)])
    with pytest.raises(tensio.DtypeError, match="string 0 .*surrogate"):
        tensio.save(tmp_path / "x.npy", [np.array(["\ud800"])])
    with pytest.raises(tensio.LossyError, match="is string, which safetensors cannot store"):
        tensio.save(tmp_path / "x.safetensors", {"s": u})
    assert not (tmp_path / "x.safetensors").exists()
