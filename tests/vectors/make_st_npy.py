#!/usr/bin/python3
"""Writes the small safetensors and .npy vectors (tests/vectors/safetensors,
tests/vectors/npy). Run with Debian's /usr/bin/python3 (numpy).

safetensors: no reference writer runs here (the Rust crate is not built), so
the files are laid out by hand from the format's spec (the crate's README
"Format" section and safetensors/src/tensor.rs): tensors sorted by dtype
descending in the crate's Dtype order, then by name; compact JSON with
__metadata__ first; spaces up to a multiple of 8. The first three are the
byte arrays of the crate's own unit tests.
.npy: written by NumPy itself (np.save, np.lib.format.write_array)."""
import io
import json
import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ORDER = ["BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0",
         "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "C64",
         "F64", "I64", "U64"]


def st_file(tensors, metadata=None):
    """tensors: {name: (dtype, shape, bytes)} -> the reference writer's bytes."""
    items = sorted(tensors.items(), key=lambda kv: (-ORDER.index(kv[1][0]), kv[0].encode()))
    head, buf = [], b""
    if metadata:
        head.append('"__metadata__":' + json.dumps(dict(sorted(metadata.items())),
                                                   separators=(",", ":"), ensure_ascii=False))
    for name, (dt, shape, data) in items:
        head.append(json.dumps(name, ensure_ascii=False) + ':{"dtype":"%s","shape":[%s],'
                    '"data_offsets":[%d,%d]}' % (dt, ",".join(map(str, shape)), len(buf),
                                                 len(buf) + len(data)))
        buf += data
    h = ("{" + ",".join(head) + "}").encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + buf


def write(path, data):
    with open(os.path.join(HERE, path), "wb") as f:
        f.write(data)


def main():
    os.makedirs(os.path.join(HERE, "safetensors"), exist_ok=True)
    os.makedirs(os.path.join(HERE, "npy"), exist_ok=True)
    f32 = np.arange(6, dtype="<f4").tobytes()
    write("safetensors/crate_serialization.safetensors",
          st_file({"attn.0": ("F32", [1, 2, 3], f32)}))
    write("safetensors/crate_forced_alignment.safetensors",
          st_file({"attn0": ("F32", [1, 1, 2, 3], f32)}))
    write("safetensors/crate_empty_metadata.safetensors", st_file({}, {"framework": "pt"}))
    r = np.random.default_rng(19)
    t = {
        "embed.weight": ("F16", [4, 3], r.standard_normal((4, 3)).astype("<f2").tobytes()),
        "ln.bias": ("BF16", [3], bytes([0x80, 0x3f, 0x00, 0x40, 0x40, 0xc0])),
        "ids": ("I64", [5], np.arange(5, dtype="<i8").tobytes()),
        "mask": ("BOOL", [2, 2], bytes([1, 0, 0, 1])),
        "scale": ("F64", [], struct.pack("<d", 0.125)),
        "q8": ("I8", [3], bytes([0xff, 0, 1])),
        "u16": ("U16", [2], struct.pack("<2H", 1, 65535)),
        "u32": ("U32", [1], struct.pack("<I", 7)),
        "u64": ("U64", [1], struct.pack("<Q", 2**63)),
        "i16": ("I16", [1], struct.pack("<h", -3)),
        "i32": ("I32", [2, 0], b""),
        "bytes": ("U8", [3], b"abc"),
        "f8a": ("F8_E4M3", [4], bytes([0x38, 0xc0, 0x7e, 0x01])),
        "f8b": ("F8_E5M2", [4], bytes([0x3c, 0x7b, 0xfc, 0x01])),
        "w\u00e9\"\\": ("F32", [2], np.array([1.5, -2], "<f4").tobytes()),
    }
    write("safetensors/all_dtypes.safetensors",
          st_file(t, {"format": "pt", "note": "line\nbreak \u00e9"}))
    write("safetensors/empty.safetensors", st_file({}))

    # .npy by NumPy: every simple dtype, both byte orders, both memory orders,
    # versions 1.0-3.0, rank 0 and empty
    a = np.arange(12).reshape(3, 4)
    np.save(os.path.join(HERE, "npy/f4_c.npy"), a.astype("<f4"))
    np.save(os.path.join(HERE, "npy/i2_big.npy"), a.astype(">i2"))
    np.save(os.path.join(HERE, "npy/f8_fortran.npy"), np.asfortranarray(a.astype("<f8")))
    np.save(os.path.join(HERE, "npy/u4_big_fortran.npy"),
            np.asfortranarray(np.arange(24).reshape(2, 3, 4).astype(">u4")))
    np.save(os.path.join(HERE, "npy/b1.npy"), np.array([True, False, True]))
    np.save(os.path.join(HERE, "npy/scalar_f2.npy"), np.array(1.5, dtype="<f2"))
    np.save(os.path.join(HERE, "npy/empty_i8.npy"), np.zeros((0, 3), dtype="<i8"))
    for v in ((2, 0), (3, 0)):
        b = io.BytesIO()
        np.lib.format.write_array(b, a.astype("<u8"), version=v)
        write("npy/u8_v%d.npy" % v[0], b.getvalue())


main()
