#!/usr/bin/python3
"""Sparse tensors in PyTorch checkpoints: COO tensors written by Debian's
torch 1.13 (zip and legacy layouts) read as tensio's COO tensors, their
indices, values and dense form against torch.load's; uncoalesced, hybrid and
CSR tensors; conversions; and hostile pickles of _rebuild_sparse_tensor.

  test_torch_sparse.py TENSIO"""
import collections
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from clitest import TENSIO, run, check, report  # noqa: E402
from test_torch import Storage, Tensor, archive, dumps  # noqa: E402
from test_torch_objects import attempt as attempt_p  # noqa: E402


def sha(b):
    return hashlib.sha256(b).hexdigest()


def listing(path, *opts, ok=True):
    p = run("ls", "--json", "--hash", *opts, path, ok=ok)
    return json.loads(p.stdout)["tensors"] if p.stdout.strip() else []


def coo_hashes(t):
    """What ls --json --hash gives of a COO tensor: indices nnz x rank, values, dense."""
    ind = t._indices().t().contiguous().numpy().astype("<i8").tobytes()
    val = t._values().contiguous().numpy().tobytes()
    return sha(ind), sha(val), sha(t.to_dense().contiguous().numpy().tobytes())


def validate(path):
    """(exit status, what it printed: validate's findings go to stdout)."""
    p = subprocess.run([TENSIO, "validate", path], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def real_files(tmp):
    torch.manual_seed(3)
    a = (torch.rand(20, 30) * (torch.rand(20, 30) > 0.9)).to_sparse()  # coalesced
    b = torch.randint(-50, 50, (4, 5, 6)) * (torch.rand(4, 5, 6) > 0.8)
    b = b.to_sparse()
    perm = torch.randperm(a._nnz())  # the same entries, not sorted: no repeats
    unsorted = torch.sparse_coo_tensor(a._indices()[:, perm], a._values()[perm], a.shape)
    empty = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.int64), torch.zeros(0), (3, 4))
    c64 = torch.sparse_coo_tensor(torch.tensor([[0, 2]]), torch.tensor([1 + 2j, 3 - 1j],
                                                                      dtype=torch.complex64), (4,))
    f64 = torch.eye(5, dtype=torch.float64).to_sparse()
    sd = collections.OrderedDict(dense=torch.arange(6.0), a=a, b=b, unsorted=unsorted,
                                 empty=empty, c64=c64, nested={"f64": f64})
    want = [("dense", None), ("a", a), ("b", b), ("unsorted", unsorted), ("empty", empty),
            ("c64", c64), ("nested.f64", f64)]
    for layout, kw in (("zip", {}), ("legacy", {"_use_new_zipfile_serialization": False})):
        p = os.path.join(tmp, "sparse-%s.pt" % layout)
        torch.save(sd, p, **kw)
        ts = listing(p)
        check(layout + ": count", len(ts) == len(want), str(len(ts)))
        for t, (name, v) in zip(ts, want):
            w = "%s %s" % (layout, name)
            check(w + " name", t["name"] == name, t["name"])
            if v is None:
                check(w + " dense", t["layout"] == "dense", t["layout"])
                continue
            check(w + " layout", t["layout"] == "coo", t["layout"])
            check(w + " shape", t["shape"] == list(v.shape), str(t["shape"]))
            check(w + " nnz", t["nnz"] == v._nnz(), str(t["nnz"]))
            hi, hv, hd = coo_hashes(v)
            check(w + " indices", t.get("indices_sha256") == hi, str(t))
            check(w + " values", t.get("values_sha256") == hv, str(t))
            check(w + " dense form", t.get("sha256") == hd, str(t))
        rc, out = validate(p)
        check(layout + ": validate", rc == 0, out)
        inf = json.loads(run("info", "--json", p).stdout)
        check(layout + ": no findings", not inf.get("findings"), str(inf.get("findings")))

    # conversions: COO kept where the format holds it (BTF), densified on request
    p = os.path.join(tmp, "sparse-zip.pt")
    btf = os.path.join(tmp, "s.btf")
    run("convert", "--drop-names", "--exclude", "c64", p, btf)  # BTF holds no complex
    bw = [(n, v) for n, v in want if n != "c64"]
    check("btf: count", len(listing(btf)) == len(bw), btf)
    for t, (name, v) in zip(listing(btf), bw):
        if v is not None:
            check("btf " + name, t["layout"] == "coo" and t["values_sha256"] == coo_hashes(v)[1]
                  and t["indices_sha256"] == coo_hashes(v)[0], str(t))
    npz = os.path.join(tmp, "s.npz")
    r = run("convert", p, npz, ok=False)
    check("npz without --densify refused", r.returncode != 0 and "--densify" in r.stderr, r.stderr)
    run("convert", "--densify", p, npz)
    z = np.load(npz)
    for name, v in want:
        if v is not None:
            check("npz " + name, np.array_equal(z[name], v.to_dense().numpy()), name)

    # a repeated index: torch adds the values; tensio keeps them as stored and says so
    dup = torch.sparse_coo_tensor(torch.tensor([[1, 0, 1], [2, 0, 2]]),
                                  torch.tensor([1.0, 2.0, 3.0]), (2, 3))
    p = os.path.join(tmp, "dup.pt")
    torch.save({"d": dup}, p)
    t = listing(p)[0]
    check("dup: read", t["nnz"] == 3 and t["values_sha256"] == coo_hashes(dup)[1], str(t))
    rc, out = validate(p)
    check("dup: a finding", rc == 1 and "index (1, 2) repeats" in out and "torch adds" in out,
          out)

    # hybrid (values of more dims) and CSR: opaque objects with a finding
    h = torch.sparse_coo_tensor(torch.tensor([[0, 1, 1], [2, 0, 2]]),
                                torch.tensor([[1.0, 2], [3, 4], [5, 6]]), (2, 3, 2))
    p = os.path.join(tmp, "hybrid.pt")
    torch.save({"h": h, "w": torch.ones(2)}, p)
    ts = listing(p)
    check("hybrid: the dense tensor beside it", [t["name"] for t in ts] == ["w"], str(ts))
    rc, out = validate(p)
    check("hybrid: a finding", rc == 1 and "'h': a hybrid COO tensor" in out, out)
    inf = json.loads(run("info", "--json", p).stdout)
    check("hybrid: named in the metadata", "hybrid" in inf.get("metadata", {}).get("h", ""),
          str(inf.get("metadata")))

    # CSR (torch 1.13's _rebuild_sparse_csr_tensor): the same matrix as COO
    # (row, column) in the stored order, the layout beside it; int32 indices too
    m = torch.tensor([[0, 1.5, 0, 0], [2, 0, -3, 0], [0, 0, 0, 0], [0, 4, 0, 5]])
    csr = m.to_sparse_csr()
    i32 = torch.sparse_csr_tensor(csr.crow_indices().int(), csr.col_indices().int(),
                                  csr.values(), m.shape)
    p = os.path.join(tmp, "csr.pt")
    torch.save({"c": csr, "i": i32}, p)
    ts = listing(p)
    rows = torch.repeat_interleave(torch.arange(4), csr.crow_indices().diff())
    ind = sha(torch.stack([rows, csr.col_indices()], 1).numpy().astype("<i8").tobytes())
    for t in ts:
        check("csr %s: COO of the matrix" % t["name"], t["layout"] == "coo" and t["nnz"] == 5
              and t["shape"] == [4, 4] and t["indices_sha256"] == ind
              and t["values_sha256"] == sha(csr.values().numpy().tobytes())
              and t["sha256"] == sha(m.numpy().tobytes()), str(t))
    check("csr: both", len(ts) == 2, str(ts))
    inf = json.loads(run("info", "--json", p).stdout)
    check("csr: its layout", inf.get("metadata", {}).get("c.layout") == "torch.sparse_csr"
          and inf.get("metadata", {}).get("i.layout") == "torch.sparse_csr",
          str(inf.get("metadata")))
    check("csr: validate", validate(p)[0] == 0, validate(p)[1])
    p = os.path.join(tmp, "bcsr.pt")
    torch.save({"b": torch.stack([m, m]).to_sparse_csr()}, p)
    check("batched csr: no tensor", listing(p) == [], p)
    check("batched csr: a finding", "'b': a batched tensor" in validate(p)[1], validate(p)[1])


