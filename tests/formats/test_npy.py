#!/usr/bin/python3
"""tensio against NumPy (Debian's python3-numpy) and safetensors conversions.

  test_npy.py TENSIO

- NumPy writes arrays with np.save and np.lib.format.write_array (every dtype
  tensio has, both byte orders, C and Fortran order, versions 1.0-3.0, rank 0
  and empty): `tensio ls --json --hash` must give the dtype, shape and the
  sha256 of the C-order little-endian bytes, and `tensio convert x.npy y.npy`
  must write exactly what np.save writes for the same array (so np.load reads
  it equal).
- What tensio has no dtype for (structured, object, long double complex) it
  refuses, with a message.
- convert between npy, safetensors, btf and tenbin, and back: equal arrays."""
import hashlib
import io
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from clitest import failures, run, check, le_c, DTYPES, NAMES  # noqa: E402


def tensio_name(dt):
    dt = np.dtype(dt)
    return "bool" if dt.kind == "b" else "%s%d" % (dict(NAMES, c="complex")[dt.kind], dt.itemsize * 8)


def strings(tmp):
    """NumPy's fixed-width strings: |S<n> bytes and <U<n> / >U<n> UTF-32, C
    and Fortran order, read as tensio's string dtype (trailing NULs stripped
    as NumPy does), written back as np.save writes them (U when every
    string is UTF-8 text, S otherwise or with strings=S)."""
    cases = [
        ("S", np.array([[b"ab", b"c\x00d"], [b"", b"\xff\xfe"]])),
        ("U", np.array(["h\u00e9llo", "", "a\U0001f600", "x" * 300])),
        ("U big-endian", np.array(["ab", "c"], dtype=">U3")),
        ("U Fortran", np.asfortranarray(np.array([["ab", "cde"], ["f", ""]]))),
        ("U rank 0", np.array("scalar")),
        ("U empty", np.zeros((2, 0), dtype="<U4")),
    ]
    for label, arr in cases:
        src = os.path.join(tmp, "str.npy")
        np.save(src, arr)
        j = json.loads(run("dump", "--json", src).stdout)["tensors"][0]
        check(label + " dtype", j["dtype"] == "string" and j["shape"] == list(arr.shape), str(j))
        if arr.dtype.kind == "U":
            check(label + " values", j["values"] == [str(x) for x in np.ravel(arr, order="C")],
                  str(j["values"]))
        out = os.path.join(tmp, "str_out.npy")
        run("convert", "--force", src, out)
        back = np.load(out)
        if label == "S":  # not all UTF-8: written as S, equal
            check(label + " back", back.dtype == arr.dtype and np.array_equal(back, arr),
                  repr(back))
            continue
        # U as wide as its longest string (NumPy's declared width may be more)
        flat = [str(x) for x in np.ravel(arr, order="C")]
        want = np.array(flat, dtype="<U%d" % max([1] + [len(x) for x in flat]))
        want = want.reshape(arr.shape)
        ref = io.BytesIO()
        np.save(ref, want)
        with open(out, "rb") as f:
            check(label + " np.save bytes", f.read() == ref.getvalue())
        check(label + " np.load", back.dtype == want.dtype and np.array_equal(back, want))
    # strings=S keeps ASCII byte strings S; strings=U refuses bytes that are not UTF-8
    a = np.array([b"abc", b"d"])
    np.save(os.path.join(tmp, "s.npy"), a)
    ref = io.BytesIO()
    np.save(ref, a)
    run("convert", "--force", "--strings", "S", os.path.join(tmp, "s.npy"),
        os.path.join(tmp, "s2.npy"))
    with open(os.path.join(tmp, "s2.npy"), "rb") as f:
        check("--strings S: np.save bytes", f.read() == ref.getvalue())
    np.save(os.path.join(tmp, "b.npy"), np.array([b"\xff"]))
    p = run("convert", "--force", "--strings", "U", os.path.join(tmp, "b.npy"),
            os.path.join(tmp, "b2.npy"), ok=False)
    check("--strings U refuses bytes", p.returncode == 1 and "not UTF-8 text" in p.stderr,
          p.stderr)
    # a NUL at the end of a string is what NumPy strips: refused by name
    pb = os.path.join(tmp, "nul.pb")
    from onnx import numpy_helper  # noqa: E402  (Debian's python3-onnx)
    with open(pb, "wb") as f:
        f.write(numpy_helper.from_array(np.array([b"a\x00"], dtype=object), "n")
                .SerializeToString())
    p = run("convert", "--force", pb, os.path.join(tmp, "nul.npy"), ok=False)
    check("trailing NUL refused", p.returncode == 1 and "ends with a NUL byte" in p.stderr,
          p.stderr)
    # npz: members of both kinds, read by np.load
    z = os.path.join(tmp, "s.npz")
    np.savez(z, a=np.array(["x", "yy"]), b=np.array([b"q", b"\x80"]))
    z2 = os.path.join(tmp, "s2.npz")
    for comp in ([], ["--compress"]):
        run("convert", "--force", *comp, z, z2)
        with np.load(z2) as back:
            check("npz strings a", back["a"].tolist() == ["x", "yy"], repr(back["a"]))
            check("npz strings b", back["b"].tolist() == [b"q", b"\x80"], repr(back["b"]))
    print("npy: strings read and written")


