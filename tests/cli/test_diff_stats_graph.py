#!/usr/bin/env python3
"""End-to-end tests of `tensio diff`, `tensio stats` and `tensio graph`.

Usage: /usr/bin/python3 test_diff_stats_graph.py /path/to/tensio
(convtest.py: the command line, finding vectors, counting cases).

Needs NumPy (the expected statistics and differences are computed with it)
and the onnx package (models with a changed attribute, a subgraph). Vectors
are found as test_cli.py finds them: $TIO_TEST_VECTORS/<rel>, else
$TIO_SHARED_VECTORS/<rel> (defaults: tests/vectors and ../shared/vectors);
a vector in neither prints "SKIPPED: <rel>". Graphviz's dot is needed for
the SVG/PNG cases (scripts/install-deps.sh installs it): without it they
fail, they are not skipped. The last line is "N passed, M failed".
"""

import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convtest  # noqa: E402 - the command line, vectors and case counting it shares
import pinned  # noqa: E402
from convtest import TENSIO, case  # noqa: E402

TMP = tempfile.mkdtemp(prefix="tensio-dsg-")


def run(*args, env=None):
    """tensio's exit status, stdout and stderr (text)."""
    return subprocess.run([TENSIO, *args], capture_output=True, text=True, errors="replace",
                          timeout=300, env=env)


def expect(res, rc):
    assert res.returncode == rc, \
        f"expected exit {rc}: rc={res.returncode} out={res.stdout[:800]!r} err={res.stderr[:800]!r}"
    return res


def run_json(rc, *args):
    out = expect(run(*args, "--json"), rc).stdout
    assert out.endswith("\n") and out.count("\n") == 1, f"one line of JSON: {out!r}"
    return json.loads(out)


def vec(rel):
    p = convtest.find(rel)
    if not p:
        print(f"SKIPPED: {rel}")
    return p


def tmp(name):
    return os.path.join(TMP, name)


def save_npy(name, arr):
    p = tmp(name)
    np.save(p, arr)
    return p


