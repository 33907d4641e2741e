"""Messages (ZeroMQ frames): loads_parts decodes the ZIO TENS and tensorcom
vectors' frames to their manifests, and dumps_parts re-encodes them byte for
byte; the parts are kept referenced by the views; hostile frames raise."""

import gc
import hashlib
import random
import sys

import numpy as np
import pytest

import tensio
from conftest import manifest, sha256, vec

ZIO = manifest("zio/manifest.json")
ZIO_VECTORS = ZIO["vectors"] if ZIO else []
TC = manifest("zio/tensorcom/manifest.json")
TC_BATCHES = TC["batches"] if TC else []


def read(rel):
    with open(vec(rel), "rb") as f:
        return f.read()


@pytest.mark.parametrize("v", ZIO_VECTORS, ids=[v["name"] for v in ZIO_VECTORS])
def test_zio_frames(v):
    frames = [read("zio/" + f["file"]) for f in v["frames"]]
    c = tensio.loads_parts(frames)
    assert c.format == "zio"
    assert c.properties["seqno"] == str(v["seqno"])
    for t in v["decoded"]["tensors"]:
        assert sha256(c[t["index"]]) == t["sha256"]
    out = tensio.dumps_parts(c, "zio")
    assert [hashlib.sha256(p).hexdigest() for p in out] == [f["sha256"] for f in v["frames"]]
    single = tensio.dumps_parts(c, "zio", single_part=True)
    assert len(single) == 1
    assert hashlib.sha256(single[0]).hexdigest() == v["encoded"]["sha256"]


@pytest.mark.parametrize("b", TC_BATCHES, ids=[b["name"] for b in TC_BATCHES])
def test_tensorcom_frames(b):
    frames = [read("zio/tensorcom/" + f["file"]) for f in b["frames"]]
    c = tensio.loads_parts(frames, format="tenbin")
    assert c.names == (b["infos"] or [None] * len(b["arrays"]))
    for i, a in enumerate(b["arrays"]):
        assert str(c[i].dtype) == a["dtype"] and sha256(c[i]) == a["sha256"]
    out = tensio.dumps_parts(c, "tenbin", drop_names=not b["infos"])
    assert [hashlib.sha256(p).hexdigest() for p in out] == [f["sha256"] for f in b["frames"]]


def test_parts_round_trip_and_lifetime():
    arrays = {"a": np.arange(12, dtype=np.float32).reshape(3, 4), "b": np.arange(3, dtype=np.int64)}
    parts = tensio.dumps_parts(arrays, "zio", seqno=9, origin=5)
    refs = [sys.getrefcount(p) for p in parts]
    c = tensio.loads_parts(parts)
    a = c["a"]
    assert np.shares_memory(a, np.frombuffer(parts[2], np.uint8)) or any(
        np.shares_memory(a, np.frombuffer(p, np.uint8)) for p in parts)
    assert c.properties["seqno"] == "9" and c.properties["origin"] == "5"
    del c
    gc.collect()
    assert np.array_equal(a, arrays["a"]) and not a.flags.writeable
    del a
    gc.collect()
    assert [sys.getrefcount(p) for p in parts] == refs


def test_hostile_parts():
    parts = tensio.dumps_parts([np.arange(5, dtype=np.int16)], "zio")
    rng = random.Random(1)
    for _ in range(300):
        ps = [bytearray(p) for p in parts]
        k = rng.randrange(len(ps))
        if ps[k] and rng.random() < 0.5:
            ps[k][rng.randrange(len(ps[k]))] ^= 1 << rng.randrange(8)
        else:
            ps[k] = ps[k][:rng.randrange(len(ps[k]) + 1)]
        if rng.random() < 0.2:
            del ps[rng.randrange(len(ps))]
        for fmt in (None, "zio", "tenbin"):
            try:
                c = tensio.loads_parts(ps, format=fmt)
                [x.tobytes() for x in c if isinstance(x, np.ndarray)]
            except tensio.Error:
                pass
    with pytest.raises(tensio.Error):
        tensio.loads_parts([], format="zio")
