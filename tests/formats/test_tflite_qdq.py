#!/usr/bin/python3
"""ONNX QDQ models -> TensorFlow Lite int8/uint8 (src/tflite/lower_q.c).

Usage: /usr/bin/python3 test_tflite_qdq.py /path/to/tensio

1. QDQ models built here (tests/formats/qdq_build.py: a small CNN with Conv,
   depthwise Conv, MaxPool, Add, GlobalAveragePool, Flatten and Gemm, and an
   MLP with MatMul, Relu, Concat, Gemm and Softmax; scales measured on seeded
   calibration data): the CNN in five forms, int8 activations with int8
   weights per tensor (s8) and per output channel (s8_pc), uint8 activations
   with uint8 weights (u8), uint8 activations with int8 weights per tensor
   (u8s8) and per channel (u8s8_pc); the MLP as s8, u8s8 and s8_pc, and s8
   and s8_pc with the Gemm's weights [K, N] (transB=0: transposed on the
   way, the per-channel axis 1 -> 0). Each is converted with
   `tensio convert`, read back with the FlatBuffers reader of
   test_tflite_rewrite.py (not tensio's): every CONV_2D, DEPTHWISE_CONV_2D
   and FULLY_CONNECTED reads quantized tensors, its weights' quantized
   dimension is 0 (OHWI, FC) or 3 (1HWO), its int32 bias's scale is input
   scale x weight scale. onnxruntime (npm's onnxruntime-node) runs the ONNX
   QDQ model on a seeded input: the expected output. Per-tensor models run
   in Arm NN 20.08 (python3-pyarmnn, CpuRef): within one quantization step
   of the output. Arm NN 20.08 aborts on per-channel weights
   (GetBiasTypeFromWeightsType asserts on QSymmS8 per-axis weights): those
   are checked by tensio's ONNX form of the .tflite (TFLite -> ONNX) in
   onnxruntime, within one step, and the line says so.
2. A QDQ model TFLite cannot express (int8 weights with a zero point of 3)
   is refused, the error naming the node and why.
   Every operator code at the version TensorFlow's converter gives it
   (int8 kernels: CONV_2D 3, FULLY_CONNECTED 4, SOFTMAX 2 ...; uint8: 1).
3. The quantized int8 vectors of $TIO_SHARED_VECTORS/tflite (TensorFlow
   Lite Micro's, written by TensorFlow's converter): TFLite -> ONNX -> TFLite
   (--layout nchw: the inputs as the original has them). Every quantized
   constant of the original is in the round trip with the same bytes, shape,
   type, scales, zero points and quantized dimension (a rank-1 tensor's
   quantized dimension is not compared: ONNX's DequantizeLinear of a vector
   has axis 0, TensorFlow writes 0 or, for depthwise biases in older files,
   3); every activation tensor whose name is in the round trip keeps its
   type, scales and zero points (those that fold away, a TRANSPOSE's output
   composed with the next, are listed); where Arm NN runs the original, the
   round trip's outputs on the manifest's inputs are bit-identical to the
   manifest's; every builtin is at the original's version (OLDER: where
   the original's converter predates TensorFlow's versioning). KNOWN lists the constants whose bytes are permuted on the
   way, with the reason.

pyarmnn, onnx, torch or onnxruntime missing fails (scripts/install-deps.sh
installs them).
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

if len(sys.argv) != 2:
    print("usage: test_tflite_qdq.py /path/to/tensio", file=sys.stderr)
    sys.exit(2)
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import qdq_build  # noqa: E402
from test_tflite_rewrite import buffer_bytes, model_of  # noqa: E402

TENSIO = os.path.abspath(sys.argv[1])
REPO = os.path.dirname(os.path.dirname(HERE))
ORT_DIR = os.path.join(REPO, "tests", "ort")
SHARED = os.environ.get("TIO_SHARED_VECTORS", os.path.join(REPO, "..", "shared", "vectors"))
# name: (activation dtype, per-channel weights, uint8 weights)
MODELS = {"cnn_s8": (np.int8, False, False), "cnn_u8": (np.uint8, False, True),
          "cnn_u8s8": (np.uint8, False, False), "cnn_s8_pc": (np.int8, True, False),
          "cnn_u8s8_pc": (np.uint8, True, False), "mlp_s8": (np.int8, False, False),
          "mlp_u8s8": (np.uint8, False, False), "mlp_s8_pc": (np.int8, True, False),
          "mlp_s8_kn": (np.int8, False, False), "mlp_s8_pc_kn": (np.int8, True, False)}
# constants whose bytes the round trip permutes (the same function)
KNOWN = {("tflm_micro_speech_quantized.tflite", "final_fc_weights/read/transpose"):
         "the fully connected layer reads a flattened NHWC value: its columns are "
         "reordered for the NHWC form instead of a TRANSPOSE"}
OPS = {3: "CONV_2D", 4: "DEPTHWISE_CONV_2D", 9: "FULLY_CONNECTED"}
# operator versions the round trip gives otherwise than the original: the
# original's converter was older than the versioning tensio follows
# (TensorFlow's op_version.cc: an int8 CONV_2D is version 3)
OLDER = {("tflm_person_detect.tflite", 3): (2, 3)}
# min_runtime_version the round trip gives otherwise than the original: its
# converter wrote an earlier runtime than its operators' versions need
# (runtime_version.cc: a FULLY_CONNECTED of version 4 runs from 1.14.0), or
# none (the metadata is optional); each the latest of its operators' (int8
# CONV_2D 3, DEPTHWISE_CONV_2D 3, FULLY_CONNECTED 4, SOFTMAX 2: 1.14.0)
OLDER_RUNTIME = {"tflm_micro_speech_quantized.tflite": "1.14.0",  # its own: 1.5.0
                 "tflm_mobilenet_v2_quantized_1x3x224x224.tflite": "1.14.0",  # none
                 "tflm_person_detect.tflite": "1.14.0"}  # none
# the versions TensorFlow's converter gives these builtins (op_version.cc):
# int8 kernels above 1, uint8 ones 1 (builtin code: version)
INT8_VERSIONS = {0: 2, 2: 2, 3: 3, 4: 3, 6: 2, 9: 4, 17: 2, 22: 1, 25: 2, 40: 2, 114: 1}
FAILED = 0


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, **kw)


def tensio(*args):
    r = run([TENSIO, *args])
    if r.returncode:
        raise AssertionError("tensio %s: %s" % (args[0], r.stderr.strip()[:400]))


def ort(model, d):
    r = run(["node", os.path.join(ORT_DIR, "run_model.js"), "--write", model, d],
            env=dict(os.environ, NODE_PATH=os.path.join(ORT_DIR, "node_modules")))
    if r.returncode:
        raise AssertionError("onnxruntime: %s" % (r.stderr or r.stdout).strip()[:300])


def armnn(path, d, inputs):
    """0: ran (d/out<k>.npy); else Arm NN's refusal (exit 3) as an error."""
    r = run(["/usr/bin/python3", os.path.join(HERE, "armnn_run.py"), path, d] + inputs)
    if r.returncode == 2:
        raise AssertionError(r.stderr.strip())
    if r.returncode:
        raise AssertionError("Arm NN (exit %d): %s" % (r.returncode, r.stderr.strip()[-200:]))


