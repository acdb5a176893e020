"""The gateway's Streamable HTTP front: gateway sessions as conversations of the shared HTTP session
manager (``transport/streamable.py``), which does everything about HTTP.

A client session (``initialize`` negotiated a stateful version) gets a gateway session with an
upstream of its own; every request of the stateless 2026-07-28 protocol goes to one shared gateway
session, where a request is known by the exchange (the POST) that carried it, never by what its
client chose: ids and progress tokens another exchange holds are renamed, a cancellation names no
other exchange's request, and what the upstream sends besides replies reaches only the stream of the
request it belongs to (a progress token's, a subscription's, or the only request in flight). A
session's client gets it on the stream of its request, else the session's GET stream, else it waits
for one (spec: transports, "Streamable HTTP").
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import signal
import socket
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..core.replies import error_reply
from ..core.session import Session
from ..core.settings import SetupError
from ..core.types import ERROR_RESPONSE, NOTIFICATION, REQUEST, Frame, Message, Reply, RequestId, is_request_id
from ..execution.access import METADATA_PATH, FrontAuth, Refusal, UpstreamResource
from ..execution.peer import PeerChannel
from ..observe.metrics import CONTENT_TYPE, Metrics
from ..registry.versions import SUBSCRIPTION_ID_META
from ..transport.connection import Connection
from ..transport.http import (
    PostAccepts,
    Receive,
    Scope,
    Send,
    accepts_event_stream,
    refuse,
    respond,
    serve_http,
    text_route,
)
from ..transport.http_client import FORWARDED_AUTHORIZATION
from ..transport.streamable import MAX_HELD_STREAM_BYTES, HttpOptions, Route, Stream, StreamableHttp
from .reports import final_report, publish
from .session import GatewayRun, GatewaySession

__all__ = ["FrontAccess", "GatewayConversations", "run_gateway_http"]

log = logging.getLogger("mcp_server.gateway")

# Server messages waiting for a GET stream that is not open yet: past this many, or past the bytes a
# stream holds for its client, the oldest go (and the drop is logged).
_BACKLOG = 10_000
_renames = itertools.count(1)
_UPSTREAM_REFUSALS = {
    member.mcp_code: member for member in (CanonicalError.UPSTREAM_UNAUTHORIZED, CanonicalError.UPSTREAM_FORBIDDEN)
}


@dataclass(frozen=True, slots=True)
class FrontAccess:
    """Who may use the front (issue 31): its own check of tokens (``auth``), or the upstream's, the
    client authenticating to it through the gateway (``passthrough``); neither: anyone on loopback."""

    auth: FrontAuth | None = None
    passthrough: UpstreamResource | None = None


def _called_tool(raw: bytes) -> str | None:
    """The tool a ``tools/call`` frame names (``None`` for anything else or anything unreadable)."""
    try:
        document = jsonio.loads(raw)
    except jsonio.JSONSyntaxError:
        return None
    if not isinstance(document, dict) or document.get("method") != "tools/call":
        return None
    name = (document.get("params") or {}).get("name") if isinstance(document.get("params"), dict) else None
    return name if isinstance(name, str) else None


def _with_id(reply: Reply, document: Any, request_id: RequestId) -> Reply:
    """``reply`` under the client's own id (a stateless request the gateway renamed)."""
    if not isinstance(document, dict):
        document = jsonio.loads(reply.to_bytes())
    return Reply(document={**document, "id": request_id}, error=reply.error, version=reply.version, code=reply.code)


def _with_token(reply: Reply, message: Message, token: Any) -> Reply:
    """A progress notification under the client's own progress token (a request the gateway renamed)."""
    document = message.document if isinstance(message.document, dict) else jsonio.loads(reply.to_bytes())
    return Reply(document={**document, "params": {**document["params"], "progressToken": token}}, version=reply.version)


def _with_subscription(reply: Reply, message: Message, meta: dict[str, Any], request_id: RequestId) -> Reply:
    """A subscription's notification under the client's own listen id (a request the gateway renamed)."""
    document = message.document if isinstance(message.document, dict) else jsonio.loads(reply.to_bytes())
    params = {**document["params"], "_meta": {**meta, SUBSCRIPTION_ID_META: request_id}}
    return Reply(document={**document, "params": params}, version=reply.version)


