import numpy as np, onnx, sys
from onnx import helper as h, TensorProto as TP, numpy_helper as nh

def model(opset, name):
    x = h.make_tensor_value_info("x", TP.FLOAT, ["batch", 1, 4])
    outs = [h.make_tensor_value_info(n, t, None) for n, t in
            [("y_sq", TP.FLOAT), ("y_sl", TP.FLOAT), ("y_i", TP.INT32), ("y_b", TP.INT32),
             ("y_d", TP.FLOAT), ("y_c", TP.FLOAT), ("y_big", TP.INT32)]]
    inits = [
        nh.from_array(np.array([np.iinfo(np.int64).max, np.iinfo(np.int64).min, 1, -2, 7], np.int64), "i64"),
        nh.from_array(np.array([True, False, True]), "bools"),
        nh.from_array(np.array([0.5, -1.25], np.float64), "f64"),
        nh.from_array((np.arange(40, dtype=np.int64) - 20) * 3, "big64"),
        nh.from_array(np.array([1], np.int32), "one32"),
    ]
    nodes = [
        h.make_node("Constant", [], ["c_t"], name="k_t", value=nh.from_array(np.array([2.0, 3.0], np.float32))),
        h.make_node("Constant", [], ["c_ints"], name="k_ints", value_ints=[4, 5, 6]),
        h.make_node("Constant", [], ["c_f"], name="k_f", value_float=1.5),
    ]
    if opset < 13:
        nodes.append(h.make_node("Squeeze", ["x"], ["y_sq"], name="sq", axes=[1]))
    else:
        inits.append(nh.from_array(np.array([1], np.int64), "sq_axes"))
        nodes.append(h.make_node("Squeeze", ["x", "sq_axes"], ["y_sq"], name="sq"))
    if opset < 10:
        nodes.append(h.make_node("Slice", ["x"], ["y_sl"], name="sl", starts=[1], ends=[2**63 - 1], axes=[2]))
    else:
        inits += [nh.from_array(np.array([1], np.int64), "sl_s"),
                  nh.from_array(np.array([2**63 - 1], np.int64), "sl_e"),
                  nh.from_array(np.array([2], np.int64), "sl_a")]
        nodes.append(h.make_node("Slice", ["x", "sl_s", "sl_e", "sl_a"], ["y_sl"], name="sl"))
    nodes += [
        h.make_node("Cast", ["i64"], ["y_i"], name="ci", to=TP.INT32),
        h.make_node("Cast", ["bools"], ["y_b"], name="cb", to=TP.INT32),
        h.make_node("Cast", ["f64"], ["y_d0"], name="cd", to=TP.FLOAT),
        h.make_node("Add", ["y_d0", "c_t"], ["y_d1"], name="add"),
        h.make_node("Mul", ["y_d1", "c_f"], ["y_d"], name="mul"),
        h.make_node("Clip", ["y_d"], ["y_c"], name="clip", min=0.0, max=1.0) if opset < 11 else
        h.make_node("Clip", ["y_d", "", "c_f"], ["y_c"], name="clip"),
        h.make_node("Cast", ["big64"], ["y_big0"], name="cbig", to=TP.INT32),
        h.make_node("Add", ["y_big0", "one32"], ["y_big"], name="addbig"),
    ]
    g = h.make_graph(nodes, name, [x], outs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)], producer_name="tensio-test")
    m.ir_version = 7
    onnx.save(m, sys.argv[1] + "/%s.onnx" % name)

model(9, "rc_opset9")
model(13, "rc_opset13")
