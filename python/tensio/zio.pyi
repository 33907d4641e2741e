from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from . import _Arrays, Container, _Limits

__all__ = ["encode", "decode", "label"]

def encode(arrays: _Arrays, label_extra: Mapping[str, Any] | None = ..., seqno: int | None = ...,
           names: Sequence[str | None] | None = ..., metadata: Mapping[str, object] | None = ...,
           level: int | None = ..., form: str | None = ...,
           origin: int | None = ..., granule: int | None = ...,
           **options: object) -> list[bytes]: ...
def decode(frames: Iterable[Any], strict: bool = ..., limits: _Limits | None = ...,
           copy: bool = ...) -> Container: ...
def label(frames: Sequence[Any]) -> dict[str, Any]: ...
