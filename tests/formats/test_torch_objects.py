#!/usr/bin/python3
"""Checkpoint contents beyond plain tensors, against Debian's torch 1.13 and
NumPy (issue 34): complex tensors, quantized tensors with their scale and
zero point, NumPy arrays and scalars pickled inside a checkpoint; complex in
.npz and ONNX; and hostile pickles for each new path.

  test_torch_objects.py TENSIO"""
import collections
import hashlib
import io
import json
import os
import pickle
import struct
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from clitest import TENSIO, run, check, report  # noqa: E402
from test_torch import Pickler, Storage, Tensor, archive  # noqa: E402  (torch.save-like zips)


def ls(path):
    return {t["name"]: t for t in json.loads(run("ls", "--json", "--hash", path).stdout)["tensors"]}


def meta(path):
    return json.loads(run("info", "--json", path).stdout).get("metadata", {})


def sha(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def same(what, t, name, dtype, arr, shape=None):
    check(what + " dtype", t["dtype"] == dtype, t["dtype"])
    want = list(arr.shape if shape is None else shape)
    check(what + " shape", t["shape"] == want, "%s vs %s" % (t["shape"], want))
    check(what + " values", t.get("sha256") == sha(arr), name)


# ------------------------------------------------------------------ complex

def complex_files(tmp):
    c64 = torch.tensor([[1 + 2j, 3 - 4j], [-0.5j, float("inf") + 0j]], dtype=torch.complex64)
    c128 = (torch.arange(6, dtype=torch.float64) * (1 - 0.25j)).reshape(2, 3)
    p = os.path.join(tmp, "complex.pt")
    torch.save({"c64": c64, "c128": c128, "ct": c128.t()}, p)
    got = ls(p)
    same("torch complex64", got["c64"], "c64", "complex64", c64.numpy())
    same("torch complex128", got["c128"], "c128", "complex128", c128.numpy())
    same("torch complex128 transposed", got["ct"], "ct", "complex128", c128.t().contiguous().numpy())
    d = run("dump", p, "c64").stdout
    check("dump prints re+imj", "1+2j" in d and "3-4j" in d and "inf+0j" in d, d)
    j = json.loads(run("dump", "--json", p, "c64").stdout)
    check("dump --json gives [re, im]", j["tensors"][0]["values"][:2] == [[1.0, 2.0], [3.0, -4.0]],
          str(j))
    s = json.loads(run("stats", "--json", p, "c128").stdout)["tensors"][0]
    mags = np.abs(c128.numpy()).ravel()
    check("stats over |z|", abs(s["max"] - mags.max()) < 1e-12 and abs(s["mean"] - mags.mean()) < 1e-12,
          str(s))
    # round trips: .npz (c8/c16), safetensors (C64 only), zio; refusals by name
    npz = os.path.join(tmp, "c.npz")
    run("convert", p, npz)
    z = np.load(npz)
    check("pt -> npz complex64", z["c64"].dtype == np.complex64 and np.array_equal(z["c64"], c64.numpy()))
    check("pt -> npz complex128", np.array_equal(z["ct"], c128.t().numpy()))
    back = os.path.join(tmp, "back.npz")
    run("convert", npz, back)
    check("npz -> npz bytes", ls(back)["c64"]["sha256"] == got["c64"]["sha256"])
    st = os.path.join(tmp, "c64.safetensors")
    p64 = os.path.join(tmp, "c64.pt")
    torch.save({"c64": c64}, p64)
    run("convert", p64, st)
    hdr = open(st, "rb").read()
    check("safetensors writes C64", b'"dtype":"C64"' in hdr, hdr[:120])
    check("safetensors C64 read back", ls(st)["c64"]["sha256"] == got["c64"]["sha256"])
    e = run("convert", p, os.path.join(tmp, "c.safetensors"), ok=False)
    check("safetensors refuses complex128 by name", e.returncode == 1 and "complex128" in e.stderr,
          e.stderr)
    for ext in ("btf", "ten", "gguf"):
        e = run("convert", "--drop-names", p64, os.path.join(tmp, "c." + ext), ok=False)
        check(ext + " refuses complex64 by name", e.returncode == 1 and "complex64" in e.stderr,
              e.stderr)
    zio = os.path.join(tmp, "c.zmsg")
    run("convert", npz, zio)
    check("zio c8/c16 round trip", ls(zio)["c128"]["sha256"] == got["c128"]["sha256"])
    # diff compares complex numbers as numpy.isclose does
    np.save(os.path.join(tmp, "a.npy"), np.array([1 + 1j, 2 - 2j], dtype=np.complex64))
    np.save(os.path.join(tmp, "b.npy"), np.array([1 + 1j, 2 - 2.5j], dtype=np.complex64))
    d = run("diff", "--json", os.path.join(tmp, "a.npy"), os.path.join(tmp, "b.npy"), ok=False)
    j = json.loads(d.stdout)["tensors"][0]
    check("diff complex", j["mismatched"] == 1 and j["first_mismatch"]["b"] == [2.0, -2.5] and
          abs(j["max_abs_diff"] - 0.5) < 1e-9, d.stdout)


def complex_onnx(tmp):
    a = np.array([[1 + 2j, 3 - 4j]], dtype=np.complex64)
    inits = [numpy_helper.from_array(a, "raw64"),
             helper.make_tensor("typed64", TensorProto.COMPLEX64, [2], [1 + 2j, 3 - 4j]),
             helper.make_tensor("typed128", TensorProto.COMPLEX128, [1], [0.5 - 0.25j]),
             numpy_helper.from_array(np.array([5 - 6j]), "raw128")]
    x = helper.make_tensor_value_info("x", TensorProto.COMPLEX64, [2])
    y = helper.make_tensor_value_info("y", TensorProto.COMPLEX64, [2])
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g", [x], [y], inits)
    m = helper.make_model(g)
    onnx.checker.check_model(m)
    p = os.path.join(tmp, "c.onnx")
    onnx.save(m, p)
    got = ls(p)
    same("onnx raw complex64", got["raw64"], "raw64", "complex64", a)
    same("onnx typed complex64", got["typed64"], "typed64", "complex64", a[0])
    same("onnx typed complex128", got["typed128"], "typed128", "complex128", np.array([0.5 - 0.25j]))
    same("onnx raw complex128", got["raw128"], "raw128", "complex128", np.array([5 - 6j]))
    out = os.path.join(tmp, "c2.onnx")
    run("convert", p, out)
    m2 = onnx.load(out)
    onnx.checker.check_model(m2)
    vals = {i.name: numpy_helper.to_array(i) for i in m2.graph.initializer}
    check("onnx -> onnx complex", np.array_equal(vals["typed64"], a[0]) and
          vals["typed128"].dtype == np.complex128 and vals["typed128"][0] == 0.5 - 0.25j, str(vals))
    check("onnx -> onnx input type", m2.graph.input[0].type.tensor_type.elem_type == TensorProto.COMPLEX64)
    # typed data of the wrong count
    bad = helper.make_tensor("typed64", TensorProto.COMPLEX64, [2], [1 + 2j, 3 - 4j])
    del bad.float_data[-1]
    m.graph.initializer[1].CopyFrom(bad)
    onnx.save(m, p)
    e = run("ls", p, ok=False)
    check("onnx complex typed data short", e.returncode == 1 and "typed data" in e.stderr, e.stderr)


# ---------------------------------------------------------------- quantized

def quantized(tmp):
    torch.manual_seed(3)
    q = torch.quantize_per_tensor(torch.tensor([0.5, 1.0, -1.5, 2.0]), 0.5, 3, torch.qint8)
    qu = torch.quantize_per_tensor(torch.randn(2, 3), 0.02, 128, torch.quint8)
    q32 = torch.quantize_per_tensor(torch.randn(5), 0.001, 0, torch.qint32)
    qc = torch.quantize_per_channel(torch.randn(3, 4), torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64),
                                    torch.tensor([0, 1, 2]), 0, torch.quint8)
    qc1 = torch.quantize_per_channel(torch.randn(2, 4), torch.rand(4, dtype=torch.float64) + 0.1,
                                     torch.tensor([0, -1, 2, 3]), 1, torch.qint8)
    p = os.path.join(tmp, "q.pt")
    torch.save({"q": q, "qu": qu, "q32": q32, "qc": qc, "qc1": qc1}, p)
    got, m = ls(p), meta(p)
    for name, t, dt in (("q", q, "int8"), ("qu", qu, "uint8"), ("q32", q32, "int32"),
                        ("qc", qc, "uint8"), ("qc1", qc1, "int8")):
        same("quantized " + name, got[name], name, dt, t.int_repr().numpy())
        check("quantized %s qscheme" % name, m.get(name + ".qscheme") == "torch." + str(t.qscheme()).split(".")[1],
              str(m.get(name + ".qscheme")))
        if t.qscheme() == torch.per_tensor_affine:
            check("quantized %s scale" % name, float(m[name + ".q_scale"]) == t.q_scale(), str(m))
            check("quantized %s zero point" % name, int(m[name + ".q_zero_point"]) == t.q_zero_point())
        else:
            check("quantized %s axis" % name, int(m[name + ".q_per_channel_axis"]) == t.q_per_channel_axis())
            same("quantized %s scales" % name, got[name + ".q_per_channel_scales"], name, "float64",
                 t.q_per_channel_scales().numpy())
            same("quantized %s zero points" % name, got[name + ".q_per_channel_zero_points"], name,
                 "int64", t.q_per_channel_zero_points().numpy())
    v = run("validate", p)
    check("quantized validates (qschemes are in the vocabulary)", v.returncode == 0, v.stdout)


