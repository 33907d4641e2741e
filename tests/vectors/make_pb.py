#!/usr/bin/python3
"""Writes the bare TensorProto vectors (tests/vectors/onnx_tensor/*.pb,
format onnx-tensor) with Debian's python3-onnx: numpy_helper.from_array
(raw_data) and helper.make_tensor without raw (every typed field)."""
import os

import numpy as np
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "onnx_tensor")


def put(name, t):
    with open(os.path.join(HERE, name + ".pb"), "wb") as f:
        f.write(t.SerializeToString())


def main():
    os.makedirs(HERE, exist_ok=True)
    a = np.arange(-6, 6, dtype=np.float32).reshape(3, 4) / 4
    put("f32_raw", numpy_helper.from_array(a, "input_0"))
    put("f16_raw", numpy_helper.from_array(a.astype(np.float16)))
    put("bool_raw", numpy_helper.from_array(a > 0, "mask"))
    put("c64_raw", numpy_helper.from_array((a + 1j * a).astype(np.complex64), "z"))
    put("i64_scalar", numpy_helper.from_array(np.array(-7, dtype=np.int64), "s"))
    put("u8_empty", numpy_helper.from_array(np.zeros((2, 0), np.uint8), "e"))
    put("f32_typed", helper.make_tensor("t", TensorProto.FLOAT, [2, 3], [1, 2, 3, 4, 5, 6]))
    put("i8_typed", helper.make_tensor("t", TensorProto.INT8, [4], [-128, -1, 0, 127]))
    put("i64_typed", helper.make_tensor("t", TensorProto.INT64, [3], [-(1 << 62), 0, 5]))
    put("f64_typed", helper.make_tensor("t", TensorProto.DOUBLE, [2], [1e300, -0.5]))
    put("u64_typed", helper.make_tensor("t", TensorProto.UINT64, [2], [(1 << 64) - 1, 3]))


main()
