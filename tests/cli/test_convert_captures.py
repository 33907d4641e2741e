#!/usr/bin/python3
"""Models whose If/Loop subgraphs use values of an enclosing graph (captures),
through every conversion that keeps the graph.

Usage: /usr/bin/python3 test_convert_captures.py /path/to/tensio [--ort]

The models are built here with Debian's python3-onnx (opset 13) and pass
onnx.checker (full_check):
- if_capture: the case of issue 33. An If on a bool input whose then-branch
  adds the outer input x to a constant of its own and whose else-branch
  multiplies a slice of an outer initializer by x. (rten has no bool: the
  condition is an int32 input of the rten file and of its ONNX conversion,
  which casts it for the If; onnxruntime is fed it as int32 there.)
- if_nested: an If in an If's then-branch (two deep). The branches capture an
  outer input, an outer initializer, an outer intermediate value (Relu's), an
  outer Constant operator's output, the then-branch's own intermediate value
  and its own initializer, and the condition of the inner If.
- loop_capture: a Loop body that captures an outer input, an outer
  initializer and an outer intermediate value.
- loop_nested: a Loop body holding an If whose then-branch holds another If:
  captures of the root's input, initializer and intermediate values, of the
  body's input and intermediate value, and of the then-branch's.

Each is converted ONNX -> rten V2, ONNX -> rten V1, rten V1 -> V2, V2 -> V2
(twice), V1 -> V1 (twice), rten (V2 and V1) -> ONNX and ONNX -> ONNX; every
result passes `tensio validate` and has, by `tensio info --json`, the source's operators (name,
op, inputs, outputs; Constant operators left out: rten makes them constants)
with the same subgraphs, each with the same captures (in the same order for
rten files; as a set for ONNX, which has no capture list: a reader finds them
in the order the file uses them). A file tensio wrote from rten, written
again, gives the same bytes (V2 -> V2, V1 -> V1), and rten V1 -> V2 gives the
bytes of V2 -> V2. (ONNX -> rten followed by rten -> rten need not: a model
written from ONNX form and one written as read may differ in some tables'
layout, not in what they decode to; small_cnn's do too.) Every ONNX result passes onnx.checker
(full_check).

With --ort, the original model runs in onnxruntime (npm's onnxruntime-node in
tests/ort/node_modules, scripts/install-ort.sh) and must give what NumPy
computes here; every ONNX result must then give the original's outputs (abs
1e-4 + rel 1e-4; tests/ort/run_model.js). A missing onnxruntime fails, it is
not skipped. The rten files are not run in the rten engine itself (it cannot
be built here: no crates.io); what reaches onnxruntime from them is their
rten -> ONNX conversion.

rten has no int64 or bool values, so an rten file's Loop has an int32 trip
count, iteration number and conditions: the ONNX writer types them back
(docs/formats/onnx.md), and a Loop model then runs in onnxruntime after
rten -> ONNX too. The last line printed is "N passed, M failed"; the exit
status is non-zero on any failure.
"""

import json
import os
import shutil
import sys
import tempfile

from convtest import ORT, case, run, run_in_ort, summary

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def vi(name, t, shape):
    return helper.make_tensor_value_info(name, t, shape)


def init(name, a):
    return numpy_helper.from_array(a, name)


def if_capture():
    then_g = helper.make_graph(
        [helper.make_node("Add", ["x", "c1"], ["t_out"], name="then_add")], "then", [],
        [vi("t_out", F, [3])], [init("c1", np.array([1, 2, 3], np.float32))])
    else_g = helper.make_graph(
        [helper.make_node("Slice", ["c2", "st", "en"], ["sl"], name="else_slice"),
         helper.make_node("Mul", ["sl", "x"], ["e_out"], name="else_mul")], "else", [],
        [vi("e_out", F, [3])])
    g = helper.make_graph(
        [helper.make_node("If", ["cond"], ["y"], name="if", then_branch=then_g,
                          else_branch=else_g)],
        "if_capture", [vi("cond", TensorProto.BOOL, []), vi("x", F, [3])], [vi("y", F, [3])],
        [init("c2", np.arange(5, dtype=np.float32)), init("st", np.array([1], np.int64)),
         init("en", np.array([4], np.int64))])

    def ref(cond, x):
        return x + np.array([1, 2, 3], np.float32) if cond else np.arange(5.0)[1:4] * x

    x = np.array([0.5, -1, 2], np.float32)
    return g, ref, [{"cond": np.array(v), "x": x} for v in (True, False)]


