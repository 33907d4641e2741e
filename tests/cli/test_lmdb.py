#!/usr/bin/python3
"""tensio and LMDB stores, against Debian's python3-lmdb.

  test_lmdb.py TENSIO

- A store written by tensio (`tensio convert shard.tar db.lmdb`, a tar shard
  made with tarfile whose .ten members tensio converted from .npy files)
  read with python3-lmdb: the metadata key, one record per sample, each
  record decoded (a tenbin decoder of this test's own, NumPy) equal to the
  arrays of the sample's tensor members; .cls members are not stored.
- Stores written by python3-lmdb (records = tenbin bytes made by tensio's
  CLI; with and without the metadata key, a directory and a single file)
  read by tensio: ls --tensors, dump --json equal to the member files'.
- A bad record put by python3-lmdb: validate and ls --tensors fail naming
  its key; a key already in a store needs --force.
- Keys holding NUL bytes (python3-lmdb writes them): ls shows them whole,
  dump finds them by the key as ls shows it.
- A store converted to a tar shard: members KEY.EXT in key order holding the
  records' bytes (tarfile), or re-encoded as .npy with --to; and back."""
import hashlib
import json
import io
import os
import sys
import tarfile
import tempfile

import lmdb
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "support"))
from clitest import failures, run, check  # noqa: E402

CODES = {"f2": "<f2", "f4": "<f4", "f8": "<f8", "i1": "i1", "i2": "<i2", "i4": "<i4",
         "i8": "<i8", "u1": "u1", "u2": "<u2", "u4": "<u4", "u8": "<u8"}


def tenbin_decode(buf):
    """[(name, array)] of tenbin bytes (docs/formats/tenbin.md)."""
    chunks, pos = [], 0
    while pos < len(buf):
        assert buf[pos:pos + 8] == b"~TenBin~", "magic at %d" % pos
        n = int.from_bytes(buf[pos + 8:pos + 16], "little")
        chunks.append(buf[pos + 16:pos + 16 + n])
        pos += 16 + (n + 63) // 64 * 64
    out = []
    for head, data in zip(chunks[0::2], chunks[1::2]):
        code = head[0:8].rstrip(b"\0").decode()
        name = head[8:16].strip(b"\0").decode()
        ndim = int.from_bytes(head[16:24], "little")
        dims = [int.from_bytes(head[24 + 8 * k:32 + 8 * k], "little") for k in range(ndim)]
        out.append((name, np.frombuffer(data, dtype=CODES[code]).reshape(dims)))
    return out


def same(a, b):
    return len(a) == len(b) and all(x[1].dtype == y[1].dtype and x[1].shape == y[1].shape and
                                    x[1].tobytes() == y[1].tobytes() for x, y in zip(a, b))


def make_ten(tmp, i, k):
    """tenbin bytes made by tensio from a .npy of sample i, member k."""
    rng = np.random.default_rng(i * 10 + k)
    dt = ["<f4", "<i8", "u1", "<f2", "<f8", "<i2"][(i + k) % 6]
    a = (rng.standard_normal((i % 3 + 1, 4)) * 100).astype(dt)
    src, dst = os.path.join(tmp, "a%d_%d.npy" % (i, k)), os.path.join(tmp, "a%d_%d.ten" % (i, k))
    np.save(src, a)
    run("convert", src, dst)
    with open(dst, "rb") as f:
        return f.read(), dst


