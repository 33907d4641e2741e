"""Threads (docs/architecture.md, "Threads"): the package releases the GIL
around decoding, hashing, converting and saving, so Python threads run those
in the C library at once. 8 threads hash (all three kinds) and convert (to
every format) the same shared Containers and their own Containers of the same
files, and save to distinct files in one directory; every result must equal
the one computed first on one thread, and nothing may crash. Iteration
counts, not time, bound the test."""

import hashlib
import os
import threading

import pytest

import tensio
from conftest import vec, vec_list

THREADS = 8
ROUNDS = 3
MAX_BYTES = 256 << 10  # larger files add bytes, not interleavings
DIRS = [("btf", ".btf"), ("tenbin", ".ten"), ("zio", ".zmsg"), ("zio/tensorcom", ".ten"),
        ("tmfile", ".tmfile"), ("onnx", ".onnx"), ("rten/small_cnn", ".rten"),
        ("rten/int_consts", ".rten"), ("rten/shape_ops", ".rten")]
LOSSY = dict(densify=True, drop_names=True, drop_metadata=True, widen=True)


def _paths():
    out = []
    for d, ext in DIRS:
        for name in vec_list(d, ext):
            p = vec(d + "/" + name)
            if p and os.path.getsize(p) <= MAX_BYTES:
                out.append(p)
    return out


PATHS = _paths()


def outcome(fn):
    """What a call gave: ("ok", sha256 of bytes) or (error class, message)."""
    try:
        r = fn()
    except tensio.Error as e:
        return (type(e).__name__, str(e))
    return ("ok", hashlib.sha256(r if isinstance(r, (bytes, bytearray)) else
                                 repr(r).encode()).hexdigest())


def digest(c):
    """Hashes of every tensor (three kinds), the container's encoding in every
    format, and the graph's shape, as a tuple of outcomes."""
    out = [c.format, len(c)]
    for i in range(len(c)):
        t = c.tensor(i)
        for what in ("dense", "values", "indices"):
            out.append(outcome(lambda t=t, w=what: t.sha256(w)))
    for fmt in sorted(tensio.formats()):
        out.append(outcome(lambda f=fmt: tensio.dumps(c, f, **LOSSY)))
    g = c.graph
    if g is not None:
        out.append((len(g.nodes), len(g.values), [n.op for n in g.nodes]))
    return tuple(out)


def run_threads(fn):
    errors = []

    def body(k):
        try:
            fn(k)
        except BaseException as e:  # reported by the main thread
            errors.append("thread %d: %r" % (k, e))

    ts = [threading.Thread(target=body, args=(k,)) for k in range(THREADS)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[:3]


def save_outcome(c, dst):
    """Saving c as dst in its own format: ("ok", sha256 of the file) or the
    error class (its message names the path)."""
    try:
        tensio.save(dst, c, format=c.format, sync=False, **LOSSY)
    except tensio.Error as e:
        return type(e).__name__
    with open(dst, "rb") as f:
        return ("ok", hashlib.sha256(f.read()).hexdigest())


@pytest.mark.skipif(not PATHS, reason="no vectors")
def test_threads_hash_convert_save(tmp_path):
    opened, want, want_save = {}, {}, {}
    for i, p in enumerate(PATHS):
        try:
            opened[p] = tensio.open(p)
        except tensio.Error:
            continue
        want[p] = digest(opened[p])
        want_save[p] = save_outcome(opened[p], tmp_path / ("base-%d" % i))
    assert len(want) >= 20
    assert {c.format for c in opened.values()} >= {"btf", "tenbin", "zio"}
    paths = sorted(want)
    done = [0] * THREADS

    def work(k):
        for r in range(ROUNDS):
            for j in range(len(paths)):
                p = paths[(j + 7 * k + r) % len(paths)]
                # the same Container as every other thread
                assert digest(opened[p]) == want[p], p
                # a Container of its own, of the same file, saved to a file of its own
                with tensio.open(p) as c:
                    assert digest(c) == want[p], p
                    assert save_outcome(c, tmp_path / ("t%d-%d" % (k, j))) == want_save[p], p
                done[k] += 1

    run_threads(work)
    assert sum(done) == THREADS * ROUNDS * len(paths)
    for c in opened.values():
        c.close()
