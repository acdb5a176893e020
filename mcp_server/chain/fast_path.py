"""The compiled fast path of one direction's chain: frame → verdict, in one function.

What the stages would conclude for the common frame, from tables prepared once: one parse, a dict
lookup by (version, method), one ``is_valid`` per schema that applies (the message's, a tool's),
no copies, no coroutine, nothing allocated but the verdict. Anything it is not sure of it hands to
``doubt`` (the diagnostic path, which names the exact rejection) with the document it parsed.
Pure but for one thing: a response it accepts settles the request it answers, as the stages do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..core import jsonio
from ..core.types import NOTIFICATION, REQUEST, RESPONSE, Direction, Frame, Message
from ..registry.schemas import Validator
from ..registry.versions import PROTOCOL_VERSION_META
from .routing_headers import check_routing_headers
from .schema_check import SchemaCheck

__all__ = ["Doubt", "FastPath", "compile_fast_path"]

_NO_ARGUMENTS: dict[str, Any] = {}  # a call without arguments is checked as {} (read, never written)

Doubt = Callable[[Frame, "dict[str, Any] | None"], "Message | None"]
"""Where a frame the fast path is not sure of goes, with its document when it was parsed."""

FastPath = Callable[[Frame, "dict[str, Any] | None"], "Message | None"]
"""``path(frame, document=None)``: the verdict (``document``: the frame already parsed)."""

Allows = Callable[[int, "str | None", "str | None"], bool]


def compile_fast_path(schema: SchemaCheck, limit: int, allows: Allows | None, doubt: Doubt) -> FastPath:
    """The fast path of ``schema``'s direction for frames up to ``limit`` bytes (``allows``: the
    policy's say, when the chain has a policy stage)."""
    requests, notifications, results = _tables(schema)
    stateless = frozenset(schema.registry.stateless_versions)
    respond = _response_path(schema, results, stateless, allows, doubt)
    own_tool = _own_tool_path(schema, allows, doubt)
    tool_table = schema.tools.table if schema.tools is not None else None
    loads, syntax_error, new = jsonio.loads, jsonio.JSONSyntaxError, tuple.__new__

    def path(frame: Frame, document: dict[str, Any] | None = None) -> Message | None:
        raw = frame.raw
        if frame.size is not None or len(raw) > limit:  # parsed or not, the size guard has its say
            return doubt(frame, document)
        if document is None:
            try:
                document = loads(raw)
            except syntax_error:
                return doubt(frame, None)
            if type(document) is not dict:
                return doubt(frame, None)
        method = document.get("method")
        if method is None:
            return respond(frame, document)
        if type(method) is not str or document.get("jsonrpc") != "2.0" or "result" in document or "error" in document:
            return doubt(frame, document)
        if "id" in document:
            kind, request_id, table = REQUEST, document["id"], requests
            if type(request_id) is not str and type(request_id) is not int:
                return doubt(frame, document)
        else:
            kind, request_id, table = NOTIFICATION, None, notifications
        params = document.get("params")
        if params is not None and type(params) is not dict:
            return doubt(frame, document)
        version = frame.session.version or _stated(params, stateless)
        if version is None:
            return doubt(frame, document)
        validator = table[version].get(method)
        if validator is None:  # one of the server's own tools, called as a method of its own name?
            return own_tool(frame, document, method, params, request_id)
        if not validator.is_valid(document):
            return doubt(frame, document)
        tool = None
        if method == "tools/call" and params is not None:
            tool = params["name"]  # the schema made it a string
            if tool_table is not None:
                tool_io = tool_table.get(tool)
                if tool_io is None or not tool_io.input.is_valid(params.get("arguments", _NO_ARGUMENTS)):
                    return doubt(frame, document)
        if allows is not None and not allows(len(frame.raw), method, tool):
            return doubt(frame, document)
        message: Message = new(Message, (kind, request_id, method, params, version, tool, document))
        if frame.headers is not None and not _routed(message, frame.headers):
            return doubt(frame, document)
        return message

    return path


def _stated(params: dict[str, Any] | None, stateless: frozenset[str]) -> str | None:
    """A stateless request's own version (2026-07-28 ``_meta``), when it names a stateless one."""
    meta = params.get("_meta") if params is not None else None
    version = meta.get(PROTOCOL_VERSION_META) if type(meta) is dict else None
    return version if type(version) is str and version in stateless else None  # a list is no version (nor hashable)


