"""tensorcom-style serving (docs/streaming.md, "Serving batches to
trainers"): 2 `tensio send --epochs` servers (the build's CLI) feed 3
trainer processes iterating tensio.torch.StreamDataset, one of them slow
(it sleeps at every batch), over local shards and over shards nginx serves
on 127.0.0.1. In each of 2 epochs every sample key arrives exactly once
across the trainers, its tensor holding that sample's values. No timing is
asserted."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch  # noqa: F401  (Debian's python3-torch: the trainers need it; never skipped)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "source"))
from http_servers import Nginx  # noqa: E402

CLI = os.environ.get("TIO_CLI") or os.path.join(REPO, "build", "tensio")
SHARDS, SAMPLES, EPOCHS, TRAINERS = 4, 12, 2, 3
LIMIT = 120  # seconds any process may take (a hang guard, not a measurement)


def write_shards(root):
    """SHARDS shards of SAMPLES samples: s{k}_{i:03d}.npy (float32 [4] of
    100 k + i, by NumPy) and .cls (not sent), written by Python's tarfile."""
    import io
    import tarfile
    keys = []
    for k in range(SHARDS):
        with tarfile.open(os.path.join(root, "shard-%03d.tar" % k), "w",
                          format=tarfile.USTAR_FORMAT) as t:
            for i in range(SAMPLES):
                key = "s%d_%03d" % (k, i)
                keys.append(key)
                b = io.BytesIO()
                np.save(b, np.full(4, 100 * k + i, np.float32))
                for ext, data in (("npy", b.getvalue()), ("cls", str(i).encode())):
                    ti = tarfile.TarInfo("%s.%s" % (key, ext))
                    ti.size = len(data)
                    t.addfile(ti, io.BytesIO(data))
    return sorted(keys)


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    d = tmp_path_factory.mktemp("serve")
    www = d / "www"
    www.mkdir()
    return d, str(www), write_shards(str(www))


