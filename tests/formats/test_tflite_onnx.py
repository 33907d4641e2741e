#!/usr/bin/python3
"""TensorFlow Lite -> ONNX, checked against Arm NN.

Usage: /usr/bin/python3 test_tflite_onnx.py /path/to/tensio

For each model of $TIO_SHARED_VECTORS/tflite (manifest.json, README.md):
- `tensio convert --drop-metadata M.tflite M.onnx` and, where Arm NN ran it,
  M.tflite -> M.rten -> M.onnx too (its outputs the same as the direct
  form's, within one quantization step) (the quantization
  metadata of the constants are in the graph's QDQ nodes);
- models whose operators have no ONNX form: the conversion is refused, and
  the error names every such operator the manifest lists;
- the others: onnx.checker.check_model(full_check=True) (where Debian's
  python3-onnx knows the opset: int16 QDQ needs opset 21, and the line says
  so when it does not), then, where Arm NN ran the original
  (`armnn_inputs`/`armnn_outputs`), onnxruntime (npm's onnxruntime-node,
  tests/ort/run_model.js --write) on NAME.in<k>.npy against NAME.out<k>.npy:
  float outputs within 1e-4 + 1e-3 * |want|, quantized ones within one
  quantization step;
- the others that convert, where Arm NN could not run them: onnxruntime on
  seeded inputs, and where the model is one CONV_2D or TRANSPOSE_CONV
  (seanet's int16 layers) its outputs against TFLite's arithmetic done in
  NumPy (reference_check), within one quantization step; then seanet's
  TRANSPOSE_CONV with its output's shape changed in the file: output_padding
  against the reference, and two refusals by name.

One line per model: node and Transpose counts, the largest difference from
Arm NN. The shared vectors absent: every model is reported skipped by name
(exit 0, as the other tests using ../shared). onnx, numpy or onnxruntime
missing fails.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tflite_ref  # noqa: E402

if len(sys.argv) != 2:
    print("usage: test_tflite_onnx.py /path/to/tensio", file=sys.stderr)
    sys.exit(2)

TENSIO = os.path.abspath(sys.argv[1])
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORT_DIR = os.path.join(REPO, "tests", "ort")
SHARED = os.environ.get("TIO_SHARED_VECTORS", os.path.join(REPO, "..", "shared", "vectors"))
VEC = os.path.join(SHARED, "tflite")
# Where onnxruntime's result of the ONNX form and Arm NN's differ by more than
# one quantization step (docs/formats/tflite.md, "The graph"): the line says
# XFAIL with the figures, and the test fails if such a model comes within the
# tolerance (then it belongs out of this list). mobilenet_v2: Arm NN 20.08
# pads int8 tensors with the integer 0, not their zero point as TFLite does
# (and the ONNX form), before each depthwise convolution: found by exposing
# each operator's output in turn; the borders differ from operator 3 on.
XFAIL = {"tflm_mobilenet_v2_quantized_1x3x224x224"}
# Arm NN's reference backend computes a quantized operator as its QDQ form
# says (dequantize, float arithmetic, quantize); onnxruntime's optimizer fuses
# QDQ groups into integer kernels that round otherwise (micro_speech's fully
# connected layer: 3 steps). The comparison with Arm NN runs onnxruntime
# without graph optimizations (TIO_ORT_OPT, tests/ort/run_model.js).
ORT_ENV = dict(os.environ, TIO_ORT_OPT="disabled")
# builtin operator codes of the manifest that have no ONNX form in tensio
NAMES = {27: "SVDF", 32: "CUSTOM", 44: "UNIDIRECTIONAL_SEQUENCE_LSTM"}


def run(argv, env=None):
    return subprocess.run(argv, capture_output=True, text=True, env=env)


def main():
    if not os.path.isfile(os.path.join(VEC, "manifest.json")):
        print("skipped: %s/manifest.json is absent (the shared vectors)" % VEC)
        print("0 passed, 0 failed, skipped: the TensorFlow Lite vectors")
        return 0
    import numpy as np
    import onnx
    if not os.path.isdir(os.path.join(ORT_DIR, "node_modules", "onnxruntime-node")):
        print("FAIL: onnxruntime-node is not installed: run scripts/install-ort.sh")
        return 1
    manifest = json.load(open(os.path.join(VEC, "manifest.json")))
    passed = failed = 0
    tmp = tempfile.mkdtemp(prefix="tio_tflite_onnx_")
    try:
        for fname in sorted(manifest):
            m = manifest[fname]
            name = fname[:-len(".tflite")]
            try:
                line = check(np, onnx, fname, name, m, tmp)
                if name in XFAIL:
                    print("FAIL %s: within tolerance, remove it from XFAIL: %s" % (name, line))
                    failed += 1
                else:
                    print("ok %s: %s" % (name, line), flush=True)
                    passed += 1
            except AssertionError as e:
                if name in XFAIL and "quantization steps off" in str(e):
                    print("XFAIL %s: %s" % (name, e), flush=True)
                else:
                    print("FAIL %s: %s" % (name, e), flush=True)
                    failed += 1
        for line in transpose_conv_variants(np, onnx, manifest, tmp):
            print(line, flush=True)
            if line.startswith("ok "):
                passed += 1
            else:
                failed += 1
    finally:
        shutil.rmtree(tmp)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


def check(np, onnx, fname, name, m, tmp):
    src = os.path.join(VEC, fname)
    dst = os.path.join(tmp, name + ".onnx")
    r = run([TENSIO, "convert", "--drop-metadata", src, dst])
    ops = sorted({o["opcode"] for sg in m["subgraphs"][:1] for o in sg["operators"]})
    gaps = [NAMES[c] for c in ops if c in NAMES]
    if gaps:
        assert r.returncode != 0, "converted, but it uses %s" % ", ".join(gaps)
        for g in gaps:
            assert g in r.stderr, "the refusal does not name %s: %s" % (g, r.stderr.strip())
        assert "without an ONNX form" in r.stderr, r.stderr.strip()
        return "refused, naming %s" % ", ".join(gaps)
    assert r.returncode == 0, "convert: %s" % r.stderr.strip()
    model = onnx.load(dst)
    opset = max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    if opset <= onnx.defs.onnx_opset_version():
        onnx.checker.check_model(model, full_check=True)
        checked = "checker ok"
    else:
        checked = "checker: opset %d is past python3-onnx %s's %d" % (
            opset, onnx.__version__, onnx.defs.onnx_opset_version())
    sg0 = m["subgraphs"][0]
    for what, vals, idx in (("input", model.graph.input, sg0["inputs"]),
                            ("output", model.graph.output, sg0["outputs"])):
        want = [sg0["tensors"][i]["name"] for i in idx]
        got = [v.name for v in vals]
        assert got == want, "graph %ss %s, the TFLite model's %s" % (what, got, want)
        for v, i in zip(vals, idx):
            t = sg0["tensors"][i]
            dims = [d.dim_value for d in v.type.tensor_type.shape.dim]
            assert dims == t["shape"], "%s %s: shape %s, TFLite %s" % (what, v.name, dims,
                                                                      t["shape"])
    nodes = len(model.graph.node)
    tr = sum(1 for n in model.graph.node if n.op_type == "Transpose")
    tr_act = sum(1 for n in model.graph.node if n.op_type == "Transpose" and
                 not n.output[0].endswith(":oihw"))
    head = "%d nodes, %d Transpose (%d on activations), opset %d, %s" % (
        nodes, tr, tr_act, opset, checked)
    if not m.get("armnn_outputs"):
        why = "Arm NN did not run it (%s)" % str(m.get("armnn_20_08"))[:60]
        return head + "; " + reference_check(np, src, name, m, model, tmp) + "; " + why
    d = os.path.join(tmp, name)
    os.makedirs(d)
    sg = m["subgraphs"][0]
    for f in m["armnn_inputs"]:
        shutil.copy(os.path.join(VEC, f), os.path.join(d, f))
    ins = [{"name": i.name, "file": f} for i, f in zip(model.graph.input, m["armnn_inputs"])]
    outs = [{"name": o.name, "file": "got%d.npy" % k}
            for k, o in enumerate(model.graph.output)]
    assert len(ins) == len(m["armnn_inputs"]) and len(outs) == len(m["armnn_outputs"])
    json.dump({"inputs": ins, "outputs": outs}, open(os.path.join(d, "reference_io.json"), "w"))
    r = run(["node", os.path.join(ORT_DIR, "run_model.js"), "--write", dst, d],
            env=dict(ORT_ENV, NODE_PATH=os.path.join(ORT_DIR, "node_modules")))
    assert r.returncode == 0, "onnxruntime: %s" % (r.stderr or r.stdout).strip()
    # the same model through rten (tflite -> rten -> onnx): the same outputs
    d2 = os.path.join(tmp, name + "_rten")
    os.makedirs(d2)
    for f in m["armnn_inputs"]:
        shutil.copy(os.path.join(VEC, f), os.path.join(d2, f))
    shutil.copy(os.path.join(d, "reference_io.json"), d2)
    rt, rt_onnx = os.path.join(d2, "m.rten"), os.path.join(d2, "m.onnx")
    int16 = any(t["dtype"] == "int16" and t.get("quant") for t in sg["tensors"])
    for a, b in ((src, rt), (rt, rt_onnx)):
        r = run([TENSIO, "convert", "--drop-metadata", a, b])
        if int16:
            # rten has no int16: the refusal names it
            assert r.returncode != 0 and "data type 5 has no rten form" in r.stderr, (
                "via rten: int16 %s" % (r.stderr.strip() or "converted"))
            break
        assert r.returncode == 0, "via rten: convert %s: %s" % (os.path.basename(b),
                                                               r.stderr.strip())
    if not int16:
        r = run(["node", os.path.join(ORT_DIR, "run_model.js"), "--write", rt_onnx, d2],
                env=dict(ORT_ENV, NODE_PATH=os.path.join(ORT_DIR, "node_modules")))
        assert r.returncode == 0, "via rten: onnxruntime: %s" % (r.stderr or r.stdout).strip()
        for o in outs:
            a = np.load(os.path.join(d, o["file"])).astype(np.float64)
            b = np.load(os.path.join(d2, o["file"])).astype(np.float64)
            assert a.shape == b.shape and np.abs(a - b).max(initial=0) <= (
                1 if np.issubdtype(np.load(os.path.join(d, o["file"])).dtype, np.integer)
                else 1e-5), "via rten: %s differs from the direct ONNX form's" % o["name"]
        head += ", via rten the same"
    else:
        head += ", rten refuses int16 (by name)"
    worst = 0.0
    for k, (o, f) in enumerate(zip(sg["outputs"], m["armnn_outputs"])):
        want = np.load(os.path.join(VEC, f))
        got = np.load(os.path.join(d, outs[k]["file"]))
        assert got.shape == want.shape, "output %d: shape %s, Arm NN %s" % (
            k, got.shape, want.shape)
        assert got.dtype == want.dtype, "output %d: %s, Arm NN %s" % (k, got.dtype, want.dtype)
        t = sg["tensors"][o]
        q = t.get("quant") or {}
        if np.issubdtype(want.dtype, np.integer):
            diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
            assert diff.max(initial=0) <= 1, (
                "output %d: %d quantization steps off (%d of %d elements past one); %s" % (
                    k, diff.max(), int((diff > 1).sum()), diff.size, head))
            scale = (q.get("scale") or [1.0])[0]
            worst = max(worst, float(diff.max(initial=0)) * scale)
        else:
            diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
            tol = 1e-4 + 1e-3 * np.abs(want.astype(np.float64))
            assert (diff <= tol).all(), "output %d: max diff %g" % (k, diff.max())
            worst = max(worst, float(diff.max(initial=0)))
    return head + "; onnxruntime vs Arm NN max abs diff %.6g" % worst


def fb_field(b, pos, i):
    """A minimal FlatBuffers walk of the test's own (so the references below
    do not read the model through tensio): the position of field i of the
    table at pos in the bytes b, or None when the field is absent."""
    import struct
    vt = pos - struct.unpack_from("<i", b, pos)[0]
    off = struct.unpack_from("<H", b, vt + 4 + 2 * i)[0] if 4 + 2 * i < (
        struct.unpack_from("<H", b, vt)[0]) else 0
    return pos + off if off else None


def fb_ref(b, at):
    """The table or vector the offset at `at` refers to."""
    import struct
    return at + struct.unpack_from("<I", b, at)[0]


def fb_sub(b):
    """Model.subgraphs[0] of the .tflite bytes b."""
    return fb_ref(b, fb_ref(b, fb_field(b, fb_ref(b, 0), 2)) + 4)


def fb_options(path):
    """The first operator's builtin options table of a .tflite
    (Model.subgraphs[0].operators[0].builtin_options), as a function of a
    field index and its size (1: int8, 4: int32) -> value, or the default."""
    import struct
    b = open(path, "rb").read()
    op = fb_ref(b, fb_ref(b, fb_field(b, fb_sub(b), 3)) + 4)
    ot = fb_ref(b, fb_field(b, op, 4))

    def get(i, size, default):
        at = fb_field(b, ot, i)
        return default if at is None else struct.unpack_from("<b" if size == 1 else "<i", b, at)[0]
    return get


def reference_check(np, src, name, m, model, tmp):
    """A model Arm NN cannot run: onnxruntime runs its ONNX form on seeded
    inputs. Where the model is one CONV_2D or TRANSPOSE_CONV (seanet's int16
    layers), its outputs are checked against TFLite's arithmetic done here in
    NumPy (dequantize, convolve or scatter in float64, add the bias, quantize:
    what TFLite's integer kernels compute, up to rounding): within one
    quantization step."""
    sg = m["subgraphs"][0]
    tensors = sg["tensors"]
    d = os.path.join(tmp, name + "_ref")
    os.makedirs(d)
    rng = np.random.default_rng(7)
    ops = sg["operators"]
    single = len(ops) == 1 and ops[0]["opcode"] in (3, 67)
    feeds = {}
    ins = []
    for k, (v, i) in enumerate(zip(model.graph.input, sg["inputs"])):
        t = tensors[i]
        dt = np.dtype(t["dtype"])
        if single and ops[0]["opcode"] == 67 and i == ops[0]["inputs"][0]:
            a = np.array(tensors[ops[0]["outputs"][0]]["shape"], dtype=dt)  # output_shape
        elif np.issubdtype(dt, np.integer):
            info = np.iinfo(dt)
            a = rng.integers(max(info.min, -20000), min(info.max, 20000) + 1,
                             size=t["shape"]).astype(dt)
        else:
            a = rng.standard_normal(t["shape"]).astype(dt)
        np.save(os.path.join(d, "in%d.npy" % k), a)
        feeds[i] = a
        ins.append({"name": v.name, "file": "in%d.npy" % k})
    outs = [{"name": o.name, "file": "got%d.npy" % k} for k, o in enumerate(model.graph.output)]
    json.dump({"inputs": ins, "outputs": outs}, open(os.path.join(d, "reference_io.json"), "w"))
    r = run(["node", os.path.join(ORT_DIR, "run_model.js"), "--write", src_onnx(tmp, name), d],
            env=dict(ORT_ENV, NODE_PATH=os.path.join(ORT_DIR, "node_modules")))
    assert r.returncode == 0, "onnxruntime on seeded inputs: %s" % (r.stderr or r.stdout).strip()
    got = [np.load(os.path.join(d, o["file"])) for o in outs]
    for g, i in zip(got, sg["outputs"]):
        assert list(g.shape) == tensors[i]["shape"], "output shape %s, TFLite %s" % (
            list(g.shape), tensors[i]["shape"])
    if not single:
        return "onnxruntime runs it on seeded inputs (no reference)"
    # the constants, as tensio's .npz of the model (their bytes are checked
    # against the manifest's sha256 by tflite_vectors)
    npz = os.path.join(d, "consts.npz")
    r = run([TENSIO, "convert", "--drop-metadata", src, npz])
    assert r.returncode == 0, "to .npz: %s" % r.stderr.strip()
    z = np.load(npz)
    op = ops[0]

    def value(i):
        return feeds[i] if i in feeds else z[tensors[i]["name"]]

    def deq(i):
        t, a = tensors[i], value(i).astype(np.float64)
        q = t.get("quant")
        if not q or not q.get("scale"):
            return a
        s, zp = np.array(q["scale"]), np.array(q.get("zero_point") or [0] * len(q["scale"]))
        if len(s) > 1:
            shape = [1] * a.ndim
            shape[q.get("quantized_dimension", 0) if a.ndim > 1 else 0] = len(s)
            s, zp = s.reshape(shape), zp.reshape(shape)
        return (a - zp) * s

    opt = fb_options(src)
    tc = op["opcode"] == 67
    iw = op["inputs"][1]
    ix = op["inputs"][2] if tc else op["inputs"][0]
    ib = op["inputs"][3] if tc else op["inputs"][2]
    x, w = deq(ix), deq(iw)  # NHWC, OHWI
    pad, sw, sh = opt(0, 1, 0), opt(1, 4, 1), opt(2, 4, 1)
    act = opt(3, 1, 0)
    yt = tensors[op["outputs"][0]]
    oh, ow = yt["shape"][1:3]
    if tc:
        y = tflite_ref.tconv(x, w, None, sh, sw, pad, oh, ow)
    else:
        assert sh == sw and opt(4, 4, 1) == 1 and opt(5, 4, 1) == 1, (
            "the NumPy reference takes one stride and no dilation")
        y = tflite_ref.conv(x, w, 0, sh, pad)
    if ib >= 0:
        y += deq(ib)
    y = tflite_ref.act(y, act)
    q = yt.get("quant") or {}
    if q.get("scale"):
        info = np.iinfo(np.dtype(yt["dtype"]))
        zp = (q.get("zero_point") or [0])[0]
        want = np.clip(np.round(y / q["scale"][0]) + zp, info.min, info.max)
        diff = np.abs(got[0].astype(np.int64) - want.astype(np.int64))
        assert diff.max() <= 1, "%d quantization steps off the NumPy reference (%d of %d " \
            "elements past one)" % (diff.max(), int((diff > 1).sum()), diff.size)
        return "NumPy reference: within %d step (%d of %d elements off)" % (
            diff.max(), int((diff > 0).sum()), diff.size)
    diff = np.abs(got[0] - y)
    assert (diff <= 1e-4 + 1e-3 * np.abs(y)).all(), "max diff %g from the NumPy reference" % (
        diff.max())
    return "NumPy reference: max abs diff %.3g" % diff.max()


def tensor_shape_at(b, ti):
    """The byte offset of tensor ti's shape vector (its length word) in
    subgraph 0 of the .tflite bytes b: Model.subgraphs[0].tensors[ti].shape."""
    t = fb_ref(b, fb_ref(b, fb_field(b, fb_sub(b), 0)) + 4 + 4 * ti)
    return fb_ref(b, fb_field(b, t, 0))


def transpose_conv_variants(np, onnx, manifest, tmp):
    """seanet's TRANSPOSE_CONV with its output's static width or channels
    changed in the file: one column more than the input covers (ONNX's
    output_padding: onnxruntime against the NumPy reference), three more
    (past the stride: refused by name), other channels than the weights'
    (refused by name)."""
    import copy
    import struct
    fname = "tflm_seanet_transpose_conv0.tflite"
    if fname not in manifest:
        return ["FAIL %s: not in the manifest" % fname]
    m0 = manifest[fname]
    yi = m0["subgraphs"][0]["operators"][0]["outputs"][0]
    raw = open(os.path.join(VEC, fname), "rb").read()
    at = tensor_shape_at(raw, yi)
    shape = list(struct.unpack_from("<I4i", raw, at))
    if shape[0] != 4 or shape[1:] != m0["subgraphs"][0]["tensors"][yi]["shape"]:
        return ["FAIL %s: the output's shape vector is not where it was expected" % fname]
    lines = []
    for what, dim, delta, refusal in (
            ("one column past what the input covers", 3, 1, None),
            ("three columns past it", 3, 3, "the output is larger than the input covers"),
            ("other channels than the weights'", 4, -32,
             "the weights' channels are not the input's and the output's")):
        b = bytearray(raw)
        new = shape[1:]
        new[dim - 1] += delta
        struct.pack_into("<4i", b, at + 4, *new)
        name = "tconv_variant%d" % len(lines)
        src = os.path.join(tmp, name + ".tflite")
        open(src, "wb").write(bytes(b))
        r = run([TENSIO, "convert", "--drop-metadata", src, src_onnx(tmp, name)])
        label = "transpose_conv0, %s" % what
        if refusal:
            ok = r.returncode != 0 and "TRANSPOSE_CONV (operator 0: " + refusal in r.stderr
            lines.append("%s %s: %s" % ("ok" if ok else "FAIL", label,
                                        "refused by name" if ok else r.stderr.strip() or
                                        "converted"))
            continue
        if r.returncode != 0:
            lines.append("FAIL %s: %s" % (label, r.stderr.strip()))
            continue
        m = copy.deepcopy(m0)
        m["subgraphs"][0]["tensors"][yi]["shape"] = new
        model = onnx.load(src_onnx(tmp, name))
        try:
            lines.append("ok %s: %s" % (label, reference_check(np, src, name, m, model, tmp)))
        except AssertionError as e:
            lines.append("FAIL %s: %s" % (label, e))
    return lines


def src_onnx(tmp, name):
    return os.path.join(tmp, name + ".onnx")


if __name__ == "__main__":
    sys.exit(main())
