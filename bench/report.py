#!/usr/bin/python3
"""Turns tio_bench's result lines (bench/bench.h) into bench/results/latest.md
and latest.png (through gnuplot).

usage: report.py RAW.tsv MACHINE.tsv OUTDIR

Every table gives the median, min and max of the timed repetitions and the
ratio to the baseline measured in the same run, so 1.0 is "as fast as the
baseline" and 2.0 "twice as fast". Where the subject ran paired with its
baseline (P lines: repetitions interleaved) the ratio is the median of the
paired ratios, baseline time / subject time repetition by repetition, with
the largest distance of one from that median (±x %; above STEADY "not
steady"); otherwise (a baseline in a process of its own, or a latest.tsv of
before the P lines) baseline median time / subject median time. Goals are
the issue's; each is checked here and marked met or missed.
"""
import collections
import os
import shutil
import re
import statistics
import subprocess
import sys

RUNS = collections.OrderedDict()   # (case, group, subject) -> [(sec, bytes, items)]
FACTS = collections.defaultdict(dict)  # (case, group, subject) -> {key: value}
PAIRS = collections.defaultdict(list)  # (case, group, subject, baseline) -> [ratio]
HOST = collections.defaultdict(dict)  # (case, group) -> {before/after: how a save writes}
STEADY = 0.10  # bench.h's BN_STEADY


def load(raw):
    with open(raw) as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            if p[0] == "R" and len(p) == 7:
                RUNS.setdefault((p[1], p[2], p[3]), []).append(
                    (float(p[4]), int(p[5]), int(p[6])))
            elif p[0] == "M" and len(p) == 6:
                FACTS[(p[1], p[2], p[3])][p[4]] = p[5]
            elif p[0] == "P" and len(p) == 6:
                PAIRS[(p[1], p[2], p[3], p[4])].append(float(p[5]))
            elif p[0] == "H" and len(p) == 5:
                HOST[(p[1], p[2])][p[3]] = p[4]


def host_writes(case, group):
    """How a save onto a disk file system wrote in the rows of group (run.sh
    asks tio_bench host before and after them): 'whole', '64 KiB pieces',
    either with the free memory the host keeps, or 'before → after' where
    the host changed meanwhile."""
    h = HOST.get((case, group), {})
    b, a = h.get("before", "?"), h.get("after", "?")
    return b if b == a else f"{b} → {a}"


def med(key):
    return statistics.median(r[0] for r in RUNS[key])


def groups(case):
    seen = []
    for (c, g, _s) in RUNS:
        if c == case and g not in seen:
            seen.append(g)
    return seen


def subjects(case, group):
    return [s for (c, g, s) in RUNS if c == case and g == group]


def fmt_time(s):
    if s < 1e-7:
        return f"{s * 1e9:.1f} ns"
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.3f} s"


def rate(key, unit=1e9):
    """Median throughput over the bytes of the runs (bytes / median time)."""
    runs = RUNS[key]
    return statistics.median(r[1] for r in runs) / med(key) / unit


# cases whose subjects run interleaved a fixed number of times, without P
# lines: repetition i of each R list is one pair (bench/zmq.c, recvfiles.c),
# except for a subject measured by a process of its own
INTERLEAVED = ("zmq", "recvfiles")
OWN_PROCESS = ("alt:python-tensorcom",)


def pairs_of(case, group, subject, base):
    """The paired ratios (baseline time / subject time), or None."""
    pr = PAIRS.get((case, group, subject, base))
    if pr:
        return pr
    b, k = RUNS.get((case, group, base)), RUNS.get((case, group, subject))
    if (case in INTERLEAVED and subject not in OWN_PROCESS and subject != base and b and k
            and len(b) == len(k)):
        return [x[0] / y[0] for x, y in zip(b, k)]
    return None


def ratio(case, group, subject, base):
    """The median of the paired ratios where there are some, else baseline
    median time / subject median time."""
    pr = pairs_of(case, group, subject, base)
    if pr:
        return statistics.median(pr)
    b = (case, group, base)
    if b not in RUNS or (case, group, subject) not in RUNS:
        return None
    return med(b) / med((case, group, subject))


def spread(case, group, subject, base):
    """Largest relative distance of a paired ratio from their median, or None
    (not paired)."""
    pr = pairs_of(case, group, subject, base)
    if not pr:
        return None
    m = statistics.median(pr)
    return max(max(pr) / m - 1, 1 - min(pr) / m) if m > 0 else None


def fp(case, group, subject, base):
    """A table cell: the ratio, and for a paired one its spread; where that
    is not steady, also the ratio of the least times of each side (what
    each cost in its least disturbed run: on a host whose page faults
    strike either side at random, the readable figure)."""
    r = ratio(case, group, subject, base)
    d = spread(case, group, subject, base)
    if r is None or d is None:
        return fr(r)
    if d <= STEADY:
        return f"{r:.2f}× ±{d * 100:.0f} %"
    b, k = RUNS.get((case, group, base)), RUNS.get((case, group, subject))
    least = (f"; least times {min(x[0] for x in b) / min(x[0] for x in k):.2f}×"
             if b and k and min(x[0] for x in k) > 0 else "")
    # every repetition, not only the window shown (the steadiest one of a
    # bimodal host can be one where a single side was slow in every pair)
    allp = FACTS.get((case, group, subject), {}).get("all_pairs", "").split()
    if len(allp) >= 3:
        least += f"; all {allp[0]} pairs {float(allp[1]):.2f}×, least times {float(allp[2]):.2f}×"
    if len(allp) == 5:
        least += f", slow runs (over 2× their least) {base} {allp[3]}, {subject} {allp[4]}"
    return f"{r:.2f}× ±{d * 100:.0f} %, not steady{least}"


def steady_note(case, base):
    """For Goals.ratio: the slowest one's spread, when it is not steady."""
    def note(w):
        d = spread(case, w[2], w[1], base)
        return f"; not steady: ±{d * 100:.0f} %" if d is not None and d > STEADY else ""
    return note


def py_notes(case, pairs):
    """Lines comparing tensio with a Python baseline run in a process of its
    own: pairs = [(group, subject, base)]; medians, not paired."""
    out = []
    for g, s, b in pairs:
        r = ratio(case, g, s, b)
        if r is not None and (case, g, b) in RUNS:
            out.append(f"{g}: `{s}` {r:.2f}× `{b}` ({fmt_time(med((case, g, s)))} against "
                       f"{fmt_time(med((case, g, b)))})")
    notes = sorted({fa["note"] for (c, _g, s), fa in FACTS.items()
                    if c == case and "note" in fa and s in {b for _g, _s, b in pairs}})
    return out, notes


def paired(case, group, subject, base):
    """Median over repetitions of base time / subject time, repetition i of
    each paired (zmq runs them interleaved, so load hits both alike)."""
    b, k = RUNS.get((case, group, base)), RUNS.get((case, group, subject))
    if not b or not k or len(b) != len(k):
        return ratio(case, group, subject, base)
    return statistics.median(x[0] / y[0] for x, y in zip(b, k))


def fr(x):
    return "—" if x is None else f"{x:.2f}×"


def fmt_bytes(n):
    return f"{n / 1048576:.1f} MiB" if n >= 1048576 else f"{n / 1024:.1f} KiB"


def row(cells):
    return "| " + " | ".join(str(c) for c in cells) + " |"


def table(head, rows):
    out = [row(head), row(["---"] * len(head))]
    out += [row(r) for r in rows]
    return "\n".join(out)


def stats(key):
    t = [r[0] for r in RUNS[key]]
    return [fmt_time(statistics.median(t)), fmt_time(min(t)), fmt_time(max(t))]


class Goals:
    def __init__(self):
        self.rows = []

    def add(self, what, target, measured, ok, where=""):
        self.rows.append([what, target, measured, "met" if ok else "**missed**", where])

    def ratio(self, what, target, worst, threshold, extra=None):
        """worst = (ratio, subject, group) or None: met when ratio >= threshold.
        extra(worst) may add to the note."""
        if worst:
            note = f"slowest: {worst[1]} ({worst[2]})"
            if extra:
                note += extra(worst)
            self.add(what, target, f"{worst[0]:.2f}×", worst[0] >= threshold, note)


