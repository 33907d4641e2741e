#!/usr/bin/python3
"""GGUF against an independent implementation.

Usage: test_gguf.py TENSIO_CLI [--write-vectors DIR]

Two independent sides:
  - llama.cpp's gguf-py (pure Python over NumPy), found through $TIO_GGUF_PY
    or /work/scratch/gguf-py (a directory holding the `gguf` package): it
    writes files tensio reads (plain types, KV pairs of every type, quantized
    tensors from its quants.quantize) and reads the files tensio writes, and
    its quants.dequantize is the reference for tensio's --dequantize.
  - this file's own GGUF bytes (built below from ggml's docs/gguf.md) and
    NumPy dequantizers written from ggml's block layouts, which run without
    gguf-py.
Where gguf-py is absent the cases that need it are listed as skipped, by
name, and the rest still run. --write-vectors writes the small files that
tests/vectors/gguf holds (the sweep and the fuzz seeds use them).
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

CLI = sys.argv[1]
FAILED = []
PASSED = []
SKIPPED = []

# ------------------------------------------------------------------ builder

U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f",
          BOOL: "<?", U64: "<Q", I64: "<q", F64: "<d"}
TNAME = {U8: "uint8", I8: "int8", U16: "uint16", I16: "int16", U32: "uint32", I32: "int32",
         F32: "float32", BOOL: "bool", STR: "string", U64: "uint64", I64: "int64",
         F64: "float64"}


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def gvalue(t, v):
    """The bytes of a value of type t (an array: (elem_type, [values]))."""
    if t == STR:
        return gstr(v)
    if t == ARR:
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(gvalue(et, x) for x in items)
    return struct.pack(SCALAR[t], v)


# ggml types: (number, NumPy dtype or None, block elements, block bytes)
GGML = {"F32": (0, "<f4", 1, 4), "F16": (1, "<f2", 1, 2), "Q4_0": (2, None, 32, 18),
        "Q4_1": (3, None, 32, 20), "Q5_0": (6, None, 32, 22), "Q5_1": (7, None, 32, 24),
        "Q8_0": (8, None, 32, 34), "Q8_1": (9, None, 32, 36), "Q2_K": (10, None, 256, 84),
        "Q3_K": (11, None, 256, 110), "Q4_K": (12, None, 256, 144),
        "Q5_K": (13, None, 256, 176), "Q6_K": (14, None, 256, 210),
        "Q8_K": (15, None, 256, 292), "IQ2_XXS": (16, None, 256, 66),
        "IQ4_NL": (20, None, 32, 18), "I8": (24, "<i1", 1, 1), "I16": (25, "<i2", 1, 2),
        "I32": (26, "<i4", 1, 4), "I64": (27, "<i8", 1, 8), "F64": (28, "<f8", 1, 8),
        "BF16": (30, None, 1, 2), "IQ4_XS": (23, None, 256, 136), "TQ1_0": (34, None, 256, 54),
        "TQ2_0": (35, None, 256, 66), "MXFP4": (39, None, 32, 17), "NVFP4": (40, None, 64, 36),
        "Q1_0": (41, None, 128, 18), "Q2_0": (42, None, 64, 18)}
TIO_NAME = {"F32": "float32", "F16": "float16", "BF16": "bfloat16", "F64": "float64",
            "I8": "int8", "I16": "int16", "I32": "int32", "I64": "int64"}


def build(kvs, tensors, version=3, align=32, pad_tail=True):
    """kvs: [(key, type, value)]; tensors: [(name, ggml type name, ne, raw)]."""
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for k, t, v in kvs:
        out += gstr(k) + struct.pack("<I", t) + gvalue(t, v)
    off = 0
    for name, ty, ne, raw in tensors:
        out += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<q", d) for d in ne)
        out += struct.pack("<IQ", GGML[ty][0], off)
        off += len(raw) + (-len(raw)) % align
    if tensors:
        out += b"\0" * ((-len(out)) % align)
    for i, (_, _, _, raw) in enumerate(tensors):
        out += raw
        if pad_tail or i + 1 < len(tensors):
            out += b"\0" * ((-len(raw)) % align)
    return out


def parse(data):
    """An independent reader for what tensio writes: (version, kvs, infos,
    data offset, alignment)."""
    pos = [0]

    def take(fmt):
        v = struct.unpack_from(fmt, data, pos[0])
        pos[0] += struct.calcsize(fmt)
        return v[0]

    def rstr():
        n = take("<Q")
        s = data[pos[0]:pos[0] + n]
        pos[0] += n
        return s.decode()

    def rval(t):
        if t == STR:
            return rstr()
        if t == ARR:
            et, n = take("<I"), take("<Q")
            return (et, [rval(et) for _ in range(n)])
        return take(SCALAR[t])

    assert data[:4] == b"GGUF"
    pos[0] = 4
    version, nt, nkv = take("<I"), take("<Q"), take("<Q")
    kvs = []
    for _ in range(nkv):
        k = rstr()
        t = take("<I")
        kvs.append((k, t, rval(t)))
    align = dict((k, v) for k, _, v in kvs).get("general.alignment", 32)
    infos = []
    for _ in range(nt):
        name = rstr()
        nd = take("<I")
        ne = [take("<q") for _ in range(nd)]
        infos.append((name, ne, take("<I"), take("<Q")))
    data_at = pos[0] + (-pos[0]) % align if nt else pos[0]
    return version, kvs, infos, data_at, align


# ---------------------------------------------------------------- the CLI


def run(*args, ok=True):
    p = subprocess.run([CLI] + list(args), capture_output=True, text=True)
    if ok and p.returncode != 0:
        raise AssertionError("tensio %s failed: %s" % (" ".join(args), p.stderr.strip()))
    return p


def ls(path):
    return json.loads(run("ls", "--json", "--hash", path).stdout)["tensors"]


def info(path):
    return json.loads(run("info", "--json", path).stdout)


def read_safetensors(path):
    """{name: ndarray} of a safetensors file, read here with NumPy."""
    raw = open(path, "rb").read()
    n = struct.unpack_from("<Q", raw)[0]
    head = json.loads(raw[8:8 + n])
    dt = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "I8": "<i1", "I16": "<i2",
          "I32": "<i4", "I64": "<i8", "BF16": "<u2"}
    out = {}
    for k, v in head.items():
        if k == "__metadata__":
            continue
        b, e = v["data_offsets"]
        a = np.frombuffer(raw[8 + n + b:8 + n + e], dtype=dt[v["dtype"]])
        out[k] = a.reshape(v["shape"])
    return out


def case(name):
    def wrap(fn):
        def go(*a):
            try:
                fn(*a)
                PASSED.append(name)
            except Exception as e:  # report every case, fail at the end
                import traceback
                traceback.print_exc()
                FAILED.append("%s: %s" % (name, e))
        go.case_name = name
        return go
    return wrap


# ------------------------------------------------- NumPy dequantizers

def f16(b, at):
    return b[:, at:at + 2].copy().view("<f2").astype(np.float32)[:, 0]


def ref_dequantize(ty, raw):
    """Dequantizes blocks with NumPy, written from ggml's block layouts."""
    with np.errstate(over="ignore"):  # MXFP4's largest scales: inf, as in ggml
        return ref_dequantize_blocks(ty, raw)


