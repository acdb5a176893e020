"""Pipeline stage 1: refuse a frame over the byte limit before anything parses it. Pure; no I/O.

The refusal names the frame's size and the limit, and says what the frame was as far as its ends
tell (``core/oversize.py``): a request is answered by its id, a reply names the request it answers,
so the side that waits for it can be answered in its place.
"""

from __future__ import annotations

import sys

from ..core.errors import CanonicalError, Rejection
from ..core.oversize import recover
from ..core.settings import DEFAULT_MAX_FRAME_BYTES
from ..core.types import ERROR_RESPONSE, NOTIFICATION, REQUEST, RESPONSE, Frame, Message
from .stage import Document, Doubt, FastCheck, Id, Inspection, Kind, Name, Params

__all__ = ["SizeGuard", "check_size", "oversized", "told_by_its_ends"]


def check_size(size: int, limit: int) -> None:
    """Raise ``PAYLOAD_TOO_LARGE`` when ``size`` bytes exceed ``limit``; exactly at the limit passes."""
    if size > limit:
        raise Rejection(CanonicalError.PAYLOAD_TOO_LARGE, extra={"size": size, "limit": limit})


def oversized(frame: Frame, size: int, limit: int) -> Rejection:
    """The refusal of ``frame`` (``size`` bytes, over ``limit``), with what it was as far as known."""
    rejection = Rejection(CanonicalError.PAYLOAD_TOO_LARGE, extra={"size": size, "limit": limit})
    rejection.message = told_by_its_ends(frame, size)
    return rejection


def told_by_its_ends(frame: Frame, size: int) -> Message | None:
    """What ``frame`` was as far as its top-level members at its two ends tell (a frame refused
    before it was read whole): a request by its id, a reply naming the request it answers (an id
    named twice with two values is no id)."""
    found = recover(frame.raw, size)
    members, session = found.members, frame.session
    request_id = found.id
    if "method" in members:
        kind = REQUEST if "id" in members else NOTIFICATION
        return Message(kind, request_id, found.method, version=session.version)
    if ("result" in members or "error" in members) and request_id is not None:
        # A reply is a reply even refused: named as the answer to its request, which then waits no more.
        pending = session.peek(frame.direction.opposite, request_id)
        kind = ERROR_RESPONSE if "error" in members else RESPONSE
        if pending is None:
            return Message(kind, request_id, version=session.version)
        version = session.version or pending.version
        return Message(kind, request_id, pending.method, version=version, tool=pending.tool)
    return None


class SizeGuard:
    __slots__ = ("limit",)

    def __init__(self, limit: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self.limit = limit

    def fast_check(self, after: FastCheck, doubt: Doubt) -> FastCheck:
        limit = self.limit
        if limit >= sys.maxsize:  # no frame is over it (``mcp-server check`` reads a recording so)
            return after

        def check(
            frame: Frame,
            document: Document,
            kind: Kind,
            rid: Id,
            method: Name,
            params: Params,
            version: Name,
            tool: Name,
        ) -> Message | None:
            if frame.size is not None or len(frame.raw) > limit:  # (a size of its own: its bytes were drained)
                return doubt(frame, document)
            return after(frame, document, kind, rid, method, params, version, tool)

        return check

    def inspect(self, inspection: Inspection) -> None:
        frame = inspection.frame
        size = len(frame.raw) if frame.size is None else frame.size
        if size > self.limit:
            raise oversized(frame, size, self.limit)
