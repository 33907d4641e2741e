"""A small program over tensio's public API that `mypy --strict` checks
against the package's type stubs (python/tests/test_typing.sh); it also runs."""
import os
import sys
import tempfile
from typing import Any

import numpy as np
import numpy.typing as npt

import tensio
import tensio.tenbin
import tensio.zio
from tensio.builder import GraphBuilder


def dense(item: npt.NDArray[Any] | tensio.Coo) -> npt.NDArray[np.float32]:
    if isinstance(item, tensio.Coo):
        return item.todense().astype(np.float32)
    return item.astype(np.float32)


def main(tmp: str) -> int:
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    path = os.path.join(tmp, "a.safetensors")
    tensio.save(path, {"w": w, "b": tensio.Typed(np.zeros(3, np.uint16), "bfloat16")},
                metadata={"step": 3}, sync=False)
    with tensio.open(path, strict=True, limits={"max_tensors": 10}) as c:
        names: list[str | None] = c.names
        fmt: str | None = c.format
        t: tensio.Tensor = c.tensor("w")
        digest: str = t.sha256()
        total = float(dense(c["w"]).sum())
        for finding in c.warnings:
            print(finding.code_name, finding.offset)
        assert names == ["w", "b"] and fmt == "safetensors" and len(digest) == 64
        assert total == 15.0 and t.shape == (2, 3) and c.dtype_name(1) == "bfloat16"
    arrays: dict[str, npt.NDArray[Any] | tensio.Coo] = tensio.load(path, as_dict=True)
    data: bytes = tensio.dumps([w], "npy")
    again = tensio.loads(data)
    frames = tensio.zio.encode({"w": w}, seqno=7)
    label = tensio.zio.label(frames)
    with tensio.zio.decode(frames) as z:
        props = z.properties
    tensio.tenbin.save(os.path.join(tmp, "b.ten"), w, infos=["w"])
    ten, infos = tensio.tenbin.load(os.path.join(tmp, "b.ten"), infos=True)
    g = GraphBuilder(opset=13)
    x = g.input("x", np.float32, [1, 3])
    (y,) = g.node("Add", [x, g.constant("one", np.ones((1, 3), np.float32))])
    g.output(y)
    onnx_path = os.path.join(tmp, "m.onnx")
    g.save(onnx_path)
    graph = tensio.open(onnx_path).graph
    ops = [n.op for n in graph.nodes] if graph is not None else []
    try:
        tensio.open(os.path.join(tmp, "missing.npy"))
    except tensio.Error as e:
        code: int = e.code
        assert e.code_name.startswith("TIO_E_") and code > 0
    formats = tensio.formats()
    assert formats["npy"]["write"] and ".npy" in formats["npy"]["extensions"]
    print(len(arrays), len(again), label.get("TENS") is not None, props.get("seqno"),
          infos, len(ten), ops, "safetensors" in formats)
    return 0


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        sys.exit(main(d))
