#!/usr/bin/python3
"""tensio's torch format against Debian's python3-torch, and hostile pickles.

  test_torch.py TENSIO

- checkpoints written here by torch.save (zip layout and the legacy layout,
  _use_new_zipfile_serialization=False) and torch.jit.save (TorchScript):
  every dtype both have, views with offsets and strides (transposed, sliced,
  expanded), shared storages, Parameters, an optimizer's state dict, scalars
  and strings beside the tensors: `tensio ls --json --hash` gives each
  tensor's name, dtype, shape and the sha256 of its C-order bytes as torch
  loads them; `info --json` the non-tensor leaves and the tied weights.
- hostile pickles made by hand, each refused or reported with a message
  naming the format and a byte offset, never a crash: REDUCE/NEWOBJ/BUILD of
  os/posix/subprocess/builtins/runpy globals, STACK_GLOBAL with names from
  the memo, INST/OBJ, globals reached through the memo, memo bombs,
  100,000-deep nesting, lengths past the end, SETITEM on a list, APPEND on
  a dict, missing/short storage records, size x stride overflow, negative
  strides and offsets, a zip bomb in a deflated record, and a truncation at
  every byte of a small checkpoint."""
import collections
import hashlib
import io
import json
import os
import pickle
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from clitest import TENSIO, failures, run, check, report, lines_by_file  # noqa: E402

DTYPES = {torch.float32: "float32", torch.float64: "float64", torch.float16: "float16",
          torch.bfloat16: "bfloat16", torch.int8: "int8", torch.uint8: "uint8",
          torch.int16: "int16", torch.int32: "int32", torch.int64: "int64", torch.bool: "bool",
          torch.complex64: "complex64", torch.complex128: "complex128"}


def tbytes(t):
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def flat(obj, prefix=""):
    """torch's object flattened as tensio names it: [(name, value)]."""
    out = []
    if isinstance(obj, torch.Tensor):
        return [(prefix, obj)]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += flat(v, (prefix + "." if prefix else "") + str(k))
    elif isinstance(obj, (list, tuple)):
        for k, v in enumerate(obj):
            out += flat(v, (prefix + "." if prefix else "") + str(k))
    else:
        out.append((prefix, obj))
    return out


def info(path, ok=True):
    p = run("info", "--json", path, ok=ok)
    return json.loads(p.stdout) if p.stdout.strip() else {}


def compare(what, path, obj):
    """tensio's listing of path against obj (what torch.load gives)."""
    ts = json.loads(run("ls", "--json", "--hash", path).stdout)["tensors"]
    want = [(n, v) for n, v in flat(obj) if isinstance(v, torch.Tensor)]
    check(what + " count", len(ts) == len(want), "%d vs %d" % (len(ts), len(want)))
    for t, (name, v) in zip(ts, want):
        w = "%s %s" % (what, name)
        check(w + " name", t["name"] == name, str(t["name"]))
        check(w + " dtype", t["dtype"] == DTYPES[v.dtype], t["dtype"])
        check(w + " shape", t["shape"] == list(v.shape), str(t["shape"]))
        check(w + " sha256", t.get("sha256") == hashlib.sha256(tbytes(v)).hexdigest())
    meta = info(path).get("metadata", {})
    for name, v in flat(obj):
        if isinstance(v, torch.Tensor):
            continue
        if isinstance(v, bool):
            want_s = "true" if v else "false"
        elif isinstance(v, (int, str)):
            want_s = str(v)
        elif isinstance(v, float):
            check(what + " meta " + name, float(meta.get(name, "nan")) == v, str(meta.get(name)))
            continue
        elif v is None:
            want_s = "None"
        else:
            continue
        check(what + " meta " + name, meta.get(name) == want_s, "%r vs %r" % (meta.get(name), want_s))


class WithConstant(torch.nn.Module):
    """Frozen, its buffer becomes a TorchScript constant (constants.pkl)."""
    def __init__(self):
        super().__init__()
        self.register_buffer("b", torch.arange(3.0) * 1.5)

    def forward(self, x):
        return x + torch.tensor([1.0, 2.0, 4.0]) + self.b


