#!/usr/bin/python3
"""ONNX <-> rten conversion through the CLI, against rten-convert's output.

Usage: /usr/bin/python3 test_convert_rten.py /path/to/tensio [--ort]

- Every .onnx vector (rten/*/ and tmfile/) converts to .rten, and the result
  reads back (tensio validate).
- For rten/<name>/<name>.onnx the result has the graph of the reference
  <name>.v2.rten that rten-convert wrote beside it: `tensio info --json` gives
  the same operators in order (name, op, inputs, outputs, attributes), the same
  graph inputs and outputs (name, dtype, shape), the same value and constant
  counts; `tensio ls --json --hash` the same constants in order (name, dtype,
  shape, sha256); the same metadata, with ALLOWED differences below.
- rten -> ONNX: every .v1.rten and .v2.rten vector converts to .onnx and
  onnx.checker.check_model(full_check=True) accepts it (Debian's python3-onnx);
  so does ONNX -> rten -> ONNX of every .onnx vector (rten/*/ and tmfile/),
  and of a model built here whose Slice bounds and Reshape shape come from
  Shape (int64 in ONNX, int32 in rten: shape_arith).
- With --ort: each of those .onnx files of an rten vector runs in onnxruntime (npm's
  onnxruntime-node in tests/ort/node_modules, installed by
  scripts/install-ort.sh) on the vector's input_*.npy and gives its
  expected_*.npy (abs 1e-4 + rel 1e-4; tests/ort/run_model.js). For the
  tmfile vectors, the .onnx and its ONNX -> rten -> ONNX run on the inputs
  Tengine ran (tmfile/<name>.in*.bin) and give the outputs Tengine computed
  from the tmfile convert_tool made of that .onnx (<name>.out*.bin). A missing
  onnxruntime fails, it is not skipped.

Vectors are found like the C tests find them ($TIO_TEST_VECTORS, then
$TIO_SHARED_VECTORS); a missing one prints "SKIPPED: <rel>". The .onnx copies in
tests/vectors live in tests/vectors/onnx/. The last line printed is
"N passed, M failed"; the exit status is non-zero on any failure.
"""

import json
import os
import sys
import tempfile

from convtest import ORT, case, find, run, run_in_ort, summary, tmfile_vector

RTEN = ["big_init", "int_consts", "matmul_add", "shape_ops", "small_cnn"]
# rten-convert's output for ONNX forms the shared vectors lack (Constant ops,
# attributes that became inputs, int64/bool/float64 initializers): see
# tests/vectors/rten_convert/README.md.
RTEN_CONVERT = ["rc_opset9", "rc_opset13"]
TMFILE = ["big_fc", "cnn_small", "concat_reshape_softmax", "mlp_matmul_add", "mnist_repo"]

# Allowed differences from the reference, each with its reason:
# - metadata other than onnx_hash: rten-convert took it from a `-m meta.json`
#   file (small_cnn has description, license, commit, ...); the .onnx does not
#   hold it. onnx_hash itself must be equal (sha256 of the .onnx).
# - the shapes of intermediate values: rten-convert runs ONNX shape inference
#   first (--infer-shapes, on by default) and writes what it inferred as
#   value_info; tensio writes what the .onnx holds. `info --json` lists only
#   the graph inputs and outputs, whose shapes come from the .onnx and must be
#   equal; the values' order in the file differs accordingly (inferred values
#   come before the operators' outputs), the constants' order does not.
# - graph input/output shapes that the .onnx leaves unknown and rten-convert
#   inferred (the rten_convert/ vectors): tensio has no shape there.
# - DEVIATIONS below: where tensio deliberately writes something else.
ALLOWED_META_ONLY_IN_REFERENCE = {"description", "license", "commit", "code_repository",
                                  "model_repository", "run_id", "run_url"}

# Constants where tensio deliberately differs from rten-convert: rten-convert
# turns Slice's opset-9 `ends` attribute into an int32 input with numpy's
# astype(int32), which wraps INT64_MAX to -1 (slicing to the last element but
# one, a wrong result); tensio clamps it to INT32_MAX as it clamps int64
# initializers (docs/formats/rten.md). Same dtype and shape; the bytes differ.
DEVIATIONS = {("rc_opset9", "sl:rten-ends"): "INT64_MAX clamped to INT32_MAX, not wrapped to -1"}

# rten -> ONNX has no known failures: the ONNX writer picks the opset, drops
# attributes the opset lacks at their default, and widens (or casts) int32
# values that feed int64-only inputs (docs/formats/onnx.md, "Writing").

def onnx_path(name, sub):
    return find(os.path.join("onnx", name + ".onnx")) or find(os.path.join(sub, name + ".onnx"))


def graph_of(path):
    return json.loads(run("info", "--json", path))["graph"]


def constants_of(path):
    ts = json.loads(run("ls", "--json", "--hash", path))["tensors"]
    return [{k: t.get(k) for k in ("name", "dtype", "shape", "sha256")} for t in ts]


