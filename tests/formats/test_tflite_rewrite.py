#!/usr/bin/python3
""".tflite -> .tflite, checked against the manifest and in Arm NN.

Usage: /usr/bin/python3 test_tflite_rewrite.py /path/to/tensio

For each model of $TIO_SHARED_VECTORS/tflite (manifest.json) and the float32
models built at test time (test_tflite_float.py's, with tflite_build.py):
- `tensio convert M.tflite R1.tflite`, then R1 -> R2: R2 byte-identical to
  R1 (tensio's own output is rewritten exactly);
- R1 read back with a FlatBuffers reader written here (not tensio's): every
  subgraph's tensors (name, type, shape, buffer, per-tensor and per-axis
  quantization), operators (builtin code, inputs, outputs), inputs and
  outputs as the manifest lists them, and every buffer's bytes by SHA-256;
  every buffer 16-byte aligned;
- Arm NN (Debian's python3-pyarmnn, CpuRef): where it runs the original, the
  rewrite gives bit-identical outputs on the seeded inputs (the manifest's
  NAME.in<k>.npy; the built models' own), and the original's outputs match
  the manifest's NAME.out<k>.npy (the engine is the one the manifest used).
  Where Arm NN does not run the original, the line says so by name.

The shared vectors absent: their models are reported skipped by name.
pyarmnn absent: a failure when $CI is set (scripts/install-deps.sh installs
it, as CI runs it), else the test is reported skipped (exit code 77).
"""

import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
TENSIO = os.path.abspath(sys.argv[1]) if len(sys.argv) == 2 else None
REPO = os.path.dirname(os.path.dirname(HERE))
SHARED = os.environ.get("TIO_SHARED_VECTORS", os.path.join(REPO, "..", "shared", "vectors"))
VEC = os.path.join(SHARED, "tflite")
DTYPES = {0: "float32", 1: "float16", 2: "int32", 3: "uint8", 4: "int64", 5: "string",
          6: "bool", 7: "int16", 8: "complex64", 9: "int8", 10: "float64", 11: "complex128",
          12: "uint64", 13: "resource", 14: "variant", 15: "uint32", 16: "uint16", 17: "int4",
          18: "bfloat16"}


# ------------------------------------------------- a small FlatBuffers reader

class Table:
    def __init__(self, b, pos):
        self.b, self.pos = b, pos
        vt = pos - struct.unpack_from("<i", b, pos)[0]
        self.vt, self.vs = vt, struct.unpack_from("<H", b, vt)[0]

    def _at(self, i):
        if 4 + 2 * i >= self.vs:
            return 0
        o = struct.unpack_from("<H", self.b, self.vt + 4 + 2 * i)[0]
        return self.pos + o if o else 0

    def scalar(self, i, fmt, default=0):
        p = self._at(i)
        return struct.unpack_from("<" + fmt, self.b, p)[0] if p else default

    def _ref(self, i):
        p = self._at(i)
        return p + struct.unpack_from("<I", self.b, p)[0] if p else 0

    def table(self, i):
        p = self._ref(i)
        return Table(self.b, p) if p else None

    def vector(self, i, fmt):
        """scalars as a list; None when absent"""
        p = self._ref(i)
        if not p:
            return None
        n = struct.unpack_from("<I", self.b, p)[0]
        return list(struct.unpack_from("<%d%s" % (n, fmt), self.b, p + 4))

    def vector_pos(self, i):
        p = self._ref(i)
        return (p + 4, struct.unpack_from("<I", self.b, p)[0]) if p else (0, 0)

    def tables(self, i):
        p = self._ref(i)
        if not p:
            return []
        n = struct.unpack_from("<I", self.b, p)[0]
        out = []
        for k in range(n):
            q = p + 4 + 4 * k
            out.append(Table(self.b, q + struct.unpack_from("<I", self.b, q)[0]))
        return out

    def string(self, i):
        p = self._ref(i)
        if not p:
            return None
        n = struct.unpack_from("<I", self.b, p)[0]
        return self.b[p + 4:p + 4 + n].decode("utf-8")


def model_of(b):
    assert b[4:8] == b"TFL3", "file identifier %r" % b[4:8]
    return Table(b, struct.unpack_from("<I", b, 0)[0])


def buffer_bytes(m, idx):
    """(bytes, file offset) of buffer idx: inline or the offset/size form"""
    bt = m.tables(4)[idx]
    pos, n = bt.vector_pos(0)
    if n:
        return m.b[pos:pos + n], pos
    off, size = bt.scalar(1, "Q"), bt.scalar(2, "Q")
    if off > 1:
        return m.b[off:off + size], off
    return b"", 0


