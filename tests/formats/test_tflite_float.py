#!/usr/bin/python3
"""Float32 TensorFlow Lite models built at test time (tflite_build.py), raised
to ONNX by `tensio convert`, run in onnxruntime and compared with a NumPy
evaluation of TensorFlow Lite's arithmetic (NHWC, written here from its
documented semantics: SAME padding's extra row at the end, average pools that
leave padding out, FULLY_CONNECTED's [out, in] weights, ...).

Usage: /usr/bin/python3 test_tflite_float.py /path/to/tensio

Per model (convnet, elementwise, upsample: TRANSPOSE_CONV), converted to
ONNX directly and through rten and tmfile (then
back to ONNX: the tmfile route raises Tengine's Pad and Clip back to
ONNX's and writes a Slice over several axes as one Tengine Slice per axis):
|got - want| <= 1e-4 + 1e-3 * |want|, python3-onnx's full check, the
Transpose count printed (and bounded on the direct route: the layout is
changed where it must be, not per operator); a route tensio refuses
(REFUSED: ConvTranspose to tmfile) must name why. onnx, numpy or onnxruntime
missing fails.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tflite_build as tb  # noqa: E402
from tflite_ref import (A_NONE, A_RELU, A_RELU6, A_TANH, SAME, VALID, act, conv,  # noqa: E402
                        dwconv, pool, tconv)

TENSIO = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORT_DIR = os.path.join(REPO, "tests", "ort")
F32, I32 = 0, 2
# builtin codes and options
ADD, AVG, CONCAT, CONV, DW, FC, LOGISTIC, MAXP = 0, 1, 2, 3, 4, 9, 14, 17
RELU_N1, RESHAPE, SOFTMAX, TANH, PAD, TRANSPOSE, MEAN, SUB, DIV = 20, 22, 25, 28, 34, 39, 40, 41, 42
MUL, SLICE, LEAKY, HSWISH, TCONV = 18, 45, 98, 117, 67
O_CONV, O_DW, O_POOL, O_FC, O_SOFTMAX, O_CONCAT, O_ADD, O_TCONV = 1, 2, 5, 8, 9, 10, 11, 49
O_MUL, O_REDUCER, O_SUB, O_DIV, O_SLICE, O_LEAKY = 21, 27, 28, 29, 32, 75


def opt(*fields):
    return list(fields)


class Model:
    def __init__(self):
        self.tensors, self.buffers, self.ops, self.codes = [], [b""], [], []

    def t(self, name, shape, data=None, ty=F32):
        buf = 0
        if data is not None:
            self.buffers.append(np.ascontiguousarray(data).tobytes())
            buf = len(self.buffers) - 1
        self.tensors.append((name, list(shape), ty, buf))
        return len(self.tensors) - 1

    def op(self, code, ins, outs, otype=0, fields=()):
        if code not in self.codes:
            self.codes.append(code)
        self.ops.append((self.codes.index(code), ins, outs, otype, list(fields)))

    def bytes(self, inputs, outputs):
        return tb.build_model(self.tensors, self.buffers, self.ops, inputs, outputs, self.codes)


def convnet(rng):
    """CONV (SAME, stride 2, RELU6) -> DEPTHWISE (mult 2, RELU) -> MAX_POOL and
    AVG_POOL (SAME, stride 2) + PAD -> CONCATENATION -> HARD_SWISH -> ADD of
    a constant -> MEAN -> RESHAPE -> FULLY_CONNECTED (TANH) -> SOFTMAX."""
    m = Model()
    f = lambda *s: rng.standard_normal(s).astype(np.float32) * 0.5  # noqa: E731
    x = f(1, 9, 9, 3)
    w1, b1, wd, bd = f(4, 3, 3, 3), f(4), f(1, 3, 3, 8), f(8)
    pads = np.array([[0, 0], [0, 1], [1, 0], [0, 0]], np.int32)
    c = np.array([0.25], np.float32)
    wf, bf = f(5, 16), f(5)
    X = m.t("input", x.shape)
    T1 = m.t("conv", (1, 5, 5, 4))
    m.op(CONV, [X, m.t("w1", w1.shape, w1), m.t("b1", b1.shape, b1)], [T1], O_CONV,
         opt((0, "b", SAME), (1, "i", 2), (2, "i", 2), (3, "b", A_RELU6)))
    T2 = m.t("dw", (1, 5, 5, 8))
    m.op(DW, [T1, m.t("wd", wd.shape, wd), m.t("bd", bd.shape, bd)], [T2], O_DW,
         opt((0, "b", SAME), (1, "i", 1), (2, "i", 1), (3, "i", 2), (4, "b", A_RELU)))
    T3, T4, T5 = m.t("maxp", (1, 4, 4, 8)), m.t("avgp", (1, 3, 3, 8)), m.t("pad", (1, 4, 4, 8))
    m.op(MAXP, [T2], [T3], O_POOL, opt((0, "b", VALID), (1, "i", 1), (2, "i", 1), (3, "i", 2),
                                       (4, "i", 2)))
    m.op(AVG, [T2], [T4], O_POOL, opt((0, "b", SAME), (1, "i", 2), (2, "i", 2), (3, "i", 3),
                                      (4, "i", 3)))
    m.op(PAD, [T4, m.t("paddings", pads.shape, pads, I32)], [T5])
    T6, T7, T8 = m.t("cat", (1, 4, 4, 16)), m.t("hswish", (1, 4, 4, 16)), m.t("add", (1, 4, 4, 16))
    m.op(CONCAT, [T3, T5], [T6], O_CONCAT, opt((0, "i", 3)))
    m.op(HSWISH, [T6], [T7])
    m.op(ADD, [T7, m.t("c", c.shape, c)], [T8], O_ADD, opt((0, "b", A_NONE)))
    T9, T10 = m.t("mean", (1, 1, 1, 16)), m.t("flat", (1, 16))
    axes = np.array([1, 2], np.int32)
    m.op(MEAN, [T8, m.t("axes", axes.shape, axes, I32)], [T9], O_REDUCER, opt((0, "B", 1)))
    shp = np.array([1, 16], np.int32)
    m.op(RESHAPE, [T9, m.t("shape", shp.shape, shp, I32)], [T10])
    T11, T12 = m.t("fc", (1, 5)), m.t("softmax", (1, 5))
    m.op(FC, [T10, m.t("wf", wf.shape, wf), m.t("bf", bf.shape, bf)], [T11], O_FC,
         opt((0, "b", A_TANH)))
    m.op(SOFTMAX, [T11], [T12], O_SOFTMAX, opt((0, "f", 0.5)))
    # the reference
    r1 = act(conv(x, w1, b1, 2, SAME), A_RELU6)
    r2 = act(dwconv(r1, wd, bd, 1, SAME, 2), A_RELU)
    r3, r4 = pool(r2, 2, 1, VALID, False), pool(r2, 3, 2, SAME, True)
    r5 = np.pad(r4, pads)
    r6 = np.concatenate([r3, r5], axis=3)
    r7 = r6 * np.clip(r6 + 3, 0, 6) / 6
    r8 = r7 + c
    r10 = r8.mean(axis=(1, 2), keepdims=True).reshape(1, 16)
    r11 = np.tanh(r10 @ wf.T + bf)
    e = np.exp(0.5 * (r11 - r11.max()))
    r12 = e / e.sum()
    # outputs: the softmax and an NHWC activation in the middle
    return m.bytes([X], [T12, T8]), [x], [r12, r8], 4


def elementwise(rng):
    """STRIDED_SLICE (shrink axis 0, stride 2) -> LEAKY_RELU -> MUL -> SUB ->
    DIV -> TRANSPOSE -> LOGISTIC -> TANH -> RELU_N1_TO_1."""
    m = Model()
    x = rng.standard_normal((1, 6, 4, 3)).astype(np.float32)
    X = m.t("x", x.shape)
    b, e, s = (np.array(v, np.int32) for v in ([0, 1, 0, 0], [1, 5, 4, 2], [1, 2, 1, 1]))
    T1 = m.t("slice", (2, 4, 2))
    m.op(SLICE, [X, m.t("begin", [4], b, I32), m.t("end", [4], e, I32),
                 m.t("strides", [4], s, I32)], [T1], O_SLICE, opt((4, "i", 1)))
    T2, T3, T4, T5 = (m.t(n, (2, 4, 2)) for n in ("leaky", "mul", "sub", "div"))
    m.op(LEAKY, [T1], [T2], O_LEAKY, opt((0, "f", 0.2)))
    m.op(MUL, [T2, T2], [T3], O_MUL, opt((0, "b", A_NONE)))
    k1, k2 = np.array([0.5], np.float32), np.array([2.0], np.float32)
    m.op(SUB, [T3, m.t("k1", [1], k1)], [T4], O_SUB, opt((0, "b", A_NONE)))
    m.op(DIV, [T4, m.t("k2", [1], k2)], [T5], O_DIV, opt((0, "b", A_RELU)))
    perm = np.array([2, 0, 1], np.int32)
    T6, T7, T8, T9 = (m.t(n, (2, 2, 4)) for n in ("transpose", "sigmoid", "tanh", "clip"))
    m.op(TRANSPOSE, [T5, m.t("perm", [3], perm, I32)], [T6])
    m.op(LOGISTIC, [T6], [T7])
    m.op(TANH, [T7], [T8])
    m.op(RELU_N1, [T8], [T9])
    r = x[0, 1:5:2, :, 0:2]
    r = np.where(r > 0, r, 0.2 * r)
    r = np.maximum((r * r - 0.5) / 2.0, 0)
    r = np.clip(np.tanh(1 / (1 + np.exp(-r.transpose(2, 0, 1)))), -1, 1)
    return m.bytes([X], [T9]), [x], [r], 1


def upsample(rng):
    """TRANSPOSE_CONV (SAME, stride 2, bias, RELU; output_shape a constant)
    -> TRANSPOSE_CONV (VALID, strides 1 x 2, no bias, one column more than
    the input covers: ONNX's output_padding)."""
    m = Model()
    f = lambda *s: rng.standard_normal(s).astype(np.float32) * 0.5  # noqa: E731
    x = f(1, 4, 5, 3)
    w1, b1, w2 = f(6, 3, 3, 3), f(6), f(2, 2, 3, 6)
    X = m.t("x", x.shape)
    s1, s2 = np.array([1, 8, 10, 6], np.int32), np.array([1, 9, 22, 2], np.int32)
    T1, T2 = m.t("up1", tuple(s1)), m.t("up2", tuple(s2))
    m.op(TCONV, [m.t("shape1", [4], s1, I32), m.t("w1", w1.shape, w1), X,
                 m.t("b1", b1.shape, b1)], [T1], O_TCONV,
         opt((0, "b", SAME), (1, "i", 2), (2, "i", 2), (3, "b", A_RELU)))
    m.op(TCONV, [m.t("shape2", [4], s2, I32), m.t("w2", w2.shape, w2), T1, -1], [T2],
         O_TCONV, opt((0, "b", VALID), (1, "i", 2), (2, "i", 1)))
    r1 = act(tconv(x, w1, b1, 2, 2, SAME, 8, 10), A_RELU)
    r2 = tconv(r1, w2, None, 1, 2, VALID, 9, 22)
    return m.bytes([X], [T2]), [x], [r2], 4  # the two weights' and the input's and output's


# routes that must refuse, naming why: tensio's tmfile writer has no
# Deconvolution (docs/formats/tmfile.md)
REFUSED = {("upsample", "tmfile"): "tmfile has no operator for ConvTranspose"}


def run_route(onnx, name, route, src, d, ins, outs, max_tr):
    """Converts src to ONNX directly or through `route`; runs it. Returns the
    line to print, starting with "!" on failure."""
    d = os.path.join(d, route)
    os.makedirs(d)
    dst = os.path.join(d, "m.onnx")
    steps = [[src, dst]] if route == "onnx" else [[src, os.path.join(d, "m." + route)],
                                                    [os.path.join(d, "m." + route), dst]]
    for a, b in steps:
        r = subprocess.run([TENSIO, "convert", a, b], capture_output=True, text=True)
        if r.returncode:
            return "!convert %s: %s" % (os.path.basename(b), r.stderr.strip())
    model = onnx.load(dst)
    onnx.checker.check_model(model, full_check=True)
    tr = sum(1 for n in model.graph.node if n.op_type == "Transpose")
    io = {"inputs": [], "outputs": []}
    for k, (v, a) in enumerate(zip(model.graph.input, ins)):
        np.save(os.path.join(d, "in%d.npy" % k), a)
        io["inputs"].append({"name": v.name, "file": "in%d.npy" % k})
    for k, v in enumerate(model.graph.output):
        io["outputs"].append({"name": v.name, "file": "out%d.npy" % k})
    json.dump(io, open(os.path.join(d, "reference_io.json"), "w"))
    r = subprocess.run(["node", os.path.join(ORT_DIR, "run_model.js"), "--write", dst, d],
                       capture_output=True, text=True,
                       env=dict(os.environ, NODE_PATH=os.path.join(ORT_DIR, "node_modules")))
    if r.returncode:
        return "!onnxruntime: %s" % r.stderr.strip()[-400:]
    worst, bad = 0.0, []
    for k, want in enumerate(outs):
        got = np.load(os.path.join(d, "out%d.npy" % k))
        if got.shape != want.shape:
            bad.append("output %d: shape %s, want %s" % (k, got.shape, want.shape))
            continue
        diff = np.abs(got.astype(np.float64) - want)
        worst = max(worst, float(diff.max()))
        if not (diff <= 1e-4 + 1e-3 * np.abs(want)).all():
            bad.append("output %d: max diff %g" % (k, diff.max()))
    if route == "onnx" and tr > max_tr:
        bad.append("%d Transpose nodes (at most %d expected)" % (tr, max_tr))
    line = "%d nodes, %d Transpose, max abs diff %.3g" % (len(model.graph.node), tr, worst)
    return ("!" + "; ".join(bad) + "; " + line) if bad else line


def armnn_tconv(onnx, rng, tmp):
    """The same TRANSPOSE_CONV run by Arm NN 20.08 (tests/formats/armnn_run.py;
    its parser takes the operator without a bias input), VALID, strides 2 x 1
    and 1 x 2: its outputs against the NumPy evaluation above. (SAME is not
    compared: Arm NN 20.08 computes that padding from the input's size, where
    TensorFlow Lite's kernels take the output's: docs/formats/tflite.md.)"""
    lines = []
    for sh, sw, oh, ow in ((2, 1, 9, 7), (1, 2, 6, 12)):
        m = Model()
        x = rng.standard_normal((1, 4, 5, 3)).astype(np.float32)
        w = rng.standard_normal((6, 3, 3, 3)).astype(np.float32) * 0.5
        X = m.t("x", x.shape)
        shp = np.array([1, oh, ow, 6], np.int32)
        Y = m.t("y", tuple(shp))
        m.op(TCONV, [m.t("shape", [4], shp, I32), m.t("w", w.shape, w), X], [Y], O_TCONV,
             opt((0, "b", VALID), (1, "i", sw), (2, "i", sh)))
        d = os.path.join(tmp, "armnn_%d%d" % (sh, sw))
        os.makedirs(d)
        src = os.path.join(d, "m.tflite")
        open(src, "wb").write(m.bytes([X], [Y]))
        np.save(os.path.join(d, "x.npy"), x)
        r = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "armnn_run.py"), src, d,
                            os.path.join(d, "x.npy")], capture_output=True, text=True)
        label = "transpose_conv %dx%d VALID in Arm NN" % (sh, sw)
        if r.returncode:
            lines.append("FAIL %s: %s" % (label, r.stderr.strip()[-300:]))
            continue
        got = np.load(os.path.join(d, "out0.npy")).astype(np.float64)
        want = tconv(x, w, None, sh, sw, VALID, oh, ow)
        diff = np.abs(got - want)
        ok = got.shape == want.shape and (diff <= 1e-4 + 1e-3 * np.abs(want)).all()
        # and tensio's ONNX form of it in onnxruntime
        line = run_route(onnx, "armnn", "onnx", src, d, [x], [want], 3)
        ok = ok and not line.startswith("!")
        lines.append("%s %s: max abs diff %.3g from NumPy; onnxruntime: %s" % (
            "ok" if ok else "FAIL", label, diff.max(), line.lstrip("!")))
    return lines


