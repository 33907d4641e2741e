#!/usr/bin/python3
"""tensio convert --cast against Debian's torch 1.13 (Tensor.to(), the
reference) and NumPy (astype): every float32 pattern where float16 or
bfloat16 rounding changes (each half and bfloat16 value and the floats
around its midpoints), random bit patterns, float64 through float32;
the formats a cast writes (safetensors, .pt, .npz, GGUF, .npy); strided views,
sparse tensors, quantized GGUF tensors dequantized then cast; a spec's
pairs; and what is refused (model formats but onnx, a target the format lacks,
malformed specs, shards without --member-to, LMDB).

  test_cast.py TENSIO"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from clitest import run, check, report  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TDT = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
       "float64": torch.float64}
UINT = {"float16": np.uint16, "bfloat16": np.uint16, "float32": np.uint32, "float64": np.uint64}
IVIEW = {"float16": torch.int16, "bfloat16": torch.int16, "float32": torch.int32,
         "float64": torch.int64}


def safetensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def bits(t, to):
    """The tensor's bytes as unsigned integers of its size."""
    return t.contiguous().reshape(-1).view(IVIEW[to]).numpy().view(UINT[to])


def is_nan(u, to):
    if to == "float16":
        return np.isnan(u.view(np.float16))
    if to == "bfloat16":
        return np.isnan((u.astype(np.uint32) << 16).view(np.float32))
    return np.isnan(u.view(np.float32 if to == "float32" else np.float64))


def inputs():
    rng = np.random.default_rng(7)
    rand = rng.integers(0, 2 ** 32, 400_000, dtype=np.uint64).astype(np.uint32)
    half = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    hb = half.astype(np.float32).view(np.uint32)  # every half (NaNs as float32 NaNs)
    near_h = np.concatenate([hb + np.uint32(d) for d in (0, 1, 4095, 4096, 4097, 8191, 8192)]
                            + [hb - np.uint32(d) for d in (1, 4095, 4096, 4097)])
    bb = np.arange(65536, dtype=np.uint32) << 16  # every bfloat16
    near_b = np.concatenate([bb + np.uint32(d) for d in (0, 1, 0x7fff, 0x8000, 0x8001)]
                            + [bb - np.uint32(d) for d in (1, 0x7fff, 0x8000, 0x8001)])
    f = torch.from_numpy(np.concatenate([rand, near_h, near_b]).view(np.float32).copy())
    d = rng.standard_normal(100_000) * np.exp(rng.uniform(-60, 14, 100_000))
    d = torch.from_numpy(np.concatenate([d, [1 + 2.0 ** -11 + 2.0 ** -40, 65519.999, 65520.0,
                                             2.0 ** -25, 2.0 ** -25 * (1 + 2.0 ** -30), 1e300,
                                             -1e-300, np.nan, -np.inf, 3.4028235677973366e38]]))
    return {"f": f, "d": d, "h": f.to(torch.float16), "b": f.to(torch.bfloat16)}


def compare(what, got, src, to):
    """got (unsigned ints) against src.to(to): equal bits but for NaN,
    which must stay NaN (torch's own NaN bits differ between its code
    paths: 0xffff or 0x7fc0 for bfloat16)."""
    want = bits(src.to(TDT[to]), to)
    nan = is_nan(want, to)
    check(what + ": count", got.shape == want.shape, "%s vs %s" % (got.shape, want.shape))
    if got.shape != want.shape:
        return
    bad = (got != want) & ~nan
    i = np.flatnonzero(bad)[:3]
    check(what + ": bits as torch's", not bad.any(),
          "%d differ, e.g. %s" % (bad.sum(), [(hex(int(got[k])), hex(int(want[k]))) for k in i]))
    check(what + ": NaN stays NaN", bool(is_nan(got[nan], to).all()), str(int(nan.sum())))
    if src.dtype == TDT[to]:
        return  # no conversion: the bits are the input's
    if to == "float16" and nan.any():
        sign = (want[nan] & 0x8000)
        check(what + ": NaN is 0x7e00 with its sign", bool((got[nan] == (sign | 0x7e00)).all()))
    if to == "bfloat16" and nan.any():
        check(what + ": NaN is 0x7fc0", bool((got[nan] == 0x7fc0).all()))