def lowest(worst, r, s, g):
    """The lower of worst and (r, s, g) by ratio (r None: worst)."""
    if r is None or (worst is not None and worst[0] <= r):
        return worst
    return (r, s, g)


CONVERT_HEAD = ["conversion", "subject", "median", "min", "max", "GB/s", "vs cp", "anon",
                "file", "shmem", "max RSS"]


# the conversion rows whose tensors come from files the container holds
SELECTED_ROWS = ("The rows `safetensors (N shards)` convert the many-tensor file's tensors "
                 "as a Hugging Face sharded checkpoint (N shards and an index, written by "
                 "`tensio convert --max-shard-size`), `safetensors (a selection)` the file "
                 "through `convert --exclude` of a name none has (a new container of its "
                 "views, holding it); both against `cp` of the one file.")


def convert_rows(case, group_list, rows, goals, what, plot, extra=None, timed=None,
                 threshold=0.7):
    """The rows of a conversion table (CONVERT_HEAD) for the groups of case,
    plot(g, s, key) for each, and the goals named `what` over them all: the
    slowest tensio subject ≥ threshold× cp (extra as in Goals.ratio; only the
    subjects timed(s) is true of when given), the largest peak of anonymous
    memory < 64 MiB."""
    worst = worst_mem = None
    for g in group_list:
        for s in subjects(case, g):
            k = (case, g, s)
            fa = FACTS.get(k, {})
            mib = lambda key: f"{int(fa.get(key, 0)) / 1024:.1f}"
            r = ratio(case, g, s, "base:cp")
            rows.append([g, s] + stats(k) + [f"{rate(k):.2f}", fp(case, g, s, "base:cp"),
                                             mib("peak_anon_kib"),
                                             mib("peak_file_kib"), mib("peak_shmem_kib"),
                                             mib("maxrss_kib")])
            plot(g, s, k)
            if s.startswith("tensio"):
                if timed is None or timed(s):
                    worst = lowest(worst, r, s, g)
                anon = int(fa.get("peak_anon_kib", 0)) / 1024
                if worst_mem is None or anon > worst_mem[0]:
                    worst_mem = (anon, s, g)
    sn = steady_note(case, "base:cp")
    goals.ratio(what, f"≥ {threshold:g}× cp", worst, threshold,
                lambda w: (extra(w) if extra else "") + sn(w))
    if worst_mem:
        goals.add(f"{what}, peak anonymous memory", "< 64 MiB", f"{worst_mem[0]:.1f} MiB",
                  worst_mem[0] < 64, f"largest: {worst_mem[1]} ({worst_mem[2]})")


def onnx_section(md, goals, plots, mach=()):
    """8. ONNX: open + list of a generated .onnx against python3-onnx's
    onnx.load of the same file, and ONNX ⇄ rten conversions against cp."""
    big = small = None
    rows = []
    plot = []
    for g in groups("onnx"):
        k = ("onnx", g, "tensio")
        if k not in RUNS:
            continue
        fa = FACTS.get(k, {})
        if big is None:
            big = g  # run.sh measures the model of BENCH_MODEL_SIZE first
        elif small is None:
            small = g
        for s in subjects("onnx", g):
            fk = FACTS.get(("onnx", g, s), {})
            n = int(fa.get("constants", 0)) if s == "tensio" else RUNS[("onnx", g, s)][0][2]
            anon = (f"{int(fk['anon_kib']) / 1024:.1f}" if "anon_kib" in fk else "")
            peak = (f"{int(fk['maxrss_kib']) / 1024:.1f}" if "maxrss_kib" in fk else "")
            rows.append([g, "tensio: open + list" if s == "tensio" else s, n,
                         fmt_bytes(int(fa.get("file_bytes", 0)))] + stats(("onnx", g, s)) +
                        [fmt_time(med(("onnx", g, s)) / max(n, 1)), anon, peak,
                         fr(ratio("onnx", g, s, "base:onnx.load"))])
            plot.append(("median", f"{g.split(',')[-1].strip()}: "
                         f"{'open + list' if s == 'tensio' else s}", med(("onnx", g, s)) * 1e3))
    missing = [f"`{s}` not measured: {fa['missing']}" for (c, g, s), fa in FACTS.items()
               if c == "onnx" and "missing" in fa]
    md.append("## 8. ONNX\n\nA generated model (a chain of `Add` nodes, one float32 "
              "initializer each, written by tensio as `raw_data`). *Open + list*: "
              "`tio_open` and every node, value and initializer's name, dtype, shape and "
              "size, as in section 6, in this process; *anon* is its RssAnon at the end "
              "(before the free): what the open allocated, the data staying in the mapped "
              "file. The same initializers of 4 KiB each show what the open costs without "
              "the bytes (the goal is met when the large file takes at most 4× its time, "
              "for some 250× the bytes, and the open allocates less than 64 MiB). Baseline: `onnx.load` (Debian's python3-onnx, protobuf's C++ "
              "implementation) of the same file and a loop over its initializers, in one "
              "Python process (import not timed); *peak* is that process's max RSS.\n")
    md.append(table(["model", "subject", "initializers", "file", "median", "min", "max",
                     "per initializer", "anon MiB", "peak MiB", "vs onnx.load"], rows))
    if missing:
        md.append("\n" + "; ".join(missing) + ".\n")
    if big and small:
        tb, ts = med(("onnx", big, "tensio")), med(("onnx", small, "tensio"))
        fb = FACTS[("onnx", big, "tensio")]
        fs = FACTS[("onnx", small, "tensio")]
        bytes_x = int(fb.get("file_bytes", 1)) / max(int(fs.get("file_bytes", 1)), 1)
        anon = int(fb.get("anon_kib", 0)) / 1024
        load = ("onnx", big, "base:onnx.load")
        note = (f"{fmt_time(tb)} for {big}, {fmt_time(ts)} for {small} ({bytes_x:.0f}× "
                f"fewer bytes); RssAnon {anon:.1f} MiB")
        if load in RUNS:
            note += (f"; onnx.load {fmt_time(med(load))}, peak RSS "
                     f"{int(FACTS[load].get('maxrss_kib', 0)) / 1024:.0f} MiB")
        goals.add("ONNX open + list", "O(initializers), zero-copy",
                  f"{tb / ts:.2f}× the time for {bytes_x:.0f}× the bytes",
                  tb / ts <= 4 and anon < 64, note)

    # issue 36: a .tflite's open + list at <= 2 us per tensor; each constant's
    # buffer length is read by one pread() (machine.tsv says what one costs)
    preads = "; ".join(f"{k.split(', ')[-1]} {v.split(' per ')[0]}" for k, v in mach
                       if k.startswith("pread, "))
    for g in groups("onnx"):
        k = ("onnx", g, "tensio")
        if not g.startswith("tflite:") or k not in RUNS:
            continue
        n = int(FACTS.get(k, {}).get("constants", 0))
        if n:
            per = med(k) / n
            goals.add("TFLite open + list", "≤ 2 µs per tensor", f"{fmt_time(per)} per tensor",
                      per <= 2e-6, f"{g}; one pread() of a buffer's length per constant"
                      + (f", a 4-byte pread() here: {preads}" if preads else ""))

    rows = []
    for g in ("onnx→rten", "rten→onnx", "tflite→tflite"):
        if g not in groups("onnx"):
            continue
        hashed = (lambda w: f"; SHA-256 of the input alone: "
                  f"{fr(ratio('onnx', g, 'base:sha256', 'base:cp'))} cp"
                  if ("onnx", g, "base:sha256") in RUNS else "")
        # issue 36: .tflite -> .tflite at 0.9x cp
        convert_rows("onnx", [g], rows, goals,
                     f"{g.replace('onnx', 'ONNX').replace('tflite', 'TFLite')} convert",
                     lambda g, s, k: plot.append(("median", f"{g}: {s}", med(k) * 1e3)),
                     hashed, threshold=0.9 if g == "tflite→tflite" else 0.7)
    if rows:
        md.append("\nConversions, one process per repetition as in section 4 (input in the "
                  "page cache, output written where section 4 writes): `tensio:cli` is "
                  "`tensio convert --no-sync`, `tensio:lib` `tio_open` + `tio_save`, "
                  "`base:cp` `cp` of the input. `tflite→tflite` rewrites a generated "
                  "TensorFlow Lite model of the same constants (one subgraph of constants: "
                  "`tio_bench gen --format tflite`). An .rten written from ONNX carries "
                  "`onnx_hash`, the SHA-256 of the whole .onnx (as rten-convert writes it): "
                  "`base:sha256` is that hash alone (the input mapped, one OpenSSL `EVP_Digest` "
                  "over it, in a process of its own). GB/s counts "
                  "the bytes written (for `base:sha256`, read).\n")
        md.append(table(CONVERT_HEAD, rows))
    # ONNX -> TFLite: a CNN (issue 36: >= 0.5x cp), MatMul layers (every weight
    # transposed on the way); < 64 MiB anonymous memory
    lowerings = [
        ("onnx→tflite, CNN", "ONNX→TFLite convert", 0.5,
         "ONNX → TFLite of a generated CNN (`tio_bench gen --graph conv`: Conv 3×3 + Relu "
         "layers), whose Conv weights are permuted OIHW → OHWI on the way and each Relu fused "
         "into its CONV_2D: `tensio convert --no-sync`, against `cp` of the .onnx, as above."),
        ("onnx→tflite, MLP", "ONNX→TFLite convert, transposed weights", 0.2,
         "ONNX → TFLite of generated MatMul + Relu layers (`tio_bench gen --graph mlp`), each "
         "[K, K] float32 weight transposed into a FULLY_CONNECTED's [N, K] on the way (by bands "
         "and tiles; docs/performance.md, \"Casting a model's weights\"), against `cp` of the "
         ".onnx."),
    ]
    for prefix, what, threshold, text in lowerings:
        gs = [g for g in groups("onnx") if g.startswith(prefix)]
        if not gs:
            continue
        rows = []
        convert_rows("onnx", gs, rows, goals, what,
                     lambda g, s, k: plot.append(("median", f"{g}: {s}", med(k) * 1e3)),
                     threshold=threshold)
        md.append("\n" + text + "\n")
        md.append(table(CONVERT_HEAD, rows))
    plots["onnx"] = plot


