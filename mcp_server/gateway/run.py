"""`mcp-server gateway`: clients on STDIO or a Unix socket, the chain in both directions, an upstream behind.

Client → upstream frames are checked as client messages, upstream → client frames as server
messages, in one ``Session``; the client's frames in the order it sent them, and the gateway's own
answers never ahead of the upstream's replies to earlier requests. No request is left unanswered:
when the upstream ends first, every request still pending gets ``UPSTREAM_UNAVAILABLE`` and the
gateway exits non-zero; when the client ends its input, the upstream has the grace period to answer
what is pending, the rest is cancelled upstream, and the upstream is stopped (SIGTERM, then
SIGKILL) and reaped. The report is written either way. On SIGINT/SIGTERM the report is written first of all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ..chain.boundary import render_rejection
from ..chain.compose import build_chain
from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..core.settings import SetupError
from ..core.types import (
    CLIENT_TO_SERVER,
    SERVER_TO_CLIENT,
    Direction,
    Frame,
    Handler,
    Message,
    MessageKind,
    Reply,
    RequestId,
    Session,
)
from ..execution.approvals import ApprovalBook
from ..execution.peer import PeerChannel
from ..execution.policy import Policy, policy_stage
from ..observe.events import EventLog
from ..observe.report import ConformanceReport, render_table
from ..registry.schemas import SchemaRegistry
from ..registry.tools import UpstreamTools
from ..transport.http import accepts_event_stream
from ..transport.ndjson import LineSplitter
from ..transport.signals import stop_on_signals
from ..transport.stdio import open_writer, start_reader
from ..transport.unix_socket import accept_until_stopped, chunks_of
from .config import GatewayConfig
from .deadlines import CallDeadlines
from .readiness import Readiness
from .relay import emit, relay, track_session, verdict
from .upstream import Upstream

__all__ = [
    "Checks",
    "approve_call",
    "claimed",
    "document_of",
    "end_pending",
    "expire_call",
    "final_report",
    "needs_approval",
    "new_report",
    "publish",
    "run_gateway",
    "run_gateway_unix",
    "session_chain",
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
            publish(report, runs_dir)
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
            publish(report, runs_dir)
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
    return await _NdjsonSession(upstream, next_chunk, write, transport=transport, checks=checks).run(stop)


class _InOrder:
    """The client's side of an NDJSON session: the replies a client reads in request order.

    An answer the gateway makes itself waits until the upstream's replies to that client's earlier
    requests are delivered; what the upstream sends passes at once, in the upstream's own order.
    """

    def __init__(self, session: Session, write: Callable[[bytes], Awaitable[None]], own: PeerChannel) -> None:
        """``own``: the gateway's requests to the upstream, which no answer waits behind."""
        self._session = session
        self._write = write
        self._own = own
        self._held: deque[tuple[frozenset[tuple[Direction, RequestId]], bytes]] = deque()

    async def answer(self, data: bytes) -> None:
        """One of the gateway's own answers: held behind the client's requests pending upstream."""
        earlier = frozenset(
            key for key in self._session.pending if key[0] is CLIENT_TO_SERVER and not self._own.owns(key[1])
        )
        if earlier or self._held:
            self._held.append((earlier, data))
        else:
            await self._write(data)

    async def passed(self, data: bytes) -> None:
        """A frame of the upstream's (or an answer in its place, once it is gone or late): written now,
        then what it was holding back."""
        await self._write(data)
        await self.flush()

    async def flush(self, *, everything: bool = False) -> None:
        """Write the held answers whose earlier requests are settled (all of them: ``everything``)."""
        pending = self._session.pending
        while self._held and (everything or not any(key in pending for key in self._held[0][0])):
            await self._write(self._held.popleft()[1])


