"""One side of a relayed conversation as bytes: frames in, frames out, an end. Every side a gateway
talks to (its client over STDIO or a socket, its upstream as a child process or over HTTP) is one.

Bytes only: a frame goes out as it is; ``about``, the message the caller read it as, is what a side
that needs more than the bytes (HTTP's routing headers) takes it from. Nothing here parses JSON.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol

from ..core.types import Message, RequestId
from .ndjson import LineSplitter, read_lines

__all__ = ["Connection", "NdjsonConnection", "Receive", "Received", "receive_all"]

Received = tuple[bytes, int | None] | tuple[bytes, int | None, RequestId]
"""A peer's frame: its bytes and size (``LineSplitter``), and from an HTTP upstream the id of the
request whose POST's response carried it (its answer even when its own id is missing or wrong)."""


class Connection(Protocol):
    """A peer's frames as ``(raw, None)``, or ``(excerpt, size)`` past the frame limit (``LineSplitter``);
    ``send`` one frame to it, ``close`` the side (the exit status of a process behind it, if any).
    Optional, read where present: ``push`` (see ``receive_all``), and ``listings_judged`` (its tool
    listings' tools were judged at their own servers already: an aggregate's, ADR 39)."""

    name: str  # what the side is called in a report (the upstream's command or URL)

    async def open(self) -> None: ...

    def frames(self) -> AsyncIterator[Received]: ...

    async def send(self, raw: bytes, about: Message | None = None) -> None: ...

    async def close(self) -> int | None: ...


Receive = Callable[..., Awaitable[None]]
"""What takes a peer's frames: ``receive(raw, size, carried_by=None, routed=None)``; ``routed``: an
aggregate's server's reply to a call it routed, parsed, with where the report counts it too."""


async def receive_all(connection: Connection, receive: Receive) -> None:
    """Every frame of ``connection`` handed to ``receive`` until it ends. A connection whose frames
    come from tasks of its own (``push``: an aggregate's servers) hands them over itself, with no
    queue between; any other is read (``frames``)."""
    push: Callable[[Receive], Awaitable[None]] | None = getattr(connection, "push", None)
    if push is not None:
        await push(receive)
        return
    async for received in connection.frames():
        await receive(*received)


class NdjsonConnection:
    """A client on an NDJSON byte stream (STDIO, one Unix socket connection): lines in, lines out."""

    def __init__(
        self,
        next_chunk: Callable[[], Awaitable[bytes]],
        write: Callable[[bytes], Awaitable[None]],
        *,
        name: str,
        max_frame_bytes: int,
    ) -> None:
        """``next_chunk`` returns ``b""`` at end of input; ``write`` takes whole lines."""
        self.name = name
        self._next_chunk = next_chunk
        self._write = write
        self._splitter = LineSplitter(max_frame_bytes)

    async def open(self) -> None:
        return None

    def frames(self) -> AsyncIterator[tuple[bytes, int | None]]:
        return read_lines(self._next_chunk, self._splitter)

    async def send(self, raw: bytes, about: Message | None = None) -> None:
        await self._write(raw + b"\n")

    async def close(self) -> int | None:
        return None
