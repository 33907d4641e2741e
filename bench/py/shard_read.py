#!/usr/bin/python3
"""make bench, shards case (issue 21): iterating a WebDataset tar shard in
Python, tensio.Shard against what WebDataset does, in one process, the two
interleaved repetition by repetition. Prints tio_bench result lines
(bench/bench.h), case "shards_py":

  R  shards_py  <group>  <subject>  <seconds>  <bytes>  <samples>
  P  shards_py  <group>  tensio:Shard  base:tarfile+tenbin.py  <ratio>

Subjects:
- base:tarfile+tenbin.py: the shard read as WebDataset reads one, written
  from its algorithm (webdataset is not a Debian package): tarfile.open in
  streaming mode ("r|*") over the file, each regular member's bytes read,
  consecutive members grouped into a sample by key (the path up to the first
  dot of the basename, WebDataset's base_plus_ext), and every .ten decoded
  by tenbin.py's algorithm (py_bench.base_decode_buffer: np.frombuffer over
  a copy of each chunk).
- tensio:Shard: `for sample in tensio.Shard(path)`; sample["ten"] is the list
  of arrays (read-only views into the mapped shard).

Each group repeats until its last --reps paired ratios lie within ±10 % of
their median (as tio_bench's paired cases, bench/bench.h), at most --max-reps
times; the last --reps are printed.

Groups: "<what>: decode" builds every sample's arrays (what a trainer is
handed; the tensio arrays' bytes are not read), "<what>: decode + touch"
also reads one byte of every 4 KiB of every array (its pages mapped in: the
least a consumer does), "<what>: decode + crc32" runs zlib.crc32 over every
array's bytes (every subject reads every byte; their sums and crc32s must
agree, checked every repetition).

With --url URL (the same shard served by nginx, make bench's http case) the
case is "shards_http_py": base:curl+tarfile+tenbin.py reads `curl -s URL`
through the same tarfile loop, tensio:stream_shards iterates
tensio.stream_shards(URL) (the shard read as a stream; arrays decoded from
each member's bytes).

With --dataset, tensio:ShardDataset iterates tensio.torch.ShardDataset(SHARD)
in this process (one DataLoader worker's work), and base:cat reads the
shard's bytes (1 MiB readinto; paired with the dataset too).

Usage: shard_read.py SHARD --group WHAT [--url URL] [--dataset] [--reps N] [--max-reps N]
                     [--warmup N]
Run with Debian's /usr/bin/python3 and PYTHONPATH=<build>/python.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tarfile
import time
import zlib

import numpy as np

import tensio
from py_bench import base_decode_buffer

CASE = "shards_py"
BASE = "base:tarfile+tenbin.py"
SUBJECT = "tensio:Shard"
# WebDataset's split of a member path into key and extension
KEY_EXT = re.compile(r"^((?:.*/|)[^.]+)[.]([^/]*)$")


def base_samples(path):
    """Samples as WebDataset's tar_file_expander + group_by_keys build them."""
    with open(path, "rb") as f:
        yield from tar_samples(f, path)


def base_samples_url(url):
    """The same from `curl -s URL` (WebDataset's gopen of a URL is a curl pipe)."""
    # curl without a sanitizer runtime this process may have preloaded (an
    # uninstrumented curl under ASan's runtime hangs in a futex)
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    p = subprocess.Popen(["curl", "-s", "--fail", url], stdout=subprocess.PIPE, env=env)
    try:
        yield from tar_samples(p.stdout, url)
    finally:
        p.stdout.close()
        if p.wait() != 0:
            raise RuntimeError(f"curl {url}: exit status {p.returncode}")


def tensio_samples_url(url):
    yield from tensio.stream_shards(url)


def tar_samples(f, path):
    with tarfile.open(fileobj=f, mode="r|*") as tf:
        cur = None
        for ti in tf:
            if not ti.isreg():
                continue
            m = KEY_EXT.match(ti.name)
            if not m:
                continue
            key, ext = m.group(1), m.group(2).lower()
            data = tf.extractfile(ti).read()
            if cur is None or cur["__key__"] != key:
                if cur is not None:
                    yield cur
                cur = {"__key__": key, "__url__": path}
            cur[ext] = base_decode_buffer(data) if ext == "ten" else data
        if cur is not None:
            yield cur


def tensio_samples(path):
    with tensio.Shard(path) as s:
        yield from s


def dataset_samples(path):
    """tensio.torch.ShardDataset in this process (one DataLoader worker's
    work): samples with torch tensors, views of the mapping."""
    from tensio.torch import ShardDataset
    yield from ShardDataset(path)


