"""Hostile bytes through loads: every truncation point (a sample for big
files) and bit flips of every vector raise tensio.Error or decode, and
whatever decodes can be viewed, hashed and re-encoded without crashing."""

import random

import pytest

import tensio
from conftest import all_vector_files, vec, vec_list

FILES = all_vector_files()


def exercise(data, fmt=None):
    try:
        c = tensio.loads(data, format=fmt, limits={"max_dense_bytes": 1 << 20})
    except tensio.Error as e:
        assert e.code > 0 and isinstance(e.message, str)
        return False
    for i in range(len(c)):
        try:
            x = c[i]
            if isinstance(x, tensio.Coo):
                x.todense()
            else:
                x.tobytes()
            c.sha256(i)
        except tensio.Error:
            pass
        except ValueError:
            pass  # NumPy: rank above its 32 dims
    c.names, c.metadata, c.properties, c.warnings
    g = c.graph
    if g is not None:
        for n in g.nodes:
            n.attributes
    for fmt_out in ("tenbin", "zio", "btf"):
        try:
            tensio.dumps(c, fmt_out, densify=True, drop_names=True, drop_metadata=True,
                         widen=True)
        except tensio.Error:
            pass
    return True


@pytest.mark.parametrize("rel", FILES)
def test_truncations_and_flips(rel):
    with open(vec(rel), "rb") as f:
        data = f.read()
    rng = random.Random(rel)
    n = len(data)
    cuts = range(n) if n <= 512 else sorted(rng.sample(range(n), 256))
    whole = memoryview(data)
    for k in cuts:
        exercise(data[:k])  # a copy of its own: ASan sees reads past its end
        exercise(bytearray(whole[:k]))  # one copy, not two
    fmt = tensio.loads(data).format
    for _ in range(200 if n <= 1 << 16 else 40):
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(min(n, 4096)) if rng.random() < 0.8 else rng.randrange(n)
            b[pos] ^= 1 << rng.randrange(8)
        flipped = bytes(b)
        exercise(flipped)
        exercise(flipped, fmt)


MALFORMED = [f"{d}/malformed/{n}" for d in ("btf", "tenbin")
             for n in vec_list(f"{d}/malformed", "") if not n.endswith(".json")]


@pytest.mark.parametrize("rel", MALFORMED)
def test_malformed_vectors(rel):
    with open(vec(rel), "rb") as f:
        exercise(f.read(), rel.split("/")[0])


def test_garbage_and_empty():
    for data in (b"", b"\0", b"\xff" * 64, bytes(range(256)) * 4):
        exercise(data)
        for fmt in tensio.formats():
            exercise(data, fmt)
    import numpy as np
    exercise(np.zeros(100, np.uint8))  # any bytes-like
    exercise(memoryview(b"ZIO0" + bytes(100)))