def paired_rows(case, base, cells):
    """The table rows of a case paired with base: group, subject, the time
    statistics, cells(key, facts), and the ratio to base; and the slowest
    tensio subject's ratio (for goals.ratio)."""
    rows, worst = [], None
    for g in groups(case):
        for s in subjects(case, g):
            k = (case, g, s)
            r = None if s == base else ratio(case, g, s, base)
            rows.append([g, s] + stats(k) + cells(k, FACTS.get(k, {})) +
                        ["" if r is None else fp(case, g, s, base)])
            if s.startswith("tensio"):
                worst = lowest(worst, r, s, g)
    return rows, worst


def per_sample_cells(k, _fa):
    """GB/s and the time per item (sample) of a Python shard row."""
    return [f"{rate(k):.2f}", fmt_time(med(k) / max(RUNS[k][0][2], 1))]


def shards_section(md, goals):
    """10. WebDataset shards and LMDB (issue 21): iterate a shard against cat,
    convert shard→shard against cp, Python tarfile + tenbin.py against
    tensio.Shard, LMDB random reads as the store grows."""
    md.append("## 10. WebDataset shards and LMDB\n\nA WebDataset shard written by "
              "`tio_bench shards gen` with `tio_shard_writer` (plain ustar): per sample "
              "`KEY.ten` (tenbin: one float32 tensor, two in every other sample) and "
              "`KEY.cls`, the tensors' bytes adding up to the data size. *iterate*: "
              "`tio_shard_open`, then for every sample every tensor member opened "
              "(`tio_shard_open_member`: views into the mapped shard) and every tensor's "
              "bytes checksummed as in section 2, `tio_shard_free`; paired with `base:cat`: "
              "`read()` of the whole shard into a warm buffer (page cache warm). The goal: "
              "at least 0.8× the time of cat.\n")
    rows, worst = paired_rows("shards", "base:cat", lambda k, fa: [
        f"{rate(k):.2f}", fmt_time(med(k) / int(fa["samples"])) if "samples" in fa else "",
        fa.get("tensors", "")])
    if rows:
        md.append(table(["shard", "subject", "median", "min", "max", "GB/s of shard",
                         "per sample", "tensors", "vs cat"], rows))
    goals.ratio("shard iterate + checksum", "≥ 0.8× cat", worst, 0.8,
                steady_note("shards", "base:cat"))

    rows = []
    convert_rows("shards_convert", groups("shards_convert"), rows, goals,
                 "shard→shard convert (members copied)", lambda g, s, k: None,
                 timed=lambda s: s == "tensio:copy")
    if rows:
        md.append("\nshard → shard, one process per repetition as in section 4 (input in the "
                  "page cache): `tensio:copy` is `tensio convert --no-sync IN.tar OUT.tar` "
                  "(every member copied, in order, under its name), `tensio:--member-to F` "
                  "the same with every .ten member re-encoded to F (npy holds one array and "
                  "half the samples hold two: BENCH_SHARD_MEMBER_TO picks F), `base:cp` `cp` "
                  "of the shard. The goal, ≥ 0.7× cp, is the copy's; the re-encoding is "
                  "shown beside it.\n")
        md.append(table(CONVERT_HEAD, rows))

    rows, _ = paired_rows("shards_py", "base:tarfile+tenbin.py", per_sample_cells)
    missing = [f"`{s}` not measured: {fa['missing']}" for (c, g, s), fa in FACTS.items()
               if c == "shards_py" and "missing" in fa]
    if rows or missing:
        md.append("\nPython, the same shard, `bench/py/shard_read.py` in one Debian python3 "
                  "process, the subjects interleaved: `base:tarfile+tenbin.py` reads it as "
                  "WebDataset does (`tarfile` in streaming mode, each member's bytes read, "
                  "members grouped into samples by key, every .ten decoded by tenbin.py's "
                  "algorithm as in section 9); `tensio:Shard` iterates `tensio.Shard` "
                  "(`sample[\"ten\"]` the list of arrays, views into the mapped shard). "
                  "*decode*: the samples' arrays built; *decode + touch*: and one byte of "
                  "every 4 KiB of every array read (its pages mapped in); *decode + crc32*: "
                  "`zlib.crc32` over every array's bytes instead (every subject reads every "
                  "byte; their sums and crc32s agree). `tensio:ShardDataset` iterates `tensio.torch.ShardDataset(path)` "
                  "in the process (one DataLoader worker's work: torch tensors, views of "
                  "the mapping), `base:cat` reads the shard's bytes (1 MiB `readinto`), "
                  "nothing decoded; with 16 samples of 64 MiB the dataset is compared with "
                  "it.\n")
        if rows:
            md.append(table(["shard", "subject", "median", "min", "max", "GB/s of shard",
                             "per sample", "vs tarfile"], rows))
        if missing:
            md.append("\n" + "; ".join(missing) + ".\n")
        dataset_goals(goals)

    lmdb_table(md, goals)


def dataset_goals(goals):
    """Issue 35's goals for tensio.torch.ShardDataset, one worker's work in
    one process: ≥ 3× tarfile + tenbin.py where samples are small (under
    1 MiB; every array's bytes checksummed by both), ≥ 1× cat (the shard's
    bytes read) where they are large (every page of every array read)."""
    for g in groups("shards_py"):
        k = ("shards_py", g, "tensio:ShardDataset")
        if k not in RUNS:
            continue
        per = RUNS[k][0][1] / max(RUNS[k][0][2], 1)
        # large samples: every page read (touch), against cat reading the
        # shard; small ones: every byte checksummed, against tarfile's way
        base, want, work = (("base:cat", 1.0, "decode + touch") if per >= (1 << 20) else
                            ("base:tarfile+tenbin.py", 3.0, "decode + crc32"))
        if not g.endswith(work):
            continue
        r = ratio("shards_py", g, "tensio:ShardDataset", base)
        if r is not None:
            goals.add(f"ShardDataset per worker, {'large' if want == 1.0 else 'small'} samples",
                      f"≥ {want:g}× {base[5:]}", fp("shards_py", g, "tensio:ShardDataset", base),
                      r >= want, g)


