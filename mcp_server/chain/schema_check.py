"""Pipeline stage 5: validate the frame against the official schema of the version in force.

The validator is chosen by (version, message kind, method); for ``tools/call`` the tool's own input
schema is checked on the way in and its output schema on the way back. Pure; no I/O. Each rule
(which version, which schema applies to what) is one function that both checks use: the fast one
asks ``is_valid``, the diagnostic one lists the violations.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, Protocol

from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..core.session import Session
from ..core.types import ERROR_RESPONSE, NOTIFICATION, REQUEST, RESPONSE, Direction, Frame, Message
from ..registry.schemas import ProtocolSchema, SchemaRegistry, ToolIO, Validator, accepts, violations
from ..registry.versions import reply_version, resolve_version, stateless_version
from .stage import Document, Doubt, FastCheck, Id, Inspection, Kind, Name, Params

__all__ = [
    "SchemaCheck",
    "ToolSchemas",
    "check_message",
    "check_tool_output",
    "exact_reading",
    "governing_version",
    "own_tool",
    "tool_input",
]

Tables = dict[str, dict[str, Validator]]  # version → method → validator
Exact = Callable[[], Mapping[str, Any] | None] | None
"""The frame read again by its exact decimals, on demand; it says ``None`` when the frame holds no
number its double does not read exactly (then the values as read are exact)."""

_NO_ARGUMENTS: dict[str, Any] = {}  # a call without arguments is checked as {} (read, never written)
_EXEMPT: Any = object()  # a tool result its outputSchema does not apply to
_MISSING: Any = object()  # a tool result that must carry structuredContent and does not


class ToolSchemas(Protocol):
    """Where the schema check finds a tool's compiled I/O validators.

    ``strict``: a ``tools/call`` of a tool it does not know is refused (a server knows all its
    tools, and a gateway waits for its upstream's list first; the offline check of a capture that
    holds no list passes such calls on): the tool-listed stage's rule.
    """

    @property
    def strict(self) -> bool: ...

    @property
    def table(self) -> Mapping[str, ToolIO]:
        """Tool name → its compiled validators, as known now (read on the per-frame path)."""

    def io(self, name: str) -> ToolIO | None: ...


def own_tool(registry: SchemaRegistry, tools: ToolSchemas | None, method: str | None) -> ToolIO | None:
    """One of the server's own tools called as a JSON-RPC method of its own name (``validate_asset``):
    a tool of that name, where no MCP version defines a request of it."""
    if tools is None or method is None or method in registry.request_methods:
        return None
    return tools.io(method)


def tool_input(method: str | None, params: Mapping[str, Any] | None) -> Any:
    """What a tool's inputSchema applies to: a ``tools/call``'s arguments (``{}`` when it gives none),
    or the params of a tool called by its own name."""
    if method == "tools/call":
        return _NO_ARGUMENTS if params is None else params.get("arguments", _NO_ARGUMENTS)
    return params or _NO_ARGUMENTS


def _tool_output(tool_io: ToolIO, result: Mapping[str, Any]) -> Any:
    """What a tool result's outputSchema applies to (tools spec, "Structured Content"): its
    ``structuredContent``; ``_EXEMPT`` without an outputSchema, for an InputRequiredResult (2026-07-28:
    it asks for input, the tool's output comes with the retry's result) and for an ``isError`` result
    without structured content (what one carries is held to the schema: clients check it, issue 29);
    ``_MISSING`` for any other result without it."""
    if tool_io.output is None or result.get("resultType") == "input_required":
        return _EXEMPT
    if "structuredContent" not in result:
        return _EXEMPT if result.get("isError") is True else _MISSING
    return result["structuredContent"]


def check_tool_output(tool_io: ToolIO, result: Mapping[str, Any], exact: Exact = None) -> None:
    """A tool result against the tool's output schema (``_tool_output`` says what applies); ``exact``:
    the whole frame read by its exact decimals, where a number must be judged so (``violations``)."""
    structured = _tool_output(tool_io, result)
    if structured is _EXEMPT:
        return
    if structured is _MISSING:
        raise Rejection(
            CanonicalError.INVALID_TOOL_OUTPUT,
            [{"path": "/result/structuredContent", "msg": "required by the tool's outputSchema"}],
        )
    assert tool_io.output is not None
    found = violations(
        tool_io.output,
        structured,
        prefix="/result/structuredContent",
        exact=None if exact is None else lambda: _at(exact(), "result", "structuredContent"),
    )
    if found:
        raise Rejection(CanonicalError.INVALID_TOOL_OUTPUT, found)


def governing_version(
    registry: SchemaRegistry,
    message: Message,
    *,
    direction: Direction,
    session: Session,
    tools: ToolSchemas | None = None,
    announced: str | None = None,
) -> str:
    """The version whose schema governs ``message`` (see ``versions.resolve_version``; ``announced``
    is the HTTP ``MCP-Protocol-Version`` header, when the frame came with one)."""
    if session.version is not None:  # a session's version governs every frame of it, its own tools' too
        return session.version
    if message.kind is RESPONSE or message.kind is ERROR_RESPONSE:
        pending = None if message.id is None else session.peek(direction.opposite, message.id)
        return reply_version(registry, pending)
    if own_tool(registry, tools, message.method) is not None:
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
    exact: Exact = None,
) -> None:
    """Validate one classified message against the schema of ``version``.

    Raises ``Rejection``: -32601 for a method the version does not define, -32602 listing
    every violation (absolute RFC 6901 paths into the frame, sorted by path then msg) of the frame
    against its JSON-RPC message definition and its own (one compiled validator per frame type).
    ``exact``: the frame read again by its exact decimals (``jsonio.loads_exact``), for a number that
    sits on a value a schema compares it to (``registry/exact_numbers.py``).
    """
    protocol = registry.protocol(version)
    if message.kind is REQUEST or message.kind is NOTIFICATION:
        _check_request(registry, protocol, document, message, direction, tools, exact)
        return
    if message.id is None:  # an error response to a frame whose id could not be read
        found = violations(protocol.envelope_validator(protocol.error_response_def), document, exact=exact)
    else:
        pending = session.peek(direction.opposite, message.id)
        if pending is None:
            raise Rejection(CanonicalError.UNKNOWN_RESPONSE_ID, [{"path": "/id", "msg": "unknown_response_id"}])
        if message.kind is ERROR_RESPONSE:
            found = violations(protocol.envelope_validator(protocol.error_response_def), document, exact=exact)
        else:
            validator = protocol.result_validator(pending.method)
            found = [] if validator is None else violations(validator, document, exact=exact)
            tool = pending.tool
            tool_io = tools.io(tool) if tools is not None and tool is not None else None
            if not found and tool_io is not None and protocol.structured_tool_results:
                check_tool_output(tool_io, document["result"], exact)
    if found:
        raise _invalid(found)


def _check_request(
    registry: SchemaRegistry,
    protocol: ProtocolSchema,
    document: Mapping[str, Any],
    message: Message,
    direction: Direction,
    tools: ToolSchemas | None,
    exact: Exact,
) -> None:
    """A request or notification: its own tool's input, or the version's definition of its method
    (and, for a ``tools/call`` of a tool known, the tool's input)."""
    assert message.method is not None
    tool_io = own_tool(registry, tools, message.method)
    if tool_io is None:
        if message.kind is REQUEST:
            validator = protocol.request_validator(direction, message.method)
        else:
            validator = protocol.notification_validator(direction, message.method)
        if validator is None:
            raise Rejection(CanonicalError.METHOD_NOT_FOUND, [{"path": "/method", "msg": "method_not_found"}])
        found = violations(validator, document, exact=exact)
        if found:
            raise _invalid(found, _bad_meta(protocol, message) if message.kind is REQUEST else False)
        if message.method != "tools/call" or tools is None:
            return
        name = (message.params or {}).get("name")
        tool_io = tools.io(name) if isinstance(name, str) else None  # not known: the tool-listed stage's
        if tool_io is None:
            return
    # pointers into the arguments: equal for both entry styles
    exact_input = None if exact is None else lambda: _at(exact(), "params", then=partial(tool_input, message.method))
    found = violations(tool_io.input, tool_input(message.method, message.params), exact=exact_input)
    if found:
        raise Rejection(CanonicalError.INVALID_TOOL_INPUT, found)


def exact_reading(raw: bytes) -> Callable[[], Mapping[str, Any] | None]:
    """``raw`` read by its exact decimals, once, when first asked for (most frames never are); ``None``
    when it holds no number its double does not read exactly (``jsonio.says_more_than_doubles``)."""
    read: list[Mapping[str, Any] | None] = []

    def exactly() -> Mapping[str, Any] | None:
        if not read:
            read.append(jsonio.loads_exact(raw) if jsonio.says_more_than_doubles(raw) else None)
        return read[0]

    return exactly


def _at(document: Mapping[str, Any] | None, *keys: str, then: Callable[[Any], Any] | None = None) -> Any:
    """``document[key]…`` (``None`` stays ``None``: the frame's values as read are exact), then ``then``."""
    if document is None:
        return None
    value: Any = document
    for key in keys:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value if then is None else then(value)


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
    return meta is None or not accepts(protocol.definition_validator("RequestMetaObject"), meta)


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
                exact=exact_reading(inspection.frame.raw),
            )
        except Rejection as rejection:
            rejection.message = message
            raise

    def fast_check(self, after: FastCheck, doubt: Doubt) -> FastCheck:
        """Requests and notifications of a version known (the session's, or the stateless one they
        state) and results of a request that waits, valid against their schemas; the rest is
        ``inspect``'s (a request before the handshake, an error response, anything invalid)."""
        requests, notifications, results = _tables(self.registry, self.direction)
        own = _own_tool_check(self.registry, self.tools, after, doubt)
        registry, opposite = self.registry, self.direction.opposite
        tool_table = None if self.tools is None else self.tools.table  # (filled in place as tools are learnt)
        # The versions whose results carry structured content: only there a tool's outputSchema holds.
        with_outputs = frozenset(v for v, p in registry.protocols.items() if p.structured_tool_results)
        exempt, missing = _EXEMPT, _MISSING

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
            if document is None:
                return doubt(frame, document)
            session = frame.session
            if kind is RESPONSE and rid is not None:  # a result: of a request that waits
                pending = session.peek(opposite, rid)
                if pending is None:
                    return doubt(frame, document)
                method, tool = pending.method, pending.tool
                version = session.version or reply_version(registry, pending)
                validator = results[version][method]  # the whole frame, envelope included
                if validator is not None and not validator.is_valid(document):
                    return doubt(frame, document)
                if tool is not None and tool_table is not None and version in with_outputs:
                    tool_io = tool_table.get(tool)
                    if tool_io is not None and tool_io.output is not None:  # as ``check_tool_output`` reads it
                        structured = _tool_output(tool_io, document["result"])
                        if structured is missing or (
                            structured is not exempt and not tool_io.output.is_valid(structured)
                        ):
                            return doubt(frame, document)
                return after(frame, document, kind, rid, method, None, version, tool)
            if kind is not REQUEST and kind is not NOTIFICATION:
                return doubt(frame, document)
            version = session.version or stateless_version(params, registry)
            if version is None or method is None:
                return doubt(frame, document)
            validator = (requests if kind is REQUEST else notifications)[version][method]
            if validator is None:  # one of the server's own tools, called as a method of its own name?
                return own(frame, document, kind, rid, method, params, version, tool)
            if not validator.is_valid(document):
                return doubt(frame, document)
            if tool is not None and tool_table is not None:  # (a tool not known: the tool-listed stage's)
                tool_io = tool_table.get(tool)
                if tool_io is not None and not tool_io.input.is_valid(tool_input(method, params)):
                    return doubt(frame, document)
            return after(frame, document, kind, rid, method, params, version, tool)

        return check


