"""The gateway's conversations of Streamable HTTP: what a POST naming no session opens (a session
with an upstream of its own for ``initialize``, else the one shared stateless session), and how each
conversation's ``HttpSession`` is made. The session table and its expiry are the transport's
(``transport/streamable.py``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from ..core.errors import CanonicalError, Rejection
from ..core.replies import error_reply
from ..core.session import Session
from ..core.settings import SetupError
from ..core.types import Frame, Reply
from ..transport.connection import Connection
from ..transport.http import PostAccepts
from ..transport.streamable import Stream
from .http_access import FrontAccess
from .http_session import UNREADABLE, HttpSession, read_post
from .session import GatewayRun

__all__ = ["GatewayConversations", "Opening"]

log = logging.getLogger("mcp_server.gateway")


def _opens_session(document: Any) -> bool:
    """An ``initialize`` request: its conversation is a session with an upstream of its own."""
    return isinstance(document, dict) and document.get("method") == "initialize" and "id" in document


class Opening:
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
        document = read_post(frame)
        if document is UNREADABLE and frame.size is None:
            return error_reply(Rejection(CanonicalError.PARSE_ERROR))
        try:
            if frame.size is None and _opens_session(document):
                if not self._admit():
                    return error_reply(Rejection(CanonicalError.TOO_MANY_SESSIONS))
                target = self.target = await self.front.start(stateless=False)
                self.session = target.session
            else:
                target = await self.front.stateless()
        except SetupError as exc:
            log.error("upstream: %s", exc)
            return error_reply(Rejection(CanonicalError.UPSTREAM_UNAVAILABLE))
        return await target.posted(frame._replace(session=target.session), document)

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

    async def open(self, admit: Callable[[], bool]) -> Opening:
        return Opening(self, admit)

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
