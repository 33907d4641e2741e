"""tensio.Shard against Python's tarfile and WebDataset's grouping rule, on
shards written here with tarfile (members encoded by tensio and NumPy)."""

import gc
import io
import json
import os
import re
import tarfile

import numpy as np
import pytest

import tensio

# WebDataset's base_plus_ext: key = path up to the first dot of the basename
WDS = re.compile(r"^((?:.*/|)[^.]+)[.]([^/]*)$")


def npy_bytes(a):
    f = io.BytesIO()
    np.save(f, a)
    return f.getvalue()


def make_shard(members, fmt=tarfile.PAX_FORMAT):
    f = io.BytesIO()
    with tarfile.open(fileobj=f, mode="w", format=fmt) as t:
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
    return f.getvalue()


def reference_samples(raw):
    """WebDataset's grouping (tarfile_to_samples), done with tarfile."""
    out = []
    with tarfile.open(fileobj=io.BytesIO(raw)) as t:
        for ti in t:
            if not ti.isfile():
                continue
            m = WDS.match(ti.name)
            if not m:
                continue
            key, ext = m.groups()
            data = t.extractfile(ti).read()
            if not out or out[-1]["__key__"] != key:
                out.append({"__key__": key})
            out[-1][ext.lower()] = data
    return out


@pytest.fixture
def shard_members():
    rng = np.random.default_rng(7)
    members = []
    arrays = {}
    for i in range(12):
        key = "train/%06d" % i
        x = rng.standard_normal((3, 4 + i)).astype(np.float32)
        y = np.arange(i + 1, dtype=np.int64)
        arrays[key] = (x, y)
        members.append((key + ".ten", bytes(tensio.dumps([x, y], format="tenbin"))))
        members.append((key + ".cls", b"%d\n" % (i % 3)))
        if i % 2 == 0:
            members.append((key + ".json", json.dumps({"i": i}).encode()))
        if i % 3 == 0:
            members.append((key + ".seg.npy", npy_bytes(x * 2)))
    return members, arrays


def check_against_reference(shard, raw, arrays):
    ref = reference_samples(raw)
    assert len(shard) == len(ref) == len(arrays)
    assert shard.keys() == [r["__key__"] for r in ref]
    for got, want in zip(shard, ref):
        assert sorted(got) == sorted(want.keys() | {"__url__"})
        x, y = arrays[got["__key__"]]
        a, b = got["ten"]
        assert a.dtype == x.dtype and np.array_equal(a, x) and np.array_equal(b, y)
        assert not a.flags.writeable
        assert got["cls"] == want["cls"]
        if "json" in want:
            assert got["json"] == want["json"]
        if "seg.npy" in want:
            assert np.array_equal(got["seg.npy"], x * 2)
    for got, want in zip((shard.sample(i, decode=False) for i in range(len(shard))), ref):
        assert {k: v for k, v in got.items() if k != "__url__"} == want


def test_file_shard_matches_tarfile(tmp_path, shard_members):
    members, arrays = shard_members
    raw = make_shard(members)
    p = tmp_path / "s.tar"
    p.write_bytes(raw)
    with tensio.Shard(p) as s:
        assert s.url == str(p)
        check_against_reference(s, raw, arrays)
        names = [m.name for m in s.members]
        assert names == [n for n, _ in members]
        assert all(m.offset % 512 == 0 for m in s.members)
        assert [m.format for m in s.members[:3]] == ["tenbin", None, None]
        assert s.data("train/000000.cls") == b"0\n"
        assert s.data(1) == b"0\n"
        c = s.open("train/000003.seg.npy")
        assert np.array_equal(c[0], arrays["train/000003"][0] * 2)


def test_gnu_and_ustar_shards(tmp_path, shard_members):
    members, arrays = shard_members
    for fmt in (tarfile.GNU_FORMAT, tarfile.USTAR_FORMAT):
        raw = make_shard(members, fmt)
        check_against_reference(tensio.Shard(raw), raw, arrays)


def test_views_outlive_the_shard(tmp_path, shard_members):
    members, arrays = shard_members
    p = tmp_path / "s.tar"
    p.write_bytes(make_shard(members))
    s = tensio.Shard(p)
    x, _ = s[0]["ten"]
    c = s.open(0)
    s.close()
    assert s.closed and "closed" in repr(s)
    with pytest.raises(ValueError):
        s.keys()
    del s
    gc.collect()
    assert np.array_equal(x, arrays["train/000000"][0])
    assert np.array_equal(c[1], arrays["train/000000"][1])


