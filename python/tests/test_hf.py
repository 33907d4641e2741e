"""Hugging Face sharded checkpoints from Python: save(max_shard_size=) writes
shards and an index as transformers' save_pretrained does; open(DIR) and
open(INDEX) give one container over them with NumPy views
(docs/formats/hf.md)."""

import json
import os

import numpy as np
import pytest

import tensio


def arrays():
    rng = np.random.default_rng(3)
    return {"emb": rng.standard_normal((40, 8)).astype(np.float32),
            "w1": rng.standard_normal((8, 8)).astype(np.float16),
            "ids": np.arange(12, dtype=np.int64),
            "b1": rng.standard_normal(8)}


def test_save_and_open(tmp_path):
    a = arrays()
    out = str(tmp_path / "repo") + "/"
    tensio.save(out, a, max_shard_size="1KB")
    files = sorted(os.listdir(out))
    assert files == ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                     "model.safetensors.index.json"]
    with open(out + "model.safetensors.index.json") as f:
        text = f.read()
    index = json.loads(text)
    assert text == json.dumps(index, indent=2, sort_keys=True) + "\n"
    assert index["metadata"]["total_size"] == sum(v.nbytes for v in a.values())
    # emb (1280 bytes) alone above 1 KB: its own shard first; the rest after
    assert index["weight_map"]["emb"] == "model-00001-of-00002.safetensors"
    assert {index["weight_map"][k] for k in ("w1", "ids", "b1")} == {
        "model-00002-of-00002.safetensors"}
    for path in (out, out + "model.safetensors.index.json"):
        with tensio.open(path) as c:
            assert c.format == "hfindex"
            assert sorted(c.names) == sorted(a)
            d = {n: c[n] for n in c.names}
            for k, v in a.items():
                np.testing.assert_array_equal(np.asarray(d[k]), v)
    # a byte count as an int; one shard: model.safetensors alone
    tensio.save(out, a, max_shard_size=10**6)
    assert sorted(os.listdir(out)) == ["model.safetensors"]


def test_bad_sizes(tmp_path):
    for bad in ("5 GB", "GB", "1.5GB", "0"):
        with pytest.raises(tensio.ArgumentError):
            tensio.save(str(tmp_path) + "/", arrays(), max_shard_size=bad)
    with pytest.raises(tensio.ArgumentError):
        tensio.save(str(tmp_path) + "/", arrays(), max_shard_size=0)


def test_hostile_index(tmp_path):
    d = tmp_path / "h"
    d.mkdir()
    (d / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"a": "../../etc/passwd"}}))
    with pytest.raises(tensio.Error, match="is a path, not a file name"):
        tensio.open(str(d))


def test_max_shards_limit(tmp_path):
    out = str(tmp_path / "repo") + "/"
    tensio.save(out, arrays(), max_shard_size="1KB")
    with tensio.open(out, limits={"max_shards": 2}) as c:
        assert c.limits["max_shards"] == 2
    with pytest.raises(tensio.LimitError, match="max_shards"):
        tensio.open(out, limits={"max_shards": 1})