# ----------------------------------------------------------------- hostile

class Layout:
    def __init__(self, name):
        self.name = name

    def __reduce__(self):
        return (torch.serialization._get_layout, (self.name,))


class Sparse:
    def __init__(self, layout, data):
        self.args = (layout, data)

    def __reduce__(self):
        return (torch._utils._rebuild_sparse_tensor, self.args)


def part(key, values, dtype="<i8"):
    """A 1-D tensor over storage key, and its bytes."""
    cls = {"<i8": torch.LongStorage, "<i4": torch.IntStorage, "<f4": torch.FloatStorage}[dtype]
    return (Tensor(Storage(key, len(values), cls), 0, (len(values),), (1,)),
            np.array(values, dtype).tobytes())


def compressed(layout, comp, plain, values, size, dtype="<i8"):
    """torch 2.x's pickle of a CSR or CSC matrix 'x': _rebuild_sparse_tensor(layout,
    (compressed, plain, values, size))."""
    c, cb = part("0", comp, dtype)
    p, pb = part("1", plain, dtype)
    v, vb = part("2", values, "<f4")
    return pt({"x": Sparse(Layout(layout), (c, p, v, torch.Size(size)))},
              {"0": cb, "1": pb, "2": vb})


def pt(obj, records):
    return archive(dumps(obj), records)