class HttpSession:
    """One gateway session as the HTTP front runs it: the client side of its ``GatewaySession`` (the
    POSTs waiting for replies, the streams), and its upstream's pump."""

    ordered = False  # HTTP promises no order across POSTs; an approval is asked beside its call

    def __init__(
        self,
        run: GatewayRun,
        upstream: Connection,
        *,
        stateless: bool,
        stopping: Callable[[], bool],
        access: FrontAccess | None = None,
    ) -> None:
        self.stateless = stateless
        self.access = access or FrontAccess()
        self._stopping = stopping
        self.waiting: dict[RequestId, Stream] = {}  # wire id → the POST that waits for its reply
        self._opened: dict[RequestId, Stream] = {}  # streams a POST in progress has not taken yet
        self.progress: dict[Any, Stream] = {}
        self.renamed: dict[RequestId, RequestId] = {}  # stateless: the wire id → the client's id
        self._checking: set[RequestId] = set()  # stateless: the ids of requests in the chain
        self._tokens: dict[Any, Any] = {}  # stateless: a renamed progress token → the client's own
        self._checking_tokens: set[Any] = set()  # stateless: the progress tokens of requests in the chain
        self._dropping: set[RequestId] = set()  # stateless: requests whose client closed their POST
        self.get_stream: Stream | None = None
        self.backlog: deque[Reply] = deque()
        self._backlog_bytes = 0
        self.ending: str | None = None
        self._closed = False  # the session is over (its upstream ended, or it was closed)
        self._stopped = False  # ``close`` ran
        self._pump: asyncio.Task[None] | None = None
        transport = "http (stateless)" if stateless else "http"
        self.gateway = GatewaySession(run, upstream, lambda _: self, transport=transport)
        self.session: Session = self.gateway.session

    async def start(self) -> None:
        await self.gateway.start()
        self._pump = asyncio.ensure_future(self._from_upstream())

    @property
    def stateful(self) -> bool:
        version = self.session.version
        registry = self.gateway.run.registry
        return not self.stateless and version is not None and version not in registry.stateless_versions

    @property
    def busy(self) -> bool:
        return bool(self.waiting)  # a GET stream held open is no exchange: it does not keep the session

    @property
    def closed(self) -> bool:
        return self._closed

    # -- client → upstream ----------------------------------------------------------------------

    async def post(self, frame: Frame, accepts: PostAccepts) -> Reply | Stream | None:
        """A client frame through the gateway session: its answer, or the stream its reply comes on."""
        if self.access.passthrough is not None:  # what this request makes the gateway send carries it
            FORWARDED_AUTHORIZATION.set((frame.headers or {}).get("authorization"))
        refused = await self._scope_refusal(frame)
        if refused is not None:
            return refused
        original = wire = token = None
        if self.stateless:
            frame, original, wire, token = self._unique_id(frame)
        if wire is not None:
            self._checking.add(wire)  # the chain may wait for what checks it: its id is taken meanwhile
            self._checking_tokens.add(token)
        try:
            handled = await self.gateway.from_client(frame)
        finally:
            self._checking.discard(wire)
            self._checking_tokens.discard(token)
        relayed = handled.relayed
        stream = self._opened.pop(relayed.id, None) if relayed is not None and relayed.id is not None else None
        if stream is None:
            if wire is not None:
                self.renamed.pop(wire, None)
            reply = handled.reply
            return reply if reply is None or original is None else _with_id(reply, reply.document, original)
        assert relayed is not None and relayed.id is not None
        if self._closed and self.waiting.pop(relayed.id, None) is stream:  # the upstream ended meanwhile
            self.renamed.pop(relayed.id, None)
            unavailable = Rejection(CanonicalError.UPSTREAM_UNAVAILABLE)
            return error_reply(unavailable, original or relayed.id, relayed.version)
        if relayed.method == "initialize":  # its reply decides whether this is a session: wait for it
            await self.gateway.readiness.initialized()
        return stream

    async def _scope_refusal(self, frame: Frame) -> Reply | None:
        """A ``tools/call`` whose token lacks a scope the tool needs: 403 with the scopes to ask for
        (MCP authorization, "Scope Challenge Handling"), before anything is relayed."""
        auth = self.access.auth
        if auth is None or not auth.tool_scopes or frame.headers is None:
            return None
        tool = _called_tool(frame.raw)
        admitted = await auth.admit(frame.headers) if tool is not None else None
        refusal = admitted if isinstance(admitted, Refusal) or admitted is None else auth.scope_refusal(admitted, tool)
        if refusal is None:
            return None
        reply = error_reply(refusal.rejection)
        reply.headers = refusal.headers
        return reply

    def _unique_id(self, frame: Frame) -> tuple[Frame, RequestId | None, RequestId | None, Any]:
        """Stateless: a request whose id (or progress token) another client's request holds, upstream
        or in the chain, gets one of the gateway's (the one case where a valid frame is re-serialised);
        the reply and the progress get the client's own back. Returns the frame, the client's id when
        renamed, the id it goes with and its progress token."""
        try:
            document = jsonio.loads(frame.raw)
        except jsonio.JSONSyntaxError:
            return frame, None, None, None
        request_id = document.get("id") if isinstance(document, dict) and "method" in document else None
        if not is_request_id(request_id):
            return frame, None, None, None
        params = document.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        token = token if isinstance(token, str | int) else None
        id_taken = request_id in self.waiting or request_id in self._checking
        token_taken = token is not None and (token in self.progress or token in self._checking_tokens)
        if not id_taken and not token_taken:
            return frame, None, request_id, token
        wire = f"renamed-{next(_renames)}" if id_taken else request_id
        if id_taken:
            self.renamed[wire] = request_id
        if token_taken:
            assert isinstance(params, dict) and isinstance(meta, dict)
            renamed_token = f"renamed-{next(_renames)}"
            self._tokens[renamed_token] = token
            document = {**document, "params": {**params, "_meta": {**meta, "progressToken": renamed_token}}}
            token = renamed_token
        raw = jsonio.dumps({**document, "id": wire})
        return frame._replace(raw=raw), request_id if id_taken else None, wire, token

    def relaying(self, frame: Frame, message: Message) -> None:
        """A request goes upstream: its reply's stream opens (with its progress token's, on SSE)."""
        assert message.id is not None
        sse = frame.headers is not None and accepts_event_stream(frame.headers)
        # A stateless client cancels by closing the request (2026-07-28); a session's client, by a
        # notification (before 2026-07-28 a disconnect is no cancellation).
        dropped = functools.partial(self._dropped, message.id) if self.stateless else None
        stream = self.waiting[message.id] = self._opened[message.id] = Stream(sse=sse, dropped=dropped)
        meta = (message.params or {}).get("_meta")
        if isinstance(meta, dict) and meta.get("progressToken") is not None:
            self.progress[meta["progressToken"]] = stream  # (its progress reaches only an SSE response)

    def cancelled(self, request_id: RequestId) -> bool:
        """The client cancels a request: its POST ends with no reply (202). Stateless, a request is
        cancelled by closing its own POST (2026-07-28 has no client notification over HTTP): a posted
        ``notifications/cancelled`` is an exchange of its own and names no request of its, so it
        cancels nothing (else any client could end another's call by guessing its id)."""
        if self.stateless and request_id not in self._dropping:
            log.warning("gateway: a stateless notifications/cancelled names no request of its exchange; not relayed")
            return False
        stream = self.waiting.pop(request_id, None)
        if stream is not None:
            self._forget(request_id, stream)
            stream.end()
        return True

    async def _dropped(self, request_id: RequestId, stream: Stream) -> None:
        """The client closed the POST of a request still upstream: over STDIO a client cancels by
        ``notifications/cancelled`` (spec: basic/utilities/cancellation), so the upstream is told so
        under the id it knows, through the chain as the client's own; the id is free again."""
        if self._closed or self.waiting.get(request_id) is not stream:
            return  # answered, or the session ended meanwhile
        params = {"requestId": request_id, "reason": "the client closed the request"}
        cancel = jsonio.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params})
        self._dropping.add(request_id)
        try:
            await self.gateway.from_client(Frame(raw=cancel, transport="http", session=self.session))
        finally:
            self._dropping.discard(request_id)

    def asker(self, message: Message) -> PeerChannel:
        """The question goes on the call's own stream; the answer comes in a POST of its own."""
        assert message.id is not None
        stream = self.waiting[message.id]

        async def ask(data: bytes) -> None:
            stream.put(Reply(raw=data))

        return PeerChannel(ask)

    # -- upstream → client ----------------------------------------------------------------------

    async def passed(self, reply: Reply, message: Message | None) -> None:
        """A reply goes to the POST that waits for it (its stream ends); anything else is a server
        message for the stream it belongs to."""
        if message is None:
            log.warning("gateway: an upstream frame that is no JSON-RPC object was not delivered")
        elif message.kind is REQUEST or message.kind is NOTIFICATION:
            self._notify(reply, message)
        elif message.id is None or not self._answer(message, reply):
            log.warning("gateway: a response to no waiting request (id %r)", message.id)

    def _answer(self, message: Message, reply: Reply) -> bool:
        assert message.id is not None
        stream = self.waiting.pop(message.id, None)
        if stream is None:
            return False
        original = self._forget(message.id, stream)
        if original is not None:
            reply = _with_id(reply, message.document if message.kind is not ERROR_RESPONSE else None, original)
        if message.kind is ERROR_RESPONSE and self.access.passthrough is not None:
            reply = self._challenged(reply)
        stream.put(reply, last=True)
        return True

    def _challenged(self, reply: Reply) -> Reply:
        """Passthrough: the upstream's refusal of the client's credentials goes back as its status and
        its ``WWW-Authenticate``, pointing to the gateway's resource metadata (issue 31)."""
        assert self.access.passthrough is not None
        document = reply.document if isinstance(reply.document, dict) else jsonio.loads(reply.to_bytes())
        error = document.get("error") if isinstance(document, dict) else None
        code = error.get("code") if isinstance(error, dict) else None
        member = _UPSTREAM_REFUSALS.get(code) if isinstance(code, int) else None
        if member is None or not isinstance(error, dict):
            return reply
        data = error.get("data")
        challenge = str(data.get("challenge") or "Bearer") if isinstance(data, dict) else "Bearer"
        header = self.access.passthrough.rewrite(challenge).encode()
        return Reply(document=document, error=member, version=reply.version, headers=((b"www-authenticate", header),))

    def _forget(self, request_id: RequestId, stream: Stream) -> RequestId | None:
        """A POST's request is answered or ended: its progress tokens go; returns the client's own id
        of a renamed request."""
        for token in [token for token, held in self.progress.items() if held is stream]:
            del self.progress[token]
            self._tokens.pop(token, None)
        return self.renamed.pop(request_id, None)

    def _notify(self, reply: Reply, message: Message) -> None:
        """On the stream of the request it belongs to (a subscription's, a progress token's), else
        an open POST stream, else the GET stream, else kept until a GET stream opens."""
        params = message.params if isinstance(message.params, dict) else {}
        meta = params.get("_meta")
        if isinstance(meta, dict) and SUBSCRIPTION_ID_META in meta:
            self._to_subscription(reply, message, meta)
            return
        stream: Stream | None = None
        if message.method == "notifications/progress":
            token = params.get("progressToken")
            stream = self.progress.get(token)
            if stream is not None and not stream.sse:  # its POST takes one JSON reply
                if self.stateless:
                    return
                stream = None
            if stream is not None and token in self._tokens:
                reply = _with_token(reply, message, self._tokens[token])
        if stream is None and self.stateless:
            # The requests in flight may be different clients': a message of no known request goes
            # only to the one request in flight (whose exchange it can only be), else to none.
            only = next(iter(self.waiting.values())) if len(self.waiting) == 1 else None
            if only is None or not only.sse:
                log.warning("gateway: a stateless server message of no known request was not delivered")
                return
            stream = only
        if stream is None:
            open_posts = [held for held in self.waiting.values() if held.sse]
            get_stream = self.get_stream if self.get_stream is not None and not self.get_stream.closed else None
            stream = open_posts[-1] if open_posts else get_stream
        if stream is not None:
            stream.put(reply)
            return
        self.backlog.append(reply)
        self._backlog_bytes += len(reply.to_bytes())
        dropped = 0
        while len(self.backlog) > _BACKLOG or (self._backlog_bytes > MAX_HELD_STREAM_BYTES and len(self.backlog) > 1):
            self._backlog_bytes -= len(self.backlog.popleft().to_bytes())
            dropped += 1
        if dropped:
            log.warning("gateway: session backlog full; the oldest server message was dropped")

    def _to_subscription(self, reply: Reply, message: Message, meta: dict[str, Any]) -> None:
        """A notification of a ``subscriptions/listen`` stream goes on that listen request's stream
        only (over STDIO every subscription shares one channel, told apart by this id), under the
        client's own id; one whose stream is gone goes nowhere, never to another client."""
        wire = meta[SUBSCRIPTION_ID_META]
        stream = self.waiting.get(wire) if isinstance(wire, str | int) else None
        if stream is None:
            log.warning("gateway: a notification of no open subscription (id %r) was not delivered", wire)
            return
        original = self.renamed.get(wire)
        stream.put(reply if original is None else _with_subscription(reply, message, meta, original))

    def listen(self) -> Stream | None:
        """The session's GET stream (one at a time), with what waited for it."""
        if self.get_stream is not None and not self.get_stream.closed:
            raise Rejection(CanonicalError.STREAM_ALREADY_OPEN)
        stream = self.get_stream = Stream(sse=True)
        while self.backlog:
            stream.put(self.backlog.popleft())
        self._backlog_bytes = 0
        return stream

    # -- the end --------------------------------------------------------------------------------

    async def _from_upstream(self) -> None:
        try:
            await self.gateway.pump_upstream()
        finally:
            if self.ending is None:  # the upstream is gone: nobody else will answer what the client waits for
                self.ending = "upstream_gone"
                await self.gateway.settle_all("upstream_gone", upstream_alive=False)
            self._closed = True
            self._end_streams()

    def _end_streams(self) -> None:
        for stream in self.waiting.values():
            stream.end()
        self.waiting.clear()
        self.progress.clear()
        if self.get_stream is not None:
            self.get_stream.end()
            self.get_stream = None

    async def close(self) -> None:
        """End the session (the client ended it, it idled out, or the gateway stops): what is pending
        is settled, the upstream stopped and reaped, every stream ended."""
        if self._stopped:
            return  # closed already (DELETE, then the gateway's stop)
        self._stopped = True
        if self.ending is None and not self._closed:
            self.ending = "gateway_stopped" if self._stopping() else "client_closed"
            await self.gateway.settle_all(self.ending, upstream_alive=True)
        if self._pump is not None:
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pump
        self._end_streams()
        self._closed = True
        await self.gateway.close_upstream()