def test_memory_shard_is_zero_copy(shard_members):
    members, arrays = shard_members
    raw = bytearray(make_shard(members))
    s = tensio.Shard(raw)
    x = s[-1]["ten"][0]
    assert np.shares_memory(x, np.frombuffer(raw, np.uint8))
    with pytest.raises(BufferError):  # the shard and the view hold the bytes
        raw.extend(b"x")
    del s
    gc.collect()
    with pytest.raises(BufferError):  # the view alone still does
        raw.extend(b"x")
    assert np.array_equal(x, arrays["train/000011"][0])
    del x
    gc.collect()
    raw.extend(b"x")


def test_duplicates_and_errors(shard_members):
    raw = make_shard([("a.ten", bytes(tensio.dumps([np.zeros(2)], format="tenbin"))),
                      ("a.TEN", b"x"), ("README", b"r"), ("b.ten", b"not tenbin at all")])
    s = tensio.Shard(raw)
    assert [m.duplicate for m in s.members] == [False, True, False, False]
    assert s.members[2].sample is None and s.members[2].key == ""
    assert len(s) == 2
    with pytest.raises(tensio.Error):
        s[1]  # b.ten does not decode
    assert s.sample(1, decode=False)["ten"] == b"not tenbin at all"
    with pytest.raises(tensio.NotFoundError):
        s.data("nope.ten")
    with pytest.raises(IndexError):
        s.data(99)
    with pytest.raises(IndexError):
        s[5]
    with pytest.raises(tensio.Error):
        s.open("README")  # no format from its name


def test_compressed_shards(tmp_path, shard_members):
    import bz2
    import gzip
    import lzma
    members, arrays = shard_members
    raw = make_shard(members)
    for name, data in (("s.tar.gz", gzip.compress(raw)), ("s.tar.bz2", bz2.compress(raw)),
                       ("s.tar.xz", lzma.compress(raw))):
        p = tmp_path / name
        p.write_bytes(data)
        check_against_reference(tensio.Shard(p), raw, arrays)
        check_against_reference(tensio.Shard(data), raw, arrays)
    with pytest.raises(tensio.LimitError):
        tensio.Shard(gzip.compress(raw), limits={"max_dense_bytes": 4096})


def test_hostile_shards(shard_members):
    members, _ = shard_members
    raw = make_shard(members)
    with pytest.raises(tensio.Error):
        tensio.Shard(raw[:1000])  # a member past the end
    bad = bytearray(raw)
    bad[148:156] = b"0000000\0"  # header checksum
    with pytest.raises(tensio.Error):
        tensio.Shard(bytes(bad))
    with pytest.raises(tensio.LimitError):
        tensio.Shard(raw, limits={"max_tensors": 3})


# ------------------------------------------------------------- ShardWriter

def tar_members(path):
    """[(name, bytes)] of a tar, read by Python's tarfile."""
    with tarfile.open(path) as t:
        return [(ti.name, t.extractfile(ti).read()) for ti in t if ti.isfile()]


def write_array_bytes(a):
    """What WebDataset's npy encoder writes (numpy.lib.format.write_array)."""
    f = io.BytesIO()
    np.lib.format.write_array(f, a)
    return f.getvalue()


