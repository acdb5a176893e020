"""`mcp-server gateway`: clients on STDIO or a Unix socket, the chain in both directions, an upstream behind.

Client → upstream frames are checked as client messages, upstream → client frames as server
messages, in one ``Session``. When the upstream ends first, every request still pending gets
``UPSTREAM_UNAVAILABLE`` and the gateway exits non-zero; when the client ends first, the
upstream is stopped (SIGTERM, then SIGKILL) and reaped. The report is written either way; on
SIGINT/SIGTERM first of all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from .. import jsonio
from ..approvals import ApprovalBook
from ..chain import build_chain
from ..error_boundary import render_rejection
from ..errors import CanonicalError, Rejection
from ..events import EventLog
from ..peer import PeerChannel
from ..policy import Policy, policy_stage
from ..registry import SchemaRegistry
from ..settings import SetupError
from ..transport.http import accepts_event_stream
from ..transport.ndjson import LineSplitter
from ..transport.signals import stop_on_signals
from ..transport.stdio import open_writer, start_reader
from ..transport.unix_socket import accept_until_stopped, chunks_of
from ..types import Direction, Frame, Handler, Message, MessageKind, Reply, RequestId, Session
from .config import GatewayConfig
from .deadlines import CallDeadlines
from .relay import emit, relay, track_session, verdict
from .report import ConformanceReport, render_table
from .tools import UpstreamTools
from .upstream import Upstream

__all__ = [
    "Checks",
    "approve_call",
    "expire_call",
    "final_report",
    "needs_approval",
    "new_report",
    "publish",
    "run_gateway",
    "run_gateway_unix",
    "session_chain",
    "unavailable_replies",
]

log = logging.getLogger("mcp_server.gateway")


class Checks(NamedTuple):
    """What every session of one gateway run shares: the schemas, the rules, the report, the limit."""

    registry: SchemaRegistry
    config: GatewayConfig
    report: ConformanceReport
    max_frame_bytes: int
    policy: Policy | None = None
    events: EventLog | None = None


async def run_gateway(
    upstream: Upstream,
    *,
    registry: SchemaRegistry,
    config: GatewayConfig,
    max_frame_bytes: int,
    runs_dir: Path,
    stdin_fd: int = 0,
    stdout_fd: int = 1,
    policy: Policy | None = None,
    events: EventLog | None = None,
) -> int:
    """One client on STDIO, one upstream: returns the exit status (non-zero when the upstream died)."""
    report = new_report(upstream.name, config, policy, events)
    client = await open_writer(stdout_fd)  # the client's side of STDIO: JSON-RPC frames only, one per line
    final = final_report(report, runs_dir)

    async def write(data: bytes) -> None:
        with contextlib.suppress(BrokenPipeError):  # the client closed stdout: what it would read is dropped
            await client.send(data + b"\n")

    with stop_on_signals((signal.SIGUSR1, lambda: publish(report, runs_dir)), on_stop=final) as stop:
        try:
            return await _session(
                upstream,
                start_reader(stdin_fd).get,
                write,
                transport="stdio",
                checks=Checks(registry, config, report, max_frame_bytes, policy, events),
                stop=stop,
            )
        finally:
            final()
            await client.close(stop)


async def run_gateway_unix(
    new_upstream: Callable[[], Upstream],
    listener: socket.socket,
    *,
    registry: SchemaRegistry,
    config: GatewayConfig,
    max_frame_bytes: int,
    runs_dir: Path,
    on_ready: Callable[[], None] = lambda: None,
    policy: Policy | None = None,
    events: EventLog | None = None,
) -> int:
    """Clients on a Unix socket: each connection is its own session with its own upstream (a
    STDIO server serves one client). Runs until SIGINT/SIGTERM; one report for every session."""
    report = new_report(new_upstream().name, config, policy, events)
    checks = Checks(registry, config, report, max_frame_bytes, policy, events)
    final = final_report(report, runs_dir)
    with stop_on_signals((signal.SIGUSR1, lambda: publish(report, runs_dir)), on_stop=final) as stop:

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            async def write(data: bytes) -> None:
                writer.write(data + b"\n")
                await writer.drain()

            try:
                await _session(new_upstream(), chunks_of(reader), write, transport="socket", checks=checks, stop=stop)
            except SetupError as exc:
                log.error("upstream: %s", exc)

        try:
            await accept_until_stopped(listener, connection, stop=stop, on_ready=on_ready)
        finally:
            final()
    return 0


async def _session(
    upstream: Upstream,
    next_chunk: Callable[[], Awaitable[bytes]],
    write: Callable[[bytes], Awaitable[None]],
    *,
    transport: str,
    checks: Checks,
    stop: asyncio.Event,
) -> int:
    """One client and one upstream, both directions through the chain, until either side ends."""
    max_frame_bytes, policy, events = checks.max_frame_bytes, checks.policy, checks.events
    chain = session_chain(checks)
    session = Session()
    await upstream.start()
    if events is not None:
        events.emit("upstream", session=session, status="started")

    async def deliver(reply: Reply | None, *, towards_upstream: bool) -> None:
        if reply is None:
            return
        if towards_upstream:
            await upstream.send(reply.to_bytes(), reply.document)
        else:
            await write(reply.to_bytes())

    expiries: set[asyncio.Task[None]] = set()

    async def expire(request_id: RequestId, tool: str) -> None:
        """Past the tool's timeout: the upstream is told to stop, the client gets a retryable error."""
        cancel, answer = expire_call(session, checks, request_id, tool, transport)
        with contextlib.suppress(ConnectionError, OSError):
            await upstream.send(jsonio.dumps(cancel), cancel)
        with contextlib.suppress(ConnectionError, OSError):
            await deliver(answer, towards_upstream=False)

    def on_expire(request_id: RequestId, tool: str) -> None:
        task = asyncio.ensure_future(expire(request_id, tool))
        expiries.add(task)
        task.add_done_callback(expiries.discard)

    deadlines = None if policy is None else CallDeadlines(policy, on_expire)
    splitter = LineSplitter(max_frame_bytes)
    ended = False

    async def pump() -> bool:
        """Read and handle one more chunk from the client; ``False`` at end of input."""
        nonlocal ended
        chunk = await next_chunk()
        ended = not chunk
        for raw, size in splitter.feed(chunk) if chunk else splitter.close():
            frame = Frame(
                raw=raw, size=size, transport=transport, session=session, direction=Direction.CLIENT_TO_SERVER
            )
            reply = await chain(frame)
            if reply is None or not reply.to_peer:
                await deliver(reply, towards_upstream=False)
            elif not _answers_gateway(peer, reply.document):
                await to_upstream(reply)
        return not ended

    peer = PeerChannel(write, pump)
    approvals = None if policy is None else ApprovalBook.of(policy)

    async def to_upstream(reply: Reply) -> None:
        """A checked client frame goes on; a tool call that needs approval waits for it first."""
        document = reply.document
        if approvals is not None and document is not None and needs_approval(checks, document):
            refusal = await approve_call(document, approvals, peer, session, checks, transport)
            if refusal is not None:
                await deliver(refusal, towards_upstream=False)
                return
        if deadlines is not None:
            deadlines.start(document)
        await deliver(reply, towards_upstream=True)

    async def from_client() -> None:
        while not ended and await pump():
            pass

    async def from_upstream() -> None:
        async for raw, size in upstream.frames():
            if deadlines is not None and deadlines.is_late(raw):
                continue  # the client was already told this call timed out
            frame = Frame(
                raw=raw, size=size, transport="upstream", session=session, direction=Direction.SERVER_TO_CLIENT
            )
            reply = await chain(frame)
            if session.protocol_version is not None and hasattr(upstream, "note_version"):
                upstream.note_version(session.protocol_version)
            towards_upstream = reply is None or not reply.to_peer
            if not towards_upstream and deadlines is not None and reply is not None:
                deadlines.answered(reply.document)
            await deliver(reply, towards_upstream=towards_upstream)

    client_task = asyncio.ensure_future(from_client())
    upstream_task = asyncio.ensure_future(from_upstream())
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait({client_task, upstream_task, stopping}, return_when=asyncio.FIRST_COMPLETED)
    status = 0
    if upstream_task.done() and not client_task.done():
        # The upstream went away first: nobody will answer what the client is waiting for.
        for _, rendered in unavailable_replies(session, checks, transport):
            with contextlib.suppress(ConnectionError, OSError):
                await deliver(rendered, towards_upstream=False)
        session.pending.clear()
        status = 1
    if deadlines is not None:
        deadlines.close()
    closing: asyncio.Future[int | None] | None = None
    if client_task.done() and not upstream_task.done() and not stopping.done():
        # The client has said all it will (stdio shutdown: it closed its input). The upstream gets the
        # same end of input, answers what it was asked, and exits; its last frames still reach the
        # client. Bounded: close() escalates to SIGTERM, then SIGKILL.
        closing = asyncio.ensure_future(upstream.close())
        await asyncio.wait({upstream_task, stopping}, return_when=asyncio.FIRST_COMPLETED)
    for task in (client_task, upstream_task, stopping, *expiries):
        task.cancel()
    exit_code = await (closing if closing is not None else upstream.close())
    if events is not None:
        events.emit("upstream", session=session, status="exited", detail={"exit_code": exit_code})
    if status and exit_code:
        status = exit_code if 0 < exit_code < 126 else 1
    log.info("upstream exited with %s", exit_code)
    return status


