#!/usr/bin/python3
"""`tensio convert --cast` into ONNX: a model's weights stored as float16 or
bfloat16, each with a Cast back to its declared type.

Usage: /usr/bin/python3 test_cast_weights.py /path/to/tensio

1. Every model of ONNX's backend test corpus (Debian's libonnx-testdata: node,
   pytorch-converted, pytorch-operator, simple) that tensio opens, converted
   with `--cast float16`:
   - a model without float initializers gives the bytes a plain
     `tensio convert` gives (a Constant node's value, a TENSOR attribute, is
     never cast: its node declares its type);
   - a model with some (the 47 with weights) passes
     onnx.checker.check_model(full_check=True); each float initializer X is
     gone, and a Cast node before the model's own nodes makes X from an
     initializer of dtype float16 whose bits are torch's `Tensor.to()` of X
     (float64 through float32, as torch casts), `to` = X's type; every other
     initializer, the nodes after the Casts and the outputs are the plain
     conversion's; the inputs too, less the cast initializers an IR 3 model
     lists among them (its IR becomes 4, which lets an initializer be no
     input);
   - onnxruntime (npm's onnxruntime-node, tests/ort) runs it on the corpus's
     inputs and gives exactly the outputs of a reference: the plain
     conversion with each float initializer replaced by its rounded values
     (written by python3-onnx), i.e. the model computes as before from
     rounded weights, bit for bit.
2. torchvision's resnet18 and mobilenet_v2 (random weights, exported by
   Debian's torch at opset 13) cast to float16 and to bfloat16: the same
   checks on a random input, and the file's size (about half).
3. Refusals: bfloat16 below opset 13 names the opset and the option that
   raises it; with `--opset 13` the same model converts and runs.

Prints one line per part with the counts; exits non-zero on any failure. A
missing corpus, onnx, torch or onnxruntime fails: nothing is skipped.
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

if len(sys.argv) != 2:
    print("usage: test_cast_weights.py /path/to/tensio", file=sys.stderr)
    sys.exit(2)
TENSIO = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
ORT_DIR = os.path.join(os.path.dirname(HERE), "ort")
CORPUS = "/usr/share/libonnx-testdata/data"
KINDS = ("node", "pytorch-converted", "pytorch-operator", "simple")

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
    import torch
except ImportError as e:
    print("FAIL: %s (python3-onnx, python3-numpy, python3-torch: scripts/install-deps.sh)" % e)
    sys.exit(1)
if not os.path.isfile(os.path.join(ORT_DIR, "node_modules", "onnxruntime-node", "package.json")):
    print("FAIL: onnxruntime-node is not installed in tests/ort (scripts/install-ort.sh)")
    sys.exit(1)

FAILS = []
FLOATS = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.DOUBLE: np.float64,
          onnx.TensorProto.FLOAT16: np.float16}
TO = {"float16": onnx.TensorProto.FLOAT16, "bfloat16": onnx.TensorProto.BFLOAT16}


def fail(what):
    FAILS.append(what)
    print("FAIL:", what)


def tensio(*args):
    return subprocess.run([TENSIO, *args], capture_output=True, text=True)


def rounded(a, target):
    """torch's cast of array a to target: (the stored bits as uint16, the
    values back in a's dtype)."""
    t = torch.from_numpy(np.array(a))
    if t.dtype == torch.float64:
        t = t.to(torch.float32)  # torch casts float64 through float32
    h = t.to(torch.float16 if target == "float16" else torch.bfloat16)
    bits = h.view(torch.int16).numpy().view(np.uint16)
    back = {np.dtype(np.float64): torch.float64, np.dtype(np.float32): torch.float32,
            np.dtype(np.float16): torch.float16}[a.dtype]
    return bits, h.to(back).numpy()


def stored_bits(t):
    """The uint16 bits of a float16/bfloat16 TensorProto."""
    if t.raw_data:
        return np.frombuffer(t.raw_data, dtype=np.uint16)
    return np.array(t.int32_data, dtype=np.uint16)


