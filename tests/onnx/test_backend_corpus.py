#!/usr/bin/python3
"""ONNX's own backend test corpus through tensio.

Usage: /usr/bin/python3 test_backend_corpus.py /path/to/tensio [--update] [--opsets N,M]
                                                  [--rewrite-only]

The corpus is Debian's libonnx-testdata (1.12, as python3-onnx):
/usr/share/libonnx-testdata/data/{node,pytorch-converted,pytorch-operator,
simple}/*/, each a model.onnx and test_data_set_*/ with input_N.pb and
output_N.pb (bare TensorProtos, or SequenceProto/OptionalProto for sequence
and optional values). For every model:
- `tensio info model.onnx` opens it, or refuses it: a refusal must be listed
  in backend_corpus_expected.txt ("refuse", the model, a substring of the
  message), and a listed model must still be refused so (the list is kept
  true);
- `tensio convert model.onnx out.onnx`, and out.onnx passes
  onnx.checker.check_model(full_check=True);
- every input_N.pb: a sequence or optional input (a SequenceProto or
  OptionalProto of tensors) converts to .npz holding the arrays onnx reads,
  and rewrites as onnx.helper.make_sequence / make_optional's bytes; a tensor
  `tensio convert input_N.pb x.npy` gives the
  array onnx.numpy_helper reads (a string tensor: NumPy's U when every
  string is UTF-8, else S), and `tensio convert x.npy y.pb` the bytes
  numpy_helper.from_array(a) writes; an input tensio refuses must be listed
  ("pb", its path, a substring);
- onnxruntime (npm's onnxruntime-node in tests/ort, installed by
  scripts/install-ort.sh) runs the original and the rewrite on those .npy
  inputs (tests/ort/run_batch.js: many models per node process, two
  processes; string tensors as ort's string tensors); where the original's outputs match output_N.pb (dtype, shape,
  |got - want| <= atol + rtol * |want| with the corpus runner's defaults,
  rtol 1e-3, atol 1e-7, NaN equal to NaN), the rewrite's must match too;
- with --opsets 13,17,26: `tensio convert --opset N model.onnx` at each N, which
  either refuses, saying why (exit 1, a message naming the opset), or writes
  a model that declares opset N, passes the checker (N <= 17, what
  python3-onnx 1.12 knows) and, wherever the original matches the corpus's
  outputs in onnxruntime, matches them too (issue 37: opset conversion that
  holds). Where onnxruntime refuses the rewrite for want of a kernel for an
  operator's version newer than the original's opset ("Could not find an
  implementation for RoiAlign(22)"), the form is ONNX's and the gap
  onnxruntime's: counted and named apart, neither right nor wrong.
With --rewrite-only (the sanitizer stage, where every tensio process costs
a sanitizer's start and exit), each model is only rewritten (`tensio
convert`, which opens it), and its refusal, if any, checked against the list:
every model's bytes through a sanitized reader and writer, without the
checks of the values, which the gcc stage makes.
Prints the counts (refusals and onnxruntime's refusals grouped by reason)
and the wall time; exits non-zero on any regression. A missing corpus, onnx
or onnxruntime fails: nothing is skipped. --update rewrites the expectation
file from what this run measured (after a change that makes more models
open, say) and fails nothing but a broken rewrite.
"""

import collections
import concurrent.futures
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

T0 = time.monotonic()
ARGS = sys.argv[2:]
UPDATE = "--update" in ARGS
REWRITE_ONLY = "--rewrite-only" in ARGS
if REWRITE_ONLY:
    ARGS.remove("--rewrite-only")
    if UPDATE:
        print("test_backend_corpus.py: --update needs the whole run, not --rewrite-only",
              file=sys.stderr)
        sys.exit(2)
OPSETS = []
if "--opsets" in ARGS:
    k = ARGS.index("--opsets")
    OPSETS = [int(x) for x in ARGS[k + 1].split(",")] if k + 1 < len(ARGS) else []
    del ARGS[k:k + 2]
