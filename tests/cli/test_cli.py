#!/usr/bin/env python3
"""End-to-end tests of the `tensio` command-line tool: help and usage, ls,
info, dump, convert, validate, the standard streams, progress, filters and
cat, stats and diff, conversions between every two formats, the dense-bytes
limit and dense bombs. The model formats' own (rten, tmfile):
test_cli_models.py; what both share: cli_harness.py.

Usage: python3 test_cli.py /path/to/tensio

The last line printed is "N passed, M failed"; the exit status is non-zero
on any failure.
"""

import json
import math
import os
import re
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import time

import pinned
from cli_harness import (COMMANDS, REPO, TENSIO, Result, binary_ok, case, decode, expect,
                         finish, manifest, manifest_complete, manifest_count,
                         manifest_tensors, read_bytes, run, run_json, same_value, skip, vec,
                         vector_manifests)

# ------------------------------------------------------------------ tests

def t_version():
    res = run("--version")
    expect(res, 0, stderr_empty=True)
    assert re.fullmatch(r"tensio \d+\.\d+\.\d+\n", res.out), res
    assert run("-V").out == res.out


def t_global_help():
    res = run("--help")
    expect(res, 0, stderr_empty=True)
    assert res.out.startswith("Usage: tensio"), res
    for c in COMMANDS:
        assert re.search(rf"^\s+{c}\s", res.out, re.M), f"--help lacks {c}: {res!r}"
    expect(run("-h"), 0)
    expect(run("help"), 0)


def t_command_help(cmd):
    for args in ((cmd, "--help"), (cmd, "-h"), ("help", cmd)):
        res = run(*args)
        expect(res, 0, stderr_empty=True)
        assert res.out.startswith(f"Usage: tensio {cmd}"), res


def t_usage_errors():
    cases = [
        (),
        ("frobnicate",),
        ("--frobnicate",),
        ("help", "frobnicate"),
        ("ls",),
        ("ls", "a", "b"),
        ("ls", "--frobnicate", "x.btf"),
        ("ls", "--format", "nosuch", "x.btf"),
        ("ls", "--format"),
        ("ls", "--json=yes", "x.btf"),
        ("info",),
        ("dump",),
        ("dump", "--limit", "abc", "x.btf"),
        ("dump", "--limit", "-1", "x.btf"),
        ("dump", "a", "b", "c"),
        ("convert",),
        ("convert", "a.btf"),
        ("convert", "a.btf", "b.ten", "c"),
        ("convert", "--to", "nosuch", "a.btf", "b.ten"),
        ("convert", "--from", "nosuch", "a.btf", "b.ten"),
        ("validate",),
        ("validate", "--format", "nosuch", "a.btf"),
        ("formats", "extra"),
    ]
    for args in cases:
        res = run(*args)
        assert res.rc == 2, f"{args}: expected exit 2: {res!r}"
        assert res.out == "", f"{args}: usage errors print nothing on stdout: {res!r}"
        if args:
            assert res.err.startswith("tensio: "), f"{args}: {res!r}"


def t_unknown_format_lists_formats():
    res = run("ls", "--format", "nosuch", "x.btf")
    expect(res, 2)
    assert "btf" in res.err and "tenbin" in res.err, res


def t_formats():
    res = run("formats")
    expect(res, 0, stderr_empty=True)
    lines = res.out.splitlines()
    assert lines[0].split() == ["NAME", "EXTENSIONS", "CAPABILITIES", "DESCRIPTION"], res
    names = [ln.split()[0] for ln in lines[1:]]
    assert "btf" in names and "tenbin" in names, res
    j = run_json("formats", "--json")
    assert list(j) == ["formats"]
    byname = {f["name"]: f for f in j["formats"]}
    assert [f["name"] for f in j["formats"]] == names
    for f in j["formats"]:
        assert list(f) == ["name", "description", "extensions", "write", "capabilities",
                           "dtypes"], f
    assert byname["btf"]["extensions"] == [".btf"], byname["btf"]
    assert byname["tenbin"]["extensions"] == [".ten"], byname["tenbin"]
    assert "sparse" in byname["btf"]["capabilities"]
    assert "names" in byname["tenbin"]["capabilities"]
    assert "names" not in byname["btf"]["capabilities"]


def formats_info():
    j = run_json("formats", "--json")
    return {f["name"]: f for f in j["formats"]}


def t_ls_json_manifest(rel, m, fmt):
    path = vec(rel)
    if path is None:
        return
    j = run_json("ls", "--json", "--hash", path)
    assert list(j) == ["format", "tensors"], j.keys()
    assert j["format"] == fmt, j["format"]
    want = manifest_tensors(m)
    got = j["tensors"]
    assert len(got) == manifest_count(m), \
        f"{len(got)} tensors, manifest says {manifest_count(m)}"
    for i, g in enumerate(got):
        assert g["index"] == i, g
    for w in want:
        i = w["index"]
        g = got[i]
        keys = ["index", "name", "dtype", "shape", "layout", "nbytes"]
        if w["layout"] == "coo":
            keys += ["nnz", "indices_sha256", "values_sha256"]
        keys += ["sha256"]
        assert list(g) == keys, f"tensor {i}: keys {list(g)}, expected {keys}"
        for k in keys[1:]:
            assert g[k] == w[k], f"tensor {i}: {k} = {g[k]!r}, manifest {w[k]!r}"
    # Without --hash: no hashes, same order otherwise.
    j2 = run_json("ls", "--json", path)
    for g in j2["tensors"]:
        assert not any(k.endswith("sha256") for k in g), g


def t_ls_text():
    path = vec("btf/coo_btf_info_test.btf")
    if path is None:
        return
    res = run("ls", path)
    expect(res, 0, stderr_empty=True)
    assert res.out == (
        "INDEX  NAME  DTYPE  SHAPE   LAYOUT  NBYTES  NNZ\n"
        "    0  -     int8   [3, 5]  dense       15    -\n"
        "    1  -     int64  [2, 4]  coo         48    6\n"), res
    res = run("ls", "--hash", path)
    expect(res, 0)
    lines = res.out.splitlines()
    assert lines[0].split()[-1] == "SHA256"
    assert lines[1].split()[-1] == \
        "7071fc3188fde7e7e500d4768f1784bede1a22e991648dcab9dc3219acff1d4c", res
    assert lines[2].split()[-1] == \
        "224b8ac5303517514fb8c44eb71bdcb37abb34bb2e5de6222e1ec65ba149f2fa", res


def t_ls_text_names():
    path = vec("tenbin/multi_infos.ten")
    m = manifest("tenbin/multi_infos.json")
    if path is None or m is None:
        return
    res = run("ls", path)
    expect(res, 0, stderr_empty=True)
    lines = res.out.splitlines()
    assert len(lines) == 1 + len(m["arrays"]), res
    for line, a in zip(lines[1:], m["arrays"]):
        f = line.split()
        assert f[0] == str(a["index"]) and f[1] == a["info"] and f[2] == a["dtype"], line
        shape = "[" + ", ".join(str(d) for d in a["shape"]) + "]"
        assert shape in line, (line, shape)
        assert f[-3:] == ["dense", str(a["nbytes"]), "-"], line
    # Columns are aligned: every row has the same length up to the last column.
    starts = [ln.index("dense") for ln in lines[1:]]
    assert len(set(starts)) == 1, res


def t_ls_empty_container():
    path = vec("btf/zero_tensors.btf")
    if path is None:
        return
    res = run("ls", path)
    expect(res, 0)
    assert res.out.splitlines()[0].split()[0] == "INDEX" and len(res.out.splitlines()) == 1
    assert run_json("ls", "--json", path) == {"format": "btf", "tensors": []}


def t_ls_forced_format(tmp):
    src = vec("btf/dense_int8.btf")
    if src is None:
        return
    noext = os.path.join(tmp, "noext")
    shutil.copyfile(src, noext)
    assert run_json("ls", "--json", noext)["format"] == "btf"
    assert run_json("ls", "--json", "--format", "btf", noext)["format"] == "btf"
    res = run("ls", "--format", "tenbin", noext)
    expect(res, 1, stdout_empty=True)
    assert res.err.startswith("tensio: "), res