def check_cast(orig, out, target, label):
    """orig: the plain conversion's ModelProto; out: the cast one. Returns
    the reference model (orig with rounded weights) or None on a failure."""
    want_type = TO[target]
    g0, g1 = orig.graph, out.graph
    try:
        onnx.checker.check_model(out, full_check=True)
    except Exception as e:  # noqa: BLE001 - the checker's own exceptions
        fail("%s: checker: %s" % (label, str(e).splitlines()[0][:200]))
        return None
    cast_names = [t.name for t in g0.initializer
                  if t.data_type in FLOATS and t.data_type != want_type]
    casts = {n.output[0]: n for n in g1.node[:len(cast_names)]}
    if sorted(casts) != sorted(cast_names) or any(n.op_type != "Cast" for n in casts.values()):
        fail("%s: the first %d nodes are not one Cast per float initializer"
             % (label, len(cast_names)))
        return None
    inits = {t.name: t for t in g1.initializer}
    ref = onnx.ModelProto()
    ref.CopyFrom(orig)
    for t0, tr in zip(g0.initializer, ref.graph.initializer):
        if t0.name not in casts:
            if t0.name not in inits or inits[t0.name].SerializeToString() != t0.SerializeToString():
                fail("%s: initializer %r changed" % (label, t0.name))
                return None
            continue
        node = casts[t0.name]
        to = [a.i for a in node.attribute if a.name == "to"]
        src = inits.get(node.input[0])
        if to != [t0.data_type] or src is None or src.data_type != want_type or \
                list(src.dims) != list(t0.dims) or t0.name in inits:
            fail("%s: %r: Cast to=%s from %r (%s), expected to=%d from a %s initializer"
                 % (label, t0.name, to, node.input[0], src and src.data_type, t0.data_type, target))
            return None
        a = numpy_helper.to_array(t0)
        bits, back = rounded(a.ravel(), target)
        if not np.array_equal(stored_bits(src), bits):
            fail("%s: %r: the stored %s bits are not torch's" % (label, t0.name, target))
            return None
        tr.CopyFrom(numpy_helper.from_array(back.reshape(a.shape).astype(a.dtype), t0.name))
    n = len(cast_names)
    if [x.SerializeToString() for x in g1.node[n:]] != [x.SerializeToString() for x in g0.node]:
        fail("%s: the nodes after the Casts are not the plain conversion's" % label)
        return None
    ins0 = [x.SerializeToString() for x in g0.input if x.name not in casts]
    if [x.SerializeToString() for x in g1.input] != ins0 or \
            [x.SerializeToString() for x in g1.output] != \
            [x.SerializeToString() for x in g0.output]:
        fail("%s: inputs or outputs differ from the plain conversion's" % label)
        return None
    want_ir = max(orig.ir_version, 4) if n else orig.ir_version
    if out.ir_version != want_ir:
        fail("%s: ir_version %d, expected %d" % (label, out.ir_version, want_ir))
        return None
    return ref


def run_ort(jobs, tmp):
    f = os.path.join(tmp, "jobs.json")
    with open(f, "w") as fh:
        json.dump(jobs, fh)
    p = subprocess.run(["node", os.path.join(ORT_DIR, "run_batch.js"), f], capture_output=True,
                       text=True, cwd=ORT_DIR)
    if p.returncode != 0:
        fail("run_batch.js: exit %d: %s" % (p.returncode, p.stderr.strip()[-300:]))
        return {}
    return {j["id"]: j for j in map(json.loads, p.stdout.splitlines())}


GAPS = []


def compare_runs(res, a, b, n_out, label):
    """Jobs a (the cast model) and b (the reference) gave the same outputs;
    or onnxruntime refused both alike (no kernel for an opset-6 operator:
    its gap, counted in GAPS)."""
    ra, rb = res.get(a["id"]), res.get(b["id"])
    if ra and rb and not ra["ok"] and not rb["ok"] and ra["error"] == rb["error"] and \
            "Could not find an implementation" in ra["error"]:
        GAPS.append(label)
        return False
    if not ra or not rb or not ra["ok"] or not rb["ok"]:
        fail("%s: onnxruntime: %s" % (label, (ra or {}).get("error") or (rb or {}).get("error")))
        return False
    for k in range(n_out):
        x = np.load(os.path.join(a["outdir"], "out_%d.npy" % k))
        y = np.load(os.path.join(b["outdir"], "out_%d.npy" % k))
        if x.dtype != y.dtype or x.shape != y.shape or not np.array_equal(x, y, equal_nan=True):
            d = np.max(np.abs(x.astype(np.float64) - y)) if x.shape == y.shape else None
            fail("%s: output %d differs from the reference's (max |diff| %s)" % (label, k, d))
            return False
    return True


