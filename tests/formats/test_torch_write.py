#!/usr/bin/python3
"""tensio's torch writer against Debian's python3-torch (1.13).

  test_torch_write.py TENSIO

- every dtype torch 1.13 and tensio share (complex64/128 too), from .npz files written by
  np.savez and from .safetensors and .pt files (zip and legacy layouts, a
  nested checkpoint made flat), converted to .pt by tensio and loaded back
  by torch.load(weights_only=True): an OrderedDict with the same names,
  dtypes, shapes and values;
- byte for byte against torch.save of the same OrderedDict, written here
  (the archive is named after the file, so both files get the same name in
  two directories): all dtypes, scalars and empty tensors, dims that take
  BININT1/BININT2/BININT, five dims (MARK ... TUPLE), non-ASCII names, a
  tensor named "0" (CPython's one-character str is the storage key's
  object), 12 storages (keys sorted as strings), 1,001 and 2,001 tensors
  (SETITEMS batches of 1,000, a last one of one: SETITEM; memo keys past
  255), tied weights (.pt -> .pt keeps one storage), standard output against
  torch.save into a BytesIO (archive "archive");
- two writes are identical; a refused conversion (uint16, metadata) names
  the dtype or the option and writes nothing; a save that fails part way
  (the file size limit) leaves the target as it was and no temporary file;
- tied weights to safetensors: one copy, the alias named in a warning on
  stderr;
- sparse COO tensors byte for byte against torch.save (from .pt, from BTF,
  one unnamed tensor), a CSR matrix written as COO."""
import collections
import io
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from clitest import TENSIO, run, check, report  # noqa: E402

NP = {"bool": np.bool_, "int8": np.int8, "int16": np.int16, "int32": np.int32,
      "int64": np.int64, "uint8": np.uint8, "float16": np.float16, "float32": np.float32,
      "float64": np.float64}
TORCH = {"bool": torch.bool, "int8": torch.int8, "int16": torch.int16, "int32": torch.int32,
         "int64": torch.int64, "uint8": torch.uint8, "float16": torch.float16,
         "float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16,
         "complex64": torch.complex64, "complex128": torch.complex128}


def sample(dtype, shape, seed):
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(shape, generator=g, dtype=torch.float64) * 100
    if dtype.startswith("complex"):
        return torch.complex(t, -t / 3).to(TORCH[dtype])
    if dtype == "bool":
        return t > 0
    return t.to(TORCH[dtype])


def tbytes(t):
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def same_dict(what, got, want):
    """torch.load's result against the OrderedDict it should be."""
    check(what + " type", type(got) is collections.OrderedDict, str(type(got)))
    check(what + " names", list(got.keys()) == list(want.keys()),
          "%s vs %s" % (list(got.keys())[:5], list(want.keys())[:5]))
    for k, v in want.items():
        g = got.get(k)
        ok = isinstance(g, torch.Tensor) and g.dtype == v.dtype and g.shape == v.shape
        check("%s %s" % (what, k), ok and tbytes(g) == tbytes(v),
              "%s %s" % (getattr(g, "dtype", None), getattr(g, "shape", None)))


def load(path):
    return torch.load(path, weights_only=True)


def convert(src, out, *extra, ok=True):
    if os.path.exists(out):
        os.remove(out)
    return run("convert", *extra, src, out, ok=ok)


def same_bytes(what, a, b):
    x, y = open(a, "rb").read(), open(b, "rb").read()
    first = next((i for i in range(min(len(x), len(y))) if x[i] != y[i]), min(len(x), len(y)))
    check(what + " byte for byte", x == y,
          "%d vs %d bytes, first difference at %d" % (len(x), len(y), first))


class Dirs:
    """A tensio output and torch.save's reference, same file name."""

    def __init__(self, tmp):
        self.tmp = tmp
        for d in ("src", "tio", "ref", "again"):
            os.makedirs(os.path.join(tmp, d), exist_ok=True)

    def __call__(self, d, name):
        return os.path.join(self.tmp, d, name)


def against_torch_save(what, P, src, stem, sd, extra=()):
    """src converted by tensio to tio/<stem>.pt: torch.load gives sd, and the
    bytes are torch.save(sd)'s."""
    out, ref = P("tio", stem + ".pt"), P("ref", stem + ".pt")
    convert(src, out, *extra)
    torch.save(sd, ref)
    same_dict(what, load(out), sd)
    same_bytes(what, out, ref)
    return out