# --------------------------------------------------------------------- NumPy

def numpy_inside(tmp):
    arrs = collections.OrderedDict(
        a=np.arange(6).reshape(2, 3), f=np.asfortranarray(np.arange(12, dtype="<f4").reshape(3, 4)),
        be=np.arange(5, dtype=">i4"), c=np.array([1 + 2j, -3j], dtype=np.complex64),
        e=np.zeros((0, 3), dtype=np.float16), z=np.array(7, dtype=np.uint16),
        hi=np.array([200, 255, 0, 128], dtype=np.uint8))
    scalars = {"b": np.float32(1.5), "i": np.int64(-3), "u": np.uint8(250), "t": np.bool_(True),
               "d": np.float64(0.1), "x": np.complex128(1 - 2j)}
    want_s = {"b": "1.5", "i": "-3", "u": "250", "t": "true", "d": "0.1", "x": "1-2j"}
    for proto in (2, 4):
        p = os.path.join(tmp, "np%d.pt" % proto)
        # bytes leaves: protocol 2 pickles b'' as bytes() and b'\xff\x00a' as
        # _codecs.encode(str, 'latin1'), both calls into the vocabulary
        torch.save(dict(arrs, **scalars, eb=b"", nb=b"\xff\x00a"), p, pickle_protocol=proto)
        loaded = torch.load(p)
        check("torch reads it back", np.array_equal(loaded["f"], arrs["f"]))
        got, m = ls(p), meta(p)
        for k, a in arrs.items():
            le = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<"))
            same("numpy p%d %s" % (proto, k), got[k], k, le.dtype.name, le, a.shape)
        for k, s in want_s.items():
            check("numpy p%d scalar %s" % (proto, k), m.get(k) == s, str(m.get(k)))
        check("bytes leaves p%d" % proto, m.get("eb") == "(0 bytes)" and m.get("nb") == "(3 bytes)",
              "%s %s" % (m.get("eb"), m.get("nb")))
        v = run("validate", p)
        check("numpy p%d validates" % proto, v.returncode == 0, v.stdout)
    # the example, as written
    p = os.path.join(tmp, "issue.pt")
    torch.save({"a": np.arange(6).reshape(2, 3), "b": np.float32(1.5)}, p)
    d = run("dump", p).stdout
    check("issue example", "[0, 1, 2, 3, 4, 5]" in d and ls(p)["a"]["shape"] == [2, 3], d)
    # protocol 4, stored uncompressed: the array is a view into the file
    j = json.loads(run("ls", "--json", os.path.join(tmp, "np4.pt")).stdout)
    check("ls --json lists it", any(t["name"] == "a" for t in j["tensors"]))
    # object arrays: refused by name
    p = os.path.join(tmp, "obj.pt")
    torch.save({"o": np.array([1, "x"], dtype=object)}, p)
    e = run("ls", p, ok=False)
    check("object array refused by name", e.returncode == 1 and "'o'" in e.stderr and
          "object array" in e.stderr, e.stderr)
    p = os.path.join(tmp, "rec.pt")
    torch.save({"r": np.zeros(2, dtype=[("a", "<i4")])}, p)
    e = run("ls", p, ok=False)
    check("structured array refused", e.returncode == 1 and "structured" in e.stderr and
          "'r'" in e.stderr, e.stderr)