def then_with_if(a, b, inits):
    """A then-branch holding an If: t1 = a * w, then If(flag) of t1 + x and
    t1 - b. It captures a, w and flag (and x and b for its branches, unless b
    is one of its initializers `inits`); its branches capture t1."""
    inner_then = helper.make_graph(
        [helper.make_node("Add", ["t1", "x"], ["it_out"], name="it_add")], "inner_then", [],
        [vi("it_out", F, [2, 3])])
    inner_else = helper.make_graph(
        [helper.make_node("Sub", ["t1", b], ["ie_out"], name="ie_sub")], "inner_else", [],
        [vi("ie_out", F, [2, 3])])
    return helper.make_graph(
        [helper.make_node("Mul", [a, "w"], ["t1"], name="t_mul"),
         helper.make_node("If", ["flag"], ["t_out"], name="t_if", then_branch=inner_then,
                          else_branch=inner_else)],
        "then", [], [vi("t_out", F, [2, 3])], inits)


def if_nested():
    then_g = then_with_if("hh", "k2", [init("k2", np.array([0.5], np.float32))])
    else_g = helper.make_graph(
        [helper.make_node("Mul", ["x", "three"], ["e_out"], name="e_mul")], "else", [],
        [vi("e_out", F, [2, 3])])
    g = helper.make_graph(
        [helper.make_node("Constant", [], ["three"], name="three", value_float=3.0),
         helper.make_node("Relu", ["x"], ["hh"], name="relu"),
         helper.make_node("Greater", ["s", "zero"], ["cond"], name="gt_s"),
         helper.make_node("Greater", ["r", "zero"], ["flag"], name="gt_r"),
         helper.make_node("If", ["cond"], ["y"], name="if", then_branch=then_g,
                          else_branch=else_g)],
        "if_nested", [vi("x", F, [2, 3]), vi("s", F, [1]), vi("r", F, [1])],
        [vi("y", F, [2, 3])],
        [init("w", np.full((2, 3), 0.25, np.float32)), init("zero", np.zeros(1, np.float32))])

    def ref(x, s, r):
        if s[0] <= 0:
            return x * 3
        t1 = np.maximum(x, 0) * 0.25
        return t1 + x if r[0] > 0 else t1 - 0.5

    x = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
    return g, ref, [{"x": x, "s": np.array([s], np.float32), "r": np.array([r], np.float32)}
                    for s, r in ((1, 1), (1, -1), (-1, 1))]


def loop_body(nodes):
    """A Loop body (i, c_in, v_in) -> (c_out, v_out): c_out is c_in, `nodes`
    compute v_out."""
    return helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"], name="b_cond")] + nodes, "body",
        [vi("i", TensorProto.INT64, []), vi("c_in", TensorProto.BOOL, []), vi("v_in", F, [2, 3])],
        [vi("c_out", TensorProto.BOOL, []), vi("v_out", F, [2, 3])])


def loop_capture():
    body = loop_body([helper.make_node("Mul", ["v_in", "w"], ["m"], name="b_mul"),
                      helper.make_node("Add", ["m", "hh"], ["a"], name="b_add"),
                      helper.make_node("Sub", ["a", "x"], ["v_out"], name="b_sub")])
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["hh"], name="relu"),
         helper.make_node("Greater", ["n", "zero_i"], ["go"], name="go"),
         helper.make_node("Loop", ["n", "go", "x"], ["y"], name="loop", body=body)],
        "loop_capture", [vi("x", F, [2, 3])], [vi("y", F, [2, 3])],
        [init("w", np.full((2, 3), 0.5, np.float32)), init("n", np.array(3, np.int64)),
         init("zero_i", np.array(0, np.int64))])

    def ref(x):
        v = x
        for _ in range(3):
            v = v * 0.5 + np.maximum(x, 0) - x
        return v

    return g, ref, [{"x": np.array([[1, -2, 3], [-4, 5, -6]], np.float32)}]


