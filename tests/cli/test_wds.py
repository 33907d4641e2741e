#!/usr/bin/python3
"""tensio on WebDataset tar shards written by Python's tarfile.

  test_wds.py TENSIO

- Shards in each of tarfile's formats (ustar, GNU, pax) with directory
  entries, keys inside directories, long paths (GNU 'L' records, pax 'path'),
  .ten members made by `tensio convert` from tests/vectors and .cls/.json
  members: `tensio ls --json` lists every tensor as `tensio ls --json` of the
  member file alone does, with its key and member; `info --json` counts
  samples, members per extension and dtypes; `validate` passes; `dump --json
  shard KEY.ten` prints what dump of the member file prints.
- Keys that come back after another key and a sample with two members of one
  extension are flagged by validate (as WebDataset would see them).
- Hostile shards (truncated, bad checksum, size past the end, compressed,
  an undecodable member) fail with exit 1 and a message, never a crash."""
import gzip
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile

TENSIO = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
VEC = os.environ.get("TIO_TEST_VECTORS", os.path.join(os.path.dirname(HERE), "vectors"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "support"))
from clitest import failures, run, check  # noqa: E402


def write_tar(path, members, fmt, dirs=()):
    with tarfile.open(path, "w", format=fmt) as t:
        for d in dirs:
            ti = tarfile.TarInfo(d)
            ti.type = tarfile.DIRTYPE
            t.addfile(ti)
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))


def ten_members(tmp):
    """(.ten bytes, ls --json tensors of the file, dump --json) per vector:
    tenbin vectors and npy vectors converted to tenbin by tensio."""
    out = []
    srcs = [os.path.join(VEC, "tenbin", f) for f in
            ("dtype_float32.ten", "dtype_int64.ten", "dtype_uint8.ten", "multi_infos.ten")]
    srcs += [os.path.join(VEC, "npy", f) for f in sorted(os.listdir(os.path.join(VEC, "npy")))
             if f.endswith(".npy")][:4]
    for i, src in enumerate(srcs):
        if not os.path.exists(src):
            continue
        dst = os.path.join(tmp, "m%d.ten" % i)
        if run("convert", src, dst, ok=False).returncode != 0:
            continue  # a dtype tenbin lacks
        with open(dst, "rb") as f:
            data = f.read()
        ls = json.loads(run("ls", "--json", dst).stdout)["tensors"]
        dump = json.loads(run("dump", "--json", dst).stdout)
        out.append((data, ls, dump))
    return out


def test_formats(tmp):
    tens = ten_members(tmp)
    check("converted members", len(tens) >= 5, "only %d" % len(tens))
    for fmt, fname in ((tarfile.USTAR_FORMAT, "ustar"), (tarfile.GNU_FORMAT, "gnu"),
                       (tarfile.PAX_FORMAT, "pax")):
        deep = "train/" if fmt == tarfile.USTAR_FORMAT else "train/" + "long" * 40 + "/"
        members, expect = [], []
        for i, (data, ls, dump) in enumerate(tens):
            key = "%s%06d" % (deep if i % 2 else "train/", i)
            members += [(key + ".ten", data), (key + ".cls", b"%d" % i),
                        (key + ".json", json.dumps({"i": i}).encode())]
            expect.append((key, ls, dump))
        path = os.path.join(tmp, fname + ".tar")
        write_tar(path, members, fmt, dirs=("train/",))
        got = json.loads(run("ls", "--json", path).stdout)
        check(fname + " samples", got["samples"] == len(tens), str(got["samples"]))
        check(fname + " members", [m["member"] for m in got["members"]] ==
              [n for n, _ in members])
        want = []
        for key, ls, _ in expect:
            for t in ls:
                want.append({"key": key, "member": key + ".ten", "index": t["index"],
                             "name": t["name"], "dtype": t["dtype"], "shape": t["shape"],
                             "nbytes": t["nbytes"]})
        check(fname + " ls tensors", got["tensors"] == want,
              "%s != %s" % (got["tensors"][:2], want[:2]))
        for m, (n, d) in zip(got["members"], members):
            check(fname + " member size " + n, m["size"] == len(d) and m["offset"] % 512 == 0)
            with open(path, "rb") as f:
                f.seek(m["offset"])
                check(fname + " member bytes " + n, f.read(m["size"]) == d)
        info = json.loads(run("info", "--json", path).stdout)
        check(fname + " info samples", info["samples"] == len(tens))
        check(fname + " info ext", {k: v["count"] for k, v in info["extensions"].items()} ==
              {"ten": len(tens), "cls": len(tens), "json": len(tens)}, str(info["extensions"]))
        dts = {}
        for t in want:
            dts[t["dtype"]] = dts.get(t["dtype"], 0) + 1
        check(fname + " info dtypes",
              {k: v["count"] for k, v in info["dtypes"].items()} == dts, str(info["dtypes"]))
        check(fname + " info bytes", info["tensor_bytes"] == sum(t["nbytes"] for t in want))
        v = run("validate", "-v", path)
        check(fname + " validate", "ok (tar shard" in v.stdout, v.stdout)
        for key, _, dump in expect:
            d = json.loads(run("dump", "--json", path, key + ".ten").stdout)
            check(fname + " dump " + key, d == dump)
        d = json.loads(run("dump", "--json", path, expect[0][0] + ".ten", "0").stdout)
        check(fname + " dump one tensor", d["tensors"] == dump_first(expect[0][2]))
        text = run("ls", path).stdout
        check(fname + " ls text", ".cls" in text and "bytes" in text and expect[0][0] in text)