def real_files(tmp):
    torch.manual_seed(1)
    sd = collections.OrderedDict()
    for dt in DTYPES:
        if dt == torch.bool:
            sd["t_bool"] = torch.rand(3, 5) > 0.5
        elif dt.is_complex:
            sd["t_" + DTYPES[dt]] = torch.randn(4, 3, dtype=dt) * 100
        elif dt.is_floating_point:
            sd["t_" + DTYPES[dt]] = (torch.randn(4, 3) * 100).to(dt)
        else:
            sd["t_" + DTYPES[dt]] = torch.randint(-100 if dt != torch.uint8 else 0, 100, (2, 3, 4)).to(dt)
    base = torch.arange(60, dtype=torch.float32).reshape(3, 4, 5)
    sd["base"] = base
    sd["transposed"] = base.transpose(0, 2)
    sd["sliced"] = base[1:, ::2, 1:4]
    sd["row"] = base[2, 1]
    sd["expanded"] = torch.arange(3.0).reshape(3, 1).expand(3, 4)
    sd["scalar"] = torch.tensor(2.5, dtype=torch.float64)
    sd["empty"] = torch.zeros(0, 3)
    sd["narrow"] = torch.arange(100, dtype=torch.int32)[10:20]
    lin = torch.nn.Linear(4, 3)
    sd["param"] = lin.weight  # a Parameter
    sd["tied"] = lin.weight
    opt = torch.optim.Adam(lin.parameters(), lr=0.01)
    lin(torch.randn(2, 4)).sum().backward()
    opt.step()
    ckpt = {"model": sd, "optimizer": opt.state_dict(), "epoch": 3, "loss": 0.125,
            "name": "run-1", "flag": True, "nothing": None,
            "nested": [1, (2.5, "x"), {"k": torch.ones(2)}]}
    for layout, kw in (("zip", {}), ("legacy", {"_use_new_zipfile_serialization": False})):
        p = os.path.join(tmp, layout + ".pt")
        torch.save(ckpt, p, **kw)
        back = torch.load(p)
        compare(layout, p, back)
        inf = info(p)
        check(layout + " layout", inf["props"].get("layout") == layout, str(inf["props"]))
        check(layout + " tied", inf["props"].get("shares_storage.model.tied") == "model.param",
              str(inf["props"]))
        check(layout + " no findings", inf["finding_count"] == 0, str(inf["findings"]))
        v = subprocess.run([TENSIO, "validate", p], capture_output=True, text=True)
        check(layout + " validate", v.returncode == 0, v.stdout + v.stderr)
    # a bare Parameter and a bare tensor as the root
    p = os.path.join(tmp, "param.pt")
    torch.save(torch.nn.Parameter(torch.arange(6.0).reshape(2, 3)), p)
    ts = json.loads(run("ls", "--json", "--hash", p).stdout)["tensors"]
    check("root parameter", len(ts) == 1 and ts[0]["shape"] == [2, 3], str(ts))
    # an archive prefix other than the file's name
    p = os.path.join(tmp, "renamed.pt")
    buf = io.BytesIO()
    torch.save({"a": torch.ones(3)}, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zi, zipfile.ZipFile(p, "w") as zo:
        for i in zi.infolist():
            zo.writestr("other_prefix/" + i.filename.split("/", 1)[1], zi.read(i))
    compare("prefix", p, {"a": torch.ones(3)})
    # TorchScript: parameters and buffers of the scripted module
    m = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.BatchNorm2d(3), torch.nn.ReLU(),
                            torch.nn.Flatten(), torch.nn.Linear(3 * 4 * 4, 2))
    p = os.path.join(tmp, "script.pt")
    torch.jit.save(torch.jit.script(m), p)
    sd = torch.jit.load(p).state_dict()
    ts = json.loads(run("ls", "--json", "--hash", p).stdout)["tensors"]
    got = {t["name"]: t for t in ts}
    for name, v in sd.items():
        t = got.get(name)
        check("script " + name, t is not None and t["sha256"] == hashlib.sha256(tbytes(v)).hexdigest(),
              str(sorted(got)))
    check("script layout", info(p)["props"].get("layout") == "torchscript")
    v = subprocess.run([TENSIO, "validate", p], capture_output=True, text=True)
    check("script validate", v.returncode == 0, v.stdout + v.stderr)
    # a big-endian archive (byteorder "big"): the storages swapped on read
    # (views of the mapped records, swapped on the way out; w a transposed
    # view of its storage, as a .T is saved; b 2 MiB)
    import numpy as np
    sd = collections.OrderedDict(f=torch.randn(3, 2), d=torch.randn(4, dtype=torch.float64),
                                 w=torch.randn(256, 512).T, b=torch.randn(1024, 512),
                                 i=torch.arange(5, dtype=torch.int16), u=torch.arange(3, dtype=torch.uint8),
                                 c=torch.randn(3, dtype=torch.complex64),  # swapped part by part
                                 z=torch.randn(2, 2, dtype=torch.complex128))
    buf = io.BytesIO()
    torch.save(sd, buf)
    kinds = {}
    p = os.path.join(tmp, "big.pt")
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zi, zipfile.ZipFile(p, "w") as zo:
        for name, t in sd.items():  # each tensor has its own storage, keys in order
            kinds[str(len(kinds))] = t.numpy().dtype
        for i in zi.infolist():
            data = zi.read(i)
            if "/data/" in i.filename:
                data = np.frombuffer(data, kinds[i.filename.rsplit("/", 1)[1]]).byteswap().tobytes()
            if not i.filename.endswith("byteorder"):
                zo.writestr(i.filename, data)
        zo.writestr("archive/byteorder", b"big")
    compare("big-endian", p, sd)
    check("big-endian prop", info(p)["props"].get("byteorder") == "big")
    # nothing is copied at open: a limit of 1 MiB on copies does not stop
    # the 2 MiB storage (it did when open swapped a copy), and a convert
    # streams them, swapped, into a little-endian checkpoint torch reads back
    run("ls", "--json", "--hash", "--max-dense-bytes", "1M", p)  # exit 0, or it raises
    out = os.path.join(tmp, "big_out.pt")
    run("convert", "--max-dense-bytes", "1M", p, out)
    back = torch.load(out, weights_only=True)
    for name, v in sd.items():
        check("big-endian converted " + name, torch.equal(back[name], v))
    # TorchScript constants (a frozen module): constants.pkl, constants/<key>
    p = os.path.join(tmp, "frozen.pt")
    torch.jit.save(torch.jit.freeze(torch.jit.script(WithConstant()).eval()), p)
    ts = json.loads(run("ls", "--json", "--hash", p).stdout)["tensors"]
    want = {hashlib.sha256(tbytes(t)).hexdigest()
            for t in (torch.tensor([1.0, 2.0, 4.0]), torch.arange(3.0) * 1.5)}
    check("constants", {t["sha256"] for t in ts} == want and
          all(t["name"].startswith("constants.") for t in ts), str(ts))
    # a tensor nested 20 dicts deep (the walk's depth is max_pickle_depth's, not the
    # bound on tensors rebuilt from tensors)
    p = os.path.join(tmp, "deep.pt")
    d = torch.ones(1)
    for k in range(20):
        d = {"k%d" % k: d}
    torch.save(d, p)
    e = run("ls", "--json", p)
    check("deep tensor read", json.loads(e.stdout)["tensors"][0]["name"].count(".") == 19, e.stdout)
    # the empty name: a state dict key "" is a name (not the unnamed root tensor),
    # also nested ("a" + "." + ""); written back under "" (torch.load sees it)
    p = os.path.join(tmp, "empty_name.pt")
    obj = {"": torch.arange(3.0), "a": {"": torch.ones(2, dtype=torch.int16)}}
    torch.save(obj, p)
    compare("empty name", p, torch.load(p))
    e = json.loads(run("ls", "--json", p).stdout)["tensors"]
    check("empty name is a name", [t["name"] for t in e] == ["", "a."], str(e))
    out = os.path.join(tmp, "empty_name_out.pt")
    run("convert", p, out)
    back = torch.load(out, weights_only=True)
    check("empty name written", sorted(back) == ["", "a."] and
          torch.equal(back[""], obj[""]), str(back))
    # a str leaf holding NUL bytes is metadata with its length (JSON \u0000)
    p = os.path.join(tmp, "nul_str.pt")
    torch.save({"w": torch.ones(1), "note": "a\0b\0"}, p)
    meta = info(p).get("metadata", {})
    check("str with NUL", meta.get("note") == "a\0b\0", repr(meta))
    root = json.loads(run("ls", "--json", os.path.join(tmp, "param.pt")).stdout)["tensors"]
    check("root tensor unnamed", root[0]["name"] is None, str(root))
    # views whose dtype .npy lacks, written as float32 (--widen): widened run by run,
    # across the 64 KiB pieces the widening goes in, as torch itself widens them
    wd = collections.OrderedDict()
    wd["bf16_t"] = (torch.randn(300, 200) * 100).to(torch.bfloat16).t()
    wd["bf16_s"] = (torch.randn(40, 1000) * 100).to(torch.bfloat16)[::3, 5:900]
    if hasattr(torch, "float8_e4m3fn"):
        wd["f8_t"] = torch.randn(200, 150).to(torch.float8_e4m3fn).t()
    for name, t in wd.items():
        p = os.path.join(tmp, "widen_%s.pt" % name)
        torch.save({name: t}, p)
        out = os.path.join(tmp, "widen_%s.npy" % name)
        r = subprocess.run([TENSIO, "convert", "--widen", p, out], capture_output=True, text=True)
        got = np.load(out) if r.returncode == 0 else None
        check("widened view " + name, got is not None and got.dtype == np.float32 and
              np.array_equal(got, t.float().numpy()), r.stderr)
    # complex: read (values, quantized tensors and NumPy objects: test_torch_objects.py)
    p = os.path.join(tmp, "complex.pt")
    torch.save({"c": torch.ones(2, dtype=torch.complex64)}, p)
    e = run("ls", "--json", p)
    check("complex read", json.loads(e.stdout)["tensors"][0]["dtype"] == "complex64", e.stdout)


