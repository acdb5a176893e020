"""The `serve` application: lifecycle routes, the tool routes and the chain in front of them.

Transport-free: every transport hands frames to the handler built here.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from . import __version__, jsonio
from .approvals import ApprovalBook
from .chain import build_chain
from .errors import CanonicalError, Rejection
from .events import EventLog
from .execution import Elicit, ExecutionGate, Trace
from .lifecycle import discover, initialize, initialized, ping
from .policy import Policy, policy_stage
from .registry import SchemaRegistry
from .router import Route, Router
from .settings import Settings
from .tools import Tool, ToolContext, ToolSet
from .types import NOTIFICATION, REQUEST, Frame, Handler, Reply

__all__ = ["build_server", "call_tool_result"]


def call_tool_result(output: Mapping[str, Any], registry: SchemaRegistry, version: str) -> dict[str, Any]:
    """A tool's result object as a ``CallToolResult``: structured, as text, ``isError`` = not ok."""
    result: dict[str, Any] = {
        "content": [{"type": "text", "text": jsonio.dumps(output).decode()}],
        "isError": output.get("ok", True) is not True,
    }
    if registry.protocol(version).structured_tool_results:
        result["structuredContent"] = dict(output)
    return result


def _trace_of(frame: Frame, params: Mapping[str, Any]) -> Trace:
    """The call's trace: the session, and ``trace_id``/``agent_step``/``attempt`` from ``_meta``."""
    meta = params.get("_meta")
    meta = meta if isinstance(meta, Mapping) else {}
    attempt = meta.get("attempt")
    return Trace(
        session_id=frame.session.id,
        trace_id=meta.get("trace_id") if isinstance(meta.get("trace_id"), str) else None,
        agent_step=meta.get("agent_step") if isinstance(meta.get("agent_step"), (int, str)) else None,
        attempt=attempt if isinstance(attempt, int) else None,
    )


def _elicit(frame: Frame) -> Elicit | None:
    """A way to ask the client for approval, when it declared elicitation and the transport allows."""
    session = frame.session
    capabilities = session.client_capabilities or {}
    if session.peer is None or "elicitation" not in capabilities:
        return None
    return session.peer.elicit_approval(session)


def build_server(
    registry: SchemaRegistry,
    tools: ToolSet,
    settings: Settings,
    *,
    policy: Policy | None = None,
    gate: ExecutionGate | None = None,
    events: EventLog | None = None,
) -> Handler:
    """The serve handler. With ``policy``, the policy stage sits in the chain; ``gate`` (built
    from the policy when not given) governs every tool run: approval, timeout, result limits."""
    if gate is None:
        governing = policy or Policy()
        approvals = ApprovalBook.of(governing)
        gate = ExecutionGate(governing, approvals)
    checked = policy is not None and gate.policy is policy  # the chain's policy stage has allowed each call

    async def governed(tool: Tool, arguments: Any, frame: Frame) -> dict[str, Any]:
        params = frame.message.params if frame.message is not None else None
        trace = _trace_of(frame, params if isinstance(params, Mapping) else {})
        elicit = _elicit(frame)
        context = ToolContext(registry=registry, version=frame.version, trace=trace, elicit=elicit)
        return await gate.run(
            tool.name,
            arguments,
            trace,
            lambda: tool.run(arguments, context),
            approval=tool.approval,
            timeout_seconds=tool.timeout_seconds,
            elicit=elicit,
            checked=checked,
        )

    async def list_tools(frame: Frame) -> dict[str, Any]:
        assert frame.version is not None
        return {"tools": tools.definitions(registry.protocol(frame.version))}

    async def call_tool(frame: Frame) -> dict[str, Any]:
        assert frame.version is not None and frame.message is not None
        params = frame.message.params or {}
        tool = tools.get(params.get("name", ""))
        if tool is None:
            raise Rejection(CanonicalError.TOOL_NOT_FOUND, [{"path": "/params/name", "msg": "tool_not_found"}])
        output = await governed(tool, params.get("arguments", {}), frame)
        return call_tool_result(output, registry, frame.version)

    async def run_direct(tool: Tool, frame: Frame) -> dict[str, Any]:
        assert frame.message is not None
        return await governed(tool, frame.message.params or {}, frame)

    async def cancelled(frame: Frame) -> None:
        return None  # requests run to completion in order; nothing is left to cancel

    routes: dict[str, Route] = {
        "initialize": partial(initialize, version_string=__version__),
        "notifications/initialized": initialized,
        "notifications/cancelled": cancelled,
        "ping": ping,
        "server/discover": partial(discover, registry=registry),
        "tools/list": list_tools,
        "tools/call": call_tool,
    }
    for tool in tools:
        routes[tool.name] = partial(run_direct, tool)
    router = Router(routes, registry)

    async def handle(frame: Frame) -> Reply | None:
        message = frame.message
        assert message is not None
        peer = frame.session.peer
        if peer is not None and message.kind is not REQUEST and message.kind is not NOTIFICATION:
            assert frame.document is not None
            peer.deliver(message.id, frame.document)  # the client's answer to a request of ours
            return None
        return await router(frame)

    stage = None if policy is None else policy_stage(policy, tool_methods=frozenset(t.name for t in tools))
    return build_chain(
        handle,
        registry=registry,
        tools=tools,
        max_frame_bytes=settings.max_frame_bytes,
        policy=stage,
        events=events,
    )