class _OnFirstUse(dict[str, Any]):
    """A table filled as it is read: ``table[key]`` makes a missing entry with ``make(key)`` and keeps
    it (a key ``make`` gives ``None`` for is not kept: a name nobody defines does not grow the table).
    A hit costs what a ``dict``'s does."""

    __slots__ = ("_make",)

    def __init__(self, make: Callable[[str], Any]) -> None:
        super().__init__()
        self._make = make

    def __missing__(self, key: str) -> Any:
        value = self._make(key)
        if value is not None:
            self[key] = value
        return value


def _tables(registry: SchemaRegistry, direction: Direction) -> tuple[Tables, Tables, Tables]:
    """Per version, method → the validator of a request, and of a notification, sent in ``direction``,
    and of the result that answers a request sent the other way (``None``: the version defines no
    such method). Each version's tables are made on its first frame and each validator is compiled
    on its first use (a session uses one version and a few methods), then they are dict lookups."""

    def per_method(validator: Callable[[ProtocolSchema], Callable[[str], Validator | None]]) -> Tables:
        return _OnFirstUse(lambda version: _OnFirstUse(validator(registry.protocol(version))))

    return (
        per_method(lambda protocol: partial(protocol.request_validator, direction)),
        per_method(lambda protocol: partial(protocol.notification_validator, direction)),
        per_method(lambda protocol: protocol.result_validator),
    )


def _own_tool_check(registry: SchemaRegistry, tools: ToolSchemas | None, after: FastCheck, doubt: Doubt) -> FastCheck:
    """The fast check of a request that calls one of the server's own tools by its own name."""
    latest = registry.latest

    def check(
        frame: Frame, document: Document, kind: Kind, rid: Id, method: Name, params: Params, version: Name, tool: Name
    ) -> Message | None:
        tool_io = own_tool(registry, tools, method)
        if tool_io is None or kind is not REQUEST or not tool_io.input.is_valid(tool_input(method, params)):
            return doubt(frame, document)
        return after(frame, document, kind, rid, method, params, frame.session.version or latest, tool)

    return check
