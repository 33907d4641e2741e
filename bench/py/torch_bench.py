#!/usr/bin/python3
"""PyTorch checkpoints in make bench (issue 34), with Debian's python3-torch.

  gen  OUT --bytes N --tensors K   torch.save of a state dict (an OrderedDict)
                                   of K float32 tensors, N bytes of data in all,
                                   zip layout (torch's default)
  gen  OUT --resnet18              torch.save of torchvision's resnet18 state
                                   dict (random weights: 11.7 M parameters,
                                   122 tensors with the BatchNorm counters)
  load PATH --group G              one process, repetitions of
                                   base:torch.load  torch.load(PATH,
                                                    weights_only=True): reads
                                                    every byte into tensors
                                   tensio:open+arrays  tensio.open(PATH) and a
                                                    NumPy array of every tensor
                                                    (views into the mapping)
                                   tensio:open+sum  the same, then every array
                                                    read (its sum), the bytes
                                                    paged in as torch.load's are

Prints tio_bench lines (bench/bench.h): R torch <group> <subject> <seconds>
<file bytes> <tensors>, and an M line with torch's version. The subjects of
`load` run interleaved, one repetition of each in turn (rotating), so that
their ratio is paired; the report (section 10) divides medians.
Run with /usr/bin/python3 and PYTHONPATH=<build>/python.
"""
import argparse
import collections
import os
import sys
import time


def gen(a):
    import torch
    if a.resnet18:
        import torchvision
        torch.manual_seed(0)
        sd = torchvision.models.resnet18().state_dict()
    else:
        n = a.bytes // 4
        per = max(n // a.tensors, 1)
        sd = collections.OrderedDict()
        g = torch.Generator().manual_seed(0)
        for i in range(a.tensors):
            k = per if i < a.tensors - 1 else max(n - per * (a.tensors - 1), 1)
            sd[f"layer{i}.weight"] = torch.rand(k, generator=g)
    torch.save(sd, a.out)


def load(a):
    import numpy as np
    import torch
    import tensio
    size = os.path.getsize(a.path)

    def base():
        sd = torch.load(a.path, weights_only=True)
        return len(sd)

    def views():
        c = tensio.open(a.path)
        arrs = [np.asarray(x) for x in c]
        n = len(arrs)
        del arrs
        c.close()
        return n

    def summed():
        c = tensio.open(a.path)
        n = 0
        for x in c:
            np.asarray(x).sum(dtype=np.float64)
            n += 1
        c.close()
        return n

    subjects = [("base:torch.load", base), ("tensio:open+arrays", views),
                ("tensio:open+sum", summed)]
    times = {s: [] for s, _ in subjects}
    counts = {}
    for r in range(a.warmup + a.reps):
        for j in range(len(subjects)):
            s, fn = subjects[(r + j) % len(subjects)]
            t0 = time.perf_counter()
            counts[s] = fn()
            t = time.perf_counter() - t0
            if r >= a.warmup:
                times[s].append(t)
    if len(set(counts.values())) != 1:
        sys.exit(f"torch_bench.py: tensor counts differ: {counts}")
    for s, _ in subjects:
        for t in times[s]:
            print(f"R\ttorch\t{a.group}\t{s}\t{t:.9f}\t{size}\t{counts[s]}")
    print(f"M\ttorch\t{a.group}\tbase:torch.load\ttorch\t{torch.__version__}")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("out")
    g.add_argument("--bytes", type=int, default=1 << 30)
    g.add_argument("--tensors", type=int, default=1)
    g.add_argument("--resnet18", action="store_true")
    ld = sub.add_parser("load")
    ld.add_argument("path")
    ld.add_argument("--group", required=True)
    ld.add_argument("--reps", type=int, default=5)
    ld.add_argument("--warmup", type=int, default=1)
    a = ap.parse_args()
    gen(a) if a.cmd == "gen" else load(a)


if __name__ == "__main__":
    main()