def http_section(md, goals):
    """10b. Shards and files over HTTP (issue 35): a shard iterated from nginx
    against curl, the bytes `tensio ls` fetches of a large file, Python."""
    md.append("## 10b. Over HTTP\n\nDebian's nginx on 127.0.0.1 serves the files from the "
              "page cache (`bench/py/http_serve.py`). *iterate*: `tensio ls URL.tar` (every "
              "member of the shard read as a stream, one GET: docs/sources.md) against "
              "`curl -s -o /dev/null URL.tar`, one process per repetition each, interleaved; "
              "the shards as in section 10 (`tio_bench shards gen`), one with small samples "
              "and one of 16 samples (64 MiB each in a 1 GiB shard). The goal: at least 0.8× curl.\n")
    rows, worst = paired_rows("http_shards", "base:curl", lambda k, fa: [
        f"{rate(k):.2f}",
        f"{int(fa['peak_anon_kib']) / 1024:.1f}" if "peak_anon_kib" in fa else ""])
    if rows:
        md.append(table(["shard", "subject", "median", "min", "max", "GB/s of shard",
                         "peak anon MiB", "vs curl"], rows))
    goals.ratio("shard over HTTP, iterate", "≥ 0.8× curl", worst, 0.8,
                steady_note("http_shards", "base:curl"))
    rows = []
    most = None
    for g in uniq(g for (c, g, _s) in FACTS if c == "http_ls"):
        fa = FACTS.get(("http_ls", g, "tensio:ls"), {})
        if "fetched" in fa and "size" in fa:
            f, n = int(fa["fetched"]), int(fa["size"])
            rows.append([g, f"{n:,}", f"{f:,}", f"{100 * f / n:.3f} %", fa.get("requests", "")])
            most = max(most or 0, f / n)
    if rows:
        md.append("\n`tensio ls URL` of a large file: the body bytes nginx sent (its access "
                  "log's `$body_bytes_sent`), against the file's size.\n")
        md.append(table(["file", "size", "fetched", "share", "requests"], rows))
        goals.add("ls of a file over HTTP, bytes fetched", "< 1 % of the file",
                  f"{100 * most:.3f} %", most < 0.01, "")
    rows, _ = paired_rows("shards_http_py", "base:curl+tarfile+tenbin.py", per_sample_cells)
    if rows:
        md.append("\nPython, the small-sample shard from nginx (`bench/py/shard_read.py "
                  "--url`): `base:curl+tarfile+tenbin.py` is WebDataset's way (a `curl` pipe, "
                  "`tarfile` in streaming mode, tenbin.py's decoding), `tensio:stream_shards` "
                  "iterates `tensio.stream_shards(URL)`.\n")
        md.append(table(["shard", "subject", "median", "min", "max", "GB/s of shard",
                         "per sample", "vs curl+tarfile"], rows))


def fmt_ns(s):
    """A time of about a microsecond, in ns (fmt_time keeps one decimal of µs)."""
    return f"{s * 1e9:,.0f} ns"


def lmdb_table(md, goals):
    """Section 10's LMDB part: the time per random read at each store size."""
    get = {}
    rows = []
    sizes = sorted((int(g) for g in groups("lmdb_read") if g.isdigit()))
    for n in sizes:
        g = str(n)
        per = {}
        for s in ("lmdb:find", "tensio:get", "tensio:get-first-touch"):
            k = ("lmdb_read", g, s)
            if k in RUNS:
                per[s] = med(k) / max(RUNS[k][0][2], 1)
        w = ("lmdb_write", g, "tensio:put")
        wt = (f"{fmt_time(med(w))} ({fmt_ns(med(w) / max(RUNS[w][0][2], 1))} per record)"
              if w in RUNS else "")
        if "tensio:get" in per:
            get[n] = per
        own = (fmt_ns(per["tensio:get"] - per["lmdb:find"])
               if "tensio:get" in per and "lmdb:find" in per else "")
        rows.append([f"{n:,}", wt] + [fmt_ns(per[s]) if s in per else "—"
                                      for s in ("lmdb:find", "tensio:get",
                                                "tensio:get-first-touch")] + [own])
    if not rows:
        return
    reads = RUNS[("lmdb_read", str(sizes[0]), "tensio:get")][0][2] if get else 0
    md.append(f"\nLMDB random reads (`tio_bench lmdb`): one store growing through the sizes "
              f"(records of one float32 [64] tensor in tenbin, put in batches of 1000; "
              f"*added* is the time to add the records since the size before), then at each "
              f"size {reads:,} random keys read in one read transaction per repetition. "
              f"`tensio:get` is `tio_lmdb_get` (LMDB's lookup, then the record opened as "
              f"views into LMDB's map) and a checksum of the tensor; `lmdb:find` is "
              f"`tio_lmdb_find` alone (LMDB's `mdb_get`) and a checksum of the record's "
              f"bytes: the B-tree's cost, which grows with log n and with the cache misses "
              f"of a larger tree; *tensio's part* is the difference. The first pass over the "
              f"keys (`get-first-touch`) also faults their pages into the process. Per read, "
              f"medians.\n")
    md.append(table(["records", "added", "lmdb:find", "tensio:get", "get, first touch",
                     "tensio's part"], rows))
    if len(get) > 1:
        lo, hi = min(get), max(get)
        g = get[hi]["tensio:get"] / get[lo]["tensio:get"]
        note = (f"per read {fmt_ns(get[lo]['tensio:get'])} at {lo:,} records, "
                f"{fmt_ns(get[hi]['tensio:get'])} at {hi:,}")
        if "lmdb:find" in get[lo] and "lmdb:find" in get[hi]:
            f = get[hi]["lmdb:find"] / get[lo]["lmdb:find"]
            own_lo = get[lo]["tensio:get"] - get[lo]["lmdb:find"]
            own_hi = get[hi]["tensio:get"] - get[hi]["lmdb:find"]
            note += f"; LMDB's mdb_get alone {f:.2f}×"
            goals.add(f"LMDB read, tensio's part (get − find), {lo:,} → {hi:,} records",
                      "flat (≤ 1.5×)", f"{own_hi / own_lo:.2f}×" if own_lo > 0 else "—",
                      own_lo > 0 and own_hi / own_lo <= 1.5,
                      f"{fmt_ns(own_lo)} → {fmt_ns(own_hi)} per read")
        goals.add(f"LMDB random read, {lo:,} → {hi:,} records", "flat (≤ 1.5×)",
                  f"{g:.2f}×", g <= 1.5, note)


