#!/usr/bin/python3
"""tensio on WebDataset tar shards written by Python's tarfile.

  test_wds.py TENSIO

- Shards in each of tarfile's formats (ustar, GNU, pax) with directory
  entries, keys inside directories, long paths (GNU 'L' records, pax 'path'),
  .ten members made by `tensio convert` from tests/vectors and .cls/.json
  members: `tensio ls --json` lists every tensor as `tensio ls --json` of the
  member file alone does, with its key and member; `info --json` counts
  samples, members per extension and dtypes; `ls --hash` gives each tensor
  the digest `ls --hash` of its member file gives; `validate` passes; `dump --json
  shard KEY.ten` prints what dump of the member file prints.
- A shard on standard input (`ls -`, `info -`, `validate -`, `dump -`,
  `convert -`), from a file and from a pipe: what the shard file gives.
- A shard list in WebDataset's notation (`ls 'train-{000..002}.tar'`, `{a,b}`,
  `::`): each shard under its name, a missing one reported (exit 1); in a
  list file (`ls @shards.txt`), hostile list files refused with their line.
- Keys that come back after another key and a sample with two members of one
  extension are flagged by validate (as WebDataset would see them).
- Hostile shards (truncated, bad checksum, size past the end, compressed,
  an undecodable member) fail with exit 1 and a message, never a crash.
- Shards written by tensio (`convert --shard`, shard -> shard with and
  without `--member-to`): read by tarfile and GNU tar with every member's
  name, bytes and order intact, plain ustar (pax only for long names), the
  same bytes twice; re-encoded tensors equal to the originals (dump --json,
  numpy for .npy); the loss rules of convert; `extract` writes the members
  byte-equal and refuses members that would leave DIR (.., absolute paths,
  symbolic links), existing files without --force.
- `send SHARD.tar` over ZeroMQ: a message per sample with its tensors (sha256
  equal to numpy's), `--batch N` stacked as tensorcom batches (the last
  partial); `recv -o 'rx-%04d.tar' --samples-per-shard N` writes them back
  into shards of N samples.
- --only/--exclude/--rename select and rename members (globs on their names)
  in ls and convert, mapped and streamed; what matches nothing fails first."""
import gzip
import io
import hashlib
import json
import os
import re
import subprocess
import sys
import shutil
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
        # --hash: each tensor's digest as ls --hash of its member file gives it
        hashed = json.loads(run("ls", "--hash", "--json", path).stdout)["tensors"]
        want_h = []
        for i, (data, _, _) in enumerate(tens):
            one = os.path.join(tmp, "hash%d.ten" % i)
            with open(one, "wb") as f:
                f.write(data)
            want_h += [t["sha256"] for t in
                       json.loads(run("ls", "--hash", "--json", one).stdout)["tensors"]]
        check(fname + " ls --hash", [t.get("sha256") for t in hashed] == want_h,
              "%s != %s" % ([t.get("sha256") for t in hashed][:2], want_h[:2]))
        check(fname + " ls --hash rest", [{k: v for k, v in t.items() if k != "sha256"}
                                          for t in hashed] == want)
        text = run("ls", "--hash", path).stdout
        check(fname + " ls --hash text", "SHA256" in text and all(h in text for h in want_h))


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


def test_compressed(tmp):
    """A shard compressed with gzip (also two members one after the other, as
    pigz and cat make), bzip2, xz and zstd — by Python's modules and by the
    tools — reads as the tar itself: ls, info, dump, validate, convert."""
    import bz2
    import lzma
    src = os.path.join(VEC, "tar", "pax.tar")
    with open(src, "rb") as f:
        raw = f.read()
    want = json.loads(run("ls", "--json", src).stdout)
    variants = {"m.tar.gz": gzip.compress(raw), "m.tgz": gzip.compress(raw, 1),
                "m.tar.bz2": bz2.compress(raw), "m.tar.xz": lzma.compress(raw)}
    # two gzip members: the tar's first half and its second
    variants["m2.tar.gz"] = gzip.compress(raw[:5000]) + gzip.compress(raw[5000:])
    for name, data in variants.items():
        with open(os.path.join(tmp, name), "wb") as f:
            f.write(data)
    for tool, ext in (("gzip", "gz"), ("bzip2", "bz2"), ("xz", "xz"), ("zstd", "zst")):
        if shutil.which(tool) is None:
            check("%s is installed (scripts/install-deps.sh)" % tool, False)
            continue
        out = os.path.join(tmp, "t.tar.%s" % ext)
        with open(out, "wb") as f:
            subprocess.run([tool, "-c", src], stdout=f, check=True)
        variants[os.path.basename(out)] = None
    for name in variants:
        path = os.path.join(tmp, name)
        got = json.loads(run("ls", "--json", path).stdout)
        check("compressed %s: ls" % name, got["tensors"] == want["tensors"] and
              got.get("members") == want.get("members"), name)
        info = json.loads(run("info", "--json", path).stdout)
        z = {"gz": "gzip", "tgz": "gzip", "bz2": "bzip2", "xz": "xz", "zst": "zstd"}
        check("compressed %s: info names it" % name,
              info["compression"] == z[name.rsplit(".", 1)[1]], repr(info.get("compression")))
        check("compressed %s: validate" % name, run("validate", path, ok=False).returncode == 0)
        d1 = run("dump", "--json", path, "000000.ten").stdout
        d2 = run("dump", "--json", src, "000000.ten").stdout
        check("compressed %s: dump" % name, d1 == d2)
        # read as a stream (a command's output): decompressed as it streams
        p = run("ls", "--json", "pipe:cat " + path)
        streamed = json.loads(p.stdout)
        check("compressed %s: ls as a stream" % name, streamed["tensors"] == want["tensors"] and
              streamed.get("members") == want.get("members"), p.stdout[:300])
    # to an uncompressed shard: the same members, byte for byte
    out = os.path.join(tmp, "from-gz.tar")
    run("convert", os.path.join(tmp, "m.tar.gz"), out)
    with tarfile.open(out) as a, tarfile.open(src) as b:
        check("tar.gz -> tar members",
              [(m.name, a.extractfile(m).read()) for m in a if m.isfile()] ==
              [(m.name, b.extractfile(m).read()) for m in b if m.isfile()])


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