def tensors(path):
    """Subgraph 0's tensors through the independent reader: name, TensorType,
    shape, data, quantization (scales as float32, zero points, dim); and
    its operators (builtin code, inputs)."""
    b = open(path, "rb").read()
    m = model_of(b)
    sg = m.tables(2)[0]
    out = []
    for t in sg.tables(0):
        q, buf = t.table(4), t.scalar(2, "I")
        shape = tuple(t.vector(0, "i") or [])
        qq = None
        if q is not None and q.vector(2, "f"):
            qq = (tuple(np.float32(q.vector(2, "f"))), tuple(q.vector(3, "q") or []),
                  q.scalar(6, "i") if len(shape) > 1 else None)
        out.append({"name": t.string(3) or "", "type": t.scalar(1, "b"), "shape": shape,
                    "data": bytes(buffer_bytes(m, buf)[0]) if buf else b"", "q": qq})
    codes = [max(c.scalar(0, "b"), c.scalar(3, "i")) for c in m.tables(1)]
    ops = [(codes[o.scalar(0, "I")], o.vector(1, "i")) for o in sg.tables(3)]
    return out, ops


def op_versions(path):
    """{builtin code: the versions of the operator codes subgraph 0's
    operators use} through the independent reader."""
    m = model_of(open(path, "rb").read())
    codes = [(max(c.scalar(0, "b"), c.scalar(3, "i")), c.scalar(2, "i", 1)) for c in m.tables(1)]
    out = {}
    for o in m.tables(2)[0].tables(3):
        b, v = codes[o.scalar(0, "I")]
        out.setdefault(b, set()).add(v)
    return out