def ref_dequantize_blocks(ty, raw):
    _, _, qk, bs = GGML[ty]
    b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, bs)
    nb = b.shape[0]
    y = np.zeros((nb, qk), dtype=np.float32)
    if ty in ("Q4_0", "Q4_1"):
        d = f16(b, 0)[:, None]
        qs = b[:, 4:20] if ty == "Q4_1" else b[:, 2:18]
        q = np.concatenate([qs & 15, qs >> 4], axis=1).astype(np.float32)
        y = (q - 8) * d if ty == "Q4_0" else q * d + f16(b, 2)[:, None]
    elif ty in ("Q5_0", "Q5_1"):
        base = 4 if ty == "Q5_1" else 2
        qh = b[:, base:base + 4].copy().view("<u4")[:, 0]
        qs = b[:, base + 4:base + 20]
        hb = ((qh[:, None] >> np.arange(32, dtype=np.uint32)) & 1).astype(np.int32)
        q = np.concatenate([qs & 15, qs >> 4], axis=1).astype(np.int32) | (hb << 4)
        d = f16(b, 0)[:, None]
        y = (q - 16).astype(np.float32) * d if ty == "Q5_0" else \
            q.astype(np.float32) * d + f16(b, 2)[:, None]
    elif ty == "Q8_0":
        y = b[:, 2:34].view(np.int8).astype(np.float32) * f16(b, 0)[:, None]
    elif ty in ("Q2_K", "Q3_K"):
        for e in range(256):
            n, r = divmod(e, 128)
            j, r = divmod(r, 32)
            h, l = divmod(r, 16)
            k = 16 * h + l
            qoff = 16 if ty == "Q2_K" else 32
            q = ((b[:, qoff + 32 * n + k] >> (2 * j)) & 3).astype(np.int32)
            i = 8 * n + 2 * j + h
            if ty == "Q2_K":
                sc = b[:, i]
                y[:, e] = f16(b, 80) * (sc & 15).astype(np.float32) * q - \
                    f16(b, 82) * (sc >> 4).astype(np.float32)
            else:
                s = b[:, 96:108].astype(np.int32)
                lo = s[:, i] & 15 if i < 8 else s[:, i - 8] >> 4
                hi = (s[:, 8 + i % 4] >> (2 * (i // 4))) & 3
                sc = (lo | (hi << 4)) - 32
                hbit = (b[:, k] >> (4 * n + j)) & 1
                v = q - np.where(hbit == 1, 0, 4)
                y[:, e] = (f16(b, 108) * sc.astype(np.float32)) * v
    elif ty in ("Q4_K", "Q5_K"):
        s = b[:, 4:16].astype(np.int32)

        def smin(j):
            if j < 4:
                return s[:, j] & 63, s[:, j + 4] & 63
            return (s[:, j + 4] & 15) | ((s[:, j - 4] >> 6) << 4), \
                (s[:, j + 4] >> 4) | ((s[:, j] >> 6) << 4)
        d, dmin = f16(b, 0), f16(b, 2)
        qoff = 16 if ty == "Q4_K" else 48
        for j in range(4):
            for half in range(2):
                sc, m = smin(2 * j + half)
                ql = b[:, qoff + 32 * j:qoff + 32 * j + 32].astype(np.int32)
                q = (ql & 15) if half == 0 else (ql >> 4)
                if ty == "Q5_K":
                    q = q + 16 * ((b[:, 16:48].astype(np.int32) >> (2 * j + half)) & 1)
                y[:, 64 * j + 32 * half:64 * j + 32 * half + 32] = \
                    (d * sc.astype(np.float32))[:, None] * q - (dmin * m.astype(np.float32))[:, None]
    elif ty == "Q6_K":
        d = f16(b, 208)
        sc = b[:, 192:208].view(np.int8).astype(np.float32)
        for n in range(2):
            ql = b[:, 64 * n:64 * n + 64].astype(np.int32)
            qh = b[:, 128 + 32 * n:128 + 32 * n + 32].astype(np.int32)
            for l in range(32):
                i = 8 * n + l // 16
                qs = [(ql[:, l] & 15) | ((qh[:, l] & 3) << 4),
                      (ql[:, l + 32] & 15) | (((qh[:, l] >> 2) & 3) << 4),
                      (ql[:, l] >> 4) | (((qh[:, l] >> 4) & 3) << 4),
                      (ql[:, l + 32] >> 4) | (((qh[:, l] >> 6) & 3) << 4)]
                for k in range(4):
                    y[:, 128 * n + 32 * k + l] = d * sc[:, i + 2 * k] * (qs[k] - 32)
    elif ty == "Q8_K":
        y = b[:, 0:4].copy().view("<f4") * b[:, 4:260].view(np.int8).astype(np.float32)
    elif ty in ("IQ4_NL", "IQ4_XS", "MXFP4"):
        lv = FP4_TWICE if ty == "MXFP4" else IQ4_LEVELS
        if ty == "IQ4_NL":
            d, groups = f16(b, 0)[:, None], [b[:, 2:18]]
        elif ty == "MXFP4":  # E8M0, halved: 2^(e - 128)
            d = np.ldexp(np.float32(1), b[:, 0].astype(np.int32) - 128).astype(np.float32)
            d, groups = d[:, None], [b[:, 1:17]]
        else:
            sh = b[:, 2:4].copy().view("<u2")[:, 0].astype(np.int32)
            sl = b[:, 4:8].astype(np.int32)
            sc = [((sl[:, g // 2] >> (4 * (g % 2))) & 15) | (((sh >> (2 * g)) & 3) << 4)
                  for g in range(8)]
            d = np.stack([f16(b, 0) * (v - 32).astype(np.float32) for v in sc], axis=1)
            groups = [b[:, 8 + 16 * g:24 + 16 * g] for g in range(8)]
        y = np.concatenate([d[:, g:g + 1] * lv[np.concatenate([q & 15, q >> 4], axis=1)]
                            for g, q in enumerate(groups)], axis=1)
    elif ty == "NVFP4":  # UE4M3, halved; 0 and 0x7F are 0, the top bit ignored
        x = b[:, 0:4].astype(np.int32)
        ex, man = (x >> 3) & 15, x & 7
        d = np.where(ex > 0, (8 + man).astype(np.float32) * np.ldexp(np.float32(1), ex - 11),
                     man.astype(np.float32) * np.float32(2.0 ** -10)).astype(np.float32)
        d = np.where((x == 0) | (x == 0x7F), np.float32(0), d).astype(np.float32)
        y = np.concatenate([d[:, s:s + 1] * FP4_TWICE[np.concatenate(
            [b[:, 4 + 8 * s:12 + 8 * s] & 15, b[:, 4 + 8 * s:12 + 8 * s] >> 4], axis=1)]
            for s in range(4)], axis=1)
    elif ty in ("TQ1_0", "TQ2_0"):
        vals = []
        if ty == "TQ1_0":  # base-3 digits: digit n of byte q is ((q * 3^n mod 256) * 3) >> 8
            for lo, hi, digits in ((0, 32, 5), (32, 48, 5), (48, 52, 4)):
                for n in range(digits):
                    q = (b[:, lo:hi].astype(np.int32) * 3 ** n) & 255
                    vals.append(((q * 3) >> 8) - 1)
            d = f16(b, 52)
        else:
            for j in (0, 32):
                for sh in range(4):
                    vals.append(((b[:, j:j + 32].astype(np.int32) >> (2 * sh)) & 3) - 1)
            d = f16(b, 64)
        y = np.concatenate(vals, axis=1).astype(np.float32) * d[:, None]
    elif ty == "Q1_0":
        bits = np.unpackbits(b[:, 2:18], axis=1, bitorder="little")
        d = f16(b, 0)[:, None]
        y = np.where(bits == 1, d, -d)
    elif ty == "Q2_0":
        q = (b[:, 2:18, None].astype(np.int32) >> (2 * np.arange(4))) & 3
        y = (q.reshape(nb, 64) - 1).astype(np.float32) * f16(b, 0)[:, None]
    else:
        raise ValueError(ty)
    return np.asarray(y, dtype=np.float32).reshape(-1)


IQ4_LEVELS = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113],
                      dtype=np.float32)
FP4_TWICE = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], dtype=np.float32)


def random_blocks(ty, nblocks, rng):
    """Random blocks whose fp16 fields are finite, modest values."""
    _, _, _, bs = GGML[ty]
    b = rng.integers(0, 256, size=(nblocks, bs), dtype=np.uint8)
    halves = {"Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0],
              "Q8_1": [0, 2], "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2],
              "Q5_K": [0, 2], "Q6_K": [208], "IQ2_XXS": [0], "IQ4_NL": [0], "IQ4_XS": [0],
              "TQ1_0": [52], "TQ2_0": [64], "Q1_0": [0], "Q2_0": [0]}.get(ty, [])
    for at in halves:
        v = rng.uniform(-2, 2, size=nblocks).astype("<f2")
        b[:, at:at + 2] = v.view(np.uint8).reshape(nblocks, 2)
    if ty == "Q8_K":  # its d is a float32
        b[:, 0:4] = rng.uniform(-2, 2, size=nblocks).astype("<f4").view(np.uint8).reshape(-1, 4)
    return b.tobytes()


# -------------------------------------------------------------- the cases

ALL_KVS = [
    ("general.architecture", STR, "llama"),
    ("t.u8", U8, 200), ("t.i8", I8, -100), ("t.u16", U16, 60000), ("t.i16", I16, -30000),
    ("t.u32", U32, 4000000000), ("t.i32", I32, -2000000000),
    ("t.u64", U64, 2 ** 64 - 1), ("t.i64", I64, -2 ** 63), ("t.f32", F32, 0.1),
    ("t.f64", F64, 1e-300), ("t.bool", BOOL, True), ("t.str", STR, "héllo \"x\"\n"),
    ("t.arr_str", ARR, (STR, ["a", "b\"c", "", "\x01"])),
    ("t.arr_f32", ARR, (F32, [1.5, -0.25, 3.4028234663852886e38])),
    ("t.arr_i64", ARR, (I64, [1, -2, 3])), ("t.arr_bool", ARR, (BOOL, [True, False])),
    ("t.arr_empty", ARR, (U8, [])),
    ("t.nested", ARR, (ARR, [(I32, [1, 2]), (I32, [])])),
    ("t.long", ARR, (I32, list(range(1000, 1100)))),
]
KV_TYPES = {"t.u8": "uint8", "t.i8": "int8", "t.u16": "uint16", "t.i16": "int16",
            "t.u32": "uint32", "t.i32": "int32", "t.u64": "uint64", "t.i64": "int64",
            "t.f32": "float32", "t.f64": "float64", "t.bool": "bool", "t.str": "string",
            "t.arr_str": "array[string]", "t.arr_f32": "array[float32]",
            "t.arr_i64": "array[int64]", "t.arr_bool": "array[bool]",
            "t.arr_empty": "array[uint8]", "t.nested": "array[array[int32]]"}


def plain_tensors(rng):
    out = []
    shapes = {"F32": [3, 2], "F16": [5], "BF16": [4, 1, 2], "F64": [2, 2, 2, 2],
              "I8": [7], "I16": [3, 3], "I32": [1], "I64": [2, 3]}
    for ty, ne in shapes.items():
        n = int(np.prod(ne))
        if ty == "BF16":
            raw = rng.integers(0, 65536, size=n, dtype=np.uint16).astype("<u2")
            raw[(raw & 0x7f80) == 0x7f80] = 0  # no NaN/inf patterns
        elif ty.startswith("F"):
            raw = rng.standard_normal(n).astype(GGML[ty][1])
        else:
            raw = rng.integers(-100, 100, size=n).astype(GGML[ty][1])
        out.append(("t_" + ty.lower(), ty, ne, raw.tobytes()))
    return out


@case("plain_types_shapes_kv")
def test_plain(tmp, rng):
    tensors = plain_tensors(rng)
    path = os.path.join(tmp, "plain.gguf")
    open(path, "wb").write(build(ALL_KVS, tensors))
    got = ls(path)
    assert len(got) == len(tensors)
    for t, (name, ty, ne, raw) in zip(got, tensors):
        assert t["name"] == name, t
        assert t["dtype"] == TIO_NAME[ty], (t, ty)
        assert t["shape"] == list(reversed(ne)), (t, ne)  # row-major: ne reversed
        assert t["layout"] == "dense"
        assert t["nbytes"] == len(raw)
        import hashlib
        assert t["sha256"] == hashlib.sha256(raw).hexdigest()
    inf = info(path)
    meta, types = inf["metadata"], inf["metadata_types"]
    assert meta["t.u64"] == str(2 ** 64 - 1) and meta["t.i64"] == str(-2 ** 63)
    assert meta["t.f32"] == "0.1" and meta["t.bool"] == "true"
    assert meta["t.str"] == "héllo \"x\"\n"
    assert json.loads(meta["t.arr_str"]) == ["a", "b\"c", "", "\x01"]
    # float32 text is the shortest that reads back to the same float32
    assert np.array_equal(np.array(json.loads(meta["t.arr_f32"]), dtype=np.float32),
                          np.array([1.5, -0.25, 3.4028234663852886e38], dtype=np.float32))
    assert json.loads(meta["t.nested"]) == [[1, 2], []]
    for k, ty in KV_TYPES.items():
        assert types[k] == ty, (k, types[k], ty)
    # values: through safetensors, read here with NumPy
    st = os.path.join(tmp, "plain.safetensors")
    run("convert", path, st)
    arrays = read_safetensors(st)
    for name, ty, ne, raw in tensors:
        dt = "<u2" if ty == "BF16" else GGML[ty][1]
        want = np.frombuffer(raw, dtype=dt).reshape(list(reversed(ne)))
        assert np.array_equal(arrays[name], want), name
    # and the text of `info` shows the pairs and abbreviates nothing short
    text = run("info", path).stdout
    assert "t.arr_str (array[string]) = " in text and "t.u8 (uint8) = 200" in text
    assert "t.long (array[int32]) = [1000,1001," in text and "... (100 elements)" in text
    assert "1099" not in text  # abbreviated


@case("gguf_to_gguf_byte_equal")
def test_roundtrip(tmp, rng):
    files = {
        "v3": build(ALL_KVS, plain_tensors(rng)),
        "v2": build(ALL_KVS[:3], plain_tensors(rng), version=2),
        "align64": build([("general.alignment", U32, 64)] + ALL_KVS[1:4],
                         plain_tensors(rng), align=64),
        "quant": build([("general.architecture", STR, "x")],
                       [("q%d" % i, ty, [GGML[ty][2] * 2, 3], random_blocks(ty, 6, rng))
                        for i, ty in enumerate(["Q4_0", "Q8_1", "Q4_K", "IQ2_XXS", "TQ2_0",
                                                "Q6_K", "IQ4_NL", "Q8_K"])]),
        "no_tensors": build(ALL_KVS, []),
        "empty": build([], []),
    }
    for name, data in files.items():
        src = os.path.join(tmp, name + ".gguf")
        dst = os.path.join(tmp, name + ".out.gguf")
        open(src, "wb").write(data)
        run("convert", src, dst)
        assert open(dst, "rb").read() == data, name
    # a file without the last tensor's padding reads, and is written padded
    data = build(ALL_KVS[:2], plain_tensors(rng)[:1], pad_tail=False)
    src = os.path.join(tmp, "nopad.gguf")
    open(src, "wb").write(data)
    run("convert", src, os.path.join(tmp, "nopad.out.gguf"))
    out = open(os.path.join(tmp, "nopad.out.gguf"), "rb").read()
    assert out[:len(data)] == data and len(out) % 32 == 0 and not any(out[len(data):])


@case("empty_tensor_name")
def test_empty_name(tmp, rng):
    # A tensor info whose name has length 0, as gguf-py's GGUFWriter writes
    # add_tensor("", a) (gguf-py is not in Debian: the bytes are built here);
    # ggml's gguf reader takes it (it refuses only names of GGML_MAX_NAME or
    # more bytes and duplicates). It is the empty name, not an unnamed tensor.
    raw = np.arange(4, dtype="<f4").tobytes()
    data = build([("general.architecture", STR, "x")],
                 [("", "F32", [4], raw), ("b", "F32", [4], raw)])
    src = os.path.join(tmp, "empty_name.gguf")
    open(src, "wb").write(data)
    got = ls(src)
    assert [t["name"] for t in got] == ["", "b"], got
    text = run("ls", src).stdout.splitlines()
    assert text[1].split()[:2] == ["0", '""'], text  # shown, not "-" (unnamed)
    dst = os.path.join(tmp, "empty_name.out.gguf")
    run("convert", src, dst)
    assert open(dst, "rb").read() == data
    # through safetensors (which holds "") and back: still the empty name
    st = os.path.join(tmp, "empty_name.safetensors")
    run("convert", src, st)
    assert sorted(read_safetensors(st)) == ["", "b"]
    # --only '' selects it, --rename =x renames it
    assert [t["name"] for t in json.loads(run("ls", "--json", "--only", "", src).stdout)
            ["tensors"]] == [""]
    assert [t["name"] for t in json.loads(run("ls", "--json", "--rename", "=x", src).stdout)
            ["tensors"]] == ["x", "b"]


@case("nul_in_string_values")
def test_nul_values(tmp, rng):
    # String values holding NUL bytes, as gguf-py's GGUFWriter writes a str
    # with "\0" (its length, then the UTF-8 bytes; gguf-py is not in Debian:
    # the bytes are built here); ggml keeps the length (std::string).
    kvs = [("general.architecture", STR, "x"), ("t.nul", STR, b"a\0b\0"),
           ("t.arr", ARR, (STR, [b"\0", b"c"]))]
    data = build(kvs, [("w", "F32", [2], np.ones(2, "<f4").tobytes())])
    src = os.path.join(tmp, "nul.gguf")
    open(src, "wb").write(data)
    inf = info(src)
    assert inf["metadata"]["t.nul"] == "a\0b\0", inf["metadata"]
    assert json.loads(inf["metadata"]["t.arr"]) == ["\0", "c"]
    assert inf["metadata_types"]["t.nul"] == "string"
    text = run("info", src).stdout
    assert "t.nul (string) = a\\x00b\\x00\n" in text, text
    dst = os.path.join(tmp, "nul.out.gguf")
    run("convert", src, dst)
    assert open(dst, "rb").read() == data
    # a format whose strings cannot hold NUL refuses it by key; dropped, it goes
    st = os.path.join(tmp, "nul.safetensors")
    p = run("convert", src, st, ok=False)
    assert p.returncode == 1 and '"t.nul" whose value holds a NUL byte' in p.stderr, p.stderr
    run("convert", "--drop-metadata", src, st)
    # a length past the end of the file, with NUL bytes before it
    bad = data[:data.index(b"a\0b\0")] + b"a\0"
    p = run("ls", write(tmp, "nul_cut.gguf", bad), ok=False)
    assert p.returncode != 0 and "string bytes" in p.stderr, p.stderr


def write(tmp, name, data):
    path = os.path.join(tmp, name)
    open(path, "wb").write(data)
    return path


DEQ = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K",
       "IQ4_NL", "IQ4_XS", "TQ1_0", "TQ2_0", "MXFP4", "NVFP4", "Q1_0", "Q2_0"]


@case("dequantize_vs_numpy_reference")
def test_dequantize(tmp, rng):
    tensors = []
    for ty in DEQ:
        qk = GGML[ty][2]
        ne = [qk * 2, 3]
        tensors.append(("w_" + ty.lower(), ty, ne, random_blocks(ty, 6, rng)))
    path = os.path.join(tmp, "quant.gguf")
    open(path, "wb").write(build([], tensors))
    got = ls(path)
    for t, (name, ty, ne, raw) in zip(got, tensors):
        assert t["dtype"] == ty.lower().replace("_k", "_K"), t
        assert t["layout"] == "quant" and t["shape"] == [3, ne[0]] and t["nbytes"] == len(raw)
    st = os.path.join(tmp, "quant.safetensors")
    p = run("convert", path, st, ok=False)
    assert p.returncode != 0 and "quantized" in p.stderr and "--dequantize" in p.stderr, p.stderr
    run("convert", path, st, "--dequantize")
    arrays = read_safetensors(st)
    for name, ty, ne, raw in tensors:
        want = ref_dequantize(ty, raw).reshape(3, ne[0])
        got = arrays[name]
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=2e-7, atol=1e-30, err_msg=ty)
    # dump prints the same values: all of them, and the first 40 (a part of the
    # second block: only the blocks shown are dequantized)
    for limit in ("0", "40"):
        d = json.loads(run("dump", "--json", "-n", limit, path).stdout)["tensors"]
        for t, (name, ty, ne, raw) in zip(d, tensors):
            want = ref_dequantize(ty, raw)
            n = len(want) if limit == "0" else 40
            assert t["name"] == name and t["dtype"] == "float32" and t["layout"] == "quant"
            assert t["quant"] == ty.lower().replace("_k", "_K")
            assert t["truncated"] == (n < len(want)) and len(t["values"]) == n
            np.testing.assert_allclose(np.array(t["values"], dtype=np.float32), want[:n],
                                       rtol=2e-7, atol=1e-30, err_msg=ty)
    text = run("dump", "-n", "3", path, "w_q4_k").stdout
    assert text.startswith("[7] w_q4_k q4_K [3, 512] quantized, values dequantized to float32"), text


