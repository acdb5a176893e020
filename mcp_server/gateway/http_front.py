"""`mcp-server gateway --listen http://HOST:PORT/mcp`: MCP Streamable HTTP clients, the chain, an upstream behind.

Each stateful client session (``Mcp-Session-Id``, issued when ``initialize`` succeeds) gets its
own upstream session (a STDIO server serves one client); idle sessions are reaped, DELETE ends
one, and past the cap a new one is refused. Under 2026-07-28 (no sessions) one upstream serves
every request. What the upstream sends besides responses reaches the client on the response's
SSE stream or the session's GET stream (spec: transports, "Streamable HTTP"). The HTTP checks
are the transport's (``transport.http``); the frame checks are the gateway's one chain. A POST
waits for its reply, or for the end of its session: a request the client cancelled, or left
pending when it ended the session, ends with no reply (202); the upstream's end answers it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import secrets
import signal
import socket
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..chain.boundary import error_reply
from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..core.settings import SetupError
from ..core.types import CLIENT_TO_SERVER, Direction, Frame, Reply, RequestId, Session
from ..execution.approvals import ApprovalBook
from ..execution.peer import PeerChannel
from ..execution.policy import Policy
from ..observe.events import EventLog
from ..observe.metrics import Metrics
from ..registry.schemas import SchemaRegistry
from ..transport.http import (
    PostAccepts,
    Receive,
    Scope,
    Send,
    accepts_event_stream,
    allowed_hosts,
    check_post,
    host_allowed,
    is_stateless,
    read_body,
    refuse,
    request_headers,
    respond,
    send_reply,
    serve_http,
    serve_metrics,
    sse_event,
)
from .config import GatewayConfig
from .deadlines import CallDeadlines
from .run import (
    Checks,
    approve_call,
    claimed,
    document_of,
    end_pending,
    expire_call,
    final_report,
    needs_approval,
    new_report,
    publish,
    session_chain,
)
from .upstream import Upstream

__all__ = ["FrontOptions", "GatewayHttpApp", "parse_listen_url", "run_gateway_http"]

log = logging.getLogger("mcp_server.gateway")

# Server messages waiting for a GET stream that is not open yet. Progress and logging are never
# dropped while the session lives; past this many, the oldest go (and the drop is logged).
_BACKLOG = 10_000


@dataclass(frozen=True, slots=True, kw_only=True)
class FrontOptions:
    path: str = "/mcp"
    allowed_hosts: tuple[str, ...] = ()
    max_sessions: int = 100
    idle_seconds: float = 600.0
    max_frame_bytes: int


def parse_listen_url(value: str) -> tuple[str, int, str]:
    """``http://HOST:PORT[/PATH]`` → (host, port, path); the path defaults to ``/mcp``."""
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        port, parts = None, None
    if parts is None or parts.scheme != "http" or not parts.hostname or port is None or parts.query:
        raise SetupError(f"--listen must be stdio, unix:PATH or http://HOST:PORT/PATH, got {value!r}")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return host, port, parts.path.rstrip("/") or "/mcp"


class _Stream:
    """Where a server message goes: one SSE response (a POST's, or the session's GET).

    Items are ``(raw, last)``; ``last`` ends the response. ``None`` ends it with nothing more:
    ``cancelled``, the request it waited for will not be answered (the client cancelled it, or
    ended its session), else nothing can answer it any more (the upstream is gone).
    """

    __slots__ = ("cancelled", "queue", "sse")

    def __init__(self, *, sse: bool) -> None:
        self.sse = sse
        self.cancelled = False
        self.queue: asyncio.Queue[tuple[bytes, bool] | None] = asyncio.Queue()

    def put(self, raw: bytes, *, last: bool = False) -> None:
        self.queue.put_nowait((raw, last))

    def end(self, *, cancelled: bool = False) -> None:
        self.cancelled = cancelled
        self.queue.put_nowait(None)


def _with_id(reply: Reply, request_id: RequestId) -> Reply:
    document = reply.document if reply.document is not None else jsonio.loads(reply.to_bytes())
    return replace(reply, document={**document, "id": request_id}, raw=None)


