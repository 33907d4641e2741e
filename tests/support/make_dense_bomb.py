#!/usr/bin/env python3
"""Writes the two "dense bomb" BTF files of issue 15 (fuzz/regress/btf/).

A dense bomb is a small, valid BTF file holding a COO tensor whose *dense*
size is enormous: a handful of stored values in a shape such as
[2, 6, 5, 18014398509481988]. Opening, listing, validating and dumping it
costs O(stored values), but anything that densifies it - the SHA-256 of the
densified tensor (TIO_HASH_DENSE, `tensio ls --hash`), `convert --densify` -
would have to produce numel x itemsize bytes. Issue 15 found two such files
by mutating valid BTF files; these are rebuilt from a real vector instead, so
that every byte is explained here:

  source: tests/vectors/btf/coo_int8_rank4.btf (one int8 COO tensor, shape
  [2, 3, 2, 2], 7 stored values; checked against its manifest's file_sha256).

  1. dense-bomb-f32-2x6x5x18014398509481988-<sha1>: the same 7 coordinates,
     the values converted exactly to float32, the shape
     [2, 6, 5, 18014398509481988] (the last dim is 2**54 + 4). Every dim is
     at least the source's, so every coordinate stays in range. Dense size:
     1,080,863,910,568,919,280 elements x 4 bytes = 4,323,455,642,275,677,120
     bytes (~4.3e18; it still fits in int64, so the file is valid).
  2. dense-bomb-i64-2x8796093022214x2x5-<sha1>: the same coordinates, the
     values converted to int64, the shape [2, 8796093022214, 2, 5] (the
     second dim is 2**43 + 6). Dense size: 175,921,860,444,280 elements x 8
     bytes = 1,407,374,883,554,240 bytes (~1.4e15).

Each file is one record written as tensio's BTF writer writes it (see
docs/formats/btf.md): NUM_TENSORS = 1, the offset table, then rank, dtype
code, layout 1 (COO), six reserved zeros, the dims, INDICES dims (nnz, rank)
and data, VALUES dims (nnz) and data, zero padding to a multiple of 8.
The name ends with the first 8 hex digits of the file's SHA-1, as the other
regression inputs do (fuzz/regress/README.md).

Usage:
  make_dense_bomb.py OUTDIR            write both files into OUTDIR
  make_dense_bomb.py --check DIR       exit 0 when DIR holds exactly these
                                       bytes under these names, 1 otherwise
  make_dense_bomb.py --list            print "name dense_bytes" per file
Python 3 standard library only.
"""

import hashlib
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "..", "vectors", "btf", "coo_int8_rank4.btf")
SOURCE_SHA256 = "85b41cc697c4d8daf2adb17e7149c2aef412976962cfe6a15a8d46536c0217e4"

# BTF dtype codes and their struct format and item size.
DTYPES = {"int8": (0, "b", 1), "float32": (4, "f", 4), "int64": (3, "q", 8)}

BOMBS = [
    # (name stem, dtype of the values, shape)
    ("dense-bomb-f32-2x6x5x18014398509481988", "float32", [2, 6, 5, 2**54 + 4]),
    ("dense-bomb-i64-2x8796093022214x2x5", "int64", [2, 2**43 + 6, 2, 5]),
]


def read_coo(path):
    """The shape, dtype name, coordinates and values of the only tensor of a
    one-record BTF file whose record is COO."""
    with open(path, "rb") as f:
        b = f.read()
    if hashlib.sha256(b).hexdigest() != SOURCE_SHA256:
        raise SystemExit(f"{path}: not the expected vector (sha256 differs)")
    (n,) = struct.unpack_from("<Q", b, 0)
    (rec,) = struct.unpack_from("<Q", b, 8)
    assert n == 1
    rank, dcode, layout = struct.unpack_from("<QBB", b, rec)
    assert layout == 1 and b[rec + 10:rec + 16] == bytes(6)
    dtype = next(k for k, v in DTYPES.items() if v[0] == dcode)
    pos = rec + 16
    shape = list(struct.unpack_from(f"<{rank}q", b, pos))
    pos += 8 * rank
    nnz, cols = struct.unpack_from("<qq", b, pos)
    assert cols == rank
    pos += 16
    coords = list(struct.unpack_from(f"<{nnz * rank}q", b, pos))
    pos += 8 * nnz * rank
    (vn,) = struct.unpack_from("<q", b, pos)
    assert vn == nnz
    pos += 8
    _, fmt, size = DTYPES[dtype]
    values = list(struct.unpack_from(f"<{nnz}{fmt}", b, pos))
    assert len(b) == (pos + nnz * size + 7) // 8 * 8
    return shape, dtype, coords, values


def write_coo(shape, dtype, coords, values):
    """A one-record BTF file holding this COO tensor."""
    code, fmt, _ = DTYPES[dtype]
    rank, nnz = len(shape), len(values)
    rec = struct.pack("<QBB6x", rank, code, 1)
    rec += struct.pack(f"<{rank}q", *shape)
    rec += struct.pack("<qq", nnz, rank) + struct.pack(f"<{nnz * rank}q", *coords)
    rec += struct.pack("<q", nnz) + struct.pack(f"<{nnz}{fmt}", *values)
    rec += bytes(-len(rec) % 8)
    return struct.pack("<QQ", 1, 16) + rec


def bombs():
    """[(file name, bytes, dense size in bytes)]"""
    shape, _, coords, values = read_coo(SOURCE)
    out = []
    for stem, dtype, new_shape in BOMBS:
        assert len(new_shape) == len(shape)
        assert all(a <= b for a, b in zip(shape, new_shape)), "coordinates must stay in range"
        vals = [float(v) for v in values] if dtype == "float32" else [int(v) for v in values]
        data = write_coo(new_shape, dtype, coords, vals)
        numel = 1
        for d in new_shape:
            numel *= d
        dense = numel * DTYPES[dtype][2]
        assert dense < 2**63, "the dense size must still fit in int64: a valid file"
        name = f"{stem}-{hashlib.sha1(data).hexdigest()[:8]}"
        out.append((name, data, dense))
    return out


def main(argv):
    if len(argv) == 2 and argv[1] == "--list":
        for name, _, dense in bombs():
            print(name, dense)
        return 0
    if len(argv) == 3 and argv[1] == "--check":
        bad = 0
        for name, data, _ in bombs():
            p = os.path.join(argv[2], name)
            try:
                with open(p, "rb") as f:
                    same = f.read() == data
            except OSError as e:
                print(f"{p}: {e.strerror}")
                bad = 1
                continue
            if not same:
                print(f"{p}: differs from what {os.path.basename(argv[0])} generates")
                bad = 1
        return bad
    if len(argv) == 2 and not argv[1].startswith("-"):
        for name, data, _ in bombs():
            with open(os.path.join(argv[1], name), "wb") as f:
                f.write(data)
        return 0
    print(__doc__.split("Usage:")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
