"""Pipeline stage 5: validate the frame against the official schema of the version in force.

The validator is chosen by (version, message kind, method); for ``tools/call`` the tool's
own input schema is checked on the way in and its output schema on the way back.
Thin async wrapper around the pure ``check_message``; no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from .errors import CanonicalError, Rejection
from .lifecycle import resolve_version
from .registry import SchemaRegistry, ToolIO, violations
from .stage import CheckStage
from .types import (
    ERROR_RESPONSE,
    NOTIFICATION,
    REQUEST,
    RESPONSE,
    Direction,
    Frame,
    Handler,
    Message,
    Middleware,
    Reply,
    Session,
)

__all__ = [
    "ToolSchemas",
    "check_message",
    "check_tool_output",
    "governing_version",
    "opposite",
    "schema_check",
    "tool_output_check",
]


class ToolSchemas(Protocol):
    """Where the schema check finds a tool's compiled I/O validators.

    ``strict``: a ``tools/call`` of a tool it does not know is refused (a server knows all its
    tools, and a gateway waits for its upstream's list first; the offline check of a capture that
    holds no list passes such calls on).
    """

    @property
    def strict(self) -> bool: ...

    def io(self, name: str) -> ToolIO | None: ...


def opposite(direction: Direction) -> Direction:
    """The other way: a response goes opposite to the request it answers."""
    if direction is Direction.CLIENT_TO_SERVER:
        return Direction.SERVER_TO_CLIENT
    return Direction.CLIENT_TO_SERVER


def _is_own_tool_method(registry: SchemaRegistry, message: Message, tools: ToolSchemas | None) -> bool:
    """One of the server's own tools called as a JSON-RPC method of its own name."""
    return (
        tools is not None
        and message.method is not None
        and tools.io(message.method) is not None
        and message.method not in registry.protocol(registry.latest).request_methods
    )


def governing_version(
    registry: SchemaRegistry,
    message: Message,
    *,
    direction: Direction,
    session: Session,
    tools: ToolSchemas | None = None,
    announced: str | None = None,
) -> str:
    """The version whose schema governs ``message`` (see ``lifecycle.resolve_version``; ``announced``
    is the HTTP ``MCP-Protocol-Version`` header, when the frame came with one)."""
    if message.kind is RESPONSE or message.kind is ERROR_RESPONSE:
        if session.protocol_version is None and message.id is not None:
            # A stateless request's reply is of the version the request stated (2026-07-28).
            stated = session.pending_versions.get((opposite(direction), message.id))
            if stated in registry.stateless_versions:
                return stated
        return session.protocol_version or registry.latest_handshake
    if session.protocol_version is not None:  # a session's version governs its own tools' methods too
        return session.protocol_version
    if _is_own_tool_method(registry, message, tools):
        return registry.latest
    return resolve_version(message, direction, session, registry, announced=announced)


def check_message(
    registry: SchemaRegistry,
    document: Mapping[str, Any],
    message: Message,
    *,
    version: str,
    direction: Direction,
    session: Session,
    tools: ToolSchemas | None = None,
) -> None:
    """Validate one classified message against the schema of ``version``.

    Raises ``Rejection``: -32601 for a method the version does not define, -32602 listing
    every violation (absolute RFC 6901 paths into the frame, sorted by path then msg) of the frame
    against its JSON-RPC message definition and its own (one compiled validator per frame type).
    """
    protocol = registry.protocol(version)
    if message.kind is REQUEST or message.kind is NOTIFICATION:
        assert message.method is not None
        if _is_own_tool_method(registry, message, tools):
            assert tools is not None
            tool_io = tools.io(message.method)
            assert tool_io is not None
            found = violations(tool_io.input, message.params or {})
            if found:
                raise Rejection(CanonicalError.INVALID_TOOL_INPUT, found)
            return
        if message.kind is REQUEST:
            validator = protocol.request_validator(direction, message.method)
        else:
            validator = protocol.notification_validator(direction, message.method)
        if validator is None:
            raise Rejection(CanonicalError.METHOD_NOT_FOUND, [{"path": "/method", "msg": "method_not_found"}])
        found = violations(validator, document)
        if found:
            raise _invalid(found)
        if message.method == "tools/call" and tools is not None:
            _check_tool_input(tools, message)
        return
    if message.id is None:  # an error response to a frame whose id could not be read
        found = violations(protocol.envelope_validator(protocol.error_response_def), document)
    else:
        method, tool = session.settle(opposite(direction), message.id)
        if method is None:
            raise Rejection(CanonicalError.UNKNOWN_RESPONSE_ID, [{"path": "/id", "msg": "unknown_response_id"}])
        if message.kind is ERROR_RESPONSE:
            found = violations(protocol.envelope_validator(protocol.error_response_def), document)
        else:
            validator = protocol.result_validator(method)
            found = [] if validator is None else violations(validator, document)
            tool_io = tools.io(tool) if tools is not None and tool is not None else None
            if not found and tool_io is not None and protocol.structured_tool_results:
                check_tool_output(tool_io, document["result"])
    if found:
        raise _invalid(found)


