"""No reference or memory leaks: refcounts around every call, and
tracemalloc over 10,000 open/close cycles."""

import gc
import sys
import tracemalloc

import numpy as np

import tensio
from conftest import sha256, vec

SMALL = vec("tenbin/multi_infos.ten")


def test_refcounts():
    with open(SMALL, "rb") as f:
        data = f.read()
    r_data = sys.getrefcount(data)
    c = tensio.loads(data)
    owner = c._owner
    r_owner = sys.getrefcount(owner)
    a = c[0]
    assert sys.getrefcount(owner) == r_owner + 1
    views = [c[i] for i in range(len(c)) for _ in range(10)]
    assert sys.getrefcount(owner) == r_owner + 1 + len(views)
    del views, a
    gc.collect()
    assert sys.getrefcount(owner) == r_owner
    for _ in range(100):
        c.names, c.metadata, c.properties, c.warnings, c.sha256(0)
        tensio.dumps(c, "tenbin")
    assert sys.getrefcount(owner) == r_owner
    del c, owner
    gc.collect()
    assert sys.getrefcount(data) == r_data  # the buffer released with the owner
    arr = np.arange(10, dtype=np.float32)
    r_arr = sys.getrefcount(arr)
    for _ in range(100):
        tensio.dumps([arr], "tenbin")
        tensio.container({"a": arr})[0]
    gc.collect()
    assert sys.getrefcount(arr) == r_arr


def test_errors_do_not_leak():
    with open(SMALL, "rb") as f:
        data = f.read()[:-5]
    r = sys.getrefcount(data)
    for _ in range(200):
        try:
            tensio.loads(data, format="tenbin")
        except tensio.Error:
            pass
    assert sys.getrefcount(data) == r


def cycle(n):
    for _ in range(n):
        with tensio.open(SMALL) as c:
            for a in c:
                sha256(a)
            c.names, c.metadata


def test_tracemalloc_10k_open_close():
    cycle(200)  # warm caches
    gc.collect()
    tracemalloc.start()
    try:
        gc.collect()
        start = tracemalloc.get_traced_memory()[0]
        cycle(10_000)
        gc.collect()
        growth = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert growth < 64 * 1024, f"{growth} bytes more after 10,000 open/close cycles"


def test_no_fd_or_mapping_leak():
    import os
    if not os.path.isdir("/proc/self/fd"):
        return
    cycle(10)
    fds = len(os.listdir("/proc/self/fd"))
    with open("/proc/self/maps") as f:
        maps = len(f.readlines())
    cycle(500)
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) == fds
    with open("/proc/self/maps") as f:
        assert len(f.readlines()) <= maps + 2