def python_section(md, goals):
    """9. Python (issue 18): the tensio package against tenbin.py's algorithm,
    np.load(mmap_mode="r") and the Python tensorcom baseline, one run."""
    base_of = {"open": "base:tenbin.load", "decode": "base:tenbin.decode_buffer",
               "encode": "base:tenbin.encode_buffer", "stream": "alt:python-tensorcom"}
    rows = []
    worst = {}
    for g in groups("python"):
        kind = g.split()[0]
        base = base_of.get(kind)
        for s in subjects("python", g):
            k = ("python", g, s)
            r = ratio("python", g, s, base) if base and s != base else None
            gbs = rate(k) if kind == "stream" else None
            rows.append([g, s] + stats(k) + [f"{gbs:.2f}" if gbs else "", fr(r)])
            if s.startswith("tensio") and r is not None:
                if kind not in worst or r < worst[kind][0]:
                    worst[kind] = (r, s, g)
    md.append("## 9. Python\n\nThe `tensio` package (docs/python.md) in Debian's python3, "
              "`bench/py/py_bench.py`. *open*: `tensio.load` of a .ten (the file mapped, a view "
              "per tensor) against `base:tenbin.load`, WebDataset's `tenbin.load` algorithm "
              "rewritten in the script (reads the whole file, slices its chunks — copies of "
              "`bytes` — and `np.frombuffer` per array; the real module is not a Debian "
              "package), and `np.load(mmap_mode=\"r\")` of an .npy of the same array "
              "(page cache warm). *decode*/*encode*: `tensio.tenbin.decode_buffer` / "
              "`encode_buffer` on bytes in memory against the same baseline's. *stream*: "
              "`tensio.Stream` PUSH → PULL over tcp://127.0.0.1 into a second process (the "
              "arrays, which Python owns, are copied into the message once; the receiver "
              "gets views into the frames) against `alt:python-tensorcom` "
              "(bench/py/tensorcom_bench.py, the same sizes and budget). Ratios: baseline "
              "median time / tensio median time.\n")
    md.append(table(["group", "subject", "median", "min", "max", "GB/s", "vs baseline"],
                    rows))
    if "open" in worst:
        goals.ratio("Python: tensio.load of a .ten vs tenbin.load", "≥ 1000×",
                    worst["open"], 1000)
    if "decode" in worst:
        goals.ratio("Python: tensio.tenbin.decode_buffer vs tenbin.py's", "≥ 5×",
                    worst["decode"], 5)


def torch_section(md, goals):
    """11. PyTorch checkpoints (issue 34): tensio against torch.load of the
    same files, written by torch.save; open + list and .pt → safetensors are
    rows of sections 1 and 4 (subject tensio:torch, group torch→safetensors)."""
    rows = []
    for g in groups("torch"):
        base = ("torch", g, "base:torch.load")
        for s in subjects("torch", g):
            k = ("torch", g, s)
            r = med(base) / med(k) if base in RUNS and s != base[2] else None
            rows.append([g, s] + stats(k) + [str(RUNS[k][0][2]), fr(r)])
    md.append("## 11. PyTorch checkpoints\n\nFiles written by Debian's `torch.save` "
              "(zip layout): one float32 tensor, the many-tensor state dict of the format "
              "rows, and torchvision's resnet18 state dict (random weights). "
              "`bench/py/torch_bench.py`, one Python process per file, the subjects' "
              "repetitions interleaved: `base:torch.load` is `torch.load(weights_only=True)` "
              "(reads every byte into tensors); `tensio:open+arrays` is `tensio.open` and a "
              "NumPy array of every tensor (views into the mapping); `tensio:open+sum` the "
              "same, then each array summed, its bytes paged in as torch.load's are. "
              "Ratio: torch.load's median / the subject's median. Open + list in C is in "
              "section 1 (`tensio:torch`), `.pt` → safetensors in section 4.\n")
    md.append(table(["file", "subject", "median", "min", "max", "tensors",
                     "vs torch.load"], rows))
    for g, target, limit in (("1 tensor", "< 1 ms", None), (None, "≤ 2 µs per tensor", 2e-6)):
        ks = [k for k in RUNS if k[0] == "open" and k[2] == "tensio:torch"
              and ((g and k[1] == g) or (not g and RUNS[k][0][2] > 1))]
        for k in ks:
            if limit is None:
                goals.add("torch: open + list, 1 tensor", target, fmt_time(med(k)),
                          med(k) < 1e-3, f"file of {fmt_bytes(RUNS[k][0][1])}")
            else:
                per = med(k) / RUNS[k][0][2]
                goals.add(f"torch: open + list, {RUNS[k][0][2]} tensors", target,
                          f"{fmt_time(per)} per tensor", per <= limit, "")