def test_tensio_writes(tmp):
    shard = os.path.join(tmp, "shard.tar")
    expect = {}
    with tarfile.open(shard, "w", format=tarfile.PAX_FORMAT) as t:
        for i in range(12):
            key = "train/%06d" % i
            members = [("ten", 0)] + ([("seg.ten", 1)] if i % 2 else [])
            arrays = []
            for ext, k in members:
                data, _ = make_ten(tmp, i, k)
                arrays += tenbin_decode(data)
                ti = tarfile.TarInfo("%s.%s" % (key, ext))
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
            cls = b"%d" % (i % 5)
            ti = tarfile.TarInfo(key + ".cls")
            ti.size = len(cls)
            t.addfile(ti, io.BytesIO(cls))
            expect[key] = arrays
    db = os.path.join(tmp, "w.lmdb")
    p = run("convert", "-v", shard, db)
    check("convert notes the .cls members", "12 members without a tensor format" in p.stderr,
          p.stderr)
    env = lmdb.open(db, readonly=True, lock=False)
    with env.begin() as txn:
        meta = txn.get(b"__tensio__")
        check("metadata", meta is not None and
              json.loads(meta) == {"format": "tenbin", "version": 1}, repr(meta))
        keys = [k.decode() for k, _ in txn.cursor() if k != b"__tensio__"]
        check("one record per sample", keys == sorted(expect), repr(keys))
        for k in keys:
            got = tenbin_decode(txn.get(k.encode()))
            check("record %s decodes equal" % k, same(got, expect[k]))
    env.close()
    check("validate", run("validate", db, ok=False).returncode == 0)
    ls = json.loads(run("ls", "--json", "--tensors", db).stdout)
    check("ls records", ls["records"] == 12 and ls["record_format"] == "tenbin", repr(ls)[:200])
    check("ls tensors", len(ls["tensors"]) == sum(len(v) for v in expect.values()))
    # --hash: each tensor's SHA-256, numpy's of its C-order little-endian bytes
    hashed = json.loads(run("ls", "--json", "--hash", db).stdout)["tensors"]
    want = [hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()
            for k in sorted(expect) for _, a in expect[k]]  # tenbin's dtypes: little-endian
    check("ls --hash", [t.get("sha256") for t in hashed] == want,
          "%s != %s" % ([t.get("sha256") for t in hashed][:2], want[:2]))
    check("ls --hash keeps the rest", [{k: v for k, v in t.items() if k != "sha256"}
                                       for t in hashed] == ls["tensors"])
    text = run("ls", "--hash", db).stdout
    check("ls --hash text", "SHA256" in text and all(h in text for h in want), text[:300])
    info = json.loads(run("info", "--json", db).stdout)
    check("info", info["records"] == 12 and info["tensors"] == len(ls["tensors"]) and
          info["tensor_bytes"] == sum(a.nbytes for v in expect.values() for _, a in v) and
          info["undecodable_records"] == 0, repr(info))
    # a key already there needs --force
    p = run("convert", shard, db, ok=False)
    check("existing key refused", p.returncode == 1 and "--force" in p.stderr, p.stderr)
    run("convert", "--force", shard, db)
    # a sample key that comes back after another key: refused, not overwritten
    dup = os.path.join(tmp, "dup.tar")
    data, _ = make_ten(tmp, 50, 0)
    with tarfile.open(dup, "w") as t:
        for key in ("a", "b", "a"):
            ti = tarfile.TarInfo(key + ".ten")
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
    p = run("convert", dup, os.path.join(tmp, "dup.lmdb"), ok=False)
    check("duplicate sample key refused", p.returncode == 1 and 'key "a" comes twice' in p.stderr,
          p.stderr)
    # a single container: key = the file name without extensions
    _, ten = make_ten(tmp, 40, 0)
    run("convert", ten, db)
    d1 = json.loads(run("dump", "--json", ten).stdout)
    d2 = json.loads(run("dump", "--json", db, "a40_0").stdout)
    check("dump of a single-file record", d1 == d2)
    # another record format
    npz = os.path.join(tmp, "z.lmdb")
    run("convert", "--to", "npz", shard, npz)
    env = lmdb.open(npz, readonly=True, lock=False)
    with env.begin() as txn:
        check("npz metadata", json.loads(txn.get(b"__tensio__"))["format"] == "npz")
        rec = txn.get(b"train/000003")
        z = np.load(io.BytesIO(rec))
        check("npz record", same([(n, z[n]) for n in z.files], expect["train/000003"]) or
              sorted(a.tobytes() for a in z.values()) ==
              sorted(a.tobytes() for _, a in expect["train/000003"]))
    env.close()


