"""GGUF through the Python package: quantized tensors (layout "quant",
.quant, .blocks, dequantized on indexing), typed metadata, dequantize=1."""
import os
import struct

import numpy as np
import pytest

import tensio
from conftest import LOCAL

QUANT = os.path.join(LOCAL, "gguf", "quant.gguf")


def test_quantized_tensor(tmp_path):
    with tensio.open(QUANT) as c:
        t = c.tensor("q_q4_0")
        assert t.layout == "quant" and t.quant == "q4_0" and t.dtype_name == "float32"
        assert t.shape == (1, 32) and t.nbytes == 18
        blocks = t.blocks
        assert blocks.dtype == np.uint8 and blocks.shape == (18,)
        v = c["q_q4_0"]
        assert v.dtype == np.float32 and v.shape == (1, 32)
        d = np.frombuffer(blocks[:2].tobytes(), dtype="<f2").astype(np.float32)[0]
        q = np.concatenate([blocks[2:] & 15, blocks[2:] >> 4]).astype(np.float32) - 8
        np.testing.assert_array_equal(v[0], q * d)
        with pytest.raises(tensio.UnsupportedError):
            c["q_iq2_xxs"]  # no dequantizer: refused by name
    tensio.convert(QUANT, str(tmp_path / "same.gguf"))
    assert open(tmp_path / "same.gguf", "rb").read() == open(QUANT, "rb").read()


def test_dequantize_option(tmp_path):
    out = str(tmp_path / "q.safetensors")
    with pytest.raises(tensio.LossyError):
        tensio.convert(QUANT, out)
    with pytest.raises(tensio.UnsupportedError):  # iq2_xxs: refused by name
        tensio.convert(QUANT, out, dequantize=1)
    # one q8_0 block: d = 0.5, q = -16..15
    blk = np.float16(0.5).tobytes() + np.arange(-16, 16, dtype=np.int8).tobytes()
    name = b"w"
    head = (b"GGUF" + struct.pack("<IQQ", 3, 1, 1) + struct.pack("<Q", 1) + b"k" +
            struct.pack("<IB", 0, 7) + struct.pack("<Q", len(name)) + name +
            struct.pack("<IqIQ", 1, 32, 8, 0))
    head += b"\0" * (-len(head) % 32)
    src = tmp_path / "q8.gguf"
    src.write_bytes(head + blk + b"\0" * (-len(blk) % 32))
    tensio.convert(str(src), out, dequantize=1)
    with tensio.open(out) as c:
        np.testing.assert_array_equal(c["w"], np.arange(-16, 16, dtype=np.float32) * 0.5)
        assert c.metadata["k"] == "7"