class _NdjsonSession:
    """One client (STDIO, or a Unix socket connection) and its upstream."""

    def __init__(
        self,
        upstream: Upstream,
        next_chunk: Callable[[], Awaitable[bytes]],
        write: Callable[[bytes], Awaitable[None]],
        *,
        transport: str,
        checks: Checks,
    ) -> None:
        self.upstream, self.next_chunk, self.transport, self.checks = upstream, next_chunk, transport, checks
        self.session = Session()
        self.own = PeerChannel(self._ask_upstream, direction=CLIENT_TO_SERVER, prefix="gateway")
        self.chain, self.readiness = session_chain(checks, self.own)
        self.out = _InOrder(self.session, write, self.own)
        self.peer = PeerChannel(write, self.pump)  # the gateway's own questions to the client (approvals)
        policy = checks.policy
        self.approvals = None if policy is None else ApprovalBook.of(policy)
        self.deadlines = None if policy is None else CallDeadlines(policy, self._on_expire)
        self.splitter = LineSplitter(checks.max_frame_bytes)
        self.ended = False
        self.heard = asyncio.Event()  # set after each upstream frame is handled
        self.expiries: set[asyncio.Task[None]] = set()

    async def _ask_upstream(self, raw: bytes) -> None:
        await self.upstream.send(raw, jsonio.loads(raw))

    async def run(self, stop: asyncio.Event) -> int:
        events = self.checks.events
        await self.upstream.start()
        self.checks.report.open_session(self.session, self.transport)
        if events is not None:
            events.emit("upstream", session=self.session, status="started")
        client_task = asyncio.ensure_future(self._from_client())
        upstream_task = asyncio.ensure_future(self._from_upstream())
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({client_task, upstream_task, stopping}, return_when=asyncio.FIRST_COMPLETED)
        status = 0
        if upstream_task.done() and not client_task.done():
            status = 1  # the upstream went away first: nobody will answer what the client waits for
            await self._end_pending("upstream_gone", upstream_alive=False)
        elif client_task.done() and not stopping.done():
            await self._grace(upstream_task, stopping)
            await self._end_pending("client_closed", upstream_alive=not upstream_task.done())
        else:
            await self._end_pending("gateway_stopped", upstream_alive=not upstream_task.done())
        closing: asyncio.Future[int | None] | None = None
        if client_task.done() and not upstream_task.done() and not stopping.done():
            # The client has said all it will (stdio shutdown: it closed its input). The upstream gets the
            # same end of input and exits; what it still sends reaches the client. Bounded: close()
            # escalates to SIGTERM, then SIGKILL.
            closing = asyncio.ensure_future(self.upstream.close())
            await asyncio.wait({upstream_task, stopping}, return_when=asyncio.FIRST_COMPLETED)
        for task in (client_task, upstream_task, stopping, *self.expiries):
            task.cancel()
        exit_code = await (closing if closing is not None else self.upstream.close())
        if events is not None:
            events.emit("upstream", session=self.session, status="exited", detail={"exit_code": exit_code})
        if status and exit_code:
            status = exit_code if 0 < exit_code < 126 else 1
        log.info("upstream exited with %s", exit_code)
        return status

    async def _grace(self, upstream_task: asyncio.Future[Any], stopping: asyncio.Future[Any]) -> None:
        """The client ended its input: the upstream, its input still open, has the grace period to
        answer what is pending (a client that pipes its requests in still reads the replies)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.checks.config.grace_seconds
        pending = self.session.pending
        while any(key[0] is CLIENT_TO_SERVER for key in pending) and not (upstream_task.done() or stopping.done()):
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            self.heard.clear()
            heard: asyncio.Future[Any] = asyncio.ensure_future(self.heard.wait())
            await asyncio.wait({heard, upstream_task, stopping}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
            heard.cancel()

    async def _end_pending(self, reason: str, *, upstream_alive: bool) -> None:
        """The session ends (``reason``): what still waits is settled as ``end_pending`` says, the
        held answers go out."""
        self.readiness.close()
        if self.deadlines is not None:
            self.deadlines.close()
        cancels, answers = end_pending(self.session, self.checks, self.transport, reason)
        for cancel in cancels if upstream_alive else ():
            with contextlib.suppress(ConnectionError, OSError):
                await self.upstream.send(jsonio.dumps(cancel), cancel)
        with contextlib.suppress(ConnectionError, OSError):
            for _, answer in answers:
                await self.out.passed(answer.to_bytes())
            await self.out.flush(everything=True)

    async def pump(self) -> bool:
        """Read and handle one more chunk from the client; ``False`` at end of input."""
        chunk = await self.next_chunk()
        self.ended = not chunk
        for raw, size in self.splitter.feed(chunk) if chunk else self.splitter.close():
            frame = Frame(
                raw=raw, size=size, transport=self.transport, session=self.session, direction=CLIENT_TO_SERVER
            )
            reply = await self.chain(frame)  # waits here while the frame cannot be checked yet
            if reply is not None and not reply.to_peer:
                await self.out.answer(reply.to_bytes())
            elif reply is not None and not _answers_gateway(self.peer, reply.document):
                await self._to_upstream(reply)
            await self.out.flush()  # a cancellation settles a request an answer may wait behind
        return not self.ended

    async def _from_client(self) -> None:
        while not self.ended and await self.pump():
            pass

    async def _to_upstream(self, reply: Reply) -> None:
        """A checked client frame goes on; a tool call that needs approval waits for it first."""
        document = reply.document
        if self.approvals is not None and document is not None and needs_approval(self.checks, document):
            refusal = await approve_call(document, self.approvals, self.peer, self.session, self.checks, self.transport)
            if refusal is not None:
                await self.out.answer(refusal.to_bytes())
                return
        if self.deadlines is not None:
            self.deadlines.start(document)
        await self.upstream.send(reply.to_bytes(), reply.document)

    async def _from_upstream(self) -> None:
        upstream = self.upstream
        async for raw, size in upstream.frames():
            frame = Frame(raw=raw, size=size, transport="upstream", session=self.session, direction=SERVER_TO_CLIENT)
            try:
                reply = await self.chain(frame)
                if self.session.protocol_version is not None and hasattr(upstream, "note_version"):
                    upstream.note_version(self.session.protocol_version)
                if reply is None:
                    continue
                if not reply.to_peer:  # the chain answers the upstream itself (an invalid request of its own)
                    await upstream.send(reply.to_bytes(), reply.document)
                    continue
                if self.own.asking and claimed(self.own, reply):
                    continue  # the reply to a request of the gateway's own
                if self.deadlines is not None:
                    self.deadlines.answered(reply.document)
                await self.out.passed(reply.to_bytes())
            finally:
                self.heard.set()

    def _on_expire(self, request_id: RequestId, tool: str) -> None:
        task = asyncio.ensure_future(self._expire(request_id, tool))
        self.expiries.add(task)
        task.add_done_callback(self.expiries.discard)

    async def _expire(self, request_id: RequestId, tool: str) -> None:
        """Past the tool's timeout: the upstream is told to stop, the client gets a retryable error
        (an answer in the upstream's place, at the time its reply would have come)."""
        expired = expire_call(self.session, self.checks, request_id, tool, self.transport)
        if expired is None:
            return  # answered or cancelled meanwhile
        cancel, answer = expired
        with contextlib.suppress(ConnectionError, OSError):
            await self.upstream.send(jsonio.dumps(cancel), cancel)
        if answer is not None:
            with contextlib.suppress(ConnectionError, OSError):
                await self.out.passed(answer.to_bytes())


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


def document_of(raw: bytes) -> Mapping[str, Any]:
    """A frame passed on unchecked (observe mode), as an object; ``{}`` when it is not one."""
    try:
        document = jsonio.loads(raw)
    except jsonio.JSONSyntaxError:
        return {}
    return document if isinstance(document, dict) else {}


def claimed(own: PeerChannel, reply: Reply) -> bool:
    """The upstream's reply to a request of the gateway's own (``own``): it goes no further."""
    document = reply.document if reply.document is not None else document_of(reply.to_bytes())
    return "method" not in document and own.deliver(document.get("id"), document)


def new_report(
    upstream: str, config: GatewayConfig, policy: Policy | None, events: EventLog | None
) -> ConformanceReport:
    """A gateway run's conformance report, redacted as the policy says (the built-in patterns without
    one); with ``events``, each violation is an event of the run's log too."""
    return ConformanceReport(
        upstream=upstream, mode=config.mode.value, redactor=None if policy is None else policy.redactor, events=events
    )


def session_chain(checks: Checks, own: PeerChannel | None = None) -> tuple[Handler, Readiness]:
    """The one chain of a gateway session, both directions: the checks, the verdict, the relay; and
    its waits (``own``: how the gateway asks the upstream for its tools itself)."""
    registry, config, report, max_frame_bytes, policy, events = checks
    tools = UpstreamTools(registry, waits=True)  # a call is checked once its tool is listed
    readiness = Readiness(tools, own, config.check_wait_seconds)
    can_hold = _can_elicit(policy) if policy is not None else None
    chain = build_chain(
        relay(report, tools),
        registry=registry,
        tools=tools,
        max_frame_bytes=max_frame_bytes,
        policy=None if policy is None else policy_stage(policy, can_hold=can_hold),
        verdict=verdict(config, report, registry),
        before_check=[readiness.stage()],
        after_check=[track_session(config, report, tools)],
        events=events,
    )
    return chain, readiness


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
) -> tuple[Mapping[str, Any], Reply | None] | None:
    """A relayed ``tools/call`` past its tool's timeout: abandoned (its reply, should it come, is
    late), counted in the report; returns the ``notifications/cancelled`` for the upstream and the
    retryable error for the client (``None``: the call was answered or cancelled meanwhile)."""
    if (CLIENT_TO_SERVER, request_id) not in session.pending:
        return None
    session.abandon(CLIENT_TO_SERVER, request_id)
    cancel = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": request_id, "reason": "timeout"},
    }
    timeout = Rejection(CanonicalError.TOOL_TIMEOUT, extra={"retryable": True})
    return cancel, _answer_call(session, checks, transport, request_id, tool, timeout, SERVER_TO_CLIENT, "cancelled")


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
    session.settle(CLIENT_TO_SERVER, request_id)
    emit(
        checks.report.violation(
            rejection.error.slug,
            direction=direction,
            method="tools/call",
            tool=tool,
            request_id=request_id,
            action=action,
            session=session,
        )
    )
    stand_in = _call_stand_in(session, request_id, transport)
    answer = Rejection(rejection.error, rejection.errors, extra=rejection.extra, frame=stand_in)
    return render_rejection(answer, stand_in, checks.registry)