def corpus(tmp):
    models = sorted(glob.glob(os.path.join(CORPUS, "*", "*", "model.onnx")))
    models = [m for m in models if m.split(os.sep)[-3] in KINDS]
    if len(models) < 1000:
        fail("%d models under %s (libonnx-testdata: scripts/install-deps.sh)"
             % (len(models), CORPUS))
        return
    same = weights = refused = 0
    jobs, checks = [], []
    for i, path in enumerate(models):
        label = os.path.relpath(os.path.dirname(path), CORPUS)
        d = os.path.join(tmp, "c%d" % i)
        os.makedirs(d)
        plain, cast = os.path.join(d, "plain.onnx"), os.path.join(d, "cast.onnx")
        r0 = tensio("convert", path, plain)
        r1 = tensio("convert", "--cast", "float16", path, cast)
        if r0.returncode != 0:
            refused += 1
            if r1.returncode == 0:
                fail("%s: refused plainly, converted with --cast" % label)
            continue
        if r1.returncode != 0:
            fail("%s: --cast float16: %s" % (label, r1.stderr.strip()[:200]))
            continue
        orig, out = onnx.load(plain), onnx.load(cast)
        if not any(t.data_type in FLOATS and t.data_type != onnx.TensorProto.FLOAT16
                   for t in orig.graph.initializer):
            with open(plain, "rb") as a, open(cast, "rb") as b:
                if a.read() != b.read():
                    fail("%s: no float initializer, yet the bytes differ" % label)
                    continue
            same += 1
            continue
        weights += 1
        ref = check_cast(orig, out, "float16", label)
        if ref is None:
            continue
        refp = os.path.join(d, "ref.onnx")
        onnx.save(ref, refp)
        names = [x.name for x in orig.graph.input if x.name not in
                 {t.name for t in orig.graph.initializer}]
        for s, ds in enumerate(sorted(glob.glob(os.path.join(os.path.dirname(path),
                                                             "test_data_set_*")))):
            feeds = []
            for k, name in enumerate(names):
                t = onnx.TensorProto()
                with open(os.path.join(ds, "input_%d.pb" % k), "rb") as fh:
                    t.ParseFromString(fh.read())
                npy = os.path.join(d, "in%d_%d.npy" % (s, k))
                np.save(npy, numpy_helper.to_array(t))
                feeds.append({"name": name, "file": npy})
            pair = []
            for which, model in (("cast", cast), ("ref", refp)):
                od = os.path.join(d, "%s%d" % (which, s))
                os.makedirs(od)
                pair.append({"id": "%s/%s%d" % (label, which, s), "model": model,
                             "inputs": feeds, "outdir": od})
            jobs += pair
            checks.append((pair, len(orig.graph.output), "%s set %d" % (label, s)))
    res = run_ort(jobs, tmp)
    ran = sum(compare_runs(res, a, b, n, label) for (a, b), n, label in checks)
    print("corpus: %d models: %d refused by tensio (plainly too), %d without float "
          "initializers written as a plain conversion writes them, %d with weights cast and "
          "checked; of their %d input sets %d run in onnxruntime equal to the reference's, "
          "%d refused alike with the reference (no kernel: %s)"
          % (len(models), refused, same, weights, len(checks), ran, len(GAPS),
             ", ".join(g.split("/")[1].split(" ")[0] for g in GAPS)))
    if weights < 40 or ran < 30 or ran + len(GAPS) != len(checks):
        fail("corpus: expected >= 40 models with weights and >= 30 sets run (%d, %d)"
             % (weights, ran))