# ----------------------------------------------------------------- hostile

def archive(pkl, records=None, prefix="archive", deflate=()):
    """A torch.save-like zip: prefix/data.pkl, prefix/data/<key>, version."""
    f = io.BytesIO()
    with zipfile.ZipFile(f, "w") as z:
        z.writestr(prefix + "/data.pkl", pkl)
        for k, v in (records or {}).items():
            z.writestr(zipfile.ZipInfo(prefix + "/data/" + k), v,
                       compress_type=zipfile.ZIP_DEFLATED if k in deflate else zipfile.ZIP_STORED)
        z.writestr(prefix + "/version", b"3\n")
    return f.getvalue()


class Storage:
    def __init__(self, key, numel, cls=torch.FloatStorage):
        self.key, self.numel, self.cls = key, numel, cls


class Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, Storage):
            return ("storage", obj.cls, obj.key, "cpu", obj.numel)
        return None


class Tensor:
    """REDUCE of _rebuild_tensor_v2 with arguments of our choosing."""
    def __init__(self, storage, offset, size, stride):
        self.args = (storage, offset, tuple(size), tuple(stride), False, collections.OrderedDict())

    def __reduce__(self):
        return (torch._utils._rebuild_tensor_v2, self.args)


def dumps(obj):
    f = io.BytesIO()
    Pickler(f, protocol=2).dump(obj)
    return f.getvalue()


