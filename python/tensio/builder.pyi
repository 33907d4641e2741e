from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy.typing as npt

from . import Container, _StrPath

__all__ = ["GraphBuilder"]

# a value: the index a call returned, or its name
_ValueRef = int | str
# node outputs: a count of new values, or per output a new value's name, a
# (name, dtype, shape) tuple (a new typed value) or an existing value
_Outputs = int | Sequence[_ValueRef | tuple[str | None, Any, Sequence[int | str | None] | None]]

class GraphBuilder:
    """Builds a graph (values, nodes, inputs/outputs, subgraphs) to save."""
    metadata: dict[str, object]
    opsets: dict[str, int]
    def __init__(self, opset: int | None = ..., metadata: Mapping[str, object] | None = ...,
                 opsets: Mapping[str, int] | None = ...,
                 _root: GraphBuilder | None = ...) -> None: ...
    def value(self, name: str | None = ..., dtype: npt.DTypeLike | str | None = ...,
              shape: Sequence[int | str | None] | None = ...) -> int: ...
    def input(self, name: str, dtype: npt.DTypeLike | str,
              shape: Sequence[int | str | None] | None) -> int: ...
    def constant(self, name: str, array: npt.ArrayLike) -> int: ...
    def output(self, *values: _ValueRef) -> None: ...
    def capture(self, *values: _ValueRef) -> None: ...
    def subgraph(self) -> GraphBuilder: ...
    # attributes: int/bool, float, str, lists of them, an ndarray, a subgraph
    # GraphBuilder, or lists of arrays / subgraphs
    def node(self, op: str, inputs: Iterable[_ValueRef | None] = ..., outputs: _Outputs = ...,
             name: str | None = ..., domain: str | None = ..., **attributes: Any) -> list[int]: ...
    def container(self, metadata: Mapping[str, object] | None = ...) -> Container: ...
    def save(self, path: _StrPath, **options: object) -> None: ...
