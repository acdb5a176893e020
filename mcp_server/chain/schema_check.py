"""Pipeline stage 5: validate the frame against the official schema of the version in force.

The validator is chosen by (version, message kind, method); for ``tools/call`` the tool's
own input schema is checked on the way in and its output schema on the way back. Pure; no I/O
(a response settles the request it answers in the session).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ..core.errors import CanonicalError, Rejection
from ..core.session import Session
from ..core.types import ERROR_RESPONSE, NOTIFICATION, REQUEST, RESPONSE, Direction, Message
from ..registry.schemas import ProtocolSchema, SchemaRegistry, ToolIO, violations
from ..registry.versions import resolve_version
from .stage import Inspection

__all__ = ["SchemaCheck", "ToolSchemas", "check_message", "check_tool_output", "governing_version"]


class ToolSchemas(Protocol):
    """Where the schema check finds a tool's compiled I/O validators.

    ``strict``: a ``tools/call`` of a tool it does not know is refused (a server knows all its
    tools, and a gateway waits for its upstream's list first; the offline check of a capture that
    holds no list passes such calls on).
    """

    @property
    def strict(self) -> bool: ...

    @property
    def table(self) -> Mapping[str, ToolIO]:
        """Tool name → its compiled validators, as known now (read on the per-frame path)."""

    def io(self, name: str) -> ToolIO | None: ...


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
        if session.version is None and message.id is not None:
            # A stateless request's reply is of the version the request stated (2026-07-28).
            pending = session.peek(direction.opposite, message.id)
            if pending is not None and pending.version in registry.stateless_versions:
                return pending.version
        return session.version or registry.latest_handshake
    if session.version is not None:  # a session's version governs its own tools' methods too
        return session.version
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
            raise _invalid(found, _bad_meta(protocol, message) if message.kind is REQUEST else False)
        if message.method == "tools/call" and tools is not None:
            _check_tool_input(tools, message)
        return
    if message.id is None:  # an error response to a frame whose id could not be read
        found = violations(protocol.envelope_validator(protocol.error_response_def), document)
    else:
        pending = session.settle(direction.opposite, message.id)
        if pending is None:
            raise Rejection(CanonicalError.UNKNOWN_RESPONSE_ID, [{"path": "/id", "msg": "unknown_response_id"}])
        if message.kind is ERROR_RESPONSE:
            found = violations(protocol.envelope_validator(protocol.error_response_def), document)
        else:
            validator = protocol.result_validator(pending.method)
            found = [] if validator is None else violations(validator, document)
            tool = pending.tool
            tool_io = tools.io(tool) if tools is not None and tool is not None else None
            if not found and tool_io is not None and protocol.structured_tool_results:
                check_tool_output(tool_io, document["result"])
    if found:
        raise _invalid(found)


def _invalid(found: list[dict[str, Any]], bad_meta: bool = False) -> Rejection:
    """-32602 listing every violation; INVALID_FORMAT when all of them are asserted formats;
    INVALID_REQUEST_META when a stateless request's ``_meta`` envelope is among them (HTTP 400)."""
    if all(entry.get("rule") == "format" for entry in found):
        return Rejection(CanonicalError.INVALID_FORMAT, found)
    return Rejection(CanonicalError.INVALID_REQUEST_META if bad_meta else CanonicalError.INVALID_PARAMS, found)


def _bad_meta(protocol: ProtocolSchema, message: Message) -> bool:
    """A refused request of a stateless version whose ``_meta`` envelope is missing or invalid."""
    if not protocol.stateless:
        return False
    meta = message.params.get("_meta") if isinstance(message.params, Mapping) else None
    return meta is None or not protocol.definition_validator("RequestMetaObject").is_valid(meta)


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

    An InputRequiredResult is exempt (2026-07-28: it asks for input, the tool's output comes with
    the retry's result); an ``isError`` result need not carry ``structuredContent``, but what it
    carries must be valid (clients validate it, error or not: issue 29); any other result must carry
    it, valid.
    """
    if tool_io.output is None or result.get("resultType") == "input_required":
        return
    if "structuredContent" not in result:
        if result.get("isError") is True:
            return  # a tool error need not be structured; when it is, it is held to the schema (clients check it)
        raise Rejection(
            CanonicalError.INVALID_TOOL_OUTPUT,
            [{"path": "/result/structuredContent", "msg": "required by the tool's outputSchema"}],
        )
    found = violations(tool_io.output, result["structuredContent"], prefix="/result/structuredContent")
    if found:
        raise Rejection(CanonicalError.INVALID_TOOL_OUTPUT, found)


class SchemaCheck:
    """Stage 5: the frame against the schema of the version in force (and a tool's own schemas)."""

    __slots__ = ("direction", "registry", "tools")

    def __init__(self, registry: SchemaRegistry, direction: Direction, tools: ToolSchemas | None = None) -> None:
        self.registry = registry
        self.direction = direction
        self.tools = tools

    def inspect(self, inspection: Inspection) -> None:
        message, document = inspection.message, inspection.document
        assert document is not None and message is not None, "the schema check runs after classify"
        session, direction, tools = inspection.frame.session, self.direction, self.tools
        if message.id is not None and (message.kind is RESPONSE or message.kind is ERROR_RESPONSE):
            # Name the request a response answers (and the tool it called), for what comes after.
            pending = session.peek(direction.opposite, message.id)
            if pending is not None:
                message = message._replace(method=pending.method, tool=pending.tool)
        inspection.message = message
        headers = inspection.frame.headers
        announced = None if headers is None or session.version else headers.get("mcp-protocol-version")
        try:
            version = governing_version(
                self.registry, message, direction=direction, session=session, tools=tools, announced=announced
            )
        except Rejection as rejection:
            rejection.message = message
            raise
        inspection.message = message = message._replace(version=version)
        try:
            check_message(
                self.registry,
                document,
                message,
                version=version,
                direction=direction,
                session=session,
                tools=self.tools,
            )
        except Rejection as rejection:
            rejection.message = message
            raise
