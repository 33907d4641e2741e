"""QDQ (QuantizeLinear/DequantizeLinear) ONNX models built at test time with
python3-onnx's helper, for tests/formats/test_tflite_qdq.py: a small float
CNN and MLP (seeded weights), their activations' ranges measured on seeded
calibration data (torch's float ops), and the QDQ graph written around each
operator with those scales, as a post-training quantizer writes it: int8
weights (per tensor or per output channel, zero point 0), int32 biases of
scale input x weight, uint8 or int8 activations."""

import numpy as np
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

QT = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8}


def act_params(lo, hi, dt):
    """Asymmetric scale and zero point covering [lo, hi] (and 0)."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    qmin, qmax = (0, 255) if dt == np.uint8 else (-128, 127)
    scale = max((hi - lo) / (qmax - qmin), 1e-8)
    zp = int(round(qmin - lo / scale))
    return np.float32(scale), dt(min(max(zp, qmin), qmax))


def quant_w(w, per_channel):
    """Symmetric int8 weights: per output channel (axis 0) or per tensor."""
    if per_channel:
        m = np.abs(w.reshape(w.shape[0], -1)).max(axis=1)
    else:
        m = np.array([np.abs(w).max()])
    s = np.maximum(m / 127.0, 1e-8).astype(np.float32)
    sb = s.reshape((-1,) + (1,) * (w.ndim - 1)) if per_channel else s[0]
    q = np.clip(np.round(w / sb), -127, 127).astype(np.int8)
    return q, (s if per_channel else np.float32(s[0]))


def quant_w_u8(w):
    """Asymmetric uint8 weights per tensor (TFLite's uint8 scheme)."""
    s, zp = act_params(w.min(), w.max(), np.uint8)
    return np.clip(np.round(w / s) + int(zp), 0, 255).astype(np.uint8), s, zp


class Builder:
    def __init__(self, act_dt):
        self.nodes, self.inits, self.act_dt, self.k = [], [], act_dt, 0

    def const(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def q(self, x, scale, zp, name):
        s = self.const(name + "_scale", np.float32(scale))
        z = self.const(name + "_zp", zp)
        self.nodes.append(helper.make_node("QuantizeLinear", [x, s, z], [name + "_q"],
                                           name=name + "_Q"))
        self.nodes.append(helper.make_node("DequantizeLinear", [name + "_q", s, z],
                                           [name + "_dq"], name=name + "_DQ"))
        return name + "_dq"

    def dq_const(self, name, q, scale, zp=None, axis=None):
        args = [self.const(name + "_int", q), self.const(name + "_scale", scale)]
        if zp is not None:
            args.append(self.const(name + "_zp", zp))
        kw = {"axis": axis} if axis is not None else {}
        self.nodes.append(helper.make_node("DequantizeLinear", args, [name], name=name + "_DQ",
                                           **kw))
        return name


def build_cnn(path, act_dt, per_channel, u8_weights=False, seed=0):
    """x [1,3,16,16] -> Conv3x3(8)+Relu -> MaxPool2 -> depthwise Conv3x3+Relu6
    -> Conv1x1(8) -> Add(skip) -> GlobalAveragePool -> Flatten -> Gemm(10)."""
    rs = np.random.RandomState(seed)
    w1 = (rs.standard_normal((8, 3, 3, 3)) * 0.4).astype(np.float32)
    b1 = (rs.standard_normal(8) * 0.1).astype(np.float32)
    w2 = (rs.standard_normal((8, 1, 3, 3)) * 0.4).astype(np.float32)
    b2 = (rs.standard_normal(8) * 0.1).astype(np.float32)
    w3 = (rs.standard_normal((8, 8, 1, 1)) * 0.4).astype(np.float32)
    b3 = (rs.standard_normal(8) * 0.1).astype(np.float32)
    w4 = (rs.standard_normal((10, 8)) * 0.4).astype(np.float32)
    b4 = (rs.standard_normal(10) * 0.1).astype(np.float32)
    cal = torch.from_numpy(rs.standard_normal((16, 3, 16, 16)).astype(np.float32))
    t = lambda a: torch.from_numpy(a)  # noqa: E731
    a0 = cal
    a1 = F.relu(F.conv2d(a0, t(w1), t(b1), padding=1))
    a2 = F.max_pool2d(a1, 2)
    a3 = torch.clamp(F.conv2d(a2, t(w2), t(b2), padding=1, groups=8), 0, 6)
    a4 = F.conv2d(a3, t(w3), t(b3))
    a5 = a4 + a2
    a6 = a5.mean(dim=(2, 3), keepdim=True)
    a8 = F.linear(a6.flatten(1), t(w4), t(b4))
    rng = {k: (float(v.min()), float(v.max())) for k, v in
           dict(a0=a0, a1=a1, a3=a3, a4=a4, a5=a5, a6=a6, a8=a8).items()}
    B = Builder(act_dt)
    P = {k: act_params(*v, act_dt) for k, v in rng.items()}

    def conv_w(name, w, b, sx):
        if u8_weights:
            q, s, zp = quant_w_u8(w)
            wv = B.dq_const(name + "_w", q, s, zp)
            bs = np.float32(sx * s)
        else:
            q, s = quant_w(w, per_channel)
            wv = B.dq_const(name + "_w", q, s, np.zeros_like(np.atleast_1d(s), np.int8)
                            if per_channel else np.int8(0), 0 if per_channel else None)
            bs = (np.float32(sx) * s).astype(np.float32)
        bq = np.round(b / bs).astype(np.int32)
        bv = B.dq_const(name + "_b", bq, bs, np.zeros_like(bq) if np.ndim(bs) else np.int32(0),
                        0 if np.ndim(bs) else None)
        return wv, bv

    x = B.q("input", *P["a0"], "in")
    wv, bv = conv_w("conv1", w1, b1, P["a0"][0])
    B.nodes.append(helper.make_node("Conv", [x, wv, bv], ["c1"], name="conv1",
                                    kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    B.nodes.append(helper.make_node("Relu", ["c1"], ["r1"], name="relu1"))
    x = B.q("r1", *P["a1"], "a1")
    B.nodes.append(helper.make_node("MaxPool", [x], ["p1"], name="pool1", kernel_shape=[2, 2],
                                    strides=[2, 2]))
    p1 = B.q("p1", *P["a1"], "a2")
    wv, bv = conv_w("conv2", w2, b2, P["a1"][0])
    B.nodes.append(helper.make_node("Conv", [p1, wv, bv], ["c2"], name="conv2_dw",
                                    kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=8))
    lo, hi = B.const("clip_lo", np.float32(0)), B.const("clip_hi", np.float32(6))
    B.nodes.append(helper.make_node("Clip", ["c2", lo, hi], ["r2"], name="relu6"))
    x = B.q("r2", *P["a3"], "a3")
    wv, bv = conv_w("conv3", w3, b3, P["a3"][0])
    B.nodes.append(helper.make_node("Conv", [x, wv, bv], ["c3"], name="conv3",
                                    kernel_shape=[1, 1]))
    x = B.q("c3", *P["a4"], "a4")
    B.nodes.append(helper.make_node("Add", [x, p1], ["s"], name="add"))
    x = B.q("s", *P["a5"], "a5")
    B.nodes.append(helper.make_node("GlobalAveragePool", [x], ["g"], name="gap"))
    x = B.q("g", *P["a6"], "a6")
    B.nodes.append(helper.make_node("Flatten", [x], ["f"], name="flatten"))
    x = B.q("f", *P["a6"], "a7")
    wv, bv = conv_w("fc", w4, b4, P["a6"][0])
    B.nodes.append(helper.make_node("Gemm", [x, wv, bv], ["y0"], name="fc", transB=1))
    B.q("y0", *P["a8"], "out")
    B.nodes.append(helper.make_node("Identity", ["out_dq"], ["output"], name="out_id"))
    g = helper.make_graph(B.nodes, "qdq_cnn",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                                         [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 10])],
                          B.inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return float(P["a8"][0])


def build_mlp(path, act_dt, per_channel, seed=0, gemm_kn=False):
    """x [4,16] -> MatMul(16x24; per_channel: weights per column, axis 1)
    -> Relu -> Concat(h, h) -> Gemm(10) -> Softmax (output scale 1/256 and
    zero point -128 or 0, as TFLite's kernel writes). gemm_kn: the Gemm's
    weights stored [48, 10] with transB=0 (per channel: axis 1)."""
    rs = np.random.RandomState(seed + 1)
    w1 = (rs.standard_normal((16, 24)) * 0.3).astype(np.float32)
    w2 = (rs.standard_normal((10, 48)) * 0.3).astype(np.float32)
    b2 = (rs.standard_normal(10) * 0.1).astype(np.float32)
    cal = torch.from_numpy(rs.standard_normal((64, 16)).astype(np.float32))
    t = lambda a: torch.from_numpy(a)  # noqa: E731
    a1 = F.relu(cal @ t(w1))
    a2 = F.linear(torch.cat([a1, a1], 1), t(w2), t(b2))
    P = {"x": act_params(cal.min(), cal.max(), act_dt), "a1": act_params(a1.min(), a1.max(),
                                                                          act_dt),
         "a2": act_params(a2.min(), a2.max(), act_dt)}
    smax = (np.float32(1 / 256), act_dt(-128 if act_dt == np.int8 else 0))
    B = Builder(act_dt)
    x = B.q("input", *P["x"], "in")
    if per_channel:  # MatMul's output channels are its weights' axis 1
        m = np.maximum(np.abs(w1).max(axis=0) / 127.0, 1e-8).astype(np.float32)
        q1 = np.clip(np.round(w1 / m), -127, 127).astype(np.int8)
        wv = B.dq_const("mm_w", q1, m, np.zeros(24, np.int8), 1)
    else:
        q1, s1 = quant_w(w1, False)
        wv = B.dq_const("mm_w", q1, s1, np.int8(0))
    B.nodes.append(helper.make_node("MatMul", [x, wv], ["h0"], name="matmul"))
    B.nodes.append(helper.make_node("Relu", ["h0"], ["h"], name="relu"))
    h = B.q("h", *P["a1"], "a1")
    B.nodes.append(helper.make_node("Concat", [h, h], ["cat"], name="concat", axis=1))
    c = B.q("cat", *P["a1"], "cat")
    q2, s2 = quant_w(w2, per_channel)
    wv = B.dq_const("fc_w", np.ascontiguousarray(q2.T) if gemm_kn else q2, s2,
                    np.zeros(10, np.int8) if per_channel else np.int8(0),
                    (1 if gemm_kn else 0) if per_channel else None)
    bs = (np.float32(P["a1"][0]) * s2).astype(np.float32)
    bq = np.round(b2 / bs).astype(np.int32)
    bv = B.dq_const("fc_b", bq, bs, np.zeros(10, np.int32) if per_channel else np.int32(0),
                    0 if per_channel else None)
    B.nodes.append(helper.make_node("Gemm", [c, wv, bv], ["y0"], name="fc",
                                    transB=0 if gemm_kn else 1))
    y = B.q("y0", *P["a2"], "y")
    B.nodes.append(helper.make_node("Softmax", [y], ["sm"], name="softmax", axis=1))
    B.q("sm", *smax, "out")
    B.nodes.append(helper.make_node("Identity", ["out_dq"], ["output"], name="out_id"))
    g = helper.make_graph(B.nodes, "qdq_mlp",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, [4, 16])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, [4, 10])],
                          B.inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return float(smax[0])
