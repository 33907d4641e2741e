#!/usr/bin/python3
"""http:// sources (src/source/), against real servers on 127.0.0.1.

  test_http.py TENSIO

- Debian's nginx, started here on a free port with its own configuration,
  pid, logs and temporary files in a temporary directory (no root needed),
  serves files written now with numpy: `tensio ls` of a 64 MiB safetensors
  file fetches less than 1 % of it (the bytes counted from nginx's log);
  `ls`, `ls --json`, `dump` (one tensor: also < 1 %), `convert` and `info`
  over HTTP print and write exactly what they do for the local file; .npy
  (big-endian and Fortran-order ones too: views, whose `ls` fetches the
  header only and `ls --hash` the array), .npz (no
  header hook: fetched whole), an empty file; a redirect followed, a loop
  of them refused; a 404 named with its URL; hostile files (cuts of the
  safetensors file) fail over HTTP as they fail locally.
- A server of the test's own: a body dropped half-way is resumed with
  Range (the output equal to the local one, the resumed request seen), and
  dropped every time is an error naming the URL after the retries; a
  Content-Length that disagrees with Content-Range, a body longer than the
  range asked, a size or ETag that changes between requests, a huge size
  or Content-Length: each a clear error naming the URL (the small limits,
  an endless body and a stall, are in python/tests/test_http.py).

nginx missing is a failure, never a pass."""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

from http_servers import Nginx, free_port, own_server, write_safetensors

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from clitest import lines_by_file  # noqa: E402

TENSIO = sys.argv[1]
FAILS = []
CHECKS = [0]


def check(cond, what):
    CHECKS[0] += 1
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, flush=True)


