"""Pipeline stage 2: parse the frame once. Pure; no I/O.

Invalid JSON, invalid UTF-8, NaN or Infinity → -32700; a top-level value that is not an
object (a batch array included: MCP sends one message per frame) → -32600. Both with id null.
"""

from __future__ import annotations

from typing import Any

from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..core.types import Frame, Message
from .stage import Document, Doubt, FastCheck, Id, Inspection, Kind, Name, Params

__all__ = ["JsonSyntax", "parse"]


def parse(raw: bytes) -> dict[str, Any]:
    try:
        document = jsonio.loads(raw)
    except jsonio.JSONSyntaxError:
        raise Rejection(CanonicalError.PARSE_ERROR) from None
    if not isinstance(document, dict):
        kind = "batch_not_supported" if isinstance(document, list) else "not_an_object"
        raise Rejection(CanonicalError.INVALID_ENVELOPE, [{"path": "", "msg": kind}])
    return document


class JsonSyntax:
    __slots__ = ()

    def fast_check(self, after: FastCheck, doubt: Doubt) -> FastCheck:
        loads, syntax_error = jsonio.loads, jsonio.JSONSyntaxError

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
                    document = loads(frame.raw)
                except syntax_error:
                    return doubt(frame, None)
                if type(document) is not dict:
                    return doubt(frame, None)
            return after(frame, document, kind, rid, method, params, version, tool)

        return check

    def inspect(self, inspection: Inspection) -> None:
        if inspection.document is None:  # else its reader parsed it already
            inspection.document = parse(inspection.frame.raw)