def _can_elicit(policy: Policy) -> Callable[[Frame], bool]:
    """Whether the gateway can ask the client of a call to approve it: the client declared
    elicitation, the policy lets approvals go that way, and (over HTTP) the response to the call
    can carry a request (an event stream)."""

    def can(frame: Frame) -> bool:
        session = frame.session
        return (
            policy.approval_by_elicitation
            and "elicitation" in (session.client_capabilities or {})
            and (frame.headers is None or accepts_event_stream(frame.headers))
        )

    return can


def needs_approval(checks: Checks, document: Mapping[str, Any]) -> bool:
    """A relayed ``tools/call`` of a tool the policy holds for approval."""
    policy = checks.policy
    return policy is not None and _is_tool_call(document) and policy.rule_for(document["params"]["name"]).approval


async def approve_call(
    document: Mapping[str, Any], book: ApprovalBook, peer: PeerChannel, session: Session, checks: Checks, transport: str
) -> Reply | None:
    """Hold a ``tools/call`` until its client's user approves it (an elicitation request through
    ``peer``) or the deadline passes: ``None`` when approved, else the refusal to answer the client with."""
    request_id, params = document["id"], document["params"]
    arguments = params.get("arguments", {})
    pending = book.hold(params["name"], arguments, session.id)
    asked = asyncio.ensure_future(
        peer.elicit_approval(session)(params["name"], pending.arguments, pending.arguments_sha256)
    )
    try:
        await book.wait(pending, also=asked)
    except Rejection as refusal:
        return _answer_call(
            session, checks, transport, request_id, params["name"], refusal, Direction.CLIENT_TO_SERVER, "enforced"
        )
    return None