def values(tmp):
    src = inputs()
    pt = os.path.join(tmp, "in.pt")
    torch.save(src, pt)
    for to in ("float16", "bfloat16", "float32", "float64"):
        out = os.path.join(tmp, "out.safetensors")
        run("convert", "--force", "--cast", to, pt, out)
        hd, data = safetensors(out)
        for k, t in src.items():
            s, e = hd[k]["data_offsets"]
            got = np.frombuffer(data[s:e], dtype=UINT[to])
            check("%s -> %s dtype" % (t.dtype, to),
                  hd[k]["dtype"] == {"float16": "F16", "bfloat16": "BF16", "float32": "F32",
                                      "float64": "F64"}[to], hd[k]["dtype"])
            compare("%s -> %s" % (t.dtype, to), got, t, to)
    # NumPy agrees where it defines the result (its float32 -> float16 keeps
    # NaN payloads; every other value rounds the same)
    run("convert", "--force", "--cast", "float32=float16", "--widen", pt, os.path.join(tmp, "o.npz"))
    with np.load(os.path.join(tmp, "o.npz")) as z:
        with np.errstate(over="ignore", invalid="ignore"):
            got, want = z["f"], src["f"].numpy().astype(np.float16)
        ok = (got.view(np.uint16) == want.view(np.uint16)) | (np.isnan(got) & np.isnan(want))
        check("npz float16 against numpy astype", bool(ok.all()), str(int((~ok).sum())))
        check("npz: float64 untouched by float32=float16",
              z["d"].dtype == np.float64 and np.array_equal(z["d"], src["d"].numpy(),
                                                           equal_nan=True))


def formats(tmp):
    """Each format a cast writes, read back by its own tool where there is one."""
    w = torch.arange(24, dtype=torch.float32).reshape(4, 6) / 7
    sd = {"w": w, "wt": w.t(), "col": w[:, 1], "b": torch.full((3,), 0.1, dtype=torch.float64),
          "ids": torch.arange(5), "flag": torch.tensor([True, False])}
    pt = os.path.join(tmp, "m.pt")
    torch.save(sd, pt)
    out = os.path.join(tmp, "m16.pt")
    run("convert", "--force", "--cast", "float16", pt, out)
    got = torch.load(out)
    for k, v in sd.items():
        want = v.to(torch.float16) if v.is_floating_point() else v
        check(".pt " + k, got[k].dtype == want.dtype and torch.equal(got[k], want),
              "%s %s" % (got[k].dtype, want.dtype))
    out = os.path.join(tmp, "m.gguf")
    run("convert", "--force", "--cast", "bfloat16", "--exclude", "flag", pt, out)
    t = {x["name"]: x for x in json.loads(run("ls", "--json", out).stdout)["tensors"]}
    check("gguf dtypes", t["w"]["dtype"] == "bfloat16" and t["b"]["dtype"] == "bfloat16"
          and t["ids"]["dtype"] == "int64", str(t))
    back = os.path.join(tmp, "back.pt")
    run("convert", "--force", out, back)
    got = torch.load(back)
    check("gguf bfloat16 values", torch.equal(got["wt"], sd["wt"].to(torch.bfloat16)))
    npy = os.path.join(tmp, "col.npy")
    run("convert", "--force", "--cast", "float64", "--only", "col", pt, npy)
    a = np.load(npy)
    check("npy float64 of a strided view", a.dtype == np.float64
          and np.array_equal(a, sd["col"].double().numpy()), str(a.dtype))
    # a sparse tensor keeps its layout: its values are cast
    sp = torch.sparse_coo_tensor([[0, 2, 3], [1, 0, 3]], [1.1, -2.5, 3e-8], (4, 4))
    spt = os.path.join(tmp, "sp.pt")
    torch.save({"sp": sp}, spt)
    run("convert", "--force", "--cast", "float16", spt, os.path.join(tmp, "sp16.pt"))
    got = torch.load(os.path.join(tmp, "sp16.pt"))["sp"]
    check("sparse values cast", got.is_sparse and got.dtype == torch.float16 and
          torch.equal(got.to_dense(), sp.to(torch.float16).to_dense()), str(got))
    run("convert", "--force", "--cast", "bfloat16", "--densify", spt,
        os.path.join(tmp, "sp.safetensors"))
    hd, data = safetensors(os.path.join(tmp, "sp.safetensors"))
    s, e = hd["sp"]["data_offsets"]
    check("sparse densified and cast", data[s:e] == bits(sp.to_dense().to(torch.bfloat16),
                                                          "bfloat16").tobytes())


def quantized(tmp):
    """A GGUF's quantized tensors dequantized to float32, then cast."""
    v = os.path.join(HERE, "..", "vectors", "gguf", "quant_more.gguf")
    f32 = os.path.join(tmp, "q32.safetensors")
    run("convert", "--force", "--dequantize", v, f32)
    h32, d32 = safetensors(f32)
    for to in ("float16", "bfloat16", "float64"):
        out = os.path.join(tmp, "q.safetensors")
        run("convert", "--force", "--dequantize", "--cast", to, v, out)
        hd, data = safetensors(out)
        n = 0
        for k, e in h32.items():
            if k == "__metadata__" or e["dtype"] != "F32":
                continue
            s0, e0 = e["data_offsets"]
            src = torch.from_numpy(np.frombuffer(d32[s0:e0], dtype=np.float32).copy())
            s, e1 = hd[k]["data_offsets"]
            compare("dequantized %s -> %s" % (k, to), np.frombuffer(data[s:e1], dtype=UINT[to]),
                    src, to)
            n += 1
        q = [x for x in json.loads(run("ls", "--json", v).stdout)["tensors"]
             if x["layout"] != "dense"]
        check("quantized tensors compared (%s)" % to, n >= len(q) > 0, "%d of %d" % (n, len(q)))