def _request_id_and_kind(document: Mapping[str, Any]) -> tuple[RequestId | None, bool]:
    """(id, is a request) of a relayed JSON-RPC document."""
    return document.get("id"), "method" in document and "id" in document


class _FrontSession:
    """One client session and its upstream: the chain, the requests awaiting replies, the streams."""

    def __init__(self, upstream: Upstream, checks: Checks, *, stateless: bool = False) -> None:
        self.upstream = upstream
        self.checks = checks
        self.own = PeerChannel(self._ask_upstream, direction=CLIENT_TO_SERVER, prefix="gateway")
        self.chain, self.readiness = session_chain(checks, self.own)
        self.session = Session()
        self.ending: str | None = None  # why the session ends, once it does on this side
        self.stateless = stateless
        self.waiting: dict[RequestId, _Stream] = {}
        self.progress: dict[Any, _Stream] = {}
        self.renamed: dict[RequestId, RequestId] = {}  # stateless: the wire id → the client's id
        self._checking: set[RequestId] = set()  # stateless: the ids of requests in the chain
        self.get_stream: _Stream | None = None
        self.backlog: deque[bytes] = deque()
        self.last_seen = time.monotonic()
        self.closed = asyncio.Event()
        self._pump: asyncio.Task[None] | None = None
        self._wire_ids = itertools.count(1)
        # The policy's per-tool timeouts: the client gets a retryable error, the upstream a cancel.
        self.deadlines = None if checks.policy is None else CallDeadlines(checks.policy, self._expire)
        self._expiries: set[asyncio.Task[None]] = set()
        # Calls held for approval: the gateway asks the client (elicitation) on the call's own stream.
        self.approvals = None if checks.policy is None else ApprovalBook.of(checks.policy)
        self._askers: set[PeerChannel] = set()
        self._answered = asyncio.Event()  # a client's reply to one of the gateway's own requests came
        self._held: set[asyncio.Task[None]] = set()

    async def _ask_upstream(self, raw: bytes) -> None:
        await self.upstream.send(raw, jsonio.loads(raw))

    async def start(self) -> None:
        await self.upstream.start()
        self.checks.report.open_session(self.session, "http (stateless)" if self.stateless else "http")
        if self.checks.events is not None:
            self.checks.events.emit("upstream", session=self.session, status="started")
        self._pump = asyncio.ensure_future(self._from_upstream())

    @property
    def busy(self) -> bool:
        return bool(self.waiting) or self.get_stream is not None

    # -- client → upstream ----------------------------------------------------------------

    async def request(self, frame: Frame, accepts: PostAccepts) -> tuple[Reply | None, _Stream | None]:
        """Run a client frame through the chain; a relayed request returns the stream its reply comes on."""
        self.last_seen = time.monotonic()
        if not self.stateless:
            original = None
            reply = await self.chain(frame)
        else:
            frame, original, wire = self._unique_id(frame)
            if wire is not None:
                self._checking.add(wire)  # the chain may wait for what checks it: its id is taken meanwhile
            try:
                reply = await self.chain(frame)
            finally:
                self._checking.discard(wire)
        if reply is None or not reply.to_peer:
            if reply is not None and original is not None:
                reply = _with_id(reply, original)
            return reply, None
        raw, document = reply.to_bytes(), reply.document
        if document is None:
            document = document_of(raw)  # observe mode passes frames on without their document
        request_id, is_request = _request_id_and_kind(document)
        if not is_request and self._answers_gateway(document):
            return None, None
        if document.get("method") == "notifications/cancelled":
            self._cancelled(document.get("params"))
        stream = None
        if is_request and request_id is not None:
            stream = _Stream(sse=accepts.sse)
            self.waiting[request_id] = stream
            if original is not None:
                self.renamed[request_id] = original
            params = document.get("params")
            meta = params.get("_meta") if isinstance(params, Mapping) else None
            if stream.sse and isinstance(meta, Mapping) and meta.get("progressToken") is not None:
                self.progress[meta["progressToken"]] = stream
            if self.approvals is not None and needs_approval(self.checks, document):
                task = asyncio.ensure_future(self._send_when_approved(raw, document, request_id, stream))
                self._held.add(task)
                task.add_done_callback(self._held.discard)
                return None, stream  # the POST's response carries the question, then the answer
        await self._send(raw, document, request_id, stream)
        return None, stream

    async def _send(
        self, raw: bytes, document: Mapping[str, Any], request_id: RequestId | None, stream: _Stream | None
    ) -> None:
        if self.deadlines is not None:
            self.deadlines.start(document)
        try:
            await self.upstream.send(raw, document)
        except (ConnectionError, OSError):  # the upstream is gone; its pump answers what was pending
            log.warning("gateway: the upstream no longer takes frames")
        if stream is not None and request_id is not None and self.closed.is_set():
            self.waiting.pop(request_id, None)
            stream.end()  # the upstream ended meanwhile: nothing will answer

    async def _send_when_approved(
        self, raw: bytes, document: Mapping[str, Any], request_id: RequestId, stream: _Stream
    ) -> None:
        """A call held for approval: the client's user is asked on the call's stream; on a refusal the
        client gets it in the upstream's place, else the call goes on."""

        async def ask(data: bytes) -> None:
            stream.put(data)

        assert self.approvals is not None
        peer = PeerChannel(ask, self._next_answer)
        self._askers.add(peer)
        try:
            refusal = await approve_call(document, self.approvals, peer, self.session, self.checks, "http")
        finally:
            self._askers.discard(peer)
        if refusal is None:
            await self._send(raw, document, request_id, stream)
        else:
            self._answer(request_id, refusal)

    def _cancelled(self, params: Any) -> None:
        """The client cancelled a request (settled by the chain, and relayed): its POST ends with no reply."""
        request_id = params.get("requestId") if isinstance(params, Mapping) else None
        if not isinstance(request_id, str | int):
            return
        stream = self.waiting.pop(request_id, None)
        if stream is not None:
            self._forget(request_id, stream)
            stream.end(cancelled=True)

    def _answers_gateway(self, document: Mapping[str, Any]) -> bool:
        """A client's reply to the gateway's own request (an approval's elicitation): it goes no further."""
        request_id = document.get("id")
        if any(peer.deliver(request_id, document) for peer in list(self._askers)):
            self._answered.set()
            return True
        return False

    async def _next_answer(self) -> bool:
        """Wait for the client's next reply to the gateway; ``False`` once the session has ended."""
        if self.closed.is_set():
            return False
        self._answered.clear()
        await self._answered.wait()
        return not self.closed.is_set()

    def _unique_id(self, frame: Frame) -> tuple[Frame, RequestId | None, RequestId | None]:
        """Stateless: a request whose id another client's request holds (upstream, or in the chain)
        gets an id of the gateway's (the one case where a valid frame is re-serialised); the reply
        gets its own back. Returns the frame, the client's id when renamed, and the id it goes with."""
        try:
            document = jsonio.loads(frame.raw)
        except jsonio.JSONSyntaxError:
            return frame, None, None
        request_id = document.get("id") if isinstance(document, dict) and "method" in document else None
        if not isinstance(request_id, str | int):
            return frame, None, None
        if request_id not in self.waiting and request_id not in self._checking:
            return frame, None, request_id
        wire = f"gateway-{next(self._wire_ids)}"
        raw = jsonio.dumps({**document, "id": wire})
        return frame._replace(raw=raw, size=len(raw)), request_id, wire

    # -- upstream → client ----------------------------------------------------------------

    async def _from_upstream(self) -> None:
        try:
            async for raw, size in self.upstream.frames():
                frame = Frame(
                    raw=raw,
                    size=size,
                    transport="upstream",
                    session=self.session,
                    direction=Direction.SERVER_TO_CLIENT,
                )
                reply = await self.chain(frame)
                if self.session.protocol_version is not None and hasattr(self.upstream, "note_version"):
                    self.upstream.note_version(self.session.protocol_version)
                if reply is None:
                    continue
                if not reply.to_peer:  # the chain answers the upstream itself (an invalid request of its own)
                    await self.upstream.send(reply.to_bytes(), reply.document)
                    continue
                if not (self.own.asking and claimed(self.own, reply)):  # not the reply to the gateway's own request
                    self._route(reply)
        finally:
            if self.ending is None:  # the upstream is gone: nobody else will answer what the client waits for
                await self._end_pending("upstream_gone")
            self.closed.set()
            self._end_streams()

    def _route(self, reply: Reply) -> None:
        raw = reply.to_bytes()
        document = reply.document if reply.document is not None else document_of(raw)
        if not document:
            log.warning("gateway: an upstream frame that is no JSON-RPC object was not delivered")
            return
        request_id = document.get("id")
        if "method" not in document:  # a response: to the request it answers, and its stream ends
            self.last_seen = time.monotonic()  # idle time counts from the last reply, not the request
            if self.deadlines is not None:
                self.deadlines.answered(document)
            if request_id is None or not self._answer(request_id, Reply(raw=raw, document=document)):
                log.warning("gateway: a response to no waiting request (id %r)", request_id)
            return
        self._notify(raw, document)

    def _answer(self, request_id: RequestId, reply: Reply) -> bool:
        """The last message of the POST that waits for ``request_id`` (under the client's own id);
        ``False`` when no POST waits for it."""
        stream = self.waiting.pop(request_id, None)
        if stream is None:
            return False
        original = self._forget(request_id, stream)
        stream.put((reply if original is None else _with_id(reply, original)).to_bytes(), last=True)
        return True

    def _forget(self, request_id: RequestId, stream: _Stream) -> RequestId | None:
        """A POST's request is answered or ended: its progress tokens go; returns the client's own id
        of a renamed request."""
        for token in [token for token, held in self.progress.items() if held is stream]:
            del self.progress[token]
        return self.renamed.pop(request_id, None)

    def _expire(self, request_id: RequestId, tool: str) -> None:
        task = asyncio.ensure_future(self._answer_expired(request_id, tool))
        self._expiries.add(task)
        task.add_done_callback(self._expiries.discard)

    async def _answer_expired(self, request_id: RequestId, tool: str) -> None:
        """Past the tool's timeout: the waiting POST gets ``TOOL_TIMEOUT`` (retryable) and its stream
        ends; the upstream is told to stop."""
        expired = expire_call(self.session, self.checks, request_id, tool, "http")
        if expired is None:
            return  # answered or cancelled meanwhile
        cancel, answer = expired
        if answer is not None:
            self._answer(request_id, answer)
        with contextlib.suppress(ConnectionError, OSError):
            await self.upstream.send(jsonio.dumps(cancel), cancel)

    def _notify(self, raw: bytes, document: Mapping[str, Any]) -> None:
        """A server request or notification: on the stream of the request it belongs to, else on
        an open POST stream, else the GET stream, else kept until a GET stream opens."""
        stream: _Stream | None = None
        params = document.get("params")
        if document.get("method") == "notifications/progress" and isinstance(params, Mapping):
            stream = self.progress.get(params.get("progressToken"))
        if stream is None:
            open_posts = [held for held in self.waiting.values() if held.sse]
            if self.stateless and len(open_posts) != 1:
                # The requests in flight are different clients': a message of no known request goes
                # to none of them rather than to the wrong one.
                log.warning("gateway: a stateless server message of no known request was not delivered")
                return
            stream = open_posts[-1] if open_posts else self.get_stream
        if stream is not None:
            stream.put(raw)
            return
        if len(self.backlog) >= _BACKLOG:
            self.backlog.popleft()
            log.warning("gateway: session backlog full; the oldest server message was dropped")
        self.backlog.append(raw)

    def open_get_stream(self) -> _Stream:
        stream = _Stream(sse=True)
        while self.backlog:
            stream.put(self.backlog.popleft())
        self.get_stream = stream
        return stream

    def _end_streams(self, *, cancelled: bool = False) -> None:
        self._answered.set()  # a question the gateway asked will not be answered now
        for stream in self.waiting.values():
            stream.end(cancelled=cancelled)
        self.waiting.clear()
        self.progress.clear()
        if self.get_stream is not None:
            self.get_stream.end()
            self.get_stream = None

    async def _end_pending(self, reason: str) -> None:
        """The session ends (``reason``): what still waits is settled as ``end_pending`` says; a POST
        whose request gets no answer ends with none."""
        self.readiness.close()
        cancels, answers = end_pending(self.session, self.checks, "http", reason)
        for request_id, rendered in answers:
            self._answer(request_id, rendered)
        if reason != "upstream_gone":
            for cancel in cancels:
                with contextlib.suppress(ConnectionError, OSError):
                    await self.upstream.send(jsonio.dumps(cancel), cancel)
        self._end_streams(cancelled=reason == "client_closed")

    async def close(self, reason: str = "client_closed") -> None:
        """End the upstream session (``reason``: the client ended it, or the gateway stops): what is
        pending is settled, the upstream's process stopped and reaped, every stream ended."""
        if self.ending is None and not self.closed.is_set():
            self.ending = reason
            await self._end_pending(reason)
        if self._pump is not None:
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pump
        if self.deadlines is not None:
            self.deadlines.close()
        for task in [*self._expiries, *self._held]:
            task.cancel()
        self._end_streams()
        self.closed.set()
        exit_code = await self.upstream.close()
        if self.checks.events is not None:
            self.checks.events.emit("upstream", session=self.session, status="exited", detail={"exit_code": exit_code})


