#!/usr/bin/python3
"""make bench, Python section (issue 18): the tensio package against what
Python users run today, side by side in one process and one run. Prints
tio_bench result lines (bench/bench.h), case "python":

  R  python  <group>  <subject>  <seconds>  <bytes>  <items>

Groups and subjects:
- "open <size> .ten": tensio:tensio.load (map the file, one view per tensor)
  against base:tenbin.load (the algorithm of WebDataset's tenbin.load,
  written here: webdataset's module is not a Debian package; see
  tenbin_baseline below) and alt:np.load-mmap (np.load(mmap_mode="r") of an
  .npy of the same array).
- "decode <n> x <size>" / "encode <n> x <size>": tensio.tenbin.decode_buffer /
  encode_buffer against the baseline's, on bytes in memory.
- "stream <size>": tensio.Stream PUSH -> PULL (a child process), arrays sent
  and received as views; bench/py/tensorcom_bench.py --case python-stream is
  the Python tensorcom baseline of the same groups.

Usage: py_bench.py DIR [--size 1G] [--reps N] [--warmup N]
                       [--stream-sizes 1K,...] [--stream-budget 1G]
Run with Debian's /usr/bin/python3 and PYTHONPATH=<build>/python.
"""

import argparse
import multiprocessing as mp
import os
import struct
import sys
import time

import numpy as np

import tensio
import tensio.tenbin as ttenbin
from tensorcom_bench import (parse_size, size_label, make_array, messages, stop_receiver,
                             COPY_BELOW)

CASE = "python"
TIMEOUT = 30.0

# ------------------------------------------------------- tenbin baseline
# What WebDataset's tenbin.py does (checked against webdataset e0953f9),
# written from its algorithm, not copied: load() reads the whole file;
# decode_buffer() splits it into chunks (magic, int64 length, payload, zero
# padding to 64 bytes), each chunk a slice of the buffer (a copy for bytes),
# then decodes header/data pairs with np.frombuffer.

MAGIC = b"~TenBin~"
SHORT = {"float16": "f2", "float32": "f4", "float64": "f8", "int8": "i1", "int16": "i2",
         "int32": "i4", "int64": "i8", "uint8": "u1", "uint16": "u2", "uint32": "u4",
         "uint64": "u8"}
LONG = {v: k for k, v in SHORT.items()}


def _str64(s):
    return struct.unpack("<q", s.encode("ascii").ljust(8, b"\0"))[0]


def _unstr64(i):
    return struct.pack("<q", int(i)).decode("ascii").strip("\0")


def base_encode_buffer(arrays):
    out = bytearray()
    for a in arrays:
        h = np.array([_str64(SHORT[a.dtype.name]), _str64(""), a.ndim] + list(a.shape), "<i8")
        for payload in (h.tobytes(), a.tobytes()):
            out += MAGIC + struct.pack("<q", len(payload)) + payload
            out += b"\0" * ((-len(payload)) % 64)
    return out


def base_decode_buffer(buf):
    chunks, pos = [], 0
    while pos < len(buf):
        if buf[pos:pos + 8] != MAGIC:
            raise ValueError("bad magic")
        n = struct.unpack("<q", buf[pos + 8:pos + 16])[0]
        chunks.append(buf[pos + 16:pos + 16 + n])
        pos += 16 + n + ((-n) % 64)
    out = []
    for h, d in zip(chunks[::2], chunks[1::2]):
        h = np.frombuffer(h, dtype="<i8")
        shape = tuple(int(x) for x in h[3:3 + int(h[2])])
        out.append(np.frombuffer(d, dtype=LONG[_unstr64(h[0])]).reshape(shape))
    return out


def base_load(path):
    with open(path, "rb") as f:
        return base_decode_buffer(f.read())


# ------------------------------------------------------------- timing

def timed(fn, reps, warmup):
    out = []
    for r in range(warmup + reps):
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        if r >= warmup:
            out.append(t1 - t0)
    return out


def emit(group, subject, times, nbytes, items):
    for t in times:
        print(f"R\t{CASE}\t{group}\t{subject}\t{t:.9f}\t{nbytes}\t{items}", flush=True)