def refused(tmp):
    pt = os.path.join(tmp, "r.pt")
    torch.save({"w": torch.ones(3)}, pt)
    for spec, text in (("int8", "is not a dtype tensio casts to"),
                       ("float32=float16,float32=bfloat16", "float32 is given twice"),
                       ("bfloat16,float16", "expected one dtype"),
                       ("uint8=float16", "is not a floating-point dtype tensio casts from")):
        p = run("convert", "--force", "--cast", spec, pt, os.path.join(tmp, "x.safetensors"),
                ok=False)
        check("cast %s refused" % spec, p.returncode != 0 and text in p.stderr, p.stderr)
    p = run("convert", "--force", "--cast", "bfloat16", pt, os.path.join(tmp, "x.npz"), ok=False)
    check("npz has no bfloat16", p.returncode == 1 and "which npz cannot store" in p.stderr,
          p.stderr)
    # a model: its graph declares the constants' types
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    wt = numpy_helper.from_array(np.ones((2, 2), np.float32), "W")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])], [wt])
    m = os.path.join(tmp, "m.onnx")
    onnx.save(helper.make_model(g), m)
    # rten keeps the graph's types and has no Cast for weights: refused
    # (onnx casts the weights with a Cast after each: tests/onnx/test_cast_weights.py)
    p = run("convert", "--force", "--cast", "float16", m, os.path.join(tmp, "m2.rten"), ok=False)
    check("rten refuses a cast", p.returncode == 1 and
          "would change the types the graph declares" in p.stderr, p.stderr)
    run("convert", "--force", "--cast", "float16", m, os.path.join(tmp, "w.safetensors"))
    hd, _ = safetensors(os.path.join(tmp, "w.safetensors"))
    check("a model's weights alone are cast", hd["W"]["dtype"] == "F16", str(hd))
    tar = os.path.join(tmp, "s.tar")
    run("convert", "--force", "--shard", tar, pt)
    p = run("convert", "--force", "--cast", "float16", tar, os.path.join(tmp, "s2.tar"), ok=False)
    check("a shard's cast needs --member-to", p.returncode == 2 and "--member-to" in p.stderr,
          p.stderr)
    run("convert", "--force", "--cast", "float16", "--member-to", "safetensors", tar,
        os.path.join(tmp, "s3.tar"))
    check("shard members cast", "float16" in run("ls", os.path.join(tmp, "s3.tar"))
          .stdout)
    # a sharded checkpoint: shards packed, and total_size counted, by the
    # bytes as cast (4 tensors of 4,000 bytes as float32, 2,000 as bfloat16)
    sh = os.path.join(tmp, "sharded.pt")
    torch.save({"t%d" % k: torch.full((1000,), float(k)) for k in range(4)}, sh)
    repo = os.path.join(tmp, "repo") + "/"
    run("convert", "--force", "--cast", "bfloat16", "--max-shard-size", "4000", sh, repo)
    index = json.load(open(os.path.join(repo, "model.safetensors.index.json")))
    files = sorted(set(index["weight_map"].values()))
    check("shards packed by the cast bytes", len(files) == 2 and
          index["metadata"]["total_size"] == 8000, json.dumps(index))
    for f in files:
        hd, _ = safetensors(os.path.join(repo, f))
        check("shard %s bfloat16" % f, all(v["dtype"] == "BF16" for k, v in hd.items()
                                           if k != "__metadata__"), str(hd))
    for cmd in ("convert", "cat"):
        p = subprocess.run([sys.argv[1], cmd, "--help"], capture_output=True, text=True)
        check(cmd + " --help names --cast", "--cast SPEC" in p.stdout)
    # cat: two checkpoints joined into one, cast
    pt2 = os.path.join(tmp, "r2.pt")
    torch.save({"v": torch.full((2,), 1 / 3, dtype=torch.float64)}, pt2)
    out = os.path.join(tmp, "joined.pt")
    run("cat", "--force", "--cast", "float32=bfloat16,float64=float16", "-o", out, pt, pt2)
    got = torch.load(out)
    check("cat --cast", got["w"].dtype == torch.bfloat16 and got["v"].dtype == torch.float16
          and torch.equal(got["v"], torch.full((2,), 1 / 3, dtype=torch.float64).half()),
          str(got))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for f in (values, formats, quantized, refused):
            f(tmp)
    return report()


if __name__ == "__main__":
    sys.exit(main())
