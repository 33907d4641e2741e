#!/usr/bin/env python3
"""End-to-end tests of `tensio send` and `tensio recv` over loopback ZeroMQ.

Usage: python3 test_stream_cli.py /path/to/tensio

Everything runs on 127.0.0.1. The binding side always asks for port "*" and
the test reads the port from its "bound ENDPOINT" line on stderr. Every process
has a hard timeout and is killed when it runs over.

The tensorcom peer (tensorcom_peer.py next to this file) needs pyzmq and numpy:
Debian's /usr/bin/python3 with python3-zmq and python3-numpy. This script uses
the standard library only and finds an interpreter for the peer, /usr/bin/python3
first; when none can import both, the peer cases FAIL (they are never skipped).

Vectors come from $TIO_TEST_VECTORS (default tests/vectors), else
$TIO_SHARED_VECTORS. The last line printed is "N passed, M failed"; the exit
status is non-zero on any failure.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

if len(sys.argv) != 2:
    print("usage: test_stream_cli.py /path/to/tensio", file=sys.stderr)
    sys.exit(2)

TENSIO = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PEER = os.path.join(HERE, "tensorcom_peer.py")
VECTOR_DIRS = [
    os.environ.get("TIO_TEST_VECTORS") or os.path.join(REPO, "tests", "vectors"),
    os.environ.get("TIO_SHARED_VECTORS") or os.path.join(REPO, "..", "shared", "vectors"),
]
HOST = "127.0.0.1"
PROC_TIMEOUT = 120.0  # hard limit for any one process: far above what one needs

SANITIZER_REPORT = re.compile(r"ERROR: (Address|Leak|Memory|Thread)Sanitizer|runtime error: ")

PASSED = 0
FAILED = 0
PEER_PYTHON = None
PEER_PROBLEM = None


# ------------------------------------------------------------------ harness

def case(name, fn, *args):
    global PASSED, FAILED
    t0 = time.monotonic()
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - every failure is reported the same way
        FAILED += 1
        msg = str(e) if isinstance(e, AssertionError) else traceback.format_exc()
        print(f"FAIL: {name}: {msg}", flush=True)
    else:
        PASSED += 1
        print(f"ok: {name} ({time.monotonic() - t0:.1f} s)", flush=True)


class Proc:
    """A child process whose stdout and stderr are collected by threads, so
    that the 'bound' line can be read while it runs; killed after `timeout`."""

    def __init__(self, argv, timeout=PROC_TIMEOUT):
        self.argv = argv
        self.deadline = time.monotonic() + timeout
        self.p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        self._out, self._err = bytearray(), bytearray()
        self._cond = threading.Condition()
        self._threads = [threading.Thread(target=self._pump, args=(self.p.stdout, self._out)),
                         threading.Thread(target=self._pump, args=(self.p.stderr, self._err))]
        for t in self._threads:
            t.daemon = True
            t.start()
        self.rc = None
        self.killed = False

    def _pump(self, f, buf):
        while True:
            b = f.read1(65536) if hasattr(f, "read1") else f.read(65536)
            if not b:
                break
            with self._cond:
                buf.extend(b)
                self._cond.notify_all()

    @property
    def err(self):
        with self._cond:
            return self._err.decode("utf-8", "replace")

    @property
    def out(self):
        with self._cond:
            return self._out.decode("utf-8", "replace")

    def wait_bound(self, timeout=60.0):
        """The endpoint of the 'bound ENDPOINT' line on stderr."""
        end = min(time.monotonic() + timeout, self.deadline)
        rx = re.compile(r": bound (\S+)\n")
        with self._cond:
            while True:
                m = rx.search(self._err.decode("utf-8", "replace"))
                if m:
                    return m.group(1)
                left = end - time.monotonic()
                if left <= 0 or self.p.poll() is not None:
                    break
                self._cond.wait(min(left, 0.05))
        self.kill()
        raise AssertionError(f"no 'bound' line from {self.argv}: {self!r}")

    def finish(self):
        """Waits for the exit (killing the process at its deadline)."""
        if self.rc is None:
            try:
                self.rc = self.p.wait(timeout=max(0.0, self.deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.kill()
                self.killed = True
            for t in self._threads:
                t.join(5)
            self.p.stdout.close()
            self.p.stderr.close()
        assert not self.killed, f"{self.argv[:3]}… ran past its time limit: {self!r}"
        # under ASan/UBSan a report may come with an exit status a case expects
        assert not SANITIZER_REPORT.search(self.err), f"sanitizer report: {self.err[-3000:]}"
        return self

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
        self.rc = self.p.wait()

    def __repr__(self):
        return f"rc={self.rc} stdout={self.out[-1500:]!r} stderr={self.err[-1500:]!r}"


def tensio(*args, timeout=PROC_TIMEOUT):
    return Proc([TENSIO, *args], timeout)


def peer(*args, timeout=PROC_TIMEOUT):
    assert PEER_PYTHON, PEER_PROBLEM
    return Proc([PEER_PYTHON, PEER, *args], timeout)


def run(*args):
    return tensio(*args).finish()


def port_of(endpoint):
    m = re.fullmatch(r"tcp://[^:]+:(\d+)", endpoint)
    assert m, f"not a tcp endpoint with a port: {endpoint}"
    return int(m.group(1))


def json_lines(text):
    out = []
    for line in text.splitlines():
        assert line.startswith("{") and line.endswith("}"), f"not a JSON line: {line!r}"
        out.append(json.loads(line))
    return out


def expect_rc(p, rc):
    assert p.rc == rc, f"expected exit {rc}: {p.argv}: {p!r}"


# ------------------------------------------------------------------ vectors

def vec(rel):
    for d in VECTOR_DIRS:
        p = os.path.join(d, rel)
        if os.path.exists(p):
            return p
    raise AssertionError(f"test vector {rel} not found in {VECTOR_DIRS}")


LS_CACHE = {}


def ls_hashes(path):
    """[(name, dtype, shape, sha256)] of a file, by `tensio ls --json --hash`."""
    if path in LS_CACHE:
        return LS_CACHE[path]
    p = run("ls", "--json", "--hash", path)
    expect_rc(p, 0)
    j = json.loads(p.out)
    r = [(t["name"], t["dtype"], t["shape"], t["sha256"]) for t in j["tensors"]]
    LS_CACHE[path] = r
    return r


def dump_values(path, index):
    p = run("dump", "--json", "--limit", "0", path, str(index))
    expect_rc(p, 0)
    return json.loads(p.out)["tensors"][0]["values"]


def no_names(ts):
    return [t[1:] for t in ts]


# Sent in the socket x framing matrix: ZIO, tenbin and BTF files whose dtypes
# and layouts both protocols carry (the names and metadata they cannot carry
# are dropped with --drop-names / --drop-metadata, so only hashes are compared).
MATRIX_FILES = ["zio/tens_f32_3d.zmsg", "zio/tens_nopart_default.zmsg",
                "tenbin/multi_infos.ten", "tenbin/rank3_float32.ten",
                "btf/dense_int32.btf", "btf/dense_rank2_float32.btf"]
# What the tensorcom peer can decode (its dtype codes).
PEER_FILES = ["tenbin/multi_infos.ten", "tenbin/dtype_uint16.ten", "tenbin/dtype_int8.ten",
              "btf/dense_float64.btf", "zio/tens_i16_2d.zmsg"]


# ------------------------------------------------------------- the matrix

# (name, receiver's options, sender's options, which side binds)
SOCKET_PAIRS = [
    ("push->pull", ["--socket", "pull"], ["--socket", "push"], "recv"),
    ("pub->sub", ["--socket", "sub"], ["--socket", "pub", "--subscribers", "1"], "send"),
    ("dealer->router", ["--socket", "router"], ["--socket", "dealer", "--identity", "feeder-1"],
     "recv"),
    ("pair<->pair", ["--socket", "pair"], ["--socket", "pair"], "send"),
]
# (name, proto, single, output extension)
FRAMINGS = [("zio", "zio", False, "zmsg"), ("zio --single", "zio", True, "zmsg"),
            ("tensorcom", "tensorcom", False, "ten"),
            ("tensorcom --single", "tensorcom", True, "ten")]


def start_pair(recv_args, send_args, binder, files):
    """Starts a receiver and a sender on a fresh port; returns (recv, send)."""
    any_ep = f"tcp://{HOST}:*"
    if binder == "recv":
        r = tensio("recv", "--bind", any_ep, *recv_args)
        ep = r.wait_bound()
        port_of(ep)
        s = tensio("send", "--connect", ep, *send_args, *files)
    else:
        s = tensio("send", "--bind", any_ep, *send_args, *files)
        ep = s.wait_bound()
        port_of(ep)
        r = tensio("recv", "--connect", ep, *recv_args)
    return r, s


def t_matrix(pair, framing, tmp):
    pname, rargs, sargs, binder = pair
    fname, proto, single, ext = framing
    files = [vec(f) for f in MATRIX_FILES]
    outdir = tempfile.mkdtemp(prefix="m", dir=tmp)
    pattern = os.path.join(outdir, f"msg%03d.{ext}")
    sargs = sargs + ["--proto", proto, "--json", "--timeout", "10", "--drop-names",
                     "--drop-metadata"] + (["--single"] if single else [])
    rargs = rargs + ["--count", str(len(files)), "--timeout", "10", "--json", "--hash",
                     "-o", pattern]
    r, s = start_pair(rargs, sargs, binder, files)
    s.finish()
    r.finish()
    expect_rc(s, 0)
    expect_rc(r, 0)
    assert f"received {len(files)} messages (0 malformed)" in r.err, r

    sent = json_lines(s.out)
    assert [m["index"] for m in sent] == list(range(len(files))), s
    assert [m["file"] for m in sent] == files, s
    for m in sent:
        assert m["proto"] == proto and m["single"] is single and m["bytes"] > 0, m

    got = json_lines(r.out)
    assert [m["index"] for m in got] == list(range(len(files))), r
    for k, (m, f) in enumerate(zip(got, files)):
        assert m["format"] == ("zio" if proto == "zio" else "tenbin"), m
        # a single tenbin frame is reported as what it holds, a .ten file
        assert m["proto"] in ((proto,) if proto == "zio" or not single else
                              ("tensorcom", "tenbin")), (m, proto)
        if single:
            assert m["frames"] == 1, m
        else:
            assert m["frames"] >= 2, m
        assert m["bytes"] == sent[k]["bytes"], (m, sent[k])
        assert m["file"] == pattern % k, m
        want = no_names(ls_hashes(f))
        # what recv printed …
        assert [(t["dtype"], t["shape"], t["sha256"]) for t in m["tensors"]] == want, (m, f)
        # … and what it wrote, reopened
        assert no_names(ls_hashes(m["file"])) == want, (m["file"], f)
        if pname == "dealer->router":
            # the ROUTER's peer is the DEALER's identity, in hex
            assert m["props"].get("peer") == b"feeder-1".hex(), m


# ------------------------------------------------------ tensorcom peer tests

def t_peer_to_recv(single, tmp):
    outdir = tempfile.mkdtemp(prefix="p2r", dir=tmp)
    pattern = os.path.join(outdir, "batch%d.ten")
    r = tensio("recv", f"zpull://{HOST}:*", "--count", "3", "--timeout", "10", "--json",
               "--hash", "-o", pattern)
    ep = r.wait_bound()
    p = peer("send", f"zpush://{HOST}:{port_of(ep)}", "--count", "3",
             *(["--single"] if single else []))
    p.finish()
    r.finish()
    expect_rc(p, 0)
    expect_rc(r, 0)
    sent = json_lines(p.out)
    got = json_lines(r.out)
    assert len(sent) == 3 and len(got) == 3, (p, r)
    for b, m in zip(sent, got):
        assert m["format"] == "tenbin", m
        assert m["proto"] in (("tensorcom", "tenbin") if single else ("tensorcom",)), m
        assert m["frames"] == (1 if single else 2 * len(b["arrays"])), m
        want = [(a["name"], a["dtype"], a["shape"], a["sha256"]) for a in b["arrays"]]
        assert [(t["name"], t["dtype"], t["shape"], t["sha256"]) for t in m["tensors"]] == want
        assert ls_hashes(m["file"]) == want, m["file"]


def t_send_to_peer(single):
    files = [vec(f) for f in PEER_FILES]
    p = peer("recv", f"zpull://{HOST}:*", "--count", str(len(files)), "--timeout", "10")
    ep = p.wait_bound()
    # a zpush:// URL: PUSH, connect, tensorcom framing, all from the scheme
    s = tensio("send", f"zpush://{HOST}:{port_of(ep)}", "--timeout", "10", "--drop-metadata",
               *(["--single"] if single else []), *files)
    s.finish()
    p.finish()
    expect_rc(s, 0)
    expect_rc(p, 0)
    assert "bound" not in s.err, s  # it connected
    got = json_lines(p.out)
    assert len(got) == len(files), p
    for b, f in zip(got, files):
        assert b["frames"] == (1 if single else 2 * len(b["arrays"])), b
        have = [(a["dtype"], a["shape"], a["sha256"]) for a in b["arrays"]]
        assert have == no_names(ls_hashes(f)), (f, b)
        if f.endswith(".ten"):
            assert [a["name"] for a in b["arrays"]] == [t[0] for t in ls_hashes(f)], (f, b)


def big_npy(path, mib):
    """A float32 .npy of `mib` MiB of zeros, written by hand (standard library)."""
    n = mib << 18
    head = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % n
    head += " " * (63 - (10 + len(head)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(head).to_bytes(2, "little") + head.encode())
        f.truncate(f.tell() + n * 4)
    return path


def t_send_waits_for_late_reader(tmp):
    """tensio send sends 40 MiB and exits only once they are written, while
    the receiver reads nothing for its first 2 s: every message arrives."""
    f = big_npy(os.path.join(tmp, "late.npy"), 4)
    p = peer("recv", f"zpull://{HOST}:*", "--count", "10", "--timeout", "15", "--hold", "2",
             "--hwm", "2")
    ep = p.wait_bound()
    s = tensio("send", f"zpush://{HOST}:{port_of(ep)}", "--count", "10", f)
    s.finish()
    p.finish()
    expect_rc(s, 0)
    expect_rc(p, 0)
    assert len(json_lines(p.out)) == 10, p


def t_send_timeout_drop_reported(tmp):
    """With --timeout, what is still queued when it runs out at exit is
    dropped, counted, and the exit status is 1."""
    f = big_npy(os.path.join(tmp, "drop.npy"), 4)
    p = peer("recv", f"zpull://{HOST}:*", "--count", "1", "--timeout", "15", "--hold", "15",
             "--hwm", "2")
    ep = p.wait_bound()
    s = tensio("send", f"zpush://{HOST}:{port_of(ep)}", "--timeout", "0.5", "--count", "20", f)
    s.finish()
    p.kill()
    expect_rc(s, 1)
    m = re.search(r"close dropped (\d+) of the 20 messages sent", s.err)
    assert m and 1 <= int(m.group(1)) <= 20, s


def t_malformed():
    r = tensio("recv", f"zpull://{HOST}:*", "--count", "4", "--timeout", "10", "--json",
               "--hash")
    ep = r.wait_bound()
    p = peer("raw", f"zpush://{HOST}:{port_of(ep)}")
    p.finish()
    r.finish()
    expect_rc(p, 0)
    plan = json.loads(p.out)
    assert plan["valid"] == 4 and plan["malformed"] == 8, plan
    expect_rc(r, 1)
    got = json_lines(r.out)
    valid = [m for m in plan["messages"] if m["kind"] == "valid"]
    assert len(got) == len(valid), r
    for k, (m, v) in enumerate(zip(got, valid)):
        assert m["index"] == k, m
        want = [(a["name"], a["dtype"], a["shape"], a["sha256"]) for a in v["arrays"]]
        have = [(t["name"], t["dtype"], t["shape"], t["sha256"]) for t in m["tensors"]]
        assert have == want, (k, v["what"], m)
    assert got[2]["proto"] == "zio", got[2]  # the hand-made ZIO TENS message
    # one "message N: error" line per malformed one, N its position in the stream
    bad = [i for i, m in enumerate(plan["messages"]) if m["kind"] == "malformed"]
    lines = re.findall(r"^tensio recv: message (\d+): (.+)$", r.err, re.M)
    assert [int(n) for n, _ in lines] == bad, r
    assert all(msg.strip() for _, msg in lines), r
    assert "received 12 messages (8 malformed)" in r.err, r


# ------------------------------------------------------------ other cases

def t_timeout_count_not_reached():
    t0 = time.monotonic()
    r = tensio("recv", "--bind", f"tcp://{HOST}:*", "--count", "2", "--timeout", "1.5")
    r.wait_bound()
    r.finish()
    dt = time.monotonic() - t0
    expect_rc(r, 1)
    assert 1.4 <= dt <= 60, f"took {dt:.2f} s for --timeout 1.5 (60 s: far above what it needs)"
    assert "timed out" in r.err and "received 0 messages (0 malformed)" in r.err, r
    assert r.out == "", r


def t_max_frame_bytes():
    # a frame over the limit: libzmq drops the sender's connection, nothing is
    # received; a smaller one passes
    big = vec("tenbin/multi_infos.ten")
    small = vec("tenbin/rank0_float32.ten")
    assert os.path.getsize(big) > 200 >= os.path.getsize(small)
    r = tensio("recv", "--bind", f"tcp://{HOST}:*", "--count", "1", "--timeout", "1.5",
               "--proto", "tensorcom", "--max-frame-bytes", "200")
    ep = r.wait_bound()
    s = tensio("send", ep, big, "--proto", "tensorcom", "--single", "--timeout", "10")
    s.finish()
    r.finish()
    expect_rc(r, 1)
    assert "received 0 messages" in r.err, r
    r = tensio("recv", "--bind", f"tcp://{HOST}:*", "--count", "1", "--timeout", "10",
               "--max-frame-bytes", "200")
    ep = r.wait_bound()
    s = tensio("send", ep, small, "--proto", "tensorcom", "--single", "--timeout", "10")
    s.finish()
    r.finish()
    expect_rc(r, 0)


def t_send_to_nobody():
    # A connecting PUSH queues only on live connections: nobody listening
    # means the send times out (exit 1), never a false "sent".
    import socket
    with socket.socket() as so:
        so.bind((HOST, 0))
        port = so.getsockname()[1]
    t0 = time.monotonic()
    p = run("send", "--timeout", "0.5", f"tcp://{HOST}:{port}", vec("zio/tens_f32_3d.zmsg"))
    dt = time.monotonic() - t0
    expect_rc(p, 1)
    assert "timed out" in p.err and "sent 0 messages" in p.err, p
    assert dt <= 60, f"took {dt:.2f} s for --timeout 0.5 (60 s: far above what it needs)"


def t_timeout_partial():
    f = vec("tenbin/rank1_float32.ten")
    r = tensio("recv", "--bind", f"tcp://{HOST}:*", "--count", "3", "--timeout", "1")
    ep = r.wait_bound()
    s = tensio("send", ep, f, f, "--timeout", "10")
    s.finish()
    r.finish()
    expect_rc(s, 0)
    expect_rc(r, 1)
    assert "received 2 messages (0 malformed)" in r.err, r
    assert "2 of 3" in r.err, r
    assert len(r.out.splitlines()) == 2 and r.out.startswith("received 0: zio"), r


def t_timeout_without_count():
    # without --count, the timeout is the normal end: exit 0
    f = vec("btf/dense_int16.btf")
    r = tensio("recv", "--bind", f"tcp://{HOST}:*", "--timeout", "0.8", "--json")
    ep = r.wait_bound()
    s = tensio("send", ep, f, "--count", "3", "--timeout", "10")
    s.finish()
    r.finish()
    expect_rc(s, 0)
    expect_rc(r, 0)
    assert [m["index"] for m in json_lines(r.out)] == [0, 1, 2], r
    assert "received 3 messages (0 malformed)" in r.err, r


def t_send_count_and_text():
    files = [vec("zio/tens_i16_2d.zmsg"), vec("tenbin/rank0_float32.ten")]
    r = tensio("recv", "--bind", f"tcp://{HOST}:*", "--count", "6", "--timeout", "10", "--json",
               "--hash")
    ep = r.wait_bound()
    s = tensio("send", ep, *files, "--count", "3", "--timeout", "10")
    s.finish()
    r.finish()
    expect_rc(s, 0)
    expect_rc(r, 0)
    lines = s.out.splitlines()
    assert len(lines) == 6, s
    for k, line in enumerate(lines):
        assert line.startswith(f"sent {k}: {files[k % 2]} ("), line
        assert " as zio, " in line and line.endswith(" bytes"), line
    assert "tensio send: sent 6 messages" in s.err, s
    got = json_lines(r.out)
    for k, m in enumerate(got):
        want = no_names(ls_hashes(files[k % 2]))
        assert [(t["dtype"], t["shape"], t["sha256"]) for t in m["tensors"]] == want, m


def t_json_keys():
    f = vec("zio/tens_f32_3d.zmsg")
    r = tensio("recv", "--bind", f"tcp://{HOST}:*", "--count", "1", "--timeout", "10", "--json")
    ep = r.wait_bound()
    s = tensio("send", ep, f, "--json", "--seqno-start", "5", "--timeout", "10")
    s.finish()
    r.finish()
    expect_rc(s, 0)
    expect_rc(r, 0)
    (m,) = json_lines(s.out)
    assert list(m) == ["index", "file", "format", "proto", "single", "tensors", "bytes",
                       "seqno"], m
    assert m["format"] == "zio" and m["tensors"] == 1 and m["seqno"] == 5, m
    (g,) = json_lines(r.out)
    assert list(g) == ["index", "proto", "format", "frames", "bytes", "props", "tensors"], g
    assert g["frames"] == 3 and g["bytes"] == m["bytes"], (g, m)
    assert g["props"]["proto"] == "zio" and g["props"]["frames"] == "3", g
    (t,) = g["tensors"]
    assert list(t) == ["name", "dtype", "shape", "layout", "nbytes"], t  # no sha256 without --hash
    assert t["dtype"] == "float32" and t["shape"] == [2, 3, 4] and t["nbytes"] == 96, t


def t_seqno(tmp):
    f = vec("tenbin/rank2_float32.ten")
    r = tensio("recv", "--bind", f"tcp://{HOST}:*", "--count", "2", "--timeout", "10", "--json")
    ep = r.wait_bound()
    s = tensio("send", ep, f, f, "--format-option", "seqno=7", "--format-option", "level=3",
               "--timeout", "10")
    s.finish()
    r.finish()
    expect_rc(s, 0)
    expect_rc(r, 0)
    got = json_lines(r.out)
    assert [m["props"].get("seqno") for m in got] == ["7", "7"], got
    # --seqno-start numbers the messages
    r = tensio("recv", "--bind", f"tcp://{HOST}:*", "--count", "3", "--timeout", "10", "--json")
    ep = r.wait_bound()
    s = tensio("send", ep, f, "--count", "3", "--seqno-start", "100", "--timeout", "10")
    s.finish()
    r.finish()
    expect_rc(s, 0)
    expect_rc(r, 0)
    assert [m["props"].get("seqno") for m in json_lines(r.out)] == ["100", "101", "102"], r


def t_output_formats(tmp):
    """Received messages written as .btf (names dropped) and as .zmsg."""
    f = vec("tenbin/multi_infos.ten")
    want = ls_hashes(f)
    for ext, extra in (("btf", ["--drop-names", "--widen"]), ("zmsg", []), ("ten", [])):
        outdir = tempfile.mkdtemp(prefix="of", dir=tmp)
        pattern = os.path.join(outdir, "x_%04d." + ext)
        r = tensio("recv", "--bind", f"tcp://{HOST}:*", "--count", "2", "--timeout", "10",
                   "-o", pattern, *extra)
        ep = r.wait_bound()
        s = tensio("send", ep, f, "--count", "2", "--proto", "tensorcom", "--timeout", "10")
        s.finish()
        r.finish()
        expect_rc(s, 0)
        expect_rc(r, 0)
        names = sorted(os.listdir(outdir))
        assert names == [f"x_0000.{ext}", f"x_0001.{ext}"], names
        for n in names:
            path = os.path.join(outdir, n)
            got = ls_hashes(path)
            if ext == "btf":
                # no names in btf; its float16 tensor was widened to float32:
                # same shape, same values
                assert all(g[0] is None for g in got), got
                assert no_names(got[:3]) == no_names(want[:3]), (got, want)
                assert want[3][1] == "float16" and got[3][1:3] == ("float32", want[3][2]), got
                assert dump_values(path, 3) == dump_values(f, 3), path
            else:
                assert got == want, (ext, got, want)  # zio and tenbin keep the names
        assert f"-> {os.path.join(outdir, 'x_0001.' + ext)}" in r.out, r


def t_output_names(tmp):
    """-o without %d is fine with --count 1; %% is a literal %."""
    f = vec("zio/tens_f32_3d.zmsg")
    for pattern, count, names in (("one.zmsg", "1", ["one.zmsg"]),
                                  ("a%%b_%d.zmsg", "2", ["a%b_0.zmsg", "a%b_1.zmsg"]),
                                  ("w%5d.zmsg", "1", ["w    0.zmsg"])):
        outdir = tempfile.mkdtemp(prefix="on", dir=tmp)
        r = tensio("recv", "--bind", f"tcp://{HOST}:*", "--count", count, "--timeout", "10",
                   "-o", os.path.join(outdir, pattern))
        ep = r.wait_bound()
        s = tensio("send", ep, f, "--count", count, "--timeout", "10")
        s.finish()
        r.finish()
        expect_rc(s, 0)
        expect_rc(r, 0)
        assert sorted(os.listdir(outdir)) == names, (pattern, os.listdir(outdir))
        for n in names:
            # zio to zio: names, metadata and hashes all kept
            assert ls_hashes(os.path.join(outdir, n)) == ls_hashes(f), n


def t_write_failure(tmp):
    f = vec("tenbin/rank1_float32.ten")
    pattern = os.path.join(tmp, "no-such-dir", "m%d.ten")
    r = tensio("recv", "--bind", f"tcp://{HOST}:*", "--count", "2", "--timeout", "10",
               "-o", pattern)
    ep = r.wait_bound()
    s = tensio("send", ep, f, "--timeout", "5")
    s.finish()
    r.finish()
    expect_rc(s, 0)
    expect_rc(r, 1)
    assert f"tensio recv: received 0: {os.path.dirname(pattern)}" in r.err, r
    assert "received 1 message (0 malformed)" in r.err and r.out == "", r


def dead_pid():
    """A pid that is surely not running: a child, reaped."""
    c = subprocess.Popen(["true"])
    c.wait()
    return c.pid


def plant_temps(d, base):
    """Temporary-file names a killed save of d/base could have left: one of a
    dead process (stale) and look-alikes that must stay: a live process's (this
    one's), a symlink to a file outside, and a name off the pattern."""
    hexs = "0123456789abcdef"
    stale = f".{base}.tio-{dead_pid()}-{hexs}.tmp"
    other_stale = f".other.zmsg.tio-{dead_pid()}-{hexs}.tmp"
    keep = [f".{base}.tio-{os.getpid()}-{hexs}.tmp", f".{base}.tio-{dead_pid()}-{hexs}.tmp.x"]
    for n in [stale, other_stale] + keep:
        with open(os.path.join(d, n), "wb") as f:
            f.write(b"x")
    victim = os.path.join(os.path.dirname(d), os.path.basename(d) + "-victim")
    with open(victim, "wb") as f:
        f.write(b"v")
    link = f".{base}.tio-{dead_pid()}-aaaaaaaaaaaaaaaa.tmp"
    os.symlink(victim, os.path.join(d, link))
    return [stale, other_stale], keep + [link], victim