# ------------------------------------------------------------------ hostile

class G:
    """A global by module and name, pickled as GLOBAL."""
    def __init__(self, mod, name):
        self.mod, self.name = mod, name


class Call:
    def __init__(self, fn, args, state=None):
        self.fn, self.args, self.state = fn, args, state


class P(pickle._Pickler):
    """Writes G as GLOBAL, Call as REDUCE (+ BUILD), Storage as a persistent id."""
    persistent_id = Pickler.persistent_id

    def save(self, obj, save_persistent_id=True):
        if isinstance(obj, G):
            self.write(b"c" + obj.mod.encode() + b"\n" + obj.name.encode() + b"\n")
            return
        if isinstance(obj, Call):
            self.save(obj.fn)
            self.save(obj.args)
            self.write(pickle.REDUCE)
            if obj.state is not None:
                self.save(obj.state)
                self.write(pickle.BUILD)
            return
        super().save(obj, save_persistent_id)


def dumps(obj, proto=2):
    f = io.BytesIO()
    P(f, protocol=proto).dump(obj)
    return f.getvalue()


NDARRAY, DTYPE = G("numpy", "ndarray"), G("numpy", "dtype")
RECON = G("numpy.core.multiarray", "_reconstruct")


def nd(shape, code, data, order="<", state=None, fortran=False):
    dt = Call(DTYPE, (code, False, True), (3, order, None, None, None, -1, -1, 0))
    st = state if state is not None else (1, shape, dt, fortran, data)
    return Call(RECON, (NDARRAY, (0,), b"b"), st)