def convert(src, dst, *opts):
    run("convert", "--force", *opts, src, dst)
    run("validate", dst)


def same_io(got, want):
    """Graph inputs/outputs equal, but a shape tensio has as unknown may be one
    rten-convert inferred."""
    if len(got) != len(want):
        return False
    for a, b in zip(got, want):
        if a.get("shape") is None and b.get("shape") is not None:
            b = dict(b, shape=None)
        if a != b:
            return False
    return True


def check_reference(name, tmp, src=None, ref=None):
    src = src or onnx_path(name, os.path.join("rten", name))
    ref = ref or find(os.path.join("rten", name, name + ".v2.rten"))
    out = os.path.join(tmp, name + ".rten")
    convert(src, out)
    got, want = graph_of(out), graph_of(ref)
    for key in ("inputs", "outputs"):
        assert same_io(got.get(key, []), want.get(key, [])), "%s: %r != reference %r" % (
            key, got.get(key), want.get(key))
    for key in ("values", "constants", "captures"):
        assert got.get(key) == want.get(key), "%s: %r != reference %r" % (
            key, got.get(key), want.get(key))
    assert len(got["nodes"]) == len(want["nodes"]), "operator count %d != %d" % (
        len(got["nodes"]), len(want["nodes"]))
    for a, b in zip(got["nodes"], want["nodes"]):
        assert a == b, "operator %r != reference %r" % (a, b)
    gm, wm = got.get("metadata", {}), want.get("metadata", {})
    for k in set(gm) | set(wm):
        if k in ALLOWED_META_ONLY_IN_REFERENCE and k not in gm:
            continue
        assert gm.get(k) == wm.get(k), "metadata %s: %r != reference %r" % (
            k, gm.get(k), wm.get(k))
    assert "onnx_hash" in gm, "no onnx_hash"
    ca, cb = constants_of(out), constants_of(ref)
    assert len(ca) == len(cb), "constant count %d != %d" % (len(ca), len(cb))
    for a, b in zip(ca, cb):
        if (name, a["name"]) in DEVIATIONS and a["sha256"] != b["sha256"]:
            a, b = dict(a, sha256=None), dict(b, sha256=None)
        assert a == b, "constant %r != reference %r" % (a, b)


def check_converts(name, sub, tmp):
    src = onnx_path(name, sub)
    out = os.path.join(tmp, name + ".rten")
    convert(src, out)
    g = graph_of(out)
    assert g["nodes"], "no operators"
    # the same constants as the ONNX initializers and Constant ops, by name
    names = {c["name"] for c in constants_of(out)}
    for c in constants_of(src):
        assert c["name"] in names, "constant %s missing" % c["name"]


def check_onnx_file(path, vector_dir):
    import onnx  # Debian's python3-onnx

    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    if ORT and vector_dir:
        run_in_ort(path, vector_dir)


def check_to_onnx(name, version, tmp):
    ref = find(os.path.join("rten", name, "%s.%s.rten" % (name, version)))
    assert ref, "no %s.%s.rten" % (name, version)
    out = os.path.join(tmp, "%s.%s.onnx" % (name, version))
    run("convert", "--force", ref, out)
    check_onnx_file(out, os.path.dirname(ref))


def check_onnx_rten_onnx(src, vector_dir, tmp):
    """ONNX -> rten -> ONNX: the result passes the checker (and, with a
    vector directory holding input_*.npy/expected_*.npy, runs in ORT)."""
    base = os.path.splitext(os.path.basename(src))[0]
    mid = os.path.join(tmp, base + ".rt.rten")
    out = os.path.join(tmp, base + ".rt.onnx")
    convert(src, mid)
    run("convert", "--force", mid, out)
    import onnx

    try:
        onnx.checker.check_model(onnx.load(src), full_check=True)
    except onnx.checker.ValidationError as ex:
        # the source itself fails (tests/vectors/rten_convert: graph outputs
        # without a shape, which Debian's onnx 1.12 checker requires): the
        # result must fail for the same reason, not another one
        try:
            check_onnx_file(out, None)
        except onnx.checker.ValidationError as ex2:
            assert str(ex2) == str(ex), "%s, source: %s" % (ex2, ex)
            return
        raise AssertionError("the source fails the checker (%s), the result passes" % ex)
    check_onnx_file(out, vector_dir)


