#!/usr/bin/python3
"""Writes the PyTorch checkpoint vectors (tests/vectors/torch) with Debian's
python3-torch: torch.save's zip layout, the legacy layout
(_use_new_zipfile_serialization=False) and a TorchScript archive
(torch.jit.save). Run from this directory: /usr/bin/python3 make_torch.py"""
import collections
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def state():
    torch.manual_seed(0)
    sd = collections.OrderedDict()
    sd["w"] = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    sd["b"] = torch.tensor([1.5, -2.0, 0.25], dtype=torch.float16)
    sd["i"] = torch.tensor([[1, -2], [3, 2**40]], dtype=torch.int64)
    sd["wt"] = sd["w"].t()  # shares w's storage, strided
    sd["row"] = sd["w"][1]  # shares it, at an offset
    sd["step"] = 7
    sd["name"] = "tiny"
    return sd


def main():
    out = os.path.join(HERE, "torch")
    os.makedirs(out, exist_ok=True)
    sd = state()
    torch.save(sd, os.path.join(out, "state.pt"))
    torch.save(sd, os.path.join(out, "legacy.pt"), _use_new_zipfile_serialization=False)
    torch.manual_seed(0)
    m = torch.jit.script(torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2)))
    torch.jit.save(m, os.path.join(out, "script.pt"))


if __name__ == "__main__":
    main()