def main():
    raw, machine, outdir = sys.argv[1:4]
    load(raw)
    mach = []
    with open(machine) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("\t")
            mach.append((k, v))
    goals = Goals()
    md = []
    plots = {}

    # -------------------------------------------------------------- open
    if groups("open"):
        rows = []
        plot = []
        for g in groups("open"):
            for s in subjects("open", g):
                k = ("open", g, s)
                items = RUNS[k][0][2]
                per = (fmt_time(med(k) / items) if (s.startswith("tensio") or s == "base:touch")
                       and items else "")
                rows.append([g, s] + stats(k) + [per, fp("open", g, s, "base:read"),
                                                 fr(ratio("open", g, s, "base:np.load"))])
                plot.append((g, s, med(k) * 1e3))
        md.append("## 1. Open + list\n\nOpen the file and read every tensor's name, dtype, "
                  "shape and size (no data). Baselines: `read()` of the whole file into a warm "
                  "buffer (paired with each open: the same file, repetitions interleaved), "
                  "`np.load(mmap_mode=\"r\")` of the .npy file (one array, a Python process "
                  "of its own), and for safetensors `base:py-safetensors(numpy)` (below). "
                  "`base:touch` is the page-fault cost: the file mapped, one byte read from "
                  "every 4 KiB page (1 tensor) or from as many pages as there are tensors, "
                  "spread evenly (many tensors), unmapped; *per tensor* is then per touch.\n")
        md.append(table(["file", "subject", "median", "min", "max", "per tensor / touch",
                         "vs read", "vs np.load (not paired)"], rows))
        lines, notes = py_notes("open", [(g, "tensio:safetensors", "base:py-safetensors(numpy)")
                                         for g in groups("open")])
        if lines:
            md.append("\nsafetensors against `base:py-safetensors(numpy)` (bench/py/st_read.py: "
                      "the JSON header parsed, the file mapped with `numpy.memmap`, one "
                      "`np.frombuffer` view per tensor; medians, not paired): " +
                      "; ".join(lines) + ". " + " ".join(n[0].upper() + n[1:] + "." for n in notes)
                      + "\n")
        one = [med(k) for k in RUNS if k[0] == "open" and k[2].startswith("tensio")
               and RUNS[k][0][2] == 1]
        if one:
            goals.add("open + list, 1 tensor", "< 1 ms", fmt_time(max(one)),
                      max(one) < 1e-3, "slowest format")
        many = [(med(k) / RUNS[k][0][2], k) for k in RUNS if k[0] == "open"
                and k[2].startswith("tensio") and RUNS[k][0][2] > 1]
        if many:
            worst = max(many)
            touch = ("open", worst[1][1], "base:touch")
            goals.add("open + list, many tensors", "≤ 2 µs per tensor",
                      f"{fmt_time(worst[0])} per tensor", worst[0] <= 2e-6,
                      f"slowest: {worst[1][2]} ({worst[1][1]})" +
                      (f"; a page fault here (base:touch): {fmt_time(med(touch) / RUNS[touch][0][2])}"
                       " per touch" if touch in RUNS else ""))
        plots["open"] = plot

    # ------------------------------------------- tensio ls, a process each
    if groups("ls"):
        rows = []
        worst = None
        for g in groups("ls"):
            one_k, many_k = ("ls", g, "base:ls-1"), ("ls", g, "tensio:ls")
            m = re.search(r"(\d+) tensors", g)
            if one_k not in RUNS or many_k not in RUNS or not m or int(m.group(1)) < 2:
                continue
            per = (med(many_k) - med(one_k)) / (int(m.group(1)) - 1)
            rows.append([g, stats(one_k)[0], stats(many_k)[0], fmt_time(per),
                         fp("ls", g, "tensio:ls", "base:ls-1")])
            if worst is None or per > worst[0]:
                worst = (per, g)
        if rows:
            md.append("\n### `tensio ls` in a process of its own\n\nThe CLI started for each "
                      "listing (`tensio ls FILE`, output to /dev/null), of the 1-tensor file "
                      "(`base:ls-1`: process start, dynamic linking, the mapping, one row) "
                      "and of the many-tensor file, repetitions interleaved. *Per tensor* is "
                      "the difference of the medians over the tensors added: the open, the "
                      "heap the process faults in, the table it prints, the free.\n")
            md.append(table(["format, file", "ls of 1 tensor", "ls of many", "per tensor",
                             "1-tensor time / many (paired)"], rows))
            goals.add("`tensio ls`, a process each, many tensors", "≤ 2 µs per tensor",
                      f"{fmt_time(worst[0])} per tensor", worst[0] <= 2e-6,
                      f"slowest: {worst[1]}; the process's start subtracted (ls of a "
                      "1-tensor file)")

    # -------------------------------------------------------------- scan
    if groups("scan"):
        rows = []
        plot = []
        worst = None
        for g in groups("scan"):
            for s in subjects("scan", g):
                k = ("scan", g, s)
                r = ratio("scan", g, s, "base:memcpy")
                rows.append([g, s] + stats(k) + [f"{rate(k):.2f}",
                                                 fp("scan", g, s, "base:memcpy")])
                plot.append((g, s, rate(k)))
                if s.startswith("tensio"):
                    worst = lowest(worst, r, s, g)
        md.append("## 2. Read all data + checksum\n\nOpen, then a 64-bit checksum "
                  "(Fletcher-style, 4 lanes) of every tensor's bytes through the views the "
                  "library hands out (`tio_tensor_bytes`: where they lie, aligned or not), "
                  "then free. Baselines: `memcpy` of the same number of "
                  "bytes between two buffers already in memory (paired with each scan, "
                  "repetitions interleaved), and the checksum alone over "
                  "a buffer in memory. GB/s = 10⁹ bytes of tensor data per second.\n")
        md.append(table(["file", "subject", "median", "min", "max", "GB/s", "vs memcpy"], rows))
        lines, notes = py_notes("scan", [(g, "tensio:safetensors", "base:py-safetensors(numpy)")
                                         for g in groups("scan")])
        if lines:
            md.append("\nsafetensors against `base:py-safetensors(numpy)` (the reader of "
                      "section 1, then a sum of each tensor's 64-bit words with NumPy; medians, "
                      "not paired): " + "; ".join(lines) + ". " +
                      " ".join(n[0].upper() + n[1:] + "." for n in notes) + "\n")
        goals.ratio("read + checksum", "≥ 0.8× memcpy", worst, 0.8,
                    steady_note("scan", "base:memcpy"))
        # and against read() of the whole file into a warm buffer (the open
        # case's paired baseline, same file): median over median
        worst_rd = None
        for g in groups("scan"):
            base = ("open", g.split(",")[0], "base:read")
            if base not in RUNS:
                continue
            for s in subjects("scan", g):
                if s.startswith("tensio"):
                    worst_rd = lowest(worst_rd, med(base) / med(("scan", g, s)), s, g)
        goals.ratio("read + checksum vs read() of the file", "≥ 1.0× read()", worst_rd, 1.0,
                    lambda w: " (medians of the open case's base:read and the scan, not paired)")
        plots["scan"] = plot
    if groups("sha256"):
        rows = []
        for g in groups("sha256"):
            for s in subjects("sha256", g):
                k = ("sha256", g, s)
                rows.append([g, s] + stats(k) + [f"{rate(k):.2f}",
                                                 fp("sha256", g, s, "base:openssl-mem")])
        md.append("\nSHA-256 of every tensor (`tio_tensor_sha256`), against OpenSSL's "
                  "`EVP_Digest` over the same bytes already in memory:\n")
        md.append(table(["file", "subject", "median", "min", "max", "GB/s", "vs OpenSSL"], rows))

    # -------------------------------------------------------------- write
    if groups("write"):
        rows = []
        plot = []
        worst = None
        for g in groups("write"):
            base = "base:write+fsync" if g.endswith("+fsync") else "base:write"
            for s in subjects("write", g):
                k = ("write", g, s)
                r = ratio("write", g, s, base)
                rows.append([g, s] + stats(k) + [f"{rate(k):.2f}", fp("write", g, s, base)])
                plot.append((g, s, rate(k)))
                if s.startswith("tensio") and not g.endswith("+fsync"):
                    worst = lowest(worst, r, s, g)
        md.append("## 3. Write\n\n`tio_save` of the same tensors (borrowed from memory) in "
                  "each format. It writes a temporary file and renames it over the target; "
                  "rows without `+fsync` use `TIO_SAVE_NO_SYNC` and are compared with "
                  "`open` + `write()` + `close` of the same number of bytes, the `+fsync` rows "
                  "with the library's default (fsync of the file and its directory) against "
                  "`write()` + `fsync()`, paired (repetitions interleaved). Dirty pages are "
                  "flushed (untimed) before each "
                  "repetition. GB/s counts the bytes of the file written. .npy holds one "
                  "array: its rows are one tensor, with `base:np.save` of an array of the same "
                  "bytes beside them (bench/py/np_save.py, a Python process of its own).\n")
        md.append(table(["tensors", "subject", "median", "min", "max", "GB/s", "vs write()"],
                        rows))
        lines, _notes = py_notes("write", [(g, "tensio:npy" + ("+fsync" if g.endswith("+fsync") else ""),
                                            "base:np.save") for g in groups("write")])
        if lines:
            md.append("\n.npy against `np.save` (medians, not paired): " + "; ".join(lines) +
                      ".\n")
        goals.ratio("write each format", "≥ 0.8× write()", worst, 0.8,
                    steady_note("write", "base:write"))
        plots["write"] = plot

    # -------------------------------------------------------------- convert
    if groups("convert"):
        rows = []
        plot = []
        # issue 22: unchanged tensor bytes go by copy_file_range, as cp's do
        convert_rows("convert", groups("convert"), rows, goals, "convert",
                     lambda g, s, k: plot.append((g, s, rate(k))), threshold=0.9)
        md.append("## 4. Convert\n\nA separate process per repetition: `tensio:lib` is "
                  "`tio_open` + `tio_save` (`TIO_SAVE_NO_SYNC`, names dropped where the "
                  "target has none), `tensio:cli` is `tensio convert --no-sync`, `base:cp` is "
                  "`cp` of the input file; the processes of a conversion run interleaved "
                  "(paired repetitions). Memory is sampled from /proc/PID/status every "
                  "5 ms (peaks, MiB); max RSS is the kernel's high-water mark. File pages "
                  "are the input's mapping: page cache, shared and reclaimable, not "
                  "allocated. GB/s counts the bytes of the file written. " + SELECTED_ROWS +
                  "\n")
        md.append(table(CONVERT_HEAD, rows))
        plots["convert"] = plot

    # -------------------------------------------------------------- convert_disk
    if groups("convert_disk"):
        # issue 38: onto the file system the data files live on (a disk's)
        fs = sorted({g.split(", ")[2] for g in groups("convert_disk") if g.count(", ") >= 2})
        rows = []
        convert_rows("convert_disk", groups("convert_disk"), rows, goals,
                     f"convert onto {'/'.join(fs) or 'the data files’ file system'}",
                     lambda g, s, k: None, threshold=0.9)
        md.append(f"## 4b. Convert onto {'/'.join(fs)}, where the data files are\n\n"
                  "The conversions of section 4 (and of the 1-tensor files) written onto the "
                  "file system of the input files rather than the tmpfs, every repetition "
                  "starting with no dirty pages (`sync`, untimed), paired with `cp`: "
                  "`tensio:cli` is `tensio convert --no-sync` against `cp`; in the rows "
                  "ending in `fsync`, `tensio convert` with its default durability (fsync "
                  "of the file and its directory) against `cp` followed by `sync` of the "
                  "file (its fsync). On ext4 `cp` copies with `copy_file_range()`, which "
                  "tensio uses where the output offsets are congruent with the source's; "
                  "the other tensor bytes go the way that costs least on the machine of the "
                  "day: a save of 256 MiB or more times reading them in (`pread()` into a "
                  "buffer, or `splice()` where writes go in pieces), reading them through "
                  "the buffer, and `copy_file_range()` on up to 96 MiB of them (a way's second "
                  "16 MiB skipped where its first cost 1.5 times the best) and keeps the "
                  "cheapest. On a virtual machine whose balloon hands free memory back "
                  "to the host, unless the free blocks the host does not take back hold "
                  "twice what is left to write (asked at the start and every 8 MiB; or, "
                  "where /proc/pagetypeinfo can be read, those kept for movable pages "
                  "hold 1.25 times it), it "
                  "writes in 64 KiB pieces, as `cp` does, keeping out of the host's faults; "
                  "the column `writes` says which the host called for before and after "
                  "each row (`tio_bench host`, the library's own test), with the memory "
                  "kept in those blocks. "
                  "See docs/performance.md. " + SELECTED_ROWS + "\n")
        if HOST:
            # the host's state for the tensio rows (cp does not ask it)
            for r in rows:
                r.append(host_writes("convert_disk", r[0]) if r[1].startswith("tensio") else "")
            md.append(table(CONVERT_HEAD + ["writes"], rows))
        else:
            md.append(table(CONVERT_HEAD, rows))

    # -------------------------------------------------------------- zmq
    if groups("zmq"):
        rows = []
        plot = []
        worst_big = worst_small = None
        for g in groups("zmq"):
            for s in subjects("zmq", g):
                k = ("zmq", g, s)
                n = statistics.median(r[2] for r in RUNS[k])
                r = paired("zmq", g, s, "base:libzmq")
                r3 = (paired("zmq", g, s, "base:libzmq-3frames") if s == "tensio:zio" else
                      paired("zmq", g, s, "base:libzmq-2frames") if s == "tensio:tensorcom"
                      else None)
                rows.append([g, s] + stats(k) + [f"{rate(k, 1e6):.0f}", f"{n / med(k):.0f}",
                                                 fp("zmq", g, s, "base:libzmq"), fr(r3)])
                plot.append((g, s, rate(k, 1e6)))
                if s.startswith("tensio"):
                    size = RUNS[k][0][1] // max(RUNS[k][0][2], 1)
                    if size >= 65536:
                        worst_big = lowest(worst_big, r, s, g)
                    if size <= 1024:
                        worst_small = lowest(worst_small, r, s, g)
        md.append("## 5. ZeroMQ over loopback\n\nPUSH → PULL over tcp://127.0.0.1, one "
                  "tensor per message; each repetition moves N messages (a byte budget) "
                  "and is timed until the receiver has the last one. `base:libzmq` moves the "
                  "same payload with raw libzmq; `alt:python-tensorcom` is a Python "
                  "sender/receiver (pyzmq + NumPy) doing tensorcom's framing. "
                  "`base:libzmq-2frames` and `-3frames` send tensorcom's and ZIO's frames "
                  "(header, [coordinates,] payload) with raw libzmq: the floor of each "
                  "protocol. The median columns are per repetition; the ratios are the "
                  "median of per-repetition ratios (base time / tensio time), the "
                  "subjects' repetitions being interleaved.\n")
        md.append(table(["tensor", "subject", "median", "min", "max", "MB/s", "msg/s",
                         "vs libzmq", "vs same frames"], rows))
        def floor(w):
            """What raw libzmq sending the protocol's own frames reached."""
            base = {"tensio:zio": "base:libzmq-3frames",
                    "tensio:tensorcom": "base:libzmq-2frames"}.get(w[1])
            f = base and paired("zmq", w[2], base, "base:libzmq")
            return f"; raw libzmq with its frames: {f:.2f}×" if f else ""

        goals.ratio("zmq ≥ 64 KiB", "≥ 0.9× libzmq", worst_big, 0.9, floor)
        goals.ratio("zmq 1 KiB", "≥ 0.8× libzmq", worst_small, 0.8, floor)
        plots["zmq"] = plot

    # -------------------------------------------------------------- model
    if groups("model"):
        rows = []
        plot = []
        worst = None
        for g in groups("model"):
            k = ("model", g, "tensio")
            fa = FACTS.get(k, {})
            nodes, values = int(fa.get("nodes", 0)), int(fa.get("values", 0))
            objs = max(nodes + values, 1)
            per = med(k) / objs
            rows.append([g, nodes, values, fa.get("constants", "?"),
                         f"{int(fa.get('file_bytes', 0)) / 1048576:.1f} MiB"] + stats(k) +
                        [fmt_time(per)])
            plot.append((g, objs, med(k) * 1e3))
            if worst is None or per > worst[0]:
                worst = (per, g)
        md.append("## 6. Model files\n\nOpen + enumerate every node (op, inputs, outputs, "
                  "attributes) and every value; for a constant its tensor's name, dtype, "
                  "shape and size (the data are not read). The vector models, then "
                  "generated ones (a chain of Add nodes, one constant each).\n")
        md.append(table(["model", "nodes", "values", "constants", "file", "median", "min",
                         "max", "per node+value"], rows))
        if worst:
            goals.add("models", "O(nodes)", f"≤ {fmt_time(worst[0])} per node+value", True,
                      f"slowest per object: {worst[1]}")
        plots["model"] = plot

    # -------------------------------------------------------------- recv -o
    if groups("recvfiles"):
        rows = []
        plot = []
        ratios = []  # tensio:recv: (files, ratio)
        per_file = {}  # subject -> [(files, median seconds per file)]
        base = "base:write+rename"
        for g in groups("recvfiles"):
            for s in subjects("recvfiles", g):
                k = ("recvfiles", g, s)
                items = RUNS[k][0][2]
                per = med(k) / items
                b = ("recvfiles", g, base)
                r = paired("recvfiles", g, s, base) if b in RUNS else None
                first = FACTS.get(k, {}).get("first_file_max_s")
                rows.append([g, s] + stats(k) + [fmt_time(per), f"{1 / per:,.0f}",
                                                 fp("recvfiles", g, s, base) if r else fr(r),
                                                 fmt_time(float(first)) if first else ""])
                files = int(g.split()[0])
                per_file.setdefault(s, []).append((files, per))
                plot.append((files, s, per * 1e6))
                if s == "tensio:recv" and r is not None:
                    ratios.append((files, r))
        md.append("## 7. recv -o: one file per message\n\n`tensio recv -o 'DIR/m-%06d.zmsg' "
                  "--count N` fed by `tensio send --count N` of one ZIO message holding a "
                  "1 KiB float32 tensor, over tcp://127.0.0.1, into an empty directory. Timed "
                  "from recv's first file (polled for) until it has exited: N - 1 files, "
                  "the final sync and the exit (1.5-8 ms); what comes before the first file "
                  "(starting the sender and connecting, *first file* is the slowest) is a "
                  "fixed cost per run, not "
                  "throughput. `tensio:recv` is the default durability (no fsync per file, "
                  "`syncfs` at least once a second and at the end), `--sync-each` an fsync of "
                  "each file and its directory, `--no-sync` none. Baseline: this process "
                  "writing the same bytes as N files, each `open` + `write` + `close` under "
                  "a temporary name and `rename()`d, without fsync, into the same "
                  "directory. The time per file must not grow with N (a save that listed "
                  "its directory did).\n")
        md.append(table(["files", "subject", "median", "min", "max", "per file", "files/s",
                         "vs write+rename", "first file"], rows))
        if ratios:
            # throughput: the largest run; the smaller ones carry the fixed end
            # (closing the stream, the final sync, the exit) over fewer files
            n, r = max(ratios)
            goals.add(f"recv -o, default durability, {n:,} files", "≥ 0.5× write()+rename()",
                      f"{r:.2f}×", r >= 0.5,
                      "; ".join(f"{k:,} files: {v:.2f}×" for k, v in sorted(ratios)))
        flat = per_file.get("tensio:recv")
        if flat and len(flat) > 1:
            (n0, p0), (n1, p1) = min(flat), max(flat)
            g = p1 / p0
            bl = sorted(per_file.get(base, []))
            note = (f"per file {fmt_time(p0)} at {n0:,} files, {fmt_time(p1)} at {n1:,}"
                    + (f"; baseline {bl[-1][1] / bl[0][1]:.2f}×" if len(bl) > 1 else ""))
            goals.add(f"recv -o time per file, {n0:,} → {n1:,} files", "flat (≤ 1.5×)",
                      f"{g:.2f}×", g <= 1.5, note)
        plots["recvfiles"] = plot

    # -------------------------------------------------------------- onnx
    if groups("onnx"):
        onnx_section(md, goals, plots, mach)
    if groups("python"):
        python_section(md, goals)
    if groups("shards") or groups("shards_convert") or groups("lmdb_read"):
        shards_section(md, goals)
    if groups("http_shards") or groups("shards_http_py") or any(c == "http_ls" for (c, _g, _s)
                                                                 in FACTS):
        http_section(md, goals)
    if groups("torch"):
        torch_section(md, goals)

    head = ["# tensio benchmarks: latest run\n",
            "Written by `make bench` (bench/run.sh, bench/report.py); how to read and "
            "reproduce it: docs/performance.md. Ratios compare tensio with a baseline "
            "measured in this run, above 1.0 tensio is faster: where they ran interleaved "
            "(paired repetitions), the median of the paired ratios (baseline time / tensio "
            "time, repetition by repetition) and how far the farthest one is from it "
            "(±x %; more than ±10 % after the cap of repetitions: *not steady*, and "
            "then the window with the least spread is shown, followed by the median of "
            "every pair, the ratio of each side's least time over them all and how many "
            "runs of each side took over twice its own least); "
            "elsewhere baseline median time / tensio median time. The page-fault cost and "
            "memcpy's bandwidth below are this machine's, measured by the run.\n",
            "## Machine\n", table(["", ""], mach),
            "\nPage cache: **warm** for every file case (each file is read once after it "
            "is written, and a warm-up repetition precedes the timed ones), except where a "
            "row says otherwise.\n",
            "## Goals\n", table(["case", "goal", "measured", "", "note"], goals.rows),
            "\n![plot](latest.png)\n"]
    with open(os.path.join(outdir, "latest.md"), "w") as f:
        f.write("\n".join(head + md) + "\n")
    gnuplot(plots, outdir)