def shape_arith(tmp):
    """An ONNX model that computes Slice bounds and a Reshape shape from
    Shape, as torch exports shufflenet's channel split: ONNX types all of
    it int64, rten (after the int64 -> int32 narrowing) int32. The ONNX
    written back from the .rten must bind them again (Add's B as its A,
    Slice's starts and axes as its ends, Concat's inputs): it used to write
    Add(int64, int32). Returns the model and a vector directory."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def const(name, vals):
        return numpy_helper.from_array(np.array(vals, dtype=np.int64), name)

    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "one"], ["g"], axis=0),
        helper.make_node("Add", ["g", "one"], ["a"]),
        helper.make_node("Div", ["a", "two"], ["h"]),
        helper.make_node("Slice", ["x", "zero", "h", "one"], ["y"]),
        helper.make_node("Mul", ["h", "two"], ["m"]),
        helper.make_node("Concat", ["one", "m"], ["shape"], axis=0),
        helper.make_node("Reshape", ["y", "shape"], ["z"]),
    ]
    graph = helper.make_graph(
        nodes, "shape_arith",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 7, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 2]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 8])],
        [const("zero", [0]), const("one", [1]), const("two", [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    src = os.path.join(tmp, "shape_arith.onnx")
    onnx.save(model, src)
    vec = os.path.join(tmp, "shape_arith")
    os.mkdir(vec)
    x = np.arange(14, dtype=np.float32).reshape(1, 7, 2)
    np.save(os.path.join(vec, "input_0.npy"), x)
    np.save(os.path.join(vec, "expected_0.npy"), x[:, :4])
    np.save(os.path.join(vec, "expected_1.npy"), x[:, :4].reshape(1, 8))
    with open(os.path.join(vec, "reference_io.json"), "w") as f:
        json.dump({"inputs": [{"name": "x", "file": "input_0.npy"}],
                   "outputs": [{"name": "y", "file": "expected_0.npy"},
                               {"name": "z", "file": "expected_1.npy"}]}, f)
    return src, vec


def check_tmfile_onnx_ort(name, vector_dir):
    """The tmfile vector's .onnx itself in onnxruntime gives Tengine's output
    (both the reference and the path through tensio agree with the engine
    the tmfile came from)."""
    run_in_ort(onnx_path(name, "tmfile"), vector_dir)


def big_hash(tmp):
    """onnx_hash of an .onnx large enough (96 MiB) that the hashing thread
    times reading the file by pread() against reading its mapping before it
    picks one (src/core/sha256.c): the SHA-256 of the file, whichever way;
    the weights come through unchanged."""
    import hashlib
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = np.random.default_rng(3).standard_normal(24 << 20).astype(np.float32).reshape(-1, 1024)
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])], "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1024])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(w.shape))],
        [numpy_helper.from_array(w, "w")])
    src = os.path.join(tmp, "big_hash.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), src)
    want = hashlib.sha256(open(src, "rb").read()).hexdigest()
    out = os.path.join(tmp, "big_hash.rten")
    convert(src, out)
    assert graph_of(out)["metadata"]["onnx_hash"] == want
    (c,) = [t for t in constants_of(out) if t["name"] == "w"]
    assert c["sha256"] == hashlib.sha256(w.tobytes()).hexdigest()
    os.unlink(src)
    os.unlink(out)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        case("onnx->rten of 96 MiB: onnx_hash is the file's SHA-256", big_hash, tmp)
        for name in RTEN:
            if not onnx_path(name, os.path.join("rten", name)) or not find(
                    os.path.join("rten", name, name + ".v2.rten")):
                print("SKIPPED: rten/%s" % name)
                continue
            case("onnx->rten %s equals rten-convert's" % name, check_reference, name, tmp)
            for version in ("v1", "v2"):
                case("rten->onnx %s.%s passes the checker" % (name, version), check_to_onnx,
                     name, version, tmp)
            case("onnx->rten->onnx %s" % name, check_onnx_rten_onnx,
                 onnx_path(name, os.path.join("rten", name)),
                 os.path.dirname(find(os.path.join("rten", name, name + ".v2.rten"))), tmp)
        for name in RTEN_CONVERT:
            src = find(os.path.join("rten_convert", name + ".onnx"))
            ref = find(os.path.join("rten_convert", name + ".v2.rten"))
            if not src or not ref:
                print("SKIPPED: rten_convert/%s" % name)
                continue
            case("onnx->rten %s equals rten-convert's" % name, check_reference, name, tmp,
                 src, ref)
            case("onnx->rten->onnx %s" % name, check_onnx_rten_onnx, src, None, tmp)
        for name in TMFILE:
            if not onnx_path(name, "tmfile"):
                print("SKIPPED: tmfile/%s.onnx" % name)
                continue
            case("onnx->rten tmfile/%s" % name, check_converts, name, "tmfile", tmp)
            vec = tmfile_vector(name, tmp, "onnx_name") if ORT else None
            if ORT and not vec:
                print("SKIPPED: tmfile/%s in onnxruntime (inputs/outputs missing)" % name)
            if vec:
                case("tmfile/%s.onnx in onnxruntime gives Tengine's output" % name,
                     check_tmfile_onnx_ort, name, vec)
            case("onnx->rten->onnx tmfile/%s" % name, check_onnx_rten_onnx,
                 onnx_path(name, "tmfile"), vec, tmp)
        src, vec = shape_arith(tmp)
        case("onnx->rten->onnx shape arithmetic (int64 from Shape)", check_onnx_rten_onnx, src,
             vec, tmp)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