def torchvision_models(tmp):
    import torchvision
    torch.manual_seed(7)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 3, 64, 64)).astype(np.float32)
    xin = os.path.join(tmp, "x.npy")
    np.save(xin, x)
    jobs, checks, sizes = [], [], []
    for arch in ("resnet18", "mobilenet_v2"):
        m = getattr(torchvision.models, arch)(weights=None).eval()
        for mod in m.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.uniform_(-0.5, 0.5)
                mod.running_var.uniform_(0.5, 1.5)
        src = os.path.join(tmp, arch + ".onnx")
        with torch.no_grad():
            torch.onnx.export(m, torch.from_numpy(x), src, opset_version=13,
                              input_names=["x"], output_names=["y"])
        plain = os.path.join(tmp, arch + "_plain.onnx")
        if tensio("convert", src, plain).returncode != 0:
            fail("%s: plain conversion refused" % arch)
            continue
        orig = onnx.load(plain)
        for target in ("float16", "bfloat16"):
            label = "%s --cast %s" % (arch, target)
            out = os.path.join(tmp, "%s_%s.onnx" % (arch, target))
            r = tensio("convert", "--cast", target, src, out)
            if r.returncode != 0:
                fail("%s: %s" % (label, r.stderr.strip()[:200]))
                continue
            ref = check_cast(orig, onnx.load(out), target, label)
            if ref is None:
                continue
            refp = os.path.join(tmp, "%s_%s_ref.onnx" % (arch, target))
            onnx.save(ref, refp)
            sizes.append("%s %s %.2f" % (arch, target, os.path.getsize(out) /
                                         os.path.getsize(plain)))
            pair = []
            for which, model in (("cast", out), ("ref", refp)):
                od = os.path.join(tmp, "%s_%s_%s" % (arch, target, which))
                os.makedirs(od)
                pair.append({"id": "%s/%s" % (label, which), "model": model,
                             "inputs": [{"name": "x", "file": xin}], "outdir": od})
            jobs += pair
            checks.append((pair, 1, label))
    res = run_ort(jobs, tmp)
    ran = sum(compare_runs(res, a, b, n, label) for (a, b), n, label in checks)
    print("torchvision: %d of 4 casts checked and equal to the reference in onnxruntime; "
          "size against the plain conversion: %s" % (ran, ", ".join(sizes)))
    for s in sizes:
        if float(s.split()[-1]) > 0.55:
            fail("size: %s (expected about half)" % s)
    if ran != 4:
        fail("torchvision: %d of 4" % ran)