def test_writer_members_byte_for_byte(tmp_path):
    from tensio import tenbin
    rng = np.random.default_rng(3)
    samples = []
    for i in range(7):
        x = rng.standard_normal((2, 3 + i)).astype(np.float32)
        y = np.arange(i, dtype=np.int64)
        samples.append({"__key__": "s%04d" % i, "__url__": "ignored", "ten": [x, y],
                        "seg.npy": x, "cls": i % 3, "json": {"i": i}, "txt": "é%d" % i,
                        "raw": bytes(range(i)), "ba": bytearray(b"ab" * i)})
    with tensio.ShardWriter(str(tmp_path / "w-%03d.tar"), mtime=1234) as w:
        for s in samples:
            w.write(s)
    assert w.shards == [str(tmp_path / "w-000.tar")] and w.counts == [7] and w.total == 7
    got = tar_members(w.shards[0])
    want = []
    for s in samples:
        k = s["__key__"]
        enc = {"ten": tenbin.encode_buffer(s["ten"]), "seg.npy": write_array_bytes(s["seg.npy"]),
               "cls": str(s["cls"]).encode(), "json": json.dumps(s["json"]).encode(),
               "txt": s["txt"].encode("utf-8"), "raw": s["raw"], "ba": bytes(s["ba"])}
        want += [(k + "." + e, bytes(enc[e])) for e in sorted(enc)]  # members in sorted order
    assert got == want
    with tarfile.open(w.shards[0]) as t:
        assert all(ti.mtime == 1234 and ti.mode == 0o644 for ti in t)
    with tensio.Shard(w.shards[0]) as sh:
        assert len(sh) == 7 and sh.keys() == [s["__key__"] for s in samples]
        for got_s, s in zip(sh, samples):
            a, b = got_s["ten"]
            assert np.array_equal(a, s["ten"][0]) and np.array_equal(b, s["ten"][1])
            assert np.array_equal(got_s["seg.npy"], s["seg.npy"])
            assert got_s["cls"] == str(s["cls"]).encode() and got_s["raw"] == s["raw"]
    # the same samples give the same bytes
    with tensio.ShardWriter(str(tmp_path / "v-%03d.tar"), mtime=1234, sync=False) as v:
        for s in samples:
            v.write(s)
    assert (tmp_path / "v-000.tar").read_bytes() == (tmp_path / "w-000.tar").read_bytes()


def test_writer_tensor_formats(tmp_path):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = np.ones(5, dtype=np.int16)
    with tensio.ShardWriter(tmp_path / "f-%d.tar") as w:
        w.write({"__key__": "a", "safetensors": {"x": x, "y": y}, "npz": {"x": x},
                 "one.ten": x, "tuple.ten": (x, y)})
        w.write({"__key__": "b", "safetensors": tensio.container({"x": x})})
    with tensio.Shard(w.shards[0]) as sh:
        a, b = sh[0], sh[1]
        assert np.array_equal(a["safetensors"]["x"], x) and np.array_equal(a["safetensors"]["y"], y)
        assert np.array_equal(a["npz"]["x"], x)
        assert len(a["one.ten"]) == 1 and np.array_equal(a["one.ten"][0], x)
        assert np.array_equal(a["tuple.ten"][1], y)
        assert np.array_equal(b["safetensors"]["x"], x)


def test_writer_rollover_by_count(tmp_path):
    pattern = str(tmp_path / "c-%06d.tar")
    with tensio.ShardWriter(pattern, maxcount=3, start_shard=5) as w:
        for i in range(10):
            w.write({"__key__": "k%02d" % i, "cls": i})
    assert w.shards == [pattern % n for n in range(5, 9)]
    assert w.counts == [3, 3, 3, 1] and w.total == 10 and w.shard == 9
    assert sorted(os.listdir(tmp_path)) == [os.path.basename(p) for p in w.shards]
    keys = [s["__key__"] for s in tensio.stream_shards(str(tmp_path / "c-{000005..000008}.tar"))]
    assert keys == ["k%02d" % i for i in range(10)]
    for p, n in zip(w.shards, w.counts):
        assert len(tar_members(p)) == n


def test_writer_rollover_by_size(tmp_path):
    finished = []
    maxsize = 20480
    with tensio.ShardWriter(tmp_path / "z-%02d.tar", maxsize=maxsize, post=finished.append) as w:
        for i in range(12):  # 512 + 3072 bytes a sample: 5 fit in 20480 with the end blocks
            w.write({"__key__": "k%02d" % i, "bin": bytes([i]) * 3000})
        w.write({"__key__": "big", "bin": b"\1" * 30000})  # alone, larger than maxsize
        w.write({"__key__": "after", "bin": b"x"})
    assert w.counts == [5, 5, 2, 1, 1]
    assert finished == w.shards
    sizes = [os.path.getsize(p) for p in w.shards]
    assert all(s <= maxsize for s in sizes[:3]) and sizes[3] > maxsize and sizes[4] <= maxsize
    # each full shard took what fitted: one more sample would have passed maxsize
    assert all(s == maxsize for s in sizes[:2])
    assert [m for p in w.shards for m, _ in tar_members(p)] == \
        ["k%02d.bin" % i for i in range(12)] + ["big.bin", "after.bin"]