# ------------------------------------------------------------------ plot
def uniq(values):
    """The distinct values, in the order they first come."""
    out = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def write_hist(path, plot, groups_order):
    """Rows: subjects; columns: groups."""
    subs = uniq(s for (_g, s, _v) in plot)
    val = {(g, s): v for (g, s, v) in plot}
    with open(path, "w") as f:
        f.write("subject\t" + "\t".join(f'"{g}"' for g in groups_order) + "\n")
        for s in subs:
            f.write(f'"{s}"\t' + "\t".join(
                f"{val[(g, s)]:.6g}" if (g, s) in val else "NaN" for g in groups_order) + "\n")
    return len(groups_order)


def gnuplot(plots, outdir):
    if not shutil.which("gnuplot"):
        print("report.py: gnuplot not found: no latest.png", file=sys.stderr)
        return
    tmp = os.path.join(outdir, ".plot")
    os.makedirs(tmp, exist_ok=True)
    gp = ['set terminal pngcairo size 2400,1100 font "DejaVu Sans,10" noenhanced',
          f'set output "{os.path.join(outdir, "latest.png")}"',
          'set multiplot layout 2,4 title "tensio benchmarks (bench/results/latest.md)"',
          'set style data histograms', 'set style histogram clustered gap 1',
          'set style fill solid 0.85 border -1', 'set boxwidth 0.9',
          'set key top left font ",8"', 'set grid ytics', 'set xtics rotate by -30 font ",8"']
    for name, title, ylabel, logy in [
            ("open", "1. open + list (ms, log scale; lower is better)", "ms", True),
            ("scan", "2. read + checksum (GB/s)", "GB/s", False),
            ("write", "3. write (GB/s of file)", "GB/s", False),
            ("convert", "4. convert (GB/s of output)", "GB/s", False)]:
        plot = plots.get(name)
        if not plot:
            gp.append('set title "%s: not run"; unset key; plot 0 notitle; set key' % title)
            continue
        order = []
        for (g, _s, _v) in plot:
            if g not in order:
                order.append(g)
        path = os.path.join(tmp, name + ".dat")
        ncol = write_hist(path, plot, order)
        gp.append(f'set title "{title}"')
        gp.append(f'set ylabel "{ylabel}"')
        gp.append("set logscale y" if logy else "unset logscale y")
        gp.append("set yrange [*:*]" if logy else "set yrange [0:*]")
        cols = ", ".join(f'"{path}" using {i + 2}:xtic(1) title columnheader({i + 2})'
                         for i in range(ncol))
        gp.append(f"plot {cols}")
    gp.append("unset logscale y")
    # zmq: MB/s against tensor size, one line per subject
    plot = plots.get("zmq")
    if plot:
        subs = uniq(s for (_g, s, _v) in plot)
        order = uniq(g for (g, _s, _v) in plot)
        path = os.path.join(tmp, "zmq.dat")
        val = {(g, s): v for (g, s, v) in plot}
        with open(path, "w") as f:
            for g in order:
                f.write(f'{order.index(g)}\t"{g}"\t' + "\t".join(
                    f"{val[(g, s)]:.6g}" if (g, s) in val else "NaN" for s in subs) + "\n")
        gp += ['set style data linespoints', 'set title "5. ZeroMQ loopback (MB/s)"',
               'set ylabel "MB/s"', 'set logscale y', 'set yrange [*:*]']
        gp.append("plot " + ", ".join(
            f'"{path}" using 1:{i + 3}:xtic(2) title "{s}" lw 2' for i, s in enumerate(subs)))
        gp.append("unset logscale y")
    else:
        gp.append('set title "5. ZeroMQ: not run"; plot 0 notitle')
    plot = plots.get("model")
    if plot:
        path = os.path.join(tmp, "model.dat")
        with open(path, "w") as f:
            for (g, objs, ms) in plot:
                f.write(f'{objs}\t{ms:.6g}\t"{g}"\n')
        gp += ['set style data points', 'set title "6. models: open + enumerate (ms) vs '
               'nodes+values"', 'set xlabel "nodes + values"', 'set ylabel "ms"',
               'set logscale xy', 'set xtics auto rotate by 0', 'set yrange [*:*]',
               f'plot "{path}" using 1:2 title "tensio" pt 7 ps 1.5, '
               f'"{path}" using 1:2:3 with labels offset 0,1 font ",7" notitle']
    else:
        gp.append('set title "6. models: not run"; plot 0 notitle')
    plot = plots.get("recvfiles")
    if plot:
        cols = []
        for i, s in enumerate(uniq(s for (_n, s, _v) in plot)):
            path = os.path.join(tmp, f"recvfiles{i}.dat")
            with open(path, "w") as f:
                for (n, s2, us) in sorted(plot):
                    if s2 == s:
                        f.write(f"{n}\t{us:.6g}\n")
            cols.append(f'"{path}" using 1:2 title "{s}" with linespoints lw 2 pt 7')
        gp += ['unset xlabel', 'set title "7. recv -o: µs per file (log; lower is better; '
               'flat = no growth with the directory)"', 'set xlabel "files"', 'set ylabel "µs per file"',
               'set logscale xy', 'set yrange [*:*]', 'set xtics auto',
               'set key top right', "plot " + ", ".join(cols)]
    else:
        gp.append('unset logscale; unset xlabel; set title "7. recv -o: not run"; plot 0 notitle')
    plot = plots.get("onnx")
    if plot:
        path = os.path.join(tmp, "onnx.dat")
        ncol = write_hist(path, plot, uniq(g for (g, _s, _v) in plot))
        gp += ['unset xlabel', 'set style data histograms',
               'set title "8. ONNX (ms, log scale; lower is better)"', 'set ylabel "ms"',
               'unset logscale x', 'set logscale y', 'set yrange [*:*]', 'set key top left',
               'set xtics rotate by -30 font ",8"',
               "plot " + ", ".join(f'"{path}" using {i + 2}:xtic(1) title columnheader({i + 2})'
                                   for i in range(ncol))]
    else:
        gp.append('set title "8. ONNX: not run"; plot 0 notitle')
    gp.append("unset multiplot")
    script = os.path.join(tmp, "plot.gp")
    with open(script, "w") as f:
        f.write("\n".join(gp) + "\n")
    r = subprocess.run(["gnuplot", script], capture_output=True, text=True)
    if r.returncode != 0:
        print("report.py: gnuplot failed:\n" + r.stderr, file=sys.stderr)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