def dtypes_from_npz(P):
    sd = collections.OrderedDict()
    for i, d in enumerate(NP):
        sd["layer%d.%s" % (i, d)] = sample(d, (3, 4), i)
    src = P("src", "all.npz")
    np.savez(src, **{k: v.numpy() for k, v in sd.items()})
    against_torch_save("npz all dtypes", P, src, "all_npz", sd)
    # one dtype per file too (a single item: SETITEM, not SETITEMS)
    for i, (k, v) in enumerate(sd.items()):
        d = k.split(".")[1]
        one = P("src", "one_%s.npz" % d)
        np.savez(one, **{k: v.numpy()})
        against_torch_save("npz " + d, P, one, "one_" + d, collections.OrderedDict([(k, v)]))


def dtypes_from_pt_and_safetensors(P):
    """Every dtype (bfloat16 too): torch.save -> tensio -> safetensors ->
    tensio -> .pt, and .pt -> .pt."""
    sd = collections.OrderedDict()
    for i, d in enumerate(TORCH):
        sd["w.%s" % d] = sample(d, (2, 5), 100 + i)
    pt = P("src", "all.pt")
    torch.save(sd, pt)
    against_torch_save(".pt -> .pt", P, pt, "all_pt", sd)
    del sd["w.complex128"]  # safetensors has C64, not C128
    pt = P("src", "all_st.pt")
    torch.save(sd, pt)
    st = P("src", "all.safetensors")
    convert(pt, st)
    # tensio lists a safetensors file in its order (dtype, then name)
    names = [t["name"] for t in json.loads(run("ls", "--json", st).stdout)["tensors"]]
    against_torch_save("safetensors all dtypes", P, st, "all_st",
                       collections.OrderedDict((n, sd[n]) for n in names))


def other_layouts(P):
    """The legacy layout (torch < 1.6) and a nested checkpoint, written as a
    flat state dict: names joined with '.', the non-tensor leaves metadata
    (dropped with --drop-metadata only)."""
    sd = collections.OrderedDict([("a.w", sample("float32", (3, 2), 50)),
                                  ("a.b", sample("int64", (4,), 51))])
    src = P("src", "legacy.pt")
    torch.save(sd, src, _use_new_zipfile_serialization=False)
    against_torch_save("legacy -> zip", P, src, "legacy", sd)
    nested = {"model": sd, "optimizer": {"state": {0: {"exp_avg": sample("float32", (2,), 52)}},
                                         "lr": 0.1}, "epoch": 3}
    src = P("src", "nested.pt")
    torch.save(nested, src)
    out = P("tio", "nested.pt")
    p = convert(src, out, ok=False)
    check("nested: leaves are metadata", p.returncode == 1 and "--drop-metadata" in p.stderr,
          p.stderr)
    convert(src, out, "--drop-metadata")
    flat = collections.OrderedDict([("model.a.w", sd["a.w"]), ("model.a.b", sd["a.b"]),
                                    ("optimizer.state.0.exp_avg",
                                     nested["optimizer"]["state"][0]["exp_avg"])])
    same_dict("nested, flat", load(out), flat)


def shapes_and_names(P):
    sd = collections.OrderedDict()
    sd["scalar"] = torch.tensor(3.5)
    sd["empty"] = torch.zeros(0, dtype=torch.int32)
    sd["empty2"] = torch.zeros(2, 0, 3)
    sd["ones"] = torch.ones(1, 1, dtype=torch.int16)
    sd["five"] = sample("float32", (2, 1, 3, 1, 2), 7)
    sd["wide"] = sample("int8", (300,), 8)         # BININT2
    sd["wider"] = sample("uint8", (70000,), 9)     # BININT
    sd["é.poids"] = sample("float64", (2,), 10)
    sd["层.0.weight"] = sample("float16", (3,), 11)
    sd["0"] = sample("int64", (4,), 12)             # the storage key "0" is this str
    sd["x"] = sample("bool", (5,), 13)
    sd["y"] = sample("float32", (1,), 14)           # the twelfth storage: "11" sorts before "2"
    pt = P("src", "shapes.pt")
    torch.save(sd, pt)
    against_torch_save("shapes and names", P, pt, "shapes", sd)


def same_sparse(what, got, want):
    """torch.load's sparse tensors against those torch.save was given."""
    check(what + " names", list(got.keys()) == list(want.keys()), str(list(got.keys())))
    for k, v in want.items():
        g = got.get(k)
        ok = isinstance(g, torch.Tensor) and g.layout == v.layout and g.dtype == v.dtype
        if ok and v.is_sparse:
            ok = (g.shape == v.shape and torch.equal(g._indices(), v._indices())
                  and torch.equal(g._values(), v._values()))
        elif ok:
            ok = torch.equal(g, v)
        check("%s %s" % (what, k), ok, str(g))


