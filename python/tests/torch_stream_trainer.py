"""A trainer process of test_torch_stream.py: binds a tensio.torch
tensio.torch.StreamDataset on a free loopback port, prints the
endpoint, iterates EPOCHS epochs of batches from SERVERS servers (sleeping
SLEEP seconds per batch: a slow trainer) and prints, as JSON, the sample keys
of each epoch and the batches whose tensors did not match their keys
(sample "s{k}_{i:03d}" holds float32 [4] of 100 * k + i)."""
import json
import sys
import time

from tensio.torch import StreamDataset


def main():
    servers, epochs, sleep = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    out = {"epochs": [], "bad": []}
    with StreamDataset("zpull://127.0.0.1:*", servers=servers, keys=True, timeout=120,
                       hwm=2) as ds:
        print(ds.endpoint, flush=True)
        for _ in range(epochs):
            keys = []
            for tensors, ks in ds:
                keys += ks
                x = tensors[0]
                want = [100 * int(k[1:k.index("_")]) + int(k[k.index("_") + 1:]) for k in ks]
                if list(x.shape) != [len(ks), 4] or x[:, 0].tolist() != want or \
                        x[:, 3].tolist() != want:
                    out["bad"].append(ks)
                time.sleep(sleep)
            out["epochs"].append(keys)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