def t_output_sync_modes(tmp):
    """-o in the three durability modes (default: no fsync per file, synced at
    the end; --sync-each; --no-sync), into one directory and spread over
    several by a %d in the directory part: every file complete and correct, no
    temporary file left, and the stale temporary files of dead processes in
    each output directory removed (once per directory), never a live one's or
    through a symlink."""
    f = vec("zio/tens_f32_3d.zmsg")
    want = ls_hashes(f)
    n = 12
    for mode in ([], ["--sync-each"], ["--no-sync"]):
        for spread in (False, True):
            top = tempfile.mkdtemp(prefix="sync", dir=tmp)
            dirs = [os.path.join(top, str(i)) for i in range(n)] if spread else [top]
            for d in dirs:
                os.makedirs(d, exist_ok=True)
            base = "m.zmsg" if spread else "m-%03d.zmsg"
            pattern = os.path.join(top, "%d" if spread else "", base)
            planted = [plant_temps(d, base.replace("%03d", "007")) for d in dirs[:2]]
            r = tensio("recv", "--bind", f"tcp://{HOST}:*", "--count", str(n), "--timeout",
                       "10", "-o", pattern, *mode)
            ep = r.wait_bound()
            s = tensio("send", ep, f, "--count", str(n), "--timeout", "10")
            s.finish()
            r.finish()
            expect_rc(s, 0)
            expect_rc(r, 0)
            names = [pattern.replace("%d", str(i)).replace("%03d", f"{i:03d}")
                     for i in range(n)]
            for name in names:
                assert ls_hashes(name) == want, (mode, name)
                LS_CACHE.pop(name, None)
            for d, (gone, keep, victim) in zip(dirs, planted):
                for g in gone:
                    assert not os.path.lexists(os.path.join(d, g)), (mode, d, g)
                for k in keep:
                    assert os.path.lexists(os.path.join(d, k)), (mode, d, k)
                assert os.path.exists(victim), (mode, victim)
                for k in keep:
                    os.unlink(os.path.join(d, k))
            for d in dirs:
                left = sorted(x for x in os.listdir(d) if not x.endswith(".zmsg"))
                assert not left, (mode, d, left)
            assert len(r.out.splitlines()) == n, r


