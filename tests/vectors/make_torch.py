#!/usr/bin/python3
"""Writes the PyTorch checkpoint vectors (tests/vectors/torch) with Debian's
python3-torch: torch.save's zip layout, the legacy layout
(_use_new_zipfile_serialization=False) and a TorchScript archive
(torch.jit.save); objects.pt: complex, quantized tensors and NumPy objects
(pickle protocol 2), objects_p4.pt: NumPy arrays at protocol 4 (bytes the
reader views); sparse.pt: COO tensors, one coalesced, one whose index
repeats, and a CSR matrix; module.pt: a pickled torch.nn.Module (torch.save
of the model, not its state_dict). Run from this directory: /usr/bin/python3 make_torch.py"""
import collections
import os

import numpy as np
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
    objs = collections.OrderedDict()
    objs["c"] = torch.tensor([1 + 2j, -3.5j], dtype=torch.complex64)
    objs["q"] = torch.quantize_per_tensor(torch.tensor([0.5, 1.0, -1.5]), 0.5, 3, torch.qint8)
    objs["qc"] = torch.quantize_per_channel(torch.tensor([[0.1, 0.2], [0.3, -0.4]]),
                                            torch.tensor([0.1, 0.2], dtype=torch.float64),
                                            torch.tensor([0, 1]), 0, torch.quint8)
    objs["a"] = np.arange(6, dtype=">i2").reshape(2, 3)
    objs["f"] = np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3))
    objs["s"] = np.float32(1.5)
    torch.save(objs, os.path.join(out, "objects.pt"))
    torch.save({"a": np.arange(6, dtype="<i2").reshape(2, 3), "z": np.complex128(1 - 2j)},
               os.path.join(out, "objects_p4.pt"), pickle_protocol=4)
    sparse(out)
    module(out)


def module(out):
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(3, 2, bias=False), torch.nn.BatchNorm1d(2))
    m.names = ["cat", "dog"]
    torch.save({"model": m, "epoch": 2}, os.path.join(out, "module.pt"))


def sparse(out):
    sp = collections.OrderedDict()
    sp["w"] = torch.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, -3.0]]).to_sparse()
    sp["rep"] = torch.sparse_coo_tensor(torch.tensor([[1, 0, 1], [2, 0, 2]]),
                                        torch.tensor([1.0, 2.0, 4.0]), (2, 3))
    sp["d"] = torch.arange(3, dtype=torch.int32)
    sp["csr"] = torch.tensor([[0.0, 0.5], [0.25, 0.75]]).to_sparse_csr()
    torch.save(sp, os.path.join(out, "sparse.pt"))


if __name__ == "__main__":
    main()
