#!/usr/bin/python3
"""ONNX written at another opset: `tensio convert --opset N`.

Usage: /usr/bin/python3 test_opset.py /path/to/tensio

Small models, each built with Debian's python3-onnx at a source opset in the
form that opset gives an operator (Squeeze/Unsqueeze axes, Clip min/max,
Slice, Pad, Split, TopK, ReduceSum/ReduceMean axes, Dropout ratio as
attributes or as inputs; Softmax's axis before and after opset 13;
attributes an opset introduced (Shape's start/end, ScatterND's reduction,
BatchNormalization's training_mode); Constant nodes feeding inputs that
become attributes (none left unused in the result); RoiAlign, whose default sampling grid
changed at 16; Resize's three forms (10, 11, 13) and their coordinate modes;
Split's equal parts and num_outputs (18); Add on uint8 (typed from 14), Max
on int32 (12), Cast to bfloat16 (13), ArgMax's select_last_index (12), GridSample's
modes renamed at 20; a made name that a value already has), are
written by tensio at every target opset from 9 to 21 where the operator
exists. Each result passes onnx.checker (full_check, opsets up to 17, what
python3-onnx 1.12 knows) and runs in onnxruntime (npm's onnxruntime-node,
tests/ort/run_model.js) on the same random input, giving the source model's
outputs (abs 1e-4 + rel 1e-4). The cases opset N cannot express are refused
with a message that says why, and no file is left behind. The last line
printed is "N passed, M failed"; the exit status is non-zero on any failure.
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

if len(sys.argv) != 2:
    print("usage: test_opset.py /path/to/tensio", file=sys.stderr)
    sys.exit(2)
TENSIO = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
RUN_MODEL = os.path.join(os.path.dirname(HERE), "ort", "run_model.js")
TARGETS = [9, 10, 11, 12, 13, 17, 18, 21]
CHECKER_MAX = 17

passed = failed = 0


def ok(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)
    return cond


def const(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.array(values, dtype=dtype), name)


def model(name, opset, nodes, inits, x_shape, outputs, shapes=None):
    """A graph with float input x of x_shape and outputs `outputs` (float;
    "idx" int64), their shapes from `shapes` or shape inference (not run, nor
    the checker, past CHECKER_MAX: python3-onnx 1.12 does not know those
    opsets; onnxruntime runs the model)."""
    g = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT if o != "idx" else TensorProto.INT64,
                                       (shapes or {}).get(o)) for o in outputs],
        initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="tensio-test")
    m.ir_version = 7 if opset <= CHECKER_MAX else 8
    if opset > CHECKER_MAX:
        return m
    # the outputs' shapes, as onnx's shape inference gives them (the checker
    # of python3-onnx 1.12 wants one)
    m = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    onnx.checker.check_model(m, full_check=True)
    return m


N = helper.make_node
X4 = [2, 3, 4, 5]


def cases():
    """(name, source opset, ModelProto, targets expected to refuse: {opset: words})"""
    out = []
    # Squeeze / Unsqueeze: axes an attribute before 13, an input from 13
    out.append(("squeeze_attr", 11, model("sq", 11, [
        N("Unsqueeze", ["x"], ["u"], axes=[0]), N("Squeeze", ["u"], ["y"], axes=[0])],
        [], X4, ["y"]), {}))
    out.append(("squeeze_input", 13, model("sq", 13, [
        N("Unsqueeze", ["x", "ax"], ["u"]), N("Squeeze", ["u", "ax"], ["y"])],
        [const("ax", [0])], X4, ["y"]), {}))
    # a chain: the intermediate values' types are not recorded (Clip's
    # min/max take the input's type: followed up to x)
    out.append(("chain_attr", 10, model("chain", 10, [
        N("Unsqueeze", ["x"], ["u"], axes=[0]), N("Clip", ["u"], ["c"], min=-0.5, max=0.5),
        N("Squeeze", ["c"], ["y"], axes=[0])], [], X4, ["y"]), {}))
    # Clip: min/max attributes before 11
    out.append(("clip_attr", 10, model("clip", 10, [N("Clip", ["x"], ["y"], min=-0.5, max=0.5)],
                                       [], X4, ["y"]), {}))
    out.append(("clip_input", 13, model("clip", 13, [N("Clip", ["x", "lo", "hi"], ["y"])],
                                        [const("lo", -0.25, np.float32),
                                         const("hi", 0.75, np.float32)], X4, ["y"]), {}))
    # Slice: attributes before 10; steps only from 10
    out.append(("slice_attr", 9, model("slice", 9, [
        N("Slice", ["x"], ["y"], starts=[1, 0], ends=[3, 2], axes=[1, 3])], [], X4, ["y"]), {}))
    out.append(("slice_input", 13, model("slice", 13, [
        N("Slice", ["x", "s", "e", "a", "st"], ["y"])],
        [const("s", [1, 0]), const("e", [3, 2]), const("a", [1, 3]), const("st", [1, 1])],
        X4, ["y"]), {}))
    out.append(("slice_steps", 13, model("slice", 13, [
        N("Slice", ["x", "s", "e", "a", "st"], ["y"])],
        [const("s", [0]), const("e", [5]), const("a", [3]), const("st", [2])], X4, ["y"]),
        {9: "exists from opset 10 only"}))
    # Pad: pads/value attributes before 11
    out.append(("pad_attr", 10, model("pad", 10, [
        N("Pad", ["x"], ["y"], pads=[0, 0, 1, 2, 0, 0, 1, 0], value=1.5)], [], X4, ["y"]), {}))
    out.append(("pad_input", 13, model("pad", 13, [N("Pad", ["x", "p", "v"], ["y"])],
                                       [const("p", [0, 1, 0, 0, 0, 0, 2, 1]),
                                        const("v", 0.5, np.float32)], X4, ["y"]), {}))
    # Constant nodes as the inputs that become attributes: a Constant whose
    # every use is cut is not written (checked for every case below); one
    # with another use stays
    out.append(("constant_nodes", 13, model("cn", 13, [
        N("Constant", [], ["ax"], value=const("axv", [1])),
        N("Constant", [], ["sp"], value=const("spv", [1, 2])),
        N("Constant", [], ["lo"], value=const("lov", -0.25, np.float32)),
        N("ReduceSum", ["x", "ax"], ["r"], keepdims=1), N("Squeeze", ["r", "ax"], ["q"]),
        N("Unsqueeze", ["q", "ax"], ["y0"]),
        N("Split", ["x", "sp"], ["s1", "s2"], axis=1),
        N("Clip", ["s2", "lo"], ["c"]), N("Add", ["c", "lo"], ["y1"])],
        [], X4, ["y0", "s1", "y1"]), {}))
    # Resize: (X, scales) at 10, asymmetric coordinates and floor for nearest;
    # (X, roi, scales, sizes) from 11 with modes; roi/scales optional from 13
    sc = const("sc", [1, 1, 2, 1.5], np.float32)
    rs = {"y": [2, 3, 8, 7]}
    no9 = {9: "Resize (from opset 10)"}
    for mode in ("nearest", "linear"):
        out.append(("resize10_" + mode, 10, model("rs", 10, [
            N("Resize", ["x", "sc"], ["y"], mode=mode)], [sc], X4, ["y"], rs), dict(no9)))
    out.append(("resize13_asymmetric", 13, model("rs", 13, [
        N("Constant", [], ["roi"], value=const("roiv", [], np.float32)),
        N("Resize", ["x", "roi", "sc"], ["y"], mode="nearest",
          coordinate_transformation_mode="asymmetric", nearest_mode="floor")],
        [sc], X4, ["y"], rs), dict(no9)))
    out.append(("resize13_half_pixel", 13, model("rs", 13, [
        N("Resize", ["x", "", "sc"], ["y"], mode="linear")], [sc], X4, ["y"], rs),
        {**no9, 10: "the coordinates are \"asymmetric\""}))
    out.append(("resize13_sizes", 13, model("rs", 13, [
        N("Resize", ["x", "", "", "sz"], ["y"], mode="nearest",
          coordinate_transformation_mode="asymmetric", nearest_mode="floor")],
        [const("sz", [2, 3, 8, 7])], X4, ["y"], rs),
        {**no9, 10: "given by scales, not sizes"}))
    out.append(("resize11_tf_nn", 11, model("rs", 11, [
        N("Resize", ["x", "roi", "sc"], ["y"], mode="nearest",
          coordinate_transformation_mode="tf_half_pixel_for_nn")],
        [const("roi", [], np.float32), sc], X4, ["y"], rs),
        {**no9, 10: "the coordinates are", 13: "removed at opset 13",
         17: "removed at opset 13", 18: "removed at opset 13", 21: "removed at opset 13"}))
    # Split: split an attribute before 13
    out.append(("split_attr", 11, model("split", 11, [
        N("Split", ["x"], ["y0", "y1"], axis=1, split=[1, 2])], [], X4, ["y0", "y1"]), {}))
    out.append(("split_input", 13, model("split", 13, [
        N("Split", ["x", "sp"], ["y0", "y1"], axis=3)], [const("sp", [2, 3])], X4,
        ["y0", "y1"]), {}))
    # TopK: k an attribute before 10
    out.append(("topk_attr", 9, model("topk", 9, [N("TopK", ["x"], ["y", "idx"], k=2, axis=-1)],
                                      [], X4, ["y", "idx"]), {}))
    out.append(("topk_input", 11, model("topk", 11, [N("TopK", ["x", "k"], ["y", "idx"])],
                                        [const("k", [3])], X4, ["y", "idx"]), {}))
    # ReduceSum: axes an input from 13; ReduceMean from 18
    out.append(("reduce_attr", 11, model("red", 11, [
        N("ReduceSum", ["x"], ["s"], axes=[1], keepdims=0),
        N("ReduceMean", ["s"], ["y"], axes=[-1], keepdims=1)], [], X4, ["y"]), {}))
    out.append(("reduce_input", 13, model("red", 13, [
        N("ReduceSum", ["x", "ax"], ["s"], keepdims=0),
        N("ReduceMean", ["s"], ["y"], axes=[0, 2])], [const("ax", [2])], X4, ["y"]), {}))
    # Dropout: ratio an input from 12 (inference: the identity)
    out.append(("dropout_attr", 11, model("drop", 11, [N("Dropout", ["x"], ["y"], ratio=0.3)],
                                          [], X4, ["y"]), {}))
    out.append(("dropout_input", 13, model("drop", 13, [N("Dropout", ["x", "r"], ["y"])],
                                           [const("r", 0.2, np.float32)], X4, ["y"]), {}))
    # Softmax: the axis changed meaning at 13; they agree on the last axis
    out.append(("softmax_last", 11, model("sm", 11, [N("Softmax", ["x"], ["y"], axis=3)],
                                          [], X4, ["y"]), {}))
    out.append(("softmax_flatten", 11, model("sm", 11, [
        N("Flatten", ["x"], ["f"], axis=2), N("Softmax", ["f"], ["y"])], [], X4, ["y"]), {}))
    out.append(("softmax_axis1", 11, model("sm", 11, [N("Softmax", ["x"], ["y"], axis=1)],
                                           [], X4, ["y"]),
                {t: "meaning of its axis changed" for t in TARGETS if t >= 13}))
    out.append(("softmax13_axis1", 13, model("sm", 13, [N("Softmax", ["x"], ["y"], axis=1)],
                                             [], X4, ["y"]),
                {t: "meaning of its axis changed" for t in TARGETS if t < 13}))
    # computed at run time: cannot become an attribute
    out.append(("squeeze_computed", 13, model("sq", 13, [
        N("Shape", ["x"], ["sh"]), N("Slice", ["sh", "z", "one"], ["n"]),
        N("Sub", ["n", "two"], ["ax"]),
        N("Unsqueeze", ["x", "ax"], ["y"])],
        [const("z", [0]), const("one", [1]), const("two", [2])], X4, ["y"],
        {"y": [1] + X4}),
        {t: "computed at run time" for t in TARGETS if t < 13}))
    # an operator the opset lacks; an attribute introduced later
    out.append(("layernorm", 17, model("ln", 17, [
        N("LayerNormalization", ["x", "sc", "b"], ["y"], axis=-1)],
        [const("sc", np.ones(5), np.float32), const("b", np.zeros(5), np.float32)], X4, ["y"]),
        {t: "LayerNormalization (from opset 17)" for t in TARGETS if t < 17}))
    out.append(("constant_ints", 13, model("ci", 13, [
        N("Constant", [], ["shape"], value_ints=[2, 60]), N("Reshape", ["x", "shape"], ["y"])],
        [], X4, ["y"], {"y": [2, 60]}), {t: "value_int(s)" for t in TARGETS if t < 12}))
    # attributes an opset introduced: at the value that means what the
    # operator did before they are left out below it; at another, refused
    low = {9: "(from opset 11)", 10: "(from opset 11)"}
    out.append(("shape_start0", 15, model("shape", 15, [
        N("Shape", ["x"], ["sh"], start=0), N("Cast", ["sh"], ["y"], to=TensorProto.FLOAT)],
        [], X4, ["y"]), {}))
    out.append(("shape_start1", 15, model("shape", 15, [
        N("Shape", ["x"], ["sh"], start=1), N("Cast", ["sh"], ["y"], to=TensorProto.FLOAT)],
        [], X4, ["y"]), {t: "came at opset 15" for t in TARGETS if t < 15}))
    upd = const("upd", np.full([1, 3, 4, 5], 2.0), np.float32)
    out.append(("scatternd_none", 16, model("snd", 16, [
        N("ScatterND", ["x", "ind", "upd"], ["y"], reduction="none")],
        [const("ind", [[1]]), upd], X4, ["y"]), low))
    out.append(("scatternd_add", 16, model("snd", 16, [
        N("ScatterND", ["x", "ind", "upd"], ["y"], reduction="add")],
        [const("ind", [[1]]), upd], X4, ["y"]),
        {**{t: "came at opset 16" for t in TARGETS if t < 16}, **low}))
    out.append(("batchnorm_inference", 15, model("bn", 15, [
        N("BatchNormalization", ["x", "sc", "b", "m", "v"], ["y"], training_mode=0)],
        [const("sc", [1.5, 0.5, 2.0], np.float32), const("b", [0.1, 0.2, 0.3], np.float32),
         const("m", [0.0, 1.0, -1.0], np.float32), const("v", [1.0, 2.0, 0.5], np.float32)],
        X4, ["y"]), {}))
    # operators whose meaning changed: RoiAlign's default sampling grid (16)
    roi = [const("rois", [[0.0, 0.0, 3.0, 2.0], [1.0, 0.5, 4.0, 3.0]], np.float32),
           const("bi", [0, 1])]
    out.append(("roialign10", 10, model("roi", 10, [
        N("RoiAlign", ["x", "rois", "bi"], ["y"], output_height=2, output_width=3,
          sampling_ratio=2, spatial_scale=1.0)], roi, X4, ["y"]),
        {9: "RoiAlign (from opset 10)"}))
    out.append(("roialign16", 16, model("roi", 16, [
        N("RoiAlign", ["x", "rois", "bi"], ["y"], output_height=2, output_width=3,
          sampling_ratio=2, spatial_scale=1.0)], roi, X4, ["y"]),
        {**{t: "half_pixel" for t in TARGETS if t < 16}, 9: "RoiAlign (from opset 10)"}))
    # Split: without sizes, equal parts below 18; num_outputs from 18
    out.append(("split_equal", 13, model("spe", 13, [
        N("Split", ["x"], ["y0", "y1"], axis=2)], [], X4, ["y0", "y1"]), {}))
    out.append(("split_num_outputs", 18, model("spn", 18, [
        N("Split", ["x"], ["y0", "y1"], axis=2, num_outputs=2)], [], X4, ["y0", "y1"],
        {"y0": [2, 3, 2, 5], "y1": [2, 3, 2, 5]}), {}))
    out.append(("split_num_uneven", 18, model("spu", 18, [
        N("Split", ["x"], ["y0", "y1"], axis=3, num_outputs=2)], [], X4, ["y0", "y1"],
        {"y0": [2, 3, 4, 3], "y1": [2, 3, 4, 2]}),
        {t: "smaller last part" for t in TARGETS if t < 18}))
    # the Constant made of an attribute is named "<node>:<attr>": a value of
    # the graph with that name already keeps it, the new one gets ":2"
    out.append(("name_clash", 11, model("nc", 11, [
        N("Identity", ["x"], ["u:axes"]), N("Unsqueeze", ["u:axes"], ["y"], axes=[0], name="u")],
        [], X4, ["y"]), {}))
    # Add on uint8 is typed from opset 14 only
    out.append(("add_uint8", 14, model("u8", 14, [
        N("Cast", ["x"], ["u"], to=TensorProto.UINT8), N("Add", ["u", "u"], ["a"]),
        N("Cast", ["a"], ["y"], to=TensorProto.FLOAT)], [], X4, ["y"]),
        {t: "Add on uint8 came at opset 14" for t in TARGETS if t < 14}))
    # Max on integers from opset 12, bfloat16 anywhere from 13
    out.append(("max_int32", 13, model("mi", 13, [
        N("Cast", ["x"], ["u"], to=TensorProto.INT32), N("Max", ["u", "u"], ["a"]),
        N("Cast", ["a"], ["y"], to=TensorProto.FLOAT)], [], X4, ["y"]),
        {t: "Max on int32 came at opset 12" for t in TARGETS if t < 12}))
    out.append(("cast_bfloat16", 13, model("bf", 13, [
        N("Cast", ["x"], ["b"], to=TensorProto.BFLOAT16),
        N("Cast", ["b"], ["y"], to=TensorProto.FLOAT)], [], X4, ["y"]),
        {t: "Cast on bfloat16 came at opset 13" for t in TARGETS if t < 13}))
    # GridSample's "bilinear"/"bicubic" (16) are "linear"/"cubic" from 20
    grid = const("grid", np.random.default_rng(5).uniform(-1, 1, (2, 3, 4, 2)), np.float32)
    for mode in ("bilinear", "bicubic"):
        out.append(("gridsample_" + mode, 16, model("gs", 16, [
            N("GridSample", ["x", "grid"], ["y"], mode=mode)], [grid], X4, ["y"],
            {"y": [2, 3, 3, 4]}), {t: "GridSample (from opset 16)" for t in TARGETS if t < 16}))
    # ArgMax's select_last_index (12): left out at 0 below 12, refused at 1
    for last in (0, 1):
        out.append(("argmax_last%d" % last, 13, model("am", 13, [
            N("ArgMax", ["x"], ["i"], axis=1, select_last_index=last),
            N("Cast", ["i"], ["y"], to=TensorProto.FLOAT)], [], X4, ["y"], {"y": [2, 1, 4, 5]}),
            {t: "came at opset 12" for t in TARGETS if t < 12 and last}))
    return out


def refusals():
    """(name, source opset, ModelProto, {target opset: words}): what came at
    opsets 24 to 26, which onnxruntime's CPU kernels do not all run, refused
    below (not run; the other targets are not tried)."""
    out = []

    def bare(opset, nodes, inits=(), outputs=("y",)):
        return model("r", opset, nodes, list(inits), X4, list(outputs), {o: None for o in outputs})

    out.append(("topk_bfloat16", 24, bare(24, [
        N("Cast", ["x"], ["b"], to=TensorProto.BFLOAT16), N("TopK", ["b", "k"], ["v", "idx"]),
        N("Cast", ["v"], ["y"], to=TensorProto.FLOAT)], [const("k", [2])], ("y", "idx")),
        {23: "TopK on bfloat16 came at opset 24", 13: "TopK on bfloat16 came at opset 24"}))
    out.append(("cast_round_mode", 24, bare(24, [
        N("Cast", ["x"], ["y"], to=TensorProto.FLOAT, round_mode="down")]),
        {23: "came at opset 24"}))
    qkv = ["x", "x", "x"]
    out.append(("attention_window", 25, bare(25, [
        N("Attention", qkv, ["y"], left_window_size=2)]), {24: "came at opset 25"}))
    out.append(("attention_nonpad", 24, bare(24, [
        N("Attention", qkv + ["", "", "", "lens"], ["y"])], [const("lens", [4, 4])]),
        {23: "input 6 ('lens') exists from opset 24 only"}))
    out.append(("bitcast", 26, bare(26, [N("BitCast", ["x"], ["y"], to=TensorProto.INT32)]),
                {25: "BitCast (from opset 26)"}))
    out.append(("cumprod", 26, bare(26, [N("CumProd", ["x", "ax"], ["y"])],
                                    [const("ax", 1)]), {21: "CumProd (from opset 26)"}))
    return out


def unused_constants(m):
    """The outputs of the graph's Constant nodes that nothing uses."""
    used = {i for n in m.graph.node for i in n.input} | {o.name for o in m.graph.output}
    return {n.output[0] for n in m.graph.node if n.op_type == "Constant" and
            n.output[0] not in used}