def t_output_sync_on_exit(tmp):
    """Without --count the receiver ends on --timeout or on SIGINT/SIGTERM; the
    files written before are complete either way, in every durability mode."""
    f = vec("tenbin/rank1_float32.ten")
    want = ls_hashes(f)
    for mode in ([], ["--sync-each"], ["--no-sync"]):
        for end in ("timeout", signal.SIGINT, signal.SIGTERM):
            outdir = tempfile.mkdtemp(prefix="exit", dir=tmp)
            pattern = os.path.join(outdir, "x%d.ten")
            extra = ["--timeout", "0.8"] if end == "timeout" else []
            r = tensio("recv", "--bind", f"tcp://{HOST}:*", "-o", pattern, *extra, *mode)
            ep = r.wait_bound()
            s = tensio("send", ep, f, "--count", "5", "--timeout", "10")
            s.finish()
            expect_rc(s, 0)
            if end != "timeout":
                deadline = time.monotonic() + 10
                while r.out.count("\n") < 5 and time.monotonic() < deadline:
                    time.sleep(0.02)
                r.p.send_signal(end)
            r.finish()
            expect_rc(r, 0)
            assert "received 5 messages (0 malformed)" in r.err, (mode, end, r)
            assert (end != "timeout") == ("interrupted" in r.err), (mode, end, r)
            assert sorted(os.listdir(outdir)) == [f"x{i}.ten" for i in range(5)], outdir
            for i in range(5):
                path = os.path.join(outdir, f"x{i}.ten")
                assert ls_hashes(path) == want, path
                LS_CACHE.pop(path, None)