def coo(ind_rows, values, size, ind_size=None, ind_stride=None, layout="torch.sparse_coo",
        ind_cls=torch.LongStorage, extra=()):
    """A pickle of one COO tensor 'x': indices [rank, nnz] (rows given), values float32."""
    rank, nnz = len(ind_rows), len(values)
    flat = [v for row in ind_rows for v in row]
    it = "<i8" if ind_cls is torch.LongStorage else "<f4"
    ind = Tensor(Storage("0", len(flat), ind_cls), 0, ind_size or (rank, nnz),
                 ind_stride or (nnz, 1))
    val = Tensor(Storage("1", nnz, torch.FloatStorage), 0, (nnz,), (1,))
    data = (ind, val, torch.Size(size)) + tuple(extra)
    return pt({"x": Sparse(Layout(layout), data)},
              {"0": np.array(flat, it).tobytes(), "1": np.array(values, "<f4").tobytes()})


def attempt(what, data, ok, must=(), opts=()):
    p = attempt_p(what, data, ok, must, opts)
    return json.loads(p.stdout)["tensors"] if ok and p.stdout.strip() else []


def hostile():
    ts = attempt("made by hand", coo([[0, 2], [1, 0]], [1.5, 2.5], (3, 2)), True)
    check("made by hand: COO", ts and ts[0]["layout"] == "coo" and ts[0]["nnz"] == 2, str(ts))
    attempt("an index out of range", coo([[0, 3], [1, 0]], [1, 2], (3, 2)), False,
            ["COO index 1, coordinate 0 is 3"])
    attempt("a negative index", coo([[0, -1], [1, 0]], [1, 2], (3, 2)), False, ["is -1"])
    attempt("float indices", coo([[0, 1], [1, 0]], [1, 2], (3, 2), ind_cls=torch.FloatStorage),
            False, ["float32 indices"])
    attempt("indices of another nnz", coo([[0, 1, 2], [1, 0, 0]], [1, 2], (3, 2), ind_size=(2, 3),
                                          ind_stride=(3, 1)), False,
            ["expected int64 indices of shape [sparse dims, nnz]"])
    attempt("indices of another rank", coo([[0, 1], [1, 0]], [1, 2], (3, 2, 2)), False,
            ["sparse + dense dims = 3"])
    attempt("indices past their storage", coo([[0, 1], [1, 0]], [1, 2], (3, 2), ind_size=(2, 3),
                                              ind_stride=(3, 1)), False, ["reaches past"])
    attempt("strided indices", coo([[0, 1], [1, 0]], [1, 2], (3, 2), ind_size=(2, 2),
                                   ind_stride=(1, 2)), False, ["a strided view"])
    attempt("data of 2 items", pt({"x": Sparse(Layout("torch.sparse_coo"), (1, 2))}, {}), False,
            ["whose data has 2 items"])
    attempt("a layout that is a str", pt({"x": Sparse("torch.sparse_coo", (1, 2, 3))}, {}), False,
            ["arguments are not (layout, data)"])
    attempt("values that are no tensor",
            pt({"x": Sparse(Layout("torch.sparse_coo"), (1, 2, torch.Size((2,))))}, {}), False,
            ["sparse tensor's indices are not a tensor"])
    ts = attempt("is_coalesced given", coo([[0, 1], [1, 0]], [1, 2], (3, 2), extra=(False,)), True)
    check("is_coalesced given: read", ts and ts[0]["nnz"] == 2, str(ts))
    attempt("another layout", coo([[0, 1], [1, 0]], [1, 2], (3, 2), layout="torch.sparse_bsr"),
            True)
    attempt("over max_dense_bytes", coo([[0, 1], [1, 0]], [1, 2], (3, 2)), False,
            ["max_dense_bytes"], opts=("--max-dense-bytes", "16"))
    # CSR and CSC as torch 2.x pickles them, and broken compressed indices
    ts = attempt("CSC", compressed("torch.sparse_csc", [0, 1, 3, 3], [1, 0, 1], [2, 1.5, -3],
                                   (2, 3)), True)
    want = sha(np.array([[1, 0], [0, 1], [1, 1]], "<i8").tobytes())
    check("CSC: (row, column) per value", ts and ts[0]["indices_sha256"] == want, str(ts))
    check("CSC: dense", ts and ts[0]["sha256"] == sha(np.array([[0, 1.5, 0], [2, -3, 0]],
                                                                 "<f4").tobytes()), str(ts))
    attempt("CSR of int32", compressed("torch.sparse_csr", [0, 1, 3], [1, 0, 2], [1, 2, 3],
                                       (2, 3), "<i4"), True)
    attempt("CSR decreasing", compressed("torch.sparse_csr", [0, 2, 1], [1, 0, 2], [1, 2, 3],
                                         (2, 3)), False, ["compressed index 2 is 1 after 2"])
    attempt("CSR not ending at nnz", compressed("torch.sparse_csr", [0, 1, 2], [1, 0, 2],
                                                [1, 2, 3], (2, 3)), False, ["3 last"])
    attempt("CSR not starting at 0", compressed("torch.sparse_csr", [1, 1, 3], [1, 0, 2],
                                                [1, 2, 3], (2, 3)), False, ["0 first"])
    attempt("CSR of too few rows", compressed("torch.sparse_csr", [0, 3], [1, 0, 2], [1, 2, 3],
                                              (2, 3)), False, ["3 compressed"])
    attempt("CSR of 2^63 - 1 rows", compressed("torch.sparse_csr", [0, 1, 3], [1, 0, 2],
                                               [1, 2, 3], (2**63 - 1, 3)), False,
            ["9223372036854775808 compressed"])
    attempt("CSR column out of range", compressed("torch.sparse_csr", [0, 1, 3], [1, 0, 3],
                                                  [1, 2, 3], (2, 3)), False, ["coordinate 1 is 3"])
    attempt("CSR of float indices", compressed("torch.sparse_csr", [0, 1, 3], [1, 0, 2],
                                               [1, 2, 3], (2, 3), "<f4"), False,
            ["float32 compressed indices"])
    attempt("CSR of 3 items", pt({"x": Sparse(Layout("torch.sparse_csr"), (1, 2, 3))}, {}),
            False, ["data has 3 items"])
    # many repeats of one index: one finding, and no slower than the table
    n = 200000
    data = coo([[0] * n, [1] * n], [1.0] * n, (2, 2))
    with tempfile.NamedTemporaryFile(suffix=".pt") as f:
        f.write(data)
        f.flush()
        rc, out = validate(f.name)
        check("200,000 repeats: one finding", rc == 1 and out.count("repeats") == 1, out[:400])


def main():
    with tempfile.TemporaryDirectory() as tmp:
        real_files(tmp)
        hostile()
    return report()


if __name__ == "__main__":
    sys.exit(main())
