"""Shared helpers: where the vectors are (as tests/cli/test_convert_rten.py
finds them: $TIO_TEST_VECTORS, then $TIO_SHARED_VECTORS), how the
manifests describe their tensors (tests/vectors/README.shared.md), tar
shards by Python's tarfile, and Debian's nginx serving a module's files."""

import hashlib
import json
import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LOCAL = os.environ.get("TIO_TEST_VECTORS") or os.path.join(REPO, "tests", "vectors")
SHARED = os.environ.get("TIO_SHARED_VECTORS") or os.path.join(REPO, "..", "shared", "vectors")
VECTOR_DIRS = [LOCAL, SHARED]
sys.path.insert(0, os.path.join(REPO, "tests", "source"))  # http_servers.py


def vec(rel):
    """Full path of a vector, or None."""
    for d in VECTOR_DIRS:
        p = os.path.join(d, rel)
        if os.path.exists(p):
            return p
    return None


def vec_list(reldir, suffix):
    names = set()
    for d in VECTOR_DIRS:
        p = os.path.join(d, reldir)
        if os.path.isdir(p):
            names.update(n for n in os.listdir(p) if n.endswith(suffix))
    return sorted(names)


def manifest(rel):
    p = vec(rel)
    if p is None:
        return None
    with open(p, encoding="utf-8") as f:
        return json.load(f)


def sha256(arr):
    """SHA-256 of an array's elements as C-contiguous bytes, without a copy
    when it is contiguous."""
    a = np.ascontiguousarray(arr)
    return hashlib.sha256(a.reshape(-1).view(np.uint8)).hexdigest()


def data_files(fmt):
    """(rel data path, manifest) of every btf/tenbin vector with a manifest,
    in <fmt>/ and <fmt>/upstream/ (malformed/ are tested elsewhere)."""
    out = []
    for reldir in (fmt, fmt + "/upstream", fmt + "/quirks"):
        for name in vec_list(reldir, ".json"):
            if name in ("writer_rejections.json", "INDEX.json"):
                continue
            m = manifest(f"{reldir}/{name}")
            if not isinstance(m, dict) or "file" not in m:
                continue
            if vec(f"{reldir}/{m['file']}") is None:
                continue  # a large file not checked in (e.g. dense_large_float64_1MiB)
            out.append((f"{reldir}/{m['file']}", m))
    return out


def all_vector_files():
    """Every readable vector file of every format (for hostile-bytes tests)."""
    out = [rel for fmt in ("btf", "tenbin") for rel, _ in data_files(fmt)]
    m = manifest("zio/manifest.json")
    if m:
        out += ["zio/" + v["encoded"]["file"] for v in m["vectors"]]
    for mname in ("matmul_add", "small_cnn", "shape_ops", "int_consts", "big_init"):
        for suffix in (".v1.rten", ".v2.rten", ".onnx"):
            rel = f"rten/{mname}/{mname}{suffix}"
            if vec(rel):
                out.append(rel)
    for name in vec_list("tmfile", ".tmfile"):
        out.append("tmfile/" + name)
    return out


def tar_shard(out, files):
    """A shard of files in order, by Python's tarfile (ustar)."""
    import tarfile
    with tarfile.open(out, "w", format=tarfile.USTAR_FORMAT) as t:
        for f in files:
            t.add(f, arcname=os.path.basename(f))


@pytest.fixture(scope="module")
def nginx(www):
    """Debian's nginx (tests/source/http_servers.py) on 127.0.0.1, serving
    the directory www / "www", where www is the requesting module's own
    fixture (a module-scoped temporary directory); its URL. nginx missing
    fails the module's tests."""
    from http_servers import Nginx
    ng = Nginx(str(www), str(www / "www"))
    yield ng.url
    ng.stop()