def min_runtime(path):
    """The min_runtime_version metadata's text (to its first NUL) and its
    buffer's length, through the independent reader; None when absent."""
    m = model_of(open(path, "rb").read())
    for md in m.tables(6):
        if md.string(0) == "min_runtime_version":
            data, _ = buffer_bytes(m, md.scalar(1, "I"))
            return bytes(data).split(b"\0")[0].decode(), len(data)
    return None


def runtime_key(v):
    return tuple(int(p) for p in v.split("."))


def check_structure(path, act_type, want_ops):
    """Every weighted operator quantized as TFLite's kernels take it."""
    ts, ops = tensors(path)
    seen = []
    for code, ins in ops:
        if code not in OPS:
            continue
        x, w, b = (ts[i] for i in ins[:3])
        name = OPS[code]
        seen.append(name)
        assert x["type"] == act_type and x["q"], "%s: input type %d" % (name, x["type"])
        assert w["q"] and w["type"] in (3, 9), "%s: weights not quantized" % name
        assert b["type"] == 2 and b["q"], "%s: bias not int32 quantized" % name
        if len(w["q"][0]) > 1:
            want = 3 if code == 4 else 0
            assert w["q"][2] == want, "%s: quantized_dimension %d, want %d" % (
                name, w["q"][2], want)
            assert len(w["q"][0]) == w["shape"][want], "%s: scale count" % name
        for k, bs in enumerate(b["q"][0]):
            ws = w["q"][0][k if len(w["q"][0]) > 1 else 0]
            assert abs(bs - x["q"][0][0] * ws) <= 1e-5 * bs, "%s: bias scale %d" % (name, k)
    assert sorted(set(seen)) == want_ops, seen
    return len(ops), sum(1 for c, _ in ops if c in (6, 114))  # DEQUANTIZE, QUANTIZE


def within_step(got, want, step):
    diff = float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max())
    if diff > step * (1 + 1e-5):
        raise AssertionError("max |diff| %.4g past one quantization step %.4g" % (diff, step))
    return "max |diff| %.3g (%.2f steps)" % (diff, diff / step)