def t_lossy_send_refused():
    # a name tenbin cannot hold is refused before anything is sent
    f = vec("btf/coo_btf_info_test.btf")  # COO: neither protocol carries it
    s = tensio("send", f"tcp://{HOST}:9", f, "--timeout", "1")
    s.finish()
    expect_rc(s, 1)
    assert "cannot send" in s.err and "bound" not in s.err, s


def t_fanout(tmp):
    """PUSH binds, two PULLs connect: every message reaches exactly one."""
    f = vec("tenbin/rank1_float32.ten")
    s = tensio("send", "--bind", f"tcp://{HOST}:*", f, "--count", "20", "--timeout", "10",
               "--hwm", "2")
    ep = s.wait_bound()
    rs = [tensio("recv", ep, "--timeout", "1.5", "--json") for _ in range(2)]
    s.finish()
    for r in rs:
        r.finish()
        expect_rc(r, 0)
    expect_rc(s, 0)
    counts = [len(json_lines(r.out)) for r in rs]
    assert sum(counts) == 20, (counts, rs)


def t_router_to_dealer():
    f = vec("zio/tens_u8_1d_255.zmsg")
    r = tensio("recv", "--socket", "dealer", "--identity", "worker-7", "--bind",
               f"tcp://{HOST}:*", "--count", "2", "--timeout", "10", "--json", "--hash")
    ep = r.wait_bound()
    s = tensio("send", "--socket", "router", "--peer", "worker-7", ep, f, f, "--timeout", "10")
    s.finish()
    r.finish()
    expect_rc(s, 0)
    expect_rc(r, 0)
    got = json_lines(r.out)
    want = no_names(ls_hashes(f))
    for m in got:
        assert [(t["dtype"], t["shape"], t["sha256"]) for t in m["tensors"]] == want, m


