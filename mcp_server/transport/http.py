"""MCP Streamable HTTP at ``/mcp`` (and ``GET /health``), a plain ASGI app served by uvicorn.

The transport moves bytes: the body of a POST is one frame for the chain, and the chain's reply
is the response. What the transport decides itself is about HTTP: Host/Origin (DNS rebinding),
Accept, Content-Type, the body cap (read in chunks, refused past the limit without being held),
and sessions: ``Mcp-Session-Id`` is issued when an ``initialize`` on a stateful version succeeds
and required afterwards (404 for an unknown one, DELETE ends it). Under 2026-07-28 there are no
sessions; the chain checks the routing headers against the body. Every status comes from the error
catalogue; a reply's follows the rules of its request's version (``reply_status``, ADR 0013). The
request-level checks are functions, shared with the gateway's HTTP front (``gateway/http_front.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import secrets
import socket
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import jsonio
from ..error_boundary import error_reply
from ..errors import CanonicalError, Rejection, reply_status
from ..events import EventLog
from ..metrics import CONTENT_TYPE, Metrics
from ..registry import SchemaRegistry
from ..types import Direction, Frame, Handler, Reply, Session
from .coalescing import CoalescingTransport
from .signals import stop_on_signals

if TYPE_CHECKING:
    from .rest import RestFace

__all__ = [
    "HttpOptions",
    "McpHttpApp",
    "PostAccepts",
    "Receive",
    "Scope",
    "Send",
    "accepts_event_stream",
    "allowed_hosts",
    "bind_tcp",
    "check_post",
    "host_allowed",
    "is_stateless",
    "read_body",
    "refuse",
    "request_headers",
    "respond",
    "send_reply",
    "serve_http",
    "sse_event",
]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

_LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpOptions:
    max_frame_bytes: int
    allowed_hosts: tuple[str, ...] = ()
    max_sessions: int = 1000
    session_idle_seconds: float = 3600.0


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


async def read_body(receive: Receive, headers: Mapping[str, str], limit: int) -> tuple[bytes, int]:
    """The body, or ``(b"", size)`` past the cap: a larger body is never held whole."""
    declared = headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return b"", int(declared)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return b"", size  # stop reading; the server closes the connection after the reply
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks), size


def sse_event(raw: bytes) -> bytes:
    """One frame as one SSE ``message`` event (a frame with newlines takes several ``data`` lines)."""
    if b"\n" in raw:
        raw = raw.replace(b"\r\n", b"\n").replace(b"\n", b"\ndata: ")
    return b"event: message\ndata: " + raw + b"\n\n"


def is_stateless(registry: SchemaRegistry, session: Session, headers: Mapping[str, str]) -> bool:
    """Whether a POST is governed by a stateless version (2026-07-28): its session's version, else the
    one its MCP-Protocol-Version header names (the chain holds the header to the body's)."""
    version = session.protocol_version or headers.get("mcp-protocol-version")
    return version in registry.stateless_versions


def _error_code(reply: Reply) -> int | None:
    """The JSON-RPC error code a reply carries (``None`` for a result); a relayed reply is read only
    when its bytes can hold an error."""
    document = reply.document
    if document is None:
        raw = reply.to_bytes()
        if b'"error"' not in raw:
            return None
        try:
            document = jsonio.loads(raw)
        except jsonio.JSONSyntaxError:
            return None
    error = document.get("error") if isinstance(document, Mapping) else None
    code = error.get("code") if isinstance(error, Mapping) else None
    return code if isinstance(code, int) and not isinstance(code, bool) else None


async def send_reply(
    send: Send,
    reply: Reply,
    accepts: PostAccepts,
    extra: Iterable[tuple[bytes, bytes]] = (),
    *,
    stateless: bool = False,
) -> None:
    """A reply as the whole response: JSON when the client takes it, else one SSE event. Its status
    follows the rules of the request's version (``stateless``: 2026-07-28's; ADR 0013)."""
    code = reply.error.mcp_code if reply.error is not None else _error_code(reply) if stateless else None
    status = reply_status(reply.error, code, stateless=stateless)
    body = reply.to_bytes()
    if accepts.json:
        await respond(send, status, body, b"application/json", extra)
    else:
        await respond(send, status, sse_event(body), b"text/event-stream", extra)


async def refuse(
    send: Send,
    error: CanonicalError,
    errors: Iterable[Mapping[str, Any]] = (),
    extra_headers: Iterable[tuple[bytes, bytes]] = (),
    *,
    events: EventLog | None = None,
) -> None:
    """Answer an HTTP-level refusal (a member of ``HTTP_REFUSALS``): the member's status and a
    JSON-RPC error body (id null).
    With ``events``, the refused request is logged as a frame that never reached the chain."""
    rejection = Rejection(error, list(errors))
    reply: Reply = error_reply(rejection)
    body = reply.to_bytes()
    if events is not None:
        events.emit(
            "frame",
            transport="http",
            direction=Direction.CLIENT_TO_SERVER.value,
            status="error",
            bytes_out=len(body),
            error=rejection.summary(),
        )
    await respond(send, error.http_status, body, b"application/json", extra_headers)


async def serve_metrics(method: str, send: Send, metrics: Metrics, refuse: Callable[..., Awaitable[None]]) -> None:
    """``/metrics``: the Prometheus text on GET; any other method is refused (405, ``Allow: GET``)
    through the app's own ``refuse`` (which logs the refusal)."""
    if method == "GET":
        await respond(send, 200, metrics.render(), CONTENT_TYPE.encode())
    else:
        await refuse(send, CanonicalError.HTTP_METHOD_NOT_ALLOWED, extra_headers=[(b"allow", b"GET")])


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


class McpHttpApp:
    """The ASGI application. Sessions live in memory, one ``Session`` per ``Mcp-Session-Id``."""

    def __init__(
        self,
        handler: Handler,
        registry: SchemaRegistry,
        options: HttpOptions,
        rest: RestFace,
        *,
        metrics: Metrics | None = None,
        events: EventLog | None = None,
    ) -> None:
        self.handler = handler
        self.rest = rest  # the REST face: /tools, /execute, /health, /approvals
        self.metrics = metrics
        # A request refused before it reaches the chain is still a frame in the log.
        self._refuse = functools.partial(refuse, events=events)
        self.registry = registry
        self.options = options
        self.allowed = allowed_hosts(options.allowed_hosts)
        self.sessions: dict[str, Session] = {}
        self._last_seen: dict[str, float] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # lifespan and websockets: nothing to do
        headers = request_headers(scope)
        path = scope["path"].rstrip("/") or "/"
        if not host_allowed(self.allowed, headers):
            await self._refuse(send, CanonicalError.HOST_NOT_ALLOWED)
        elif path == "/mcp":
            await self._mcp(scope, receive, send, headers)
        elif self.rest.serves(path):
            await self.rest(scope, receive, send, headers)
        elif path == "/metrics" and self.metrics is not None:
            await serve_metrics(scope["method"], send, self.metrics, self._refuse)
        else:
            await self._refuse(send, CanonicalError.ROUTE_NOT_FOUND)

    async def _mcp(self, scope: Scope, receive: Receive, send: Send, headers: Mapping[str, str]) -> None:
        method = scope["method"]
        if method == "POST":
            await self._post(receive, send, headers)
        elif method == "DELETE":
            await self._delete(send, headers)
        else:  # GET: this server never sends unsolicited messages, so it offers no stream
            await self._refuse(
                send, CanonicalError.HTTP_METHOD_NOT_ALLOWED, extra_headers=[(b"allow", b"POST, DELETE")]
            )

    async def _post(self, receive: Receive, send: Send, headers: Mapping[str, str]) -> None:
        try:
            accepts = check_post(headers)
        except Rejection as rejection:
            return await self._refuse(send, rejection.error)
        session_id = headers.get("mcp-session-id")
        if session_id is not None:
            session = self.sessions.get(session_id)
            if session is None:
                return await self._refuse(send, CanonicalError.UNKNOWN_SESSION)
            self._last_seen[session_id] = time.monotonic()
            announced = headers.get("mcp-protocol-version")
            if announced is not None and announced != session.protocol_version:
                return await self._refuse(
                    send,
                    CanonicalError.HEADER_MISMATCH,
                    [{"path": "", "msg": f"MCP-Protocol-Version {announced!r} is not the session's version"}],
                )
        else:
            session = Session()
        raw, size = await read_body(receive, headers, self.options.max_frame_bytes)
        frame = Frame(raw=raw, size=size, transport="http", session=session, headers=headers)
        reply = await self.handler(frame)
        extra: list[tuple[bytes, bytes]] = []
        if session_id is None and session.protocol_version is not None:
            if session.protocol_version in self.registry.stateless_versions:
                pass  # stateless: nothing to remember between requests
            elif not self._admit(session):
                return await self._refuse(send, CanonicalError.TOO_MANY_SESSIONS)
            else:
                extra.append((b"mcp-session-id", session.id.encode()))
        if reply is None:  # a notification or a response: accepted, nothing to say
            return await respond(send, 202, b"", None, extra)
        await send_reply(send, reply, accepts, extra, stateless=is_stateless(self.registry, session, headers))

    def _admit(self, session: Session) -> bool:
        """Register a new stateful session (idle ones expire first); ``False`` past the cap."""
        now = time.monotonic()
        idle = self.options.session_idle_seconds
        for stale in [sid for sid, seen in self._last_seen.items() if now - seen > idle]:
            self.sessions.pop(stale, None)
            self._last_seen.pop(stale, None)
        if len(self.sessions) >= self.options.max_sessions:
            return False
        session.id = secrets.token_hex(16)
        self.sessions[session.id] = session
        self._last_seen[session.id] = now
        return True

    async def _delete(self, send: Send, headers: Mapping[str, str]) -> None:
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            return await self._refuse(send, CanonicalError.SESSION_REQUIRED)
        if self.sessions.pop(session_id, None) is None:
            return await self._refuse(send, CanonicalError.UNKNOWN_SESSION)
        self._last_seen.pop(session_id, None)
        await respond(send, 204, b"", None)


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


def _http_protocol() -> type[asyncio.Protocol]:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class CoalescingHttpToolsProtocol(HttpToolsProtocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            # The stand-in has the transport's interface by delegation, not by type.
            super().connection_made(CoalescingTransport(transport))  # type: ignore[arg-type]

    return CoalescingHttpToolsProtocol


async def serve_http(
    app: Callable[[Scope, Receive, Send], Awaitable[None]],
    listener: socket.socket,
    *,
    on_ready: Callable[[], None],
    signals: Iterable[tuple[int, Callable[[], None]]] = (),
    on_signal: Callable[[], None] | None = None,
    on_stop: Callable[[], Awaitable[None]] | None = None,
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
        http=_http_protocol(),
        loop="asyncio",
        timeout_graceful_shutdown=30,
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
