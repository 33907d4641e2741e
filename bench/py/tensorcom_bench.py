#!/usr/bin/python3
"""tio_bench's Python baseline for the ZeroMQ case: tensorcom's framing in pyzmq + NumPy.

Run with Debian's /usr/bin/python3 (python3-zmq, python3-numpy):

  tensorcom_bench.py [--sizes 1K,4K,...] [--budget BYTES] [--reps N] [--warmup N] [--check]
                     [--case zmq] [--group-prefix ""]

Over tcp://127.0.0.1 loopback, a PUSH sender (this process) sends to a PULL
receiver in a second process (multiprocessing, so that the two do not share a
GIL), each with its own zmq.Context. A message is one batch of one array of
`size` bytes (float32 [size/4], uint8 [size] when size % 4), framed as
tensorcom's zsend_multipart does (written here from the format notes, not
imported): a header frame of int64 words [dtype code, 8 ASCII bytes NUL-padded]
[info, 8 bytes][ndim][dims...], built from the array for every message as
tensorcom's encode_header does, then the array's data frame. The sender uses
send_multipart(copy=False): pyzmq then copies frames under its copy threshold
(64 KiB) and lends larger ones (tensorcom itself calls send_multipart with the
default copy=True, which always copies). The receiver decodes every message as
tensorcom's decode_list does (np.frombuffer on the header, the dtype from its
code, np.frombuffer(...).reshape on the data); it receives with copy=False
(zero-copy frames) from 64 KiB up and copy=True (bytes) below, the faster
choice for each.

For each size: one untimed message brings the connection up, then --warmup
untimed and --reps timed rounds of N = clamp(budget / size, 64, 100000)
messages, timed (time.monotonic, CLOCK_MONOTONIC, the same clock in both
processes) from just before the first send to the receiver having decoded the
last message. Each timed round prints a line in tio_bench's format:

  R<TAB>zmq<TAB><size label><TAB>alt:python-tensorcom<TAB><seconds><TAB><bytes><TAB><items>

With --check the receiver compares a sample of the arrays with the sent data
(exit 1 on a mismatch).
"""

import argparse
import multiprocessing as mp
import re
import struct
import sys
import time

try:
    import numpy as np
    import zmq
except ImportError as e:  # pragma: no cover
    print(f"tensorcom_bench: needs pyzmq and numpy (python3-zmq, python3-numpy; run "
          f"/usr/bin/python3): {e}", file=sys.stderr)
    sys.exit(3)

SUBJECT = "alt:python-tensorcom"
MIN_MSGS, MAX_MSGS = 64, 100000
TIMEOUT_MS = 30000
COPY_BELOW = 65536  # receive with copy=True below this size

# tensorcom's short dtype codes (uint32 is u4; tensorcom's own table misspells it)
LONG_TO_SHORT = {
    "float16": "f2", "float32": "f4", "float64": "f8",
    "int8": "i1", "int16": "i2", "int32": "i4", "int64": "i8",
    "uint8": "u1", "uint16": "u2", "uint32": "u4", "uint64": "u8",
}
SHORT_TO_LONG = {v: k for k, v in LONG_TO_SHORT.items()}


# ---------------------------------------------------------------- framing

def str64(s):
    """An ASCII string of at most 8 characters as the int64 of its NUL-padded bytes."""
    return struct.unpack("<q", s.encode("ascii").ljust(8, b"\0"))[0]


def unstr64(i):
    return struct.pack("<q", int(i)).decode("ascii").strip("\0")


def encode_header(a, info=""):
    header = [str64(LONG_TO_SHORT[a.dtype.name]), str64(info), a.ndim] + list(a.shape)
    return np.array(header, dtype="<i8").data


def encode_list(arrays):
    frames = []
    for a in arrays:
        frames += [encode_header(a), a.data]
    return frames


def decode_header(h):
    h = np.frombuffer(h, dtype="<i8")
    dtype = np.dtype(SHORT_TO_LONG[unstr64(h[0])])
    info = unstr64(h[1])
    rank = int(h[2])
    shape = tuple(int(d) for d in h[3:3 + rank])
    return shape, dtype, info


def decode_list(frames):
    arrays = []
    for header, data in zip(frames[::2], frames[1::2]):
        shape, dtype, _ = decode_header(header)
        count = 1
        for d in shape:
            count *= d
        arrays.append(np.frombuffer(data, dtype=dtype, count=count).reshape(shape))
    return arrays


# ---------------------------------------------------------------- helpers

def parse_size(s):
    """As tio_bench's bn_parse_size: digits, then optionally K, M or G (binary)."""
    m = re.fullmatch(r"(\d+)(?:([KkMmGg]).*)?", s)
    if not m:
        raise ValueError(s)
    mul = {None: 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2) and m.group(2).lower()]
    v = int(m.group(1)) * mul
    if v == 0:
        raise ValueError(s)
    return v