def built(tmp):
    """A model python3-onnx builds with what the corpus lacks: an If whose
    branches hold float initializers of their own (the Casts go into each
    branch), a root initializer a branch reads by name, a Constant node's
    float value (stays float32: its node declares it), float64 weights, a
    sparse initializer (its values cast, kept sparse), int64 shape constants
    (untouched); written inline and with --external-data (the float16 W
    in the side file, the small constants inline as onnx.save keeps them)."""
    from onnx import TensorProto, helper
    N = 32  # W's 2 KiB of float16 go to the external file; the shape stays inline
    rng = np.random.default_rng(3)
    w = rng.standard_normal((N, N)).astype(np.float32)
    b64 = rng.standard_normal(N).astype(np.float64)
    t_then = rng.standard_normal(N).astype(np.float32)
    t_else = rng.standard_normal(N).astype(np.float32)
    sp_vals = np.array([0.1, -2.5, 3.3], np.float32)
    sparse = helper.make_sparse_tensor(
        numpy_helper.from_array(sp_vals, "S"),
        numpy_helper.from_array(np.array([1, 60, 999], np.int64), "S_idx"), [N, N])

    def branch(name, arr):
        return helper.make_graph(
            [helper.make_node("Add", ["h", name + "_w"], ["o_" + name]),
             helper.make_node("Mul", ["o_" + name, "W"], [name + "_out"])],
            name, [], [helper.make_tensor_value_info(name + "_out", TensorProto.FLOAT, [N, N])],
            [numpy_helper.from_array(arr, name + "_w")])

    nodes = [
        helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(
            np.array([0.1], np.float32), "kv")),
        helper.make_node("MatMul", ["x", "W"], ["m"]),
        helper.make_node("Cast", ["B64"], ["b32"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["m", "b32"], ["a"]),
        helper.make_node("Add", ["a", "S"], ["a2"]),
        helper.make_node("Mul", ["a2", "k"], ["h0"]),
        helper.make_node("Reshape", ["h0", "shape"], ["h"]),
        helper.make_node("If", ["c"], ["y"], then_branch=branch("then", t_then),
                         else_branch=branch("else", t_else)),
    ]
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N, N]),
                     helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N, N])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b64, "B64"),
         numpy_helper.from_array(np.array([N, N], np.int64), "shape")],
        sparse_initializer=[sparse])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    src = os.path.join(tmp, "built.onnx")
    onnx.save(m, src)
    x = rng.standard_normal((N, N)).astype(np.float32)
    np.save(os.path.join(tmp, "bx.npy"), x)
    jobs, checks = [], []
    for ext in (False, True):
        label = "built%s" % (" --external-data" if ext else "")
        out = os.path.join(tmp, "built_%d.onnx" % ext)
        r = tensio("convert", "--cast", "float16", *(["--external-data", "w.bin"] if ext else []),
                   src, out)
        if r.returncode != 0:
            fail("%s: %s" % (label, r.stderr.strip()[:200]))
            continue
        mo = onnx.load(out)  # external data loaded from beside it
        try:
            # not full_check: python3-onnx 1.12's shape inference types a
            # sparse initializer sparse_tensor(float), which no operator
            # takes (the source model fails it too; onnxruntime densifies)
            onnx.checker.check_model(out)
        except Exception as e:  # noqa: BLE001
            fail("%s: checker: %s" % (label, str(e).splitlines()[0][:200]))
            continue
        go = mo.graph
        want = {"W": (w, "W:float16", TensorProto.FLOAT),
                "B64": (b64, "B64:float16", TensorProto.DOUBLE)}
        inits = {t.name: t for t in go.initializer}
        for name, (arr, stored, to) in want.items():
            cast = [n for n in go.node if n.op_type == "Cast" and list(n.output) == [name]]
            bits, _ = rounded(arr, "float16")
            if name in inits or stored not in inits or len(cast) != 1 or \
                    list(cast[0].input) != [stored] or cast[0].attribute[0].i != to or \
                    not np.array_equal(numpy_helper.to_array(inits[stored]).view(np.uint16),
                                       bits):
                fail("%s: %s: not stored as %s with a Cast to %d" % (label, name, stored, to))
        if list(numpy_helper.to_array(inits["shape"])) != [N, N]:
            fail("%s: the int64 shape constant changed" % label)
        k = [n for n in go.node if n.op_type == "Constant"]
        if len(k) != 1 or k[0].attribute[0].t.data_type != TensorProto.FLOAT:
            fail("%s: the Constant node's value is no longer float32" % label)
        sp = list(go.sparse_initializer)
        if len(sp) != 1 or sp[0].values.name != "S:float16" or \
                sp[0].values.data_type != TensorProto.FLOAT16 or \
                not np.array_equal(numpy_helper.to_array(sp[0].values).view(np.uint16),
                                   rounded(sp_vals, "float16")[0]):
            fail("%s: the sparse initializer's values are not cast under S:float16" % label)
        for br in [a.g for n in go.node if n.op_type == "If" for a in n.attribute]:
            bw = [t.name for t in br.initializer]
            bc = [n for n in br.node if n.op_type == "Cast"]
            if bw != [br.name + "_w:float16"] or len(bc) != 1 or br.node[0] is not bc[0] and \
                    br.node[0].op_type != "Cast" or list(bc[0].output) != [br.name + "_w"]:
                fail("%s: branch %s: initializers %s, Casts %s" % (label, br.name, bw,
                                                                  [list(n.output) for n in bc]))
        if ext:
            raw = {t.name: t for t in onnx.load(out, load_external_data=False).graph.initializer}
            if raw["W:float16"].data_location != TensorProto.EXTERNAL or \
                    raw["shape"].data_location == TensorProto.EXTERNAL or \
                    os.path.getsize(os.path.join(tmp, "w.bin")) != 2 * N * N:
                fail("%s: W:float16 not the 2 KiB in w.bin, or the shape not inline" % label)
        # the reference: the source with every float weight rounded
        ref = onnx.ModelProto()
        ref.CopyFrom(m)
        for t in ref.graph.initializer:
            a = numpy_helper.to_array(t)
            if a.dtype.kind == "f":
                t.CopyFrom(numpy_helper.from_array(rounded(a, "float16")[1], t.name))
        ref.graph.sparse_initializer[0].values.CopyFrom(
            numpy_helper.from_array(rounded(sp_vals, "float16")[1], "S"))
        for n in ref.graph.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    t = a.g.initializer[0]
                    t.CopyFrom(numpy_helper.from_array(
                        rounded(numpy_helper.to_array(t), "float16")[1], t.name))
        refp = os.path.join(tmp, "built_ref.onnx")
        onnx.save(ref, refp)
        for cv in (True, False):
            cf = os.path.join(tmp, "bc%d.npy" % cv)
            np.save(cf, np.array(cv))
            feeds = [{"name": "x", "file": os.path.join(tmp, "bx.npy")},
                     {"name": "c", "file": cf}]
            pair = []
            for which, model in (("cast", out), ("ref", refp)):
                od = os.path.join(tmp, "b%d%d%s" % (ext, cv, which))
                os.makedirs(od)
                pair.append({"id": "%s/%s/%d" % (label, which, cv), "model": model,
                             "inputs": feeds, "outdir": od})
            jobs += pair
            checks.append((pair, 1, "%s c=%s" % (label, cv)))
    res = run_ort(jobs, tmp)
    ran = sum(compare_runs(res, a, b, n, label) for (a, b), n, label in checks)
    print("built: If branches, a capture, a Constant, float64, a sparse initializer, inline "
          "and external: %d of 4 runs equal to the reference's" % ran)
    if ran != 4:
        fail("built: %d of 4 runs" % ran)


