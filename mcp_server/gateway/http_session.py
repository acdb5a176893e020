"""One gateway session as the HTTP front runs it: the client side of its ``GatewaySession`` (the
POSTs waiting for their replies, cancellation by notification or by a closed POST, the end), and its
upstream's pump. Where a server message goes is ``ServerMessages``'; a stateless request's names,
``Renames``'; who may post, ``http_access``'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable
from typing import Any, Final

from ..core import jsonio
from ..core.errors import CanonicalError, Rejection
from ..core.replies import error_reply
from ..core.session import Session
from ..core.types import ERROR_RESPONSE, NOTIFICATION, REQUEST, Frame, Message, Reply, RequestId
from ..execution.peer import PeerChannel
from ..transport.connection import Connection
from ..transport.http import PostAccepts, accepts_event_stream
from ..transport.http_client import FORWARDED_AUTHORIZATION
from ..transport.streamable import Stream
from .http_access import FrontAccess, challenged, scope_refusal, scoped
from .http_renames import Renamed, Renames, with_id
from .http_server_messages import ServerMessages
from .session import GatewayRun, GatewaySession

__all__ = ["UNREADABLE", "HttpSession", "read_post"]

log = logging.getLogger("mcp_server.gateway")


UNREADABLE: Final = object()
"""What a POSTed frame that is no JSON reads as (no object, so it names no tool and no id)."""


def read_post(frame: Frame) -> Any:
    """A POSTed frame as JSON (``UNREADABLE``: none), read once for what the front decides before the
    chain (a session's opening, a tool's scope, a stateless request's id)."""
    try:
        return jsonio.loads(frame.raw)
    except jsonio.JSONSyntaxError:
        return UNREADABLE


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
        self.renames = Renames()  # stateless: the ids and progress tokens the gateway gave
        self._dropping: set[RequestId] = set()  # stateless: requests whose client closed their POST
        self.messages = ServerMessages(self.waiting, self.renames, stateless=stateless)
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
        needed = self.stateless or scoped(self.access, frame)
        return await self.posted(frame, read_post(frame) if needed else UNREADABLE)

    async def posted(self, frame: Frame, document: Any) -> Reply | Stream | None:
        """``post`` with the frame as read already (``document``: ``UNREADABLE`` when not read, where
        nothing before the chain needs it: no tool scopes, a session's request)."""
        if self.access.passthrough is not None:  # what this request makes the gateway send carries it
            FORWARDED_AUTHORIZATION.set((frame.headers or {}).get("authorization"))
        refused = await scope_refusal(self.access, frame, document)
        if refused is not None:
            return refused
        renamed = Renamed(frame)
        if self.stateless:
            renamed = self.renames.unique(frame, document, self.waiting, self.messages.progress)
        frame, original, wire, token = renamed
        if wire is not None:
            self.renames.checking.add(wire)  # the chain may wait for what checks it: its id is taken meanwhile
            self.renames.checking_tokens.add(token)
        try:
            handled = await self.gateway.from_client(frame)
        finally:
            self.renames.checking.discard(wire)
            self.renames.checking_tokens.discard(token)
        relayed = handled.relayed
        stream = self._opened.pop(relayed.id, None) if relayed is not None and relayed.id is not None else None
        if stream is None:
            if wire is not None:
                self.renames.ids.pop(wire, None)
            reply = handled.reply
            return reply if reply is None or original is None else with_id(reply, reply.document, original)
        assert relayed is not None and relayed.id is not None
        if self._closed and self.waiting.pop(relayed.id, None) is stream:  # the upstream ended meanwhile
            self.renames.ids.pop(relayed.id, None)
            unavailable = Rejection(CanonicalError.UPSTREAM_UNAVAILABLE)
            return error_reply(unavailable, original or relayed.id, relayed.version)
        if relayed.method == "initialize":  # its reply decides whether this is a session: wait for it
            await self.gateway.readiness.initialized()
        return stream

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
            self.messages.progress[meta["progressToken"]] = stream  # (its progress reaches only an SSE response)

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
            self.messages.notify(reply, message)
        elif message.id is None or not self._answer(message, reply):
            log.warning("gateway: a response to no waiting request (id %r)", message.id)

    def _answer(self, message: Message, reply: Reply) -> bool:
        assert message.id is not None
        stream = self.waiting.pop(message.id, None)
        if stream is None:
            return False
        original = self._forget(message.id, stream)
        if original is not None:
            reply = with_id(reply, message.document if message.kind is not ERROR_RESPONSE else None, original)
        if message.kind is ERROR_RESPONSE and self.access.passthrough is not None:
            reply = challenged(self.access.passthrough, reply)
        stream.put(reply, last=True)
        return True

    def _forget(self, request_id: RequestId, stream: Stream) -> RequestId | None:
        """A POST's request is answered or ended: its progress tokens go; returns the client's own id
        of a renamed request."""
        self.messages.forget(stream)
        return self.renames.ids.pop(request_id, None)

    def listen(self) -> Stream | None:
        """The session's GET stream (one at a time), with what waited for it."""
        return self.messages.listen()

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
        self.messages.end()

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
