#!/usr/bin/env python3
"""Differential tests of the ONNX module against python3-onnx, through the CLI.

Usage: test_onnx.py /path/to/tensio. Every .onnx vector (tests/vectors/onnx,
../shared/vectors/{rten/*,tmfile}) and models built here with onnx.helper are
read by both; initializers (name, dtype, shape, sha256), nodes (op, domain,
inputs, outputs, attribute values) and graph input/output shapes must agree;
what tensio writes must pass onnx.checker (full_check), re-read the same, and
be byte-identical when written twice. Prints "SKIPPED" without python3-onnx.
"""
import glob, hashlib, json, os, subprocess, sys, tempfile

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError:
    print("SKIPPED: python3-onnx is not installed")
    sys.exit(0)

TENSIO = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
fails = 0
passed = 0


def run(*args, ok=True):
    p = subprocess.run([TENSIO, *args], capture_output=True, text=True)
    if ok and p.returncode != 0:
        raise AssertionError(f"tensio {' '.join(args)}: {p.stderr}")
    return p


def check(name, cond, msg=""):
    global fails, passed
    if cond:
        passed += 1
    else:
        fails += 1
        print(f"FAIL {name}: {msg}")


def attr_value(a, model_tensors):
    t = a.type
    A = onnx.AttributeProto
    if t == A.FLOAT: return ("f", round(a.f, 5))
    if t == A.INT: return ("i", a.i)
    if t == A.STRING: return ("s", a.s.decode())
    if t == A.FLOATS: return ("fs", [round(x, 5) for x in a.floats])
    if t == A.INTS: return ("is", list(a.ints))
    if t == A.STRINGS: return ("ss", [s.decode() for s in a.strings])
    if t == A.TENSOR: return ("t", None)
    if t == A.TENSORS: return ("ts", len(a.tensors))
    if t == A.GRAPH: return ("g", [n.op_type for n in a.g.node])
    if t == A.GRAPHS: return ("gs", [[n.op_type for n in g.node] for g in a.graphs])
    return ("?", None)


def tio_attr_value(v, ref):
    kind = ref[0]
    if kind == "f": return ("f", round(v, 5))
    if kind == "i": return ("i", v)
    if kind == "s": return ("s", v)
    if kind == "fs": return ("fs", [round(x, 5) for x in v])
    if kind in ("is", "ss"): return (kind, v)
    if kind == "t": return ("t", None)
    if kind == "ts": return ("ts", len(v["tensors"]))
    if kind == "g": return ("g", [n["op"] for n in v["graph"]["nodes"]])
    if kind == "gs": return ("gs", [[n["op"] for n in g["nodes"]] for g in v["graphs"]])
    return ("?", None)


def shape_of(vi):
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return None
    return [d.dim_param if d.HasField("dim_param") else (d.dim_value if d.HasField("dim_value") else None)
            for d in tt.shape.dim]


def compare_graph(tag, g, jg):
    check(tag + " node count", len(g.node) == len(jg["nodes"]), f"{len(g.node)} vs {len(jg['nodes'])}")
    for n, jn in zip(g.node, jg["nodes"]):
        check(tag + " op", n.op_type == jn["op"], f"{n.op_type} vs {jn['op']}")
        check(tag + " domain", (n.domain or None) == jn.get("domain"), n.domain)
        check(tag + " inputs", [x if x else None for x in n.input] == jn["inputs"],
              f"{list(n.input)} vs {jn['inputs']}")
        check(tag + " outputs", [x if x else None for x in n.output] == jn["outputs"],
              f"{list(n.output)} vs {jn['outputs']}")
        check(tag + " attr names", sorted(a.name for a in n.attribute) == sorted(jn["attrs"]),
              f"{[a.name for a in n.attribute]} vs {list(jn['attrs'])}")
        for a in n.attribute:
            if a.name not in jn["attrs"]:
                continue
            ref = attr_value(a, None)
            got = tio_attr_value(jn["attrs"][a.name], ref)
            check(tag + f" attr {a.name}", ref == got, f"{ref} vs {got}")
            if a.type == onnx.AttributeProto.GRAPH:
                compare_graph(tag + "/" + a.name, a.g, jn["attrs"][a.name]["graph"])
    inits = {i.name for i in g.initializer}
    ins = [vi for vi in g.input if vi.name not in inits]
    check(tag + " inputs", [v.name for v in ins] == [v["name"] for v in jg["inputs"]],
          f"{[v.name for v in ins]} vs {jg['inputs']}")
    for v, jv in zip(list(ins) + list(g.output), jg["inputs"] + jg["outputs"]):
        s = shape_of(v)
        check(tag + f" shape {v.name}", s == jv.get("shape"), f"{s} vs {jv.get('shape')}")


