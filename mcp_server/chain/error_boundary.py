"""Canonical error mapping: every rejection rendered for the MCP wire, every other failure contained.

A rejection becomes a JSON-RPC error (or, where the MCP spec says so, a tool result with
``isError: true``); any other exception becomes INTERNAL_ERROR with its traceback on stderr,
never on the wire. A notification or a response is never answered, even when invalid.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ..core import jsonio
from ..core.errors import CanonicalError, Plane, Rejection
from ..core.replies import error_reply
from ..core.types import MessageKind, Reply
from ..registry.schemas import SchemaRegistry, Validator, accepts
from ..registry.versions import is_at_least
from .schema_check import ToolSchemas, own_tool

__all__ = ["TOOL_ERRORS_AS_RESULTS_SINCE", "contain", "render_rejection", "tool_error_result"]

log = logging.getLogger("mcp_server")

TOOL_ERRORS_AS_RESULTS_SINCE = "2025-11-25"
"""From this version, invalid tool arguments are a tool result with ``isError: true`` rather than
a protocol error (spec 2025-11-25, server/tools "Error Handling"); before it, -32602."""


def tool_error_result(
    data: Mapping[str, Any], registry: SchemaRegistry, version: str, output: Validator | None = None
) -> dict[str, Any]:
    """A ``CallToolResult`` that reports a failure: the text for the model, the details as data, also
    as structured content where the version has it, unless the tool's ``output`` schema refuses it
    (a client validates structured content against the outputSchema, error or not)."""
    protocol = registry.protocol(version)
    result: dict[str, Any] = {
        "content": [{"type": "text", "text": jsonio.dumps(data).decode()}],
        "isError": True,
    }
    if protocol.structured_tool_results and (output is None or accepts(output, data)):
        result["structuredContent"] = dict(data)
    if "resultType" in protocol.result_required("tools/call"):
        result["resultType"] = "complete"
    return result


def render_rejection(
    rejection: Rejection, registry: SchemaRegistry, tools: ToolSchemas | None = None, session: str | None = None
) -> Reply | None:
    """The reply a rejection earns, or ``None`` when the frame must not be answered (a notification
    or a response, even an invalid one, never is). ``tools``: where the called tool's schemas are;
    ``session``: the session's version, for a frame that said none of its own (its id unread)."""
    message = rejection.message
    if message is not None and message.kind is not MessageKind.REQUEST:
        return None
    request_id = message.id if message is not None else None
    version = message.version if message is not None else None
    error = rejection.error
    if error.plane is Plane.TOOL_RESULT and message is not None and message.method is not None:
        if own_tool(registry, tools, message.method) is not None:  # called by its own name: its result
            return Reply(document={"jsonrpc": "2.0", "id": request_id, "result": rejection.data()}, version=version)
        if (
            message.method == "tools/call"
            and version is not None
            and is_at_least(registry, version, TOOL_ERRORS_AS_RESULTS_SINCE)
        ):
            tool_io = tools.io(message.tool) if tools is not None and message.tool is not None else None
            result = tool_error_result(rejection.data(), registry, version, tool_io and tool_io.output)
            return Reply(document={"jsonrpc": "2.0", "id": request_id, "result": result}, version=version)
    known = registry.protocols.get(version or session or "")  # none known: JSON-RPC 2.0's null
    omit = request_id is None and known is not None and known.error_id_optional
    return error_reply(rejection, request_id, version, omit_id=omit)


def contain(failure: Exception) -> Rejection:
    """Any failure as the rejection to render: a ``Rejection`` as it is, anything else an internal
    error whose traceback goes to the log (stderr), never to the wire."""
    if isinstance(failure, Rejection):
        if failure.error is CanonicalError.INTERNAL_ERROR and failure.__cause__ is not None:
            log.error("internal error", exc_info=failure.__cause__)
        return failure
    log.error("internal error outside a handler", exc_info=failure)
    return Rejection(CanonicalError.INTERNAL_ERROR)