def save_safetensors(name, tensors):
    """A .safetensors file of {name: array} (float32/float16/int32/int64)."""
    codes = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16",
             np.dtype(np.int32): "I32", np.dtype(np.int64): "I64"}
    header, blobs, off = {}, [], 0
    for k, a in tensors.items():
        b = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()
        header[k] = {"dtype": codes[a.dtype], "shape": list(a.shape),
                     "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    p = tmp(name)
    with open(p, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    return p


def values(path, index=0):
    """The values of tensor `index` as NumPy (COO: the stored values)."""
    d = json.loads(expect(run("dump", "--json", "--limit", "100000000", path, str(index)), 0).stdout)
    t = d["tensors"][0]
    conv = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
    vals = [conv.get(v, v) if isinstance(v, str) else v for v in t["values"]]
    dt = t["dtype"]
    if dt == "bool":
        return np.array(vals, dtype=np.uint8), t
    # dump prints float32 (and the narrower floats, all exact in float32)
    # with 9 digits, float64 with 17: exact once read back in that width
    if dt in ("float16", "float64"):
        return np.array(vals, dtype=dt), t
    if dt.startswith(("float", "bfloat")):
        return np.array(vals, dtype=np.float32), t
    return np.array(vals, dtype=dt), t


def one_tensor(d, status=None):
    assert len(d["tensors"]) == 1, d
    t = d["tensors"][0]
    if status:
        assert t["status"] == status, t
    return t


# -------------------------------------------------------------------- diff

def t_diff_same_file():
    for rel in ("tenbin/rank3_float32.ten", "btf/dense_int64.btf", "tenbin/dtype_uint64.ten"):
        p = vec(rel)
        if not p:
            continue
        # the float vectors hold a NaN: the same bits are equal without --equal-nan
        res = expect(run("diff", p, p), 0)
        assert re.search(r"^equal: 1 tensor compared, 0 differ", res.stdout, re.M), res
        res = expect(run("diff", "--equal-nan", p, p), 0)
        assert re.search(r"^equal: 1 tensor compared, 0 differ", res.stdout, re.M), res
        d = run_json(0, "diff", "--equal-nan", p, p)
        assert d["equal"] is True and d["summary"]["equal"] == 1, d
        t = one_tensor(d, "equal")
        assert t["mismatched"] == 0 and t["max_abs_diff"] == 0, t


def t_diff_converted_npy():
    p = vec("tenbin/rank3_float32.ten")
    if not p:
        return
    out = tmp("rank3.npy")
    expect(run("convert", "--drop-names", p, out), 0)
    expect(run("diff", p, out), 0)  # its NaN has the same bits in both
    # a NaN of another payload differs, unless --equal-nan
    a = np.load(out)
    nan_at = np.flatnonzero(np.isnan(a))
    assert nan_at.size, "the vector holds a NaN"
    other = a.copy().reshape(-1)
    other.view(np.uint32)[nan_at[0]] ^= 1  # still a NaN, other bits
    assert np.isnan(other[nan_at[0]])
    out2 = tmp("rank3_payload.npy")
    np.save(out2, other.reshape(a.shape))
    expect(run("diff", p, out2), 1)
    expect(run("diff", "--equal-nan", p, out2), 0)
    d = run_json(0, "diff", "--equal-nan", p, out)
    assert d["paired_by"] == "index", d  # npy has no names
    assert d["a"]["format"] == "tenbin" and d["b"]["format"] == "npy", d
    t = one_tensor(d, "equal")
    assert t["count"] == int(np.prod(t["a"]["shape"])), t


def t_diff_onnx_rten():
    for m in ("small_cnn", "matmul_add", "big_init"):
        onnx_p, rten_p = vec(f"rten/{m}/{m}.onnx"), vec(f"rten/{m}/{m}.v2.rten")
        if not onnx_p or not rten_p:
            continue
        d = run_json(0, "diff", onnx_p, rten_p)
        assert d["paired_by"] == "name" and d["graph"]["equal"] is True, d
        # a fresh conversion too
        out = tmp(f"{m}.rten")
        expect(run("convert", onnx_p, out), 0)
        res = expect(run("diff", onnx_p, out), 0)
        assert re.search(r"^graph: equal", res.stdout, re.M), res


def t_diff_rten_narrowing():
    """rten stores int64 constants as int32: a dtype change, and a clamped value."""
    onnx_p, rten_p = vec("rten/int_consts/int_consts.onnx"), vec("rten/int_consts/int_consts.v2.rten")
    if not onnx_p or not rten_p:
        return
    d = run_json(1, "diff", onnx_p, rten_p)
    by = {t["a"]["name"]: t for t in d["tensors"]}
    assert by["shape_i64"]["status"] == "dtype", by["shape_i64"]
    assert by["add_i32"]["status"] == "equal", by["add_i32"]
    t = by["sl_ends"]
    assert t["status"] == "values" and t["first_mismatch"]["a"] == 2**63 - 1, t
    assert t["first_mismatch"]["b"] == 2**31 - 1 and t["first_mismatch"]["index"] == [0], t
    # --ignore-dtype leaves the changed value only
    d = run_json(1, "diff", "--ignore-dtype", onnx_p, rten_p)
    assert d["summary"]["values"] == 1 and d["summary"]["dtype"] == 0, d["summary"]


def t_diff_modified_value():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    b = a.copy()
    b[1, 2, 3] += np.float32(0.5)
    b[2, 0, 1] -= np.float32(0.25)
    pa, pb = save_npy("mod_a.npy", a), save_npy("mod_b.npy", b)
    res = expect(run("diff", pa, pb), 1)
    assert "[1, 2, 3]" in res.stdout and re.search(r"^values\s", res.stdout, re.M), res
    t = one_tensor(run_json(1, "diff", pa, pb), "values")
    assert t["mismatched"] == 2 and t["count"] == 60, t
    assert t["first_mismatch"]["index"] == [1, 2, 3], t
    assert t["first_mismatch"]["flat"] == 1 * 20 + 2 * 5 + 3, t
    assert t["first_mismatch"]["a"] == float(a[1, 2, 3]), t
    assert t["first_mismatch"]["b"] == float(b[1, 2, 3]), t
    diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
    assert math.isclose(t["max_abs_diff"], diff.max(), rel_tol=1e-12), t
    rel = (diff / np.abs(b.astype(np.float64))).max()
    assert math.isclose(t["max_rel_diff"], rel, rel_tol=1e-12), t


def t_diff_blocks():
    """Equal bytes are passed over 4 KiB at a time (tools/cmd_diff.c,
    DIFF_BLOCK): differences at a block's last and first elements, in the
    last, partial block, and a NaN with other bits are still each found,
    and the counts and extremes equal NumPy's."""
    rng = np.random.default_rng(11)
    for dtype, n in ((np.float32, 10000), (np.float64, 3000), (np.float16, 5000),
                     (np.complex128, 700), (np.int8, 9000)):
        a = (rng.standard_normal(n) * 50).astype(dtype)
        b = a.copy()
        per = 4096 // a.itemsize
        at = [per - 1, per, 2 * per + 7, n - 1]
        for i in at:
            b[i] = b[i] + dtype(3)
        pa, pb = save_npy("blk_a.npy", a), save_npy("blk_b.npy", b)
        t = one_tensor(run_json(1, "diff", pa, pb), "values")
        assert t["mismatched"] == len(at) and t["count"] == n, (dtype, t)
        assert t["first_mismatch"]["flat"] == per - 1, (dtype, t)
        d = np.abs(a.astype(np.complex128) - b.astype(np.complex128))
        assert math.isclose(t["max_abs_diff"], d.max(), rel_tol=1e-12), (dtype, t)
        rel = (d / np.abs(b.astype(np.complex128)))[d > 0].max()
        assert math.isclose(t["max_rel_diff"], rel, rel_tol=1e-12), (dtype, t)
    # NaNs of other bits are equal with --equal-nan only, in any block
    a = np.ones(5000, np.float32)
    b = a.copy()
    a[3000] = np.nan
    b[3000:3001] = np.array([0xFFC00001], np.uint32).view(np.float32)  # another NaN
    pa, pb = save_npy("nan_a.npy", a), save_npy("nan_b.npy", b)
    assert a.tobytes() != b.tobytes()
    t = one_tensor(run_json(1, "diff", pa, pb), "values")
    assert t["mismatched"] == 1 and t["first_mismatch"]["flat"] == 3000, t
    expect(run("diff", "--equal-nan", pa, pb), 0)


def pinned_equal(*args):
    """tensio ARGS on every processor and pinned to one (pinned.py)."""
    return pinned.pinned_equal(TENSIO, *args)


def t_diff_ahead():
    """diff compares pairs on worker threads ahead of the listing: the
    same report as on one processor, with every kind of pair in it."""
    rng = np.random.default_rng(5)
    a = {"t%02d" % i: (rng.standard_normal(500 * i + 3) * 9).astype(np.float32)
         for i in range(30)}
    b = {k: v.copy() for k, v in a.items()}
    for k in ("t03", "t11", "t29"):
        b[k][-1] += 1
    b["t05"] = b["t05"].astype(np.float64)  # dtype only
    b["t08"] = b["t08"][:-1]                # shape
    del b["t13"]                            # only in A
    b["t31"] = np.zeros(4, np.float32)      # only in B
    a["t20"], b["t20"] = np.array(["x", "yy"]), np.array(["x", "yz"])
    a["t21"], b["t21"] = np.array(["s"]), np.ones(1, np.float32)  # an error
    np.savez(tmp("ahead_a.npz"), **a)
    np.savez(tmp("ahead_b.npz"), **b)
    pa, pb = tmp("ahead_a.npz"), tmp("ahead_b.npz")
    res = pinned_equal("diff", "--json", pa, pb)
    assert res.returncode == 1, res
    ts = {t["a"]["name"] if t.get("a") else t["b"]["name"]: t
          for t in json.loads(res.stdout)["tensors"]}
    want = {"t03": "values", "t11": "values", "t29": "values", "t05": "dtype", "t08": "shape",
            "t13": "only_a", "t31": "only_b", "t20": "values", "t21": "error", "t00": "equal"}
    for k, st in want.items():
        assert ts[k]["status"] == st, (k, ts[k])
    assert ts["t29"]["first_mismatch"]["flat"] == 500 * 29 + 2, ts["t29"]
    pinned_equal("diff", pa, pb)
    q = vec("gguf/quant.gguf")  # quantized pairs are compared in the listing
    if q:
        pinned_equal("diff", "--json", q, q)


DIFF_CHUNK = 1 << 22  # tools/cmd_diff.c


def t_diff_chunks():
    """Dense pairs of more than DIFF_CHUNK elements are compared in chunks
    on worker threads, merged in order: the first mismatch in the second
    chunk (the first has none), the largest differences in the third, a NaN
    pair, counts and extremes equal to NumPy's; an equal pair and a pair of
    another dtype beside small ones; the same report as on one processor."""
    rng = np.random.default_rng(63)
    n = 2 * DIFF_CHUNK + 1001
    a = rng.standard_normal(n).astype(np.float32)
    b = a.copy()
    b[DIFF_CHUNK + 5::1000] += np.float32(1e-3)
    b[2 * DIFF_CHUNK + 3] += np.float32(7)
    a[DIFF_CHUNK - 1], b[DIFF_CHUNK - 1] = np.nan, np.nan  # one bit pattern: equal
    a[DIFF_CHUNK + 2] = np.nan                              # NaN against a number
    i = rng.integers(-100, 100, n, dtype=np.int16)
    sa = {"small": np.arange(5.0), "f": a, "same": a, "i": i, "z": np.ones(3)}
    sb = {"small": np.arange(5.0), "f": b, "same": a, "i": i.astype(np.int32),
          "z": np.ones(3)}
    np.savez(tmp("chunks_a.npz"), **sa)
    np.savez(tmp("chunks_b.npz"), **sb)
    pa, pb = tmp("chunks_a.npz"), tmp("chunks_b.npz")
    res = pinned_equal("diff", "--json", pa, pb)
    assert res.returncode == 1, res
    ts = {t["a"]["name"]: t for t in json.loads(res.stdout)["tensors"]}
    assert {k: t["status"] for k, t in ts.items()} == \
        {"small": "equal", "f": "values", "same": "equal", "i": "dtype", "z": "equal"}, ts
    t = ts["f"]
    fin = np.isfinite(a) & np.isfinite(b)
    d = np.abs(a.astype(np.float64) - b.astype(np.float64))[fin]
    want = int((~np.isclose(a, b, rtol=1e-5, atol=1e-8)).sum()) - 1  # NaN == NaN: same bits
    assert t["mismatched"] == want and t["count"] == n, (t, want)
    assert t["first_mismatch"]["flat"] == DIFF_CHUNK + 2, t
    assert math.isclose(t["max_abs_diff"], d.max(), rel_tol=1e-12), (t, d.max())
    assert ts["same"]["count"] == n and ts["i"]["count"] == n, ts
    pinned_equal("diff", pa, pb)
    expect(run("diff", "--tensors-only", pa, pa), 0)


def t_diff_dtype_and_shape():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    pa = save_npy("dt_a.npy", a)
    pb = save_npy("dt_b.npy", a.astype(np.float16))
    t = one_tensor(run_json(1, "diff", pa, pb), "dtype")
    assert t["a"]["dtype"] == "float32" and t["b"]["dtype"] == "float16", t
    assert t["mismatched"] == 0, t  # compared after conversion
    expect(run("diff", "--ignore-dtype", pa, pb), 0)
    # float16 rounding is a value difference at the default tolerance
    c = np.array([0.1, 0.2, 1.0 / 3], dtype=np.float32)
    pc, pd = save_npy("dt_c.npy", c), save_npy("dt_d.npy", c.astype(np.float16))
    t = one_tensor(run_json(1, "diff", pc, pd), "values")
    ref = np.abs(c.astype(np.float64) - c.astype(np.float16).astype(np.float64)).max()
    assert math.isclose(t["max_abs_diff"], ref, rel_tol=1e-12), t
    expect(run("diff", "--ignore-dtype", "--rtol", "1e-3", pc, pd), 0)
    # shapes: not compared element-wise
    pe = save_npy("dt_e.npy", a.reshape(6, 4))
    t = one_tensor(run_json(1, "diff", pa, pe), "shape")
    assert t["a"]["shape"] == [4, 6] and t["b"]["shape"] == [6, 4] and "mismatched" not in t, t
    res = expect(run("diff", pa, pe), 1)
    assert "[4, 6] | [6, 4]" in res.stdout, res


def t_diff_integers_exact():
    """int64 values past 2^53 that are equal as doubles still differ."""
    a = np.array([2**60, -5, 7], dtype=np.int64)
    b = a.copy()
    b[0] += 1
    pa, pb = save_npy("i64_a.npy", a), save_npy("i64_b.npy", b)
    t = one_tensor(run_json(1, "diff", pa, pb), "values")
    assert t["first_mismatch"]["a"] == 2**60 and t["first_mismatch"]["b"] == 2**60 + 1, t
    assert t["max_abs_diff"] == 1, t
    # int32 vs int64, same values: a dtype difference only; signed vs unsigned
    pc = save_npy("i32.npy", np.array([1, 2, 3], dtype=np.int32))
    pd = save_npy("i64.npy", np.array([1, 2, 3], dtype=np.int64))
    expect(run("diff", "--ignore-dtype", pc, pd), 0)
    pe = save_npy("u8.npy", np.array([255, 0], dtype=np.uint8))
    pf = save_npy("i8.npy", np.array([-1, 0], dtype=np.int8))
    t = one_tensor(run_json(1, "diff", "--ignore-dtype", pe, pf), "values")
    assert t["mismatched"] == 1 and t["max_abs_diff"] == 256, t


def t_diff_only_in_a_b():
    x = np.ones((2, 2), np.float32)
    pa = save_safetensors("ab_a.safetensors", {"w": x, "b": x * 2})
    pb = save_safetensors("ab_b.safetensors", {"w": x, "c": x * 3})
    d = run_json(1, "diff", pa, pb)
    assert d["paired_by"] == "name", d
    st = {(t["a"] or t["b"])["name"]: t["status"] for t in d["tensors"]}
    assert st == {"w": "equal", "b": "only_a", "c": "only_b"}, st
    assert d["summary"]["only_a"] == 1 and d["summary"]["only_b"] == 1, d
    res = expect(run("diff", pa, pb), 1)
    assert re.search(r"^only-A\s+b\s", res.stdout, re.M), res
    assert re.search(r"^only-B\s+c\s", res.stdout, re.M), res
    # TENSOR selects; by index pairs b with c (different values)
    expect(run("diff", pa, pb, "w"), 0)
    d = run_json(1, "diff", "--by-index", pa, pb)
    assert d["paired_by"] == "index" and d["summary"]["values"] == 1, d
    # one more tensor in A, by index
    pc = save_npy("one.npy", x)
    d = run_json(1, "diff", "--by-index", pa, pc)
    assert [t["status"] for t in d["tensors"]] == ["equal", "only_a"], d


def t_diff_tolerances():
    a = np.array([1.0, 100.0, 0.0], dtype=np.float64)
    b = a + np.array([1e-6, 1e-4, 1e-9])
    pa, pb = save_npy("tol_a.npy", a), save_npy("tol_b.npy", b)
    # numpy.allclose defaults hold: |a-b| <= 1e-8 + 1e-5 * |b|
    assert np.allclose(a, b)
    expect(run("diff", pa, pb), 0)
    expect(run("diff", "--rtol", "0", "--atol", "0", pa, pb), 1)
    t = one_tensor(run_json(1, "diff", "--rtol", "1e-7", pa, pb), "values")
    ref = np.isclose(a, b, rtol=1e-7, atol=1e-8)
    assert t["mismatched"] == int((~ref).sum()), (t, ref)
    expect(run("diff", "--rtol=0", "--atol=1.1e-4", pa, pb), 0)
    expect(run("diff", "--rtol", "0", "--atol", "0.9e-4", pa, pb), 1)
    d = run_json(0, "diff", "--rtol", "1e-3", "--atol", "1e-8", pa, pb)
    assert d["rtol"] == 1e-3 and d["atol"] == 1e-8 and d["equal_nan"] is False, d
    expect(run("diff", "--rtol", "1e-3", "--atol", "0", pa, pb), 1)  # 0 vs 1e-9


def t_diff_nan_inf():
    a = np.array([np.nan, np.inf, -np.inf, 1.0], dtype=np.float32)
    pa = save_npy("nan_a.npy", a)
    # the same bits: equal, NaN and all
    assert one_tensor(run_json(0, "diff", pa, pa), "equal")["mismatched"] == 0
    # a NaN of another payload is another NaN: a difference without --equal-nan
    q = a.copy()
    q.view(np.uint32)[0] ^= 1
    pq = save_npy("nan_q.npy", q)
    t = one_tensor(run_json(1, "diff", pa, pq), "values")
    assert t["mismatched"] == 1 and t["first_mismatch"]["index"] == [0], t
    assert t["first_mismatch"]["a"] == "nan", t
    assert one_tensor(run_json(0, "diff", "--equal-nan", pa, pq), "equal")["mismatched"] == 0
    d = run_json(0, "diff", "--equal-nan", pa, pa)
    assert d["equal_nan"] is True, d
    pb = save_npy("nan_b.npy", np.array([np.nan, -np.inf, -np.inf, 1.0], dtype=np.float32))
    t = one_tensor(run_json(1, "diff", "--equal-nan", pa, pb), "values")
    assert t["mismatched"] == 1 and t["first_mismatch"]["index"] == [1], t
    assert t["first_mismatch"]["b"] == "-inf", t
    p = vec("tenbin/dtype_float32.ten")  # holds a NaN
    if p:
        expect(run("diff", p, p), 0)
        expect(run("diff", "--equal-nan", p, p), 0)
    # a float16 NaN against its float32 widening: not the same bits
    h = save_npy("nan_h.npy", np.array([np.nan, 1.0], dtype=np.float16))
    w = save_npy("nan_w.npy", np.array([np.nan, 1.0], dtype=np.float32))
    expect(run("diff", "--ignore-dtype", h, w), 1)
    expect(run("diff", "--ignore-dtype", "--equal-nan", h, w), 0)


def t_diff_coo_dense():
    p = vec("btf/coo_float32_rank2.btf")
    if not p:
        return
    out = tmp("coo_dense.npy")
    expect(run("convert", "--densify", p, out), 0)
    d = run_json(0, "diff", p, out)
    t = one_tensor(d, "equal")
    assert t["a"]["layout"] == "coo" and t["b"]["layout"] == "dense", t
    assert t["count"] == 20, t
    # COO against COO: a stored value changed in the file's bytes (its
    # coordinate is (2, 0)); the merge of the coordinates finds it
    vals, _ = values(p)
    raw = open(p, "rb").read()
    old = np.float32(vals[2]).tobytes()
    assert raw.count(old) == 1, "the value's bytes once in the file"
    changed = tmp("coo_changed.btf")
    with open(changed, "wb") as f:
        f.write(raw.replace(old, np.float32(0.25).tobytes()))
    t = one_tensor(run_json(1, "diff", p, changed), "values")
    assert t["mismatched"] == 1 and t["count"] == 20, t
    assert t["first_mismatch"]["index"] == [2, 0] and t["first_mismatch"]["b"] == 0.25, t
    assert math.isclose(t["max_abs_diff"], abs(float(np.float32(vals[2])) - 0.25)), t
    # and against the dense form, both ways
    t = one_tensor(run_json(1, "diff", out, changed), "values")
    assert t["first_mismatch"]["index"] == [2, 0], t
    t = one_tensor(run_json(1, "diff", changed, out), "values")
    assert t["first_mismatch"]["index"] == [2, 0] and t["first_mismatch"]["a"] == 0.25, t
    # a COO shape claiming 2^40 elements costs nothing: only the stored values
    # compare (the work-bounds mutation that made densifying slow)
    p = vec("btf/coo_int8_rank4.btf")
    if p:
        raw = bytearray(open(p, "rb").read())
        assert struct.unpack_from("<q", raw, 48)[0] == 2, "dim 1 of the vector"
        struct.pack_into("<q", raw, 48, 2**40)
        big = tmp("coo_big.btf")
        with open(big, "wb") as f:
            f.write(raw)
        start = time.monotonic()
        t = one_tensor(run_json(0, "diff", big, big), "equal")
        # < 1 s of work (not 2**40 elements); 60 s is far above what a loaded machine needs
        took = time.monotonic() - start
        assert took < 60, f"took {took:.1f} s, a limit far above the < 1 s it needs"
        assert t["count"] == 2 * 3 * 2**40 * 2, t


def t_diff_graph_change():
    import onnx
    src = vec("rten/small_cnn/small_cnn.onnx")
    if not src:
        return
    m = onnx.load(src)
    for n in m.graph.node:
        if n.op_type == "MaxPool":
            for a in n.attribute:
                if a.name == "strides":
                    a.ints[:] = [1, 1]
    out = tmp("small_cnn_changed.onnx")
    onnx.save(m, out)
    d = run_json(1, "diff", src, out)
    g = d["graph"]
    assert g["equal"] is False and g["differences"] == 1, g
    assert "MaxPool" in g["first"][0] and "strides: [2, 2] vs [1, 1]" in g["first"][0], g
    assert d["summary"]["equal"] == len(d["tensors"]), d  # the weights are the same
    expect(run("diff", "--tensors-only", src, out), 0)
    # an op changed
    for n in m.graph.node:
        if n.op_type == "Relu":
            n.op_type = "Sigmoid"
    onnx.save(m, out)
    d = run_json(1, "diff", src, out)
    assert any("op Relu vs Sigmoid" in s for s in d["graph"]["first"]), d["graph"]
    # a model against its weights alone: the graph is only in A
    w = tmp("small_cnn_weights.safetensors")
    expect(run("convert", src, w), 0)
    d = run_json(1, "diff", src, w)
    assert d["graph"]["first"] == ["a graph only in A"], d["graph"]
    expect(run("diff", "--tensors-only", src, w), 0)


def t_diff_many_attributes():
    # a node of 2,000 attributes against the same in reverse order with one
    # changed, one dropped and one added: exactly those three (the lookups
    # by name are an index, not a search per attribute)
    import onnx
    from onnx import helper, TensorProto

    def model(names):
        node = helper.make_node("Mix", ["x"], ["y"], domain="test.attrs")
        for k, v in names:
            node.attribute.append(helper.make_attribute(k, v))
        g = helper.make_graph([node], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("test.attrs", 1)])

    attrs = [("a%d" % k, k) for k in range(2000)]
    changed = [(k, 99 if k == "a17" else v) for k, v in reversed(attrs) if k != "a42"]
    a, b = tmp("attrs_a.onnx"), tmp("attrs_b.onnx")
    onnx.save(model(attrs), a)
    onnx.save(model(changed + [("zz", 1)]), b)
    d = run_json(1, "diff", a, b)
    g = d["graph"]
    assert g["differences"] == 3, g
    first = sorted(x.split(": ", 1)[1] for x in g["first"])
    assert first == ["attribute a17: 17 vs 99", "attribute a42 = 42 only in A",
                     "attribute zz = 1 only in B"], first
    expect(run("diff", a, a), 0)


def t_diff_onnx_tmfile():
    a, b = vec("onnx/cnn_small.onnx"), vec("tmfile/cnn_small.tmfile")
    if not a or not b:
        return
    d = run_json(1, "diff", a, b)
    assert d["summary"]["equal"] == 6, d["summary"]
    # value names differ (c1 vs c1:conv) but the structure is the same; the
    # ONNX defaults tmfile writes are counted apart
    g = d["graph"]
    assert g["defaults"] >= 4, g
    assert all("tm2_layout" in s for s in g["first"]), g


def t_diff_usage():
    p = vec("tenbin/rank1_float32.ten")
    if not p:
        return
    for args in ((), (p,), (p, p, "--rtol", "x"), (p, p, "--atol", "-1"),
                 (p, p, "--rtol", "nan"), (p, p, "--bogus"), (p, p, "--max-dense-bytes", "x")):
        res = run("diff", *args)
        assert res.returncode == 2, f"diff {args}: {res!r}"
        assert res.stderr and res.stdout == "", f"diff {args}: {res!r}"
    # not usage errors, but no comparison either: 1 with a message
    for args in ((p, tmp("missing.npy")), (p, p, "no_such_tensor")):
        res = run("diff", *args)
        assert res.returncode == 1 and res.stderr and res.stdout == "", f"diff {args}: {res!r}"
    res = expect(run("diff", "--help"), 0)
    assert "--equal-nan" in res.stdout and "--rtol" in res.stdout, res


# ------------------------------------------------------------------- stats

def check_stats(path, index, t, nbins=16):
    x, meta = values(path, index)
    assert t["dtype"] == meta["dtype"], (t, meta)
    check_stats_of(x, t, nbins)


def check_stats_of(x, t, nbins=16):
    """A stats JSON tensor t against the NumPy array x of its values."""
    assert t["count"] == x.size, (t, x.size)
    xf = x.astype(np.float64)
    fin = xf[np.isfinite(xf)]
    assert t["nan"] == int(np.isnan(xf).sum()), t
    assert t["inf"] == int(np.isinf(xf).sum()), t
    assert t["finite"] == fin.size, t
    assert t["zeros"] == int((fin == 0).sum()), t
    if fin.size == 0:
        assert t["min"] is None and t["mean"] is None and t["histogram"] is None, t
        return
    if x.dtype.kind in "iu":  # exact (a uint64 past int64 as a string)
        assert int(t["min"]) == int(x.min()) and int(t["max"]) == int(x.max()), \
            (t, x.min(), x.max())
    else:
        assert t["min"] == fin.min() and t["max"] == fin.max(), t
    # scaled, so that float64 extremes do not overflow NumPy's sums
    scale = max(1.0, float(np.abs(fin).max()))
    mean, std = (fin / scale).mean() * scale, (fin / scale).std() * scale
    assert math.isclose(t["mean"], mean, rel_tol=1e-9, abs_tol=1e-12 * scale), (t["mean"], mean)
    assert math.isclose(t["std"], std, rel_tol=1e-7, abs_tol=1e-12 * scale), (t["std"], std)
    lo, hi = fin.min(), fin.max()
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    h = t["histogram"]
    assert sum(h["counts"]) == fin.size, h
    if lo == hi:  # a value so large that +-0.5 leaves it as it is: one bin
        assert h["counts"].count(fin.size) == 1, h
        return
    if math.isfinite(float(hi) - float(lo)):
        counts, edges = np.histogram(fin, bins=nbins, range=(lo, hi))
    else:  # NumPy fails on such a range; tensio bins the halved values
        counts, edges = np.histogram(fin / 2, bins=nbins, range=(lo / 2, hi / 2))
        edges = edges * 2
    assert h["counts"] == counts.tolist(), (h["counts"], counts.tolist())
    assert sum(h["counts"]) == fin.size, h
    assert len(h["edges"]) == nbins + 1 and np.allclose(h["edges"], edges, rtol=1e-12), h


def t_stats_vectors():
    rels = ["tenbin/dtype_float16.ten", "tenbin/dtype_float32.ten", "tenbin/dtype_float64.ten",
            "tenbin/dtype_int8.ten", "tenbin/dtype_int16.ten", "tenbin/dtype_int32.ten",
            "tenbin/dtype_int64.ten", "tenbin/dtype_uint8.ten", "tenbin/dtype_uint16.ten",
            "tenbin/dtype_uint64.ten", "btf/dense_int64.btf", "btf/dense_uint32.btf",
            "tenbin/rank0_float32.ten", "tenbin/empty_float64_3x0x2.ten",
            "tenbin/multi_infos.ten"]
    seen = 0
    for rel in rels:
        p = vec(rel)
        if not p:
            continue
        d = run_json(0, "stats", p)
        assert d["format"] and len(d["tensors"]) >= 1, d
        for t in d["tensors"]:
            check_stats(p, t["index"], t)
        seen += 1
    assert seen >= 10, f"only {seen} vectors"


def t_stats_all_dtypes():
    """safetensors with every dtype (bfloat16, float8, bool) converted on the fly."""
    p = vec("safetensors/all_dtypes.safetensors")
    if not p:
        return
    d = run_json(0, "stats", "--bins", "5", p)
    dtypes = {t["dtype"] for t in d["tensors"]}
    assert {"bfloat16", "float16", "bool"} <= dtypes, dtypes
    for t in d["tensors"]:
        check_stats(p, t["index"], t, nbins=5)


def t_stats_coo():
    for rel in ("btf/coo_float32_rank2.btf", "btf/coo_int32_rank3.btf", "btf/coo_btf_info_test.btf",
                "btf/coo_empty_nnz0.btf"):
        p = vec(rel)
        if not p:
            continue
        d = run_json(0, "stats", p)
        for t in d["tensors"]:
            if t["layout"] != "coo":
                continue
            assert t["count"] == t["nnz"], t
            assert t["numel"] == int(np.prod(t["shape"])), t
            check_stats(p, t["index"], t)
    p = vec("btf/coo_float32_rank2.btf")
    if p:
        res = expect(run("stats", p), 0)
        assert re.search(r"\b6 of 20\b", res.stdout), res


def t_stats_generated():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(10007).astype(np.float32) * 3 + 1
    x[::97] = 0
    x[5] = np.nan
    x[6] = -np.inf
    p = save_npy("gen.npy", x)
    for bins in (1, 7, 16, 100):
        t = one_tensor(run_json(0, "stats", "--bins", str(bins), p))
        check_stats(p, 0, t, nbins=bins)
    # many blocks of 1,024 values (merged in long double): all finite, a
    # large mean against a small spread (float64), and float64 extremes whose
    # sums overflow a double (each such block summed again in long double)
    big = rng.standard_normal(50000) + 1e6
    p = save_npy("offset.npy", big)
    check_stats(p, 0, one_tensor(run_json(0, "stats", p)))
    ext = rng.choice([-1.0, 1.0], 5000) * np.finfo(np.float64).max * rng.uniform(0.5, 1, 5000)
    ext[1234] = np.nan
    p = save_npy("extremes.npy", ext)
    t = one_tensor(run_json(0, "stats", p))
    check_stats(p, 0, t)
    assert math.isfinite(t["mean"]) and math.isfinite(t["std"]), t
    # of equal extremes the first is kept, as one value at a time keeps it:
    # -0 before +0, and +0 before -0 (at 2 and 5, in different lanes of the
    # block's loops)
    for first, sign in ((-0.0, -1.0), (0.0, 1.0)):
        vals = np.ones(3000)
        vals[2], vals[5] = first, -first
        t = one_tensor(run_json(0, "stats", save_npy("zeros.npy", vals)))
        assert math.copysign(1.0, t["min"]) == sign and t["zeros"] == 2, t
    # constant tensor: numpy's range widening
    p = save_npy("const.npy", np.full((4, 4), 2.5, np.float64))
    t = one_tensor(run_json(0, "stats", p))
    check_stats(p, 0, t)
    assert t["std"] == 0 and t["histogram"]["edges"][0] == 2.0, t


def t_stats_ahead():
    """stats computes tensors on worker threads ahead of the listing
    (tools/ahead.c), quantized ones in the listing: every row right, in
    order, and stdout, stderr and the exit status equal to a run pinned to
    one processor (no workers), with a tensor that cannot be summarised in
    the middle (a string, said on stderr, exit 1)."""
    rng = np.random.default_rng(38)
    kinds = (np.float32, np.float64, np.int16, np.uint8, np.bool_)
    arrs = {"t%02d" % i: (rng.standard_normal(997 * i + 1) * (i + 1)).astype(kinds[i % 5])
            for i in range(30)}
    arrs["t07"] = np.array(["ab", "cde"])
    p = tmp("ahead.npz")
    np.savez(p, **arrs)
    res = pinned_equal("stats", "--json", p)
    assert res.returncode == 1 and res.stderr.count(b"\n") == 1, res
    assert b"tensor 7 is a string tensor" in res.stderr, res
    ts = json.loads(res.stdout)["tensors"]
    assert [t["index"] for t in ts] == [i for i in range(30) if i != 7], ts
    for t in ts[::4]:
        check_stats(p, t["index"], t)
    q = vec("gguf/quant.gguf")  # quantized tensors (and one that cannot be dequantized)
    for args in (("--json", p), (p,), ("--bins", "3", p, "3", "1", "29", "7", "2")) + \
            ((("--json", q), (q,)) if q else ()):
        pinned_equal("stats", *args)


STATS_CHUNK = 1 << 22  # tools/cmd_stats.c


def t_stats_chunks():
    """A tensor of more than STATS_CHUNK values is summarised in chunks on
    worker threads, merged in order: the figures NumPy gives, with NaN, an
    infinity, a zero and both extremes at the chunks' edges, and the same
    output as on one processor (no workers), beside small tensors the
    other workers take."""
    rng = np.random.default_rng(61)
    n = 2 * STATS_CHUNK + 1001
    f = rng.standard_normal(n).astype(np.float32)
    f[STATS_CHUNK - 1], f[STATS_CHUNK], f[2 * STATS_CHUNK] = np.nan, np.inf, 0
    f[STATS_CHUNK + 1], f[2 * STATS_CHUNK - 1] = -9.5, 9.5
    i = rng.integers(-1000, 1000, n, dtype=np.int16)
    i[2 * STATS_CHUNK], i[STATS_CHUNK - 1] = -32768, 32767
    p = tmp("chunks.npz")
    np.savez(p, a=np.arange(10.0), f=f, s=np.ones(7, np.uint8), i=i, z=np.float64(3))
    res = pinned_equal("stats", "--json", "--bins", "100", p)
    ts = json.loads(res.stdout)["tensors"]
    assert [t["name"] for t in ts] == ["a", "f", "s", "i", "z"], ts
    check_stats_of(f, ts[1], 100)
    check_stats_of(i, ts[3], 100)
    assert ts[1]["min"] == -9.5 and ts[1]["max"] == 9.5, ts[1]
    assert (ts[1]["nan"], ts[1]["inf"]) == (1, 1), ts[1]
    pinned_equal("stats", p, "f")


def t_stats_bins_at_edges():
    """The bins where the values crowd an edge: random bits as float32
    over a range symmetric about 0 (the middle edge 0: half the values on
    either side of it), and float64 values on the edges and one ulp either
    side, where the guess from the scaled offset is corrected."""
    rng = np.random.default_rng(62)
    b = rng.integers(0, 1 << 32, 200000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    b = b[np.isfinite(b)].copy()
    m = np.abs(b).max()
    b[0], b[1] = -m, m
    p = save_npy("bits.npy", b)
    for bins in (2, 16, 1000):
        check_stats_of(b, one_tensor(run_json(0, "stats", "--bins", str(bins), p)), bins)
    for lo, hi, bins in ((-1.0, 3.0, 16), (1e6, 1e6 + 1e-3, 7), (-1e300, 1e300, 10),
                         (0.0, 1e-310, 5)):
        e = np.linspace(lo, hi, bins + 1)
        x = np.concatenate([e, np.nextafter(e, -np.inf), np.nextafter(e, np.inf)])
        x = np.clip(x, lo, hi)
        for bins2 in (bins, 3 * bins):
            t = one_tensor(run_json(0, "stats", "--bins", str(bins2), save_npy("edges.npy", x)))
            # each value in the bin whose edges hold it (the last one closed)
            edges = np.linspace(lo, hi, bins2 + 1)
            want = np.bincount(np.minimum(np.searchsorted(edges, x, "right") - 1, bins2 - 1),
                               minlength=bins2)
            assert t["histogram"]["counts"] == want.tolist(), (lo, hi, bins2, t)
            if hi - lo > 1e-300:  # NumPy's histogram fails on a subnormal range
                check_stats_of(x, t, bins2)
            else:  # the deviations' squares underflow: NumPy's std is 0 too
                assert t["std"] == 0 and t["mean"] == x.mean(), t


def t_stats_text_and_sparkline():
    p = vec("tenbin/dtype_int16.ten")
    if not p:
        return
    res = expect(run("stats", p), 0)
    head = res.stdout.splitlines()[0].split()
    assert head == ["INDEX", "NAME", "DTYPE", "SHAPE", "COUNT", "MIN", "MAX", "MEAN", "STD",
                    "ZEROS", "NAN", "INF"], res  # no sparkline: not a terminal
    assert not re.search("[\u2581-\u2588]", res.stdout), res
    res = expect(run("stats", "--sparkline", "--bins", "8", p), 0)
    head, line = res.stdout.splitlines()[:2]
    assert head.rstrip().endswith("HISTOGRAM"), res
    spark = line[head.index("HISTOGRAM"):]  # an empty bin is a space
    assert 0 < len(spark.rstrip()) <= 8 and set(spark) <= set("\u2581\u2582\u2583\u2584"
                                                             "\u2585\u2586\u2587\u2588 "), spark
    assert "\u2588" in spark, spark  # the fullest bin
    # TENSOR selection by name and index, in the order given
    p = vec("tenbin/multi_infos.ten")
    if p:
        d = run_json(0, "stats", p, "1", "0")
        assert [t["index"] for t in d["tensors"]] == [1, 0], d


def t_stats_usage():
    p = vec("tenbin/dtype_int16.ten")
    if not p:
        return
    for args in ((), (p, "--bins", "0"), (p, "--bins", "1001"), (p, "--bins", "x"),
                 (p, "--bogus"), (p, "-f", "nope")):
        res = run("stats", *args)
        assert res.returncode == 2, f"stats {args}: {res!r}"
    expect(run("stats", p, "no_such"), 1)
    expect(run("stats", tmp("missing.npy")), 1)


# ------------------------------------------------------------------- graph

def dot_nodes_edges(dot):
    nodes = re.findall(r"^\s*(g\d+_(?:n|in|out|c|v)[\w]*) \[label=", dot, re.M)
    edges = re.findall(r"^\s*(g\d+_\w+) -> (g\d+_\w+)", dot, re.M)
    return nodes, edges


def expected_graph(path):
    """Operator count, and the edges tensio draws: every node input that is not
    a constant read once (those are folded into the box), plus the outputs."""
    info = json.loads(expect(run("info", "--json", path), 0).stdout)["graph"]
    ls = json.loads(expect(run("ls", "--json", path), 0).stdout)
    consts = {t["name"] for t in ls["tensors"]}
    uses = {}
    for n in info["nodes"]:
        for i in n["inputs"]:
            if i:
                uses[i] = uses.get(i, 0) + 1
    edges = sum(1 for n in info["nodes"] for i in n["inputs"]
                if i and not (i in consts and uses[i] == 1))
    return len(info["nodes"]), edges + len(info["outputs"])


def t_graph_dot():
    for rel in ("rten/small_cnn/small_cnn.onnx", "rten/small_cnn/small_cnn.v2.rten",
                "tmfile/cnn_small.tmfile", "onnx/concat_reshape_softmax.onnx",
                "tmfile/mlp_matmul_add.tmfile", "rten/shape_ops/shape_ops.onnx"):
        p = vec(rel)
        if not p:
            continue
        res = expect(run("graph", p), 0)
        assert res.stdout.startswith("digraph model {") and res.stdout.rstrip().endswith("}"), res
        nodes, edges = dot_nodes_edges(res.stdout)
        ops = [n for n in nodes if re.fullmatch(r"g0_n\d+", n)]
        nops, nedges = expected_graph(p)
        assert len(ops) == nops and len(set(ops)) == nops, (rel, ops, nops)
        assert len(edges) == nedges, (rel, len(edges), nedges)
        declared = set(nodes)
        for a, b in edges:  # every edge joins drawn nodes
            assert a in declared and b in declared, (rel, a, b)
        joined = {a for a, _ in edges} | {b for _, b in edges}
        assert set(ops) <= joined, (rel, set(ops) - joined)  # no operator left alone
        # -o FILE.dot and -o - write the same
        out = tmp("g.dot")
        expect(run("graph", p, "-o", out), 0)
        with open(out, encoding="utf-8") as f:
            assert f.read() == res.stdout
        assert expect(run("graph", "-o", "-", p), 0).stdout == res.stdout
    p = vec("tmfile/cnn_small.tmfile")
    if p:
        out = expect(run("graph", p), 0).stdout
        assert "kernel 3\u00d73, pads 1" in out and "f32 [1\u00d73\u00d716\u00d716]" in out, out
        assert "shape=invhouse" in out and "shape=house" in out, out
        # all constants as nodes
        nodes, _ = dot_nodes_edges(expect(run("graph", "--constants", p), 0).stdout)
        assert sum(1 for n in nodes if "_c" in n) == 6, nodes
    # tmfile as stored: Const and InputOp nodes are operators with edges
    p = vec("tmfile/concat_reshape_softmax.tmfile")
    if p:
        out = expect(run("graph", "--native", p), 0).stdout
        nodes, edges = dot_nodes_edges(out)
        ops = [n for n in nodes if re.fullmatch(r"g0_n\d+", n)]
        assert len(ops) == 6 and out.count('<b>InputOp</b>') == 2, out
        assert "g0_in" not in out, out  # the InputOp nodes stand for the inputs
        joined = {a for a, _ in edges} | {b for _, b in edges}
        assert set(ops) <= joined, out


def t_graph_subgraph():
    import onnx
    import onnx.numpy_helper
    from onnx import TensorProto as T
    from onnx import helper as h
    then_g = h.make_graph([h.make_node("Add", ["x", "c1"], ["y_then"], name="then_add")],
                          "then_body", [], [h.make_tensor_value_info("y_then", T.FLOAT, [2])],
                          initializer=[onnx.numpy_helper.from_array(np.ones(2, np.float32), "c1")])
    else_g = h.make_graph([h.make_node("Mul", ["x", "x"], ["y_else"], name="else_mul")],
                          "else_body", [], [h.make_tensor_value_info("y_else", T.FLOAT, [2])])
    g = h.make_graph(
        [h.make_node("ReduceSum", ["x"], ["s"], keepdims=0, name="sum"),
         h.make_node("Greater", ["s", "zero"], ["cond"], name="gt"),
         h.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g, name="if")],
        "ifmodel", [h.make_tensor_value_info("x", T.FLOAT, [2])],
        [h.make_tensor_value_info("y", T.FLOAT, [2])],
        initializer=[onnx.numpy_helper.from_array(np.array(0, np.float32), "zero")])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    p = tmp("if.onnx")
    onnx.save(m, p)
    out = expect(run("graph", p), 0).stdout
    assert len(re.findall(r"subgraph cluster_g\d+ \{", out)) == 2, out
    assert 'label="If then_branch"' in out and 'label="If else_branch"' in out, out
    nodes, edges = dot_nodes_edges(out)
    ops = [n for n in nodes if re.fullmatch(r"g\d+_n\d+", n)]
    assert len(ops) == 5 and len(set(ops)) == 5, ops
    # the captured x feeds the subgraph operators from the root's input node,
    # with the edges outside the clusters (dotted)
    assert out.count("g0_in0 -> g1_n0 [style=dotted") == 2, out
    assert out.count("g0_in0 -> g2_n0 [style=dotted") == 1, out
    d = run_json(0, "diff", p, p)
    assert d["graph"]["equal"], d
    # a change inside a subgraph
    m.graph.node[2].attribute[0].g.node[0].op_type = "Sub"  # else_branch's Mul
    p2 = tmp("if2.onnx")
    onnx.save(m, p2)
    d = run_json(1, "diff", p, p2)
    assert any("else_branch" in s and "op Mul vs Sub" in s for s in d["graph"]["first"]), d


def t_graph_render():
    p = vec("rten/small_cnn/small_cnn.onnx")
    if not p:
        return
    assert shutil.which("dot"), "Graphviz's dot is missing: run scripts/install-deps.sh"
    svg, png = tmp("g.svg"), tmp("g.png")
    expect(run("graph", p, "-o", svg), 0)
    with open(svg, encoding="utf-8") as f:
        text = f.read()
    assert "<svg" in text and "Conv" in text and "logits" in text, text[:300]
    expect(run("graph", p, "-o", png), 0)
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    odd = tmp("-odd name.svg")  # a name starting with '-' and a space, no shell
    expect(run("graph", p, "-T", "svg", "-o", odd), 0)
    assert os.path.getsize(odd) > 0
    # no dot on PATH: a clear error naming the Debian package
    env = dict(os.environ, PATH=tmp("nowhere"))
    res = run("graph", p, "-o", tmp("x.svg"), env=env)
    assert res.returncode == 1 and "graphviz" in res.stderr and "dot" in res.stderr, res


def t_graph_escaping():
    """Names, ops, domains and strings with DOT and HTML specials (and a
    control character) stay inside their labels: dot accepts the output."""
    from onnx import TensorProto as T
    from onnx import helper as h
    import onnx
    odd = 'a"b\\c<d>&e\x01' + "x" * 60
    n = h.make_node('My<Op>&"', [odd], ["y"], name=odd, domain='dom"<&>',
                    mode=odd, ratio=0.5, sizes=[1, 2, 3])
    g = h.make_graph([n], "g", [h.make_tensor_value_info(odd, T.FLOAT, ["b\"<&>", 3])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13), h.make_opsetid('dom"<&>', 1)])
    p = tmp("odd.onnx")
    onnx.save(m, p)
    out = expect(run("graph", p), 0).stdout
    assert "<b>My&lt;Op&gt;&amp;&quot; (dom&quot;&lt;&amp;&gt;)</b>" in out, out
    assert "\x01" not in out and "..." in out, out  # cut after 40 characters
    assert shutil.which("dot"), "Graphviz's dot is missing: run scripts/install-deps.sh"
    svg = tmp("odd.svg")
    res = run("graph", p, "-o", svg)
    assert res.returncode == 0 and res.stderr == "", res.stderr


def t_graph_errors():
    p = vec("rten/small_cnn/small_cnn.onnx")
    t = vec("tenbin/rank1_float32.ten")
    if not p or not t:
        return
    res = expect(run("graph", t), 1)
    assert "no model graph" in res.stderr, res
    for args in ((), (p, p), (p, "-T", "gif", "-o", tmp("x.gif")), (p, "-o", tmp("x.txt")),
                 (p, "--rankdir", "XY"), (p, "-T", "svg"), (p, "--bogus")):
        res = run("graph", *args)
        assert res.returncode == 2, f"graph {args}: {res!r}"
    res = expect(run("graph", "--rankdir", "LR", p), 0)
    assert "rankdir=LR;" in res.stdout, res
    expect(run("graph", p, "-o", os.path.join(tmp("nodir"), "x.dot")), 1)


def main():
    for name, fn in sorted((k, v) for k, v in globals().items() if k.startswith("t_")):
        case(name[2:], fn)
    shutil.rmtree(TMP, ignore_errors=True)
    return convtest.summary()


if __name__ == "__main__":
    sys.exit(main())
