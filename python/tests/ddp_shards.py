"""One rank of test_torch_dataset.py's distributed test, started as torchrun
--nproc_per_node=2 starts its ranks (MASTER_ADDR, MASTER_PORT, RANK,
LOCAL_RANK, WORLD_SIZE in the environment): a gloo process group on the CPU,
tensio.torch.ShardDataset over the shards SPEC names, a DataLoader of 2
workers, epochs 0 and 1 for each way of splitting; the keys it received, in
order, written as JSON to OUT.

    python3 ddp_shards.py SPEC OUT
"""
import json
import sys

import torch
import torch.distributed as dist

import tensio.torch

MODES = {
    "whole": {"shuffle": True, "seed": 7, "shuffle_buffer": 4},
    "even": {"shuffle": True, "seed": 7, "shuffle_buffer": 4, "samples_per_rank": 20},
}


def main(spec, out):
    dist.init_process_group("gloo")
    got = {"rank": dist.get_rank()}
    for mode, kw in MODES.items():
        ds = tensio.torch.ShardDataset(spec, **kw)  # rank and world from the process group
        loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2)
        for epoch in (0, 1):
            ds.set_epoch(epoch)
            keys = []
            for s in loader:
                n = int(s["cls"])  # the sample's number: its tensors hold it
                x, y = s["ten"]
                assert x.dtype == torch.float32 and tuple(x.shape) == (4, 3), x
                assert bool((x == n).all()) and y.tolist() == [n], (s["__key__"], x, y)
                assert bool((s["npy"] == torch.arange(6, dtype=torch.float64) * n).all())
                keys.append(s["__key__"])
            got["%s/%d" % (mode, epoch)] = keys
    dist.barrier()
    dist.destroy_process_group()
    with open(out, "w") as f:
        json.dump(got, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
