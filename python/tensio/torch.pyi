import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from torch.utils.data import IterableDataset

from . import Container, _Limits, _StrPath
from ._torchstream import StreamDataset as StreamDataset, StreamError as StreamError
from .shard import _Decode, _Sample

_T = TypeVar("_T")

def to_torch(c: Container, fmt: str) -> Any: ...
def shuffled(samples: Iterable[_T], size: int, rng: random.Random) -> Iterator[_T]: ...

class ShardDataset(IterableDataset[Any]):
    """WebDataset tar shards as an IterableDataset of samples or batches."""
    urls: list[str]
    shuffle: bool
    seed: int
    shuffle_buffer: int
    decode: _Decode
    batch_size: int | None
    partial: bool
    collate: Callable[[list[_Sample]], Any]
    rank: int | None
    world_size: int | None
    samples_per_rank: int | None
    limits: _Limits | None
    epoch: int
    def __init__(self, urls: _StrPath | Sequence[_StrPath], shuffle: bool = ..., seed: int = ...,
                 shuffle_buffer: int = ..., decode: _Decode = ...,
                 batch_size: int | None = ..., collate: Callable[[list[_Sample]], Any] | None = ...,
                 partial: bool = ..., rank: int | None = ..., world_size: int | None = ...,
                 samples_per_rank: int | None = ..., limits: _Limits | None = ...) -> None: ...
    def set_epoch(self, epoch: int) -> None: ...
    def shard_order(self, epoch: int | None = ...) -> list[str]: ...
    def __iter__(self) -> Iterator[Any]: ...
