#!/usr/bin/python3
"""tmfile -> ONNX and tmfile -> rten through the CLI, on the real vectors.

Usage: /usr/bin/python3 test_convert_tmfile.py /path/to/tensio [--ort]

For every tmfile vector (tmfile/*.tmfile under $TIO_TEST_VECTORS, default
tests/vectors, and $TIO_SHARED_VECTORS, default ../shared/vectors; a name
found in both is taken from the first):
- tmfile -> .onnx: onnx.checker.check_model(full_check=True) accepts it
  (Debian's python3-onnx) and, with --ort, onnxruntime (tests/ort/run_model.js)
  run on the inputs Tengine ran (<name>.in*.bin) gives the outputs Tengine
  computed (<name>.out*.bin), abs 1e-4 + rel 1e-4.
- tmfile -> .rten (the tmfile.* model metadata, tmfile's own fields, are
  dropped without --drop-metadata; the test passes it anyway): `tensio validate` reads it back, and its ONNX re-export passes the
  checker and runs the same in onnxruntime.
- tmfile -> tmfile reproduces the file outside the byte ranges the manifest
  (<name>.json, nondeterministic_bytes) masks.
- ReLu6 (mlp_matmul_add with its ReLu made a ReLu6, whose values stay below
  6): tmfile -> ONNX gives Clip(x, 0, 6), which passes the checker and gives
  the vector's outputs in onnxruntime, as does tmfile -> rten -> ONNX.
- Conv + ReLU6 (cnn_small and mnist_repo with their Convolutions' activation
  made 6, whose values stay below 6): each Conv is followed by a Clip(0, 6)
  in ONNX, the model gives the vector's outputs in onnxruntime and through
  rten, and tmfile -> tmfile reproduces the patched file.
- Reshape with its shape in the param only (concat_reshape_softmax with the
  Reshape's second input cut): the same outputs in onnxruntime and through
  rten, and tmfile -> tmfile keeps the one-input Reshape.
A vector whose manifest or .bin files are missing prints "SKIPPED: <rel>". The
last line printed is "N passed, M failed"; the exit status is non-zero on any
failure.
"""

import glob
import json
import os
import subprocess
import sys
import tempfile

from convtest import (LOCAL, ORT, SHARED, TENSIO, case, find, run, run_in_ort, summary,
                      tmfile_vector)

# The vectors this test must see: a missing one is reported, not passed over.
TMFILE = ["big_fc", "cnn_small", "concat_reshape_softmax", "mlp_matmul_add", "mnist_repo"]

def names():
    seen = list(TMFILE)
    for base in (LOCAL, SHARED):
        for p in sorted(glob.glob(os.path.join(base, "tmfile", "*.tmfile"))):
            n = os.path.splitext(os.path.basename(p))[0]
            if n not in seen:
                seen.append(n)
    return seen


def manifest(name):
    p = find(os.path.join("tmfile", name + ".json"))
    if not p:
        return None
    with open(p) as f:
        return json.load(f)


def check_onnx(path, vdir):
    import onnx  # Debian's python3-onnx

    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    ops = [n.op_type for n in model.graph.node]
    for bad in ("Const", "InputOp"):
        assert bad not in ops, "the ONNX graph has a %s operator" % bad
    return run_in_ort(path, vdir) if ORT and vdir else None


def to_onnx(src, tmp, name, vdir):
    out = os.path.join(tmp, name + ".onnx")
    run("convert", "--force", src, out)
    return check_onnx(out, vdir)


def to_rten(src, tmp, name, vdir):
    mid = os.path.join(tmp, name + ".rten")
    out = os.path.join(tmp, name + ".rten.onnx")
    run("convert", "--force", "--drop-metadata", src, mid)
    run("validate", mid)
    run("convert", "--force", mid, out)
    return check_onnx(out, vdir)


def masked_identity(src, tmp, name):
    masked_identity_of(src, tmp, name, name)


def masked_identity_of(src, tmp, name, out_name):
    out = os.path.join(tmp, out_name + ".tm.tmfile")
    run("convert", "--force", src, out)
    with open(src, "rb") as f:
        a = bytearray(f.read())
    with open(out, "rb") as f:
        b = bytearray(f.read())
    assert len(a) == len(b), "size %d, the original %d" % (len(b), len(a))
    m = manifest(name) or {}
    for mk in m.get("nondeterministic_bytes", {}).get("masks", []):
        for i in range(mk["start"], mk["end"]):
            a[i] = b[i] = 0
    # TM2_Header padding after ver_compile: never set by the official writer
    for i in (6, 7):
        a[i] = b[i] = 0
    diff = [i for i in range(len(a)) if a[i] != b[i]]
    assert not diff, "%d bytes differ, the first at %d" % (len(diff), diff[0])


