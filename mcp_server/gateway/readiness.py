"""Hold a client frame until the gateway can check it, never letting it past the check.

A frame behind a pending ``initialize`` waits for its reply (the version that checks it is not
known before); a ``tools/call`` of a tool not listed yet waits for the pending ``tools/list``, or
for the one the gateway asks the upstream itself (every page, under ids of its own). The waits are
bounded; what is still unknown after them is the schema check's to refuse. No I/O but the request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from ..core.types import (
    CLIENT_TO_SERVER,
    REQUEST,
    SERVER_TO_CLIENT,
    Direction,
    Frame,
    Handler,
    Middleware,
    Reply,
    RequestId,
    Session,
)
from ..execution.peer import PeerChannel
from ..registry.tools import UpstreamTools
from ..registry.versions import CLIENT_CAPABILITIES_META, PROTOCOL_VERSION_META, stated_version

__all__ = ["Readiness"]

Key = tuple[Direction, RequestId]


def _unlisted_tool(frame: Frame, tools: UpstreamTools) -> str | None:
    """The tool a ``tools/call`` request names, when the gateway has no schema for it (yet)."""
    message = frame.message
    if message is None or message.kind is not REQUEST or message.method != "tools/call":
        return None
    params = message.params
    name = params.get("name") if isinstance(params, Mapping) else None
    if not isinstance(name, str) or tools.io(name) is not None or tools.complete:
        return None
    return name


def _pending_list(session: Session) -> Key | None:
    """A client's ``tools/list`` relayed upstream and not answered yet."""
    for key, method in session.pending.items():
        if method == "tools/list" and key[0] is CLIENT_TO_SERVER:
            return key
    return None


class Readiness:
    """One gateway session's waits: the stage, the frames it holds, the gateway's own list requests."""

    def __init__(self, tools: UpstreamTools, own: PeerChannel | None, wait_seconds: float) -> None:
        """``own`` asks the upstream (its replies reach it through the session loop; without it the
        gateway waits only for lists the client asked for); ``wait_seconds`` bounds each frame's wait."""
        self.tools = tools
        self.own = own
        self.wait_seconds = wait_seconds
        self._initialize: Key | None = None  # the client's initialize, while it is pending upstream
        self._settling: dict[Key, asyncio.Future[None]] = {}  # pending requests a frame waits on
        self._fetch: asyncio.Task[None] | None = None
        self._closed = False

    def stage(self) -> Middleware:
        """The stage, just before the schema check: a client frame waits here; an upstream frame
        that settles a request a frame waits on releases it once the chain is done with it."""

        def middleware(next_handler: Handler) -> Handler:
            async def handle(frame: Frame) -> Reply | None:
                if frame.direction is SERVER_TO_CLIENT:
                    try:
                        return await next_handler(frame)
                    finally:
                        if self._settling:
                            self._release(frame.session)
                if self._initialize is not None or _unlisted_tool(frame, self.tools) is not None:
                    await self._ready(frame)  # the rare case: no coroutine of its own for the others
                reply = await next_handler(frame)
                message = frame.message
                if message is not None and message.method == "initialize" and message.id is not None:
                    key = (CLIENT_TO_SERVER, message.id)
                    if key in frame.session.pending:  # relayed: what the client sends next waits for it
                        self._initialize = key
                return reply

            return handle

        return middleware

    async def _ready(self, frame: Frame) -> None:
        deadline = asyncio.get_running_loop().time() + self.wait_seconds
        if self._initialize is not None:
            if self._initialize in frame.session.pending:
                await self._until(self._settled(self._initialize), deadline)
            self._initialize = None  # answered, or waited for long enough: later frames go on
        name = _unlisted_tool(frame, self.tools)
        if name is not None:
            await self._learn(frame, name, deadline)

    async def _learn(self, frame: Frame, name: str, deadline: float) -> None:
        """Wait until ``name`` is listed, or nothing more can be learnt: the pending list first, then
        (once) a list of the gateway's own."""
        asked = False
        while self.tools.io(name) is None and not self.tools.complete and not self._closed:
            if self._fetch is not None and not self._fetch.done():
                waited: asyncio.Future[None] = self._fetch
                asked = True
            elif (key := _pending_list(frame.session)) is not None:
                waited = self._settled(key)
            elif not asked and self.own is not None:
                asked = True
                self._fetch = asyncio.ensure_future(self._fetch_all(frame))
                waited = self._fetch
            else:
                return
            if not await self._until(waited, deadline):
                return

    async def _until(self, waited: asyncio.Future[None], deadline: float) -> bool:
        """Wait for ``waited`` until the deadline; ``False`` when the time is up."""
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            return False
        done, _ = await asyncio.wait({waited}, timeout=remaining)
        return bool(done)

    def _settled(self, key: Key) -> asyncio.Future[None]:
        """Done when the pending request ``key`` is answered (or the session ends)."""
        future = self._settling.get(key)
        if future is None:
            future = self._settling[key] = asyncio.get_running_loop().create_future()
        return future

    def _release(self, session: Session) -> None:
        for key, future in list(self._settling.items()):
            if key not in session.pending:
                del self._settling[key]
                future.set_result(None)

    async def _fetch_all(self, frame: Frame) -> None:
        """The upstream's whole tool list, page by page, learnt as each reply passes the chain.

        In a stateless session (2026-07-28) the request states the version the call stated, and
        that the gateway, its client here, has no optional capabilities."""
        session, message = frame.session, frame.message
        stated = stated_version(message.params) if message is not None else None
        version = stated if session.protocol_version is None and isinstance(stated, str) else None
        params: dict[str, Any] = {}
        if version is not None:
            params["_meta"] = {PROTOCOL_VERSION_META: version, CLIENT_CAPABILITIES_META: {}}
        seen: set[str] = set()
        while self.own is not None:
            try:
                result = await self.own.request(session, "tools/list", params, version=version)
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
        if self.own is not None:
            self.own.close()
        for future in self._settling.values():
            if not future.done():
                future.set_result(None)
        self._settling.clear()