def main():
    import onnx
    if not os.path.isdir(os.path.join(ORT_DIR, "node_modules", "onnxruntime-node")):
        print("FAIL: onnxruntime-node is not installed: run scripts/install-ort.sh")
        return 1
    rng = np.random.default_rng(0)
    tmp = tempfile.mkdtemp(prefix="tio_tflite_float_")
    failed = 0
    try:
        for build in (convnet, elementwise, upsample):
            name = build.__name__
            data, ins, outs, max_tr = build(rng)
            d = os.path.join(tmp, name)
            os.makedirs(d)
            src = os.path.join(d, "m.tflite")
            open(src, "wb").write(data)
            # TFLite -> ONNX, and through rten and tmfile back to ONNX
            for route in ("onnx", "rten", "tmfile"):
                line = run_route(onnx, name, route, src, d, ins, outs, max_tr)
                want = REFUSED.get((name, route))
                if want:
                    line = ("refused by name: " + want) if want in line else (
                        "!expected the refusal %r: %s" % (want, line.lstrip("!")))
                print(("FAIL %s via %s: %s" if line.startswith("!") else "ok %s via %s: %s")
                      % (name, route, line.lstrip("!")), flush=True)
                failed += line.startswith("!")
        for line in armnn_tconv(onnx, rng, tmp):
            print(line, flush=True)
            failed += line.startswith("FAIL")
    finally:
        shutil.rmtree(tmp)
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