def patched(name, tmp, suffix, op, fn):
    """<name>.tmfile with fn(bytes, node) applied to each node of Tengine
    operator `op` (its manifest entry), written to tmp; None when missing."""
    src, m = find(os.path.join("tmfile", name + ".tmfile")), manifest(name)
    if not src or not m:
        return None
    with open(src, "rb") as f:
        b = bytearray(f.read())
    for n in m["nodes"]:
        if n["tm2_op_name"] == op:
            fn(b, n)
    out = os.path.join(tmp, name + suffix + ".tmfile")
    with open(out, "wb") as f:
        f.write(b)
    return out


def both_ways(src, tmp, name, vdir):
    """tmfile -> ONNX and tmfile -> rten -> ONNX of a patched vector."""
    r = to_onnx(src, tmp, name, vdir)
    r2 = to_rten(src, tmp, name, vdir)
    return "%s; via rten: %s" % (r, r2) if r else None


def relu6_variant(tmp):
    """mlp_matmul_add.tmfile with its ReLu (20) made a ReLu6 (21, no param)."""
    import struct

    def fn(b, n):
        op = struct.unpack_from("<I", b, n["struct_offset"] + 12)[0]
        struct.pack_into("<II", b, op + 4, 21, 0)
    return patched("mlp_matmul_add", tmp, ".relu6", "ReLu", fn)


def check_relu6(src, tmp, vdir):
    import onnx

    out = os.path.join(tmp, "relu6.onnx")
    run("convert", "--force", src, out)
    model = onnx.load(out)
    clips = [n for n in model.graph.node if n.op_type == "Clip"]
    assert len(clips) == 1 and len(clips[0].input) == 3, [n.op_type for n in model.graph.node]
    return both_ways(src, tmp, "relu6", vdir)


def conv_relu6_variant(name, tmp):
    """<name>.tmfile with every Convolution's activation 0 (ReLU) made 6."""
    import struct

    def fn(b, n):
        at = n["param_offset"] + 36  # TM2_ConvParam.activation
        assert struct.unpack_from("<i", b, at)[0] == 0
        struct.pack_into("<i", b, at, 6)
    return patched(name, tmp, ".r6", "Convolution", fn)


def check_conv_relu6(name, src, tmp, vdir):
    import onnx

    out = os.path.join(tmp, name + ".r6.onnx")
    run("convert", "--force", src, out)
    model = onnx.load(out)
    ops = [n.op_type for n in model.graph.node]
    convs = [i for i, o in enumerate(ops) if o == "Conv"]
    assert convs and all(ops[i + 1] == "Clip" and len(model.graph.node[i + 1].input) == 3
                         for i in convs), ops
    masked_identity_of(src, tmp, name, name + ".r6")
    return both_ways(src, tmp, name + ".r6", vdir)


def reshape_one_input_variant(tmp):
    """concat_reshape_softmax.tmfile with the Reshape's input vector cut to 1."""
    import struct

    def fn(b, n):
        vi = struct.unpack_from("<I", b, n["struct_offset"] + 4)[0]
        assert struct.unpack_from("<I", b, vi)[0] == 2
        struct.pack_into("<I", b, vi, 1)
    return patched("concat_reshape_softmax", tmp, ".r1", "Reshape", fn)


def check_reshape_one_input(src, tmp, vdir):
    res = both_ways(src, tmp, "concat_reshape_softmax.r1", vdir)
    # the patched file has 4 bytes no write keeps (the cut vector's second
    # entry): the write keeps the one-input Reshape, and writes itself again
    once, twice = os.path.join(tmp, "r1.once.tmfile"), os.path.join(tmp, "r1.twice.tmfile")
    run("convert", "--force", src, once)
    run("convert", "--force", once, twice)
    with open(once, "rb") as f1, open(twice, "rb") as f2:
        assert f1.read() == f2.read(), "tmfile -> tmfile is not stable"
    nodes = json.loads(run("info", "--json", "--native", once))["graph"]["nodes"]
    assert [len(n["inputs"]) for n in nodes if n["op"] == "Reshape"] == [1], nodes
    return res


# ONNX -> tmfile: every vector's lowering (with convert_tool's fusions, on
# by default) equals convert_tool's tmfile beside it: node list, params and
# constants, and every byte outside the manifest's masks (the bytes the
# reference leaves uninitialised).