class _Opening:
    """The conversation of a POST that names no session: ``initialize`` opens a session with an
    upstream of its own; anything else goes to the shared stateless session."""

    def __init__(self, front: GatewayConversations, admit: Callable[[], bool]) -> None:
        self.front = front
        self._admit = admit
        self.target: HttpSession | None = None  # the session it opened
        self.session = Session()  # the target's, once there is one

    @property
    def stateful(self) -> bool:
        return self.target is not None and self.target.stateful

    @property
    def busy(self) -> bool:
        return self.target is not None and self.target.busy

    @property
    def closed(self) -> bool:
        return self.target is not None and self.target.closed

    async def post(self, frame: Frame, accepts: PostAccepts) -> Reply | Stream | None:
        if self.target is not None:
            return await self.target.post(frame, accepts)
        try:
            document = jsonio.loads(frame.raw) if frame.size is None else None
        except jsonio.JSONSyntaxError:
            return error_reply(Rejection(CanonicalError.PARSE_ERROR))
        try:
            if isinstance(document, dict) and document.get("method") == "initialize" and "id" in document:
                if not self._admit():
                    return error_reply(Rejection(CanonicalError.TOO_MANY_SESSIONS))
                target = self.target = await self.front.start(stateless=False)
                self.session = target.session
            else:
                target = await self.front.stateless()
        except SetupError as exc:
            log.error("upstream: %s", exc)
            return error_reply(Rejection(CanonicalError.UPSTREAM_UNAVAILABLE))
        return await target.post(frame._replace(session=target.session), accepts)

    def listen(self) -> Stream | None:
        return None if self.target is None else self.target.listen()

    async def close(self) -> None:
        if self.target is not None:  # the shared stateless session is not this request's to end
            await self.target.close()


