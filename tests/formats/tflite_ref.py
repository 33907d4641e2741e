"""TensorFlow Lite's arithmetic in NumPy, for the tests (NHWC, OHWI weights),
written here from its documented semantics and its kernels' behaviour:
SAME padding's extra row at the end, average pools that leave padding out,
TRANSPOSE_CONV's padding taken from the output's size. Used by
test_tflite_float.py and test_tflite_onnx.py."""

import numpy as np

SAME, VALID = 0, 1
A_NONE, A_RELU, A_RELU6, A_TANH = 0, 1, 3, 4


def act(x, a):
    return {A_NONE: x, A_RELU: np.maximum(x, 0), A_RELU6: np.clip(x, 0, 6),
            A_TANH: np.tanh(x)}[a]


def same_pads(n, k, s):
    out = -(-n // s)
    tot = max((out - 1) * s + k - n, 0)
    return tot // 2, tot - tot // 2


def windows(x, kh, kw, s, pad, fill):
    """x NHWC -> patches [N, OH, OW, kh, kw, C] (padding with `fill`)."""
    if pad == SAME:
        (t, b), (l, r) = same_pads(x.shape[1], kh, s), same_pads(x.shape[2], kw, s)
    else:
        t = b = l = r = 0
    x = np.pad(x, ((0, 0), (t, b), (l, r), (0, 0)), constant_values=fill)
    oh, ow = (x.shape[1] - kh) // s + 1, (x.shape[2] - kw) // s + 1
    p = np.empty((x.shape[0], oh, ow, kh, kw, x.shape[3]), x.dtype)
    for i in range(kh):
        for j in range(kw):
            p[:, :, :, i, j, :] = x[:, i:i + s * oh:s, j:j + s * ow:s, :]
    return p


def conv(x, w, b, s, pad):  # w OHWI
    p = windows(x, w.shape[1], w.shape[2], s, pad, 0)
    return np.einsum("nhwijc,oijc->nhwo", p, w) + b


def dwconv(x, w, b, s, pad, mult):  # w 1HWO, O = C * mult
    p = windows(x, w.shape[1], w.shape[2], s, pad, 0)
    p = np.repeat(p, mult, axis=-1)
    return np.einsum("nhwijc,ijc->nhwc", p, w[0]) + b


def tconv(x, w, b, sh, sw, pad, oh, ow):  # w OHWI
    """TRANSPOSE_CONV: input pixel (i, j) scattered at (i * sh - top,
    j * sw - left), top/left a forward convolution's SAME padding from the
    output's size (0 for VALID), outside the output's size cut."""
    def begin(o, k, s):
        return max(((o + s - 1) // s - 1) * s + k - o, 0) // 2 if pad == SAME else 0
    kh, kw = w.shape[1], w.shape[2]
    top, left = begin(oh, kh, sh), begin(ow, kw, sw)
    y = np.zeros((x.shape[0], oh, ow, w.shape[0]), np.float64)
    for i in range(x.shape[1]):
        for j in range(x.shape[2]):
            c = np.einsum("nc,ohwc->nhwo", x[:, i, j, :], w)
            for u in range(kh):
                for v in range(kw):
                    r, q = i * sh - top + u, j * sw - left + v
                    if 0 <= r < oh and 0 <= q < ow:
                        y[:, r, q, :] += c[:, u, v, :]
    return y + (0 if b is None else b)


def pool(x, k, s, pad, avg):
    if avg:
        p = windows(x, k, k, s, pad, np.nan)
        return np.nanmean(p, axis=(3, 4))
    return windows(x, k, k, s, pad, -np.inf).max(axis=(3, 4))