def serve(sources_per_server):
    """Starts the trainers, then the servers; returns the trainers' results."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), HERE) if p)
    trainers = [subprocess.Popen(
        [sys.executable, os.path.join(HERE, "torch_stream_trainer.py"),
         str(len(sources_per_server)), str(EPOCHS), "0.05" if t == 0 else "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for t in range(TRAINERS)]
    servers = []
    try:
        ports = [p.stdout.readline().strip().rsplit(":", 1)[1] for p in trainers]
        assert all(p.isdigit() for p in ports), ports
        url = "zpush://127.0.0.1:{%s}" % ",".join(ports)
        for srcs in sources_per_server:
            servers.append(subprocess.Popen(
                [CLI, "send", "--epochs", str(EPOCHS), "--batch", "3", "--keys", "--hwm", "2",
                 url] + srcs, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                # without the sanitizer build's LD_PRELOAD (meant for python3, not the CLI)
                env={k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}))
        for s in servers:
            _, err = s.communicate(timeout=LIMIT)
            assert s.returncode == 0, err
            assert err.count("marker sent to 3 endpoints") == EPOCHS, err
        results = []
        for p in trainers:
            out, err = p.communicate(timeout=LIMIT)
            assert p.returncode == 0, err
            results.append(json.loads(out))
        return results
    finally:
        for p in trainers + servers:
            if p.poll() is None:
                p.kill()
                p.wait()


def check(results, keys):
    for r in results:
        assert r["bad"] == []
        assert len(r["epochs"]) == EPOCHS
    for e in range(EPOCHS):
        got = sorted(k for r in results for k in r["epochs"][e])
        assert got == keys, "epoch %d" % e  # every sample exactly once
    # (how many each trainer gets depends on timing: when its connections
    # complete, how fast it reads; nothing about it is asserted)


def test_serve_local(shards):
    _, www, keys = shards
    p = [os.path.join(www, "shard-%03d.tar" % k) for k in range(SHARDS)]
    # server 1: mapped shard files; server 2: a brace list, read as a stream
    results = serve([p[:2], [os.path.join(www, "shard-{002..003}.tar")]])
    check(results, keys)


def test_serve_http(shards):
    d, www, keys = shards
    ng = Nginx(str(d), www)
    try:
        results = serve([[ng.url + "/shard-{000..001}.tar"],
                         [ng.url + "/shard-002.tar", "pipe:cat %s" %
                          os.path.join(www, "shard-003.tar")]])
    finally:
        ng.stop()
    check(results, keys)


def test_server_ahead_in_process():
    """Two Python servers (tensio.Stream, send_all for the markers) and one
    StreamDataset in this process: server A sends both epochs before server
    B starts, so A's epoch-1 batch arrives during epoch 0 and must wait for
    the next iteration; markers are counted per epoch."""
    import tensio
    from tensio.torch import StreamDataset

    def batch(key, epoch, v):
        return ([np.full((1, 2), v, np.float32), np.frombuffer(key.encode(), np.uint8),
                 np.array([epoch], np.int32)], [None, "__key__", "__epoch"])

    with StreamDataset("zpull://127.0.0.1:*", servers=2, keys=True, timeout=30) as ds:
        url = "zpush://127.0.0.1:" + ds.endpoint.rsplit(":", 1)[1]
        with tensio.Stream(url, timeout=30) as a, tensio.Stream(url, timeout=30) as b:
            for srv, name in ((a, "a"), (b, "b")):
                for e in range(2):
                    arrays, names = batch("%s%d" % (name, e), e, 10 * e + (name == "b"))
                    srv.send(arrays, names=names)
                    srv.send_all([np.array([e], np.int32)], names=["__epoch"])
            got = [[(ks, t[0].tolist()) for t, ks in ds] for _ in range(2)]
    assert sorted(got[0]) == [(["a0"], [[0.0, 0.0]]), (["b0"], [[1.0, 1.0]])]
    assert sorted(got[1]) == [(["a1"], [[10.0, 10.0]]), (["b1"], [[11.0, 11.0]])]
    assert ds.epoch == 2


def test_send_all_fanout():
    """Stream.send_all on a PUSH over 2 endpoints: each PULL gets the marker
    after the messages sent to it; every message arrives once."""
    import tensio
    rx = [tensio.Stream("zpull://127.0.0.1:*", timeout=10) for _ in range(2)]
    url = "zpush://127.0.0.1:{%s}" % ",".join(r.endpoint.rsplit(":", 1)[1] for r in rx)
    with tensio.Stream(url, timeout=10) as tx:
        for i in range(10):
            tx.send([np.array([i], np.int32)])
        tx.send_all([np.array([-1], np.int32)])
    seen = []
    for r in rx:
        with r:
            vals = [int(r.recv()[0][0])]
            while vals[-1] != -1:
                vals.append(int(r.recv()[0][0]))
            seen += vals[:-1]
            assert r.stats["received"] == len(vals)
    assert sorted(seen) == list(range(10))


def test_stream_errors_in_process():
    """A batch of an epoch already ended (a server more than servers=
    counts) and more batches ahead than max_ahead are StreamErrors."""
    import tensio
    from tensio.torch import StreamDataset, StreamError

    def send(tx, epoch, data=True):
        arrays = [np.zeros((1, 2), np.float32)] if data else []
        tx.send(arrays + [np.array([epoch], np.int32)],
                names=[None] * len(arrays) + ["__epoch"])

    with StreamDataset("zpull://127.0.0.1:*", servers=1, timeout=30) as ds:
        url = "zpush://127.0.0.1:" + ds.endpoint.rsplit(":", 1)[1]
        with tensio.Stream(url, timeout=30) as a, tensio.Stream(url, timeout=30) as b:
            send(a, 0)
            send(a, 0, data=False)
            assert len(list(ds)) == 1  # epoch 0: a's marker ends it
            send(b, 0)                 # a second server's epoch 0
            with pytest.raises(StreamError, match="epoch 0 arrived during epoch 1"):
                list(ds)
    with StreamDataset("zpull://127.0.0.1:*", servers=1, timeout=30, max_ahead=1) as ds:
        url = "zpush://127.0.0.1:" + ds.endpoint.rsplit(":", 1)[1]
        with tensio.Stream(url, timeout=30) as a:
            send(a, 1)
            send(a, 1)
            with pytest.raises(StreamError, match="max_ahead"):
                list(ds)


def test_iteration_left_early_resumes():
    """An epoch's iteration left after one batch: the next iteration
    yields the rest of that epoch, then the next iteration the next epoch."""
    import tensio
    from tensio.torch import StreamDataset

    def send(tx, epoch, v=None):
        arrays = [np.full((1,), v, np.float32)] if v is not None else []
        tx.send(arrays + [np.array([epoch], np.int32)],
                names=[None] * len(arrays) + ["__epoch"])

    with StreamDataset("zpull://127.0.0.1:*", servers=1, timeout=30) as ds:
        with tensio.Stream("zpush://127.0.0.1:" + ds.endpoint.rsplit(":", 1)[1],
                           timeout=30) as a:
            for v in (1, 2, 3):
                send(a, 0, v)
            send(a, 0)
            for v in (4, 5):
                send(a, 1, v)
            send(a, 1)
            it = iter(ds)
            first = next(it)[0].item()
            it.close()                   # left early
            rest = [t[0].item() for t in ds]
            assert ds.epoch == 1 and sorted([first] + rest) == [1, 2, 3]
            assert [t[0].item() for t in ds] == [4, 5] and ds.epoch == 2
