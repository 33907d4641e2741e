"""tensio.zio: encode(arrays, label_extra=..., seqno=...) -> frames and
decode(frames) -> Container, against ZIO's golden frames and the CLI."""

import json
import subprocess

import numpy as np
import pytest

import tensio
from conftest import manifest, vec, sha256
from test_stream import bound, cli, cli_env

MANIFEST = manifest("zio/manifest.json")


def frames_of(v):
    return [open(vec("zio/" + f["file"]), "rb").read() for f in v["frames"]]


@pytest.mark.parametrize("name", ["tens_i16_2d", "tens_f64_large", "tens_zero_size_last"])
def test_encode_matches_zio_frames(name):
    """Arrays + the header's coordinates give ZIO's C++ frames byte for byte."""
    v = next(v for v in MANIFEST["vectors"] if v["encoded"]["file"] == name + ".zmsg")
    want = frames_of(v)
    d = v["decoded"]
    arrays = list(tensio.zio.decode(want))
    got = tensio.zio.encode(arrays, seqno=d["seqno"], level=d["level"], origin=d["origin"],
                            granule=d["granule"])
    assert got == want


def test_label_extra_round_trip():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    extra = {"flow": "DAT", "Zz": [1, 2.5, None], "obj": {"b": 1, "a": "é"}}
    frames = tensio.zio.encode({"adc": a}, label_extra=extra, seqno=9, metadata={"run": "3"})
    assert all(isinstance(f, bytes) for f in frames) and len(frames) == 3
    lab = tensio.zio.label(frames)
    assert {k: lab[k] for k in extra} == extra
    assert lab["TENS"]["metadata"] == {"run": "3"}
    text = frames[0][8:].decode()
    assert text == json.dumps(lab, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    c = tensio.zio.decode(frames)
    assert c.names == ["adc"] and np.array_equal(c[0], a) and c.properties["seqno"] == "9"
    assert c.metadata == {"run": "3"}
    # tensio's own writer keeps the other label keys (native state): the same bytes
    assert tensio.dumps_parts(c, "zio") == frames


def test_label_extra_refused():
    a = [np.ones(2)]
    for bad in ({"TENS": {}}, {"x": {1, 2}}, {1: "x"}, {"x": float("nan")}):
        with pytest.raises(tensio.ArgumentError):
            tensio.zio.encode(a, label_extra=bad)
    with pytest.raises(tensio.ArgumentError):
        tensio.zio.label([b"XYZ"])


def test_decode_views_and_errors():
    frames = [bytearray(f) for f in tensio.zio.encode([np.arange(300, dtype=np.int32)])]
    c = tensio.zio.decode(frames)
    x = c[0]
    assert not x.flags.writeable and np.shares_memory(x, np.frombuffer(frames[2], np.uint8))
    assert tensio.zio.decode(frames, copy=True)[0].tolist() == list(range(300))
    with pytest.raises(tensio.Error):
        tensio.zio.decode([frames[0], frames[1], frames[2][:-4]])
    with pytest.raises(tensio.Error):
        tensio.zio.decode([b"ZIO0TENS{", bytes(24)])


def test_cli_recv_reads_encode():
    zmq = pytest.importorskip("zmq")
    exe = cli()
    r = subprocess.Popen([exe, "recv", "--bind", "tcp://127.0.0.1:*", "--json", "--hash",
                          "--count", "1", "--timeout", "20"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=cli_env())
    a = np.arange(50, dtype=np.uint16).reshape(5, 10)
    ctx = zmq.Context()
    s = ctx.socket(zmq.PUSH)
    try:
        s.connect(bound(r))
        s.send_multipart(tensio.zio.encode({"a": a}, label_extra={"flow": "DAT"}, seqno=11,
                                           origin=2))
        out, err = r.communicate(timeout=30)
    finally:
        if r.poll() is None:
            r.kill()
        s.close(0)
        ctx.term()
    assert r.returncode == 0, err
    m = json.loads(out)
    assert m["proto"] == "zio" and m["props"]["seqno"] == "11" and m["props"]["origin"] == "2"
    assert m["tensors"][0]["name"] == "a" and m["tensors"][0]["sha256"] == sha256(a)


def test_decode_reads_cli_send():
    zmq = pytest.importorskip("zmq")
    exe = cli()
    f = vec("zio/tens_f32_3d.zmsg")
    ctx = zmq.Context()
    s = ctx.socket(zmq.PULL)
    s.setsockopt(zmq.RCVTIMEO, 20000)
    port = s.bind_to_random_port("tcp://127.0.0.1")
    try:
        p = subprocess.run([exe, "send", "--timeout", "20", "--format-option", "seqno=5",
                            f"tcp://127.0.0.1:{port}", f], capture_output=True, timeout=60,
                           env=cli_env())
        assert p.returncode == 0, p.stderr
        frames = s.recv_multipart(copy=False)
    finally:
        s.close(0)
        ctx.term()
    c = tensio.zio.decode(frames)
    with tensio.open(f) as want:
        assert [sha256(x) for x in c] == [sha256(x) for x in want]
        assert c.names == want.names
    assert c.properties["seqno"] == "5"
