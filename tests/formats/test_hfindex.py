#!/usr/bin/python3
"""Hugging Face sharded checkpoints against Debian's torch and Python's json.

  test_hfindex.py TENSIO

- pytorch_model.bin shards written here by torch.save (parts of one state
  dict) with pytorch_model.bin.index.json as transformers writes it
  (json.dumps(index, indent=2, sort_keys=True) + "\\n"): the directory and
  the index open as one container, and `ls --json --hash`, info, dump,
  stats, validate and diff see every tensor with torch's bytes;
- `convert DIR OUT/ --max-shard-size SIZE` writes safetensors shards: the
  index is byte for byte what json.dumps writes for it, the packing is
  huggingface_hub's split_state_dict_into_shards (reimplemented below from
  its documented rule), each shard parses as a safetensors file by hand
  (8-byte length, JSON header, data) with torch's bytes and
  {"format": "pt"} metadata; sizes as transformers parses them;
- tied weights (one storage, the same view) converted to safetensors: written
  once, the alias named on stderr, as transformers leaves them out;
- hostile indexes through the CLI: path traversal, missing shards, tensors
  missing or in two shards, malformed JSON: exit 1 with a message naming
  the index problem, never a crash."""
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from clitest import TENSIO, failures, run, check  # noqa: E402
from test_torch import DTYPES, tbytes  # noqa: E402  (torch's dtype names, C-order bytes)

ST_DTYPES = {"F32": "float32", "F64": "float64", "F16": "float16", "BF16": "bfloat16",
             "I8": "int8", "U8": "uint8", "I16": "int16", "I32": "int32", "I64": "int64",
             "BOOL": "bool"}


def state_dict():
    g = torch.Generator().manual_seed(7)
    sd = {}
    sd["embed.weight"] = torch.randn(50, 16, generator=g)
    for i in range(3):
        sd["layers.%d.attn.weight" % i] = torch.randn(16, 16, generator=g).to(torch.float16)
        sd["layers.%d.attn.bias" % i] = torch.randn(16, generator=g).to(torch.bfloat16)
        sd["layers.%d.norm.running_mean" % i] = torch.randn(16, generator=g, dtype=torch.float64)
        sd["layers.%d.norm.num_batches_tracked" % i] = torch.tensor(i, dtype=torch.int64)
    sd["mask"] = torch.rand(4, 4, generator=g) > 0.5
    sd["ids"] = torch.arange(10, dtype=torch.int32)
    sd["head.weight"] = torch.randn(8, 16, generator=g)
    return sd


def index_text(weight_map, total_size):
    return json.dumps({"metadata": {"total_size": total_size}, "weight_map": weight_map},
                      indent=2, sort_keys=True) + "\n"


def torch_repo(d, sd, parts):
    """pytorch_model.bin shards of sd (parts: lists of names) and their index."""
    os.makedirs(d, exist_ok=True)
    wm = {}
    n = len(parts)
    for k, names in enumerate(parts):
        fn = "pytorch_model-%05d-of-%05d.bin" % (k + 1, n)
        torch.save({name: sd[name] for name in names}, os.path.join(d, fn))
        for name in names:
            wm[name] = fn
    total = sum(sd[k].numel() * sd[k].element_size() for k in sd)
    with open(os.path.join(d, "pytorch_model.bin.index.json"), "w") as f:
        f.write(index_text(wm, total))
    return wm


def ls_json(path):
    return json.loads(run("ls", "--json", "--hash", path).stdout)


def check_listing(what, listing, sd):
    got = {t["name"]: t for t in listing["tensors"]}
    check(what + ": names", sorted(got) == sorted(sd), "%s vs %s" % (sorted(got), sorted(sd)))
    for name, t in sd.items():
        g = got.get(name)
        if not g:
            continue
        check("%s: %s dtype" % (what, name), g["dtype"] == DTYPES[t.dtype], g["dtype"])
        check("%s: %s shape" % (what, name), g["shape"] == list(t.shape), str(g["shape"]))
        check("%s: %s bytes" % (what, name),
              g["sha256"] == hashlib.sha256(tbytes(t)).hexdigest())