def attempt(what, data, ok=False, must=(), opts=()):
    with tempfile.NamedTemporaryFile(suffix=".pt") as f:
        f.write(data)
        f.flush()
        p = subprocess.run([TENSIO, "ls", "--json", "--hash", *opts, f.name], capture_output=True,
                           text=True, timeout=60)
        check(what + ": no crash", p.returncode in (0, 1), "exit %d %s" % (p.returncode, p.stderr))
        check(what + (": read" if ok else ": refused"), p.returncode == (0 if ok else 1),
              p.stdout + p.stderr)
        for m in must:
            check(what + ": says " + m, m in p.stderr, p.stderr)
        if not ok:
            check(what + ": names the format and an offset", "torch: offset " in p.stderr, p.stderr)
        return p


def hostile():
    six = struct.pack("<6q", *range(6))
    attempt("ndarray made by hand", archive(dumps({"a": nd((2, 3), "i8", six)}, 3)), ok=True)
    attempt("ndarray protocol 2 latin-1", archive(dumps({"a": nd((2, 3), "i8", six)}, 2)), ok=True)
    attempt("ndarray shape x itemsize past its bytes",
            archive(dumps({"a": nd((2, 4), "i8", six)}, 3)), must=("'a'", "needs 64 bytes"))
    attempt("ndarray huge shape", archive(dumps({"a": nd((2 ** 62, 2 ** 62), "i8", six)}, 3)),
            must=("overflows",))
    attempt("ndarray negative dim", archive(dumps({"a": nd((-1, 6), "i8", six)}, 3)),
            must=("dim 0",))
    attempt("ndarray truncated BUILD state", archive(dumps({"a": nd(None, None, None, state=(1, (2, 3)))}, 3)),
            must=("5 items",))
    attempt("ndarray no state", archive(dumps({"a": Call(RECON, (NDARRAY, (0,), b"b"))}, 3)),
            must=("no state",))
    attempt("ndarray bad dtype string", archive(dumps({"a": nd((6,), "q9", six)}, 3)),
            must=("'q9'",))
    attempt("ndarray unicode dtype", archive(dumps({"a": nd((1,), "U3", b"x" * 12)}, 3)),
            must=("'U3'",))
    attempt("ndarray object dtype", archive(dumps({"a": nd((1,), "O8", [1])}, 3)),
            must=("object array",))
    attempt("ndarray bad byte order", archive(dumps({"a": nd((6,), "i8", six, order="!")}, 3)),
            must=("byte order",))
    attempt("ndarray dtype not a call", archive(dumps({"a": Call(RECON, (NDARRAY, (0,), b"b"),
                                                                 (1, (6,), "i8", False, six))}, 3)),
            must=("numpy.dtype",))
    attempt("ndarray of a subclass", archive(dumps({"a": Call(RECON, (G("numpy.ma", "MaskedArray"), (0,), b"b"),
                                                              (1, (6,), None, False, six))}, 3)),
            must=("subclass",))
    attempt("ndarray bad latin-1 text", archive(dumps({"a": nd((2,), "u1", Call(G("_codecs", "encode"), ("\u20ac", "latin1")))}, 3)),
            must=("U+00FF",))
    attempt("ndarray data neither bytes nor text", archive(dumps({"a": nd((2,), "u1", 5)}, 3)),
            must=("neither bytes",))
    attempt("ndarray fortran not a bool", archive(dumps({"a": nd((6,), "i8", six, fortran=1)}, 3)),
            must=("is_fortran",))
    attempt("ndarray 100 dims", archive(dumps({"a": nd((1,) * 100, "i8", six[:8])}, 3)),
            must=("100 dims",))
    big = nd((1 << 20,), "f8", Call(G("_codecs", "encode"), ("\0" * (8 << 20), "latin1")))
    attempt("ndarray past max_dense_bytes", archive(dumps({"a": big}, 2)),
            must=("max_dense_bytes",), opts=("--max-dense-bytes", "1000000"))
    # the limit counts every copy: the second of two arrays that fit alone
    # (text data is decoded into a copy; bytes in the mapped file are a view)
    half = lambda: nd((75000,), "f8", Call(G("_codecs", "encode"), ("\0" * 600000, "latin1")))
    attempt("two ndarrays past max_dense_bytes together",
            archive(dumps({"a": half(), "b": half()}, 2)),
            must=("'b'", "needs 600000 bytes; with the 600000 copied before, above max_dense_bytes"),
            opts=("--max-dense-bytes", "1000000"))
    attempt("two ndarrays within max_dense_bytes", archive(dumps({"a": half(), "b": half()}, 2)),
            ok=True, opts=("--max-dense-bytes", "1200000"))
    sc = G("numpy.core.multiarray", "scalar")
    f4 = Call(DTYPE, ("f4", False, True), (3, "<", None, None, None, -1, -1, 0))
    attempt("scalar short", archive(dumps({"s": Call(sc, (f4, b"\0\0"))}, 3)), must=("'s'", "needs 4 bytes"))
    attempt("scalar without data", archive(dumps({"s": Call(sc, (f4,))}, 3)), must=("(dtype, data)",))
    # quantized: parameters that do not fit the tensor
    qs = lambda key, n, cls="QInt8Storage": Storage(key, n, G("torch", cls))
    rq = G("torch._utils", "_rebuild_qtensor")
    rt = G("torch._utils", "_rebuild_tensor_v2")
    od = Call(G("collections", "OrderedDict"), ())

    def qt(params, storage=None, size=(2, 3)):
        return Call(rq, (storage or qs("0", 6), 0, size, (size[1], 1) if len(size) == 2 else (1,),
                         params, False, od))

    def tensor(key, n, cls, size):
        return Call(rt, (Storage(key, n, G("torch", cls)), 0, size, (1,), False, od))

    recs = {"0": bytes(range(6)), "1": struct.pack("<3d", 0.1, 0.2, 0.3), "2": struct.pack("<3q", 0, 1, 2)}
    pta = G("torch", "per_tensor_affine")
    pca = G("torch", "per_channel_affine")
    attempt("qtensor per tensor", archive(dumps({"q": qt((pta, 0.5, 3))}), recs), ok=True)
    ok = (pca, tensor("1", 2, "DoubleStorage", (2,)), tensor("2", 2, "LongStorage", (2,)), 0)
    attempt("qtensor per channel", archive(dumps({"q": qt(ok)}), recs), ok=True)
    attempt("qtensor scales count not matching the axis",
            archive(dumps({"q": qt((pca, tensor("1", 3, "DoubleStorage", (3,)),
                                    tensor("2", 2, "LongStorage", (2,)), 0))}), recs),
            must=("'q'", "scales", "2 elements"))
    attempt("qtensor zero points count not matching the axis",
            archive(dumps({"q": qt((pca, tensor("1", 3, "DoubleStorage", (3,)),
                                    tensor("2", 2, "LongStorage", (2,)), 1))}), recs),
            must=("zero_points", "3 elements"))
    attempt("qtensor scales not a tensor",
            archive(dumps({"q": qt((pca, [0.1, 0.2], tensor("2", 2, "LongStorage", (2,)), 0))}), recs),
            must=("not a tensor",))
    attempt("qtensor axis past the rank", archive(dumps({"q": qt(ok[:3] + (2,))}), recs),
            must=("axis 2",))
    attempt("qtensor negative axis", archive(dumps({"q": qt(ok[:3] + (-1,))}), recs),
            must=("axis -1",))
    attempt("qtensor params missing", archive(dumps({"q": qt((pta, 0.5))}), recs),
            must=("(qscheme, scale, zero_point)",))
    attempt("qtensor no qscheme", archive(dumps({"q": qt((0.5, 3))}), recs), must=("qscheme",))
    attempt("qtensor symmetric scheme", archive(dumps({"q": qt((G("torch", "per_tensor_symmetric"), 0.5, 0))}), recs),
            must=("per_tensor_symmetric",))
    attempt("qtensor over a float storage",
            archive(dumps({"q": qt((pta, 0.5, 3), Storage("0", 1, G("torch", "FloatStorage")))}), recs),
            must=("non-quantized",))
    attempt("quantized storage under _rebuild_tensor_v2",
            archive(dumps({"q": tensor("0", 6, "QInt8Storage", (6,))}), recs), must=("quantized storage",))
    attempt("qtensor past its storage", archive(dumps({"q": qt((pta, 0.5, 3), size=(3, 3))}), recs),
            must=("reaches past",))
    attempt("qtensor quint4x2 refused by name",
            archive(dumps({"q": qt((pta, 0.5, 3), qs("0", 6, "QUInt4x2Storage"))}), recs),
            must=("QUInt4x2Storage",))