def t_info():
    path = vec("btf/coo_btf_info_test.btf")
    m = manifest("btf/coo_btf_info_test.json")
    if path is None or m is None:
        return
    res = run("info", path)
    expect(res, 0, stderr_empty=True)
    fields = dict(re.match(r"([a-z ]+):\s+(.*)", ln).groups() for ln in res.out.splitlines()
                  if re.match(r"[a-z ]+:", ln))
    assert fields["format"] == "btf", res
    assert fields["file size"] == f"{m['file_size']} bytes", res
    assert fields["tensors"] == "2 (1 dense, 1 coo)", res
    assert fields["data bytes"] == str(sum(t["nbytes"] for t in manifest_tensors(m))), res
    assert fields["dtypes"] == "int8: 1, int64: 1", res
    assert fields["metadata"] == "0", res
    assert fields["findings"] == "0", res

    j = run_json("info", "--json", path)
    assert list(j) == ["file", "format", "file_size", "tensor_count", "data_bytes",
                       "dtypes", "layouts", "metadata", "finding_count", "findings"], j
    assert j["file"] == path and j["format"] == "btf"
    assert j["file_size"] == m["file_size"]
    assert j["tensor_count"] == 2
    assert j["data_bytes"] == 63
    assert j["dtypes"] == {"int8": 1, "int64": 1}
    assert j["layouts"] == {"dense": 1, "coo": 1}
    assert j["metadata"] == {} and j["finding_count"] == 0 and j["findings"] == []


def t_info_manifest(rel, m):
    path = vec(rel)
    if path is None:
        return
    j = run_json("info", "--json", path)
    want = manifest_tensors(m)
    assert j["file_size"] == m["file_size"] == os.path.getsize(path)
    assert j["tensor_count"] == manifest_count(m)
    assert j["finding_count"] == len(j["findings"])
    if not manifest_complete(m):
        return
    assert j["data_bytes"] == sum(t["nbytes"] for t in want)
    hist = {}
    for t in want:
        hist[t["dtype"]] = hist.get(t["dtype"], 0) + 1
    assert j["dtypes"] == hist, (j["dtypes"], hist)


def t_info_findings():
    path = vec("btf/malformed/offset_unaligned.btf")
    if path is None:
        return
    j = run_json("info", "--json", path)
    assert j["finding_count"] >= 1 and len(j["findings"]) == j["finding_count"], j
    for f in j["findings"]:
        assert list(f) == ["code", "offset", "message"], f
        assert f["code"] == "TIO_E_INVALID" and f["message"], f
    res = run("info", path)
    expect(res, 0)
    assert re.search(rf"^findings:\s+{j['finding_count']}$", res.out, re.M), res


def t_dump_text_coo():
    path = vec("btf/coo_btf_info_test.btf")
    m = manifest("btf/coo_btf_info_test.json")
    if path is None or m is None:
        return
    res = run("dump", path)
    expect(res, 0, stderr_empty=True)
    # btf_info (TFRT) prints the same values; take them from its recorded output.
    ref = m["readers"]["btf_info(tools/btf_info_tool/main.cc)"]["stdout"]
    dense_vals = re.search(r"\[0\].*values = \[([^\]]*)\]", ref).group(1)
    coo_vals = re.search(r"\[1\].*values = \[([^\]]*)\]", ref).group(1).split(", ")
    idx = m["tensors"][1]["indices"]
    coo_lines = "".join(f"  ({idx[2 * i]}, {idx[2 * i + 1]}) = {v}\n"
                        for i, v in enumerate(coo_vals))
    assert res.out == ("[0] - int8 [3, 5] dense\n"
                       f"  [{dense_vals}]\n"
                       "\n"
                       "[1] - int64 [2, 4] coo nnz=6\n" + coo_lines), res
    # One tensor, by index.
    res = run("dump", path, "1")
    expect(res, 0)
    assert res.out == "[1] - int64 [2, 4] coo nnz=6\n" + coo_lines, res


def t_dump_json_coo():
    path = vec("btf/coo_btf_info_test.btf")
    m = manifest("btf/coo_btf_info_test.json")
    if path is None or m is None:
        return
    j = run_json("dump", "--json", path)
    assert list(j) == ["tensors"]
    t0, t1 = j["tensors"]
    assert list(t0) == ["index", "name", "dtype", "shape", "layout", "values", "truncated"]
    assert t0 == {"index": 0, "name": None, "dtype": "int8", "shape": [3, 5],
                  "layout": "dense", "values": list(range(15)), "truncated": False}, t0
    assert list(t1) == ["index", "name", "dtype", "shape", "layout", "nnz", "indices",
                        "values", "truncated"]
    idx = m["tensors"][1]["indices"]
    assert t1["indices"] == [idx[i:i + 2] for i in range(0, len(idx), 2)], t1
    assert t1["values"] == [1, 2, 3, 5, 6, 7], t1
    assert t1["nnz"] == 6 and t1["truncated"] is False


def btf_raw(path, t):
    data = read_bytes(path)
    end = t["record_end_before_padding"]
    return data[end - t["nbytes"]:end]


def tenbin_raw(path, a):
    data = read_bytes(path)
    off = a["data_chunk"]["payload_offset"]
    return data[off:off + a["nbytes"]]


def t_dump_values(rel, m):
    """dump --json --limit 0 reproduces every element of every dense tensor
    bit for bit (decoded here from the raw bytes at the manifest's offsets)."""
    path = vec(rel)
    if path is None:
        return
    j = run_json("dump", "--json", "--limit", "0", path)
    if "arrays" in m:
        raws = [(a["dtype"], tenbin_raw(path, a)) for a in m["arrays"]]
    else:
        raws = [(t["dtype"], btf_raw(path, t) if t["layout"] == 0 else None)
                for t in m["tensors"]]
    assert len(j["tensors"]) == len(raws)
    for i, (t, (dtype, raw)) in enumerate(zip(j["tensors"], raws)):
        if raw is None:
            continue
        want = decode(dtype, raw)
        assert t["truncated"] is False
        assert len(t["values"]) == len(want), f"tensor {i}: {len(t['values'])} values"
        for k, (g, w) in enumerate(zip(t["values"], want)):
            assert same_value(dtype, g, w), f"tensor {i} element {k}: {g!r} != {w!r}"


def t_dump_limit_and_select():
    path = vec("tenbin/multi_infos.ten")
    if path is None:
        return
    # Default limit 100 is more than these tensors hold.
    j = run_json("dump", "--json", path)
    assert all(t["truncated"] is False for t in j["tensors"])
    j = run_json("dump", "--json", "--limit", "3", path, "target")
    assert len(j["tensors"]) == 1
    t = j["tensors"][0]
    assert t["index"] == 1 and t["name"] == "target" and t["dtype"] == "int64", t
    assert t["values"] == [0, 1, 9223372036854775807] and t["truncated"] is True, t
    res = run("dump", "--limit", "2", path, "0")
    expect(res, 0)
    assert res.out == "[0] input float32 [4, 4] dense\n  [0, -0, ...] (14 more)\n", res
    res = run("dump", "-n", "2", path, "mask")
    expect(res, 0)
    assert res.out.startswith("[2] mask uint8 [2, 3, 3] dense\n  [0, 1, ...] (16 more)"), res
    # Floats: special values as strings in JSON, bare in text.
    j = run_json("dump", "--json", path, "input")
    vals = j["tensors"][0]["values"]
    assert "inf" in vals and "-inf" in vals and "nan" in vals, vals
    res = run("dump", path, "input")
    assert ", inf, -inf, nan, " in res.out, res
    res = run("dump", path, "nosuch")
    expect(res, 1, stdout_empty=True)
    assert res.err.startswith("tensio: ") and "nosuch" in res.err, res
    res = run("dump", path, "4")
    expect(res, 1, stdout_empty=True)


def t_dump_large_limit():
    path = vec("btf/dense_large_float64_1MiB.btf")
    if path is None:
        return
    j = run_json("dump", "--json", path)
    t = j["tensors"][0]
    assert len(t["values"]) == 100 and t["truncated"] is True


