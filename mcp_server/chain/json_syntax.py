"""Pipeline stage 2: read the frame once, as every parser reads it. Pure; no I/O.

Invalid JSON, invalid UTF-8, NaN or Infinity → -32700 with id null; a top-level value that is not
an object (a batch array included: MCP sends one message per frame) → -32600. A frame that names a
member twice in one object (RFC 8259 §4 leaves its meaning to each parser, I-JSON (RFC 7493 §2.3)
forbids it) or nests deeper than the reader goes is refused with the pointer or the limit, and
answered by its id as far as its ends tell it (ADR 40).
"""

from __future__ import annotations

from typing import Any

from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..core.types import Frame, Message
from .classify import called_tool
from .size_guard import told_by_its_ends
from .stage import Document, Doubt, FastCheck, Id, Inspection, Kind, Name, Params

__all__ = ["JsonSyntax", "parse"]


def parse(raw: bytes) -> dict[str, Any]:
    """The frame's one document, or the ``Rejection`` that names why there is none."""
    try:
        document = jsonio.loads(raw)
    except jsonio.DuplicateKeyError as exc:
        where = jsonio.duplicate_pointer(raw, exc)
        raise Rejection(CanonicalError.DUPLICATE_MEMBER_NAME, [{"path": where, "msg": str(exc)}]) from None
    except jsonio.TooDeepError as exc:
        errors, limit = [{"path": "", "msg": str(exc)}], jsonio.MAX_READ_DEPTH
        raise Rejection(CanonicalError.NESTED_TOO_DEEP, errors, extra={"limit": limit}) from None
    except jsonio.JSONSyntaxError:
        raise Rejection(CanonicalError.PARSE_ERROR) from None
    if not isinstance(document, dict):
        kind = "batch_not_supported" if isinstance(document, list) else "not_an_object"
        raise Rejection(CanonicalError.INVALID_ENVELOPE, [{"path": "", "msg": kind}])
    return document


class JsonSyntax:
    __slots__ = ()

    def fast_check(self, after: FastCheck, doubt: Doubt) -> FastCheck:
        read = jsonio.read

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
            if document is None:  # else its reader parsed it already
                try:
                    document = read(frame.raw)
                except ValueError:  # (jiter's refusal: the diagnostic path names it)
                    return doubt(frame, None)
                if type(document) is not dict:
                    return doubt(frame, None)
            return after(frame, document, kind, rid, method, params, version, tool)

        return check

    def inspect(self, inspection: Inspection) -> None:
        if inspection.document is not None:  # its reader parsed it already
            return
        frame = inspection.frame
        try:
            inspection.document = parse(frame.raw)
        except Rejection as rejection:
            if rejection.error is CanonicalError.DUPLICATE_MEMBER_NAME:
                rejection.message = _as_most_read_it(frame)
            elif rejection.error is CanonicalError.NESTED_TOO_DEEP:
                rejection.message = told_by_its_ends(frame, len(frame.raw))
            raise


def _as_most_read_it(frame: Frame) -> Message | None:
    """A frame naming a member twice, as what its ends tell and with the document most parsers read
    (the last value wins): what observe mode relays and the report names, never what is judged. An
    id named twice with two values is none."""
    message = told_by_its_ends(frame, len(frame.raw))
    if message is None:
        return None
    document = jsonio.read_last_wins(frame.raw)
    params = document.get("params") if isinstance(document, dict) else None
    params = params if isinstance(params, dict) else None
    tool = message.tool or (called_tool(message.method, params) if message.method is not None else None)
    return message._replace(params=params, tool=tool, document=document if isinstance(document, dict) else None)