def loop_nested():
    then_g = then_with_if("b", "hh", [])
    else_g = helper.make_graph(
        [helper.make_node("Add", ["v_in", "hh"], ["e1"], name="e_add"),
         helper.make_node("Mul", ["e1", "k"], ["e_out"], name="e_mul")], "else", [],
        [vi("e_out", F, [2, 3])], [init("k", np.array([2.0], np.float32))])
    body = loop_body([helper.make_node("Add", ["v_in", "x"], ["b"], name="b_add"),
                      helper.make_node("Less", ["i", "one"], ["lt"], name="b_lt"),
                      helper.make_node("If", ["lt"], ["v_out"], name="b_if", then_branch=then_g,
                                       else_branch=else_g)])
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["hh"], name="relu"),
         helper.make_node("Greater", ["s", "zero"], ["flag"], name="gt"),
         helper.make_node("Greater", ["n", "zero_i"], ["go"], name="go"),
         helper.make_node("Loop", ["n", "go", "x"], ["y"], name="loop", body=body)],
        "loop_nested", [vi("x", F, [2, 3]), vi("s", F, [1])], [vi("y", F, [2, 3])],
        [init("w", np.full((2, 3), 0.25, np.float32)), init("n", np.array(3, np.int64)),
         init("zero_i", np.array(0, np.int64)), init("one", np.array(1, np.int64)),
         init("zero", np.zeros(1, np.float32))])

    def ref(x, s):
        hh, v = np.maximum(x, 0), x
        for i in range(3):
            if i < 1:
                t1 = (v + x) * 0.25
                v = t1 + x if s[0] > 0 else t1 - hh
            else:
                v = (v + hh) * 2
        return v

    x = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
    return g, ref, [{"x": x, "s": np.array([v], np.float32)} for v in (1, -1)]


MODELS = [if_capture, if_nested, loop_capture, loop_nested]


def structure(g, ordered, cast=None):
    """What must survive of a graph (info --json): its inputs and outputs by
    name, its operators (Constant ones left out) with their subgraphs, its
    captures (as a set unless `ordered`). The Casts the ONNX writer adds
    where ONNX wants int64 or bool and rten has int32 ("V:to-int64", V ->
    "V:int64"; "V:to-bool", docs/formats/onnx.md) are left out, their
    outputs read as V."""
    cast = dict(cast or {})
    nodes = []
    for n in g["nodes"]:
        if n["op"] == "Cast" and (n.get("name") or "").endswith((":to-int64", ":to-bool")):
            cast[n["outputs"][0]] = n["inputs"][0]
            continue
        if n["op"] == "Constant":
            continue
        subs = {k: structure(v["graph"], ordered, cast)
                for k, v in sorted(n.get("attrs", {}).items())
                if isinstance(v, dict) and "graph" in v}
        nodes.append([n.get("name"), n["op"], [cast.get(i, i) for i in n["inputs"]],
                      n["outputs"], subs])
    caps = g.get("captures", [])
    return {"inputs": [v["name"] for v in g.get("inputs", [])],
            "outputs": [v["name"] for v in g.get("outputs", [])],
            "nodes": nodes, "captures": caps if ordered else sorted(caps, key=str)}


def graph_of(path):
    return json.loads(run("info", "--json", path))["graph"]


def first_difference(a, b, where="graph"):
    """Where two structures first differ (a readable path), or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            d = first_difference(a.get(k), b.get(k), "%s.%s" % (where, k))
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for k, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, "%s[%d]" % (where, k))
            if d:
                return d
        return None
    return None if a == b else "%s: %r != source %r" % (where, a, b)


def check_same(out, src, ordered):
    d = first_difference(structure(graph_of(out), ordered), structure(graph_of(src), ordered))
    assert d is None, d


def build(tmp, fn):
    """The model written to tmp/<name>.onnx, and with --ort a vector
    directory per input set whose expected outputs are onnxruntime's on the
    model, checked against NumPy's."""
    g, ref, feeds = fn()
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model, full_check=True)
    src = os.path.join(tmp, fn.__name__ + ".onnx")
    onnx.save(model, src)
    vecs = []
    for k, feed in enumerate(feeds if ORT else []):
        d = os.path.join(tmp, "%s-io%d" % (fn.__name__, k))
        os.mkdir(d)
        io = {"inputs": [], "outputs": [{"name": "y", "file": "expected_0.npy"}]}
        for j, (name, a) in enumerate(feed.items()):
            np.save(os.path.join(d, "input_%d.npy" % j), a)
            io["inputs"].append({"name": name, "file": "input_%d.npy" % j})
        with open(os.path.join(d, "reference_io.json"), "w") as f:
            json.dump(io, f)
        run_in_ort(src, d, write=True)
        got, want = np.load(os.path.join(d, "expected_0.npy")), ref(**feed)
        assert np.allclose(got, want, rtol=1e-5, atol=1e-5), (
            "input set %d: onnxruntime gives %r, NumPy %r" % (k, got.tolist(), want.tolist()))
        vecs.append(d)
    return src, vecs