def attempt(what, data, expect_ok=False, must=(), validate_rc=None, opts=()):
    """Runs ls (and validate) on data; checks for no crash and the message."""
    with tempfile.NamedTemporaryFile(suffix=".pt") as f:
        f.write(data)
        f.flush()
        p = subprocess.run([TENSIO, "ls", *opts, f.name], capture_output=True, text=True, timeout=60)
        check(what + ": no crash", p.returncode in (0, 1), "exit %d %s" % (p.returncode, p.stderr))
        if expect_ok:
            check(what + ": read", p.returncode == 0, p.stderr)
        else:
            check(what + ": refused", p.returncode == 1, p.stdout)
        msg = p.stderr
        if validate_rc is not None:
            v = subprocess.run([TENSIO, "validate", *opts, f.name], capture_output=True, text=True,
                               timeout=60)
            check(what + ": validate exit", v.returncode == validate_rc, v.stdout + v.stderr)
            msg += v.stdout + v.stderr
        for m in must:
            check(what + ": says " + m, m in msg, msg)
        if not expect_ok:
            check(what + ": names the format and an offset", "torch: offset " in msg, msg)
        return msg


def info_bytes(data):
    with tempfile.NamedTemporaryFile(suffix=".pt") as f:
        f.write(data)
        f.flush()
        p = subprocess.run([TENSIO, "info", "--json", f.name], capture_output=True, text=True)
        return json.loads(p.stdout) if p.stdout.strip() else {}