class GatewayConversations:
    """The gateway's side of Streamable HTTP: how each conversation's gateway session is made."""

    streams = True

    def __init__(
        self, new_upstream: Callable[[], Connection], run: GatewayRun, access: FrontAccess | None = None
    ) -> None:
        self.new_upstream = new_upstream
        self.run = run
        self.access = access or FrontAccess()
        self.stopping = False
        self._stateless: HttpSession | None = None
        self._starting = asyncio.Lock()

    async def open(self, admit: Callable[[], bool]) -> _Opening:
        return _Opening(self, admit)

    async def start(self, *, stateless: bool) -> HttpSession:
        session = HttpSession(
            self.run, self.new_upstream(), stateless=stateless, stopping=lambda: self.stopping, access=self.access
        )
        await session.start()
        return session

    async def stateless(self) -> HttpSession:
        async with self._starting:  # concurrent first requests share one upstream, started once
            if self._stateless is None or self._stateless.closed:
                self._stateless = await self.start(stateless=True)
        return self._stateless

    async def close(self) -> None:
        self.stopping = True
        if self._stateless is not None:
            await self._stateless.close()


def _upstream_metadata(passthrough: UpstreamResource, refused: Callable[..., Any]) -> Callable[..., Any]:
    """Passthrough: the gateway's protected resource metadata, the upstream's authorization servers."""

    async def route(scope: Scope, receive: Receive, send: Send, headers: Mapping[str, str]) -> None:
        document = await passthrough.metadata() if scope["method"] == "GET" else None
        if document is not None:
            await respond(send, 200, document, b"application/json")
        elif scope["method"] == "GET":
            await refused(send, Rejection(CanonicalError.ROUTE_NOT_FOUND), ())
        else:
            await refused(send, Rejection(CanonicalError.HTTP_METHOD_NOT_ALLOWED), ((b"allow", b"GET"),))

    return route