def convert(src, dst, *opts):
    run("convert", "--force", *opts, src, dst)
    run("validate", dst)


def check_onnx(path, src, vecs):
    check_same(path, src, False)
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    int32 = {i.name for i in model.graph.input
             if i.type.tensor_type.elem_type == TensorProto.INT32}
    for d in vecs:
        run_in_ort(path, as_int32(d, int32))


def as_int32(d, names):
    """Vector directory d, or a copy of it whose bool inputs among `names`
    are int32 (what an rten file takes for a bool input)."""
    with open(os.path.join(d, "reference_io.json")) as f:
        io = json.load(f)
    bools = [i for i in io["inputs"] if i["name"] in names and
             np.load(os.path.join(d, i["file"])).dtype == np.bool_]
    if not bools:
        return d
    out = d + "-int32"
    if not os.path.isdir(out):
        shutil.copytree(d, out)
        for i in bools:
            np.save(os.path.join(out, i["file"]),
                    np.load(os.path.join(d, i["file"])).astype(np.int32))
    return out


def same_bytes(a, b):
    with open(a, "rb") as f, open(b, "rb") as g:
        assert f.read() == g.read(), "%s and %s differ" % (os.path.basename(a),
                                                         os.path.basename(b))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for fn in MODELS:
            name = fn.__name__
            p = lambda ext: os.path.join(tmp, "%s.%s" % (name, ext))  # noqa: E731
            built = {}
            case("%s: built, passes the checker%s" % (
                name, ", runs in onnxruntime as NumPy computes" if ORT else ""),
                lambda: built.update(r=build(tmp, fn)))
            if "r" not in built:
                continue
            src, vecs = built["r"]
            steps = [
                ("onnx->rten v2", src, p("v2.rten"), [], True),
                ("onnx->rten v1", src, p("v1.rten"), ["--rten-version", "1"], True),
                ("rten v1->v2", p("v1.rten"), p("v1v2.rten"), [], True),
                ("rten v2->v2", p("v2.rten"), p("v2v2.rten"), [], True),
                ("rten v1->v1", p("v1.rten"), p("v1v1.rten"), ["--rten-version", "1"], True),
                ("rten v2->v2 again", p("v2v2.rten"), p("v2v2v2.rten"), [], True),
                ("rten v1->v1 again", p("v1v1.rten"), p("v1v1v1.rten"), ["--rten-version", "1"],
                 True),
                ("rten v2->onnx", p("v2.rten"), p("v2.onnx"), [], False),
                ("rten v1->onnx", p("v1.rten"), p("v1.onnx"), [], False),
                ("onnx->onnx", src, p("oo.onnx"), [], False),
            ]
            for what, a, b, opts, rten in steps:
                if not os.path.exists(a):
                    print("SKIPPED: %s %s (%s was not written)" % (name, what, os.path.basename(a)))
                    continue

                def one(a=a, b=b, opts=opts, rten=rten):
                    convert(a, b, *opts)
                    if rten:
                        check_same(b, src, True)
                        return None
                    return check_onnx(b, src, vecs)

                case("%s: %s keeps operator inputs and captures" % (name, what), one)
            for a, b in (("v2v2v2.rten", "v2v2.rten"), ("v1v1v1.rten", "v1v1.rten"),
                         ("v1v2.rten", "v2v2.rten")):
                if os.path.exists(p(a)) and os.path.exists(p(b)):
                    case("%s: %s is %s byte for byte" % (name, a, b), same_bytes, p(a), p(b))
    return summary()


if __name__ == "__main__":
    sys.exit(main())