def hostile():
    import builtins
    import runpy

    class Call:
        def __init__(self, fn, *args):
            self.fn, self.args = fn, args

        def __reduce__(self):
            return (self.fn, self.args)

    good = Tensor(Storage("0", 4), 0, (2, 2), (2, 1))
    rec = {"0": struct.pack("<4f", 1, 2, 3, 4)}
    # (protocol 2 stores Python 2's module names: __builtin__, commands)
    for fn, name in ((os.system, "posix.system"), (subprocess.Popen, "commands.Popen"),
                     (builtins.eval, "__builtin__.eval"), (builtins.exec, "__builtin__.exec"),
                     (builtins.getattr, "__builtin__.getattr"),
                     (builtins.__import__, "__builtin__.__import__"),
                     (runpy._run_code, "runpy._run_code")):
        pkl = dumps(collections.OrderedDict(w=good, evil=Call(fn, "id")))
        mod, fname = name.split(".")
        off = pkl.index(b"c" + mod.encode() + b"\n" + fname.encode() + b"\n")
        z = archive(pkl, rec)
        at = z.index(pkl) + off  # the GLOBAL opcode's offset in the file
        attempt("REDUCE " + name, z, expect_ok=True, validate_rc=1,
                must=("calls " + name, "offset %d" % at, "pickle offset %d" % off))
    # the legacy layout with an evil object beside the weights
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "l.pt")

        class Evil:
            def __reduce__(self):
                return (os.system, ("id",))
        torch.save({"w": torch.ones(2), "e": Evil()}, p, _use_new_zipfile_serialization=False)
        attempt("legacy REDUCE", open(p, "rb").read(), expect_ok=True, validate_rc=1,
                must=("calls posix.system",))
    # NEWOBJ and BUILD of a class outside the vocabulary
    pkl = b"\x80\x02csubprocess\nPopen\n)\x81}X\x01\x00\x00\x00aK\x01sb."
    attempt("NEWOBJ+BUILD", archive(pkl), expect_ok=True, validate_rc=1,
            must=("calls subprocess.Popen",))
    # STACK_GLOBAL with names through the memo, and an unused global
    pkl = (b"\x80\x04X\x02\x00\x00\x00os\x940X\x06\x00\x00\x00system\x940h\x00h\x01\x93"
           b"X\x02\x00\x00\x00id\x85R.")
    attempt("STACK_GLOBAL memo", archive(pkl), expect_ok=True, validate_rc=1, must=("calls os.system",))
    pkl = b"\x80\x02cbuiltins\neval\nq\x000h\x00X\x01\x00\x00\x001\x85R."
    attempt("global via memo", archive(pkl), expect_ok=True, validate_rc=1, must=("calls builtins.eval",))
    pkl = b"\x80\x02cposix\nsystem\n."
    attempt("global referenced", archive(pkl), expect_ok=True, validate_rc=1,
            must=("references posix.system",))
    # INST and OBJ
    pkl = b"(X\x02\x00\x00\x00idios\nsystem\n."
    attempt("INST", archive(pkl), expect_ok=True, validate_rc=1, must=("calls os.system",))
    pkl = b"\x80\x02(cos\nsystem\nX\x02\x00\x00\x00ido."
    attempt("OBJ", archive(pkl), expect_ok=True, validate_rc=1, must=("calls os.system",))
    # memo bombs: lists of the same list, 12 levels of 1,000 references
    b = bytearray(b"\x80\x02]q\x000")
    for lvl in range(1, 13):
        b += b"](" + (b"h" + bytes([lvl - 1])) * 1000 + b"eq" + bytes([lvl]) + b"0"
    b += b"h\x0c."
    attempt("memo bomb", archive(bytes(b)), expect_ok=True, validate_rc=0)
    # work linear in the input: 300,000 scalars, 100,000 names of one tensor,
    # 100,000 repeated keys
    import time
    b = bytearray(b"\x80\x02}(")
    for i in range(300000):
        b += b"J" + struct.pack("<i", i) + b"K\x01"
    t0 = time.time()
    attempt("300,000 scalars", archive(bytes(b + b"u.")), expect_ok=True)
    check("300,000 scalars: time", time.time() - t0 < 20, "%.1f s" % (time.time() - t0))
    b = bytearray(b"\x80\x02}(J\x00\x00\x00\x00" + dumps(good)[2:-1] + b"q\xff")
    for i in range(1, 100000):
        b += b"J" + struct.pack("<i", i) + b"h\xff"
    t0 = time.time()
    # (the core refuses tensors viewing over twice the input: aliasing bound)
    attempt("100,000 aliases", archive(bytes(b + b"u."), rec), must=("share their data",))
    check("100,000 aliases: time", time.time() - t0 < 20, "%.1f s" % (time.time() - t0))
    attempt("repeated keys", archive(b"\x80\x02}(" + b"K\x01K\x02" * 100000 + b"u."),
            expect_ok=True, validate_rc=1, must=("given twice",))
    # one memoized 60 KB key (or value) on every path: each leaf's name (or value)
    # a copy of it, 240 MB for 92 KB; the names' budget (4 x input) refuses it
    key = "k" * 60000
    for what, obj in (("a memoized key on 2,000 paths", {key: {str(i): i for i in range(2000)}}),
                      ("a memoized value in 2,000 leaves", {str(i): key for i in range(2000)})):
        attempt(what, archive(dumps(obj)), must=("shared by too many references",))
    attempt("a memoized key on 4 paths", archive(dumps({key: {str(i): i for i in range(4)}})),
            expect_ok=True)
    # an object of a class outside the vocabulary beside the weights (an
    # argparse.Namespace, as research checkpoints hold): its fields walked,
    # the weights read, the class reported
    import argparse
    pkl = dumps({"args": argparse.Namespace(lr=0.5, name="x"), "w": good})
    attempt("Namespace", archive(pkl, rec), expect_ok=True, validate_rc=1,
            must=("calls argparse.Namespace",))
    inf = info_bytes(archive(pkl, rec))
    check("Namespace fields", inf.get("metadata", {}).get("args.lr") == "0.5", str(inf))
    # 100,000-deep nesting: marks, and lists in lists
    attempt("deep marks", archive(b"\x80\x02" + b"(" * 100000 + b"."), must=("max_pickle_depth",))
    attempt("deep lists", archive(b"\x80\x02" + b"]" * 100000 + b"a" * 99999 + b"."),
            must=("max_pickle_depth",))
    # lengths past the end
    attempt("BINBYTES past end", archive(b"\x80\x03B\xff\xff\x00\x00abc."), must=("BINBYTES", "past the end"))
    attempt("BINUNICODE past end", archive(b"\x80\x02X\x10\x00\x00\x00abc."), must=("BINUNICODE",))
    attempt("BINUNICODE8 past end", archive(b"\x80\x04\x8d" + b"\xff" * 8 + b"."), must=("BINUNICODE8",))
    # SETITEM on a list, APPEND on a dict, marks unbalanced, memo keys never set
    attempt("SETITEM on list", archive(b"\x80\x02]K\x01K\x02s."), must=("SETITEM", "list"))
    attempt("SETITEMS on list", archive(b"\x80\x02](K\x01K\x02u."), must=("SETITEMS", "list"))
    attempt("APPEND on dict", archive(b"\x80\x02}K\x01a."), must=("APPEND", "dict"))
    attempt("unbalanced", archive(b"\x80\x02(K\x01."), must=("STOP", "MARK"))
    attempt("memo unset", archive(b"\x80\x02h\x05."), must=("memo key 5",))
    attempt("no STOP", archive(b"\x80\x02K\x01"), must=("STOP",))
    attempt("bad opcode", archive(b"\x80\x02\xff."), must=("0xff",))
    # storages: missing, short, claimed larger, size x stride overflow,
    # negative strides and offsets, a view past the storage
    sd = lambda t: dumps(collections.OrderedDict(w=t))  # noqa: E731
    attempt("record missing", archive(sd(good), {}), must=("no record data/0",))
    attempt("record short", archive(sd(good), {"0": b"\0" * 12}), must=("holds 12 bytes",))
    attempt("storage claimed larger", archive(sd(Tensor(Storage("0", 400), 0, (2, 2), (2, 1))), rec),
            must=("declares 400",))
    attempt("view past storage", archive(sd(Tensor(Storage("0", 4), 1, (2, 2), (2, 1))), rec),
            must=("reaches past its storage",))
    attempt("size x stride overflow",
            archive(sd(Tensor(Storage("0", 4), 0, (2**40, 2**40), (2**40, 2**30))), rec),
            must=("overflow",))
    attempt("huge numel", archive(sd(Tensor(Storage("0", 4), 0, (2**30,), (0,))), rec),
            must=("max_dense_bytes",))
    attempt("negative stride", archive(sd(Tensor(Storage("0", 4), 0, (2, 2), (-2, 1))), rec),
            must=("-2",))
    attempt("negative offset", archive(sd(Tensor(Storage("0", 4), -1, (2,), (1,))), rec),
            must=("-1",))
    attempt("stride 0 expand", archive(sd(Tensor(Storage("0", 4), 1, (3, 2), (0, 1))), rec),
            expect_ok=True)
    # a zip bomb in a deflated record: 64 MiB of zeros, read within 1 MiB
    big = archive(sd(Tensor(Storage("0", 16 << 20), 0, (4,), (1,))), {"0": bytes(64 << 20)},
                  deflate=("0",))
    attempt("zip bomb", big, must=("max_dense_bytes",), opts=("--max-dense-bytes", "1M"))
    # its declared size lies: the stream inflates past it
    small = archive(sd(good), {"0": bytes(1 << 20)}, deflate=("0",))
    i = small.index(b"archive/data/0")
    cen = small.rindex(b"PK\x01\x02", 0, small.index(b"archive/data/0", i + 1))
    lie = bytearray(small)
    struct.pack_into("<I", lie, i - 30 + 22, 16)
    struct.pack_into("<I", lie, cen + 24, 16)
    attempt("zip bomb, size lies", bytes(lie), must=("past its declared",))


