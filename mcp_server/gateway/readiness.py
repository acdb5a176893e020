"""Hold a client frame until the gateway can check it, never letting it past the check.

What a frame waits for is ``ledger/waits.py``'s rule, which ``check`` follows on a capture too: a
frame behind a pending ``initialize`` waits for its reply (the version that checks it is not known
before); a ``tools/call`` the chain refused as a tool not listed yet waits for the pending
``tools/list``, or for the one the gateway asks the upstream itself (every page, under ids of its
own), and is checked again. The waits are bounded; what is still unknown after them is the schema
check's to refuse. No I/O but the gateway's own request.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..core.errors import CanonicalError, Rejection
from ..core.session import Session
from ..core.types import CLIENT_TO_SERVER, Message, RequestId
from ..execution.peer import PeerChannel
from ..ledger.waits import awaits_listing, pending_request, still_pending
from ..registry.tools import UpstreamTools
from ..registry.versions import CLIENT_CAPABILITIES_META, PROTOCOL_VERSION_META

__all__ = ["Readiness"]


class Readiness:
    """One gateway session's waits: the requests a frame waits on, the gateway's own list requests."""

    def __init__(self, session: Session, tools: UpstreamTools, own: PeerChannel, wait_seconds: float) -> None:
        """``own`` asks the upstream (its replies reach it through the session's upstream path);
        ``wait_seconds`` bounds each frame's wait."""
        self.session = session
        self.tools = tools
        self.own = own
        self.wait_seconds = wait_seconds
        self.initialize: RequestId | None = None  # the client's initialize, while it is pending upstream
        self._settling: dict[RequestId, asyncio.Future[None]] = {}  # pending requests a frame waits on
        self._fetch: asyncio.Task[None] | None = None
        self._closed = False

    async def initialized(self) -> None:
        """Wait (bounded) until the client's pending ``initialize`` is answered; later frames go on."""
        request_id = self.initialize
        if request_id is not None and still_pending(self.session, request_id, "initialize"):
            await self._until(self._settled(request_id), self._deadline())
        self.initialize = None

    def unlisted(self, rejection: Rejection) -> str | None:
        """The tool of a ``tools/call`` refused for want of its schema, when more may be learnt."""
        message = rejection.message
        if (
            rejection.error is not CanonicalError.TOOL_NOT_FOUND
            or message is None
            or self._closed
            or not awaits_listing(self.tools, message.kind, message.method, message.tool)
        ):
            return None
        return message.tool

    async def learn(self, name: str, message: Message) -> None:
        """Wait until ``name`` is listed, or nothing more can be learnt: the pending list first, then
        (once) a list of the gateway's own."""
        deadline = self._deadline()
        asked = False
        while self.tools.io(name) is None and not self.tools.complete and not self._closed:
            waited: asyncio.Future[None]
            if self._fetch is not None and not self._fetch.done():
                waited, asked = self._fetch, True
            elif (request_id := pending_request(self.session, "tools/list")) is not None:
                waited = self._settled(request_id)
            elif not asked:
                asked = True
                self._fetch = waited = asyncio.ensure_future(self._fetch_all(message))
            else:
                return
            if not await self._until(waited, deadline):
                return

    def _deadline(self) -> float:
        return asyncio.get_running_loop().time() + self.wait_seconds

    async def _until(self, waited: asyncio.Future[None], deadline: float) -> bool:
        """Wait for ``waited`` until the deadline; ``False`` when the time is up."""
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            return False
        done, _ = await asyncio.wait({waited}, timeout=remaining)
        return bool(done)

    def _settled(self, request_id: RequestId) -> asyncio.Future[None]:
        """Done when the pending client request ``request_id`` is answered (or the session ends)."""
        future = self._settling.get(request_id)
        if future is None:
            future = self._settling[request_id] = asyncio.get_running_loop().create_future()
        return future

    def release(self) -> None:
        """After an upstream frame: the waits on requests it settled are over."""
        if not self._settling:
            return
        for request_id, future in list(self._settling.items()):
            if self.session.peek(CLIENT_TO_SERVER, request_id) is None:
                del self._settling[request_id]
                if not future.done():
                    future.set_result(None)

    async def _fetch_all(self, message: Message) -> None:
        """The upstream's whole tool list, page by page, learnt as each reply passes the chain.

        In a stateless session (2026-07-28) the request states the version the call was read under,
        and that the gateway, its client here, has no optional capabilities."""
        version = message.version if self.session.version is None else None
        params: dict[str, Any] = {}
        if version is not None:
            params["_meta"] = {PROTOCOL_VERSION_META: version, CLIENT_CAPABILITIES_META: {}}
        seen: set[str] = set()
        while not self._closed:
            try:
                result = await self.own.request(self.session, "tools/list", params, version=version)
            except (ConnectionError, OSError):  # the upstream is gone: its end answers what waits
                return
            cursor = None if result is None else result.get("nextCursor")
            if result is None or (isinstance(cursor, str) and cursor in seen):
                return  # refused, invalid, or a cursor seen already (an upstream going round in circles)
            if not isinstance(cursor, str):
                self.tools.complete = True
                return
            seen.add(cursor)
            params = {**params, "cursor": cursor}

    def close(self) -> None:
        """The session ends: nothing waits any more (the frames go on to be checked as they are)."""
        self._closed = True
        self.own.close()
        for future in self._settling.values():
            if not future.done():
                future.set_result(None)
        self._settling.clear()
