"""MCP Streamable HTTP at one path: the HTTP checks, the sessions and the streams, for any application.

Bytes only: a POST's body is a frame handed to the application's conversation, and what the
conversation answers (a reply, or a stream of messages ending with it) is the response. The
transport decides only what is about HTTP: Host/Origin (DNS rebinding), Accept, Content-Type, the
body cap, ``Mcp-Session-Id`` (issued once a conversation negotiated a stateful version; 404 for an
unknown one; DELETE ends it), the session's ``MCP-Protocol-Version``, one GET stream per session,
idle sessions reaped, and the cap on open sessions. ``serve`` and the gateway both run on it.
"""

from __future__ import annotations

import asyncio
import logging
import math
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from ..core.errors import CanonicalError, Rejection
from ..core.session import Session
from ..core.types import Frame, Reply
from .http import (
    ABORT_EXTENSION,
    PostAccepts,
    Receive,
    Scope,
    Send,
    accepts_event_stream,
    allowed_hosts,
    check_post,
    host_allowed,
    read_body,
    request_headers,
    respond,
    send_reply,
    sse_event,
)

__all__ = [
    "MAX_HELD_STREAM_BYTES",
    "Conversation",
    "Conversations",
    "Guard",
    "HttpOptions",
    "Refuse",
    "Route",
    "Stream",
    "StreamableHttp",
]

log = logging.getLogger("mcp_server.transport")

MAX_HELD_STREAM_BYTES = 16 * 1024 * 1024
"""Bytes of messages one response stream holds for a client that does not read them (past what the
socket takes). Past it the stream is closed and its connection aborted, with a logged reason: a client
that stops reading its GET stream while the upstream talks costs this much, never more (as Envoy resets
a stream past its buffer limit). A single message larger than it is still taken when nothing waits."""

Route = Callable[[Scope, Receive, Send, Mapping[str, str]], Awaitable[None]]
"""Another path of the same server (the REST face, ``/metrics``), after the Host/Origin check."""

Refuse = Callable[[Send, Rejection, tuple[tuple[bytes, bytes], ...]], Awaitable[None]]
"""How an HTTP-level refusal is answered (and logged): the application's."""

Guard = Callable[[str, Mapping[str, str]], Awaitable[tuple[Rejection, tuple[tuple[bytes, bytes], ...]] | None]]
"""Who may make a request to a path, from its headers (the front's authentication): ``None`` lets it
through, else the refusal and its headers (a 401's WWW-Authenticate). The application's."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpOptions:
    max_frame_bytes: int
    path: str = "/mcp"
    allowed_hosts: tuple[str, ...] = ()
    max_sessions: int = 1000
    idle_seconds: float = 3600.0  # a session with no exchange (no request waiting) this long is ended
    read_seconds: float = 30.0  # a request's head and body must arrive within this (``serve_http``)
    # The versions a session's requests may name in ``MCP-Protocol-Version`` (the session's own governs
    # the frame): the spec asks a client to send the negotiated one (SHOULD) and a server to refuse
    # only an invalid or unsupported one (400), as a gateway's upstream does. Another version is
    # refused as unsupported. Empty: only the session's own version is accepted (else a mismatch).
    versions: frozenset[str] = frozenset()


class Stream:
    """The messages a POST's response (or the session's GET stream) carries, in order: ``(reply,
    last)`` items, ``last`` ending the response (its status is the last reply's when it is the only
    one); ``None`` ends it with nothing more. ``closed``: its response is over (a GET stream whose
    client went away takes nothing more). ``dropped``: what the application does when the client
    closes a POST before its last item (under 2026-07-28 that cancels the request)."""

    __slots__ = ("abort", "closed", "dropped", "held", "limit", "overflowed", "queue", "sse")

    def __init__(
        self,
        *,
        sse: bool = True,
        dropped: Callable[[Stream], Awaitable[None]] | None = None,
        limit: int = MAX_HELD_STREAM_BYTES,
    ) -> None:
        self.sse = sse
        self.closed = False
        self.dropped = dropped
        self.queue: asyncio.Queue[tuple[Reply, bool] | None] = asyncio.Queue()
        self.held = 0  # bytes queued, not yet handed to the connection
        self.limit = limit
        self.overflowed = False
        self.abort: Callable[[], None] | None = None  # ends the response's connection at once (the server's)

    def put(self, reply: Reply, *, last: bool = False) -> None:
        """Queue a message; past ``limit`` bytes held the stream is closed instead (its client does
        not read), and what it held is dropped."""
        if self.overflowed:
            return
        size = len(reply.to_bytes())
        if self.held and self.held + size > self.limit:
            return self._overflow(size)
        self.held += size
        self.queue.put_nowait((reply, last))

    def end(self) -> None:
        if not self.overflowed:
            self.queue.put_nowait(None)

    def taken(self, item: tuple[Reply, bool] | None) -> tuple[Reply, bool] | None:
        if item is not None:
            self.held -= len(item[0].to_bytes())
        return item

    def _overflow(self, size: int) -> None:
        log.warning(
            "http: a client did not read its stream: %d bytes held, %d more came past the bound of %d;"
            " the stream is closed",
            self.held,
            size,
            self.limit,
        )
        self.overflowed = self.closed = True
        while not self.queue.empty():
            self.queue.get_nowait()
        self.held = 0
        self.queue.put_nowait(None)
        if self.abort is not None:
            self.abort()  # a send waiting for the client to read returns; the client sees the stream cut


class Conversation(Protocol):
    """One MCP session as an application runs it over HTTP."""

    session: Session

    @property
    def stateful(self) -> bool:
        """It negotiated a version that keeps a session (``Mcp-Session-Id``) between requests."""

    @property
    def busy(self) -> bool:
        """A request waits for its answer: not idle (a GET stream held open is no exchange)."""

    @property
    def closed(self) -> bool: ...

    async def post(self, frame: Frame, accepts: PostAccepts) -> Reply | Stream | None:
        """A POSTed frame: its reply, the stream its reply comes on, or ``None`` (202: accepted)."""

    def listen(self) -> Stream | None:
        """The session's stream of messages that answer no request (``None``: none is offered)."""

    async def close(self) -> None: ...


