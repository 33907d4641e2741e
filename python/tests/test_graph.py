"""Container.graph: the model graph as Python objects, against the rten
manifests (operators in order with their inputs and outputs, graph inputs
and outputs, metadata, constants) and across formats."""

import numpy as np
import pytest

import tensio
from conftest import manifest, sha256, vec, vec_list

RTEN_MODELS = [m for m in ("matmul_add", "small_cnn", "shape_ops", "int_consts", "big_init")
               if manifest(f"rten/{m}/{m}.json")]
RTEN_DTYPES = {"Float32": "float32", "Float": "float32", "Int32": "int32", "Int8": "int8",
               "UInt8": "uint8"}


def names(values):
    return [None if v is None else v.name for v in values]


@pytest.mark.parametrize("model", RTEN_MODELS)
@pytest.mark.parametrize("version", [1, 2])
def test_rten_graph(model, version):
    m = manifest(f"rten/{model}/{model}.json")
    with tensio.open(vec(f"rten/{model}/{model}.v{version}.rten")) as c:
        g = c.graph
    assert isinstance(g, tensio.Graph) and g.native_format == "rten" and g.parent is None
    assert [n.op for n in g.nodes] == m["operator_types_in_order"]
    for n, w in zip(g.nodes, m["graph"]["operators"]):
        assert n.name == w["name"] and n.native_id == w["type_id"]
        assert names(n.inputs) == w["inputs"] and names(n.outputs) == w["outputs"]
    for side in ("inputs", "outputs"):
        got = [(v.name, v.dtype, v.shape) for v in getattr(g, side)]
        want = [(x["name"], RTEN_DTYPES[x["dtype"]], x["shape"]) for x in m[side]]
        assert got == want
    meta = {k: v for k, v in m["metadata"].items() if v is not None}
    assert g.metadata == meta
    consts = m["graph"]["constants"]
    assert [v.name for v in g.constants] == [w["name"] for w in consts]
    for v, w in zip(g.constants, consts):
        assert sha256(v.array) == w["sha256"]  # views, as the container's


def test_attributes_and_opsets():
    path = vec("rten/small_cnn/small_cnn.onnx") or vec("onnx/small_cnn.onnx")
    with tensio.open(path) as c:
        g = c.graph
    assert ("", 13) in g.opsets
    conv = next(n for n in g.nodes if n.op == "Conv")
    assert conv.attributes["pads"] == [1, 1, 1, 1]
    assert conv.attribute_types["pads"] == 4  # TIO_ATTR_INTS
    assert all(isinstance(v, tensio.Value) for v in conv.inputs)
    assert conv.inputs[1].is_constant and not conv.inputs[0].is_constant
    assert isinstance(conv.inputs[1].array, np.ndarray)
    assert "Conv" in repr(conv) and "Graph" in repr(g)


@pytest.mark.parametrize("model", [n[:-len(".tmfile")] for n in vec_list("tmfile", ".tmfile")])
def test_tmfile_graph(model):
    m = manifest(f"tmfile/{model}.json")
    # as the file stores it: the manifest's nodes
    with tensio.open(vec(f"tmfile/{model}.tmfile"), native_graph=True) as c:
        g = c.graph
        assert g.native_format == "tmfile"
        assert len(g.nodes) == len(m["nodes"])
        assert [v.name for v in g.constants] == c.names
    # in ONNX form: Const and InputOp nodes are constants and graph inputs
    with tensio.open(vec(f"tmfile/{model}.tmfile")) as c:
        g = c.graph
        ops = [n.op for n in g.nodes]
        assert "Const" not in ops and "InputOp" not in ops
        assert names(g.inputs) == [i["tensor"] for i in m["inputs"]]
        assert set(v.name for v in g.constants) == set(c.names)


