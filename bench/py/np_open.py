#!/usr/bin/python3
"""Baseline for the open case: NumPy's np.load(path, mmap_mode="r") of an .npy
file, then reading its dtype and shape (what `open + list` does for one
tensor). Prints one tio_bench result line per repetition (bench/bench.h):

  R  open  <group>  base:np.load  <seconds>  <file bytes>  1

Run with Debian's /usr/bin/python3 (python3-numpy).
Usage: np_open.py PATH --group G [--group G2 ...] [--reps N] [--warmup N]
"""
import argparse
import os
import sys
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--group", action="append", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    a = ap.parse_args()
    size = os.path.getsize(a.path)
    times = []
    for r in range(a.warmup + a.reps):
        t0 = time.perf_counter()
        arr = np.load(a.path, mmap_mode="r")
        _ = (arr.dtype.str, arr.shape, arr.nbytes)
        del arr
        t1 = time.perf_counter()
        if r >= a.warmup:
            times.append(t1 - t0)
    for g in a.group:
        for t in times:
            print(f"R\topen\t{g}\tbase:np.load\t{t:.9f}\t{size}\t1")
    print(f"M\topen\t{a.group[0]}\tbase:np.load\tnumpy\t{np.__version__}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