def check_manifest(b, orig, entry):
    """The rewrite b against the manifest entry (tensor types against the
    original's codes: the manifest names TensorType 15, UINT32 in the schema,
    uint16); returns (tensors, buffers) checked."""
    m = model_of(b)
    otypes = [[t.scalar(1, "b") for t in sg.tables(0)] for sg in model_of(orig).tables(2)]
    assert m.scalar(0, "I") == entry["version"], "version"
    sgs = m.tables(2)
    assert len(sgs) == len(entry["subgraphs"]), "subgraph count"
    codes = []
    for c in m.tables(1):
        codes.append(max(c.scalar(0, "b"), c.scalar(3, "i")))
    nt = nb = 0
    for s, (sg, want) in enumerate(zip(sgs, entry["subgraphs"])):
        assert sg.vector(1, "i") == want["inputs"], "subgraph %d inputs" % s
        assert sg.vector(2, "i") == want["outputs"], "subgraph %d outputs" % s
        ts = sg.tables(0)
        assert len(ts) == len(want["tensors"]), "subgraph %d tensor count" % s
        for i, (t, wt) in enumerate(zip(ts, want["tensors"])):
            what = "subgraph %d tensor %d (%s)" % (s, i, wt["name"])
            assert (t.string(3) or "") == (wt["name"] or ""), what + ": name"
            ty = t.scalar(1, "b")
            assert ty == otypes[s][i], what + ": type %d, the original's %d" % (ty, otypes[s][i])
            assert ty == 15 or DTYPES.get(ty, "?") == wt["dtype"], what + ": dtype"
            assert (t.vector(0, "i") or []) == wt["shape"], what + ": shape"
            assert t.scalar(2, "I") == wt["buffer"], what + ": buffer index"
            data, off = buffer_bytes(m, wt["buffer"])
            assert len(data) == wt["data_bytes"], what + ": buffer size"
            if wt["data_bytes"]:
                assert hashlib.sha256(data).hexdigest() == wt["sha256"], what + ": bytes"
                assert off % 16 == 0, what + ": buffer at %d, not 16-byte aligned" % off
                nb += 1
            q = t.table(4)
            wq = wt.get("quant")
            if wq:
                assert q is not None, what + ": quantization lost"
                sc = q.vector(2, "f") or []
                assert np.array_equal(np.float32(sc), np.float32(wq["scale"])), what + ": scales"
                assert (q.vector(3, "q") or []) == wq["zero_point"], what + ": zero points"
                assert q.scalar(6, "i") == wq["quantized_dimension"], what + ": axis"
            nt += 1
        ops = sg.tables(3)
        assert len(ops) == len(want["operators"]), "subgraph %d operator count" % s
        for k, (o, wo) in enumerate(zip(ops, want["operators"])):
            assert codes[o.scalar(0, "I")] == wo["opcode"], "operator %d code" % k
            assert o.vector(1, "i") == wo["inputs"], "operator %d inputs" % k
            assert o.vector(2, "i") == wo["outputs"], "operator %d outputs" % k
    return nt, nb


# ---------------------------------------------------------------- Arm NN

def armnn_run(ann, path, inputs):
    """Arm NN's outputs for the model at path (a list of arrays), or raises."""
    parser = ann.ITfLiteParser()
    net = parser.CreateNetworkFromBinaryFile(path)
    names = parser.GetSubgraphInputTensorNames(0)
    ins = [parser.GetNetworkInputBindingInfo(0, n) for n in names]
    outs = [parser.GetNetworkOutputBindingInfo(0, n)
            for n in parser.GetSubgraphOutputTensorNames(0)]
    runtime = ann.IRuntime(ann.CreationOptions())
    opt, _ = ann.Optimize(net, [ann.BackendId("CpuRef")], runtime.GetDeviceSpec(),
                          ann.OptimizerOptions())
    net_id, _ = runtime.LoadNetwork(opt)
    it = ann.make_input_tensors(ins, inputs)
    ot = ann.make_output_tensors(outs)
    runtime.EnqueueWorkload(net_id, it, ot)
    res = ann.workload_tensors_to_ndarray(ot)
    runtime.UnloadNetwork(net_id)
    return res


def rewrite(src, d):
    r1, r2 = os.path.join(d, "r1.tflite"), os.path.join(d, "r2.tflite")
    for a, b in ((src, r1), (r1, r2)):
        p = subprocess.run([TENSIO, "convert", a, b], capture_output=True, text=True)
        assert p.returncode == 0, "convert %s: %s" % (os.path.basename(a), p.stderr.strip())
    b1, b2 = open(r1, "rb").read(), open(r2, "rb").read()
    assert b1 == b2, "the second rewrite differs from the first (%d vs %d bytes)" % (
        len(b1), len(b2))
    return r1, b1


