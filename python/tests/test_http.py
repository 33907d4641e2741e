"""tensio.open() of http:// URLs (src/source/), against Debian's nginx and a
misbehaving server of the tests' own on 127.0.0.1 (tests/source/
http_servers.py): the arrays numpy wrote, lazily fetched tensors, and the
remote limits (max_remote_bytes, timeout_ms, max_retries) bounding an
endless body and a stalled one. nginx missing fails the module's tests."""
import re

import numpy as np
import pytest

import tensio
from conftest import tar_shard
from http_servers import own_server, write_safetensors  # tests/source (conftest.py)

A = np.arange(12, dtype=np.float32).reshape(3, 4)
B = np.arange(200000, dtype=np.uint8)


@pytest.fixture(scope="module")
def www(tmp_path_factory):
    d = tmp_path_factory.mktemp("http")
    root = d / "www"
    root.mkdir()
    write_safetensors(str(root / "s.safetensors"), [("a", A), ("b", B)])
    np.save(str(root / "x.npy"), np.arange(70000, dtype=np.int64))
    for k in range(3):  # shards: .npy and .cls members, 4 samples each
        tmp = d / f"parts{k}"
        tmp.mkdir()
        files = []
        for i in range(4):
            np.save(str(tmp / f"{k}{i:03d}.npy"), np.full((100, 100), 10 * k + i, np.float32))
            (tmp / f"{k}{i:03d}.cls").write_text(str(10 * k + i))
            files += [str(tmp / f"{k}{i:03d}.npy"), str(tmp / f"{k}{i:03d}.cls")]
        tar_shard(str(root / f"shard-{k:03d}.tar"), files)
    return d


@pytest.fixture(scope="module")
def own(www):
    srv, url = own_server(str(www / "www"))
    yield url
    srv.shutdown()


def test_open_url(nginx):
    with tensio.open(nginx + "/s.safetensors") as c:
        assert c.format == "safetensors"
        assert np.array_equal(c["a"], A)
        assert np.array_equal(c["b"], B)
    assert np.array_equal(tensio.load(nginx + "/x.npy")[0], np.arange(70000, dtype=np.int64))


def test_url_errors(nginx):
    with pytest.raises(tensio.IOError, match="/missing.npy: HTTP 404"):
        tensio.open(nginx + "/missing.npy")


def test_limits_named(nginx):
    with tensio.open(nginx + "/x.npy", limits={"max_retries": 2, "timeout_ms": 5000}) as c:
        assert c.limits["max_retries"] == 2 and c.limits["timeout_ms"] == 5000
        assert c.limits["max_remote_bytes"] == 1 << 40 and c.limits["max_redirects"] == 8
    with pytest.raises(tensio.LimitError, match="max_remote_bytes"):
        tensio.open(nginx + "/s.safetensors", limits={"max_remote_bytes": 1000})


def test_resumed(own):
    with tensio.open(own + "/drop-once/s.safetensors") as c:
        assert np.array_equal(c["b"], B)


def test_endless_body_bounded(own):
    with pytest.raises(tensio.LimitError, match="endless200/s.safetensors.*max_remote_bytes"):
        tensio.open(own + "/endless200/s.safetensors", limits={"max_remote_bytes": 1 << 20})


def test_stall_times_out(own):
    with pytest.raises(tensio.Error, match="stall/s.safetensors.*1 retry"):
        tensio.open(own + "/stall/s.safetensors", limits={"timeout_ms": 1000, "max_retries": 1})


