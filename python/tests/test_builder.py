"""tensio.GraphBuilder: graphs built from Python, saved as ONNX (checked by
python3-onnx's checker and run in onnxruntime where onnxruntime-node is
installed, scripts/install-ort.sh) and as rten."""

import json
import os
import shutil
import subprocess

import numpy as np
import pytest

import tensio
from conftest import REPO

ORT_DIR = os.path.join(REPO, "tests", "ort")


def mlp():
    """x[batch,4] -> MatMul(w) -> Add(b) -> Relu -> Softmax(axis=-1)."""
    rng = np.random.default_rng(1)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    bias = rng.standard_normal(3).astype(np.float32)
    g = tensio.GraphBuilder(opset=13, metadata={"description": "test_builder"})
    x = g.input("x", np.float32, ["batch", 4])
    wv = g.constant("w", w)
    bv = g.constant("b", bias)
    h, = g.node("MatMul", [x, wv], ["h"], name="mm")
    h2, = g.node("Add", [h, bv], ["h2"], name="add")
    r, = g.node("Relu", ["h2"], ["r"], name="relu")
    y, = g.node("Softmax", [r], [("y", "float32", ["batch", 3])], name="sm", axis=-1)
    g.output(y)
    return g, w, bias


def reference(x, w, bias):
    r = np.maximum(x @ w + bias, 0)
    e = np.exp(r - r.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_build_and_read_back():
    g, w, bias = mlp()
    c = g.container()
    gr = c.graph
    assert [n.op for n in gr.nodes] == ["MatMul", "Add", "Relu", "Softmax"]
    assert [n.name for n in gr.nodes] == ["mm", "add", "relu", "sm"]
    assert gr.nodes[3].attributes == {"axis": -1}
    assert [v.name for v in gr.inputs] == ["x"] and gr.inputs[0].shape == ["batch", 4]
    assert gr.outputs[0].dtype == "float32" and gr.opsets == [("", 13)]
    assert gr.metadata == {"description": "test_builder"}
    assert np.shares_memory(c["w"], w) and np.array_equal(gr.values[1].array, w)


def test_onnx_checker_and_onnxruntime(tmp_path):
    onnx = pytest.importorskip("onnx")
    g, w, bias = mlp()
    path = tmp_path / "mlp.onnx"
    g.save(path)
    m = onnx.load(str(path))
    onnx.checker.check_model(m, full_check=True)
    assert [n.op_type for n in m.graph.node] == ["MatMul", "Add", "Relu", "Softmax"]
    assert {i.name for i in m.graph.initializer} == {"w", "b"}
    # the same model back through tensio, and as rten and back to ONNX
    assert [n.op for n in tensio.open(path).graph.nodes] == ["MatMul", "Add", "Relu", "Softmax"]
    tensio.convert(path, tmp_path / "mlp.rten")
    tensio.convert(tmp_path / "mlp.rten", tmp_path / "back.onnx")
    onnx.checker.check_model(onnx.load(str(tmp_path / "back.onnx")), full_check=True)

    if not os.path.isdir(os.path.join(ORT_DIR, "node_modules", "onnxruntime-node")) or \
            not shutil.which("node"):
        pytest.skip("onnxruntime-node is not installed (scripts/install-ort.sh)")
    x = np.random.default_rng(2).standard_normal((5, 4)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", reference(x, w, bias))
    io = {"inputs": [{"name": "x", "file": "x.npy", "dtype": "float32", "shape": [5, 4]}],
          "outputs": [{"name": "y", "file": "y.npy", "dtype": "float32", "shape": [5, 3]}]}
    (tmp_path / "reference_io.json").write_text(json.dumps(io))
    env = dict(os.environ, NODE_PATH=os.path.join(ORT_DIR, "node_modules"))
    for model in (path, tmp_path / "back.onnx"):
        r = subprocess.run(["node", os.path.join(ORT_DIR, "run_model.js"), str(model),
                            str(tmp_path)], capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 0 and r.stdout.startswith("ok"), r.stderr or r.stdout


def test_attributes_and_subgraph(tmp_path):
    onnx = pytest.importorskip("onnx")
    g = tensio.GraphBuilder(opset=13)
    cond = g.input("cond", "bool", [])
    x = g.input("x", "float32", [2])
    then = g.subgraph()
    xs = then.value("x", "float32", [2])  # the outer x, captured (ONNX: by name)
    then.capture(xs)
    t, = then.node("Identity", [xs], [("t", "float32", [2])])
    then.output(t)
    other = g.subgraph()
    k = other.constant("k", np.array([5, 6], np.float32))
    o, = other.node("Identity", [k], [("o", "float32", [2])])
    other.output(o)
    y, = g.node("If", [cond], [("y", "float32", [2])], then_branch=then, else_branch=other)
    g.output(y)
    c = g.container()
    node = c.graph.nodes[0]
    assert node.op == "If" and isinstance(node.attributes["then_branch"], tensio.Graph)
    assert node.attributes["else_branch"].nodes[0].inputs[0].array.tolist() == [5, 6]
    assert [v.name for v in node.attributes["then_branch"].captures] == ["x"]
    tensio.save(tmp_path / "if.onnx", c)
    onnx.checker.check_model(onnx.load(str(tmp_path / "if.onnx")), full_check=True)
    assert x == 1
    types = tensio.GraphBuilder(opset=13)
    v = types.input("v", "float32", [3])
    types.node("Dummy", [v], 1, domain="test.domain", i=3, f=0.5, s="x", ints=[1, 2],
               floats=[0.5, 1], strings=["a", "b"], empty=[], t=np.arange(3, dtype=np.int64),
               flag=True)
    a = types.container().graph.nodes[0].attributes
    assert a["i"] == 3 and a["f"] == 0.5 and a["s"] == "x" and a["ints"] == [1, 2]
    assert a["floats"] == [0.5, 1.0] and a["strings"] == ["a", "b"] and a["empty"] == []
    assert a["t"].tolist() == [0, 1, 2] and a["flag"] == 1
    assert types.container().graph.nodes[0].domain == "test.domain"


def test_errors():
    g = tensio.GraphBuilder(opset=13)
    with pytest.raises(tensio.ArgumentError):
        g.node("Relu", ["nope"], 1)
    with pytest.raises(tensio.ArgumentError):
        g.node("Relu", [7], 1)
    x = g.input("x", "float32", [1])
    with pytest.raises(tensio.ArgumentError):
        g.node("Relu", [x], 1, bad={"a": 1})
    with pytest.raises(tensio.ArgumentError):
        g.subgraph().container()
    with pytest.raises(tensio.DtypeError):
        g.node("Relu", [x], [("y", "nodtype", [1])])
    # a graph cannot be saved where the format has none
    g2, _, _ = mlp()
    c = g2.container()
    data = tensio.dumps(c, "tenbin", drop_names=False)  # the constants only
    assert len(tensio.loads(data)) == 2
