"""``serve`` over Streamable HTTP: the server's conversations on the shared session manager, the REST
face and ``/metrics`` beside ``/mcp``.

A conversation answers each POST with the handler's reply; it keeps a session when ``initialize``
negotiated a stateful version, and under 2026-07-28 each request is its own. No stream of its own:
this server never sends a message that answers no request.
"""

from __future__ import annotations

from collections.abc import Callable

from ..core.errors import CanonicalError, Rejection
from ..core.replies import error_reply
from ..core.session import Session
from ..core.types import Frame, Handler, Reply
from ..execution.access import METADATA_PATH, FrontAuth
from ..observe.events import EventLog
from ..observe.metrics import CONTENT_TYPE, Metrics
from ..registry.schemas import SchemaRegistry
from ..transport.http import PostAccepts, Send, refuse, text_route
from ..transport.streamable import HttpOptions, Route, Stream, StreamableHttp
from .rest import PATHS, RestFace

__all__ = ["serve_http_app"]


class _Conversation:
    __slots__ = ("_admit", "_closed", "handler", "session", "stateless_versions")

    def __init__(self, handler: Handler, stateless_versions: frozenset[str], admit: Callable[[], bool]) -> None:
        self.handler = handler
        self.stateless_versions = stateless_versions
        self.session = Session()
        self._admit: Callable[[], bool] | None = admit
        self._closed = False

    @property
    def stateful(self) -> bool:
        version = self.session.version
        return version is not None and version not in self.stateless_versions

    @property
    def busy(self) -> bool:
        return False  # every request is answered within its POST

    @property
    def closed(self) -> bool:
        return self._closed

    async def post(self, frame: Frame, accepts: PostAccepts) -> Reply | Stream | None:
        reply = await self.handler(frame)
        if self._admit is not None and self.stateful:
            admit, self._admit = self._admit, None
            if not admit():  # the session it opened does not fit: it ends here
                self._closed = True
                return error_reply(Rejection(CanonicalError.TOO_MANY_SESSIONS))
        return reply

    def listen(self) -> Stream | None:
        return None

    async def close(self) -> None:
        self._closed = True


class _Conversations:
    streams = False  # this server sends nothing that answers no request

    def __init__(self, handler: Handler, registry: SchemaRegistry) -> None:
        self.handler = handler
        self.stateless_versions = frozenset(registry.stateless_versions)

    async def open(self, admit: Callable[[], bool]) -> _Conversation:
        return _Conversation(self.handler, self.stateless_versions, admit)


def serve_http_app(
    handler: Handler,
    registry: SchemaRegistry,
    options: HttpOptions,
    rest: RestFace,
    *,
    metrics: Metrics | None = None,
    events: EventLog | None = None,
    auth: FrontAuth | None = None,
) -> StreamableHttp:
    """The ASGI application of ``serve --http``; with ``auth``, every path but ``/health`` and the
    protected resource metadata needs a token (``/approvals`` its approver's, when one is set)."""
    told = None if events is None else events.http_refusal

    async def refused(send: Send, rejection: Rejection, extra: tuple[tuple[bytes, bytes], ...]) -> None:
        await refuse(send, rejection, extra, told=told)

    routes: dict[str, Route] = {path: rest for path in PATHS}
    if metrics is not None:
        routes["/metrics"] = text_route(metrics.render, CONTENT_TYPE.encode(), refused)
    guard = None
    if auth is not None:
        routes[METADATA_PATH] = text_route(auth.metadata, b"application/json", refused)
        guard = auth.guard(("/health", "/approvals") if rest.approver_token is not None else ("/health",))
    return StreamableHttp(_Conversations(handler, registry), options, refused, routes, guard)
