# Type stubs of tensio (PEP 561: py.typed ships with them). The runtime
# module is __init__.py; keep the two in step (docs/python.md, "Type stubs").
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, TypedDict, overload

import numpy as np
import numpy.typing as npt

from . import zio as zio
from ._tensio import _Owner
from ._tensio import (
    LIB_VERSION as LIB_VERSION,
    ArgumentError as ArgumentError,
    BoundsError as BoundsError,
    CorruptError as CorruptError,
    DtypeError as DtypeError,
    Error as Error,
    FormatError as FormatError,
    InvalidError as InvalidError,
    IOError as IOError,
    LimitError as LimitError,
    LossyError as LossyError,
    MagicError as MagicError,
    NoMemoryError as NoMemoryError,
    NotFoundError as NotFoundError,
    OverflowError as OverflowError,
    TimeoutError as TimeoutError,
    TransportError as TransportError,
    TruncatedError as TruncatedError,
    UnsupportedError as UnsupportedError,
)
from .builder import GraphBuilder as GraphBuilder
from .shard import Member as Member, Shard as Shard, shard_list as shard_list, \
    stream_shards as stream_shards
from .shard_writer import ShardWriter as ShardWriter
from .stream import Stream as Stream

__version__: str

_StrPath = str | os.PathLike[str]
# tio_limits fields by name (max_tensors, max_rank, ..., timeout_ms); 0 = the default
_Limits = dict[str, int]
# what save, dumps, container and Stream.send take: a Container, a dict
# name -> array, or arrays in order
_Saveable = npt.ArrayLike | Typed | Tensor | Coo
_Arrays = Container | Mapping[str, _Saveable] | Iterable[_Saveable]
# an element of a container: a read-only view, or a Coo for a sparse tensor
_Item = npt.NDArray[Any] | Coo
_HashWhat = Literal["dense", "values", "indices"]

class Finding(tuple[int, str, str | None, int | None, str]):
    """A validation finding (code, code_name, format, offset, message)."""
    @property
    def code(self) -> int: ...
    @property
    def code_name(self) -> str: ...
    @property
    def format(self) -> str | None: ...
    @property
    def offset(self) -> int | None: ...
    @property
    def message(self) -> str: ...

class Coo:
    """A sparse COO tensor."""
    # made by tensio, not by users
    def __init__(self, owner: _Owner, index: int, info: tuple[Any, ...]) -> None: ...
    name: str | None
    dtype_name: str
    shape: tuple[int, ...]
    nnz: int
    values: npt.NDArray[Any]
    indices: npt.NDArray[np.int64]
    @property
    def dtype(self) -> np.dtype[Any]: ...
    @property
    def ndim(self) -> int: ...
    def todense(self) -> npt.NDArray[Any]: ...

class Tensor:
    """One tensor with its tensio dtype, metadata and DLPack export."""
    # made by tensio, not by users
    def __init__(self, owner: _Owner, index: int) -> None: ...
    name: str | None
    dtype_name: str
    shape: tuple[int, ...]
    nnz: int
    nbytes: int
    layout: Literal["dense", "coo", "quant"]
    aligned: bool
    source_offset: int | None
    quant: str | None
    alias_of: str | None
    @property
    def array(self) -> _Item: ...
    @property
    def metadata(self) -> dict[str, str]: ...
    @property
    def blocks(self) -> npt.NDArray[np.uint8]: ...
    def sha256(self, what: _HashWhat = ...) -> str: ...
    def __array__(self, dtype: npt.DTypeLike = ...) -> npt.NDArray[Any]: ...
    def __dlpack__(self, stream: int | None = ..., max_version: tuple[int, int] | None = ...,
                   dl_device: tuple[int, int] | None = ..., copy: bool | None = ...) -> Any: ...
    def __dlpack_device__(self) -> tuple[int, Literal[0]]: ...
    def to_torch(self) -> Any: ...  # a torch.Tensor (tensio does not import torch)

# A graph attribute's value: int, float, str, lists of them, an array, a Graph
_AttributeValue = (int | float | str | list[int] | list[float] | list[str] | _Item | list[_Item]
                  | Graph | list[Graph])

class Value:
    """A graph value."""
    # made by tensio, not by users
    def __init__(self, owner: _Owner, index: int, data: tuple[Any, ...]) -> None: ...
    name: str | None
    dtype: str | None
    shape: list[int | str | None] | None
    index: int
    tensor: int | None
    type: str | None
    @property
    def is_constant(self) -> bool: ...
    @property
    def array(self) -> _Item | None: ...

class Node:
    """An operator of a graph."""
    # made by tensio, not by users
    def __init__(self, graph: Graph, data: tuple[Any, ...]) -> None: ...
    name: str | None
    op: str
    native_op: str | None
    native_id: int | None
    domain: str | None
    inputs: list[Value | None]
    outputs: list[Value | None]
    attributes: dict[str, _AttributeValue]
    attribute_types: dict[str, int]
    attribute_labels: dict[str, str | None]

class Graph:
    """A model graph (rten, tmfile, ONNX), a snapshot."""
    # made by tensio, not by users
    def __init__(self, owner: _Owner, data: dict[str, Any],
                 parent: Graph | None = ...) -> None: ...
    parent: Graph | None
    native_format: str | None
    values: list[Value]
    nodes: list[Node]
    inputs: list[Value]
    outputs: list[Value]
    captures: list[Value]
    metadata: dict[str, str]
    opsets: list[tuple[str, int]]
    @property
    def constants(self) -> list[Value]: ...

