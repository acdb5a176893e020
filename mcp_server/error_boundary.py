"""The outermost stage: render every rejection for the MCP wire, and contain every other failure.

A rejection becomes a JSON-RPC error (or, where the MCP spec says so, a tool result with
``isError: true``); any other exception becomes INTERNAL_ERROR with its traceback on stderr,
never on the wire. A notification or a response is never answered, even when invalid.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from . import jsonio
from .errors import CanonicalError, Plane, Rejection
from .events import EventLog, note_rejection
from .lifecycle import is_at_least
from .registry import SchemaRegistry
from .types import Frame, Handler, MessageKind, Middleware, Reply

__all__ = [
    "TOOL_ERRORS_AS_RESULTS_SINCE",
    "error_boundary",
    "error_reply",
    "render_rejection",
    "tool_error_result",
]

log = logging.getLogger("mcp_server")

TOOL_ERRORS_AS_RESULTS_SINCE = "2025-11-25"
"""From this version, invalid tool arguments are a tool result with ``isError: true`` rather than
a protocol error (spec 2025-11-25, server/tools "Error Handling"); before it, -32602."""


def tool_error_result(data: Mapping[str, Any], registry: SchemaRegistry, version: str) -> dict[str, Any]:
    """A ``CallToolResult`` that reports a failure: the text for the model, the details as data."""
    protocol = registry.protocol(version)
    result: dict[str, Any] = {
        "content": [{"type": "text", "text": jsonio.dumps(data).decode()}],
        "isError": True,
    }
    if protocol.structured_tool_results:
        result["structuredContent"] = dict(data)
    if "resultType" in protocol.result_required("tools/call"):
        result["resultType"] = "complete"
    return result


def render_rejection(rejection: Rejection, frame: Frame, registry: SchemaRegistry) -> Reply | None:
    """The reply a rejection earns, or ``None`` when the frame must not be answered."""
    seen = rejection.frame or frame
    message = seen.message
    if message is not None and message.kind is not MessageKind.REQUEST:
        return None
    request_id = message.id if message is not None else None
    error = rejection.error
    if error.plane is Plane.TOOL_RESULT and message is not None and message.method is not None:
        if message.method != "tools/call":  # one of the server's own tools, called directly
            return Reply(document={"jsonrpc": "2.0", "id": request_id, "result": rejection.data()})
        if seen.version is not None and is_at_least(registry, seen.version, TOOL_ERRORS_AS_RESULTS_SINCE):
            result = tool_error_result(rejection.data(), registry, seen.version)
            return Reply(document={"jsonrpc": "2.0", "id": request_id, "result": result})
    return error_reply(rejection, request_id)


def error_reply(rejection: Rejection, request_id: Any = None) -> Reply:
    """The JSON-RPC error response for ``rejection`` (``id`` null when the request's is unknown)."""
    error = rejection.error
    body = {"code": error.mcp_code, "message": error.message, "data": rejection.data()}
    return Reply(document={"jsonrpc": "2.0", "id": request_id, "error": body}, error=error)


def error_boundary(registry: SchemaRegistry, events: EventLog | None = None) -> Middleware:
    """Contain every failure of the stages inside (see the module's docstring). With ``events``,
    this is also where each frame's event is taken: the boundary gives the frame its draft (which
    reads the clock), the stages inside fill it, and ``EventLog.frame`` takes it with the reply."""

    def contain(failure: Exception, frame: Frame) -> Reply | None:
        if isinstance(failure, Rejection):
            rejection = failure
            if rejection.error is CanonicalError.INTERNAL_ERROR and rejection.__cause__ is not None:
                log.error("internal error", exc_info=rejection.__cause__)
        else:
            log.error("internal error outside a handler", exc_info=failure)
            rejection = Rejection(CanonicalError.INTERNAL_ERROR)
        note_rejection(frame, rejection)
        reply = render_rejection(rejection, frame, registry)
        if reply is None:
            log.info("unanswered invalid frame: %s", rejection.error.slug)
        return reply

    def middleware(next_handler: Handler) -> Handler:
        async def handle(frame: Frame) -> Reply | None:
            try:
                return await next_handler(frame)
            except Exception as failure:
                return contain(failure, frame)

        if events is None:
            return handle
        begin, record = events.begin, events.frame

        async def logged(frame: Frame) -> Reply | None:
            # One coroutine for the boundary and the log: a frame pays for one layer, not two.
            frame = begin(frame)
            try:
                reply = await next_handler(frame)
            except Exception as failure:
                reply = contain(failure, frame)
            record(frame, reply)
            return reply

        return logged

    return middleware