def native(path):
    g = json.loads(run("info", "--native", "--json", path))["graph"]
    return [(n["name"], n["op"], n.get("native_id"), n["inputs"], n["outputs"], n["attrs"])
            for n in g["nodes"]]


def constants(path):
    t = json.loads(run("ls", "--json", "--hash", path))["tensors"]
    return [(e["name"], e["dtype"], e["shape"], e.get("sha256")) for e in t]


def from_onnx(onnx_src, ref, tmp, name, vdir, compare):
    out = os.path.join(tmp, name + ".from-onnx.tmfile")
    run("convert", "--force", "--drop-metadata", onnx_src, out)
    if compare:
        a, b = native(out), native(ref)
        assert len(a) == len(b), "%d nodes, the reference has %d" % (len(a), len(b))
        for x, y in zip(a, b):
            assert x == y, "node %s differs from the reference's %s" % (x, y)
        ca, cb = constants(out), constants(ref)
        assert ca == cb, "constants %s differ from the reference's %s" % (ca, cb)
        manifest = find(os.path.join("tmfile", name + ".json"))
        if manifest:
            with open(manifest) as f:
                masks = json.load(f).get("nondeterministic_bytes", {}).get("masks", [])
            with open(out, "rb") as f1, open(ref, "rb") as f2:
                got, want = bytearray(f1.read()), bytearray(f2.read())
            assert len(got) == len(want), "%d bytes, the reference has %d" % (len(got), len(want))
            for m in masks:
                got[m["start"]:m["end"]] = want[m["start"]:m["end"]]
            diff = [k for k in range(len(got)) if got[k] != want[k]]
            assert not diff, "bytes differ from convert_tool's at %s" % diff[:8]
        else:
            print("SKIPPED: tmfile/%s.json (the byte comparison's masks)" % name)
    # the result reads back and converts to ONNX that runs with the outputs
    return to_onnx(out, tmp, name + ".from-onnx", vdir)


def from_onnx_nofuse(onnx_src, tmp, name, vdir):
    """--no-fuse keeps every node of the source: one node per ONNX node (no
    Relu folded into a Conv), and the result still runs."""
    import onnx
    out = os.path.join(tmp, name + ".nofuse.tmfile")
    run("convert", "--force", "--drop-metadata", "--no-fuse", onnx_src, out)
    m = onnx.load(onnx_src)
    ops = [n.op_type for n in m.graph.node if n.op_type not in ("Constant", "Identity")]
    got = [n[1] for n in native(out) if n[1] not in ("Const", "InputOp")]
    assert got == ops, "--no-fuse: %s, the source has %s" % (got, ops)
    return to_onnx(out, tmp, name + ".nofuse", vdir)


def unknown_ops(tmp, count):
    """An ONNX graph with `count` Erf nodes and a Celu around a Relu: the
    one error names every node tmfile cannot lower (shortened with ', ...')."""
    import onnx
    from onnx import TensorProto, helper

    nodes, prev = [], "x"
    for k in range(count):
        nodes.append(helper.make_node("Erf", [prev], ["e%d" % k], name="erf%d" % k))
        prev = "e%d" % k
    nodes.append(helper.make_node("Relu", [prev], ["r"], name="relu"))
    nodes.append(helper.make_node("Celu", ["r"], ["y"], name="hs"))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    src, out = os.path.join(tmp, "unk.onnx"), os.path.join(tmp, "unk.tmfile")
    onnx.save(m, src)
    r = subprocess.run([TENSIO, "convert", "--force", "--drop-metadata", src, out],
                       capture_output=True, text=True)
    assert r.returncode != 0 and not os.path.exists(out), "the conversion did not fail"
    msg = r.stderr
    assert "tmfile has no operator for Erf, Celu (%d nodes: " % (count + 1) in msg, msg
    if count <= 3:
        want = ", ".join(["'erf%d'" % k for k in range(count)] + ["'hs'"])
        assert want + ";" in msg, msg
    else:
        assert "'erf0', 'erf1'" in msg and ", ...;" in msg, msg
    assert "'relu'" not in msg, msg