def cuts(size):
    """The prefix lengths truncations() tries: every one, but in the
    sanitizer stage (TIO_SANITIZED, set by tests/CMakeLists.txt) every one
    within 64 bytes of either end and every 8th between. A sanitized process
    costs ~0.1 s to start and exit, these were 1,700 of them (175 s), and
    formats_test_sweep_torch already cuts every prefix of torch-written files
    of both layouts (tests/vectors/torch's state.pt and legacy.pt) in-process
    under ASan, the bytes past each cut poisoned."""
    if not os.environ.get("TIO_SANITIZED"):
        return range(size)
    return sorted({n for n in range(size) if n < 64 or n >= size - 64 or n % 8 == 0})


def validate_each(what, tmp, blobs):
    """Every blob written to a file of its own and all of them given to one
    `tensio validate`: each must be reported ('FILE: error: ...') with an
    offset (but an empty file), the exit status 1, nothing on stderr. One
    process for them all, so the sanitizer stage sees every one too."""
    d = tempfile.mkdtemp(prefix=what.replace(" ", "_"), dir=tmp)
    paths = []
    for k, b in enumerate(blobs):
        paths.append(os.path.join(d, "%05d.pt" % k))
        with open(paths[-1], "wb") as f:
            f.write(b)
    p = subprocess.run([TENSIO, "validate", *paths], capture_output=True, text=True, timeout=600)
    lines = lines_by_file(p.stdout)
    bad = [q for q, b in zip(paths, blobs)
           if not lines.get(q) or (b and not all("offset" in x for x in lines[q]))]
    check("validate of %d %s" % (len(paths), what), p.returncode == 1 and not p.stderr and not bad,
          "exit %d, %d not reported with an offset (%s), stderr %r"
          % (p.returncode, len(bad), bad[:3], p.stderr[-2000:]))
    shutil.rmtree(d)


