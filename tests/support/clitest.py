"""What the Python CLI tests share (tests/formats/test_npy.py, test_npz.py,
tests/cli/test_wds.py): the tensio binary from argv[1], running it, recording
failures, and the NumPy dtypes the .npy/.npz tests go through."""

import os
import subprocess
import sys

TENSIO = sys.argv[1] if len(sys.argv) > 1 else "tensio"
failures = []


def run(*args, ok=True, env=None, stdin=None):
    """tensio ARGS; env: variables added to the environment; stdin: a file."""
    full = dict(os.environ, **env) if env else None
    p = subprocess.run([TENSIO, *args], capture_output=True, text=True, env=full, stdin=stdin)
    if ok and p.returncode != 0:
        raise AssertionError("tensio %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr))
    return p


def check(name, cond, detail=""):
    if not cond:
        failures.append(name + (": " + detail if detail else ""))


def lines_by_file(out):
    """`tensio validate FILE...`'s standard output: {file: [its lines]}
    (each line is 'FILE: error: MESSAGE')."""
    by = {}
    for line in out.splitlines():
        by.setdefault(line.split(": error: ", 1)[0], []).append(line)
    return by


def report():
    """Prints the failures; the exit status: 1 when there were any."""
    for f in failures:
        print("FAIL:", f)
    print("%d failures" % len(failures))
    return 1 if failures else 0


def le_c(a):
    """The array as tensio holds it: C order, little-endian."""
    import numpy as np
    return np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<"), copy=False)


DTYPES = ["?", "i1", "u1", "<i2", ">i2", "<u2", ">u2", "<i4", ">i4", "<u4", ">u4", "<i8", ">i8",
          "<u8", ">u8", "<f2", ">f2", "<f4", ">f4", "<f8", ">f8"]
NAMES = {"b": "bool", "i": "int", "u": "uint", "f": "float"}
