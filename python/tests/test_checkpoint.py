"""tensio.load_checkpoint (and `tensio info`'s object tree) against Debian's
torch 1.13: checkpoints written here by torch.save, and the structure
torch.load(weights_only=False) gives of these trusted files, the test's own,
compared object by object: dicts (OrderedDict) and their key order, int
keys, lists, tuples, torch.Size, sets, floats (nan), bools, None, str,
bytes, ints past int64, tensors (dtype, shape, values, and one Python
object where torch has one tensor object in two places), and
argparse.Namespace as an Opaque with its fields."""
import argparse
import collections
import json
import math
import os
import subprocess

import numpy as np
import pytest
import torch

import tensio

HERE = os.path.dirname(os.path.abspath(__file__))
CLI = os.environ.get("TIO_CLI") or os.path.join(HERE, "..", "..", "build", "tensio")

TORCH_DTYPE = {torch.float32: "float32", torch.float64: "float64", torch.float16: "float16",
               torch.bfloat16: "bfloat16", torch.int8: "int8", torch.uint8: "uint8",
               torch.int16: "int16", torch.int32: "int32", torch.int64: "int64",
               torch.bool: "bool"}


def _bits(t):
    """A tensor's C-order bytes as torch has them."""
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def same(ours, ref, path="root", seen=None):
    """Asserts that load_checkpoint's `ours` is torch.load's `ref`."""
    if seen is None:
        seen = {}
    if isinstance(ref, torch.Tensor):
        assert isinstance(ours, tensio.CheckpointArray), path
        assert tuple(ours.shape) == tuple(ref.shape), path
        assert ours._tio is not None
        owner, index = ours._tio
        assert owner.info(index)[1] == TORCH_DTYPE[ref.dtype], path
        assert np.ascontiguousarray(ours).tobytes() == _bits(ref), path
        # one torch tensor object: one array, one container tensor
        key = id(ref)
        if key in seen:
            assert seen[key] is ours, path + ": a tensor referenced twice became two arrays"
        seen[key] = ours
        return
    if isinstance(ref, np.ndarray):  # a NumPy array inside the checkpoint: a tensor too
        assert isinstance(ours, tensio.CheckpointArray), path
        assert ours.dtype == ref.dtype and ours.shape == ref.shape, path
        assert np.ascontiguousarray(ours).tobytes() == np.ascontiguousarray(ref).tobytes(), path
        return
    if isinstance(ref, argparse.Namespace):
        assert isinstance(ours, tensio.Opaque), path
        assert ours.name == "argparse.Namespace" and ours.offset > 0, path
        same(ours.state, vars(ref), path + ".__dict__", seen)
        return
    if isinstance(ref, torch.device):
        assert ours == str(ref), path
        return
    if isinstance(ref, dict):
        assert type(ours) is dict, path
        assert list(ours.keys()) == list(ref.keys()), path
        for k in ref:
            same(ours[k], ref[k], "%s[%r]" % (path, k), seen)
        return
    if isinstance(ref, (list, tuple)):  # torch.Size is a tuple
        assert type(ours) is (list if isinstance(ref, list) else tuple), path
        assert len(ours) == len(ref), path
        for k, (a, b) in enumerate(zip(ours, ref)):
            same(a, b, "%s[%d]" % (path, k), seen)
        return
    if isinstance(ref, float) and math.isnan(ref):
        assert isinstance(ours, float) and math.isnan(ours), path
        return
    assert type(ours) is type(ref) and ours == ref, (path, ours, ref)


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                               torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 5))


def stepped(opt_cls, **kw):
    m = model()
    opt = opt_cls(m.parameters(), **kw)
    for _ in range(2):
        opt.zero_grad()
        m(torch.randn(2, 3, 8, 8)).square().sum().backward()
        opt.step()
    return m, opt


def check_file(path, **load_kw):
    ref = torch.load(path, weights_only=False)
    ours = tensio.load_checkpoint(path, **load_kw)
    same(ours, ref)
    return ours, ref