def truncations(tmp):
    """Every prefix of a small checkpoint (both layouts), and of its pickle."""
    sdict = collections.OrderedDict(w=torch.arange(4.0), b=torch.ones(2, dtype=torch.int64), n=3)
    for layout, kw in (("zip", {}), ("legacy", {"_use_new_zipfile_serialization": False})):
        f = io.BytesIO()
        torch.save(sdict, f, **kw)
        data = f.getvalue()
        validate_each("%s prefixes" % layout, tmp, [data[:n] for n in range(len(data))])
        bad = 0
        tried = cuts(len(data))
        print("truncated %s: %d of its %d prefixes" % (layout, len(tried), len(data)))
        with tempfile.NamedTemporaryFile(suffix=".pt") as t:
            for n in tried:
                t.seek(0)
                t.truncate()
                t.write(data[:n])
                t.flush()
                p = subprocess.run([TENSIO, "ls", t.name], capture_output=True, text=True, timeout=60)
                if p.returncode not in (0, 1) or (p.returncode == 1 and "offset" not in p.stderr
                                                  and n > 0):
                    bad += 1
                    failures.append("truncated %s at %d: exit %d %s" % (layout, n, p.returncode, p.stderr))
                    if bad > 5:
                        break
    pkl = dumps(collections.OrderedDict(w=Tensor(Storage("0", 4), 0, (4,), (1,)), n=3))
    rec = {"0": bytes(16)}
    validate_each("pickle cuts", tmp, [archive(pkl[:n], rec) for n in range(len(pkl))])
    for n in cuts(len(pkl)):
        with tempfile.NamedTemporaryFile(suffix=".pt") as t:
            t.write(archive(pkl[:n], rec))
            t.flush()
            p = subprocess.run([TENSIO, "ls", t.name], capture_output=True, text=True, timeout=60)
            if p.returncode != 1 or "torch: offset" not in p.stderr:
                failures.append("pickle cut at %d: exit %d %s" % (n, p.returncode, p.stderr))


