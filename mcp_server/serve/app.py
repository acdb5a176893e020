"""The `serve` application: lifecycle routes, the tool routes and the chain in front of them.

Transport-free: every transport hands frames to the handler built here.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from time import perf_counter
from typing import Any, cast

from .. import __version__
from ..chain.compose import build_chain
from ..chain.error_boundary import contain, render_rejection
from ..chain.policy_check import PolicyCheck
from ..chain.schema_check import ToolSchemas, check_tool_output, own_tool
from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..core.settings import Settings
from ..core.types import CLIENT_TO_SERVER, NOTIFICATION, REQUEST, Frame, Handler, Message, Reply
from ..execution.approvals import ApprovalBook
from ..execution.gate import Elicit, ExecutionGate, Trace
from ..execution.policy import Policy
from ..observe.events import EventLog
from ..registry.schemas import SchemaRegistry
from .lifecycle import discover, initialize, initialized, ping
from .router import Route, Router
from .tools import Tool, ToolContext, ToolSet

__all__ = ["build_server", "call_tool_result"]

log = logging.getLogger("mcp_server")


def call_tool_result(output: Mapping[str, Any], structured: bool) -> dict[str, Any]:
    """A tool's result object as a ``CallToolResult``: as text, ``isError`` = not ok, and (when the
    version carries them) structured."""
    result: dict[str, Any] = {
        "content": [{"type": "text", "text": jsonio.dumps(output).decode()}],
        "isError": output.get("ok", True) is not True,
    }
    if structured:
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
    """The serve handler: a frame in, its reply out. With ``policy``, the policy stage sits in the
    chain; ``gate`` (built from the policy when not given) governs every tool run: approval, timeout,
    result limits. With ``events``, every frame and its reply are rows of the log."""
    if gate is None:
        governing = policy or Policy()
        gate = ExecutionGate(governing, ApprovalBook.of(governing))
    router = Router(_routes(registry, tools, gate, checked=policy is not None and gate.policy is policy), registry)
    stage = None
    if policy is not None:
        methods = frozenset(t.name for t in tools if own_tool(registry, tools, t.name) is not None)
        stage = PolicyCheck(policy, CLIENT_TO_SERVER, tool_methods=methods)
    chain = build_chain(registry, CLIENT_TO_SERVER, tools=tools, max_frame_bytes=settings.max_frame_bytes, policy=stage)
    return _frame_handler(chain.check, router, registry, events, tools)


def _frame_handler(
    check: Callable[[Frame], Message],
    router: Router,
    registry: SchemaRegistry,
    events: EventLog | None,
    tools: ToolSchemas | None = None,
) -> Handler:
    """Where a frame is answered: the chain's verdict, the route, and every failure rendered once
    (canonical error mapping); the log, when there is one, takes the frame's row after its reply."""

    async def handle(frame: Frame) -> Reply | None:
        began = 0.0 if events is None else perf_counter()
        message = None
        try:
            message = check(frame)
            frame.session.answered(frame.direction, message)  # a reply to a request of ours settles it
            reply = None
            if message.kind is REQUEST or message.kind is NOTIFICATION:
                answer = router(message, frame)
                reply = answer if answer is None or isinstance(answer, Reply) else await answer
            elif frame.session.peer is not None and message.document is not None:
                frame.session.peer.deliver(message.id, message.document)  # the client's answer to our request
        except Exception as failure:
            rejection = contain(failure)
            if rejection.message is None:
                rejection.message = message
            elif message is None:
                frame.session.answered(frame.direction, rejection.message)
            reply = render_rejection(rejection, registry, tools, frame.session.version)
            if events is not None:
                events.refused(frame, rejection, reply, began)
            if reply is None:
                log.info("unanswered invalid frame: %s", rejection.error.slug)
            return reply
        if events is not None:
            events.frame(frame, message, reply, began)
        return reply

    return handle