def test_writer_bad_input(tmp_path):
    w = tensio.ShardWriter(tmp_path / "b-%d.tar")
    with pytest.raises(tensio.ArgumentError, match="no '__key__'"):
        w.write({"cls": 1})
    with pytest.raises(ValueError, match="has a '/'"):  # ArgumentError is a ValueError
        w.write({"__key__": "a/b", "cls": 1})
    with pytest.raises(tensio.ArgumentError, match="first dot"):
        w.write({"__key__": "a.b", "cls": 1})
    with pytest.raises(tensio.ArgumentError, match="empty"):
        w.write({"__key__": "", "cls": 1})
    with pytest.raises(TypeError, match="__key__"):
        w.write({"__key__": 7, "cls": 1})
    with pytest.raises(TypeError, match="no encoder for a object"):
        w.write({"__key__": "a", "cls": 1, "foo": object()})
    with pytest.raises(TypeError, match="member a.npy"):
        w.write({"__key__": "a", "npy": {1, 2}})
    with pytest.raises(TypeError, match="member a.json"):
        w.write({"__key__": "a", "json": object()})
    with pytest.raises(TypeError, match="a dict"):
        w.write([("__key__", "a")])
    with pytest.raises(tensio.ArgumentError, match="no member"):
        w.write({"__key__": "a", "__url__": "x"})
    with pytest.raises(tensio.ArgumentError, match="differ in case"):
        w.write({"__key__": "a", "npy": np.zeros(1), "NPY": np.zeros(1)})
    with pytest.raises(tensio.ArgumentError, match="no extension"):
        w.write({"__key__": "a", "x/y": b""})
    with pytest.raises(tensio.Error):  # npy holds one array
        w.write({"__key__": "a", "npy": [np.zeros(1), np.zeros(2)]})
    assert not os.listdir(tmp_path)  # nothing started by a refused sample
    w.write({"__key__": "good", "cls": 1})  # the writer is still usable
    w.close()
    w.close()
    with pytest.raises(ValueError, match="closed"):
        w.write({"__key__": "late", "cls": 1})
    assert tar_members(w.shards[0]) == [("good.cls", b"1")]
    for pattern in ("no-number.tar", "two-%d-%d.tar", "bad-%q.tar"):
        with pytest.raises(tensio.ArgumentError, match="pattern"):
            tensio.ShardWriter(tmp_path / pattern)
    with pytest.raises(tensio.ArgumentError):
        tensio.ShardWriter(tmp_path / "x-%d.tar", maxcount=0)
    with pytest.raises(tensio.IOError):  # no such directory: named when the shard starts
        tensio.ShardWriter(tmp_path / "nodir" / "x-%d.tar").write({"__key__": "a", "cls": 1})


def test_writer_aborted_leaves_no_partial_shard(tmp_path):
    with pytest.raises(RuntimeError, match="stop"):
        with tensio.ShardWriter(tmp_path / "a-%d.tar", maxcount=2) as w:
            for i in range(3):
                w.write({"__key__": "k%d" % i, "bin": b"x" * 100000})
            raise RuntimeError("stop")
    assert w.shards == [str(tmp_path / "a-0.tar")]
    assert os.listdir(tmp_path) == ["a-0.tar"]  # a-1.tar (begun) and its temporary are gone
    assert len(tar_members(w.shards[0])) == 2
    # a writer dropped without close keeps nothing of the shard it was writing
    w = tensio.ShardWriter(tmp_path / "d-%d.tar")
    w.write({"__key__": "k", "cls": 1})
    del w
    gc.collect()
    assert os.listdir(tmp_path) == ["a-0.tar"]
    # no sample, no shard
    with tensio.ShardWriter(tmp_path / "e-%d.tar") as w:
        pass
    assert w.shards == [] and os.listdir(tmp_path) == ["a-0.tar"]


# ----------------------------------------------------- shard lists in files