def _is_tool_call(document: Mapping[str, Any] | None) -> bool:
    if document is None or document.get("method") != "tools/call" or "id" not in document:
        return False
    params = document.get("params")
    return isinstance(params, Mapping) and isinstance(params.get("name"), str)


def _answers_gateway(peer: PeerChannel, document: Mapping[str, Any] | None) -> bool:
    """A client's reply to the gateway's own request (an elicitation): it goes no further."""
    return document is not None and "method" not in document and peer.deliver(document.get("id"), document)


def new_report(
    upstream: str, config: GatewayConfig, policy: Policy | None, events: EventLog | None
) -> ConformanceReport:
    """A gateway run's conformance report, redacted as the policy says (the built-in patterns without
    one); with ``events``, each violation is an event of the run's log too."""
    return ConformanceReport(
        upstream=upstream, mode=config.mode.value, redactor=None if policy is None else policy.redactor, events=events
    )


def session_chain(checks: Checks) -> Handler:
    """The one chain of a gateway session, both directions: the checks, the verdict, the relay."""
    registry, config, report, max_frame_bytes, policy, events = checks
    tools = UpstreamTools(registry)
    can_hold = _can_elicit(policy) if policy is not None else None
    return build_chain(
        relay(report),
        registry=registry,
        tools=tools,
        max_frame_bytes=max_frame_bytes,
        policy=None if policy is None else policy_stage(policy, can_hold=can_hold),
        verdict=verdict(config, report, registry),
        after_check=[track_session(config, report, tools)],
        events=events,
    )


