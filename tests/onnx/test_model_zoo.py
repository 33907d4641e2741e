#!/usr/bin/python3
"""The ONNX model-zoo check: real torchvision architectures through tensio.

Usage: /usr/bin/python3 test_model_zoo.py /path/to/tensio

For each architecture in ARCHS and each opset in OPSETS, in a temporary
directory (no model is kept):
- export it with random weights (torch.manual_seed(SEED), batch-norm running
  statistics randomised too, eval mode) to model.onnx with Debian's
  python3-torch / python3-torchvision, input 1x3xSIZExSIZE;
- run model.onnx in onnxruntime (npm's onnxruntime-node in tests/ort,
  installed by scripts/install-ort.sh; tests/ort/run_model.js --write) on a
  random input (numpy seed SEED): its output is the expected one, and must be
  finite and not constant;
- `tensio convert model.onnx model.rten` (ONNX -> rten, rten-convert's job),
  `tensio validate model.rten`, no Constant operator left in it;
- `tensio convert model.rten back.onnx` (rten -> ONNX),
  `tensio convert model.onnx same.onnx` (ONNX -> ONNX) and ONNX -> tmfile
  (convert_tool's lowering: shape arithmetic folded, Conv+Relu fused ...)
  -> ONNX (`tm.onnx`, the Tengine graph raised again): each passes
  onnx.checker.check_model(full_check=True) (Debian's python3-onnx) and gives
  the expected output in onnxruntime, |got - want| <= 1e-4 + 1e-4 * |want|.

DYNAMIC's architectures are also exported with the batch a named dim
(torch.onnx.export's dynamic_axes), which the tmfile lowering fixes to 1.

One line per architecture and opset ("ok ..." with the node counts and the
largest absolute difference, or "FAIL ..." with the reason); the last line is
"N passed, M failed"; the exit status is non-zero on any failure. A missing
torch, torchvision, onnx or onnxruntime fails: it is not skipped
(scripts/install-deps.sh and scripts/install-ort.sh install them).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

if len(sys.argv) != 2:
    print("usage: test_model_zoo.py /path/to/tensio", file=sys.stderr)
    sys.exit(2)

TENSIO = os.path.abspath(sys.argv[1])
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORT_DIR = os.path.join(REPO, "tests", "ort")

# Each exports Constant nodes, Clip (min/max inputs at 11 and 13), folded or
# unfolded BatchNormalization, Flatten/Reshape, pooling, Gemm, Concat, Add, ...
# in its own mix: shufflenet's channel shuffle computes Slice bounds from
# Shape (int64 arithmetic), mobilenet_v3 has HardSigmoid, efficientnet
# Sigmoid-Mul, densenet unfolded BatchNormalization, Pad and AveragePool.
ARCHS = ["squeezenet1_1", "mobilenet_v2", "resnet18", "shufflenet_v2_x0_5",
         "mobilenet_v3_small", "efficientnet_b0", "densenet121"]
OPSETS = (11, 13)
# also exported at 13 with the batch a named dim (dynamic_axes): the lowerings
# to tmfile fix it to 1
DYNAMIC = ["resnet18"]
SIZE = 64  # the smallest multiple of 32 that all of ARCHS take
SEED = 0

PASSED = 0
FAILED = 0


def call(argv, env=None):
    """Runs argv: its stdout, or an AssertionError with its stderr."""
    r = subprocess.run(argv, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        cmd = " ".join([os.path.basename(argv[0])] + [os.path.basename(a) for a in argv[1:]])
        raise AssertionError("%s: exit %d: %s" % (cmd, r.returncode,
                                                  (r.stderr or r.stdout).strip()))
    return r.stdout


def tensio(*args):
    return call([TENSIO, *args])


def run_ort(model, vector_dir, write=False):
    """run_model.js on model: with write, its outputs become the vector's
    expected ones; else they are compared with them and the largest absolute
    difference is returned."""
    if not os.path.isdir(os.path.join(ORT_DIR, "node_modules", "onnxruntime-node")):
        raise AssertionError("onnxruntime-node is not installed: run scripts/install-ort.sh")
    out = call(["node", os.path.join(ORT_DIR, "run_model.js")] + (["--write"] if write else []) +
               [model, vector_dir],
               env=dict(os.environ, NODE_PATH=os.path.join(ORT_DIR, "node_modules")))
    return None if write else float(out.strip().rsplit("max_abs_diff=", 1)[1])


def export(torch, torchvision, arch, opset, path, x, dynamic=False):
    torch.manual_seed(SEED)
    model = getattr(torchvision.models, arch)(weights=None)
    # default running statistics (mean 0, var 1) would make batch norm an
    # identity in eval mode: random ones make folding it (or not) matter
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.1, 0.1)
    model.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, torch.from_numpy(x), path, opset_version=opset,
                          input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}
                          if dynamic else None)


def check(mods, arch, opset, tmp, dynamic=False):
    torch, torchvision, onnx, np = mods
    d = os.path.join(tmp, "%s_%d" % (arch, opset))
    os.mkdir(d)
    src, rten = os.path.join(d, "model.onnx"), os.path.join(d, "model.rten")
    back, same = os.path.join(d, "back.onnx"), os.path.join(d, "same.onnx")
    x = np.random.RandomState(SEED).standard_normal((1, 3, SIZE, SIZE)).astype(np.float32)
    export(torch, torchvision, arch, opset, src, x, dynamic)
    np.save(os.path.join(d, "input.npy"), x)
    with open(os.path.join(d, "reference_io.json"), "w") as f:
        json.dump({"inputs": [{"name": "input", "file": "input.npy", "dtype": "float32",
                               "shape": list(x.shape)}],
                   "outputs": [{"name": "output", "file": "expected_output.npy"}]}, f)
    run_ort(src, d, write=True)
    want = np.load(os.path.join(d, "expected_output.npy"))
    assert np.all(np.isfinite(want)) and np.ptp(want) > 0, "degenerate expected output"

    tensio("convert", "--force", src, rten)
    tensio("validate", rten)
    ops = [n["op"] for n in json.loads(tensio("info", "--json", rten))["graph"]["nodes"]]
    assert "Constant" not in ops, "a Constant operator is left in the .rten"
    tensio("convert", "--force", rten, back)
    tensio("convert", "--force", src, same)
    # the export written at the other opset (--opset): 11 -> 13, 13 -> 11
    other = os.path.join(d, "other.onnx")
    tensio("convert", "--force", "--opset", str(24 - opset), src, other)
    # ONNX -> tmfile as convert_tool makes it (folding, fusions), read back as
    # ONNX: the Tengine graph in ONNX semantics gives the same outputs
    tm, tmback = os.path.join(d, "model.tmfile"), os.path.join(d, "tm.onnx")
    tensio("convert", "--force", "--drop-metadata", src, tm)
    tensio("validate", tm)
    tmops = json.loads(tensio("info", "--json", "--native", tm))["graph"]["nodes"]
    tensio("convert", "--force", tm, tmback)
    # the same model with its weights in a file beside it, as onnx.save writes
    # what is past protobuf's 2 GB: the .onnx is then all graph, which decodes
    # to 9-13 x its size (it was refused past ~100 KB); it opens with the
    # default limits and converts to a model of the same outputs
    ext, extsame = os.path.join(d, "ext.onnx"), os.path.join(d, "ext_same.onnx")
    onnx.save(onnx.load(src), ext, save_as_external_data=True, all_tensors_to_one_file=True,
              location="ext.onnx.data", size_threshold=0)
    tensio("convert", "--force", ext, extsame)
    diffs = []
    for path in (back, same, other, tmback, extsame):
        onnx.checker.check_model(onnx.load(path), full_check=True)
        diffs.append(run_ort(path, d))
    return ("%d onnx nodes (%d bytes with external data), %d rten ops, %d tmfile nodes; "
            "max |diff| back %.3g, same %.3g, opset %d %.3g, tmfile %.3g, external %.3g" % (
                len(onnx.load(src, load_external_data=False).graph.node), os.path.getsize(ext),
                len(ops), len(tmops), diffs[0], diffs[1], 24 - opset, diffs[2], diffs[3],
                diffs[4]))


def main():
    global PASSED, FAILED
    try:
        import numpy as np
        import onnx
        import torch
        import torchvision
    except ImportError as ex:
        print("FAIL model zoo: %s (scripts/install-deps.sh installs python3-torch, "
              "python3-torchvision, python3-onnx)" % ex)
        print("0 passed, 1 failed")
        return 1
    mods = (torch, torchvision, onnx, np)
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for arch, opset, dynamic in [(a, o, False) for a in ARCHS for o in OPSETS] + [
                (a, 13, True) for a in DYNAMIC]:
                t = time.monotonic()
                name = "%s opset %d%s" % (arch, opset, ", batch dim named" if dynamic else "")
                try:
                    what = check(mods, arch, opset, tmp, dynamic)
                    PASSED += 1
                    print("ok   %s: %s (%.1f s)" % (name, what, time.monotonic() - t))
                except Exception as ex:  # noqa: BLE001 - any failure fails the case
                    FAILED += 1
                    print("FAIL %s: %s" % (name, ex))
                sys.stdout.flush()
                # the models are large: keep one at a time
                shutil.rmtree(os.path.join(tmp, "%s_%d" % (arch, opset)), ignore_errors=True)
    print("total %.1f s" % (time.monotonic() - start))
    print("%d passed, %d failed" % (PASSED, FAILED))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
