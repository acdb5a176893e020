"""HTTP for the MCP transports: the request checks, bodies, responses and SSE, and the uvicorn server.

Bytes only: nothing here parses JSON. Host/Origin (DNS rebinding), Accept, Content-Type, the body
cap (read in chunks, refused past the limit without being held); every refusal's status comes from
the error catalogue. ``streamable.py`` builds the MCP endpoint and its sessions on these.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from ..core.errors import CanonicalError, Rejection, reply_status
from ..core.oversize import HEAD_BYTES
from ..core.replies import error_reply
from ..core.types import Reply
from .coalescing import CoalescingTransport
from .signals import stop_on_signals

__all__ = [
    "ABORT_EXTENSION",
    "PostAccepts",
    "Receive",
    "Refused",
    "Scope",
    "Send",
    "accepts_event_stream",
    "allowed_hosts",
    "bind_tcp",
    "check_post",
    "host_allowed",
    "read_body",
    "refuse",
    "request_headers",
    "respond",
    "send_reply",
    "serve_http",
    "sse_event",
    "text_route",
]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

log = logging.getLogger("mcp_server.transport")

_LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")

_GRACEFUL_SECONDS = 2

ABORT_EXTENSION = "mcp_server.abort"
"""The ASGI scope extension ``serve_http`` adds: a callable that cuts the request's connection at once
(a response whose client stopped reading is ended without waiting for it to read)."""


def _host_name(value: str) -> str:
    """``host[:port]`` → host, lower-cased (``[::1]:8000`` → ``[::1]``)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[: value.find("]") + 1] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _origin_host(origin: str) -> str | None:
    scheme, _, rest = origin.partition("://")
    if not rest or scheme not in ("http", "https"):
        return None
    return _host_name(rest.split("/", 1)[0])


def _media_types(value: str) -> list[str]:
    return [part.split(";", 1)[0].strip().lower() for part in value.split(",") if part.strip()]


# -- The request-level checks, shared by every HTTP front (this app and the gateway's) -----------


def allowed_hosts(extra: Iterable[str]) -> frozenset[str]:
    """Loopback names plus the configured ones: what Host and Origin may name."""
    return frozenset(_LOOPBACK_HOSTS) | {_host_name(h) for h in extra}


def request_headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


def host_allowed(allowed: frozenset[str], headers: Mapping[str, str]) -> bool:
    """DNS-rebinding protection (spec: transports, "Security Warning"): Host and Origin must be allowed."""
    host = headers.get("host")
    if host is not None and _host_name(host) not in allowed:
        return False
    origin = headers.get("origin")
    return origin is None or _origin_host(origin) in allowed


@dataclass(frozen=True, slots=True, kw_only=True)
class PostAccepts:
    json: bool
    sse: bool


def check_post(headers: Mapping[str, str]) -> PostAccepts:
    """Accept and Content-Type of a POST to the MCP endpoint; ``Rejection`` when either is wrong."""
    accepted = _media_types(headers.get("accept", ""))
    accepts = PostAccepts(
        json=any(t in ("application/json", "application/*", "*/*") for t in accepted),
        sse="text/event-stream" in accepted,
    )
    if not (accepts.json or accepts.sse):
        raise Rejection(CanonicalError.NOT_ACCEPTABLE)
    if _media_types(headers.get("content-type", ""))[:1] != ["application/json"]:
        raise Rejection(CanonicalError.UNSUPPORTED_MEDIA_TYPE)
    return accepts


def accepts_event_stream(headers: Mapping[str, str]) -> bool:
    return "text/event-stream" in _media_types(headers.get("accept", ""))


async def read_body(receive: Receive, headers: Mapping[str, str], limit: int) -> tuple[bytes, int | None]:
    """``(body, None)``, or ``(head, size)`` past the cap: a larger body is never held whole, only what
    came of its first ``HEAD_BYTES`` (the request's id is read from them; nothing when its declared
    length says so before it is sent); a frame's ``size`` is set only when its ``raw`` holds less
    than came (else the chain's fast path takes it)."""
    declared = headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return b"", int(declared)  # refused before its body is sent (a client may wait to send it)
    over = None
    chunks: list[bytes] = []
    held = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        held += len(chunk)
        chunks.append(chunk)
        more = message.get("more_body", False)
        if over is None and held > limit:
            over = held  # stop reading; the server closes the connection after the reply
        if over is not None and (held >= HEAD_BYTES or held > limit or not more):
            break
        if not more:
            break
    if over is not None:
        return b"".join(chunks)[:HEAD_BYTES], max(over, held)
    return b"".join(chunks), None


def sse_event(raw: bytes) -> bytes:
    """One frame as one SSE ``message`` event (a frame with newlines takes several ``data`` lines)."""
    if b"\n" in raw:
        raw = raw.replace(b"\r\n", b"\n").replace(b"\n", b"\ndata: ")
    return b"event: message\ndata: " + raw + b"\n\n"


async def send_reply(
    send: Send,
    reply: Reply,
    accepts: PostAccepts,
    extra: Iterable[tuple[bytes, bytes]] = (),
    *,
    announced: str | None = None,
) -> None:
    """A reply as the whole response: JSON when the client takes it, else one SSE event. Its status
    follows the rules of the version the request was read under (the reply's, else the one its
    ``MCP-Protocol-Version`` header ``announced``; ADR 0013)."""
    code = reply.error.mcp_code if reply.error is not None else reply.code
    status = reply_status(reply.error, code, reply.version or announced)
    body = reply.to_bytes()
    extra = (*extra, *reply.headers)
    if accepts.json:
        await respond(send, status, body, b"application/json", extra)
    else:
        await respond(send, status, sse_event(body), b"text/event-stream", extra)


