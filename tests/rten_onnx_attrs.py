#!/usr/bin/python3
"""Dumps each node of an .onnx file as JSON (one line per node: op_type and
attributes as python3-onnx reads them), for tests/formats/test_rten_onnx.c."""
import json
import sys

import onnx
from onnx import helper

m = onnx.load(sys.argv[1])
for n in m.graph.node:
    attrs = {}
    for a in n.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode()
        elif isinstance(v, onnx.TensorProto):
            v = {"tensor": list(onnx.numpy_helper.to_array(v).flatten().tolist())}
        elif isinstance(v, list):
            v = [x.decode() if isinstance(x, bytes) else x for x in v]
        attrs[a.name] = v
    print(json.dumps({"op": n.op_type, "attrs": attrs}))