def raised_pair(label, f32, f16, tmp, jobs, checks):
    """f16 (a .tflite with float16 weights, each DEQUANTIZEd) and f32 (the
    same model with float32 weights) raised to ONNX by tensio: onnxruntime
    runs the first and the second with its weights rounded to float16 on
    one random input, the outputs to be equal bit for bit."""
    o16, o32 = os.path.join(tmp, label + "_16.onnx"), os.path.join(tmp, label + "_32.onnx")
    for src, dst in ((f16, o16), (f32, o32)):
        r = tensio("convert", "--force", src, dst)
        if r.returncode != 0:
            fail("%s: raising %s: %s" % (label, os.path.basename(src), r.stderr.strip()[:200]))
            return
    ref = onnx.load(o32)
    for t in ref.graph.initializer:
        if t.data_type == onnx.TensorProto.FLOAT:
            t.CopyFrom(numpy_helper.from_array(rounded(numpy_helper.to_array(t), "float16")[1],
                                               t.name))
    refp = os.path.join(tmp, label + "_ref.onnx")
    onnx.save(ref, refp)
    inits = {t.name for t in ref.graph.initializer}
    feeds = []
    rng = np.random.default_rng(11)
    for v in ref.graph.input:
        if v.name in inits:
            continue
        shape = [d.dim_value or 1 for d in v.type.tensor_type.shape.dim]
        f = os.path.join(tmp, "%s_in_%d.npy" % (label, len(feeds)))
        np.save(f, rng.standard_normal(shape).astype(np.float32))
        feeds.append({"name": v.name, "file": f})
    pair = []
    for which, model in (("cast", o16), ("ref", refp)):
        od = os.path.join(tmp, "%s_%s" % (label, which))
        os.makedirs(od)
        pair.append({"id": "%s/%s" % (label, which), "model": model, "inputs": feeds,
                     "outdir": od})
    jobs += pair
    checks.append((pair, len(ref.graph.output), label))


