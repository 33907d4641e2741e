"""tensio.torch.ShardDataset: WebDataset shards (tenbin, .npy and .cls
members, written at test time with tensio.dumps, np.save and Python's
tarfile) as a PyTorch IterableDataset, mapped from disk and served by
Debian's nginx on 127.0.0.1; split over 2 gloo ranks (started as torchrun
would) with 2 DataLoader workers each (ddp_shards.py). torch missing fails
the module (scripts/install-deps.sh installs python3-torch)."""
import collections
import io
import json
import os
import subprocess
import sys
import tarfile

import numpy as np
import pytest
import torch

import tensio
import tensio.torch as tt
from http_servers import free_port

HERE = os.path.dirname(os.path.abspath(__file__))
COUNTS = [5, 9, 3, 12, 7, 1, 10]  # samples per shard: 47, uneven
TOTAL = sum(COUNTS)


def sample_key(k, i):
    return "s%d-%03d" % (k, i)


def write_shard(path, k, first):
    """Shard k: COUNTS[k] samples numbered from first, each a .ten (x: 4x3
    float32 full of n, y: [n] int64), a .npy (arange(6) * n, float64) and a
    .cls (n)."""
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as t:
        for i in range(COUNTS[k]):
            n = first + i
            npy = io.BytesIO()
            np.save(npy, np.arange(6, dtype=np.float64) * n)
            ten = tensio.dumps([np.full((4, 3), n, np.float32), np.array([n], np.int64)],
                               "tenbin")
            for ext, data in (("ten", ten), ("npy", npy.getvalue()), ("cls", b"%d" % n)):
                info = tarfile.TarInfo("%s.%s" % (sample_key(k, i), ext))
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))


@pytest.fixture(scope="module")
def www(tmp_path_factory):
    d = tmp_path_factory.mktemp("torchds")
    (d / "www").mkdir()
    first = 0
    for k in range(len(COUNTS)):
        write_shard(str(d / "www" / ("shard-%d.tar" % k)), k, first)
        first += COUNTS[k]
    return d


@pytest.fixture(scope="module")
def local(www):
    return str(www / "www" / "shard-{0..6}.tar")


ALL_KEYS = [sample_key(k, i) for k in range(len(COUNTS)) for i in range(COUNTS[k])]


def check_sample(s):
    n = int(s["cls"])
    x, y = s["ten"]
    assert isinstance(x, torch.Tensor) and x.dtype == torch.float32 and x.shape == (4, 3)
    assert bool((x == n).all()) and y.tolist() == [n]
    assert torch.equal(s["npy"], torch.arange(6, dtype=torch.float64) * n)


def test_import():
    """import tensio never imports torch; tensio.torch without torch is a
    clear ImportError."""
    code = ("import sys; import tensio; assert 'torch' not in sys.modules, 'imported torch'\n"
            "sys.modules['torch'] = None\n"
            "try:\n    import tensio.torch\nexcept ImportError as e:\n    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert "tensio.torch needs PyTorch" in r.stdout and "python3-torch" in r.stdout


def mapping_of(path):
    """(start, end) of the mappings of a file at offset 0 (/proc/self/maps)."""
    real = os.path.realpath(path)
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].strip() == real and int(parts[2], 16) == 0:
                a, b = parts[0].split("-")
                out.append((int(a, 16), int(b, 16)))
    return out


def test_local_zero_copy(www, local):
    ds = tt.ShardDataset(local)
    got = list(ds)
    assert [s["__key__"] for s in got] == ALL_KEYS  # no shuffle: the shards' order
    for s in got:
        check_sample(s)
    # shard 3's sample 5: its tensors lie where the member's data are in the
    # file, in the shard's mapping (the samples keep it mapped)
    path = str(www / "www" / "shard-3.tar")
    s = got[sum(COUNTS[:3]) + 5]
    assert s["__url__"] == path and s["__key__"] == sample_key(3, 5)
    (start, end), = mapping_of(path)
    with tensio.Shard(path) as sh:
        members = {m.name: m for m in sh.members}
    with open(path, "rb") as f:
        raw = f.read()
    for t, m in ((s["ten"][0], "s3-005.ten"), (s["ten"][1], "s3-005.ten"),
                 (s["npy"], "s3-005.npy")):
        assert start <= t.data_ptr() < end  # in the mapping of the shard's file
        at = t.data_ptr() - start  # the file's offset
        assert members[m].offset <= at < members[m].offset + members[m].size
        assert raw[at:at + t.numel() * t.element_size()] == t.numpy().tobytes()


def test_in_place_on_mapped(www, local):
    """A mapped shard is copy-on-write: an in-place op on a zero-copy tensor
    changes that process's copy of the page, never the file or another view."""
    path = str(www / "www" / "shard-3.tar")
    with open(path, "rb") as f:
        before = f.read()
    s = next(iter(tt.ShardDataset(path)))
    x = s["npy"]
    want = x.clone()
    x.add_(1)  # was a SIGSEGV on a PROT_READ mapping
    assert torch.equal(x, want + 1)
    with open(path, "rb") as f:
        assert f.read() == before
    again = next(iter(tt.ShardDataset(path)))["npy"]
    assert torch.equal(again, want)


