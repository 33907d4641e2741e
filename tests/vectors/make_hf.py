#!/usr/bin/python3
"""Writes the Hugging Face sharded checkpoint vectors (tests/vectors/hfindex):
two small repos in one directory, each as transformers' save_pretrained lays
one out (its index: json.dumps(index, indent=2, sort_keys=True) + "\\n"):

- model.safetensors.index.json over model-0000{1,2}-of-00002.safetensors,
  the shards laid out by hand as the safetensors crate writes them
  (make_st_npy.py's st_file; no reference writer runs here), with
  {"format": "pt"} metadata as transformers writes it;
- pytorch_model.bin.index.json over pytorch_model-0000{1,2}-of-00002.bin,
  written by Debian's python3-torch (torch.save of parts of a state dict).

Run from this directory: /usr/bin/python3 make_hf.py"""
import collections
import json
import os

import numpy as np
import torch

from make_st_npy import st_file

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "hfindex")


def index(weight_map, total_size, name):
    text = json.dumps({"metadata": {"total_size": total_size}, "weight_map": weight_map},
                      indent=2, sort_keys=True) + "\n"
    with open(os.path.join(OUT, name), "w") as f:
        f.write(text)


def safetensors_repo():
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.array([1.5, -2.0, 0.25], dtype=np.float16)
    i = np.array([[1, -2], [3, 2 ** 40]], dtype=np.int64)
    parts = [{"w": ("F32", [3, 4], w.tobytes()), "b": ("F16", [3], b.tobytes())},
             {"i": ("I64", [2, 2], i.tobytes())}]
    wm = {}
    for k, part in enumerate(parts):
        fn = "model-%05d-of-%05d.safetensors" % (k + 1, len(parts))
        with open(os.path.join(OUT, fn), "wb") as f:
            f.write(st_file(part, {"format": "pt"}))
        wm.update({name: fn for name in part})
    index(wm, w.nbytes + b.nbytes + i.nbytes, "model.safetensors.index.json")


def torch_repo():
    torch.manual_seed(0)
    sd = collections.OrderedDict()
    sd["emb.weight"] = torch.randn(5, 3)
    sd["lin.weight"] = torch.randn(2, 3).to(torch.bfloat16)
    sd["lin.bias"] = torch.zeros(2, dtype=torch.float64)
    sd["steps"] = torch.tensor(3, dtype=torch.int64)
    parts = [["emb.weight", "lin.weight"], ["lin.bias", "steps"]]
    wm = {}
    for k, names in enumerate(parts):
        fn = "pytorch_model-%05d-of-%05d.bin" % (k + 1, len(parts))
        torch.save(collections.OrderedDict((n, sd[n]) for n in names), os.path.join(OUT, fn))
        wm.update({n: fn for n in names})
    index(wm, sum(t.numel() * t.element_size() for t in sd.values()),
          "pytorch_model.bin.index.json")


def main():
    os.makedirs(OUT, exist_ok=True)
    safetensors_repo()
    torch_repo()


if __name__ == "__main__":
    main()