def test_shard_list_file(tmp_path):
    with tensio.ShardWriter(tmp_path / "t-%03d.tar", maxcount=2) as w:
        for i in range(6):
            w.write({"__key__": "k%d" % i, "npy": np.full(3, i, np.int32)})
    lst = tmp_path / "shards.txt"
    lst.write_text("# three shards\n\n%s\n  %s  \r\n%s\n" % (
        tmp_path / "t-{000..001}.tar", w.shards[2], "# the end"))
    want = [w.shards[0], w.shards[1], w.shards[2]]
    assert tensio.shard_list("@%s" % lst) == want
    assert tensio.shard_list("a.tar::@%s::b{0..1}" % lst) == ["a.tar"] + want + ["b0", "b1"]
    got = list(tensio.stream_shards("@%s" % lst))
    assert [s["__key__"] for s in got] == ["k%d" % i for i in range(6)]
    assert all(np.array_equal(s["npy"], np.full(3, i, np.int32)) for i, s in enumerate(got))
    assert got[-1]["__url__"] == want[2]


def test_shard_list_file_hostile(tmp_path):
    def refused(data, exc, match, limits=None):
        p = tmp_path / "l.txt"
        p.write_bytes(data)
        with pytest.raises(exc, match=match):
            tensio.shard_list("@%s" % p, limits=limits)
        with pytest.raises(exc, match=match):  # before any shard is opened
            next(tensio.stream_shards("@%s" % p, limits=limits))

    refused(b"a.tar\nb\0.tar\n", tensio.CorruptError, r"l.txt, line 2: a NUL byte")
    refused(b"a.tar\npipe:touch /tmp/x\n", tensio.ArgumentError,
            r"l.txt, line 2: a command \(pipe:\) in a list file is not run")
    refused(b"a.tar\n" * 101, tensio.LimitError, r"line 101: more than max_shards \(100\)",
            {"max_shards": 100})
    refused(b"a.tar\n" + b"b" * 101 + b"\n", tensio.LimitError,
            r"line 2: 101 bytes, more than max_name_bytes \(100\)", {"max_name_bytes": 100})
    refused(b"#" * 5000, tensio.LimitError, r"5000 bytes, more than max_header_bytes \(4096\)",
            {"max_header_bytes": 4096})
    refused(b"x.tar\n@y.txt\n", tensio.ArgumentError, "line 2: a list file names no other")
    refused(b"\n# only comments\n", tensio.ArgumentError, "names no shard")
    with pytest.raises(tensio.IOError, match="absent.txt"):
        tensio.shard_list("@%s" % (tmp_path / "absent.txt"))
    with pytest.raises(tensio.ArgumentError, match="names no list file"):
        tensio.shard_list("@")


def test_stream_compressed_shards(tmp_path):
    import subprocess
    with tensio.ShardWriter(tmp_path / "z-%d.tar") as w:
        for i in range(50):
            w.write({"__key__": "k%02d" % i, "npy": np.arange(i * 100, dtype=np.float32)})
    want = [(s["__key__"], s["npy"].tolist()) for s in tensio.Shard(w.shards[0])]
    for tool, ext in (("gzip", "gz"), ("bzip2", "bz2"), ("xz", "xz"), ("zstd -q", "zst")):
        p = tmp_path / ("z.tar." + ext)
        subprocess.run("%s -c %s > %s" % (tool, w.shards[0], p), shell=True, check=True)
        for spec in (str(p), "pipe:cat %s" % p):
            got = [(s["__key__"], s["npy"].tolist()) for s in tensio.stream_shards(spec)]
            assert got == want, (tool, spec)
        cut = tmp_path / ("cut.tar." + ext)
        cut.write_bytes(p.read_bytes()[:p.stat().st_size // 2])
        with pytest.raises(tensio.TruncatedError, match="stream: the data end inside it, at byte"):
            list(tensio.stream_shards(str(cut)))


def test_bin_member_is_bytes(tmp_path):
    """A .bin member is bytes, as WebDataset decodes it (a checkpoint in a
    shard is .pth): mapped, streamed, and what ShardWriter takes for it."""
    path = str(tmp_path / "bin.tar")
    npy = tensio.dumps([np.arange(3)], "npy")
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tf:
        for name, data in (("k.bin", b"\x00\x01raw"), ("k.npy", npy)):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    with tensio.Shard(path) as s:
        assert [m.format for m in s.members] == [None, "npy"]
        assert s[0]["bin"] == b"\x00\x01raw" and np.array_equal(s[0]["npy"], np.arange(3))
    got = list(tensio.stream_shards("pipe:cat '%s'" % path))
    assert got[0]["bin"] == b"\x00\x01raw"
    assert tensio.shard._format_for("a/b.BIN") is None
    assert tensio.shard._format_for("a/b.pth") == "torch"