def _routes(registry: SchemaRegistry, tools: ToolSet, gate: ExecutionGate, *, checked: bool) -> dict[str, Route]:
    """Method → route: the lifecycle, ``tools/list`` and ``tools/call``, and each tool by its own name.
    ``checked``: the chain's policy stage has allowed each call already (the gate need not again)."""
    runner = _ToolRunner(registry, tools, gate, checked=checked)

    def list_tools(message: Message, frame: Frame) -> dict[str, Any]:
        assert message.version is not None
        return {"tools": tools.definitions(registry.protocol(message.version))}

    def cancelled(message: Message, frame: Frame) -> None:
        return None  # requests run to completion in order; nothing is left to cancel

    routes: dict[str, Route] = {
        "initialize": partial(initialize, version_string=__version__),
        "notifications/initialized": initialized,
        "notifications/cancelled": cancelled,
        "ping": ping,
        "server/discover": partial(discover, registry=registry),
        "tools/list": list_tools,
        "tools/call": runner.call_tool,
    }
    for tool in tools:
        routes[tool.name] = partial(runner.run_direct, tool)
    return routes


class _ToolRunner:
    """Runs the server's tools: at once when the gate has nothing to do and the tool only computes
    (the result is there before the route returns: no coroutine, no timer), else under the gate."""

    def __init__(self, registry: SchemaRegistry, tools: ToolSet, gate: ExecutionGate, *, checked: bool) -> None:
        self.registry, self.tools, self.gate, self.checked = registry, tools, gate, checked
        self.structured = frozenset(v for v, p in registry.protocols.items() if p.structured_tool_results)
        self._contexts: dict[str | None, ToolContext] = {}  # per version: what a tool run at once knows

    def _at_once(self, tool: Tool) -> bool:
        return not tool.waits and self.gate.has_nothing_to_do(tool.name, checked=self.checked)

    def _context(self, version: str | None) -> ToolContext:
        context = self._contexts.get(version)
        if context is None:
            context = self._contexts[version] = ToolContext(registry=self.registry, version=version)
        return context

    def call_tool(self, message: Message, frame: Frame) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        params = message.params or {}
        tool = self.tools.get(params.get("name", ""))
        if tool is None:
            raise Rejection(CanonicalError.TOOL_NOT_FOUND, [{"path": "/params/name", "msg": "tool_not_found"}])
        arguments = params.get("arguments", {})
        if self._at_once(tool):
            return self._result(
                tool, cast(dict[str, Any], tool.run(arguments, self._context(message.version))), message
            )
        return self._governed_call(tool, arguments, message, frame)

    def run_direct(self, tool: Tool, message: Message, frame: Frame) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        arguments = message.params or {}
        if self._at_once(tool):
            return cast(dict[str, Any], tool.run(arguments, self._context(message.version)))
        return self._governed(tool, arguments, message, frame)

    async def _governed_call(self, tool: Tool, arguments: Any, message: Message, frame: Frame) -> dict[str, Any]:
        return self._result(tool, await self._governed(tool, arguments, message, frame), message)

    async def _governed(self, tool: Tool, arguments: Any, message: Message, frame: Frame) -> dict[str, Any]:
        params = message.params if isinstance(message.params, Mapping) else {}
        trace = _trace_of(frame, params)
        elicit = _elicit(frame)
        context = ToolContext(registry=self.registry, version=message.version, trace=trace, elicit=elicit)
        return await self.gate.run(
            tool.name,
            arguments,
            trace,
            lambda: tool.run(arguments, context),
            approval=tool.approval,
            timeout_seconds=tool.timeout_seconds,
            elicit=elicit,
            checked=self.checked,
        )

    def _result(self, tool: Tool, output: Mapping[str, Any], message: Message) -> dict[str, Any]:
        """A tool's output as a ``CallToolResult``, checked against the tool's own outputSchema where
        the version carries structured results."""
        structured = message.version in self.structured
        result = call_tool_result(output, structured)
        tool_io = self.tools.io(tool.name) if structured else None
        if tool_io is not None:
            check_tool_output(tool_io, result)  # the tool's own outputSchema, on the way back
        return result