def sparse(P):
    """COO tensors as torch.save writes a torch.sparse_coo tensor
    (_rebuild_sparse_tensor, two storages each, the layout memoized)."""
    sd = collections.OrderedDict()
    sd["w"] = (sample("float32", (4, 6), 60) * (sample("float32", (4, 6), 61) > 50)).to_sparse()
    sd["d"] = torch.arange(3, dtype=torch.int32)
    cube = sample("int64", (3, 4, 5), 62) * (sample("int64", (3, 4, 5), 63) > 80)
    sd["cube"] = cube.to_sparse()
    sd["none"] = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.int64), torch.zeros(0),
                                         (2, 2))
    sd["rep"] = torch.sparse_coo_tensor(torch.tensor([[1, 0, 1]]), torch.tensor([1.0, 2, 4]),
                                        (3,))  # a repeated index, as stored
    sd["c"] = torch.sparse_coo_tensor(torch.tensor([[2]]), torch.tensor([1 - 1j]), (4,))
    src = P("src", "sparse.pt")
    torch.save(sd, src)
    out, ref = P("tio", "sparse.pt"), P("ref", "sparse.pt")
    convert(src, out)
    torch.save(sd, ref)
    same_bytes("sparse .pt -> .pt", out, ref)
    same_sparse("sparse .pt -> .pt", load(out), sd)
    # through BTF (COO, no names: the keys are the indices)
    btf = P("src", "sparse.btf")
    real = collections.OrderedDict((k, v) for k, v in sd.items() if k != "c")  # BTF: no complex
    torch.save(real, src)
    convert(src, btf, "--drop-names")
    out, ref = P("tio", "from_btf.pt"), P("ref", "from_btf.pt")
    convert(btf, out)
    keyed = collections.OrderedDict((str(i), v) for i, v in enumerate(real.values()))
    torch.save(keyed, ref)
    same_bytes("sparse .btf -> .pt", out, ref)
    same_sparse("sparse .btf -> .pt", load(out), keyed)
    # one unnamed sparse tensor: torch.save(tensor)
    src = P("src", "one_sparse.pt")
    torch.save(sd["cube"], src)
    out, ref = P("tio", "one_sparse.pt"), P("ref", "one_sparse.pt")
    convert(src, out)
    torch.save(sd["cube"], ref)
    same_bytes("one sparse tensor", out, ref)
    # a CSR matrix is read as COO (NAME.layout beside it): written as COO
    m = sample("float32", (5, 4), 64) * (sample("float32", (5, 4), 65) > 60)
    src = P("src", "csr.pt")
    torch.save({"m": m.to_sparse_csr()}, src)
    out = P("tio", "csr.pt")
    p = convert(src, out, ok=False)
    check("csr: its layout is metadata", p.returncode == 1 and "--drop-metadata" in p.stderr,
          p.stderr)
    convert(src, out, "--drop-metadata")
    g = load(out)["m"]
    check("csr -> COO", g.is_sparse and torch.equal(g.to_dense(), m)
          and torch.equal(g._indices(), m.to_sparse()._indices()), str(g))


def many(P):
    for n in (1001, 2001):
        sd = collections.OrderedDict(("t%d" % i, torch.full((2,), i, dtype=torch.int32))
                                     for i in range(n))
        src = P("src", "many%d.npz" % n)
        np.savez(src, **{k: v.numpy() for k, v in sd.items()})
        against_torch_save("%d tensors" % n, P, src, "many%d" % n, sd)


def tied(P):
    """embed.weight and lm_head.weight: one storage."""
    e = sample("float32", (6, 4), 20)
    sd = collections.OrderedDict([("embed.weight", e), ("norm", torch.ones(4)),
                                  ("lm_head.weight", e.detach())])
    src = P("src", "tied.pt")
    torch.save(sd, src)
    ls = json.loads(run("ls", "--json", src).stdout)["tensors"]
    check("tied ls alias_of", [t.get("alias_of") for t in ls] == [None, None, "embed.weight"],
          str(ls))
    inf = json.loads(run("info", "--json", src).stdout)
    check("tied info aliases", inf.get("aliases") == {"lm_head.weight": "embed.weight"},
          str(inf.get("aliases")))
    txt = run("info", src).stdout
    check("tied info text", "lm_head.weight -> embed.weight" in txt, txt)
    # .pt -> .pt: still tied, and torch.save(torch.load(src))'s bytes
    loaded = load(src)
    out = against_torch_save("tied .pt", P, src, "tied", loaded)
    back = load(out)
    check("tied .pt one storage",
          back["lm_head.weight"].data_ptr() == back["embed.weight"].data_ptr())
    names = [n for n in __import__("zipfile").ZipFile(out).namelist() if "/data/" in n]
    check("tied .pt one record", len(names) == 2, str(names))
    # -> safetensors: one copy, the alias named on stderr
    st = P("tio", "tied.safetensors")
    p = convert(src, st, "--json")
    check("tied safetensors warning",
          "'lm_head.weight' not written" in p.stderr and "'embed.weight'" in p.stderr, p.stderr)
    check("tied safetensors --json counts what was written",
          json.loads(p.stdout)["tensors"] == 2, p.stdout)
    got = [t["name"] for t in json.loads(run("ls", "--json", st).stdout)["tensors"]]
    check("tied safetensors names", sorted(got) == ["embed.weight", "norm"], str(got))
    h = json.loads(run("ls", "--json", "--hash", st).stdout)["tensors"]
    hs = json.loads(run("ls", "--json", "--hash", src).stdout)["tensors"]
    check("tied safetensors values",
          {t["name"]: t["sha256"] for t in h}["embed.weight"] == hs[0]["sha256"])
    # a slice of a storage is no alias: written as a tensor of its own
    base = sample("float32", (8,), 21)
    sl = collections.OrderedDict([("a", base), ("b", base[2:6])])
    src2 = P("src", "slice.pt")
    torch.save(sl, src2)
    ls = json.loads(run("ls", "--json", src2).stdout)["tensors"]
    check("slice no alias", all("alias_of" not in t for t in ls), str(ls))
    st2 = P("tio", "slice.safetensors")
    p = convert(src2, st2)
    check("slice no warning", "warning" not in p.stderr, p.stderr)
    out2 = P("tio", "slice.pt")
    convert(src2, out2)
    same_dict("slice .pt", load(out2), collections.OrderedDict(
        [("a", base), ("b", base[2:6].clone())]))