def main():
    rng = np.random.default_rng(19)
    tmp = tempfile.mkdtemp(prefix="tio-npy-")
    n = 0
    for dt in DTYPES + ["<c8", ">c8", "<c16", ">c16"]:
        for shape in [(), (0,), (5,), (3, 4), (2, 0, 3), (2, 3, 4)]:
            base = rng.integers(0, 100, size=shape) if shape else np.array(rng.integers(0, 100))
            a = (base % 2 == 0) if dt == "?" else base.astype(dt)
            if np.dtype(dt).kind == "c":  # the parts differ, so a swap of the whole shows
                a = (a * (1 - 2j) + 0.5j).astype(dt)
            for order in "CF":
                arr = np.asfortranarray(a) if order == "F" else np.ascontiguousarray(a)
                # the header's version changes only its length field and text
                # encoding, independent of dtype and order: versions 2.0 and
                # 3.0 (and 1.0 by write_array) for C order at two shapes, np.save
                # everywhere (a tensio process each, ~0.2 s under ASan)
                versions = [None]
                if order == "C" and shape in ((), (2, 3, 4)):
                    versions += [(1, 0), (2, 0), (3, 0)]
                for version in versions:
                    n += 1
                    src = os.path.join(tmp, "a%d.npy" % n)
                    with open(src, "wb") as f:
                        if version is None:
                            np.save(f, arr)
                        else:
                            np.lib.format.write_array(f, arr, version=version)
                    what = "%s %s %s v%s" % (dt, shape, order, version)
                    j = json.loads(run("ls", "--json", "--hash", src).stdout)
                    t = j["tensors"][0]
                    want = le_c(np.load(src))
                    check(what + " dtype", t["dtype"] == tensio_name(dt), t["dtype"])
                    check(what + " shape", t["shape"] == list(arr.shape), str(t["shape"]))
                    check(what + " sha256",
                          t["sha256"] == hashlib.sha256(want.tobytes()).hexdigest())
                    if version not in (None, (1, 0)):
                        continue
                    out = os.path.join(tmp, "b%d.npy" % n)
                    run("convert", src, out)
                    ref = io.BytesIO()
                    np.save(ref, want)
                    with open(out, "rb") as f:
                        mine = f.read()
                    check(what + " np.save bytes", mine == ref.getvalue())
                    back = np.load(out)
                    check(what + " np.load", back.dtype == want.dtype and
                          back.shape == want.shape and np.array_equal(back, want))
    print("npy: %d files written by NumPy read and rewritten" % n)

    # refusals, by name
    for label, arr in [("structured", np.zeros(2, dtype=[("a", "<i4"), ("b", "<f4")])),
                       ("object", np.array([1, "x"], dtype=object)),
                       ("long double complex", np.zeros(2, dtype=np.clongdouble)),
                       ("lone surrogate", np.array(["a\ud800"]))]:
        src = os.path.join(tmp, label + ".npy")
        np.save(src, arr, allow_pickle=True)
        p = run("ls", src, ok=False)
        check(label + " refused", p.returncode == 1 and "npy:" in p.stderr, p.stderr)

    strings(tmp)

    # conversions between the new formats and btf / tenbin, and back
    a = rng.standard_normal((3, 5)).astype("<f4")
    src = os.path.join(tmp, "x.npy")
    np.save(src, a)
    for fmt in ("safetensors", "btf", "ten"):
        mid = os.path.join(tmp, "x." + fmt)
        back = os.path.join(tmp, "x_from_%s.npy" % fmt)
        run("convert", "--force", src, mid)
        run("convert", "--force", mid, back)  # a named lone tensor: no --drop-names
        b = np.load(back)
        check("npy -> %s -> npy" % fmt, b.dtype == a.dtype and np.array_equal(a, b))
    # safetensors -> tenbin -> safetensors keeps names; a two-tensor file is
    # refused as .npy with a message
    st = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vectors",
                      "safetensors", "all_dtypes.safetensors")
    p = run("convert", "--force", st, os.path.join(tmp, "all.npy"), ok=False)
    check("several tensors refused as npy", p.returncode == 1 and "one array" in p.stderr,
          p.stderr)
    run("convert", "--force", "--widen", "--drop-metadata", st, os.path.join(tmp, "all.btf"),
        "--drop-names")
    p = run("convert", "--force", "--widen", st, os.path.join(tmp, "all.ten"), ok=False)
    check("metadata not silently lost", p.returncode == 1, p.stderr)

    if failures:
        for f in failures[:40]:
            print("FAIL", f)
        print("%d failures" % len(failures))
        sys.exit(1)
    print("ok")


main()
