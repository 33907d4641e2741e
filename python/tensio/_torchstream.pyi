from collections.abc import Iterator
from types import TracebackType
from typing import Any

from torch.utils.data import IterableDataset

from . import Error, _Limits

EPOCH: str
KEY: str

class StreamError(Error): ...

class StreamDataset(IterableDataset[Any]):
    """Batches served over ZeroMQ (tensio send --epochs), one epoch per iteration."""
    url: str
    servers: int
    keys: bool
    timeout: float | None
    hwm: int
    bind: bool | None
    max_ahead: int
    limits: _Limits | None
    epoch: int
    def __init__(self, url: str, servers: int = ..., keys: bool = ...,
                 timeout: float | None = ..., hwm: int = ..., bind: bool | None = ...,
                 max_ahead: int = ..., limits: _Limits | None = ...) -> None: ...
    @property
    def endpoint(self) -> str | None: ...
    def close(self) -> None: ...
    def __enter__(self) -> StreamDataset: ...
    def __exit__(self, *exc: object) -> bool: ...
    def __iter__(self) -> Iterator[Any]: ...