def check_qdq(tmp, name):
    act, pc, u8w = MODELS[name]
    d = os.path.join(tmp, name)
    os.makedirs(d)
    src, dst = os.path.join(d, "m.onnx"), os.path.join(d, "m.tflite")
    cnn = name.startswith("cnn")
    if cnn:
        step = qdq_build.build_cnn(src, act, pc, u8w)
    else:
        step = qdq_build.build_mlp(src, act, pc, gemm_kn=name.endswith("_kn"))
    tensio("convert", src, dst)
    # uint8 activations with int8 weights are written int8 (zero point - 128)
    act_type = 3 if act == np.uint8 and u8w else 9
    nops, nq = check_structure(dst, act_type, ["CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"]
                               if cnn else ["FULLY_CONNECTED"])
    for code, vs in op_versions(dst).items():
        want = INT8_VERSIONS.get(code, 1) if act_type == 9 else 1
        assert vs == {want}, "builtin %d: version %s, TensorFlow's %d" % (code, sorted(vs), want)
    rs = np.random.RandomState(1)
    x = rs.standard_normal((1, 3, 16, 16) if cnn else (4, 16)).astype(np.float32)
    np.save(os.path.join(d, "in0.npy"), x)
    nhwc = os.path.join(d, "nhwc0.npy")
    np.save(nhwc, np.ascontiguousarray(x.transpose(0, 2, 3, 1) if cnn else x))
    json.dump({"inputs": [{"name": "input", "file": "in0.npy"}],
               "outputs": [{"name": "output", "file": "want0.npy"}]},
              open(os.path.join(d, "reference_io.json"), "w"))
    ort(src, d)
    want = np.load(os.path.join(d, "want0.npy"))
    head = "%d ops (%d QUANTIZE/DEQUANTIZE)" % (nops, nq)
    if not pc:
        armnn(dst, d, [nhwc])
        return head + "; Arm NN " + within_step(np.load(os.path.join(d, "out0.npy")), want, step)
    back, d2 = os.path.join(d, "back.onnx"), os.path.join(d, "raise")
    tensio("convert", "--drop-metadata", dst, back)
    os.makedirs(d2)
    os.rename(nhwc, os.path.join(d2, "nhwc0.npy"))
    import onnx
    bm = onnx.load(back)
    json.dump({"inputs": [{"name": bm.graph.input[0].name, "file": "nhwc0.npy"}],
               "outputs": [{"name": bm.graph.output[0].name, "file": "got0.npy"}]},
              open(os.path.join(d2, "reference_io.json"), "w"))
    ort(back, d2)
    return head + "; per-channel: Arm NN 20.08 aborts on it, ORT of the raise " + within_step(
        np.load(os.path.join(d2, "got0.npy")), want, step)


def check_refusal(tmp):
    """int8 weights with a zero point other than 0: refused by node name."""
    import onnx
    from onnx import numpy_helper
    src = os.path.join(tmp, "bad_zp.onnx")
    qdq_build.build_cnn(src, np.int8, False)
    m = onnx.load(src)
    for k, t in enumerate(m.graph.initializer):
        if t.name == "conv3_w_zp":
            m.graph.initializer[k].CopyFrom(numpy_helper.from_array(np.int8(3), t.name))
    onnx.save(m, src)
    r = run([TENSIO, "convert", src, os.path.join(tmp, "bad_zp.tflite")])
    assert r.returncode != 0, "converted, but int8 weights with zero point 3 must be refused"
    for s in ("'conv3'", "zero point 3", "QDQ"):
        assert s in r.stderr, "the refusal does not name %s: %s" % (s, r.stderr.strip())
    return "refused: " + r.stderr.strip().split(": ", 2)[-1][:120]