class GatewayHttpApp:
    """The ASGI application of the gateway's HTTP front."""

    def __init__(
        self,
        new_upstream: Callable[[], Upstream],
        checks: Checks,
        options: FrontOptions,
        *,
        metrics: Metrics | None = None,
    ) -> None:
        self.new_upstream = new_upstream
        self.checks = checks
        self._refuse = functools.partial(refuse, events=checks.events)  # a refusal is a frame in the log
        self.metrics = metrics
        self.options = options
        self.allowed = allowed_hosts(options.allowed_hosts)
        self.sessions: dict[str, _FrontSession] = {}
        self._stateless: _FrontSession | None = None
        self._opening = 0  # sessions whose initialize is in flight: they count against the cap
        self._closing: set[asyncio.Task[None]] = set()
        self._starting = asyncio.Lock()

    @property
    def registry(self) -> SchemaRegistry:
        return self.checks.registry

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = request_headers(scope)
        path = scope["path"].rstrip("/") or "/"
        if not host_allowed(self.allowed, headers):
            await self._refuse(send, CanonicalError.HOST_NOT_ALLOWED)
        elif path == "/metrics" and path != self.options.path and self.metrics is not None:
            await serve_metrics(scope["method"], send, self.metrics, self._refuse)
        elif path != self.options.path:
            await self._refuse(send, CanonicalError.ROUTE_NOT_FOUND)
        elif scope["method"] == "POST":
            await self._post(receive, send, headers)
        elif scope["method"] == "GET":
            await self._get(receive, send, headers)
        elif scope["method"] == "DELETE":
            await self._delete(send, headers)
        else:
            await self._refuse(
                send, CanonicalError.HTTP_METHOD_NOT_ALLOWED, extra_headers=[(b"allow", b"GET, POST, DELETE")]
            )

    def _session_of(self, headers: Mapping[str, str]) -> _FrontSession:
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            raise Rejection(CanonicalError.SESSION_REQUIRED)
        front = self.sessions.get(session_id)
        if front is None or front.closed.is_set():
            self.sessions.pop(session_id, None)
            raise Rejection(CanonicalError.UNKNOWN_SESSION)
        announced = headers.get("mcp-protocol-version")
        if announced is not None and announced not in self.registry.versions:
            raise Rejection(
                CanonicalError.UNSUPPORTED_PROTOCOL_VERSION,
                [{"path": "", "msg": f"MCP-Protocol-Version {announced!r} is not a known version"}],
            )
        return front

    async def _post(self, receive: Receive, send: Send, headers: Mapping[str, str]) -> None:
        try:
            accepts = check_post(headers)
            front = self._session_of(headers) if "mcp-session-id" in headers else None
        except Rejection as rejection:
            return await self._refuse(send, rejection.error, rejection.errors)
        raw, size = await read_body(receive, headers, self.options.max_frame_bytes)
        if front is None:
            return await self._post_without_session(send, raw, size, headers, accepts)
        frame = Frame(raw=raw, size=size, transport="http", session=front.session, headers=headers)
        reply, stream = await front.request(frame, accepts)
        await self._answer(send, reply, stream, accepts, stateless=is_stateless(self.registry, front.session, headers))

    async def _post_without_session(
        self, send: Send, raw: bytes, size: int, headers: Mapping[str, str], accepts: PostAccepts
    ) -> None:
        """``initialize`` opens a session; anything else (2026-07-28 has no sessions) goes to the
        one shared upstream."""
        try:
            document = jsonio.loads(raw) if size <= self.options.max_frame_bytes else None
        except jsonio.JSONSyntaxError:
            return await send_reply(send, error_reply(Rejection(CanonicalError.PARSE_ERROR)), accepts)
        if isinstance(document, dict) and document.get("method") == "initialize":
            return await self._initialize(send, raw, size, headers, accepts)
        # Anything else without a session is the stateless protocol's, or the upstream's to refuse.
        try:
            front = await self._stateless_session()
        except SetupError as exc:
            log.error("upstream: %s", exc)
            return await send_reply(send, error_reply(Rejection(CanonicalError.UPSTREAM_UNAVAILABLE)), accepts)
        frame = Frame(raw=raw, size=size, transport="http", session=front.session, headers=headers)
        reply, stream = await front.request(frame, accepts)
        await self._answer(send, reply, stream, accepts, stateless=is_stateless(self.registry, front.session, headers))

    async def _stateless_session(self) -> _FrontSession:
        async with self._starting:  # concurrent first requests share one upstream, started once
            if self._stateless is None or self._stateless.closed.is_set():
                front = _FrontSession(self.new_upstream(), self.checks, stateless=True)
                await front.start()
                self._stateless = front
        return self._stateless

    async def _initialize(
        self, send: Send, raw: bytes, size: int, headers: Mapping[str, str], accepts: PostAccepts
    ) -> None:
        """A new session with its own upstream; its id goes out with the reply to ``initialize``."""
        self._reap()
        if len(self.sessions) + self._opening >= self.options.max_sessions:
            return await self._refuse(send, CanonicalError.TOO_MANY_SESSIONS)
        front = _FrontSession(self.new_upstream(), self.checks)
        front.session.id = secrets.token_hex(16)
        self._opening += 1
        try:
            await front.start()
            frame = Frame(raw=raw, size=size, transport="http", session=front.session, headers=headers)
            reply, stream = await front.request(frame, accepts)
        except SetupError as exc:
            log.error("upstream: %s", exc)
            return await send_reply(send, error_reply(Rejection(CanonicalError.UPSTREAM_UNAVAILABLE)), accepts)
        finally:
            self._opening -= 1
        if stream is None:  # refused by the chain: no session
            await front.close()
            return await self._answer(send, reply, None, accepts)
        self.sessions[front.session.id] = front
        await self._answer(send, None, stream, accepts, [(b"mcp-session-id", front.session.id.encode())])
        version = front.session.protocol_version
        if version is None or version in self.registry.stateless_versions:  # it failed, or needs no session
            self.sessions.pop(front.session.id, None)
            await front.close()

    async def _answer(
        self,
        send: Send,
        reply: Reply | None,
        stream: _Stream | None,
        accepts: PostAccepts,
        extra: list[tuple[bytes, bytes]] | None = None,
        *,
        stateless: bool = False,
    ) -> None:
        """The HTTP response to a POST: the chain's own reply, 202, or what comes on ``stream``; a
        reply in one piece takes its status by the rules of the request's version, the upstream's own too."""
        extra = extra or []
        if stream is None:
            if reply is None:  # a notification or a response, relayed: accepted
                return await respond(send, 202, b"", None, extra)
            return await send_reply(send, reply, accepts, extra, stateless=stateless)
        first = await stream.queue.get()
        if first is None and stream.cancelled:  # no reply will come, and the client asked for none
            return await respond(send, 202, b"", None, extra)
        if first is None:
            unavailable = error_reply(Rejection(CanonicalError.UPSTREAM_UNAVAILABLE))
            return await send_reply(send, unavailable, accepts, extra, stateless=stateless)
        raw, last = first
        if last:  # the reply came first: the whole response in one piece
            return await send_reply(send, Reply(raw=raw), accepts, extra, stateless=stateless)
        # Messages before the reply: an SSE stream, one event each, ended by the reply.
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"), *extra],
            }
        )
        item: tuple[bytes, bool] | None = first
        while item is not None:
            raw, last = item
            await send({"type": "http.response.body", "body": sse_event(raw), "more_body": not last})
            if last:
                return
            item = await stream.queue.get()
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _get(self, receive: Receive, send: Send, headers: Mapping[str, str]) -> None:
        """The session's stream of server messages that belong to no request (one per session)."""
        try:
            if not accepts_event_stream(headers):
                raise Rejection(CanonicalError.NOT_ACCEPTABLE)
            front = self._session_of(headers)
        except Rejection as rejection:
            return await self._refuse(send, rejection.error, rejection.errors)
        if front.get_stream is not None:
            return await self._refuse(send, CanonicalError.STREAM_ALREADY_OPEN)
        stream = front.open_get_stream()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")],
            }
        )
        await send({"type": "http.response.body", "body": b": stream open\n\n", "more_body": True})
        gone = asyncio.ensure_future(_disconnected(receive))
        try:
            while True:
                getting = asyncio.ensure_future(stream.queue.get())
                await asyncio.wait({getting, gone}, return_when=asyncio.FIRST_COMPLETED)
                if not getting.done():
                    getting.cancel()
                    return  # the client went away
                item = getting.result()
                if item is None:
                    break
                await send({"type": "http.response.body", "body": sse_event(item[0]), "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            gone.cancel()
            if front.get_stream is stream:
                front.get_stream = None
                front.last_seen = time.monotonic()

    async def _delete(self, send: Send, headers: Mapping[str, str]) -> None:
        try:
            front = self._session_of(headers)
        except Rejection as rejection:
            return await self._refuse(send, rejection.error, rejection.errors)
        self.sessions.pop(front.session.id, None)
        await front.close()
        await respond(send, 204, b"", None)

    def _reap(self) -> None:
        """Close the sessions idle past the timeout (no request in flight, no GET stream open)."""
        now = time.monotonic()
        for session_id, front in list(self.sessions.items()):
            if front.closed.is_set() or (not front.busy and now - front.last_seen > self.options.idle_seconds):
                del self.sessions[session_id]
                closing = asyncio.ensure_future(front.close())  # the upstream's grace period runs apart
                self._closing.add(closing)
                closing.add_done_callback(self._closing.discard)

    async def reap_forever(self) -> None:
        interval = max(0.05, min(self.options.idle_seconds / 4, 30.0))
        while True:
            await asyncio.sleep(interval)
            self._reap()

    async def close(self) -> None:
        fronts = list(self.sessions.values()) + ([self._stateless] if self._stateless is not None else [])
        self.sessions.clear()
        self._stateless = None
        await asyncio.gather(
            *(front.close("gateway_stopped") for front in fronts), *self._closing, return_exceptions=True
        )


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def run_gateway_http(
    new_upstream: Callable[[], Upstream],
    listener: socket.socket,
    *,
    registry: SchemaRegistry,
    config: GatewayConfig,
    options: FrontOptions,
    runs_dir: Path,
    on_ready: Callable[[], None] = lambda: None,
    policy: Policy | None = None,
    events: EventLog | None = None,
) -> int:
    """Serve the HTTP front until SIGINT/SIGTERM; one report for every session (SIGUSR1 writes it).

    The policy's rules apply as in every front; a call that needs approval is asked of its client
    (an elicitation request on the call's event stream) when the client declared elicitation and
    takes event streams, and is denied otherwise (approval fails closed)."""
    report = new_report(new_upstream().name, config, policy, events)
    checks = Checks(registry, config, report, options.max_frame_bytes, policy, events)
    metrics = None
    if events is not None:
        metrics = Metrics(registry)
        events.count_with(metrics)
    app = GatewayHttpApp(new_upstream, checks, options, metrics=metrics)
    reaper = asyncio.ensure_future(app.reap_forever())
    final = final_report(report, runs_dir)
    try:
        await serve_http(
            app,
            listener,
            on_ready=on_ready,
            signals=[(signal.SIGUSR1, lambda: publish(report, runs_dir))],
            on_signal=final,
            on_stop=app.close,
        )
    finally:
        reaper.cancel()
        await app.close()
        publish(report, runs_dir)
    return 0