if len(sys.argv) < 2 or [a for a in ARGS if a != "--update"] or ("--opsets" in sys.argv
                                                                 and not OPSETS):
    print("usage: test_backend_corpus.py /path/to/tensio [--update] [--opsets N,M] "
          "[--rewrite-only]", file=sys.stderr)
    sys.exit(2)
TENSIO = os.path.abspath(sys.argv[1])
CHECKER_MAX = 17
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
ORT_DIR = os.path.join(REPO, "tests", "ort")
EXPECTED = os.path.join(HERE, "backend_corpus_expected.txt")
CORPUS = "/usr/share/libonnx-testdata/data"
KINDS = ("node", "pytorch-converted", "pytorch-operator", "simple")
RTOL, ATOL = 1e-3, 1e-7  # onnx.backend.test.loader's defaults
JOBS = 2

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
except ImportError as e:
    print("FAIL: %s (python3-onnx and python3-numpy, scripts/install-deps.sh)" % e)
    sys.exit(1)
MODELS = sorted(glob.glob(os.path.join(CORPUS, "*", "*", "model.onnx")))
MODELS = [m for m in MODELS if m.split(os.sep)[-3] in KINDS]
if len(MODELS) < 1000:
    print("FAIL: %d models under %s (libonnx-testdata missing? scripts/install-deps.sh "
          "installs it)" % (len(MODELS), CORPUS))
    sys.exit(1)
if not os.path.isfile(os.path.join(ORT_DIR, "node_modules", "onnxruntime-node", "package.json")):
    print("FAIL: onnxruntime-node is not installed in tests/ort (scripts/install-ort.sh)")
    sys.exit(1)


def rel(path):
    return os.path.relpath(path, CORPUS)


def reason(stderr):
    """A refusal's message without the CLI's and the format's prefixes."""
    line = stderr.strip().splitlines()[0] if stderr.strip() else "(no message)"
    line = re.sub(r"^tensio: .*?: (onnx(-tensor)?: )", r"\1", line)
    return re.sub(r"offset \d+: ", "", line)


def tensio(*args):
    return subprocess.run([TENSIO, *args], capture_output=True, text=True)


def load_pb(path, vtype):
    """An input/output file as onnx reads it: an array (a string tensor: an
    object array of str, onnx decoding UTF-8), or None for a sequence, optional
    or map value."""
    with open(path, "rb") as f:
        data = f.read()
    if vtype is not None and not vtype.HasField("tensor_type"):
        return None
    t = onnx.TensorProto()
    t.ParseFromString(data)
    return numpy_helper.to_array(t)


def seq_value(m, pb, vtype, d):
    """A sequence or optional input: `tensio convert x.pb x.npz` gives the
    arrays onnx reads (numpy_helper.to_list / to_optional), in order, and
    `tensio convert x.pb y.pb` the bytes onnx.helper.make_sequence /
    make_optional writes for them (elements as numpy_helper.from_array
    writes them); a refusal is recorded (the expectation file lists it).
    Returns a problem, or None."""
    with open(pb, "rb") as f:
        data = f.read()
    want = None  # onnx's value holds something other than tensors: tensio refuses it
    if vtype.WhichOneof("value") == "sequence_type":
        v = onnx.SequenceProto()
        v.ParseFromString(data)
        arrays = [numpy_helper.to_array(t) for t in v.tensor_values]
        if v.elem_type == 0 and not arrays:
            want = onnx.helper.make_optional(v.name, 0, None)
        elif v.elem_type == onnx.SequenceProto.TENSOR:
            want = onnx.helper.make_sequence(v.name, v.elem_type,
                                             [numpy_helper.from_array(a) for a in arrays])
    else:
        v = onnx.OptionalProto()
        v.ParseFromString(data)
        arrays = [numpy_helper.to_array(v.tensor_value)] if v.HasField("tensor_value") else []
        if v.elem_type in (0, onnx.OptionalProto.TENSOR) and (arrays or v.elem_type == 0):
            want = onnx.helper.make_optional(
                v.name, v.elem_type, numpy_helper.from_array(arrays[0]) if arrays else None)
    npz = os.path.join(d, "seq.npz")
    r = tensio("convert", "--force", pb, npz)
    if r.returncode != 0:
        m.pb_refused[rel(pb)] = reason(r.stderr)
        return None
    if want is None:
        return "tensio read a %s onnx reads as holding more than tensors" % type(v).__name__
    with np.load(npz) as z:
        got = [z["arr_%d" % k] for k in range(len(z.files))]
    if len(got) != len(arrays):
        return "-> npz: %d arrays, onnx reads %d" % (len(got), len(arrays))
    for k, (g, w) in enumerate(zip(got, arrays)):
        bad = same(g, npy_form(w))
        if bad:
            return "-> npz: element %d: %s" % (k, bad)
    back = os.path.join(d, "seq.pb")
    r = tensio("convert", "--force", pb, back)
    with open(back, "rb") as f:
        if r.returncode != 0 or f.read() != want.SerializeToString():
            return "-> pb is not onnx.helper's bytes for the same value"
    m.pb_ok += 1
    return None


