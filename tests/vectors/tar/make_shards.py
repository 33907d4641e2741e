#!/usr/bin/env python3
"""Writes the WebDataset shard vectors of this folder with Python's tarfile:
ustar.tar, gnu.tar and pax.tar hold the same samples (tenbin vectors as
NNNNNN.ten with NNNNNN.cls, npy vectors as d/NNNNNN.npy with d/NNNNNN.json);
in gnu.tar and pax.tar the third member has a long path (GNU 'L' record, pax
'path'). Used as fuzz seeds and replayed by fuzz_regress_tar.

  tests/vectors/tar/make_shards.py"""
import glob
import io
import os
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
VEC = os.path.dirname(HERE)


def read(pattern):
    for p in sorted(glob.glob(os.path.join(VEC, pattern))):
        with open(p, "rb") as f:
            yield f.read()


def main():
    members = []
    for i, d in enumerate(list(read("tenbin/dtype_*.ten"))[:3]):
        members.append(("%06d.ten" % i, d))
        members.append(("%06d.cls" % i, b"%d\n" % i))
    for i, d in enumerate(list(read("npy/*.npy"))[:3]):
        members.append(("d/%06d.npy" % i, d))
        members.append(("d/%06d.json" % i, b'{"i": %d}' % i))
    for name, fmt in (("ustar", tarfile.USTAR_FORMAT), ("gnu", tarfile.GNU_FORMAT),
                      ("pax", tarfile.PAX_FORMAT)):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
            for k, (path, d) in enumerate(members):
                if fmt != tarfile.USTAR_FORMAT and k == 2:
                    path = "long/" + "x" * 120 + "/" + path
                ti = tarfile.TarInfo(path)
                ti.size = len(d)
                ti.mtime = 0
                t.addfile(ti, io.BytesIO(d))
        with open(os.path.join(HERE, name + ".tar"), "wb") as f:
            f.write(buf.getvalue())


main()
