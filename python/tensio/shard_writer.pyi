from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

from . import _StrPath

class ShardWriter:
    """Writes samples into numbered WebDataset tar shards (WebDataset's ShardWriter)."""
    pattern: str
    maxcount: int
    maxsize: int
    post: Callable[[str], object] | None
    shard: int
    shards: list[str]
    counts: list[int]
    total: int
    count: int
    size: int
    fname: str | None
    def __init__(self, pattern: _StrPath, maxcount: int = ..., maxsize: float = ...,
                 post: Callable[[str], object] | None = ..., start_shard: int = ...,
                 mtime: int = ..., sync: bool = ...) -> None: ...
    def write(self, sample: Mapping[str, Any]) -> None: ...
    def close(self) -> None: ...
    def abort(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    def __enter__(self) -> ShardWriter: ...
    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool: ...