def size_label(n):
    """As tio_bench's bn_size_label: "1KiB", "64MiB", "3B"."""
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    u = 0
    while u < 4 and n >= 1024 and n % 1024 == 0:
        n //= 1024
        u += 1
    return f"{n}{units[u]}"


def make_array(size):
    raw = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8)
    return raw.view(np.float32) if size % 4 == 0 else raw


def messages(size, budget):
    return max(MIN_MSGS, min(MAX_MSGS, budget // size))


# ---------------------------------------------------------------- receiver

def receiver(ctrl, check):
    """Child process: receives the rounds the sender announces on ctrl."""
    ctx = zmq.Context()
    sock = ctx.socket(zmq.PULL)
    sock.setsockopt(zmq.RCVTIMEO, TIMEOUT_MS)
    sock.setsockopt(zmq.LINGER, 0)
    sock.bind("tcp://127.0.0.1:*")
    ctrl.send(sock.getsockopt_string(zmq.LAST_ENDPOINT))
    try:
        while True:
            cmd = ctrl.recv()
            if cmd is None:
                break
            size, count = cmd
            copy = size < COPY_BELOW
            expect = make_array(size) if check else None
            step = max(1, count // 16)
            for i in range(count):
                arrays = decode_list(sock.recv_multipart(copy=copy))
                a = arrays[0]
                if len(arrays) != 1 or a.nbytes != size:
                    raise RuntimeError(f"message {i}: {len(arrays)} arrays, first of "
                                       f"{a.nbytes} bytes, expected 1 of {size}")
                if check and (i % step == 0 or i + 1 == count) and \
                        not np.array_equal(a.view(np.uint8), expect.view(np.uint8)):
                    raise RuntimeError(f"message {i}: the data differ from what was sent")
            ctrl.send(time.monotonic())
    except Exception as e:  # reported to the sender, which fails
        ctrl.send(f"receiver: {e}")
    finally:
        sock.close()
        ctx.term()


def stop_receiver(ctrl, proc):
    """Tells the receiver process to end (None on ctrl), and ends it."""
    try:
        ctrl.send(None)
    except OSError:
        pass
    proc.join(10)
    if proc.is_alive():
        proc.terminate()


# ---------------------------------------------------------------- sender

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1K,4K,16K,64K,256K,1M,4M,16M")
    ap.add_argument("--budget", default="1G", help="bytes per round (N = budget / size)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--case", default="zmq", help="the case of the result lines")
    ap.add_argument("--group-prefix", default="", help="before each size label")
    args = ap.parse_args()
    try:
        sizes = [parse_size(s) for s in args.sizes.split(",")]
        budget = parse_size(args.budget)
    except ValueError as e:
        print(f"tensorcom_bench: bad size '{e}'", file=sys.stderr)
        return 2
    if args.reps < 1 or args.warmup < 0:
        print("tensorcom_bench: --reps must be >= 1 and --warmup >= 0", file=sys.stderr)
        return 2

    mpc = mp.get_context("fork")  # both processes create their zmq.Context after the fork
    ctrl, child_end = mpc.Pipe()
    proc = mpc.Process(target=receiver, args=(child_end, args.check), daemon=True)
    proc.start()
    ctx = zmq.Context()
    sock = ctx.socket(zmq.PUSH)
    sock.setsockopt(zmq.SNDTIMEO, TIMEOUT_MS)
    sock.setsockopt(zmq.LINGER, TIMEOUT_MS)
    rc = 0
    try:
        if not ctrl.poll(TIMEOUT_MS / 1000):
            raise RuntimeError("the receiver did not start")
        sock.connect(ctrl.recv())
        for size in sizes:
            a = make_array(size)
            n = messages(size, budget)
            label = size_label(size)
            for r in range(1 + args.warmup + args.reps):
                count = 1 if r == 0 else n
                ctrl.send((size, count))
                t0 = time.monotonic()
                for _ in range(count):
                    sock.send_multipart(encode_list([a]), copy=False)
                if not ctrl.poll(TIMEOUT_MS / 1000 + 60):
                    raise RuntimeError(f"{label}: the receiver did not finish round {r}")
                t1 = ctrl.recv()
                if isinstance(t1, str):
                    raise RuntimeError(f"{label}: {t1}")
                if r > args.warmup:
                    print(f"R\t{args.case}\t{args.group_prefix}{label}\t{SUBJECT}\t"
                          f"{t1 - t0:.9f}\t{n * size}\t{n}",
                          flush=True)
    except Exception as e:
        print(f"tensorcom_bench: {e}", file=sys.stderr)
        rc = 1
    finally:
        stop_receiver(ctrl, proc)
        sock.close()
        ctx.term()
    return rc


if __name__ == "__main__":
    sys.exit(main())