def test_remote_as_local(www, nginx, local):
    want = list(tt.ShardDataset(local))
    for spec in (nginx + "/shard-{0..6}.tar",
                 ["pipe:cat " + str(www / "www" / ("shard-%d.tar" % k)) for k in range(7)]):
        got = list(tt.ShardDataset(spec))
        assert [s["__key__"] for s in got] == ALL_KEYS
        for a, b in zip(got, want):
            check_sample(a)
            assert a["cls"] == b["cls"] and torch.equal(a["ten"][0], b["ten"][0])
    assert got[0]["__url__"] == "pipe:cat " + str(www / "www" / "shard-0.tar")


def test_batches(local):
    ds = tt.ShardDataset(local, batch_size=4)
    batches = list(ds)
    assert len(batches) == 12  # 47 samples: 11 of 4 and the last of 3
    b = batches[0]
    assert b["__key__"] == ALL_KEYS[:4] and b["cls"] == [b"0", b"1", b"2", b"3"]
    x, y = b["ten"]
    assert x.shape == (4, 4, 3) and y.shape == (4, 1) and y[:, 0].tolist() == [0, 1, 2, 3]
    assert b["npy"].shape == (4, 6) and b["npy"].dtype == torch.float64
    assert len(batches[-1]["__key__"]) == 3 and batches[-1]["ten"][0].shape == (3, 4, 3)
    assert len(list(tt.ShardDataset(local, batch_size=4, partial=False))) == 11
    joined = list(tt.ShardDataset(local, batch_size=5, collate=lambda b: [s["__key__"] for s in b]))
    assert sum(joined, []) == ALL_KEYS and [len(b) for b in joined] == [5] * 9 + [2]


def test_decode_false(www, local, nginx):
    for spec in (local, nginx + "/shard-{0..6}.tar"):
        got = list(tt.ShardDataset(spec, decode=False))
        assert [s["__key__"] for s in got] == ALL_KEYS
        s = got[7]
        assert all(isinstance(s[e], bytes) for e in ("ten", "npy", "cls"))
        assert np.array_equal(np.load(io.BytesIO(s["npy"])), np.arange(6, dtype=np.float64) * 7)
        x, y = tensio.loads(s["ten"], format="tenbin")
        assert (x == 7).all() and y.tolist() == [7]


def test_shuffled_buffer_bounded():
    held = []

    def source(n):
        for i in range(n):
            held.append(1)
            yield i

    rng = tt._rng("t", 1)
    out = []
    for x in tt.shuffled(source(100), 8, rng):
        out.append(x)
        assert len(held) - len(out) <= 8  # drawn but not yet handed out
    assert sorted(out) == list(range(100)) and out != list(range(100))
    assert list(tt.shuffled(iter(range(5)), 1, rng)) == list(range(5))
    assert sorted(tt.shuffled(iter(range(5)), 50, rng)) == list(range(5))


def test_dataset_buffer_bounded(local, monkeypatch):
    """The dataset's samples pass through shuffled() with shuffle_buffer,
    which is seen to hold at most that many."""
    seen = []
    real = tt.shuffled

    def counting(samples, size, rng):
        drawn = [0]

        def src():
            for s in samples:
                drawn[0] += 1
                yield s
        n = 0
        for s in real(src(), size, rng):
            n += 1
            seen.append((size, drawn[0] - n))
            yield s

    monkeypatch.setattr(tt, "shuffled", counting)
    got = [s["__key__"] for s in tt.ShardDataset(local, shuffle=True, shuffle_buffer=5)]
    assert sorted(got) == sorted(ALL_KEYS) and got != ALL_KEYS
    assert len(seen) == TOTAL and all(size == 5 and held <= 5 for size, held in seen)
    assert max(held for _, held in seen) == 5


def test_epochs_and_seeds(local):
    ds = tt.ShardDataset(local, shuffle=True, seed=3, shuffle_buffer=6)
    e0 = [s["__key__"] for s in ds]
    assert [s["__key__"] for s in ds] == e0  # same seed and epoch: same order
    assert [s["__key__"] for s in tt.ShardDataset(local, shuffle=True, seed=3,
                                                  shuffle_buffer=6)] == e0
    ds.set_epoch(1)
    e1 = [s["__key__"] for s in ds]
    assert sorted(e1) == sorted(e0) == sorted(ALL_KEYS) and e1 != e0
    assert ds.shard_order(0) != ds.shard_order(1)
    other = [s["__key__"] for s in tt.ShardDataset(local, shuffle=True, seed=4, shuffle_buffer=6)]
    assert other != e0


