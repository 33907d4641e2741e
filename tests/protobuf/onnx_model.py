#!/usr/bin/env python3
"""Helper of tests/protobuf/test_protobuf.c (the protobuf wire layer against
python3-onnx).

  onnx_model.py make MODEL FACTS   build a small model with onnx.helper, save it
                                   to MODEL, print its facts to FACTS
  onnx_model.py facts MODEL FACTS  parse MODEL with onnx, print its facts

Facts are text lines in the order of the fields on the wire (protobuf writes
fields in field-number order), as the C test prints them from the bytes:
ir_version, producer_name, per node its op_type and attributes (name, i,
ints), per initializer its dims, data_type, name and raw_data (size, sha256),
then the opset imports.

Schema lines: "<Message>.<field> <number> <type> <opt|rep> <packed|-> <message
type|->", the type numbered as in descriptor.proto, sorted."""
import hashlib
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def make_model():
    rng = np.random.default_rng(16)
    w = numpy_helper.from_array(rng.standard_normal((4, 1, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(np.arange(4, dtype=np.float32), "b")
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv0",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1], group=1),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 3, 1]),
        helper.make_node("Flatten", ["y"], ["z"], axis=-3),
    ]
    graph = helper.make_graph(
        nodes, "pbtest",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 256])],
        initializer=[w, b])
    model = helper.make_model(graph, producer_name="tensio-pb-test",
                              opset_imports=[helper.make_opsetid("", 13),
                                             helper.make_opsetid("ai.onnx.ml", 2)])
    onnx.checker.check_model(model)
    return model


def facts(model):
    out = [f"ir_version {model.ir_version}", f"producer_name {model.producer_name}"]
    for n in model.graph.node:
        out.append(f"node {n.op_type}")
        for a in n.attribute:
            out.append(f"attr {a.name}")
            if a.HasField("i"):
                out.append(f"i {a.i}")
            out.extend(f"ints {v}" for v in a.ints)
    for t in model.graph.initializer:
        out.extend(f"dim {d}" for d in t.dims)
        out.append(f"data_type {t.data_type}")
        out.append(f"initializer {t.name}")
        if t.HasField("raw_data"):
            out.append(f"raw_data {len(t.raw_data)} {hashlib.sha256(t.raw_data).hexdigest()}")
    for o in model.opset_import:
        out.append(f"opset {o.domain} {o.version}")
    return "".join(line + "\n" for line in out)


def schema():
    out, seen, todo = [], set(), [onnx.ModelProto.DESCRIPTOR]
    while todo:
        d = todo.pop()
        name = d.full_name.removeprefix("onnx.")
        if name in seen:
            continue
        seen.add(name)
        for f in d.fields:
            label = "rep" if f.label == f.LABEL_REPEATED else "opt"
            packed = "packed" if f.GetOptions().packed else "-"
            msg = f.message_type.full_name.removeprefix("onnx.") if f.message_type else "-"
            out.append(f"{name}.{f.name} {f.number} {f.type} {label} {packed} {msg}")
            if f.message_type:
                todo.append(f.message_type)
    return "".join(line + "\n" for line in sorted(out))


def main():
    cmd, path, facts_path = sys.argv[1:4]
    if cmd == "schema":
        with open(facts_path, "w") as f:
            f.write(schema())
        return
    if cmd == "make":
        model = make_model()
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
    else:
        model = onnx.load(path)
    with open(facts_path, "w") as f:
        f.write(facts(model))


if __name__ == "__main__":
    main()