def _invalid(found: list[dict[str, Any]]) -> Rejection:
    """-32602 listing every violation; INVALID_FORMAT when all of them are asserted formats."""
    if all(entry.get("rule") == "format" for entry in found):
        return Rejection(CanonicalError.INVALID_FORMAT, found)
    return Rejection(CanonicalError.INVALID_PARAMS, found)


def _check_tool_input(tools: ToolSchemas, message: Message) -> None:
    params = message.params or {}
    name = params.get("name")
    tool_io = tools.io(name) if isinstance(name, str) else None
    if tool_io is None:
        if not tools.strict:
            return
        raise Rejection(CanonicalError.TOOL_NOT_FOUND, [{"path": "/params/name", "msg": "tool_not_found"}])
    arguments = params.get("arguments", {})
    found = violations(tool_io.input, arguments)  # pointers into the arguments: equal for both entry styles
    if found:
        raise Rejection(CanonicalError.INVALID_TOOL_INPUT, found)


def check_tool_output(tool_io: ToolIO, result: Mapping[str, Any]) -> None:
    """A tool result against the tool's output schema (tools spec, "Structured Content").

    ``isError`` results are exempt; otherwise ``structuredContent`` must be present and valid.
    """
    if tool_io.output is None or result.get("isError") is True:
        return
    if "structuredContent" not in result:
        raise Rejection(
            CanonicalError.INVALID_TOOL_OUTPUT,
            [{"path": "/result/structuredContent", "msg": "required by the tool's outputSchema"}],
        )
    found = violations(tool_io.output, result["structuredContent"], prefix="/result/structuredContent")
    if found:
        raise Rejection(CanonicalError.INVALID_TOOL_OUTPUT, found)


def schema_check(registry: SchemaRegistry, tools: ToolSchemas | None = None) -> CheckStage:
    def check(frame: Frame) -> Frame:
        message = frame.message
        document = frame.document
        assert document is not None and message is not None
        session = frame.session
        annotations = None
        if message.id is not None and (message.kind is RESPONSE or message.kind is ERROR_RESPONSE):
            # Name the request a response answers, for the stages and logs after this one.
            key = (opposite(frame.direction), message.id)
            message = message._replace(method=session.pending.get(key))
            tool = session.pending_tools.get(key)
            if tool is not None:
                annotations = {**frame.annotations, "tool": tool}
        headers = frame.headers
        announced = None if headers is None or session.protocol_version else headers.get("mcp-protocol-version")
        try:
            version = governing_version(
                registry, message, direction=frame.direction, session=session, tools=tools, announced=announced
            )
        except Rejection as rejection:
            rejection.frame = frame.evolve(message=message, annotations=annotations)
            raise
        checked = frame.evolve(message=message, version=version, annotations=annotations)
        try:
            check_message(
                registry, document, message, version=version, direction=frame.direction, session=session, tools=tools
            )
        except Rejection as rejection:
            rejection.frame = checked
            raise
        return checked

    return CheckStage(check)


def tool_output_check(tools: ToolSchemas, registry: SchemaRegistry) -> Middleware:
    """The schema check's way back: the reply to a ``tools/call`` meets the tool's output schema, in
    the versions that have output schemas."""

    def middleware(next_handler: Handler) -> Handler:
        async def handle(frame: Frame) -> Reply | None:
            reply = await next_handler(frame)
            message = frame.message
            if reply is None or reply.document is None or message is None or message.method != "tools/call":
                return reply
            if frame.version is None or not registry.protocol(frame.version).structured_tool_results:
                return reply
            result = reply.document.get("result")
            tool_io = tools.io((message.params or {}).get("name", ""))
            if isinstance(result, Mapping) and tool_io is not None:
                try:
                    check_tool_output(tool_io, result)
                except Rejection as rejection:
                    rejection.frame = frame
                    raise
            return reply

        return handle

    return middleware
