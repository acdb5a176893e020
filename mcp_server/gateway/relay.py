"""The gateway's stages: the verdict (enforce or observe) and the session tracking, and the
terminal that relays a checked frame to the other side.

The chain is the project's one chain (``chain.build_chain``); these plug into it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..chain.boundary import render_rejection
from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..core.types import Direction, Frame, Handler, Message, MessageKind, Middleware, Reply
from ..observe.events import note_rejection
from ..observe.report import ConformanceReport
from ..registry.schemas import SchemaRegistry
from ..registry.tools import UpstreamTools
from ..registry.versions import PROTOCOL_VERSION_META
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
    if message.kind is MessageKind.REQUEST and message.method == "tools/call" and isinstance(message.params, Mapping):
        name = message.params.get("name")
        return name if isinstance(name, str) else None
    tool = frame.annotations.get("tool")
    return tool if isinstance(tool, str) else None


def emit(event: Mapping[str, Any]) -> None:
    log.warning("violation %s", jsonio.dumps(event).decode())


def _remember(frame: Frame) -> None:
    """Expect the reply to a request relayed to the other side."""
    message = frame.message
    if message is not None and message.kind is MessageKind.REQUEST and message.id is not None and message.method:
        tool = _tool_of(frame) if message.method == "tools/call" else None
        stated = frame.version if frame.session.protocol_version is None else None
        frame.session.expect_reply(frame.direction, message.id, message.method, tool, version=stated)


def relay(report: ConformanceReport) -> Handler:
    """The terminal handler: a checked frame goes on to the other side, byte for byte."""

    async def handle(frame: Frame) -> Reply:
        report.frame(frame.direction, frame.message.method if frame.message is not None else None)
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
                seen = rejection.frame or frame
                message = seen.message
                method = message.method if message is not None else None
                report.frame(frame.direction, method if message is not None else "(not json-rpc)")
                request_id = message.id if message is not None else None
                if frame.direction is Direction.SERVER_TO_CLIENT and rejection.error in _NOT_JSON_RPC:
                    note_rejection(frame, rejection, "quarantined")
                    emit(
                        report.violation(
                            POLLUTION,
                            direction=frame.direction,
                            action="quarantined",
                            excerpt=frame.raw[:200].decode("utf-8", "replace"),
                        )
                    )
                    return None
                rule = rejection.error.slug
                if not config.rule_on(rule):
                    _remember(seen)
                    return Reply(raw=frame.raw, to_peer=True)
                tool = _tool_of(seen)
                mode = config.mode_for(frame.direction, tool)
                observe = (
                    mode is Mode.OBSERVE
                    and rejection.error is not CanonicalError.PAYLOAD_TOO_LARGE
                    and not rejection.extra.get("policy_violation")  # the policy is enforced in every mode
                )
                note_rejection(frame, rejection, "observed" if observe else "enforced")
                emit(
                    report.violation(
                        rule,
                        direction=frame.direction,
                        method=method,
                        tool=tool,
                        request_id=request_id,
                        errors=rejection.errors,
                        action="observed" if observe else "enforced",
                    )
                )
                if observe:
                    _remember(seen)
                    return Reply(raw=frame.raw, to_peer=True)
                if (
                    frame.direction is Direction.SERVER_TO_CLIENT
                    and message is not None
                    and message.kind in (MessageKind.RESPONSE, MessageKind.ERROR_RESPONSE)
                    and request_id is not None
                    and method is not None
                ):
                    # The client still waits for this id: it gets an error naming the violation instead.
                    member = (
                        rejection.error
                        if rejection.error is CanonicalError.INVALID_TOOL_OUTPUT
                        or rejection.extra.get("policy_violation")  # a reply the policy refused, said as such
                        else CanonicalError.UPSTREAM_INVALID_REPLY
                    )
                    stand_in = seen.evolve(message=Message(kind=MessageKind.REQUEST, id=request_id, method=method))
                    extra = {**rejection.extra, "rule": rule}
                    rendered = render_rejection(
                        Rejection(member, rejection.errors, extra=extra, frame=stand_in), stand_in, registry
                    )
                    return None if rendered is None else replace(rendered, to_peer=True)
                raise

        return handle

    return middleware


def track_session(config: GatewayConfig, report: ConformanceReport, tools: UpstreamTools) -> Middleware:
    """After the schema check: commit the negotiated version and the client's capabilities, learn
    and pin the upstream's tools."""

    def middleware(next_handler: Handler) -> Handler:
        async def handle(frame: Frame) -> Reply | None:
            message = frame.message
            assert message is not None
            session = frame.session
            if message.method == "initialize" and message.kind is MessageKind.REQUEST and message.params:
                # What the client can do (elicitation, for approvals the gateway asks it for).
                capabilities = message.params.get("capabilities")
                session.client_capabilities = capabilities if isinstance(capabilities, Mapping) else None
            if message.kind is MessageKind.REQUEST and session.protocol_version is not None:
                meta = (message.params or {}).get("_meta") if isinstance(message.params, Mapping) else None
                stated = meta.get(PROTOCOL_VERSION_META) if isinstance(meta, Mapping) else None
                if stated is not None and stated != session.protocol_version:
                    raise Rejection(
                        CanonicalError.MIXED_PROTOCOL_VERSIONS,
                        [{"path": "/params/_meta", "msg": f"{stated} in a {session.protocol_version} session"}],
                        frame=frame,
                    )
            if message.kind is MessageKind.RESPONSE and frame.document is not None:
                result = frame.document.get("result")
                if message.method == "initialize" and isinstance(result, Mapping):
                    session.protocol_version = result.get("protocolVersion")
                    report.protocol_version = session.protocol_version
                elif message.method == "tools/list" and isinstance(result, Mapping):
                    frame = _learn_tools(frame, result, config, report, tools)
            return await next_handler(frame)

        return handle

    return middleware


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
