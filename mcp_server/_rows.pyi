"""Types of the C module ``_rows.c``: the event log's queue of rows, and a frame's row."""

from collections.abc import Callable
from typing import Any, TypeVar

_F = TypeVar("_F")

FRAME_ROW: tuple[str, ...]
SEEN: int
REJECTION: int
ACTION: int
BEGAN: int

class RowQueue:
    count: Callable[[tuple[Any, ...]], None] | None
    def __init__(
        self,
        *,
        batch: int,
        full: Callable[[], None],
        session_id: Callable[[Any], str],
        refused: Callable[..., tuple[str, str | None, tuple[str, Any, bool]]],
    ) -> None: ...
    def begin(self, frame: _F, /) -> _F: ...
    def frame(self, frame: Any, reply: Any, /) -> None: ...
    def put(self, row: tuple[Any, ...], /) -> None: ...
    def take(self, most: int, /) -> list[tuple[Any, ...]]: ...
    def __len__(self) -> int: ...
