#!/usr/bin/python3
"""tensio's .npz against NumPy and Python's zipfile (Debian's python3-numpy).

  test_npz.py TENSIO

- np.savez and np.savez_compressed archives of every dtype tensio has (both
  byte orders, C and Fortran order, rank 0 and empty arrays, named and
  positional): `tensio ls --json --hash` gives each member's name (without
  .npy), dtype, shape and the sha256 of its C-order little-endian bytes, in
  np.load's order.
- `tensio convert x.npz y.npz` writes what np.savez writes for the same
  arrays, byte for byte; with --compress what np.savez_compressed writes;
  np.load reads them equal.
- zip variants NumPy's reader takes: data descriptors (np.savez to a stream
  that cannot seek), more than 65,535 members (the zip64 end records), a
  member that is not a .npy (skipped with a finding).
- `tensio convert a.ten b.npz`, `b.npz c.safetensors`, `ls --json --hash
  b.npz`; what .npz cannot hold is refused with a message."""
import hashlib
import io
import json
import os
import sys
import tempfile
import zipfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vectors"))
from make_npz import Stream  # noqa: E402  (a write-only file: zipfile writes data descriptors)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from clitest import failures, run, check, le_c, DTYPES, NAMES  # noqa: E402
SHAPES = [(), (0,), (5,), (3, 4), (2, 0, 3), (2, 3, 4)]


def tensio_name(dt):
    dt = np.dtype(dt)
    return "bool" if dt.kind == "b" else "%s%d" % (NAMES[dt.kind], dt.itemsize * 8)


def listing(path):
    return json.loads(run("ls", "--json", "--hash", path).stdout)["tensors"]


def check_listing(what, path, arrays):
    """arrays: [(name, array)] in the archive's order."""
    ts = listing(path)
    check(what + " count", len(ts) == len(arrays), "%d vs %d" % (len(ts), len(arrays)))
    for t, (name, a) in zip(ts, arrays):
        w = "%s %s" % (what, name)
        check(w + " name", t["name"] == name, str(t["name"]))
        check(w + " dtype", t["dtype"] == tensio_name(a.dtype), t["dtype"])
        check(w + " shape", t["shape"] == list(a.shape), str(t["shape"]))
        check(w + " sha256", t["sha256"] == hashlib.sha256(le_c(a).tobytes()).hexdigest())


def savez_bytes(arrays, compress):
    f = io.BytesIO()
    (np.savez_compressed if compress else np.savez)(f, **dict(arrays))
    return f.getvalue()


def read(path):
    with open(path, "rb") as f:
        return f.read()


def check_load(what, path, arrays):
    with np.load(path) as z:
        check(what + " np.load names", list(z.files) == [n for n, _ in arrays], str(z.files))
        for name, a in arrays:
            if name in z.files:
                b = z[name]
                check(what + " np.load " + name, b.dtype == le_c(a).dtype and
                      b.shape == a.shape and np.array_equal(b, a))


