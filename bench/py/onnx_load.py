#!/usr/bin/python3
"""Baseline for the onnx case: python3-onnx's onnx.load(path) of the model
that tensio opens and converts in the same run, then listing every
initializer's name, dtype and shape (what tensio's open + list does). This
is what a user without tensio runs to look into an .onnx. Prints tio_bench
result lines (bench/bench.h):

  R  onnx  <group>  base:onnx.load  <seconds>  <file bytes>  <initializers>
  M  onnx  <group>  base:onnx.load  <key>  <value>

Facts: onnx (version), protobuf (version and implementation), initializers,
rss_before_kib (the interpreter with onnx imported, before the first load)
and maxrss_kib (the process's peak RSS, getrusage, after every load: the
file read into memory and the message parsed from it).

Run with Debian's /usr/bin/python3 (python3-onnx).
Usage: onnx_load.py PATH --group G [--reps N] [--warmup N]
"""
import argparse
import gc
import os
import resource
import sys
import time

import onnx


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def protobuf_impl():
    try:
        from google.protobuf.internal import api_implementation
        return api_implementation.Type()
    except ImportError:
        return "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--group", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    a = ap.parse_args()
    size = os.path.getsize(a.path)
    before = rss_kib()
    key = f"onnx\t{a.group}\tbase:onnx.load"
    n = 0
    for r in range(a.warmup + a.reps):
        t0 = time.perf_counter()
        m = onnx.load(a.path)
        n = 0
        for t in m.graph.initializer:
            _ = (t.name, t.data_type, tuple(t.dims))
            n += 1
        del m
        t1 = time.perf_counter()
        gc.collect()
        if r >= a.warmup:
            print(f"R\t{key}\t{t1 - t0:.9f}\t{size}\t{n}")
    import google.protobuf
    print(f"M\t{key}\tonnx\t{onnx.__version__}")
    print(f"M\t{key}\tprotobuf\t{google.protobuf.__version__} ({protobuf_impl()})")
    print(f"M\t{key}\tinitializers\t{n}")
    print(f"M\t{key}\trss_before_kib\t{before}")
    print(f"M\t{key}\tmaxrss_kib\t{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
