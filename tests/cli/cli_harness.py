"""What the end-to-end tests of the `tensio` command-line tool share
(tests/cli/test_cli.py, tests/cli/test_cli_models.py): the binary from argv[1],
the golden vectors, running a case and counting it, decoding raw values.

Golden vectors are found like the C tests do: $TIO_TEST_VECTORS/<rel>, else
$TIO_SHARED_VECTORS/<rel> (defaults: tests/vectors and ../shared/vectors
relative to the repository); a vector in neither prints "SKIPPED: <rel>" and
is not counted. Python 3 standard library only.
"""

import json
import math
import os
import struct
import subprocess
import sys
import traceback


if len(sys.argv) != 2:
    print(f"usage: {os.path.basename(sys.argv[0])} /path/to/tensio", file=sys.stderr)
    sys.exit(2)

TENSIO = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
VECTOR_DIRS = [
    os.environ.get("TIO_TEST_VECTORS") or os.path.join(REPO, "tests", "vectors"),
    os.environ.get("TIO_SHARED_VECTORS") or os.path.join(REPO, "..", "shared", "vectors"),
]
COMMANDS = ["ls", "info", "dump", "convert", "cat", "validate", "diff", "stats", "graph",
            "formats"]

PASSED = 0
FAILED = 0
SKIPPED = set()




# ----------------------------------------------------------------- harness

def case(name, fn, *args):
    """Runs one test case; an AssertionError (or any exception) fails it."""
    global PASSED, FAILED
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - report every failure the same way
        FAILED += 1
        msg = str(e) if isinstance(e, AssertionError) else traceback.format_exc()
        print(f"FAIL: {name}: {msg}")
    else:
        PASSED += 1


def skip(rel):
    if rel not in SKIPPED:
        SKIPPED.add(rel)
        print(f"SKIPPED: {rel}")


class Result:
    def __init__(self, cp):
        self.rc = cp.returncode
        self.out = cp.stdout.decode("utf-8", "replace")
        self.err = cp.stderr.decode("utf-8", "replace")

    def __repr__(self):
        return f"rc={self.rc} stdout={self.out[:600]!r} stderr={self.err[:600]!r}"


def run(*args, cwd=None, env=None):
    """tensio with args; env: variables to set beside the inherited ones."""
    cp = subprocess.run([TENSIO, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        cwd=cwd, timeout=300, env={**os.environ, **env} if env else None)
    return Result(cp)


def expect(res, rc, stdout_empty=None, stderr_empty=None):
    assert res.rc == rc, f"expected exit {rc}: {res!r}"
    if stdout_empty is True:
        assert res.out == "", f"expected no output: {res!r}"
    if stderr_empty is True:
        assert res.err == "", f"expected nothing on stderr: {res!r}"


def run_json(*args):
    res = run(*args)
    expect(res, 0)
    assert res.out.endswith("\n") and res.out.count("\n") == 1, \
        f"JSON output must be one line: {res!r}"
    return json.loads(res.out)


# ----------------------------------------------------------------- vectors

def vec(rel):
    """Full path of a vector, or None (and a SKIPPED line)."""
    for d in VECTOR_DIRS:
        p = os.path.join(d, rel)
        if os.path.exists(p):
            return p
    skip(rel)
    return None


def vec_list(reldir, suffix):
    names = set()
    for d in VECTOR_DIRS:
        p = os.path.join(d, reldir)
        if os.path.isdir(p):
            names.update(n for n in os.listdir(p) if n.endswith(suffix))
    return sorted(names)


def manifest(rel):
    p = vec(rel)
    if p is None:
        return None
    with open(p, encoding="utf-8") as f:
        return json.load(f)


def vector_manifests(fmt):
    """(rel path of the data file, manifest) of every vector with a manifest in
    <fmt>/ and <fmt>/upstream/ (not malformed/: those describe bad files)."""
    out = []
    for reldir in (fmt, fmt + "/upstream"):
        for name in vec_list(reldir, ".json"):
            if name in ("writer_rejections.json", "INDEX.json"):
                continue
            m = manifest(f"{reldir}/{name}")
            if not isinstance(m, dict) or "file" not in m:
                continue
            out.append((f"{reldir}/{m['file']}", m))
    return out


DTYPE_SIZE = {"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "float16": 2,
              "bfloat16": 2, "int32": 4, "uint32": 4, "float32": 4, "int64": 8,
              "uint64": 8, "float64": 8}


def manifest_tensors(m):
    """Expected tensors of a manifest in one shape for both formats, each with
    its "index". Large upstream manifests list only some of their tensors."""
    if "arrays" in m:  # tenbin
        return [{"index": a["index"], "name": a["info"] or None, "dtype": a["dtype"],
                 "shape": a["shape"], "layout": "dense", "nbytes": a["nbytes"],
                 "sha256": a["sha256"]}
                for a in m["arrays"]]
    out = []
    for i, t in enumerate(m["tensors"]):
        if "dtype" not in t:
            continue  # {"...": "2288 more"} placeholder of a shortened list
        coo = t["layout"] == 1
        e = {"index": t.get("index", i), "name": t.get("info"), "dtype": t["dtype"],
             "shape": t["shape"], "layout": "coo" if coo else "dense",
             "nbytes": t["nnz"] * DTYPE_SIZE[t["dtype"]] if coo else t["nbytes"],
             "sha256": t["sha256"]}
        if coo:
            e["nnz"] = t["nnz"]
            e["indices_sha256"] = t["indices_sha256"]
            e["values_sha256"] = t["values_sha256"]
        out.append(e)
    return out


def manifest_count(m):
    """How many tensors the file holds."""
    if "arrays" in m:
        return len(m["arrays"])
    return m.get("num_tensors", len(m["tensors"]))


def manifest_complete(m):
    return len(manifest_tensors(m)) == manifest_count(m)


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


# ------------------------------------------------------ decoding raw values

STRUCT = {"int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint8": "B",
          "uint16": "H", "uint32": "I", "uint64": "Q", "float16": "e",
          "float32": "f", "float64": "d"}


def decode(dtype, raw):
    code = STRUCT[dtype]
    n = len(raw) // struct.calcsize(code)
    return list(struct.unpack(f"<{n}{code}", raw))


def same_value(dtype, got, want):
    """Compares a dump --json value with the decoded original, bit-exactly
    for floats (NaN: any NaN; Inf: the strings)."""
    if dtype in ("float16", "float32", "float64"):
        if math.isnan(want):
            return got == "nan"
        if math.isinf(want):
            return got == ("inf" if want > 0 else "-inf")
        if isinstance(got, str) or isinstance(got, bool):
            return False
        code = STRUCT[dtype]
        return struct.pack("<" + code, float(got)) == struct.pack("<" + code, want)
    return not isinstance(got, bool) and got == want




def binary_ok():
    """Whether TENSIO can run; if not, says so in the summary's form."""
    if os.access(TENSIO, os.X_OK):
        return True
    print(f"not executable: {TENSIO}")
    print("0 passed, 1 failed")
    return False


def finish():
    """Prints the last line, "N passed, M failed"; the exit status."""
    print(f"{PASSED} passed, {FAILED} failed")
    return 1 if FAILED else 0