def tensors_of(m):
    out = {}
    for t in m.graph.initializer:
        a = numpy_helper.to_array(t)
        out[t.name] = (str(a.dtype), list(a.shape), hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest())
    return out


def compare_file(path):
    tag = os.path.basename(path)
    m = onnx.load(path)
    ls = json.loads(run("ls", "--json", "--hash", path).stdout)
    check(tag + " format", ls["format"] == "onnx")
    got = {t["name"]: (t["dtype"], t["shape"], t["sha256"]) for t in ls["tensors"]}
    for k, v in tensors_of(m).items():
        check(tag + f" tensor {k}", got.get(k) == v, f"{v} vs {got.get(k)}")
    info = json.loads(run("info", "--json", path).stdout)
    compare_graph(tag, m.graph, info["graph"])
    # round trip
    with tempfile.TemporaryDirectory() as d:
        a, b = os.path.join(d, "a.onnx"), os.path.join(d, "b.onnx")
        run("convert", path, a)
        run("convert", a, b)
        check(tag + " deterministic", open(a, "rb").read() == open(b, "rb").read())
        try:
            onnx.checker.check_model(m, full_check=True)
        except Exception:
            m_ok = False  # the original is not checker-clean (custom domain): skip
        else:
            m_ok = True
        try:
            if m_ok:
                onnx.checker.check_model(onnx.load(a), full_check=True)
            check(tag + " checker", True)
        except Exception as e:
            check(tag + " checker", False, str(e))
        m2 = onnx.load(a)
        check(tag + " round trip tensors", tensors_of(m2) == tensors_of(m))
        i2 = json.loads(run("info", "--json", a).stdout)
        check(tag + " round trip graph", i2["graph"]["nodes"] == info["graph"]["nodes"])