def hub_split(sizes, max_size):
    """huggingface_hub's packing rule, from its documentation: in order; a
    tensor above the maximum gets its own shard at once; one that would take
    the current shard past the maximum closes it. -> list of lists of names."""
    shards, cur, cur_size = [], [], 0
    for name, size in sizes:
        if size > max_size:
            shards.append([name])
            continue
        if cur_size + size > max_size:
            shards.append(cur)
            cur, cur_size = [], 0
        cur.append(name)
        cur_size += size
    if cur:
        shards.append(cur)
    return shards


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", None)
    body = data[8 + n:]
    out = {}
    for name, h in header.items():
        b, e = h["data_offsets"]
        out[name] = (ST_DTYPES[h["dtype"]], h["shape"], body[b:e])
    return meta, out


def reading(tmp):
    sd = state_dict()
    names = list(sd)
    parts = [names[:4], names[4:9], names[9:]]
    d = os.path.join(tmp, "torchrepo")
    torch_repo(d, sd, parts)
    idx = os.path.join(d, "pytorch_model.bin.index.json")
    for path in (d, idx, d + "/"):
        lst = ls_json(path)
        check("format of " + path, lst.get("format") == "hfindex", str(lst.get("format")))
        check_listing("ls " + path, lst, sd)
    # order: shards in order, each in its own order
    check("order", [t["name"] for t in ls_json(d)["tensors"]] == names)
    info = json.loads(run("info", "--json", d).stdout)
    total = sum(t.numel() * t.element_size() for t in sd.values())
    check("info props", info["props"] == {"shards": "3", "total_size": str(total)},
          str(info["props"]))
    check("info format", info["format"] == "hfindex" and info["tensor_count"] == len(sd))
    p = run("validate", d, ok=False)
    check("validate exit 0", p.returncode == 0, p.stdout + p.stderr)
    p = run("dump", d)
    check("dump names every tensor", all(n in p.stdout for n in names))
    p = run("stats", d)
    check("stats", "embed.weight" in p.stdout, p.stdout)
    # one safetensors file from the repo; diff finds them equal
    single = os.path.join(tmp, "single.safetensors")
    run("convert", d, single)
    _, st = read_safetensors(single)
    for name, t in sd.items():
        check("single %s" % name, st[name][2] == tbytes(t))
    p = run("diff", d, single, ok=False)
    check("diff repo single.safetensors: same", p.returncode == 0, p.stdout + p.stderr)
    # a total_size other than the sum: a finding validate reports (exit 1)
    with open(idx) as f:
        j = json.load(f)
    j["metadata"]["total_size"] += 1
    with open(idx, "w") as f:
        f.write(json.dumps(j, indent=2, sort_keys=True) + "\n")
    p = run("validate", d, ok=False)
    check("validate total_size", p.returncode == 1 and "total_size" in (p.stdout + p.stderr),
          p.stdout + p.stderr)
    return sd