def test_brace_list(tmp, ten):
    """`ls` of a shard list in WebDataset's notation: each shard in turn under
    its name, --json an array in the list's order; a missing shard reported
    with the others listed (exit 1); a malformed brace refused."""
    d = os.path.join(tmp, "brace")
    os.makedirs(d)
    for s in ("train", "val"):
        for i in range(3):
            write_tar(os.path.join(d, "%s-%03d.tar" % (s, i)),
                      [("%s%d%03d.ten" % (s, i, k), ten) for k in range(i + 1)], tarfile.USTAR_FORMAT)
    spec = os.path.join(d, "{train,val}-{000..002}.tar")
    names = [os.path.join(d, "%s-%03d.tar" % (s, i)) for s in ("train", "val") for i in range(3)]
    got = json.loads(run("ls", "--json", spec).stdout)
    check("brace json files", [g["file"] for g in got] == names, str([g.get("file") for g in got]))
    check("brace json members", [len(g["members"]) for g in got] == [1, 2, 3, 1, 2, 3],
          str([len(g["members"]) for g in got]))
    one = json.loads(run("ls", "--json", names[4]).stdout)
    check("brace json = ls of the shard", got[4] == one)
    text = run("ls", spec).stdout
    heads = [ln[:-1] for ln in text.splitlines() if ln.endswith(".tar:")]
    check("brace text heads", heads == names, str(heads))
    check("brace text rows", text.count(".ten ") == 12, text)
    both = run("ls", "--json", os.path.join(d, "train-{002..000}.tar") + "::" +
               os.path.join(d, "val-000.tar")).stdout
    check("brace descending and ::", [g["file"] for g in json.loads(both)] ==
          [names[2], names[1], names[0], names[3]], both)
    p = run("ls", os.path.join(d, "train-{001..003}.tar"), ok=False)
    check("brace missing exit", p.returncode == 1, str(p.returncode))
    check("brace missing named", "train-003.tar" in p.stderr, p.stderr)
    check("brace missing others listed", p.stdout.count(".ten ") == 5, p.stdout)
    p = run("ls", os.path.join(d, "train-{000..0x}.tar"), ok=False)
    check("brace malformed", p.returncode == 1 and "neither a range" in p.stderr, p.stderr)
    test_list_file(d, names)


def test_list_file(d, names):
    """`ls @FILE`: the shards a list file names (a name or brace list a line,
    comments and blank lines skipped), as `ls` of the same brace list; among
    `::` lists; hostile list files refused with the file and the line."""
    lst = os.path.join(d, "shards.txt")
    with open(lst, "w") as f:
        f.write("# the training shards\n\n%s\n   %s  \r\n# end\n" % (
            os.path.join(d, "train-{000..002}.tar"), os.path.join(d, "val-{000..002}.tar")))
    spec = os.path.join(d, "{train,val}-{000..002}.tar")
    got = run("ls", "--json", "@" + lst).stdout
    check("list file = brace list", json.loads(got) == json.loads(run("ls", "--json", spec).stdout),
          got[:300])
    text = run("ls", "@" + lst).stdout
    heads = [ln[:-1] for ln in text.splitlines() if ln.endswith(".tar:")]
    check("list file text heads", heads == names, str(heads))
    both = json.loads(run("ls", "--json", names[0] + "::@" + lst).stdout)
    check("list file among ::", [g["file"] for g in both] == names[:1] + names,
          str([g["file"] for g in both]))
    for what, data, want in (
            ("nul", b"%s\n\0\n" % names[0].encode(), "line 2: a NUL byte"),
            ("long", b"x" * 70000 + b"\n", "line 1: 70000 bytes, more than max_name_bytes"),
            ("many", b"a.tar\n" * 20000, "line 16385: more than max_shards (16384)"),
            ("nested", b"@other.txt\n", "line 1: a list file names no other list file"),
            ("empty", b"# none\n", "names no shard"),
            ("brace", b"a.tar\nb-{1..x}.tar\n", "line 2: \"{1..x}\" is neither")):
        bad = os.path.join(d, what + ".txt")
        with open(bad, "wb") as f:
            f.write(data)
        p = run("ls", "@" + bad, ok=False)
        check("list file " + what, p.returncode == 1 and want in p.stderr and
              bad in p.stderr and not p.stdout, p.stderr)
    big = os.path.join(d, "huge.txt")
    with open(big, "wb") as f:
        f.truncate(1 << 40)  # sparse: refused by its size, nothing read
    p = run("ls", "@" + big, ok=False)
    check("list file huge", p.returncode == 1 and "more than max_header_bytes" in p.stderr,
          p.stderr)
    p = run("ls", "@" + os.path.join(d, "absent.txt"), ok=False)
    check("list file absent", p.returncode == 1 and "absent.txt" in p.stderr, p.stderr)
    os.unlink(big)


def expect_fail(name, path, *cmds):
    for src in (path, "pipe:cat '%s'" % path):  # mapped, and read as a stream
        for cmd in cmds or (("ls",), ("info",), ("validate",)):
            p = run(*cmd, src, ok=False)
            check(name + " " + cmd[0], p.returncode == 1, "exit %d" % p.returncode)
            check(name + " " + cmd[0] + " message", "tar: " in p.stdout + p.stderr,
                  p.stdout + p.stderr)


def test_streamed_commands(tmp, ten):
    """info, validate and dump of a shard read as a stream (pipe:) say what
    they say of the mapped file; of a list, each shard in turn."""
    path = os.path.join(tmp, "streamed.tar")
    npy = os.path.join(VEC, "npy", "f4_c.npy")
    with open(npy, "rb") as f:
        npyb = f.read()
    write_tar(path, [("a.ten", ten), ("a.npy", npyb), ("a.cls", b"1"), ("b.ten", ten),
                     ("b.TEN", ten), ("c.npy", npyb[:20])], tarfile.USTAR_FORMAT)
    src = "pipe:cat '%s'" % path
    jl = json.loads(run("info", "--json", path, ok=False).stdout)
    js = json.loads(run("info", "--json", src, ok=False).stdout)
    check("streamed info json", {**jl, "file": src} == js, "%s\n%s" % (jl, js))
    tl = run("info", path, ok=False).stdout.replace(path, "F")
    ts = run("info", src, ok=False).stdout.replace(src, "F").replace(", read as a stream", "")
    check("streamed info text", tl == ts, tl + ts)
    vl = json.loads(run("validate", "--json", path, ok=False).stdout)["files"][0]
    vs = json.loads(run("validate", "--json", src, ok=False).stdout)["files"][0]
    check("streamed validate", vs["valid"] is False and
          [e["message"] for e in vs["errors"]] == [e["message"] for e in vl["errors"]] and
          len(vs["errors"]) == 2, "%s\n%s" % (vl, vs))  # b.TEN duplicate, c.npy cut
    for m in ("a.ten", "a.npy"):
        dl = run("dump", "--json", path, m).stdout
        ds = run("dump", "--json", src, m).stdout
        check("streamed dump " + m, dl == ds and dl, ds)
    p = run("dump", src, "nope.npy", ok=False)
    check("streamed dump missing", p.returncode == 1 and "no member nope.npy" in p.stderr,
          p.stderr)
    lst = os.path.join(tmp, "stream{ed,ed}.tar")
    both = json.loads(run("info", "--json", lst, ok=False).stdout)
    check("info of a list", [b["file"] for b in both] == [path, path] and both[0] == jl,
          str(both)[:300])
    v = json.loads(run("validate", "--json", lst + "::" + src, ok=False).stdout)
    check("validate of a list", [f["file"] for f in v["files"]] == [path, path, src], str(v))
    # convert of a streamed shard: the mapped one's bytes, copied or re-encoded
    good = os.path.join(tmp, "streamed-good.tar")
    write_tar(good, [("a.ten", ten), ("a.npy", npyb), ("a.cls", b"1"), ("b.ten", ten)],
              tarfile.USTAR_FORMAT)
    for extra in ((), ("--member-to", "safetensors")):
        outs = []
        for k, inp in enumerate((good, "pipe:cat '%s'" % good)):
            o = os.path.join(tmp, "streamed-out-%d.tar" % k)
            run("convert", "--force", *extra, inp, o)
            with open(o, "rb") as f:
                outs.append(f.read())
        check("streamed convert %s" % (extra,), outs[0] == outs[1] and outs[0], str(extra))
    cut = os.path.join(tmp, "streamed-cut.tar")
    with open(good, "rb") as f, open(cut, "wb") as g:
        g.write(f.read()[:1500])
    o = os.path.join(tmp, "streamed-cut-out.tar")
    p = run("convert", "pipe:cat '%s'" % cut, o, ok=False)
    check("streamed convert of a cut shard", p.returncode == 1 and "read as a stream" in p.stderr
          and not os.path.exists(o), p.stderr)
    listfile = os.path.join(tmp, "streamed.list")
    with open(listfile, "w") as f:
        f.write("# two\n%s\n\n%s\n" % (lst, good))
    fromfile = json.loads(run("info", "--json", "@" + listfile, ok=False).stdout)
    check("info of a list file", [b["file"] for b in fromfile] == [path, path, good] and
          fromfile[0] == jl, str(fromfile)[:300])
    v = json.loads(run("validate", "--json", "@" + listfile, ok=False).stdout)
    check("validate of a list file", [f["file"] for f in v["files"]] == [path, path, good], str(v))
    with open(listfile, "w") as f:
        f.write("%s\n%s\n" % (path, src))
    p = run("info", "@" + listfile, ok=False)
    check("a command in a list file is not run", p.returncode == 1 and "is not run" in p.stderr,
          p.stderr)


