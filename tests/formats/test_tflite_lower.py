#!/usr/bin/python3
"""ONNX -> TensorFlow Lite (the lowering, src/tflite/lower.c), run in Arm NN.

Usage: /usr/bin/python3 test_tflite_lower.py /path/to/tensio

The models: the ONNX vectors (tests/vectors/onnx, $TIO_SHARED_VECTORS/tmfile),
the model zoo of tests/onnx/test_model_zoo.py (torchvision architectures with
random weights and batch-norm statistics, exported at opset 13 by Debian's
python3-torch; regnet_x_400mf's grouped Convs become SPLIT, a CONV_2D per group
and CONCATENATION; resnet18 and mobilenet_v2 also at 11, and at 13 with the
batch a named dim, fixed to 1 by default and to 2 by --dim batch=2) and MLPs
built here (torch.nn.Linear stacks: Gemm; a rank-3 input: MatMul + Add; the
same with its two leading dims named, refused without --dim seq=N, whose
error names --dim), and an upsampler of ConvTransposes (TRANSPOSE_CONV, its
pads cut off by STRIDED_SLICE). For each:

- `tensio convert M.onnx M.tflite` (and for some (VARIANTS), --no-fuse:
  activations and batch norm kept apart, and --layout nchw: 4-D inputs and
  outputs as ONNX has them); models with operators that have no TFLite
  form are refused, the error naming them (REFUSED);
- onnxruntime (npm's onnxruntime-node, tests/ort/run_model.js --write) runs
  the ONNX model on seeded inputs: the expected outputs;
- Arm NN 20.08 (Debian's python3-pyarmnn, CpuRef; tests/formats/armnn_run.py
  in its own process) runs the .tflite on the same inputs (4-D ones NHWC, as
  the lowering lays them out); every output within 1e-4 + 1e-3 * |want| and
  within 1e-3 of the outputs' largest magnitude;
- where Arm NN refuses the .tflite (an operator its parser lacks), the check
  is tensio's TFLite -> ONNX form of the .tflite run in onnxruntime, and the
  line says so ("ORT of the raise").

One line per model: the TFLite operators (TRANSPOSE and PAD counted), where
it ran, the largest difference. pyarmnn, torch, onnx or onnxruntime missing
fails (scripts/install-deps.sh installs them).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import warnings

if len(sys.argv) != 2:
    print("usage: test_tflite_lower.py /path/to/tensio", file=sys.stderr)
    sys.exit(2)

TENSIO = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
ORT_DIR = os.path.join(REPO, "tests", "ort")
VEC = os.environ.get("TIO_TEST_VECTORS", os.path.join(REPO, "tests", "vectors"))
SHARED = os.environ.get("TIO_SHARED_VECTORS", os.path.join(REPO, "..", "shared", "vectors"))
ARCHS = [(a, o, False) for a, o in (
    ("squeezenet1_1", 13), ("mobilenet_v2", 13), ("mobilenet_v2", 11), ("resnet18", 13),
    ("resnet18", 11), ("shufflenet_v2_x0_5", 13), ("mobilenet_v3_small", 13),
    ("efficientnet_b0", 13), ("densenet121", 13), ("regnet_x_400mf", 13))]
SIZE = 64
SEED = 0
# models refused, and what the one error must name
REFUSED = {
    "int_consts": ["Gather", "Cast", "'gather'", "'cast'"],
    "mlp_seq": ["graph input 'input' has no static shape", "--dim NAME=N"],
}
# also written with --no-fuse (activations and batch norm as their own
# operators) and with --layout nchw (4-D inputs and outputs as ONNX has them)
VARIANTS = {"cnn_small": (["--no-fuse"], ["--layout", "nchw"]),
            "resnet18_13": (["--no-fuse"], ["--layout", "nchw"]),
            "densenet121_13": (["--no-fuse"],), "mobilenet_v3_small_13": (["--no-fuse"],),
            "regnet_x_400mf_13": (["--no-fuse"],),
            "shufflenet_v2_x0_5_13": (["--layout", "nchw"],),
            "resnet18_13_dyn": (["--dim", "batch=2"],), "mlp_seq": (["--dim", "seq=5"],),
            "upsampler": (["--layout", "nchw"],)}
# the model zoo's also exported with the batch a named dim (dynamic_axes):
# fixed to 1, or by --dim
DYNAMIC = ["resnet18", "mobilenet_v2"]
ATOL, RTOL = 1e-4, 1e-3
# also with float16 weights (each initializer float16 behind a Cast)
FP16 = {"cnn_small", "resnet18_13", "mobilenet_v3_small_13", "mlp_matmul", "mlp_gemm",
        "upsampler"}

FAILED = 0

# the model zoo's export (random weights, batch-norm statistics), shared
sys.path.insert(0, os.path.join(REPO, "tests", "onnx"))
from test_model_zoo import export as export_zoo  # noqa: E402


def run(argv, env=None):
    return subprocess.run(argv, capture_output=True, text=True, env=env)


def tensio(*args):
    r = run([TENSIO, *args])
    if r.returncode:
        raise AssertionError("tensio %s: %s" % (args[0], r.stderr.strip()))
    return r.stdout


def ort(model, d, write=True):
    r = run(["node", os.path.join(ORT_DIR, "run_model.js")] + (["--write"] if write else []) +
            [model, d], env=dict(os.environ, NODE_PATH=os.path.join(ORT_DIR, "node_modules")))
    if r.returncode:
        raise AssertionError("onnxruntime: %s" % (r.stderr or r.stdout).strip()[:300])


def export_mlp(torch, path, rank3, seq=False):
    torch.manual_seed(SEED)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 48),
                                torch.nn.ReLU6(), torch.nn.Linear(48, 10)).eval()
    x = torch.randn(2, 5, 32) if rank3 else torch.randn(4, 32)
    axes = {0: "batch", 1: "seq"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, x, path, opset_version=13, input_names=["input"],
                          output_names=["output"],
                          dynamic_axes={"input": axes, "output": axes} if seq else None)


def export_upsampler(torch, path):
    """ConvTransposes as PyTorch exports them: k 4, s 2, p 1 (a crop of one
    on each side), k 3, s 2, p 1, output_padding 1, and k 2, s 2 without
    bias or pads."""
    torch.manual_seed(SEED)
    nn = torch.nn
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(),
                          nn.ConvTranspose2d(8, 6, 4, stride=2, padding=1), nn.ReLU(),
                          nn.ConvTranspose2d(6, 4, 3, stride=2, padding=1, output_padding=1),
                          nn.ConvTranspose2d(4, 2, 2, stride=2, bias=False)).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, torch.randn(1, 3, 12, 10), path, opset_version=13,
                          input_names=["input"], output_names=["output"])


def fp16_weights(src, dst):
    """src with its float32 initializers stored as float16, each read through
    a Cast to float32 (float16 weights of a float32 model): what `tensio
    convert --cast float16` writes into ONNX (tests/onnx/test_cast_weights.py
    checks that form in onnxruntime)."""
    r = run([TENSIO, "convert", "--force", "--cast", "float16", src, dst])
    if r.returncode != 0:
        raise AssertionError("--cast float16: %s" % r.stderr.strip())


def tflite_ops(path):
    nodes = json.loads(tensio("info", "--json", "--native", path))["graph"]["nodes"]
    return [n["op"] for n in nodes]


def compare(np, got, want):
    if got.shape != want.shape:
        raise AssertionError("shape %s, onnxruntime %s" % (got.shape, want.shape))
    g, w = got.astype(np.float64), want.astype(np.float64)
    bad = np.abs(g - w) > ATOL + RTOL * np.abs(w)
    diff, scale = float(np.abs(g - w).max(initial=0)), float(np.abs(w).max(initial=0))
    if bad.any():
        raise AssertionError("%d of %d elements past 1e-4 + 1e-3 |want| (max |diff| %.3g)" % (
            int(bad.sum()), bad.size, diff))
    # outputs of small magnitude (random weights): also within 1e-3 of their scale
    if diff > RTOL * scale:
        raise AssertionError("max |diff| %.3g past 1e-3 of the outputs' scale %.3g" % (
            diff, scale))
    return diff, scale


def worst_of(np, d, outs, got_dir, pattern, nchw):
    """The largest difference of the outputs got_dir/pattern % k (NHWC when
    4-D) from onnxruntime's d/want<k>.npy; an AssertionError past the
    tolerance."""
    worst, scale = 0.0, 0.0
    for k, o in enumerate(outs):
        want = np.load(os.path.join(d, o["file"]))
        got = np.load(os.path.join(got_dir, pattern % k))
        if want.ndim == 4 and not nchw:
            got = got.transpose(0, 3, 1, 2)
        dk, sk = compare(np, got, want)
        worst, scale = max(worst, dk), max(scale, sk)
    return "max |diff| %.3g (outputs up to %.3g)" % (worst, scale)


def check(np, onnx, name, src, tmp, flags):
    d = os.path.join(tmp, name + "".join(flags))
    os.makedirs(d)
    dst = os.path.join(d, "m.tflite")
    nchw = "nchw" in flags
    r = run([TENSIO, "convert", "--force"] + flags + [src, dst])
    if name in REFUSED and "--dim" not in flags:
        if r.returncode == 0:
            raise AssertionError("converted, but it should be refused")
        for s in REFUSED[name]:
            if s not in r.stderr:
                raise AssertionError("the refusal does not name %s: %s" % (s, r.stderr.strip()))
        return "refused: %s" % r.stderr.strip().split(": ", 2)[-1][:110]
    if r.returncode:
        raise AssertionError("convert: %s" % r.stderr.strip())
    model = onnx.load(src)
    inits = {t.name for t in model.graph.initializer}
    rs = np.random.RandomState(SEED)
    ins, nhwc_in = [], []
    # named dims: as --dim NAME=N fixes them, else 1 (the lowering's batch)
    fixed = dict(flags[k + 1].split("=") for k in range(len(flags) - 1) if flags[k] == "--dim")
    for i in model.graph.input:
        if i.name in inits:
            continue
        shape = [dm.dim_value if dm.HasField("dim_value") else int(fixed.get(dm.dim_param, 1))
                 for dm in i.type.tensor_type.shape.dim]
        x = rs.standard_normal(shape).astype(np.float32)
        f = "in%d.npy" % len(ins)
        np.save(os.path.join(d, f), x)
        ins.append({"name": i.name, "file": f})
        xt = x.transpose(0, 2, 3, 1) if x.ndim == 4 and not nchw else x
        nhwc_in.append(os.path.join(d, "nhwc_" + f))
        np.save(nhwc_in[-1], np.ascontiguousarray(xt))
    outs = [{"name": o.name, "file": "want%d.npy" % k} for k, o in enumerate(model.graph.output)]
    json.dump({"inputs": ins, "outputs": outs}, open(os.path.join(d, "reference_io.json"), "w"))
    ort(src, d)
    ops = tflite_ops(dst)
    head = "%d ops (%d TRANSPOSE, %d PAD)" % (len(ops), ops.count("TRANSPOSE"),
                                              ops.count("PAD") + ops.count("PADV2"))
    if flags:
        head += ", " + " ".join(flags)
    r = run(["/usr/bin/python3", os.path.join(HERE, "armnn_run.py"), dst, d] + nhwc_in)
    if r.returncode == 2:
        raise AssertionError(r.stderr.strip())
    if r.returncode == 0:
        return head + "; Arm NN " + worst_of(np, d, outs, d, "out%d.npy", nchw)
    if r.returncode != 3:
        raise AssertionError("Arm NN crashed (exit %d): %s" % (r.returncode, r.stderr[-300:]))
    why = [ln for ln in r.stderr.splitlines() if ln.startswith("armnn_run: ")]
    why = why[-1][len("armnn_run: "):][:100] if why else r.stderr.strip()[-100:]
    # Arm NN refused it: the ONNX form of the .tflite in onnxruntime
    back = os.path.join(d, "back.onnx")
    tensio("convert", "--force", "--drop-metadata", dst, back)
    d2 = os.path.join(d, "raise")
    os.makedirs(d2)
    bm = onnx.load(back)
    ins2 = [{"name": i.name, "file": os.path.basename(p)}
            for i, p in zip(bm.graph.input, nhwc_in)]
    for p in nhwc_in:
        shutil.copy(p, d2)
    outs2 = [{"name": o.name, "file": "got%d.npy" % k} for k, o in enumerate(bm.graph.output)]
    json.dump({"inputs": ins2, "outputs": outs2},
              open(os.path.join(d2, "reference_io.json"), "w"))
    ort(back, d2)
    return head + "; Arm NN refuses it (%s): ORT of the raise %s" % (
        why, worst_of(np, d, outs, d2, "got%d.npy", nchw))


def main():
    global FAILED
    import numpy as np
    import onnx
    import torch
    import torchvision
    if not os.path.isdir(os.path.join(ORT_DIR, "node_modules", "onnxruntime-node")):
        print("FAIL onnxruntime-node is not installed: run scripts/install-ort.sh")
        return 1
    tmp = tempfile.mkdtemp(prefix="tio_tfl_lower_")
    models = []
    for sub in (os.path.join(VEC, "onnx"), os.path.join(SHARED, "tmfile")):
        if not os.path.isdir(sub):
            print("FAIL %s is missing" % sub)
            FAILED += 1
            continue
        for f in sorted(os.listdir(sub)):
            if f.endswith(".onnx"):
                nm = f[:-5] if sub.endswith("onnx") else "tmfile_" + f[:-5]
                models.append((nm, os.path.join(sub, f)))
    x = np.random.RandomState(SEED).standard_normal((1, 3, SIZE, SIZE)).astype(np.float32)
    zdir = os.path.join(tmp, "zoo")
    os.makedirs(zdir)
    for arch, opset, dyn in ARCHS + [(a, 13, True) for a in DYNAMIC]:
        nm = "%s_%d%s" % (arch, opset, "_dyn" if dyn else "")
        p = os.path.join(zdir, nm + ".onnx")
        try:
            export_zoo(torch, torchvision, arch, opset, p, x, dyn)
            models.append((nm, p))
        except Exception as e:  # an export failure is a failure of the test
            print("FAIL %s opset %d: export: %s" % (arch, opset, e))
            FAILED += 1
    for nm, rank3, seq in (("mlp_gemm", False, False), ("mlp_matmul", True, False),
                           ("mlp_seq", True, True)):
        p = os.path.join(zdir, nm + ".onnx")
        export_mlp(torch, p, rank3, seq)
        models.append((nm, p))
    p = os.path.join(zdir, "upsampler.onnx")
    export_upsampler(torch, p)
    models.append(("upsampler", p))
    # float16 weights (a Cast each): stored float16, DEQUANTIZEd in the .tflite
    for nm, p in list(models):
        if nm in FP16:
            q = os.path.join(zdir, nm + "_fp16w.onnx")
            fp16_weights(p, q)
            models.append((nm + "_fp16w", q))
    for nm, p in models:
        for flags in ([],) + VARIANTS.get(nm, ()):
            label = " ".join([nm] + flags)
            try:
                print("ok %s: %s" % (label, check(np, onnx, nm, p, tmp, flags)), flush=True)
            except AssertionError as e:
                print("FAIL %s: %s" % (label, e), flush=True)
                FAILED += 1
    # --dim's own errors: usage (exit 2), a size the lowering refuses, a format without it
    src = dict(models)["resnet18_13_dyn"]
    for args, rc, words in ((["--dim", "batch=x"], 2, "expected NAME=N"),
                            (["--dim", "ba:tch=1"], 2, "expected NAME=N"),
                            (["--dim", "batch=0"], 1, "each N from 1 to 2147483647"),
                            (["--dim", "bacth=2"], 1, "no value of the graph has a dim named \"bacth\""),
                            (["--dim", "batch=2", "--to", "onnx"], 1, "no format option \"dims\"")):
        r = run([TENSIO, "convert", "--force"] + args + [src, os.path.join(tmp, "o.tflite")])
        if r.returncode != rc or words not in r.stderr:
            print("FAIL convert %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr.strip()))
            FAILED += 1
        else:
            print("ok convert %s: refused (exit %d)" % (" ".join(args), rc))
    shutil.rmtree(tmp, ignore_errors=True)
    print("%d models, %d failed" % (len(models), FAILED))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