def writing(tmp, sd):
    src = os.path.join(tmp, "torchrepo")
    order = [t["name"] for t in ls_json(src)["tensors"]]
    sizes = [(n, sd[n].numel() * sd[n].element_size()) for n in order]
    for size_text, max_size in (("1KB", 1000), ("2KiB", 2048), ("1500", 1500), ("3kb", 375)):
        out = os.path.join(tmp, "out-" + size_text) + "/"
        p = run("convert", src, out, "--max-shard-size", size_text, "--json")
        summary = json.loads(p.stdout)
        want = hub_split(sizes, max_size)
        n = len(want)
        check("%s: shards in summary" % size_text, summary.get("shards") == n, p.stdout)
        files = sorted(os.listdir(out))
        names = ["model-%05d-of-%05d.safetensors" % (k + 1, n) for k in range(n)]
        check("%s: files" % size_text, files == sorted(names + ["model.safetensors.index.json"]),
              str(files))
        wm = {name: names[k] for k, shard in enumerate(want) for name in shard}
        total = sum(s for _, s in sizes)
        with open(os.path.join(out, "model.safetensors.index.json")) as f:
            text = f.read()
        index = {"metadata": {"total_parameters": sum(sd[k].numel() for k in sd),
                              "total_size": total}, "weight_map": wm}
        check("%s: index bytes" % size_text,
              text == json.dumps(index, indent=2, sort_keys=True) + "\n", text[:400])
        for k, shard in enumerate(want):
            meta, st = read_safetensors(os.path.join(out, names[k]))
            check("%s: shard %d metadata" % (size_text, k), meta == {"format": "pt"}, str(meta))
            check("%s: shard %d tensors" % (size_text, k), sorted(st) == sorted(shard),
                  "%s vs %s" % (sorted(st), sorted(shard)))
            for name in shard:
                if name in st:
                    dt, shape, raw = st[name]
                    t = sd[name]
                    check("%s: %s" % (size_text, name),
                          dt == DTYPES[t.dtype] and shape == list(t.shape) and raw == tbytes(t))
        check_listing("reopened " + size_text, ls_json(out), sd)
    # into a big maximum: one model.safetensors, no index (and the shards of
    # the save before are removed)
    out = os.path.join(tmp, "out-1KB")
    run("convert", src, out, "--max-shard-size", "5GB", "--force")
    check("one shard", sorted(os.listdir(out)) == ["model.safetensors"], str(os.listdir(out)))
    # a directory OUT without --max-shard-size: transformers' 5GB
    out = os.path.join(tmp, "out-default")
    os.mkdir(out)
    run("convert", src, out)
    check("default dir", sorted(os.listdir(out)) == ["model.safetensors"], str(os.listdir(out)))
    p = run("convert", src, out, ok=False)
    check("exists without --force", p.returncode == 1 and "already exists" in p.stderr, p.stderr)
    # OUT a file name: shards named after it
    named = os.path.join(tmp, "named")
    os.mkdir(named)
    run("convert", src, os.path.join(named, "weights.safetensors"), "--max-shard-size", "1KB")
    fs = sorted(os.listdir(named))
    check("named", "weights.safetensors.index.json" in fs and
          any(f.startswith("weights-00001-of-") for f in fs), str(fs))
    # bad sizes
    for bad in ("5 GB", "GB", "0", "1.5GB", "-1"):
        p = run("convert", src, os.path.join(tmp, "bad/"), "--max-shard-size", bad, ok=False)
        check("size %r refused" % bad, p.returncode == 2 and "max-shard-size" in p.stderr,
              p.stderr)
    # .bin shards, loaded back by torch.load(weights_only=True)
    out = os.path.join(tmp, "binout") + "/"
    p = run("convert", src, out, "--to", "torch", "--max-shard-size", "1KB", ok=False)
    check("torch shards written", p.returncode == 0, p.stderr)
    idx = json.load(open(os.path.join(out, "pytorch_model.bin.index.json")))
    check("torch shards: every tensor", sorted(idx["weight_map"]) == sorted(sd), idx)
    for name, fn in idx["weight_map"].items():
        t = torch.load(os.path.join(out, fn), weights_only=True)[name]
        check("torch shard %s" % name, tbytes(t) == tbytes(sd[name]))