def npy_form(want):
    """What np.load gives for an array tensio wrote as .npy: a string tensor
    (an object array of str or bytes) as U (str) when every string is UTF-8 text,
    else as S (bytes): what tensio's npy writer chooses."""
    if want.dtype != object:
        return want
    flat = [x.encode() if isinstance(x, str) else bytes(x) for x in want.ravel()]
    try:
        text = [x.decode("utf-8") for x in flat]
        return np.array(text, dtype="<U%d" % max([1] + [len(x) for x in text])).reshape(want.shape)
    except UnicodeDecodeError:
        return np.array(flat, dtype="S%d" % max([1] + [len(x) for x in flat])).reshape(want.shape)


def same(got, want):
    if got.dtype != want.dtype or got.shape != want.shape:
        return "dtype/shape %s%s, expected %s%s" % (got.dtype, got.shape, want.dtype, want.shape)
    if want.dtype.kind in "fc":
        ok = np.isclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True)
        if not ok.all():
            return "values differ (%d of %d elements)" % ((~ok).sum(), ok.size)
    elif not np.array_equal(got, want):
        return "values differ"
    return None


class Model:
    def __init__(self, path):
        self.path = path
        self.rel = rel(os.path.dirname(path))
        self.refused = None      # tensio's message
        self.problems = []       # regressions
        self.rewritten = False
        self.checker_ok = False
        self.io_ok = True        # every input and output a tensor tensio and ort can carry
        self.sets = []           # (inputs [(name, npy)], expected [arrays])
        self.pb_refused = {}     # input path -> message
        self.pb_ok = 0
        self.at = {}             # opset -> "ok" (written, checker-clean) or the refusal
        self.src_opset = 1       # the default-domain opset the model declares


GAP = "no onnxruntime kernel: "


