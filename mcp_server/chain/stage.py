"""What a pipeline stage is: a pure synchronous check of one frame, in two forms of one rule.

A stage's diagnostic check (``inspect``) reads and fills one ``Inspection`` (the frame and what
earlier stages learnt of it) and refuses by raising ``Rejection``, naming the exact rule broken. A
stage may also contribute a fast check (``fast_check``): a closure prepared once, which passes a frame
on only where the stage would pass it, and hands anything else to the diagnostic path. Stages read
the session, never change it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from ..core.types import Frame, Message, MessageKind, RequestId

__all__ = ["Document", "Doubt", "FastCheck", "Id", "Inspection", "Kind", "Name", "Params", "Stage"]


class Inspection:
    """One frame on the diagnostic path: the frame, its parsed document, and the message as known."""

    __slots__ = ("document", "frame", "message")

    def __init__(self, frame: Frame) -> None:
        self.frame = frame
        self.document: Mapping[str, Any] | None = None
        self.message: Message | None = None


Document = dict[str, Any] | None  # the frame parsed (``None``: not yet)
Kind = MessageKind | None
Id = RequestId | None
Name = str | None
Params = Mapping[str, Any] | None

FastCheck = Callable[[Frame, Document, Kind, Id, Name, Params, Name, Name], Message | None]
"""``check(frame, document, kind, request_id, method, params, version, tool)``: the frame's verdict.
What the stages before knew of the frame comes in its parts, a ``Message``'s fields (``kind``
``None``: nothing yet): the message is built once, when every stage has passed it."""

Doubt = Callable[[Frame, Document], "Message | None"]
"""The diagnostic path, for a frame a fast check is not sure of (with its document once parsed)."""


class Stage(Protocol):
    """One check of the chain, in the order ``compose`` is given them.

    A stage that also has ``fast_check(after, doubt) -> FastCheck`` contributes it to the compiled
    path: its check of a frame, then ``after`` (the stages that follow), or ``doubt`` when it is not
    sure. Where it passes a frame on, what it passes is what its ``inspect`` leaves."""

    def inspect(self, inspection: Inspection) -> None:
        """Check the frame as far as this stage goes (filling ``inspection``), or raise ``Rejection``."""