def stdout_and_determinism(P):
    sd = collections.OrderedDict([("a", sample("float32", (3,), 30)),
                                  ("b", sample("int64", (2, 2), 31))])
    src = P("src", "std.pt")
    torch.save(sd, src)
    buf = io.BytesIO()
    torch.save(sd, buf)
    p = subprocess.run([TENSIO, "convert", "--to", "torch", src, "-"], capture_output=True)
    check("stdout exit", p.returncode == 0, p.stderr.decode())
    check("stdout is torch.save into a BytesIO", p.stdout == buf.getvalue(),
          "%d vs %d bytes" % (len(p.stdout), len(buf.getvalue())))
    a, b = P("tio", "det.pt"), P("again", "det.pt")
    convert(src, a)
    convert(src, b)
    same_bytes("two writes", a, b)


def refusals(P):
    src = P("src", "u16.npz")
    np.savez(src, w=np.arange(4, dtype=np.uint16))
    out = P("tio", "u16.pt")
    p = convert(src, out, ok=False)
    check("uint16 refused", p.returncode == 1 and "uint16" in p.stderr, p.stderr)
    check("uint16 nothing written", not os.path.exists(out))
    # metadata (a safetensors __metadata__): --drop-metadata drops it
    pt = P("src", "meta.pt")
    torch.save(collections.OrderedDict(w=torch.ones(2)), pt)
    st = P("src", "meta.safetensors")
    convert(pt, st)
    raw = open(st, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    hdr = json.loads(raw[8:8 + n])
    hdr["__metadata__"] = {"format": "pt"}
    h = json.dumps(hdr).encode()
    h += b" " * (-len(h) % 8)
    st2 = P("src", "meta2.safetensors")
    open(st2, "wb").write(len(h).to_bytes(8, "little") + h + raw[8 + n:])
    out = P("tio", "meta2.pt")
    p = convert(st2, out, ok=False)
    check("metadata refused", p.returncode == 1 and "--drop-metadata" in p.stderr, p.stderr)
    check("metadata nothing written", not os.path.exists(out))
    convert(st2, out, "--drop-metadata")
    same_dict("metadata dropped", load(out), collections.OrderedDict(w=torch.ones(2)))


def atomic(P):
    """A save cut short by the file size limit: the target stays as it was,
    and no temporary file is left."""
    big = collections.OrderedDict(w=sample("float32", (200000,), 40))
    src = P("src", "big.pt")
    torch.save(big, src)
    d = os.path.join(P.tmp, "atomic")
    os.makedirs(d)
    out = os.path.join(d, "big.pt")
    open(out, "wb").write(b"before")

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (300000, 300000))

    p = subprocess.run([TENSIO, "convert", "--force", src, out], capture_output=True, text=True,
                       preexec_fn=limit)
    check("atomic exit", p.returncode == 1 and "big.pt" in p.stderr, p.stderr)
    check("atomic target intact", open(out, "rb").read() == b"before")
    check("atomic no temp file", os.listdir(d) == ["big.pt"], str(os.listdir(d)))
    convert(src, out, "--force")
    same_dict("atomic then", load(out), big)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        P = Dirs(tmp)
        dtypes_from_npz(P)
        dtypes_from_pt_and_safetensors(P)
        other_layouts(P)
        shapes_and_names(P)
        many(P)
        sparse(P)
        tied(P)
        stdout_and_determinism(P)
        refusals(P)
        atomic(P)
    return report()


if __name__ == "__main__":
    sys.exit(main())