def dump_first(dump):
    return dump["tensors"][:1]


def test_duplicates(tmp, ten):
    path = os.path.join(tmp, "dup.tar")
    write_tar(path, [("a.ten", ten), ("b.ten", ten), ("a.cls", b"1")], tarfile.USTAR_FORMAT)
    p = run("validate", path, ok=False)
    check("dup key exit", p.returncode == 1, p.stdout + p.stderr)
    check("dup key message", "second sample" in p.stdout and '"a"' in p.stdout, p.stdout)
    js = json.loads(run("validate", "--json", path, ok=False).stdout)
    check("dup key json", js["valid"] is False and js["files"][0]["samples"] == 3)
    path = os.path.join(tmp, "dupext.tar")
    write_tar(path, [("a.ten", ten), ("a.ten", ten)], tarfile.USTAR_FORMAT)
    p = run("validate", path, ok=False)
    check("dup member", p.returncode == 1 and "fails on it" in p.stdout, p.stdout)


def test_split(tmp):
    """Keys and extensions against WebDataset's own pattern (base_plus_ext)."""
    names = ["a.b/c.d", "x/.hidden", "a.b/.h", ".top", "noext", "dir/noext", "c.", "d//.h",
             "/.h", "__meta.x__", "__key__", "k.seg.cls", "dir.x/y/z.1.2", "p/q.r/s.t"]
    path = os.path.join(tmp, "split.tar")
    write_tar(path, [(n, b"1") for n in names], tarfile.PAX_FORMAT)
    got = json.loads(run("ls", "--json", path).stdout)["members"]
    check("split members", [m["member"] for m in got] == names, str(got))
    for n, m in zip(names, got):
        match = re.match(r"^((?:.*/|)[^.]+)[.]([^/]*)$", n)
        if "/" not in n and n.startswith("__") and n.endswith("__"):
            match = None
        want = (match.group(1), match.group(2)) if match else (None, "")
        check("split " + n, (m["key"], m["ext"]) == want, "%s != %s" % ((m["key"], m["ext"]), want))


def expect_fail(name, path, *cmds):
    for cmd in cmds or (("ls",), ("info",), ("validate",)):
        p = run(*cmd, path, ok=False)
        check(name + " " + cmd[0], p.returncode == 1, "exit %d" % p.returncode)
        check(name + " " + cmd[0] + " message", "tar: " in p.stdout + p.stderr,
              p.stdout + p.stderr)


def test_hostile(tmp, ten):
    path = os.path.join(tmp, "good.tar")
    write_tar(path, [("k.ten", ten), ("k.cls", b"7")], tarfile.USTAR_FORMAT)
    with open(path, "rb") as f:
        good = f.read()

    def variant(name, data):
        p = os.path.join(tmp, name + ".tar")
        with open(p, "wb") as f:
            f.write(data)
        return p

    expect_fail("truncated", variant("trunc", good[:512 + 100]))
    expect_fail("no end", variant("noend", good[:1536 + 512]))
    bad = bytearray(good)
    bad[148] ^= 1
    expect_fail("checksum", variant("sum", bytes(bad)))
    bad = bytearray(good)
    bad[124:136] = b"77777777777\0"
    s = sum(bad[:148]) + 8 * 32 + sum(bad[156:512])
    bad[148:156] = b"%06o\0 " % s
    expect_fail("size past the end", variant("size", bytes(bad)))
    gz = os.path.join(tmp, "c.tar.gz")
    with open(gz, "wb") as f:
        f.write(gzip.compress(good))
    p = run("ls", gz, ok=False)
    check("gzip refused", p.returncode == 1 and "gzip-compressed" in p.stderr, p.stderr)
    # an undecodable tensor member
    path = os.path.join(tmp, "badmember.tar")
    write_tar(path, [("k.ten", ten[:10]), ("k.cls", b"7")], tarfile.USTAR_FORMAT)
    p = run("validate", path, ok=False)
    check("bad member validate", p.returncode == 1 and "k.ten" in p.stdout, p.stdout)
    p = run("ls", path, ok=False)
    check("bad member ls", p.returncode == 1 and "k.ten" in p.stderr, p.stderr)
    p = run("dump", path, "nope.ten", ok=False)
    check("dump missing member", p.returncode == 1 and "no member" in p.stderr, p.stderr)
    p = run("dump", path, ok=False)
    check("dump needs a member", p.returncode == 2, p.stderr)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(VEC, "tenbin", "dtype_float32.ten"), "rb") as f:
            ten = f.read()
        test_formats(tmp)
        test_duplicates(tmp, ten)
        test_split(tmp)
        test_hostile(tmp, ten)
    for f in failures:
        print("FAIL:", f)
    if failures:
        sys.exit(1)
    print("ok: WebDataset shards")


main()