@pytest.mark.parametrize("legacy", [False, True])
def test_model_state_dict(tmp_path, legacy):
    p = str(tmp_path / "model.pt")
    torch.save(model().state_dict(), p, _use_new_zipfile_serialization=not legacy)
    ours, ref = check_file(p)
    assert "1.num_batches_tracked" in ours and ours["1.num_batches_tracked"].dtype == np.int64


def test_dtypes_and_views(tmp_path):
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    sd = collections.OrderedDict()
    for dt in TORCH_DTYPE:
        sd[str(dt)] = (torch.arange(6) % 2 == 0) if dt == torch.bool else base[:1].to(dt)
    sd["transposed"] = base.t()
    sd["sliced"] = base[1:3, 2:]
    sd["expanded"] = torch.tensor([1.5, 2.5]).expand(3, 2)
    sd["scalar"] = torch.tensor(3.25, dtype=torch.float64)
    p = str(tmp_path / "dtypes.pt")
    torch.save(sd, p)
    check_file(p)


@pytest.mark.parametrize("opt", ["adam", "sgd"])
def test_optimizer_state_dict(tmp_path, opt):
    cls, kw = {"adam": (torch.optim.Adam, {"lr": 1e-3, "amsgrad": True}),
               "sgd": (torch.optim.SGD, {"lr": 0.1, "momentum": 0.9, "nesterov": True})}[opt]
    m, o = stepped(cls, **kw)
    p = str(tmp_path / "opt.pt")
    torch.save(o.state_dict(), p)
    ours, ref = check_file(p)
    # int keys, a list of param groups, floats, bools, None
    assert sorted(ours["state"]) == list(range(len(ref["state"])))
    assert isinstance(ours["param_groups"], list)
    assert ours["param_groups"][0]["params"] == ref["param_groups"][0]["params"]


def training_checkpoint():
    m, o = stepped(torch.optim.Adam, lr=1e-3)
    shared = torch.randn(3, 2)
    cfg = {"depth": 3, "widths": [8, 16]}
    return {
        "epoch": 12,
        "step": 2 ** 40,
        "big": 2 ** 100, "negative_big": -(2 ** 70) - 5,
        "loss": 0.125, "best": float("nan"), "inf": float("-inf"),
        "finished": False, "note": None,
        "name": "run-42 \u00e9\u4e2d", "blob": b"\x00\xff\x80tensio", "empty": b"",
        "args": argparse.Namespace(lr=0.001, layers=[64, 32], name="resnet", seed=None,
                                   betas=(0.9, 0.999)),
        "shape": (3, 4), "size": torch.Size([2, 5]), "device": torch.device("cpu"),
        "tags": {"a", "b"},
        "model": m.state_dict(), "optimizer": o.state_dict(),
        "tied": {"encoder": shared, "decoder": shared},
        "history": [[1, 0.5], [2, 0.25]],
        "cfg": cfg, "cfg_again": cfg,
        "mask": np.arange(12, dtype=np.int16).reshape(3, 4),
        "nested": {"list": [shared, {"deep": (shared, 1)}]},
    }


@pytest.mark.parametrize("legacy", [False, True])
def test_training_checkpoint(tmp_path, legacy):
    p = str(tmp_path / "ckpt.pt")
    torch.save(training_checkpoint(), p, _use_new_zipfile_serialization=not legacy)
    ours, ref = check_file(p)
    # the shared tensor: one object and one container tensor everywhere
    t = ours["tied"]["encoder"]
    assert ours["tied"]["decoder"] is t
    assert ours["nested"]["list"][0] is t and ours["nested"]["list"][1]["deep"][0] is t
    assert ours["args"].state["layers"] == [64, 32]
    assert ours["cfg"] is ours["cfg_again"]  # as pickle's memo has it
    assert repr(ours["args"]).startswith("<opaque argparse.Namespace at offset ")