def test_lazy_open(www):
    """lazy=True: open fetches the header only; a tensor's bytes come when
    its data are first read, each once; dumps (a save) fetches the rest."""
    srv, url = own_server(str(www / "www"))
    try:
        def fetched(since=0):
            spans = [re.fullmatch(r"bytes=(\d+)-(\d+)", r).groups()
                     for m, r in srv.log[since:] if m == "lazy" and r]
            return sum(int(b) - int(a) + 1 for a, b in spans)
        with tensio.open(url + "/lazy/s.safetensors", lazy=True) as c:
            assert list(c.keys()) == ["a", "b"] and c.tensor("b").shape == (200000,)
            head = fetched()
            assert head < 70000  # the header's request (64 KiB), not b's 200,000 bytes
            assert np.array_equal(c["a"], A)
            assert fetched() == head  # a lies in the first 64 KiB already held
            assert np.array_equal(c["b"], B)
            got = fetched()
            assert head + 130000 <= got <= head + 200000  # b's chunks past the first
            n = len(srv.log)
            with tensio.open(url + "/lazy/s.safetensors") as eager:
                want = eager.tensor("b").sha256()
            m = len(srv.log)
            assert c.tensor("b").sha256() == want and fetched(m) == 0  # held: not again
            assert np.array_equal(tensio.loads(tensio.dumps(c, "npz"))["b"], B)
            assert fetched(m) == 0 and n < m
        with tensio.open(url + "/lazy/s.safetensors", lazy=True) as c:
            n = len(srv.log)
            assert np.array_equal(tensio.loads(tensio.dumps(c, "npz"))["b"], B)
            assert fetched(n) > 130000  # dumps fetched every tensor
    finally:
        srv.shutdown()


def test_lazy_threads(www):
    """Threads of one lazy container: fetches take turns without the GIL
    (the test's own server runs in this process), reads of fetched tensors
    go on meanwhile."""
    import threading
    srv, url = own_server(str(www / "www"))
    try:
        with tensio.open(url + "/lazy2/s.safetensors", lazy=True) as c:
            errors = []

            def read(name, want):
                try:
                    for _ in range(20):
                        assert np.array_equal(c[name], want)
                except Exception as e:  # noqa: BLE001 (reported below)
                    errors.append(e)
            ts = [threading.Thread(target=read, args=(n, w)) for n, w in
                  (("a", A), ("b", B), ("b", B), ("a", A))]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            assert not errors, errors
    finally:
        srv.shutdown()


def test_shard_list():
    assert tensio.shard_list("a-{08..10}.tar::b{x,y}") == [
        "a-08.tar", "a-09.tar", "a-10.tar", "bx", "by"]
    with pytest.raises(tensio.LimitError, match="max_shards"):
        tensio.shard_list("{0..99}{0..99}", limits={"max_shards": 1000})
    with pytest.raises(tensio.ArgumentError):
        tensio.shard_list("a{1..2")


def test_stream_shards(www, nginx):
    local = [s for k in range(3) for s in tensio.Shard(str(www / "www" / f"shard-{k:03d}.tar"))]
    for spec in (nginx + "/shard-{000..002}.tar",
                 "::".join("pipe:cat " + str(www / "www" / f"shard-{k:03d}.tar")
                           for k in range(3))):
        got = list(tensio.stream_shards(spec))
        assert len(got) == len(local) == 12
        for a, b in zip(got, local):
            assert a["__key__"] == b["__key__"] and a["cls"] == b["cls"]
            assert np.array_equal(a["npy"], b["npy"])
    assert [s["__url__"] for s in got][::4] == ["pipe:cat " + str(www / "www" / f"shard-{k:03d}.tar")
                                                for k in range(3)]


def test_stream_shards_errors(www, nginx):
    with pytest.raises(tensio.IOError, match="missing.tar: HTTP 404"):
        list(tensio.stream_shards(nginx + "/shard-000.tar::" + nginx + "/missing.tar"))
    with pytest.raises(tensio.IOError, match="exited with status 2"):
        list(tensio.stream_shards("pipe:cat " + str(www / "www" / "shard-000.tar") + "; exit 2"))
    with pytest.raises(tensio.LimitError, match="max_member_bytes"):
        list(tensio.stream_shards(nginx + "/shard-000.tar", limits={"max_member_bytes": 20000}))
