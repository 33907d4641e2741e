"""DLPack: tensio.Tensor exports zero-copy capsules with the real dtypes
(NumPy 1.24 refuses to export its read-only arrays, so the views cannot)."""

import gc
import sys

import numpy as np
import pytest

import tensio
from conftest import vec

torch = pytest.importorskip("torch")  # Debian's python3-torch (install-deps.sh)

F32 = vec("btf/dense_float32.btf")


def test_numpy_refuses_readonly_views():
    """Why tensio.Tensor has its own __dlpack__: NumPy 1.24 will not export a
    read-only array (this documents the reason; newer NumPy may allow it)."""
    with tensio.open(F32) as c:
        a = c[0]
    try:
        np.from_dlpack(a)
    except (BufferError, RuntimeError, TypeError):
        pass


def test_torch_from_dlpack_zero_copy():
    with tensio.open(F32) as c:
        t = c.tensor(0)
        a = c[0]
    x = torch.from_dlpack(t)
    assert x.dtype == torch.float32 and tuple(x.shape) == a.shape
    assert x.data_ptr() == a.ctypes.data  # the same bytes: no copy
    assert torch.equal(x.nan_to_num(), torch.from_numpy(a.copy()).nan_to_num())
    y = np.from_dlpack(t)
    assert y.ctypes.data == a.ctypes.data and y.shape == a.shape
    assert t.__dlpack_device__() == (1, 0)
    cap = t.__dlpack__(stream=None, max_version=(1, 0), dl_device=(1, 0), copy=False)
    assert type(cap).__name__ == "PyCapsule"
    for bad in ({"stream": 1}, {"dl_device": (2, 0)}, {"copy": True}):
        with pytest.raises(BufferError):
            t.__dlpack__(**bad)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8", "float16",
                                   "float32", "float64"])
def test_torch_round_trip(tmp_path, dtype):
    """torch -> numpy -> tensio file -> tensio.Tensor -> torch: equal."""
    src = (torch.arange(24) % 100).reshape(2, 3, 4).to(getattr(torch, dtype))
    tensio.save(tmp_path / "x.ten", {"x": src.numpy()})
    with tensio.open(tmp_path / "x.ten") as c:
        x = torch.from_dlpack(c.tensor("x"))
    gc.collect()
    assert x.dtype == src.dtype and torch.equal(x, src)


def test_bfloat16_and_bool_real_types():
    bits = np.array([0x3F80, 0xC000, 0x7F80], np.uint16)  # 1, -2, inf
    flags = np.array([True, False, True])
    c = tensio.container([tensio.Typed(bits, "bfloat16"), flags])
    b = torch.from_dlpack(c.tensor(0))
    assert b.dtype == torch.bfloat16 and b.float().tolist() == [1, -2, float("inf")]
    assert b.data_ptr() == bits.ctypes.data
    f = c.tensor(1).to_torch()
    assert f.dtype == torch.bool and f.tolist() == [True, False, True]
    assert f.data_ptr() == flags.ctypes.data
    # __dlpack__ exports bool as kDLBool (DLPack 0.8); torch 1.13 and NumPy
    # 1.24 predate it and refuse it, newer ones take it.
    try:
        g = torch.from_dlpack(c.tensor(1))
        assert g.dtype == torch.bool
    except RuntimeError as e:
        assert "code 6" in str(e) or "Unsupported" in str(e)


def test_capsule_keeps_container_alive():
    c = tensio.open(F32)
    t = c.tensor(0)
    want = np.array(c[0])
    owner = t._owner
    before = sys.getrefcount(owner)
    x = torch.from_dlpack(t)
    assert sys.getrefcount(owner) == before + 1  # the DLManagedTensor's reference
    del c, t
    gc.collect()
    assert np.array_equal(x.numpy(), want, equal_nan=True)
    del x
    gc.collect()
    assert sys.getrefcount(owner) == before - 2  # released by the deleter (c, t gone too)


def test_unconsumed_capsule_released():
    with tensio.open(F32) as c:
        t = c.tensor(0)
        owner = t._owner
        before = sys.getrefcount(owner)
        for _ in range(100):
            cap = t.__dlpack__()
            del cap
        assert sys.getrefcount(owner) == before


def test_coo_has_no_dlpack():
    with tensio.open(vec("btf/coo_float32_rank2.btf")) as c:
        with pytest.raises(tensio.UnsupportedError):
            c.tensor(0).__dlpack__()