def test_graph_survives_conversion(tmp_path):
    src = vec("rten/small_cnn/small_cnn.v2.rten")
    tensio.convert(src, tmp_path / "m.onnx")
    with tensio.open(src) as a, tensio.open(tmp_path / "m.onnx") as b:
        ga, gb = a.graph, b.graph
        assert [n.op for n in ga.nodes] == [n.op for n in gb.nodes]
        assert names(ga.inputs) == names(gb.inputs)
        assert names(ga.outputs) == names(gb.outputs)


def test_no_graph():
    with tensio.open(vec("btf/dense_float32.btf")) as c:
        assert c.graph is None
    assert tensio.container([np.zeros(2)]).graph is None


GRAPH_ROUND_TRIPS = [
    ("rten/small_cnn/small_cnn.v2.rten", ".onnx", {}),
    ("rten/small_cnn/small_cnn.v2.rten", ".rten", {}),
    ("rten/small_cnn/small_cnn.v2.rten", ".rten", {"version": 1}),
    ("rten/small_cnn/small_cnn.v1.rten", ".onnx", {}),
    ("onnx/int_consts.onnx", ".onnx", {}),
    ("tmfile/cnn_small.tmfile", ".tmfile", {}),
]


@pytest.mark.parametrize("rel,ext,kw", GRAPH_ROUND_TRIPS,
                         ids=[f"{r}->{e}{k}" for r, e, k in GRAPH_ROUND_TRIPS])
def test_model_round_trips(tmp_path, rel, ext, kw):
    """Saving an opened model keeps its graph and its constants' bytes."""
    src = vec(rel)
    with tensio.open(src) as a:
        tensio.save(tmp_path / ("m" + ext), a, sync=False, **kw)
        with tensio.open(tmp_path / ("m" + ext)) as b:
            if "version" in kw:
                assert b.properties["version"] == str(kw["version"])
            assert a.names == b.names
            assert all(a.sha256(i) == b.sha256(i) for i in range(len(a)))
            assert [n.op for n in a.graph.nodes] == [n.op for n in b.graph.nodes]


def test_model_refusals(tmp_path):
    with tensio.open(vec("rten/small_cnn/small_cnn.v2.rten")) as c:
        with pytest.raises(tensio.LossyError):  # onnx_hash has no place in a tmfile
            tensio.save(tmp_path / "m.tmfile", c)
    assert not list(tmp_path.iterdir())  # nothing written, no temporary left
    # tmfile.* model metadata is the tmfile's own bookkeeping: rten, which has
    # no field for it, is written without it (no drop_metadata needed)
    with tensio.open(vec("tmfile/cnn_small.tmfile")) as c:
        tensio.save(tmp_path / "m.rten", c)
    with tensio.open(tmp_path / "m.rten") as r:
        assert not any(k.startswith("tmfile.") for k in r.graph.metadata)


def test_typed_values(tmp_path):
    """A value that is not a tensor of a tensio dtype (an ONNX sequence)
    has .type in ONNX's notation, no .dtype and no .shape; a graph built
    with such a value writes it to ONNX (and only to ONNX)."""
    onnx = pytest.importorskip("onnx")
    from onnx import helper, TensorProto
    seq = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT,
                                                                        ["N", 3]))
    g = helper.make_graph([helper.make_node("Identity", ["s"], ["o"])], "g",
                          [helper.make_value_info("s", seq)], [helper.make_value_info("o", seq)])
    p = str(tmp_path / "seq.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)]), p)
    with tensio.open(p) as c:
        v = c.graph.inputs[0]
        assert v.type == "seq(tensor(float)[N,3])"
        assert v.dtype is None and v.shape is None
        assert "seq(tensor(float)[N,3])" in repr(v)
    out = str(tmp_path / "out.onnx")
    tensio.convert(p, out)
    with pytest.raises(tensio.UnsupportedError, match="has type seq"):
        tensio.convert(p, str(tmp_path / "out.rten"))
    m = onnx.load(out)
    assert m.graph.input[0].type == seq