def same_in_armnn(ann, src, r1, inputs):
    """Arm NN on the original and on the rewrite: the outputs bit-identical.
    Returns the original's outputs, or None when Arm NN does not run it."""
    try:
        want = armnn_run(ann, src, inputs)
    except Exception as e:  # the parser or the backend refuses the original
        return None, str(e).splitlines()[0][:100]
    got = armnn_run(ann, r1, inputs)
    assert len(got) == len(want), "Arm NN: %d outputs, the original %d" % (len(got), len(want))
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, "output %d type/shape" % k
        assert g.tobytes() == w.tobytes(), "Arm NN output %d differs from the original's" % k
    return want, None


def main():
    if not TENSIO:
        print("usage: test_tflite_rewrite.py /path/to/tensio", file=sys.stderr)
        return 2
    try:
        import pyarmnn as ann
    except ImportError:
        if os.environ.get("CI"):
            print("FAIL: python3-pyarmnn is not installed (scripts/install-deps.sh installs it)")
            return 1
        print("SKIPPED: python3-pyarmnn is not installed (scripts/install-deps.sh installs "
              "it); nothing was checked")
        return 77
    import test_tflite_float as tf
    tmp = tempfile.mkdtemp(prefix="tio_tflite_rewrite_")
    passed = failed = ran = 0
    try:
        have = os.path.isfile(os.path.join(VEC, "manifest.json"))
        manifest = json.load(open(os.path.join(VEC, "manifest.json"))) if have else {}
        if not have:
            print("skipped: %s/manifest.json is absent (the shared vectors): the 17 "
                  "TensorFlow Lite Micro models" % VEC)
        for fname in sorted(manifest):
            e, name = manifest[fname], fname[:-len(".tflite")]
            d = os.path.join(tmp, name)
            os.makedirs(d)
            src = os.path.join(VEC, fname)
            try:
                r1, b1 = rewrite(src, d)
                nt, nb = check_manifest(b1, open(src, "rb").read(), e)
                line = "%d tensors, %d buffers as the manifest says; R2 == R1" % (nt, nb)
                if e.get("armnn_inputs"):
                    ins = [np.load(os.path.join(VEC, f)) for f in e["armnn_inputs"]]
                    want, why = same_in_armnn(ann, src, r1, ins)
                    assert want is not None, "Arm NN no longer runs the original: %s" % why
                    for k, f in enumerate(e["armnn_outputs"]):
                        ref = np.load(os.path.join(VEC, f))
                        assert np.array_equal(want[k].reshape(ref.shape), ref), \
                            "the original's output %d is not the manifest's" % k
                    line += "; Arm NN: the rewrite's outputs bit-identical to the original's"
                    ran += 1
                else:
                    line += "; Arm NN does not run it (%s)" % str(e.get("armnn_20_08"))[:70]
                print("ok %s: %s" % (name, line), flush=True)
                passed += 1
            except AssertionError as x:
                print("FAIL %s: %s" % (name, x), flush=True)
                failed += 1
        # the float32 models built here
        rng = np.random.default_rng(0)
        for build in (tf.convnet, tf.elementwise):
            name = build.__name__
            data, ins, outs, _ = build(rng)
            d = os.path.join(tmp, "built_" + name)
            os.makedirs(d)
            src = os.path.join(d, "m.tflite")
            open(src, "wb").write(data)
            try:
                r1, b1 = rewrite(src, d)
                m0, m1 = model_of(data), model_of(b1)
                for i in range(len(m0.tables(4))):
                    assert buffer_bytes(m0, i)[0] == buffer_bytes(m1, i)[0], "buffer %d" % i
                want, why = same_in_armnn(ann, src, r1, ins)
                line = "built at test time; R2 == R1; buffers exact"
                if want is None:
                    line += "; Arm NN does not run it (%s)" % why
                else:
                    for k, (w, ref) in enumerate(zip(want, outs)):
                        assert np.allclose(w.reshape(ref.shape), ref, rtol=1e-3, atol=1e-4), \
                            "Arm NN's output %d of the original is not NumPy's" % k
                    line += "; Arm NN: the rewrite's outputs bit-identical to the original's"
                    ran += 1
                print("ok %s: %s" % (name, line), flush=True)
                passed += 1
            except AssertionError as x:
                print("FAIL %s: %s" % (name, x), flush=True)
                failed += 1
    finally:
        shutil.rmtree(tmp)
    print("%d passed, %d failed; %d run in Arm NN" % (passed, failed, ran))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