def built_models(d):
    """Models covering every attribute type, typed fields, subgraphs, dims."""
    P = []
    X = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
    Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    # typed-field initializers
    inits = [
        helper.make_tensor("f32", TensorProto.FLOAT, [2], [1.5, -2.0]),
        helper.make_tensor("i8", TensorProto.INT8, [3], [-1, 2, 127]),
        helper.make_tensor("u8", TensorProto.UINT8, [2], [0, 255]),
        helper.make_tensor("b", TensorProto.BOOL, [2], [True, False]),
        helper.make_tensor("f16", TensorProto.FLOAT16, [2],
                           np.array([1.0, -0.5], np.float16).view(np.uint16).tolist()),
        helper.make_tensor("i64", TensorProto.INT64, [2], [-5, 1 << 40]),
        helper.make_tensor("f64", TensorProto.DOUBLE, [1], [3.25]),
        helper.make_tensor("i16", TensorProto.INT16, [2], [-300, 300]),
    ]
    attrs_node = helper.make_node(
        "Custom", ["x"], ["z"], domain="test.domain", name="all_attrs",
        f=0.5, i=-7, s="hello", fs=[1.0, 2.5], is_=[1, -2, 3], ss=["a", "bc"],
        t=helper.make_tensor("tt", TensorProto.FLOAT, [1], [9.0]),
        ts=[helper.make_tensor("t1", TensorProto.INT32, [1], [1]),
            helper.make_tensor("t2", TensorProto.INT32, [1], [2])],
        g=helper.make_graph([helper.make_node("Identity", ["x"], ["gi"])], "gsub", [],
                            [helper.make_tensor_value_info("gi", TensorProto.FLOAT, None)]))
    # rename is_ (a Python keyword workaround)
    for a in attrs_node.attribute:
        if a.name == "is_":
            a.name = "is"
    graph = helper.make_graph([attrs_node, helper.make_node("Relu", ["x"], ["y"])], "attrs",
                              [X], [Y], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                helper.make_opsetid("test.domain", 1)])
    m.metadata_props.add(key="author", value="tensio")
    p = os.path.join(d, "attrs.onnx"); onnx.save(m, p); P.append((p, False))
    # If / Loop with outer-scope captures
    cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])
    then_g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["t_out"])], "then", [],
                               [helper.make_tensor_value_info("t_out", TensorProto.FLOAT, ["batch", 3])])
    else_g = helper.make_graph([helper.make_node("Sub", ["x", "w"], ["e_out"])], "else", [],
                               [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, ["batch", 3])])
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Add", ["v_in", "w"], ["v_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, ["batch", 3])])
    g2 = helper.make_graph(
        [helper.make_node("If", ["cond"], ["yi"], then_branch=then_g, else_branch=else_g),
         helper.make_node("Loop", ["n", "cond", "yi"], ["y"], body=body)], "ctl",
        [X, cond], [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
        [numpy_helper.from_array(np.ones((1, 3), np.float32), "w"),
         numpy_helper.from_array(np.array(2, np.int64), "n")])
    m2 = helper.make_model(g2, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m2, full_check=True)
    p = os.path.join(d, "ctl.onnx"); onnx.save(m2, p); P.append((p, True))
    # Constant nodes
    g3 = helper.make_graph(
        [helper.make_node("Constant", [], ["c1"], value=numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "cv")),
         helper.make_node("Constant", [], ["c2"], value_float=2.0),
         helper.make_node("Constant", [], ["c3"], value_ints=[1, 2]),
         helper.make_node("Add", ["x", "c1"], ["y"])], "consts", [X],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])])
    m3 = helper.make_model(g3, opset_imports=[helper.make_opsetid("", 13)])
    p = os.path.join(d, "consts.onnx"); onnx.save(m3, p); P.append((p, True))
    return P


def refused(tag, m, d, needle):
    p = os.path.join(d, tag + ".onnx")
    onnx.save(m, p)
    r = run("ls", p, ok=False)
    check(tag + " refused", r.returncode != 0 and needle in r.stderr, r.stderr.strip())


def dense_graph(d):
    """A graph denser than real models (3,000 one-letter Relu nodes, ~24 x its
    size decoded): past ONNX's decode budget of 20 x by default, with the
    limit named and TENSIO_LIMITS hinted; opened with max_objects raised."""
    nodes = [helper.make_node("Relu", ["x" if i == 0 else "%x" % (i - 1)], ["%x" % i])
             for i in range(3000)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("%x" % 2999, TensorProto.FLOAT, [1])])
    p = os.path.join(d, "dense.onnx")
    onnx.save(helper.make_model(g), p)
    r = run("info", p, ok=False)
    check("dense graph refused", r.returncode == 1 and "bytes of memory" in r.stderr and
          "max_objects" in r.stderr and "hint: TENSIO_LIMITS=" in r.stderr, r.stderr.strip())
    r = subprocess.run([TENSIO, "info", "--json", p], capture_output=True, text=True,
                       env={**os.environ, "TENSIO_LIMITS": "max_objects=unlimited"})
    check("dense graph opened with TENSIO_LIMITS", r.returncode == 0 and
          len(json.loads(r.stdout)["graph"]["nodes"]) == 3000, r.stderr.strip())