def t_topic():
    # PUB sends ZIO messages (which start "ZIO"): a SUB for "nomatch" gets none
    f = vec("tenbin/rank1_float32.ten")
    s = tensio("send", "--socket", "pub", "--bind", f"tcp://{HOST}:*", "--subscribers", "1",
               "--timeout", "10", f, "--count", "3")
    ep = s.wait_bound()
    r = tensio("recv", "--socket", "sub", "--topic", "nomatch", ep, "--timeout", "1")
    s.finish()
    r.finish()
    expect_rc(s, 0)
    expect_rc(r, 0)
    assert r.out == "" and "received 0 messages" in r.err, r
    # and the URL #fragment of a zsub:// URL is the topic: "ZIO" matches
    s = tensio("send", "--socket", "pub", "--bind", f"tcp://{HOST}:*", "--subscribers", "1",
               "--timeout", "10", f, "--count", "3")
    ep = s.wait_bound()
    r = tensio("recv", f"zsub://{HOST}:{port_of(ep)}#ZIO", "--proto", "zio", "--count", "3",
               "--timeout", "10")
    s.finish()
    r.finish()
    expect_rc(s, 0)
    expect_rc(r, 0)
    assert "received 3 messages (0 malformed)" in r.err, r


def t_help():
    for cmd in ("send", "recv"):
        for args in ((cmd, "--help"), ("help", cmd)):
            p = run(*args)
            expect_rc(p, 0)
            assert p.out.startswith(f"Usage: tensio {cmd}"), p
            assert p.err == "", p
    p = run("--help")
    assert re.search(r"^\s+send\s", p.out, re.M) and re.search(r"^\s+recv\s", p.out, re.M), p


