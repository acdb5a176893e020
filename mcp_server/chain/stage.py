"""What a pipeline stage is: a pure synchronous check of one frame, run on the diagnostic path.

A stage reads and fills one ``Inspection`` (the frame and what earlier stages learnt of it) and
refuses by raising ``Rejection``. ``compose`` runs the stages in order only for a frame the compiled
fast path doubts; for every other frame their tables are what the fast path looks up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ..core.types import Frame, Message

__all__ = ["Inspection", "Stage"]


class Inspection:
    """One frame on the diagnostic path: the frame, its parsed document, and the message as known."""

    __slots__ = ("document", "frame", "message")

    def __init__(self, frame: Frame) -> None:
        self.frame = frame
        self.document: Mapping[str, Any] | None = None
        self.message: Message | None = None


class Stage(Protocol):
    """One check of the chain, in the order ``compose`` is given them."""

    def inspect(self, inspection: Inspection) -> None:
        """Check the frame as far as this stage goes (filling ``inspection``), or raise ``Rejection``."""