def cat_pass(path):
    """base:cat: the shard's bytes read (1 MiB readinto), nothing decoded."""
    buf = bytearray(1 << 20)
    with open(path, "rb", buffering=0) as f:
        while f.readinto(buf):
            pass


def one_pass(samples, path, work):
    """Samples, arrays, and what work did with every array's bytes: "crc32"
    their crc32, "touch" the sum of one byte per 4 KiB (every page read, as
    a consumer at least reads them), "" nothing (0)."""
    n = arrays = 0
    acc = 0
    for sample in samples(path):
        for a in sample["ten"]:
            arrays += 1
            if work:
                a = a if hasattr(a, "__array_interface__") else a.numpy()
            if work == "crc32":
                acc = zlib.crc32(a, acc)
            elif work == "touch":
                acc += int(a.reshape(-1).view(np.uint8)[::4096].sum())
        n += 1
    return n, arrays, acc


def steady(times, reps):
    """The last reps paired ratios (baseline / subject) of every subject
    within ±10 % of their median (bench.h's BN_STEADY)."""
    for name in times:
        if name == BASE:
            continue
        pr = [b / t for b, t in zip(times[BASE][-reps:], times[name][-reps:])]
        if len(pr) < reps:
            return False
        m = statistics.median(pr)
        if not all(abs(x / m - 1) <= 0.10 for x in pr):
            return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("shard")
    ap.add_argument("--group", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--max-reps", type=int, default=0,
                    help="repeat until the last --reps paired ratios are within ±10 %% of "
                    "their median, at most this many (default: --reps)")
    ap.add_argument("--url", help="the same shard served over HTTP: curl | tarfile against "
                    "tensio.stream_shards (case shards_http_py)")
    ap.add_argument("--dataset", action="store_true",
                    help="also tensio.torch.ShardDataset, and base:cat beside it")
    a = ap.parse_args()
    a.max_reps = max(a.max_reps, a.reps)
    size = os.path.getsize(a.shard)
    global CASE, BASE
    src = a.shard
    subjects = [(BASE, base_samples), (SUBJECT, tensio_samples)]
    if a.url:
        CASE, BASE, src = "shards_http_py", "base:curl+tarfile+tenbin.py", a.url
        subjects = [(BASE, base_samples_url), ("tensio:stream_shards", tensio_samples_url)]
    if a.dataset:
        subjects += [("tensio:ShardDataset", dataset_samples), ("base:cat", None)]
    for work, what in (("", "decode"), ("touch", "decode + touch"), ("crc32", "decode + crc32")):
        g = f"{a.group}: {what}"
        times = {name: [] for name, _ in subjects}
        seen = {}
        r = 0
        while r < a.warmup + a.reps or (not steady(times, a.reps) and
                                        len(times[BASE]) < a.max_reps):
            order = subjects if r % 2 == 0 else subjects[::-1]
            for name, fn in order:
                t0 = time.perf_counter()
                got = one_pass(fn, src, work) if fn else cat_pass(src)
                t = time.perf_counter() - t0
                if fn and seen.setdefault(name, got) != got:
                    sys.exit(f"shard_read.py: {name}: a different result between repetitions")
                if r >= a.warmup:
                    times[name].append(t)
            r += 1
        note = f"{a.reps} of {len(times[BASE])} run (cap {a.max_reps})"
        note += ", steady" if steady(times, a.reps) else ", not steady"
        # the last reps repetitions: the steady window, or the last after the cap
        for name in times:
            times[name] = times[name][-a.reps:]
        for name in seen:
            if seen[name] != seen[BASE]:
                sys.exit(f"shard_read.py: {g}: {name} saw {seen[name]}, {BASE} {seen[BASE]} "
                         "(samples, arrays, crc32)")
        for name in times:
            for t in times[name]:
                print(f"R\t{CASE}\t{g}\t{name}\t{t:.9f}\t{size}\t{seen[BASE][0]}")
        for name in times:
            if name.startswith("tensio"):
                for tb, ts in zip(times[BASE], times[name]):
                    print(f"P\t{CASE}\t{g}\t{name}\t{BASE}\t{tb / ts:.6f}")
                print(f"M\t{CASE}\t{g}\t{name}\treps\t{note}")
                print(f"M\t{CASE}\t{g}\t{name}\tarrays\t{seen[name][1]}")
        if "base:cat" in times:  # the dataset against reading the bytes
            for tb, ts in zip(times["base:cat"], times["tensio:ShardDataset"]):
                print(f"P\t{CASE}\t{g}\ttensio:ShardDataset\tbase:cat\t{tb / ts:.6f}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