def bench_open(d, size, reps, warmup):
    a = np.frombuffer(np.random.default_rng(0).bytes(size - size % 4), np.float32)
    ten, npy = os.path.join(d, "bench-py.ten"), os.path.join(d, "bench-py.npy")
    tensio.save(ten, [a], sync=False)
    np.save(npy, a)
    del a
    for p in (ten, npy):
        with open(p, "rb") as f:  # page cache warm
            while f.read(1 << 24):
                pass
    g = f"open {size_label(size)} .ten"
    n = os.path.getsize(ten)

    def t_load():
        x = tensio.load(ten)
        _ = (x[0].dtype, x[0].shape)

    def t_base():
        x = base_load(ten)
        _ = (x[0].dtype, x[0].shape)

    def t_np():
        x = np.load(npy, mmap_mode="r")
        _ = (x.dtype, x.shape)

    emit(g, "tensio:tensio.load", timed(t_load, reps, warmup), n, 1)
    emit(g, "base:tenbin.load", timed(t_base, min(reps, 3), min(warmup, 1)), n, 1)
    emit(g, "alt:np.load-mmap", timed(t_np, reps, warmup), n, 1)
    os.remove(ten)
    os.remove(npy)


def bench_codec(count, each, reps, warmup):
    rng = np.random.default_rng(1)
    arrays = [np.frombuffer(rng.bytes(each), np.float32).reshape(-1, 16) for _ in range(count)]
    buf = bytes(ttenbin.encode_buffer(arrays))
    assert buf == bytes(base_encode_buffer(arrays))
    label = f"{count} x {size_label(each)}"
    n = len(buf)
    for what, ours, theirs, arg in (
            ("decode", ttenbin.decode_buffer, base_decode_buffer, buf),
            ("encode", ttenbin.encode_buffer, base_encode_buffer, arrays)):
        emit(f"{what} {label}", f"tensio:tenbin.{what}_buffer",
             timed(lambda: ours(arg), reps, warmup), n, count)
        emit(f"{what} {label}", f"base:tenbin.{what}_buffer",
             timed(lambda: theirs(arg), reps, warmup), n, count)


# ------------------------------------------------------------- stream

def receiver(ctrl):
    rx = tensio.Stream("tcp://127.0.0.1:*", socket="pull", bind=True, timeout=TIMEOUT)
    ctrl.send(rx.endpoint)
    try:
        while True:
            cmd = ctrl.recv()
            if cmd is None:
                break
            size, count = cmd
            for i in range(count):
                a = rx.recv()[0]
                if a.nbytes != size:
                    raise RuntimeError(f"message {i}: {a.nbytes} bytes, expected {size}")
            ctrl.send(time.monotonic())
    except Exception as e:
        ctrl.send(f"receiver: {e}")
    finally:
        rx.close()


def bench_stream(sizes, budget, reps, warmup):
    mpc = mp.get_context("fork")
    ctrl, child = mpc.Pipe()
    proc = mpc.Process(target=receiver, args=(child,), daemon=True)
    proc.start()
    try:
        if not ctrl.poll(TIMEOUT):
            raise RuntimeError("the receiver did not start")
        with tensio.Stream(ctrl.recv(), socket="push", proto="tensorcom", timeout=TIMEOUT,
                           linger=TIMEOUT) as tx:
            for size in sizes:
                a = make_array(size)
                n = messages(size, budget)
                for r in range(1 + warmup + reps):
                    count = 1 if r == 0 else n
                    ctrl.send((size, count))
                    t0 = time.monotonic()
                    # lent from 64 KiB as the baseline lends them (its
                    # send_multipart(copy=False)), copied below
                    copy = size < COPY_BELOW
                    for _ in range(count):
                        tx.send([a], copy=copy)
                    if not ctrl.poll(TIMEOUT + 60):
                        raise RuntimeError("the receiver did not finish")
                    t1 = ctrl.recv()
                    if isinstance(t1, str):
                        raise RuntimeError(t1)
                    if r > warmup:
                        emit(f"stream {size_label(size)}", "tensio:Stream", [t1 - t0],
                             n * size, n)
    finally:
        stop_receiver(ctrl, proc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--size", default="1G")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--stream-sizes", default="1K,64K,1M,16M")
    ap.add_argument("--stream-budget", default="256M")
    a = ap.parse_args()
    size = parse_size(a.size)
    bench_open(a.dir, size, a.reps, a.warmup)
    codec_bytes = min(size, 64 << 20)
    bench_codec(1, codec_bytes, a.reps, a.warmup)
    bench_codec(1000, 4096, a.reps, a.warmup)
    bench_stream([parse_size(s) for s in a.stream_sizes.split(",")],
                 parse_size(a.stream_budget), a.reps, a.warmup)
    print(f"M\t{CASE}\tversions\ttensio\tnumpy\t{np.__version__}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
