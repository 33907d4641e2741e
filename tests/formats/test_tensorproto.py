#!/usr/bin/python3
"""Bare ONNX TensorProto files (.pb, format onnx-tensor) against onnx itself
(Debian's python3-onnx, with NumPy).

  test_tensorproto.py TENSIO

- onnx.numpy_helper.from_array(a, name).SerializeToString() for every dtype
  both have, shapes from rank 0 to 3 and empty ones: `tensio ls --json
  --hash` gives its name, dtype, shape and the sha256 of its bytes;
  `tensio convert x.pb y.pb` writes the same bytes; .pb -> .npy
  (no flag: the .npy file names the array) gives the array, .npz -> .pb gives
  from_array's bytes with the member's name, .npy -> .pb from_array's bytes
  without a name.
- onnx.helper.make_tensor(..., raw=False) (typed fields: float_data,
  int32_data, int64_data, double_data, uint64_data) reads as the same array.
- string tensors (from_array of an object array of bytes) read as tensio's
  string dtype, are rewritten byte for byte, and go to and from .npy.
- SequenceProto and OptionalProto files of tensors (numpy_helper.from_list,
  from_optional) read as their elements, rewritten byte for byte; several
  tensors written as a SequenceProto; nested sequences and maps refused."""
import hashlib
import json
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from clitest import run, check, report  # noqa: E402

DTYPES = ["?", "i1", "u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8", "<f2", "<f4", "<f8",
          "<c8", "<c16"]