def t_usage_errors():
    f = vec("tenbin/rank1_float32.ten")
    ep = f"tcp://{HOST}:9"
    cases = [
        ("send",),
        ("send", ep),
        ("send", "--socket", "pull", ep, f),
        ("send", "--socket", "bogus", ep, f),
        ("send", "--bind", "--connect", ep, f),
        ("send", "--proto", "xml", ep, f),
        ("send", "--count", "0", ep, f),
        ("send", "--count", "x", ep, f),
        ("send", "--epochs", "0", ep, f),
        ("send", "--epochs", "2", "--count", "2", ep, f),
        ("send", "--keys", ep, f),
        ("send", "--batch", "2", ep, f),
        ("send", "--timeout", "-1", ep, f),
        ("send", "--timeout", "soon", ep, f),
        ("send", "--timeout", "nan", ep, f),
        ("send", "--subscribers", "1", ep, f),
        ("send", "--peer", "x", ep, f),
        ("send", "--socket", "router", ep, f),
        ("send", "--identity", "x", ep, f),
        ("send", "--proto", "tensorcom", "--seqno-start", "1", ep, f),
        ("send", "--seqno-start", "1", "--format-option", "seqno=2", ep, f),
        ("send", "--format-option", "noequals", ep, f),
        ("send", "--format-option", "bogus=1", ep, f),
        ("send", "--from", "nosuch", ep, f),
        ("send", f"zpull://{HOST}:9", f),
        ("send", "--socket", "pub", f"zpush://{HOST}:9", f),
        ("send", "foo://bar", f),
        ("send", "--frobnicate", ep, f),
        ("recv",),
        ("recv", ep, ep),
        ("recv", "--socket", "push", ep),
        ("recv", "--proto", "xml", ep),
        ("recv", "--count", "0", ep),
        ("recv", "--max-frame-bytes", "0", ep),
        ("recv", "--max-frame-bytes", "-5", ep),
        ("recv", "--timeout", "0", ep),
        ("recv", "--topic", "x", ep),
        ("recv", "--identity", "x", ep),
        ("recv", "-o", "out%d.nosuchext", ep),
        ("recv", "-o", "out%s.ten", ep),
        ("recv", "-o", "out.ten", ep),
        ("recv", "--format", "nosuch", "-o", "x%d.ten", ep),
        ("recv", "--format", "tenbin", ep),
        ("recv", "--widen", ep),
        ("recv", "--no-sync", ep),
        ("recv", "--sync-each", ep),
        ("recv", "--sync-each", "--no-sync", "-o", "x%d.ten", ep),
        ("recv", f"zpush://{HOST}:9"),
        ("recv", "--socket", "pull", f"zsub://{HOST}:9"),
        ("recv", "foo://bar"),
    ]
    for args in cases:
        p = tensio(*args, timeout=60).finish()
        assert p.rc == 2, f"{args}: expected exit 2: {p!r}"
        assert p.out == "", f"{args}: usage errors print nothing on stdout: {p!r}"
        assert p.err.startswith("tensio: "), f"{args}: {p!r}"