def check_round_trip(tmp, name, entry):
    src = os.path.join(SHARED, "tflite", name)
    base = os.path.join(tmp, name[:-7])
    tensio("convert", "--drop-metadata", src, base + ".onnx")
    tensio("convert", "--layout", "nchw", base + ".onnx", base + ".tflite")
    a, _ = tensors(src)
    b, _ = tensors(base + ".tflite")
    strip = lambda s: s[:-5] if s.endswith(":nchw") else s  # noqa: E731
    byname = {strip(t["name"]): t for t in b}
    bydata = {}
    for t in b:
        if t["data"]:
            bydata.setdefault((t["data"], t["shape"]), []).append(t)
    nc = na = 0
    gone, known = [], []
    for t in a:
        if t["q"] is None or t["type"] not in (2, 3, 9):  # int32, uint8, int8
            continue
        if t["data"]:
            match = [u for u in bydata.get((t["data"], t["shape"]), [])
                     if u["q"] == t["q"] and u["type"] == t["type"]]
            if not match and (name, t["name"]) in KNOWN:
                known.append(t["name"])
                continue
            assert match, "constant %s %s: no tensor of its bytes, shape and quantization" % (
                t["name"], t["shape"])
            nc += 1
            continue
        u = byname.get(t["name"])
        if u is None:
            gone.append(t["name"])
            continue
        assert u["type"] == t["type"] and u["q"] == t["q"], "tensor %s: %s %s, was %s %s" % (
            t["name"], u["type"], u["q"], t["type"], t["q"])
        na += 1
    # each operator at the version TensorFlow's converter gave it
    va, vb = op_versions(src), op_versions(base + ".tflite")
    for code, vs in sorted(va.items()):
        want = OLDER.get((name, code), (None, None))
        got = vb.get(code)
        assert got is not None, "builtin %d of the original is not in the round trip" % code
        if want[0] in vs:
            vs = (vs - {want[0]}) | {want[1]}
        assert got == vs, "builtin %d: version %s, the original %s" % (
            code, sorted(got), sorted(va[code]))
    # min_runtime_version as TensorFlow's converter makes it from those
    # versions: the original's where its converter had today's table (the
    # others name an earlier runtime than their operators need: OLDER_RUNTIME)
    ra, rb = min_runtime(src), min_runtime(base + ".tflite")
    assert rb is not None and rb[1] == 16, "min_runtime_version: %r" % (rb,)
    want = OLDER_RUNTIME.get(name, ra[0] if ra else None)
    assert rb[0] == want, "min_runtime_version %s, the original %s, expected %s" % (
        rb[0], ra and ra[0], want)
    assert ra is None or runtime_key(rb[0]) >= runtime_key(ra[0])
    line = "%d constants, %d activations kept, %d builtins at the original's versions" % (
        nc, na, len(va))
    line += ", min_runtime_version %s (the original's %s)" % (rb[0], ra and ra[0])
    if gone:
        line += "; folded away: %s" % ", ".join(gone)
    if known:
        line += "; permuted (KNOWN): %s" % ", ".join(known)
    ins = sorted(f for f in os.listdir(os.path.join(SHARED, "tflite"))
                 if f.startswith(name[:-7] + ".in") and f.endswith(".npy"))
    if str(entry.get("armnn_20_08", "")).startswith("OK") and ins:
        d = base + "_armnn"
        os.makedirs(d)
        armnn(base + ".tflite", d, [os.path.join(SHARED, "tflite", f) for f in ins])
        k = 0
        while os.path.exists(os.path.join(SHARED, "tflite", "%s.out%d.npy" % (name[:-7], k))):
            want = np.load(os.path.join(SHARED, "tflite", "%s.out%d.npy" % (name[:-7], k)))
            got = np.load(os.path.join(d, "out%d.npy" % k))
            assert got.dtype == want.dtype and np.array_equal(got, want), \
                "output %d differs from the manifest's Arm NN output" % k
            k += 1
        line += "; Arm NN: %d output(s) bit-identical to the original's" % k
    return line


def step(label, fn, *args):
    global FAILED
    try:
        print("ok   %-40s %s" % (label, fn(*args)))
    except Exception as e:  # a failure of one model is reported, the rest go on
        FAILED += 1
        print("FAIL %-40s %s" % (label, str(e)[:400]))
    sys.stdout.flush()


def main():
    import onnx  # noqa: F401 (missing: a failure)
    import torch  # noqa: F401
    if not os.path.isdir(os.path.join(ORT_DIR, "node_modules", "onnxruntime-node")):
        print("FAIL onnxruntime-node is not installed: run scripts/install-ort.sh")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        for name in MODELS:
            step("qdq_" + name, check_qdq, tmp, name)
        step("qdq_bad_weight_zero_point", check_refusal, tmp)
        man = os.path.join(SHARED, "tflite", "manifest.json")
        if not os.path.exists(man):
            print("FAIL %s is missing (the shared vectors)" % man)
            return 1
        for name, entry in sorted(json.load(open(man)).items()):
            if entry.get("class") != "quant-int8":
                continue
            step("round trip " + name, check_round_trip, tmp, name, entry)
    print("%s: %d failed" % ("FAIL" if FAILED else "ok", FAILED))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