NAMES = {"?": "bool", "i1": "int8", "u1": "uint8", "<i2": "int16", "<u2": "uint16",
         "<i4": "int32", "<u4": "uint32", "<i8": "int64", "<u8": "uint64", "<f2": "float16",
         "<f4": "float32", "<f8": "float64", "<c8": "complex64", "<c16": "complex128"}


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def main():
    rng = np.random.default_rng(37)
    tmp = tempfile.mkdtemp(prefix="tio-pb-")
    n = 0
    for dt in DTYPES:
        for shape in [(), (0,), (5,), (3, 4), (2, 0, 3), (2, 3, 4)]:
            base = rng.integers(-50, 100, size=shape)
            a = (base % 2 == 0) if dt == "?" else base.astype(dt)
            if np.dtype(dt).kind == "c":
                a = (a * (1 - 2j) + 0.5j).astype(dt)
            n += 1
            what = "%s %s" % (dt, shape)
            ref = numpy_helper.from_array(a, "t%d" % n).SerializeToString()
            src = os.path.join(tmp, "a%d.pb" % n)
            write(src, ref)
            t = json.loads(run("ls", "--json", "--hash", src).stdout)["tensors"][0]
            check(what + " name", t.get("name") == "t%d" % n, str(t.get("name")))
            check(what + " dtype", t["dtype"] == NAMES[dt], t["dtype"])
            check(what + " shape", t["shape"] == list(shape), str(t["shape"]))
            check(what + " sha256", t["sha256"] == hashlib.sha256(a.tobytes()).hexdigest())
            out = os.path.join(tmp, "b%d.pb" % n)
            run("convert", src, out)
            check(what + " pb -> pb bytes", read(out) == ref)
            npy = os.path.join(tmp, "a%d.npy" % n)
            run("convert", src, npy)
            back = np.load(npy)
            check(what + " pb -> npy", back.dtype == a.dtype and back.shape == a.shape and
                  np.array_equal(back, a))
            run("convert", npy, out, "--force")
            check(what + " npy -> pb bytes",
                  read(out) == numpy_helper.from_array(a).SerializeToString())
            npz = os.path.join(tmp, "a%d.npz" % n)
            np.savez(npz, **{"t%d" % n: a})
            run("convert", npz, out, "--force")
            check(what + " npz -> pb bytes", read(out) == ref)
            # typed fields, as make_tensor writes them without raw
            if dt in ("<f2", "<c8", "<c16") or not shape or 0 in shape:
                continue
            code = onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dt)]
            typed = helper.make_tensor("y", code, shape, a.flatten().tolist(), raw=False)
            check(what + " made typed", not typed.raw_data)
            write(src, typed.SerializeToString())
            run("convert", "--force", src, npy)
            back = np.load(npy)
            check(what + " typed -> npy", back.dtype == a.dtype and np.array_equal(back, a))
    print("onnx-tensor: %d arrays written by onnx.numpy_helper read and rewritten" % n)

    p = os.path.join(tmp, "s.pb")
    strs = np.array([[b"ab", b"c\x00d"], [b"", "h\u00e9".encode()]], dtype=object)
    ref = numpy_helper.from_array(strs, "s").SerializeToString()
    write(p, ref)
    t = json.loads(run("ls", "--json", p).stdout)["tensors"][0]
    check("string tensor dtype", t["dtype"] == "string" and t["shape"] == [2, 2], str(t))
    p2 = os.path.join(tmp, "s2.pb")
    run("convert", p, p2)
    check("string tensor rewritten byte for byte", read(p2) == ref)
    # to .npy: every string is UTF-8 text, so NumPy's U (inner NULs kept)
    npy = os.path.join(tmp, "s.npy")
    run("convert", p, npy)
    back = np.load(npy)
    check("string pb -> npy", back.dtype == np.dtype("<U3") and
          back.tolist() == [["ab", "c\x00d"], ["", "h\u00e9"]], repr(back))
    # .npy -> .pb: what from_array writes for the same strings as bytes
    u = np.array(["monday", "t\u00fcesday", ""])
    np.save(npy, u)
    run("convert", "--force", npy, p2)
    want = numpy_helper.from_array(np.array([x.encode() for x in u], dtype=object))
    check("npy U -> pb = from_array of the UTF-8 bytes", read(p2) == want.SerializeToString())
    got = onnx.TensorProto()
    got.ParseFromString(read(p2))
    check("onnx reads the strings", list(numpy_helper.to_array(got)) == list(u), repr(got))
    # a model: a string initializer and a Constant's string value, rewritten
    # with the same string_data; formats without strings refuse them by name
    init = numpy_helper.from_array(np.array([b"a", b"bc\x00", b"\xff"], dtype=object), "words")
    cval = numpy_helper.from_array(np.array([b"x", b"yz"], dtype=object), "c")
    g = helper.make_graph(
        [helper.make_node("Constant", [], ["c"], value=cval),
         helper.make_node("Identity", ["words"], ["out"]),
         helper.make_node("Identity", ["c"], ["out2"])], "g", [],
        [helper.make_tensor_value_info("out", onnx.TensorProto.STRING, [3]),
         helper.make_tensor_value_info("out2", onnx.TensorProto.STRING, [2])], [init])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    mp, mp2 = os.path.join(tmp, "strm.onnx"), os.path.join(tmp, "strm2.onnx")
    onnx.save(m, mp)
    run("convert", mp, mp2)
    m2 = onnx.load(mp2)
    onnx.checker.check_model(m2, full_check=True)
    check("model string initializer", m2.graph.initializer[0].SerializeToString() ==
          init.SerializeToString())
    check("model Constant strings", m2.graph.node[0].attribute[0].t.SerializeToString() ==
          cval.SerializeToString())
    r = run("dump", mp)
    check("dump escapes bytes", '"bc\\x00", "\\xff"' in r.stdout, r.stdout)
    # diff compares strings as bytes; stats has no numbers to give
    p3 = os.path.join(tmp, "s3.pb")
    write(p3, numpy_helper.from_array(np.array([[b"ab", b"c\x00d"], [b"", b"h\xc3\xa9"]],
                                               dtype=object), "s").SerializeToString())
    write(p2, numpy_helper.from_array(np.array([[b"ab", b"c\x00d"], [b"", b"H\xc3\xa9"]],
                                               dtype=object), "s").SerializeToString())
    r = run("diff", p3, p3)
    check("diff: equal strings", r.returncode == 0 and "equal" in r.stdout, r.stdout)
    r = run("diff", "--json", p3, p2, ok=False)
    j = json.loads(r.stdout)["tensors"][0] if r.returncode == 1 else {}
    check("diff: one string differs", j.get("mismatched") == 1 and j.get("count") == 4, r.stdout)
    r = run("stats", p3, ok=False)
    check("stats refuses strings", r.returncode == 1 and "string tensor" in r.stderr, r.stderr)
    for ext in ("safetensors", "tflite"):
        r = run("convert", mp, os.path.join(tmp, "strm." + ext), ok=False)
        check("string model refused by " + ext, r.returncode == 1 and "string" in r.stderr,
              r.stderr)
    sequences(tmp)
    sys.exit(report())