def test_python_writes(tmp):
    recs = {}
    for i in range(8):
        data, ten = make_ten(tmp, 100 + i, 0)
        recs["k%02d" % i] = (data, ten)
    for name, subdir, meta in (("p.lmdb", True, True), ("p2.lmdb", True, False),
                               ("p3.mdb", False, True)):
        path = os.path.join(tmp, name)
        env = lmdb.open(path, subdir=subdir, map_size=1 << 24)
        with env.begin(write=True) as txn:
            if meta:
                txn.put(b"__tensio__", b'{"format": "tenbin", "version": 1}')
            for k, (data, _) in recs.items():
                txn.put(k.encode(), data)
        env.close()
        ls = json.loads(run("ls", "--json", "--tensors", path).stdout)
        check("%s: keys" % name, [k["key"] for k in ls["keys"]] == sorted(recs), repr(ls)[:200])
        check("%s: record format" % name, ls["record_format"] == ("tenbin" if meta else None))
        for k, (_, ten) in recs.items():
            d1 = json.loads(run("dump", "--json", ten).stdout)
            d2 = json.loads(run("dump", "--json", path, k).stdout)
            check("%s: %s dumps equal" % (name, k), d1 == d2)
        check("%s: validate" % name, run("validate", path, ok=False).returncode == 0)
    # a bad record: reported with its key, never a crash
    path = os.path.join(tmp, "p.lmdb")
    env = lmdb.open(path, map_size=1 << 24)
    with env.begin(write=True) as txn:
        txn.put(b"broken", recs["k00"][0][:40])
    env.close()
    p = run("validate", path, ok=False)
    check("validate: bad record", p.returncode == 1 and 'record "broken"' in p.stdout,
          p.stdout + p.stderr)
    p = run("ls", "--tensors", path, ok=False)
    check("ls --tensors: bad record", p.returncode == 1 and 'record "broken"' in p.stderr,
          p.stderr)
    p = run("info", path, ok=False)
    check("info: bad record", p.returncode == 1 and "undecodable records: 1" in p.stdout,
          p.stdout + p.stderr)
    p = run("dump", path, "nosuch", ok=False)
    check("dump: missing key", p.returncode == 1 and "nosuch" in p.stderr, p.stderr)


def test_nul_keys(tmp):
    """Keys are bytes: python3-lmdb writes keys holding NUL ("a\\0b" beside "a"),
    and ls shows them whole (\\x00 in text, \\u0000 in JSON), dump finds them
    by the key as ls shows it, validate names them."""
    data, ten = make_ten(tmp, 300, 0)
    data2, ten2 = make_ten(tmp, 301, 0)
    path = os.path.join(tmp, "nul.lmdb")
    env = lmdb.open(path, map_size=1 << 24)
    with env.begin(write=True) as txn:
        txn.put(b"__tensio__", b'{"format": "tenbin", "version": 1}')
        txn.put(b"a", data)
        txn.put(b"a\0b", data2)
        txn.put(b"\0", data)
    env.close()
    ls = json.loads(run("ls", "--json", "--tensors", path).stdout)
    check("NUL keys: JSON keys whole", [k["key"] for k in ls["keys"]] == ["\0", "a", "a\0b"],
          repr(ls["keys"]))
    check("NUL keys: tensors keyed whole",
          sorted({t["key"] for t in ls["tensors"]}) == ["\0", "a", "a\0b"], repr(ls["tensors"]))
    rows = [r.split()[0] for r in run("ls", path).stdout.splitlines()[1:]]
    check("NUL keys: text", rows == ["\\x00", "a", "a\\x00b"], repr(rows))
    d_ab = json.loads(run("dump", "--json", path, "a\\x00b").stdout)
    check("NUL keys: dump a\\x00b is that record",
          d_ab == json.loads(run("dump", "--json", ten2).stdout))
    d_a = json.loads(run("dump", "--json", path, "a").stdout)
    check("NUL keys: dump a is not cut", d_a == json.loads(run("dump", "--json", ten).stdout))
    check("NUL keys: validate", run("validate", path, ok=False).returncode == 0)
    p = run("dump", path, "a\\x00c", ok=False)
    check("NUL keys: missing named", p.returncode == 1 and "a\\x00c" in p.stderr, p.stderr)