def folded_shape_arithmetic(tmp):
    """Shape arithmetic on static shapes (Shape -> Gather -> Unsqueeze ->
    Concat into a Reshape, ConstantOfShape of a Shape) is folded: the tmfile
    has none of those operators, and read back as ONNX it computes the
    source's outputs in onnxruntime. Also the erf form of GELU becomes one
    Tengine Gelu, and a MaxPool whose ceil_mode matters rounds up."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def const(name, arr):
        return helper.make_node("Constant", [], [name], name=name,
                                value=numpy_helper.from_array(np.asarray(arr), name))

    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        const("one", np.array(1, dtype=np.int64)),
        helper.make_node("Gather", ["s", "one"], ["c"], name="gather", axis=0),
        const("ax0", np.array([0], dtype=np.int64)),
        helper.make_node("Unsqueeze", ["c", "ax0"], ["cu"], name="unsq"),
        const("b1", np.array([1], dtype=np.int64)),
        const("m1", np.array([-1], dtype=np.int64)),
        helper.make_node("Concat", ["b1", "cu", "m1"], ["shp"], name="concat", axis=0),
        helper.make_node("Reshape", ["x", "shp"], ["y"], name="reshape"),
        helper.make_node("Shape", ["y"], ["ys"], name="shape2"),
        helper.make_node("ConstantOfShape", ["ys"], ["z"], name="cos",
                         value=numpy_helper.from_array(np.array([0.5], dtype=np.float32))),
        helper.make_node("Add", ["y", "z"], ["out"], name="add"),
        helper.make_node("MaxPool", ["x"], ["pool"], name="pool", kernel_shape=[3, 3],
                         strides=[2, 2], ceil_mode=1),
    ]
    g = helper.make_graph(nodes, "fold",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 4, 36]),
                           helper.make_tensor_value_info("pool", TensorProto.FLOAT, [1, 4, 3, 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    src, tm, back = (os.path.join(tmp, n) for n in ("fold.onnx", "fold.tmfile", "fold.back.onnx"))
    onnx.save(m, src)
    run("convert", "--force", "--drop-metadata", src, tm)
    ops = [n[1] for n in native(tm)]
    for gone in ("Shape", "Gather", "Unsqueeze", "Concat", "ConstantOfShape", "Constant"):
        assert gone not in ops, "%s left in %s" % (gone, ops)
    pool = [n for n in native(tm) if n[1] == "MaxPool"][0]
    assert pool[5]["caffe_flavor"] == 1, pool  # ONNX's 3x3, not Tengine's floor 2x2
    run("convert", "--force", tm, back)
    onnx.checker.check_model(onnx.load(back), full_check=True)
    if not ORT:
        return "SKIPPED onnxruntime (not installed)"
    x = np.random.RandomState(0).standard_normal((1, 4, 6, 6)).astype(np.float32)
    vdir = os.path.join(tmp, "fold.vec")
    os.makedirs(vdir, exist_ok=True)
    np.save(os.path.join(vdir, "x.npy"), x)
    y = x.reshape(1, 4, 36) + 0.5
    p = np.full((1, 4, 3, 3), -np.inf, dtype=np.float32)
    for i in range(3):
        for j in range(3):
            p[:, :, i, j] = x[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3].max(axis=(2, 3))
    np.save(os.path.join(vdir, "out.npy"), y)
    np.save(os.path.join(vdir, "pool.npy"), p)
    with open(os.path.join(vdir, "reference_io.json"), "w") as f:
        json.dump({"inputs": [{"name": "x", "file": "x.npy"}],
                   "outputs": [{"name": "out", "file": "out.npy"},
                               {"name": "pool", "file": "pool.npy"}]}, f)
    res = run_in_ort(back, vdir)
    run_in_ort(src, vdir)
    return res


def gelu_fused(tmp):
    """The erf form of GELU as torch exports it becomes one Tengine Gelu."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(np.array(v, dtype=np.float32), n)
             for n, v in (("sqrt2", 1.4142135), ("one", 1.0), ("half", 0.5))]
    nodes = [helper.make_node("Div", ["x", "sqrt2"], ["d"], name="div"),
             helper.make_node("Erf", ["d"], ["e"], name="erf"),
             helper.make_node("Add", ["e", "one"], ["a"], name="add"),
             helper.make_node("Mul", ["x", "a"], ["m"], name="mul"),
             helper.make_node("Mul", ["m", "half"], ["y"], name="mul2")]
    g = helper.make_graph(nodes, "gelu",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8])],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    src, tm = os.path.join(tmp, "gelu.onnx"), os.path.join(tmp, "gelu.tmfile")
    onnx.save(m, src)
    run("convert", "--force", "--drop-metadata", src, tm)
    got = [(n[0], n[1], n[3], n[4]) for n in native(tm) if n[1] not in ("Const", "InputOp")]
    assert got == [("mul2", "Gelu", ["x"], ["y"])], got
    consts = [c[0] for c in constants(tm)]
    assert consts == [], "constants left: %s" % consts