def test_from_dlpack_zero_copy(tmp_path):
    p = str(tmp_path / "w.pt")
    sd = {"w": torch.randn(4, 4), "b": torch.randn(4).to(torch.bfloat16),
          "i": torch.arange(5, dtype=torch.int32)}
    torch.save(sd, p)
    ours = tensio.load_checkpoint(p)
    for k, ref in sd.items():
        x = torch.from_dlpack(ours[k])
        assert x.dtype == ref.dtype and torch.equal(x, ref)
    w = torch.from_dlpack(ours["w"])
    assert w.data_ptr() == ours["w"].ctypes.data  # the file's memory, not a copy
    del ours
    assert torch.equal(w, sd["w"])  # the capsule keeps the mapping alive
    # an array derived from one exports NumPy's (a copy when read-only)
    view = tensio.load_checkpoint(p)["w"][1:]
    assert torch.equal(torch.from_dlpack(view), sd["w"][1:])


def test_from_dlpack_legacy_unaligned(tmp_path):
    # the legacy layout puts storages at any offset: the export is then the
    # library's aligned copy
    p = str(tmp_path / "legacy.pt")
    sd = {"w": torch.randn(3, 3, dtype=torch.float64), "h": torch.randn(2).half()}
    torch.save(sd, p, _use_new_zipfile_serialization=False)
    ours = tensio.load_checkpoint(p)
    for k, ref in sd.items():
        assert torch.equal(torch.from_dlpack(ours[k]), ref)


def test_torchscript(tmp_path):
    m = torch.jit.script(torch.nn.Linear(3, 2))
    p = str(tmp_path / "script.pt")
    torch.jit.save(m, p)
    ours = tensio.load_checkpoint(p)
    # data.pkl's module beside constants.pkl's tuple (empty here)
    assert list(ours) == ["data", "constants"] and ours["constants"] == ()
    mod = ours["data"]
    assert isinstance(mod, tensio.Opaque) and mod.name.startswith("__torch__.")
    state = mod.state
    assert torch.equal(torch.from_dlpack(state["weight"]), m.weight.detach())
    assert torch.equal(torch.from_dlpack(state["bias"]), m.bias.detach())


def test_other_formats_flat(tmp_path):
    p = str(tmp_path / "w.safetensors")
    tensio.save(p, {"a": np.arange(3, dtype=np.float32), "b": np.ones((2, 2), np.int64)})
    with tensio.open(p) as c:
        assert c.object_tree() is None
    d = tensio.load_checkpoint(p)
    assert sorted(d) == ["a", "b"] and d["b"].dtype == np.int64
    assert torch.equal(torch.from_dlpack(d["a"]), torch.arange(3, dtype=torch.float32))


def test_lifetime(tmp_path):
    p = str(tmp_path / "w.pt")
    torch.save({"w": torch.arange(8.0), "meta": {"x": [1, 2]}}, p)
    d = tensio.load_checkpoint(p)
    w = d["w"]
    del d
    assert w.tolist() == list(range(8)) and not w.flags.writeable


