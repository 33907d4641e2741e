#!/usr/bin/env python3
"""ONNX sparse tensors (SparseTensorProto) against python3-onnx and
onnxruntime:

- sparse initializers (coordinates [NNZ, rank] and linear positions [NNZ]),
  float32 and int64, and a Constant's sparse_value, written by onnx.helper,
  are read as COO tensors (`tensio dump --json`: the same values at the same
  coordinates);
- `tensio convert m.onnx out.onnx` writes them back as sparse initializers /
  sparse_value: onnx.checker passes, the values and coordinates are the
  source's, and onnxruntime computes the same outputs from both;
- to BTF (which holds COO) and back; to safetensors refused without
  --densify, and with it the dense tensor;
- hostile SparseTensorProtos are refused by name (exit 1): an index out of
  range (both forms), indices of the wrong shape or dtype, no values, no
  dims, 2-D values.

usage: test_sparse.py TENSIO"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

TENSIO = os.path.abspath(sys.argv[1])
ORT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ort")
failures = []
checks = 0


def ok(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args, code=0):
    p = subprocess.run([TENSIO, *args], capture_output=True, text=True)
    ok(p.returncode == code, "%s: exit %d (expected %d): %s" % (" ".join(args), p.returncode,
                                                              code, p.stderr.strip()))
    return p


def sparse(name, values, dtype, idx, dims, linear=False):
    v = helper.make_tensor(name, dtype, [len(values)], values)
    ix = np.array(idx, dtype=np.int64)
    if linear:
        ix = np.ravel_multi_index(ix.T, dims) if ix.ndim == 2 else ix
    i = numpy_helper.from_array(ix.astype(np.int64), name + "_indices")
    return helper.make_sparse_tensor(v, i, dims)


def dense_of(sp):
    dims = list(sp.dims)
    vals = numpy_helper.to_array(sp.values)
    idx = numpy_helper.to_array(sp.indices)
    out = np.zeros(dims, dtype=vals.dtype)
    if idx.ndim == 1:
        idx = np.stack(np.unravel_index(idx, dims), axis=1)
    for k, c in enumerate(idx):
        out[tuple(c)] = vals[k]
    return out


def model(tmp):
    w = sparse("w", [1.5, -2.0, 3.25], TensorProto.FLOAT, [[0, 1], [1, 0], [2, 3]], [3, 4])
    u = sparse("u", [7.0, 8.0], TensorProto.FLOAT, [[0, 1], [2, 2]], [3, 4], linear=True)
    k = sparse("k", [5, -9], TensorProto.INT64, [[1, 1], [2, 0]], [3, 4])
    cst = helper.make_node("Constant", [], ["c"],
                           sparse_value=sparse("cv", [0.5, 4.0], TensorProto.FLOAT,
                                               [[0, 0], [2, 3]], [3, 4]))
    nodes = [helper.make_node("Add", ["x", "w"], ["t1"]),
             helper.make_node("Add", ["t1", "u"], ["t2"]),
             cst,
             helper.make_node("Mul", ["t2", "c"], ["y"]),
             helper.make_node("Add", ["n", "k"], ["z"])]
    g = helper.make_graph(nodes, "sparse", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4]),
        helper.make_tensor_value_info("n", TensorProto.INT64, [3, 4])], [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4]),
        helper.make_tensor_value_info("z", TensorProto.INT64, [3, 4])])
    g.sparse_initializer.extend([w, u, k])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    path = os.path.join(tmp, "sparse.onnx")
    onnx.save(m, path)
    return path, m


def ort_run(model_path, vec, write):
    env = dict(os.environ, NODE_PATH=os.path.join(ORT_DIR, "node_modules"))
    p = subprocess.run(["node", os.path.join(ORT_DIR, "run_model.js")] +
                       (["--write"] if write else []) + [model_path, vec],
                       capture_output=True, text=True, env=env)
    return p


def test_roundtrip(tmp):
    src, m = model(tmp)
    dump = json.loads(run("dump", "--json", src).stdout)
    by = {t["name"]: t for t in dump["tensors"]}
    for sp in list(m.graph.sparse_initializer):
        t = by.get(sp.values.name)
        ok(t is not None and t.get("layout") == "coo" and t.get("shape") == list(sp.dims),
           "dump: %s is COO %s: %s" % (sp.values.name, list(sp.dims), t))
    out = os.path.join(tmp, "out.onnx")
    run("convert", src, out)
    m2 = onnx.load(out)
    try:
        onnx.checker.check_model(m2)
        ok(True, "checker")
    except Exception as e:  # noqa: BLE001
        ok(False, "checker: %s" % e)
    a = {s.values.name: dense_of(s) for s in m.graph.sparse_initializer}
    b = {s.values.name: dense_of(s) for s in m2.graph.sparse_initializer}
    ok(sorted(a) == sorted(b) and all(np.array_equal(a[k], b[k]) and a[k].dtype == b[k].dtype
                                      for k in a), "sparse initializers: %s vs %s" % (a, b))
    ok(len(m2.graph.initializer) == 0, "no dense initializers written")
    c1 = [n for n in m.graph.node if n.op_type == "Constant"][0].attribute[0]
    c2 = [n for n in m2.graph.node if n.op_type == "Constant"]
    ok(len(c2) == 1 and c2[0].attribute[0].name == "sparse_value" and
       c2[0].attribute[0].type == onnx.AttributeProto.SPARSE_TENSOR and
       np.array_equal(dense_of(c2[0].attribute[0].sparse_tensor), dense_of(c1.sparse_tensor)),
       "Constant sparse_value kept: %s" % (c2[0].attribute if c2 else None))
    # a second rewrite is the same bytes
    out2 = os.path.join(tmp, "out2.onnx")
    run("convert", out, out2)
    with open(out, "rb") as f1, open(out2, "rb") as f2:
        ok(f1.read() == f2.read(), "a rewrite of the rewrite is byte-identical")
    # onnxruntime: the same outputs from the source and the rewrite
    if not os.path.isdir(os.path.join(ORT_DIR, "node_modules", "onnxruntime-node")):
        ok(False, "onnxruntime-node is not installed (scripts/install-ort.sh)")
        return
    vec = os.path.join(tmp, "vec")
    os.makedirs(vec)
    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 4
    n = np.arange(12, dtype=np.int64).reshape(3, 4) - 5
    np.save(os.path.join(vec, "x.npy"), x)
    np.save(os.path.join(vec, "n.npy"), n)
    io = {"inputs": [{"name": "x", "file": "x.npy", "dtype": "float32", "shape": [3, 4]},
                     {"name": "n", "file": "n.npy", "dtype": "int64", "shape": [3, 4]}],
          "outputs": [{"name": "y", "file": "y.npy", "dtype": "float32", "shape": [3, 4]},
                      {"name": "z", "file": "z.npy", "dtype": "int64", "shape": [3, 4]}]}
    with open(os.path.join(vec, "reference_io.json"), "w") as f:
        json.dump(io, f)
    p = ort_run(src, vec, True)
    ok(p.returncode == 0, "onnxruntime on the source: %s" % p.stderr[-400:])
    want_y = (x + a["w"] + a["u"]) * dense_of(c1.sparse_tensor)
    ok(np.allclose(np.load(os.path.join(vec, "y.npy")), want_y) and
       np.array_equal(np.load(os.path.join(vec, "z.npy")), n + a["k"]),
       "onnxruntime's outputs are the sparse tensors' sums")
    p = ort_run(out, vec, False)
    ok(p.returncode == 0 and "max_abs_diff=0" in p.stdout,
       "onnxruntime on the rewrite: %s %s" % (p.stdout.strip(), p.stderr[-400:]))


def test_other_formats(tmp):
    src, m = model(tmp)
    btf = os.path.join(tmp, "s.btf")
    run("convert", "--drop-metadata", "--drop-names", src, btf)
    d1 = json.loads(run("dump", "--json", src).stdout)["tensors"]
    d2 = json.loads(run("dump", "--json", btf).stdout)["tensors"]
    strip = lambda ts: [{k: t.get(k) for k in ("dtype", "shape", "layout", "values", "indices")}  # noqa: E731
                        for t in ts]
    ok(strip(d1) == strip(d2), "onnx -> btf keeps the COO tensors: %s vs %s" % (d1, d2))
    st = os.path.join(tmp, "s.safetensors")
    p = run("convert", "--drop-metadata", src, st, code=1)
    ok("densify" in p.stderr, "safetensors without --densify: %s" % p.stderr)
    p = run("convert", "--drop-metadata", "--densify", src, st)
    d3 = json.loads(run("dump", "--json", st).stdout)["tensors"]
    w = [t for t in d3 if t["name"] == "w"]
    ok(w and w[0]["shape"] == [3, 4] and w[0].get("layout", "dense") == "dense",
       "--densify: w dense [3, 4]: %s" % w)


def test_hostile(tmp):
    def bad(name, sp_fn, want):
        g = helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "h", [],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        sp = sp_fn()
        g.sparse_initializer.extend([sp])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        path = os.path.join(tmp, "bad-%s.onnx" % name)
        with open(path, "wb") as f:
            f.write(m.SerializeToString())
        p = run("info", path, code=1)
        ok("sparse initializer" in p.stderr and want in p.stderr,
           "%s: refused naming '%s': %s" % (name, want, p.stderr.strip()))

    def mk(vals=(1.0, 2.0), idx=((0, 0), (1, 1)), dims=(2, 2), idx_dtype=np.int64,
           vdims=None):
        v = helper.make_tensor("w", TensorProto.FLOAT, vdims or [len(vals)], list(vals))
        i = numpy_helper.from_array(np.array(idx, dtype=idx_dtype), "i")
        return helper.make_sparse_tensor(v, i, list(dims))

    bad("range", lambda: mk(idx=((0, 0), (2, 1))), "")
    bad("negative", lambda: mk(idx=((0, -1), (1, 1))), "")
    bad("linear-range", lambda: mk(idx=(0, 4)), "index 1 is 4")
    bad("idx-shape", lambda: mk(idx=((0, 0, 0), (1, 1, 1))), "indices must be int64")
    bad("idx-count", lambda: mk(idx=((0, 0),)), "indices must be int64")
    bad("idx-dtype", lambda: mk(idx_dtype=np.int32), "indices must be int64")
    bad("values-2d", lambda: mk(vals=(1.0, 2.0), vdims=[1, 2], idx=((0, 0),)),
        "values must be a named 1-D tensor")

    def no_values():
        sp = mk()
        sp.ClearField("values")
        return sp

    def no_dims():
        sp = mk()
        sp.ClearField("dims")
        return sp

    bad("no-values", no_values, "needs values, indices and dims")
    bad("no-dims", no_dims, "needs values, indices and dims")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_roundtrip(tmp)
        test_other_formats(tmp)
        test_hostile(tmp)
    if failures:
        print("%d of %d checks failed" % (len(failures), checks))
        sys.exit(1)
    print("ok: ONNX sparse tensors, %d checks" % checks)


main()