def t_dump_half():
    path = vec("tenbin/dtype_float16.ten")
    m = manifest("tenbin/dtype_float16.json")
    if path is None or m is None:
        return
    want = decode("float16", tenbin_raw(path, m["arrays"][0]))
    res = run("dump", path)
    expect(res, 0)
    body = res.out.split("\n", 1)[1].replace("\n", " ")
    got = [s.strip() for s in body.strip().strip("[]").split(",")]
    assert len(got) == len(want), res
    for g, w in zip(got, want):
        if math.isnan(w) or math.isinf(w):
            assert g == {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(g), (g, w)
            assert same_value("float16", g, w), (g, w)
        else:
            assert same_value("float16", float(g), w), (g, w)


def tenbin_file(arrays):
    """A tenbin file (what webdataset's tenbin.save writes): per array a header
    chunk (dtype code, info, ndim, dims as int64 words) and a data chunk; each
    chunk is "~TenBin~", an int64 length and the payload zero-padded to 64."""
    def chunk(payload):
        pad = -len(payload) % 64
        return b"~TenBin~" + struct.pack("<q", len(payload)) + payload + bytes(pad)
    out = b""
    for code, info, shape, data in arrays:
        header = code.encode().ljust(8, b"\0") + info.encode().ljust(8, b"\0")
        header += struct.pack(f"<{1 + len(shape)}q", len(shape), *shape)
        out += chunk(header) + chunk(data)
    return out


def t_dump_half_all(tmp):
    """Every float16 bit pattern prints as its exact value (or nan/inf)."""
    raw = struct.pack("<65536H", *range(65536))
    path = os.path.join(tmp, "halves.ten")
    with open(path, "wb") as f:
        f.write(tenbin_file([("f2", "h", [65536], raw)]))
    j = run_json("dump", "--json", "--limit", "0", path)
    vals = j["tensors"][0]["values"]
    want = decode("float16", raw)
    assert len(vals) == 65536
    for k, (g, w) in enumerate(zip(vals, want)):
        assert same_value("float16", g, w), f"0x{k:04x}: {g!r} != {w!r}"
    # Subnormals and extremes, as text.
    res = run("dump", "--limit", "3", path)
    assert res.out.splitlines()[1] == "  [0, 5.96046448e-08, 1.1920929e-07, ...] (65533 more)", res


def t_convert_roundtrip(rel, m, tmp, tenbin_dtypes):
    """btf -> ten -> btf reproduces the original bytes (dense vectors)."""
    path = vec(rel)
    if path is None:
        return
    base = os.path.splitext(os.path.basename(rel))[0]
    ten = os.path.join(tmp, base + ".ten")
    back = os.path.join(tmp, base + ".back.btf")
    res = run("convert", path, ten)
    if any(t["dtype"] not in tenbin_dtypes for t in m["tensors"]):
        expect(res, 1, stdout_empty=True)
        assert not os.path.exists(ten)
        return
    expect(res, 0, stdout_empty=True, stderr_empty=True)
    j = run_json("ls", "--json", "--hash", ten)
    assert j["format"] == "tenbin"
    want = manifest_tensors(m)
    for g, w in zip(j["tensors"], want):
        for k in ("dtype", "shape", "sha256", "nbytes"):
            assert g[k] == w[k], (k, g, w)
    res = run("convert", ten, back)
    expect(res, 0, stdout_empty=True, stderr_empty=True)
    assert read_bytes(back) == read_bytes(path), f"{back} differs from {path}"


def t_convert_names(tmp):
    src = vec("tenbin/dtype_float32.ten")
    m = manifest("tenbin/dtype_float32.json")
    if src is None or m is None:
        return
    out = os.path.join(tmp, "names.btf")
    res = run("convert", src, out)
    expect(res, 1, stdout_empty=True)
    assert "name" in res.err and "--drop-names" in res.err, res
    assert res.err.startswith("tensio: "), res
    assert not os.path.exists(out)
    res = run("convert", "--drop-names", src, out)
    expect(res, 0, stdout_empty=True, stderr_empty=True)
    j = run_json("ls", "--json", "--hash", out)
    assert j["format"] == "btf"
    t = j["tensors"][0]
    a = m["arrays"][0]
    assert t["name"] is None and t["dtype"] == a["dtype"] and t["shape"] == a["shape"]
    assert t["sha256"] == a["sha256"]


def t_convert_several_losses(tmp):
    src = vec("tenbin/multi_infos.ten")
    m = manifest("tenbin/multi_infos.json")
    if src is None or m is None:
        return
    out = os.path.join(tmp, "multi.btf")
    res = run("convert", src, out)
    expect(res, 1)
    assert "--drop-names" in res.err and "--widen" in res.err, res
    res = run("convert", "--drop-names", src, out)
    expect(res, 1)
    assert "--widen" in res.err and "float16" in res.err, res
    assert not os.path.exists(out)
    res = run("convert", "--drop-names", "--widen", src, out)
    expect(res, 0, stdout_empty=True, stderr_empty=True)
    j = run_json("ls", "--json", "--hash", out)
    got = [(t["dtype"], t["shape"]) for t in j["tensors"]]
    want = [("float32" if a["dtype"] == "float16" else a["dtype"], a["shape"])
            for a in m["arrays"]]
    assert got == want, got
    for t, a in zip(j["tensors"], m["arrays"]):
        if a["dtype"] != "float16":
            assert t["sha256"] == a["sha256"], (t, a)
    # The widened values are the same numbers.
    half = decode("float16", tenbin_raw(src, m["arrays"][3]))
    vals = run_json("dump", "--json", out, "3")["tensors"][0]["values"]
    for g, w in zip(vals, half):
        assert same_value("float32", g, w), (g, w)


def t_convert_coo(rel, m, tmp):
    path = vec(rel)
    if path is None:
        return
    base = os.path.splitext(os.path.basename(rel))[0]
    out = os.path.join(tmp, base + ".dense.ten")
    res = run("convert", path, out)
    expect(res, 1, stdout_empty=True)
    assert "--densify" in res.err, res
    assert not os.path.exists(out)
    res = run("convert", "--densify", path, out)
    expect(res, 0, stdout_empty=True, stderr_empty=True)
    j = run_json("ls", "--json", "--hash", out)
    assert j["format"] == "tenbin"
    assert len(j["tensors"]) == len(m["tensors"])
    for g, w in zip(j["tensors"], m["tensors"]):
        assert g["layout"] == "dense" and g["dtype"] == w["dtype"] and g["shape"] == w["shape"]
        assert g["sha256"] == w["sha256"], (g, w)


def t_convert_into_special(tmp):
    """OUT a FIFO, or a character device (made where this runs as root): the
    bytes are written into it, the node stays (a save never renames over a
    device: as root that replaced /dev/null with a regular file), no --force
    needed; the same bytes as to standard output."""
    import threading
    src = vec("btf/dense_int32.btf")
    if src is None:
        return
    want = subprocess.run([TENSIO, "convert", "--to", "tenbin", src, "-"],
                          stdout=subprocess.PIPE, check=True).stdout
    fifo = os.path.join(tmp, "fifo.ten")
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    res = run("convert", src, fifo)
    if res.rc != 0:  # never opened: let the reader's open return
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    reader.join(60)
    expect(res, 0, stderr_empty=True)
    assert got == [want], (len(got[0]) if got else None, len(want))
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced"
    if os.geteuid() != 0:
        print("SKIPPED: convert into a character device (needs root to make one)")
        return
    node = os.path.join(tmp, "null.ten")
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    for force in ([], ["--force"]):
        expect(run("convert", *force, src, node), 0, stderr_empty=True)
        assert stat.S_ISCHR(os.lstat(node).st_mode), "the device was replaced"
    os.unlink(node)


def t_convert_misc(tmp):
    src = vec("btf/dense_int32.btf")
    m = manifest("btf/dense_int32.json")
    if src is None or m is None:
        return
    # Unknown output extension: usage error that lists the formats.
    res = run("convert", src, os.path.join(tmp, "x.unknownext"))
    expect(res, 2, stdout_empty=True)
    assert "btf" in res.err and "tenbin" in res.err and "--to" in res.err, res
    # --to overrides the extension; the result is probed as tenbin.
    out = os.path.join(tmp, "forced.bin")
    expect(run("convert", "--to", "tenbin", src, out), 0, stdout_empty=True)
    assert run_json("ls", "--json", out)["format"] == "tenbin"
    # --from forces the input format.
    back = os.path.join(tmp, "forced.btf")
    expect(run("convert", "--from", "tenbin", out, back), 0)
    assert read_bytes(back) == read_bytes(src)
    res = run("convert", "--from", "btf", out, os.path.join(tmp, "never.btf"))
    expect(res, 1)
    assert not os.path.exists(os.path.join(tmp, "never.btf"))
    # An existing OUT needs --force.
    before = read_bytes(back)
    res = run("convert", "--to", "btf", out, back)
    expect(res, 1, stdout_empty=True)
    assert "--force" in res.err, res
    expect(run("convert", "--force", out, back), 0, stdout_empty=True)
    assert read_bytes(back) == before
    # IN == OUT is refused, even with --force; the file is untouched.
    copy = os.path.join(tmp, "self.btf")
    shutil.copyfile(src, copy)
    for args in (("convert", copy, copy), ("convert", "--force", copy, copy),
                 ("convert", "--force", copy, os.path.join(tmp, ".", "self.btf"))):
        res = run(*args)
        expect(res, 1, stdout_empty=True)
        assert res.err.startswith("tensio: "), res
    assert read_bytes(copy) == read_bytes(src)
    # -v prints one line.
    res = run("convert", "-v", src, os.path.join(tmp, "verbose.ten"))
    expect(res, 0, stderr_empty=True)
    assert res.out.count("\n") == 1 and "tenbin" in res.out, res
    # A missing input.
    res = run("convert", os.path.join(tmp, "missing.btf"), os.path.join(tmp, "m.ten"))
    expect(res, 1, stdout_empty=True)
    assert "missing.btf" in res.err, res
    # No temporary files are left behind.
    leftovers = [n for n in os.listdir(tmp) if "tmp" in n.lower() or n.startswith(".")]
    assert not leftovers, leftovers


def t_convert_cleans_stale_temps(tmp):
    """convert saves with TIO_SAVE_CLEANUP: OUT's temporary files left by dead
    processes go; a live process's (this one's), other targets' and a symlink
    stay."""
    src = vec("btf/dense_int32.btf")
    if src is None:
        return
    d = os.path.join(tmp, "stale")
    os.mkdir(d)
    child = subprocess.Popen(["true"])
    child.wait()
    hexs = "0123456789abcdef"
    stale = f".out.ten.tio-{child.pid}-{hexs}.tmp"
    keep = [f".out.ten.tio-{os.getpid()}-{hexs}.tmp", f".other.ten.tio-{child.pid}-{hexs}.tmp"]
    for n in [stale] + keep:
        with open(os.path.join(d, n), "wb") as f:
            f.write(b"x")
    link = f".out.ten.tio-{child.pid}-aaaaaaaaaaaaaaaa.tmp"
    os.symlink(src, os.path.join(d, link))
    expect(run("convert", src, os.path.join(d, "out.ten")), 0, stdout_empty=True)
    assert sorted(os.listdir(d)) == sorted(keep + [link, "out.ten"]), os.listdir(d)
    assert os.path.exists(src)


BTF_REJECT = ["empty_file", "short_header_4B", "num_tensors_exceeds_offsets",
              "num_tensors_huge", "offset_past_eof", "truncated_dims", "truncated_data",
              "dtype_code_10", "layout_255", "layout_2_doc_coo_value", "coo_index_ge_dim",
              "coo_negative_index", "coo_nnz_mismatch", "coo_indices_cols_ne_rank",
              "coo_inner_headers"]
BTF_FINDING = ["offset_unaligned", "reserved_nonzero", "trailing_garbage"]
BTF_VALID = ["offsets_reversed", "truncated_in_last_padding", "index_out_of_range_kernel",
             "dtype_mismatch_kernel", "rank_mismatch_kernel"]
TEN_REJECT = ["bad_magic", "bad_magic_data_chunk", "truncated_in_magic", "truncated_length",
              "truncated_header_payload", "header_only", "truncated_data", "trailing_garbage",
              "negative_length", "huge_length", "data_length_short", "data_length_long",
              "header_len_not_mult8", "ndim_huge", "ndim_negative", "dim_negative",
              "dtype_unknown", "dtype_lowercase_long", "info_nonascii"]
TEN_FINDING = ["nonzero_padding", "truncated_in_padding", "ndim_10_handmade"]
TEN_VALID = ["dtype_u4", "empty_file"]


def t_validate_good(paths):
    res = run("validate", *paths)
    expect(res, 0, stdout_empty=True, stderr_empty=True)


def t_validate_bad(path, readable):
    res = run("validate", path)
    expect(res, 1, stderr_empty=True)
    lines = res.out.splitlines()
    assert lines, res
    for ln in lines:
        assert ln.startswith(f"{path}: error: ") and len(ln) > len(path) + 9, ln
    # A readable file still lists; a rejected one does not.
    ls = run("ls", path)
    if readable:
        expect(ls, 0)
    else:
        expect(ls, 1, stdout_empty=True)
        assert ls.err.startswith("tensio: "), ls


def t_validate_mixed():
    good = vec("btf/dense_int8.btf")
    bad = vec("btf/malformed/truncated_data.btf")
    finding = vec("tenbin/malformed/nonzero_padding.ten")
    if not (good and bad and finding):
        return
    res = run("validate", good, bad, finding)
    expect(res, 1)
    files = [ln.split(": error: ")[0] for ln in res.out.splitlines()]
    assert good not in files and bad in files and finding in files, res
    res = run("validate", "-v", good)
    expect(res, 0)
    assert res.out.startswith(f"{good}: ok"), res


def t_missing_file(tmp):
    missing = os.path.join(tmp, "does-not-exist.btf")
    for cmd in ("ls", "info", "dump"):
        res = run(cmd, missing)
        expect(res, 1, stdout_empty=True)
        assert res.err.startswith("tensio: ") and "does-not-exist.btf" in res.err, res
    res = run("validate", missing)
    expect(res, 1)
    assert res.out.startswith(f"{missing}: error: "), res


def t_write_error():
    if not os.path.exists("/dev/full"):
        skip("/dev/full")
        return
    with open("/dev/full", "wb") as full:
        cp = subprocess.run([TENSIO, "formats"], stdout=full, stderr=subprocess.PIPE,
                            timeout=60)
    assert cp.returncode == 1, cp
    assert cp.stderr.decode().startswith("tensio: "), cp


def run_in(data, *args):
    cp = subprocess.run([TENSIO, *args], input=data, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, timeout=300)
    return cp


def run_pty(*args, on="stderr"):
    """Runs tensio with stderr (or stdout) on a pseudo-terminal: (completed
    process, what the terminal got); the other stream is captured."""
    import pty
    master, slave = pty.openpty()
    try:
        kw = {"stderr": slave, "stdout": subprocess.PIPE} if on == "stderr" else \
             {"stdout": slave, "stderr": subprocess.PIPE}
        cp = subprocess.run([TENSIO, *args], timeout=120, **kw)
        os.close(slave)
        got = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            got += chunk
    finally:
        os.close(master)
    return cp, got


def run_pty_stderr(*args):
    cp, got = run_pty(*args)
    return cp.returncode, got


def t_stdio(tmp):
    """'-' as IN (standard input, format probed or forced) for ls, info, dump,
    validate and convert; '-' as OUT (standard output) for convert, refused on a
    terminal (a pty) unless --force."""
    p = vec("btf/dense_float32.btf")
    if p is None:
        return
    raw = read_bytes(p)
    for cmd in (["ls", "--json", "--hash"], ["info", "--json"], ["dump", "--json"]):
        from_file = run(*cmd, p)
        piped = run_in(raw, *cmd, "-")
        assert piped.returncode == 0, piped
        want = json.loads(from_file.out)
        got = json.loads(piped.stdout)
        for k in ("file", "file_size", "path"):
            want.pop(k, None)
            got.pop(k, None)
        assert got == want, (cmd, got, want)
    cp = run_in(raw, "ls", "--format", "btf", "-")
    assert cp.returncode == 0 and b"float32" in cp.stdout, cp
    for cmd in (["stats", "--json"], ["diff", "--json", "--equal-nan", p]):  # diff: one side stdin
        want = json.loads(run(*cmd, p).out)
        piped = run_in(raw, *cmd, "-")
        assert piped.returncode == 0, piped
        got = json.loads(piped.stdout)
        if cmd[0] == "diff":
            assert got["equal"] is True and got["tensors"] == want["tensors"], got
        else:
            assert got["tensors"] == want["tensors"], got
    cp = run_in(raw, "validate", "-v", "-")
    assert cp.returncode == 0 and cp.stdout.startswith(b"-: ok (btf"), cp
    cp = run_in(raw[:50], "validate", "-")
    assert cp.returncode == 1 and cp.stdout.startswith(b"-: error: btf: "), cp
    cp = run_in(b"", "ls", "-")
    assert cp.returncode == 1 and b"standard input" in cp.stderr, cp
    # convert: stdin -> file, file -> stdout, stdin -> stdout (a pipe both ends)
    out = os.path.join(tmp, "stdin.ten")
    cp = run_in(raw, "convert", "-", out)
    assert cp.returncode == 0, cp
    cp = subprocess.run([TENSIO, "convert", p, "-", "--to", "tenbin"], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, timeout=60)
    assert cp.returncode == 0 and cp.stdout == read_bytes(out), cp.stderr
    cp = run_in(raw, "convert", "-", "-", "--to", "tenbin", "-v")
    assert cp.returncode == 0 and cp.stdout == read_bytes(out), cp.stderr
    assert b"-> - (tenbin): 1 tensor, %d bytes" % len(cp.stdout) in cp.stderr, cp.stderr
    cp = run_in(raw, "convert", "-", "-")
    assert cp.returncode == 2 and b"--to" in cp.stderr, cp
    # a terminal on stdout: refused (exit 2, nothing written) unless --force
    for force in ([], ["--force"]):
        cp, got = run_pty("convert", p, "-", "--to", "tenbin", *force, on="stdout")
        if force:
            assert cp.returncode == 0 and len(got) > 0, (cp, got)
        else:
            assert cp.returncode == 2 and b"terminal" in cp.stderr and got == b"", (cp, got)


def t_validate_convert_json(tmp):
    """validate --json and convert --json: one object each, as docs/cli.md says."""
    good = vec("btf/dense_float32.btf")
    if good is None:
        return
    bad = os.path.join(tmp, "trunc.btf")
    with open(bad, "wb") as f:
        f.write(read_bytes(good)[:50])
    missing = os.path.join(tmp, "missing.btf")
    res = run("validate", "--json", good, bad, missing)
    expect(res, 1)
    assert res.out.count("\n") == 1, res
    j = json.loads(res.out)
    assert list(j) == ["valid", "files"] and j["valid"] is False, j
    f0, f1, f2 = j["files"]
    assert f0 == {"file": good, "valid": True, "format": "btf", "tensors": 1, "errors": []}, f0
    assert f1["valid"] is False and f1["format"] is None and len(f1["errors"]) == 1, f1
    e = f1["errors"][0]
    assert list(e) == ["code", "format", "offset", "message"], e
    assert e["code"] == "TIO_E_TRUNCATED" and e["format"] == "btf" and e["offset"] == 48, e
    assert f2["errors"][0]["code"] == "TIO_E_IO", f2
    j = run_json("validate", "--json", good)
    assert j["valid"] is True, j
    # a readable file with findings: valid false, the findings as errors
    out = os.path.join(tmp, "conv.ten")
    j = run_json("convert", "--json", good, out)
    assert j == {"input": good, "input_format": "btf", "output": out, "format": "tenbin",
                 "tensors": 1, "bytes": os.path.getsize(out)}, j
    res = run("convert", "--json", good, "-", "--to", "tenbin")
    expect(res, 2)


def t_progress(tmp):
    """The progress line: forced with --progress (a line per second and a
    last one on a non-terminal; redrawn in place and erased on a terminal),
    silent when stderr is not a terminal or the work is short, and with
    --no-progress/--quiet."""
    p = vec("btf/dense_large_float64_1MiB.btf")
    if p is None:
        return
    out = os.path.join(tmp, "progress.ten")
    res = run("convert", "--force", "--progress", p, out)
    expect(res, 0, stdout_empty=True)
    lines = res.err.splitlines()
    assert lines and re.match(r"^tensio convert: 1\.0 MiB / 1\.0 MiB \(100%\)  \S+ \S+/s$",
                              lines[-1]), res.err
    expect(run("convert", "--force", p, out), 0, stderr_empty=True)  # not a terminal
    rc, got = run_pty_stderr("convert", "--force", "--progress", p, out)
    assert rc == 0 and b"\r\x1b[Ktensio convert: " in got and got.endswith(b"\r\x1b[K"), got
    rc, got = run_pty_stderr("convert", "--force", p, out)  # short work: nothing
    assert rc == 0 and got == b"", got
    for quiet in ("--quiet", "--no-progress", "-q"):
        rc, got = run_pty_stderr("convert", "--force", "--progress", quiet, p, out)
        assert rc == 0 and got == b"", (quiet, got)
    res = run("ls", "--hash", "--progress", p)
    expect(res, 0)
    assert re.match(r"^tensio ls --hash: 1\.0 MiB / 1\.0 MiB \(100%\)", res.err), res.err
    expect(run("ls", "--progress", p), 0, stderr_empty=True)  # no --hash: no long work


def names_of(path, *opts):
    return [t["name"] for t in run_json("ls", "--json", *opts, path)["tensors"]]


def t_filters_and_cat(tmp):
    """ls/convert --only/--exclude/--rename (globs, index names for unnamed
    tensors, errors), and cat joining files (clashes, --prefix-with-file,
    metadata, models refused)."""
    st = vec("safetensors/all_dtypes.safetensors")
    ten = vec("btf/dense_float32.btf")  # one unnamed tensor
    model = vec("onnx/cnn_small.onnx")
    if st is None or ten is None:
        return
    names = names_of(st)
    assert names_of(st, "--only", "*.weight", "--only", "ln.*") == \
        [n for n in names if n in ("ln.bias", "embed.weight")]
    assert names_of(st, "--exclude", "u*", "--exclude", "i*") == \
        [n for n in names if not n.startswith(("u", "i"))]
    assert names_of(st, "--only", "ids", "--rename", "ids=tokens") == ["tokens"]
    res = run("ls", "--only", "nothing*", st)
    expect(res, 1, stdout_empty=True)
    assert "--only 'nothing*': no tensor matches" in res.err, res
    res = run("ls", "--rename", "zzz=y", st)
    expect(res, 1)
    assert "no tensor is named 'zzz'" in res.err, res
    expect(run("ls", "--rename", "noequals", st), 2)
    res = run("ls", "--rename", "ids=u64", st)  # a clash
    expect(res, 1)
    assert "'u64' is already in the result" in res.err, res
    # an unnamed tensor is matched by its index
    assert len(run_json("ls", "--json", "--only", "0", ten)["tensors"]) == 1
    # convert keeps the selection's data, metadata and hashes
    out = os.path.join(tmp, "sel.safetensors")
    expect(run("convert", "--only", "ids", "--only", "scale", "--rename", "scale=s", st, out), 0)
    a = {t["name"]: t["sha256"] for t in run_json("ls", "--json", "--hash", st)["tensors"]}
    b = {t["name"]: t["sha256"] for t in run_json("ls", "--json", "--hash", out)["tensors"]}
    assert b == {"ids": a["ids"], "s": a["scale"]}, (a, b)
    assert run_json("info", "--json", out)["metadata"] == run_json("info", "--json", st)["metadata"]
    # cat: two files; a clash; --prefix-with-file; JSON summary
    part = os.path.join(tmp, "part.safetensors")
    expect(run("convert", "--only", "ln.bias", st, part), 0)
    joined = os.path.join(tmp, "joined.safetensors")
    j = run_json("cat", "--json", "-o", joined, out, part)
    assert j["input"] == [out, part] and j["tensors"] == 3 and j["format"] == "safetensors", j
    assert sorted(names_of(joined)) == ["ids", "ln.bias", "s"]
    res = run("cat", "--force", "-o", joined, out, out)
    expect(res, 1)
    assert "'ids' is already in the result" in res.err and "--prefix-with-file" in res.err, res
    expect(run("cat", "--force", "--prefix-with-file", "-o", joined, out, part, ten), 0)
    # (safetensors stores them in its own order)
    assert sorted(names_of(joined)) == ["dense_float32/0", "part/ln.bias", "sel/ids", "sel/s"], \
        names_of(joined)
    expect(run("cat", "-o", joined, out), 1)  # exists, no --force
    expect(run("cat", out), 2)  # no -o
    expect(run("cat", "-o", os.path.join(tmp, "x.ten")), 2)  # no IN
    if model:
        res = run("ls", "--only", "x", model)
        expect(res, 1)
        assert "a model" in res.err, res
    # GGUF through a filter that keeps everything: the same bytes (typed
    # metadata, quantized blocks); a selection keeps the quantized layout
    g = vec("gguf/plain.gguf")
    q = vec("gguf/quant.gguf")
    if g and q:
        same = os.path.join(tmp, "same.gguf")
        expect(run("convert", "--exclude", "no-such-*", g, same), 0)
        assert read_bytes(same) == read_bytes(g)
        sel = os.path.join(tmp, "q4.gguf")
        expect(run("convert", "--only", "q_q4*", q, sel), 0)
        ts = run_json("ls", "--json", sel)["tensors"]
        assert [(t["name"], t["dtype"], t["layout"]) for t in ts] == [
            ("q_q4_0", "q4_0", "quant"), ("q_q4_1", "q4_1", "quant"), ("q_q4_k", "q4_K", "quant")], ts


def t_quant_stats_diff():
    """stats and diff on quantized tensors: dequantized values (never the
    blocks read as floats); a block type tensio cannot dequantize is said and
    left out of stats (exit 1) and compared by its blocks in diff."""
    q = vec("gguf/quant.gguf")
    if q is None:
        return
    res = run("stats", "--json", q)
    expect(res, 1)
    assert "iq2_xxs blocks: tensio cannot dequantize them" in res.err, res
    st = json.loads(res.out)["tensors"]
    assert len(st) == 10 and all(t["count"] == (32 if i < 5 else 256) for i, t in enumerate(st)), st
    assert all(abs(t["max"]) < 1e6 and abs(t["min"]) < 1e6 for t in st), st  # values, not bits
    res = run("diff", q, q)
    expect(res, 0)
    # dequantizing is bounded by max_dense_bytes before anything is allocated:
    # 32 elements need 128 bytes of float32
    res = run("stats", "--max-dense-bytes", "100", q)
    expect(res, 1)
    assert "tensor 0: dequantizing its 32 elements to float32 needs 128 bytes, above " \
        "max_dense_bytes 100" in res.err, res
    expect(run("stats", "--max-dense-bytes", "128", q, "q_q4_0"), 0)
    with tempfile.TemporaryDirectory() as tmp:
        dq = os.path.join(tmp, "dq.safetensors")
        expect(run("convert", "--dequantize", "--exclude", "q_iq2_xxs", q, dq), 0)
        # the same values, dequantized
        expect(run("diff", "--ignore-dtype", q, dq, "q_q4_0", "q_q2_k"), 0)
        res = run("diff", "--max-dense-bytes", "100", "--ignore-dtype", q, dq, "q_q4_0")
        expect(res, 1)
        assert "above max_dense_bytes 100" in res.out + res.err, res


def t_bookkeeping_metadata(tmp):
    """Another model format's own fields (onnx.ir_version, tmfile.graph_layout)
    are dropped by a writer without --drop-metadata (issue 37); a user's
    metadata (ONNX metadata_props) still needs it."""
    src = vec("onnx/cnn_small.onnx")
    if src is None:
        return
    tm = os.path.join(tmp, "bk.tmfile")
    expect(run("convert", src, tm), 0)  # onnx.ir_version, onnx.producer_name ...
    meta = run_json("info", "--json", tm).get("graph", {}).get("metadata", {})
    assert "tmfile.graph_layout" in meta and not any(k.startswith("onnx.") for k in meta), meta
    expect(run("convert", tm, os.path.join(tmp, "bk.rten")), 0)  # tmfile.* on to rten
    expect(run("convert", tm, os.path.join(tmp, "bk.onnx")), 0)  # ONNX keeps them
    try:
        import onnx  # Debian's python3-onnx
    except ImportError:
        return
    m = onnx.load(src)
    m.metadata_props.add(key="author", value="someone")
    withp = os.path.join(tmp, "bk_props.onnx")
    onnx.save(m, withp)
    res = run("convert", withp, os.path.join(tmp, "bk2.tmfile"))
    expect(res, 1)
    assert "model metadata 'author' has no place in a tmfile" in res.err, res
    res = run("convert", withp, os.path.join(tmp, "bk2.rten"))
    expect(res, 1)
    assert "'author'" in res.err, res
    expect(run("convert", "--drop-metadata", withp, os.path.join(tmp, "bk2.tmfile")), 0)


def hashes_of(path):
    ts = run_json("ls", "--json", "--hash", path)["tensors"]
    return sorted(t["sha256"] for t in ts)


def torch_checkpoint(src, path, tmp):
    """A PyTorch checkpoint (torch.save's zip layout, made by hand) holding
    src's one float32 tensor as "x"."""
    import ast
    import struct
    import zipfile
    npy = os.path.join(tmp, "torch-src.npy")
    expect(run("convert", "--force", "--drop-names", "--to", "npy", src, npy), 0)
    raw = open(npy, "rb").read()
    hlen = struct.unpack_from("<H", raw, 8)[0]
    header = ast.literal_eval(raw[10:10 + hlen].decode())
    assert header["descr"] == "<f4" and not header["fortran_order"], header
    shape = list(header["shape"])
    data = raw[10 + hlen:]

    def ints(v):
        return b"(" + b"".join(b"J" + struct.pack("<i", x) for x in v) + b"t"
    strides = [1] * len(shape)
    for k in range(len(shape) - 2, -1, -1):
        strides[k] = strides[k + 1] * shape[k + 1]
    pkl = (b"\x80\x02ccollections\nOrderedDict\n)R(X\x01\x00\x00\x00x"
           b"ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storage"
           b"ctorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpu"
           + b"J" + struct.pack("<i", len(data) // 4) + b"tQK\x00" + ints(shape) + ints(strides)
           + b"\x89ccollections\nOrderedDict\n)RtRu.")
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/data/0", data)
        z.writestr("archive/version", b"3\n")


def t_convert_every_pair(tmp):
    """convert between every two of the ten formats, from a one-tensor file of
    each tensor format and a model of each model format: a success writes a
    file that validates (tensor formats: the same tensor bytes, whatever the
    names); a refusal is exit 1 with its reason (a model format needs a graph;
    .npy holds one array), never a crash or a usage error."""
    fmts = [f["name"] for f in run_json("formats", "--json")["formats"]]
    ext = {f["name"]: f["extensions"][0] for f in run_json("formats", "--json")["formats"]}
    caps = {f["name"]: f["capabilities"] for f in run_json("formats", "--json")["formats"]}
    base = vec("tenbin/dtype_float32.ten")  # one float32 tensor named x
    models = {"rten": vec("rten/small_cnn/small_cnn.v2.rten"),
              "onnx": vec("onnx/cnn_small.onnx"), "tmfile": vec("tmfile/cnn_small.tmfile"),
              "tflite": vec("tflite/small/tflm_hello_world_float.tflite")}
    if base is None or None in models.values():
        return
    srcs = {}
    writable = {f["name"]: f["write"] for f in run_json("formats", "--json")["formats"]}
    for f in fmts:
        if "graph" in caps[f]:
            srcs[f] = models[f]
            continue
        if f == "hfindex":  # read only: an index over one shard holding base's tensor
            d = os.path.join(tmp, "pair-src-hf")
            os.makedirs(d, exist_ok=True)
            shard = os.path.join(d, "model-00001-of-00001.safetensors")
            expect(run("convert", "--force", "--to", "safetensors", base, shard), 0)
            srcs[f] = os.path.join(d, "model.safetensors.index.json")
            with open(srcs[f], "w") as idx:
                json.dump({"weight_map": {"x": "model-00001-of-00001.safetensors"}}, idx)
            continue
        if not writable[f]:  # read only (torch): base's tensor in a hand-made checkpoint
            srcs[f] = os.path.join(tmp, "pair-src" + ext[f])
            torch_checkpoint(base, srcs[f], tmp)
            continue
        p = os.path.join(tmp, "pair-src" + ext[f])
        expect(run("convert", "--force", "--drop-names", "--drop-metadata", "--to", f, base, p), 0)
        srcs[f] = p
    want = hashes_of(base)
    done = refused = 0
    for a in fmts:
        for b in fmts:
            out = os.path.join(tmp, "pair-%s-to-%s%s" % (a, b, ext[b]))
            res = run("convert", "--force", "--drop-names", "--drop-metadata", "--to", b,
                      srcs[a], out)
            assert res.rc in (0, 1), (a, b, res)
            if res.rc == 1:
                assert res.err.startswith("tensio: ") and not os.path.exists(out), (a, b, res)
                if "graph" not in caps[a]:  # only a model format (or a read-only one) refuses
                    assert "graph" in caps[b] or not writable[b], (a, b, res)
                refused += 1
                continue
            done += 1
            expect(run("validate", out), 0)
            if "graph" not in caps[a] and "graph" not in caps[b]:
                assert hashes_of(out) == want, (a, b)
            if "graph" in caps[a] and "graph" not in caps[b]:
                assert hashes_of(out), (a, b)  # the weights
    assert done + refused == len(fmts) ** 2 and done > refused, (done, refused)



# ------------------------------------------------------------ dense limits

def btf_coo_file(tensors):
    """A BTF file of float32 COO tensors: [(shape, [(coords, value), ...]), ...]."""
    recs = []
    for shape, entries in tensors:
        r = struct.pack("<QBB6x", len(shape), 4, 1) + struct.pack(f"<{len(shape)}q", *shape)
        r += struct.pack("<2q", len(entries), len(shape))
        for coords, _ in entries:
            r += struct.pack(f"<{len(shape)}q", *coords)
        r += struct.pack("<q", len(entries))
        r += b"".join(struct.pack("<f", v) for _, v in entries)
        r += bytes(-len(r) % 8)
        recs.append(r)
    head = 8 + 8 * len(recs)
    offs, at = [], head
    for r in recs:
        offs.append(at)
        at += len(r)
    return struct.pack(f"<Q{len(recs)}Q", len(recs), *offs) + b"".join(recs)


def t_max_dense_ls(tmp):
    # three 4000-byte sparse tensors and a huge one: the huge one is never
    # hashed; with a budget of 8000 the third small one is over the sum
    path = os.path.join(tmp, "sparse.btf")
    small = ([1000], [([3], 1.5), ([999], -2.0)])
    huge = ([2, 6, 5, 18014398509481988], [([1, 5, 4, 18014398509481987], 7.0)])
    with open(path, "wb") as f:
        f.write(btf_coo_file([small, huge, small, small]))
    res = run("ls", "--json", "--hash", path)
    expect(res, 1)
    j = json.loads(res.out)
    ts = j["tensors"]
    assert len(ts) == 4, res
    for i in (0, 2, 3):
        assert ts[i]["sha256"] and "sha256_error" not in ts[i], ts[i]
    assert ts[1]["sha256"] is None, ts[1]
    e = ts[1]["sha256_error"]
    assert e["code"] == "TIO_E_LIMIT", e
    for want in ("4323455642275677120 bytes", "max_dense_bytes 268435456",
                 "--max-dense-bytes", "tensor 1"):
        assert want in e["message"], e
    assert ts[1]["indices_sha256"] and ts[1]["values_sha256"], ts[1]
    assert "tensor 1" in res.err and "--max-dense-bytes" in res.err, res
    # the budget is per file: the small ones add up
    res = run("ls", "--json", "--hash", "--max-dense-bytes", "8000", path)
    expect(res, 1)
    ts = json.loads(res.out)["tensors"]
    assert ts[0]["sha256"] and ts[2]["sha256"], ts
    assert ts[3]["sha256"] is None and ts[3]["sha256_error"]["code"] == "TIO_E_LIMIT", ts[3]
    assert "before it took 8000" in ts[3]["sha256_error"]["message"], ts[3]
    # text: '-' in the column, the reason on stderr, exit 1
    res = run("ls", "--hash", path)
    expect(res, 1)
    rows = res.out.splitlines()[1:]
    assert len(rows) == 4 and rows[1].split()[-1] == "-", res
    assert len(rows[0].split()[-1]) == 64, res
    # without --hash nothing is expanded: exit 0
    expect(run("ls", "--json", path), 0)
    # raised, the small ones all hash
    res = run("ls", "--json", "--hash", "--max-dense-bytes", "12000", path)
    ts = json.loads(res.out)["tensors"]
    assert all(ts[i]["sha256"] for i in (0, 2, 3)), ts


def t_ls_hash_ahead(tmp):
    # ls --hash hashes dense tensors on worker threads ahead of the listing
    # (tools/ahead.c); COO ones stay in the listing, in order, within
    # the budget. Dense tensors of many sizes around sparse ones (one over
    # the budget): every hash right, in order, and stdout and stderr the
    # same as on one processor (no workers)
    import hashlib
    rng = __import__("random").Random(38)
    recs, want = [], []
    for i in range(40):
        if i in (5, 17, 30):
            shape = [1000] if i != 17 else [2, 18014398509481988]
            coords = [[3], [999]] if i != 17 else [[1, 18014398509481987]]
            recs.append(("coo", shape, coords))
            want.append(None)
            continue
        n = rng.choice((0, 1, 7, 1000, 65536, 300000)) + i
        data = bytes(rng.getrandbits(8) for _ in range(min(n, 64) * 4)) * (n // 64 + 1)
        data = data[:n * 4]
        recs.append(("dense", [n], data))
        want.append(hashlib.sha256(data).hexdigest())
    blobs = []
    for kind, shape, x in recs:
        r = struct.pack("<QBB6x", len(shape), 4, 1 if kind == "coo" else 0)
        r += struct.pack(f"<{len(shape)}q", *shape)
        if kind == "coo":
            r += struct.pack("<2q", len(x), len(shape))
            r += b"".join(struct.pack(f"<{len(shape)}q", *c) for c in x)
            r += struct.pack("<q", len(x)) + struct.pack(f"<{len(x)}f", *([1.5] * len(x)))
        else:
            r += x
        r += bytes(-len(r) % 8)
        blobs.append(r)
    offs, at = [], 8 + 8 * len(blobs)
    for r in blobs:
        offs.append(at)
        at += len(r)
    path = os.path.join(tmp, "ahead.btf")
    with open(path, "wb") as f:
        f.write(struct.pack(f"<Q{len(blobs)}Q", len(blobs), *offs) + b"".join(blobs))

    def ls(*args):
        return pinned.pinned_equal(TENSIO, "ls", *args, path)
    res = ls("--json", "--hash")
    assert res.returncode == 1, res  # tensor 17 is over the budget
    ts = json.loads(res.stdout)["tensors"]
    assert [t["index"] for t in ts] == list(range(40)), ts
    for i, t in enumerate(ts):
        if want[i] is not None:
            assert t["sha256"] == want[i], (i, t)
        elif i == 17:
            assert t["sha256"] is None and t["sha256_error"]["code"] == "TIO_E_LIMIT", t
        else:
            assert len(t["sha256"]) == 64 and len(t["values_sha256"]) == 64, t
    assert b"tensor 17" in res.stderr and res.stderr.count(b"\n") == 1, res.stderr
    # the text listing's column holds the same hashes
    rows = ls("--hash").stdout.decode().splitlines()[1:]
    assert [r.split()[-1] for r in rows] == [w if w else ts[i]["sha256"] or "-"
                                            for i, w in enumerate(want)], rows


def t_max_dense_convert(tmp):
    path = os.path.join(tmp, "bomb.btf")
    with open(path, "wb") as f:
        f.write(btf_coo_file([([2, 8796093022214, 2, 5], [([1, 8796093022213, 1, 4], 1.0)])]))
    out = os.path.join(tmp, "bomb.ten")
    res = run("convert", "--densify", path, out)
    expect(res, 1, stdout_empty=True)
    for want in ("densifying it takes 703687441777120 bytes", "max_dense_bytes 268435456",
                 "--max-dense-bytes"):
        assert want in res.err, res
    assert "out of memory" not in res.err, res
    assert not os.path.exists(out) and os.listdir(tmp) == ["bomb.btf"], os.listdir(tmp)
    # without --densify: the hint names --densify, then says it would still fail
    res = run("convert", path, out)
    expect(res, 1)
    assert "--densify" in res.err and "still fail" in res.err and "max_dense_bytes" in res.err, res
    # a small one converts within a raised limit and not below it
    small = os.path.join(tmp, "small.btf")
    with open(small, "wb") as f:
        f.write(btf_coo_file([([100, 30], [([1, 2], 3.0)])]))
    expect(run("convert", "--densify", "--max-dense-bytes", "11999", small, out), 1)
    assert not os.path.exists(out)
    expect(run("convert", "--densify", "--max-dense-bytes", "12000", small, out), 0)
    os.unlink(out)
    expect(run("convert", "--densify", "--max-dense-bytes", "1K", small, out), 1)
    expect(run("convert", "--densify", "--max-dense-bytes", "12KiB", small, out), 0)


def t_max_dense_usage():
    path = vec("btf/coo_float32_rank1.btf")
    if path is None:
        return
    for bad in ("0", "", "x", "1Q", "-5", "1.5G", "99999999999999999999", "20000000T"):
        res = run("ls", "--hash", "--max-dense-bytes", bad, path)
        expect(res, 2, stdout_empty=True)
        assert "--max-dense-bytes" in res.err, res
    for good in ("36", "64K", "2M", "3G", "1T", "5mib", "unlimited"):
        expect(run("ls", "--hash", "--max-dense-bytes", good, path), 0)
    expect(run("ls", "--hash", "--max-dense-bytes", "35", path), 1)  # its dense size is 36
    for cmd in ("ls", "convert", "send", "recv"):
        res = run(cmd, "--help")
        assert "--max-dense-bytes" in res.out, (cmd, res)


def t_env_limits(tmp):
    # TENSIO_LIMITS sets tio_limits for every file a command opens (there is no
    # option per limit); a field a command's own option sets stays its own
    path = vec("tenbin/multi_infos.ten")
    if path is None:
        return
    n = len(run_json("ls", "--json", path)["tensors"])
    assert n > 1
    for cmd in (("ls",), ("info",), ("validate",), ("convert", "--force")):
        args = [*cmd, path] + ([os.path.join(tmp, "lim.npz")] if cmd[0] == "convert" else [])
        res = run(*args, env={"TENSIO_LIMITS": "max_tensors=%d" % (n - 1)})
        expect(res, 1, stdout_empty=cmd[0] != "validate")
        said = res.out + res.err  # validate reports on stdout
        assert "max_tensors" in said and str(n - 1) in said, (cmd, res)
        expect(run(*args, env={"TENSIO_LIMITS": "max_tensors=%d,max_rank=8" % n}), 0)
    assert "hint: TENSIO_LIMITS=" in run("ls", path, env={"TENSIO_LIMITS": "max_tensors=1"}).err
    for bad in ("max_tensors=0", "max_tensors=", "max_tensors", "nope=5", "max_tensors=5x",
                "max_tensors=1,max_rank=-1", "=4"):
        res = run("ls", path, env={"TENSIO_LIMITS": bad})
        expect(res, 2, stdout_empty=True)
        assert "TENSIO_LIMITS:" in res.err, (bad, res)
    expect(run("ls", path, env={"TENSIO_LIMITS": ""}), 0)  # unset
    # --max-dense-bytes given wins over TENSIO_LIMITS' max_dense_bytes
    coo = vec("btf/coo_float32_rank1.btf")  # its dense size is 36
    if coo is not None:
        big = {"TENSIO_LIMITS": "max_dense_bytes=1M"}
        expect(run("ls", "--hash", "--max-dense-bytes", "35", coo, env=big), 1)
        expect(run("ls", "--hash", coo, env={"TENSIO_LIMITS": "max_dense_bytes=35"}), 1)
        expect(run("ls", "--hash", "--max-dense-bytes", "36", coo,
                   env={"TENSIO_LIMITS": "max_dense_bytes=35"}), 0)
    # ONNX's decode budget raised so: tests/onnx/test_onnx.py (dense_graph)


# The files of issue 15, kept in fuzz/regress/btf/ and made by
# tests/support/make_dense_bomb.py from coo_int8_rank4.btf: a few stored values
# in a shape whose dense size is ~4.3e18 and ~1.4e15 bytes.
BOMB_SCRIPT = os.path.join(REPO, "tests", "support", "make_dense_bomb.py")
REGRESS_BTF = os.path.join(REPO, "fuzz", "regress", "btf")


def dense_bombs():
    """[(path in fuzz/regress/btf, dense size in bytes)], as the script lists them."""
    cp = subprocess.run([sys.executable, BOMB_SCRIPT, "--list"], stdout=subprocess.PIPE,
                        check=True, timeout=60)
    out = []
    for line in cp.stdout.decode().splitlines():
        name, dense = line.split()
        out.append((os.path.join(REGRESS_BTF, name), int(dense)))
    assert len(out) == 2, out
    return out


def run_bounded(*args, cwd=None):
    """run(), but a command that takes 60 s is a failure: these need well under a
    second (the work is bounded by the input), and a bound that failed would make
    them run for hours; the limit is far above what a loaded machine needs."""
    t0 = time.monotonic()
    cp = subprocess.run([TENSIO, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        cwd=cwd, timeout=120)
    took = time.monotonic() - t0
    assert took < 60, f"{args} took {took:.1f} s (a limit far above the < 1 s it needs)"
    return Result(cp)


def t_dense_bomb_files(tmp):
    """The committed files are exactly what the script makes from the vector."""
    d = os.path.join(tmp, "bombs")
    os.mkdir(d)
    subprocess.run([sys.executable, BOMB_SCRIPT, d], check=True, timeout=60)
    made = sorted(os.listdir(d))
    assert made == sorted(os.path.basename(p) for p, _ in dense_bombs()), made
    for name in made:
        assert read_bytes(os.path.join(d, name)) == read_bytes(os.path.join(REGRESS_BTF, name)), \
            f"fuzz/regress/btf/{name} differs from what make_dense_bomb.py writes"
    cp = subprocess.run([sys.executable, BOMB_SCRIPT, "--check", REGRESS_BTF], timeout=60)
    assert cp.returncode == 0, cp


def t_dense_bomb_ls(path, dense):
    want = (f"{dense} bytes", "max_dense_bytes 268435456", "--max-dense-bytes")
    res = run_bounded("ls", "--json", "--hash", path)
    expect(res, 1)
    ts = json.loads(res.out)["tensors"]
    assert len(ts) == 1, res
    t = ts[0]
    assert t["layout"] == "coo" and t["nnz"] == 7, t
    assert t["indices_sha256"] and t["values_sha256"], t
    assert t["sha256"] is None and list(t)[-2:] == ["sha256", "sha256_error"], t
    assert t["sha256_error"]["code"] == "TIO_E_LIMIT", t
    for w in want:
        assert w in t["sha256_error"]["message"], t
        assert w in res.err, res
    res = run_bounded("ls", "--hash", path)
    expect(res, 1)
    rows = res.out.splitlines()
    assert len(rows) == 2 and rows[1].split()[-1] == "-", res
    assert all(w in res.err for w in want), res
    # what never expands it stays fast and succeeds
    for args in (("ls", "--json"), ("info",), ("dump",), ("dump", "--json"), ("validate",)):
        expect(run_bounded(*args, path), 0)


def t_dense_bomb_convert(path, dense, tmp):
    d = os.path.join(tmp, "bomb-" + os.path.basename(path)[-8:])
    os.mkdir(d)
    for ext in ("ten", "zmsg"):
        out = os.path.join(d, "out." + ext)
        res = run_bounded("convert", "--densify", path, out)
        expect(res, 1, stdout_empty=True)
        for w in (f"densifying it takes {dense} bytes", "max_dense_bytes 268435456",
                  "--max-dense-bytes"):
            assert w in res.err, res
        assert "out of memory" not in res.err, res
        assert os.listdir(d) == [], os.listdir(d)  # no output, no temporary left


def main():
    if not binary_ok():
        return 1
    tmp = tempfile.mkdtemp(prefix="tensio-cli-")
    try:
        case("version", t_version)
        case("global help", t_global_help)
        for c in COMMANDS:
            case(f"{c} --help", t_command_help, c)
        case("usage errors", t_usage_errors)
        case("unknown format lists formats", t_unknown_format_lists_formats)
        case("formats", t_formats)

        for fmt in ("btf", "tenbin"):
            for rel, m in vector_manifests(fmt):
                case(f"ls --json --hash {rel}", t_ls_json_manifest, rel, m, fmt)
                case(f"info --json {rel}", t_info_manifest, rel, m)
        case("ls text", t_ls_text)
        case("ls text names", t_ls_text_names)
        case("ls empty container", t_ls_empty_container)
        case("ls --format", t_ls_forced_format, tmp)

        case("info", t_info)
        case("info findings", t_info_findings)

        case("dump text coo", t_dump_text_coo)
        case("dump json coo", t_dump_json_coo)
        for rel, m in vector_manifests("btf") + vector_manifests("tenbin"):
            if "/" in rel.split("/", 1)[1]:
                continue  # upstream/: covered by ls
            case(f"dump values {rel}", t_dump_values, rel, m)
        case("dump limit and selection", t_dump_limit_and_select)
        case("dump default limit", t_dump_large_limit)
        case("dump float16 text", t_dump_half)
        case("dump every float16", t_dump_half_all, tmp)

        fi = {}
        case("formats for convert", lambda: fi.update(formats_info()))
        tenbin_dtypes = set(fi.get("tenbin", {}).get("dtypes", []))
        conv = os.path.join(tmp, "convert")
        os.mkdir(conv)
        for rel, m in vector_manifests("btf"):
            if "/upstream/" in rel:
                continue
            if all(t["layout"] == 0 for t in m["tensors"]):
                case(f"convert round trip {rel}", t_convert_roundtrip, rel, m, conv,
                     tenbin_dtypes)
            else:
                case(f"convert coo {rel}", t_convert_coo, rel, m, conv)
        case("convert names", t_convert_names, conv)
        case("convert several losses", t_convert_several_losses, conv)
        misc = os.path.join(tmp, "misc")
        os.mkdir(misc)
        case("convert misc", t_convert_misc, misc)
        case("convert into a FIFO or a device", t_convert_into_special, misc)
        case("convert cleans stale temps", t_convert_cleans_stale_temps, tmp)

        good = [p for p in (vec(rel) for fmt in ("btf", "tenbin")
                            for rel, _ in vector_manifests(fmt)
                            if "/upstream/" not in rel) if p]
        good += [p for p in (vec(f"btf/malformed/{n}.btf") for n in BTF_VALID) if p]
        good += [p for p in (vec(f"tenbin/malformed/{n}.ten") for n in TEN_VALID) if p]
        if good:
            case("validate good files", t_validate_good, good)
        for fmt, ext, names, readable in (("btf", "btf", BTF_REJECT, False),
                                          ("btf", "btf", BTF_FINDING, True),
                                          ("tenbin", "ten", TEN_REJECT, False),
                                          ("tenbin", "ten", TEN_FINDING, True)):
            for n in names:
                p = vec(f"{fmt}/malformed/{n}.{ext}")
                if p:
                    case(f"validate {fmt}/malformed/{n}", t_validate_bad, p, readable)
        p = vec("btf/upstream/test_tensor.pre_alignment_1bef0ea8.btf")
        if p:
            case("validate pre-alignment btf", t_validate_bad, p, True)
        case("validate several files", t_validate_mixed)
        case("missing file", t_missing_file, tmp)
        for name, fn in (("ls", t_max_dense_ls), ("convert", t_max_dense_convert)):
            d = os.path.join(tmp, "dense-" + name)
            os.mkdir(d)
            case(f"max dense bytes: {name}", fn, d)
        case("max dense bytes: usage", t_max_dense_usage)
        case("TENSIO_LIMITS", t_env_limits, tmp)
        d = os.path.join(tmp, "hash-ahead")
        os.mkdir(d)
        case("ls --hash ahead of the listing", t_ls_hash_ahead, d)
        case("write error", t_write_error)
        case("standard input and output", t_stdio, tmp)
        case("validate and convert --json", t_validate_convert_json, tmp)
        case("progress", t_progress, tmp)
        case("filters and cat", t_filters_and_cat, tmp)
        case("quantized stats and diff", t_quant_stats_diff)
        case("another format's own metadata dropped", t_bookkeeping_metadata, tmp)
        case("convert between every two formats", t_convert_every_pair, tmp)
        case("dense bombs: committed = generated", t_dense_bomb_files, tmp)
        for path, dense in dense_bombs():
            rel = os.path.relpath(path, REPO)
            case(f"dense bomb ls {rel}", t_dense_bomb_ls, path, dense)
            case(f"dense bomb convert {rel}", t_dense_bomb_convert, path, dense, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    return finish()


if __name__ == "__main__":
    sys.exit(main())