def hostile(d):
    X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    def model(init=None, node=None):
        g = helper.make_graph([node or helper.make_node("Relu", ["x"], ["y"])], "h", [X],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
                              [init] if init else [])
        return helper.make_model(g)
    t = helper.make_tensor("ext", TensorProto.FLOAT, [1], [0.0])
    t.ClearField("float_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "/etc/passwd"), ("offset", "0"), ("length", "4")):
        e = t.external_data.add(); e.key = k; e.value = v
    refused("external_abs", model(t), d, "absolute path")
    st = helper.make_tensor("s", TensorProto.STRING, [1], [b"a"])
    st.dims[0] = 2  # one string for two
    refused("string_count", model(st), d, "string_data holds 1 strings, the shape needs 2")
    st = helper.make_tensor("s", TensorProto.STRING, [1], [b"a"])
    st.raw_data = b"a"
    refused("string_raw", model(st), d, "string_data (field 6), not in raw_data")
    st = onnx.SparseTensorProto()
    refused("sparse_attr", model(node=helper.make_node("Relu", ["x"], ["y"], sp=st)), d,
            "a SparseTensorProto needs values, indices and dims")
    refused("undefined_input", model(node=helper.make_node("Relu", ["nope"], ["y"])), d,
            "'nope' is not defined")
    # an ir_version over one varint byte: refused (tensio's own output must probe as ONNX,
    # and the probe takes 1..127); 127 itself reads
    big = model(); big.ir_version = 128
    refused("ir_version_128", big, d, "ir_version is 128")
    ok = model(); ok.ir_version = 127
    p = os.path.join(d, "ir127.onnx"); onnx.save(ok, p)
    r = run("ls", p, ok=False)
    check("ir_version 127 reads", r.returncode == 0, r.stderr.strip())


def ext_model(d, name, entries, data=b"\0" * 48):
    """A model whose one initializer W (float [4, 3]) has external_data
    `entries` (key, value), in directory d, beside data file `weights.bin`."""
    X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])
    t = helper.make_tensor("W", TensorProto.FLOAT, [4, 3], [0.0] * 12)
    t.ClearField("float_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in entries:
        e = t.external_data.add(); e.key = k; e.value = v
    g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["y"])], "ext", [X], [Y], [t])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "weights.bin"), "wb") as f:
        f.write(data)
    p = os.path.join(d, name)
    with open(p, "wb") as f:
        f.write(m.SerializeToString())
    return p


def many_outputs(d):
    """3,000 graph outputs, each a weight through Identity, the weights as
    external data (onnx.save): all of it names and records, under the decode
    budget that refuses dense_graph; opened by default, every output and
    weight kept."""
    n = 3000
    inits = [numpy_helper.from_array(np.full(4, i, np.float32), "w%x" % i) for i in range(n)]
    nodes = [helper.make_node("Identity", ["w%x" % i], ["%x" % i]) for i in range(n)]
    outs = [helper.make_tensor_value_info("%x" % i, TensorProto.FLOAT, [4]) for i in range(n)]
    p = os.path.join(d, "outputs.onnx")
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [], outs, inits)), p,
              save_as_external_data=True, all_tensors_to_one_file=True,
              location="outputs.onnx.data", size_threshold=0)
    r = run("info", "--json", p, ok=False)
    ok = r.returncode == 0
    check("3,000 outputs with external data open", ok, r.stderr.strip())
    if ok:
        g = json.loads(r.stdout)["graph"]
        check("3,000 outputs kept", len(g["outputs"]) == n and len(g["nodes"]) == n,
              f"{len(g['outputs'])} outputs, {len(g['nodes'])} nodes")
    r = run("ls", "--json", p, ok=False)
    check("3,000 external weights listed", r.returncode == 0 and
          len(json.loads(r.stdout)["tensors"]) == n, r.stderr.strip())