def test_to_shard(tmp):
    """db.lmdb -> shard.tar: a member KEY.EXT per record in key order, its bytes
    the record's (read with tarfile and python3-lmdb), or re-encoded with --to."""
    db = os.path.join(tmp, "s.lmdb")
    env = lmdb.open(db, map_size=1 << 24)
    recs = {}
    with env.begin(write=True) as txn:
        txn.put(b"__tensio__", json.dumps({"format": "tenbin", "version": 1}).encode())
        for i in range(5):
            data, _ = make_ten(tmp, 60 + i, 0)
            key = "dir/%04d" % (4 - i)
            txn.put(key.encode(), data)
            recs[key] = data
    env.close()
    out = os.path.join(tmp, "from-lmdb.tar")
    run("convert", db, out)
    with tarfile.open(out) as t:
        names = t.getnames()
        check("members in key order", names == ["%s.ten" % k for k in sorted(recs)], repr(names))
        for k in sorted(recs):
            check("member %s = record bytes" % k,
                  t.extractfile(k + ".ten").read() == recs[k])
    p = run("convert", db, out, ok=False)
    check("existing shard refused", p.returncode == 1 and "--force" in p.stderr, p.stderr)
    out2 = os.path.join(tmp, "from-lmdb-npy.tar")
    j = json.loads(run("convert", "--json", "--to", "npy", db, out2).stdout)
    check("--to npy summary", j["records"] == 5 and j["member_format"] == "npy", repr(j))
    with tarfile.open(out2) as t:
        for k in sorted(recs):
            a = np.load(io.BytesIO(t.extractfile(k + ".npy").read()))
            want = tenbin_decode(recs[k])[0][1]
            check("member %s.npy equal" % k, a.dtype == want.dtype and
                  a.tobytes() == want.tobytes() and a.shape == want.shape)
    # and back: the shard converts to a store with the same records
    back = os.path.join(tmp, "back.lmdb")
    run("convert", out, back)
    env = lmdb.open(back, readonly=True, lock=False)
    with env.begin() as txn:
        for k in sorted(recs):
            got = tenbin_decode(txn.get(k.encode()))
            check("round trip %s" % k, same(got, tenbin_decode(recs[k])))
    env.close()
    # a key no member name can hold
    env = lmdb.open(db, map_size=1 << 24)
    with env.begin(write=True) as txn:
        txn.put(b"bad\0key", recs["dir/0000"])
    env.close()
    p = run("convert", "--force", db, out, ok=False)
    check("NUL key refused", p.returncode == 1 and "NUL" in p.stderr, p.stderr)
    with tarfile.open(out) as t:
        check("refused: the old shard kept", len(t.getnames()) == 5)