def cli(*args):
    # without the sanitizer build's LD_PRELOAD (meant for python3, not the CLI)
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    r = subprocess.run([CLI] + list(args), capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_info_tree(tmp_path):
    p = str(tmp_path / "ckpt.pt")
    torch.save(training_checkpoint(), p)
    text = cli("info", p)
    assert "\nobject:      dict, " in text
    assert '\n  "epoch": 12\n' in text
    assert '\n  "args": argparse.Namespace (opaque, offset ' in text
    assert '\n    "layers": [64, 32]\n' in text
    assert '\n  "shape": (3, 4)\n' in text
    assert '"decoder": tensor #' in text
    j = json.loads(cli("info", "--json", p))["object"]
    root = dict((k, v) for k, v in j["dict"])
    assert root["epoch"] == 12 and root["loss"] == 0.125 and root["finished"] is False
    assert root["note"] is None and root["best"] == {"float": "nan"}
    assert root["shape"] == {"tuple": [3, 4]} and root["blob"] == {"bytes": "00ff8074656e73696f"}
    assert root["args"]["opaque"] == "argparse.Namespace" and root["args"]["offset"] > 0
    assert dict(root["args"]["state"]["dict"])["name"] == "resnet"
    enc, dec = (dict(root["tied"]["dict"])[k] for k in ("encoder", "decoder"))
    assert enc == dec == {"tensor": enc["tensor"], "name": "tied.encoder"}
    # a dict reached twice: shown once with its id, then referred to
    cfg = root["cfg"]
    assert root["cfg_again"] == {"ref": cfg["id"]} and dict(cfg["dict"])["depth"] == 3
    groups = dict(dict(root["optimizer"]["dict"])["param_groups"]["list"][0]["dict"])
    assert groups["betas"] == {"tuple": [0.9, 0.999]}


def test_info_tree_truncated(tmp_path):
    p = str(tmp_path / "many.pt")
    torch.save({"k%04d" % i: [i, {"v": float(i)}] for i in range(500)}, p)
    text = cli("info", p)
    assert "... 476 more\n" in text
    lines = text[text.index("\nobject:"):].splitlines()
    assert len(lines) < 260
    j = json.loads(cli("info", "--json", p))["object"]
    assert len(j["dict"]) == 500  # --json carries the whole tree


LEGACY_HEAD = (b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19."
               b"\x80\x02M\xe9\x03." b"\x80\x02}.")


def hand_made(tmp_path, pickle_bytes):
    """A legacy-layout checkpoint around a hand-made pickle (no storages)."""
    p = str(tmp_path / "hand.pt")
    with open(p, "wb") as f:
        f.write(LEGACY_HEAD + pickle_bytes + b"\x80\x02].")
    return p


def test_hostile_structures(tmp_path):
    # a dict keyed by a list: no Python dict can hold it
    p = hand_made(tmp_path, b"\x80\x02}]K\x01aK\x02s.")  # {[1]: 2}
    with pytest.raises(tensio.UnsupportedError, match="unhashable"):
        tensio.load_checkpoint(p)
    # a list that holds itself: the tree is acyclic
    p = hand_made(tmp_path, b"\x80\x02]q\x00h\x00a.")
    ours = tensio.load_checkpoint(p)
    assert isinstance(ours, list) and isinstance(ours[0], tensio.Opaque)
    assert ours[0].name == "(recursive reference)"
    # os.system("x"): an Opaque, never called
    p = hand_made(tmp_path, b"\x80\x02cos\nsystem\nX\x01\x00\x00\x00x\x85R.")
    ours = tensio.load_checkpoint(p)
    assert ours.name == "os.system" and ours.state is None and ours.offset == len(LEGACY_HEAD) + 2


def test_pickle_limits(tmp_path):
    """The pickle's limits from Python: the defaults read back, and each
    tightened one refuses a checkpoint the defaults open."""
    p = str(tmp_path / "nested.pt")
    torch.save({"a": [[[torch.ones(2)]]], "n": list(range(50))}, p)
    with tensio.open(p) as c:
        lim = c.limits
        assert lim["max_pickle_bytes"] == 1 << 30 and lim["max_shards"] > 0
        assert lim["max_pickle_depth"] > 0 and lim["max_pickle_objects"] > 0
    with tensio.open(p, limits={"max_pickle_depth": 32, "max_pickle_objects": 1000}) as c:
        assert c.limits["max_pickle_depth"] == 32 and c.limits["max_pickle_objects"] == 1000
    for lim, what in (({"max_pickle_bytes": 64}, "max_pickle_bytes"),
                      ({"max_pickle_objects": 20}, "max_pickle_objects"),
                      ({"max_pickle_depth": 2}, "max_pickle_depth")):
        with pytest.raises(tensio.LimitError, match=what):
            tensio.open(p, limits=lim)
        with pytest.raises(tensio.LimitError, match=what):
            tensio.load_checkpoint(p, limits=lim)


def test_strided_views_on_first_use(tmp_path):
    """Transposed and expanded tensors are views until asked for: their
    arrays equal torch's, and DLPack hands torch the same values."""
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    p = str(tmp_path / "strided.pt")
    torch.save({"t": base.t(), "e": torch.tensor([1.0, 2.0]).expand(3, 2)}, p)
    with tensio.open(p) as c:
        np.testing.assert_array_equal(np.asarray(c["t"]), base.t().numpy())
        np.testing.assert_array_equal(np.asarray(c["e"]), np.array([[1.0, 2.0]] * 3, np.float32))
        assert np.asarray(c["t"]).flags["C_CONTIGUOUS"]
    ck = tensio.load_checkpoint(p)
    assert torch.equal(torch.from_dlpack(ck["t"]), base.t().contiguous())