def external(d):
    """External data: onnx's own writer, then hostile locations."""
    rng = np.random.default_rng(7)
    X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])
    Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])
    inits = [numpy_helper.from_array(rng.standard_normal((16, 8)).astype(np.float32), "W"),
             numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "B"),
             numpy_helper.from_array(np.arange(6, dtype=np.int64), "idx"),
             numpy_helper.from_array(rng.standard_normal((3, 5)).astype(np.float64), "D"),
             # 8 KiB: external when tensio writes external data (from 1 KiB)
             numpy_helper.from_array(rng.standard_normal((64, 32)).astype(np.float32), "E")]
    # more files than the mapped files' index is made at (8): found by it
    inits += [numpy_helper.from_array(np.full(3, i, np.float32), "c%d" % i) for i in range(20)]
    g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["xw"]),
                           helper.make_node("Add", ["xw", "B"], ["y"])], "ext", [X], [Y], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    inline = os.path.join(d, "inline.onnx")
    onnx.save(m, inline)
    sub = os.path.join(d, "ext")
    os.makedirs(sub)
    for name, one in (("one.onnx", True), ("many.onnx", False)):
        p = os.path.join(sub, name)
        onnx.save_model(onnx.load(inline), p, save_as_external_data=True,
                        all_tensors_to_one_file=one, location=name + ".data", size_threshold=0)
        ref = {t["name"]: t["sha256"] for t in
               json.loads(run("ls", "--json", "--hash", inline).stdout)["tensors"]}
        r = run("ls", "--json", "--hash", p, ok=False)
        check("external " + name + " reads", r.returncode == 0, r.stderr.strip())
        if r.returncode == 0:
            got = {t["name"]: t["sha256"] for t in json.loads(r.stdout)["tensors"]}
            check("external " + name + " sha256 = inline", got == ref, f"{got} vs {ref}")
        # converted: the data inline, equal to onnx's own reading
        out = os.path.join(d, "from_" + name)
        r = run("convert", p, out, ok=False)
        check("external " + name + " converts", r.returncode == 0, r.stderr.strip())
        if r.returncode == 0:
            check("external " + name + " = onnx.load", tensors_of(onnx.load(out)) ==
                  tensors_of(onnx.load(p)))
    # written by tensio (--external-data): onnx reads it back, tensio too
    out = os.path.join(d, "w")
    os.makedirs(out)
    m1, m2 = os.path.join(out, "m.onnx"), os.path.join(out, "m2.onnx")
    r = run("convert", "--external-data", "m.bin", inline, m1, ok=False)
    check("write external", r.returncode == 0, r.stderr.strip())
    if r.returncode == 0:
        back = onnx.load(m1, load_external_data=True)
        check("write external = inline (onnx.load)", tensors_of(back) == tensors_of(onnx.load(inline)))
        # 1 KiB and more external, smaller inline (onnx.save's size_threshold:
        # onnxruntime reads a Reshape's shape only from inline bytes)
        lazy = onnx.load(m1, load_external_data=False).graph.initializer
        check("write external: no raw_data from 1 KiB",
              all(not t.raw_data for t in lazy if t.data_location == onnx.TensorProto.EXTERNAL) and
              all(len(t.raw_data) < 1024 for t in lazy if t.data_location != onnx.TensorProto.EXTERNAL)
              and any(t.data_location == onnx.TensorProto.EXTERNAL for t in lazy))
        try:
            onnx.checker.check_model(m1, full_check=True)
            check("write external checker", True)
        except Exception as e:
            check("write external checker", False, repr(e))
        got = {t["name"]: t["sha256"] for t in json.loads(run("ls", "--json", "--hash", m1).stdout)["tensors"]}
        ref = {t["name"]: t["sha256"] for t in json.loads(run("ls", "--json", "--hash", inline).stdout)["tensors"]}
        check("write external re-read", got == ref)
        run("convert", "--external-data", "m2.bin", m1, m2)
        check("write external deterministic",
              open(os.path.join(out, "m.bin"), "rb").read() == open(os.path.join(out, "m2.bin"), "rb").read())
    for bad, needle in (("../m.bin", "without a directory"), ("m.onnx", "own file name")):
        r = run("convert", "--external-data", bad, inline, os.path.join(out, "m.onnx"), "--force", ok=False)
        check("write external refused " + bad, r.returncode != 0 and needle in r.stderr, r.stderr.strip())
    # hostile locations, each beside a real file
    h = os.path.join(d, "h")
    good = ext_model(h, "good.onnx", [("location", "weights.bin"), ("offset", "0"),
                                      ("length", "48")])
    check("external good", run("ls", good, ok=False).returncode == 0)
    with open(os.path.join(d, "outside.bin"), "wb") as f:
        f.write(b"\1" * 64)
    os.symlink(os.path.join(d, "outside.bin"), os.path.join(h, "link.bin"))
    os.makedirs(os.path.join(h, "sub"))
    for tag, entries, needle in (
            ("abs", [("location", "/etc/passwd")], "absolute path"),
            ("dotdot", [("location", "../outside.bin")], "'..' component"),
            ("dotdot_inner", [("location", "sub/../../outside.bin")], "'..' component"),
            ("symlink_out", [("location", "link.bin")], "outside the model's directory"),
            ("past_end", [("location", "weights.bin"), ("offset", "8"), ("length", "48")],
             "run past the file's 48 bytes"),
            ("offset_past_end", [("location", "weights.bin"), ("offset", "4096")],
             "past the file's 48 bytes"),
            ("bad_offset", [("location", "weights.bin"), ("offset", "-1")], "decimal"),
            ("short", [("location", "weights.bin"), ("length", "40")], "the shape needs 48"),
            ("missing", [("location", "nope.bin")], "cannot open"),
            ("no_location", [("offset", "0")], "no 'location'")):
        p = ext_model(h, tag + ".onnx", entries)
        r = run("ls", p, ok=False)
        check("external " + tag + " refused", r.returncode != 0 and needle in r.stderr,
              r.stderr.strip())


