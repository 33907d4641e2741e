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
handed; the tensio arrays' bytes are not read), "<what>: decode + crc32" also
runs zlib.crc32 over every array's bytes (both read every byte; the crc32s
of both subjects must agree, checked every repetition).

With --url URL (the same shard served by nginx, make bench's http case) the
case is "shards_http_py": base:curl+tarfile+tenbin.py reads `curl -s URL`
through the same tarfile loop, tensio:stream_shards iterates
tensio.stream_shards(URL) (the shard read as a stream; arrays decoded from
each member's bytes).

Usage: shard_read.py SHARD --group WHAT [--url URL] [--reps N] [--max-reps N] [--warmup N]
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
    p = subprocess.Popen(["curl", "-s", "--fail", url], stdout=subprocess.PIPE)
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


def one_pass(samples, path, crc):
    """Samples, arrays, and the crc32 of every array's bytes (crc) or 0."""
    n = arrays = 0
    acc = 0
    for sample in samples(path):
        for a in sample["ten"]:
            arrays += 1
            if crc:
                acc = zlib.crc32(a, acc)
        n += 1
    return n, arrays, acc


def steady(times, reps):
    """The last reps paired ratios (baseline / tensio) within ±10 % of their
    median (bench.h's BN_STEADY)."""
    pr = [b / t for b, t in zip(times[BASE][-reps:], times[SUBJECT][-reps:])]
    if len(pr) < reps:
        return False
    m = statistics.median(pr)
    return all(abs(x / m - 1) <= 0.10 for x in pr)


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
    a = ap.parse_args()
    a.max_reps = max(a.max_reps, a.reps)
    size = os.path.getsize(a.shard)
    global CASE, BASE, SUBJECT
    src = a.shard
    subjects = [(BASE, base_samples), (SUBJECT, tensio_samples)]
    if a.url:
        CASE, BASE, SUBJECT, src = ("shards_http_py", "base:curl+tarfile+tenbin.py",
                                    "tensio:stream_shards", a.url)
        subjects = [(BASE, base_samples_url), (SUBJECT, tensio_samples_url)]
    for crc, what in ((False, "decode"), (True, "decode + crc32")):
        g = f"{a.group}: {what}"
        times = {BASE: [], SUBJECT: []}
        seen = {}
        r = 0
        while r < a.warmup + a.reps or (not steady(times, a.reps) and
                                        len(times[BASE]) < a.max_reps):
            order = subjects if r % 2 == 0 else subjects[::-1]
            for name, fn in order:
                t0 = time.perf_counter()
                got = one_pass(fn, src, crc)
                t = time.perf_counter() - t0
                if seen.setdefault(name, got) != got:
                    sys.exit(f"shard_read.py: {name}: a different result between repetitions")
                if r >= a.warmup:
                    times[name].append(t)
            r += 1
        note = f"{a.reps} of {len(times[BASE])} run (cap {a.max_reps})"
        note += ", steady" if steady(times, a.reps) else ", not steady"
        # the last reps repetitions: the steady window, or the last after the cap
        for name in times:
            times[name] = times[name][-a.reps:]
        if seen[BASE] != seen[SUBJECT]:
            sys.exit(f"shard_read.py: {g}: tensio.Shard saw {seen[SUBJECT]}, "
                     f"tarfile+tenbin.py {seen[BASE]} (samples, arrays, crc32)")
        for name in (BASE, SUBJECT):
            for t in times[name]:
                print(f"R\t{CASE}\t{g}\t{name}\t{t:.9f}\t{size}\t{seen[name][0]}")
        for tb, ts in zip(times[BASE], times[SUBJECT]):
            print(f"P\t{CASE}\t{g}\t{SUBJECT}\t{BASE}\t{tb / ts:.6f}")
        print(f"M\t{CASE}\t{g}\t{SUBJECT}\treps\t{note}")
        print(f"M\t{CASE}\t{g}\t{SUBJECT}\tarrays\t{seen[SUBJECT][1]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