def work(m, tmp):
    d = os.path.join(tmp, m.rel.replace(os.sep, "__"))
    os.makedirs(d)
    if REWRITE_ONLY:
        r = tensio("convert", m.path, os.path.join(d, "out.onnx"))
        if r.returncode != 0:
            m.refused = reason(r.stderr)
        m.rewritten = r.returncode == 0
        m.io_ok = False  # nothing is run
        return m
    r = tensio("info", m.path)
    if r.returncode != 0:
        m.refused = reason(r.stderr)
        return m
    out = os.path.join(d, "out.onnx")
    r = tensio("convert", m.path, out)
    if r.returncode != 0:
        m.problems.append("convert: " + reason(r.stderr))
        return m
    m.rewritten = True
    try:
        onnx.checker.check_model(out, full_check=True)
        m.checker_ok = True
    except Exception as e:  # the checker's own exceptions
        try:
            onnx.checker.check_model(m.path, full_check=True)
            m.problems.append("checker: " + str(e).splitlines()[0][:200])
        except Exception:
            m.checker_ok = None  # the original fails it too
    for n in OPSETS:
        o = os.path.join(d, "o%d.onnx" % n)
        r = tensio("convert", "--opset", str(n), m.path, o)
        if r.returncode != 0:
            why = reason(r.stderr)
            if r.returncode != 1 or "opset" not in why or os.path.exists(o):
                m.problems.append("--opset %d: exit %d, %s" % (n, r.returncode, why))
            m.at[n] = why
            continue
        w = onnx.load(o, load_external_data=False)
        got = [x.version for x in w.opset_import if x.domain in ("", "ai.onnx")]
        if got != [n]:
            m.problems.append("--opset %d: the model declares %s" % (n, got))
        if n <= CHECKER_MAX:
            try:
                onnx.checker.check_model(o, full_check=True)
            except Exception as e:  # the checker's own exceptions
                if m.checker_ok is not None:
                    m.problems.append("--opset %d: checker: %s" % (
                        n, str(e).splitlines()[0][:200]))
        m.at[n] = "ok"
    orig = onnx.load(m.path, load_external_data=False)
    m.src_opset = max([x.version for x in orig.opset_import if x.domain in ("", "ai.onnx")],
                      default=1)
    graph = orig.graph
    for k, sd in enumerate(sorted(glob.glob(os.path.join(os.path.dirname(m.path),
                                                         "test_data_set_*")))):
        ins, outs = [], []
        n_in = len(glob.glob(os.path.join(sd, "input_*.pb")))
        n_out = len(glob.glob(os.path.join(sd, "output_*.pb")))
        for i in range(n_in):
            pb = os.path.join(sd, "input_%d.pb" % i)
            vtype = graph.input[i].type if i < len(graph.input) else None
            if vtype is not None and vtype.WhichOneof("value") in ("sequence_type",
                                                                    "optional_type"):
                why = seq_value(m, pb, vtype, d)
                if why:
                    m.problems.append("%s: %s" % (rel(pb), why))
                m.io_ok = False  # onnxruntime-node takes tensors only
                continue
            want = load_pb(pb, vtype)
            npy = os.path.join(d, "in_%d_%d.npy" % (k, i))
            r = tensio("convert", pb, npy)
            if r.returncode != 0:
                m.pb_refused[rel(pb)] = reason(r.stderr)
                m.io_ok = False
                continue
            if want is None:
                m.problems.append("%s: tensio read a value onnx reads as no tensor" % rel(pb))
                continue
            bad = same(np.load(npy), npy_form(want))
            if bad:
                m.problems.append("%s -> npy: %s" % (rel(pb), bad))
                continue
            back = os.path.join(d, "back.pb")
            r = tensio("convert", "--force", npy, back)
            with open(back, "rb") as f:
                if r.returncode != 0 or f.read() != numpy_helper.from_array(want).SerializeToString():
                    m.problems.append("%s: npy -> pb is not numpy_helper.from_array's bytes"
                                      % rel(pb))
                    continue
            m.pb_ok += 1
            ins.append((graph.input[i].name, npy))
        for i in range(n_out):
            vtype = graph.output[i].type if i < len(graph.output) else None
            want = load_pb(os.path.join(sd, "output_%d.pb" % i), vtype)
            if want is None:
                m.io_ok = False
            outs.append(want)
        m.sets.append((ins, outs))
    return m


def run_ort(jobs, tmp):
    """Runs the jobs in JOBS node processes; {id: result line}."""
    parts = [jobs[k::JOBS] for k in range(JOBS)]
    procs = []
    for k, part in enumerate(parts):
        f = os.path.join(tmp, "jobs_%d.json" % k)
        with open(f, "w") as fh:
            json.dump(part, fh)
        procs.append(subprocess.Popen(["node", os.path.join(ORT_DIR, "run_batch.js"), f],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True, cwd=ORT_DIR))
    res = {}
    for p in procs:
        so, se = p.communicate()
        if p.returncode != 0:
            print("FAIL: run_batch.js: exit %d: %s" % (p.returncode, se.strip()[-500:]))
            sys.exit(1)
        for line in so.splitlines():
            j = json.loads(line)
            res[j["id"]] = j
    return res


def compare(outdir, names, expected):
    if len(names) < len(expected):
        return "%d outputs, expected %d" % (len(names), len(expected))
    for k, want in enumerate(expected):
        bad = same(np.load(os.path.join(outdir, "out_%d.npy" % k)), npy_form(want))
        if bad:
            return "output %d (%s): %s" % (k, names[k], bad)
    return None