class Conversations(Protocol):
    """An application's side of Streamable HTTP: where a POST without a session goes."""

    streams: bool  # whether its sessions offer a GET stream at all (else GET is 405 outright)

    async def open(self, admit: Callable[[], bool]) -> Conversation:
        """A conversation for a POST that names no session. It may become a session of its own
        (``initialize``; ``admit()`` says whether one more fits) or serve the request statelessly."""


class StreamableHttp:
    """The ASGI application: ``options.path`` for MCP, ``routes`` for the other paths."""

    def __init__(
        self,
        conversations: Conversations,
        options: HttpOptions,
        refuse: Refuse,
        routes: Mapping[str, Route] | None = None,
        guard: Guard | None = None,
    ) -> None:
        self.conversations = conversations
        self.options = options
        self.refuse = refuse
        self.routes = dict(routes or {})
        self.guard = guard
        self.allowed = allowed_hosts(options.allowed_hosts)
        self.sessions: dict[str, Conversation] = {}
        self._last_seen: dict[str, float] = {}
        self._closing: set[asyncio.Task[None]] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # lifespan and websockets: nothing to do
        headers = request_headers(scope)
        path = scope["path"].rstrip("/") or "/"
        method = scope["method"]
        if not host_allowed(self.allowed, headers):
            return await self._refuse(send, CanonicalError.HOST_NOT_ALLOWED)
        refused = None if self.guard is None else await self.guard(path, headers)
        if refused is not None:
            await self.refuse(send, *refused)
        elif path != self.options.path:
            route = self._route(path)
            if route is None:
                await self._refuse(send, CanonicalError.ROUTE_NOT_FOUND)
            else:
                await route(scope, receive, send, headers)
        elif method == "POST":
            await self._post(receive, send, headers, _abort_of(scope))
        elif method == "GET":
            await self._get(receive, send, headers, _abort_of(scope))
        elif method == "DELETE":
            await self._delete(send, headers)
        else:
            await self._refuse(send, CanonicalError.HTTP_METHOD_NOT_ALLOWED, allow=b"GET, POST, DELETE")

    def _route(self, path: str) -> Route | None:
        return next((r for prefix, r in self.routes.items() if path == prefix or path.startswith(prefix + "/")), None)

    async def _refuse(self, send: Send, error: CanonicalError, *, allow: bytes | None = None) -> None:
        extra = ((b"allow", allow),) if allow is not None else ()
        await self.refuse(send, Rejection(error), extra)

    # -- sessions -----------------------------------------------------------------------------

    def _session_of(self, headers: Mapping[str, str]) -> Conversation:
        """The conversation ``Mcp-Session-Id`` names, or ``Rejection`` (400 without one, 404 unknown)."""
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            raise Rejection(CanonicalError.SESSION_REQUIRED)
        conversation = self.sessions.get(session_id)
        if conversation is None or conversation.closed:
            self._forget(session_id)
            raise Rejection(CanonicalError.UNKNOWN_SESSION)
        self._last_seen[session_id] = time.monotonic()
        announced = headers.get("mcp-protocol-version")
        if announced is None or announced == conversation.session.version:
            return conversation
        if self.options.versions and announced not in self.options.versions:
            raise Rejection(
                CanonicalError.UNSUPPORTED_PROTOCOL_VERSION,
                [{"path": "", "msg": f"MCP-Protocol-Version {announced!r} is not a known version"}],
            )
        if not self.options.versions:
            raise Rejection(
                CanonicalError.HEADER_MISMATCH,
                [{"path": "", "msg": f"MCP-Protocol-Version {announced!r} is not the session's version"}],
            )
        return conversation

    def _admit(self) -> bool:
        """Room for one more session (the idle ones are reaped first)."""
        self.reap()
        return len(self.sessions) < self.options.max_sessions

    def _register(self, conversation: Conversation) -> str:
        session_id = conversation.session.id = secrets.token_hex(16)
        self.sessions[session_id] = conversation
        self._last_seen[session_id] = time.monotonic()
        return session_id

    def _forget(self, session_id: str) -> Conversation | None:
        self._last_seen.pop(session_id, None)
        return self.sessions.pop(session_id, None)

    def reap(self) -> None:
        """Close the sessions idle past the timeout: no request waiting (an open GET stream alone does
        not keep a session: it ends with it), none made since."""
        now, idle = time.monotonic(), self.options.idle_seconds
        for session_id, conversation in list(self.sessions.items()):
            seen = self._last_seen.get(session_id, now)
            if conversation.closed or (not conversation.busy and now - seen > idle):
                self._forget(session_id)
                closing = asyncio.ensure_future(conversation.close())  # an upstream's grace runs apart
                self._closing.add(closing)
                closing.add_done_callback(self._closing.discard)

    async def reap_forever(self) -> None:
        interval = max(0.05, min(self.options.idle_seconds / 4, 30.0))
        while True:
            await asyncio.sleep(interval)
            self.reap()

    async def close(self) -> None:
        """Every session ends (its upstream, in a gateway, stopped)."""
        conversations = list(self.sessions.values())
        self.sessions.clear()
        self._last_seen.clear()
        await asyncio.gather(*(c.close() for c in conversations), *self._closing, return_exceptions=True)

    # -- POST -----------------------------------------------------------------------------------

    async def _post(
        self, receive: Receive, send: Send, headers: Mapping[str, str], abort: Callable[[], None] | None
    ) -> None:
        try:
            accepts = check_post(headers)
            conversation = self._session_of(headers) if "mcp-session-id" in headers else None
        except Rejection as rejection:
            return await self.refuse(send, rejection, ())
        raw, size = await read_body(receive, headers, self.options.max_frame_bytes)
        opened = conversation is None
        if conversation is None:
            conversation = await self.conversations.open(self._admit)
        frame = Frame(raw=raw, size=size, transport="http", session=conversation.session, headers=headers)
        answer = await conversation.post(frame, accepts)
        extra: tuple[tuple[bytes, bytes], ...] = ()
        if opened:
            if conversation.stateful and not conversation.closed:
                extra = ((b"mcp-session-id", self._register(conversation).encode()),)
            else:
                await conversation.close()  # it served one request without a session
        announced = headers.get("mcp-protocol-version")
        if not isinstance(answer, Stream):
            return await self._answer(send, answer, accepts, extra, announced)
        answer.abort = abort
        # The client's disconnect is watched only where the application acts on it (``dropped``).
        gone = None if answer.dropped is None else asyncio.ensure_future(_disconnected(receive))
        try:
            await self._stream(send, answer, gone, accepts, extra, announced)
        except _ClientGone:
            assert answer.dropped is not None
            await answer.dropped(answer)
        finally:
            if gone is not None:
                gone.cancel()
            answer.closed = True

    async def _answer(
        self,
        send: Send,
        answer: Reply | None,
        accepts: PostAccepts,
        extra: tuple[tuple[bytes, bytes], ...],
        announced: str | None,
    ) -> None:
        """The response to a POST answered at once: the reply, or 202. A full server says when a
        session may be free (``Retry-After``, RFC 9110 §10.2.3)."""
        if answer is None:
            return await respond(send, 202, b"", None, extra)
        if answer.error is CanonicalError.TOO_MANY_SESSIONS:
            extra = (*extra, (b"retry-after", str(self._retry_after()).encode()))
        await send_reply(send, answer, accepts, extra, announced=announced)

    def _retry_after(self) -> int:
        """Whole seconds until the session seen longest ago, waiting for nothing, would idle out."""
        now, idle = time.monotonic(), self.options.idle_seconds
        due = [
            seen + idle - now
            for session_id, seen in self._last_seen.items()
            if (conversation := self.sessions.get(session_id)) is not None and not conversation.busy
        ]
        return max(1, math.ceil(min(due, default=idle)))

    async def _stream(
        self,
        send: Send,
        stream: Stream,
        gone: asyncio.Task[None] | None,
        accepts: PostAccepts,
        extra: tuple[tuple[bytes, bytes], ...],
        announced: str | None,
    ) -> None:
        """The response to a POST whose reply comes on ``stream``: one JSON body when the reply comes
        first, else an SSE stream ended by the reply. ``_ClientGone``: the client closed it first."""
        first = await _next(stream, gone)
        if first is None:  # nothing came: the request ended without an answer (its session ended)
            return await self._answer(send, None, accepts, extra, announced)
        reply, last = first
        if last:
            return await self._answer(send, reply, accepts, extra, announced)
        await _open_sse(send, extra)
        item: tuple[Reply, bool] | None = first
        while item is not None:
            reply, last = item
            await send({"type": "http.response.body", "body": sse_event(reply.to_bytes()), "more_body": not last})
            if last:
                return
            item = await _next(stream, gone)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    # -- GET and DELETE -------------------------------------------------------------------------

    async def _get(
        self, receive: Receive, send: Send, headers: Mapping[str, str], abort: Callable[[], None] | None
    ) -> None:
        """The session's stream of messages that answer no request (one per session)."""
        if not self.conversations.streams:
            return await self._refuse(send, CanonicalError.HTTP_METHOD_NOT_ALLOWED, allow=b"POST, DELETE")
        try:
            if not accepts_event_stream(headers):
                raise Rejection(CanonicalError.NOT_ACCEPTABLE)
            conversation = self._session_of(headers)
        except Rejection as rejection:
            return await self.refuse(send, rejection, ())
        try:
            stream = conversation.listen()
        except Rejection as rejection:  # one GET stream per session
            return await self.refuse(send, rejection, ())
        if stream is None:
            return await self._refuse(send, CanonicalError.HTTP_METHOD_NOT_ALLOWED, allow=b"POST, DELETE")
        stream.abort = abort
        await _open_sse(send, ())
        await send({"type": "http.response.body", "body": b": stream open\n\n", "more_body": True})
        gone = asyncio.ensure_future(_disconnected(receive))
        try:
            while (item := await _next(stream, gone)) is not None:
                await send({"type": "http.response.body", "body": sse_event(item[0].to_bytes()), "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except _ClientGone:
            return  # nothing more for it
        finally:
            gone.cancel()
            stream.closed = True

    async def _delete(self, send: Send, headers: Mapping[str, str]) -> None:
        try:
            conversation = self._session_of(headers)
        except Rejection as rejection:
            return await self.refuse(send, rejection, ())
        self._forget(conversation.session.id)
        await conversation.close()
        await respond(send, 204, b"", None)


def _abort_of(scope: Scope) -> Callable[[], None] | None:
    """How to cut the request's connection at once, when the server offers it (``serve_http`` does)."""
    abort = scope.get("extensions", {}).get(ABORT_EXTENSION)
    return abort if callable(abort) else None


async def _open_sse(send: Send, extra: tuple[tuple[bytes, bytes], ...]) -> None:
    headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"), *extra]
    await send({"type": "http.response.start", "status": 200, "headers": headers})


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


class _ClientGone(Exception):
    """The client closed the response before its end."""


async def _next(stream: Stream, gone: asyncio.Task[None] | None) -> tuple[Reply, bool] | None:
    """The stream's next item, or ``_ClientGone`` once ``gone`` (the client's disconnect) came first.
    An item already there, or no disconnect watched: no task and no wait for two."""
    if gone is None or not stream.queue.empty():
        return stream.taken(await stream.queue.get())
    getting = asyncio.ensure_future(stream.queue.get())
    await asyncio.wait({getting, gone}, return_when=asyncio.FIRST_COMPLETED)
    if not getting.done():
        getting.cancel()
        raise _ClientGone
    return stream.taken(getting.result())