def test_select(tmp):
    """--only/--exclude/--rename on an LMDB store's keys (ls, convert to a
    shard), on a shard's members (convert to a store: no --rename, member
    names are not kept) and on a file's tensors (convert to a store)."""
    db = os.path.join(tmp, "sel.lmdb")
    env = lmdb.open(db, map_size=1 << 24)
    with env.begin(write=True) as txn:
        for i in range(4):
            buf = io.BytesIO()
            np.save(buf, np.arange(3, dtype=np.int16) * i)
            txn.put(b"rec%d" % i, buf.getvalue())  # no __tensio__: probed
    env.close()
    j = json.loads(run("ls", "--json", "--tensors", "--only", "rec[123]", "--exclude", "rec2",
                       "--rename", "rec3=last", db).stdout)
    check("lmdb select: ls keys", [k["key"] for k in j["keys"]] == ["rec1", "last"], repr(j))
    check("lmdb select: ls tensors", [t["key"] for t in j["tensors"]] == ["rec1", "last"])
    for args, msg in ((["--only", "x*"], "--only 'x*': no key matches"),
                      (["--rename", "x=y"], "--rename: no key is named 'x'")):
        p = run("ls", *args, db, ok=False)
        check("lmdb select: ls %s" % args, p.returncode == 1 and msg in p.stderr and
              not p.stdout, p.stdout + p.stderr)
    out = os.path.join(tmp, "sel-lmdb.tar")
    run("convert", "--exclude", "rec0", "--rename", "rec1=one", db, out)
    with tarfile.open(out) as t:
        names = t.getnames()
        a = np.load(io.BytesIO(t.extractfile("one.npy").read()))
    check("lmdb select: to a shard", names == ["one.npy", "rec2.npy", "rec3.npy"] and
          a.tolist() == [0, 1, 2], repr(names))
    # a NUL in a key: renamed, it can be a member
    env = lmdb.open(db, map_size=1 << 24)
    with env.begin(write=True) as txn:
        txn.put(b"n\0ul", txn.get(b"rec1"))
    env.close()
    out2 = os.path.join(tmp, "sel-lmdb2.tar")
    run("convert", "--only", "n*", "--rename", "n\\x00ul=nul", db, out2)
    with tarfile.open(out2) as t:
        check("lmdb select: a NUL key renamed", t.getnames() == ["nul.npy"], repr(t.getnames()))
    # shard -> store: members selected; --rename refused
    back = os.path.join(tmp, "sel-back.lmdb")
    run("convert", "--exclude", "rec2*", out, back)
    env = lmdb.open(back, readonly=True, lock=False)
    with env.begin() as txn:
        keys = [k for k, _ in txn.cursor() if k != b"__tensio__"]
    env.close()
    check("lmdb select: shard -> store", keys == [b"one", b"rec3"], repr(keys))
    p = run("convert", "--rename", "a=b", out, os.path.join(tmp, "sel-no.lmdb"), ok=False)
    check("lmdb select: --rename into a store refused", p.returncode == 2 and
          "not kept" in p.stderr, p.stderr)
    # a file -> store: its tensors selected
    npz = os.path.join(tmp, "sel.npz")
    np.savez(npz, a=np.ones(2, np.float32), b=np.zeros(3, np.int8))
    st = os.path.join(tmp, "sel-file.lmdb")
    run("convert", "--only", "b", npz, st)
    j = json.loads(run("ls", "--json", "--tensors", st).stdout)
    check("lmdb select: a file's tensors", [t["name"] for t in j["tensors"]] == ["b"], repr(j))


def test_env_limits(tmp):
    """TENSIO_LIMITS reaches a store's records (ls --tensors, validate, dump,
    convert to a shard) and a shard converted into a store."""
    src = os.path.join(os.path.dirname(HERE), "vectors", "tenbin", "multi_infos.ten")
    with open(src, "rb") as f:
        data = f.read()
    n = len(tenbin_decode(data))
    db = os.path.join(tmp, "lim.lmdb")
    env = lmdb.open(db, map_size=1 << 22)
    with env.begin(write=True) as txn:
        txn.put(b"__tensio__", json.dumps({"format": "tenbin", "version": 1}).encode())
        txn.put(b"k", data)
    env.close()
    shard = os.path.join(tmp, "lim.tar")
    with tarfile.open(shard, "w", format=tarfile.USTAR_FORMAT) as t:
        for key in ("a", "b"):
            ti = tarfile.TarInfo(key + ".ten")
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
    out_tar, out_db = os.path.join(tmp, "lim-out.tar"), os.path.join(tmp, "lim-out.lmdb")
    cases = [("ls --tensors", ("ls", "--tensors", db), n - 1),
             ("validate", ("validate", db), n - 1),
             ("dump", ("dump", db, "k"), n - 1),
             ("convert --to", ("convert", "--force", "--to", "safetensors", db, out_tar), n - 1),
             ("a shard of two members into a store", ("convert", "--force", shard, out_db), 1)]
    for name, args, low in cases:
        for lim, rc in ((low, 1), (n, 0)):
            p = run(*args, ok=False, env={"TENSIO_LIMITS": "max_tensors=%d" % lim})
            check("TENSIO_LIMITS %s: exit %d" % (name, rc), p.returncode == rc and
                  (rc == 0 or "max_tensors" in p.stdout + p.stderr),
                  "exit %d: %s" % (p.returncode, (p.stdout + p.stderr)[-300:]))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_tensio_writes(tmp)
        test_python_writes(tmp)
        test_nul_keys(tmp)
        test_to_shard(tmp)
        test_select(tmp)
        test_env_limits(tmp)
    for f in failures:
        print("FAIL:", f)
    if failures:
        sys.exit(1)
    print("ok: LMDB stores")


main()