def main():
    tmp = tempfile.mkdtemp(prefix="tio-corpus-")
    try:
        with concurrent.futures.ThreadPoolExecutor(JOBS) as ex:
            models = list(ex.map(lambda m: work(Model(m), tmp), MODELS))
        t_tensio = time.monotonic() - T0
        jobs = []
        for mi, m in enumerate(models):
            if not m.rewritten or not m.io_ok:
                continue
            d = os.path.join(tmp, m.rel.replace(os.sep, "__"))
            variants = [("orig", m.path), ("new", os.path.join(d, "out.onnx"))]
            variants += [("o%d" % n, os.path.join(d, "o%d.onnx" % n)) for n in OPSETS
                         if m.at.get(n) == "ok"]
            for k, (ins, _) in enumerate(m.sets):
                for which, model in variants:
                    od = os.path.join(d, "%s_%d" % (which, k))
                    os.makedirs(od)
                    jobs.append({"id": "%d/%d/%s" % (mi, k, which), "model": model, "outdir": od,
                                 "inputs": [{"name": n, "file": f} for n, f in ins]})
        res = run_ort(jobs, tmp) if jobs else {}
        t_ort = time.monotonic() - T0 - t_tensio
        ort_refused = collections.Counter()
        matched = ort_models = 0
        for mi, m in enumerate(models):
            if not m.rewritten or not m.io_ok:
                continue
            d = os.path.join(tmp, m.rel.replace(os.sep, "__"))
            ok = True
            for k, (_, expected) in enumerate(m.sets):
                o = res["%d/%d/orig" % (mi, k)]
                n = res["%d/%d/new" % (mi, k)]
                why = o.get("error") or compare(os.path.join(d, "orig_%d" % k), o["outputs"],
                                                expected)
                if why:
                    ok = False
                    why = re.sub(r"/\S*model\.onnx", "MODEL", why.split("\n")[0])
                    why = re.sub(r"\d+", "N", why)[:110]
                    ort_refused["original: " + why] += 1
                    break
                bad = n.get("error") or compare(os.path.join(d, "new_%d" % k), n["outputs"],
                                                expected)
                if bad:
                    ok = False
                    m.problems.append("onnxruntime on the rewrite: %s" % bad.split("\n")[0])
                    break
                for v in [x for x in OPSETS if m.at.get(x) == "ok"]:
                    j = res["%d/%d/o%d" % (mi, k, v)]
                    bad = j.get("error") or compare(os.path.join(d, "o%d_%d" % (v, k)),
                                                    j["outputs"], expected)
                    gap = re.search(r"Could not find an implementation for (\w+)\((\d+)\)",
                                    bad or "")
                    if gap and int(gap.group(2)) > m.src_opset:
                        # the operator's form at that opset, which onnxruntime lacks
                        m.at[v] = GAP + "%s(%s)" % gap.groups()
                    elif bad:
                        m.problems.append("onnxruntime at --opset %d: %s" % (
                            v, bad.split("\n")[0][:200]))
                        m.at[v] = "wrong"
                if m.at and "wrong" in m.at.values():
                    break
            ort_models += 1
            matched += ok
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    # the expectation file: refusals by name
    expect = {}
    with open(EXPECTED) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                kind, what, sub = line.rstrip("\n").split("\t")
                if kind == "refuse" or not REWRITE_ONLY:
                    expect[(kind, what)] = sub
    regress = []
    seen = set()
    measured = []
    for m in models:
        for p in m.problems:
            regress.append("%s: %s" % (m.rel, p))
        if m.refused:
            measured.append(("refuse", m.rel, m.refused))
        for pb, why in sorted(m.pb_refused.items()):
            measured.append(("pb", pb, why))
    for kind, what, why in measured:
        seen.add((kind, what))
        sub = expect.get((kind, what))
        if sub is None:
            regress.append("%s: refused, not listed in %s: %s"
                           % (what, os.path.basename(EXPECTED), why))
        elif sub not in why:
            regress.append("%s: refused for another reason: %s (listed: %s)" % (what, why, sub))
    for key in sorted(set(expect) - seen):
        regress.append("%s: listed as refused (%s) but %s now" % (
            key[1], expect[key], "opens" if key[0] == "refuse" else "converts"))

    refused = collections.Counter(re.sub(r"'[^']*'", "'…'", m.refused) for m in models
                                  if m.refused)
    pbs = collections.Counter(w for m in models for w in m.pb_refused.values())
    opened = sum(1 for m in models if not m.refused)
    print("backend corpus: %d models (%s)" % (len(models), ", ".join(
        "%s %d" % (k, sum(1 for m in models if m.rel.startswith(k + os.sep))) for k in KINDS)))
    print("  opened %d, refused by name %d:" % (opened, len(models) - opened))
    for why, n in refused.most_common():
        print("    %4d  %s" % (n, why))
    if REWRITE_ONLY:
        print("  rewritten %d" % sum(m.rewritten for m in models))
        print("  --rewrite-only: no checker, no input files, no onnxruntime (the gcc stage's)")
    else:
        print("  rewritten %d, checker-ok %d (%d whose original fails the checker too)" % (
            sum(m.rewritten for m in models), sum(m.checker_ok is True for m in models),
            sum(m.checker_ok is None for m in models)))
        print("  input .pb files: %d round-tripped (.pb -> .npy -> .pb; a sequence or optional "
              ".pb -> .npz and .pb -> .pb), %d refused by name:" % (
            sum(m.pb_ok for m in models), sum(pbs.values())))
        for why, n in pbs.most_common():
            print("    %4d  %s" % (n, why))
        print("  onnxruntime: %d models run, ort-matched %d (the rewrite matches wherever the "
              "original does), ort-refused-original %d:" % (ort_models, matched,
                                                            sum(ort_refused.values())))
        for why, n in ort_refused.most_common():
            print("    %4d  %s" % (n, why))
        print("  not run in onnxruntime (a sequence, optional or map input/output): %d" % sum(
            1 for m in models if m.rewritten and not m.io_ok))
    for n in OPSETS:
        at = [m.at[n] for m in models if n in m.at]
        gaps = collections.Counter(a[len(GAP):] for a in at if a.startswith(GAP))
        why = collections.Counter(re.sub(r"'[^']*'", "'…'", a) for a in at
                                  if a not in ("ok", "wrong") and not a.startswith(GAP))
        print("  --opset %d: %d written (checker-clean, onnxruntime as the original), %d wrong, "
              "%d written where onnxruntime has no kernel for the opset's form%s, "
              "%d refused:" % (n, at.count("ok"), at.count("wrong"), sum(gaps.values()),
                               " (%s)" % ", ".join("%s: %d" % g for g in sorted(gaps.items()))
                               if gaps else "", sum(why.values())))
        for w, c in why.most_common(12):
            print("    %4d  %s" % (c, w[:150]))
        if len(why) > 12:
            print("    (%d more reasons)" % (len(why) - 12))
    print("  wall time %.0f s (tensio and checker %.0f s, onnxruntime %.0f s, %d jobs)" % (
        time.monotonic() - T0, t_tensio, t_ort, JOBS))
    if UPDATE:
        with open(EXPECTED, "w") as f:
            f.write("# Models and input files of libonnx-testdata that tensio refuses by name:\n"
                    "# kind (refuse: the model; pb: an input file), the path under %s,\n"
                    "# a substring of the message. Written by test_backend_corpus.py --update;\n"
                    "# the test fails when one opens or another is refused.\n" % CORPUS)
            for kind, what, why in sorted(measured):
                f.write("%s\t%s\t%s\n" % (kind, what, re.sub(r"^onnx(-tensor)?: ", "", why)))
        regress = [r for r in regress if "refused" not in r]
        print("  wrote %s" % EXPECTED)
    for r in regress:
        print("FAIL", r)
    print("%d regressions" % len(regress))
    sys.exit(1 if regress else 0)


main()
