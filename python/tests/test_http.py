"""tensio.open() of http:// URLs (src/source/), against Debian's nginx and a
misbehaving server of the tests' own on 127.0.0.1 (tests/source/
http_servers.py): the arrays numpy wrote, lazily fetched tensors, and the
remote limits (max_remote_bytes, timeout_ms, max_retries) bounding an
endless body and a stalled one. nginx missing fails the module's tests."""
import os
import sys

import numpy as np
import pytest

import tensio

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "source"))
from http_servers import Nginx, own_server, write_safetensors  # noqa: E402

A = np.arange(12, dtype=np.float32).reshape(3, 4)
B = np.arange(200000, dtype=np.uint8)


@pytest.fixture(scope="module")
def www(tmp_path_factory):
    d = tmp_path_factory.mktemp("http")
    root = d / "www"
    root.mkdir()
    write_safetensors(str(root / "s.safetensors"), [("a", A), ("b", B)])
    np.save(str(root / "x.npy"), np.arange(70000, dtype=np.int64))
    return d


@pytest.fixture(scope="module")
def nginx(www):
    ng = Nginx(str(www), str(www / "www"))
    yield ng.url
    ng.stop()


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