def _tables(
    schema: SchemaCheck,
) -> tuple[dict[str, dict[str, Validator]], dict[str, dict[str, Validator]], dict[str, dict[str, Validator]]]:
    """Per version, method → the validator of a request, of a notification (sent in the chain's
    direction), and of the result that answers a request (sent the other way)."""
    direction = schema.direction
    requests: dict[str, dict[str, Validator]] = {}
    notifications: dict[str, dict[str, Validator]] = {}
    results: dict[str, dict[str, Validator]] = {}
    for version, protocol in schema.registry.protocols.items():
        requests[version] = _table(protocol.requests, direction, protocol.request_validator)
        notifications[version] = _table(protocol.notifications, direction, protocol.notification_validator)
        results[version] = {
            method: validator
            for method in protocol.request_methods
            if (validator := protocol.result_validator(method)) is not None
        }
    return requests, notifications, results


def _response_path(
    schema: SchemaCheck,
    results: dict[str, dict[str, Validator]],
    stateless: frozenset[str],
    allows: Allows | None,
    doubt: Doubt,
) -> Callable[[Frame, dict[str, Any]], Message | None]:
    opposite, latest_handshake = schema.direction.opposite, schema.registry.latest_handshake
    # The versions whose results carry structured content: only there a tool's outputSchema holds.
    with_outputs = frozenset(v for v, p in schema.registry.protocols.items() if p.structured_tool_results)
    tool_table = schema.tools.table if schema.tools is not None else None
    new = tuple.__new__

    def respond(frame: Frame, document: dict[str, Any]) -> Message | None:
        request_id, result = document.get("id"), document.get("result")
        if type(result) is not dict or "error" in document or document.get("jsonrpc") != "2.0":
            return doubt(frame, document)  # an error response is rare: the stages render it exactly
        if type(request_id) is not str and type(request_id) is not int:
            return doubt(frame, document)
        session = frame.session
        pending = session.peek(opposite, request_id)
        if pending is None:
            return doubt(frame, document)
        version = session.version
        if version is None:  # a stateless request's reply is of the version the request stated
            version = pending.version if pending.version in stateless else latest_handshake
        validator = results[version].get(pending.method)
        if validator is not None and not validator.is_valid(document):  # the whole frame, envelope included
            return doubt(frame, document)
        tool = pending.tool
        if tool is not None and tool_table is not None and version in with_outputs:
            tool_io = tool_table.get(tool)
            if tool_io is not None and tool_io.output is not None:
                structured = result.get("structuredContent")
                if structured is None and result.get("isError") is not True:
                    return doubt(frame, document)
                if structured is not None and not tool_io.output.is_valid(structured):
                    return doubt(frame, document)
        if allows is not None and not allows(len(frame.raw), None, None):
            return doubt(frame, document)
        session.settle(opposite, request_id)
        return new(Message, (RESPONSE, request_id, pending.method, None, version, tool, document))

    return respond


def _own_tool_path(
    schema: SchemaCheck, allows: Allows | None, doubt: Doubt
) -> Callable[[Frame, dict[str, Any], str, Any, Any], Message | None]:
    """A server's own tool called as a JSON-RPC method of its own name (``validate_asset``, …)."""
    tools, latest = schema.tools, schema.registry.latest
    latest_methods = schema.registry.protocol(latest).request_methods

    def own_tool(frame: Frame, document: dict[str, Any], method: str, params: Any, request_id: Any) -> Message | None:
        tool_io = None if tools is None or method in latest_methods else tools.table.get(method)
        if tool_io is None or request_id is None or not tool_io.input.is_valid(params or _NO_ARGUMENTS):
            return doubt(frame, document)
        if allows is not None and not allows(len(frame.raw), method, None):
            return doubt(frame, document)
        version = frame.session.version or latest
        message = Message(REQUEST, request_id, method, params, version, None, document)
        return message if frame.headers is None or _routed(message, frame.headers) else doubt(frame, document)

    return own_tool


def _table(
    methods: Mapping[tuple[Direction, str], str], direction: Direction, validator: Callable[[Direction, str], Any]
) -> dict[str, Validator]:
    return {method: validator(direction, method) for (side, method) in methods if side is direction}


def _routed(message: Message, headers: Mapping[str, str]) -> bool:
    """Whether an HTTP request's routing headers agree with its body (else: the diagnostic path)."""
    try:
        check_routing_headers(message, headers)
    except Exception:
        return False
    return True