def main():
    rng = np.random.default_rng(29)
    tmp = tempfile.mkdtemp(prefix="tio-npz-")
    n = 0
    for dt in DTYPES:
        for order in "CF":
            arrays = []
            for k, shape in enumerate(SHAPES):
                base = rng.integers(0, 100, size=shape) if shape else np.array(rng.integers(0, 100))
                a = (base % 2 == 0) if dt == "?" else base.astype(dt)
                a = np.asfortranarray(a) if order == "F" else np.ascontiguousarray(a)
                arrays.append(("a%d" % k, a))
            for compress in (0, 1):
                n += 1
                what = "%s %s %s" % (dt, order, "savez_compressed" if compress else "savez")
                src = os.path.join(tmp, "a%d.npz" % n)
                with open(src, "wb") as f:
                    f.write(savez_bytes(arrays, compress))
                check_listing(what, src, arrays)
                out = os.path.join(tmp, "b%d.npz" % n)
                run("convert", *(["--compress"] if compress else []), src, out)
                want = [(name, le_c(a)) for name, a in arrays]
                check(what + " np.savez bytes", read(out) == savez_bytes(want, compress))
                check_load(what, out, want)
    print("npz: %d archives written by NumPy read and rewritten" % n)

    # positional arrays (arr_0, arr_1) and names that are not ASCII
    src = os.path.join(tmp, "pos.npz")
    a, b = np.arange(4, dtype="<i4"), np.ones((2, 2), dtype="<f8")
    np.savez(src, a, b, **{"gewicht_ä": np.arange(3, dtype="u1")})
    named = [("gewicht_ä", np.arange(3, dtype="u1")), ("arr_0", a), ("arr_1", b)]
    check_listing("positional", src, named)
    out = os.path.join(tmp, "pos2.npz")
    run("convert", src, out)
    check("positional bytes", read(out) == read(src))

    # the empty name: np.savez(**{"": a}) writes member ".npy", np.load's key
    # "" (a name, not an unnamed tensor); rewritten byte for byte
    src = os.path.join(tmp, "empty_name.npz")
    arrays = [("", np.arange(3, dtype="<i2")), ("b", np.ones(2, dtype="<f4"))]
    np.savez(src, **dict(arrays))
    check("empty name member", zipfile.ZipFile(src).namelist()[0] == ".npy")
    check_listing("empty name", src, arrays)
    out = os.path.join(tmp, "empty_name2.npz")
    run("convert", src, out)
    check("empty name bytes", read(out) == read(src))
    check_load("empty name", out, arrays)
    rows = run("ls", src).stdout.splitlines()
    check("empty name shown as \"\"", rows[1].split()[:2] == ["0", '""'], "\n".join(rows))

    # data descriptors: np.savez into a stream that cannot seek
    for compress in (0, 1):
        s = Stream()
        arrays = [("x", np.arange(10, dtype="<f4")), ("y", np.zeros((3, 0), dtype="<i8"))]
        (np.savez_compressed if compress else np.savez)(s, **dict(arrays))
        src = os.path.join(tmp, "stream%d.npz" % compress)
        with open(src, "wb") as f:
            f.write(bytes(s.buf))
        check("data descriptor flag", zipfile.ZipFile(src).infolist()[0].flag_bits & 8 != 0)
        check_listing("stream %d" % compress, src, arrays)
        p = run("validate", src, ok=False)
        check("stream %d valid" % compress, p.returncode == 0, p.stdout + p.stderr)

    # more than 65,535 members: the zip64 end records, byte-identical
    many = [("m%d" % i, np.array(i % 256, dtype="u1")) for i in range(65537)]
    src = os.path.join(tmp, "many.npz")
    with open(src, "wb") as f:
        f.write(savez_bytes(many, 0))
    ts = listing(src)
    check("65537 members", len(ts) == 65537 and ts[-1]["name"] == "m65536", str(len(ts)))
    out = os.path.join(tmp, "many2.npz")
    run("convert", src, out)
    check("65537 members: np.savez bytes", read(out) == read(src))
    print("npz: zip64 end records (65,537 members) read and rewritten")

    # a dtype .npz lacks, stored wider (--widen): bfloat16 from a safetensors
    # file, written as float32 a piece at a time (stored: the CRC taken on the
    # way) or whole (deflated); zipfile's CRC check and np.load agree
    bits = (np.arange(100003, dtype=np.uint32) * 40503 % 65536).astype("<u2")
    body = bits.tobytes() + np.arange(5, dtype="<f4").tobytes()
    head = json.dumps({"w": {"dtype": "BF16", "shape": [100003], "data_offsets": [0, 200006]},
                       "z": {"dtype": "F32", "shape": [5], "data_offsets": [200006, 200026]}})
    head += " " * (-len(head) % 8)
    src = os.path.join(tmp, "bf16.safetensors")
    with open(src, "wb") as f:
        f.write(len(head).to_bytes(8, "little") + head.encode() + body)
    want = (bits.astype("<u4") << 16).view("<f4")
    for compress in (0, 1):
        out = os.path.join(tmp, "bf16_%d.npz" % compress)
        run("convert", "--widen", *(["--compress"] if compress else []), src, out)
        check("widened bf16 %d: CRCs" % compress, zipfile.ZipFile(out).testzip() is None)
        with np.load(out) as z:
            got = z["w"]
            # bit for bit: a bfloat16 is a float32's high half (NaN payloads too)
            check("widened bf16 %d: values" % compress, got.dtype == np.float32 and
                  np.array_equal(got.view("<u4"), want.view("<u4")))
            check("widened bf16 %d: the member after" % compress,
                  np.array_equal(z["z"], np.arange(5, dtype="<f4")))

    # a member that is not .npy: skipped, a finding
    src = os.path.join(tmp, "extra.npz")
    with zipfile.ZipFile(src, "w") as z:
        with z.open("w.npy", "w") as f:
            np.lib.format.write_array(f, np.arange(3, dtype="<i2"))
        z.writestr("README.txt", "not an array")
    check_listing("non-npy member", src, [("w", np.arange(3, dtype="<i2"))])
    p = run("validate", src, ok=False)
    check("non-npy member reported", p.returncode == 1 and "README.txt" in p.stdout, p.stdout)

    # refusals, by name
    for label, arr in [("object", np.array([1, "x"], dtype=object)),
                       ("long double complex", np.zeros(2, dtype=np.clongdouble))]:
        src = os.path.join(tmp, label + ".npz")
        np.savez(src, v=arr)
        p = run("ls", src, ok=False)
        check(label + " refused", p.returncode == 1 and "npz:" in p.stderr and "'v.npy'" in
              p.stderr, p.stderr)
    src = os.path.join(tmp, "bz2.npz")
    with zipfile.ZipFile(src, "w", compression=zipfile.ZIP_BZIP2) as z:
        with z.open("v.npy", "w") as f:
            np.lib.format.write_array(f, np.arange(3))
    p = run("ls", src, ok=False)
    check("bzip2 refused by name", p.returncode == 1 and "bzip2" in p.stderr, p.stderr)

    # conversions: tenbin -> npz -> safetensors, the hashes kept
    arrays = [("w", rng.standard_normal((3, 5)).astype("<f4")), ("b", np.arange(5, dtype="<i8"))]
    src = os.path.join(tmp, "src.npz")
    np.savez(src, **dict(arrays))
    ten = os.path.join(tmp, "a.ten")
    run("convert", src, ten)
    npz = os.path.join(tmp, "b.npz")
    run("convert", ten, npz)
    check_listing("ten -> npz", npz, arrays)
    check("ten -> npz bytes", read(npz) == read(src))
    st = os.path.join(tmp, "c.safetensors")
    run("convert", npz, st)
    hashes = {t["name"]: t["sha256"] for t in listing(st)}
    check("npz -> safetensors", hashes == {t["name"]: t["sha256"] for t in listing(npz)},
          str(hashes))
    check_load("ten -> npz", npz, arrays)
    p = run("convert", "--compress", npz, os.path.join(tmp, "d.safetensors"), ok=False)
    check("--compress refused for safetensors", p.returncode == 1 and "compress" in p.stderr,
          p.stderr)

    if failures:
        for f in failures[:40]:
            print("FAIL", f)
        print("%d failures" % len(failures))
        sys.exit(1)
    print("ok")


main()
