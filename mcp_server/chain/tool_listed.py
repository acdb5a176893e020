"""Pipeline stage: a ``tools/call`` names a tool the server has (or its upstream listed). Pure; no I/O.

Only where the tools are ``strict``: a server knows all its tools, and a gateway waits for its
upstream's list before it checks a call (ADR 26); the offline check of a capture that holds no list
passes such calls on, and has no such stage. It comes after the lockfile's stage, whose refusal
says more about a tool the lockfile does not hold.
"""

from __future__ import annotations

from ..core.errors import CanonicalError, Rejection
from ..core.types import REQUEST, Frame, Message, MessageKind
from .schema_check import ToolSchemas
from .stage import Document, Doubt, FastCheck, Id, Inspection, Kind, Name, Params

__all__ = ["ToolListed", "unlisted_call"]


def unlisted_call(tools: ToolSchemas, kind: MessageKind | None, method: str | None, tool: str | None) -> bool:
    """A ``tools/call`` request of a tool ``tools`` does not hold (``tool``: the name it gives)."""
    return kind is REQUEST and method == "tools/call" and (tool is None or tools.io(tool) is None)


class ToolListed:
    __slots__ = ("tools",)

    def __init__(self, tools: ToolSchemas) -> None:
        self.tools = tools

    def inspect(self, inspection: Inspection) -> None:
        message = inspection.message
        if message is not None and unlisted_call(self.tools, message.kind, message.method, message.tool):
            raise Rejection(
                CanonicalError.TOOL_NOT_FOUND, [{"path": "/params/name", "msg": "tool_not_found"}], message=message
            )

    def fast_check(self, after: FastCheck, doubt: Doubt) -> FastCheck:
        tools = self.tools

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
            if method == "tools/call" and unlisted_call(tools, kind, method, tool):
                return doubt(frame, document)
            return after(frame, document, kind, rid, method, params, version, tool)

        return check
