#!/usr/bin/python3
"""Writes the .npz vectors (tests/vectors/npz) with NumPy itself: np.savez,
np.savez_compressed, positional names, a stream that cannot seek (data
descriptors), an archive with no arrays. Run with Debian's /usr/bin/python3."""
import os

import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "npz")


class Stream:
    """A write-only file: zipfile writes data descriptors to it."""

    def __init__(self):
        self.buf = bytearray()

    def write(self, b):
        self.buf += b
        return len(b)

    def flush(self):
        pass

    def read(self, *args):
        raise OSError("write only")


def main():
    os.makedirs(HERE, exist_ok=True)
    r = np.random.default_rng(23)
    mixed = {
        "f4": r.standard_normal((3, 4)).astype("<f4"),
        "i2_big": np.arange(6, dtype=">i2").reshape(2, 3),
        "u8_fortran": np.asfortranarray(np.arange(6, dtype="<u8").reshape(3, 2)),
        "b1": np.array([True, False, True]),
        "scalar_f2": np.float16(1.5),
        "empty_i8": np.zeros((2, 0), dtype="<i8"),
    }
    np.savez(os.path.join(HERE, "stored.npz"), **mixed)
    np.savez_compressed(os.path.join(HERE, "compressed.npz"), **mixed)
    np.savez(os.path.join(HERE, "positional.npz"), np.arange(5, dtype="<i4"),
             np.ones((2, 2), dtype="<f8"))
    np.savez(os.path.join(HERE, "empty.npz"))
    s = Stream()
    np.savez_compressed(s, x=np.arange(8, dtype="<f8"), y=np.array([[1, 2]], dtype="u1"))
    with open(os.path.join(HERE, "stream.npz"), "wb") as f:
        f.write(bytes(s.buf))


if __name__ == "__main__":
    main()