def tflite(tmp):
    """Into TensorFlow Lite: float32 weights stored float16, each
    DEQUANTIZEd (version 3, as TensorFlow's converter writes its float16
    quantization). ONNX -> TFLite with --cast gives the bytes of --cast to
    ONNX then ONNX -> TFLite; TFLite -> TFLite (the rewrite of a model that
    was read: TensorFlow's own hello_world, tests/vectors/tflite/small, and
    the two torchvision models lowered) keeps every tensor index and
    operator and puts the DEQUANTIZEs first. Both run in onnxruntime
    (through tensio's raise to ONNX) equal to the float32 model with
    rounded weights."""
    jobs, checks, notes = [], [], []
    for arch in ("resnet18", "mobilenet_v2"):
        src = os.path.join(tmp, arch + ".onnx")
        h16 = os.path.join(tmp, arch + "_float16.onnx")
        direct, twostep = os.path.join(tmp, arch + "_d16.tflite"), os.path.join(
            tmp, arch + "_2s.tflite")
        f32 = os.path.join(tmp, arch + "_32.tflite")
        r = [tensio("convert", "--cast", "float16", src, direct),
             tensio("convert", h16, twostep), tensio("convert", src, f32)]
        bad = [x.stderr.strip()[:200] for x in r if x.returncode != 0]
        if bad:
            fail("%s: tflite: %s" % (arch, bad))
            continue
        with open(direct, "rb") as a, open(twostep, "rb") as b:
            if a.read() != b.read():
                fail("%s: ONNX -> TFLite with --cast is not --cast to ONNX then TFLite" % arch)
        raised_pair(arch + "_lowered", f32, direct, tmp, jobs, checks)
        rw = os.path.join(tmp, arch + "_rw16.tflite")
        r = tensio("convert", "--cast", "float16", f32, rw)
        if r.returncode != 0:
            fail("%s: TFLite -> TFLite --cast: %s" % (arch, r.stderr.strip()[:200]))
            continue
        notes.append("%s %.2f" % (arch, os.path.getsize(rw) / os.path.getsize(f32)))
        raised_pair(arch + "_rewrite", f32, rw, tmp, jobs, checks)
    hw = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "vectors", "tflite",
                      "small", "tflm_hello_world_float.tflite")
    hw16 = os.path.join(tmp, "hw16.tflite")
    r = tensio("convert", "--cast", "float16", hw, hw16)
    if r.returncode != 0:
        fail("hello_world: %s" % r.stderr.strip()[:200])
    else:
        ops = json.loads(tensio("ls", "--json", hw16).stdout)["tensors"]
        if len(ops) != 6 or any(t["dtype"] != "float16" or not t["name"].endswith(":float16")
                                for t in ops):
            fail("hello_world: tensors %s" % [(t["name"], t["dtype"]) for t in ops])
        raised_pair("hello_world", hw, hw16, tmp, jobs, checks)
    res = run_ort(jobs, tmp)
    ran = sum(compare_runs(res, a, b, n, label) for (a, b), n, label in checks)
    print("tflite: direct = two-step for 2 models; %d of %d float16 models (lowered, rewritten, "
          "TensorFlow's hello_world) equal in onnxruntime to the rounded float32 ones; rewrite "
          "size against float32: %s" % (ran, len(checks), ", ".join(notes)))
    if ran != 5 or len(checks) != 5:
        fail("tflite: %d of %d" % (ran, len(checks)))


def refusals(tmp):
    path = os.path.join(CORPUS, "pytorch-converted", "test_Conv2d", "model.onnx")
    out = os.path.join(tmp, "bf.onnx")
    r = tensio("convert", "--cast", "bfloat16", path, out)
    msg = r.stderr.strip()
    if r.returncode == 0 or "opset 13" not in msg or "opset=13" not in msg:
        fail("bfloat16 at opset 6: expected a refusal naming opset 13, got %d %r"
             % (r.returncode, msg[:300]))
    if os.path.exists(out):
        fail("bfloat16 at opset 6: the refused save left %s" % out)
    r = tensio("convert", "--cast", "bfloat16", "--opset", "13", path, out)
    if r.returncode != 0:
        fail("bfloat16 with --opset 13: %s" % r.stderr.strip()[:200])
    else:
        m = onnx.load(out)
        onnx.checker.check_model(m, full_check=True)
        if [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")] != [13]:
            fail("bfloat16 with --opset 13: opset %s" % m.opset_import)
    # rten and tmfile cast no model's weights: refused by name
    for ext in ("rten", "tmfile"):
        r = tensio("convert", "--cast", "float16", path, os.path.join(tmp, "m." + ext))
        if r.returncode == 0 or "casts no model's weights" not in r.stderr:
            fail("--cast into %s: expected a refusal, got %d %r"
                 % (ext, r.returncode, r.stderr.strip()[:200]))
    r = tensio("convert", "--cast", "bfloat16", path, os.path.join(tmp, "m.tflite"))
    if r.returncode == 0 or "has no TensorFlow Lite form" not in r.stderr:
        fail("--cast bfloat16 into tflite: expected a refusal, got %d %r"
             % (r.returncode, r.stderr.strip()[:200]))
    print("refusals: bfloat16 below opset 13, rten, tmfile, tflite bfloat16")


def main():
    tmp = tempfile.mkdtemp(prefix="tio_castw_")
    try:
        corpus(tmp)
        built(tmp)
        torchvision_models(tmp)
        tflite(tmp)
        refusals(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failures" % len(FAILS))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