@case("dequantize_bit_exact")
def test_dequantize_exact(tmp, rng):
    """The types whose NumPy dequantizer above makes ggml's float operations in
    ggml's order: tensio's values bit for bit, over every value of the scale
    bytes (MXFP4's E8M0 0..255: 2^-128 .. 2^127, never NaN as ggml reads it;
    NVFP4's UE4M3 0..255: 0x7F and 0x80 are 0, the top bit ignored) and
    negative scales, where a zero keeps d's sign (Q5_0's (q - 16) d: -0)."""
    types = ["Q5_0", "Q8_K", "IQ4_NL", "IQ4_XS", "TQ1_0", "TQ2_0", "MXFP4", "NVFP4", "Q1_0",
             "Q2_0"]
    tensors = []
    for ty in types:
        _, _, qk, bs = GGML[ty]
        b = np.frombuffer(random_blocks(ty, 256, rng), dtype=np.uint8).reshape(256, bs).copy()
        if ty == "MXFP4":
            b[:, 0] = np.arange(256)
        elif ty == "NVFP4":
            b[:, 0:4] = np.arange(1024).reshape(256, 4) % 256
        elif ty == "Q5_0":  # d < 0, and q = 16 in element 0 of every block
            b[:, 0:2] = np.full(256, -0.75, "<f2").view(np.uint8).reshape(256, 2)
            b[:, 2] |= 1
            b[:, 6] &= 0xF0
        tensors.append(("x_" + ty.lower(), ty, [qk, 256], b.tobytes()))
    path = os.path.join(tmp, "exact.gguf")
    open(path, "wb").write(build([], tensors))
    st = os.path.join(tmp, "exact.safetensors")
    run("convert", path, st, "--dequantize")
    arrays = read_safetensors(st)
    for name, ty, ne, raw in tensors:
        want = ref_dequantize(ty, raw)
        got = arrays[name].reshape(-1)
        assert not np.isnan(want).any(), ty
        bad = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
        assert bad.size == 0, "%s: %d values differ, first at %d: %r, want %r" % (
            ty, bad.size, bad[0], got[bad[0]], want[bad[0]])
        if ty == "Q5_0":
            assert (np.signbit(got[::32]) & (got[::32] == 0)).all(), "Q5_0: -0 lost"
        if ty == "MXFP4":
            assert np.isinf(got).any() and (got[np.isfinite(got)] != 0).any()
    # the vector of these types (the sweep's and the fuzzer's seed): every
    # tensor's values from its own blocks, bit for bit
    vec = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vectors", "gguf",
                       "quant_more.gguf")
    data = open(vec, "rb").read()
    _, _, infos, data_at, _ = parse(data)
    number = {v[0]: k for k, v in GGML.items()}
    st = os.path.join(tmp, "vec.safetensors")
    run("convert", vec, st, "--dequantize")
    arrays = read_safetensors(st)
    assert sorted(number[t] for _, _, t, _ in infos) == sorted(types[1:]), infos
    for name, ne, t, off in infos:
        _, _, qk, bs = GGML[number[t]]
        raw = data[data_at + off:data_at + off + ne[1] * ne[0] // qk * bs]
        want = ref_dequantize(number[t], raw)
        assert np.array_equal(arrays[name].reshape(-1).view(np.uint32), want.view(np.uint32)), name


@case("dequantize_refuses_by_name")
def test_refuse(tmp, rng):
    path = os.path.join(tmp, "iq.gguf")
    open(path, "wb").write(build([], [("iq", "IQ2_XXS", [256], random_blocks("IQ2_XXS", 1, rng))]))
    p = run("convert", path, os.path.join(tmp, "iq.npy"), "--dequantize", ok=False)
    assert p.returncode != 0 and "iq2_xxs" in p.stderr and "iq" in p.stderr, p.stderr
    # dump: the tensor asked for is an error; in the whole file, a note
    p = run("dump", path, "iq", ok=False)
    assert p.returncode != 0 and "iq2_xxs" in p.stderr and "cannot dequantize" in p.stderr, p.stderr
    p = run("dump", path)
    assert "(iq2_xxs blocks: tensio cannot dequantize them" in p.stdout, p.stdout
    d = json.loads(run("dump", "--json", path).stdout)["tensors"]
    assert d[0]["quant"] == "iq2_xxs" and d[0]["values"] is None, d


@case("other_formats_to_gguf")
def test_from_safetensors(tmp, rng):
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = np.arange(5, dtype=np.int64)
    np_path = os.path.join(tmp, "a.npy")
    np.save(np_path, a)
    out = os.path.join(tmp, "a.gguf")
    run("convert", np_path, out)  # .npy has no names: tensor 0 is named "0"
    version, kvs, infos, data_at, align = parse(open(out, "rb").read())
    assert version == 3 and kvs == [] and align == 32
    assert infos == [("0", [4, 3, 2], 0, 0)], infos
    raw = open(out, "rb").read()
    assert raw[data_at:data_at + a.nbytes] == a.tobytes() and data_at % 32 == 0
    # safetensors with metadata: string KV pairs, tensors in container order
    st = os.path.join(tmp, "b.safetensors")
    head = {"__metadata__": {"k": "v"},
            "b": {"dtype": "I64", "shape": [5], "data_offsets": [0, 40]},
            "a": {"dtype": "F32", "shape": [2, 3, 4], "data_offsets": [40, 136]}}
    h = json.dumps(head).encode()
    h += b" " * ((-len(h)) % 8)
    open(st, "wb").write(struct.pack("<Q", len(h)) + h + b.tobytes() + a.tobytes())
    out = os.path.join(tmp, "b.gguf")
    run("convert", st, out)
    version, kvs, infos, data_at, align = parse(open(out, "rb").read())
    assert kvs == [("k", STR, "v")], kvs
    names = [i[0] for i in infos]
    assert sorted(names) == ["a", "b"]
    for name, ne, ty, off in infos:
        arr = {"a": a, "b": b}[name]
        assert ne == list(reversed(arr.shape)) and off % 32 == 0
        assert open(out, "rb").read()[data_at + off:data_at + off + arr.nbytes] == arr.tobytes()
    # and back: the same arrays
    back = os.path.join(tmp, "b2.safetensors")
    run("convert", out, back)
    arrays = read_safetensors(back)
    assert np.array_equal(arrays["a"], a) and np.array_equal(arrays["b"], b)


@case("file_type_follows_cast_and_dequantize")
def test_file_type(tmp, rng):
    """general.file_type (a uint32 llama_ftype, 'the type of the majority of
    the tensors') is rewritten where a cast or a dequantization changed the
    tensors' types and every tensor is then F32, F16 or BF16 (by the
    elements each holds); kept where nothing changed, where a quantized
    tensor stays, and where the key is not a uint32."""
    m16 = rng.standard_normal((64, 32)).astype(np.float16)
    m32 = rng.standard_normal((64, 32)).astype(np.float32)
    norm = rng.standard_normal(32).astype(np.float32)
    ids = np.arange(8, dtype=np.int32)
    q = random_blocks("Q4_0", 64, rng)

    def ftype(path):
        return [(t, v) for k, t, v in parse(open(path, "rb").read())[1] if k == "general.file_type"]

    def model(name, ft, big, ftt=U32):
        kvs = [("general.name", STR, "m"), ("general.file_type", ftt, ft), ("x.after", U32, 7)]
        ts = [big, ("norm", "F32", [32], norm.tobytes()), ("ids", "I32", [8], ids.tobytes())]
        return write(tmp, name, build(kvs, ts))

    f16 = model("f16.gguf", 1, ("w", "F16", [32, 64], m16.tobytes()))
    f32 = model("f32.gguf", 0, ("w", "F32", [32, 64], m32.tobytes()))
    q40 = model("q40.gguf", 2, ("w", "Q4_0", [32, 64], q))
    s16 = model("s16.gguf", "1", ("w", "F16", [32, 64], m16.tobytes()), STR)
    cases = [
        (f16, [], 1), (f16, ["--cast", "float32"], 0), (f16, ["--cast", "bfloat16"], 32),
        (f16, ["--cast", "float16"], 1),         # the norm cast, the matrix the majority
        (f16, ["--cast", "float16=float32"], 0),  # the matrix widened: F32 holds the most
        (f32, ["--cast", "float16"], 1), (f32, ["--cast", "float64"], 0),  # no ftype names F64
        (q40, ["--dequantize"], 0), (q40, ["--cast", "float16"], 2),
        (q40, ["--dequantize", "--cast", "bfloat16"], 32),
    ]
    for src, args, want in cases:
        out = os.path.join(tmp, "ft_out.gguf")
        run("convert", "--force", src, out, *args)
        assert ftype(out) == [(U32, want)], (src, args, ftype(out))
        kvs = parse(open(out, "rb").read())[1]
        assert [k for k, _, _ in kvs] == ["general.name", "general.file_type", "x.after"], kvs
        if not args:
            assert open(out, "rb").read() == open(src, "rb").read()
        if args == ["--dequantize"]:  # into GGUF too: F32, ggml's values
            raw = open(out, "rb").read()
            _, _, infos, data_at, _ = parse(raw)
            assert infos[0][:3] == ("w", [32, 64], GGML["F32"][0]), infos
            at = data_at + infos[0][3]
            got = np.frombuffer(raw[at:at + 64 * 32 * 4], dtype="<f4")
            assert np.array_equal(got, ref_dequantize("Q4_0", q)), "dequantized values"
    out = os.path.join(tmp, "ft_out.gguf")
    run("convert", "--force", s16, out, "--cast", "float32")
    assert ftype(out) == [(STR, "1")], ftype(out)


# ------------------------------------------------------- gguf-py's side


def find_gguf_py():
    for d in [os.environ.get("TIO_GGUF_PY"), "/work/scratch/gguf-py"]:
        if d and os.path.isdir(os.path.join(d, "gguf")):
            sys.path.insert(0, d)
            try:
                import sentencepiece  # noqa: F401  (gguf-py's vocab.py imports it)
            except ImportError:  # only its tokenizer loader uses it: a stand-in
                import types
                stub = types.ModuleType("sentencepiece")
                stub.SentencePieceProcessor = None
                sys.modules["sentencepiece"] = stub
            try:
                import gguf  # noqa: F401
                return gguf
            except Exception as e:  # a broken copy is a failure, not a skip
                FAILED.append("gguf-py at %s does not import: %s" % (d, e))
                return None
    return None


GGUF_PY_CASES = ["gguf_py_writes_plain", "gguf_py_writes_quantized", "gguf_py_reads_tensio"]


def gguf_py_cases(gguf, tmp, rng):
    @case("gguf_py_writes_plain")
    def writes_plain():
        path = os.path.join(tmp, "py_plain.gguf")
        w = gguf.GGUFWriter(path, "llama")
        w.add_uint8("t.u8", 7)
        w.add_int32("t.i32", -5)
        w.add_float32("t.f32", 0.5)
        w.add_bool("t.bool", True)
        w.add_string("t.str", "s")
        w.add_array("t.arr", [1, 2, 3])
        arrays = {"f32": rng.standard_normal((3, 4)).astype(np.float32),
                  "f16": rng.standard_normal((2, 8)).astype(np.float16),
                  "i32": np.arange(6, dtype=np.int32).reshape(2, 3)}
        for k, v in arrays.items():
            w.add_tensor(k, v)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        got = {t["name"]: t for t in ls(path)}
        for k, v in arrays.items():
            assert got[k]["shape"] == list(v.shape) and got[k]["dtype"] == str(v.dtype)
        meta = info(path)["metadata_types"]
        assert meta["t.u8"] == "uint8" and meta["t.arr"].startswith("array[")
        out = os.path.join(tmp, "py_plain.out.gguf")
        run("convert", path, out)
        assert open(out, "rb").read() == open(path, "rb").read()

    @case("gguf_py_writes_quantized")
    def writes_quantized():
        path = os.path.join(tmp, "py_quant.gguf")
        w = gguf.GGUFWriter(path, "llama")
        x = rng.standard_normal((4, 512)).astype(np.float32)
        done = []
        for ty in DEQ:
            qt = getattr(gguf.GGMLQuantizationType, ty)
            try:
                q = gguf.quants.quantize(x, qt)
                how = "quantized"
            except NotImplementedError:  # no quantizer in gguf-py: crafted blocks
                q = np.frombuffer(random_blocks(ty, 4 * 512 // GGML[ty][2], rng),
                                  dtype=np.uint8).reshape(4, -1)
                how = "crafted"
            w.add_tensor("w_" + ty.lower(), q, raw_dtype=qt)
            done.append((ty, qt, q, how))
        print("gguf-py blocks: " + ", ".join("%s (%s)" % (d[0], d[3]) for d in done))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        st = os.path.join(tmp, "py_quant.safetensors")
        run("convert", path, st, "--dequantize")
        arrays = read_safetensors(st)
        for ty, qt, q, _ in done:
            want = gguf.quants.dequantize(q, qt).astype(np.float32)
            mine = ref_dequantize(ty, q.tobytes()).reshape(want.shape)
            assert np.allclose(want, mine, rtol=1e-6, atol=1e-30), \
                "%s: gguf-py and this file's NumPy dequantizers differ" % ty
            np.testing.assert_allclose(arrays["w_" + ty.lower()], want, rtol=2e-7,
                                       atol=1e-30, err_msg=ty)

    @case("gguf_py_reads_tensio")
    def reads_tensio():
        a = rng.standard_normal((2, 3, 4)).astype(np.float32)
        np_path = os.path.join(tmp, "r.npy")
        np.save(np_path, a)
        out = os.path.join(tmp, "r.gguf")
        run("convert", np_path, out)
        r = gguf.GGUFReader(out)
        (t,) = r.tensors
        assert t.name == "0" and list(t.shape) == [4, 3, 2]
        assert np.array_equal(np.asarray(t.data).reshape(2, 3, 4), a)
        src = os.path.join(tmp, "rq.gguf")
        open(src, "wb").write(build(ALL_KVS[:-1], [("q", "Q4_K", [256, 2],
                                                      random_blocks("Q4_K", 2, rng))]))
        out = os.path.join(tmp, "rq.out.gguf")
        run("convert", src, out)
        r = gguf.GGUFReader(out)
        assert r.fields["t.u64"].parts[-1][0] == 2 ** 64 - 1
        (t,) = r.tensors
        assert t.tensor_type == gguf.GGMLQuantizationType.Q4_K

    writes_plain()
    writes_quantized()
    reads_tensio()


def write_vectors(d, rng):
    os.makedirs(d, exist_ok=True)
    files = {
        "plain.gguf": build(ALL_KVS, plain_tensors(rng)),
        "v2_align64.gguf": build([("general.alignment", U32, 64)], plain_tensors(rng)[:3],
                                 version=2, align=64),
        "quant.gguf": build([("general.architecture", STR, "x")],
                            [("q_" + ty.lower(), ty, [GGML[ty][2], 1], random_blocks(ty, 1, rng))
                             for ty in DEQ[:10] + ["IQ2_XXS"]]),
        "kv_only.gguf": build(ALL_KVS, []),
    }
    # the types dequantized since (2026-12-04), two blocks each: a file of its
    # own, so that quant.gguf stays as the tests that use it know it
    files["quant_more.gguf"] = build(
        [("general.architecture", STR, "x")],
        [("q_" + ty.lower(), ty, [GGML[ty][2], 2], random_blocks(ty, 2, rng)) for ty in DEQ[10:]])
    for k, v in files.items():
        open(os.path.join(d, k), "wb").write(v)


def main():
    rng = np.random.default_rng(19)
    if "--write-vectors" in sys.argv:
        write_vectors(sys.argv[sys.argv.index("--write-vectors") + 1], rng)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        for fn in [test_plain, test_roundtrip, test_dequantize, test_dequantize_exact, test_refuse,
                   test_from_safetensors, test_empty_name, test_nul_values, test_file_type]:
            fn(tmp, rng)
        gguf = find_gguf_py()
        if gguf is not None:
            gguf_py_cases(gguf, tmp, rng)
        else:
            SKIPPED.extend(GGUF_PY_CASES)
            print("SKIPPED (gguf-py absent: set TIO_GGUF_PY to a directory holding the "
                  "gguf package, or extract it to /work/scratch/gguf-py): " +
                  ", ".join(GGUF_PY_CASES))
    for f in FAILED:
        print("FAILED: " + f)
    print("%d passed, %d failed, %d skipped" % (len(PASSED), len(FAILED), len(SKIPPED)))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