async def run_gateway_http(
    new_upstream: Callable[[], Connection],
    run: GatewayRun,
    options: HttpOptions,
    listener: socket.socket,
    runs_dir: Path,
    on_ready: Callable[[], None],
    access: FrontAccess | None = None,
) -> int:
    """Serve the HTTP front until SIGINT/SIGTERM; one report for every session (SIGUSR1 writes it),
    ``GET /health``, and ``/metrics`` beside the MCP path when there is a log to count from; with
    ``access``, the front's protected resource metadata and its guard."""
    report, events = run.report, run.events
    told = None if events is None else events.http_refusal

    async def refused(send: Send, rejection: Rejection, extra: tuple[tuple[bytes, bytes], ...]) -> None:
        await refuse(send, rejection, extra, told=told)  # a refusal is a frame of the log

    # A load balancer's health check: the replica answers while it serves (it stops on SIGTERM).
    routes: dict[str, Route] = {"/health": text_route(lambda: b"ok\n", b"text/plain", refused)}
    if events is not None:
        metrics = Metrics(run.registry)
        events.count_with(metrics.count)
        routes["/metrics"] = text_route(metrics.render, CONTENT_TYPE.encode(), refused)
    access = access or FrontAccess()
    guard = None
    if access.auth is not None:
        routes[METADATA_PATH] = text_route(access.auth.metadata, b"application/json", refused)
        guard = access.auth.guard()
    elif access.passthrough is not None:
        routes[METADATA_PATH] = _upstream_metadata(access.passthrough, refused)
    conversations = GatewayConversations(new_upstream, run, access)
    app = StreamableHttp(conversations, options, refused, routes, guard)

    async def stop() -> None:
        conversations.stopping = True
        await app.close()
        await conversations.close()

    reaper = asyncio.ensure_future(app.reap_forever())
    usr1 = (signal.SIGUSR1, lambda: publish(report, runs_dir))
    try:
        await serve_http(
            app,
            listener,
            on_ready=on_ready,
            signals=[usr1],
            on_signal=final_report(report, runs_dir),
            on_stop=stop,
            read_seconds=options.read_seconds,
        )
    finally:
        reaper.cancel()
        await stop()
        publish(report, runs_dir)
    return 0