def typed_values(d):
    """Values that are not tensors of a tensio dtype (sequences, optionals,
    maps, sparse tensors, nested, with symbolic dims; and string tensors,
    which are: dtype string) open with
    their type in ONNX's notation (`info --json`, the Python Value.type),
    rewrite to a graph equal to the original (checker passes; onnxruntime
    runs the rewrite of the sequence model as the original), and other
    graph formats refuse them by name."""
    T = TensorProto
    seq_f = helper.make_sequence_type_proto(helper.make_tensor_type_proto(T.FLOAT, ["N", 3]))
    opt_seq = helper.make_optional_type_proto(helper.make_sequence_type_proto(
        helper.make_tensor_type_proto(T.INT64, [])))
    cases = [
        ("seq", [helper.make_value_info("s", seq_f)],
         [helper.make_value_info("o", seq_f)],
         [helper.make_node("Identity", ["s"], ["o"])], "seq(tensor(float)[N,3])"),
        ("opt", [helper.make_value_info("s", opt_seq)], [helper.make_value_info("o", opt_seq)],
         [helper.make_node("Identity", ["s"], ["o"])], "optional(seq(tensor(int64)[]))"),
        ("str", [helper.make_tensor_value_info("s", T.STRING, [2, "odd name"])],
         [helper.make_tensor_value_info("o", T.STRING, [2, "odd name"])],
         [helper.make_node("Identity", ["s"], ["o"])], None),  # tensio's string dtype
    ]
    for tag, ins, outs, nodes, want in cases:
        m = helper.make_model(helper.make_graph(nodes, tag, ins, outs),
                              opset_imports=[helper.make_opsetid("", 16)])
        m.ir_version = 8
        onnx.checker.check_model(m, full_check=True)
        p = os.path.join(d, "typed_" + tag + ".onnx")
        onnx.save(m, p)
        j = json.loads(run("info", "--json", p).stdout)
        got = [v.get("type") for v in j["graph"]["inputs"]]
        check("typed %s: info type" % tag, got == [want], repr(got))
        if want is None:
            got = j["graph"]["inputs"][0].get("dtype")
            check("typed %s: info dtype" % tag, got == "string", repr(j["graph"]["inputs"]))
        out = os.path.join(d, "typed_" + tag + "_out.onnx")
        run("convert", p, out)
        w = onnx.load(out)
        try:
            onnx.checker.check_model(w, full_check=True)
            ok = True
        except Exception as e:  # noqa: BLE001
            ok = False
            check("typed %s: checker" % tag, False, str(e).splitlines()[0])
        if ok:
            check("typed %s: the rewrite's types" % tag,
                  [i.type for i in w.graph.input] == [i.type for i in m.graph.input] and
                  [o.type for o in w.graph.output] == [o.type for o in m.graph.output],
                  repr(w.graph.input))
        r = run("convert", p, os.path.join(d, "typed.rten"), ok=False)
        check("typed %s: rten refuses" % tag, r.returncode != 0 and
              ("has type " + want if want else "is a string tensor") in r.stderr,
              r.stderr.strip())
    # a TYPE_PROTO attribute (Optional's `type`): read as type text, written back
    og = helper.make_graph(
        [helper.make_node("Optional", [], ["o"], type=seq_f)], "opt_attr", [],
        [helper.make_value_info("o", helper.make_optional_type_proto(seq_f))])
    om = helper.make_model(og, opset_imports=[helper.make_opsetid("", 16)])
    om.ir_version = 8
    p = os.path.join(d, "typed_attr.onnx")
    onnx.save(om, p)
    j = json.loads(run("info", "--json", p).stdout)
    got = j["graph"]["nodes"][0]["attrs"].get("type")
    check("typed attr: info", got == "seq(tensor(float)[N,3])", repr(j["graph"]["nodes"]))
    out = os.path.join(d, "typed_attr_out.onnx")
    run("convert", p, out)
    w = onnx.load(out)
    check("typed attr: written back", w.graph.node[0].attribute[0].tp == seq_f and
          w.graph.node[0].attribute[0].type == onnx.AttributeProto.TYPE_PROTO,
          repr(w.graph.node[0]))
    r = run("convert", p, os.path.join(d, "typed_attr.rten"), ok=False)
    check("typed attr: rten refuses", r.returncode != 0 and "has type" in r.stderr or
          "is a type" in r.stderr, r.stderr.strip())
    # a map, and nesting past the limit
    mp = onnx.TypeProto()  # (onnx 1.12's helper has no make_map_type_proto)
    mp.map_type.key_type = T.INT64
    mp.map_type.value_type.CopyFrom(helper.make_tensor_type_proto(T.FLOAT, None))
    g = helper.make_graph([helper.make_node("Identity", ["s"], ["o"])], "m",
                          [helper.make_value_info("s", mp)], [helper.make_value_info("o", mp)])
    p = os.path.join(d, "typed_map.onnx")
    onnx.save(helper.make_model(g), p)
    j = json.loads(run("info", "--json", p).stdout)
    check("typed map", j["graph"]["inputs"][0].get("type") == "map(int64,tensor(float))",
          repr(j["graph"]["inputs"]))
    deep = helper.make_tensor_type_proto(T.FLOAT, None)
    for _ in range(17):
        deep = helper.make_sequence_type_proto(deep)
    g = helper.make_graph([helper.make_node("Identity", ["s"], ["o"])], "deep",
                          [helper.make_value_info("s", deep)], [helper.make_value_info("o", deep)])
    refused("typed_deep", helper.make_model(g), d, "nests deeper than 16")


def main():
    vecs = sorted(set(glob.glob(os.path.join(ROOT, "tests/vectors/onnx/*.onnx"))))
    shared = os.environ.get("TIO_SHARED_VECTORS", os.path.join(os.path.dirname(ROOT), "shared/vectors"))
    extra = glob.glob(os.path.join(shared, "rten/*/*.onnx")) + glob.glob(os.path.join(shared, "tmfile/*.onnx"))
    if not extra:
        print(f"SKIPPED: {shared}/rten/*/*.onnx, tmfile/*.onnx (absent)")
    for p in vecs + sorted(extra):
        try:
            compare_file(p)
        except Exception as e:
            check(p, False, repr(e))
    with tempfile.TemporaryDirectory() as d:
        for p, _ in built_models(d):
            try:
                compare_file(p)
            except Exception as e:
                check(p, False, repr(e))
        hostile(d)
        dense_graph(d)
        many_outputs(d)
        external(d)
        typed_values(d)
    print(f"{passed} passed, {fails} failed")
    sys.exit(1 if fails else 0)


main()