def tensio(*args):
    return subprocess.run([TENSIO] + list(args), capture_output=True, text=True)


def run_ort(path, vdir, write=False):
    r = subprocess.run(["node", RUN_MODEL] + (["--write"] if write else []) + [path, vdir],
                       capture_output=True, text=True, timeout=120)
    return r.returncode, (r.stdout + r.stderr).strip()


def write_vector(vdir, m):
    """reference_io.json and a random input; outputs filled by --write."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(X4).astype(np.float32)
    np.save(os.path.join(vdir, "input_x.npy"), x)
    io = {"inputs": [{"name": "x", "file": "input_x.npy", "dtype": "float32", "shape": X4}],
          "outputs": [{"name": o.name, "file": "expected_%s.npy" % o.name}
                      for o in m.graph.output]}
    with open(os.path.join(vdir, "reference_io.json"), "w") as f:
        json.dump(io, f)


def main():
    with tempfile.TemporaryDirectory(prefix="tio-opset-") as tmp:
        for name, src, m, refuse in cases():
            vdir = os.path.join(tmp, name)
            os.mkdir(vdir)
            srcp = os.path.join(vdir, "src.onnx")
            onnx.save(m, srcp)
            write_vector(vdir, m)
            rc, msg = run_ort(srcp, vdir, write=True)
            if not ok(rc == 0, "%s: onnxruntime on the source model: %s" % (name, msg)):
                continue
            for t in TARGETS:
                out = os.path.join(vdir, "o%d.onnx" % t)
                r = tensio("convert", "--no-sync", "--opset", str(t), srcp, out)
                what = "%s (opset %d) -> opset %d" % (name, src, t)
                if t in refuse:
                    ok(r.returncode == 1 and refuse[t] in r.stderr and not os.path.exists(out),
                       "%s: expected a refusal with '%s', got exit %d: %s" %
                       (what, refuse[t], r.returncode, r.stderr.strip()))
                    continue
                if not ok(r.returncode == 0, "%s: %s" % (what, r.stderr.strip())):
                    continue
                w = onnx.load(out)
                ok([(o.domain, o.version) for o in w.opset_import] == [("", t)],
                   "%s: opset_import %s" % (what, w.opset_import))
                left = unused_constants(w) - unused_constants(m)
                ok(not left, "%s: Constant nodes left unused: %s" % (what, sorted(left)))
                if t <= CHECKER_MAX:
                    try:
                        onnx.checker.check_model(w, full_check=True)
                        ok(True, what)
                    except Exception as e:  # noqa: BLE001 - the checker's own errors
                        ok(False, "%s: checker: %s" % (what, str(e).splitlines()[0]))
                rc, msg = run_ort(out, vdir)
                ok(rc == 0, "%s: onnxruntime: %s" % (what, msg))
            print("%s (opset %d): done" % (name, src))
    with tempfile.TemporaryDirectory(prefix="tio-opset-") as tmp:
        for name, src, m, refuse in refusals():
            srcp = os.path.join(tmp, name + ".onnx")
            onnx.save(m, srcp)
            for t, words in sorted(refuse.items()):
                out = os.path.join(tmp, "%s_o%d.onnx" % (name, t))
                r = tensio("convert", "--no-sync", "--opset", str(t), srcp, out)
                ok(r.returncode == 1 and words in r.stderr and not os.path.exists(out),
                   "%s (opset %d) -> opset %d: expected a refusal with '%s', got exit %d: %s" %
                   (name, src, t, words, r.returncode, r.stderr.strip()))
            # the highest opset: written, declaring it
            out = os.path.join(tmp, name + "_top.onnx")
            r = tensio("convert", "--no-sync", "--opset", "26", srcp, out)
            if ok(r.returncode == 0, "%s -> opset 26: %s" % (name, r.stderr.strip())):
                ok([(o.domain, o.version) for o in onnx.load(out).opset_import] == [("", 26)],
                   "%s -> opset 26: opset_import" % name)
            print("%s (opset %d): done" % (name, src))
    # the option's own errors
    with tempfile.TemporaryDirectory(prefix="tio-opset-") as tmp:
        src = os.path.join(tmp, "m.onnx")
        onnx.save(cases()[0][2], src)
        for bad, words in (("5", "from 7 to 26"), ("99", "from 7 to 26")):
            r = tensio("convert", "--opset", bad, src, os.path.join(tmp, "o.onnx"))
            ok(r.returncode == 1 and words in r.stderr, "--opset %s: %s" % (bad, r.stderr))
        r = tensio("convert", "--opset", "x1", src, os.path.join(tmp, "o.onnx"))
        ok(r.returncode == 2 and "expected a number" in r.stderr, "--opset x1: %s" % r.stderr)
        r = tensio("convert", "--opset", "13", src, os.path.join(tmp, "o.rten"))
        ok(r.returncode != 0 and "opset" in r.stderr, "--opset to rten: %s" % r.stderr)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
