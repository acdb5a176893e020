"""Composes the chain. The order of the stages lives here and nowhere else.

Composing a direction's stages compiles them: ``Chain.check(frame)`` is one synchronous function
from a frame to its verdict. A frame goes down the fast path first: one parse, dict lookups
prepared here, one jsonio call per schema that applies, no copies and no allocation but the
verdict. Whatever the fast path is not sure of (a doubt) goes down the diagnostic path: the
stages, in order, on the frame, which either refuse it with the exact rejection or pass it.
Both paths give the same verdicts (tests/chain/test_compose.py proves it on generated frames).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..core import jsonio
from ..core.settings import DEFAULT_MAX_FRAME_BYTES
from ..core.types import NOTIFICATION, REQUEST, RESPONSE, Direction, Frame, Message
from ..registry.schemas import SchemaRegistry, Validator
from ..registry.versions import PROTOCOL_VERSION_META
from .classify import Classify
from .json_syntax import JsonSyntax
from .policy_check import PolicyCheck
from .routing_headers import check_routing_headers
from .schema_check import SchemaCheck, ToolSchemas
from .size_guard import SizeGuard
from .stage import Inspection, Stage

__all__ = ["STAGE_ORDER", "Chain", "build_chain"]

STAGE_ORDER: tuple[type, ...] = (SizeGuard, JsonSyntax, Classify, PolicyCheck, SchemaCheck)
"""size guard → JSON syntax → classify → [policy] → schema check: the design's order, the one place it is written."""

Verdict = Callable[[Frame], Message | None]
"""The fast path: the verdict of a frame, or ``None`` when in doubt (nothing changed meanwhile)."""


class Chain:
    """One direction's checks: ``check(frame)`` returns the frame's ``Message`` or raises ``Rejection``."""

    __slots__ = ("_fast", "check", "direction", "stages")

    def __init__(self, stages: Sequence[Stage], direction: Direction) -> None:
        self.stages: tuple[Stage, ...] = tuple(stages)
        self.direction = direction
        self._fast = _compile(self.stages)
        self.check: Callable[[Frame], Message] = self._checker()

    @property
    def fast(self) -> Verdict | None:
        """The fast path alone (``None``: this chain has none): for the tests that prove it exact."""
        return None if self._fast is None else self._fast.verdict

    def inspect(self, frame: Frame, document: Mapping[str, Any] | None = None) -> Message:
        """The diagnostic path: every stage in order; the message, or the stage's ``Rejection``.
        ``document``: the frame already parsed (the JSON syntax stage then has nothing to do)."""
        inspection = Inspection(frame)
        inspection.document = document
        for stage in self.stages:
            stage.inspect(inspection)
        assert inspection.message is not None
        return inspection.message

    def check_parsed(self, frame: Frame, document: dict[str, Any]) -> Message:
        """``check`` of a frame its reader has parsed already (``mcp-server check`` reads lines)."""
        fast, message = self._fast, None
        if fast is not None and frame.size is None and len(frame.raw) <= fast.limit:
            message = fast.parsed(frame, document)
        return self.inspect(frame, document) if message is None else message

    def _checker(self) -> Callable[[Frame], Message]:
        fast, inspect = self.fast, self.inspect
        if fast is None:
            return inspect

        def check(frame: Frame) -> Message:
            message = fast(frame)
            return inspect(frame) if message is None else message

        return check


def build_chain(
    registry: SchemaRegistry,
    direction: Direction,
    *,
    tools: ToolSchemas | None = None,
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
    policy: PolicyCheck | None = None,
) -> Chain:
    """The chain of one direction, its stages in ``STAGE_ORDER`` (the policy when one is given)."""
    stages: list[Stage] = [SizeGuard(max_frame_bytes), JsonSyntax(), Classify()]
    if policy is not None:
        stages.append(policy)
    stages.append(SchemaCheck(registry, direction, tools))
    return Chain(stages, direction)


def _compile(stages: Sequence[Stage]) -> _FastPath | None:
    """The fast path for ``stages``, or ``None`` (every frame inspected) when they are not the known
    stages in ``STAGE_ORDER`` — a chain someone composed differently is still exact, only slower."""
    kinds = [type(stage) for stage in stages]
    if kinds != [kind for kind in STAGE_ORDER if kind in kinds] or {SizeGuard, JsonSyntax, Classify, SchemaCheck} - set(
        kinds
    ):
        return None
    size_guard = next(s for s in stages if isinstance(s, SizeGuard))
    schema = next(s for s in stages if isinstance(s, SchemaCheck))
    policy = next((s for s in stages if isinstance(s, PolicyCheck)), None)
    if policy is not None and policy.direction is not schema.direction:
        return None
    return _FastPath(schema, size_guard.limit, None if policy is None else policy.fast_allows)


