#!/usr/bin/env python3
"""End-to-end tests of the `tensio` command-line tool on the model formats'
own files: rten (ls and info against the manifests, convert, long names
referred to) and Tengine tmfile (ls and info against the manifests, convert,
a global pool's window fields). The other commands and formats: test_cli.py.

Usage: python3 test_cli_models.py /path/to/tensio

The last line printed is "N passed, M failed"; the exit status is non-zero
on any failure.
"""

import hashlib
import json
import math
import os
import re
import shutil
import struct
import sys
import tempfile

from cli_harness import (binary_ok, case, expect, finish, manifest, read_bytes, run, run_json,
                         vec)

# The manifests have rten's attrs fields; tensio shows their ONNX form
# (src/rten/opmap.c). The fields the rten vectors use:
ONNX_NAMES = {"groups": "group", "allow_zero": "allowzero", "kernel_size": "kernel_shape",
              "transpose_a": "transA", "transpose_b": "transB", "keep_dims": "keepdims"}


def onnx_attr(name, v):
    if name == "auto_pad":
        return name, ["SAME_UPPER", "NOTSET"][v]
    if name == "to":  # rten DataType -> TensorProto.DataType
        return name, [6, 1, 3, 2][v]
    return ONNX_NAMES.get(name, name), v

def t_tmfile_global_pool_fields(tmp):
    """A tmfile global pool whose window fields are not convert_tool's
    (2, 2, 1, 1), as other tmfile writers leave them: they mean nothing
    (Tengine takes the window from the input), so ONNX and rten are written
    without them, and tmfile -> tmfile keeps them byte for byte (issue 37)."""
    try:
        import onnx
        from onnx import TensorProto, helper
    except ImportError:
        print("SKIPPED: tmfile global pool fields (no python3-onnx)")
        return
    n = helper.make_node("GlobalAveragePool", ["x"], ["y"], name="gap")
    g = helper.make_graph([n], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 1, 1])])
    src = os.path.join(tmp, "gap.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), src)
    tm = os.path.join(tmp, "gap.tmfile")
    expect(run("convert", src, tm), 0)
    b = bytearray(read_bytes(tm))
    # TM2_PoolParam: alg 1 (avg), kernel 2x2, stride 1x1, global 1, caffe 0, pads 0
    at = b.find(struct.pack("<11i", 1, 2, 2, 1, 1, 1, 0, 0, 0, 0, 0))
    assert at >= 0, "the pool's param"
    struct.pack_into("<4i", b, at + 4, 8, 8, 2, 2)
    odd = os.path.join(tmp, "gap_odd.tmfile")
    with open(odd, "wb") as f:
        f.write(b)
    j = run_json("info", "--json", odd)
    assert "tmfile.kernel_h" in json.dumps(j["graph"]["nodes"][0]), j["graph"]["nodes"][0]
    out = os.path.join(tmp, "gap_odd.onnx")
    expect(run("convert", odd, out), 0)
    onnx.checker.check_model(onnx.load(out), full_check=True)
    assert [nd.op_type for nd in onnx.load(out).graph.node] == ["GlobalAveragePool"]
    assert not onnx.load(out).graph.node[0].attribute
    expect(run("convert", odd, os.path.join(tmp, "gap_odd.rten")), 0)
    again = os.path.join(tmp, "gap_again.tmfile")
    expect(run("convert", odd, again), 0)
    assert read_bytes(again) == bytes(b), "tmfile -> tmfile keeps the fields"



# -------------------------------------------------------------------- rten

RTEN_MODELS = ["matmul_add", "small_cnn", "shape_ops", "int_consts", "big_init"]
RTEN_DTYPES = {"Float32": "float32", "Float": "float32", "Int32": "int32", "Int8": "int8",
               "UInt8": "uint8"}


def snake(name):
    return re.sub(r"([A-Z])", lambda mo: "_" + mo.group(1).lower(), name)


def rten_vectors():
    """(rel, manifest, version) of every rten model file."""
    out = []
    for mname in RTEN_MODELS:
        m = manifest(f"rten/{mname}/{mname}.json")
        if m is None:
            continue
        for v in (1, 2):
            out.append((f"rten/{mname}/{mname}.v{v}.rten", m, v))
    return out


def t_rten_ls(rel, m):
    path = vec(rel)
    if path is None:
        return
    j = run_json("ls", "--json", "--hash", path)
    assert j["format"] == "rten", j["format"]
    consts = m["graph"]["constants"]
    assert len(j["tensors"]) == len(consts), j
    for g, w in zip(j["tensors"], consts):
        assert g["name"] == w["name"], (g, w)
        assert g["dtype"] == RTEN_DTYPES[w["dtype"]], (g, w)
        assert g["shape"] == w["shape"], (g, w)
        assert g["nbytes"] == w["nbytes"], (g, w)
        assert g["sha256"] == w["sha256"], (g, w)


def t_rten_info(rel, m, version):
    path = vec(rel)
    if path is None:
        return
    j = run_json("info", "--json", path)
    assert j["format"] == "rten"
    assert j["props"]["version"] == str(version), j["props"]
    assert j["props"]["schema_version"] == "1", j["props"]
    if version == 2:
        h = m["files"]["v2"]["header"]
        for k in ("model_data_offset", "model_data_len", "tensor_data_offset"):
            assert j["props"][k] == str(h[k]), (k, j["props"])
    g = j["graph"]
    meta = {k: v for k, v in m["metadata"].items() if v is not None}
    assert g["metadata"] == meta, g["metadata"]
    for side in ("inputs", "outputs"):
        got = [(x["name"], x["dtype"], x["shape"]) for x in g[side]]
        want = [(x["name"], RTEN_DTYPES[x["dtype"]], x["shape"]) for x in m[side]]
        assert got == want, (side, got, want)
    assert g["constants"] == len(m["graph"]["constants"])
    ops = m["graph"]["operators"]
    assert [n["op"] for n in g["nodes"]] == m["operator_types_in_order"]
    for n, w in zip(g["nodes"], ops):
        assert n["name"] == w["name"] and n["native_id"] == w["type_id"], (n, w)
        assert n["inputs"] == w["inputs"] and n["outputs"] == w["outputs"], (n, w)
        want = dict(onnx_attr(snake(k), (int(v) if isinstance(v, bool) else v))
                    for k, v in (w.get("attrs") or {}).items() if v is not None)
        assert n["attrs"] == want, (n["attrs"], want)
    # the text form names every operator in order, with its attributes
    res = run("info", path)
    expect(res, 0)
    assert "format details:" in res.out and "operators:" in res.out, res.out
    pos = 0
    for w in ops:
        at = res.out.find(f"  {w['name']}  {w['type']}", pos)
        assert at >= 0, f"operator {w['name']} {w['type']} not in order in:\n{res.out}"
        pos = at


def shared_name_rten(name_len, refs):
    """A V1 rten model: value 0 with a name of name_len bytes, one Add whose
    `refs` inputs all name it, and `refs` graph inputs that all name it.
    Laid out forward: a table is 8 bytes of header (its vtable just before
    it), fields 4 bytes each; every uoffset points forward."""
    buf = bytearray(4)  # the root uoffset
    fix = []  # (position of a uoffset, label of its target)
    at = {}

    def align(n):
        while len(buf) % n:
            buf.append(0)

    def table(label, fields, nslots):
        # fields: {id: ("u8"|"i32", value) or ("ref", label)}
        align(4)
        vt = len(buf)
        buf.extend(struct.pack("<HH", 4 + 2 * nslots, 4 + 4 * len(fields)))
        offs = {fid: 4 + 4 * k for k, fid in enumerate(sorted(fields))}
        buf.extend(struct.pack(f"<{nslots}H", *[offs.get(i, 0) for i in range(nslots)]))
        align(4)
        at[label] = len(buf)
        buf.extend(struct.pack("<i", len(buf) - vt))
        for fid in sorted(fields):
            kind, v = fields[fid]
            if kind == "ref":
                fix.append((len(buf), v))
                buf.extend(b"\0" * 4)
            else:
                buf.extend(struct.pack("<B3x" if kind == "u8" else "<i", v))

    def vector(label, fmt, items):
        align(4)
        at[label] = len(buf)
        buf.extend(struct.pack(f"<I{len(items)}{fmt}", len(items), *items))

    table("model", {0: ("i32", 1), 1: ("ref", "graph")}, 2)
    table("graph", {0: ("ref", "nodes"), 1: ("ref", "gins")}, 2)
    align(4)
    at["nodes"] = len(buf)
    buf.extend(struct.pack("<I", 2))
    for lbl in ("v", "o"):
        fix.append((len(buf), lbl))
        buf.extend(b"\0" * 4)
    vector("gins", "I", [0] * refs)
    table("v", {0: ("ref", "name"), 1: ("u8", 3), 2: ("ref", "vn")}, 3)
    table("vn", {}, 0)
    table("o", {1: ("u8", 1), 2: ("ref", "op")}, 3)
    table("op", {0: ("u8", 0), 3: ("ref", "ins")}, 4)
    vector("ins", "i", [0] * refs)
    align(4)
    at["name"] = len(buf)
    buf.extend(struct.pack("<I", name_len) + b"n" * name_len + b"\0")
    align(4)
    struct.pack_into("<I", buf, 0, at["model"])
    for pos, lbl in fix:
        struct.pack_into("<I", buf, pos, at[lbl] - pos)
    return bytes(buf)


def t_info_long_names(tmp):
    """A value named by 30,000 bytes that 2,000 operands and graph inputs name:
    info prints the name in full once (its first row as a graph input) and
    cut everywhere else, and pads no column to it, so the output stays
    proportional to the file (120 MB of text and of JSON before)."""
    path = os.path.join(tmp, "names.rten")
    with open(path, "wb") as f:
        f.write(shared_name_rten(30000, 2000))
    size = os.path.getsize(path)
    res = run("info", path)
    expect(res, 0)
    full = "n" * 30000
    assert res.out.count(full) == 1, res.out.count(full)
    cut = "n" * 128 + "...#0"
    assert res.out.count(cut) == 2000 + 1999, res.out.count(cut)
    # the name once, then at most 160 bytes per reference (4,000 of them)
    assert len(res.out) < 30000 + 4000 * 160 + 4096, (len(res.out), size)
    j = run_json("info", "--json", path)
    g = j["graph"]
    assert g["inputs"][0]["name"] == full
    assert all(i["name"] == 0 for i in g["inputs"][1:])
    assert g["nodes"][0]["inputs"] == [0] * 2000
    res = run("info", "--json", path)
    assert len(res.out) < 30000 + 4000 * 48 + 4096, (len(res.out), size)
    # a name of 128 bytes is not cut
    with open(path, "wb") as f:
        f.write(shared_name_rten(128, 3))
    res = run("info", path)
    assert "..." not in res.out and res.out.count("n" * 128) == 6, res.out


def t_rten_convert(tmp):
    """V1 <-> V2, weights export, refusals, validate."""
    src = vec("rten/small_cnn/small_cnn.v2.rten")
    m = manifest("rten/small_cnn/small_cnn.json")
    if src is None or m is None:
        return
    v1 = os.path.join(tmp, "m.v1.rten")
    expect(run("convert", "--rten-version", "1", src, v1), 0)
    with open(v1, "rb") as f:
        assert f.read(4) != b"RTEN", "a V1 file has no header"
    j = run_json("info", "--json", v1)
    assert j["props"]["version"] == "1", j["props"]
    v2 = os.path.join(tmp, "m.rten")
    expect(run("convert", v1, v2), 0)
    with open(v2, "rb") as f:
        head = f.read(32)
    assert head[:4] == b"RTEN" and struct.unpack("<I", head[4:8])[0] == 2, head
    mo, ml, to = struct.unpack("<QQQ", head[8:32])
    assert mo == 32 and to % 64 == 0 and mo + ml <= to < mo + ml + 64, (mo, ml, to)
    # the weights hash the same through both conversions
    a = run_json("ls", "--json", "--hash", src)["tensors"]
    b = run_json("ls", "--json", "--hash", v2)["tensors"]
    assert [t["sha256"] for t in a] == [t["sha256"] for t in b]
    # --format-version is the same option
    v1b = os.path.join(tmp, "m2.rten")
    expect(run("convert", "--format-version", "1", v2, v1b), 0)
    assert read_bytes(v1b) == read_bytes(v1), "V1 output differs between the two options"
    # weights to a tensor format: the graph is not written, no flag needed
    ten = os.path.join(tmp, "w.ten")
    expect(run("convert", src, ten), 0)
    t = run_json("ls", "--json", "--hash", ten)
    assert t["format"] == "tenbin" and [x["sha256"] for x in t["tensors"]] == \
        [x["sha256"] for x in a]
    assert "graph" not in run_json("info", "--json", ten)
    # a tensor file cannot become a model
    res = run("convert", ten, os.path.join(tmp, "bad.rten"))
    expect(res, 1)
    assert "needs a graph" in res.err, res
    assert not os.path.exists(os.path.join(tmp, "bad.rten"))
    # a version that does not exist
    res = run("convert", "--rten-version", "3", src, os.path.join(tmp, "v3.rten"))
    assert res.rc != 0 and "version 3" in res.err, res
    res = run("convert", "--format-version", "2", src, os.path.join(tmp, "v.ten"))
    assert res.rc == 1 and "not versioned" in res.err, res
    # validate: every vector is clean
    paths = [p for p in (vec(rel) for rel, _, _ in rten_vectors()) if p]
    res = run("validate", *paths)
    expect(res, 0)
    # a truncated model is rejected with the format and offset named
    cut = os.path.join(tmp, "cut.rten")
    with open(cut, "wb") as f:
        f.write(read_bytes(src)[:1000])
    res = run("validate", cut)
    assert res.rc != 0 and "rten: offset" in res.out + res.err, res


# ------------------------------------------------------------------ tmfile

TM_MODELS = ["cnn_small", "concat_reshape_softmax", "mlp_matmul_add", "big_fc", "mnist_repo"]
TM_DTYPES = {"fp32": "float32", "fp16": "float16", "int8": "int8", "uint8": "uint8",
             "int32": "int32", "int16": "int16"}


def tm_vectors():
    """(rel, manifest) of every convert_tool tmfile."""
    out = []
    for mname in TM_MODELS:
        m = manifest(f"tmfile/{mname}.json")
        if m is not None:
            out.append((f"tmfile/{mname}.tmfile", m))
    return out


def tm_masked(a, b, masks):
    """a == b outside the masked [start, end) ranges."""
    if len(a) != len(b):
        return False
    a, b = bytearray(a), bytearray(b)
    for mk in masks:
        s, e = (mk["start"], mk["end"]) if isinstance(mk, dict) else mk
        a[s:e] = bytes(e - s)
        b[s:e] = bytes(e - s)
    return a == b


def t_tmfile_ls(rel, m):
    path = vec(rel)
    if path is None:
        return
    j = run_json("ls", "--json", "--hash", path)
    assert j["format"] == "tmfile", j["format"]
    consts = [t for t in m["tensors"] if t.get("buffer") and t["buffer"]["offset_data"]]
    # the file's constants, then the ONNX form's stand-ins for Reshape shapes
    # convert_tool stored wrongly: int32 tensors holding the re_shape param
    # Tengine uses ("<shape constant>:re_shape", docs/formats/tmfile.md)
    extra = j["tensors"][len(consts):]
    want_extra = []
    for n in m["nodes"]:
        if n["tm2_op_name"] != "Reshape" or len(n["inputs"]) != 2:
            continue
        sh = m["tensors"][n["inputs"][1]]
        rs = n["param"]["re_shape"]
        data = struct.pack("<%di" % len(rs), *rs)
        if sh.get("buffer") and sh["buffer"]["sha256"] != hashlib.sha256(data).hexdigest():
            want_extra.append((sh["name"] + ":re_shape", hashlib.sha256(data).hexdigest()))
    assert [(t["name"], t["sha256"]) for t in extra] == want_extra, (extra, want_extra)
    assert len(j["tensors"]) == len(consts) + len(want_extra), j
    for g, w in zip(j["tensors"], consts):
        assert g["name"] == w["name"], (g, w)
        assert g["dtype"] == TM_DTYPES[w["dtype"]], (g, w)
        assert g["shape"] == w["dims"], (g, w)
        assert g["nbytes"] == w["buffer"]["bytes_expected_from_dims"], (g, w)
        assert g["sha256"] == w["buffer"]["sha256"], (g, w)


def t_tmfile_info(rel, m):
    path = vec(rel)
    if path is None:
        return
    # the ONNX form: no Const or InputOp operators, ONNX op names
    onnx_form = run_json("info", "--json", path)["graph"]
    ops = [n["op"] for n in onnx_form["nodes"]]
    assert "Const" not in ops and "InputOp" not in ops, ops
    assert [x["name"] for x in onnx_form["inputs"]] == \
        [m["tensors"][m["nodes"][ni]["outputs"][0]]["name"] for ni in m["subgraph"]["input_nodes"]]
    # the graph as the file stores it
    j = run_json("info", "--json", "--native", path)
    assert j["format"] == "tmfile"
    assert j["finding_count"] == 0, j["findings"]
    p = j["props"]
    assert p["variant"] == "lite" and p["subgraph_size"] == "40", p
    assert p["ver_main"] == "2" and p["offset_root"] == str(m["header"]["offset_root"]), p
    assert p["orig_format"] == "3 (onnx)", p
    g = j["graph"]
    assert g["metadata"]["tmfile.orig_format"] == "onnx", g["metadata"]
    assert g["values"] == len(m["tensors"])
    tensors = m["tensors"]
    for side in ("inputs", "outputs"):
        want = []
        for ni in m["subgraph"]["input_nodes" if side == "inputs" else "output_nodes"]:
            for t in m["nodes"][ni]["outputs"]:
                want.append((tensors[t]["name"], TM_DTYPES[tensors[t]["dtype"]],
                             tensors[t]["dims"]))
        got = [(x["name"], x["dtype"], x["shape"]) for x in g[side]]
        assert got == want, (side, got, want)
    assert len(g["nodes"]) == len(m["nodes"])
    for n, w in zip(g["nodes"], m["nodes"]):
        assert n["name"] == w["name"] and n["native_id"] == w["tm2_op_type"], (n, w)
        assert n.get("native_op", n["op"]) == w["tm2_op_name"], (n, w)
        assert n["inputs"] == [tensors[i]["name"] for i in w["inputs"]], (n, w)
        assert n["outputs"] == [tensors[i]["name"] for i in w["outputs"]], (n, w)
        for k, v in (w["param"] or {}).items():
            if w["tm2_op_name"] == "Eltwise" and k != "type":
                assert k not in n["attrs"], (k, n)  # uninitialised bytes in lite files
                continue
            if k.startswith("offset_") and k not in n["attrs"]:
                continue
            got = n["attrs"][k]
            if isinstance(v, float):
                assert math.isclose(got, v, rel_tol=1e-6, abs_tol=1e-30), (k, got, v)
            else:
                assert got == v, (k, got, v)
    res = run("info", "--native", path)
    expect(res, 0)
    assert "operators:" in res.out, res.out
    pos = 0
    for w in m["nodes"]:
        at = res.out.find(f"  {w['name']}  ", pos)
        assert at >= 0, f"node {w['name']} not in order in:\n{res.out}"
        pos = at


def t_tmfile_convert(tmp):
    """tmfile -> tmfile (byte identity outside the masks), weights export,
    rten -> tmfile, refusals, validate."""
    src = vec("tmfile/cnn_small.tmfile")
    m = manifest("tmfile/cnn_small.json")
    if src is None or m is None:
        return
    out = os.path.join(tmp, "m.tmfile")
    expect(run("convert", src, out), 0)
    assert tm_masked(read_bytes(src), read_bytes(out), m["nondeterministic_bytes"]["masks"]), \
        "the re-encoded file differs outside the masks"
    # --to and the extension agree
    out2 = os.path.join(tmp, "m2.bin")
    expect(run("convert", "--to", "tmfile", src, out2), 0)
    assert read_bytes(out2) == read_bytes(out)
    # weights to a tensor format: no flag needed, same hashes
    ten = os.path.join(tmp, "w.ten")
    expect(run("convert", src, ten), 0)
    a = run_json("ls", "--json", "--hash", src)["tensors"]
    t = run_json("ls", "--json", "--hash", ten)
    assert t["format"] == "tenbin" and [x["sha256"] for x in t["tensors"]] == \
        [x["sha256"] for x in a]
    # a tensor file cannot become a model
    res = run("convert", ten, os.path.join(tmp, "bad.tmfile"))
    expect(res, 1)
    assert "needs a graph" in res.err, res
    assert not os.path.exists(os.path.join(tmp, "bad.tmfile"))
    # not versioned
    res = run("convert", "--format-version", "2", src, os.path.join(tmp, "v.tmfile"))
    assert res.rc == 1 and "not versioned" in res.err, res
    # an rten model: its operators mapped, its metadata dropped on request
    rsrc = vec("rten/small_cnn/small_cnn.v2.rten")
    if rsrc is not None:
        rt = os.path.join(tmp, "from_rten.tmfile")
        res = run("convert", rsrc, rt)
        assert res.rc == 1 and "--drop-metadata" in res.err, res
        expect(run("convert", "--drop-metadata", rsrc, rt), 0)
        j = run_json("info", "--json", "--native", rt)
        assert j["format"] == "tmfile"
        natives = [n.get("native_op", n["op"]) for n in j["graph"]["nodes"]]
        assert "Convolution" in natives and "InputOp" in natives, natives
        ra = run_json("ls", "--json", "--hash", rsrc)["tensors"]
        rb = run_json("ls", "--json", "--hash", rt)["tensors"]
        assert [x["sha256"] for x in ra] == [x["sha256"] for x in rb]
    # validate: every convert_tool vector is clean
    paths = [p for p in (vec(rel) for rel, _ in tm_vectors()) if p]
    expect(run("validate", *paths), 0)
    # a truncated model is rejected with the format and offset named
    cut = os.path.join(tmp, "cut.tmfile")
    with open(cut, "wb") as f:
        f.write(read_bytes(src)[:1000])
    res = run("validate", cut)
    assert res.rc != 0 and "tmfile: offset" in res.out + res.err, res



def main():
    if not binary_ok():
        return 1
    tmp = tempfile.mkdtemp(prefix="tensio-cli-models-")
    try:
        for rel, m, v in rten_vectors():
            case(f"ls --json --hash {rel}", t_rten_ls, rel, m)
            case(f"info --json {rel}", t_rten_info, rel, m, v)
        rdir = os.path.join(tmp, "rten")
        os.mkdir(rdir)
        case("rten convert", t_rten_convert, rdir)
        case("info: long names referred to", t_info_long_names, tmp)
        for rel, m in tm_vectors():
            case(f"ls --json --hash {rel}", t_tmfile_ls, rel, m)
            case(f"info --json {rel}", t_tmfile_info, rel, m)
        tdir = os.path.join(tmp, "tmfile")
        os.mkdir(tdir)
        case("tmfile convert", t_tmfile_convert, tdir)
        case("tmfile global pool window fields", t_tmfile_global_pool_fields, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