def _call_stand_in(session: Session, request_id: RequestId, transport: str) -> Frame:
    """The client's ``tools/call`` of ``request_id``, for the gateway to answer in its place."""
    return Frame(
        raw=b"",
        transport=transport,
        session=session,
        message=Message(kind=MessageKind.REQUEST, id=request_id, method="tools/call"),
        version=session.protocol_version,
    )


def expire_call(
    session: Session, checks: Checks, request_id: RequestId, tool: str, transport: str
) -> tuple[Mapping[str, Any], Reply | None]:
    """A relayed ``tools/call`` past its tool's timeout: no longer pending, counted in the report;
    returns the ``notifications/cancelled`` for the upstream and the retryable error for the client."""
    cancel = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": request_id, "reason": "timeout"},
    }
    timeout = Rejection(CanonicalError.TOOL_TIMEOUT, extra={"retryable": True})
    return cancel, _answer_call(
        session, checks, transport, request_id, tool, timeout, Direction.SERVER_TO_CLIENT, "cancelled"
    )


def _answer_call(
    session: Session,
    checks: Checks,
    transport: str,
    request_id: RequestId,
    tool: str,
    rejection: Rejection,
    direction: Direction,
    action: str,
) -> Reply | None:
    """A relayed ``tools/call`` the gateway answers in the upstream's place: no longer pending,
    counted in the report (``direction``, ``action``), rendered as the version in force prescribes."""
    session.settle(Direction.CLIENT_TO_SERVER, request_id)
    emit(
        checks.report.violation(
            rejection.error.slug,
            direction=direction,
            method="tools/call",
            tool=tool,
            request_id=request_id,
            action=action,
        )
    )
    stand_in = _call_stand_in(session, request_id, transport)
    answer = Rejection(rejection.error, rejection.errors, extra=rejection.extra, frame=stand_in)
    return render_rejection(answer, stand_in, checks.registry)


def unavailable_replies(session: Session, checks: Checks, transport: str) -> list[tuple[RequestId, Reply]]:
    """UPSTREAM_UNAVAILABLE for every client request still pending in ``session`` (the upstream is
    gone: nobody else will answer them), each counted in the report."""
    replies = []
    for (direction, request_id), method in sorted(session.pending.items(), key=lambda item: str(item[0][1])):
        if direction is not Direction.CLIENT_TO_SERVER:
            continue
        stand_in = Frame(
            raw=b"",
            transport=transport,
            session=session,
            message=Message(kind=MessageKind.REQUEST, id=request_id, method=method),
        )
        checks.report.violation(
            "upstream_unavailable",
            direction=Direction.SERVER_TO_CLIENT,
            method=method,
            request_id=request_id,
            action="answered",
        )
        rendered = render_rejection(
            Rejection(CanonicalError.UPSTREAM_UNAVAILABLE, frame=stand_in), stand_in, checks.registry
        )
        if rendered is not None:
            replies.append((request_id, rendered))
    return replies


def final_report(report: ConformanceReport, runs_dir: Path) -> Callable[[], None]:
    """``publish`` the run's report once: at the first SIGINT/SIGTERM (before the gateway waits for
    any upstream, so a supervisor's SIGKILL after its grace still finds it), or at the end."""
    published = False

    def final() -> None:
        nonlocal published
        if not published:
            published = True
            publish(report, runs_dir)

    return final


def publish(report: ConformanceReport, runs_dir: Path) -> None:
    path = report.write(runs_dir)
    sys.stderr.write(render_table(report.to_document()))
    sys.stderr.write(f"mcp:report path={path}\n")
    sys.stderr.flush()
