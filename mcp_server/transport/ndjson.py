"""NDJSON framing and the frame loop shared by the STDIO and Unix socket transports.

A line longer than the frame limit is drained, not held: its bytes are counted and dropped,
and it comes out as an empty frame carrying its size, for the size guard to refuse.
The loop does no I/O of its own: the transport hands it a chunk source and a writer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from ..core.session import Session
from ..core.types import Frame, Handler
from ..serve.peer import PeerChannel

__all__ = ["MAX_HELD_OUTPUT", "LineSplitter", "serve_ndjson"]

MAX_HELD_OUTPUT = 16 * 1024 * 1024
"""Bytes of replies one NDJSON connection holds for a client that is not reading them. Past this the
connection's input is not read until the client reads (back-pressure: bounded memory, no deadlock
for a client that reads at all). 16 MiB holds the replies to 100,000 pipelined pings (4.1 MB) or
a few large results with room to spare, and stays small beside the server's own ~70 MiB."""


async def serve_ndjson(
    next_chunk: Callable[[], Awaitable[bytes]],
    send: Callable[[bytes], Awaitable[None]],
    handler: Handler,
    *,
    transport: str,
    max_frame_bytes: int,
    stop: asyncio.Event,
) -> None:
    """Frames of one connection through ``handler``, in order, replies in request order.

    ``next_chunk`` returns ``b""`` at end of input; ``send`` hands a reply line to the writer, which
    sends it at once (at the latest when the loop next waits) and makes ``send`` wait only while
    ``MAX_HELD_OUTPUT`` is held. When ``stop`` is set the frame in flight is finished and the rest is
    not started; a stop also ends a wait for the client (for input, or for it to read).
    """
    splitter = LineSplitter(max_frame_bytes)
    session = Session()
    ended = False  # end of input seen while a handler waited for the client (see ``pump``)

    async def pump() -> bool:
        """Read and handle one more chunk while a handler waits for the client's answer."""
        nonlocal ended
        chunk = await next_chunk()
        ended = not chunk
        for raw, size in splitter.feed(chunk) if chunk else splitter.close():
            reply = await handler(Frame(raw=raw, size=size, transport=transport, session=session))
            if reply is not None:
                await send(reply.to_bytes() + b"\n")
        return not ended

    session.peer = PeerChannel(lambda data: send(data + b"\n"), pump)
    task = asyncio.current_task()
    assert task is not None
    waiting = False  # on the client (input, or room for output): a stop may interrupt it, never a handler

    def client_paced() -> None:
        """What comes next waits on the client, until ``waiting`` is cleared: a stop may interrupt it."""
        nonlocal waiting
        waiting = True
        if stop.is_set():  # the stop came while a handler ran: this wait is the one it interrupts
            asyncio.get_running_loop().call_soon(interrupt, None)

    def interrupt(_: object) -> None:
        if waiting:
            task.cancel()

    stopping = asyncio.ensure_future(stop.wait())
    stopping.add_done_callback(interrupt)
    try:
        while not stop.is_set() and not ended:
            client_paced()
            chunk = await next_chunk()
            waiting = False
            for raw, size in splitter.feed(chunk) if chunk else splitter.close():
                reply = await handler(Frame(raw=raw, size=size, transport=transport, session=session))
                if reply is not None:
                    client_paced()
                    await send(reply.to_bytes() + b"\n")
                    waiting = False
                if stop.is_set():
                    break
            if not chunk:
                break
    except asyncio.CancelledError:
        if not stop.is_set():
            raise
        task.uncancel()  # the stop interrupted a wait on the client: what was sent stays with the writer
    finally:
        stopping.remove_done_callback(interrupt)
        stopping.cancel()


class LineSplitter:
    """Splits a byte stream into lines; memory stays bounded by ``limit`` whatever comes in."""

    __slots__ = ("_buffer", "_dropped", "_dropping", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._buffer = bytearray()
        self._dropping = False
        self._dropped = 0

    def feed(self, chunk: bytes) -> list[tuple[bytes, int]]:
        """The complete lines in ``chunk`` (with what came before) as ``(raw, size)`` pairs.

        ``raw`` is empty when the line was over the limit; blank lines are skipped.
        """
        lines: list[tuple[bytes, int]] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end == -1:
                self._hold(chunk[start:])
                return lines
            self._finish(chunk[start:end], lines)
            start = end + 1

    def close(self) -> list[tuple[bytes, int]]:
        """At end of stream: the last line, if it had no newline."""
        lines: list[tuple[bytes, int]] = []
        if self._dropping or self._buffer:
            self._finish(b"", lines)
        return lines

    def _hold(self, segment: bytes) -> None:
        if self._dropping:
            self._dropped += len(segment)
            return
        self._buffer += segment
        if len(self._buffer) > self.limit + 1:  # +1: a trailing "\r" is not counted
            self._dropping = True
            self._dropped = len(self._buffer)
            self._buffer = bytearray()

    def _finish(self, segment: bytes, lines: list[tuple[bytes, int]]) -> None:
        if self._dropping:
            lines.append((b"", self._dropped + len(segment)))
            self._dropping = False
            self._dropped = 0
            return
        if self._buffer:
            self._buffer += segment
            line = bytes(self._buffer)
            self._buffer = bytearray()
        else:
            line = segment
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip():
            return
        if len(line) > self.limit:
            lines.append((b"", len(line)))
        else:
            lines.append((line, len(line)))
