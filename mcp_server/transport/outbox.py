"""Frames on their way to a peer, bounded in bytes: putting never waits, and whoever reads from the
other side waits for ``room`` before reading more (back-pressure, never an unbounded queue).

Bytes only; no I/O of its own.
"""

from __future__ import annotations

import asyncio

from .ndjson import MAX_HELD_OUTPUT

__all__ = ["Outbox"]


class Outbox:
    """A queue of frames (``None`` ends it) holding at most about ``limit`` bytes while its reader
    keeps up: ``room()`` waits while more is held. A frame larger than the limit still goes."""

    __slots__ = ("_queue", "_room", "held", "limit")

    def __init__(self, limit: int = MAX_HELD_OUTPUT) -> None:
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._room = asyncio.Event()
        self._room.set()
        self.held = 0
        self.limit = limit

    def put_nowait(self, raw: bytes | None) -> None:
        if raw is not None:
            self.held += len(raw)
            if self.held > self.limit:
                self._room.clear()
        self._queue.put_nowait(raw)

    async def get(self) -> bytes | None:
        raw = await self._queue.get()
        if raw is not None:
            self.held -= len(raw)
            if self.held <= self.limit:
                self._room.set()
        return raw

    def empty(self) -> bool:
        return self._queue.empty()

    async def room(self) -> None:
        """Until the reader has taken enough for more to be put."""
        await self._room.wait()