def sequences(tmp):
    """SequenceProto and OptionalProto files of tensors, written by onnx's
    numpy_helper.from_list / from_optional: the container holds the elements
    in order (.npz: the arrays), and x.pb -> y.pb writes the same bytes; a
    container of several tensors is written as a SequenceProto onnx reads
    back; sequences of sequences and maps are refused by name; every cut of
    a sequence file is refused, never a crash."""
    p, q = os.path.join(tmp, "seq.pb"), os.path.join(tmp, "seq2.pb")
    z = os.path.join(tmp, "seq.npz")
    arrays = [np.arange(6, dtype="<f4").reshape(2, 3), np.array([], dtype="<f4"),
              np.array(7.5, dtype="<f4")]
    cases = [("sequence of 3", numpy_helper.from_list(arrays, "s"), arrays),
             ("sequence of int64", numpy_helper.from_list([np.arange(3, dtype="<i8")] * 2, "i"),
              [np.arange(3, dtype="<i8")] * 2),
             ("empty sequence", numpy_helper.from_list([], "e", onnx.TensorProto.FLOAT), []),
             ("optional tensor", numpy_helper.from_optional(arrays[0], "o"), arrays[:1]),
             ("empty optional", numpy_helper.from_optional(None, "n"), [])]
    for label, msg, want in cases:
        data = msg.SerializeToString()
        write(p, data)
        j = json.loads(run("ls", "--json", p).stdout)
        check(label + ": tensors", [(t["dtype"], t["shape"]) for t in j["tensors"]] ==
              [(NAMES[a.dtype.str.replace("|", "")], list(a.shape)) for a in want], str(j))
        run("convert", "--force", p, z)
        with np.load(z) as got:
            check(label + ": .npz", len(got.files) == len(want) and all(
                np.array_equal(got["arr_%d" % k], a) for k, a in enumerate(want)), str(got.files))
        run("convert", "--force", p, q)
        check(label + ": rewritten byte for byte", read(q) == data)
    # several tensors from elsewhere: a SequenceProto onnx reads
    np.savez(z, a=arrays[0], b=np.arange(4, dtype="<i4"))
    run("convert", "--force", z, q)
    s = onnx.SequenceProto()
    s.ParseFromString(read(q))
    back = numpy_helper.to_list(s)
    check("npz -> SequenceProto", s.elem_type == onnx.SequenceProto.TENSOR and len(back) == 2 and
          np.array_equal(back[0], arrays[0]) and np.array_equal(back[1], np.arange(4)) and
          [t.name for t in s.tensor_values] == ["a", "b"], str(s)[:200])
    # what tensio does not read, by name
    inner = numpy_helper.from_list([arrays[0]], "inner")
    nested = helper.make_sequence("outer", onnx.SequenceProto.SEQUENCE, [inner])
    write(p, nested.SerializeToString())
    r = run("ls", p, ok=False)
    check("sequence of sequences refused", r.returncode == 1 and "is a sequence" in r.stderr,
          r.stderr)
    m = helper.make_map("m", onnx.TensorProto.INT64, [1, 2], numpy_helper.from_list(arrays[:2]))
    write(p, helper.make_sequence("maps", onnx.SequenceProto.MAP, [m]).SerializeToString())
    r = run("ls", p, ok=False)
    check("sequence of maps refused", r.returncode == 1 and "is a map" in r.stderr, r.stderr)
    data = numpy_helper.from_list(arrays, "s").SerializeToString()
    bad = []
    for n in range(1, len(data)):
        write(p, data[:n])
        r = run("ls", p, ok=False)
        if r.returncode not in (0, 1) or (r.returncode == 1 and "onnx-tensor" not in r.stderr):
            bad.append("%d: exit %d %s" % (n, r.returncode, r.stderr[-80:]))
    check("every cut of a SequenceProto: exit 0 or 1 with a message", not bad, "; ".join(bad[:3]))
    print("onnx-tensor: %d SequenceProto / OptionalProto files read and rewritten, %d cuts"
          % (len(cases), len(data) - 1))


main()