_CANCELLED_BECAUSE = {"client_closed": "client closed", "gateway_stopped": "gateway stopped"}


def end_pending(
    session: Session, checks: Checks, transport: str, reason: str
) -> tuple[list[Mapping[str, Any]], list[tuple[RequestId, Reply]]]:
    """The session ends, for ``reason``; every request still pending in it is settled, and returns
    the ``notifications/cancelled`` for the upstream and the answers for the client.

    * ``upstream_gone``: the client's requests get ``UPSTREAM_UNAVAILABLE``, each a violation by the
      upstream (nobody else will answer them);
    * ``gateway_stopped``: the client's requests get ``UPSTREAM_UNAVAILABLE`` too, and are cancelled
      upstream, a violation by nobody;
    * ``client_closed`` (the client ended its session or its input): cancelled upstream, and the
      client, who asked for the end, is sent nothing.

    Each request that ends without its peer's answer, and no violation for it, is listed in the
    report (``unanswered``)."""
    cancels: list[Mapping[str, Any]] = []
    answers: list[tuple[RequestId, Reply]] = []
    for (direction, request_id), method in sorted(session.pending.items(), key=lambda item: str(item[0][1])):
        _, tool = session.settle(direction, request_id)
        if direction is CLIENT_TO_SERVER and reason == "upstream_gone":
            checks.report.violation(
                "upstream_unavailable",
                direction=SERVER_TO_CLIENT,
                method=method,
                tool=tool,
                request_id=request_id,
                action="answered",
                session=session,
            )
        else:
            checks.report.ended_unanswered(session, direction, request_id, method, reason, tool)
        if direction is not CLIENT_TO_SERVER:
            continue
        if reason in _CANCELLED_BECAUSE:
            params = {"requestId": request_id, "reason": _CANCELLED_BECAUSE[reason]}
            cancels.append({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params})
        if reason != "client_closed":
            stand_in = Frame(
                raw=b"",
                transport=transport,
                session=session,
                message=Message(kind=MessageKind.REQUEST, id=request_id, method=method),
            )
            unavailable = Rejection(CanonicalError.UPSTREAM_UNAVAILABLE, frame=stand_in)
            rendered = render_rejection(unavailable, stand_in, checks.registry)
            if rendered is not None:
                answers.append((request_id, rendered))
    return cancels, answers


def final_report(report: ConformanceReport, runs_dir: Path) -> Callable[[], None]:
    """The run's report written at the first SIGINT/SIGTERM, before the gateway waits for any
    upstream, so that a supervisor's SIGKILL after its grace still finds one; ``publish`` at the end
    writes it again, whole (the requests the stop left unanswered included), over the same file."""

    def first() -> None:
        report.write(runs_dir)

    return first


def publish(report: ConformanceReport, runs_dir: Path) -> None:
    path = report.write(runs_dir)
    sys.stderr.write(render_table(report.to_document()))
    sys.stderr.write(f"mcp:report path={path}\n")
    sys.stderr.flush()