def test_split_explicit(local):
    """rank= and world_size= (no process group): 3 ranks share the shards
    whole, each sample once; samples_per_rank gives each exactly N, cycling
    past its own shards when they hold fewer."""
    for shuffle in (False, True):
        parts = [[s["__key__"] for s in tt.ShardDataset(local, shuffle=shuffle, rank=r,
                                                        world_size=3)] for r in range(3)]
        assert sorted(sum(parts, [])) == sorted(ALL_KEYS) and all(parts)
        if not shuffle:  # shards 0..6 in order: rank 2 has shards 2 and 5 (4 samples)
            assert parts[2] == [sample_key(k, i) for k in (2, 5) for i in range(COUNTS[k])]
    for n in (1, 4, 30):
        for r in range(3):
            got = [s["__key__"] for s in tt.ShardDataset(local, rank=r, world_size=3,
                                                         samples_per_rank=n)]
            assert len(got) == n and set(got) <= set(ALL_KEYS)
    got = [s["__key__"] for s in tt.ShardDataset(local, rank=2, world_size=3,
                                                 samples_per_rank=30)]
    # its own shards 2 and 5, then the epoch's list from its slot's position
    # on (2, 3, 4, ...) until 30
    shard = [[sample_key(k, i) for i in range(COUNTS[k])] for k in range(7)]
    assert got == shard[2] + shard[5] + shard[2] + shard[3] + shard[4] + shard[5] + shard[6][:3]


def test_workers_single_process(local):
    """A DataLoader of 2 workers in one process: every sample once, tensors
    (views of the mapping in the workers) arrive intact; samples_per_rank
    is split among the workers."""
    ds = tt.ShardDataset(local, shuffle=True, seed=5, shuffle_buffer=3)
    got = list(torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2))
    assert sorted(s["__key__"] for s in got) == sorted(ALL_KEYS)
    for s in got:
        check_sample(s)
    ds = tt.ShardDataset(local, samples_per_rank=10, batch_size=2)
    batches = list(torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2))
    # 10 over 2 workers: 5 each, in batches of 2, 2, 1
    assert sorted(len(b["__key__"]) for b in batches) == [1, 1, 2, 2, 2, 2]


def test_errors_named(www, nginx, tmp_path):
    with pytest.raises(tensio.IOError, match="missing.tar: HTTP 404"):
        list(tt.ShardDataset(nginx + "/shard-{0..1}.tar::" + nginx + "/missing.tar"))
    with pytest.raises(tensio.Error, match="nope.tar"):
        list(tt.ShardDataset(str(tmp_path / "nope.tar")))
    bad = tmp_path / "bad.tar"
    bad.write_bytes(b"not a tar" * 100)
    with pytest.raises(tensio.MagicError, match="bad.tar: tar: offset 257") as e:
        list(tt.ShardDataset(str(bad)))
    assert e.value.offset == 257 and e.value.format == "tar" and e.value.message == str(e.value)
    with pytest.raises(ValueError, match="both rank and world_size"):
        tt.ShardDataset(str(bad), rank=1)
    with pytest.raises(ValueError, match="rank 2 not in"):
        tt.ShardDataset(str(bad), rank=2, world_size=2)
    with pytest.raises(ValueError, match="samples_per_rank"):
        tt.ShardDataset(str(bad), samples_per_rank=0)
    empty = tmp_path / "empty.tar"
    with tarfile.open(str(empty), "w"):
        pass
    assert list(tt.ShardDataset(str(empty))) == []
    with pytest.raises(ValueError, match="hold no samples"):
        list(tt.ShardDataset(str(empty), samples_per_rank=3))


def run_ranks(spec, out_dir):
    """Two ranks of ddp_shards.py, with the environment torchrun gives them."""
    port = str(free_port())
    procs, outs = [], []
    for rank in range(2):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=port, RANK=str(rank),
                   LOCAL_RANK=str(rank), WORLD_SIZE="2", LOCAL_WORLD_SIZE="2")
        out = os.path.join(out_dir, "rank%d.json" % rank)
        outs.append(out)
        procs.append(subprocess.Popen([sys.executable, os.path.join(HERE, "ddp_shards.py"),
                                       spec, out], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    logs = [p.communicate(timeout=900)[0] for p in procs]
    for p, log in zip(procs, logs):
        assert p.returncode == 0, log
    got = []
    for out in outs:
        with open(out) as f:
            got.append(json.load(f))
    assert [g["rank"] for g in got] == [0, 1]
    return got


def test_two_ranks(nginx, tmp_path):
    spec = nginx + "/shard-{0..6}.tar"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = run_ranks(spec, str(tmp_path / "a"))
    again = run_ranks(spec, str(tmp_path / "b"))
    assert first == again  # the same seed and epochs: the same orders, rank by rank
    for epoch in (0, 1):
        whole = [g["whole/%d" % epoch] for g in first]
        # every sample exactly once across the 2 ranks x 2 workers
        assert collections.Counter(whole[0] + whole[1]) == collections.Counter(ALL_KEYS)
        assert all(whole)
        even = [g["even/%d" % epoch] for g in first]
        assert [len(e) for e in even] == [20, 20]
        assert set(even[0] + even[1]) <= set(ALL_KEYS)
    for g in first:
        assert g["whole/0"] != g["whole/1"] and g["even/0"] != g["even/1"]