# ------------------------------------------------------- pickled modules

class Block(torch.nn.Module):
    """Parameters, buffers persistent and not, a parameter that is None, a
    ModuleList, a tied weight and attributes of its own."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, bias=False)  # _parameters['bias'] = None
        self.bn = torch.nn.BatchNorm2d(4)
        self.layers = torch.nn.ModuleList([torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)])
        self.head = torch.nn.Linear(4, 4)
        self.head.weight = self.layers[0].weight  # tied: listed under both names
        self.register_buffer("ids", torch.arange(5))
        self.register_buffer("scratch", torch.ones(3), persistent=False)
        self.register_buffer("empty", None)
        self.names = ["cat", "dog"]
        self.scale = 0.5


def module_names(module):
    """state_dict()'s names and arrays, and the non-persistent buffers beside
    them (a pickled module holds them; state_dict() leaves them out)."""
    out = {k: v for k, v in module.state_dict(keep_vars=False).items()}
    for mname, m in module.named_modules():
        for b in getattr(m, "_non_persistent_buffers_set", ()):
            if getattr(m, b) is not None:
                out[(mname + "." if mname else "") + b] = getattr(m, b)
    return out


def modules(tmp):
    """torch.save(model): tensors under the names state_dict() gives them."""
    import torchvision
    torch.manual_seed(3)
    blk = Block()
    cases = [("resnet18", torchvision.models.resnet18(), ""),
             ("block", blk, ""),
             ("checkpoint of a module", {"model": blk, "epoch": 3}, "model."),
             ("DataParallel", torch.nn.DataParallel(blk), ""),
             ("Sequential", torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(),
                                                torch.nn.Linear(3, 1)), "")]
    for what, obj, prefix in cases:
        module = obj["model"] if isinstance(obj, dict) else obj
        want = {prefix + k: v for k, v in module_names(module).items()}
        for layout, kw in (("zip", {}), ("legacy", {"_use_new_zipfile_serialization": False})):
            p = os.path.join(tmp, "module.pt")
            torch.save(obj, p, **kw)
            got = ls(p)
            w = "%s (%s)" % (what, layout)
            check(w + ": the names state_dict() gives", sorted(got) == sorted(want),
                  "%s\nvs\n%s" % (sorted(set(got) ^ set(want))[:8], len(want)))
            for name, t in want.items():
                if name in got:
                    same(w + " " + name, got[name], name, str(t.dtype).replace("torch.", ""),
                         t.detach().numpy())
            listed = [t["name"] for t in json.loads(run("ls", "--json", p).stdout)["tensors"]]
            order = [k for k in (prefix + k for k in module.state_dict()) if k in listed]
            check(w + ": in state_dict()'s order",
                  [n for n in listed if n in set(order)] == order, str(listed[:6]))
    # attributes beside them, under the module's name
    p = os.path.join(tmp, "block.pt")
    torch.save({"model": blk}, p)
    m = meta(p)
    check("module attributes", m.get("model.names.1") == "dog" and m.get("model.scale") == "0.5"
          and m.get("model.conv.in_channels") == "3" and m.get("model.training") == "true",
          str({k: v for k, v in m.items() if "names" in k or "scale" in k}))
    regs = [k for k in list(m) + list(ls(p))
            if {"_parameters", "_buffers", "_modules"} & set(k.split("."))]
    check("no registry in the names", not regs, str(regs[:4]))
    check("a None parameter is no name", "model.conv.bias" not in m and "model.empty" not in m,
          str([k for k in m if "bias" in k][:4]))
    # converted: the state dict torch loads back into the module
    st = os.path.join(tmp, "block.safetensors")
    run("convert", "--drop-metadata", os.path.join(tmp, "module.pt"), st)  # the Sequential
    out = os.path.join(tmp, "sd.pt")
    run("convert", "--drop-metadata", p, out)
    sd = torch.load(out, weights_only=True)
    fresh = Block()
    res = fresh.load_state_dict({k[len("model."):]: v for k, v in sd.items()}, strict=False)
    check("loads into the module", not res.missing_keys and res.unexpected_keys == ["scratch"],
          str(res))
    check("the same weights", all(torch.equal(fresh.state_dict()[k], blk.state_dict()[k])
                                  for k in blk.state_dict()), "")
    # a module holding itself (pickle's memo makes the cycle): each name once
    cyc = torch.nn.Linear(2, 2)
    cyc._modules["me"] = cyc
    p = os.path.join(tmp, "cycle.pt")
    torch.save(cyc, p)
    check("a module holding itself", sorted(ls(p)) == ["bias", "weight"], str(sorted(ls(p))))


def hostile_modules():
    """Dicts that look like a module's state and are not quite one."""
    w = Tensor(Storage("0", 4), 0, (4,), (1,))
    rec = {"0": struct.pack("<4f", 1, 2, 3, 4)}

    def Obj(state):  # an object of a class outside the vocabulary, with a state
        return Call(G("mymodels", "Net"), (), state)

    def names(obj):
        p = attempt("module-like " + str(sorted(obj))[:40], archive(dumps(obj, 2), rec), ok=True)
        return sorted(t["name"] for t in json.loads(p.stdout)["tensors"]) if p.stdout else []
    reg = {"_parameters": {"w": w, "b": None}, "_buffers": {}, "_modules": {}}
    got = names({"m": Obj(reg)})
    check("a module's state: its names", got == ["m.w"], str(got))
    got = names({"m": Obj({"_parameters": [w], "_buffers": {}, "_modules": {}})})
    check("a registry not a dict: walked as it is", got == ["m._parameters.0"], str(got))
    got = names({"m": Obj({"_parameters": {"w": w}, "_buffers": {}})})
    check("two of the three registries: walked as it is", got == ["m._parameters.w"], str(got))
    got = names({"m": Obj(dict(reg, w=w))})
    check("an attribute and a parameter of one name: one kept", got == ["m.w"], str(got))
    # modules nested in modules: named through every level, and as deep as
    # max_pickle_depth allows (each level is an object, its state, a registry)
    def nest(levels):
        m = Obj(reg)
        for _ in range(levels):
            m = Obj({"_parameters": {}, "_buffers": {}, "_modules": {"a": m}})
        return {"m": m}
    for levels, ok in ((5, True), (40, False)):
        with tempfile.NamedTemporaryFile(suffix=".pt") as f:
            f.write(archive(dumps(nest(levels), 2), rec))
            f.flush()
            p = subprocess.run([TENSIO, "ls", "--json", f.name], capture_output=True, text=True,
                               timeout=60, env=dict(os.environ, TENSIO_LIMITS="max_pickle_depth=64"))
            if ok:
                got = [t["name"] for t in json.loads(p.stdout)["tensors"]] if p.stdout else []
                check("modules 5 deep", got == ["m" + ".a" * levels + ".w"], p.stderr + str(got))
            else:
                check("modules 40 deep: refused at max_pickle_depth",
                      p.returncode == 1 and "max_pickle_depth" in p.stderr, p.stderr)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        modules(tmp)
        hostile_modules()
        complex_files(tmp)
        complex_onnx(tmp)
        quantized(tmp)
        numpy_inside(tmp)
        hostile()
    return report()


if __name__ == "__main__":
    sys.exit(main())