def run(*args):
    p = subprocess.run([TENSIO, *args], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


# ------------------------------------------------------------------- tests

def same_as_local(url, local, *args, what):
    rl = run(*[x if x != "@" else local for x in args])
    ru = run(*[x if x != "@" else url for x in args])
    check(rl[0] == ru[0], f"{what}: exit {ru[0]} over HTTP, {rl[0]} locally: {ru[2]}")
    check(ru[1] == rl[1].replace(local, url),
          f"{what}: output differs over HTTP:\n{ru[1][:400]}\nvs\n{rl[1][:400]}")
    return ru


def main():
    tmp = tempfile.mkdtemp(prefix="tio-http-")
    www = os.path.join(tmp, "www")
    os.makedirs(www)
    rng = np.random.default_rng(7)
    tensors = [(f"layer{i}.weight", rng.standard_normal((1024, 1024), dtype=np.float32))
               for i in range(16)]
    tensors.insert(8, ("small", np.arange(24, dtype=np.int64).reshape(2, 3, 4)))
    big = os.path.join(www, "big.safetensors")
    write_safetensors(big, tensors)
    size = os.path.getsize(big)
    np.save(os.path.join(www, "x.npy"), np.arange(300000, dtype=np.int64).reshape(1000, 300))
    np.save(os.path.join(www, "be.npy"), np.arange(50000, dtype=">f4"))
    # 4 MiB each, big-endian and Fortran-order: views read on the way out
    np.save(os.path.join(www, "be_big.npy"),
            rng.standard_normal((1024, 1024)).astype(">f4"))
    np.save(os.path.join(www, "fo_big.npy"),
            np.asfortranarray(rng.standard_normal((1024, 1024)).astype("<f4")))
    np.savez(os.path.join(www, "z.npz"), a=np.ones((100, 100), np.float32), b=np.arange(7))
    small = os.path.join(www, "small.safetensors")
    write_safetensors(small, [("a", np.arange(12, dtype=np.float32).reshape(3, 4)),
                              ("b", np.arange(200000, dtype=np.uint8))])
    open(os.path.join(www, "empty.ten"), "wb").close()

    ng = Nginx(tmp, www)
    try:
        U = ng.url
        ng.log_lines()

        # ls: the header only
        same_as_local(f"{U}/big.safetensors", big, "ls", "@", what="ls big")
        sent = ng.bytes_sent()
        check(0 < sent < size // 100, f"ls fetched {sent} of {size} bytes (expected < 1 %)")
        print(f"ls over HTTP: {sent} bytes of a {size}-byte file ({100 * sent / size:.3f} %)")
        same_as_local(f"{U}/big.safetensors", big, "ls", "--json", "@", what="ls --json big")
        ng.log_lines()

        # dump of one tensor in the middle: header and that tensor's chunk
        same_as_local(f"{U}/big.safetensors", big, "dump", "@", "small", what="dump small")
        sent = ng.bytes_sent()
        check(0 < sent < size // 100, f"dump of one tensor fetched {sent} of {size} bytes")

        # convert: every tensor, each byte once at most; the same output
        out_l, out_u = os.path.join(tmp, "l.npz"), os.path.join(tmp, "u.npz")
        rl = run("convert", big, out_l)
        ng.log_lines()
        ru = run("convert", f"{U}/big.safetensors", out_u)
        check(rl[0] == 0 and ru[0] == 0, f"convert: {rl[2]} {ru[2]}")
        check(open(out_l, "rb").read() == open(out_u, "rb").read(),
              "convert over HTTP wrote other bytes than from the local file")
        sent = ng.bytes_sent()
        check(sent <= size, f"convert fetched {sent} bytes of a {size}-byte file")
        same_as_local(f"{U}/big.safetensors", big, "info", "@", what="info big")

        for name in ("x.npy", "be.npy", "z.npz", "small.safetensors", "empty.ten"):
            local = os.path.join(www, name)
            same_as_local(f"{U}/{name}", local, "ls", "@", what=f"ls {name}")
            same_as_local(f"{U}/{name}", local, "dump", "@", what=f"dump {name}")
        ng.log_lines()
        same_as_local(f"{U}/x.npy", os.path.join(www, "x.npy"), "ls", "@", what="ls x.npy")
        sent = ng.bytes_sent()
        check(sent <= 65536, f"ls x.npy fetched {sent} bytes (the first 64 KiB at most)")
        # a big-endian or Fortran-order array: a view of the file's bytes,
        # fetched when read (its storage from the view's base), not at open
        for name in ("be_big.npy", "fo_big.npy"):
            local = os.path.join(www, name)
            same_as_local(f"{U}/{name}", local, "ls", "@", what=f"ls {name}")
            sent = ng.bytes_sent()
            check(sent <= 65536, f"ls {name} fetched {sent} bytes (the first 64 KiB at most)")
            same_as_local(f"{U}/{name}", local, "ls", "--hash", "@", what=f"ls --hash {name}")
            sent = ng.bytes_sent()
            check(sent >= os.path.getsize(local), f"ls --hash {name} fetched only {sent} bytes")
            same_as_local(f"{U}/{name}", local, "dump", "@", what=f"dump {name}")
            cl, cu = os.path.join(tmp, "l-" + name), os.path.join(tmp, "u-" + name)
            rl, ru = run("convert", local, cl), run("convert", f"{U}/{name}", cu)
            check(rl[0] == 0 and ru[0] == 0 and open(cl, "rb").read() == open(cu, "rb").read(),
                  f"convert {name} over HTTP: {ru[2]}")
            ng.log_lines()

        # GGUF (written by tensio from the safetensors file): the header only
        gg = os.path.join(www, "big.gguf")
        rc, _, err = run("convert", big, gg)
        check(rc == 0, f"convert to gguf: {err}")
        gsize = os.path.getsize(gg)
        ng.log_lines()
        same_as_local(f"{U}/big.gguf", gg, "ls", "@", what="ls big.gguf")
        sent = ng.bytes_sent()
        check(0 < sent < gsize // 100, f"ls of gguf fetched {sent} of {gsize} bytes")
        print(f"ls of gguf over HTTP: {sent} bytes of {gsize} ({100 * sent / gsize:.3f} %)")
        same_as_local(f"{U}/big.gguf", gg, "dump", "@", "small", what="dump gguf small")
        same_as_local(f"{U}/big.gguf", gg, "validate", "@", what="validate big.gguf")

        # every vector (well-formed and hostile): ls and validate as locally,
        # dump too for the formats whose header alone is fetched; validate
        # of them all in one process each way (its lines name their file),
        # ls and dump a process each
        vecs = os.environ.get("TIO_TEST_VECTORS") or os.path.join(
            os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors")
        os.symlink(os.path.abspath(vecs), os.path.join(www, "vectors"))
        n = 0
        pairs = []
        for dirpath, _, files in sorted(os.walk(vecs)):
            for fn in sorted(files):
                local = os.path.join(dirpath, fn)
                if fn.endswith((".py", ".md", ".json")) or os.path.getsize(local) > (1 << 20):
                    continue
                url = f"{U}/vectors/{os.path.relpath(local, vecs)}"
                cmds = [("ls", "@")]
                if fn.endswith(".tar"):  # a shard over HTTP: ls only, streamed
                    cmds = [("ls", "@"), ("ls", "--json", "@")]
                else:
                    pairs.append((local, url))
                if fn.endswith((".safetensors", ".npy", ".gguf")):
                    cmds.append(("dump", "@"))
                for cmd in cmds:
                    rl = run(*[local if x == "@" else x for x in cmd])
                    ru = run(*[url if x == "@" else x for x in cmd])
                    check(rl[0] == ru[0] and rl[1].replace(local, "F") == ru[1].replace(url, "F")
                          and rl[2].replace(local, "F") == ru[2].replace(url, "F"),
                          f"{cmd[0]} {url}: exit {ru[0]} {ru[2]!r}, locally {rl[0]} {rl[2]!r}")
                n += 1
        locs, urls = [lo for lo, _ in pairs], [u for _, u in pairs]
        rl, ru = run("validate", *locs), run("validate", *urls)
        per = []
        for out, names in ((rl[1], locs), (ru[1], urls)):
            by = lines_by_file(out)
            check(set(by) <= set(names), f"validate of every vector: lines not naming a file: "
                  f"{sorted(set(by) - set(names))[:3]}")
            per.append({f: [x.replace(f, "F", 1) for x in v] for f, v in by.items()})
        for lo, u in pairs:
            check(per[0].get(lo) == per[1].get(u),
                  f"validate {u}: {per[1].get(u)} over HTTP, locally {per[0].get(lo)}")
        check(rl[0] == ru[0] == 1 and not rl[2] and not ru[2] and len(per[0]) > 50,
              f"validate of every vector: exit {ru[0]} over HTTP, {rl[0]} locally, "
              f"{len(per[0])} reported; stderr {ru[2][-1000:]!r} {rl[2][-1000:]!r}")
        check(n > 100, f"only {n} vectors found in {vecs}")
        print(f"{n} vectors over HTTP as locally")

        # a shard of 48 members of 1 MiB (tensio writes it), streamed in one
        # pass: ls as locally, over HTTP and from a command; each byte once
        parts = []
        for i in range(24):
            p = os.path.join(tmp, f"{i:06d}.npy")
            np.save(p, np.full((512, 512), i, dtype=np.float32))
            q = os.path.join(tmp, f"{i:06d}.cls")
            with open(q, "w") as f:
                f.write(str(i))
            parts += [p, q]
        shard = os.path.join(www, "shard-000.tar")
        rc, _, err = run("convert", "--shard", shard, *parts)
        check(rc == 0, f"convert --shard: {err}")
        ssize = os.path.getsize(shard)
        ng.log_lines()
        same_as_local(f"{U}/shard-000.tar", shard, "ls", "@", what="ls of a shard over HTTP")
        sent = ng.bytes_sent()
        check(ssize // 2 < sent <= ssize, f"a shard streamed: {sent} bytes of {ssize}")
        same_as_local(f"{U}/shard-000.tar", shard, "ls", "--hash", "@",
                      what="ls --hash of a shard over HTTP")
        # the other shard commands read it as a stream too
        same_as_local(f"{U}/shard-000.tar", shard, "info", "--json", "@",
                      what="info --json of a shard over HTTP")
        same_as_local(f"{U}/shard-000.tar", shard, "validate", "--json", "@",
                      what="validate --json of a shard over HTTP")
        same_as_local(f"{U}/shard-000.tar", shard, "dump", "--json", "@", "000017.npy",
                      what="dump of a member of a shard over HTTP")
        for extra in ((), ("--member-to", "safetensors")):
            ol, ou = os.path.join(tmp, "cl.tar"), os.path.join(tmp, "cu.tar")
            rl = run("convert", "--force", *extra, shard, ol)
            ru = run("convert", "--force", *extra, f"{U}/shard-000.tar", ou)
            check(rl[0] == ru[0] == 0 and open(ol, "rb").read() == open(ou, "rb").read(),
                  f"convert {extra} of a shard over HTTP: {ru[2]}")
        # a brace list over HTTP: each shard under its name
        shutil.copy(shard, os.path.join(www, "shard-001.tar"))
        rc, out, err = run("ls", "--json", f"{U}/shard-{{000..001}}.tar")
        got = json.loads(out) if rc == 0 else []
        check([g["file"] for g in got] == [f"{U}/shard-000.tar", f"{U}/shard-001.tar"] and
              got[0]["tensors"] == got[1]["tensors"], f"ls of a brace list over HTTP: {err}")
        rl, rp = run("ls", shard), run("ls", f"pipe:cat '{shard}'")
        check(rl == rp, f"ls pipe:cat: {rp[2]}")
        rl, rp = run("ls", "--json", shard), run("ls", "--json", f"pipe:cat '{shard}'")
        check(rp[0] == 0 and rl[1].replace(shard, "F") == rp[1].replace(f"pipe:cat '{shard}'", "F"),
              f"ls --json pipe:cat: {rp[2]}")
        rc, _, err = run("ls", f"pipe:cat '{shard}'; exit 5")
        check(rc == 1 and "exited with status 5" in err, f"a failing command: {err}")
        # single files from a command (tio_open of pipe:COMMAND)
        for name in ("x.npy", "small.safetensors", "z.npz"):
            local = os.path.join(www, name)
            for cmd in (("ls",), ("dump",)):
                rl, rp = run(*cmd, local), run(*cmd, f"pipe:cat '{local}'")
                check(rp[0] == rl[0] == 0 and rp[1] == rl[1], f"{cmd} pipe:cat {name}: {rp[2]}")
        out_p = os.path.join(tmp, "p.npz")
        rc, _, err = run("convert", f"pipe:curl -s {U}/big.safetensors", out_p)
        check(rc == 0 and open(out_p, "rb").read() == open(out_l, "rb").read(),
              f"convert from pipe:curl: {err}")
        rc, _, err = run("ls", f"pipe:cat '{os.path.join(www, 'x.npy')}'; exit 7 # x.npy")
        check(rc == 1 and "exited with status 7" in err, f"a failing command: {err}")

        # cut shards: the errors of the local file, over HTTP and from a command
        with open(shard, "rb") as f:
            data = f.read()
        os.makedirs(os.path.join(www, "scuts"))
        for n in (700, 1024, 300000, len(data) - 20000):
            p = os.path.join(www, "scuts", f"s{n}.tar")
            with open(p, "wb") as f:
                f.write(data[:n])
            url = f"{U}/scuts/s{n}.tar"
            rl, ru, rp = run("ls", p), run("ls", url), run("ls", f"pipe:cat {p}")
            want = rl[2].replace(f"{p}: ", "").rstrip("\n")
            check(rl[0] == ru[0] == rp[0] == 1 and
                  ru[2] == f"tensio: {want[8:]} (in {url}, read as a stream)\n" and
                  rp[2] == f"tensio: {want[8:]} (in pipe:cat {p}, read as a stream)\n",
                  f"cut shard {n}: {rl[2]!r} locally, {ru[2]!r} over HTTP, {rp[2]!r} piped")

        # a redirect, a loop of them, a 404
        same_as_local(f"{U}/moved.safetensors", big, "ls", "@", what="ls through a redirect")
        rc, out, err = run("ls", f"{U}/loop.safetensors")
        check(rc == 1 and f"{U}/loop.safetensors" in err and "redirects" in err,
              f"a redirect loop: exit {rc}: {err}")
        rc, out, err = run("ls", f"{U}/missing.safetensors")
        check(rc == 1 and f"{U}/missing.safetensors: HTTP 404" in err, f"404: exit {rc}: {err}")
        rc, out, err = run("ls", f"http://127.0.0.1:{free_port()}/x.npy")
        check(rc == 1 and "127.0.0.1" in err, f"no server: exit {rc}: {err}")

        # hostile input over HTTP gets the decoder's checks: cuts of a file
        data = open(small, "rb").read()
        cuts = os.path.join(www, "cuts")
        os.makedirs(cuts)
        for n in (0, 5, 8, 9, 40, 100, len(data) // 2, len(data) - 1):
            p = os.path.join(cuts, f"c{n}.safetensors")
            with open(p, "wb") as f:
                f.write(data[:n])
            rl = run("ls", p)
            ru = run("ls", f"{U}/cuts/c{n}.safetensors")
            check(rl[0] == ru[0] != 0, f"cut {n}: exit {ru[0]} over HTTP, {rl[0]} locally")
            strip = lambda s, x: s.replace(x, "FILE")  # noqa: E731
            check(strip(rl[2], p) == strip(ru[2], f"{U}/cuts/c{n}.safetensors"),
                  f"cut {n}: {ru[2]!r} over HTTP, {rl[2]!r} locally")
        # a header size field claiming more than the file holds
        p = os.path.join(www, "lying.safetensors")
        with open(p, "wb") as f:
            f.write(struct.pack("<Q", 1 << 40) + b"{}")
        rl, ru = run("ls", p), run("ls", f"{U}/lying.safetensors")
        check(ru[0] == 1 and rl[2].replace(p, "F") == ru[2].replace(f"{U}/lying.safetensors", "F"),
              f"lying header size: {ru[2]}")
        print(f"nginx: {CHECKS[0]} checks")
    finally:
        ng.stop()

    # ---------------------------------------------- the test's own server
    srv, S = own_server(www)
    try:
        out_d = os.path.join(tmp, "d.npz")
        rc, _, err = run("convert", f"{S}/drop-once/big.safetensors", out_d)
        check(rc == 0 and open(out_d, "rb").read() == open(out_l, "rb").read(),
              f"a dropped body resumed: exit {rc}: {err}")
        ranges = [r for m, r in srv.log if m == "drop-once"]
        starts = [int(re.match(r"bytes=(\d+)", r).group(1)) for r in ranges if r]
        ends = [r.rsplit("-", 1)[1] for r in ranges]
        check(len(ranges) == 3 and starts[2] > starts[1] > 0 and ends[2] == ends[1],
              f"drop-once: expected the first request, the dropped one and its resumption "
              f"from a later offset, saw {ranges}")

        # a shard is one streamed GET (no Range), resumed with "bytes=N-"
        local_ls = run("ls", os.path.join(www, "shard-000.tar"))[1]
        for mode in ("drop-once", "norange+drop-once"):
            srv.dropped = False
            n0 = len(srv.log)
            rc, out, err = run("ls", f"{S}/{mode}/shard-000.tar")
            ranges = [r for _, r in srv.log[n0:]]
            check(rc == 0 and out == local_ls, f"{mode}: a shard resumed after a drop: {err}")
            check(len(ranges) == 2 and ranges[0] is None and
                  re.fullmatch(r"bytes=[1-9]\d*-", ranges[1] or ""),
                  f"{mode}: expected a GET and its resumption from a later offset, saw {ranges}")

        def fails(mode, name, *want, args=("convert",), code=1):
            url = f"{S}/{mode}/{name}"
            extra = [os.path.join(tmp, f"{mode}.npz")] if args[0] == "convert" else []
            rc, _, err = run(*args, url, *extra)
            check(rc == code and url in err and all(w in err for w in want),
                  f"{mode}: exit {rc}, expected a message with {want}: {err!r}")

        fails("drop-always", "big.safetensors", "4 retries", "Transferred a partial file")
        fails("badlen", "big.safetensors", "Content-Length", "disagrees")
        fails("endless206", "big.safetensors", "more than the")
        fails("grow", "big.safetensors", "size changed")
        fails("etag", "big.safetensors", "ETag")
        fails("huge", "big.safetensors", "max_remote_bytes", args=("ls",))
        fails("hugelen", "big.safetensors", "max_remote_bytes", args=("ls",))
        rc, out, err = run("ls", f"{S}/norange/shard-000.tar")
        check(rc == 0 and out == run("ls", os.path.join(www, "shard-000.tar"))[1],
              f"a shard from a server without ranges: {err}")
        for mode, want in (("badlen", "disagrees"), ("grow", "size changed"), ("etag", "ETag")):
            srv.dropped = False  # the resumption misbehaves
            fails("drop-once+" + mode, "shard-000.tar", want, args=("ls",))
        fails("drop-always", "shard-000.tar", "4 retries", "Transferred a partial file",
              args=("ls",))
        fails("hugelen", "shard-000.tar", "max_remote_bytes", args=("ls",))
        # a server without ranges: the whole body, once
        rc, out, err = run("ls", f"{S}/norange/small.safetensors")
        check(rc == 0 and out == run("ls", small)[1], f"a server without ranges: {err}")

    finally:
        srv.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"{CHECKS[0]} checks, {len(FAILS)} failed")
    sys.exit(1 if FAILS else 0)


main()