class _FastPath:
    """The tables one direction's fast path looks up, prepared once, and the path itself."""

    def __init__(self, schema: SchemaCheck, limit: int, allows: Callable[[int, str | None, str | None], bool] | None):
        registry, direction = schema.registry, schema.direction
        self.limit, self.allows, self.tools = limit, allows, schema.tools
        self.direction, self.opposite = direction, direction.opposite
        self.latest, self.latest_handshake = registry.latest, registry.latest_handshake
        self.stateless = frozenset(registry.stateless_versions)
        self.latest_methods = registry.protocol(registry.latest).request_methods
        self.requests: dict[str, dict[str, Validator]] = {}
        self.notifications: dict[str, dict[str, Validator]] = {}
        self.results: dict[str, dict[str, Validator]] = {}
        for version, protocol in registry.protocols.items():
            self.requests[version] = _table(protocol.requests, direction, protocol.request_validator)
            self.notifications[version] = _table(protocol.notifications, direction, protocol.notification_validator)
            self.results[version] = {
                method: validator
                for method in protocol.request_methods
                if (validator := protocol.result_validator(method)) is not None
            }

    def verdict(self, frame: Frame) -> Message | None:
        raw = frame.raw
        if frame.size is not None or len(raw) > self.limit:
            return None
        try:
            document = jsonio.loads(raw)
        except jsonio.JSONSyntaxError:
            return None
        return self.parsed(frame, document) if type(document) is dict else None

    def parsed(self, frame: Frame, document: dict[str, Any]) -> Message | None:
        """The verdict of a frame already parsed (``document``: what its bytes hold)."""
        if document.get("jsonrpc") != "2.0":
            return None
        method = document.get("method")
        if method is None:
            return self._response(frame, document)
        if type(method) is not str or "result" in document or "error" in document:
            return None
        return self._request(frame, document, method)

    def _request(self, frame: Frame, document: dict[str, Any], method: str) -> Message | None:
        if "id" in document:
            kind, request_id = REQUEST, document["id"]
            if type(request_id) is not str and type(request_id) is not int:
                return None
        else:
            kind, request_id = NOTIFICATION, None
        params = document.get("params")
        if params is not None and type(params) is not dict:
            return None
        version = frame.session.version or self._stated(params)
        if version is None:
            return None
        table = self.requests[version] if kind is REQUEST else self.notifications[version]
        validator = table.get(method)
        tool = None
        if validator is None:  # one of the server's own tools, called as a method of its own name?
            return self._own_tool(frame, document, method, params, request_id)
        if not validator.is_valid(document):
            return None
        if method == "tools/call" and params is not None:
            tool = params["name"]  # the schema made it a string
            if self.tools is not None:
                tool_io = self.tools.io(tool)
                if tool_io is None or not tool_io.input.is_valid(params.get("arguments", {})):
                    return None
        if self.allows is not None and not self.allows(len(frame.raw), method, tool):
            return None
        message = Message(kind, request_id, method, params, version, tool, document)
        if frame.headers is not None and not _routed(message, frame.headers):
            return None
        return message

    def _stated(self, params: Mapping[str, Any] | None) -> str | None:
        """A stateless request's own version (2026-07-28 ``_meta``); ``None``: the diagnostic path decides."""
        meta = params.get("_meta") if params is not None else None
        version = meta.get(PROTOCOL_VERSION_META) if type(meta) is dict else None
        return version if version in self.stateless else None

    def _own_tool(
        self, frame: Frame, document: dict[str, Any], method: str, params: Any, request_id: Any
    ) -> Message | None:
        tools = self.tools
        tool_io = None if tools is None or method in self.latest_methods else tools.io(method)
        if tool_io is None or request_id is None or not tool_io.input.is_valid(params or {}):
            return None
        if self.allows is not None and not self.allows(len(frame.raw), method, None):
            return None
        version = frame.session.version or self.latest
        message = Message(REQUEST, request_id, method, params, version, None, document)
        return message if frame.headers is None or _routed(message, frame.headers) else None

    def _response(self, frame: Frame, document: dict[str, Any]) -> Message | None:
        request_id = document.get("id")
        if "error" in document or (type(request_id) is not str and type(request_id) is not int):
            return None  # an error response: rare, and the diagnostic path renders it exactly
        result = document.get("result")
        if type(result) is not dict:
            return None
        session = frame.session
        pending = session.peek(self.opposite, request_id)
        if pending is None:
            return None
        version = session.version
        if version is None:
            version = pending.version if pending.version in self.stateless else self.latest_handshake
        validator = self.results[version].get(pending.method)
        if validator is not None and not validator.is_valid(result):
            return None
        tool = pending.tool
        if tool is not None and self.tools is not None:
            tool_io = self.tools.io(tool)
            if tool_io is not None and tool_io.output is not None and result.get("isError") is not True:
                structured = result.get("structuredContent")
                if structured is None or not tool_io.output.is_valid(structured):
                    return None
        if self.allows is not None and not self.allows(len(frame.raw), None, None):
            return None
        session.settle(self.opposite, request_id)
        return Message(RESPONSE, request_id, pending.method, None, version, tool, document)


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