def info_native_params(src, rten_src):
    """`tensio info` shows a tmfile's ONNX form with each operator's Tengine
    params on the line below (and as native_attrs in --json); an rten graph,
    whose params are its ONNX attributes, shows none."""
    lines = run("info", src).splitlines()
    at = [k for k, l in enumerate(lines) if "conv1  Conv [Convolution, id 5]" in l]
    assert at, lines
    nxt = lines[at[0] + 1].strip()
    assert nxt.startswith("tmfile: kernel_h=3 kernel_w=3 ") and "activation=relu(0)" in nxt, nxt
    nodes = json.loads(run("info", "--json", src))["graph"]["nodes"]
    conv = [n for n in nodes if n["name"] == "conv1"][0]
    assert conv["native_attrs"]["kernel_h"] == 3 and conv["native_attrs"]["activation"] == 0, conv
    assert "kernel_h" not in conv["attrs"], conv
    if rten_src:
        assert "rten:" not in run("info", rten_src)
        assert not any("native_attrs" in n
                       for n in json.loads(run("info", "--json", rten_src))["graph"]["nodes"])


def main():
    with tempfile.TemporaryDirectory() as tmp:
        case("onnx->tmfile: shape arithmetic folded, ceil_mode as Tengine rounds up",
             folded_shape_arithmetic, tmp)
        case("onnx->tmfile: erf GELU as one Gelu", gelu_fused, tmp)
        src = find(os.path.join("tmfile", "cnn_small.tmfile"))
        if src:
            case("info: the Tengine params beside the ONNX form", info_native_params, src,
                 find(os.path.join("rten", "small_cnn", "small_cnn.v2.rten")))
        else:
            print("SKIPPED: tmfile/cnn_small.tmfile (info's Tengine params)")
        case("onnx->tmfile: one error lists every node it cannot lower", unknown_ops, tmp, 2)
        case("onnx->tmfile: ... and shortens a long list", unknown_ops, tmp, 200)
        for name in TMFILE:
            osrc = find(os.path.join("tmfile", name + ".onnx"))
            ref = find(os.path.join("tmfile", name + ".tmfile"))
            if not osrc or not ref:
                print("SKIPPED: tmfile/%s.onnx" % name)
                continue
            vdir = tmfile_vector(name, tmp, "tensor") if ORT else None
            case("onnx->tmfile %s (= convert_tool's, byte for byte outside the masks)" % name,
                 from_onnx, osrc, ref, tmp, name, vdir, True)
            case("onnx->tmfile %s --no-fuse" % name, from_onnx_nofuse, osrc, tmp, name, vdir)
        src1 = reshape_one_input_variant(tmp)
        if not src1:
            print("SKIPPED: tmfile/concat_reshape_softmax.tmfile with a one-input Reshape")
        else:
            case("tmfile->onnx Reshape with its shape in the param only", check_reshape_one_input,
                 src1, tmp, tmfile_vector("concat_reshape_softmax", tmp, "tensor") if ORT else None)
        for name in ("cnn_small", "mnist_repo"):
            src = conv_relu6_variant(name, tmp)
            if not src:
                print("SKIPPED: tmfile/%s.tmfile with Conv + ReLU6" % name)
                continue
            case("tmfile->onnx %s Conv + ReLU6 as Conv + Clip" % name, check_conv_relu6, name,
                 src, tmp, tmfile_vector(name, tmp, "tensor") if ORT else None)
        src6 = relu6_variant(tmp)
        if not src6:
            print("SKIPPED: tmfile/mlp_matmul_add.tmfile as ReLu6")
        else:
            case("tmfile->onnx ReLu6 as Clip", check_relu6, src6, tmp,
                 tmfile_vector("mlp_matmul_add", tmp, "tensor") if ORT else None)
        for name in names():
            rel = os.path.join("tmfile", name + ".tmfile")
            src = find(rel)
            if not src:
                print("SKIPPED: " + rel)
                continue
            vdir = tmfile_vector(name, tmp, "tensor") if ORT else None
            if ORT and not vdir:
                print("SKIPPED: tmfile/%s in onnxruntime (manifest or .bin missing)" % name)
            case("tmfile->onnx %s" % name, to_onnx, src, tmp, name, vdir)
            case("tmfile->rten->onnx %s" % name, to_rten, src, tmp, name, vdir)
            case("tmfile->tmfile %s (masked identity)" % name, masked_identity, src, tmp, name)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