Refused = Callable[[Rejection, bytes], None]
"""Told of each HTTP-level refusal and the body it answered with (the log makes it an event)."""


async def refuse(
    send: Send,
    rejection: Rejection,
    extra_headers: Iterable[tuple[bytes, bytes]] = (),
    *,
    told: Refused | None = None,
) -> None:
    """Answer an HTTP-level refusal: the member's status and a JSON-RPC error body (id null)."""
    body = error_reply(rejection).to_bytes()
    if told is not None:
        told(rejection, body)
    await respond(send, rejection.error.http_status, body, b"application/json", extra_headers)


def text_route(
    render: Callable[[], bytes], content_type: bytes, refuse: Callable[..., Awaitable[None]]
) -> Callable[..., Awaitable[None]]:
    """A read-only path (``/metrics``): ``render()`` on GET; any other method refused (405, ``Allow: GET``)
    through the application's ``refuse`` (which logs the refusal)."""

    async def route(scope: Scope, receive: Receive, send: Send, headers: Mapping[str, str]) -> None:
        if scope["method"] == "GET":
            await respond(send, 200, render(), content_type)
        else:
            await refuse(send, Rejection(CanonicalError.HTTP_METHOD_NOT_ALLOWED), ((b"allow", b"GET"),))

    return route


async def respond(
    send: Send, status: int, body: bytes, content_type: bytes | None, extra: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    headers = [(b"content-length", str(len(body)).encode())]
    if content_type is not None:
        headers.append((b"content-type", content_type))
        if content_type == b"text/event-stream":
            headers.append((b"cache-control", b"no-cache"))
    headers.extend(extra)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def bind_tcp(host: str, port: int) -> socket.socket:
    """A listening TCP socket (port 0: an ephemeral one), bound before the server starts."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit it: a response's head and body never wait on Nagle's algorithm.
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    listener.bind((host.strip("[]"), port))
    listener.listen(1024)
    listener.setblocking(False)
    return listener


def _http_protocol(read_seconds: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol, its writes coalesced, with what it lacks: a request's head and body
    must arrive within ``read_seconds`` of its first byte (of the connection, for the first request),
    else the connection is cut (HAProxy's ``timeout http-request``: a slow client holds no descriptor
    for long); and the ``ABORT_EXTENSION`` in each request's scope."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class CoalescingHttpToolsProtocol(HttpToolsProtocol):
        _reading: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            # The stand-in has the transport's interface by delegation, not by type.
            super().connection_made(CoalescingTransport(transport))  # type: ignore[arg-type]
            self._reading = self.loop.call_later(read_seconds, self._too_slow)

        def connection_lost(self, exc: Exception | None) -> None:
            if self._reading is not None:
                self._reading.cancel()
            super().connection_lost(exc)

        def on_message_complete(self) -> None:
            if self._reading is not None:
                self._reading.cancel()
                self._reading = None
            super().on_message_complete()

        def _too_slow(self) -> None:
            log.warning("http: a request did not arrive whole within %s s; its connection is closed", read_seconds)
            self.transport.abort()

        def on_message_begin(self) -> None:
            if self._reading is None:  # the next request on a kept-alive connection
                self._reading = self.loop.call_later(read_seconds, self._too_slow)
            super().on_message_begin()
            extensions: dict[str, Any] = dict(self.scope.get("extensions") or {})
            extensions[ABORT_EXTENSION] = self.transport.abort
            self.scope["extensions"] = extensions  # ASGI lets a server add extensions of its own

    return CoalescingHttpToolsProtocol


async def serve_http(
    app: Callable[[Scope, Receive, Send], Awaitable[None]],
    listener: socket.socket,
    *,
    on_ready: Callable[[], None],
    signals: Iterable[tuple[int, Callable[[], None]]] = (),
    on_signal: Callable[[], None] | None = None,
    on_stop: Callable[[], Awaitable[None]] | None = None,
    read_seconds: float = 30.0,
) -> None:
    """Serve ``app`` with uvicorn until SIGINT/SIGTERM (and call the ``signals`` handlers given);
    ``on_signal`` runs in the stop signal's handler, first; in-flight requests finish, after
    ``on_stop`` has ended the ones that would not."""
    import uvicorn

    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        http=_http_protocol(read_seconds),
        loop="asyncio",
        # Requests in flight get this long after a stop (theirs ended first by ``on_stop``), then are
        # cancelled: SIGTERM ends the server within 5 s whatever its clients do (issue 30).
        timeout_graceful_shutdown=_GRACEFUL_SECONDS,
    )

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield  # the signals are this loop's (below), not re-raised after shutdown

    server = Server(config)
    with stop_on_signals(*signals, on_stop=on_signal) as stop:
        serving = asyncio.ensure_future(server.serve(sockets=[listener]))
        while not server.started and not serving.done():
            await asyncio.sleep(0.01)
        if server.started:
            on_ready()
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
        server.should_exit = True  # uvicorn stops accepting and lets requests in flight finish
        stopping.cancel()
        if on_stop is not None:
            await on_stop()
        await serving
