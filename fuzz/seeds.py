#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target into OUT/<target>/ from the
golden vectors: ../shared/vectors when it is there, else tests/vectors.

  fuzz/seeds.py OUT

Files over 1 MiB are left out (their structure is in their first bytes and
libFuzzer's -max_len cuts inputs anyway). The multipart target's seeds are
the manifests' frames joined as [u16 length][bytes]... (see fuzz_common.h).
The flatbuf target gets the model data of every .rten (V1: the whole file;
V2: the section the header points at). The onnx and pb (protobuf wire
reader) targets get every .onnx (tests/vectors/onnx, rten/*/ and tmfile/),
the tensorproto target every .pb (tests/vectors/onnx_tensor)."""
import bz2
import glob
import gzip
import hashlib
import io
import lzma
import os
import re
import struct
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX = 1 << 20


def vector_dirs():
    dirs = [os.path.join(ROOT, "tests", "vectors")]
    shared = os.path.normpath(os.path.join(ROOT, "..", "shared", "vectors"))
    if os.path.isdir(shared):
        dirs.insert(0, shared)
    return dirs


def put(out, target, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def files(base, pattern):
    for p in sorted(glob.glob(os.path.join(base, pattern), recursive=True)):
        if os.path.isfile(p) and os.path.getsize(p) <= MAX:
            with open(p, "rb") as f:
                yield p, f.read()


def rten_model(data):
    if data[:4] == b"RTEN" and len(data) >= 32:
        _, off, ln, _ = struct.unpack_from("<IQQQ", data, 4)
        return data[off:off + ln]
    return data


def join_frames(frames):
    out = b""
    for i, fr in enumerate(frames):
        if i == len(frames) - 1:
            out += fr
        elif len(fr) > 0xFFFF:
            return None
        else:
            out += struct.pack("<H", len(fr)) + fr
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: seeds.py OUT")
    out = sys.argv[1]
    for base in vector_dirs():
        for _, d in files(base, "btf/**/*.btf"):
            put(out, "btf", d)
        for _, d in files(base, "tenbin/**/*.ten"):
            put(out, "tenbin", d)
        for _, d in files(base, "zio/tensorcom/*.ten"):
            put(out, "tenbin", d)
        for _, d in files(base, "rten/**/*.rten"):
            put(out, "rten", d)
            put(out, "flatbuf", rten_model(d))
        for _, d in files(base, "tmfile/*.tmfile"):
            put(out, "tmfile", d)
        for _, d in files(base, "zio/*.zmsg"):
            put(out, "zmsg", d)
        for _, d in files(base, "safetensors/*.safetensors"):
            put(out, "safetensors", d)
        for _, d in files(base, "npy/*.npy"):
            put(out, "npy", d)
        for _, d in files(base, "gguf/*.gguf"):
            put(out, "gguf", d)
        for _, d in files(base, "npz/*.npz"):
            put(out, "npz", d)
        for _, d in files(base, "torch/*.pt"):
            put(out, "torch", d)
            if d[:4] == b"PK\x03\x04":  # its data.pkl (stored) for the pickle machine
                z = zipfile.ZipFile(io.BytesIO(d))
                for n in z.namelist():
                    if n.endswith(".pkl"):
                        put(out, "pickle", z.read(n))
            else:  # the legacy layout: pickles one after another
                put(out, "pickle", d)
        for _, d in files(base, "tflite/**/*.tflite"):
            put(out, "tflite", d)
        for _, d in files(base, "tar/*.tar"):
            put(out, "tar", d)
            put(out, "tar_stream", d)
            # the same shard compressed: the decompressors' paths, mapped and
            # streamed (gzip deterministic with mtime 0; bzip2 and xz from
            # the stdlib)
            for z in (gzip.compress(d, mtime=0), bz2.compress(d), lzma.compress(d)):
                put(out, "tar", z)
                put(out, "tar_stream", z)
        for _, d in files(base, "onnx_tensor/*.pb"):
            put(out, "tensorproto", d)
        for pat in ("onnx/**/*.onnx", "rten/*/*.onnx", "tmfile/*.onnx"):
            for _, d in files(base, pat):
                put(out, "onnx", d)
                put(out, "pb", d)
        for sub in ("zio", "zio/tensorcom"):
            stems = {}
            for p in glob.glob(os.path.join(base, sub, "*.frame*.bin")):
                m = re.match(r"(.*)\.frame(\d+)\.bin$", p)
                stems.setdefault(m.group(1), []).append((int(m.group(2)), p))
            for stem, fs in sorted(stems.items()):
                frames = [open(p, "rb").read() for _, p in sorted(fs)]
                j = join_frames(frames)
                if j is not None and len(j) <= MAX:
                    put(out, "zio", j)
    # hfindex: indexes over fuzz_hfindex.c's fixed shards (its regression inputs)
    for p in sorted(glob.glob(os.path.join(ROOT, "fuzz", "regress", "hfindex", "seed-*"))):
        with open(p, "rb") as f:
            put(out, "hfindex", f.read())
    for t in ("btf", "tenbin", "rten", "flatbuf", "tmfile", "zio", "zmsg", "onnx", "pb",
              "tensorproto", "safetensors", "npy", "gguf", "npz", "tar", "torch", "pickle", "hfindex", "tflite"):
        d = os.path.join(out, t)
        n = len(os.listdir(d)) if os.path.isdir(d) else 0
        if n == 0:
            sys.exit("seeds.py: no seeds for " + t)
        print("seeds: %-8s %d" % (t, n))


main()