def unfinished(tmp):
    """A torch.save that failed part way: the records before data.pkl, no data.pkl.
    torch 1.13 cannot save a CSC matrix and leaves <name>/version alone; each of
    torch's own records alone is read as torch's and refused as such (npz, which
    takes any zip, used to list it as an archive of no arrays)."""
    must = ("without its data.pkl", "failed part way")
    p = os.path.join(tmp, "unfinished.pt")
    try:
        torch.save({"w": torch.ones(2), "m": torch.eye(3).to_sparse_csc()}, p)
        saved = True
    except Exception:  # torch 1.13: "Cannot access data pointer of Tensor that doesn't have storage"
        saved = False
    if not saved:
        with zipfile.ZipFile(p) as z:
            check("torch left records without data.pkl",
                  "data.pkl" not in " ".join(z.namelist()), str(z.namelist()))
        attempt("unfinished torch.save", open(p, "rb").read(), validate_rc=1, must=must)
    for rec in ("version", "byteorder", ".format_version", ".storage_alignment",
                ".data/version", ".data/serialization_id"):
        f = io.BytesIO()
        with zipfile.ZipFile(f, "w") as z:
            z.writestr("archive/" + rec, b"3\n")
        attempt("only archive/" + rec, f.getvalue(), validate_rc=1, must=must)
    # a zip of other records is not claimed: npz's (an archive of no arrays)
    f = io.BytesIO()
    with zipfile.ZipFile(f, "w") as z:
        z.writestr("archive/versions", b"3\n")
    with tempfile.NamedTemporaryFile(suffix=".zip") as t:
        t.write(f.getvalue())
        t.flush()
        r = subprocess.run([TENSIO, "info", "--json", t.name], capture_output=True, text=True)
        check("archive/versions is not torch's", '"format": "npz"' in r.stdout, r.stdout + r.stderr)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        real_files(tmp)
        hostile()
        truncations(tmp)
        unfinished(tmp)
    return report()


if __name__ == "__main__":
    sys.exit(main())
