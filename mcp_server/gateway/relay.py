"""The gateway's stages: the verdict (enforce or observe) and the session tracking, and the
terminal that relays a checked frame to the other side.

The chain is the project's one chain (``chain.build_chain``); these plug into it. A refused reply
still answers the party that waits for it; a reply to a request settled already is dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..chain.boundary import render_rejection
from ..chain.schema_check import opposite
from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..core.types import (
    CLIENT_TO_SERVER,
    ERROR_RESPONSE,
    NOTIFICATION,
    REQUEST,
    RESPONSE,
    SERVER_TO_CLIENT,
    Frame,
    Handler,
    Message,
    Middleware,
    Reply,
)
from ..observe.events import note_rejection
from ..observe.report import ConformanceReport
from ..registry.schemas import SchemaRegistry
from ..registry.tools import UpstreamTools
from ..registry.versions import stated_version
from .config import GatewayConfig, Mode

__all__ = ["POLLUTION", "emit", "relay", "track_session", "verdict"]

log = logging.getLogger("mcp_server.gateway")

POLLUTION = "upstream_stdout_pollution"
# What the upstream wrote that is not a JSON-RPC message at all is never delivered, in any mode.
_NOT_JSON_RPC = frozenset({CanonicalError.PARSE_ERROR, CanonicalError.INVALID_ENVELOPE})


def _tool_of(frame: Frame) -> str | None:
    message = frame.message
    if message is None:
        return None
    if message.kind is REQUEST and message.method == "tools/call" and isinstance(message.params, Mapping):
        name = message.params.get("name")
        return name if isinstance(name, str) else None
    tool = frame.annotations.get("tool")
    return tool if isinstance(tool, str) else None


def emit(event: Mapping[str, Any]) -> None:
    log.warning("violation %s", jsonio.dumps(event).decode())


def _remember(frame: Frame) -> None:
    """Expect the reply to a request relayed to the other side."""
    message = frame.message
    if message is not None and message.kind is REQUEST and message.id is not None and message.method:
        tool = _tool_of(frame) if message.method == "tools/call" else None
        stated = frame.version if frame.session.protocol_version is None else None
        frame.session.expect_reply(frame.direction, message.id, message.method, tool, version=stated)


def relay(report: ConformanceReport, tools: UpstreamTools) -> Handler:
    """The terminal handler: a checked frame goes on to the other side, byte for byte.

    A call of a tool the upstream does not list (its whole list learnt, or waited for long enough)
    goes on too: the upstream is the authority on its tools and answers it (the spec's unknown-tool
    error, or a tool result); the report names it (``tool_not_listed``, the client's)."""

    async def handle(frame: Frame) -> Reply:
        message = frame.message
        assert message is not None  # classified: it passed every check
        report.frame(frame.direction, message.method, message.kind, frame.session)
        tool = _tool_of(frame) if message.kind is REQUEST and message.method == "tools/call" else None
        if tool is not None and tools.io(tool) is None:
            emit(
                report.violation(
                    "tool_not_listed",
                    direction=frame.direction,
                    method=message.method,
                    tool=tool,
                    request_id=message.id,
                    action="forwarded",
                    kind=message.kind,
                    session=frame.session,
                )
            )
        _remember(frame)
        return Reply(raw=frame.raw, document=frame.document, to_peer=True)

    return handle


def verdict(config: GatewayConfig, report: ConformanceReport, registry: SchemaRegistry) -> Middleware:
    """Decide what a violation does: enforce answers or replaces the frame, observe lets it pass."""

    def middleware(next_handler: Handler) -> Handler:
        async def handle(frame: Frame) -> Reply | None:
            try:
                return await next_handler(frame)
            except Rejection as rejection:
                return _judge(frame, rejection, config, report, registry)

        return handle

    return middleware


def _judge(
    frame: Frame, rejection: Rejection, config: GatewayConfig, report: ConformanceReport, registry: SchemaRegistry
) -> Reply | None:
    """What a refused frame earns (raises the rejection when the boundary is to answer its sender)."""
    seen = rejection.frame or frame
    message = seen.message
    method, kind, request_id = (None, None, None) if message is None else (message.method, message.kind, message.id)
    report.frame(frame.direction, method if message is not None else "(not json-rpc)", kind, frame.session)
    if (
        rejection.error is CanonicalError.UNKNOWN_RESPONSE_ID
        and request_id is not None
        and frame.session.late(opposite(frame.direction), request_id)
    ):
        return None  # the reply to a request settled already (cancelled, timed out): late, not wrong
    if frame.direction is SERVER_TO_CLIENT and rejection.error in _NOT_JSON_RPC:
        note_rejection(frame, rejection, "quarantined")
        excerpt = frame.raw[:200].decode("utf-8", "replace")
        emit(
            report.violation(
                POLLUTION, direction=frame.direction, action="quarantined", excerpt=excerpt, session=frame.session
            )
        )
        return None
    rule = rejection.error.slug
    if not config.rule_on(rule):
        _remember(seen)
        return Reply(raw=frame.raw, to_peer=True)
    tool = _tool_of(seen)
    observe = (
        config.mode_for(frame.direction, tool) is Mode.OBSERVE
        and rejection.error is not CanonicalError.PAYLOAD_TOO_LARGE
        and not rejection.extra.get("policy_violation")  # the policy is enforced in every mode
    )
    action = "observed" if observe else "enforced"
    note_rejection(frame, rejection, action)
    emit(
        report.violation(
            rule,
            direction=frame.direction,
            method=method,
            tool=tool,
            request_id=request_id,
            errors=rejection.errors,
            action=action,
            kind=kind,
            session=frame.session,
        )
    )
    if observe:
        _remember(seen)
        return Reply(raw=frame.raw, to_peer=True)
    if (kind is RESPONSE or kind is ERROR_RESPONSE) and request_id is not None and method is not None:
        return _answer_in_place(seen, rejection, registry)
    raise rejection


def _answer_in_place(seen: Frame, rejection: Rejection, registry: SchemaRegistry) -> Reply | None:
    """A refused reply: the party that waits for it (the client for the upstream's reply, the
    upstream for the client's) gets an error for the same id naming the violation, in its place."""
    message = seen.message
    assert message is not None and message.id is not None
    if rejection.error is CanonicalError.INVALID_TOOL_OUTPUT or rejection.extra.get("policy_violation"):
        member = rejection.error  # said as such: a tool's output, or a reply the policy refused
    elif seen.direction is SERVER_TO_CLIENT:
        member = CanonicalError.UPSTREAM_INVALID_REPLY
    else:
        member = CanonicalError.CLIENT_INVALID_REPLY
    stand_in = seen.evolve(message=Message(kind=REQUEST, id=message.id, method=message.method))
    extra = {**rejection.extra, "rule": rejection.error.slug}
    rendered = render_rejection(Rejection(member, rejection.errors, extra=extra, frame=stand_in), stand_in, registry)
    return None if rendered is None else replace(rendered, to_peer=True)


def track_session(config: GatewayConfig, report: ConformanceReport, tools: UpstreamTools) -> Middleware:
    """After the schema check: commit the negotiated version and the client's capabilities, learn
    and pin the upstream's tools, settle what a peer cancels."""

    def middleware(next_handler: Handler) -> Handler:
        async def handle(frame: Frame) -> Reply | None:
            message = frame.message
            assert message is not None
            session = frame.session
            if message.method == "initialize" and message.kind is REQUEST and message.params:
                # What the client can do (elicitation, for approvals the gateway asks it for).
                capabilities = message.params.get("capabilities")
                session.client_capabilities = capabilities if isinstance(capabilities, Mapping) else None
            if message.kind is REQUEST and session.protocol_version is not None:
                stated = stated_version(message.params)
                if stated is not None and stated != session.protocol_version:
                    raise Rejection(
                        CanonicalError.MIXED_PROTOCOL_VERSIONS,
                        [{"path": "/params/_meta", "msg": f"{stated} in a {session.protocol_version} session"}],
                        frame=frame,
                    )
            if message.kind is NOTIFICATION:
                _notified(frame, message, report, tools)
            elif message.kind is RESPONSE and frame.document is not None:
                result = frame.document.get("result")
                if message.method == "initialize" and isinstance(result, Mapping):
                    session.protocol_version = result.get("protocolVersion")
                    report.negotiated(session, session.protocol_version)
                elif message.method == "tools/list" and isinstance(result, Mapping):
                    frame = _learn_tools(frame, result, config, report, tools)
            return await next_handler(frame)

        return handle

    return middleware


def _notified(frame: Frame, message: Message, report: ConformanceReport, tools: UpstreamTools) -> None:
    """A peer cancels a request it sent (spec basic/utilities/cancellation): settled, not a
    violation, and its reply, should it still come, is late. The upstream's tools changed: a tool
    not listed may be new."""
    if message.method == "notifications/tools/list_changed" and frame.direction is SERVER_TO_CLIENT:
        tools.complete = False
        return
    params = message.params
    cancelled = params.get("requestId") if message.method == "notifications/cancelled" and params else None
    if not isinstance(cancelled, str | int) or isinstance(cancelled, bool):
        return
    method, tool = frame.session.abandon(frame.direction, cancelled)
    if method is not None:
        reason = "client_cancelled" if frame.direction is CLIENT_TO_SERVER else "upstream_cancelled"
        report.ended_unanswered(frame.session, frame.direction, cancelled, method, reason, tool)


def _learn_tools(
    frame: Frame, result: Mapping[str, Any], config: GatewayConfig, report: ConformanceReport, tools: UpstreamTools
) -> Frame:
    outcome = tools.learn(list(result.get("tools", [])))
    message = frame.message
    assert message is not None
    if config.rule_on("tool_definition_changed"):
        for name, patch in outcome.changed:
            emit(
                report.violation(
                    "tool_definition_changed",
                    direction=frame.direction,
                    method="tools/list",
                    tool=name,
                    request_id=message.id,
                    action="reported",
                    patch=patch,
                    session=frame.session,
                )
            )
    if not outcome.invalid or not config.rule_on("invalid_tool_schema"):
        return frame
    dropped = set()
    for name, why in outcome.invalid:
        enforce = config.mode_for(frame.direction, name) is Mode.ENFORCE
        emit(
            report.violation(
                "invalid_tool_schema",
                direction=frame.direction,
                method="tools/list",
                tool=name,
                request_id=message.id,
                errors=[{"path": "", "msg": why}],
                action="dropped" if enforce else "observed",
                session=frame.session,
            )
        )
        if enforce:
            dropped.add(name)
    if not dropped:
        return frame
    # The one case where the gateway changes a frame: the client never sees a tool it could not check.
    kept = [tool for tool in result.get("tools", []) if not (isinstance(tool, Mapping) and tool.get("name") in dropped)]
    assert frame.document is not None
    document = {**frame.document, "result": {**result, "tools": kept}}
    return frame.evolve(document=document, raw=jsonio.dumps(document))