def run_stdin(data_path, piped, *args):
    """tensio ARGS with standard input a regular file (read as a stream, in
    place) or a pipe (read into memory)."""
    with open(data_path, "rb") as f:
        if not piped:
            return subprocess.run([TENSIO, *args], stdin=f, capture_output=True, text=True)
        return subprocess.run([TENSIO, *args], input=f.read().decode("latin-1"),
                              capture_output=True, text=True, encoding="latin-1")


def test_stdin(tmp, ten):
    """'-' holding a shard is read as one (ls, info, validate, dump, convert),
    from a file given as standard input and from a pipe; '-' holding a tensor
    file is that file, as before."""
    path = os.path.join(tmp, "stdin.tar")
    npy = os.path.join(VEC, "npy", "f4_c.npy")
    with open(npy, "rb") as f:
        npyb = f.read()
    write_tar(path, [("a.ten", ten), ("a.npy", npyb), ("a.cls", b"1"), ("b.ten", ten)],
              tarfile.USTAR_FORMAT)
    want_ls = json.loads(run("ls", "--json", path).stdout)
    want_info = json.loads(run("info", "--json", path).stdout)
    want_dump = run("dump", "--json", path, "a.npy").stdout
    conv = os.path.join(tmp, "stdin-want.tar")
    run("convert", "--member-to", "safetensors", path, conv)
    with open(conv, "rb") as f:
        want_conv = f.read()
    for piped in (False, True):
        how = "pipe" if piped else "file"
        p = run_stdin(path, piped, "ls", "--json", "-")
        got = json.loads(p.stdout) if p.returncode == 0 else None
        check("ls - (%s)" % how, p.returncode == 0 and {**got, "file": path} == want_ls,
              p.stderr)
        p = run_stdin(path, piped, "info", "--json", "-")
        got = json.loads(p.stdout) if p.returncode == 0 else {}
        check("info - (%s)" % how, p.returncode == 0 and {**got, "file": path} == want_info,
              p.stdout[:300] + p.stderr)
        p = run_stdin(path, piped, "validate", "-")
        check("validate - (%s)" % how, p.returncode == 0, p.stderr)
        p = run_stdin(path, piped, "dump", "--json", "-", "a.npy")
        check("dump - (%s)" % how, p.returncode == 0 and p.stdout == want_dump, p.stderr)
        o = os.path.join(tmp, "stdin-out-%s.tar" % how)
        p = run_stdin(path, piped, "convert", "--member-to", "safetensors", "-", o)
        ok = p.returncode == 0 and os.path.exists(o)
        if ok:
            with open(o, "rb") as f:
                ok = f.read() == want_conv
        check("convert - (%s)" % how, ok, p.stderr)
        p = run_stdin(npy, piped, "ls", "--json", "-")
        check("ls - of an .npy (%s)" % how, p.returncode == 0 and
              json.loads(p.stdout)["tensors"] == json.loads(run("ls", "--json", npy).stdout)
              ["tensors"], p.stdout[:200] + p.stderr)
    cut = os.path.join(tmp, "stdin-cut.tar")
    with open(path, "rb") as f, open(cut, "wb") as g:
        g.write(f.read()[:1500])
    for piped in (False, True):
        p = run_stdin(cut, piped, "validate", "-")
        check("validate - of a cut shard (%s)" % ("pipe" if piped else "file"),
              p.returncode == 1 and "tar" in p.stderr + p.stdout, p.stderr + p.stdout)


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
    # compressed shards: cut short, corrupted, and a bomb past --max-dense-bytes
    gz = os.path.join(tmp, "c.tar.gz")
    data = gzip.compress(good)
    with open(gz, "wb") as f:
        f.write(data[:len(data) // 2])
    p = run("ls", gz, ok=False)
    check("gzip cut short", p.returncode == 1 and "gzip stream: the data end inside it"
          in p.stderr, p.stderr)
    bad = bytearray(data)
    bad[len(bad) // 2] ^= 0xff
    with open(gz, "wb") as f:
        f.write(bytes(bad))
    p = run("ls", gz, ok=False)
    check("gzip corrupted", p.returncode == 1 and "gzip stream" in p.stderr, p.stderr)
    bomb = os.path.join(tmp, "bomb.tar.gz")
    with open(bomb, "wb") as f:
        f.write(gzip.compress(good + bytes(8 << 20)))
    p = run("ls", "--max-dense-bytes", "1M", bomb, ok=False)
    check("gzip bomb: a limit", p.returncode == 1 and "more than max_dense_bytes" in p.stderr
          and os.path.getsize(bomb) < 64 << 10, p.stderr)
    p = run("ls", bomb, ok=False)
    check("the bomb within the default limit", p.returncode == 0, p.stderr)
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


def tar_members(path):
    """[(name, bytes, TarInfo)] of the regular files, as tarfile reads them."""
    out = []
    with tarfile.open(path) as t:
        for m in t:
            if m.isfile():
                out.append((m.name, t.extractfile(m).read(), m))
    return out


def gnu_tar(*args, ok=True):
    p = subprocess.run(["tar", *args], capture_output=True, text=True)
    if ok and p.returncode != 0:
        raise AssertionError("tar %s: %s" % (" ".join(args), p.stderr))
    return p


def no_temp_files(name, d):
    left = [f for f in os.listdir(d) if ".tio-" in f]
    check(name + " no temporary files", not left, str(left))


def fresh(tmp, name):
    d = os.path.join(tmp, name)
    os.mkdir(d)
    return d


def test_write_shard(tmp):
    """convert --shard: tarfile and GNU tar read every member intact."""
    src = fresh(tmp, "w_src")
    files = []
    for i, (data, _, _) in enumerate(ten_members(fresh(tmp, "w_ten"))):
        for ext, d in (("ten", data), ("cls", b"%d" % i), ("json", b'{"i": %d}' % i)):
            f = os.path.join(src, "%06d.%s" % (i, ext))
            with open(f, "wb") as fh:
                fh.write(d)
            files.append(f)
    out = os.path.join(tmp, "w.tar")
    js = json.loads(run("convert", "--json", "--shard", out, *files).stdout)
    check("shard json", js["members"] == len(files) and js["reencoded"] == 0, str(js))
    with open(out, "rb") as f:
        raw = f.read()
    check("shard size", len(raw) % 10240 == 0 and js["bytes"] == len(raw), str(len(raw)))
    got = tar_members(out)
    check("shard tarfile names", [n for n, _, _ in got] == [os.path.basename(f) for f in files])
    for f, (n, d, ti) in zip(files, got):
        with open(f, "rb") as fh:
            check("shard tarfile bytes " + n, fh.read() == d)
        check("shard header " + n, (ti.mode, ti.uid, ti.gid, ti.mtime, ti.uname, ti.gname) ==
              (0o644, 0, 0, 0, "", ""), str((ti.mode, ti.uid, ti.mtime, ti.uname)))
    check("shard is ustar", b"ustar\x0000" in raw[:512] and raw[156:157] == b"0")
    lst = gnu_tar("-tvf", out).stdout.splitlines()
    check("gnu tar -tv", len(lst) == len(files) and all(" 0/0 " in ln for ln in lst), str(lst[:2]))
    xdir = os.path.join(tmp, "w_x")
    os.mkdir(xdir)
    gnu_tar("-xf", out, "-C", xdir)
    for f in files:
        with open(f, "rb") as a, open(os.path.join(xdir, os.path.basename(f)), "rb") as b:
            check("gnu tar -x " + f, a.read() == b.read())
    # the same inputs, the same bytes
    again = os.path.join(tmp, "w2.tar")
    run("convert", "--shard", again, *files)
    with open(again, "rb") as f:
        check("shard deterministic", f.read() == raw)
    # tensio reads its own shard as tarfile does
    ls = json.loads(run("ls", "--json", out).stdout)
    check("shard samples", ls["samples"] == len(files) // 3, str(ls["samples"]))
    v = run("validate", out)
    check("shard validates", v.returncode == 0, v.stdout)
    # extract gives the files back, byte for byte
    edir = os.path.join(tmp, "w_e")
    run("extract", out, edir)
    for f in files:
        with open(f, "rb") as a, open(os.path.join(edir, os.path.basename(f)), "rb") as b:
            check("extract " + f, a.read() == b.read())
    no_temp_files("extract", edir)
    # refusals: nothing written, no temporary files left
    bad = os.path.join(tmp, "bad.tar")
    noext = os.path.join(src, "README")
    with open(noext, "wb") as fh:
        fh.write(b"x")
    for args, code, needle in (
            ((bad, files[0], noext), 1, "KEY.EXT"),
            ((bad, files[0], files[0]), 1, "both be member"),
            ((bad, files[0], os.path.join(tmp, "missing.ten")), 1, "missing.ten"),
            ((bad,), 2, "missing FILE"),
            ((out, files[0]), 1, "already exists")):
        p = run("convert", "--shard", *args, ok=False)
        check("shard refused %s" % needle, p.returncode == code and needle in p.stderr,
              "%d %s" % (p.returncode, p.stderr))
    check("refused shard not written", not os.path.exists(bad))
    no_temp_files("refused", tmp)
    p = run("convert", files[0], os.path.join(tmp, "x.npy"), "--member-to", "npy", ok=False)
    check("member-to needs a shard", p.returncode == 2 and "applies to shards" in p.stderr)
    p = run("convert", out, os.path.join(tmp, "x.npy"), ok=False)
    check("shard to a tensor file", p.returncode == 2 and "extract" in p.stderr, p.stderr)
    p = run("convert", out, os.path.join(tmp, "y.tar"), "--to", "npy", ok=False)
    check("--to on shards", p.returncode == 2 and "--member-to" in p.stderr, p.stderr)
    # one tensor file to a .tar: a shard of one member
    one = os.path.join(tmp, "one.tar")
    run("convert", files[0], one)
    check("file to tar", [n for n, _, _ in tar_members(one)] == [os.path.basename(files[0])])
    return files


def same_values(a, b):
    """dump --json tensors equal in shape and values (names and dtype aside:
    formats drop names, --widen changes dtypes)."""
    if len(a) != len(b):
        return False
    key = (lambda t: t["name"]) if all(t["name"] for t in a + b) else (lambda t: t["index"])
    for x, y in zip(sorted(a, key=key), sorted(b, key=key)):
        if x["shape"] != y["shape"] or x["truncated"] or y["truncated"]:
            return False
        vx = [str(v) if isinstance(v, str) else float(v) for v in x["values"]]
        vy = [str(v) if isinstance(v, str) else float(v) for v in y["values"]]
        if vx != vy:
            return False
    return True


LOSS = ("--drop-names", "--widen", "--drop-metadata")


def test_member_to(tmp):
    """shard -> shard: tensor members re-encoded, the others byte for byte."""
    tens = ten_members(fresh(tmp, "m_ten"))
    members = []
    for i, (data, _, dump) in enumerate(tens):
        key = ("train/" + "long" * 40 + "/%06d" if i % 2 else "train/%06d") % i
        members += [(key + ".ten", data), (key + ".cls", b"%d" % i)]
    src = os.path.join(tmp, "m_src.tar")
    write_tar(src, members, tarfile.PAX_FORMAT, dirs=("train/",))
    # no --member-to: every member as it was (long names through pax 'x')
    same = os.path.join(tmp, "m_same.tar")
    run("convert", src, same)
    got = tar_members(same)
    check("copy members", [(n, d) for n, d, _ in got] == members)
    with open(same, "rb") as f:
        raw = f.read()
    check("copy pax only for long names", raw.count(b"././@PaxHeader") == 2 * (len(tens) // 2),
          str(raw.count(b"././@PaxHeader")))
    names = gnu_tar("-tf", same).stdout.splitlines()
    check("gnu tar long names", names == [n for n, _ in members], str(names[:3]))
    dumps = {key: json.loads(run("dump", "--json", src, key).stdout)["tensors"]
             for key, _ in members if key.endswith(".ten")}
    for fmt, ext in (("tenbin", "ten"), ("npz", "npz"), ("safetensors", "safetensors"),
                     ("btf", "btf"), ("zmsg", "zmsg")):
        out = os.path.join(tmp, "m_%s.tar" % ext)
        p = run("convert", src, out, "--member-to", fmt, ok=False)
        if p.returncode != 0:  # a loss: named, with the option(s) that allow it
            check("member-to %s refusal" % fmt, p.returncode == 1 and "hint: use --" in p.stderr
                  and not os.path.exists(out), p.stderr)
            p = run("convert", src, out, "--member-to", fmt, *LOSS)
        got = tar_members(out)
        want = [(n[:-3] + ext if n.endswith(".ten") else n) for n, _ in members]
        check("member-to %s names" % fmt, [n for n, _, _ in got] == want, str(got[:2]))
        for (n, d), (gn, gd, _) in zip(members, got):
            if not n.endswith(".ten"):
                check("member-to %s kept %s" % (fmt, n), gd == d)
                continue
            t = json.loads(run("dump", "--json", out, gn).stdout)["tensors"]
            check("member-to %s values %s" % (fmt, gn), same_values(t, dumps[n]),
                  "%s != %s" % (t[:1], dumps[n][:1]))
    p = run("convert", src, os.path.join(tmp, "m_gguf.tar"), "--member-to", "gguf", ok=False)
    check("member-to gguf lossy", p.returncode == 1 and "gguf" in p.stderr, p.stderr)
    check("member-to gguf not written", not os.path.exists(os.path.join(tmp, "m_gguf.tar")))
    p = run("convert", src, os.path.join(tmp, "m_no.tar"), "--member-to", "nosuch", ok=False)
    check("member-to unknown", p.returncode == 2 and "nosuch" in p.stderr, p.stderr)


def test_member_to_npy(tmp):
    """One tensor per member: --member-to npy, extracted, read by numpy."""
    import numpy as np
    vecs = [os.path.join(VEC, "tenbin", f) for f in
            ("dtype_float32.ten", "dtype_int64.ten", "dtype_uint8.ten", "dtype_float64.ten")]
    vecs = [v for v in vecs if os.path.exists(v)]
    shard = os.path.join(tmp, "n.tar")
    run("convert", "--shard", shard, *vecs)
    out = os.path.join(tmp, "n_npy.tar")
    run("convert", shard, out, "--member-to", "npy", "--drop-names")
    d = os.path.join(tmp, "n_x")
    run("extract", out, d)
    for v in vecs:
        stem = os.path.basename(v)[:-4]
        a = np.load(os.path.join(d, stem + ".npy"))
        t = json.loads(run("dump", "--json", v).stdout)["tensors"][0]
        check("npy shape " + stem, list(a.shape) == t["shape"], str(a.shape))
        check("npy dtype " + stem, a.dtype.name == t["dtype"], a.dtype.name)
        want = np.array([float(x) if isinstance(x, str) else x for x in t["values"]],
                        dtype=a.dtype).reshape(a.shape)
        check("npy values " + stem, np.array_equal(a, want, equal_nan=a.dtype.kind == "f"))
    # extract --member-to back to tenbin: the original tensors
    d2 = os.path.join(tmp, "n_ten")
    run("extract", "--member-to", "ten", out, d2)
    for v in vecs:
        stem = os.path.basename(v)[:-4]
        a = json.loads(run("dump", "--json", os.path.join(d2, stem + ".ten")).stdout)["tensors"]
        b = json.loads(run("dump", "--json", v).stdout)["tensors"]
        check("extract member-to " + stem, same_values(a, b))


def test_extract_hostile(tmp):
    outside = os.path.join(tmp, "outside")
    os.mkdir(outside)
    names = ["../evil1.txt", "/tmp/evil2_%d.txt" % os.getpid(), "a/../../evil3.txt",
             "ok/good.txt", "link/evil4.txt", "f.txt", "f.txt/x.txt", "./dot/g.txt", "a/."]
    shard = os.path.join(tmp, "h.tar")
    write_tar(shard, [(n, b"payload") for n in names], tarfile.PAX_FORMAT)
    d = os.path.join(tmp, "h_x")
    os.mkdir(d)
    os.symlink(outside, os.path.join(d, "link"))
    p = run("extract", shard, d, ok=False)
    check("hostile exit", p.returncode == 1, p.stderr)
    for n in ("evil1.txt", "evil3.txt", "evil4.txt"):
        check("hostile " + n, not os.path.exists(os.path.join(tmp, n)) and
              not os.path.exists(os.path.join(outside, n)))
    check("hostile absolute", not os.path.exists("/tmp/evil2_%d.txt" % os.getpid()))
    check("hostile messages", p.stderr.count("refusing member") == 4 and
          p.stderr.count("symbolic link or a file") == 2, p.stderr)
    check("hostile count", "6 of 9 members not written" in p.stderr, p.stderr)
    for n in ("ok/good.txt", "f.txt", "dot/g.txt"):
        with open(os.path.join(d, n), "rb") as f:
            check("hostile kept " + n, f.read() == b"payload")
    no_temp_files("hostile", d)
    # an existing file: refused without --force, replaced with it
    g = os.path.join(d, "ok", "good.txt")
    with open(g, "wb") as f:
        f.write(b"old")
    p = run("extract", shard, d, ok=False)
    with open(g, "rb") as f:
        check("no clobber", f.read() == b"old" and "already exists" in p.stderr)
    run("extract", "--force", os.path.join(tmp, "w.tar"), d)
    p = run("extract", "--force", shard, d, ok=False)
    with open(g, "rb") as f:
        check("--force replaces", f.read() == b"payload")
    check("--force still refuses escapes", not os.path.exists(os.path.join(outside, "evil4.txt")))
    p = run("extract", os.path.join(tmp, "nope.tar"), d, ok=False)
    check("extract missing shard", p.returncode == 1, p.stderr)
    p = run("extract", shard, ok=False)
    check("extract usage", p.returncode == 2, p.stderr)


def stream(tmp, name, recv_args, send_args, recv_env=None):
    """tensio recv (bound on an ipc endpoint) and tensio send: (recv, send)."""
    ep = "ipc://" + os.path.join(tmp, name + ".ipc")
    r = subprocess.Popen([TENSIO, "recv", "--bind", ep, "--timeout", "20", *recv_args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, **recv_env) if recv_env else None)
    for _ in range(200):  # until it is bound
        if os.path.exists(ep[len("ipc://"):]):
            break
        import time
        time.sleep(0.05)
    sp = run("send", ep, *send_args, ok=False)
    out, err = r.communicate(timeout=60)
    return subprocess.CompletedProcess(r.args, r.returncode, out, err), sp


def test_stream(tmp):
    """send SHARD.tar: a message per sample (or --batch samples stacked);
    recv --samples-per-shard: the messages written back into shards."""
    import hashlib
    import numpy as np
    d = fresh(tmp, "s_src")
    rng = np.random.default_rng(7)
    samples, files = [], []
    for i in range(5):
        img = rng.standard_normal((2, 3)).astype("<f4")
        cls = np.arange(4, dtype="<i8") * (i + 1)
        samples.append((img, cls))
        for ext, a in (("img.npy", img), ("cls.npy", cls)):
            files.append(os.path.join(d, "%06d.%s" % (i, ext)))
            np.save(files[-1], a)
        files.append(os.path.join(d, "%06d.txt" % i))
        with open(files[-1], "w") as f:
            f.write("sample %d" % i)
    shard = os.path.join(tmp, "s.tar")
    run("convert", "--shard", shard, *files)

    def sha(a):
        return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()

    def received(p):
        return [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]

    r, sp = stream(tmp, "one", ("--count", "5", "--json", "--hash"), (shard,))
    check("stream send", sp.returncode == 0 and sp.stdout.count("sent ") == 5, sp.stderr)
    check("stream send labels", "s.tar:000000 " in sp.stdout and "s.tar:000004 " in sp.stdout,
          sp.stdout)
    msgs = received(r)
    check("stream recv", r.returncode == 0 and len(msgs) == 5, r.stderr)
    for m, (img, cls) in zip(msgs, samples):
        t = m["tensors"]
        check("stream sample tensors", [x["shape"] for x in t] == [[2, 3], [4]] and
              [x["sha256"] for x in t] == [sha(img), sha(cls)], str(t))
    # --batch 2 over tensorcom: fields stacked, the last batch partial
    r, sp = stream(tmp, "batch", ("--count", "3", "--json", "--hash"),
                   ("--proto", "tensorcom", "--batch", "2", shard))
    msgs = received(r)
    check("stream batch", r.returncode == 0 and sp.returncode == 0 and len(msgs) == 3,
          r.stderr + sp.stderr)
    for k, m in enumerate(msgs):
        group = samples[2 * k:2 * k + 2]
        want = [np.stack([g[0] for g in group]), np.stack([g[1] for g in group])]
        t = m["tensors"]
        check("stream batch %d" % k, [x["shape"] for x in t] == [list(w.shape) for w in want]
              and [x["sha256"] for x in t] == [sha(w) for w in want], str(t))
    # the shard read as a stream (pipe:COMMAND, tio_shard_stream): the same batches
    r, sp = stream(tmp, "piped", ("--count", "3", "--json", "--hash"),
                   ("--proto", "tensorcom", "--batch", "2", "pipe:cat " + shard))
    check("stream piped", r.returncode == 0 and sp.returncode == 0 and
          [[x["sha256"] for x in m["tensors"]] for m in received(r)] ==
          [[x["sha256"] for x in m["tensors"]] for m in msgs], r.stderr + sp.stderr)
    # a shard cut short in the command's output: an error naming it, exit 1
    p = run("send", "--timeout", "5", "ipc://" + os.path.join(tmp, "cut.ipc"), "--batch", "2",
            "pipe:head -c 1500 " + shard, ok=False)
    check("stream piped, cut short", p.returncode == 1 and "pipe:head" in p.stderr, p.stderr)
    # back into shards: 2 samples per shard
    pat = os.path.join(tmp, "rx-%04d.tar")
    r, sp = stream(tmp, "shards", ("--count", "5", "-o", pat, "--samples-per-shard", "2"),
                   (shard,))
    check("stream to shards", r.returncode == 0 and sp.returncode == 0, r.stderr)
    got = []
    for k in range(3):
        path = pat.replace("%04d", "%04d" % k)
        mem = tar_members(path)
        got += [n for n, _, _ in mem]
        x = fresh(tmp, "rx%d" % k)
        run("extract", path, x)
        for n, _, _ in mem:
            i = int(n[:6])
            ls = json.loads(run("ls", "--json", "--hash", os.path.join(x, n)).stdout)["tensors"]
            check("stream shard member " + n, [t["sha256"] for t in ls] ==
                  [sha(samples[i][0]), sha(samples[i][1])], str(ls))
    check("stream shard names", got == ["%06d.ten" % i for i in range(5)], str(got))
    check("stream no fourth shard", not os.path.exists(pat.replace("%04d", "0003")))
    # fan-out: one sender PUSHes to two bound receivers (a brace URL); every
    # sample reaches exactly one of them (how many each gets depends on when
    # their connections complete: round-robin among the completed ones)
    eps = ["ipc://" + os.path.join(tmp, "fan%d.ipc" % k) for k in (1, 2)]
    rs = [subprocess.Popen([TENSIO, "recv", "--bind", ep, "--timeout", "3", "--json",
                            "--hash"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True) for ep in eps]
    import time
    for _ in range(200):
        if all(os.path.exists(ep[len("ipc://"):]) for ep in eps):
            break
        time.sleep(0.05)
    sp = run("send", "ipc://" + os.path.join(tmp, "fan{1..2}.ipc"), shard, shard, ok=False)
    outs = [r.communicate(timeout=60) for r in rs]
    check("fan-out send", sp.returncode == 0 and sp.stdout.count("sent ") == 10, sp.stderr)
    got = []
    for r, (out, err) in zip(rs, outs):
        check("fan-out recv", r.returncode == 0, err)
        got += [tuple(t["sha256"] for t in json.loads(ln)["tensors"])
                for ln in out.splitlines() if ln.startswith("{")]
    want = [(sha(img), sha(cls)) for img, cls in samples] * 2
    check("fan-out: every sample once", sorted(got) == sorted(want),
          "%d received of %d" % (len(got), len(want)))
    # refusals
    p = run("send", "ipc://" + os.path.join(tmp, "x.ipc"), "--batch", "2", files[0], ok=False)
    check("--batch needs a shard", p.returncode == 2 and "shards" in p.stderr, p.stderr)
    p = run("recv", "ipc://" + os.path.join(tmp, "y.ipc"), "-o", "x-%d.ten",
            "--samples-per-shard", "2", ok=False)
    check("--samples-per-shard needs .tar", p.returncode == 2 and ".tar" in p.stderr, p.stderr)
    odd = os.path.join(d, "000009.img.npy")
    np.save(odd, np.zeros((3, 3), dtype="<f4"))
    bad = os.path.join(tmp, "s_bad.tar")
    run("convert", "--shard", bad, files[0], odd)
    p = run("send", "ipc://" + os.path.join(tmp, "z.ipc"), "--batch", "2", bad, ok=False)
    check("--batch shapes differ", p.returncode == 1 and "cannot be stacked" in p.stderr,
          p.stderr)


def test_stream_members(tmp, ten):
    """send --members: the members no tensor format reads travel too, named
    by their extension (.cls as an int64 scalar, others as uint8 bytes),
    mapped and streamed, stacked by --batch; recv --members writes them
    back: keys, member names and bytes as in the shard (a .cls as its
    integer's text); a .cls that is no integer is refused by name."""
    import numpy as np
    jpg = bytes(range(256)) * 3 + b"\0\xff"
    members = []
    for i in range(4):
        k = "img%02d" % i
        members += [(k + ".x.ten", ten), (k + ".cls", b"%d\n" % (i * 7 - 3)),
                    (k + ".json", b'{"i": "%s"}' % (b"x" * i)), (k + ".jpg", jpg[i:] + jpg[:i])]
    shard = os.path.join(tmp, "m.tar")
    write_tar(shard, members, tarfile.USTAR_FORMAT)
    n_ten = len(json.loads(run("ls", "--json", shard).stdout)["tensors"]) // 4  # per sample

    def rows(p):
        return [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]

    for how, src in (("mapped", shard), ("streamed", "pipe:cat " + shard)):
        r, sp = stream(tmp, "mem-" + how, ("--count", "4", "--json", "--hash"),
                       ("--members", "--keys", src))
        msgs = rows(r)
        check("members %s: sent" % how, r.returncode == 0 and sp.returncode == 0 and
              len(msgs) == 4, r.stderr + sp.stderr)
        for i, m in enumerate(msgs):
            t = {x.get("name"): x for x in m["tensors"]}
            ok = (t.get("cls", {}).get("dtype") == "int64" and t["cls"]["shape"] == [] and
                  t.get("json", {}).get("shape") == [len(b'{"i": "%s"}' % (b"x" * i))] and
                  t.get("jpg", {}).get("dtype") == "uint8" and t["jpg"]["shape"] == [770] and
                  t.get("jpg", {}).get("sha256") == hashlib.sha256(jpg[i:] + jpg[:i]).hexdigest()
                  and len(m["tensors"]) == n_ten + 4)  # + cls, json, jpg, __key__
            check("members %s: message %d" % (how, i), ok, str(m["tensors"]))
    # the integer's value, and the bytes: recv --members back into shards
    pat = os.path.join(tmp, "mrx-%d.tar")
    r, sp = stream(tmp, "mem-back", ("--count", "4", "-o", pat, "--samples-per-shard", "4",
                                     "--members"), ("--members", "--keys", shard))
    check("members back: rc", r.returncode == 0 and sp.returncode == 0, r.stderr + sp.stderr)
    got = {n: b for n, b, _ in tar_members(pat % 0)}
    want = {}
    for i in range(4):
        k = "img%02d" % i
        want[k + ".cls"] = b"%d" % (i * 7 - 3)
        want[k + ".json"] = b'{"i": "%s"}' % (b"x" * i)
        want[k + ".jpg"] = jpg[i:] + jpg[:i]
    check("members back: members", all(got.get(n) == b for n, b in want.items()) and
          sorted(got) == sorted(list(want) + ["img%02d.ten" % i for i in range(4)]),
          str(sorted(got)))
    x = fresh(tmp, "mrx")
    run("extract", pat % 0, x)
    lt = json.loads(run("ls", "--json", "--hash", os.path.join(x, "img02.ten")).stdout)
    lo = json.loads(run("ls", "--json", "--hash", shard).stdout)
    check("members back: tensors", [t["sha256"] for t in lt["tensors"]] ==
          [t["sha256"] for t in lo["tensors"]][:n_ten], str(lt))
    # --batch stacks: cls [4] int64; equal-length members stack, others refuse
    fixed = os.path.join(tmp, "mfixed.tar")
    write_tar(fixed, [m for m in members if not m[0].endswith(".json")], tarfile.USTAR_FORMAT)
    r, sp = stream(tmp, "mem-batch", ("--count", "1", "--json", "--hash"),
                   ("--members", "--batch", "4", fixed))
    msgs = rows(r)
    t = {x.get("name"): x for x in msgs[0]["tensors"]} if msgs else {}
    want_cls = np.array([i * 7 - 3 for i in range(4)], dtype="<i8")
    check("members batch", sp.returncode == 0 and t.get("cls", {}).get("shape") == [4] and
          t["cls"]["sha256"] == hashlib.sha256(want_cls.tobytes()).hexdigest() and
          t.get("jpg", {}).get("shape") == [4, 770], str(msgs))
    p = run("send", "--timeout", "5", "ipc://" + os.path.join(tmp, "mb.ipc"), "--members",
            "--batch", "4", shard, ok=False)
    check("members batch, lengths differ", p.returncode == 1 and "cannot be stacked" in p.stderr,
          p.stderr)
    # hostile: a .cls that is not an integer, a member without an extension
    for name, data, why in (("a.cls", b"3.5", "not an integer"),
                            ("a.cls", b"99999999999999999999", "not an integer"),
                            ("a.id", b"", "not an integer")):
        bad = os.path.join(tmp, "mbad.tar")
        write_tar(bad, [("a.x.ten", ten), (name, data)], tarfile.USTAR_FORMAT)
        p = run("send", "--timeout", "5", "ipc://" + os.path.join(tmp, "mbad.ipc"), "--members",
                bad, ok=False)
        check("members refuse %r" % data, p.returncode == 1 and why in p.stderr and
              name in p.stderr, p.stderr)
    p = run("send", "ipc://" + os.path.join(tmp, "u.ipc"), "--members",
            os.path.join(VEC, "tenbin", "dtype_float32.ten"), ok=False)
    check("--members needs a shard", p.returncode == 2 and "shards" in p.stderr, p.stderr)
    p = run("recv", "ipc://" + os.path.join(tmp, "u2.ipc"), "--members", "-o", "x%d.ten",
            ok=False)
    check("recv --members needs --samples-per-shard", p.returncode == 2 and
          "--samples-per-shard" in p.stderr, p.stderr)


def test_select(tmp, ten):
    """--only/--exclude/--rename on a shard: globs on member names, in ls (text,
    --json, --hash, a streamed shard, a list) and convert shard -> shard (mapped
    and streamed, with --member-to); an --only that matches nothing and a
    --rename OLD never seen fail before anything is printed or written; a
    rename that would give a sample one extension twice is refused; files
    written into a shard are not filtered."""
    shard = os.path.join(tmp, "sel.tar")
    members = []
    for i in range(4):
        members += [("s%d.x.ten" % i, ten), ("s%d.cls" % i, b"%d" % i)]
    write_tar(shard, members, tarfile.USTAR_FORMAT)
    names = lambda j: [m["member"] for m in j["members"]]  # noqa: E731
    j = json.loads(run("ls", "--json", "--only", "s[12]*", "--exclude", "*.cls", shard).stdout)
    check("select: --only/--exclude members", names(j) == ["s1.x.ten", "s2.x.ten"], repr(j))
    check("select: tensors follow", [t["member"] for t in j["tensors"]] ==
          ["s1.x.ten", "s2.x.ten"], repr(j["tensors"]))
    j = json.loads(run("ls", "--json", "--rename", "s3.x.ten=t/new.y.ten", shard).stdout)
    m = [x for x in j["members"] if x["member"] == "t/new.y.ten"]
    check("select: rename shown with its key and extension", len(m) == 1 and
          m[0]["key"] == "t/new" and m[0]["ext"] == "y.ten", repr(j["members"]))
    full = run("ls", "--hash", shard).stdout.splitlines()
    part = run("ls", "--hash", "--only", "s0.*", shard).stdout.splitlines()
    check("select: --hash rows are the full listing's", len(part) == 3 and
          part[1:] == [r for r in full if r.split()[1].startswith("s0.")], repr(part))
    p = subprocess.run([TENSIO, "ls", "--only", "s2.*", "-"], stdin=open(shard, "rb"),
                       capture_output=True, text=True)
    check("select: a shard on standard input", p.returncode == 0 and
          [r.split()[1] for r in p.stdout.splitlines()[1:]] == ["s2.x.ten", "s2.cls"], p.stdout)
    shutil.copy(shard, os.path.join(tmp, "sel2.tar"))
    p = run("ls", "--only", "s1.x.ten", os.path.join(tmp, "sel{,2}.tar"))
    check("select: a list", p.stdout.count("s1.x.ten") == 2 and "s0." not in p.stdout, p.stdout)
    p = run("ls", "--only", "s1.*", "--only", "zz*", os.path.join(tmp, "sel{,2}.tar"), ok=False)
    check("select: a list, a glob matching in no shard", p.returncode == 1 and
          "--only 'zz*': no member matches" in p.stderr, p.stderr)
    for args, msg in ((["--only", "nothing*"], "--only 'nothing*': no member matches"),
                      (["--rename", "zz.ten=a.ten"], "--rename: no member is named 'zz.ten'")):
        p = run("ls", *args, shard, ok=False)
        check("select: ls %s" % args, p.returncode == 1 and msg in p.stderr and
              p.stdout == "", p.stdout + p.stderr)
        out = os.path.join(tmp, "sel-bad.tar")
        p = run("convert", *args, shard, out, ok=False)
        check("select: convert %s" % args, p.returncode == 1 and msg in p.stderr and
              not os.path.exists(out), p.stderr)
    # convert: mapped, streamed, re-encoded
    out = os.path.join(tmp, "sel-out.tar")
    run("convert", "--exclude", "s0.*", "--rename", "s1.cls=s1.label", shard, out)
    with tarfile.open(out) as t:
        got = [(m.name, t.extractfile(m).read()) for m in t.getmembers()]
    want = [(n if n != "s1.cls" else "s1.label", d) for n, d in members if not n.startswith("s0.")]
    check("select: convert writes the selection, renamed, bytes intact", got == want,
          repr([g[0] for g in got]))
    out2 = os.path.join(tmp, "sel-out2.tar")
    run("convert", "--only", "*.ten", "--rename", "s2.x.ten=z.q.ten", "--member-to", "npy",
        "--drop-names",
        "pipe:cat " + shard, out2)
    with tarfile.open(out2) as t:
        got = t.getnames()
    check("select: streamed, re-encoded, renamed then re-extended",
          got == ["s0.x.npy", "s1.x.npy", "z.q.npy", "s3.x.npy"], repr(got))
    out3 = os.path.join(tmp, "sel-out3.tar")
    p = run("convert", "--rename", "s1.x.ten=s1.CLS", shard, out3, ok=False)
    check("select: a rename giving a sample one extension twice", p.returncode == 1 and
          "twice" in p.stderr and not os.path.exists(out3), p.stderr)
    p = run("convert", "--shard", out3, "--only", "x", os.path.join(tmp, "m0.ten"), ok=False)
    check("select: files into a shard", p.returncode == 2 and "name the files" in p.stderr,
          p.stderr)


def test_env_limits(tmp):
    """TENSIO_LIMITS reaches every shard a command opens: mapped, streamed, on
    standard input, in a list, its members' containers, and what send and recv
    decode (files: tests/cli/test_cli.py t_env_limits)."""
    src = os.path.join(VEC, "tenbin", "multi_infos.ten")
    if not os.path.exists(src):
        return
    n = len(json.loads(run("ls", "--json", src).stdout)["tensors"])
    with open(src, "rb") as f:
        data = f.read()
    d = fresh(tmp, "lim")
    one = os.path.join(d, "one-0.tar")  # a member of n tensors
    write_tar(one, [("a/x.ten", data)], tarfile.USTAR_FORMAT)
    shutil.copy(one, os.path.join(d, "one-1.tar"))
    two = os.path.join(d, "two.tar")  # two members
    write_tar(two, [("a/x.ten", data), ("b/x.ten", data)], tarfile.USTAR_FORMAT)
    low = {"TENSIO_LIMITS": "max_tensors=%d" % (n - 1)}
    enough = {"TENSIO_LIMITS": "max_tensors=%d" % n}

    def both(name, *args, field="max_tensors", lo=low, hi=enough, stdin=None, out=None):
        """exit 1 naming the field under lo, 0 under hi"""
        for env, rc in ((lo, 1), (hi, 0)):
            if out and os.path.isdir(out):
                shutil.rmtree(out)
            elif out and os.path.exists(out):
                os.remove(out)
            with open(stdin if stdin else os.devnull, "rb") as f:
                p = run(*args, ok=False, env=env, stdin=f)
            said = p.stdout + p.stderr
            check("TENSIO_LIMITS %s: exit %d" % (name, rc),
                  p.returncode == rc and (rc == 0 or field in said),
                  "exit %d: %s" % (p.returncode, said[-400:]))

    both("ls", "ls", one)
    both("ls --hash", "ls", "--hash", one)
    both("info", "info", one)
    both("validate", "validate", one)
    both("dump", "dump", one, "a/x.ten")
    both("ls of a stream", "ls", "pipe:cat " + one)
    both("ls of standard input", "ls", "-", stdin=one)
    both("ls of a list", "ls", os.path.join(d, "one-{0..1}.tar"))
    out = os.path.join(d, "o.tar")
    both("convert a shard", "convert", "--member-to", "safetensors", one, out, out=out)
    for env, decoded in ((low, False), (enough, True)):  # nobody receives
        p = run("send", "--timeout", "0.2", "ipc://" + os.path.join(d, "none.ipc"), one,
                ok=False, env=env)
        check("TENSIO_LIMITS send %s" % env, p.returncode == 1 and
              ("max_tensors" in p.stderr) != decoded, p.stderr)
    p = run("ls", two, ok=False, env={"TENSIO_LIMITS": "max_tensors=1"})
    check("TENSIO_LIMITS: the hint for a shard",
          p.returncode == 1 and "hint: TENSIO_LIMITS=" in p.stderr, p.stderr)
    x = os.path.join(d, "x")
    both("extract", "extract", two, x, out=x, lo={"TENSIO_LIMITS": "max_tensors=1"},
         hi={"TENSIO_LIMITS": "max_tensors=2"})
    both("a list past max_shards", "ls", os.path.join(d, "one-{0..1}.tar"), field="max_shards",
         lo={"TENSIO_LIMITS": "max_shards=1"}, hi={"TENSIO_LIMITS": "max_shards=2"})
    p = run("extract", two, x, ok=False, env={"TENSIO_LIMITS": "max_tensors"})
    check("TENSIO_LIMITS: a bad list is a usage error", p.returncode == 2 and
          "TENSIO_LIMITS:" in p.stderr, p.stderr)
    # recv: the messages it decodes
    for env, good in ((low, 0), (enough, 1)):
        r, sp = stream(tmp, "lim", ("--count", "1", "--json", "--timeout", "2"), (src,),
                       recv_env=env)
        rows = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
        check("TENSIO_LIMITS recv %s" % env, sp.returncode == 0 and len(rows) == good and
              (good or ("max_tensors" in r.stderr and r.returncode == 1)),
              "%d %d %s" % (sp.returncode, r.returncode, r.stderr[-300:]))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(VEC, "tenbin", "dtype_float32.ten"), "rb") as f:
            ten = f.read()
        test_formats(tmp)
        test_duplicates(tmp, ten)
        test_split(tmp)
        test_brace_list(tmp, ten)
        test_streamed_commands(tmp, ten)
        test_stdin(tmp, ten)
        test_compressed(tmp)
        test_hostile(tmp, ten)
        test_write_shard(tmp)
        test_member_to(tmp)
        test_member_to_npy(tmp)
        test_extract_hostile(tmp)
        test_stream(tmp)
        test_stream_members(tmp, ten)
        test_select(tmp, ten)
        test_env_limits(tmp)
    for f in failures:
        print("FAIL:", f)
    if failures:
        sys.exit(1)
    print("ok: WebDataset shards")


main()
