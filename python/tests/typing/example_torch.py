"""tensio.torch under `mypy --strict` (python/tests/typing.sh): a shard
written with tarfile, read back as a ShardDataset; it also runs."""
import io
import os
import sys
import tarfile
import tempfile

import numpy as np
import torch

import tensio
import tensio.torch


def write_shard(path: str, n: int) -> None:
    with tarfile.open(path, "w") as tar:
        for i in range(n):
            data = tensio.dumps([np.full(3, i, np.float32)], "npy")
            info = tarfile.TarInfo("s%03d.x.npy" % i)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def main(tmp: str) -> int:
    path = os.path.join(tmp, "shard-000.tar")
    write_shard(path, 4)
    ds = tensio.torch.ShardDataset(path, shuffle=True, seed=1, batch_size=2)
    ds.set_epoch(1)
    order: list[str] = ds.shard_order()
    total = 0.0
    for batch in ds:
        x = batch["x.npy"]
        assert isinstance(x, torch.Tensor) and tuple(x.shape) == (2, 3)
        total += float(x.sum())
    assert order == [path] and total == 3.0 * (0 + 1 + 2 + 3), (order, total)
    with tensio.Shard(path) as shard:
        keys: list[str] = shard.keys()
        assert len(shard) == 4 and keys[0] == "s000", keys
    return 0


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        sys.exit(main(d))
