"""One server of an aggregate: what it is now (starting, up, down), its connection and its side (a
fresh pair each time it starts: a session at its own version, checked as itself), what it lists, and
the client's requests it is answering. Frames to it go through a queue of its own, so a server that
stops reading holds up nobody but itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ...core import jsonio
from ...core.types import CLIENT_TO_SERVER, Message, RequestId
from ...execution.peer import PeerChannel
from ...transport.connection import Connection
from ..bridge.upstream_side import UpstreamSide
from .servers import ServerSpec

__all__ = ["Call", "Hello", "Member", "State"]

log = logging.getLogger("mcp_server.gateway")

MAX_QUEUED_BYTES = 8 << 20  # frames waiting for a server that does not read: past this, it is stuck


class State(StrEnum):
    STARTING = "starting"
    UP = "up"
    DOWN = "down"


@dataclass(frozen=True, slots=True)
class Hello:
    """The client's ``initialize``: the version it asked for, what it can do, who it is. Each server
    is initialized with it (again after each restart)."""

    version: str
    capabilities: Mapping[str, Any]
    info: Mapping[str, Any]


@dataclass(slots=True)
class Call:
    """A client's request a server is answering: the client's id, method and version, the tool a
    call names (the server's own name), its progress token (the client's, and the one sent), and
    whether it is ``routed``: at the client's version, booked and its reply checked by the client's
    session alone (ADR 37), not by the server's side."""

    client_id: RequestId
    method: str
    version: str | None
    tool: str | None = None
    token: Any = None
    sent_token: str | None = None
    routed: bool = False


@dataclass(slots=True, eq=False)
class Member:
    """One server: its place and spec, how its connection and side are made, and its live state."""

    index: int
    spec: ServerSpec
    new_connection: Callable[[], Connection]
    new_side: Callable[[], UpstreamSide]
    known: Mapping[str, Any] = field(default_factory=dict)  # its capabilities as start-up found them
    state: State = State.STARTING
    connection: Connection | None = None
    side: UpstreamSide | None = None
    own: PeerChannel | None = None  # the aggregate's own requests (initialize, lists, ping)
    result: Mapping[str, Any] = field(default_factory=dict)  # its initialize result, while up
    lists: dict[str, Sequence[Mapping[str, Any]]] = field(default_factory=dict)
    calls: dict[RequestId, Call] = field(default_factory=dict)  # by the id it was sent under
    ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))  # for a client's id taken there
    heard_at: float = 0.0
    stuck: bool = False
    _queue: deque[tuple[bytes, Message | None]] = field(default_factory=deque)
    _queued: int = 0
    _wake: asyncio.Event = field(default_factory=asyncio.Event)
    _write_now: Callable[[bytes], bool] | None = None  # the connection's, where it has one
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _closing: asyncio.Future[int | None] | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def capabilities(self) -> Mapping[str, Any]:
        """What it can do: as its initialize said (its latest life's), else as start-up found."""
        found = self.result.get("capabilities")
        return found if isinstance(found, Mapping) else self.known

    def post(self, raw: bytes, about: Message | None) -> bool:
        """A frame for the server, queued (never waits); ``False`` when it has stopped reading. With
        nothing queued, a process's pipe with room takes it at once: no turn of the loop per call."""
        if self._queued > MAX_QUEUED_BYTES:
            self.stuck = True
            return False
        if not self._queue and self._write_now is not None and self._write_now(raw):
            return True
        self._queue.append((raw, about))
        self._queued += len(raw)
        self._wake.set()
        return True

    async def write_all(self) -> None:
        """The queued frames, written in order while the connection takes them."""
        assert self.connection is not None
        while True:
            while not self._queue:
                self._wake.clear()
                await self._wake.wait()
            raw, about = self._queue.popleft()
            self._queued -= len(raw)
            await self.connection.send(raw, about)

    def start(self) -> None:
        """A new connection and (unless the last one never spoke) side, its own request channel, an
        empty queue: a server failing to start again and again adds no session to the report."""
        if self.side is None or self.side.session.version is not None:
            self.side = self.new_side()
        self.connection = self.new_connection()
        self._write_now = getattr(self.connection, "write_now", None)
        self.own = PeerChannel(self._send_own, direction=CLIENT_TO_SERVER, prefix=f"aggregate-{self.index}")
        self._queue.clear()
        self._queued, self.stuck, self.result, self.lists = 0, False, {}, {}
        self.ids = itertools.count(1)

    async def _send_own(self, raw: bytes) -> None:
        assert self.side is not None
        sent, message = self.side.sending(jsonio.loads(raw))
        if not self.post(sent, message):
            raise ConnectionError(f"server {self.name!r} does not read")

    async def ask(self, method: str, params: Mapping[str, Any], seconds: float) -> Mapping[str, Any] | None:
        """A request of the aggregate's own: its result (``None``: an error); ``TimeoutError`` when no
        answer came in ``seconds``."""
        assert self.own is not None and self.side is not None
        return await asyncio.wait_for(self.own.request(self.side.session, method, params), seconds)

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """A notification of the aggregate's own, checked at the server's version."""
        assert self.side is not None
        document: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            document["params"] = params
        raw, message = self.side.sending(document)
        self.post(raw, message)

    async def stop(self) -> None:
        """Its tasks ended, its connection closed (the process stopped and reaped), also when the task
        that stops it is cancelled meanwhile (the aggregate closing): a second ``stop`` waits for it."""
        if self.own is not None:
            self.own.close()
        for task in self.tasks:
            task.cancel()
        self.tasks.clear()
        connection, self.connection = self.connection, None
        if connection is not None:
            self._closing = asyncio.ensure_future(connection.close())
        if self._closing is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._closing)
