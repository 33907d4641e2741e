"""What the conversion tests (test_convert_rten.py, test_convert_tmfile.py)
share: their command line (`SCRIPT /path/to/tensio [--ort]`), where vectors
are found ($TIO_TEST_VECTORS, then $TIO_SHARED_VECTORS), running tensio,
counting cases, a vector directory for onnxruntime built from a tmfile
manifest, and running a model in onnxruntime (tests/ort/run_model.js)."""

import json
import os
import subprocess
import sys

_SCRIPT = os.path.basename(sys.argv[0])
if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] != "--ort"):
    print("usage: %s /path/to/tensio [--ort]" % _SCRIPT, file=sys.stderr)
    sys.exit(2)
ORT = len(sys.argv) == 3

TENSIO = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LOCAL = os.environ.get("TIO_TEST_VECTORS") or os.path.join(REPO, "tests", "vectors")
SHARED = os.environ.get("TIO_SHARED_VECTORS") or os.path.join(REPO, "..", "shared", "vectors")

_COUNT = {"passed": 0, "failed": 0}


def find(rel):
    for base in (LOCAL, SHARED):
        p = os.path.join(base, rel)
        if os.path.exists(p):
            return p
    return None


def run(*args):
    r = subprocess.run([TENSIO, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError("tensio %s: exit %d: %s" % (" ".join(args), r.returncode,
                                                       r.stderr.strip()))
    return r.stdout


def case(name, fn, *args):
    """Runs one case: "ok" (with what fn returned, if anything) or "FAIL"."""
    try:
        extra = fn(*args)
        _COUNT["passed"] += 1
        print("ok   " + name + (" (%s)" % extra if extra else ""))
    except Exception as ex:  # noqa: BLE001 - any failure fails the case
        _COUNT["failed"] += 1
        print("FAIL " + name + ": " + str(ex))


def summary():
    """Prints "N passed, M failed"; the exit status."""
    print("%d passed, %d failed" % (_COUNT["passed"], _COUNT["failed"]))
    return 1 if _COUNT["failed"] else 0


def tmfile_vector(name, tmp, input_key):
    """A vector directory for tmfile/<name> from its manifest: the inputs
    Tengine ran (<name>.in<j>.bin, raw float32) named by the manifest field
    `input_key` ("onnx_name": the .onnx's, "tensor": the tmfile's), and the
    outputs Tengine computed (<name>.out<k>.bin), as .npy files and
    reference_io.json. None when a file is missing."""
    import numpy as np

    man = find(os.path.join("tmfile", name + ".json"))
    if not man:
        return None
    with open(man) as f:
        m = json.load(f)
    d = os.path.join(tmp, "io-%s-%s" % (input_key, name))
    os.makedirs(d, exist_ok=True)
    io = {"inputs": [], "outputs": []}
    for kind, key in (("inputs", input_key), ("outputs", "name")):
        for k, e in enumerate(m[kind]):
            raw = find(os.path.join("tmfile", e["file"]))
            if not raw:
                return None
            a = np.fromfile(raw, dtype="<f4").reshape(e["dims"])
            npy = "%s_%d.npy" % (kind, k)
            np.save(os.path.join(d, npy), a)
            io[kind].append({"name": e.get(key) or e.get("onnx_name"), "file": npy,
                             "dtype": "float32", "shape": e["dims"]})
    with open(os.path.join(d, "reference_io.json"), "w") as f:
        json.dump(io, f)
    return d


def run_in_ort(model, vdir, write=False):
    """The model in onnxruntime on the vector directory's inputs, against its
    outputs; run_model.js's report ("ok max_abs_diff=D"). write: the model's
    outputs are written as the directory's outputs instead (run_model.js
    --write)."""
    ort_dir = os.path.join(REPO, "tests", "ort")
    if not os.path.isdir(os.path.join(ort_dir, "node_modules", "onnxruntime-node")):
        raise AssertionError("onnxruntime-node is not installed: run scripts/install-ort.sh")
    env = dict(os.environ, NODE_PATH=os.path.join(ort_dir, "node_modules"))
    argv = ["node", os.path.join(ort_dir, "run_model.js")] + (["--write"] if write else [])
    r = subprocess.run(argv + [model, vdir], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise AssertionError("onnxruntime: " + (r.stderr or r.stdout).strip())
    return r.stdout.strip()