def test_unaligned_source():
    """A buffer at an odd address gives unaligned tensors: NumPy views work
    (flags.aligned False), __dlpack__ refuses, to_torch copies."""
    bits = np.array([0x3F80, 0xC000], np.uint16)
    data = tensio.dumps([np.arange(6, dtype=np.float32), tensio.Typed(bits, "int16")], "zio")
    buf = bytearray(b"\0" + data)
    c = tensio.loads(memoryview(buf)[1:])
    t = c.tensor(0)
    assert not t.aligned and not c[0].flags.aligned
    assert c[0].tolist() == [0, 1, 2, 3, 4, 5]
    with pytest.raises(BufferError):
        t.__dlpack__()
    x = t.to_torch()
    assert x.tolist() == [0, 1, 2, 3, 4, 5] and x.data_ptr() != c[0].ctypes.data


def test_unsigned_wide_types():
    """uint16/32/64 go out as kDLUInt: NumPy takes them; torch 1.13 has no
    such dtypes (newer torch may)."""
    arrays = [np.arange(3, dtype=d) for d in ("uint16", "uint32", "uint64")]
    c = tensio.container(arrays)
    for i, a in enumerate(arrays):
        y = np.from_dlpack(c.tensor(i))
        assert y.dtype == a.dtype and y.ctypes.data == a.ctypes.data
        try:
            x = torch.from_dlpack(c.tensor(i))
            assert x.tolist() == a.tolist()
        except RuntimeError as e:
            assert "Unsupported kUInt" in str(e)


ALL_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float16", "bfloat16", "float32", "float64"]


def _source(dtype, tmp_path):
    """A tensor of every dtype, read from a file where a format stores it
    (ONNX stores them all), so the export is from a mapping."""
    vals = np.array([0, 1, 0, 1, 1, 0]) if dtype == "bool" else np.arange(6) % 100
    if dtype == "bfloat16":
        f32 = vals.astype(np.float32).reshape(2, 3)
        item = tensio.Typed((f32.view(np.uint32) >> 16).astype(np.uint16), "bfloat16")
    else:
        f32 = vals.astype(dtype).reshape(2, 3)
        item = f32
    c = tensio.container([item], names=["t"])
    p = tmp_path / "t.ten"
    try:
        tensio.save(p, c)
    except tensio.Error:  # tenbin has no bool/bfloat16: a ZIO or rten file then
        p = tmp_path / ("t.zmsg" if dtype == "bool" else "t.onnx")
        if dtype == "bfloat16":
            g = tensio.GraphBuilder()
            g.output(g.constant("t", item))
            c = g.container()
        tensio.save(p, c)
    return tensio.open(p), f32


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_every_dtype_numpy_and_torch(tmp_path, dtype):
    """Every dtype from a file: np.from_dlpack, torch.from_dlpack and
    Tensor.to_torch round trips, zero-copy, or the consumer's documented
    refusal (NumPy 1.24 and torch 1.13 predate kDLBool; NumPy has no
    bfloat16; torch 1.13 has no uint16/32/64)."""
    c, want = _source(dtype, tmp_path)
    t = c.tensor("t")
    assert t.dtype_name == dtype
    ptr = c.tensor("t").array.ctypes.data
    if not t.aligned:  # ONNX raw_data may sit at any offset: no export, a copy
        with pytest.raises(BufferError):
            t.__dlpack__()
        x = t.to_torch()
        assert x.data_ptr() != ptr and str(x.dtype) == "torch." + dtype
        assert x.float().tolist() == want.astype(np.float32).tolist()
        return
    try:
        y = np.from_dlpack(t)
        assert y.ctypes.data == ptr and y.tolist() == want.tolist()
    except (BufferError, TypeError, RuntimeError) as e:
        assert dtype in ("bool", "bfloat16"), e
    wide_uint = dtype in ("uint16", "uint32", "uint64")
    try:
        x = torch.from_dlpack(t)
        assert x.data_ptr() == ptr
        assert x.float().tolist() == want.astype(np.float32).tolist()
    except RuntimeError as e:
        assert dtype == "bool" or wide_uint, e
    try:
        x = t.to_torch()
        assert x.data_ptr() == ptr
        assert x.float().tolist() == want.astype(np.float32).tolist()
        assert str(x.dtype) == "torch." + dtype
    except RuntimeError as e:
        assert wide_uint, e


def test_consumers_dlpack_request():
    """What this machine's consumers ask __dlpack__ for. A consumer passing
    max_version >= (1, 0) may still be given the unversioned capsule (the
    protocol allows it); the read-only flag of DLPack 1.0 then does not
    travel (docs/python.md)."""
    c = tensio.container([np.arange(4, dtype=np.float32)])
    calls = []

    class Spy:
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, **kw):
            calls.append(kw)
            return self.t.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    assert np.from_dlpack(Spy(c.tensor(0))).tolist() == [0, 1, 2, 3]
    assert torch.from_dlpack(Spy(c.tensor(0))).tolist() == [0, 1, 2, 3]
    for kw in calls:  # NumPy 1.24, torch 1.13: no max_version; newer ones pass it
        mv = kw.get("max_version")
        assert mv is None or tuple(mv) >= (1, 0)
