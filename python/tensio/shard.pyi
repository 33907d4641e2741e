import os
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from . import Container, _Limits, _StrPath

# decode: True (the default decoding), False (bytes), or a function
# (container, format name) -> value called for each tensor member
_Decode = bool | Callable[[Container, str], Any]
# a sample: {"__key__": str, "__url__": str | None, ext: value}
_Sample = dict[str, Any]

class Member(NamedTuple):
    """A regular file of the tar."""
    name: str
    key: str
    ext: str
    offset: int
    size: int
    sample: int | None
    duplicate: bool
    format: str | None

class Shard:
    """A WebDataset tar shard: a path (mapped) or a bytes-like object."""
    url: str | None
    decode: _Decode
    members: list[Member]
    def __init__(self, source: str | os.PathLike[str] | bytes | bytearray | memoryview,
                 limits: _Limits | None = ..., decode: _Decode = ...) -> None: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    def __enter__(self) -> Shard: ...
    def __exit__(self, *exc: object) -> bool: ...
    def __len__(self) -> int: ...
    def keys(self) -> list[str]: ...
    def data(self, member: int | str) -> bytes: ...
    def open(self, member: int | str, format: str | None = ..., strict: bool = ...,
             copy: bool = ...) -> Container: ...
    def sample(self, i: int, decode: _Decode | None = ...) -> _Sample: ...
    def __getitem__(self, i: int) -> _Sample: ...
    def __iter__(self) -> Iterator[_Sample]: ...

def shard_list(spec: _StrPath, limits: _Limits | None = ...) -> list[str]: ...
def stream_shards(spec: _StrPath, limits: _Limits | None = ...,
                  decode: _Decode = ...) -> Iterator[_Sample]: ...
