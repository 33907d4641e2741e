"""Every golden vector read through Python matches its manifest: dtype,
shape, and the SHA-256 of the array's bytes as the array is handed out
(views into the mapping), COO indices/values/densified."""

import numpy as np
import pytest

import tensio
from conftest import data_files, manifest, sha256, vec, vec_list

BTF = data_files("btf")
TENBIN = data_files("tenbin")


def dense_check(arr, want):
    assert isinstance(arr, np.ndarray)
    assert not arr.flags.writeable
    assert list(arr.shape) == list(want["shape"])
    assert sha256(arr) == want["sha256"]


@pytest.mark.parametrize("rel,m", BTF, ids=[r for r, _ in BTF])
def test_btf(rel, m):
    with tensio.open(vec(rel)) as c:
        assert c.format == "btf"
        if "num_tensors" in m:
            assert len(c) == m["num_tensors"]
        elif all("dtype" in t for t in m["tensors"]):
            assert len(c) == len(m["tensors"])
        for i, t in enumerate(m["tensors"]):
            if "dtype" not in t:
                continue  # placeholder of a shortened list
            i = t.get("index", i)
            a = c[i]
            assert c.dtype_name(i) == t["dtype"]
            if t["layout"] == 1:
                assert isinstance(a, tensio.Coo)
                assert a.nnz == t["nnz"] and list(a.shape) == t["shape"]
                assert sha256(a.indices) == t["indices_sha256"]
                assert sha256(a.values) == t["values_sha256"]
                assert a.indices.reshape(-1).tolist() == t["indices"]
                d = a.todense()
                assert d.shape == tuple(t["shape"]) and sha256(d) == t["sha256"]
            else:
                assert str(a.dtype) == t["dtype"]
                dense_check(a, t)
            assert c.sha256(i) == t["sha256"]


@pytest.mark.parametrize("rel,m", TENBIN, ids=[r for r, _ in TENBIN])
def test_tenbin(rel, m):
    with tensio.open(vec(rel)) as c:
        assert c.format == "tenbin"
        assert len(c) == len(m["arrays"])
        for a in m["arrays"]:
            arr = c[a["index"]]
            assert str(arr.dtype) == a["dtype"]
            assert c.names[a["index"]] == (a["info"] or None)
            if rel.endswith("quirks/bigendian_f4.ten"):
                # big-endian bytes under code f4: read as stored (little-endian
                # f4, as the format says); the manifest hashes the intended values
                assert not arr.flags.writeable
                assert sha256(arr.byteswap()) == a["sha256"]
                continue
            dense_check(arr, a)


ZIO = manifest("zio/manifest.json")
ZIO_VECTORS = ZIO["vectors"] if ZIO else []


@pytest.mark.parametrize("v", ZIO_VECTORS, ids=[v["name"] for v in ZIO_VECTORS])
def test_zio(v):
    dec = v["decoded"]
    with tensio.open(vec("zio/" + v["encoded"]["file"])) as c:
        assert c.format == "zio"
        assert len(c) == len(dec["tensors"])
        for t in dec["tensors"]:
            a = c[t["index"]]
            assert a.dtype == np.dtype(t["numpy"])
            dense_check(a, t)
            md = c.tensor_metadata(t["index"])
            for k, val in (t.get("metadata") or {}).items():
                if isinstance(val, str) and k in md:
                    assert md[k] == val
    # the same through loads of the frames' single-buffer encoding in memory
    with open(vec("zio/" + v["encoded"]["file"]), "rb") as f:
        data = f.read()
    c = tensio.loads(data)
    for t in dec["tensors"]:
        assert sha256(c[t["index"]]) == t["sha256"]


RTEN_MODELS = [m for m in ("matmul_add", "small_cnn", "shape_ops", "int_consts", "big_init")
               if manifest(f"rten/{m}/{m}.json")]
RTEN_DTYPES = {"Float32": "float32", "Float": "float32", "Int32": "int32", "Int8": "int8",
               "UInt8": "uint8"}


@pytest.mark.parametrize("model", RTEN_MODELS)
@pytest.mark.parametrize("version", [1, 2])
def test_rten(model, version):
    m = manifest(f"rten/{model}/{model}.json")
    consts = m["graph"]["constants"]
    with tensio.open(vec(f"rten/{model}/{model}.v{version}.rten")) as c:
        assert c.format == "rten"
        assert c.properties["version"] == str(version)
        assert len(c) == len(consts)
        for i, w in enumerate(consts):
            a = c[i]
            assert c.names[i] == w["name"]
            assert str(a.dtype) == RTEN_DTYPES[w["dtype"]]
            dense_check(a, w)


@pytest.mark.parametrize("model", RTEN_MODELS)
def test_onnx(model):
    """The .onnx each rten model was converted from: its initializers by name
    (rten-convert's manifest records their ONNX dtype and hash)."""
    m = manifest(f"rten/{model}/{model}.json")
    path = vec(f"rten/{model}/{model}.onnx") or vec(f"onnx/{model}.onnx")
    with tensio.open(path) as c:
        assert c.format == "onnx"
        seen = 0
        for w in m["graph"]["constants"]:
            if not w.get("onnx_sha256") or w["name"] not in c:
                continue
            a = c[w["name"]]
            assert str(a.dtype) == w["onnx_dtype"], w["name"]
            assert sha256(a) == w["onnx_sha256"], w["name"]
            seen += 1
        assert seen > 0


TM_MODELS = [n[:-len(".json")] for n in vec_list("tmfile", ".json")]
TM_DTYPES = {"fp32": "float32", "fp16": "float16", "int8": "int8", "uint8": "uint8",
             "int32": "int32", "int16": "int16"}


@pytest.mark.parametrize("model", TM_MODELS)
def test_tmfile(model):
    m = manifest(f"tmfile/{model}.json")
    consts = [t for t in m["tensors"] if t.get("buffer") and t["buffer"]["offset_data"]]
    # the file's own constants (the ONNX form may add derived ones, e.g. a
    # Reshape's shape from its param: docs/formats/tmfile.md)
    with tensio.open(vec(f"tmfile/{model}.tmfile"), native_graph=True) as c:
        assert c.format == "tmfile"
        assert len(c) == len(consts)
        for i, w in enumerate(consts):
            a = c[i]
            assert c.names[i] == w["name"]
            assert str(a.dtype) == TM_DTYPES[w["dtype"]]
            assert list(a.shape) == w["dims"]
            assert sha256(a) == w["buffer"]["sha256"]


def test_some_vectors_found():
    assert len(BTF) > 20 and len(TENBIN) > 20 and ZIO_VECTORS and RTEN_MODELS and TM_MODELS