def tied(tmp):
    """Tied weights (one storage, the same view) to safetensors: written once,
    as the first name, the alias named on stderr; another view of the same
    storage (a slice) is its own tensor, written."""
    g = torch.Generator().manual_seed(1)
    w = torch.randn(10, 4, generator=g)
    sd = {"embed.weight": w, "bias": torch.ones(4), "lm_head.weight": w, "part": w[2:4]}
    src = os.path.join(tmp, "tied.bin")
    torch.save(sd, src)
    for out, extra in ((os.path.join(tmp, "tied.safetensors"), ()),
                       (os.path.join(tmp, "tied-repo") + "/", ("--max-shard-size", "100"))):
        p = run("convert", src, out, *extra)
        check("tied warning " + out, "'lm_head.weight' not written: it is tied to 'embed.weight'"
              in p.stderr and "part" not in p.stderr, p.stderr)
        lst = ls_json(out)
        want = {k: v for k, v in sd.items() if k != "lm_head.weight"}
        check_listing("tied " + out, lst, want)
    # other formats keep every name (each tensor its own bytes)
    out = os.path.join(tmp, "tied.npz")
    p = run("convert", src, out)
    check("tied npz", sorted(t["name"] for t in ls_json(out)["tensors"]) == sorted(sd) and
          "tied" not in p.stderr, p.stderr)


def hostile(tmp):
    sd = {"a": torch.ones(3), "b": torch.zeros(2, dtype=torch.int64)}
    cases = [
        ("traversal", {"a": "../x.bin", "b": "pytorch_model-00001-of-00001.bin"},
         "is a path, not a file name"),
        ("absolute", {"a": "/etc/passwd", "b": "pytorch_model-00001-of-00001.bin"}, "is a path"),
        ("missing shard", {"a": "pytorch_model-00002-of-00002.bin",
                           "b": "pytorch_model-00001-of-00001.bin"}, "cannot be opened"),
        ("missing tensor", {"a": "pytorch_model-00001-of-00001.bin",
                            "b": "pytorch_model-00001-of-00001.bin",
                            "c": "pytorch_model-00001-of-00001.bin"}, "which does not hold it"),
    ]
    for what, wm, want in cases:
        d = os.path.join(tmp, "hostile-" + what.replace(" ", "-"))
        os.makedirs(d)
        torch.save(sd, os.path.join(d, "pytorch_model-00001-of-00001.bin"))
        with open(os.path.join(d, "pytorch_model.bin.index.json"), "w") as f:
            f.write(index_text(wm, 20))
        p = run("ls", d, ok=False)
        check("hostile %s" % what, p.returncode == 1 and want in p.stderr, p.stderr)
    # one tensor in two shards
    d = os.path.join(tmp, "hostile-two")
    os.makedirs(d)
    torch.save(sd, os.path.join(d, "pytorch_model-00001-of-00002.bin"))
    torch.save({"b": sd["b"], "c": sd["a"]}, os.path.join(d, "pytorch_model-00002-of-00002.bin"))
    with open(os.path.join(d, "pytorch_model.bin.index.json"), "w") as f:
        f.write(index_text({"a": "pytorch_model-00001-of-00002.bin",
                            "b": "pytorch_model-00001-of-00002.bin",
                            "c": "pytorch_model-00002-of-00002.bin"}, 40))
    p = run("ls", d, ok=False)
    check("two shards", p.returncode == 1 and "in two shards" in p.stderr, p.stderr)
    # truncations of the index at every byte: refused or read, never a crash
    d = os.path.join(tmp, "hostile-cut")
    os.makedirs(d)
    torch.save(sd, os.path.join(d, "pytorch_model-00001-of-00001.bin"))
    text = index_text({"a": "pytorch_model-00001-of-00001.bin",
                       "b": "pytorch_model-00001-of-00001.bin"}, 28)
    for n in range(len(text)):
        with open(os.path.join(d, "pytorch_model.bin.index.json"), "w") as f:
            f.write(text[:n])
        p = subprocess.run([TENSIO, "ls", d], capture_output=True, text=True, timeout=60)
        try:
            valid = isinstance(json.loads(text[:n]), dict)
        except ValueError:
            valid = False
        if (p.returncode, valid) != (0, True) and (p.returncode != 1 or "hfindex" not in p.stderr):
            failures.append("index cut at %d: exit %d %s" % (n, p.returncode, p.stderr))
            break


def main():
    with tempfile.TemporaryDirectory() as tmp:
        sd = reading(tmp)
        writing(tmp, sd)
        tied(tmp)
        hostile(tmp)
    for f in failures:
        print("FAIL:", f)
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
