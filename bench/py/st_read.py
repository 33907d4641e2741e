#!/usr/bin/python3
"""Baseline for safetensors in the open and scan cases: what a Python user
without the `safetensors` package (Debian has no python3-safetensors) writes
to read a .safetensors file with NumPy alone. The format is an 8-byte
little-endian header length, a JSON header of {name: {dtype, shape,
data_offsets}} (and an optional __metadata__), then the data; this reader
parses the JSON, maps the file with numpy.memmap and makes one
np.frombuffer view per tensor.

  open: the above, then every tensor's name, dtype, shape and size (as
        tio_bench's open + list);
  scan: the same, then a checksum of every tensor's bytes (the sum of its
        64-bit words, then of its tail bytes, with NumPy's reductions; not
        tio_bench's checksum, which NumPy cannot compute at memory speed).

Prints one tio_bench result line per repetition (bench/bench.h):

  R  open|scan  <group>  base:py-safetensors(numpy)  <seconds>  <bytes>  <tensors>

It runs in a process of its own, so it is not paired with tensio's
repetitions: the report compares medians.
Run with Debian's /usr/bin/python3 (python3-numpy).
Usage: st_read.py PATH --group G [--reps N] [--warmup N] [--cases open,scan]
"""
import argparse
import json
import os
import sys
import time

import numpy as np

SUBJECT = "base:py-safetensors(numpy)"
DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": np.uint16,
          "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8,
          "U64": np.uint64, "U32": np.uint32, "U16": np.uint16, "U8": np.uint8,
          "BOOL": np.bool_}


def open_views(path):
    """{name: ndarray view} of a .safetensors file, the file mapped."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    mm = np.memmap(path, dtype=np.uint8, mode="r")
    views = {}
    for name, d in header.items():
        if name == "__metadata__":
            continue
        dt = np.dtype(DTYPES[d["dtype"]])
        start, end = d["data_offsets"]
        views[name] = np.frombuffer(mm, dtype=dt, count=(end - start) // dt.itemsize,
                                    offset=8 + n + start).reshape(d["shape"])
    return views


def do_open(path):
    views = open_views(path)
    acc = 0
    for name, v in views.items():
        acc += len(name) + v.dtype.itemsize + len(v.shape) + v.nbytes
    return len(views), acc


def do_scan(path):
    views = open_views(path)
    acc = 0
    for v in views.values():
        b = v.reshape(-1).view(np.uint8)
        w = b[: b.size // 8 * 8].view(np.uint64)
        acc += int(np.add.reduce(w, dtype=np.uint64)) + int(b[w.size * 8:].sum())
    return len(views), acc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--group", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--cases", default="open,scan")
    a = ap.parse_args()
    size = os.path.getsize(a.path)
    for case in a.cases.split(","):
        fn = {"open": do_open, "scan": do_scan}[case]
        nbytes = size
        if case == "scan":
            nbytes = sum(v.nbytes for v in open_views(a.path).values())
        for r in range(a.warmup + a.reps):
            t0 = time.perf_counter()
            count, _ = fn(a.path)
            t1 = time.perf_counter()
            if r >= a.warmup:
                print(f"R\t{case}\t{a.group}\t{SUBJECT}\t{t1 - t0:.9f}\t{nbytes}\t{count}")
        try:
            import safetensors  # noqa: F401
            note = "the safetensors package is importable here too (not measured)"
        except ImportError:
            note = ("the safetensors package is absent (Debian has no python3-safetensors): "
                    "json header + numpy.memmap/np.frombuffer instead")
        print(f"M\t{case}\t{a.group}\t{SUBJECT}\tnote\t{note}")
        print(f"M\t{case}\t{a.group}\t{SUBJECT}\tnumpy\t{np.__version__}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
