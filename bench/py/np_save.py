#!/usr/bin/python3
"""Baseline for the write case of .npy: NumPy's np.save of one float32 array
of the same bytes as tio_bench's `files write --format npy --tensors 1`
(its data are other pseudo-random bytes: the values do not change the
cost). Like tio_bench, each repetition first syncs (untimed) and touches
and frees 1.5x the array's bytes, so that the write takes warm pages.
Prints one tio_bench result line per repetition (bench/bench.h):

  R  write  <group>  base:np.save  <seconds>  <file bytes>  1

It runs in a process of its own, so it is not paired with tensio's
repetitions: the report compares medians.
Run with Debian's /usr/bin/python3 (python3-numpy).
Usage: np_save.py OUT --bytes N --group G [--reps N] [--warmup N]
"""
import argparse
import os
import sys
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--bytes", type=int, required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    a = ap.parse_args()
    arr = np.frombuffer(np.random.default_rng(1).bytes(a.bytes // 4 * 4), dtype=np.float32)
    for r in range(a.warmup + a.reps):
        if os.path.exists(a.out):
            os.unlink(a.out)
        os.sync()
        warm = np.ones(a.bytes + a.bytes // 2, dtype=np.uint8)  # touched, then freed
        del warm
        t0 = time.perf_counter()
        np.save(a.out, arr)
        t1 = time.perf_counter()
        size = os.path.getsize(a.out)
        if r >= a.warmup:
            print(f"R\twrite\t{a.group}\tbase:np.save\t{t1 - t0:.9f}\t{size}\t1")
    os.unlink(a.out)
    print(f"M\twrite\t{a.group}\tbase:np.save\tnumpy\t{np.__version__}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