class Container:
    """An opened container: indexing gives read-only views (Coo for sparse)."""
    # made by tensio, not by users
    def __init__(self, owner: _Owner) -> None: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    def __enter__(self) -> Container: ...
    def __exit__(self, *exc: object) -> Literal[False]: ...
    def __len__(self) -> int: ...
    def __getitem__(self, key: int | str) -> _Item: ...
    def __iter__(self) -> Iterator[_Item]: ...
    def __contains__(self, name: object) -> bool: ...
    def keys(self) -> list[str]: ...
    def items(self) -> list[tuple[str, _Item]]: ...
    def tensor(self, key: int | str) -> Tensor: ...
    def dtype_name(self, key: int | str) -> str: ...
    def sha256(self, key: int | str, what: _HashWhat = ...) -> str: ...
    def tensor_metadata(self, key: int | str) -> dict[str, str]: ...
    @property
    def format(self) -> str | None: ...
    @property
    def names(self) -> list[str | None]: ...
    @property
    def metadata(self) -> dict[str, str]: ...
    @property
    def properties(self) -> dict[str, str]: ...
    @property
    def warnings(self) -> list[Finding]: ...
    @property
    def limits(self) -> dict[str, int]: ...
    def object_tree(self) -> Any: ...
    @property
    def graph(self) -> Graph | None: ...

def open(path: _StrPath, format: str | None = ..., strict: bool = ...,
         limits: _Limits | None = ..., no_mmap: bool = ..., external_anywhere: bool = ...,
         native_graph: bool = ..., prefetch: bool = ..., lazy: bool = ...) -> Container: ...
def loads(data: Any, format: str | None = ..., strict: bool = ..., limits: _Limits | None = ...,
          copy: bool = ...) -> Container: ...  # data: any C-contiguous bytes-like object
def loads_parts(parts: Iterable[Any], format: str | None = ..., strict: bool = ...,
                limits: _Limits | None = ..., copy: bool = ...) -> Container: ...
@overload
def load(path: _StrPath, as_dict: Literal[False] = ..., *, format: str | None = ...,
         strict: bool = ..., limits: _Limits | None = ..., no_mmap: bool = ...,
         external_anywhere: bool = ..., native_graph: bool = ...,
         prefetch: bool = ...) -> list[_Item]: ...
@overload
def load(path: _StrPath, as_dict: Literal[True], *, format: str | None = ...,
         strict: bool = ..., limits: _Limits | None = ..., no_mmap: bool = ...,
         external_anywhere: bool = ..., native_graph: bool = ...,
         prefetch: bool = ...) -> dict[str, _Item]: ...

class Opaque:
    """A checkpoint object tensio does not rebuild (never imported or called)."""
    name: str
    offset: int | None
    state: Any
    def __init__(self, name: str, offset: int | None, state: Any) -> None: ...

class CheckpointArray(np.ndarray[Any, np.dtype[Any]]):
    """A read-only view of a checkpoint's tensor that also exports DLPack."""
    def __dlpack__(self, stream: int | None = ..., max_version: tuple[int, int] | None = ...,
                   dl_device: tuple[int, int] | None = ..., copy: bool | None = ...) -> Any: ...
    def __dlpack_device__(self) -> tuple[int, Literal[0]]: ...

def load_checkpoint(path: _StrPath, format: str | None = ..., strict: bool = ...,
                    limits: _Limits | None = ..., no_mmap: bool = ...) -> Any: ...
def dtype_name(container: Container, key: int | str) -> str: ...
class _FormatInfo(TypedDict):
    description: str
    extensions: list[str]
    sparse: bool
    names: bool
    metadata: bool
    graph: bool
    write: bool

def formats() -> dict[str, _FormatInfo]: ...

class Typed:
    """An array with an explicit tensio dtype for save/dumps."""
    array: npt.NDArray[Any]
    dtype_name: str
    def __init__(self, array: npt.ArrayLike, dtype_name: str) -> None: ...

def container(arrays: _Arrays, names: Sequence[str | None] | None = ...,
              metadata: Mapping[str, object] | None = ...) -> Container: ...
# options: densify, drop_names, drop_metadata, widen, dequantize, single_part,
# cleanup (bool), sync (bool), version (int), options ("k=v,..."), format
# options as keywords (zio: level, form, origin, granule, seqno), max_shard_size
def save(path: _StrPath, arrays: _Arrays, format: str | None = ...,
         names: Sequence[str | None] | None = ..., metadata: Mapping[str, object] | None = ...,
         **options: object) -> None: ...
@overload
def dumps(arrays: _Arrays, format: str, names: Sequence[str | None] | None = ...,
          metadata: Mapping[str, object] | None = ..., as_bytearray: Literal[False] = ...,
          **options: object) -> bytes: ...
@overload
def dumps(arrays: _Arrays, format: str, names: Sequence[str | None] | None = ...,
          metadata: Mapping[str, object] | None = ..., *, as_bytearray: Literal[True],
          **options: object) -> bytearray: ...
def dumps_parts(arrays: _Arrays, format: str, names: Sequence[str | None] | None = ...,
                metadata: Mapping[str, object] | None = ..., **options: object) -> list[bytes]: ...
def convert(src: _StrPath, dst: _StrPath, format: str | None = ..., src_format: str | None = ...,
            strict: bool = ..., limits: _Limits | None = ..., **options: object) -> None: ...