# ---------------------------------------------------------------------- main

def find_peer_python():
    """An interpreter that imports zmq and numpy: /usr/bin/python3 first."""
    global PEER_PYTHON, PEER_PROBLEM
    tried = []
    for exe in ("/usr/bin/python3", sys.executable, shutil.which("python3")):
        if not exe or exe in tried:
            continue
        tried.append(exe)
        try:
            cp = subprocess.run([exe, "-c", "import zmq, numpy"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if cp.returncode == 0:
            PEER_PYTHON = exe
            return
    PEER_PROBLEM = ("no Python interpreter with pyzmq and numpy for the tensorcom peer "
                    f"(tried {', '.join(tried)}); install Debian's python3-zmq and "
                    "python3-numpy (scripts/install-deps.sh does)")


def t_peer_python():
    assert PEER_PYTHON, PEER_PROBLEM


def main():
    if not os.access(TENSIO, os.X_OK):
        print(f"FAIL: {TENSIO} is not an executable")
        print("0 passed, 1 failed")
        return 1
    find_peer_python()
    t_start = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="tio-stream-")
    try:
        case("help", t_help)
        case("usage errors exit 2", t_usage_errors)
        case("python with pyzmq and numpy for the peer", t_peer_python)
        for pair in SOCKET_PAIRS:
            for framing in FRAMINGS:
                case(f"{pair[0]} {framing[0]}", t_matrix, pair, framing, tmp)
        case("peer send -> tensio recv (multipart)", t_peer_to_recv, False, tmp)
        case("peer send -> tensio recv (single)", t_peer_to_recv, True, tmp)
        case("tensio send -> peer recv (multipart)", t_send_to_peer, False)
        case("tensio send -> peer recv (single)", t_send_to_peer, True)
        case("send waits at exit for a receiver that reads late", t_send_waits_for_late_reader,
             tmp)
        case("send --timeout: a drop at exit is an error", t_send_timeout_drop_reported, tmp)
        case("malformed messages interleaved", t_malformed)
        case("--timeout before --count", t_timeout_count_not_reached)
        case("--timeout after some messages", t_timeout_partial)
        case("send to nobody times out", t_send_to_nobody)
        case("--max-frame-bytes drops an oversize frame", t_max_frame_bytes)
        case("--timeout without --count", t_timeout_without_count)
        case("send --count and text lines", t_send_count_and_text)
        case("--json keys", t_json_keys)
        case("--format-option seqno / --seqno-start", t_seqno, tmp)
        case("-o in .btf .zmsg .ten", t_output_formats, tmp)
        case("-o file names", t_output_names, tmp)
        case("-o write failure", t_write_failure, tmp)
        case("-o durability modes, stale temps cleaned", t_output_sync_modes, tmp)
        case("-o files complete on every way out", t_output_sync_on_exit, tmp)
        case("lossy send refused", t_lossy_send_refused)
        case("push fan-out to two pulls", t_fanout, tmp)
        case("router -> dealer with --peer", t_router_to_dealer)
        case("sub topics", t_topic)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"total {time.monotonic() - t_start:.1f} s")
    print(f"{PASSED} passed, {FAILED} failed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
