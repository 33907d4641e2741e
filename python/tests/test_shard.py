"""tensio.Shard against Python's tarfile and WebDataset's grouping rule, on
shards written here with tarfile (members encoded by tensio and NumPy)."""

import gc
import io
import json
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
